rule view:
    """The audit browser: a static HTML site of every scored block, rollout by rollout, with the
    site's own Tables G.1 (and per BFCL category) and F.1, the task health and what the imports quarantined (prefix-audit view)."""
    input:
        unpack(lambda wc: label_entries()),
        episodes=block_episodes(),
        actions=block_actions(),
        import_quarantine=import_quarantines(),
        stats=f"{RESULTS}/stats/stats.parquet",
        categories=f"{RESULTS}/stats/categories.parquet",  # read beside stats.parquet
        health=health_outputs("tasks.parquet"),
        findings=health_outputs("findings.parquet"),
    output:
        directory(f"{RESULTS}/site"),
    params:
        scored=scored_root,
        pools=config["stats"]["pools"],
        methods=config["agents"]["methods"],
        code=code("view"),
    log:
        f"{RESULTS}/logs/view.log",
    benchmark:
        f"{RESULTS}/benchmarks/view.tsv"
    script:
        "../scripts/view.py"
