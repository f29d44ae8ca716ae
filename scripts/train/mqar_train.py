#!/usr/bin/env python3
"""Trains small causal LMs on MQAR as in zoology's Figure 2 and exports checkpoints that
hgeval's engine loads (config.json + model.safetensors, float32), with the accuracy PyTorch
measured on the standard test sets.

Runs on a machine with PyTorch (a GPU is strongly advised). LLaMA is defined here (the
Hugging Face layout and maths). HGRN2 and HGRN1 are plain PyTorch by default
(fla_recurrent_models.py: fla's tensor names and maths, chunkwise recurrences, no Triton;
`--check-golden tests/golden` checks them against fla's reference logits); `--impl fla`
uses fla's own modules instead (its source must be importable: `--fla PATH`).
scripts/train/mqar_device_run.sh is the GPU run that made the HGRN fixtures.

  mqar_train.py --check-golden tests/golden
  mqar_train.py --arch hgrn2 --d-model 128 --setting 256,16 --time-limit 420 --out OUT
  mqar_train.py --arch llama --d-model 64 --setting 64,4 --lr 1e-3 --epochs 64 --out OUT

Data: the train and test sets are zoology's (tests/tasks/mqar_reference.py, the numpy
generator that hgeval's parity test checks byte for byte against the C++ one): seeds from
zoology's prepare_data with DataConfig.seed 123 (one train and one test segment), V 8192,
100,000 train and 3,000 test examples, power_a 0.01, random_non_queries False.

Recipe (zoology's Figure 2: AdamW, weight decay 0.1, batch 512/256/128 by L, 64 epochs,
early stop at 0.99 test accuracy, learning rates swept over logspace(-4, -2, 4)): peak lr
2.15e-3 for HGRN2/HGRN (that sweep's third value) and 1e-3 for LLaMA, linear warmup over
the first 3% of the run, then cosine decay to 5%, where the run's progress is the larger of
the step fraction and the elapsed fraction of --time-limit. The loss and the logits are computed at the labelled positions
only (the same loss as cross-entropy with ignore_index -100).

Not written here: the trained checkpoints themselves (they need a GPU). This script is
not run in hgeval's CI (no PyTorch there); its HGRN2/HGRN maths are, through the numpy
twin (tests/tasks/fla_recurrent_models_test.py).

Departures from zoology's model: hgeval's engine runs the Hugging Face / fla block layout
(token mixer + gated MLP per layer); zoology's Figure-2 models use an Identity state
mixer (no MLP). The MLP here is kept small (--mlp-ratio, default 1). HGRN2/HGRN use fla's
short convolutions (use_short_conv, conv_size 4; --short-conv 0 turns them off): the
convolution-bearing models of zoology's Figure 2 (Based, H3, Hyena, Mamba) learn MQAR
from them; without them, fla's HGRN2 stayed at loss 8.33 (= ln 4096: chance among the
values) in an earlier run.
"""
import argparse
import json
import math
import os
import struct
import sys
import time
PROGRAM_START = time.time()

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "tasks"))
from mqar_reference import mqar_examples  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fla_recurrent_models as frla  # noqa: E402

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
    """HGRN2/HGRN from fla itself (--impl fla; needs fla, transformers and Triton)."""
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


def build_recurrent(torch, arch, d_model, seq_len, mlp_ratio, short_conv, chunk):
    """HGRN2/HGRN in plain PyTorch (fla_recurrent_models: fla's layout and maths)."""
    config = frla.hgrn_config(arch, d_model, VOCAB, mlp_ratio, short_conv, max(seq_len, 512))
    model = frla.torch_fla_model(torch, config, chunk)
    return model, config, lambda m: dict(m.state_dict())


def labelled_logits(model, x, mask):
    """Logits [M, vocab] at the labelled positions (row-major order, as y[mask])."""
    if hasattr(model, "labelled_logits"):
        return model.labelled_logits(x, mask)
    return model(x)[mask]


