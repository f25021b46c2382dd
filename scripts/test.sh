#!/usr/bin/env bash
# The second README command: installs what is missing, builds, and runs every test.
#   1. the release build, its performance-relevant unit tests and the integration tests (ctest)
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build of every test (and of the fuzzers)
#   3. every libFuzzer target (built in the sanitizer tree when clang is present) for K3_FUZZ_SECONDS
#      (default 30; the safetensors header >= 60) each
# Prints "N passed, N failed" at the end; exits non-zero on any failure.
#
# CI budget: .ci/run runs this on 2 cores with a 90-minute limit; keep it under 40 min (2400 s wall, about
# 4800 CPU s). The run of 2026-12-02 took 3176 s: release build + npm ci ~16 min, release
# ctest ~1.5, g++ ASan Debug build ~14, ASan ctest ~2.5, clang fuzz build ~5, 7 fuzzers x 60 s one after
# another ~8. Compiling is most of it, so each build compiles only what its phase uses:
#   - the sanitizer build compiles Highway kernels for the baseline and AVX2 only (the release build's
#     ops_test runs every target), see K3_HWY_DISABLED_TARGETS in src/kernels/CMakeLists.txt;
#   - the fuzz build builds only the k3_fuzzers target (fuzzers and the libraries they link);
#   - the sanitizer build has -g1 debug info (line tables: sanitizer reports still name file:line), not -g:
#     on three sample files 50.6 -> 33.7 CPU s (model_config_test.cc 26.1 -> 13.8);
#   - test helpers shared by several test binaries are compiled once (a *_testing library);
#   - the fuzzers run nproc at a time (each is one single-threaded process): 7 x 60 s take 4 min, not 8.
# Tried and not adopted (2026-12-02): one clang-14 tree for the ASan unit tests and the fuzzers (K3_SANITIZE
# + K3_FUZZ, -O0 -gline-tables-only). It compiles (~1,450 CPU s for both, against ~14 + ~5 min before, and
# clang -O0 -gline-tables-only took 40.2 CPU s on four sample files where g++ -O0 -g took 59.5), but at -O0
# fuzz_tokenizer's start-up (BPE training) passed libFuzzer's 30 s timeout and fuzz_chat_request managed
# 7 runs in 13 s, and -O1 costs 55-70% more compile CPU than -O0. Unity builds: src/io, src/model and
# src/kernels are ready for CMAKE_UNITY_BUILD (a -fsyntax-only pass); the other folders are not checked.
# 2026-12-03 (the landed run of 2026-12-02 took 2078 s): the fuzz build has line tables only
# (-gline-tables-only instead of -g: 9.8 -> 8.1 CPU s on json_schema_grammar.cc), the fuzzers other than
# the safetensors header run 30 s (4 -> ~2.3 min for 8 fuzzers two at a time). Running the compat tests
# beside the unit tests (RESOURCE_LOCK instead of RUN_SERIAL) made the ASan ctest slower, 239 -> 349 s.
# Later on 2026-12-03: test code compiles at -O0 in every build (k3_test in CMakeLists.txt; the release
# build's tests took 354 CPU s, heavy test files 35-50 % less than at -O3), and the sanitizer build uses
# clang-14 (2.0-2.3x faster to compile than g++; the whole tree in ~1,000 CPU s, its ctest 266 s). On the
# way, clang showed that a braced list holding one json initialised a json parameter differently from
# g++ (src/api responders; fixed by spelling json::array out).
# 2026-12-04 (the landed run took 2,934 s, over the 40-minute target): Gloo's bcube all-reduce instead of its
# ring and one model thread per rank in the two-namespace group (dist_netns 315 -> ~150 s); -O1 for the
# constrained-decoding and tokenizer libraries under the sanitizers (their tests 3x faster) and for the
# CLI / deploy / client / storage code in the release build; verify + bench commands compiled once; the
# fuzz build at -O1 (as OSS-Fuzz); the sanitizer build at nice 19 beside the release tests and the fuzz
# build beside the sanitizer tests. Precompiled headers were
# measured and not adopted: CLI11 + JSON + fmt as a PCH saved 8-15 % of a TU (group_flags.cc 7.1 -> 6.0
# CPU s), because the cost is instantiating and optimising inline code, not parsing it.
# The clean-clone run of that day (fadf7e2) took 2,570 s: release build 740 s, release ctest 190 s
# (dist_netns 81 s), rendered checks 127 s, sanitizer build 944 s from its background start (627 s of it
# after the rendered checks: the release tests leave little idle CPU), sanitizer ctest 385 s, fuzz build 655
# s from its start (270 s after the sanitizer tests), 13 fuzzers ~3.5 min. Next: build the fuzzers in the
# sanitizer tree, and shrink Engine.PreemptionByRecomputeKeepsResults (44 s under ASan, 0.4 s release).
# Later on 2026-12-04 (that run landed in 2,596 s): the fuzzers are built in the clang sanitizer tree (no
# separate fuzz tree: the tree with them compiled in 1,370 CPU s); the model, kernels, cache, engine and API
# libraries are at -O1 there (engine tests 5-10x faster: the preemption test 33 -> 3 s); the release tree
# leaves the unit tests of seven logic folders to the sanitizer tree (313 -> 262 files, 703 -> 343 tests).
# 2026-12-05 (issue 18): the arm64 stage (scripts/arm64_test.sh): the model core (base, io, kernels, model and
# their kernel + golden tests; K3_CORE_ONLY) cross-compiled with g++-aarch64-linux-gnu, 60 files at -O2 with
# Highway's NEON, SVE and SVE2 targets, in 158-175 CPU s (user + sys), 75-116 as a unity build (adopted;
# -O1 was no cheaper: 161 CPU s); it starts in the background at
# nice 19 beside the sanitizer build. Its 49 tests then run under qemu-user once per CPU model (cortex-a72
# NEON, a64fx SVE, max SVE2): 76-87 CPU s, 56-82 s wall at a load of 5 on this shared machine (~45 s on
# two idle cores). Expected cost in wall time: that qemu step plus up to ~60 s more for the sanitizer
# build, which shares the idle cores with the cross build: ~2 min, not yet measured in a whole run of this
# script.
# install-deps.sh adding the cross group (arm64 architecture, apt-get update, 7 packages and their
# dependencies) took 48 s wall, 33 CPU s.
# Measure a change in CPU seconds (user + sys), not wall time: the CI machine is shared. A compiler launcher
# that logs each compile's CPU (`/usr/bin/time -a -o LOG -f "%U %S $out" "$@"` as CMAKE_CXX_COMPILER_LAUNCHER)
# finds the slow translation units.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
scripts/install-deps.sh --test || exit 1  # with the cross group for the arm64 stage

