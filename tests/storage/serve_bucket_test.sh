#!/usr/bin/env bash
# `k3 serve s3://bucket/prefix` through the built binary against a real s3rver (tests/storage/package.json):
# a generated tiny-k3 checkpoint synced to s3rver answers a temperature-0 chat completion exactly like the
# same checkpoint served from its local directory; a prefix missing its shard and one holding a truncated
# shard fail at start-up (exit non-zero) with an error naming the object. `k3 run --model s3://...` gives
# the same logits (.npy bytes) as the directory.
#   serve_bucket_test.sh PATH/TO/k3          exit 77 (skip) when node or the npm package is missing
set -euo pipefail
k3=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "SKIP: node is not on PATH"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not on PATH"; exit 77; }
[[ -f $here/node_modules/s3rver/package.json ]] || { echo "SKIP: run npm ci --prefix tests/storage"; exit 77; }

# shellcheck source=tests/storage/s3rver_env.sh
source "$here/s3rver_env.sh"
tmp=$(mktemp -d)
serve_pid=
cleanup() {
  [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
  stop_s3rver
  rm -rf "$tmp"
}
trap cleanup EXIT
start_s3rver "$tmp" weights

# Also from answer()'s subshell: stops its server, and prints to stderr (stdout is the answer there).
fail() {
  [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null || true
  echo "FAIL: $*" >&2
  exit 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Serves MODEL, asks one chat completion at temperature 0, prints the answer's content, stops the server.
answer() {
  local model=$1 http
  http=$(free_port)
  "$k3" serve "$model" --host 127.0.0.1 --port "$http" --served-model-name m --threads 2 \
    --load-concurrency 3 --load-max-inflight-mib 1 >"$tmp/serve.log" 2>&1 &
  serve_pid=$!
  # Every 503 while loading carries the load's progress ("loading": phase, and bytes once they stream).
  local code
  for _ in $(seq 600); do
    code=$(curl -s -o "$tmp/health.json" -w '%{http_code}' "http://127.0.0.1:$http/health")
    [[ $code == 200 ]] && break
    if [[ $code == 503 ]]; then
      python3 -c 'import json, sys; b = json.load(open(sys.argv[1])); assert b["error"]["message"] and b["loading"]["phase"], b' \
        "$tmp/health.json" 2>&1 >&2 || fail "/health 503 without the load's progress: $(cat "$tmp/health.json")"
      cat "$tmp/health.json" >>"$tmp/health_seen.json"
      echo >>"$tmp/health_seen.json"
    fi
    kill -0 "$serve_pid" 2>/dev/null || { cat "$tmp/serve.log" >&2; fail "k3 serve $model exited"; }
    sleep 0.02
  done
  curl -sf "http://127.0.0.1:$http/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"model": "m", "messages": [{"role": "user", "content": "hello there"}], "temperature": 0, "max_tokens": 12}' \
    >"$tmp/answer.json" || { cat "$tmp/serve.log" >&2; fail "chat completion against $model"; }
  kill "$serve_pid"
  wait "$serve_pid" || true
  serve_pid=
  # The whole message (random weights may put the text in reasoning_content) and the token count.
  python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); print(json.dumps([a["choices"][0]["message"], a["usage"]], sort_keys=True))' \
    "$tmp/answer.json"
}

"$k3" gen-model --preset tiny-k3 --out "$tmp/model" >/dev/null
"$k3" weights sync "$tmp/model" s3://weights/tiny --progress none >/dev/null || fail "sync local -> s3"
local_answer=$(answer "$tmp/model")
bucket_answer=$(answer s3://weights/tiny)
grep -q "loading weights from s3://weights/tiny" "$tmp/serve.log" || { cat "$tmp/serve.log"; fail "no load log"; }
grep -q '"completion_tokens": [1-9]' <<<"$local_answer" || fail "no tokens generated: $local_answer"
[[ $local_answer == "$bucket_answer" ]] || fail "answers differ: local '$local_answer', bucket '$bucket_answer'"
# k3 run from the bucket: the same logits (every prompt position and step, .npy bytes) as from the directory.
"$k3" run --model "$tmp/model" --prompt-ids 1,2,3,4,5 --max-new 4 --threads 2 --dump-logits "$tmp/local.npy" \
  >"$tmp/run_local.out" || fail "k3 run --model DIR"
"$k3" run --model s3://weights/tiny --prompt-ids 1,2,3,4,5 --max-new 4 --threads 2 \
  --dump-logits "$tmp/bucket.npy" >"$tmp/run_bucket.out" 2>"$tmp/run_bucket.err" ||
  { cat "$tmp/run_bucket.err"; fail "k3 run --model s3://weights/tiny"; }
cmp "$tmp/local.npy" "$tmp/bucket.npy" || fail "k3 run: logits from the bucket differ from the directory's"
# (the bucket's load also logs its reads: compare the result lines)
diff <(grep -E '^(pos|step|greedy)' "$tmp/run_local.out") <(grep -E '^(pos|step|greedy)' "$tmp/run_bucket.out") ||
  fail "k3 run: top logits or greedy ids from the bucket differ"
grep -q '^greedy: [0-9]' "$tmp/run_bucket.out" || fail "k3 run from the bucket printed no greedy ids"
# What /health said while loading (a tiny model may load before the first probe: shown, not required).
[[ -f $tmp/health_seen.json ]] && sort -u "$tmp/health_seen.json" | head -n 5

# Start-up errors: k3 serve exits non-zero and names the object.
shard=$(cd "$tmp/model" && ls ./*.safetensors | head -n 1)
shard=${shard#./}
cp -r "$tmp/model" "$tmp/noshard"
rm "$tmp/noshard/$shard"
"$k3" weights sync "$tmp/noshard" s3://weights/noshard --progress none >/dev/null || fail "sync noshard"
cp -r "$tmp/model" "$tmp/trunc"
truncate -s -16 "$tmp/trunc/$shard"
"$k3" weights sync "$tmp/trunc" s3://weights/trunc --progress none >/dev/null || fail "sync trunc"
for case in noshard trunc; do
  if timeout 60 "$k3" serve "s3://weights/$case" --host 127.0.0.1 --port "$(free_port)" >"$tmp/$case.log" 2>&1; then
    fail "k3 serve s3://weights/$case started"
  fi
  grep -q "s3://weights/$case/$shard" "$tmp/$case.log" || { cat "$tmp/$case.log"; fail "$case: object not named"; }
done
! grep -q S3RVER "$tmp/noshard.log" "$tmp/trunc.log" "$tmp/serve.log" || fail "a credential was printed"
echo "serve_bucket_test: ok (both answered $local_answer)"
