"""A benchmark defined entirely in tests/ (tests/plugins/toy_bench.py), loaded as a plugin, runs
through import, score, stats, tables and a Snakemake grid with no change under src/; the blocks a
dataset lacks the capabilities for are skipped with the reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = Path(__file__).resolve().parent / "plugins"
# the plugin on the path, before what the suite itself runs with (a checkout's sources, if so)
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(PLUGINS), os.environ.get("PYTHONPATH")) if p)}
_BESIDE = Path(sys.executable).parent / "snakemake"
SNAKEMAKE = str(_BESIDE) if _BESIDE.exists() else shutil.which("snakemake")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prefix_audit.cli", *args], env=ENV, capture_output=True,
                          text=True, timeout=300)


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


LOG = [  # entry → (T, FED, category, Y), worked out by hand
    ({"task": "kitchen-on", "turns": [[call("login", pin="4321"), call("list_rooms"),
                                       call("switch", room_id="r-kitchen", on=True)]]}, (3, 4, None, 1)),
    # the registered validator rejects level 150 (schema); the bedroom stays at 100, not 30
    ({"task": "bedroom-dim", "turns": [[call("login", pin="4321"), call("list_rooms"),
                                        call("switch", room_id="r-bedroom", on=True),
                                        call("set_brightness", room_id="r-bedroom", level=150)]]}, (4, 4, "schema", 0)),
    # switching before logging in (precondition), then recovering: Y = 1
    ({"task": "kitchen-off", "turns": [[call("list_rooms"), call("switch", room_id="r-kitchen", on=False),
                                        call("login", pin="4321"), call("switch", room_id="r-kitchen", on=False)]]},
     (4, 2, "precondition", 1)),
    # a room id that never appeared anywhere (dependency)
    ({"task": "hall-two-turns", "turns": [[call("login", pin="4321"), call("switch", room_id="r-attic", on=True)],
                                          [call("set_brightness", room_id="r-hall", level=50)]]},
     (3, 2, "dependency", 0)),
]


def test_import_score_stats_tables_through_the_plugin(tmp_path):
    log = tmp_path / "toy.jsonl"
    log.write_text("".join(json.dumps(entry) + "\n" for entry, _ in LOG) + '{"task": "nope", "turns": []}\n')
    rollouts = tmp_path / "rollouts.jsonl"
    proc = cli("import", "toy", str(log), "-o", str(rollouts), "--plugin", "toy_bench")
    assert proc.returncode == 0, proc.stderr
    assert "imported 4 rollouts; quarantined 1" in proc.stderr and "not a toy log entry" in proc.stderr

    proc = cli("score", str(rollouts), "-o", str(tmp_path / "scored"), "--plugin", "toy_bench")
    assert proc.returncode == 0, proc.stderr
    # One command does the same, with the format found by the plugin's detector.
    proc = cli("audit", "--no-figures", str(log), "-o", str(tmp_path / "audit"), "--plugin", "toy_bench", "--resamples", "200")
    assert proc.returncode == 0, proc.stderr
    assert "rollouts imported: 4; quarantined: 1" in proc.stderr
    assert (pl.read_parquet(tmp_path / "audit" / "fed" / "episodes.parquet").height == 4)
    episodes = pl.read_parquet(tmp_path / "scored" / "episodes.parquet").sort("rollout_id")
    got = {(row["task_id"], row["T"], row["FED"], row["category"], row["Y"]) for row in episodes.iter_rows(named=True)}
    assert got == {(entry["task"], *expected) for entry, expected in LOG}
    actions = pl.read_parquet(tmp_path / "scored" / "actions.parquet")
    validator = actions.filter(pl.col("tool") == "set_brightness").filter(pl.col("V") == False)  # noqa: E712
    assert validator["failure_codes"].to_list() == [["validator"]]

    proc = cli("stats", str(tmp_path / "scored" / "episodes.parquet"), "-o", str(tmp_path / "stats"),
               "--resamples", "200")
    assert proc.returncode == 0, proc.stderr
    proc = cli("tables", str(tmp_path / "stats"), "-o", str(tmp_path / "tables"))
    assert proc.returncode == 0, proc.stderr
    # PEC@1..4 of FED = 4, 4, 2, 2
    assert "| toy_lights | toy-agent | imported | 4 | 1.000 [1.000, 1.000] | 0.500 " in \
        (tmp_path / "tables" / "table_G1.md").read_text()


def test_without_the_plugin_the_toy_is_unknown(tmp_path):
    proc = cli("import", "toy", "x.jsonl", "-o", str(tmp_path / "r.jsonl"))
    assert proc.returncode == 2 and "invalid choice: 'toy'" in proc.stderr
    proc = cli("import", "toy", "x.jsonl", "-o", str(tmp_path / "r.jsonl"), "--plugin", "no_such_module")
    assert proc.returncode == 2 and "plugin 'no_such_module': cannot import no_such_module" in proc.stderr
    proc = cli("import", "toy", "x.jsonl", "-o", str(tmp_path / "r.jsonl"), "--plugin", "json")
    assert proc.returncode == 2 and "json registers no benchmark" in proc.stderr


def _grid(tmp_path: Path, **overrides) -> Path:
    config = {
        "plugins": ["toy_bench"],
        "resources_dir": str(tmp_path / "resources"),
        "results_dir": str(tmp_path / "results"),
        "benchmarks": {"toy_lights": {"sample": {"n": 4, "seed": 1}}, "toy_readonly": {}},
        "sources": {"reference": {"kind": "reference"}},
        "models": {"sim": {"type": "simulated", "profile": {
            "p_error": {"schema": 0.1, "dependency": 0.1, "precondition": 0.1}, "p_stop": 0.05}}},
        "agents": {"models": ["sim"], "methods": ["react"], "seed": 1},
        "stats": {"resamples": 200, "paired_resamples": 200, "seed": 1, "k_max": 4, "confidence": 0.95,
                  "pools": {}, "pairs": []},
        **overrides,
    }
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _snakemake(config: Path, *extra: str) -> subprocess.CompletedProcess:
    # --replace-workflow-config: the run is this config alone, not merged over config/config.yaml.
    cmd = [SNAKEMAKE, "--cores", "2", "--configfile", str(config), "--replace-workflow-config", *extra]
    return subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed (pip install '.[workflow]')")
def test_a_snakemake_grid_on_the_plugin(tmp_path):
    proc = _snakemake(_grid(tmp_path))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert ("toy_readonly/sim/react skipped: the toy_readonly benchmark lacks the capabilities this block "
            "needs: agent, mutation") in proc.stderr
    results = tmp_path / "results"
    g1 = (results / "tables" / "table_G1.md").read_text()
    # the plugin's health (task_health) audited toy_lights' four tasks; toy_readonly offers none
    assert "| toy_lights | reference | reference | 4 | none of 4 | 1.000 [1.000, 1.000] |" in g1
    assert "| toy_lights | sim | react | 4 | none of 4 |" in g1
    assert "| toy_readonly | reference | reference | 5 | not audited | 1.000 [1.000, 1.000] |" in g1
    assert "| toy_lights | toy-1 | unsound (any defect) | defect |  | 0 of 4 |" in \
        (results / "tables" / "table_task_health.md").read_text()
    assert "toy_readonly | sim" not in g1
    tasks = json.loads((results / "tasks" / "toy_lights.json").read_text())
    assert tasks["n"] == 4 and tasks["toy_tasks"] == 5
    agent = [json.loads(line) for line in (results / "rollouts" / "toy_lights" / "sim" / "react.jsonl").open()]
    assert len(agent) == 4 and all(r["usage"] for r in agent)

    # Validation is as strict for a plugin's entry as for a built-in one.
    bad = _snakemake(_grid(tmp_path, benchmarks={"toy_lights": {"sampel": {"n": 4, "seed": 1}}}), "--dry-run")
    assert bad.returncode != 0 and "Error validating config file" in bad.stdout + bad.stderr
    unknown = _snakemake(_grid(tmp_path, plugins=[]), "--dry-run")
    assert unknown.returncode != 0 and "toy_lights" in unknown.stdout + unknown.stderr
