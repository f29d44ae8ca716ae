#!/usr/bin/env bash
# The paper's zero-shot suite as a server job on the GPU (issue 18, acceptance 3): serves
# the checkpoints that `suite_cuda_bench --save_checkpoints DIR` wrote with
# `hgeval-server --device cuda --dtype bf16`, runs the suite through `hgeval run` (one job,
# full sets, per-sample records kept) and times it from submit to results, then compares
# the job's per-sample responses with the in-process run's (`--samples_out`).
#
# Usage: bench/cuda/suite_server_bench.sh BIN_DIR CHECKPOINTS_DIR DATA_DIR IN_PROCESS_JSON \
#            IN_PROCESS_SAMPLES OUT_JSON [MODELS]
#   BIN_DIR: holds hgeval-server and hgeval; MODELS: comma-separated families (hgrn2,llama).
# Before the timed job an untimed warm-up job (lambada_standard, 20 docs: not in the suite,
# so no timed request is answered from the store) picks the GEMM algorithms and fills the
# device pool, as suite_cuda_bench's warm-up does.
set -euo pipefail
bin=${1:?usage: see the header}
checkpoints=${2:?}
data=${3:?}
in_process=${4:?}
in_process_samples=${5:?}
out=${6:?}
models=${7:-hgrn2,llama}
tasks=piqa,arc_easy,arc_challenge,hellaswag,winogrande,openbookqa,boolq,social_iqa,lambada_openai
work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
rows=()
for family in ${models//,/ }; do
  model=$family-1.3b
  rm -f "$work/port" "$work/store.sqlite"
  "$bin/hgeval-server" --model_root="$checkpoints" --device=cuda --dtype=bf16 \
    --listen=127.0.0.1:0 --port_file="$work/port" --store="$work/store.sqlite" \
    --data_dir="$data" --preload="$model" --log=false 2>"$work/server-$family.log" &
  server_pid=$!
  for _ in $(seq 1 600); do [[ -s $work/port ]] && break; sleep 0.5; done
  server=127.0.0.1:$(cat "$work/port")
  "$bin/hgeval" health --server="$server" --wait=600 >/dev/null
  "$bin/hgeval" run --server="$server" --model="$model" --tasks=lambada_standard --limit=20 \
    --progress=false --output="$work/warm.json" >/dev/null
  start=$(date +%s.%N)
  "$bin/hgeval" run --server="$server" --model="$model" --tasks="$tasks" --log_samples \
    --progress=false --output="$work/job-$family.json" >"$work/table-$family.txt"
  end=$(date +%s.%N)
  kill "$server_pid"; wait "$server_pid" || true; server_pid=
  cp "$work/job-$family.json" "$(dirname "$out")/job-$family.json" 2>/dev/null || true
  rows+=("$family $start $end $work/job-$family.json")
  awk -v s="$start" -v e="$end" -v f="$family" 'BEGIN { printf "[%s] suite as a server job: %.2f s\n", f, e - s }' >&2
done
python3 - "$in_process" "$in_process_samples" "$out" "${rows[@]}" <<'PY'
import json, sys
in_process = json.load(open(sys.argv[1]))
samples = json.load(open(sys.argv[2]))
out_path = sys.argv[3]
report = {"benchmark": "suite_server_bench (issue 18 acceptance 3)", "models": {}}
for row in sys.argv[4:]:
    family, start, end, path = row.split(" ")
    job = json.load(open(path))
    seconds = float(end) - float(start)
    inproc = in_process["models"][family]
    compared = different = 0
    for task, resps in samples[family].items():
        job_resps = [s["resps"] for s in job["samples"][task]]
        if len(job_resps) != len(resps):
            raise SystemExit(f"{family} {task}: {len(job_resps)} job samples, {len(resps)} in process")
        for a, b in zip(job_resps, resps):
            compared += 1
            different += a != b
    report["models"][family] = {
        "job_seconds": seconds,
        "in_process_seconds": inproc["suite_seconds"],
        "job_over_in_process": seconds / inproc["suite_seconds"],
        "samples_compared": compared,
        "samples_different": different,
        "requests_computed": job.get("hgeval_job", {}).get("requests_computed"),
        "requests_cached": job.get("hgeval_job", {}).get("requests_cached"),
    }
    print(f"[{family}] job {seconds:.2f} s, in process {inproc['suite_seconds']:.2f} s "
          f"(x{seconds / inproc['suite_seconds']:.3f}); samples {compared}, {different} differ",
          file=sys.stderr)
json.dump(report, open(out_path, "w"), indent=2)
PY
