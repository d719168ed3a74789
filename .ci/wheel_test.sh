#!/usr/bin/env bash
# Wheel check: build the sdist and, from it, the wheel (`python -m build`, as pip builds a package it
# gets as an sdist), install the wheel — not editable, its dependencies from PyPI — into a fresh
# virtualenv outside the repository, and from a folder outside the repository audit logs with the
# installed `prefix-audit` and build the audit browser of the result. A template, asset, data file or
# entry point the wheel lacks fails here rather than on a user's machine. The [inspect] extra is not
# installed (it adds about 75 s and 400 MB): its entry point is checked to name a module the wheel
# installed; the test suite runs the scorer itself.
#
# Logs: docs/examples' BFCL result file, and where ../shared/fixtures/real-logs exists a real BFCL
# result file and a real tau2 run (the τ import reads the packaged release fingerprints). The pinned
# benchmark packages come from the repository's resources/ (--resources), fetched there when absent,
# so the test suite reuses them.
#
# PYTHON selects the interpreter that has `build` (default .venv/bin/python, as .ci/run creates it with
# the dev extra); the fresh virtualenv is made by python3. PREFIX_AUDIT_WHEEL_KEEP=1 keeps the work
# directory after a pass too (it is kept after a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
REAL_LOGS=$ROOT/../shared/fixtures/real-logs
STEP_LIMIT=900  # seconds any one step may take (the longest, the install, took 27-51 s on 2 busy cores)
started=$SECONDS

fail() { echo "wheel test: FAILED: $*" >&2; exit 1; }
"$PYTHON" -m build --version >/dev/null 2>&1 \
  || fail "no 'build' for $PYTHON (pip install -e '.[dev]' installs it, or set PYTHON)"
