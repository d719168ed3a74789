"""The executor loop shared by every ReAct-style method (docs/definitions.md#agents).

Per user turn the model is called with the conversation so far and the turn's tools; each tool call
it emits is executed and its observation appended, for at most ``max_steps`` tool-action
iterations; a reply without tool calls ends the turn. A turn that uses up its steps stops the
episode, as a force-terminated run does in the benchmarks. The conversation's own limits (τ's
error and step limits) are asked after every batch of tool results and after every turn, and stop
the episode there. Every model call's accounting is kept with the rollout.

The user's side comes from a :class:`~prefix_audit.replay.contract.Conversation`: scripted turns, or a user
simulator answering the agent's closing reply of each turn (τ-bench's half-duplex protocol).

Planning methods hook in before each turn's first executor call (``briefing``): what they return is
appended to the user's request, and their model calls are accounted but never enter T.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from prefix_audit.core.records import Step, Usage
from prefix_audit.models.base import Message, ModelBackend, ModelRequest, to_tool_call
from prefix_audit.replay.contract import AgentEnvironment, Conversation

from .prompts import REACT_SYSTEM_PROMPT

K_EXEC = 10


@dataclass(frozen=True)
class TurnBriefing:
    """What a planning method adds to a user turn: text for the executor, its own model calls'
    accounting, and a trace of what happened (kept in the rollout's meta)."""

    text: str | None
    usage: tuple[Usage, ...] = ()
    trace: dict[str, Any] = field(default_factory=dict)


# (turn, conversation so far ending with the turn's user message, the turn's tools) → briefing
Briefing = Callable[[int, tuple[Message, ...], tuple], Awaitable[TurnBriefing]]


@dataclass(frozen=True)
class Episode:
    turns: tuple[tuple[Step, ...], ...]
    usage: tuple[Usage, ...]  # agent calls, then the user simulator's
    force_terminated: bool  # a turn used up its K_exec tool actions
    planning: tuple[dict[str, Any], ...] = ()
    termination: str | None = None  # why it stopped before the user ended it (None: it did not)
    conversation: dict[str, Any] = field(default_factory=dict)  # what the conversation says of itself


def _opening_messages(conversation: Conversation, system_prompt: str) -> list[Message]:
    """The messages before the user's first: the system prompt (with the benchmark's instructions, if
    any) and what the agent says first, if anything."""
    if conversation.system_prompt:
        system_prompt = f"{system_prompt}\n\n{conversation.system_prompt}"
    messages = [Message("system", system_prompt)]
    if conversation.opening:
        messages.append(Message("assistant", conversation.opening))
    return messages


async def run_executor(backend: ModelBackend, env: AgentEnvironment, conversation: Conversation, *,
                       system_prompt: str = REACT_SYSTEM_PROMPT, max_steps: int = K_EXEC,
                       briefing: Briefing | None = None) -> Episode:
    messages = _opening_messages(conversation, system_prompt)
    turns: list[tuple[Step, ...]] = []
    usage: list[Usage] = []
    planning: list[dict[str, Any]] = []
    reply: str | None = None
    steps_so_far = 0  # messages and tool-result batches, as τ-bench counts its step limit
    termination: str | None = None
    force_terminated = False  # a turn used up its max_steps tool actions
    while (request := await conversation.next_user_message(reply)) is not None:
        turn = len(turns)
        tools = env.tools(turn)
        messages.append(Message("user", request))
        steps_so_far += 1
        if briefing is not None:
            brief = await briefing(turn, tuple(messages), tools)
            usage.extend(brief.usage)
            planning.append(brief.trace)
            if brief.text:
                messages[-1] = Message("user", f"{request}\n\n{brief.text}")
        steps: list[Step] = []
        reply = None
        for _ in range(max_steps + 1):  # max_steps tool actions, then one chance to answer
            response = await backend.complete(ModelRequest(tuple(messages), tools, "executor"))
            usage.append(response.usage)
            messages.append(response.as_message())
            steps_so_far += 1
            if not response.tool_calls:
                reply = response.text or ""
                steps.append(Step((), reply))
                break
            if len(steps) == max_steps:
                force_terminated = True
                break  # a further tool call past the limit is not executed
            calls = tuple(to_tool_call(c) for c in response.tool_calls)
            steps.append(Step(calls, response.text))
            for model_call, call in zip(response.tool_calls, calls, strict=True):
                messages.append(Message("tool", env.execute(call), tool_call_id=model_call.id))
            steps_so_far += 1
            if (termination := conversation.limit_reached(steps_so_far)) is not None:
                break  # the results are not handed back to the agent
        turns.append(tuple(steps))
        if termination is None:
            termination = "max_steps" if force_terminated else conversation.limit_reached(steps_so_far)
        if termination is not None:
            break
    return Episode(tuple(turns), tuple(usage) + conversation.usage(), force_terminated,
                   tuple(planning), termination, conversation.meta(termination))
