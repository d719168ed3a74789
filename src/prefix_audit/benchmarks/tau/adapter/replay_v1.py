"""τ-bench v1 rollouts replayed on tau2's environments (datasets ``tau_v1_airline``, ``tau_v1_retail``).

v1's task sets are not tau2's, so these are datasets of their own, of imported logs only: every
rollout carries its task — v1's ``info.task`` — as an embedded definition (:mod:`..domain.embedded`), and the
dataset has no task list of its own. The environment is tau2's of the same domain (whose tools are
v1's, ported) with v1's behaviour where a ported tool behaves otherwise and v1's values of the
database records that differ (:mod:`..domain.tools_v1`); the exposed tools are v1's stock set (:mod:`..domain.v1`):
tau2's tools of those names with v1's declared interfaces, and ``think``, which is accepted, returns
an empty result and changes nothing. A call of any other name is unknown (a schema failure) and, as
in v1, is not executed. A rollout's replies follow the data version its log was made on
(``meta["v1_data_era"]``, :data:`..domain.v1.V1_DATA_ERAS`; absent: the current one).

Y is v1's reward (:mod:`..domain.v1`), recomputed from the rollout's own gold: 0 unless the episode ended with
the user's stop or a transfer to a human agent; else DB hash after the agent's calls == hash after the
gold (tau2's hash of the database on both sides, both replayed on v1's tool behaviour) × every output
found in a message the agent sent the user (not the text beside a tool call; there is no greeting in
v1). An entry whose model call failed before any action (``infra_error``) scores 0, as v1 records it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cached_property

from prefix_audit.plugin import Benchmark, Outcome, Rollout, TaskIndex, ToolCall, ToolSpec, UnscorableRollout

from ..domain import v1
from ..domain.data import TauData, TauTask
from ..domain.environment import LiveEnvironment
from ..domain.tools_v1 import V1DomainBackend, V1Environment
from .replay import TauBenchmark, TauSession, task_facts

# meta key: the name of the v1 data version (:data:`..domain.v1.V1_DATA_ERAS`) a rollout's log was made on
ERA_KEY = "v1_data_era"


def v1_dataset_of(domain: str) -> str:
    return f"tau_v1_{domain}"


def _think_spec() -> ToolSpec:
    schema = {**v1.THINK_SCHEMA, "additionalProperties": False}
    return ToolSpec(v1.THINK, schema, v1.THINK_DESCRIPTION, ("thought",), frozenset())


class TauV1Benchmark(TauBenchmark):
    """One v1 domain on tau2's environment; tasks come with the rollouts."""

    def __init__(self, data: TauData, domain: str, domain_override: str | None = None) -> None:
        super().__init__(data, domain, task_ids=())
        self.backend = V1DomainBackend(self.domain)
        self.dataset = v1_dataset_of(domain)
        self.tasks = TaskIndex(())
        # ``import tau --tau-v1-domain``: the domain of a v1 file whose tools do not tell it.
        self.domain_override = domain_override

    # v1's tasks come with the rollouts, so there is no task list to audit: no capability "health".
    health_releases = Benchmark.health_releases
    release_tasks = Benchmark.release_tasks
    task_health = Benchmark.task_health
    release_of = Benchmark.release_of

    @property
    def provenance(self) -> dict[str, str]:
        """tau2's version and database/policy hashes (tau2's task file plays no part)."""
        return {k: v for k, v in self.domain.provenance.items() if k != "tasks_sha256"}

    @cached_property
    def tools(self) -> dict[str, ToolSpec]:
        out = {}
        for name in sorted(v1.V1_TOOLS[self.domain.name] - {v1.THINK}):
            info = self.backend.tools[name]
            schema = v1.v1_schema(self.domain.name, name, info.schema)
            out[name] = replace(info.spec, parameters={**schema, "additionalProperties": False})
        out[v1.THINK] = _think_spec()
        return out

    def live_environment(self, rollout: Rollout | None = None, task: TauTask | None = None) -> LiveEnvironment:
        """An environment with v1's tool behaviour, its replies in the data version of ``rollout``'s log."""
        return V1Environment(self.backend, data_era(rollout.meta) if rollout is not None else v1.DEFAULT_ERA)

    @cached_property
    def _untouched_fingerprint(self) -> str:
        return LiveEnvironment(self.backend).db_fingerprint()

    def gold_writes(self, task: TauTask) -> bool:
        """Whether the task's gold actions change a fresh database (tau2's tools; failing ones
        change nothing, as in v1)."""
        return self.gold_fingerprint(task) != self._untouched_fingerprint

    def rollout_task(self, rollout: Rollout) -> TauTask:
        if rollout.infra_error is not None:  # no trajectory, hence no task recorded: nothing to score
            return v1.parse_v1_task({"actions": [], "instruction": "", "outputs": []}, rollout.task_id,
                                    self.domain.name, "an infra_error entry")
        task = super().rollout_task(rollout) if "embedded_task" in rollout.meta else None
        if task is None:
            raise UnscorableRollout(f"a {self.dataset} rollout must carry its task (meta.embedded_task): "
                                    f"v1's tasks are not part of tau2's task files")
        return task

    def open_session(self, rollout: Rollout) -> TauV1Session:
        return TauV1Session(self, self.rollout_task(rollout), rollout)


