#!/usr/bin/env python3
"""CPU greedy decoding: hgeval-engine against llama2.c's run.c (issue 16 item 5).

Builds llama2.c's run.c (a yardstick kept outside the repository: its path is an argument,
nothing of it is copied here) into a temporary folder with gcc -Ofast -march=native, once
with -fopenmp and once without, then decodes the bundled stories260K greedily (temperature
0, from BOS, the same number of steps) with both programs, one thread and all threads,
several repetitions interleaved so that a burst of load on the machine hits both alike.
Both programs print every token as it comes and time from the second step on; run.c
reports (steps - 1) / elapsed with a millisecond clock, hgeval-engine the same quotient
with a steady clock (`generate --stats`). The best of the repetitions counts for each, and
the JSON keeps every run.

Usage (from the repository root, after building hgeval-engine):
  bench/cpu_decode_bench.py --llama2c ../shared/anchors/llama2c/run.c \\
      --out bench/results/cpu-decode-HOST-DATE.json
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--llama2c", required=True, help="path to llama2.c's run.c")
    p.add_argument("--engine", default=os.path.join(REPO, "build/engine/tools/hgeval-engine"),
                   help="the hgeval-engine binary")
    p.add_argument("--model_dir", default=os.path.join(REPO, "data/models/stories260K"),
                   help="folder with stories260K.bin, tok512.bin and greedy_output_t0_n256.txt")
    p.add_argument("--steps", type=int, default=256,
                   help="forward passes, as run.c's -n (the first one, from BOS, is not timed)")
    p.add_argument("--repetitions", type=int, default=15, help="runs of each program and mode")
    p.add_argument("--cc", default="gcc", help="C compiler for run.c")
    p.add_argument("--out", help="write the JSON here (default: stdout)")
    return p.parse_args()


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def cpu_flags(wanted):
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return [flag for flag in wanted if flag in have]
    return []


def kernel_clone():
    """The instruction set whose clone of the CPU kernels GCC's resolver picks here
    (engine/cpu/vec8.h: x86-64-v4, else AVX2, else generic)."""
    v4 = ["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"]
    have = cpu_flags(v4 + ["avx2"])
    if all(flag in have for flag in v4):
        return "x86-64-v4 (AVX-512)"
    return "avx2" if "avx2" in have else "generic x86-64"


def git_commit():
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run(cmd, env=None):
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        sys.exit(f"cpu_decode_bench: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout, proc.stderr


def build_llama2c(source, cc, folder):
    """run.c built twice: with OpenMP (OMP_NUM_THREADS picks the threads) and without."""
    binaries = {}
    for name, extra in (("openmp", ["-fopenmp"]), ("serial", [])):
        out = os.path.join(folder, f"run_{name}")
        run([cc, "-Ofast", "-march=native", *extra, source, "-lm", "-o", out])
        binaries[name] = out
    return binaries


def llama2c_once(binary, model_dir, steps, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cmd = [binary, os.path.join(model_dir, "stories260K.bin"), "-z",
           os.path.join(model_dir, "tok512.bin"), "-t", "0.0", "-n", str(steps)]
    stdout, stderr = run(cmd, env)
    m = re.search(r"achieved tok/s: ([0-9.]+)", stderr)
    if not m:
        sys.exit(f"cpu_decode_bench: no 'achieved tok/s' in run.c's output:\n{stderr}")
    return float(m.group(1)), stdout.rstrip("\n")


def hgeval_once(engine, model_dir, steps, threads):
    # From BOS alone every forward pass yields one token, so run.c's -n steps is
    # --max_tokens steps; both time steps 2..steps.
    cmd = [engine, "generate", "--model", os.path.join(model_dir, "stories260K.bin"),
           "--threads", str(threads), "--max_tokens", str(steps), "--temperature", "0",
           "--stats"]
    stdout, stderr = run(cmd)
    m = re.search(r"then ([0-9.]+) tok/s", stderr)
    if not m:
        sys.exit(f"cpu_decode_bench: no tok/s in hgeval-engine's --stats line:\n{stderr}")
    return float(m.group(1)), stdout.rstrip("\n")


def expected_text(model_dir, steps):
    """llama2.c's recorded greedy output, when the run matches how it was made."""
    path = os.path.join(model_dir, "greedy_output_t0_n256.txt")
    if steps != 256 or not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read()
    cut = text.find("achieved tok/s")
    return (text[:cut] if cut >= 0 else text).rstrip("\n")


