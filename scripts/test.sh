#!/usr/bin/env bash
# The second README command: installs what is missing, builds, and runs every test.
#   1. the release build and its unit + integration tests (ctest)
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build of the unit tests
#   3. every libFuzzer target for K3_FUZZ_SECONDS (default 60) each, when clang is present
# Prints "N passed, N failed" at the end; exits non-zero on any failure.
#
# CI budget: .ci/run runs this on 2 cores and must finish in 30 min (1800 s wall, about 3600 CPU s); aim
# for 20 min so the HTTP server (Boost.Beast), the engine and the JSON-schema grammar fit. Compiling is
# most of it, so each build compiles only what its phase uses:
#   - the sanitizer build compiles Highway kernels for the baseline and AVX2 only (the release build's
#     ops_test runs every target), see K3_HWY_DISABLED_TARGETS in src/kernels/CMakeLists.txt;
#   - the fuzz build builds only the k3_fuzzers target (fuzzers and the libraries they link);
#   - test helpers shared by several test binaries are compiled once (a *_testing library).
# Measure a change in CPU seconds (user + sys), not wall time: the CI machine is shared.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1

passed=0
failed=0
step() {  # step NAME COMMAND...
  local name=$1
  shift
  echo "=== $name"
  if "$@"; then
    passed=$((passed + 1))
  else
    echo "FAILED: $name"
    failed=$((failed + 1))
  fi
}

ctest_dir() {
  ctest --test-dir "$1" --output-on-failure -j"$(nproc)" --timeout 600
}

step "build (release)" scripts/build.sh build -DCMAKE_BUILD_TYPE=Release
if command -v npm >/dev/null; then  # pinned test-only npm packages (tiktoken diff test, openai SDK compat tests)
  step "npm ci (tests/tokenizer)" npm ci --prefix tests/tokenizer --no-audit --no-fund --loglevel=error
  step "npm ci (tests/compat)" npm ci --prefix tests/compat --no-audit --no-fund --loglevel=error
fi
step "tests (release)" ctest_dir build
step "build (asan+ubsan)" scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DK3_SANITIZE=ON -DK3_BUILD_BENCH=OFF \
  -DK3_HWY_DISABLED_TARGETS=HWY_SSSE3+HWY_SSE4+HWY_AVX3
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  step "tests (asan+ubsan)" ctest_dir build-asan
if [[ -f fuzz/CMakeLists.txt ]] && command -v clang++-14 >/dev/null; then
  K3_TARGETS=k3_fuzzers step "build (fuzz)" scripts/build.sh build-fuzz -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DK3_FUZZ=ON -DK3_BUILD_TESTS=OFF -DK3_BUILD_BENCH=OFF
  for f in build-fuzz/fuzz/fuzz_*; do
    [[ -x $f ]] || continue
    corpus=fuzz/corpus/$(basename "$f")
    mkdir -p "build-fuzz/corpus-$(basename "$f")"
    # The outer timeout stops a fuzzer that hangs while reporting (seen once: stuck after an OOM report);
    # -timeout=30 makes one slow input a finding with an artifact instead (libFuzzer's default is 1200 s).
    step "fuzz $(basename "$f")" timeout --kill-after=10 $((${K3_FUZZ_SECONDS:-60} + 120)) \
      "$f" -max_total_time="${K3_FUZZ_SECONDS:-60}" -rss_limit_mb=4096 -timeout=30 \
      "build-fuzz/corpus-$(basename "$f")" $( [[ -d $corpus ]] && echo "$corpus" )
  done
fi

echo "test.sh: $passed passed, $failed failed"
[[ $failed == 0 ]]
