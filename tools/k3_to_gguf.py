#!/usr/bin/python3
"""Converts a k3stack K3 checkpoint (config.json + sharded safetensors, MXFP4 routed experts in the
compressed-tensors layout) into a GGUF file for llama.cpp's `kimi-k3` architecture, for the
side-by-side benchmark (bench/peer/run.py). Written from the GGUF format description and the tensor
layout llama.cpp's kimi-k3 model loader expects (src/models/kimi-k3.cpp in the llama.cpp bundled with
node-llama-cpp 3.22.1); no llama.cpp code is used.

  tools/k3_to_gguf.py CHECKPOINT_DIR OUT.gguf

Bytes are kept where llama.cpp allows: bf16 matrices stay bf16 (embedding, lm_head, attention, dense and
shared MLPs, router, latent projections), MXFP4 experts are repacked bit for bit into ggml's block_mxfp4
(the E8M0 scale byte, then 16 bytes with element j in the low and element j + 16 in the high nibble).
What llama.cpp needs in fp32 becomes fp32 (exact widening of bf16): every norm weight and the other
1-D tensors, the KDA conv weights, and the AttnRes pseudo-queries (res_norm * res_proj, one vector,
computed in fp32 as the engine does). A_log becomes -exp(A_log) over the KDA heads (llama.cpp folds it at
conversion). The vocabulary is written as `none` with vocab_size dummy tokens: both engines are driven
with token ids, so no tokenizer is involved.

Python 3 with numpy only (Debian's python3-numpy).
"""
import json
import os
import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# GGUF metadata value types
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY = 4, 5, 6, 7, 8, 9
# ggml tensor types
GGML_F32, GGML_BF16, GGML_MXFP4 = 0, 30, 39
MXFP4_BLOCK_VALUES, MXFP4_BLOCK_BYTES = 32, 17
EXPERT_GATING_SIGMOID = 2  # LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID
NUM_SPECIAL_TOKENS = 256


# ---------------------------------------------------------------------------------------------------
# safetensors reading


class Checkpoint:
    """The tensors of a sharded safetensors checkpoint, read through numpy memory maps."""

    _DTYPES = {"BF16": np.uint16, "F32": np.float32, "U8": np.uint8, "F16": np.float16}

    def __init__(self, directory):
        self.dir = directory
        self.entries = {}  # name -> (path, dtype string, shape, begin, end)
        for shard in sorted(f for f in os.listdir(directory) if f.endswith(".safetensors")):
            path = os.path.join(directory, shard)
            with open(path, "rb") as f:
                (header_len,) = struct.unpack("<Q", f.read(8))
                header = json.loads(f.read(header_len))
            base = 8 + header_len
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                begin, end = info["data_offsets"]
                self.entries[name] = (path, info["dtype"], tuple(info["shape"]), base + begin, base + end)
        self._maps = {}

    def names(self):
        return list(self.entries)

    def dtype(self, name):
        return self.entries[name][1]

    def get(self, name):
        """The tensor as stored: bf16 as uint16 words, MXFP4 parts as uint8."""
        path, dtype, shape, begin, end = self.entries[name]
        if path not in self._maps:
            self._maps[path] = np.memmap(path, dtype=np.uint8, mode="r")
        raw = self._maps[path][begin:end]
        return raw.view(self._DTYPES[dtype]).reshape(shape)

    def f32(self, name):
        """The tensor widened to float32 (exact for bf16)."""
        t = self.get(name)
        if self.dtype(name) == "BF16":
            return (t.astype(np.uint32) << 16).view(np.float32)
        return t.astype(np.float32)


# ---------------------------------------------------------------------------------------------------
# GGUF writing


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


