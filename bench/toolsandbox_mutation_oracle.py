"""The mutation oracle on the native ToolSandbox: every scenario × every category, one confirmed mutant each.

Usage: PYTHONPATH=src python bench/toolsandbox_mutation_oracle.py [--step 1] [--seed 1]
Prints how often the checker recovers the injected depth and category, the confusion matrix, the
scenarios without an injection site per category, and every miss.
(tests/test_toolsandbox_mutations.py runs the same check on every second scenario.)
"""

from __future__ import annotations

import argparse

from prefix_audit.benchmarks.toolsandbox import ToolSandboxBenchmark
from prefix_audit.generation.sources.oracle import run_oracle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=int, default=1, help="use every STEP-th scenario")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    bench = ToolSandboxBenchmark()
    print("\n".join(run_oracle(bench, bench.task_ids()[:: args.step], args.seed).lines()))


if __name__ == "__main__":
    main()
