rule task_health:
    """Benchmark health of a dataset's tasks in the run (its sample; the tasks of its imported logs, on
    the release each was scored on): the benchmark's own environment and evaluator on each task's gold and
    on counterfactual trajectories (findings, per-task verdicts; docs/health.md). No agent's rollout is an
    input: a new model or method reruns none of it. The findings are kept per release in the resources
    folder's health/ (keyed by the release's data and the code) and read from there by later jobs and
    commands: a task another run has audited is not audited again."""
    input:
        unpack(health_inputs),
        package=dataset_packages,
    output:
        **{name.split(".")[0]: f"{RESULTS}/health/{{dataset}}/{name}" for name in HEALTH_FILES},
    params:
        resources=RESOURCES,
        health_cache=str(cache_folder(RESOURCES)),
        benchmark=lambda wc: benchmark_entry(wc.dataset),
        plugins=dataset_plugins,
        code=lambda wc: code("task_health", wc.dataset),
    threads: 2
    log:
        f"{RESULTS}/logs/health/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/health/{{dataset}}.tsv"
    script:
        "../scripts/task_health.py"


rule task_health_table:
    """Benchmark health per dataset and release: per code, the tasks with it and example ids (CSV,
    Markdown, LaTeX)."""
    input:
        tasks=health_outputs("tasks.parquet"),
        findings=health_outputs("findings.parquet"),
    output:
        **{
            ext: report(path, category="Tables", caption="../report/table_task_health.rst") if ext == "csv" else path
            for ext, path in TASK_HEALTH_TABLE.items()
        },
    params:
        code=code("task_health_table"),
    log:
        f"{RESULTS}/logs/task_health_table.log",
    script:
        "../scripts/task_health_table.py"
