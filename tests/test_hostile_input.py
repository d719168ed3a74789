"""Hostile input never costs other records, never shows a traceback, and gives the same bytes twice.

Regressions of the fuzz campaign of issue 16, then a property-based fuzz test over mutated rollout
files and BFCL result files: every record in is an episode or a quarantine record, and every
command exits with one located line at worst.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import polars as pl
import pytest
from conftest import RESOURCES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tau_results import GREETING, STOP, agent_says, results_document, simulation, tool_call, user_says
from test_toolsandbox_import import SCENARIOS
from toolsandbox_runs import write_run

from prefix_audit.benchmarks.bfcl import import_result_file
from prefix_audit.benchmarks.bfcl.decoders import python_call_text
from prefix_audit.benchmarks.bfcl.result_entry import read_step
from prefix_audit.cli import main
from prefix_audit.core.calls import MAX_CALL_CHARS, structured_call
from prefix_audit.core.records import BadLine, dumps

TASK = "multi_turn_base_1"
HUGE = "9" * 5000  # an integer JSON allows and Python's int() refuses (over 4,300 digits)


def _gold(bfcl) -> dict:
    return json.loads(dumps(bfcl.reference_rollout(TASK)))


def _record(base: dict, rollout_id: str, **changes) -> dict:
    return {**base, "model": "m", "method": "x", "rollout_id": rollout_id, **changes}


def _bfcl_entry(**fields) -> dict:
    """A function-calling BFCL result entry of TASK."""
    return {"id": TASK, "result": [[[{"ls": '{"a": true}'}], []], [[{"cd": '{"folder": "workspace"}'}]]], **fields}


def _usage(**fields) -> list[dict]:
    return [{"role": "executor", "input_tokens": 10, "output_tokens": 2, "latency_s": 0.5, **fields}]


def _score(tmp_path: Path, lines: list[str], name: str = "out") -> tuple[int, pl.DataFrame, list[dict]]:
    src = tmp_path / f"{name}.jsonl"
    src.write_text("\n".join(lines) + "\n")
    rc = main(["score", str(src), "-o", str(tmp_path / name), "--resources", str(RESOURCES)])
    episodes = pl.read_parquet(tmp_path / name / "episodes.parquet")
    quarantine = [json.loads(x) for x in (tmp_path / name / "quarantine.jsonl").read_text().splitlines()]
    return rc, episodes, quarantine


def test_bad_accounting_costs_the_accounting_not_the_entry(bfcl, tmp_path):
    base = _gold(bfcl)
    lines = [json.dumps(_record(base, "ok", usage=_usage()))]
    lines += [json.dumps(_record(base, f"u{i}", usage=_usage(**bad))) for i, bad in enumerate(
        [{"input_tokens": 10**30}, {"input_tokens": -1}, {"output_tokens": 2.5}, {"latency_s": "fast"}])]
    lines += ['{"dataset": "bfcl_v3", "task_id": "%s", "model": "m", "method": "x", "rollout_id": "inf", "turns": '
              '%s, "usage": [{"role": "executor", "input_tokens": 1e999, "output_tokens": 1, "latency_s": NaN}]}'
              % (TASK, json.dumps(base["turns"]))]
    rc, episodes, quarantine = _score(tmp_path, lines)
    assert rc == 0 and not quarantine and episodes.height == 6
    flagged = episodes.filter(pl.col("accounting_error").is_not_null())
    assert sorted(flagged["rollout_id"]) == ["inf", "u0", "u1", "u2", "u3"]
    assert flagged["agent_tokens"].null_count() == 5 and set(flagged["Y"]) == {1}
    assert episodes.filter(pl.col("rollout_id") == "ok")["agent_tokens"].item() == 12


def test_bad_accounting_in_imported_logs_costs_the_accounting_not_the_entry(tau, tau_seed, tmp_path):
    result = tmp_path / "m" / "BFCL_v4_multi_turn_base_result.json"
    result.parent.mkdir()
    result.write_text("\n".join(
        _text(_bfcl_entry(input_token_count=bad, output_token_count=[[1, 1], [1]], latency=[[0.1, 0.1], [0.1]]))
        for bad in ([[math.inf, 1], [1]], [[10**30, 1], [1]], [[math.nan, 1], [1]])) + "\n")
    items = list(import_result_file(result))
    assert [bool(i.rollout.accounting_error) for i in items] == [True] * 3
    assert all(i.rollout.usage == () and i.rollout.turns for i in items)

    from prefix_audit.benchmarks.tau.ingest.importer import import_results

    doc = json.loads(json.dumps(tau_seed))
    for sim, bad in zip(doc["simulations"], [{"prompt_tokens": math.inf}, {"completion_tokens": 10**30}]):
        sim["messages"][1] |= {"usage": bad}
        sim["messages"][2] |= {"usage": {"prompt_tokens": 1, "completion_tokens": 1}, "generation_time_seconds": math.nan}
    path = tmp_path / "results.json"
    path.write_text(_text(doc))
    items = list(import_results(path, tau.__getitem__))
    assert [type(i).__name__ for i in items] == ["Located", "Located"]
    assert all(i.rollout.accounting_error and i.rollout.usage == () for i in items)


def test_huge_integers_lists_for_ids_and_deep_nesting_cost_one_record(bfcl, tmp_path):
    base = _gold(bfcl)
    good = json.dumps(_record(base, "good"))
    hostile = [
        # an over-long integer (read as inf, as JSON's 1e999 is) in meta and in the accounting
        json.dumps(_record(base, "huge", meta={"seed": "HUGE"}, usage=_usage(input_tokens="HUGE"))),
        json.dumps(_record(base, "deep", meta={"x": json.loads("[" * 50 + "]" * 50)})),
    ]
    rc, episodes, quarantine = _score(tmp_path, [good, *[h.replace('"HUGE"', HUGE) for h in hostile]])
    assert rc == 0 and episodes.height == 3 and not quarantine
    huge = episodes.filter(pl.col("rollout_id") == "huge").row(0, named=True)
    assert huge["accounting_error"] and huge["Y"] == 1 and json.loads(huge["meta_json"])["seed"] == "Infinity"

    result = tmp_path / "m" / "BFCL_v4_multi_turn_base_result.json"
    result.parent.mkdir()
    nested = "[" * 500 + "1" + "]" * 500  # as text (encoding it takes a stack a test worker may not have)
    result.write_text("\n".join([
        json.dumps({"id": TASK, "result": [[[{"cd": '{"folder": ' + HUGE + "}"}]]]}),
        json.dumps({"id": TASK, "result": [[[]]], "input_token_count": None, "output_token_count": [1],
                    "latency": [1]}).replace("null", nested),
        json.dumps({"id": [TASK], "result": []}),
    ]) + "\n")
    items = list(import_result_file(result))
    assert len(items) == 3
    # The over-long integer makes that call's arguments unreadable: BFCL's decoder fails on the step,
    # an undecodable step (no action), kept.
    [step] = items[0].rollout.turns[0]
    assert not step.calls and items[0].rollout.recorded.undecoded_count == 1
    assert items[1].rollout.usage == () and "nested deeper" in items[1].rollout.accounting_error
    assert isinstance(items[2], BadLine) and "'id'" in items[2].reason


def test_over_long_lines_and_documents_are_refused_without_reading_them_whole(tmp_path, monkeypatch):
    from prefix_audit.core import decode

    monkeypatch.setattr(decode, "MAX_LINE_BYTES", 64)
    monkeypatch.setattr(decode, "MAX_DOCUMENT_BYTES", 64)
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"a": 1}\n' + b'{"b": "' + b"x" * 300 + b'"}\n{"c": 3}\n' + b"y" * 63 + b"\n")  # 64 bytes with its newline
    items = list(decode.iter_json_lines(log))
    assert [(type(i).__name__, i.line) for i in items] == [
        ("JsonLine", 1), ("BadLine", 2), ("JsonLine", 3), ("BadLine", 4)]
    assert "a line of 310 bytes, over the 64-byte limit" in items[1].reason
    assert "invalid JSON" in items[3].reason  # at the limit: read and decoded
    with pytest.raises(decode.DecodeError, match="over the 64-byte limit of one document"):
        decode.read_json_document(log)


def test_tau_ids_of_the_wrong_type_cost_one_simulation(tau, tmp_path):
    from prefix_audit.benchmarks.tau.ingest.importer import import_results

    reason = tau["tau_airline"].task("5").reason_for_call
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "a", "name": "get_user_details", "arguments": {"user_id": "mei_brown_7075"}}]}
    sims = [{"id": "s1", "task_id": "5", "termination_reason": "user_stop",
             "messages": [{"role": "user", "content": reason}, call,
                          {"role": "tool", "id": ["a"], "content": "{}"}, {"role": "user", "content": "###STOP###"}]},
            {"id": "s2", "task_id": "5", "termination_reason": "user_stop", "seed": "HUGE",
             "messages": [{"role": "user", "content": reason}, {"role": "assistant", "content": "Hello"},
                          {"role": "user", "content": "###STOP###"}]}]
    doc = {"info": {"environment_info": {"domain_name": "airline"}}, "tasks": [{"id": ["5"]}], "simulations": sims}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc).replace('"HUGE"', HUGE))  # a 5,000-digit seed costs nothing
    items = list(import_results(path, tau.__getitem__))
    assert [type(i).__name__ for i in items] == ["BadLine", "Located"]
    assert "unknown or already answered call id" in items[0].reason


def test_a_huge_integer_in_a_toolsandbox_run_costs_nothing(tmp_path):
    from prefix_audit.benchmarks.toolsandbox import import_runs

    run = write_run(tmp_path, SCENARIOS[:2])
    context = run / "trajectories" / SCENARIOS[0].name / "execution_context.json"
    assert '"latitude": null' in context.read_text()
    context.write_text(context.read_text().replace('"latitude": null', '"latitude": ' + HUGE, 1))
    assert [type(i).__name__ for i in import_runs(run)] == ["Located", "Located"]


def test_over_limit_calls_are_schema_failures_never_prose_and_structured_ones_too():
    long_call = f"[cd(folder='{'a' * MAX_CALL_CHARS}')]"
    (call,) = read_step(long_call, "step", python_call_text).step.calls
    assert not call.well_formed and "exceeds" in call.parse_error
    assert not structured_call("cd", {"folder": "a" * MAX_CALL_CHARS}).well_formed
    prose = read_step("hello " * 30_000, "step", python_call_text)
    assert not prose.step.calls and prose.step.text  # long prose stays prose


def test_scoring_hostile_input_twice_gives_the_same_bytes(bfcl, tmp_path):
    base = _gold(bfcl)
    raw = ["cd(folder=f(x))", "cd(folder=lambda: 1)", "cd(**{'a': 1})", "[cd(folder='x'), 5]", "x.y(z=1)"]
    lines = [json.dumps(_record(base, f"h{i}", turns=[[{"calls": [{"raw": r}]}]])) for i, r in enumerate(raw)]
    _score(tmp_path, lines, "a")
    _score(tmp_path, lines, "b")
    for name in ("episodes.parquet", "actions.parquet", "quarantine.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    details = pl.read_parquet(tmp_path / "a" / "actions.parquet")["failure_details"].to_list()
    assert not [d for ds in details for d in ds if "0x" in d]


@pytest.mark.parametrize("argv, message", [
    (["plan", "--epsilon", "1e-300"], "needs more than"),
    (["plan", "--epsilon", "inf"], "finite number"),
    (["plan", "--epsilon", "0.1", "--horizon", str(10**21)], "horizon bound K must be from 1 to"),
    (["plan", "--epsilon", "0.1", "--n", "0"], "--n must be at least 1"),
])
def test_plan_refuses_what_it_cannot_compute(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def _episodes_file(bfcl, tmp_path: Path) -> Path:
    _score(tmp_path, [json.dumps(_record(_gold(bfcl), "g"))], "ep")
    return tmp_path / "ep" / "episodes.parquet"


def test_commands_refuse_bad_input_in_one_line(bfcl, tmp_path, capsys, monkeypatch):
    episodes = _episodes_file(bfcl, tmp_path)
    assert main(["stats", str(episodes), "-o", str(tmp_path / "st"), "--resamples", "10"]) == 0
    stats = tmp_path / "st" / "stats.parquet"
    result = tmp_path / "m" / "BFCL_v4_multi_turn_base_result.json"
    result.parent.mkdir()
    result.write_text(_text(_bfcl_entry()) + "\n")
    capsys.readouterr()
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"PAR1 not really")
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text("- {label: x\n")
    taken = tmp_path / "a_file"
    taken.write_text("")
    cases = [
        (["stats", str(episodes), "-o", str(tmp_path / "s"), "--resamples", str(10**9)], "GiB"),
        (["stats", str(episodes), "-o", str(tmp_path / "s"), "--k-max", str(10**8)], "k_max must be from 1"),
        (["stats", str(junk), "-o", str(tmp_path / "s")], "not a readable Parquet file"),
        (["tables", str(junk), "-o", str(tmp_path / "t")], "not a readable Parquet file"),
        (["tables", str(episodes), "-o", str(tmp_path / "t")], "not a stats table"),
        (["stats", str(episodes), "-o", str(tmp_path / "p"), "--pairs", str(pairs)], "not valid YAML"),
    ]
    rollouts = tmp_path / "ep.jsonl"
    writers = [  # every command that writes, with -o naming a file, then a folder it may not write
        ["stats", str(episodes), "-o", "{out}", "--resamples", "10"], ["tables", str(stats), "-o", "{out}"],
        ["score", str(rollouts), "-o", "{out}"], ["import", "bfcl", str(result), "-o", "{out}/r.jsonl"],
        ["audit", "--no-figures", str(result), "-o", "{out}"]]
    # a command whose output is a folder says so before any work; `import` writes a file under it
    cases += [([a.format(out=taken) for a in argv], "File exists" if argv[0] == "import" else "a file is in the way")
              for argv in writers]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, (argv, err)
    assert not (tmp_path / "p" / "stats.parquet").exists()  # a bad pairs file leaves nothing behind

    def read_only(self, *args, **kwargs):  # root ignores file modes, so the refusal is simulated
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", read_only)
    for argv in writers:
        assert main([a.format(out=tmp_path / "locked") for a in argv]) == 2, argv
        err = capsys.readouterr().err
        assert "Permission denied" in err and len(err.strip().splitlines()) == 1, (argv, err)


# --- fuzzing -------------------------------------------------------------------------------------

_VALUES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
                    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside a decoded JSON document."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _replaced(value: object, path: tuple, new: object) -> object:
    """``value`` with the value at ``path`` replaced (unchanged where an earlier mutation removed it)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and head in value:
        return {**value, head: _replaced(value[head], rest, new)}
    if isinstance(value, list) and isinstance(head, int) and head < len(value):
        copy = list(value)
        copy[head] = _replaced(copy[head], rest, new)
        return copy
    return value


