"""Benchmark health of BFCL multi-turn entries (docs/definitions.md#health), on bfcl-eval's own environment classes.

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
* ``changed_between_releases`` (:meth:`BfclProbe._compared`): per other pinned release, one finding per
  effect the differences have, each difference in full — ``scored``: the initial state, the involved
  classes, the ground truth where the question's change does not explain it, and this release's ground
  truth behaving otherwise on the other release's classes (accepted on one only, another state change,
  other result values), with what each release's ground truth scores on the other's data and classes;
  ``seen``: the question, the function docs BFCL gives per involved class and when a missed function
  arrives, a result's values under other keys; ``unseen``: a ground truth that gives BFCL's checker the
  same state after each turn and the same results. A change the question makes is applied as token
  substitutions (with the config's dates where the question's dates change) to the other release's
  ground truth and config; what then equals this release's follows the question (a date refresh).
"""

from __future__ import annotations

import calendar
import difflib
import json
import random
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from prefix_audit.core.calls import ToolCall, parse_call_string
from prefix_audit.core.health import CAUTION, NOTE, SCORED, SEEN, UNSEEN, Finding, changed_text
from prefix_audit.core.records import Rollout, rollout_id_for, without_action
from prefix_audit.plugin import Counterfactual, EpisodeResult, call_text
from prefix_audit.replay.checker import replay

from .data import DATASET, Entry
from .loader import instance_names, invoke, method_table

