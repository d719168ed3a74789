from prefix_audit.pipeline.logs import logging_to
from prefix_audit.replay.scoring import score_block

with logging_to(snakemake.log[0]):
    score_block(snakemake.input.rollouts, snakemake.output.actions, snakemake.output.episodes,
                snakemake.output.quarantine, resources=snakemake.params.resources,
                dataset=snakemake.wildcards.dataset, benchmark=snakemake.params.benchmark,
                plugins=snakemake.params.plugins, workers=snakemake.threads)
