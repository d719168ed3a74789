"""Benchmark health of BFCL multi-turn entries (SPEC §3), on bfcl-eval's own environment classes.

Per entry of a pinned data release (:class:`BfclProbe`, run by
:func:`prefix_audit.replay.health.probe_findings`), everything from execution:

* the ground truth replayed as the reference rollout (its calls on the release's classes, Y by BFCL's
  checker as :mod:`.replay` reproduces it) and an agent that answers every turn without a call;
* the ground truth run call by call on fresh instances (:func:`_run`): each call's result and what it
  changed, as a flattened state tree (:func:`state_tree`: ``Class.attr['key'].attr`` paths, an object
  reached twice written ``@path`` where it was first met, so a pointer into the tree — the file
  system's current directory — changes when it points elsewhere, not when the directory it points at
  changes); a *write* is a call that changes that tree, private attributes included (not a list of
  method names); the ground truth without each write — unless the rest leaves the whole state tree as
  the ground truth does (:meth:`BfclProbe.final_state`: a later call has the same effect, so the write
  was superseded, not unchecked) — with why BFCL's checker cannot tell (the write changes only private
  attributes, or a later call of its turn makes the compared state the gold's again; another call's
  equal result standing in for its result in the response check); whether the
  whole ground truth leaves the public state — what BFCL's state check compares — as it was loaded;
* ``answer_unreachable`` (:meth:`BfclProbe.own_findings`): a ground truth with more turns than the
  entry has questions (BFCL runs one turn per question and force-terminates a run whose turn count is
  not the ground truth's); and a string a gold call writes that no source holds (compared without
  case, blanks, quote marks and a tag's ``#`` or mention's ``@``) — no result of an earlier gold call,
  no initial value (keys too), no string an earlier gold call wrote, no user message of that turn or
  before, no function doc — while one source holds the same words (in another order, or with other
  spacing, punctuation or case), or the user quotes it (dictates it) with one word more or less or up to
  two characters changed, digits alone not counted (a format a function asks for: ``12/25`` as
  ``12/2025``): the gold transcribes that source and changes it. Each is confirmed by execution: the
  gold with the source's text instead (what a faithful agent writes) does not score 1. Text the gold
  composes from words of its own, numbers, and texts changed more than that are not judged;
* ``changed_between_releases``: per other pinned release, which fields of the entry differ and what
  each release's ground truth does on the other's data and classes (Y by the replay, calls the classes
  reject); for identical data, the gold calls whose results differ between the two releases' classes.
"""

from __future__ import annotations

import difflib
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from prefix_audit.core.calls import ToolCall
from prefix_audit.core.health import Finding
from prefix_audit.core.records import Rollout, rollout_id_for, without_action
from prefix_audit.replay.checker import EpisodeResult, replay
from prefix_audit.replay.health import Counterfactual, call_text

from .data import DATASET, Entry
from .loader import instance_names, invoke, method_table

HEALTH_MODEL = "health"
MAX_VALUE_CHARS = 120  # a value quoted in evidence
MAX_CHANGES = 6  # state changes named per call
MAX_TURNS_SAID = 3  # turns whose differences a release comparison spells out
NEAR_CHARS = 2  # a dictated text and the gold's: this many characters apart at most


