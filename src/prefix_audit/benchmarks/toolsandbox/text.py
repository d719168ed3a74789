"""Text matching: the fuzzy search of the sandbox's databases and the text similarity of milestones.

ToolSandbox searches names, relationships and contents with rapidfuzz's WRatio and scores
milestone texts with ROUGE-L. We keep the dependency footprint small and use our own stand-ins:
a match score that is 100 when one side's words are all among the other's and difflib's ratio
otherwise (an approximation of WRatio's partial matching), and the F-measure of the longest
common word subsequence (ROUGE-L without stemming). Both work on case-folded alphanumeric words.
"""

from __future__ import annotations

import difflib
import re

_WORD = re.compile(r"[0-9a-z]+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def ratio(a: str, b: str) -> float:
    """difflib's similarity ratio of the two word lists, in [0, 1]."""
    return difflib.SequenceMatcher(None, " ".join(words(a)), " ".join(words(b))).ratio()


def match_score(query: str, value: str) -> float:
    """0-100: how well a search query matches a stored value."""
    q, v = words(query), words(value)
    if not q or not v:
        return 0.0
    if set(q) <= set(v) or set(v) <= set(q):
        return 100.0
    return 100.0 * ratio(query, value)


def fuzzy_match(query: str, value: str | None, threshold: float) -> bool:
    return value is not None and match_score(query, value) >= threshold


def lcs_f1(reference: str, candidate: str) -> float:
    """F-measure of the longest common word subsequence; 1.0 exactly when the word lists agree."""
    a, b = words(reference), words(candidate)
    if not a or not b:
        return float(a == b)
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    lcs = prev[-1]
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(b), lcs / len(a)
    return 2 * precision * recall / (precision + recall)
