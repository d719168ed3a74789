"""Resumable rollout generation: a killed job resumes with nothing lost or duplicated."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prefix_audit.core.records import Rollout, Step
from prefix_audit.generation.rollout_store import RolloutStore, store_all

ROOT = Path(__file__).resolve().parents[1]
# A Dual-Loop block on a simulated model: planner, verifier and revision calls in every episode.
RATES = dict.fromkeys(["schema", "dependency", "precondition", "state_consistency", "information"], 0.03)
SETTINGS = {"kind": "agent", "method": "dual_loop", "seed": 4,
            "backend": {"type": "simulated", "profile": {"p_error": RATES, "p_plan_error": RATES,
                                                         "p_detect": dict.fromkeys(RATES, 0.8)}}}


def _rollout(i: int) -> Rollout:
    return Rollout("bfcl_v3", f"task_{i}", "m", "x", f"r{i}", ((Step((), f"answer {i}"),),))


def test_torn_last_line_is_cut_and_the_rest_resumed(tmp_path):
    out = tmp_path / "rollouts.jsonl"
    store = RolloutStore(out)
    for i in range(3):
        store.append(_rollout(i))
    with store.partial.open("ab") as fh:
        fh.write(b'{"dataset": "bfcl_v3", "task_')  # killed while writing rollout 3
    produced = []

    async def produce(i: int) -> Rollout:
        produced.append(i)
        return _rollout(i)

    assert asyncio.run(store_all(out, [(f"r{i}", i) for i in range(5)], produce)) == 5
    assert produced == [3, 4]
    lines = out.read_text().splitlines()
    assert [json.loads(line)["rollout_id"] for line in lines] == [f"r{i}" for i in range(5)]
    assert not store.partial.exists()


def _generate(tasks: Path, out: Path) -> subprocess.Popen:
    code = ("import sys, json; from prefix_audit.generation.rollouts import generate_rollouts; "
            "generate_rollouts('bfcl_v3', sys.argv[1], 'sim', 'dual_loop', json.loads(sys.argv[2]), sys.argv[3], "
            "sys.argv[4])")
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen([sys.executable, "-c", code, str(tasks), json.dumps(SETTINGS), str(ROOT / "resources"),
                             str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_equals_an_uninterrupted_run(bfcl_data, tmp_path):
    from prefix_audit.generation.tasks import write_task_list

    tasks = tmp_path / "tasks.json"
    write_task_list("bfcl_v3", ROOT / "resources", 80, 20260329, tasks)
    clean = tmp_path / "clean.jsonl"
    assert _generate(tasks, clean).wait(timeout=300) == 0

    killed = tmp_path / "killed.jsonl"
    partial = killed.with_name(killed.name + ".partial")
    proc = _generate(tasks, killed)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if partial.exists() and partial.read_bytes().count(b"\n") >= 20:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "generation finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stored_before = partial.read_bytes().count(b"\n")
    assert 20 <= stored_before < 80 and not killed.exists()

    rerun = _generate(tasks, killed)
    _, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err.decode()[-2000:]
    assert killed.read_bytes() == clean.read_bytes()
    ids = [json.loads(line)["rollout_id"] for line in killed.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 80
    assert not partial.exists()
