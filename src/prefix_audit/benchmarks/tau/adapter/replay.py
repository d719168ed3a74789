"""τ-bench Airline/Retail replay adapter (datasets ``tau_airline``, ``tau_retail``).

A τ rollout is a half-duplex conversation: turn t opens with the user's t-th message and holds the
agent's messages until the next one (the orchestrator's fixed greeting is no agent action). The
user's messages are part of the rollout (``meta["user_turns"]``, one per turn); a rollout without
them is taken to follow the reference conversation that the scripted user produces (that is how
the reference rollout and its mutants are built). ``meta["termination_reason"]`` (tau2's names;
absent = ``user_stop``) says how the conversation ended. A rollout of tau2's solo mode
(``meta["solo_mode"]``: no user, the agent works from the task's ticket) is telecom's only
(:mod:`.telecom`); airline and retail refuse it, as tau2's environments of theirs refuse solo mode.

A rollout may carry its task definition (``meta["embedded_task"]``, :mod:`..domain.embedded`: ``import tau
--tasks-from-results``, and every τ-bench v1 rollout); it is then scored against that definition, not
against the task files in use (``has_task`` accepts every id; a rollout with neither is refused when
its session opens).

Per call: our own schema validation (tau2 validates nothing), reference parameters for dependency
failures, the task's user facts for information failures, and the environment's verdict through
tau2's per-call API for state consistency (:mod:`..domain.environment`, :mod:`..domain.semantics`).

Final success Y is τ's reward, recomputed without any model call:

* a conversation that ended in any other way than ``user_stop``/``agent_stop`` scores 0;
* a task without evaluation criteria scores 1 (as in tau2);
* otherwise the product over the task's reward basis of: DB — tau2's hash of the replayed database
  equals that of a fresh database after the gold actions (gold calls that fail are skipped, as tau2
  does; criteria with neither actions nor env assertions pass it, as tau2's evaluator does);
  COMMUNICATE — every ``communicate_info`` string occurs in some agent message, the orchestrator's
  greeting included (lower-cased, commas removed, as tau2 checks); NL_ASSERTION — vacuously 1
  without assertions, else the verdict of a configured judge (:class:`NlJudge`). Without a judge
  those assertions are left out and the rollout's Y basis is ``db_and_communicate_only`` (recorded
  in ``y_detail``); ACTION — every gold action matches some call of the conversation (tau2's
  ``compare_with_tool_call``: the name, and the arguments the gold compares); ENV_ASSERTION — every
  env assertion holds on the replayed environment (telecom, :mod:`.telecom`; in a domain whose
  environment has no assertion functions, an assertion makes Y unknown (None) rather than guessed).
  The DB check is taken before the env assertions, as tau2 takes it.

Benchmark health (capability "health", docs/definitions.md#health; :mod:`.health`): a benchmark audits
the one data release its tasks are — the tau2 version for the package's own tasks, the data directory's
name for a configured one — task by task; a rollout that carries its own task definition belongs to no
release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from prefix_audit.plugin import (
    PARTY_CALLS_KEY,
    AgentEnvironment,
    Benchmark,
    Finding,
    ModelBackend,
    Outcome,
    RefusedOption,
    ReplaySession,
    Rollout,
    TaskFacts,
    TaskIndex,
    ToolCall,
    ToolSpec,
    UnscorableRollout,
    probe_findings,
    rollout_id_for,
    structured_call,
)
from prefix_audit.replay.checker import primary, replay

from ..domain import embedded as emb
from ..domain import semantics as sem
from ..domain.data import PAPER_DOMAINS, TauData, TauTask
from ..domain.environment import DomainBackend, LiveEnvironment
from ..generation.conversation import (
    ModelUser,
    ReferenceConversation,
    ScriptedUser,
    TauAgentEnvironment,
    TauConversation,
    identifiers,
    reference_conversation,
    said,
    tau_environment,
    user_fact_values,
)
from .health import TauProbe, health_digest
from .release_changes import release_label

AGENT = "assistant"  # tau2's requestor of the agent's calls
Y_BASIS_FULL = "full"
Y_BASIS_NO_NL = "db_and_communicate_only"
# ``meta["reward_rule"]``: how a rollout's log scored it, where that is not tau2's reward. inspect_evals'
# tau2 scorers (airline, retail) pass a sample whose database matches the gold one (when the task lists
# actions) and that communicated every ``communicate_info`` string — whatever the reward basis, however
# the conversation ended; the database is the one the log recorded (``recorded_db_sha256``) where it has
# one, else the replayed one; the strings are looked for in what the user was shown: the agent's answer
# closing each of its turns (a message with tool calls never reaches the user) and the opening message.
REWARD_RULE_KEY = "reward_rule"
INSPECT_EVALS_RULE = "inspect_evals"
# tau2's hash of the final database the log recorded (inspect_evals keeps it in the sample's store, and
# its scorer compares that one): the DB check of inspect_evals' rule reads it where present.
RECORDED_DB_KEY = "recorded_db_sha256"
# ``meta["solo_mode"]``: a run of tau2's solo mode — no user; the agent is given the task's ticket and
# calls the user's tools itself (telecom only: :class:`.telecom.TelecomSoloSession`).
SOLO_MODE_KEY = "solo_mode"


def dataset_of(domain: str) -> str:
    return f"tau_{domain}"


def solo_mode(meta: Mapping[str, Any]) -> bool:
    """Whether a rollout is a run of tau2's solo mode (``meta["solo_mode"]``, absent: not)."""
    value = meta.get(SOLO_MODE_KEY, False)
    if not isinstance(value, bool):
        raise UnscorableRollout(f"meta.{SOLO_MODE_KEY} must be true or false, got {value!r}")
    return value


