"""One model across processes (issue 14's acceptance), driving the built `k3` binary.

    dist_test.py K3_BINARY logits      k3 run with 2 and 4 ranks (TP and EP) vs one process: every prompt
                                       position's logits within 1e-5 relative L2, greedy continuations equal,
                                       on the golden prompts of tiny-k3 and tiny-kimi-linear
    dist_test.py K3_BINARY chat        k3 serve --tensor-parallel-size 2 answers a temperature-0 chat (plain
                                       and streamed) byte for byte as one process does; exits 0 on SIGTERM
    dist_test.py K3_BINARY kill        kill -9 of a worker during 8 concurrent streams: every stream ends
                                       with an error event or a 503, /health turns 503, every process exits
                                       non-zero within 60 s
    dist_test.py K3_BINARY startup     a rank that never joins, TP not dividing the heads, nnodes not
                                       dividing TP, the master port in use, different checkpoints: each a
                                       non-zero exit with a one-line message naming the cause

Only loopback; every wait is bounded. Python 3 standard library only.
"""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from k3serve import Failures, K3Serve, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "data", "golden")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_npy(path):
    """(rows, cols, floats) of a float32 2-D .npy file."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path
    header_len = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + header_len].decode()
    shape = header.split("'shape': (")[1].split(")")[0]
    rows, cols = [int(x) for x in shape.split(",") if x.strip()]
    values = struct.unpack(f"<{rows * cols}f", data[10 + header_len:])
    return rows, cols, values


def max_row_rel_l2(a, b, rows, cols):
    worst = 0.0
    for r in range(rows):
        num = den = 0.0
        for c in range(r * cols, (r + 1) * cols):
            num += (a[c] - b[c]) ** 2
            den += b[c] ** 2
        worst = max(worst, (num / max(den, 1e-30)) ** 0.5)
    return worst


def greedy_line(stdout):
    return [line for line in stdout.splitlines() if line.startswith("greedy:")]


def test_logits(k3, failures):
    with tempfile.TemporaryDirectory() as tmp:
        for preset in ("tiny-k3", "tiny-kimi-linear"):
            golden = json.load(open(os.path.join(GOLDEN, preset + ".json")))
            model = os.path.join(tmp, preset)
            code, _ = run([k3, "gen-model", "--preset", preset, "--seed", str(golden["seed"]), "--out", model])
            failures.expect(code == 0, f"gen-model {preset}")
            for p, prompt in enumerate(golden["prompts"][:2]):
                ids = ",".join(str(i) for i in prompt["ids"])
                base = [k3, "run", "--model", model, "--prompt-ids", ids, "--max-new", "8", "--threads", "1"]
                want_npy = os.path.join(tmp, f"{preset}-{p}-one.npy")
                code, want_out = run(base + ["--dump-logits", want_npy])
                failures.expect(code == 0, f"{preset} prompt {p}: one process")
                rows, cols, want = read_npy(want_npy)
                for world, ep in ((2, False), (4, False), (2, True), (4, True)):
                    name = f"{preset} prompt {p} {'EP' if ep else 'TP'} {world}"
                    got_npy = os.path.join(tmp, f"{preset}-{p}-{world}-{ep}.npy")
                    args = base + ["--dump-logits", got_npy, "--tensor-parallel-size", str(world),
                                   "--master-port", str(free_port())]
                    if ep:
                        args.append("--enable-expert-parallel")
                    code, got_out = run(args, timeout=300)
                    if not failures.expect(code == 0, f"{name}: exit {code}"):
                        continue
                    g_rows, g_cols, got = read_npy(got_npy)
                    failures.expect((g_rows, g_cols) == (rows, cols), f"{name}: shape {g_rows}x{g_cols}")
                    err = max_row_rel_l2(got, want, rows, cols)
                    print(f"{name}: max relative L2 over {rows} rows = {err:.2e}", flush=True)
                    failures.expect(err < 1e-5, f"{name}: logits differ by {err:.2e} (relative L2)")
                    failures.expect(greedy_line(got_out) == greedy_line(want_out),
                                    f"{name}: greedy {greedy_line(got_out)} != {greedy_line(want_out)}")


def post(url, body, timeout=120):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read().decode()


CHAT = {"model": "tiny-k3", "temperature": 0, "max_tokens": 48,
        "messages": [{"role": "user", "content": "Name three prime numbers and say why."}]}


def chat_answers(server):
    _, plain = post(server.url + "/v1/chat/completions", CHAT)
    _, streamed = post(server.url + "/v1/chat/completions", {**CHAT, "stream": True})
    message = json.loads(plain)["choices"][0]["message"]
    pieces = []
    for line in streamed.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            for choice in json.loads(line[6:]).get("choices", []):
                delta = choice.get("delta", {})
                pieces.append((delta.get("reasoning_content") or "") + "|" + (delta.get("content") or ""))
    _, embedded = post(server.url + "/v1/embeddings", {"model": "tiny-k3", "input": CHAT["messages"][0]["content"]})
    return json.dumps(message, sort_keys=True), "".join(pieces), json.loads(embedded)["data"][0]["embedding"]


def test_chat(k3, failures):
    with K3Serve(k3, [], threads=2) as one:
        want = chat_answers(one)
    with K3Serve(k3, ["--tensor-parallel-size", "2", "--master-port", str(free_port())], threads=1) as two:
        got = chat_answers(two)
    print("one process:", want[0][:200], flush=True)
    failures.expect(got[0] == want[0], f"TP 2 message differs:\n{got[0]}\n!=\n{want[0]}")
    failures.expect(got[1] == want[1], "TP 2 stream differs")
    # The pooled final hidden rows (rank 0 holds them after the all-reduces): the same vector within 1e-5.
    diff = max(abs(a - b) for a, b in zip(got[2], want[2])) if len(got[2]) == len(want[2]) else float("inf")
    print(f"embedding: {len(want[2])} dimensions, TP 2 differs by {diff}", flush=True)
    failures.expect(len(want[2]) > 0 and diff <= 1e-5, f"TP 2 embedding differs by {diff}")


def children(pid):
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(x) for x in f.read().split()]
    return out


def test_kill(k3, failures):
    port = free_port()
    server = K3Serve(k3, ["--tensor-parallel-size", "2", "--master-port", str(port)], threads=1)
    server.__enter__()
    leader = server._proc
    workers = children(leader.pid)
    failures.expect(len(workers) == 1, f"one local worker process, found {workers}")
    outcomes = [None] * 8
    started = threading.Barrier(9, timeout=120)

    def stream(i):
        body = {**CHAT, "stream": True, "max_tokens": 4000, "ignore_eos": True}
        req = urllib.request.Request(server.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=90) as r:
                first = True
                for raw in r:
                    line = raw.decode().strip()
                    if first and line.startswith("data: "):
                        first = False
                        try:
                            started.wait()
                        except threading.BrokenBarrierError:
                            pass  # another stream already ended and aborted the start barrier: read on
                    if line.startswith("data: ") and '"error"' in line:
                        outcomes[i] = "error event"
                        return
                    if line == "data: [DONE]":
                        outcomes[i] = "finished normally"
                        return
                outcomes[i] = "stream closed without an error event"
        except urllib.error.HTTPError as e:
            outcomes[i] = f"HTTP {e.code}"
        except Exception as e:  # noqa: BLE001 - any other ending is reported as is
            outcomes[i] = f"{type(e).__name__}: {e}"
        finally:
            try:
                started.abort()
            except Exception:  # noqa: BLE001
                pass

    health = []
    stop_polling = threading.Event()

    def poll_health():
        while not stop_polling.is_set():
            try:
                with urllib.request.urlopen(server.url + "/health", timeout=5) as r:
                    health.append(r.status)
            except urllib.error.HTTPError as e:
                health.append(e.code)
            except Exception:  # noqa: BLE001 - refused once the server is gone
                health.append(0)
            time.sleep(0.02)

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    try:
        started.wait()
    except threading.BrokenBarrierError:
        pass
    poller = threading.Thread(target=poll_health)
    poller.start()
    killed_at = time.monotonic()
    for w in workers:
        os.kill(w, signal.SIGKILL)
    for t in threads:
        t.join(timeout=90)
    failures.expect(not any(t.is_alive() for t in threads), "a client stream hung")
    try:
        code = leader.wait(timeout=60)
    except subprocess.TimeoutExpired:
        code = None
        leader.kill()
        leader.wait()
    gone_after = time.monotonic() - killed_at
    stop_polling.set()
    poller.join()
    print("streams:", outcomes, flush=True)
    print(f"leader exit {code} after {gone_after:.1f} s; /health statuses seen: {sorted(set(health))}", flush=True)
    for i, outcome in enumerate(outcomes):
        failures.expect(outcome in ("error event", "HTTP 503"), f"stream {i}: {outcome}")
    failures.expect(503 in health, "/health never answered 503 after the worker was killed")
    failures.expect(code is not None and code != 0, f"leader exit code {code} (expected non-zero)")
    failures.expect(gone_after < 60, f"processes gone after {gone_after:.1f} s")
    if failures.messages:
        sys.stdout.write(server.log())


def expect_start_failure(failures, name, args, needle, timeout=120, env=None):
    started = time.monotonic()
    done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    took = time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if needle in line]
    print(f"{name}: exit {done.returncode} after {took:.1f} s: {lines[:1]}", flush=True)
    failures.expect(done.returncode != 0, f"{name}: exit code {done.returncode}")
    if not failures.expect(lines, f"{name}: no line mentions '{needle}':\n{done.stdout[-3000:]}"):
        return took
    return took


def test_startup(k3, failures):
    serve = [k3, "serve", "--host", "127.0.0.1", "--port", "0", "--threads", "1"]
    took = expect_start_failure(
        failures, "rank that never joins",
        serve + ["--tensor-parallel-size", "2", "--nnodes", "2", "--node-rank", "0", "--master-addr",
                 "127.0.0.1", "--master-port", str(free_port()), "--dist-timeout", "4"], "rank 1")
    failures.expect(took < 60, f"a missing rank took {took:.1f} s to be reported (timeout 4 s)")
    expect_start_failure(failures, "TP not dividing the heads",
                         serve + ["--tensor-parallel-size", "3", "--master-port", str(free_port())],
                         "--tensor-parallel-size 3 does not divide")
    expect_start_failure(failures, "nnodes not dividing TP",
                         serve + ["--tensor-parallel-size", "2", "--nnodes", "4", "--master-addr", "127.0.0.1"],
                         "is not divisible by --nnodes 4")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        expect_start_failure(failures, "master port in use",
                             serve + ["--tensor-parallel-size", "2", "--master-port", str(port),
                                      "--dist-timeout", "10"], f"--master-port {port} is in use")
    with tempfile.TemporaryDirectory() as tmp:
        other = os.path.join(tmp, "linear")
        run([k3, "gen-model", "--preset", "tiny-kimi-linear", "--out", other])
        port = free_port()
        common = ["--tensor-parallel-size", "2", "--nnodes", "2", "--master-addr", "127.0.0.1", "--master-port",
                  str(port), "--dist-timeout", "30"]
        worker = subprocess.Popen([k3, "serve", other, "--threads", "1", "--headless", "--node-rank", "1"] + common,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        expect_start_failure(failures, "different checkpoints", serve + ["--node-rank", "0"] + common, "fingerprint")
        try:
            out, _ = worker.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            out, _ = worker.communicate()
        failures.expect(worker.returncode != 0, f"the mismatched worker exited {worker.returncode}")
        print("worker:", [line for line in out.splitlines() if "rror" in line][:2], flush=True)


def main():
    k3, what = sys.argv[1], sys.argv[2]
    failures = Failures()
    {"logits": test_logits, "chat": test_chat, "kill": test_kill, "startup": test_startup}[what](k3, failures)
    failures.exit()
    print("ok", flush=True)


if __name__ == "__main__":
    main()
