"""What BFCL logs are read with (:class:`BfclReading`): BFCL's model config and the data releases a
file is chosen from, built once per import from the benchmark (:func:`bfcl_reading`) and handed whole
to each file's reading (:mod:`.importer`, :mod:`.process_records`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prefix_audit.core.fetch import FetchError
from prefix_audit.plugin import Benchmark, RefusedOption, Rollout

from .data import V3_ERA_PIN, BfclData
from .handlers import ModelEntry, model_config
from .versions import DataChoice, RecordedRun, choose_release, reproduction


@dataclass(frozen=True)
class BfclReading:
    """What BFCL logs are read with, handed whole to each file's reading: BFCL's model ``config``
    (model key → entry: it chooses a file's handler, :mod:`.handlers`; empty, or for a model it lacks,
    the decoder is chosen by content); the data ``releases`` a file may have been made on (newest
    first; empty: none is chosen, the benchmark's own release scores it), the one ``--bfcl-data``
    gives (``data_release``; None: chosen per file), the pinned ones that could not be loaded, and
    why (``unavailable``, said with the choice), and the benchmark that replays a file's recorded
    tool results on them (``bench``; None: the results do not weigh in)."""

    config: Mapping[str, ModelEntry] = field(default_factory=dict)
    releases: Mapping[str, BfclData] = field(default_factory=dict)
    data_release: str | None = None
    unavailable: tuple[str, ...] = ()
    bench: Benchmark | None = None

    def choose(self, runs: Sequence[RecordedRun], file_name: str, rollouts: Sequence[Rollout]) -> DataChoice:
        """The release a file was made on (:func:`.versions.choose_release`): from its recorded
        ``runs`` and, replayed on the releases, the tool results its ``rollouts`` recorded."""
        reproduce = functools.partial(reproduction, self.bench, rollouts) if self.bench is not None else None
        return choose_release(self.releases, runs, file_name, V3_ERA_PIN.version, self.data_release,
                              self.unavailable, reproduce)


def bfcl_reading(bench: Any) -> BfclReading:
    """How logs of the BFCL benchmark ``bench`` are read: its model config, and the releases a log is
    chosen from (the pinned packages are fetched when absent; an older one that cannot be is left out,
    and said)."""
    given = getattr(bench, "data_release", None)  # --bfcl-data
    if given is not None and given not in bench.releases():
        raise RefusedOption(f"--bfcl-data {given!r} is no pinned bfcl-eval release ({', '.join(bench.releases())})")
    releases, unavailable = {}, []
    for release in [given] if given else bench.releases():
        try:
            releases[release] = bench.data_of(release)
        except (OSError, FetchError) as exc:  # offline without the older wheel: today's data still reads
            if release == bench.data.release or release == given:
                raise
            unavailable.append(f"bfcl-eval {release} unavailable ({' '.join(str(exc).split())[:200]})")
    return BfclReading(model_config(bench.data.root), releases, given, tuple(unavailable), bench)
