"""Benchmark health of BFCL multi-turn entries (docs/definitions.md#health), on bfcl-eval's own environment classes.

Per entry of a pinned data release (:class:`BfclProbe`, run by
:func:`prefix_audit.replay.health.probe_findings`), everything from execution:

* the ground truth replayed as the reference rollout (its calls on the release's classes, Y by BFCL's
  checker as :mod:`.replay` reproduces it) and an agent that answers every turn without a call;
* the ground truth run call by call on fresh instances (:func:`_run`): each call's result and what it
  changed, as a flattened state tree (:func:`.state_diff.state_tree`: ``Class.attr['key'].attr`` paths, an object
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

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from prefix_audit.plugin import (
    CAUTION,
    NOTE,
    SCORED,
    SEEN,
    UNSEEN,
    Counterfactual,
    EpisodeResult,
    Finding,
    Rollout,
    ToolCall,
    call_text,
    changed_text,
    parse_call_string,
    rollout_id_for,
    without_action,
)
from prefix_audit.replay.checker import replay

from .data import DATASET, Entry
from .loader import instance_names, invoke, method_table
from .release_diff import (
    TURNS_SAID,
    calls_pair,
    doc_changes,
    is_date_change,
    parsed_json,
    renamed_keys,
    substitute,
    substitute_value,
    substitutions,
    text_pair,
    turn_changes,
)
from .state_diff import (
    Change,
    changes,
    config_tree,
    describe_changes,
    full_change,
    is_public,
    quoted_text,
    shortened,
    state_tree,
)
from .transcription import (
    TextSource,
    normalise,
    quoted_spans,
    replace_string,
    string_arguments,
    strings_in,
    text_change,
    transcribes,
    words,
)

HEALTH_MODEL = "health"


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


def _public_part(tree: Mapping[str, str]) -> dict[str, str]:
    """The paths of a state tree that BFCL's state check compares (public attributes only)."""
    return {p: v for p, v in tree.items() if is_public(p)}


def _given_from(turn: int | None) -> str:
    """When a missed function is given to the model: at the start, or from a (0-based) turn."""
    return "from the start" if turn is None else f"from turn {turn + 1}"