class NlJudge(Protocol):
    """Decides a task's natural-language assertions on a transcript of (role, text) pairs."""

    def __call__(self, task: TauTask, transcript: Sequence[tuple[str, str]]) -> bool: ...


def task_facts(task: TauTask, user_turns: Sequence[str], user_source: str = "simulated") -> TaskFacts:
    """Facts for one conversation: a user fact is revealed in the first turn whose user message
    states it (never given: revealed after the last turn). What the first message states is visible
    from the start. ``user_source``: who wrote those messages (a τ user is always simulated; see
    :data:`~prefix_audit.replay.contract.USER_SOURCES`)."""
    facts = {v: next((t for t, text in enumerate(user_turns) if said(v, text)), len(user_turns))
             for v in user_fact_values(task)}
    initial = frozenset(identifiers(user_turns[0])) if user_turns else frozenset()
    return TaskFacts(initial, tuple(user_turns), facts, id_prefixes=sem.ID_PREFIXES, user_source=user_source)


class TauBenchmark(Benchmark):
    """One τ domain: replay, reference rollouts, mutation facts and live conversations."""

    user_acts = False  # whether the domain's user has tools of their own (telecom's adapter: yes)
    user_tool_names: frozenset[str] = frozenset()  # those tools' names

    def __init__(self, data: TauData, domain: str, nl_judge: NlJudge | None = None,
                 task_ids: Sequence[str] | None = None, tasks_from_results: bool = False,
                 installed_tasks: bool = False) -> None:
        if domain not in data.domains:
            raise KeyError(f"domain {domain!r} not loaded (have {', '.join(data.domains)})")
        self.data = data
        self.domain = data.domains[domain]
        self.dataset = dataset_of(domain)
        self.nl_judge = nl_judge
        # How ``import tau`` treats the task definitions a tau2 results file carries: by default it
        # embeds in the rollout (:mod:`..domain.embedded`) those that differ from ours in what their reward
        # reads; ``--tasks-from-results`` embeds every one, ``--installed-tasks`` none (a simulation
        # whose task differs is refused).
        if tasks_from_results and installed_tasks:
            raise RefusedOption("--tasks-from-results and --installed-tasks contradict each other")
        self.tasks_from_results = tasks_from_results
        self.installed_tasks = installed_tasks
        self.backend = self._backend()
        self.tasks = TaskIndex(task_ids if task_ids is not None else list(self.domain.tasks))
        # Keyed by task id and embedded definition (None: the task files' own task).
        self._gold_hash: dict[tuple[str, str | None], str] = {}
        self._gold_fingerprint: dict[tuple[str, str | None], str] = {}
        self._reference: dict[str, ReferenceConversation] = {}

    def _backend(self) -> Any:
        """The domain's tau2 classes and declared tools (a domain with other classes gives its own)."""
        return DomainBackend(self.domain)

    # tasks ------------------------------------------------------------------------------------
    def task(self, task_id: str) -> TauTask:
        return self.domain.tasks[task_id]

    def has_task(self, task_id: str) -> bool:
        """Every id: a rollout may carry its own task definition (:mod:`..domain.embedded`); one that does
        not and names no task of ours is refused when its session opens."""
        return True

    def rollout_task(self, rollout: Rollout) -> TauTask:
        """The task a rollout is scored against: the one it carries, else ours of its id."""
        task = emb.embedded_task(rollout.meta, rollout.task_id, self.domain.name)
        if task is not None:
            return task
        if rollout.task_id not in self.tasks:
            raise UnscorableRollout.unknown_task(rollout)
        return self.task(rollout.task_id)

    @property
    def provenance(self) -> dict[str, str]:
        """The tau2 version and the sha256 of the task, database and policy files: put it in every
        rollout's meta (sessions refuse a rollout made against other task or database files)."""
        return dict(self.domain.provenance)

    def task_provenance(self) -> dict[str, Any]:
        """The task list's provenance, and the tasks whose Y leaves NL assertions out."""
        return {"dataset": self.dataset, **self.provenance, "tasks_file": self.domain.files.tasks_origin,
                "nl_unjudged_task_ids": self.nl_unjudged_task_ids()}

    def nl_unjudged_task_ids(self) -> list[str]:
        """Tasks whose reward includes NL assertions that only a judge model can decide; without one
        their Y basis is ``db_and_communicate_only``."""
        if self.nl_judge is not None:
            return []
        return [t for t in self.tasks if _needs_judge(self.task(t))]

    # tools ------------------------------------------------------------------------------------
    @cached_property
    def tools(self) -> dict[str, ToolSpec]:
        return {name: info.spec for name, info in self.backend.tools.items()}

    @cached_property
    def _universe(self) -> list[str]:
        names: set[str] = set(self.backend.tools)
        for other in self.data.domains:
            if other != self.domain.name:
                names |= set(DomainBackend(self.data.domains[other]).tools)
        return sorted(names)

    def tool_universe(self) -> list[str]:
        """Tool names of every loaded τ domain (another domain's tools are unknown here)."""
        return self._universe

    def precondition_guards(self) -> dict[str, frozenset[str]]:
        return {}  # τ's tools enforce no explicit preconditions (see .semantics)

    def deletion_call(self, spec: ToolSpec, param: str, value: Any) -> ToolCall | None:
        return None  # nothing in τ deletes an object

    # gold ---------------------------------------------------------------------------------------
    def gold_calls(self, task: TauTask) -> tuple[ToolCall, ...]:
        return tuple(structured_call(a.name, dict(a.arguments), f"gold_{task.id}_{i}") for i, a in enumerate(task.gold))

    def live_environment(self, rollout: Rollout | None = None, task: TauTask | None = None) -> LiveEnvironment:
        """A fresh live environment: for replaying ``rollout`` of ``task``, or the gold when None (a
        dataset whose tools behave otherwise than tau2's, or whose tasks set up a state, gives its own)."""
        return LiveEnvironment(self.backend)

    def _gold_environment(self, task: TauTask) -> LiveEnvironment:
        """A fresh database after the gold actions (failing ones change nothing more, as in tau2)."""
        live = self.live_environment()
        for action in task.gold:
            live.call(action.name, action.arguments)
        return live

    def gold_fingerprint(self, task: TauTask) -> str:
        key = (task.id, task.embedded_sha256)
        if key not in self._gold_fingerprint:
            self._gold_fingerprint[key] = self._gold_environment(task).db_fingerprint()
        return self._gold_fingerprint[key]

    def gold_db_hash(self, task: TauTask) -> str:
        """tau2's hash of the gold database (built when first needed)."""
        key = (task.id, task.embedded_sha256)
        if key not in self._gold_hash:
            self._gold_hash[key] = self._gold_environment(task).db_hash()
        return self._gold_hash[key]

    def db_matches_gold(self, live: LiveEnvironment, task: TauTask) -> bool:
        """tau2's DB check: the hash of the replayed database equals that of the gold one (hashing costs
        the records calls reached: :meth:`~..domain.environment.DomainBackend.db_hash_of`)."""
        return live.db_hash() == self.gold_db_hash(task)

    def reference_conversation(self, task_id: str) -> ReferenceConversation:
        if task_id not in self._reference:
            self._reference[task_id] = self.reference_conversation_of(self.task(task_id))
        return self._reference[task_id]

    def reference_conversation_of(self, task: TauTask) -> ReferenceConversation:
        """The reference conversation of any definition of a task (another release's, say), built anew."""
        return reference_conversation(task, self.gold_calls(task))

    def reference_rollout(self, task_id: str) -> Rollout:
        """The gold actions as the reference conversation with the scripted user (see
        :func:`~..generation.conversation.reference_conversation`): one call per step, facts asked for when first
        needed, and a closing message that states every ``communicate_info`` fact (and, where the user
        acts, their calls: ``meta["user_calls"]``)."""
        return self._as_reference_rollout(task_id, self.reference_conversation(task_id))

    def reference_rollout_of(self, task: TauTask) -> Rollout:
        """The reference rollout of any definition of a task (scored against ours of its id unless the
        caller embeds a definition in its meta)."""
        return self._as_reference_rollout(task.id, self.reference_conversation_of(task))

    def _as_reference_rollout(self, task_id: str, convo: ReferenceConversation) -> Rollout:
        acting = {PARTY_CALLS_KEY: [c.to_json() for c in convo.user_calls]} if convo.user_calls else {}
        meta = {"user_turns": list(convo.user_turns), **acting, "termination_reason": "user_stop", **self.provenance}
        return Rollout(self.dataset, task_id, "ground_truth", "reference",
                       rollout_id_for(self.dataset, "ground_truth", "reference", task_id), convo.turns,
                       source="reference", meta=meta)

    # sessions and generation ---------------------------------------------------------------------
    def open_session(self, rollout: Rollout) -> TauSession:
        return TauSession(self, self.rollout_task(rollout), rollout)

    def agent_environment(self, task_id: str) -> TauAgentEnvironment:
        return TauAgentEnvironment(self.backend, self.task(task_id))

    def scripted_user(self, task_id: str) -> ScriptedUser:
        return ScriptedUser(self.task(task_id))

    def conversation(self, env: AgentEnvironment, user: ModelBackend | None = None) -> TauConversation:
        """The half-duplex conversation of one episode: with the scripted user, or with a model as
        user simulator when ``user`` is given."""
        env = tau_environment(env)
        task = self.task(env.task_id)
        simulator = ModelUser(user, task, self.user_guidelines_path) if user is not None else ScriptedUser(task)
        return TauConversation(env, simulator, self.provenance)

    # capability "health" (docs/definitions.md#health, :mod:`.health`) ------------------------------------
    @cached_property
    def data_release(self) -> str:
        """The data release this benchmark's tasks are (:func:`.health.release_label`)."""
        return release_label(self.domain)

    def health_releases(self) -> Sequence[str]:
        return [self.data_release]

    def release_tasks(self, release: str) -> Sequence[str]:
        self._check_release(release)
        return list(self.domain.tasks)

    def release_of(self, rollout: Rollout) -> str | None:
        """None for a rollout scored against the task definition it carries; else this release."""
        return None if emb.KEY in rollout.meta else self.data_release

    def task_health(self, task_id: str, release: str) -> list[Finding]:
        self._check_release(release)
        return probe_findings(TauProbe(self, self.domain.tasks[task_id], release))

    def health_digest(self, release: str) -> str | None:
        """None with a judge model: its verdicts on NL assertions are no function of the files."""
        self._check_release(release)
        return health_digest(self.domain, self.data.package) if self.nl_judge is None else None

    def _check_release(self, release: str) -> None:
        if release != self.data_release:
            raise KeyError(f"{self.dataset} audits data release {self.data_release!r}, not {release!r}")

    @cached_property
    def user_guidelines_path(self) -> Path:
        """tau2's user-simulator guidelines (for :class:`~..generation.conversation.ModelUser`)."""
        from tau2.utils.utils import DATA_DIR

        return Path(DATA_DIR) / "tau2" / "user_simulator" / "simulation_guidelines.md"


