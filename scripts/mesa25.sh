#!/bin/sh
# scripts/mesa25.sh DIR — a second Vulkan driver for the tests: lavapipe from Mesa 25
# (Debian's bookworm-backports), unpacked under DIR by scripts/debfetch.sh, never installed over
# the system's Mesa.
#
# Why: Dawn (WebGPU, tests/webgpu) needs features Debian 12's lavapipe (Mesa 22.3) lacks
# ("shaderUniform*ArrayDynamicIndexing required"), and a driver-upgrade gate needs two drivers:
# capture on the system's Mesa 22.3, replay and `reprise check` on Mesa 25.
#
# Writes DIR/lvp_icd.json naming the extracted libvulkan_lvp.so and DIR/env, shell assignments
# that select it:
#     . DIR/env    # VK_ICD_FILENAMES / VK_DRIVER_FILES (only this driver), LD_LIBRARY_PATH
# Idempotent: does nothing when DIR/env exists. Exit 0 done; 4 when the packages cannot be had.
set -eu
dir=${1:?usage: scripts/mesa25.sh DIR}
[ -f "$dir/env" ] && exit 0
"$(dirname "$0")/debfetch.sh" bookworm-backports "$dir" mesa-vulkan-drivers libdrm2 libdrm-amdgpu1
dir=$(cd "$dir" && pwd)
so=$(find "$dir/root" -name libvulkan_lvp.so | head -1)
json=$(find "$dir/root" -name 'lvp_icd*.json' | head -1)
if [ -z "$so" ] || [ -z "$json" ]; then
    echo "mesa25: no libvulkan_lvp.so or lvp_icd.json in the extracted packages" >&2
    exit 4
fi
lib=$(dirname "$so")
sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$so\"|" "$json" > "$dir/lvp_icd.json"
ver=$(ls "$dir"/debs/mesa-vulkan-drivers_* | sed 's/.*_\([^_]*\)_[^_]*\.deb/\1/')
cat > "$dir/env.tmp" <<EOT
# Mesa $ver lavapipe from bookworm-backports (scripts/mesa25.sh)
VK_ICD_FILENAMES=$dir/lvp_icd.json
VK_DRIVER_FILES=$dir/lvp_icd.json
LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export VK_ICD_FILENAMES VK_DRIVER_FILES LD_LIBRARY_PATH
EOT
mv "$dir/env.tmp" "$dir/env"
