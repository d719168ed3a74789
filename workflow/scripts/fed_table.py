from prefix_audit.pipeline.logs import logging_to
from prefix_audit.replay.fed import merge_episodes

with logging_to(snakemake.log[0]):
    merge_episodes(list(snakemake.input.episodes), snakemake.output[0], health=list(snakemake.input.health))
