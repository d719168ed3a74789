from prefix_audit.pipeline.logs import logging_to
from prefix_audit.statistics.settings import StatsSettings
from prefix_audit.statistics.stats import write_stats

with logging_to(snakemake.log[0]):
    write_stats(snakemake.input[0], snakemake.output[0],
                StatsSettings(**snakemake.params.settings, workers=snakemake.threads))
