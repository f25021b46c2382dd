#!/usr/bin/env bash
# ctest entry of the tiktoken differential test: run_diff.sh DRIVER WORKDIR [NUM_CASES]
# Exits 77 (ctest SKIP_RETURN_CODE) only when node is not installed. Installs the pinned npm packages
# from package-lock.json when scripts/test.sh has not done so already.
set -euo pipefail
driver=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed; the tiktoken differential test needs node 18+"
  exit 77
fi
if [[ ! -f $here/node_modules/tiktoken/package.json ]]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
mkdir -p "$work"
"$driver" "$work" "${3:-12000}"
node "$here/compare.cjs" "$work"
