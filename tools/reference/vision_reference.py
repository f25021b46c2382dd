"""Independent PyTorch reference of Kimi K3's vision tower, patch merger and projector (vision.md §3).

Written from the official code (vLLM's MoonViT3d of Kimi K2.5 / K3 in kimi_k25_vit.py with
KimiK3VisionConfig: rmsnorm blocks, wide qkv, no biases, bilinear position grid, sd2_tpool merge,
patchmergerv2 projector), not from the C++ engine. Precision model as the text reference
(k3_reference.py, spec k3-model.md §2.0): bf16 activations between ops as the official bf16 model has
them, every Linear / the patch Conv2d a bf16 GEMM (wide accumulation, one rounding), norms and
activations wide then rounded, RoPE in fp32 (the official ApplyRotaryEmb(enable_fp32_compute=True)),
attention scores / softmax / context wide and the context rounded once. "Wide" is float64 rounded
through fp32 at the bf16 points. Two choices the official code leaves to its kernels:
  - the attention probabilities are not rounded to bf16 before multiplying V (flash attention rounds
    unnormalised ones, SDPA's math path normalised ones; both are rounding-level differences);
  - the tower's RMSNorm eps is vision_config.vt_rms_norm_eps, default float32's epsilon (what current
    PyTorch's nn.RMSNorm(dim) with eps=None uses for bf16 input; docs/formats.md "Vision tower").

Per image: patches [N, 3*p*p] (normalised pixels, raster order, channel-first patches) are rounded to
bf16 (the model's dtype), embedded by the [h, 3, p, p] conv weight, the learned [H, W, h] position grid is
resized to the patch grid as F.interpolate(bilinear, align_corners=False) resizes a bf16 tensor on CUDA
(fp32 math, resize_bilinear_f32) and added; blocks; final norm;
each 2x2 neighbourhood concatenated in the order (0,0), (0,1), (1,0), (1,1); projector
Linear -> GELU(erf) -> Linear -> RMSNorm(eps projector_ln_eps). Output: [N/4, text_hidden] bf16.

Synthetic inputs (reproduced bit for bit by the C++ tests): synthetic_image(gh, gw, index) is a
uint8 RGB image of (gh*p) x (gw*p) pixels from an integer rule, normalised as the official processor
does ((x / 255 - 0.5) / 0.5 in float32) and patchified.

CLI:
  /usr/bin/python3 tools/reference/vision_reference.py --model DIR --grid 6x10 [--image-index 3]
prints the output shape, RMS and the first values of the first rows.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

BF16 = torch.bfloat16
F32 = torch.float32
WIDE = torch.float64
ROPE_THETA = 10000.0
MAX_GRID_SIDE = 512  # the official Rope2DPosEmbRepeated table covers 512 x 512 patches


def to_bf16(x):
    return x.to(F32).to(BF16)


def wide(x):
    return x.to(WIDE)  # the module's WIDE at call time (make_vision_goldens.py's fp32 variant swaps it)


def linear(x, w):
    """bf16 GEMM: x [T, in] bf16, w [out, in...] bf16 (trailing dims flattened) -> [T, out] bf16."""
    assert x.dtype == BF16 and w.dtype == BF16
    return to_bf16(wide(x) @ wide(w.reshape(w.shape[0], -1)).t())


def rms_norm(x, w, eps):
    """nn.RMSNorm / KimiRMSNorm: w * bf16(x * rsqrt(mean(x^2) + eps)), the product bf16 x bf16."""
    xf = wide(x)
    normed = to_bf16(xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps))
    return to_bf16(wide(normed) * wide(w))


class VisionConfig:
    """config.json's vision_config (official KimiK3VisionConfig names) + media_placeholder_token_id."""

    def __init__(self, raw):
        v = raw.get("vision_config")
        if v is None:
            raise ValueError("config.json has no vision_config: a text-only model")
        g = v.get
        self.patch = int(g("patch_size", 14))
        self.hidden = int(v["vt_hidden_size"])
        self.layers = int(v["vt_num_hidden_layers"])
        self.heads = int(v["vt_num_attention_heads"])
        self.mlp = int(v["vt_intermediate_size"])
        self.qkv = int(g("qkv_hidden_size") or self.hidden)
        self.head_dim = self.qkv // self.heads
        self.pos_h = int(g("init_pos_emb_height", 64))
        self.pos_w = int(g("init_pos_emb_width", 64))
        mk = g("merge_kernel_size", [2, 2])
        self.merge = (int(mk), int(mk)) if isinstance(mk, int) else (int(mk[0]), int(mk[1]))
        self.eps = float(g("vt_rms_norm_eps", float(np.finfo(np.float32).eps)))
        self.proj_eps = float(g("projector_ln_eps", 1e-5))
        self.text_hidden = int(raw["text_config"]["hidden_size"])
        self.media_pad = int(raw.get("media_placeholder_token_id", 163605))
        for key, want in (("merge_type", "sd2_tpool"), ("mm_projector_type", "patchmergerv2"),
                          ("norm_type", "rmsnorm"), ("pos_emb_interpolation_mode", "bilinear"),
                          ("activation_func", "gelu_pytorch_tanh"), ("projector_hidden_act", "gelu")):
            if g(key, want) != want:
                raise ValueError(f"vision_config.{key} = {g(key)!r}: only {want!r} is implemented")
        for key in ("attn_bias", "linear_bias", "patch_embed_proj_bias"):
            if g(key, False):
                raise ValueError(f"vision_config.{key} is true: biases are not implemented")


