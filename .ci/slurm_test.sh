#!/usr/bin/env bash
# Cluster check: start a throwaway single-node Slurm on this machine, run the smoke grid
# (config/smoke.yaml) through sbatch via profiles/slurm, and require every output to equal a local
# run's byte for byte.
#
# Needs root and apt (it installs the Debian packages slurmctld slurmd slurm-client munge), so it
# runs only in CI (CI=true) or when asked to (PREFIX_AUDIT_SLURM_TEST=1); otherwise, and when
# PREFIX_AUDIT_SLURM_TEST=0, it prints why it is skipped and exits 0.
# Every daemon it starts (munged, slurmctld, slurmd) is its own foreground child with its own key,
# socket, ports and state under one temporary directory, so a munge already on the machine is left
# alone; all of them are stopped on exit, on failure and on interrupt too. The config goes to
# /etc/slurm/slurm.conf, Slurm's default path, because the executor plugin strips SLURM_CONF (like
# every SLURM_* variable) before its srun inside a job; the test skips if a Slurm config it did not
# write is there, and removes its own on exit.
#
# SNAKEMAKE selects the snakemake to use (default: .venv/bin/snakemake, as .ci/run creates it);
# PREFIX_AUDIT_SLURM_KEEP=1 keeps the work directory (logs, both runs' outputs) after a pass too.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SNAKEMAKE=${SNAKEMAKE:-$ROOT/.venv/bin/snakemake}
PACKAGES=(slurmctld slurmd slurm-client munge)

skip() { echo "slurm test skipped: $*"; exit 0; }
case "${PREFIX_AUDIT_SLURM_TEST:-}" in
  0) skip "PREFIX_AUDIT_SLURM_TEST=0" ;;
  1) ;;
  *) [[ "${CI:-}" == true ]] || skip "it installs system packages and starts daemons as root;" \
       "it runs in CI (CI=true) or with PREFIX_AUDIT_SLURM_TEST=1" ;;
esac
[[ $(id -u) == 0 ]] || skip "needs root (it installs packages and runs slurmd)"
command -v apt-get >/dev/null && command -v dpkg >/dev/null || skip "needs apt-get and dpkg (Debian/Ubuntu)"
SLURM_CONF_PATH=/etc/slurm/slurm.conf
CONF_MARKER="# written by prefix-audit .ci/slurm_test.sh"
if [[ -e $SLURM_CONF_PATH ]]; then
  # A config of an earlier run of this test that was killed before it could clean up is stale once
  # none of that run's daemons is left; anything else belongs to a real Slurm on this machine.
  stale_work=$(sed -n "s|^$CONF_MARKER, work directory ||p" "$SLURM_CONF_PATH")
  [[ -n $stale_work ]] && ! pgrep -f "$stale_work" >/dev/null \
    || skip "$SLURM_CONF_PATH exists: this machine has a Slurm configured, which this test leaves alone"
fi
[[ -x $SNAKEMAKE ]] || { echo "slurm test: no snakemake at $SNAKEMAKE (pip install -e '.[workflow]', or set SNAKEMAKE)" >&2; exit 1; }

started=$SECONDS
phase_start=$SECONDS
timings=()
phase_done() { timings+=("$1 $((SECONDS - phase_start))s"); phase_start=$SECONDS; }

