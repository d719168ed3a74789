"""How τ-bench v1's databases differ from the tau2 databases that ``tau_v1_*`` replays on.

Usage: python bench/tau_v1_db.py TAU_BENCH_CHECKOUT [--resources resources]

TAU_BENCH_CHECKOUT is a checkout of github.com/sierra-research/tau-bench (it reads
``tau_bench/envs/<domain>/data/<table>.json``; nothing of it is copied anywhere). Per domain and
table it prints how many records each side has, how many are equal as parsed JSON values
(``==``: an int equals the float of the same value), how many are equal once the fields only tau2
has are left out, and, for the rest, the record ids and the fields that differ. The fields printed are what
``prefix_audit.benchmarks.tau.domain.v1.V1_RECORD_VALUES`` sets to v1's values when a v1 log is replayed.
A JSON summary closes the output.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from prefix_audit.benchmarks.tau import load_data

TABLES = {"airline": ("flights", "reservations", "users"), "retail": ("orders", "products", "users")}


def _type_changes(a: Any, b: Any, path: str, out: set[str]) -> None:
    """Paths where equal values have different JSON types (v1 int, tau2 float)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() & b.keys():
            _type_changes(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b):
            _type_changes(x, y, f"{path}[]", out)
    elif a == b and type(a) is not type(b):
        out.add(f"{path}: {type(a).__name__}→{type(b).__name__}")


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k}: only in {'v1' if k in a else 'tau2'}" for k in sorted(a.keys() ^ b.keys())]
        for k in sorted(a.keys() & b.keys()):
            out += _differences(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: v1 {json.dumps(a)[:80]} vs tau2 {json.dumps(b)[:80]}"]


def compare(v1_table: dict[str, Any], tau2_table: dict[str, Any]) -> dict[str, Any]:
    shared = sorted(v1_table.keys() & tau2_table.keys())
    tau2_only_fields = sorted({k for r in tau2_table.values() for k in r} - {k for r in v1_table.values() for k in r})
    equal = [k for k in shared if v1_table[k] == tau2_table[k]]
    equal_without = [k for k in shared
                     if v1_table[k] == {f: v for f, v in tau2_table[k].items() if f not in tau2_only_fields}]
    types: set[str] = set()
    for k in shared:
        _type_changes(v1_table[k], tau2_table[k], "", types)
    differing = {k: _differences(v1_table[k], {f: v for f, v in tau2_table[k].items() if f not in tau2_only_fields})
                 for k in shared if k not in equal_without}
    return {"v1_records": len(v1_table), "tau2_records": len(tau2_table), "shared_ids": len(shared),
            "equal": len(equal), "equal_without_tau2_only_fields": len(equal_without),
            "tau2_only_fields": tau2_only_fields, "type_changes": sorted(types),
            "only_v1": sorted(v1_table.keys() - tau2_table.keys()),
            "only_tau2": sorted(tau2_table.keys() - v1_table.keys()), "differing": differing}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--resources", default="resources")
    args = parser.parse_args()
    data = load_data(args.resources, fetch=False)
    summary: dict[str, Any] = {}
    for domain, tables in TABLES.items():
        tau2_db = data.domains[domain].raw_db
        for table in tables:
            v1 = json.loads((args.checkout / "tau_bench" / "envs" / domain / "data" / f"{table}.json").read_text())
            row = compare(v1, tau2_db[table])
            summary[f"{domain}.{table}"] = {k: v for k, v in row.items() if k not in ("differing", "type_changes")} | {
                "differing_ids": sorted(row["differing"]), "type_changes": len(row["type_changes"])}
            print(f"{domain}.{table}: v1 {row['v1_records']}, tau2 {row['tau2_records']}, equal {row['equal']}, "
                  f"equal without tau2-only fields {row['equal_without_tau2_only_fields']} "
                  f"(tau2-only fields: {row['tau2_only_fields'] or 'none'})")
            if row["type_changes"]:
                print(f"  {len(row['type_changes'])} values equal but of another JSON type, e.g. "
                      + "; ".join(row["type_changes"][:2]))
            for key, diffs in row["differing"].items():
                print(f"  differs: {key}: " + "; ".join(diffs[:6]))
    print(json.dumps(summary, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
