# Sourced by the hf:// tests: starts the loopback fake Hugging Face Hub (fake_hub.py) for the test's life
# and points HF_ENDPOINT / HF_TOKEN at it.
#   start_fake_hub DIR TOKEN   serves DIR/hub/ORG/NAME as hf://ORG/NAME; sets fake_hub_root (DIR/hub),
#                              fake_hub_port, fake_hub_leaks (a file with a line per Authorization header
#                              that reached the redirect host) and exports HF_ENDPOINT and HF_TOKEN
#   stop_fake_hub              closes its stdin (it exits), then forces it after 5 s; call from EXIT
# The server exits when its stdin closes: fd 4 holds the fifo open until the test ends, however it ends.
# shellcheck shell=bash
fake_hub_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fake_hub_pid=
fake_hub_port=
fake_hub_root=
fake_hub_leaks=

start_fake_hub() {
  local dir=$1 token=$2
  fake_hub_root=$dir/hub
  fake_hub_leaks=$dir/hub_leaks
  mkdir -p "$fake_hub_root"
  mkfifo "$dir/fake_hub.stdin"
  python3 "$fake_hub_here/fake_hub.py" --dir "$fake_hub_root" --token "$token" --leaks "$fake_hub_leaks" \
    <"$dir/fake_hub.stdin" >"$dir/fake_hub.port" &
  fake_hub_pid=$!
  exec 4>"$dir/fake_hub.stdin"
  for _ in $(seq 100); do grep -q hub "$dir/fake_hub.port" && break; sleep 0.1; done
  fake_hub_port=$(sed -n 's/.*"hub": *\([0-9]*\).*/\1/p' "$dir/fake_hub.port")
  [[ -n $fake_hub_port ]] || { echo "FAIL: the fake Hub did not start"; return 1; }
  export HF_ENDPOINT="http://127.0.0.1:$fake_hub_port" HF_TOKEN=$token
  unset HUGGING_FACE_HUB_TOKEN || true
}

stop_fake_hub() {
  [[ -n $fake_hub_pid ]] || return 0
  exec 4>&-
  for _ in $(seq 50); do kill -0 "$fake_hub_pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$fake_hub_pid" 2>/dev/null || true
}
