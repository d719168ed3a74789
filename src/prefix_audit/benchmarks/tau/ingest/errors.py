"""Errors of the τ importers."""

from __future__ import annotations


class TauResultsError(ValueError):
    """A results file that cannot be read at all (every entry is lost), with the reason."""
