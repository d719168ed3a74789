"""Fetching a pinned wheel: verified, unpacked once, said once, and never replaced under jobs that use it."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import threading
import time
import zipfile
from pathlib import Path

import pytest

from prefix_audit.core import fetch
from prefix_audit.core.fetch import MARKER, FetchError, PackagePin, fetch_wheel


@pytest.fixture
def wheel(tmp_path, monkeypatch):
    """A tiny wheel served by a stand-in for ``pip download`` (no network): its pin and the downloads made."""
    built = tmp_path / "demo_pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(built, "w") as zf:
        zf.writestr("demo_pkg/__init__.py", "VALUE = 1\n")
        zf.writestr("demo_pkg/data/tasks.json", json.dumps({"tasks": [1, 2, 3]}))
    downloads = []

    def pip_download(cmd, **_):
        dest = Path(cmd[cmd.index("-d") + 1])
        dest.mkdir(parents=True)
        time.sleep(0.3)  # as a download takes a while: a second fetch meanwhile finds nothing fetched yet
        shutil.copy(built, dest / built.name)
        downloads.append(dest)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(fetch.subprocess, "run", pip_download)
    return PackagePin("demo-pkg", "1.0", hashlib.sha256(built.read_bytes()).hexdigest()), downloads


def test_fetches_once_and_checks_the_digest(tmp_path, wheel, capsys):
    wheel, downloads = wheel
    resources = tmp_path / "resources"
    target = fetch_wheel(wheel, resources)
    assert (target / "demo_pkg" / "__init__.py").read_text() == "VALUE = 1\n"
    assert json.loads((target / MARKER).read_text())["sha256"] == wheel.sha256
    said = capsys.readouterr().err
    unpacked = sum(p.stat().st_size for p in (target / "demo_pkg").rglob("*") if p.is_file())
    size = (tmp_path / "demo_pkg-1.0-py3-none-any.whl").stat().st_size
    assert re.fullmatch(re.escape(f"prefix-audit: fetched demo-pkg==1.0 into {target} ({size / 1e3:.1f} kB download, "
                                  f"{unpacked / 1e3:.1f} kB unpacked, ") + r"\d+ s\)\n", said), said
    assert fetch_wheel(wheel, resources) == target and len(downloads) == 1  # idempotent
    assert capsys.readouterr().err == ""  # already there: nothing said
    with pytest.raises(FetchError, match="sha256 mismatch"):
        fetch_wheel(PackagePin(wheel.name, "1.0-other", "0" * 64), resources)


def test_a_second_fetch_at_once_waits_for_the_first_and_downloads_nothing(tmp_path, wheel, capsys):
    """Two fetches of one package at the same moment (a command's worker processes, two audits): the
    lock makes the second wait for the first, which alone downloads and says so."""
    wheel, downloads = wheel
    resources = tmp_path / "resources"
    start = threading.Barrier(2)
    results = []

    def fetch():
        start.wait()
        results.append(fetch_wheel(wheel, resources))

    threads = [threading.Thread(target=fetch) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [resources / wheel.dirname] * 2 and len(downloads) == 1
    assert len(re.findall(r"^prefix-audit: fetched demo-pkg==1\.0 ", capsys.readouterr().err, re.MULTILINE)) == 1


def test_a_lost_marker_is_put_back_without_replacing_the_package(tmp_path, wheel):
    """Snakemake removes a fetch job's output (the marker) before rerunning it, e.g. when a second
    workflow run planned the fetch before the first finished it; the first run's jobs are meanwhile
    reading the package, so its files must stay where they are (the same inodes)."""
    wheel, downloads = wheel
    resources = tmp_path / "resources"
    target = fetch_wheel(wheel, resources)
    module = target / "demo_pkg" / "__init__.py"
    (target / "demo_pkg" / "__pycache__").mkdir()  # written when a job imported it
    (target / "demo_pkg" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0" * 16)
    inode = module.stat().st_ino
    (target / MARKER).unlink()
    assert fetch_wheel(wheel, resources) == target
    assert module.stat().st_ino == inode and json.loads((target / MARKER).read_text())["sha256"] == wheel.sha256
    assert not [p for p in resources.iterdir() if p.is_dir() and p.name.startswith(".")]  # no staging folder left


def test_an_interrupted_fetch_is_replaced(tmp_path, wheel):
    wheel, downloads = wheel
    resources = tmp_path / "resources"
    target = fetch_wheel(wheel, resources)
    (target / MARKER).unlink()
    (target / "demo_pkg" / "data" / "tasks.json").unlink()  # unpacking stopped part way
    fetch_wheel(wheel, resources)
    assert json.loads((target / "demo_pkg" / "data" / "tasks.json").read_text()) == {"tasks": [1, 2, 3]}
    assert (target / MARKER).is_file()
