# Sourced by the storage tests: starts a real s3rver (tests/storage/package.json) for the test's life and
# points the AWS environment at it.
#   start_s3rver DIR BUCKET    serves DIR with BUCKET; sets s3rver_port and AWS_* (S3RVER / S3RVER keys)
#   stop_s3rver                closes its stdin (s3rver exits), then forces it after 5 s; call from EXIT
# s3rver exits when its stdin closes: fd 3 holds the fifo open until the test ends, however it ends.
# shellcheck shell=bash
s3rver_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
s3rver_pid=
s3rver_port=

start_s3rver() {
  local dir=$1 bucket=$2
  mkfifo "$dir/s3rver.stdin"
  node --openssl-legacy-provider "$s3rver_here/s3rver_main.cjs" "$dir/s3" "$bucket" <"$dir/s3rver.stdin" \
    >"$dir/s3rver.port" &
  s3rver_pid=$!
  exec 3>"$dir/s3rver.stdin"
  for _ in $(seq 200); do grep -q port "$dir/s3rver.port" && break; sleep 0.1; done
  s3rver_port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$dir/s3rver.port")
  [[ -n $s3rver_port ]] || { echo "FAIL: s3rver did not start"; return 1; }
  export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_ENDPOINT_URL="http://127.0.0.1:$s3rver_port"
  unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3 || true
}

stop_s3rver() {
  [[ -n $s3rver_pid ]] || return 0
  exec 3>&-
  for _ in $(seq 50); do kill -0 "$s3rver_pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$s3rver_pid" 2>/dev/null || true
}
