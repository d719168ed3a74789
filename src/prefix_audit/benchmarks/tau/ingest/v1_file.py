"""τ-bench v1 result files read as a whole (:mod:`.importer_v1` reads each entry): the agent strategy
each entry's messages show (the file's majority for one that shows none), the version of v1's data the
run used, the reward rule Y follows, the domain, said once per file (``meta["reading"]``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from prefix_audit.core.decode import RECORD_SHAPE_ERRORS, excerpt_of, plain_name, shape_reason
from prefix_audit.core.records import ModelNamed, NamedBy
from prefix_audit.plugin import BadLine, Benchmark, Located, ToolCall, object_at, value_at

from ..adapter.replay_v1 import TauV1Benchmark, v1_dataset_of
from ..domain import v1
from .errors import TauResultsError
from .importer_v1 import BadEntry, FileReading, RespondText, react_action, rollout_from_entry


class V1ResultsError(TauResultsError):
    """A v1 result file that cannot be used as a whole, with the reason."""


def _messages(entry: Any) -> list[dict[str, Any]]:
    traj = value_at(entry, "traj")
    return [m for m in traj if isinstance(m, dict)] if isinstance(traj, list) else []


def _content(message: Mapping[str, Any]) -> str:
    return message["content"] if isinstance(message.get("content"), str) else ""


def entry_strategy(entry: Any) -> str | None:
    """The agent strategy an entry's own messages show: ``tool-calling`` where it holds tool calls
    or tool replies; ``react`` where a user message carries tool output as v1's ReAct agent writes it
    (``API output: …``) or an agent message an ``Action:`` that v1's ReAct agent reads as a JSON
    action; None where it shows neither (its messages then read alike either way, but for prose that
    happens to hold ``Action:``)."""
    messages = _messages(entry)
    if any(m.get("tool_calls") or m.get("role") == "tool" for m in messages):
        return "tool-calling"
    for m in messages:
        content = _content(m)
        if m.get("role") == "user" and content.startswith(v1.REACT_OUTPUT_PREFIX):
            return "react"
        if m.get("role") == "assistant" and v1.REACT_ACTION_MARKER in content \
                and not isinstance(react_action(content, ""), RespondText):
            return "react"
    return None


def _strategies(entries: list[Any]) -> tuple[list[str | None], str]:
    """Each entry's own strategy (:func:`entry_strategy`) and the one an entry that shows none is
    read as: that of most entries that show one (tool-calling, v1's default, on a tie or when none does)."""
    shown = [entry_strategy(e) for e in entries]
    counts = Counter(s for s in shown if s)
    default = "react" if counts["react"] > counts["tool-calling"] else "tool-calling"
    return shown, default


def shows_current_rule(entries: list[Any]) -> bool:
    """Whether the file shows v1's reward rule since 2024-11-10: an entry whose outputs were all
    found (``r_outputs`` 1) and still scored 0 — only the DB check, new for tasks with outputs, does
    that."""
    for entry in entries:
        checks = object_at(entry, "info", "reward_info", "info")
        if checks.get("r_outputs") == 1 and entry.get("reward") == 0:
            return True
    return False


def _replies(entry: Any, strategy: str) -> Iterator[str]:
    """The tool replies an entry recorded (tool messages; a ReAct entry's ``API output:`` messages)."""
    for m in _messages(entry):
        content = _content(m)
        if strategy == "react" and m.get("role") == "user" and content.startswith(v1.REACT_OUTPUT_PREFIX):
            yield content[len(v1.REACT_OUTPUT_PREFIX):]
        elif strategy != "react" and m.get("role") == "tool":
            yield content


def _names_province(reply: str) -> bool:
    """A reply holding a user's address that names its state ``province`` (v1's data before 2025-01-16)."""
    key = v1.PROVINCE_ERA.region_key
    if key not in reply:
        return False
    try:
        value = json.loads(reply)
    except (ValueError, RecursionError):
        return False
    address = value.get("address") if isinstance(value, dict) else None
    return isinstance(address, dict) and key in address


def detect_era(entries: list[Any], strategies: list[str], domain: str) -> tuple[v1.DataEra, str]:
    """The version of v1's data the run used (:data:`..domain.v1.V1_DATA_ERAS`) and the evidence in words:
    replies holding a user's address with ``province`` (only the older data has it) and recorded gold
    hashes equal to an untouched database's. Without either, the current version (its addresses then
    show no difference)."""
    province = sum(_names_province(r) for e, s in zip(entries, strategies, strict=True)
                   for r in _replies(e, s))
    hashes: Counter = Counter()
    for entry in entries:
        checks = object_at(entry, "info", "reward_info", "info")
        era = v1.untouched_era(domain, checks.get("gt_data_hash"))
        if era is not None:
            hashes[era.name] += 1
    era = v1.PROVINCE_ERA if province or hashes[v1.PROVINCE_ERA.name] else v1.DEFAULT_ERA
    shown = [f"{province} replies with a user address naming its 'province'"] if province else []
    shown += [f"{n} recorded gold hashes of the untouched {name!r}-version database"
              for name, n in sorted(hashes.items())]
    evidence = "; ".join(shown) if shown else "nothing in the file tells the versions apart: the current one"
    return era, f"v1's data of {era.commits} ({evidence})"


def _summary(shown: list[str | None], default: str, era_text: str) -> str:
    """The file's reading in words: how many entries each strategy read, and the data version."""
    read = [shown_strategy or default for shown_strategy in shown]
    parts = []
    for strategy in v1.STRATEGIES:
        lines = [i for i, s in enumerate(read, start=1) if s == strategy]
        if lines:
            where = f" (entries {', '.join(map(str, lines[:5]))}{', …' if len(lines) > 5 else ''})" \
                if len(lines) < len(read) else ""
            parts.append(f"{len(lines)} as the {strategy} agent wrote them{where}")
    unshown = sum(s is None for s in shown)
    said = f"; {unshown} of them show neither strategy's messages, read as {default}" if unshown else ""
    return f"τ-bench v1 results, per entry: {', '.join(parts)}{said}; {era_text}"


def _react_tools(traj: list[Any]) -> set[str]:
    """The tools of a ReAct trajectory's actions answered with a normal API output."""
    names: set[str] = set()
    for m, reply in zip(traj, traj[1:], strict=False):  # each message with the next
        if not isinstance(m, dict) or not isinstance(reply, dict) or m.get("role") != "assistant" \
                or not isinstance(m.get("content"), str) or not isinstance(reply.get("content"), str):
            continue
        output = reply["content"]
        if not output.startswith(v1.REACT_OUTPUT_PREFIX) \
                or output[len(v1.REACT_OUTPUT_PREFIX):].startswith(v1.UNKNOWN_ACTION_PREFIX):
            continue
        action = react_action(m["content"], "")
        if isinstance(action, ToolCall) and action.name:
            names.add(action.name)
    return names


def _called_tools(traj: list[Any]) -> set[str]:
    """The tools of a tool-calling trajectory's calls answered with a normal result."""
    names: set[str] = set()
    calls: dict[Any, Any] = {}
    for m in traj:
        if not isinstance(m, dict):
            continue
        for c in m.get("tool_calls") or []:
            if isinstance(c, dict) and isinstance(c.get("function"), dict):
                calls[c.get("id")] = c["function"].get("name")
        content = m.get("content")
        if m.get("role") == "tool" and isinstance(content, str) and not content.startswith(v1.UNKNOWN_ACTION_PREFIX):
            name = calls.get(m.get("tool_call_id"))
            if isinstance(name, str):
                names.add(name)
    return names


def detect_domain(entries: list[Any], where: str, strategies: list[str]) -> str:
    """The file's domain from the tools of its gold actions and of calls answered with a normal
    result, each entry read by its strategy (raises :class:`V1ResultsError` when they name both
    domains or neither)."""
    names: set[Any] = set()  # the gold's names are as the file records them: not all strings
    for entry, strategy in zip(entries, strategies, strict=True):
        if not isinstance(entry, dict):
            continue
        names |= {a.get("name") for a in object_at(entry, "info", "task").get("actions") or [] if isinstance(a, dict)}
        traj = entry.get("traj")
        traj = traj if isinstance(traj, list) else []
        names |= _react_tools(traj) if strategy == "react" else _called_tools(traj)
    found = v1.domain_evidence(n for n in names if isinstance(n, str))
    if len(found) != 1:
        said = "both airline and retail" if found else "neither airline nor retail"
        raise V1ResultsError(f"{where}: the tools of its gold actions and calls name {said}; pass "
                             f"--tau-v1-domain airline|retail")
    return found.pop()


def is_v1_results(doc: Any) -> bool:
    """A JSON list whose entries have a ``traj``: v1's format."""
    return isinstance(doc, list) and any(isinstance(e, dict) and "traj" in e for e in doc)


def import_v1_results(path: str | Path, doc: list[Any], benchmark_for: Callable[[str], Benchmark],
                      model: str | None = None, method: str = "imported",
                      domain: str | None = None) -> Iterator[Located | BadLine]:
    """Yield a located rollout per usable entry of a parsed v1 result file, a :class:`BadLine` otherwise.

    ``domain`` overrides the detected one; ``benchmark_for`` maps ``tau_v1_<domain>`` to its adapter."""
    path = Path(path)
    shown, default = _strategies(doc)
    strategies = [s or default for s in shown]
    if domain is None:
        domain = detect_domain(doc, str(path), strategies)
    elif domain not in v1.V1_TOOLS:
        raise V1ResultsError(f"--tau-v1-domain is {domain!r}; expected airline or retail")
    bench = benchmark_for(v1_dataset_of(domain))
    assert isinstance(bench, TauV1Benchmark)
    era, era_text = detect_era(doc, strategies, domain)
    current = shows_current_rule(doc)
    rule, rule_text = v1.dated_rule(plain_name(path.name), era, current)
    summary = f"{_summary(shown, default, era_text)}; Y by v1's reward rule {rule} ({rule_text})"
    file = FileReading(era, current, rule, summary)
    # v1's entries record no model: its name is the file's (a compressed copy's too)
    named_by = None if model else ModelNamed(NamedBy.FILE_NAME, "the file name", str(path))
    model = model or Path(plain_name(path.name)).stem
    seen: dict[str, int] = {}
    for i, entry in enumerate(doc, start=1):
        task = excerpt_of(entry.get("task_id"))[:40] if isinstance(entry, dict) else "?"
        try:
            rollout = rollout_from_entry(entry, bench, model, method, str(path), file, strategies[i - 1])
            if rollout.rollout_id in seen:
                raise BadEntry(f"duplicate of entry {seen[rollout.rollout_id]} (same task, trial and task definition)")
            seen[rollout.rollout_id] = i
            yield Located(str(path), i, rollout, named_by)
        except RECORD_SHAPE_ERRORS as exc:  # BadEntry, or a field of the wrong shape
            why = shape_reason(exc)
            yield BadLine(str(path), i, f"unusable τ-bench v1 entry (task {task}): {why}", None, excerpt_of(entry),
                          f"unusable τ-bench v1 entry: {why}", ("task", task))
