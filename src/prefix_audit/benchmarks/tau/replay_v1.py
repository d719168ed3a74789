"""τ-bench v1 rollouts replayed on tau2's environments (datasets ``tau_v1_airline``, ``tau_v1_retail``).

v1's task sets are not tau2's, so these are datasets of their own, of imported logs only: every
rollout carries its task — v1's ``info.task`` — as an embedded definition (:mod:`.embedded`), and the
dataset has no task list of its own. The environment is tau2's of the same domain (whose tools are
v1's, ported; the databases differ in two airline records, see :data:`.v1.V1_DB_DIFFERS`); the
exposed tools are v1's stock set (:mod:`.v1`): tau2's tools of those names with v1's declared
interfaces, and ``think``, which is accepted, returns an empty result and changes nothing. A call of
any other name is unknown (a schema failure) and, as in v1, is not executed.

Y is v1's reward (:mod:`.v1`), recomputed from the rollout's own gold: 0 unless the episode ended with
the user's stop or a transfer to a human agent; else DB hash after the agent's calls == hash after the
gold (tau2's hash of tau2's database on both sides) × every output found in a message the agent sent
the user (not the text beside a tool call; there is no greeting in v1). An entry whose model call
failed before any action (``infra_error``) scores 0, as v1 records it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import cached_property

from ...calls import ToolCall
from ...contract import Outcome, TaskIndex, ToolSpec, UnscorableRollout
from ...records import Rollout
from . import v1
from .data import TauData, TauTask
from .environment import LiveEnvironment
from .replay import TauBenchmark, TauSession, task_facts


def v1_dataset_of(domain: str) -> str:
    return f"tau_v1_{domain}"


def _think_spec() -> ToolSpec:
    schema = {**v1.THINK_SCHEMA, "additionalProperties": False}
    return ToolSpec(v1.THINK, schema, v1.THINK_DESCRIPTION, ("thought",), frozenset())


class TauV1Benchmark(TauBenchmark):
    """One v1 domain on tau2's environment; tasks come with the rollouts."""

    def __init__(self, data: TauData, domain: str, domain_override: str | None = None) -> None:
        super().__init__(data, domain, task_ids=())
        self.dataset = v1_dataset_of(domain)
        self.tasks = TaskIndex(())
        # ``import tau --tau-v1-domain``: the domain of a v1 file whose tools do not tell it.
        self.domain_override = domain_override

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
            out[name] = ToolSpec(name, {**schema, "additionalProperties": False}, info.spec.description,
                                 info.spec.positional_order, info.spec.reference_params)
        out[v1.THINK] = _think_spec()
        return out

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
                              (), rollout.source, {**rollout.meta, "user_turns": [],
                                                   "termination_reason": "agent_error"})
        super().__init__(bench, task, rollout)
        if self.infra_error is not None:
            self.facts = task_facts(task, ())

    def exposed_tools(self) -> Mapping[str, ToolSpec]:
        return self._tools

    def execute(self, call: ToolCall) -> Outcome:
        if not call.well_formed:
            return Outcome(False, None, call.parse_error)
        if call.name not in self._tools:  # v1 answers "Unknown action" and runs nothing
            return Outcome(False, None, f"{v1.UNKNOWN_ACTION_PREFIX} {call.name}")
        if call.name == v1.THINK:
            return Outcome(True, "")
        rule = v1.V1_STATUS_RULES[self.task.domain].get(call.name)
        if rule is not None:
            param, required, reply = rule
            status = self._live.order_status(call.kwargs.get(param))
            if status is not None and status != required:
                return Outcome(False, None, reply)
        if call.name in v1.SELF_MODIFY_TOOLS[self.task.domain]:
            call = self._without_unchanged_pairs(call)
        outcome = super().execute(call)
        if outcome.accepted and isinstance(outcome.result, str):
            return dataclasses.replace(outcome, logged=v1.v1_reply(call.name or "", outcome.result))
        if not outcome.accepted and outcome.error:
            worded = v1.v1_error(call.name or "", outcome.error)
            return dataclasses.replace(outcome, logged=worded) if worded != outcome.error else outcome
        return outcome

    def _without_unchanged_pairs(self, call: ToolCall) -> ToolCall:
        """``call`` without its pairs that modify an item into itself and change nothing in v1 (see
        :data:`.v1.SELF_MODIFY_TOOLS`); unchanged when there are none, when one would change something,
        or when no other pair is left (tau2 then rejects the call, where v1 accepts it)."""
        old, new = call.kwargs.get("item_ids"), call.kwargs.get("new_item_ids")
        if not isinstance(old, list) or not isinstance(new, list) or len(old) != len(new) \
                or not any(a == b for a, b in zip(old, new)) or all(a == b for a, b in zip(old, new)):
            return call
        with self._live.reading_db() as db:
            order = db.orders.get(call.kwargs.get("order_id")) if isinstance(call.kwargs.get("order_id"), str) \
                else None
            if order is None or order.status != "pending":
                return call
            items = {item.item_id: item for item in order.items}
            for a, b in zip(old, new):
                if a != b:
                    continue
                item = items.get(a) if isinstance(a, str) else None
                product = db.products.get(item.product_id) if item is not None else None
                variant = product.variants.get(a) if product is not None else None
                if variant is None or not variant.available or variant.price != item.price \
                        or variant.options != item.options:
                    return call
        kept = [(a, b) for a, b in zip(old, new) if a != b]
        kwargs = {**call.kwargs, "item_ids": [a for a, _ in kept], "new_item_ids": [b for _, b in kept]}
        return dataclasses.replace(call, kwargs=kwargs, raw=None)

    def _agent_texts(self) -> list[str]:
        """The messages the agent sent the user (v1's ``respond`` actions): text steps without a call."""
        return [step.text for turn in self._rollout.turns for step in turn if step.text and not step.calls]

    def final_success(self) -> int | None:
        if self.infra_error is not None:
            self.y_detail = f"rule={v1.RESULTS_FORMAT}; infra_error: the model call failed, scored 0 as in v1"
            return 0
        y = super().final_success()
        self.y_detail = f"rule={v1.RESULTS_FORMAT}; {self.y_detail}"
        return y


def load_v1_benchmarks(data: TauData) -> dict[str, TauV1Benchmark]:
    return {v1_dataset_of(d): TauV1Benchmark(data, d) for d in v1.V1_TOOLS if d in data.domains}


__all__ = ["TauV1Benchmark", "TauV1Session", "load_v1_benchmarks", "v1_dataset_of"]
