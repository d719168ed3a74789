"""Real Inspect AI eval logs of inspect_evals' own ``tau2_airline`` / ``tau2_retail`` / ``tau2_telecom``
tasks, for the importer's tests.

``write_tau2_log`` runs the task through ``inspect_ai.eval`` offline: both roles are Inspect's
``mockllm/model`` with a scripted ``custom_outputs`` callable. The agent's script is built from the
task's own gold ``evaluation_criteria.actions`` (sample metadata), bent by the scenario the caller
names for that task; the user's script opens with its reason for calling, gives its known info when
asked, then sends ``###STOP###``. The tools, the database in the sample store, the user-simulator loop
and the scorer are inspect_evals' own: the log is what a real run writes, the model outputs aside.

In telecom the user acts too: after the agent's gold calls the agent asks the user to act, and the
user's script makes the gold's user actions as tool calls on inspect_evals' phone (one per generate
call of the user's loop), says it is done, and stops after the agent's closing message (scenario
``gold``); in ``early_stop`` the user stops after the agent's first reply.

Samples run one at a time (``max_samples=1``): the user callable recognises the task by its system
prompt (which holds the task's ``<scenario>``) and counts conversation starts per task to know the
epoch; the agent callable follows the script of that task and epoch.

    python tests/inspect_tau2_logs.py OUT_DIR [--domain airline] [--format eval|json] [--epochs 2]
                                      [--scenario TASK_ID=SCENARIO ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import sys
from collections import Counter
from pathlib import Path
from typing import Any

SCENARIOS: dict[str, str] = {
    "gold": "every gold call, one per assistant message, then a message stating every communicate_info "
            "string; the user stops (C)",
    "unknown_tool": "a call of a tool that does not exist (lookup_everything), then gold (C)",
    "rejected": "a call its tool rejects with a ToolError (get_user_details of an unknown user), then "
                "gold (C)",
    "malformed": "a call with a wrongly typed argument (user_id=12345), then a call whose arguments are "
                 "not JSON (ToolCall.parse_error), then gold (C)",
    "parallel": "the gold calls two per assistant message (an odd one paired with a calculate call), "
                "then the closing message (C)",
    "early_stop": "the user stops after the agent's first reply; no call (I for a task with writes)",
    "epoch_split": "epoch 1 gold (C), later epochs early_stop (I for a task with writes)",
    "message_limit": "the agent's first generate raises (the tau2 loop catches it), then user and agent "
                     "chat until the run's message_limit; every later generate hits the limit, caught "
                     "by the loop too; no call (I for a task with writes)",
    "agent_error": "the agent's first generate is cancelled (CancelledError is no Exception: it leaves "
                   "the tau2 loop): sample.error set, no score",
}
# The scenarios that only add calls to gold (or regroup its calls): a scenario name may join several
# of them with "+", e.g. "unknown_tool+rejected+malformed" makes all their failing calls, then gold.
COMBINABLE = ("unknown_tool", "rejected", "malformed", "parallel")

# Per domain: task id -> scenario. Every scenario is covered (gold and early_stop by epoch_split's
# epochs 1 and 2), on tasks with few gold calls. Each sample-epoch costs seconds whatever it does: the scorer puts the
# whole database in the sample store twice, and Inspect diffs, condenses and writes that store.
DEFAULT_SCENARIOS: dict[str, dict[str, str]] = {
    "airline": {"5": "agent_error", "14": "epoch_split", "15": "unknown_tool+rejected+malformed+parallel",
                "20": "message_limit"},
    "retail": {"57": "agent_error", "73": "unknown_tool+rejected+malformed+parallel", "89": "epoch_split",
               "90": "message_limit"},
    # Two gold conversations (one also of ACTION basis) and one early stop: telecom's samples run slowly.
    "telecom": {"[mobile_data_issue]airplane_mode_on|user_abroad_roaming_enabled_off[PERSONA:None]": "gold",
                "[service_issue]airplane_mode_on|break_apn_settings|lock_sim_card_pin[PERSONA:None]": "gold",
                "[mms_issue]airplane_mode_on|bad_network_preference|bad_wifi_calling|break_apn_mms_setting|"
                "break_app_both_permissions|data_mode_off|data_usage_exceeded|unseat_sim_card|"
                "user_abroad_roaming_disabled_off[PERSONA:Hard]": "early_stop"},
}

MODEL = "mockllm/model"
STOP = "###STOP###"
UNKNOWN_TOOL = "lookup_everything"
UNKNOWN_USER = "nobody_0000"
UNPARSEABLE = '{"user_id": "nobody_0000"'  # the closing brace missing
ASK = "I can help with that. Could you please give me your user id and the details of your request?"
MORE = "Is there anything else I can help you with?"
MODEL_ERROR_MESSAGE = "scripted model failure (message_limit scenario)"
AGENT_ERROR_MESSAGE = "scripted cancellation (agent_error scenario)"


def scenario_parts(scenario: str) -> list[str]:
    """The scenario names a (possibly "+"-joined) scenario is made of; ValueError if it is none."""
    parts = scenario.split("+")
    if any(p not in SCENARIOS for p in parts) or (len(parts) > 1 and any(p not in COMBINABLE for p in parts)):
        raise ValueError(f"unknown scenario {scenario!r}: one of {sorted(SCENARIOS)}, or several of "
                         f"{COMBINABLE} joined with '+'")
    return parts


def expected_score(scenario: str, epoch: int) -> str | None:
    """The scorer value of a scenario's sample in an epoch (None: no score, the sample errors), on a
    task whose gold calls write to the database, as those of the default choice do."""
    if scenario == "agent_error":
        return None
    stops = scenario in ("early_stop", "message_limit") or (scenario == "epoch_split" and epoch > 1)
    return "I" if stops else "C"


# --- model outputs ------------------------------------------------------------------------------------

def _usage():
    from inspect_ai.model import ModelUsage

    # With usage set, mockllm counts no tokens (its tokenizer would download an encoding).
    return ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)


def _text(content: str):
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput

    message = ChatMessageAssistant(content=content, model=MODEL, source="generate")
    return ModelOutput(model=MODEL, choices=[ChatCompletionChoice(message=message, stop_reason="stop")],
                       usage=_usage())


def _calls(calls: list, tools) -> Any:
    """One assistant message with the calls ``(id, function, arguments)``; arguments given as a str
    are the model's raw text, parsed as a provider does (not JSON: ``{}`` and ``parse_error``)."""
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput
    from inspect_ai.model._providers.util import parse_tool_call
    from inspect_ai.tool import ToolCall

    tool_calls = [parse_tool_call(i, f, a, tools) if isinstance(a, str) else ToolCall(id=i, function=f, arguments=a)
                  for i, f, a in calls]
    message = ChatMessageAssistant(content="", model=MODEL, source="generate", tool_calls=tool_calls)
    return ModelOutput(model=MODEL, choices=[ChatCompletionChoice(message=message, stop_reason="tool_calls")],
                       usage=_usage())


