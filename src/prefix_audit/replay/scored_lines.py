"""A big block scored in several jobs (the workflow's ``score_chunk`` jobs, config ``score_chunk_mib``): each
scores the lines that start in its byte range of the block's rollouts file (:func:`score_line_range`) into a
file of scored lines (:func:`write_scored_lines`, format :data:`SCORED_LINES_FORMAT`); the block's one
``score_rollouts`` job adds them up in line order (:func:`gather_block`), as :func:`.scoring.score_file` does."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from prefix_audit.core.decode import raw_json_line_range
from prefix_audit.core.io import commit_files
from prefix_audit.core.parallel import WorkerPool
from prefix_audit.core.records import BadLine

from . import registry
from .contract import Benchmark
from .scoring import BlockScoring, Chunk, ScoredLine, ScoreOutputs, ScoreReport, line_chunks, score_chunk

log = logging.getLogger(__name__)


SCORED_LINES_FORMAT = "prefix-audit scored lines 1"
# The default of config score_chunk_mib (config/README.md says how it was chosen): replay measured on
# one core at 1-2 s per MiB of τ logs and 0.2-0.4 s per MiB of BFCL logs, 3-5 s to start a job; a
# 64 MiB chunk of τ logs is 30-60 s of replay on two cores.
DEFAULT_SCORE_CHUNK_MIB = 64


def range_chunks(key: Any, path: str | Path, part: int, parts: int) -> Iterator[Chunk]:
    """The lines of ``path`` in part ``part`` of ``parts`` (:func:`raw_json_line_range`), in
    chunks for the workers, as :func:`file_chunks`."""
    return line_chunks(key, path, raw_json_line_range(path, part, parts))


def score_line_range(rollouts: str | Path, part: int, parts: int, benchmark_for: Callable[[str], Benchmark], *,
                     workers: int = 1) -> list[ScoredLine]:
    """Every line that starts in part ``part`` (from 0) of ``parts`` equal byte ranges of a rollouts
    file, scored as :func:`score_file` scores it, in line order."""
    with WorkerPool(workers, benchmark_for, preload=[__name__, *registry.modules()]) as pool:
        return [line for _, scored in pool.map(score_chunk, range_chunks(None, rollouts, part, parts))
                for line in scored]


def _bad_json(bad: BadLine) -> dict:
    return {"path": bad.path, "line": bad.line, "reason": bad.reason, "rollout_id": bad.rollout_id,
            "excerpt": bad.excerpt, "cause": bad.cause, "entry": None if bad.entry is None else list(bad.entry)}


def _bad_of(value: dict | None) -> BadLine | None:
    if value is None:
        return None
    entry = value["entry"]
    return BadLine(value["path"], value["line"], value["reason"], value["rollout_id"], value["excerpt"],
                   value["cause"], None if entry is None else tuple(entry))


def _scored_json(scored: ScoredLine) -> str:
    # ASCII with escapes, NaN and infinities as JavaScript names: json.loads gives back equal values
    # of equal types (int stays int, float the same float, None, lists, strings with lone surrogates).
    return json.dumps({"line": scored.line, "key": None if scored.key is None else list(scored.key),
                       "sort_key": list(scored.sort_key), "episode": scored.episode, "actions": scored.actions,
                       "bad": None if scored.bad is None else _bad_json(scored.bad)},
                      ensure_ascii=True, allow_nan=True)


def _scored_of(value: dict) -> ScoredLine:
    key = value["key"]
    return ScoredLine(value["line"], None if key is None else tuple(key), tuple(value["sort_key"]),
                      value["episode"], value["actions"], _bad_of(value["bad"]))


def write_scored_lines(path: str | Path, lines: Sequence[ScoredLine], *, rollouts: str | Path, part: int,
                       parts: int) -> None:
    """A part's scored lines as JSON Lines, losslessly: a header naming the rollouts file and the part,
    then one line per :class:`ScoredLine`."""
    header = {"format": SCORED_LINES_FORMAT, "rollouts": str(rollouts), "part": part, "parts": parts,
              "lines": len(lines)}
    body = [json.dumps(header, ensure_ascii=True)] + [_scored_json(line) for line in lines]
    commit_files({Path(path): ("\n".join(body) + "\n").encode("ascii")})


def read_scored_lines(path: str | Path) -> tuple[dict, list[ScoredLine]]:
    """The header and the scored lines of a file of :func:`write_scored_lines`."""
    with open(path, encoding="ascii") as fh:
        header = json.loads(fh.readline())
        if not isinstance(header, dict) or header.get("format") != SCORED_LINES_FORMAT:
            raise ValueError(f"{path}: not a file of scored lines ({SCORED_LINES_FORMAT})")
        lines = [_scored_of(json.loads(raw)) for raw in fh]
    if len(lines) != header["lines"]:
        raise ValueError(f"{path}: {len(lines)} scored lines, its header says {header['lines']} (cut short?)")
    return header, lines


def gather_block(rollouts: str | Path, parts: Sequence[str | Path], outputs: ScoreOutputs) -> ScoreReport:
    """The scoring of ``rollouts`` from the files of scored lines of all its parts, in order: every line
    added as :func:`score_file` adds it, so duplicates, quarantine, order, report and trust are the same
    and the outputs the same bytes."""
    scoring = BlockScoring(str(rollouts))
    last = 0
    for index, path in enumerate(parts):
        header, lines = read_scored_lines(path)
        if (header["part"], header["parts"]) != (index, len(parts)):
            raise ValueError(f"{path}: part {header['part']} of {header['parts']}, expected part {index} "
                             f"of {len(parts)}")
        for line in lines:
            if line.line <= last:
                raise ValueError(f"{path}: line {line.line} after line {last}: the parts are out of order")
            last = line.line
            scoring.add(line)
    return scoring.write(outputs)


def score_block_part(rollouts: str | Path, out: str | Path, *, part: int, parts: int, resources: str | Path,
                     dataset: str, benchmark: Mapping[str, Any] | None = None, plugins: Sequence[str] = (),
                     workers: int = 1) -> int:
    """The ``score_chunk`` stage: part ``part`` of ``parts`` of a block's rollouts scored into ``out``
    (opened as :func:`score_block` opens them); the number of lines scored."""
    registry.load(plugins)
    resolve = registry.resolver(resources, {dataset: benchmark or {}}, fetch=False)
    lines = score_line_range(rollouts, part, parts, resolve, workers=workers)
    write_scored_lines(out, lines, rollouts=rollouts, part=part, parts=parts)
    log.info(f"part {part + 1} of {parts} of {rollouts}: {len(lines)} rollout records scored"
             + (f" (lines {lines[0].line}-{lines[-1].line})" if lines else ""))
    return len(lines)


def score_parts(total_bytes: int, part_mib: float | None) -> int:
    """Parts a block of ``total_bytes`` of logs is scored in: one per ``part_mib`` MiB, rounded up
    (1: one job; ``part_mib`` None: never split)."""
    if part_mib is None:
        return 1
    return max(1, math.ceil(total_bytes / (part_mib * 2**20)))
