"""The second corpus of real logs (``../shared/fixtures/real-logs-3``) laid out as its repositories
published it.

The corpus keeps each file gzipped under a flat name (``saved_as`` in its ``MANIFEST.json``); the
importers read logs where their runners wrote them (BFCL finds a model's handler from its result
folder and the score file beside it, ToolSandbox run folders sit three levels deep). So the tests
unpack every file to ``<repo owner>+<repo name>/<path>`` under a folder of their own, exactly as the
repository holds it, and audit it there. Nothing inside a file is changed.

Usage (to look at the files by hand): ``python tests/real_logs.py OUT`` unpacks them under OUT and
prints one line per file: its path and the MANIFEST's benchmark.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real-logs-3"
TOOLSANDBOX_DATA = "ToolSandbox/data"  # the archives' member paths are relative to ToolSandbox/data/


@dataclass(frozen=True)
class RealLog:
    """One file of the corpus, unpacked: where it is now and what its MANIFEST entry says."""

    path: Path
    repo: str
    repo_path: str
    benchmark: str
    records: int
    notes: str

    @property
    def name(self) -> str:
        """A short stable name for test ids: the repository's owner, the file's folder and its name
        (files of one name sit in the folders of different models)."""
        path = Path(self.repo_path)
        return f"{self.repo.split('/')[0]}:{path.parent.name + '/' if path.parent.name else ''}{path.name}"


def manifest(corpus: Path = CORPUS) -> list[dict]:
    return json.loads((corpus / "MANIFEST.json").read_text(encoding="utf-8"))


def unpack(out: Path, corpus: Path = CORPUS) -> list[RealLog]:
    """Every file of the corpus under ``out``, as published; a ToolSandbox archive becomes its run
    folder."""
    logs = []
    for entry in manifest(corpus):
        base = out / entry["repo"].replace("/", "+")
        packed = corpus / entry["saved_as"]
        target = base / entry["path"]
        if entry["saved_as"].endswith(".tar.gz"):
            data = base / TOOLSANDBOX_DATA
            data.mkdir(parents=True, exist_ok=True)
            with tarfile.open(packed) as archive:
                archive.extractall(data, filter="data")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(gzip.decompress(packed.read_bytes()))
        logs.append(RealLog(target, entry["repo"], entry["path"], entry["benchmark"], entry.get("n_records", 0),
                            entry.get("notes", "")))
    return logs


# What the MANIFEST's diagnosis (and this project's audits, where they found more) says about the
# files that are not faithful runs of the benchmark's own harness: repository path → why. Every
# other log of the corpus is a faithful run ("clean"): a flag on it is a false alarm.
NOT_CLEAN = {
    "results/tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_1102235139.json":
        "a supervisor layer rejected calls (its replies 'Execution of … was rejected'): not_executed is the log's "
        "own record; its recorded gold DB hashes are the untouched database's (vacuous_db_check)",
    "web/leaderboard/public/submissions/toolorchestra_nvidia_2025-12-02/trajectories/"
    "toolorchestra_airline_gpt-5_1trial.json":
        "a custom orchestrator's submission whose recorded evaluations are other tasks' (permuted task ids)",
    "web/leaderboard/public/submissions/toolorchestra_nvidia_2025-12-02/trajectories/"
    "toolorchestra_retail_gpt-5_1trial.json":
        "a custom orchestrator's submission whose recorded evaluations are other tasks' (permuted task ids)",
}
BFCL_SCORE = "BFCL v3 multi-turn (bfcl evaluate score)"  # a score file of a result file in the corpus
VERDICT_LOG = "per-entry verdict log"  # a runner's verdicts beside its result file


def is_companion(log: RealLog) -> bool:
    """A file that is read beside a log of the corpus, not audited as a log of its own: BFCL's score
    file of a result file the corpus holds, a runner's verdict log beside its result file."""
    return log.benchmark == BFCL_SCORE or VERDICT_LOG in log.benchmark


def score_file_of(log: RealLog, logs: list[RealLog]) -> Path | None:
    """BFCL's score file of the result file ``log`` where it is not where ``bfcl evaluate`` puts it
    (a folder ``eng_score/`` beside ``eng_result/``): same repository, model folder and category."""
    if "result" not in log.path.name:
        return None
    want = (log.repo, log.path.parent.name, log.path.name.replace("_result.json", "_score.json"))
    for other in logs:
        if other.benchmark == BFCL_SCORE and (other.repo, other.path.parent.name, other.path.name) == want:
            return other.path
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    for log in unpack(args.out):
        print(f"{log.path}\t{log.benchmark}")


if __name__ == "__main__":
    main()
