"""Scaling with cores (issue 46): ``prefix-audit audit --workers N`` and ``snakemake --cores N``.

Usage:
    python bench/scaling.py [--shared ../shared] [--work DIR] [--resources resources]
                            [--entries 20000] [--formats bfcl tau toolsandbox] [--logs N]
                            [--workers 1 2 4 8 16] [--cores 1 2 4 8 16]
                            [--grid config/config.yaml] [--import-format bfcl] [--chunk-mib MIB]
                            [--skip-audit] [--skip-snakemake] [--skip-grid] [--json FILE]

Worker and core counts above ``os.cpu_count()`` are left out. A quick check on a small machine:
``python bench/scaling.py --formats bfcl --logs 2 --entries 500 --workers 1 2 --cores 1 2 --grid config/smoke.yaml``.

**The corpus.** The shared real logs as ``bench/audit_throughput.py`` lists them (``fixtures/real-logs/``
in place, ``fixtures/real-logs-3/`` unpacked as published; companion files left out), optionally of some
formats only, REPLICATED until it holds at least ``--entries`` entries (episodes + quarantined records).
Replica ``k`` is the two log trees hard-linked under ``WORK/corpus/replica-<k>/`` — so a BFCL score
file is found beside its result file, or in ``score/`` beside ``result/``, as in the original — with
the one thing renamed that names each log's model, so that replica ``k``'s blocks are blocks of their
own (model ``<model>__r<k>``) and its entries real extra work, not duplicates the audit would
quarantine (:func:`relabel`). The audit has no per-log model name (``--model`` names every log's), so:

* τ-bench v1 results: the model is the file's name → the hard link is named ``<stem>__r<k>.json``
  (``__…`` after run.py's timestamp, which dates the run's reward rule, is read past);
* ToolSandbox runs: the model is read from the run folder's name (``agent_<model>_user_<user>_<date>``,
  over as many folders as the model's ``/`` split it) → that folder is named ``<model>__r<k>_user_…``;
* τ² results: the model is written in the file (``info.agent_info.llm`` or a wrapper's field) → a
  copy of the file with that one field ``<model>__r<k>``;
* BFCL result files: the model is the key of BFCL's model config that a folder, the score file's
  ``model_name`` or the file-name prefix spells, else the model's folder, else the prefix a flat copy put
  before BFCL's name (:func:`prefix_audit.benchmarks.bfcl.importer.model_name`) → the model folder is
  named ``<model>__r<k>`` — or, where the prefix names the model, the file (and its score file)
  ``<model>__r<k>_BFCL_v4_…`` — and the score file's ``model_name`` (a copy) gets the tag, so no key
  names the file and the block is named after the folder or the prefix. Two consequences, the same in
  every replica, which is why replica 0 is tagged too: a file whose handler a key chose is read with the
  decoder chosen from its content (BFCL's "model the config lacks" path), which may read its steps
  otherwise (of the shared logs, Ministral-8B's: calls where its handler's decoder read none), and BFCL's
  environments write the model name into some tool results (ids), so replay agrees less with those
  results than for the logs as published.

Before the measurement, replicas 0 and 1 are audited together and compared (:func:`check_replicas`):
every episode of replica 1 must be replica 0's (same dataset, task, trial, FED, T, Y, category, failure
code, decode and replay-agreement counts), under its own model name, with as many quarantined records
and as many duplicates (of the published logs themselves) each. The run stops if not.

**(a) The audit.** ``prefix-audit audit <every replica's logs> -o DIR --workers N`` for each N, in a
child process each, in turn: wall time; peak memory of the process tree (the sum of the resident
set sizes of the audit and its worker processes, sampled every 0.2 s with psutil — or ``/proc`` —,
so a peak shorter than that can be missed); the peak RSS of the main process and of the largest of the
others (a worker; in a workflow run, the largest job), from the same samples; speed-up over the first N;
parallel efficiency (speed-up / (N / first N));
whether ``fed/episodes.parquet`` and every file of ``tables/`` are byte-identical to the first N's.

**(b) The workflow.** ``snakemake --cores N`` from the repository root, each N into a fresh results
directory (``results_dir`` in an extra config file, as ``tests/test_workflow.py`` does; ``resources/``
shared), in turn:

* the paper grid — the README's main job, ``snakemake --cores N`` with ``config/config.yaml``
  (``--grid`` another config merged over it, e.g. ``config/smoke.yaml`` for a quick check);
* the replicated corpus of one format (``--import-format``, default ``bfcl``) as ``imports:`` — one
  block per replica and model (a block takes one model name, so a replica's logs of several models are
  several blocks; blocks of more MiB than ``score_chunk_mib`` are scored in chunk jobs, ``--chunk-mib``
  sets it) — and nothing generated (``--replace-workflow-config``: no sources, no agents).

Per N: wall time, peak memory of the process tree, speed-up, efficiency, and whether
``fed/episodes.parquet`` and ``tables/`` are byte-identical.

Prints the machine (cores, CPU model, memory, Python) and Markdown tables; ``--json FILE`` keeps the
figures. ``bench/scaling_bundle.py DIR`` writes what an offline machine needs to run this.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import audit_throughput  # noqa: E402  (the corpus and the audit's command line live there)

SUFFIX = "__r{k}"  # what replica k adds to every model name (τ-bench v1 dates a run by its file name's end,
# which may go on with "__…")
FORMATS = ("bfcl", "tau", "toolsandbox")
# What an episode of replica k must share with replica 0's (besides dataset, task and trial): what the
# audit found, and how it read and replayed the log.
COMPARED = ("infra_error", "T", "FED", "Y", "category", "failure_code", "n_turns", "recorded_y", "results_compared",
            "results_reproduced", "call_steps", "undecoded_steps", "tool_calls", "log_issue")


# --- the machine ---------------------------------------------------------------------------------


def machine() -> dict:
    """Cores, CPU model, memory and Python of this machine."""
    cpu = next((line.split(":", 1)[1].strip() for line in _lines("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor() or "unknown")
    mem = next((int(line.split()[1]) * 1024 for line in _lines("/proc/meminfo") if line.startswith("MemTotal:")), None)
    return {"cores": os.cpu_count(), "cpu": cpu, "memory_gib": round(mem / 2**30, 1) if mem else None,
            "python": platform.python_version(), "platform": platform.platform()}


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


# --- the replicated corpus -----------------------------------------------------------------------


def _link_tree(src: Path, dst: Path) -> None:
    """``src`` mirrored at ``dst``: folders made, files hard-linked (copied across file systems)."""
    for folder, _, files in os.walk(src):
        target = dst / Path(folder).relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            try:
                os.link(Path(folder) / name, target / name)
            except OSError:
                shutil.copy2(Path(folder) / name, target / name)


def _replace_file(path: Path, data: bytes) -> None:
    """``path`` holding ``data`` as a new file: never written through a hard link into the original."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _rename(path: Path, new_name: str, moved: dict[Path, Path]) -> None:
    if path.name != new_name:
        path.rename(path.with_name(new_name))
        moved[path] = path.with_name(new_name)


