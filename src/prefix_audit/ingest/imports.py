"""The import stage: logs that exist (BFCL result files, τ results, ToolSandbox runs) → rollout records.

Every entry of a log ends up in one place: a rollout record, or a quarantine record with its
location and reason. A log that cannot be read at all (no such file, a format no importer
recognises, a file its importer refuses whole) is one quarantine record for the log, so one bad
log never costs the others. The summaries count quarantined records by cause
(:mod:`prefix_audit.core.quarantine`).

A log may be compressed (gzip, bzip2, xz, zstd: :func:`~prefix_audit.core.compressed.open_bytes`, which
every importer reads through) or a tar of a run folder (plain or compressed). A compressed log is
read to its end before anything else, so a corrupt or truncated one is one quarantine record for
the log, never its first entries taken for all of them; a tar is unpacked safely into a temporary
folder (:mod:`prefix_audit.core.archives`) and read there, every place in its records named inside
the archive (``runs.tar.gz/<member path>``), so its records are those of the unpacked folder.

A log that ends early — its content cut off inside its JSON (:func:`~prefix_audit.core.cut_off.cut_off`),
a compressed stream or an archive cut short — is said to be, in one line of the report per file
(:attr:`ImportReport.cut_off`), whatever its format and whether or not it was named: JSON Lines are
read up to the cut (the line it ends inside is a quarantine record), a document — bar the formats
whose importer reads its entries one by one up to a cut (``Registration.reads_cut_documents``: Inspect's
``.json``) — and an archive are one quarantine record for the log. The JSON files of a folder that is
one log (a run folder) are looked at too: each is read by its importer, which quarantines what it
cannot use.

``prefix-audit import`` writes one log's records; ``prefix-audit audit`` and the workflow's
``import_logs`` rule write one rollout file per block (dataset × model × method) under
``rollouts/imported/`` (:func:`imported_rollouts_path`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any

from prefix_audit.core.archives import is_tar, unpack_tar
from prefix_audit.core.cut_off import cut_off
from prefix_audit.core.decode import CutOffError, plain_name
from prefix_audit.core.io import atomic_write_text, commit_files, path_label
from prefix_audit.core.json_text import JSON_DOCUMENT, JSON_LINES, CutOff
from prefix_audit.core.parallel import WorkerPool
from prefix_audit.core.quarantine import QuarantineTally
from prefix_audit.core.records import BadLine, Located, ModelNamed, Rollout, call_steps, dumps, party_results
from prefix_audit.replay import registry
from prefix_audit.replay.contract import Benchmark
from prefix_audit.replay.log_folders import SkippedFile, expand_logs
from prefix_audit.replay.scoring import __name__ as scoring_module
from prefix_audit.replay.trust import undecoded_warning

log = logging.getLogger(__name__)

IMPORTED = "imported"  # the folder of imported blocks under rollouts/, and the default method label


def imported_rollouts_path(results: str | Path, dataset: str, model: str, method: str) -> Path:
    """Where a block of imported logs keeps its rollout records."""
    return Path(results) / "rollouts" / IMPORTED / dataset / path_label(model) / f"{path_label(method)}.jsonl"


@dataclass
class RecordTally:
    """What the imported entries' logs recorded, and how well their decoder read them."""

    entries: int = 0  # rollouts that carry a record
    verdicts: int = 0  # of those, with the log's own verdict
    results: int = 0  # tool results the logs recorded
    call_steps: int = 0
    undecoded: int = 0
    undecoded_confirmed: int = 0  # of those, the ones the log shows its own run could not read either
    acted: int = 0  # entries that are not infrastructure failures
    no_call: int = 0  # of those, entries without any call
    readings: Counter = field(default_factory=Counter)  # how the importer read the entries (meta "reading")

    def add(self, rollout: Rollout, sign: int = 1) -> None:
        """Count a rollout in (``sign`` -1: out again, when it is quarantined after all)."""
        if rollout.recorded is None:
            return
        steps, undecoded = call_steps(rollout)
        acted = rollout.infra_error is None
        self.entries += sign
        self.verdicts += sign * (rollout.recorded.y is not None)
        own_results = sum(r is not None for turn in rollout.turns for step in turn for r in step.results or ())
        self.results += sign * (own_results + party_results(rollout))
        self.call_steps += sign * steps
        self.undecoded += sign * undecoded
        self.undecoded_confirmed += sign * rollout.recorded.undecoded_confirmed
        self.acted += sign * acted
        self.no_call += sign * (acted and not any(step.calls for turn in rollout.turns for step in turn))
        reading = rollout.meta.get("reading")
        if isinstance(reading, str):
            self.readings[reading] += sign

    def merge(self, other: RecordTally) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def lines(self) -> list[str]:
        if not self.entries:
            return []
        out = [f"read: {text} ({n} of {self.entries} entries)" for text, n in sorted(self.readings.items()) if n]
        out += [f"recorded: a verdict for {self.verdicts} of {self.entries} entries, {self.results} tool results; "
               f"decode: {self.undecoded} of {self.call_steps} call steps undecodable, {self.no_call} of {self.acted} "
               f"entries without any call"]
        warning = undecoded_warning(self.call_steps, self.undecoded, self.undecoded_confirmed)
        if warning is not None:
            out.append(f"{warning.label}: {warning.text}")
        return out