HEALTH_MODEL = "health"
MAX_VALUE_CHARS = 120  # a value quoted in evidence
MAX_CHANGES = 6  # state changes named per call
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
         trees_from: int = 0, until_turn: int | None = None,
         classes_of: str | None = None) -> tuple[dict[str, str], list[_Traced]]:
    """``calls`` (per turn, up to ``until_turn``) on fresh instances of ``entry``'s classes of its
    release (or of release ``classes_of``, loaded with ``entry``'s data), but the one at depth ``skip``:
    the initial state tree and each call traced, with the state tree after it from depth ``trees_from``
    on (before it: no tree, no changes)."""
    instances = bench.loader_of(replace(entry, release=classes_of or entry.release)).instantiate(entry)
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
                       source="reference", meta=meta)

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
                                     f"entry {self.entry.id}", kind=CAUTION, effect=SCORED))
                continue
            found.extend(self._compared(other))
        return found

    def _compared(self, other: Entry) -> list[Finding]:
        """One finding per effect the differences from ``other`` (the same entry of another release) have:
        ``scored`` — what changes how the same calls are scored (the initial state, the ground truth where
        the question's change does not explain it, the involved classes, a tool's state change or result
        values); ``seen`` — what only the model sees (the question, the tools given and their docs, result
        key names); ``unseen`` — a ground truth BFCL's checker reads no differently."""
        here, there = self.entry, other.release
        subs = _substitutions(other, here)
        config = _substitute_value(other.initial_config, subs)
        gold = tuple(tuple(_substitute(c, subs) for c in turn) for turn in other.ground_truth)
        scored, seen, unseen = [], [], []
        # What the model sees that changes what it can do or is asked; the rest of ``seen`` is wording (a
        # function doc's description) or a date refresh applied alike to question and answer: a note.
        weighty = False
        # the question, and what follows it
        questions = ([" / ".join(other.user_texts(t)) for t in range(len(other.question))],
                     [" / ".join(here.user_texts(t)) for t in range(len(here.question))])
        asked = [f"question, {label}" for label in _turn_changes(*questions, there, _text_pair)]
        seen.extend(asked)
        used = {a: b for a, b in subs.items()
                if any(_substitute(text, {a: b}) != text for text in (json.dumps(other.initial_config),
                                                                      *map(" ".join, other.ground_truth)))}
        followed = [what for what, before, after, now in (
            ("initial state", other.initial_config, config, here.initial_config),
            ("ground truth", other.ground_truth, gold, here.ground_truth)) if before != now and after == now]
        refresh = bool(subs) and all(_is_date_change(a, b) for a, b in subs.items()) \
            and [_substitute(q, subs) for q in questions[0]] == questions[1]
        if used and followed:
            kind = "a date refresh" if all(_is_date_change(a, b) for a, b in used.items()) else "the same substitutions"
            seen.append(f"{kind} applied to question and {' and '.join(followed)} alike: "
                        + ", ".join(f"{a}→{b}" for a, b in used.items()))
        weighty |= bool(asked) and not refresh
        # the tools the model is given
        tools, wording = self._tool_changes(other)
        seen.extend(tools)
        weighty |= bool(tools)
        seen.extend(wording)
        # the initial state
        if tuple(other.involved_classes) != tuple(here.involved_classes):
            scored.append(f"involved classes (the classes run and compared): {', '.join(other.involved_classes)} "
                          f"on {there} → {', '.join(here.involved_classes)} here")
        if config != here.initial_config:
            before, after = _config_tree(config), _config_tree(here.initial_config)
            scored.extend(f"initial state, {_complete(c, before, after)}" for c in changes(before, after))
        # the ground truth
        if gold != here.ground_truth:
            applied = f" ({there}'s with {', '.join(f'{a}→{b}' for a, b in used.items())} applied)" if used else ""
            said = [f"ground truth{applied}, {label}" for label in _turn_changes(gold, here.ground_truth, there,
                                                                                 _calls_pair)]
            if self._checked(self._parsed(gold)) == self._checked(self.calls):
                unseen.extend(s + " — on this release's data and classes BFCL's checker gets the same state after "
                              "each turn and the same results from either" for s in said)
            else:
                scored.extend(said)
        # the classes' behaviour on the same calls
        behaviour_scored, behaviour_seen = self._class_changes(there)
        scored.extend(behaviour_scored)
        seen.extend(behaviour_seen)
        weighty |= bool(behaviour_seen)
        if scored and (here.question != other.question or config != here.initial_config or gold != here.ground_truth):
            scored.append(self._cross(other, here, f"{there}'s ground truth on this release's ({here.release}) data "
                                                   f"and classes"))
            scored.append(self._cross(here, other, f"this release's ground truth on {there}'s data and classes"))
        heads = {SCORED: f"the same calls are scored differently than on bfcl-eval {there}",
                 SEEN: f"what the model sees differs from bfcl-eval {there}",
                 UNSEEN: f"differs from bfcl-eval {there} only where nothing reads it"}
        numbered = lambda said: f" ({TURNS_SAID})" if any("turn " in s for s in said) else ""  # noqa: E731
        kinds = {SCORED: CAUTION, SEEN: CAUTION if weighty else NOTE, UNSEEN: NOTE}
        return [Finding("changed_between_releases", f"{heads[effect]}: {'; '.join(said)}{numbered(said)}",
                        kind=kinds[effect], effect=effect)
                for effect, said in ((SCORED, scored), (SEEN, seen), (UNSEEN, unseen)) if said]

    def _parsed(self, ground_truth: Sequence[Sequence[str]]) -> tuple[tuple[ToolCall, ...], ...] | None:
        try:
            return tuple(tuple(parse_call_string(c) for c in turn) for turn in ground_truth)
        except (SyntaxError, ValueError):
            return None

    def _checked(self, calls: Sequence[Sequence[ToolCall]] | None) -> list[tuple] | None:
        """What BFCL's checker reads of a ground truth, run on this entry's data and classes: per turn,
        whether it is empty, the public state after it and its results as a multiset."""
        if calls is None:
            return None
        start, traced = _run(self.benchmark, self.entry, calls)
        out, state = [], start
        for t, turn in enumerate(calls):
            done = [c for c in traced if c.turn == t]
            state = done[-1].after if done else state
            out.append((bool(turn), {p: v for p, v in state.items() if is_public(p)}, sorted(c.text for c in done)))
        return out

    def _tool_changes(self, other: Entry) -> tuple[list[str], list[str]]:
        """The function docs BFCL gives the model, per class, and when a missed function arrives: the changes
        of what the model is given (functions, parameters, result fields, types, when a missed function
        arrives), and apart those of wording only (a description's text)."""
        here, there = self.benchmark.data_of(self.entry.release), self.benchmark.data_of(other.release)
        out, wording = [], []
        for cls_name in dict.fromkeys((*other.involved_classes, *self.entry.involved_classes)):
            old = {d["name"]: d for d in there.docs.get(cls_name, [])} if cls_name in other.involved_classes else {}
            new = {d["name"]: d for d in here.docs.get(cls_name, [])} if cls_name in self.entry.involved_classes else {}
            said = [f"{name} only on {other.release}" for name in old if name not in new]
            said += [f"{name} new" for name in new if name not in old]
            reworded = []
            for name in old:
                if name in new and old[name] != new[name]:
                    for change, words_only in _doc_changes(old[name], new[name]):
                        (reworded if words_only else said).append(f"{name} {change}")
            if said:
                out.append(f"tools of {cls_name}: " + ", ".join(said))
            if reworded:
                wording.append(f"docs of {cls_name} reworded: " + ", ".join(reworded))
        for name in sorted(other.held_out.keys() | self.entry.held_out.keys()):
            before, after = other.held_out.get(name), self.entry.held_out.get(name)
            if before != after:
                given = lambda t: "from the start" if t is None else f"from turn {t + 1}"  # noqa: E731
                out.append(f"missed function {name}: given {given(before)} on {other.release}, {given(after)} here")
        return out, wording

    def _class_changes(self, there: str) -> tuple[list[str], list[str]]:
        """This release's ground truth on this entry's data, run on this release's classes and on
        ``there``'s, call by call: a call accepted on one only, or changing the state otherwise, or
        returning other values (scored); returning the same values under other key names (seen — BFCL
        compares a run's results with the ground truth's run on the same release)."""
        _, here = self._trace
        _, other = _run(self.benchmark, self.entry, self.calls, classes_of=there)
        scored, seen = [], []
        for a, b in zip(here, other):
            call = f"turn {a.turn + 1}, action {a.depth}: {a.call.render()}"
            if a.accepted != b.accepted:
                scored.append(f"{call} is {'accepted' if a.accepted else 'rejected'} here ({a.text}), "
                              f"{'accepted' if b.accepted else 'rejected'} on {there} ({b.text})")
            elif a.changes != b.changes:
                scored.append(f"{call} changes {describe_changes(a.changes, a.after) or 'nothing'} here, "
                              f"{describe_changes(b.changes, b.after) or 'nothing'} on {there}")
            elif a.text != b.text:
                renamed = _renamed_keys(_json(b.text), _json(a.text))
                if renamed is None:
                    scored.append(f"{call} returns other values: {changed_text(b.text, a.text)} ({there} → here)")
                elif not renamed:
                    seen.append(f"{call} returns the same values written otherwise: {changed_text(b.text, a.text)} "
                                f"({there} → here)")
                else:
                    seen.append(f"{call} returns the same values under other keys: "
                                + ", ".join(f"{k!r} on {there} → {n!r} here" for k, n in renamed))
        return scored, seen

    def _cross(self, gold_of: Entry, on: Entry, label: str) -> str:
        bench = self.benchmark
        turns = bench.reference_turns(gold_of)
        rollout = Rollout(DATASET, on.id, HEALTH_MODEL, f"gold_of_{gold_of.release}",
                          rollout_id_for(DATASET, HEALTH_MODEL, f"gold_of_{gold_of.release}", on.release, on.id),
                          turns, source="reference", meta={"bfcl_data": on.release})
        episode = replay(rollout, bench, with_gold=False)
        rejected = [f"{call_text(v.action)} → {_short(v.logged or v.result or 'rejected')}"
                    for v in episode.verdicts if v.action.call is not None and v.accepted is False]
        text = f"{label} scores {episode.Y}" + (f" ({episode.y_detail})" if episode.Y != 1 and episode.y_detail else "")
        if rejected:
            text += f", the classes reject {len(rejected)} call(s): " + ", ".join(rejected[:3])
        return text