def _moved(path: Path, moved: dict[Path, Path]) -> Path:
    """``path`` after the renames in ``moved`` (of itself or of folders above it)."""
    for old, new in sorted(moved.items(), key=lambda kv: -len(kv[0].parts)):
        if path == old or old in path.parents:
            return new / path.relative_to(old)
    return path


def _relabel_tau(path: Path, tag: str, moved: dict[Path, Path]) -> None:
    """τ-bench v1 (its model is the file's stem): the link is renamed. τ² (its model is the one the
    container names, :meth:`~prefix_audit.benchmarks.tau.ingest.containers.Simulations.named_model`):
    a copy with that field tagged — or, where it names none ("unknown"), a wrapper's ``model`` field."""
    from prefix_audit.benchmarks.tau.ingest.containers import MODEL_FIELDS, read_container
    from prefix_audit.core.decode import plain_name

    if path.is_dir():
        raise ValueError(f"{path}: a τ² results folder is not replicated by this bench")
    doc = json.loads(path.read_bytes())
    container = read_container(doc)
    if container is None:  # τ-bench v1
        plain = plain_name(path.name)
        stem, dot, ext = plain.rpartition(".")
        _rename(path, f"{stem}{tag}.{ext}{path.name[len(plain):]}" if dot else plain + tag, moved)
        return
    if isinstance(doc, list):
        doc = {"simulations": doc}
    agent = doc.get("info", {}).get("agent_info") if isinstance(doc.get("info"), dict) else None
    for holder, key in [(agent, "llm"), (agent, "implementation"), *((doc, k) for k in MODEL_FIELDS)]:
        value = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(value, dict):
            holder, key = value, next((k for k in ("llm", "model", "name") if isinstance(value.get(k), str)), None)
            value = holder.get(key) if key else None
        if isinstance(value, str) and value:
            holder[key] = value + tag
            break
    else:
        doc["model"] = "unknown" + tag
    _replace_file(path, json.dumps(doc, ensure_ascii=False).encode("utf-8"))


