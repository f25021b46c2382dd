"""Every metric the rendered Grafana dashboard and autoscalers query is one `k3 serve` exports.

Usage: dashboard_metrics_test.py K3_BINARY

Renders `k3 render --monitoring --autoscale 1:2` (KEDA) and `--autoscaler hpa` (prometheus-adapter) for
the k8s target, collects every vllm:* series their PromQL names (grafana-dashboard.json panel targets,
ScaledObject trigger queries, the adapter's seriesQuery rules), starts the built `k3 serve` (embedded
tiny-k3) served as the rendered model's name, answers one chat request so every histogram has a sample,
and checks each queried series appears in GET /metrics with the model_name label the queries filter on.
(vLLM's own names are checked against vllm/v1/metrics/loggers.py by tests/deploy/render_ops_test.cc.)
"""
import json
import os
import re
import sys
import tempfile
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from k3serve import Failures, K3Serve, run  # noqa: E402

SERVED_NAME = "Kimi-K3"  # the name the rendered queries filter on (model_name="Kimi-K3")


def queried_series(k3, out, extra):
    code, _ = run([k3, "render", "--target", "k8s", "--engine", "k3", "--image", "registry.example/k3:test",
                   "--out", out, *extra])
    if code != 0:
        raise RuntimeError(f"k3 render {' '.join(extra)} failed")
    exprs = []
    dashboard = os.path.join(out, "grafana-dashboard.json")
    if os.path.exists(dashboard):
        with open(dashboard) as f:
            exprs += [t["expr"] for p in json.load(f)["panels"] for t in p["targets"]]
    with open(os.path.join(out, "autoscale.yaml")) as f:
        for doc in yaml.safe_load_all(f):
            if doc and doc.get("kind") == "ScaledObject":
                exprs += [t["metadata"]["query"] for t in doc["spec"]["triggers"]]
    values = os.path.join(out, "prometheus-adapter-values.yaml")
    if os.path.exists(values):
        with open(values) as f:
            doc = next(d for d in yaml.safe_load_all(f) if d)
        exprs += [r["seriesQuery"] for r in doc["rules"]["custom"]]
    return exprs


def main():
    k3 = os.path.abspath(sys.argv[1])
    failures = Failures()
    with tempfile.TemporaryDirectory(prefix="k3-dashboard-") as work:
        exprs = queried_series(k3, os.path.join(work, "keda"), ["--monitoring", "--autoscale", "1:2"])
        exprs += queried_series(k3, os.path.join(work, "hpa"), ["--autoscale", "1:2", "--autoscaler", "hpa"])
    names = sorted({n for e in exprs for n in re.findall(r"vllm:[a-z0-9_]+", e)})
    needed = {"vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
              "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:prefix_cache_hits_total",
              "vllm:prefix_cache_queries_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total"}
    failures.expect(needed <= set(names), f"the rendered queries miss {sorted(needed - set(names))}")
    filtered = [e for e in exprs if "model_name=" in e]
    failures.expect(all(f'model_name="{SERVED_NAME}"' in e or 'model_name="$model_name"' in e for e in filtered),
                    "a query filters on another model_name")
    with K3Serve(k3, ["--served-model-name", SERVED_NAME]) as server:
        body = json.dumps({"model": SERVED_NAME, "messages": [{"role": "user", "content": "Hello"}],
                           "max_tokens": 4}).encode()
        request = urllib.request.Request(server.url + "/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as r:
            failures.expect(r.status == 200, f"chat request answered {r.status}")
        text = server.get("/metrics")
    exported = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, labels = line.partition("{")
            exported.setdefault(name.split(" ")[0], []).append(labels)
    for name in names:
        samples = exported.get(name)
        if failures.expect(samples is not None, f"{name} is queried but k3 serve does not export it"):
            failures.expect(any(f'model_name="{SERVED_NAME}"' in s for s in samples),
                            f"{name} has no sample with model_name=\"{SERVED_NAME}\"")
    print(f"{len(names)} queried series, all exported: {', '.join(names)}")
    failures.exit()


if __name__ == "__main__":
    main()
