"""Score a file of rollouts: per-action and per-rollout (FED) Parquet, plus a quarantine file.

Every input line ends up in exactly one place: an episode row, or a quarantine record with its
location and reason. The counts are returned and logged so every denominator is visible.
"""

from __future__ import annotations

import json
import logging
import math
import pickle
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from prefix_audit.core.decode import decode_json_line, finite_json, raw_json_line_range, raw_json_lines
from prefix_audit.core.fetch import FetchError
from prefix_audit.core.io import commit_files, parquet_bytes
from prefix_audit.core.parallel import Progress, WorkerPool
from prefix_audit.core.quarantine import QuarantineTally, tally
from prefix_audit.core.records import AGENT_ROLES, BadLine, Located, Rollout, agent_texts, call_steps, located_rollout

from . import registry
from .checker import EpisodeResult, primary, replay
from .contract import Benchmark, UnknownDataset, UnscorableRollout
from .fed import ACTION_SCHEMA, EPISODE_SCHEMA
from .record_check import DIVERGED, RecordCheck, check_record
from .trust import DEFAULT_MIN_AGREEMENT, BlockTrust, block_trust

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 2_000


@dataclass
class ScoreReport:
    lines_read: int = 0
    scored: int = 0
    infra_errors: int = 0  # of the scored: entries whose model call failed before any action
    quarantine: QuarantineTally = field(default_factory=QuarantineTally)
    datasets: Counter = field(default_factory=Counter)
    trust: list[BlockTrust] = field(default_factory=list)  # blocks of imported rollouts against their logs

    @property
    def quarantined(self) -> int:
        return self.quarantine.total

    def summary(self) -> str:
        return (f"rollout records read: {self.lines_read}; scored: {self.scored} "
                f"({self.infra_errors} infrastructure failures: T/FED null); quarantined: {self.quarantined}")

    def quarantine_lines(self) -> list[str]:
        """One line per cause of quarantine: its count and first entries."""
        return [f"  {line}" for line in self.quarantine.lines()]

    def trust_lines(self, min_agreement: float = DEFAULT_MIN_AGREEMENT) -> list[str]:
        """Per block of imported rollouts: agreement with its logs' records and the warnings."""
        many = len(self.trust) > 1
        return [f"{'/'.join(b.key) + ': ' if many else ''}{line}"
                for b in self.trust for line in b.lines(min_agreement)]


def _accounting(rollout: Rollout) -> dict:
    if not rollout.usage:
        return dict.fromkeys(("agent_calls", "agent_tokens", "agent_latency_s", "agent_wall_s",
                              "agent_estimated_calls", "user_sim_tokens", "user_sim_latency_s"))
    agent = [u for u in rollout.usage if u.role in AGENT_ROLES]
    user = [u for u in rollout.usage if u.role == "user_simulator"]
    return {
        "agent_calls": len(agent),
        "agent_tokens": sum(u.input_tokens + u.output_tokens for u in agent),
        "agent_latency_s": _known_sum(u.latency_s for u in agent),
        "agent_wall_s": _known_sum(u.total_s for u in agent),
        "agent_estimated_calls": sum(u.estimated for u in agent),
        "user_sim_tokens": sum(u.input_tokens + u.output_tokens for u in user),
        "user_sim_latency_s": _known_sum(u.latency_s for u in user),
    }


