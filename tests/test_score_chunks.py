"""A big block scored in parts (workflow rule score_chunk, config score_chunk_mib): the parts, gathered
in order, give the same bytes as one scoring of the whole file."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import RESOURCES, ROOT
from prefix_audit.core.decode import BadLine, raw_json_line_range, raw_json_lines
from prefix_audit.core.records import dumps
from prefix_audit.replay import registry
from prefix_audit.replay.scored_lines import (
    gather_block,
    read_scored_lines,
    score_line_range,
    score_parts,
    write_scored_lines,
)
from prefix_audit.replay.scoring import ScoredLine, ScoreOutputs, score_file

OUTPUTS = ("actions.parquet", "episodes.parquet", "quarantine.jsonl")


@pytest.fixture(scope="module")
def rollouts_file(bfcl, tmp_path_factory):
    """Imported BFCL rollouts (records of a log, so the trust columns are set) with what a block's file
    can hold: a rollout id repeated later on, a line that is not JSON, a record of an unknown task,
    blank lines."""
    from bfcl_logs import gold_entry, write_result_file

    from prefix_audit.ingest.imports import read_logs

    root = tmp_path_factory.mktemp("chunks")
    log = root / "logs" / "BFCL_v4_multi_turn_base_result.json"
    entries = [gold_entry(bfcl, f"multi_turn_base_{n}") for n in (1, 4, 6)]  # with the run's inference log
    entries.insert(1, {"id": "multi_turn_base_2", "result": "Error during inference: 503", "traceback": ""})
    entries.append({"id": "multi_turn_base_3", "result": [[[]] for _ in bfcl.entry("multi_turn_base_3").ground_truth]})
    write_result_file(log, entries)
    records = [json.loads(dumps(i.rollout)) for i in read_logs([log], registry.resolver(RESOURCES, {}))
               if hasattr(i, "rollout")]
    assert len(records) >= 3
    lines = [json.dumps(r) for r in records]
    lines.insert(2, "{not json")
    lines.insert(3, "")  # blank: no record, but it counts in the line numbers
    lines.append(json.dumps(records[0]))  # a duplicate, far from the first
    lines.append(json.dumps(records[1] | {"rollout_id": "x-unknown", "task_id": "multi_turn_base_99999"}))
    lines.append(json.dumps(records[1]))  # another duplicate, on the last line
    path = root / "rollouts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _resolver():
    return registry.resolver(RESOURCES, {})  # every pinned BFCL release present, whatever ran before


def _whole(path: Path, out: Path) -> dict[str, bytes]:
    score_file(path, ScoreOutputs.in_dir(out), _resolver())
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def _in_parts(path: Path, out: Path, parts: int, workers: int = 1) -> dict[str, bytes]:
    files = []
    for part in range(parts):
        lines = score_line_range(path, part, parts, _resolver(), workers=workers)
        files.append(out / f"part{part}.jsonl")
        write_scored_lines(files[-1], lines, rollouts=path, part=part, parts=parts)
    gather_block(path, files, ScoreOutputs.in_dir(out))
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def test_parts_gathered_are_the_bytes_of_one_scoring(rollouts_file, tmp_path):
    whole = _whole(rollouts_file, tmp_path / "whole")
    quarantine = [json.loads(line) for line in whole["quarantine.jsonl"].decode().splitlines()]
    reasons = " ".join(q["reason"] for q in quarantine)
    assert "invalid JSON" in reasons and reasons.count("duplicate rollout_id") == 2 and "unknown task_id" in reasons
    n_lines = len(rollouts_file.read_bytes().splitlines())
    for parts in (1, 2, 3, 7, n_lines + 5):  # more parts than lines: some parts come out empty
        got = _in_parts(rollouts_file, tmp_path / f"p{parts}", parts)
        for name in OUTPUTS:
            assert got[name] == whole[name], (parts, name)
    assert _in_parts(rollouts_file, tmp_path / "w2", 2, workers=2) == whole  # a chunk job's worker processes


def test_a_duplicate_across_a_part_boundary_is_quarantined_as_in_one_scoring(rollouts_file, tmp_path):
    lines = rollouts_file.read_text().splitlines()
    path = tmp_path / "dup.jsonl"
    path.write_text("\n".join([lines[0], lines[0]]) + "\n")  # the copy starts the second half
    assert [n for n, _ in raw_json_line_range(path, 0, 2)] == [1]
    assert [n for n, _ in raw_json_line_range(path, 1, 2)] == [2]
    whole = _whole(path, tmp_path / "whole")
    assert whole == _in_parts(path, tmp_path / "parts", 2)
    [bad] = [json.loads(line) for line in whole["quarantine.jsonl"].decode().splitlines()]
    assert bad["line"] == 2 and "first on line 1" in bad["reason"]


def test_scored_lines_round_trip_exactly(tmp_path):
    bad = BadLine("r.jsonl", 4, "invalid JSON: x", None, "{oo\udc80", "invalid JSON", ("task", "12"))
    episode = {"T": 3, "FED": None, "agent_latency_s": 0.1 + 0.2, "recorded_score": 1.0, "big": 2**62,
               "nan": float("inf"), "user_turns": ["é", "\ud800"], "nested": [[1, 2.5, None], {"a": [True]}],
               "neg": -0.0}
    lines = [ScoredLine(1, ("d", "m", "x", "r1"), ("d", "m", "x", "t", 0, "r1"), episode,
                        [{"j": 0, "V": None, "result": "ok"}]),
             ScoredLine(2, bad=bad), ScoredLine(5, ("d", "m", "x", "r2"), bad=bad)]
    path = tmp_path / "part.jsonl"
    write_scored_lines(path, lines, rollouts="r.jsonl", part=0, parts=1)
    header, back = read_scored_lines(path)
    assert header["lines"] == 3 and back == lines
    got = back[0].episode
    assert type(got["T"]) is int and type(got["recorded_score"]) is float and got["agent_latency_s"] == 0.1 + 0.2
    assert math.copysign(1, got["neg"]) == -1 and got["nested"] == [[1, 2.5, None], {"a": [True]}]
    assert isinstance(back[0].key, tuple) and isinstance(back[1].bad.entry, tuple)


def test_gathering_refuses_parts_out_of_order(rollouts_file, tmp_path):
    files = []
    for part in range(2):
        files.append(tmp_path / f"part{part}.jsonl")
        write_scored_lines(files[-1], score_line_range(rollouts_file, part, 2, _resolver()), rollouts=rollouts_file,
                           part=part, parts=2)
    with pytest.raises(ValueError, match="expected part 0 of 2"):
        gather_block(rollouts_file, files[::-1], ScoreOutputs.in_dir(tmp_path / "o"))
    with pytest.raises(ValueError, match="expected part 0 of 1"):
        gather_block(rollouts_file, files[1:], ScoreOutputs.in_dir(tmp_path / "o"))


def test_parts_of_a_block():
    assert score_parts(0, 16) == 1 and score_parts(16 * 2**20, 16) == 1 and score_parts(16 * 2**20 + 1, 16) == 2
    assert score_parts(10**12, None) == 1 and score_parts(5 * 2**20, 0.5) == 10


def test_a_line_over_the_limit_is_in_the_part_it_starts_in(tmp_path, monkeypatch):
    from prefix_audit.core import decode

    monkeypatch.setattr(decode, "MAX_LINE_BYTES", 8)
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * 40 + b"\n{}\n")  # the long line spans three of four parts
    whole = list(raw_json_lines(path))
    assert isinstance(whole[1], BadLine) and whole[1].line == 2
    for parts in range(1, 8):
        assert [item for part in range(parts) for item in raw_json_line_range(path, part, parts)] == whole


def test_the_schema_states_the_default_chunk_size():
    import yaml

    from prefix_audit.replay.scored_lines import DEFAULT_SCORE_CHUNK_MIB

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert schema["properties"]["score_chunk_mib"]["default"] == DEFAULT_SCORE_CHUNK_MIB
    assert f"| `score_chunk_mib` | {DEFAULT_SCORE_CHUNK_MIB} |" in (ROOT / "config" / "README.md").read_text()


_LINE = st.binary(max_size=12)  # blank and whitespace-only lines, \r, not UTF-8.map(lambda b: b.replace(b"\n", b""))


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_LINE, max_size=12), final_newline=st.booleans(), parts=st.integers(1, 9))
def test_byte_ranges_hold_every_line_once_in_order(tmp_path_factory, lines, final_newline, parts):
    path = tmp_path_factory.mktemp("split") / "f.jsonl"
    lines = [b"#", *lines]  # a first byte that is no compression's magic: the file is read as stored
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    whole = list(raw_json_lines(path))
    split = [item for part in range(parts) for item in raw_json_line_range(path, part, parts)]
    assert split == whole


@pytest.mark.slow
def test_a_big_imported_block_is_scored_in_chunk_jobs_into_the_same_bytes(bfcl, tmp_path):
    from test_audit import _bfcl_log
    from test_workflow import SNAKEMAKE, _planned_jobs, _run

    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed (pip install '.[workflow]')")
    logs = [tmp_path / "logs" / f"m{n}" / "BFCL_v4_multi_turn_base_result.json" for n in range(2)]
    for log in logs:  # the second repeats the first's entries: duplicates in the block's rollouts file
        _bfcl_log(bfcl, log)
    imports = [{"dataset": "bfcl_v3", "model": "big-log", "files": [str(tmp_path / "logs" / "*" / "*_result.json")]}]
    chunk_mib = sum(log.stat().st_size for log in logs) / 3.5 / 2**20  # four chunks
    scored = tmp_path / "c" / "scored" / "bfcl_v3" / "big-log" / "imported"
    target = str(scored / "episodes.parquet")

    whole = _run(tmp_path, "c", target, imports=imports, score_chunk_mib=None)
    assert whole.returncode == 0, whole.stderr[-3000:]
    expected = {name: (scored / name).read_bytes() for name in OUTPUTS}
    assert b"duplicate rollout_id" in expected["quarantine.jsonl"]

    dry = _run(tmp_path, "c", target, "--dry-run", imports=imports, score_chunk_mib=chunk_mib)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    # The block is not imported again: its four chunks are replayed and gathered.
    assert _planned_jobs(dry.stdout) == {"score_chunk": 4, "score_rollouts": 1}, dry.stdout[-3000:]
    chunked = _run(tmp_path, "c", target, imports=imports, score_chunk_mib=chunk_mib)
    assert chunked.returncode == 0, chunked.stderr[-3000:]
    for name in OUTPUTS:
        assert (scored / name).read_bytes() == expected[name], name
    assert not list((tmp_path / "c" / "score_chunks").rglob("*.jsonl"))  # temporary: gone once gathered
    log = (tmp_path / "c" / "logs" / "score" / "bfcl_v3" / "big-log" / "imported.chunk3.log").read_text()
    assert "part 4 of 4" in log
    graph = subprocess.run([SNAKEMAKE, "--rulegraph", "--configfile", "config/smoke.yaml", str(tmp_path / "c.yaml")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert graph.returncode == 0 and "score_chunk" in graph.stdout, graph.stderr[-2000:]
