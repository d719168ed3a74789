"""Audit throughput on real logs at 1 and 2 workers, and beside each benchmark's own evaluator.

Usage: python bench/audit_throughput.py [--shared ../shared] [--work DIR] [--resources resources]
                                        [--workers 1 2] [--skip-corpus] [--skip-evaluators]

1. **Throughput.** The shared real logs (``fixtures/real-logs/`` in place, ``fixtures/real-logs-3/``
   unpacked as published, ``tests/real_logs.py``; companion files left out) grouped by the format
   each is detected as; each group, then all of them, audited in one ``prefix-audit audit`` process
   per worker count (default 10,000 resamples), in turn on the same machine. Per group: entries (episodes and
   quarantined records), wall time and entries/s per worker count, the speed-up, and whether the
   FED tables (``fed/episodes.parquet``) are byte-identical.
2. **Beside the benchmark's own evaluator**, on one file each: a BFCL result file of 200 entries —
   our whole audit (import, replay, FED, trust check, statistics, tables) against bfcl-eval's own
   per-entry evaluation of the same entries (its checker with its handler's decoder, run from the
   fetched wheel by ``tests/bfcl_reference.py``; the loop over entries only, after its set-up); a
   tau2 results file — our audit against tau2's own evaluators (environment, action, communicate,
   combined as its ``evaluate_simulation`` combines them) over the file's simulations, after tau2's
   ``Results.load`` (timed apart).

Prints Markdown tables; ``--json FILE`` keeps the figures.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import real_logs  # noqa: E402  (the corpus's layout lives with the tests that read it)

BFCL_FILE = "fixtures/real-logs/bfcl/gpt-oss-20b_BFCL_v4_multi_turn_base_result.json"
TAU2_FILE = "fixtures/real-logs/tau2/gpt-4.1_retail_40tasks_1trial.json"


def corpus(shared: Path, work: Path) -> dict[str, list[Path]]:
    """The shared real logs by detected format."""
    from prefix_audit.replay import registry

    registry.load()
    first = shared / "fixtures" / "real-logs"
    paths = [p for p in sorted(first.glob("*/*.json")) if not p.name.endswith("_score.json")]
    paths += [first / "toolsandbox"] if (first / "toolsandbox").is_dir() else []
    if real_logs.CORPUS.is_dir():
        unpacked = real_logs.unpack(work / "real-logs-3")
        paths += [log.path for log in unpacked if not real_logs.is_companion(log)]
    groups: dict[str, list[Path]] = defaultdict(list)
    for path in paths:
        try:
            groups[registry.detect_format(path)].append(path)
        except ValueError:
            continue
    return dict(groups)


AUDIT_ENV = {"PYTHONHASHSEED": "0"}  # over the environment, for every audit a bench runs
AUDIT_OK = (0, 3)  # the audit's exit codes with outputs: done, and done with a trust warning (--strict)


def audit_command(logs: list[Path], out: Path, workers: int, resources: str) -> list[str]:
    """The ``prefix-audit audit`` of ``logs`` into ``out`` with ``workers`` processes, as a command line."""
    return [sys.executable, "-m", "prefix_audit.cli", "audit", *map(str, logs), "-o", str(out),
            "--workers", str(workers), "--resources", resources]


def audit(logs: list[Path], out: Path, workers: int, resources: str) -> float:
    """Wall seconds of one ``prefix-audit audit`` of ``logs`` into ``out``."""
    start = time.perf_counter()
    done = subprocess.run(audit_command(logs, out, workers, resources), capture_output=True, text=True,
                          env={**os.environ, **AUDIT_ENV})
    wall = time.perf_counter() - start
    if done.returncode not in AUDIT_OK:
        raise SystemExit(f"audit failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall


def entries(out: Path) -> int:
    episodes = pl.read_parquet(out / "fed" / "episodes.parquet").height
    quarantined = sum(len(p.read_text().splitlines()) for p in out.rglob("quarantine.jsonl"))
    return episodes + quarantined


def throughput(groups: dict[str, list[Path]], work: Path, workers: list[int], resources: str) -> list[dict]:
    rows = []
    everything = [path for _, logs in sorted(groups.items()) for path in logs]
    for fmt, logs in [*sorted(groups.items()), ("all, in one audit", everything)]:
        walls, outs = {}, {}
        for n in workers:
            outs[n] = work / f"audit-{fmt.split(',')[0]}-w{n}"
            walls[n] = audit(logs, outs[n], n, resources)
        count = entries(outs[workers[0]])
        same = all(filecmp.cmp(outs[workers[0]] / "fed" / "episodes.parquet", outs[n] / "fed" / "episodes.parquet",
                               shallow=False) for n in workers)
        rows.append({"format": fmt, "logs": len(logs), "entries": count, "wall": walls,
                     "per_s": {n: count / w for n, w in walls.items()},
                     "speedup": walls[workers[0]] / walls[workers[-1]], "fed_identical": same})
        print(f"{fmt}: {len(logs)} logs, {count} entries, " + ", ".join(
            f"{n} worker(s) {walls[n]:.1f} s" for n in workers) + f", FED tables identical: {same}", flush=True)
    return rows


def bfcl_evaluator_seconds(path: Path, resources: str) -> tuple[int, float]:
    """(entries, seconds) of bfcl-eval's own evaluation of every entry of a result file."""
    from bfcl_handler_reference import reference_decoder
    from bfcl_reference import BfclReference

    from prefix_audit.benchmarks.bfcl import import_result_file
    from prefix_audit.benchmarks.bfcl.handlers import model_config
    from prefix_audit.benchmarks.bfcl.reading import BfclReading
    from prefix_audit.replay import registry

    registry.load()
    bfcl = registry.resolver(resources, {})("bfcl_v3")
    reference = BfclReference(bfcl)
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    located = list(import_result_file(path, reading=BfclReading(model_config(bfcl.data.root))))
    decoders = {}
    work = []
    for obj, item in zip(lines, located):
        choice = item.rollout.meta["bfcl_handler"]
        key = (choice["handler"], choice["is_fc"])
        if key not in decoders:
            decoders[key] = reference_decoder(bfcl.data.root, *key)
        work.append((bfcl.entry(obj["id"]), obj["result"], decoders[key]))
    start = time.perf_counter()
    for entry, result, decoder in work:
        reference.evaluate(entry, result, decoder)
    return len(work), time.perf_counter() - start


