"""Rollout records: round trip, terminal action, located errors for every kind of bad line."""

import json

from prefix_audit.core.calls import ToolCall
from prefix_audit.core.records import BadLine, Located, Rollout, Step, Usage, actions_of, dumps, read_rollouts


def _rollout(**kw):
    base = dict(dataset="bfcl_v3", task_id="multi_turn_base_0", model="m", method="react", rollout_id="r1",
                turns=((Step((ToolCall("cd", (), {"folder": "a"}, raw="cd(folder='a')"),)),),
                       (Step((), "done"),)))
    base.update(kw)
    return Rollout(**base)


def test_round_trip_and_terminal_action(tmp_path):
    path = tmp_path / "r.jsonl"
    usage = (Usage("planner", 10, 3, 0.5), Usage("executor", 20, 4, 0.25, reasoning_tokens=2))
    path.write_text(dumps(_rollout(usage=usage)) + "\n")
    (item,) = list(read_rollouts(path))
    assert isinstance(item, Located) and item.line == 1
    acts = actions_of(item.rollout)
    assert [a.terminal for a in acts] == [False, True]
    assert acts[0].call.kwargs == {"folder": "a"}
    assert item.rollout.final_text == "done"
    assert item.rollout.usage == usage


def test_no_terminal_action_when_last_step_has_calls():
    r = _rollout(turns=((Step((ToolCall("ls", raw="ls()"),), "thinking"),),))
    assert r.final_text is None
    assert len(actions_of(r)) == 1


def test_bad_lines_are_located_and_the_rest_is_read(tmp_path):
    good = dumps(_rollout())
    lines = [
        good,
        "{not json",
        json.dumps({"dataset": "bfcl_v3"}),
        json.dumps({**json.loads(good), "turns": "nope"}),
        json.dumps({**json.loads(good), "turns": [[{"calls": [42]}]]}),
        json.dumps({**json.loads(good), "schema_version": 99}),
        json.dumps({**json.loads(good), "usage": [{"role": "oracle", "input_tokens": 1, "output_tokens": 1,
                                                   "latency_s": 0.1}]}),
        json.dumps({**json.loads(good), "usage": [{"role": "executor", "input_tokens": -1, "output_tokens": 1,
                                                   "latency_s": 0.1}]}),
    ]
    path = tmp_path / "r.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe{}\n")
    items = list(read_rollouts(path))
    assert isinstance(items[0], Located)
    bad = [i for i in items if isinstance(i, BadLine)]
    assert [b.line for b in bad] == [2, 3, 4, 5, 6, 9]
    reasons = " | ".join(b.reason for b in bad)
    for fragment in ["invalid JSON", "missing field", "'turns' must be a list", "calls[0]", "schema_version",
                     "not UTF-8"]:
        assert fragment in reasons
    # Bad accounting costs the accounting, not the entry: no usage, and the reason kept.
    kept = {i.line: i.rollout for i in items if isinstance(i, Located)}
    assert kept[7].usage == () and "usage[0].role" in kept[7].accounting_error
    assert kept[8].usage == () and "usage[0].input_tokens" in kept[8].accounting_error


def test_trial_round_trips_defaults_to_zero_and_bad_trials_are_located(tmp_path):
    good = json.loads(dumps(_rollout(trial=3)))
    assert good["trial"] == 3
    old = {k: v for k, v in good.items() if k != "trial"}  # records written before trials existed
    lines = [json.dumps(good), json.dumps(old),
             *(json.dumps({**good, "trial": bad}) for bad in (-1, True, "1", 1.5, 2**40))]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    items = list(read_rollouts(path))
    assert [i.rollout.trial for i in items[:2]] == [3, 0]
    assert [(b.line, "field 'trial'" in b.reason) for b in items[2:]] == [(n, True) for n in range(3, 8)]
    assert "trial" not in items[0].rollout.extra


def test_an_unrecorded_latency_round_trips_as_null_and_a_missing_one_is_refused():
    from prefix_audit.core.records import rollout_from_json

    record = {"dataset": "d", "task_id": "t", "model": "m", "method": "x", "rollout_id": "r", "turns": [],
              "usage": [{"role": "executor", "input_tokens": 3, "output_tokens": 1, "latency_s": None}]}
    rollout = rollout_from_json(record)
    assert rollout.usage[0].latency_s is None and rollout.usage[0].total_s is None
    assert rollout_from_json(json.loads(dumps(rollout))).usage == rollout.usage
    del record["usage"][0]["latency_s"]
    missing = rollout_from_json(record)
    assert missing.usage == () and "latency_s must be a finite non-negative number" in missing.accounting_error