# --- releases: substitutions, turns, docs -----------------------------------------------------------

TURNS_SAID = "turn numbers count from 1: turn 1 is BFCL's turn 0"
# A token: words joined by / : . - (a file name, a date, a time, a booking key); a fine token: one word.
_TOKEN = re.compile(r"\w+(?:[/:.-]\w+)*")
_FINE = re.compile(r"\w+")
_DATE_SHAPE = re.compile(r"\d{1,2}/\d{2}")  # a month and year: a card's 12/25
_YEAR = re.compile(r"(?:19|20)\d{2}")
_CALENDAR = {w.casefold() for w in (*calendar.day_name, *calendar.month_name) if w}


def _is_date_change(a: str, b: str) -> bool:
    """Whether token ``a`` becomes ``b`` by a change of years only (``2024``, ``2024-12-15``, a booking key's
    ``20241215``, a card's ``12/25``) or of day or month names."""
    fa, fb = _FINE.findall(a), _FINE.findall(b)
    differ = [(x, y) for x, y in zip(fa, fb) if x != y]

    def year(x: str, y: str, last: bool) -> bool:
        if _YEAR.fullmatch(x) and _YEAR.fullmatch(y):
            return True
        if len(x) == len(y) == 8 and x.isdigit() and y.isdigit():  # yyyymmdd, the month and day kept
            return bool(_YEAR.fullmatch(x[:4]) and _YEAR.fullmatch(y[:4])) and x[4:] == y[4:]
        return last and bool(_DATE_SHAPE.fullmatch(a) and _DATE_SHAPE.fullmatch(b))

    return len(fa) == len(fb) and bool(differ) and all(
        year(x, y, x == fa[-1]) or (x.casefold() in _CALENDAR and y.casefold() in _CALENDAR) for x, y in differ)


