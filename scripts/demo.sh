#!/bin/sh
# scripts/demo.sh BUILD_DIR — the README's main example, on a built-in workload.
# Today: a synthetic trace, inspected (info, view --stats), checked (validate), dry-run
# replayed, analysed and exported to Perfetto. Outputs go to ./out/demo/.
set -eu
B=${1:-build/default}
R="$B/reprise"
OUT=out/demo
mkdir -p "$OUT"
step() { printf '\n==> %s\n' "$*"; }

step "reprise gen: a synthetic 200k-op trace (2 devices x 4 streams, 2 host threads)"
"$R" gen -o "$OUT/synthetic.sbt" --ops 200k --seed 1
step "reprise info"
"$R" info "$OUT/synthetic.sbt"
step "reprise view --stats (top kernels)"
"$R" view --stats "$OUT/synthetic.sbt" | head -14
step "reprise validate"
"$R" validate "$OUT/synthetic.sbt"
step "reprise replay --mode dry-run (whole trace, then a 1 ms window and what it needs first)"
"$R" replay "$OUT/synthetic.sbt" --mode dry-run
"$R" replay "$OUT/synthetic.sbt" --mode dry-run --time-range 2s:2001ms
step "reprise analyze (top 8)"
"$R" analyze "$OUT/synthetic.sbt" --top 8
step "reprise export -f perfetto (a 50 ms window)"
"$R" export "$OUT/synthetic.sbt" -f perfetto --time-range 1s:1050ms -o "$OUT/synthetic.pftrace"
printf '\nDone. Open %s in https://ui.perfetto.dev\n' "$OUT/synthetic.pftrace"
