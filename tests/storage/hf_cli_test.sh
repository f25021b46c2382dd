#!/usr/bin/env bash
# `k3 weights` on hf:// through the built binary against a loopback fake Hugging Face Hub (fake_hub.py:
# the tree API paginated two entries a page, safetensors files redirected to a second port that refuses
# any Authorization header): ls lists every file with its size, sync to a directory is byte-identical,
# verify passes, a wrong or missing token fails with one line naming the repository and the credential
# source (never the token), and writing to hf:// is refused. (serve and run from hf:// are in
# serve_bucket_test.sh hf.)
#   hf_cli_test.sh PATH/TO/k3          exit 77 (skip) when python3 is missing
set -euo pipefail
k3=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 is not on PATH"; exit 77; }
# shellcheck source=tests/storage/fake_hub_env.sh
source "$here/fake_hub_env.sh"
tmp=$(mktemp -d)
cleanup() {
  stop_fake_hub
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
token=hf_cli_test_secret_token
start_fake_hub "$tmp" "$token"

"$k3" gen-model --preset tiny-k3 --out "$tmp/model" >/dev/null
mkdir -p "$fake_hub_root/org"
cp -r "$tmp/model" "$fake_hub_root/org/tiny"
files=$(cd "$tmp/model" && find . -type f | wc -l)

# ls: every file, with the real (LFS) sizes.
"$k3" weights ls hf://org/tiny >"$tmp/ls.out" 2>"$tmp/ls.err" || { cat "$tmp/ls.err"; fail "ls"; }
grep -q "^$files objects" "$tmp/ls.out" || { cat "$tmp/ls.out"; fail "ls: expected $files objects"; }
shard=$(cd "$tmp/model" && ls ./*.safetensors | head -n 1)
shard=${shard#./}
size=$(stat -c %s "$tmp/model/$shard")
grep -qE "^ *$size  $shard\$" "$tmp/ls.out" || { cat "$tmp/ls.out"; fail "ls: $shard is not $size bytes"; }

# sync to a directory: the same bytes (plus the manifest sync writes).
"$k3" weights sync hf://org/tiny "$tmp/copy" --progress none >/dev/null 2>"$tmp/sync.err" ||
  { cat "$tmp/sync.err"; fail "sync hf -> local"; }
diff -r -x k3-manifest.json "$tmp/model" "$tmp/copy" || fail "sync: the copy differs"
[[ ! -s $fake_hub_leaks ]] || fail "the token was sent to the redirect's host"
# verify wants the manifest a finished sync writes: published with the repository here.
cp "$tmp/copy/k3-manifest.json" "$fake_hub_root/org/tiny/"
"$k3" weights verify hf://org/tiny --checksums >"$tmp/verify.out" 2>&1 ||
  { cat "$tmp/verify.out"; fail "verify hf://"; }

# A wrong token and no token: one line, naming the repository and the source, never the token.
check_denied() {
  local label=$1 want=$2
  shift 2
  if "$@" >"$tmp/denied.out" 2>"$tmp/denied.err"; then fail "$label: succeeded"; fi
  [[ $(wc -l <"$tmp/denied.err") -eq 1 ]] || { cat "$tmp/denied.err"; fail "$label: not one line"; }
  grep -q "hf://org/tiny" "$tmp/denied.err" || { cat "$tmp/denied.err"; fail "$label: repository not named"; }
  grep -q "HTTP 401" "$tmp/denied.err" || { cat "$tmp/denied.err"; fail "$label: no HTTP 401"; }
  grep -q "$want" "$tmp/denied.err" || { cat "$tmp/denied.err"; fail "$label: no '$want'"; }
  ! grep -q "$token\|wrong_token_value" "$tmp/denied.err" || fail "$label: the token was printed"
  cat "$tmp/denied.err"  # (shown in the test's log)
}
check_denied "wrong token" "env HF_TOKEN" env HF_TOKEN=wrong_token_value "$k3" weights ls hf://org/tiny
check_denied "no token" "needs HF_TOKEN" env -u HF_TOKEN "$k3" weights sync hf://org/tiny "$tmp/copy2" \
  --progress none

# hf:// is read-only.
if "$k3" weights sync "$tmp/model" hf://org/other --progress none >"$tmp/ro.out" 2>&1; then
  fail "sync into hf:// succeeded"
fi
grep -q "read-only" "$tmp/ro.out" || { cat "$tmp/ro.out"; fail "no read-only error"; }
# A download that does not match the SHA-256 the Hub publishes for an LFS file: sync fails naming the
# file, and the destination is not a finished copy (no manifest, the file not left in place).
cp -r "$tmp/model" "$fake_hub_root/org/corrupt-tiny"
if "$k3" weights sync hf://org/corrupt-tiny "$tmp/bad" --progress none >"$tmp/bad.out" 2>&1; then
  fail "sync of a download that does not match the Hub's sha256 succeeded"
fi
grep -q "SHA-256" "$tmp/bad.out" || { cat "$tmp/bad.out"; fail "the mismatch is not named"; }
grep -q "$shard" "$tmp/bad.out" || { cat "$tmp/bad.out"; fail "the mismatching file is not named"; }
cat "$tmp/bad.out"
[[ ! -e $tmp/bad/k3-manifest.json ]] || fail "a manifest beside a corrupt download"
[[ ! -e $tmp/bad/$shard ]] || fail "the corrupt download was left in place"
if "$k3" weights verify "$tmp/bad" >/dev/null 2>&1; then fail "verify passed a failed sync"; fi
echo "hf_cli_test: ok ($files files)"
