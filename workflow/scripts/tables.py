from pathlib import Path

from prefix_audit.pipeline import logging_to
from prefix_audit.tables import write_tables

with logging_to(snakemake.log[0]):
    write_tables(snakemake.input[0], Path(snakemake.output.csv).parent)
