#!/usr/bin/env bash
# Configures and builds one build tree with CMake + Ninja.
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]     default BUILD_DIR: build (Release-ish)
# K3_TARGETS="t1 t2" builds only those targets (and what they need) instead of everything.
# Where ccache is installed (install-deps.sh installs it with the test group) every compile goes through it
# (unless K3_NO_CCACHE=1): a tree built before on the same machine recompiles only what changed. On
# 2026-12-07 a clean clone's scripts/test.sh took 22 min with the cache warm from another clone (release
# build 53 s instead of ~600-700 s; the sanitizer tree, not yet cached at that path, 315 s), 26/26 steps.
# The cache is keyed by content (and the compiler and flags): a stale object is never reused.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
launcher=()
if [[ -z "${K3_NO_CCACHE:-}" ]] && command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths under the checkout are hashed relative to it, so two clones in different folders share entries.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
  # The build has -g, and ccache then hashes the working directory too (hash_dir), which alone kept
  # clones and worktrees from sharing entries (0.2 % hits across five worktrees); debug info then names the
  # folder of the build that filled the entry.
  export CCACHE_NOHASHDIR=1
fi
cmake -S . -B "$dir" -G Ninja "${launcher[@]}" "$@" >/dev/null
targets=()
for t in ${K3_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" "${targets[@]}" -- -j"$(nproc)"
