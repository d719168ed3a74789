"""Benchmark health of τ tasks (docs/definitions.md#health): airline and retail on tau2's environments,
and telecom with the user acting on their phone.

A task is audited on the data release its benchmark was opened on (:func:`.release_changes.release_label`: the tau2
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
* every trajectory our replay scores 1 is given to tau2's own evaluators (:func:`.tau2_evaluation.tau2_reward`: the
  environment, action and communicate evaluators combined as ``evaluate_simulation`` combines them
  for evaluation type ALL) before a finding is claimed. tau2's NL-assertion evaluator needs a judge
  model: an empty assertion list scores 1 there without one (as it does in tau2), but a task whose
  reward basis holds NL assertions that no judge decided gets no ``passes_doing_nothing`` or
  ``unchecked_required_action`` claim (the probe notes it in ``withheld``);
* ``changed_between_releases``: where the tasks come from a data directory, each task is compared with
  the package's own task of the same id (its ``tasks.json``, base split), one finding per effect, each
  change told as both texts (:class:`.release_changes.ReleasePair`). ``scored`` (caution): a component of tau2's reward
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_audit.core.io import files_sha256
from prefix_audit.core.records import Action
from prefix_audit.plugin import (
    CAUTION,
    NOTE,
    PARTY_CALLS_KEY,
    SCORED,
    SEEN,
    UNSEEN,
    Counterfactual,
    EpisodeResult,
    Finding,
    Rollout,
    Step,
    ToolCall,
    call_text,
    rollout_id_for,
    without_action,
)
from prefix_audit.replay.checker import replay

from ..domain import embedded as emb
from ..domain.data import BASE_SPLIT, TauDomain, TauTask, parse_task
from .release_changes import (
    EFFECT_WORDS,
    ReleasePair,
    package_release,
    package_tasks_file,
    policy_change,
    task_definitions,
)
from .tau2_evaluation import tau2_messages, tau2_reward

HEALTH_MODEL = "health"
# What the idle agent says (our wording): no call, no fact, no promise.
IDLE_TEXT = "Thank you for contacting us. Have a nice day."
HAND_OFF = "transfer_to_human_agents"
STATE_BASES = ("DB", "ENV_ASSERTION")


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
                said.append(f"DB: tau2's gold database{both} — its {n} gold action{'s' * (n != 1)} run as its "
                            f"evaluator runs them — hashes as a fresh one ({hashes})")
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
