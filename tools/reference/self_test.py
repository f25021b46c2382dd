"""Self-checks of the PyTorch reference (no checkpoint needed). Run before trusting new goldens:

  /usr/bin/python3 tools/reference/self_test.py

  1. safetensors reader: round trip of bf16 / f32 / u8 tensors through a sharded index, and rejection
     of a truncated file and of an index that points at the wrong shard.
  2. MXFP4: the spec §3.3 golden row (16 values incl. -0.0) from hand-packed bytes, and per-group scales.
  3. KDA: the token-by-token recurrent rule vs the chunked form of §2.3 in float64 on random data
     (tail chunk included, decay down to -5 per step), and vs a naive O(T^2) closed form for T <= 8.
  4. Short conv: the loop form vs torch's grouped conv1d.
  5. MLA: the expanded form vs the absorbed (latent-cache) form of §2.4 in float64.
  6. Whole model on small synthetic checkpoints of both families (written here with random weights):
     every tensor is read, logits are finite, and the model is causal (a prefix's logits equal the
     leading rows of the full sequence's logits up to fp32 summation order).
Exits non-zero on any failure.
"""

import json
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_reference as ref  # noqa: E402
import safetensors_np  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def test_safetensors():
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(5, 7, generator=gen).to(torch.bfloat16)
    b = torch.randn(3, generator=gen)
    c = torch.randint(0, 256, (4, 6), generator=gen, dtype=torch.int64).to(torch.uint8)
    with tempfile.TemporaryDirectory() as d:
        safetensors_np.save_file(os.path.join(d, "model-00001-of-00002.safetensors"), {"a": a, "b": b})
        safetensors_np.save_file(os.path.join(d, "model-00002-of-00002.safetensors"), {"c": c})
        index = {"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                                 "b": "model-00001-of-00002.safetensors",
                                                 "c": "model-00002-of-00002.safetensors"}}
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f)
        t = safetensors_np.load_checkpoint(d)
        check(t["a"].dtype == torch.bfloat16 and torch.equal(t["a"].view(torch.int16), a.view(torch.int16)),
              "safetensors: bf16 bits round trip")
        check(t["b"].dtype == torch.float32 and torch.equal(t["b"], b), "safetensors: f32 round trip")
        check(t["c"].dtype == torch.uint8 and torch.equal(t["c"], c), "safetensors: u8 round trip")
        index["weight_map"]["c"] = "model-00001-of-00002.safetensors"
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f)
        try:
            safetensors_np.load_checkpoint(d)
            check(False, "safetensors: index pointing at the wrong shard is rejected")
        except safetensors_np.SafetensorsError:
            check(True, "safetensors: index pointing at the wrong shard is rejected")
        path = os.path.join(d, "model-00002-of-00002.safetensors")
        data = open(path, "rb").read()
        with open(path, "wb") as f:
            f.write(data[:-3])
        try:
            safetensors_np.load_file(path)
            check(False, "safetensors: truncated data area is rejected")
        except safetensors_np.SafetensorsError:
            check(True, "safetensors: truncated data area is rejected")
    # A known bf16 bit pattern: 0x3FC0 = 1.5, 0xC000 = -2.0, 0x0001 = smallest subnormal.
    import numpy as np
    bits = np.array([0x3FC0, 0xC000, 0x0001, 0x8000], dtype=np.uint16)
    v = safetensors_np.bf16_bits_to_tensor(bits).float()
    check(v[0] == 1.5 and v[1] == -2.0 and v[2] == 2.0 ** -133 and str(float(v[3])) == "-0.0",
          "safetensors: bf16 bit patterns decode exactly")


