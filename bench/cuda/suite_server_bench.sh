#!/usr/bin/env bash
# The paper's zero-shot suite as a server job on the GPU (issue 18, acceptance 3): serves
# the checkpoints that `suite_cuda_bench --save_checkpoints DIR` wrote with
# `hgeval-server --device cuda --dtype bf16`, runs the suite through `hgeval run` (one job,
# full sets) and times it from submit to results, then compares the job's metrics with the
# in-process run's (suite_cuda_bench's JSON): every acc, acc_norm and perplexity, as
# doubles. With SAMPLES_IN (suite_cuda_bench --samples_out of the same weights), an
# untimed second job with --log_samples (answered from the store the timed job filled, so
# it returns exactly what that job computed; GetJobResults streams the ~100 MB) gives every
# per-sample response, compared bitwise with the in-process run's.
#
# Usage: bench/cuda/suite_server_bench.sh BIN_DIR CHECKPOINTS_DIR DATA_DIR IN_PROCESS_JSON \
#            OUT_JSON [MODELS]
#   BIN_DIR: holds hgeval-server and hgeval; MODELS: comma-separated families (hgrn2,llama).
#   DEVICE (cuda), DTYPE (bf16) and LIMIT (0: full sets) must match the in-process run's;
#   KEEP_DIR, if set, receives each server's log and job results.
# Before the timed job an untimed warm-up job (lambada_standard, 20 docs: not in the suite,
# so no timed request is answered from the store) picks the GEMM algorithms and fills the
# device pool, as suite_cuda_bench's warm-up does.
set -euo pipefail
bin=${1:?usage: see the header}
checkpoints=${2:?}
data=${3:?}
in_process=${4:?}
out=${5:?}
models=${6:-hgrn2,llama}
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
  "$bin/hgeval-server" --model_root="$checkpoints" --device="${DEVICE:-cuda}" --dtype="${DTYPE:-bf16}" \
    --listen=127.0.0.1:0 --port_file="$work/port" --store="$work/store.sqlite" \
    --data_dir="$data" --preload="$model" 2>"$work/server-$family.log" &
  server_pid=$!
  for _ in $(seq 1 600); do [[ -s $work/port ]] && break; sleep 0.5; done
  server=127.0.0.1:$(cat "$work/port")
  "$bin/hgeval" health --server="$server" --wait=600 >/dev/null
  "$bin/hgeval" run --server="$server" --model="$model" --tasks=lambada_standard --limit=20 \
    --progress=false --output="$work/warm.json" >/dev/null
  start=$(date +%s.%N)
  timeout 900 "$bin/hgeval" run --server="$server" --model="$model" --tasks="$tasks" --limit="${LIMIT:-0}" \
    --progress=false --reconnect_for=30 --output="$work/job-$family.json" >"$work/table-$family.txt"
  end=$(date +%s.%N)
  samples=none
  if [[ -n ${SAMPLES_IN:-} ]]; then
    samples=$work/samples-$family.json
    timeout 300 "$bin/hgeval" run --server="$server" --model="$model" --tasks="$tasks" \
      --limit="${LIMIT:-0}" --progress=false --log_samples --output="$samples" >/dev/null
  fi
  kill "$server_pid"; wait "$server_pid" || true; server_pid=
  if [[ -n ${KEEP_DIR:-} ]]; then
    mkdir -p "$KEEP_DIR" && cp "$work/server-$family.log" "$work/job-$family.json" "$KEEP_DIR/"
  fi
  rows+=("$family $start $end $work/job-$family.json $samples")
  awk -v s="$start" -v e="$end" -v f="$family" 'BEGIN { printf "[%s] suite as a server job: %.2f s\n", f, e - s }' >&2
done
python3 - "$in_process" "$out" "${SAMPLES_IN:-none}" "${rows[@]}" <<'PY'
import json, sys
in_process = json.load(open(sys.argv[1]))
out_path = sys.argv[2]
in_process_samples = json.load(open(sys.argv[3])) if sys.argv[3] != "none" else None
report = {"benchmark": "suite_server_bench (issue 18 acceptance 3)", "models": {}}
failed = False
for row in sys.argv[4:]:
    family, start, end, path, samples_path = row.split(" ")
    job = json.load(open(path))
    seconds = float(end) - float(start)
    inproc = in_process["models"][family]
    compared = different = 0
    for task, row in inproc["tasks"].items():
        for metric in ("acc", "acc_norm", "perplexity"):
            if metric not in row:
                continue
            compared += 1
            if job["results"][task][metric + ",none"] != row[metric]:
                different += 1
                print(f"{family} {task} {metric}: job {job['results'][task][metric + ',none']!r}"
                      f" in process {row[metric]!r}", file=sys.stderr)
    report["models"][family] = {
        "job_seconds": seconds,
        "in_process_seconds": inproc["suite_seconds"],
        "job_over_in_process": seconds / inproc["suite_seconds"],
        "metrics_compared": compared,
        "metrics_different": different,
        "requests_computed": job.get("hgeval_job", {}).get("requests_computed"),
        "requests_cached": job.get("hgeval_job", {}).get("requests_cached"),
        "store_seconds": job.get("hgeval_job", {}).get("store_seconds"),
        "prepare_seconds": job.get("hgeval_job", {}).get("prepare_seconds"),
        "job_task_seconds": {t: w["seconds"] for t, w in job["hgeval"]["tasks"].items()},
        "in_process_task_seconds": {t: r["seconds"] for t, r in inproc["tasks"].items()},
    }
    print(f"[{family}] job {seconds:.2f} s, in process {inproc['suite_seconds']:.2f} s "
          f"(x{seconds / inproc['suite_seconds']:.3f}); metrics {compared}, {different} differ",
          file=sys.stderr)
    failed |= different > 0
    if samples_path != "none":
        job_samples = json.load(open(samples_path))["samples"]
        n = diff = 0
        for task, resps in in_process_samples[family].items():
            records = job_samples.get(task, [])
            if len(records) != len(resps):
                print(f"{family} {task}: {len(records)} job samples, {len(resps)} in process",
                      file=sys.stderr)
                diff += 1
            for record, resp in zip(records, resps):
                n += 1
                diff += record["resps"] != resp
        report["models"][family]["per_sample_responses_compared"] = n
        report["models"][family]["per_sample_responses_different"] = diff
        print(f"[{family}] per-sample responses, job vs in process: {n} compared, {diff} differ",
              file=sys.stderr)
        failed |= diff > 0 or n == 0
json.dump(report, open(out_path, "w"), indent=2)
sys.exit(1 if failed else 0)
PY
