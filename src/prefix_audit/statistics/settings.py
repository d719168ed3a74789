"""What a statistics run is given, and the checks on it before any resampling.

:class:`StatsSettings` holds every setting of the block, per-category and paired statistics in one
frozen object, passed whole, so that a new option is added in one place. The statistics know no
benchmark: which datasets pool into one block (``pools``) and the order methods are compared in
(``methods``) come from the caller — the workflow's config (``stats.pools``, ``agents.methods``), or
for an audit outside the workflow the benchmark registrations and the product's own methods
(:func:`prefix_audit.audit.block_grouping`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # polars only in annotations: the CLI's parser reads K_MAX without loading it
    import polars as pl

K_MAX = 4  # PEC@1..4: the depths the tables, the site and the Inspect scorer report
BLOCK_KEYS = ("dataset", "model", "method")
REQUIRED_COLUMNS = (*BLOCK_KEYS, "task_id", "T", "FED", "Y")


@dataclass(frozen=True)
class StatsSettings:
    """The settings of one statistics run.

    ``resamples`` bootstrap draws per task set (per pair in the paired statistics) from ``seed``, with
    ``confidence`` intervals; PEC@1..``k_max``. ``pools`` maps a pool name to its member datasets: every
    model × method with rows in a member also gets a block of the pool over the union of their rows.
    ``methods`` is the order methods are shown and paired in (pairs are later minus earlier); others
    follow, sorted. ``workers`` threads compute task sets concurrently (the results do not depend on it);
    ``exclude_unsound`` leaves the tasks benchmark health found a defect in out of every metric.
    """

    resamples: int
    seed: int
    k_max: int = K_MAX
    confidence: float = 0.95
    pools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    methods: tuple[str, ...] = ()
    workers: int = 1
    exclude_unsound: bool = False

    def __post_init__(self) -> None:
        if self.resamples < 1:
            raise ValueError(f"resamples must be >= 1, got {self.resamples}")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must lie in (0, 1), got {self.confidence!r}")
        for name, members in self.pools.items():
            if not members:
                raise ValueError(f"pool {name!r} has no member datasets")
        # Read-only copies: a frozen settings object must not change under its holder.
        object.__setattr__(self, "pools", MappingProxyType({name: tuple(m) for name, m in self.pools.items()}))
        object.__setattr__(self, "methods", tuple(self.methods))

    def method_rank(self, method: str) -> tuple[int, str]:
        """Sort key of a method: its place in ``methods``, then the others by name."""
        return method_rank(method, self.methods)

    def members(self, dataset: str) -> tuple[str, ...]:
        """The datasets a dataset id or pool name stands for."""
        return tuple(self.pools.get(dataset, (dataset,)))

    def check_pools(self, datasets: Collection[str]) -> None:
        """Raise ValueError on a pool name that is also a dataset of the episodes."""
        for name in self.pools:
            if name in datasets:
                raise ValueError(f"pool name {name!r} is also a dataset in the episodes")


def method_rank(method: str, order: Sequence[str]) -> tuple[int, str]:
    """Sort key of a method: its place in ``order``, then the others by name."""
    return (order.index(method), "") if method in order else (len(order), method)


def check_episodes(episodes: pl.DataFrame) -> None:
    """Raise ValueError if the episodes lack a required column or hold nulls where none may be.

    ``T`` and ``FED`` may be null only together: an infrastructure-failure row
    (docs/definitions.md#infrastructure-failures).
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in episodes.columns]
    if missing:
        raise ValueError(f"episodes lack required column(s): {', '.join(missing)}")
    for col in (*BLOCK_KEYS, "task_id"):
        nulls = episodes[col].null_count()
        if nulls:
            raise ValueError(f"episodes column {col!r} has {nulls} null value(s)")
    for col in ("T", "FED"):
        if not episodes.schema[col].is_integer():
            raise ValueError(f"episodes column {col!r} must be integer, got {episodes.schema[col]}")
    half = episodes.filter(episodes["T"].is_null() != episodes["FED"].is_null())
    if half.height:
        first = half.row(0, named=True)
        raise ValueError(f"episodes row of {first['dataset']}/{first['model']}/{first['method']} task "
                         f"{first['task_id']!r} has only one of T and FED null (both are null on an "
                         "infrastructure failure, else neither)")


def largest_t(episodes: pl.DataFrame) -> int:
    """The largest T of ``episodes`` (an integer column: :func:`check_episodes`); 0 where there is none."""
    largest = episodes["T"].max() if episodes.height else None
    return largest if isinstance(largest, int) else 0


def check_k_max(k_max: int, episodes: pl.DataFrame) -> None:
    """Raise ValueError unless ``k_max`` is from 1 to the largest T + 1 (at least :data:`K_MAX`)."""
    longest = largest_t(episodes)
    if not 1 <= k_max <= max(longest + 1, K_MAX):
        raise ValueError(f"k_max must be from 1 to {max(longest + 1, K_MAX)} (the largest T + 1, at least "
                         f"{K_MAX}): PEC@k is 0 for every k above the largest T + 1; got {k_max}")


def available_memory() -> int | None:
    """Bytes of memory available to new work (Linux's MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(need: int, resamples: int) -> None:
    """Refuse a bootstrap whose arrays need more than half the available memory (:func:`available_memory`)."""
    have = available_memory()
    if have is not None and need > have / 2:
        raise ValueError(f"the bootstrap needs about {need / 2**30:.1f} GiB ({resamples} resamples), more than half "
                         f"of the {have / 2**30:.1f} GiB available; use fewer resamples or fewer workers")
