"""The state of BFCL's environment instances as a flat tree, and what a call changed in it, for the benchmark
health of BFCL entries (:mod:`.health`).

:func:`state_tree` flattens the instances into ``Class.attr['key'].attr`` paths (an object reached twice
written ``@path`` where it was first met, so a pointer into the tree — the file system's current directory —
changes when it points elsewhere, not when the directory it points at changes); :func:`changes` lists what
differs between two trees, each :class:`Change` public or private as BFCL's state check sees it
(:func:`is_public`); :func:`config_tree` flattens an entry's initial config alike.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_audit.plugin import changed_text

MAX_VALUE_CHARS = 120  # a value quoted in evidence
MAX_CHANGES = 6  # state changes named per call


def shortened(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def quoted_text(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    return repr(shortened(text, limit))


def state_tree(instances: Mapping[str, Any]) -> dict[str, str]:
    """Every value of the instances' state as ``path → leaf``: scalars as ``repr``, a container or
    object as its kind (its members get paths of their own), an object met a second time as ``@path``
    of where it was first met (a pointer into the tree, or a back-reference), a set as its sorted
    members. Public attributes come first, so a private attribute that points into the public tree
    is written as that pointer; attributes of nested objects that start with ``_`` (bookkeeping such
    as a file's modification time, which the classes' ``__eq__`` ignores) and random generators are
    left out."""
    out: dict[str, str] = {}
    seen: dict[int, str] = {}
    for private in (False, True):
        for cls_name, instance in instances.items():
            for key, value in vars(instance).items():
                if key.startswith("_") == private:
                    _walk(value, f"{cls_name}.{key}", out, seen)
    return out


def _walk(value: Any, path: str, out: dict[str, str], seen: dict[int, str]) -> None:
    """``value`` at ``path`` written into ``out`` as :func:`state_tree` says; ``seen``: where each
    object was first met."""
    if value is None or isinstance(value, (str, int, float, bool)):
        out[path] = repr(value)
        return
    if isinstance(value, random.Random):
        return
    if id(value) in seen:
        out[path] = "@" + seen[id(value)]
        return
    seen[id(value)] = path
    _walk_members(value, path, out, seen)


def _walk_members(value: Any, path: str, out: dict[str, str], seen: dict[int, str]) -> None:
    """A value met for the first time, no scalar: its kind, then each of its members."""
    if isinstance(value, dict):
        out[path] = "{}"
        for key in sorted(value, key=repr):
            _walk(value[key], f"{path}[{key!r}]", out, seen)
    elif isinstance(value, (list, tuple)):
        out[path] = "[]" if isinstance(value, list) else "()"
        for i, item in enumerate(value):
            _walk(item, f"{path}[{i}]", out, seen)
    elif isinstance(value, (set, frozenset)):
        out[path] = "{" + ", ".join(sorted(map(repr, value))) + "}"
    elif hasattr(value, "__dict__") and not callable(value):
        out[path] = f"<{type(value).__name__}>"
        for key, item in vars(value).items():
            if not key.startswith("_"):
                _walk(item, f"{path}.{key}", out, seen)
    else:
        out[path] = repr(value)


def _top(path: str) -> str:
    """``Class.attribute`` of a path."""
    m = re.match(r"[^.\[]+\.[^.\[]+", path)
    return m.group(0) if m else path


def is_public(path: str) -> bool:
    return not _top(path).split(".", 1)[1].startswith("_")


def _under(path: str, root: str) -> bool:
    return path.startswith(root) and len(path) > len(root) and path[len(root)] in ".["


@dataclass(frozen=True)
class Change:
    """One difference between two state trees: ``before``/``after`` None where the path is absent."""

    path: str
    before: str | None
    after: str | None

    @property
    def public(self) -> bool:
        return is_public(self.path)

    def describe(self, tree_after: Mapping[str, str] | None = None) -> str:
        if self.before is None:
            members = {p[len(self.path):]: v for p, v in (tree_after or {}).items() if _under(p, self.path)
                       and not v.startswith(("{", "[", "(", "<", "@"))}
            inside = ", ".join(f"{k}={v}" for k, v in list(members.items())[:3])
            return f"{self.path} added" + (f" ({shortened(inside)})" if inside else "")
        if self.after is None:
            return f"{self.path} removed"
        return f"{self.path}: {shortened(self.before, 60)} → {shortened(self.after, 60)}"


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[Change]:
    """What differs from ``before`` to ``after``, a path added or removed with its members said once."""
    diff = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    out: list[Change] = []
    for path in diff:
        if out and _under(path, out[-1].path) and (out[-1].before is None or out[-1].after is None):
            continue
        out.append(Change(path, before.get(path), after.get(path)))
    return out


def describe_changes(found: Sequence[Change], tree_after: Mapping[str, str] | None = None) -> str:
    said = [c.describe(tree_after) for c in found[:MAX_CHANGES]]
    if len(found) > MAX_CHANGES:
        said.append(f"{len(found) - MAX_CHANGES} more")
    return "; ".join(said)


def full_change(change: Change, before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """A config change in full: a value's change word by word, an added or removed part with every value."""
    if change.before is not None and change.after is not None:
        return f"{change.path}: {changed_text(change.before, change.after)}"
    tree, said = (after, "added") if change.before is None else (before, "removed")
    inside = ", ".join(f"{p[len(change.path):]}={v}" for p, v in tree.items()
                       if _under(p, change.path) and not v.startswith(("{", "[")))
    return f"{change.path} {said}" + (f" ({inside})" if inside else "")


def config_tree(config: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            out[path] = "{}"
            for k in sorted(value, key=repr):
                walk(value[k], f"{path}[{k!r}]" if path else str(k))
        elif isinstance(value, list):
            out[path] = "[]"
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")
        else:
            out[path] = repr(value)

    for cls_name in sorted(config):
        walk(config[cls_name], cls_name)
    return out
