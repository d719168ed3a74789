from prefix_audit.figures import write_figures
from prefix_audit.pipeline import logging_to

with logging_to(snakemake.log[0]):
    write_figures(snakemake.input.stats, snakemake.input.episodes, snakemake.output[0],
                  epsilon=snakemake.params.epsilon)
