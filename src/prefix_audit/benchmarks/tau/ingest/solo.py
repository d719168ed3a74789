"""Whether a tau2 results file is a run of tau2's solo mode, decided per file from what the file says.

In solo mode there is no user: tau2 gives the agent the task's ticket and both tool lists (the
provider's and the user's phone's) and runs it on an environment in solo mode, which sends the
agent's call of a phone tool to the phone; the agent may send no text but its stop, and the
simulation holds no user message and no greeting. tau2 runs its solo agent (``llm_agent_solo``) only
with its ``DummyUser`` (``dummy_user``, which cannot speak), and that user only with a solo agent
(26.3's ``run_simulation`` and 1.0's ``build_user`` assert both), and records both in ``info``
(``agent_info.implementation``, ``user_info.implementation``). So (:func:`run_mode`):

* ``info`` names the user ``dummy_user``: solo (whatever the agent: tau2 1.0 lets a plugin register
  its own solo agent; tau2's ``evaluate-trajs`` recognises ``llm_agent_solo`` only);
* ``info`` names the agent ``llm_agent_solo`` with any other user: the file contradicts itself (tau2
  cannot write it), and each simulation is quarantined saying so;
* ``info`` names other implementations: not solo — an agent's call of a phone tool that ran is then
  quarantined, as before (tau2 answers it ``Tool … not found`` outside solo mode);
* the file names neither (a bare list of simulations, one simulation, a wrapper without ``info``):
  solo where its simulations show no user at all — none has a user message or opens with the
  orchestrator's greeting, which every simulation tau2 runs with a user holds — and at least one has
  messages; otherwise not.

Solo mode is telecom's (and tau2's ``mock``'s, which is not replayed): airline's and retail's
``get_environment`` refuse it, so a solo run of theirs is quarantined, simulation by simulation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..domain import semantics as sem
from ..domain.data import TELECOM

SOLO_AGENT = "llm_agent_solo"
DUMMY_USER = "dummy_user"
SOLO_DOMAINS = frozenset({TELECOM})


@dataclass(frozen=True)
class RunMode:
    """A file's mode: ``solo``, what the reading says of it (empty for a run with a user), and
    ``refused``: why none of its simulations can be read (then ``solo`` says nothing)."""

    solo: bool
    how: str = ""
    refused: str | None = None


def _implementation(info: Mapping[str, Any], party: str) -> str | None:
    entry = info.get(party)
    value = entry.get("implementation") if isinstance(entry, dict) else None
    return value if isinstance(value, str) and value else None


def _has_no_user(simulation: Any) -> bool | None:
    """Whether a simulation shows no user: no user message, no greeting first (None: no messages to tell)."""
    messages = simulation.get("messages") if isinstance(simulation, dict) else None
    if not isinstance(messages, list) or not messages:
        return None
    first = messages[0]
    greeted = isinstance(first, dict) and first.get("role") == "assistant" and \
        first.get("content") == sem.FIRST_AGENT_MESSAGE
    return not greeted and not any(isinstance(m, dict) and m.get("role") == "user" for m in messages)


def run_mode(info: Mapping[str, Any], simulations: Sequence[Any], domain: str) -> RunMode:
    """The mode of a file's run (module docstring), from its ``info`` (``{}`` where it has none) and,
    where that names no implementation, its simulations."""
    agent, user = _implementation(info, "agent_info"), _implementation(info, "user_info")
    if user == DUMMY_USER:
        solo, said = True, f"info: agent {agent or 'not named'}, user {DUMMY_USER}"
    elif agent == SOLO_AGENT:
        return RunMode(False, refused=f"the file's info names the agent {SOLO_AGENT} with the user "
                                      f"{user or 'not named'}, but tau2 runs its solo agent only with {DUMMY_USER} "
                                      f"(and that user only with a solo agent): the file contradicts itself, so its "
                                      f"mode is unknown")
    elif agent is not None or user is not None:
        return RunMode(False)
    else:
        seen = [s for s in map(_has_no_user, simulations) if s is not None]
        solo = bool(seen) and all(seen)
        said = ("the file names no agent or user implementation; none of its simulations has a user message "
                "or tau2's greeting")
    if not solo:
        return RunMode(False)
    if domain not in SOLO_DOMAINS:
        return RunMode(True, refused=f"a solo-mode run ({said}), but tau2's {domain} has no solo mode (its "
                                     f"get_environment refuses solo_mode)")
    return RunMode(True, f"solo mode ({said}): no user; the agent's calls of the phone's tools are its own "
                         f"actions, replayed on tau2's solo environment")
