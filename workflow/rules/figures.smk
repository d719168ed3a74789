rule figures:
    """PEC curves with CI bands, depth decomposition and first-failure categories by depth (PNG + PDF),
    a Hoeffding planning note and index.json, all in one directory."""
    input:
        stats=f"{RESULTS}/stats/stats.parquet",
        episodes=f"{RESULTS}/fed/episodes.parquet",
    output:
        report(directory(f"{RESULTS}/figures"), patterns=["{name}.png", "{name}.txt"],
               category="Figures", caption="../report/figures.rst"),
    params:
        epsilon=0.05,
        code=code_fingerprint("figures.py", "checker.py", "intervals.py", "io.py"),
    threads: 2
    log:
        f"{RESULTS}/logs/figures.log",
    benchmark:
        f"{RESULTS}/benchmarks/figures.tsv"
    script:
        "../scripts/figures.py"
