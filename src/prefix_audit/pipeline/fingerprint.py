"""Rerun tracking from the code itself: the fingerprint of the modules a workflow script runs.

Snakemake reruns a job when its script changes, but not when a module the script imports does. So
each rule passes a ``code`` param: a hash of the import closure of its script — every module of this
package (or of a plugin benchmark's package) that the script imports, and everything those import,
at module level or inside functions (``if TYPE_CHECKING:`` blocks excepted: they never run). A
stage that opens a dataset reaches its benchmark only through :mod:`prefix_audit.replay.registry`, which
imports no benchmark by name, so for those stages the closure of the dataset's registered package
is added (every registered package when the rule names no dataset).

The closure is read with :mod:`ast` from the source files, without importing them. What each source
imports is kept beside its bytecode (``__pycache__``, or ``sys.pycache_prefix``), keyed by the source's
sha256, where Python may write bytecode: parsing every module again took most of the fingerprints' time,
which every Snakemake command spends.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import json
import sys
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import TypeGuard

from prefix_audit.core.io import atomic_write_text
from prefix_audit.replay import registry

PACKAGE = __name__.split(".")[0]
REGISTRY = registry.__name__


@cache
def _root(top: str) -> Path | None:
    """The source directory (package) or file (module) of a top-level module; None when it is not
    importable from source."""
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    origin = Path(spec.origin)
    return origin.parent if spec.submodule_search_locations is not None else origin


@cache
def source_file(module: str) -> Path | None:
    """The source file of ``module`` (a package's ``__init__.py``), or None when it has none."""
    top, *rest = module.split(".")
    root = _root(top)
    if root is None:
        return None
    if root.is_file():
        return root if not rest else None
    base = root.joinpath(*rest)
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _type_checking_block(node: ast.AST) -> TypeGuard[ast.If]:
    test = getattr(node, "test", None) if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


# The fields of a node that hold statements (an except clause's or a match case's too): an import is a
# statement, so the walk need not enter expressions, most of a tree's nodes.
_STATEMENT_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterable[str]:
    """Every module named by an import statement anywhere in ``tree`` (relative ones resolved)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if _type_checking_block(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                anchor = parts if is_package else parts[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base
            # `from package import name` imports the submodule when name is one.
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        else:
            stack.extend(child for field in _STATEMENT_FIELDS for child in getattr(node, field, ()))


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts) + 1)]


@cache
def _imported_by(module: str) -> tuple[str, ...]:
    """What a module's source imports (parsed once per process, and only where the reading kept
    beside its bytecode is of other bytes: :func:`_kept_imports`)."""
    path = source_file(module)
    assert path is not None
    digest = _source_digest(module).hex()
    kept = _kept_imports(path, module, digest)
    if kept is not None:
        return kept
    tree = ast.parse(path.read_bytes(), str(path))
    found = tuple(m for name in _imports(tree, module, path.name == "__init__.py") for m in _with_parents(name))
    _keep_imports(path, module, digest, found)
    return found


# The reading kept beside a source's bytecode, valid for that source read by this module's code.
_KEPT_SUFFIX = ".imports.json"


@cache
def _reader_digest() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _kept_path(path: Path) -> Path | None:
    try:
        return Path(importlib.util.cache_from_source(str(path))).with_suffix(_KEPT_SUFFIX)
    except (NotImplementedError, ValueError):  # no bytecode cache in this interpreter
        return None


def _kept_imports(path: Path, module: str, digest: str) -> tuple[str, ...] | None:
    """The imports kept for ``module`` when they were read from the source with this sha256 (by this
    module's code as it is now)."""
    kept = _kept_path(path)
    try:
        entry = json.loads(kept.read_bytes()) if kept is not None else None
    except (OSError, ValueError):  # none kept yet, or unreadable: parse again
        return None
    if not isinstance(entry, dict) or entry.get("module") != module or entry.get("sha256") != digest \
            or entry.get("reader") != _reader_digest():
        return None
    imports = entry.get("imports")
    return tuple(imports) if isinstance(imports, list) and all(isinstance(m, str) for m in imports) else None


def _keep_imports(path: Path, module: str, digest: str, imports: tuple[str, ...]) -> None:
    """Keep the reading beside the bytecode, where Python itself would write bytecode (a read-only
    installation or PYTHONDONTWRITEBYTECODE keeps nothing)."""
    kept = _kept_path(path)
    if kept is None or sys.dont_write_bytecode:
        return
    with contextlib.suppress(OSError):
        atomic_write_text(kept, json.dumps({"module": module, "sha256": digest, "reader": _reader_digest(),
                                              "imports": list(imports)}))


def closure(entries: Iterable[str], tracked: frozenset[str]) -> list[str]:
    """The modules of the ``tracked`` top-level packages that importing ``entries`` runs, sorted."""
    seen: set[str] = set()
    todo = [m for entry in entries for m in _with_parents(entry)]
    while todo:
        module = todo.pop()
        if module in seen or module.split(".")[0] not in tracked or source_file(module) is None:
            continue
        seen.add(module)
        todo.extend(_imported_by(module))
    return sorted(seen)


def script_imports(script: str | Path) -> list[str]:
    """The modules a workflow script imports."""
    tree = ast.parse(Path(script).read_bytes(), str(script))
    return sorted({name for name in _imports(tree, "__main__", False) if name})


def stage_modules(script: str | Path, datasets: Sequence[str] | None = None) -> list[str]:
    """The modules a script's stage runs: its import closure, plus the registered benchmark package
    of each of ``datasets`` (of every registered benchmark when None) if the stage opens datasets."""
    tracked = frozenset({PACKAGE})
    modules = closure(script_imports(script), tracked)
    if REGISTRY not in modules:
        return modules
    packages = sorted({registry.registration_of(d).package for d in datasets} if datasets is not None
                      else {r.package for r in registry.registrations()})
    tracked |= {p.split(".")[0] for p in packages}
    return sorted(set(modules) | set(closure(packages, tracked)))


def code_fingerprint(script: str | Path, datasets: Sequence[str] | None = None) -> str:
    """sha256 (16 hex digits) of the names and sources of :func:`stage_modules` (computed once per
    process for each script and datasets: a workflow asks for it job by job)."""
    return _fingerprint(str(script), None if datasets is None else tuple(datasets))


@cache
def _fingerprint(script: str, datasets: tuple[str, ...] | None) -> str:
    digest = hashlib.sha256()
    for module in stage_modules(script, datasets):
        digest.update(module.encode() + b"\0" + _source_digest(module))
    return digest.hexdigest()[:16]


@cache
def _source_digest(module: str) -> bytes:
    path = source_file(module)
    assert path is not None
    return hashlib.sha256(path.read_bytes()).digest()