def _known_sum(values: Iterable[float | None]) -> float | None:
    """The sum, or None when a call's value was not recorded (a partial sum would understate it)."""
    total = 0.0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def meta_json(meta: dict) -> str:
    """A rollout's meta as valid JSON: NaN and infinities, which logs may carry, as their names."""
    try:
        return json.dumps(meta, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(finite_json(meta), sort_keys=True, ensure_ascii=False, allow_nan=False)


def _record_columns(ep: EpisodeResult, check: RecordCheck | None) -> dict:
    """The trust columns of an episode (all null for a rollout that carries no record)."""
    recorded = ep.rollout.recorded
    check = check if check is not None else check_record(ep)
    if recorded is None or check is None:
        return dict.fromkeys(("recorded_y", "recorded_verdict", "recorded_score", "recorded_score_name",
                              "replay_agreement", "results_compared",
                              "results_reproduced", "results_same_verdict", "log_issue", "call_steps",
                              "undecoded_steps", "undecoded_confirmed", "tool_calls", "unknown_tool_calls"))
    steps, undecoded = call_steps(ep.rollout)
    return {
        "recorded_y": recorded.y, "recorded_verdict": recorded.verdict,
        "recorded_score": recorded.score, "recorded_score_name": recorded.score_name,
        "replay_agreement": check.replay_agreement, "results_compared": check.compared,
        "results_reproduced": check.reproduced, "results_same_verdict": check.same_verdict,
        "log_issue": check.log_issue,
        "call_steps": steps, "undecoded_steps": undecoded, "undecoded_confirmed": recorded.undecoded_confirmed,
        "tool_calls": sum(v.action.call is not None for v in ep.verdicts),
        "unknown_tool_calls": ep.unknown_tool_calls,
    }


def episode_row(ep: EpisodeResult, check: RecordCheck | None = None, release: str | None = None) -> dict:
    r = ep.rollout
    ff = ep.first_failure
    main = primary(ff.failures) if ff else None
    return {
        "dataset": r.dataset, "model": r.model, "method": r.method, "task_id": r.task_id,
        "trial": r.trial, "rollout_id": r.rollout_id, "source": r.source, "infra_error": r.infra_error,
        "T": ep.T, "FED": ep.FED, "Y": ep.Y,
        "category": main.category if main else None,
        "failure_code": main.code if main else None,
        "failure_detail": main.detail if main else None,
        "failed_predicates": sorted({f.category for f in ff.failures}) if ff else [],
        "origin": ff.attribution.origin if ff and ff.attribution else None,
        "origin_evidence": ff.attribution.evidence if ff and ff.attribution else None,
        "FED_agent": ep.FED_agent,
        "n_turns": len(r.turns), "y_detail": ep.y_detail,
        **_accounting(r),
        "accounting_error": r.accounting_error,
        "meta_json": meta_json(r.meta),
        **_record_columns(ep, check),
        "release": release, "task_sound": None, "task_health": [], "task_defects": [], "user_turns": list(ep.user_texts),
        "user_source": ep.user_source,
        "agent_texts": [{"turn": t, "step": s, "text": _cut(text)} for t, s, text in agent_texts(r)],
    }


def _cut(text: str | None) -> str | None:
    return text[:MAX_RESULT_CHARS] if text is not None else None


def action_rows(ep: EpisodeResult, check: RecordCheck | None = None) -> Iterable[dict]:
    r = ep.rollout
    statuses = check.statuses if check is not None else {}
    for v in ep.verdicts:
        call = v.action.call
        recorded = v.action.recorded
        status = statuses.get(v.action.index)
        yield {
            "dataset": r.dataset, "model": r.model, "method": r.method, "task_id": r.task_id,
            "rollout_id": r.rollout_id, "j": v.action.index, "turn": v.action.turn, "step": v.action.step,
            "message": v.action.message, "terminal": call is None, "tool": call.name if call else None,
            "call": call.render() if call else v.action.text,
            "V": v.valid,
            "failure_categories": [f.category for f in v.failures],
            "failure_codes": [f.code for f in v.failures],
            "failure_details": [f.detail for f in v.failures],
            "origin": v.attribution.origin if v.attribution else None,
            "origin_evidence": v.attribution.evidence if v.attribution else None,
            "given_as": list(v.given_as),
            "accepted": v.accepted,
            "result": _cut(v.result),
            "recorded_result": _cut(recorded.content) if recorded is not None else None,
            "recorded_error": recorded.error if recorded is not None else None,
            "record_match": status,
            "replayed_result": _cut(v.logged) if status in DIVERGED else None,
        }


def _replay_entry(item: Located, benchmark_for: Callable[[str], Benchmark]) -> EpisodeResult | BadLine:
    """One rollout replayed, or why it cannot be (a defect in one record's replay never loses the others)."""
    rollout = item.rollout
    try:
        return replay(rollout, benchmark_for(rollout.dataset))
    except (UnscorableRollout, UnknownDataset) as exc:
        message = exc.args[0] if exc.args else str(exc)
        return BadLine(item.path, item.line, str(message), rollout.rollout_id, cause=getattr(exc, "cause", None))
    except FetchError:  # a benchmark package that cannot be had fails every record alike: the command stops
        raise
    except Exception as exc:
        log.debug("replay of %s:%s failed", item.path, item.line, exc_info=True)
        return BadLine(item.path, item.line, f"replay error: {type(exc).__name__}: {exc}", rollout.rollout_id,
                       cause=f"replay error: {type(exc).__name__}")


def _block_key(rollout: Rollout) -> tuple[str, str, str, str]:
    return (rollout.dataset, rollout.model, rollout.method, rollout.rollout_id)


def _duplicate(path: str, line: int, key: tuple[str, str, str, str], seen: dict[tuple, int]) -> BadLine | None:
    """A rollout id seen before in its block (the first one counts); else None, and ``key`` is seen."""
    if key in seen:
        return BadLine(path, line, f"duplicate rollout_id {key[3]!r} in block {'/'.join(key[:3])} "
                       f"(first on line {seen[key]})", key[3],
                       cause=f"duplicate rollout_id in block {'/'.join(key[:3])} (the first of each counts)")
    seen[key] = line
    return None


def _count_bad(report: ScoreReport, bad: list[BadLine]) -> None:
    report.quarantine = tally(bad)


def score_rollouts(items: Iterable[Located | BadLine], benchmark_for: Callable[[str], Benchmark],
                   report: ScoreReport) -> tuple[list[EpisodeResult], list[BadLine]]:
    """Replay every rollout in this process; anything unusable becomes a located quarantine record."""
    episodes: list[EpisodeResult] = []
    bad: list[BadLine] = []
    seen: dict[tuple, int] = {}
    for item in items:
        report.lines_read += 1
        if isinstance(item, BadLine):
            bad.append(item)
            continue
        result = _duplicate(item.path, item.line, _block_key(item.rollout), seen) or _replay_entry(item, benchmark_for)
        if isinstance(result, BadLine):
            bad.append(result)
            continue
        episodes.append(result)
        report.datasets[item.rollout.dataset] += 1
    report.scored = len(episodes)
    report.infra_errors = sum(ep.T is None for ep in episodes)
    _count_bad(report, bad)
    return episodes, bad


def _sort_key(ep: EpisodeResult) -> tuple:
    r = ep.rollout
    return (r.dataset, r.model, r.method, r.task_id, r.trial, r.rollout_id)


@dataclass(frozen=True)
class ScoreOutputs:
    """Where one scoring run writes: the per-action table, the FED table and the quarantine file."""

    actions: Path
    episodes: Path
    quarantine: Path

    @classmethod
    def in_dir(cls, out_dir: str | Path) -> ScoreOutputs:
        """The file names ``prefix-audit score -o DIR`` writes."""
        out = Path(out_dir)
        return cls(out / "actions.parquet", out / "episodes.parquet", out / "quarantine.jsonl")


@dataclass(frozen=True)
class ScoredLine:
    """One line of a rollouts file, scored wherever it was replayed: its rows, or why it has none."""

    line: int
    key: tuple[str, str, str, str] | None = None  # block and rollout id (None: the line holds no rollout)
    sort_key: tuple = ()
    episode: dict | None = None
    actions: list[dict] = field(default_factory=list)
    bad: BadLine | None = None
    stored: tuple[int, int] | None = None  # where a RowStore keeps its episode and actions (offset, length)


LINES_PER_CHUNK = 4  # a few entries per message to a worker: small enough to share a block's tail out

# What a worker is sent: the key of the file the lines belong to, its path, and its lines
# ((line number, the line's bytes), or the quarantine record of a line that cannot be read).
Chunk = tuple[Any, str, list[tuple[int, bytes] | BadLine]]


def score_line(benchmark_for: Callable[[str], Benchmark], path: str, raw: tuple[int, bytes] | BadLine) -> ScoredLine:
    """One line of a rollouts file (its number and bytes) decoded, replayed on fresh state and checked
    against its log's record: the one scoring of ``score``, ``audit`` and the Inspect scorer."""
    if isinstance(raw, BadLine):
        return ScoredLine(raw.line, bad=raw)
    item = decode_json_line(path, *raw)
    located = item if isinstance(item, BadLine) else located_rollout(item)
    if isinstance(located, BadLine):
        return ScoredLine(located.line, bad=located)
    key = _block_key(located.rollout)
    result = _replay_entry(located, benchmark_for)
    if isinstance(result, BadLine):
        return ScoredLine(located.line, key, bad=result)
    check = check_record(result)
    release = benchmark_for(located.rollout.dataset).release_of(located.rollout)
    return ScoredLine(located.line, key, _sort_key(result), episode_row(result, check, release),
                      list(action_rows(result, check)))


def _score_chunk(benchmark_for: Callable[[str], Benchmark], chunk: Chunk) -> tuple[Any, list[ScoredLine]]:
    """A worker's call: some lines of one file, each replayed on fresh state."""
    key, path, lines = chunk
    return key, [score_line(benchmark_for, path, raw) for raw in lines]


def _chunks(key: Any, path: str | Path, raws: Iterable[tuple[int, bytes] | BadLine]) -> Iterator[Chunk]:
    lines: list = []
    for raw in raws:
        lines.append(raw)
        if len(lines) == LINES_PER_CHUNK:
            yield key, str(path), lines
            lines = []
    if lines:
        yield key, str(path), lines


def file_chunks(key: Any, path: str | Path) -> Iterator[Chunk]:
    """A rollouts file's lines in chunks, read as they are sent."""
    return _chunks(key, path, raw_json_lines(path))


class RowStore:
    """Scored rows kept on disk while their blocks are open. An audit holds every block open until its
    last log is read (any later log may add to a block), so rows held in memory grow with the corpus
    (~14 KiB an entry measured, bench/RESULTS.md); stored, a row costs its sort key and place. One
    unnamed file in ``folder`` (gone when it is closed or the process ends, however), each row's episode
    and actions pickled and compressed; only this process's own rows are ever read back."""

    def __init__(self, folder: str | Path) -> None:
        self._file = tempfile.TemporaryFile(dir=folder, prefix=".scored-rows.")
        self._end = 0

    def __enter__(self) -> RowStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def put(self, scored: ScoredLine) -> ScoredLine:
        """``scored`` without its rows, which are on disk."""
        data = zlib.compress(pickle.dumps((scored.episode, scored.actions), protocol=pickle.HIGHEST_PROTOCOL), 1)
        self._file.seek(self._end)
        self._file.write(data)
        at = (self._end, len(data))
        self._end += len(data)
        return replace(scored, episode=None, actions=[], stored=at)

    def load(self, scored: ScoredLine) -> ScoredLine:
        """``scored`` with its rows again."""
        if scored.stored is None:
            return scored
        offset, length = scored.stored
        self._file.seek(offset)
        episode, actions = pickle.loads(zlib.decompress(self._file.read(length)))
        return replace(scored, episode=episode, actions=actions, stored=None)


@dataclass
class BlockScoring:
    """What a rollouts file's scored lines add up to, kept while its lines come back (in line order);
    their rows in ``store`` when one is given, else in memory."""

    path: str
    report: ScoreReport = field(default_factory=ScoreReport)
    seen: dict[tuple, int] = field(default_factory=dict)
    rows: list[ScoredLine] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    expected: int | None = None  # the file's lines, once it is known no more will come
    store: RowStore | None = None

    @property
    def complete(self) -> bool:
        return self.expected is not None and self.report.lines_read == self.expected

    def add(self, scored: ScoredLine) -> None:
        self.report.lines_read += 1
        bad = scored.bad
        if scored.key is not None:  # the first of a rollout id counts, whatever became of it
            bad = _duplicate(self.path, scored.line, scored.key, self.seen) or bad
        if bad is not None:
            self.bad.append(bad)
            return
        self.rows.append(scored if self.store is None else self.store.put(scored))
        self.report.datasets[scored.key[0]] += 1

    def write(self, outputs: ScoreOutputs) -> ScoreReport:
        """Write the three files of one scoring as one set; the report, with the block's trust."""
        report = self.report
        rows = sorted(self.rows, key=lambda s: s.sort_key)
        if self.store is not None:
            rows = [self.store.load(s) for s in rows]
        report.scored = len(rows)
        report.infra_errors = sum(s.episode["T"] is None for s in rows)
        _count_bad(report, self.bad)
        ep_table = pa.Table.from_pylist([s.episode for s in rows], schema=EPISODE_SCHEMA)
        act_table = pa.Table.from_pylist([a for s in rows for a in s.actions], schema=ACTION_SCHEMA)
        # The three files of one scoring are replaced together, never one beside an older other.
        commit_files({outputs.episodes: parquet_bytes(ep_table), outputs.actions: parquet_bytes(act_table),
                      outputs.quarantine: "".join(json.dumps(b.to_json(), ensure_ascii=False, sort_keys=True) + "\n"
                                                  for b in self.bad).encode("utf-8")})
        report.trust = block_trust(pl.from_arrow(ep_table))
        log.info(report.summary())
        for line in report.quarantine_lines():
            log.warning(line)
        for line in report.trust_lines():
            log.info(line)
        return report


def score_chunks(chunks: Iterable[Chunk], scoring_of: Callable[[Any], BlockScoring], pool: WorkerPool,
                 progress: Progress | None = None, on_complete: Callable[[Any], None] | None = None) -> None:
    """Replay the lines of ``chunks`` on ``pool``'s workers (whose shared object opens the
    benchmarks), adding each to the scoring of its file; the chunks of one file must come in line
    order. ``on_complete(key)`` is called when the file of ``key`` has all its ``expected`` lines
    (while the other files' lines are still being replayed). What is written does not depend on
    the number of workers."""
    for key, scored in pool.map(_score_chunk, chunks):
        scoring = scoring_of(key)
        for line in scored:
            scoring.add(line)
        if progress is not None:
            progress.advance(len(scored))
        if on_complete is not None and scoring.complete:
            on_complete(key)


def score_files(jobs: Sequence[tuple[str | Path, ScoreOutputs]], pool: WorkerPool,
                progress: Progress | None = None) -> list[ScoreReport]:
    """Score each rollouts file of ``jobs`` into its outputs, the entries of all of them spread over
    ``pool``'s workers; one report per job, in order."""
    scorings = {index: BlockScoring(str(path)) for index, (path, _) in enumerate(jobs)}
    chunks = (chunk for index, (path, _) in enumerate(jobs) for chunk in file_chunks(index, path))
    score_chunks(chunks, scorings.__getitem__, pool, progress)
    return [scorings[index].write(outputs) for index, (_, outputs) in enumerate(jobs)]


def score_file(rollouts_path: str | Path, outputs: ScoreOutputs, benchmark_for: Callable[[str], Benchmark], *,
               workers: int = 1) -> ScoreReport:
    """Score one rollout JSONL file into ``outputs``; returns the counts."""
    with WorkerPool(workers, benchmark_for, preload=[__name__, *registry.modules()]) as pool:
        return score_files([(rollouts_path, outputs)], pool)[0]


def score_block(rollouts: str | Path, actions: str | Path, episodes: str | Path, quarantine: str | Path, *,
                resources: str | Path, dataset: str, benchmark: Mapping[str, Any] | None = None,
                plugins: Sequence[str] = (), workers: int = 1) -> ScoreReport:
    """The ``score_rollouts`` stage: one block's rollouts, with ``dataset`` opened from its config
    entry ``benchmark`` (any other dataset a record names opens with its defaults)."""
    registry.load(plugins)
    resolve = registry.resolver(resources, {dataset: benchmark or {}}, fetch=False)
    return score_file(rollouts, ScoreOutputs(Path(actions), Path(episodes), Path(quarantine)), resolve,
                      workers=workers)


# A big block scored in several jobs (the workflow's score_chunk jobs, config score_chunk_mib): each
# scores the lines that start in its byte range of the block's rollouts file into a file of scored
# lines; the block's one score_rollouts job adds them up in line order, as score_file does.

SCORED_LINES_FORMAT = "prefix-audit scored lines 1"
# The default of config score_chunk_mib (config/README.md says how it was chosen): replay measured on
# one core at 1-2 s per MiB of τ logs and 0.2-0.4 s per MiB of BFCL logs, 3-5 s to start a job; a
# 64 MiB chunk of τ logs is 30-60 s of replay on two cores.
DEFAULT_SCORE_CHUNK_MIB = 64


def range_chunks(key: Any, path: str | Path, part: int, parts: int) -> Iterator[Chunk]:
    """The lines of ``path`` in part ``part`` of ``parts`` (:func:`raw_json_line_range`), in
    chunks for the workers, as :func:`file_chunks`."""
    return _chunks(key, path, raw_json_line_range(path, part, parts))


def score_line_range(rollouts: str | Path, part: int, parts: int, benchmark_for: Callable[[str], Benchmark], *,
                     workers: int = 1) -> list[ScoredLine]:
    """Every line that starts in part ``part`` (from 0) of ``parts`` equal byte ranges of a rollouts
    file, scored as :func:`score_file` scores it, in line order."""
    with WorkerPool(workers, benchmark_for, preload=[__name__, *registry.modules()]) as pool:
        return [line for _, scored in pool.map(_score_chunk, range_chunks(None, rollouts, part, parts))
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