def _mutations(doc: dict):
    paths = _paths(doc)
    return st.lists(st.tuples(st.sampled_from(paths), _VALUES), min_size=1, max_size=3)


def _text(value: object) -> str:
    return json.dumps(value, allow_nan=True)


@pytest.fixture(scope="module")
def seeds(bfcl) -> dict[str, dict]:
    record = _record(_gold(bfcl), "r", usage=_usage(),
                     recorded={"y": 1, "verdict": "reward 1", "issues": [{"code": "task_mismatch", "detail": "x"}],
                               "undecoded_steps": [[0, 0, "looks like a call"]], "undecoded_count": 2})
    record["turns"][0][0]["results"] = [{"content": '{"current_directory_content": ["workspace"]}', "error": False}]
    step = [{"role": "assistant", "content": [{"ls": '{"a": true}'}]},
            {"role": "handler_log", "content": "Successfully decoded model response.",
             "model_response_decoded": ["ls(a=True)"]},
            {"role": "tool", "content": '{"current_directory_content": ["workspace"]}'}]
    log = [[{"role": "state_info", "class_name": "GorillaFileSystem", "content": {}}],
           {"begin_of_turn_query": [{"role": "user", "content": "?"}], "step_0": step, "step_1": []}]
    result = _bfcl_entry(input_token_count=[[5, 6], [7]], output_token_count=[[1, 1], [1]],
                         latency=[[0.1, 0.1], [0.1]], inference_log=log)
    return {"record": record, "result": result}


