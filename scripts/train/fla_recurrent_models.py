"""HGRN2 and HGRN1 causal LMs in fla's parameter layout and maths, written once over a
small array-ops interface so that the same code runs in PyTorch (training, on a GPU) and
in numpy (float64 checks on a machine without PyTorch).

Upstream definition: fla (flash-linear-attention) layers/hgrn2.py, layers/hgrn.py,
models/hgrn2, models/hgrn, modules/mlp.py (GatedMLP). What hgeval's engine loads and
computes: engine/cpu/hgrn2.cc, engine/cpu/hgrn1.cc, engine/cpu/fla_block.cc.

- Block: h += attn(RMSNorm(h)); h += mlp(RMSNorm(h)) (norm_eps); mlp = down(silu(gate x) *
  up x); final RMSNorm; logits = x @ lm_head^T (the embeddings when tied).
- Lower bounds: P = softmax(model.lower_bounds, over layers), lb_l = cumsum(P)_l - P_0
  (layer 0 gets none); forget gate log g = logaddexp(log lb, log1p(-lb) + logsigmoid(f)).
- HGRN2: q = silu(q_proj x), k = 1 - g, v = i_proj x; heads of width expand_ratio; GLA
  recurrence S_t = diag(g_t) S_{t-1} + k_t^T v_t, o_t = (q_t / sqrt(expand_ratio)) S_t;
  g_norm = one RMSNorm over all D channels with eps 1e-5 (fla passes no eps); o_proj.
- HGRN1: h_t = g_t h_{t-1} + silu(i_proj x) (1 - g_t); g_norm = RMSNorm(h; norm_eps) *
  silu(g_proj x); o_proj.
- Optional short convolutions (use_short_conv): depthwise causal conv1d, no bias, no
  activation, on q, f, i (HGRN2) or i, f (HGRN1) projections.

The recurrences run chunkwise: inside a chunk of C steps the pairwise decays exp(b_t - b_s)
(b = cumulative log gate, s <= t) are formed explicitly, so every exponent is <= 0 (no
overflow whatever the gates); chunk states are carried by a short loop over chunks.
"""
import json
import math
import struct

import numpy as np

# fla's HGRN2 g_norm runs through rms_norm_linear without an eps: its default applies.
HGRN2_G_NORM_EPS = 1e-5


class NumpyOps:
    """The array operations the models need, in numpy (float64 checks)."""

    # Called on the class (never an instance), with the axis positional.
    exp, log, log1p, logaddexp = np.exp, np.log, np.log1p, np.logaddexp
    einsum, swapaxes = staticmethod(np.einsum), staticmethod(np.swapaxes)
    cumsum, stack = staticmethod(np.cumsum), staticmethod(np.stack)

    @staticmethod
    def sigmoid(x):
        return 0.5 * (1.0 + np.tanh(0.5 * x))

    @staticmethod
    def logsigmoid(x):
        return -np.logaddexp(0.0, -x)

    @staticmethod
    def softmax0(x):
        e = np.exp(x - x.max(0, keepdims=True))
        return e / e.sum(0, keepdims=True)

    @staticmethod
    def mean_last(x):
        return x.mean(-1, keepdims=True)

    @staticmethod
    def rsqrt(x):
        return 1.0 / np.sqrt(x)

    @staticmethod
    def lower_triangle(n, like):
        return np.tril(np.ones((n, n), dtype=like.dtype))

    @staticmethod
    def zeros(shape, like):
        return np.zeros(shape, dtype=like.dtype)

    @staticmethod
    def pad_time(x, before, after):
        """Zeros around axis -2 (time) of [..., T, C]."""
        widths = [(0, 0)] * (x.ndim - 2) + [(before, after), (0, 0)]
        return np.pad(x, widths)


def torch_ops(torch):
    """The same operations in PyTorch (differentiable)."""
    functional = torch.nn.functional

    class TorchOps:
        exp, log, log1p, logaddexp = torch.exp, torch.log, torch.log1p, torch.logaddexp
        einsum, swapaxes = staticmethod(torch.einsum), torch.swapaxes
        cumsum, stack = torch.cumsum, torch.stack
        sigmoid, logsigmoid, rsqrt = torch.sigmoid, functional.logsigmoid, torch.rsqrt

        @staticmethod
        def softmax0(x):
            return torch.softmax(x, 0)

        @staticmethod
        def mean_last(x):
            return x.mean(-1, keepdim=True)

        @staticmethod
        def lower_triangle(n, like):
            return torch.tril(torch.ones((n, n), dtype=like.dtype, device=like.device))

        @staticmethod
        def zeros(shape, like):
            return torch.zeros(shape, dtype=like.dtype, device=like.device)

        @staticmethod
        def pad_time(x, before, after):
            return functional.pad(x, (0, 0, before, after))

    return TorchOps


