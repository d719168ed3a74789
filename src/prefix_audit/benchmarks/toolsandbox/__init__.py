"""ToolSandbox (dataset ``toolsandbox``): our own re-implementation of ToolSandbox's published tool
and state semantics, with our own generated scenarios; and the adapter that scores real
ToolSandbox runs from their recorded outcomes (dataset ``toolsandbox_recorded``).

Entry points: :class:`ToolSandboxBenchmark` (replay, mutation facts, ``agent_environment``),
:func:`list_task_ids` and :func:`sample_task_ids` (the seeded 200-scenario sample), and
:class:`RecordedToolSandboxBenchmark` for imported runs.
"""

from .adapter import DATASET, ToolSandboxAgentEnvironment, ToolSandboxBenchmark, list_task_ids, sample_task_ids

__all__ = ["DATASET", "ToolSandboxAgentEnvironment", "ToolSandboxBenchmark", "list_task_ids", "sample_task_ids"]
