"""Making rollouts: the run grid, the agent methods, the rollout sources and the stages that run them.

Holds :mod:`.grid` (which blocks a config asks for), :mod:`.settings` (a block's typed settings),
:mod:`.agents` (the executor loop and the four methods), :mod:`.sources` (reference, mutation and
simulated-model sources), :mod:`.rollouts` (the ``generate_rollouts`` stage), :mod:`.rollout_store`
(append-only, resumable storage), :mod:`.tasks` (the ``sample_tasks`` stage) and :mod:`.progress`
(how far a run has got).

May import: :mod:`prefix_audit.replay`, :mod:`prefix_audit.models` and :mod:`prefix_audit.core`;
benchmarks only through the registry. Public: :mod:`.grid`, :mod:`.rollouts`, :mod:`.tasks`,
:mod:`.progress`; :mod:`.agents`, :mod:`.sources`, :mod:`.settings` and :mod:`.rollout_store` are
internal (an import-linter contract keeps them so).
"""
