"""Logs that end early (issue 53): a file cut off inside its JSON — a copy, a download or a writer cut
short — is said to be, in one line naming the file, where it ends and what was read before it, in
every format, whether or not its format is named, named by hand or found in a walked folder; never a
silent success, a crash or "not a log any importer recognises". JSON Lines are read up to the cut, a
JSON document is refused whole (Inspect's ``.json`` read up to the cut, sample by sample)."""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest
from conftest import RESOURCES, SHARED, read_imported
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tau_results import GREETING, STOP, agent_says, results_document, simulation, tool_call, user_says
from toolsandbox_runs import BRUNO, Call, ScenarioRun, write_run

from prefix_audit.cli import main
from prefix_audit.core.compressed import open_bytes
from prefix_audit.core.cut_off import cut_off
from prefix_audit.core.decode import CUT_LINE, CutOffError, plain_name, read_json_document
from prefix_audit.core.json_text import JSON_DOCUMENT, JSON_LINES, ZIP_ARCHIVE, ends_inside_json
from prefix_audit.core.records import BadLine, dumps
from prefix_audit.ingest.imports import ImportReport

NOT_RECOGNISED = "not a log any importer recognises"
HYPOTHESIS = settings(max_examples=25, deadline=None, derandomize=True,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])


# --- where JSON ends (the decoder) -------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)
LOGS = st.one_of(st.lists(JSON_VALUES, max_size=4), st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(value=LOGS, indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans(), data=st.data())
def test_every_prefix_of_an_object_or_list_ends_inside_it_and_the_whole_does_not(value, indent, ascii_only, data):
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only).encode("utf-8")
    assert not ends_inside_json(text) and not ends_inside_json(text + b"\n")
    cut = data.draw(st.integers(1, len(text) - 1), label="cut") if len(text) > 1 else 0
    if cut and text[:cut].strip():
        assert ends_inside_json(text[:cut]), text[:cut]


@pytest.mark.parametrize("broken", [b'{"a": x}', b'{"a": 1,, "b"', b'{"a": 1}}', b'{"a": 1.5.', b"[1 2",
                                    b'{"a": "x\x01', b'{"a" t', b'{"a": 01', b'{"a": 1}\xc3', b"{truncated",
                                    b'{"a": tr ', b"", b"  "])
def test_json_broken_before_its_end_or_no_json_is_not_cut_off(broken):
    assert not ends_inside_json(broken)


def test_a_character_cut_in_two_is_a_cut_inside_a_string():
    assert ends_inside_json('{"a": "caf\u00e9'.encode("utf-8")[:-1])


# --- the check of a file -----------------------------------------------------------------------------------


def _lines(n: int) -> bytes:
    return b"".join(json.dumps({"id": f"e{i}", "result": [[["x" * i]]]}).encode() + b"\n" for i in range(n))


@HYPOTHESIS
@given(share=st.floats(0, 1, exclude_min=True, exclude_max=True))
def test_json_lines_cut_anywhere_are_cut_off_inside_their_line(share):
    whole = _lines(6)
    at = max(1, int(len(whole) * share))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x_result.json"
        path.write_bytes(whole[:at])
        found = cut_off(path)
    before = whole[:at].count(b"\n")
    if whole[at - 1:at] == b"\n":  # after a whole line: the log of the lines before, not cut
        assert found is None
    elif before == 0:  # inside the first line: nothing whole, a document of one line cut
        assert found is not None and found.shape == JSON_DOCUMENT and found.line == 1
    else:
        assert found is not None and (found.shape, found.line) == (JSON_LINES, before + 1)
        assert found.said == (f"x_result.json is cut off: it ends inside line {before + 1} (byte {at:,}), an "
                              f"incomplete JSON value")


