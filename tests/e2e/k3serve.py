"""Starts the built `k3 serve` (embedded tiny-k3) for an end-to-end test and stops it again.

    with K3Serve(k3_binary, ["--no-enable-prefix-caching"]) as server:
        server.url            # "http://127.0.0.1:PORT" (port 0: the port is read from the start-up log)
        server.metrics()      # {"vllm:prompt_tokens_total": 123.0, ...} (samples of a name summed)

Leaving the block sends SIGTERM and requires a clean exit (code 0); the server's log is printed when the
block fails, so a ctest failure shows what the server said. Python 3 standard library only.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

START_TIMEOUT_S = 300  # the first start generates tiny-k3 into the cache directory


class K3Serve:
    def __init__(self, k3_binary, extra_args=(), threads=2):
        self.args = [k3_binary, "serve", "--host", "127.0.0.1", "--port", "0", "--threads", str(threads),
                     *extra_args]
        self.url = None
        self._log = tempfile.TemporaryFile(mode="w+")
        self._proc = None

    def log(self):
        # pread, not seek + read: the server (and its local ranks) write through the same open file
        # description, so moving its offset back to 0 made their next lines overwrite the log's start
        # (seen once: a TP 2 start whose "listening on" line was overwritten waited out START_TIMEOUT_S).
        fd = self._log.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def __enter__(self):
        print("starting:", " ".join(self.args), flush=True)
        self._proc = subprocess.Popen(self.args, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.url is None:
            match = re.search(r"listening on http://([^\s]+)", self.log())
            if match:
                self.url = "http://" + match.group(1)
                break
            self._check_alive_before(deadline, "listening")
            time.sleep(0.05)
        while True:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                pass
            self._check_alive_before(deadline, "/health 200")
            time.sleep(0.1)
        print("ready:", self.url, flush=True)
        return self

    def _check_alive_before(self, deadline, what):
        if self._proc.poll() is not None:
            raise RuntimeError(f"k3 serve exited with {self._proc.returncode} before {what}:\n{self.log()}")
        if time.monotonic() > deadline:
            self._proc.kill()  # no __exit__ follows a failed __enter__: do not leave the server running
            self._proc.wait()
            raise RuntimeError(f"k3 serve: no {what} within {START_TIMEOUT_S} s:\n{self.log()}")

    def __exit__(self, exc_type, exc, tb):
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        try:
            code = self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        if exc_type is not None or code != 0:
            sys.stdout.write("---- k3 serve log ----\n" + self.log() + "----\n")
        if exc_type is None and code != 0:
            raise RuntimeError(f"k3 serve exited with {code} after SIGTERM (expected 0)")
        return False

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return r.read().decode()

    def metrics(self):
        """The /metrics samples, summed over labels per metric name."""
        out = {}
        for line in self.get("/metrics").splitlines():
            if not line or line.startswith("#"):
                continue
            name_labels, value = line.rsplit(" ", 1)
            name = name_labels.split("{", 1)[0]
            out[name] = out.get(name, 0.0) + float(value)
        return out


def run(args, timeout=600):
    """Runs a command, echoing it and its output; returns (exit code, stdout)."""
    print("running:", " ".join(args), flush=True)
    started = time.monotonic()
    done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    print(f"exit {done.returncode} after {time.monotonic() - started:.1f} s", flush=True)
    if done.stderr:
        sys.stdout.write(done.stderr)
    return done.returncode, done.stdout


class Failures:
    """Collects failed expectations so one run reports all of them; exit() ends the test."""

    def __init__(self):
        self.messages = []

    def expect(self, condition, message):
        if not condition:
            self.messages.append(message)
            print("FAIL:", message, flush=True)
        return condition

    def exit(self):
        if self.messages:
            print(f"{len(self.messages)} expectation(s) failed", flush=True)
            sys.exit(1)
        print("all expectations met", flush=True)
        sys.exit(0)
