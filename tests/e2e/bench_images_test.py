"""`k3 bench --images N --image-size WxH` against `k3 serve` (embedded tiny-k3):

    bench_images_test.py K3_BINARY OUT_DIR

Every request carries 2 random 100x50 JPEG images. A model without a vision tower answers each with a
400 naming the missing tower: every request must then be counted as failed with that reason and k3 bench
must exit non-zero. A model with a tower must complete every request, with total_input_tokens equal to
the server's /metrics prompt-token delta and each prompt holding at least the images' K3 prompts
(3 + 8 image tokens each + the "image 100x50" text). The JSON names the images either way.
"""
import json
import os
import sys

from k3serve import Failures, K3Serve, run

NUM_PROMPTS = 4
IMAGES = 2
IMAGE_TOKENS = 3 + 8  # 100x50 -> padded 112x56 -> 8x4 patches -> 4x2 merged


def main():
    k3, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    results = os.path.join(out_dir, "images.json")
    if os.path.exists(results):
        os.remove(results)
    failures = Failures()
    with K3Serve(k3) as server:
        before = server.metrics()
        code, out = run([k3, "bench", "--endpoint", server.url, "--concurrency", "2", "--num-prompts",
                         str(NUM_PROMPTS), "--input-len", "8", "--output-len", "4", "--images", str(IMAGES),
                         "--image-size", "100x50", "--out", results])
        after = server.metrics()
    print(out)
    failures.expect("Images per request:" in out and "2 x 100x50 jpeg" in out, "summary names no images")
    with open(results) as f:
        level = json.loads(f.readline())
    failures.expect(level.get("images_per_request") == IMAGES and level.get("image_width") == 100 and
                    level.get("image_height") == 50 and level.get("image_format") == "jpeg" and
                    level.get("image_tokens_per_image") == IMAGE_TOKENS,
                    f"image fields: {[level.get(k) for k in ('images_per_request', 'image_width', 'image_height', 'image_format', 'image_tokens_per_image')]}")
    if level.get("completed") == 0:
        # No vision tower: every request refused, with the reason, and counted.
        failures.expect(level.get("failed") == NUM_PROMPTS, f"failed {level.get('failed')}, expected {NUM_PROMPTS}")
        errors = level.get("errors", [])
        failures.expect(len(errors) == NUM_PROMPTS and all("no vision tower" in e for e in errors),
                        f"errors do not name the missing vision tower: {errors[:1]}")
        failures.expect(code != 0, "k3 bench exited 0 although every request failed")
    else:
        failures.expect(level.get("completed") == NUM_PROMPTS and level.get("failed") == 0,
                        f"completed {level.get('completed')}, failed {level.get('failed')}")
        delta = after.get("vllm:prompt_tokens_total", 0) - before.get("vllm:prompt_tokens_total", 0)
        failures.expect(level.get("total_input_tokens") == delta,
                        f"total_input_tokens {level.get('total_input_tokens')} != /metrics delta {delta:.0f}")
        for n in level.get("input_lens", []):
            failures.expect(n > IMAGES * IMAGE_TOKENS, f"a prompt of {n} tokens cannot hold {IMAGES} images")
        failures.expect(code == 0, f"k3 bench exited {code}")
    failures.exit()


if __name__ == "__main__":
    main()
