"""The audit's terms, defined once: the browser's glossary page (``glossary.html``), the tooltips of its
column headers and facts, and ``docs/glossary.md`` (:func:`glossary_markdown`, kept current by
``tests/test_view_glossary.py``) all read :data:`TERMS`.

Each definition says what the code computes (:mod:`prefix_audit.statistics.metrics`,
:mod:`prefix_audit.statistics.aggregates`, :mod:`prefix_audit.statistics.stats`), not what a reader might
expect: PEC@k over the fixed prefix cohort, AUC-PEC normalised per rollout, RR over rollouts with a
prefix failure and a known Y. The lists that can grow — the first-failure categories, the kinds of a
health finding — are written from the modules that define them, so a new one cannot go undefined.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from prefix_audit.core.health import KINDS
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.statistics.settings import K_MAX


@dataclass(frozen=True)
class Term:
    """One term: ``anchor`` its id on the glossary page, ``name`` how pages and tables write it, ``short`` one
    line for a tooltip, ``full`` the glossary's paragraph, ``more`` the page under ``docs/`` that says more."""

    anchor: str
    name: str
    short: str
    full: str
    more: str


# What each first-failure category means (the checker's predicates, docs/replay.md); keyed by
# CATEGORIES so that a category added there fails here at import instead of going undefined.
_CAUSES = {
    "schema": "the tool is not exposed in that turn, or the arguments do not bind to its declared interface",
    "dependency": "a referenced value was never made available, or names an object since deleted",
    "precondition": "an explicit state requirement (a login, a setting, an object that must exist) fails",
    "state_consistency": "the benchmark rejects the transition in the replayed state",
    "information": "the action uses a fact the user only gives in a later turn",
}
_CATEGORY_LIST = "; ".join(f"{c}: {_CAUSES[c]}" for c in CATEGORIES)
_KIND_LIST = "; ".join(f"{kind} ({meaning})" for kind, meaning in KINDS.items())

