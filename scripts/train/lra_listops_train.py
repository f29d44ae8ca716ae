#!/usr/bin/env python3
"""Trains a small bidirectional HGRN2 ListOps classifier (specs/niah-mqar-lra.md C.2, as
hgeval's engine computes it: engine/cpu/lra_classifier.cc, docs/lra.md) on LRA-style
ListOps and exports it in the engine's layout, with PyTorch's logits and accuracy.

Needs PyTorch, numpy and safetensors (a GPU strongly advised; no fla). Full run, about 6
minutes on one H100/H200:

  python3 scripts/train/lra_listops_train.py --out data/models/lra/listops_hgrn2

Quick check of the script (tiny model, a few steps, minutes on a CPU):

  python3 scripts/train/lra_listops_train.py --smoke --out /tmp/lra_smoke

Data: LRA's generator (lra_benchmarks/data/listops.py: depth 10, 10 arguments, 500 <
length < 2000) drawn from random.Random(seed), trees kept in the order drawn without
duplicates: exactly what hgeval's tasks/lra/listops_generator.cc produces for the same
seed, so the engine-side test regenerates the test split instead of storing it. The test
split is the bundled data/lra/listops/basic_test.tsv.gz (seed 2222, 2,000 examples); train
trees equal to a test tree are dropped.

Tokens: '(' and ')' deleted, whitespace split; ids from a fixed vocabulary (<pad>, <unk>,
<eos>, digits, operators, ']'), EOS appended (OL/S4's ListOps pipeline).

Model (one departure from OL: padding never reaches a real position; pad positions get
gate 1 and input 0, so a sequence's logits do not depend on the batch's padding and the
engine can run each sequence at its own length): embedding, + sinusoidal positions (table
in float64, rounded to float32), n x pre-norm [BiHGRN2 token mixer, GLU], final norm,
mean over real positions, linear head. BatchNorm (OL "synbatch" on one GPU) keeps its
running statistics for evaluation. Lower bounds: softmax over layers, cumsum minus the
first row (layer 0 gets 0).

Outputs in --out: config.json, model.safetensors (float32), lra_vocab.json,
expected_logits.safetensors (float32 logits [100, 10] of the first 100 test examples, each
run alone in float64, and their int64 labels), lra_listops_train.json (arguments, seeds,
accuracies, timings), train_log.txt.
"""
import argparse
import json
import math
import os
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

OPERATORS = ["[MIN", "[MAX", "[MED", "[SM"]
VOCAB = ["<pad>", "<unk>", "<eos>"] + [str(d) for d in range(10)] + OPERATORS + ["]"]
PAD, EOS = 0, 2
TEST_SEED, TRAIN_SEED = 2222, 1111


# ---- data: LRA's generate_tree, in its draw order -------------------------------------
def generate_tree(depth, max_depth, max_args, rng):
    r = rng.random() if depth < max_depth else 1
    if r > 0.25:
        value = rng.choice(range(10))
        return str(value), 1, value
    children = [None] * rng.randint(2, max_args)
    length = 2
    for c in range(len(children)):
        children[c] = generate_tree(depth + 1, max_depth, max_args, rng)
        length += children[c][1]
    op = rng.choice(OPERATORS)
    text = "( %s %s )" % (op, children[0][0])
    for child in children[1:]:
        text = "( %s %s )" % (text, child[0])
    values = sorted(child[2] for child in children)
    if op == "[MIN":
        value = values[0]
    elif op == "[MAX":
        value = values[-1]
    elif op == "[SM":
        value = sum(values) % 10
    else:  # int(np.median(values))
        n = len(values)
        value = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) // 2
    return "( %s ] )" % text, length, value


def generate(seed, count, min_length=500, max_length=2000, max_depth=10, max_args=10, exclude=()):
    rng = random.Random(seed)
    examples, seen = [], set(exclude)
    while len(examples) < count:
        text, length, value = generate_tree(1, max_depth, max_args, rng)
        if min_length < length < max_length and text not in seen:
            seen.add(text)
            examples.append((text, value))
    return examples


def encode(text):
    ids = {t: i for i, t in enumerate(VOCAB)}
    return [ids.get(t, 1) for t in text.replace("(", " ").replace(")", " ").split()] + [EOS]


# ---- model: the engine's classifier -----------------------------------------------------
def scan(a, b):
    """h_t = a_t * h_{t-1} + b_t along dim 1 (Hillis-Steele doubling, exact up to rounding)."""
    step = 1
    while step < b.shape[1]:
        b = b + a * F.pad(b, (0,) * (2 * (b.dim() - 2)) + (step, 0))[:, : b.shape[1]]
        a = a * F.pad(a, (0,) * (2 * (a.dim() - 2)) + (step, 0))[:, : a.shape[1]]
        step *= 2
    return b


