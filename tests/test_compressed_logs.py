"""Compressed logs and tars of run folders read as the plain ones (docs/definitions.md#reading-rules):
gzip, bzip2, xz and zstd told by content; the same records and numbers as the plain file (metamorphic);
a corrupt or truncated stream one located error, never its first entries taken for all; a tar of a run
folder unpacked safely, with the numbers of the folder."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import tarfile
import tempfile
from pathlib import Path

import pytest
import zstandard
from conftest import SHARED, read_imported
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tau_results import GREETING, STOP, agent_says, results_document, simulation, tool_call, user_says
from toolsandbox_runs import BRUNO, Call, ScenarioRun, write_run

from prefix_audit.core import archives
from prefix_audit.core.compressed import compression_of, content_sha256, open_bytes
from prefix_audit.core.cut_off import cut_off
from prefix_audit.core.decode import (
    DecodeError,
    first_json_key,
    first_json_line,
    iter_json_lines,
    plain_name,
    read_json_document,
)
from prefix_audit.core.records import BadLine, dumps
from prefix_audit.replay import registry
from prefix_audit.replay.scoring import ScoreReport, score_rollouts

COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
            ".zst": lambda data: zstandard.ZstdCompressor().compress(data)}
KIND = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd"}
LINES = b"".join(json.dumps({"id": i, "text": "é" * (i % 7), "n": [i] * 3}).encode() + b"\n" for i in range(400))


def _compressed(path: Path, suffix: str, into: Path | None = None) -> Path:
    """A compressed copy of ``path`` named ``<its name><suffix>`` (in ``into``, else beside it)."""
    target = (into or path.parent) / (path.name + suffix)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(COMPRESS[suffix](path.read_bytes()))
    return target


def _read_all(path: Path) -> list:
    return [(item.line, getattr(item, "value", None), getattr(item, "reason", None)) for item in iter_json_lines(path)]


# --- the decoding boundary ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", COMPRESS)
def test_every_compression_reads_as_the_plain_file(tmp_path, suffix):
    lines = tmp_path / "log.jsonl"
    lines.write_bytes(LINES + b"not json\n")
    document = tmp_path / "doc.json"
    document.write_text(json.dumps({"simulations": [{"a": 1}], "info": {}}))
    packed_lines, packed_document = _compressed(lines, suffix), _compressed(document, suffix)
    assert compression_of(packed_lines) == KIND[suffix] and compression_of(lines) is None
    assert _read_all(packed_lines) == _read_all(lines) and len(_read_all(lines)) == 401
    assert first_json_line(packed_lines) == first_json_line(lines) == {"id": 0, "text": "", "n": [0, 0, 0]}
    assert read_json_document(packed_document) == read_json_document(document)
    assert first_json_key(packed_document) == "simulations"
    # a compressed file's digest is its content's: the plain file's sha256sum
    assert content_sha256(packed_lines) == content_sha256(lines) == hashlib.sha256(lines.read_bytes()).hexdigest()
    assert cut_off(packed_lines) is None  # a whole stream passes, read to its end


def test_compression_is_told_by_content_not_by_name(tmp_path):
    gzipped = tmp_path / "results.json"
    gzipped.write_bytes(gzip.compress(b'{"a": 1}'))
    plain = tmp_path / "results.json.gz"
    plain.write_text('{"a": 2}')
    assert read_json_document(gzipped) == {"a": 1} and read_json_document(plain) == {"a": 2}
    assert plain_name("x_result.json.gz") == plain_name("x_result.json.zst") == "x_result.json"
    assert plain_name("x.json") == "x.json" and plain_name(".gz") == ".gz"


def test_streams_of_several_members_or_frames_read_whole(tmp_path):
    halves = LINES[: len(LINES) // 2], LINES[len(LINES) // 2:]
    for suffix in COMPRESS:  # gzip members, bzip2 and xz streams, zstd frames one after another
        path = tmp_path / f"two{suffix}"
        path.write_bytes(b"".join(COMPRESS[suffix](half) for half in halves))
        plain = tmp_path / "plain.jsonl"
        plain.write_bytes(LINES)
        assert _read_all(path) == _read_all(plain), suffix


def test_a_document_over_the_limit_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    from prefix_audit.core import decode

    monkeypatch.setattr(decode, "MAX_DOCUMENT_BYTES", 1000)
    bomb = tmp_path / "bomb.json.zst"
    bomb.write_bytes(COMPRESS[".zst"](b"[" + b"0," * 10**6 + b"0]"))
    with pytest.raises(DecodeError, match=r"bomb.json.zst decompresses \(zstd\) to over the 1,000-byte limit"):
        read_json_document(bomb)


def _plain(tmp_path: Path) -> Path:
    path = tmp_path / "log.jsonl"
    path.write_bytes(LINES)
    return path


def test_zstd_without_zstandard_says_what_to_install(tmp_path, monkeypatch):
    import sys

    path = _compressed(_plain(tmp_path), ".zst")
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(DecodeError, match=r"log.jsonl.zst is zstd-compressed: .*pip install zstandard"):
        cut_off(path)


HYPOTHESIS = settings(max_examples=60, deadline=None, derandomize=True,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])


@HYPOTHESIS
@given(suffix=st.sampled_from(list(COMPRESS)), share=st.floats(0, 1, exclude_max=True))
def test_a_cut_stream_is_one_error_never_a_shorter_file(tmp_path, suffix, share):
    whole = COMPRESS[suffix](LINES)
    path = tmp_path / f"cut{suffix}"
    path.write_bytes(whole[: max(6, int(len(whole) * share))])  # past the magic: still told compressed
    with pytest.raises(DecodeError, match=rf"cut{suffix} is truncated: its {KIND[suffix]} stream ends before"):
        cut_off(path)
    with pytest.raises(DecodeError):  # a reader that reads on meets the same error: never a clean end
        list(iter_json_lines(path))


@HYPOTHESIS
@given(suffix=st.sampled_from(list(COMPRESS)), at=st.floats(0, 1, exclude_max=True), byte=st.integers(0, 255))
def test_a_damaged_stream_reads_whole_or_fails_with_the_file_named(tmp_path, suffix, at, byte):
    damaged = bytearray(COMPRESS[suffix](LINES))
    damaged[int(len(damaged) * at)] = byte
    path = tmp_path / f"damaged{suffix}"
    path.write_bytes(bytes(damaged))
    try:
        items = list(iter_json_lines(path))
    except DecodeError as exc:
        assert str(exc).startswith(f"damaged{suffix}")
    else:  # a byte the format does not check (a header's timestamp, zstd without checksums): read as it is
        assert all(item.line for item in items)


# --- logs read through the importers -----------------------------------------------------------------


def _records(items, *names: tuple[str, str]) -> list[str]:
    """The rollout records and quarantine records of ``items`` as written, each file name written as
    the plain one's (``names``: (as read, plain))."""
    text = [dumps(i.rollout) if not isinstance(i, BadLine) else json.dumps(i.to_json(), sort_keys=True) for i in items]
    for read, plain in names:
        text = [t.replace(read, plain) for t in text]
    return text


