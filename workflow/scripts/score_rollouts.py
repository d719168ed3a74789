from pathlib import Path

from prefix_audit.pipeline.logs import logging_to
from prefix_audit.replay.scored_lines import gather_block
from prefix_audit.replay.scoring import ScoreOutputs, score_block

with logging_to(snakemake.log[0]):
    if snakemake.input.chunks:  # a big imported block, replayed in chunks by score_chunk jobs
        gather_block(snakemake.input.rollouts, snakemake.input.chunks,
                     ScoreOutputs(*map(Path, (snakemake.output.actions, snakemake.output.episodes,
                                               snakemake.output.quarantine))))
    else:
        score_block(snakemake.input.rollouts, snakemake.output.actions, snakemake.output.episodes,
                    snakemake.output.quarantine, resources=snakemake.params.resources,
                    dataset=snakemake.wildcards.dataset, benchmark=snakemake.params.benchmark,
                    plugins=snakemake.params.plugins, workers=snakemake.threads)
