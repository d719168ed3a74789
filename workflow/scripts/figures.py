from prefix_audit.pipeline.logs import logging_to
from prefix_audit.reports.figure_families import write_figures

# Guarded: the drawing processes are spawned, and spawning imports this file again.
if __name__ == "__main__":
    with logging_to(snakemake.log[0]):
        write_figures(snakemake.wildcards.family, snakemake.input[0], snakemake.output[0],
                      epsilon=snakemake.params.epsilon, workers=snakemake.threads)
