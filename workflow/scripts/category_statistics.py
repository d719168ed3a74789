import logging

from prefix_audit.core.io import read_parquet
from prefix_audit.pipeline.logs import logging_to
from prefix_audit.statistics.stats import uncategorised_lines, write_category_stats

with logging_to(snakemake.log[0]):
    write_category_stats(snakemake.input[0], snakemake.output[0], dict(snakemake.params.categories),
                         resamples=snakemake.params.resamples, seed=snakemake.params.seed,
                         k_max=snakemake.params.k_max, confidence=snakemake.params.confidence,
                         workers=snakemake.threads, exclude_unsound=snakemake.params.exclude_unsound)
    for line in uncategorised_lines(read_parquet(snakemake.input[0]), dict(snakemake.params.categories)):
        logging.getLogger("category_statistics").warning(line)
