"""Values in actions, states and texts: the leaves of nested values, and whether a text states a value.
Shared by the replay checker, attribution and the benchmark adapters."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from prefix_audit.core.calls import ToolCall


def scalars(obj: Any) -> Iterator[Any]:
    """Every str/int/float leaf of a nested value: dict keys, list items and the attributes of
    plain objects (environment state is often a tree of objects). Bools and None are skipped;
    shared or cyclic structures are visited once."""
    stack = [obj]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, (str, int)):
            yield item
        elif isinstance(item, float):
            if math.isfinite(item):
                yield item
        elif id(item) in seen:
            continue
        elif isinstance(item, Mapping):
            seen.add(id(item))
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            seen.add(id(item))
            stack.extend(item)
        elif hasattr(item, "__dict__") and not callable(item):
            seen.add(id(item))
            stack.extend(v for v in vars(item).values() if not callable(v))


def argument_values(call: ToolCall) -> list[Any]:
    """The argument values of a call (positional and keyword), without the parameter names."""
    return [*call.args, *call.kwargs.values()]


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\d)")


def number_tokens(text: str) -> set[float]:
    """The numbers written in a text as whole tokens ("2" in "order 2", not in "2024-05-01")."""
    return {float(tok) for tok in _NUMBER.findall(text)}


def mentions(text: str, value: Any) -> bool:
    """Whether a text states ``value``: a substring for strings, a whole number token for numbers."""
    if isinstance(value, str):
        return value in text
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) in number_tokens(text)
    return False


# --- a value given in other words (docs/attribution.md, "A value given in other words") ---------------
# Each reading keeps the value's meaning; the checker names the one that found a value.
CASE_AND_SPACING = "case and spacing"
LABEL_WORD = "a unit or label word"
DATE_NOTATION = "a date in another notation"
NUMBER_IN_WORDS = "a number in words"
LABEL_WINDOW = 4  # words between a label word and its number
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_NUMBER_WORDS = dict(enumerate(_UNITS)) | {10 * t: w for t, w in enumerate(_TENS, start=2)}
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Text case-folded, with every run of white space one space."""
    return " ".join(text.casefold().split())


def _whole(needle: str, haystack: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack) is not None


def date_renderings(value: str) -> list[str]:
    """An ISO date (``2001-04-12``) as people write it, folded: "april 12, 2001", "12 april 2001",
    "apr 12th, 2001", "04/12/2001", "4/12/2001", ... (empty for anything else)."""
    found = _ISO_DATE.fullmatch(value)
    if found is None or not 1 <= int(found[2]) <= 12 or not 1 <= int(found[3]) <= 31:
        return []
    year, month, day = found[1], int(found[2]), int(found[3])
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    out = [f"{found[2]}/{found[3]}/{year}", f"{month}/{day}/{year}"]
    for name in (_MONTHS[month - 1], _MONTHS[month - 1][:3]):
        for d in (str(day), f"{day}{suffix}"):
            out += [f"{name} {d}, {year}", f"{name} {d} {year}", f"{d} {name} {year}", f"{d} {name}, {year}",
                    f"{d} of {name} {year}", f"{d} of {name}, {year}"]
    return out


def in_other_words(value: Any, folded: str) -> str | None:
    """How the folded text ``folded`` (:func:`fold`) states ``value`` in other words that keep its meaning
    — :data:`CASE_AND_SPACING` (a phrase of several words: "Sophia Silva" for "sophia  silva"; a single
    token, an id or a symbol, keeps its case), :data:`LABEL_WORD` ("Suite 641" for "the suite number is 641"),
    :data:`DATE_NOTATION` ("April 12, 2001" for ``2001-04-12``), :data:`NUMBER_IN_WORDS` ("two" for 2) —
    or None. Whether it states the value verbatim is the caller's to check first."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return NUMBER_IN_WORDS if float(value).is_integer() and _NUMBER_WORDS.get(int(value)) is not None \
            and _whole(_NUMBER_WORDS[int(value)], folded) else None
    if not isinstance(value, str):
        return None
    wanted = fold(value)
    if " " in wanted and _whole(wanted, folded):  # a phrase (a name, an address): a token keeps its case
        return CASE_AND_SPACING
    if any(_whole(rendering, folded) for rendering in date_renderings(value.strip())):
        return DATE_NOTATION
    return LABEL_WORD if _labelled(wanted, folded) else None


def _labelled(wanted: str, folded: str) -> bool:
    """``wanted`` is words and numbers, at least one of each and nothing else, and ``folded`` has each
    number with every word within :data:`LABEL_WINDOW` words of it."""
    tokens = _WORD.findall(wanted)
    numbers = [t for t in tokens if t.isdigit()]
    words = [t for t in tokens if t.isalpha()]
    if not numbers or not words or len(numbers) + len(words) != len(tokens) or \
            re.sub(r"[\s,.#:-]", "", wanted) != "".join(tokens):
        return False
    text = _WORD.findall(folded)
    places = {t: [i for i, w in enumerate(text) if w == t] for t in {*numbers, *words}}
    return all(any(all(any(abs(i - j) <= LABEL_WINDOW for j in places[w]) for w in words) for i in places[n])
               for n in numbers)
