"""The colours every figure and every page of the audit browser draws in, so a category, an origin or
a series keeps its colour wherever it appears. Paul Tol's colour-blind-safe qualitative palettes."""

UNCLASSIFIED = "unclassified"
CATEGORY_COLOURS = {
    "schema": "#4477AA",
    "dependency": "#EE6677",
    "precondition": "#228833",
    "state_consistency": "#CCBB44",
    "information": "#AA3377",
    UNCLASSIFIED: "#BBBBBB",
}
# Whose error a first failure is (docs/attribution.md), as the site's badges: dark enough to carry white
# text (WCAG AA); a first failure a table of an earlier version attributes to no one, grey.
ORIGIN_COLOURS = {"agent": "#A61B1B", "user": "#1D4ED8", "benchmark": "#6B21A8", UNCLASSIFIED: "#BBBBBB"}
# Tol "bright" + "muted" extras, assigned to series in sorted order so one keeps its colour across figures.
SERIES_COLOURS = (
    "#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB",
    "#332288", "#117733", "#882255",
)