BlockKey = tuple[str, str, str]  # dataset, model, method


@dataclass
class BlockSources:
    """What the importers chose for one block's entries, said once per block: where the model name
    came from where ``--model`` did not give it (entries per :class:`~prefix_audit.core.records.ModelNamed`),
    and the data that entries of logs whose names give another version of the benchmark were scored on
    (entries per :class:`~prefix_audit.core.records.ScoredOn`)."""

    entries: int = 0
    named: Counter = field(default_factory=Counter)
    scored_on: Counter = field(default_factory=Counter)

    def add(self, item: Located, sign: int = 1) -> None:
        """Count an entry in (``sign`` -1: out again, when it is quarantined after all)."""
        self.entries += sign
        if item.named_by is not None:
            self.named[item.named_by] += sign
        if item.scored_on is not None:
            self.scored_on[item.scored_on] += sign

    def merge(self, other: BlockSources) -> None:
        self.entries += other.entries
        self.named.update(other.named)
        self.scored_on.update(other.scored_on)

    def lines(self, key: BlockKey) -> list[str]:
        """Where the block's model name came from, and the data its logs named after another version
        were scored on; nothing where ``--model`` named it and no log's name misleads."""
        if self.entries <= 0:
            return []
        block, out = "/".join(key), []
        named = [n for n, count in self.named.items() if count > 0]
        if named:
            out.append(f"{block}: model name {key[1]!r} is {_named_by_logs(named)}; give --model to name it")
        releases: dict[tuple[str, str], list[str]] = {}
        for on, count in self.scored_on.items():
            if count > 0:
                releases.setdefault((on.named, on.note), []).append(f"{on.release} ({count} of {self.entries} entries)")
        out += [f"{block}: {logs} scored on the data of {', '.join(data)}; {note}"
                for (logs, note), data in releases.items()]
        return out


def _named_by_logs(named: Sequence[ModelNamed]) -> str:
    """What named a block's model, per kind of evidence and folder: the first log, and how many others."""
    logs: dict[tuple[str, str], list[str]] = {}
    for n in named:
        logs.setdefault((n.said, str(Path(n.of).parent)), []).append(Path(n.of).name)

    def others(count: int) -> str:
        return "" if not count else f" and {count} other log{'s' if count > 1 else ''}"

    return ", ".join(f"{said} of {names[0]}{others(len(names) - 1)} ({folder})"
                     for (said, folder), names in logs.items())


@dataclass
class ImportReport:
    """What the import of some logs gave: records per log, quarantined entries by cause, and the
    files of folders named as logs that are no log, by cause."""

    logs: dict[str, str] = field(default_factory=dict)  # log path → format
    rollouts: int = 0
    quarantine: QuarantineTally = field(default_factory=QuarantineTally)
    record: RecordTally = field(default_factory=RecordTally)
    skipped: QuarantineTally = field(default_factory=QuarantineTally)
    blocks: dict[BlockKey, BlockSources] = field(default_factory=dict)
    # A line per file that ends early: the file, where it ends, how many entries were read before it
    cut_off: list[str] = field(default_factory=list)

    @property
    def quarantined(self) -> int:
        return self.quarantine.total

    def summary(self) -> str:
        skipped = f"; files skipped in the folders (not logs): {self.skipped.total}" if self.skipped.total else ""
        return (f"logs read: {len(self.logs)}; rollouts imported: {self.rollouts}; quarantined: {self.quarantined}"
                f"{skipped}")

    def merge(self, other: ImportReport) -> None:
        """Count ``other`` (the import of other logs) in."""
        self.logs.update(other.logs)
        self.rollouts += other.rollouts
        self.quarantine.merge(other.quarantine)
        self.record.merge(other.record)
        self.skipped.merge(other.skipped)
        self.cut_off += other.cut_off
        for key, sources in other.blocks.items():
            self.blocks.setdefault(key, BlockSources()).merge(sources)

    def add_entry(self, item: Located, sign: int = 1) -> None:
        """Count an imported entry in its block (``sign`` -1: out again)."""
        rollout = item.rollout
        self.blocks.setdefault((rollout.dataset, rollout.model, rollout.method), BlockSources()).add(item, sign)

    def skipped_lines(self) -> list[str]:
        """A line per cause a file of a folder was skipped for, the most frequent first."""
        return [f"skipped {line}" for line in self.skipped.lines()]

    def detail_lines(self) -> list[str]:
        """A WARNING per log that ends early, a line per cause of quarantine and of skipping, then what
        the logs recorded and the decode health, then per block where its model name came from and the
        data its logs were scored on where their names give another version (:meth:`BlockSources.lines`)."""
        return [*(f"WARNING: {line}" for line in self.cut_off),
                *(f"  {line}" for line in [*self.quarantine.lines(), *self.skipped_lines()]), *self.record.lines(),
                *(line for key, sources in sorted(self.blocks.items()) for line in sources.lines(key))]

    def lines(self) -> list[str]:
        """The summary, then :meth:`detail_lines`."""
        return [self.summary(), *self.detail_lines()]


