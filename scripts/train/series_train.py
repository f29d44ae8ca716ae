#!/usr/bin/env python3
"""Trains the demonstration checkpoint series of `hgeval sweep` (docs/series.md): small
LLaMA and HGRN2 causal LMs on pd_english (../shared/corpora/pd_english.txt.gz), several
widths per architecture, each run saving checkpoints at a fixed ladder of token counts.

Runs on a machine with PyTorch and numpy (a GPU is strongly advised), from the repository
root. The models are mqar_train.py's: LLaMA in the Hugging Face layout, HGRN2 in plain
PyTorch with fla's layout and maths (fla_recurrent_models.py); 2 layers, gated MLP of
4 x width (HGRN2: heads of width min(d, 64), no short convolutions), tied embeddings, vocabulary 512 (the stories260K llama2.c tokenizer,
data/models/stories260K/tok512.bin, which the engine reads from each checkpoint folder).

The token axis is the intermediate checkpoints of one run per size, not separate runs:
after a linear warmup of WARMUP steps the learning rate stays constant (no decay), so a
checkpoint after D tokens is a run of D tokens without its cool-down. A run stops at
--time-limit seconds; the checkpoints it reached are written, the others are not, so
larger models may have fewer points (series.json says what exists).

Input: --tokens, the training token ids as little-endian uint16 (.u16, or .u16.xz),
documents each starting with BOS (1); made on the CPU by scripts/train/series_tokens.py
(the engine's own tokenizer, so training and evaluation tokenize alike), which also
writes the held-out documents that the `pd_english_heldout` task reads.

  series_train.py --tokens T.u16.xz --arch llama --d-model 128 --time-limit 200 --out OUT

Output: OUT/<arch>_d<d>_t<tokens>/{config.json,model.safetensors} (BF16) and
OUT/<arch>_d<d>_train.json (the loss log, steps, tokens and N of each checkpoint).
"""
import argparse
import json
import lzma
import os
import sys
import time

PROGRAM_START = time.time()

import numpy as np  # noqa: E402

for folder in (os.path.dirname(os.path.abspath(__file__)), os.path.join(os.getcwd(), "scripts", "train")):
    sys.path.insert(0, folder)
import mqar_train as mt  # noqa: E402

VOCAB = 512
WARMUP = 100
# Checkpoints after this many tokens (a geometric ladder, factor 2).
TOKEN_LADDER = [2**k * 1_000_000 for k in range(0, 5)]  # 1M .. 16M


def hgrn2_config(d_model, seq_len):
    """fla's HGRN2 config as mqar_train's, with heads of width min(d, 64) (so that every
    width of the series divides into heads) and no short convolutions."""
    config = mt.frla.hgrn_config("hgrn2", d_model, VOCAB, 4, False, seq_len)
    config["expand_ratio"] = min(d_model, 64)
    config["num_heads"] = d_model // config["expand_ratio"]
    return config


def non_embedding_parameters(tensors):
    return int(sum(v.numel() for k, v in tensors.items() if "embed" not in k))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--arch", choices=["llama", "hgrn2"], required=True)
    ap.add_argument("--d-model", type=int, required=True)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--time-limit", type=float, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    device = "cuda" if torch.cuda.is_available() else "cpu"
    raw = open(args.tokens, "rb").read()
    if args.tokens.endswith(".xz"):
        raw = lzma.decompress(raw)
    data = torch.from_numpy(np.frombuffer(raw, "<u2").astype(np.int64)).to(device)

    mt.VOCAB = VOCAB
    if args.arch == "llama":
        model, config, tensors = mt.build_llama(torch, args.d_model, args.seq_len, 4)
    else:
        config = hgrn2_config(args.d_model, args.seq_len)
        model = mt.frla.torch_fla_model(torch, config, 16)
        tensors = lambda m: dict(m.state_dict())  # noqa: E731
    config["max_position_embeddings"] = args.seq_len
    model = model.to(device)
    n_params = non_embedding_parameters(tensors(model))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    gen = torch.Generator(device="cpu").manual_seed(1234 + args.seed)
    tokens_per_step = args.batch * args.seq_len
    name = f"{args.arch}_d{args.d_model}"
    log, saved, step, seen = [], [], 0, 0
    ladder = list(TOKEN_LADDER)
    start = time.time()
    while ladder and time.time() - start < args.time_limit:
        offsets = torch.randint(0, data.numel() - args.seq_len - 1, (args.batch,), generator=gen)
        index = offsets[:, None].to(device) + torch.arange(args.seq_len + 1, device=device)
        batch = data[index]
        lr = args.lr * min(1.0, (step + 1) / WARMUP)
        for group in opt.param_groups:
            group["lr"] = lr
        logits = model(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB).float(),
                                                 batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        seen += tokens_per_step
        if step % 50 == 0:
            log.append({"step": step, "tokens": seen, "loss": float(loss),
                        "seconds": round(time.time() - start, 1)})
        if seen >= ladder[0]:
            ladder.pop(0)
            folder = os.path.join(args.out, f"{name}_t{seen}")
            os.makedirs(folder, exist_ok=True)
            values = {k: v.detach().to(torch.bfloat16).float().cpu().numpy()
                      for k, v in tensors(model).items()}
            mt.write_safetensors(os.path.join(folder, "model.safetensors"), values, bf16=True)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(config, f, indent=2)
            saved.append({"name": os.path.basename(folder), "architecture": args.arch,
                          "d_model": args.d_model, "parameters": n_params, "tokens": seen,
                          "step": step, "train_loss": float(loss)})
            print(f"{name}: saved {folder} at step {step} ({time.time() - start:.0f}s)", flush=True)
    with open(os.path.join(args.out, f"{name}_train.json"), "w") as f:
        json.dump({"arch": args.arch, "d_model": args.d_model, "seq_len": args.seq_len,
                   "batch": args.batch, "lr": args.lr, "warmup": WARMUP, "steps": step,
                   "tokens": seen, "parameters_non_embedding": n_params,
                   "train_seconds": time.time() - start, "device": device,
                   "checkpoints": saved, "log": log}, f, indent=1)


if __name__ == "__main__":
    main()
