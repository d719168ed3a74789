"""The offline bundle of the scaling bench (``bench/scaling.py``): what a machine with a bare Python 3.12 and no
network needs to run it, as one tarball (see :func:`bundle`).

Usage:
    python bench/scaling_bundle.py DIR [--target-freeze FREEZE.txt] [--dry] [--shared ../shared] [--work DIR]

then on the target: ``tar xJf prefix-audit-scaling.tar.xz && cd prefix-audit-scaling && ./run.sh [bench/scaling.py
options]``.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _requirements() -> list[str]:
    """This project's runtime and workflow requirements, as pyproject.toml declares them."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["workflow"]]


def _closure() -> dict[str, str]:
    """Every distribution this project's runtime and workflow requirements need on Python 3.12 on Linux,
    at the version installed here: name → version (the requirements' closure over the installed
    metadata, markers evaluated for the target, extras followed)."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    target = {"python_version": "3.12", "python_full_version": "3.12.0", "sys_platform": "linux",
              "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
              "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    found: dict[str, str] = {}
    todo = [(Requirement(r), "") for r in _requirements()]
    seen: set[tuple[str, str]] = set()
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({**target, "extra": extra}):
            continue
        try:
            dist = distribution(req.name)
        except PackageNotFoundError:
            raise SystemExit(f"{req.name} is not installed here (install prefix-audit[workflow] first)")
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
        found[name] = dist.version
        for wanted in ["", *sorted(req.extras)]:
            if (name, wanted) in seen:
                continue
            seen.add((name, wanted))
            todo += [(Requirement(r), wanted) for r in dist.requires or ()]
    return found


def bundle(out: Path, shared: Path, work: Path, target_freeze: Path | None, dry: bool = False) -> Path:
    """``out/prefix-audit-scaling.tar.xz``: what a machine with a bare Python 3.12 and no network needs to
    run this bench —

    * ``wheels/``: cp312 manylinux x86_64 (or pure-Python) wheels of this project's requirements
      (``pyproject.toml``: the runtime ones and ``[workflow]``) and of what they require, at the versions
      installed here (:func:`_closure`), each fetched by ``pip download --no-deps --only-binary=:all:
      --python-version 3.12 --platform manylinux2014_x86_64 …`` (a distribution published as a source
      archive only — e.g. snakemake's ``connection_pool`` — built into a pure-Python wheel here), and this
      project's own wheel (its ``prefix_audit.benchmarks`` entry points register the benchmarks). Only what the target
      lacks belongs there: give ``--target-freeze`` the output of ``python3.12 -m pip freeze`` on the target
      (or of the image it runs) and every wheel whose ``name==version`` it lists is left out; pip then
      installs the rest beside what is there (``--no-index`` fails, naming it, if a requirement is met by
      neither). Without it every wheel is bundled (a bare ``python3.12`` has none of them);
    * ``repo/``: this commit of the repository (``git archive HEAD``) with ``resources/`` (the pinned
      benchmark packages, fetched here: the target fetches nothing);
    * ``shared/fixtures/real-logs`` and ``real-logs-3``: the logs, where ``repo/`` finds them;
    * ``run.sh``: installs the wheels with ``pip install --no-index --find-links wheels`` — into a
      virtualenv that sees the interpreter's packages, or where ``venv`` is missing ``--target site``
      (which ignores installed packages: bundle every wheel then) — and runs ``bench/scaling.py`` with
      its arguments (default: the full measurement, ``--json``).

    ``dry``: list the wheels pip would fetch (``pip download`` still resolves them, into a temporary
    folder) and what the tarball would hold, and write nothing."""
    stage = Path(tempfile.mkdtemp(prefix="scaling-bundle-", dir=work))
    top = stage / "prefix-audit-scaling"
    (top / "wheels").mkdir(parents=True)
    wheels = cache = work / "bundle-wheels"  # kept between runs: pip download skips what it holds
    wheels.mkdir(exist_ok=True)
    pip = [sys.executable, "-m", "pip"]
    for name, version in sorted(_closure().items()):
        got = subprocess.run([*pip, "download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
                              "--implementation", "cp", "--abi", "cp312", "--platform", "manylinux2014_x86_64",
                              "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux_2_28_x86_64",
                              "-d", str(wheels), f"{name}=={version}"], capture_output=True, text=True)
        if got.returncode != 0:  # published as a source archive only: a pure-Python one builds a py3 wheel here
            subprocess.run([*pip, "wheel", "--quiet", "--no-deps", "-w", str(wheels), f"{name}=={version}"], check=True)
    leftover = not (ROOT / "build").exists()
    subprocess.run([*pip, "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(ROOT)], check=True)
    if leftover:  # setuptools builds in the source tree
        shutil.rmtree(ROOT / "build", ignore_errors=True)
    for wheel in cache.glob("*.whl"):
        shutil.copy2(wheel, top / "wheels" / wheel.name)
    wheels = top / "wheels"
    have = set()
    if target_freeze is not None:
        for line in target_freeze.read_text().splitlines():
            name, _, version = line.strip().partition("==")
            if version:
                have.add((re.sub(r"[-_.]+", "_", name).lower(), version))
    for wheel in sorted(wheels.glob("*.whl")):
        name, version = wheel.name.split("-")[:2]
        if (re.sub(r"[-_.]+", "_", name).lower(), version) in have:
            wheel.unlink()
    listing = sorted(w.name for w in wheels.glob("*.whl"))
    print(f"wheels ({len(listing)}, {sum(w.stat().st_size for w in wheels.glob('*.whl')) / 2**20:.0f} MiB):")
    print("\n".join(f"  {w}" for w in listing))
    if dry:
        shutil.rmtree(stage)
        print("repo/ (git archive HEAD) + repo/resources/, shared/fixtures/real-logs{,-3}/, run.sh: not written (dry)")
        return out
    repo = top / "repo"
    repo.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(repo, filter="data")
    shutil.copytree(ROOT / "resources", repo / "resources", dirs_exist_ok=True)
    for name in ("real-logs", "real-logs-3"):
        if (shared / "fixtures" / name).is_dir():
            shutil.copytree(shared / "fixtures" / name, top / "shared" / "fixtures" / name)
    run = top / "run.sh"
    run.write_text(RUN_SH)
    run.chmod(0o755)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "prefix-audit-scaling.tar.xz"
    with tarfile.open(target, "w:xz") as tar:
        tar.add(top, arcname=top.name)
    shutil.rmtree(stage)
    print(f"{target}: {target.stat().st_size / 2**20:.0f} MiB")
    return target


RUN_SH = """#!/bin/sh
# Offline: install the bundled wheels here and run the scaling bench.
#   tar xJf prefix-audit-scaling.tar.xz && cd prefix-audit-scaling && ./run.sh [bench/scaling.py options]
# PYTHON: the interpreter (default python3.12). Results: work/ and scaling.json here.
# A virtualenv that sees the interpreter's own packages (--system-site-packages), so that a bundle made
# with --target-freeze (the wheels the target lacks only) is complete with them; where venv is missing,
# every wheel into site/ with --target (which ignores installed packages: bundle them all then).
set -eu
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3.12}
if "$PYTHON" -m venv --system-site-packages .venv 2>/dev/null && .venv/bin/python -m pip --version >/dev/null 2>&1; then
    .venv/bin/python -m pip install --quiet --no-index --find-links wheels "prefix-audit[workflow]"
    PY=$PWD/.venv/bin/python
else
    "$PYTHON" -m pip --version >/dev/null 2>&1 || "$PYTHON" -m ensurepip --user
    "$PYTHON" -m pip install --quiet --no-index --find-links wheels --target site wheels/*.whl
    export PYTHONPATH="$PWD/site" PATH="$PWD/site/bin:$PATH"
    PY=$PYTHON
fi
cd repo
exec "$PY" bench/scaling.py --work ../work --json ../scaling.json "$@"
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, metavar="DIR", help="write the bundle into DIR")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--work", type=Path,
                        help="where the bundle is staged and the wheels kept (default: a temporary folder)")
    parser.add_argument("--target-freeze", type=Path, help="`pip freeze` of the target")
    parser.add_argument("--dry", action="store_true", help="list, write nothing")
    args = parser.parse_args()
    work = (args.work or Path(tempfile.mkdtemp(prefix="scaling-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    bundle(args.out, args.shared, work, args.target_freeze, args.dry)


if __name__ == "__main__":
    main()
