"""The benchmark packages live in one folder per user: an audit fetches into the user cache (not the
folder it runs in) once, says so, and finds them there from any other folder; two audits at once share
it; offline with nothing there is one line saying how to get going; `prefix-audit fetch` prefetches
them. Real pip throughout, never the network: the test plugin's pinned wheel (tests/plugins/toy_pinned.py)
is served from a folder (`PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR`), offline is `PIP_NO_INDEX=1` alone."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from prefix_audit.core.fetch import RESOURCES_ENV, default_resources, is_fetched

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = Path(__file__).resolve().parent / "plugins"
RESOURCES = ROOT / "resources"
sys.path.insert(0, str(PLUGINS))
import toy_pinned  # noqa: E402  (the plugin's wheel and pin; the commands load it with --plugin)

PIN = toy_pinned.PIN
FETCHED = re.compile(r"^prefix-audit: fetched toy-home-tasks==1\.0 into (?P<target>\S+) "
                     r"\(\d+\.\d kB download, \d+\.\d kB unpacked, \d+ s\)$", re.MULTILINE)


@pytest.fixture
def user(tmp_path, monkeypatch):
    """A user with an empty cache folder and no PREFIX_AUDIT_RESOURCES, whose pip reaches no index and
    reads no config file; ``cache`` is where the packages go by default."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != RESOURCES_ENV}
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "home" / "cache"),
               PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1",
               PYTHONPATH=os.pathsep.join([str(PLUGINS), *filter(None, [os.environ.get("PYTHONPATH")])]))
    for key in ("HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.delenv(RESOURCES_ENV)
    return {"env": env, "cache": default_resources(), "wheels": tmp_path / "wheels"}


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "prefix_audit.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def served(user) -> dict[str, str]:
    """The user's environment with the plugin's wheel where pip finds it (as PyPI serves the real ones)."""
    toy_pinned.write_wheel(user["wheels"])
    return {**user["env"], "PIP_FIND_LINKS": str(user["wheels"])}


def toy_logs(folder: Path) -> list[Path]:
    """Two logs of the pinned toy dataset (two, so that two worker processes open it at once)."""
    folder.mkdir(parents=True, exist_ok=True)
    login = {"name": "login", "arguments": {"pin": "4321"}}
    rooms = {"name": "list_rooms", "arguments": {}}
    kitchen = {"name": "switch", "arguments": {"room_id": "r-kitchen", "on": True}}
    entries = [[{"pinned_task": "kitchen-on", "turns": [[login, rooms, kitchen]]}],
               [{"pinned_task": "all-on", "turns": [[login, rooms]]},
                {"pinned_task": "kitchen-on", "turns": [[rooms, kitchen]]}]]
    paths = []
    for n, log in enumerate(entries, 1):
        path = folder / f"pinned-{n}.jsonl"
        path.write_text("".join(json.dumps(entry) + "\n" for entry in log))
        paths.append(path)
    return paths


def audit(logs: list[Path], out: Path, *, cwd: Path, env: dict[str, str],
          workers: int = 2) -> subprocess.CompletedProcess:
    return cli("audit", "--no-figures", *map(str, logs), "-o", str(out), "--plugin", "toy_pinned", "--workers", str(workers),
               "--no-health", "--resamples", "50", cwd=cwd, env=env)


def test_the_default_folder_is_the_variable_else_the_user_cache(user, monkeypatch, tmp_path):
    from prefix_audit.cli import build_parser

    def parsed_default() -> str:
        return build_parser().parse_args(["score", "r.jsonl", "-o", "out"]).resources

    if sys.platform.startswith("linux"):
        assert user["cache"] == tmp_path / "home" / "cache" / "prefix-audit"
    assert parsed_default() == str(user["cache"])
    monkeypatch.setenv(RESOURCES_ENV, str(tmp_path / "elsewhere"))
    assert default_resources() == tmp_path / "elsewhere" and parsed_default() == str(tmp_path / "elsewhere")


def test_the_inspect_scorer_reads_the_same_folder_by_default(user, monkeypatch, tmp_path):
    pytest.importorskip("inspect_ai")
    from prefix_audit import inspect_scorer

    opened = []
    monkeypatch.setattr(inspect_scorer.registry, "resolver", lambda resources: opened.append(resources))
    monkeypatch.setenv(RESOURCES_ENV, str(tmp_path / "elsewhere"))
    inspect_scorer.fed()
    inspect_scorer.fed(resources=str(tmp_path / "given"))
    assert opened == [tmp_path / "elsewhere", str(tmp_path / "given")]


def test_the_first_audit_fetches_into_the_cache_once_and_an_audit_elsewhere_fetches_nothing(user, tmp_path):
    logs = toy_logs(tmp_path / "logs")
    first = audit(logs, tmp_path / "out-1", cwd=tmp_path / "work-1", env=served(user))
    assert first.returncode == 0, first.stderr
    # said once, though two worker processes opened the dataset
    assert [m["target"] for m in FETCHED.finditer(first.stderr)] == [str(user["cache"] / PIN.dirname)], first.stderr
    assert is_fetched(user["cache"], PIN)
    # From another folder, with nothing pip could fetch: the cached package, nothing said, the same audit.
    second = audit(logs, tmp_path / "out-2", cwd=tmp_path / "work-2", env=user["env"])
    assert second.returncode == 0, second.stderr
    assert "fetched" not in second.stderr
    assert list((tmp_path / "work-1").iterdir()) == [] and list((tmp_path / "work-2").iterdir()) == []
    episodes = [pl.read_parquet(tmp_path / out / "fed" / "episodes.parquet") for out in ("out-1", "out-2")]
    assert episodes[0].equals(episodes[1]) and episodes[0].height == 3


def test_two_audits_at_once_fetch_once(user, tmp_path):
    logs = toy_logs(tmp_path / "logs")
    env = served(user)
    runs = [subprocess.Popen([sys.executable, "-m", "prefix_audit.cli", "audit", "--no-figures", *map(str, logs), "-o",
                              str(tmp_path / f"out-{n}"), "--plugin", "toy_pinned", "--no-health", "--resamples", "50"],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for n in (1, 2)]
    said = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], said
    assert len(FETCHED.findall("".join(err for _, err in said))) == 1, said
    assert (tmp_path / "out-1" / "tables" / "table_G1.md").read_bytes() == \
        (tmp_path / "out-2" / "tables" / "table_G1.md").read_bytes()


def test_offline_with_an_empty_cache_is_one_line_that_says_how_to_get_going(user, tmp_path):
    cache = user["cache"]
    said = (f"toy-home-tasks==1.0 is not in {cache} and could not be downloaded (pip: No matching distribution "
            f"found for toy-home-tasks==1.0); run `prefix-audit fetch` on a machine with network and copy the folder "
            f"it names to {cache}, or point --resources or {RESOURCES_ENV} at a folder that holds it")
    logs = toy_logs(tmp_path / "logs")
    proc = audit(logs, tmp_path / "out", cwd=tmp_path / "work", env=user["env"], workers=1)
    assert proc.returncode == 2 and proc.stderr.splitlines() == [f"prefix-audit audit: {said}"], proc.stderr
    # the same where the package is first needed to replay (score), not to read a log; and from `fetch`
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text(json.dumps({"dataset": "toy_pinned", "task_id": "kitchen-on", "model": "m", "method": "x",
                                    "rollout_id": "r1", "source": "s", "meta": {},
                                    "turns": [[{"calls": [{"name": "list_rooms", "arguments": {}}]}]]}) + "\n")
    for command in (["score", str(rollouts), "-o", str(tmp_path / "scored")], ["fetch", "toy_pinned"]):
        proc = cli(*command, "--plugin", "toy_pinned", cwd=tmp_path / "work", env=user["env"])
        assert proc.returncode == 2 and proc.stderr.splitlines() == [f"prefix-audit {command[0]}: {said}"], proc.stderr
    assert list((tmp_path / "work").iterdir()) == [] and not is_fetched(cache, PIN)


def test_fetch_prefetches_every_registered_datasets_packages(user, tmp_path):
    """`prefix-audit fetch` with no dataset: every registered dataset's pinned packages, BFCL's other data
    release with its own; what is there already is not fetched again. The real packages are the repo's
    (linked into the folder: the tests never download them), the plugin's is fetched."""
    from prefix_audit.benchmarks.bfcl.data import DATA_PINS
    from prefix_audit.benchmarks.tau import DEFAULT_PIN as TAU2_PIN

    real = [*DATA_PINS, TAU2_PIN]
    if not all(is_fetched(RESOURCES, pin) for pin in real):
        pytest.skip("the pinned packages are not in resources/ (offline, and never fetched)")
    folder = tmp_path / "for-the-cluster"
    folder.mkdir()
    for pin in real:
        (folder / pin.dirname).symlink_to(RESOURCES / pin.dirname)
    env = served(user)
    proc = cli("fetch", "--plugin", "toy_pinned", "--resources", str(folder), cwd=tmp_path / "work", env=env)
    assert proc.returncode == 0, proc.stderr
    assert [m["target"] for m in FETCHED.finditer(proc.stderr)] == [str(folder / PIN.dirname)]
    listed = re.search(rf"^4 pinned package\(s\) in {re.escape(str(folder))} \(\d+\.\d MB; 1 fetched now\): (.+)$",
                       proc.stderr, re.MULTILINE)
    assert listed, proc.stderr
    assert sorted(listed[1].split(", ")) == sorted(f"{pin.name} {pin.version}" for pin in [*real, PIN])
    assert is_fetched(folder, PIN)
    again = cli("fetch", "bfcl_v3", "--resources", str(folder), cwd=tmp_path / "work", env=user["env"])
    assert again.returncode == 0 and "fetched" not in again.stderr.replace("fetched now", "")
    assert f"2 pinned package(s) in {folder} (" in again.stderr and "; 0 fetched now): bfcl-eval 2026.3.23, " \
        "bfcl-eval 2025.9.29" in again.stderr, again.stderr


def test_fetch_refuses_an_unknown_dataset_in_one_line(user, tmp_path):
    proc = cli("fetch", "bfcl_v3", "no_such_dataset", cwd=tmp_path / "work", env=user["env"])
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith("fetch: unknown dataset(s) 'no_such_dataset' (registered: bfcl_v3, ")
    assert not user["cache"].exists()


def test_a_package_that_cannot_be_had_stops_task_health_rather_than_failing_every_task():
    """A task whose check raises costs that task only — unless the check needs a package that cannot be
    had (offline, an older release not in the folder): that stops the command with its one line, rather
    than one failed check and one more pip run per task."""
    from toy_bench import TOY_RELEASE, TASKS, ToyLights

    from prefix_audit.core.fetch import FetchError
    from prefix_audit.core.parallel import WorkerPool
    from prefix_audit.health.tasks import audit_tasks

    class BrokenChecks(ToyLights):
        error: Exception

        def task_health(self, task_id, release):
            raise self.error

    bench = BrokenChecks("toy_lights")
    with WorkerPool(1, lambda name: bench) as pool:
        bench.error = ValueError("a broken check")
        report = audit_tasks([("toy_lights", TOY_RELEASE, None)], pool.shared, pool)
        assert [r.error for r in report.results] == ["ValueError: a broken check"] * len(TASKS)
        bench.error = FetchError("demo==1 is not in DIR and could not be downloaded")
        with pytest.raises(FetchError, match="^demo==1 is not in DIR"):
            audit_tasks([("toy_lights", TOY_RELEASE, None)], pool.shared, pool)
