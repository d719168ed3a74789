rule score_chunk:
    """One chunk of a big imported block (config score_chunk_mib): the rollouts that start in its byte
    range of the block's file, replayed, as scored lines for score_rollouts to gather."""
    input:
        rollouts=block_rollouts,
        package=block_packages,
    output:
        temp(f"{RESULTS}/score_chunks/{{dataset}}/{{model}}/{{method}}/{{chunk}}.jsonl"),
    params:
        chunks=block_chunks,
        resources=RESOURCES,
        benchmark=lambda wc: benchmark_entry(wc.dataset),
        plugins=dataset_plugins,
        code=lambda wc: code("score_chunk", wc.dataset),
    threads: lambda wc: chunk_threads(wc)
    log:
        f"{RESULTS}/logs/score/{{dataset}}/{{model}}/{{method}}.chunk{{chunk}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/score/{{dataset}}/{{model}}/{{method}}.chunk{{chunk}}.tsv"
    script:
        "../scripts/score_chunk.py"


rule score_rollouts:
    """Replay every rollout: per-action and per-rollout (FED) Parquet, and a quarantine file. A big
    imported block's chunks were replayed by score_chunk: here they are gathered in line order."""
    input:
        rollouts=block_rollouts,
        package=block_packages,
        chunks=block_chunk_files,
    output:
        actions=f"{RESULTS}/scored/{{dataset}}/{{model}}/{{method}}/actions.parquet",
        episodes=f"{RESULTS}/scored/{{dataset}}/{{model}}/{{method}}/episodes.parquet",
        quarantine=f"{RESULTS}/scored/{{dataset}}/{{model}}/{{method}}/quarantine.jsonl",
    params:
        resources=RESOURCES,
        benchmark=lambda wc: benchmark_entry(wc.dataset),
        plugins=dataset_plugins,
        code=lambda wc: code("score_rollouts", wc.dataset),
    threads: lambda wc: score_threads(wc)
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
