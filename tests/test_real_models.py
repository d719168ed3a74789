"""Real models in the workflow: config merging, model names, the per-endpoint ceiling across jobs,
faults that a run survives, and `prefix-audit progress` — against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fake_openai_server import FakeOpenAIServer, agent_responder, error

from prefix_audit.core.io import name_of_label, path_label
from prefix_audit.generation.grid import (
    blocks,
    endpoint_ceilings,
    endpoint_shares,
    replace_whole_keys,
    selected_datasets,
    unused_condition_models,
)
from prefix_audit.generation.progress import block_progress
from prefix_audit.generation.rollouts import generate_rollouts
from prefix_audit.models.endpoints import Endpoint
from prefix_audit.replay import registry

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = shutil.which("snakemake", path=str(Path(sys.executable).parent)) or shutil.which("snakemake")
KEY_ENV = "PREFIX_AUDIT_FAKE_KEY"


@pytest.fixture()
def default() -> dict:
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def merged(*layers: dict) -> dict:
    """What Snakemake does with config files (nested mappings merge key by key), then our rule."""
    from snakemake.utils import update_config

    out: dict = {}
    for layer in layers:
        update_config(out, json.loads(json.dumps(layer)))
    replace_whole_keys(out, layers)
    return out


@pytest.mark.parametrize(("name", "label"), [
    ("sim-medium", "sim-medium"), ("gpt-4.1", "gpt-4.1"),
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama+2FLlama-3.1-8B-Instruct"),
    ("ft:gpt-4.1:org:x", "ft+3Agpt-4.1+3Aorg+3Ax"), ("50%", "50+25"), ("a+b", "a+2Bb"),
])
def test_model_names_become_one_path_component(name, label):
    # No "/" (a nested folder) and no "%" (a Slurm filename pattern in the executor's log paths).
    assert path_label(name) == label and "/" not in label and "%" not in label
    assert name_of_label(label) == name


def test_a_users_verifier_conditions_replace_the_defaults_whole(default):
    conditions = {"models": ["gpt-4.1"], "conditions": {"accept": {"verifier": "accept"}}}
    user = {"models": {"gpt-4.1": {"type": "openai", "model": "gpt-4.1"}},
            "agents": {"models": ["gpt-4.1"], "verifier_conditions": conditions}}
    config = merged(default, user)
    assert config["agents"]["verifier_conditions"] == user["agents"]["verifier_conditions"]
    models = {model for model, _ in blocks(config)}
    assert models == {"gpt-4.1", "reference", "mutator"}  # no simulated verifier came along
    assert ("gpt-4.1", "dual_loop.accept") in blocks(config)
    # Key-by-key merging would have kept the default's simulated swapped verifier.
    from snakemake.utils import update_config

    naive = json.loads(json.dumps(default))
    update_config(naive, json.loads(json.dumps(user)))
    assert "verifier-sim-weak" in naive["agents"]["verifier_conditions"]["conditions"]


def test_conditions_on_a_model_outside_the_grid_do_not_run(default):
    config = merged(default, {"models": {"gpt-4.1": {"type": "openai", "model": "gpt-4.1"}},
                              "agents": {"models": ["gpt-4.1"]}})
    assert unused_condition_models(config) == ["sim-medium"]
    assert {model for model, _ in blocks(config)} == {"gpt-4.1", "reference", "mutator"}
    # The smoke grid keeps the default's conditions: its model is in the grid.
    smoke = merged(default, yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text()))
    assert ("sim-medium", "dual_loop.verifier-sim-weak") in blocks(smoke) and not unused_condition_models(smoke)
    assert merged(default, {"agents": {"verifier_conditions": None}})["agents"]["verifier_conditions"] is None


def test_datasets_selects_the_benchmarks_that_run(default):
    assert selected_datasets(default) == sorted(default["datasets"]) == sorted(set(default["benchmarks"]) - {"tau_telecom"})
    assert selected_datasets({k: v for k, v in default.items() if k != "datasets"}) == sorted(default["benchmarks"])
    assert selected_datasets({**default, "datasets": ["tau_retail"]}) == ["tau_retail"]
    with pytest.raises(ValueError, match="bfcl_v4 not configured under benchmarks"):
        selected_datasets({**default, "datasets": ["bfcl_v4"]})


def test_one_ceiling_per_endpoint_with_each_jobs_share(default):
    registry.load([])
    vllm = {"type": "openai", "base_url": "http://gpu:8000/v1/", "api_key_env": "VLLM_KEY"}
    config = merged(default, {
        "datasets": ["tau_airline"],
        "benchmarks": {"tau_airline": {"user_simulator": {"type": "openai", "model": "gpt-4.1"}}},
        "models": {"llama": {**vllm, "model": "llama", "concurrency": 12},
                   "qwen": {**vllm, "model": "qwen", "concurrency": 6},
                   "gpt-4.1": {"type": "openai", "model": "gpt-4.1", "concurrency": 4}},
        "agents": {"models": ["llama", "qwen"], "methods": ["react"], "verifier_conditions": None}})
    ceilings = endpoint_ceilings(config)
    gpu, openai = Endpoint.of("http://gpu:8000/v1", "VLLM_KEY"), Endpoint.of(None, None)
    # Two models under one base URL and key share the smaller ceiling; the user simulator's
    # endpoint counts too (16: the default ceiling).
    assert ceilings == {gpu: 6, openai: 16} or ceilings == {openai: 16, gpu: 6}
    grid = blocks(config)
    shares = endpoint_shares(config, "tau_airline", grid[("llama", "react")], ceilings)
    assert shares == {gpu.resource: 6, openai.resource: 8}  # 8 episodes in flight by default for real models
    reference = endpoint_shares(config, "tau_airline", grid[("reference", "reference")], ceilings)
    assert reference == {gpu.resource: 0, openai.resource: 0}


def _snakemake(config: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([SNAKEMAKE, "--configfile", str(config), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, env={**os.environ, **(env or {})})


def _real_config(tmp_path: Path, base_url: str, **agents) -> Path:
    fake = {"type": "openai", "base_url": base_url, "api_key_env": KEY_ENV, "concurrency": 2,
            "backoff_base_s": 0.01, "backoff_cap_s": 1.0, "timeout_s": 20}
    config = {
        "results_dir": str(tmp_path / "results"),
        "datasets": ["toolsandbox"],
        "benchmarks": {"toolsandbox": {"sample": {"n": 3, "seed": 2}}},
        "models": {"org/model-a": {**fake, "model": "org/model-a"}, "model:b": {**fake, "model": "model:b"}},
        "agents": {"models": ["org/model-a", "model:b"], "methods": ["react", "plan_conditioned"],
                   "episodes_in_flight": 1, **agents},
    }
    path = tmp_path / "real.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed (pip install '.[workflow]')")
def test_a_real_model_config_plans_only_its_blocks_and_names_the_endpoint(tmp_path):
    config = _real_config(tmp_path, "http://127.0.0.1:9/v1")
    dry = _snakemake(config, "--dry-run")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "sim-" not in dry.stdout and "bfcl_v3" not in dry.stdout
    assert "rollouts/toolsandbox/org+2Fmodel-a/react.jsonl" in dry.stdout
    assert "rollouts/toolsandbox/model+3Ab/plan_conditioned.jsonl" in dry.stdout
    resource = Endpoint.of("http://127.0.0.1:9/v1", KEY_ENV).resource
    assert (f"endpoint http://127.0.0.1:9/v1 (key in ${KEY_ENV}): at most 2 requests in flight across all jobs "
            f"(resource {resource})") in dry.stderr
    assert "sim-medium is not in agents.models" in dry.stderr


@pytest.mark.slow
@pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed (pip install '.[workflow]')")
def test_the_ceiling_holds_across_jobs_and_the_run_survives_faults(tmp_path):
    # Every 5th request is refused (429 with Retry-After, or a 500); every reply takes 0.2 s. With a
    # ceiling of 2 and one episode in flight per job, two of the four blocks run at once — and
    # never more than 2 requests are in flight, whatever --cores allows.
    faults = {n: error(429, retry_after="0.2") if n % 10 == 5 else error(500) for n in range(5, 400, 5)}
    with FakeOpenAIServer(agent_responder("ollama", delay_s=0.2, faults=faults)) as server:
        config = _real_config(tmp_path, server.base_url)
        results = tmp_path / "results"
        targets = [str(results / "rollouts" / "toolsandbox" / path_label(m) / f"{method}.jsonl")
                   for m in ("org/model-a", "model:b") for method in ("react", "plan_conditioned")]
        run = _snakemake(config, "--cores", "4", *targets, env={KEY_ENV: "sk-fake"})
        assert run.returncode == 0, run.stderr[-4000:]
        assert server.max_in_flight == 2, server.max_in_flight
    records = [json.loads(line) for target in targets for line in Path(target).read_text().splitlines()]
    assert len(records) == 4 * 3 and {r["model"] for r in records} == {"org/model-a", "model:b"}
    calls = [u for r in records for u in r["usage"]]
    assert all(u["estimated"] and u["params"]["temperature"] == 0.0 for u in calls)  # no usage sent
    retried = [u for u in calls if u["attempts"] > 1]
    assert retried and all(u["wall_s"] >= u["latency_s"] + sum(r["wait_s"] for r in u["retries"]) for u in retried)
    assert {r["error"] for u in retried for r in u["retries"]} <= {"429 RateLimitError", "500 InternalServerError"}
    progress = {p.block: p for p in block_progress(results)}
    assert progress["toolsandbox/org/model-a/react"].done == 3 and progress["toolsandbox/org/model-a/react"].finished


def _doc_snippets() -> dict[str, dict]:
    text = (ROOT / "docs" / "real-models.md").read_text()
    out = {}
    for body in re.findall(r"^```yaml\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        name = re.match(r"# ([\w.-]+\.yaml) — ", body).group(1)
        out[name] = yaml.safe_load(body)
    return out


@pytest.mark.parametrize(("snippet", "shape"), [("openai.yaml", "openai"), ("vllm.yaml", "vllm"),
                                                ("ollama.yaml", "ollama")])
def test_the_documented_configs_work_against_their_servers_shapes(default, snippet, shape, tmp_path, monkeypatch):
    """Each config of docs/real-models.md, merged over the default as the docs run it, with only
    base_url pointed at the fake server answering in that server's shape: its first block generates
    a rollout whose calls record what was sent and whether tokens were estimated."""
    config = merged(default, _doc_snippets()[snippet])
    model = config["agents"]["models"][0]
    entry = config["models"][model]
    assert {m for m, _ in blocks(config)} == {model, "reference", "mutator"}  # nothing simulated
    settings = json.loads(json.dumps(blocks(config)[(model, config["agents"]["methods"][0])]))
    monkeypatch.setenv(entry.get("api_key_env", "OPENAI_API_KEY"), "sk-fake")
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps({"task_ids": ["add_contact_05"]}))
    with FakeOpenAIServer(agent_responder(shape)) as server:
        settings["backend"]["base_url"] = server.base_url
        out = tmp_path / "rollouts.jsonl"
        assert generate_rollouts("toolsandbox", tasks, model, settings["method"], settings, ROOT / "resources",
                                 out, tmp_path / "cache") == 1
        sent = server.received[0].body
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["model"] == model and sent["model"] == entry["model"]
    calls = record["usage"]
    assert all(c["estimated"] is (shape == "ollama") for c in calls)
    assert all(c["params"] == calls[0]["params"] for c in calls)
    assert {k: sent[k] for k in calls[0]["params"]} == calls[0]["params"]  # the record is what went out
    assert sent["temperature"] == 0.0 and sent["max_tokens"] == 4000
    for key, value in entry.get("extra_body", {}).items():
        assert sent[key] == value
