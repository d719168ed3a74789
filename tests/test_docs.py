"""Every command and config snippet in the documentation works as written: Snakemake commands and
config snippets are dry-run, `prefix-audit` commands run, synopses name real options, links resolve,
and the defaults config/README.md states are the code's.

Conventions the pages follow: a ```yaml block starts with `# NAME.yaml — COMMAND` (how to use it);
```bash blocks and inline `.venv/bin/snakemake …` spans are commands; ```text blocks are synopses.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "config" / "README.md", ROOT / "bench" / "RESULTS.md",
                *(ROOT / "docs").rglob("*.md")])
_BESIDE = Path(sys.executable).parent / "snakemake"
SNAKEMAKE = str(_BESIDE) if _BESIDE.exists() else shutil.which("snakemake")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE_SNAKEMAKE = re.compile(r"`(\.venv/bin/snakemake [^`]+)`")
SNIPPET_HEADER = re.compile(r"^# (?P<name>[\w.-]+\.yaml) — (?:use with: )?(?P<command>.+)$")
# Commands that cannot run on a fresh clone by their nature, and where they are covered instead.
NOT_DRY_RUN = {
    "--report": "needs a finished run: tests/test_workflow.py builds the report of the smoke run",
}


def _blocks(page: Path) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(page.read_text())]


def _relative(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@cache
def _snippets() -> dict[str, tuple[str, str]]:
    """NAME.yaml → (its text, the command its header gives), over all pages."""
    found = {}
    for page in PAGES:
        for lang, body in _blocks(page):
            if lang == "yaml":
                header = SNIPPET_HEADER.match(body.splitlines()[0])
                assert header, f"{_relative(page)}: a yaml snippet must start with '# NAME.yaml — COMMAND'"
                found[header["name"]] = (body, header["command"])
    return found


def _commands() -> list[tuple[str, str]]:
    """(page, command) for every shell command the pages give, deduplicated."""
    out: dict[str, str] = {}
    for page in PAGES:
        text = page.read_text()
        lines = [line for lang, body in _blocks(page) if lang == "bash" for line in body.splitlines()]
        lines += INLINE_SNAKEMAKE.findall(text)
        for line in lines:
            line = line.split(" #", 1)[0].strip()
            for part in (p.strip() for p in line.split("&&")):
                if part and not part.startswith(("#", "export ", "python3 -m venv", ".venv/bin/pip ")):
                    out.setdefault(part, _relative(page))
    for _, command in _snippets().values():
        out.setdefault(command, "a yaml snippet's header")
    return sorted((page, command) for command, page in out.items())


def _environment(words: list[str]) -> tuple[dict[str, str], list[str]]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-docs-test-not-a-key"}
    while words and re.match(r"^[A-Z_]+=", words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    return env, words


def _dry_run(command: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env, words = _environment(shlex.split(command))
    snippets = _snippets()
    for i, word in enumerate(words):
        if word in snippets:
            path = tmp_path / word
            path.write_text(snippets[word][0])
            words[i] = str(path)
    assert words[0] in ("snakemake", ".venv/bin/snakemake"), command
    words[0] = SNAKEMAKE
    return subprocess.run([*words, "--dry-run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _is_snakemake(command: str) -> bool:
    return Path(_environment(shlex.split(command))[1][0]).name == "snakemake"


SNAKEMAKE_COMMANDS = [(page, c) for page, c in _commands() if _is_snakemake(c)]
OTHER_COMMANDS = [(page, c) for page, c in _commands() if not _is_snakemake(c)]


@pytest.mark.slow
@pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed (pip install '.[workflow]')")
@pytest.mark.parametrize(("page", "command"), SNAKEMAKE_COMMANDS)
def test_snakemake_commands_and_config_snippets_dry_run(page, command, tmp_path):
    exempt = [why for flag, why in NOT_DRY_RUN.items() if flag in command.split()]
    if exempt:
        pytest.skip(exempt[0])
    proc = _dry_run(command, tmp_path)
    assert proc.returncode == 0, f"{page}: {command}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    # A config that puts only real models in the agent grid runs no simulated block.
    snippets = _snippets()
    used = [yaml.safe_load(snippets[word][0]) for word in shlex.split(command) if word in snippets]
    for config in used:
        grid = (config.get("agents") or {}).get("models")
        if grid and all(config.get("models", {}).get(m, {}).get("type") == "openai" for m in grid):
            assert "/sim-" not in proc.stdout, f"{page}: {command} plans simulated blocks"


@pytest.mark.parametrize(("page", "command"), OTHER_COMMANDS)
def test_other_commands_run(page, command):
    env, words = _environment(shlex.split(command))
    if words[:3] == [".venv/bin/python", "-m", "pytest"]:
        pytest.skip("the test command itself")
    assert words[0] == ".venv/bin/prefix-audit", f"{page}: a command the docs test does not know: {command}"
    proc = subprocess.run([sys.executable, "-m", "prefix_audit.cli", *words[1:]], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{page}: {command}\n{proc.stdout}{proc.stderr}"


def test_there_are_commands_and_snippets_to_test():
    assert len(SNAKEMAKE_COMMANDS) >= 6 and len(_snippets()) >= 4


def test_synopses_name_real_subcommands_and_options():
    from prefix_audit.cli import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    for page in PAGES:
        for lang, body in _blocks(page):
            for line in body.splitlines() if lang == "text" else ():
                words = line.split("#", 1)[0].split()
                if words[:1] != ["prefix-audit"] or words[1].endswith(":"):  # not a synopsis: a line it prints
                    continue
                sub = subparsers[words[1]]
                flags = {s for a in sub._actions for s in a.option_strings}
                for flag in re.findall(r"(?<![\w-])--?[a-z][\w-]*", " ".join(words[2:])):
                    assert flag in flags, f"{_relative(page)}: {words[1]} has no option {flag}"
                if words[1] == "import":
                    kinds = next(a for a in sub._actions if a.dest == "kind").choices
                    assert set(words[2].split("|")) <= set(kinds), f"{_relative(page)}: {line}"


def _names_imported_exist(tree: ast.Module, page: Path) -> None:
    """Every ``from prefix_audit… import name`` of a snippet names something that exists (read with
    importlib, nothing of the snippet is run)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prefix_audit"):
            module = importlib.import_module(node.module)
            missing = [a.name for a in node.names if not hasattr(module, a.name)]
            assert not missing, f"{_relative(page)}: {node.module} has no {missing}"


