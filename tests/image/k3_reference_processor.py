"""Kimi K3's reference image processor, re-expressed for tests (our own code, same steps).

The checkpoint's processor (moonshotai/Kimi-K3: kimi_k3_vision_processing.py + media_utils.py, read
through copies in public repositories; docs/formats.md "Images" names them) does, for one image:
  1. keep the PIL image as opened (transparent_bg_fill_stage "after_resize": no conversion yet);
  2. plan the size with navit_resize_image on the original size;
  3. image.resize((new_w, new_h), BICUBIC)  -- Pillow's own mode rules (P / 1 nearest, RGBA / LA
     premultiplied, a no-op copy when the size is unchanged);
  4. fill_transparent_bg_with: RGB untouched; no alpha band and no info["transparency"] -> convert("RGB");
     otherwise convert("RGBA") and blend over the background in float32, truncating to uint8;
  5. pad right / bottom with 0 to a multiple of merge * patch;
  6. normalise: (x / 255.0).astype(float32), minus mean, times 1 / std (numpy float64 operands);
  7. patchify to [N, 3, p, p] in raster order; grid (1, H / p, W / p).
Token count: (padded_h / (merge * p)) * (padded_w / (merge * p)).
"""

import math

import numpy as np
from PIL import Image

# K3's published media_proc_cfg (preprocessor_config.json).
K3_CONFIG = {
    "patch_size": 14,
    "merge_kernel_size": 2,
    "in_patch_limit": 65536,
    "patch_limit_on_one_side": 512,
    "fixed_output_tokens": None,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "transparent_bg_config": {
        "pattern": "chessboard",
        "chessboard_square_size": 8,
        "chessboard_square_on_top_left": True,
        "chessboard_white_value": 255,
        "chessboard_gray_value": 180,
    },
    "transparent_bg_fill_stage": "after_resize",
}


def plan(width, height, cfg):
    """navit_resize_image: the resized and padded size and the token count."""
    p = cfg["patch_size"]
    side = cfg["patch_limit_on_one_side"]
    s1 = math.sqrt(cfg["in_patch_limit"] / (max(1.0, width // p) * max(1.0, height // p)))
    scale = min(1.0, s1, side * p / width, side * p / height)
    new_w = min(max(1, int(width * scale)), side * p)
    new_h = min(max(1, int(height * scale)), side * p)
    factor = cfg["merge_kernel_size"] * p
    pad_w = (factor - new_w % factor) % factor
    pad_h = (factor - new_h % factor) % factor
    tokens = cfg["fixed_output_tokens"]
    if tokens is None:
        tokens = ((new_h + pad_h) // factor) * ((new_w + pad_w) // factor)
    return {"new_width": new_w, "new_height": new_h, "pad_width": pad_w, "pad_height": pad_h, "num_tokens": tokens}


def background(height, width, bg):
    pattern = bg.get("pattern", "black")
    if pattern != "chessboard":
        return np.full((height, width, 3), {"white": 255, "black": 0, "gray": 128}[pattern], dtype=np.uint8)
    size = bg.get("chessboard_square_size", 16)
    gray_parity = 1 if bg.get("chessboard_square_on_top_left", True) else 0
    ys = (np.arange(height) // size)[:, None]
    xs = (np.arange(width) // size)[None, :]
    gray = (ys + xs) % 2 == gray_parity
    board = np.where(gray, bg.get("chessboard_gray_value", 200), bg.get("chessboard_white_value", 255)).astype(np.uint8)
    return np.repeat(board[:, :, None], 3, axis=2)


def fill_transparent(image, bg):
    if bg is None:
        return image.convert("RGB")
    if image.mode == "RGB":
        return image
    if not ("A" in image.getbands() or "transparency" in image.info):
        return image.convert("RGB")
    rgba = np.array(image.convert("RGBA"))
    back = background(rgba.shape[0], rgba.shape[1], bg)
    alpha = rgba[:, :, 3].astype(np.float32) / 255.0
    alpha3 = np.stack([alpha] * 3, axis=2)
    mixed = alpha3 * rgba[:, :, :3] + (1 - alpha3) * back
    return Image.fromarray(mixed.astype(np.uint8))


def process(image, cfg=K3_CONFIG):
    """Returns (patches float32 [N, 3, p, p], grid (h, w), plan dict) for an opened PIL image."""
    bg = cfg.get("transparent_bg_config")
    stage = cfg.get("transparent_bg_fill_stage", "before_resize")
    size = plan(image.size[0], image.size[1], cfg)
    if stage == "before_resize":
        image = fill_transparent(image, bg)
    image = image.resize((size["new_width"], size["new_height"]), resample=Image.Resampling.BICUBIC)
    if stage == "after_resize":
        image = fill_transparent(image, bg)
    pixels = np.asarray(image)
    pixels = np.pad(pixels, ((0, size["pad_height"]), (0, size["pad_width"]), (0, 0)), mode="constant", constant_values=0)
    x = (pixels[None] / 255.0).astype(np.float32)
    x -= np.array(cfg["image_mean"])
    x *= 1.0 / np.array(cfg["image_std"])
    p = cfg["patch_size"]
    t, h, w, c = x.shape
    patches = x.reshape(t, h // p, p, w // p, p, c).transpose(0, 1, 3, 5, 2, 4).reshape(-1, c, p, p)
    return patches, (h // p, w // p), size
