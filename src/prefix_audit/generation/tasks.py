"""The ``sample_tasks`` stage: a dataset's seeded task sample, persisted as a task list."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefix_audit.core.io import atomic_write_text
from prefix_audit.replay import registry

log = logging.getLogger(__name__)


def write_task_list(dataset: str, resources: str | Path, n: int | None, seed: int, out: str | Path,
                    benchmark: Mapping[str, Any] | None = None, plugins: Sequence[str] = ()) -> list[str]:
    """Persist the seeded task sample (every task when ``n`` is None) with enough provenance to
    tell samples apart; ``benchmark`` is the dataset's config entry."""
    registry.load(plugins)
    sample = registry.open_benchmark(dataset, resources, benchmark, fetch=False).sample(n, seed)
    doc = {"dataset": dataset, "n": len(sample.task_ids), "seed": seed, **sample.provenance,
           "task_ids": sample.task_ids}
    atomic_write_text(out, json.dumps(doc, indent=1) + "\n")
    log.info("sampled %d %s tasks (seed %d)", len(sample.task_ids), dataset, seed)
    return sample.task_ids
