#!/usr/bin/env bash
# Configures and builds one build tree with CMake + Ninja.
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]     default BUILD_DIR: build (Release-ish)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
cmake --build "$dir" -- -j"$(nproc)"
