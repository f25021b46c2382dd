#!/usr/bin/python3
"""bench/vision_ttft.py: time to first token of an image chat, k3 serve beside PyTorch (issue 40).

  /usr/bin/python3 bench/vision_ttft.py [--k3 build/k3] [--model DIR] [--runs 5] [--size 1024x1024]
                                        [--threads 2] [--port 8391] [--max-load 0.8] [--json FILE]

One request: a chat whose user message is a random RGB PNG of --size (a new image every run, so no
encoder or prefix cache helps) and a line of text; the time is from sending the request (k3) or from
holding the PNG bytes (PyTorch) to the first generated token.

  k3:      `k3 serve MODEL --threads N` on loopback, the request streamed through /v1/chat/completions;
           TTFT = until the first chunk carrying generated text. Includes HTTP, base64 and PNG decoding,
           the processor, the tower and the prefill of the whole prompt.
  PyTorch: the project's PyTorch reference (tools/reference: vision_reference.py + k3_reference.py)
           run the way a PyTorch user runs a bf16 model on CPU, not as the test oracle runs it: every
           Linear a native bf16 GEMM (torch's oneDNN path: fp32 accumulation, one rounding, the same
           rounding points as the oracle), the oracle's "wide" math in float32 instead of float64 (its
           fp32 variant), routed experts grouped by expert instead of token by token, logits only for the
           last position (what generate() computes), `torch.set_num_threads(N)`. Preprocessing is
           tests/image/k3_reference_processor.py (Pillow, K3's processor re-expressed); the prompt's token
           ids are the ones k3 serves (its /v1/chat/completions/render route), so both sides prefill the
           same ids. Debian's torch has no MKL: its fp32 GEMMs go through the system BLAS, which
           install-deps.sh --reference sets to OpenBLAS (with the reference BLAS they run ~50x slower).

Both sides load the checkpoint before timing starts and run one untimed warm-up request. The runs
alternate (k3 first on even runs); before each pair the script waits (up to 5 min) for the 1-minute load
average to fall below --max-load, and prints the load it started at. It prints every run, the medians,
the ratio PyTorch / k3 (above 1: k3 is faster) and whether the two first tokens agree (the checkpoint's
weights are random, so a near tie between the two engines' roundings can make them differ; the count is
printed, not required). Without --model it generates mini-k3 (2.2 GB, K3's real tower widths) into
build/bench-models/mini-k3.
"""
import argparse
import base64
import http.client
import io
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))
sys.path.insert(0, os.path.join(ROOT, "tests", "image"))
import k3_reference  # noqa: E402
import k3_reference_processor  # noqa: E402
import vision_reference  # noqa: E402

BF16 = torch.bfloat16
TEXT = "What is in this image?"


# ---------------------------------------------------------------------------------------------------
# The PyTorch side: the reference with torch's fast CPU paths
# ---------------------------------------------------------------------------------------------------

def native_linear(x, w):
    """bf16 GEMM on torch's own bf16 path: x [T, in] bf16, w [out, in...] bf16 -> [T, out] bf16."""
    return x @ w.reshape(w.shape[0], -1).t()


def grouped_routed_experts(self, layer, z, idx, wts):
    """Reference.routed_experts run once per expert over the tokens that chose it."""
    acc = torch.zeros(z.shape[0], z.shape[1], dtype=k3_reference.WIDE)
    for e in torch.unique(idx).tolist():
        rows, slot = (idx == e).nonzero(as_tuple=True)
        ze = z[rows]
        a = native_linear(ze, self.expert(layer, e, "w1"))
        b = native_linear(ze, self.expert(layer, e, "w3"))
        y = native_linear(k3_reference.glu(self.cfg, a, b), self.expert(layer, e, "w2"))
        acc.index_add_(0, rows, wts[rows, slot][:, None] * k3_reference.wide(y))
    return acc


def use_fast_torch_paths():
    for module in (k3_reference, vision_reference):
        module.WIDE = torch.float32
        module.linear = native_linear
    k3_reference.Reference.routed_experts = grouped_routed_experts


