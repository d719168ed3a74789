"""Hand-made tau2 ``results.json`` documents: messages, simulations and the task definitions a
results file embeds, built on the packaged τ-bench airline tasks."""

from __future__ import annotations

import copy
import json

GREETING = {"role": "assistant", "content": "Hi! How can I help you today?"}
STOP = {"role": "user", "content": "###STOP###"}


def user_says(text):
    return {"role": "user", "content": text}


def agent_says(text):
    return {"role": "assistant", "content": text}


def tool_call(call_id, name, arguments, result, error=False):
    """An agent tool call and the environment's recorded result."""
    return [{"role": "assistant", "content": None,
             "tool_calls": [{"id": call_id, "name": name, "arguments": arguments, "requestor": "assistant"}]},
            {"role": "tool", "id": call_id, "content": result, "error": error, "requestor": "assistant"}]


def simulation(sim_id, task_id, messages, termination="user_stop", reward=1.0):
    return {"id": sim_id, "task_id": task_id, "trial": 0, "seed": 1, "termination_reason": termination,
            "agent_cost": 0.0, "user_cost": 0.0, "reward_info": {"reward": reward, "reward_basis": ["DB", "COMMUNICATE"]},
            "messages": messages}


def results_document(tau, simulations, task_ids=("5", "12")):
    """A results file of the airline tasks ``task_ids``, carrying their definitions as the packaged
    task file has them (as tau2 writes a results file)."""
    bench = tau["tau_airline"]
    definitions = {t["id"]: t for t in json.loads(bench.domain.files.tasks.read_text())}
    return {"info": {"environment_info": {"domain_name": "airline"},
                     "agent_info": {"implementation": "llm_agent", "llm": "test-model"}},
            "tasks": [copy.deepcopy(definitions[t]) for t in task_ids],
            "simulations": simulations}


def disagreements(episodes_parquet):
    """(task_id, recorded_y, Y, log_issue) of each episode whose Y differs from the log's own verdict."""
    import polars as pl

    rows = pl.read_parquet(episodes_parquet).filter(pl.col("recorded_y").is_null() | pl.col("Y").is_null()
                                                   | (pl.col("recorded_y") != pl.col("Y")))
    return [(r["task_id"], r["recorded_y"], r["Y"], r["log_issue"]) for r in rows.iter_rows(named=True)]