def _token_pairs(before: str, after: str) -> list[tuple[str, str]]:
    """The tokens replaced one for one from ``before`` to ``after``."""
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    return [(x, y) for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
            if tag == "replace" and i2 - i1 == j2 - j1 for x, y in zip(a[i1:i2], b[j1:j2]) if x != y]


def _substitutions(old: Entry, new: Entry) -> dict[str, str]:
    """Token → token, as the question changes from ``old`` to ``new`` (turns aligned), and — where the
    question's dates change — as the initial config's dates change; a token replaced two ways is left out."""
    pairs = [p for i, j in _aligned([old.user_texts(t) for t in range(len(old.question))],
                                    [new.user_texts(t) for t in range(len(new.question))]) if i is not None and j is not None
             for p in _token_pairs(" / ".join(old.user_texts(i)), " / ".join(new.user_texts(j)))]
    if any(_is_date_change(*p) for p in pairs):  # a refresh the question shows; a config's dates alone are no refresh
        pairs += [p for p in _token_pairs(json.dumps(old.initial_config, sort_keys=True),
                                          json.dumps(new.initial_config, sort_keys=True)) if _is_date_change(*p)]
    targets: dict[str, set[str]] = {}
    for a, b in pairs:
        targets.setdefault(a, set()).add(b)
    return {a: next(iter(b)) for a, b in targets.items() if len(b) == 1}


def _substitute(text: str, subs: Mapping[str, str]) -> str:
    """``text`` with each token of ``subs`` replaced — a whole token, or one word of a token (a year in
    ``2024-12-15``)."""
    if not subs:
        return text
    fine = {a: b for a, b in subs.items() if _FINE.fullmatch(a)}
    return _TOKEN.sub(lambda m: subs.get(m.group(0)) or _FINE.sub(lambda w: fine.get(w.group(0), w.group(0)),
                                                                  m.group(0)), text)


