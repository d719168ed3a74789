"""BFCL-v3 multi-turn (dataset ``bfcl_v3``) on the pinned ``bfcl-eval`` package's data and
environment classes.

:mod:`.data` — entries, ground truth, function docs and the task sample; :mod:`.loader` — the
sandboxed loader of the environment classes; :mod:`.semantics` — the facts the checker needs;
:mod:`.replay` — the replay adapter and Y; :mod:`.environment` — the live environment for agents;
:mod:`.importer` — ``bfcl generate`` result files, each line read as :mod:`.result_entry` says by
the handler :mod:`.handlers` chooses with its decoder from :mod:`.decoders`, on the data release
:mod:`.versions` chooses (what a file is read with: :mod:`.reading`), against the score file
:mod:`.scores` finds; :mod:`.process_records` — AgentProcessBench's BFCL trajectory records;
:mod:`.health` — benchmark health of the entries, with :mod:`.state_diff` (the instances' state as a flat
tree, and what a call changed), :mod:`.transcription` (gold strings that transcribe a source changed) and
:mod:`.release_diff` (what differs in an entry between data releases).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from prefix_audit.plugin import CliOption, DatasetSpec, OpenRequest, PackagePin, Registration, TaskCategories, register

from .data import CATEGORIES, DATA_PINS, DATASET, DEFAULT_PIN, BfclData, Entry, load_data, sample_task_ids
from .importer import import_bfcl, import_result_file, is_bfcl_log, single_turn_file
from .inspect_samples import INSPECT_SCORERS, INSPECT_TASKS, inspect_sample_task
from .process_records import TRAJECTORY_SOURCES
from .replay import BfclBenchmark, BfclSession
from .scores import SCORE_FILE_KEY, score_file_candidates

__all__ = ["CATEGORIES", "DATASET", "DEFAULT_PIN", "BfclBenchmark", "BfclData", "BfclSession", "Entry",
           "import_result_file", "load_data", "sample_task_ids"]

CONFIG_SCHEMA = {
    "description": "BFCL-v3 multi-turn: the pinned bfcl-eval wheel and a category-stratified sample",
    "type": "object",
    "additionalProperties": False,
    "required": ["package", "sample"],
    "properties": {"package": {"$ref": "#/$defs/package_pin"}, "sample": {"$ref": "#/$defs/sample"}},
}


def _open(request: OpenRequest) -> BfclBenchmark:
    pin = PackagePin.configured(request.settings, DEFAULT_PIN)
    releases = {p.version: functools.partial(load_data, request.resources, p, request.fetch) for p in DATA_PINS}
    bench = BfclBenchmark(load_data(request.resources, pin, fetch=request.fetch), releases=releases)
    bench.score_file = request.settings.get("score_file")
    bench.data_release = request.settings.get("data_release")
    return bench


def _packages(settings: Mapping[str, Any]) -> list[dict[str, str]]:
    """The data releases an imported result file may be scored on, fetched besides the configured package."""
    return [p.settings() for p in DATA_PINS]


# ``multi_turn_miss_func_3`` → ``miss_func`` (CATEGORIES); an imported entry's meta holds its score file's summary.
TASK_CATEGORIES = TaskCategories(r"multi_turn_(?P<category>\w+?)_\d+", recorded=SCORE_FILE_KEY)

register(Registration(
    __name__,
    (DatasetSpec(DATASET, BfclBenchmark, _open, CONFIG_SCHEMA, categories=TASK_CATEGORIES, package=DEFAULT_PIN),),
    importers={"bfcl": import_bfcl}, detectors={"bfcl": is_bfcl_log},
    companions={"bfcl": score_file_candidates}, not_audited=single_turn_file,
    inspect_tasks=INSPECT_TASKS,
    inspect_scorers=INSPECT_SCORERS,
    inspect_sample_task=inspect_sample_task,
    trajectory_sources=TRAJECTORY_SOURCES,
    packages=_packages,
    cli_options=(CliOption("--bfcl-score", "score_file",
                           "import bfcl: BFCL's score file of the result file (or a folder holding score files), "
                           "for BFCL's own verdicts (default: found where `bfcl evaluate` writes it, or beside the "
                           "result file)"),
                 CliOption("--bfcl-data", "data_release",
                           "import bfcl: the bfcl-eval release whose data every result file is scored on (default: "
                           "per file, the pinned release whose classes reproduce its recorded tool results and "
                           "whose data its recorded runs fit; "
                           f"{', '.join(p.version for p in DATA_PINS)})")),
))
