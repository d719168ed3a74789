"""τ² telecom replay adapter (dataset ``tau_telecom``): both parties replayed, the agent's calls scored.

A telecom rollout is a τ rollout (:mod:`.replay`) whose user acts too: the user's calls on their own
phone ride in ``meta["user_calls"]`` (:mod:`..generation.telecom`) and are replayed, in the log's
order, before the agent's steps of the turn they came before — as transitions of the environment
(:class:`~prefix_audit.replay.contract.PartyCall`), never as the agent's actions. Their recorded
results are checked against the replay like the agent's. A rollout with neither ``user_calls`` nor
``user_turns`` follows the reference conversation (a mutant of the reference): its user acts as the
reference's does.

Each rollout's environment is tau2's ``TelecomEnvironment`` on fresh copies of the provider's
database and the user's device, set up by the task's initialization actions
(:mod:`..domain.telecom`).

**Solo mode** (``meta["solo_mode"]``, tau2's ``llm_agent_solo`` with its ``dummy_user``;
:class:`TelecomSoloSession`): there is no user. tau2 gives the agent the task's ticket and both tool
lists, the provider's and the phone's, and runs it on an environment in solo mode, which sends the
agent's call of a phone tool to the phone. Such a call is the agent's own action: exposed, validated
against the phone tool's schema, run, scored and counted in T and FED like a provider call. The
ticket opens the rollout's one turn (what it states is known from the start); no greeting precedes
the agent's first call.

Y is tau2's reward on the replayed environment, both parties' calls applied: 0 unless the
conversation ended with the user's or the agent's stop; otherwise the product over the reward basis
(telecom: ENV_ASSERTION on every task, ACTION too on 32) of: ENV_ASSERTION — every env assertion of
the task holds on the replayed environment (run as tau2 runs them, each followed by the two
parties' sync); ACTION — every gold action (the agent's and the user's) matches some call of either
party (:meth:`~..domain.data.GoldAction.matches`); DB — both databases' hashes equal those of a
fresh environment after the initial state and the gold actions (run as tau2's evaluator runs them:
each by its requestor, no sync between them). In solo mode tau2's evaluator replays the trajectory
on a solo environment and builds its gold one as usual (the gold's user actions by the user): the
same checks, Y computed the same way.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from prefix_audit.plugin import (
    AgentEnvironment,
    ModelBackend,
    PartyCall,
    Rollout,
    ToolCall,
    ToolSchema,
    ToolSpec,
    UnscorableRollout,
    structured_call,
)

from ..domain.data import GoldAction, TauTask
from ..domain.environment import tau2_agent_tools
from ..domain.telecom import USER, TelecomBackend, TelecomLive
from ..generation.conversation import ReferenceConversation, TauAgentEnvironment, TauConversation, tau_environment
from ..generation.telecom import (
    LOOKUP,
    USER_CALLS_KEY,
    DeviceUser,
    ToolModelUser,
    UserCall,
    UserCallsError,
    phone_number,
    read_user_calls,
    telecom_reference,
)
from .replay import TauBenchmark, TauSession, solo_mode

# tau2's user-simulator guidelines for a user with tools (beside the plain ones).
TOOL_GUIDELINES = "simulation_guidelines_tools.md"


# Its live environment is tau2's own with two databases (TelecomLive), not the domain's LiveEnvironment, which
# TauBenchmark's methods name (the class, ..domain.environment): the overrides that take or give one say so.
class TelecomBenchmark(TauBenchmark):
    """τ² telecom: replay of both parties, Y as tau2 scores it, the gold's reference rollouts."""

    user_acts = True

    @property
    def user_tool_names(self) -> frozenset[str]:  # type: ignore[override]  # read from the backend, not set
        return frozenset(self.backend.user_tools)

    def _backend(self) -> TelecomBackend:
        return TelecomBackend(self.domain)

    def live_environment(  # type: ignore[override]  # a TelecomLive (see the class)
            self, rollout: Rollout | None = None, task: TauTask | None = None) -> TelecomLive:
        """A fresh environment with ``task``'s initial state (the gold's: the task given), in tau2's
        solo mode for a solo-mode rollout."""
        return TelecomLive(self.backend, task, solo=rollout is not None and solo_mode(rollout.meta))

    @cached_property
    def solo_tools(self) -> dict[str, ToolSpec]:
        """The tools of a solo-mode agent: the provider's and the phone's."""
        return {name: info.spec for name, info in self.backend.solo_tools.items()}

    def _gold_environment(self, task: TauTask) -> TelecomLive:  # type: ignore[override]  # (see the class)
        live = TelecomLive(self.backend, task)
        for action in task.gold:
            live.gold_call(action)
        return live

    def db_matches_gold(self, live: TelecomLive, task: TauTask) -> bool:  # type: ignore[override]  # (see the class)
        """tau2's DB check: the provider's and the user's database both equal the gold's."""
        return live.db_fingerprint() == self.gold_fingerprint(task)

    def gold_calls(self, task: TauTask) -> tuple[ToolCall, ...]:
        """The agent's gold calls (the user's are the user's to make)."""
        return tuple(structured_call(a.name, dict(a.arguments), f"gold_{task.id}_{i}")
                     for i, a in enumerate(task.gold) if a.requestor != USER)

    def tool_universe(self) -> list[str]:
        """Every tau2 domain's agent tools and the user's phone tools (an agent calling one of the
        user's tools is a telecom agent's typical unknown-tool error)."""
        names = set(self.backend.tools) | set(self.backend.user_tools)
        for tools in tau2_agent_tools().values():
            names |= tools
        return sorted(names)

    def reference_conversation_of(self, task: TauTask) -> ReferenceConversation:
        """The gold as a conversation with the offline user (:func:`~..generation.telecom.telecom_reference`),
        on a fresh environment of the task (:meth:`reference_conversation` builds it once per task)."""
        phone = phone_number(task)
        lookups = (structured_call(LOOKUP, {"phone_number": phone}, f"lookup_{task.id}"),) if phone else ()
        return telecom_reference(task, lookups, TelecomLive(self.backend, task))

    def open_session(self, rollout: Rollout) -> TelecomSession:
        session = TelecomSoloSession if solo_mode(rollout.meta) else TelecomSession
        return session(self, self.rollout_task(rollout), rollout)

    # live episodes ---------------------------------------------------------------------------------
    def agent_environment(self, task_id: str) -> TauAgentEnvironment:
        """The agent's side of an episode: the provider's tools, on an environment with the task's
        initial state whose phone the user acts on too."""
        task = self.task(task_id)
        return TauAgentEnvironment(self.backend, task, TelecomLive(self.backend, task))

    def conversation(self, env: AgentEnvironment, user: ModelBackend | None = None) -> TauConversation:
        """The half-duplex conversation with a user who acts on their phone: the offline
        :class:`~..generation.telecom.DeviceUser`, or tau2's user simulator with the phone's tools
        when ``user`` (a model) is given."""
        env = tau_environment(env)
        task = self.task(env.task_id)
        if user is None:
            return TauConversation(env, DeviceUser(task, env.live), self.provenance)
        tools = tuple(ToolSchema(i.spec.name, i.spec.description, i.schema) for i in self.backend.user_tools.values())
        guidelines = self.user_guidelines_path.with_name(TOOL_GUIDELINES)
        return TauConversation(env, ToolModelUser(user, task, guidelines, env.live, tools), self.provenance)


