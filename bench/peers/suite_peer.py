#!/usr/bin/env python3
"""The PyTorch peer of bench/cuda/suite_cuda_bench (issue 18).

Scores the same tokenized loglikelihood requests the way lm-evaluation-harness's HF
backend (lm_eval/models/huggingface.py, _loglikelihood_tokens) does:
  - each request's input is (context + continuation)[-(max_length + 1):][:-1];
  - requests are ordered longest first (its Collator's sort key: -len(tokens), tokens);
  - with its default logits cache, requests that share a context and a one-token
    continuation are computed by one forward (group_by="contexts");
  - batches of --batch_size inputs, right-padded to the longest, one forward each;
  - log_softmax over the vocabulary, the continuation's slice gathered, the greedy check
    (argmax == continuation), each answer read back to the host as it is made.
Models: fla's HGRN2ForCausalLM and transformers' LlamaForCausalLM (SDPA attention), built
from the config.json files the benchmark wrote, random weights in bf16 (timing only).

Usage (on the GPU machine; fla's package unpacked on PYTHONPATH):
  suite_peer.py --requests DIR --models hgrn2,llama --out peer.json
DIR holds <task>.jsonl ({"context": [...], "continuation": [...]} per line) and
<family>_config.json, as suite_cuda_bench --requests_out DIR writes them.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F


def load_requests(folder, tasks):
    out = {}
    for task in tasks:
        with open(os.path.join(folder, task + ".jsonl")) as f:
            out[task] = [json.loads(line) for line in f if line.strip()]
    return out


def build_model(family, config):
    cfg = {k: v for k, v in config.items() if k not in ("model_type", "architectures")}
    torch.manual_seed(0)
    with torch.device("cuda"):
        if family == "hgrn2":
            from fla.models import HGRN2Config, HGRN2ForCausalLM

            model = HGRN2ForCausalLM(HGRN2Config(**cfg))
        else:
            from transformers import LlamaConfig, LlamaForCausalLM

            model = LlamaForCausalLM(LlamaConfig(**cfg, attn_implementation="sdpa"))
    return model.to(torch.bfloat16).eval()


def score_task(model, requests, max_length, batch_size):
    """lm-eval's _loglikelihood_tokens over one task's requests; returns answers and the
    number of tokens fed to the model (padding excluded)."""
    # The logits cache: requests whose continuation is one token and whose context is
    # the same share one forward.
    groups = {}
    order = []
    for i, r in enumerate(requests):
        if len(r["continuation"]) == 1:
            key = tuple(r["context"])
            if key in groups:
                groups[key].append(i)
                continue
            groups[key] = [i]
        order.append(i)

    def sort_key(i):
        toks = requests[i]["context"] + requests[i]["continuation"]
        return (-len(toks), tuple(toks))

    order.sort(key=sort_key)
    answers = [None] * len(requests)
    fed = 0
    with torch.inference_mode():
        for b0 in range(0, len(order), batch_size):
            batch = order[b0:b0 + batch_size]
            inps, lens = [], []
            for i in batch:
                r = requests[i]
                inp = (r["context"] + r["continuation"])[-(max_length + 1):][:-1]
                inps.append(inp)
                lens.append(len(inp))
            width = max(lens)
            ids = torch.zeros((len(batch), width), dtype=torch.long)
            for j, inp in enumerate(inps):
                ids[j, :len(inp)] = torch.tensor(inp, dtype=torch.long)
            fed += sum(lens)
            logits = model(ids.cuda()).logits
            multi = F.log_softmax(logits.float(), dim=-1)
            for j, i in enumerate(batch):
                r = requests[i]
                members = groups[tuple(r["context"])] if len(r["continuation"]) == 1 else [i]
                for m in members:
                    cont = requests[m]["continuation"]
                    n = len(cont)
                    row = multi[j, lens[j] - n:lens[j]]
                    cont_t = torch.tensor(cont, dtype=torch.long, device=row.device)
                    greedy = bool((row.argmax(dim=-1) == cont_t).all())
                    lp = float(row.gather(1, cont_t.unsqueeze(1)).sum())
                    answers[m] = (lp, greedy)
    return answers, fed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", required=True)
    ap.add_argument("--models", default="hgrn2,llama")
    ap.add_argument("--tasks", default="piqa,arc_easy,arc_challenge,hellaswag,winogrande,"
                    "openbookqa,boolq,social_iqa,lambada_openai")
    ap.add_argument("--batch_size", type=int, default=32)
    ap.add_argument("--max_length", type=int, default=2048)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    tasks = args.tasks.split(",")
    requests = load_requests(args.requests, tasks)
    report = {"peer": "lm-eval HF-backend loop (suite_peer.py)", "batch_size": args.batch_size,
              "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "models": {}}
    for family in args.models.split(","):
        with open(os.path.join(args.requests, family + "_config.json")) as f:
            config = json.load(f)
        model = build_model(family, config)
        # Warm-up (untimed), as the C++ benchmark does.
        score_task(model, requests["hellaswag"][:80], args.max_length, args.batch_size)
        torch.cuda.synchronize()
        rows, total, total_fed = {}, 0.0, 0
        for task in tasks:
            t0 = time.perf_counter()
            answers, fed = score_task(model, requests[task], args.max_length, args.batch_size)
            torch.cuda.synchronize()
            seconds = time.perf_counter() - t0
            rows[task] = {"seconds": seconds, "requests": len(answers), "tokens_fed": fed,
                          "tokens_per_second": fed / seconds}
            total += seconds
            total_fed += fed
            print(f"[peer {family}] {task:15s} {seconds:8.2f} s {fed:10d} tokens fed",
                  file=sys.stderr, flush=True)
        report["models"][family] = {"tasks": rows, "suite_seconds": total,
                                    "suite_tokens_fed": total_fed,
                                    "implementation": "fla HGRN2ForCausalLM" if family == "hgrn2"
                                    else "transformers LlamaForCausalLM (sdpa)"}
        print(f"[peer {family}] suite {total:.2f} s", file=sys.stderr, flush=True)
        del model
        torch.cuda.empty_cache()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
