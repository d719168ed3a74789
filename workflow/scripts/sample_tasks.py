from prefix_audit.generation.tasks import write_task_list
from prefix_audit.pipeline.logs import logging_to

with logging_to(snakemake.log[0]):
    write_task_list(snakemake.wildcards.dataset, snakemake.params.resources, snakemake.params.n,
                    snakemake.params.seed, snakemake.output[0], snakemake.params.benchmark,
                    snakemake.params.plugins)
