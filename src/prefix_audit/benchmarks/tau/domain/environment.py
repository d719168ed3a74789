"""Live τ environments on tau2's own classes: a fresh database per rollout, one call at a time.

Every call goes through tau2's per-call API, ``Environment.get_response`` (the same path its
orchestrator uses: the tool runs on the live database, an exception becomes an ``Error: ...`` result
flagged as an error, a return value is rendered to JSON text). Its bulk replay, ``set_state``, is not
used: it skips nothing it could report per call and stops at the first mismatch.

Isolation: the database is validated once per backend (the template) and every rollout gets its own
copy-on-write view of it (:class:`.copy_on_write.CopyOnWriteTable`): a call of a tool that may write (anything but
tau2's READ and THINK tools) works on private deep copies of the records it reaches, while tools that
only read see the template's records, which tau2's READ contract keeps unchanged (tests check the
template against a freshly validated database after every gold replay, and that copy-on-write and
validated environments answer every call alike). So no state passes between rollouts or to the gold
replay. The clock is tau2's own constant (``2024-05-15T15:00:00`` in airline) and new ids are fixed
sequences, so replays are deterministic.

Hashes: tau2's DB check compares ``get_db_hash`` (sha256 of the database dump as sorted-key JSON). A
copy-on-write database's hash is put together from the template's records, written once per process,
and the records writing calls reached (:meth:`DomainBackend.db_hash_of`: the same text, to the byte,
without dumping the whole database); tau2's own evaluators get environments of the same kind, whose
hash is tau2's own except that a database still reading as the fresh one answers tau2's hash of the
fresh one (:meth:`DomainBackend.evaluator_environment`).

The one call not run by tau2 is ``calculate`` (see :data:`semantics.OWN_IMPLEMENTATION`).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib
import json
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from prefix_audit.plugin import StateIndex, ToolCall, ToolSpec

from . import semantics as sem
from .calculator import calculate
from .copy_on_write import AccessMode, CopyOnWriteTable
from .data import TauDomain

_CLASSES = {  # domain → (toolkit module, toolkit class, database module, database class)
    "airline": ("tau2.domains.airline.tools", "AirlineTools", "tau2.domains.airline.data_model", "FlightDB"),
    "retail": ("tau2.domains.retail.tools", "RetailTools", "tau2.domains.retail.data_model", "RetailDB"),
}


@contextlib.contextmanager
def quiet_serializer() -> Iterator[None]:
    """pydantic warns when it serialises a value a call stored with the wrong type (tau2 validates no
    arguments); the value is serialised as stored, which is what tau2 hashes and shows."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


READ = "read"  # tau2's ToolType of a tool that only reads the database


@dataclass(frozen=True)
class ToolInfo:
    spec: ToolSpec  # what the checker validates against (unknown argument names rejected)
    schema: Mapping[str, Any]  # the JSON Schema tau2 offers to the model, unchanged
    kind: str  # tau2's ToolType: read, write, think, generic

    @property
    def may_write(self) -> bool:
        return self.kind not in (READ, "think") and self.spec.name not in sem.OWN_IMPLEMENTATION


def tool_infos(toolkit: Any, refs: Mapping[str, Sequence[str]],
               information: frozenset[str] = frozenset()) -> dict[str, ToolInfo]:
    """The tools a tau2 toolkit declares (its ``is_tool`` methods), by name: tau2's JSON Schema, the
    spec the checker validates against, and tau2's tool type (its READ tools are the spec's
    ``read_only``); ``refs`` names each tool's reference parameters, ``information`` the parameters
    whose values come from the user."""
    out = {}
    for name, tool in sorted(toolkit.get_tools().items()):
        function = tool.openai_schema["function"]
        schema = function["parameters"]
        checked = {**schema, "additionalProperties": False}  # the tool takes keyword arguments only
        kind = str(toolkit.tool_type(name).value)
        params = tuple(schema.get("properties", {}))
        # What a call looks up by the user's own facts (email, name and zip, order and reservation ids):
        # attribution reads a failure there as the user's information where the user said them.
        spec = ToolSpec(name, checked, function.get("description", ""), params, frozenset(refs.get(name, ())),
                        read_only=kind == READ, identifying_params=information & set(params))
        out[name] = ToolInfo(spec, schema, kind)
    return out


