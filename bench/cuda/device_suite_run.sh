#!/usr/bin/env bash
# One GPU-machine call for issue 18: every GPU test, the suite in process
# (suite_cuda_bench), the same suite as a server job (suite_server_bench.sh) and, with
# PEER=1, the PyTorch peer on the same requests. Run from the checkout's root on the GPU
# machine, with the bundle of bench/cuda/gpu_bundle.sh (a full CUDA build, so that
# hgeval-server and hgeval are in it) at $BUNDLE; results go to $OUT.
#   BUNDLE=.gpu/bundle.tar.xz PEER=1 bash bench/cuda/device_suite_run.sh
# MODELS (hgrn2,llama), LIMIT (0: full sets) and SERVER (1) narrow the run. $OUT receives
# suite.json, suite-server.json, suite-peer.json, gpu-tests.log and logs.tar.gz (the
# benchmarks' logs, the servers' logs and job results).
set -uo pipefail
: "${OUT:?set OUT to the results folder}"
bundle=${BUNDLE:-.gpu/bundle.tar.xz}
models=${MODELS:-hgrn2,llama}
limit=${LIMIT:-0}
g=/tmp/hgeval-gpu
rm -rf "$g" && mkdir -p "$g" && tar -C "$g" -xJf "$bundle"
export LD_LIBRARY_PATH=$g/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export HGEVAL_SOURCE_DIR=$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv | tee "$OUT/gpu.txt"
status=0
for t in "$g"/bin/*_test; do
  echo "== $(basename "$t")" >>"$OUT/gpu-tests.log"
  "$t" >>"$OUT/gpu-tests.log" 2>&1 || { echo "FAILED: $(basename "$t")"; status=1; }
done
grep -E "^\[  (PASSED|FAILED) " "$OUT/gpu-tests.log"
logs=/tmp/hgeval-logs
rm -rf "$logs" && mkdir -p "$logs"
mv "$OUT/gpu.txt" "$logs/"
ck=/tmp/hgeval-checkpoints
req=/tmp/hgeval-requests
mkdir -p "$ck" "$req"
"$g/bin/suite_cuda_bench" --random_weights --models="$models" --limit="$limit" \
  --save_checkpoints="$ck" --requests_out="$req" \
  --out="$OUT/suite.json" >/dev/null 2>"$logs/suite.log" || { echo "suite_cuda_bench failed"; status=1; }
grep -E "suite|host work" "$logs/suite.log"
if [[ ${SERVER:-1} == 1 ]]; then
  KEEP_DIR=$logs bash bench/cuda/suite_server_bench.sh "$g/bin" "$ck" "$PWD/data" \
    "$OUT/suite.json" "$OUT/suite-server.json" "$models" 2>&1 | tee "$logs/suite-server.log" \
    || status=1
fi
if [[ ${PEER:-0} == 1 ]]; then
  PYTHONPATH=$g/peers${PYTHONPATH:+:$PYTHONPATH} python3 bench/peers/suite_peer.py \
    --requests "$req" --models "$models" --batch_size 64 --out "$OUT/suite-peer.json" \
    >"$logs/suite-peer.log" 2>&1 || { echo "peer failed"; status=1; }
  tail -n 3 "$logs/suite-peer.log"
fi
tar -C "$logs" -czf "$OUT/logs.tar.gz" .
exit $status
