import hashlib
import re
from pathlib import Path

from snakemake.utils import validate

from prefix_audit.grid import blocks, condition_pairs


validate(config, schema="../schemas/config.schema.yaml")

RESOURCES = config["resources_dir"]
RESULTS = config["results_dir"]
DATASETS = sorted(config["benchmarks"])
# Every block of the run: (model, method) -> settings; reference/mutation sources and the agent grid.
BLOCKS = blocks(config)
PAIRS = config["stats"]["pairs"] + condition_pairs(config)
TABLE_NAMES = ("G1", "F1", "F2", "F3")
TABLES = [f"{RESULTS}/tables/table_{t}.{ext}" for t in TABLE_NAMES for ext in ("csv", "md", "tex")]
# The table each figure family (prefix_audit.figures.FAMILIES) is drawn from.
FIGURE_TABLES = {"curves": f"{RESULTS}/stats/stats.parquet", "categories": f"{RESULTS}/fed/episodes.parquet"}


LIBRARY = Path(workflow.basedir) / "src" / "prefix_audit"


def code_fingerprint(*parts):
    """sha256 of the library modules a stage runs. Snakemake does not track modules a script
    imports, so this goes into params: changing the checker reruns scoring, not the rollouts."""
    digest = hashlib.sha256()
    for part in parts:
        target = LIBRARY / part
        for path in sorted(target.rglob("*.py")) if target.is_dir() else [target]:
            digest.update(path.relative_to(LIBRARY).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


REPLAY_CODE = ("benchmarks", "calls.py", "checker.py", "records.py")


def fetched_marker(dataset):
    """The fetched package a dataset needs ([] for one with nothing to fetch)."""
    pin = config["benchmarks"][dataset].get("package")
    return [f"{RESOURCES}/{pin['name']}-{pin['version']}/FETCHED.json"] if pin else []


def block_settings(wildcards):
    return BLOCKS[(wildcards.model, wildcards.method)]


def block_episodes():
    return [f"{RESULTS}/scored/{dataset}/{model}/{method}/episodes.parquet"
            for dataset in DATASETS for model, method in BLOCKS]


def all_outputs():
    return [f"{RESULTS}/fed/episodes.parquet", f"{RESULTS}/stats/stats.parquet", f"{RESULTS}/stats/paired.parquet",
            *TABLES, *(f"{RESULTS}/figures/{family}" for family in FIGURE_TABLES)]


wildcard_constraints:
    dataset="|".join(map(re.escape, DATASETS)),
    model="|".join(sorted({re.escape(model) for model, _ in BLOCKS})),
    method="|".join(sorted({re.escape(method) for _, method in BLOCKS})),