def read_logs(paths: Sequence[str | Path], open_dataset: Callable[[str], Benchmark], *, kind: str | None = None,
              model: str | None = None, method: str = IMPORTED, options: Mapping[str, Any] | None = None,
              report: ImportReport | None = None) -> Iterator[Located | BadLine]:
    """Every entry of every log in ``paths``, in order, as a located rollout or a quarantine record;
    a folder of logs is every log it holds (:func:`~prefix_audit.replay.log_folders.expand_logs`, which
    raises for a folder without any; ``options``: the importer options its companions follow), the
    files in it that are no log counted in ``report.skipped``.

    ``kind`` names the format of all of them (detected per log when None); ``model`` and
    ``method`` label the rollouts (the importer's default model when None)."""
    report = report if report is not None else ImportReport()
    expansion = expand_logs(paths, kind, options)
    report.skipped.merge(expansion.tally())
    importers = registry.importers()
    for log_source in expansion.logs:
        path = log_source.path
        items: list[Located | BadLine] = []
        named: Callable[[Item], Item] = _as_read
        opened = None
        try:
            with _readable(path) as opened:
                named, cut, fmt = opened.named, opened.cut, log_source.format
                if fmt is None and cut is not None and cut.shape != JSON_LINES:  # refused whole, unless one reads it
                    fmt = registry.cut_document_format(opened.source) if cut.shape == JSON_DOCUMENT else None
                    if fmt is None:
                        raise CutOffError(cut.said)
                fmt = fmt or registry.detect_format(opened.source)
                if fmt not in importers:
                    raise ValueError(f"unknown format {fmt!r} (formats: {', '.join(sorted(importers))})")
                report.logs[str(path)] = fmt
                if cut is not None and not _read_up_to_cut(cut, fmt):
                    raise CutOffError(cut.said)
                request = registry.ImportRequest(opened.source, model, method, open_dataset)
                items.extend(map(named, importers[fmt](request)))
        except (OSError, ValueError) as exc:  # the rest of the log is unusable; what it gave, and other logs, count
            report.logs.setdefault(str(path), log_source.format or "unrecognised")
            rest = f" after its first {len(items)} entries" if items else ""
            bad = named(BadLine(str(path), 0, f"unusable log{rest}: {exc}", cause=f"unusable log: {exc}"))
            assert isinstance(bad, BadLine)  # naming keeps an item's kind
            # the summaries name the log by its file name (the site holds no absolute path)
            items.append(dataclasses.replace(bad, cause=str(bad.cause).replace(str(path), path.name)))
            if isinstance(exc, CutOffError):  # refused whole, or (an importer's own read) after some entries
                report.cut_off.append(f"{exc}; {_read_before(len(items) - 1) if rest else 'none of it is audited'}")
                opened = None
        if opened is not None:
            report.cut_off += [_said(opened.cut, items)] if opened.cut is not None else []
            report.cut_off += [f"{cut.said}; none of it is audited" for cut in opened.cut_files]
        for item in items:
            if isinstance(item, BadLine):
                report.quarantine.add(item)
            else:
                report.rollouts += 1
                report.record.add(item.rollout)
                report.add_entry(item)
            yield item


Item = Located | BadLine


@dataclass(frozen=True)
class _Opened:
    """A log opened for its importer: what it reads, how its items name their places, and where the
    log's content, or that of a JSON file in a folder that is one log, ends inside its JSON."""

    source: Path
    named: Callable[[Item], Item]
    cut: CutOff | None = None
    cut_files: tuple[CutOff, ...] = ()


