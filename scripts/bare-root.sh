#!/bin/sh
# scripts/bare-root.sh DIR — a bare Debian 12 root in DIR (debootstrap --variant=minbase: none
# of the build's packages, no Vulkan loader, no GL, no Python), where the test suite runs
# `make dist`'s tree (tests/test_cli.c, cli::dist_runs_on_a_bare_debian_root) to show that it
# needs nothing the tree does not carry. Idempotent (DIR/.reprise-bare-root marks a finished
# one). Needs root, debootstrap and Debian's mirror; exit 4 when one is missing.
set -eu
D=$1
[ -f "$D/.reprise-bare-root" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "bare-root: debootstrap needs root; the test that uses $D will skip" >&2
    exit 4
fi
if ! command -v debootstrap > /dev/null; then
    echo "bare-root: debootstrap is missing (apt-get install debootstrap)" >&2
    exit 4
fi
rm -rf "$D"
mkdir -p "$(dirname "$D")"
echo "bare-root: debootstrap --variant=minbase bookworm $D (about a minute)" >&2
debootstrap --variant=minbase bookworm "$D" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
    > "$D.log" 2>&1 || { echo "bare-root: debootstrap failed (see $D.log)" >&2; exit 4; }
touch "$D/.reprise-bare-root"
