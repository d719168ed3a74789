"""Inspect AI logs (``prefix-audit import inspect``): real logs of inspect_evals' own ``tau2_airline`` and
``bfcl`` tasks, written in the session by ``inspect_ai.eval`` with Inspect's ``mockllm`` model and
scripted outputs (tests/inspect_tau2_logs.py, tests/inspect_bfcl_logs.py), audited with no flags."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import polars as pl
import pytest
from conftest import RESOURCES

from prefix_audit.cli import main
from prefix_audit.core.framework_samples import REFUSED, chat_messages, recorded_verdict
from prefix_audit.ingest.inspect_logs import is_inspect_log
from prefix_audit.replay import registry

# --- the plain reading of Inspect's messages (no inspect-ai needed) ---------------------------------


def test_chat_messages_read_inspect_shapes():
    messages = chat_messages([
        {"role": "system", "content": "policy"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "reasoning", "reasoning": "x"}],
         "source": "input"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "function": "get_user_details", "arguments": {"user_id": "u1"}},
            {"id": "b", "function": "cancel", "arguments": {}, "parse_error": "Expecting value: line 1"}]},
        {"role": "tool", "tool_call_id": "a", "content": "{\"name\": \"x\"}"},
        {"role": "tool", "tool_call_id": "b", "content": "", "error": {"type": "parsing", "message": "bad JSON"}},
    ], "messages")
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert messages[1].text == "hi" and messages[1].source == "input"
    good, bad = messages[2].calls
    assert good.well_formed and good.kwargs == {"user_id": "u1"} and good.call_id == "a"
    assert not bad.well_formed and "could not parse" in bad.parse_error and bad.name == "cancel"  # a schema failure
    assert messages[3].ran and messages[3].error is None
    assert not messages[4].ran and messages[4].error == "bad JSON" and "parsing" in REFUSED


@pytest.mark.parametrize("values, where", [
    ("not a list", "messages must be a list"),
    ([{"role": "robot"}], "messages[0]: a message must be an object with a role"),
    ([{"role": "assistant", "tool_calls": [{"function": "f", "arguments": {}}]}], "without an id"),
    ([{"role": "tool", "content": "x"}], "messages[0]: a tool message without the id"),
    ([{"role": "tool", "tool_call_id": "a", "error": "boom"}], "a tool error must be an object"),
])
def test_chat_messages_refuse_other_shapes_with_their_place(values, where):
    with pytest.raises(ValueError, match=where.replace("[", r"\[").replace("]", r"\]")):
        chat_messages(values, "messages")


def test_scorer_values_as_verdicts():
    assert [recorded_verdict({"s": {"value": v}}, "s").y for v in ("C", "I", 1, 0, 1.0, 0.0)] == [1, 0, 1, 0, 1, 0]
    assert recorded_verdict({"s": {"value": 0.5}}, "s").y is None  # partial credit is no pass/fail verdict
    assert "not a pass/fail value" in recorded_verdict({"s": {"value": "P"}}, "s").verdict
    assert "no s score recorded (scores: other)" in recorded_verdict({"other": {"value": "C"}}, "s").verdict


def test_benchmarks_register_the_inspect_tasks_they_read():
    assert sorted(registry.inspect_tasks()) == ["bfcl", "tau2_airline", "tau2_retail", "tau2_telecom"]
    assert "inspect" in registry.importers()


def test_detection_reads_only_the_head(tmp_path):
    log = tmp_path / "run.json"
    log.write_text('{\n  "version": 2,\n  "status": "success",\n  "eval": {"task": "x"}, "samples": [' + " " * 10_000)
    assert is_inspect_log(log)  # not valid JSON as a whole: only its opening is read
    assert registry.detect_format(log) == "inspect"  # the τ and BFCL detectors do not claim it
    other = tmp_path / "results.json"
    other.write_text(json.dumps({"timestamp": "t", "info": {}, "tasks": [], "simulations": []}))
    assert not is_inspect_log(other) and registry.detect_format(other) == "tau"
    archive = tmp_path / "run.eval"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("header.json", "{}")
    assert is_inspect_log(archive) and not is_inspect_log(tmp_path / "missing.eval")


def test_a_missing_extra_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    log = tmp_path / "run.eval"
    with zipfile.ZipFile(log, "w") as zf:
        zf.writestr("header.json", "{}")
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if inspect-ai were not installed
    assert main(["import", "inspect", str(log), "-o", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["prefix-audit import: reading Inspect AI logs needs the optional extra: pip install "
                   "'prefix-audit[inspect]'"]


def test_a_tau2_sample_without_its_store_is_refused_with_the_key(tau):
    from prefix_audit.benchmarks.tau.ingest.inspect_samples import read_sample
    from prefix_audit.core.framework_samples import FrameworkSample

    definition = json.loads(tau["tau_airline"].domain.files.tasks.read_text())[0]
    sample = FrameworkSample("log.eval", "tau2_airline", "m", definition["id"], 1, 1,
                             {"instance": "AirlineAgent", "task": definition}, {}, (), {})
    request = registry.ImportRequest(Path("log.eval"), None, "imported", tau.__getitem__)
    with pytest.raises(ValueError, match="store has no 'StoredAgentState:AirlineAgent:messages'"):
        read_sample("airline")(sample, request)
    with pytest.raises(ValueError, match="no task and instance"):
        read_sample("airline")(FrameworkSample("log.eval", "tau2_airline", "m", "0", 1, 1, {}, {}, (), {}), request)


# --- real logs of inspect_evals' tasks -------------------------------------------------------------

BFCL_EPOCHS = 2


def _audit(logs, out):
    assert main(["audit", "--no-figures", *map(str, logs), "-o", str(out), "--resamples", "200", "--resources", str(RESOURCES)]) == 0
    return pl.read_parquet(out / "fed" / "episodes.parquet")


def _samples(log: Path) -> list[tuple[str, int, object]]:
    from inspect_ai.log import read_eval_log_sample_summaries

    return [(str(s.id), s.epoch, next(iter((s.scores or {}).values())).value if s.scores else None)
            for s in read_eval_log_sample_summaries(str(log))]


@pytest.mark.slow
def test_tau2_samples_audit_with_no_flags(inspect_logs, tmp_path):
    import inspect_tau2_logs

    scenarios = inspect_tau2_logs.DEFAULT_SCENARIOS["airline"]
    task_of = {scenario: task for task, scenario in scenarios.items()}
    log = inspect_logs["tau2_eval"]
    episodes = _audit([log], tmp_path / "audit")
    recorded = _samples(log)
    assert episodes.height == len(recorded) == 2 * len(scenarios)  # every sample × epoch an episode
    assert sorted(zip(episodes["task_id"], episodes["trial"] + 1)) == sorted((i, e) for i, e, _ in recorded)
    assert not (tmp_path / "audit" / "rollouts" / "imported" / "quarantine.jsonl").read_text()
    scored = episodes.filter(pl.col("infra_error").is_null())
    by_key = {(i, e): v for i, e, v in recorded}
    # Y is the Inspect score on every episode that has one.
    assert [by_key[(t, n + 1)] for t, n in zip(scored["task_id"], scored["trial"])] == \
        ["C" if y == 1 else "I" for y in scored["Y"]]
    assert (scored["Y"] == scored["recorded_y"]).all()
    assert scored.filter(pl.col("task_id") == task_of["epoch_split"]).sort("trial")["Y"].to_list() == [1, 0]
    infra = episodes.filter(pl.col("infra_error").is_not_null())
    assert infra["task_id"].unique().to_list() == [task_of["agent_error"]] and infra["T"].is_null().all()
    # An unknown tool and malformed arguments are the agent's schema failures, and Inspect never ran
    # them: nor does replay. The ToolError a tool raised is an error result, worded alike by replay.
    mixed = episodes.filter(pl.col("task_id") == task_of["unknown_tool+rejected+malformed+parallel"]).row(0, named=True)
    assert mixed["FED"] == 1 and mixed["category"] == "schema" and "not_executed" in mixed["log_issue"]
    assert mixed["replay_agreement"] == 1.0 and mixed["Y"] == 1
    assert (scored["replay_agreement"].drop_nulls() == 1.0).all()
    meta = json.loads(mixed["meta_json"])
    assert meta["reward_rule"] == "inspect_evals" and meta["embedded_task"]["definition"]["id"] == mixed["task_id"]
    # pass^k over the epochs, in the statistics.
    stats = pl.read_parquet(tmp_path / "audit" / "stats" / "stats.parquet")
    assert stats.filter((pl.col("metric") == "pass_k") & (pl.col("k") == 2)).height >= 1


@pytest.mark.slow
def test_bfcl_samples_audit_with_no_flags(inspect_logs, tmp_path):
    import inspect_bfcl_logs

    for fmt in ("bfcl_eval", "bfcl_json"):
        log = inspect_logs[fmt]
        episodes = _audit([log], tmp_path / fmt)
        recorded = _samples(log)
        assert episodes.height == len(recorded) == BFCL_EPOCHS * len(inspect_bfcl_logs.DEFAULT_SCENARIOS)
        by_key = {(i, e): v for i, e, v in recorded}
        assert [by_key[(t, n + 1)] for t, n in zip(episodes["task_id"], episodes["trial"])] == episodes["Y"].to_list()
        assert (episodes["Y"] == episodes["recorded_y"]).all()
        assert (episodes["replay_agreement"].drop_nulls() == 1.0).all()
        scenario = {i: inspect_bfcl_logs.DEFAULT_SCENARIOS[i] for i in episodes["task_id"]}
        unknown = episodes.filter(pl.col("task_id") == next(i for i, s in scenario.items() if s == "unknown_tool"))
        assert (unknown["FED"] == 1).all() and unknown["log_issue"].str.contains("not_executed").all()


@pytest.mark.slow
def test_tau2_json_log_streams_sample_by_sample(inspect_logs, tmp_path):
    episodes = _audit([inspect_logs["tau2_json"]], tmp_path / "audit")
    assert episodes.height == 1 and episodes["Y"].to_list() == episodes["recorded_y"].to_list() == [1]


@pytest.mark.slow
def test_the_model_is_the_one_the_log_records_and_said_so(inspect_logs):
    from inspect_ai.log import read_eval_log

    from prefix_audit.core.records import Located
    from prefix_audit.ingest.imports import ImportReport, read_logs

    log = inspect_logs["tau2_json"]
    model = read_eval_log(str(log), header_only=True).eval.model
    for given in (None, "m"):
        report = ImportReport()
        items = [i for i in read_logs([log], registry.resolver(RESOURCES, {}), model=given, report=report)
                 if isinstance(i, Located)]
        said = [line for line in report.detail_lines() if ": model name " in line]
        assert said == ([] if given else [f"{items[0].rollout.dataset}/{model}/imported: model name {model!r} is the "
                                          f"model in eval.model of {log.name} ({log.parent}); give --model to name it"])


@pytest.mark.slow
def test_a_compressed_json_log_reads_as_the_plain_one(inspect_logs, tmp_path):
    """inspect-ai's reader opens logs by name: a compressed .json is unpacked for it, its records
    still naming the file given."""
    import gzip

    import zstandard

    plain = inspect_logs["tau2_json"]
    packed = [tmp_path / f"{plain.name}.gz", tmp_path / f"{plain.name}.zst"]
    packed[0].write_bytes(gzip.compress(plain.read_bytes()))
    packed[1].write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    records = {}
    for log in (plain, *packed):
        assert is_inspect_log(log)
        rollouts = tmp_path / f"{log.name}.jsonl"
        assert main(["import", "inspect", str(log), "-o", str(rollouts), "--resources", str(RESOURCES)]) == 0
        records[log] = rollouts.read_text()
        assert str(log) in records[log]
    assert records[plain] and all(records[p].replace(str(p), str(plain)) == records[plain] for p in packed)


@pytest.mark.slow
def test_bad_logs_cost_their_samples_only(inspect_logs, tmp_path):
    """A sample without metadata and one without its store are quarantined with their reasons; a truncated
    .eval is one line saying it is cut off; a .json cut short keeps the samples before the cut; a log of
    another task is one line."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    damaged_log = read_eval_log(str(inspect_logs["bfcl_eval"]))
    damaged_log.samples[0].metadata = {}
    damaged = tmp_path / "damaged.eval"
    write_eval_log(damaged_log, str(damaged))
    truncated = tmp_path / "truncated.eval"
    truncated.write_bytes(inspect_logs["bfcl_eval"].read_bytes()[:5000])
    cut = tmp_path / "cut.json"
    whole = inspect_logs["bfcl_json"].read_bytes()
    cut.write_bytes(whole[: len(whole) * 6 // 10])
    out = ModelOutput.from_content("mockllm/model", "hi")
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    [other] = eval(Task(dataset=[Sample(input="hi")], name="other_task"), model=get_model("mockllm/model",
                   custom_outputs=[out]), log_dir=str(tmp_path / "other"), display="none")

    reasons, good = {}, []
    for log in (damaged, truncated, cut, Path(other.location)):
        rollouts = tmp_path / f"{log.name}.jsonl"
        main(["import", "inspect", str(log), "-o", str(rollouts), "--resources", str(RESOURCES)])  # 1: nothing usable
        for line in Path(f"{rollouts}.quarantine.jsonl").read_text().splitlines():
            bad = json.loads(line)
            reasons[(Path(bad["path"]).name, bad["line"])] = bad["reason"]
        good += [json.loads(line) for line in rollouts.read_text().splitlines()] if rollouts.exists() else []
    assert "metadata has no scorer and no turns" in reasons[("damaged.eval", 1)]
    assert "truncated.eval is cut off: it ends at byte 5,000 before the end of its zip archive" in \
        reasons[("truncated.eval", 0)]
    assert "of task 'other_task'" in reasons[(Path(other.location).name, 0)]
    cut_missing = [r for (name, _), r in reasons.items() if name == "cut.json"]
    assert cut_missing and all("stop reading" in r for r in cut_missing)
    total = len(damaged_log.samples)
    assert sum(Path(g["meta"]["inspect_log"]).name == "damaged.eval" for g in good) == total - 1
    assert sum(Path(g["meta"]["inspect_log"]).name == "cut.json" for g in good) == total - len(cut_missing)
