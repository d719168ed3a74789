from prefix_audit.pipeline.logs import logging_to
from prefix_audit.statistics.paired import pair_specs, write_paired

with logging_to(snakemake.log[0]):
    write_paired(snakemake.input[0], pair_specs(snakemake.params.pairs), snakemake.output[0],
                 resamples=snakemake.params.resamples, seed=snakemake.params.seed,
                 confidence=snakemake.params.confidence, pools=dict(snakemake.params.pools),
                 workers=snakemake.threads, exclude_unsound=snakemake.params.exclude_unsound)
