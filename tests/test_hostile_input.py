"""Hostile input never costs other records, never shows a traceback, and gives the same bytes twice.

Regressions of the fuzz campaign of issue 16, then a property-based fuzz test over mutated rollout
files and BFCL result files: every record in is an episode or a quarantine record, and every
command exits with one located line at worst.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from conftest import RESOURCES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefix_audit.benchmarks.bfcl import import_result_file
from prefix_audit.calls import MAX_CALL_CHARS, decode_call_list, structured_call
from prefix_audit.cli import main
from prefix_audit.records import BadLine, dumps

TASK = "multi_turn_base_1"
HUGE = "9" * 5000  # an integer JSON allows and Python's int() refuses (over 4,300 digits)


def _gold(bfcl) -> dict:
    return json.loads(dumps(bfcl.reference_rollout(TASK)))


def _record(base: dict, rollout_id: str, **changes) -> dict:
    return {**base, "model": "m", "method": "x", "rollout_id": rollout_id, **changes}


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


def test_huge_integers_lists_for_ids_and_deep_nesting_cost_one_record(bfcl, tmp_path):
    base = _gold(bfcl)
    good = json.dumps(_record(base, "good"))
    hostile = [
        good[:-1] + f', "extra": {HUGE}}}',  # an over-long integer in an extra field: the line is not JSON
        json.dumps(_record(base, "deep", meta={"x": json.loads("[" * 50 + "]" * 50)})),
    ]
    rc, episodes, quarantine = _score(tmp_path, [good, *hostile])
    assert rc == 0 and episodes.height + len(quarantine) == 3
    assert [q["line"] for q in quarantine] == [2] and "invalid JSON" in quarantine[0]["reason"]

    result = tmp_path / "m" / "BFCL_v4_multi_turn_base_result.json"
    result.parent.mkdir()
    nested: object = [1]
    for _ in range(950):
        nested = [nested]
    result.write_text("\n".join([
        json.dumps({"id": TASK, "result": [[[{"cd": '{"folder": ' + HUGE + "}"}]]]}),
        json.dumps({"id": TASK, "result": [[[]]], "input_token_count": nested, "output_token_count": [1],
                    "latency": [1]}),
        json.dumps({"id": [TASK], "result": []}),
    ]) + "\n")
    items = list(import_result_file(result))
    assert len(items) == 3
    # The over-long integer makes that call's arguments unreadable: a schema failure, kept.
    assert items[0].rollout.turns[0][0].calls[0].parse_error
    assert items[1].rollout.usage == () and "nested deeper" in items[1].rollout.accounting_error
    assert isinstance(items[2], BadLine) and "'id'" in items[2].reason


def test_tau_ids_of_the_wrong_type_cost_one_simulation(tau, tmp_path):
    from prefix_audit.benchmarks.tau.importer import import_results

    reason = tau["tau_airline"].task("5").reason_for_call
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "a", "name": "get_user_details", "arguments": {"user_id": "mei_brown_7075"}}]}
    sims = [{"id": "s1", "task_id": "5", "termination_reason": "user_stop",
             "messages": [{"role": "user", "content": reason}, call,
                          {"role": "tool", "id": ["a"], "content": "{}"}, {"role": "user", "content": "###STOP###"}]},
            {"id": "s2", "task_id": "5", "termination_reason": "user_stop", "seed": int(HUGE[:50]),
             "messages": [{"role": "user", "content": reason}, {"role": "assistant", "content": "Hello"},
                          {"role": "user", "content": "###STOP###"}]}]
    doc = {"info": {"environment_info": {"domain_name": "airline"}}, "tasks": [{"id": ["5"]}], "simulations": sims}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    items = list(import_results(path, tau.__getitem__))
    assert [type(i).__name__ for i in items] == ["BadLine", "Located"]
    assert "unknown or already answered call id" in items[0].reason


def test_over_limit_calls_are_schema_failures_never_prose_and_structured_ones_too():
    long_call = f"[cd(folder='{'a' * MAX_CALL_CHARS}')]"
    (call,) = decode_call_list(long_call)
    assert not call.well_formed and "exceeds" in call.parse_error
    assert not structured_call("cd", {"folder": "a" * MAX_CALL_CHARS}).well_formed
    assert decode_call_list("hello " * 30_000) is None  # long prose stays prose


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


def test_stats_and_tables_refuse_bad_input_in_one_line(bfcl, tmp_path, capsys):
    episodes = _episodes_file(bfcl, tmp_path)
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
        (["stats", str(episodes), "-o", str(taken), "--resamples", "10"], "File exists"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (argv, err)
    assert not (tmp_path / "p" / "stats.parquet").exists()  # a bad pairs file leaves nothing behind


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
    record = _record(_gold(bfcl), "r", usage=_usage())
    result = {"id": TASK, "result": [[[{"ls": '{"a": true}'}], []], [[{"cd": '{"folder": "workspace"}'}]]],
              "input_token_count": [[5, 6], [7]], "output_token_count": [[1, 1], [1]], "latency": [[0.1, 0.1], [0.1]]}
    return {"record": record, "result": result}


def _fuzz(kind: str, max_examples: int):
    @settings(max_examples=max_examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(data=st.data())
    def run(bfcl, seeds, tmp_path, data):
        seed = seeds[kind]
        lines = []
        for _ in range(3):
            doc = seed
            for path, new in data.draw(_mutations(seed)):
                doc = _replaced(doc, path, new)
            text = _text(doc)
            if data.draw(st.booleans()):
                text = text[: data.draw(st.integers(min_value=0, max_value=len(text)))]
            lines.append(text)
        lines.append(_text(seed))
        src = tmp_path / f"{kind}.jsonl"
        if kind == "result":
            src = tmp_path / "m" / "BFCL_v4_multi_turn_base_result.json"
            src.parent.mkdir(exist_ok=True)
            src.write_text("\n".join(lines) + "\n")
            rollouts = tmp_path / "rollouts.jsonl"
            assert main(["import", "bfcl", str(src), "-o", str(rollouts), "--resources", str(RESOURCES)]) in (0, 1)
            imported = len(rollouts.read_text().splitlines())
            quarantined = len((tmp_path / "rollouts.jsonl.quarantine.jsonl").read_text().splitlines())
            assert imported + quarantined == len([x for x in lines if x.strip()])  # every entry in one place
            src = rollouts
        else:
            src.write_text("\n".join(lines) + "\n")
        out = tmp_path / "scored"
        n_in = len([line for line in src.read_text().splitlines() if line.strip()])
        assert main(["score", str(src), "-o", str(out), "--resources", str(RESOURCES)]) in (0, 1)
        scored = pl.read_parquet(out / "episodes.parquet").height
        quarantined = len((out / "quarantine.jsonl").read_text().splitlines())
        assert scored + quarantined == n_in
        for value in pl.read_parquet(out / "episodes.parquet")["meta_json"]:
            json.loads(value)  # valid JSON (no NaN tokens)
        for column in ("agent_latency_s", "agent_wall_s"):
            values = pl.read_parquet(out / "episodes.parquet")[column].drop_nulls().to_list()
            assert all(math.isfinite(v) for v in values)

    return run


test_fuzz_rollout_records = _fuzz("record", 25)
test_fuzz_bfcl_result_files = _fuzz("result", 25)
test_fuzz_rollout_records_more = pytest.mark.fuzz(_fuzz("record", 400))
test_fuzz_bfcl_result_files_more = pytest.mark.fuzz(_fuzz("result", 400))


def test_outputs_of_a_command_are_replaced_together(tmp_path, monkeypatch):
    """A crash between the renames of one commit is finished by the next reader or writer; a
    crash before its commit point leaves the old set, and its staged files are cleaned."""
    import os

    from prefix_audit import io

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
    assert not (tmp_path / io.JOURNAL).exists()

    (tmp_path / f".{a.name}.staged").write_bytes(b"a write that never reached its commit point")
    (tmp_path / f".{a.name}.{2**22 + 7}.tmp").write_bytes(b"an atomic write of a process that died")
    io.commit_files({a: b"third a", b: b"third b"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.parquet", "quarantine.jsonl"]
