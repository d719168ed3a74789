"""The log-reading kit every importer reads with (prefix_audit.core.reading)."""

from __future__ import annotations

import pytest

from prefix_audit.core.calls import structured_call
from prefix_audit.core.decode import shape_reason
from prefix_audit.core.reading import (
    BadRecord,
    CallLedger,
    expect,
    message_roles,
    object_at,
    value_at,
    whole_number,
)
from prefix_audit.core.records import RecordedResult, Step


def test_a_reply_answers_the_nearest_unanswered_call_with_its_id():
    ledger = CallLedger()
    first, second = structured_call("a", {}, "x"), structured_call("b", {}, "x")
    ledger.open(first)
    ledger.open(second)
    assert ledger.unanswered_ids() == ["x"] and ledger.waits("x") and ledger
    assert ledger.answer("x", RecordedResult.of("1")).call is first
    assert ledger.answer("x", RecordedResult.of("2")).call is second
    assert ledger.answer("x") is None and ledger.knows("x") and not ledger.waits("x") and not ledger
    assert ledger.answer("y") is None and not ledger.knows("y")


def test_attach_gives_each_call_its_recorded_result_by_position():
    ledger = CallLedger()
    calls = [structured_call(n, {}, n) for n in "abc"]
    for c in calls:
        ledger.open(c)
    ledger.answer("c", RecordedResult.of("C"))
    ledger.answer_oldest(RecordedResult.of("A", True))
    assert [c.call.name for c in ledger.waiting()] == ["b"]
    replaced = structured_call("b2", {}, "b")
    turns = ledger.attach([[Step(tuple(calls[:2]), message=1), Step((), "hi", message=2)], [Step((calls[2],))]],
                          {1: replaced})
    assert turns[0][0].calls == (calls[0], replaced) and turns[0][0].message == 1
    assert turns[0][0].results == (RecordedResult.of("A", True), None)
    assert turns[0][1] == Step((), "hi", message=2)
    assert turns[1][0].results == (RecordedResult.of("C"),)


def test_untrusted_json_reads_as_typed_values_or_a_located_error():
    doc = {"info": {"reward_info": {"info": {"r": 1}}, "task": [1]}}
    assert object_at(doc, "info", "reward_info", "info") == {"r": 1}
    assert object_at(doc, "info", "task") == {} and object_at(None, "info") == {}
    assert value_at(doc, "info", "task") == [1] and value_at(doc, "info", "task", "x") is None
    assert whole_number(None, "trial", default=0) == 0 and whole_number(3, "trial") == 3
    for bad in (True, -1, 2**31, 1.0, None):
        with pytest.raises(BadRecord, match="trial must be a whole number from 0"):
            whole_number(bad, "trial")
    assert expect([], list, "x must be a list") == []
    with pytest.raises(ValueError, match="^n must be a number$"):
        expect(True, int, "n must be a number", ValueError)


def test_a_bad_record_carries_its_reason_and_where_and_its_format_names_it():
    class BadThing(BadRecord):
        pass

    exc = BadThing("a message must be an object", "messages[3]")
    assert (exc.reason, exc.where, str(exc)) == ("a message must be an object", "messages[3]",
                                                  "messages[3]: a message must be an object")
    assert shape_reason(exc) == "BadThing: messages[3]: a message must be an object"
    assert str(BadThing("no messages")) == "no messages"


def test_message_roles_name_who_wrote_each_message():
    messages = [{"role": "system"}, {"role": "user"}, {"role": "assistant"}, {"role": "tool"}, {"role": "x"}, "?"]
    assert message_roles(messages) == ("system", "user", "agent", "tool", "other", "other")
    assert message_roles([{"sender": "AGENT"}], {"AGENT": "agent"}, key="sender") == ("agent",)