class TelecomSession(TauSession):
    """One telecom rollout: the τ session, with the user's calls applied before the turns they
    precede (and those after the last turn before Y)."""

    def __init__(self, bench: TelecomBenchmark, task: TauTask, rollout: Rollout) -> None:
        super().__init__(bench, task, rollout)
        try:
            self._pending = list(self._recorded_user_calls(bench, rollout))
        except UserCallsError as exc:
            raise UnscorableRollout(str(exc)) from None
        self.party_calls: list[PartyCall] = []

    def _recorded_user_calls(self, bench: TelecomBenchmark, rollout: Rollout) -> tuple[UserCall, ...]:
        """The user's calls to replay, in order: those the rollout carries, or — for a rollout following
        the reference conversation (a mutant of it) — the reference's."""
        if USER_CALLS_KEY in rollout.meta or "user_turns" in rollout.meta or self.task.embedded_sha256 is not None:
            return read_user_calls(rollout.meta, len(rollout.turns))
        return tuple(c for c in bench.reference_conversation(self.task.id).user_calls if c.turn <= len(rollout.turns))

    def _apply_user_calls(self, before_turn: int | None) -> None:
        """Replay the user's calls that came before ``before_turn`` (None: all that are left)."""
        while self._pending and (before_turn is None or self._pending[0].turn <= before_turn):
            entry = self._pending.pop(0)
            if entry.recorded is not None and not entry.recorded.executed:  # a harness refused it: it never ran
                accepted, text = False, "not executed: the log shows the call never ran"
            elif entry.call.well_formed:
                accepted, text = self._live.run(entry.call, USER)
                self._ran.append((entry.call, USER))
            else:
                accepted, text = False, entry.call.parse_error or "unreadable call"
            self.party_calls.append(PartyCall(USER, entry.turn, entry.call, accepted, text, entry.recorded))

    def start_turn(self, turn: int) -> None:
        self._apply_user_calls(turn)

    def finish(self) -> None:
        self._apply_user_calls(None)

    def final_success(self) -> int | None:
        self.finish()
        return super().final_success()

    def _inspect_evals_success(self) -> int:
        """inspect_evals' ``telecom_scorer``: where the reward basis names ACTION, every gold action is
        found among its own party's calls (:func:`inspect_action_used`); and every env assertion holds
        on the replayed environment — whatever the conversation's end."""
        if not self.task.has_criteria:
            self.y_detail = "basis=inspect_evals; no evaluation criteria"
            return 1
        parts, y = [], 1
        if "ACTION" in self.task.reward_basis:
            agent, user = super()._trajectory_calls(), self._user_calls()
            met = sum(inspect_action_used(g, user if g.requestor == USER else agent) for g in self.task.gold)
            parts.append(f"ACTION={met}/{len(self.task.gold)}")
            y *= met == len(self.task.gold)
        held = sum(self._live.assertion(a)  # type: ignore[attr-defined]  # a TelecomLive (TelecomBenchmark)
                   for a in self.task.env_assertions)
        parts.append(f"ENV_ASSERTION={held}/{len(self.task.env_assertions)}")
        y *= held == len(self.task.env_assertions)
        self.y_detail = "basis=inspect_evals; " + "; ".join(parts)
        return int(y)

    def _user_calls(self) -> list[tuple[str, dict[str, Any]]]:
        """The user's replayed calls, as name and arguments."""
        return [(p.call.name or "", dict(p.call.kwargs)) for p in self.party_calls if p.call.well_formed]

    def _trajectory_calls(self) -> list[tuple[str, dict[str, Any]]]:
        """The agent's calls and the user's, as tau2's ACTION check reads a trajectory."""
        return super()._trajectory_calls() + self._user_calls()


