rule statistics:
    """Point estimates, Proposition 1-3 identity checks (a violation fails the rule), percentile
    bootstrap and Wilson intervals, per block and per pool."""
    input:
        f"{RESULTS}/fed/episodes.parquet",
    output:
        f"{RESULTS}/stats/stats.parquet",
    params:
        # agents.methods: the order pairs are taken in (later minus earlier)
        settings=stats_settings("resamples", "seed", "k_max", "confidence", "pools", "exclude_unsound",
                                methods=config["agents"]["methods"]),
        code=code("statistics"),
    threads: 2
    log:
        f"{RESULTS}/logs/stats.log",
    benchmark:
        f"{RESULTS}/benchmarks/stats.tsv"
    script:
        "../scripts/statistics.py"


rule category_statistics:
    """The statistics rule's block rows per task category, for the datasets whose benchmark names
    task categories (BFCL-v3 multi-turn's), with the benchmark's own accuracy of each category as its
    logs recorded it (table task_categories)."""
    input:
        f"{RESULTS}/fed/episodes.parquet",
    output:
        f"{RESULTS}/stats/categories.parquet",
    params:
        categories=registry.task_categories(),
        settings=stats_settings("resamples", "seed", "k_max", "confidence", "exclude_unsound"),
        code=code("category_statistics"),
    threads: 2
    log:
        f"{RESULTS}/logs/categories.log",
    benchmark:
        f"{RESULTS}/benchmarks/categories.tsv"
    script:
        "../scripts/category_statistics.py"


rule paired_statistics:
    """Paired task-level bootstrap of condition − baseline on shared tasks (Table F.3)."""
    input:
        f"{RESULTS}/fed/episodes.parquet",
    output:
        f"{RESULTS}/stats/paired.parquet",
    params:
        pairs=PAIRS,
        settings=stats_settings("seed", "confidence", "pools", "exclude_unsound",
                                resamples=config["stats"]["paired_resamples"]),
        code=code("paired_statistics"),
    threads: 2
    log:
        f"{RESULTS}/logs/paired.log",
    benchmark:
        f"{RESULTS}/benchmarks/paired.tsv"
    script:
        "../scripts/paired_statistics.py"


rule compare_labels:
    """Human step labels of imported blocks (config imports: labels:) set beside FED: where each label
    lands among its rollout's actions and messages, and per labelled rollout FED beside the labellers'
    first failure."""
    input:
        labels=[path for block in LABELLED.values() for path in block.labels],
        rollouts=[group["rollouts"] for group in label_groups()],
        fed=f"{RESULTS}/fed/episodes.parquet",
    output:
        **LABEL_OUTPUTS,
    params:
        groups=label_groups(),
        code=code("compare_labels"),
    log:
        f"{RESULTS}/logs/labels.log",
    benchmark:
        f"{RESULTS}/benchmarks/labels.tsv"
    script:
        "../scripts/compare_labels.py"


rule tables:
    """Tables G.1, task_categories, F.1, F.2, F.3, pairs, consistency, trust, labels and label_categories,
    then G.1 and F.1 on FED_agent (docs/attribution.md), as CSV, Markdown and LaTeX (the trust table of
    imported blocks reads the FED table; the labels tables the label comparison, empty without labels)."""
    input:
        unpack(lambda wc: label_entries()),
        stats=f"{RESULTS}/stats/stats.parquet",
        categories=f"{RESULTS}/stats/categories.parquet",
        paired=f"{RESULTS}/stats/paired.parquet",
        fed=f"{RESULTS}/fed/episodes.parquet",
    output:
        **{
            name: (
                report(str(path), category="Tables", caption=f"../report/table_{name.rsplit('_', 1)[0]}.rst")
                if path.suffix == ".csv" else str(path)
            )
            for name, path in TABLES.items()
        },
    params:
        pools=config["stats"]["pools"],
        methods=config["agents"]["methods"],
        code=code("tables"),
    log:
        f"{RESULTS}/logs/tables.log",
    script:
        "../scripts/tables.py"
