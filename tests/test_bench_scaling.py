"""bench/scaling.py: its replicas name their model apart and keep their companions where the importer looks; its
memory figures tell the main process from the others."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import scaling  # noqa: E402  (bench/ scripts are not a package)

from prefix_audit.benchmarks.bfcl.handlers import ModelEntry  # noqa: E402
from prefix_audit.benchmarks.bfcl.importer import model_name  # noqa: E402
from prefix_audit.benchmarks.bfcl.scores import score_file_candidates  # noqa: E402
from prefix_audit.benchmarks.tau.ingest.containers import read_container  # noqa: E402
from prefix_audit.benchmarks.toolsandbox.importer import model_of  # noqa: E402

RUN = "agent_openai/gpt-4o-mini_user_openai/gpt-4o-20240806_08_13_2025_00_12_46"
KEY = "gpt-4o-2024-11-20"
CONFIG = {KEY: ModelEntry(KEY, "OpenAIResponsesHandler", False)}  # BFCL's model config, cut to one key


def _tree(root: Path) -> dict[str, list[Path]]:
    (root / "tau").mkdir(parents=True)
    v1 = root / "tau" / "tool-calling-retail-x-0.0.json"
    v1.write_text(json.dumps([{"task_id": 0, "trial": 0, "traj": []}]))
    tau2 = root / "tau" / "t2.json"
    tau2.write_text(json.dumps({"info": {"agent_info": {"llm": "gpt-4.1"}}, "tasks": [], "simulations": []}))
    run = root / "ts" / RUN
    (run / "trajectories").mkdir(parents=True)
    (run / "result_summary.json").write_text("{}")
    result = root / "b" / "result" / "some-model"
    result.mkdir(parents=True)
    (result / "BFCL_v3_multi_turn_base_result.json").write_text('{"id": "multi_turn_base_0", "result": []}\n')
    (root / "b" / "score" / "some-model").mkdir(parents=True)
    (root / "b" / "score" / "some-model" / "BFCL_v3_multi_turn_base_score.json").write_text(
        '{"accuracy": 1.0, "correct_count": 1, "total_count": 1}\n')
    flat = root / "b" / "flat"  # a flat copy, named after its model; its score file names a key of BFCL's config
    flat.mkdir()
    (flat / "other-model_BFCL_v4_multi_turn_base_result.json").write_text('{"id": "multi_turn_base_0", "result": []}\n')
    (flat / "other-model_BFCL_v4_multi_turn_base_score.json").write_text(
        '{"accuracy": 0.0, "correct_count": 0, "total_count": 1}\n'
        f'{{"id": "multi_turn_base_0", "model_name": "{KEY}", "valid": false}}\n')
    return {"tau": [v1, tau2], "toolsandbox": [root / "ts"],
            "bfcl": [result / "BFCL_v3_multi_turn_base_result.json",
                     flat / "other-model_BFCL_v4_multi_turn_base_result.json"]}


def test_a_replica_names_every_model_apart_and_leaves_the_logs_alone(tmp_path):
    source = tmp_path / "logs"
    groups = _tree(source)
    before = {p: p.read_bytes() for p in source.rglob("*") if p.is_file()}
    assert scaling.bfcl_label(groups["bfcl"][1], CONFIG) == KEY  # the original is named by the key
    zero = scaling.replicate(groups, [source], tmp_path / "corpus", 0, CONFIG)
    two = scaling.replicate(groups, [source], tmp_path / "corpus", 2, CONFIG)
    assert str(zero["tau"][0]).endswith("replica-0/logs/tau/tool-calling-retail-x-0.0__r0.json")
    v1, tau2 = two["tau"]
    assert v1.name == "tool-calling-retail-x-0.0__r2.json" and v1.read_bytes() == groups["tau"][0].read_bytes()
    assert read_container(json.loads(tau2.read_text())).named_model() == ("gpt-4.1__r2", "info.agent_info.llm")
    assert model_of(next(p for p in two["toolsandbox"][0].rglob("*") if p.name.startswith("gpt-4o-20240806")))[0] \
        == "openai/gpt-4o-mini__r2"
    result, flat = two["bfcl"]
    assert model_name(result, None, None)[0] == "some-model__r2"
    assert result.read_bytes() == groups["bfcl"][0].read_bytes()
    assert [p.parent.name for p in score_file_candidates(result, {})] == ["some-model__r2"]
    assert flat.name == "other-model__r2_BFCL_v4_multi_turn_base_result.json" and flat.read_bytes() == \
        groups["bfcl"][1].read_bytes()
    assert scaling.bfcl_label(flat, CONFIG) == "other-model__r2"  # no key names it now: its tagged prefix does
    assert [p.name for p in score_file_candidates(flat, {})] == ["other-model__r2_BFCL_v4_multi_turn_base_score.json"]
    # The originals are untouched: replicas write new files, never through their hard links.
    assert {p: p.read_bytes() for p in source.rglob("*") if p.is_file()} == before


def test_memory_is_told_per_process():
    """A parent of ~40 MB whose child holds ~300 MB for a second: the child is the largest other process, the
    main process stays small, and the tree's peak holds both."""
    child = "import time; block = bytearray(300 * 2**20); block[::4096] = b'x' * len(block[::4096]); time.sleep(1.5)"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}], check=True)"
    run = scaling.measured([sys.executable, "-c", parent])
    assert run["rc"] == 0
    assert run["largest_other_peak_rss"] >= 280 * 2**20
    assert run["main_peak_rss"] < 100 * 2**20
    assert run["tree_peak_rss"] >= run["largest_other_peak_rss"] + run["main_peak_rss"] // 2
