from prefix_audit.pipeline.logs import logging_to
from prefix_audit.statistics.paired import pair_specs, write_paired
from prefix_audit.statistics.settings import StatsSettings

with logging_to(snakemake.log[0]):
    write_paired(snakemake.input[0], pair_specs(snakemake.params.pairs), snakemake.output[0],
                 StatsSettings(**snakemake.params.settings, workers=snakemake.threads))