@contextmanager
def _readable(path: Path) -> Iterator[_Opened]:
    """The log at ``path`` as its importer reads it (:class:`_Opened`): a tar unpacked into a
    temporary folder (kept while the log is read), whose places are then named inside the archive; a
    file looked at for a cut (a compressed one read to its stream's end first); a folder's JSON files
    alike; a path that is none of them as it is (its importer says what is wrong)."""
    if is_tar(path):
        with tempfile.TemporaryDirectory(prefix="prefix-audit-unpacked-") as folder:
            held = unpack_tar(path, folder)
            yield _Opened(held, lambda item: _renamed(item, str(Path(folder).resolve()), str(path)),
                          cut_files=_cut_files(Path(folder), path.name))
    elif path.is_file():
        yield _Opened(path, _as_read, cut=cut_off(path))
    elif path.is_dir():
        yield _Opened(path, _as_read, cut_files=_cut_files(path, path.name))
    else:
        yield _Opened(path, _as_read)


def _cut_files(folder: Path, label: str) -> tuple[CutOff, ...]:
    """The JSON files of ``folder`` whose content ends inside its JSON, each named ``label/<its place>``
    in order (hidden ones and what does not read are left to the importer)."""
    found = []
    for file in sorted(folder.rglob("*")):
        place = file.relative_to(folder)
        if file.is_file() and Path(plain_name(file.name)).suffix in (".json", ".jsonl") and \
                not any(part.startswith(".") for part in place.parts):
            try:
                found.append(cut_off(file, f"{label}/{place.as_posix()}"))
            except (OSError, ValueError):  # a stream that does not read: its importer says so
                continue
    return tuple(cut for cut in found if cut is not None)


def _read_up_to_cut(cut: CutOff, fmt: str) -> bool:
    """Whether the entries of a log of format ``fmt`` that ends early are read up to the cut: JSON
    Lines, and a document whose importer reads its entries one by one; else it is refused whole."""
    return cut.shape == JSON_LINES or cut.shape == JSON_DOCUMENT and registry.reads_cut_documents(fmt)


def _said(cut: CutOff, items: Sequence[Item]) -> str:
    """The report's line of a log that ends early and was read up to the cut (:attr:`ImportReport.cut_off`),
    with the entries read before it: of JSON Lines, every item of a line before the one it ends inside
    (quarantined ones too); of a document, the rollouts (its importer also quarantines the entries after
    the cut, which it never saw)."""
    if cut.shape == JSON_LINES:
        return f"{cut.said}; {_read_before(sum(item.line not in (0, cut.line) for item in items))}"
    return f"{cut.said}; {_read_before(sum(isinstance(item, Located) for item in items))}"


def _read_before(entries: int) -> str:
    return f"{entries:,} {'entry was' if entries == 1 else 'entries were'} read before it"


def _as_read(item: Item) -> Item:
    return item


