"""What the Snakemake workflow needs besides the stages: rerun tracking and each job's log.

Holds :mod:`.fingerprint` (a rule's ``code`` param: the hash of the modules its script runs) and
:mod:`.logs` (where a stage's logging goes: its Snakemake log file, or stderr when run by hand).

May import: :mod:`prefix_audit.replay` (the registry, for a dataset's benchmark package). Public:
every module.
"""
