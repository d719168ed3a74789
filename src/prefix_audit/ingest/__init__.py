"""Reading the logs other tools wrote: the ``import`` stage and the log formats of no one benchmark.

Holds :mod:`.imports` (logs → rollout records, each entry a record or a quarantined line with its
reason, by the importer each benchmark registered), :mod:`.inspect_logs` (Inspect AI ``.eval`` and
``.json`` logs, each sample handed to the benchmark that registered its task; itself registered as the
``inspect`` importer) and :mod:`.agentprocessbench` (AgentProcessBench's trajectory records, each handed
to the benchmark that registered its data source; the ``agentprocessbench`` importer). The formats of each
benchmark are read in that benchmark's package.

May import: :mod:`prefix_audit.replay` (the registry, the trust summary) and :mod:`prefix_audit.core`.
Public: every module.
"""