@pytest.mark.parametrize("indent", [None, 2, 4])
@pytest.mark.parametrize("top", ["list", "simulations"])
def test_a_document_cut_says_where_and_how_many_entries_precede_the_cut(tmp_path, indent, top):
    entries = [{"id": i, "messages": [{"role": "user", "content": "hi " * i}]} for i in range(5)]
    doc = entries if top == "list" else {"info": {"x": 1}, "simulations": entries, "tail": 1}
    whole = json.dumps(doc, indent=indent).encode()
    listed = "its top-level list" if top == "list" else 'its "simulations" list'
    cuts = {whole.index(b'"id": 3') + 5: f" with 3 complete entries in {listed} before the cut",  # inside the fourth
            whole.index(b'"id": 0') + 5: f" with 0 complete entries in {listed} before the cut"}
    if top == "list":
        cuts[whole.rindex(b"]")] = " with 5 complete entries in its top-level list before the cut"
    else:
        cuts[whole.index(b'"tail"') + 3] = ""  # in no list
    path = tmp_path / "results.json"
    for at, preceding in cuts.items():
        path.write_bytes(whole[:at])
        text = whole[:at].decode().rstrip()
        line, column = text.count("\n") + 1, len(text) - text.rfind("\n") - 1
        found = cut_off(path)
        assert found is not None and found.shape == JSON_DOCUMENT
        assert found.said == (f"results.json is cut off: it ends inside line {line:,}, column {column:,} "
                              f"(byte {at:,}), an incomplete JSON document{preceding}")
        with pytest.raises(CutOffError) as raised:  # reading it says the same
            read_json_document(path)
        assert str(raised.value) == found.said


@pytest.mark.parametrize("whole", [_lines(3), _lines(3).rstrip(b"\n"), json.dumps([{"a": 1}], indent=2).encode(),
                                   json.dumps({"a": [1, 2]}).encode(), json.dumps({"a": 1}, indent=0).encode(),
                                   b"", b"\x00binary", b"# a readme\n"],
                         ids=["lines", "lines-without-last-break", "indented", "one-line", "indent-0", "empty",
                              "binary", "text"])
def test_whole_files_and_files_of_no_json_are_not_cut_off(tmp_path, whole):
    path = tmp_path / "log.json"
    path.write_bytes(whole)
    assert cut_off(path) is None
    path.write_bytes(gzip.compress(whole))
    assert cut_off(path) is None


def test_a_document_not_indented_cut_after_a_bracket_that_closes_a_line_is_cut_off(tmp_path):
    """Only an indented document's top-level bracket closes alone at a line's start; indented by 0,
    every one does."""
    path = tmp_path / "results.json"
    whole = json.dumps({"info": {"x": 1}, "simulations": [{"a": 1}, {"b": 2}]}, indent=0)
    for at in (whole.index("}") + 1, whole.rindex("}", 0, len(whole) - 1) + 1):
        path.write_text(whole[:at])
        found = cut_off(path)
        assert found is not None and found.shape == JSON_DOCUMENT, whole[:at]
    assert found.said.endswith('with 2 complete entries in its "simulations" list before the cut')


def test_a_corrupt_line_or_document_is_not_a_cut(tmp_path):
    path = tmp_path / "log.json"
    path.write_bytes(_lines(2) + b'{"id": x}\n' + _lines(2))  # a bad line in the middle: invalid, not cut
    assert cut_off(path) is None
    path.write_bytes(_lines(2) + b'{"id": "e9", "result": x')  # a last line broken before its end
    assert cut_off(path) is None
    path.write_bytes(b'[\n  {"a": 1},\n  {"a": x},\n  {"a": 2')  # broken before a cut: said broken when read
    assert cut_off(path) is None
    with pytest.raises(CutOffError.__mro__[1], match="is not valid JSON: Expecting value: line 3") as raised:
        read_json_document(path)
    assert not isinstance(raised.value, CutOffError)


def test_a_compressed_file_is_judged_by_its_content_and_a_cut_stream_is_an_error(tmp_path):
    path = tmp_path / "log.json.gz"
    whole = _lines(4)
    path.write_bytes(gzip.compress(whole[:-20]))
    found = cut_off(path)
    assert found is not None and found.said.endswith(f"(byte {len(whole) - 20:,} of its decompressed content), an "
                                                     f"incomplete JSON value")
    packed = gzip.compress(whole)
    path.write_bytes(packed[:-10])
    with pytest.raises(CutOffError, match=rf"^log.json.gz is truncated: its gzip stream ends before its end marker "
                                          rf"\(the file is cut off at byte {len(packed) - 10:,}\)$"):
        cut_off(path)


