"""The real-model path against the fake OpenAI-compatible server of the tests: client overhead per
call, the per-endpoint ceiling across jobs and throughput.

Usage: python bench/real_endpoint.py [--calls 200] [--latency 0.5] [--concurrency 16] [--tasks 200]

1. Overhead: ``--calls`` sequential calls through OpenAICompatibleBackend to a server that answers
   after 50 ms; overhead = the call's time in ``complete()`` minus the server's own delay.
2. Across jobs: the README's command as written (``snakemake --cores 4 --configfile X``) on four
   ReAct blocks of ToolSandbox (``--tasks`` scenarios each, two calls per scenario) against a server
   answering after ``--latency`` seconds, with ``concurrency: C`` and the default episodes in flight;
   reports the most requests the server held at once and the calls per second between its first
   request and its last reply.
Prints one line per measurement and a JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_openai_server import FakeOpenAIServer, agent_responder  # noqa: E402

from prefix_audit.core.io import path_label  # noqa: E402
from prefix_audit.models import Message, ModelRequest, OpenAICompatibleBackend, ToolSchema  # noqa: E402

KEY_ENV = "PREFIX_AUDIT_BENCH_KEY"
TOOL = ToolSchema("search", "Search.", {"type": "object", "properties": {"q": {"type": "string"}}})


def overhead(calls: int, delay_s: float = 0.05) -> dict[str, float]:
    with FakeOpenAIServer(agent_responder("openai", delay_s=delay_s)) as server:
        backend = OpenAICompatibleBackend("bench-model", base_url=server.base_url, api_key_env=KEY_ENV)

        async def run() -> tuple[list[float], list[float]]:
            spent, recorded = [], []
            for i in range(calls):
                request = ModelRequest((Message("system", "You are an agent."), Message("user", f"task {i}")), (TOOL,))
                start = time.perf_counter()
                response = await backend.complete(request)
                spent.append(time.perf_counter() - start - delay_s)
                recorded.append(response.usage.latency_s - delay_s)
            await backend.aclose()
            return spent, recorded

        spent, recorded = asyncio.run(run())
    first, rest = spent[0], sorted(spent[1:])
    return {"first_call_ms": 1000 * first, "first_call_recorded_ms": 1000 * recorded[0],
            "median_ms": 1000 * statistics.median(rest), "p95_ms": 1000 * rest[int(0.95 * len(rest)) - 1],
            "max_ms": 1000 * rest[-1], "recorded_median_ms": 1000 * statistics.median(recorded[1:])}


def across_jobs(latency_s: float, concurrency: int, tasks: int) -> dict[str, float]:
    models = [f"bench/model-{i}" for i in range(4)]
    with tempfile.TemporaryDirectory() as tmp, \
            FakeOpenAIServer(agent_responder("openai", delay_s=latency_s)) as server:
        endpoint = {"type": "openai", "base_url": server.base_url, "api_key_env": KEY_ENV,
                    "concurrency": concurrency}
        config = {"results_dir": f"{tmp}/results", "datasets": ["toolsandbox"],
                  "benchmarks": {"toolsandbox": {"sample": {"n": tasks, "seed": 3}}},
                  "models": {m: {**endpoint, "model": m} for m in models},
                  "agents": {"models": models, "methods": ["react"], "verifier_conditions": None}}
        path = Path(tmp) / "bench.yaml"
        path.write_text(yaml.safe_dump(config))
        targets = [f"{tmp}/results/rollouts/toolsandbox/{path_label(m)}/react.jsonl" for m in models]
        start = time.perf_counter()
        run = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "--cores", "4", *targets,
                              "--configfile", str(path)], cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, KEY_ENV: "sk-bench"})
        wall = time.perf_counter() - start
        if run.returncode:
            sys.exit(run.stderr[-3000:])
        assert server.first_request_at is not None and server.last_reply_at is not None
        span = server.last_reply_at - server.first_request_at
        return {"calls": server.request_count, "max_in_flight": server.max_in_flight, "ceiling": concurrency,
                "calls_per_s": server.request_count / span, "span_s": span, "snakemake_wall_s": wall,
                "ideal_calls_per_s": concurrency / latency_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=200)
    args = parser.parse_args()
    os.environ[KEY_ENV] = "sk-bench"
    client = overhead(args.calls)
    print(f"client overhead per call over the server's own time ({args.calls} sequential calls): median "
          f"{client['median_ms']:.2f} ms, p95 {client['p95_ms']:.2f} ms, max {client['max_ms']:.2f} ms after the "
          f"first; the first {client['first_call_ms']:.0f} ms (client set-up), of which the recorded latency "
          f"counts {client['first_call_recorded_ms']:.1f} ms; recorded latency minus the server's time, median "
          f"{client['recorded_median_ms']:.2f} ms")
    jobs = across_jobs(args.latency, args.concurrency, args.tasks)
    print(f"across jobs: {jobs['calls']} calls, at most {jobs['max_in_flight']} in flight (ceiling "
          f"{jobs['ceiling']}), {jobs['calls_per_s']:.1f} calls/s over {jobs['span_s']:.1f} s "
          f"(ideal {jobs['ideal_calls_per_s']:.0f}); snakemake {jobs['snakemake_wall_s']:.1f} s")
    print(json.dumps({"overhead": client, "across_jobs": jobs, "python": platform.python_version(),
                      "machine": platform.machine()}, default=lambda x: round(x, 3)))


if __name__ == "__main__":
    main()
