import logging

from prefix_audit.core.io import read_parquet
from prefix_audit.pipeline.logs import logging_to
from prefix_audit.statistics.categories import uncategorised_lines, write_category_stats
from prefix_audit.statistics.settings import StatsSettings

with logging_to(snakemake.log[0]):
    write_category_stats(snakemake.input[0], snakemake.output[0], dict(snakemake.params.categories),
                         StatsSettings(**snakemake.params.settings, workers=snakemake.threads))
    for line in uncategorised_lines(read_parquet(snakemake.input[0]), dict(snakemake.params.categories)):
        logging.getLogger("category_statistics").warning(line)
