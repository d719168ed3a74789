"""The sandboxed loader of bfcl-eval's environment classes: isolated instances per session, and
calls dispatched by name to their public methods.

The package's own executor builds call strings and ``eval``s them, and keeps instances in module
globals across entries; we never call it on model output. Calls are parsed with :mod:`ast`
(:mod:`prefix_audit.core.calls`) and dispatched by name to the public methods of fresh instances of the
entry's involved classes, loaded through their scenario loader on a deep copy of
``initial_config``, with every module-level value the classes mutate restored first.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib
import inspect
import json
import keyword
import os
import pickle
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from prefix_audit.plugin import ToolCall

from . import semantics as sem
from .data import Entry

PACKAGE = "bfcl_eval"
CLASS_PACKAGE = f"{PACKAGE}.eval_checker.multi_turn_eval.func_source_code"


def class_files(root: str | Path) -> list[Path]:
    """The source of the environment classes of the wheel unpacked at ``root`` (every module of their
    package: they import each other)."""
    return sorted((Path(root) / CLASS_PACKAGE.replace(".", "/")).rglob("*.py"))


def _ours(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def _root_of(module: Any) -> Path | None:
    file = getattr(module, "__file__", None)
    return Path(file).resolve().parent.parent if file else None


def environment_modules(root: Path, names: list[str]) -> dict[str, Any]:
    """The environment modules ``names`` (of :data:`CLASS_PACKAGE`) of the wheel unpacked at ``root``.

    The first wheel imported in a process takes the package's own name. Another release (older
    data of a result file) has the same module names, so it is imported with the first one's
    modules set aside and then renamed ``bfcl_eval_<version>…`` (classes too, so that pickling
    finds them); the first one's modules are restored untouched. Its modules import each other by
    absolute name only at import time, so they keep to their own release.
    """
    root = root.resolve()
    first = sys.modules.get(PACKAGE)
    if first is None or _root_of(first) == root:
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        return {n: importlib.import_module(f"{CLASS_PACKAGE}.{n}") for n in names}
    alias = PACKAGE + "_" + "".join(c if c.isalnum() else "_" for c in root.name)
    if f"{alias}.eval_checker" not in sys.modules:
        set_aside = {k: sys.modules.pop(k) for k in [k for k in sys.modules if _ours(k)]}
        sys.path.insert(0, str(root))
        importlib.invalidate_caches()
        try:
            for n in names:
                importlib.import_module(f"{CLASS_PACKAGE}.{n}")
        finally:
            loaded = {k: sys.modules.pop(k) for k in [k for k in sys.modules if _ours(k)]}
            sys.path.remove(str(root))
            sys.modules.update(set_aside)
            importlib.invalidate_caches()
        for name, module in loaded.items():
            renamed = alias + name[len(PACKAGE):]
            module.__name__ = renamed
            for value in vars(module).values():
                if isinstance(value, type) and value.__module__ == name:
                    value.__module__ = renamed
            sys.modules[renamed] = module
    package = alias + CLASS_PACKAGE[len(PACKAGE):]
    return {n: sys.modules[f"{package}.{n}"] for n in names}


class ClassLoader:
    """Imports the environment modules once; builds isolated instances."""

    PROTOTYPES_KEPT = 256  # pickled loaded entries kept for copying

    def __init__(self, root: Path) -> None:
        # Some classes format timestamps in local time; pin the zone so results are reproducible.
        os.environ["TZ"] = "UTC"
        time.tzset()
        self.classes: dict[str, type] = {}
        self._prototypes: dict[tuple[str, str], bytes] = {}
        self._pristine: list[tuple[Any, str, Any]] = []
        modules = environment_modules(root, [*sem.CLASS_MODULES.values(), *sem.MUTABLE_MODULE_STATE])
        for cls_name, module_name in sem.CLASS_MODULES.items():
            self.classes[cls_name] = getattr(modules[module_name], cls_name)
        for module_name, names in sem.MUTABLE_MODULE_STATE.items():
            for name in names:
                self._pristine.append((modules[module_name], name, copy.deepcopy(getattr(modules[module_name], name))))

    def reset_module_state(self) -> None:
        # In place: other modules imported these objects by name, so rebinding would not reach them.
        for module, name, pristine in self._pristine:
            current = getattr(module, name)
            if current != pristine:
                current.clear()
                current.update(copy.deepcopy(pristine))

    def instantiate(self, entry: Entry) -> dict[str, Any]:
        """Fresh instances of the entry's classes, sharing nothing with the module or each other."""
        # Keyed by the release whose data the entry is too: health loads one release's entry on another
        # release's classes (the same id, other data) to compare the classes' behaviour.
        key = (entry.id, entry.release)
        if key not in self._prototypes:
            if len(self._prototypes) >= self.PROTOTYPES_KEPT:
                self._prototypes.pop(next(iter(self._prototypes)))
            self._prototypes[key] = pickle.dumps(self._load(entry), protocol=pickle.HIGHEST_PROTOCOL)
        return pickle.loads(self._prototypes[key])

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


