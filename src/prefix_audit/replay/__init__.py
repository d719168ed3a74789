"""Replay: each action's V_j, FED, Y and the log checked against itself (docs/definitions.md#v_j,
docs/definitions.md#fed, docs/definitions.md#reading-rules).

Holds :mod:`.contract` (what a benchmark adapter is), :mod:`.registry` (where benchmark packages
register, and how they are found), :mod:`.log_folders` (the logs a folder holds, each as the registered
detectors tell it, and what else it holds by cause), :mod:`.checker` (the generic replay checker),
:mod:`.attribution` (whose error a failing action is), :mod:`.values` (the leaves of values, and a value
given in other words), :mod:`.record_check`
(an episode's replay against what its log recorded), :mod:`.trust` (a block's episodes against their
logs), :mod:`.health` (the benchmark-health checks every benchmark shares, on replays of a task's gold and
counterfactual trajectories), :mod:`.conformance` (whether a benchmark keeps the contract: the
checks its author runs), :mod:`.fed` (the FED table's typed schemas), :mod:`.rows` (a replayed rollout's
row of the FED table and its action rows), :mod:`.scoring` (the ``score`` stage: a file of rollouts →
per-action and per-rollout Parquet, replayed over worker processes) and :mod:`.scored_lines` (a big block
scored in byte-range parts, their scored lines gathered).

May import: :mod:`prefix_audit.models` (the contract hands adapters a model backend for a user
simulator) and :mod:`prefix_audit.core`. Never a benchmark by name: benchmarks reach it through the
registry. Public: every module.
"""
