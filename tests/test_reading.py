"""The log-reading kit every importer reads with (prefix_audit.core.reading)."""

from __future__ import annotations

import pytest

from prefix_audit.core.calls import structured_call
from prefix_audit.core.decode import shape_reason
from prefix_audit.core.reading import (
    BadRecord,
    CallLedger,
    MessageLoop,
    expect,
    message_roles,
    numbered,
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
    assert message_roles([{"role": ["user"]}, {"role": {"a": 1}}]) == ("other", "other")


class BadChat(BadRecord):
    pass


class _Chat(MessageLoop):
    """A small dialect, as a benchmark author writes one: a user message opens a turn (``bye`` stops),
    the agent's message is a step with its calls, a tool message answers a call by id."""

    error = BadChat

    def __init__(self) -> None:
        super().__init__()
        self.ledger, self.stopped = CallLedger(), False

    def before(self, kind, message, where):
        if self.stopped:
            raise BadChat("message after the stop", where)

    def _user(self, message, position, where):
        if message.get("content") == "bye":
            self.stopped = True
        else:
            self.open_turn(message.get("content") or "")

    def _agent(self, message, position, where):
        calls = tuple(structured_call(c["name"], c["arguments"], c["id"]) for c in message.get("calls", ()))
        self.add_step(Step(calls, message.get("content"), message=position))
        for call in calls:
            self.ledger.open(call)

    def _tool(self, message, position, where):
        if self.ledger.answer(message.get("id"), RecordedResult.of(message.get("content") or "")) is None:
            raise BadChat(f"a reply to no call ({message.get('id')!r})", where)

    handlers = {"system": MessageLoop.skip, "user": _user, "assistant": _agent, "tool": _tool}

    def end(self):
        if self.ledger:
            raise BadChat(f"truncated: {self.ledger.unanswered_ids()} have no reply")


def _read_chat(messages):
    chat = _Chat()
    chat.read(numbered(messages, "messages"))
    return chat


def test_the_message_loop_hands_each_message_to_its_kinds_handler_and_refuses_what_no_kind_names():
    chat = _read_chat([{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"},
                       {"role": "assistant", "calls": [{"name": "f", "arguments": {"x": 1}, "id": "c1"}]},
                       {"role": "tool", "id": "c1", "content": "ok"}, {"role": "assistant", "content": "done"},
                       {"role": "user", "content": "bye"}])
    assert chat.user_turns == ["hi"]
    (first, second), = chat.ledger.attach(chat.turns)
    assert (first.calls[0].name, first.results[0].content, first.message, second.text) == ("f", "ok", 2, "done")
    # Each refusal is the dialect's own error, located by the loop's ``where``.
    for messages, reason in (
            ([{"role": "user"}, "not an object"], "messages[1]: a message must be an object"),
            ([{"role": "critic", "content": "?"}], "messages[0]: unknown role 'critic'"),
            ([{"role": ["user"]}], "messages[0]: unknown role ['user']"),
            ([{"role": "user", "content": "bye"}, {"role": "user"}], "messages[1]: message after the stop"),
            ([{"role": "tool", "id": "c9"}], "messages[0]: a reply to no call ('c9')"),
            ([{"role": "user"}, {"role": "assistant", "calls": [{"name": "f", "arguments": {}, "id": "c1"}]}],
             "truncated: ['c1'] have no reply")):
        with pytest.raises(BadChat) as raised:
            _read_chat(messages)
        assert str(raised.value) == reason
