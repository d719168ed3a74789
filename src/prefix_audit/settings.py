"""Typed settings of one block, parsed once from the canonical mapping the grid hands the rollout
stage (:mod:`prefix_audit.grid`; Snakemake compares that mapping's text to decide what reruns).

Defaults live where the mechanism lives: ``K_exec`` in :data:`prefix_audit.agents.executor.K_EXEC`,
``K_val`` in :data:`prefix_audit.agents.methods.K_VAL`, a backend's concurrency in
:data:`prefix_audit.models.base.DEFAULT_CONCURRENCY`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .agents.executor import K_EXEC
from .agents.methods import K_VAL, MethodSpec
from .models.base import DEFAULT_CONCURRENCY

SOURCE_KINDS = ("reference", "mutation", "agent")
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
EPISODES_IN_FLIGHT = 1  # episodes of one block run at once


@dataclass(frozen=True)
class BackendSettings:
    """One ``models:`` entry: the offline simulated model or an OpenAI-compatible endpoint."""

    type: str
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    concurrency: int = DEFAULT_CONCURRENCY
    reasoning: bool = False
    reasoning_effort: str | None = None
    profile: Mapping[str, Any] = field(default_factory=dict)  # simulated: the error model

    @classmethod
    def parse(cls, entry: Mapping[str, Any]) -> BackendSettings:
        kind = entry.get("type")
        if kind not in ("simulated", "openai"):
            raise ValueError(f"unknown model backend {kind!r} (known: simulated, openai)")
        return cls(kind, entry.get("model"), entry.get("base_url"), entry.get("api_key_env", DEFAULT_API_KEY_ENV),
                   int(entry.get("concurrency", DEFAULT_CONCURRENCY)), bool(entry.get("reasoning", False)),
                   entry.get("reasoning_effort"), dict(entry.get("profile", {})))

    @property
    def simulated(self) -> bool:
        return self.type == "simulated"


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
        return cls(kind, seed, method=spec,
                   episodes_in_flight=int(settings.get("episodes_in_flight", EPISODES_IN_FLIGHT)),
                   backend=BackendSettings.parse(settings["backend"]),
                   verifier_model=verifier["model"] if verifier else None,
                   verifier_backend=BackendSettings.parse(verifier["backend"]) if verifier else None)

    def needs(self) -> frozenset[str]:
        """The optional benchmark capabilities (:data:`prefix_audit.contract.CAPABILITIES`) the
        block's rollouts need: a simulated model deviates from the reference with the mutation
        operators; a real model needs only a live environment."""
        if self.kind == "reference":
            return frozenset({"reference"})
        if self.kind == "mutation":
            return frozenset({"reference", "mutation"})
        simulated = any(b is not None and b.simulated for b in (self.backend, self.verifier_backend))
        return frozenset({"agent", "reference", "mutation"} if simulated else {"agent"})
