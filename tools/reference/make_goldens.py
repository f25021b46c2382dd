"""Writes the golden logits the C++ model test (tests/model_golden_test.cc) compares against.

  /usr/bin/python3 tools/reference/make_goldens.py --k3 build/k3 [--presets tiny-k3,tiny-kimi-linear]

For each preset:
  1. `k3 gen-model --preset P --seed 0 --out TMP/P` writes the deterministic random-weight checkpoint.
  2. Its fingerprint (sha256 over config.json, the index and every shard, see fingerprint()) is recorded
     so the C++ test can tell "checkpoint changed: regenerate goldens" from a model bug.
  3. Prompts are drawn from a fixed-seed generator (--min-len..--max-len ids below the first special id).
     A candidate is kept only if, along the prompt AND its greedy continuation, the gap between the two
     largest logits is at least --min-margin and the gap between the k-th and (k+1)-th MoE selection
     score is at least --min-route-gap at every position, so neither the C++ argmax nor its expert
     choice can flip on a near tie; and the reference with float32 wide math stays within --max-noise.
  4. tests/data/golden/P.json (metadata, prompts, continuations, per-step top logits of the continuation)
     and tests/data/golden/P.logits.f32 (little-endian fp32, the full logits at every prompt position,
     prompts one after another, [rows, vocab]) are written.

The greedy continuation re-runs the whole sequence every step (the reference has no cache to get
wrong); a final pass over prompt + continuation checks the step-by-step argmaxes again.
"""

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_reference  # noqa: E402
import safetensors_np  # noqa: E402

NUM_SPECIAL = 256  # the vocabulary ends with 256 special ids (spec §4.1); prompts use ordinary ranks
CONT_TOP = 8       # per continuation step: logits at the 8 largest reference ids


def fingerprint(model_dir):
    """sha256 over the files that determine the logits, in a fixed order:
    config.json, model.safetensors.index.json (if present), then the shards sorted by name.
    Each file contributes  NAME '\\n' SIZE_IN_DECIMAL '\\n' BYTES.  Tokenizer files are not included."""
    shards, index = safetensors_np.checkpoint_files(model_dir)
    names = ["config.json"] + (["model.safetensors.index.json"] if index else []) + shards
    h = hashlib.sha256()
    for name in names:
        with open(os.path.join(model_dir, name), "rb") as f:
            data = f.read()
        h.update(f"{name}\n{len(data)}\n".encode())
        h.update(data)
    return h.hexdigest(), names


def margin(row):
    top2 = torch.topk(row, 2).values
    return float(top2[0] - top2[1])


def route_gaps(model, trace, rows):
    """Per MoE layer, the gap between the k-th and (k+1)-th selection score of each of `rows`."""
    k = model.cfg.top_k
    gaps = []
    for entry in trace:
        sel = entry["sel"][rows].sort(dim=-1, descending=True).values
        if sel.shape[-1] > k:
            gaps.append(sel[:, k - 1] - sel[:, k])
    return [float(g) for g in torch.cat(gaps)] if gaps else [float("inf")]


def fp32_variant(model, seq):
    """The same reference with its wide math in float32 instead of float64: another valid
    implementation of the same rounding points, differing only in fp32 rounding / summation order."""
    saved = k3_reference.WIDE
    k3_reference.WIDE = torch.float32
    try:
        return model.forward(seq)
    finally:
        k3_reference.WIDE = saved


def rel_rows(a, b):
    return (a - b).norm(dim=-1) / b.norm(dim=-1)


