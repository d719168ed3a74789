"""One rollout's page of the audit browser: every message in the order it happened — the user's (whose it
is), the user's own calls, the agent's text and its actions with V_j, the benchmark's verdict and the
observation —, the first failure boxed with its predicates, the log's record beside the replay, human
labels, the planning trace and the record's metadata.

:func:`rollout_view` turns a rollout's rows into the plain values its template shows;
:func:`render_rollout_pages` renders a batch of them, in whichever process: the site spreads its
thousands of rollout pages over worker processes (:mod:`~prefix_audit.reports.block_pages`), each with
its own Jinja2 environment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from prefix_audit.core.records import PARTY_CALLS_KEY, RecordError, call_from_json
from prefix_audit.replay.record_check import DIVERGED
from prefix_audit.replay.rows import MAX_RESULT_CHARS

from .pages import clip, environment, health_anchor, up_to_root

META_CHARS = 10_000  # a rollout's metadata as shown


def _verdict(row: Mapping[str, Any]) -> str:
    if row["V"] is None and row["origin"] is not None:
        return "after the first failure: fails, judged for FED_agent"
    if row["V"] is None:
        return "not judged (after the first failure)"
    return "executable" if row["V"] else "not executable"


def _label_view(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"verdict": row["verdict"], "category": row["category"], "blamed": row["blamed"], "place": row["place"],
            "note": clip(row["note"], 300), "landed": LANDED_WORDS.get(row["landed"], row["landed"]),
            "reason": row["reason"]}


# How a label between actions reads on its rollout page: who wrote the message it is on.
LANDED_WORDS = {"agent_text": "the agent's text", "user": "the user's message", "tool": "a tool's reply",
                 "system": "the system prompt", "other": "another message"}


def _labels_by_place(labels: pl.DataFrame | None) -> tuple[dict[int, list], dict[int, list], list]:
    """A rollout's labels: on each action (by depth), between actions (by how many actions precede
    them), and those that landed on no step."""
    on: dict[int, list] = {}
    between: dict[int, list] = {}
    unmatched: list = []
    for row in labels.sort("message", "place", nulls_last=True).iter_rows(named=True) if labels is not None else ():
        view = _label_view(row)
        if row["landed"] == "action":
            for j in row["actions"]:
                on.setdefault(j, []).append(view)
        elif row["landed"] == "unmatched":
            unmatched.append(view)
        else:
            between.setdefault(row["after_action"] or 0, []).append(view)
    return on, between, unmatched


# Who wrote a turn's user message, as its rollout page says it (replay.contract.USER_SOURCES; null: a FED
# table of an earlier version, which did not say).
_USER_WORDS = {"benchmark": "the user's message — the benchmark's text",
               "simulated": "the simulated user's message, as the log recorded it",
               "reference": "the scripted user's message of this package's reference conversation (the rollout "
                            "recorded none)",
               None: "the user's message"}


def rollout_view(ep: Mapping[str, Any], actions: Sequence[Mapping[str, Any]], labels: pl.DataFrame | None = None,
                  compared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a rollout page shows, in plain values (the template escapes every one): of its ``actions``
    (rows of the actions table, by depth); ``labels`` and ``compared``: its human step labels and its row
    of the label comparison, where it has them.

    ``turns`` holds every message in the order it happened, turn by turn: the user's message (said
    whose it is), the user's own calls, then step by step the agent's text and its actions. Turns the
    task has but the rollout never reached (BFCL stops a run early) are one entry, ``unreached``."""
    meta = json.loads(ep["meta_json"]) if ep["meta_json"] else {}
    planning = meta.pop("planning", None) if isinstance(meta, dict) else None
    on, between, unmatched = _labels_by_place(labels)
    first = ep["FED"] if ep["T"] is not None and ep["FED"] is not None and ep["FED"] <= ep["T"] else None
    agent_first = ep["FED_agent"] if first is not None and first < ep["FED_agent"] <= ep["T"] else None
    said: dict[int, list[dict[str, Any]]] = {}  # by turn: the agent's texts and actions, ordered below
    for a in actions:
        predicates = [{"category": c, "code": k, "detail": d} for c, k, d in
                      zip(a["failure_categories"], a["failure_codes"], a["failure_details"], strict=True)]
        said.setdefault(a["turn"], []).append({
            "kind": "action", "j": a["j"], "step": a["step"], "terminal": a["terminal"], "tool": a["tool"],
            "message": a["message"], "labels": on.get(a["j"], []), "after": between.get(a["j"], []),
            "call": clip(a["call"]), "verdict": _verdict(a), "V": a["V"], "accepted": a["accepted"],
            "result": clip(a["result"], stored=MAX_RESULT_CHARS), "predicates": predicates,
            "first": a["j"] == first, "agent_first": a["j"] == agent_first,
            "origin": a["origin"], "origin_evidence": a["origin_evidence"], "given_as": a["given_as"],
            "diverged": a["record_match"] in DIVERGED,
            "match": _MATCH_WORDS.get(a["record_match"]), "recorded_error": a["recorded_error"],
            "recorded": clip(a["recorded_result"], stored=MAX_RESULT_CHARS),
            "replayed": clip(a["replayed_result"], stored=MAX_RESULT_CHARS)})
    with_calls = {(a["turn"], a["step"]) for a in actions if not a["terminal"]}
    for t in ep["agent_texts"] or []:
        said.setdefault(t["turn"], []).append({"kind": "text", "step": t["step"],
                                               "beside": (t["turn"], t["step"]) in with_calls,
                                               "text": clip(t["text"], stored=MAX_RESULT_CHARS)})
    for items in said.values():  # a step's text before its calls: the model wrote it first
        items.sort(key=lambda item: (item["step"], item["kind"] == "action"))
    party = _party_calls(meta.get(PARTY_CALLS_KEY) if isinstance(meta, dict) else None)
    users = list(ep["user_turns"] or [])
    # The turns the rollout reached: those of its record, and any its actions sit in (an empty rollout's
    # one empty terminal action opens the first).
    reached = max([ep["n_turns"], *(t + 1 for t in said)])
    who = _USER_WORDS.get(ep["user_source"], _USER_WORDS[None])
    turns = [{"turn": t, "heading": f"Turn {t + 1}" if t < reached else "After the last turn",
              "user": clip(users[t]) if t < min(reached, len(users)) and users[t] else None, "who": who,
              "party": party.get(t, []), "said": said.get(t, [])}
             for t in sorted({*said, *party, *(t for t, text in enumerate(users[:reached]) if text)})]
    shown_meta = json.dumps(meta, indent=1, sort_keys=True, ensure_ascii=False) if meta else None
    return {"ep": ep, "turns": turns, "first": first, "agent_first": agent_first,
            "unreached": _unreached(ep, users, who, reached, said), "planning": _planning(planning),
            "meta": clip(shown_meta, META_CHARS), "record": ep["call_steps"] is not None,
            "issues": (ep["log_issue"] or "").split("; ") if ep["log_issue"] else [],
            "labels": labels is not None and labels.height > 0, "labels_before": between.get(0, []),
            "labels_unmatched": unmatched, "compared": compared,
            "health": health_anchor(ep["dataset"], ep["release"], ep["task_id"])}


