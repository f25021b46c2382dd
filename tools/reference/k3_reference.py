"""Independent PyTorch reference of the Kimi K3 / Kimi Linear text tower (spec k3-model.md §2, §3, §7).

This is the test oracle for the C++ engine: simple, literal, slow. It follows the reference precision
model of spec §2.0 with torch.bfloat16 activations, rounding to bf16 exactly where the spec does:
  - every nn.Linear is a "bf16 GEMM": bf16 inputs, wide accumulation, result rounded to bf16;
  - norms / activations compute wide from the bf16 inputs and round back to bf16;
  - router, KDA recurrence + state, MLA softmax and AttnRes mixing stay wide (never bf16);
  - logits are fp32 (final dot products accumulated wide, not rounded to bf16).
"Wide" math (what the spec calls fp32) is done here in float64 and rounded through fp32 at the bf16
points: the exactly-rounded limit of fp32 math. Any fp32 implementation is within ~1e-7 relative of it,
and it makes every row independent of the sequence length (torch's fp32 BLAS / vectorised reductions /
vector-vs-tail elementwise paths depend on the tensor shape, and one flipped bf16 rounding can flip a
near-tie MoE routing decision).
The KDA recurrence runs token by token (the exact decode rule); MLA runs over the whole sequence with a
causal mask, in the absorbed form (default: the rounding points of a latent-cache engine such as
src/model) or the expanded form (the HF code's rounding points: k_nope and v rounded to bf16); the two
are the same math and differ only by where bf16 rounding happens. MoE loops over the selected experts
of each token.
There is no cache: Forward always processes a whole sequence from position 0 (shapes [T, ...]).

CLI (Debian's torch only imports under /usr/bin/python3):
  /usr/bin/python3 tools/reference/k3_reference.py --model DIR --prompt-ids 1,2,3 [--max-new N]
prints the top-5 logits at every prompt position and the greedy continuation.
"""

import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

BF16 = torch.bfloat16
F32 = torch.float32
WIDE = torch.float64  # the "fp32 math" of the spec, done exactly-rounded (see the module docstring)


# ---------------------------------------------------------------------------------------------------
# Config (spec §1 for kimi_k3, §7 for kimi_linear)
# ---------------------------------------------------------------------------------------------------

