"""τ-bench Airline and Retail (datasets ``tau_airline``, ``tau_retail``) on tau2's own environments.

:mod:`.data` — where tau2 and the tasks come from; :mod:`.environment` — live environments;
:mod:`.semantics` — the domain facts the checker needs; :mod:`.replay` — the replay adapter and Y;
:mod:`.conversation` — the agent environment and the users for generating rollouts.
"""

from __future__ import annotations

from .conversation import ModelUser, ScriptedUser, TauAgentEnvironment
from .data import DEFAULT_PIN, DOMAINS, TauData, TauSource, TauTask, load_data
from .replay import (
                     Y_BASIS_FULL,
                     Y_BASIS_NO_NL,
                     GoldReplay,
                     NlJudge,
                     TauBenchmark,
                     TauSession,
                     dataset_of,
                     gold_audit,
                     load_benchmarks,
)

DATASETS = tuple(dataset_of(d) for d in DOMAINS)

__all__ = [
                     "DATASETS",
                     "DEFAULT_PIN",
                     "DOMAINS",
                     "Y_BASIS_FULL",
                     "Y_BASIS_NO_NL",
                     "GoldReplay",
                     "ModelUser",
                     "NlJudge",
                     "ScriptedUser",
                     "TauAgentEnvironment",
                     "TauBenchmark",
                     "TauData",
                     "TauSession",
                     "TauSource",
                     "TauTask",
                     "dataset_of",
                     "gold_audit",
                     "load_benchmarks",
                     "load_data",
]