def test_mxfp4():
    # Spec §3.3 golden row (first 16 values, low-nibble-first order). All fit one scale 2^-6 (E8M0 121):
    # value / 2^-6 = 4, .5, -.5, -1.5, -4, -2, 1.5, 1, 3, -0, -1.5, -1, -1.5, -.5, 1, -1.
    golden = [0.0625, 0.0078125, -0.0078125, -0.0234375, -0.0625, -0.03125, 0.0234375, 0.015625, 0.046875, -0.0,
              -0.0234375, -0.015625, -0.0234375, -0.0078125, 0.015625, -0.015625]
    # E2M1 codes by hand: magnitude index into {0,.5,1,1.5,2,3,4,6}, bit 3 = sign.
    codes = [6, 1, 9, 11, 14, 12, 3, 2, 5, 8, 11, 10, 11, 9, 2, 10] + [0] * 16
    packed = torch.tensor([[codes[2 * j] | (codes[2 * j + 1] << 4) for j in range(16)]], dtype=torch.uint8)
    scale = torch.tensor([[121]], dtype=torch.uint8)
    w = ref.mxfp4_dequant(packed, scale, 32)
    got = w[0, :16].float().tolist()
    same = all(g == e and (str(g).startswith("-") == str(e).startswith("-")) for g, e in zip(got, golden))
    check(w.dtype == torch.bfloat16 and w.shape == (1, 32) and same, "mxfp4: spec §3.3 golden row (signs incl. -0.0)")
    # Two groups with different scales, two rows: group k of row r uses scale[r, k].
    packed = torch.full((2, 32), 0x21, dtype=torch.uint8)  # low nibble 1 (0.5), high nibble 2 (1.0)
    scale = torch.tensor([[127, 130], [120, 255 - 1]], dtype=torch.uint8)
    w = ref.mxfp4_dequant(packed, scale, 32).float()
    ok = (w[0, 0] == 0.5 and w[0, 1] == 1.0 and w[0, 32] == 4.0 and w[0, 33] == 8.0 and
          w[1, 0] == 0.5 * 2.0 ** -7 and w[1, 63] == 2.0 ** 127)
    check(bool(ok), "mxfp4: scale per row and per 32-input group, E8M0 = 2^(s-127)")


def naive_kda(q, k, v, g, beta, scale):
    """O(T^2) closed form for tiny T: S_t = diag(e^g_t)S_{t-1}(I) ... written as explicit products."""
    T, H, K = q.shape
    V = v.shape[-1]
    qn = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) * scale
    kn = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    out = torch.empty(T, H, V, dtype=q.dtype)
    for h in range(H):
        # S_t = (I - beta_t k_t k_t^T) D_t S_{t-1} + beta_t k_t v_t^T, D_t = diag(exp(g_t)).
        S = torch.zeros(K, V, dtype=q.dtype)
        for t in range(T):
            D = torch.diag(torch.exp(g[t, h]))
            P = torch.eye(K, dtype=q.dtype) - beta[t, h] * torch.outer(kn[t, h], kn[t, h])
            S = P @ D @ S + beta[t, h] * torch.outer(kn[t, h], v[t, h])
            out[t, h] = qn[t, h] @ S
    return out


def test_kda():
    gen = torch.Generator().manual_seed(2)
    T, H, K, V = 150, 2, 16, 12
    dt = torch.float64
    q = torch.randn(T, H, K, generator=gen, dtype=dt)
    k = torch.randn(T, H, K, generator=gen, dtype=dt)
    v = torch.randn(T, H, V, generator=gen, dtype=dt)
    g = -5.0 * torch.sigmoid(torch.randn(T, H, K, generator=gen, dtype=dt) * 3)
    beta = torch.sigmoid(torch.randn(T, H, generator=gen, dtype=dt))
    rec = ref.kda_recurrent(q, k, v, g, beta, K ** -0.5)
    chk = ref.kda_chunked(q, k, v, g, beta, K ** -0.5, chunk=64)
    err = float((rec - chk).abs().max())
    check(err < 1e-12, f"kda: recurrent vs chunked (T=150, chunk 64, float64) max diff {err:.2e}")
    small = ref.kda_recurrent(q[:8], k[:8], v[:8], g[:8], beta[:8], K ** -0.5)
    nv = naive_kda(q[:8], k[:8], v[:8], g[:8], beta[:8], K ** -0.5)
    err = float((small - nv).abs().max())
    check(err < 1e-12, f"kda: recurrent vs explicit (I - b k k^T) D S + b k v^T products, max diff {err:.2e}")
    # fp32 recurrent vs float64: the reference's own precision is fine for 1e-2 comparisons.
    rec32 = ref.kda_recurrent(q.float(), k.float(), v.float(), g.float(), beta.float(), K ** -0.5)
    rel = float((rec32.double() - rec).norm() / rec.norm())
    check(rel < 1e-5, f"kda: fp32 recurrence vs float64 relative L2 {rel:.2e}")


