#!/usr/bin/env bash
# Trains the HGRN2/HGRN1 MQAR fixtures on a GPU machine (python3 with torch and numpy; no
# network; run from the repository root). First checks the plain-PyTorch models against
# fla's reference logits (tests/golden; stops on a mismatch), then trains hgrn2 and hgrn at
# d 64 and 128 on (L, K) = (256, 16), all four at once on the one GPU, each for at most
# MQAR_TIME_LIMIT seconds from its start (data generation included; default 420). Writes
#   $OUT/mqar/<arch>_d<d>_L256_K16/{config.json,model.safetensors,mqar_train.json}
#   $OUT/check_golden.log, $OUT/<arch>_d<d>.log, $OUT/summary.txt
# The whole run takes about MQAR_TIME_LIMIT + 30 s (golden check, final evaluation, export).
#
#   OUT=/some/folder scripts/train/mqar_device_run.sh
set -euo pipefail

: "${OUT:?set OUT to the output folder}"
OUT="$(mkdir -p "$OUT" && cd "$OUT" && pwd)"
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python3}"
LIMIT="${MQAR_TIME_LIMIT:-420}"
# A training that hangs is killed this long after the time limit (its folder is then
# missing; the others are kept).
GRACE="${MQAR_GRACE:-100}"
# Extra mqar_train.py arguments for every training (e.g. a small CPU smoke run:
# MQAR_EXTRA_ARGS="--train-examples 512 --test-examples 64 --batch 32 --epochs 1").
read -r -a EXTRA <<<"${MQAR_EXTRA_ARGS:-}"
SCRIPT=scripts/train/mqar_train.py

mkdir -p "$OUT/mqar"
"$PYTHON" -c 'import sys, numpy, torch; print("python", sys.version.split()[0], "numpy",
numpy.__version__, "torch", torch.__version__, "cuda", torch.cuda.is_available())' \
  | tee "$OUT/environment.txt"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >>"$OUT/environment.txt" 2>&1 || true

echo "== golden check ($(date -u +%T))"
"$PYTHON" "$SCRIPT" --check-golden tests/golden 2>&1 | tee "$OUT/check_golden.log"

echo "== training ${MQAR_RUNS:-hgrn2/hgrn d64/d128} on (256,16), time limit ${LIMIT}s each ($(date -u +%T))"
names=()
pids=()
# MQAR_RUNS picks a subset (e.g. "hgrn2_d128 hgrn_d128": two trainings share the GPU, so
# each gets about twice the steps of four).
read -r -a RUNS <<<"${MQAR_RUNS:-hgrn2_d64 hgrn2_d128 hgrn_d64 hgrn_d128}"
for name in "${RUNS[@]}"; do
  arch=${name%_d*}
  d=${name##*_d}
  timeout --kill-after=10 "$((LIMIT + GRACE))" \
    "$PYTHON" "$SCRIPT" --arch "$arch" --d-model "$d" --setting 256,16 \
    --time-limit "$LIMIT" --bf16-weights --out "$OUT/mqar" "${EXTRA[@]}" >"$OUT/$name.log" 2>&1 &
  names+=("$name")
  pids+=("$!")
done

failed=0
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then
    echo "${names[$i]}: done"
  else
    echo "${names[$i]}: FAILED (exit $?), see $OUT/${names[$i]}.log"
    tail -n 20 "$OUT/${names[$i]}.log" || true
    failed=1
  fi
done

echo "== summary ($(date -u +%T))"
"$PYTHON" - "$OUT/mqar" <<'PY' | tee "$OUT/summary.txt"
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*", "mqar_train.json"))):
    with open(path) as f:
        run = json.load(f)
    acc = run["test_accuracy_pytorch"]
    last = run["log"][-1] if run["log"] else {}
    print(os.path.basename(os.path.dirname(path)), json.dumps(acc), "epochs", len(run["log"]),
          "steps", run["steps"], "train_loss", round(last.get("train_loss", float("nan")), 4),
          "near_ties", run["near_ties_1e-3"], "seconds", round(run["train_seconds"]))
PY
exit "$failed"
