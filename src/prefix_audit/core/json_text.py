"""JSON text that ends inside its value: whether text is a prefix of JSON cut short (:func:`ends_inside_json`)
and, for a document, where it ends and which of its entries are whole before the cut (:func:`document_cut`).
What :mod:`.decode` says of a line or a document cut off, and :mod:`.cut_off` of a whole file."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass


def json_integer(digits: str) -> int | float:
    """A JSON integer; one longer than Python converts (``sys.get_int_max_str_digits``, 4,300 by
    default) is read as the float it overflows to (±inf), as JSON's ``1e999`` is — so it fails the
    field's own check (an accounting number, an argument) instead of the whole line or document."""
    limit = sys.get_int_max_str_digits()
    return int(digits) if not limit or len(digits.lstrip("-")) <= limit else float(digits)


# What a file's content is, as far as its cut matters: JSON Lines (the whole lines before a cut are
# entries as usual), one JSON document (nothing before a cut is the document), a zip archive (its
# index is at its end: nothing before a cut is readable).
JSON_LINES, JSON_DOCUMENT, ZIP_ARCHIVE = "JSON Lines", "JSON document", "zip archive"
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_NUMBER_START = re.compile(r"-|-?(?:0|[1-9]\d*)(?:\.\d*)?(?:[eE][-+]?\d*)?")  # a JSON number, or its first characters
_NUMBER_CHARS = "-+.0123456789eE"
_HEX_ESCAPE_START = re.compile(r"u[0-9a-fA-F]{0,4}")
_SPACE = re.compile(r"[ \t\n\r]*")
JSON_DECODER = json.JSONDecoder(parse_int=json_integer)


@dataclass(frozen=True)
class CutOff:
    """A file whose content ends inside its JSON (or its zip archive), as :func:`cut_off` finds it."""

    said: str  # one line: the file, where it ends, and — a document — the complete entries before the cut
    line: int  # the line it ends inside (0: a zip archive)
    shape: str  # JSON_LINES, JSON_DOCUMENT or ZIP_ARCHIVE


def ends_inside_json(data: bytes) -> bool:
    """Whether ``data`` is JSON text cut off inside its value: a prefix of JSON, not whole JSON and not
    broken before its end."""
    text = _utf8_before_cut(data)
    if text is None or not text.strip():  # no JSON begun
        return False
    try:
        JSON_DECODER.decode(text)
    except json.JSONDecodeError as exc:
        return _ends_inside_value(text, exc)
    except (ValueError, RecursionError):
        return False
    return False


def _ends_inside_value(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether the parser's error ``exc`` on ``text`` is the text's end: nothing but white space after
    where it stopped, a string left open, or a literal, a number or a \\u escape begun and not finished."""
    # (nothing is copied from the text, which may be a whole document)
    if _past_space(text, exc.pos) == len(text) or exc.msg.startswith("Unterminated string"):
        return True
    if exc.msg.startswith("Invalid \\uXXXX escape"):
        return bool(_HEX_ESCAPE_START.fullmatch(text, exc.pos))
    if exc.msg == "Expecting value" and len(text) - exc.pos < max(map(len, _LITERALS)) and \
            any(literal.startswith(text[exc.pos:]) for literal in _LITERALS):
        return True
    # A number is read as far as it is one (``1.`` as ``1``): the error is then after that part, else at
    # its start (``-``); either way the number runs from its start to the text's end.
    begun = exc.pos
    while begun and text[begun - 1] in _NUMBER_CHARS:
        begun -= 1
    inside = begun < exc.pos if exc.msg == "Expecting ',' delimiter" else exc.msg == "Expecting value"
    return inside and bool(_NUMBER_START.fullmatch(text, begun))


def _past_space(text: str, at: int) -> int:
    """Where the JSON white space from ``at`` on ends: ``at`` itself where there is none."""
    space = _SPACE.match(text, at)  # never None: the pattern matches the empty string too
    return at if space is None else space.end()


def _utf8_before_cut(data: bytes) -> str | None:
    """``data`` as text, a character cut off at its very end left out; None where it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end != len(data) or exc.reason != "unexpected end of data":
            return None
        return data[:exc.start].decode("utf-8", errors="strict")


def where_it_ends(size: int, compressed: bool) -> str:
    return f"byte {size:,} of its decompressed content" if compressed else f"byte {size:,}"


def document_cut(data: bytes, name: str, ends_at: str) -> CutOff | None:
    """The cut of a JSON document (an object or a list) that ends inside its value, said with where it
    ends and the complete entries before the cut; None where it is whole, or broken before its end."""
    text = _utf8_before_cut(data)
    if text is None or text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        JSON_DECODER.decode(text)
        return None
    except json.JSONDecodeError as exc:
        if not _ends_inside_value(text, exc):
            return None
    except (ValueError, RecursionError):
        return None
    body = data.rstrip()  # counted in bytes, which is quicker; the column in characters
    line, column = body.count(b"\n") + 1, len(body[body.rfind(b"\n") + 1:].decode("utf-8", errors="replace"))
    entries = _entries_before_cut(text)
    before = "" if entries is None else (
        f" with {_entries(entries[0], 'complete entry', 'complete entries')} in its "
        f"{'top-level list' if entries[1] is None else json.dumps(entries[1][:100], ensure_ascii=False) + ' list'} "
        f"before the cut")
    return CutOff(f"{name} is cut off: it ends inside line {line:,}, column {column:,} ({ends_at}), an incomplete "
                  f"JSON document{before}", line, JSON_DOCUMENT)


def _entries(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _entries_before_cut(text: str) -> tuple[int, str | None] | None:
    """The complete elements of the list a cut-off document ends inside, read value by value: its
    top-level list (τ-bench v1's results), or a list that is a member of its top-level object (tau2's
    ``simulations``, Inspect's ``samples``), with that member's key; None where the cut is elsewhere."""
    at = _past_space(text, 0)
    if text[at] == "[":
        return _complete_elements(text, at), None
    at = _past_space(text, at + 1)
    while text[at:at + 1] == '"':
        try:
            key, at = JSON_DECODER.raw_decode(text, at)
            at = _past_space(text, at)
            if text[at:at + 1] != ":":
                return None
            at = _past_space(text, at + 1)
            _, end = JSON_DECODER.raw_decode(text, at)
        except (ValueError, RecursionError):  # the member the cut is inside
            return (_complete_elements(text, at), key) if text[at:at + 1] == "[" else None
        at = _past_space(text, end)
        if text[at:at + 1] != ",":
            return None
        at = _past_space(text, at + 1)
    return None


def _complete_elements(text: str, at: int) -> int:
    """How many elements of the list opening at ``at`` are whole before the text ends inside it."""
    n, at = 0, _past_space(text, at + 1)
    while True:
        try:
            _, end = JSON_DECODER.raw_decode(text, at)
        except (ValueError, RecursionError):
            return n
        n += 1
        at = _past_space(text, end)
        if text[at:at + 1] != ",":
            return n
        at = _past_space(text, at + 1)