def resize_bilinear_f32(grid, out_h, out_w):
    """grid [H, W, C] bf16 -> [out_h, out_w, C] float32, as PyTorch's bilinear upsampling kernel computes a
    bf16 tensor on CUDA (F.interpolate(align_corners=False, antialias=False); accumulation type float):
    source coordinate s = max(0, (i + 0.5) * in / out - 0.5), neighbours floor(s) and floor(s) + 1
    (clamped), weights 1 - frac and frac, value h0 * (w0 * x00 + w1 * x01) + h1 * (w0 * x10 + w1 * x11),
    every operation rounded to float32. (float64 here would round differently from the official fp32
    for ~2 % of the grid's values after bf16 rounding: bilinear blends of bf16 values sit near ties.)"""
    H, W, _ = grid.shape
    g = grid.to(F32)

    def taps(out, size):
        scale = np.float32(size) / np.float32(out)
        src = scale * (np.arange(out, dtype=np.float32) + np.float32(0.5)) - np.float32(0.5)
        src = np.maximum(src, np.float32(0.0)).astype(np.float32)
        i0 = np.minimum(src.astype(np.int64), size - 1)
        l1 = (src - i0.astype(np.float32)).astype(np.float32)
        l0 = (np.float32(1.0) - l1).astype(np.float32)
        i1 = np.where(i0 < size - 1, i0 + 1, i0)
        return (torch.from_numpy(i0), torch.from_numpy(i1), torch.from_numpy(l0), torch.from_numpy(l1))

    y0, y1, h0, h1 = taps(out_h, H)
    x0, x1, w0, w1 = taps(out_w, W)
    h0, h1 = h0[:, None, None], h1[:, None, None]
    w0, w1 = w0[None, :, None], w1[None, :, None]
    top = w0 * g[y0][:, x0] + w1 * g[y0][:, x1]
    bottom = w0 * g[y1][:, x0] + w1 * g[y1][:, x1]
    return h0 * top + h1 * bottom


