"""AgentProcessBench's tau2 trajectory records (data sources ``tau2_airline``, ``tau2_retail``,
``tau2_telecom``) → τ rollouts, read as the tau2 simulations they were made from.

A record holds one tau2 simulation's conversation as chat messages in OpenAI's shape, which is read
message for message as tau2 writes it (:func:`.importer.read_conversation`): the policy as a system
message (no action), the agent's greeting, the user's and the agent's messages, the agent's
``tool_calls`` (``function.arguments`` a JSON text) and the tool messages answering them by
``tool_call_id``; ``meta`` gives the task (``task_id``, ``domain``), the simulation id and its
``termination_reason``, ``reward_info.reward`` the recorded reward. Each task is scored against the
task definitions of the τ dataset opened for the import (the records carry none of their own), as a
tau2 results file without a tasks list is. Every rollout keeps the record's ``label_record_id`` as
``meta.record_id`` (the key of AgentProcessBench's labels) and its messages' positions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from prefix_audit.core.decode import RECORD_SHAPE_ERRORS, JsonLine, shape_reason
from prefix_audit.core.records import model_in_log
from prefix_audit.plugin import BadLine, ImportRequest, Located, TrajectoryReader, value_at

from ..domain.data import DOMAINS
from .importer import BadSimulation, open_tau2, rollout_from_simulation
from .task_plans import task_plan

SHAPE = "AgentProcessBench tau2 records"


def _tau2_message(m: Any, where: str) -> dict[str, Any]:
    """One chat message in the shape a tau2 simulation stores it."""
    if not isinstance(m, dict):
        raise BadSimulation("a message must be an object", where)
    role, content = m.get("role"), m.get("content")
    if role == "tool":
        return {"role": "tool", "id": m.get("tool_call_id"), "content": content}
    if role != "assistant" or not m.get("tool_calls"):
        return {"role": role, "content": content}
    if not isinstance(m["tool_calls"], list):
        raise BadSimulation(f"{where}.tool_calls must be a list")
    calls = []
    for i, c in enumerate(m["tool_calls"]):
        function = c.get("function") if isinstance(c, dict) else None
        if not isinstance(function, dict):
            raise BadSimulation(f"{where}.tool_calls[{i}] must be an object with a 'function'")
        calls.append({"id": c.get("id"), "name": function.get("name"), "arguments": function.get("arguments")})
    return {"role": role, "content": content, "tool_calls": calls}


def simulation_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The tau2 simulation a record holds."""
    meta, reward_info = record.get("meta"), record.get("reward_info")
    if not isinstance(meta, dict) or not isinstance(reward_info, dict):
        raise BadSimulation("'meta' and 'reward_info' must be objects")
    messages = record.get("messages")
    if not isinstance(messages, list):
        raise BadSimulation("'messages' must be a list")
    return {"id": meta.get("simulation_id"), "task_id": meta.get("task_id"),
            "termination_reason": meta.get("termination_reason"),
            "messages": [_tau2_message(m, f"messages[{k}]") for k, m in enumerate(messages)],
            "reward_info": {"reward": reward_info.get("reward")}}


def _agent_llm(record: Mapping[str, Any]) -> Any:
    """What the record's tau2 info names as the agent's model."""
    return value_at(record["meta"], "tau2_info", "agent_info", "llm")


def reader(domain: str) -> TrajectoryReader:
    def read(lines: Sequence[JsonLine], request: ImportRequest) -> Iterator[Located | BadLine]:
        bench = open_tau2(request, domain)
        task_ids = [str(line.value["meta"].get("task_id")) for line in lines
                    if isinstance(line.value.get("meta"), dict)]
        plan = task_plan({}, task_ids, bench, request.source.name, SHAPE, carries_tasks=False)
        for line in lines:
            record = line.value
            try:
                sim = simulation_of(record)
                model, named_by = model_in_log(request.model, _agent_llm(record), "meta.tau2_info.agent_info.llm",
                                               str(line.path))
                rollout = rollout_from_simulation(sim, bench, plan, model, request.method, {})
            except RECORD_SHAPE_ERRORS as exc:
                yield BadLine(line.path, line.line, f"unusable AgentProcessBench tau2 record: {shape_reason(exc)}",
                              None, line.excerpt)
                continue
            record_id = record.get("label_record_id")
            meta = {**rollout.meta, **({"record_id": record_id} if isinstance(record_id, str) else {})}
            yield Located(line.path, line.line, dataclasses.replace(rollout, meta=meta), named_by)

    return read


TRAJECTORY_SOURCES: Mapping[str, TrajectoryReader] = {f"tau2_{d}": reader(d) for d in DOMAINS}
