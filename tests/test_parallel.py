"""Audits and scoring over several processes: the same bytes whatever the number of workers, the
stream read as it is consumed, a worker that dies said in one line, progress shown."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RESOURCES
from test_audit import _bfcl_log
from toolsandbox_runs import BRUNO, Call, ScenarioRun, write_run

from prefix_audit.core.parallel import IN_FLIGHT_PER_WORKER, WorkerPool, default_workers

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ".prefix-audit-files.json"


def _scaled(shared: int, item: int) -> tuple[int, int]:
    return item * shared, os.getpid()


def _dies(shared: object, item: int) -> int:
    if item == 3:
        os._exit(1)  # a worker killed mid-call (out of memory, a signal)
    return item


def test_results_come_back_in_order_from_several_processes():
    with WorkerPool(2, 10) as pool:
        results = list(pool.map(_scaled, range(40)))
    assert [r for r, _ in results] == [10 * i for i in range(40)]
    assert len({pid for _, pid in results}) == 2 and os.getpid() not in {pid for _, pid in results}


def test_one_worker_runs_in_this_process():
    with WorkerPool(1, 3) as pool:
        assert list(pool.map(_scaled, [1, 2])) == [(3, os.getpid()), (6, os.getpid())]


def test_the_stream_is_read_as_results_are_taken():
    pulled = []

    def items():
        for i in range(100):
            pulled.append(i)
            yield i

    with WorkerPool(2, 1) as pool:
        results = pool.map(_scaled, items())
        next(results)
        assert len(pulled) <= 2 * IN_FLIGHT_PER_WORKER + 1  # a window, not the whole stream
        assert len(list(results)) == 99


def test_a_worker_that_dies_is_one_error_naming_the_way_out():
    with WorkerPool(2, None) as pool, pytest.raises(RuntimeError, match="stopped unexpectedly.*--workers 1"):
        list(pool.map(_dies, range(10)))


BUSY_WORKER = """
import os, time
from pathlib import Path

def sleep_long(folder, item):
    Path(folder, str(os.getpid())).touch()
    time.sleep(600)
