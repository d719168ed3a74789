"""inspect_evals' own airline/retail tools against our tau2 replay, call for call (a differential test).

inspect_evals runs ``tau2_airline``/``tau2_retail`` on its own re-implementation of tau2's tools
(``inspect_evals.tau2.{airline,retail}``) and scores the database with its own data model
(``inspect_evals.tau2.common.scorer``: ``get_expected_db``, ``db.get_hash()``); prefix-audit replays
an Inspect log's calls on tau2's classes (:class:`LiveEnvironment`) and decides the DB check with
:meth:`TauBenchmark.db_matches_gold`. Where the two differ, a replay of an Inspect log diverges from
what the model was shown, or Y from the log's score.

For every base task of both domains (50 airline, 114 retail: the task files our ``tau`` fixture
loads), two runs, each side on a fresh database in each: the task's gold calls alone, and a perturbed
run. The perturbed run's calls come from the gold calls alone (:class:`CallPlan`), so they reach each
task's own objects in the states its gold leads through. Before each gold call: copies of it with one
argument replaced — an unknown id (a wrong enum value where the argument is one), another gold
call's value of that argument (another user's order, a delivered one where the gold one is pending),
a number far too large, off by one or negative, a list emptied, shortened, with its first element
repeated or changed, an object in it with a field changed (each such variant at most
:data:`VALUE_VARIANTS_PER_DOMAIN` times per tool in a domain); the argument written otherwise (an
integer as float or text, a fraction, blanks around a text, an empty text, an object's field left
out: once per tool and domain); an argument left out and one added (once per tool); on a task's
first call of a tool, the other tools whose parameters its arguments fill (a one-stop search on a
direct search's arguments, the flight status of a booked flight, cancelling a reservation looked up);
then the gold call; then, for a tool that may write, the gold call once more (cancelled already, not
pending any more, ...). The tools without parameters are called once per domain.

* inspect side: each call through Inspect's own tool execution (``inspect_ai.model.execute_tools``,
  as the model's calls run in a sample: schema validation, argument conversion, inspect_evals' ``@tool``
  wrappers and its ``AirlineAgentTools``/``RetailAgentTools`` on a store of their own). Its outcome is
  ``ok`` (the tool message's text), ``error`` (a ``ToolError``: the tool message's error, whose
  message is the ``ToolError``'s), ``refused`` (Inspect's ``parsing`` error: the call never reached the
  tool; the importer does not replay such a call, :data:`prefix_audit.core.framework_samples.REFUSED`), or
  ``crash`` (any other exception leaves ``execute_tools``: Inspect does not turn it into a tool
  message; inspect_evals' agent loop catches it, so the sample goes on without the agent's messages
  of that turn — the call is not in the log);
* our side: ``LiveEnvironment(bench.backend).run(call)`` → (accepted, text), for every call Inspect
  did not refuse;
* per call: ok/error equal, and the content equal after the record check's normalisation
  (``canonical`` for results, ``canonical_error`` for errors); after a call of a tool that may write
  that either side accepted, the two databases equal (a call where they part is a difference even
  when its results read alike);
* per run: the databases of the two sides equal, and the DB check decided alike: inspect_evals'
  (``get_expected_db`` of the task's actions, compared with the run's database as ``db_match`` does,
  by ``get_hash``) and ours (``db_matches_gold``), for the gold run and for the perturbed run.

Fresh databases are copy-on-write views of one validated template per side (the
:class:`CopyOnWriteTable` our replay uses, here also under inspect_evals' database; a call of a tool
tau2 declares READ reaches the template records as they are, and the test checks at the end that
neither template changed). ``get_hash`` serialises the whole database (0.4 s for airline), so two
databases are compared by what ``get_hash`` serialises of the records either side copied, and of the
tables' keys — equal exactly when the hashes are (checked with the real ``get_hash`` on a few runs).

Every difference found is listed in :data:`KNOWN_DIFFERENCES`, by cause, with the calls it shows in.
Two probes go beyond the gold calls: ``calculate`` (which both sides implement on their own) on
expressions no gold call holds, and a result longer than Inspect shows a model.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gzip
import json
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from prefix_audit.benchmarks.tau.domain.copy_on_write import AccessMode, CopyOnWriteTable
from prefix_audit.benchmarks.tau.domain.environment import LiveEnvironment, _fingerprint
from prefix_audit.core.calls import structured_call
from prefix_audit.core.framework_samples import REFUSED
from prefix_audit.replay.record_check import canonical, canonical_error

pytest.importorskip("inspect_evals")

DOMAINS = ("airline", "retail")
STORE_INSTANCE = {"airline": "AirlineTools", "retail": "RetailTools"}  # where inspect_evals' tools find their state


# --- the inspect side --------------------------------------------------------------------------------


def _inspect_classes(domain: str) -> tuple[type, type, list[Any]]:
    """inspect_evals' toolkit class, database class and the tools a sample offers the agent."""
    if domain == "airline":
        from inspect_evals.tau2.airline.AirlineAgentTools import AirlineAgentTools
        from inspect_evals.tau2.airline.data_model import FlightDB
        from inspect_evals.tau2.airline.tools import all_airline_tools

        return AirlineAgentTools, FlightDB, all_airline_tools
    from inspect_evals.tau2.retail.data_model import RetailDB
    from inspect_evals.tau2.retail.RetailAgentTools import RetailAgentTools
    from inspect_evals.tau2.retail.tools import all_retail_tools

    return RetailAgentTools, RetailDB, all_retail_tools


