"""Rollout sources that need no model: the reference rollout and the mutation generator."""
