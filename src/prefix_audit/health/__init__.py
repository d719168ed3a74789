"""Benchmark health (docs/definitions.md#health): which tasks are sound, found by running each benchmark's
own environment and evaluator on the tasks' gold and on counterfactual trajectories.

Holds :mod:`.tasks` (every task of a data release audited by its benchmark over worker processes; the
findings and per-task verdicts as typed Parquet), :mod:`.cache` (the findings kept per release across
commands, keyed by the release's data and the code) and :mod:`.audits` (findings from audits of agents:
tasks no block solved, tasks most blocks fail first the same way). The codes and the tables' schemas
are :mod:`prefix_audit.core.health`; the checks every benchmark shares, :mod:`prefix_audit.replay.health`.

May import: :mod:`prefix_audit.replay` (the registry, the contract) and :mod:`prefix_audit.core`; a
benchmark only through the registry. Public: every module.
"""