def _relabel_toolsandbox(path: Path, tag: str, moved: dict[Path, Path]) -> None:
    """Every run folder at or below ``path``: the folder that holds ``_user_`` in its run name gets the tag
    before it (the agent's model ends there)."""
    from prefix_audit.benchmarks.toolsandbox.importer import _RUN_NAME, run_name

    runs = [p for p in [path, *path.rglob("*")] if p.is_dir() and _RUN_NAME.match(run_name(p))]
    for run in runs:
        run = _moved(run, moved)
        depth = run_name(run).count("/") + 1
        for folder in [run, *run.parents][:depth][::-1]:  # the first folder of the name that holds _user_
            if "_user_" in folder.name:
                if tag not in folder.name:
                    _rename(folder, folder.name.replace("_user_", f"{tag}_user_", 1), moved)
                break


def bfcl_label(original: Path, config: dict) -> str:
    """The model name the audit gives the BFCL result file ``original``
    (:func:`prefix_audit.benchmarks.bfcl.importer.model_name`)."""
    from prefix_audit.benchmarks.bfcl.handlers import choose_handler
    from prefix_audit.benchmarks.bfcl.importer import model_name
    from prefix_audit.benchmarks.bfcl.scores import find_score_file
    from prefix_audit.core.decode import JsonLine, iter_json_lines

    values = [item.value for item in iter_json_lines(original) if isinstance(item, JsonLine)]
    ids = [v["id"] for v in values if isinstance(v, dict) and isinstance(v.get("id"), str)]
    scores, _ = find_score_file(original, ids)
    return model_name(original, None, choose_handler(config, original, None,
                                                     scores.models if scores is not None else ()))[0]


def _relabel_bfcl(path: Path, original: Path, tag: str, moved: dict[Path, Path], config: dict) -> None:
    """A BFCL result file. Its model name is a config key wherever one names it (:func:`bfcl_label`), so
    renaming folders alone would not change it: the file's model folder is named ``<name>__r<k>`` — a
    key of nothing — and its score file's ``model_name`` (a copy; every other file stays a link) gets the
    tag too, so no key is found and the audit names the block after that folder (the handler is then
    chosen from the file's content: see the module docstring). Where, with no key, the file-name prefix
    names the model (a flat copy's ``<model>_BFCL_v4_…``), that prefix gets the tag instead, in the file's
    name and its score files'. A folder named as the model (``result/<model>/``, or a key's folder) is
    renamed (with its twin under ``score/``); a file in a folder of several models' logs moves into a
    folder of its own, its score file beside it."""
    from prefix_audit.benchmarks.bfcl.importer import model_name
    from prefix_audit.benchmarks.bfcl.scores import bfcl_file_name, score_file_candidates
    from prefix_audit.core.records import NamedBy

    name = bfcl_label(original, config) + tag
    scores = score_file_candidates(path, {})
    for score in scores:
        text = score.read_text(encoding="utf-8")
        retagged = re.sub(r'("model_name":\s*")([^"]*)(")', lambda m: m.group(1) + m.group(2) + tag + m.group(3), text)
        if retagged != text:
            _replace_file(score, retagged.encode("utf-8"))
    named = bfcl_file_name(path)
    witness = model_name(path, None, None)[1]  # what names the model once no key does
    if named is not None and witness is not None and witness.kind is NamedBy.FILE_NAME:
        cut = len(named.prefix)  # its score files are named as the result file is (its counterparts)
        for file in [path, *(s for s in scores if s.name.startswith(named.prefix))]:
            _rename(file, file.name[:cut] + tag + file.name[cut:], moved)
        return
    label = name[:-len(tag)]
    if path.parent.name in (label, name):  # its folder names the model (result/<model>/, or a key's folder): renamed
        twin = path.parent.parent.parent / "score" / label if path.parent.parent.name == "result" else None
        _rename(path.parent, name, moved)
        if twin is not None and twin.is_dir():
            _rename(twin, name, moved)
        return
    folder = path.parent / name  # a folder of logs of several models: into one of its own, with its score file
    folder.mkdir(exist_ok=True)
    for file in [path, *(s for s in scores if s.parent == path.parent)]:
        file.rename(folder / file.name)
        moved[file] = folder / file.name


