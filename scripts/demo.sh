#!/bin/sh
# scripts/demo.sh BUILD_DIR — the README's main example, on built-in workloads.
#
# 1. Capture a Vulkan compute program (tests/vk/vk_compute: uploads, fills, copies, dispatches
#    incl. indirect, events, timeline semaphores, read-backs) on the Vulkan driver found here
#    (Mesa's lavapipe on a machine without a GPU), inspect and validate the trace.
# 2. Dry-run it (dependency graph, validation, prediction), replay it for real with every op's
#    outputs verified, and check it: 3 replays must agree bit for bit with each other and with
#    what the program read back (passes).
# 3. Check a workload with a deliberate cross-workgroup data race (tests/vk/racy): the gate
#    fails and names the racy dispatch as the first divergence.
# 4. Perfetto: the capture's timeline and the diffs of both checks.
# Outputs go to ./out/demo/.
set -eu
B=${1:-build/default}
R="$B/reprise"
OUT=out/demo
mkdir -p "$OUT"
rm -f "$OUT"/*.sbt "$OUT"/*.pftrace "$OUT"/*.xml
step() { printf '\n==> %s\n' "$*"; }

step "reprise devices"
"$R" devices || true

step "reprise capture: run a Vulkan compute program under the capture layer"
"$R" capture -o "$OUT/compute.sbt" -- "$B/tests/vk/vk_compute"
step "reprise info"
"$R" info "$OUT/compute.sbt"
step "reprise validate"
"$R" validate "$OUT/compute.sbt"
step "reprise view --stats"
"$R" view --stats "$OUT/compute.sbt"

step "reprise replay --mode dry-run: is it replayable, and what would it cost?"
"$R" replay "$OUT/compute.sbt" --mode dry-run
step "reprise replay --mode full --verify op: on the device, every op's outputs checked"
"$R" replay "$OUT/compute.sbt" --mode full --verify op -o "$OUT/compute-replay.sbt"

step "reprise check: 3 replays must agree with each other and with the capture (passes)"
"$R" check "$OUT/compute.sbt" --runs 3 --perfetto "$OUT/compute-check.pftrace" \
    --junit "$OUT/compute-check.xml"

if [ -x "$B/tests/vk/racy" ]; then
    step "reprise check on a workload with a data race between workgroups (fails, exit 1)"
    # lavapipe runs workgroups on LP_NUM_THREADS threads (none on a 1-CPU machine): ask for 4
    # so the race is real wherever the demo runs
    LP_NUM_THREADS=4 "$R" capture --digests -o "$OUT/racy.sbt" -- "$B/tests/vk/racy"
    set +e
    LP_NUM_THREADS=4 "$R" check "$OUT/racy.sbt" --runs 3 --perfetto "$OUT/racy-check.pftrace" \
        --junit "$OUT/racy-check.xml"
    rc=$?
    set -e
    echo "(reprise check exited with $rc: 1 means the gate failed, as it should here)"
fi

step "reprise export -f perfetto: the captured timeline"
"$R" export "$OUT/compute.sbt" -f perfetto -o "$OUT/compute.pftrace"

step "the same on a long synthetic trace: 200k ops, a 1 ms window's backward slice"
"$R" gen -o "$OUT/synthetic.sbt" --ops 200k --seed 1
"$R" replay "$OUT/synthetic.sbt" --mode dry-run --time-range 2s:2001ms

printf '\nDone. Open these in https://ui.perfetto.dev :\n'
for f in compute.pftrace compute-check.pftrace racy-check.pftrace; do
    [ -f "$OUT/$f" ] && printf '  %s\n' "$OUT/$f"
done
printf 'JUnit reports for CI: %s\n' "$(ls "$OUT"/*.xml | tr '\n' ' ')"