class Config:
    """The architecture facts of config.json. Layer indices are 0-based; the config lists are 1-based."""

    def __init__(self, raw):
        self.raw = raw
        self.model_type = raw.get("model_type")
        if self.model_type == "kimi_k3":
            self.family = "kimi_k3"
            text = raw["text_config"]
            self.prefix = "language_model."
        elif self.model_type == "kimi_linear":
            self.family = "kimi_linear"
            text = raw
            self.prefix = ""
        else:
            raise ValueError(f"config.json: unknown model_type {self.model_type!r}")
        self.text = text
        g = text.get
        self.D = int(text["hidden_size"])
        self.num_layers = int(text["num_hidden_layers"])
        self.vocab_size = int(text["vocab_size"])
        self.eps = float(g("rms_norm_eps", 1e-5))
        self.act = text["hidden_act"]
        if self.act not in ("situ", "silu"):
            raise ValueError(f"config.json: hidden_act {self.act!r} not supported")
        self.situ_beta = float(g("activation_situ_beta", 4.0))
        self.situ_linear_beta = float(g("activation_situ_linear_beta", 25.0))
        self.tie = bool(g("tie_word_embeddings", raw.get("tie_word_embeddings", False)))

        self.intermediate_size = int(g("intermediate_size", 0) or 0)
        self.first_k_dense_replace = int(g("first_k_dense_replace", 0) or 0)
        self.moe_layer_freq = int(g("moe_layer_freq", 1) or 1)

        self.num_experts = int(g("num_experts", 0) or 0)
        self.top_k = int(g("num_experts_per_token", 0) or 0)
        self.moe_intermediate_size = int(g("moe_intermediate_size", 0) or 0)
        self.latent = int(g("routed_expert_hidden_size", 0) or 0)
        self.latent_norm = bool(g("latent_moe_use_norm", False))
        self.num_shared = int(g("num_shared_experts", 0) or 0)
        self.renormalize = bool(g("moe_renormalize", True))
        self.routed_scaling = float(g("routed_scaling_factor", 1.0) or 1.0)
        router_act = g("moe_router_activation_func", "sigmoid")
        if router_act != "sigmoid":
            raise ValueError(f"config.json: moe_router_activation_func {router_act!r} not supported")
        n_group = int(g("num_expert_group", 1) or 1)
        topk_group = int(g("topk_group", 1) or 1)
        if g("use_grouped_topk", False) and n_group > 1 and topk_group < n_group:
            raise ValueError("config.json: group-limited top-k with more than one group is not implemented")

        qc = raw.get("quantization_config") or text.get("quantization_config")
        # compressed-tensors mxfp4-pack-quantized routed experts (format at the top or per config group).
        self.mxfp4 = False
        self.mxfp4_group = 32
        if qc:
            groups = qc.get("config_groups") or {}
            formats = [qc.get("format")] + [grp.get("format") for grp in groups.values()]
            formats = [f for f in formats if f]
            if any(f != "mxfp4-pack-quantized" for f in formats) or not formats:
                raise ValueError(f"config.json: unsupported quantization_config formats {formats}")
            self.mxfp4 = True
            for grp in groups.values():
                gs = (grp.get("weights") or {}).get("group_size")
                if gs:
                    self.mxfp4_group = int(gs)

        self.mla_heads = int(g("num_attention_heads", 0) or 0)
        self.q_lora = int(g("q_lora_rank", 0) or 0)
        self.kv_lora = int(g("kv_lora_rank", 0) or 0)
        self.nope = int(g("qk_nope_head_dim", 0) or 0)
        self.rope = int(g("qk_rope_head_dim", 0) or 0)
        self.v_head = int(g("v_head_dim", 0) or 0)
        self.mla_gate = bool(g("mla_use_output_gate", False))

        la = text["linear_attn_config"]
        self.kda_heads = int(la["num_heads"])
        self.kda_dim = int(la["head_dim"])
        self.conv = int(la.get("short_conv_kernel_size", 4))
        self.full_rank_gate = bool(la.get("use_full_rank_gate", self.family == "kimi_k3"))
        lb = la.get("gate_lower_bound")
        self.gate_lower_bound = None if lb is None else float(lb)
        self.kda_layers = [int(i) for i in la["kda_layers"]]
        self.full_attn_layers = [int(i) for i in la["full_attn_layers"]]

        self.block_size = int(g("attn_res_block_size", 0) or 0)

        kda = set(self.kda_layers)
        mla = set(self.full_attn_layers)
        for i in range(self.num_layers):
            if ((i + 1) in kda) == ((i + 1) in mla):
                raise ValueError(f"config.json: layer {i} (1-based {i + 1}) must be in exactly one of "
                                 "kda_layers / full_attn_layers")

    def attention(self, layer):
        return "kda" if (layer + 1) in self.kda_layers else "mla"

    def ffn(self, layer):
        if self.num_experts > 0 and layer >= self.first_k_dense_replace and layer % self.moe_layer_freq == 0:
            return "moe"
        return "dense"


# ---------------------------------------------------------------------------------------------------
# Precision helpers (spec §2.0)
# ---------------------------------------------------------------------------------------------------

def to_bf16(x):
    """A wide (float64) result rounded the way an fp32 result is rounded to bf16 (via fp32)."""
    return x.to(F32).to(BF16)


def wide(x):
    return x.to(WIDE)


def linear(x, w):
    """bf16 GEMM: x [T, in] bf16, w [out, in] bf16 -> [T, out] bf16 (wide accumulation, one rounding)."""
    assert x.dtype == BF16 and w.dtype == BF16, (x.dtype, w.dtype)
    return to_bf16(wide(x) @ wide(w).t())


