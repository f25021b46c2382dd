#!/usr/bin/env bash
# `k3 serve SCHEME://bucket/prefix` through the built binary against a real s3rver (tests/storage/package.json):
# a generated tiny-k3 checkpoint synced to s3rver answers a temperature-0 chat completion exactly like the
# same checkpoint served from its local directory; a prefix missing its shard and one holding a truncated
# shard fail at start-up (exit non-zero) with an error naming the object. `k3 run --model s3://...` gives
# the same logits (.npy bytes) as the directory.
#   serve_bucket_test.sh PATH/TO/k3 [SCHEME]  exit 77 (skip) when node or the npm package is missing
# SCHEME: s3 (default); gs or oss: the same s3rver through gs:// (GCS HMAC keys, K3_GCS_ENDPOINT) or oss://
# (OSS keys, OSS_ENDPOINT, path-style), with no AWS_* keys set; hf: hf://org/CASE from a loopback fake
# Hub (fake_hub.py, with a token and a redirect to a second port), filled by copying instead of syncing.
set -euo pipefail
k3=$1
scheme=${2:-s3}
here=$(cd "$(dirname "$0")" && pwd)
command -v curl >/dev/null || { echo "SKIP: curl is not on PATH"; exit 77; }
if [[ $scheme != hf ]]; then
  command -v node >/dev/null || { echo "SKIP: node is not on PATH"; exit 77; }
  [[ -f $here/node_modules/s3rver/package.json ]] || { echo "SKIP: run npm ci --prefix tests/storage"; exit 77; }
fi

# shellcheck source=tests/storage/s3rver_env.sh
source "$here/s3rver_env.sh"
# shellcheck source=tests/storage/fake_hub_env.sh
source "$here/fake_hub_env.sh"
tmp=$(mktemp -d)
serve_pid=
cleanup() {
  [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
  stop_s3rver
  stop_fake_hub
  rm -rf "$tmp"
}
trap cleanup EXIT
secret=S3RVER  # must never be printed
case $scheme in
  s3) start_s3rver "$tmp" weights ;;
  gs | oss)
    start_s3rver "$tmp" weights
    unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_ENDPOINT_URL
    export AWS_SHARED_CREDENTIALS_FILE=/nonexistent HOME=$tmp  # no AWS credentials to fall back on
    if [[ $scheme == gs ]]; then
      export K3_GCS_ENDPOINT="http://127.0.0.1:$s3rver_port" GCS_HMAC_ACCESS_KEY_ID=S3RVER GCS_HMAC_SECRET=S3RVER
    else
      export OSS_ENDPOINT="http://127.0.0.1:$s3rver_port" OSS_REGION=cn-hangzhou K3_OSS_PATH_STYLE=1 \
        OSS_ACCESS_KEY_ID=S3RVER OSS_ACCESS_KEY_SECRET=S3RVER
    fi
    ;;
  hf)
    secret=hf_serve_bucket_secret_token
    start_fake_hub "$tmp" "$secret"
    ;;
  *) echo "FAIL: unknown scheme $scheme"; exit 1 ;;
esac
# The URI of test case CASE, and how a checkpoint directory gets there.
uri() { if [[ $scheme == hf ]]; then echo "hf://org/$1"; else echo "$scheme://weights/$1"; fi; }
put() {
  if [[ $scheme == hf ]]; then
    mkdir -p "$fake_hub_root/org" && cp -r "$2" "$fake_hub_root/org/$1"
  else
    "$k3" weights sync "$2" "$(uri "$1")" --progress none >/dev/null
  fi
}

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
put tiny "$tmp/model" || fail "put local -> $(uri tiny)"
"$k3" weights ls "$(uri tiny)" >"$tmp/ls.out" || fail "k3 weights ls $(uri tiny)"
grep -q "config.json" "$tmp/ls.out" || { cat "$tmp/ls.out"; fail "ls: no config.json"; }
local_answer=$(answer "$tmp/model")
bucket_answer=$(answer "$(uri tiny)")
grep -q "loading weights from $(uri tiny)" "$tmp/serve.log" || { cat "$tmp/serve.log"; fail "no load log"; }
grep -q '"completion_tokens": [1-9]' <<<"$local_answer" || fail "no tokens generated: $local_answer"
[[ $local_answer == "$bucket_answer" ]] || fail "answers differ: local '$local_answer', bucket '$bucket_answer'"
# k3 run from the bucket: the same logits (every prompt position and step, .npy bytes) as from the directory.
"$k3" run --model "$tmp/model" --prompt-ids 1,2,3,4,5 --max-new 4 --threads 2 --dump-logits "$tmp/local.npy" \
  >"$tmp/run_local.out" || fail "k3 run --model DIR"
"$k3" run --model "$(uri tiny)" --prompt-ids 1,2,3,4,5 --max-new 4 --threads 2 \
  --dump-logits "$tmp/bucket.npy" >"$tmp/run_bucket.out" 2>"$tmp/run_bucket.err" ||
  { cat "$tmp/run_bucket.err"; fail "k3 run --model $(uri tiny)"; }
