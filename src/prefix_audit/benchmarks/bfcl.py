"""BFCL-v3 multi-turn adapter on the pinned ``bfcl-eval`` package's data and environment classes.

The package's own executor builds call strings and ``eval``s them, and keeps instances in module
globals across entries; we never call it on model output. Instead calls are parsed with
:mod:`ast` (:mod:`prefix_audit.calls`) and dispatched by name to the public methods of fresh
instances of the entry's involved classes, loaded through their scenario loader on a deep copy of
``initial_config``, with every module-level value the classes mutate restored first.

Final success Y follows BFCL's multi-turn checker: per turn with a non-empty ground truth, the
model must have emitted a call; the public attributes of its instances must equal those of
instances driven by the ground truth; and the ground truth's execution results must be contained
(as a multiset) in the model's results so far. A rollout with a different number of turns than the
entry is force-terminated (Y = 0).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import json
import os
import pickle
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from ..agents.environment import unreadable_call_observation
from ..calls import ToolCall, parse_call_string
from ..checker import argument_values, mentions, scalars
from ..fetch import PackagePin, fetch_wheel, package_dir
from ..records import Rollout, Step, rollout_id_for
from . import bfcl_semantics as sem
from ..models.base import ToolSchema
from .base import Outcome, TaskFacts, ToolSpec

DATASET = "bfcl_v3"
DEFAULT_PIN = PackagePin("bfcl-eval", "2026.3.23",
                         "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a")
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
_PKG = "bfcl_eval"
_DATA = f"{_PKG}/data"
_BACKEND = f"{_PKG}.eval_checker.multi_turn_eval.func_source_code"

# BFCL's doc type names → JSON Schema types.
_TYPE_MAP = {"dict": "object", "float": "number", "integer": "integer", "string": "string",
             "boolean": "boolean", "array": "array", "tuple": "array", "any": None}


# BFCL declares some enums in the description text: "[Enum]: [\"on\", \"off\"]" or "[Enum]: USD, RMB".
_ENUM_IN_DESCRIPTION = re.compile(r"\[Enum\]:\s*(\[[^\]]*\]|[^.\n]+)")


def _declared_enum(description: str) -> list[str] | None:
    match = _ENUM_IN_DESCRIPTION.search(description)
    if match is None:
        return None
    text = match.group(1).strip()
    if text.startswith("["):
        return [str(v) for v in json.loads(text)]
    return [v.strip() for v in text.split(",") if v.strip()]


def json_schema_of(doc_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Translate one BFCL parameter schema (their type names) into JSON Schema."""
    out: dict[str, Any] = {}
    bfcl_type = doc_schema.get("type")
    if bfcl_type is not None:
        if bfcl_type not in _TYPE_MAP:
            raise ValueError(f"unknown BFCL type {bfcl_type!r}")
        if _TYPE_MAP[bfcl_type] is not None:
            out["type"] = _TYPE_MAP[bfcl_type]
    enum = list(doc_schema["enum"]) if "enum" in doc_schema else _declared_enum(doc_schema.get("description", ""))
    if enum is not None:
        if bfcl_type == "array":  # an enum on an array constrains its items
            out["items"] = {"enum": enum}
        else:
            out["enum"] = enum
    if "items" in doc_schema:
        out["items"] = {**json_schema_of(doc_schema["items"]), **out.get("items", {})}
    if "properties" in doc_schema:
        out["properties"] = {k: json_schema_of(v) for k, v in doc_schema["properties"].items()}
    if bfcl_type == "dict" and "required" in doc_schema:
        out["required"] = list(doc_schema["required"])
    return out