def rms_norm(x, w, eps):
    """KimiRMSNorm (§2.1): w * bf16(x * rsqrt(mean(x^2) + eps)); x [..., n] bf16 -> bf16."""
    xf = wide(x)
    normed = to_bf16(xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps))
    return to_bf16(wide(w) * wide(normed))


def glu(cfg, a, b):
    """SiTU-GLU (§2.2) or SiLU-GLU (§7); a = gate projection, b = up projection (bf16) -> bf16."""
    af, bf = wide(a), wide(b)
    if cfg.act == "situ":
        act = cfg.situ_beta * torch.tanh(af / cfg.situ_beta) * torch.sigmoid(af)
        lin = cfg.situ_linear_beta * torch.tanh(bf / cfg.situ_linear_beta)
        return to_bf16(act * lin)
    return to_bf16(af * torch.sigmoid(af) * bf)


def mxfp4_dequant(packed, scale, group=32):
    """MXFP4 (§3.3): packed uint8 [out, in/2] + E8M0 scale uint8 [out, in/group] -> bf16 [out, in] (exact).

    Byte j of a row holds element 2j in the low nibble and 2j+1 in the high nibble; nibble bit 3 = sign,
    bits 0..2 index {0, 0.5, 1, 1.5, 2, 3, 4, 6}; element c is scaled by 2^(scale[c // group] - 127).
    """
    table = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)
    p = packed.to(torch.int64)
    out_dim, half = p.shape
    codes = torch.empty(out_dim, 2 * half, dtype=torch.int64)
    codes[:, 0::2] = p & 0xF
    codes[:, 1::2] = (p >> 4) & 0xF
    mag = table[codes & 7]
    sign = torch.where((codes & 8) != 0, -1.0, 1.0).to(torch.float64)
    vals = mag * sign  # -1 * 0.0 keeps -0.0 for code 8
    if (2 * half) % group != 0:
        raise ValueError(f"mxfp4: input width {2 * half} is not a multiple of the group size {group}")
    s = scale.to(torch.float64) - 127.0
    assert s.shape == (out_dim, 2 * half // group), (s.shape, out_dim, half, group)
    mult = torch.pow(2.0, s).repeat_interleave(group, dim=1)
    return to_bf16(vals * mult)


# ---------------------------------------------------------------------------------------------------
# KDA (§2.3)
# ---------------------------------------------------------------------------------------------------

def short_conv_silu(raw, w):
    """Causal depthwise conv with zero history + SiLU. raw [T, P] bf16, w [P, 1, W] -> [T, P] bf16.

    c[t, ch] = sum_j w[ch, 0, j] * raw[t - (W-1) + j, ch]; tap W-1 multiplies the current token.
    """
    T, P = raw.shape
    W = w.shape[-1]
    wf = wide(w).reshape(P, W)
    padded = torch.cat([torch.zeros(W - 1, P, dtype=WIDE), wide(raw)], dim=0)
    c = torch.zeros(T, P, dtype=WIDE)
    for j in range(W):
        c = c + wf[:, j] * padded[j:j + T]
    return to_bf16(c * torch.sigmoid(c))


def kda_recurrent(q, k, v, g, beta, scale):
    """The exact decode rule, token by token, fp32 state zero at start.

    q, k [T, H, K] fp32 (not yet normalised), v [T, H, V] fp32, g [T, H, K] log-decay, beta [T, H].
    Returns o [T, H, V] fp32.
    """
    T, H, K = q.shape
    V = v.shape[-1]
    qn = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) * scale
    kn = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    S = torch.zeros(H, K, V, dtype=q.dtype)
    out = torch.empty(T, H, V, dtype=q.dtype)
    for t in range(T):
        S = S * torch.exp(g[t])[:, :, None]                       # 1. decay rows
        pred = torch.einsum("hkv,hk->hv", S, kn[t])               # 2. prediction
        S = S + beta[t][:, None, None] * kn[t][:, :, None] * (v[t] - pred)[:, None, :]  # 3. delta write
        out[t] = torch.einsum("hkv,hk->hv", S, qn[t])             # 4. read
    return out


