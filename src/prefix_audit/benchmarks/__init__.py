"""The benchmark packages shipped with prefix-audit, one per benchmark; each registers itself with
:mod:`prefix_audit.replay.registry` (found through the ``prefix_audit.benchmarks`` entry points)."""
