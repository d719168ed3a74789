"""Rerun tracking from the code itself: a rule's code fingerprint covers exactly the modules its
script runs (the Snakemake-level check, editing a module and dry-running, is in test_workflow)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from prefix_audit.pipeline import fingerprint
from prefix_audit.pipeline.fingerprint import closure, code_fingerprint, stage_modules

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"


def test_imports_inside_functions_count_and_type_checking_imports_do_not(tmp_path, monkeypatch):
    pkg = tmp_path / "fpdemo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n\n"
                              "def f():\n    from .b import g\n    return g()\n")
    (pkg / "b.py").write_text("import fpdemo.d as d\n\ndef g():\n    return d\n")
    (pkg / "c.py").write_text("")
    (pkg / "d.py").write_text("import json\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert closure(["fpdemo.a"], frozenset({"fpdemo"})) == ["fpdemo", "fpdemo.a", "fpdemo.b", "fpdemo.d"]


def _fresh_process_caches() -> None:
    """What a new process would know: nothing read yet (the readings kept on disk stay)."""
    for cached in (fingerprint._root, fingerprint.source_file, fingerprint._imported_by, fingerprint._source_digest):
        cached.cache_clear()


def test_what_a_source_imports_is_kept_beside_its_bytecode_and_read_again_only_for_the_same_bytes(
        tmp_path, monkeypatch):
    pkg = tmp_path / "fpkept"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("")
    (pkg / "c.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "bytecode"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    _fresh_process_caches()
    assert closure(["fpkept.a"], frozenset({"fpkept"})) == ["fpkept", "fpkept.a", "fpkept.b"]
    kept = sorted(p.name for p in (tmp_path / "bytecode").rglob("*.imports.json"))
    assert kept == [f"{name}.{sys.implementation.cache_tag}.imports.json" for name in ("__init__", "a", "b")]
    # Another process reads the kept readings instead of parsing: what a kept reading says is what it uses.
    a_kept = next((tmp_path / "bytecode").rglob("a.*.imports.json"))
    entry = json.loads(a_kept.read_text())
    a_kept.write_text(json.dumps({**entry, "imports": ["fpkept", "fpkept.c"]}))
    _fresh_process_caches()
    assert closure(["fpkept.a"], frozenset({"fpkept"})) == ["fpkept", "fpkept.a", "fpkept.c"]
    # Edited source: the reading kept for other bytes is not used, the source is parsed again.
    (pkg / "a.py").write_text("from . import b  # edited\n")
    _fresh_process_caches()
    assert closure(["fpkept.a"], frozenset({"fpkept"})) == ["fpkept", "fpkept.a", "fpkept.b"]
    # An unreadable kept reading is parsed around; with bytecode writing off, nothing new is kept.
    next((tmp_path / "bytecode").rglob("b.*.imports.json")).write_text("{not json")
    (pkg / "b.py").write_text("from . import c\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    _fresh_process_caches()
    assert closure(["fpkept.a"], frozenset({"fpkept"})) == ["fpkept", "fpkept.a", "fpkept.b", "fpkept.c"]
    assert next((tmp_path / "bytecode").rglob("b.*.imports.json")).read_text() == "{not json"
    _fresh_process_caches()


def test_a_stage_covers_what_it_runs_and_nothing_else():
    tables = stage_modules(SCRIPTS / "tables.py")
    assert {"prefix_audit.reports.tables", "prefix_audit.statistics.paired", "prefix_audit.statistics.stats",
            "prefix_audit.statistics.bootstrap", "prefix_audit.core.io", "prefix_audit.pipeline.logs",
            "prefix_audit.reports", "prefix_audit.statistics"} <= set(tables)  # a sub-package's __init__ too
    assert not {m for m in tables if m.startswith(("prefix_audit.replay.checker", "prefix_audit.benchmarks",
                                                    "prefix_audit.replay.registry", "prefix_audit.reports.figures"))}
    # A stage that opens a dataset covers that dataset's benchmark package, not the others.
    score = set(stage_modules(SCRIPTS / "score_rollouts.py", ["toolsandbox"]))
    assert {"prefix_audit.replay.checker", "prefix_audit.replay.scoring",
            "prefix_audit.benchmarks.toolsandbox.tools"} <= score
    assert not {m for m in score if m.startswith(("prefix_audit.benchmarks.bfcl", "prefix_audit.benchmarks.tau"))}
    # A benchmark's package is followed into its own sub-packages.
    tau = set(stage_modules(SCRIPTS / "score_rollouts.py", ["tau_airline"]))
    assert {"prefix_audit.benchmarks.tau.domain.semantics", "prefix_audit.benchmarks.tau.adapter.replay",
            "prefix_audit.benchmarks.tau.generation.conversation", "prefix_audit.benchmarks.tau.ingest.importer"} <= tau
    # The rollout stage reaches the OpenAI backend only inside a function; it still counts.
    rollouts = set(stage_modules(SCRIPTS / "generate_rollouts.py", ["bfcl_v3"]))
    assert {"prefix_audit.models.openai_compat", "prefix_audit.generation.sources.simulated",
            "prefix_audit.benchmarks.bfcl.loader"} <= rollouts
    assert code_fingerprint(SCRIPTS / "score_rollouts.py", ["toolsandbox"]) != \
        code_fingerprint(SCRIPTS / "score_rollouts.py", ["bfcl_v3"])


def test_every_rule_fingerprints_its_own_script():
    for rule_file in (ROOT / "workflow" / "rules").glob("*.smk"):
        for rule in re.split(r"^rule ", rule_file.read_text(), flags=re.MULTILINE)[1:]:
            script = re.search(r'script:\s*"\.\./scripts/(\w+)\.py"', rule)
            if script is None:
                continue
            named = re.findall(r'\bcode\("(\w+)"', rule)
            assert named == [script.group(1)], f"{rule_file.name}: rule {rule.split(':')[0]}"


def test_the_fingerprint_does_not_import_what_it_reads():
    before = set(sys.modules)
    stage_modules(SCRIPTS / "figures.py")
    assert "prefix_audit.reports.figures" in before or "prefix_audit.reports.figures" not in sys.modules


def _rules() -> dict[str, tuple[str, bool]]:
    """Each rule with a ``code`` param → its script, and whether the fingerprint is its dataset's."""
    rules = {}
    for rule_file in (ROOT / "workflow" / "rules").glob("*.smk"):
        for rule in re.split(r"^rule ", rule_file.read_text(), flags=re.MULTILINE)[1:]:
            found = re.search(r'code=(lambda wc: )?code\("(\w+)"(, wc\.dataset)?\)', rule)
            if found:
                rules[rule.split(":")[0]] = (found.group(2), found.group(3) is not None)
    return rules


