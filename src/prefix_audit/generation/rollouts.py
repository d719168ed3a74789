"""The ``generate_rollouts`` stage: the rollouts of one dataset × model × method block.

``settings`` (the grid's canonical mapping, parsed into :class:`~prefix_audit.generation.settings.BlockSettings`)
says where they come from: ``reference`` (the ground truth), ``mutation`` (seeded single-failure
injections) or ``agent`` (an agent method driving a model backend). Each finished rollout is stored
durably as it completes (:mod:`prefix_audit.generation.rollout_store`), so a killed job resumes where it
stopped. Agent blocks cache model responses under ``cache_dir``, so a rerun makes no model calls.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from prefix_audit.core.records import Rollout, rollout_id_for
from prefix_audit.models.base import ModelBackend, TrialBackend, trial_seed
from prefix_audit.models.endpoints import EndpointGates, job_share
from prefix_audit.replay import registry
from prefix_audit.replay.contract import Benchmark, MissingCapability

from .agents.methods import ReplayVerifier, run_method
from .rollout_store import store_all
from .settings import BackendSettings, BlockSettings
from .sources.mutation import mutated_rollout, task_context
from .sources.simulated import SimulatedProfile, simulated_backend

log = logging.getLogger(__name__)


def read_task_list(path: str | Path) -> list[str]:
    return list(json.loads(Path(path).read_text())["task_ids"])


def real_backend(backend: BackendSettings | None, cache_dir: str | Path, gates: EndpointGates,
                 episodes_in_flight: int) -> ModelBackend | None:
    """The shared backend of a real model; None for the simulated model, which is made per
    episode because it carries that task's reference through its side channel. Backends of one
    job that call the same endpoint share its gate (``gates``)."""
    if backend is None or backend.simulated:
        return None
    from prefix_audit.models.openai_compat import OpenAICompatibleBackend  # the openai client loads only when used

    assert backend.model is not None and backend.endpoint is not None
    gate = gates.gate(backend.endpoint, job_share(backend.concurrency, episodes_in_flight))
    return OpenAICompatibleBackend(backend.model, base_url=backend.base_url, api_key_env=backend.api_key_env,
                                   params=backend.params, reasoning=backend.reasoning, gate=gate,
                                   max_retries=backend.max_retries, timeout_s=backend.timeout_s,
                                   backoff_base_s=backend.backoff_base_s, backoff_cap_s=backend.backoff_cap_s,
                                   cache_dir=cache_dir)


def trial_rollout_id(dataset: str, model: str, method: str, task_id: str, trial: int) -> str:
    """A generated rollout's id; trial 0 has the id a one-trial run gives it."""
    parts = (dataset, model, method, task_id, *((trial,) if trial else ()))
    return rollout_id_for(*parts)


def simulated_episode_backend(bench: Benchmark, task_id: str, model: str, backend: BackendSettings,
                              episode_seed: str, plan_seed: str) -> ModelBackend:
    """The simulated model of one episode, deviating from the task's reference."""
    profile = SimulatedProfile.from_config(model, backend.profile)
    return simulated_backend(profile, task_context(bench, task_id, random.Random(episode_seed)), episode_seed,
                             name=f"simulated:{model}", plan_seed=plan_seed)


class _AgentBlock:
    """Episodes of one model × method block: backends, verifier condition, and one episode per task."""

    def __init__(self, bench: Benchmark, model: str, method: str, settings: BlockSettings, cache_dir: str | Path,
                 user_simulator: Mapping[str, Any] | None = None, gates: EndpointGates | None = None) -> None:
        assert settings.method is not None and settings.backend is not None
        self.bench, self.model, self.method, self.settings = bench, model, method, settings
        self.spec, self.backend = settings.method, settings.backend
        gates = gates or EndpointGates()
        in_flight = settings.episodes_in_flight
        self.executor = real_backend(settings.backend, cache_dir, gates, in_flight)
        self.verifier = real_backend(settings.verifier_backend, cache_dir, gates, in_flight)
        self.user_settings = BackendSettings.parse(user_simulator) if user_simulator else None
        self.user = real_backend(self.user_settings, cache_dir, gates, in_flight)

    def _trial_of(self, backend: ModelBackend | None, settings: BackendSettings | None,
                  trial: int) -> ModelBackend | None:
        if backend is None or settings is None:
            return backend
        return TrialBackend(backend, trial, trial_seed(self.settings.seed, trial, settings.params.seed))

    async def episode(self, task_id: str, trial: int, rollout_id: str) -> Rollout:
        dataset = self.bench.dataset
        settings = self.settings
        # The episode stream depends on the method; the first plan of each turn only on the model.
        # Trial 0 keeps the streams a one-trial run has; each later trial draws afresh.
        again = f":trial{trial}" if trial else ""
        episode_seed = f"{settings.seed}:{dataset}:{task_id}:{self.model}:{self.method}{again}"
        plan_seed = f"{settings.seed}:{dataset}:{task_id}:{self.model}{again}"
        executor = (self._trial_of(self.executor, self.backend, trial)
                    or simulated_episode_backend(self.bench, task_id, self.model, self.backend, episode_seed,
                                                 plan_seed))
        verifier = None
        if settings.verifier_backend is not None and settings.verifier_model is not None:  # (set together)
            name = settings.verifier_model
            verifier = self._trial_of(self.verifier, settings.verifier_backend, trial) or simulated_episode_backend(
                self.bench, task_id, name, settings.verifier_backend, f"{episode_seed}:verifier:{name}",
                f"{plan_seed}:{name}")
        user = self._trial_of(self.user, self.user_settings, trial)
        replay = ReplayVerifier(self.bench, dataset, task_id) if self.spec.verifier == "replay" else None
        env = self.bench.agent_environment(task_id)
        result = await run_method(self.spec, executor, env, self.bench.conversation(env, user),
                                  verifier=verifier, replay=replay)
        meta: dict[str, Any] = {**result.conversation, "force_terminated": result.force_terminated}
        if result.planning:
            meta["planning"] = list(result.planning)
        return Rollout(dataset, task_id, self.model, self.method, rollout_id, result.turns, source="agent", meta=meta,
                       usage=result.usage, trial=trial)

    async def aclose(self) -> None:
        for backend in (self.executor, self.verifier, self.user):
            if backend is not None:
                await backend.aclose()


