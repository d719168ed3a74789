from pathlib import Path

from snakemake.utils import validate


validate(config, schema="../schemas/config.schema.yaml")

RESOURCES = config["resources_dir"]
RESULTS = config["results_dir"]
DATASETS = sorted(config["benchmarks"])
SOURCES = sorted(config["sources"])
TABLES = [f"{RESULTS}/tables/table_G1.{ext}" for ext in ("csv", "md", "tex")]


def package_pin(dataset):
    return config["benchmarks"][dataset]["package"]


def fetched_marker(dataset):
    pin = package_pin(dataset)
    return f"{RESOURCES}/{pin['name']}-{pin['version']}/FETCHED.json"


def block_episodes():
    return expand(f"{RESULTS}/scored/{{dataset}}/{{source}}/episodes.parquet", dataset=DATASETS, source=SOURCES)


def all_outputs():
    return [f"{RESULTS}/fed/episodes.parquet", f"{RESULTS}/stats/stats.parquet", *TABLES]


wildcard_constraints:
    dataset="|".join(DATASETS),
    source="|".join(SOURCES),