def tau2_agent_tools() -> dict[str, frozenset[str]]:
    """The agent's tool names of every domain the imported tau2 ships, read off its own toolkits
    (``tau2.domains.<domain>.tools``: the methods its ``is_tool`` decorator marks), airline and retail
    telecom and domains we do not replay (mock): what a log of calls but no domain name is matched
    against (:func:`..ingest.containers.domain_of_tools`). A domain whose tools module does not import is left out."""
    import pkgutil

    import tau2.domains
    from tau2.environment.toolkit import TOOL_ATTR, ToolKitBase

    found: dict[str, frozenset[str]] = {}
    for module in pkgutil.iter_modules(tau2.domains.__path__):
        try:
            tools = importlib.import_module(f"tau2.domains.{module.name}.tools")
        except Exception:  # noqa: BLE001 -- a domain that needs what is not installed names no tools here
            continue
        names = {name for obj in vars(tools).values()
                 if isinstance(obj, type) and issubclass(obj, ToolKitBase) and obj is not ToolKitBase
                 and obj.__module__ == tools.__name__
                 for name in dir(obj) if hasattr(getattr(obj, name, None), TOOL_ATTR)}
        if names:
            found[module.name] = frozenset(names)
    return found


class DomainBackend:
    """tau2's classes for one domain and the declared tools; builds fresh live environments.

    The database is validated from ``db.json`` once per backend (the template); every environment
    gets a copy-on-write view of it (:class:`CopyOnWriteTable`), which costs microseconds where
    validating costs 0.05–0.2 s, and holds exactly what a freshly validated database would."""

    def __init__(self, domain: TauDomain) -> None:
        self.domain = domain
        tools_module, tools_class, db_module, db_class = _CLASSES[domain.name]
        self._toolkit_cls = getattr(importlib.import_module(tools_module), tools_class)
        self._db_cls = getattr(importlib.import_module(db_module), db_class)
        from tau2.data_model.message import ToolCall as Tau2ToolCall
        from tau2.environment.environment import Environment

        self._environment_cls = Environment
        self._call_cls = Tau2ToolCall

    def dump_of(self, db: Mapping[str, Any]) -> dict[str, Any]:
        """A database given as JSON (another harness's record of one) validated as this domain's
        database and dumped as tau2's DB check dumps it to hash it (ValueError where it does not
        validate); :func:`dump_hash` is then tau2's hash of it."""
        validated = self._db_cls.model_validate(db)
        with quiet_serializer():
            return validated.model_dump()

    def validated_db(self) -> Any:
        """A database validated from the parsed ``db.json`` (pydantic builds new objects throughout)."""
        return self._db_cls.model_validate(self.domain.raw_db)

    @cached_property
    def template_db(self) -> Any:
        """The validated database that every environment's copy-on-write tables start from. Nothing
        may change it: only tools that read reach its records (see :class:`AccessMode`)."""
        return self.validated_db()

    def copy_on_write_db(self, mode: AccessMode) -> Any:
        """A database equal to a freshly validated one whose tables copy a record when a writing call
        first reaches it. A top-level field that is not a table of models is deep-copied outright."""
        template = self.template_db
        fields = {name: CopyOnWriteTable(getattr(template, name), mode) if name in self._table_fields
                  else copy.deepcopy(getattr(template, name)) for name in type(template).model_fields}
        return template.model_copy(update=fields)

    @cached_property
    def _table_fields(self) -> frozenset[str]:
        """The database's top-level fields that are tables (a dict of pydantic records)."""
        from pydantic import BaseModel

        template = self.template_db
        return frozenset(name for name in type(template).model_fields
                         if type(value := getattr(template, name)) is dict
                         and all(isinstance(v, BaseModel) for v in value.values()))

    def _environment(self, db: Any) -> Any:
        return self._environment_cls(domain_name=self.domain.name, policy=self.domain.policy,
                                     tools=self._toolkit_cls(db))

    def new_environment(self, mode: AccessMode) -> Any:
        """A fresh tau2 environment on a copy-on-write database governed by ``mode``."""
        return self._environment(self.copy_on_write_db(mode))

    def validated_environment(self) -> Any:
        """A fresh tau2 environment on a fully validated database: what :meth:`new_environment` must
        equal, call for call (the tests and ``bench/tau_environment.py`` compare the two)."""
        return self._environment(self.validated_db())

    @cached_property
    def tools(self) -> dict[str, ToolInfo]:
        return tool_infos(self._toolkit_cls(None), sem.REFERENCE_PARAMS[self.domain.name],
                          sem.INFORMATION_PARAMS.get(self.domain.name, frozenset()))

    def reads_only(self, name: str) -> bool:
        """A declared tool that cannot change the database (an unknown name counts as writing: tau2
        rejects it before it reaches anything, and copying is the safe side)."""
        info = self.tools.get(name)
        return info is not None and not info.may_write

    @cached_property
    def initial_db_hash(self) -> str:
        """tau2's own hash of a fresh database (its ``get_db_hash`` run once per backend)."""
        with quiet_serializer():
            return self._toolkit_cls(self.template_db).get_db_hash()

    @cached_property
    def _template_rows(self) -> dict[str, dict[str, str]] | None:
        """Per table and key, the ``"key": {record}`` text the template's record has in the text tau2's
        ``get_db_hash`` hashes (``json.dumps(db.model_dump(), sort_keys=True, default=str)``). None
        where the dump is not tables alone keyed by strings, or where the rows put together do not give
        tau2's own hash of the template (:attr:`initial_db_hash`): every hash is then tau2's own."""
        with quiet_serializer():
            dump = self.template_db.model_dump()
        if not set(dump) == self._table_fields == set(type(self.template_db).model_fields) \
                or any(type(k) is not str for table in dump.values() for k in table):
            return None
        rows = {name: {k: _row(k, v) for k, v in table.items()} for name, table in dump.items()}
        return rows if _digest(_joined(rows)) == self.initial_db_hash else None

    def _changed_rows(self, db: Any) -> frozenset[tuple[str, str, str | None]] | None:
        """Where the text tau2's ``get_db_hash`` hashes for ``db`` differs from the template's: (table,
        key, the row's text, None for a key the template has and ``db`` has not). Only the records that
        are not the template's own objects (:meth:`CopyOnWriteTable.own_entries`: those a writing call
        reached or stored) are serialised: by the database's own serialiser (a database holding just
        them) and with tau2's ``json.dumps`` options. A JSON object with sorted keys is its sorted rows,
        each written as it is alone, so the rows and the template's determine the text to the byte.
        None where :attr:`_template_rows` is, or ``db`` is not a copy-on-write view of this template
        (:meth:`copy_on_write_db`) keyed by strings."""
        rows, template = self._template_rows, self.template_db
        if rows is None or type(db) is not type(template):
            return None
        reached: dict[str, dict[Any, Any]] = {}
        gone: list[tuple[str, Any, str | None]] = []
        for name in rows:
            table, base = getattr(db, name), getattr(template, name)
            if not isinstance(table, CopyOnWriteTable) or table.template is not base:
                return None
            reached[name] = table.own_entries()
            if any(type(k) is not str for k in reached[name]):
                return None
            gone += [(name, k, None) for k in rows[name].keys() - dict.keys(table)]
        with quiet_serializer():
            dumped = type(db).model_construct(**reached).model_dump()
        changed = [(name, k, row) for name, records in reached.items() for k in records
                   if (row := _row(k, dumped[name][k])) != rows[name].get(k)]
        return frozenset(changed + gone)

    def db_hash_of(self, db: Any) -> str:
        """tau2's hash of ``db`` (its ``get_db_hash``: sha256 of the sorted-key JSON of the dump), put
        together from the template's rows and :meth:`_changed_rows` (tau2's own ``get_db_hash`` where
        those are None), once per process for each set of changed rows: the cost is the records calls
        reached, not the whole database (airline: a few ms where tau2 takes 0.15 s)."""
        changed = self._changed_rows(db)
        if changed is None:
            with quiet_serializer():
                return dump_hash(db.model_dump())
        if changed not in self._hashes:
            tables = {name: dict(rows) for name, rows in (self._template_rows or {}).items()}
            for name, key, row in changed:
                if row is None:
                    del tables[name][key]
                else:
                    tables[name][key] = row
            self._hashes[changed] = _digest(_joined(tables))
        return self._hashes[changed]

    @cached_property
    def _hashes(self) -> dict[frozenset[tuple[str, str, str | None]], str]:
        """tau2's hash by the rows that differ from the template's (none: tau2's own of the template)."""
        return {frozenset(): self.initial_db_hash}

    def evaluator_environment(self, get_environment: Any, solo_mode: bool = False) -> Any:
        """A fresh tau2 environment for tau2's own evaluators: tau2's constructor ``get_environment``
        handed a copy-on-write copy of the template under the rule every live environment keeps (a
        call of a tool that may write gets private deep copies of the records it reaches; tau2's READ
        tools see the template's records, which they leave as they are), so it holds exactly what a
        freshly validated database would, without validating ``db.json`` again (airline: 0.1 s, two
        environments per reward) nor copying the flights a search reads. Its ``get_db_hash`` is tau2's
        own, except where the text tau2 hashes is still the fresh database's (no row differs:
        :meth:`_changed_rows`): there it answers tau2's own hash of the fresh database
        (:attr:`initial_db_hash`), the same text hashed."""
        mode = AccessMode()
        environment = get_environment(db=self.copy_on_write_db(mode), solo_mode=solo_mode)
        toolkit = environment.tools
        tau2_hash, tau2_use_tool = toolkit.get_db_hash, toolkit.use_tool

        def get_db_hash() -> str:
            return self.initial_db_hash if self._changed_rows(toolkit.db) == frozenset() else tau2_hash()

        def use_tool(tool_name: str, **kwargs: Any) -> Any:
            if not self.reads_only(tool_name):
                return tau2_use_tool(tool_name, **kwargs)
            with mode.reading():
                return tau2_use_tool(tool_name, **kwargs)

        # both shadow tau2's methods on this toolkit only
        toolkit.get_db_hash, toolkit.use_tool = get_db_hash, use_tool
        return environment

    @cached_property
    def template_index(self) -> StateIndex:
        """Which records of the initial database hold each value (built once per backend)."""
        return StateIndex(self.template_db)

    @cached_property
    def initial_fingerprint(self) -> str:
        return _fingerprint(self.template_db)

    def call(self, environment: Any, name: str, arguments: Mapping[str, Any], call_id: str = "") -> tuple[bool, str]:
        """Run one call on ``environment``: (accepted, the result text the agent sees)."""
        # Copies: tools keep argument objects inside the database.
        arguments = copy.deepcopy(dict(arguments))
        if name in sem.OWN_IMPLEMENTATION and name in self.tools:
            try:
                return True, calculate(**arguments)
            except Exception as exc:  # noqa: BLE001 -- the tool raising is a rejected transition, as in tau2
                return False, f"Error: {exc}"
        with quiet_serializer():
            message = environment.get_response(self._call_cls(id=call_id, name=name, arguments=arguments))
        return not message.error, message.content