def try_prompt(model, prompt, new_tokens, min_margin, min_route_gap, max_noise, max_form_noise):
    """Greedy continuation with margin checks; a rejection reason if some position's top-2 logits are
    closer than min_margin, or some prompt token's k-th and (k+1)-th MoE selection scores are closer than
    min_route_gap, or the fp32 variant or the other-MLA-form variant of the reference differs by more than
    max_noise (relative L2) at some prompt position (the prompt sits where rounding noise is amplified)."""
    trace = []
    logits = model.forward(prompt, trace)
    margins = [margin(logits[i]) for i in range(len(prompt))]
    gaps = route_gaps(model, trace, slice(None))
    if min(margins) < min_margin:
        return "prompt logit margin"
    if min(gaps) < min_route_gap:
        return "prompt route gap"
    if float(rel_rows(fp32_variant(model, prompt), logits).max()) > max_noise:
        return "prompt fp32-variant noise"
    # The other MLA form rounds differently in every MLA layer (~0.5-1 % after amplification): the
    # prompt must be one where even that form stays within max_form_noise (the C++ test's tolerance).
    other = "expanded" if model.mla_form == "absorbed" else "absorbed"
    saved = model.mla_form
    model.mla_form = other
    try:
        other_logits = model.forward(prompt)
    finally:
        model.mla_form = saved
    if float(rel_rows(other_logits, logits).max()) > max_form_noise:
        return f"prompt {other}-MLA variant noise"
    prompt_logits = logits
    seq = list(prompt)
    cont = []
    steps = []
    for step in range(new_tokens):
        row = logits[-1]
        nxt = int(torch.argmax(row))
        cont.append(nxt)
        if step > 0:
            steps.append(row)
        seq.append(nxt)
        if step + 1 < new_tokens:
            logits = model.forward(seq)
            margins.append(margin(logits[-1]))
            if margins[-1] < min_margin:
                return f"logit margin at continuation step {step + 1}"
    # Re-check against one pass over the whole sequence (causality + determinism of the reference).
    final_trace = []
    final = model.forward(seq[:-1], final_trace)
    # The continuation tokens' routing decisions must be clear of near ties too (the C++ test decodes
    # them with the reference's tokens fed back).
    gaps = route_gaps(model, final_trace, slice(None))
    if min(gaps) < min_route_gap:
        return "continuation route gap"
    again = [int(i) for i in torch.argmax(final[len(prompt) - 1:], dim=-1)]
    if again != cont:
        raise RuntimeError(f"reference is not self-consistent: step-by-step {cont} vs one pass {again}")
    rel = float((final[:len(prompt)] - prompt_logits).norm() / prompt_logits.norm())
    if rel > 1e-5:
        raise RuntimeError(f"reference prompt logits depend on later tokens (relative L2 {rel:.2e})")
    # How the fp32 variant fares along the continuation is recorded, not required: over 32 more tokens
    # the random models' amplification of rounding noise makes agreement a matter of luck (README).
    variant = fp32_variant(model, seq[:-1])
    n = len(prompt)
    cont_noise = 0.0
    for row in range(n, len(seq) - 1):
        ids = torch.topk(final[row], CONT_TOP).indices
        cont_noise = max(cont_noise, float((variant[row, ids] - final[row, ids]).norm() / final[row].norm()))
    variant_cont = [int(i) for i in torch.argmax(variant[n - 1:], dim=-1)]
    agree = next((i for i, (a, b) in enumerate(zip(variant_cont, cont)) if a != b), len(cont))
    # steps[i] = logits after continuation token i (the input of decode step i+1).
    return {"prompt_logits": prompt_logits, "continuation": cont, "steps": steps, "min_margin": min(margins),
            "min_route_gap": min(gaps),
            "fp32_variant_prompt_max_rel_l2": float(rel_rows(variant[:n], final[:n]).max()),
            "fp32_variant_continuation_top_id_max_rel": cont_noise,
            "fp32_variant_continuation_agreeing_steps": agree}


