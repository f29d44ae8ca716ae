#!/usr/bin/env python3
"""The PyTorch peers of bench/cuda/cuda_bench, measured in the same device call (issue 16).

Builds fla's HGRN2ForCausalLM and transformers' LlamaForCausalLM (SDPA attention) from the
config.json files `cuda_bench --configs_out DIR` wrote (random weights, bf16, timing only)
and measures cuda_bench's rows the same way:
  - score_BxT_tok_s: B random sequences of T tokens, every position scored (logits,
    fp32 log_softmax, the target's log-prob gathered), median of 3 after a warm-up;
  - prefill_{16k,64k}_ms / _peak_gib: one sequence, the state kept for later decoding
    (use_cache=True, as hgeval keeps its state), only the last position's logits; peak =
    torch.cuda.max_memory_allocated (weights included, as hgeval's peak_device_bytes);
    LLaMA also without its KV cache (prefill_*_nocache_*: a scoring-only pass);
  - decode_b{1,32}_tok_s: greedy steps after a 512-token prompt, 3 warm-up steps, 64 timed;
  - niah_paper_grid_s (--niah_models): lm-eval/HF style, each of the 35 x 35 cells of the
    paper grid is one model.generate call (32 greedy tokens, no prefix reuse). One cell per
    context length is timed (the 35 depths of a length feed the same number of tokens), and
    the grid's time is 35 x their sum: an estimate, recorded as such.
With --hgeval (cuda_bench's JSON) and --niah_hgeval (niah_cuda_bench's), writes one JSON
holding both sides, the ratio (> 1: hgeval is better, for every row) and issue 16's target.

Usage (GPU machine; fla's package on PYTHONPATH):
  kernel_peer.py --configs DIR --hgeval cuda.json --niah_hgeval niah.json --out all.json
"""
import argparse
import datetime
import inspect
import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

from suite_peer import build_model  # the same two peers, built the same way

# Issue 16's targets: (family, row) -> (bound, "min" for throughput, "max" for time/memory).
TARGETS = {
    ("hgrn2", "score_8x2048_tok_s"): (200_000, "min"),
    ("hgrn2", "score_32x512_tok_s"): (200_000, "min"),
    ("hgrn2", "prefill_64k_ms"): (300, "max"),
    ("hgrn2", "prefill_64k_peak_gib"): (4, "max"),
    ("hgrn2", "decode_b1_tok_s"): (1_000, "min"),
    ("llama", "score_8x2048_tok_s"): (200_000, "min"),
    ("llama", "prefill_64k_ms"): (700, "max"),
    ("llama", "prefill_64k_peak_gib"): (6, "max"),
    ("llama", "niah_paper_grid_s"): (60, "max"),
}


def sync():
    torch.cuda.synchronize()


def last_only_kwargs(model):
    """Ask for the last position's logits only, under whichever name this version uses."""
    params = inspect.signature(model.forward).parameters
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if name in params:
            return {name: 1}
    return {}


def random_tokens(vocab, *shape):
    return torch.randint(3, vocab, shape, device="cuda")


def score_tok_s(model, vocab, batch, length, repeats):
    ids, targets = random_tokens(vocab, batch, length), random_tokens(vocab, batch, length)
    times = []
    for r in range(repeats + 1):
        sync()
        t0 = time.perf_counter()
        logits = model(ids, use_cache=False).logits
        lp = F.log_softmax(logits.float(), dim=-1).gather(-1, targets[..., None])
        sync()
        if r > 0:
            times.append(time.perf_counter() - t0)
        del logits, lp
    return batch * length / statistics.median(times) if times else 0.0


def prefill(model, vocab, length, repeats, use_cache):
    ids = random_tokens(vocab, 1, length)
    extra = last_only_kwargs(model)
    times, peak = [], 0.0
    for r in range(repeats + 1):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        sync()
        t0 = time.perf_counter()
        out = model(ids, use_cache=use_cache, **extra)
        lp = F.log_softmax(out.logits[:, -1].float(), dim=-1)
        sync()
        if r > 0:
            times.append(time.perf_counter() - t0)
        peak = max(peak, torch.cuda.max_memory_allocated() / 2**30)
        del out, lp
    return (statistics.median(times) * 1e3 if times else 0.0), peak