@pytest.fixture(scope="module")
def tau_seed(tau) -> dict:
    """A tau2 results document: one simulation that looks the user up, one cut short after a call."""
    user_id = {"user_id": "mei_brown_7075"}
    reason = tau["tau_airline"].task("5").reason_for_call
    return results_document(tau, [
        simulation("ok", "5", [GREETING, user_says(reason + " I am mei_brown_7075."),
                               *tool_call("a", "get_user_details", user_id, "{}"), agent_says("Found you."), STOP]),
        simulation("cut", "12", [GREETING, user_says("Hi"), *tool_call(
            "e", "get_reservation_details", {"reservation_id": "YAX4DR"}, "{}")], termination="max_steps")])


def _mutated(data, seed: object, what: str) -> str:
    """``seed`` with up to three values replaced, as JSON text, perhaps truncated."""
    doc = seed
    for path, new in data.draw(_mutations(seed), label=f"mutations of {what}"):
        doc = _replaced(doc, path, new)
    text = _text(doc)
    if data.draw(st.booleans(), label="truncate"):
        text = text[: data.draw(st.integers(min_value=0, max_value=len(text)))]
    return text


def _entries(text: str, key: str) -> int | None:
    """How many entries a mutated document still lists under ``key`` (None when it no longer does)."""
    try:
        listed = json.loads(text)[key]
    except (ValueError, TypeError, KeyError, IndexError):
        return None
    return len(listed) if isinstance(listed, list) else None