def test_code_blocks_parse():
    for page in PAGES:
        for lang, body in _blocks(page):
            if lang == "python":
                _names_imported_exist(ast.parse(body), page)
            elif lang == "toml":
                tomllib.loads(body)
            elif lang == "yaml":
                assert isinstance(yaml.safe_load(body), dict), _relative(page)


PIP_INSTALL = re.compile(r"pip install ([^`\n#]+)")
BUILT_FILE = re.compile(r"prefix_audit-([^\s/`'\[]+?)(?:-py3-none-any\.whl|\.tar\.gz)")


def test_install_commands_install_from_the_clone():
    """prefix-audit is not published on PyPI: an install names the clone's folder (``.``) or a file built in
    it (``dist/``), never the project by name (pip would look for it on PyPI), with extras pyproject.toml
    declares; a built file's name carries the project's version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for page in PAGES:
        text = page.read_text()
        for version in BUILT_FILE.findall(text):
            assert version == project["version"], f"{_relative(page)}: prefix_audit-{version}: the version is {project['version']}"
        for command in PIP_INSTALL.findall(text):
            for word in shlex.split(command):
                target, _, extras = word.partition("[")
                if word.startswith("-") or not (target in (".", "./") or target.startswith(("dist/", "prefix"))):
                    continue  # an option, or another package
                assert target in (".", "./") or target.startswith("dist/prefix_audit-"), \
                    f"{_relative(page)}: pip install {word} looks for prefix-audit on PyPI, where it is not published"
                unknown = set(filter(None, extras.rstrip("]").split(","))) - set(project["optional-dependencies"])
                assert not unknown, f"{_relative(page)}: pip install {word}: no extra {sorted(unknown)} in pyproject.toml"


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_relative_links_resolve():
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            assert resolved.exists(), f"{_relative(page)}: broken link {target}"
            if anchor and resolved.suffix == ".md":
                headings = {_slug(h) for h in re.findall(r"^#+ (.+)$", resolved.read_text(), re.MULTILINE)}
                assert anchor in headings, f"{_relative(page)}: no heading #{anchor} in {path or page.name}"


def _stated_defaults() -> dict[str, str]:
    rows = re.findall(r"^\| `([\w.<>]+)`[^|]*\| ([^|]+) \|", (ROOT / "config" / "README.md").read_text(), re.MULTILINE)
    return {key: default.strip() for key, default in rows}


def test_config_readme_states_the_codes_defaults():
    from dataclasses import MISSING, fields

    from prefix_audit.generation.agents.executor import K_EXEC
    from prefix_audit.generation.agents.methods import K_VAL
    from prefix_audit.generation.settings import (
        DEFAULT_API_KEY_ENV,
        EPISODES_IN_FLIGHT,
        REAL_EPISODES_IN_FLIGHT,
        BackendSettings,
        BlockSettings,
    )
    from prefix_audit.generation.sources.simulated import SimulatedProfile
    from prefix_audit.models.base import GenerationParams

    stated = _stated_defaults()
    block = {f.name: f.default for f in fields(BlockSettings)}
    backend = {f.name: f.default for f in fields(BackendSettings)}
    expected = {"agents.max_steps": K_EXEC, "agents.max_candidates": K_VAL,
                "agents.episodes_in_flight": f"{EPISODES_IN_FLIGHT} (simulated), {REAL_EPISODES_IN_FLIGHT} (real model)",
                "agents.seed": block["seed"],
                "sources.<name>.clean_fraction": block["clean_fraction"],
                "models.<label>.concurrency": backend["concurrency"],
                "models.<label>.api_key_env": f"`{DEFAULT_API_KEY_ENV}`",
                "models.<label>.reasoning": str(backend["reasoning"]).lower(),
                "models.<label>.extra_body": "{}"}
    for name in ("timeout_s", "max_retries", "backoff_base_s", "backoff_cap_s"):
        expected[f"models.<label>.{name}"] = backend[name]
    for f in fields(GenerationParams):
        if f.name in ("temperature", "top_p", "max_tokens"):
            expected[f"models.<label>.{f.name}"] = f.default
    for f in fields(SimulatedProfile):
        if f.name != "name":  # the rate maps default to empty ones
            expected[f"models.<label>.profile.{f.name}"] = "{}" if f.default is MISSING else f.default
    for key, value in expected.items():
        assert key in stated, f"config/README.md does not state the default of {key}"
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        same = float(stated[key]) == value if numeric else stated[key] == str(value)
        assert same, f"config/README.md: {key} defaults to {value}, not {stated[key]}"
