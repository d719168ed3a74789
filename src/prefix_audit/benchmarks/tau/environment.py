"""Live τ environments on tau2's own classes: a fresh database per rollout, one call at a time.

Every call goes through tau2's per-call API, ``Environment.get_response`` (the same path its
orchestrator uses: the tool runs on the live database, an exception becomes an ``Error: ...`` result
flagged as an error, a return value is rendered to JSON text). Its bulk replay, ``set_state``, is not
used: it skips nothing it could report per call and stops at the first mismatch.

Isolation: a rollout's first call of a tool that may write (anything but tau2's READ and THINK tools)
gets it its own database, validated from the parsed ``db.json`` (pydantic builds new objects
throughout); until then its read-only calls run on one shared pristine database, which tau2's READ
contract (and tests/test_tau_gold.py, which checks its hash after every gold replay) keeps unchanged.
So no state passes between rollouts or to the gold replay. The clock is tau2's own constant (``2024-05-15T15:00:00`` in airline) and new ids are fixed
sequences, so replays are deterministic.

The one call not run by tau2 is ``calculate`` (see :data:`semantics.OWN_IMPLEMENTATION`).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import hashlib
import importlib
import json
import operator
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..base import ToolSpec
from . import semantics as sem
from .data import TauDomain

_CLASSES = {  # domain → (toolkit module, toolkit class, database module, database class)
    "airline": ("tau2.domains.airline.tools", "AirlineTools", "tau2.domains.airline.data_model", "FlightDB"),
    "retail": ("tau2.domains.retail.tools", "RetailTools", "tau2.domains.retail.data_model", "RetailDB"),
}

# --- calculate, without eval ----------------------------------------------------------------------

_CALC_CHARS = frozenset("0123456789+-*/(). ")
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
# Integer results beyond this many bits are refused: `9**9**9` would keep tau2's eval busy for hours.
MAX_INT_BITS = 10_000


def _arithmetic(node: ast.expr) -> int | float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(left, int) and isinstance(right, int) \
                and right > 0 and max(left.bit_length(), 1) * right > MAX_INT_BITS:
            raise ValueError("result too large")
        value = _BINARY[type(node.op)](left, right)
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise ValueError("result too large")
        return value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_arithmetic(node.operand))
    raise TypeError(f"unsupported expression element: {type(node).__name__}")


def calculate(expression: Any) -> str:
    """τ's ``calculate`` semantics — the allowed characters, Python arithmetic, the result rounded to
    two places as text — by walking the parsed expression instead of evaluating it."""
    if not isinstance(expression, str):
        raise TypeError(f"'{type(expression).__name__}' object is not iterable")
    if not all(char in _CALC_CHARS for char in expression):
        raise ValueError("Invalid characters in expression")
    tree = compile(expression, "<string>", "eval", ast.PyCF_ONLY_AST)
    return str(round(float(_arithmetic(tree.body)), 2))


@contextlib.contextmanager
def _quiet_serializer() -> Iterator[None]:
    """pydantic warns when it serialises a value a call stored with the wrong type (tau2 validates no
    arguments); the value is serialised as stored, which is what tau2 hashes and shows."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


# --- tools and their declared interfaces ----------------------------------------------------------


@dataclass(frozen=True)
class ToolInfo:
    spec: ToolSpec  # what the checker validates against (unknown argument names rejected)
    schema: Mapping[str, Any]  # the JSON Schema tau2 offers to the model, unchanged
    kind: str  # tau2's ToolType: read, write, think, generic

    @property
    def may_write(self) -> bool:
        return self.kind not in ("read", "think") and self.spec.name not in sem.OWN_IMPLEMENTATION


