from prefix_audit.health.tasks import write_run_health
from prefix_audit.pipeline.logs import logging_to

with logging_to(snakemake.log[0]):
    write_run_health(snakemake.input.task_lists, snakemake.input.episodes, snakemake.output.findings,
                     snakemake.output.tasks, snakemake.output.summary, resources=snakemake.params.resources,
                     dataset=snakemake.wildcards.dataset, benchmark=snakemake.params.benchmark,
                     plugins=snakemake.params.plugins, workers=snakemake.threads,
                     health_cache=snakemake.params.health_cache)