class TorchPeer:
    def __init__(self, model_dir, threads):
        torch.set_num_threads(threads)
        use_fast_torch_paths()
        tensors = k3_reference.safetensors_np.load_checkpoint(model_dir)
        self.text = k3_reference.Reference(model_dir, tensors=tensors)
        self.vision = vision_reference.VisionReference(model_dir, tensors=tensors)
        with open(os.path.join(model_dir, "preprocessor_config.json")) as f:
            self.processor_cfg = dict(k3_reference_processor.K3_CONFIG, **json.load(f))

    def first_token(self, png, prompt_ids):
        """PNG bytes + the served prompt's ids -> the greedy first token id; self.phases gets the seconds of
        preprocessing, the tower and the text prefill."""
        t0 = time.perf_counter()
        image = Image.open(io.BytesIO(png))
        image.load()
        patches, (gh, gw), _ = k3_reference_processor.process(image, self.processor_cfg)
        t1 = time.perf_counter()
        rows = self.vision.encode(patches.reshape(gh * gw, -1), gh, gw)
        t2 = time.perf_counter()
        pad = self.vision.cfg.media_pad
        positions = [i for i, t in enumerate(prompt_ids) if t == pad]
        if len(positions) != rows.shape[0]:
            raise RuntimeError(f"prompt has {len(positions)} image pads, the tower made {rows.shape[0]} rows")
        logits = self.text.forward(prompt_ids, media=(positions, rows), last_only=True)
        token = int(torch.argmax(logits[-1]))
        self.phases = {"preprocess_s": t1 - t0, "tower_s": t2 - t1, "prefill_s": time.perf_counter() - t2}
        return token


# ---------------------------------------------------------------------------------------------------
# The k3 side: a real server on loopback
# ---------------------------------------------------------------------------------------------------

class K3Server:
    def __init__(self, k3, model_dir, threads, port):
        self.port = port
        self.log = open(os.path.join(ROOT, "build", f"vision_ttft_serve_{port}.log"), "w")
        self.proc = subprocess.Popen([k3, "serve", model_dir, "--port", str(port), "--host", "127.0.0.1",
                                      "--threads", str(threads), "--max-request-body", "64MiB"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 600
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"k3 serve exited with {self.proc.returncode}; see {self.log.name}")
            try:
                if self.request("GET", "/health")[0] == 200:
                    self.model = json.loads(self.request("GET", "/v1/models")[1])["data"][0]["id"]
                    return
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError("k3 serve did not become healthy in 10 minutes")

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1200)
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, data

    def chat_body(self, png):
        url = "data:image/png;base64," + base64.b64encode(png).decode()
        return {"model": self.model, "max_tokens": 1, "temperature": 0,
                "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                          {"type": "text", "text": TEXT}]}]}

    def prompt_ids(self, png):
        status, data = self.request("POST", "/v1/chat/completions/render", self.chat_body(png))
        if status != 200:
            raise RuntimeError(f"render: HTTP {status}: {data[:300]!r}")
        return json.loads(data)["token_ids"]

    def detokenize(self, token_id):
        status, data = self.request("POST", "/detokenize", {"tokens": [token_id]})
        return json.loads(data)["prompt"] if status == 200 else None

    def ttft(self, png):
        """Seconds to the first streamed chunk with generated text, and that text."""
        body = dict(self.chat_body(png), stream=True)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1200)
        start = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"chat: HTTP {resp.status}: {resp.read()[:300]!r}")
        first, text = None, None
        for line in resp:
            line = line.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            for choice in json.loads(line[6:]).get("choices", []):
                delta = choice.get("delta", {})
                piece = delta.get("content") or delta.get("reasoning_content")
                if first is None and (piece or choice.get("finish_reason")):
                    first, text = time.perf_counter() - start, piece or ""
        conn.close()
        if first is None:
            raise RuntimeError("the stream carried no generated token")
        return first, text

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


# ---------------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------------

