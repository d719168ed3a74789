"""Whose error a failing action is (docs/attribution.md): the agent's, the user's or the benchmark's.

FED charges the agent with its first failing action. Some of those failures are not the agent's doing:
a look-up of an email the user typed, which the benchmark's database does not hold, fails whatever the
agent does with it. Every failing action gets an *origin* and *evidence* a person can check without the
tool:

* ``user`` — the action failed because of information the user gave, used faithfully: the call changes
  no state (the benchmark's own read/write marking), every value of the user's own information that
  identifies what it looks up appears, as a whole word, in a user message at or before the call's turn,
  the benchmark's answer is that a value names nothing, and no object anywhere in the benchmark's state
  holds those values together (a value some object holds is the agent's to find). The evidence quotes
  the user's words and the benchmark's answer. The task's own gold can show the same: where the gold
  makes the same call and it fails the same way by design (a look-up of information the scenario gets
  wrong on purpose, a call the gold goes on from with an accepted call), the agent fell into the task's
  scripted trap: ``user`` too.
* ``benchmark`` — the benchmark's own harness failed a well-formed call (``Outcome.harness``), or the task
  makes the failing call unavoidable: its gold makes the same call and it fails the same way, and the gold
  ends on it (benchmark health's ``gold_fails``), or the function is one the task withholds in the turn
  its gold needs it (``gold_not_prefix_executable``). The evidence names the gold's call and the health
  code.
* ``agent`` — everything else; when a condition cannot be checked, the failure stays the agent's
  (attribution never excuses an agent error). The evidence says which condition was not met.

The facts are the adapter's (:class:`~.contract.ToolSpec` ``read_only`` and ``identifying_params``,
:class:`~.contract.Outcome` ``missing``, the session's ``holds``); the rules here are generic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_audit.core.calls import ToolCall
from prefix_audit.core.health import DEFINITION, DESIGN

from .contract import Outcome, ToolSpec
from .values import fold, scalars

AGENT = "agent"
USER = "user"
BENCHMARK = "benchmark"
ORIGINS = (AGENT, USER, BENCHMARK)
# The only failure a user's information can cause: the benchmark rejecting the transition.
USER_CAUSED_CATEGORIES = frozenset({"state_consistency"})
QUOTE_CHARS = 60  # context quoted on each side of the user's words


@dataclass(frozen=True)
class Attribution:
    """The origin of one failing action and the evidence for it."""

    origin: str
    evidence: str


def attribute(spec: ToolSpec | None, arguments: Mapping[str, Any], categories: Collection[str],
              outcome: Outcome | None, user_texts: Sequence[str],
              holds: Callable[[Sequence[Any]], bool | None]) -> Attribution:
    """The origin of a failing call: ``user`` when every condition of the module's rule holds, else
    ``agent`` with the first condition that does not. ``arguments``: the call's arguments bound to the
    spec; ``categories``: its failing predicates; ``user_texts``: the user's message of each turn up to
    and including the call's."""
    if not categories or not set(categories) <= USER_CAUSED_CATEGORIES:
        return Attribution(AGENT, f"the agent's call fails the {', '.join(sorted(categories))} predicate")
    if outcome is not None and outcome.harness:
        return Attribution(BENCHMARK, f"the benchmark's own harness failed the well-formed call, its environment "
                                      f"never judged it: {_quoted(' '.join((outcome.error or '').split())[:300])}")
    if spec is None or not spec.read_only:
        return Attribution(AGENT, "the call may change the state (not a look-up the user's information can fail)")
    named = identifying_values(spec, arguments)
    if not named:
        return Attribution(AGENT, "no argument of the call carries the user's own information")
    if outcome is None or not outcome.missing:
        return Attribution(AGENT, "the benchmark rejected the call for another reason than a value naming nothing")
    places = []
    for param, value in named:
        where = stated(value, user_texts)
        if where is None:
            return Attribution(AGENT, f"{param}={value!r} is not what the user said before the call")
        places.append(where)
    values = [value for _, value in named]
    held = holds(values)
    if held is None:
        return Attribution(AGENT, "the benchmark's state cannot be searched for the value")
    if held:
        return Attribution(AGENT, f"the benchmark holds {_listed(values)} (in its state, or by a look-up of its own): "
                                  f"the agent's to find")
    answer = (outcome.error or "rejected").strip()
    return Attribution(USER, f"{user_quotes(places, user_texts)}; the benchmark answered {_quoted(answer)}; "
                             f"no object of its state holds {_listed(values)}")


@dataclass(frozen=True)
class GoldFailure:
    """A failure of a task's own gold: the call, what failed it (the benchmark's rejection with its
    answer, or the function withheld in that turn), where, and its intent — ``design`` (the task scripts
    it: a look-up of information the scenario gets wrong on purpose, or a call the gold goes on from with
    an accepted call) or ``defect`` (the gold ends on it: the task makes an agent fail there) — with why."""

    call: str  # ToolCall.render() of the gold's call
    tool: str
    code: str  # rejected_transition | tool_not_exposed
    answer: str | None  # the benchmark's answer to a rejected call, white space collapsed
    where: str  # the call as evidence (turn and depth)
    index: int  # the call's depth in the gold
    intent: str  # design | defect | definition
    why: str


