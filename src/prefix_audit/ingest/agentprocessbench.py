"""AgentProcessBench trajectory records → rollout records: ``prefix-audit import agentprocessbench``.

AgentProcessBench (RUCBM/AgentProcessBench) published human step labels of agents' trajectories on
BFCL multi-turn and tau2, and the trajectories themselves as JSON Lines, one record per trajectory:
``data_source`` (``bfcl_multi_turn_base``, ``tau2_airline``, …), the chat ``messages`` (OpenAI's shape:
``role``, ``content``, an assistant's ``tool_calls`` of ``{id, function: {name, arguments}}``, a tool
message's ``tool_call_id``), ``reward_info`` (the benchmark's verdict: ``reward``), ``meta`` (which
entry and model: BFCL's ``bfcl_id`` and ``model_name``, tau2's ``domain``, ``task_id``,
``termination_reason``), and — in the records that carry labels — ``label_record_id`` and
``human_step_labels`` (read as labels by :mod:`prefix_audit.core.labels`).

Like Inspect, this is a log format, not a benchmark: each record goes to the benchmark that
registered its data source (``Registration.trajectory_sources``), all of one source at once (BFCL
chooses its data release per file). Every rollout carries the record's id as ``meta.record_id`` and
its messages' positions, so labels keyed by message index land on its actions. A record of a data
source no benchmark reads, or that is no record, is quarantined with the reason; the others go on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from prefix_audit.core.decode import BadLine, JsonLine, first_json_line, iter_json_lines
from prefix_audit.core.reading import value_at
from prefix_audit.core.records import Located
from prefix_audit.replay import registry
from prefix_audit.replay.registry import ImportRequest

FORMAT = "agentprocessbench"
RECORD_KEYS = frozenset({"data_source", "messages", "reward_info", "meta"})


def is_agentprocessbench_log(path: Path) -> bool:
    """JSON Lines whose first record is an object with AgentProcessBench's keys (:data:`RECORD_KEYS`)."""
    obj = first_json_line(path) if path.is_file() else None
    return isinstance(obj, dict) and RECORD_KEYS <= obj.keys()


def read_agentprocessbench_log(request: ImportRequest) -> Iterator[Located | BadLine]:
    """Every record as a rollout of the benchmark that reads its data source, or a quarantine record."""
    sources = registry.trajectory_sources()
    groups: dict[str, list[JsonLine]] = {}
    for item in iter_json_lines(request.source):
        if isinstance(item, BadLine):
            yield item
            continue
        record = item.value
        source = value_at(record, "data_source")
        if not isinstance(record, dict) or not RECORD_KEYS <= record.keys():
            yield BadLine(item.path, item.line, f"not an AgentProcessBench trajectory record (an object with "
                                                f"{', '.join(sorted(RECORD_KEYS))})", None, item.excerpt)
        elif source not in sources:
            yield BadLine(item.path, item.line, f"data source {source!r} is not one a benchmark reads "
                                                f"({', '.join(sorted(sources)) or 'none'})", None, item.excerpt)
        else:
            groups.setdefault(source, []).append(item)
    for source, lines in groups.items():
        yield from sources[source](lines, request)


registry.register(registry.Registration(__name__, (), importers={FORMAT: read_agentprocessbench_log},
                                        detectors={FORMAT: is_agentprocessbench_log}))
