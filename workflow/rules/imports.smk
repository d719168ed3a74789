rule import_logs:
    """One block of logs that exist (config imports:) → its rollout records and quarantine file."""
    input:
        logs=lambda wc: import_block(wc).inputs(),
        package=block_packages,
    output:
        rollouts=f"{RESULTS}/rollouts/imported/{{dataset}}/{{model}}/{{method}}.jsonl",
        quarantine=f"{RESULTS}/rollouts/imported/{{dataset}}/{{model}}/{{method}}.quarantine.jsonl",
    params:
        files=lambda wc: list(import_block(wc).files),
        format=lambda wc: import_block(wc).format,
        model=block_model,
        resources=RESOURCES,
        benchmark=lambda wc: {**benchmark_entry(wc.dataset), **import_block(wc).options},
        plugins=dataset_plugins,
        code=lambda wc: code("import_logs", wc.dataset),
    threads: lambda wc: block_threads(wc)
    log:
        f"{RESULTS}/logs/import/{{dataset}}/{{model}}/{{method}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/import/{{dataset}}/{{model}}/{{method}}.tsv"
    script:
        "../scripts/import_logs.py"