def make_preset(args, preset, work):
    out = os.path.join(work, preset)
    cmd = [args.k3, "gen-model", "--preset", preset, "--seed", str(args.seed), "--out", out]
    subprocess.run(cmd, check=True)
    fp, files = fingerprint(out)
    model = k3_reference.Reference(out, mla_form=args.mla_form)
    cfg = model.cfg
    num_ranks = cfg.vocab_size - NUM_SPECIAL
    rng = random.Random(f"k3stack-goldens-{preset}-{args.prompt_seed}")
    prompts = []
    tried = 0
    t0 = time.time()
    while len(prompts) < args.num_prompts:
        tried += 1
        if prompts and args.time_budget > 0 and time.time() - t0 > args.time_budget:
            print(f"{preset}: time budget spent, keeping {len(prompts)} prompts", flush=True)
            break
        if tried > args.max_tries:
            raise RuntimeError(f"{preset}: only {len(prompts)} prompts with margin >= {args.min_margin} "
                               f"in {args.max_tries} tries")
        length = rng.randint(args.min_len, args.max_len)
        prompt = [rng.randrange(num_ranks) for _ in range(length)]
        res = try_prompt(model, prompt, args.new_tokens, args.min_margin, args.min_route_gap, args.max_noise,
                         args.max_form_noise)
        print(f"{preset}: try {tried} len {length}: " +
              (f"rejected ({res})" if isinstance(res, str) else
               f"kept, min logit margin {res['min_margin']:.4f}, min route gap {res['min_route_gap']:.2e}, "
               f"fp32 variant: prompt {res['fp32_variant_prompt_max_rel_l2']:.1e}, continuation agrees for "
               f"{res['fp32_variant_continuation_agreeing_steps']} steps"),
              flush=True)
        if not isinstance(res, str):
            res["ids"] = prompt
            prompts.append(res)
    unused = model.unused_tensors()
    if unused:
        raise RuntimeError(f"{preset}: the reference never read {unused[:5]}")

    os.makedirs(args.out_dir, exist_ok=True)
    logits_name = f"{preset}.logits.f32"
    rows = []
    meta_prompts = []
    offset = 0
    for p in prompts:
        rows.append(p["prompt_logits"].numpy().astype("<f4"))
        tops = []
        for row in p["steps"]:
            vals, idx = torch.topk(row, CONT_TOP)
            tops.append({"norm": float(row.norm()), "ids": [int(i) for i in idx],
                         "logits": [float(v) for v in vals]})
        meta_prompts.append({"ids": p["ids"], "logits_row_offset": offset, "continuation": p["continuation"],
                             "continuation_top": tops, "min_margin": p["min_margin"],
                             "min_route_gap": p["min_route_gap"],
                             "fp32_variant_prompt_max_rel_l2": p["fp32_variant_prompt_max_rel_l2"],
                             "fp32_variant_continuation_top_id_max_rel": p["fp32_variant_continuation_top_id_max_rel"],
                             "fp32_variant_continuation_agreeing_steps": p["fp32_variant_continuation_agreeing_steps"]})
        offset += len(p["ids"])
    blob = np.concatenate(rows, axis=0)
    with open(os.path.join(args.out_dir, logits_name), "wb") as f:
        f.write(blob.tobytes())
    golden = {
        "what": "golden logits of the PyTorch reference (tools/reference/k3_reference.py) for the C++ model "
                "test tests/model_golden_test.cc; regenerate with tools/reference/make_goldens.py",
        "preset": preset,
        "seed": args.seed,
        "fingerprint": fp,
        "fingerprint_files": files,
        "vocab_size": cfg.vocab_size,
        "new_tokens": args.new_tokens,
        "min_margin_required": args.min_margin,
        "min_route_gap_required": args.min_route_gap,
        "max_fp32_variant_rel_l2": args.max_noise,
        "max_other_mla_form_rel_l2": args.max_form_noise,
        "mla_form": args.mla_form,
        "logits_file": logits_name,
        "logits_rows": int(blob.shape[0]),
        "logits_layout": "little-endian float32 [logits_rows, vocab_size]; rows = every prompt position, "
                         "prompts in order (prompt i starts at its logits_row_offset)",
        "continuation_top_layout": "for continuation tokens 1..new_tokens-1: the reference logits row that "
                                   "chose it (after feeding the previous continuation token): its L2 norm, "
                                   "its top ids and their logits",
        "prompts": meta_prompts,
    }
    with open(os.path.join(args.out_dir, f"{preset}.json"), "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"{preset}: {len(prompts)} prompts from {tried} tries in {time.time() - t0:.0f} s, "
          f"fingerprint {fp[:16]}..., {blob.nbytes} bytes of logits", flush=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k3", required=True, help="path of the built k3 binary (for gen-model)")
    ap.add_argument("--presets", default="tiny-k3,tiny-kimi-linear")
    ap.add_argument("--seed", type=int, default=0, help="gen-model seed")
    ap.add_argument("--prompt-seed", type=int, default=0, help="seed of the prompt search")
    ap.add_argument("--num-prompts", type=int, default=3)
    ap.add_argument("--min-len", type=int, default=6)
    ap.add_argument("--max-len", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--min-margin", type=float, default=1e-3, help="top-2 logit gap everywhere")
    ap.add_argument("--min-route-gap", type=float, default=1e-3,
                    help="gap between the k-th and (k+1)-th MoE selection score of every prompt token in every layer")
    ap.add_argument("--max-noise", type=float, default=1e-2,
                    help="largest relative L2 between the reference and its fp32 variant at a prompt position")
    ap.add_argument("--max-form-noise", type=float, default=1e-2,
                    help="largest relative L2 at a prompt position between the two MLA forms")
    ap.add_argument("--mla-form", choices=k3_reference.MLA_FORMS, default="absorbed")
    ap.add_argument("--max-tries", type=int, default=300)
    ap.add_argument("--time-budget", type=float, default=0,
                    help="seconds per preset after which the search stops with the prompts found so far (>= 1)")
    ap.add_argument("--out-dir", default=os.path.normpath(os.path.join(here, "..", "..", "tests", "data", "golden")))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="k3-goldens-") as work:
        for preset in args.presets.split(","):
            make_preset(args, preset, work)


if __name__ == "__main__":
    main()
