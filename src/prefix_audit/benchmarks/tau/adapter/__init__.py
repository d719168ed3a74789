"""τ-bench's replay adapters and Y: the datasets the checker replays rollouts on.

Holds :mod:`.replay` (``tau_airline``, ``tau_retail`` on tau2's environments; Y as tau2 scores it),
:mod:`.telecom` (``tau_telecom``: the agent's and the user's calls replayed, the agent's scored),
:mod:`.replay_v1` (``tau_v1_*``: v1 rollouts on v1's tools and data; Y as v1 scores it) and
:mod:`.health` (benchmark health of airline, retail and telecom tasks: the probe the shared checks run),
:mod:`.tau2_evaluation` (tau2's own evaluators, confirming every claim) and :mod:`.release_changes` (the
tasks' data releases and what changed between them).

May import: :mod:`..generation` (an adapter's agent environment), :mod:`..domain` and the layers
below the benchmarks.
"""
