"""The health of a benchmark's tasks (``prefix-audit tasks``, the workflow's ``task_health``): every task of
a data release audited by its benchmark (:meth:`~prefix_audit.replay.contract.Benchmark.task_health`),
the tasks spread over worker processes, the findings and the per-task verdicts written as typed Parquet.

What is written (:func:`health_contents`): ``findings.parquet`` (one row per finding,
:data:`~prefix_audit.core.health.FINDINGS_SCHEMA`), ``tasks.parquet`` (one row per task: sound, its codes;
:data:`~prefix_audit.core.health.TASKS_SCHEMA`) and ``summary.json`` (per release: tasks, sound ones, and
per code the tasks and findings). Rows come in dataset, release and natural task order, so the bytes do
not depend on the number of workers. A task whose check raised is a row with ``sound`` null and its
``error``, said by the command — never a lost task. The findings a command computed are kept per release
for the next (:mod:`.cache`), and read from there: the bytes are the same.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from prefix_audit.core.fetch import FetchError
from prefix_audit.core.health import (
    CODES,
    FINDINGS_SCHEMA,
    TASKS_SCHEMA,
    UNAUDITED_FILE,
    Finding,
    defect_codes,
    is_sound,
    ordered_codes,
)
from prefix_audit.core.io import commit_files, natural_key, parquet_bytes
from prefix_audit.core.parallel import Progress, WorkerPool
from prefix_audit.replay import registry
from prefix_audit.replay.contract import Benchmark, MissingCapability

from .cache import HealthCache, ReleaseKey

log = logging.getLogger(__name__)

TASKS_PER_ITEM = 4  # tasks a worker is sent at once: enough to amortise the message, small enough to share out
FILES = ("findings.parquet", "tasks.parquet", "summary.json")


class HealthError(ValueError):
    """A dataset without benchmark health, or a release it does not pin."""


@dataclass(frozen=True)
class TaskResult:
    """One task's findings, or why its check could not run."""

    dataset: str
    release: str
    task_id: str
    findings: tuple[Finding, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class Unaudited:
    """Scored tasks whose health was not audited, and why (:func:`unaudited`)."""

    dataset: str
    release: str | None
    reason: str
    task_ids: tuple[str, ...]


@dataclass
class HealthReport:
    """Every audited task of one command, in dataset, release and task order, and the scored tasks it did
    not audit with why (an audit's; empty for ``prefix-audit tasks``)."""

    results: list[TaskResult] = field(default_factory=list)
    unaudited: list[Unaudited] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Per release: how many tasks are sound, the codes found, and each task whose check failed."""
        out = []
        groups: dict[tuple[str, str], list[TaskResult]] = {}
        for r in self.results:
            groups.setdefault((r.dataset, r.release), []).append(r)
        for (dataset, release), results in groups.items():
            checked = [r for r in results if r.error is None]
            sound = sum(is_sound(r.findings) for r in checked)
            found = ", ".join(filter(None, (_code_count(checked, c) for c in CODES))) or "no finding"
            failed = len(results) - len(checked)
            out.append(f"{dataset} {release}: {len(results)} tasks, {sound} sound; tasks with a finding: {found}"
                       + (f"; {failed} could not be checked" if failed else ""))
            out += [f"  {dataset} {release} task {r.task_id}: check failed: {r.error}" for r in results if r.error]
        out += [f"{u.dataset}{'' if u.release is None else ' ' + u.release}: {len(u.task_ids)} tasks not audited: "
                f"{u.reason}" for u in self.unaudited]
        return out

    @property
    def errors(self) -> int:
        return sum(r.error is not None for r in self.results)


def _code_count(results: Sequence[TaskResult], code: str) -> str:
    """``"gold_fails 18 (defect 1, design 17)"``: the tasks with the code, and per kind where it has several."""
    kinds = {k: sum(any(f.code == code and f.kind == k for f in r.findings) for r in results)
             for k in CODES[code].kinds}
    tasks = sum(any(f.code == code for f in r.findings) for r in results)
    if not tasks:
        return ""
    split = [f"{k} {n}" for k, n in kinds.items() if n]
    return f"{code} {tasks}" + (f" ({', '.join(split)})" if len(split) > 1 or len(kinds) > 1 else "")


def health_benchmark(bench: Benchmark) -> Benchmark:
    """``bench`` when it offers benchmark health, else a :class:`HealthError` saying so."""
    try:
        bench.health_releases()
    except MissingCapability as exc:
        raise HealthError(f"{bench.dataset}: {exc}") from None
    return bench


def check_release(bench: Benchmark, release: str | None) -> str:
    """``release`` (default: the benchmark's default) when the benchmark pins it, else a located error."""
    releases = list(health_benchmark(bench).health_releases())
    if release is None:
        return releases[0]
    if release not in releases:
        raise HealthError(f"{bench.dataset} has no data release {release!r} (pinned: {', '.join(releases)})")
    return release


Item = tuple[str, str, tuple[str, ...]]  # dataset, release, task ids


def _check_tasks(open_dataset: Callable[[str], Benchmark], item: Item) -> list[TaskResult]:
    """A worker's call: each task of the item audited, a task whose check raises kept with the reason."""
    dataset, release, task_ids = item
    bench = open_dataset(dataset)
    out = []
    for task_id in task_ids:
        try:
            out.append(TaskResult(dataset, release, task_id, tuple(bench.task_health(task_id, release))))
        except FetchError:  # a benchmark package that cannot be had fails every task alike: the command stops
            raise
        except Exception as exc:  # one task's broken check never loses the others
            log.debug("health of %s %s task %s failed", dataset, release, task_id, exc_info=True)
            out.append(TaskResult(dataset, release, task_id, error=f"{type(exc).__name__}: {exc}"))
    return out


def audit_tasks(requests: Sequence[tuple[str, str, Sequence[str] | None]], open_dataset: Callable[[str], Benchmark],
                pool: WorkerPool, *, progress: bool = False, cache: str | Path | None = None) -> HealthReport:
    """Audit the tasks of each ``(dataset, release, task ids)`` request (None: every task of the release;
    the release checked with :func:`check_release`) on ``pool``, whose shared object opens the datasets.
    ``cache``: the folder task health is kept in (:mod:`.cache`): a task whose findings it keeps for the
    release is read from there, and the findings of the others are added (not those whose check raised); the
    report is the same either way."""
    kept_in = HealthCache(cache)
    items: list[Item] = []
    wanted: list[tuple[str, str, list[str]]] = []
    done: dict[tuple[str, str, str], TaskResult] = {}
    keys: dict[tuple[str, str], ReleaseKey] = {}
    for dataset, release, task_ids in requests:
        bench = open_dataset(dataset)
        check_release(bench, release)
        known = list(bench.release_tasks(release))
        chosen = sorted(set(known) if task_ids is None else set(task_ids) & set(known), key=natural_key)
        wanted.append((dataset, release, chosen))
        key = kept_in.key(bench, release)
        if key is not None:
            keys[(dataset, release)] = key
            kept = kept_in.read(key)
            done.update({(dataset, release, t): TaskResult(dataset, release, t, kept[t])
                         for t in chosen if t in kept})
            log.info("%s %s: the health of %d of %d tasks read from %s", dataset, release,
                     sum(t in kept for t in chosen), len(chosen), kept_in.path(key))
        missing = [t for t in chosen if (dataset, release, t) not in done]
        items += [(dataset, release, tuple(missing[i:i + TASKS_PER_ITEM]))
                  for i in range(0, len(missing), TASKS_PER_ITEM)]
    bar = Progress("tasks", sum(len(i[2]) for i in items), enabled=progress, unit="task")
    computed: dict[tuple[str, str], dict[str, tuple[Finding, ...]]] = {}
    for results in pool.map(_check_tasks, items):
        for r in results:
            done[(r.dataset, r.release, r.task_id)] = r
            if r.error is None:
                computed.setdefault((r.dataset, r.release), {})[r.task_id] = r.findings
        bar.advance(len(results))
    bar.close()
    for dataset_release, key in keys.items():
        kept_in.keep(key, computed.get(dataset_release, {}))
    return HealthReport([done[(dataset, release, t)] for dataset, release, chosen in wanted for t in chosen])


def add_findings(report: HealthReport, dataset: str, release: str, found: Mapping[str, Sequence[Finding]]) -> list[str]:
    """Add findings by task id (from audits of agents) to the report's tasks of ``dataset`` and ``release``;
    the ids it has no such task of."""
    by_id = {r.task_id: i for i, r in enumerate(report.results) if (r.dataset, r.release) == (dataset, release)}
    for task_id, findings in found.items():
        if task_id in by_id:
            result = report.results[by_id[task_id]]
            report.results[by_id[task_id]] = replace(result, findings=(*result.findings, *findings))
    return sorted(set(found) - set(by_id), key=natural_key)


def finding_rows(report: HealthReport) -> list[dict]:
    return [{"dataset": r.dataset, "release": r.release, "task_id": r.task_id, "code": f.code, "kind": f.kind,
             "effect": f.effect, "evidence": f.evidence}
            for r in report.results for f in sorted(r.findings, key=lambda f: ordered_codes([f.code]))]


def task_rows(report: HealthReport) -> list[dict]:
    return [{"dataset": r.dataset, "release": r.release, "task_id": r.task_id,
             "sound": None if r.error is not None else is_sound(r.findings),
             "codes": ordered_codes(f.code for f in r.findings), "defects": defect_codes(r.findings),
             "findings": len(r.findings), "error": r.error}
            for r in report.results]


def summary(report: HealthReport) -> dict:
    """Per dataset and release: tasks, sound ones, checks that failed, and per code the tasks and findings,
    each also per kind and effect (``by``: ``"defect scored"`` → tasks, findings)."""
    out: dict[str, dict[str, dict]] = {}
    for row in task_rows(report):
        entry = out.setdefault(row["dataset"], {}).setdefault(row["release"], {
            "tasks": 0, "sound": 0, "check_failed": 0,
            "codes": {c: {"tasks": 0, "findings": 0, "by": {}} for c in CODES}})
        entry["tasks"] += 1
        entry["sound"] += row["sound"] is True
        entry["check_failed"] += row["error"] is not None
        for code in row["codes"]:
            entry["codes"][code]["tasks"] += 1
    tasks_by: dict[tuple[str, str, str, str], set[str]] = {}
    for row in finding_rows(report):
        code = out[row["dataset"]][row["release"]]["codes"][row["code"]]
        code["findings"] += 1
        by = code["by"].setdefault(f"{row['kind']} {row['effect']}", {"tasks": 0, "findings": 0})
        by["findings"] += 1
        key = (row["dataset"], row["release"], row["code"], f"{row['kind']} {row['effect']}")
        seen = tasks_by.setdefault(key, set())
        if row["task_id"] not in seen:
            seen.add(row["task_id"])
            by["tasks"] += 1
    return out


def health_tables(report: HealthReport) -> tuple[pa.Table, pa.Table]:
    """The findings and the tasks of ``report`` as typed tables."""
    return (pa.Table.from_pylist(finding_rows(report), schema=FINDINGS_SCHEMA),
            pa.Table.from_pylist(task_rows(report), schema=TASKS_SCHEMA))


def health_contents(report: HealthReport, out_dir: str | Path) -> dict[Path, bytes]:
    """The bytes of ``findings.parquet``, ``tasks.parquet`` and ``summary.json`` under ``out_dir``."""
    out = Path(out_dir)
    findings, tasks = health_tables(report)
    text = json.dumps(summary(report), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    return {out / FILES[0]: parquet_bytes(findings), out / FILES[1]: parquet_bytes(tasks),
            out / FILES[2]: text.encode("utf-8")}


def read_tasks(paths: Sequence[str | Path]) -> pl.DataFrame:
    """The ``tasks.parquet`` tables of health outputs, one frame (empty with the schema when none)."""
    frames = [pl.read_parquet(p) for p in paths]
    return pl.concat(frames) if frames else pl.DataFrame(schema=pl.Schema(TASKS_SCHEMA))


def requests_of(episodes: pl.DataFrame, releases: Mapping[str, Sequence[str]]) -> Iterator[tuple[str, str, list[str]]]:
    """The (dataset, release, task ids) an audit's FED table needs the health of: each release its episodes
    were scored on that their dataset audits (``releases``: dataset → the releases its benchmark audits,
    :meth:`~prefix_audit.replay.contract.Benchmark.health_releases`; a dataset without health has none)."""
    if "release" not in episodes.columns:
        return
    known = episodes.filter(pl.col("release").is_not_null()).select("dataset", "release", "task_id").unique()
    for (dataset, release), frame in sorted(known.partition_by(["dataset", "release"], as_dict=True).items()):
        if release in releases.get(dataset, ()):
            yield dataset, release, sorted(frame["task_id"].to_list(), key=natural_key)


def unaudited(scored: pl.DataFrame, releases: Mapping[str, Sequence[str]], report: HealthReport) -> list[Unaudited]:
    """The tasks of the FED table ``scored`` (dataset, release, task id) that ``report`` holds no health of,
    grouped by why: a dataset without health (its registration's ``no_health``), no data release (as when the
    entries were scored on the task definitions their log carries), a release the benchmark does not audit, or a task
    the release lacks. ``releases`` as :func:`requests_of` takes it."""
    audited = {(r.dataset, r.release, r.task_id) for r in report.results}
    out = []
    keys = scored.select("dataset", "release", "task_id").unique()
    for (dataset, release), frame in sorted(keys.partition_by(["dataset", "release"], as_dict=True).items(),
                                            key=lambda kv: (kv[0][0], kv[0][1] or "")):
        missing = tuple(sorted((t for t in frame["task_id"].to_list() if (dataset, release, t) not in audited),
                               key=natural_key))
        if not missing:
            continue
        pinned = releases.get(dataset, ())
        if not pinned:
            reason = (registry.dataset(dataset).no_health if dataset in registry.dataset_names() else None) \
                or f"{dataset} has no benchmark health (its adapter does not audit tasks)"
        elif release is None:
            reason = (f"scored on no data release {dataset} pins (a log that carries its own task definitions is "
                      f"scored on those), and its health audits only the pinned one ({', '.join(pinned)})")
        elif release not in pinned:
            reason = f"release {release} is not one {dataset}'s health audits ({', '.join(pinned)})"
        else:
            reason = f"not a task of release {release}"
        out.append(Unaudited(dataset, release, reason, missing))
    return out


def unaudited_contents(report: HealthReport, health_dir: str | Path) -> dict[Path, bytes]:
    """The bytes of :data:`~prefix_audit.core.health.UNAUDITED_FILE` under ``health_dir``."""
    rows = [{"dataset": u.dataset, "release": u.release, "reason": u.reason, "task_ids": list(u.task_ids)}
            for u in report.unaudited]
    return {Path(health_dir) / UNAUDITED_FILE: (json.dumps(rows, indent=1, ensure_ascii=False) + "\n").encode("utf-8")}


def audited_releases(open_dataset: Callable[[str], Benchmark], datasets: Sequence[str]) -> dict[str, list[str]]:
    """Per dataset, the releases its benchmark audits (none for one without the capability, which is not
    opened)."""
    return {d: list(open_dataset(d).health_releases()) if "health" in registry.dataset(d).capabilities else []
            for d in datasets}


def scored_tasks(episodes: Sequence[str | Path]) -> pl.DataFrame:
    """The dataset, release and task id of every scored episode in the per-block ``episodes`` tables."""
    columns = ["dataset", "release", "task_id"]
    frames = [pl.read_parquet(p, columns=columns) for p in episodes]
    return pl.concat(frames) if frames else pl.DataFrame(schema={c: pl.Utf8 for c in columns})


def write_run_health(task_lists: Sequence[str | Path], episodes: Sequence[str | Path], findings: str | Path,
                     tasks: str | Path, summary_path: str | Path, *, resources: str | Path, dataset: str,
                     benchmark: Mapping[str, Any] | None = None, plugins: Sequence[str] = (),
                     workers: int = 1, health_cache: str | Path | None = None) -> HealthReport:
    """The ``task_health`` stage: the health of every task of ``dataset`` the run holds — those of its task
    ``task_lists`` (the sample its generated blocks ran, on the dataset's default release) and those its
    imported blocks scored (their ``episodes`` tables, on the release each was scored on) — with ``dataset``
    opened from its config entry ``benchmark``; written as :func:`health_contents` names the files (outputs
    under those names). An agent's rollouts play no part: a new model or method reruns none of it. ``health_cache``:
    the folder task health is kept in across jobs and commands (:mod:`.cache`; None: none)."""
    out = Path(findings).parent
    expected = [out / name for name in FILES]
    if [Path(findings), Path(tasks), Path(summary_path)] != expected:
        raise ValueError(f"task_health: outputs must be {', '.join(map(str, expected))}")
    registry.load(plugins)
    resolve = registry.resolver(resources, {dataset: benchmark or {}}, fetch=False)
    wanted: dict[str, set[str]] = {}
    if task_lists:
        default = check_release(resolve(dataset), None)
        for path in task_lists:
            wanted.setdefault(default, set()).update(json.loads(Path(path).read_text(encoding="utf-8"))["task_ids"])
    for _, release, ids in requests_of(scored_tasks(episodes).filter(pl.col("dataset") == dataset),
                                       audited_releases(resolve, [dataset])):
        wanted.setdefault(release, set()).update(ids)
    requests = [(dataset, release, sorted(ids, key=natural_key)) for release, ids in sorted(wanted.items())]
    with WorkerPool(workers, resolve, preload=[*registry.modules(), __name__]) as pool:
        report = audit_tasks(requests, resolve, pool, cache=health_cache)
    for line in report.lines():
        log.info(line)
    failed = {(r.dataset, r.release) for r in report.results if r.error is not None}
    for dataset_release in sorted(failed):
        results = [r for r in report.results if (r.dataset, r.release) == dataset_release]
        if all(r.error is not None for r in results):  # not one task: the cause is the set-up, not a task
            raise HealthError(f"task_health: the check of every task of {' '.join(dataset_release)} failed, the "
                              f"first with {results[0].error}")
    commit_files(health_contents(report, out))
    return report
