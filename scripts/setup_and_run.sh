#!/usr/bin/env bash
# Set-up + run: installs the Debian dependencies, builds the server and client (Release),
# starts hgeval-server on the CPU with the bundled demo model (data/models/stories260K) on
# a free loopback port, waits for health SERVING, runs a small real evaluation through the
# client (lm-eval tasks with a per-task limit), prints the results table, runs a small
# NIAH sweep (JSON, CSV and heatmap PNG) and stops the server. Nothing is downloaded besides the Debian packages.
#   TASKS=piqa,arc_easy LIMIT=50 BUILD_DIR=build ./scripts/setup_and_run.sh
# On a GPU (the CUDA backend is built when nvcc is found): the same demo on the GPU, in
# bf16, under an optional memory budget:
#   DEVICE=cuda ./scripts/setup_and_run.sh
#   DEVICE=cuda DEVICE_MEMORY=20GiB ./scripts/setup_and_run.sh
# SKIP_BUILD=1 SERVER=... CLIENT=... run prebuilt binaries (a machine without the -dev
# packages, given a bundle of bench/cuda/gpu_bundle.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
TASKS=${TASKS:-piqa,arc_easy,hellaswag}
LIMIT=${LIMIT:-40}
BUILD_DIR=${BUILD_DIR:-build}
DEVICE=${DEVICE:-cpu}
DTYPE=${DTYPE:-$([[ $DEVICE == cuda* ]] && echo bf16 || echo fp32)}
DEVICE_MEMORY=${DEVICE_MEMORY:-}

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  bash scripts/install_deps.sh
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target hgeval-server hgeval
fi

SERVER=${SERVER:-$BUILD_DIR/server/hgeval-server}
CLIENT=${CLIENT:-$BUILD_DIR/client/hgeval}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hgeval-demo.XXXXXX")
"$SERVER" --listen=127.0.0.1:0 --port_file="$WORK/port" \
  --model_root=data/models --preload=stories260K --device="$DEVICE" --dtype="$DTYPE" \
  ${DEVICE_MEMORY:+--device_memory="$DEVICE_MEMORY"} \
  --store="$WORK/store.sqlite" --data_dir=data 2>"$WORK/server.log" &
SERVER_PID=$!
stop_server() {
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || true
  fi
}
trap stop_server EXIT

for _ in $(seq 1 600); do
  [[ -s "$WORK/port" ]] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log"; exit 1; }
  sleep 0.1
done
ADDRESS="127.0.0.1:$(cat "$WORK/port")"
echo "== hgeval-server on $ADDRESS (log: $WORK/server.log)"
"$CLIENT" health --server="$ADDRESS" --wait=120

echo "== models"
"$CLIENT" models --server="$ADDRESS"
echo "== score: log p(' time' | 'Once upon a')"
"$CLIENT" score --server="$ADDRESS" --model=stories260K --context="Once upon a" --continuation=" time"
echo "== generate (greedy, 48 tokens)"
"$CLIENT" generate --server="$ADDRESS" --model=stories260K --prompt="Once upon a time" --max_tokens=48
echo "== run: $TASKS, limit $LIMIT per task"
"$CLIENT" run --server="$ADDRESS" --model=stories260K --tasks="$TASKS" --limit="$LIMIT" \
  --output="$WORK/results.json"
echo "== results JSON: $WORK/results.json"
# stories260K reads at most 512 tokens: a small grid that fits (the presets need more).
echo "== niah: a 3 x 3 Needle-in-a-Haystack sweep as a server job"
"$CLIENT" niah --server="$ADDRESS" --model=stories260K --mode=easy --lengths=300,400,500 \
  --depths=0,50,100 --output_dir="$WORK/niah"
stop_server
trap - EXIT
echo "== server stopped"