def test_a_zip_without_its_end_is_cut_off(tmp_path):
    path = tmp_path / "log.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps({"x": "y" * 5000}))
    assert cut_off(path) is None
    whole = path.read_bytes()
    path.write_bytes(whole[:len(whole) // 2])
    found = cut_off(path)
    assert found is not None and found.shape == ZIP_ARCHIVE
    assert found.said == (f"log.eval is cut off: it ends at byte {len(whole) // 2:,} before the end of its zip archive "
                          f"(its central directory)")


# --- logs of every format, cut anywhere, read by the import --------------------------------------------------

def _bfcl_result(folder: Path) -> Path:
    path = folder / "m" / "BFCL_v3_multi_turn_base_result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": f"multi_turn_base_{i}", "result": [[[]]] * 2}) + "\n" for i in range(4)))
    return path


def _bfcl_score(folder: Path) -> Path:
    from bfcl_logs import write_score_file

    return write_score_file(folder / "m" / "BFCL_v3_multi_turn_base_score.json", 6,
                            {f"multi_turn_base_{i}": "wrong" for i in range(4)})


def _agentprocessbench(folder: Path) -> Path:
    path = folder / "records.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"data_source": "tau2_airline", "messages": [{"role": "user", "content": "hi"}],
                                        "reward_info": {"reward": 0.0},
                                        "meta": {"task_id": str(i), "domain": "airline",
                                                 "termination_reason": "user_stop"}}) + "\n" for i in range(4)))
    return path


def _tau2(folder: Path, tau) -> Path:
    reason = tau["tau_airline"].task("5").reason_for_call
    sims = [simulation(f"s{i}", "5", [GREETING, user_says(reason), *tool_call("a", "get_user_details",
                                                                                {"user_id": "mei_brown_7075"}, "{}"),
                                       agent_says("Done."), STOP]) for i in range(3)]
    path = folder / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results_document(tau, sims), indent=2))
    return path


def _tau_v1(folder: Path) -> Path:
    path = folder / "tool-calling-gpt-4o-retail.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([{"task_id": i, "reward": 1.0, "info": {}, "trial": 0,
                                 "traj": [{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"}]}
                                for i in range(3)], indent=2))
    return path


def _inspect_eval(folder: Path) -> Path:
    path = folder / "2026-12-01T10-00-00_tau2-airline_A.eval"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps({"version": 2, "status": "success", "pad": "x" * 3000}))
        archive.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "pad": "y" * 3000}))
    return path


FILE_LOGS = {"bfcl": _bfcl_result, "bfcl-score": _bfcl_score, "agentprocessbench": _agentprocessbench,
             "tau2": _tau2, "tau-v1": _tau_v1, "inspect-eval": _inspect_eval}
FORMAT = {"bfcl": "bfcl", "bfcl-score": "bfcl", "agentprocessbench": "agentprocessbench", "tau2": "tau",
          "tau-v1": "tau", "inspect-eval": "inspect"}


def _said(report: ImportReport, name: str) -> str:
    """The one line the report says of the cut log ``name``; its quarantine never calls it unrecognised."""
    assert len(report.cut_off) == 1, report.cut_off
    [line] = report.cut_off
    assert line.startswith(f"{name} ") and " cut off " in line.replace(":", " "), line
    assert not any(NOT_RECOGNISED in cause or "known format" in cause for cause in report.quarantine.lines())
    assert not any(NOT_RECOGNISED in cause for cause in report.skipped.lines())
    return line


@pytest.mark.parametrize("kind", FILE_LOGS)
def test_a_log_of_any_format_cut_anywhere_is_said_cut_off_whatever_names_it(kind, tau, resolve):
    """Named by hand without and with its format (and with another format), and found in a walked folder."""
    with tempfile.TemporaryDirectory() as name:
        made = FILE_LOGS[kind](Path(name) / "whole", **({"tau": tau} if kind == "tau2" else {}))
        whole = made.read_bytes()

    @HYPOTHESIS
    @given(share=st.floats(0, 1, exclude_min=True, exclude_max=True))
    def cut_anywhere(share):
        at = max(1, int(len(whole) * share))
        # a whole line last, with or without its line break: the log of those lines (tested below); inside
        # a zip's 4-byte signature: no zip yet
        if b"\n" in whole[at - 1:at + 1] and FORMAT[kind] in ("bfcl", "agentprocessbench") \
                or kind == "inspect-eval" and at < 4:
            return
        with tempfile.TemporaryDirectory() as name:
            log = Path(name) / "logs" / made.relative_to(made.parents[1] if kind.startswith("bfcl") else made.parent)
            log.parent.mkdir(parents=True)
            log.write_bytes(whole[:at])
            other = "bfcl" if FORMAT[kind] != "bfcl" else "tau"
            for paths, fmt in (([log], None), ([log], FORMAT[kind]), ([Path(name) / "logs"], None), ([log], other)):
                items, report = read_imported(paths, resolve, kind=fmt)
                line = _said(report, log.name)
                if fmt == other:  # read as another format: still said cut off, whatever that importer made of it
                    continue
                bad = [i for i in items if isinstance(i, BadLine)]
                if any(i.cause == CUT_LINE for i in bad):  # JSON Lines read up to the cut: every entry before it
                    before = whole[:at].count(b"\n") - (kind == "bfcl-score")  # a score file's summary is no entry
                    entries = "entry was" if before == 1 else "entries were"
                    assert line.endswith(f"; {before:,} {entries} read before it")
                    assert len(items) - 1 == before
                else:  # refused whole: one record for the log, saying it is cut off
                    assert line.endswith("; none of it is audited") and [i.line for i in items] == [0]
                    assert line.removesuffix("; none of it is audited") in bad[0].reason

    cut_anywhere()


