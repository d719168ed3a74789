"""Endpoints and the ceiling on requests in flight to each
(docs/real-models.md#one-ceiling-per-endpoint-for-the-whole-run).

An endpoint is a base URL with the environment variable holding its key: providers rate-limit per
key, so two models served under one key share one ceiling, and every call to it counts (planner,
verifier, executor, user simulator). Across the jobs of a run the ceiling is a Snakemake resource
named :attr:`Endpoint.resource` (each job holds its share of it, :func:`job_share`); within one job
an :class:`EndpointGate` lets at most that share of requests be in flight.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
RESOURCE_PREFIX = "endpoint_"


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    api_key_env: str = DEFAULT_API_KEY_ENV

    @classmethod
    def of(cls, base_url: str | None, api_key_env: str | None) -> Endpoint:
        # Normalised, so "…/v1" and "…/v1/" are one endpoint and one cache key.
        return cls((base_url or DEFAULT_BASE_URL).rstrip("/"), api_key_env or DEFAULT_API_KEY_ENV)

    @property
    def resource(self) -> str:
        """The Snakemake resource holding this endpoint's ceiling (an identifier, stable per endpoint)."""
        digest = hashlib.sha256(f"{self.base_url}\x1f{self.api_key_env}".encode()).hexdigest()[:10]
        return f"{RESOURCE_PREFIX}{digest}"

    def __str__(self) -> str:
        return f"{self.base_url} (key in ${self.api_key_env})"


def endpoint_slots(resources: Mapping[str, Any]) -> dict[str, int]:
    """A job's shares of endpoint ceilings, out of the resources Snakemake granted it."""
    return {name: int(value) for name, value in resources.items() if name.startswith(RESOURCE_PREFIX)}


def job_share(ceiling: int, episodes_in_flight: int) -> int:
    """Requests one job may have in flight to an endpoint: never more than the ceiling, and no more
    than its episodes can use (each episode waits for one answer at a time)."""
    return max(1, min(ceiling, episodes_in_flight))


@dataclass
class EndpointGate:
    """At most ``limit`` requests in flight to one endpoint within this process; shared by every
    backend of a job that calls the endpoint. ``answered`` turns true at the endpoint's first answer."""

    endpoint: Endpoint
    limit: int
    answered: bool = False
    in_flight: int = 0
    _semaphores: dict[int, asyncio.Semaphore] = field(default_factory=dict, repr=False)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        # One semaphore per event loop: an asyncio primitive is bound to the loop that first uses it.
        loop = id(asyncio.get_running_loop())
        semaphore = self._semaphores.setdefault(loop, asyncio.Semaphore(self.limit))
        async with semaphore:
            self.in_flight += 1
            try:
                yield
            finally:
                self.in_flight -= 1


class EndpointGates:
    """The gates of one job, one per endpoint; ``limits`` holds the job's share per endpoint resource."""

    def __init__(self, limits: dict[str, int] | None = None) -> None:
        self._limits = dict(limits or {})
        self._gates: dict[Endpoint, EndpointGate] = {}

    def gate(self, endpoint: Endpoint, default_limit: int) -> EndpointGate:
        if endpoint not in self._gates:
            limit = int(self._limits.get(endpoint.resource, default_limit))
            log.info("endpoint %s: requests in flight in this job at most %d", endpoint, limit)
            self._gates[endpoint] = EndpointGate(endpoint, limit)
        return self._gates[endpoint]