def _chunk(ops, x, chunk):
    """[B, H, T, C] -> [B, H, N, chunk, C], zero-padded at the end of time."""
    b, h, t, c = x.shape
    n = -(-t // chunk)
    if n * chunk != t:
        x = ops.pad_time(x, 0, n * chunk - t)
    return x.reshape(b, h, n, chunk, c)


def _pairwise_decay(ops, cum):
    """cum: [B, H, N, C, K] inclusive cumulative log gates within each chunk. Returns
    [B, H, N, C(t), C(s), K] = exp(cum_t - cum_s) for s <= t, else 0 (exponents <= 0)."""
    mask = ops.lower_triangle(cum.shape[3], cum)[:, :, None]  # [t, s, 1]
    diff = cum[:, :, :, :, None, :] - cum[:, :, :, None, :, :]
    return ops.exp(diff * mask) * mask


def _carried_states(ops, chunk_decay, chunk_update):
    """State entering each chunk: S_0 = 0, S_{n+1} = chunk_decay_n * S_n + chunk_update_n.
    chunk_decay: [B, H, N, K, 1 or V]; chunk_update: [B, H, N, K, V]."""
    state = ops.zeros(chunk_update[:, :, 0].shape, chunk_update)
    entering = []
    for n in range(chunk_update.shape[2]):
        entering.append(state)
        state = chunk_decay[:, :, n] * state + chunk_update[:, :, n]
    return ops.stack(entering, 2)


def chunked_gla(ops, q, k, v, log_gate, chunk=16):
    """GLA with per-key-channel gates: S_t = diag(exp(log_gate_t)) S_{t-1} + k_t^T v_t,
    o_t = q_t S_t (no scaling here). q, k, log_gate: [B, H, T, K]; v: [B, H, T, V]."""
    t_len = q.shape[2]
    q, k, v, log_gate = (_chunk(ops, x, chunk) for x in (q, k, v, log_gate))
    cum = ops.cumsum(log_gate, 3)  # [B, H, N, C, K]
    decay = _pairwise_decay(ops, cum)
    scores = (q[:, :, :, :, None, :] * decay * k[:, :, :, None, :, :]).sum(-1)
    intra = scores @ v  # [B, H, N, C, V]
    last = cum[:, :, :, -1:, :]  # [B, H, N, 1, K]
    update = ops.einsum("bhnck,bhncv->bhnkv", k * ops.exp(last - cum), v)
    entering = _carried_states(ops, ops.swapaxes(ops.exp(last), -1, -2), update)
    inter = ops.einsum("bhnck,bhnkv->bhncv", q * ops.exp(cum), entering)
    out = intra + inter
    b, h, n, c, width = out.shape
    return out.reshape(b, h, n * c, width)[:, :, :t_len]


def chunked_diagonal_scan(ops, x, log_gate, chunk=16):
    """h_t = exp(log_gate_t) * h_{t-1} + x_t, elementwise. x, log_gate: [B, T, E]."""
    t_len = x.shape[1]
    x, log_gate = (_chunk(ops, y[:, None], chunk) for y in (x, log_gate))  # [B,1,N,C,E]
    cum = ops.cumsum(log_gate, 3)
    decay = _pairwise_decay(ops, cum)  # [B, 1, N, C, C, E]
    intra = (decay * x[:, :, :, None, :, :]).sum(4)
    last = cum[:, :, :, -1:, :]
    update = (ops.exp(last - cum) * x).sum(3)[:, :, :, None, :]  # [B, 1, N, 1, E]
    entering = _carried_states(ops, ops.exp(last), update)  # [B, 1, N, 1, E]
    out = intra + ops.exp(cum) * entering
    b, _, n, c, e = out.shape
    return out.reshape(b, n * c, e)[:, :t_len]


def sequential_gla(q, k, v, log_gate):
    """The GLA recurrence step by step (numpy), for checking chunked_gla."""
    b, h, t_len, kd = q.shape
    state = np.zeros((b, h, kd, v.shape[-1]), dtype=q.dtype)
    out = np.zeros(v.shape[:3] + (v.shape[-1],), dtype=q.dtype)
    for t in range(t_len):
        state = np.exp(log_gate[:, :, t])[..., None] * state + \
            k[:, :, t, :, None] * v[:, :, t, None, :]
        out[:, :, t] = np.einsum("bhk,bhkv->bhv", q[:, :, t], state)
    return out


def sequential_diagonal_scan(x, log_gate):
    """The HGRN1 recurrence step by step (numpy), for checking chunked_diagonal_scan."""
    state = np.zeros_like(x[:, 0])
    out = np.zeros_like(x)
    for t in range(x.shape[1]):
        state = np.exp(log_gate[:, t]) * state + x[:, t]
        out[:, t] = state
    return out


def _rms_norm(ops, x, weight, eps):
    return x * ops.rsqrt(ops.mean_last(x * x) + eps) * weight


def _silu(ops, x):
    return x * ops.sigmoid(x)


def _causal_conv(ops, x, weight):
    """Depthwise causal conv1d as torch's conv1d with W-1 zeros on the left: x [B, T, C],
    weight [C, 1, W]: y_t = sum_j w_j x_{t-(W-1)+j} (the engine's ShortConv)."""
    width, t_len = weight.shape[-1], x.shape[1]
    padded = ops.pad_time(x, width - 1, 0)
    out = padded[:, 0:t_len] * weight[:, 0, 0]
    for j in range(1, width):
        out = out + padded[:, j:j + t_len] * weight[:, 0, j]
    return out


def _lower_bounded_log_gate(ops, f, bound):
    log_gate = ops.logsigmoid(f)
    if bound is None:
        return log_gate
    return ops.logaddexp(ops.log(bound), ops.log1p(-bound) + log_gate)


def _hgrn2_mixer(ops, p, prefix, config, x, bound, chunk):
    b, t_len, d = x.shape
    head_k = config["expand_ratio"]
    heads = d // head_k
    q, f, i = (x @ p[prefix + name + "_proj.weight"].T for name in ("q", "f", "i"))
    if config.get("use_short_conv"):
        q, f, i = (_causal_conv(ops, y, p[prefix + name + "_conv1d.weight"])
                   for y, name in ((q, "q"), (f, "f"), (i, "i")))
    q = _silu(ops, q)
    log_gate = _lower_bounded_log_gate(ops, f, bound)
    k = 1 - ops.exp(log_gate)

    def split(y, width):
        return ops.swapaxes(y.reshape(b, t_len, heads, width), 1, 2)

    o = chunked_gla(ops, split(q, head_k) * (head_k ** -0.5), split(k, head_k), split(i, d // heads),
                    split(log_gate, head_k), chunk)
    o = ops.swapaxes(o, 1, 2).reshape(b, t_len, d)
    o = _rms_norm(ops, o, p[prefix + "g_norm.weight"], HGRN2_G_NORM_EPS)
    return o @ p[prefix + "o_proj.weight"].T


def _hgrn1_mixer(ops, p, prefix, config, x, bound, chunk):
    i, f = (x @ p[prefix + name + "_proj.weight"].T for name in ("i", "f"))
    if config.get("use_short_conv"):
        i, f = (_causal_conv(ops, y, p[prefix + name + "_conv1d.weight"])
                for y, name in ((i, "i"), (f, "f")))
    log_gate = _lower_bounded_log_gate(ops, f, bound)
    h = chunked_diagonal_scan(ops, _silu(ops, i) * (1 - ops.exp(log_gate)), log_gate, chunk)
    gate = x @ p[prefix + "g_proj.weight"].T
    o = _rms_norm(ops, h, p[prefix + "g_norm.weight"], config["norm_eps"]) * _silu(ops, gate)
    return o @ p[prefix + "o_proj.weight"].T


def fla_forward(ops, p, config, ids, chunk=16):
    """Logits [B, T, vocab] of an fla HGRN2 ('hgrn2') or HGRN ('hgrn') causal LM.
    p: tensor name -> array (the checkpoint's names); ids: int [B, T]."""
    return fla_hidden(ops, p, config, ids, chunk) @ output_embeddings(p, config).T


def output_embeddings(p, config):
    """The output layer's [vocab, D] matrix: the embeddings when tied."""
    if config.get("tie_word_embeddings"):
        return p["model.embeddings.weight"]
    return p["lm_head.weight"]


def fla_hidden(ops, p, config, ids, chunk=16):
    """The final-normed hidden states [B, T, D] (the logits are these @ the output layer)."""
    mixer = {"hgrn2": _hgrn2_mixer, "hgrn": _hgrn1_mixer}[config["model_type"]]
    eps = config["norm_eps"]
    layers = config["num_hidden_layers"]
    bounds = [None] * layers
    if config.get("use_lower_bound", True):
        soft = ops.softmax0(p["model.lower_bounds"])
        cumulative = ops.cumsum(soft, 0) - soft[0]
        bounds = [None] + [cumulative[l] for l in range(1, layers)]
    h = p["model.embeddings.weight"][ids]
    for l in range(layers):
        prefix = f"model.layers.{l}."
        x = _rms_norm(ops, h, p[prefix + "attn_norm.weight"], eps)
        h = h + mixer(ops, p, prefix + "attn.", config, x, bounds[l], chunk)
        x = _rms_norm(ops, h, p[prefix + "mlp_norm.weight"], eps)
        gate = x @ p[prefix + "mlp.gate_proj.weight"].T
        up = x @ p[prefix + "mlp.up_proj.weight"].T
        h = h + (_silu(ops, gate) * up) @ p[prefix + "mlp.down_proj.weight"].T
    return _rms_norm(ops, h, p["model.norm.weight"], eps)


def parameter_shapes(config):
    """name -> shape of every tensor an fla HGRN2/HGRN checkpoint holds (lm_head only when
    the embeddings are not tied)."""
    d, vocab, layers = config["hidden_size"], config["vocab_size"], config["num_hidden_layers"]
    inner = config["intermediate_size"]
    width = config.get("conv_size", 4)
    shapes = {"model.embeddings.weight": (vocab, d), "model.norm.weight": (d,)}
    if config.get("use_lower_bound", True):
        shapes["model.lower_bounds"] = (layers, d)
    if not config.get("tie_word_embeddings"):
        shapes["lm_head.weight"] = (vocab, d)
    if config["model_type"] == "hgrn2":
        mixer = {"q_proj": (d, d), "f_proj": (d, d), "i_proj": (d, d), "g_norm": (d,),
                 "o_proj": (d, d)}
        convs = ("q", "f", "i")
        conv_width = d
    else:
        e = d * config.get("expand_ratio", 1)
        mixer = {"i_proj": (e, d), "f_proj": (e, d), "g_proj": (e, d), "g_norm": (e,),
                 "o_proj": (d, e)}
        convs = ("i", "f")
        conv_width = e
    if config.get("use_short_conv"):
        for name in convs:
            mixer[name + "_conv1d"] = (conv_width, 1, width)
    for l in range(layers):
        prefix = f"model.layers.{l}."
        shapes[prefix + "attn_norm.weight"] = (d,)
        shapes[prefix + "mlp_norm.weight"] = (d,)
        shapes[prefix + "mlp.gate_proj.weight"] = (inner, d)
        shapes[prefix + "mlp.up_proj.weight"] = (inner, d)
        shapes[prefix + "mlp.down_proj.weight"] = (d, inner)
        for name, shape in mixer.items():
            shapes[prefix + "attn." + name + ".weight"] = shape
    return shapes


def fla_intermediate_size(d, hidden_ratio=4):
    """GatedMLP's width when config.intermediate_size is null."""
    width = int(d * hidden_ratio * 2 / 3)
    return 256 * ((width + 255) // 256)


def read_safetensors(path):
    """name -> numpy array (F32, F64, BF16 as float32, I64)."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        blob = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        raw = blob[start:end]
        dtype = meta["dtype"]
        if dtype == "BF16":
            values = (np.frombuffer(raw, "<u2").astype("<u4") << 16).view("<f4")
        else:
            values = np.frombuffer(raw, {"F32": "<f4", "F64": "<f8", "I64": "<i8"}[dtype])
        out[name] = values.reshape(meta["shape"])
    return out


def golden_max_abs_diffs(folder, forward):
    """Runs `forward(weights float64, config, ids [1, T]) -> logits [1, T, V]` on every
    input of tests/golden/<model>/expected.safetensors; returns [(T, max |diff|, max
    |expected|)]."""
    with open(f"{folder}/config.json") as f:
        config = json.load(f)
    if not config.get("intermediate_size"):
        config["intermediate_size"] = fla_intermediate_size(config["hidden_size"],
                                                            config.get("hidden_ratio") or 4)
    weights = {k: v.astype(np.float64) for k, v in
               read_safetensors(f"{folder}/model.safetensors").items()}
    expected = read_safetensors(f"{folder}/expected.safetensors")
    results = []
    j = 0
    while f"input_ids.{j}" in expected:
        ids = expected[f"input_ids.{j}"].astype(np.int64)[None]
        want = expected[f"logits.{j}"].astype(np.float64)
        got = np.asarray(forward(weights, config, ids), dtype=np.float64)[0]
        results.append((ids.shape[1], float(np.abs(got - want).max()), float(np.abs(want).max())))
        j += 1
    return results


def numpy_forward(weights, config, ids):
    return fla_forward(NumpyOps, weights, config, ids)


def hgrn_config(arch, d_model, vocab, mlp_ratio, short_conv, max_positions):
    """config.json of an MQAR model in fla's keys: 2 layers, tied embeddings, lower bounds;
    HGRN2 with expand_ratio min(d, 128) (the HGRN2 paper's MQAR setting), HGRN with 1."""
    common = {
        "vocab_size": vocab, "hidden_size": d_model, "num_hidden_layers": 2,
        "hidden_ratio": mlp_ratio, "intermediate_size": mlp_ratio * d_model,
        "hidden_act": "swish", "max_position_embeddings": max_positions,
        "elementwise_affine": True, "norm_eps": 1e-6, "use_lower_bound": True,
        "use_short_conv": short_conv, "conv_size": 4, "tie_word_embeddings": True,
        "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": None,
        "initializer_range": 0.02, "fuse_norm": True, "fuse_swiglu": True,
        "fuse_cross_entropy": True, "use_cache": True, "attn": None,
    }
    if arch == "hgrn2":
        ratio = min(d_model, 128)
        return {"architectures": ["HGRN2ForCausalLM"], "model_type": "hgrn2",
                "attn_mode": "chunk", "expand_ratio": ratio, "num_heads": d_model // ratio,
                **common}
    return {"architectures": ["HGRNForCausalLM"], "model_type": "hgrn",
            "attn_mode": "fused_recurrent", "expand_ratio": 1, **common}


def torch_fla_model(torch, config, chunk=16):
    """An nn.Module whose state_dict has exactly the checkpoint's tensor names, initialised
    as fla does (matrices and embeddings N(0, 0.02), norms 1, lower bounds 0; short convs
    with PyTorch's Conv1d default), whose forward is fla_forward."""
    ops = torch_ops(torch)
    nn = torch.nn

    class FlaRecurrentLm(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = config
            for name, shape in parameter_shapes(config).items():
                *path, leaf = name.split(".")
                module = self
                for part in path:
                    if part not in module._modules:
                        module.add_module(part, nn.Module())
                    module = module._modules[part]
                if name == "model.lower_bounds":
                    value = torch.zeros(shape)
                elif len(shape) == 1:
                    value = torch.ones(shape)
                elif len(shape) == 3:  # conv1d [C, 1, W]: kaiming-uniform bound 1/sqrt(W)
                    bound = 1.0 / math.sqrt(shape[-1])
                    value = torch.empty(shape).uniform_(-bound, bound)
                else:
                    value = torch.empty(shape).normal_(0.0, config["initializer_range"])
                module.register_parameter(leaf, nn.Parameter(value))

        def forward(self, ids):
            return fla_forward(ops, dict(self.named_parameters()), config, ids, chunk)

        def position_logits(self, ids, positions):
            """Logits [B, P, vocab] at positions [B, P] of each row (static shapes, so a
            training step can be captured as a CUDA graph)."""
            p = dict(self.named_parameters())
            hidden = fla_hidden(ops, p, config, ids, chunk)
            index = positions[:, :, None].expand(-1, -1, hidden.shape[-1])
            return hidden.gather(1, index) @ output_embeddings(p, config).T

        def labelled_logits(self, ids, mask):
            """Logits [M, vocab] at the M positions where mask [B, T] is true (training and
            scoring need no others; 1/16 of the output-layer work at MQAR's density)."""
            p = dict(self.named_parameters())
            hidden = fla_hidden(ops, p, config, ids, chunk)[mask]
            return hidden @ output_embeddings(p, config).T

    return FlaRecurrentLm()
