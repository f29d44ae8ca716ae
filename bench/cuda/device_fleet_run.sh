#!/usr/bin/env bash
# One GPU-machine call for issue 34 (the two-GPU fleet, acceptance 1), on a machine with
# two GPUs: PostgreSQL from Debian's binaries (bench/cuda/postgres_bundle.sh), then per
# model the suite (nine tasks, full sets) as one job through `hgeval run`:
#   single: one hgeval-server on GPU 0;
#   fleet:  two servers (GPU 0 and GPU 1) via `hgeval run --server=a,b`;
#   killed: the same two, the second SIGKILLed mid-run (at KILL_AT of the fleet's time).
# Each run has its own fresh PostgreSQL cluster (nothing answered from an earlier run's
# results); after each, the store's compute counts are read with `postgres --single`.
# The results JSONs (less wall-clock fields) and every metric are compared bitwise with
# the single run's. Run from the checkout's root; results go to $OUT/fleet.json.
#   BUNDLE=.gpu-x/bundle.tar.xz PG_BUNDLE=.gpu-x/postgres.tar.xz bash bench/cuda/device_fleet_run.sh
# BUNDLE: bench/cuda/gpu_bundle.sh of a CUDA build (hgeval-server, hgeval, suite_cuda_bench).
# Debugging on a CPU machine: DEVICE=cpu DTYPE= MODEL_ARGS="--model=m=DIR --tokenizer=F"
# MODELS=m TASKS=piqa,arc_easy LIMIT=200 GPUS=0,0, and PG_BUNDLE=none to use the local
# /usr/lib/postgresql/15. MODELS (hgrn2-1.3b,llama-1.3b) are served from the checkpoints
# `suite_cuda_bench --random_weights --save_checkpoints` writes (or MODEL_ARGS).
set -uo pipefail
: "${OUT:?set OUT to the results folder}"
bundle=${BUNDLE:-.gpu/bundle.tar.xz}
pg_bundle=${PG_BUNDLE:-.gpu/postgres.tar.xz}
models=${MODELS:-hgrn2-1.3b,llama-1.3b}
tasks=${TASKS:-piqa,arc_easy,arc_challenge,hellaswag,winogrande,openbookqa,boolq,social_iqa,lambada_openai}
limit=${LIMIT:-0}
device=${DEVICE:-cuda}
dtype=${DTYPE-bf16}
gpus=${GPUS:-0,1}
gpu_a=${gpus%,*}
gpu_b=${gpus#*,}
kill_at=${KILL_AT:-0.4}
lease_ms=${LEASE_MS:-5000}
data=$PWD/data
g=${WORK:-/tmp/hgeval-fleet}
rm -rf "$g" && mkdir -p "$g/pg" "$g/runs" && chmod 755 "$g" "$g/runs"
if [[ -n $bundle && $bundle != none ]]; then
  tar -C "$g" -xJf "$bundle" || exit 1
  bin=$g/bin
else
  bin=${BIN:?BUNDLE=none needs BIN}
fi
# The bundles' top folders come out as their packer's temp dirs (0700): PostgreSQL runs
# as nobody, who must reach its binaries and the run folders.
chmod 755 "$g"
export LD_LIBRARY_PATH=$g/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export HGEVAL_SOURCE_DIR=$PWD
if [[ $pg_bundle != none ]]; then
  tar -C "$g/pg" -xJf "$pg_bundle" || exit 1
  chmod -R a+rX "$g/pg" && chmod 755 "$g"
  pg_bin=$g/pg/usr/lib/postgresql/15/bin
  pg_lib=$g/pg/lib
else
  pg_bin=/usr/lib/postgresql/15/bin
  pg_lib=
fi
log() { echo "[$(date +%T)] $*" | tee -a "$g/runs/fleet.log" >&2; }
# PostgreSQL refuses to run as root: as nobody then.
as_pg() {
  if [[ $(id -u) == 0 ]]; then
    if command -v runuser >/dev/null; then
      runuser -u nobody -- env LD_LIBRARY_PATH="$pg_lib" "$@"
    else
      setpriv --reuid=nobody --regid=nogroup --clear-groups env LD_LIBRARY_PATH="$pg_lib" "$@"
    fi
  else
    env LD_LIBRARY_PATH="$pg_lib" "$@"
  fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_pg DIR: a fresh cluster in DIR; sets store.
start_pg() {
  local d=$1
  mkdir -p "$d/data" && chmod 755 "$d"
  [[ $(id -u) == 0 ]] && chown -R nobody "$d"
  as_pg "$pg_bin/initdb" -D "$d/data" -U hgeval --auth=trust -E UTF8 --no-locale --no-sync \
    >"$d/initdb.log" 2>&1 || { log "initdb failed"; cat "$d/initdb.log"; return 1; }
  local port
  port=$(free_port)
  as_pg "$pg_bin/pg_ctl" -D "$d/data" -l "$d/postgres.log" -w -t 60 -o "-p $port \
    -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off \
    -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c jit=off" start \
    >"$d/pg_ctl.log" 2>&1 || { log "pg_ctl start failed"; cat "$d/pg_ctl.log" "$d/postgres.log"; return 1; }
  store=postgresql://hgeval@127.0.0.1:$port/postgres
}
# stop_pg DIR: stops the cluster and prints "results computations max_compute_count".
stop_pg() {
  local d=$1
  as_pg "$pg_bin/pg_ctl" -D "$d/data" -m fast -w stop >>"$d/pg_ctl.log" 2>&1
  echo "SELECT COUNT(*)::bigint AS n, COALESCE(SUM(compute_count),0)::bigint AS n,
        COALESCE(MAX(compute_count),0)::bigint AS n FROM results;" |
    as_pg "$pg_bin/postgres" --single -D "$d/data" -j postgres 2>"$d/single.log" |
    sed -n 's/.*n = "\([0-9]*\)".*/\1/p' | tr '\n' ' '
}

server_pids=()
cleanup() {
  for p in "${server_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  for d in "$g"/runs/*/pg; do
    [[ -d $d/data ]] && as_pg "$pg_bin/pg_ctl" -D "$d/data" -m immediate -w stop >/dev/null 2>&1
  done
}
trap cleanup EXIT

# start_server DIR NAME GPU: sets addr and pid.
start_server() {
  local d=$1 name=$2 gpu=$3
  local model_args
  if [[ -n ${MODEL_ARGS:-} ]]; then
    model_args=($MODEL_ARGS)
  else
    model_args=(--model_root="$checkpoints" --preload="$model")
  fi
  CUDA_VISIBLE_DEVICES=$gpu "$bin/hgeval-server" "${model_args[@]}" --device="$device" \
    ${dtype:+--dtype="$dtype"} --listen=127.0.0.1:0 --port_file="$d/port-$name" \
    --store="$store" --data_dir="$data" --replica="$name" --job_lease_ms="$lease_ms" \
    2>"$d/server-$name.log" &
  pid=$!
  server_pids+=("$pid")
  for _ in $(seq 1 1200); do [[ -s $d/port-$name ]] && break; sleep 0.25; done
  addr=127.0.0.1:$(cat "$d/port-$name")
  "$bin/hgeval" health --server="$addr" --wait=600 >/dev/null || log "$name not healthy"
  # Warm-up on this server itself (Loglikelihood calls, no job): GEMM algorithms and pools.
  "$bin/hgeval" run --local --server="$addr" --model="$model" --tasks=lambada_standard \
    --limit=20 --data_dir="$data" --progress=false --output="$d/warm-$name.json" >/dev/null 2>&1 ||
    log "warm-up of $name failed"
}

# run_job DIR SERVERS: the timed job; sets seconds.
run_job() {
  local d=$1 servers=$2
  local start end
  start=$(date +%s.%N)
  timeout 900 "$bin/hgeval" run --server="$servers" --model="$model" --tasks="$tasks" \
    --limit="$limit" --progress=false --reconnect_for=60 --output="$d/job.json" \
    >"$d/table.txt" 2>"$d/client.log"
  local rc=$?
  end=$(date +%s.%N)
  seconds=$(python3 -c "print($end - $start)")
  return $rc
}

# The JSON of the models run so far (written after each, so a cut-off call keeps them).
report() {
python3 - "$OUT/fleet.json" "$g/runs" "$(cat "$g/runs/gpus.txt" | head -2 | tr '\n' ';')" \
  "$tasks" "$limit" "$device" "${rows[@]}" <<'PY'
import json, os, sys
out, runs, gpus, tasks, limit, device = sys.argv[1:7]
VOLATILE = ("date", "total_evaluation_time_seconds", "hgeval", "hgeval_job")
def comparable(path):
    j = json.load(open(path))
    for k in VOLATILE:
        j.pop(k, None)
    return j
def stats(text):
    v = [int(x) for x in text.split()]
    return dict(zip(("results", "computations", "max_compute_count"), v)) if len(v) == 3 else None
report = {"benchmark": "device_fleet_run.sh (issue 34 acceptance 1)", "gpus": gpus,
          "device": device, "tasks": tasks.split(","), "limit": int(limit), "models": {}}
failed = False
for row in sys.argv[7:]:
    model, t1, t2, t3, s1, s2, s3, claims = row.split("|")
    paths = {r: os.path.join(runs, f"{model}-{r}", "job.json") for r in ("single", "fleet", "killed")}
    have = {r: os.path.exists(p) for r, p in paths.items()}
    ref = comparable(paths["single"]) if have["single"] else None
    equal = {r: (have[r] and ref is not None and comparable(paths[r]) == ref)
             for r in ("fleet", "killed")}
    jobs = {r: json.load(open(p)).get("hgeval_job", {}) for r, p in paths.items() if have[r]}
    m = {
        "single_seconds": float(t1), "fleet_seconds": float(t2), "killed_seconds": float(t3),
        "fleet_over_single": float(t2) / float(t1),
        "killed_over_single": float(t3) / float(t1),
        "results_equal_to_single": equal,
        "store": {"single": stats(s1), "fleet": stats(s2), "killed": stats(s3)},
        "requests": {r: {"computed": j.get("requests_computed"), "cached": j.get("requests_cached")}
                     for r, j in jobs.items()},
        "fleet_shards_started_per_server": [int(x) for x in claims.split()],
    }
    st = m["store"]
    ok = (all(equal.values()) and all(st[r] and st[r]["max_compute_count"] == 1 for r in st)
          and st["fleet"]["results"] == st["single"]["results"] == st["killed"]["results"])
    m["ok"] = ok
    failed |= not ok
    report["models"][model] = m
    print(f"[{model}] single {float(t1):.2f} s, two servers {float(t2):.2f} s "
          f"(x{m['fleet_over_single']:.3f}), one killed {float(t3):.2f} s; equal {equal}; "
          f"store {st}", file=sys.stderr)
json.dump(report, open(out, "w"), indent=2)
sys.exit(1 if failed else 0)
PY
}

status=0
checkpoints=$g/checkpoints
if [[ -z ${MODEL_ARGS:-} ]]; then
  families=$(echo "$models" | sed 's/-1\.3b//g')
  log "writing random-weight checkpoints of $families"
  "$bin/suite_cuda_bench" --random_weights --models="$families" --limit=1 \
    --save_checkpoints="$checkpoints" --out="$g/runs/checkpoints.json" >/dev/null \
    2>"$g/runs/checkpoints.log" || { log "suite_cuda_bench failed"; tail -5 "$g/runs/checkpoints.log"; exit 1; }
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >"$g/runs/gpus.txt" 2>/dev/null ||
  echo "cpu" >"$g/runs/gpus.txt"
rows=()
for model in ${models//,/ }; do
  # single
  d=$g/runs/$model-single && mkdir -p "$d"
  start_pg "$d/pg" || exit 1
  start_server "$d" s0 "$gpu_a"; p0=$pid
  run_job "$d" "$addr" || { log "$model single: job failed"; status=1; }
  single_seconds=$seconds
  kill "$p0"; wait "$p0" 2>/dev/null
  single_stats=$(stop_pg "$d/pg")
  log "$model single: $single_seconds s, store (results computations max) $single_stats"

  # fleet
  d=$g/runs/$model-fleet && mkdir -p "$d"
  start_pg "$d/pg" || exit 1
  start_server "$d" f0 "$gpu_a"; p0=$pid; a0=$addr
  start_server "$d" f1 "$gpu_b"; p1=$pid; a1=$addr
  run_job "$d" "$a0,$a1" || { log "$model fleet: job failed"; status=1; }
  fleet_seconds=$seconds
  kill "$p0" "$p1"; wait "$p0" "$p1" 2>/dev/null
  fleet_stats=$(stop_pg "$d/pg")
  fleet_claims="$(grep -c event=shard_started "$d/server-f0.log") $(grep -c event=shard_started "$d/server-f1.log")"
  log "$model fleet: $fleet_seconds s, store $fleet_stats, shards started per server $fleet_claims"

  # killed
  d=$g/runs/$model-killed && mkdir -p "$d"
  start_pg "$d/pg" || exit 1
  start_server "$d" k0 "$gpu_a"; p0=$pid; a0=$addr
  start_server "$d" k1 "$gpu_b"; p1=$pid; a1=$addr
  kill_after=$(python3 -c "print(max(1.0, $fleet_seconds * $kill_at))")
  ( sleep "$kill_after"; kill -9 "$p1" 2>/dev/null && echo "killed k1 after $kill_after s" >"$d/killed.txt" ) &
  killer=$!
  run_job "$d" "$a0,$a1" || { log "$model killed: job failed"; status=1; }
  killed_seconds=$seconds
  wait "$killer" 2>/dev/null
  kill "$p0" 2>/dev/null; wait "$p0" "$p1" 2>/dev/null
  killed_stats=$(stop_pg "$d/pg")
  log "$model killed: $killed_seconds s, store $killed_stats, $(cat "$d/killed.txt" 2>/dev/null || echo 'k1 NOT killed (the job ended first)')"
  rows+=("$model|$single_seconds|$fleet_seconds|$killed_seconds|$single_stats|$fleet_stats|$killed_stats|$fleet_claims")
  report || status=1
done

tar -C "$g/runs" --exclude='*/pg/data' -czf "$OUT/fleet-logs.tar.gz" . 2>/dev/null
exit $status