"""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_workers_end_when_the_process_that_started_them_is_killed(tmp_path, signal_name):
    """``timeout``, Slurm's scancel or the out-of-memory killer end an audit's main process alone: its
    workers, mid-call, must not run on (and, their result queue unread, hang for ever)."""
    import signal
    import time

    (tmp_path / "busy.py").write_text(BUSY_WORKER)
    started = tmp_path / "started"
    started.mkdir()
    main = subprocess.Popen(
        [sys.executable, "-c", "import sys, busy\nfrom prefix_audit.core.parallel import WorkerPool\n"
         f"with WorkerPool(2, {str(started)!r}) as pool:\n    list(pool.map(busy.sleep_long, range(4)))\n"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")])})
    try:
        deadline = time.monotonic() + 60
        while len(list(started.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = [int(p.name) for p in started.iterdir()]
        assert len(workers) == 2 and all(map(_running, workers))
        main.send_signal(getattr(signal, signal_name))
        main.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(map(_running, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(map(_running, workers)), f"workers {workers} still running after their parent's {signal_name}"
    finally:
        main.kill()
        for pid in (int(p.name) for p in started.iterdir()):
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def test_workers_are_bounded():
    assert 1 <= default_workers() <= 8
    with pytest.raises(ValueError, match="at least 1"):
        WorkerPool(0, None)


def _tree(root: Path) -> dict[str, str]:
    """Each file's sha256, the audit's own folder named alike (records name their places in it; the
    manifest of the files' own sha256 is compared by the files it lists)."""
    files = {str(p.relative_to(root)): hashlib.sha256(p.read_bytes().replace(str(root).encode(), b"AUDIT")).hexdigest()
             for p in sorted(root.rglob("*")) if p.is_file()}
    files[MANIFEST] = str(sorted(json.loads((root / MANIFEST).read_text())["files"]))
    return files


def _audit(args: list[str], env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "prefix_audit.cli", "audit", "--no-figures", *args, "--resources", str(RESOURCES),
                           "--resamples", "200"], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.slow
def test_an_audit_is_the_same_bytes_with_one_two_or_three_workers(bfcl, tmp_path):
    logs = []
    for n in range(3):  # several logs of one block, and a block of another benchmark
        path = tmp_path / "logs" / f"m{n}" / "BFCL_v4_multi_turn_base_result.json"
        _bfcl_log(bfcl, path)
        logs.append(path)
    runs = write_run(tmp_path / "runs", [ScenarioRun(f"ask{i}", [("user", "Find Bruno"), ("calls", [
        Call("c1", "search_contacts", {"name": "Bruno"}, result=[BRUNO])])]) for i in range(12)])
    trees = {}
    for workers in (1, 2, 3):
        out = tmp_path / f"w{workers}"
        done = _audit([*map(str, logs), str(runs), "-o", str(out), "--model", "m", "--workers", str(workers)])
        assert done.returncode == 0, done.stderr[-2000:]
        # Not a terminal: a line per log and per block, never a bar.
        assert "audit: " in done.stderr and "\r" not in done.stderr
        trees[workers] = _tree(out)
    assert trees[1] == trees[2] == trees[3]
    assert len(trees[1]) > 10
    quarantine = [json.loads(line) for line in
                  (tmp_path / "w2" / "scored/bfcl_v3/m/imported/quarantine.jsonl").read_text().splitlines()]
    # The two later logs repeat the first one's entries: named on the lines of the block's file, in it.
    assert [q["line"] for q in quarantine] == list(range(5, 13))
    assert {q["path"] for q in quarantine} == {str(tmp_path / "w2/rollouts/imported/bfcl_v3/m/imported.jsonl")}


def test_a_bad_workers_value_is_refused(tmp_path):
    done = _audit(["x.json", "-o", str(tmp_path / "o"), "--workers", "0"])
    assert done.returncode == 2 and "at least 1" in done.stderr


def test_a_script_without_a_main_guard_scores_with_workers(bfcl, tmp_path):
    """A Snakemake job's script (and a user's) runs as ``__main__`` without a guard: the workers must
    not run it again."""
    rollouts = tmp_path / "rollouts.jsonl"
    from prefix_audit.core.records import dumps
    from prefix_audit.ingest.imports import read_logs
    from prefix_audit.replay import registry

    log = tmp_path / "logs" / "BFCL_v4_multi_turn_base_result.json"
    _bfcl_log(bfcl, log)
    rollouts.write_text("".join(dumps(i.rollout) + "\n" for i in read_logs([log], registry.resolver(RESOURCES, {}))
                                if hasattr(i, "rollout")) * 3)  # repeated: duplicates are quarantined too
    script = tmp_path / "job.py"
    script.write_text(
        "import sys\n"
        "from prefix_audit.replay.scoring import score_block\n"
        "print('job started', file=sys.stderr)\n"
        f"score_block({str(rollouts)!r}, sys.argv[1] + '/a.parquet', sys.argv[1] + '/e.parquet', "
        f"sys.argv[1] + '/q.jsonl', resources={str(RESOURCES)!r}, dataset='bfcl_v3', workers=int(sys.argv[2]))\n")
    outs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        out.mkdir()
        done = subprocess.run([sys.executable, str(script), str(out), str(workers)], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONHASHSEED": "0"},
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stderr.count("job started") == 1  # the workers did not start the job again
        outs[workers] = {name: (out / name).read_bytes() for name in ("a.parquet", "e.parquet", "q.jsonl")}
    assert outs[1] == outs[2]
    assert [json.loads(line)["reason"].startswith("duplicate rollout_id")
            for line in outs[2]["q.jsonl"].splitlines()] == [True] * 8
