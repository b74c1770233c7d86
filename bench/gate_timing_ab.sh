#!/bin/sh
# bench/gate_timing_ab.sh — bench/gate_timing.sh for two builds at once, interleaved gate by
# gate, so that the machine's slow episodes (bench/RESULTS.md, "Timing gate") hit both alike:
# does a change to the checker fail unchanged workloads more often, or catch a slowdown less?
#
#   bench/gate_timing_ab.sh BUILD_A BUILD_B [GATES [RUNS [BASE]]]   (under flock LOCKFILE)
#       BUILD_A, BUILD_B  build directories (`make bench` in each, for spv_label)
#       GATES, RUNS, BASE as gate_timing.sh (defaults 20, 5, 10)
#   Environment: SLOW (default 30), SUBMITS (default 20), LP_NUM_THREADS as lavapipe reads it.
#
# Both builds replay the same two captures (made by BUILD_B). Each gates against a baseline of
# its own, made interleaved too (one replay of each build at a time); then per gate k: A same,
# B same, A slow, B slow (`check --runs RUNS --baseline`). Prints per build: false failures
# (and which gates), slowdowns caught naming saxpy, other groups named.
set -eu
A=$(realpath "$1")
B=$(realpath "$2")
GATES=${3:-20}
RUNS=${4:-5}
BASE=${5:-10}
SLOW=${SLOW:-30}
SUBMITS=${SUBMITS:-20}
SAXPY=$("$B/bench/spv_label" "$B/tests/vk/saxpy.spv")
T=$(mktemp -d /tmp/reprise-bench-gate-ab-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), LP_NUM_THREADS=${LP_NUM_THREADS:-unset}, SLOW=$SLOW"
"$B/reprise" capture --timing -o same.sbt -- "$B/tests/vk/vk_bench" gate --submits "$SUBMITS" >/dev/null
"$B/reprise" capture --timing -o slow.sbt -- "$B/tests/vk/vk_bench" gate --submits "$SUBMITS" \
    --slow "$SLOW" >/dev/null
mkdir base-a base-b
i=1
while [ $i -le "$BASE" ]; do
    for x in a b; do
        d=$A
        [ $x = b ] && d=$B
        "$d/reprise" check same.sbt --runs 1 --keep one -q >/dev/null 2>&1 || :
        mv one/run1.sbt "base-$x/r$i.sbt"
        rm -rf one
    done
    i=$((i + 1))
done
k=1
while [ "$k" -le "$GATES" ]; do
    for kind in same slow; do
        for x in a b; do
            d=$A
            [ $x = b ] && d=$B
            set +e
            "$d/reprise" check $kind.sbt --runs "$RUNS" --keep g --baseline "base-$x" \
                --json "$x-$kind-$k.json" -q >/dev/null 2>&1
            echo $? >"$x-$kind-$k.rc"
            set -e
            rm -rf g
        done
    done
    k=$((k + 1))
done
echo "gates: done, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$GATES" "$SAXPY" "$A" "$B" <<'PY'
import json, sys
gates, sx = int(sys.argv[1]), sys.argv[2]
for x, name in (("a", sys.argv[3]), ("b", sys.argv[4])):
    ff, caught, other, which = 0, 0, 0, []
    for k in range(1, gates + 1):
        r0, r1 = (int(open(f"{x}-{kind}-{k}.rc").read()) for kind in ("same", "slow"))
        j0, j1 = (json.load(open(f"{x}-{kind}-{k}.json")) for kind in ("same", "slow"))
        regs0 = [g["name"] for g in j0["kernels"] if g["verdict"] == "regression"]
        regs1 = [g["name"] for g in j1["kernels"] if g["verdict"] == "regression"]
        ff += r0 != 0
        which += [k] if r0 else []
        caught += r1 == 1 and any(sx in n for n in regs1)
        other += len(regs0) + sum(sx not in n for n in regs1)
    print("%s: false failures %d of %d %s; slowdown caught naming saxpy %d of %d; other groups named %d"
          % (name, ff, gates, which or "", caught, gates, other))
PY