# --- work directory, and stopping everything on exit ---------------------------------------------
WORK=$(mktemp -d /tmp/prefix-audit-slurm.XXXXXX)
chmod 755 "$WORK"  # munged requires its socket directory to be searchable by everyone
mkdir -p "$WORK/munge" "$WORK/log" "$WORK/state" "$WORK/spool"
STEPDS_BEFORE=$(pgrep -x slurmstepd || true)
DAEMON_PIDS=()  # in start order; stopped in reverse
POLICY=/usr/sbin/policy-rc.d
own_policy=""   # set while a policy-rc.d this script wrote is in place
CHILD=""        # the snakemake run under way
# The two snakemake runs: at most 15 minutes each, in the background and waited for, so that a
# signal to this script is handled at once (bash defers traps while a foreground command runs).
# timeout restores SIGINT, which bash ignores in background commands, and passes it on.
run() { timeout --signal=INT --kill-after=60 900 "$@" & CHILD=$!; wait "$CHILD"; }
exec 3>&1 4>&2  # this script's own output, for the exit trap that may run inside a redirected run
stop_cluster() {
  local rc=$? pid left
  set +e
  exec 1>&3 2>&4
  if [[ -n $CHILD ]] && kill -0 "$CHILD" 2>/dev/null; then  # interrupted: snakemake cancels its jobs on SIGINT
    kill -INT "$CHILD"
    for _ in $(seq 120); do kill -0 "$CHILD" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$CHILD" 2>/dev/null
  fi
  if ((${#DAEMON_PIDS[@]} > 1)); then  # slurmctld is up: cancel whatever this run left queued
    scancel --quiet --user=root
    for _ in $(seq 40); do [[ -z $(squeue -h -t pending,running,completing 2>/dev/null) ]] && break; sleep 0.5; done
  fi
  for ((i = ${#DAEMON_PIDS[@]} - 1; i >= 0; i--)); do
    pid=${DAEMON_PIDS[i]}
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  [[ -z $own_policy ]] || rm -f "$POLICY"
  grep -qxF "$CONF_MARKER, work directory $WORK" "$SLURM_CONF_PATH" 2>/dev/null && rm -f "$SLURM_CONF_PATH"
  left=$(pgrep -a -f "$WORK" ; comm -13 <(echo "$STEPDS_BEFORE" | sort) <(pgrep -x slurmstepd | sort) | grep .)
  if [[ -n $left ]]; then
    echo "slurm test: processes left running:" >&2
    echo "$left" >&2
    rc=1
  fi
  if ((rc == 0)) && [[ ${PREFIX_AUDIT_SLURM_KEEP:-} != 1 ]]; then rm -rf "$WORK"; else echo "slurm test: logs kept in $WORK" >&2; fi
  exit "$rc"
}
trap stop_cluster EXIT
trap 'exit 130' INT TERM

# --- packages -----------------------------------------------------------------------------------
if ! dpkg -s "${PACKAGES[@]}" >/dev/null 2>&1; then
  apt-get update -qq || skip "apt-get update failed (no package repository reachable)"
  apt-cache policy slurmctld | grep 'Candidate: [0-9]' >/dev/null || skip "no slurmctld package in the reachable apt sources"
  # Keep the packages' maintainer scripts from starting system-wide daemons: Debian's invoke-rc.d
  # and deb-systemd-invoke ask policy-rc.d, and 101 means "not allowed".
  if [[ ! -e $POLICY ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$POLICY" && chmod 755 "$POLICY"
    own_policy=1
  fi
  install_rc=0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" \
    >"$WORK/log/apt.log" 2>&1 || install_rc=$?
  [[ -z $own_policy ]] || rm -f "$POLICY"
  own_policy=""
  if ((install_rc)); then
    tail -20 "$WORK/log/apt.log" >&2
    echo "slurm test: apt-get install ${PACKAGES[*]} failed" >&2
    exit 1
  fi
fi
phase_done install

# --- the local reference run --------------------------------------------------------------------
overrides() {  # $1: run name -> a config file pointing results_dir at $WORK/$1
  printf 'results_dir: %s/%s\nresources_dir: %s/resources\n' "$WORK" "$1" "$ROOT" >"$WORK/$1.yaml"
  echo "$WORK/$1.yaml"
}
echo "slurm test: local reference run of the smoke grid (log: $WORK/log/local.log)"
run "$SNAKEMAKE" --cores 2 --configfile config/smoke.yaml "$(overrides local)" >"$WORK/log/local.log" 2>&1 \
  || { tail -40 "$WORK/log/local.log" >&2; echo "slurm test: the local run failed" >&2; exit 1; }
phase_done local-run

# --- the cluster ------------------------------------------------------------------------------------
wait_for() {  # $1: seconds, $2: what, rest: a command that succeeds once ready
  local deadline=$((SECONDS + $1)) limit=$1 what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { echo "slurm test: $what not ready after ${limit}s" >&2; return 1; }
    sleep 0.2
  done
}

dd if=/dev/urandom of="$WORK/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$WORK/munge/munge.key"
munged --foreground --socket="$WORK/munge/munge.socket" --key-file="$WORK/munge/munge.key" \
  --pid-file="$WORK/munge/munged.pid" --seed-file="$WORK/munge/munged.seed" \
  >"$WORK/log/munged.log" 2>&1 &
DAEMON_PIDS+=($!)
wait_for 10 munged test -S "$WORK/munge/munge.socket"

# Two free TCP ports, so a Slurm already installed on the machine keeps its own.
read -r CTLD_PORT SLURMD_PORT < <(python3 -c '
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))')
NODE_LINE=$(slurmd -C | head -1)  # NodeName=<host> CPUs=... RealMemory=... as slurmd detects them
NODE=$(sed -E 's/^NodeName=([^ ]+).*/\1/' <<<"$NODE_LINE")
CPUS=$(sed -E 's/.* CPUs=([0-9]+).*/\1/' <<<"$NODE_LINE")
mkdir -p "$(dirname "$SLURM_CONF_PATH")"
cat >"$SLURM_CONF_PATH" <<EOF
$CONF_MARKER, work directory $WORK
ClusterName=prefixaudit
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$WORK/munge/munge.socket
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
# No cgroups in containers; no accounting (no slurmdbd), hence slurm-status-command: squeue.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
# squeue reports finished jobs for MinJobAge seconds: the executor plugin's status checks need
# them, and so does the count of completed jobs below, for as long as the whole run takes.
MinJobAge=3600
KillWait=5
InactiveLimit=0
MailProg=/bin/true
$NODE_LINE NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -f "$SLURM_CONF_PATH" >"$WORK/log/slurmctld.out" 2>&1 &
DAEMON_PIDS+=($!)
slurmd -D -f "$SLURM_CONF_PATH" -N "$NODE" >"$WORK/log/slurmd.out" 2>&1 &
DAEMON_PIDS+=($!)
node_idle() { [[ $(sinfo -h -N -n "$NODE" -o %T) == idle ]]; }
wait_for 60 "the Slurm node" node_idle
phase_done slurm-up

# --- the smoke grid through sbatch -------------------------------------------------------------------
echo "slurm test: smoke grid through sbatch on node $NODE ($CPUS CPUs) (log: $WORK/log/cluster.log)"
# The first status check after 2 s instead of the plugin's 40 s: a test run of short jobs.
cluster_rc=0
run "$SNAKEMAKE" --profile profiles/slurm \
  --configfile config/smoke.yaml "$(overrides cluster)" \
  --slurm-logdir "$WORK/slurm-logs" --slurm-init-seconds-before-status-checks 2 --max-threads "$CPUS" \
  >"$WORK/log/cluster.log" 2>&1 || cluster_rc=$?
if ((cluster_rc)); then
  tail -60 "$WORK/log/cluster.log" >&2
  echo "slurm test: the run through Slurm failed (exit $cluster_rc)" >&2
  exit 1
fi
phase_done cluster-run

# --- the same bytes --------------------------------------------------------------------------------------
submitted=$(grep -c 'submitted with SLURM jobid' "$WORK/log/cluster.log" || true)
completed=$(squeue -h -t all -o '%T' | grep -c '^COMPLETED$' || true)
if ((submitted == 0 || completed != submitted)); then
  echo "slurm test: $submitted jobs submitted, $completed completed according to squeue" >&2
  exit 1
fi
for rel in fed/episodes.parquet stats/stats.parquet stats/paired.parquet \
           tables/table_{G1,F1,F2,F3}.{csv,md,tex} figures/{curves,categories}/index.json; do
  [[ -s $WORK/cluster/$rel ]] || { echo "slurm test: missing output $rel" >&2; exit 1; }
done
# Everything but logs and timings: tasks, rollouts, scored blocks, FED table, stats, tables, figures.
if ! diff -r -q -x logs -x benchmarks -x '.*' "$WORK/local" "$WORK/cluster"; then
  echo "slurm test: the outputs of the Slurm run differ from the local run's" >&2
  exit 1
fi
compared=$(cd "$WORK/cluster" && find . -type f -not -path './logs/*' -not -path './benchmarks/*' -not -name '.*' | wc -l)
phase_done compare

# --- a real-model grid through sbatch: one ceiling per endpoint across cluster jobs ------------------
# Four ToolSandbox blocks of two models on one fake OpenAI-compatible endpoint (tests/fake_openai_server.py,
# answering after 0.3 s without usage) with concurrency 2 and one episode in flight per job: the
# submitting Snakemake may run two of the jobs at once, and the endpoint must never hold more than 2.
echo "slurm test: real-model grid through sbatch against a fake endpoint (log: $WORK/log/real.log)"
PYTHON=$(dirname "$SNAKEMAKE")/python
"$PYTHON" tests/fake_openai_server.py --shape ollama --delay 0.3 --url-file "$WORK/fake.url" \
  --stats-file "$WORK/fake.json" >"$WORK/log/fake.log" 2>&1 &
FAKE_PID=$!
DAEMON_PIDS+=("$FAKE_PID")
wait_for 20 "the fake endpoint" test -s "$WORK/fake.url"
FAKE_URL=$(cat "$WORK/fake.url")
{
  echo "results_dir: $WORK/real"
  echo "resources_dir: $ROOT/resources"
  echo "datasets: [toolsandbox]"
  echo "benchmarks: {toolsandbox: {sample: {n: 3, seed: 2}}}"
  echo "models:"
  for model in org/model-a model:b; do
    echo "  \"$model\": {type: openai, model: \"$model\", base_url: \"$FAKE_URL\", api_key_env: PREFIX_AUDIT_FAKE_KEY, concurrency: 2}"
  done
  echo "agents: {models: [org/model-a, \"model:b\"], methods: [react, plan_conditioned], episodes_in_flight: 1}"
} >"$WORK/real.yaml"
targets=()
for model in org+2Fmodel-a model+3Ab; do
  for method in react plan_conditioned; do targets+=("$WORK/real/rollouts/toolsandbox/$model/$method.jsonl"); done
done
real_rc=0
PREFIX_AUDIT_FAKE_KEY=sk-fake run "$SNAKEMAKE" --profile profiles/slurm "${targets[@]}" --configfile "$WORK/real.yaml" \
  --slurm-logdir "$WORK/slurm-logs-real" --slurm-init-seconds-before-status-checks 2 \
  >"$WORK/log/real.log" 2>&1 || real_rc=$?
kill -TERM "$FAKE_PID"
wait "$FAKE_PID" || true
if ((real_rc)); then
  tail -60 "$WORK/log/real.log" >&2
  echo "slurm test: the real-model run through Slurm failed (exit $real_rc)" >&2
  exit 1
fi
for target in "${targets[@]}"; do
  [[ -s $target && $(wc -l <"$target") == 3 ]] || { echo "slurm test: $target does not hold 3 rollouts" >&2; exit 1; }
done
read -r fake_requests fake_max < <("$PYTHON" -c 'import json, sys; s = json.load(open(sys.argv[1])); print(s["requests"], s["max_in_flight"])' "$WORK/fake.json")
if ((fake_max > 2 || fake_requests == 0)); then
  echo "slurm test: the fake endpoint held $fake_max requests at once (ceiling 2) over $fake_requests requests" >&2
  exit 1
fi
phase_done real-model-run
echo "slurm test: passed — $submitted jobs ran through sbatch, $compared output files equal the local run's;" \
  "a real-model grid of 4 blocks made $fake_requests requests with at most $fake_max in flight (ceiling 2)" \
  "(${timings[*]}; total $((SECONDS - started))s)"
