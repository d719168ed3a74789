"""What a benchmark plugin imports: the one stable home of the adapter contract, the registration,
the records an importer yields, the reading kit importers are written with and the vocabulary of
health findings (docs/adding-a-benchmark.md).

Everything here is re-exported from where it lives (:mod:`prefix_audit.replay.contract`,
:mod:`prefix_audit.replay.registry`, :mod:`prefix_audit.replay.health`, :mod:`prefix_audit.replay.conformance`,
:mod:`prefix_audit.core`, :mod:`prefix_audit.models.base`), so a plugin keeps working when the package's inside is
rearranged. This package's own benchmarks import it too; beyond it they use internals a plugin has
no need of (the checker's replay, value matching, the record checks, the records' JSON codecs and
model naming, the decoders' shape helpers, the evaluation frameworks' sample reader). A name a plugin
needs that is not here is a gap in this face: add it here rather than import from the inside.
"""

from __future__ import annotations

from prefix_audit.core.calls import ToolCall, parse_call_string, structured_call
from prefix_audit.core.decode import DecodeError, count, iter_json_lines, read_json_document, seconds
from prefix_audit.core.fetch import PackagePin, pinned_package
from prefix_audit.core.health import (
    CAUTION,
    DEFECT,
    DEFINITION,
    DESIGN,
    NOTE,
    SCORED,
    SEEN,
    UNSEEN,
    Finding,
    changed_hunks,
    changed_text,
)
from prefix_audit.core.reading import (
    CHAT_ROLES,
    BadRecord,
    CallLedger,
    MessageLoop,
    OpenCall,
    TurnLog,
    chat_role,
    expect,
    message_roles,
    numbered,
    object_at,
    value_at,
    whole_number,
)
from prefix_audit.core.records import (
    PARTY_CALLS_KEY,
    BadLine,
    Located,
    LogIssue,
    Recorded,
    RecordedResult,
    Rollout,
    Step,
    Usage,
    rollout_id_for,
    without_action,
)
from prefix_audit.models.base import Message, ModelBackend, ModelRequest, ToolSchema
from prefix_audit.replay.attribution import StateIndex
from prefix_audit.replay.checker import EpisodeResult, bind_arguments
from prefix_audit.replay.conformance import Problem, check_benchmark
from prefix_audit.replay.contract import (
    CAPABILITIES,
    USER_SOURCES,
    AgentEnvironment,
    Benchmark,
    Conversation,
    MissingCapability,
    Outcome,
    PartyCall,
    ReplaySession,
    ScriptedEnvironment,
    TaskFacts,
    TaskIndex,
    TaskSample,
    ToolSpec,
    UnscorableRollout,
    incomplete_capabilities,
    unreadable_call_observation,
)
from prefix_audit.replay.health import Counterfactual, HealthProbe, call_text, probe_findings
from prefix_audit.replay.registry import (
    CliOption,
    DatasetSpec,
    ImportRequest,
    OpenRequest,
    RefusedOption,
    Registration,
    SampleReader,
    TaskCategories,
    TrajectoryReader,
    register,
)

__all__ = ["CAPABILITIES", "CAUTION", "CHAT_ROLES", "DEFECT", "DEFINITION", "DESIGN", "NOTE", "PARTY_CALLS_KEY",
           "SCORED", "SEEN", "UNSEEN", "USER_SOURCES", "AgentEnvironment", "BadLine", "BadRecord", "Benchmark",
           "CallLedger", "CliOption", "Conversation", "Counterfactual", "DatasetSpec", "DecodeError",
           "EpisodeResult", "Finding", "HealthProbe", "ImportRequest", "Located", "LogIssue", "Message",
           "MessageLoop", "MissingCapability", "ModelBackend", "ModelRequest", "OpenCall", "OpenRequest", "Outcome",
           "PackagePin", "PartyCall", "Problem", "Recorded", "RecordedResult", "RefusedOption", "Registration",
           "ReplaySession", "Rollout", "SampleReader", "ScriptedEnvironment", "StateIndex", "Step", "TaskCategories",
           "TaskFacts", "TaskIndex", "TaskSample", "ToolCall", "ToolSchema", "ToolSpec", "TrajectoryReader",
           "TurnLog", "UnscorableRollout", "Usage", "bind_arguments", "call_text", "changed_hunks", "changed_text",
           "chat_role", "check_benchmark", "count", "expect", "incomplete_capabilities", "iter_json_lines",
           "message_roles", "numbered", "object_at", "parse_call_string", "pinned_package", "probe_findings",
           "read_json_document", "register", "rollout_id_for", "seconds", "structured_call",
           "unreadable_call_observation", "value_at", "whole_number", "without_action"]
