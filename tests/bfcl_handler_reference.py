"""bfcl-eval's own per-handler decoders, run from the fetched wheel, for differential tests.

BFCL's evaluation decodes every step of a multi-turn result with the handler the model's config
names (``bfcl_eval/constants/model_config.py``: ``ModelConfig(model_handler=…, is_fc_model=…)``),
calling ``handler.decode_execute(step, has_tool_call_tag=False)``. These are the package's own
classes and code, none of ours:

* :func:`handler_classes` reads the config statically with :mod:`ast` (importing it would import
  every handler and its SDK);
* :func:`reference_decoder` returns one handler class's real ``decode_execute``.

Importing a handler module needs provider SDKs a ``--no-deps`` wheel does not have (anthropic,
cohere, google-genai, mistralai, boto3, overrides, datamodel_code_generator, qwen_agent, …). While,
and only while, a handler module is imported, a meta-path finder placed last makes a missing module
importable when a ``bfcl_eval`` module imports it (or it is a submodule of one it made): a stub
module whose every attribute is a permissive stub class (instantiable with any arguments, any
attribute or call gives another stub). ``overrides`` gets identity ``override``/``final`` and a plain
``EnforceOverrides`` base class, so the handlers' methods stay the package's own. Afterwards the
stubs are taken out of ``sys.modules`` again, so a test that checks a module is missing still sees
it missing; the handler modules keep their references to the stubs, which no decoder touches.

A handler is made with ``object.__new__`` (its ``__init__`` builds API clients); the attributes
``BaseHandler.__init__`` sets are set as it would, and ``is_fc_model`` as the constructor leaves it
(a few constructors force it, e.g. ``CohereHandler`` to True — read from their source).

Several decoders ``eval`` model text: ``LlamaHandler_3_1.decode_execute`` (``eval(result)``),
``resolve_ast_by_type`` of ``model_handler/utils.py`` (``ast.BinOp`` and ``ast.Lambda`` arguments),
and the ``eval(item)`` of the Qwen-FC-like handlers. This is the package's own code, run only in
tests, on generated inputs; still, every one of those ``eval`` calls goes through a guard
(:func:`guarded_eval`, put in the handler modules' globals, and in ``model_handler.utils``'s only
for the duration of a reference decoder's call, so the stock decoders other tests use are
untouched). The guard lets ``eval`` run only an expression made of literals, containers,
non-dunder names and unary/binary operators whose results stay small (no call, attribute,
subscript, comprehension, lambda, f-string, dunder name); anything else raises
:class:`UnsafeReference` instead of being evaluated — except that where evaluation, followed in
its own order, would stop at a name bound nowhere before reaching anything refused (``cd(…)``
with no ``cd`` defined), the guard raises the ``NameError`` ``eval`` would, evaluating nothing. A decoder that catches that exception itself (``fc2dict`` of
``minicpm_fc.py`` has a bare ``except:``) does not hide it: a reference decoder raises
:class:`UnsafeReference` whenever the guard refused anything during its call.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import importlib
import importlib.abc
import importlib.machinery
import inspect
import operator
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

_PKG = "bfcl_eval"
MODEL_CONFIG = Path(_PKG) / "constants" / "model_config.py"
_UTILS = f"{_PKG}.model_handler.utils"


# --- the config, read statically ---------------------------------------------------------------


@dataclass(frozen=True)
class ModelEntry:
    key: str  # the registry name (``--model``)
    model_name: str
    handler: str
    is_fc: bool


@cache
def _read_config(root: Path) -> tuple[tuple[ModelEntry, ...], dict[str, str]]:
    """Every ``ModelConfig(...)`` of the config (in order) and the module each handler class is
    imported from."""
    path = root / MODEL_CONFIG
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    modules = {alias.asname or alias.name: node.module
               for node in tree.body if isinstance(node, ast.ImportFrom) and node.module
               and node.module.startswith(f"{_PKG}.model_handler.") for alias in node.names}
    default_fc = True  # the dataclass default of ``is_fc_model``
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ModelConfig":
            for stmt in node.body:
                if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                        and stmt.target.id == "is_fc_model" and stmt.value is not None):
                    default_fc = ast.literal_eval(stmt.value)
    entries = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values):
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                    and value.func.id == "ModelConfig"):
                continue
            kw = {k.arg: k.value for k in value.keywords}
            handler = kw["model_handler"]
            if not isinstance(handler, ast.Name):
                raise ValueError(f"{path}:{value.lineno}: model_handler is not a class name")
            is_fc = ast.literal_eval(kw["is_fc_model"]) if "is_fc_model" in kw else default_fc
            entries.append(ModelEntry(ast.literal_eval(key), ast.literal_eval(kw["model_name"]),
                                      handler.id, bool(is_fc)))
    return tuple(entries), modules


def model_entries(root: Path) -> list[ModelEntry]:
    """Every model of the config: registry name, model name, handler class, ``is_fc_model``."""
    return list(_read_config(Path(root))[0])


def handler_classes(root: Path) -> dict[str, set[bool]]:
    """The handler classes the config uses, each with the ``is_fc_model`` values it is used with."""
    found: dict[str, set[bool]] = {}
    for entry in model_entries(root):
        found.setdefault(entry.handler, set()).add(entry.is_fc)
    return found


# --- stubs for the SDKs the handler modules import ----------------------------------------------


class _StubMeta(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub_class(name, cls.__module__)

    def __repr__(cls) -> str:
        return f"<stub class {cls.__module__}.{cls.__name__}>"


class _Stub(metaclass=_StubMeta):
    """Anything: made with any arguments; any attribute, call or item is another stub."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Stub()

    def __getitem__(self, key: Any) -> Any:
        return _Stub()

    def __iter__(self) -> Iterator[Any]:
        return iter(())


