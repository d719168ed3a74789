"""BFCL result files as ``bfcl generate`` writes them, with the ``inference_log`` of the run: the ground
truth of an entry emitted as the model's calls, each executed on a fresh copy of the entry's
environment to record the tool results BFCL's run would have recorded."""

from __future__ import annotations

import json
from pathlib import Path

from prefix_audit.benchmarks.bfcl.loader import invoke, method_table, public_state
from prefix_audit.core.calls import parse_call_string


def gold_entry(bfcl, task_id: str, style: str = "calls") -> dict:
    """One result line of ``task_id``'s ground truth: per turn one step per call and a closing empty
    step, with the inference log of that run. ``style``: ``calls`` — function-calling call objects;
    ``json_text`` — each step the model's JSON text ``[{"name", "arguments"}]`` (as xLAM writes it),
    which BFCL's own decoder read as calls."""
    entry = bfcl.entry(task_id)
    instances = bfcl.loader.instantiate(entry)
    methods = method_table(instances)
    result, log = [], []
    for t, turn in enumerate(entry.ground_truth):
        # the state each turn begins in, as BFCL's log writes it (objects it cannot serialise as text)
        log.append([{"role": "state_info", "class_name": name,
                     "content": json.loads(json.dumps(public_state(instance), default=str))}
                    for name, instance in instances.items()])
        steps, logged = [], {"begin_of_turn_query": [{"role": "user", "content": q} for q in entry.user_texts(t)]}
        for s, raw in enumerate(turn):
            call = parse_call_string(raw)
            assert not call.args, "the ground truth of the entries used here has keyword arguments only"
            step = ([{call.name: json.dumps(call.kwargs)}] if style == "calls"
                    else json.dumps([{"name": call.name, "arguments": call.kwargs}]))
            steps.append(step)
            logged[f"step_{s}"] = [{"role": "assistant", "content": step},
                                   {"role": "handler_log", "content": "Successfully decoded model response.",
                                    "model_response_decoded": [raw]},
                                   {"role": "tool", "content": invoke(methods, call)[2]}]
        closing = [] if style == "calls" else "Done."
        logged[f"step_{len(turn)}"] = [{"role": "assistant", "content": closing},
                                       {"role": "handler_log", "content": "Successfully decoded model response.",
                                        "model_response_decoded": []}]
        result.append([*steps, closing])
        log.append(logged)
    return {"id": task_id, "result": result, "inference_log": log}


def write_result_file(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def write_score_file(path: Path, total: int, failing: dict[str, str]) -> Path:
    """A BFCL score file: the summary line, then one line per failing entry."""
    lines = [{"accuracy": (total - len(failing)) / total, "correct_count": total - len(failing), "total_count": total}]
    lines += [{"id": i, "model_name": "m", "test_category": i.rsplit("_", 1)[0], "valid": False,
               "error": {"error_message": "…", "error_type": kind}} for i, kind in failing.items()]
    return write_result_file(path, lines)