def relabel(fmt: str, path: Path, original: Path, k: int, moved: dict[Path, Path],
            bfcl_config: dict | None = None) -> Path:
    """Make the log at ``path`` (replica ``k``'s link to ``original``) name its model ``<model>__r<k>``;
    where it is now."""
    tag = SUFFIX.format(k=k)
    path = _moved(path, moved)
    if fmt == "tau":
        _relabel_tau(path, tag, moved)
    elif fmt == "toolsandbox":
        _relabel_toolsandbox(path, tag, moved)
    elif fmt == "bfcl":
        _relabel_bfcl(path, original, tag, moved, bfcl_config or {})
    else:
        raise ValueError(f"format {fmt!r} is not replicated by this bench")
    return _moved(path, moved)


def replicate(groups: dict[str, list[Path]], roots: list[Path], out: Path, k: int,
              bfcl_config: dict | None = None) -> dict[str, list[Path]]:
    """Replica ``k`` of the logs ``groups`` (by format; each under one of ``roots``) laid out under
    ``out/replica-<k>/<root name>/`` and relabelled; its logs by format."""
    base = out / f"replica-{k}"
    if base.exists():
        shutil.rmtree(base)
    for root in roots:
        _link_tree(root, base / root.name)
    moved: dict[Path, Path] = {}
    replica: dict[str, list[Path]] = {}
    for fmt, logs in sorted(groups.items()):
        for log in logs:
            root = next(r for r in roots if r == log or r in log.parents)
            path = base / root.name / log.relative_to(root)
            replica.setdefault(fmt, []).append(relabel(fmt, path, log, k, moved, bfcl_config))
    return {fmt: [_moved(p, moved) for p in logs] for fmt, logs in replica.items()}


def _bfcl_config(resources: str) -> dict:
    from prefix_audit.benchmarks.bfcl.handlers import model_config
    from prefix_audit.replay import registry

    registry.load()
    return model_config(registry.resolver(resources, {})("bfcl_v3").data.root)


# --- runs, measured ------------------------------------------------------------------------------


def measured(cmd: list[str], *, cwd: Path = ROOT, env: dict | None = None, log: Path | None = None) -> dict:
    """Run ``cmd`` to its end: its exit code, wall seconds, and from RSS samples every 0.2 s the peak
    of its process tree's sum, of its main process and of the largest other process."""
    out = open(log, "w") if log is not None else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env={**os.environ, **(env or {})}, stdout=out, stderr=subprocess.STDOUT)
    tree_peak = [0]
    peaks: dict[int, int] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            now = _tree_rss(proc.pid)
            tree_peak[0] = max(tree_peak[0], sum(now.values()))
            for pid, rss in now.items():
                peaks[pid] = max(peaks.get(pid, 0), rss)
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    rc = proc.wait()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if log is not None:
        out.close()
    others = [rss for pid, rss in peaks.items() if pid != proc.pid]
    return {"rc": rc, "wall": wall, "tree_peak_rss": tree_peak[0], "main_peak_rss": peaks.get(proc.pid, 0),
            "largest_other_peak_rss": max(others, default=0)}


