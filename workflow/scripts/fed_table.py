from prefix_audit.pipeline import logging_to, merge_episodes

with logging_to(snakemake.log[0]):
    merge_episodes(list(snakemake.input), snakemake.output[0])
