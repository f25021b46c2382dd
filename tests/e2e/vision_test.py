#!/usr/bin/python3
"""End-to-end: images through the built `k3 serve` on the embedded tiny-k3 (its tiny vision tower).

Usage: vision_test.py K3_BINARY
Every image of the Pillow comparison corpus (tests/image/compare_pillow.py: each format and mode, 1x1 to
4000x3000, extreme aspect ratios) is sent as a data: URL. /tokenize must count each image as the reference
processor does (tests/image/k3_reference_processor.py):
    count(text + image) - count(text) == 3 + N + tokens("image WxH")
(<|media_begin|>, <|media_content|>, <|media_end|>, N pads, the size text), and for the images whose prompt
fits the context a chat completion's usage.prompt_tokens must equal that count. Then: bad images are 400s
naming the part and the server stays healthy; a repeated image hits the prefix cache and is not encoded again.
Needs /usr/bin/python3 with python3-pil and python3-numpy (exit 77 = skip without them).
"""
import base64
import io
import json
import os
import sys
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "image"))
try:
    import compare_pillow  # noqa: E402  (the corpus)
    import k3_reference_processor as ref  # noqa: E402
    from PIL import Image  # noqa: E402
except SystemExit:
    raise
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)
from k3serve import Failures, K3Serve  # noqa: E402

MIME = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp", "gif": "image/gif"}


def post(url, path, body):
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=300) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def user(parts):
    return [{"role": "user", "content": parts}]


def image_part(data, mime):
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64," + base64.b64encode(data).decode()}}


def main():
    k3 = sys.argv[1]
    f = Failures()
    text = [{"type": "text", "text": "Describe it."}]
    # The largest corpus file (a 13 MB RGBA PNG) is 17.6 MB as base64: above the default 16 MiB body limit.
    with K3Serve(k3, ["--max-model-len", "8192", "--max-request-body", "64MiB"]) as server:
        status, base = post(server.url, "/tokenize", {"messages": user(text)})
        f.expect(status == 200, f"/tokenize text: {status} {base}")
        sent = 0
        for name, data in compare_pillow.corpus():
            with Image.open(io.BytesIO(data)) as opened:
                width, height = opened.size
            expected_pads = ref.plan(width, height, ref.K3_CONFIG)["num_tokens"]
            _, size_text = post(server.url, "/tokenize", {"prompt": f"image {width}x{height}"})
            expected = base["count"] + 3 + expected_pads + size_text["count"]
            mime = MIME[name.split("_")[0]]
            status, counted = post(server.url, "/tokenize", {"messages": user(text + [image_part(data, mime)])})
            if not f.expect(status == 200, f"{name}: /tokenize {status} {counted}"):
                continue
            f.expect(counted["count"] == expected,
                     f"{name} ({width}x{height}): /tokenize counts {counted['count']}, the reference {expected}")
            if expected + 1 <= 8192 and len(data) < 8 << 20:
                status, reply = post(server.url, "/v1/chat/completions",
                                     {"messages": user(text + [image_part(data, mime)]), "max_tokens": 1})
                f.expect(status == 200 and reply["usage"]["prompt_tokens"] == expected,
                         f"{name}: chat {status} usage {reply.get('usage')} (expected {expected} prompt tokens)")
                sent += 1
        print(f"corpus: {sent} images through chat completions", flush=True)

        # Bad images: a 400 naming the part; the server answers the next request.
        bad = {
            "truncated": image_part(compare_pillow.corpus()[1][1][:40], "image/png"),
            "svg": image_part(b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml"),
            "bad base64": {"type": "image_url", "image_url": {"url": "data:image/png;base64,!!!"}},
            "not allowed": {"type": "image_url", "image_url": {"url": "http://127.0.0.1:9/x.png"}},
        }
        for what, part in bad.items():
            status, reply = post(server.url, "/v1/chat/completions", {"messages": user(text + [part]), "max_tokens": 1})
            f.expect(status == 400 and reply["error"]["param"] == "messages[0].content[1].image_url",
                     f"{what}: {status} {reply}")
        status, _ = post(server.url, "/v1/chat/completions", {"messages": user(text), "max_tokens": 1})
        f.expect(status == 200, f"healthy after the bad images: {status}")

        # The same image twice: the second prompt is a prefix-cache hit over the image.
        png = compare_pillow.corpus()[3][1]
        request = {"messages": user(text + [image_part(png, "image/png")]), "max_tokens": 2, "temperature": 0}
        _, first = post(server.url, "/v1/chat/completions", request)
        _, second = post(server.url, "/v1/chat/completions", request)
        cached = (second.get("usage", {}).get("prompt_tokens_details") or {}).get("cached_tokens", 0)
        f.expect(cached == second["usage"]["prompt_tokens"], f"repeated image: cached {cached} of {second['usage']}")
        f.expect(first["choices"][0]["message"] == second["choices"][0]["message"], "repeated image: same reply")
    f.exit()


if __name__ == "__main__":
    main()
