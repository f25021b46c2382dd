#!/usr/bin/python3
"""Compares k3::image (through the image_dump tool) with Kimi K3's reference processor on Pillow.

Usage: compare_pillow.py IMAGE_DUMP WORK_DIR [NAME_SUBSTRING]
Generates a deterministic corpus (every format and mode the server accepts, 1x1 to 4000x3000, odd sizes,
extreme aspect ratios, images downscaled by each of the resize rule's limits) with Debian's
python3-pil, runs the reference (k3_reference_processor.py) and image_dump on each file, and requires
identical geometry and token counts and a maximum difference of at most 1/255 per value in the [0, 1]
pixel scale (values are un-normalised with K3's mean / std = 0.5 before comparing, so this is 2/255 in
the normalised scale). Exits 0 with "SKIP" when PIL or numpy is missing (ctest's SKIP_RETURN_CODE 77).
"""

import io
import json
import os
import struct
import subprocess
import sys
import time
import zlib

try:
    import numpy as np
    from PIL import Image
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e} (install python3-pil and python3-numpy: scripts/install-deps.sh)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_reference_processor as ref  # noqa: E402

TOLERANCE = 1.0 / 255 + 1e-6  # [0, 1] pixel scale


def texture(w, h, channels, seed, noise=20):
    """Smooth gradients plus noise and a few hard edges: exercises the bicubic kernel's lobes."""
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    out = np.empty((h, w, channels), np.float32)
    for c in range(channels):
        fx, fy = rng.uniform(0.001, 0.05, 2)
        base = 127 + 100 * np.sin(x * fx + c) * np.cos(y * fy + 2 * c)
        base += rng.normal(0, noise, (h, w)) if noise else 0
        base[(x.astype(int) // 7 + y.astype(int) // 5) % 9 == 0] = 255 * (c % 2)
        out[:, :, c] = base
    return np.clip(out, 0, 255).astype(np.uint8)


def alpha_channel(w, h, seed):
    """Fully transparent, fully opaque and partial regions."""
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w]
    a = ((x * 255) // max(w - 1, 1)).astype(np.int32)
    a[(y // 3) % 4 == 0] = 0
    a[(x // 5) % 6 == 0] = 255
    a = np.clip(a + rng.randint(-10, 10, (h, w)), 0, 255)
    return a.astype(np.uint8)


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(arr, color_type, bit_depth, interlace=False, trns=None):
    """A PNG Pillow cannot write: 16-bit RGB / RGBA / grey+alpha, Adam7 interlacing."""
    h, w = arr.shape[:2]
    arr = arr.reshape(h, w, -1)
    sample = arr.astype(">u2") if bit_depth == 16 else arr.astype(np.uint8)

    def rows(a):
        return b"".join(b"\x00" + a[r].tobytes() for r in range(a.shape[0]))

    if interlace:
        raw = b""
        for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)):
            sub = sample[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                raw += rows(sub)
    else:
        raw = rows(sample)
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, int(interlace)))
    if trns is not None:
        out += png_chunk(b"tRNS", trns)
    return out + png_chunk(b"IDAT", zlib.compress(raw, 6)) + png_chunk(b"IEND", b"")


def save(image, fmt, **kw):
    buf = io.BytesIO()
    image.save(buf, fmt, **kw)
    return buf.getvalue()


def palette_image(w, h, seed, colours=256):
    rgb = Image.fromarray(texture(w, h, 3, seed))
    return rgb.quantize(colors=colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)


def corpus():
    """(name, bytes) pairs; every entry deterministic."""
    c = []
    rgb = lambda w, h, s: Image.fromarray(texture(w, h, 3, s))  # noqa: E731

    def rgba(w, h, s, noise=20):
        return Image.fromarray(np.dstack([texture(w, h, 3, s, noise), alpha_channel(w, h, s)]), "RGBA")

    # PNG, every colour type.
    c.append(("png_rgb_1x1", save(rgb(1, 1, 1), "PNG")))
    c.append(("png_rgb_37x23", save(rgb(37, 23, 2), "PNG")))
    c.append(("png_rgba_1x1_half", save(Image.new("RGBA", (1, 1), (200, 30, 90, 128)), "PNG")))
    c.append(("png_rgba_64x48", save(rgba(64, 48, 3), "PNG")))
    c.append(("png_l_101x77", save(Image.fromarray(texture(101, 77, 1, 4)[:, :, 0]), "PNG")))
    c.append(("png_la_50x31", save(rgba(50, 31, 5).convert("LA"), "PNG")))
    c.append(("png_p_45x45", save(palette_image(45, 45, 6), "PNG")))
    p_trns = palette_image(60, 40, 7, 16)
    c.append(("png_p4_trns_60x40", save(p_trns, "PNG", bits=4, transparency=bytes([0, 64, 128, 255, 0, 200]))))
    c.append(("png_1bit_29x13", save(Image.fromarray(texture(29, 13, 1, 8)[:, :, 0] > 128), "PNG")))
    c.append(("png_l_trns_40x40", save(Image.fromarray(texture(40, 40, 1, 9)[:, :, 0] // 32 * 32), "PNG", transparency=64)))
    g16 = (texture(33, 17, 1, 10)[:, :, 0].astype(np.uint16) * 3)  # values 0..765: some clip at 255
    c.append(("png_gray16_33x17", write_png(g16, 0, 16)))
    c.append(("png_rgb16_41x29", write_png(texture(41, 29, 3, 11).astype(np.uint16) * 257 + 77, 2, 16)))
    c.append(("png_rgba16_30x20", write_png(np.dstack([texture(30, 20, 3, 12), alpha_channel(30, 20, 12)]).astype(np.uint16) * 257, 6, 16)))
    c.append(("png_la16_25x19", write_png(np.dstack([texture(25, 19, 1, 13), alpha_channel(25, 19, 13)]).astype(np.uint16) * 257, 4, 16)))
    c.append(("png_rgb_interlaced_53x47", write_png(texture(53, 47, 3, 14), 2, 8, interlace=True)))
    c.append(("png_rgba_interlaced_17x9", write_png(np.dstack([texture(17, 9, 3, 15), alpha_channel(17, 9, 15)]), 6, 8, interlace=True)))
    c.append(("png_rgb_3x5000", save(rgb(3, 5000, 16), "PNG")))
    # Downscaled: the one-side limit (7168 px), the patch budget, palette (nearest) and LA images.
    c.append(("png_rgb_8000x30_side", save(rgb(8000, 30, 17), "PNG")))
    c.append(("png_rgba_4700x2800_budget", save(rgba(4700, 2800, 18, noise=0), "PNG")))
    c.append(("png_p_trns_7500x40", save(palette_image(7500, 40, 19, 32), "PNG", transparency=3)))
    c.append(("png_la_7300x90", save(rgba(7300, 90, 20).convert("LA"), "PNG")))
    c.append(("png_gray16_7200x20", write_png(texture(7200, 20, 1, 22)[:, :, 0].astype(np.uint16) // 2 + 60, 0, 16)))

    # JPEG: baseline (4:2:0, 4:4:4), progressive, grey, CMYK; 4000x3000 is processed without resizing.
    c.append(("jpeg_baseline_4000x3000", save(rgb(4000, 3000, 23), "JPEG", quality=90)))
    c.append(("jpeg_baseline_99x67", save(rgb(99, 67, 24), "JPEG", quality=85)))
    c.append(("jpeg_444_31x17", save(rgb(31, 17, 25), "JPEG", quality=95, subsampling=0)))
    c.append(("jpeg_progressive_333x251", save(rgb(333, 251, 26), "JPEG", quality=80, progressive=True)))
    c.append(("jpeg_gray_120x90", save(Image.fromarray(texture(120, 90, 1, 27)[:, :, 0]), "JPEG")))
    c.append(("jpeg_cmyk_80x60", save(rgb(80, 60, 28).convert("CMYK"), "JPEG", quality=90)))
    c.append(("jpeg_cmyk_7400x100", save(rgb(7400, 100, 29).convert("CMYK"), "JPEG", quality=90)))
    c.append(("jpeg_5000x3", save(rgb(5000, 3, 30), "JPEG")))
    c.append(("jpeg_progressive_7300x2000", save(rgb(7300, 2000, 31), "JPEG", quality=75, progressive=True)))

    # WebP: lossy, lossless, each with and without alpha, and an animation.
    c.append(("webp_lossy_200x150", save(rgb(200, 150, 32), "WEBP", quality=80)))
    c.append(("webp_lossless_77x55", save(rgb(77, 55, 33), "WEBP", lossless=True)))
    c.append(("webp_lossy_alpha_64x64", save(rgba(64, 64, 34), "WEBP", quality=70)))
    c.append(("webp_lossless_alpha_45x33", save(rgba(45, 33, 35), "WEBP", lossless=True)))
    c.append(("webp_lossy_7400x200", save(rgb(7400, 200, 36), "WEBP", quality=60)))
    frames = [rgba(40, 30, 37 + i) for i in range(3)]
    c.append(("webp_animated_40x30", save(frames[0], "WEBP", save_all=True, append_images=frames[1:], duration=100, lossless=True)))

    # GIF: one frame, an animation's first frame with transparency, a grey-ramp palette ("L"), downscaled.
    c.append(("gif_p_90x70", save(palette_image(90, 70, 40), "GIF")))
    gframes = [palette_image(64, 48, 41 + i, 64) for i in range(3)]
    c.append(("gif_anim_trns_64x48", save(gframes[0], "GIF", save_all=True, append_images=gframes[1:], transparency=5, duration=50, loop=0)))
    c.append(("gif_gray_50x50", save(Image.fromarray(texture(50, 50, 1, 44)[:, :, 0]), "GIF")))
    c.append(("gif_p_7500x50", save(palette_image(7500, 50, 45, 128), "GIF")))
    # A palette equal to the grey ramp opens as "L"; its transparent index becomes a grey key, compared
    # after the bicubic resize in the downscaled one.
    ramp = [v for i in range(256) for v in (i, i, i)]
    for name, (w, h) in (("gif_ramp_trns_33x20", (33, 20)), ("gif_ramp_trns_7300x30", (7300, 30))):
        grey = Image.fromarray(texture(w, h, 1, 46)[:, :, 0] // 8 * 8).convert("P")
        grey.putpalette(ramp)
        c.append((name, save(grey, "GIF", transparency=40, optimize=False)))
    return c


# Other settings a checkpoint may ship, run on the small images with transparency: compositing before
# the resize (the reference's default stage), a plain white background, and no transparent_bg_config
# (alpha dropped), each with a patch budget of 6 so that every image is also downscaled. Exercises
# ParseProcessorConfig through image_dump's config argument.
VARIANTS = {
    "before_resize": dict(ref.K3_CONFIG, transparent_bg_fill_stage="before_resize", in_patch_limit=6),
    "white_after": dict(ref.K3_CONFIG, transparent_bg_config={"pattern": "white"}, in_patch_limit=6),
    "no_bg": {k: v for k, v in dict(ref.K3_CONFIG, in_patch_limit=6).items() if k != "transparent_bg_config"},
}


def compare(name, path, image, dump, work, cfg=None):
    """Runs both sides; returns (line, failure or None)."""
    mode = image.mode
    patches, grid, size = ref.process(image, cfg or ref.K3_CONFIG)
    prefix = os.path.join(work, name)
    args = [dump, path, prefix]
    if cfg is not None:
        with open(prefix + ".cfg.json", "w") as f:
            json.dump({"media_proc_cfg": cfg}, f)
        args.append(prefix + ".cfg.json")
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        return None, f"{name}: image_dump failed: {run.stdout.strip()} {run.stderr.strip()}"
    with open(prefix + ".json") as f:
        got = json.load(f)
    ours = np.fromfile(prefix + ".f32", dtype=np.float32)
    os.remove(prefix + ".f32")
    want_geom = (image.size[0], image.size[1], size["new_width"], size["new_height"], grid[0], grid[1], size["num_tokens"])
    got_geom = (got["width"], got["height"], got["resized_width"], got["resized_height"], got["grid_h"], got["grid_w"], got["num_tokens"])
    if want_geom != got_geom:
        return None, f"{name}: geometry {got_geom} != reference {want_geom}"
    if ours.size != patches.size:
        return None, f"{name}: {ours.size} values, reference {patches.size}"
    diff = np.abs(ours.reshape(-1) * 0.5 - patches.reshape(-1) * 0.5)  # [0, 1] scale (std 0.5)
    worst = float(diff.max()) if diff.size else 0.0
    off = int((diff > 1e-6).sum())
    line = (f"{name:40s} {mode:5s}->{got['mode']:5s} {image.size[0]}x{image.size[1]} -> "
            f"{got['resized_width']}x{got['resized_height']} tokens {got['num_tokens']:6d} "
            f"max|diff| {worst * 255:.3f}/255 ({off} values differ)")
    if worst > TOLERANCE:
        return line, f"{name}: max difference {worst * 255:.3f}/255 > 1/255"
    return line, None


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        return 2
    dump, work = sys.argv[1], sys.argv[2]
    only = sys.argv[3] if len(sys.argv) == 4 else ""
    os.makedirs(work, exist_ok=True)
    start = time.time()
    items = [(name, data) for name, data in corpus() if only in name]
    failures = []
    runs = 0
    for name, data in items:
        path = os.path.join(work, name + "." + name.split("_")[0])
        with open(path, "wb") as f:
            f.write(data)
        configs = [(name, None)]
        image = Image.open(path)
        has_alpha = "A" in image.getbands() or "transparency" in image.info
        if has_alpha and image.size[0] * image.size[1] <= 1 << 20:
            configs += [(f"{name}@{variant}", cfg) for variant, cfg in VARIANTS.items()]
        for run_name, cfg in configs:
            line, failure = compare(run_name, path, Image.open(path), dump, work, cfg)
            runs += 1
            if line:
                print(line)
            if failure:
                failures.append(failure)
        os.remove(path)
    print(f"{len(items)} images, {runs} runs in {time.time() - start:.1f} s")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
