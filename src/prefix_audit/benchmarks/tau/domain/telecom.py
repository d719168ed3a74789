"""Live τ² telecom environments on tau2's own classes: the provider's database and the user's device.

Telecom's control is shared: the agent calls the provider's tools (``TelecomTools``, on ``db.toml``)
and the user calls the tools of their own phone (``TelecomUserTools``, on ``user_db.toml``); tau2's
``TelecomEnvironment`` couples the two after every successful call (``sync_tools``: the line's
status, roaming and data allowance reach the phone, a payment the user made marks the bill paid, a
bill awaiting payment becomes the phone's payment request).

Every call goes through tau2's per-call API, ``Environment.get_response``, with the caller as the
call's ``requestor`` (the path tau2's orchestrator takes and its evaluator replays): an exception
becomes an ``Error: ...`` result flagged as an error, a return value is rendered to JSON text, and a
successful call is followed by ``sync_tools``. In tau2's solo mode (``get_environment(solo_mode=True)``:
no user; the agent holds the phone too) the environment is put in solo mode as tau2 puts it
(``set_solo_mode``): it then routes an agent's call of a phone tool to the phone, and refuses any
call whose requestor is the user. A rollout's environment starts from deep copies of
the two databases validated once per backend (a copy costs under a millisecond), then runs the
task's initialization actions as tau2's ``set_state`` does (``run_env_function_call``, each followed
by ``sync_tools``). The clock is tau2's own constant (``2025-02-25``); the one identifier telecom's
tools draw at random (a new bill's id, ``uuid.uuid4``) comes from a fixed sequence per environment,
so replays are deterministic.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib
import pickle
import uuid
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

from prefix_audit.plugin import StateIndex, ToolCall

from . import semantics as sem
from .data import EnvAssertion, EnvCall, GoldAction, TauDomain, TauTask
from .environment import ToolInfo, quiet_serializer, tool_infos

TOOLS_MODULE = "tau2.domains.telecom.tools"
ASSISTANT, USER = "assistant", "user"


class SeededIds:
    """Stands in for the ``uuid`` module inside telecom's tools while one environment's call runs:
    ``uuid4()`` yields a fixed sequence per environment (the n-th id is derived from n)."""

    def __init__(self) -> None:
        self.drawn = 0

    def uuid4(self) -> uuid.UUID:
        self.drawn += 1
        digest = hashlib.sha256(f"prefix-audit telecom id {self.drawn}".encode()).digest()
        return uuid.UUID(bytes=digest[:16], version=4)


class TelecomBackend:
    """tau2's telecom classes and declared tools (the agent's and the user's); builds fresh live
    environments. Offers what :class:`~.environment.DomainBackend` offers the τ adapter."""

    def __init__(self, domain: TauDomain) -> None:
        self.domain = domain
        from tau2.data_model.message import ToolCall as Tau2ToolCall
        from tau2.domains.telecom.data_model import TelecomDB
        from tau2.domains.telecom.environment import TelecomEnvironment
        from tau2.domains.telecom.tools import TelecomTools
        from tau2.domains.telecom.user_data_model import TelecomUserDB
        from tau2.domains.telecom.user_tools import TelecomUserTools

        assert domain.files.user_db is not None
        # The validated databases, pickled: each environment unpickles its own deep copies (a third of
        # what copy.deepcopy takes, which was a third of a task's health: 16 environments a task).
        self._templates = tuple(pickle.dumps(db, pickle.HIGHEST_PROTOCOL) for db in (
            TelecomDB.load(str(domain.files.db)), TelecomUserDB.load(str(domain.files.user_db))))
        self._tools_cls, self._user_tools_cls = TelecomTools, TelecomUserTools
        self._environment_cls, self._call_cls = TelecomEnvironment, Tau2ToolCall
        self._tools_module: Any = importlib.import_module(TOOLS_MODULE)  # its uuid is swapped while seeded

    @cached_property
    def tools(self) -> dict[str, ToolInfo]:
        """The agent's tools (what the agent is offered and the checker validates against)."""
        return tool_infos(self._tools_cls(None), sem.REFERENCE_PARAMS[self.domain.name],
                          sem.INFORMATION_PARAMS[self.domain.name])

    @cached_property
    def user_tools(self) -> dict[str, ToolInfo]:
        """The user's tools (their phone): replayed, scored as the agent's only in solo mode."""
        return tool_infos(self._user_tools_cls(None), {})

    @cached_property
    def solo_tools(self) -> dict[str, ToolInfo]:
        """The solo agent's tools: the provider's and the phone's (tau2's run hands it both lists;
        its solo environment refuses overlapping names, and telecom's have none)."""
        return {**self.tools, **self.user_tools}

    def new_environment(self, solo: bool = False) -> Any:
        """A fresh tau2 telecom environment on copies of the validated databases (before any set-up),
        in tau2's solo mode where ``solo``."""
        db, user_db = map(pickle.loads, self._templates)
        environment = self._environment_cls(domain_name=self.domain.name, policy=self.domain.policy,
                                            tools=self._tools_cls(db), user_tools=self._user_tools_cls(user_db))
        if solo:
            environment.set_solo_mode(True)
        return environment

    @contextlib.contextmanager
    def seeded(self, ids: SeededIds) -> Iterator[None]:
        """Telecom's tools draw their new ids from ``ids`` while the block runs."""
        module = self._tools_module
        saved = module.uuid
        module.uuid = ids
        try:
            with quiet_serializer():
                yield
        finally:
            module.uuid = saved

    def response(self, environment: Any, name: str, arguments: Mapping[str, Any], call_id: str,
                 requestor: str) -> tuple[bool, str]:
        """One call through tau2's ``get_response``: (accepted, the result text the caller sees)."""
        # Copies: tools keep argument objects inside the databases.
        call = self._call_cls(id=call_id, name=name, arguments=copy.deepcopy(dict(arguments)), requestor=requestor)
        message = environment.get_response(call)
        return not message.error, message.content