def _stub_class(name: str, module: str) -> type:
    return _StubMeta(name, (_Stub,), {"__module__": module})


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _stub_class(name, self.__name__)
        setattr(self, name, value)
        return value


def _identity(obj: Any) -> Any:
    return obj


def _overrides_module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.override = module.overrides = module.final = _identity
    module.EnforceOverrides = type("EnforceOverrides", (), {"__module__": name})
    module.EnforceOverridesMeta = type
    return module


_IMPORT_MACHINERY = ("importlib", "importlib._bootstrap", "importlib._bootstrap_external", __name__)


def _imported_by_package() -> bool:
    """Whether the import being resolved is an import statement of a ``bfcl_eval`` module."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") in _IMPORT_MACHINERY:
        frame = frame.f_back
    return frame is not None and str(frame.f_globals.get("__name__", "")).partition(".")[0] == _PKG


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self) -> None:
        self.created: list[str] = []

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.partition(".")[0] == _PKG:
            return None
        if fullname.rpartition(".")[0] not in self.created and not _imported_by_package():
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        self.created.append(spec.name)
        return _overrides_module(spec.name) if spec.name == "overrides" else _StubModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


@contextlib.contextmanager
def _stubbed_imports() -> Iterator[None]:
    finder = _StubFinder()
    sys.meta_path.append(finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in reversed(finder.created):
            module = sys.modules.pop(name, None)
            parent, _, child = name.rpartition(".")
            owner = sys.modules.get(parent) if parent else None
            if owner is not None and getattr(owner, child, None) is module:
                delattr(owner, child)


def _import(root: Path, module_name: str) -> types.ModuleType:
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    if module_name not in sys.modules:
        with _stubbed_imports():
            importlib.import_module(module_name)
    for name, module in list(sys.modules.items()):
        if name.startswith((f"{_PKG}.model_handler.api_inference.", f"{_PKG}.model_handler.local_inference.")):
            if getattr(module, "eval", None) is not guarded_eval:
                module.eval = guarded_eval
    return sys.modules[module_name]


# --- the eval guard -----------------------------------------------------------------------------


class UnsafeReference(Exception):
    """A decoder was about to ``eval`` an expression the guard does not let through."""


class _Unbound(Exception):
    """Evaluation would stop here, at a name bound nowhere, with a ``NameError``."""


_REAL_EVAL = builtins.eval
_LIMIT = 1 << 20  # the largest integer bit length or sequence length an operator may build
_AMPLIFYING = (ast.Mult, ast.Pow, ast.LShift, ast.MatMult)
_ALLOWED = (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Name, ast.Load,
            ast.UnaryOp, ast.BinOp, ast.operator, ast.unaryop)
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor, ast.BitAnd: operator.and_, ast.MatMult: operator.matmul}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_, ast.Invert: operator.invert}
_UNKNOWN = object()  # a value that depends on a bound name

_refusals: list[str] = []
_recorders: list[list[str]] = []


def _size(value: Any) -> int:
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return max(1, abs(value).bit_length())
    if isinstance(value, (str, bytes, list, tuple)):
        return len(value)
    return 1


def _small_enough(op: ast.operator, left: Any, right: Any) -> bool:
    if left is _UNKNOWN or right is _UNKNOWN:
        return False  # a name's value could be anything
    if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int):
        return right <= 0 or _size(left) * right <= _LIMIT
    if isinstance(op, ast.LShift) and isinstance(left, int) and isinstance(right, int):
        return right <= _LIMIT
    if isinstance(op, ast.Mult):
        if isinstance(left, int) and isinstance(right, (str, bytes, list, tuple)):
            left, right = right, left
        if isinstance(left, (str, bytes, list, tuple)) and isinstance(right, int):
            return _size(left) * max(right, 0) <= _LIMIT
    return True


def _attempt(function: Callable[..., Any], *args: Any) -> Any:
    try:
        return function(*args)
    except Exception:  # the real eval raises the same; nothing large is built
        return _UNKNOWN


def _unsafe(node: ast.AST, source: str) -> UnsafeReference:
    return UnsafeReference(f"not allowed: {type(node).__name__} in {source[:200]!r}")


def _walk(node: ast.AST, bound: Callable[[str], bool], source: str) -> Any:
    """Follow ``eval`` through the expression in its evaluation order: the value (``_UNKNOWN``
    where it depends on a name); ``_Unbound`` where evaluation would stop with a ``NameError``;
    ``UnsafeReference`` at the first thing evaluation would reach that the guard refuses."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id.startswith("__") or not isinstance(node.ctx, ast.Load):
            raise UnsafeReference(f"not allowed: name {node.id!r} in {source[:200]!r}")
        if not bound(node.id):
            raise _Unbound(node.id)
        return _UNKNOWN
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        elts = [_walk(e, bound, source) for e in node.elts]
        if any(e is _UNKNOWN for e in elts):
            return _UNKNOWN
        return _attempt({ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)], elts)
    if isinstance(node, ast.Dict):
        pairs = []
        for key, value in zip(node.keys, node.values):  # key, value, key, value, … as eval does
            if key is None:
                raise _unsafe(node, source)
            pairs.append((_walk(key, bound, source), _walk(value, bound, source)))
        if any(k is _UNKNOWN or v is _UNKNOWN for k, v in pairs):
            return _UNKNOWN
        return _attempt(dict, pairs)
    if isinstance(node, ast.UnaryOp):
        operand = _walk(node.operand, bound, source)
        return _UNKNOWN if operand is _UNKNOWN else _attempt(_UNARY[type(node.op)], operand)
    if isinstance(node, ast.BinOp):
        left, right = _walk(node.left, bound, source), _walk(node.right, bound, source)
        if isinstance(node.op, _AMPLIFYING) and not _small_enough(node.op, left, right):
            raise UnsafeReference(f"operator result may be too large: {ast.unparse(node)[:200]!r}")
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        return _attempt(_BINOPS[type(node.op)], left, right)
    # Refused; but what eval evaluates first in it may still stop at an unbound name.
    first = {ast.Call: "func", ast.Attribute: "value", ast.Subscript: "value"}.get(type(node))
    if first is not None:
        _walk(getattr(node, first), bound, source)
    raise _unsafe(node, source)