git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || fail "$ROOT is not a git checkout (the source copied is what git tracks)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/prefix-audit-wheel.XXXXXX")
[[ $(realpath "$WORK") != "$(realpath "$ROOT")"/* ]] || fail "the work directory $WORK is inside the repository (set TMPDIR)"
mkdir -p "$WORK/log" "$WORK/run"
VENV=$WORK/venv
finish() {
  local rc=$?
  if ((rc == 0)) && [[ ${PREFIX_AUDIT_WHEEL_KEEP:-} != 1 ]]; then rm -rf "$WORK"; else echo "wheel test: work directory kept: $WORK" >&2; fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

phase_start=$SECONDS
timings=()
# $1: what the step does (the failure line names it), $2: its log's name; the rest: the command. On
# failure: the log's tail, then one line.
step() {
  local what=$1 name=$2 log=$WORK/log/$2.log rc=0
  shift 2
  timeout --kill-after=30 "$STEP_LIMIT" "$@" >"$log" 2>&1 || rc=$?
  if ((rc)); then
    tail -25 "$log" >&2
    ((rc != 124 && rc != 137)) || fail "$what: no result after ${STEP_LIMIT}s (log $log)"
    fail "$what: exit $rc (log $log)"
  fi
  timings+=("$name $((SECONDS - phase_start))s")
  phase_start=$SECONDS
}
# The prefix of the installed package's commands: no PYTHONPATH or user site-packages that could supply
# a module the wheel lacks, and a working directory outside the repository.
INSTALLED=(env -C "$WORK/run" -u PYTHONPATH -u PYTHONHOME PYTHONNOUSERSITE=1)

# --- sdist, then the wheel from it ------------------------------------------------------------------
# From a copy of the files git tracks or would track, not from the tree itself: there setuptools also
# includes every file of the src/prefix_audit.egg-info/SOURCES.txt an editable install left behind,
# which would hide package data that pyproject.toml no longer declares.
mkdir "$WORK/source"
comm -z -23 <(git ls-files -z --cached --others --exclude-standard | sort -zu) <(git ls-files -z --deleted | sort -zu) \
  | tar -C "$ROOT" --null -T - -cf - | tar -C "$WORK/source" -xf - \
  || fail "copying the working tree's files to $WORK/source failed"
step "building the sdist and the wheel from it" build "$PYTHON" -m build --outdir "$WORK/dist" "$WORK/source"
SDISTS=("$WORK"/dist/*.tar.gz)
WHEELS=("$WORK"/dist/*.whl)
((${#SDISTS[@]} == 1 && ${#WHEELS[@]} == 1)) || fail "the build made ${#SDISTS[@]} sdists and ${#WHEELS[@]} wheels, not one each"
WHEEL=${WHEELS[0]}
WHEEL_NAME=$(basename "$WHEEL")
VERSION=${WHEEL_NAME#prefix_audit-}
VERSION=${VERSION%%-*}

# --- a fresh virtualenv, the wheel installed ---------------------------------------------------------
step "creating the virtualenv" venv python3 -m venv "$VENV"
# --no-compile: no bytecode for every module of the dependencies, which pip would write at install and
# this script delete at the end (measured on a 2-core machine: install 104 -> 36 s, removal 47 -> 6 s);
# the modules the commands import are compiled when imported.
step "pip install of the wheel and its dependencies" install "$VENV/bin/pip" install --no-compile "$WHEEL"

# The package is the venv's, the version its metadata's, every entry point pyproject.toml declares is
# in the wheel's metadata and names a module installed there, and every file of the package's source
# that is not Python is installed beside its modules.
CHECK_INSTALLED=$(cat <<'EOF'
import importlib.metadata
import importlib.util
import sys
import tomllib
from pathlib import Path

import prefix_audit

source = Path(sys.argv[1])
venv = Path(sys.prefix).resolve()
package = Path(prefix_audit.__file__).resolve().parent
problems = []
if not package.is_relative_to(venv):
    problems.append(f"prefix_audit is imported from {package}, not from the virtualenv {venv}")
dist = importlib.metadata.distribution("prefix-audit")
if dist.version != prefix_audit.__version__:
    problems.append(f"the metadata says version {dist.version}, prefix_audit.__version__ {prefix_audit.__version__}")
project = tomllib.loads((source / "pyproject.toml").read_text())["project"]
declared = {("console_scripts", name, value) for name, value in project["scripts"].items()}
declared |= {(group, name, value) for group, points in project["entry-points"].items() for name, value in points.items()}
listed = {(ep.group, ep.name, ep.value) for ep in dist.entry_points}
for group, name, value in sorted(declared - listed):
    problems.append(f"entry point {name} = {value} of group {group} is not in the wheel's metadata")
for group, name, value in sorted(declared):
    module = value.split(":")[0]
    spec = importlib.util.find_spec(module)  # found, not imported: inspect_ai's needs the [inspect] extra
    if spec is None or spec.origin is None or not Path(spec.origin).resolve().is_relative_to(venv):
        problems.append(f"entry point {name} of group {group}: module {module} is not installed in the virtualenv")
source_package = source / "src" / "prefix_audit"
data = sorted(p.relative_to(source_package) for p in source_package.rglob("*")
              if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts)
problems += [f"package data missing from the wheel: {p}" for p in data if not (package / p).is_file()]
print("\n".join(problems) or f"installed in {venv}: {len(declared)} entry points, {len(data)} package data files")
sys.exit(1 if problems else 0)
EOF
)
step "checking the installed package" check "${INSTALLED[@]}" "$VENV/bin/python" -c "$CHECK_INSTALLED" "$WORK/source"
"${INSTALLED[@]}" "$VENV/bin/prefix-audit" --version >"$WORK/log/version.log" 2>&1 || fail "prefix-audit --version failed (log $WORK/log/version.log)"
[[ $(<"$WORK/log/version.log") == "$VERSION" ]] \
  || fail "prefix-audit --version says '$(<"$WORK/log/version.log")', the wheel $WHEEL_NAME is version $VERSION"

# --- audit the logs, build the browser -------------------------------------------------------------
LOGS=("$ROOT/docs/examples/BFCL_v4_multi_turn_base_result.json")
for real in bfcl/xLAM-2-8b-fc-r_BFCL_v3_multi_turn_base_result.json tau2/gemini-2.5-flash_airline_10tasks_2trials.json; do
  [[ ! -e $REAL_LOGS/$real ]] || LOGS+=("$REAL_LOGS/$real")
done
OUT=$WORK/run/out
SITE=$WORK/run/site
step "prefix-audit audit of ${#LOGS[@]} logs" audit "${INSTALLED[@]}" "$VENV/bin/prefix-audit" audit "${LOGS[@]}" -o "$OUT" --resources "$ROOT/resources"
step "prefix-audit view" view "${INSTALLED[@]}" "$VENV/bin/prefix-audit" view "$OUT" -o "$SITE"

for file in "$OUT"/{fed/episodes.parquet,stats/stats.parquet,tables/table_{G1,F1,trust}.{csv,md,tex}} \
            "$SITE"/{index.html,tables.html,assets/site.css,assets/site.js}; do
  [[ -s $file ]] || fail "missing or empty: ${file#"$WORK"/run/}"
done
# These logs read whole: an entry or a log the import or scoring set aside (the τ import without the
# packaged release fingerprints quarantines its log, and the audit goes on with the others) fails here.
while IFS= read -r -d '' quarantine; do
  [[ ! -s $quarantine ]] || fail "the audit quarantined: $(head -c 300 "$quarantine")"
done < <(find "$OUT" -name '*quarantine.jsonl' -print0)
# Task health ran each benchmark's own code on every audited task: a task it could not check (a module
# the installed dependencies lack, say) fails here, with the first reason the audit printed.
compgen -G "$OUT/health/*/summary.json" >/dev/null || fail "the audit wrote no task health (health/*/summary.json)"
unchecked=$("${INSTALLED[@]}" "$VENV/bin/python" -c '
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("health/*/summary.json")):
    for dataset, releases in json.loads(path.read_text()).items():
        for release, summary in releases.items():
            if failed := summary["check_failed"]:
                print(f"{dataset} {release}: {failed} tasks")
' "$OUT") || fail "the task health summaries under $OUT/health cannot be read"
[[ -z $unchecked ]] \
  || fail "task health could not check ${unchecked//$'\n'/, } ($(grep -m1 'check failed' "$WORK/log/audit.log" || true))"
# Every scored block has its page, and every rollout of the FED table its own.
blocks=0
while IFS= read -r -d '' episodes; do
  block=${episodes#"$OUT"/scored/}
  block=${block%/episodes.parquet}
  [[ -s $SITE/blocks/$block/index.html ]] || fail "the site has no page of block $block"
  blocks=$((blocks + 1))
done < <(find "$OUT/scored" -name episodes.parquet -print0)
rollouts=$("${INSTALLED[@]}" "$VENV/bin/python" -c 'import polars, sys; print(polars.read_parquet(sys.argv[1]).height)' "$OUT/fed/episodes.parquet") \
  || fail "the FED table $OUT/fed/episodes.parquet cannot be read"
pages=$(find "$SITE/blocks" -path '*/r/*.html' | wc -l)
((rollouts > 0 && blocks > 0)) || fail "the audit scored $rollouts rollouts in $blocks blocks"
((pages == rollouts)) || fail "the site has $pages rollout pages for the FED table's $rollouts rollouts"

echo "wheel test: passed — $WHEEL_NAME installed in a fresh virtualenv audited ${#LOGS[@]} logs" \
  "($rollouts rollouts in $blocks blocks) and built their browser, from $WORK/run (${timings[*]}; total $((SECONDS - started))s)"