class Norm(nn.Module):
    def __init__(self, d, kind):
        super().__init__()
        self.kind = kind
        self.norm = nn.BatchNorm1d(d) if kind == "batch" else nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x.transpose(1, 2)).transpose(1, 2) if self.kind == "batch" else self.norm(x)


class BiHgrn2(nn.Module):
    def __init__(self, d, e):
        super().__init__()
        self.e = e
        self.in_proj = nn.Linear(d, 3 * d)
        self.norm = nn.LayerNorm(d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x, lower_bound, mask):
        b, l, d = x.shape
        h, e = d // self.e, self.e
        i, o, f = self.in_proj(x).chunk(3, dim=-1)
        i, o = F.silu(i), torch.sigmoid(o)
        lam = lower_bound + (1 - lower_bound) * torch.sigmoid(f)
        k = 1 - lam
        m = mask.unsqueeze(-1).to(x.dtype)
        lam, k = lam * m + (1 - m), k * m  # pads: gate 1, input 0
        lam = lam.view(b, l, h, e, 1)
        kv = k.view(b, l, h, e, 1) * i.view(b, l, h, 1, e)
        state = scan(lam, kv) + scan(lam.flip(1), kv.flip(1)).flip(1)
        y = torch.einsum("blhae,blha->blhe", state, o.view(b, l, h, e)).reshape(b, l, d)
        return self.out_proj(self.norm(y))


class Glu(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(d, hidden), nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x):
        return self.l3(F.silu(self.l1(x)) * self.l2(x))


class Layer(nn.Module):
    def __init__(self, d, e, glu, norm):
        super().__init__()
        self.mixer_norm, self.mixer = Norm(d, norm), BiHgrn2(d, e)
        self.glu_norm, self.glu = Norm(d, norm), Glu(d, glu)