def _substitute_value(value: Any, subs: Mapping[str, str]) -> Any:
    """A config with ``subs`` applied to its strings, keys and numbers (a number stays a number)."""
    if not subs:
        return value
    if isinstance(value, str):
        return _substitute(value, subs)
    if isinstance(value, dict):
        return {_substitute_value(k, subs): _substitute_value(v, subs) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute_value(v, subs) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = _substitute(repr(value), subs)
        try:
            return value if text == repr(value) else type(value)(text)
        except ValueError:  # a number replaced by a word: the config then differs, as it should
            return text
    return value


def _aligned(old: Sequence[Any], new: Sequence[Any]) -> list[tuple[int | None, int | None]]:
    """The turns that differ, as (index in ``old``, index in ``new``), a turn present on one side only
    with None for the other: turns matched by their content, so a turn inserted or removed does not
    shift every later one."""
    out: list[tuple[int | None, int | None]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, list(map(repr, old)), list(map(repr, new)),
                                                       autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1)
        out += [(i1 + k, j1 + k) for k in range(paired)]
        out += [(i, None) for i in range(i1 + paired, i2)] + [(None, j) for j in range(j1 + paired, j2)]
    return out


def _turn_changes(old: Sequence[Any], new: Sequence[Any], there: str, pair: Any) -> list[str]:
    """Each differing turn said: ``turn 3: …`` (``turn 4 here, turn 3 on R`` where the turns moved)."""
    out = []
    for i, j in _aligned(old, new):
        if j is None:
            out.append(f"turn {i + 1} on {there} only: {pair(old[i], None)}")
        elif i is None:
            out.append(f"turn {j + 1} new: {pair(None, new[j])}")
        else:
            where = f"turn {j + 1}" if i == j else f"turn {j + 1} here, turn {i + 1} on {there}"
            out.append(f"{where}: {pair(old[i], new[j])}")
    return out


def _text_pair(a: str | None, b: str | None) -> str:
    return changed_text(a, b) if a is not None and b is not None else repr(a if b is None else b)


def _calls_pair(a: Sequence[str] | None, b: Sequence[str] | None) -> str:
    if a is None or b is None:
        return f"[{', '.join(a if b is None else b)}]"
    if Counter(a) == Counter(b):
        return f"the same calls in another order, [{', '.join(a)}] → [{', '.join(b)}]"
    gone, new = [c for c in a if c not in b], [c for c in b if c not in a]
    if len(gone) == len(new) == 1:
        return changed_text(gone[0], new[0])
    return f"[{', '.join(gone)}] → [{', '.join(new)}]"


def _complete(change: Change, before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """A config change in full: a value's change word by word, an added or removed part with every value."""
    if change.before is not None and change.after is not None:
        return f"{change.path}: {changed_text(change.before, change.after)}"
    tree, said = (after, "added") if change.before is None else (before, "removed")
    inside = ", ".join(f"{p[len(change.path):]}={v}" for p, v in tree.items()
                       if _under(p, change.path) and not v.startswith(("{", "[")))
    return f"{change.path} {said}" + (f" ({inside})" if inside else "")


def _flat(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{path}.{key}" if path else key).items()}
    return {path: value}


def _doc_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """What differs in one function's doc: a parameter or result field added or removed (with its doc),
    a type, a description (word by word), the required parameters — each with whether it is wording only
    (a description's text)."""
    units = lambda doc: {  # noqa: E731
        **{f"{named} {key}": item for section, named in (("parameters", "parameter"), ("response", "result field"))
           for key, item in doc.get(section, {}).get("properties", {}).items()},
        **{path.replace(".", " "): item for path, item in _flat({k: ({**v, "properties": {}} if isinstance(v, dict) else v)
                                                                for k, v in doc.items()}).items()
           if not path.endswith(".properties")}}
    a, b = units(old), units(new)
    out = []
    for unit in sorted(a.keys() | b.keys()):
        if unit not in b:
            out.append((f"{unit} removed (was {a[unit]!r})", False))
        elif unit not in a:
            out.append((f"{unit} added ({b[unit]!r})", False))
        elif a[unit] != b[unit]:
            x, y = _flat(a[unit]), _flat(b[unit])
            for path in sorted(x.keys() | y.keys()):
                where = f"{unit} {path}".strip().replace(".", " ")
                if x.get(path) == y.get(path):
                    continue
                if isinstance(x.get(path), str) and isinstance(y.get(path), str):
                    out.append((f"{where}: {changed_text(x[path], y[path])}", where.endswith("description")))
                elif path not in y:
                    out.append((f"{where} removed (was {x[path]!r})", False))
                elif path not in x:
                    out.append((f"{where} added ({y[path]!r})", False))
                else:
                    out.append((f"{where}: {x[path]!r} → {y[path]!r}", False))
    return out


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _renamed_keys(old: Any, new: Any) -> list[tuple[str, str]] | None:
    """The keys renamed from ``old`` to ``new`` where the two hold the same values in the same order
    (None: they differ otherwise)."""
    if isinstance(old, dict) and isinstance(new, dict):
        if len(old) != len(new):
            return None
        out = []
        for (ka, va), (kb, vb) in zip(old.items(), new.items()):
            inner = _renamed_keys(va, vb)
            if inner is None:
                return None
            out += ([(ka, kb)] if ka != kb else []) + inner
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        out = []
        for va, vb in zip(old, new):
            inner = _renamed_keys(va, vb)
            if inner is None:
                return None
            out += inner
        return out
    return [] if old == new else None


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