class GgufWriter:
    """Collects metadata and tensors, then writes a GGUF v3 file in one pass."""

    def __init__(self):
        self.kv = []  # (key, type, packed value)
        self.tensors = []  # (name, ggml type, ne (innermost first), bytes-like)

    def add_u32(self, key, v):
        self.kv.append((key, T_UINT32, struct.pack("<I", int(v))))

    def add_f32(self, key, v):
        self.kv.append((key, T_FLOAT32, struct.pack("<f", float(v))))

    def add_bool(self, key, v):
        self.kv.append((key, T_BOOL, struct.pack("<B", 1 if v else 0)))

    def add_str(self, key, v):
        self.kv.append((key, T_STRING, _string(v)))

    def add_u32_array(self, key, values):
        body = struct.pack("<IQ", T_UINT32, len(values)) + b"".join(struct.pack("<I", int(v)) for v in values)
        self.kv.append((key, T_ARRAY, body))

    def add_str_array(self, key, values):
        body = struct.pack("<IQ", T_STRING, len(values)) + b"".join(_string(v) for v in values)
        self.kv.append((key, T_ARRAY, body))

    def add_f32_array(self, key, values):
        body = struct.pack("<IQ", T_FLOAT32, len(values)) + np.asarray(values, dtype="<f4").tobytes()
        self.kv.append((key, T_ARRAY, body))

    def add_i32_array(self, key, values):
        body = struct.pack("<IQ", T_INT32, len(values)) + np.asarray(values, dtype="<i4").tobytes()
        self.kv.append((key, T_ARRAY, body))

    def add_tensor(self, name, ggml_type, ne, data):
        data = np.ascontiguousarray(data)
        self.tensors.append((name, ggml_type, tuple(int(n) for n in ne), data))

    def write(self, path):
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv)))
            for key, vtype, body in self.kv:
                f.write(_string(key) + struct.pack("<I", vtype) + body)
            offset = 0
            for name, ggml_type, ne, data in self.tensors:
                f.write(_string(name) + struct.pack("<I", len(ne)))
                f.write(b"".join(struct.pack("<Q", n) for n in ne))
                f.write(struct.pack("<IQ", ggml_type, offset))
                offset += _padded(data.nbytes)
            f.write(b"\0" * (_padded(f.tell()) - f.tell()))
            for name, ggml_type, ne, data in self.tensors:
                f.write(memoryview(data.reshape(-1).view(np.uint8)))
                f.write(b"\0" * (_padded(data.nbytes) - data.nbytes))
        os.replace(tmp, path)


def _padded(n):
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


# GGUF reading (tests, bench/peer/run.py's bytes per token)

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_TYPE_BYTES = {GGML_F32: (1, 4), GGML_BF16: (1, 2), GGML_MXFP4: (MXFP4_BLOCK_VALUES, MXFP4_BLOCK_BYTES)}


