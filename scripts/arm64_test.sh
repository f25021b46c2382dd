#!/usr/bin/env bash
# The arm64 stage of scripts/test.sh (issue 18): cross-compiles the single-process model core (src/base,
# src/io, src/kernels, src/model, tests/model; -DK3_CORE_ONLY=ON) with Debian's g++-aarch64-linux-gnu
# (cmake/aarch64-linux-gnu.cmake), then runs its tests under qemu-user once per CPU model below: the
# kernel tests against the scalar references (ops_test runs every Highway target the CPU model has) and
# the golden-logits test of the tiny presets. Each CPU model must make the kernels' dispatch pick the
# target named beside it, so each run exercises a different Highway target, and the MXFP4 x int8 kernels'
# dispatch (src/kernels/mxfp4_q8.h) the variant named beside it; mxfp4_q8_test runs every variant the model
# has (I8MM, SDOT, NEON, scalar under `max`). One more model, neoverse-n1 (SDOT without I8MM), runs only
# mxfp4_q8_test, to see that dispatch pick SDOT.
#
#   scripts/arm64_test.sh build [DIR]   configure + build (default DIR: build-arm64)
#   scripts/arm64_test.sh test [DIR]    the qemu runs (after build)
#   scripts/arm64_test.sh [DIR]         both
# Exits 0 with "arm64: skipped: <reason>" when the cross compiler, the arm64 libraries or qemu are absent
# (scripts/install-deps.sh installs them: its `cross` group).
#
# Cost on the 2-core CI machine (2026-12-05, see scripts/test.sh's header for the measured numbers): the
# build compiles the ~60 files as a unity build at -O2 for three Highway targets (NEON, SVE, SVE2), 75-116
# CPU s; the qemu runs (-j nproc) ~75-85 CPU s.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

phase=all
case "${1:-}" in
  build | test) phase=$1 && shift ;;
esac
dir=${1:-build-arm64}

# CPU model -> the Highway target the kernels' dispatch must pick there.
#   cortex-a72: Armv8.0 with NEON only (no SVE, no bf16)
#   a64fx:      SVE at 512 bits, no SVE2
#   max:        every feature qemu 7.2 emulates (SVE2, bf16, ...)
cpu_models=(cortex-a72 a64fx max)
declare -A expected_target=([cortex-a72]=NEON [a64fx]=SVE [max]=SVE2)
# Whether the bf16 matmuls take BFDOT (src/kernels/matmul_bfdot.cc): only `max` has FEAT_BF16.
declare -A expected_bf16_dot=([cortex-a72]=no [a64fx]=no [max]=yes)
# The MXFP4 x int8 variant the dispatch must pick (a64fx has no dotprod; max has I8MM).
q8_only_models=(neoverse-n1)
declare -A expected_q8=([cortex-a72]=neon [a64fx]=neon [max]=i8mm [neoverse-n1]=neon-dotprod)

skip_reason() {
  command -v aarch64-linux-gnu-g++ >/dev/null || {
    echo "no aarch64-linux-gnu-g++ (g++-aarch64-linux-gnu)"
    return
  }
  command -v qemu-aarch64-static >/dev/null || { echo "no qemu-aarch64-static (qemu-user-static)"; return; }
  [[ -f /usr/lib/aarch64-linux-gnu/cmake/hwy/hwy-config.cmake ]] || { echo "no libhwy-dev:arm64"; return; }
  [[ -f /usr/lib/aarch64-linux-gnu/libgtest.a ]] || { echo "no libgtest-dev:arm64"; return; }
}
reason=$(skip_reason)
if [[ -n $reason ]]; then
  echo "arm64: skipped: $reason (scripts/install-deps.sh --cross installs the cross group)"
  exit 0
fi

