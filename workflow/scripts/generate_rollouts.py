from prefix_audit.generation.rollouts import generate_rollouts
from prefix_audit.models.endpoints import endpoint_slots
from prefix_audit.pipeline.logs import logging_to

with logging_to(snakemake.log[0]):
    generate_rollouts(snakemake.wildcards.dataset, snakemake.input.tasks, snakemake.params.model,
                      snakemake.wildcards.method, dict(snakemake.params.settings), snakemake.params.resources,
                      snakemake.output[0], snakemake.params.cache_dir, snakemake.params.benchmark,
                      snakemake.params.plugins, endpoint_slots(snakemake.resources))
