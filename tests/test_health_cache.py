"""Task health kept per release (:mod:`prefix_audit.health.cache`): a kept release gives the same findings
and the same bytes as one computed, whatever the workers, and runs no check; another data or code digest
misses; an unreadable entry is said and computed again; a check that raised is not kept; two processes
filling one release leave one valid entry; ``--no-health-cache`` neither reads nor keeps."""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RESOURCES

from prefix_audit.cli import main
from prefix_audit.core.health import Finding
from prefix_audit.core.parallel import WorkerPool
from prefix_audit.health import cache as health_cache
from prefix_audit.health.cache import HealthCache, ReleaseKey
from prefix_audit.health.tasks import audit_tasks, health_contents
from prefix_audit.replay import registry

PLUGINS = Path(__file__).parent / "plugins"


@pytest.fixture
def toy():
    """The toy benchmark with tasks that give findings of several codes, kinds and effects."""
    sys.path.insert(0, str(PLUGINS))
    registry.load(["toy_bench"])
    import toy_bench as tb

    call = tb._call
    login, rooms = call("login", pin=tb.PIN), call("list_rooms")
    saved = dict(tb.TASKS)
    tb.TASKS.update({
        "bad-pin": tb.Task(("My PIN is 4321; the kitchen light on, please.",),
                           ((call("login", pin="0000"), login, rooms, call("switch", room_id="r-kitchen", on=True)),)),
        "guessed-id": tb.Task(("PIN 4321, kitchen on.",), ((login, call("switch", room_id="r-kitchen", on=True)),)),
        "look-only": tb.Task(("PIN 4321. Which rooms do I have?",), ((login, rooms),)),
    })
    yield tb
    tb.TASKS.clear()
    tb.TASKS.update(saved)


def _audit(bench, folder, task_ids=None):
    with WorkerPool(1, lambda name: bench) as pool:
        return audit_tasks([("toy_lights", "toy-1", task_ids)], pool.shared, pool, cache=folder)


def _counting(monkeypatch, tb, fail: frozenset[str] = frozenset()) -> list[str]:
    """The ids of the tasks whose health is computed from now on (those in ``fail`` raise)."""
    computed: list[str] = []
    healthy = tb.ToyLights.task_health

    def counted(self, task_id, release):
        computed.append(task_id)
        if task_id in fail:
            raise RuntimeError("a broken check")
        return healthy(self, task_id, release)

    monkeypatch.setattr(tb.ToyLights, "task_health", counted)
    return computed


def _entry(folder: Path) -> Path:
    entry, = folder.glob("toy_lights/toy-1/*.json")
    return entry


def test_a_kept_release_gives_every_field_and_the_same_bytes_and_runs_no_check(toy, tmp_path, monkeypatch):
    bench = toy.ToyLights("toy_lights")
    computed = _counting(monkeypatch, toy)
    fresh = _audit(bench, None)
    assert {f.kind for r in fresh.results for f in r.findings} >= {"design", "definition", "caution"}
    computed.clear()
    cold = _audit(bench, tmp_path, ["look-only", "bad-pin"])  # an audit: only its logs' tasks
    assert computed == ["bad-pin", "look-only"]
    kept = json.loads(_entry(tmp_path).read_text())
    assert sorted(kept["tasks"]) == ["bad-pin", "look-only"]
    fields = {f.name for f in dataclasses.fields(Finding)}
    assert all(set(f) == fields for findings in kept["tasks"].values() for f in findings)
    assert kept["tasks"]["bad-pin"] == [dataclasses.asdict(f) for r in fresh.results if r.task_id == "bad-pin"
                                        for f in r.findings]

    computed.clear()
    whole = _audit(bench, tmp_path)  # a later `tasks`: only what is missing
    assert sorted(computed) == sorted(set(toy.TASKS) - {"bad-pin", "look-only"})
    computed.clear()
    warm = _audit(bench, tmp_path)
    assert computed == []
    assert warm.results == whole.results == fresh.results
    assert health_contents(warm, tmp_path / "out") == health_contents(fresh, tmp_path / "out")
    assert health_contents(cold, tmp_path / "out") == health_contents(
        _audit(bench, None, ["bad-pin", "look-only"]), tmp_path / "out")


