"""Paper tables from the long stats table, rendered as CSV, Markdown and LaTeX (booktabs)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from prefix_audit.io import atomic_write_text
from prefix_audit.stats import BLOCK_KEYS

EMPTY_NOTE = "No blocks were present."
_MISSING = "n/a"
_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "|": r"\textbar{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}


def _fmt_ci(est: float | None, lo: float | None, hi: float | None) -> str:
    if est is None:
        return _MISSING
    if lo is None or hi is None:
        return f"{est:.3f}"
    return f"{est:.3f} [{lo:.3f}, {hi:.3f}]"


def table_g1(stats: pl.DataFrame, k_max: int = 4) -> pl.DataFrame:
    """Table G.1: PEC@1..k_max with CIs, one row per dataset x model x method block.

    Display columns ``PEC@k`` hold ``"0.873 [0.825, 0.915]"``; the numeric
    ``pec_k``, ``pec_k_lo``, ``pec_k_hi`` columns are kept for CSV.
    """
    ks = range(1, k_max + 1)
    schema: dict[str, pl.DataType] = {key: pl.Utf8() for key in BLOCK_KEYS} | {"N": pl.Int64()}
    schema |= {f"PEC@{k}": pl.Utf8() for k in ks}
    for k in ks:
        schema |= {f"pec_{k}": pl.Float64(), f"pec_{k}_lo": pl.Float64(), f"pec_{k}_hi": pl.Float64()}

    blocks: dict[tuple[str, ...], dict[str, object]] = {}
    pec = stats.filter((pl.col("metric") == "pec") & pl.col("k").is_between(1, k_max))
    for r in pec.iter_rows(named=True):
        row = blocks.setdefault(tuple(r[key] for key in BLOCK_KEYS), {"N": r["n"]})
        k = r["k"]
        row |= {f"pec_{k}": r["estimate"], f"pec_{k}_lo": r["ci_low"], f"pec_{k}_hi": r["ci_high"]}
    rows = []
    for key in sorted(blocks):
        row = dict(zip(BLOCK_KEYS, key)) | blocks[key]
        for k in ks:
            row[f"PEC@{k}"] = _fmt_ci(*(row.get(f"pec_{k}{suffix}") for suffix in ("", "_lo", "_hi")))
        rows.append(row)
    return pl.DataFrame(rows, schema=schema)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def to_markdown(df: pl.DataFrame) -> str:
    """GitHub-flavoured Markdown table; numeric columns right-aligned; a note line if empty."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", r"\|").replace("\n", " ") for c in cells) + " |"

    out = [
        line(df.columns),
        "|" + "|".join("---:" if dt.is_numeric() else "---" for dt in df.dtypes) + "|",
    ]
    out += [line([_cell(v) for v in row]) for row in df.iter_rows()]
    if df.is_empty():
        out += ["", f"_{EMPTY_NOTE}_"]
    return "\n".join(out) + "\n"


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters in plain text."""
    escaped = "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)
    # A cell starting with "[" would be read as the optional argument of \\ or \midrule.
    return "{}" + escaped if escaped.startswith("[") else escaped


def to_latex_booktabs(df: pl.DataFrame, caption: str, label: str) -> str:
    """A ``table`` float with a booktabs ``tabular``; the caption is escaped, the label is not."""
    spec = "".join("r" if dt.is_numeric() else "l" for dt in df.dtypes)
    out = [
        r"\begin{table}[htbp]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\label{{{label}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(latex_escape(c) for c in df.columns) + r" \\",
        r"\midrule",
    ]
    out += [" & ".join(latex_escape(_cell(v)) for v in row) + r" \\" for row in df.iter_rows()]
    if df.is_empty():
        out.append(rf"\multicolumn{{{df.width}}}{{c}}{{{EMPTY_NOTE}}} \\")
    out += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(out) + "\n"


def write_table(
    df: pl.DataFrame,
    out_dir: str | os.PathLike[str],
    stem: str,
    caption: str,
    *,
    display: Sequence[str] | None = None,
) -> list[Path]:
    """Write ``stem.csv`` (all columns) and ``stem.md``/``stem.tex`` (``display`` columns) atomically."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    shown = df.select(display) if display is not None else df
    return [
        atomic_write_text(out / f"{stem}.csv", df.write_csv()),
        atomic_write_text(out / f"{stem}.md", to_markdown(shown)),
        atomic_write_text(out / f"{stem}.tex", to_latex_booktabs(shown, caption, f"tab:{stem}")),
    ]


def _confidence_text(stats: pl.DataFrame) -> str:
    levels = stats["confidence"].unique().to_list()
    return f"{100 * levels[0]:g}% " if len(levels) == 1 else ""


def write_tables(stats_path: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write every table built from ``stats.parquet`` (a file, or a directory holding it)."""
    path = Path(stats_path)
    stats = pl.read_parquet(path / "stats.parquet" if path.is_dir() else path)
    g1 = table_g1(stats)
    caption = (
        f"PEC@k with {_confidence_text(stats)}percentile-bootstrap confidence intervals "
        "per dataset, model and method block."
    )
    display = [c for c in g1.columns if not c.startswith("pec_")]
    return write_table(g1, out_dir, "table_G1", caption, display=display)
