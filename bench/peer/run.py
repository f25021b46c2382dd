#!/usr/bin/python3
"""bench/peer/run.py: k3 side by side with llama.cpp on the same weights (issue 18 item 6).

  bench/peer/run.py [--runs 5] [--build build] [--preset mini-k3] [--decode-threads 1,2]
                    [--prefill-threads 1,2] [--prefill-tokens 512] [--decode-prompt 16] [--decode-steps 32]
                    [--json FILE] [--nice N]

From a clean checkout it does what is missing first, and says so: builds bench/peer_k3 (a Release tree in
--build, only that target), runs `npm ci` in bench/peer (node-llama-cpp 3.22.1: llama.cpp's prebuilt CPU
binaries with the kimi-k3 architecture; ~725 MB, test / bench only; where npm ci refuses the lockfile,
`npm install --no-save` of the same locked versions), generates the checkpoint
(`peer_k3 gen`, mini-k3: 2.3 GB) and converts it (tools/k3_to_gguf.py) into --build/peer/.

Then for each measurement (decode at each of --decode-threads: a --decode-prompt-token prompt, then
--decode-steps greedy steps; prefill of a --prefill-tokens prompt at each of --prefill-threads) it runs
k3 (bench/peer_k3) and llama.cpp (bench/peer/llama_peer.mjs) alternately, --runs times each, one process
per run (the engine that goes first alternates), and prints every run, the medians and the best runs
(the least disturbed on a shared machine), the ratios k3 / llama.cpp, the weight bytes one decode token
reads in each engine's file, and whether the two engines' greedy tokens agree (top-1 agreement). Exits
non-zero when a run fails.

Free-running greedy tokens stop agreeing at the first step where the engines pick differently, and every
later step then has another context, so one near tie hides the rest. After the measurements both engines
therefore also score the same two sequences, the decode prompt followed by each engine's greedy
continuation (`peer_k3 score`, `llama_peer.mjs --score`: one untimed evaluation, the argmax after every
position), and the driver prints at how many of the decode steps they pick the same next token on that
shared context (teacher-forced top-1 agreement).

On a machine shared with other work, --nice N (negative: root) runs both engines' processes at that
niceness: ggml's worker threads wait for each other at every graph node by spinning, so a 2-thread
llama.cpp run loses far more to a preempted thread than k3's pool does, and the ratio then measures the
neighbours more than the engines. The load average before and after is printed either way.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER = os.path.join(ROOT, "bench", "peer")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import k3_to_gguf  # noqa: E402

NUM_SPECIAL_TOKENS = 256


def say(msg):
    print(f"[peer] {msg}", flush=True)


def sh(cmd, **kw):
    say("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True, **kw)


def ensure_peer_k3(build):
    binary = os.path.join(build, "bench", "peer_k3")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        say(f"no build tree in {build}: configuring a Release one (K3_BUILD_BENCH=ON)")
        sh(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DK3_BUILD_BENCH=ON"])
    jobs = str(min(os.cpu_count() or 1, 2))
    say(f"building peer_k3 in {build} (only that target, -j{jobs}, nice 10)")
    sh(["nice", "-n", "10", "cmake", "--build", build, "--target", "peer_k3", "--", f"-j{jobs}"])
    return binary


def ensure_node_modules():
    if os.path.isdir(os.path.join(PEER, "node_modules", "node-llama-cpp")):
        return
    say("bench/peer/node_modules is missing: running npm ci there (node-llama-cpp 3.22.1 from "
        "package-lock.json, ~725 MB with its prebuilt binaries; bench / test only)")
    try:
        sh(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PEER)
    except subprocess.CalledProcessError:
        # 3.22.1 lists optional packages for other platforms (win-*, mac-*, linux-riscv64) that the registry
        # does not serve, so the lockfile cannot hold them and npm ci refuses it as out of sync; npm install
        # installs the same locked versions and leaves package.json and the lockfile as they are
        say("npm ci refused the lockfile (node-llama-cpp 3.22.1's other-platform packages are not served): "
            "installing the same locked versions with npm install --no-save")
        sh(["npm", "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PEER)


def ensure_model(peer_k3, work, preset):
    ckpt = os.path.join(work, preset)
    if not os.path.exists(os.path.join(ckpt, "config.json")):
        say(f"generating {preset} into {ckpt}")
        sh([peer_k3, "gen", "--preset", preset, "--out", ckpt, "--seed", "0"])
    gguf = ckpt + ".gguf"
    newest = max(os.path.getmtime(os.path.join(ckpt, f)) for f in os.listdir(ckpt))
    if not os.path.exists(gguf) or os.path.getmtime(gguf) < newest:
        say(f"converting {ckpt} -> {gguf} (tools/k3_to_gguf.py)")
        sh([sys.executable, os.path.join(ROOT, "tools", "k3_to_gguf.py"), ckpt, gguf])
    return ckpt, gguf


def decode_bytes_checkpoint(ckpt_dir, tc):
    """Weight bytes one decode token reads from the checkpoint: every tensor, but one embedding row and
    top-k of the routed experts."""
    ck = k3_to_gguf.Checkpoint(ckpt_dir)
    total = 0.0
    for name, (_, _, shape, begin, end) in ck.entries.items():
        size = end - begin
        if name.endswith("embed_tokens.weight"):
            size = size / shape[0]
        elif ".experts." in name:
            size = size * tc["num_experts_per_token"] / tc["num_experts"]
        total += size
    return total


def decode_bytes_gguf(path, tc):
    _, tensors = k3_to_gguf.read_gguf(path)
    total = 0.0
    for name, (_, ne, data) in tensors.items():
        size = data.nbytes
        if name == "token_embd.weight":
            size = size / ne[-1]
        elif name.endswith("_exps.weight"):
            size = size * tc["num_experts_per_token"] / tc["num_experts"]
        total += size
    return total


def run_one(engine, cmd):
    t = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise RuntimeError(f"{engine} run failed (exit {proc.returncode}): {' '.join(cmd[:3])} ...")
    out = json.loads(lines[-1])
    out["wall_s"] = time.monotonic() - t
    return out


def teacher_forced(cmds, prompt, continuations):
    """Top-1 agreement on shared contexts: for each engine's greedy continuation (name -> tokens), both
    engines score prompt + continuation[:-1]; counts the decode steps (the predictions after the last
    prompt position and after each continuation token but the last) where their argmax is equal."""
    rows = {}
    for name, tokens in continuations.items():
        ids = ",".join(str(t) for t in prompt + tokens[:-1])
        argmax = {e: run_one(e, c + ["--prompt-ids", ids])["argmax"] for e, c in cmds.items()}
        steps = list(range(len(prompt) - 1, len(prompt) + len(tokens) - 1))
        equal = sum(argmax["k3"][p] == argmax["llama.cpp"][p] for p in steps)
        rows[name] = {"equal": equal, "steps": len(steps), "k3_argmax": argmax["k3"],
                      "llama_argmax": argmax["llama.cpp"]}
        say(f"teacher-forced top-1 on {name}'s greedy continuation: same next token at {equal}/{len(steps)} steps")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--preset", default="mini-k3")
    ap.add_argument("--decode-threads", default="1,2")
    ap.add_argument("--prefill-threads", default="1,2")
    ap.add_argument("--prefill-tokens", type=int, default=512)
    ap.add_argument("--decode-prompt", type=int, default=16)
    ap.add_argument("--decode-steps", type=int, default=32)
    ap.add_argument("--json", help="also write every run and the summary here")
    ap.add_argument("--nice", type=int, default=None, help="run the engines under `nice -n N`")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    peer_k3 = ensure_peer_k3(build)
    ensure_node_modules()
    work = os.path.join(build, "peer")
    os.makedirs(work, exist_ok=True)
    ckpt, gguf = ensure_model(peer_k3, work, args.preset)
    with open(os.path.join(ckpt, "config.json")) as f:
        config = json.load(f)
    tc = config.get("text_config", config)
    ranks = tc["vocab_size"] - NUM_SPECIAL_TOKENS
    prompt = [(i * 7919 + 13) % ranks for i in range(max(args.prefill_tokens, args.decode_prompt))]

    bytes_k3 = decode_bytes_checkpoint(ckpt, tc)
    bytes_llama = decode_bytes_gguf(gguf, tc)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    say(f"commit {commit}, {cpu}, {os.cpu_count()} cores, model {args.preset} ({ckpt})")
    say(f"weights read per decode token: k3 {bytes_k3 / 1e6:.1f} MB (safetensors), "
        f"llama.cpp {bytes_llama / 1e6:.1f} MB (GGUF), ratio {bytes_llama / bytes_k3:.4f}")
    load_before = open("/proc/loadavg").read().split()[:3]

    plans = [("decode", int(t), args.decode_prompt, args.decode_steps) for t in args.decode_threads.split(",") if t]
    plans += [("prefill", int(t), args.prefill_tokens, 0) for t in args.prefill_threads.split(",") if t]
    results = []
    for kind, threads, plen, steps in plans:
        ids = ",".join(str(t) for t in prompt[:plen])
        cmds = {
            "k3": [peer_k3, "run", "--model", ckpt, "--threads", str(threads), "--prompt-ids", ids,
                   "--decode-steps", str(steps)],
            "llama.cpp": ["node", os.path.join(PEER, "llama_peer.mjs"), "--model", gguf, "--threads", str(threads),
                          "--prompt-ids", ids, "--decode-steps", str(steps)],
        }
        if args.nice is not None:
            cmds = {e: ["nice", "-n", str(args.nice)] + c for e, c in cmds.items()}
        runs = {"k3": [], "llama.cpp": []}
        for r in range(args.runs):
            order = ["k3", "llama.cpp"] if r % 2 == 0 else ["llama.cpp", "k3"]
            for engine in order:
                runs[engine].append(run_one(engine, cmds[engine]))
        rate = (lambda o: o["decode_tokens"] / o["decode_s"]) if kind == "decode" else \
               (lambda o: o["prompt_tokens"] / o["prefill_s"])
        rates = {e: [rate(o) for o in runs[e]] for e in runs}
        med = {e: statistics.median(v) for e, v in rates.items()}
        best = {e: max(v) for e, v in rates.items()}
        a, b = runs["k3"][0]["tokens"], runs["llama.cpp"][0]["tokens"]
        lead = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        same = sum(x == y for x, y in zip(a, b))
        stable = {e: all(o["tokens"] == runs[e][0]["tokens"] for o in runs[e]) for e in runs}
        row = {"kind": kind, "threads": threads, "prompt_tokens": plen, "decode_steps": steps,
               "k3_tok_s": rates["k3"], "llama_tok_s": rates["llama.cpp"], "k3_median": med["k3"],
               "llama_median": med["llama.cpp"], "ratio": med["k3"] / med["llama.cpp"],
               "k3_best": best["k3"], "llama_best": best["llama.cpp"], "best_ratio": best["k3"] / best["llama.cpp"],
               "top1_equal": same, "top1_compared": min(len(a), len(b)), "top1_leading": lead,
               "k3_tokens": a, "llama_tokens": b, "deterministic": stable, "runs": runs}
        results.append(row)
        fmt = lambda v: " ".join(f"{x:.2f}" for x in v)  # noqa: E731
        say(f"{kind} {threads} thread(s), prompt {plen}{f', {steps} steps' if steps else ''}: "
            f"k3 {med['k3']:.2f} tok/s [{fmt(rates['k3'])}], llama.cpp {med['llama.cpp']:.2f} tok/s "
            f"[{fmt(rates['llama.cpp'])}], k3/llama.cpp {row['ratio']:.2f}x; greedy tokens equal "
            f"{same}/{row['top1_compared']} (first {lead} in a row)"
            f"{'' if all(stable.values()) else ', NOT deterministic'}")

    load_after = open("/proc/loadavg").read().split()[:3]
    forced = {}
    decodes = [r for r in results if r["kind"] == "decode"]
    if decodes:
        first = decodes[0]
        score_cmds = {
            "k3": [peer_k3, "score", "--model", ckpt, "--threads", str(first["threads"])],
            "llama.cpp": ["node", os.path.join(PEER, "llama_peer.mjs"), "--model", gguf, "--threads",
                          str(first["threads"]), "--score"],
        }
        forced = teacher_forced(score_cmds, prompt[:args.decode_prompt],
                                {"k3": first["k3_tokens"], "llama.cpp": first["llama_tokens"]})
    print()
    print("| measurement | threads | k3 tok/s median (best) | llama.cpp tok/s median (best) | k3 / llama.cpp "
          "median (best) | top-1 equal |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in results:
        what = (f"decode ({r['prompt_tokens']}-token prompt, {r['decode_steps']} steps)" if r["kind"] == "decode"
                else f"prefill ({r['prompt_tokens']} tokens)")
        print(f"| {what} | {r['threads']} | {r['k3_median']:.2f} ({r['k3_best']:.2f}) | {r['llama_median']:.2f} "
              f"({r['llama_best']:.2f}) | {r['ratio']:.2f}x ({r['best_ratio']:.2f}x) | "
              f"{r['top1_equal']}/{r['top1_compared']} |")
    if forced:
        print()
    for name, row in forced.items():
        print(f"teacher-forced top-1 agreement on {name}'s greedy continuation: {row['equal']}/{row['steps']} steps")
    niceness = "" if args.nice is None else f"engines at nice {args.nice}; "
    print(f"\n{niceness}load average before {' '.join(load_before)}, after {' '.join(load_after)}; {args.runs} runs "
          f"each, alternating; weights per decode token k3 {bytes_k3 / 1e6:.1f} MB, llama.cpp "
          f"{bytes_llama / 1e6:.1f} MB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"commit": commit, "cpu": cpu, "model": args.preset, "bytes_per_token_k3": bytes_k3,
                       "bytes_per_token_llama": bytes_llama, "load_before": load_before,
                       "load_after": load_after, "nice": args.nice, "results": results,
                       "teacher_forced": forced}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
