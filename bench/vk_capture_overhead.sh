#!/bin/sh
# bench/vk_capture_overhead.sh — wall-time cost of capturing a Vulkan compute program, reprise
# side by side with GFXReconstruct, and trace bytes per API call. Results go in bench/RESULTS.md
# ("## Vulkan capture").
#
# Workloads (tests/vk/vk_bench.c, built by `make`):
#   dispatch        20,000 small dispatches in 100 submissions (command buffer re-recorded each)
#   dispatch-reuse  the same, one recording submitted 100 times
#   data            4 dispatches over 64 MiB buffers, 64 MiB mapped upload and read-back each
#   sparse          the same buffers mapped, 100 rounds of 4 KiB written and read back
#   threads         2 threads, 16 MiB mapped each, 200 rounds of 16 KiB each on one queue
# Configurations, all in one hyperfine run per workload:
#   plain           the program alone
#   reprise         reprise capture -o T -- program (default: zstd level 3 chunks)
#   reprise-before  the same with another build's layer (BEFORE=dir holding reprise and the
#                   layer: a before/after comparison in the same run), when BEFORE is set
#   gfxr-lz4        GFXReconstruct's layer, default LZ4 compression
#   gfxr-none       GFXReconstruct's layer, uncompressed
#
# Usage: bench/vk_capture_overhead.sh [OUTDIR]   (env: BUILD=build/default RUNS=10 DATA_RUNS=5
#        BEFORE=, WORKLOADS="dispatch dispatch-reuse data sparse threads")
# Needs hyperfine (apt-get install hyperfine); gfxreconstruct is optional (apt-get install
# gfxreconstruct). Prints a markdown table per workload: median wall time, overhead against
# plain (median and min), CPU time (user+sys of the whole process tree: steadier than wall on
# a shared machine), trace bytes and bytes per API call (calls = capture.vulkan_calls, what our layer saw;
# GFXReconstruct sees the same calls).
set -eu
BUILD=${BUILD:-build/default}
RUNS=${RUNS:-10}
DATA_RUNS=${DATA_RUNS:-5}
WORKLOADS=${WORKLOADS:-"dispatch dispatch-reuse data sparse threads"}
OUT=${1:-$(mktemp -d /tmp/reprise-vkbench-XXXXXX)}
mkdir -p "$OUT"
R=$(cd "$BUILD" && pwd)/reprise
PROG=$(cd "$BUILD" && pwd)/tests/vk/vk_bench
for f in "$R" "$PROG"; do
    [ -x "$f" ] || { echo "missing $f: run make" >&2; exit 4; }
done
command -v hyperfine >/dev/null || { echo "hyperfine not found: apt-get install hyperfine" >&2; exit 4; }
GFXR_JSON=/usr/share/vulkan/explicit_layer.d/VkLayer_gfxreconstruct.json
have_gfxr=0
[ -f "$GFXR_JSON" ] && have_gfxr=1
[ $have_gfxr = 1 ] || echo "GFXReconstruct not installed (apt-get install gfxreconstruct): skipped" >&2
gfxr_env() { # $1 = LZ4 | NONE, $2 = file
    echo "env VK_INSTANCE_LAYERS=VK_LAYER_LUNARG_gfxreconstruct GFXRECON_CAPTURE_FILE=$2" \
        "GFXRECON_CAPTURE_FILE_TIMESTAMP=false GFXRECON_LOG_LEVEL=warning" \
        "GFXRECON_CAPTURE_COMPRESSION_TYPE=$1"
}

echo "# $(date -u +%F) $(uname -m), $(nproc) cores, $(vulkaninfo --summary 2>/dev/null | grep -m1 deviceName | sed 's/.*= //')"
echo "# hyperfine $(hyperfine --version | cut -d' ' -f2), $RUNS runs ($DATA_RUNS for data), 1 warm-up; output in $OUT"
for w in $WORKLOADS; do
    case $w in
    dispatch) args="dispatch"; runs=$RUNS ;;
    dispatch-reuse) args="dispatch --reuse"; runs=$RUNS ;;
    data) args="data"; runs=$DATA_RUNS ;;
    sparse) args="sparse"; runs=$RUNS ;;
    threads) args="threads"; runs=$RUNS ;;
    *) echo "unknown workload $w" >&2; exit 2 ;;
    esac
    set -- -n plain "$PROG $args" \
        -n reprise "$R capture -o $OUT/$w.sbt -- $PROG $args"
    if [ -n "${BEFORE:-}" ]; then
        set -- "$@" -n reprise-before "$BEFORE/reprise capture -o $OUT/$w-before.sbt -- $PROG $args"
    fi
    if [ $have_gfxr = 1 ]; then
        set -- "$@" -n gfxr-lz4 "$(gfxr_env LZ4 "$OUT/$w-lz4.gfxr") $PROG $args" \
            -n gfxr-none "$(gfxr_env NONE "$OUT/$w-none.gfxr") $PROG $args"
    fi
    hyperfine -N --warmup 1 --runs "$runs" --export-json "$OUT/$w.json" "$@" >"$OUT/$w.log" 2>&1 ||
        { cat "$OUT/$w.log" >&2; exit 1; }
    calls=$("$R" info "$OUT/$w.sbt" | awk '$1 == "capture.vulkan_calls" {print $2}')
    python3 - "$OUT" "$w" "$calls" <<'EOF'
import json, os, sys
out, w, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
res = json.load(open(f"{out}/{w}.json"))["results"]
base = next(r["median"] for r in res if r["command"] == "plain")
base_min = next(r["min"] for r in res if r["command"] == "plain")
cpu = lambda r: r["user"] + r["system"]
base_cpu = next(cpu(r) for r in res if r["command"] == "plain")
files = {"reprise": f"{w}.sbt", "reprise-before": f"{w}-before.sbt",
         "gfxr-lz4": f"{w}-lz4.gfxr", "gfxr-none": f"{w}-none.gfxr"}
print(f"\n### {w} ({calls} Vulkan calls)\n")
print("| configuration | median wall | min .. max | overhead (median) | overhead (min) |"
      " CPU user+sys (mean) | CPU overhead | trace bytes | bytes/call |")
print("|---|---|---|---|---|---|---|---|---|")
for r in res:
    n = r["command"]
    f = os.path.join(out, files.get(n, ""))
    size = os.path.getsize(f) if n in files and os.path.exists(f) else 0
    ovh = "" if n == "plain" else f"{(r['median'] / base - 1) * 100:+.1f}%"
    ovm = "" if n == "plain" else f"{(r['min'] / base_min - 1) * 100:+.1f}%"
    sz = f"{size} | {size / calls:.2f}" if size else " | "
    ovc = "" if n == "plain" else f"{(cpu(r) / base_cpu - 1) * 100:+.1f}%"
    print(f"| {n} | {r['median'] * 1000:.1f} ms | {r['min'] * 1000:.0f} .. {r['max'] * 1000:.0f}"
          f" ms | {ovh} | {ovm} | {cpu(r) * 1000:.0f} ms | {ovc} | {sz} |")
EOF
done
