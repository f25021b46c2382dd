# Sourced by the storage tests: starts a real azurite Blob service (tests/storage/package.json) for the
# test's life and points the Azure environment at it.
#   start_azurite DIR CONTAINER...   creates the containers; sets azurite_port, azurite_endpoint and
#                                    AZURE_STORAGE_CONNECTION_STRING (dev account devstoreaccount1)
#   stop_azurite                     closes its stdin (the wrapper stops azurite), then forces it after 5 s;
#                                    call from EXIT
# The wrapper exits when its stdin closes: fd 4 holds the fifo open until the test ends, however it ends.
# The dev account and its key are public (Microsoft documents them for the emulator); they are no secret.
# shellcheck shell=bash
azurite_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
azurite_pid=
azurite_port=
azurite_endpoint=
azurite_account=devstoreaccount1
azurite_key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

start_azurite() {
  local dir=$1
  shift
  mkfifo "$dir/azurite.stdin"
  # 3>&-: s3rver_env.sh's fifo stays out of azurite's hands, or s3rver would not see its stdin close.
  node "$azurite_here/azurite_main.cjs" "$@" <"$dir/azurite.stdin" >"$dir/azurite.port" 3>&- &
  azurite_pid=$!
  exec 4>"$dir/azurite.stdin"
  for _ in $(seq 300); do grep -q port "$dir/azurite.port" && break; sleep 0.1; done
  azurite_port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$dir/azurite.port")
  [[ -n $azurite_port ]] || { echo "FAIL: azurite did not start"; return 1; }
  azurite_endpoint="http://127.0.0.1:$azurite_port/$azurite_account"
  export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=$azurite_account;AccountKey=$azurite_key;BlobEndpoint=$azurite_endpoint;"
  unset AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN AZURE_STORAGE_ENDPOINT AZURE_FEDERATED_TOKEN_FILE || true
}

stop_azurite() {
  [[ -n $azurite_pid ]] || return 0
  exec 4>&-
  for _ in $(seq 50); do kill -0 "$azurite_pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$azurite_pid" 2>/dev/null || true
}
