rule statistics:
    """Point estimates, Proposition 1-3 identity checks, percentile bootstrap and Wilson intervals."""
    input:
        f"{RESULTS}/fed/episodes.parquet",
    output:
        f"{RESULTS}/stats/stats.parquet",
    params:
        resamples=config["stats"]["resamples"],
        seed=config["stats"]["seed"],
        k_max=config["stats"]["k_max"],
        confidence=config["stats"]["confidence"],
        code=code_fingerprint("metrics.py", "bootstrap.py", "intervals.py", "stats.py", "io.py"),
    log:
        f"{RESULTS}/logs/stats.log",
    benchmark:
        f"{RESULTS}/benchmarks/stats.tsv"
    script:
        "../scripts/statistics.py"


rule tables:
    """The paper tables as CSV, Markdown and LaTeX."""
    input:
        f"{RESULTS}/stats/stats.parquet",
    output:
        csv=report(f"{RESULTS}/tables/table_G1.csv", category="Tables",
                   caption="../report/table_G1.rst"),
        md=f"{RESULTS}/tables/table_G1.md",
        tex=f"{RESULTS}/tables/table_G1.tex",
    params:
        code=code_fingerprint("tables.py", "io.py"),
    log:
        f"{RESULTS}/logs/tables.log",
    script:
        "../scripts/tables.py"