def tau2_evaluator_seconds(path: Path, resources: str) -> tuple[int, float, float]:
    """(simulations, seconds to load the file with tau2, seconds of tau2's evaluation of them all)."""
    from prefix_audit.replay import registry

    registry.load()
    registry.resolver(resources, {})("tau_retail")  # puts the pinned tau2 on the path
    import importlib

    from tau2.data_model.simulation import Results
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    start = time.perf_counter()
    results = Results.load(path)
    loaded = time.perf_counter() - start
    domain = results.info.environment_info.domain_name
    get_environment = importlib.import_module(f"tau2.domains.{domain}.environment").get_environment
    tasks = {t.id: t for t in results.tasks}
    start = time.perf_counter()
    for sim in results.simulations:
        task = tasks[sim.task_id]
        basis = set(task.evaluation_criteria.reward_basis)
        if basis & {"DB", "ENV_ASSERTION"}:
            EnvironmentEvaluator.calculate_reward(get_environment, task, sim.messages)
        if "ACTION" in basis:
            ActionEvaluator.calculate_reward(task, sim.messages)
        if "COMMUNICATE" in basis:
            CommunicateEvaluator.calculate_reward(task, sim.messages)
    return len(results.simulations), loaded, time.perf_counter() - start


def evaluators(shared: Path, work: Path, workers: list[int], resources: str) -> list[dict]:
    rows = []
    for name, rel, theirs in (("BFCL", BFCL_FILE, bfcl_evaluator_seconds), ("tau2", TAU2_FILE, tau2_evaluator_seconds)):
        path = shared / rel
        if not path.is_file():
            continue
        ours = {n: audit([path], work / f"side-{name}-w{n}", n, resources) for n in workers}
        # The evaluator in a child of its own, as the audit runs: one process each, nothing shared.
        code = (f"import sys, json; sys.path[:0] = [{str(ROOT / 'bench')!r}, {str(ROOT / 'tests')!r}]; "
                f"import audit_throughput as a; print(json.dumps(a.{theirs.__name__}(__import__('pathlib')"
                f".Path({str(path)!r}), {resources!r})))")
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
        process = time.perf_counter() - start
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        row = {"benchmark": name, "file": rel, "entries": figures[0], "ours_wall": ours,
               "theirs_evaluation_s": figures[-1], "theirs_process_s": process}
        if name == "tau2":
            row["theirs_load_s"] = figures[1]
        rows.append(row)
        print(f"{name} {rel}: ours " + ", ".join(f"{n} worker(s) {ours[n]:.1f} s" for n in workers)
              + f"; theirs: evaluation {figures[-1]:.1f} s, whole process {process:.1f} s", flush=True)
    return rows


def markdown(rows: list[dict], sides: list[dict], workers: list[int]) -> str:
    out = ["| format | logs | entries | " + " | ".join(f"{n} worker(s): s, entries/s" for n in workers)
           + " | speed-up | FED tables identical |", "|---|---:|---:|" + "---:|" * len(workers) + "---:|---|"]
    for r in rows:
        out.append(f"| {r['format']} | {r['logs']} | {r['entries']} | " + " | ".join(
            f"{r['wall'][n]:.1f} s, {r['per_s'][n]:.0f}/s" for n in workers)
            + f" | {r['speedup']:.2f}× | {'yes' if r['fed_identical'] else 'NO'} |")
    if sides:
        out += ["", "| benchmark | file | entries | our audit, " + ", ".join(f"{n} worker(s)" for n in workers)
                + " | their evaluation (loop) | their process | ratio (theirs' process / our audit, 1 worker) |",
                "|---|---|---:|---:|---:|---:|---:|"]
        for s in sides:
            out.append(f"| {s['benchmark']} | `{Path(s['file']).name}` | {s['entries']} | "
                       + " / ".join(f"{s['ours_wall'][n]:.1f} s" for n in workers)
                       + f" | {s['theirs_evaluation_s']:.1f} s | {s['theirs_process_s']:.1f} s | "
                       + f"{s['theirs_process_s'] / s['ours_wall'][workers[0]]:.2f} |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--resources", default=str(ROOT / "resources"))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--skip-corpus", action="store_true")
    parser.add_argument("--skip-evaluators", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="throughput-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = [] if args.skip_corpus else throughput(corpus(args.shared, work), work, args.workers, args.resources)
    sides = [] if args.skip_evaluators else evaluators(args.shared, work, args.workers, args.resources)
    print(markdown(rows, sides, args.workers))
    if args.json:
        args.json.write_text(json.dumps({"throughput": rows, "evaluators": sides}, indent=1, default=str))


if __name__ == "__main__":
    main()