passed=0
failed=0
failed_steps=()  # names, repeated at the very end: CI keeps only the tail of this output
step() {  # step NAME COMMAND...
  local name=$1 start=$SECONDS
  shift
  echo "=== $name"
  if "$@"; then
    passed=$((passed + 1))
    echo "=== $name: ok, $((SECONDS - start)) s"
  else
    echo "FAILED: $name ($((SECONDS - start)) s)"
    failed=$((failed + 1))
    failed_steps+=("$name")
  fi
}

# ctest_dir DIR: every test of the tree, nproc at a time. Its failed tests are listed in
# DIR/Testing/Temporary/LastTestsFailed.log, which the summary at the end reruns.
ctest_failed_dirs=()
ctest_dir() {
  ctest --test-dir "$1" --output-on-failure -j"$(nproc)" --timeout 600 && return 0
  ctest_failed_dirs+=("$1")
  return 1
}

# Printed last, where CI's record of the run ends: each failed step, and each failed test rerun once on
# its own with its output (a test that passes then still counts as failed: it is flaky, and the rerun's
# output says so).
print_failure_summary() {
  local dir name
  echo "=== summary of failures"
  for name in "${failed_steps[@]}"; do echo "FAILED step: $name"; done
  for dir in "${ctest_failed_dirs[@]}"; do
    echo "--- $dir: failed tests, rerun one at a time"
    cat "$dir/Testing/Temporary/LastTestsFailed.log" 2>/dev/null
    ctest --test-dir "$dir" --rerun-failed --output-on-failure --timeout 600 2>&1 | tail -n 60
  done
}