def _unreached(ep: Mapping[str, Any], users: Sequence[str], who: str, reached: int,
               said: Mapping[int, Sequence[Mapping[str, Any]]]) -> dict[str, Any] | None:
    """The turns of the task after the last one the rollout reached (``reached`` ≥ 1: a rollout with
    user messages has an action), said once: which, why the run stopped — how far its last turn went
    and Y's detail —, and their user messages (written by ``who``); None when it reached them all."""
    if len(users) <= reached:
        return None
    span = f"Turn {reached + 1}" if len(users) == reached + 1 else f"Turns {reached + 1}–{len(users)}"
    why = f"the run stopped in turn {reached}"
    if said.get(reached - 1):
        steps = 1 + max(item["step"] for item in said[reached - 1])
        why += f", after {steps} model step{'s' if steps > 1 else ''} in it"
    why += f" (Y's detail: {ep['y_detail']})" if ep["y_detail"] else ""
    return {"span": span, "why": why, "who": who,
            "users": [(t + 1, clip(users[t])) for t in range(reached, len(users)) if users[t]]}


def _party_calls(entries: object) -> dict[int, list[dict[str, Any]]]:
    """Another party's calls a rollout carries (``meta.user_calls``: τ² telecom's user on their phone),
    by the turn they came before: each call as text and the result the log recorded, if any."""
    out: dict[int, list[dict[str, Any]]] = {}
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("turn"), int):
            continue
        try:
            call = call_from_json(entry, PARTY_CALLS_KEY).render()
        except RecordError:  # scoring refuses such a rollout; its page shows what is there
            call = str(entry.get("name"))
        result = found if isinstance(found := entry.get("result"), dict) else {}
        out.setdefault(entry["turn"], []).append({"call": clip(call), "recorded": clip(result.get("content")),
                                                  "recorded_error": result.get("error")})
    return out


# How a diverged call's record_match reads on its rollout page.
_MATCH_WORDS = {"same_verdict": "both ok or both errors, the content differs",
                "differs": "one an error, the other not",
                "not_replayed": "the log shows it ran; replay could not run it"}


def _planning(trace: object) -> dict[str, Any] | None:
    """A planned method's per-turn planning record (``meta.planning``) as a table of text cells."""
    if not isinstance(trace, list) or not trace:
        return None
    entries = [e if isinstance(e, dict) else {"entry": e} for e in trace]
    columns = sorted({k for e in entries for k in e}, key=lambda k: (k != "turn", k))
    return {"columns": columns, "rows": [[_cell(e[c]) if c in e else "" for c in columns] for e in entries]}


def _cell(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class RolloutPage:
    """What one rollout page is made of: its path in the site, its number in its block, its episode row,
    its actions by depth, its human labels and its row of the label comparison (where it has them), why
    its task was not audited (None: it was)."""

    path: str
    n: int
    ep: Mapping[str, Any]
    actions: Sequence[Mapping[str, Any]]
    labels: pl.DataFrame | None
    compared: Mapping[str, Any] | None
    unaudited: str | None


@dataclass(frozen=True)
class BlockName:
    """The block a rollout page belongs to, as its title and links name it."""

    dataset: str
    model: str
    method: str
    folder: str


def render_rollout_pages(block: BlockName, has_health: bool, pages: Sequence[RolloutPage]) -> list[tuple[str, bytes]]:
    """The pages of a batch of one block's rollouts, as (path, bytes)."""
    template = environment().get_template("rollout.html.j2")
    up = up_to_root(f"{block.folder}/r")
    return [(page.path, template.render(up=up, has_health=has_health, block=block, n=page.n, unaudited=page.unaudited,
                                        rollout=rollout_view(page.ep, page.actions, page.labels, page.compared))
             .encode("utf-8")) for page in pages]
