#!/bin/sh
# scripts/dist.sh BUILD DEST — assembles the self-contained tree `make dist` ships: the build
# BUILD (made with the run path of the tree, see the Makefile's dist section) copied into DEST
# in the installed layout, with every shared library its programs need that a bare machine may
# lack carried in DEST/lib/reprise, found with ldd. Then checks the tree: every library any of
# its programs needs resolves inside DEST or is one of glibc's or the compiler's run-time
# libraries, which every Debian 12 root has (exit 1 naming the program and the library if not).
#
#   DEST/bin/reprise                       the CLI (run path $ORIGIN/../lib/reprise)
#   DEST/lib/reprise/                      the Vulkan layer, the CUDA shim (cuda/libcuda.so.1),
#                                          carried libraries (zstd, xxhash, protobuf-c, the
#                                          Vulkan loader), and vk-fallback/ (libraries the NVIDIA
#                                          Vulkan driver needs that a bare machine may lack; put
#                                          on LD_LIBRARY_PATH only when missing)
#   DEST/share/vulkan/explicit_layer.d/    the layer manifest (a path relative to itself)
#   DEST/lib/reprise/tests/                the test programs scripts/gpu-check.sh runs, with the
#                                          test-only fake CUDA driver for its rehearsal
#   DEST/share/reprise/                    sources built on the GPU machine (tests/gpu), README
#   DEST/scripts/gpu-check.sh              the GPU check
set -eu
B=$1
mkdir -p "$2" && D=$(cd "$2" && pwd) || exit 1
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$D"
mkdir -p "$D/bin" "$D/lib/reprise/cuda" "$D/lib/reprise/vk-fallback" "$D/lib/reprise/tests/vk" \
    "$D/lib/reprise/tests/cuda/fake" "$D/share/vulkan/explicit_layer.d" "$D/share/reprise" \
    "$D/scripts"

cp "$B/reprise" "$D/bin/"
cp "$B/libVkLayer_reprise_capture.so" "$B/libreprise_cuda.so" "$D/lib/reprise/"
ln -s ../libreprise_cuda.so "$D/lib/reprise/cuda/libcuda.so.1"
sed 's|@LIBRARY_PATH@|../../../lib/reprise/libVkLayer_reprise_capture.so|' \
    "$src/capture/vk/VK_LAYER_REPRISE_capture.json.in" \
    > "$D/share/vulkan/explicit_layer.d/VK_LAYER_REPRISE_capture.json"
# test programs: every Vulkan one with its shaders, VkFFT where it was built, the CUDA ones
for f in "$B"/tests/vk/*; do
    case $f in *.d | *.o | *.json | */libVkLayer_*) continue ;; esac
    cp "$f" "$D/lib/reprise/tests/vk/"
done
if [ -x "$B/tests/vk3p/vk_fft" ]; then
    mkdir -p "$D/lib/reprise/tests/vk3p"
    cp "$B/tests/vk3p/vk_fft" "$D/lib/reprise/tests/vk3p/"
fi
for f in "$B"/tests/cuda/prog_*; do
    case $f in *.d) continue ;; esac
    cp "$f" "$D/lib/reprise/tests/cuda/"
done
cp "$B/tests/cuda/fake/libcuda.so.1" "$D/lib/reprise/tests/cuda/fake/"
cp "$src"/tests/gpu/* "$D/share/reprise/"
cp "$src/README.md" "$src/FORMAT.md" "$D/share/reprise/"
cp -p "$src/scripts/gpu-check.sh" "$D/scripts/"

# carried libraries: what ldd resolves outside the tree, but glibc's and the compiler's
base='^(linux-vdso|libc|libm|libdl|libpthread|librt|libresolv|ld-linux-x86-64|libgcc_s|libstdc\+\+)\.so'
elves() { find "$D" -type f \( -perm -u+x -o -name '*.so*' \) | while read -r f; do
    head -c 4 "$f" | grep -q ELF && echo "$f"; done; }
for f in $(elves); do
    ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
        echo "$name" | grep -Eq "$base" && continue
        case $path in "$D"/*) continue ;; esac
        case $name in libcuda.so.1) continue ;; esac # the driver: the machine's own, or the fake
        [ -e "$D/lib/reprise/$name" ] || cp -L "$path" "$D/lib/reprise/$name"
    done
done
# The NVIDIA Vulkan driver (libGLX_nvidia.so.0) needs libglvnd (libGLdispatch at least), which
# a bare machine without GL packages lacks: its libraries, for gpu-check.sh to add where missing
for l in libGLdispatch.so.0 libGLX.so.0 libEGL.so.1 libOpenGL.so.0 libGL.so.1 libGLESv2.so.2; do
    p=$(ldconfig -p | awk -v n="$l" '$1 == n && $NF ~ /^\// {print $NF; exit}')
    if [ -n "$p" ]; then cp -L "$p" "$D/lib/reprise/vk-fallback/"; else
        echo "dist: $l not found here (apt-get install libglvnd0 libglx0 libegl1 libopengl0 libgl1 libgles2); the tree will lack it" >&2; fi
done

# the check: nothing resolves outside the tree but the base libraries
bad=0
for f in $(elves); do
    case $f in */vk-fallback/*) continue ;; esac
    out=$(ldd "$f" 2>&1) || continue # not dynamic
    echo "$out" | awk '$2 == "=>" {print $1, $3}' | while read -r name path; do
        echo "$name" | grep -Eq "$base" && continue
        case $name in libcuda.so.1) continue ;; esac
        case $path in "$D"/*) ;; *) echo "dist: ${f#"$D"/} needs $name, found at $path, outside the tree" >&2
            exit 1 ;; esac
    done || bad=1
done
[ $bad = 0 ] || exit 1
echo "dist: $D ($(du -sh "$D" | cut -f1))"