@dataclass(frozen=True)
class Entry:
    id: str
    category: str
    question: tuple[tuple[dict, ...], ...]
    initial_config: Mapping[str, Any]
    involved_classes: tuple[str, ...]
    held_out: Mapping[str, int]  # missed function name → turn from which it is exposed
    ground_truth: tuple[tuple[str, ...], ...]

    @property
    def long_context(self) -> bool:
        return "long_context" in self.category


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class BfclData:
    """The multi-turn entries, ground truth and function docs of one unpacked bfcl-eval wheel."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        data = self.root / _DATA
        if not data.is_dir():
            raise FileNotFoundError(f"no BFCL data under {data}; fetch {DEFAULT_PIN.name} first")
        self.entries: dict[str, Entry] = {}
        for cat in CATEGORIES:
            questions = _read_jsonl(data / f"BFCL_v4_multi_turn_{cat}.json")
            answers = {a["id"]: a["ground_truth"] for a in _read_jsonl(data / "possible_answer" / f"BFCL_v4_multi_turn_{cat}.json")}
            for q in questions:
                held = {name: int(turn) for turn, names in q.get("missed_function", {}).items() for name in names}
                self.entries[q["id"]] = Entry(
                    q["id"], cat, tuple(tuple(turn) for turn in q["question"]), q.get("initial_config", {}),
                    tuple(q["involved_classes"]), held, tuple(tuple(t) for t in answers[q["id"]]))
        self.docs: dict[str, list[dict]] = {
            cls: _read_jsonl(data / "multi_turn_func_doc" / fname) for cls, fname in sem.FUNC_DOC_FILES.items()}

    @cached_property
    def data_sha256(self) -> str:
        import hashlib

        h = hashlib.sha256()
        for path in sorted((self.root / _DATA).glob("**/BFCL_v4_multi_turn_*.json")):
            h.update(path.relative_to(self.root).as_posix().encode())
            h.update(path.read_bytes())
        return h.hexdigest()


def load_data(resources: str | Path, pin: PackagePin = DEFAULT_PIN, fetch: bool = True) -> BfclData:
    root = fetch_wheel(pin, resources) if fetch else package_dir(resources, pin)
    return BfclData(root)


def sample_task_ids(data: BfclData, n: int, seed: int) -> list[str]:
    """A deterministic stratified sample: ``n`` entries spread evenly over the four categories."""
    import numpy as np

    rng = np.random.default_rng(seed)
    per_cat = [n // len(CATEGORIES) + (i < n % len(CATEGORIES)) for i in range(len(CATEGORIES))]
    chosen: list[str] = []
    for cat, k in zip(CATEGORIES, per_cat):
        ids = sorted((e.id for e in data.entries.values() if e.category == cat), key=_id_order)
        if k > len(ids):
            raise ValueError(f"asked for {k} {cat} entries, only {len(ids)} exist")
        picked = rng.choice(len(ids), size=k, replace=False)
        chosen.extend(ids[i] for i in sorted(picked))
    return chosen


def _id_order(entry_id: str) -> tuple[str, int]:
    stem, num = entry_id.rsplit("_", 1)
    return stem, int(num)


# --- environment classes ---------------------------------------------------------------------


class _Backend:
    """Imports the environment modules once; builds isolated instances."""

    PROTOTYPES_KEPT = 256  # pickled loaded entries kept for copying

    def __init__(self, root: Path) -> None:
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        # Some classes format timestamps in local time; pin the zone so results are reproducible.
        os.environ["TZ"] = "UTC"
        time.tzset()
        self.classes: dict[str, type] = {}
        self._prototypes: dict[str, bytes] = {}
        self._pristine: list[tuple[Any, str, Any]] = []
        for cls_name, module_name in sem.CLASS_MODULES.items():
            module = importlib.import_module(f"{_BACKEND}.{module_name}")
            self.classes[cls_name] = getattr(module, cls_name)
        for module_name, names in sem.MUTABLE_MODULE_STATE.items():
            module = importlib.import_module(f"{_BACKEND}.{module_name}")
            for name in names:
                self._pristine.append((module, name, copy.deepcopy(getattr(module, name))))

    def reset_module_state(self) -> None:
        # In place: other modules imported these objects by name, so rebinding would not reach them.
        for module, name, pristine in self._pristine:
            current = getattr(module, name)
            if current != pristine:
                current.clear()
                current.update(copy.deepcopy(pristine))

    def instantiate(self, entry: Entry) -> dict[str, Any]:
        """Fresh instances of the entry's classes, sharing nothing with the module or each other."""
        if entry.id not in self._prototypes:
            if len(self._prototypes) >= self.PROTOTYPES_KEPT:
                self._prototypes.pop(next(iter(self._prototypes)))
            self._prototypes[entry.id] = pickle.dumps(self._load(entry), protocol=pickle.HIGHEST_PROTOCOL)
        return pickle.loads(self._prototypes[entry.id])

    def _load(self, entry: Entry) -> dict[str, Any]:
        # Loaded once per entry and copied (through pickle: a deep copy, much faster than
        # copy.deepcopy) for every session. The copy keeps the seeded RNG state and cuts the links
        # the loader leaves to module objects (long-context cards).
        self.reset_module_state()
        instances = {}
        for cls_name in entry.involved_classes:
            instance = self.classes[cls_name]()
            if cls_name not in sem.STATELESS_CLASSES:
                instance._load_scenario(copy.deepcopy(entry.initial_config.get(cls_name, {})),
                                        long_context=entry.long_context)
            instances[cls_name] = instance
        return instances


