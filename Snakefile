# prefix-audit: prefix-executability audit of tool-using LLM agents.
# Stage chain: fetch → sample → rollouts → score → task health → FED table → stats → tables, figures, site (→ report).

import os

from snakemake.utils import min_version

min_version("9.0")

# Benchmark environments put Python sets into their messages (BFCL: "Must be one of {...}"), whose
# order follows string hashing. Job scripts inherit a fixed hash seed so outputs are byte-identical.
os.environ["PYTHONHASHSEED"] = "0"


# Declared, so that Snakemake passes it on to jobs it runs elsewhere (Slurm) as well.
envvars:
    "PYTHONHASHSEED",


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/fetch.smk"
include: "workflow/rules/sample.smk"
include: "workflow/rules/rollouts.smk"
include: "workflow/rules/imports.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/health.smk"
include: "workflow/rules/stats.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/view.smk"


report: "workflow/report/workflow.rst"


rule all:
    input:
        all_outputs(),
    default_target: True
