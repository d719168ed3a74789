"""Copy-on-write tables of a τ rollout's database (:mod:`.environment`): the template's records shared by
every rollout until a call that may write reaches them, then private deep copies."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping
from typing import Any


class AccessMode:
    """Whether the running call may write. Shared by the tables of one rollout's database: a call of a
    tool that only reads (tau2's READ/THINK tools, our own ``calculate``) reaches the template's records
    as they are; any other call gets private copies of the records it reaches."""

    def __init__(self) -> None:
        self.copying = True

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        self.copying = False
        try:
            yield
        finally:
            self.copying = True


class CopyOnWriteTable(dict):
    """One top-level table of a rollout's database (airline flights, users, reservations; retail
    products, users, orders). It starts as a shallow copy of the process's validated template table,
    so its records are the template's own objects; the first time a call that may write reaches a
    record, the record is replaced by a deep copy (``copy.deepcopy`` of a pydantic model copies every
    field and the set of fields given), and from then on only that copy is handed out. A record no
    writing call has reached is still the template's object, shared with every other rollout, so a
    writing call is never handed one.

    In a writing call every way Python code can reach a value yields the private copy (item access, ``get``,
    ``values``/``items``, ``pop``, ``setdefault``, ``copy``, unpacking — ``__iter__`` is overridden
    so that ``dict(table)`` and ``{**table}`` take the per-key path). Serialisers (pydantic's
    ``model_dump``/``model_dump_json``, which tau2's hash uses) read the entries directly, which
    changes nothing: an unreached record serialises exactly as its private copy would.
    """

    __slots__ = ("_mode", "_own", "template")

    def __init__(self, template: Mapping[Any, Any], mode: AccessMode) -> None:
        super().__init__(template)
        self._mode = mode
        self._own: set[Any] = set()  # keys whose value is this table's own object
        self.template = template

    def own_entries(self) -> dict[Any, Any]:
        """The entries whose value is this table's own object (a writing call reached or stored it),
        handed out without copying anything: every other entry is still the template's object."""
        return {k: dict.__getitem__(self, k) for k in self._own}

    def _reach(self, key: Any) -> Any:
        if self._mode.copying and key not in self._own and dict.__contains__(self, key):
            dict.__setitem__(self, key, copy.deepcopy(dict.__getitem__(self, key)))
            self._own.add(key)
        return dict.__getitem__(self, key)

    def _reach_all(self) -> None:
        if self._mode.copying:
            for key in [k for k in dict.__iter__(self) if k not in self._own]:
                self._reach(key)

    def __getitem__(self, key: Any) -> Any:
        return self._reach(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._reach(key) if dict.__contains__(self, key) else default

    def values(self):
        self._reach_all()
        return dict.values(self)

    def items(self):
        self._reach_all()
        return dict.items(self)

    def __iter__(self) -> Iterator[Any]:
        return dict.__iter__(self)

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._own.add(key)

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self._own.discard(key)

    _MISSING = object()

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        if not dict.__contains__(self, key):
            if default is CopyOnWriteTable._MISSING:
                raise KeyError(key)
            return default
        value = self._reach(key)
        del self[key]
        return value

    def popitem(self) -> tuple[Any, Any]:
        if not self:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(dict.keys(self)))
        return key, self.pop(key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self._reach(key)
        self[key] = default
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> CopyOnWriteTable:
        self.update(other)
        return self

    def __or__(self, other: Any) -> dict[Any, Any]:
        return dict(self.items()) | other

    def clear(self) -> None:
        dict.clear(self)
        self._own.clear()

    def copy(self) -> dict[Any, Any]:
        return dict(self.items())

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        # Deep-copying reads the entries without handing them out, so template records may be read here.
        return {k: copy.deepcopy(v, memo) for k, v in dict.items(self)}

    def __reduce__(self) -> Any:  # copy.copy and pickle: a plain dict of what a call may be handed
        return dict, (dict(self.items()),)