def _bfcl_log(bfcl, folder: Path) -> tuple[Path, Path]:
    """A result file of two entries in the model folder ``folder/m`` (BFCL labels a log with its
    folder), and its score file beside it (one entry failed)."""
    from bfcl_logs import gold_entry, write_result_file, write_score_file

    result = write_result_file(folder / "m" / "BFCL_v3_multi_turn_base_result.json",
                               [gold_entry(bfcl, t) for t in ("multi_turn_base_1", "multi_turn_base_4")])
    score = write_score_file(folder / "m" / "BFCL_v3_multi_turn_base_score.json", 2, {"multi_turn_base_4": "wrong"})
    return result, score


@pytest.mark.parametrize("suffix", COMPRESS)
def test_a_truncated_compressed_log_is_one_quarantine_record(bfcl, resolve, tmp_path, suffix):
    result, _ = _bfcl_log(bfcl, tmp_path / "plain")
    packed = _compressed(result, suffix, tmp_path / "cut")
    whole = packed.read_bytes()
    packed.write_bytes(whole[: len(whole) * 9 // 10])  # its first entry decompresses whole
    items, report = read_imported([packed], resolve)
    [bad] = items
    assert isinstance(bad, BadLine) and (bad.path, bad.line) == (str(packed), 0)
    assert f"{packed.name} is truncated: its {KIND[suffix]} stream ends before its end marker" in bad.reason
    assert (report.rollouts, report.quarantined) == (0, 1)


@pytest.mark.parametrize("suffix", COMPRESS)
def test_a_compressed_bfcl_result_file_finds_its_score_file_and_records_which(bfcl, resolve, tmp_path, suffix):
    result, score = _bfcl_log(bfcl, tmp_path / "plain")
    expected = _records(read_imported([result], resolve)[0])
    both = _compressed(result, suffix, tmp_path / "both" / "m")
    _compressed(score, suffix, both.parent)
    alone = _compressed(result, suffix, tmp_path / "alone" / "m")
    (alone.parent / score.name).write_bytes(score.read_bytes())  # the score file plain beside it
    # the workflow's block depends on the score file found so (its companion)
    assert registry.companion_files("bfcl", both, {}) == [both.with_name(score.name + suffix)]
    for packed in (both, alone):
        items, _ = read_imported([packed], resolve)
        names = [(str(packed.parent), str(result.parent)), (result.name + suffix, result.name),
                 (score.name + suffix, score.name)]
        assert _records(items, *names) == expected, packed
        assert {i.rollout.task_id: i.rollout.recorded.y for i in items} == {"multi_turn_base_1": 1,
                                                                            "multi_turn_base_4": 0}
        # which score file: its content's sha256, the plain file's, as the docs say
        assert items[0].rollout.meta["bfcl_score_file"]["sha256"] == hashlib.sha256(score.read_bytes()).hexdigest()


USER = {"user_id": "mei_brown_7075"}


def _tau2_results(tau, tmp_path: Path) -> Path:
    reason = tau["tau_airline"].task("5").reason_for_call
    sims = [simulation("ok", "5", [GREETING, user_says(reason), *tool_call("a", "get_user_details", USER, "{}"),
                                   agent_says("Done."), STOP]),
            simulation("cut", "12", [GREETING, user_says("hi"), *tool_call(
                "e", "get_reservation_details", {"reservation_id": "YAX4DR"}, "{}")], termination="max_steps",
                       reward=0.0),
            simulation("truncated", "5", [GREETING, user_says(reason), tool_call("f", "get_user_details", USER, "{}")[0]])]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results_document(tau, sims)))
    return path


