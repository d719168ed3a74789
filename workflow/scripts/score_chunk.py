from prefix_audit.pipeline.logs import logging_to
from prefix_audit.replay.scored_lines import score_block_part

with logging_to(snakemake.log[0]):
    score_block_part(snakemake.input.rollouts, snakemake.output[0], part=int(snakemake.wildcards.chunk),
                     parts=snakemake.params.chunks, resources=snakemake.params.resources,
                     dataset=snakemake.wildcards.dataset, benchmark=snakemake.params.benchmark,
                     plugins=snakemake.params.plugins, workers=snakemake.threads)