def rope_tables(gh, gw, head_dim):
    """cos, sin [gh*gw, head_dim/2] fp32 as the official Rope2DPosEmbRepeated computes them: for
    i < head_dim/4, f_i = 1 / theta^(4i/head_dim); pair 2i turns by column * f_i, pair 2i+1 by row * f_i."""
    dim_range = torch.arange(0, head_dim, 4)[: head_dim // 4].float()
    freqs = 1.0 / (ROPE_THETA ** (dim_range / head_dim))
    flat = torch.arange(gh * gw).float()
    x_pos = flat % gw
    y_pos = torch.div(flat, gw, rounding_mode="floor")
    ang = torch.stack([torch.outer(x_pos, freqs), torch.outer(y_pos, freqs)], dim=-1).reshape(gh * gw, -1)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    """x [N, H, D] bf16, interleaved pairs rotated in fp32 (the official ApplyRotaryEmb,
    is_neox_style=False, enable_fp32_compute=True) -> bf16."""
    xf = x.to(F32)
    x1, x2 = xf[..., 0::2], xf[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    o1 = x1 * c - x2 * s
    o2 = x2 * c + x1 * s
    return torch.stack([o1, o2], dim=-1).flatten(-2).to(BF16)


class VisionReference:
    def __init__(self, model_dir, tensors=None):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = VisionConfig(json.load(f))
        self.w = tensors if tensors is not None else safetensors_np.load_checkpoint(model_dir)

    def t(self, name):
        if name not in self.w:
            raise KeyError(f"checkpoint has no tensor {name}")
        t = self.w[name]
        if t.dtype != BF16:
            raise ValueError(f"{name}: expected BF16, got {t.dtype}")
        return t

    def output_tokens(self, gh, gw):
        kh, kw = self.cfg.merge
        return (gh // kh) * (gw // kw)

    def encode(self, patches, gh, gw):
        """patches [gh*gw, 3*p*p] float32 -> [N/4, text_hidden] bf16."""
        cfg = self.cfg
        kh, kw = cfg.merge
        if gh % kh or gw % kw or not (0 < gh <= MAX_GRID_SIDE and 0 < gw <= MAX_GRID_SIDE):
            raise ValueError(f"grid {gh}x{gw} is not a positive multiple of the merge kernel {kh}x{kw}")
        N, p, h = gh * gw, cfg.patch, cfg.hidden
        x = torch.as_tensor(patches, dtype=F32).reshape(N, 3, p, p).to(BF16)
        emb = to_bf16(F.conv2d(wide(x), wide(self.t("vision_tower.patch_embed.proj.weight")), stride=p))
        emb = emb.reshape(N, h)
        grid = self.t("vision_tower.patch_embed.pos_emb.weight")                      # [H, W, h]
        if (gh, gw) == (cfg.pos_h, cfg.pos_w):
            pos = grid.reshape(N, h)
        else:
            pos = resize_bilinear_f32(grid, gh, gw).reshape(N, h).to(BF16)
        hs = to_bf16(wide(emb) + wide(pos))
        cos, sin = rope_tables(gh, gw, cfg.head_dim)
        H, D = cfg.heads, cfg.head_dim
        scale = D ** -0.5
        for b in range(cfg.layers):
            pre = f"vision_tower.encoder.blocks.{b}."
            t = rms_norm(hs, self.t(pre + "norm0.weight"), cfg.eps)
            qkv = linear(t, self.t(pre + "wqkv.weight")).reshape(N, 3, H, D)
            q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            s = torch.einsum("thd,jhd->htj", wide(q), wide(k)) * scale
            prob = torch.softmax(s, dim=-1)
            ctx = to_bf16(torch.einsum("htj,jhd->thd", prob, wide(v)).reshape(N, H * D))
            hs = to_bf16(wide(hs) + wide(linear(ctx, self.t(pre + "wo.weight"))))
            t = rms_norm(hs, self.t(pre + "norm1.weight"), cfg.eps)
            f = linear(t, self.t(pre + "mlp.fc0.weight"))
            f = to_bf16(F.gelu(wide(f), approximate="tanh"))
            f = linear(f, self.t(pre + "mlp.fc1.weight"))
            hs = to_bf16(wide(hs) + wide(f))
        hs = rms_norm(hs, self.t("vision_tower.encoder.final_layernorm.weight"), cfg.eps)
        # sd2_tpool: (t*h*w, d) -> (t, nh, kh, nw, kw, d), mean over t (= 1), -> (nh*nw, kh*kw*d).
        nh, nw = gh // kh, gw // kw
        m = hs.reshape(1, nh, kh, nw, kw, h).to(F32).mean(dim=0).to(BF16)
        m = m.permute(0, 2, 1, 3, 4).reshape(nh * nw, kh * kw * h)
        a = linear(m, self.t("mm_projector.proj.0.weight"))
        a = to_bf16(F.gelu(wide(a)))
        o = linear(a, self.t("mm_projector.proj.2.weight"))
        return rms_norm(o, self.t("mm_projector.post_norm.weight"), cfg.proj_eps)


# ---------------------------------------------------------------------------------------------------
# Synthetic images (the golden inputs; tests/model/vision_golden rules are the same in C++)
# ---------------------------------------------------------------------------------------------------

M32 = 0xFFFFFFFF


def synthetic_pixel(x, y, c, width, height, index):
    """uint8 value of channel c at (x, y) of synthetic image `index` (width x height pixels): a diagonal
    gradient per channel plus 6 bits of an integer hash (all arithmetic mod 2^32)."""
    hsh = ((x * 73856093) & M32) ^ ((y * 19349663) & M32) ^ (((c + 3 * index) * 83492791) & M32)
    return ((x * 255) // width + (y * 255) // height + ((hsh >> 13) % 64) + 40 * c) % 256


def synthetic_image(gh, gw, index, patch=14):
    """[3, gh*patch, gw*patch] uint8 (channel-first)."""
    H, W = gh * patch, gw * patch
    y = np.arange(H, dtype=np.int64)[:, None]
    x = np.arange(W, dtype=np.int64)[None, :]
    out = np.empty((3, H, W), dtype=np.int64)
    for c in range(3):
        hsh = ((x * 73856093) & M32) ^ ((y * 19349663) & M32) ^ (((c + 3 * index) * 83492791) & M32)
        out[c] = ((x * 255) // W + (y * 255) // H + ((hsh >> 13) % 64) + 40 * c) % 256
    return out.astype(np.uint8)


def normalise_and_patchify(image, patch=14):
    """uint8 [3, H, W] -> float32 [H/p * W/p, 3*p*p]: (x / 255 - 0.5) / 0.5 in float32 as the official
    processor's _normalize, then patches in raster order, each channel-first."""
    x = image.astype(np.float32) / np.float32(255.0)
    x = (x - np.float32(0.5)) * np.float32(2.0)
    C, H, W = x.shape
    gh, gw = H // patch, W // patch
    p = x.reshape(C, gh, patch, gw, patch).transpose(1, 3, 0, 2, 4)
    return np.ascontiguousarray(p.reshape(gh * gw, C * patch * patch))


def synthetic_patches(gh, gw, index, patch=14):
    return normalise_and_patchify(synthetic_image(gh, gw, index, patch), patch)


def parse_grid(text):
    gh, gw = text.lower().split("x")
    return int(gh), int(gw)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint directory with a vision_config")
    ap.add_argument("--grid", required=True, help="patch grid ROWSxCOLUMNS, e.g. 6x10")
    ap.add_argument("--image-index", type=int, default=0, help="which synthetic image")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ref = VisionReference(args.model)
    gh, gw = parse_grid(args.grid)
    out = ref.encode(synthetic_patches(gh, gw, args.image_index, ref.cfg.patch), gh, gw)
    o = out.to(F32)
    print(f"output {tuple(o.shape)}, RMS {float(o.pow(2).mean().sqrt()):.4f}")
    for r in range(min(3, o.shape[0])):
        print(f"row {r}: " + " ".join(f"{float(v):.4f}" for v in o[r, :8]))


if __name__ == "__main__":
    main()