def test_a_compressed_tau2_results_file_gives_the_records_and_numbers_of_the_plain_one(tau, resolve, tmp_path):
    plain = _tau2_results(tau, tmp_path)
    items, _ = read_imported([plain], resolve)
    expected = _records(items)
    assert sum(isinstance(i, BadLine) for i in items) == 1 and len(items) == 3
    episodes, _ = score_rollouts(iter(i for i in items if not isinstance(i, BadLine)), resolve, ScoreReport())
    numbers = [(e.rollout.task_id, e.T, e.FED, e.category, e.Y) for e in episodes]
    for suffix in COMPRESS:
        packed = _compressed(plain, suffix)
        got, _ = read_imported([packed], resolve)
        assert _records(got, (str(packed), str(plain))) == expected, suffix
    episodes, _ = score_rollouts(iter(i for i in got if not isinstance(i, BadLine)), resolve, ScoreReport())
    assert [(e.rollout.task_id, e.T, e.FED, e.category, e.Y) for e in episodes] == numbers


# --- real logs (shared fixtures; absent in a fresh clone) ----------------------------------------------

FIXTURES = SHARED / "fixtures"
REAL_LOGS = ["real-logs/tau2/gemini-2.5-flash_airline_10tasks_2trials.json",
             "real-logs/tau-bench-v1/gpt-4.1-mini_retail_user-gpt-4.1_1trial.json",
             "real-logs/bfcl/xLAM-2-8b-fc-r_BFCL_v3_multi_turn_base_result.json",
             # published gzipped: read as found, and as its plain content
             "real-logs-5/tau-bench-v1/jibf__agent_hard_benchmark__tau-bench__results__tool-calling-airline-Qwen3-235B-"
             "A22B-Thinking-2507-FP8-0.0_range_0--1_user-openai-gpt-4o-20240806-llm_0816084901.json.gz"]


