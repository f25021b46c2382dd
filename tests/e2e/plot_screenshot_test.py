"""The `k3 bench --plot` SVG rendered by headless Chromium: one point per concurrency level, visibly drawn.

    plot_screenshot_test.py RESULTS_SVG RESULTS_JSON OUT_DIR

1. The SVG itself: each series (<g class="series">) has exactly one <circle class="point"> per level of
   RESULTS_JSON (data-concurrency), inside the plot area.
2. Chromium (Debian's `chromium`, or $K3_CHROMIUM) screenshots it at the SVG's size; the PNG (decoded
   here with zlib) must not be blank, and the pixel at every point's centre must be a series colour.
Exits 77 (ctest SKIP_RETURN_CODE) only when Chromium is not installed, after the SVG checks.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zlib

SVG_NS = "{http://www.w3.org/2000/svg}"


def hex_rgb(color):
    return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))


def decode_png(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB / RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        elif kind == b"IEND":
            break
    width, height, depth, color_type, _, _, interlace = header
    assert depth == 8 and color_type in (2, 6) and interlace == 0, f"unsupported PNG {header}"
    bpp = 3 if color_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def main():
    svg_path, json_path, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    problems = []
    with open(json_path) as f:
        levels = sorted(json.loads(line)["max_concurrency"] for line in f if line.strip())
    root = ET.parse(svg_path).getroot()
    width, height = int(float(root.get("width"))), int(float(root.get("height")))
    points = []  # (series colour, concurrency, cx, cy)
    series = root.findall(f"{SVG_NS}g[@class='series']")
    if len(series) != 2:
        problems.append(f"{len(series)} series, expected 2 (end-to-end latency, TTFT)")
    for g in series:
        circles = g.findall(f"{SVG_NS}circle[@class='point']")
        got = sorted(int(c.get("data-concurrency")) for c in circles)
        if got != levels:
            problems.append(f"series '{g.get('data-name')}': points for levels {got}, expected {levels}")
        for c in circles:
            cx, cy = float(c.get("cx")), float(c.get("cy"))
            if not (0 <= cx < width and 0 <= cy < height):
                problems.append(f"point c={c.get('data-concurrency')} at ({cx}, {cy}) is off the chart")
            points.append((c.get("fill"), int(c.get("data-concurrency")), cx, cy))
    print(f"SVG: {len(series)} series, {len(points)} points for levels {levels}")
    if problems:
        print("FAIL:", "\n".join(problems))
        return 1

    chromium = os.environ.get("K3_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIP: chromium is not installed (scripts/install-deps.sh installs Debian's chromium)")
        return 77
    os.makedirs(out_dir, exist_ok=True)
    png_path = os.path.join(out_dir, "results.png")
    if os.path.exists(png_path):
        os.remove(png_path)
    with tempfile.TemporaryDirectory() as profile:
        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--hide-scrollbars", "--force-device-scale-factor=1", f"--user-data-dir={profile}",
                f"--screenshot={png_path}", f"--window-size={width},{height}",
                "file://" + os.path.abspath(svg_path)]
        started = time.monotonic()
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
        print(f"chromium exited {done.returncode} in {time.monotonic() - started:.1f} s")
    if done.returncode != 0 or not os.path.exists(png_path):
        print(done.stdout)
        print("FAIL: no screenshot")
        return 1
    with open(png_path, "rb") as f:
        w, h, rows = decode_png(f.read())
    if (w, h) != (width, height):
        problems.append(f"screenshot is {w}x{h}, expected {width}x{height}")
    white = (255, 255, 255)
    drawn = sum(1 for row in rows for px in row if px != white)
    print(f"PNG {w}x{h}: {drawn} non-white pixels ({100.0 * drawn / (w * h):.1f}%)")
    if drawn < 0.002 * w * h:
        problems.append(f"the screenshot is blank ({drawn} non-white pixels)")
    colours = {hex_rgb(fill) for fill, _, _, _ in points}
    for colour in colours:
        # A marker (r = 4) covers about 50 pixels; lines and labels in the series colour add more.
        count = sum(1 for row in rows for px in row if max(abs(a - b) for a, b in zip(px, colour)) <= 8)
        expected = 30 * sum(1 for p in points if hex_rgb(p[0]) == colour)
        print(f"series colour {colour}: {count} pixels")
        if count < expected:
            problems.append(f"only {count} pixels in the series colour {colour}, expected >= {expected}")
    for fill, level, cx, cy in points:
        x, y = int(round(cx)), int(round(cy))
        if not (0 <= x < w and 0 <= y < h):
            continue
        got = rows[y][x]
        # Another series' marker may be drawn over this one where two points nearly coincide.
        near = [p for p in points if p[0] != fill and abs(p[2] - cx) < 9 and abs(p[3] - cy) < 9]
        allowed = colours if near else {hex_rgb(fill)}
        if not any(max(abs(a - b) for a, b in zip(got, want)) <= 8 for want in allowed):
            problems.append(f"point c={level} ({fill}) at ({x}, {y}): the pixel is {got}")
    if problems:
        print("FAIL:", "\n".join(problems))
        return 1
    print(f"every one of the {len(points)} points is drawn in its series colour")
    return 0


if __name__ == "__main__":
    sys.exit(main())