def _import(kind: str, source: Path, out: Path) -> tuple[int, int]:
    """(imported, quarantined) of ``prefix-audit import KIND SOURCE``, which must not crash."""
    assert main(["import", kind, str(source), "-o", str(out), "--resources", str(RESOURCES)]) in (0, 1)
    quarantine = out.with_name(out.name + ".quarantine.jsonl")
    return len(out.read_text().splitlines()), len(quarantine.read_text().splitlines())


def _log_file(data, tmp_path: Path, kind: str, seed: object) -> tuple[Path, int | None]:
    """A mutated log of ``kind`` on disk, and how many entries it holds (None: unknown, only a
    whole-log quarantine record is then allowed besides the entries)."""
    if kind == "result":  # BFCL result file: JSON Lines, three mutated entries and an intact one
        lines = [_mutated(data, seed, "an entry") for _ in range(3)] + [_text(seed)]
        source = tmp_path / "m" / "BFCL_v4_multi_turn_base_result.json"
        source.parent.mkdir(exist_ok=True)
        source.write_text("\n".join(lines) + "\n")
        return source, sum(bool(line.strip()) for line in lines)  # a blank line is no entry
    if kind == "tau":
        text = _mutated(data, seed, "results.json")
        source = tmp_path / "results.json"
        source.write_text(text)
        return source, _entries(text, "simulations")
    run = tmp_path / "ts"  # a ToolSandbox run folder: one of its JSON files mutated
    shutil.rmtree(run, ignore_errors=True)
    folder = write_run(run, SCENARIOS)
    files = sorted(folder.rglob("*.json"))
    target = data.draw(st.sampled_from(files), label="file")
    target.write_text(_mutated(data, json.loads(target.read_text()), target.name))
    return folder, _entries((folder / "result_summary.json").read_text(), "per_scenario_results")


