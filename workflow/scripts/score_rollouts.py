from pathlib import Path

from prefix_audit.pipeline import logging_to, score

with logging_to(snakemake.log[0]):
    score(snakemake.input.rollouts, Path(snakemake.output.episodes).parent, snakemake.params.resources,
          snakemake.params.benchmark)
