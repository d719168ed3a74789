from prefix_audit.core.fetch import fetch_pinned
from prefix_audit.pipeline.logs import logging_to

with logging_to(snakemake.log[0]):
    fetch_pinned(snakemake.params.pin, snakemake.params.resources)
