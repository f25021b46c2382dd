#!/usr/bin/env bash
# The first README command: installs what is missing, builds k3, and starts the OpenAI-compatible server
# on the embedded model (a generated tiny-k3 checkpoint, created once in the user's cache directory):
#   scripts/quickstart.sh                                  # http://0.0.0.0:8000/v1, model "tiny-k3"
#   scripts/quickstart.sh --served-model-name Kimi-K3      # any `k3 serve` flags are passed on
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DK3_BUILD_TESTS=OFF -DK3_BUILD_BENCH=OFF
exec ./build/k3 serve "$@"
