#!/bin/sh
# scripts/deps.sh — make sure the Debian 12 packages reprise builds and tests with are here.
# As root it installs what is missing with apt-get; otherwise it prints the exact command.
# Usage: scripts/deps.sh [build|test]   ("test" adds what only the test suite needs)
set -eu
PKGS="gcc make pkg-config python3 libzstd-dev libxxhash-dev libprotobuf-c-dev protobuf-c-compiler
libvulkan-dev mesa-vulkan-drivers glslang-tools"
if [ "${1:-build}" = test ]; then
    PKGS="$PKGS libcriterion-dev clang libclang-rt-14-dev vulkan-validationlayers vulkan-tools
    protobuf-compiler libvkfft-dev glslang-dev"
fi
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
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