# A build started in the background at the lowest priority (nice 19) while tests run: it takes the cores
# the tests leave idle (serial tests, a server waiting on its client, I/O) and yields them at once to
# the tests (a waking nice-0 process preempts it). Its log goes to DIR/build.log and is shown when the
# build is waited for, as its own step.
#   background_build DIR CMAKE_ARGS...      (K3_TARGETS as for scripts/build.sh)
#   wait_background_build DIR
declare -A background_pid=() background_start=()
background_build() {
  local dir=$1
  shift
  mkdir -p "$dir"
  nice -n 19 scripts/build.sh "$dir" "$@" >"$dir/build.log" 2>&1 &
  background_pid[$dir]=$!
  background_start[$dir]=$SECONDS
}
wait_background_build() {
  local dir=$1 rc
  wait "${background_pid[$dir]}"
  rc=$?
  tail -n 30 "$dir/build.log"
  echo "$dir: exit $rc, $((SECONDS - ${background_start[$dir]})) s since it started in the background"
  return "$rc"
}

# The release tree leaves these folders' unit tests to the sanitizer tree (which builds every test): their
# code is parsing and serving logic where -O3 adds nothing to check, and their test files were ~340 of the
# ~440 CPU s the unit tests take to compile. Without clang the sanitizer tree is g++'s and still builds all.
release_unit_tests_elsewhere="src/chat;src/api;src/client;src/storage;src/tokenizer;tests/deploy;apps/k3"
# Tests and benchmarks are named on: the first README command (scripts/quickstart.sh) configures the same
# tree without them, and CMake would keep that choice.
step "build (release)" scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DK3_BUILD_TESTS=ON -DK3_BUILD_BENCH=ON \
  "-DK3_UNIT_TESTS_BUILT_ELSEWHERE=$release_unit_tests_elsewhere"
# npm_ci DIR: the pinned packages of DIR's lockfile. They come from the registry, so a failed install is
# tried once more after 10 s (a registry or network hiccup is not a failure of this code); the second
# failure fails the step.
npm_ci() {
  local install=(npm ci --prefix "$1" --no-audit --no-fund --loglevel=error)
  "${install[@]}" && return 0
  echo "npm ci --prefix $1 failed; trying once more in 10 s"
  sleep 10
  "${install[@]}"
}
if command -v npm >/dev/null; then  # pinned test-only npm packages (tiktoken diff test, openai SDK compat tests)
  step "npm ci (tests/tokenizer)" npm_ci tests/tokenizer
  step "npm ci (tests/compat)" npm_ci tests/compat
  step "npm ci (tests/storage)" npm_ci tests/storage
  step "npm ci (tests/deploy/core_schemas)" npm_ci tests/deploy/core_schemas
fi
# The sanitizer build uses clang-14 where it is installed (install-deps.sh installs it for the fuzzers): it
# compiled 2.0-2.3x faster than g++ 12 with the same sanitizers (crd_test.cc 21.6 -> 10.7 CPU s,
# http_server.cc 39.3 -> 18.2), and it checks the code with a second compiler (the release build is g++).
# It runs in the background beside the release tests and the rendered-deployment checks.
# With clang the same tree builds the libFuzzer targets (K3_FUZZ): the libraries they exercise compile at
# -O1 with the fuzzer's coverage instrumentation, and the unit tests link those same objects (see the end
# of CMakeLists.txt). A separate fuzz tree compiled 145 files a second time (655 s beside the sanitizer
# tests in the run of 2026-12-04).
asan_compiler=()
asan_debug_flags=-g1
fuzz=0
if command -v clang++-14 >/dev/null; then
  asan_compiler=(-DCMAKE_CXX_COMPILER=clang++-14)
  asan_debug_flags=-gline-tables-only
  [[ -f fuzz/CMakeLists.txt ]] && fuzz=1