def read_gguf(path):
    """(metadata {key: value}, tensors {name: (ggml type, ne, numpy uint8 view of its bytes)}) of a GGUF v3
    file whose tensors are F32, BF16 or MXFP4."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    pos = 0

    def take(fmt):
        nonlocal pos
        (v,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        n = take("<Q")
        s = bytes(data[pos:pos + n]).decode("utf-8")
        pos += n
        return s

    def value(vtype):
        if vtype == T_STRING:
            return string()
        if vtype == T_ARRAY:
            etype, count = take("<I"), take("<Q")
            return [value(etype) for _ in range(count)]
        return take(_SCALARS[vtype])

    if bytes(data[:4]) != GGUF_MAGIC:
        raise ValueError(f"{path}: not a GGUF file")
    pos = 4
    version, n_tensors, n_kv = take("<I"), take("<Q"), take("<Q")
    if version != GGUF_VERSION:
        raise ValueError(f"{path}: GGUF version {version}, expected {GGUF_VERSION}")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        ne = tuple(take("<Q") for _ in range(take("<I")))
        infos.append((name, take("<I"), ne, take("<Q")))
    base = _padded(pos) if meta.get("general.alignment", ALIGNMENT) == ALIGNMENT else None
    if base is None:
        raise ValueError(f"{path}: alignment {meta['general.alignment']} is not {ALIGNMENT}")
    tensors = {}
    for name, ggml_type, ne, offset in infos:
        per, nbytes = _TYPE_BYTES[ggml_type]
        count = int(np.prod(ne))
        size = count // per * nbytes
        tensors[name] = (ggml_type, ne, data[base + offset:base + offset + size])
    return meta, tensors


# ---------------------------------------------------------------------------------------------------
# MXFP4: compressed-tensors -> ggml block_mxfp4


def repack_mxfp4(packed, scale):
    """packed uint8 [rows, cols/2] (element 2i low nibble, 2i+1 high), scale uint8 [rows, cols/32] (E8M0)
    -> uint8 [rows, cols/32 * 17]: per block the scale, then byte j = element j | element j+16 << 4."""
    rows, half = packed.shape
    blocks = half * 2 // MXFP4_BLOCK_VALUES
    if scale.shape != (rows, blocks):
        raise ValueError(f"MXFP4 scale shape {scale.shape} does not match {(rows, blocks)}")
    src = np.asarray(packed).reshape(rows, blocks, 16)
    values = np.stack((src & 0x0F, src >> 4), axis=-1).reshape(rows, blocks, 32)
    out = np.empty((rows, blocks, MXFP4_BLOCK_BYTES), dtype=np.uint8)
    out[:, :, 0] = scale
    out[:, :, 1:] = values[:, :, :16] | (values[:, :, 16:] << 4)
    return out.reshape(rows, blocks * MXFP4_BLOCK_BYTES)


# ---------------------------------------------------------------------------------------------------
# the conversion


def text_config(config):
    return config.get("text_config", config)


def add_metadata(w, cfg, tc):
    arch = "kimi-k3"
    a = lambda key: f"{arch}.{key}"  # noqa: E731
    lac = tc["linear_attn_config"]
    n_layers = tc["num_hidden_layers"]
    full = set(lac["full_attn_layers"])  # 1-based
    if lac["num_heads"] != tc["num_attention_heads"]:
        raise ValueError("llama.cpp's kimi-k3 uses one head count for KDA and MLA; this checkpoint has "
                         f"{lac['num_heads']} KDA and {tc['num_attention_heads']} MLA heads")
    if not tc.get("mla_use_nope", False):
        raise ValueError("only nope-only MLA (mla_use_nope) is supported")
    if tc.get("hidden_act") != "situ" or tc.get("moe_router_activation_func") != "sigmoid":
        raise ValueError("expected the K3 architecture (situ activation, sigmoid router)")
    w.add_str("general.architecture", arch)
    w.add_str("general.name", os.path.basename(os.path.normpath(cfg["_dir"])))
    w.add_u32("general.alignment", ALIGNMENT)
    w.add_u32(a("context_length"), tc["max_position_embeddings"])
    w.add_u32(a("embedding_length"), tc["hidden_size"])
    w.add_u32(a("block_count"), n_layers)
    w.add_u32(a("feed_forward_length"), tc["intermediate_size"])
    w.add_u32(a("attention.head_count"), tc["num_attention_heads"])
    # MLA is run as MQA over the latent (one kv head); 0 marks a KDA layer
    w.add_u32_array(a("attention.head_count_kv"), [1 if (i + 1) in full else 0 for i in range(n_layers)])
    w.add_f32(a("attention.layer_norm_rms_epsilon"), tc["rms_norm_eps"])
    w.add_u32(a("vocab_size"), tc["vocab_size"])
    # KDA
    w.add_u32(a("ssm.conv_kernel"), lac["short_conv_kernel_size"])
    w.add_u32(a("kda.head_dim"), lac["head_dim"])
    if lac.get("gate_lower_bound") is not None:
        w.add_f32(a("kda.gate_lower_bound"), lac["gate_lower_bound"])
    # MLA
    kv_lora, rope = tc["kv_lora_rank"], tc["qk_rope_head_dim"]
    if tc.get("q_lora_rank"):
        w.add_u32(a("attention.q_lora_rank"), tc["q_lora_rank"])
    w.add_u32(a("attention.kv_lora_rank"), kv_lora)
    w.add_u32(a("rope.dimension_count"), rope)
    w.add_u32(a("attention.key_length"), kv_lora + rope)
    w.add_u32(a("attention.value_length"), kv_lora)
    w.add_u32(a("attention.key_length_mla"), tc["qk_nope_head_dim"] + rope)
    w.add_u32(a("attention.value_length_mla"), tc["v_head_dim"])
    # MoE
    w.add_u32(a("expert_count"), tc["num_experts"])
    w.add_u32(a("expert_used_count"), tc["num_experts_per_token"])
    w.add_u32(a("expert_feed_forward_length"), tc["moe_intermediate_size"])
    w.add_u32(a("expert_shared_count"), tc["num_shared_experts"])
    w.add_u32(a("leading_dense_block_count"), tc["first_k_dense_replace"])
    w.add_f32(a("expert_weights_scale"), tc["routed_scaling_factor"])
    w.add_bool(a("expert_weights_norm"), tc["moe_renormalize"])
    w.add_u32(a("expert_gating_func"), EXPERT_GATING_SIGMOID)
    if tc.get("routed_expert_hidden_size"):
        w.add_u32(a("expert_latent_length"), tc["routed_expert_hidden_size"])
    # SiTU, AttnRes
    w.add_f32(a("activation.situ_beta"), tc["activation_situ_beta"])
    w.add_f32(a("activation.situ_linear_beta"), tc["activation_situ_linear_beta"])
    w.add_u32(a("attn_res.block_size"), tc["attn_res_block_size"])
    add_placeholder_vocab(w, cfg, tc)


# llama.cpp token types
TOKEN_NORMAL, TOKEN_CONTROL, TOKEN_BYTE = 1, 3, 6


def add_placeholder_vocab(w, cfg, tc):
    """A vocabulary of vocab_size placeholder pieces in llama.cpp's SentencePiece form (ids 0..255 the
    byte pieces <0xNN>, then one piece per BPE rank, then the 256 special ids as control tokens, with the
    checkpoint's bos / eos / pad ids). Both engines are driven with token ids, so the pieces' text never
    matters; llama.cpp just needs an initialised tokenizer (`none` asserts in node-llama-cpp's loader)."""
    vocab = tc["vocab_size"]
    ranks = vocab - NUM_SPECIAL_TOKENS
    tokens = [f"<0x{i:02X}>" for i in range(256)] + [f"\u2581k3_{i}" for i in range(256, ranks)]
    tokens += [f"<|k3_special_{j}|>" for j in range(NUM_SPECIAL_TOKENS)]
    types = [TOKEN_BYTE] * 256 + [TOKEN_NORMAL] * (ranks - 256) + [TOKEN_CONTROL] * NUM_SPECIAL_TOKENS
    w.add_str("tokenizer.ggml.model", "llama")
    w.add_str_array("tokenizer.ggml.tokens", tokens)
    w.add_f32_array("tokenizer.ggml.scores", [0.0] * vocab)
    w.add_i32_array("tokenizer.ggml.token_type", types)
    for key, field in (("bos", "bos_token_id"), ("eos", "eos_token_id"), ("padding", "pad_token_id")):
        value = cfg.get(field, tc.get(field))
        if value is not None:
            w.add_u32(f"tokenizer.ggml.{key}_token_id", value)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_bool("tokenizer.ggml.add_eos_token", False)


# checkpoint suffix (after "model.layers.N.") -> GGUF suffix (after "blk.N."), bf16 matrices kept as is
LAYER_MATRICES = {
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.f_a_proj.weight": "ssm_f_a.weight",
    "self_attn.f_b_proj.weight": "ssm_f_b.weight",
    "self_attn.b_proj.weight": "ssm_beta.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_a_proj.weight": "attn_q_a.weight",
    "self_attn.q_b_proj.weight": "attn_q_b.weight",
    "self_attn.kv_a_proj_with_mqa.weight": "attn_kv_a_mqa.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "block_sparse_moe.gate.weight": "ffn_gate_inp.weight",
    "block_sparse_moe.shared_experts.gate_proj.weight": "ffn_gate_shexp.weight",
    "block_sparse_moe.shared_experts.up_proj.weight": "ffn_up_shexp.weight",
    "block_sparse_moe.shared_experts.down_proj.weight": "ffn_down_shexp.weight",
    "block_sparse_moe.routed_expert_down_proj.weight": "ffn_routed_down.weight",
    "block_sparse_moe.routed_expert_up_proj.weight": "ffn_routed_up.weight",
}
# -> fp32 vectors (llama.cpp reads norms and biases as fp32)
LAYER_VECTORS = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.o_norm.weight": "ssm_norm.weight",
    "self_attn.dt_bias": "ssm_dt.bias",
    "self_attn.q_a_layernorm.weight": "attn_q_a_norm.weight",
    "self_attn.kv_a_layernorm.weight": "attn_kv_a_norm.weight",
    "block_sparse_moe.gate.e_score_correction_bias": "exp_probs_b.bias",
    "block_sparse_moe.routed_expert_norm.weight": "ffn_routed_norm.weight",
}
EXPERT_PARTS = {"w1": "ffn_gate_exps.weight", "w2": "ffn_down_exps.weight", "w3": "ffn_up_exps.weight"}


