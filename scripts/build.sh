#!/usr/bin/env bash
# Configures and builds one build tree with CMake + Ninja.
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]     default BUILD_DIR: build (Release-ish)
# K3_TARGETS="t1 t2" builds only those targets (and what they need) instead of everything.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
targets=()
for t in ${K3_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" "${targets[@]}" -- -j"$(nproc)"
