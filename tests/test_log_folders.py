"""Folders as input (issue 47): the folder a runner wrote is walked, every log in it read as if named
on the command line, what is no log skipped and counted by cause — and the audit of a folder is the
audit of the same files listed by hand, byte for byte (metamorphic, per format)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path

import polars as pl
import pytest
from conftest import RESOURCES, SHARED
from hypothesis import given, settings
from hypothesis import strategies as st
from toolsandbox_runs import BRUNO, Call, ScenarioRun, write_run

from prefix_audit.cli import main
from prefix_audit.core.io import natural_key
from prefix_audit.replay import log_folders, registry
from prefix_audit.replay.log_folders import expand_logs

RESULT = "BFCL_v3_multi_turn_base_result.json"
MISS_FUNC = "BFCL_v3_multi_turn_miss_func_result.json"
SCORE = "BFCL_v3_multi_turn_base_score.json"
# What a person's folder holds besides the logs: a README, a plot, a viewer's index, a file of no format.
EXTRAS = {"README.md": "# my run\n", "plot.png": "\x89PNG\r\n", "index.json": '{"curves": []}',
          "notes.bin": "\x00\x01junk"}


def _result_line(task_id: str) -> str:
    return json.dumps({"id": task_id, "result": [[[]]]}) + "\n"


def _score_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"accuracy": 1.0, "correct_count": 1, "total_count": 1}) + "\n")
    return path


def _bfcl_tree(root: Path) -> Path:
    """``bfcl generate`` and ``bfcl evaluate``'s layout: result/<model>/multi_turn/ beside score/<model>/multi_turn/."""
    for name in (RESULT, MISS_FUNC):
        path = root / "result" / "m" / "multi_turn" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_result_line(name.replace("BFCL_v3_", "").replace("_result.json", "_0")))
    _score_file(root / "score" / "m" / "multi_turn" / SCORE)
    return root


