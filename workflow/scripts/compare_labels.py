from pathlib import Path

from prefix_audit.pipeline.logs import logging_to
from prefix_audit.statistics.labels import LabelGroup, write_label_comparison

with logging_to(snakemake.log[0]):
    write_label_comparison([LabelGroup(g["labels"], [g["rollouts"]]) for g in snakemake.params.groups],
                           snakemake.input.fed, Path(snakemake.output.entries).parent)