cmp "$tmp/local.npy" "$tmp/bucket.npy" || fail "k3 run: logits from the bucket differ from the directory's"
# (the bucket's load also logs its reads: compare the result lines)
diff <(grep -E '^(pos|step|greedy)' "$tmp/run_local.out") <(grep -E '^(pos|step|greedy)' "$tmp/run_bucket.out") ||
  fail "k3 run: top logits or greedy ids from the bucket differ"
grep -q '^greedy: [0-9]' "$tmp/run_bucket.out" || fail "k3 run from the bucket printed no greedy ids"
# Two rank processes (s3 only, to keep CI short): with expert parallelism each rank reads only its own
# experts' bytes (and every other tensor), in tensor parallelism all of it; the logits are exactly those of
# the same group over the directory.
if [[ $scheme == s3 ]]; then
  for mode in ep tp; do
    flags=(--tensor-parallel-size 2 --threads 1)
    [[ $mode == ep ]] && flags+=(--enable-expert-parallel)
    # A free rendezvous port for each group: the default 29500 may be taken by another group on this
    # machine (a second test tree run at the same time).
    "$k3" run --model "$tmp/model" --prompt-ids 1,2,3,4,5 --max-new 4 "${flags[@]}" --master-port "$(free_port)" \
      --dump-logits "$tmp/local_$mode.npy" >"$tmp/run_local_$mode.out" 2>&1 ||
      { cat "$tmp/run_local_$mode.out"; fail "k3 run --model DIR ${flags[*]}"; }
    "$k3" run --model "$(uri tiny)" --prompt-ids 1,2,3,4,5 --max-new 4 "${flags[@]}" --master-port "$(free_port)" \
      --dump-logits "$tmp/bucket_$mode.npy" >"$tmp/run_bucket_$mode.out" 2>&1 ||
      { cat "$tmp/run_bucket_$mode.out"; fail "k3 run --model $(uri tiny) ${flags[*]}"; }
    cmp "$tmp/local_$mode.npy" "$tmp/bucket_$mode.npy" ||
      fail "k3 run ${flags[*]}: logits from the bucket differ from the directory's"
  done
  for rank in 0 1; do
    grep -q "rank $rank of 2 (expert parallel) reads" "$tmp/run_bucket_ep.out" ||
      { cat "$tmp/run_bucket_ep.out"; fail "rank $rank did not say which bytes it reads"; }
  done
  grep -E "expert parallel\) reads" "$tmp/run_bucket_ep.out" | head -n 2
  # "reads X MiB of the checkpoint's Y MiB": each rank skips the other rank's experts.
  grep -E "expert parallel\) reads" "$tmp/run_bucket_ep.out" |
    sed -E "s/.* reads ([0-9.]+) MiB of the checkpoint's ([0-9.]+) MiB.*/\1 \2/" |
    awk '{ if ($1 >= $2) { print "FAIL: a rank read " $1 " of " $2 " MiB"; bad = 1 } } END { exit bad }' ||
    fail "an expert-parallel rank read the whole checkpoint"
  # After loading, a tensor-parallel rank hands back the pages its slices do not view: "weights in memory:
  # at most X MiB of the checkpoint's Y MiB" with X < Y on both ranks.
  held=$(grep -E "weights in memory: at most" "$tmp/run_bucket_tp.out" |
    sed -E "s/.* at most ([0-9.]+) MiB of the checkpoint's ([0-9.]+) MiB.*/\1 \2/")
  echo "tensor-parallel ranks hold (MiB of MiB): $(echo $held)"
  [[ $(wc -l <<<"$held") -eq 2 ]] || { cat "$tmp/run_bucket_tp.out"; fail "not two 'weights in memory' lines"; }
  awk '{ if ($1 >= $2) { print "FAIL: a rank holds " $1 " of " $2 " MiB"; bad = 1 } } END { exit bad }' <<<"$held" ||
    fail "a tensor-parallel rank kept the whole checkpoint in memory"
fi
# What /health said while loading (a tiny model may load before the first probe: shown, not required).
[[ -f $tmp/health_seen.json ]] && sort -u "$tmp/health_seen.json" | head -n 5

# Start-up errors: k3 serve exits non-zero and names the object.
shard=$(cd "$tmp/model" && ls ./*.safetensors | head -n 1)
shard=${shard#./}
cp -r "$tmp/model" "$tmp/noshard"
rm "$tmp/noshard/$shard"
put noshard "$tmp/noshard" || fail "put noshard"
cp -r "$tmp/model" "$tmp/trunc"
truncate -s -16 "$tmp/trunc/$shard"
put trunc "$tmp/trunc" || fail "put trunc"
for case in noshard trunc; do
  if timeout 60 "$k3" serve "$(uri "$case")" --host 127.0.0.1 --port "$(free_port)" >"$tmp/$case.log" 2>&1; then
    fail "k3 serve $(uri "$case") started"
  fi
  grep -q "$(uri "$case")/$shard" "$tmp/$case.log" || { cat "$tmp/$case.log"; fail "$case: object not named"; }
done
! grep -q "$secret" "$tmp/noshard.log" "$tmp/trunc.log" "$tmp/serve.log" "$tmp/run_bucket.err" ||
  fail "a credential was printed"
[[ $scheme != hf || ! -s $fake_hub_leaks ]] || fail "the Hub token was sent to the redirect's host"
echo "serve_bucket_test ($scheme): ok (both answered $local_answer)"