def bfcl_result_text(value: Any) -> str:
    """Render a method's return value the way BFCL's executor does (its response check compares these)."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


@lru_cache(maxsize=None)
def _public_method_names(cls: type) -> tuple[str, ...]:
    return tuple(name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_"))


def _method_table(instances: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """Public method name → (class, bound method); later classes win, as in BFCL's executor."""
    table: dict[str, tuple[str, Any]] = {}
    for cls_name, instance in instances.items():
        for name in _public_method_names(type(instance)):
            table[name] = (cls_name, getattr(instance, name))
    return table


def _is_error(value: Any) -> bool:
    """BFCL's error surface: an ``{"error": ...}`` dict, or a list holding one (some list-returning
    methods report failure as ``[{"error": ...}]`` or ``["Error: ..."]``)."""
    if isinstance(value, dict):
        return "error" in value
    if isinstance(value, list) and len(value) == 1:
        item = value[0]
        return (isinstance(item, dict) and "error" in item) or (isinstance(item, str) and item.startswith("Error"))
    return False


@lru_cache(maxsize=None)
def _parameters(function: Any) -> tuple[inspect.Parameter, ...]:
    return tuple(inspect.signature(function).parameters.values())[1:]  # without self


def _fresh_defaults(method: Any, call: ToolCall) -> dict[str, Any]:
    """Explicit copies of mutable defaults the call leaves out: a default list shared by every
    call (post_tweet's ``mentions=[]``) would otherwise carry state between instances."""
    extra = {}
    for i, p in enumerate(_parameters(method.__func__)):
        if (i >= len(call.args) and p.name not in call.kwargs
                and isinstance(p.default, (list, dict, set))):
            extra[p.name] = copy.copy(p.default)
    return extra


CALL_TIME_LIMIT_S = 10.0


class CallTimeout(Exception):
    pass