@pytest.mark.parametrize("name", REAL_LOGS, ids=lambda name: f"{name.split('/')[0]}:{Path(name).name[:48]}")
def test_real_logs_compressed_give_the_records_of_the_plain_ones(resolve, tmp_path, name):
    """Each log (its plain content) in a folder of the same name as its own (BFCL labels a log with
    it), beside its BFCL score file where it has one (compressed alike), in every format."""
    log = FIXTURES / name
    if not log.is_file():
        pytest.skip(f"no real log at {log}")
    score = log.with_name(log.name.replace("_result.json", "_score.json"))
    companions = [score] if score != log and score.is_file() else []
    plain = tmp_path / "plain" / log.parent.name / plain_name(log.name)
    plain.parent.mkdir(parents=True)
    for path in (log, *companions):
        (plain.parent / plain_name(path.name)).write_bytes(_content(path))
    expected = _records(read_imported([plain], resolve)[0])
    assert len(expected) >= 10
    for suffix in COMPRESS:
        folder = tmp_path / suffix.lstrip(".") / log.parent.name
        packed = _compressed(plain, suffix, folder)
        for path in companions:
            _compressed(plain.parent / path.name, suffix, folder)
        names = [(str(packed), str(plain)), *((p.name + suffix, p.name) for p in companions)]
        assert _records(read_imported([packed], resolve)[0], *names) == expected, suffix


def _content(path: Path) -> bytes:
    with open_bytes(path) as fh:
        return fh.read()


# --- tars of run folders -------------------------------------------------------------------------------

PHONE = BRUNO["phone_number"]
TOOLSANDBOX_RUN = [
    ScenarioRun("search_then_reply", [("user", f"Who has the number {PHONE}?"),
                                      ("calls", [Call("c1", "search_contacts", {"phone_number": PHONE}, result=[BRUNO])]),
                                      ("agent", "Bruno Okafor.")], allowed=["search_contacts"]),
    ScenarioRun("wifi_on", [("user", "Turn on wifi"), ("calls", [Call("c1", "set_wifi_status", {"on": True})]),
                            ("agent", "Done.")], similarity=0.5, allowed=["set_wifi_status"]),
]