class LiveEnvironment:
    """One rollout's environment: a tau2 environment on its own copy-on-write database
    (:meth:`DomainBackend.new_environment`). Calls of tools that only read reach the shared template
    records as they are; any other call gets private copies of what it reaches, so no state passes
    between rollouts. Until a call that may write has run, the database equals the template and its
    hashes are the template's (computed once per backend)."""

    def __init__(self, backend: DomainBackend) -> None:
        self.backend = backend
        self._mode = AccessMode()
        self._environment = backend.new_environment(self._mode)
        self._wrote = False  # a call that may write has run
        self.errors = 0

    def run(self, call: ToolCall, requestor: str = "assistant") -> tuple[bool, str]:
        """Run one well-formed parsed call. tau2 takes keyword arguments only; positional ones (from
        call text) bind in the declared parameter order, in replay and in live episodes alike. Only
        the agent calls tools here (airline and retail users have none)."""
        if requestor != "assistant":
            raise ValueError(f"a {self.backend.domain.name} user has no tools (a call by {requestor!r})")
        info = self.backend.tools.get(call.name or "")
        arguments = dict(zip(info.spec.positional_order, call.args, strict=False)) if info else {}
        arguments.update(call.kwargs)
        return self.call(call.name or "", arguments, call.call_id or "")

    def call(self, name: str, arguments: Mapping[str, Any], call_id: str = "") -> tuple[bool, str]:
        if self.backend.reads_only(name):
            with self._mode.reading():
                accepted, text = self.backend.call(self._environment, name, arguments, call_id)
        else:
            self._wrote = True
            accepted, text = self.backend.call(self._environment, name, arguments, call_id)
        self.errors += not accepted
        return accepted, text

    @contextlib.contextmanager
    def reading_db(self) -> Iterator[Any]:
        """The database, to read only (its records are handed out without copies)."""
        with self._mode.reading():
            yield self._environment.tools.db

    def order_status(self, order_id: Any) -> str | None:
        """The status of a retail order (None: no such order, or no orders in this domain)."""
        with self.reading_db() as db:
            orders = getattr(db, "orders", None)
            if not isinstance(order_id, str) or orders is None or order_id not in orders:
                return None
            return str(orders[order_id].status)

    def holds(self, values: Sequence[Any]) -> bool:
        """Whether one record of the database holds every value (attribution; :class:`StateIndex`)."""
        if not self._wrote:
            return self.backend.template_index.holds(values)
        with self.reading_db() as db:
            return StateIndex(db).holds(values)

    def db_hash(self) -> str:
        """tau2's hash of the database (its DB check compares these): sorted-key JSON of the dump
        (:meth:`DomainBackend.db_hash_of`)."""
        if not self._wrote:
            return self.backend.initial_db_hash
        return self.backend.db_hash_of(self._environment.tools.db)

    def hashes_beside(self, dump: dict[str, Any]) -> tuple[str, str]:
        """tau2's hashes of this database and of another's ``dump`` (:meth:`DomainBackend.dump_of`),
        the JSON behind them written once where the two dumps are equal."""
        if not self._wrote:
            return self.backend.initial_db_hash, dump_hash(dump)
        with quiet_serializer():
            own = self._environment.tools.db.model_dump()
        own_hash = dump_hash(own)
        return own_hash, own_hash if own == dump else dump_hash(dump)

    def db_fingerprint(self) -> str:
        """A hash of the database's JSON in field and insertion order (pydantic's own serialiser,
        about three times faster than :meth:`db_hash`). Equal fingerprints mean equal JSON, hence
        equal tau2 hashes; different ones can still be the same content in another key order."""
        if not self._wrote:
            return self.backend.initial_fingerprint
        return _fingerprint(self._environment.tools.db)


def dump_hash(dump: dict[str, Any]) -> str:
    """tau2's hash of a database dump (its ``get_db_hash`` is this of the database's ``model_dump``)."""
    from tau2.utils.utils import get_dict_hash

    return get_dict_hash(dump)


def _row(key: str, value: Any) -> str:
    """A member of a JSON object as tau2's ``get_dict_hash`` writes it (``json.dumps``, sorted keys,
    ``default=str``; a value nested in an object reads as it does alone)."""
    return f"{json.dumps(key)}: {json.dumps(value, sort_keys=True, default=str)}"


def _joined(tables: Mapping[str, Mapping[str, str]]) -> str:
    """The JSON text of a database dump with sorted keys, from its tables' rows by key."""
    return "{" + ", ".join(f"{json.dumps(name)}: {{{', '.join(rows[k] for k in sorted(rows))}}}"
                           for name, rows in sorted(tables.items())) + "}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()  # tau2's get_dict_hash of the dump that text is


def _fingerprint(db: Any) -> str:
    with quiet_serializer():
        return hashlib.sha256(db.model_dump_json().encode()).hexdigest()


def result_value(text: str) -> Any:
    """The structured value of a result text (JSON where it parses), for finding the ids it holds."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or an integer too long for it
        return text
