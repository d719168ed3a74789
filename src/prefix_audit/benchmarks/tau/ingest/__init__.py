"""τ-bench logs → rollout records: tau2 results in every container, v1 runs, Inspect AI samples.

Holds :mod:`.containers` (every container tau2 simulations come in), :mod:`.importer` (tau2
simulations; format detection), :mod:`.task_plans` (what a tau2 file's tasks are scored against),
:mod:`.importer_v1` (v1's entries, both strategies) and :mod:`.v1_file` (a v1 result list as a whole),
:mod:`.inspect_samples` (inspect_evals' ``tau2_airline``/``tau2_retail`` samples), :mod:`.process_records`
(AgentProcessBench's tau2 trajectory records), :mod:`.solo` (whether a file is a run of tau2's solo
mode) and :mod:`.errors`.

May import: :mod:`..adapter`, :mod:`..generation`, :mod:`..domain` and the layers below the
benchmarks.
"""
