"""The FED table: the typed schemas of scoring's per-rollout and per-action Parquet, and the one
table of every scored block (the ``fed_table`` stage)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pyarrow as pa

from prefix_audit.core.io import write_parquet

log = logging.getLogger(__name__)

EPISODE_SCHEMA = pa.schema((
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("method", pa.string(), nullable=False),
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("trial", pa.int32(), nullable=False),  # repetition of the task within the block, from 0
    pa.field("rollout_id", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("infra_error", pa.string()),  # why the model call failed before any action; null otherwise
    # T and FED are null together on an infrastructure failure (no observed action,
    # docs/definitions.md#infrastructure-failures).
    pa.field("T", pa.int32()),
    pa.field("FED", pa.int32()),
    pa.field("Y", pa.int8()),  # null: the benchmark could not decide success
    pa.field("category", pa.string()),  # primary first-failure category; null when fully executable
    pa.field("failure_code", pa.string()),
    pa.field("failure_detail", pa.string()),
    pa.field("failed_predicates", pa.list_(pa.string()), nullable=False),  # every failing category at FED
    # Whose error the first failure is (docs/attribution.md): agent | user | benchmark, with the evidence;
    # null when fully executable. FED_agent: the first failure attributed to the agent (T + 1 when none
    # is; null with FED), so FED <= FED_agent.
    pa.field("origin", pa.string()),
    pa.field("origin_evidence", pa.string()),
    pa.field("FED_agent", pa.int32()),
    pa.field("n_turns", pa.int32(), nullable=False),
    pa.field("y_detail", pa.string()),
    # Accounting (docs/definitions.md#accounting, Table F.2); null when the rollout carries none.
    pa.field("agent_calls", pa.int32()),
    pa.field("agent_tokens", pa.int64()),  # input + output over planner, verifier, revision, executor
    pa.field("agent_latency_s", pa.float64()),  # summed client-side latency of those calls' successful attempts
    pa.field("agent_wall_s", pa.float64()),  # summed wall time of those calls, failed attempts and waits included
    pa.field("agent_estimated_calls", pa.int32()),  # those calls whose tokens were estimated locally (no usage)
    pa.field("user_sim_tokens", pa.int64()),
    pa.field("user_sim_latency_s", pa.float64()),
    pa.field("accounting_error", pa.string()),  # why the log's accounting was unusable (then the above are null)
    pa.field("meta_json", pa.string(), nullable=False),
    # The log checked against itself (docs/definitions.md#reading-rules; null for generated rollouts,
    # :mod:`prefix_audit.replay.record_check`).
    pa.field("recorded_y", pa.int8()),  # the log's own verdict on Y; null where it records none
    pa.field("recorded_verdict", pa.string()),  # that verdict in the log's words, or why there is none
    pa.field("recorded_score", pa.float64()),  # the benchmark's own continuous score as recorded (its headline's mean)
    pa.field("recorded_score_name", pa.string()),  # its name (ToolSandbox: similarity); null with it
    pa.field("replay_agreement", pa.float64()),  # share of compared recorded tool results replay reproduced
    pa.field("results_compared", pa.int32()),  # recorded tool results compared (its denominator)
    pa.field("results_reproduced", pa.int32()),  # of those, reproduced
    pa.field("results_same_verdict", pa.int32()),  # of those, with the same ok/error verdict
    pa.field("log_issue", pa.string()),  # `; `-joined codes with details; null when all agrees
    # Decode health of the imported log (null for generated rollouts).
    pa.field("call_steps", pa.int32()),  # model responses with a call, or that the decoder could not read
    pa.field("undecoded_steps", pa.int32()),  # of those, the ones the decoder could not read
    pa.field("undecoded_confirmed", pa.int32()),  # of those, the ones the log shows its own run could not read either
    pa.field("tool_calls", pa.int32()),  # calls read (T without the terminal action)
    pa.field("unknown_tool_calls", pa.int32()),  # calls with an empty name or one the task does not know
    # Benchmark health (docs/definitions.md#health): the data release the rollout was scored on (null: one
    # the benchmark does not audit, e.g. a task definition the log carried), and what the health of its task
    # on that release found — filled in the FED table from the health outputs (null / empty where none was computed).
    pa.field("release", pa.string()),
    pa.field("task_sound", pa.bool_()),  # no defect found in the task; null: not audited
    pa.field("task_health", pa.list_(pa.string()), nullable=False),  # every code found for the task
    pa.field("task_defects", pa.list_(pa.string()), nullable=False),  # the codes of its defect findings
    # The conversation around the actions, for the rollout page: the user's message of each turn (the
    # benchmark's through the last turn it has, a τ rollout's through the last turn it reached), who
    # wrote those messages — benchmark (its own text) | simulated (a simulated user, as the rollout
    # recorded it) | reference (this package's scripted user of a τ task's reference conversation;
    # replay.contract.USER_SOURCES) —, and the agent's text that is no action, by turn and step: what it
    # told the user between actions and what it wrote beside its calls (every step's text but the
    # terminal action's; core.records.agent_texts), each cut at scoring's MAX_RESULT_CHARS.
    pa.field("user_turns", pa.list_(pa.string()), nullable=False),
    pa.field("user_source", pa.string(), nullable=False),
    pa.field("agent_texts", pa.list_(pa.struct([pa.field("turn", pa.int32(), nullable=False),
                                                pa.field("step", pa.int32(), nullable=False),
                                                pa.field("text", pa.string(), nullable=False)])),
             nullable=False),
))

ACTION_SCHEMA = pa.schema((
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("method", pa.string(), nullable=False),
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("rollout_id", pa.string(), nullable=False),
    pa.field("j", pa.int32(), nullable=False),
    pa.field("turn", pa.int32(), nullable=False),
    pa.field("step", pa.int32(), nullable=False),
    pa.field("message", pa.int32()),  # its position among the log's messages (null: a log without messages)
    pa.field("terminal", pa.bool_(), nullable=False),
    pa.field("tool", pa.string()),
    pa.field("call", pa.string()),
    pa.field("V", pa.bool_()),  # null after the first failure: the prefix replay has stopped
    pa.field("failure_categories", pa.list_(pa.string()), nullable=False),
    pa.field("failure_codes", pa.list_(pa.string()), nullable=False),
    pa.field("failure_details", pa.list_(pa.string()), nullable=False),
    # Whose error a failing action is, with the evidence (null on an action that did not fail or was not
    # judged). After a first failure that is not the agent's, actions are judged on until the agent's
    # own first failure: their failures are listed, their V stays null.
    pa.field("origin", pa.string()),
    pa.field("origin_evidence", pa.string()),
    # argument values the dependency and information predicates found given in other words, and how
    pa.field("given_as", pa.list_(pa.string()), nullable=False),
    pa.field("accepted", pa.bool_()),  # the benchmark's verdict on the executed transition
    pa.field("result", pa.string()),
    # What the log recorded for this call, and how replay compares (null where nothing was recorded).
    pa.field("recorded_result", pa.string()),
    pa.field("recorded_error", pa.bool_()),
    pa.field("record_match", pa.string()),  # same | same_verdict | differs | not_replayed | not_executed
    pa.field("replayed_result", pa.string()),  # the benchmark's own text of the replayed outcome, where it diverged
))


HEALTH_KEYS = ["dataset", "release", "task_id"]


def with_task_health(episodes: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """``episodes`` with ``task_sound``, ``task_health`` and ``task_defects`` from the health outputs'
    per-task table ``tasks`` (its ``sound``, ``codes`` and ``defects``), matched on dataset, release and
    task id; unmatched episodes keep null and empty."""
    verdicts = tasks.select(*HEALTH_KEYS, pl.col("sound").alias("_sound"), pl.col("codes").alias("_codes"),
                            pl.col("defects").alias("_defects")).unique(HEALTH_KEYS, keep="first", maintain_order=True)
    joined = episodes.join(verdicts, on=HEALTH_KEYS, how="left", nulls_equal=False, maintain_order="left")
    empty = pl.lit([], pl.List(pl.Utf8))
    return joined.with_columns(pl.col("_sound").alias("task_sound"),
                               pl.col("_codes").fill_null(empty).alias("task_health"),
                               pl.col("_defects").fill_null(empty).alias("task_defects")) \
        .drop("_sound", "_codes", "_defects")


def merge_episodes(paths: Sequence[str | Path], out: str | Path, health: Sequence[str | Path] = ()) -> int:
    """Concatenate per-block episode tables into the one FED table (typed, sorted, deterministic), with
    each task's health from the ``tasks.parquet`` of the health outputs ``health`` (:func:`with_task_health`)."""
    frames = [pl.read_parquet(p) for p in sorted(map(str, paths))]
    table = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=pl.Schema(EPISODE_SCHEMA))
    if health:
        table = with_task_health(table, pl.concat([pl.read_parquet(p) for p in sorted(map(str, health))]))
    table = table.sort(["dataset", "model", "method", "task_id", "trial", "rollout_id"])
    write_parquet(table.to_arrow().select(EPISODE_SCHEMA.names).cast(EPISODE_SCHEMA), out)
    log.info("FED table: %d episodes from %d blocks", table.height, len(frames))
    return table.height
