"""An output folder replaced whole (core/output_tree.py): built beside, swapped in as one step, the
previous tree byte for byte after any failure, kill or race."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from prefix_audit.core import output_tree
from prefix_audit.core.io import MANIFEST
from prefix_audit.core.output_tree import replaced_tree


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (hidden ones too) with its sha256, and every folder (empty ones too)."""
    out = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
    return out


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


OLD = {"scored/a/episodes.parquet": "old a", "scored/b/episodes.parquet": "old b", "tables/t.md": "old table"}
NEW = {"scored/a/episodes.parquet": "new a", "tables/t.md": "new table", "site/index.html": "<p>"}


@pytest.fixture
def previous(tmp_path: Path) -> Path:
    """An output folder holding an earlier run's tree and a file of the user's."""
    out = tmp_path / "out"
    with replaced_tree(out) as tree:
        write_tree(tree.path, OLD)
    (out / "notes.md").write_text("the user's own notes\n")
    return out


def test_a_new_tree_replaces_the_old_one_whole_and_keeps_the_users_files(previous):
    inode = (previous / "notes.md").stat().st_ino
    with replaced_tree(previous) as tree:
        assert tree.path.parent == previous.parent and tree.path.name.startswith(".out.")
        write_tree(tree.path, NEW)
        (tree.path / "empty" / "folder").mkdir(parents=True)  # made and left empty: not in the new tree
    after = snapshot(previous)
    assert sorted(after) == sorted({*NEW, "notes.md", MANIFEST, "scored", "scored/a", "tables", "site"})
    assert (previous / "notes.md").stat().st_ino == inode  # the same file, carried by a hard link
    listing = json.loads((previous / MANIFEST).read_text())["files"]
    assert listing == {name: hashlib.sha256(text.encode()).hexdigest() for name, text in sorted(NEW.items())}
    assert tree.previous.keys() == OLD.keys() and tree.kept == ["notes.md"] and not tree.in_place
    assert [p.name for p in previous.parent.iterdir()] == ["out"]  # no staging folder left


def test_an_error_leaves_the_folder_byte_for_byte(previous):
    before = snapshot(previous)
    with pytest.raises(RuntimeError), replaced_tree(previous) as tree:
        write_tree(tree.path, NEW)
        raise RuntimeError("disk full")
    assert snapshot(previous) == before
    assert [p.name for p in previous.parent.iterdir()] == ["out"]


def test_an_error_creates_nothing_not_even_the_folders_above(tmp_path):
    with pytest.raises(KeyboardInterrupt), replaced_tree(tmp_path / "a" / "b" / "out") as tree:
        write_tree(tree.path, NEW)
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    with replaced_tree(tmp_path / "a" / "b" / "out") as tree:
        write_tree(tree.path, NEW)
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["out"]


def test_owned_names_of_an_older_run_are_never_carried(tmp_path):
    out = tmp_path / "stats"
    write_tree(out, {"paired.parquet": "an older run's", "stats.parquet": "old", "notes.md": "mine"})
    with replaced_tree(out, owned=("paired.parquet",)) as tree:
        write_tree(tree.path, {"stats.parquet": "new"})
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "notes.md", "stats.parquet"]
    assert tree.kept == ["notes.md"]


def test_an_unreadable_listing_keeps_every_file(previous):
    (previous / MANIFEST).write_text("{not json")
    with replaced_tree(previous) as tree:
        write_tree(tree.path, {"tables/t.md": "new"})
    assert (previous / "scored" / "b" / "episodes.parquet").read_text() == "old b"  # nobody's to remove
    assert "scored/b/episodes.parquet" in tree.kept


def test_the_working_folder_is_committed_in_place(previous, monkeypatch):
    monkeypatch.chdir(previous)  # exchanging it would remove the folder this process works in
    with replaced_tree(".") as tree:
        assert tree.in_place and tree.path.parent == previous
        write_tree(tree.path, NEW)
    assert Path.cwd() == previous and (previous / "site" / "index.html").read_text() == "<p>"
    assert not (previous / "scored" / "b").exists()  # the old tree's own files went, and their folder
    assert sorted(snapshot(previous)) == sorted({*NEW, "notes.md", MANIFEST, "scored", "scored/a", "tables", "site"})


@pytest.mark.parametrize("failure", ["no exchange", "no hard links"])
def test_a_file_system_without_exchange_or_links_commits_in_place(previous, monkeypatch, failure):
    if failure == "no exchange":
        monkeypatch.setattr(output_tree, "_exchange", lambda a, b: False)
    else:
        def cross_device(*args, **kwargs):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        monkeypatch.setattr(os, "link", cross_device)
    with replaced_tree(previous) as tree:
        write_tree(tree.path, NEW)
    assert tree.in_place
    assert sorted(snapshot(previous)) == sorted({*NEW, "notes.md", MANIFEST, "scored", "scored/a", "tables", "site"})
    assert (previous / "notes.md").read_text() == "the user's own notes\n"
    assert [p.name for p in previous.parent.iterdir()] == ["out"]


