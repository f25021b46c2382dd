"""Writes the vision goldens of tiny-k3 (seed 0) from the PyTorch references.

  1. tests/data/golden/tiny-k3.vision.json + tiny-k3.vision.f32: the projector output of
     vision_reference.py for 10 synthetic images of varied patch grids (square, odd numbers of merged
     tokens, extreme aspect ratios, grids smaller and larger than the position grid, the position grid's
     own size); rows little-endian float32 [rows, text_hidden], images in order. Read by
     src/model/vision/vision_tower_test.cc (relative L2 <= 1e-2 per image).
  2. tests/data/golden/tiny-k3.vision_e2e.json + tiny-k3.vision_e2e.logits.f32: one prompt with an image
     expanded as the server expands it (vision.md §4: text, <|media_begin|>, the tokens of
     "image {W}x{H}", <|media_content|>, N x <|media_pad|>, <|media_end|>, text), the logits of
     k3_reference.py at every prompt position with the pad rows' embeddings replaced by the tower's
     output, and the 32-token greedy continuation, chosen with make_goldens.py's rules (logit margins,
     MoE route gaps, fp32-variant and other-MLA-form noise), and also only if the tower's fp32 variant
     (the same rounding points, float32 wide math) and the image rows with 5 % of their values one bf16
     step off (flip_bf16, two seeds) move no prompt position's logits by more than --max-noise: the text
     model amplifies a few flipped image values (20 % flips once moved a prompt's logits by 5 %). For the
     engine's end-to-end test.

Usage (needs a built k3 for gen-model and tokenize):
  /usr/bin/python3 tools/reference/make_vision_goldens.py --k3 build/k3
"""

import argparse
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
import make_goldens  # noqa: E402
import vision_reference  # noqa: E402

PRESET = "tiny-k3"
GENERATOR_VERSION = 3  # src/model/generator.h kGeneratorVersion these goldens were made with
# (rows, columns) of patches; tiny-k3's position grid is 10 x 16.
GRIDS = [(2, 2), (2, 28), (28, 2), (4, 6), (6, 10), (10, 16), (12, 8), (14, 22), (20, 28), (28, 20)]
E2E_GRID = (6, 10)      # 84 x 140 pixels: "image 140x84", 15 pads
E2E_IMAGE_INDEX = 10
# Image rows with 5 % of their values one bf16 step off must move no prompt logits past --max-noise.
FLIP_FRACTION = 0.05
FLIP_SEEDS = (1, 2)
# Offsets of the media tokens from the first special id (K3: 163584 + 18..21).
MEDIA_BEGIN, MEDIA_CONTENT, MEDIA_END = 18, 19, 20


def flip_bf16(rows, fraction, seed):
    """rows (bf16) with a `fraction` of the values moved one bf16 step up or down (a fixed seed): what
    an engine whose tower rounds some values the other way hands the text model (the C++ tower differs
    from this reference by 0 to 3.7e-3 relative L2 on the tower goldens; 5 % flips move rows ~1.2e-3)."""
    gen = torch.Generator().manual_seed(seed)
    bits = rows.contiguous().view(torch.int16).clone()
    mask = torch.rand(rows.shape, generator=gen) < fraction
    step = torch.where(torch.rand(rows.shape, generator=gen) < 0.5, 1, -1).to(torch.int16)
    return torch.where(mask, bits + step, bits).view(torch.bfloat16)


def tokenize(k3, model_dir, text):
    out = subprocess.run([k3, "tokenize", "--model", model_dir, "--format", "json", text], check=True,
                         capture_output=True, text=True).stdout
    parsed = json.loads(out)
    return [int(i) for i in (parsed["ids"] if isinstance(parsed, dict) else parsed)]