# --- the script ---------------------------------------------------------------------------------------

def _instructions(task) -> tuple[str, str]:
    """The user's opening line and its answer to the agent's question (its known info)."""
    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        return "Hi, I need help with a request.", instructions
    return instructions.reason_for_call, instructions.known_info or "That is all I know."


def _closing(task) -> str:
    info = task.evaluation_criteria.communicate_info or []
    text = "Everything you asked for is done."
    return f"{text} For your records: {' / '.join(info)}." if info else text


TELECOM_PLEASE = "Please do the following on your phone, then tell me when you are done."
TELECOM_DONE = "I did everything you asked on my phone."


def _user_gold(task) -> list:
    return [a for a in task.evaluation_criteria.actions or [] if a.requestor == "user"]


def agent_steps(task, scenario: str) -> list:
    """The agent's outputs for a scenario (not agent_error, message_limit), one per generate call:
    a str is a text message, a list the calls ``(id, function, arguments)`` of one message."""
    parts = scenario_parts(scenario)
    if parts[0] == "early_stop":
        return [ASK]
    if task.user_scenario.instructions.domain == "telecom":  # the user's actions are the user's (their script)
        gold = [(f"call_{i}", a.name, dict(a.arguments))
                for i, a in enumerate(a for a in task.evaluation_criteria.actions or [] if a.requestor != "user")]
        return [ASK, *[[call] for call in gold], TELECOM_PLEASE, _closing(task)]
    calls: list[list[tuple[str, Any]]] = []
    for part in parts:
        if part == "unknown_tool":
            calls.append([(UNKNOWN_TOOL, {"query": "everything"})])
        elif part == "rejected":
            calls.append([("get_user_details", {"user_id": UNKNOWN_USER})])
        elif part == "malformed":
            calls += [[("get_user_details", {"user_id": 12345})], [("get_user_details", UNPARSEABLE)]]
    gold = [(a.name, dict(a.arguments)) for a in task.evaluation_criteria.actions or []]
    if "parallel" in parts:
        if len(gold) % 2:
            gold.append(("calculate", {"expression": "2 + 2"}))
        calls += [gold[i:i + 2] for i in range(0, len(gold), 2)]
    else:
        calls += [[call] for call in gold]
    ids = itertools.count()
    numbered = [[(f"call_{next(ids)}", f, a) for f, a in message] for message in calls]
    return [ASK, *numbered, _closing(task)]