def _cow(template: Any, mode: AccessMode) -> Any:
    """A copy-on-write view of a validated database (every top-level table a CopyOnWriteTable)."""
    fields = {}
    for name in type(template).model_fields:
        value = getattr(template, name)
        fields[name] = CopyOnWriteTable(value, mode) if type(value) is dict else copy.deepcopy(value)
    return template.model_copy(update=fields)


class InspectDomain:
    """inspect_evals' side of one domain: its database (its own db.json.gz, validated by its own data
    model once), its tools as ToolDefs, and the modes of the databases handed out (so that a READ
    tool runs without copying, whichever path calls it)."""

    def __init__(self, domain: str, read_tools: frozenset[str]) -> None:
        from inspect_ai.tool import ToolDef
        from inspect_evals.tau2.utils import TAU2_DATA_DIR

        self.domain = domain
        self.toolkit_cls, self.db_cls, tools = _inspect_classes(domain)
        # FlightDB.load/RetailDB.load unpack the .gz to a temporary file they leave behind; the same
        # bytes are read here without one.
        with gzip.open(TAU2_DATA_DIR / "domains" / domain / "db.json.gz", "rt", encoding="utf-8") as fp:
            self.template = self.db_cls.model_validate(json.load(fp))
        self.tool_defs = [ToolDef(t()) for t in tools]
        self.read_tools = read_tools
        self.template_fingerprint = _fingerprint(self.template)
        self.modes: dict[int, tuple[Any, AccessMode]] = {}

    def fresh_db(self) -> Any:
        mode = AccessMode()
        db = _cow(self.template, mode)
        self.modes[id(db)] = (db, mode)
        return db

    def mode_of(self, db: Any) -> AccessMode:
        return self.modes[id(db)][1]

    @contextlib.contextmanager
    def reads_without_copies(self) -> Iterator[None]:
        """inspect_evals' toolkit methods of tau2's READ tools, run in reading mode (the test's own
        harness: without it every search would copy every flight)."""
        originals = {name: getattr(self.toolkit_cls, name) for name in self.read_tools
                     if callable(getattr(self.toolkit_cls, name, None))}

        def reading(method: Any) -> Any:
            def run(tools: Any, *args: Any, **kwargs: Any) -> Any:
                with self.mode_of(tools.db).reading():
                    return method(tools, *args, **kwargs)
            return run

        try:
            for name, method in originals.items():
                setattr(self.toolkit_cls, name, reading(method))
            yield
        finally:
            for name, method in originals.items():
                setattr(self.toolkit_cls, name, method)

    def expected_db(self, actions: Sequence[Any]) -> Any:
        """inspect_evals' own ``get_expected_db`` (what its ``db_match`` scorer compares with), its
        database loaded from the template instead of the file."""
        from inspect_evals.tau2.common.scorer import get_expected_db
        from inspect_evals.tau2.data_model.tasks import Action

        assert "load" not in vars(self.db_cls)  # inherited from inspect_evals' DB
        self.db_cls.load = classmethod(lambda cls, path: self.fresh_db())
        try:
            return get_expected_db(self.domain, [Action(action_id=f"gold_{i}", name=a.name,
                                                        arguments=copy.deepcopy(dict(a.arguments)))
                                                 for i, a in enumerate(actions)]).db
        finally:
            del self.db_cls.load


@dataclass(frozen=True)
class Result:
    kind: str  # ok, error, refused, crash
    text: str


