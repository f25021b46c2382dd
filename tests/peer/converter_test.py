#!/usr/bin/python3
"""Tests of tools/k3_to_gguf.py and of the two engines agreeing on its output (ctest label `peer`).

  tests/peer/converter_test.py PEER_K3_BINARY [converter|top1]

converter: generates tiny-k3 (every K3 feature, 4 MB) with `peer_k3 gen`, converts it and reads the GGUF
back with the converter's reader: metadata against config.json, every bf16 matrix byte for byte, the
MXFP4 experts decoded on both sides (compressed-tensors nibbles vs ggml block_mxfp4) to the same values,
MLA kv_b rebuilt from k_b / v_b, the AttnRes pseudo-queries, -exp(A_log) and the conv weights. Needs only
/usr/bin/python3 with numpy; exits 77 (skip) without numpy.

top1: the same checkpoint through k3 (`peer_k3 run`) and llama.cpp (bench/peer/llama_peer.mjs, node-llama-cpp
from bench/peer/node_modules): every greedy token of a 16-token prompt and 16 decode steps must be
equal; and scoring one shared sequence (`peer_k3 score`, `llama_peer.mjs --score`: the argmax after every
position) must give the same argmax everywhere, k3's equal to its own greedy tokens. Exits 77 (skip) with
the reason when bench/peer/node_modules is absent (`npm ci` there, or run bench/peer/run.py once).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER_K3 = None
try:
    import numpy as np

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import k3_to_gguf as conv
except ImportError as e:  # numpy missing
    np = None
    IMPORT_ERROR = str(e)

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def decode_compressed_tensors(packed, scale):
    """[rows, cols/2] nibbles (element 2i low) + [rows, cols/32] E8M0 -> float32 [rows, cols]."""
    codes = np.stack((packed & 0x0F, packed >> 4), axis=-1).reshape(packed.shape[0], -1)
    values = np.asarray(E2M1, dtype=np.float32)[codes]
    return values * np.repeat(np.exp2(scale.astype(np.float32) - 127), 32, axis=1)


def decode_ggml_mxfp4(raw, cols):
    """[rows, cols/32 * 17] block_mxfp4 (scale, then byte j = element j low | element j + 16 high)."""
    blocks = raw.reshape(raw.shape[0], cols // 32, 17)
    qs = blocks[:, :, 1:]
    codes = np.concatenate((qs & 0x0F, qs >> 4), axis=-1).reshape(raw.shape[0], cols)
    values = np.asarray(E2M1, dtype=np.float32)[codes]
    return values * np.repeat(np.exp2(blocks[:, :, 0].astype(np.float32) - 127), 32, axis=1)


def bf16_to_f32(words):
    return (np.asarray(words, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


class TinyK3(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="k3-peer-test-")
        cls.ckpt = os.path.join(cls.tmp, "tiny-k3")
        cls.gguf = cls.ckpt + ".gguf"
        subprocess.run([PEER_K3, "gen", "--preset", "tiny-k3", "--out", cls.ckpt], check=True)
        with open(os.path.join(cls.ckpt, "config.json")) as f:
            cls.cfg = json.load(f)
        cls.tc = cls.cfg["text_config"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)


class ConverterTest(TinyK3):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        conv.convert(cls.ckpt, cls.gguf)
        cls.meta, cls.tensors = conv.read_gguf(cls.gguf)
        cls.ck = conv.Checkpoint(cls.ckpt)

    def src(self, suffix):
        return self.ck.get("language_model.model." + suffix)

    def test_metadata(self):
        m, tc = self.meta, self.tc
        self.assertEqual(m["general.architecture"], "kimi-k3")
        self.assertEqual(m["kimi-k3.block_count"], tc["num_hidden_layers"])
        self.assertEqual(m["kimi-k3.embedding_length"], tc["hidden_size"])
        full = tc["linear_attn_config"]["full_attn_layers"]
        self.assertEqual(m["kimi-k3.attention.head_count_kv"],
                         [1 if i + 1 in full else 0 for i in range(tc["num_hidden_layers"])])
        self.assertEqual(m["kimi-k3.expert_count"], tc["num_experts"])
        self.assertEqual(m["kimi-k3.expert_used_count"], tc["num_experts_per_token"])
        self.assertEqual(m["kimi-k3.expert_latent_length"], tc["routed_expert_hidden_size"])
        self.assertEqual(m["kimi-k3.attn_res.block_size"], tc["attn_res_block_size"])
        self.assertEqual(m["kimi-k3.expert_gating_func"], 2)  # sigmoid
        self.assertAlmostEqual(m["kimi-k3.kda.gate_lower_bound"], -5.0)
        self.assertAlmostEqual(m["kimi-k3.activation.situ_linear_beta"], 25.0)
        self.assertEqual(m["kimi-k3.attention.key_length_mla"], tc["qk_nope_head_dim"] + tc["qk_rope_head_dim"])
        self.assertEqual(len(m["tokenizer.ggml.tokens"]), tc["vocab_size"])
        self.assertEqual(m["tokenizer.ggml.eos_token_id"], self.cfg["eos_token_id"])

    def test_bf16_matrices_are_the_same_bytes(self):
        pairs = {"token_embd.weight": "embed_tokens.weight", "blk.0.ffn_gate.weight": "layers.0.mlp.gate_proj.weight",
                 "blk.3.attn_q_b.weight": "layers.3.self_attn.q_b_proj.weight",
                 "blk.1.ssm_g.weight": "layers.1.self_attn.g_proj.weight",
                 "blk.3.attn_gate.weight": "layers.3.self_attn.g_proj.weight",
                 "blk.2.ffn_gate_inp.weight": "layers.2.block_sparse_moe.gate.weight",
                 "blk.2.ffn_routed_up.weight": "layers.2.block_sparse_moe.routed_expert_up_proj.weight"}
        for dst, src in pairs.items():
            ggml_type, ne, raw = self.tensors[dst]
            want = self.src(src)
            self.assertEqual(ggml_type, conv.GGML_BF16, dst)
            self.assertEqual(ne, tuple(reversed(want.shape)), dst)
            np.testing.assert_array_equal(raw.view(np.uint16).reshape(want.shape), want, dst)
        _, _, raw = self.tensors["output.weight"]
        np.testing.assert_array_equal(raw.view(np.uint16), self.ck.get("language_model.lm_head.weight").reshape(-1))

    def test_mxfp4_experts_decode_to_the_same_values(self):
        n_exp = self.tc["num_experts"]
        for part, name in (("w1", "ffn_gate_exps"), ("w2", "ffn_down_exps"), ("w3", "ffn_up_exps")):
            ggml_type, ne, raw = self.tensors[f"blk.5.{name}.weight"]
            self.assertEqual(ggml_type, conv.GGML_MXFP4)
            cols, rows, experts = ne
            self.assertEqual(experts, n_exp)
            raw = raw.reshape(experts, rows, -1)
            for e in range(n_exp):
                base = f"layers.5.block_sparse_moe.experts.{e}.{part}.weight"
                want = decode_compressed_tensors(self.src(base + "_packed"), self.src(base + "_scale"))
                self.assertEqual(want.shape, (rows, cols))
                np.testing.assert_array_equal(decode_ggml_mxfp4(raw[e], cols), want, f"{name} expert {e}")

    def test_mla_kv_b_is_split_losslessly(self):
        tc = self.tc
        h, nope, v, r = tc["num_attention_heads"], tc["qk_nope_head_dim"], tc["v_head_dim"], tc["kv_lora_rank"]
        _, ne_k, k_b = self.tensors["blk.3.attn_k_b.weight"]
        _, ne_v, v_b = self.tensors["blk.3.attn_v_b.weight"]
        self.assertEqual(ne_k, (nope, r, h))
        self.assertEqual(ne_v, (r, v, h))
        k = k_b.view(np.uint16).reshape(h, r, nope).transpose(0, 2, 1)
        vv = v_b.view(np.uint16).reshape(h, v, r)
        rebuilt = np.concatenate((k, vv), axis=1).reshape(h * (nope + v), r)
        np.testing.assert_array_equal(rebuilt, self.src("layers.3.self_attn.kv_b_proj.weight"))

    def test_fp32_tensors(self):
        _, _, score = self.tensors["blk.4.ffn_res_score.weight"]
        want = (bf16_to_f32(self.src("layers.4.mlp_res_norm.weight")).reshape(-1) *
                bf16_to_f32(self.src("layers.4.mlp_res_proj.weight")).reshape(-1))
        np.testing.assert_array_equal(score.view(np.float32), want)
        heads = self.tc["linear_attn_config"]["num_heads"]
        _, ne, a = self.tensors["blk.1.ssm_a"]
        self.assertEqual(ne, (heads,))
        np.testing.assert_allclose(a.view(np.float32), -np.exp(self.src("layers.1.self_attn.A_log")[:heads]),
                                   rtol=1e-6)
        _, ne, c = self.tensors["blk.1.ssm_conv1d_k.weight"]
        src = self.src("layers.1.self_attn.k_conv1d.weight")
        self.assertEqual(ne, (src.shape[2], 1, src.shape[0], 1))
        np.testing.assert_array_equal(c.view(np.float32), src.reshape(-1))
        _, _, norm = self.tensors["blk.2.ffn_norm.weight"]
        np.testing.assert_array_equal(norm.view(np.float32),
                                      bf16_to_f32(self.src("layers.2.post_attention_layernorm.weight")))

    def test_every_source_tensor_is_mapped(self):
        # convert() raises on a checkpoint tensor it does not place; a stray extra tensor must fail it
        extra = os.path.join(self.tmp, "extra")
        shutil.copytree(self.ckpt, extra)
        shard = sorted(f for f in os.listdir(extra) if f.endswith(".safetensors"))[0]
        path = os.path.join(extra, shard)
        with open(path, "rb") as f:
            blob = f.read()
        n = int.from_bytes(blob[:8], "little")
        header = json.loads(blob[8:8 + n])
        end = max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
        header["language_model.model.layers.0.self_attn.unknown.weight"] = {
            "dtype": "F32", "shape": [1], "data_offsets": [end, end + 4]}
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(path, "wb") as f:
            f.write(len(text).to_bytes(8, "little") + text + blob[8 + n:8 + n + end] + b"\0" * 4)
        with self.assertRaisesRegex(ValueError, "no GGUF mapping"):
            conv.convert(extra, os.path.join(self.tmp, "extra.gguf"))


def last_json(cmd):
    """Runs one engine process (must succeed) and returns the JSON line it printed last."""
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])


class Top1Test(TinyK3):
    LLAMA_PEER = os.path.join(ROOT, "bench", "peer", "llama_peer.mjs")

    def prompt(self):
        ranks = self.tc["vocab_size"] - 256
        return [(i * 7919 + 13) % ranks for i in range(16)]

    def test_k3_and_llama_cpp_agree_on_every_greedy_token(self):
        conv.convert(self.ckpt, self.gguf)
        ids = ",".join(map(str, self.prompt()))
        out = {}
        for engine, cmd in (("k3", [PEER_K3, "run", "--model", self.ckpt]),
                            ("llama.cpp", ["node", self.LLAMA_PEER, "--model", self.gguf])):
            out[engine] = last_json(cmd + ["--threads", "1", "--prompt-ids", ids, "--decode-steps", "16"])["tokens"]
        print(f"k3:        {out['k3']}\nllama.cpp: {out['llama.cpp']}")
        self.assertEqual(len(out["k3"]), 17)
        self.assertEqual(out["k3"], out["llama.cpp"])

    def test_both_engines_score_a_shared_sequence_alike(self):
        conv.convert(self.ckpt, self.gguf)
        prompt = self.prompt()
        greedy = last_json([PEER_K3, "run", "--model", self.ckpt, "--threads", "1", "--prompt-ids",
                            ",".join(map(str, prompt)), "--decode-steps", "8"])["tokens"]
        ids = ",".join(str(t) for t in prompt + greedy[:-1])
        argmax = {}
        for engine, cmd in (("k3", [PEER_K3, "score", "--model", self.ckpt]),
                            ("llama.cpp", ["node", self.LLAMA_PEER, "--model", self.gguf, "--score"])):
            argmax[engine] = last_json(cmd + ["--threads", "1", "--prompt-ids", ids])["argmax"]
        print(f"k3:        {argmax['k3']}\nllama.cpp: {argmax['llama.cpp']}")
        self.assertEqual(len(argmax["k3"]), len(prompt) + len(greedy) - 1)
        self.assertEqual(argmax["k3"], argmax["llama.cpp"])
        self.assertEqual(argmax["k3"][len(prompt) - 1:], greedy)  # the prefill path picks the decode path's tokens


def main():
    global PEER_K3
    if len(sys.argv) != 3 or sys.argv[2] not in ("converter", "top1"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    PEER_K3 = os.path.abspath(sys.argv[1])
    if np is None:
        print(f"SKIP: /usr/bin/python3 has no numpy ({IMPORT_ERROR}); apt-get install python3-numpy")
        return 77
    if sys.argv[2] == "top1":
        if not os.path.isdir(os.path.join(ROOT, "bench", "peer", "node_modules", "node-llama-cpp")):
            print("SKIP: bench/peer/node_modules is absent (run `npm ci` in bench/peer, or bench/peer/run.py once)")
            return 77
        if shutil.which("node") is None:
            print("SKIP: no node on PATH")
            return 77
    case = ConverterTest if sys.argv[2] == "converter" else Top1Test
    result = unittest.TextTestRunner(verbosity=2).run(unittest.defaultTestLoader.loadTestsFromTestCase(case))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