def decode_tok_s(model, vocab, batch, steps):
    extra = last_only_kwargs(model)
    out = model(random_tokens(vocab, batch, 512), use_cache=True, **extra)
    cache = out.past_key_values
    nxt = out.logits[:, -1].argmax(-1)

    def step(nxt, cache):
        o = model(nxt[:, None], past_key_values=cache, use_cache=True)
        return o.logits[:, -1].argmax(-1), o.past_key_values

    for _ in range(3):
        nxt, cache = step(nxt, cache)
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        nxt, cache = step(nxt, cache)
    nxt.cpu()  # the last token read back, as hgeval reads each step's argmax
    return batch * steps / (time.perf_counter() - t0)


def niah_grid_estimate(model, vocab, lengths_used=35, new_tokens=32):
    lengths = [round(1000 + i * (16000 - 1000) / 34) for i in range(35)][-lengths_used:]
    per_length = []
    model.generate(random_tokens(vocab, 1, 1000), max_new_tokens=4, do_sample=False,
                   pad_token_id=0)  # warm-up
    for n in lengths:
        ids = random_tokens(vocab, 1, n)
        sync()
        t0 = time.perf_counter()
        model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                       do_sample=False, pad_token_id=0)
        sync()
        per_length.append(time.perf_counter() - t0)
    return {"niah_paper_grid_s": 35 * sum(per_length),
            "niah_paper_grid_estimated_from": "one timed cell per context length x 35 depths",
            "niah_seconds_per_length": dict(zip(map(str, lengths), per_length))}


