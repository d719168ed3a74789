rule generate_rollouts:
    """Rollouts of one model × method block for every sampled task (JSON Lines, one rollout per line)."""
    input:
        tasks=f"{RESULTS}/tasks/{{dataset}}.json",
        package=lambda wc: fetched_marker(wc.dataset),
    output:
        f"{RESULTS}/rollouts/{{dataset}}/{{model}}/{{method}}.jsonl",
    params:
        model=block_model,
        settings=block_settings,
        resources=RESOURCES,
        benchmark=lambda wc: config["benchmarks"][wc.dataset],
        cache_dir=f"{RESULTS}/cache/model-responses",
        plugins=dataset_plugins,
        code=lambda wc: code("generate_rollouts", wc.dataset),
    resources:
        **endpoint_resources(),
    log:
        f"{RESULTS}/logs/rollouts/{{dataset}}/{{model}}/{{method}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/rollouts/{{dataset}}/{{model}}/{{method}}.tsv"
    script:
        "../scripts/generate_rollouts.py"
