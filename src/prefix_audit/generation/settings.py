"""Typed settings of one block, parsed once from the canonical mapping the grid hands the rollout
stage (:mod:`prefix_audit.generation.grid`; Snakemake compares that mapping's text to decide what reruns).

Defaults live where the mechanism lives: ``K_exec`` in :data:`prefix_audit.generation.agents.executor.K_EXEC`,
``K_val`` in :data:`prefix_audit.generation.agents.methods.K_VAL`, an endpoint's ceiling in
:data:`prefix_audit.models.base.DEFAULT_CONCURRENCY`, decoding in
:class:`prefix_audit.models.base.GenerationParams`, timeouts and retries in
:mod:`prefix_audit.models.base` too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prefix_audit.models.base import DEFAULT_CONCURRENCY, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S, GenerationParams
from prefix_audit.models.endpoints import DEFAULT_API_KEY_ENV, Endpoint

from .agents.executor import K_EXEC
from .agents.methods import K_VAL, MethodSpec

SOURCE_KINDS = ("reference", "mutation", "agent")
# Episodes of one block run at once: the simulated model is CPU-bound, so one; a real model spends
# its time waiting on the endpoint, so several (each has at most one request in flight).
EPISODES_IN_FLIGHT = 1
REAL_EPISODES_IN_FLIGHT = 8
_DECODING = ("temperature", "top_p", "max_tokens", "reasoning_effort", "seed")


@dataclass(frozen=True)
class BackendSettings:
    """One ``models:`` entry: the offline simulated model or an OpenAI-compatible endpoint."""

    type: str
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    concurrency: int = DEFAULT_CONCURRENCY  # the endpoint's ceiling on requests in flight, whole run
    reasoning: bool = False
    params: GenerationParams = field(default_factory=GenerationParams)
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 60.0
    profile: Mapping[str, Any] = field(default_factory=dict)  # simulated: the error model

    @classmethod
    def parse(cls, entry: Mapping[str, Any]) -> BackendSettings:
        kind = entry.get("type")
        if kind not in ("simulated", "openai"):
            raise ValueError(f"unknown model backend {kind!r} (known: simulated, openai)")
        params = GenerationParams(**{k: entry[k] for k in _DECODING if k in entry},
                                  extra_body=dict(entry.get("extra_body", {})))
        return cls(kind, entry.get("model"), entry.get("base_url"), entry.get("api_key_env", DEFAULT_API_KEY_ENV),
                   int(entry.get("concurrency", DEFAULT_CONCURRENCY)), bool(entry.get("reasoning", False)), params,
                   float(entry.get("timeout_s", DEFAULT_TIMEOUT_S)), int(entry.get("max_retries", DEFAULT_MAX_RETRIES)),
                   float(entry.get("backoff_base_s", 1.0)), float(entry.get("backoff_cap_s", 60.0)),
                   dict(entry.get("profile", {})))

    @property
    def simulated(self) -> bool:
        return self.type == "simulated"

    @property
    def endpoint(self) -> Endpoint | None:
        """Where a real model's requests go (None for the simulated model)."""
        return None if self.simulated else Endpoint.of(self.base_url, self.api_key_env)


@dataclass(frozen=True)
class BlockSettings:
    """What one block's rollouts depend on: their source (``kind``) and its parameters."""

    kind: str
    seed: int = 0
    # mutation: the share of tasks left clean and the categories drawn from
    clean_fraction: float = 0.0
    categories: tuple[str, ...] = ()
    # agent: the method, its limits and the models it runs on
    method: MethodSpec | None = None
    episodes_in_flight: int = EPISODES_IN_FLIGHT
    trials: int = 1  # rollouts per task
    backend: BackendSettings | None = None
    verifier_model: str | None = None  # a swapped verifier: its name and backend
    verifier_backend: BackendSettings | None = None

    @classmethod
    def parse(cls, settings: Mapping[str, Any]) -> BlockSettings:
        kind = settings.get("kind")
        if kind not in SOURCE_KINDS:
            raise ValueError(f"unknown rollout source kind {kind!r} (known: {', '.join(SOURCE_KINDS)})")
        seed = int(settings.get("seed", 0))
        if kind == "reference":
            return cls(kind, seed)
        if kind == "mutation":
            return cls(kind, seed, float(settings.get("clean_fraction", 0.0)), tuple(settings["categories"]))
        spec = MethodSpec(settings["method"], settings.get("verifier", "model"),
                          int(settings.get("max_steps", K_EXEC)), int(settings.get("max_candidates", K_VAL)))
        verifier = settings.get("verifier_backend")
        backend = BackendSettings.parse(settings["backend"])
        verifier_backend = BackendSettings.parse(verifier["backend"]) if verifier else None
        real = any(b is not None and not b.simulated for b in (backend, verifier_backend))
        in_flight = settings.get("episodes_in_flight", REAL_EPISODES_IN_FLIGHT if real else EPISODES_IN_FLIGHT)
        return cls(kind, seed, method=spec, episodes_in_flight=int(in_flight),
                   trials=int(settings.get("trials", 1)), backend=backend,
                   verifier_model=verifier["model"] if verifier else None, verifier_backend=verifier_backend)

    def backends(self) -> tuple[BackendSettings, ...]:
        return tuple(b for b in (self.backend, self.verifier_backend) if b is not None)

    def needs(self) -> frozenset[str]:
        """The optional benchmark capabilities (:data:`prefix_audit.replay.contract.CAPABILITIES`) the
        block's rollouts need: a simulated model deviates from the reference with the mutation
        operators; a real model needs only a live environment."""
        if self.kind == "reference":
            return frozenset({"reference"})
        if self.kind == "mutation":
            return frozenset({"reference", "mutation"})
        simulated = any(b is not None and b.simulated for b in (self.backend, self.verifier_backend))
        return frozenset({"agent", "reference", "mutation"} if simulated else {"agent"})