def _fuzz(kind: str, max_examples: int):
    @settings(max_examples=max_examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(data=st.data())
    def run(request, tmp_path, capsys, data):
        seed = _seed(request, kind)
        if kind == "record":  # rollout records: three mutated lines and an intact one, scored directly
            src = tmp_path / "records.jsonl"
            src.write_text("\n".join([_mutated(data, seed, "a record") for _ in range(3)] + [_text(seed)]) + "\n")
        else:
            log, entries = _log_file(data, tmp_path, kind, seed)
            src = tmp_path / "rollouts.jsonl"
            imported, quarantined = _import(IMPORTERS[kind], log, src)
            # every entry in one place; a log unreadable as a whole is one located record
            whole_log = entries is None and (imported, quarantined) == (0, 1)
            assert imported + quarantined == entries or whole_log, (entries, imported, quarantined)
        out = tmp_path / "scored"
        shutil.rmtree(out, ignore_errors=True)
        n_in = len([line for line in src.read_text().splitlines() if line.strip()])
        capsys.readouterr()
        if main(["score", str(src), "-o", str(out), "--resources", str(RESOURCES)]) == 1:
            # nothing usable: nothing written, and the summary accounts for every record
            err = capsys.readouterr().err
            assert not out.exists()
            assert f"rollout records read: {n_in}; scored: 0 " in err and f"quarantined: {n_in}\n" in err, err
            return
        scored = pl.read_parquet(out / "episodes.parquet").height
        quarantined = len((out / "quarantine.jsonl").read_text().splitlines())
        assert scored + quarantined == n_in
        for value in pl.read_parquet(out / "episodes.parquet")["meta_json"]:
            json.loads(value)  # valid JSON (no NaN tokens)
        for column in ("agent_latency_s", "agent_wall_s"):
            values = pl.read_parquet(out / "episodes.parquet")[column].drop_nulls().to_list()
            assert all(math.isfinite(v) for v in values)

    return run


IMPORTERS = {"result": "bfcl", "tau": "tau", "toolsandbox": "toolsandbox"}


def _seed(request, kind: str) -> object:
    if kind == "tau":
        return request.getfixturevalue("tau_seed")
    if kind == "toolsandbox":
        return None  # the run folder is written afresh per example
    return request.getfixturevalue("seeds")[kind]


test_fuzz_rollout_records = _fuzz("record", 25)
test_fuzz_bfcl_result_files = _fuzz("result", 25)
test_fuzz_tau_results = _fuzz("tau", 15)
test_fuzz_toolsandbox_runs = _fuzz("toolsandbox", 15)
test_fuzz_rollout_records_more = pytest.mark.fuzz(_fuzz("record", 400))
test_fuzz_bfcl_result_files_more = pytest.mark.fuzz(_fuzz("result", 400))
test_fuzz_tau_results_more = pytest.mark.fuzz(_fuzz("tau", 200))
test_fuzz_toolsandbox_runs_more = pytest.mark.fuzz(_fuzz("toolsandbox", 200))


def test_outputs_of_a_command_are_replaced_together(tmp_path, monkeypatch):
    """A crash between the renames of one commit is finished by the next reader or writer; a
    crash before its commit point leaves the old set, and its staged files are cleaned."""
    import os

    from prefix_audit.core import io

    a, b = tmp_path / "episodes.parquet", tmp_path / "quarantine.jsonl"
    io.commit_files({a: b"old a", b: b"old b"})
    real_replace = os.replace
    calls = []

    def crash_on_second(src, dst):
        calls.append(dst)
        if len(calls) == 3:  # the journal's own rename, the first file, then the crash
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(io.os, "replace", crash_on_second)
    with pytest.raises(OSError, match="disk full"):
        io.commit_files({a: b"new a", b: b"new b"})
    monkeypatch.setattr(io.os, "replace", real_replace)
    assert (a.read_bytes(), b.read_bytes()) == (b"new a", b"old b")  # torn, until someone looks
    io.recover(tmp_path)
    assert (a.read_bytes(), b.read_bytes()) == (b"new a", b"new b")
    assert not io.journals(tmp_path)

    (tmp_path / f".{a.name}.{2**22 + 7}.staged").write_bytes(b"a write that never reached its commit point")
    (tmp_path / f".{a.name}.{2**22 + 7}.tmp").write_bytes(b"an atomic write of a process that died")
    io.commit_files({a: b"third a", b: b"third b"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.parquet", "quarantine.jsonl"]


def test_processes_committing_into_one_folder_at_once_each_land_their_own_files(tmp_path):
    """Snakemake runs jobs whose outputs share a folder at once (the chunks of a big block, the tables and
    the task-health table): each commit's journal and staged files are its own, so none is lost."""
    import subprocess
    import sys

    script = ("import sys\nfrom prefix_audit.core.io import commit_files\nfolder, name = sys.argv[1:]\n"
              "for i in range(300):\n"
              "    commit_files({f'{folder}/{name}.a': f'{i}'.encode(), f'{folder}/{name}.b': f'{i}'.encode()})\n")
    writers = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), name]) for name in ("one", "two", "three")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.{x}" for n in ("one", "two", "three")
                                                                for x in "ab")
    assert {p.read_text() for p in tmp_path.iterdir()} == {"299"}


