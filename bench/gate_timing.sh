#!/bin/sh
# bench/gate_timing.sh — the timing gate of `reprise check` measured against known answers on
# the Vulkan device here (lavapipe): how often does it fail an unchanged workload (false
# failures), and how often does it catch, and name, one kernel made slower (power)?
#
#   bench/gate_timing.sh [BUILD [GATES [RUNS [BASE]]]]   (on a shared machine: under flock LOCKFILE)
#       BUILD  build directory (default build/default; `make bench` first, for spv_label)
#       GATES  gate runs of each kind (default 20)
#       RUNS   replays per gate, `check --runs` (default 5); auto: no --runs, as many as
#              check picks against the baseline
#       BASE   replays in the baseline (default 10)
#   Environment: SLOW (default 30) = --slow PCT of the slowed capture; SUBMITS (default 20);
#   THRESHOLD (default 10%) = --timing-threshold; QUANTILE (default 0.5) = --timing-quantile;
#   LP_NUM_THREADS as lavapipe reads it;
#   KEEP=DIR keeps the traces and reports there.
#
# Workload: tests/vk/vk_bench gate, 2,000 dispatches in 20 submissions (saxpy.comp alternating
# with bench.comp), captured with --timing twice: as is ("same") and with saxpy given SLOW%
# more loop iterations ("slow"; only saxpy's device time changes, its timing group does not).
# Then:
#   baseline   reprise check same.sbt --runs BASE --keep base          (the stored baseline)
#   gate k     reprise check same.sbt --runs RUNS --baseline base      (false failure: exit 1)
#   power k    reprise check slow.sbt --runs RUNS --baseline base      (caught: a regression
#                                                                       naming saxpy's group)
# same and slow gates alternate, so that drift in the machine's load hits both alike. Prints
# one line per gate and a summary; the JSON reports are kept with KEEP.
set -eu
BUILD=${1:-build/default}
GATES=${2:-20}
RUNS=${3:-5}
BASE=${4:-10}
SLOW=${SLOW:-30}
SUBMITS=${SUBMITS:-20}
THRESHOLD=${THRESHOLD:-10%}
QUANTILE=${QUANTILE:-0.5}
RUNS_ARG="--runs $RUNS"
[ "$RUNS" = auto ] && RUNS_ARG=
R=$(realpath "$BUILD/reprise")
B=$(realpath "$BUILD/tests/vk/vk_bench")
LABEL=$(realpath "$BUILD/bench/spv_label")
SAXPY=$("$LABEL" "$(dirname "$B")/saxpy.spv")
if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    T=$(realpath "$KEEP")
else
    T=$(mktemp -d /tmp/reprise-bench-gate-XXXXXX)
    trap 'rm -rf "$T"' EXIT
fi
cd "$T"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), LP_NUM_THREADS=${LP_NUM_THREADS:-unset}, quantile $QUANTILE"
"$R" capture --timing -o same.sbt -- "$B" gate --submits "$SUBMITS" >/dev/null
"$R" capture --timing -o slow.sbt -- "$B" gate --submits "$SUBMITS" --slow "$SLOW" >/dev/null
echo "workload: vk_bench gate --submits $SUBMITS ($("$R" info same.sbt | sed -n 's/^ops *\([0-9]*\).*/\1 ops/p')), slowed: --slow $SLOW; saxpy = $SAXPY"
rm -rf base
t0=$(date +%s)
"$R" check same.sbt --runs "$BASE" --keep base --timing-threshold "$THRESHOLD" -q 2>/dev/null
echo "baseline: $BASE replays in $(($(date +%s) - t0)) s"
k=1
while [ $k -le "$GATES" ]; do
    for kind in same slow; do
        set +e
        "$R" check $kind.sbt $RUNS_ARG --keep "g-$kind-$k" --baseline base \
            --timing-threshold "$THRESHOLD" --timing-quantile "$QUANTILE" --json "$kind-$k.json" \
            -q 2>/dev/null
        echo $? >"$kind-$k.rc"
        set -e
        rm -rf "g-$kind-$k"
    done
    k=$((k + 1))
done
echo "gates: done in $(($(date +%s) - t0)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$GATES" "$SAXPY" <<'EOF'
import json, sys
gates, saxpy = int(sys.argv[1]), sys.argv[2]
def row(kind, k):
    j = json.load(open(f"{kind}-{k}.json"))
    rc = int(open(f"{kind}-{k}.rc").read())
    regs = [g["name"] for g in j["kernels"] if g["verdict"] == "regression"]
    down = [g["name"] for g in j["kernels"] if g["verdict"] == "downstream"]
    sx = [g for g in j["kernels"] if saxpy in g["name"]][0]
    return rc, regs, sx, j, down
fails = caught = wrong = ng0 = ng1 = ndown = 0
nruns = set()
print("gate  same: exit saxpy effect [CI] p_adj | slow: exit saxpy effect [CI] p_adj  named")
for k in range(1, gates + 1):
    rc0, regs0, sx0, j0, d0 = row("same", k)
    rc1, regs1, sx1, j1, d1 = row("slow", k)
    ndown += len(d0) + len(d1)
    fails += rc0 != 0
    ng0 += j0["timing"].get("gate") == "not-gated"
    nruns |= {len(j0["runs"]), len(j1["runs"])}
    ng1 += j1["timing"].get("gate") == "not-gated"
    hit = any(saxpy in n for n in regs1)
    caught += hit and rc1 == 1
    wrong += sum(saxpy not in n for n in regs1) + len(regs0)
    f = lambda g: "%+6.1f%% [%+.1f%%..%+.1f%%] %.3g" % (
        100 * g["effect"], 100 * g["effect_ci"][0], 100 * g["effect_ci"][1], g["p_slower_adj"])
    nm = lambda n: n.split(" [")[0] + ("(saxpy)" if saxpy in n else "")
    print("%4d  %d %s | %d %s  %s%s" % (k, rc0, f(sx0), rc1, f(sx1), ",".join(map(nm, regs1)) or "-",
                                       " downstream: " + ",".join(map(nm, d1)) if d1 else ""))
t = j0["timing"]
print("runs per gate: %s" % ",".join(map(str, sorted(nruns))))
if "gate" in t:
    print("timing not gated: %d of %d unchanged gates, %d of %d slowed ones%s" %
          (ng0, gates, ng1, gates, " (%s)" % t["gate_reason"] if ng0 or ng1 else ""))
print("summary: false failures %d of %d; slowdown caught naming saxpy %d of %d; other groups named %d"
      "; downstream (named, not counted) %d" % (fails, gates, caught, gates, wrong, ndown))
print("test: %s; %d groups, Holm at %.2f, min effect %s, smallest attainable p %.3g" %
      (t["test"], t["tests"], t["alpha"], t["min_effect"], t["min_attainable_p"]))
EOF
