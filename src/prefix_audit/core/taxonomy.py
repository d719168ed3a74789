"""The first-failure taxonomy (docs/definitions.md#taxonomy): the five categories, in the priority that names a primary
cause when several predicates fail at one action (schema → dependency → precondition →
state-consistency → information)."""

from __future__ import annotations

CATEGORIES = ("schema", "dependency", "precondition", "state_consistency", "information")
PRIORITY = {category: rank for rank, category in enumerate(CATEGORIES)}