DATASETS = ("bfcl_v3", "toolsandbox", "tau_airline", "tau_retail")
EVERY = DATASETS  # a dataset-wise stage that runs the module for every dataset


@pytest.mark.parametrize(("module", "stages"), [
    # the site renders G.1 and F.1 itself; the health table is one of the tables
    ("reports/table_render.py", {"tables": None, "view": None, "task_health_table": None}),
    ("reports/figures.py", {"figures": None}),
    # what replays an action, wherever rollouts are scored; the FED table and the site summarise them
    ("replay/fed.py", {"score_rollouts": EVERY, "score_chunk": EVERY, "import_logs": EVERY, "fed_table": None,
                       "view": None}),
    # one dataset's benchmark: the stages that open that dataset, for it alone
    ("benchmarks/toolsandbox/tools.py", {stage: ("toolsandbox",) for stage in (
        "sample_tasks", "generate_rollouts", "import_logs", "score_rollouts", "score_chunk", "task_health")}),
    # a module of one of τ's sub-packages: both τ datasets
    ("benchmarks/tau/domain/semantics.py", {stage: ("tau_airline", "tau_retail") for stage in (
        "sample_tasks", "generate_rollouts", "import_logs", "score_rollouts", "score_chunk", "task_health")}),
    # the checker: every stage that opens a benchmark (the adapters, the mutation generator and the simulated
    # model use it), and the site, which names its failure categories
    ("replay/checker.py", {"view": None, **{stage: EVERY for stage in (
        "sample_tasks", "generate_rollouts", "import_logs", "score_rollouts", "score_chunk", "task_health")}}),
    # the checks every benchmark shares: every benchmark package imports them
    ("replay/health.py", {stage: EVERY for stage in (
        "sample_tasks", "generate_rollouts", "import_logs", "score_rollouts", "score_chunk", "task_health")}),
    ("health/tasks.py", {"task_health": EVERY}),  # the health stage alone
    ("cli.py", {}),  # no stage imports the command line
    ("generation/sources/oracle.py", {}),
])
def test_a_module_reaches_exactly_the_stages_that_run_it(module, stages):
    """Which rules' ``code`` param a module's edit changes: the stages (and, for a dataset-wise one, the
    datasets) whose script imports it. tests/test_workflow.py's smoke run checks end to end that
    Snakemake reruns what these say, and what aggregates it."""
    name = "prefix_audit." + module.removesuffix(".py").replace("/", ".")
    reached = {}
    for rule, (script, per_dataset) in _rules().items():
        path = SCRIPTS / f"{script}.py"
        if per_dataset:
            datasets = tuple(d for d in DATASETS if name in stage_modules(path, [d]))
            if datasets:
                reached[rule] = datasets
        elif name in stage_modules(path):
            reached[rule] = None
    assert reached == stages