def _expire(signum: int, frame: Any) -> None:
    raise CallTimeout(f"call exceeded {CALL_TIME_LIMIT_S:g} s")


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt a call that runs too long (pure-Python work such as mpmath at a huge precision).

    Uses SIGALRM, so it applies only in the main thread of a POSIX process; single C-level
    operations (one enormous integer power) cannot be interrupted this way.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return
    if signal.getsignal(signal.SIGALRM) is not _expire:
        signal.signal(signal.SIGALRM, _expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _invoke(table: Mapping[str, tuple[str, Any]], call: ToolCall) -> tuple[bool, Any, str]:
    """Run one parsed call; (accepted, raw return value, BFCL result text)."""
    if call.name in sem.BLOCKED_NAMES:
        text = f"Error during execution: Function call {call.name} is not allowed."
        return False, None, text
    target = table.get(call.name)  # type: ignore[arg-type]
    if target is None:
        return False, None, f"Error during execution: name '{call.name}' is not defined"
    method = target[1]
    # Copies: environments keep and mutate argument objects (a tweet stores its mentions list).
    args, kwargs = copy.deepcopy(call.args), copy.deepcopy(call.kwargs)
    try:
        with _time_limit(CALL_TIME_LIMIT_S):
            value = method(*args, **kwargs, **_fresh_defaults(method, call))
            # Render at once: some methods return live module objects that later calls overwrite.
            text = bfcl_result_text(value)
    except Exception as exc:  # the environment raising is a rejected transition, not our crash
        return False, None, f"Error during execution: {exc}"
    return not _is_error(value), value, text


def _public_state(instance: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(instance).items() if not k.startswith("_")}


# --- the adapter -------------------------------------------------------------------------------


class BfclBenchmark:
    dataset = DATASET

    def __init__(self, data: BfclData, task_ids: Sequence[str] | None = None) -> None:
        self.data = data
        self._task_ids = list(task_ids) if task_ids is not None else sorted(data.entries, key=_id_order)
        self._allowed = set(self._task_ids)
        self._backend = _Backend(data.root)
        self._specs: dict[str, dict[str, ToolSpec]] = {}
        self._facts: dict[str, TaskFacts] = {}
        self._gt_calls: dict[str, tuple[tuple[ToolCall, ...], ...]] = {}

    def task_ids(self) -> Sequence[str]:
        return self._task_ids

    def has_task(self, task_id: str) -> bool:
        return task_id in self._allowed

    def entry(self, task_id: str) -> Entry:
        return self.data.entries[task_id]

    def specs_for_class(self, cls_name: str) -> dict[str, ToolSpec]:
        if cls_name not in self._specs:
            cls = self._backend.classes[cls_name]
            specs = {}
            for doc in self.data.docs[cls_name]:
                name = doc["name"]
                params = json_schema_of(doc["parameters"])
                params["additionalProperties"] = False
                signature = inspect.signature(getattr(cls, name))
                order = tuple(p.name for p in signature.parameters.values()
                              if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
                refs = frozenset(sem.REFERENCE_PARAMS.get(cls_name, {}).get(name, ()))
                specs[name] = ToolSpec(name, params, doc.get("description", ""), order, refs)
            self._specs[cls_name] = specs
        return self._specs[cls_name]

    def tools_of(self, entry: Entry) -> dict[str, ToolSpec]:
        tools: dict[str, ToolSpec] = {}
        for cls_name in entry.involved_classes:
            tools.update(self.specs_for_class(cls_name))
        return tools

    def facts_of(self, entry: Entry) -> TaskFacts:
        if entry.id not in self._facts:
            loaded = self._backend.instantiate(entry)
            initial = frozenset(scalars([_public_state(i) for i in loaded.values()]))
            self._facts[entry.id] = _task_facts(entry, initial)
        return self._facts[entry.id]

    def ground_truth_calls(self, entry: Entry) -> tuple[tuple[ToolCall, ...], ...]:
        """The entry's ground truth, parsed once (calls are immutable)."""
        if entry.id not in self._gt_calls:
            self._gt_calls[entry.id] = tuple(tuple(parse_call_string(c) for c in turn)
                                             for turn in entry.ground_truth)
        return self._gt_calls[entry.id]

    # hooks for the mutation generator ----------------------------------------------------------
    def reference_rollout(self, task_id: str) -> Rollout:
        """The ground truth as a rollout: one step per turn holding that turn's calls."""
        entry = self.entry(task_id)
        turns = tuple((Step(calls),) if calls else () for calls in self.ground_truth_calls(entry))
        return Rollout(DATASET, task_id, "ground_truth", "reference",
                       rollout_id_for(DATASET, "ground_truth", "reference", task_id), turns, "reference")

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
        return BfclAgentEnvironment(self, self.entry(task_id))

    def open_session(self, rollout: Rollout) -> BfclSession:
        entry = self.entry(rollout.task_id)
        if len(rollout.turns) > len(entry.ground_truth):
            from ..checker import UnscorableRollout

            raise UnscorableRollout(f"rollout has {len(rollout.turns)} turns, entry {entry.id} has "
                                    f"{len(entry.ground_truth)}")
        return BfclSession(self, entry)


def _task_facts(entry: Entry, initial: frozenset[Any]) -> TaskFacts:
    """User texts per turn, and the user facts: ground-truth argument values that the user first
    mentions in turn r > 0 and that are not in the initial state.

    A value the ground truth itself uses before the user mentions it is obtainable some other way
    (world knowledge, a derivation: "the nearest airport to Rivermist" is RMS), so it is no fact.
    """
    texts = tuple(" ".join(str(m.get("content", "")) for m in turn if m.get("role") == "user")
                  for turn in entry.question)
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


class BfclSession:
    """One rollout's fresh model-side and ground-truth-side instances."""

    def __init__(self, bench: BfclBenchmark, entry: Entry) -> None:
        self.entry = entry
        self.facts = bench.facts_of(entry)
        self._backend = bench._backend
        self._tools = bench.tools_of(entry)
        self._model = self._backend.instantiate(entry)
        self._model_methods = _method_table(self._model)
        self._gt = self._backend.instantiate(entry)
        self._gt_methods = _method_table(self._gt)
        self._gt_calls = bench.ground_truth_calls(entry)
        self.turn = -1
        self._exposed: dict[str, ToolSpec] = {}
        self._turn_calls = 0
        self._results: list[str] = []  # every model result so far, all turns (BFCL's response check)
        self._deleted: set[Any] = set()
        self._live_cache: set[Any] | None = None
        self._turns_checked = 0
        self.y_detail: str | None = None

    # exposure ---------------------------------------------------------------------------------
    def start_turn(self, turn: int) -> None:
        self.turn = turn
        self._turn_calls = 0
        held = self.entry.held_out
        self._exposed = {n: s for n, s in self._tools.items() if held.get(n, -1) <= turn}

    def exposed_tools(self) -> Mapping[str, ToolSpec]:
        return self._exposed

    def known_tool(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    # predicates -------------------------------------------------------------------------------
    def preconditions(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> list[str]:
        owner = self._model_methods.get(spec.name, (None,))[0]
        failing = []
        for rule in sem.PRECONDITIONS.get(owner or "", ()):
            if spec.name in rule.methods and not rule.holds(self._model[owner], arguments):
                failing.append(f"{spec.name} requires {rule.description}")
        return failing

    def _live_values(self) -> set[Any]:
        if self._live_cache is None:
            self._live_cache = set(scalars([_public_state(i) for i in self._model.values()]))
        return self._live_cache

    def is_stale(self, spec: ToolSpec, param: str, value: Any) -> bool:
        return value in self._deleted and value not in self._live_values()

    # execution --------------------------------------------------------------------------------
    def execute(self, call: ToolCall) -> Outcome:
        self._turn_calls += 1
        if not call.well_formed:
            self._results.append(f"Error during execution: {call.parse_error}")
            return Outcome(False, None, call.parse_error)
        deleting = call.name in sem.DELETING_METHODS
        before = set(self._live_values()) if deleting else None
        accepted, value, text = _invoke(self._model_methods, call)
        self._results.append(text)
        self._live_cache = None
        if deleting and accepted and before is not None:
            self._deleted |= before - self._live_values()
        return Outcome(accepted, value, None if accepted else text)

    def complete(self) -> Outcome:
        last_turn = len(self.entry.ground_truth) - 1
        if self.turn < last_turn:
            return Outcome(False, error=f"ended in turn {self.turn} of {last_turn + 1}: BFCL entries run every turn")
        if self.entry.ground_truth[self.turn] and self._turn_calls == 0:
            return Outcome(False, error="final turn needs tool calls but the model answered without any")
        return Outcome(True)

    def end_turn(self) -> None:
        t = self.turn
        self._turns_checked = t + 1
        if self.y_detail is not None:
            return
        gt_results = []
        for call in self._gt_calls[t]:
            gt_results.append(_invoke(self._gt_methods, call)[2])
        if not self._gt_calls[t]:
            return
        if self._turn_calls == 0:
            self.y_detail = f"multi_turn:empty_turn_model_response (turn {t})"
            return
        for cls_name, gt_instance in self._gt.items():
            if _public_state(self._model[cls_name]) != _public_state(gt_instance):
                self.y_detail = f"multi_turn:instance_state_mismatch {cls_name} (turn {t})"
                return
        remaining = list(self._results)
        for item in gt_results:
            try:
                remaining.remove(item)
            except ValueError:
                self.y_detail = f"multi_turn:execution_response_mismatch (turn {t})"
                return

    def final_success(self) -> int:
        if self.y_detail is None and self._turns_checked != len(self.entry.ground_truth):
            self.y_detail = (f"multi_turn:force_terminated ({self._turns_checked} of "
                             f"{len(self.entry.ground_truth)} turns)")
        return int(self.y_detail is None)


class BfclAgentEnvironment:
    """BFCL as an agent sees it during generation: per-turn questions and tools, and execution on
    fresh instances with BFCL's result texts as observations (the benchmark executes any public
    method of the entry's classes, exposed or not; the replay checker judges exposure later)."""

    def __init__(self, bench: BfclBenchmark, entry: Entry) -> None:
        self.task_id = entry.id
        self._entry = entry
        self._tools = bench.tools_of(entry)
        self._methods = _method_table(bench._backend.instantiate(entry))

    def turn_count(self) -> int:
        return len(self._entry.question)

    def user_message(self, turn: int) -> str:
        text = " ".join(str(m.get("content", "")) for m in self._entry.question[turn] if m.get("role") == "user")
        if text:
            return text
        # A turn without a question is where withheld functions arrive; say what BFCL says there.
        from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

        return DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

    def tools(self, turn: int) -> tuple[ToolSchema, ...]:
        held = self._entry.held_out
        return tuple(ToolSchema(spec.name, spec.description, spec.parameters)
                     for name, spec in self._tools.items() if held.get(name, -1) <= turn)

    def execute(self, call: ToolCall) -> str:
        if not call.well_formed:
            return unreadable_call_observation(call)
        return _invoke(self._methods, call)[2]