class DomainBackend:
    """tau2's classes for one domain and the declared tools; builds fresh live environments."""

    def __init__(self, domain: TauDomain) -> None:
        self.domain = domain
        tools_module, tools_class, db_module, db_class = _CLASSES[domain.name]
        self._toolkit_cls = getattr(importlib.import_module(tools_module), tools_class)
        self._db_cls = getattr(importlib.import_module(db_module), db_class)
        from tau2.data_model.message import ToolCall as Tau2ToolCall
        from tau2.environment.environment import Environment

        self._environment_cls = Environment
        self._call_cls = Tau2ToolCall

    def new_toolkit(self) -> Any:
        return self._toolkit_cls(self._db_cls.model_validate(self.domain.raw_db))

    def new_environment(self) -> Any:
        return self._environment_cls(domain_name=self.domain.name, policy=self.domain.policy,
                                     tools=self.new_toolkit())

    @cached_property
    def tools(self) -> dict[str, ToolInfo]:
        toolkit = self._toolkit_cls(None)
        refs = sem.REFERENCE_PARAMS[self.domain.name]
        out = {}
        for name, tool in sorted(toolkit.get_tools().items()):
            function = tool.openai_schema["function"]
            schema = function["parameters"]
            checked = {**schema, "additionalProperties": False}  # the tool takes keyword arguments only
            spec = ToolSpec(name, checked, function.get("description", ""), tuple(schema.get("properties", {})),
                            frozenset(refs.get(name, ())))
            out[name] = ToolInfo(spec, schema, str(toolkit.tool_type(name).value))
        return out

    @cached_property
    def shared_environment(self) -> Any:
        """The pristine database that read-only calls of every rollout share (reads change nothing)."""
        return self.new_environment()

    @cached_property
    def initial_db_hash(self) -> str:
        return self.shared_environment.get_db_hash()

    @cached_property
    def initial_fingerprint(self) -> str:
        return _fingerprint(self.shared_environment)

    def call(self, environment: Any, name: str, arguments: Mapping[str, Any], call_id: str = "") -> tuple[bool, str]:
        """Run one call on ``environment``: (accepted, the result text the agent sees)."""
        # Copies: tools keep argument objects inside the database.
        arguments = copy.deepcopy(dict(arguments))
        if name in sem.OWN_IMPLEMENTATION and name in self.tools:
            try:
                return True, calculate(**arguments)
            except Exception as exc:  # noqa: BLE001 -- the tool raising is a rejected transition, as in tau2
                return False, f"Error: {exc}"
        with _quiet_serializer():
            message = environment.get_response(self._call_cls(id=call_id, name=name, arguments=arguments))
        return not message.error, message.content


class LiveEnvironment:
    """One rollout's environment. Calls of tools that only read (tau2's ``ToolType.READ``/``THINK``)
    run on the backend's shared pristine environment; the first call of a tool that may write gets
    this rollout its own freshly validated database (equal to the pristine one, as only reads came
    before) — validating the airline database takes about 0.13 s, and most look-ups never need it."""

    def __init__(self, backend: DomainBackend) -> None:
        self.backend = backend
        self._own: Any = None  # this rollout's environment, once a call may write
        self.errors = 0

    @property
    def dirty(self) -> bool:
        return self._own is not None

    def call(self, name: str, arguments: Mapping[str, Any], call_id: str = "") -> tuple[bool, str]:
        info = self.backend.tools.get(name)
        if info is not None and info.may_write and self._own is None:
            self._own = self.backend.new_environment()
        environment = self._own if self._own is not None else self.backend.shared_environment
        accepted, text = self.backend.call(environment, name, arguments, call_id)
        self.errors += not accepted
        return accepted, text

    def db_hash(self) -> str:
        """tau2's hash of the database (its DB check compares these): sorted-key JSON of the dump."""
        if self._own is None:
            return self.backend.initial_db_hash
        with _quiet_serializer():
            return self._own.get_db_hash()

    def db_fingerprint(self) -> str:
        """A hash of the database's JSON in field and insertion order (pydantic's own serialiser,
        about three times faster than :meth:`db_hash`). Equal fingerprints mean equal JSON, hence
        equal tau2 hashes; different ones can still be the same content in another key order."""
        if self._own is None:
            return self.backend.initial_fingerprint
        return _fingerprint(self._own)


def _fingerprint(environment: Any) -> str:
    with _quiet_serializer():
        return hashlib.sha256(environment.tools.db.model_dump_json().encode()).hexdigest()


def result_value(text: str) -> Any:
    """The structured value of a result text (JSON where it parses), for finding the ids it holds."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return text
