"""Append-only, resumable storage of generated rollouts.

Generation writes each complete rollout as one JSON line to ``<output>.partial``, flushed and
fsynced as soon as it finishes, so a killed job loses at most the rollout it was writing. A rerun
cuts a torn last line, skips every rollout already stored, and generates only the rest. When all
are done the rollouts are written to the real output in task order (atomically) and the partial
file is removed: an interrupted and an uninterrupted run give the same bytes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from tqdm import tqdm

from prefix_audit.core.io import atomic_write_text
from prefix_audit.core.records import Rollout, dumps

Spec = TypeVar("Spec")  # what a planned rollout is produced from

log = logging.getLogger(__name__)


class RolloutStore:
    def __init__(self, output: str | Path) -> None:
        self.output = Path(output)
        self.partial = self.output.with_name(self.output.name + ".partial")
        self._lines: dict[str, str] = {}
        if self.partial.exists():
            self._recover()

    def _recover(self) -> None:
        data = self.partial.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        if len(complete) < len(data):
            log.warning("cut a torn last line (%d bytes) from %s", len(data) - len(complete), self.partial)
            with self.partial.open("r+b") as fh:
                fh.truncate(len(complete))
        for line in complete.decode("utf-8").splitlines():
            rollout_id = json.loads(line)["rollout_id"]
            self._lines.setdefault(rollout_id, line)
        log.info("resuming: %d rollouts already stored in %s", len(self._lines), self.partial)

    def __contains__(self, rollout_id: str) -> bool:
        return rollout_id in self._lines

    def __len__(self) -> int:
        return len(self._lines)

    def append(self, rollout: Rollout) -> None:
        """Store one finished rollout durably (flush + fsync) before the next one starts."""
        if rollout.rollout_id in self._lines:
            raise ValueError(f"rollout {rollout.rollout_id} is already stored")
        line = dumps(rollout)
        self.partial.parent.mkdir(parents=True, exist_ok=True)
        with self.partial.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._lines[rollout.rollout_id] = line

    def finish(self, order: Sequence[str]) -> int:
        """Write the stored rollouts in ``order`` (their ids) to the output; drop the partial file."""
        missing = [rid for rid in order if rid not in self._lines]
        if missing:
            raise ValueError(f"{len(missing)} rollouts were never stored, e.g. {missing[0]}")
        extra = set(self._lines) - set(order)
        if extra:
            log.warning("ignoring %d stored rollouts no longer in the plan", len(extra))
        atomic_write_text(self.output, "".join(self._lines[rid] + "\n" for rid in order))
        self.partial.unlink(missing_ok=True)
        return len(order)


async def store_all(output: str | Path, planned: Sequence[tuple[str, Spec]],
                    produce: Callable[[Spec], Awaitable[Rollout | None]], *, concurrency: int = 1,
                    label: str = "rollouts") -> int:
    """Produce every planned rollout not stored yet, then write the output in plan order.

    ``planned`` holds ``(rollout_id, spec)``; ``produce(spec)`` returns the Rollout (with that id)
    or None when there is nothing to generate for it (it is then left out of the output). Up to
    ``concurrency`` rollouts are produced at once, each stored the moment it is finished; the
    output's order is the plan's whatever the order of finishing. A progress bar goes to stderr.
    """
    store = RolloutStore(output)
    resumed = sum(1 for rollout_id, _ in planned if rollout_id in store)
    todo = [(rollout_id, spec) for rollout_id, spec in planned if rollout_id not in store]
    skipped: set[str] = set()
    gate = asyncio.Semaphore(concurrency)
    with tqdm(total=len(planned), initial=resumed, desc=label, unit="rollout", file=sys.stderr, ncols=100,
              mininterval=2.0, ascii=True) as bar:

        async def one(rollout_id: str, spec: Spec) -> None:
            async with gate:
                rollout = await produce(spec)
            if rollout is None:
                skipped.add(rollout_id)
            elif rollout.rollout_id != rollout_id:
                raise ValueError(f"planned rollout id {rollout_id} but produced {rollout.rollout_id}")
            else:
                store.append(rollout)
            bar.update()

        await asyncio.gather(*(one(rollout_id, spec) for rollout_id, spec in todo))
    order = [rollout_id for rollout_id, _ in planned if rollout_id not in skipped]
    log.info("%d rollouts: %d resumed from an earlier run, %d produced now, %d planned without anything "
             "to generate", len(order), resumed, len(todo) - len(skipped), len(skipped))
    return store.finish(order)