def test_a_commit_across_folders_is_finished_by_a_reader_of_any_of_them(tmp_path, monkeypatch):
    import os

    from prefix_audit.core import io

    frame = pl.DataFrame({"x": [1, 2]})
    first, second = tmp_path / "fed" / "episodes.parquet", tmp_path / "stats" / "stats.parquet"
    real_replace = os.replace
    calls = []

    def crash_after_the_first_file(src, dst):
        calls.append(dst)
        if len(calls) == 3:  # the journal, the first file, then the crash
            raise OSError("killed")
        real_replace(src, dst)

    monkeypatch.setattr(io.os, "replace", crash_after_the_first_file)
    with pytest.raises(OSError, match="killed"):
        io.commit_files({first: io.frame_parquet_bytes(frame), second: io.frame_parquet_bytes(frame)}, root=tmp_path)
    monkeypatch.setattr(io.os, "replace", real_replace)
    assert first.is_file() and not second.is_file()
    assert io.read_parquet(second).equals(frame)  # the journal at the common root is found from below
    assert not io.journals(tmp_path)


def _two_methods(bfcl, tmp_path: Path) -> tuple[Path, Path]:
    """An episodes file with two blocks of one model, and a pairs file comparing them."""
    base = _gold(bfcl)
    lines = [json.dumps(_record(base, f"{method}{i}", method=method)) for method in ("x", "y") for i in range(2)]
    _score(tmp_path, lines, "two")
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text("- {label: y-x, dataset: bfcl_v3, condition: {model: m, method: y}, "
                     "baseline: {model: m, method: x}}\n")
    return tmp_path / "two" / "episodes.parquet", pairs


