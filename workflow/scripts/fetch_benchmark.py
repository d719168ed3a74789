from prefix_audit.pipeline import fetch_benchmark, logging_to

with logging_to(snakemake.log[0]):
    fetch_benchmark(snakemake.params.pin, snakemake.params.resources)