def _tar(folder: Path, archive: Path, compress: str | None = None) -> Path:
    """``folder`` as a tar of itself (its name the top-level member), compressed with ``compress``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(folder, arcname=folder.name)
    archive.write_bytes(COMPRESS[compress](buffer.getvalue()) if compress else buffer.getvalue())
    return archive


def test_a_tar_of_a_run_folder_reads_as_the_folder(tau, resolve, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where archives are unpacked
    (tmp_path / "tmp").mkdir()
    run = write_run(tmp_path / "runs", TOOLSANDBOX_RUN)
    doc = json.loads(_tau2_results(tau, tmp_path).read_text())
    layout = tmp_path / "layout" / "my_run"  # tau2 1.0's directory layout
    (layout / "simulations").mkdir(parents=True)
    (layout / "results.json").write_text(json.dumps({k: v for k, v in doc.items() if k != "simulations"}))
    for sim in doc["simulations"]:
        (layout / "simulations" / f"{sim['id']}.json").write_text(json.dumps(sim))
    for folder, compress in ((run, ".gz"), (run, None), (run, ".zst"), (layout, ".xz"), (layout, ".bz2")):
        expected, plain = read_imported([folder], resolve)
        archive = _tar(folder, tmp_path / f"{folder.name}.tar{compress or ''}", compress)
        items, report = read_imported([archive], resolve)
        assert _records(items, (str(archive), str(folder.parent))) == _records(expected), archive.name
        assert report.logs == {str(archive): "toolsandbox" if folder == run else "tau"}
        # where the model name came from is named inside the archive, never in the unpacked folder
        assert [line.replace(str(archive), str(folder.parent)) for line in report.detail_lines()] == \
            plain.detail_lines() and any("model name" in line for line in report.detail_lines())
    assert not list((tmp_path / "tmp").iterdir())  # each unpacked folder removed once read


def _hostile_tar(path: Path, *members: tuple[tarfile.TarInfo, bytes | None]) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            info.size = len(data) if data is not None else 0
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    path.write_bytes(gzip.compress(buffer.getvalue()))
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


HOSTILE = {
    "a symbolic link": ([(_member("run/result_summary.json", tarfile.SYMTYPE, "/etc/passwd"), None)],
                        "member 'run/result_summary.json' is a symbolic link (to '/etc/passwd')"),
    "a hard link": ([(_member("run/a.json"), b"{}"), (_member("run/b.json", tarfile.LNKTYPE, "run/a.json"), None)],
                    "member 'run/b.json' is a hard link"),
    "a device": ([(_member("run/dev", tarfile.CHRTYPE), None)], "member 'run/dev' is a device or a FIFO"),
    "a path out of the folder": ([(_member("../../escaped.json"), b"{}")], "would land outside the folder"),
    "no file": ([(_member("run", tarfile.DIRTYPE), None)], "holds no file"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_tar_is_refused_whole_and_nothing_lands_outside(resolve, tmp_path, monkeypatch, case):
    unpacked = tmp_path / "a" / "b"  # where archives are unpacked: an escape would land in tmp_path
    unpacked.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(unpacked))
    members, said = HOSTILE[case]
    archive = _hostile_tar(tmp_path / "run.tar.gz", *members)
    items, report = read_imported([archive], resolve)
    [bad] = items
    assert (bad.path, bad.line) == (str(archive), 0) and said in bad.reason, bad.reason
    assert report.rollouts == 0 and not list(tmp_path.rglob("escaped.json")) and not list(unpacked.iterdir())


def test_an_archive_over_its_limits_or_cut_short_is_one_error(resolve, tmp_path, monkeypatch):
    run = write_run(tmp_path / "runs", TOOLSANDBOX_RUN)
    archive = _tar(run, tmp_path / "run.tar.gz", ".gz")
    monkeypatch.setattr(archives, "MAX_MEMBERS", 3)
    [bad], _ = read_imported([archive], resolve)
    assert "more than 3 members, over the limit of an archive of a log" in bad.reason
    monkeypatch.setattr(archives, "MAX_MEMBERS", 1000)
    monkeypatch.setattr(archives, "MAX_UNPACKED_BYTES", 1000)
    [bad], _ = read_imported([archive], resolve)
    assert "run.tar.gz unpacks to over 1,000 bytes" in bad.reason
    monkeypatch.undo()
    whole = _tar(run, tmp_path / "whole.tar")
    with tarfile.open(whole) as tar:
        header = tar.getmembers()[3].offset  # the standard library would end the archive at a header quietly
    for at in (header, header + 100, header + 700):  # before a header, inside one, inside a member's bytes
        cut = tmp_path / "cut.tar"
        cut.write_bytes(whole.read_bytes()[:at])
        [bad], _ = read_imported([cut], resolve)
        assert "cut.tar is not a whole tar archive" in bad.reason, at
