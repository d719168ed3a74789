from pathlib import Path

from prefix_audit.core.fetch import fetch_pinned
from prefix_audit.pipeline.logs import logging_to

with logging_to(snakemake.log[0]):
    # The folder from the output, not a param: a param is rerun tracking, and the same folder spelt
    # relative in one config and absolute in another would fetch again over packages in use.
    fetch_pinned(snakemake.params.pin, Path(snakemake.output[0]).parent.parent)
