"""The τ task releases a tau2 run can have been made on, told apart by what its recorded evaluation checked.

tau2's tasks changed between releases under the same ids (τ³-bench v1.0.0 rewrote airline and retail
tasks), and a file without task definitions (a leaderboard submission's bare list of simulations)
does not say which release it ran. What it does record, per simulation, is its evaluation
(``reward_info``): the gold actions of its ``action_checks`` and the information of its
``communicate_checks`` (tau2 copies both from the task) and its ``nl_assertions`` (as the judge
echoed them, see below).

**Fingerprints.** A task's *evaluation fingerprint* (:func:`evaluation_fingerprint`) is, per part of
:data:`PARTS` the task has, the first :data:`DIGITS` hex digits of the sha256 of the part's items in
canonical form, sorted, as compact JSON: an action is ``[name, arguments]`` (keys sorted), an NL
assertion its text with runs of white space made one space (the judge's echo drops and adds
spaces), communicate info as written. A part without items has no digest. A recorded evaluation is
fingerprinted alike (:func:`recorded_fingerprint`, each part only where recorded), and it *fits* a
task when every part it recorded has the task's digest.

**Known releases.** ``releases.json.gz`` beside this module (written by
``bench/tau_release_fingerprints.py`` from the releases' task files: facts, no task text) lists the
releases whose tasks we know — their name, where their tasks are, the ``--tau-data`` value that
scores on them (none for the packaged wheel's own) and, per domain, the sha256 of their
``tasks.json`` — and per distinct ``tasks.json`` the fingerprint of every task it defines
(:class:`KnownReleases`). Releases that ship one ``tasks.json`` are told apart by nothing a log
records, so they are named together (``τ³-bench v1.0.0–v1.0.1``).

**A simulation checked against the releases** (:meth:`EvaluationCheck.issue`): its recorded evaluation
is compared with that of its ``task_id`` in use (the results file's definition, else the task
file's). Where they differ:

* the same id's task of a known release fits → ``data_version``: the run is that release's,
  named with the option that scores it on its own tasks;
* another task in use fits, else another task of a known release → ``task_mismatch`` (permuted ids),
  naming it;
* only the NL assertions differ, and they are no known task's → nothing: they are the judge's echo of
  the task's own;
* else ``task_mismatch``: the evaluation is no known task's.

Per file (:meth:`EvaluationCheck.reading`) it is said once how many recorded evaluations fit each
known release's tasks (releases the file's evaluations fit alike named together), how many fit none
(and of those, how many only in their NL assertions) and how many are ``data_version``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from prefix_audit.plugin import LogIssue

from .data import GoldAction, TauDataError, parse_criteria

PARTS = ("action checks", "NL assertions", "communicate checks")
DIGITS = 16  # hex digits kept of each sha256: 64 bits, against a few thousand tasks
SHIPPED = Path(__file__).with_name("releases.json.gz")

# A part → its digest, for the parts an evaluation has (or a log recorded).
Fingerprint = Mapping[str, str]


def _digest(items: Iterable[str]) -> str:
    text = json.dumps(sorted(items), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGITS]


def evaluation_fingerprint(gold: Iterable[GoldAction], nl_assertions: Iterable[str],
                           communicate_info: Iterable[str]) -> dict[str, str]:
    """The digests of an evaluation's parts (module docstring), for the parts it has."""
    items = {
        "action checks": [json.dumps([a.name, a.arguments], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
                          for a in gold],
        "NL assertions": [" ".join(text.split()) for text in nl_assertions],
        "communicate checks": list(communicate_info),
    }
    return {part: _digest(values) for part, values in items.items() if values}


def recorded_fingerprint(reward_info: Any) -> dict[str, str]:
    """The fingerprint of what a simulation's recorded evaluation checked: the gold actions of its
    action checks, its NL assertions and the information of its communicate checks (each part only
    where recorded; malformed items are not read)."""
    if not isinstance(reward_info, dict):
        return {}

    def items(key: str, field: str) -> list[Any]:
        value = reward_info.get(key)
        return [c.get(field) for c in value if isinstance(c, dict)] if isinstance(value, list) else []

    actions = [a for a in items("action_checks", "action") if isinstance(a, dict) and isinstance(a.get("name"), str)
               and isinstance(a.get("arguments", {}), dict)]
    return evaluation_fingerprint([GoldAction(a["name"], a.get("arguments", {})) for a in actions],
                                  [t for t in items("nl_assertions", "nl_assertion") if isinstance(t, str)],
                                  [t for t in items("communicate_checks", "info") if isinstance(t, str)])


def fits(task: Fingerprint | None, recorded: Fingerprint) -> bool:
    """Whether every part ``recorded`` has is the task's (a task of None fits nothing)."""
    return task is not None and all(task.get(part) == digest for part, digest in recorded.items())


def task_file_fingerprints(tasks: Any, domain: str, where: str) -> dict[str, dict[str, str]]:
    """The fingerprint of every task of a ``tasks.json`` (parsed), by id, in the file's order
    (raises :class:`TauDataError` for a task that cannot be read)."""
    if not isinstance(tasks, list):
        raise TauDataError(f"{where}: expected a list of tasks")
    out = {}
    for i, task in enumerate(tasks):
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            raise TauDataError(f"{where}[{i}]: a task must be an object with a string 'id'")
        criteria = parse_criteria(task.get("evaluation_criteria"), f"{where}[{i}] (task {task['id']})", domain)
        out[task["id"]] = evaluation_fingerprint(criteria["gold"], criteria["nl_assertions"],
                                                 criteria["communicate_info"])
    return out


@dataclass(frozen=True)
class Release:
    """A release whose tasks we know: its name, where its tasks come from, and the ``--tau-data``
    value that scores on them (None: the packaged wheel's own tasks, no ``--tau-data``)."""

    family: str
    version: str
    source: str
    tau_data: str | None
    task_files: Mapping[str, str]  # domain → the sha256 of its tasks.json

    @property
    def name(self) -> str:
        return f"{self.family} {self.version}"


def release_names(releases: Sequence[Release], order: Sequence[Release]) -> str:
    """``releases`` named in ``order`` (the known releases'), a run of one family's consecutive
    releases as its first and last version (``τ³-bench v1.0.0–v1.0.1``)."""
    chosen = [r for r in order if r in releases]
    parts: list[str] = []
    run: list[Release] = []

    def close() -> None:
        if run:
            versions = run[0].version if len(run) == 1 else f"{run[0].version}–{run[-1].version}"
            parts.append(f"{run[0].family} {versions}")
            run.clear()

    for release in chosen:
        consecutive = run and run[-1].family == release.family and order.index(run[-1]) + 1 == order.index(release)
        if not consecutive:
            close()
        run.append(release)
    close()
    return " and ".join(parts) if len(parts) <= 2 else ", ".join(parts[:-1]) + " and " + parts[-1]


def rerun_hint(releases: Sequence[Release]) -> str:
    """How to score a run of ``releases`` (one set of tasks) on its own tasks."""
    packaged = [r for r in releases if r.tau_data is None]
    if packaged:
        return f"rerun without --tau-data (the packaged {packaged[0].name} tasks are its)"
    return f"rerun with --tau-data {releases[-1].tau_data}"


@dataclass(frozen=True)
class TaskFile:
    """One distinct ``tasks.json`` of the known releases: its domain and its tasks' fingerprints."""

    domain: str
    sha256: str
    tasks: Mapping[str, Fingerprint]


@dataclass(frozen=True)
class KnownReleases:
    """The releases whose tasks we know, and the fingerprints of their task files (module docstring)."""

    releases: tuple[Release, ...]
    task_files: Mapping[str, TaskFile]  # by sha256

    @classmethod
    def from_json(cls, doc: Any, where: str) -> KnownReleases:
        """Read the shape ``bench/tau_release_fingerprints.py`` writes: per task file, each task's digests
        in the order of :data:`PARTS`, null for a part it does not have (raises :class:`TauDataError`)."""
        try:
            files = {sha: TaskFile(entry["domain"], sha, {task: {p: d for p, d in zip(PARTS, digests, strict=True) if d}
                                                          for task, digests in entry["tasks"].items()})
                     for sha, entry in doc["task_files"].items()}
            releases = tuple(Release(r["family"], r["version"], r["source"], r["tau_data"], r["tasks"])
                             for r in doc["releases"])
        except (KeyError, TypeError, AttributeError) as exc:
            raise TauDataError(f"{where}: not a file of release fingerprints ({exc!r})") from None
        for release in releases:
            unknown = sorted(set(release.task_files.values()) - set(files))
            if unknown:
                raise TauDataError(f"{where}: {release.name} names task files it does not hold: {unknown}")
        return cls(releases, files)

    def shipping(self, domain: str) -> list[tuple[TaskFile, tuple[Release, ...]]]:
        """Each distinct task file of ``domain``, with the releases that ship it, in release order."""
        out: dict[str, list[Release]] = {}
        for release in self.releases:
            sha = release.task_files.get(domain)
            if sha is not None:
                out.setdefault(sha, []).append(release)
        return [(self.task_files[sha], tuple(releases)) for sha, releases in out.items()]

    def names(self, releases: Sequence[Release]) -> str:
        return release_names(releases, self.releases)

    def defining(self, domain: str, task_id: str) -> tuple[Release, ...]:
        """The releases whose ``domain`` tasks include ``task_id``, in release order."""
        return tuple(r for file, releases in self.shipping(domain) if task_id in file.tasks for r in releases)


@cache
def known_releases() -> KnownReleases:
    """The shipped release fingerprints (``releases.json.gz``)."""
    try:
        doc = json.loads(gzip.decompress(SHIPPED.read_bytes()))
    except (OSError, EOFError, ValueError) as exc:  # OSError: gzip.BadGzipFile too
        raise TauDataError(f"{SHIPPED}: cannot read the release fingerprints: {exc}") from None
    return KnownReleases.from_json(doc, str(SHIPPED))


@dataclass(frozen=True)
class EvaluationCheck:
    """A results file's simulations checked against the evaluations of their tasks (module docstring):
    the domain, the fingerprint of each task in use (``in_use``), which of them are the file's own
    definitions (``from_file``), and the known releases."""

    domain: str
    in_use: Mapping[str, Fingerprint]
    from_file: frozenset[str]
    known: KnownReleases

    @cached_property
    def in_use_releases(self) -> tuple[Release, ...]:
        """The releases whose task file defines every task of the task files in use as in use."""
        ours = {t: fp for t, fp in self.in_use.items() if t not in self.from_file}
        return tuple(r for file, releases in self.known.shipping(self.domain)
                     if ours and all(file.tasks.get(t) == fp for t, fp in ours.items()) for r in releases)

    def _releases_fitting(self, task_id: str, recorded: Fingerprint) -> tuple[Release, ...]:
        return tuple(r for file, releases in self.known.shipping(self.domain) if fits(file.tasks.get(task_id), recorded)
                     for r in releases)

    def _in_use_said(self, task_id: str) -> str:
        if task_id in self.from_file:
            return f"the file's task {task_id}"
        releases = self.in_use_releases
        return f"task {task_id} in use" + (f" ({self.known.names(releases)}'s)" if releases else "")

    def issue(self, reward_info: Any, task_id: str) -> LogIssue | None:
        """``data_version`` or ``task_mismatch`` where the simulation's recorded evaluation is not its
        task's in use (module docstring); None where it is, or where nothing was recorded."""
        return self._issue(recorded_fingerprint(reward_info), task_id)

    def _issue(self, recorded: Fingerprint, task_id: str) -> LogIssue | None:
        if not recorded:
            return None
        own = self.in_use.get(task_id)
        differing = [part for part in PARTS if part in recorded and (own is None or own.get(part) != recorded[part])]
        if not differing:
            return None
        said = " and ".join(differing)
        releases = self._releases_fitting(task_id, recorded)
        if releases:
            return LogIssue("data_version", f"the recorded {said} are those of task {task_id} of "
                                            f"{self.known.names(releases)}, not of {self._in_use_said(task_id)}: "
                                            f"{rerun_hint(releases)}")
        owners = sorted((t for t, fp in self.in_use.items() if t != task_id and fits(fp, recorded)),
                        key=lambda t: (len(t), t))
        if owners:
            return LogIssue("task_mismatch",
                            f"the recorded {said} are not task {task_id}'s: they are task {owners[0]}'s")
        elsewhere = [(t, releases) for file, releases in self.known.shipping(self.domain)
                     for t, fp in file.tasks.items() if t != task_id and fits(fp, recorded)]
        if elsewhere:
            other, releases = min(elsewhere, key=lambda item: (len(item[0]), item[0]))
            return LogIssue("task_mismatch", f"the recorded {said} are not task {task_id}'s: they are task {other}'s "
                                             f"of {self.known.names(releases)}")
        if differing == ["NL assertions"]:
            # tau2 records an NL assertion as its judge model echoed it back (``expectedOutcome``), not as
            # the task has it: the judge fixes typos and spacing. Unlike action and communicate checks, which
            # tau2 copies from the task, such echoes show another task only where they are that task's.
            return None
        return LogIssue("task_mismatch", f"the recorded {said} are not task {task_id}'s: they are no known task's "
                                         f"(of the tasks in use or of {self.known.names(self.known.releases)})")

    def reading(self, simulations: Iterable[tuple[str, Any]]) -> str | None:
        """How the recorded evaluations of a file's simulations (task id, ``reward_info``) fit the known
        releases' tasks — releases that the file's evaluations fit alike named together — and how many
        are another release's than the tasks in use (``data_version``), said once per file; None where
        no simulation recorded an evaluation."""
        recorded = [(task_id, fp) for task_id, info in simulations if (fp := recorded_fingerprint(info))]
        if not recorded:
            return None
        alike: dict[frozenset[int], list[Release]] = {}  # the simulations that fit → the releases they fit
        for file, releases in self.known.shipping(self.domain):
            fitting = frozenset(k for k, (t, fp) in enumerate(recorded) if fits(file.tasks.get(t), fp))
            alike.setdefault(fitting, []).extend(releases)
        in_use = self.in_use_releases if not self.from_file else ()
        said = [f"{len(fitting)} fit the tasks of {self.known.names(releases)}"
                + (" (in use)" if all(r in in_use for r in releases) else "")
                for fitting, releases in sorted(alike.items(), key=lambda item: -len(item[0])) if fitting]
        unknown = [(t, fp) for k, (t, fp) in enumerate(recorded) if not any(k in fitting for fitting in alike)]
        if unknown:
            # unflagged: only their NL assertions differ, recorded as the judge echoed them (:meth:`issue`)
            echoes = sum(self._issue(fp, t) is None for t, fp in unknown)
            said.append(f"{len(unknown)} fit no known release's tasks"
                        + (f" ({echoes} of them only in their NL assertions, as the judge echoed them: not flagged)"
                           if echoes else ""))
        text = f"of its {len(recorded)} recorded evaluations, {'; '.join(said)}"
        other = [(t, fp) for t, fp in recorded if (issue := self._issue(fp, t)) is not None
                 and issue.code == "data_version"]
        if other:
            hints = sorted({rerun_hint(self._releases_fitting(t, fp)) for t, fp in other})
            text += f"; {len(other)} are another release's than the tasks in use (data_version: {'; '.join(hints)})"
        return text
