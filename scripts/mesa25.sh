#!/bin/sh
# scripts/mesa25.sh DIR — a second Vulkan driver for the tests: lavapipe from Mesa 25
# (Debian's bookworm-backports), unpacked under DIR, never installed over the system's Mesa.
#
# Why: Dawn (WebGPU, tests/webgpu) needs features Debian 12's lavapipe (Mesa 22.3) lacks
# ("shaderUniform*ArrayDynamicIndexing required"), and a driver-upgrade gate needs two drivers:
# capture on the system's Mesa 22.3, replay and `reprise check` on Mesa 25.
#
# What: downloads mesa-vulkan-drivers, libdrm2 and libdrm-amdgpu1 from bookworm-backports with
# an apt configuration of its own (DIR/apt: sources list, package lists, cache; the system's
# apt state is not touched, root is not needed), extracts them into DIR/root with dpkg-deb -x,
# and writes DIR/lvp_icd.json naming the extracted libvulkan_lvp.so and DIR/env, a file of
# shell assignments to use the driver:
#     . DIR/env    # sets VK_ICD_FILENAMES (only this driver) and LD_LIBRARY_PATH (its libdrm)
# Idempotent: does nothing when DIR/env exists. Exit 0 done; 4 when the packages cannot be had
# (no network to Debian's mirror), with the reason on stderr.
set -eu
dir=${1:?usage: scripts/mesa25.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[ -f "$dir/env" ] && exit 0
suite=bookworm-backports
mirror=${REPRISE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
apt=$dir/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc/preferences.d" "$dir/debs"
echo "deb $mirror $suite main" > "$apt/etc/sources.list"
set -- -o "Dir::Etc::SourceList=$apt/etc/sources.list" -o "Dir::Etc::SourceParts=/dev/null" \
    -o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d" \
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Debug::NoLocking=1" \
    -o "APT::Get::List-Cleanup=0"
if ! apt-get "$@" -qq update >"$dir/apt.log" 2>&1; then
    echo "mesa25: cannot read $suite from $mirror (see $dir/apt.log)" >&2
    exit 4
fi
for p in mesa-vulkan-drivers libdrm2 libdrm-amdgpu1; do
    v=$(apt-cache "$@" show "$p" 2>/dev/null | sed -n 's/^Version: //p' | grep '~bpo' | head -1)
    if [ -z "$v" ]; then
        echo "mesa25: $suite has no $p" >&2
        exit 4
    fi
    (cd "$dir/debs" && apt-get "$@" -qq download "$p=$v" >>"$dir/apt.log" 2>&1) || {
        echo "mesa25: downloading $p=$v failed (see $dir/apt.log)" >&2
        exit 4
    }
done
rm -rf "$dir/root"
for d in "$dir"/debs/*.deb; do
    dpkg-deb -x "$d" "$dir/root"
done
lib=$dir/root/usr/lib/x86_64-linux-gnu
[ -d "$lib" ] || lib=$(dirname "$(find "$dir/root" -name libvulkan_lvp.so | head -1)")
so=$lib/libvulkan_lvp.so
if [ ! -f "$so" ]; then
    echo "mesa25: no libvulkan_lvp.so in the extracted packages" >&2
    exit 4
fi
json=$(find "$dir/root" -name 'lvp_icd*.json' | head -1)
sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$so\"|" "$json" > "$dir/lvp_icd.json"
ver=$(ls "$dir"/debs/mesa-vulkan-drivers_* | sed 's/.*_\([^_]*\)_[^_]*\.deb/\1/')
cat > "$dir/env.tmp" <<EOT
# Mesa $ver lavapipe from $suite (scripts/mesa25.sh)
VK_ICD_FILENAMES=$dir/lvp_icd.json
VK_DRIVER_FILES=$dir/lvp_icd.json
LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export VK_ICD_FILENAMES VK_DRIVER_FILES LD_LIBRARY_PATH
EOT
mv "$dir/env.tmp" "$dir/env"