TERMS: tuple[Term, ...] = (
    Term("t", "T",
         "the rollout's scored horizon: how many of the agent's actions were scored",
         "The number of actions in the rollout's scored sequence a_1 … a_T, T ≥ 1: every environment-facing tool "
         "call the agent's executor emitted, plus one terminal no-tool action when the rollout ends with a final "
         "message and no tool call (an entry in which the model emitted nothing is one empty terminal action). "
         "Planner and verifier messages and the user's own calls (τ² telecom) do not count. An infrastructure "
         "failure has no T.",
         "replay.md"),
    Term("v-j", "V_j",
         "1 if the agent's j-th action is valid in the state replayed up to it, 0 if one of its predicates fails",
         "The validity of action j, judged in the benchmark's state replayed from the actions before it. V_j = 1 "
         "when the tool is exposed in that turn, the arguments bind to its declared interface (required ones "
         "present, no unknown names, declared types and enums, registered validators), every referenced value is "
         "available and not stale, the task information it uses has been obtained, explicit preconditions hold "
         "and the benchmark accepts the transition; V_j = 0 when any of these fails. Judging stops at the first "
         "0: later actions have no V_j (after a first failure that is not the agent's they are still checked, "
         "to find FED_agent, and still have no V_j).",
         "replay.md"),
    Term("fed", "FED",
         "First Error Depth: the position j of the first action with V_j = 0; T + 1 when no action fails "
         "(fully executable)",
         "The smallest j with V_j = 0, or T + 1 when all T actions are valid, so 1 ≤ FED ≤ T + 1. FED = T + 1 "
         "marks a fully executable rollout; the browser writes it as, e.g., 9 (T + 1) for a rollout of T = 8. "
         "FED charges every first failure to the agent, as the paper does; who caused it is its origin, and "
         "FED_agent is the agent's own first failure. The rest of the rollout still runs for final success. An "
         "infrastructure failure has no FED.",
         "replay.md"),
    Term("category", "first-failure category",
         f"the primary cause of the first failure: {', '.join(CATEGORIES)}",
         "At the first failing action every applicable predicate is evaluated, and one primary cause is named by "
         f"the priority {' → '.join(CATEGORIES)}. {_CATEGORY_LIST}. Every failing predicate is kept beside it; "
         "the tie-break changes no metric. Empty for a fully executable rollout.",
         "replay.md"),
    Term("prefix-cohort", "prefix cohort",
         "the rollouts with an observed trajectory (T and FED known): what every prefix metric is computed over",
         "The entries of a block whose trajectory was observed: all but its infrastructure failures. PEC@k, "
         "depth support, eligible-depth PEC, TER, AUC-PEC, mean FED and TER^k are computed over it, RR over its "
         "rollouts with a prefix failure and a known Y; final success and pass^k are over the entries whose Y is "
         "known, infrastructure failures included. The cohort is fixed: a rollout that ended early still counts "
         "in the denominator at every depth. With --exclude-unsound the rollouts of unsound tasks are left out "
         "of every cohort.",
         "statistics.md"),
    Term("n", "N",
         "the block's size as tasks × trials: 200, 200 × 4, or 200 × 1–4 (612) with the rollouts",
         "The size of a block as tasks × trials per task: 200 when each task has one trial, 200 × 4 with four "
         "each, 200 × 1–4 (612) when tasks have one to four, the rollouts in parentheses. The task is the unit "
         "every interval resamples. In Tables G.1 and F.1 N counts the prefix cohort (infrastructure failures "
         "have their own column); on the index and a block's page it counts every entry.",
         "statistics.md"),
    Term("infra", "infrastructure failure",
         "an entry the model call itself failed on: no trajectory, so no T or FED; it counts in final success "
         "only",
         "An entry with no observed trajectory because the model call itself failed: BFCL's Error during "
         "inference, a τ simulation ended by an infrastructure error. It stays an episode: T and FED are empty, "
         "Y is what the benchmark scores (BFCL: 0), it is outside the prefix cohort and inside final success "
         "and pass^k, and every table counts it (infra failures). An entry in which the model emitted nothing is "
         "not one: it is a rollout of one empty terminal action.",
         "statistics.md"),
    Term("pec", "PEC@k",
         "prefix executability at depth k: the share of the prefix cohort whose first k actions all execute, "
         "#{FED > k} / rollouts",
         "The prefix executability curve at depth k, over the fixed prefix cohort: PEC@k = (1/n) Σ 1{FED > k} "
         "over its n rollouts. The denominator is always every rollout of the cohort, so a rollout that ended "
         "before depth k (T < k) counts as not executable there, and the curve never rises with k. It factors "
         f"as depth support × eligible-depth PEC. Table G.1 gives k = 1 … {K_MAX} with intervals.",
         "statistics.md"),
    Term("depth-support", "depth support",
         "P(T ≥ k): the share of the prefix cohort with at least k actions",
         "The share of the prefix cohort's rollouts that reach depth k (T ≥ k). PEC@k = depth support × "
         "eligible-depth PEC (the paper's eq. 7), so a low PEC@k may come from short rollouts rather than "
         "failing ones.",
         "statistics.md"),
    Term("eligible-pec", "eligible-depth PEC",
         "P(FED > k | T ≥ k): among the rollouts that reach depth k, the share whose first k actions all "
         "execute",
         "PEC among the prefix cohort's rollouts with at least k actions: #{FED > k} / #{T ≥ k}; undefined (—) "
         "where no rollout reaches depth k. The paper reports only the product PEC@k; the statistics give all "
         "three (metrics pec, depth_support, eligible_pec).",
         "statistics.md"),
    Term("ter", "TER",
         "trajectory executability rate: the share of the prefix cohort with FED = T + 1, every action valid",
         "The trajectory executability rate: the mean of 1{FED = T + 1} over the prefix cohort, the share of "
         "rollouts none of whose actions fails. 0 ≤ TER ≤ AUC-PEC ≤ 1. TER equals PEC@T0 only when every "
         "rollout has the same horizon T0; with varying T it does not.",
         "statistics.md"),
    Term("auc-pec", "AUC-PEC",
         "mean over the prefix cohort of (FED − 1)/T: the share of each rollout's actions that precede its "
         "first failure",
         "The area under the prefix executability curve, normalised per rollout: the mean of (FED − 1)/T over "
         "the prefix cohort. Each rollout contributes the fraction of its own actions before its first failure "
         "(1 when fully executable, 0 when its first action fails), so long and short rollouts weigh alike. "
         "Only with a common horizon T0 does it equal (mean FED − 1)/T0.",
         "statistics.md"),
    Term("mean-fed", "mean FED",
         "the average First Error Depth over the prefix cohort (a fully executable rollout counts T + 1)",
         "The mean of FED over the prefix cohort, a fully executable rollout counting T + 1, so 1 ≤ mean FED ≤ "
         "mean(T + 1). Unlike AUC-PEC it is not normalised: it grows with the rollouts' length.",
         "statistics.md"),
    Term("y", "final success (Y)",
         "Y: the benchmark's own verdict on the whole rollout (1 success, 0 failure); final success is the mean "
         "Y where it is known",
         "Y is computed by the benchmark's own evaluator on the full observed rollout, actions after the first "
         "failure included, never by the audit's predicates; unknown where it could not be scored. Final success "
         "is the mean of Y over the entries whose Y is known, infrastructure failures included as the benchmark "
         "scores them.",
         "statistics.md"),
    Term("rr", "RR",
         "recovery rate: final success among the rollouts with a prefix failure (FED ≤ T), given as s/n",
         "The recovery rate: n counts the prefix cohort's rollouts with a prefix failure (FED ≤ T) and a known "
         "Y, s those of them with Y = 1, and RR = s/n, given with both counts; undefined (—, never 0) when n = "
         "0. Over the prefix cohort's rollouts with a known Y (TER taken over those too), P(Y = 1) = TER · "
         "P(Y = 1 | fully executable) + (1 − TER) · RR. Its interval is Wilson's.",
         "statistics.md"),
    Term("pass-k", "pass^k",
         "the chance that k trials of a task all succeed (τ-bench's unbiased estimator), averaged over tasks",
         "τ-bench's pass^k: per task C(c, k) / C(n, k), c the successes among its n trials whose Y is known, "
         "averaged over the tasks, each task weighing the same whatever its trials. Given for k = 1 up to the "
         "fewest trials a task of the cohort has; pass^1 equals final success when every task has as many "
         "trials with a known Y.",
         "statistics.md"),
    Term("ter-k", "TER^k",
         "the chance that k trials of a task are all fully executable, averaged over tasks",
         "pass^k's estimator on full executability: per task C(c, k) / C(n, k), c of its n prefix-cohort trials "
         "with FED = T + 1, averaged over the tasks; for k = 1 up to the fewest trials a task of the cohort has.",
         "statistics.md"),
    Term("origin", "whose error (origin)",
         "whose error the first failure is: the agent's, the user's (their information, used faithfully) or "
         "the benchmark's",
         "Every failing action gets an origin, with evidence a person can check. user: a look-up by values the "
         "user stated verbatim, which the benchmark answers name nothing and no object of its state holds; or a "
         "scripted trap: the task's gold makes the same call and it fails the same way by design. "
         "benchmark: the benchmark's own harness failed a well-formed call, or benchmark health shows the task "
         "makes the failure unavoidable (its gold fails the same way, or it withholds a function its gold "
         "needs). agent: everything else, and whenever a condition cannot be checked. The paper's metrics stay "
         "on FED; the origin adds FED_agent and each block's first failures by origin (agent · user · "
         "benchmark).",
         "attribution.md"),
    Term("fed-agent", "FED_agent",
         "the depth of the first failure that is the agent's own; T + 1 when there is none (FED ≤ FED_agent)",
         "The smallest j whose failing action's origin is agent, or T + 1 when there is none; FED ≤ FED_agent ≤ "
         "T + 1, equal when the first failure is the agent's. After a failure that is not the agent's, replay "
         "judges the later actions to find it. The prefix metrics and RR are computed again on FED_agent with "
         "the same bootstrap draws (the statistics' rows with attribution agent, tables table_G1_agent and "
         "table_F1_agent); the paper's tables stay on FED.",
         "attribution.md"),
    Term("sound-task", "sound task",
         "a task in which benchmark health found no defect; on an unsound one the benchmark's own error may be "
         "charged to the agent",
         "Benchmark health runs each task's gold and counterfactual trajectories in the benchmark's own "
         f"environment and evaluator; each finding has a kind: {_KIND_LIST}. A task is unsound when one of its "
         "findings is a defect, sound otherwise, and not audited where no health ran. By default unsound tasks "
         "stay in every metric, as in the paper's protocol, and the tables say how many there are and why "
         "(unsound tasks); --exclude-unsound leaves their rollouts out.",
         "health.md"),
    Term("intervals", "intervals",
         "95 % intervals: a task-clustered percentile bootstrap for shares and means, Wilson's for RR",
         "Estimates are over all rollouts of a cohort; intervals resample tasks, not rollouts. Every share and "
         "mean (PEC@k, depth support, eligible-depth PEC, TER, AUC-PEC, mean FED, final success, pass^k, "
         "TER^k) gets a percentile bootstrap interval that draws tasks with replacement, each with all its "
         "trials (--resamples, 10,000 by default; --confidence, 0.95 by default); blocks over the same tasks "
         "share one draw, so their differences are paired. RR gets the Wilson score interval of its exact "
         "counts, at Kish's effective sample size when tasks have several eligible trials. A table writes an "
         "interval as [low, high] after the estimate.",
         "statistics.md"),
)
GLOSSARY: Mapping[str, Term] = MappingProxyType({t.anchor: t for t in TERMS})

