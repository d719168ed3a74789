"""The Inspect scorer (prefix_audit.inspect_scorer): the same FED, T, category and Y as ``prefix-audit audit``
of the same log, sample by sample, on real logs of inspect_evals' own tasks; its metric on synthetic scores."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.scorer import SampleScore, Score  # noqa: E402

from prefix_audit.cli import main  # noqa: E402
from prefix_audit.inspect_scorer import TALLIES, _tallies, fed, fed_epochs, fed_metrics  # noqa: E402

RESOURCES = Path(__file__).resolve().parents[1] / "resources"


def _episode(fed_, t, y):
    return {"FED": fed_, "T": t, "Y": y}


def _value(fed_, t, y, replayed=True):
    return {"replayed": replayed, **_tallies(_episode(fed_, t, y) if replayed else None)}


def test_metrics_are_the_audits_definitions_on_synthetic_rollouts():
    # FED/T/Y of five rollouts: fully executable and solved; failed at 1 and solved (a recovery);
    # failed at 3 and not solved; an infrastructure failure (Y 0); and one never replayed.
    values = [_value(4, 3, 1), _value(1, 2, 1), _value(3, 5, 0), _value(None, None, 0), _value(None, None, None, False)]
    out = fed_metrics()([SampleScore(score=Score(value=v), sample_id=n) for n, v in enumerate(values)])
    assert out["n_prefix"] == 3 and out["n_final"] == 4 and out["n_not_replayed"] == 1
    assert out["TER"] == pytest.approx(1 / 3) and out["mean_FED"] == pytest.approx(8 / 3)
    assert [out[f"PEC@{k}"] for k in range(1, 5)] == pytest.approx([2 / 3, 2 / 3, 1 / 3, 0])
    assert out["final_success"] == pytest.approx(2 / 4)
    assert out["recovery"] == pytest.approx(1 / 2) and out["n_recovery_eligible"] == 2


def test_recovery_is_undefined_without_a_prefix_failure():
    out = fed_metrics()([SampleScore(score=Score(value=_value(2, 1, 1)), sample_id=1)])
    assert out["TER"] == 1 and math.isnan(out["recovery"])


def test_the_epoch_reducer_sums_tallies_and_keeps_the_metric_exact():
    # Task a: epochs FED 1 of T 2 and fully executable of T 1; task b: two executable epochs.
    a, b = [Score(value=_value(1, 2, 0)), Score(value=_value(2, 1, 1))], [Score(value=_value(3, 2, 1))] * 2
    reduced = [fed_epochs()(a), fed_epochs()(b)]
    assert "FED" not in reduced[0].value and reduced[0].value["prefix"] == 2
    pooled = fed_metrics()([SampleScore(score=s, sample_id=n) for n, s in enumerate([*a, *b])])
    by_task = fed_metrics()([SampleScore(score=s, sample_id=n) for n, s in enumerate(reduced)])
    for key in ("TER", "mean_FED", "PEC@1", "PEC@2", "final_success", "recovery"):
        assert by_task[key] == pytest.approx(pooled[key])
    assert set(TALLIES) <= set(reduced[0].value)


def test_the_scorer_is_registered_through_inspects_entry_point_group():
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    group = project["project"]["entry-points"]["inspect_ai"]
    assert group == {"prefix_audit": "prefix_audit.inspect_scorer"}
    from inspect_ai._util.registry import registry_info

    assert registry_info(fed).name.endswith("fed")


def _audited(log: Path, out: Path) -> dict[tuple[str, int], dict]:
    assert main(["audit", str(log), "-o", str(out), "--resamples", "200", "--resources", str(RESOURCES)]) == 0
    episodes = pl.read_parquet(out / "fed" / "episodes.parquet")
    return {(r["task_id"], r["trial"] + 1): r for r in episodes.iter_rows(named=True)}


def _rescored(log: Path, out: Path, **args) -> object:
    from inspect_ai import score

    rescored = score(read_eval_log(str(log)), fed(resources=str(RESOURCES), **args), action="append", display="none")
    write_eval_log(rescored, str(out))
    return read_eval_log(str(out))


def _check_same_as_audit(log: Path, tmp_path: Path, task: str, own_scorer: str) -> None:
    audited = _audited(log, tmp_path / "audit")
    for args in ({"task": task}, {}):
        back = _rescored(log, tmp_path / f"rescored-{len(args)}.eval", **args)
        assert [s.name for s in back.results.scores] == [own_scorer, "fed"]  # the task's own score is kept
        metrics = back.results.scores[1].metrics
        assert {"TER", "mean_FED", "PEC@1", "PEC@4", "final_success", "recovery"} <= set(metrics)
        assert len(back.samples) == len(audited)
        for sample in back.samples:
            score, episode = sample.scores["fed"], audited[(str(sample.id), sample.epoch)]
            assert own_scorer in sample.scores or sample.error is not None
            if not score.value["replayed"]:  # only a sample without the task's own score, when the task is not named
                assert not args.get("task") and own_scorer not in sample.scores and "-S task=" in score.explanation
                continue
            assert (score.value["FED"], score.value["T"], score.value["Y"], score.value["category"]) == \
                (episode["FED"], episode["T"], episode["Y"], episode["category"])
            actions = score.metadata["actions"]
            if episode["T"] is None:
                continue
            assert all(a["V"] for a in actions[:episode["FED"] - 1])  # every action before FED executable
            if episode["FED"] <= episode["T"]:
                assert score.answer == actions[episode["FED"] - 1]["call"] and score.explanation.startswith("action")


@pytest.mark.slow
def test_tau2_airline_scores_equal_the_audit_sample_by_sample(inspect_logs, tmp_path):
    _check_same_as_audit(inspect_logs["tau2_eval"], tmp_path, "tau2_airline", "airline_scorer")


@pytest.mark.slow
def test_tau2_telecom_scores_equal_the_audit_sample_by_sample(inspect_tau2_telecom_log, tmp_path):
    _check_same_as_audit(inspect_tau2_telecom_log, tmp_path, "tau2_telecom", "telecom_scorer")


@pytest.mark.slow
def test_bfcl_scores_equal_the_audit_sample_by_sample(inspect_logs, tmp_path):
    _check_same_as_audit(inspect_logs["bfcl_eval"], tmp_path, "bfcl", "bfcl_scorer")


@pytest.mark.slow
def test_a_sample_of_another_task_is_a_score_that_says_so(inspect_logs, tmp_path):
    back = _rescored(inspect_logs["bfcl_eval"], tmp_path / "other.eval", task="tau2_retail")
    values = [s.scores["fed"].value for s in back.samples]
    assert values and not any(v["replayed"] for v in values)
    assert all(s.scores["fed"].explanation.startswith("not replayed: unusable Inspect sample (tau2_retail)")
               for s in back.samples)
    assert back.results.scores[1].metrics["n_not_replayed"].value == len({s.id for s in back.samples})