def _tree_rss(pid: int) -> dict[int, int]:
    """RSS (bytes) of ``pid`` and each of its descendants, now, by process id."""
    try:
        import psutil
    except ImportError:
        return _proc_tree_rss(pid)
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return {}
    out = {}
    for p in procs:
        try:
            out[p.pid] = p.memory_info().rss
        except psutil.Error:
            pass
    return out


def _proc_tree_rss(pid: int) -> dict[int, int]:
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            children.setdefault(int(fields[1]), []).append(int(entry.name))
            rss[int(entry.name)] = int(fields[21]) * page
        except (OSError, ValueError, IndexError):
            continue
    out, todo = {}, [pid]
    while todo:
        p = todo.pop()
        if p in rss:
            out[p] = rss[p]
        todo += children.get(p, [])
    return out


def outputs_identical(first: Path, other: Path) -> dict[str, bool]:
    """``fed/episodes.parquet`` and ``tables/`` (every file, the same names) of two results folders byte for byte."""
    fed = filecmp.cmp(first / "fed" / "episodes.parquet", other / "fed" / "episodes.parquet", shallow=False)
    names = sorted(p.relative_to(first / "tables") for p in (first / "tables").rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(other / "tables") for p in (other / "tables").rglob("*") if p.is_file())
    tables = names == theirs and all(filecmp.cmp(first / "tables" / n, other / "tables" / n, shallow=False)
                                     for n in names)
    return {"fed": fed, "tables": tables}


def _scaling_rows(runs: dict[int, dict], outs: dict[int, Path]) -> list[dict]:
    counts = sorted(runs)
    base = counts[0]
    rows = []
    for n in counts:
        r = runs[n]
        speedup = runs[base]["wall"] / r["wall"]
        rows.append({"n": n, **r, "speedup": speedup, "efficiency": speedup / (n / base),
                     **{f"{k}_identical": v for k, v in outputs_identical(outs[base], outs[n]).items()}})
    return rows


# --- (a) the audit -------------------------------------------------------------------------------


def _episodes(out: Path):
    import polars as pl

    return pl.read_parquet(out / "fed" / "episodes.parquet")


def _quarantine(out: Path) -> list[dict]:
    return [json.loads(line) for p in sorted(out.rglob("quarantine.jsonl")) for line in p.read_text().splitlines()
            if line.strip()]