def summary(rates):
    return {"best_tok_s": max(rates), "median_tok_s": sorted(rates)[len(rates) // 2],
            "runs_tok_s": rates}


def main():
    args = parse_args()
    if args.steps < 2:
        sys.exit("cpu_decode_bench: --steps must be >= 2 (the first step is not timed)")
    if args.repetitions < 1:
        sys.exit("cpu_decode_bench: --repetitions must be >= 1")
    for path in (args.llama2c, args.engine):
        if not os.path.exists(path):
            sys.exit(f"cpu_decode_bench: {path} not found")
    cores = os.cpu_count() or 1
    modes = {"one_thread": 1, "all_threads": cores}
    load_before = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="cpu_decode_bench_") as folder:
        binaries = build_llama2c(os.path.abspath(args.llama2c), args.cc, folder)
        rates = {"hgeval": {m: [] for m in modes},
                 "llama2c_openmp": {m: [] for m in modes},
                 "llama2c_serial": {"one_thread": []}}
        texts = {"hgeval": set(), "llama2c": set()}
        for _ in range(args.repetitions):
            for mode, threads in modes.items():
                rate, text = llama2c_once(binaries["openmp"], args.model_dir, args.steps,
                                          threads)
                rates["llama2c_openmp"][mode].append(rate)
                texts["llama2c"].add(text)
                if threads == 1:
                    rate, text = llama2c_once(binaries["serial"], args.model_dir, args.steps, 1)
                    rates["llama2c_serial"]["one_thread"].append(rate)
                    texts["llama2c"].add(text)
                # hgeval-engine's --threads 0 is every core, as OMP's default.
                rate, text = hgeval_once(args.engine, args.model_dir, args.steps,
                                         0 if threads == cores else threads)
                rates["hgeval"][mode].append(rate)
                texts["hgeval"].add(text)

    expected = expected_text(args.model_dir, args.steps)
    llama2c_text = next(iter(texts["llama2c"]))
    result = {
        "benchmark": "cpu_decode_bench: greedy decoding of stories260K, hgeval-engine vs "
                     "llama2.c run.c",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpu_model": cpu_model(),
            "logical_cpus": cores,
            "isa": cpu_flags(["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw",
                              "avx512vl"]),
            "load_average_before": [round(v, 2) for v in load_before],
            "load_average_after": [round(v, 2) for v in os.getloadavg()],
            # With other work on the cores (load average >= 1) threads lose their time
            # slices, OpenMP's spinning ones most: all-threads numbers are then unreliable.
            "quiet": max(load_before[0], os.getloadavg()[0]) < 1.0,
        },
        "workload": {
            "model": "data/models/stories260K/stories260K.bin",
            "prompt": "(BOS only)",
            "steps": args.steps,
            "timed_tokens": args.steps - 1,
            "temperature": 0,
        },
        "method": f"best of {args.repetitions} runs per program and mode, interleaved; "
                  "llama2.c one thread = the better of its -fopenmp build with "
                  "OMP_NUM_THREADS=1 and its build without OpenMP; all threads = "
                  f"OMP_NUM_THREADS={cores} and hgeval-engine --threads 0. run.c's "
                  "tok/s comes from a millisecond clock.",
        "llama2c": {
            "source": os.path.abspath(args.llama2c),
            "source_sha256": sha256(args.llama2c),
            "compile": f"{args.cc} -Ofast -march=native [-fopenmp] run.c -lm",
            "openmp_build": {m: summary(r) for m, r in rates["llama2c_openmp"].items()},
            "serial_build": {m: summary(r) for m, r in rates["llama2c_serial"].items()},
        },
        "hgeval": {
            "binary": os.path.relpath(os.path.abspath(args.engine), REPO),
            "commit": git_commit(),
            "kernel_clone": kernel_clone(),
            "command": f"hgeval-engine generate --model stories260K.bin --threads N "
                       f"--max_tokens {args.steps} --temperature 0 --stats",
            **{m: summary(r) for m, r in rates["hgeval"].items()},
        },
        "greedy_text": {
            "hgeval_equals_llama2c": texts["hgeval"] == texts["llama2c"]
                                     and len(texts["llama2c"]) == 1,
            "llama2c_equals_recorded": None if expected is None else llama2c_text == expected,
            "distinct_texts": {k: len(v) for k, v in texts.items()},
        },
    }
    llama_one = max(result["llama2c"]["openmp_build"]["one_thread"]["best_tok_s"],
                    result["llama2c"]["serial_build"]["one_thread"]["best_tok_s"])
    llama_all = result["llama2c"]["openmp_build"]["all_threads"]["best_tok_s"]
    result["best_tok_s"] = {
        "hgeval_one_thread": result["hgeval"]["one_thread"]["best_tok_s"],
        "llama2c_one_thread": llama_one,
        "hgeval_all_threads": result["hgeval"]["all_threads"]["best_tok_s"],
        "llama2c_all_threads": llama_all,
    }
    result["ratio_hgeval_over_llama2c"] = {
        "one_thread": round(result["hgeval"]["one_thread"]["best_tok_s"] / llama_one, 3),
        "all_threads": round(result["hgeval"]["all_threads"]["best_tok_s"] / llama_all, 3),
    }
    text = json.dumps(result, indent=2) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if not result["greedy_text"]["hgeval_equals_llama2c"]:
        sys.exit("cpu_decode_bench: hgeval's greedy text differs from llama2.c's")


if __name__ == "__main__":
    main()
