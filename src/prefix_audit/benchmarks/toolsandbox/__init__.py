"""ToolSandbox: our own re-implementation of ToolSandbox's published tool and state semantics with
our own generated scenarios (dataset ``toolsandbox``), and the adapter that scores real ToolSandbox
runs from their recorded outcomes (dataset ``toolsandbox_recorded``, fed by
:mod:`prefix_audit.importers.toolsandbox`).

Entry points: :class:`ToolSandboxBenchmark` (replay sessions, the mutation generator's facts,
``agent_environment(task_id)``), :func:`list_task_ids` and :func:`sample_task_ids` (the seeded
200-scenario sample), and :class:`RecordedToolSandboxBenchmark`.
"""

from .adapter import DATASET, ToolSandboxAgentEnvironment, ToolSandboxBenchmark, list_task_ids, sample_task_ids
from .recorded import RecordedToolSandboxBenchmark

__all__ = ["DATASET", "RecordedToolSandboxBenchmark", "ToolSandboxAgentEnvironment", "ToolSandboxBenchmark",
           "list_task_ids", "sample_task_ids"]
