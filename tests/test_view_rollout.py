"""A rollout page shows every message in the order it happened: each turn's user message said whose it
is (the benchmark's text or a simulated user's), the agent's own text between and beside its actions,
its actions with V_j and the observations, the user's own calls; the turns a run never reached are
said once. Scoring carries what the page needs (``user_source``, ``agent_texts``) in the episodes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from conftest import RESOURCES, SHARED
from test_view import browser  # noqa: F401 (test_view's Chromium, for the slow test below)

from prefix_audit.cli import main
from prefix_audit.core.calls import ToolCall
from prefix_audit.core.records import PARTY_CALLS_KEY, Rollout, Step, agent_texts, dumps
from prefix_audit.replay.fed import ACTION_SCHEMA, EPISODE_SCHEMA
from prefix_audit.replay.rows import MAX_RESULT_CHARS

SIMULATED = "the simulated user&#39;s message, as the log recorded it"
BENCHMARK = "the user&#39;s message — the benchmark&#39;s text"
BESIDE = "the agent&#39;s text beside its call"
MESSAGE = "the agent&#39;s message (text, no action)"


def _call(name: str, **kwargs) -> ToolCall:
    return ToolCall(name, (), kwargs, structured=True)


def test_agent_texts_are_every_steps_text_but_the_terminal_actions():
    turns = ((Step((), "Which order?"),),  # told the user, then the user answered: not the last step
             (Step((_call("find", q="a"),), "Let me look."), Step((), "   "), Step((_call("get", id=1),)),
              Step((), "Done.")))
    rollout = Rollout("d", "t", "m", "x", "r", turns)
    assert agent_texts(rollout) == [(0, 0, "Which order?"), (1, 0, "Let me look.")]  # "Done." is the action
    ends_with_a_call = Rollout("d", "t", "m", "x", "r", turns[:1] + ((turns[1][0],),))
    assert agent_texts(ends_with_a_call) == [(0, 0, "Which order?"), (1, 0, "Let me look.")]
    assert agent_texts(Rollout("d", "t", "m", "x", "r", ((Step((), "Only this."),),))) == []


def test_scoring_writes_who_wrote_the_user_messages_and_the_agents_text(bfcl, tmp_path):
    task = "multi_turn_base_1"
    record = json.loads(dumps(bfcl.reference_rollout(task))) | {"model": "m", "rollout_id": "r"}
    record["turns"][0][0]["text"] = "I will list the files first."
    record["turns"][0].append({"calls": [], "text": "Here they are. " + "y" * 3000})  # not the last step
    source = tmp_path / "rollouts.jsonl"
    source.write_text(json.dumps(record) + "\n")
    assert main(["score", str(source), "-o", str(tmp_path / "out"), "--resources", str(RESOURCES)]) == 0
    ep = pl.read_parquet(tmp_path / "out" / "episodes.parquet").row(0, named=True)
    assert ep["user_source"] == "benchmark"  # BFCL's questions are the benchmark's own text
    assert ep["user_turns"][0] == " ".join(bfcl.entry(task).user_texts(0))
    last = len(record["turns"][0]) - 1
    assert ep["agent_texts"] == [{"turn": 0, "step": 0, "text": "I will list the files first."},
                                 {"turn": 0, "step": last, "text": ("Here they are. " + "y" * 3000)[:MAX_RESULT_CHARS]}]


def test_a_tau_user_is_simulated_as_recorded_or_the_reference_conversations_scripted_user(tau):
    from dataclasses import replace

    from prefix_audit.replay.checker import replay

    bench = tau["tau_airline"]
    reference = bench.reference_rollout("0")  # it carries its conversation's user messages
    assert "user_turns" in reference.meta and replay(reference, bench).user_source == "simulated"
    unrecorded = replace(reference, meta={k: v for k, v in reference.meta.items() if k != "user_turns"})
    episode = replay(unrecorded, bench)  # read against the reference conversation instead
    assert episode.user_source == "reference"
    assert episode.user_texts == bench.reference_conversation("0").user_turns[:len(reference.turns)]


# -- the page, from a hand-made scored block -----------------------------------------------------------------


def _episode(**values) -> dict:
    row = {name: [] if isinstance(dtype, pl.List) else None for name, dtype in pl.Schema(EPISODE_SCHEMA).items()}
    return row | {"model": "m", "method": "x", "trial": 0, "source": "test", "meta_json": "{}",
                  "FED_agent": values["T"] + 1, "FED": values["T"] + 1, "Y": 1} | values


def _action(rollout_id: str, j: int, turn: int, step: int, call: str, terminal: bool = False, **values) -> dict:
    row = {name: [] if isinstance(dtype, pl.List) else None for name, dtype in pl.Schema(ACTION_SCHEMA).items()}
    return row | {"model": "m", "method": "x", "task_id": "t", "rollout_id": rollout_id, "j": j, "turn": turn,
                  "step": step, "call": call, "terminal": terminal, "V": True, "accepted": not terminal,
                  "result": None if terminal else f"result of {call}"} | values


def _block(root: Path, dataset: str, episodes: list[dict], actions: list[dict]) -> None:
    folder = root / "scored" / dataset / "m" / "x"
    folder.mkdir(parents=True)
    pl.DataFrame([e | {"dataset": dataset} for e in episodes], schema=pl.Schema(EPISODE_SCHEMA)) \
        .write_parquet(folder / "episodes.parquet")
    pl.DataFrame([a | {"dataset": dataset} for a in actions], schema=pl.Schema(ACTION_SCHEMA)) \
        .write_parquet(folder / "actions.parquet")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    # a τ conversation: the agent asks, the user answers, the agent calls (saying so), then tells the result
    _block(root, "tau_retail", [_episode(
        task_id="t", rollout_id="tau", T=3, n_turns=2, user_source="simulated",
        user_turns=["I want to return <b>my lamp</b>.", "My order is #W1."],
        agent_texts=[{"turn": 0, "step": 0, "text": "Which order is it?"},
                     {"turn": 1, "step": 0, "text": "Let me look it up."},
                     {"turn": 1, "step": 1, "text": "It is pending; shall I return it? " + "z" * 400}])],
        [_action("tau", 1, 1, 0, "get_order(id='#W1')"), _action("tau", 2, 1, 2, "return_order(id='#W1')"),
         _action("tau", 3, 1, 3, "It is done.", terminal=True)])
    # a BFCL run force-stopped in its second turn of four
    _block(root, "bfcl_v3", [_episode(
        task_id="t", rollout_id="bfcl", T=2, n_turns=2, user_source="benchmark",
        user_turns=["List the files.", "Move report.pdf.", "Sort them.", "Count the lines."],
        y_detail="multi_turn:force_terminated (2 of 4 turns)")],
        [_action("bfcl", 1, 0, 0, "ls()"), _action("bfcl", 2, 1, 4, "mv(source='report.pdf')")])
    # τ² telecom: the user acts on their phone after the agent's last turn
    party = [{"turn": 1, "name": "toggle_airplane_mode", "arguments": {}}]
    _block(root, "tau_telecom", [_episode(
        task_id="t", rollout_id="telecom", T=1, n_turns=1, user_source="simulated", user_turns=["No signal."],
        meta_json=json.dumps({PARTY_CALLS_KEY: party}))],
        [_action("telecom", 1, 0, 0, "Please toggle airplane mode.", terminal=True)])
    out = tmp_path_factory.mktemp("site") / "site"
    assert main(["view", str(root), "-o", str(out)]) == 0
    return out


def _page(site: Path, dataset: str) -> str:
    return (site / "blocks" / dataset / "m" / "x" / "r" / "1.html").read_text()


def _body(page: str) -> str:
    return page.split('<table class="actions">')[1].split("</table>")[0]


def test_every_message_shows_in_the_order_it_happened(site):
    body = _body(_page(site, "tau_retail"))
    order = ["Turn 1", SIMULATED, "I want to return &lt;b&gt;my lamp&lt;/b&gt;.", MESSAGE, "Which order is it?",
             "Turn 2", "My order is #W1.", BESIDE, "Let me look it up.", "get_order(id='#W1')",
             "result of get_order", MESSAGE, "It is pending; shall I return it?",
             "return_order(id='#W1')", "final message", "It is done."]
    at = 0
    for text in order:  # each after the one before
        at = body.index(text, at) + len(text)
    assert body.count('class="agent-text"') == 3 and body.count(SIMULATED) == 2
    assert "<b>my lamp</b>" not in body  # the user's text is text, never markup
    assert "After the last turn" not in body and "never reached" not in body


def test_the_benchmarks_own_user_text_is_said_so_and_turns_never_reached_are_said_once(site):
    body = _body(_page(site, "bfcl_v3"))
    assert [re.sub(r"\s+", " ", h) for h in re.findall(r'<tr class="turn[^"]*"><th colspan="5">([^<]*)</th>', body)] \
        == ["Turn 1", "Turn 2", "Turns 3–4 never reached: the run stopped in turn 2, after 5 model steps in it "
            "(Y&#39;s detail: multi_turn:force_terminated (2 of 4 turns))"]
    assert body.count("never reached") == 1 and "After the last turn" not in body
    assert body.count('class="user-request"') == 2 and BENCHMARK in body and SIMULATED not in body
    never = body.split("never reached")[1]  # the messages never sent, there and only there
    assert "Sort them." in never and "Count the lines." in never and "turn 3: " + BENCHMARK in never
    assert "Sort them." not in body.split("never reached")[0]


def test_after_the_last_turn_is_where_the_user_acted_after_it(site):
    body = _body(_page(site, "tau_telecom"))
    assert body.count("After the last turn") == 1
    assert body.index("After the last turn") > body.index("Please toggle airplane mode.")
    assert "toggle_airplane_mode()" in body.split("After the last turn")[1]


@pytest.mark.slow
def test_in_a_browser_at_1366_pixels_a_rollout_page_does_not_scroll_sideways(site, browser):
    for dataset in ("tau_retail", "bfcl_v3"):
        browser.set_window_size(1366, 768)
        browser.get((site / "blocks" / dataset / "m" / "x" / "r" / "1.html").as_uri())
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth"), dataset


REAL_TAU2 = SHARED / "fixtures" / "real-logs" / "tau2" / "gpt-4.1_retail_40tasks_1trial.json"


@pytest.mark.slow
@pytest.mark.skipif(not REAL_TAU2.is_file(), reason="needs ../shared/fixtures/real-logs")
def test_a_real_tau2_log_shows_what_the_agent_told_the_user_between_its_calls(tmp_path):
    out = tmp_path / "audit"
    assert main(["audit", "--no-figures", str(REAL_TAU2), "-o", str(out), "--no-health", "--resources", str(RESOURCES)]) == 0
    episodes = pl.read_parquet(out / "fed" / "episodes.parquet")
    assert set(episodes["user_source"]) == {"simulated"}
    assert (episodes["agent_texts"].list.len() > 0).all()  # every tau2 agent talks to its user between calls
    rollouts = [json.loads(line) for line in next((out / "rollouts").rglob("imported.jsonl")).read_text().splitlines()]
    first = next(r for r in rollouts if r["rollout_id"] == episodes["rollout_id"][0])
    spoken = [s["text"] for turn in first["turns"] for s in turn if s.get("text", "").strip()]
    assert [t["text"] for t in episodes["agent_texts"][0]] == [t[:MAX_RESULT_CHARS] for t in spoken[:-1]]
    page = next(p.read_text() for p in (out / "site").rglob("r/*.html")
                if f"<code>{first['rollout_id']}</code>" in p.read_text())
    assert page.count('class="agent-text"') == len(spoken) - 1
    assert page.count(SIMULATED) == len(first["meta"]["user_turns"])