def test_a_symbolic_link_to_the_folder_stays_a_link(previous, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(previous)
    with replaced_tree(link) as tree:
        write_tree(tree.path, NEW)
    assert link.is_symlink() and (previous / "site" / "index.html").is_file()


def test_a_file_in_the_way_is_refused_before_anything(tmp_path):
    (tmp_path / "out").write_text("")
    with pytest.raises(ValueError, match="a file is in the way"), replaced_tree(tmp_path / "out"):
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


# A writer in its own process, killed with SIGKILL at one step of the replacement.
_KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from prefix_audit.core import output_tree

    out, step = Path(sys.argv[1]), sys.argv[2]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if step == "carrying":
        output_tree._carry = lambda *args: die()
    exchange = output_tree._exchange
    if step == "exchange":
        output_tree._exchange = lambda a, b: die()
    if step == "after exchange":
        output_tree._exchange = lambda a, b: exchange(a, b) and die()
    with output_tree.replaced_tree(out) as tree:
        for name, text in {NEW!r}.items():
            (tree.path / name).parent.mkdir(parents=True, exist_ok=True)
            (tree.path / name).write_text(text)
        if step == "building":
            die()
""").replace("{NEW!r}", repr(NEW))


@pytest.mark.parametrize("step", ["building", "carrying", "exchange", "after exchange"])
def test_a_writer_killed_at_any_step_leaves_one_whole_tree(previous, step):
    before = snapshot(previous)
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(previous), step], capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    after = snapshot(previous)
    if step == "after exchange":  # the new tree is in place, whole; the old one waits at the staging name
        assert sorted(after) == sorted({*NEW, "notes.md", MANIFEST, "scored", "scored/a", "tables", "site"})
    else:
        assert after == before
    [leftover] = [p for p in previous.parent.iterdir() if p.name != "out"]
    assert leftover.name.startswith(".out.") and leftover.name.endswith(".staging")
    with replaced_tree(previous) as tree:  # the next writer removes what the killed one left
        write_tree(tree.path, {"tables/t.md": "next"})
    assert [p.name for p in previous.parent.iterdir()] == ["out"]


_SLOW_WRITER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from prefix_audit.core import output_tree

    out, name, ready, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
    with output_tree.replaced_tree(out) as tree:
        for n in range(50):
            (tree.path / name / f"{n}.txt").parent.mkdir(parents=True, exist_ok=True)
            (tree.path / name / f"{n}.txt").write_text(name)
        ready.write_text("")
        while not go.exists():
            time.sleep(0.01)
""")


def test_two_writers_at_once_leave_one_of_their_trees_whole(previous, tmp_path):
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, str(previous), name, str(tmp_path / f"{name}.ready"),
                               str(go)]) for name in ("first", "second")]
    while not all((tmp_path / f"{name}.ready").exists() for name in ("first", "second")):
        assert all(p.poll() is None for p in procs)
    go.write_text("")  # both swap at once
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    files = {name for name, digest in snapshot(previous).items() if digest != "folder"}
    listing = json.loads((previous / MANIFEST).read_text())["files"]
    [winner] = {name.split("/")[0] for name in listing}
    assert files == {*listing, MANIFEST, "notes.md"} and len(listing) == 50 and winner in ("first", "second")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []


# --- every command that writes a folder ----------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "BFCL_v4_multi_turn_base_result.json"
PLUGINS = Path(__file__).resolve().parent / "plugins"


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> Path:
    from conftest import RESOURCES

    from prefix_audit.cli import main

    out = tmp_path_factory.mktemp("audited") / "out"
    assert main(["audit", "--no-figures", str(EXAMPLE), "-o", str(out), "--model", "m", "--resamples", "50", "--no-health",
                 "--no-site", "--resources", str(RESOURCES)]) == 0
    return out


def _commands(audited: Path) -> dict[str, list[str]]:
    from conftest import RESOURCES

    return {
        "audit": ["audit", "--no-figures", str(EXAMPLE), "--model", "m", "--resamples", "50", "--no-health",
                  "--resources", str(RESOURCES)],
        "score": ["score", str(audited / "rollouts" / "imported" / "bfcl_v3" / "m" / "imported.jsonl"),
                  "--resources", str(RESOURCES)],
        "stats": ["stats", str(audited / "fed" / "episodes.parquet"), "--resamples", "50"],
        "tables": ["tables", str(audited / "stats")],
        "view": ["view", str(audited)],
    }


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("command", ["audit", "score", "stats", "tables", "view"])
def test_a_command_that_fails_at_the_last_step_leaves_its_folder_byte_for_byte(audited, tmp_path, monkeypatch,
                                                                               capsys, command):
    from prefix_audit.cli import main

    out = tmp_path / "out"
    argv = [*_commands(audited)[command], "-o", str(out)]
    assert main(argv) == 0
    (out / "notes.md").write_text("mine\n")
    before = snapshot(out)
    assert MANIFEST in before
    capsys.readouterr()
    monkeypatch.setattr(output_tree, "_swap_in", _disk_full)  # the whole new tree is built, then the disk fills
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err
    assert snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


_FAILING_CLI = textwrap.dedent("""
    import errno, sys
    from prefix_audit.cli import main
    from prefix_audit.core import output_tree

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if sys.argv[1] == "fail":
        output_tree._swap_in = disk_full
    sys.exit(main(sys.argv[2:]))
""")


def test_tasks_that_fail_at_the_last_step_leave_its_folder_byte_for_byte(tmp_path):
    """`tasks` of the test plugin's benchmark (tests/plugins/toy_bench.py), in processes of their own."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "PYTHONHASHSEED": "0"}
    argv = ["tasks", "toy_lights", "-o", str(out), "--plugin", "toy_bench", "--workers", "1"]

    def run(mode: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", _FAILING_CLI, mode, *argv], env=env, capture_output=True,
                              text=True, timeout=300)

    assert run("pass").returncode == 0
    before = snapshot(out)
    assert "tasks.parquet" in before and "tables/table_task_health.md" in before
    failed = run("fail")
    assert failed.returncode == 2 and "No space left on device" in failed.stderr
    assert snapshot(out) == before and [p.name for p in tmp_path.iterdir()] == ["out"]
