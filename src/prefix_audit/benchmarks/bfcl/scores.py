"""BFCL's own verdicts: the score file ``bfcl evaluate`` writes beside a result file.

A score file is JSON Lines: a summary line (``accuracy``, ``correct_count``, ``total_count``), then
one line per entry that failed (``id``, ``valid: false``, ``error.error_type``). An entry of the
result file that the score file does not list passed. ``bfcl evaluate`` writes it at
``<root>/score/<model folder>/[multi_turn/]<stem>_score.json`` for the result file
``<root>/result/<model folder>/[multi_turn/]<stem>_result.json``; we look there, then beside the
result file, or take the file (or a folder to search) given with ``--bfcl-score``.

A score file is used only when it fits the result file: the same category, a total equal to the
result file's entries, and as many failing lines as its summary says failed. Otherwise no entry
gets a recorded verdict, and the reason says why.

Either file may be compressed (:func:`~prefix_audit.core.compressed.open_bytes`): names are matched
without a compressed file's suffix (``x_result.json.gz`` is the result file ``x_result.json``), and
each place is tried with the plain name first, then with every compressed suffix. The score file
used is recorded with each rollout (``meta["bfcl_score_file"]``: its name and the sha256 of its
content — the plain file's ``sha256sum`` whether or not it is compressed, so a log and its
compressed copy give the same records).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from prefix_audit.core.compressed import content_sha256
from prefix_audit.core.decode import COMPRESSED_SUFFIXES, first_json_lines, plain_name
from prefix_audit.plugin import BadLine, DecodeError, iter_json_lines

RESULT_SUFFIX = "_result.json"
SCORE_SUFFIX = "_score.json"
SCORE_FILE_KEY = "bfcl_score_file"  # a rollout's meta: the score file its recorded verdict came from
# BFCL's name of a result or score file, after whatever a copy put before it (``gpt-oss-20b_``): the
# last "BFCL_v<N>_" of the name begins it.
_BFCL_NAME = re.compile(r"^(?P<prefix>.*)BFCL_v(?P<version>\d+)_(?P<category>\w+?)_(?:result|score)\.json$")
_PREFIX_SEPARATORS = "_-. "


@dataclass(frozen=True)
class BfclFileName:
    """What a result or score file's name says: the BFCL version (``4`` of ``BFCL_v4_…``), the test
    category, and what precedes BFCL's own name (a flat copy's ``gpt-oss-20b`` of
    ``gpt-oss-20b_BFCL_v4_multi_turn_base_result.json``; separators cut, ``""`` for none)."""

    prefix: str
    version: str
    category: str


def bfcl_file_name(path: Path) -> BfclFileName | None:
    """The parts of a BFCL file's name (a compressed file's without its suffix); None for another name."""
    match = _BFCL_NAME.match(plain_name(path.name))
    if match is None:
        return None
    return BfclFileName(match.group("prefix").rstrip(_PREFIX_SEPARATORS), match.group("version"),
                        match.group("category"))


@dataclass(frozen=True)
class ScoreFile:
    """A score file read: its path, totals and the failing entries (id → BFCL's error type)."""

    path: Path
    total: int
    correct: int
    failing: dict[str, str]
    categories: frozenset[str]  # the test categories its failing entries name (from their ids when absent)
    models: frozenset[str] = frozenset()  # the model names (BFCL's folder form) its failing entries record
    sha256: str = ""  # of its content (a compressed file's decompressed bytes)
    accuracy: float | None = None  # its summary line's own accuracy (None where it records none)

    def provenance(self) -> dict[str, Any]:
        """Which file the verdicts came from, and its summary line (BFCL's own accuracy of the
        category, shown beside ours per category), as each rollout records it."""
        return {"name": self.path.name, "sha256": self.sha256, "accuracy": self.accuracy,
                "correct_count": self.correct, "total_count": self.total}

    def verdict(self, entry_id: str) -> tuple[int, str]:
        """(recorded Y, the verdict in BFCL's words) of one entry of the result file it scores."""
        if entry_id in self.failing:
            return 0, f"BFCL score file: {self.failing[entry_id]}"
        return 1, "BFCL score file: valid"


def category_of(entry_id: str) -> str:
    """The test category of an entry id (``multi_turn_base_12`` → ``multi_turn_base``)."""
    return entry_id.rsplit("_", 1)[0]


def category_named(path: Path) -> str | None:
    name = bfcl_file_name(path)
    return name.category if name is not None else None


def read_score_file(path: Path) -> ScoreFile:
    """Read a score file; :class:`DecodeError` naming what is wrong with it."""
    summary, failing, categories, models = None, {}, set(), set()
    accuracy = None
    for item in iter_json_lines(path):
        if isinstance(item, BadLine):
            raise DecodeError(f"{path.name} line {item.line}: {item.reason}")
        value = item.value
        if summary is None:
            summary = summary_counts(value, path)
            accuracy = summary_accuracy(value, path)
            continue
        if not is_failing_entry(value):
            raise DecodeError(f"{path.name} line {item.line}: not a failing entry (an object with an id and "
                              f"valid: false)")
        failing[value["id"]] = error_type(value)
        categories.add(str(value.get("test_category") or category_of(value["id"])))
        if isinstance(value.get("model_name"), str):
            models.add(value["model_name"])
    if summary is None:
        raise DecodeError(f"{path.name} is empty")
    named = category_named(path)
    if named is not None:
        categories.add(named)
    correct, total = summary
    return ScoreFile(path, total, correct, failing, frozenset(categories), frozenset(models), content_sha256(path),
                     accuracy)


def summary_counts(value: Any, path: Path) -> tuple[int, int]:
    """(correct_count, total_count) of a score file's first line; :class:`DecodeError` if it is no summary."""
    correct, total = (value.get(k) if isinstance(value, dict) else None for k in ("correct_count", "total_count"))
    if not (_is_count(correct) and _is_count(total)):
        raise DecodeError(f"{path.name}: the first line is no summary with correct_count and total_count")
    return correct, total


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def summary_accuracy(value: dict[str, Any], path: Path) -> float | None:
    """The ``accuracy`` of a score file's summary line (``value``, a summary), None where it has none;
    :class:`DecodeError` if it is no number from 0 to 1."""
    accuracy = value.get("accuracy")
    if accuracy is None:
        return None
    if isinstance(accuracy, bool) or not isinstance(accuracy, int | float) or not 0 <= accuracy <= 1:
        raise DecodeError(f"{path.name}: the summary's accuracy is no number from 0 to 1: {accuracy!r}")
    return float(accuracy)


def is_failing_entry(value: Any) -> bool:
    """A line of a score file after its summary: an object with an id and ``valid: false``."""
    return isinstance(value, dict) and isinstance(value.get("id"), str) and value.get("valid") is False


def error_type(value: Mapping[str, Any]) -> str:
    """BFCL's error type of a failing entry (``invalid`` where it names none)."""
    error = found if isinstance(found := value.get("error"), dict) else {}
    return str(error.get("error_type") or "invalid")[:200]


def named_multi_turn(path: Path) -> bool | None:
    """Whether the BFCL file's name (``BFCL_v3_<category>_result.json``, ``…_score.json``) says a
    multi-turn category; None when it names none."""
    named = category_named(path)
    return None if named is None else named.startswith("multi_turn")


def is_score_file(path: Path) -> bool:
    """A BFCL multi-turn score file: JSON Lines whose first line is the summary (``correct_count``,
    ``total_count``) and that scores a multi-turn category (its name, else its first failing line)."""
    lines = first_json_lines(path, 2) if path.is_file() else None
    if not lines or not isinstance(lines[0], dict) or not {"correct_count", "total_count"} <= set(lines[0]):
        return False
    named = named_multi_turn(path)
    if named is not None:
        return named
    first = lines[1] if len(lines) > 1 and isinstance(lines[1], dict) else {}
    return str(first.get("test_category") or first.get("id") or "").startswith("multi_turn")


def result_file_of(score: Path) -> Path | None:
    """The result file a score file scores, where ``bfcl evaluate`` reads it (``result/`` for
    ``score/``) or beside it, plain or compressed; None when neither exists."""
    name = _counterpart(score, SCORE_SUFFIX, RESULT_SUFFIX)
    if name is None:
        return None
    parts = score.resolve().parts
    places = []
    if "score" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index("score")
        places.append(Path(*parts[:at], "result", *parts[at + 1:-1], name))
    places.append(score.with_name(name))
    return next((p for p in _compressed_too(places) if p.is_file()), None)


def _counterpart(path: Path, suffix: str, other: str) -> str | None:
    """The plain name of the file of the other kind (``other``) that goes with ``path`` (named with
    ``suffix``, maybe compressed); None when its name does not end so."""
    name = plain_name(path.name)
    return name[: -len(suffix)] + other if name.endswith(suffix) else None


def _compressed_too(places: list[Path]) -> list[Path]:
    """Each place as named, then with every compressed file's suffix."""
    return [p.with_name(p.name + suffix) for p in places for suffix in ("", *COMPRESSED_SUFFIXES)]


def _candidates(result: Path, given: Path | None) -> list[Path]:
    """Where the score file of ``result`` may be, in order."""
    name = _counterpart(result, RESULT_SUFFIX, SCORE_SUFFIX)
    out: list[Path] = []
    if given is not None:
        if given.is_dir():
            out += sorted(p for p in given.rglob(f"{name}*") if plain_name(p.name) == name) if name else []
        else:
            out.append(given)
    if name is None:
        return out
    parts = result.resolve().parts
    places = []
    if "result" in parts:  # bfcl evaluate's layout: result/<model>/... → score/<model>/...
        at = len(parts) - 1 - parts[::-1].index("result")
        places.append(Path(*parts[:at], "score", *parts[at + 1:-1], name))
    places.append(result.with_name(name))
    return out + _compressed_too(places)


def score_file_candidates(result: Path, settings: Mapping[str, Any]) -> list[Path]:
    """The existing files the score file of ``result`` may be (a block of that result file depends on
    them); ``settings``: the dataset's config entry (``score_file``: ``--bfcl-score``)."""
    given = settings.get("score_file")
    return [p for p in _candidates(result, Path(given) if given else None) if p.is_file()]


def find_score_file(result: Path, entry_ids: Sequence[str], given: Path | None = None) -> tuple[ScoreFile | None, str]:
    """The score file that fits ``result`` (its entries ``entry_ids``), or None and why there is none."""
    categories = {category_of(i) for i in entry_ids}
    tried: list[str] = []
    for path in _candidates(result, given):
        if not path.is_file():
            continue
        try:
            scores = read_score_file(path)
        except (DecodeError, OSError) as exc:
            tried.append(f"{path.name} unreadable ({exc})")
            continue
        if scores.categories and not scores.categories & categories:
            tried.append(f"{path.name} scores {', '.join(sorted(scores.categories))}")
            continue
        problem = _mismatch(scores, entry_ids)
        if problem is None:
            return scores, f"BFCL score file {path.name}"
        tried.append(f"{path.name} {problem}")
    if tried:
        return None, "no BFCL score file fits: " + "; ".join(tried)
    return None, "no BFCL score file found beside the result file (give one with --bfcl-score)"


def _mismatch(scores: ScoreFile, entry_ids: Sequence[str]) -> str | None:
    if scores.total != len(entry_ids):
        return f"counts {scores.total} entries, the result file has {len(entry_ids)}"
    if len(scores.failing) != scores.total - scores.correct:
        return (f"lists {len(scores.failing)} failing entries where its summary says "
                f"{scores.total - scores.correct} failed")
    stray = sorted(set(scores.failing) - set(entry_ids))
    if stray:
        return f"lists entries the result file does not have ({', '.join(stray[:3])})"
    return None