def random_png(width, height, seed):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(out, format="PNG")
    return out.getvalue()


def wait_for_quiet(max_load, limit_s=300):
    start = time.time()
    while os.getloadavg()[0] >= max_load and time.time() - start < limit_s:
        time.sleep(5)
    return os.getloadavg()[0]


def cpu_facts():
    model, flags = platform.processor(), []
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                break
    wanted = [f for f in flags if f.startswith(("avx", "amx")) or f in ("fma", "f16c")]
    return f"{model}, {os.cpu_count()} CPUs, flags: {' '.join(wanted)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k3", default=os.path.join(ROOT, "build", "k3"))
    ap.add_argument("--model", default=None, help="checkpoint with a vision tower (default: mini-k3, generated)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", default="1024x1024", help="image WIDTHxHEIGHT")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--port", type=int, default=8391)
    ap.add_argument("--max-load", type=float, default=0.8)
    ap.add_argument("--json", default=None, help="write the runs and medians here")
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    model_dir = args.model
    if model_dir is None:
        model_dir = os.path.join(ROOT, "build", "bench-models", "mini-k3")
        if not os.path.exists(os.path.join(model_dir, "config.json")):
            print(f"generating mini-k3 into {model_dir} ...", flush=True)
            subprocess.run([args.k3, "gen-model", "--preset", "mini-k3", "--out", model_dir, "--force"], check=True)
    print(f"host: {cpu_facts()}; torch {torch.__version__}; {args.threads} threads; image {width}x{height}",
          flush=True)

    server = K3Server(args.k3, model_dir, args.threads, args.port)
    try:
        peer = TorchPeer(model_dir, args.threads)
        warm = random_png(width, height, 0)
        ids = server.prompt_ids(warm)
        print(f"prompt: {len(ids)} ids ({sum(1 for t in ids if t == peer.vision.cfg.media_pad)} image pads)",
              flush=True)
        server.ttft(warm)
        peer.first_token(warm, ids)
        runs, agree = [], 0
        for r in range(args.runs):
            png = random_png(width, height, 1000 + r)
            ids = server.prompt_ids(png)
            load = wait_for_quiet(args.max_load)
            order = ("k3", "torch") if r % 2 == 0 else ("torch", "k3")
            result = {"run": r, "load_before": round(load, 2), "order": order}
            for engine in order:
                if engine == "k3":
                    result["k3_s"], result["k3_text"] = server.ttft(png)
                else:
                    t0 = time.perf_counter()
                    token = peer.first_token(png, ids)
                    result["torch_s"] = time.perf_counter() - t0
                    result["torch_text"] = server.detokenize(token)
                    result["torch_phases"] = {k: round(v, 2) for k, v in peer.phases.items()}
            result["same_first_token"] = result["k3_text"] == result["torch_text"]
            agree += result["same_first_token"]
            runs.append(result)
            print(f"run {r}: load {load:.2f}, k3 {result['k3_s']:.2f} s, PyTorch {result['torch_s']:.2f} s, "
                  f"(preprocess {result['torch_phases']['preprocess_s']} s, tower {result['torch_phases']['tower_s']} s, "
                  f"prefill {result['torch_phases']['prefill_s']} s), "
                  f"first tokens {'agree' if result['same_first_token'] else 'differ'}", flush=True)
        k3_median = statistics.median(x["k3_s"] for x in runs)
        torch_median = statistics.median(x["torch_s"] for x in runs)
        print(f"median TTFT: k3 {k3_median:.2f} s, PyTorch {torch_median:.2f} s, PyTorch / k3 = "
              f"{torch_median / k3_median:.2f}; first tokens agree in {agree}/{len(runs)}; "
              f"load after {os.getloadavg()[0]:.2f}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"host": cpu_facts(), "threads": args.threads, "size": [width, height],
                           "prompt_ids": len(ids), "runs": runs, "k3_median_s": k3_median,
                           "torch_median_s": torch_median}, f, indent=1)
    finally:
        server.close()


if __name__ == "__main__":
    main()
