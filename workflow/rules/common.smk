import json
import re
import sys
import tempfile
from pathlib import Path

import yaml
from snakemake.utils import validate

from prefix_audit import registry
from prefix_audit.fingerprint import code_fingerprint
from prefix_audit.grid import blocks, condition_pairs, planned_blocks
from prefix_audit.tables import table_files


# Benchmarks register before validation: each contributes the schema of its `benchmarks:` entry.
registry.load(config.get("plugins", []))


def validate_config():
    """Validate the config against the base schema with every registered benchmark's fragment."""
    base = yaml.safe_load((Path(workflow.current_basedir) / "../schemas/config.schema.yaml").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        schema = Path(tmp) / "config.schema.json"
        schema.write_text(json.dumps(registry.config_schema(base)))
        validate(config, schema=str(schema))


validate_config()

RESOURCES = config["resources_dir"]
RESULTS = config["results_dir"]
PLUGINS = config.get("plugins", [])
DATASETS = sorted(config["benchmarks"])
# Every block of the run: (model, method) -> settings; reference/mutation sources and the agent grid.
BLOCKS = blocks(config)
# The blocks each dataset runs; a block needing a capability its benchmark lacks is skipped.
PLANNED, SKIPPED = planned_blocks(config)
for skipped in SKIPPED:
    print(f"prefix-audit: {skipped}", file=sys.stderr)
PAIRS = config["stats"]["pairs"] + condition_pairs(config)
TABLES = table_files(f"{RESULTS}/tables")
# The table each figure family (prefix_audit.figures.FAMILIES) is drawn from.
FIGURE_TABLES = {"curves": f"{RESULTS}/stats/stats.parquet", "categories": f"{RESULTS}/fed/episodes.parquet"}
SCRIPTS = Path(workflow.basedir) / "workflow" / "scripts"


def code(script, dataset=None):
    """A `code` param: the fingerprint of the modules the rule's script runs (with the benchmark
    of `dataset` for a rule that opens one). Snakemake does not track what a script imports."""
    return code_fingerprint(SCRIPTS / f"{script}.py", None if dataset is None else [dataset])


def dataset_plugins(wildcards):
    """The config's plugins that register the job's dataset (a job loads only those)."""
    return registry.plugins_for(wildcards.dataset, PLUGINS)


def fetched_marker(dataset):
    """The fetched package a dataset needs ([] for one with nothing to fetch)."""
    pin = config["benchmarks"][dataset].get("package")
    return [f"{RESOURCES}/{pin['name']}-{pin['version']}/FETCHED.json"] if pin else []


def block_settings(wildcards):
    return BLOCKS[(wildcards.model, wildcards.method)]


def block_episodes():
    return [f"{RESULTS}/scored/{dataset}/{model}/{method}/episodes.parquet"
            for dataset in DATASETS for model, method in PLANNED[dataset]]


def all_outputs():
    return [f"{RESULTS}/fed/episodes.parquet", f"{RESULTS}/stats/stats.parquet", f"{RESULTS}/stats/paired.parquet",
            *map(str, TABLES.values()), *(f"{RESULTS}/figures/{family}" for family in FIGURE_TABLES)]


wildcard_constraints:
    dataset="|".join(map(re.escape, DATASETS)),
    model="|".join(sorted({re.escape(model) for model, _ in BLOCKS})),
    method="|".join(sorted({re.escape(method) for _, method in BLOCKS})),
