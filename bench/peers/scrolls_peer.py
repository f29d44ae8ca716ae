#!/usr/bin/env python3
"""The PyTorch peer of suite_cuda_bench's SCROLLS generation tasks (issue "Bounded memory").

Generates from the same prompts (token ids as the engine built them: lm-eval's left
truncation to max_length - max_gen_toks) the way lm-evaluation-harness's HF backend does
(lm_eval/models/huggingface.py, generate_until -> _model_generate):
  - requests ordered longest prompt first (its Collator's sort key);
  - batches of --batch_size prompts, left-padded, with an attention mask;
  - model.generate(do_sample=False, max_new_tokens=max_gen_toks, use_cache=True), stopping
    when every row has emitted EOS (random weights: the stop strings, which need the
    decoded text, are left out on both sides' timing alike: they rarely fire);
  - the new tokens read back to the host per batch.
Models: fla's HGRN2ForCausalLM and transformers' LlamaForCausalLM (SDPA), built from the
config.json files suite_cuda_bench wrote, random weights in bf16 (timing only), as
bench/peers/suite_peer.py builds them.

Usage (on the GPU machine; fla's package on PYTHONPATH):
  scrolls_peer.py --requests DIR --models hgrn2,llama --tasks scrolls_qmsum,scrolls_contractnli \
      --out scrolls-peer.json
"""
import argparse
import json
import os
import time

import torch

from suite_peer import build_model, load_requests, score_task


def generate_task(model, requests, batch_size, pad_id, eos_id):
    order = sorted(range(len(requests)), key=lambda i: -len(requests[i]["prompt"]))
    generated = 0
    fed = 0
    with torch.inference_mode():
        for b0 in range(0, len(order), batch_size):
            batch = [requests[i] for i in order[b0:b0 + batch_size]]
            width = max(len(r["prompt"]) for r in batch)
            ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, r in enumerate(batch):
                ids[row, width - len(r["prompt"]):] = torch.tensor(r["prompt"])
                mask[row, width - len(r["prompt"]):] = 1
                fed += len(r["prompt"])
            max_new = max(r["max_gen_toks"] for r in batch)
            out = model.generate(input_ids=ids.cuda(), attention_mask=mask.cuda(),
                                 max_new_tokens=max_new, do_sample=False, use_cache=True,
                                 pad_token_id=pad_id, eos_token_id=eos_id)
            new = out[:, width:].cpu()
            generated += int((new != pad_id).sum())
    torch.cuda.synchronize()
    return fed, generated


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", required=True)
    parser.add_argument("--models", default="hgrn2,llama")
    parser.add_argument("--tasks", default="scrolls_qmsum,scrolls_contractnli")
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    requests = load_requests(args.requests, tasks)
    report = {"benchmark": "scrolls_peer (lm-eval HF generate_until)",
              "batch_size": args.batch_size, "gpu": torch.cuda.get_device_name(0),
              "torch": torch.__version__, "models": {}}
    for family in args.models.split(","):
        with open(os.path.join(args.requests, family + "_config.json")) as f:
            config = json.load(f)
        model = build_model(family, config)
        pad_id = config.get("pad_token_id") or 0
        eos_id = config.get("eos_token_id", 2)
        # Warm-up: one small batch (kernels, autotuning).
        generate_task(model, requests[tasks[0]][:2], 2, pad_id, eos_id)
        torch.cuda.reset_peak_memory_stats()
        rows = {}
        total = 0.0
        for task in tasks:
            start = time.time()
            if requests[task] and "prompt" in requests[task][0]:
                fed, generated = generate_task(model, requests[task], args.batch_size, pad_id,
                                               eos_id)
            else:
                # A multiple-choice task (contractnli): lm-eval's HF loglikelihood loop.
                _, fed = score_task(model, requests[task], config.get(
                    "max_position_embeddings", 2048), args.batch_size)
                generated = 0
            seconds = time.time() - start
            total += seconds
            rows[task] = {"seconds": seconds, "requests": len(requests[task]),
                          "prompt_tokens": fed, "generated_tokens": generated}
            print(f"[{family}] {task}: {seconds:.2f} s, {len(requests[task])} requests, "
                  f"{fed} prompt tokens, {generated} generated", flush=True)
        report["models"][family] = {
            "tasks": rows, "seconds": total,
            "peak_gib": torch.cuda.max_memory_allocated() / 2**30}
        print(f"[{family}] scrolls peer {total:.2f} s, peak "
              f"{report['models'][family]['peak_gib']:.2f} GiB", flush=True)
        del model
        torch.cuda.empty_cache()
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
