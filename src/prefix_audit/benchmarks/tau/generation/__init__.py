"""Generating τ-bench rollouts: what the agent is told, the tools it gets, and the user.

Holds :mod:`.conversation` (the half-duplex conversation, the scripted user and tau2's user
simulator behind a model backend).

May import: :mod:`..domain` and the layers below the benchmarks.
"""