def labelled_positions(labels, pairs):
    """numpy [N, K] positions of the labelled tokens of each row, in increasing order, and
    the labels there; a row with fewer than K labels (a shorter curriculum example) is
    padded with unlabelled positions, whose target -100 the loss ignores."""
    positions = np.argsort(labels == -100, axis=1, kind="stable")[:, :pairs]
    return positions, np.take_along_axis(labels, positions, 1)


# The easier settings mixed into (256, 16) training (zoology's Figure-2 runs train on a mix
# of lengths and pair counts): (L, K, examples). Recurrent models learn recall on short
# sequences first; trained on (256, 16) alone, every HGRN run stayed at chance.
CURRICULUM = [(64, 4, 100_000), (128, 8, 20_000)]


def training_set(train_seed, seq_len, pairs, count, curriculum):
    """The (seq_len, pairs) train segment (zoology's seed) plus, with `curriculum`, the
    CURRICULUM segments (seeds train_seed + 1, + 2, ...), shorter rows padded with token 0
    (MQAR's filler) and label -100 at the end, where a causal model never looks back."""
    xs, ys = [], []
    segments = [(seq_len, pairs, count)] + (CURRICULUM if curriculum else [])
    for index, (length, k, n) in enumerate(segments):
        if length > seq_len:
            continue
        x, y = mqar_examples(train_seed + index, length, k, VOCAB, n, POWER_A)
        xs.append(np.pad(x, ((0, 0), (0, seq_len - length))))
        ys.append(np.pad(y, ((0, 0), (0, seq_len - length)), constant_values=-100))
    return np.concatenate(xs), np.concatenate(ys)


def position_logits(model, x, positions):
    """Logits [B, K, vocab] at positions [B, K]."""
    if hasattr(model, "position_logits"):
        return model.position_logits(x, positions)
    logits = model(x)
    return logits.gather(1, positions[:, :, None].expand(-1, -1, logits.shape[-1]))


class GraphedStep:
    """One training step (forward, loss at the labelled positions, backward, AdamW) captured
    as a CUDA graph. MQAR's shapes are static (B rows, K labels each), and these small models
    are bound by launching ~1,000 kernels a step, so replaying one graph is many times
    faster. The learning rate lives in a device tensor the graph reads. Off the GPU, or if
    capture fails, the same step runs eagerly."""

    def __init__(self, torch, model, peak_lr, weight_decay, batch, seq_len, pairs, device):
        self.torch, self.model = torch, model
        cuda = device == "cuda"
        # On the GPU the rate is a device tensor the graph reads; 0 while warming up and
        # capturing, so those steps leave the weights as they are.
        self.lr = torch.tensor(0.0, device=device) if cuda else peak_lr
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=self.lr,
                                           weight_decay=weight_decay, capturable=cuda)
        self.x = torch.zeros(batch, seq_len, dtype=torch.long, device=device)
        self.positions = torch.zeros(batch, pairs, dtype=torch.long, device=device)
        self.targets = torch.zeros(batch, pairs, dtype=torch.long, device=device)
        # Any valid positions for the warm-up steps.
        self.positions.copy_(torch.arange(pairs, device=device).expand(batch, -1))
        self.graph, self.loss = None, None
        self.mode = "eager"
        if cuda:
            try:
                self._capture()
                self.mode = "cuda graph"
            except Exception as error:  # noqa: BLE001 - fall back, and say so
                print(f"CUDA graph capture failed ({error}); training eagerly", flush=True)
                self.graph = None

    def _loss(self):
        logits = position_logits(self.model, self.x, self.positions)
        return self.torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(), self.targets.reshape(-1))

    def _eager(self):
        self.optimizer.zero_grad(set_to_none=True)
        loss = self._loss()
        loss.backward()
        self.optimizer.step()
        return loss

    def _capture(self):
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as capture requires
            for _ in range(3):
                self._eager()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        # Gradients None before capture: backward inside the graph then writes fresh ones
        # (from the graph's pool) on every replay instead of accumulating.
        self.optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.loss = self._loss()
            self.loss.backward()
            self.optimizer.step()
        # The warm-up steps (at rate 0) left moments and step counts behind: start afresh,
        # in place, since the graph holds these very tensors.
        with torch.no_grad():
            for state in self.optimizer.state.values():
                for value in state.values():
                    if torch.is_tensor(value):
                        value.zero_()

    def step(self, x, positions, targets, lr):
        """One update on a batch (the batch size given at construction); returns the loss
        as a device tensor."""
        self.x.copy_(x)
        self.positions.copy_(positions)
        self.targets.copy_(targets)
        if self.graph is None:
            for group in self.optimizer.param_groups:
                if isinstance(group["lr"], float):
                    group["lr"] = lr
                else:
                    group["lr"].fill_(lr)
            return self._eager().detach()
        self.lr.fill_(lr)
        self.graph.replay()
        return self.loss.detach()


