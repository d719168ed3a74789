rule sample_tasks:
    """The deterministic, seeded task sample of one dataset, persisted as a task list."""
    input:
        lambda wc: fetched_marker(wc.dataset),
    output:
        f"{RESULTS}/tasks/{{dataset}}.json",
    params:
        n=lambda wc: config["benchmarks"][wc.dataset].get("sample", {}).get("n"),
        seed=lambda wc: config["benchmarks"][wc.dataset].get("sample", {}).get("seed", 0),
        resources=RESOURCES,
        benchmark=lambda wc: config["benchmarks"][wc.dataset],
        plugins=dataset_plugins,
        code=lambda wc: code("sample_tasks", wc.dataset),
    log:
        f"{RESULTS}/logs/sample/{{dataset}}.log",
    script:
        "../scripts/sample_tasks.py"