def test_stats_commits_its_set_and_drops_an_earlier_runs_paired_file(bfcl, tmp_path):
    from prefix_audit.core import io

    episodes, pairs = _two_methods(bfcl, tmp_path)
    out = tmp_path / "stats"
    common = ["stats", str(episodes), "-o", str(out), "--resamples", "50", "--paired-resamples", "50"]
    assert main([*common, "--pairs", str(pairs)]) == 0
    listed = [io.MANIFEST, "categories.parquet", "paired.parquet", "stats.parquet"]
    assert sorted(p.name for p in out.iterdir()) == listed
    (out / "notes.md").write_text("kept\n")
    assert main(common) == 0  # without pairs, tables must not read the earlier run's paired.parquet
    assert sorted(p.name for p in out.iterdir()) == [io.MANIFEST, "categories.parquet", "notes.md", "stats.parquet"]
    (out / io.MANIFEST).unlink()  # a folder without a listing (a workflow's): its paired.parquet still goes
    (out / "paired.parquet").write_bytes(b"an older run's")
    assert main(common) == 0
    assert sorted(p.name for p in out.iterdir()) == [io.MANIFEST, "categories.parquet", "notes.md", "stats.parquet"]


def test_a_failed_audit_leaves_the_previous_one_whole_and_a_new_one_replaces_it(bfcl, tmp_path, monkeypatch):
    from prefix_audit import audit
    from prefix_audit.core import io

    out = tmp_path / "audit"
    out.mkdir()
    (out / "notes.md").write_text("the user's own file\n")
    bfcl_log = tmp_path / "logs" / "BFCL_v4_multi_turn_base_result.json"
    bfcl_log.parent.mkdir()
    bfcl_log.write_text(json.dumps(_bfcl_entry()) + "\n")
    run = write_run(tmp_path / "runs", SCENARIOS[:2])

    def audit_of(*logs: Path) -> int:
        return main(["audit", "--no-figures", *map(str, logs), "-o", str(out), "--model", "m", "--resamples", "50",
                     "--resources", str(RESOURCES)])

    def snapshot() -> dict[str, bytes]:
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}

    assert audit_of(bfcl_log) == 0
    before = snapshot()
    assert "scored/bfcl_v3/m/imported/episodes.parquet" in before and io.MANIFEST in before

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(audit, "write_tables", disk_full)
    assert audit_of(run) == 2
    assert snapshot() == before  # nothing of the failed audit landed, and its staging folder is gone
    monkeypatch.undo()

    assert audit_of(run) == 0
    after = snapshot()
    assert not [name for name in after if "bfcl_v3" in name]  # the earlier audit's blocks went with it
    assert "scored/toolsandbox_recorded/m/imported/episodes.parquet" in after
    assert after["notes.md"] == before["notes.md"]
    manifest = json.loads(after[io.MANIFEST])["files"]
    assert sorted(manifest) == sorted(name for name in after if name not in (io.MANIFEST, "notes.md"))