class TauV1Session(TauSession):
    termination_reasons = v1.TERMINATION_REASONS
    normal_terminations = v1.NORMAL_TERMINATIONS

    def __init__(self, bench: TauV1Benchmark, task: TauTask, rollout: Rollout) -> None:
        self.infra_error = rollout.infra_error
        if self.infra_error is not None:
            rollout = Rollout(rollout.dataset, rollout.task_id, rollout.model, rollout.method, rollout.rollout_id,
                              (), source=rollout.source, meta={**rollout.meta, "user_turns": [],
                                                   "termination_reason": "agent_error"})
        super().__init__(bench, task, rollout)
        if self.infra_error is not None:
            self.facts = task_facts(task, ())

    def exposed_tools(self) -> Mapping[str, ToolSpec]:
        return self._tools

    def execute(self, call: ToolCall) -> Outcome:
        if call.well_formed and call.name not in self._tools:  # v1 answers "Unknown action" and runs nothing
            return Outcome(False, None, f"{v1.UNKNOWN_ACTION_PREFIX} {call.name}")
        return super().execute(call)  # on v1's tools (:class:`..domain.tools_v1.V1Environment`)

    def _agent_texts(self) -> list[str]:
        """The messages the agent sent the user (v1's ``respond`` actions): text steps without a call."""
        return [step.text for turn in self._rollout.turns for step in turn if step.text and not step.calls]

    def final_success(self) -> int | None:
        if self.infra_error is not None:
            self.y_detail = f"rule={v1.RESULTS_FORMAT}; infra_error: the model call failed, scored 0 as in v1"
            return 0
        y = super().final_success()
        legacy = self._rollout.meta.get("v1_legacy_rule_y")
        if self._rollout.meta.get(v1.RULE_KEY) == v1.LEGACY_RULE and legacy in (0, 1):
            # the log's run was scored so (a task with outputs on its outputs alone): Y as its benchmark gave it
            self.y_detail = (f"rule={v1.RESULTS_FORMAT} {v1.LEGACY_RULE} (the run's, from the file): outputs "
                             f"{'found' if legacy else 'not all found'}; the current rule gives {y} ({self.y_detail})")
            return int(legacy)
        self.y_detail = f"rule={v1.RESULTS_FORMAT}; {self.y_detail}"
        return y


def data_era(meta: Mapping[str, object]) -> v1.DataEra:
    """The data version a v1 rollout's log was made on (``meta["v1_data_era"]``; absent: the current one)."""
    name = meta.get(ERA_KEY, v1.DEFAULT_ERA.name)
    if not isinstance(name, str) or name not in v1.V1_DATA_ERAS:
        raise UnscorableRollout(f"unknown {ERA_KEY} {name!r} (known: {', '.join(v1.V1_DATA_ERAS)})")
    return v1.V1_DATA_ERAS[name]


def load_v1_benchmarks(data: TauData) -> dict[str, TauV1Benchmark]:
    return {v1_dataset_of(d): TauV1Benchmark(data, d) for d in v1.V1_TOOLS if d in data.domains}


__all__ = ["ERA_KEY", "TauV1Benchmark", "TauV1Session", "data_era", "load_v1_benchmarks", "v1_dataset_of"]