def _renamed(item: Item, folder: str, archive: str) -> Item:
    """``item`` of a log unpacked into ``folder`` with every place in it — its path, its texts, its
    rollout's metadata and record — named inside ``archive`` instead."""
    def swap(value: Any) -> Any:
        if isinstance(value, Enum):
            return value
        if isinstance(value, str):
            return value.replace(folder, archive)
        if isinstance(value, dict):
            return {swap(k): swap(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(swap(v) for v in value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return dataclasses.replace(value, **{f.name: swap(getattr(value, f.name)) for f in fields(value)})
        return value

    if isinstance(item, BadLine):
        return swap(item)
    rollout = item.rollout
    return dataclasses.replace(item, path=swap(item.path), named_by=swap(item.named_by), rollout=dataclasses.replace(
        rollout, meta=swap(rollout.meta), extra=swap(rollout.extra), recorded=swap(rollout.recorded),
        infra_error=swap(rollout.infra_error), accounting_error=swap(rollout.accounting_error)))


def write_records(items: Iterable[Located | BadLine], rollouts: str | Path, quarantine: str | Path) -> tuple[int, int]:
    """Write the rollouts of ``items`` (JSON Lines) and their quarantine records; (rollouts, bad)."""
    good: list[Located] = []
    bad: list[BadLine] = []
    for item in items:
        if isinstance(item, BadLine):
            bad.append(item)
        else:
            good.append(item)
    # Both files of one import are replaced together (or beside each other's new version only).
    commit_files({rollouts: "".join(dumps(item.rollout) + "\n" for item in good).encode("utf-8"),
                  quarantine: _quarantine_text(bad).encode("utf-8")})
    return len(good), len(bad)


def _quarantine_text(bad: Iterable[BadLine]) -> str:
    return "".join(json.dumps(b.to_json(), ensure_ascii=False, sort_keys=True) + "\n" for b in bad)


def write_quarantine(bad: Iterable[BadLine], path: str | Path) -> None:
    atomic_write_text(path, _quarantine_text(bad))


def write_skipped(skipped: Iterable[SkippedFile], path: str | Path) -> None:
    """The files of folders named as logs that are no log, one JSON line each: path and cause."""
    atomic_write_text(path, "".join(json.dumps(s.to_json(), ensure_ascii=False, sort_keys=True) + "\n"
                                    for s in skipped))


def of_dataset(items: Iterable[Located | BadLine], dataset: str, report: ImportReport) -> Iterator[Located | BadLine]:
    """``items`` with each rollout of another dataset than ``dataset`` quarantined (a block's logs
    must all be of its dataset)."""
    for item in items:
        if isinstance(item, Located) and item.rollout.dataset != dataset:
            located = item
            item = BadLine(item.path, item.line, f"entry of dataset {item.rollout.dataset}, not of this block's "
                           f"{dataset}", item.rollout.rollout_id)
            report.rollouts -= 1
            report.record.add(located.rollout, -1)
            report.add_entry(located, -1)
            report.quarantine.add(item)
        yield item


@dataclass(frozen=True)
class LogRequest:
    """One log to import: its format (None: detected), labels, and the one dataset its block takes (None: any)."""

    path: str
    kind: str | None = None
    model: str | None = None
    method: str = IMPORTED
    dataset: str | None = None


@dataclass
class ImportedLog:
    """A log's entries as records ready to write — (block, JSON line) — or quarantined, and its counts."""

    entries: list[tuple[tuple[str, str, str], str] | BadLine]
    report: ImportReport


def _import_log(open_dataset: Callable[[str], Benchmark], request: LogRequest) -> ImportedLog:
    """A worker's call: one log read, its rollouts serialised where they were read."""
    report = ImportReport()
    items = read_logs([request.path], open_dataset, kind=request.kind, model=request.model, method=request.method,
                      report=report)
    if request.dataset is not None:
        items = of_dataset(items, request.dataset, report)
    entries = [item if isinstance(item, BadLine)
               else ((item.rollout.dataset, item.rollout.model, item.rollout.method), dumps(item.rollout))
               for item in items]
    return ImportedLog(entries, report)


def worker_modules() -> list[str]:
    """What a worker that imports and replays entries imports: started from a process that has
    them imported already, a worker does not import them again."""
    return [__name__, scoring_module, *registry.modules()]


def import_logs(requests: Iterable[LogRequest], pool: WorkerPool) -> Iterator[ImportedLog]:
    """Each log of ``requests`` imported by one of ``pool``'s workers (whose shared object opens the
    benchmarks), in the requests' order."""
    return pool.map(_import_log, requests)


def import_block(logs: Sequence[str | Path], rollouts: str | Path, quarantine: str | Path, *, kind: str | None,
                 dataset: str, model: str, method: str, resources: str | Path,
                 settings: Mapping[str, Mapping[str, Any]] | None = None, plugins: Sequence[str] = (),
                 workers: int = 1) -> ImportReport:
    """The ``import_logs`` stage: one block's logs — files, folders that are one log, folders of logs
    (:func:`~prefix_audit.replay.log_folders.expand_logs`) — → its rollout file and quarantine file
    (the logs read by ``workers`` processes)."""
    registry.load(plugins)
    report = ImportReport()
    settings = settings or {}
    expansion = expand_logs(logs, kind, settings.get(dataset))
    report.skipped.merge(expansion.tally())
    resolve = registry.resolver(resources, settings, fetch=False)
    lines: list[str] = []
    bad: list[BadLine] = []
    requests = [LogRequest(str(source.path), source.format, model, method, dataset) for source in expansion.logs]
    with WorkerPool(min(workers, len(requests)) or 1, resolve, preload=worker_modules()) as pool:
        for imported in import_logs(requests, pool):
            report.merge(imported.report)
            for entry in imported.entries:
                if isinstance(entry, BadLine):
                    bad.append(entry)
                else:
                    lines.append(entry[1] + "\n")
    # Both files of one import are replaced together (or beside each other's new version only).
    commit_files({rollouts: "".join(lines).encode("utf-8"), quarantine: _quarantine_text(bad).encode("utf-8")})
    for line in report.lines():
        (log.warning if line.startswith("WARNING") else log.info)(line)
    return report
