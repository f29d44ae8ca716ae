#!/usr/bin/env python3
"""Trains small causal LMs on MQAR as in zoology's Figure 2 and exports checkpoints that
hgeval's engine loads (config.json + model.safetensors, float32), with the accuracy PyTorch
measured on the standard test sets.

Runs on a machine with PyTorch (a GPU is strongly advised). LLaMA is defined here (the
Hugging Face layout and maths); HGRN2 and HGRN1 come from fla (flash-linear-attention),
whose source must be importable (`--fla PATH` adds it to sys.path).

  mqar_train.py --arch hgrn2 --d-model 128 --setting 256,16 --out data/models/mqar
  mqar_train.py --arch llama --d-model 64 --setting 64,4 --lr 1e-3 --epochs 64 --out ...

Data: the train and test sets are zoology's (tests/tasks/mqar_reference.py, the numpy
generator that hgeval's parity test checks byte for byte against the C++ one): seeds from
zoology's prepare_data with DataConfig.seed 123 (one train and one test segment), V 8192,
100,000 train and 3,000 test examples, power_a 0.01, random_non_queries False.

Not written here: the trained checkpoints themselves (they need a GPU). This script has
not been run in hgeval's CI (no PyTorch there).

Departures from zoology's model: hgeval's engine runs the Hugging Face / fla block layout
(token mixer + gated MLP per layer); zoology's Figure-2 models use an Identity state
mixer (no MLP). The MLP here is kept small (--mlp-ratio, default 1).
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "tasks"))
from mqar_reference import mqar_examples  # noqa: E402

VOCAB = 8192
POWER_A = 0.01


def zoology_seeds(data_seed=123):
    """prepare_data's seeds for one train and one test segment."""
    np.random.seed(data_seed)
    train = int(np.random.randint(0, 2**31, size=1)[0])
    test = int(np.random.randint(2**31, 2**32, size=1)[0])
    return train, test


