"""How a table is written: its cells (an estimate with its interval as text and as numeric columns) and its
files (CSV with every column; Markdown and LaTeX booktabs with the display columns)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

EMPTY_NOTE = "No blocks were present."
FORMATS = ("csv", "md", "tex")
MISSING = "n/a"
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
    "Δ": r"$\Delta$",
}


def fmt_ci(est: float | None, lo: float | None, hi: float | None, signed: bool = False) -> str:
    """``est [lo, hi]`` to 3 decimals; ``signed`` adds the sign (differences in F.3)."""
    if est is None:
        return MISSING
    spec = "+.3f" if signed else ".3f"
    # + 0.0 turns a negative zero into "0.000".
    if lo is None or hi is None:
        return f"{est + 0.0:{spec}}"
    return f"{est + 0.0:{spec}} [{lo + 0.0:{spec}}, {hi + 0.0:{spec}}]"


def interval_schema(name: str) -> dict[str, pl.DataType]:
    """The numeric columns of an estimate with its interval: ``name``, ``name_lo``, ``name_hi``."""
    return {name: pl.Float64(), f"{name}_lo": pl.Float64(), f"{name}_hi": pl.Float64()}


def interval_values(name: str, row: Mapping[str, Any]) -> dict[str, object]:
    """A stats row's estimate and interval in the columns of :func:`interval_schema`."""
    return {name: row["estimate"], f"{name}_lo": row["ci_low"], f"{name}_hi": row["ci_high"]}


def interval_text(row: Mapping[str, Any], signed: bool = False) -> str:
    """A stats row's estimate and interval as :func:`fmt_ci` writes them."""
    return fmt_ci(row["estimate"], row["ci_low"], row["ci_high"], signed)


def display_columns(df: pl.DataFrame) -> list[str]:
    """The text columns and the block size, and the infrastructure failures when a block has any;
    the other numeric columns go to the CSV only."""
    failed = "infra failures" in df.columns and bool(df["infra failures"].fill_null(0).sum())
    return [c for c, dt in df.schema.items()
            if dt == pl.Utf8 or c == "pairs" or (c == "tasks" and "N" not in df.columns)
            or (c == "infra failures" and failed)]


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def to_markdown(df: pl.DataFrame, note: str = EMPTY_NOTE) -> str:
    """GitHub-flavoured Markdown table; numeric columns right-aligned; ``note`` line if empty."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", r"\|").replace("\n", " ") for c in cells) + " |"

    out = [
        line(df.columns),
        "|" + "|".join("---:" if dt.is_numeric() else "---" for dt in df.dtypes) + "|",
    ]
    out += [line([_cell(v) for v in row]) for row in df.iter_rows()]
    if df.is_empty():
        out += ["", f"_{note}_"]
    return "\n".join(out) + "\n"


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters in plain text."""
    escaped = "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)
    # A cell starting with "[" would be read as the optional argument of \\ or \midrule.
    return "{}" + escaped if escaped.startswith("[") else escaped


def to_latex_booktabs(df: pl.DataFrame, caption: str, label: str, note: str = EMPTY_NOTE) -> str:
    """A ``table`` float with a booktabs ``tabular``; caption and note are escaped, the label is not."""
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
        out.append(rf"\multicolumn{{{df.width}}}{{c}}{{{latex_escape(note)}}} \\")
    out += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(out) + "\n"


def table_texts(
    df: pl.DataFrame,
    files: Mapping[str, str | os.PathLike[str]],
    label: str,
    caption: str,
    *,
    display: Sequence[str] | None = None,
    note: str = EMPTY_NOTE,
) -> dict[Path, bytes]:
    """The contents of ``files["csv"]`` (all columns) and ``files["md"]``/``files["tex"]``
    (``display`` columns); ``label`` names the LaTeX table. An empty table gets its header, plus
    ``note`` in the Markdown and LaTeX files.
    """
    shown = df.select(display) if display is not None else df
    texts = {"csv": df.write_csv(), "md": to_markdown(shown, note),
             "tex": to_latex_booktabs(shown, caption, f"tab:{label}", note)}
    return {Path(files[ext]): text.encode("utf-8") for ext, text in texts.items()}