def check_replicas(first: dict[str, list[Path]], second: dict[str, list[Path]], out: Path, workers: int,
                   resources: str) -> dict:
    """Replicas 0 and 1 audited together: replica 1's episodes must be replica 0's under ``__r1`` model
    names, each with as many quarantined records, none a duplicate across replicas. Returns the
    counts (entries per replica); raises SystemExit where they differ."""
    import polars as pl

    logs = [p for fmt in sorted(first) for p in first[fmt]] + [p for fmt in sorted(second) for p in second[fmt]]
    run = measured(audit_throughput.audit_command(logs, out, workers, resources), env=audit_throughput.AUDIT_ENV,
                   log=out.parent / f"{out.name}.log")
    if run["rc"] not in audit_throughput.AUDIT_OK:
        raise SystemExit(f"the audit of replicas 0 and 1 failed ({run['rc']}): see {out.parent / f'{out.name}.log'}")
    eps = _episodes(out)
    tag = SUFFIX.format(k=1)
    keys = ["dataset", "task_id", "trial"]
    same = [c for c in COMPARED if c in eps.columns]

    def untagged(k: int):
        end = SUFFIX.format(k=k)
        return eps.filter(pl.col("model").str.ends_with(end)).with_columns(
            pl.col("model").str.slice(0, pl.col("model").str.len_chars() - len(end)))

    r0, r1 = untagged(0), untagged(1)
    if r0.height + r1.height != eps.height:
        raise SystemExit(f"{eps.height - r0.height - r1.height} episodes of replicas 0 and 1 have a model name "
                         f"without the replica's tag")
    cols = ["model", "method", *keys, *same]
    left = r0.select(cols).sort(cols, nulls_last=True)
    right = r1.select(cols).sort(cols, nulls_last=True)
    quarantine = _quarantine(out)
    from prefix_audit.core.io import path_label

    # A record names its log (import) or its block's rollout file, whose model folder is path-encoded.
    ours = re.compile(rf"/replica-1/|{re.escape(path_label(tag))}/")

    def replica(q: dict) -> str:
        return "replica-1" if ours.search(str(q.get("path", ""))) else "replica-0"

    per_replica = Counter(map(replica, quarantine))
    duplicates = Counter(replica(q) for q in quarantine if "duplicate" in str(q.get("reason", "")))
    verdict = {"episodes_per_replica": [r0.height, r1.height], "quarantined_per_replica":
               [per_replica["replica-0"], per_replica["replica-1"]], "duplicates_per_replica":
               [duplicates["replica-0"], duplicates["replica-1"]], "compared_columns": cols,
               "equal": left.equals(right), "wall": run["wall"]}
    verdict["entries_per_replica"] = r0.height + per_replica["replica-0"]
    print(f"replicas 0 and 1 audited together ({run['wall']:.1f} s): {eps['model'].n_unique()} models, "
          f"episodes {r0.height} / {r1.height}, "
          f"quarantined {per_replica['replica-0']} / {per_replica['replica-1']}, duplicates "
          f"{duplicates['replica-0']} / {duplicates['replica-1']}; replica 1 = replica 0 on {', '.join(cols)}: "
          f"{verdict['equal']}", flush=True)
    if not verdict["equal"] or per_replica["replica-0"] != per_replica["replica-1"] \
            or duplicates["replica-0"] != duplicates["replica-1"]:
        diff = left.join(right, on=cols, how="anti").head(5)
        raise SystemExit(f"replica 1 is not replica 0 under other model names ({verdict}); e.g. rows of replica 0 "
                         f"replica 1 lacks:\n{diff}")
    return verdict


def audit_scaling(logs: list[Path], work: Path, workers: list[int], resources: str) -> dict:
    runs, outs = {}, {}
    for n in workers:
        outs[n] = work / f"audit-w{n}"
        if outs[n].exists():
            shutil.rmtree(outs[n])
        runs[n] = measured(audit_throughput.audit_command(logs, outs[n], n, resources), env=audit_throughput.AUDIT_ENV,
                           log=work / f"audit-w{n}.log")
        if runs[n]["rc"] not in audit_throughput.AUDIT_OK:
            raise SystemExit(f"audit --workers {n} failed ({runs[n]['rc']}): see {work / f'audit-w{n}.log'}")
        print(f"audit --workers {n}: {runs[n]['wall']:.1f} s, tree peak {runs[n]['tree_peak_rss'] / 2**20:.0f} MiB, "
              f"main {runs[n]['main_peak_rss'] / 2**20:.0f} MiB, largest other "
              f"{runs[n]['largest_other_peak_rss'] / 2**20:.0f} MiB", flush=True)
    entries = audit_throughput.entries(outs[workers[0]])
    return {"logs": len(logs), "entries": entries, "rows": _scaling_rows(runs, outs)}


# --- (b) the workflow ----------------------------------------------------------------------------


def snakemake_command(cores: int, configs: list[Path], replace: bool = False) -> list[str]:
    """The README's main job with ``cores`` and extra config files (``replace``: they are the whole config)."""
    return [sys.executable, "-m", "snakemake", "--cores", str(cores),
            *(["--replace-workflow-config"] if replace else []), "--configfile", *map(str, configs)]