build() {
  # -O2 instead of -O3: the tests check results, not speed (-O1 compiled no faster: 161 against 158-175
  # CPU s). A unity build (src/base, io, kernels and model are ready for it): 75-116 CPU s, not 158-175.
  # Highway's SVE_256 and SVE2_128 targets (the fixed-width variants) are left out; NEON, SVE and SVE2
  # are compiled. The base and io unit tests are not cross-built (no SIMD or arm64-specific code in them).
  cmake -S . -B "$dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DK3_CORE_ONLY=ON \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_UNITY_BUILD=ON \
    -DK3_BUILD_TESTS=ON -DK3_BUILD_BENCH=OFF "-DK3_UNIT_TESTS_BUILT_ELSEWHERE=src/base;src/io" \
    -DK3_HWY_DISABLED_TARGETS=HWY_SVE_256+HWY_SVE2_128 >/dev/null || return 1
  cmake --build "$dir" -- -j"$(nproc)"
}

# Whether the int8 kernels' dispatch picks expected_q8[cpu] under -cpu cpu (prints its line).
q8_dispatch_ok() {
  local cpu=$1 line picked
  line=$(QEMU_CPU=$cpu qemu-aarch64-static "$dir/src/kernels/mxfp4_q8_test" \
    --gtest_filter='Mxfp4Q8Test.ReportsItsKernels' | grep '^q8 kernels:')
  echo "$line"
  picked=$(sed -n 's/^q8 kernels: dispatch picks \([a-z0-9-]*\) .*/\1/p' <<<"$line")
  if [[ $picked != "${expected_q8[$cpu]}" ]]; then
    echo "FAILED: -cpu $cpu: the int8 kernels' dispatch picked '$picked', expected ${expected_q8[$cpu]}"
    return 1
  fi
}

run_tests() {
  local cpu line target status=0
  for cpu in "${q8_only_models[@]}"; do
    echo "--- arm64 under qemu -cpu $cpu (mxfp4_q8_test only)"
    if ! q8_dispatch_ok "$cpu"; then
      status=1
      continue
    fi
    if QEMU_CPU=$cpu qemu-aarch64-static "$dir/src/kernels/mxfp4_q8_test" >"$dir/q8-$cpu.log" 2>&1; then
      grep -E '^\[  PASSED' "$dir/q8-$cpu.log"
    else
      tail -n 50 "$dir/q8-$cpu.log"
      echo "FAILED: mxfp4_q8_test under -cpu $cpu (whole log in $dir/q8-$cpu.log)"
      status=1
    fi
  done
  for cpu in "${cpu_models[@]}"; do
    echo "--- arm64 under qemu -cpu $cpu"
    line=$(QEMU_CPU=$cpu qemu-aarch64-static "$dir/src/kernels/ops_test" --gtest_filter='DispatchTest.*' |
      grep '^kernel targets:')
    echo "$line"
    target=$(sed -n 's/^kernel targets: dispatch picks \([A-Z0-9_]*\) .*/\1/p' <<<"$line")
    if [[ $target != "${expected_target[$cpu]}" ]]; then
      echo "FAILED: -cpu $cpu: the dispatch picked '$target', expected ${expected_target[$cpu]}"
      status=1
      continue
    fi
    if [[ $line != *"bf16 dot products: ${expected_bf16_dot[$cpu]}"* ]]; then
      echo "FAILED: -cpu $cpu: expected 'bf16 dot products: ${expected_bf16_dot[$cpu]}'"
      status=1
      continue
    fi
    if ! q8_dispatch_ok "$cpu"; then
      status=1
      continue
    fi
    # ctest runs each test through qemu-aarch64-static (CMAKE_CROSSCOMPILING_EMULATOR), which reads
    # QEMU_CPU. The summary lines only; on a failure the end of the log (the whole log stays in DIR).
    local log=$dir/ctest-$cpu.log
    if QEMU_CPU=$cpu ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" --timeout 600 >"$log" 2>&1; then
      grep -E '^[0-9]+% tests passed|^Total Test time' "$log"
    else
      tail -n 100 "$log"
      echo "FAILED: arm64 tests under -cpu $cpu (whole log in $log)"
      status=1
    fi
  done
  return "$status"
}

# Each phase ends with its wall time and CPU seconds (user + sys of everything it ran).
TIMEFORMAT="arm64 $phase: %0R s wall, %0U s user + %0S s sys CPU"
time case $phase in
  build) build ;;
  test) run_tests ;;
  all) build && run_tests ;;
esac
