"""What differs in one BFCL entry between two pinned data releases, for the benchmark health of BFCL
entries (:meth:`.health.BfclProbe._compared`).

A change the question makes is applied as token substitutions (:func:`substitutions`, with the config's
dates where the question's dates change) to the other release's ground truth and config, so what then
equals this release's follows the question (a date refresh); turns are aligned by their text
(:func:`turn_changes`), function docs compared key by key (:func:`doc_changes`) and results under renamed
keys told apart from other values (:func:`renamed_keys`).
"""

from __future__ import annotations

import calendar
import difflib
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from prefix_audit.plugin import changed_text

from .data import Entry

TURNS_SAID = "turn numbers count from 1: turn 1 is BFCL's turn 0"
# A token: words joined by / : . - (a file name, a date, a time, a booking key); a fine token: one word.
_TOKEN = re.compile(r"\w+(?:[/:.-]\w+)*")
_FINE = re.compile(r"\w+")
_DATE_SHAPE = re.compile(r"\d{1,2}/\d{2}")  # a month and year: a card's 12/25
_YEAR = re.compile(r"(?:19|20)\d{2}")
_CALENDAR = {w.casefold() for w in (*calendar.day_name, *calendar.month_name) if w}


def is_date_change(a: str, b: str) -> bool:
    """Whether token ``a`` becomes ``b`` by a change of years only (``2024``, ``2024-12-15``, a booking key's
    ``20241215``, a card's ``12/25``) or of day or month names."""
    fa, fb = _FINE.findall(a), _FINE.findall(b)
    differ = [(x, y) for x, y in zip(fa, fb, strict=False) if x != y]  # lengths compared below

    def year(x: str, y: str, last: bool) -> bool:
        if _YEAR.fullmatch(x) and _YEAR.fullmatch(y):
            return True
        if len(x) == len(y) == 8 and x.isdigit() and y.isdigit():  # yyyymmdd, the month and day kept
            return bool(_YEAR.fullmatch(x[:4]) and _YEAR.fullmatch(y[:4])) and x[4:] == y[4:]
        return last and bool(_DATE_SHAPE.fullmatch(a) and _DATE_SHAPE.fullmatch(b))

    return len(fa) == len(fb) and bool(differ) and all(
        year(x, y, x == fa[-1]) or (x.casefold() in _CALENDAR and y.casefold() in _CALENDAR) for x, y in differ)


def _token_pairs(before: str, after: str) -> list[tuple[str, str]]:
    """The tokens replaced one for one from ``before`` to ``after``."""
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    return [(x, y) for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
            if tag == "replace" and i2 - i1 == j2 - j1 for x, y in zip(a[i1:i2], b[j1:j2], strict=True) if x != y]


def substitutions(old: Entry, new: Entry) -> dict[str, str]:
    """Token → token, as the question changes from ``old`` to ``new`` (turns aligned), and — where the
    question's dates change — as the initial config's dates change; a token replaced two ways is left out."""
    turns = _aligned([old.user_texts(t) for t in range(len(old.question))],
                     [new.user_texts(t) for t in range(len(new.question))])
    pairs = [p for i, j in turns if i is not None and j is not None
             for p in _token_pairs(" / ".join(old.user_texts(i)), " / ".join(new.user_texts(j)))]
    if any(is_date_change(*p) for p in pairs):  # a refresh the question shows; a config's dates alone are no refresh
        pairs += [p for p in _token_pairs(json.dumps(old.initial_config, sort_keys=True),
                                          json.dumps(new.initial_config, sort_keys=True)) if is_date_change(*p)]
    targets: dict[str, set[str]] = {}
    for a, b in pairs:
        targets.setdefault(a, set()).add(b)
    return {a: next(iter(b)) for a, b in targets.items() if len(b) == 1}


def substitute(text: str, subs: Mapping[str, str]) -> str:
    """``text`` with each token of ``subs`` replaced — a whole token, or one word of a token (a year in
    ``2024-12-15``)."""
    if not subs:
        return text
    fine = {a: b for a, b in subs.items() if _FINE.fullmatch(a)}
    return _TOKEN.sub(lambda m: subs.get(m.group(0)) or _FINE.sub(lambda w: fine.get(w.group(0), w.group(0)),
                                                                  m.group(0)), text)


