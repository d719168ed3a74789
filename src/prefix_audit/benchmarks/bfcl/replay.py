"""BFCL-v3 multi-turn replay: the adapter (dataset ``bfcl_v3``) and one rollout's session.

Final success Y follows BFCL's evaluation runner and multi-turn checker: a rollout with a
different number of turns than the entry is force-terminated (Y = 0); a step BFCL's runner cannot
decode, or decodes to no call, executes nothing (the importer gives it no call, see
:mod:`.result_entry`); per turn with a non-empty ground truth, the model must have a decoded step with
calls; the public attributes of its instances must equal those of instances driven by the ground
truth; and the ground truth's execution results must be contained (as a multiset) in the model's
results so far. A rollout whose
log was scored by inspect_evals' multi-turn scorer (``meta["reward_rule"]``, Inspect AI logs) gets
that scorer's Y instead (:data:`REWARD_RULE_KEY`).
"""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

from prefix_audit.core.io import files_sha256
from prefix_audit.plugin import (
    Benchmark,
    Finding,
    Outcome,
    ReplaySession,
    Rollout,
    Step,
    TaskFacts,
    TaskIndex,
    TaskSample,
    ToolCall,
    ToolSpec,
    UnscorableRollout,
    parse_call_string,
    probe_findings,
    rollout_id_for,
)
from prefix_audit.replay.values import argument_values, mentions, scalars

from . import semantics as sem
from .data import DATASET, BfclData, Entry, data_files, id_order, sample_task_ids
from .environment import BfclAgentEnvironment
from .health import BfclProbe
from .loader import ClassLoader, class_files, instance_names, invoke, method_table, public_state
from .semantics import json_schema_of

# ``meta["reward_rule"]``: how a rollout's log scored it, where that is not BFCL's own checker.
# inspect_evals' multi-turn scorer: the public state of the instances after the model's executed calls
# equals that after the whole ground truth (checked once, after the last turn), and for every turn the
# ground truth's results of that turn are contained, as a multiset of values, in the model's results so
# far; a method that raises gives ``{"error": "Error executing <name>: <exception>"}`` on either side.
# No turn-count, empty-turn or per-turn state rule.
REWARD_RULE_KEY = "reward_rule"
INSPECT_EVALS_RULE = "inspect_evals"
# The calls inspect_evals' scorer replays for its state check, as the solver recorded them
# (``[[{"function", "arguments"}, ...] per turn]``): with Inspect's argument conversions, and with
# argument objects later calls changed.
SCORED_CALLS_KEY = "inspect_scored_calls"
_RAISED = "Error during execution: "  # loader.invoke's words for a method that raised
# Where rollouts imported by earlier versions listed undecodable steps that still held calls, as
# written; such a record is refused, so those calls are never run.
SKIPPED_CALLS_KEY = "bfcl_undecoded_steps"


def inspect_evals_value(name: str | None, value: Any, text: str) -> Any:
    """A call's result as inspect_evals records it: the method's return value, or its error dict."""
    if value is None and text.startswith(_RAISED):
        return {"error": f"Error executing {name}: {text[len(_RAISED):]}"}
    return value