def kda_chunked(q, k, v, g, beta, scale, chunk=64):
    """The chunked form of §2.3 (used only to self-check kda_recurrent; same argument layout)."""
    T, H, K = q.shape
    V = v.shape[-1]
    qn = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) * scale
    kn = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    S = torch.zeros(H, K, V, dtype=q.dtype)
    out = torch.empty(T, H, V, dtype=q.dtype)
    for c0 in range(0, T, chunk):
        c1 = min(T, c0 + chunk)
        C = c1 - c0
        for h in range(H):
            qc, kc, vc, gc, bc = qn[c0:c1, h], kn[c0:c1, h], v[c0:c1, h], g[c0:c1, h], beta[c0:c1, h]
            G = torch.cumsum(gc, dim=0)                                   # [C, K]
            diff = G[:, None, :] - G[None, :, :]                          # [i, j, K] = G_i - G_j
            lower = torch.tril(torch.ones(C, C, dtype=torch.bool), diagonal=-1)
            incl = torch.tril(torch.ones(C, C, dtype=torch.bool))
            dec = torch.exp(torch.where(incl[:, :, None], diff, torch.zeros_like(diff)))
            kk = (kc[:, None, :] * kc[None, :, :] * dec).sum(-1)          # [i, j]
            L = torch.where(lower, bc[:, None] * kk, torch.zeros_like(kk))
            # T = (I + L)^-1 diag(beta) by forward substitution.
            A = torch.eye(C, dtype=q.dtype) + L
            inv = torch.zeros(C, C, dtype=q.dtype)
            eye = torch.eye(C, dtype=q.dtype)
            for i in range(C):
                inv[i] = eye[i] - (A[i, :i][:, None] * inv[:i]).sum(0)
            Tm = inv * bc[None, :]
            Wm = Tm @ (torch.exp(G) * kc)
            Um = Tm @ vc
            Vn = Um - Wm @ S[h]
            qk = (qc[:, None, :] * kc[None, :, :] * dec).sum(-1)
            qk = torch.where(incl, qk, torch.zeros_like(qk))
            out[c0:c1, h] = (qc * torch.exp(G)) @ S[h] + qk @ Vn
            last = G[C - 1]
            S[h] = torch.exp(last)[:, None] * S[h] + ((torch.exp(last[None, :] - G) * kc).t() @ Vn)
    return out


def kda_gate(cfg, f, A_log, dt_bias):
    """Log-space decay g [T, H, K] (wide) from f [T, P] bf16 (§2.3 lower-bound form, §7 softplus form)."""
    T = f.shape[0]
    H, K = cfg.kda_heads, cfg.kda_dim
    A = wide(A_log).reshape(-1)[:H]
    x = wide(f).reshape(T, H, K) + wide(dt_bias).reshape(H, K)
    if cfg.gate_lower_bound is not None:
        return cfg.gate_lower_bound * torch.sigmoid(torch.exp(A)[:, None] * x)
    return -torch.exp(A)[:, None] * F.softplus(x)


# ---------------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------------

MLA_FORMS = ("absorbed", "expanded")


