#!/bin/sh
# bench/vk_snapshot.sh — range replay from snapshots and `reprise trim` (bench/RESULTS.md,
# "Range replay from snapshots"). Per workload (vk_bench train, vk_bench dispatch):
#   1. capture it; a full replay with --snapshot-every 1% of its ops writes the sidecar;
#   2. hyperfine, interleaved in one run: the full replay and the 1% range in the middle at
#      --verify op, the range with its snapshot and without (--no-snapshots);
#   3. outputs: --dump of the full replay, of the range replay and of the trimmed trace replayed
#      on its own; the sha256 of every range op's dump must be equal in all three;
#   4. the trimmed trace's size against the original's.
# On a shared machine, run it under `flock LOCKFILE` (a lock file every benchmark there takes).
#
#   bench/vk_snapshot.sh [BUILD] [RUNS]   (BUILD defaults to build/default, RUNS to 5; needs
#                                          hyperfine)
set -eu
BUILD=${1:-build/default}
RUNS=${2:-5}
R=$(realpath "$BUILD/reprise")
B=$(realpath "$BUILD/tests/vk/vk_bench")
T=$(mktemp -d /tmp/reprise-bench-snapshot-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T"

for w in train dispatch; do
    "$R" capture -o "$w.sbt" -- "$B" $w >/dev/null 2>&1
    n=$("$R" info "$w.sbt" | sed -n 's/^ops *\([0-9]*\).*/\1/p')
    a=$((n / 2)); b=$((a + n / 100)); every=$((n / 100))
    echo "### vk_bench $w: $n ops, $(du -k "$w.sbt" | cut -f1) KiB; range --ops $a:$b (1%), snapshots every $every ops"
    "$R" replay "$w.sbt" --mode full --verify op --snapshot-every $every --dump full.d | grep -E "^(snapshots|run)"
    echo "sidecar $(du -k "$w.snap.sbt" | cut -f1) KiB"
    "$R" replay "$w.sbt" --ops $a:$b | grep -E "^(range|slice|restore)"
    hyperfine -N -w 1 -r "$RUNS" --export-markdown "$w.md" \
        -n "full replay" "$R replay $w.sbt --mode full --verify op" \
        -n "1% range, snapshot" "$R replay $w.sbt --mode full --verify op --ops $a:$b" \
        -n "1% range, slice" "$R replay $w.sbt --mode full --verify op --ops $a:$b --no-snapshots" \
        >/dev/null 2>&1
    cat "$w.md"
    "$R" replay "$w.sbt" --mode full --verify op --ops $a:$b --dump range.d | grep -E "^(range|restore|run)"
    "$R" trim "$w.sbt" --ops $a:$b -o small.sbt
    "$R" replay small.sbt --mode full --verify op --dump small.d | grep -E "^(run|verify)"
    same=0; differ=0
    for f in range.d/*.bin; do
        s=$(basename "$f")
        h1=$(sha256sum < "full.d/$s"); h2=$(sha256sum < "$f"); h3=$(sha256sum < "small.d/$s")
        if [ "$h1" = "$h2" ] && [ "$h1" = "$h3" ]; then same=$((same + 1)); else differ=$((differ + 1)); fi
    done
    echo "outputs: $same range ops with equal sha256 in the full replay, the range replay and the trimmed trace; $differ differ"
    echo "trimmed: $(stat -c %s small.sbt) bytes of $(stat -c %s "$w.sbt") ($(( 1000 * $(stat -c %s small.sbt) / $(stat -c %s "$w.sbt") )) per mille)"
    rm -rf full.d range.d small.d
    echo
done