class BfclBenchmark(Benchmark):
    """BFCL multi-turn on the data of one bfcl-eval release (``data``), and on older releases'
    data where an imported result file was made on one (``releases``: version → its data,
    loaded when first asked for); an imported rollout names its release in ``meta["bfcl_data"]``."""

    dataset = DATASET

    def __init__(self, data: BfclData, task_ids: Sequence[str] | None = None,
                 releases: Mapping[str, Callable[[], BfclData]] | None = None) -> None:
        self.data = data
        self.tasks = TaskIndex(task_ids if task_ids is not None else sorted(data.entries, key=id_order))
        self.loader = ClassLoader(data.root)
        self._loaded: dict[str, tuple[BfclData, ClassLoader | None]] = {data.release: (data, self.loader)}
        self._to_load = {v: load for v, load in (releases or {}).items() if v != data.release}
        self._specs: dict[tuple[str, str], dict[str, ToolSpec]] = {}
        self._facts: dict[tuple[str, str], TaskFacts] = {}
        self._gt_calls: dict[tuple[str, str], tuple[tuple[ToolCall, ...], ...]] = {}
        self.score_file: str | None = None  # import bfcl --bfcl-score: BFCL's score file (or a folder of them)
        self.data_release: str | None = None  # import bfcl --bfcl-data: the release every file is scored on

    def sample(self, n: int | None, seed: int) -> TaskSample:
        """``n`` entries spread evenly over the four categories (every entry when ``n`` is None)."""
        ids = sample_task_ids(self.data, n, seed) if n is not None else list(self.task_ids())
        return TaskSample(ids, self.task_provenance())

    def task_provenance(self) -> dict[str, Any]:
        return {"package": self.data.pin.dirname, "data_sha256": self.data.data_sha256}

    def entry(self, task_id: str) -> Entry:
        return self.data.entries[task_id]

    # data releases ----------------------------------------------------------------------------
    def releases(self) -> list[str]:
        """The releases whose data this benchmark can score on: its own first."""
        return [self.data.release, *self._to_load]

    def data_of(self, release: str) -> BfclData:
        """The data of a release (:class:`KeyError` for one not pinned)."""
        if release not in self._loaded:
            self._loaded[release] = (self._to_load[release](), None)
        return self._loaded[release][0]

    def loader_of(self, entry: Entry) -> ClassLoader:
        return self._loader(entry.release)

    def _loader(self, release: str) -> ClassLoader:
        data, loader = self._loaded[release]
        if loader is None:
            loader = ClassLoader(data.root)
            self._loaded[release] = (data, loader)
        return loader

    def specs_for_class(self, cls_name: str, release: str | None = None) -> dict[str, ToolSpec]:
        release = release or self.data.release
        if (release, cls_name) not in self._specs:
            data = self.data_of(release)
            cls = self._loader(release).classes[cls_name]
            specs = {}
            for doc in data.docs[cls_name]:
                name = doc["name"]
                params = json_schema_of(doc["parameters"])
                params["additionalProperties"] = False
                signature = inspect.signature(getattr(cls, name))
                order = tuple(p.name for p in signature.parameters.values()
                              if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
                refs = frozenset(sem.REFERENCE_PARAMS.get(cls_name, {}).get(name, ()))
                # No identifying parameters: a BFCL question names what to act on, create or ask about,
                # never the user's own records (docs/attribution.md).
                specs[name] = ToolSpec(name, params, doc.get("description", ""), order, refs,
                                       read_only=name in sem.READ_ONLY_METHODS.get(cls_name, frozenset()))
            self._specs[(release, cls_name)] = specs
        return self._specs[(release, cls_name)]

    def tools_of(self, entry: Entry) -> dict[str, ToolSpec]:
        tools: dict[str, ToolSpec] = {}
        for cls_name in entry.involved_classes:
            tools.update(self.specs_for_class(cls_name, entry.release))
        return tools

    def facts_of(self, entry: Entry) -> TaskFacts:
        key = (entry.release, entry.id)
        if key not in self._facts:
            loaded = self.loader_of(entry).instantiate(entry)
            initial = frozenset(scalars([public_state(i) for i in loaded.values()]))
            self._facts[key] = _task_facts(entry, initial)
        return self._facts[key]

    def ground_truth_calls(self, entry: Entry) -> tuple[tuple[ToolCall, ...], ...]:
        """The entry's ground truth, parsed once (calls are immutable)."""
        key = (entry.release, entry.id)
        if key not in self._gt_calls:
            self._gt_calls[key] = tuple(tuple(parse_call_string(c) for c in turn) for turn in entry.ground_truth)
        return self._gt_calls[key]

    # capabilities: reference rollouts, mutation facts, a live environment ----------------------
    def reference_turns(self, entry: Entry) -> tuple[tuple[Step, ...], ...]:
        """An entry's ground truth as a rollout's turns: one step per turn holding that turn's calls."""
        return tuple((Step(calls),) if calls else () for calls in self.ground_truth_calls(entry))

    def reference_rollout(self, task_id: str) -> Rollout:
        """The ground truth as a rollout: one step per turn holding that turn's calls."""
        turns = self.reference_turns(self.entry(task_id))
        return Rollout(DATASET, task_id, "ground_truth", "reference",
                       rollout_id_for(DATASET, "ground_truth", "reference", task_id), turns, source="reference")

    def tool_universe(self) -> list[str]:
        return sorted({name for cls in sem.CLASS_MODULES for name in self.specs_for_class(cls)})

    def precondition_guards(self) -> dict[str, frozenset[str]]:
        guards: dict[str, frozenset[str]] = {}
        for rules in sem.PRECONDITIONS.values():
            for rule in rules:
                if rule.setter is not None:
                    guards[rule.setter] = guards.get(rule.setter, frozenset()) | rule.methods
        return guards

    def deletion_call(self, spec: ToolSpec, param: str, value: Any) -> ToolCall | None:
        if spec.name in sem.DELETING_METHODS or not isinstance(value, str):
            return None
        if param in ("file_name", "file_name1", "file_name2", "source") and spec.name in self._fs_tools:
            return ToolCall("rm", (), {"file_name": value})
        if param == "folder" and value not in sem.ALWAYS_AVAILABLE:
            return ToolCall("rmdir", (), {"dir_name": value})
        return None

    @cached_property
    def _fs_tools(self) -> frozenset[str]:
        return frozenset(self.specs_for_class("GorillaFileSystem"))

    def agent_environment(self, task_id: str) -> BfclAgentEnvironment:
        """A live environment for generating a rollout of ``task_id`` with an agent."""
        entry = self.entry(task_id)
        return BfclAgentEnvironment(entry, self.tools_of(entry), self.loader.instantiate(entry))

    def has_task(self, task_id: str) -> bool:
        """A task of this release's data, or of another release's already loaded (a rollout names its
        release in ``meta["bfcl_data"]``; :meth:`open_session` checks the entry is that release's)."""
        return task_id in self.tasks or any(task_id in data.entries for data, _ in self._loaded.values())

    # capability "health" ----------------------------------------------------------------------
    def health_releases(self) -> list[str]:
        return self.releases()

    def release_tasks(self, release: str) -> list[str]:
        return sorted(self.data_of(release).entries, key=id_order)

    def release_of(self, rollout: Rollout) -> str | None:
        return rollout.meta.get("bfcl_data", self.data.release)

    def task_health(self, task_id: str, release: str) -> list[Finding]:
        return probe_findings(BfclProbe(self, self.data_of(release).entries[task_id]))

    def health_digest(self, release: str) -> str:
        """The files of every pinned release's package that health reads — an entry is compared with its
        version in each other release —: the multi-turn data and answers, the function docs and the
        environment classes' source."""
        self.data_of(release)  # KeyError for a release not pinned
        return files_sha256((f"{version}/{path.relative_to(data.root).as_posix()}", path)
                            for version in self.releases() for data in (self.data_of(version),)
                            for path in [*data_files(data.root), *class_files(data.root)])

    def open_session(self, rollout: Rollout) -> BfclSession:
        release = rollout.meta.get("bfcl_data", self.data.release)
        if release not in self.releases():
            raise UnscorableRollout(f"meta.bfcl_data {release!r} is no pinned bfcl-eval release "
                                    f"({', '.join(self.releases())})")
        entry = self.data_of(release).entries.get(rollout.task_id)
        if entry is None:
            raise UnscorableRollout(f"{rollout.task_id!r} is not in bfcl-eval {release}'s data",
                                    f"not in bfcl-eval {release}'s data")
        return BfclSession(self, entry, rollout)


def _task_facts(entry: Entry, initial: frozenset[Any]) -> TaskFacts:
    """User texts per turn, and the user facts: ground-truth argument values that the user first
    mentions in turn r > 0 and that are not in the initial state.

    A value the ground truth itself uses before the user mentions it is obtainable some other way
    (world knowledge, a derivation: "the nearest airport to Rivermist" is RMS), so it is no fact.
    """
    texts = tuple(" ".join(entry.user_texts(t)) for t in range(len(entry.question)))
    first_use: dict[Any, int] = {}
    for turn, calls in enumerate(entry.ground_truth):
        for raw in calls:
            for value in scalars(argument_values(parse_call_string(raw))):
                first_use.setdefault(value, turn)
    facts: dict[Any, int] = {}
    for value, used in first_use.items():
        if value in initial or (isinstance(value, str) and len(value) < 2):
            continue
        mentioned = next((t for t, text in enumerate(texts) if mentions(text, value)), None)
        if mentioned is not None and 0 < mentioned <= used:
            facts[value] = mentioned
    return TaskFacts(initial, texts, facts, sem.ALWAYS_AVAILABLE)


def _scored_calls(rollout: Rollout) -> list[ToolCall] | None:
    """The calls of ``meta["inspect_scored_calls"]`` in order (None where the rollout has none)."""
    listed = rollout.meta.get(SCORED_CALLS_KEY)
    if listed is None:
        return None
    if not isinstance(listed, list) or not all(
            isinstance(turn, list) and all(isinstance(c, dict) and isinstance(c.get("function"), str)
                                           and isinstance(c.get("arguments"), dict) for c in turn) for turn in listed):
        raise UnscorableRollout(f"meta.{SCORED_CALLS_KEY} must list, per turn, {{function, arguments}} objects")
    return [ToolCall(c["function"], kwargs=dict(c["arguments"]), structured=True) for turn in listed for c in turn]


def _volatile_after(volatile: tuple[tuple[str, Any, str], ...], call: ToolCall, accepted: bool,
                    value: Any) -> tuple[tuple[str, Any, str], ...]:
    """The result fields a recorded run does not fix, after ``call``: with the object it made when it
    leaves a list to BFCL's shared default (:data:`~.semantics.SHARED_DEFAULTS`)."""
    param = sem.leaves_shared_default(call.name, call.args, call.kwargs)
    if param is None or not accepted or not isinstance(value, dict) or "id" not in value:
        return volatile
    return (*volatile, ("id", value["id"], param))


class BfclSession(ReplaySession):
    """One rollout's fresh model-side and ground-truth-side instances.

    Y follows BFCL's evaluation: a rollout with another number of turns than the entry is
    force-terminated (0); a step BFCL's runner cannot decode holds no call (the importer's
    reading); a turn with a non-empty ground truth needs a decoded step with calls. String
    arguments reach the methods as BFCL's executor passes them (its instance names written into
    call text, :func:`~.loader.invoke`); a tweet posted without mentions has a list of its own, and
    its mentions are not compared with a recorded result (:data:`~.semantics.SHARED_DEFAULTS`)."""

    def __init__(self, bench: BfclBenchmark, entry: Entry, rollout: Rollout) -> None:
        self.entry = entry
        if rollout.meta.get(SKIPPED_CALLS_KEY):
            raise UnscorableRollout(f"meta.{SKIPPED_CALLS_KEY} lists steps whose calls BFCL's runner does not "
                                    f"execute, as an import before undecodable steps held no call wrote them: "
                                    f"import the result file again")
        self.rule = rollout.meta.get(REWARD_RULE_KEY)
        if self.rule not in (None, INSPECT_EVALS_RULE):
            raise UnscorableRollout(f"unknown {REWARD_RULE_KEY} {self.rule!r} (known: {INSPECT_EVALS_RULE}; "
                                    f"absent: BFCL's checker)")
        self._values: list[list[Any]] = []  # per turn, the model's results as values (inspect_evals' rule)
        self._gt_values: list[list[Any]] = []  # per turn checked, the ground truth's
        self._scored_calls = _scored_calls(rollout)
        self._loader = bench.loader_of(entry)
        self._decoded_steps = [sum(bool(step.calls) for step in turn) for turn in rollout.turns]
        self._rollout_turns = len(rollout.turns)
        self.facts = bench.facts_of(entry)
        self._tools = bench.tools_of(entry)
        loader = bench.loader_of(entry)
        self._model = loader.instantiate(entry)
        self._model_methods = method_table(self._model)
        # BFCL's own runner writes its instance names into call text (inspect_evals' solver does not):
        # the model's as `bfcl generate` names them (its recorded results), the ground truth's as
        # `bfcl evaluate` does
        own = self.rule is None
        self._instance_names = instance_names(self._model_methods, rollout.model, entry.id) if own else {}
        self._gt = loader.instantiate(entry)
        self._gt_methods = method_table(self._gt)
        self._gt_instance_names = (instance_names(self._gt_methods, f"{rollout.model}_ground_truth_eval", entry.id)
                                   if own else {})
        self._gt_calls = bench.ground_truth_calls(entry)
        self.turn = -1
        self._exposed: dict[str, ToolSpec] = {}
        self._turn_calls = 0
        self._results: list[str] = []  # every model result so far, all turns (BFCL's response check)
        self._deleted: set[Any] = set()
        self._live_cache: set[Any] | None = None
        self._turns_checked = 0
        self._volatile: tuple[tuple[str, Any, str], ...] = ()  # tweets on BFCL's shared default list
        self.y_detail: str | None = None

    # exposure ---------------------------------------------------------------------------------
    def start_turn(self, turn: int) -> None:
        self.turn = turn
        self._turn_calls = 0
        self._values.append([])
        held = self.entry.held_out
        self._exposed = {n: s for n, s in self._tools.items() if held.get(n, -1) <= turn}

    def exposed_tools(self) -> Mapping[str, ToolSpec]:
        return self._exposed

    def known_tool(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    # predicates -------------------------------------------------------------------------------
    def preconditions(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> list[str]:
        owner = self._model_methods.get(spec.name, (None,))[0]
        if owner is None:  # no class of the task's has the tool: no rule applies
            return []
        failing = []
        for rule in sem.PRECONDITIONS.get(owner, ()):
            if spec.name in rule.methods and not rule.holds(self._model[owner], arguments):
                failing.append(f"{spec.name} requires {rule.description}")
        return failing

    def _live_values(self) -> set[Any]:
        if self._live_cache is None:
            self._live_cache = set(scalars([public_state(i) for i in self._model.values()]))
        return self._live_cache

    def is_stale(self, spec: ToolSpec, param: str, value: Any) -> bool:
        return value in self._deleted and value not in self._live_values()

    # execution --------------------------------------------------------------------------------
    def execute(self, call: ToolCall) -> Outcome:
        self._turn_calls += 1
        if not call.well_formed:
            return Outcome(False, None, call.parse_error)
        deleting = call.name in sem.DELETING_METHODS
        before = set(self._live_values()) if deleting else None
        accepted, value, text = invoke(self._model_methods, call, self._instance_names)
        self._results.append(text)
        if self.rule == INSPECT_EVALS_RULE and self._values:
            self._values[-1].append(inspect_evals_value(call.name, value, text))
        self._live_cache = None
        if deleting and accepted and before is not None:
            self._deleted |= before - self._live_values()
        self._volatile = _volatile_after(self._volatile, call, accepted, value)
        return Outcome(accepted, value, None if accepted else text, logged=text, volatile=self._volatile)

    def dry_execute(self, call: ToolCall) -> Outcome:
        """The verdict on ``call`` from a scratch copy of the state (the live state is untouched)."""
        self._turn_calls += 1
        if not call.well_formed:
            return Outcome(False, None, call.parse_error, executed=False)
        return self._on_copy(call)

    def _on_copy(self, call: ToolCall) -> Outcome:
        scratch = pickle.loads(pickle.dumps(self._model, protocol=pickle.HIGHEST_PROTOCOL))
        accepted, value, text = invoke(method_table(scratch), call, self._instance_names)
        return Outcome(accepted, value, None if accepted else text, logged=text, executed=False,
                       volatile=_volatile_after(self._volatile, call, accepted, value))

    def complete(self) -> Outcome:
        last_turn = len(self.entry.ground_truth) - 1
        if self.turn > last_turn:  # the log ran turns this release's entry does not have
            return Outcome(False, error=f"ran {self.turn + 1} turns, the entry has {last_turn + 1}: BFCL "
                                        f"force-terminates the run")
        if self.turn < last_turn:
            return Outcome(False, error=f"ended in turn {self.turn} of {last_turn + 1}: BFCL entries run every turn")
        if self.entry.ground_truth[self.turn] and self._turn_calls == 0:
            return Outcome(False, error="final turn needs tool calls but the model answered without any")
        return Outcome(True)

    def end_turn(self) -> None:
        t = self.turn
        self._turns_checked = t + 1
        if self.y_detail is not None or t >= len(self._gt_calls):
            return
        gt_results, gt_values = [], []
        for call in self._gt_calls[t]:
            _, value, text = invoke(self._gt_methods, call, self._gt_instance_names)
            gt_results.append(text)
            gt_values.append(inspect_evals_value(call.name, value, text))
        if self.rule == INSPECT_EVALS_RULE:  # judged once, after the last turn (final_success)
            self._gt_values.append(gt_values)
            return
        if not self._gt_calls[t]:
            return
        if t >= len(self._decoded_steps) or self._decoded_steps[t] == 0:
            self.y_detail = f"multi_turn:empty_turn_model_response (turn {t + 1})"
            return
        for cls_name, gt_instance in self._gt.items():
            if public_state(self._model[cls_name]) != public_state(gt_instance):
                self.y_detail = f"multi_turn:instance_state_mismatch {cls_name} (turn {t + 1})"
                return
        remaining = list(self._results)
        for item in gt_results:
            try:
                remaining.remove(item)
            except ValueError:
                self.y_detail = f"multi_turn:execution_response_mismatch (turn {t + 1})"
                return

    def _inspect_evals_success(self) -> int:
        gt_values = list(self._gt_values)
        for calls in self._gt_calls[len(gt_values):]:  # turns the rollout did not reach: the whole ground truth
            gt_values.append([inspect_evals_value(c.name, *invoke(self._gt_methods, c)[1:]) for c in calls])
        model = self._model
        if self._scored_calls is not None:  # the state the scorer reached from the recorded calls
            model = self._loader.instantiate(self.entry)
            methods = method_table(model)
            for call in self._scored_calls:
                invoke(methods, call)
        for cls_name, gt_instance in self._gt.items():
            if public_state(model[cls_name]) != public_state(gt_instance):
                self.y_detail = f"inspect_evals: state mismatch {cls_name} (after the last turn)"
                return 0
        so_far: list[Any] = []
        for t, expected in enumerate(gt_values):
            so_far += self._values[t] if t < len(self._values) else []
            remaining = list(so_far)
            for item in expected:
                try:
                    remaining.remove(item)
                except ValueError:
                    self.y_detail = f"inspect_evals: response mismatch (turn {t + 1})"
                    return 0
        return 1

    def final_success(self) -> int:
        if self.rule == INSPECT_EVALS_RULE:
            return self._inspect_evals_success()
        # BFCL checks the turn count before anything else.
        if self._rollout_turns != len(self.entry.ground_truth):
            self.y_detail = (f"multi_turn:force_terminated ({self._rollout_turns} of "
                             f"{len(self.entry.ground_truth)} turns)")
        return int(self.y_detail is None)
