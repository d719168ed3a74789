"""The Inspect scorer (prefix_audit.inspect_scorer): the same FED, T, category and Y as ``prefix-audit audit``
of the same log, sample by sample, on real logs of inspect_evals' own tasks; its metric on synthetic scores."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.scorer import SampleScore, Score  # noqa: E402

from prefix_audit.cli import main  # noqa: E402
from prefix_audit.inspect_scorer import _tallies, fed, fed_metrics  # noqa: E402
from test_view import browser  # noqa: E402, F401  (the real browser of the site's tests)

RESOURCES = Path(__file__).resolve().parents[1] / "resources"


def _episode(fed_, t, y, fed_agent=None, origin="agent"):
    failed = t is not None and fed_ <= t
    return {"FED": fed_, "T": t, "Y": y, "FED_agent": fed_ if fed_agent is None else fed_agent,
            "origin": origin if failed else None}


def _score(fed_, t, y, replayed=True, fed_agent=None, origin="agent"):
    episode = _episode(fed_, t, y, fed_agent, origin) if replayed else None
    return Score(value={"replayed": replayed}, metadata={"tallies": _tallies(episode)})


def test_metrics_are_the_audits_definitions_on_synthetic_rollouts():
    # FED/T/Y of five rollouts: fully executable and solved; failed at 1 and solved (a recovery);
    # failed at 3 and not solved; an infrastructure failure (Y 0); and one never replayed.
    scores = [_score(4, 3, 1), _score(1, 2, 1), _score(3, 5, 0), _score(None, None, 0), _score(None, None, None, False)]
    out = fed_metrics()([SampleScore(score=s, sample_id=n) for n, s in enumerate(scores)])
    assert out["n_prefix"] == 3 and out["n_final"] == 4 and out["n_not_replayed"] == 1
    assert out["TER"] == pytest.approx(1 / 3) and out["mean_FED"] == pytest.approx(8 / 3)
    assert [out[f"PEC@{k}"] for k in range(1, 5)] == pytest.approx([2 / 3, 2 / 3, 1 / 3, 0])
    assert out["final_success"] == pytest.approx(2 / 4)
    assert out["recovery"] == pytest.approx(1 / 2) and out["n_recovery_eligible"] == 2


def test_the_agents_own_metrics_read_fed_agent():
    # A first failure at 1 that is the user's, the agent's own at 3 of T 4; a fully executable rollout; one
    # the benchmark's harness failed at 2 with no failure of the agent's after it.
    scores = [_score(1, 4, 0, fed_agent=3, origin="user"), _score(5, 4, 1), _score(2, 3, 0, fed_agent=4,
                                                                                   origin="benchmark")]
    out = fed_metrics()([SampleScore(score=s, sample_id=n) for n, s in enumerate(scores)])
    assert out["TER"] == pytest.approx(1 / 3) and out["TER_agent"] == pytest.approx(2 / 3)
    assert out["mean_FED"] == pytest.approx(8 / 3) and out["mean_FED_agent"] == pytest.approx(12 / 3)
    assert (out["first_failures_user"], out["first_failures_benchmark"]) == (1, 1)


def test_recovery_is_undefined_without_a_prefix_failure():
    out = fed_metrics()([SampleScore(score=_score(2, 1, 1), sample_id=1)])
    assert out["TER"] == 1 and math.isnan(out["recovery"])


def test_the_metric_reads_every_epoch_so_no_reducer_averages_fed():
    # Declared "unreduced": Inspect hands it one score per sample-epoch, so two epochs of one task are two
    # rollouts (as the audit counts trials), whatever the log's epoch reducer.
    from inspect_ai.scorer._metric import metric_scores

    assert metric_scores(fed_metrics()) == "unreduced"
    epochs = [SampleScore(score=_score(1, 2, 0), sample_id="a"),
              SampleScore(score=_score(2, 1, 1), sample_id="a")]
    out = fed_metrics()(epochs)
    assert (out["n_prefix"], out["mean_FED"], out["TER"]) == (2, 1.5, 0.5)


def test_the_scorer_is_registered_through_inspects_entry_point_group():
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    group = project["project"]["entry-points"]["inspect_ai"]
    assert group == {"prefix_audit": "prefix_audit.inspect_scorer"}
    from inspect_ai._util.registry import registry_info

    assert registry_info(fed).name.endswith("fed")


def _audited(log: Path, out: Path) -> dict[tuple[str, int], dict]:
    assert main(["audit", "--no-figures", str(log), "-o", str(out), "--resamples", "200", "--resources", str(RESOURCES)]) == 0
    episodes = pl.read_parquet(out / "fed" / "episodes.parquet")
    return {(r["task_id"], r["trial"] + 1): r for r in episodes.iter_rows(named=True)}


def _rescored(log: Path, written_to: Path | None = None, **args) -> object:
    """The log scored again with the fed scorer (appended), as Inspect returns it; written to ``written_to``
    too where given (the written values: tests/test_inspect_scorer_ints.py). Not read back: a log of
    inspect_evals' tau2 keeps its database in every sample's store, and reading it again costs more than
    the scoring."""
    from inspect_ai import score

    rescored = score(read_eval_log(str(log)), fed(resources=str(RESOURCES), **args), action="append", display="none",
                     copy=False)
    if written_to is not None:
        write_eval_log(rescored, str(written_to))
    return rescored


def _rescored_by_inspect_cli(log: Path, out: Path) -> object:
    """``inspect score`` itself, finding the scorer through the installed entry point."""
    done = subprocess.run([sys.executable, "-m", "inspect_ai", "score", str(log), "--scorer", "prefix_audit/fed",
                           "-S", f"resources={RESOURCES}", "--action", "append", "--output-file", str(out),
                           "--display", "none"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return read_eval_log(str(out))


def _check_same_as_audit(log: Path, tmp_path: Path, own_scorer: str, back) -> None:
    audited = _audited(log, tmp_path / "audit")
    assert [s.name for s in back.results.scores] == [own_scorer, "fed"]  # the task's own score is kept
    assert len(back.samples) == len(audited)
    for sample in back.samples:
        score, episode = sample.scores["fed"], audited[(str(sample.id), sample.epoch)]
        assert own_scorer in sample.scores or sample.error is not None
        assert score.value["replayed"], score.explanation  # an errored sample's task is told by its metadata
        assert (score.value["FED"], score.value["T"], score.value["Y"], score.value["category"]) == \
            (episode["FED"], episode["T"], episode["Y"], episode["category"])
        actions = score.metadata["actions"]
        if episode["T"] is None:
            assert score.explanation.startswith("not in the prefix metrics: an infrastructure failure")
            continue
        assert all(a["V"] for a in actions[:episode["FED"] - 1])  # every action before FED executable
        if episode["FED"] <= episode["T"]:
            assert score.answer == actions[episode["FED"] - 1]["call"] and score.explanation.startswith("action")
    # The metrics are the audit's point estimates over every sample-epoch, with its cohorts' sizes.
    metrics = {k: v.value for k, v in back.results.scores[1].metrics.items()}
    prefix = [e for e in audited.values() if e["T"] is not None]
    assert metrics["n_prefix"] == len(prefix) and metrics["n_not_replayed"] == 0
    assert metrics["n_final"] == sum(e["Y"] is not None for e in audited.values())
    assert metrics["TER"] == pytest.approx(sum(e["FED"] == e["T"] + 1 for e in prefix) / len(prefix))
    assert metrics["mean_FED"] == pytest.approx(sum(e["FED"] for e in prefix) / len(prefix))


@pytest.mark.slow
def test_tau2_airline_scores_equal_the_audit_sample_by_sample(inspect_logs, tmp_path):
    log = inspect_logs["tau2_eval"]
    _check_same_as_audit(log, tmp_path, "airline_scorer", _rescored(log))


@pytest.mark.slow
def test_tau2_retail_scores_equal_the_audit_sample_by_sample(tmp_path):
    pytest.importorskip("inspect_evals")
    import inspect_tau2_logs

    # A replayed conversation with every kind of bad call, and one that ended with an error (no own score).
    log = inspect_tau2_logs.write_tau2_log(tmp_path / "log", domain="retail", epochs=1,
                                           scenarios={"57": "agent_error", "73": "unknown_tool+rejected+malformed"})
    _check_same_as_audit(log, tmp_path, "retail_scorer", _rescored(log))


@pytest.mark.slow
def test_tau2_telecom_scores_equal_the_audit_sample_by_sample(inspect_tau2_telecom_log, tmp_path):
    log = inspect_tau2_telecom_log
    _check_same_as_audit(log, tmp_path, "telecom_scorer", _rescored(log))


@pytest.fixture(scope="module")
def bfcl_by_inspect_cli(inspect_logs, tmp_path_factory):
    """The suite's bfcl log rescored by ``inspect score`` (the log, the rescored log)."""
    log = inspect_logs["bfcl_eval"]
    out = tmp_path_factory.mktemp("inspect-cli") / "view" / log.name
    out.parent.mkdir()
    return log, _rescored_by_inspect_cli(log, out), out


