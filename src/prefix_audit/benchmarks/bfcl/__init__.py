"""BFCL-v3 multi-turn (dataset ``bfcl_v3``) on the pinned ``bfcl-eval`` package's data and
environment classes.

:mod:`.data` — entries, ground truth, function docs and the task sample; :mod:`.loader` — the
sandboxed loader of the environment classes; :mod:`.semantics` — the facts the checker needs;
:mod:`.replay` — the replay adapter and Y; :mod:`.environment` — the live environment for agents;
:mod:`.importer` — ``bfcl generate`` result files.
"""

from __future__ import annotations

from ...fetch import PackagePin
from ...registry import CliOption, DatasetSpec, OpenRequest, Registration, register
from .data import CATEGORIES, DATASET, DEFAULT_PIN, BfclData, Entry, load_data, sample_task_ids
from .importer import import_bfcl, import_result_file, is_result_file
from .replay import BfclBenchmark, BfclSession
from .scores import score_file_candidates

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
    bench = BfclBenchmark(load_data(request.resources, pin, fetch=request.fetch))
    bench.score_file = request.settings.get("score_file")
    return bench


register(Registration(
    __name__, (DatasetSpec(DATASET, BfclBenchmark, _open, CONFIG_SCHEMA),),
    importers={"bfcl": import_bfcl}, detectors={"bfcl": is_result_file},
    companions={"bfcl": score_file_candidates},
    cli_options=(CliOption("--bfcl-score", "score_file",
                           "import bfcl: BFCL's score file of the result file (or a folder holding score files), "
                           "for BFCL's own verdicts (default: found where `bfcl evaluate` writes it, or beside the "
                           "result file)"),),
))
