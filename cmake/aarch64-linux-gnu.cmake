# CMake toolchain file: cross-compiles for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu, against
# the arm64 multiarch libraries in /usr/lib/aarch64-linux-gnu (libhwy-dev:arm64, libgtest-dev:arm64, ...;
# scripts/install-deps.sh --cross). Binaries run under qemu-user: qemu-aarch64-static is the crosscompiling
# emulator, so gtest_discover_tests lists the tests through it and ctest runs them through it (the CPU model
# comes from QEMU_CPU in the environment, e.g. QEMU_CPU=max for SVE2). Used with -DK3_CORE_ONLY=ON by
# scripts/arm64_test.sh; see docs/performance.md "arm64".
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# find_package / find_library look in /usr/lib/aarch64-linux-gnu (and /usr/share for header-only
# packages such as nlohmann_json), never in the host's /usr/lib/x86_64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
find_program(K3_QEMU_AARCH64 qemu-aarch64-static REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${K3_QEMU_AARCH64})