def matrix(w, ck, src, dst):
    """A 2-D tensor [out, in] as ggml ne [in, out], dtype kept (bf16 or f32)."""
    t = ck.get(src)
    ggml_type = {"BF16": GGML_BF16, "F32": GGML_F32}[ck.dtype(src)]
    w.add_tensor(dst, ggml_type, tuple(reversed(t.shape)), t)


def vector(w, ck, src, dst):
    t = ck.f32(src).reshape(-1)
    w.add_tensor(dst, GGML_F32, (t.size,), t)


def convert(src_dir, out_path):
    with open(os.path.join(src_dir, "config.json")) as f:
        cfg = json.load(f)
    cfg["_dir"] = src_dir
    tc = text_config(cfg)
    ck = Checkpoint(src_dir)
    names = ck.names()
    prefix = "language_model." if any(n.startswith("language_model.") for n in names) else ""
    m = prefix + "model."
    w = GgufWriter()
    add_metadata(w, cfg, tc)

    n_layers = tc["num_hidden_layers"]
    n_head = tc["linear_attn_config"]["num_heads"]
    full = set(tc["linear_attn_config"]["full_attn_layers"])
    used = set()

    def take(name):
        if name not in ck.entries:
            raise KeyError(f"{name} is missing from {src_dir}")
        used.add(name)
        return name

    def res_score(base, dst):  # AttnRes: norm weight * 1-row projection, one fp32 pseudo-query
        q = ck.f32(take(base + "_norm.weight")).reshape(-1) * ck.f32(take(base + "_proj.weight")).reshape(-1)
        w.add_tensor(dst, GGML_F32, (q.size,), q.astype(np.float32))

    matrix(w, ck, take(m + "embed_tokens.weight"), "token_embd.weight")
    vector(w, ck, take(m + "norm.weight"), "output_norm.weight")
    matrix(w, ck, take(prefix + "lm_head.weight"), "output.weight")
    if tc.get("attn_res_block_size", 0) > 0:
        res_score(m + "output_attn_res", "output_res_score.weight")

    for i in range(n_layers):
        lp, blk = f"{m}layers.{i}.", f"blk.{i}."
        is_mla = (i + 1) in full
        for suffix, dst in LAYER_MATRICES.items():
            if lp + suffix in ck.entries:
                matrix(w, ck, take(lp + suffix), blk + dst)
        for suffix, dst in LAYER_VECTORS.items():
            if lp + suffix in ck.entries:
                vector(w, ck, take(lp + suffix), blk + dst)
        if tc.get("attn_res_block_size", 0) > 0:
            res_score(lp + "self_attention_res", blk + "attn_res_score.weight")
            res_score(lp + "mlp_res", blk + "ffn_res_score.weight")
        # g_proj: the full-rank KDA output gate, or the MLA output gate
        if lp + "self_attn.g_proj.weight" in ck.entries:
            gate = blk + ("attn_gate.weight" if is_mla else "ssm_g.weight")
            matrix(w, ck, take(lp + "self_attn.g_proj.weight"), gate)
        if not is_mla:
            for c in "qkv":  # [P, 1, K] -> ne [K, 1, P, 1], fp32
                t = ck.f32(take(f"{lp}self_attn.{c}_conv1d.weight"))
                p, k = t.shape[0], t.shape[-1]
                w.add_tensor(f"{blk}ssm_conv1d_{c}.weight", GGML_F32, (k, 1, p, 1), t.reshape(p, k))
            a = -np.exp(ck.f32(take(lp + "self_attn.A_log")).reshape(-1)[:n_head])
            w.add_tensor(blk + "ssm_a", GGML_F32, (n_head,), a.astype(np.float32))
        else:
            # kv_b [H * (nope + v), R] -> k_b [H, R, nope] (ne [nope, R, H]) and v_b [H, v, R] (ne [R, v, H])
            name = take(lp + "self_attn.kv_b_proj.weight")
            kv_b = ck.get(name)
            nope, v, r = tc["qk_nope_head_dim"], tc["v_head_dim"], tc["kv_lora_rank"]
            heads = kv_b.reshape(tc["num_attention_heads"], nope + v, r)
            ggml_type = {"BF16": GGML_BF16, "F32": GGML_F32}[ck.dtype(name)]
            k_b = np.ascontiguousarray(heads[:, :nope, :].transpose(0, 2, 1))
            v_b = np.ascontiguousarray(heads[:, nope:, :])
            w.add_tensor(blk + "attn_k_b.weight", ggml_type, (nope, r, heads.shape[0]), k_b)
            w.add_tensor(blk + "attn_v_b.weight", ggml_type, (r, v, heads.shape[0]), v_b)
        # routed experts: one [E, rows, cols] MXFP4 tensor per w1 / w2 / w3
        if lp + "block_sparse_moe.experts.0.w1.weight_packed" in ck.entries:
            n_experts = tc["num_experts"]
            for part, dst in EXPERT_PARTS.items():
                blocks = []
                for e in range(n_experts):
                    base = f"{lp}block_sparse_moe.experts.{e}.{part}.weight"
                    blocks.append(repack_mxfp4(ck.get(take(base + "_packed")), ck.get(take(base + "_scale"))))
                rows, cols = blocks[0].shape[0], blocks[0].shape[1] // MXFP4_BLOCK_BYTES * MXFP4_BLOCK_VALUES
                w.add_tensor(blk + dst, GGML_MXFP4, (cols, rows, n_experts), np.stack(blocks))
        elif any(n.startswith(lp + "block_sparse_moe.experts.") for n in names):
            raise ValueError("bf16 routed experts (Kimi Linear layout) are not converted; K3 has MXFP4 experts")

    # The vision tower and projector are not part of llama.cpp's text model (its mmproj file is separate,
    # and upstream llama.cpp has no K3 vision): the text GGUF leaves them out.
    left = sorted(n for n in set(names) - used if not n.startswith(("vision_tower.", "mm_projector.")))
    if left:
        raise ValueError(f"{len(left)} checkpoint tensors have no GGUF mapping, e.g. {left[0]}")
    w.write(out_path)
    return w


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    w = convert(argv[1], argv[2])
    size = os.path.getsize(argv[2])
    print(f"k3_to_gguf: {len(w.tensors)} tensors, {len(w.kv)} metadata keys, {size / 1e9:.3f} GB -> {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