class Classifier(nn.Module):
    def __init__(self, a):
        super().__init__()
        d = a.d_model
        self.encoder = nn.Embedding(len(VOCAB), d)
        self.lower_bounds = nn.Parameter(torch.zeros(a.layers, d))
        self.layers = nn.ModuleList(Layer(d, a.expand_ratio, d * a.glu_ratio, a.norm) for _ in range(a.layers))
        self.final_norm = Norm(d, a.norm)
        self.head = nn.Linear(d, 10)
        pe = [[math.sin(t * math.exp(c // 2 * 2 * -math.log(10000.0) / d)) if c % 2 == 0
               else math.cos(t * math.exp(c // 2 * 2 * -math.log(10000.0) / d)) for c in range(d)]
              for t in range(2048)]
        self.register_buffer("pe", torch.tensor(pe, dtype=torch.float64).float(), persistent=False)

    def forward(self, tokens, mask):
        x = self.encoder(tokens) + self.pe[: tokens.shape[1]].to(self.encoder.weight.dtype)
        p = self.lower_bounds.softmax(0)
        bounds = p.cumsum(0) - p[0]
        for n, layer in enumerate(self.layers):
            x = x + layer.mixer(layer.mixer_norm(x), bounds[n], mask)
            x = x + layer.glu(layer.glu_norm(x))
        x = self.final_norm(x)
        m = mask.unsqueeze(-1).to(x.dtype)
        return self.head((x * m).sum(1) / m.sum(1))


def engine_state_dict(model):
    """The engine's tensor names (docs/lra.md): BatchNorm/LayerNorm wrappers flattened."""
    out = {}
    for name, t in model.state_dict().items():
        if name.endswith("num_batches_tracked"):
            continue
        out[name.replace(".norm.norm.", ".norm.").replace("_norm.norm.", "_norm.")
            .replace("final_norm.norm.", "final_norm.")] = t.detach().float().cpu().contiguous()
    return out


def batches(examples, size, device, shuffle, rng):
    order = list(range(len(examples)))
    if shuffle:
        rng.shuffle(order)
    for s in range(0, len(order), size):
        chunk = [examples[i] for i in order[s: s + size]]
        ids = [encode(t) for t, _ in chunk]
        width = max(len(x) for x in ids)
        tokens = torch.tensor([x + [PAD] * (width - len(x)) for x in ids], device=device)
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids], device=device)
        yield tokens, mask, torch.tensor([v for _, v in chunk], device=device)


def accuracy(model, examples, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for tokens, mask, labels in batches(examples, 64, device, False, None):
            correct += (model(tokens, mask).argmax(-1) == labels).sum().item()
    return correct / len(examples)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--smoke", action="store_true", help="tiny model, few steps, small data")
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--layers", type=int, default=5)
    p.add_argument("--expand-ratio", type=int, default=4)
    p.add_argument("--glu-ratio", type=int, default=1)
    p.add_argument("--norm", choices=["batch", "layer"], default="batch")
    p.add_argument("--train-examples", type=int, default=20000)
    p.add_argument("--test-examples", type=int, default=2000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--time-limit", type=float, default=300.0, help="training seconds")
    p.add_argument("--max-steps", type=int, default=100000)
    p.add_argument("--seed", type=int, default=2222, help="torch seed")
    a = p.parse_args()
    if a.smoke:
        a.d_model, a.layers, a.train_examples, a.test_examples, a.max_steps = 16, 2, 256, 100, 20
    os.makedirs(a.out, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(a.seed)
    log_lines = []

    def log(line):
        print(line, flush=True)
        log_lines.append(line)

    t0 = time.time()
    test = generate(TEST_SEED, a.test_examples)
    train = generate(TRAIN_SEED, a.train_examples, exclude={t for t, _ in test})
    log(f"data: {len(train)} train, {len(test)} test examples in {time.time() - t0:.1f}s")

    model = Classifier(a).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    steps_per_epoch = math.ceil(len(train) / a.batch)
    torch.backends.cuda.matmul.allow_tf32 = True
    rng = random.Random(a.seed)
    start, step, epoch = time.time(), 0, 0
    while step < a.max_steps and time.time() - start < a.time_limit:
        model.train()
        for tokens, mask, labels in batches(train, a.batch, device, True, rng):
            # Linear warm-up over the first epoch, then constant.
            for g in opt.param_groups:
                g["lr"] = a.lr * min(1.0, (step + 1) / steps_per_epoch)
            loss = F.cross_entropy(model(tokens, mask), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            if step % 50 == 0:
                log(f"step {step} epoch {epoch} loss {loss.item():.4f} {time.time() - start:.0f}s")
            if step >= a.max_steps or time.time() - start >= a.time_limit:
                break
        epoch += 1
        log(f"epoch {epoch}: test accuracy {accuracy(model, test, device):.4f}")
    train_seconds = time.time() - start

    torch.backends.cuda.matmul.allow_tf32 = False
    test_accuracy = accuracy(model, test, device)
    # The reference logits: each example alone, no padding, in float64.
    model64 = Classifier(a).to(device).double()
    model64.load_state_dict(model.state_dict())
    model64.eval()
    first = test[:100]
    with torch.no_grad():
        logits = torch.stack([model64(torch.tensor([encode(t)], device=device),
                                      torch.ones(1, len(encode(t)), device=device))[0] for t, _ in first])
    labels = torch.tensor([v for _, v in first], dtype=torch.int64)
    first_accuracy = (logits.argmax(-1).cpu() == labels).double().mean().item()
    log(f"test accuracy {test_accuracy:.4f} ({len(test)} examples); first 100: {first_accuracy:.2f}")

    from safetensors.torch import save_file
    save_file(engine_state_dict(model), os.path.join(a.out, "model.safetensors"))
    save_file({"logits": logits.float().cpu().contiguous(), "labels": labels},
              os.path.join(a.out, "expected_logits.safetensors"))
    config = {"model_type": "lra_classifier", "mixer": "hgrn2", "encoder": "embedding",
              "vocab_size": len(VOCAB), "hidden_size": a.d_model, "num_layers": a.layers,
              "expand_ratio": a.expand_ratio, "glu_expand_ratio": a.glu_ratio, "norm": a.norm,
              "norm_eps": 1e-5, "mixer_norm": True, "use_lower_bound": True, "positional": True,
              "scan": "1d", "head": "linear", "num_classes": 10}
    vocab = {"kind": "listops", "tokens": VOCAB, "pad_id": PAD, "unk_id": 1, "eos_id": EOS,
             "append_eos": True, "max_length": 2048}
    report = {"args": vars(a), "vocab": VOCAB,
              "test_generator": {"seed": TEST_SEED, "count": a.test_examples, "min_length": 500,
                                 "max_length": 2000, "max_depth": 10, "max_args": 10},
              "train_generator": {"seed": TRAIN_SEED, "count": a.train_examples},
              "test_accuracy": test_accuracy, "first100_accuracy": first_accuracy,
              "steps": step, "epochs": epoch, "train_seconds": train_seconds,
              "parameters": sum(t.numel() for t in model.parameters()),
              "torch": torch.__version__, "device": torch.cuda.get_device_name() if device == "cuda" else "cpu"}
    for name, obj in [("config.json", config), ("lra_vocab.json", vocab), ("lra_listops_train.json", report)]:
        with open(os.path.join(a.out, name), "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")
    with open(os.path.join(a.out, "train_log.txt"), "w") as f:
        f.write("\n".join(log_lines) + "\n")


if __name__ == "__main__":
    main()