# A predicate failure the gold shares with an agent regardless of the arguments: the tool itself is
# withheld in that turn.
_ANY_ARGUMENTS = frozenset({"tool_not_exposed"})


def same_answer(text: str | None) -> str | None:
    return " ".join(text.split()) if text is not None else None


def as_gold_fails(call: ToolCall, code: str, outcome: Outcome | None,
                  gold: Sequence[GoldFailure]) -> Attribution | None:
    """Where the task's gold fails the same way — the same tool and failure, and unless the tool itself is
    withheld the same call and the same answer of the benchmark —: ``user`` when the task scripts that
    failure, ``benchmark`` when it is a defect of the task; else None."""
    answer = same_answer(outcome.error) if outcome is not None and not outcome.accepted else None
    for failure in gold:
        if failure.tool != call.name or failure.code != code:
            continue
        if code in _ANY_ARGUMENTS or (failure.call == call.render() and failure.answer == answer):
            said = f" → {_quoted(failure.answer)}" if failure.answer else f" ({code})"
            gold_call = f"{failure.where}{said}"
            if failure.intent == DEFINITION:
                return None
            if failure.intent == DESIGN:
                return Attribution(USER, f"the task's scenario scripts this failure: its gold makes the same call "
                                         f"and it fails the same way ({gold_call}; {failure.why})")
            health = "gold_fails" if code == "rejected_transition" else "gold_not_prefix_executable"
            return Attribution(BENCHMARK, f"the task makes this failure unavoidable: its gold makes the same call and "
                                          f"it fails the same way ({gold_call}; {failure.why}; benchmark health: "
                                          f"{health})")
    return None


def identifying_values(spec: ToolSpec, arguments: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(parameter, value) of every leaf of the identifying arguments the call was given."""
    return [(param, value) for param in sorted(spec.identifying_params & arguments.keys())
            for value in scalars(arguments[param])]


def stated(value: Any, user_texts: Sequence[str]) -> tuple[int, int, int] | None:
    """Where the earliest user message states ``value`` as a whole word: (message, start, end);
    None when no message does."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value == "":
        return None
    pattern = re.compile(rf"(?<!\w){re.escape(str(value))}(?!\w)")
    for turn, text in enumerate(user_texts):
        found = pattern.search(text)
        if found:
            return turn, found.start(), found.end()
    return None


def user_quotes(places: Iterable[tuple[int, int, int]], user_texts: Sequence[str]) -> str:
    """The user's words at ``places`` (of :func:`stated`), one quote per message, with its number
    (counted from 1)."""
    spans: dict[int, tuple[int, int]] = {}
    for turn, start, end in places:
        low, high = spans.get(turn, (start, end))
        spans[turn] = (min(low, start), max(high, end))
    quotes = []
    for turn, (start, end) in sorted(spans.items()):
        text = user_texts[turn]
        start, end = max(0, start - QUOTE_CHARS), min(len(text), end + QUOTE_CHARS)
        excerpt = ("…" if start else "") + " ".join(text[start:end].split()) + ("…" if end < len(text) else "")
        quotes.append(f"the user said {_quoted(excerpt)} (user message {turn + 1})")
    return "; ".join(quotes)


def _quoted(text: str) -> str:
    return "“" + text + "”"


def _listed(values: Iterable[Any]) -> str:
    return ", ".join(repr(v) for v in values)


def comparable(value: Any) -> Hashable | None:
    """A state or argument value as :class:`StateIndex` compares it: strings folded (case and spacing),
    numbers as floats (folding more than the benchmark may only make attribution say ``agent`` more
    often, never less)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        return fold(value)
    if isinstance(value, (int, float)):
        return float(value)
    return None


class StateIndex:
    """Which records of a benchmark state hold each value. A record is a node at ``depth`` below the
    state's root (tables of records: depth 2; a value nearer the root is its own record). A coarser
    record only makes :meth:`holds` true more often — the agent's side."""

    def __init__(self, state: Any, depth: int = 2) -> None:
        self._records: dict[Hashable, set[int]] = {}
        for record, node in enumerate(_records(state, depth)):
            for value in scalars(node):
                key = comparable(value)
                if key is not None:
                    self._records.setdefault(key, set()).add(record)

    def holds(self, values: Sequence[Any]) -> bool:
        """Whether one record holds every value."""
        keys = [comparable(v) for v in values]
        if not keys or any(k is None for k in keys):
            return True  # what cannot be compared is not excused
        common: set[int] | None = None
        for key in keys:
            found = self._records.get(key, set())
            common = set(found) if common is None else common & found
            if not common:
                return False
        return True


def _records(node: Any, depth: int) -> Iterator[Any]:
    """The nodes ``depth`` levels below ``node``, each with the key it is kept under (an id is often
    only a key); a leaf nearer the root is its own record."""
    if isinstance(node, Mapping):
        items = list(node.items())
    elif isinstance(node, (list, tuple, set, frozenset)):
        items = [(None, v) for v in node]
    elif hasattr(node, "__dict__") and not callable(node):
        items = [(k, v) for k, v in vars(node).items() if not callable(v) and not k.startswith("_")]
    else:
        yield node
        return
    for key, value in items:
        if depth <= 1:
            yield (key, value)
        else:
            yield from _records(value, depth - 1)
