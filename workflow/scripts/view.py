from pathlib import Path

from prefix_audit.pipeline.logs import logging_to
from prefix_audit.reports.view import write_site

with logging_to(snakemake.log[0]):
    write_site(snakemake.input.episodes, snakemake.output[0], scored_root=snakemake.params.scored,
               stats_path=snakemake.input.stats, pools=dict(snakemake.params.pools),
               methods=snakemake.params.methods,
               labels_dir=Path(snakemake.input.label_entries).parent if "label_entries" in snakemake.input.keys()
               else None,
               health_dir=Path(snakemake.input.health[0]).parents[1] if snakemake.input.health else None,
               import_quarantine=snakemake.input.import_quarantine)
