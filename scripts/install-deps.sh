#!/usr/bin/env bash
# Installs every Debian package k3stack needs, and nothing else. Idempotent: when everything is already
# present it only runs dpkg queries and returns in well under a second.
#
#   scripts/install-deps.sh              build + test dependencies
#   scripts/install-deps.sh --build      what building the k3 binary needs (the Dockerfile's build stage)
#   scripts/install-deps.sh --runtime    the shared libraries the k3 binary runs with (the image)
#   scripts/install-deps.sh --reference  also python3-torch, for tools/reference (golden generation) and
#                                        bench/vision_ttft.py, and OpenBLAS: Debian's torch has no MKL and
#                                        runs fp32 GEMMs through the system BLAS (the reference BLAS: ~50x slower)
#   scripts/install-deps.sh --test       build + test dependencies and the cross group (scripts/test.sh)
#   scripts/install-deps.sh --cross      only the cross group: the arm64 cross toolchain, arm64 libraries
#                                        and qemu-user (scripts/arm64_test.sh)
# The cross group's :arm64 packages need dpkg's arm64 foreign architecture, which this script adds (then
# apt-get update fetches the arm64 package lists too); the default leaves it out, so scripts/quickstart.sh
# does not change the machine's architectures.
set -euo pipefail

build=(
  # toolchain
  g++ cmake ninja-build pkg-config
  # libraries (design.md "Dependencies")
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libhwy-dev libpcre2-dev libyaml-cpp-dev
  libboost-dev
  libvalijson-dev  # deploy tests: CRD validation; k3 verify: tool-call arguments
  libcurl4-openssl-dev  # src/client: HTTP(S) for k3 verify / k3 bench / weights
  libssl-dev  # src/server: TLS (--ssl-certfile / --ssl-keyfile) through Boost.Asio's OpenSSL streams
  libgloo-dev  # src/dist: collectives of one model across rank processes (TCP transport)
  libexpat1-dev  # src/storage: S3 and Azure XML replies (expat); SHA-256 and Azure's HMAC via libssl-dev
  libpng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev  # src/image: PNG, JPEG, WebP (+ demux), GIF decoders
)
runtime=(
  # what `ldd k3` names beyond libc / libstdc++ (each pulls its own dependencies)
  libyaml-cpp0.7 libcurl4 libssl3 libhwy1 libgloo0 libspdlog1.10 libfmt9 libpcre2-8-0 ca-certificates libexpat1
  libpng16-16 libjpeg62-turbo libwebp7 libwebpdemux2 libgif7  # src/image
)
tests=(
  clang-14 libclang-rt-14-dev clang-format  # sanitizer build and fuzzers
  ccache  # scripts/build.sh compiles through it: a rebuild on the same machine recompiles only what changed
  iproute2  # tests/dist: the two-namespace test (ip netns, veth)
  # tests/deploy/rendered_test.py: rendered scripts through shellcheck, and every aws / az command line
  # through the real CLI offline (gcloud and kubectl are not in Debian: checked where installed)
  shellcheck awscli azure-cli python3-yaml
  python3-numpy  # tests/peer: tools/k3_to_gguf.py (k3 checkpoint -> GGUF) against its checkpoint
  python3-pil  # tests/image/compare_pillow.py: K3's reference image processor on Debian's Pillow
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  openssl  # tests/compat/http_layer: a self-signed certificate for the HTTPS test
  chromium  # tests/e2e: k3 bench SVG screenshot; with 23 libraries ~360 MB installed, ~1 min to install
)
# scripts/test.sh's arm64 stage (scripts/arm64_test.sh): cross-compiles the kernels and the model with
# Debian's aarch64 toolchain against these arm64 libraries and runs their tests under qemu-user.
cross=(
  g++-aarch64-linux-gnu qemu-user-static
  libhwy-dev:arm64 libfmt-dev:arm64 libspdlog-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
)
case "${1:-}" in
  --build) packages=("${build[@]}") ;;
  --runtime) packages=("${runtime[@]}") ;;
  --reference) packages=("${build[@]}" "${tests[@]}" python3-torch python3-numpy libopenblas0-pthread) ;;
  --test) packages=("${build[@]}" "${tests[@]}" "${cross[@]}") ;;
  --cross) packages=("${cross[@]}") ;;
  "") packages=("${build[@]}" "${tests[@]}") ;;
  *)
    echo "install-deps.sh: unknown option '$1' (use --build, --runtime, --reference, --test or --cross)" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) != 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if [[ " ${missing[*]}" == *:arm64* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
