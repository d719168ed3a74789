from pathlib import Path

from prefix_audit.pipeline import logging_to
from prefix_audit.tables import write_tables

with logging_to(snakemake.log[0]):
    write_tables(snakemake.input.stats, Path(snakemake.output.G1_csv).parent, snakemake.input.paired,
                 pools=dict(snakemake.params.pools))