def test_another_data_or_code_digest_misses(toy, tmp_path, monkeypatch):
    bench = toy.ToyLights("toy_lights")
    _audit(bench, tmp_path)
    computed = _counting(monkeypatch, toy)
    _audit(bench, tmp_path)
    assert computed == []
    toy.TASKS["look-only"] = toy.Task(("PIN 4321. Which rooms?",), toy.TASKS["look-only"].reference)
    _audit(bench, tmp_path)  # the data changed: every task again, under another key
    assert sorted(computed) == sorted(toy.TASKS)
    assert len(list(tmp_path.glob("toy_lights/toy-1/*.json"))) == 2
    computed.clear()
    monkeypatch.setattr(health_cache, "code_digest", lambda: "0.1.0:another")
    _audit(bench, tmp_path)
    assert sorted(computed) == sorted(toy.TASKS)


def test_the_code_digest_follows_every_file_of_the_package_but_bytecode(tmp_path, monkeypatch):
    import prefix_audit

    package = tmp_path / "prefix_audit"
    (package / "health").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "health" / "checks.py").write_text("LIMIT = 1\n")
    monkeypatch.setattr(prefix_audit, "__file__", str(package / "__init__.py"))
    digest = health_cache.code_digest.__wrapped__
    first = digest()
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "checks.cpython-312.pyc").write_bytes(b"\0")
    assert digest() == first
    (package / "health" / "checks.py").write_text("LIMIT = 2\n")
    assert digest() != first
    monkeypatch.setattr(prefix_audit, "__version__", "9.9")
    assert digest().startswith("9.9:")


@pytest.mark.parametrize("damage", ["{not json", '{"dataset": "toy_lights"}', "[]",
                                    "KEY with a finding field Finding lacks"])
def test_an_unreadable_entry_is_said_once_and_computed_again(toy, tmp_path, monkeypatch, caplog, damage):
    bench = toy.ToyLights("toy_lights")
    fresh = _audit(bench, tmp_path)
    entry = _entry(tmp_path)
    if damage.startswith("KEY"):
        kept = json.loads(entry.read_text())
        kept["tasks"]["bad-pin"][0]["severity"] = "high"
        damage = json.dumps(kept)
    entry.write_text(damage)
    computed = _counting(monkeypatch, toy)
    with caplog.at_level(logging.WARNING, logger=health_cache.__name__):
        again = _audit(bench, tmp_path)
    assert again.results == fresh.results and sorted(computed) == sorted(toy.TASKS)
    said = [r.getMessage() for r in caplog.records if r.name == health_cache.__name__]
    assert len(said) == 1 and said[0].startswith("the kept health of toy_lights toy-1 cannot be read, computed again")
    computed.clear()
    _audit(bench, tmp_path)  # replaced by a whole entry
    assert computed == []


def test_a_check_that_raised_is_not_kept(toy, tmp_path, monkeypatch):
    bench = toy.ToyLights("toy_lights")
    computed = _counting(monkeypatch, toy, fail=frozenset({"all-on"}))
    report = _audit(bench, tmp_path)
    assert [r.task_id for r in report.results if r.error] == ["all-on"]
    assert "all-on" not in json.loads(_entry(tmp_path).read_text())["tasks"]
    monkeypatch.undo()  # the check mended
    computed = _counting(monkeypatch, toy)
    again = _audit(bench, tmp_path)
    assert computed == ["all-on"] and all(r.error is None for r in again.results)


FILLER = """
import sys
from prefix_audit.core.health import Finding
from prefix_audit.health.cache import HealthCache, ReleaseKey
cache, who = HealthCache(sys.argv[1]), sys.argv[2]
key = ReleaseKey("toy_lights", "toy-1", "data", "code")
for i in range(60):
    cache.keep(key, {f"{who}-{i}": (Finding("gold_no_effect", f"{who} {i}"),), "shared": ()})
"""


def test_two_processes_filling_one_release_leave_one_valid_entry(tmp_path):
    """Each keeps 60 tasks of its own, one at a time: without the lock, one's write would drop tasks the
    other kept between its read and its write."""
    fillers = [subprocess.Popen([sys.executable, "-c", FILLER, str(tmp_path), who]) for who in ("a", "b")]
    assert [p.wait(timeout=120) for p in fillers] == [0, 0]
    kept = HealthCache(tmp_path).read(ReleaseKey("toy_lights", "toy-1", "data", "code"))
    assert sorted(kept) == sorted([f"{who}-{i}" for who in "ab" for i in range(60)] + ["shared"])
    assert kept["b-7"] == (Finding("gold_no_effect", "b 7"),)
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".json"]  # no temporary left


