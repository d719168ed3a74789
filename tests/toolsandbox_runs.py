"""Writes small run folders in the format ToolSandbox's CLI writes, for the importer tests.

Layout (as observed in real runs): ``result_summary.json`` and per scenario
``trajectories/<name>/execution_context.json`` (``_dbs`` with the SANDBOX message log and the
CONTACT/SETTING/MESSAGING/REMINDER snapshots, each starting with an all-null headguard row; the
allow and deny lists) plus ``conversation.json`` unless the scenario aborted. Messages before the
scenario's first user message are user-simulator examples (``visible_to == ["USER"]``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SANDBOX_COLUMNS = ("sender", "recipient", "content", "openai_tool_call_id", "openai_function_name",
                   "conversation_active", "tool_call_exception", "tool_trace", "visible_to")
CONTACT_COLUMNS = ("person_id", "name", "phone_number", "relationship", "is_self")
TOOLS_IMPORT = ("import json\nfrom tool_sandbox.tools.contact import add_contact, modify_contact, remove_contact, "
                "search_contacts\nfrom tool_sandbox.tools.setting import get_cellular_service_status, "
                "set_cellular_service_status, set_low_battery_mode_status, set_wifi_status\n"
                "from tool_sandbox.tools.messaging import search_messages, send_message_with_phone_number\n"
                "from tool_sandbox.tools.user_tools import end_conversation\n")

BRUNO = {"person_id": "p-bruno", "name": "Bruno Okafor", "phone_number": "+14155550111", "relationship": "friend",
         "is_self": False}
DMITRI = {"person_id": "p-dmitri", "name": "Dmitri Volkov", "phone_number": "+14155550133",
          "relationship": "coworker", "is_self": False}
OWNER = {"person_id": "p-ada", "name": "Ada Lindqvist", "phone_number": "+14155550100", "relationship": "self",
         "is_self": True}


@dataclass
class Call:
    id: str
    tool: str
    arguments: dict[str, Any]
    error: str | None = None
    result: Any = None
    removes: tuple[str, ...] = ()  # person_ids the call removes from the contacts when it succeeds


@dataclass
class ScenarioRun:
    name: str
    events: list[tuple[str, Any]]  # ("user", text) | ("agent", text) | ("calls", [Call], response order or None)
    similarity: float = 1.0
    allowed: list[str] | None = None
    denied: list[str] | None = None
    exception_type: str | None = None
    traceback: str | None = None
    contacts: list[dict[str, Any]] = field(default_factory=lambda: [dict(OWNER), dict(BRUNO), dict(DMITRI)])
    categories: tuple[str, ...] = ("MULTIPLE_TOOL_CALL", "SINGLE_USER_TURN")


def _row(index: int, sender: str | None, recipient: str | None, content: str | None = None, **extra: Any) -> dict:
    row = {"sandbox_message_index": index, **dict.fromkeys(SANDBOX_COLUMNS)}
    row.update(sender=sender, recipient=recipient, content=content, **extra)
    if sender is not None:
        row["conversation_active"] = row.get("conversation_active", True)
    return row


def _request_code(call: Call) -> str:
    return (f"{call.id}_parameters = {call.arguments!r}\n{call.id}_response = {call.tool}(**{call.id}_parameters)\n"
            f"print(repr({call.id}_response))")


def _write_scenario(folder: Path, run: ScenarioRun) -> None:
    sandbox = [_row(0, None, None), _row(0, "SYSTEM", "EXECUTION_ENVIRONMENT", TOOLS_IMPORT),
               _row(1, "SYSTEM", "AGENT", "Don't make assumptions about what values to plug into functions."),
               _row(2, "USER", "AGENT", "I want to send a message to someone.", visible_to=["USER"]),
               _row(3, "AGENT", "USER", "Who should get it?", visible_to=["USER"]),
               _row(4, "SYSTEM", "USER", "You are a user.")]
    contacts = [dict.fromkeys(("sandbox_message_index", *CONTACT_COLUMNS)) | {"sandbox_message_index": 0}]
    contacts += [{"sandbox_message_index": 4, **c} for c in run.contacts]
    live = list(run.contacts)
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "Don't make assumptions."}]
    index = 5
    for kind, payload, *rest in run.events:
        if kind == "user":
            sandbox.append(_row(index, "USER", "AGENT", payload))
            conversation.append({"role": "user", "content": payload})
            index += 1
        elif kind == "agent":
            sandbox.append(_row(index, "AGENT", "USER", payload, visible_to=["AGENT", "USER"]))
            conversation.append({"role": "assistant", "content": payload})
            index += 1
        else:
            calls: list[Call] = payload
            conversation.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.tool, "arguments": json.dumps(c.arguments)}}
                for c in calls]})
            for c in calls:
                sandbox.append(_row(index, "AGENT", "EXECUTION_ENVIRONMENT", _request_code(c), openai_tool_call_id=c.id,
                                    openai_function_name=c.tool))
                index += 1
            order = rest[0] if rest and rest[0] is not None else [c.id for c in calls]
            for cid in order:
                c = next(c for c in calls if c.id == cid)
                trace = None if c.error else [json.dumps({"tool_name": c.tool, "arguments": c.arguments, "result": c.result})]
                sandbox.append(_row(index, "EXECUTION_ENVIRONMENT", "AGENT", c.error or repr(c.result),
                                    openai_tool_call_id=c.id, openai_function_name=c.tool,
                                    tool_call_exception=c.error, tool_trace=trace))
                conversation.append({"tool_call_id": c.id, "role": "tool", "name": c.tool,
                                     "content": c.error or repr(c.result)})
                if c.tool.endswith("_contact"):  # a contact tool snapshots the table, even when it fails
                    if not c.error:
                        live = [p for p in live if p["person_id"] not in c.removes]
                    contacts += [{"sandbox_message_index": index, **p} for p in live]
                index += 1
    if run.exception_type is None:
        sandbox.append(_row(index, "USER", "EXECUTION_ENVIRONMENT", "end_conversation()", conversation_active=False))
        sandbox.append(_row(index + 1, "EXECUTION_ENVIRONMENT", "USER", "None", conversation_active=False,
                            tool_trace=['{"tool_name": "end_conversation", "arguments": {}, "result": null}']))
    settings = [dict.fromkeys(("device_id", "cellular", "wifi", "location_service", "low_battery_mode", "latitude",
                               "longitude")) | {"sandbox_message_index": 0}]
    context = {"_dbs": {"SANDBOX": sandbox, "SETTING": settings, "CONTACT": contacts,
                        "MESSAGING": [{"sandbox_message_index": 0, "message_id": None}],
                        "REMINDER": [{"sandbox_message_index": 0, "reminder_id": None}]},
               "interactive_console": None, "tool_allow_list": run.allowed, "tool_deny_list": run.denied,
               "trace_tool": True, "tool_augmentation_list": [], "preferred_tool_backend": "DEFAULT"}
    folder.mkdir(parents=True)
    (folder / "execution_context.json").write_text(json.dumps(context, indent=4))
    if run.exception_type is None:
        (folder / "conversation.json").write_text(json.dumps(conversation, indent=4))


def write_run(root: Path, scenarios: list[ScenarioRun], name: str = "agent_fake_gpt_user_scripted_06_12_2024_09_00_00") -> Path:
    run = root / name
    results = []
    for s in scenarios:
        _write_scenario(run / "trajectories" / s.name, s)
        results.append({"name": s.name, "categories": list(s.categories), "traceback": s.traceback,
                        "exception_type": s.exception_type, "milestone_similarity": s.similarity,
                        "minefield_similarity": 0, "similarity": s.similarity, "turn_count": 5,
                        "milestone_mapping": {}, "minefield_mapping": {}})
    (run / "result_summary.json").write_text(json.dumps(
        {"per_scenario_results": results, "category_aggregated_results": {}, "git_sha": "0" * 40}, indent=4))
    return run


def disallowed_traceback(tool: str, allowed: list[str]) -> str:
    return ("Traceback (most recent call last):\n"
            '  File "ToolSandbox/tool_sandbox/common/message_conversion.py", line 79, in openai_tool_call_to_python_code\n'
            "    raise KeyError(\n"
            "    ^^^^^^^^^^^^^^^\n"
            f"KeyError: \"Agent tool call agent_facing_tool_name='{tool}' is not a known allowed tool. "
            f"Options are available_tool_names={set(allowed)!r}\"\n")
