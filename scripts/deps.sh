#!/bin/sh
# scripts/deps.sh — make sure the Debian 12 packages reprise builds and tests with are here.
# As root it installs what is missing with apt-get; otherwise it prints the exact command and
# exits 4. Then it fetches what is unpacked into build/ rather than installed (newer Vulkan
# headers; for the tests a second driver and Dawn), which needs Debian's mirror and npm's
# registry but not root.
# Usage: scripts/deps.sh [build|test]   ("test" adds what only the test suite needs)
set -eu
PKGS="gcc make pkg-config python3 libzstd-dev libxxhash-dev libprotobuf-c-dev protobuf-c-compiler
libvulkan-dev mesa-vulkan-drivers glslang-tools"
if [ "${1:-build}" = test ]; then
    PKGS="$PKGS libcriterion-dev clang libclang-rt-14-dev vulkan-validationlayers vulkan-tools
    protobuf-compiler libvkfft-dev glslang-dev debootstrap python3-pytest python3-numpy
    python3-pandas openmpi-bin"
fi
# Node.js and npm run Dawn (tests/webgpu) and llama.cpp (tests/llama): Debian's, unless a node
# and npm are already here
if [ "${1:-build}" = test ] && ! { command -v node && command -v npm; } >/dev/null 2>&1; then
    PKGS="$PKGS nodejs npm"
fi
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "deps: installing$missing" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $missing >&2
    else
        echo "deps: missing Debian packages; run as root:" >&2
        echo "  apt-get update && apt-get install -y$missing" >&2
        exit 4
    fi
fi
# Unpacked into build/, never installed (each script says why; none needs root):
# the Vulkan headers and registry the build is generated from (Debian 13's; without them the
# build uses the system's older ones and says so) ...
here=$(dirname "$0")
if ! "$here/vulkan-headers.sh" build/vulkan-headers; then
    echo "deps: building with the system's Vulkan headers and registry (1.3.239)" >&2
fi
# ... and for the tests, a second Vulkan driver (Mesa 25's lavapipe), Dawn (npm webgpu),
# llama.cpp (npm node-llama-cpp) and a bare Debian 12 root
if [ "${1:-build}" = test ]; then
    "$here/mesa25.sh" build/mesa25 || exit 4
    "$here/webgpu.sh" build/webgpu || exit 4
    # llama.cpp's Vulkan backend (npm node-llama-cpp, Node.js 20 from npm where Debian's is
    # older) and the tiny model its tests run
    "$here/llama.sh" build/llama || exit 4
    # a bare Debian 12 root where make dist's tree must run (as root only: the test skips
    # without it, saying why)
    "$here/bare-root.sh" build/bare-root || [ "$(id -u)" != 0 ] || exit 4
fi
exit 0