def write_safetensors(path, tensors, bf16=False):
    """name -> float32 numpy array, as a safetensors file (F32, or BF16 for values that
    are already bfloat16-representable: the top half of each float32, exactly)."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        values = np.ascontiguousarray(tensors[name], dtype="<f4")
        if bf16:
            bits = values.view("<u4")
            assert not (bits & 0xFFFF).any(), f"{name} is not bfloat16-representable"
            data = (bits >> 16).astype("<u2").tobytes()
        else:
            data = values.tobytes()
        header[name] = {"dtype": "BF16" if bf16 else "F32", "shape": list(values.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def build_llama(torch, d_model, seq_len, mlp_ratio):
    nn = torch.nn
    heads = max(1, d_model // 64)
    head_dim = d_model // heads
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": VOCAB, "hidden_size": d_model, "num_hidden_layers": 2,
        "num_attention_heads": heads, "num_key_value_heads": heads, "head_dim": head_dim,
        "intermediate_size": mlp_ratio * d_model, "hidden_act": "silu",
        # 512: the longest standard MQAR setting, so the engine evaluates all four
        # (the trained model never uses it: RoPE positions are computed on the fly).
        "max_position_embeddings": max(seq_len, 512), "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": True,
        "bos_token_id": 1, "eos_token_id": 2,
    }

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d_model))

        def forward(self, x):
            x32 = x.float()
            x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + config["rms_norm_eps"])
            return self.weight * x32.to(x.dtype)

    def rotate_half(x):
        a, b = x.chunk(2, dim=-1)
        return torch.cat((-b, a), dim=-1)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(d_model, heads * head_dim, bias=False)
            self.k_proj = nn.Linear(d_model, heads * head_dim, bias=False)
            self.v_proj = nn.Linear(d_model, heads * head_dim, bias=False)
            self.o_proj = nn.Linear(heads * head_dim, d_model, bias=False)

        def forward(self, x, cos, sin):
            b, t, _ = x.shape
            q, k, v = (p(x).view(b, t, heads, head_dim).transpose(1, 2)
                       for p in (self.q_proj, self.k_proj, self.v_proj))
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o_proj(y.transpose(1, 2).reshape(b, t, heads * head_dim))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            width = config["intermediate_size"]
            self.gate_proj = nn.Linear(d_model, width, bias=False)
            self.up_proj = nn.Linear(d_model, width, bias=False)
            self.down_proj = nn.Linear(width, d_model, bias=False)

        def forward(self, x):
            return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = RMSNorm()
            self.self_attn = Attention()
            self.post_attention_layernorm = RMSNorm()
            self.mlp = Mlp()

        def forward(self, x, cos, sin):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(VOCAB, d_model)
            self.layers = nn.ModuleList([Block() for _ in range(2)])
            self.norm = RMSNorm()

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = Body()
            inv = 1.0 / (config["rope_theta"] ** (torch.arange(0, head_dim, 2).float() / head_dim))
            self.register_buffer("inv_freq", inv, persistent=False)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device).float()
            freqs = torch.outer(pos, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos()[None, None], emb.sin()[None, None]
            x = self.model.embed_tokens(ids)
            for layer in self.model.layers:
                x = layer(x, cos, sin)
            # Tied output layer, as zoology ties it.
            return self.model.norm(x) @ self.model.embed_tokens.weight.t()

    model = Llama()
    for name, p in model.named_parameters():
        if p.dim() == 2:
            torch.nn.init.normal_(p, std=0.02)
    return model, config, lambda m: {k: v for k, v in m.state_dict().items()}


def build_fla(torch, arch, d_model, mlp_ratio):
    from fla.models import HGRN2Config, HGRN2ForCausalLM, HGRNConfig, HGRNForCausalLM
    # fla names its tied weights as a list; transformers >= 5 wants {target: source}.
    import transformers
    if int(transformers.__version__.split(".")[0]) >= 5:
        for cls in (HGRN2ForCausalLM, HGRNForCausalLM):
            if isinstance(getattr(cls, "_tied_weights_keys", None), list):
                cls._tied_weights_keys = {"lm_head.weight": "model.embeddings.weight"}
    common = dict(vocab_size=VOCAB, hidden_size=d_model, num_hidden_layers=2,
                  intermediate_size=mlp_ratio * d_model, tie_word_embeddings=True,
                  fuse_cross_entropy=False)
    if arch == "hgrn2":
        # The HGRN2 paper's MQAR mixer: expand_ratio min(d_model, 128).
        config = HGRN2Config(expand_ratio=min(d_model, 128), **common)
        model = HGRN2ForCausalLM(config)
    else:
        config = HGRNConfig(expand_ratio=1, use_lower_bound=True, **common)
        model = HGRNForCausalLM(config)

    def tensors(m):
        sd = m.state_dict()
        if m.config.tie_word_embeddings:
            sd.pop("lm_head.weight", None)
        return sd

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, ids):
            return self.inner(input_ids=ids).logits

    wrapper = Logits()
    return wrapper, config.to_dict(), lambda m: tensors(m.inner)


def accuracy(torch, model, inputs, labels, batch):
    """zoology's metric: per example mean of argmax == label over labelled positions."""
    model.eval()
    per_example = []
    with torch.no_grad():
        for i in range(0, len(inputs), batch):
            x, y = inputs[i:i + batch], labels[i:i + batch]
            pred = model(x).float().argmax(-1)
            mask = y != -100
            hits = ((pred == y) & mask).sum(-1).float() / mask.sum(-1).float()
            per_example.append(hits.cpu())
    model.train()
    return float(torch.cat(per_example).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", choices=["llama", "hgrn2", "hgrn"], required=True)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--setting", default="256,16", help="L,K")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--epochs", type=int, default=64)
    ap.add_argument("--batch", type=int, default=0, help="0: zoology's (512/256/128 by L)")
    ap.add_argument("--train-examples", type=int, default=100_000)
    ap.add_argument("--test-examples", type=int, default=3_000)
    ap.add_argument("--mlp-ratio", type=int, default=1)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0, help="torch init seed")
    ap.add_argument("--fla", default="", help="a folder holding fla's source")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="stop training after this many seconds (0: none); the epoch in "
                         "progress finishes")
    ap.add_argument("--bf16-weights", action="store_true",
                    help="round the final weights to bfloat16 and store them as BF16 (half "
                         "the size); the accuracy is measured on the rounded weights")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.fla:
        sys.path.insert(0, args.fla)
    import torch

    seq_len, pairs = (int(v) for v in args.setting.split(","))
    batch = args.batch or (512 if seq_len <= 128 else 256 if seq_len <= 256 else 128)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    train_seed, test_seed = zoology_seeds()
    x_train, y_train = mqar_examples(train_seed, seq_len, pairs, VOCAB, args.train_examples,
                                     POWER_A)
    x_test, y_test = mqar_examples(test_seed, seq_len, pairs, VOCAB, args.test_examples, POWER_A)
    to = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    x_train, y_train, x_test, y_test = to(x_train), to(y_train), to(x_test), to(y_test)

    if args.arch == "llama":
        model, config, export = build_llama(torch, args.d_model, seq_len, args.mlp_ratio)
    else:
        model, config, export = build_fla(torch, args.arch, args.d_model, args.mlp_ratio)
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr,
                                  weight_decay=args.weight_decay)
    steps = args.epochs * math.ceil(len(x_train) / batch)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    log = []
    start = time.time()
    for epoch in range(args.epochs):
        order = torch.randperm(len(x_train), device=device)
        total = 0.0
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            logits = model(x_train[idx])
            loss = torch.nn.functional.cross_entropy(
                logits.float().reshape(-1, VOCAB), y_train[idx].reshape(-1), ignore_index=-100)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            total += float(loss) * len(idx)
        acc = accuracy(torch, model, x_test, y_test, batch)
        log.append({"epoch": epoch, "train_loss": total / len(x_train), "test_accuracy": acc,
                    "seconds": time.time() - start})
        print(json.dumps(log[-1]), flush=True)
        if acc >= 0.99:  # zoology's early stop
            break
        if args.time_limit and time.time() - start > args.time_limit:
            print(f"time limit reached after epoch {epoch}", flush=True)
            break

    if args.bf16_weights:
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.bfloat16().float())

    # The accuracy the engine must reproduce: the final float32 weights on the full test
    # set (the same examples as hgeval's mqar task for this setting).
    final = accuracy(torch, model, x_test, y_test, batch)
    name = f"{args.arch}_d{args.d_model}_L{seq_len}_K{pairs}"
    out = os.path.join(args.out, name)
    os.makedirs(out, exist_ok=True)
    tensors = {k: v.detach().float().cpu().numpy() for k, v in export(model).items()}
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, bf16=args.bf16_weights)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, default=str)
    with open(os.path.join(out, "mqar_train.json"), "w") as f:
        json.dump({"args": vars(args), "train_seed": train_seed, "test_seed": test_seed,
                   "vocab_size": VOCAB, "power_a": POWER_A,
                   "test_accuracy_pytorch": {f"acc_L{seq_len}_K{pairs}": final},
                   "log": log}, f, indent=2)
    print(f"wrote {out}: test accuracy {final:.4f}")


if __name__ == "__main__":
    main()
