"""``prefix-audit audit``: logs of several formats → the results layout, every entry accounted for."""

from __future__ import annotations

import json
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
    assert main(["audit", str(bfcl_log), str(run), str(stray), "-o", str(out), "--model", "m",
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
    assert main(["audit", str(stray), "-o", str(tmp_path / "out")]) == 2
    assert "no entry of 1 log(s) could be imported" in capsys.readouterr().err


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
