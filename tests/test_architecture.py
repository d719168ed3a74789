"""The folder listing is the architecture: the declared layers (import-linter contracts in
pyproject.toml) hold and would catch a module that imports a higher layer or another sub-package's
internals; every sub-package says what it holds; plugins import one stable face."""

from __future__ import annotations

import ast
import os
import re
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


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "src" / "prefix_audit", tmp_path / "prefix_audit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "prefix_audit"


def _append(path: Path, code: str) -> None:
    path.write_text(path.read_text() + "\n\n" + code + "\n")


def test_an_upward_import_breaks_the_layers(tmp_path):
    _append(_copy(tmp_path) / "models" / "base.py",
            "def _policy():\n    from ..generation.sources import simulated  # up four layers")
    proc = _lint(tmp_path)
    assert proc.returncode != 0
    assert "Layers: no sub-package imports a higher layer BROKEN" in proc.stdout
    assert "prefix_audit.models.base -> prefix_audit.generation.sources.simulated" in proc.stdout


def test_reaching_into_internals_or_a_benchmark_by_name_breaks_a_contract(tmp_path):
    package = _copy(tmp_path)
    _append(package / "reports" / "tables.py", "def _resample():\n    from ..statistics import bootstrap")
    _append(package / "generation" / "tasks.py", "def _bfcl():\n    from ..benchmarks.bfcl import data")
    proc = _lint(tmp_path)
    assert proc.returncode != 0
    assert "The internals of statistics stay inside it BROKEN" in proc.stdout
    assert "prefix_audit.reports.tables -> prefix_audit.statistics.bootstrap" in proc.stdout
    assert "Benchmarks are reached only through the registry BROKEN" in proc.stdout
    assert "prefix_audit.generation.tasks -> prefix_audit.benchmarks.bfcl.data" in proc.stdout


PACKAGE = ROOT / "src" / "prefix_audit"


def _sub_packages(parent: Path) -> list[Path]:
    return sorted(d for d in parent.iterdir() if (d / "__init__.py").is_file())


def test_the_top_level_holds_few_modules_and_every_sub_package_says_what_it_holds():
    assert len(list(PACKAGE.glob("*.py"))) <= 6
    for package in _sub_packages(PACKAGE) + _sub_packages(PACKAGE / "benchmarks" / "tau"):
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        named = set(re.findall(r":mod:`\.(\w+)`", doc))
        members = {p.stem for p in package.glob("*.py") if p.stem != "__init__"} | {
            d.name for d in _sub_packages(package)}
        if package.name == "benchmarks":
            continue  # one package per benchmark, each with its own docstring
        assert members <= named, f"{package.relative_to(PACKAGE)}: its docstring does not name {members - named}"
        assert "May import" in doc or package.name == "tau", package


def test_the_architecture_doc_opens_with_the_tree_of_every_sub_package():
    text = (ROOT / "docs" / "architecture.md").read_text()
    tree = text[:text.index("\n## ")]
    for package in _sub_packages(PACKAGE) + _sub_packages(PACKAGE / "benchmarks" / "tau"):
        assert f"{package.name}/" in tree, package.name


def test_the_toy_plugin_imports_only_the_plugin_face():
    import prefix_audit.plugin as face

    assert all(hasattr(face, name) for name in face.__all__)
    tree = ast.parse((ROOT / "tests" / "plugins" / "toy_bench.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} | {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert {m for m in imported if m and m.startswith("prefix_audit")} == {"prefix_audit.plugin"}