class InspectRun:
    """One sample's state: inspect_evals' toolkit on a store of its own, a fresh database in it."""

    def __init__(self, side: InspectDomain) -> None:
        from inspect_ai.util import Store

        self.side = side
        self.store = Store()
        self.db = side.fresh_db()
        side.toolkit_cls(store=self.store, instance=STORE_INSTANCE[side.domain], db=self.db, initialized=True)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Result:
        from inspect_ai.model import ChatMessageAssistant, execute_tools
        from inspect_ai.tool import ToolCall
        from inspect_ai.util._store import init_subtask_store, suspend_store_events

        init_subtask_store(self.store)
        message = ChatMessageAssistant(content="", tool_calls=[
            ToolCall(id="call", function=name, arguments=copy.deepcopy(dict(arguments)))])
        try:
            # Store events (a JSON diff of the whole store per call) are the log's business, not the tools'.
            with suspend_store_events():
                result = await execute_tools([message], self.side.tool_defs)
        except Exception as exc:  # noqa: BLE001 -- what Inspect lets escape is the finding
            return Result("crash", f"{type(exc).__name__}: {exc}")
        tool_message = result.messages[0]
        if tool_message.error is None:
            return Result("ok", tool_message.text)
        return Result("refused" if tool_message.error.type in REFUSED else "error", tool_message.error.message)


# --- the calls -------------------------------------------------------------------------------------


def _scalar_variants(value: Any, others: Sequence[Any], nested: bool) -> list[tuple[str, Any]]:
    """Replacements for one scalar: off the value itself, and another gold call's value (``others``)."""
    if isinstance(value, bool):
        return [("not", not value)]
    if isinstance(value, int):
        out = [("big", value * 1000 + 1_000_000), ("+0.5", value + 0.5)]
        if not nested:
            out += [("+1", value + 1), ("-1", -1), ("float", float(value)), ("text", str(value))]
        return out
    if isinstance(value, float):
        return [("big", value * 1000 + 1_000_000), ("+0.5", value + 0.5)]
    if isinstance(value, str):
        out = [("unknown", value + "_x")]
        other = next((o for o in others if o != value), None)
        if other is not None:
            out.append(("other", other))
        if not nested:
            out += [("empty", ""), ("padded", f" {value} ")]
        return out
    return []


