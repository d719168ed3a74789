"""Where a block's model name came from is said once per block, with a pointer at ``--model``: per
importer (a folder, the file name, the log's own fields; nothing where ``--model`` named it), BFCL's
order of witnesses, and the BFCL data release blocks of ``BFCL_v4`` files are scored on."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from bfcl_logs import gold_entry, write_result_file, write_score_file
from conftest import RESOURCES, SHARED, read_imported
from tau_results import GREETING, STOP, agent_says, results_document, simulation, user_says
from toolsandbox_runs import ScenarioRun, write_run

from prefix_audit.benchmarks.bfcl import import_result_file
from prefix_audit.benchmarks.bfcl.handlers import model_config
from prefix_audit.benchmarks.bfcl.reading import BfclReading
from prefix_audit.benchmarks.bfcl.importer import import_score_file
from prefix_audit.cli import main
from prefix_audit.core.records import Located, ModelNamed, NamedBy, Rollout
from prefix_audit.ingest.imports import ImportReport, of_dataset

XLAM = "Salesforce/Llama-xLAM-2-8b-fc-r"
GIVE = "give --model to name it"


@pytest.fixture(scope="module")
def config(bfcl):
    return model_config(bfcl.data.root)


def _said(report: ImportReport) -> list[str]:
    """The lines the import says of its blocks' model names."""
    return [line for line in report.detail_lines() if ": model name " in line]


# --- the report -------------------------------------------------------------------------------------------------


def _located(model: str, named_by: ModelNamed | None, dataset: str = "d") -> Located:
    return Located("x", 1, Rollout(dataset, "t", model, "imported", f"{model}-{named_by}", ()), named_by)


def test_a_block_says_where_its_name_came_from_once_whatever_its_logs():
    a, b = (ModelNamed(NamedBy.FOLDER, "the folder name", f"/logs/bfcl/{n}_result.json") for n in ("a", "b"))
    other = ModelNamed(NamedBy.FILE_NAME, "the file-name prefix", "/elsewhere/bfcl_result.json")
    report = ImportReport()
    for item in [_located("bfcl", a), _located("bfcl", a), _located("bfcl", b), _located("bfcl", other),
                 _located("given", None)]:
        report.add_entry(item)
    assert _said(report) == [
        f"d/bfcl/imported: model name 'bfcl' is the folder name of a_result.json and 1 other log (/logs/bfcl), "
        f"the file-name prefix of bfcl_result.json (/elsewhere); {GIVE}"]
    # as the workers' reports are merged, log by log: the same line
    merged = ImportReport()
    for item in [_located("bfcl", a), _located("bfcl", b), _located("bfcl", other), _located("given", None)]:
        one = ImportReport()
        one.add_entry(item)
        merged.merge(one)
    assert _said(merged) == _said(report)
    # an entry quarantined after all (of another dataset than its block's, in a workflow block) is said no more
    stray = _located("bfcl", a, dataset="other")
    report = ImportReport()
    report.add_entry(stray)
    assert _said(report)
    list(of_dataset([stray], "d", report))
    assert _said(report) == []


# --- BFCL: the order of witnesses -------------------------------------------------------------------------------


def _named(path: Path, config, **kwargs) -> set[tuple[str, ModelNamed | None, str]]:
    """(model, where it came from, the handler's chosen_by) of every rollout of the file."""
    reader = import_score_file if path.name.endswith("_score.json") else import_result_file
    return {(i.rollout.model, i.named_by, i.rollout.meta["bfcl_handler"]["chosen_by"])
            for i in reader(path, reading=BfclReading(config), **kwargs) if isinstance(i, Located)}


def _line(path: Path, name: str) -> Path:
    return write_result_file(path / name, [{"id": "multi_turn_base_0", "result": [["cd(folder='x')"]]}])


