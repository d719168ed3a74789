"""Generating τ-bench rollouts: what the agent is told, the tools it gets, and the user.

Holds :mod:`.conversation` (the half-duplex conversation, the scripted user and tau2's user
simulator behind a model backend) and :mod:`.telecom` (the telecom user's own calls in a rollout
record, and the reference conversation of a telecom task's gold).

May import: :mod:`..domain` and the layers below the benchmarks.
"""
