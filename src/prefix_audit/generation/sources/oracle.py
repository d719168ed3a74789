"""The mutation corpus as an oracle for the checker, on any benchmark with the reference and mutation capabilities.

For every task × category the seeded generator injects one confirmed first failure; the checker
must recover its depth and its category on its own. The report counts both, the confusion matrix,
the operators and depths used, the tasks without an injection site, and every miss.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.replay.checker import replay
from prefix_audit.replay.contract import Benchmark

from .mutation import mutated_rollout


@dataclass
class OracleReport:
    tasks: int = 0
    seconds: float = 0.0
    confusion: Counter = field(default_factory=Counter)  # (injected, recovered) → count
    operators: Counter = field(default_factory=Counter)
    depths: dict[str, set[int]] = field(default_factory=lambda: {c: set() for c in CATEGORIES})
    no_site: Counter = field(default_factory=Counter)
    depth_recovered: int = 0
    misses: list[tuple[str, dict[str, Any], int | None, list[str] | None]] = field(default_factory=list)

    @property
    def mutants(self) -> int:
        return sum(self.confusion.values())

    @property
    def category_recovered(self) -> int:
        return sum(self.confusion[(c, c)] for c in CATEGORIES)

    def lines(self) -> list[str]:
        n = self.mutants
        share = self.category_recovered / max(n, 1)
        out = [f"{n} mutants from {self.tasks} tasks in {self.seconds:.1f} s; depth recovered "
               + f"{self.depth_recovered}/{n}; category recovered {self.category_recovered}/{n} ({share:.2%})",
               f"tasks without a site, per category: {dict(self.no_site)}",
               f"operators: {dict(self.operators.most_common())}",
               f"injected depths: { {c: sorted(d) for c, d in self.depths.items()} }",
               f"{'injected / recovered':>22}" + "".join(f"{c[:12]:>13}" for c in CATEGORIES)]
        out += [f"{c:>22}" + "".join(f"{self.confusion[(c, g)]:>13}" for g in CATEGORIES) for c in CATEGORIES]
        out += [f"miss: {miss}" for miss in self.misses]
        return out


def run_oracle(bench: Benchmark, task_ids: Sequence[str], seed: int) -> OracleReport:
    report = OracleReport(tasks=len(task_ids))
    start = time.perf_counter()
    for task_id in task_ids:
        for category in CATEGORIES:
            rollout = mutated_rollout(bench, task_id, category, seed=seed)
            if rollout is None:
                report.no_site[category] += 1
                continue
            injected = rollout.meta["injected"]
            episode = replay(rollout, bench, with_gold=False)
            report.operators[injected["operator"]] += 1
            report.depths[category].add(injected["depth"])
            report.confusion[(category, episode.category)] += 1
            report.depth_recovered += episode.FED == injected["depth"]
            if episode.FED != injected["depth"] or episode.category != category:
                first = episode.first_failure
                report.misses.append((task_id, injected, episode.FED,
                                      [f.detail for f in first.failures] if first else None))
    report.seconds = time.perf_counter() - start
    return report
