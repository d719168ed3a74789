from prefix_audit.fed import merge_episodes
from prefix_audit.logs import logging_to

with logging_to(snakemake.log[0]):
    merge_episodes(list(snakemake.input), snakemake.output[0])
