#!/usr/bin/env bash
# The first README command: installs what is missing, builds k3, and runs the main job on the embedded
# model (a generated tiny-k3 checkpoint, created once in the user's cache directory).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DK3_BUILD_TESTS=OFF -DK3_BUILD_BENCH=OFF
exec ./build/k3 run --prompt-ids 1008,10484,318,15383,387 --max-new 16 "$@"
