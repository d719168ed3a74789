from pathlib import Path

from prefix_audit.paired import pair_specs, write_paired
from prefix_audit.pipeline import logging_to

with logging_to(snakemake.log[0]):
    write_paired(snakemake.input[0], pair_specs(snakemake.params.pairs), Path(snakemake.output[0]).parent,
                 resamples=snakemake.params.resamples, seed=snakemake.params.seed,
                 confidence=snakemake.params.confidence, pools=dict(snakemake.params.pools),
                 workers=snakemake.threads)