def test_kept_bfcl_health_is_the_same_bytes_whatever_the_workers(bfcl, tmp_path):
    tasks = ["multi_turn_base_4", "multi_turn_base_10", "multi_turn_miss_func_49", "multi_turn_base_173"]
    resolve = registry.resolver(RESOURCES)
    contents = []
    for workers, folder in ((1, None), (2, tmp_path / "kept"), (1, tmp_path / "kept"), (2, tmp_path / "kept")):
        with WorkerPool(workers, resolve, preload=registry.modules()) as pool:
            contents.append(health_contents(audit_tasks([("bfcl_v3", "2025.9.29", tasks)], resolve, pool,
                                                        cache=folder), tmp_path / "out"))
    assert all(c == contents[0] for c in contents)
    assert len(list((tmp_path / "kept").glob("bfcl_v3/2025.9.29/*.json"))) == 1


def test_the_tasks_command_keeps_health_beside_the_packages_unless_told_not_to(toy, tmp_path):
    resources = tmp_path / "resources"
    runs = [tmp_path / name for name in ("cold", "warm")]
    for out in runs:
        assert main(["tasks", "toy_lights", "--plugin", "toy_bench", "--resources", str(resources), "-o", str(out),
                     "--workers", "1"]) == 0
    assert len(list(resources.glob("health/toy_lights/toy-1/*.json"))) == 1
    assert all((runs[0] / name).read_bytes() == (runs[1] / name).read_bytes()
               for name in ("findings.parquet", "tasks.parquet", "summary.json", "tables/table_task_health.md"))
    elsewhere = tmp_path / "other-resources"
    assert main(["tasks", "toy_lights", "--plugin", "toy_bench", "--resources", str(elsewhere), "-o",
                 str(tmp_path / "bypassed"), "--workers", "1", "--no-health-cache"]) == 0
    assert not (elsewhere / "health").exists()
    assert (tmp_path / "bypassed" / "tasks.parquet").read_bytes() == (runs[0] / "tasks.parquet").read_bytes()


def test_each_benchmark_names_what_its_release_health_reads(resolve, tau, tau3):
    """τ: the task files in use (a data directory's are others); none with a judge model, whose verdicts no
    file fixes. BFCL: every pinned release's files, so both releases' keys hold the same digest. ToolSandbox:
    its scenario set."""
    from prefix_audit.benchmarks.bfcl.data import data_files
    from prefix_audit.benchmarks.bfcl.loader import class_files
    from prefix_audit.benchmarks.toolsandbox import ToolSandboxBenchmark

    packaged, on_tau3 = tau["tau_retail"], tau3["tau_retail"]
    assert packaged.health_digest(packaged.health_releases()[0]) != on_tau3.health_digest("tau3-v1.0.1")
    assert tau["tau_airline"].health_digest(tau["tau_airline"].health_releases()[0]) != \
        packaged.health_digest(packaged.health_releases()[0])
    with pytest.raises(KeyError):
        packaged.health_digest("tau3-v1.0.1")
    packaged.nl_judge = lambda task, transcript: True
    try:
        assert packaged.health_digest(packaged.health_releases()[0]) is None
    finally:
        packaged.nl_judge = None
    bfcl = resolve("bfcl_v3")
    assert bfcl.health_digest("2026.3.23") == bfcl.health_digest("2025.9.29")
    root = bfcl.data.root
    assert len(data_files(root)) == 8 + len(bfcl.data.docs) and all(p.is_file() for p in data_files(root))
    assert "gorilla_file_system.py" in {p.name for p in class_files(root)}
    sandbox = ToolSandboxBenchmark()
    assert sandbox.health_digest(sandbox.health_releases()[0]) == sandbox.scenario_set_sha256


def test_a_folder_that_cannot_be_written_costs_a_warning_not_the_command(toy, tmp_path, caplog):
    blocked = tmp_path / "health"
    blocked.write_text("a file where the folder would be")
    with caplog.at_level(logging.WARNING, logger=health_cache.__name__):
        report = _audit(toy.ToyLights("toy_lights"), blocked)
    assert report.results == _audit(toy.ToyLights("toy_lights"), None).results
    said = [r.getMessage() for r in caplog.records if r.name == health_cache.__name__]
    assert len(said) == 2 and said[0].startswith("the kept health of toy_lights toy-1 cannot be read")
    assert said[1].startswith("the health of toy_lights toy-1 could not be kept in ")
