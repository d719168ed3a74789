"""Whether a string a BFCL ground-truth call writes transcribes a source and changes it, for the benchmark
health of BFCL entries (:meth:`.health.BfclProbe.own_findings`).

A source is a text the agent could copy: a result of an earlier gold call, an initial value, a string an
earlier gold call wrote, a user message, a function doc. Texts are compared without case, blanks, quote
marks and a tag's ``#`` or mention's ``@`` (:func:`normalise`); a gold string transcribes a source that holds
the same words in another order or spacing, or that the user quotes (dictates) with one word more or less
or up to :data:`NEAR_CHARS` characters changed, digits alone not counted.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from prefix_audit.plugin import ToolCall

from .state_diff import shortened

NEAR_CHARS = 2  # a dictated text and the gold's: this many characters apart at most


def strings_in(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(where, string) for every string of a nested value: dict keys and values, list items, the
    public attributes of objects."""
    stack = [(value, path)]
    seen: set[int] = set()
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, (int, float, bool)) or item is None or id(item) in seen:
            continue
        elif isinstance(item, Mapping):
            seen.add(id(item))
            for k, v in item.items():
                if isinstance(k, str):
                    yield f"{where} (a key)", k
                stack.append((v, f"{where}[{k!r}]"))
        elif isinstance(item, (list, tuple, set, frozenset)):
            seen.add(id(item))
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
        elif hasattr(item, "__dict__") and not callable(item):
            seen.add(id(item))
            stack.extend((v, f"{where}.{k}") for k, v in vars(item).items() if not k.startswith("_"))


_MARK = re.compile(r"(?<![\w])[#@](?=\w)")
_QUOTES = re.compile(r"[\"'`\u2018\u2019\u201c\u201d]")
_WORD = re.compile(r"\w+")
# Text the user puts in quotes: an apostrophe inside a word (I'll) does not open or close one.
_QUOTED = re.compile(r"(?<!\w)'(.+?)'(?!\w)|\"(.+?)\"|\u201c(.+?)\u201d|\u2018(.+?)\u2019(?!\w)", re.S)


def normalise(text: str) -> str:
    """Case, blanks, a tag's ``#`` or mention's ``@``, quote marks and backslashes left out."""
    text = _QUOTES.sub("", _MARK.sub("", text.casefold())).replace("\\", "")
    return " ".join(text.split())


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def quoted_spans(text: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None).strip() for m in _QUOTED.finditer(text)]


def _edits(a: str, b: str) -> tuple[int, str]:
    """How many characters turn ``a`` into ``b`` (each replaced, inserted or deleted one counted once)
    and those characters, both sides'."""
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    count = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")
    return count, "".join(a[i1:i2] + b[j1:j2] for tag, i1, i2, j1, j2 in ops if tag != "equal")


def _one_word_apart(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether one word sequence is the other with exactly one word inserted (or left out)."""
    if abs(len(a) - len(b)) != 1:
        return False
    short, long = (a, b) if len(a) < len(b) else (b, a)
    ops = difflib.SequenceMatcher(None, short, long, autojunk=False).get_opcodes()
    return sum(i2 - i1 + j2 - j1 for tag, i1, i2, j1, j2 in ops if tag != "equal") == 1


@dataclass(frozen=True)
class TextSource:
    """Where a text is available to an agent, in words a person can follow, and the text."""

    where: str
    text: str
    dictated: bool = False  # the user quotes it: the text to write, word for word

    @cached_property
    def words(self) -> list[str]:
        return words(self.text)

    @cached_property
    def bag(self) -> Counter:
        return Counter(self.words)


def transcribes(literal: str, source: TextSource) -> str | None:
    """How ``literal`` is ``source``'s text changed (None: it is not)."""
    lw, sw = words(literal), source.words
    if len(lw) >= 2 and len(lw) == len(sw) and Counter(lw) == source.bag:
        return ("the same words in another order" if lw != sw else
                "the same words with other spacing, punctuation or case")
    if not source.dictated:
        return None
    # A change of digits alone may be a format the function asks for (MM/YY as MM/YYYY, a balance
    # with cents): not counted.
    if len(lw) >= 2 and _one_word_apart(lw, sw):
        (odd,) = (Counter(lw) - Counter(sw)) + (Counter(sw) - Counter(lw))
        if not odd.isdigit():
            return f"the same words but {odd!r} " + ("left out" if len(lw) < len(sw) else "added")
    if min(len(literal), len(source.text)) >= 4 and abs(len(literal) - len(source.text)) <= NEAR_CHARS:
        apart, changed = _edits(source.text, literal)
        if apart <= NEAR_CHARS and not changed.isdigit():
            return f"the same text but {apart} character{'s' if apart > 1 else ''} changed"
    return None


def replace_string(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, list):
        return [replace_string(v, old, new) for v in value]
    if isinstance(value, tuple):
        return tuple(replace_string(v, old, new) for v in value)
    if isinstance(value, dict):
        return {k: replace_string(v, old, new) for k, v in value.items()}
    return value


def string_arguments(call: ToolCall) -> Iterator[tuple[str, str]]:
    """(parameter, string) for each string in a call's arguments, in order, once each."""
    said: set[str] = set()
    named = [(f"argument {i + 1}", v) for i, v in enumerate(call.args)] + list(call.kwargs.items())
    for param, value in named:
        for _, text in sorted(strings_in(value), key=lambda x: x[0]):
            if text not in said:
                said.add(text)
                yield param, text


def text_change(a: str, b: str, context: int = 30) -> str:
    """Where two texts differ: ``…common[a-part → b-part]common…``."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    head = ("…" if start > context else "") + a[max(0, start - context):start]
    tail = a[len(a) - end:len(a) - end + context] + ("…" if end > context else "")
    return f"{head}[{shortened(a[start:len(a) - end], 80)!r} → {shortened(b[start:len(b) - end], 80)!r}]{tail}"