@cache
def _public_method_names(cls: type) -> tuple[str, ...]:
    return tuple(name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_"))


def method_table(instances: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """Public method name → (class, bound method); later classes win, as in BFCL's executor."""
    table: dict[str, tuple[str, Any]] = {}
    for cls_name, instance in instances.items():
        cls: type = type(instance)  # (annotated: mypy takes the class of an Any for unhashable)
        for name in _public_method_names(cls):
            table[name] = (cls_name, getattr(instance, name))
    return table


def is_error_value(value: Any) -> bool:
    """BFCL's error surface: an ``{"error": ...}`` dict, or a list holding one (some list-returning
    methods report failure as ``[{"error": ...}]`` or ``["Error: ..."]``)."""
    if isinstance(value, dict):
        return "error" in value
    if isinstance(value, list) and len(value) == 1:
        item = value[0]
        return (isinstance(item, dict) and "error" in item) or (isinstance(item, str) and item.startswith("Error"))
    return False


@cache
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


def _syntax_error(call: ToolCall) -> str | None:
    """BFCL's executor evaluates the call as Python text (``name(k=repr(v), …)``); a call whose name
    or keywords are no Python names fails to parse there. Its message, from parsing the same text
    with :mod:`ast` (nothing is evaluated); None when the text parses."""
    names = [call.name or "", *call.kwargs]
    if all(n.isidentifier() and not keyword.iskeyword(n) for n in names):
        return None
    try:
        ast.parse(call.render(), "<string>", "eval")
    except SyntaxError as exc:
        return f"Error during execution: {exc}"
    except (ValueError, RecursionError, MemoryError):
        return None
    return None


_CALLED_NAME = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")


def instance_names(table: Mapping[str, tuple[str, Any]], model: str, entry_id: str) -> dict[str, str]:
    """Method name → the name BFCL's executor gives the instance it runs on in ``bfcl generate``
    (``<model>_<entry id>_<class>_instance``, ``-``, ``.`` and ``/`` written ``_``)."""
    return {m: re.sub(r"[-./]", "_", f"{model}_{entry_id}_{cls}_instance") for m, (cls, _) in table.items()}


def _as_executed(value: Any, names: Mapping[str, str]) -> Any:
    """An argument as BFCL's executor passes it. It runs the call's text after prefixing every
    ``name(`` of a method with that method's instance name and dropping the blanks between any
    other word and ``(`` — inside string literals too — so a string argument that holds call text
    (``order_id="get_order_history()[-1]"``) reaches the method with the instance name in it, and
    ``"full (50 gallons)"`` as ``"full(50 gallons)"``."""
    if isinstance(value, str):
        return _CALLED_NAME.sub(lambda m: f"{names[m.group(1)]}.{m.group(1)}" if m.group(1) in names else m.group(1),
                                value) if "(" in value else value
    if isinstance(value, list):
        return [_as_executed(v, names) for v in value]
    if isinstance(value, tuple):
        return tuple(_as_executed(v, names) for v in value)
    if isinstance(value, dict):
        return {_as_executed(k, names): _as_executed(v, names) for k, v in value.items()}
    return value


def invoke(table: Mapping[str, tuple[str, Any]], call: ToolCall,
           names: Mapping[str, str] | None = None) -> tuple[bool, Any, str]:
    """Run one parsed call; (accepted, raw return value, BFCL result text). ``names``: the instance
    names BFCL's executor writes into call text (:func:`instance_names`), for string arguments."""
    if call.name in sem.BLOCKED_NAMES:  # BFCL refuses these by name before it evaluates anything
        text = f"Error during execution: Function call {call.name} is not allowed."
        return False, None, text
    unparsable = _syntax_error(call)
    if unparsable is not None:
        return False, None, unparsable
    target = table.get(call.name) if call.name is not None else None
    if target is None:
        return False, None, f"Error during execution: name '{call.name}' is not defined"
    method = target[1]
    # Copies: environments keep and mutate argument objects (a tweet stores its mentions list).
    args, kwargs = copy.deepcopy(call.args), copy.deepcopy(call.kwargs)
    if names:
        args, kwargs = _as_executed(args, names), _as_executed(kwargs, names)
    try:
        with _time_limit(CALL_TIME_LIMIT_S):
            value = method(*args, **kwargs, **_fresh_defaults(method, call))
            # Render at once: some methods return live module objects that later calls overwrite.
            text = bfcl_result_text(value)
    except Exception as exc:  # the environment raising is a rejected transition, not our crash
        return False, None, f"Error during execution: {exc}"
    return not is_error_value(value), value, text


def public_state(instance: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(instance).items() if not k.startswith("_")}