def test_conv():
    gen = torch.Generator().manual_seed(3)
    T, P, W = 9, 6, 4
    raw = torch.randn(T, P, generator=gen).to(torch.bfloat16)
    w = torch.randn(P, 1, W, generator=gen)
    got = ref.short_conv_silu(raw, w)
    c = F.conv1d(raw.float().t()[None], w, padding=W - 1, groups=P)[0, :, :T].t()
    want = F.silu(c).to(torch.bfloat16)
    # Equal up to one bf16 rounding step (the two sum the 4 taps in different orders).
    ulp = want.float().abs().clamp_min(1e-30) * 2.0 ** -8
    check(bool(((got.float() - want.float()).abs() <= ulp).all()),
          "short conv: loop form vs grouped conv1d (causal, zero history)")
    # The first output only sees the current token: tap W-1.
    first = F.silu(raw[0].float() * w[:, 0, W - 1]).to(torch.bfloat16)
    check(torch.equal(got[0].float(), first.float()), "short conv: tap W-1 multiplies the current token")


def test_mla_absorbed():
    gen = torch.Generator().manual_seed(4)
    T, H, nope, rope, vd, r = 7, 3, 8, 4, 5, 6
    dt = torch.float64
    q = torch.randn(T, H, nope + rope, generator=gen, dtype=dt)
    c = torch.randn(T, r, generator=gen, dtype=dt)
    k_pe = torch.randn(T, rope, generator=gen, dtype=dt)
    wkvb = torch.randn(H * (nope + vd), r, generator=gen, dtype=dt)
    kv = (c @ wkvb.t()).reshape(T, H, nope + vd)
    k = torch.cat([kv[:, :, :nope], k_pe[:, None, :].expand(T, H, rope)], -1)
    scores = torch.einsum("thd,shd->hts", q, k) * (nope + rope) ** -0.5
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1)[None], float("-inf"))
    o = torch.einsum("hts,shd->thd", torch.softmax(scores, -1), kv[:, :, nope:])
    o2 = torch.empty_like(o)
    for h in range(H):
        wuk = wkvb[h * (nope + vd):h * (nope + vd) + nope]
        wuv = wkvb[h * (nope + vd) + nope:(h + 1) * (nope + vd)]
        for t in range(T):
            s = ((wuk.t() @ q[t, h, :nope]) @ c[:t + 1].t() + k_pe[:t + 1] @ q[t, h, nope:]) * (nope + rope) ** -0.5
            ctx = torch.softmax(s, 0) @ c[:t + 1]
            o2[t, h] = wuv @ ctx
    err = float((o - o2).abs().max())
    check(err < 1e-12, f"mla: expanded vs absorbed form (float64) max diff {err:.2e}")