def _namespace_check(source: Any, bound: Callable[[str], bool]) -> bool:
    """True: ``eval`` may run ``source``. False: it would stop with a ``NameError`` before
    reaching anything refused (the name is raised as ``_Unbound``). Raises ``UnsafeReference``."""
    if isinstance(source, bytes):
        source = source.decode("utf-8", "replace")
    if not isinstance(source, str):
        raise UnsafeReference(f"eval of a {type(source).__name__}")
    try:
        tree = ast.parse(source.lstrip(" \t"), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return True  # eval raises the same error while compiling; nothing runs
    allowed_only = all(isinstance(n, _ALLOWED) for n in ast.walk(tree))
    try:
        _walk(tree.body, bound, source)
    except _Unbound:
        if allowed_only:
            return True  # eval raises the NameError itself
        raise
    except RecursionError as exc:
        raise UnsafeReference(f"expression nested too deeply: {source[:200]!r}") from exc
    if not allowed_only:  # unreachable: _walk refuses every other node
        raise UnsafeReference(f"not allowed: {source[:200]!r}")
    return True


def check_expression(source: str | bytes, names: Any = None) -> None:
    """Raise :class:`UnsafeReference` unless the guard lets ``eval`` run ``source`` with ``names``
    bound (default: the builtins): literals, containers, non-dunder names, unary and binary
    operators with small results; or anything whose evaluation would first stop at an unbound
    name. Text that does not parse passes (``eval`` raises its ``SyntaxError`` running nothing)."""
    names = vars(builtins) if names is None else names
    try:
        _namespace_check(source, lambda name: name in names)
    except _Unbound:
        pass


def guarded_eval(source: Any, globals: Any = None, locals: Any = None, /) -> Any:
    """``eval`` for the package's decoders: the same result or error, or :class:`UnsafeReference`
    without evaluating anything when the expression holds anything but literals, containers,
    names and operators with small results. Where evaluation would stop at an unbound name before
    reaching such a thing, the ``NameError`` eval would raise is raised without evaluating."""
    if globals is None:
        caller = sys._getframe(1)
        globals = caller.f_globals
        if locals is None:
            locals = caller.f_locals
    elif locals is None:
        locals = globals
    builtin_names = globals.get("__builtins__", builtins)
    builtin_names = vars(builtin_names) if isinstance(builtin_names, types.ModuleType) else builtin_names

    def bound(name: str) -> bool:
        return name in locals or name in globals or name in builtin_names

    try:
        _namespace_check(source, bound)
    except UnsafeReference as exc:
        _refusals.append(str(exc))
        raise
    except _Unbound as unbound:
        raise NameError(f"name {unbound.args[0]!r} is not defined", name=unbound.args[0]) from None
    for record in _recorders:
        record.append(source if isinstance(source, str) else repr(source))
    return _REAL_EVAL(source, globals, locals)


@contextlib.contextmanager
def recording_evals() -> Iterator[list[str]]:
    """Every expression the guard lets ``eval`` run while the block runs."""
    record: list[str] = []
    _recorders.append(record)
    try:
        yield record
    finally:
        _recorders.remove(record)


@contextlib.contextmanager
def _guarding(module: types.ModuleType) -> Iterator[None]:
    had = "eval" in vars(module)
    previous = vars(module).get("eval")
    module.eval = guarded_eval
    try:
        yield
    finally:
        if had:
            module.eval = previous
        else:
            del module.eval


# --- the decoders -------------------------------------------------------------------------------


def _forced_is_fc(cls: type) -> bool | None:
    """The ``is_fc_model`` a constructor of the class sets whatever it is passed (None: none does)."""
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is None or not klass.__module__.startswith(_PKG):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        except (OSError, TypeError):
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, bool)
                    and any(isinstance(t, ast.Attribute) and t.attr == "is_fc_model"
                            and isinstance(t.value, ast.Name) and t.value.id == "self" for t in node.targets)):
                return node.value.value
        if any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "is_fc_model"
                                                    for t in node.targets) for node in ast.walk(tree)):
            return None  # BaseHandler: from its argument
    return None


