"""The Inspect scorer keeps integers integers: the metric's counts, and FED, T, Y and FED_agent in the value
written to a real eval log (rescored by Inspect's own ``score``, written and read back as JSON text)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai.scorer import SampleScore, Score  # noqa: E402

from prefix_audit.inspect_scorer import _tallies, fed_metrics  # noqa: E402

COUNTS = ("n_prefix", "n_final", "n_recovery_eligible", "n_not_replayed", "first_failures_user",
          "first_failures_benchmark")


def _score(episode):
    return Score(value={"replayed": episode is not None}, metadata={"tallies": _tallies(episode)})


def test_the_metrics_counts_are_ints():
    episodes = [{"FED": 1, "T": 3, "Y": 0, "FED_agent": 2, "origin": "user"},
                {"FED": 4, "T": 3, "Y": 1, "FED_agent": 4, "origin": None}, None]
    out = fed_metrics()([SampleScore(score=_score(e), sample_id=n) for n, e in enumerate(episodes)])
    assert {k: out[k] for k in COUNTS} == {"n_prefix": 2, "n_final": 2, "n_recovery_eligible": 1,
                                          "n_not_replayed": 1, "first_failures_user": 1,
                                          "first_failures_benchmark": 0}
    assert all(type(out[k]) is int for k in COUNTS)
    assert type(out["TER"]) is float and out["TER"] == 0.5


@pytest.mark.slow
def test_fed_and_t_are_ints_in_the_written_log(tmp_path):
    pytest.importorskip("inspect_evals")
    import inspect_tau2_logs
    from test_inspect_scorer import _rescored

    log = inspect_tau2_logs.write_tau2_log(tmp_path / "log", domain="retail", epochs=1,
                                           scenarios={"73": "unknown_tool+rejected+malformed"})
    back = _rescored(log, tmp_path / "rescored.json")
    written = json.loads((tmp_path / "rescored.json").read_text())  # JSON text: 2 and 2.0 differ
    values = [sample["scores"]["fed"]["value"] for sample in written["samples"]]
    assert values and all(v["replayed"] for v in values)
    for value in values:
        for key in ("FED", "T", "Y", "FED_agent"):
            assert type(value[key]) is int, (key, value)
    # No reducer saw the value: Inspect writes no reduction for a scorer with only an unreduced metric.
    assert "fed" not in {r["scorer"] for r in written.get("reductions") or []}
    assert [s.scores["fed"].value["FED"] for s in back.samples] == [v["FED"] for v in values]
    # Inspect's results cast a metric's values to float; the counts are whole numbers all the same.
    metrics = written["results"]["scores"][1]["metrics"]
    assert all(metrics[k]["value"] == int(metrics[k]["value"]) for k in COUNTS)
    assert metrics["n_prefix"]["value"] == len(values)
