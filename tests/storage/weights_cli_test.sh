#!/usr/bin/env bash
# `k3 weights` end to end through the built binary against a real s3rver (tests/storage/package.json):
# a generated tiny-k3 checkpoint local -> s3 -> local byte-identical, ls, verify (with checksums), a
# second sync that transfers nothing, wrong credentials (one line, bucket and credential source named,
# no secret), verify catching a truncated shard and a copy without a manifest.
#   weights_cli_test.sh PATH/TO/k3          exit 77 (skip) when node or the npm package is missing
set -euo pipefail
k3=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "SKIP: node is not on PATH"; exit 77; }
[[ -f $here/node_modules/s3rver/package.json ]] || { echo "SKIP: run npm ci --prefix tests/storage"; exit 77; }

# shellcheck source=tests/storage/s3rver_env.sh
source "$here/s3rver_env.sh"
tmp=$(mktemp -d)
cleanup() {
  stop_s3rver
  rm -rf "$tmp"
}
trap cleanup EXIT
start_s3rver "$tmp" weights

fail() { echo "FAIL: $*"; exit 1; }

"$k3" gen-model --preset tiny-k3 --out "$tmp/model" >/dev/null
"$k3" weights sync "$tmp/model" s3://weights/tiny --progress log --chunk-mib 1 >"$tmp/up.out" 2>&1 ||
  { cat "$tmp/up.out"; fail "sync local -> s3"; }
grep -q "already there" "$tmp/up.out" || { cat "$tmp/up.out"; fail "no summary line"; }
"$k3" weights ls s3://weights/tiny >"$tmp/ls.out" || fail "ls"
grep -q "k3-manifest.json" "$tmp/ls.out" || { cat "$tmp/ls.out"; fail "ls does not show the manifest"; }
"$k3" weights verify s3://weights/tiny --checksums >"$tmp/verify.out" || { cat "$tmp/verify.out"; fail "verify s3"; }
grep -q "^ok: " "$tmp/verify.out" || fail "verify did not say ok"

"$k3" weights sync s3://weights/tiny "$tmp/back" --progress none >"$tmp/down.out" || fail "sync s3 -> local"
diff -r --exclude=k3-manifest.json "$tmp/model" "$tmp/back" || fail "local -> s3 -> local differs"

"$k3" weights sync "$tmp/model" s3://weights/tiny --progress none >"$tmp/again.out" || fail "second sync"
grep -q "0 copied" "$tmp/again.out" && grep -q "0 B transferred (0 bytes)" "$tmp/again.out" ||
  { cat "$tmp/again.out"; fail "the second sync transferred bytes"; }

secret=not-the-secret-Zq9xW
if AWS_ACCESS_KEY_ID=AKIDWRONG AWS_SECRET_ACCESS_KEY=$secret "$k3" weights ls s3://weights/tiny \
  >"$tmp/creds.out" 2>"$tmp/creds.err"; then
  fail "wrong credentials were accepted"
fi
[[ $(wc -l <"$tmp/creds.err") == 1 ]] || { cat "$tmp/creds.err"; fail "the error is not one line"; }
grep -q "s3://weights" "$tmp/creds.err" && grep -q "env AWS_ACCESS_KEY_ID" "$tmp/creds.err" ||
  { cat "$tmp/creds.err"; fail "the error does not name the bucket and the credential source"; }
! grep -q "$secret" "$tmp/creds.err" "$tmp/creds.out" || fail "the secret was printed"

shard=$(find "$tmp/back" -name '*.safetensors' | head -n 1)
truncate -s -16 "$shard"
if "$k3" weights verify "$tmp/back" >"$tmp/trunc.out" 2>&1; then fail "verify passed a truncated shard"; fi
grep -q "the manifest says" "$tmp/trunc.out" || { cat "$tmp/trunc.out"; fail "no size problem reported"; }
rm "$tmp/back/k3-manifest.json"
if "$k3" weights verify "$tmp/back" >"$tmp/nomanifest.out" 2>&1; then fail "verify passed a copy without manifest"; fi
grep -q "not a finished" "$tmp/nomanifest.out" || { cat "$tmp/nomanifest.out"; fail "no manifest problem"; }
echo "weights_cli_test: ok"