class Reference:
    def __init__(self, model_dir, tensors=None, mla_form="absorbed"):
        if mla_form not in MLA_FORMS:
            raise ValueError(f"mla_form must be one of {MLA_FORMS}")
        self.mla_form = mla_form
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = Config(json.load(f))
        self.w = tensors if tensors is not None else safetensors_np.load_checkpoint(model_dir)
        self._experts = {}
        self.used = set()
        self.check_dtypes()

    def t(self, name):
        full = self.cfg.prefix + name
        if full not in self.w:
            raise KeyError(f"checkpoint has no tensor {full}")
        self.used.add(full)
        return self.w[full]

    def lt(self, layer, suffix):
        return self.t(f"model.layers.{layer}.{suffix}")

    def check_dtypes(self):
        """bf16 GEMM weights must be stored bf16 (the reference's nn.Linear dtype)."""
        for name, t in self.w.items():
            if name.endswith("_proj.weight") or name.endswith("embed_tokens.weight") or \
                    name.endswith("lm_head.weight") or name.endswith("gate.weight"):
                if t.dtype != BF16:
                    raise ValueError(f"{name}: expected BF16, got {t.dtype}")

    # --- building blocks -------------------------------------------------------------------------

    def mlp(self, layer, prefix, x):
        a = linear(x, self.lt(layer, prefix + "gate_proj.weight"))
        b = linear(x, self.lt(layer, prefix + "up_proj.weight"))
        return linear(glu(self.cfg, a, b), self.lt(layer, prefix + "down_proj.weight"))

    def kda(self, layer, x):
        cfg = self.cfg
        T = x.shape[0]
        H, K = cfg.kda_heads, cfg.kda_dim
        p = "self_attn."
        q = short_conv_silu(linear(x, self.lt(layer, p + "q_proj.weight")), self.lt(layer, p + "q_conv1d.weight"))
        k = short_conv_silu(linear(x, self.lt(layer, p + "k_proj.weight")), self.lt(layer, p + "k_conv1d.weight"))
        v = short_conv_silu(linear(x, self.lt(layer, p + "v_proj.weight")), self.lt(layer, p + "v_conv1d.weight"))
        f = linear(linear(x, self.lt(layer, p + "f_a_proj.weight")), self.lt(layer, p + "f_b_proj.weight"))
        beta = torch.sigmoid(wide(linear(x, self.lt(layer, p + "b_proj.weight"))))          # [T, H]
        if cfg.full_rank_gate:
            og = linear(x, self.lt(layer, p + "g_proj.weight"))
        else:
            og = linear(linear(x, self.lt(layer, p + "g_a_proj.weight")), self.lt(layer, p + "g_b_proj.weight"))
        g = kda_gate(cfg, f, self.lt(layer, p + "A_log"), self.lt(layer, p + "dt_bias"))
        o = to_bf16(kda_recurrent(wide(q).reshape(T, H, K), wide(k).reshape(T, H, K), wide(v).reshape(T, H, K),
                                  g, beta, K ** -0.5))
        # Gated RMSNorm per head (wide, shared weight [K]), output bf16.
        of = wide(o)
        wn = wide(self.lt(layer, p + "o_norm.weight"))
        y = of * torch.rsqrt(of.pow(2).mean(-1, keepdim=True) + cfg.eps) * wn * \
            torch.sigmoid(wide(og).reshape(T, H, K))
        return linear(to_bf16(y).reshape(T, H * K), self.lt(layer, p + "o_proj.weight"))

    def mla(self, layer, x):
        return self.mla_absorbed(layer, x) if self.mla_form == "absorbed" else self.mla_expanded(layer, x)

    def mla_absorbed(self, layer, x):
        """Gated MLA in the absorbed form of §2.4 (what a latent-cache engine computes): per head the query
        is taken into the 512-wide latent space with Wuk_h, scores against the cached c_t and the shared
        k_pe_t, the context is a mix of c_t, and Wuv_h maps it out. The absorbed query and the context stay
        wide; only the head outputs are rounded to bf16 (no bf16 k_nope / v exist in this form)."""
        cfg = self.cfg
        T = x.shape[0]
        H, nope, rope, vd, r = cfg.mla_heads, cfg.nope, cfg.rope, cfg.v_head, cfg.kv_lora
        p = "self_attn."
        if cfg.q_lora > 0:
            cq = rms_norm(linear(x, self.lt(layer, p + "q_a_proj.weight")), self.lt(layer, p + "q_a_layernorm.weight"),
                          cfg.eps)
            q = linear(cq, self.lt(layer, p + "q_b_proj.weight"))
        else:
            q = linear(x, self.lt(layer, p + "q_proj.weight"))
        q = wide(q.reshape(T, H, nope + rope))
        ckv = linear(x, self.lt(layer, p + "kv_a_proj_with_mqa.weight"))                  # [T, r + rope]
        c = wide(rms_norm(ckv[:, :r], self.lt(layer, p + "kv_a_layernorm.weight"), cfg.eps))  # latent cache
        k_pe = wide(ckv[:, r:])                                                            # shared, unrotated
        wkvb = wide(self.lt(layer, p + "kv_b_proj.weight")).reshape(H, nope + vd, r)
        w_uk, w_uv = wkvb[:, :nope, :], wkvb[:, nope:, :]                                 # [H, 128, r] each
        q_lat = torch.einsum("thn,hnc->thc", q[:, :, :nope], w_uk)                         # [T, H, r]
        scores = (torch.einsum("thc,sc->hts", q_lat, c) + torch.einsum("thd,sd->hts", q[:, :, nope:], k_pe)) * \
            (nope + rope) ** -0.5
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        probs = torch.softmax(scores.masked_fill(mask[None], float("-inf")), dim=-1)
        ctx = torch.einsum("hts,sc->thc", probs, c)                                        # [T, H, r]
        o = to_bf16(torch.einsum("thc,hvc->thv", ctx, w_uv)).reshape(T, H * vd)
        if cfg.mla_gate:
            gate = linear(x, self.lt(layer, p + "g_proj.weight"))
            o = to_bf16(wide(o) * torch.sigmoid(wide(gate)))
        return linear(o, self.lt(layer, p + "o_proj.weight"))

    def mla_expanded(self, layer, x):
        """Gated MLA in the expanded form of §2.4 (the HF modeling code: kv_b_proj is an nn.Linear, so
        k_nope and v are rounded to bf16 before attention)."""
        cfg = self.cfg
        T = x.shape[0]
        H, nope, rope, vd = cfg.mla_heads, cfg.nope, cfg.rope, cfg.v_head
        p = "self_attn."
        if cfg.q_lora > 0:
            cq = rms_norm(linear(x, self.lt(layer, p + "q_a_proj.weight")), self.lt(layer, p + "q_a_layernorm.weight"),
                          cfg.eps)
            q = linear(cq, self.lt(layer, p + "q_b_proj.weight"))
        else:
            q = linear(x, self.lt(layer, p + "q_proj.weight"))
        q = q.reshape(T, H, nope + rope)
        ckv = linear(x, self.lt(layer, p + "kv_a_proj_with_mqa.weight"))                  # [T, kv_lora + rope]
        c = rms_norm(ckv[:, :cfg.kv_lora], self.lt(layer, p + "kv_a_layernorm.weight"), cfg.eps)
        k_pe = ckv[:, cfg.kv_lora:]                                                        # shared, unrotated
        kv = linear(c, self.lt(layer, p + "kv_b_proj.weight")).reshape(T, H, nope + vd)
        k = torch.cat([kv[:, :, :nope], k_pe[:, None, :].expand(T, H, rope)], dim=-1)      # [T, H, 192]
        v = kv[:, :, nope:]
        scores = torch.einsum("thd,shd->hts", wide(q), wide(k)) * (nope + rope) ** -0.5
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(mask[None], float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        o = to_bf16(torch.einsum("hts,shd->thd", probs, wide(v))).reshape(T, H * vd)
        if cfg.mla_gate:
            gate = linear(x, self.lt(layer, p + "g_proj.weight"))
            o = to_bf16(wide(o) * torch.sigmoid(wide(gate)))
        return linear(o, self.lt(layer, p + "o_proj.weight"))

    def expert(self, layer, e, which):
        key = (layer, e, which)
        if key not in self._experts:
            base = f"block_sparse_moe.experts.{e}.{which}"
            if self.cfg.mxfp4:
                self._experts[key] = mxfp4_dequant(self.lt(layer, base + ".weight_packed"),
                                                   self.lt(layer, base + ".weight_scale"), self.cfg.mxfp4_group)
            else:
                self._experts[key] = self.lt(layer, base + ".weight")
        return self._experts[key]

    def moe(self, layer, x, trace=None):
        cfg = self.cfg
        m = "block_sparse_moe."
        # Router, all fp32.
        logits = wide(x) @ wide(self.lt(layer, m + "gate.weight")).t()
        s = torch.sigmoid(logits)
        sel = s + wide(self.lt(layer, m + "gate.e_score_correction_bias"))
        idx = torch.topk(sel, cfg.top_k, dim=-1).indices                                   # [T, k]
        wts = torch.gather(s, 1, idx)
        if cfg.renormalize:
            wts = wts / (wts.sum(-1, keepdim=True) + 1e-20)
        wts = wts * cfg.routed_scaling
        if trace is not None:
            trace.append({"layer": layer, "idx": idx.clone(), "sel": sel.clone()})
        z = linear(x, self.lt(layer, m + "routed_expert_down_proj.weight")) if cfg.latent > 0 else x
        r = to_bf16(self.routed_experts(layer, z, idx, wts))
        if cfg.latent > 0:
            if cfg.latent_norm:
                r = rms_norm(r, self.lt(layer, m + "routed_expert_norm.weight"), cfg.eps)
            r = linear(r, self.lt(layer, m + "routed_expert_up_proj.weight"))
        if cfg.num_shared > 0:
            sh = self.mlp(layer, m + "shared_experts.", x)
            r = to_bf16(wide(r) + wide(sh))
        return r

    def routed_experts(self, layer, z, idx, wts):
        """sum_j wts[t, j] * expert_{idx[t, j]}(z[t]) -> [T, width] wide, token by token (the oracle's order;
        bench/vision_ttft.py replaces it with a loop over experts)."""
        cfg = self.cfg
        acc = torch.zeros(z.shape[0], z.shape[1], dtype=WIDE)
        for t in range(z.shape[0]):
            zt = z[t:t + 1]
            for j in range(cfg.top_k):
                e = int(idx[t, j])
                a = linear(zt, self.expert(layer, e, "w1"))
                b = linear(zt, self.expert(layer, e, "w3"))
                y = linear(glu(cfg, a, b), self.expert(layer, e, "w2"))
                acc[t] += wts[t, j] * wide(y[0])
        return acc

    def attn(self, layer, x):
        return self.kda(layer, x) if self.cfg.attention(layer) == "kda" else self.mla(layer, x)

    def ffn(self, layer, x, trace=None):
        if self.cfg.ffn(layer) == "moe":
            return self.moe(layer, x, trace)
        return self.mlp(layer, "mlp.", x)

    def mix(self, sources, norm_name, proj_name, layer=None):
        """AttnRes mixer (§2.6): sources list of [T, D] bf16 -> bf16 [T, D]."""
        wn = self.t(norm_name) if layer is None else self.lt(layer, norm_name)
        wp = self.t(proj_name) if layer is None else self.lt(layer, proj_name)
        V = torch.stack([wide(s) for s in sources], dim=0)                                  # [n, T, D]
        Kn = V * torch.rsqrt(V.pow(2).mean(-1, keepdim=True) + self.cfg.eps)
        query = wide(wn) * wide(wp).reshape(-1)
        score = (Kn * query).sum(-1)                                                        # [n, T]
        alpha = torch.softmax(score, dim=0)
        return to_bf16((alpha[:, :, None] * V).sum(0))

    # --- forward -----------------------------------------------------------------------------------

    def forward(self, tokens, trace=None, media=None, last_only=False):
        """tokens: list of ids (a whole sequence) -> fp32 logits [T, vocab] ([1, vocab] of the last
        position with last_only, as generate() computes them: bench/vision_ttft.py).

        media: None, or (positions, rows): the embedding rows at those positions (the <|media_pad|>
        tokens of an image, vision.md §4) are replaced by rows [len(positions), D] bf16 (the vision
        projector's output, vision_reference.py); positions past the sequence are ignored."""
        cfg = self.cfg
        ids = torch.tensor(tokens, dtype=torch.int64)
        if ids.min() < 0 or ids.max() >= cfg.vocab_size:
            raise ValueError(f"token id out of range [0, {cfg.vocab_size})")
        h = self.t("model.embed_tokens.weight")[ids]                                       # [T, D] bf16
        if media is not None:
            positions, rows = media
            h = h.clone()
            for i, pos in enumerate(positions):
                if pos < len(tokens):
                    h[pos] = rows[i].to(BF16)
        eps = cfg.eps
        if cfg.block_size > 0:
            bank = []
            for layer in range(cfg.num_layers):
                prefix = h
                if bank:
                    xa = self.mix(bank + [prefix], "self_attention_res_norm.weight", "self_attention_res_proj.weight",
                                  layer)
                else:
                    xa = prefix
                if layer % cfg.block_size == 0:
                    bank.append(prefix)
                    prefix = None
                a = self.attn(layer, rms_norm(xa, self.lt(layer, "input_layernorm.weight"), eps))
                prefix = a if prefix is None else to_bf16(wide(prefix) + wide(a))
                xm = self.mix(bank + [prefix], "mlp_res_norm.weight", "mlp_res_proj.weight", layer)
                f = self.ffn(layer, rms_norm(xm, self.lt(layer, "post_attention_layernorm.weight"), eps), trace)
                h = to_bf16(wide(prefix) + wide(f))
            h = self.mix(bank + [h], "model.output_attn_res_norm.weight", "model.output_attn_res_proj.weight")
        else:
            for layer in range(cfg.num_layers):
                a = self.attn(layer, rms_norm(h, self.lt(layer, "input_layernorm.weight"), eps))
                h = to_bf16(wide(h) + wide(a))
                f = self.ffn(layer, rms_norm(h, self.lt(layer, "post_attention_layernorm.weight"), eps), trace)
                h = to_bf16(wide(h) + wide(f))
        if last_only:
            h = h[-1:]
        h = rms_norm(h, self.t("model.norm.weight"), eps)
        head = self.t("model.embed_tokens.weight") if cfg.tie else self.t("lm_head.weight")
        return (wide(h) @ wide(head).t()).to(F32)

    def unused_tensors(self):
        """Tensors never read. Not counted: routed experts no token selected, and layer 0's pre-attention
        AttnRes mixer (the bank is still empty there, spec §2.6), and the vision tower (vision_reference.py)."""
        return sorted(n for n in set(self.w) - self.used
                      if ".experts." not in n and ".layers.0.self_attention_res_" not in n
                      and not n.startswith(("vision_tower.", "mm_projector.")))

    def greedy(self, prompt, max_new):
        """Greedy continuation by re-running the whole sequence each step (no cache to get wrong).

        Returns (continuation ids, logits [len(prompt) + max_new - 1, vocab] of the final pass)."""
        seq = list(prompt)
        out = []
        for _ in range(max_new):
            logits = self.forward(seq)
            nxt = int(torch.argmax(logits[-1]))
            out.append(nxt)
            seq.append(nxt)
        final = self.forward(seq[:-1]) if max_new > 0 else self.forward(seq)
        return out, final


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint directory (config.json + safetensors)")
    ap.add_argument("--prompt-ids", required=True, help="comma-separated token ids")
    ap.add_argument("--max-new", type=int, default=8, help="greedy continuation length")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mla-form", choices=MLA_FORMS, default="absorbed",
                    help="rounding points of MLA (spec §2.4; the two forms are equal up to bf16 rounding)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ref = Reference(args.model, mla_form=args.mla_form)
    prompt = [int(s) for s in args.prompt_ids.split(",") if s.strip()]
    logits = ref.forward(prompt)
    for pos in range(len(prompt)):
        vals, idx = torch.topk(logits[pos], 5)
        tops = "  ".join(f"{int(i)}:{float(v):.5f}" for v, i in zip(vals, idx))
        print(f"pos {pos} token {prompt[pos]}: {tops}")
    if args.max_new > 0:
        cont, _ = ref.greedy(prompt, args.max_new)
        print("greedy:", ",".join(str(i) for i in cont))
    unused = ref.unused_tensors()
    if unused:
        print(f"warning: {len(unused)} checkpoint tensors unused, e.g. {unused[:3]}", file=sys.stderr)


if __name__ == "__main__":
    main()