def test_every_command_gives_the_same_bytes_twice(bfcl, tau_seed, tmp_path, capsys):
    """Each command run twice on the same input in the same place writes the same bytes and prints
    the same lines."""
    logs = tmp_path / "logs"
    bfcl_log = logs / "m" / "BFCL_v4_multi_turn_base_result.json"
    bfcl_log.parent.mkdir(parents=True)
    hostile = {"id": "multi_turn_base_2", "result": [[["cd(folder=f(x))", "<script>", {"cd": "{bad"}]]]}
    bfcl_log.write_text(json.dumps(_bfcl_entry()) + "\n" + json.dumps(hostile) + "\n{truncated\n")
    tau_log = logs / "results.json"
    tau_log.write_text(json.dumps(tau_seed))
    run = write_run(logs / "runs", SCENARIOS)
    episodes, pairs = _two_methods(bfcl, tmp_path)
    work = tmp_path / "work"
    opts = ["--resources", str(RESOURCES)]
    commands = [
        ["import", "bfcl", str(bfcl_log), "-o", str(work / "bfcl.jsonl"), *opts],
        ["import", "tau", str(tau_log), "-o", str(work / "tau.jsonl"), *opts],
        ["import", "toolsandbox", str(run), "-o", str(work / "toolsandbox.jsonl"), *opts],
        ["score", str(work / "bfcl.jsonl"), "-o", str(work / "scored"), *opts],
        ["stats", str(episodes), "-o", str(work / "stats"), "--resamples", "100", "--paired-resamples", "100",
         "--pairs", str(pairs)],
        ["tables", str(work / "stats"), "-o", str(work / "tables")],
        ["audit", "--no-figures", str(bfcl_log), str(tau_log), str(run), "-o", str(work / "audit"), "--resamples", "100", *opts],
        ["progress", str(work / "audit")],
        ["plan", "--epsilon", "0.05", "--delta", "0.05"],
    ]

    def everything() -> tuple[dict[str, bytes], list[str]]:
        shutil.rmtree(work, ignore_errors=True)
        printed = []
        for argv in commands:
            assert main(argv) in (0, 1), argv
            printed.append(capsys.readouterr().out)
        files = {p.relative_to(work).as_posix(): p.read_bytes() for p in sorted(work.rglob("*")) if p.is_file()}
        return files, printed

    first, second = everything(), everything()
    assert sorted(first[0]) == sorted(second[0])
    assert [name for name in first[0] if first[0][name] != second[0][name]] == []
    assert first[1] == second[1]
    assert len(first[0]) > 40  # every command wrote what it should
