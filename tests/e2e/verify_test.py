"""`k3 verify` against `k3 serve` (embedded tiny-k3), once per server configuration:

    verify_test.py K3_BINARY all                  every check passes (json; the junit report agrees)
    verify_test.py K3_BINARY no-tool-parser       --tool-call-parser none: tool-calls-auto fails (HTTP 400)
    verify_test.py K3_BINARY no-reasoning-parser  --reasoning-parser none: reasoning reports it absent
    verify_test.py K3_BINARY no-prefix-caching    --no-enable-prefix-caching: prefix-cache fails
    verify_test.py K3_BINARY vendor               --suite vendor --tokenizer <the served model>: every
                                                  vendor check passes (json; the junit report agrees)

In the broken configurations every other check must still pass, so each failure is shown to come from
the one setting, and the exit code of `k3 verify` must be the number of failed checks (1).

The vision check passes when the served model has a vision tower (its image prompt tokens must then
match K3's processor exactly) and is skipped, naming the missing tower, when it has none: either is
accepted, nothing else (the embedded tiny-k3 gains a tower in a later change).
"""
import json
import re
import sys
import xml.etree.ElementTree as ET

from k3serve import Failures, K3Serve, run

CHECKS = ["models", "health", "tool-calls-auto", "tool-calls-required", "reasoning", "long-context",
          "prefix-cache", "stream-equals-non-stream", "sse-format", "error-shape", "vision"]

# configuration -> (k3 serve flags, the check that must fail, text its detail or evidence must contain)
CONFIGS = {
    "all": ([], None, None),
    "no-tool-parser": (["--tool-call-parser", "none"], "tool-calls-auto", "HTTP 400"),
    "no-reasoning-parser": (["--reasoning-parser", "none"], "reasoning",
                            "neither reasoning_content nor reasoning"),
    "no-prefix-caching": (["--no-enable-prefix-caching"], "prefix-cache", "no prefix-cache hit"),
}

# A long-context prompt over two KDA snapshot intervals (k3 serve: every 256 prompt tokens), so a prefix
# hit exists to find; small enough for a fast cold prefill.
VERIFY_FLAGS = ["--long-context", "600", "--timeout", "300"]


# The vendor suite's checks (src/client/vendor_verify.h), in order.
VENDOR_CHECKS = (["models"] +
                 [f"tool-args-{name}" for name in
                  ["get_weather", "create_event", "set_thermostat", "search_files", "send_message"]] +
                 ["tool-choice-required", "tool-choice-named", "tool-choice-none", "dynamic-tools",
                  "response-format", "thinking-effort", "prompt-tokens-text", "prompt-tokens-image",
                  "special-token-text", "usage-chunk", "finish-reason"])


def vendor(k3):
    """--suite vendor against k3 serve: every check passes, counted with the served model's tokenizer files
    (the embedded tiny-k3's directory, read from the start-up log). prompt-tokens-image may skip naming a
    missing vision tower instead."""
    failures = Failures()
    with K3Serve(k3, []) as server:
        model_dir = re.search(r"model (\S+) \([^)]*\): ", server.log())
        if not failures.expect(model_dir is not None, "no model directory in the start-up log"):
            failures.exit()
        flags = ["--suite", "vendor", "--tokenizer", model_dir.group(1), "--timeout", "300"]
        code, out = run([k3, "verify", "--endpoint", server.url, "--format", "json", *flags])
        print(out)
        report = json.loads(out)
        junit_code, junit_out = run([k3, "verify", "--endpoint", server.url, "--format", "junit", *flags])
    failures.expect([c["id"] for c in report["checks"]] == VENDOR_CHECKS,
                    f"checks run: {[c['id'] for c in report['checks']]}")
    for check in report["checks"]:
        if check["id"] == "prompt-tokens-image" and check["outcome"] == "skip":
            failures.expect("no vision tower" in check["detail"], f"prompt-tokens-image: {check['detail']}")
            continue
        failures.expect(check["outcome"] == "pass", f"{check['id']}: {check['outcome']} ({check['detail']})")
    failures.expect(code == 0, f"k3 verify --suite vendor exited {code}")
    for check_id in ["prompt-tokens-text", "special-token-text", "dynamic-tools"]:
        detail = next((c["detail"] for c in report["checks"] if c["id"] == check_id), "")
        failures.expect("k3's tokenizer and renderer" in detail, f"{check_id} not counted locally: {detail}")
    root = ET.fromstring(junit_out)
    suite = root.find("testsuite")
    failures.expect(junit_code == 0 and suite is not None and suite.get("failures") == "0",
                    f"junit: exit {junit_code}, {suite.attrib if suite is not None else None}")
    failures.expect([t.get("name") for t in root.iter("testcase")] == VENDOR_CHECKS, "junit testcase names")
    failures.exit()


def main():
    k3, config = sys.argv[1], sys.argv[2]
    if config == "vendor":
        vendor(k3)
    serve_flags, broken, reason = CONFIGS[config]
    failures = Failures()
    with K3Serve(k3, serve_flags) as server:
        code, out = run([k3, "verify", "--endpoint", server.url, "--format", "json", *VERIFY_FLAGS])
        print(out)
        report = json.loads(out)
        junit = None
        if config == "all":
            junit_code, junit_out = run([k3, "verify", "--endpoint", server.url, "--format", "junit",
                                         *VERIFY_FLAGS])
            junit = (junit_code, ET.fromstring(junit_out))
    outcomes = {c["id"]: c for c in report["checks"]}
    failures.expect([c["id"] for c in report["checks"]] == CHECKS, f"checks run: {list(outcomes)}")
    for check_id in CHECKS:
        check = outcomes.get(check_id)
        if check is None:
            continue
        if check_id == "vision":
            skipped_for_tower = check["outcome"] == "skip" and "no vision tower" in check["detail"]
            failures.expect(check["outcome"] == "pass" or skipped_for_tower,
                            f"vision: {check['outcome']}, expected pass, or skip naming the missing vision "
                            f"tower ({check['detail']})")
            continue
        expected = "fail" if check_id == broken else "pass"
        failures.expect(check["outcome"] == expected,
                        f"{check_id}: {check['outcome']}, expected {expected} ({check['detail']})")
    if broken is not None and broken in outcomes:
        text = outcomes[broken]["detail"] + " " + outcomes[broken]["evidence"]
        failures.expect(reason in text, f"{broken}: the report does not say '{reason}': {text}")
    expected_failed = 0 if broken is None else 1
    failures.expect(report["failed"] == expected_failed, f"report says {report['failed']} failed")
    failures.expect(code == expected_failed, f"k3 verify exited {code}, expected {expected_failed}")
    if junit is not None:
        junit_code, root = junit
        suite = root.find("testsuite")
        failures.expect(junit_code == 0, f"k3 verify --format junit exited {junit_code}")
        skipped = str(report["skipped"])
        failures.expect(suite is not None and suite.get("tests") == str(len(CHECKS)) and
                        suite.get("failures") == "0" and suite.get("skipped") == skipped,
                        f"junit testsuite attributes: {suite.attrib if suite is not None else None}")
        failures.expect([t.get("name") for t in root.iter("testcase")] == CHECKS, "junit testcase names")
    failures.exit()


if __name__ == "__main__":
    main()
