#!/usr/bin/env bash
# The fleet at scale on one machine (issue 34 item 5): SERVERS (8) CPU hgeval-servers on a
# golden-size model sharing one PostgreSQL (Debian's binaries, a fresh cluster in a temp
# dir), one job of >= 50,000 requests (TASKS, full sets) through `hgeval run
# --server=a,b,...`, against the same job on one server (its own fresh cluster). Measures
# the wall times, the shard claims per second (event=shard_started in the servers' logs),
# the PostgreSQL connections held (pg_stat_activity, sampled every 0.25 s: the maximum)
# and the store's compute counts; checks the results equal the one server's.
# Usage: bench/fleet_scale_bench.sh BUILD_DIR OUT_JSON   (run from the checkout's root)
set -uo pipefail
build=${1:?usage: fleet_scale_bench.sh BUILD_DIR OUT_JSON}
out=${2:?usage: fleet_scale_bench.sh BUILD_DIR OUT_JSON}
servers=${SERVERS:-8}
tasks=${TASKS:-hellaswag,arc_easy,piqa}
limit=${LIMIT:-0}
model_args=(--model=hgrn2="$PWD/tests/golden/hgrn2"
            --tokenizer="$PWD/data/models/stories260K/tok512.bin" --threads=1)
pg_bin=/usr/lib/postgresql/15/bin
w=$(mktemp -d /tmp/hgeval-fleet-scale.XXXXXX)
chmod 755 "$w"
pids=()
clusters=()
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u nobody -- "$@"; else "$@"; fi; }
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  for c in "${clusters[@]}"; do as_pg "$pg_bin/pg_ctl" -D "$c" -m immediate -w stop >/dev/null 2>&1; done
  rm -rf "$w"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run NAME N: a fresh cluster, N servers, the job; prints one JSON line.
run() {
  local name=$1 n=$2 d=$w/$1
  mkdir -p "$d/pg" && chmod 755 "$d"
  [[ $(id -u) == 0 ]] && chown -R nobody "$d/pg"
  as_pg "$pg_bin/initdb" -D "$d/pg" -U hgeval --auth=trust -E UTF8 --no-locale --no-sync >"$d/initdb.log" 2>&1 || return 1
  local port
  port=$(free_port)
  as_pg "$pg_bin/pg_ctl" -D "$d/pg" -l "$d/pg/postgres.log" -w -t 60 -o "-p $port \
    -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off \
    -c synchronous_commit=off -c full_page_writes=off -c jit=off" start >"$d/pg_ctl.log" 2>&1 || return 1
  clusters+=("$d/pg")
  local store=postgresql://hgeval@127.0.0.1:$port/postgres addrs=() i
  for ((i = 0; i < n; i++)); do
    "$build/server/hgeval-server" "${model_args[@]}" --listen=127.0.0.1:0 \
      --port_file="$d/port-$i" --store="$store" --data_dir="$PWD/data" --replica="s$i" \
      --job_lease_ms=10000 2>"$d/server-$i.log" &
    pids+=($!)
  done
  for ((i = 0; i < n; i++)); do
    for _ in $(seq 1 240); do [[ -s $d/port-$i ]] && break; sleep 0.25; done
    addrs+=("127.0.0.1:$(cat "$d/port-$i")")
    "$build/client/hgeval" health --server="${addrs[-1]}" --wait=120 >/dev/null || return 1
  done
  local idle
  idle=$(psql -At "$store" -c "SELECT count(*) - 1 FROM pg_stat_activity WHERE backend_type = 'client backend'")
  ( max=0
    while :; do
      c=$(psql -At "$store" -c "SELECT count(*) - 1 FROM pg_stat_activity WHERE backend_type = 'client backend'" 2>/dev/null || echo 0)
      (( c > max )) && max=$c && echo "$max" >"$d/max_connections"
      sleep 0.25
    done ) &
  local sampler=$!
  local start end
  start=$(date +%s.%N)
  local IFS=,
  "$build/client/hgeval" run --server="${addrs[*]}" --model=hgrn2 --tasks="$tasks" --limit="$limit" \
    --progress=false --output="$d/job.json" >"$d/table.txt" 2>"$d/client.log" || { cat "$d/client.log" >&2; return 1; }
  end=$(date +%s.%N)
  unset IFS
  kill "$sampler"; wait "$sampler" 2>/dev/null
  local stats
  stats=$(psql -At -F ' ' "$store" -c "SELECT COUNT(*), SUM(compute_count), MAX(compute_count) FROM results")
  local shards
  shards=$(psql -At "$store" -c "SELECT COUNT(*) FROM job_shards")
  for ((i = 0; i < n; i++)); do kill "${pids[-1 - i]}" 2>/dev/null; done
  wait 2>/dev/null
  local claims
  claims=$(cat "$d"/server-*.log | grep -c event=shard_started)
  python3 - "$name" "$n" "$start" "$end" "$claims" "$shards" "$idle" "$(cat "$d/max_connections" 2>/dev/null || echo 0)" \
    "$stats" "$d/job.json" <<'PY'
import json, sys
name, n, start, end, claims, shards, idle, maxc, stats, job = sys.argv[1:]
seconds = float(end) - float(start)
results, computations, max_count = (int(x) for x in stats.split())
j = json.load(open(job))
print(json.dumps({"run": name, "servers": int(n), "seconds": seconds,
                  "requests": sum(t["requests"] for t in j["hgeval"]["tasks"].values()),
                  "shards": int(shards), "shard_claims": int(claims),
                  "shard_claims_per_second": int(claims) / seconds,
                  "postgres_connections_idle_before_job": int(idle),
                  "postgres_connections_max_during_job": int(maxc),
                  "store": {"results": results, "computations": computations,
                            "max_compute_count": max_count},
                  "job": job}))
PY
}

one=$(run one 1) || { echo "one-server run failed" >&2; exit 1; }
echo "$one" >&2
fleet=$(run fleet "$servers") || { echo "fleet run failed" >&2; exit 1; }
echo "$fleet" >&2
python3 - "$one" "$fleet" "$out" "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" <<'PY'
import json, sys
one, fleet = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def comparable(path):
    j = json.load(open(path))
    for k in ("date", "total_evaluation_time_seconds", "hgeval", "hgeval_job"):
        j.pop(k, None)
    return j
equal = comparable(one["job"]) == comparable(fleet["job"])
for r in (one, fleet):
    r.pop("job")
report = {"benchmark": "bench/fleet_scale_bench.sh (issue 34 item 5)",
          "machine": f"{sys.argv[4]} cores,{sys.argv[5]}; shared with other work while it ran",
          "model": "tests/golden/hgrn2 (golden size), --threads=1 per server",
          "one_server": one, "fleet": fleet,
          "fleet_over_one_server": fleet["seconds"] / one["seconds"],
          "results_equal": equal}
json.dump(report, open(sys.argv[3], "w"), indent=2)
print(json.dumps(report, indent=2))
sys.exit(0 if equal and fleet["store"]["max_compute_count"] == 1 else 1)
PY
