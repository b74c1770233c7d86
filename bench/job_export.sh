#!/bin/sh
# bench/job_export.sh — merging and exporting a job of many ranks (`reprise export JOB`):
# RANKS synthetic traces of OPS ops each (`reprise gen`, seeds 1..RANKS; kept in BENCH_DIR for
# the next run), exported as one Perfetto timeline to /dev/null, timed with /usr/bin/time -v.
# Peak memory must not grow with RANKS: one trace is open at a time (README "A job of 1,000
# ranks"). Usage: bench/job_export.sh [RANKS [OPS]] (defaults 64 and 1M); REPRISE names the
# binary (default build/default/reprise), BENCH_DIR the traces' directory (default /tmp).
set -eu
R=${REPRISE:-build/default/reprise}
N=${1:-64}
OPS=${2:-1M}
D=${BENCH_DIR:-/tmp}/reprise-bench-job-$N-$OPS
mkdir -p "$D"
i=0
while [ "$i" -lt "$N" ]; do
    [ -f "$D/r$i.sbt" ] || "$R" gen -o "$D/r$i.sbt" --ops "$OPS" --seed $((i + 1))
    i=$((i + 1))
done
echo "job: $N ranks x $OPS ops in $D ($(du -sh "$D" | cut -f1))"
/usr/bin/time -v "$R" export "$D" -f perfetto -o /dev/null 2>"$D.time" || { cat "$D.time"; exit 1; }
grep -E "wrote|Elapsed|User time|System time|Maximum resident" "$D.time"