class TelecomSoloSession(TelecomSession):
    """One rollout of tau2's solo mode: no user, so neither user messages nor user calls; the task's
    ticket opens the one turn; the agent's tools are the provider's and the phone's, its calls run on
    an environment in solo mode (:meth:`TelecomBenchmark.live_environment`)."""

    solo = True
    opening_messages = ()  # the solo agent's first message is its own first action: no greeting

    def __init__(self, bench: TelecomBenchmark, task: TauTask, rollout: Rollout) -> None:
        super().__init__(bench, task, rollout)
        self._tools = bench.solo_tools

    def _turn_texts(self, rollout: Rollout) -> tuple[str, ...]:
        """The ticket, as the text that opens the one turn: what the agent is given from the start."""
        if rollout.meta.get("user_turns"):
            raise UnscorableRollout("a solo-mode rollout has no user messages (meta.user_turns must be empty)")
        if len(rollout.turns) > 1:
            raise UnscorableRollout(f"a solo-mode rollout is one turn (no user message opens another), "
                                    f"got {len(rollout.turns)}")
        return (self.task.ticket or "",)[:len(rollout.turns)]

    def _recorded_user_calls(self, bench: TelecomBenchmark, rollout: Rollout) -> tuple[UserCall, ...]:
        if rollout.meta.get(USER_CALLS_KEY):
            raise UnscorableRollout(f"a solo-mode rollout has no user, so no user calls (meta.{USER_CALLS_KEY})")
        return ()


def equal_unordered(a: Any, b: Any) -> bool:
    """Python's equality (an int equals the same float), with lists compared as multisets, at any
    depth (how inspect_evals' tau2 scorer compares a call's arguments with the gold's)."""
    if a == b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(equal_unordered(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        unmatched = list(b)
        for item in a:
            match = next((k for k, other in enumerate(unmatched) if equal_unordered(item, other)), None)
            if match is None:
                return False
            unmatched.pop(match)
        return not unmatched
    return False


def inspect_action_used(gold: GoldAction, calls: list[tuple[str, dict[str, Any]]]) -> bool:
    """Whether inspect_evals' scorer finds a gold action among the calls of its party: a call of that
    tool (its name, or a name ending in ``_<name>``) with equal arguments — only those the gold's
    ``compare_args`` names where it names some, none where that list is empty; any call of
    ``transfer_to_human_agents`` counts."""
    for name, arguments in calls:
        if name != gold.name and not name.endswith(f"_{gold.name}"):
            continue
        if gold.name == "transfer_to_human_agents" or gold.compare_args == ():
            return True
        if gold.compare_args is not None:
            if equal_unordered({k: arguments.get(k) for k in gold.compare_args},
                               {k: gold.arguments.get(k) for k in gold.compare_args}):
                return True
        elif equal_unordered(arguments, dict(gold.arguments)):
            return True
    return False