def test_bfcl_names_a_model_by_its_best_witness(config, tmp_path):
    """--model > a model key of BFCL's config (the file's folders, then its score file's model_name,
    then its file-name prefix) > the model folder of BFCL's layout > the file-name prefix > the folder."""
    def named(kind, said, path):
        return ModelNamed(kind, said, str(path))

    keyed = _line(tmp_path / "result" / "gpt-4o-2024-11-20", f"{XLAM.replace('/', '_')}_BFCL_v3_multi_turn_base_result.json")
    assert _named(keyed, config) == {("gpt-4o-2024-11-20", named(
        NamedBy.FOLDER, "BFCL's model key gpt-4o-2024-11-20 (a folder's name)", keyed), "result folder")}
    assert _named(keyed, config, model="mine") == {("mine", None, "result folder")}  # --model: nothing to say

    scored = _line(tmp_path / "runs", f"{XLAM.replace('/', '_')}_BFCL_v3_multi_turn_base_result.json")
    score = write_score_file(scored.with_name(scored.name.replace("_result", "_score")), 1,
                             {"multi_turn_base_0": "wrong"})
    score.write_text(score.read_text().replace('"model_name": "m"', '"model_name": "gpt-4o-2024-11-20"'))
    assert _named(scored, config) == {("gpt-4o-2024-11-20", named(
        NamedBy.LOG_FIELD, "BFCL's model key gpt-4o-2024-11-20 (the score file's model_name)", scored), "score file")}
    score.unlink()
    assert _named(scored, config) == {(XLAM.replace("/", "_"), named(
        NamedBy.FILE_NAME, f"BFCL's model key {XLAM} (the file-name prefix)", scored), "file name")}

    forked = _line(tmp_path / "result" / "my-fork" / "multi_turn", "copy_BFCL_v4_multi_turn_base_result.json")
    assert _named(forked, config) == {("my-fork", named(NamedBy.FOLDER, "the model folder under result/", forked),
                                       "content")}
    flat = _line(tmp_path / "bfcl", "gpt-oss-20b_BFCL_v4_multi_turn_base_result.json")
    assert _named(flat, config) == {("gpt-oss-20b", named(NamedBy.FILE_NAME, "the file-name prefix", flat),
                                     "content")}
    plain = _line(tmp_path / "bfcl", "BFCL_v4_multi_turn_base_result.json")
    assert _named(plain, config) == {("bfcl", named(NamedBy.FOLDER, "the folder name", plain), "content")}
    # a score file read alone, in bfcl evaluate's layout, names no key: its model folder under score/
    alone = write_score_file(tmp_path / "score" / "my-fork" / "multi_turn" / "BFCL_v4_multi_turn_base_score.json",
                             2, {"multi_turn_base_0": "wrong"})
    assert _named(alone, config) == {("my-fork", named(NamedBy.FOLDER, "the model folder under score/", alone),
                                      "content")}


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_folder_of_one_models_bfcl_v4_files_says_its_name_and_release_once(bfcl, tmp_path, capsys):
    folder = tmp_path / "bfcl"
    files = [write_result_file(folder / f"gpt-x_BFCL_v4_multi_turn_{c}_result.json",
                               [gold_entry(bfcl, f"multi_turn_{c}_1")]) for c in ("base", "miss_param")]
    out = tmp_path / "r.jsonl"
    assert main(["import", "bfcl", str(folder), "-o", str(out), "--resources", str(RESOURCES)]) == 0
    said = capsys.readouterr().err.splitlines()
    scored_on = Counter(r["meta"]["bfcl_data"] for r in _records(out))  # the release chosen per file
    data = ", ".join(f"bfcl-eval {release} ({n} of {len(files)} entries)" for release, n in scored_on.items())
    assert [line for line in said if line.startswith("bfcl_v3/")] == [
        f"bfcl_v3/gpt-x/imported: model name 'gpt-x' is the file-name prefix of {files[0].name} and 1 other log "
        f"({folder}); {GIVE}",
        f"bfcl_v3/gpt-x/imported: BFCL_v4 files scored on the data of {data}; "
        f"the dataset id bfcl_v3 names the multi-turn categories BFCL v3 and v4 share"]
    # --model names it: nothing said of the name; the release still is
    assert main(["import", "bfcl", str(folder), "-o", str(out), "--model", "m", "--resources", str(RESOURCES)]) == 0
    said = capsys.readouterr().err.splitlines()
    assert [line.split(": ", 1)[1].split(" scored")[0] for line in said if line.startswith("bfcl_v3/")] == [
        "BFCL_v4 files"]
    # a BFCL_v3 file is of the dataset its id names: no release said
    v3 = write_result_file(tmp_path / "v3" / "gpt-x_BFCL_v3_multi_turn_base_result.json",
                           [gold_entry(bfcl, "multi_turn_base_1")])
    assert main(["import", "bfcl", str(v3), "-o", str(out), "--resources", str(RESOURCES)]) == 0
    said = capsys.readouterr().err.splitlines()
    assert [line for line in said if line.startswith("bfcl_v3/")] == [
        f"bfcl_v3/gpt-x/imported: model name 'gpt-x' is the file-name prefix of {v3.name} ({v3.parent}); {GIVE}"]


