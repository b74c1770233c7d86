#!/bin/sh
# scripts/vulkan-headers.sh DIR — the Vulkan headers and registry (vk.xml) reprise builds with:
# libvulkan-dev of Debian 13 (trixie, 1.4.x), unpacked under DIR by scripts/debfetch.sh, not
# installed; the Makefile uses DIR/root/usr/include and DIR/root/usr/share/vulkan/registry/vk.xml
# when they are there, else the system's (Debian 12: 1.3.239).
#
# Why: the capture layer and replay are generated from the registry, and what they can name is
# what the registry describes. Programs and drivers of today go past 1.3.239: Dawn enables
# VkPhysicalDeviceShaderMaximalReconvergenceFeaturesKHR and VK_KHR_maintenance5 on Mesa 25;
# with 1.3.239 those would be structures and commands reprise cannot record. Only headers and
# data are taken: the loader (libvulkan1) stays Debian 12's.
# With them, spirv-headers of the same suite under DIR/spirv (the SPIR-V grammar: the numbers
# of the SPIR-V capabilities vk.xml ties to device features, so that replay can tell a feature
# no shader of a trace uses; without it, every feature a trace enabled stays required).
# Idempotent. Exit 0 done (also without spirv-headers, saying so); 4 when libvulkan-dev cannot
# be had.
set -eu
dir=${1:?usage: scripts/vulkan-headers.sh DIR}
if ! [ -f "$dir/root/usr/share/vulkan/registry/vk.xml" ] || ! [ -f "$dir/root/usr/include/vulkan/vulkan_core.h" ]; then
    "$(dirname "$0")/debfetch.sh" trixie "$dir" libvulkan-dev
fi
# without the grammar the build still works: replay then leaves no unused feature off
if ! [ -f "$dir/spirv/root/usr/include/spirv/unified1/spirv.core.grammar.json" ] &&
    ! "$(dirname "$0")/debfetch.sh" trixie "$dir/spirv" spirv-headers; then
    echo "vulkan-headers: no SPIR-V grammar (spirv-headers): replay will refuse every missing feature" >&2
fi
