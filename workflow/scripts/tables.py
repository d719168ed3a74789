from pathlib import Path

from prefix_audit.pipeline.logs import logging_to
from prefix_audit.reports.tables import write_tables

with logging_to(snakemake.log[0]):
    write_tables(snakemake.input.stats, dict(snakemake.output.items()), snakemake.input.paired,
                 pools=dict(snakemake.params.pools), methods=snakemake.params.methods,
                 episodes_path=snakemake.input.fed,
                 categories_path=snakemake.input.categories,
                 labels_dir=Path(snakemake.input.label_entries).parent if "label_entries" in snakemake.input.keys()
                 else None)