def snakemake_scaling(name: str, cores: list[int], work: Path, configs: list[Path], resources: str, *,
                      replace: bool = False, extra: dict | None = None) -> dict:
    """``snakemake --cores N`` with ``configs`` (then a file setting a fresh ``results_dir``) per N."""
    runs, outs = {}, {}
    for n in cores:
        outs[n] = work / f"snakemake-{name}-c{n}"
        if outs[n].exists():
            shutil.rmtree(outs[n])
        override = work / f"snakemake-{name}-c{n}.yaml"
        override.write_text(yaml.safe_dump({**(extra or {}), "results_dir": str(outs[n]), "resources_dir": resources}))
        runs[n] = measured(snakemake_command(n, [*configs, override], replace), env={"PYTHONHASHSEED": "0"},
                           log=work / f"snakemake-{name}-c{n}.log")
        if runs[n]["rc"] != 0:
            raise SystemExit(f"snakemake ({name}) --cores {n} failed ({runs[n]['rc']}): see "
                             f"{work / f'snakemake-{name}-c{n}.log'}")
        print(f"snakemake {name} --cores {n}: {runs[n]['wall']:.1f} s", flush=True)
    blocks = sum(1 for _ in (outs[cores[0]] / "scored").glob("*/*/*/episodes.parquet"))
    return {"run": name, "blocks": blocks, "entries": _episodes(outs[cores[0]]).height,
            "rows": _scaling_rows(runs, outs)}


def import_blocks(logs: dict[int, list[Path]], dataset_of: dict[Path, tuple[str, str]], fmt: str) -> list[dict]:
    """``imports:`` entries of the replicas' logs of one format: one block per replica and model
    (``dataset_of``: replica 0's log → its (dataset, model) as the audit names them, ``…__r0``)."""
    blocks: dict[tuple[str, str], list[str]] = {}
    zero, tag = logs[0], SUFFIX.format(k=0)
    for k, replica in sorted(logs.items()):
        for original, path in zip(zero, replica):
            dataset, model = dataset_of[original]
            key = (dataset, model.removesuffix(tag) + SUFFIX.format(k=k))
            blocks.setdefault(key, []).append(str(path))
    return [{"dataset": d, "model": m, "format": fmt, "files": files} for (d, m), files in sorted(blocks.items())]


def blocks_of_logs(logs: list[Path], resources: str) -> dict[Path, tuple[str, str]]:
    """Each log's (dataset, model) as the audit names them (its first entry; a log of several is refused)."""
    from prefix_audit.ingest.imports import read_logs
    from prefix_audit.core.records import Located
    from prefix_audit.replay import registry

    registry.load()
    opened = registry.resolver(resources, {})
    out = {}
    for log in logs:
        seen = {(item.rollout.dataset, item.rollout.model) for item in read_logs([log], opened)
                if isinstance(item, Located)}
        if len(seen) != 1:
            raise SystemExit(f"{log}: {len(seen)} blocks ({sorted(seen)}): not one imports: entry")
        out[log] = seen.pop()
    return out


# --- report --------------------------------------------------------------------------------------


def _mib(b: int) -> str:
    return f"{b / 2**20:,.0f} MiB"