def measure(family, config, niah, skip_64k, warmup=False, on_row=lambda r: None):
    """Every row of one family. warmup: a one-layer model through every row once, so that
    Triton compiles and autotunes fla's kernels for these shapes (its cache then serves the
    timed run; a cold compile takes minutes)."""
    if warmup:
        config = dict(config, num_hidden_layers=1)
    model = build_model(family, config)
    vocab = config["vocab_size"]
    reps = 0 if warmup else 3
    r = {"params": sum(p.numel() for p in model.parameters())}

    def run(name, fn):
        t0 = time.perf_counter()
        try:
            value = fn()
        except Exception as e:  # one failed row is recorded; the others still run
            traceback.print_exc()
            r[name + "_error"] = f"{type(e).__name__}: {e}"
            torch.cuda.empty_cache()
            return
        if isinstance(value, dict):
            r.update(value)
        elif isinstance(value, tuple):
            r[name + "_ms"], r[name + "_peak_gib"] = value
        else:
            r[name] = value
        print(f"[{family}] {name}: {value if not isinstance(value, dict) else '...'} "
              f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
        on_row(r)

    with torch.no_grad():
        run("score_8x2048_tok_s", lambda: score_tok_s(model, vocab, 8, 2048, reps))
        run("score_32x512_tok_s", lambda: score_tok_s(model, vocab, 32, 512, reps))
        run("prefill_16k", lambda: prefill(model, vocab, 16384, reps, True))
        if not skip_64k:
            run("prefill_64k", lambda: prefill(model, vocab, 65536,
                                               min(reps, 1 if family == "llama" else 3), True))
        if family == "llama":
            run("prefill_16k_nocache", lambda: prefill(model, vocab, 16384, reps, False))
            if not skip_64k:
                run("prefill_64k_nocache", lambda: prefill(model, vocab, 65536, min(reps, 1), False))
        steps = 2 if warmup else 64
        run("decode_b1_tok_s", lambda: decode_tok_s(model, vocab, 1, steps))
        run("decode_b32_tok_s", lambda: decode_tok_s(model, vocab, 32, steps))
        if niah:
            run("niah", lambda: niah_grid_estimate(model, vocab, 2 if warmup else 35))
    del model
    torch.cuda.empty_cache()
    return r


def ratio(row, ours, peer):
    """> 1 means hgeval is better: throughput ours/peer, time and memory peer/ours."""
    if not ours or not peer:
        return None
    return ours / peer if row.endswith("tok_s") else peer / ours


def combine(hgeval, niah_hgeval, peers):
    rows = {}
    for family, peer in peers.items():
        ours = dict(hgeval.get("models", {}).get(family, {}))
        if niah_hgeval and family in niah_hgeval.get("models", {}):
            runs = niah_hgeval["models"][family]["runs"]
            ours["niah_paper_grid_s"] = min(run["sweep_wall_seconds"] for run in runs)
        for key, value in peer.items():
            if not isinstance(value, (int, float)) or key == "params" or key not in ours:
                continue
            entry = {"hgeval": ours[key], "peer": value, "ratio": ratio(key, ours[key], value)}
            if (family, key) in TARGETS:
                bound, kind = TARGETS[(family, key)]
                entry["target"] = (">= " if kind == "min" else "<= ") + str(bound)
                entry["met"] = ours[key] >= bound if kind == "min" else ours[key] <= bound
            rows.setdefault(family, {})[key] = entry
    return rows


def versions():
    out = {"torch": torch.__version__, "python": sys.version.split()[0]}
    for name in ("transformers", "fla", "triton"):
        try:
            out[name] = getattr(__import__(name), "__version__", "unknown")
        except Exception as e:  # recorded, not fatal: the peer that needs it fails alone
            out[name] = f"unavailable ({type(e).__name__})"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", required=True, help="cuda_bench --configs_out folder")
    ap.add_argument("--models", default="hgrn2,llama")
    ap.add_argument("--niah_models", default="llama", help="peers to time on the NIAH grid")
    ap.add_argument("--hgeval", default="", help="cuda_bench's JSON, same call")
    ap.add_argument("--niah_hgeval", default="", help="niah_cuda_bench's JSON, same call")
    ap.add_argument("--skip_64k", action="store_true")
    ap.add_argument("--warmup", action="store_true",
                    help="only compile fla's Triton kernels for these shapes (one layer, one pass)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    peers = {}
    for family in args.models.split(","):
        with open(os.path.join(args.configs, family + "_config.json")) as f:
            config = json.load(f)
        def on_row(rows, family=family):
            if not args.warmup:  # what is measured so far survives a timeout
                peers[family] = rows
                write_report(args, peers)

        peers[family] = measure(family, config, family in args.niah_models.split(","),
                                args.skip_64k, args.warmup, on_row)
    if not args.warmup:
        write_report(args, peers, final=True)


def write_report(args, peers, final=False):
    report = {"date": datetime.date.today().isoformat(),
              "gpu": torch.cuda.get_device_name(0), "dtype": "bf16",
              "weights": "random (timing only)", "versions": versions(),
              "ratio_meaning": "> 1: hgeval better (throughput hgeval/peer; ms and GiB peer/hgeval)",
              "peers": {"hgrn2": "fla HGRN2ForCausalLM", "llama": "transformers LlamaForCausalLM, SDPA"},
              "peer": peers}
    hgeval = niah = None
    if args.hgeval:
        with open(args.hgeval) as f:
            hgeval = json.load(f)
        report["hgeval"] = hgeval
    if args.niah_hgeval:
        with open(args.niah_hgeval) as f:
            niah = json.load(f)
        report["hgeval_niah"] = niah
    if hgeval or niah:
        report["rows"] = combine(hgeval or {}, niah, peers)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    if not final:
        return
    for family, rows in report.get("rows", {}).items():
        for key, e in rows.items():
            goal = f"  target {e['target']}: {'met' if e['met'] else 'MISSED'}" if "target" in e else ""
            r = f"{e['ratio']:.2f}x" if e["ratio"] else "-"
            print(f"{family:6s} {key:26s} hgeval {e['hgeval']:12.1f}  peer {e['peer']:12.1f}  {r}{goal}")


if __name__ == "__main__":
    main()