class _Script:
    """The scripted user and agent of one run, its samples running one at a time."""

    def __init__(self, tasks: dict[str, Any], prompts: dict[str, str], scenarios: dict[str, str]):
        self.tasks, self.prompts, self.scenarios = tasks, prompts, scenarios
        self.starts: Counter[str] = Counter()
        self.task_id: str | None = None
        self.epoch = 0
        self.problems: list[str] = []  # raised after the run: the tau2 loop catches what the callables raise

    def scenario(self) -> str:
        """The scenario of the current task and epoch: epoch_split is gold, then early_stop."""
        name = self.scenarios[self.task_id]
        if name == "epoch_split":
            return "gold" if self.epoch == 1 else "early_stop"
        return name

    def user(self, input, tools, tool_choice, config):
        task_id = self.prompts.get(input[0].text)
        if task_id is None:
            self.problems.append(f"a user system prompt of no task of the script: {input[0].text[:200]!r}")
            raise RuntimeError(self.problems[-1])
        turn = sum(1 for m in input if m.role == "assistant")
        if turn == 0:  # a conversation starts: the next epoch of this task
            gc.collect()  # the previous sample's garbage (no automatic collection during the run)
            self.starts[task_id] += 1
            self.task_id, self.epoch = task_id, self.starts[task_id]
        opening, known = _instructions(self.tasks[task_id])
        scenario = self.scenario()
        if turn == 0:
            return _text(opening)
        task = self.tasks[task_id]
        if task.user_scenario.instructions.domain == "telecom" and scenario == "gold":
            # opening, known info, each user action as a call on the phone, done, then the stop
            script = [known, *[[(f"user_call_{i}", a.name, dict(a.arguments))] for i, a in enumerate(_user_gold(task))],
                      TELECOM_DONE]
            step = script[turn - 1] if turn - 1 < len(script) else STOP
            return _text(step) if isinstance(step, str) else _calls(step, tools)
        if scenario == "message_limit":
            return _text(known if turn == 1 else "Please go on.")
        if turn == 1 and scenario != "early_stop":
            return _text(known)
        return _text(STOP)

    def agent(self, input, tools, tool_choice, config):
        scenario = self.scenario()
        if scenario == "agent_error":
            raise asyncio.CancelledError(AGENT_ERROR_MESSAGE)
        if scenario == "message_limit":
            if [m.role for m in input] == ["system", "user"]:
                raise RuntimeError(MODEL_ERROR_MESSAGE)
            return _text(ASK)
        steps = agent_steps(self.tasks[self.task_id], scenario)
        done = sum(1 for m in input if m.role == "assistant")
        step = steps[done] if done < len(steps) else MORE
        return _text(step) if isinstance(step, str) else _calls(step, tools)


def _message_limit(tasks: dict[str, Any], scenarios: dict[str, str]) -> int:
    """Inspect's message limit for a run with a message_limit scenario: above the longest agent
    conversation of the other scenarios (system, two user messages, the steps and their tool results)."""
    longest = max((3 + sum(1 + len(step) if isinstance(step, list) else 1 for step in agent_steps(tasks[i], s))
                   for i, s in scenarios.items() if s not in ("message_limit", "agent_error")), default=0)
    return longest + 10