def markdown(title: str, unit: str, result: dict) -> str:
    out = [f"**{title}** ({result.get('logs', result.get('blocks'))} {'logs' if 'logs' in result else 'blocks'}, "
           f"{result['entries']:,} {'entries' if 'logs' in result else 'episodes'})", "",
           f"| {unit} | wall | speed-up | efficiency | peak RSS, process tree | main process | largest other process "
           "| FED identical | tables identical |", "|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in result["rows"]:
        out.append(f"| {r['n']} | {r['wall']:.1f} s | {r['speedup']:.2f}× | {r['efficiency']:.0%} | "
                   f"{_mib(r['tree_peak_rss'])} | {_mib(r['main_peak_rss'])} | {_mib(r['largest_other_peak_rss'])} | "
                   f"{'yes' if r['fed_identical'] else 'NO'} | "
                   f"{'yes' if r['tables_identical'] else 'NO'} |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--resources", default=str(ROOT / "resources"))
    parser.add_argument("--entries", type=int, default=20_000, help="at least this many entries (default 20000)")
    parser.add_argument("--formats", nargs="+", choices=FORMATS, help="replicate logs of these formats only")
    parser.add_argument("--logs", type=int, metavar="N", help="the first N logs of each format only (quick checks)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--grid", type=Path, action="append", default=[],
                        help="config files merged over config/config.yaml for the grid run (e.g. config/smoke.yaml)")
    parser.add_argument("--import-format", choices=FORMATS, default="bfcl")
    parser.add_argument("--chunk-mib", type=float, help="score_chunk_mib of the imports run (default: the config's)")
    parser.add_argument("--skip-audit", action="store_true")
    parser.add_argument("--skip-snakemake", action="store_true")
    parser.add_argument("--skip-grid", action="store_true", help="of the workflow runs, the imports run only")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = (args.work or Path(tempfile.mkdtemp(prefix="scaling-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    facts = machine()
    print(f"machine: {facts['cores']} cores, {facts['cpu']}, {facts['memory_gib']} GiB, Python {facts['python']} "
          f"({facts['platform']}); work: {work}", flush=True)
    cap = os.cpu_count() or 1
    workers = sorted({n for n in args.workers if 1 <= n <= cap})
    cores = sorted({n for n in args.cores if 1 <= n <= cap})
    report: dict = {"machine": facts, "args": {k: str(v) for k, v in vars(args).items()}}

    groups = audit_throughput.corpus(args.shared, work)
    groups = {f: logs[:args.logs] for f, logs in groups.items() if f in FORMATS and (not args.formats or f in args.formats)}
    roots = [r for r in (args.shared / "fixtures" / "real-logs", work / "real-logs-3") if r.is_dir()]
    roots = [r.resolve() for r in roots]
    groups = {f: [p.resolve() for p in logs] for f, logs in groups.items()}
    corpus = work / "corpus"
    config = _bfcl_config(args.resources) if "bfcl" in groups else None
    replicas = {k: replicate(groups, roots, corpus, k, config) for k in (0, 1)}
    check = check_replicas(replicas[0], replicas[1], work / "check-r0-r1", max(workers), args.resources)
    report["replica_check"] = check
    count = max(1, math.ceil(args.entries / check["entries_per_replica"]))
    for k in range(2, count):
        replicas[k] = replicate(groups, roots, corpus, k, config)
    replicas = {k: replicas[k] for k in range(count)}
    print(f"{count} replica(s) of {sum(map(len, groups.values()))} logs ({', '.join(sorted(groups))}), "
          f"{check['entries_per_replica']} entries each: {count * check['entries_per_replica']} entries", flush=True)

    texts = []
    if not args.skip_audit:
        logs = [p for k in sorted(replicas) for fmt in sorted(replicas[k]) for p in replicas[k][fmt]]
        report["audit"] = audit_scaling(logs, work, workers, args.resources)
        texts.append(markdown("prefix-audit audit", "--workers", report["audit"]))
    if not args.skip_snakemake:
        grid = [ROOT / "config" / "config.yaml", *args.grid]
        if not args.skip_grid:
            report["grid"] = snakemake_scaling("grid", cores, work, grid, args.resources)
            texts.append(markdown(f"snakemake, the grid of {' + '.join(p.name for p in grid)}", "--cores",
                                  report["grid"]))
        fmt = args.import_format
        if fmt not in groups:
            raise SystemExit(f"--import-format {fmt}: no logs of that format in the corpus")
        per_replica = {k: replicas[k][fmt] for k in replicas}
        entries = import_blocks(per_replica, blocks_of_logs(per_replica[0], args.resources), fmt)
        base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
        datasets = sorted({e["dataset"] for e in entries})
        whole = work / "imports.yaml"
        whole.write_text(yaml.safe_dump({
            "resources_dir": args.resources, "results_dir": str(work / "unused"),
            "benchmarks": {d: base["benchmarks"][d] for d in datasets if d in base["benchmarks"]},
            "datasets": [d for d in datasets if d in base["benchmarks"]], "sources": {}, "models": {},
            "agents": {"models": [], "methods": [], "verifier_conditions": None},
            "stats": {**base["stats"], "pools": {name: members for name, members in base["stats"]["pools"].items()
                                                 if set(members) <= set(datasets)}},
            "imports": entries, **({"score_chunk_mib": args.chunk_mib} if args.chunk_mib else {})}))
        report["imports"] = snakemake_scaling("imports", cores, work, [whole], args.resources, replace=True)
        report["imports"]["import_blocks"] = len(entries)
        texts.append(markdown(f"snakemake, imports: {len(entries)} blocks of {fmt} logs", "--cores", report["imports"]))
    print("\n\n".join(texts))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
