"""Quarantined records summed up by cause (:mod:`prefix_audit.core.quarantine`): the quarantine file
keeps one record per entry; ``import``, ``score`` and ``audit`` print, and the stages log, one line
per cause with its count and first entries — the cause taken from the record (``BadLine.cause``),
never by cutting its reason apart."""

from __future__ import annotations

import copy
import json
import logging

from conftest import RESOURCES
from tau_results import GREETING, STOP, agent_says, simulation, user_says

from prefix_audit.cli import main
from prefix_audit.core.quarantine import QuarantineTally, tally
from prefix_audit.core.records import BadLine, dumps
from prefix_audit.ingest.imports import import_block


def _bad(cause: str | None, entry: tuple[str, str] | None = None, rollout_id: str | None = None, line: int = 1,
         path: str = "/logs/a.json") -> BadLine:
    return BadLine(path, line, f"{cause} (in full)", rollout_id, cause=cause, entry=entry)


def test_one_line_per_cause_with_its_count_and_first_entries():
    records = [_bad("domain not replayed", ("task", str(n))) for n in (7, 7, 2, 9, 4)]  # task 7 twice (two trials)
    records += [_bad("bad id", rollout_id="r1"), _bad("bad id", line=4), _bad("bad id", ("entry", "e"))]
    records += [BadLine("/logs/b.json", 0, "not JSON at all"), _bad("y" * 10, ("task", "x" * 80))]
    assert tally(records).lines() == [
        "5 × domain not replayed (tasks 7, 2, 9, …)",  # the first three distinct; more follow
        "3 × bad id (entry r1, line 4, entry e)",  # kinds mixed: each named; its rollout id, else its line
        "1 × not JSON at all (log b.json)",  # no cause given: the reason is the cause; line 0 is the log
        f"1 × {'y' * 10} (task {'x' * 59}…)",  # a long id is cut
    ]
    assert tally([_bad("c", ("entry", "a")), _bad("c", ("entry", "b"))]).lines() == ["2 × c (entries a, b)"]
    assert tally([_bad("c", ("task", "8"))] * 4).lines() == ["4 × c (task 8)"]  # one task's trials: no "…"


def test_tallies_merge_as_if_counted_together():
    records = [_bad("a", ("task", str(n))) for n in range(6)] + [_bad("b", ("line", "3"))]
    first, second = tally(records[:2]), tally(records[2:])
    merged = QuarantineTally()
    merged.merge(first)
    merged.merge(second)
    assert merged.lines() == tally(records).lines() == ["6 × a (tasks 0, 1, 2, …)", "1 × b (line 3)"]
    assert merged.total == 7


def test_an_unsupported_domain_is_one_line_with_its_count_and_first_tasks(tmp_path, capsys, caplog):
    talk = [GREETING, user_says("hi"), agent_says("hello"), STOP]
    sims = [simulation(f"s{i}", str(i), copy.deepcopy(talk)) for i in range(70)]
    log = tmp_path / "relaxed.json"
    log.write_text(json.dumps({"info": {"environment_info": {"domain_name": "airline-relaxed"}}, "simulations": sims}))
    out = tmp_path / "r.jsonl"
    assert main(["import", "tau", str(log), "-o", str(out), "--resources", str(RESOURCES)]) == 1
    err = capsys.readouterr().err
    assert "imported 0 rollouts; quarantined 70" in err
    assert ("  70 × unusable τ simulation: tau2 domain 'airline-relaxed' is not one this release replays "
            "(airline, retail, telecom) (tasks 0, 1, 2, …)\n") in err
    assert err.count(" × ") == 1
    records = [json.loads(line) for line in out.with_name(out.name + ".quarantine.jsonl").read_text().splitlines()]
    assert len(records) == 70 and records[5]["entry"] == ["task", "5"]  # the file keeps one record per entry
    assert records[5]["reason"].startswith("unusable τ simulation (task '5'): tau2 domain 'airline-relaxed'")
    assert records[5]["cause"].startswith("unusable τ simulation: tau2 domain 'airline-relaxed'")
    # `audit` says it the same way (nothing imported: it stops with the causes, and writes nothing)
    assert main(["audit", "--no-figures", str(log), "-o", str(tmp_path / "audit"), "--resources", str(RESOURCES)]) == 2
    assert ("no entry of 1 log(s) could be imported: 70 × unusable τ simulation: tau2 domain 'airline-relaxed' is "
            "not one this release replays (airline, retail, telecom) (tasks 0, 1, 2, …)\n") in capsys.readouterr().err
    assert not (tmp_path / "audit").exists()
    # and the workflow's import stage logs it so
    with caplog.at_level(logging.INFO, logger="prefix_audit.ingest.imports"):
        import_block([log], tmp_path / "b.jsonl", tmp_path / "b.quarantine.jsonl", kind=None, dataset="tau_airline",
                     model="m", method="imported", resources=RESOURCES)
    assert [r.getMessage() for r in caplog.records][:2] == [
        "logs read: 1; rollouts imported: 0; quarantined: 70",
        "  70 × unusable τ simulation: tau2 domain 'airline-relaxed' is not one this release replays (airline, retail, "
        "telecom) (tasks 0, 1, 2, …)"]


def test_score_prints_and_logs_one_line_per_cause(bfcl, tmp_path, capsys, caplog):
    base = json.loads(dumps(bfcl.reference_rollout("multi_turn_base_1"))) | {"model": "m"}
    records = [base | {"rollout_id": "a"}, *(base | {"rollout_id": "a", "trial": n} for n in (1, 2, 3)),
               *(base | {"rollout_id": f"u{n}", "task_id": f"multi_turn_base_{9000 + n}"} for n in range(2))]
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text("".join(json.dumps(r) + "\n" for r in records))
    with caplog.at_level(logging.INFO, logger="prefix_audit.replay.scoring"):
        assert main(["score", str(rollouts), "-o", str(tmp_path / "s"), "--resources", str(RESOURCES)]) == 0
    lines = ["  3 × duplicate rollout_id in block bfcl_v3/m/reference (the first of each counts) (entry a)",
             "  2 × unknown task_id for dataset 'bfcl_v3' (entries u0, u1)"]
    assert "quarantined: 5\n" + "\n".join(lines) + "\n" in capsys.readouterr().err
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == lines  # the stage's log
    assert len((tmp_path / "s" / "quarantine.jsonl").read_text().splitlines()) == 5