def _extras(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in EXTRAS.items():
        (folder / name).write_text(text)


def _causes(expansion) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for skipped in expansion.skipped:
        out.setdefault(skipped.cause, []).append(skipped.path.name)
    return out


# --- the walk --------------------------------------------------------------------------------------------


def test_a_bfcl_tree_gives_its_result_files_and_counts_every_other_file(tmp_path):
    root = _bfcl_tree(tmp_path / "run")
    _extras(root)
    (root / ".DS_Store").write_text("x")
    expansion = expand_logs([root])
    assert [(s.path.relative_to(root).as_posix(), s.format) for s in expansion.logs] == [
        (f"result/m/multi_turn/{RESULT}", "bfcl"), (f"result/m/multi_turn/{MISS_FUNC}", "bfcl")]
    # the score file serves its result file: counted as its companion, not as unknown, not as a log
    assert expansion.logs[0].companions == (root / "score" / "m" / "multi_turn" / SCORE,)
    assert _causes(expansion) == {
        log_folders.HIDDEN: [".DS_Store"], log_folders.DOCUMENTATION: ["README.md"],
        log_folders.VIEWER_INDEX: ["index.json"], log_folders.unknown_cause(): ["notes.bin"],
        log_folders.IMAGE: ["plot.png"], log_folders.companion_cause("bfcl"): [SCORE]}
    lines = expansion.tally().lines()
    assert len(lines) == 6 and f"1 × {log_folders.companion_cause('bfcl')} (file {SCORE})" in lines


def test_compressed_logs_and_tars_in_a_folder_are_logs(tmp_path):
    """A compressed result file finds its compressed score file in the score/ tree (its companion); a tar
    of a run folder is a log, read once unpacked."""
    root = _bfcl_tree(tmp_path / "run")
    for path in [*root.rglob("*_result.json"), *root.rglob("*_score.json")]:
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    run = write_run(tmp_path / "runs", [ScenarioRun("ask", [("user", "hi")])])
    with tarfile.open(root / "toolsandbox.tar.gz", "w:gz") as tar:
        tar.add(run, arcname=run.name)
    expansion = expand_logs([root])
    assert [(s.path.name, s.format) for s in expansion.logs] == [
        (f"{RESULT}.gz", "bfcl"), (f"{MISS_FUNC}.gz", "bfcl"), ("toolsandbox.tar.gz", None)]
    assert _causes(expansion) == {log_folders.companion_cause("bfcl"): [f"{SCORE}.gz"]}


def test_single_turn_result_files_of_a_bfcl_run_are_no_log(tmp_path):
    """``bfcl generate`` writes single-turn categories beside the multi-turn ones (their score files are
    not multi-turn score files either): skipped, not read entry by entry into the quarantine."""
    root = _bfcl_tree(tmp_path / "run")
    single = root / "result" / "m" / "non_live" / "BFCL_v3_simple_python_result.json"
    single.parent.mkdir(parents=True)
    single.write_text(json.dumps({"id": "simple_python_0", "result": "[f(x=1)]"}) + "\n")
    expansion = expand_logs([root])
    assert [s.path.name for s in expansion.logs] == [RESULT, MISS_FUNC]
    causes = _causes(expansion)
    assert causes["a BFCL file of the single-turn category simple_python (only BFCL's multi-turn categories "
                  "are audited)"] == [single.name]
    assert log_folders.unknown_cause() not in causes
    assert expand_logs([single], kind="bfcl").logs[0].format == "bfcl"  # --format still reads it
    with pytest.raises(ValueError, match="single-turn category simple_python"):  # named by hand: said why
        registry.detect_format(single)


def test_a_score_file_without_its_result_file_is_a_log_as_when_named(tmp_path):
    score = _score_file(tmp_path / "run" / "score" / "m" / "multi_turn" / SCORE)
    (expansion_log,) = expand_logs([tmp_path / "run"]).logs
    assert (expansion_log.path, expansion_log.format) == (score, "bfcl")


def test_folders_that_are_one_log_are_taken_whole_and_folders_of_runs_walked(tmp_path):
    output = tmp_path / "data"  # a ToolSandbox output folder of two runs, one nested as a model name with '/' nests
    first = write_run(output, [ScenarioRun("ask", [("user", "hi")])], "agent_a_user_b_06_12_2024_09_00_00")
    second = write_run(output / "agent_openai", [ScenarioRun("ask", [("user", "hi")])],
                       "gpt-4o_user_b_06_12_2024_09_00_00")
    layout = tmp_path / "data" / "tau2_run"  # tau2 1.0's directory layout
    (layout / "simulations").mkdir(parents=True)
    (layout / "results.json").write_text(json.dumps({"info": {}, "tasks": []}))
    (layout / "simulations" / "s1.json").write_text("{}")
    expansion = expand_logs([output])
    assert [(s.path, s.format) for s in expansion.logs] == [(first, "toolsandbox"), (second, "toolsandbox"),
                                                           (layout, "tau")]
    assert expansion.skipped == []  # nothing inside a run folder is looked at alone
    assert [(s.path, s.format) for s in expand_logs([first]).logs] == [(first, "toolsandbox")]


def test_format_forces_every_file_but_documentation_plots_and_indexes(tmp_path):
    root = _bfcl_tree(tmp_path / "run")
    _extras(root / "result")
    expansion = expand_logs([root], kind="bfcl")
    assert [s.path.name for s in expansion.logs] == [RESULT, MISS_FUNC, "notes.bin"]  # read as bfcl, as named so
    assert {s.format for s in expansion.logs} == {"bfcl"}
    assert sorted(_causes(expansion)) == sorted([log_folders.DOCUMENTATION, log_folders.IMAGE, log_folders.VIEWER_INDEX,
                                                 log_folders.companion_cause("bfcl")])


def test_a_file_named_by_hand_is_a_log_whatever_it_is(tmp_path):
    stray = tmp_path / "README.md"
    stray.write_text("hi")
    missing = tmp_path / "nowhere.json"
    assert [(s.path, s.format) for s in expand_logs([stray, missing]).logs] == [(stray, None), (missing, None)]


@pytest.mark.parametrize("make", [lambda folder: None, _extras], ids=["empty", "no-log"])
def test_a_folder_without_any_log_is_one_located_error(tmp_path, capsys, make):
    folder = tmp_path / "logs"
    folder.mkdir()
    make(folder)
    with pytest.raises(ValueError, match=f"^{folder}: no log in this folder"):
        expand_logs([folder])
    assert main(["audit", "--no-figures", str(folder), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"prefix-audit audit: {folder}: no log in this folder") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    if make is _extras:  # `import` names the format, which every file but the README, plot and index is read as
        return
    assert main(["import", "bfcl", str(folder), "-o", str(tmp_path / "r.jsonl")]) == 2
    assert capsys.readouterr().err.startswith(f"prefix-audit import: {folder}: no log in this folder (it is empty)")


@settings(max_examples=25, deadline=None, derandomize=True)
@given(numbers=st.lists(st.integers(0, 120), min_size=1, max_size=8, unique=True),
       depth=st.integers(0, 2))
def test_the_walk_is_in_natural_order_whatever_the_order_of_creation(numbers, depth):
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        for n in numbers:  # created in the drawn order; the listing order of the file system is not relied on
            path = root.joinpath(*[f"run_{n}"] * depth, f"log_{n}_result.json")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_result_line(f"multi_turn_base_{n}"))
        walked = [s.path.name for s in expand_logs([root]).logs]
    assert walked == sorted((f"log_{n}_result.json" for n in numbers), key=natural_key)


@pytest.mark.parametrize("link", ["file", "folder", "loop", "twin"])
def test_symbolic_links_are_not_followed_out_of_the_folder(tmp_path, link):
    root = tmp_path / "logs"
    root.mkdir()
    (root / "a_result.json").write_text(_result_line("multi_turn_base_0"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "b_result.json").write_text(_result_line("multi_turn_base_1"))
    target, cause = {"file": (outside / "b_result.json", log_folders.OUTSIDE),
                     "folder": (outside, log_folders.OUTSIDE),
                     "loop": (root, log_folders.SEEN),  # a link to the folder itself: walked once, no endless walk
                     "twin": (root / "a_result.json", log_folders.SEEN)}[link]
    os.symlink(target, root / "z_link")
    expansion = expand_logs([root])
    assert [s.path.name for s in expansion.logs] == ["a_result.json"]
    assert _causes(expansion) == {cause: ["z_link"]}


def test_a_link_inside_the_folder_is_followed(tmp_path):
    root = tmp_path / "logs"
    (root / "store").mkdir(parents=True)
    (root / "store" / "a_result.json").write_text(_result_line("multi_turn_base_0"))
    os.symlink(root / "store", root / "latest")  # 'latest' before 'store': the log is read through it, once
    expansion = expand_logs([root])
    assert [s.path for s in expansion.logs] == [root / "latest" / "a_result.json"]
    assert _causes(expansion) == {log_folders.SEEN: ["store"]}


def test_a_log_named_twice_is_read_once(tmp_path):
    """By hand and inside a named folder, or in two named folders (one inside the other): the first
    naming reads it, every later one is a skipped file saying so."""
    root = _bfcl_tree(tmp_path / "run")
    result = root / "result" / "m" / "multi_turn" / RESULT
    expansion = expand_logs([result, root / "result", root / "result" / "m", result])
    assert [s.path.name for s in expansion.logs] == [RESULT, MISS_FUNC]
    assert expansion.logs[0].path == result  # the first naming keeps its path
    assert _causes(expansion) == {log_folders.NAMED_AGAIN: [RESULT, RESULT, MISS_FUNC, RESULT]}


def test_inspect_log_directory_lists_its_logs_as_inspect_does(tmp_path):
    """Every ``.eval`` and every ``.json`` with Inspect's header; not the viewer's logs.json listing."""
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    for name in ("2026-12-01T10-00-00_tau2-airline_A.eval", "sub/2026-12-02T10-00-00_bfcl_B.eval"):
        with zipfile.ZipFile(logs / name, "w") as archive:
            archive.writestr("header.json", "{}")
    (logs / "2026-12-03T10-00-00_tau2-retail_C.json").write_text('{"version": 2, "status": "success", "eval": {}}')
    (logs / "logs.json").write_text(json.dumps({"2026-12-01T10-00-00_tau2-airline_A.eval": {"version": 2}}))
    expansion = expand_logs([logs])
    assert [(s.path.relative_to(logs).as_posix(), s.format) for s in expansion.logs] == [
        ("2026-12-01T10-00-00_tau2-airline_A.eval", "inspect"), ("2026-12-03T10-00-00_tau2-retail_C.json", "inspect"),
        ("sub/2026-12-02T10-00-00_bfcl_B.eval", "inspect")]
    assert _causes(expansion) == {log_folders.VIEWER_INDEX: ["logs.json"]}


# --- the same numbers either way (metamorphic) -------------------------------------------------------------


def _outputs(out: Path) -> dict[str, bytes]:
    """What an audit wrote that holds its numbers: every Parquet file and table, by place."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.suffix in {".parquet", ".csv", ".md", ".tex"}}


def _audit(paths, out: Path, *extra: str) -> None:
    assert main(["audit", "--no-figures", *map(str, paths), "-o", str(out), "--no-health", "--resamples", "50",
                 "--resources", str(RESOURCES), *extra]) == 0


def _same_either_way(folder: Path, tmp_path: Path, *extra: str, companions: int = 0) -> list[Path]:
    """Audit ``folder`` and the logs it holds listed by hand; the outputs are the same bytes, and the
    folder's audit lists every file it skipped (the extras and ``companions``)."""
    logs = [s.path for s in expand_logs([folder]).logs]
    _audit([folder], tmp_path / "by_folder", *extra)
    _audit(logs, tmp_path / "by_hand", *extra)
    by_folder, by_hand = _outputs(tmp_path / "by_folder"), _outputs(tmp_path / "by_hand")
    assert by_folder == by_hand and any(name.startswith("scored/") for name in by_folder)
    skipped = (tmp_path / "by_folder" / "rollouts" / "imported" / "skipped.jsonl").read_text().splitlines()
    assert len(skipped) == len(EXTRAS) + companions
    assert not (tmp_path / "by_hand" / "rollouts" / "imported" / "skipped.jsonl").exists()  # nothing was skipped
    return logs


def test_bfcl_folder_audits_as_its_files_listed(bfcl, tmp_path):
    from bfcl_logs import gold_entry, write_result_file, write_score_file

    root = tmp_path / "bfcl"
    for model in ("m", "m2"):  # two models' result folders
        write_result_file(root / "result" / model / "multi_turn" / RESULT,
                          [gold_entry(bfcl, t) for t in ("multi_turn_base_1", "multi_turn_base_4")])
    write_score_file(root / "score" / "m" / "multi_turn" / SCORE, 2, {"multi_turn_base_4": "wrong"})
    _extras(root)
    logs = _same_either_way(root, tmp_path, companions=1)
    assert [p.relative_to(root).parts[1] for p in logs] == ["m", "m2"]
    episodes = pl.read_parquet(tmp_path / "by_folder" / "fed" / "episodes.parquet").sort("model", "task_id")
    # m's score file was found in the score/ tree, m2 has none
    assert episodes["recorded_y"].to_list() == [1, 0, None, None]


def _tau2_sims(tau):
    from tau_results import GREETING, STOP, agent_says, simulation, tool_call, user_says

    reason = tau["tau_airline"].task("5").reason_for_call
    user = {"user_id": "mei_brown_7075"}
    return [simulation(f"s{n}", "5", [GREETING, user_says(reason), *tool_call("a", "get_user_details", user, "{}"),
                                      agent_says("Done."), STOP]) for n in range(2)]


def test_tau2_simulations_folder_audits_as_its_files_listed(tau, tmp_path):
    from tau_results import results_document

    folder = tmp_path / "simulations"
    folder.mkdir()
    for n in (1, 2, 10):  # tau2 writes one results file per run
        doc = results_document(tau, _tau2_sims(tau))
        doc["simulations"] = [{**sim, "id": f"run{n}-{sim['id']}"} for sim in doc["simulations"]]
        (folder / f"run_{n}_airline.json").write_text(json.dumps(doc))
    _extras(folder)
    logs = _same_either_way(folder, tmp_path)
    assert [p.name for p in logs] == ["run_1_airline.json", "run_2_airline.json", "run_10_airline.json"]


def test_tau2_directory_layouts_audit_as_listed(tau, tmp_path):
    from tau_results import results_document

    root = tmp_path / "results"
    for run in ("airline_a", "airline_b"):
        doc = results_document(tau, _tau2_sims(tau))
        layout = root / run
        (layout / "simulations").mkdir(parents=True)
        (layout / "results.json").write_text(json.dumps({k: v for k, v in doc.items() if k != "simulations"}))
        for sim in doc["simulations"]:
            (layout / "simulations" / f"{sim['id']}.json").write_text(json.dumps({**sim, "id": f"{run}-{sim['id']}"}))
    _extras(root)
    assert [p.name for p in _same_either_way(root, tmp_path)] == ["airline_a", "airline_b"]


def test_toolsandbox_output_folder_audits_as_its_run_folders_listed(tmp_path):
    root = tmp_path / "data"
    for agent in ("a", "b"):
        write_run(root, [ScenarioRun("ask", [("user", "Find Bruno"), ("calls", [
            Call("c1", "search_contacts", {"name": "Bruno"}, result=[BRUNO])])])],
                  f"agent_{agent}_user_scripted_06_12_2024_09_00_00")
    _extras(root)
    assert len(_same_either_way(root, tmp_path)) == 2


V1_LOG = SHARED / "fixtures" / "real-logs" / "tau-bench-v1" / "gpt-4.1-mini_retail_user-gpt-4.1_1trial.json"


def test_tau_v1_results_folder_audits_as_its_files_listed(tmp_path):
    if not V1_LOG.is_file():
        pytest.skip(f"no real log at {V1_LOG}")
    records = json.loads(V1_LOG.read_text())
    folder = tmp_path / "results"  # τ-bench v1's run.py writes one file per run here
    folder.mkdir()
    for n, part in enumerate((records[:2], records[2:4])):
        (folder / f"tool-calling-gpt-4.1-mini-0.0_range_0--1_user-gpt-4.1-llm_{n}.json").write_text(json.dumps(part))
    _extras(folder)
    assert len(_same_either_way(folder, tmp_path, "--model", "gpt-4.1-mini")) == 2


@pytest.mark.slow
def test_inspect_log_directory_audits_as_its_logs_listed(inspect_logs, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    for key in ("tau2_json", "bfcl_eval"):
        shutil.copy(inspect_logs[key], folder)
    _extras(folder)
    assert len(_same_either_way(folder, tmp_path)) == 2


# --- the workflow's imports: blocks --------------------------------------------------------------------------


def _config(imports: list[dict]) -> dict:
    import yaml

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())
    return {**config, "imports": imports}


def test_an_imports_block_naming_a_folder_depends_on_the_logs_it_holds(tmp_path):
    from prefix_audit.generation.grid import import_blocks

    root = _bfcl_tree(tmp_path / "bfcl")
    _extras(root)
    run = write_run(tmp_path / "runs", [ScenarioRun("ask", [("user", "hi")])])
    (tmp_path / "runs" / "README.md").write_text("runs\n")
    imports = [{"dataset": "bfcl_v3", "model": "m", "files": ["bfcl"]},
               {"dataset": "toolsandbox_recorded", "model": "t", "files": ["runs"]}]
    bfcl_block, runs_block = import_blocks(_config(imports), tmp_path).values()
    assert bfcl_block.inputs(tmp_path) == [f"bfcl/result/m/multi_turn/{RESULT}", f"bfcl/score/m/multi_turn/{SCORE}",
                                           f"bfcl/result/m/multi_turn/{MISS_FUNC}"]
    assert runs_block.inputs(tmp_path) == sorted(p.relative_to(tmp_path).as_posix() for p in run.rglob("*")
                                                 if p.is_file())
    # a log added to the folder is an input of the block: the block reruns
    (root / "result" / "m" / "multi_turn" / "BFCL_v3_multi_turn_long_context_result.json").write_text(
        _result_line("multi_turn_long_context_0"))
    assert len(next(iter(import_blocks(_config(imports[:1]), tmp_path).values())).inputs(tmp_path)) == 4
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"^imports\[0\]\.files: .*empty: no log in this folder \(it is empty\)"):
        import_blocks(_config([{"dataset": "bfcl_v3", "model": "m", "files": ["empty"]}]), tmp_path)


def test_the_import_stage_reads_a_folder_as_its_logs_listed_and_logs_what_it_skipped(bfcl, tmp_path, caplog):
    from bfcl_logs import gold_entry, write_result_file

    from prefix_audit.ingest.imports import import_block

    root = tmp_path / "bfcl"
    result = write_result_file(root / "result" / "m" / "multi_turn" / RESULT, [gold_entry(bfcl, "multi_turn_base_1")])
    _extras(root)
    block = {"kind": None, "dataset": "bfcl_v3", "model": "m", "method": "imported", "resources": RESOURCES}
    with caplog.at_level("INFO"):
        folder = import_block([root], tmp_path / "a.jsonl", tmp_path / "a.q.jsonl", **block)
    listed = import_block([result], tmp_path / "b.jsonl", tmp_path / "b.q.jsonl", **block)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes() != b""
    assert folder.skipped.total == len(EXTRAS) and listed.skipped.total == 0
    assert f"skipped 1 × {log_folders.DOCUMENTATION} (file README.md)" in caplog.text


# --- the folders, of real logs, in one command --------------------------------------------------------

REAL = SHARED / "fixtures" / "real-logs"


@pytest.mark.slow
def test_the_runners_folders_of_real_logs_audit_in_one_command(tmp_path):
    """BFCL's result/ tree beside its score/ tree, a folder of three tau2 results files, a τ-bench v1
    results folder and a ToolSandbox output folder, each with a README, a plot, an index.json and a
    junk file: every log read, every other file accounted for."""
    if not REAL.is_dir():
        pytest.skip(f"no real logs at {REAL}")
    bfcl = tmp_path / "bfcl"
    for name in ("BFCL_v4_multi_turn_base_result.json", "BFCL_v4_multi_turn_miss_func_result.json"):
        target = bfcl / "result" / "openai_gpt-oss-20b" / "multi_turn" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REAL / "bfcl" / f"gpt-oss-20b_{name}", target)
    score = bfcl / "score" / "openai_gpt-oss-20b" / "multi_turn" / "BFCL_v4_multi_turn_base_score.json"
    score.parent.mkdir(parents=True)
    shutil.copy(REAL / "bfcl" / "gpt-oss-20b_BFCL_v4_multi_turn_base_score.json", score)
    sims = tmp_path / "sims"
    shutil.copytree(REAL / "tau2", sims)
    v1 = tmp_path / "v1_results"
    v1.mkdir()
    shutil.copy(REAL / "tau-bench-v1" / "gpt-4.1-mini_retail_user-gpt-4.1_1trial.json", v1)
    data = tmp_path / "data"
    shutil.copytree(REAL / "toolsandbox", data)
    folders = [bfcl, sims, v1, data]
    for folder in folders:
        _extras(folder)
    out = tmp_path / "audit"
    assert main(["audit", "--no-figures", *map(str, folders), "-o", str(out), "--no-health", "--resamples", "50",
                 "--resources", str(RESOURCES)]) == 0
    expansion = expand_logs(folders)
    assert [s.format for s in expansion.logs] == ["bfcl", "bfcl", "tau", "tau", "tau", "tau", "toolsandbox"]
    skipped = [json.loads(line) for line in (out / "rollouts" / "imported" / "skipped.jsonl").read_text().splitlines()]
    assert len(skipped) == 4 * len(EXTRAS) + 1  # and the score file, as its result file's companion
    assert not (out / "rollouts" / "imported" / "quarantine.jsonl").read_text()  # every log read
    episodes = pl.read_parquet(out / "fed" / "episodes.parquet")
    assert episodes.group_by("dataset").len().sort("dataset").rows() == [
        ("bfcl_v3", 400), ("tau_airline", 20), ("tau_retail", 45), ("tau_v1_retail", 115),
        ("toolsandbox_recorded", 60)]
