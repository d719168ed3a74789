"""Every log of the second real corpus (``../shared/fixtures/real-logs-3``, unpacked as published:
``tests/real_logs.py``) read as a user reads it: each audited alone.

Nothing lost: every entry is an episode or a quarantined record with its own reason, and no file is
refused whole because of one entry. No false alarms: a log the corpus's diagnosis calls a faithful
run carries flags on at most 2 % of its entries, and Y equals its recorded verdict on every entry not
flagged; a log that is not faithful is flagged with its cause. (``bench/real_log_trust.py`` prints the
same per log, for ``docs/trust.md``.)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest
import real_logs
from conftest import RESOURCES

from prefix_audit.core.records import BadLine
from prefix_audit.ingest.imports import read_logs
from prefix_audit.replay import registry
from prefix_audit.replay.checker import EpisodeResult
from prefix_audit.replay.record_check import check_record
from prefix_audit.replay.scoring import ScoreReport, score_rollouts

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (real_logs.CORPUS / "MANIFEST.json").is_file(),
                                 reason="../shared/fixtures/real-logs-3 is absent")]

MAX_FALSE_ALARMS = 0.02  # flagged entries of a faithful log


@dataclass
class Audited:
    log: real_logs.RealLog
    episodes: list[EpisodeResult]
    bad: list[BadLine]

    def issues(self) -> list[str | None]:
        return [check_record(e).log_issue for e in self.episodes]

    def codes(self) -> Counter:
        return Counter(part.split(":", 1)[0] for i in self.issues() if i for part in i.split("; "))


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> dict[str, Audited]:
    logs = real_logs.unpack(tmp_path_factory.mktemp("real-logs-3"))
    out = {}
    plain = registry.resolver(RESOURCES, {})  # its benchmarks opened once, as one audit of many logs does
    for log in logs:
        if real_logs.is_companion(log):
            continue
        score = real_logs.score_file_of(log, logs)
        resolve = registry.resolver(RESOURCES, {"bfcl_v3": {"score_file": str(score)}}) if score else plain
        items = list(read_logs([log.path], resolve))
        episodes, bad = score_rollouts(iter(items), resolve, ScoreReport())
        out[log.repo_path] = Audited(log, episodes, bad)
    return out


def test_every_entry_is_an_episode_or_a_quarantined_record_with_its_reason(audited):
    for a in audited.values():
        assert all(b.reason and b.path for b in a.bad), a.log.name
        whole = [b for b in a.bad if b.line == 0]
        if a.episodes or a.log.records:
            # A file is refused whole only when it holds no entry at all.
            assert not whole or not a.log.records, (a.log.name, whole[0].reason)
        # a BFCL score file's count includes its summary line, which is no entry
        entries = a.log.records - ("evaluate score" in a.log.benchmark)
        assert len(a.episodes) + len(a.bad) >= entries, a.log.name


def test_faithful_logs_carry_no_false_alarms_and_their_verdicts(audited):
    for path, a in audited.items():
        if path in real_logs.NOT_CLEAN or not a.episodes:
            continue
        issues = a.issues()
        flagged = sum(i is not None for i in issues)
        assert flagged <= MAX_FALSE_ALARMS * len(a.episodes), (a.log.name, a.codes())
        for e, issue in zip(a.episodes, issues):
            recorded = e.rollout.recorded
            if recorded is not None and recorded.y is not None and e.Y is not None and issue is None:
                assert e.Y == recorded.y, (a.log.name, e.rollout.task_id)


def test_a_domain_we_do_not_replay_costs_its_entries_each_with_its_reason(audited):
    fork = [a for a in audited.values() if "airline_relaxed" in a.log.path.name]
    assert len(fork) == 2
    for a in fork:
        assert not a.episodes
        assert len(a.bad) == a.log.records and all(b.line >= 1 for b in a.bad)
        assert all("is not one this release replays" in b.reason for b in a.bad)


def test_telecom_logs_are_audited_with_both_parties_replayed(audited):
    telecom = [a for a in audited.values() if "telecom" in a.log.path.name]
    assert len(telecom) == 3
    for a in telecom:
        if not a.log.records:  # the aborted run: no simulation at all
            [bad] = a.bad
            assert bad.line == 0 and bad.reason.startswith("no simulations")
            continue
        assert len(a.episodes) == a.log.records and not a.bad and a.issues() == [None] * a.log.records
        assert all(e.Y == e.rollout.recorded.y for e in a.episodes)
        assert sum(len(e.party_calls) for e in a.episodes) > 0


def test_a_score_file_alone_is_read_as_its_failed_entries(audited):
    alone = [a for a in audited.values() if "SCORE ONLY" in a.log.benchmark]
    assert len(alone) == 3
    for a in alone:
        assert a.episodes and all(e.rollout.recorded.y == 0 == e.Y for e in a.episodes), a.log.name
        assert all("only the" in e.rollout.meta["reading"] and "entries that failed" in e.rollout.meta["reading"]
                   for e in a.episodes)
        assert all(b.reason.startswith("listed again in BFCL's score file") for b in a.bad)


def test_logs_that_are_not_faithful_are_flagged_with_their_cause(audited):
    for path in real_logs.NOT_CLEAN:
        a = audited[path]
        disagree = [(e, i) for e, i in zip(a.episodes, a.issues())
                    if e.rollout.recorded.y is not None and e.Y is not None and e.Y != e.rollout.recorded.y]
        assert all(i is not None and "y_differs" not in i for _, i in disagree), a.log.name
    supervised = audited["results/tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_1102235139.json"]
    assert {"not_executed", "vacuous_db_check"} <= set(supervised.codes())
    for path in real_logs.NOT_CLEAN:
        if "toolorchestra" in path:
            assert audited[path].codes()["task_mismatch"] >= 0.9 * len(audited[path].episodes)