def evaluate(torch, model, inputs, labels, batch, tie_margin=1e-3):
    """zoology's metric: per example mean of argmax == label over labelled positions, then
    the mean (float32 as torch computes it). Also counts labelled positions whose top-2
    logit margin is below `tie_margin` (where another fp32 implementation may differ)."""
    model.eval()
    per_example, near_ties, smallest = [], 0, math.inf
    with torch.no_grad():
        for i in range(0, len(inputs), batch):
            x, y = inputs[i:i + batch], labels[i:i + batch]
            mask = y != -100
            logits = labelled_logits(model, x, mask).float()
            top = logits.topk(2, dim=-1).values
            margin = top[:, 0] - top[:, 1]
            near_ties += int((margin < tie_margin).sum())
            smallest = min(smallest, float(margin.min()))
            hit = (logits.argmax(-1) == y[mask]).float()
            rows = mask.nonzero()[:, 0]
            hits = torch.zeros(len(x), device=x.device).index_add_(0, rows, hit)
            per_example.append((hits / mask.sum(-1).float()).cpu())
    model.train()
    return float(torch.cat(per_example).mean()), near_ties, smallest


class Schedule:
    """Linear warmup over `warmup` of the run, then cosine decay to `floor` x peak. The
    run's progress is the larger of the step fraction and the elapsed fraction of the time
    limit, so that a time-limited run warms up and decays within its time."""

    def __init__(self, peak, total_steps, warmup, time_limit, floor=0.05):
        self.peak, self.total, self.warmup = peak, total_steps, warmup
        self.time_limit, self.floor = time_limit, floor

    def lr(self, step, elapsed):
        by_time = elapsed / self.time_limit if self.time_limit else 0.0
        progress = max((step + 1) / self.total, by_time)
        warm = min(1.0, progress / self.warmup) if self.warmup > 0 else 1.0
        cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
        return self.peak * warm * (self.floor + (1 - self.floor) * cosine)


GOLDEN_TOLERANCE = 3e-5


