"""ToolSandbox: our own re-implementation of ToolSandbox's published tool and state semantics with
our own generated scenarios (dataset ``toolsandbox``), and the adapter that scores real ToolSandbox
runs from their recorded outcomes (dataset ``toolsandbox_recorded``, fed by :mod:`.importer`).

Entry points: :class:`ToolSandboxBenchmark` (replay sessions, the mutation generator's facts,
``agent_environment(task_id)``, benchmark health), :func:`list_task_ids` and :func:`sample_task_ids`
(the seeded 200-scenario sample), and :class:`RecordedToolSandboxBenchmark`.

:mod:`.world` — the databases, the frozen clock and seeded ids; :mod:`.tools` — the tools and their
executor, with :mod:`.validation` (argument validators), :mod:`.utilities` (units, holidays, distances)
and :mod:`.text` (fuzzy and word-overlap matching); :mod:`.evaluation` — milestones, minefields and
similarity; :mod:`.scenarios` — the generated scenario set; :mod:`.sandbox` — one episode on the
sandbox (live world, trajectory, evaluation); :mod:`.health` — benchmark health of the scenarios;
:mod:`.adapter` — the replay adapter and the live environment; :mod:`.recorded` and :mod:`.importer`
— real ToolSandbox runs scored from their recorded outcomes.
"""

from __future__ import annotations

from prefix_audit.plugin import DatasetSpec, OpenRequest, Registration, register

from .adapter import DATASET, ToolSandboxAgentEnvironment, ToolSandboxBenchmark, list_task_ids, sample_task_ids
from .importer import import_runs, import_toolsandbox, is_run, is_run_folder
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


# Why a real run's scenario is not audited (RecordedToolSandboxBenchmark has no capability "health").
RECORDED_NO_HEALTH = ("real ToolSandbox runs are scored from what they recorded: ToolSandbox itself does not run "
                      "here, so their scenarios cannot be run; task health covers prefix-audit's own `toolsandbox` "
                      "scenarios, a generated set of its own under other names")


def _open_native(request: OpenRequest) -> ToolSandboxBenchmark:
    return ToolSandboxBenchmark()


def _open_recorded(request: OpenRequest) -> RecordedToolSandboxBenchmark:
    return RecordedToolSandboxBenchmark()


register(Registration(
    __name__,
    (DatasetSpec(DATASET, ToolSandboxBenchmark, _open_native, CONFIG_SCHEMA),
     # Imported runs only: each carries its own recorded facts, so there is nothing to configure.
     DatasetSpec(RECORDED_DATASET, RecordedToolSandboxBenchmark, _open_recorded, no_health=RECORDED_NO_HEALTH)),
    importers={"toolsandbox": import_toolsandbox},
    detectors={"toolsandbox": is_run},
    folder_logs={"toolsandbox": is_run_folder},
))
