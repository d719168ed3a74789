rule generate_rollouts:
    """Rollouts of one source for every sampled task (JSON Lines, one rollout per line)."""
    input:
        tasks=f"{RESULTS}/tasks/{{dataset}}.json",
        package=lambda wc: fetched_marker(wc.dataset),
    output:
        f"{RESULTS}/rollouts/{{dataset}}/{{source}}.jsonl",
    params:
        settings=lambda wc: config["sources"][wc.source],
        resources=RESOURCES,
        cache_dir=f"{RESULTS}/cache/model-responses",
        code=code_fingerprint(*REPLAY_CODE, "sources", "agents", "models", "rollout_store.py", "pipeline.py"),
    log:
        f"{RESULTS}/logs/rollouts/{{dataset}}/{{source}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/rollouts/{{dataset}}/{{source}}.tsv"
    script:
        "../scripts/generate_rollouts.py"