def _relabel(rollout: Rollout, model: str, method: str, rollout_id: str, meta: dict[str, Any]) -> Rollout:
    return replace(rollout, model=model, method=method, rollout_id=rollout_id, meta=meta)


def _static(bench: Benchmark, settings: BlockSettings, model: str, method: str, task_id: str,
            rollout_id: str) -> Rollout | None:
    """A reference or mutation rollout (no model involved)."""
    if settings.kind == "reference":
        reference = bench.reference_rollout(task_id)
        return _relabel(reference, model, method, rollout_id, dict(reference.meta))
    rng = random.Random(f"{settings.seed}:{task_id}")
    if rng.random() < settings.clean_fraction:
        return _relabel(bench.reference_rollout(task_id), model, method, rollout_id,
                        {"injected": None, "seed": settings.seed})
    order = list(settings.categories)
    rng.shuffle(order)
    for category in order:  # fall back to another category where one has no site
        found = mutated_rollout(bench, task_id, category, settings.seed, model=model, method=method)
        if found is not None:
            return _relabel(found, model, method, rollout_id, found.meta)
    log.warning("no injection site for %s in any category; task left out of %s/%s", task_id, model, method)
    return None


def generate_rollouts(dataset: str, tasks_file: str | Path, model: str, method: str, settings: Mapping[str, Any],
                      resources: str | Path, out: str | Path, cache_dir: str | Path | None = None,
                      benchmark: Mapping[str, Any] | None = None, plugins: Sequence[str] = (),
                      endpoint_slots: Mapping[str, int] | None = None) -> int:
    """Rollouts of one block (``model`` × ``method``) for every task of ``tasks_file``, into ``out``.

    ``benchmark`` is the dataset's config entry (where its data come from, an optional model as
    user simulator); ``plugins`` are the config's plugin modules, loaded before the dataset opens.
    ``endpoint_slots`` holds the requests in flight this job may have per endpoint resource
    (:attr:`~prefix_audit.models.endpoints.Endpoint.resource`) — what Snakemake granted it out of
    the run's ceiling; an endpoint without an entry gets its ceiling capped by the episodes in flight.
    """
    registry.load(plugins)
    block = BlockSettings.parse(settings)
    missing = block.needs() - registry.dataset(dataset).capabilities
    if missing:
        raise MissingCapability(f"{dataset} cannot generate {model}/{method} rollouts: the benchmark lacks the "
                                f"capabilities they need: {', '.join(sorted(missing))}")
    benchmark = benchmark or {}
    bench = registry.open_benchmark(dataset, resources, benchmark, fetch=False)
    trials = range(block.trials if block.kind == "agent" else 1)
    planned = [(trial_rollout_id(dataset, model, method, t, trial), (t, trial))
               for t in read_task_list(tasks_file) for trial in trials]
    label = f"{dataset}/{model}/{method}"

    async def run() -> int:
        if block.kind != "agent":
            async def produce_static(spec: tuple[str, int]) -> Rollout | None:
                task_id, _ = spec
                return _static(bench, block, model, method, task_id,
                               trial_rollout_id(dataset, model, method, task_id, 0))

            return await store_all(out, planned, produce_static, label=label)
        agents = _AgentBlock(bench, model, method, block, cache_dir or Path(out).parent / "model-cache",
                             benchmark.get("user_simulator"), EndpointGates(dict(endpoint_slots or {})))
        def produce_episode(spec: tuple[str, int]) -> Awaitable[Rollout]:
            task_id, trial = spec
            return agents.episode(task_id, trial, trial_rollout_id(dataset, model, method, task_id, trial))

        try:
            return await store_all(out, planned, produce_episode, concurrency=block.episodes_in_flight, label=label)
        finally:
            await agents.aclose()

    n = asyncio.run(run())
    log.info("wrote %d rollouts of %s to %s", n, label, out)
    return n