def substitute_value(value: Any, subs: Mapping[str, str]) -> Any:
    """A config with ``subs`` applied to its strings, keys and numbers (a number stays a number)."""
    if not subs:
        return value
    if isinstance(value, str):
        return substitute(value, subs)
    if isinstance(value, dict):
        return {substitute_value(k, subs): substitute_value(v, subs) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_value(v, subs) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = substitute(repr(value), subs)
        try:
            return value if text == repr(value) else type(value)(text)
        except ValueError:  # a number replaced by a word: the config then differs, as it should
            return text
    return value


def _aligned(old: Sequence[Any], new: Sequence[Any]) -> list[tuple[int | None, int | None]]:
    """The turns that differ, as (index in ``old``, index in ``new``), a turn present on one side only
    with None for the other: turns matched by their content, so a turn inserted or removed does not
    shift every later one."""
    out: list[tuple[int | None, int | None]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, list(map(repr, old)), list(map(repr, new)),
                                                       autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1)
        out += [(i1 + k, j1 + k) for k in range(paired)]
        out += [(i, None) for i in range(i1 + paired, i2)] + [(None, j) for j in range(j1 + paired, j2)]
    return out


def turn_changes(old: Sequence[Any], new: Sequence[Any], there: str, pair: Any) -> list[str]:
    """Each differing turn said: ``turn 3: …`` (``turn 4 here, turn 3 on R`` where the turns moved)."""
    out = []
    for i, j in _aligned(old, new):
        if i is not None and j is not None:
            where = f"turn {j + 1}" if i == j else f"turn {j + 1} here, turn {i + 1} on {there}"
            out.append(f"{where}: {pair(old[i], new[j])}")
        elif i is not None:
            out.append(f"turn {i + 1} on {there} only: {pair(old[i], None)}")
        elif j is not None:  # (never both None)
            out.append(f"turn {j + 1} new: {pair(None, new[j])}")
    return out


def text_pair(a: str | None, b: str | None) -> str:
    return changed_text(a, b) if a is not None and b is not None else repr(a if b is None else b)


def calls_pair(a: Sequence[str] | None, b: Sequence[str] | None) -> str:
    if a is None or b is None:
        return f"[{', '.join(a or b or ())}]"  # the calls of the one side that has the turn
    if Counter(a) == Counter(b):
        return f"the same calls in another order, [{', '.join(a)}] → [{', '.join(b)}]"
    gone, new = [c for c in a if c not in b], [c for c in b if c not in a]
    if len(gone) == len(new) == 1:
        return changed_text(gone[0], new[0])
    return f"[{', '.join(gone)}] → [{', '.join(new)}]"


def _flat(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{path}.{key}" if path else key).items()}
    return {path: value}


def _doc_units(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of one function's doc, each under the name a change says: its parameters and result
    fields (``parameter x``), then its other entries, a nested one's path in words (``parameters type``)."""
    fields = {f"{named} {key}": item for section, named in (("parameters", "parameter"), ("response", "result field"))
              for key, item in doc.get(section, {}).get("properties", {}).items()}
    entries = _flat({k: ({**v, "properties": {}} if isinstance(v, dict) else v) for k, v in doc.items()})
    return {**fields, **{path.replace(".", " "): item for path, item in entries.items()
                         if not path.endswith(".properties")}}


def doc_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """What differs in one function's doc: a parameter or result field added or removed (with its doc),
    a type, a description (word by word), the required parameters — each with whether it is wording only
    (a description's text)."""
    a, b = _doc_units(old), _doc_units(new)
    out = []
    for unit in sorted(a.keys() | b.keys()):
        if unit not in b:
            out.append((f"{unit} removed (was {a[unit]!r})", False))
        elif unit not in a:
            out.append((f"{unit} added ({b[unit]!r})", False))
        elif a[unit] != b[unit]:
            x, y = _flat(a[unit]), _flat(b[unit])
            for path in sorted(x.keys() | y.keys()):
                where = f"{unit} {path}".strip().replace(".", " ")
                if x.get(path) == y.get(path):
                    continue
                if isinstance(x.get(path), str) and isinstance(y.get(path), str):
                    out.append((f"{where}: {changed_text(x[path], y[path])}", where.endswith("description")))
                elif path not in y:
                    out.append((f"{where} removed (was {x[path]!r})", False))
                elif path not in x:
                    out.append((f"{where} added ({y[path]!r})", False))
                else:
                    out.append((f"{where}: {x[path]!r} → {y[path]!r}", False))
    return out


def parsed_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def renamed_keys(old: Any, new: Any) -> list[tuple[str, str]] | None:
    """The keys renamed from ``old`` to ``new`` where the two hold the same values in the same order
    (None: they differ otherwise)."""
    if isinstance(old, dict) and isinstance(new, dict):
        if len(old) != len(new):
            return None
        out = []
        for (ka, va), (kb, vb) in zip(old.items(), new.items(), strict=True):
            inner = renamed_keys(va, vb)
            if inner is None:
                return None
            out += ([(ka, kb)] if ka != kb else []) + inner
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        out = []
        for va, vb in zip(old, new, strict=True):
            inner = renamed_keys(va, vb)
            if inner is None:
                return None
            out += inner
        return out
    return [] if old == new else None
