"""Verifier detection-rate ablation: Dual-Loop on one simulated profile with its verifier's
detection rates scaled from 0 (a verifier that catches nothing) to 1 (one that catches every
failing step), everything else fixed. Plan-Conditioned on the same profile is the reference row.

    python bench/verifier_ablation.py [--profile medium] [--tasks 200]

Prints a Markdown table (PEC@1..4, TER, mean plan candidates per turn, mean agent tokens).
Needs the sampled task list of the default run (results/tasks/bfcl_v3.json; `snakemake --cores 2`
or the sample_tasks rule makes it).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import polars as pl
import yaml

from prefix_audit.core.records import read_rollouts
from prefix_audit.generation.rollouts import generate_rollouts
from prefix_audit.replay import registry
from prefix_audit.replay.scoring import ScoreOutputs, score_file

ROOT = Path(__file__).resolve().parents[1]


def run(profile: dict, method: str, tasks: Path, work: Path, name: str) -> dict:
    out = work / f"{name}.jsonl"
    settings = {"kind": "agent", "method": method, "seed": 1, "backend": {"type": "simulated", "profile": profile}}
    generate_rollouts("bfcl_v3", tasks, "sim", method, settings, ROOT / "resources", out)
    score_file(out, ScoreOutputs.in_dir(work / name), registry.resolver(ROOT / "resources", fetch=False))
    episodes = pl.read_parquet(work / name / "episodes.parquet")
    turns = [t for item in read_rollouts(out) for t in item.rollout.meta.get("planning", [])]
    row = {f"PEC@{k}": float((episodes["FED"] > k).mean()) for k in (1, 2, 3, 4)}
    row["TER"] = float((episodes["FED"] == episodes["T"] + 1).mean())
    row["candidates/turn"] = sum(t["candidates"] for t in turns) / len(turns) if turns else float("nan")
    row["tokens"] = float(episodes["agent_tokens"].mean())
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="medium")
    parser.add_argument("--tasks", type=int, default=200)
    args = parser.parse_args()
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    base = config["profiles"][args.profile]
    ids = json.loads((ROOT / "results" / "tasks" / "bfcl_v3.json").read_text())["task_ids"][: args.tasks]
    rows = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tasks = work / "tasks.json"
        tasks.write_text(json.dumps({"task_ids": ids}))
        rows.append(("plan_conditioned", run(base, "plan_conditioned", tasks, work, "pc")))
        levels = [("0", dict.fromkeys(base["p_detect"], 0.0))]
        levels += [(f"{s:g} × profile", {c: r * s for c, r in base["p_detect"].items()}) for s in (0.5, 1.0)]
        levels += [("1 (perfect)", dict.fromkeys(base["p_detect"], 1.0))]
        for i, (label, rates) in enumerate(levels):
            rows.append((f"dual_loop, p_detect = {label}", run(base | {"p_detect": rates}, "dual_loop", tasks,
                                                               work, f"dl{i}")))
    columns = list(rows[0][1])
    print(f"profile {args.profile}, {len(ids)} BFCL tasks, {time.perf_counter() - started:.0f} s\n")
    print("| condition | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for label, row in rows:
        cells = [f"{row[c]:,.0f}" if c == "tokens" else f"{row[c]:.3f}" for c in columns]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