class TelecomLive:
    """One rollout's telecom environment: both databases fresh, the task's set-up applied. Calls of
    either party run in the order given; ``errors`` counts the agent's and the user's failed calls
    alike, as tau2's orchestrator counts every tool error against ``max_errors``. ``solo``: tau2's
    solo mode, where the agent's calls reach the phone's tools too."""

    def __init__(self, backend: TelecomBackend, task: TauTask | None, solo: bool = False) -> None:
        self.backend = backend
        self.solo = solo
        self._ids = SeededIds()
        self._environment = backend.new_environment(solo)
        self.errors = 0
        for action in task.initialization if task is not None else ():
            self.run_function(action)

    def run_function(self, action: EnvCall) -> Any:
        """One of tau2's environment functions (set-up or assertion) as ``run_env_function_call``
        runs it; raises what the function raises."""
        from tau2.data_model.tasks import EnvFunctionCall

        with self.backend.seeded(self._ids):
            return self._environment.run_env_function_call(
                EnvFunctionCall(env_type=action.env_type, func_name=action.func_name,
                                arguments=copy.deepcopy(dict(action.arguments))))

    def gold_call(self, action: GoldAction) -> None:
        """A gold action as tau2's evaluator runs it on its gold environment: ``make_tool_call`` by the
        action's requestor, no ``sync_tools`` after it, a failing one skipped."""
        # tau2 skips a failing gold action (with a warning)
        with self.backend.seeded(self._ids), contextlib.suppress(Exception):
            self._environment.make_tool_call(action.name, requestor=action.requestor,
                                             **copy.deepcopy(dict(action.arguments)))

    def assertion(self, assertion: EnvAssertion) -> bool:
        """tau2's ``run_env_assertion`` (without raising): the function's result equals ``assert_value``;
        a function that fails or returns no boolean does not hold."""
        try:
            result = self.run_function(assertion)
        except Exception:  # noqa: BLE001 -- a failing assertion function is an unmet assertion
            return False
        return isinstance(result, bool) and result == assertion.assert_value

    def run(self, call: ToolCall, requestor: str = ASSISTANT) -> tuple[bool, str]:
        """Run one well-formed parsed call of ``requestor``; positional arguments (from call text)
        bind in the declared parameter order."""
        if requestor != ASSISTANT:
            tools = self.backend.user_tools
        else:
            tools = self.backend.solo_tools if self.solo else self.backend.tools
        info = tools.get(call.name or "")
        arguments = dict(zip(info.spec.positional_order, call.args, strict=False)) if info else {}
        arguments.update(call.kwargs)
        return self.call(call.name or "", arguments, call.call_id or "", requestor)

    def call(self, name: str, arguments: Mapping[str, Any], call_id: str = "",
             requestor: str = ASSISTANT) -> tuple[bool, str]:
        with self.backend.seeded(self._ids):
            accepted, text = self.backend.response(self._environment, name, arguments, call_id, requestor)
        self.errors += not accepted
        return accepted, text

    def holds(self, values: Sequence[Any]) -> bool:
        """Whether one record of the provider's database holds every value (attribution)."""
        return StateIndex(self._environment.tools.db).holds(values)

    def db_hash(self) -> str:
        """tau2's hash of the provider's database."""
        with quiet_serializer():
            return self._environment.get_db_hash()

    def user_db_hash(self) -> str:
        """tau2's hash of the user's device."""
        with quiet_serializer():
            return self._environment.get_user_db_hash()

    def db_fingerprint(self) -> str:
        """Both databases' hashes: equal fingerprints are tau2's DB check passing."""
        return f"{self.db_hash()}:{self.user_db_hash()}"
