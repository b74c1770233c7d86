#!/bin/sh
# bench/vk_replay.sh — full Vulkan replay against the original program and against
# gfxrecon-replay on the same workloads, in one run; then a 1% range replay of a long trace
# against its full replay. Results go into bench/RESULTS.md ("## Vulkan replay") by hand.
#
#   bench/vk_replay.sh [BUILD]        (BUILD defaults to build/default; needs hyperfine and,
#                                      optionally, gfxreconstruct)
set -eu
BUILD=${1:-build/default}
R=$(realpath "$BUILD/reprise")
B=$(realpath "$BUILD/tests/vk/vk_bench")
T=$(mktemp -d /tmp/reprise-bench-replay-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T"
GFXR=0
[ -f /usr/share/vulkan/explicit_layer.d/VkLayer_gfxreconstruct.json ] && command -v gfxrecon-replay >/dev/null && GFXR=1

for w in "dispatch" "dispatch --reuse" "data"; do
    n=$(echo "$w" | tr -d ' -')
    "$R" capture -o "$n.sbt" -- "$B" $w >/dev/null 2>&1
    set -- -n original "$B $w" \
        -n "reprise replay (timing op)" "$R replay $n.sbt --mode full --verify end" \
        -n "reprise replay (timing none)" "$R replay $n.sbt --mode full --verify end --timing none"
    if [ $GFXR = 1 ]; then
        env VK_INSTANCE_LAYERS=VK_LAYER_LUNARG_gfxreconstruct GFXRECON_CAPTURE_FILE="$n.gfxr" \
            GFXRECON_CAPTURE_FILE_TIMESTAMP=false GFXRECON_LOG_LEVEL=warning "$B" $w >/dev/null
        set -- "$@" -n gfxrecon-replay "gfxrecon-replay --log-level warning $n.gfxr"
    fi
    echo "### vk_bench $w ($("$R" info "$n.sbt" | sed -n 's/^ops *\([0-9]*\).*/\1 ops/p'))"
    hyperfine -N -w 1 -r 5 --export-markdown "$n.md" "$@" >/dev/null 2>&1
    cat "$n.md"
    echo
done

# a long trace: vk_bench dispatch (20,000 dispatches in 100 submissions); a 1% range
"$R" capture -o long.sbt -- "$B" dispatch >/dev/null 2>&1
n_ops=$("$R" info long.sbt | sed -n 's/^ops *\([0-9]*\).*/\1/p')
a=$((n_ops / 2)); b=$((a + n_ops / 100))
echo "### 1% range (--ops $a:$b of $n_ops) vs full replay, --verify op"
"$R" replay long.sbt --mode full --verify op --ops $a:$b | grep -E "^(range|run|verify)"
hyperfine -N -w 1 -r 5 --export-markdown range.md \
    -n "full replay" "$R replay long.sbt --mode full --verify op" \
    -n "1% range" "$R replay long.sbt --mode full --verify op --ops $a:$b" >/dev/null 2>&1
cat range.md