def _needs_judge(task: TauTask) -> bool:
    return "NL_ASSERTION" in task.reward_basis and bool(task.nl_assertions)


def _user_turns(bench: TauBenchmark, task: TauTask, rollout: Rollout) -> tuple[str, ...]:
    recorded = rollout.meta.get("user_turns")
    if recorded is None and task.embedded_sha256 is not None:
        raise UnscorableRollout("a rollout with an embedded task needs meta.user_turns (there is no reference "
                                "conversation of its task)")
    if recorded is None:
        turns = bench.reference_conversation(task.id).user_turns
    elif isinstance(recorded, list) and all(isinstance(t, str) for t in recorded):
        turns = tuple(recorded)
    else:
        raise UnscorableRollout("meta.user_turns must be a list of strings (the user's message of each turn)")
    if len(turns) < len(rollout.turns):
        raise UnscorableRollout(f"rollout has {len(rollout.turns)} turns but {len(turns)} user messages"
                                + ("" if recorded is not None else " (no meta.user_turns; the reference "
                                   "conversation has that many)"))
    return turns[:len(rollout.turns)]


class TauSession(ReplaySession):
    """One rollout's fresh environment, facts and the inputs of Y. Every tool is exposed in every turn, and
    user facts follow the turn through ``facts``; τ states no precondition and deletes nothing."""

    termination_reasons = sem.TERMINATION_REASONS  # the names meta["termination_reason"] may take
    normal_terminations = sem.NORMAL_TERMINATIONS  # those after which the reward is computed
    solo = False  # a session of tau2's solo mode (telecom's TelecomSoloSession)
    # The agent messages of τ's trajectory before the agent's first action: the orchestrator's greeting
    # (no scored action; tau2's communicate check reads it).
    opening_messages: tuple[str, ...] = (sem.FIRST_AGENT_MESSAGE,)

    def __init__(self, bench: TauBenchmark, task: TauTask, rollout: Rollout) -> None:
        self.bench = bench
        self.task = task
        if solo_mode(rollout.meta) and not self.solo:
            raise UnscorableRollout(f"a solo-mode rollout, but tau2's {bench.domain.name} has no solo mode "
                                    f"(its get_environment refuses solo_mode)")
        self.user_turns = self._turn_texts(rollout)
        # the messages the rollout recorded, or else those of the reference conversation (_user_turns)
        self.facts = task_facts(task, self.user_turns,
                                "simulated" if rollout.meta.get("user_turns") is not None else "reference")
        self._rollout = rollout
        self._live = bench.live_environment(rollout, task)
        # the calls that reached the live environment, as they reached it, with who made them
        self._ran: list[tuple[ToolCall, str]] = []
        self._tools = bench.tools
        termination = rollout.meta.get("termination_reason", "user_stop")
        if not isinstance(termination, str) or termination not in self.termination_reasons:
            raise UnscorableRollout(f"unknown termination_reason {termination!r}")
        self.termination = termination
        if rollout.meta.get(REWARD_RULE_KEY, INSPECT_EVALS_RULE) != INSPECT_EVALS_RULE:
            raise UnscorableRollout(f"unknown {REWARD_RULE_KEY} {rollout.meta[REWARD_RULE_KEY]!r} "
                                    f"(known: {INSPECT_EVALS_RULE}; absent: tau2's reward)")
        self.y_basis = Y_BASIS_FULL
        self.y_detail: str | None = None
        for key in ("tasks_sha256", "db_sha256"):  # recorded by the importer and rollout generation
            if key in rollout.meta and rollout.meta[key] != bench.domain.provenance[key]:
                raise UnscorableRollout(f"rollout was made against {key} {str(rollout.meta[key])[:12]}, "
                                        f"this {bench.dataset} data has {bench.domain.provenance[key][:12]}")

    def _turn_texts(self, rollout: Rollout) -> tuple[str, ...]:
        """The text that opens each turn: the user's message."""
        return _user_turns(self.bench, self.task, rollout)

    @property
    def live(self) -> LiveEnvironment:
        """The rollout's live environment (its state after the calls executed so far)."""
        return self._live

    def finish(self) -> None:
        """Apply what the conversation does after the agent's last action (telecom: the user's calls
        after the last turn); :meth:`final_success` does it first."""

    def exposed_tools(self) -> Mapping[str, ToolSpec]:
        return self._tools

    def known_tool(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def execute(self, call: ToolCall) -> Outcome:
        if not call.well_formed:
            return Outcome(False, None, call.parse_error)
        accepted, text = self._live.run(call)
        self._ran.append((call, AGENT))
        return Outcome(True, text) if accepted else Outcome(False, None, text, missing=sem.names_nothing(text))

    def holds(self, values: Sequence[Any]) -> bool:
        """Whether one record of the live database holds every value (attribution)."""
        return self._live.holds(values)

    def dry_execute(self, call: ToolCall) -> Outcome:
        """τ's verdict on ``call`` in a scratch environment brought to the live one's state by
        running the same calls again (τ is deterministic); the live environment is untouched."""
        live, ran = self._live, list(self._ran)
        self._live = self.bench.live_environment(self._rollout, self.task)
        try:
            for done, requestor in ran:
                self._live.run(done, requestor)
            outcome = self.execute(call)
        finally:
            self._live, self._ran = live, ran
        return replace(outcome, executed=False)

    def complete(self) -> Outcome:
        return Outcome(True)  # a text message may end the agent's turn at any point in τ

    # final success --------------------------------------------------------------------------------
    def _agent_texts(self) -> list[str]:
        """Every agent message with text, the opening ones (:attr:`opening_messages`) first: they are
        no scored actions, but agent messages of τ's trajectory, which tau2's communicate check reads."""
        return [*self.opening_messages] + [step.text for turn in self._rollout.turns for step in turn if step.text]

    def _transcript(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for user_text, turn in zip(self.user_turns, self._rollout.turns, strict=False):
            out.append(("user", user_text))
            for step in turn:
                out += [("assistant", f"[tool call] {c.render()}") for c in step.calls]
                if step.text:
                    out.append(("assistant", step.text))
        return out

    def _inspect_evals_success(self) -> int:
        if not self.task.has_criteria:
            self.y_detail = f"basis={INSPECT_EVALS_RULE}; no evaluation criteria"
            return 1
        parts = ["DB=1(no actions to compare)"]
        db = True
        recorded = self._rollout.meta.get(RECORDED_DB_KEY)
        if self.task.db_compared and isinstance(recorded, str):
            db = recorded == self.bench.gold_db_hash(self.task)
            parts = [f"DB={int(db)}(the database the log recorded)"]
        elif self.task.db_compared:
            db = self.bench.db_matches_gold(self._live, self.task)
            parts = [f"DB={int(db)}"]
        also = self._rollout.meta.get("communicate_also_reads")
        shown = [t for t in also if isinstance(t, str)] if isinstance(also, list) else []
        shown += [turn[-1].text for turn in self._rollout.turns if turn and not turn[-1].calls and turn[-1].text]
        texts = "\n".join(shown).lower().replace(",", "")
        met = sum(info.lower() in texts for info in self.task.communicate_info)
        parts.append(f"COMMUNICATE={met}/{len(self.task.communicate_info)}")
        self.y_detail = f"basis={INSPECT_EVALS_RULE}; " + "; ".join(parts)
        return int(db and met == len(self.task.communicate_info))

    def final_success(self) -> int | None:
        if self._rollout.meta.get(REWARD_RULE_KEY) == INSPECT_EVALS_RULE:
            return self._inspect_evals_success()
        if self.termination not in self.normal_terminations:
            self.y_detail = f"basis={self.y_basis}; premature termination: {self.termination}"
            return 0
        if not self.task.has_criteria:
            self.y_detail = f"basis={self.y_basis}; no evaluation criteria"
            return 1
        parts: list[str] = []
        y = 1
        # tau2 compares the databases before it runs the env assertions (whose functions sync the two
        # parties' state afterwards): the DB check is taken first, whatever the basis order.
        db_match = self.bench.db_matches_gold(self._live, self.task) \
            if "DB" in self.task.reward_basis and self.task.db_compared else None
        for basis in self.task.reward_basis:
            checked = self._basis_check(basis, db_match)
            if checked is None:
                self.y_detail = f"basis=unsupported; reward basis {basis} is not implemented for {self.task.domain}"
                return None
            part, met = checked
            parts.append(part)
            y *= met
        self.y_detail = f"basis={self.y_basis}; " + "; ".join(parts)
        return int(y)

    def _basis_check(self, basis: str, db_match: bool | None) -> tuple[str, bool] | None:
        """One reward basis: its part of ``y_detail`` and whether it is met (None: not implemented here)."""
        if basis == "DB":
            return ("DB=1(no actions or env assertions to compare)", True) if db_match is None \
                else (f"DB={int(db_match)}", db_match)
        if basis == "COMMUNICATE":
            texts = [t.lower().replace(",", "") for t in self._agent_texts()]
            met = sum(any(info.lower() in t for t in texts) for info in self.task.communicate_info)
            return f"COMMUNICATE={met}/{len(self.task.communicate_info)}", met == len(self.task.communicate_info)
        if basis == "NL_ASSERTION":
            if not self.task.nl_assertions:
                return "NL_ASSERTION=none", True
            if self.bench.nl_judge is None:
                self.y_basis = Y_BASIS_NO_NL
                return f"NL_ASSERTION=unjudged({len(self.task.nl_assertions)})", True
            verdict = bool(self.bench.nl_judge(self.task, self._transcript()))
            return f"NL_ASSERTION={int(verdict)}", verdict
        if basis == "ACTION":
            calls = self._trajectory_calls()
            met = sum(any(gold.matches(name, arguments) for name, arguments in calls) for gold in self.task.gold)
            return f"ACTION={met}/{len(self.task.gold)}", met == len(self.task.gold)
        if basis == "ENV_ASSERTION" and not self.task.env_assertions:
            return "ENV_ASSERTION=none", True
        if basis == "ENV_ASSERTION" and hasattr(self._live, "assertion"):
            held = sum(self._live.assertion(a) for a in self.task.env_assertions)
            return f"ENV_ASSERTION={held}/{len(self.task.env_assertions)}", held == len(self.task.env_assertions)
        return None

    def _trajectory_calls(self) -> list[tuple[str, dict[str, Any]]]:
        """Every tool call of the conversation as tau2's ACTION check reads them, the user's too
        (name and arguments; positional arguments bound in the declared order)."""
        out = []
        for turn in self._rollout.turns:
            for step in turn:
                for call in step.calls:
                    if call.well_formed:
                        spec = self._tools.get(call.name or "")
                        bound = dict(zip(spec.positional_order, call.args, strict=False)) if spec else {}
                        out.append((call.name or "", bound | dict(call.kwargs)))
        return out


def load_benchmarks(data: TauData, nl_judge: NlJudge | None = None) -> dict[str, TauBenchmark]:
    """The airline and retail datasets on one loaded tau2/data source."""
    return {dataset_of(d): TauBenchmark(data, d, nl_judge) for d in PAPER_DOMAINS if d in data.domains}


@dataclass(frozen=True)
class GoldReplay:
    """One task's gold actions replayed as its reference rollout."""

    task_id: str
    T: int | None  # None (with FED): as in EpisodeResult, an infrastructure failure
    FED: int | None
    category: str | None
    failure: str | None  # the primary first failure's code and detail
    rejected_calls: int  # gold calls the environment rejected (anywhere in the rollout)
    Y: int | None
    y_detail: str | None


def gold_audit(bench: TauBenchmark) -> list[GoldReplay]:
    """Replay every task's gold; FED = T + 1 where the gold is fully executable. Gold is not assumed
    error-free: τ retail gold includes calls that fail by design, and older task revisions list
    writes without the look-ups that would make their ids available (dependency failures)."""
    rows = []
    for task_id in bench.task_ids():
        ep = replay(bench.reference_rollout(task_id), bench, with_gold=False)
        ff = ep.first_failure
        main = primary(ff.failures) if ff else None
        rows.append(GoldReplay(task_id, ep.T, ep.FED, ep.category, f"{main.code}: {main.detail}" if main else None,
                               sum(v.accepted is False for v in ep.verdicts), ep.Y, ep.y_detail))
    return rows
