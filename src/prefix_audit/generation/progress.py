"""How far rollout generation has got: rollouts done / planned per block, read from the files a run
leaves under its results directory — the task list of each dataset, each block's finished
``rollouts/<dataset>/<model>/<method>.jsonl`` or its ``.partial`` file (one complete JSON line per
finished rollout, :mod:`prefix_audit.generation.rollout_store`). It reads files only, so it works while the
run goes on, on any host that sees them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from prefix_audit.core.io import name_of_label

PARTIAL_SUFFIX = ".partial"


@dataclass(frozen=True)
class BlockProgress:
    dataset: str
    model: str
    method: str
    done: int
    planned: int | None  # None: the dataset's task list is not there yet
    finished: bool  # the block's rollout file is written (the partial file is gone)

    @property
    def block(self) -> str:
        return f"{self.dataset}/{self.model}/{self.method}"

    def __str__(self) -> str:
        total = "?" if self.planned is None else str(self.planned)
        state = "finished" if self.finished else "running or interrupted"
        return f"{self.block}: {self.done}/{total} rollouts ({state})"


def _complete_lines(path: Path) -> int:
    """Lines ending in a newline: a torn last line is a rollout still being written."""
    with path.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _planned(results: Path, dataset: str) -> int | None:
    try:
        return len(json.loads((results / "tasks" / f"{dataset}.json").read_text())["task_ids"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def block_progress(results: str | Path) -> list[BlockProgress]:
    """Every block with a rollout file or a partial one under ``results``, in path order.

    A finished block counts the rollouts in its file: a task without anything to generate (a
    mutation without an injection site) is left out, so ``done`` may stay below ``planned``. No
    rollouts yet (or no such directory): an empty list.
    """
    root = Path(results)
    rollouts = root / "rollouts"
    found: dict[tuple[str, str, str], BlockProgress] = {}
    for path in sorted(rollouts.glob(f"*/*/*.jsonl{PARTIAL_SUFFIX}")) + sorted(rollouts.glob("*/*/*.jsonl")):
        finished = not path.name.endswith(PARTIAL_SUFFIX)
        dataset, label = path.parent.parent.name, path.parent.name
        method = path.name.removesuffix(PARTIAL_SUFFIX).removesuffix(".jsonl")
        key = (dataset, name_of_label(label), method)
        found[key] = BlockProgress(*key, _complete_lines(path), _planned(root, dataset), finished)
    # Imported blocks (rollouts/imported/<dataset>/<model>/<method>.jsonl) have no task list to plan by.
    for path in sorted(rollouts.glob("imported/*/*/*.jsonl")):
        if not path.name.endswith(".quarantine.jsonl"):
            key = (path.parent.parent.name, name_of_label(path.parent.name), path.name.removesuffix(".jsonl"))
            found[key] = BlockProgress(*key, _complete_lines(path), None, True)
    return [found[key] for key in sorted(found)]
