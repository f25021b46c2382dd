#!/usr/bin/env bash
# ctest entry of one black-box test file: run.sh K3_BINARY TEST_FILE.test.cjs
# Installs the pinned npm packages (package-lock.json) when scripts/test.sh has not done so already.
# Exits 77 (ctest SKIP_RETURN_CODE) only when node is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed; the compat tests need node 20"
  exit 77
fi
if [[ ! -f $here/node_modules/openai/package.json || ! -f $here/node_modules/ajv/package.json ||
      ! -f $here/node_modules/@anthropic-ai/sdk/package.json ]]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
K3_BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") exec node --test --test-reporter=spec "$here/$2"
