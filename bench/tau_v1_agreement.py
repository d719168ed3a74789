"""How well the replay reproduces τ-bench v1 runs: recomputed Y against the recorded reward, and the
replay's accept/reject of every call against the recorded reply (``Error…``/``Unknown action…``).

Usage: python bench/tau_v1_agreement.py V1_RESULTS.json [...] [--resources resources] [--tau-v1-domain D]

Per file: entries imported and quarantined, Y = recorded reward on how many rollouts, calls whose
accept/reject matches the record, and every disagreement (task, trial, rollout id, recorded reward,
Y, y_detail, and the calls judged differently). Rollout ids are those of ``prefix-audit import tau``
with its defaults (model = the file's stem, method ``imported``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prefix_audit.benchmarks.tau.ingest.importer import import_results
from prefix_audit.core.records import BadLine
from prefix_audit.replay import registry
from prefix_audit.replay.checker import replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--resources", default="resources")
    parser.add_argument("--tau-v1-domain", default=None)
    args = parser.parse_args()
    resolve = registry.resolver(args.resources, fetch=False)
    for path in args.files:
        items = list(import_results(path, resolve, v1_domain=args.tau_v1_domain))
        bad = [i for i in items if isinstance(i, BadLine)]
        rollouts = [i.rollout for i in items if not isinstance(i, BadLine)]
        agree = calls = calls_agree = infra = 0
        lines = []
        for r in rollouts:
            if r.infra_error is not None:
                infra += 1
                y = resolve(r.dataset).open_session(r).final_success()
                agree += y == r.meta["recorded_reward"]
                continue
            ep = replay(r, resolve(r.dataset))
            recorded = set(r.meta["recorded_error_calls"]) | set(r.meta["recorded_unknown_action_calls"])
            differing = []
            for v in ep.verdicts:
                if v.action.call is None:
                    continue
                calls += 1
                if (v.accepted is False) == (v.action.index in recorded):
                    calls_agree += 1
                else:
                    differing.append(f"#{v.action.index} {v.action.call.name} "
                                     f"{'rejected by the replay' if v.accepted is False else 'rejected in v1'}: "
                                     f"{(v.result or '')[:70]}")
            if ep.Y == r.meta["recorded_reward"]:
                agree += 1
            else:
                lines.append(f"  Y differs: task {r.task_id} trial {r.trial} rollout {r.rollout_id}: recorded "
                             f"{r.meta['recorded_reward']}, Y {ep.Y} ({ep.y_detail})")
            lines += [f"  call differs: task {r.task_id} trial {r.trial}: {d}" for d in differing]
        dataset = rollouts[0].dataset if rollouts else "-"
        print(f"{path.name} ({dataset}): {len(rollouts)} imported ({infra} infra_error), {len(bad)} quarantined; "
              f"Y = recorded reward on {agree}/{len(rollouts)}; accept/reject as recorded on "
              f"{calls_agree}/{calls} calls")
        print("\n".join(lines + [f"  quarantined: {b.line}: {b.reason}" for b in bad]))


if __name__ == "__main__":
    main()
