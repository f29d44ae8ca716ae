#!/usr/bin/env bash
# Slurm, run: starts a one-node Slurm cluster on this machine (Debian's munge, slurmctld,
# slurmd; a munge key and a minimal slurm.conf in a temp dir; proctrack/linuxproc,
# task/none, no cgroups), submits deploy/slurm/hgeval-fleet.sbatch in its CPU variant (two
# CPU servers sharing a PostgreSQL the script starts, the bundled HGRN2 test model, three
# tasks with --limit), waits for it with squeue and scontrol, and checks that its results
# file equals a single server's run on SQLite. Exits 77 (ctest SKIP) with the reason where
# Slurm or PostgreSQL cannot start here.
#   slurm_fleet_e2e_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=${1:?build dir}
SRC=${2:?source dir}
SKIP=77

skip() {
  echo "SKIP: $*"
  exit $SKIP
}
fail() {
  echo "FAIL: $*"
  exit 1
}

for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol sinfo python3; do
  command -v "$tool" >/dev/null ||
    skip "$tool not found: install Debian's munge, slurmctld, slurmd, slurm-client (scripts/install_deps.sh)"
done
PG_BIN=${HGEVAL_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[[ -x "$PG_BIN/initdb" ]] || skip "PostgreSQL server binaries not found: install Debian's postgresql"

WORK=$(mktemp -d /tmp/hgeval-slurm-XXXXXX)
chmod 755 "$WORK"
PIDFILES=()
cleanup() {
  if [[ -n "${JOB:-}" ]]; then scancel "$JOB" 2>/dev/null; fi
  for f in "${PIDFILES[@]}"; do [[ -s "$f" ]] && kill "$(cat "$f")" 2>/dev/null; done
  [[ -n "${REF_PID:-}" ]] && kill "$REF_PID" 2>/dev/null
  sleep 1
  [[ -n "${KEEP:-}" ]] || rm -rf "$WORK"
}
trap cleanup EXIT
# A daemon's log tail, for a skip or failure message.
show() { [[ -f "$1" ]] && tail -n 15 "$1"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# munge: a fresh key and a private socket.
mungekey -c -f -k "$WORK/munge.key" >/dev/null 2>&1 || skip "mungekey cannot create a key"
chmod 600 "$WORK/munge.key"
PIDFILES+=("$WORK/munged.pid")
munged -f --key-file="$WORK/munge.key" --socket="$WORK/munge.sock" \
  --pid-file="$WORK/munged.pid" --log-file="$WORK/munged.log" --seed-file="$WORK/munge.seed" \
  >"$WORK/munged.out" 2>&1 || skip "munged did not start: $(cat "$WORK/munged.out"; show "$WORK/munged.log")"

# slurm: one node (this machine), one partition, no accounting, no cgroups.
HOST=$(hostname -s)
CPUS=$(nproc)
USER_NAME=$(id -un)
mkdir -p "$WORK/state" "$WORK/spool"
cat >"$WORK/slurm.conf" <<EOF
ClusterName=hgevaltest
SlurmctldHost=$HOST
SlurmctldAddr=127.0.0.1
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$WORK/munge.sock
SlurmUser=$USER_NAME
SlurmdUser=$USER_NAME
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$WORK/jobcomp.txt
MpiDefault=none
ReturnToService=2
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=2000 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$WORK/slurm.conf
PIDFILES+=("$WORK/slurmctld.pid" "$WORK/slurmd.pid")
slurmctld -f "$SLURM_CONF" >"$WORK/slurmctld.out" 2>&1 ||
  skip "slurmctld did not start: $(cat "$WORK/slurmctld.out"; show "$WORK/slurmctld.log")"
slurmd -f "$SLURM_CONF" >"$WORK/slurmd.out" 2>&1 ||
  skip "slurmd did not start (as $USER_NAME): $(cat "$WORK/slurmd.out"; show "$WORK/slurmd.log")"
for ((i = 0; i < 60; ++i)); do
  [[ "$(sinfo -h -o %t 2>/dev/null)" == idle ]] && break
  sleep 0.5
done
[[ "$(sinfo -h -o %t 2>/dev/null)" == idle ]] ||
  skip "the Slurm node never became idle: $(sinfo 2>&1; show "$WORK/slurmd.log")"
echo "slurm: $(sinfo --version), node $HOST idle"

TASKS=piqa,arc_easy,openbookqa
LIMIT=40
MODEL_ARGS="--model=hgrn2=$SRC/tests/golden/hgrn2 --tokenizer=$SRC/data/models/stories260K/tok512.bin --threads=1"

# The reference: one server on SQLite.
# shellcheck disable=SC2086  # MODEL_ARGS is a list of flags
"$BUILD/server/hgeval-server" --listen=127.0.0.1:0 --port_file="$WORK/ref.port" $MODEL_ARGS \
  --data_dir="$SRC/data" --device=cpu --store="$WORK/reference.sqlite" >"$WORK/ref.log" 2>&1 &
REF_PID=$!
for ((i = 0; i < 100; ++i)); do
  [[ -s "$WORK/ref.port" ]] && break
  sleep 0.2
done
[[ -s "$WORK/ref.port" ]] || fail "the reference server did not start: $(show "$WORK/ref.log")"
"$BUILD/client/hgeval" run --server="127.0.0.1:$(cat "$WORK/ref.port")" --model=hgrn2 \
  --tasks=$TASKS --limit=$LIMIT --progress=false --output="$WORK/reference.json" \
  >"$WORK/ref-client.log" 2>&1 || fail "the reference run failed: $(show "$WORK/ref-client.log")"
kill "$REF_PID"
wait "$REF_PID" 2>/dev/null
REF_PID=

# The fleet, through Slurm: the recipe as written, its CPU knobs set.
BASE_PORT=$(free_port)
JOB=$(cd "$WORK" && HGEVAL_BUILD=$BUILD HGEVAL_DATA=$SRC/data HGEVAL_MODEL=hgrn2 \
  HGEVAL_MODEL_ARGS=$MODEL_ARGS HGEVAL_DEVICE=cpu HGEVAL_SERVERS=2 HGEVAL_TASKS=$TASKS \
  HGEVAL_CLIENT_ARGS=--limit=$LIMIT HGEVAL_OUTPUT=$WORK/fleet.json BASE_PORT=$BASE_PORT \
  PG_BIN=$PG_BIN SLURM_TMPDIR=$WORK sbatch --parsable --gpus-per-node=0 --cpus-per-task="$CPUS" --mem=1G \
  --time=10 --output="$WORK/job-%j.out" "$SRC/deploy/slurm/hgeval-fleet.sbatch" 2>&1) ||
  fail "sbatch refused the job: $JOB"
echo "submitted job $JOB"
for ((i = 0; i < 600; ++i)); do
  [[ -z "$(squeue -h -j "$JOB" 2>/dev/null)" ]] && break
  sleep 0.5
done
[[ -z "$(squeue -h -j "$JOB" 2>/dev/null)" ]] && finished=1 || finished=
STATE=$(scontrol show job "$JOB" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -1)
echo "job $JOB: $STATE ($(grep -o "JobId=$JOB .*ExitCode=[0-9:]*" "$WORK/jobcomp.txt" 2>/dev/null | grep -o 'ExitCode=[0-9:]*' | head -1))"
echo "--- job output"
cat "$WORK/job-$JOB.out" 2>/dev/null
[[ -n "$finished" ]] || fail "job $JOB still in squeue after 300 s"
[[ "$STATE" == JobState=COMPLETED ]] || fail "job $JOB ended $STATE"
grep -q "JobId=$JOB .*JobState=COMPLETED" "$WORK/jobcomp.txt" ||
  fail "job $JOB not COMPLETED in the job completion log"
[[ -s "$WORK/fleet.json" ]] || fail "the job wrote no results file"
[[ $(grep -c "event=shard_finished" "$WORK/job-$JOB.out") -ge 2 ]] ||
  fail "fewer shard_finished lines than tasks"

# The results equal the single server's, all but what differs between any two runs.
python3 - "$WORK/reference.json" "$WORK/fleet.json" <<'EOF' || fail "the Slurm job's results differ from the single server's"
import json, sys
def comparable(path):
    with open(path) as f:
        d = json.load(f)
    for key in ("date", "total_evaluation_time_seconds", "hgeval", "hgeval_job"):
        d.pop(key, None)
    return d
ref, got = comparable(sys.argv[1]), comparable(sys.argv[2])
if ref != got:
    sys.exit(1)
print("results equal the single server's:", ", ".join(sorted(ref.get("results", {}))))
EOF
echo "PASS"
