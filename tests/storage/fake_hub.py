#!/usr/bin/env python3
"""A loopback stand-in for the Hugging Face Hub, for the hf:// tests (hf_cli_test.sh, serve_bucket_test.sh hf).

Serves each directory ROOT/ORG/NAME as the model repository ORG/NAME at one revision:
  GET  /api/models/ORG/NAME/tree/REV[/DIR]?recursive=true[&cursor=N]
       a JSON array of {"type", "path", "size", "oid"[, "lfs"]}, PAGE entries a page, the next page's URL
       in a Link header (rel="next")
  GET|HEAD /ORG/NAME/resolve/REV/PATH   small files directly (Range honoured); *.safetensors files answer
       302 to a second port (the "CDN"), as the Hub does for LFS files
  GET|HEAD /blobs/PATH on the CDN port   the file (Range honoured); a request that carries an
       Authorization header is refused (400) and counted: the token must not leave the Hub's host; for a
       repository whose NAME starts with "corrupt" it serves the file with its last byte flipped (the
       listing keeps the true sha256), a download that does not match what the Hub publishes
With --token, Hub requests without "Authorization: Bearer TOKEN" get 401 {"error": ...}.
Prints {"hub": PORT, "cdn": PORT} on stdout, then serves until its stdin closes.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_file(handler, path, head, flip_last=False):
    size = os.path.getsize(path)
    first, last = 0, size - 1
    status = 200
    rng = handler.headers.get("Range")
    if rng and rng.startswith("bytes="):
        a, _, b = rng[6:].partition("-")
        first = int(a)
        last = min(int(b), size - 1) if b else size - 1
        if first >= size:
            handler.send_response(416)
            handler.send_header("Content-Range", f"bytes */{size}")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        status = 206
    handler.send_response(status)
    handler.send_header("Content-Length", str(last - first + 1))
    handler.send_header("ETag", '"' + hashlib.sha256(open(path, "rb").read()).hexdigest() + '"')
    if status == 206:
        handler.send_header("Content-Range", f"bytes {first}-{last}/{size}")
    handler.end_headers()
    if not head:
        with open(path, "rb") as f:
            f.seek(first)
            body = bytearray(f.read(last - first + 1))
        if flip_last and last == size - 1 and body:
            body[-1] ^= 0xFF
        handler.wfile.write(bytes(body))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--revision", default="main")
    ap.add_argument("--token", default="")
    ap.add_argument("--page", type=int, default=2)
    ap.add_argument("--leaks", required=True, help="file that counts Authorization headers seen by the CDN")
    args = ap.parse_args()
    root = os.path.realpath(args.dir)
    open(args.leaks, "w").close()
    ports = {}

    def local_path(repo, rel):
        base = os.path.join(root, repo)
        path = os.path.realpath(os.path.join(base, urllib.parse.unquote(rel)))
        return path if path.startswith(base + os.sep) and os.path.isfile(path) else None

    def split_repo(path):
        """("ORG/NAME", rest) of "/ORG/NAME/rest", when ROOT/ORG/NAME is a directory."""
        parts = path.lstrip("/").split("/", 2)
        if len(parts) < 3 or not os.path.isdir(os.path.join(root, parts[0], parts[1])):
            return None, None
        return parts[0] + "/" + parts[1], "/" + parts[2]

    def send_json(handler, status, value, extra=()):
        body = json.dumps(value).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for name, val in extra:
            handler.send_header(name, val)
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)

    def entries(repo, sub):
        out = []
        repo_root = os.path.join(root, repo)
        base = os.path.join(repo_root, sub)
        for dirpath, dirnames, filenames in os.walk(base):
            for name in dirnames:
                out.append({"type": "directory", "oid": "0" * 40, "size": 0,
                            "path": os.path.relpath(os.path.join(dirpath, name), repo_root)})
            for name in filenames:
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, repo_root)
                size = os.path.getsize(full)
                entry = {"type": "file", "oid": hashlib.sha1(rel.encode()).hexdigest(), "size": size, "path": rel}
                if name.endswith(".safetensors"):
                    entry["size"] = 134  # the pointer file's size; the real one is lfs.size
                    entry["lfs"] = {"oid": hashlib.sha256(open(full, "rb").read()).hexdigest(), "size": size,
                                    "pointerSize": 134}
                out.append(entry)
        return sorted(out, key=lambda e: e["path"])

    class Hub(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def handle_any(self, head):
            if args.token and self.headers.get("Authorization") != "Bearer " + args.token:
                return send_json(self, 401, {"error": "Invalid credentials in Authorization header"})
            url = urllib.parse.urlsplit(self.path)
            rev = urllib.parse.quote(args.revision, safe="")
            api = url.path.startswith("/api/models/")
            repo, rest = split_repo(url.path[len("/api/models"):] if api else url.path)
            if repo is None:
                return send_json(self, 404, {"error": "Repository not found"})
            tree = f"/tree/{rev}"
            resolve = f"/resolve/{rev}/"
            if api and (rest == tree or rest.startswith(tree + "/")):
                sub = urllib.parse.unquote(rest[len(tree) + 1:])
                if sub and not os.path.isdir(os.path.join(root, repo, sub)):
                    return send_json(self, 404, {"error": f"Entry not found: {sub}"})
                query = urllib.parse.parse_qs(url.query)
                cursor = int(query.get("cursor", ["0"])[0])
                all_entries = entries(repo, sub)
                page = all_entries[cursor:cursor + args.page]
                extra = []
                if cursor + args.page < len(all_entries):
                    nxt = f"http://127.0.0.1:{ports['hub']}{url.path}?recursive=true&cursor={cursor + args.page}"
                    extra.append(("Link", f'<{nxt}>; rel="next"'))
                return send_json(self, 200, page, extra)
            if not api and rest.startswith(resolve):
                rel = rest[len(resolve):]
                path = local_path(repo, rel)
                if path is None:
                    return send_json(self, 404, {"error": "Entry not found"})
                if path.endswith(".safetensors"):
                    self.send_response(302)
                    self.send_header("Location", f"http://127.0.0.1:{ports['cdn']}/blobs/{repo}/{rel}?X-Amz-Signature=abc")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                return serve_file(self, path, head)
            return send_json(self, 404, {"error": "Repository not found"})

        def do_GET(self):
            self.handle_any(False)

        def do_HEAD(self):
            self.handle_any(True)

    class Cdn(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def handle_any(self, head):
            if self.headers.get("Authorization") is not None:
                with open(args.leaks, "a") as f:
                    f.write("leak\n")
                return send_json(self, 400, {"error": "Authorization sent to the CDN"})
            url = urllib.parse.urlsplit(self.path)
            repo, rest = split_repo(url.path[len("/blobs"):]) if url.path.startswith("/blobs/") else (None, None)
            path = local_path(repo, rest[1:]) if repo else None
            if path is None:
                return send_json(self, 404, {"error": "no such blob"})
            return serve_file(self, path, head, flip_last=repo.split("/")[1].startswith("corrupt"))

        def do_GET(self):
            self.handle_any(False)

        def do_HEAD(self):
            self.handle_any(True)

    hub = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    cdn = ThreadingHTTPServer(("127.0.0.1", 0), Cdn)
    hub.daemon_threads = cdn.daemon_threads = True
    ports["hub"] = hub.server_address[1]
    ports["cdn"] = cdn.server_address[1]
    for server in (hub, cdn):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"hub": ports["hub"], "cdn": ports["cdn"]}), flush=True)
    sys.stdin.read()  # until the test closes our stdin (or exits)


if __name__ == "__main__":
    main()
