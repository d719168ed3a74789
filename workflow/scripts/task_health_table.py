from prefix_audit.pipeline.logs import logging_to
from prefix_audit.reports.tables import write_task_health_table

with logging_to(snakemake.log[0]):
    write_task_health_table(snakemake.input.tasks, snakemake.input.findings, dict(snakemake.output.items()))
