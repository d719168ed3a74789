"""Work spread over processes, results back in input order: what makes an audit use every core.

A :class:`WorkerPool` runs a module-level function on each item of a stream in ``workers``
processes and yields the results in the order of the items, so whatever the number of workers the
caller sees one sequence and writes the same bytes. It holds at most a few items per worker in
flight (a stream of entries is never read ahead whole), and one pool serves a whole command: a
worker's state — the benchmarks it opened, through the ``shared`` object every call receives —
outlives the calls, so each worker opens a benchmark once.

Workers start with ``spawn`` (a fresh interpreter): the parent has NumPy's and polars' threads by
then, and ``fork`` beside threads may deadlock. They run under ``PYTHONHASHSEED=0`` unless the
parent sets another. ``workers`` 1 runs every call in this process.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

MAX_DEFAULT_WORKERS = 8
IN_FLIGHT_PER_WORKER = 3  # enough to keep a worker busy while the parent takes the results in

START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
_shared: Any = None  # in a worker: the object every call receives
EXIT_PARENT_GONE = 75  # a worker's exit status when its parent ended before it


def default_workers() -> int:
    """The cores this process may run on, at most :data:`MAX_DEFAULT_WORKERS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_WORKERS))


BYTES_PER_WORKER = 4 * 2**20  # a worker costs about a second to start and open its benchmarks


def input_bytes(paths: Iterable[str | os.PathLike]) -> int:
    """The bytes of these files and of every file inside these folders."""
    size = 0
    for path in map(Path, paths):
        if path.is_dir():
            size += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        elif path.is_file():
            size += path.stat().st_size
    return size


def workers_for(paths: Iterable[str | os.PathLike], most: int | None = None) -> int:
    """Processes worth starting for inputs of these files and folders: one per
    :data:`BYTES_PER_WORKER` of them, at least one, at most ``most`` (default: the cores, at most
    :data:`MAX_DEFAULT_WORKERS`). Below a few megabytes a second process costs more than it saves."""
    return workers_for_bytes(input_bytes(paths), most)


def workers_for_bytes(size: int, most: int | None = None) -> int:
    """:func:`workers_for` inputs of ``size`` bytes."""
    return max(1, min(most or default_workers(), 1 + size // BYTES_PER_WORKER))


def _set_shared(shared: Any) -> None:
    global _shared
    _shared = shared
    exit_with_parent()


def exit_with_parent() -> None:
    """In a worker: end this process when the one that started the pool ends. Killed (a SIGTERM from
    ``timeout``, Slurm or a user, the out-of-memory killer), the parent takes no worker down with it,
    and a worker left behind runs on, then blocks for ever writing its result to a queue no one reads
    (the other workers hold its pipe open) — with its benchmarks' memory held. The parent's sentinel,
    a pipe multiprocessing keeps for this, reads end-of-file when the parent is gone."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(EXIT_PARENT_GONE)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _call_with_shared(fn: Callable[[Any, T], R], item: T) -> R:
    return fn(_shared, item)


@contextmanager
def _main_script_hidden() -> Iterator[None]:
    """The main module without its file while workers start. Workers call this package's functions
    only, but multiprocessing rebuilds a main *script* (a Snakemake job's, a user's without a
    ``__main__`` guard) in each worker by running it again — which would start the job over."""
    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None or not hasattr(main, "__file__"):
        yield  # a module run with -m is imported by name, under a name that its guard skips
        return
    path = main.__file__
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path


class WorkerPool:
    """``workers`` processes (started on first use) that call ``fn(shared, item)``; a context manager."""

    def __init__(self, workers: int, shared: Any, preload: Sequence[str] = ()) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers
        self.shared = shared
        self.preload = list(preload)
        self._executor: ProcessPoolExecutor | None = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            # Workers inherit the environment: under one hash seed, as the command and the workflow's
            # jobs run, sets iterate alike in every worker (benchmark messages print sets).
            os.environ.setdefault("PYTHONHASHSEED", "0")
            context = multiprocessing.get_context(START_METHOD)
            if START_METHOD == "forkserver":
                context.set_forkserver_preload(self.preload)
            self._executor = ProcessPoolExecutor(self.workers, mp_context=context,
                                                 initializer=_set_shared, initargs=(self.shared,))
        return self._executor

    def map(self, fn: Callable[[Any, T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(shared, item)`` of every item, in the items' order."""
        if self.workers == 1:
            for item in items:
                yield fn(self.shared, item)
            return
        pool = self._pool()
        pending: deque[Future[R]] = deque()
        try:
            for item in items:
                with _main_script_hidden():  # a submit may start a worker
                    pending.append(pool.submit(_call_with_shared, fn, item))
                if len(pending) >= self.workers * IN_FLIGHT_PER_WORKER:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BrokenProcessPool as exc:  # a worker died (killed, out of memory): nothing it held is known
            raise RuntimeError(f"a worker process of {self.workers} stopped unexpectedly ({exc}); rerun with "
                               f"--workers 1 to see which entry it was") from None
        finally:
            for future in pending:
                future.cancel()


class Progress:
    """How far a long step has got: a bar on a terminal, otherwise one line per finished part."""

    def __init__(self, what: str, total: int, *, enabled: bool, unit: str = "entry") -> None:
        self.what = what
        self.enabled = enabled
        self.lines = enabled and not sys.stderr.isatty()
        from tqdm import tqdm  # only where progress is shown: it costs a command that shows none its import

        self.bar = tqdm(total=total, desc=what, unit=unit, file=sys.stderr, ncols=100, leave=False,
                        disable=not enabled or self.lines)

    def advance(self, n: int = 1) -> None:
        self.bar.update(n)

    def grow(self, n: int) -> None:
        """``n`` more to do (a stream whose length is known as it is read)."""
        self.bar.total = (self.bar.total or 0) + n
        self.bar.refresh()

    def part_done(self, text: str) -> None:
        if self.lines:
            print(f"{self.what}: {text}", file=sys.stderr, flush=True)

    def close(self) -> None:
        self.bar.close()