fi
# arm64 (scripts/arm64_test.sh): the model core cross-compiled for aarch64 in the background at nice 19
# beside the sanitizer build; its tests run under qemu-user after the sanitizer tests (one step, below).
mkdir -p build-arm64
nice -n 19 scripts/arm64_test.sh build build-arm64 >build-arm64/build.log 2>&1 &
arm64_build_pid=$!
arm64_build_start=$SECONDS
arm64_stage() {
  local rc
  wait "$arm64_build_pid"
  rc=$?
  tail -n 5 build-arm64/build.log
  echo "build-arm64: exit $rc, $((SECONDS - arm64_build_start)) s since it started in the background"
  ((rc == 0)) && scripts/arm64_test.sh test build-arm64
}
# A unity build (16 sources per translation unit): on 2026-12-05 the clean sanitizer tree compiled in 964 CPU s
# (486 s wall on 2 idle cores) instead of ~1,400, and its 784 tests passed. Helpers in anonymous namespaces
# must then have names unique within their target (src/base/text.h, src/deploy/units.h hold shared ones).
background_build build-asan "${asan_compiler[@]}" -DCMAKE_BUILD_TYPE=Debug -DK3_SANITIZE=ON -DK3_FUZZ=$((fuzz)) \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 -DK3_BUILD_BENCH=OFF -DK3_HWY_DISABLED_TARGETS=HWY_SSSE3+HWY_SSE4+HWY_AVX3 "-DCMAKE_CXX_FLAGS_DEBUG=$asan_debug_flags"
step "tests (release)" ctest_dir build
# Every rendered deployment through shellcheck, `k3 serve --dry-run` and the real cloud CLIs (offline).
step "rendered deployments (shellcheck, k3 --dry-run, cloud CLI argument checks)" \
  python3 tests/deploy/rendered_test.py build/k3
step "build (asan+ubsan, waiting for the rest)" wait_background_build build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  step "tests (asan+ubsan)" ctest_dir build-asan
# The arm64 tests under qemu-user (cortex-a72: NEON, a64fx: SVE, max: SVE2), once the cross build is done;
# skipped with the reason when the cross compiler, the arm64 libraries or qemu are absent.
step "arm64 (cross build + qemu)" arm64_stage

# fuzz_one NAME SECONDS: runs build-asan/fuzz/NAME, seeded from fuzz/corpus/NAME/ (new inputs go to
# build-asan/fuzz/corpus-NAME), output in build-asan/fuzz/NAME.log.
fuzz_dir=build-asan/fuzz
fuzz_one() {
  local name=$1 seconds=$2 corpus=fuzz/corpus/$1
  mkdir -p "$fuzz_dir/corpus-$name"
  # The outer timeout stops a fuzzer that hangs while reporting (seen once: stuck after an OOM report);
  # -timeout=30 makes one slow input a finding with an artifact instead (libFuzzer's default is 1200 s).
  timeout --kill-after=10 $((seconds + 120)) "$fuzz_dir/$name" -max_total_time="$seconds" \
    -rss_limit_mb=4096 -timeout=30 -artifact_prefix="$fuzz_dir/$name-" "$fuzz_dir/corpus-$name" \
    $([[ -d $corpus ]] && echo "$corpus") >"$fuzz_dir/$name.log" 2>&1
}

# Every fuzzer for K3_FUZZ_SECONDS (default 30) each, nproc at a time (each is single-threaded), longest
# first; fuzz_safetensors_header always gets at least 60 s (issue 2). Each fuzzer counts as one step.
if ((fuzz)); then
  names=()
  for f in "$fuzz_dir/fuzz_safetensors_header" "$fuzz_dir"/fuzz_*; do
    [[ -x $f && " ${names[*]} " != *" $(basename "$f") "* ]] && names+=("$(basename "$f")")
  done
  declare -A pid_of=()
  for name in "${names[@]}"; do
    while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n; done
    seconds=${K3_FUZZ_SECONDS:-30}
    [[ $name == fuzz_safetensors_header ]] && ((seconds < 60)) && seconds=60
    echo "=== fuzz $name (${seconds} s, started)"
    fuzz_one "$name" "$seconds" &
    pid_of[$name]=$!
  done
  for name in "${names[@]}"; do
    wait "${pid_of[$name]}"
    rc=$?
    echo "=== fuzz $name"
    if ((rc == 0)); then
      grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs)' "$fuzz_dir/$name.log" | tail -n 2
      passed=$((passed + 1))
    else
      tail -n 80 "$fuzz_dir/$name.log"
      echo "FAILED: fuzz $name (exit $rc, whole log in $fuzz_dir/$name.log)"
      failed_steps+=("fuzz $name")
      failed=$((failed + 1))
    fi
  done
fi

((failed == 0)) || print_failure_summary
echo "test.sh: $passed passed, $failed failed"
[[ $failed == 0 ]]
