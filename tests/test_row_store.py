"""An audit keeps its open blocks' scored rows on disk (RowStore): the same bytes as rows kept in memory."""

from __future__ import annotations

from conftest import RESOURCES

from prefix_audit.core.parallel import WorkerPool
from prefix_audit.core.records import dumps
from prefix_audit.replay import registry
from prefix_audit.replay.scoring import BlockScoring, RowStore, ScoreOutputs, file_chunks, score_chunks


def test_rows_kept_on_disk_write_the_same_bytes_as_rows_in_memory(bfcl, tmp_path):
    lines = [dumps(bfcl.reference_rollout(task)) for task in bfcl.task_ids()[:6]]
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text("\n".join([*lines, *lines[:2], "{truncated"]) + "\n")  # duplicates, a bad line
    written = {}
    with WorkerPool(1, registry.resolver(RESOURCES, fetch=False)) as pool, RowStore(tmp_path) as store:
        for name, kept_in in (("memory", None), ("disk", store)):
            scoring = BlockScoring(str(rollouts), store=kept_in)
            score_chunks(file_chunks(name, rollouts), lambda key: scoring, pool)
            assert len(scoring.rows) == 6
            if kept_in is not None:  # what stays in memory: the sort key and the place on disk
                assert all(row.episode is None and row.actions == [] and row.stored for row in scoring.rows)
            outputs = ScoreOutputs.in_dir(tmp_path / name)
            scoring.write(outputs)
            written[name] = [path.read_bytes() for path in (outputs.episodes, outputs.actions, outputs.quarantine)]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["disk", "memory", "rollouts.jsonl"]  # the store is unnamed
    assert written["disk"] == written["memory"]
    assert written["disk"][2].count(b"\n") == 3  # two repeats and the bad line, quarantined as in memory
