"""The suite's xdist groups hold (``tests/conftest.py``): the tests of a module-scoped fixture run on one
worker, which builds that fixture once. pytest 9.2 broke this silently (pytest-xdist issue 1386: the
group no longer reaches the scheduler, and every worker built the fixture — the real-logs corpus twice,
two minutes each), so the grouping is checked here with the suite's own hook, not assumed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODULE = '''
import os
import pytest

def _note(line):
    with open(os.environ["NOTES"], "a") as notes:
        notes.write(line + "\\n")

@pytest.fixture(scope="module")
def built():
    _note(f"setup {__name__}")

@pytest.fixture(autouse=True)
def ran():
    _note(f"ran {__name__} {os.environ['PYTEST_XDIST_WORKER']}")

def test_1(built): pass
def test_2(built): pass
def test_3(built): pass
def test_4(built): pass
'''


def test_tests_of_a_module_fixture_run_on_one_worker_that_builds_it_once(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(MODULE)
    for i in range(6):  # ungrouped tests the workers share as they come
        (tmp_path / f"test_light_{i}.py").write_text("def test_light():\n    pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the repository's addopts
    notes = tmp_path / "notes.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), "NOTES": str(notes)}
    # -p conftest: the suite's own conftest as a plugin, so its grouping hook is the one checked
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "conftest",
                           "-p", "no:cacheprovider", str(tmp_path)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = notes.read_text().splitlines()
    setups = Counter(line.split()[1] for line in lines if line.startswith("setup "))
    workers = defaultdict(set)
    for line in lines:
        if line.startswith("ran "):
            workers[line.split()[1]].add(line.split()[2])
    assert setups == {"test_a": 1, "test_b": 1}, lines
    assert all(len(used) == 1 for used in workers.values()), dict(workers)
