rule score_rollouts:
    """Replay every rollout: per-action and per-rollout (FED) Parquet, and a quarantine file."""
    input:
        rollouts=block_rollouts,
        package=block_packages,
    output:
        actions=f"{RESULTS}/scored/{{dataset}}/{{model}}/{{method}}/actions.parquet",
        episodes=f"{RESULTS}/scored/{{dataset}}/{{model}}/{{method}}/episodes.parquet",
        quarantine=f"{RESULTS}/scored/{{dataset}}/{{model}}/{{method}}/quarantine.jsonl",
    params:
        resources=RESOURCES,
        benchmark=lambda wc: benchmark_entry(wc.dataset),
        plugins=dataset_plugins,
        code=lambda wc: code("score_rollouts", wc.dataset),
    threads: lambda wc: block_threads(wc)
    log:
        f"{RESULTS}/logs/score/{{dataset}}/{{model}}/{{method}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/score/{{dataset}}/{{model}}/{{method}}.tsv"
    script:
        "../scripts/score_rollouts.py"


rule fed_table:
    """All scored blocks in one typed FED table, each episode with its task's health."""
    input:
        episodes=block_episodes(),
        health=health_outputs("tasks.parquet"),
    output:
        f"{RESULTS}/fed/episodes.parquet",
    params:
        code=code("fed_table"),
    log:
        f"{RESULTS}/logs/fed_table.log",
    script:
        "../scripts/fed_table.py"
