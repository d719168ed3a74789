"""Score a file of rollouts: per-action and per-rollout (FED) Parquet, plus a quarantine file.

Every input line ends up in exactly one place: an episode row, or a quarantine record with its
location and reason. The counts are returned and logged so every denominator is visible.
"""

from __future__ import annotations

import json
import logging
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

from prefix_audit.core.decode import decode_json_line, raw_json_lines
from prefix_audit.core.fetch import FetchError
from prefix_audit.core.io import commit_files, parquet_bytes
from prefix_audit.core.parallel import Progress, WorkerPool
from prefix_audit.core.quarantine import QuarantineTally, tally
from prefix_audit.core.records import BadLine, Located, Rollout, located_rollout

from . import registry
from .checker import EpisodeResult, replay
from .contract import Benchmark, UnknownDataset, UnscorableRollout
from .fed import ACTION_SCHEMA, EPISODE_SCHEMA
from .record_check import check_record
from .rows import action_rows, episode_row
from .trust import DEFAULT_MIN_AGREEMENT, BlockTrust, block_trust

log = logging.getLogger(__name__)


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


def _episode_of(scored: ScoredLine) -> dict:
    """The episode row of a line kept for its block (one a :class:`RowStore` held, loaded back)."""
    if scored.episode is None:
        raise ValueError(f"line {scored.line:,}: its episode row is not loaded")
    return scored.episode


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


def score_chunk(benchmark_for: Callable[[str], Benchmark], chunk: Chunk) -> tuple[Any, list[ScoredLine]]:
    """A worker's call: some lines of one file, each replayed on fresh state."""
    key, path, lines = chunk
    return key, [score_line(benchmark_for, path, raw) for raw in lines]


def line_chunks(key: Any, path: str | Path, raws: Iterable[tuple[int, bytes] | BadLine]) -> Iterator[Chunk]:
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
    return line_chunks(key, path, raw_json_lines(path))


class RowStore:
    """Scored rows kept on disk while their blocks are open. An audit holds every block open until its
    last log is read (any later log may add to a block), so rows held in memory grow with the corpus
    (~14 KiB an entry measured, bench/RESULTS.md); stored, a row costs its sort key and place. One
    unnamed file in ``folder`` (gone when it is closed or the process ends, however), each row's episode
    and actions pickled and compressed; only this process's own rows are ever read back."""

    def __init__(self, folder: str | Path) -> None:
        self._file = tempfile.TemporaryFile(dir=folder, prefix=".scored-rows.")  # noqa: SIM115 -- closed by __exit__
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
        assert scored.key is not None  # a line without a quarantine record holds a rollout (score_line)
        self.rows.append(scored if self.store is None else self.store.put(scored))
        self.report.datasets[scored.key[0]] += 1

    def write(self, outputs: ScoreOutputs) -> ScoreReport:
        """Write the three files of one scoring as one set; the report, with the block's trust."""
        report = self.report
        rows = sorted(self.rows, key=lambda s: s.sort_key)
        if self.store is not None:
            rows = [self.store.load(s) for s in rows]
        report.scored = len(rows)
        episodes = [_episode_of(s) for s in rows]
        report.infra_errors = sum(episode["T"] is None for episode in episodes)
        _count_bad(report, self.bad)
        ep_table = pa.Table.from_pylist(episodes, schema=EPISODE_SCHEMA)
        act_table = pa.Table.from_pylist([a for s in rows for a in s.actions], schema=ACTION_SCHEMA)
        # The three files of one scoring are replaced together, never one beside an older other.
        commit_files({outputs.episodes: parquet_bytes(ep_table), outputs.actions: parquet_bytes(act_table),
                      outputs.quarantine: "".join(json.dumps(b.to_json(), ensure_ascii=False, sort_keys=True) + "\n"
                                                  for b in self.bad).encode("utf-8")})
        episode_frame = pl.from_arrow(ep_table)
        assert isinstance(episode_frame, pl.DataFrame)  # an Arrow table reads as a frame (an array as a Series)
        report.trust = block_trust(episode_frame)
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
    for key, scored in pool.map(score_chunk, chunks):
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
