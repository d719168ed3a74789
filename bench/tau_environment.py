"""Cost of a fresh τ environment: validating tau2's database per environment (before) against a
copy-on-write view of one database validated per process (after).

Usage: python bench/tau_environment.py [--repeat 30] [--resources resources]

Per domain it prints medians:
* creation (``--repeat`` rounds): one fresh environment, nothing called yet;
* gold episode (``--repeat``/10 rounds): a fresh environment plus every gold call of every base task
  and the final database fingerprint, one environment per task (what a replay costs in environment
  work; copy-on-write pays here for the records it copies), reported per task;
* other ways to get a fresh database from the validated one (``--repeat``/10 rounds): ``copy.deepcopy``,
  ``model_copy(deep=True)``, a pickle round trip and ``model_validate_json`` of its JSON.
Both ways run the same tau2 calls; the script checks that they return the same texts and leave the
same database JSON before it times anything. A JSON summary closes the output.
"""

from __future__ import annotations

import argparse
import copy
import json
import pickle
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

from prefix_audit.benchmarks.tau import load_data
from prefix_audit.benchmarks.tau.domain.environment import DomainBackend, LiveEnvironment, _fingerprint


def _median_seconds(run: Callable[[], Any], repeat: int) -> float:
    run()  # warm: imports, cached tool specs and the template database stay outside the timing
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _validated_episode(backend: DomainBackend, gold: list[tuple[str, dict]]) -> tuple[list, str]:
    environment = backend.validated_environment()
    results = [backend.call(environment, name, arguments) for name, arguments in gold]
    return results, _fingerprint(environment.tools.db)


def _copy_on_write_episode(backend: DomainBackend, gold: list[tuple[str, dict]]) -> tuple[list, str]:
    live = LiveEnvironment(backend)
    results = [live.call(name, arguments) for name, arguments in gold]
    return results, live.db_fingerprint()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--resources", default="resources")
    args = parser.parse_args()
    data = load_data(args.resources, fetch=False)
    summary: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine(),
                               "tau2": data.tau2_version, "repeat": args.repeat}
    for name, domain in data.domains.items():
        backend = DomainBackend(domain)
        golds = [[(a.name, dict(a.arguments)) for a in task.gold] for task in domain.tasks.values()]
        for gold in golds:  # the two ways must agree before their costs are compared
            assert _validated_episode(backend, gold) == _copy_on_write_episode(backend, gold)
        validated = _median_seconds(backend.validated_environment, args.repeat)
        copy_on_write = _median_seconds(lambda: LiveEnvironment(backend), args.repeat)
        episodes_validated = _median_seconds(lambda: [_validated_episode(backend, g) for g in golds],
                                             max(1, args.repeat // 10)) / len(golds)
        episodes_copy = _median_seconds(lambda: [_copy_on_write_episode(backend, g) for g in golds],
                                        max(1, args.repeat // 10)) / len(golds)
        template = backend.template_db
        pickled, as_json = pickle.dumps(template), template.model_dump_json()
        alternatives = {
            "copy.deepcopy": lambda: copy.deepcopy(template),
            "model_copy(deep=True)": lambda: template.model_copy(deep=True),
            "pickle.loads": lambda: pickle.loads(pickled),
            "model_validate_json": lambda: type(template).model_validate_json(as_json),
        }
        others = {label: _median_seconds(make, max(1, args.repeat // 10)) for label, make in alternatives.items()}
        print(f"{name}: creation {validated * 1e3:.1f} ms validated -> {copy_on_write * 1e6:.0f} µs copy-on-write "
              f"({validated / copy_on_write:,.0f}x); gold episode of {len(golds)} tasks, per task "
              f"{episodes_validated * 1e3:.1f} ms -> {episodes_copy * 1e3:.1f} ms "
              f"({episodes_validated / episodes_copy:,.1f}x)")
        print(f"{name}: other fresh copies of the validated database: "
              + ", ".join(f"{label} {seconds * 1e3:.0f} ms" for label, seconds in others.items()))
        summary[name] = {"tasks": len(golds), "creation_validated_ms": round(validated * 1e3, 2),
                         "creation_copy_on_write_ms": round(copy_on_write * 1e3, 4),
                         "gold_episode_validated_ms": round(episodes_validated * 1e3, 2),
                         "gold_episode_copy_on_write_ms": round(episodes_copy * 1e3, 2),
                         **{f"creation_{label}_ms": round(seconds * 1e3, 1) for label, seconds in others.items()}}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
