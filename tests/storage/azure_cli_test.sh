#!/usr/bin/env bash
# az:// through the built `k3` binary against a real azurite and s3rver (tests/storage/package.json):
#   - k3 weights sync local -> s3 -> az -> local is byte-identical; ls and verify --checksums on az://; a
#     second s3 -> az sync transfers nothing;
#   - a sync into az:// killed (SIGKILL) midway leaves an unfinished copy that verify refuses, and the
#     next sync finishes it byte-identical;
#   - a wrong account key: one line naming the account, the container and the credential source, no key;
#   - k3 run --model az://... writes the same logits (.npy bytes) as from the directory, and k3 serve
#     az://... answers a temperature-0 chat completion exactly like the directory.
#   azure_cli_test.sh PATH/TO/k3          exit 77 (skip) when node, curl or the npm packages are missing
set -euo pipefail
k3=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "SKIP: node is not on PATH"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not on PATH"; exit 77; }
for package in s3rver azurite; do
  [[ -f $here/node_modules/$package/package.json ]] || { echo "SKIP: run npm ci --prefix tests/storage"; exit 77; }
done

# shellcheck source=tests/storage/s3rver_env.sh
source "$here/s3rver_env.sh"
# shellcheck source=tests/storage/azurite_env.sh
source "$here/azurite_env.sh"
tmp=$(mktemp -d)
serve_pid=
sync_pid=
cleanup() {
  [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
  [[ -n $sync_pid ]] && kill -9 "$sync_pid" 2>/dev/null || true
  stop_s3rver
  stop_azurite
  rm -rf "$tmp"
}
trap cleanup EXIT
start_s3rver "$tmp" weights
start_azurite "$tmp" weights

fail() {
  [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null || true
  echo "FAIL: $*" >&2
  exit 1
}
az=az://$azurite_account/weights

# --- sync local -> s3 -> az -> local (1 MiB blocks: the shards go up as Put Block + Put Block List)
"$k3" gen-model --preset tiny-k3 --out "$tmp/model" >/dev/null
"$k3" weights sync "$tmp/model" s3://weights/tiny --progress none >/dev/null || fail "sync local -> s3"
"$k3" weights sync s3://weights/tiny "$az/tiny" --progress none --az-block-size-mib 1 >"$tmp/across.out" 2>&1 ||
  { cat "$tmp/across.out"; fail "sync s3 -> az"; }
"$k3" weights ls "$az/tiny" >"$tmp/ls.out" || fail "ls az"
grep -q "k3-manifest.json" "$tmp/ls.out" || { cat "$tmp/ls.out"; fail "ls does not show the manifest"; }
"$k3" weights verify "$az/tiny" --checksums >"$tmp/verify.out" || { cat "$tmp/verify.out"; fail "verify az"; }
grep -q "^ok: $az/tiny" "$tmp/verify.out" || { cat "$tmp/verify.out"; fail "verify did not say ok"; }
"$k3" weights sync "$az/tiny" "$tmp/back" --progress none >/dev/null || fail "sync az -> local"
diff -r --exclude=k3-manifest.json "$tmp/model" "$tmp/back" || fail "local -> s3 -> az -> local differs"
"$k3" weights sync s3://weights/tiny "$az/tiny" --progress none --az-block-size-mib 1 >"$tmp/again.out" ||
  fail "second sync"
grep -q "0 copied" "$tmp/again.out" && grep -q "0 B transferred (0 bytes)" "$tmp/again.out" ||
  { cat "$tmp/again.out"; fail "the second sync transferred bytes"; }

# --- a sync killed midway, then run again. The kill lands after a delay; a sync that finished before it
# is tried again with a shorter delay (bounded), so the check below always sees an unfinished copy.
killed=
for delay in 0.8 0.4 0.2 0.1 0.05; do
  prefix=killed-${delay/./}
  "$k3" weights sync "$tmp/model" "$az/$prefix" --progress none --az-block-size-mib 1 >/dev/null 2>&1 &
  sync_pid=$!
  sleep "$delay"
  kill -9 "$sync_pid" 2>/dev/null || true
  wait "$sync_pid" 2>/dev/null || true
  sync_pid=
  if ! "$k3" weights verify "$az/$prefix" >"$tmp/unfinished.out" 2>&1; then
    killed=$prefix
    break
  fi
done
[[ -n $killed ]] || fail "every sync finished before it was killed (even after 0.05 s)"
"$k3" weights sync "$tmp/model" "$az/$killed" --progress none --az-block-size-mib 1 >"$tmp/resume.out" 2>&1 ||
  { cat "$tmp/resume.out"; fail "the sync after the kill"; }
"$k3" weights verify "$az/$killed" --checksums >/dev/null || fail "verify after the resumed sync"
"$k3" weights sync "$az/$killed" "$tmp/killed-back" --progress none >/dev/null || fail "sync killed copy -> local"
diff -r --exclude=k3-manifest.json "$tmp/model" "$tmp/killed-back" || fail "the resumed copy differs"
echo "after the kill ($killed): $(grep synced "$tmp/resume.out")"

# --- a wrong key: one line, account, container and credential source named, the key never printed
wrong_key=$(printf 'not-the-key-Zq9xW-0123456789abcdef0123456789' | base64 -w0)
if AZURE_STORAGE_CONNECTION_STRING="AccountName=$azurite_account;AccountKey=$wrong_key;BlobEndpoint=$azurite_endpoint" \
  "$k3" weights ls "$az/tiny" >"$tmp/creds.out" 2>"$tmp/creds.err"; then
  fail "a wrong key was accepted"
fi
[[ $(wc -l <"$tmp/creds.err") == 1 ]] || { cat "$tmp/creds.err"; fail "the error is not one line"; }
grep -q "$az/tiny" "$tmp/creds.err" && grep -q "env AZURE_STORAGE_CONNECTION_STRING" "$tmp/creds.err" ||
  { cat "$tmp/creds.err"; fail "the error does not name the account, the container and the credential source"; }
! grep -qF "$wrong_key" "$tmp/creds.err" "$tmp/creds.out" || fail "the key was printed"

# --- k3 run and k3 serve from az://
"$k3" run --model "$tmp/model" --prompt-ids 1,2,3,4,5 --max-new 4 --threads 2 --dump-logits "$tmp/local.npy" \
  >/dev/null || fail "k3 run --model DIR"
"$k3" run --model "$az/tiny" --prompt-ids 1,2,3,4,5 --max-new 4 --threads 2 --dump-logits "$tmp/az.npy" \
  >"$tmp/run_az.out" 2>"$tmp/run_az.err" || { cat "$tmp/run_az.err"; fail "k3 run --model $az/tiny"; }
cmp "$tmp/local.npy" "$tmp/az.npy" || fail "k3 run: logits from az:// differ from the directory's"
grep -q '^greedy: [0-9]' "$tmp/run_az.out" || fail "k3 run from az:// printed no greedy ids"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Serves MODEL, asks one chat completion at temperature 0, prints the message and usage, stops the server.
answer() {
  local model=$1 http code
  http=$(free_port)
  "$k3" serve "$model" --host 127.0.0.1 --port "$http" --served-model-name m --threads 2 >"$tmp/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 600); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$http/health" || true)
    [[ $code == 200 ]] && break
    kill -0 "$serve_pid" 2>/dev/null || { cat "$tmp/serve.log" >&2; fail "k3 serve $model exited"; }
    sleep 0.05
  done
  curl -sf "http://127.0.0.1:$http/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"model": "m", "messages": [{"role": "user", "content": "hello there"}], "temperature": 0, "max_tokens": 12}' \
    >"$tmp/answer.json" || { cat "$tmp/serve.log" >&2; fail "chat completion against $model"; }
  kill "$serve_pid"
  wait "$serve_pid" || true
  serve_pid=
  python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); print(json.dumps([a["choices"][0]["message"], a["usage"]], sort_keys=True))' \
    "$tmp/answer.json"
}
local_answer=$(answer "$tmp/model")
az_answer=$(answer "$az/tiny")
grep -q "loading weights from $az/tiny" "$tmp/serve.log" || { cat "$tmp/serve.log"; fail "no load log"; }
grep -q '"completion_tokens": [1-9]' <<<"$local_answer" || fail "no tokens generated: $local_answer"
[[ $local_answer == "$az_answer" ]] || fail "answers differ: local '$local_answer', az '$az_answer'"
! grep -qF "$azurite_key" "$tmp/serve.log" "$tmp/run_az.err" || fail "the account key was printed"
echo "azure_cli_test: ok (both answered $local_answer)"