def _short(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _quoted(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    return repr(_short(text, limit))


# --- the state as a tree of paths ------------------------------------------------------------------

def state_tree(instances: Mapping[str, Any]) -> dict[str, str]:
    """Every value of the instances' state as ``path → leaf``: scalars as ``repr``, a container or
    object as its kind (its members get paths of their own), an object met a second time as ``@path``
    of where it was first met (a pointer into the tree, or a back-reference), a set as its sorted
    members. Public attributes come first, so a private attribute that points into the public tree
    is written as that pointer; attributes of nested objects that start with ``_`` (bookkeeping such
    as a file's modification time, which the classes' ``__eq__`` ignores) and random generators are
    left out."""
    out: dict[str, str] = {}
    seen: dict[int, str] = {}

    def walk(value: Any, path: str) -> None:
        if value is None or isinstance(value, (str, int, float, bool)):
            out[path] = repr(value)
            return
        if isinstance(value, random.Random):
            return
        if id(value) in seen:
            out[path] = "@" + seen[id(value)]
            return
        seen[id(value)] = path
        if isinstance(value, dict):
            out[path] = "{}"
            for key in sorted(value, key=repr):
                walk(value[key], f"{path}[{key!r}]")
        elif isinstance(value, (list, tuple)):
            out[path] = "[]" if isinstance(value, list) else "()"
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")
        elif isinstance(value, (set, frozenset)):
            out[path] = "{" + ", ".join(sorted(map(repr, value))) + "}"
        elif hasattr(value, "__dict__") and not callable(value):
            out[path] = f"<{type(value).__name__}>"
            for key, item in vars(value).items():
                if not key.startswith("_"):
                    walk(item, f"{path}.{key}")
        else:
            out[path] = repr(value)

    for private in (False, True):
        for cls_name, instance in instances.items():
            for key, value in vars(instance).items():
                if key.startswith("_") == private:
                    walk(value, f"{cls_name}.{key}")
    return out


def _top(path: str) -> str:
    """``Class.attribute`` of a path."""
    m = re.match(r"[^.\[]+\.[^.\[]+", path)
    return m.group(0) if m else path


def is_public(path: str) -> bool:
    return not _top(path).split(".", 1)[1].startswith("_")


def _under(path: str, root: str) -> bool:
    return path.startswith(root) and len(path) > len(root) and path[len(root)] in ".["


@dataclass(frozen=True)
class Change:
    """One difference between two state trees: ``before``/``after`` None where the path is absent."""

    path: str
    before: str | None
    after: str | None

    @property
    def public(self) -> bool:
        return is_public(self.path)

    def describe(self, tree_after: Mapping[str, str] | None = None) -> str:
        if self.before is None:
            members = {p[len(self.path):]: v for p, v in (tree_after or {}).items() if _under(p, self.path)
                       and not v.startswith(("{", "[", "(", "<", "@"))}
            inside = ", ".join(f"{k}={v}" for k, v in list(members.items())[:3])
            return f"{self.path} added" + (f" ({_short(inside)})" if inside else "")
        if self.after is None:
            return f"{self.path} removed"
        return f"{self.path}: {_short(self.before, 60)} → {_short(self.after, 60)}"


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[Change]:
    """What differs from ``before`` to ``after``, a path added or removed with its members said once."""
    diff = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    out: list[Change] = []
    for path in diff:
        if out and _under(path, out[-1].path) and (out[-1].before is None or out[-1].after is None):
            continue
        out.append(Change(path, before.get(path), after.get(path)))
    return out


def describe_changes(found: Sequence[Change], tree_after: Mapping[str, str] | None = None) -> str:
    said = [c.describe(tree_after) for c in found[:MAX_CHANGES]]
    if len(found) > MAX_CHANGES:
        said.append(f"{len(found) - MAX_CHANGES} more")
    return "; ".join(said)


# --- the ground truth, call by call ----------------------------------------------------------------

@dataclass(frozen=True)
class _Traced:
    """One ground-truth call run after the calls before it."""

    depth: int  # 1-based, over all turns (the replay's action index)
    turn: int
    call: ToolCall
    accepted: bool
    text: str  # BFCL's result text
    value: Any  # the raw return value
    changes: tuple[Change, ...]
    after: Mapping[str, str]  # the state tree after it


def _run(bench: Any, entry: Entry, calls: Sequence[Sequence[ToolCall]], skip: int | None = None,
         trees_from: int = 0, until_turn: int | None = None) -> tuple[dict[str, str], list[_Traced]]:
    """``calls`` (per turn, up to ``until_turn``) on fresh instances of ``entry``'s classes of its
    release, but the one at depth ``skip``: the initial state tree and each call traced, with the state
    tree after it from depth ``trees_from`` on (before it: no tree, no changes)."""
    instances = bench.loader_of(entry).instantiate(entry)
    methods = method_table(instances)
    names = instance_names(methods, HEALTH_MODEL, entry.id)
    start = state_tree(instances) if trees_from <= 1 else {}
    before: dict[str, str] | None = start if trees_from <= 1 else None
    out = []
    depth = 0
    for t, turn in enumerate(calls):
        if until_turn is not None and t > until_turn:
            break
        for call in turn:
            depth += 1
            if depth == skip:
                continue
            accepted, value, text = invoke(methods, call, names)
            treed = depth >= trees_from - 1
            after = state_tree(instances) if treed else {}
            found = tuple(changes(before, after)) if before is not None and depth >= trees_from else ()
            out.append(_Traced(depth, t, call, accepted, text, value, found, after))
            before = after if treed else None
    return start, out


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(where, string) for every string of a nested value: dict keys and values, list items, the
    public attributes of objects."""
    stack = [(value, path)]
    seen: set[int] = set()
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, (int, float, bool)) or item is None or id(item) in seen:
            continue
        elif isinstance(item, Mapping):
            seen.add(id(item))
            for k, v in item.items():
                if isinstance(k, str):
                    yield f"{where} (a key)", k
                stack.append((v, f"{where}[{k!r}]"))
        elif isinstance(item, (list, tuple, set, frozenset)):
            seen.add(id(item))
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
        elif hasattr(item, "__dict__") and not callable(item):
            seen.add(id(item))
            stack.extend((v, f"{where}.{k}") for k, v in vars(item).items() if not k.startswith("_"))


# --- text: how a literal compares with what the sources hold ------------------------------------------

_MARK = re.compile(r"(?<![\w])[#@](?=\w)")
_QUOTES = re.compile(r"[\"'`\u2018\u2019\u201c\u201d]")
_WORD = re.compile(r"\w+")
# Text the user puts in quotes: an apostrophe inside a word (I'll) does not open or close one.
_QUOTED = re.compile(r"(?<!\w)'(.+?)'(?!\w)|\"(.+?)\"|\u201c(.+?)\u201d|\u2018(.+?)\u2019(?!\w)", re.S)


def normalise(text: str) -> str:
    """Case, blanks, a tag's ``#`` or mention's ``@``, quote marks and backslashes left out."""
    text = _QUOTES.sub("", _MARK.sub("", text.casefold())).replace("\\", "")
    return " ".join(text.split())


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def quoted_spans(text: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None).strip() for m in _QUOTED.finditer(text)]


def _edits(a: str, b: str) -> tuple[int, str]:
    """How many characters turn ``a`` into ``b`` (each replaced, inserted or deleted one counted once)
    and those characters, both sides'."""
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    count = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")
    return count, "".join(a[i1:i2] + b[j1:j2] for tag, i1, i2, j1, j2 in ops if tag != "equal")


def _one_word_apart(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether one word sequence is the other with exactly one word inserted (or left out)."""
    if abs(len(a) - len(b)) != 1:
        return False
    short, long = (a, b) if len(a) < len(b) else (b, a)
    ops = difflib.SequenceMatcher(None, short, long, autojunk=False).get_opcodes()
    return sum(i2 - i1 + j2 - j1 for tag, i1, i2, j1, j2 in ops if tag != "equal") == 1


@dataclass(frozen=True)
class _Source:
    """Where a text is available to an agent, in words a person can follow, and the text."""

    where: str
    text: str
    dictated: bool = False  # the user quotes it: the text to write, word for word

    @cached_property
    def words(self) -> list[str]:
        return words(self.text)

    @cached_property
    def bag(self) -> Counter:
        return Counter(self.words)


def _transcribes(literal: str, source: _Source) -> str | None:
    """How ``literal`` is ``source``'s text changed (None: it is not)."""
    lw, sw = words(literal), source.words
    if len(lw) >= 2 and len(lw) == len(sw) and Counter(lw) == source.bag:
        return ("the same words in another order" if lw != sw else
                "the same words with other spacing, punctuation or case")
    if not source.dictated:
        return None
    # A change of digits alone may be a format the function asks for (MM/YY as MM/YYYY, a balance
    # with cents): not counted.
    if len(lw) >= 2 and _one_word_apart(lw, sw):
        (odd,) = (Counter(lw) - Counter(sw)) + (Counter(sw) - Counter(lw))
        if not odd.isdigit():
            return f"the same words but {odd!r} " + ("left out" if len(lw) < len(sw) else "added")
    if min(len(literal), len(source.text)) >= 4 and abs(len(literal) - len(source.text)) <= NEAR_CHARS:
        apart, changed = _edits(source.text, literal)
        if apart <= NEAR_CHARS and not changed.isdigit():
            return f"the same text but {apart} character{'s' if apart > 1 else ''} changed"
    return None


def _replace_string(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, list):
        return [_replace_string(v, old, new) for v in value]
    if isinstance(value, tuple):
        return tuple(_replace_string(v, old, new) for v in value)
    if isinstance(value, dict):
        return {k: _replace_string(v, old, new) for k, v in value.items()}
    return value


def _string_arguments(call: ToolCall) -> Iterator[tuple[str, str]]:
    """(parameter, string) for each string in a call's arguments, in order, once each."""
    said: set[str] = set()
    named = [(f"argument {i + 1}", v) for i, v in enumerate(call.args)] + list(call.kwargs.items())
    for param, value in named:
        for _, text in sorted(_strings(value), key=lambda x: x[0]):
            if text not in said:
                said.add(text)
                yield param, text


def _text_change(a: str, b: str, context: int = 30) -> str:
    """Where two texts differ: ``…common[a-part → b-part]common…``."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    head = ("…" if start > context else "") + a[max(0, start - context):start]
    tail = a[len(a) - end:len(a) - end + context] + ("…" if end > context else "")
    return f"{head}[{_short(a[start:len(a) - end], 80)!r} → {_short(b[start:len(b) - end], 80)!r}]{tail}"


class BfclProbe:
    """One entry of one release, as :func:`~prefix_audit.replay.health.probe_findings` reads it."""

    def __init__(self, bench: Any, entry: Entry) -> None:
        self.benchmark = bench
        self.entry = entry
        self.calls = bench.ground_truth_calls(entry)

    def _rollout(self, method: str, turns: tuple, release: str | None = None) -> Rollout:
        release = release or self.entry.release
        meta = {"bfcl_data": release}
        return Rollout(DATASET, self.entry.id, HEALTH_MODEL, method,
                       rollout_id_for(DATASET, HEALTH_MODEL, method, release, self.entry.id), turns,
                       "reference", meta)

    def gold(self) -> Rollout:
        return self._rollout("reference", self.benchmark.reference_turns(self.entry))

    def idle(self) -> Counterfactual:
        turns = len(self.entry.question)
        return Counterfactual(f"an agent that answers each of the {turns} turns without a call",
                              self._rollout("idle", ((),) * turns))

    @cached_property
    def _trace(self) -> tuple[dict[str, str], list[_Traced]]:
        return _run(self.benchmark, self.entry, self.calls)

    # writes ----------------------------------------------------------------------------------
    def without_required(self, gold: EpisodeResult) -> list[Counterfactual]:
        _, traced = self._trace
        by_depth = {t.depth: t for t in traced}
        out = []
        for verdict in gold.verdicts:
            action = verdict.action
            done = by_depth.get(action.index)
            if action.call is None or verdict.accepted is not True or done is None or not done.changes:
                continue
            label = (f"the ground truth without {call_text(action)} (a write: "
                     f"{describe_changes(done.changes, done.after)})")
            out.append(Counterfactual(label, without_action(gold.rollout, action), self._why_unseen(done)))
        return out

    def final_state(self, rollout: Rollout) -> dict[str, str]:
        """The state tree (private attributes included) the rollout's calls leave on fresh instances."""
        instances = self.benchmark.loader_of(self.entry).instantiate(self.entry)
        methods = method_table(instances)
        names = instance_names(methods, HEALTH_MODEL, self.entry.id)
        for call in (c for turn in rollout.turns for step in turn for c in step.calls):
            invoke(methods, call, names)
        return state_tree(instances)

    def _why_unseen(self, removed: _Traced) -> str:
        """Why BFCL's checker may not see ``removed`` missing: what it changed that the state check
        does not compare, or the later call of its turn after which the compared state is the gold's
        again; and which other result stands in for its result in the response check."""
        _, gold = self._trace
        _, without = _run(self.benchmark, self.entry, self.calls, skip=removed.depth, trees_from=removed.depth,
                          until_turn=removed.turn)
        public = lambda tree: {p: v for p, v in tree.items() if is_public(p)}  # noqa: E731
        said = []
        if not any(c.public for c in removed.changes):
            said.append("it changes only private attributes, which BFCL's state check does not compare "
                        "(public attributes only)")
        else:
            gold_after = {t.depth: t.after for t in gold}
            later = [t for t in without if t.depth > removed.depth and t.turn == removed.turn]
            same = next((t for t in later if public(t.after) == public(gold_after[t.depth])), None)
            if same is not None:
                made = [c for c in same.changes if c.public]
                said.append(f"without it, turn {same.turn + 1}, action {same.depth}: {_short(same.call.render())} "
                            f"makes {describe_changes(made, same.after) if made else 'no change'} and the public "
                            f"state BFCL compares is the gold's again")
        stand_in = next((t for t in without if t.turn <= removed.turn and t.text == removed.text), None)
        if stand_in is not None:
            said.append(f"its result {_quoted(removed.text, 60)} is also the result of turn {stand_in.turn + 1}, "
                        f"action {stand_in.depth}: {_short(stand_in.call.render())} (BFCL's response check "
                        f"compares results as a multiset, not call by call)")
        return "; ".join(said)

    def gold_effect(self, gold: EpisodeResult) -> str | None:
        start, traced = self._trace
        end = traced[-1].after if traced else start
        if any(c.public for c in changes(start, end)):
            return None
        n = sum(map(len, self.calls))
        return (f"the ground truth's {n} calls leave the public state of {', '.join(self.entry.involved_classes)} "
                f"as loaded: BFCL's state check cannot tell it from doing nothing (its response check still "
                f"compares the calls' results)")

    def confirm(self, trajectory: Counterfactual, episode: EpisodeResult) -> str | None:
        return ""  # Y is BFCL's checker as .replay reproduces it (differential-tested against bfcl-eval's own)

    # the benchmark's own checks ------------------------------------------------------------------
    def own_findings(self, gold: EpisodeResult) -> list[Finding]:
        return [*self._turn_count(), *self._unreachable_strings(gold), *self._release_changes()]

    def _turn_count(self) -> list[Finding]:
        asked, expected = len(self.entry.question), len(self.entry.ground_truth)
        if asked == expected:
            return []
        rest = "; ".join(f"turn {t + 1}: " + (", ".join(map(_short, self.entry.ground_truth[t])) or "no call")
                         for t in range(asked, expected))
        unasked = f"; the ground truth of turns no question asks: {rest}" if rest else ""
        cut = self._rollout("cut", self.benchmark.reference_turns(self.entry)[:asked])
        episode = replay(cut, self.benchmark, with_gold=False)
        return [Finding("answer_unreachable",
                        f"the ground truth has {expected} turns, the entry's question {asked}: BFCL runs one turn "
                        f"per question and fails a run whose turn count differs from the ground truth's, so no run "
                        f"scores 1 (the ground truth cut to the {asked} turns BFCL runs scores {episode.Y}: "
                        f"{episode.y_detail}){unasked}")]

    def _docs_text(self) -> str:
        data = self.benchmark.data_of(self.entry.release)
        docs = [data.docs.get(c, []) for c in self.entry.involved_classes]
        return normalise(json.dumps(docs, ensure_ascii=False))

    def _unreachable_strings(self, gold: EpisodeResult) -> list[Finding]:
        """Gold strings that no source holds but that transcribe one source, changed; each confirmed by
        replaying the gold with the source's text instead."""
        if gold.Y != 1:
            return []
        _, traced = self._trace
        by_depth = {t.depth: t for t in traced}
        initial = [_Source(f"the initial value {where}", text)
                   for cls_name, attrs in self._initial_public().items() for key, value in attrs.items()
                   for where, text in _strings(value, f"{cls_name}.{key}")]
        sources: list[_Source] = list(initial)
        joined = [normalise(s.text) for s in initial] + [self._docs_text()]
        turns_told = -1
        found: list[Finding] = []
        for verdict in gold.verdicts:
            action = verdict.action
            if action.call is None:
                continue
            while turns_told < min(action.turn, len(self.entry.question) - 1):
                turns_told += 1
                for text in self.entry.user_texts(turns_told):
                    sources.append(_Source(f"the user's message of turn {turns_told + 1}", text))
                    joined.append(normalise(text))
                    sources.extend(_Source(f"the text the user quotes in turn {turns_told + 1}", q, True)
                                   for q in quoted_spans(text))
            pool = "\x00".join(joined)
            for param, literal in _string_arguments(action.call):
                if not words(literal) or normalise(literal) in pool:
                    continue
                finding = self._transcription(gold, action, param, literal, sources)
                if finding is not None:
                    found.append(finding)
            done = by_depth.get(action.index)
            if done is not None:  # what this call makes available to the calls after it
                where = f"the result of {call_text(action)}"
                sources.append(_Source(where, done.text))
                sources.extend(_Source(f"{where}, at {path}" if path else where, text)
                               for path, text in _strings(done.value) if text != done.text)
                joined.append(normalise(done.text))
                joined.extend(normalise(text) for _, text in _strings(done.value))
            for _, text in _string_arguments(action.call):
                sources.append(_Source(f"what {call_text(action)} wrote", text))
                joined.append(normalise(text))
        return found

    def _initial_public(self) -> dict[str, dict[str, Any]]:
        loaded = self.benchmark.loader_of(self.entry).instantiate(self.entry)
        return {c: {k: v for k, v in vars(i).items() if not k.startswith("_")} for c, i in loaded.items()}

    def _transcription(self, gold: EpisodeResult, action: Any, param: str, literal: str,
                       sources: Sequence[_Source]) -> Finding | None:
        for source in reversed(sources):  # the nearest first
            how = _transcribes(literal, source)
            if how is None:
                continue
            call = action.call
            faithful = replace(call, args=_replace_string(call.args, literal, source.text),
                               kwargs=_replace_string(call.kwargs, literal, source.text), raw=None)
            episode = replay(self._with_call(gold.rollout, action, faithful), self.benchmark,
                             with_gold=False)
            if episode.Y == 1:
                return None  # BFCL's check does not tell the two texts apart
            told = min(action.turn, len(self.entry.question) - 1) + 1
            return Finding("answer_unreachable",
                           f"{call_text(action)} writes {param}={_quoted(literal)}, which no source holds (the "
                           f"results of earlier gold calls, the initial state, what earlier gold calls wrote, the "
                           f"user's messages of {'turn 1' if told == 1 else f'turns 1–{told}'}, the function docs); "
                           f"{source.where} holds {_quoted(source.text)} — {how} "
                           f"({_text_change(source.text, literal)}): the gold transcribes it changed, and the gold "
                           f"with that text instead scores {episode.Y} ({episode.y_detail})")
        return None

    def _with_call(self, rollout: Rollout, action: Any, call: ToolCall) -> Rollout:
        turns = [list(turn) for turn in rollout.turns]
        step = turns[action.turn][action.step]
        calls = tuple(call if c is action.call else c for c in step.calls)
        turns[action.turn][action.step] = replace(step, calls=calls)
        return replace(rollout, method="faithful", turns=tuple(map(tuple, turns)))

    # releases ------------------------------------------------------------------------------------
    def _release_changes(self) -> list[Finding]:
        bench = self.benchmark
        releases = getattr(bench, "releases", lambda: [])()
        found = []
        for other_release in releases:
            if other_release == self.entry.release:
                continue
            other = bench.data_of(other_release).entries.get(self.entry.id)
            if other is None:
                found.append(Finding("changed_between_releases",
                                     f"in bfcl-eval {self.entry.release}'s data only: bfcl-eval {other_release} has no "
                                     f"entry {self.entry.id}"))
                continue
            evidence = self._compared(other)
            if evidence:
                found.append(Finding("changed_between_releases", evidence))
        return found

    def _compared(self, other: Entry) -> str | None:
        here, there = self.entry.release, other.release
        fields = _field_differences(other, self.entry)
        if not fields:
            differ = self._result_differences(other)
            if not differ:
                return None
            return (f"the same data as bfcl-eval {there}, but the ground truth's calls give other results on "
                    f"{there}'s classes: " + "; ".join(differ))
        names = ", ".join(dict.fromkeys(f.split(":", 1)[0] for f in fields))
        said = [f"differs from bfcl-eval {there} in {names}",
                self._cross(other, self.entry, f"{there}'s ground truth on this release's ({here}) data and classes"),
                self._cross(self.entry, other, f"this release's ground truth on {there}'s data and classes"),
                "details: " + "; ".join(fields)]
        return "; ".join(said)

    def _cross(self, gold_of: Entry, on: Entry, label: str) -> str:
        bench = self.benchmark
        turns = bench.reference_turns(gold_of)
        rollout = Rollout(DATASET, on.id, HEALTH_MODEL, f"gold_of_{gold_of.release}",
                          rollout_id_for(DATASET, HEALTH_MODEL, f"gold_of_{gold_of.release}", on.release, on.id),
                          turns, "reference", {"bfcl_data": on.release})
        episode = replay(rollout, bench, with_gold=False)
        rejected = [f"{call_text(v.action)} → {_short(v.logged or v.result or 'rejected')}"
                    for v in episode.verdicts if v.action.call is not None and v.accepted is False]
        text = f"{label} scores {episode.Y}" + (f" ({episode.y_detail})" if episode.Y != 1 and episode.y_detail else "")
        if rejected:
            text += f", the classes reject {len(rejected)} call(s): " + ", ".join(rejected[:3])
        return text

    def _result_differences(self, other: Entry) -> list[str]:
        _, here = self._trace
        _, there = _run(self.benchmark, other, self.calls, trees_from=sys.maxsize)
        out = []
        for a, b in zip(here, there):
            if a.text != b.text or a.accepted != b.accepted:
                out.append(f"turn {a.turn + 1}, action {a.depth}: {_short(a.call.render())} → "
                           f"{_quoted(a.text, 80)} here, {_quoted(b.text, 80)} on {other.release}")
        return out


def _field_differences(old: Entry, new: Entry) -> list[str]:
    """``field: what differs`` between two releases' versions of an entry (``old`` the other release)."""
    out = []
    if len(old.question) != len(new.question):
        out.append(f"turn count: {len(old.question)} → {len(new.question)} questions")
    texts = [t for t in range(min(len(old.question), len(new.question))) if old.user_texts(t) != new.user_texts(t)]
    for t in texts[:MAX_TURNS_SAID]:
        a, b = " / ".join(old.user_texts(t)), " / ".join(new.user_texts(t))
        out.append(f"user text: turn {t + 1} " + (_text_change(a, b) if a and b else f"{_quoted(a)} → {_quoted(b)}"))
    if len(texts) > MAX_TURNS_SAID:
        out.append(f"user text: turns {', '.join(str(t + 1) for t in texts[MAX_TURNS_SAID:])} too")
    if tuple(old.involved_classes) != tuple(new.involved_classes):
        out.append(f"involved classes: {', '.join(old.involved_classes)} → {', '.join(new.involved_classes)}")
    if dict(old.held_out) != dict(new.held_out):
        out.append(f"missed functions: {dict(old.held_out)} → {dict(new.held_out)}")
    if old.initial_config != new.initial_config:
        a, b = _config_tree(old.initial_config), _config_tree(new.initial_config)
        found = changes(a, b)
        out.append("initial_config: " + describe_changes(found, b))
    if old.ground_truth != new.ground_truth:
        if len(old.ground_truth) != len(new.ground_truth):
            out.append(f"ground truth: {len(old.ground_truth)} → {len(new.ground_truth)} turns")
        pairs = [(t, old.ground_truth[t] if t < len(old.ground_truth) else None,
                  new.ground_truth[t] if t < len(new.ground_truth) else None)
                 for t in range(max(len(old.ground_truth), len(new.ground_truth)))]
        pairs = [(t, a, b) for t, a, b in pairs if a != b]
        out.extend(f"ground truth: turn {t + 1} " + _calls_change(a, b) for t, a, b in pairs[:MAX_TURNS_SAID])
        if len(pairs) > MAX_TURNS_SAID:
            out.append(f"ground truth: turns {', '.join(str(t + 1) for t, _, _ in pairs[MAX_TURNS_SAID:])} too")
    return out


def _calls_change(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> str:
    if a is None or b is None:
        said = ["absent" if x is None else str(list(map(_short, x))) for x in (a, b)]
        return f"{said[0]} → {said[1]}"
    gone = [c for c in a if c not in b]
    new = [c for c in b if c not in a]
    if not gone and not new:
        return "the same calls in another order"
    return (f"{', '.join(_short(c) for c in gone) or 'nothing'} → {', '.join(_short(c) for c in new) or 'nothing'}")


def _config_tree(config: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            out[path] = "{}"
            for k in sorted(value, key=repr):
                walk(value[k], f"{path}[{k!r}]" if path else str(k))
        elif isinstance(value, list):
            out[path] = "[]"
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")
        else:
            out[path] = repr(value)

    for cls_name in sorted(config):
        walk(config[cls_name], cls_name)
    return out


__all__ = ["BfclProbe", "Change", "changes", "describe_changes", "normalise", "quoted_spans", "state_tree", "words"]