def _dict_variants(value: Mapping[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, item in value.items():
        out.append((f"-{key}", {k: v for k, v in value.items() if k != key}))
        out += [(f"{key}:{tag}", {**value, key: changed}) for tag, changed in _scalar_variants(item, (), nested=True)]
    return out


def _variants(value: Any, others: Sequence[Any], element_others: Sequence[Any]) -> list[tuple[str, Any]]:
    """Values to put in place of one argument's: derived from the value alone, and from the values the
    same argument takes in other gold calls (``others``; ``element_others`` for a list's elements)."""
    if isinstance(value, list):
        out: list[tuple[str, Any]] = [("[]", [])]
        if len(value) > 1:
            out.append(("drop_last", value[:-1]))
        if value:
            out.append(("repeat_first", value + [value[0]]))
            first = value[0]
            if isinstance(first, dict):
                out += [(f"[0].{tag}", [changed] + value[1:]) for tag, changed in _dict_variants(first)]
            else:
                out += [(f"[0]:{tag}", [changed] + value[1:])
                        for tag, changed in _scalar_variants(first, element_others, nested=True)]
        return out
    if isinstance(value, dict):
        return _dict_variants(value)
    return _scalar_variants(value, others, nested=False)


FORM_TAGS = ("float", "text", "+0.5", "padded", "empty")
# How many times one variant of one tool's argument is tried in a domain (in task order): enough to meet
# the states the gold calls lead through (pending, delivered, cancelled orders; reservations of every
# kind), few enough for the default test run.
VALUE_VARIANTS_PER_DOMAIN = 8


def _form(label: str) -> bool:
    """A variant in how a value is written (a number as float or text, a fraction, blanks, an empty
    text, an object's field left out) rather than which value it is: what it meets does not depend on
    the task's state, so it is tried on a tool's first gold call in the domain only."""
    return label.rsplit(":", 1)[-1] in FORM_TAGS or ".-" in label


def _after(value: Any, pool: Sequence[Any]) -> list[Any]:
    """The pool in a fixed order that starts after ``value`` (so 'other' is deterministic)."""
    ordered = sorted(pool, key=repr)
    if value in ordered:
        i = ordered.index(value)
        ordered = ordered[i + 1:] + ordered[:i]
    return ordered


@dataclass(frozen=True)
class Step:
    # gold[i]; gold[i]+repeat; gold[i]/ARG:VARIANT (one argument replaced); gold[i]/-ARG, gold[i]/+note
    # (an argument left out, one added); gold[i]>TOOL (another tool on the same arguments, or on one
    # object of a list argument); TOOL() (a tool without parameters)
    label: str
    name: str
    arguments: Mapping[str, Any]


class CallPlan:
    """The calls of one domain's tasks, from the gold calls alone (module docstring)."""

    def __init__(self, tasks: Sequence[Any], tools: Mapping[str, Any], writes: frozenset[str]) -> None:
        self.tools = tools  # name → our ToolInfo (its declared parameters)
        self.writes = writes
        self.values: dict[tuple[str, str], list[Any]] = {}
        self.elements: dict[tuple[str, str], list[Any]] = {}
        for task in tasks:
            for action in task.gold:
                for key, value in action.arguments.items():
                    if isinstance(value, (str, int, float)):
                        bucket = self.values.setdefault((action.name, key), [])
                        bucket += [] if value in bucket else [value]
                    elif isinstance(value, list):
                        bucket = self.elements.setdefault((action.name, key), [])
                        bucket += [v for v in value if isinstance(v, str) and v not in bucket]
        self._refusal_probed: set[str] = set()
        self._tried: dict[tuple[str, str], int] = {}  # (tool, ARG:VARIANT) → calls planned so far
        self._parameterless_probed = False

    def _siblings(self, name: str, arguments: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """Other tools whose parameters are exactly the keys of the arguments, or of one object in a
        list argument (``search_onestop_flight`` on a direct search's arguments, ``get_flight_status``
        on a booked flight)."""
        sources = [dict(arguments)] + [dict(v[0]) for v in arguments.values()
                                       if isinstance(v, list) and v and isinstance(v[0], dict)]
        out = []
        for source in sources:
            for tool, info in self.tools.items():
                if tool != name and source and set(info.spec.positional_order) == set(source):
                    out.append((tool, source))
        return out

    def steps(self, task: Any) -> list[Step]:
        steps: list[Step] = []
        if not self._parameterless_probed:
            self._parameterless_probed = True
            steps += [Step(f"{tool}()", tool, {}) for tool, info in self.tools.items()
                      if not info.spec.positional_order]
        seen: set[str] = set()
        for i, action in enumerate(task.gold):
            gold, arguments = f"gold[{i}]", dict(action.arguments)
            first_call = action.name not in seen
            seen.add(action.name)
            if first_call or action.name in self.writes:  # reads are varied where a task first calls them
                for key, value in arguments.items():
                    others = _after(value, self.values.get((action.name, key), []))
                    for tag, changed in _variants(value, others, self.elements.get((action.name, key), [])):
                        label = f"{key}:{tag}"
                        tried = self._tried.get((action.name, label), 0)
                        if tried >= (1 if _form(label) else VALUE_VARIANTS_PER_DOMAIN):
                            continue
                        self._tried[(action.name, label)] = tried + 1
                        steps.append(Step(f"{gold}/{label}", action.name, {**arguments, key: changed}))
            if action.name not in self._refusal_probed:  # Inspect's schema check: the same in every state
                self._refusal_probed.add(action.name)
                if arguments:
                    first = next(iter(arguments))
                    steps.append(Step(f"{gold}/-{first}", action.name,
                                      {k: v for k, v in arguments.items() if k != first}))
                steps.append(Step(f"{gold}/+note", action.name, {**arguments, "note": "x"}))
            if first_call:
                steps += [Step(f"{gold}>{tool}", tool, source)
                          for tool, source in self._siblings(action.name, arguments)]
            steps.append(Step(gold, action.name, arguments))
            if action.name in self.writes:
                steps.append(Step(f"{gold}+repeat", action.name, arguments))
        return steps


# --- running both sides ----------------------------------------------------------------------------


def _record_dump(record: Any) -> str:
    """What ``get_hash`` serialises of one record (pydantic warns of a float stored in an int field)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return json.dumps(record.model_dump(), sort_keys=True, default=str)


def _owned(db: Any) -> dict[tuple[str, Any], Any]:
    """The records a copy-on-write database copied or added (the rest are its template's)."""
    out = {}
    for name in type(db).model_fields:
        table = getattr(db, name)
        for key in table._own:  # noqa: SLF001 -- the test reads the copy-on-write bookkeeping
            if dict.__contains__(table, key):
                out[(name, key)] = dict.__getitem__(table, key)
    return out


def same_db(a: Any, b: Any) -> bool:
    """Whether two copy-on-write databases, on templates of equal ``get_hash``, have equal ``get_hash``:
    the same keys in every table, and the same serialisation of every record either side copied."""
    for name in type(a).model_fields:
        if dict.keys(getattr(a, name)) != dict.keys(getattr(b, name)):
            return False
    owned_a, owned_b = _owned(a), _owned(b)
    for table, key in owned_a.keys() | owned_b.keys():
        # a record one side never copied is its template's
        record_a = owned_a[(table, key)] if (table, key) in owned_a else dict.__getitem__(getattr(a, table), key)
        record_b = owned_b[(table, key)] if (table, key) in owned_b else dict.__getitem__(getattr(b, table), key)
        if _record_dump(record_a) != _record_dump(record_b):
            return False
    return True


@dataclass(frozen=True)
class Compared:
    dataset: str
    task_id: str
    run: str  # gold (the gold calls alone) or perturbed
    step: Step
    inspect: Result
    tau2: tuple[bool, str] | None  # None: not run (Inspect refused the call, our replay does not run it)
    diverged: bool  # the two databases were equal before the call and differ after it (checked after a
    # call of a tool that may write that either side accepted)

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.task_id}/{self.run}/{self.step.label}"

    @property
    def result_differs(self) -> bool:
        if self.inspect.kind == "refused":
            return False
        if self.inspect.kind == "crash":
            return True
        assert self.tau2 is not None
        accepted, text = self.tau2
        if (self.inspect.kind == "ok") != accepted:
            return True
        if accepted:
            return canonical(self.inspect.text) != canonical(text)
        return canonical_error(self.inspect.text) != canonical_error(text)

    def describe(self) -> str:
        tau2 = "not run" if self.tau2 is None else f"{'ok' if self.tau2[0] else 'error'} {self.tau2[1][:200]!r}"
        diverged = "; the databases diverge here" if self.diverged else ""
        return (f"{self.key}: {self.step.name}({json.dumps(self.step.arguments)[:300]}) → inspect "
                f"{self.inspect.kind} {self.inspect.text[:200]!r}; tau2 {tau2}{diverged}")


@dataclass
class RunOutcome:
    inspect_db: Any = field(repr=False)
    live: LiveEnvironment = field(repr=False)
    same_state: bool  # the two sides' databases equal at the end
    inspect_check: bool  # inspect_evals' DB check: get_expected_db(actions) vs the run's database


@dataclass
class TaskRun:
    task: Any = field(repr=False)
    expected_db: Any = field(repr=False)  # inspect_evals' get_expected_db of the task's actions
    calls: list[Compared] = field(default_factory=list, repr=False)
    runs: dict[str, RunOutcome] = field(default_factory=dict)


def _tau2_db(live: LiveEnvironment) -> Any:
    return live._environment.tools.db  # noqa: SLF001 -- compared record by record, read only


async def run_task(bench: Any, side: InspectDomain, task: Any, steps: Sequence[Step]) -> TaskRun:
    out = TaskRun(task, expected := side.expected_db(task.gold))
    gold_steps = [Step(f"gold[{i}]", a.name, dict(a.arguments)) for i, a in enumerate(task.gold)]
    for run, run_steps in (("gold", gold_steps), ("perturbed", steps)):
        inspect_run, live = InspectRun(side), LiveEnvironment(bench.backend)
        same = True
        for step in run_steps:
            result = await inspect_run.call(step.name, step.arguments)
            tau2 = None
            if result.kind != "refused":
                tau2 = live.run(structured_call(step.name, copy.deepcopy(dict(step.arguments)), step.label))
            diverged = False
            if (result.kind == "ok" or (tau2 is not None and tau2[0])) and not bench.backend.reads_only(step.name):
                with live.reading_db():
                    now = same_db(inspect_run.db, _tau2_db(live))
                diverged, same = same and not now, now
            out.calls.append(Compared(bench.dataset, task.id, run, step, result, tau2, diverged))
        with live.reading_db():
            same_state = same_db(inspect_run.db, _tau2_db(live))
        out.runs[run] = RunOutcome(inspect_run.db, live, same_state, same_db(expected, inspect_run.db))
    return out


def run_domain(bench: Any, side: InspectDomain) -> list[TaskRun]:
    tasks = [bench.task(t) for t in bench.tasks]
    writes = frozenset(name for name in bench.backend.tools if not bench.backend.reads_only(name))
    plan = CallPlan(tasks, bench.backend.tools, writes)

    out: list[TaskRun] = []

    async def run_all() -> None:  # returns nothing: asyncio may repr a task's result, databases and all
        for task in tasks:
            out.append(await run_task(bench, side, task, plan.steps(task)))

    with side.reads_without_copies():
        asyncio.run(run_all())
    return out


@dataclass
class Comparison:  # (no field in its repr: pytest shows the repr of what an assertion reads)
    benches: dict[str, Any] = field(repr=False)
    sides: dict[str, InspectDomain] = field(repr=False)
    tasks: dict[str, list[TaskRun]] = field(repr=False)

    @property
    def calls(self) -> list[Compared]:
        return [c for runs in self.tasks.values() for run in runs for c in run.calls]


def compare_all(tau: Mapping[str, Any]) -> Comparison:
    benches, sides, tasks = {}, {}, {}
    for domain in DOMAINS:
        benches[domain] = bench = tau[f"tau_{domain}"]
        assert bench.backend.initial_fingerprint  # of the template before any run (checked after them)
        read_tools = frozenset(name for name in bench.backend.tools if bench.backend.reads_only(name))
        sides[domain] = side = InspectDomain(domain, read_tools)
        tasks[domain] = run_domain(bench, side)
    return Comparison(benches, sides, tasks)


@pytest.fixture(scope="module")
def comparison(tau) -> Comparison:
    return compare_all(tau)


# --- what differs ----------------------------------------------------------------------------------

# Every call whose outcome differs between inspect_evals and our tau2 replay, by cause. A change in
# either implementation (or in Inspect, or in the calls generated) changes this table: the test
# asserts it exactly. A call Inspect refuses (its schema check: a wrong enum value, a number as text,
# an argument missing or extra) is no difference: it never reached the tool, and our replay of a log
# does not run it either.
KNOWN_DIFFERENCES: dict[str, frozenset[str]] = {
    # inspect_evals builds FlightInfo/Passenger/Payment objects from the dicts the model passes
    # (``flights``, ``passengers``, ``payment_methods``) with pydantic, which raises a ValidationError
    # for an object with a field missing or of the wrong type. Inspect's schema check lets such a dict
    # through (the parameter is ``list[FlightInfo | dict]``), and a ValidationError is no ToolError:
    # Inspect does not turn it into a tool message but re-raises it from execute_tools.
    # inspect_evals' agent loop catches it and goes on with the user's next message, so the agent's
    # messages of that turn — this call and every call before it in the turn, which did run and may have
    # written to the database — never reach the log (the sample's events still hold them). tau2 returns
    # the same ValidationError text as an error result. Our replay of such a log misses the turn's
    # calls: its database can differ from the one inspect_evals scored. (Seen in a real log written as
    # tests/inspect_tau2_logs.py writes them, airline task 19: cancel_reservation, then in the same
    # turn update_reservation_passengers with a passenger lacking dob; the store's messages hold
    # neither call, the database the cancellation, the scorer says C, our audit Y = 0, y_differs.)
    "inspect_crash": frozenset({
        "tau_airline/7/perturbed/gold[2]/flights:[0].-date",
        "tau_airline/7/perturbed/gold[2]/flights:[0].-flight_number",
        "tau_airline/8/perturbed/gold[3]/flights:[0].-date",
        "tau_airline/8/perturbed/gold[3]/flights:[0].-flight_number",
        "tau_airline/8/perturbed/gold[3]/passengers:[0].-dob",
        "tau_airline/8/perturbed/gold[3]/passengers:[0].-first_name",
        "tau_airline/8/perturbed/gold[3]/passengers:[0].-last_name",
        "tau_airline/8/perturbed/gold[3]/payment_methods:[0].-amount",
        "tau_airline/8/perturbed/gold[3]/payment_methods:[0].-payment_id",
        "tau_airline/8/perturbed/gold[3]/payment_methods:[0].amount:+0.5",
        "tau_airline/17/perturbed/gold[1]/passengers:[0].-dob",
        "tau_airline/17/perturbed/gold[1]/passengers:[0].-first_name",
        "tau_airline/17/perturbed/gold[1]/passengers:[0].-last_name",
    }),
    # ``calculate`` is implemented by each side on its own (tau2 runs eval; inspect_evals and we walk
    # the parsed expression). Both refuse the same expressions, in other words: inspect_evals adds
    # "Invalid expression: " to a syntax error and names the source "<unknown>" where tau2's eval says
    # "<string>" (more wordings in test_calculate_probes). Same verdict, other error text.
    "calculate_error_text": frozenset({
        "tau_airline/12/perturbed/gold[3]/expression:empty",
        "tau_retail/16/perturbed/gold[5]/expression:empty",
    }),
    # An integral float for an integer parameter (``"total_baggages": 2.0``): Inspect's schema check
    # takes it as an integer and its argument conversion passes int(2.0) = 2 to the tool; tau2 gets
    # 2.0, and update_reservation_baggages assigns it to the reservation unvalidated. The results
    # read alike (numbers are normalised), but the database holds 2.0 where inspect_evals' holds 2, so
    # its hash — the DB check — differs from then on. The log records the arguments as the model sent
    # them (2.0), so our replay stores 2.0. (Seen in a real log, airline task 17 with its gold
    # calls but total_baggages 3.0: scorer C, our audit Y = 0, y_differs, every result "same".)
    "inspect_int_coercion": frozenset({
        "tau_airline/12/perturbed/gold[4]/nonfree_baggages:float",
        "tau_airline/12/perturbed/gold[4]/total_baggages:float",
    }),
}


def cause(call: Compared) -> str:
    """The cause of one call's difference (a name of :data:`KNOWN_DIFFERENCES`), from what it shows."""
    tau2_ok = call.tau2 is not None and call.tau2[0]
    if call.inspect.kind == "crash" and not tau2_ok and call.inspect.text.startswith("ValidationError"):
        return "inspect_crash"
    if call.step.name == "calculate" and call.inspect.kind == "error" and not tau2_ok:
        return "calculate_error_text"
    if call.diverged and not call.result_differs and call.step.label.endswith(":float"):
        return "inspect_int_coercion"
    return "unexplained"


def test_the_two_sides_start_from_the_same_database(comparison):
    for domain, side in comparison.sides.items():
        assert side.template.get_hash() == comparison.benches[domain].backend.initial_db_hash


def test_every_base_task_is_compared(comparison):
    for domain, bench in comparison.benches.items():
        assert [run.task.id for run in comparison.tasks[domain]] == list(bench.tasks)
    assert len(comparison.tasks["airline"]) == 50 and len(comparison.tasks["retail"]) == 114
    kinds = {kind: sum(c.inspect.kind == kind for c in comparison.calls)
             for kind in ("ok", "error", "refused", "crash")}
    assert kinds["ok"] > 1500 and kinds["error"] > 1000 and kinds["refused"] > 50, kinds
    # every tool of both domains is called, and runs to a result on both sides
    for domain, bench in comparison.benches.items():
        ran = {c.step.name for run in comparison.tasks[domain] for c in run.calls
               if c.inspect.kind == "ok" and c.tau2 is not None and c.tau2[0]}
        assert ran == set(bench.backend.tools)


def test_calls_differ_only_where_known(comparison):
    found: dict[str, set[str]] = {}
    for call in comparison.calls:
        if call.result_differs or call.diverged:
            found.setdefault(cause(call), set()).add(call.key)
    unexplained = [c.describe() for c in comparison.calls
                   if (c.result_differs or c.diverged) and cause(c) == "unexplained"]
    assert not unexplained, "\n".join(unexplained)
    assert found == {name: set(keys) for name, keys in KNOWN_DIFFERENCES.items()}


def test_the_gold_calls_run_alike_everywhere(comparison):
    """No known difference is met by a gold call: the gold conversation reads the same on both sides."""
    gold = [c for c in comparison.calls if c.run == "gold"]
    assert gold and not [c.describe() for c in gold if c.result_differs or c.diverged or c.inspect.kind == "refused"]


def test_both_sides_end_every_run_with_the_same_database(comparison):
    differing = [(run.task.id, name) for runs in comparison.tasks.values() for run in runs
                 for name, outcome in run.runs.items() if not outcome.same_state]
    # The one run whose databases diverge: the float counts of inspect_int_coercion (airline 12) are
    # overwritten by the gold call that follows, so it ends alike too.
    assert differing == []


def test_the_gold_db_check_is_decided_alike(comparison):
    for domain, bench in comparison.benches.items():
        for run in comparison.tasks[domain]:
            outcome = run.runs["gold"]
            assert outcome.inspect_check and bench.db_matches_gold(outcome.live, run.task), run.task.id


def test_records_compared_as_get_hash_compares(comparison):
    """same_db against inspect_evals' own get_hash, on a run that matches the gold database and one
    that does not, in both domains."""
    for domain in DOMAINS:
        runs = comparison.tasks[domain]
        matching = next(r for r in runs if r.task.gold and r.runs["perturbed"].inspect_check and any(
            not comparison.benches[domain].backend.reads_only(a.name) for a in r.task.gold))
        differing = next(r for r in runs if not r.runs["perturbed"].inspect_check)
        for run in (matching, differing):
            db = run.runs["perturbed"].inspect_db
            assert (run.expected_db.get_hash() == db.get_hash()) == run.runs["perturbed"].inspect_check


def test_no_template_was_changed(comparison):
    for domain, side in comparison.sides.items():
        assert _fingerprint(side.template) == side.template_fingerprint
        backend = comparison.benches[domain].backend
        assert _fingerprint(backend.template_db) == backend.initial_fingerprint


@pytest.mark.slow
def test_the_db_check_of_every_perturbed_run_is_decided_alike(comparison):
    """inspect_evals' DB check and ours (db_matches_gold) on the database after each task's perturbed
    run. Slow: ours hashes the whole database when it differs from the gold one."""
    decided = {True: 0, False: 0}
    for domain, bench in comparison.benches.items():
        for run in comparison.tasks[domain]:
            outcome = run.runs["perturbed"]
            assert bench.db_matches_gold(outcome.live, run.task) == outcome.inspect_check, run.task.id
            decided[outcome.inspect_check] += 1
    assert decided[True] > 20 and decided[False] > 20, decided


# --- probes beyond the gold calls ------------------------------------------------------------------

# calculate on expressions no gold call holds: (expression, inspect's outcome, ours).
CALCULATE_PROBES = [
    ("2 + 2", ("ok", "4.0"), (True, "4.0")),
    ("1/3", ("ok", "0.33"), (True, "0.33")),
    ("10**20", ("ok", "1e+20"), (True, "1e+20")),
    ("2**-1", ("ok", "0.5"), (True, "0.5")),
    # leading blanks: Python's eval (tau2's calculate) skips them, as inspect_evals does and we do
    (" 2+2", ("ok", "4.0"), (True, "4.0")),
    # refused by both, in other words (tau2's own messages are ours, from the same Python errors)
    ("1/0", ("error", "Cannot evaluate expression: division by zero"), (False, "Error: division by zero")),
    ("(1", ("error", "Invalid expression: '(' was never closed (<unknown>, line 1)"),
     (False, "Error: '(' was never closed (<string>, line 1)")),
    ("(-8)**0.5", ("error", "Cannot evaluate expression: the result is a complex number"),
     (False, "Error: float() argument must be a string or a real number, not 'complex'")),
    ("10**400", ("error", "Cannot evaluate expression: int too large to convert to float"),
     (False, "Error: int too large to convert to float")),
    # tau2's eval would compute 2**10000 and fail to make it a float, and hang on 9**9**9; both
    # re-implementations refuse large integers first, each in its own words
    ("2**10000", ("error", "Integer result is too large"), (False, "Error: result too large")),
    ("9**9**9", ("error", "Exponentiation result is too large"), (False, "Error: result too large")),
    ("()", ("error", "Invalid expression: only numbers, +, -, *, /, //, ** and parentheses are allowed"),
     (False, "Error: unsupported expression element: Tuple")),
    ("2e3", ("error", "Invalid characters in expression"), (False, "Error: Invalid characters in expression")),
]


def _one_call(comparison: Comparison, domain: str, name: str, arguments: Mapping[str, Any]) -> tuple[Result, Any]:
    side, bench = comparison.sides[domain], comparison.benches[domain]

    async def call() -> Result:
        return await InspectRun(side).call(name, arguments)

    with side.reads_without_copies():
        result = asyncio.run(call())
    return result, LiveEnvironment(bench.backend).run(structured_call(name, dict(arguments), "probe"))


@pytest.mark.parametrize("expression, inspect_outcome, ours", CALCULATE_PROBES)
def test_calculate_probes(comparison, expression, inspect_outcome, ours):
    result, tau2 = _one_call(comparison, "retail", "calculate", {"expression": expression})
    assert (result.kind, result.text) == inspect_outcome
    assert tau2 == ours


def test_inspect_shows_a_long_result_cut(comparison):
    """Inspect cuts a tool result longer than 16 KiB (its default max_tool_output; inspect_evals sets
    none) and shows the model a truncated version in a note; our replay renders the whole result. A
    one-stop search on a busy route holds 25 kB in inspect_evals' compact JSON. Same verdict, other
    content: the record check reads it as same_verdict."""
    result, (accepted, text) = _one_call(comparison, "airline", "search_onestop_flight",
                                         {"origin": "ATL", "destination": "PHX", "date": "2024-05-25"})
    assert result.kind == "ok" and accepted
    assert result.text.lstrip().startswith("The output of your call to search_onestop_flight was too long")
    assert len(result.text.encode()) < 17 * 1024 < len(text.encode())
    assert canonical(result.text) != canonical(text)