def _turns_said(said: Sequence[str]) -> str:
    """How turns are numbered, where ``said`` names one."""
    return f" ({TURNS_SAID})" if any("turn " in s for s in said) else ""


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
        said = []
        if not any(c.public for c in removed.changes):
            said.append("it changes only private attributes, which BFCL's state check does not compare "
                        "(public attributes only)")
        else:
            gold_after = {t.depth: t.after for t in gold}
            later = [t for t in without if t.depth > removed.depth and t.turn == removed.turn]
            same = next((t for t in later if _public_part(t.after) == _public_part(gold_after[t.depth])), None)
            if same is not None:
                made = [c for c in same.changes if c.public]
                said.append(f"without it, turn {same.turn + 1}, action {same.depth}: {shortened(same.call.render())} "
                            f"makes {describe_changes(made, same.after) if made else 'no change'} and the public "
                            f"state BFCL compares is the gold's again")
        stand_in = next((t for t in without if t.turn <= removed.turn and t.text == removed.text), None)
        if stand_in is not None:
            said.append(f"its result {quoted_text(removed.text, 60)} is also the result of turn {stand_in.turn + 1}, "
                        f"action {stand_in.depth}: {shortened(stand_in.call.render())} (BFCL's response check "
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
        rest = "; ".join(f"turn {t + 1}: " + (", ".join(map(shortened, self.entry.ground_truth[t])) or "no call")
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
        initial = [TextSource(f"the initial value {where}", text)
                   for cls_name, attrs in self._initial_public().items() for key, value in attrs.items()
                   for where, text in strings_in(value, f"{cls_name}.{key}")]
        sources: list[TextSource] = list(initial)
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
                    sources.append(TextSource(f"the user's message of turn {turns_told + 1}", text))
                    joined.append(normalise(text))
                    sources.extend(TextSource(f"the text the user quotes in turn {turns_told + 1}", q, True)
                                   for q in quoted_spans(text))
            pool = "\x00".join(joined)
            for param, literal in string_arguments(action.call):
                if not words(literal) or normalise(literal) in pool:
                    continue
                finding = self._transcription(gold, action, param, literal, sources)
                if finding is not None:
                    found.append(finding)
            done = by_depth.get(action.index)
            if done is not None:  # what this call makes available to the calls after it
                where = f"the result of {call_text(action)}"
                sources.append(TextSource(where, done.text))
                sources.extend(TextSource(f"{where}, at {path}" if path else where, text)
                               for path, text in strings_in(done.value) if text != done.text)
                joined.append(normalise(done.text))
                joined.extend(normalise(text) for _, text in strings_in(done.value))
            for _, text in string_arguments(action.call):
                sources.append(TextSource(f"what {call_text(action)} wrote", text))
                joined.append(normalise(text))
        return found

    def _initial_public(self) -> dict[str, dict[str, Any]]:
        loaded = self.benchmark.loader_of(self.entry).instantiate(self.entry)
        return {c: {k: v for k, v in vars(i).items() if not k.startswith("_")} for c, i in loaded.items()}

    def _transcription(self, gold: EpisodeResult, action: Any, param: str, literal: str,
                       sources: Sequence[TextSource]) -> Finding | None:
        for source in reversed(sources):  # the nearest first
            how = transcribes(literal, source)
            if how is None:
                continue
            call = action.call
            faithful = replace(call, args=replace_string(call.args, literal, source.text),
                               kwargs=replace_string(call.kwargs, literal, source.text), raw=None)
            episode = replay(self._with_call(gold.rollout, action, faithful), self.benchmark,
                             with_gold=False)
            if episode.Y == 1:
                return None  # BFCL's check does not tell the two texts apart
            told = min(action.turn, len(self.entry.question) - 1) + 1
            return Finding("answer_unreachable",
                           f"{call_text(action)} writes {param}={quoted_text(literal)}, which no source holds (the "
                           f"results of earlier gold calls, the initial state, what earlier gold calls wrote, the "
                           f"user's messages of {'turn 1' if told == 1 else f'turns 1–{told}'}, the function docs); "
                           f"{source.where} holds {quoted_text(source.text)} — {how} "
                           f"({text_change(source.text, literal)}): the gold transcribes it changed, and the gold "
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
        releases: list[str] = getattr(bench, "releases", lambda: [])()
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
        subs = substitutions(other, here)
        config = substitute_value(other.initial_config, subs)
        gold = tuple(tuple(substitute(c, subs) for c in turn) for turn in other.ground_truth)
        scored: list[str] = []
        seen: list[str] = []
        unseen: list[str] = []
        # What the model sees that changes what it can do or is asked; the rest of ``seen`` is wording (a
        # function doc's description) or a date refresh applied alike to question and answer: a note.
        weighty = False
        # the question, and what follows it
        questions = ([" / ".join(other.user_texts(t)) for t in range(len(other.question))],
                     [" / ".join(here.user_texts(t)) for t in range(len(here.question))])
        asked = [f"question, {label}" for label in turn_changes(*questions, there, text_pair)]
        seen.extend(asked)
        used = {a: b for a, b in subs.items()
                if any(substitute(text, {a: b}) != text for text in (json.dumps(other.initial_config),
                                                                      *map(" ".join, other.ground_truth)))}
        followed = [what for what, before, after, now in (
            ("initial state", other.initial_config, config, here.initial_config),
            ("ground truth", other.ground_truth, gold, here.ground_truth)) if before != now and after == now]
        refresh = bool(subs) and all(is_date_change(a, b) for a, b in subs.items()) \
            and [substitute(q, subs) for q in questions[0]] == questions[1]
        if used and followed:
            kind = "a date refresh" if all(is_date_change(a, b) for a, b in used.items()) else "the same substitutions"
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
            before, after = config_tree(config), config_tree(here.initial_config)
            scored.extend(f"initial state, {full_change(c, before, after)}" for c in changes(before, after))
        # the ground truth
        if gold != here.ground_truth:
            applied = f" ({there}'s with {', '.join(f'{a}→{b}' for a, b in used.items())} applied)" if used else ""
            said = [f"ground truth{applied}, {label}" for label in turn_changes(gold, here.ground_truth, there,
                                                                                 calls_pair)]
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
        kinds = {SCORED: CAUTION, SEEN: CAUTION if weighty else NOTE, UNSEEN: NOTE}
        return [Finding("changed_between_releases", f"{heads[effect]}: {'; '.join(said)}{_turns_said(said)}",
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
        out = []
        state: Mapping[str, str] = start
        for t, turn in enumerate(calls):
            done = [c for c in traced if c.turn == t]
            state = done[-1].after if done else state
            out.append((bool(turn), _public_part(state), sorted(c.text for c in done)))
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
            reworded: list[str] = []
            for name in old:
                if name in new and old[name] != new[name]:
                    for change, words_only in doc_changes(old[name], new[name]):
                        (reworded if words_only else said).append(f"{name} {change}")
            if said:
                out.append(f"tools of {cls_name}: " + ", ".join(said))
            if reworded:
                wording.append(f"docs of {cls_name} reworded: " + ", ".join(reworded))
        for name in sorted(other.held_out.keys() | self.entry.held_out.keys()):
            before, after = other.held_out.get(name), self.entry.held_out.get(name)
            if before != after:
                out.append(f"missed function {name}: given {_given_from(before)} on {other.release}, "
                           f"{_given_from(after)} here")
        return out, wording

    def _class_changes(self, there: str) -> tuple[list[str], list[str]]:
        """This release's ground truth on this entry's data, run on this release's classes and on
        ``there``'s, call by call: a call accepted on one only, or changing the state otherwise, or
        returning other values (scored); returning the same values under other key names (seen — BFCL
        compares a run's results with the ground truth's run on the same release)."""
        _, here = self._trace
        _, other = _run(self.benchmark, self.entry, self.calls, classes_of=there)
        scored, seen = [], []
        for a, b in zip(here, other, strict=True):  # the same calls traced on each
            call = f"turn {a.turn + 1}, action {a.depth}: {a.call.render()}"
            if a.accepted != b.accepted:
                scored.append(f"{call} is {'accepted' if a.accepted else 'rejected'} here ({a.text}), "
                              f"{'accepted' if b.accepted else 'rejected'} on {there} ({b.text})")
            elif a.changes != b.changes:
                scored.append(f"{call} changes {describe_changes(a.changes, a.after) or 'nothing'} here, "
                              f"{describe_changes(b.changes, b.after) or 'nothing'} on {there}")
            elif a.text != b.text:
                renamed = renamed_keys(parsed_json(b.text), parsed_json(a.text))
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
        rejected = [f"{call_text(v.action)} → {shortened(v.logged or v.result or 'rejected')}"
                    for v in episode.verdicts if v.action.call is not None and v.accepted is False]
        text = f"{label} scores {episode.Y}" + (f" ({episode.y_detail})" if episode.Y != 1 and episode.y_detail else "")
        if rejected:
            text += f", the classes reject {len(rejected)} call(s): " + ", ".join(rejected[:3])
        return text


__all__ = ["BfclProbe"]
