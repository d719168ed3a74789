"""The declared layers (import-linter contracts in pyproject.toml) hold, and the check would catch a
module that imports a higher layer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"
pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed (pip install '.[dev]')")


def _lint(package_parent: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=package_parent,
                          env=env, capture_output=True, text=True, timeout=120)


def test_the_declared_layers_hold():
    proc = _lint(ROOT / "src")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_an_upward_import_breaks_the_layers(tmp_path):
    shutil.copytree(ROOT / "src" / "prefix_audit", tmp_path / "prefix_audit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    base = tmp_path / "prefix_audit" / "models" / "base.py"
    base.write_text(base.read_text() + "\n\ndef _policy():\n    from ..generation.sources import simulated  # up four layers\n")
    proc = _lint(tmp_path)
    assert proc.returncode != 0
    assert "Layers: no sub-package imports a higher layer BROKEN" in proc.stdout
    assert "prefix_audit.models.base -> prefix_audit.generation.sources.simulated" in proc.stdout