def handler_instance(root: Path, handler_class: str, is_fc: bool) -> Any:
    """An instance of the handler class as the config would build it, without its ``__init__``."""
    root = Path(root)
    entries, modules = _read_config(root)
    if handler_class not in modules:
        raise KeyError(f"{handler_class} is not a handler class of {root / MODEL_CONFIG}")
    cls = getattr(_import(root, modules[handler_class]), handler_class)
    _import(root, _UTILS)
    matching = [e for e in entries if e.handler == handler_class and e.is_fc == is_fc]
    entry = matching[0] if matching else next(e for e in entries if e.handler == handler_class)
    handler = object.__new__(cls)
    forced = _forced_is_fc(cls)
    # What BaseHandler.__init__ sets, then what the class's own constructor forces.
    handler.model_name = entry.model_name
    handler.is_fc_model = is_fc if forced is None else forced
    handler.registry_name = entry.key
    handler.model_name_underline_replaced = entry.model_name.replace("/", "_").replace("-", "_").replace(".", "_")
    handler.registry_dir_name = entry.key.replace("/", "_")
    handler.temperature = 0
    handler.model_name_huggingface = entry.model_name
    return handler


def reference_decoder(root: Path, handler_class: str, is_fc: bool) -> Callable[[Any], list[str]]:
    """The handler class's own ``decode_execute(raw, has_tool_call_tag=False)``, as BFCL's
    evaluation calls it for a model configured with that class and ``is_fc_model``; raises what it
    raises, or :class:`UnsafeReference` when the guard refused an ``eval`` during the call. The raw
    step is deep-copied first, so a decoder cannot change the caller's value."""
    handler = handler_instance(root, handler_class, is_fc)
    utils = sys.modules[_UTILS]

    def decode(raw: Any) -> list[str]:
        del _refusals[:]
        with _guarding(utils):
            try:
                decoded = handler.decode_execute(copy.deepcopy(raw), has_tool_call_tag=False)
            except UnsafeReference:
                raise
            except Exception as exc:
                if _refusals:
                    raise UnsafeReference(_refusals[0]) from exc
                raise
        if _refusals:
            raise UnsafeReference(_refusals[0])
        return decoded

    decode.__name__ = decode.__qualname__ = f"{handler_class}.decode_execute[is_fc={is_fc}]"
    return decode