def synthetic_checkpoint(d, family, gen):
    """Writes a small random checkpoint of `family` into d (HF layout, one shard, MXFP4 experts for K3)."""
    D, V, H, K, E, I, LAT = 32, 96, 2, 16, 6, 32, 32
    la = {"num_heads": H, "head_dim": K, "short_conv_kernel_size": 4, "kda_layers": [1, 2, 3, 5, 6],
          "full_attn_layers": [4, 7]}
    text = {"model_type": "kimi_linear", "hidden_size": D, "num_hidden_layers": 7, "vocab_size": V,
            "rms_norm_eps": 1e-5, "intermediate_size": 40, "first_k_dense_replace": 1, "moe_layer_freq": 1,
            "num_experts": E, "num_experts_per_token": 2, "moe_intermediate_size": I, "num_shared_experts": 1,
            "moe_renormalize": True, "moe_router_activation_func": "sigmoid", "num_attention_heads": 2,
            "kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
            "linear_attn_config": la, "tie_word_embeddings": False}
    if family == "kimi_k3":
        text.update({"hidden_act": "situ", "q_lora_rank": 12, "mla_use_output_gate": True,
                     "routed_expert_hidden_size": LAT, "latent_moe_use_norm": True, "attn_res_block_size": 3,
                     "routed_scaling_factor": 1.0})
        la.update({"use_full_rank_gate": True, "gate_lower_bound": -5.0})
        cfg = {"model_type": "kimi_k3", "text_config": text,
               "quantization_config": {"quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized"}}
        prefix, io = "language_model.", LAT
    else:
        text.update({"hidden_act": "silu", "q_lora_rank": None, "routed_scaling_factor": 2.446})
        la.update({"use_full_rank_gate": False})
        cfg, prefix, io = text, "", D
    P = H * K
    w = {}

    def lin(name, o, i):
        w[prefix + name] = (torch.randn(o, i, generator=gen) / i ** 0.5).to(torch.bfloat16)

    def norm(name, n, dtype=torch.bfloat16):
        w[prefix + name] = (1 + 0.1 * torch.randn(n, generator=gen)).to(dtype)

    w[prefix + "model.embed_tokens.weight"] = torch.randn(V, D, generator=gen).to(torch.bfloat16)
    norm("model.norm.weight", D)
    lin("lm_head.weight", V, D)
    if family == "kimi_k3":
        norm("model.output_attn_res_norm.weight", D)
        lin("model.output_attn_res_proj.weight", 1, D)
    for layer in range(7):
        L = f"model.layers.{layer}."
        norm(L + "input_layernorm.weight", D)
        norm(L + "post_attention_layernorm.weight", D)
        if family == "kimi_k3":
            for n in ("self_attention_res", "mlp_res"):
                norm(L + n + "_norm.weight", D)
                lin(L + n + "_proj.weight", 1, D)
        a = L + "self_attn."
        if layer + 1 in la["kda_layers"]:
            for n in "qkv":
                lin(a + n + "_proj.weight", P, D)
                w[prefix + a + n + "_conv1d.weight"] = torch.randn(P, 1, 4, generator=gen) / 2
            lin(a + "f_a_proj.weight", K, D)
            lin(a + "f_b_proj.weight", P, K)
            a_log = torch.log(1 + 15 * torch.rand(H, generator=gen))
            if family == "kimi_k3":
                w[prefix + a + "A_log"] = torch.cat([a_log, torch.zeros(128 - H)])
                lin(a + "g_proj.weight", P, D)
            else:
                w[prefix + a + "A_log"] = a_log.reshape(1, 1, H, 1)
                lin(a + "g_a_proj.weight", K, D)
                lin(a + "g_b_proj.weight", P, K)
            w[prefix + a + "dt_bias"] = 0.1 * torch.randn(P, generator=gen)
            lin(a + "b_proj.weight", H, D)
            norm(a + "o_norm.weight", K, torch.float32)
            lin(a + "o_proj.weight", D, P)
        else:
            if family == "kimi_k3":
                lin(a + "q_a_proj.weight", 12, D)
                norm(a + "q_a_layernorm.weight", 12)
                lin(a + "q_b_proj.weight", 2 * 12, 12)
                lin(a + "g_proj.weight", 2 * 8, D)
            else:
                lin(a + "q_proj.weight", 2 * 12, D)
            lin(a + "kv_a_proj_with_mqa.weight", 8 + 4, D)
            norm(a + "kv_a_layernorm.weight", 8)
            lin(a + "kv_b_proj.weight", 2 * 16, 8)
            lin(a + "o_proj.weight", D, 2 * 8)
        if layer == 0:
            for n, o, i in (("gate_proj", 40, D), ("up_proj", 40, D), ("down_proj", D, 40)):
                lin(L + "mlp." + n + ".weight", o, i)
            continue
        m = L + "block_sparse_moe."
        lin(m + "gate.weight", E, D)
        w[prefix + m + "gate.e_score_correction_bias"] = 0.01 * torch.randn(E, generator=gen)
        if family == "kimi_k3":
            lin(m + "routed_expert_down_proj.weight", LAT, D)
            norm(m + "routed_expert_norm.weight", LAT)
            lin(m + "routed_expert_up_proj.weight", D, LAT)
        for n, o, i in (("gate_proj", I, D), ("up_proj", I, D), ("down_proj", D, I)):
            lin(m + "shared_experts." + n + ".weight", o, i)
        for e in range(E):
            for n, o, i in (("w1", I, io), ("w3", I, io), ("w2", io, I)):
                if family == "kimi_k3":
                    w[prefix + f"{m}experts.{e}.{n}.weight_packed"] = torch.randint(
                        0, 256, (o, i // 2), generator=gen, dtype=torch.int64).to(torch.uint8)
                    w[prefix + f"{m}experts.{e}.{n}.weight_scale"] = torch.randint(
                        122, 126, (o, i // 32), generator=gen, dtype=torch.int64).to(torch.uint8)
                else:
                    lin(f"{m}experts.{e}.{n}.weight", o, i)
    safetensors_np.save_file(os.path.join(d, "model.safetensors"), w)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    return w


def test_synthetic_model():
    for family in ("kimi_k3", "kimi_linear"):
        gen = torch.Generator().manual_seed(5)
        with tempfile.TemporaryDirectory() as d:
            synthetic_checkpoint(d, family, gen)
            model = ref.Reference(d)
            tokens = [3, 17, 90, 5, 5, 41, 77, 12, 0, 95]
            full = model.forward(tokens)
            check(bool(torch.isfinite(full).all()) and full.shape == (10, 96), f"{family}: finite logits [T, V]")
            # Layer 0's pre-attention mixer is never applied (the bank is empty there, spec §2.6).
            unused = [n for n in model.w if n not in model.used and ".experts." not in n and
                      "layers.0.self_attention_res_" not in n]
            check(not unused, f"{family}: every non-expert tensor is read ({unused[:3]})")
            part = model.forward(tokens[:6])
            rel = float((part - full[:6]).norm() / full[:6].norm())
            check(rel < 1e-2, f"{family}: causal (prefix logits == leading rows), relative L2 {rel:.1e}")
            # One MLA layer (layer 3) on the same input: the two forms differ only by bf16 rounding.
            x = torch.randn(10, 32, generator=gen).to(torch.bfloat16)
            a, b = model.mla_absorbed(3, x).float(), model.mla_expanded(3, x).float()
            rel = float((a - b).norm() / a.norm())
            check(0 < rel < 1e-2, f"{family}: MLA absorbed vs expanded form differ only by rounding ({rel:.1e})")
            changed = model.forward(tokens[:6] + [1, 2, 3, 4])
            check(float((changed[:6] - part).norm() / part.norm()) < 1e-2 and
                  float((changed[6:] - full[6:]).norm()) > 0, f"{family}: later tokens change only later rows")


def test_vision():
    """vision_reference.py: the input rule, 2-D RoPE pairing, the merge order and a whole random tower."""
    import vision_reference as vr
    img = vr.synthetic_image(2, 4, 3)
    same = all(int(img[c, y, x]) == vr.synthetic_pixel(x, y, c, 56, 28, 3)
               for c in range(3) for y in range(0, 28, 5) for x in range(0, 56, 7))
    check(same, "vision: synthetic_image follows synthetic_pixel's rule")
    patches = vr.normalise_and_patchify(img)
    check(patches.shape == (8, 588) and abs(float(patches[5, 0]) - (float(img[0, 14, 14]) / 255 - 0.5) * 2) < 1e-6,
          "vision: patches in raster order, channel-first, normalised (x/255 - 0.5)/0.5")
    cos, sin = vr.rope_tables(3, 5, 8)
    angle = torch.atan2(sin, cos)
    # token (row 2, column 3) = index 13: pair 0 turns by column * 1, pair 1 by row * 1, pair 2 by 3/100.
    check(abs(float(angle[13, 0]) - 3.0) < 1e-6 and abs(float(angle[13, 1]) - 2.0) < 1e-6 and
          abs(float(angle[13, 2]) - 0.03) < 1e-6, "vision: 2-D RoPE pairs 2i (columns) and 2i+1 (rows)")
    with tempfile.TemporaryDirectory() as d:
        gen = torch.Generator().manual_seed(5)
        h, q, mlp, text = 16, 24, 32, 40
        raw = {"model_type": "kimi_k3", "text_config": {"hidden_size": text}, "media_placeholder_token_id": 7,
               "vision_config": {"vt_hidden_size": h, "vt_num_hidden_layers": 1, "vt_num_attention_heads": 2,
                                 "vt_intermediate_size": mlp, "qkv_hidden_size": q, "init_pos_emb_height": 3,
                                 "init_pos_emb_width": 4}}
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(raw, f)

        def rnd(*shape, std=1.0):
            return (torch.randn(*shape, generator=gen) * std).to(torch.bfloat16)
        w = {"vision_tower.patch_embed.proj.weight": rnd(h, 3, 14, 14, std=0.04),
             "vision_tower.patch_embed.pos_emb.weight": rnd(3, 4, h, std=0.5),
             "vision_tower.encoder.blocks.0.norm0.weight": rnd(h, std=0.02) + 1,
             "vision_tower.encoder.blocks.0.wqkv.weight": rnd(3 * q, h, std=0.25),
             "vision_tower.encoder.blocks.0.wo.weight": rnd(h, q, std=0.02),
             "vision_tower.encoder.blocks.0.norm1.weight": rnd(h, std=0.02) + 1,
             "vision_tower.encoder.blocks.0.mlp.fc0.weight": rnd(mlp, h, std=0.25),
             "vision_tower.encoder.blocks.0.mlp.fc1.weight": rnd(h, mlp, std=0.02),
             "vision_tower.encoder.final_layernorm.weight": rnd(h, std=0.02) + 1,
             "mm_projector.proj.0.weight": rnd(4 * h, 4 * h, std=0.125),
             "mm_projector.proj.2.weight": rnd(text, 4 * h, std=0.125),
             "mm_projector.post_norm.weight": rnd(text, std=0.02) + 1}
        ref = vr.VisionReference(d, tensors=w)
        out = ref.encode(vr.synthetic_patches(4, 6, 1), 4, 6)
        rms = float(out.float().pow(2).mean().sqrt())
        check(out.shape == (6, text) and out.dtype == torch.bfloat16 and 0.9 < rms < 1.1,
              f"vision: [4x6 patches] -> [6, text_hidden] rows of RMS ~1 ({rms:.3f})")
        # Merge order: with an identity-like projector the merged row (0, 1) holds tokens 2, 3, 8, 9.
        hs = torch.arange(24 * h, dtype=torch.float32).reshape(24, h)
        m = hs.reshape(1, 2, 2, 3, 2, h).mean(0).permute(0, 2, 1, 3, 4).reshape(6, 4 * h)
        check(torch.equal(m[1].reshape(4, h)[:, 0], torch.tensor([2.0, 3.0, 8.0, 9.0]) * h),
              "vision: sd2_tpool concatenates (0,0), (0,1), (1,0), (1,1)")


def main():
    torch.set_num_threads(2)
    test_safetensors()
    test_mxfp4()
    test_kda()
    test_conv()
    test_mla_absorbed()
    test_synthetic_model()
    test_vision()
    if failures:
        print(f"{len(failures)} FAILED")
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
