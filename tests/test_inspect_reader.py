"""The ``.eval`` sample reader against inspect-ai's own (``read_eval_log_sample``), sample for sample,
on real logs of inspect_evals' tasks; the same log rewritten with another compression of its
members reads the same; a member that does not read costs that sample only."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from conftest import RESOURCES, SAMPLE_OR_WHOLE

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log, read_eval_log_sample  # noqa: E402

from prefix_audit.ingest import inspect_logs as reader  # noqa: E402
from prefix_audit.ingest.inspect_logs import SKIPPED_FIELDS, _eval_samples, _member_bytes  # noqa: E402

FIELDS = ("id", "epoch", "messages", "store", "scores", "metadata", "error", "limit", "output", "attachments")


def _wanted(path: Path) -> list[tuple[str, int]]:
    header = read_eval_log(str(path), header_only=True)
    return [(str(i), e) for i in header.eval.dataset.sample_ids for e in range(1, (header.eval.config.epochs or 1) + 1)]


def _dump(sample) -> dict:
    return {name: json.loads(json.dumps(sample.model_dump(mode="json", include={name}), sort_keys=True))
            for name in FIELDS}


def _logs(inspect_logs, inspect_tau2_telecom_log) -> list[Path]:
    return [inspect_logs["tau2_eval"], inspect_logs["bfcl_eval"], inspect_tau2_telecom_log]


@SAMPLE_OR_WHOLE
def test_every_sample_reads_as_inspect_ai_reads_it(inspect_logs, inspect_tau2_telecom_log, whole):
    """Every sample of every log (in the default run, the first epoch's: inspect_ai's reader takes most
    of a minute over the two epochs of the tau2 log, whose samples each hold the airline database)."""
    import inspect_ai.log as api

    compared = 0
    for path in _logs(inspect_logs, inspect_tau2_telecom_log):
        wanted = _wanted(path)
        ours = dict(_eval_samples(api, path, wanted))
        assert len(ours) == len(wanted), path
        for sample_id, epoch in (w for w in wanted if whole or w[1] == 1):
            theirs = read_eval_log_sample(str(path), id=sample_id, epoch=epoch, exclude_fields=set(SKIPPED_FIELDS),
                                          resolve_attachments=True)
            mine = ours[(sample_id, epoch)]
            assert not isinstance(mine, Exception), mine
            assert _dump(mine) == _dump(theirs), (path.name, sample_id, epoch)
            compared += 1
    assert compared >= 3 + (2 * 2 if whole else 2)  # telecom's samples, airline's and bfcl's (two epochs)


def _recompressed(path: Path, out: Path, compression: int) -> Path:
    """The log with every member rewritten with ``compression`` (same names, same bytes inside)."""
    with path.open("rb") as fh, zipfile.ZipFile(fh) as source, zipfile.ZipFile(out, "w", compression) as target:
        for info in source.infolist():
            target.writestr(info.filename, _member_bytes(source, fh, info))
    return out


@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED], ids=["deflate", "stored"])
def test_a_log_with_other_compression_gives_the_same_rollouts(inspect_logs, tmp_path, compression):
    from prefix_audit.core.records import dumps
    from prefix_audit.replay import registry
    from prefix_audit.replay.registry import ImportRequest

    source = inspect_logs["bfcl_eval"]
    with zipfile.ZipFile(source) as archive:  # inspect-ai writes its samples with zstd
        assert {i.compress_type for i in archive.infolist() if i.filename.startswith("samples/")} == \
            {reader.ZIP_ZSTANDARD}
    other = _recompressed(source, tmp_path / source.name, compression)
    resolve = registry.resolver(RESOURCES, {})

    def rollouts(path: Path) -> list[str]:
        items = list(reader.read_inspect_log(ImportRequest(path, None, "imported", resolve)))
        assert items and all(hasattr(i, "rollout") for i in items)
        return [dumps(i.rollout).replace(str(path), "LOG") for i in items]

    assert rollouts(other) == rollouts(source)


def test_a_member_that_does_not_read_costs_its_sample_only(inspect_logs, tmp_path):
    source = inspect_logs["bfcl_eval"]
    out = tmp_path / source.name
    with source.open("rb") as fh, zipfile.ZipFile(fh) as archive, zipfile.ZipFile(out, "w") as target:
        infos = archive.infolist()
        broken = next(i.filename for i in infos if i.filename.startswith("samples/"))
        for info in infos:
            data = _member_bytes(archive, fh, info)
            target.writestr(info.filename, data[: len(data) // 2] if info.filename == broken else data,
                            zipfile.ZIP_DEFLATED)
    import inspect_ai.log as api

    results = dict(_eval_samples(api, out, _wanted(out)))
    failed = [key for key, sample in results.items() if isinstance(sample, Exception)]
    assert [f"samples/{k[0]}_epoch_{k[1]}.json" for k in failed] == [broken]
    assert len(results) == len(_wanted(out))
