"""The mutation oracle at full size: every BFCL entry × every category, one confirmed mutant each.

Usage: python bench/mutation_oracle.py [--step 1] [--seed 1] [--resources resources]
Prints how often the checker recovers the injected depth and category, the confusion matrix, and
every miss. (tests/test_bfcl_mutations.py runs the same check on every second entry.)
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from prefix_audit.benchmarks.bfcl import BfclBenchmark, load_data
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.generation.sources.mutation import mutated_rollout
from prefix_audit.replay.checker import replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=int, default=1, help="use every STEP-th entry")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--resources", default="resources")
    args = parser.parse_args()
    bench = BfclBenchmark(load_data(args.resources))
    start = time.perf_counter()
    confusion: Counter = Counter()
    operators: Counter = Counter()
    no_site: Counter = Counter()
    depth_ok = 0
    misses = []
    for task_id in bench.task_ids()[:: args.step]:
        for category in CATEGORIES:
            rollout = mutated_rollout(bench, task_id, category, seed=args.seed)
            if rollout is None:
                no_site[category] += 1
                continue
            injected = rollout.meta["injected"]
            episode = replay(rollout, bench)
            operators[injected["operator"]] += 1
            confusion[(category, episode.category)] += 1
            depth_ok += episode.FED == injected["depth"]
            if episode.FED != injected["depth"] or episode.category != category:
                first = episode.first_failure
                misses.append((task_id, injected, episode.FED,
                               [f.detail for f in first.failures] if first else None))
    n = sum(confusion.values())
    agree = sum(confusion[(c, c)] for c in CATEGORIES)
    print(f"{n} mutants in {time.perf_counter() - start:.1f} s; depth recovered {depth_ok}/{n}; "
          f"category recovered {agree}/{n} ({agree / n:.2%})")
    print(f"tasks without a site, per category: {dict(no_site)}")
    print(f"operators: {dict(operators.most_common())}")
    print(f"{'injected / recovered':>22}" + "".join(f"{c[:12]:>13}" for c in CATEGORIES))
    for c in CATEGORIES:
        print(f"{c:>22}" + "".join(f"{confusion[(c, g)]:>13}" for g in CATEGORIES))
    for miss in misses:
        print("miss:", miss)


if __name__ == "__main__":
    main()
