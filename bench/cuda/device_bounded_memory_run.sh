#!/usr/bin/env bash
# GPU-machine calls for the issue "Bounded memory" (run from the checkout's root with the
# bundle of bench/cuda/gpu_bundle.sh at $BUNDLE; results go to $OUT). One stage per call,
# each well inside a call's 10 minutes:
# STAGE may list several stages ("suite server"), run in order.
#   STAGE=tests  every GPU test, then cuda_bench's LLaMA rows (64K prefill with and without
#                a kept KV cache)
#   STAGE=suite  the paper's suite in process for HGRN2 and LLaMA 1.3B, unbounded (the
#                card's whole memory) and under --device_memory=$BUDGET; per-sample
#                log-likelihoods compared bitwise; checkpoints saved for STAGE=server
#   STAGE=server the same suite as server jobs (suite_server_bench.sh), metrics and every
#                per-sample response compared with the in-process (unbounded) run's
#   STAGE=niah   the NIAH paper grid for both models, unbounded and under the budget
#                (generated ids compared)
#   STAGE=scrolls SCROLLS (qmsum, contractnli) under the budget, then the PyTorch peer
#                (bench/peers/scrolls_peer.py; needs the bundle's fla package)
#   STAGE=demo   DEVICE=cuda scripts/setup_and_run.sh with the bundle's binaries
set -uo pipefail
: "${OUT:?set OUT to the results folder}"
stages=${STAGE:?set STAGE}
budget=${BUDGET:-20GiB}
g=/tmp/hgeval-gpu
if [[ ! -x $g/bin/suite_cuda_bench ]]; then
  rm -rf "$g" && mkdir -p "$g" && tar -C "$g" -xJf "${BUNDLE:-.gpu/bundle.tar.xz}"
fi
export LD_LIBRARY_PATH=$g/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export HGEVAL_SOURCE_DIR=$PWD
work=/tmp/hgeval-bounded
mkdir -p "$work"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv | tee "$OUT/gpu.txt"
status=0
compare_samples() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
n = diff = 0
for fam in a:
    for task in a[fam]:
        for x, y in zip(a[fam][task], b[fam][task]):
            n += 1
            diff += x != y
        if len(a[fam][task]) != len(b[fam][task]):
            diff += 1
print(f"per-sample responses compared: {n}, different: {diff}")
sys.exit(1 if diff or n == 0 else 0)
PY
}
for stage in $stages; do
case $stage in
tests)
  for t in "$g"/bin/*_test; do
    echo "== $(basename "$t")" >>"$OUT/gpu-tests.log"
    timeout 300 "$t" >>"$OUT/gpu-tests.log" 2>&1 || { echo "FAILED: $(basename "$t")"; status=1; }
  done
  grep -E "^\[  (PASSED|FAILED) |layer-major|halved batches" "$OUT/gpu-tests.log"
  timeout 240 "$g/bin/cuda_bench" --random_weights --models=llama --micro=false \
    --out="$OUT/cuda-bench-llama.json" 2>"$OUT/cuda-bench.log" | tail -n 14 || status=1
  ;;
suite)
  mkdir -p "$work/ck"
  "$g/bin/suite_cuda_bench" --random_weights --models=hgrn2,llama --host_only=false \
    --save_checkpoints="$work/ck" --samples_out="$work/samples-unbounded.json" \
    --out="$OUT/suite-unbounded.json" >/dev/null 2>"$OUT/suite-unbounded.log" || status=1
  grep -E "suite|memory" "$OUT/suite-unbounded.log"
  # The same weights: loaded back from the same BF16 checkpoints as the unbounded run.
  "$g/bin/suite_cuda_bench" --random_weights --models=hgrn2,llama --host_only=false \
    --device_memory="$budget" --save_checkpoints="$work/ck-budget" \
    --samples_out="$work/samples-budget.json" \
    --out="$OUT/suite-budget.json" >/dev/null 2>"$OUT/suite-budget.log" || status=1
  grep -E "suite|memory" "$OUT/suite-budget.log"
  compare_samples "$work/samples-unbounded.json" "$work/samples-budget.json" | tee "$OUT/suite-compare.txt" || status=1
  ;;
server)
  SAMPLES_IN=$work/samples-unbounded.json KEEP_DIR=$work/server bash bench/cuda/suite_server_bench.sh "$g/bin" "$work/ck" "$PWD/data" \
    "$OUT/suite-unbounded.json" "$OUT/suite-server.json" hgrn2,llama 2>&1 | tee "$OUT/suite-server.log" \
    || status=1
  ;;
niah)
  for mem in "" "$budget"; do
    tag=${mem:-unbounded}
    timeout 280 "$g/bin/niah_cuda_bench" --random_weights --models=hgrn2,llama --warmup=false \
      ${mem:+--device_memory="$mem"} --out="$OUT/niah-$tag.json" 2>"$OUT/niah-$tag.log" >/dev/null \
      || status=1
    grep -E "cells in" "$OUT/niah-$tag.log"
  done
  python3 - "$OUT/niah-unbounded.json" "$OUT/niah-$budget.json" <<'PY' || status=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ok = True
for fam, m in a["models"].items():
    x, y = m["runs"][0], b["models"][fam]["runs"][0]
    same = x["generated_sha256"] == y["generated_sha256"]
    ok &= same
    print(f"{fam}: unbounded {x['sweep_wall_seconds']:.1f} s peak {x['peak_budget_bytes']/2**30:.2f} GiB; "
          f"budget {y['sweep_wall_seconds']:.1f} s peak {y['peak_budget_bytes']/2**30:.2f} GiB "
          f"of {y['memory_budget_bytes']/2**30:.2f}; {y['batches']} batches; answers identical: {same}")
sys.exit(0 if ok else 1)
PY
  ;;
scrolls)
  # The long-document tasks under the budget, then the PyTorch peer (lm-eval's HF
  # generate_until) on the same prompts.
  mkdir -p "$work/req-scrolls"
  "$g/bin/suite_cuda_bench" --random_weights --models="${MODELS:-hgrn2,llama}" --host_only=true \
    --tasks=scrolls_qmsum,scrolls_contractnli --device_memory="$budget" \
    --requests_out="$work/req-scrolls" \
    --out="$OUT/scrolls-budget.json" >/dev/null 2>"$OUT/scrolls-budget.log" || status=1
  grep -E "scrolls|suite|memory|host work" "$OUT/scrolls-budget.log"
  if [[ -d $g/peers ]]; then
    PYTHONPATH=$g/peers${PYTHONPATH:+:$PYTHONPATH} timeout "${PEER_TIMEOUT:-330}" python3 bench/peers/scrolls_peer.py \
      --requests "$work/req-scrolls" --models "${MODELS:-hgrn2,llama}" --batch_size "${PEER_BATCH:-8}" \
      --out "$OUT/scrolls-peer.json" >"$OUT/scrolls-peer.log" 2>&1 || { echo "peer failed or cut"; status=1; }
    grep -E "\]" "$OUT/scrolls-peer.log"
  fi
  ;;
demo)
  # A GPU user's first command (README), with the bundle's binaries.
  SKIP_BUILD=1 SERVER=$g/bin/hgeval-server CLIENT=$g/bin/hgeval DEVICE=cuda DEVICE_MEMORY=$budget \
    bash scripts/setup_and_run.sh >"$OUT/demo.log" 2>&1 || { echo "demo failed"; status=1; }
  tail -n 25 "$OUT/demo.log"
  ;;
esac
done
exit $status
