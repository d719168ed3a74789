from prefix_audit.ingest.imports import import_block
from prefix_audit.pipeline.logs import logging_to

with logging_to(snakemake.log[0]):
    import_block(snakemake.params.files, snakemake.output.rollouts, snakemake.output.quarantine,
                 kind=snakemake.params.format, dataset=snakemake.wildcards.dataset, model=snakemake.params.model,
                 method=snakemake.wildcards.method, resources=snakemake.params.resources,
                 settings={snakemake.wildcards.dataset: snakemake.params.benchmark},
                 plugins=snakemake.params.plugins, workers=snakemake.threads)
