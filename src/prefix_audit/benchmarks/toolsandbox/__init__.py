"""ToolSandbox: our own re-implementation of ToolSandbox's published tool and state semantics with
our own generated scenarios (dataset ``toolsandbox``), and the adapter that scores real ToolSandbox
runs from their recorded outcomes (dataset ``toolsandbox_recorded``, fed by :mod:`.importer`).

Entry points: :class:`ToolSandboxBenchmark` (replay sessions, the mutation generator's facts,
``agent_environment(task_id)``), :func:`list_task_ids` and :func:`sample_task_ids` (the seeded
200-scenario sample), and :class:`RecordedToolSandboxBenchmark`.
"""

from __future__ import annotations

from prefix_audit.replay.registry import DatasetSpec, OpenRequest, Registration, register

from .adapter import DATASET, ToolSandboxAgentEnvironment, ToolSandboxBenchmark, list_task_ids, sample_task_ids
from .importer import import_runs, import_toolsandbox, is_run
from .recorded import DATASET as RECORDED_DATASET
from .recorded import RecordedToolSandboxBenchmark

__all__ = ["DATASET", "RECORDED_DATASET", "RecordedToolSandboxBenchmark", "ToolSandboxAgentEnvironment",
           "ToolSandboxBenchmark", "import_runs", "list_task_ids", "sample_task_ids"]

CONFIG_SCHEMA = {
    "description": "our native sandbox with ToolSandbox's semantics and generated scenarios (nothing to fetch)",
    "type": "object",
    "additionalProperties": False,
    "required": ["sample"],
    "properties": {"sample": {"$ref": "#/$defs/sample"}},
}


def _open_native(request: OpenRequest) -> ToolSandboxBenchmark:
    return ToolSandboxBenchmark()


def _open_recorded(request: OpenRequest) -> RecordedToolSandboxBenchmark:
    return RecordedToolSandboxBenchmark()


register(Registration(
    __name__,
    (DatasetSpec(DATASET, ToolSandboxBenchmark, _open_native, CONFIG_SCHEMA),
     # Imported runs only: each carries its own recorded facts, so there is nothing to configure.
     DatasetSpec(RECORDED_DATASET, RecordedToolSandboxBenchmark, _open_recorded)),
    importers={"toolsandbox": import_toolsandbox},
    detectors={"toolsandbox": is_run},
))