@contextlib.contextmanager
def _collection_between_samples():
    """The garbage collector off during the run, the user callable collecting at each sample's
    start: a sample's many objects (the database in the store, twice, and its diffs) make automatic
    collections a large part of the run's time. The log is the same."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _task(domain: str):
    from inspect_evals.tau2 import tau2_airline, tau2_retail, tau2_telecom

    tasks = {"airline": tau2_airline, "retail": tau2_retail, "telecom": tau2_telecom}
    if domain not in tasks:
        raise ValueError(f"no tau2 domain {domain!r} (one of {sorted(tasks)})")
    return tasks[domain](shuffle=False)


def write_tau2_log(log_dir: Path, *, domain: str = "airline", scenarios: dict[str, str] | None = None,
                   epochs: int = 2, log_format: str = "eval") -> Path:
    """Run inspect_evals' tau2_<domain> on the tasks the scenarios name, return the single log file written."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model
    from inspect_evals.tau2.common.metadata import Tau2MetaData

    scenarios = dict(DEFAULT_SCENARIOS[domain] if scenarios is None else scenarios)
    for scenario in scenarios.values():
        scenario_parts(scenario)
        if domain == "telecom" and scenario not in ("gold", "early_stop"):
            raise ValueError(f"telecom's script has the scenarios gold and early_stop, not {scenario!r}")
    task = _task(domain)
    samples = {str(s.id): s for s in task.dataset}
    missing = sorted(set(scenarios) - set(samples))
    if missing:
        raise ValueError(f"tau2_{domain} has no tasks {missing}")
    tasks = {i: Tau2MetaData.model_validate(samples[i].metadata).task for i in scenarios}
    script = _Script(tasks, {samples[i].input[0].text: i for i in scenarios}, scenarios)
    sample_ids: list[str] | None = list(scenarios)
    if any(c in i for i in scenarios for c in "[]*?"):  # Inspect's sample_id filter reads these as a glob
        task.dataset = task.dataset.filter(lambda sample: str(sample.id) in scenarios)
        sample_ids = None

    log_dir = Path(log_dir)
    if log_dir.exists() and any(log_dir.iterdir()):
        raise FileExistsError(f"{log_dir} is not empty: the log written could not be told apart")
    # stdout stays the CLI's (the log path): the tau2 loop prints the errors it catches.
    with contextlib.redirect_stdout(sys.stderr), _collection_between_samples():
        logs = inspect_eval(
            task,
            model=get_model(MODEL, custom_outputs=script.agent),
            model_roles={"user": get_model(MODEL, custom_outputs=script.user)},
            sample_id=sample_ids,
            epochs=epochs,
            max_samples=1,
            max_tasks=1,
            message_limit=_message_limit(tasks, scenarios) if "message_limit" in scenarios.values() else None,
            fail_on_error=False,
            display="none",
            log_dir=str(log_dir),
            log_format=log_format,
            log_realtime=False,
            log_model_api=False,
            score_display=False,
        )
    written = [p for p in log_dir.iterdir() if p.suffix == f".{log_format}"]
    if len(logs) != 1 or len(written) != 1:
        raise RuntimeError(f"expected one log, got {len(logs)} results and the files {written}")
    started = {i: script.starts[i] for i in scenarios}
    if script.problems or any(n != epochs for n in started.values()):
        raise RuntimeError(f"the script lost track of the run (conversations started per task: {started}, "
                           f"{epochs} expected): {script.problems}")
    return written[0]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--domain", default="airline", choices=sorted(DEFAULT_SCENARIOS))
    parser.add_argument("--format", dest="log_format", default="eval", choices=["eval", "json"])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--scenario", action="append", default=[], metavar="TASK_ID=SCENARIO",
                        help=f"one of {', '.join(SCENARIOS)} (or several of {', '.join(COMBINABLE)} "
                             "joined with '+'); repeatable; default: a built-in choice")
    args = parser.parse_args(argv)
    scenarios = dict(s.split("=", 1) for s in args.scenario) or None
    print(write_tau2_log(args.out_dir, domain=args.domain, scenarios=scenarios, epochs=args.epochs,
                         log_format=args.log_format))


if __name__ == "__main__":
    main()
