"""τ-bench's domains: where tau2's code and the tasks come from, the live environments, the facts.

Holds :mod:`.data` (the pinned tau2 wheel, task files read into our records), :mod:`.environment`
(tau2's own environments, a fresh database per rollout), :mod:`.copy_on_write` (the copy-on-write tables
a rollout's database is made of), :mod:`.calculator` (τ's ``calculate`` without eval), :mod:`.telecom` (tau2's telecom
environment: the provider's database and the user's device), :mod:`.semantics` (domain facts the checker
and the conversation need), :mod:`.embedded` (task definitions carried in rollout records),
:mod:`.releases` (the task releases we know, by fingerprints of their tasks' evaluations), :mod:`.v1`
(facts about τ-bench v1) and :mod:`.tools_v1` (v1's tools where they behave otherwise than tau2's port
of them).

May import: the layers below the benchmarks (:mod:`prefix_audit.plugin`, ``core``).
"""
