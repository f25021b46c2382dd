"""How strongly a checkpoint amplifies rounding noise: the measure behind the generator's init choices.

  /usr/bin/python3 tools/reference/chaos.py --model DIR [--samples 6] [--len 40]

For random token sequences (ids below the first special id) it runs the reference twice over the whole
sequence: with its float64 wide math and with float32 wide math (fp32_variant: another valid
implementation of the same rounding points, which differs from the first only where some bf16 rounding
lands the other way, like the C++ engine does). Printed per preset:
  - relative L2 between the two logits rows: median and max over all positions;
  - the fraction of positions whose argmax differs;
  - the smallest top-2 logit margin relative to the noise seen;
  - MoE selection: the fraction of (token, layer) decisions whose k-th vs (k+1)-th score gap is below
    1e-3, and whether any selected expert set differs between the two runs.
A model a C++ engine can match for 32 greedy tokens has prompt-wide noise far below 1e-2 and no routing
differences.
"""

import argparse
import os
import random
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_reference  # noqa: E402

NUM_SPECIAL = 256


def run(model, seq, wide):
    saved = k3_reference.WIDE
    k3_reference.WIDE = wide
    trace = []
    try:
        return model.forward(seq, trace), trace
    finally:
        k3_reference.WIDE = saved


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--samples", type=int, default=6)
    ap.add_argument("--len", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = k3_reference.Reference(args.model)
    cfg = model.cfg
    rng = random.Random(args.seed)
    rels, flips, positions, near_routes, decisions, route_diff = [], 0, 0, 0, 0, 0
    margins = []
    for _ in range(args.samples):
        seq = [rng.randrange(cfg.vocab_size - NUM_SPECIAL) for _ in range(args.len)]
        a, ta = run(model, seq, torch.float64)
        b, tb = run(model, seq, torch.float32)
        rel = (a - b).norm(dim=-1) / a.norm(dim=-1)
        rels += [float(r) for r in rel]
        flips += int((a.argmax(-1) != b.argmax(-1)).sum())
        positions += len(seq)
        top2 = torch.topk(a, 2, dim=-1).values
        margins += [float(m) for m in (top2[:, 0] - top2[:, 1])]
        for ea, eb in zip(ta, tb):
            sel = ea["sel"].sort(dim=-1, descending=True).values
            k = cfg.top_k
            gap = sel[:, k - 1] - sel[:, k]
            near_routes += int((gap < 1e-3).sum())
            decisions += gap.numel()
            route_diff += int((ea["idx"].sort(-1).values != eb["idx"].sort(-1).values).any(-1).sum())
    rels_sorted = sorted(rels)
    margins.sort()
    print(f"positions {positions}: fp32-vs-fp64 logits rel L2 median {rels_sorted[len(rels) // 2]:.2e} "
          f"p90 {rels_sorted[int(0.9 * len(rels))]:.2e} max {rels_sorted[-1]:.2e}; argmax flips {flips}; "
          f"top-2 margin p10 {margins[len(margins) // 10]:.3f}")
    if decisions:
        print(f"moe decisions {decisions}: gap < 1e-3: {near_routes} ({100.0 * near_routes / decisions:.2f}%), "
              f"expert set differs: {route_diff}")


if __name__ == "__main__":
    main()
