"""``prefix-audit audit``: logs of several formats → the results layout, every entry accounted for."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import RESOURCES
from toolsandbox_runs import BRUNO, Call, ScenarioRun, write_run

from prefix_audit.cli import main
from prefix_audit.core.calls import parse_call_string
from prefix_audit.replay import registry


def _bfcl_log(bfcl, path: Path) -> dict[str, int]:
    """A function-calling result file: two gold entries, a failed model call, a model that said
    nothing, and a line that is no record. Returns the entry counts by kind."""
    lines = []
    for task_id in ("multi_turn_base_1", "multi_turn_base_4"):  # gold with keyword arguments only
        gold = [[parse_call_string(c) for c in turn] for turn in bfcl.entry(task_id).ground_truth]
        assert not any(c.args for turn in gold for c in turn)
        turns = [[[{c.name: json.dumps(c.kwargs)} for c in turn], []] if turn else [[]] for turn in gold]
        lines.append(json.dumps({"id": task_id, "result": turns}))
    lines.append(json.dumps({"id": "multi_turn_base_2", "result": "Error during inference: 500", "traceback": "x"}))
    lines.append(json.dumps({"id": "multi_turn_base_3", "result": [[[]] for _ in bfcl.entry("multi_turn_base_3")
                                                                  .ground_truth]}))
    lines.append("{truncated")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return {"entries": 5, "records": 4, "infra": 1}


def test_audit_of_mixed_logs_accounts_for_every_entry(bfcl, tmp_path, capsys):
    bfcl_log = tmp_path / "logs" / "BFCL_v4_multi_turn_base_result.json"
    counts = _bfcl_log(bfcl, bfcl_log)
    run = write_run(tmp_path / "runs", [ScenarioRun("ask", [("user", "Find Bruno"), ("calls", [
        Call("c1", "search_contacts", {"name": "Bruno"}, result=[BRUNO])])])])
    stray = tmp_path / "logs" / "notes.txt"
    stray.write_text("not a log\n")
    out = tmp_path / "audit"
    assert main(["audit", "--no-figures", str(bfcl_log), str(run), str(stray), "-o", str(out), "--model", "m",
                 "--resamples", "200", "--resources", str(RESOURCES)]) == 0

    # Layout of the workflow's results/; other commands read it alike.
    for part in ("fed/episodes.parquet", "stats/stats.parquet", "tables/table_G1.md",
                 "rollouts/imported/bfcl_v3/m/imported.jsonl", "scored/bfcl_v3/m/imported/actions.parquet",
                 "scored/toolsandbox_recorded/m/imported/episodes.parquet"):
        assert (out / part).is_file(), part
    episodes = pl.read_parquet(out / "fed" / "episodes.parquet")
    bfcl_rows = episodes.filter(pl.col("dataset") == "bfcl_v3")
    assert bfcl_rows.height == counts["records"]
    assert bfcl_rows["infra_error"].is_not_null().sum() == counts["infra"]
    silent = bfcl_rows.filter(pl.col("task_id") == "multi_turn_base_3").row(0, named=True)
    assert (silent["T"], silent["FED"], silent["Y"]) == (1, 1, 0)  # one empty terminal action
    quarantine = [json.loads(line) for line in (out / "rollouts/imported/quarantine.jsonl").read_text().splitlines()]
    assert sorted((Path(q["path"]).name, q["line"]) for q in quarantine) == [
        ("BFCL_v4_multi_turn_base_result.json", 5), ("notes.txt", 0)]
    assert "not a log any importer recognises" in next(q["reason"] for q in quarantine if q["line"] == 0)

    stats = pl.read_parquet(out / "stats" / "stats.parquet")
    success = stats.filter((pl.col("dataset") == "bfcl_v3") & (pl.col("metric") == "final_success")
                           & pl.col("versus").is_null()).row(0, named=True)
    infra = stats.filter((pl.col("dataset") == "bfcl_v3") & (pl.col("metric") == "infra_error")).row(0, named=True)
    assert success["n_rollouts"] == counts["records"] and infra["successes"] == counts["infra"]
    assert success["successes"] == 2  # the two gold entries
    assert "| bfcl_v3 | m | imported | 3 | 1 |" in (out / "tables" / "table_G1.md").read_text()
    assert main(["progress", str(out)]) == 0
    assert "bfcl_v3/m/imported: 4/? rollouts (finished)" in capsys.readouterr().out
    assert main(["tables", str(out / "stats"), "-o", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "table_G1.md").read_bytes() == (out / "tables" / "table_G1.md").read_bytes()


def test_audit_with_nothing_importable_says_so(tmp_path, capsys):
    stray = tmp_path / "notes.txt"
    stray.write_text("not a log\n")
    assert main(["audit", "--no-figures", str(stray), "-o", str(tmp_path / "out")]) == 2
    assert "no entry of 1 log(s) could be imported" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # not even created


EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "BFCL_v4_multi_turn_base_result.json"
QUICK = ["--resamples", "50", "--no-health", "--resources", str(RESOURCES)]


def files_of(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (hidden ones too), a file with its sha256."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
            for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def example_audit(tmp_path_factory) -> Path:
    """An audit of the documented example result file under two model names (two blocks)."""
    out = tmp_path_factory.mktemp("audit") / "out"
    for model in ("example-model", "other"):  # a model's result folder, as `bfcl generate` names it
        copy = out.parent / "logs" / model / EXAMPLE.name
        copy.parent.mkdir(parents=True)
        copy.write_bytes(EXAMPLE.read_bytes())
    assert main(["audit", "--no-figures", str(EXAMPLE), "-o", str(out), "--model", "example-model", *QUICK]) == 0
    return out


@pytest.mark.parametrize("argv, message", [
    (["audit", "--no-figures", "nope.json"], "no such file or folder: nope.json"),
    (["audit", "--no-figures", "{notes}"], "no entry of 1 log(s) could be imported"),
    (["audit", "--no-figures", "{empty}"], "no log in this folder"),
    (["audit", "--no-figures", str(EXAMPLE), "--labels", "nope.jsonl"], "nope.jsonl"),
])
def test_an_audit_that_fails_leaves_the_previous_one_byte_for_byte(example_audit, tmp_path, capsys, argv, message):
    notes, empty = tmp_path / "notes.txt", tmp_path / "empty"
    notes.write_text("not a log\n")
    empty.mkdir()
    before = files_of(example_audit)
    argv = [a.format(notes=notes, empty=empty) for a in argv]
    assert main([*argv, "-o", str(example_audit), *QUICK]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert files_of(example_audit) == before
    assert [p.name for p in example_audit.parent.iterdir() if p.name.startswith(".")] == []
    assert main([*argv, "-o", str(tmp_path / "a" / "new"), *QUICK]) == 2
    assert not (tmp_path / "a").exists()


def test_an_audit_of_fewer_logs_says_which_blocks_go(example_audit, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["audit", "--no-figures", str(example_audit.parent / "logs"), "-o", str(out), *QUICK]) == 0
    assert sorted(p.name for p in (out / "scored" / "bfcl_v3").iterdir()) == ["example-model", "other"]
    capsys.readouterr()
    assert main(["audit", "--no-figures", str(EXAMPLE), "-o", str(out), "--model", "example-model", *QUICK]) == 0
    err = capsys.readouterr().err
    assert "which had 2 block(s): 1 of them are not in this one and went with it: bfcl_v3/other/imported" in err
    assert not (out / "scored" / "bfcl_v3" / "other").exists() and not (out / "rollouts" / "imported" / "bfcl_v3" / "other").exists()
    assert not [p for p in out.rglob("*") if p.is_dir() and not any(p.iterdir())]  # no empty folder left


def test_an_audit_ends_with_where_to_look_and_builds_its_browser(example_audit, tmp_path, capsys):
    assert (example_audit / "site" / "index.html").is_file()
    out = tmp_path / "out"
    assert main(["audit", str(EXAMPLE), "-o", str(out), "--no-site", "--no-figures", *QUICK]) == 0
    err = capsys.readouterr().err
    assert not (out / "site").exists() and not (out / "figures").exists()
    assert f"browser: not built (3 rollouts); build it with prefix-audit view {out} -o {out / 'site'}" in err
    assert f"tables: {out / 'tables'}/" in err and "figures: not drawn (--no-figures)" in err
    assert main(["audit", str(EXAMPLE), "-o", str(out), *QUICK]) == 0  # by default, the workflow's figures
    err = capsys.readouterr().err
    assert f"browser: open {out / 'site' / 'index.html'}" in err and f"figures: {out / 'figures'}/" in err
    assert (out / "site" / "index.html").is_file()
    for family in ("curves", "categories", "origins"):
        listed = json.loads((out / "figures" / family / "index.json").read_text())["figures"]
        assert listed and all((out / "figures" / family / name).is_file() for name in listed)


_AUDIT = "import sys; from prefix_audit.cli import main; sys.exit(main(sys.argv[1:]))"


def test_an_audit_killed_midway_leaves_the_previous_one_byte_for_byte(example_audit, tmp_path):
    before = files_of(example_audit)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen([sys.executable, "-c", _AUDIT, "audit", "--no-figures", str(EXAMPLE), "-o", str(example_audit),
                             "--model", "killed", *QUICK], env=env, stderr=subprocess.DEVNULL)
    stage = example_audit.parent / f".{example_audit.name}.{proc.pid}.staging"
    deadline = time.monotonic() + 60
    while not (stage / "rollouts").exists():  # killed while it builds the new audit
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert files_of(example_audit) == before


def test_two_audits_at_once_into_one_folder_leave_one_of_them_whole(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    procs = [subprocess.Popen([sys.executable, "-c", _AUDIT, "audit", "--no-figures", str(EXAMPLE), "-o", str(out), "--model", model,
                               "--workers", "1", *QUICK], env=env, stderr=subprocess.DEVNULL) for model in ("a", "b")]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    listing = json.loads((out / ".prefix-audit-files.json").read_text())["files"]
    on_disk = {name: digest for name, digest in files_of(out).items() if digest != "folder"}
    assert on_disk == {**listing, ".prefix-audit-files.json": on_disk[".prefix-audit-files.json"]}  # no mix
    assert [p.name for p in (out / "scored" / "bfcl_v3").iterdir()] in (["a"], ["b"])
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


@pytest.mark.parametrize("name, make, expected", [
    ("r.json", lambda p: p.write_text('{"id": "x", "result": []}\n{"id": "y", "result": []}\n'), "bfcl"),
    ("t.json", lambda p: p.write_text(json.dumps({"info": {}, "tasks": [], "simulations": []})), "tau"),
    ("v1.json", lambda p: p.write_text(json.dumps([{"task_id": 0, "traj": [], "reward": 0}])), "tau"),
])
def test_formats_are_detected(tmp_path, name, make, expected):
    path = tmp_path / name
    make(path)
    assert registry.detect_format(path) == expected


def test_an_unknown_format_is_named(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a log any importer recognises"):
        registry.detect_format(path)