def test_json_lines_cut_after_a_whole_line_are_the_log_of_those_lines(resolve, tmp_path):
    """Many writers leave out the last line break: a log whose last line is whole is not cut off."""
    whole = _bfcl_result(tmp_path / "a")
    short = whole.read_text().splitlines()[:2]
    for text in ("\n".join(short) + "\n", "\n".join(short)):
        whole.write_text(text)
        items, report = read_imported([whole], resolve)
        assert report.cut_off == [] and len(items) == 2 and not any(isinstance(i, BadLine) for i in items)


@pytest.mark.parametrize("cut", ["conversation", "execution_context", "result_summary"])
def test_a_cut_file_of_a_toolsandbox_run_folder_is_said_cut_off_and_costs_what_it_holds(resolve, tmp_path, cut):
    run = write_run(tmp_path / "data", [
        ScenarioRun("search", [("user", "Find Bruno"), ("calls", [Call("c1", "search_contacts", {"name": "Bruno"},
                                                                       result=[BRUNO])]), ("agent", "Found.")]),
        ScenarioRun("hello", [("user", "hi"), ("agent", "Hello.")])])
    file = run / "result_summary.json" if cut == "result_summary" else run / "trajectories" / "search" / f"{cut}.json"
    text = json.dumps(json.loads(file.read_text()), indent=2)
    file.write_text(text[:len(text) * 2 // 3])
    place = file.relative_to(run.parent).as_posix()
    for paths, fmt in (([run], None), ([run], "toolsandbox"), ([tmp_path / "data"], None)):
        items, report = read_imported(paths, resolve, kind=fmt)
        line = _said(report, place)
        assert line.endswith("; none of it is audited")
        rollouts = [i.rollout.task_id for i in items if not isinstance(i, BadLine)]
        assert rollouts == ([] if cut == "result_summary" else ["hello"])
        [bad] = [i for i in items if isinstance(i, BadLine)]
        assert f"{file.name} is cut off: it ends inside line " in bad.reason


@pytest.mark.parametrize("cut", ["results.json", "simulations/s1.json"])
def test_a_cut_file_of_a_tau2_directory_layout_is_said_cut_off(tau, resolve, tmp_path, cut):
    doc = json.loads(_tau2(tmp_path / "doc", tau).read_text())
    layout = tmp_path / "runs" / "airline_run"
    (layout / "simulations").mkdir(parents=True)
    (layout / "results.json").write_text(json.dumps({k: v for k, v in doc.items() if k != "simulations"}, indent=2))
    for sim in doc["simulations"]:
        (layout / "simulations" / f"{sim['id']}.json").write_text(json.dumps(sim, indent=2))
    text = (layout / cut).read_text()
    (layout / cut).write_text(text[:len(text) // 2])
    for paths, fmt in (([layout], None), ([layout], "tau"), ([tmp_path / "runs"], None)):
        items, report = read_imported(paths, resolve, kind=fmt)
        assert _said(report, f"airline_run/{cut}").endswith("; none of it is audited")
        rollouts = [i.rollout.rollout_id for i in items if not isinstance(i, BadLine)]
        assert len(rollouts) == (0 if cut == "results.json" else 2)


def test_a_tar_or_a_compressed_stream_cut_short_is_said_cut_off(resolve, tmp_path):
    run = write_run(tmp_path / "runs", [ScenarioRun("hello", [("user", "hi"), ("agent", "Hello.")])])
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(run, arcname=run.name)
    archive = tmp_path / "logs" / "run.tar"
    archive.parent.mkdir()
    archive.write_bytes(buffer.getvalue()[:len(buffer.getvalue()) // 2])
    packed = tmp_path / "logs" / "x_result.json.gz"
    packed.write_bytes(gzip.compress(_lines(50))[:-30])
    for log, said in ((archive, "run.tar is not a whole tar archive: it is cut off at byte "),
                      (packed, "x_result.json.gz is truncated: its gzip stream ends before its end marker (the file "
                               "is cut off at byte ")):
        items, report = read_imported([log], resolve)
        assert _said(report, log.name).startswith(said) and report.cut_off[0].endswith("; none of it is audited")
        assert [i.line for i in items] == [0] and said in items[0].reason
    items, report = read_imported([archive.parent], resolve)  # a walk reads both
    assert [line.split(" ")[0] for line in report.cut_off] == ["run.tar", "x_result.json.gz"]


# --- what the lines before a cut give (metamorphic) -----------------------------------------------------------


@pytest.fixture(scope="module")
def gold_lines(bfcl) -> list[str]:
    from bfcl_logs import gold_entry

    return [json.dumps(gold_entry(bfcl, t)) + "\n" for t in ("multi_turn_base_1", "multi_turn_base_4")] * 2


@HYPOTHESIS
@given(keep=st.integers(1, 3), share=st.floats(0, 1, exclude_max=True))
def test_json_lines_cut_inside_a_line_read_as_the_lines_before_it(gold_lines, resolve, keep, share):
    """The rollouts of a BFCL result file cut inside line k + 1 are those of its first k lines, byte for
    byte, and the cut line is one quarantine record saying the log is cut off."""
    with tempfile.TemporaryDirectory() as name:
        cut = Path(name) / "cut" / "m" / "BFCL_v3_multi_turn_base_result.json"
        first = Path(name) / "first" / "m" / cut.name
        for path in (cut, first):
            path.parent.mkdir(parents=True)
        line = gold_lines[keep].encode()
        cut.write_bytes("".join(gold_lines[:keep]).encode() + line[:1 + int((len(line) - 3) * share)])  # before its "}"
        first.write_text("".join(gold_lines[:keep]))
        got, report = read_imported([cut], resolve)
        expected, _ = read_imported([first], resolve)
        [bad] = [i for i in got if isinstance(i, BadLine)]
        assert (bad.line, bad.cause) == (keep + 1, CUT_LINE)
        assert [dumps(i.rollout) for i in got if not isinstance(i, BadLine)] == \
            [dumps(i.rollout).replace(str(first.parents[1]), str(cut.parents[1])) for i in expected]
        assert report.cut_off == [f"{cut.name} is cut off: it ends inside line {keep + 1} "
                                  f"(byte {cut.stat().st_size:,}), an incomplete JSON value; "
                                  f"{keep} {'entry was' if keep == 1 else 'entries were'} read before it"]


@pytest.mark.slow
def test_the_audit_of_a_log_cut_inside_a_line_is_that_of_the_lines_before_and_strict_fails(gold_lines, tmp_path,
                                                                                            capsys):
    lines = gold_lines
    cut, first = tmp_path / "cut" / "m" / "BFCL_v3_multi_turn_base_result.json", tmp_path / "first" / "m" / \
        "BFCL_v3_multi_turn_base_result.json"
    for path, text in ((cut, lines[0] + lines[1][:200]), (first, lines[0])):
        path.parent.mkdir(parents=True)
        path.write_text(text)
    options = ["--no-health", "--resamples", "50", "--resources", str(RESOURCES)]
    assert main(["audit", "--no-figures", str(first), "-o", str(tmp_path / "a_first"), "--strict", *options]) == 0
    capsys.readouterr()
    assert main(["audit", "--no-figures", str(cut), "-o", str(tmp_path / "a_cut"), *options]) == 0
    said = (f"WARNING: {cut.name} is cut off: it ends inside line 2 (byte {cut.stat().st_size:,}), an incomplete JSON "
            f"value; 1 entry was read before it")
    assert said in capsys.readouterr().err.splitlines()
    assert main(["audit", "--no-figures", str(cut), "-o", str(tmp_path / "a_strict"), "--strict", *options]) == 3
    assert said in capsys.readouterr().err.splitlines()
    scored = sorted(p.relative_to(tmp_path / "a_first") for p in (tmp_path / "a_first").rglob("*.parquet"))
    assert scored and all((tmp_path / "a_cut" / p).read_bytes() == (tmp_path / "a_first" / p).read_bytes()
                          for p in scored if p.parts[0] in ("scored", "fed"))
    quarantine = [json.loads(line) for line in
                  (tmp_path / "a_cut" / "rollouts" / "imported" / "quarantine.jsonl").read_text().splitlines()]
    assert [(q["line"], q["cause"]) for q in quarantine] == [(2, CUT_LINE)]
    assert main(["import", "bfcl", str(cut), "-o", str(tmp_path / "r.jsonl"), "--resources", str(RESOURCES)]) == 0
    assert said in capsys.readouterr().err.splitlines()


@pytest.mark.slow
def test_an_inspect_json_log_cut_short_reads_its_samples_before_the_cut_and_says_so(inspect_logs, resolve, tmp_path):
    whole = inspect_logs["bfcl_json"].read_bytes()
    for share in (0.5, 0.8):
        log = tmp_path / f"cut_{share}" / "2026-12-01T10-00-00_bfcl_cut.json"
        log.parent.mkdir()
        log.write_bytes(whole[:int(len(whole) * share)])
        for paths, fmt in (([log], None), ([log], "inspect"), ([log.parent], None)):
            items, report = read_imported(paths, resolve, kind=fmt)
            read = sum(not isinstance(i, BadLine) for i in items)
            assert 0 < read < len(items)
            assert re.fullmatch(rf"{re.escape(log.name)} is cut off: it ends inside line [\d,]+, column [\d,]+ \(byte "
                                rf"{int(len(whole) * share):,}\), an incomplete JSON document with [\d,]+ complete "
                                rf"entr(y|ies) in its \"samples\" list before the cut; {read:,} entr(y was|ies were) "
                                rf"read before it", _said(report, log.name))


# --- real logs (shared fixtures; absent in a fresh clone) -----------------------------------------------------

FIXTURES = SHARED / "fixtures"
REAL = ["real-logs/bfcl/gpt-oss-20b_BFCL_v4_multi_turn_base_result.json",
        "real-logs/bfcl/xLAM-2-8b-fc-r_BFCL_v3_multi_turn_base_score.json",  # no line break after its last line
        "real-logs/tau2/gpt-4.1_retail_40tasks_1trial.json",
        "real-logs/tau-bench-v1/Qwen3-8B_react-strategy_retail_user-Qwen3-32B.json",
        "labels/apb_tau2_subset.jsonl",
        "real-logs-5/tau2/sierra-research__tau2-bench__src__experiments__model_training__results__gpt-4.1_telecom_"
        "no-user_gpt-4.1_1trials.json.gz"]


def _real(name: str) -> Path:
    log = FIXTURES / name
    if not log.is_file():
        pytest.skip(f"no real log at {log}")
    return log


def test_no_real_log_is_called_cut_off():
    logs = [p for p in sorted(FIXTURES.rglob("*")) if p.is_file() and p.suffix not in (".md", ".txt")]
    if not logs:
        pytest.skip(f"no real logs under {FIXTURES}")
    assert [p for p in logs if cut_off(p) is not None] == []


@pytest.mark.parametrize("name", REAL, ids=lambda name: Path(name).name[:40])
def test_real_logs_cut_at_a_few_places_are_said_cut_off(resolve, tmp_path, name):
    log = _real(name)
    with open_bytes(log) as fh:
        content = fh.read()
    for share in (0.1, 0.55, 0.93):
        at = int(len(content) * share)
        at += content[at - 1:at] == b"\n"  # inside a line, not after one
        cut = tmp_path / f"cut_{share}" / plain_name(log.name)
        cut.parent.mkdir()
        cut.write_bytes(content[:at])
        found = cut_off(cut)
        assert found is not None and found.said.startswith(f"{cut.name} is cut off: it ends inside line ")
        assert f"(byte {at:,})" in found.said
        if share == 0.55:
            for paths in ([cut], [cut.parent]):
                assert _said(read_imported(paths, resolve)[1], cut.name).startswith(found.said)