# The site's statistics tables (tables.html) by column title; G.1's PEC@1, PEC@2, … are PEC@k.
TABLE_COLUMNS: Mapping[str, str] = MappingProxyType({
    "N": "n", "infra failures": "infra", "unsound tasks": "sound-task",
    "first failures: agent · user · benchmark": "origin", "TER": "ter", "mean FED": "mean-fed",
    "AUC-PEC": "auc-pec", "final success": "y", "RR": "rr",
})
_PEC_COLUMN = re.compile(r"PEC@\d+")


def column_term(title: str) -> Term | None:
    """The term a statistics table's column ``title`` stands for; None for a column that needs none
    (dataset, model, method, a BFCL task category)."""
    if _PEC_COLUMN.fullmatch(title):
        return GLOSSARY["pec"]
    anchor = TABLE_COLUMNS.get(title)
    return GLOSSARY[anchor] if anchor is not None else None


def column_terms(titles: Iterable[str]) -> list[str]:
    """The anchors of the terms a table of these column ``titles`` names, each once, in column order."""
    terms = (column_term(title) for title in titles)
    return list(dict.fromkeys(t.anchor for t in terms if t is not None))


def glossary_markdown() -> str:
    """``docs/glossary.md``: every term of :data:`TERMS`, its one line and its paragraph, in their order."""
    lines = ["# Glossary", "",
             "The terms of the audit's tables, of the audit browser and of its figures, as the code computes them. "
             "The browser's glossary page (`glossary.html`, linked from every page) and the tooltips of its "
             "column headers say the same: all three come from `prefix_audit.reports.glossary`, and "
             "`tests/test_view_glossary.py` checks that this page is what `glossary_markdown()` writes.", ""]
    for t in TERMS:
        lines += [f"## {t.name}", "", f"In short: {t.short}.", "", t.full, "", f"More: [{t.more}]({t.more}).", ""]
    return "\n".join(lines)