def vision_goldens(args, model_dir, vref):
    rows, images, offset = [], [], 0
    for index, (gh, gw) in enumerate(GRIDS):
        t0 = time.time()
        out = vref.encode(vision_reference.synthetic_patches(gh, gw, index, vref.cfg.patch), gh, gw)
        rows.append(out.to(torch.float32).numpy().astype("<f4"))
        images.append({"index": index, "grid": [gh, gw], "rows": int(out.shape[0]), "row_offset": offset})
        offset += int(out.shape[0])
        print(f"image {index} grid {gh}x{gw}: {out.shape[0]} rows in {time.time() - t0:.1f} s", flush=True)
    blob = np.concatenate(rows, axis=0)
    with open(os.path.join(args.out_dir, f"{PRESET}.vision.f32"), "wb") as f:
        f.write(blob.tobytes())
    fp, files = make_goldens.fingerprint(model_dir)
    golden = {
        "what": "projector outputs of tools/reference/vision_reference.py for the C++ test "
                "src/model/vision/vision_tower_test.cc; regenerate with tools/reference/make_vision_goldens.py",
        "preset": PRESET,
        "seed": args.seed,
        "generator_version": GENERATOR_VERSION,
        "fingerprint": fp,
        "fingerprint_files": files,
        "text_hidden_size": vref.cfg.text_hidden,
        "input_rule": "vision_reference.synthetic_patches(grid_h, grid_w, index, patch_size): the uint8 image "
                      "v(c, y, x) = ((x*255)//W + (y*255)//H + ((h >> 13) % 64) + 40c) % 256 with "
                      "h = (x*73856093) ^ (y*19349663) ^ ((c + 3*index)*83492791) mod 2^32, W x H = "
                      "(grid_w*p) x (grid_h*p); normalised (v/255 - 0.5)*2 in float32; patches in raster "
                      "order, each [3, p, p]",
        "rows_file": f"{PRESET}.vision.f32",
        "rows": int(blob.shape[0]),
        "rows_layout": "little-endian float32 [rows, text_hidden_size] (bf16 values); images in order, "
                       "image i starts at its row_offset",
        "images": images,
    }
    with open(os.path.join(args.out_dir, f"{PRESET}.vision.json"), "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


def e2e_golden(args, model_dir, vref):
    ref = k3_reference.Reference(model_dir)
    cfg = ref.cfg
    first_special = cfg.vocab_size - make_goldens.NUM_SPECIAL
    gh, gw = E2E_GRID
    width, height = gw * vref.cfg.patch, gh * vref.cfg.patch
    patches = vision_reference.synthetic_patches(gh, gw, E2E_IMAGE_INDEX, vref.cfg.patch)
    rows = vref.encode(patches, gh, gw)
    # The tower's own fp32 variant (wide math in float32): another valid implementation of its rounding
    # points. The text model must not amplify the difference past max_noise at any prompt position (an
    # engine's tower differs from this one by about as much).
    saved = vision_reference.WIDE
    vision_reference.WIDE = torch.float32
    try:
        variant_rows = vref.encode(patches, gh, gw)
    finally:
        vision_reference.WIDE = saved
    n_pads = int(rows.shape[0])
    image_text = f"image {width}x{height}"
    image_ids = tokenize(args.k3, model_dir, image_text)
    media = ([first_special + MEDIA_BEGIN] + image_ids + [first_special + MEDIA_CONTENT] +
             [vref.cfg.media_pad] * n_pads + [first_special + MEDIA_END])
    rng = random.Random(f"k3stack-vision-e2e-{args.prompt_seed}")
    orig_forward = ref.forward
    t0 = time.time()
    for tried in range(1, args.max_tries + 1):
        before = [rng.randrange(first_special) for _ in range(rng.randint(3, 5))]
        after = [rng.randrange(first_special) for _ in range(rng.randint(2, 4))]
        prompt = before + media + after
        start = len(before) + 1 + len(image_ids) + 1
        positions = list(range(start, start + n_pads))
        assert all(prompt[p] == vref.cfg.media_pad for p in positions)
        ref.forward = lambda seq, trace=None, _m=(positions, rows): orig_forward(seq, trace, media=_m)
        res = make_goldens.try_prompt(ref, prompt, args.new_tokens, args.min_margin, args.min_route_gap,
                                      args.max_noise, args.max_form_noise)
        if not isinstance(res, str):
            moved = orig_forward(prompt, media=(positions, variant_rows))
            res["vision_variant_max_rel_l2"] = float(make_goldens.rel_rows(moved, res["prompt_logits"]).max())
            flipped = [orig_forward(prompt, media=(positions, flip_bf16(rows, FLIP_FRACTION, seed)))
                       for seed in FLIP_SEEDS]
            res["vision_flip_max_rel_l2"] = max(float(make_goldens.rel_rows(f, res["prompt_logits"]).max())
                                                for f in flipped)
            if res["vision_variant_max_rel_l2"] > args.max_noise:
                res = f"vision fp32-variant noise {res['vision_variant_max_rel_l2']:.3f}"
            elif res["vision_flip_max_rel_l2"] > args.max_noise:
                res = f"vision-row flip noise {res['vision_flip_max_rel_l2']:.3f}"
        print(f"e2e try {tried}: " + (f"rejected ({res})" if isinstance(res, str) else
                                       f"kept, min margin {res['min_margin']:.4f}"), flush=True)
        if not isinstance(res, str):
            break
    else:
        raise RuntimeError(f"no e2e prompt passed in {args.max_tries} tries")
    # Without the image rows the logits differ (the test would notice a missing override).
    plain = orig_forward(prompt)
    effect = float(make_goldens.rel_rows(plain[start:], res["prompt_logits"][start:]).max())
    logits = res["prompt_logits"].numpy().astype("<f4")
    with open(os.path.join(args.out_dir, f"{PRESET}.vision_e2e.logits.f32"), "wb") as f:
        f.write(logits.tobytes())
    tops = []
    for row in res["steps"]:
        vals, idx = torch.topk(row, make_goldens.CONT_TOP)
        tops.append({"norm": float(row.norm()), "ids": [int(i) for i in idx], "logits": [float(v) for v in vals]})
    fp, files = make_goldens.fingerprint(model_dir)
    golden = {
        "what": "end-to-end golden of an image prompt: tools/reference/k3_reference.py with the <|media_pad|> "
                "embedding rows replaced by tools/reference/vision_reference.py's output; regenerate with "
                "tools/reference/make_vision_goldens.py",
        "preset": PRESET,
        "seed": args.seed,
        "generator_version": GENERATOR_VERSION,
        "fingerprint": fp,
        "fingerprint_files": files,
        "vocab_size": cfg.vocab_size,
        "image": {"grid": [gh, gw], "index": E2E_IMAGE_INDEX, "width": width, "height": height,
                  "input_rule": "as tiny-k3.vision.json's input_rule"},
        "image_text": image_text,
        "image_text_ids": image_ids,
        "ids": prompt,
        "media_pad_positions": positions,
        "media_pad_token_id": vref.cfg.media_pad,
        "logits_file": f"{PRESET}.vision_e2e.logits.f32",
        "logits_rows": len(prompt),
        "logits_layout": "little-endian float32 [logits_rows, vocab_size]: every prompt position",
        "continuation": res["continuation"],
        "continuation_top": tops,
        "min_margin": res["min_margin"],
        "min_route_gap": res["min_route_gap"],
        "fp32_variant_prompt_max_rel_l2": res["fp32_variant_prompt_max_rel_l2"],
        "vision_fp32_variant_max_rel_l2": res["vision_variant_max_rel_l2"],
        "vision_flip_max_rel_l2": res["vision_flip_max_rel_l2"],
        "vision_flip_rule": f"flip_bf16(rows, {FLIP_FRACTION}, seed) for seeds {list(FLIP_SEEDS)}",
        "max_rel_l2_without_image_rows": effect,
        "min_margin_required": args.min_margin,
        "min_route_gap_required": args.min_route_gap,
        "mla_form": ref.mla_form,
    }
    with open(os.path.join(args.out_dir, f"{PRESET}.vision_e2e.json"), "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"e2e: {len(prompt)} ids, kept after {tried} tries in {time.time() - t0:.0f} s; the image rows move "
          f"the later logits by up to {effect:.3f} relative L2", flush=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k3", required=True, help="path of the built k3 binary (gen-model, tokenize)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prompt-seed", type=int, default=0)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--min-margin", type=float, default=0.02)
    ap.add_argument("--min-route-gap", type=float, default=1e-3)
    ap.add_argument("--max-noise", type=float, default=1e-2)
    ap.add_argument("--max-form-noise", type=float, default=1e-2)
    ap.add_argument("--max-tries", type=int, default=80)
    ap.add_argument("--skip-e2e", action="store_true")
    ap.add_argument("--out-dir", default=os.path.normpath(os.path.join(here, "..", "..", "tests", "data", "golden")))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="k3-vision-goldens-") as work:
        model_dir = os.path.join(work, PRESET)
        subprocess.run([args.k3, "gen-model", "--preset", PRESET, "--seed", str(args.seed), "--out", model_dir],
                       check=True)
        vref = vision_reference.VisionReference(model_dir)
        os.makedirs(args.out_dir, exist_ok=True)
        vision_goldens(args, model_dir, vref)
        if not args.skip_e2e:
            e2e_golden(args, model_dir, vref)


if __name__ == "__main__":
    main()
