"""Every shared real log audited alone: what was read, and how far each audit agrees with its log.

Usage: python bench/real_log_trust.py [--shared ../shared] [--work DIR] [--resources resources]
                                      [--only TEXT] [--json FILE]

Each log of ``fixtures/real-logs/`` (in place), of ``fixtures/real-logs-3/`` (unpacked as its
repositories published it, ``tests/real_logs.py``) and of ``fixtures/real-logs-5/`` (gzipped as
published, read as they are) is audited alone, as a user would: ``prefix-audit audit LOG -o DIR``
(and ``--bfcl-score`` for a score file of the corpus that is not where ``bfcl evaluate`` writes it;
``--tau-data`` for a run on τ³ tasks, as its README says). Companion files (a result file's BFCL score file, a runner's
verdict log) are read beside their log, never audited as logs. Per log it prints one Markdown row:
entries (episodes + quarantined records), quarantined, Y = the recorded verdict (of the episodes with
both), replay agreement (recorded tool results reproduced), entries flagged (any ``log_issue``) and by
code, and whether the log is a faithful run (``clean``; else why not, from the corpus's diagnosis).
It closes with the false-alarm rate: flagged entries over episodes of the clean logs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl

from prefix_audit.core.quarantine import read_quarantine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import real_logs  # noqa: E402  (the corpus's layout lives with the tests that read it)

FIRST_CORPUS_LOGS = ("bfcl/gpt-oss-20b_BFCL_v4_multi_turn_base_result.json",
                     "bfcl/gpt-oss-20b_BFCL_v4_multi_turn_miss_func_result.json",
                     "bfcl/xLAM-2-8b-fc-r_BFCL_v3_multi_turn_base_result.json",
                     "tau2/gemini-2.5-flash_airline_10tasks_2trials.json", "tau2/gpt-4.1_retail_40tasks_1trial.json",
                     "tau2/gpt-4.1_whissle-voice_retail_5tasks_tau2-1.0.1.json",
                     "tau-bench-v1/gpt-4.1-mini_retail_user-gpt-4.1_1trial.json",
                     "tau-bench-v1/Qwen3-8B_react-strategy_retail_user-Qwen3-32B.json", "toolsandbox")


@dataclass
class Row:
    log: str
    clean: bool
    diagnosis: str
    entries: int = 0
    episodes: int = 0
    quarantined: int = 0
    quarantine_reasons: dict[str, int] = field(default_factory=dict)
    y_compared: int = 0
    y_agrees: int = 0
    results_compared: int = 0
    results_reproduced: int = 0
    flagged: int = 0
    codes: dict[str, int] = field(default_factory=dict)
    refused: str | None = None  # the audit's own message where nothing could be imported

    def markdown(self) -> str:
        y = f"{self.y_agrees}/{self.y_compared}" if self.y_compared else "no verdict"
        replay = (f"{self.results_reproduced}/{self.results_compared} ({self.results_reproduced / self.results_compared:.1%})"
                  if self.results_compared else "none recorded")
        codes = ", ".join(f"{k} {v}" for k, v in sorted(self.codes.items())) or "none"
        flagged = f"{self.flagged} ({self.flagged / self.episodes:.1%}): {codes}" if self.episodes else "—"
        quarantined = str(self.quarantined) + (f" ({', '.join(f'{k}: {v}' for k, v in self.quarantine_reasons.items())})"
                                               if self.quarantined else "")
        return (f"| {self.log} | {'clean' if self.clean else 'not clean'} | {self.entries} | {quarantined} | {y} | "
                f"{replay} | {flagged} |")


def _quarantined(out: Path) -> list[str]:
    """The cause of every quarantined record of an audit (the reason without what names the entry)."""
    return [bad.grouped_by for path in sorted(out.rglob("*quarantine.jsonl")) for bad in read_quarantine(path)]


def audit(log: Path, name: str, diagnosis: str | None, work: Path, resources: str, extra: list[str]) -> Row:
    out = work / "audits" / name.replace("/", "_").replace(":", "_")
    done = subprocess.run([sys.executable, "-m", "prefix_audit.cli", "audit", str(log), "-o", str(out),
                           "--resources", resources, "--resamples", "100", *extra],
                          capture_output=True, text=True, check=False)
    row = Row(name, diagnosis is None, diagnosis or "a faithful run")
    causes = _quarantined(out)
    row.quarantined = len(causes)
    row.quarantine_reasons = dict(Counter(causes).most_common(3))
    episodes_file = out / "fed" / "episodes.parquet"
    if done.returncode != 0 or not episodes_file.is_file():
        row.refused = (done.stderr.strip().splitlines() or ["?"])[-1][:300]
        row.entries = row.quarantined
        return row
    ep = pl.read_parquet(episodes_file)
    row.episodes = ep.height
    row.entries = row.episodes + row.quarantined
    both = ep.filter(pl.col("recorded_y").is_not_null() & pl.col("Y").is_not_null())
    row.y_compared, row.y_agrees = both.height, both.filter(pl.col("recorded_y") == pl.col("Y")).height
    row.results_compared = int(ep["results_compared"].fill_null(0).sum())
    row.results_reproduced = int(ep["results_reproduced"].fill_null(0).sum())
    issues = [i for i in ep["log_issue"].to_list() if i]
    row.flagged = len(issues)
    row.codes = dict(Counter(part.split(":", 1)[0].strip() for i in issues for part in i.split("; ")))
    return row


# Logs of ``fixtures/real-logs-5`` (all faithful runs) made on τ³ tasks, as its README says: the end
# of the file's name → the task data of ``shared/benchmarks`` to audit it with (``--tau-data``).
FIFTH_CORPUS_TAU_DATA = {"adaptive-agent_airline_claude-opus-4-6_1trial.json.gz": "tau3-v1.0.1"}


def plans(shared: Path, work: Path) -> list[tuple[Path, str, str | None, list[str]]]:
    """(log, name, why it is not clean or None, extra audit options) for every log of the corpora."""
    first = shared / "fixtures" / "real-logs"
    out = [(first / rel, f"real-logs:{rel}", None, []) for rel in FIRST_CORPUS_LOGS if (first / rel).exists()]
    corpus = shared / "fixtures" / "real-logs-3"
    if (corpus / "MANIFEST.json").is_file():
        logs = real_logs.unpack(work / "real-logs-3", corpus)
        for log in logs:
            if real_logs.is_companion(log):
                continue
            score = real_logs.score_file_of(log, logs)
            extra = ["--bfcl-score", str(score)] if score is not None else []
            out.append((log.path, f"real-logs-3:{log.name}", real_logs.NOT_CLEAN.get(log.repo_path), extra))
    for log in sorted((shared / "fixtures" / "real-logs-5").glob("*/*.gz")):
        name = f"real-logs-5:{log.parent.name}/{log.name.split('__')[-1]}"
        data = next((data for suffix, data in FIFTH_CORPUS_TAU_DATA.items() if log.name.endswith(suffix)), None)
        if data is None:
            out.append((log, name, None, []))
            continue
        # Audited as its README says, and as a user without the task data would: the flags then say
        # which release the run was made on and how to give it (data_version), so it is not clean.
        out.append((log, name, None, ["--tau-data", str(shared / "benchmarks" / data)]))
        out.append((log, f"{name} without --tau-data", f"a run on {data} tasks audited without them", []))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--work", type=Path, default=Path("/tmp/real_log_trust"))
    parser.add_argument("--resources", default=str(ROOT / "resources"))
    parser.add_argument("--only", default=None, help="audit only the logs whose name or path holds this text "
                                                       "(in any case)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    rows = []
    print("| log | diagnosis | entries | quarantined | Y = recorded | replay reproduces | entries flagged |")
    print("|---|---|---:|---|---|---|---|")
    for log, name, why, extra in plans(args.shared, args.work):
        # the log's path inside the work folder (a --work path holding the text would match every log)
        where = str(log.relative_to(args.work)) if log.is_relative_to(args.work) else str(log)
        # in any case: the corpus names BFCL's files BFCL_v3_…, --only bfcl means them too
        if args.only and args.only.casefold() not in f"{name} {where}".casefold():
            continue
        row = audit(log, name, why, args.work, args.resources, extra)
        rows.append(row)
        print(row.markdown() + (f" refused: {row.refused}" if row.refused else ""), flush=True)
    clean = [r for r in rows if r.clean]
    flagged, episodes = sum(r.flagged for r in clean), sum(r.episodes for r in clean)
    compared, reproduced = sum(r.results_compared for r in clean), sum(r.results_reproduced for r in clean)
    print(f"\nclean logs: {len(clean)} of {len(rows)}; false alarms: {flagged} of {episodes} episodes"
          f" ({flagged / max(episodes, 1):.2%}); worst clean log: "
          f"{max((r.flagged / r.episodes, r.log) for r in clean if r.episodes)[1] if clean else '-'}; "
          f"replay reproduces {reproduced}/{compared} recorded results on clean logs")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))


if __name__ == "__main__":
    main()