@pytest.mark.slow
def test_bfcl_scores_by_the_inspect_command_equal_the_audit(bfcl_by_inspect_cli, tmp_path):
    log, back, _ = bfcl_by_inspect_cli
    _check_same_as_audit(log, tmp_path, "bfcl_scorer", back)
    named = _rescored(log, task="bfcl")
    assert [s.scores["fed"].value for s in named.samples] == [s.scores["fed"].value for s in back.samples]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_inspect_view_shows_the_fed_score_beside_the_tasks_own(bfcl_by_inspect_cli, browser):  # noqa: F811
    """``inspect view`` on the rescored log, in a real browser: a sample's scores hold ``fed`` (FED, T, the
    first failing call) beside ``bfcl_scorer``. PREFIX_AUDIT_SCREENSHOT=FILE.png keeps a screenshot."""
    from selenium.webdriver.common.by import By

    _, back, rescored = bfcl_by_inspect_cli
    sample = next(s for s in back.samples if s.scores["fed"].answer)  # one with a failing call
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "inspect_ai", "view", "--log-dir", str(rescored.parent),
                               "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while server.poll() is None and time.monotonic() < deadline:  # the server starting
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        browser.get(f"http://127.0.0.1:{port}/#/logs/{rescored.name}/samples/sample/{sample.id}/{sample.epoch}/scoring")
        wanted = ("bfcl_scorer", "fed", sample.scores["fed"].answer, sample.scores["fed"].explanation[:40])
        text = ""
        while time.monotonic() < deadline and not all(w in text for w in wanted):  # the viewer loading the log
            time.sleep(0.5)
            text = browser.find_element(By.TAG_NAME, "body").text
        assert all(w in text for w in wanted), text[:2000]
        if os.environ.get("PREFIX_AUDIT_SCREENSHOT"):
            browser.save_screenshot(os.environ["PREFIX_AUDIT_SCREENSHOT"])
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_a_sample_of_another_task_is_a_score_that_says_so(inspect_logs, tmp_path):
    back = _rescored(inspect_logs["bfcl_eval"], task="tau2_retail")
    values = [s.scores["fed"].value for s in back.samples]
    assert values and not any(v["replayed"] for v in values)
    assert all(s.scores["fed"].explanation.startswith("not replayed: unusable Inspect sample (tau2_retail)")
               for s in back.samples)
    assert back.results.scores[1].metrics["n_not_replayed"].value == len(back.samples)
