"""`k3 bench` against `k3 serve` (embedded tiny-k3): a small sweep whose JSON token totals must equal
the deltas of the server's own /metrics counters over the run.

    bench_test.py K3_BINARY OUT_DIR

Checks, per concurrency level and over the whole sweep: total_input_tokens equals the rise of
vllm:prompt_tokens_total and total_output_tokens the rise of vllm:generation_tokens_total; every request
completed; the JSON has vllm bench serve's field names. Leaves OUT_DIR/results.json and
OUT_DIR/results.svg for plot_screenshot_test.py (the ctest fixture e2e_bench_outputs).
"""
import json
import os
import sys

from k3serve import Failures, K3Serve, run

LEVELS = [1, 2, 4]
NUM_PROMPTS = 8
VLLM_FIELDS = ["date", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate", "max_concurrency",
               "duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
               "request_throughput", "output_throughput", "total_token_throughput", "input_lens",
               "output_lens", "ttfts", "itls", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
               "mean_tpot_ms", "mean_itl_ms", "mean_e2el_ms"]


def main():
    k3, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    results, plot = os.path.join(out_dir, "results.json"), os.path.join(out_dir, "results.svg")
    for path in (results, plot):
        if os.path.exists(path):
            os.remove(path)
    failures = Failures()
    with K3Serve(k3) as server:
        before = server.metrics()
        code, out = run([k3, "bench", "--endpoint", server.url, "--concurrency", ",".join(map(str, LEVELS)),
                         "--num-prompts", str(NUM_PROMPTS), "--input-len", "32", "--output-len", "16",
                         "--out", results, "--plot", plot])
        after = server.metrics()
    print(out)
    failures.expect(code == 0, f"k3 bench exited {code}")
    with open(results) as f:
        levels = [json.loads(line) for line in f if line.strip()]
    failures.expect([lv.get("max_concurrency") for lv in levels] == LEVELS,
                    f"levels: {[lv.get('max_concurrency') for lv in levels]}")
    for lv in levels:
        c = lv.get("max_concurrency")
        missing = [k for k in VLLM_FIELDS if k not in lv]
        failures.expect(not missing, f"c={c}: fields missing: {missing}")
        failures.expect(lv.get("completed") == NUM_PROMPTS and lv.get("failed") == 0,
                        f"c={c}: completed {lv.get('completed')}, failed {lv.get('failed')}")
        failures.expect(lv.get("total_input_tokens", 0) > 0 and lv.get("total_output_tokens", 0) > 0,
                        f"c={c}: no tokens counted")
        # The per-level deltas bench read from /metrics itself, around each level's run.
        failures.expect(lv.get("server_prompt_tokens") == lv.get("total_input_tokens"),
                        f"c={c}: total_input_tokens {lv.get('total_input_tokens')} != server_prompt_tokens "
                        f"{lv.get('server_prompt_tokens')}")
        failures.expect(lv.get("server_generation_tokens") == lv.get("total_output_tokens"),
                        f"c={c}: total_output_tokens {lv.get('total_output_tokens')} != "
                        f"server_generation_tokens {lv.get('server_generation_tokens')}")
    # And over the whole sweep, from this test's own scrapes.
    for field, metric in (("total_input_tokens", "vllm:prompt_tokens_total"),
                          ("total_output_tokens", "vllm:generation_tokens_total")):
        total = sum(lv.get(field, 0) for lv in levels)
        delta = after.get(metric, 0) - before.get(metric, 0)
        print(f"{field}: JSON {total}, /metrics {metric} +{delta:.0f}")
        failures.expect(total == delta, f"{field} {total} != {metric} delta {delta:.0f}")
    failures.expect(os.path.getsize(plot) > 0 if os.path.exists(plot) else False, "no SVG written")
    failures.exit()


if __name__ == "__main__":
    main()
