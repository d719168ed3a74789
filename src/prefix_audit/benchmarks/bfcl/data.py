"""The multi-turn entries, ground truth and function docs of the pinned ``bfcl-eval`` wheel, and
the seeded, category-stratified task sample."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from prefix_audit.plugin import PackagePin, pinned_package

from . import semantics as sem

DATASET = "bfcl_v3"
DATASET_VERSION = "3"  # the BFCL version the dataset id names (BFCL_v3_… files); v4 kept its multi-turn categories
DEFAULT_PIN = PackagePin("bfcl-eval", "2026.3.23",
                         "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a")
# Older data releases a result file may have been made on. BFCL changed its multi-turn data (and
# environment code) under the same category names in Oct-Nov 2025; 2025.9.29 holds the data of
# the v3 era (shipped unchanged from 2025.7.17 to 2025.10.2.1), on which BFCL_v3_* files were made.
V3_ERA_PIN = PackagePin("bfcl-eval", "2025.9.29", "603baf3a611e5764c0ab621a65555343f358e0de3275377c239489b2e2506571")
DATA_PINS = (DEFAULT_PIN, V3_ERA_PIN)  # newest first
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
_PKG = "bfcl_eval"
_DATA = f"{_PKG}/data"


@dataclass(frozen=True)
class Entry:
    id: str
    category: str
    question: tuple[tuple[dict, ...], ...]
    initial_config: Mapping[str, Any]
    involved_classes: tuple[str, ...]
    held_out: Mapping[str, int]  # missed function name → turn from which it is exposed
    ground_truth: tuple[tuple[str, ...], ...]
    release: str = DEFAULT_PIN.version  # the bfcl-eval release whose data it is

    def user_texts(self, turn: int) -> tuple[str, ...]:
        """The user's messages of a turn (none in a turn where withheld functions arrive)."""
        return tuple(str(m.get("content", "")) for m in self.question[turn] if m.get("role") == "user")

    @property
    def long_context(self) -> bool:
        return "long_context" in self.category


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class BfclData:
    """The multi-turn entries, ground truth and function docs of one unpacked bfcl-eval wheel."""

    def __init__(self, root: str | Path, pin: PackagePin = DEFAULT_PIN) -> None:
        self.root = Path(root)
        self.pin = pin
        data = self.root / _DATA
        if not data.is_dir():
            raise FileNotFoundError(f"no BFCL data under {data}; fetch {pin.name}=={pin.version} first")
        self.entries: dict[str, Entry] = {}
        for cat in CATEGORIES:
            questions = _read_jsonl(data / f"BFCL_v4_multi_turn_{cat}.json")
            answer_file = data / "possible_answer" / f"BFCL_v4_multi_turn_{cat}.json"
            answers = {a["id"]: a["ground_truth"] for a in _read_jsonl(answer_file)}
            for q in questions:
                held = {name: int(turn) for turn, names in q.get("missed_function", {}).items() for name in names}
                self.entries[q["id"]] = Entry(
                    q["id"], cat, tuple(tuple(turn) for turn in q["question"]), q.get("initial_config", {}),
                    tuple(q["involved_classes"]), held, tuple(tuple(t) for t in answers[q["id"]]), pin.version)
        self.docs: dict[str, list[dict]] = {
            cls: _read_jsonl(data / "multi_turn_func_doc" / fname) for cls, fname in sem.FUNC_DOC_FILES.items()}

    @property
    def release(self) -> str:
        return self.pin.version

    @cached_property
    def data_sha256(self) -> str:
        import hashlib

        h = hashlib.sha256()
        for path in sorted((self.root / _DATA).glob("**/BFCL_v4_multi_turn_*.json")):
            h.update(path.relative_to(self.root).as_posix().encode())
            h.update(path.read_bytes())
        return h.hexdigest()


def data_files(root: str | Path) -> list[Path]:
    """Every file :class:`BfclData` reads from the wheel unpacked at ``root``: the multi-turn entries, their
    ground truth and the function docs."""
    data = Path(root) / _DATA
    return [*(data / f"BFCL_v4_multi_turn_{cat}.json" for cat in CATEGORIES),
            *(data / "possible_answer" / f"BFCL_v4_multi_turn_{cat}.json" for cat in CATEGORIES),
            *(data / "multi_turn_func_doc" / name for name in sem.FUNC_DOC_FILES.values())]


def load_data(resources: str | Path, pin: PackagePin = DEFAULT_PIN, fetch: bool = True) -> BfclData:
    return BfclData(pinned_package(pin, resources, fetch=fetch), pin)


def sample_task_ids(data: BfclData, n: int, seed: int) -> list[str]:
    """A deterministic stratified sample: ``n`` entries spread evenly over the four categories."""
    import numpy as np

    rng = np.random.default_rng(seed)
    per_cat = [n // len(CATEGORIES) + (i < n % len(CATEGORIES)) for i in range(len(CATEGORIES))]
    chosen: list[str] = []
    for cat, k in zip(CATEGORIES, per_cat, strict=True):
        ids = sorted((e.id for e in data.entries.values() if e.category == cat), key=id_order)
        if k > len(ids):
            raise ValueError(f"asked for {k} {cat} entries, only {len(ids)} exist")
        picked = rng.choice(len(ids), size=k, replace=False)
        chosen.extend(ids[i] for i in sorted(picked))
    return chosen


def id_order(entry_id: str) -> tuple[str, int]:
    stem, num = entry_id.rsplit("_", 1)
    return stem, int(num)

