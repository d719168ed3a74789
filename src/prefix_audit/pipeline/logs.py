"""Where a stage's logging goes: its Snakemake log file, or stderr when run by hand."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)


@contextlib.contextmanager
def logging_to(path: str | Path | None) -> Iterator[None]:
    """Send this stage's logging and stderr to its Snakemake log file (stderr when ``path`` is None)."""
    if path is None:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        yield
        return
    with open(path, "w", encoding="utf-8") as fh, contextlib.redirect_stderr(fh):
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            yield
        except BaseException:
            log.exception("stage failed")
            raise
        finally:
            root.removeHandler(handler)
