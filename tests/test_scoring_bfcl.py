"""Scoring files end to end: Parquet schemas, quarantine, the canary, the CLI contract."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from prefix_audit.cli import main
from prefix_audit.core.calls import ToolCall, parse_call_string
from prefix_audit.core.records import dumps
from prefix_audit.replay.scoring import ACTION_SCHEMA, EPISODE_SCHEMA

RESOURCES = Path(__file__).resolve().parents[1] / "resources"

TASK = "multi_turn_base_0"


def _line(bfcl, calls_per_turn, rollout_id, text=None, task=TASK):
    """A rollout record for ``task`` with the given raw call strings per turn."""
    ref = json.loads(dumps(bfcl.reference_rollout(task)))
    turns = [[{"calls": [{"raw": c} for c in calls]}] if calls else [] for calls in calls_per_turn]
    if text is not None:
        turns[-1].append({"calls": [], "text": text})
    return json.dumps({**ref, "model": "m", "method": "x", "rollout_id": rollout_id, "turns": turns})


def test_canary_calls_are_schema_failures_and_never_run(bfcl, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    canary = tmp_path / "CANARY"
    hostile = [
        f"__import__('os').system('touch {canary}')",
        f"open('{canary}', 'w').write('x')",
        "cd(folder=(lambda: __import__('os').system('touch CANARY'))())",
        "cd(folder=[__import__('os').system('touch CANARY') for _ in 'a'])",
        "cd(folder=os.path)",
    ]
    lines = [_line(bfcl, [[h]], f"r{i}") for i, h in enumerate(hostile)]
    src = tmp_path / "rollouts.jsonl"
    src.write_text("\n".join(lines) + "\n")
    assert main(["score", str(src), "-o", str(tmp_path / "out"), "--resources", str(RESOURCES)]) == 0
    assert not canary.exists() and not (tmp_path / "CANARY").exists()
    episodes = pl.read_parquet(tmp_path / "out" / "episodes.parquet")
    assert episodes.height == len(hostile)
    assert episodes["FED"].to_list() == [1] * len(hostile)
    assert set(episodes["category"]) == {"schema"}
    assert set(episodes["failure_code"]) == {"unparseable_call"}


def test_scoring_writes_typed_parquet_and_quarantines_bad_lines(bfcl, tmp_path):
    good = [
        _line(bfcl, [list(t) for t in bfcl.entry(TASK).ground_truth], "gold"),
        _line(bfcl, [["cd(folder='document')", "cat(file_name='nope_zz.txt')"]], "early", text="Done."),
    ]
    bad = ["{oops", json.dumps({"dataset": "bfcl_v3"}),
           json.loads(good[0]) | {"dataset": "no_such_benchmark", "rollout_id": "u"},
           json.loads(good[0]) | {"task_id": "multi_turn_base_99999", "rollout_id": "v"},
           json.loads(good[0]) | {"rollout_id": "empty", "turns": [[]]}]
    src = tmp_path / "r.jsonl"
    src.write_text("\n".join([good[0], bad[0], bad[1], json.dumps(bad[2]), good[1], json.dumps(bad[3]),
                              json.dumps(bad[4]), good[0]]) + "\n")
    out = tmp_path / "out"
    assert main(["score", str(src), "-o", str(out), "--resources", str(RESOURCES)]) == 0
    assert pq.read_schema(out / "episodes.parquet").equals(EPISODE_SCHEMA)
    assert pq.read_schema(out / "actions.parquet").equals(ACTION_SCHEMA)
    episodes = pl.read_parquet(out / "episodes.parquet").sort("rollout_id")
    assert episodes["rollout_id"].to_list() == ["early", "empty", "gold"]
    early, empty, gold = episodes.to_dicts()
    assert gold["FED"] == gold["T"] + 1 and gold["Y"] == 1 and gold["category"] is None
    assert (early["T"], early["FED"], early["category"]) == (3, 2, "dependency")
    assert early["Y"] == 0
    # A model that answered nothing is one empty terminal action, never dropped (docs/definitions.md#actions).
    assert (empty["T"], empty["FED"], empty["Y"], empty["infra_error"]) == (1, 1, 0, None)
    quarantine = [json.loads(line) for line in (out / "quarantine.jsonl").read_text().splitlines()]
    assert sorted(q["line"] for q in quarantine) == [2, 3, 4, 6, 8]
    text = " ".join(q["reason"] for q in quarantine)
    for fragment in ["invalid JSON", "missing field", "unknown dataset", "unknown task_id",
                     "duplicate rollout_id 'gold'"]:
        assert fragment in text
    actions = pl.read_parquet(out / "actions.parquet").filter(pl.col("rollout_id") == "early").sort("j")
    assert actions["V"].to_list() == [True, False, None]
    assert actions["terminal"].to_list() == [False, False, True]


def test_cli_import_bfcl_and_plan(bfcl, tmp_path, capsys):
    result = tmp_path / "gpt-x" / "BFCL_v4_multi_turn_base_result.json"
    result.parent.mkdir()
    entry = bfcl.entry(TASK)
    tools = bfcl.tools_of(entry)

    def keywords(raw: str) -> str:  # BFCL's prompting decoder reads keyword arguments only
        call = parse_call_string(raw)
        return ToolCall(call.name, (), {**dict(zip(tools[call.name].positional_order, call.args)), **call.kwargs}).render()

    steps = [["[" + ", ".join(map(keywords, turn)) + "]", "All done."] if turn else ["Nothing to do."]
             for turn in entry.ground_truth]
    accounting = {"input_token_count": [[100, 120] if t else [90] for t in entry.ground_truth],
                  "output_token_count": [[10, 5] if t else [7] for t in entry.ground_truth],
                  "latency": [[0.5, 0.25] if t else [0.125] for t in entry.ground_truth]}
    result.write_text(json.dumps({"id": TASK, "result": steps, **accounting}) + "\n" + "not json\n"
                      + json.dumps({"id": "multi_turn_base_1", "result": "Error during inference: boom\nmore",
                                    "traceback": "..."}) + "\n")
    out = tmp_path / "rollouts.jsonl"
    assert main(["import", "bfcl", str(result), "-o", str(out), "--resources", str(RESOURCES)]) == 0
    record, failed = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["model"] == "gpt-x" and record["task_id"] == TASK and "infra_error" not in record
    # A failed model call is an entry all the same: no action, the error's first line kept.
    assert failed["infra_error"] == "Error during inference: boom" and failed["turns"] == []
    quarantine = out.with_name(out.name + ".quarantine.jsonl").read_text().splitlines()
    assert len(quarantine) == 1
    assert main(["score", str(out), "-o", str(tmp_path / "s"), "--resources", str(RESOURCES)]) == 0
    episodes = pl.read_parquet(tmp_path / "s" / "episodes.parquet")
    (ep,) = episodes.filter(pl.col("infra_error").is_null()).to_dicts()
    (infra,) = episodes.filter(pl.col("infra_error").is_not_null()).to_dicts()
    assert (infra["T"], infra["FED"], infra["Y"]) == (None, None, 0)
    assert infra["infra_error"] == "Error during inference: boom" and infra["category"] is None
    # gold calls plus one terminal no-tool action: the final turn had calls, so ending there is valid
    assert ep["T"] == sum(len(t) for t in entry.ground_truth) + 1 and ep["FED"] == ep["T"] + 1 and ep["Y"] == 1
    busy = sum(1 for t in entry.ground_truth if t)
    idle = len(entry.ground_truth) - busy
    assert ep["agent_calls"] == 2 * busy + idle
    assert ep["agent_tokens"] == busy * (100 + 120 + 10 + 5) + idle * (90 + 7)
    assert ep["agent_latency_s"] == busy * 0.75 + idle * 0.125
    assert ep["user_sim_tokens"] == 0

    assert main(["plan", "--epsilon", "0.05"]) == 0
    assert "N = 738" in capsys.readouterr().out


def test_score_rejects_missing_input(tmp_path):
    assert main(["score", str(tmp_path / "absent.jsonl"), "-o", str(tmp_path / "o")]) == 2


def test_cli_stats_and_tables_on_scored_episodes(bfcl, tmp_path):
    lines = [_line(bfcl, [list(t) for t in bfcl.entry(TASK).ground_truth], "gold"),
             _line(bfcl, [["rmdir(dir_name='ghost_dir_zz')"]], "bad", task="multi_turn_base_1")]
    src = tmp_path / "r.jsonl"
    src.write_text("\n".join(lines) + "\n")
    assert main(["score", str(src), "-o", str(tmp_path / "s"), "--resources", str(RESOURCES)]) == 0
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text("- {label: self, dataset: bfcl_v3, condition: {model: m, method: x}, "
                     "baseline: {model: m, method: x}}\n")
    assert main(["stats", str(tmp_path / "s" / "episodes.parquet"), "-o", str(tmp_path / "st"),
                 "--resamples", "500", "--seed", "3", "--pairs", str(pairs), "--paired-resamples", "1000"]) == 0
    assert main(["tables", str(tmp_path / "st"), "-o", str(tmp_path / "t")]) == 0
    stats = pl.read_parquet(tmp_path / "st" / "stats.parquet")
    ter = stats.filter((pl.col("metric") == "ter") & (pl.col("attribution") == "all"))["estimate"].item()
    assert ter == 0.5
    # both first failures are the agent's own: TER on FED_agent is the paper's
    assert stats.filter((pl.col("metric") == "ter") & (pl.col("attribution") == "agent"))["estimate"].item() == ter
    assert "| bfcl_v3 | m | x | 2 |" in (tmp_path / "t" / "table_G1.md").read_text()
    # a block paired with itself: every difference is exactly zero
    assert "| self | bfcl_v3 | m/x | m/x | 2 |" in (tmp_path / "t" / "table_F3.md").read_text()
    assert "+0.000 [+0.000, +0.000]" in (tmp_path / "t" / "table_F3.md").read_text()


def test_cli_output_does_not_depend_on_the_hash_seed(bfcl, tmp_path):
    """BFCL formats Python sets into some error messages; the console entry point pins the hash
    seed so the same input gives the same bytes in every process."""
    import os
    import subprocess
    import sys

    exe = Path(sys.executable).parent / "prefix-audit"
    if not exe.exists():
        pytest.skip("prefix-audit console script is not installed beside this interpreter")
    call = ("book_flight(access_token='abc123xyz', card_id='card1234', travel_date='2026-12-15', "
            "travel_from='RMS', travel_to='GFD', travel_class='luxury')")
    src = tmp_path / "r.jsonl"
    src.write_text(_line(bfcl, [[call]], "set-message", task="multi_turn_base_153") + "\n")
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"out{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([str(exe), "score", str(src), "-o", str(out), "--resources", str(RESOURCES)],
                              env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        outputs.append((out / "actions.parquet").read_bytes())
    assert "Must be one of {" in pl.read_parquet(tmp_path / "out1" / "actions.parquet")["result"][0]
    assert outputs[0] == outputs[1]
