rule figures:
    """One figure family (PNG + PDF) with its index.json: `curves` = PEC curves with CI bands and the
    depth decomposition, plus the Hoeffding planning note; `categories` = first-failure categories
    by depth; `origins` = whose error the first failures are (agent, user, benchmark), shares and by
    depth; `labels` = FED's offsets from the human first failure."""
    input:
        lambda wc: FIGURE_TABLES[wc.family],
    output:
        report(directory(f"{RESULTS}/figures/{{family}}"), patterns=["{name}.png", "{name}.txt"],
               category="Figures", subcategory="{family}", caption="../report/figures.rst"),
    params:
        epsilon=0.05,
        code=code("figures"),
    wildcard_constraints:
        family="|".join(FIGURE_TABLES),
    threads: 2
    log:
        f"{RESULTS}/logs/figures/{{family}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/figures/{{family}}.tsv"
    script:
        "../scripts/figures.py"
