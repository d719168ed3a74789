"""The wheel carries every file of the package that is not Python: each is matched by a pattern of its
package under ``[tool.setuptools.package-data]``, which is what puts it into the sdist and from there into
the wheel (MANIFEST.in adds none). The files the code reads — the audit browser's templates and assets,
the τ release fingerprints — are among them. `.ci/wheel_test.sh` builds and installs the real wheel;
this is the check that costs no build."""

from __future__ import annotations

import tomllib
from pathlib import Path

import prefix_audit

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src"
PACKAGE = SOURCE / "prefix_audit"


def _package_data() -> set[str]:
    """The package's files that the package-data patterns match (setuptools globs them the same way, `**`
    recursive), relative to the package."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    matched = set()
    for package, patterns in declared.items():
        folder = SOURCE.joinpath(*package.split("."))
        for pattern in patterns:
            matched |= {p.relative_to(PACKAGE).as_posix() for p in folder.glob(pattern) if p.is_file()}
    return matched


def _data_files() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}


def _read_by_the_code() -> set[str]:
    """The non-Python files the code opens, found as the code finds them, relative to the package."""
    from prefix_audit.benchmarks.tau.domain.releases import SHIPPED
    from prefix_audit.reports.pages import environment

    env = environment()
    templates = {Path(env.loader.get_source(env, name)[1]) for name in env.loader.list_templates()}
    package = Path(prefix_audit.__file__).resolve().parent
    return {p.resolve().relative_to(package).as_posix() for p in {SHIPPED, *templates}}


def test_every_data_file_of_the_package_is_declared_package_data():
    data = _data_files()
    missing = sorted(data - _package_data())
    assert data and not missing, f"not matched by [tool.setuptools.package-data], so left out of the wheel: {missing}"


def test_the_files_the_code_reads_are_package_data():
    read = _read_by_the_code()
    assert {"benchmarks/tau/domain/releases.json.gz", "reports/templates/site/index.html.j2",
            "reports/templates/site/assets/site.css"} <= read
    missing = sorted(read - _package_data())
    assert not missing, f"read by the code but left out of the wheel: {missing}"