# --- the other importers ----------------------------------------------------------------------------------------


def test_a_tau2_model_is_its_agents_llm_or_a_stand_in(tau, resolve, tmp_path):
    doc = results_document(tau, [simulation("s", "5", [GREETING, user_says("Hi."), agent_says("Hello."), STOP])],
                           task_ids=("5",))
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    _, report = read_imported([path], resolve)
    assert _said(report) == [f"tau_airline/test-model/imported: model name 'test-model' is the model in "
                             f"info.agent_info.llm of results.json ({tmp_path}); {GIVE}"]
    assert _said(read_imported([path], resolve, model="m")[1]) == []
    del doc["info"]["agent_info"]
    path.write_text(json.dumps(doc))
    assert _said(read_imported([path], resolve)[1]) == [
        f"tau_airline/unknown/imported: model name 'unknown' is a stand-in: no model in info.agent_info.llm of "
        f"results.json ({tmp_path}); {GIVE}"]


def test_a_tau_v1_model_is_its_file_name(resolve, tmp_path):
    # an entry whose trajectory holds no agent action: imported as an infrastructure failure, which is enough here
    entry = {"task_id": 0, "reward": 0.0, "trial": 0, "traj": [{"role": "system", "content": "policy"}],
             "info": {"task": {"user_id": "u", "actions": [{"name": "find_user_id_by_email",
                                                             "kwargs": {"email": "a@b.c"}}],
                               "instruction": "Find me.", "outputs": []},
                      "reward_info": {"reward": 0.0, "info": {}, "actions": []}}}
    path = tmp_path / "tool-calling-x-0.0.json"
    path.write_text(json.dumps([entry]))
    items, report = read_imported([path], resolve, options=None)
    assert [type(i).__name__ for i in items] == ["Located"]
    assert _said(report) == [f"{items[0].rollout.dataset}/tool-calling-x-0.0/imported: model name 'tool-calling-x-0.0' "
                             f"is the file name of {path.name} ({tmp_path}); {GIVE}"]


def test_a_toolsandbox_model_is_the_agent_its_run_folder_names(resolve, tmp_path):
    run = write_run(tmp_path / "data", [ScenarioRun("wifi_on", [("user", "Turn on wifi"), ("agent", "Done.")])])
    _, report = read_imported([tmp_path / "data"], resolve)
    assert _said(report) == [f"toolsandbox_recorded/fake_gpt/imported: model name 'fake_gpt' is the agent in the run "
                             f"folder's name of {run.name} ({run.parent}); {GIVE}"]
    assert _said(read_imported([tmp_path / "data"], resolve, model="m")[1]) == []


APB = SHARED / "fixtures" / "labels"


@pytest.mark.parametrize(("name", "field"), [("apb_bfcl_subset.jsonl", "meta.model_name"),
                                             ("apb_tau2_subset.jsonl", "meta.tau2_info.agent_info.llm")])
def test_an_agentprocessbench_model_is_its_records_own(resolve, tmp_path, name, field):
    if not (APB / name).is_file():
        pytest.skip(f"no AgentProcessBench records at {APB}")
    path = tmp_path / name
    path.write_text((APB / name).read_text().splitlines(keepends=True)[0])  # one record is enough
    items, report = read_imported([path], resolve)
    [model] = {i.rollout.model for i in items if isinstance(i, Located)}
    [line] = _said(report)
    assert line.endswith(f"model name {model!r} is the model in {field} of {name} ({tmp_path}); {GIVE}")
    assert _said(read_imported([path], resolve, model="m")[1]) == []
