"""Rollout sources behind the agent grid: the mutation generator (and its oracle), and the
simulated model's policy, which deviates from the reference with the mutation operators."""