def check_golden(torch, folder):
    """The plain-PyTorch HGRN2/HGRN (float64, CPU) and the numpy twin against the fla
    reference logits in tests/golden/{hgrn2,hgrn}. Those were stored in float32 (with the
    recurrences in float64), so a float64 model differs by float32 rounding: ~1e-5 at
    logits of magnitude ~5 (a wrong term differs by ~1e-1). Returns True when all pass."""
    def torch_forward(weights, config, ids):
        model = frla.torch_fla_model(torch, config).double()
        model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v))
                               for k, v in weights.items()}, strict=True)
        with torch.no_grad():
            return model(torch.from_numpy(ids)).numpy()

    ok = True
    for name in ("hgrn2", "hgrn"):
        for label, forward in (("torch", torch_forward), ("numpy", frla.numpy_forward)):
            results = frla.golden_max_abs_diffs(os.path.join(folder, name), forward)
            worst = max(diff for _, diff, _ in results)
            passed = worst <= GOLDEN_TOLERANCE
            ok &= passed
            print(f"golden {name} {label} float64: max |logit diff| {worst:.3g} over T = "
                  f"{[t for t, _, _ in results]} ({'ok' if passed else 'FAIL'}, tolerance "
                  f"{GOLDEN_TOLERANCE:g})", flush=True)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", choices=["llama", "hgrn2", "hgrn"])
    ap.add_argument("--impl", choices=["torch", "fla"], default="torch",
                    help="HGRN2/HGRN: plain PyTorch (default) or fla's own modules")
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--setting", default="256,16", help="L,K")
    ap.add_argument("--lr", type=float, default=0,
                    help="peak learning rate (0: 1e-3 for llama, 2.15e-3 for hgrn2/hgrn)")
    ap.add_argument("--warmup", type=float, default=0.03,
                    help="warmup as a fraction of the run (of the steps, or of --time-limit "
                         "when that comes first)")
    ap.add_argument("--epochs", type=int, default=64)
    ap.add_argument("--batch", type=int, default=0, help="0: zoology's (512/256/128 by L)")
    ap.add_argument("--train-examples", type=int, default=100_000)
    ap.add_argument("--curriculum", type=int, choices=[0, 1], default=1,
                    help="also train on the shorter CURRICULUM settings (padded to L)")
    ap.add_argument("--test-examples", type=int, default=3_000)
    ap.add_argument("--mlp-ratio", type=int, default=1)
    ap.add_argument("--short-conv", type=int, choices=[0, 1], default=1,
                    help="HGRN2/HGRN (--impl torch): fla's use_short_conv (conv_size 4)")
    ap.add_argument("--chunk", type=int, default=16, help="recurrence chunk length")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0, help="torch init seed")
    ap.add_argument("--fla", default="", help="a folder holding fla's source")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="stop training this many seconds after the program started (data "
                         "generation included; 0: none), mid-epoch; the final evaluation and "
                         "export follow")
    ap.add_argument("--bf16-weights", action="store_true",
                    help="round the final weights to bfloat16 and store them as BF16 (half "
                         "the size); the accuracy is measured on the rounded weights")
    ap.add_argument("--check-golden", metavar="DIR", default="",
                    help="only check the plain-PyTorch HGRN2/HGRN against DIR/{hgrn2,hgrn} "
                         "(tests/golden); exit 1 on a mismatch")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.fla:
        sys.path.insert(0, args.fla)
    import torch

    if args.check_golden:
        sys.exit(0 if check_golden(torch, args.check_golden) else 1)
    if not args.arch or not args.out:
        ap.error("--arch and --out are needed (unless --check-golden)")

    seq_len, pairs = (int(v) for v in args.setting.split(","))
    batch = args.batch or (512 if seq_len <= 128 else 256 if seq_len <= 256 else 128)
    peak_lr = args.lr or (1e-3 if args.arch == "llama" else 10 ** (-8 / 3))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    # TF32 for training speed; the final accuracy is measured with it off (full fp32, as
    # the engine computes).
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(args.seed)
    train_seed, test_seed = zoology_seeds()
    x_train, y_train = training_set(train_seed, seq_len, pairs, args.train_examples,
                                    bool(args.curriculum))
    pos_train, target_train = labelled_positions(y_train, pairs)
    x_test, y_test = mqar_examples(test_seed, seq_len, pairs, VOCAB, args.test_examples, POWER_A)
    to = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(device)  # noqa: E731
    x_train, y_train, x_test, y_test = to(x_train), to(y_train), to(x_test), to(y_test)
    pos_train, target_train = to(pos_train), to(target_train)

    if args.arch == "llama":
        model, config, export = build_llama(torch, args.d_model, seq_len, args.mlp_ratio)
    elif args.impl == "fla":
        model, config, export = build_fla(torch, args.arch, args.d_model, args.mlp_ratio)
    else:
        model, config, export = build_recurrent(torch, args.arch, args.d_model, seq_len,
                                                args.mlp_ratio, bool(args.short_conv),
                                                args.chunk)
    model.to(device)
    trainer = GraphedStep(torch, model, peak_lr, args.weight_decay, batch, seq_len, pairs,
                          device)
    steps_per_epoch = len(x_train) // batch  # full batches only: the graph's shapes are fixed
    total_steps = args.epochs * steps_per_epoch
    log = []
    start = time.time()
    # The limit counts from the program's start, so that a caller's wall-clock timeout
    # (limit + a grace for the final evaluation and export) is never hit mid-training.
    limit = max(1.0, args.time_limit - (start - PROGRAM_START)) if args.time_limit else 0
    schedule = Schedule(peak_lr, total_steps, args.warmup, limit)
    step = 0
    out_of_time = False
    print(f"{args.arch} d{args.d_model} L{seq_len} K{pairs}: {sum(p.numel() for p in model.parameters())}"
          f" parameters, batch {batch}, peak lr {peak_lr:g}, device {device}, steps "
          f"{trainer.mode}", flush=True)
    for epoch in range(args.epochs):
        order = torch.randperm(len(x_train), device=device)
        losses = []
        for i in range(0, steps_per_epoch * batch, batch):
            elapsed = time.time() - start
            if limit and elapsed > limit:
                out_of_time = True
                break
            idx = order[i:i + batch]
            losses.append(trainer.step(x_train[idx], pos_train[idx], target_train[idx],
                                       schedule.lr(step, elapsed)))
            step += 1
        if not losses:  # the limit fell at an epoch's start: nothing new to log
            print(f"time limit reached before epoch {epoch} after {step} steps", flush=True)
            break
        total = float(torch.stack(losses).mean())
        seen = 1
        acc, _, _ = evaluate(torch, model, x_test, y_test, batch)
        log.append({"epoch": epoch, "steps": step, "train_loss": total / seen,
                    "test_accuracy": acc, "lr": schedule.lr(step, time.time() - start),
                    "seconds": time.time() - start})
        print(json.dumps(log[-1]), flush=True)
        if acc >= 0.99:  # zoology's early stop
            break
        if out_of_time:
            print(f"time limit reached in epoch {epoch} after {step} steps", flush=True)
            break

    if args.bf16_weights:
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.bfloat16().float())

    # The accuracy the engine must reproduce: the final weights on the full test set (the
    # same examples as hgeval's mqar task for this setting), in full fp32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    final, near_ties, smallest_margin = evaluate(torch, model, x_test, y_test, batch)
    name = f"{args.arch}_d{args.d_model}_L{seq_len}_K{pairs}"
    out = os.path.join(args.out, name)
    os.makedirs(out, exist_ok=True)
    tensors = {k: v.detach().float().cpu().numpy() for k, v in export(model).items()}
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, bf16=args.bf16_weights)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, default=str)
    with open(os.path.join(out, "mqar_train.json"), "w") as f:
        json.dump({"args": vars(args), "train_seed": train_seed, "test_seed": test_seed,
                   "vocab_size": VOCAB, "power_a": POWER_A, "peak_lr": peak_lr,
                   "steps": step, "train_seconds": time.time() - start,
                   "torch_version": torch.__version__, "device": device,
                   "test_accuracy_pytorch": {f"acc_L{seq_len}_K{pairs}": final},
                   # Labelled test positions whose top-2 logits are closer than 1e-3:
                   # only there may another fp32 implementation's argmax differ.
                   "near_ties_1e-3": near_ties, "smallest_top2_margin": smallest_margin,
                   "log": log}, f, indent=2)
    print(f"wrote {out}: test accuracy {final:.5f} ({near_ties} near ties)", flush=True)


if __name__ == "__main__":
    main()
