#!/bin/bash
# scripts/gpu-check.sh OUTDIR — every GPU path of reprise in one command, run from the tree
# `make dist` makes (DIST/scripts/gpu-check.sh) on a machine with a GPU: no network, no package
# manager, nothing but the tree and the machine's driver. Each step has its own time limit, a
# failure never stops the rest, and OUTDIR/report.md says what ran, what passed and why not;
# beside it each command's output (NN-name.log) and each trace's `reprise info` (NN-name.info).
#
# Steps: 1. `reprise devices`. 2. CUDA: the suite's PTX program (capture, replay --verify op,
# check --runs 2); tests/gpu/streams.cu built here with nvcc when there is one (streams, events,
# async copies, pinned memory, a graph launched twice); tests/gpu/torch_step.py (a training
# step) and torch_graph.py (a CUDA graph replayed) when python3 has torch with a device. Each
# program's output under capture must equal its plain output; the cuGetProcAddress answers
# are logged and summed up (which entry points, which identified).
# 3. Vulkan on the machine's driver (the NVIDIA ICD found where the driver puts it): the suite's
# Vulkan programs captured, replayed and checked. 4. Timings: original, captured and full replay
# of one CUDA and one Vulkan workload, interleaved, with their ratios.
#
# Rehearsal (no GPU): with GPU_CHECK_FAKE_CUDA=1 and no CUDA driver of the machine's own, the
# CUDA steps use the tree's test-only fake driver and its program prog_saxpy (PTX, nvcc and
# PyTorch then skip, saying why); Vulkan runs on whatever driver the loader finds (lavapipe).
# Environment: GPU_CHECK_BUDGET (seconds for the whole run, default 450: a step that would
# not fit is skipped, saying so), GPU_CHECK_ROUNDS (timing rounds, default 3).
# Exit status: 0 when every step that ran passed, 1 when one failed, 2 on a usage error.
set -u
if [ $# -ne 1 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: scripts/gpu-check.sh OUTDIR (run from the tree make dist makes)" >&2
    exit 2
fi
T=$(cd "$(dirname "$0")/.." && pwd)
R="$T/bin/reprise"
P="$T/lib/reprise/tests"
if [ ! -x "$R" ]; then
    echo "gpu-check: $R not found: run this script from the tree make dist makes" >&2
    exit 2
fi
mkdir -p "$1" || exit 2
O=$(cd "$1" && pwd)
REPORT="$O/report.md"
BUDGET=${GPU_CHECK_BUDGET:-450}
ROUNDS=${GPU_CHECK_ROUNDS:-3}
START=$(date +%s)
N=0
FAILED=0
: > "$O/results.tsv"

# ---- helpers ------------------------------------------------------------------------------------
now() { date +%s.%N; }
left() { echo $((BUDGET - ($(date +%s) - START))); }
# note RESULT NAME SECONDS WHAT: one line of the results table
note() {
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$O/results.tsv"
    printf 'gpu-check: %-5s %-34s %6ss  %s\n' "$1" "$2" "$3" "$4" >&2
    [ "$1" = FAIL ] && FAILED=1
    return 0
}
# run NAME LIMIT CMD...: CMD under `timeout LIMIT`, its output in NN-NAME.log; sets RC, SECS
# and LOG. A step that would not fit in what is left of the budget is not started (RC=125).
run() {
    local name=$1 limit=$2
    shift 2
    N=$((N + 1))
    LOG="$O/$(printf '%02d' $N)-$name.log"
    if [ "$(left)" -lt "$limit" ]; then
        RC=125
        SECS=0
        echo "not started: $limit s needed, $(left) s of the budget left" > "$LOG"
        return
    fi
    printf '$ %s\n' "$*" > "$LOG.cmd"
    local t0
    t0=$(now)
    timeout -k 5 "$limit" "$@" > "$LOG" 2>&1
    RC=$?
    SECS=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
    cat "$LOG.cmd" "$LOG" > "$LOG.tmp" && mv "$LOG.tmp" "$LOG"
    rm -f "$LOG.cmd"
    [ $RC = 124 ] || [ $RC = 137 ] && echo "(killed at its time limit, $limit s)" >> "$LOG"
    return 0
}
why() { # the reason of a failed step: its exit status and its last meaningful line
    local last
    last=$(grep -v '^\$ ' "$LOG" | grep -v '^[[:space:]]*$' | tail -n 1 | cut -c1-160)
    case $RC in
    124 | 137) echo "timed out (limit reached); ${last}" ;;
    125) echo "skipped: $(cat "$LOG")" ;;
    *) echo "exit $RC: ${last}" ;;
    esac
}
# capture_cycle NAME API CAPLIMIT REPLAYLIMIT CMD...: the program plain, then under capture
# (outputs compared), its trace's info, a full replay at --verify op, and check --runs 2.
# Leaves TRACE set, and REPLAYED to the replay's exit status ("none": not replayed). Each part
# is one line of the report.
capture_cycle() {
    local name=$1 api=$2 climit=$3 rlimit=$4
    shift 4
    REPLAYED=none
    TRACE="$O/$name.sbt"
    rm -f "$TRACE"
    run "$name-plain" "$climit" "$@"
    local plain_log=$LOG plain_rc=$RC
    if [ $RC != 0 ]; then
        note FAIL "$name: plain run" "$SECS" "$(why)"
        return
    fi
    note PASS "$name: plain run" "$SECS" "$(grep -v '^\$ ' "$LOG" | tail -n 1 | cut -c1-100)"
    run "$name-capture" "$climit" env REPRISE_CUDA_PROCLOG="$O/$name.proclog" \
        "$R" capture --api "$api" -o "$TRACE" -- "$@"
    local cap_log=$LOG
    if [ $RC != "$plain_rc" ]; then
        note FAIL "$name: capture" "$SECS" "$(why)"
    else
        # the program's own output (the capture's summary lines start with "reprise")
        if diff <(grep -v '^\$ ' "$plain_log" | grep -v '^reprise') \
            <(grep -v '^\$ ' "$cap_log" | grep -v '^reprise') > "$O/$name.outdiff"; then
            note PASS "$name: capture" "$SECS" "output unchanged; $(grep -m1 '^reprise capture' "$cap_log" | cut -c1-110)"
            rm -f "$O/$name.outdiff"
        else
            note FAIL "$name: capture" "$SECS" "the program printed something else under capture ($name.outdiff)"
        fi
    fi
    [ -f "$TRACE" ] || { note FAIL "$name: trace" 0 "no trace written"; return; }
    "$R" info "$TRACE" > "$O/$name.info" 2>&1
    if [ -s "$O/$name.proclog" ]; then
        local total unid
        total=$(awk '{print $1}' "$O/$name.proclog" | sort -u | wc -l)
        unid=$(awk '$4 == "unidentified" {print $1}' "$O/$name.proclog" | sort -u)
        note INFO "$name: cuGetProcAddress" 0 "$total names resolved, $(echo "$unid" | grep -c .) unidentified${unid:+: $(echo $unid | cut -c1-200)}"
    fi
    run "$name-replay" "$rlimit" "$R" replay "$TRACE" --mode full --verify op
    REPLAYED=$RC
    if [ $RC = 4 ]; then # environment: the device lacks what the trace needs
        note SKIP "$name: replay, check" "$SECS" "this device cannot replay it: $(why)"
        return
    elif [ $RC = 0 ]; then
        note PASS "$name: replay --verify op" "$SECS" "$(grep -m1 'digests' "$LOG" | cut -c1-110)"
    else
        note FAIL "$name: replay --verify op" "$SECS" "$(why)"
    fi
    run "$name-check" "$rlimit" "$R" check "$TRACE" --runs 2
    if [ $RC = 0 ]; then
        note PASS "$name: check --runs 2" "$SECS" "$(grep -Em1 'PASS|verdict' "$LOG" | cut -c1-110)"
    else
        note FAIL "$name: check --runs 2" "$SECS" "$(why)"
    fi
}

# timing NAME API CMD...: median of original, captured and full-replay wall times, rounds interleaved
timing() {
    local name=$1 api=$2 orig cap rep i t0
    shift 2
    orig=() cap=() rep=()
    local tr="$O/timing-$name.sbt"
    for i in $(seq 1 "$ROUNDS"); do
        run "time-$name-orig-$i" 60 "$@" || true
        [ $RC = 0 ] || { note FAIL "timing $name" "$SECS" "original run: $(why)"; return; }
        orig+=("$SECS")
        run "time-$name-capture-$i" 60 "$R" capture --api "$api" -o "$tr" -- "$@"
        [ $RC = 0 ] || { note FAIL "timing $name" "$SECS" "capture: $(why)"; return; }
        cap+=("$SECS")
        run "time-$name-replay-$i" 90 "$R" replay "$tr" --mode full --verify none
        [ $RC = 0 ] || { note FAIL "timing $name" "$SECS" "replay: $(why)"; return; }
        rep+=("$SECS")
    done
    med() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
    local mo mc mr
    mo=$(med "${orig[@]}") mc=$(med "${cap[@]}") mr=$(med "${rep[@]}")
    note INFO "timing $name" 0 "$(awk -v o="$mo" -v c="$mc" -v r="$mr" -v n="$ROUNDS" 'BEGIN {
        printf "median of %d interleaved rounds (wall, process start included): original %.3f s, captured %.3f s (x%.2f), full replay %.3f s (x%.2f)", n, o, c, c / (o > 0 ? o : 1e-9), r, r / (o > 0 ? o : 1e-9) }')"
}
# ---- the environment ------------------------------------------------------------------------------
{
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(uname -srm)"
    echo "tree: $T"
    "$R" --version 2>&1 | head -n 1
    command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
        --format=csv,noheader 2>&1
    command -v nvcc > /dev/null && nvcc --version 2>&1 | tail -n 2 | head -n 1
    ldconfig -p 2>/dev/null | grep -E 'libcuda\.so\.1|libvulkan\.so\.1|libGLdispatch\.so\.0|libGLX_nvidia' |
        sed 's/^/ldconfig: /'
} > "$O/environment.txt" 2>&1

# The Vulkan driver: the NVIDIA ICD where the driver puts it, unless VK_DRIVER_FILES or
# VK_ICD_FILENAMES already names one. libglvnd's libraries (the tree's vk-fallback) only when
# the machine lacks one of them.
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
    for d in /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/share/vulkan/icd.d \
        /usr/local/nvidia/share/vulkan/icd.d /usr/local/nvidia/icd.d; do
        for f in "$d"/nvidia*.json; do
            [ -f "$f" ] && { export VK_DRIVER_FILES=$f; break 2; }
        done
    done
fi
echo "vulkan driver: ${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-default search of the Vulkan loader}}" >> "$O/environment.txt"
for l in "$T"/lib/reprise/vk-fallback/*; do
    if ! ldconfig -p 2>/dev/null | grep -q " ${l##*/} "; then
        export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$T/lib/reprise/vk-fallback"
        echo "libglvnd: the tree's (lib/reprise/vk-fallback): this machine lacks ${l##*/}" >> "$O/environment.txt"
        break
    fi
done

# The CUDA driver: the machine's own, else (rehearsal) the tree's fake
CUDA_MODE=none
REAL_CUDA=$(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" && $NF ~ /^\// {print $NF; exit}')
if [ -z "$REAL_CUDA" ] && [ -e /usr/local/nvidia/lib64/libcuda.so.1 ]; then
    REAL_CUDA=/usr/local/nvidia/lib64/libcuda.so.1
fi
if [ -n "$REAL_CUDA" ]; then
    CUDA_MODE=real
elif [ "${GPU_CHECK_FAKE_CUDA:-0}" = 1 ]; then
    CUDA_MODE=fake
    export REPRISE_CUDA_DRIVER="$P/cuda/fake/libcuda.so.1"
fi
echo "cuda driver: $CUDA_MODE ${REAL_CUDA:-${REPRISE_CUDA_DRIVER:-}}" >> "$O/environment.txt"
cat "$O/environment.txt" >&2

# ---- 1. devices ---------------------------------------------------------------------------------
run devices 30 "$R" devices
if [ $RC = 0 ]; then
    note PASS "devices" "$SECS" "$(grep -c . "$LOG") lines ($(basename "$LOG"))"
else
    note FAIL "devices" "$SECS" "$(why)"
fi
cp "$LOG" "$O/devices.txt" 2>/dev/null
if grep -q '^vulkan  *none' "$O/devices.txt"; then
    # what the Vulkan loader tried, for the report
    run vulkan-loader 30 env VK_LOADER_DEBUG=error,warn,driver "$R" devices
    note INFO "vulkan: no instance" "$SECS" "loader log $(basename "$LOG"): $(grep -iE 'error|fail' "$LOG" | tail -n 2 | tr '\n' ' ' | cut -c1-200)"
    vdf=${VK_DRIVER_FILES:-}
    for icd in ${vdf//:/ }; do
        [ -f "$icd" ] && { echo "== $icd"; cat "$icd"; lib=$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$icd");
            echo "== ldd $lib"; ldd "$(ldconfig -p | awk -v n="$lib" '$1 == n {print $NF; exit}')" 2>&1 || ldd "$lib"; }
    done >> "$LOG" 2>&1
fi

# ---- 2. CUDA --------------------------------------------------------------------------------------
NVCC=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
CUDA_TIMED=""
case $CUDA_MODE in
real)
    capture_cycle cuda-ptx cuda 60 90 "$P/cuda/prog_ptx"
    CUDA_TIMED="$P/cuda/prog_ptx"
    if [ -n "$NVCC" ]; then
        run nvcc-build 120 "$NVCC" -O2 -arch=native -o "$O/streams" "$T/share/reprise/streams.cu"
        [ $RC = 0 ] || run nvcc-build-default 120 "$NVCC" -O2 -o "$O/streams" "$T/share/reprise/streams.cu"
        if [ $RC = 0 ]; then
            note PASS "cuda-streams: nvcc" "$SECS" "$("$NVCC" --version | tail -n 2 | head -n 1 | cut -c1-80)"
            capture_cycle cuda-streams cuda 60 90 "$O/streams"
            [ "$REPLAYED" = 0 ] && CUDA_TIMED="$O/streams"
        else
            note FAIL "cuda-streams: nvcc" "$SECS" "$(why)"
        fi
    else
        note SKIP "cuda-streams" 0 "no nvcc on this machine"
    fi
    TORCH=1 # after Vulkan: the longest step, it must not take the others' time
    ;;
fake)
    # the fake driver serves the plain runs and replay: first on the library path (capture
    # puts the shim in front of it)
    saved_path=${LD_LIBRARY_PATH:-}
    export LD_LIBRARY_PATH="$P/cuda/fake${saved_path:+:$saved_path}"
    capture_cycle cuda-saxpy-fake cuda 60 60 "$P/cuda/prog_saxpy"
    timing cuda cuda "$P/cuda/prog_saxpy"
    export LD_LIBRARY_PATH="$saved_path"
    note SKIP "cuda-ptx" 0 "no CUDA driver of this machine's own: the fake cannot run PTX"
    note SKIP "cuda-streams" 0 "no CUDA driver of this machine's own (nvcc's program needs a GPU)"
    note SKIP "cuda-torch" 0 "no CUDA driver of this machine's own (PyTorch needs a GPU)"
    ;;
*)
    note SKIP "cuda" 0 "no CUDA driver here (ldconfig has no libcuda.so.1); GPU_CHECK_FAKE_CUDA=1 rehearses on the fake"
    ;;
esac

# ---- 3. Vulkan -----------------------------------------------------------------------------------
if grep -Eq '^vulkan +[0-9]+ device' "$O/devices.txt" 2>/dev/null; then
    VK="vk_compute:$P/vk/vk_compute
vk_threads:$P/vk/vk_threads
vk_recycle:$P/vk/vk_recycle
vk_descriptors:$P/vk/vk_descriptors push
vk_images:$P/vk/vk_images exact
vk_pipelines:$P/vk/vk_pipelines subgroup
vk_address:$P/vk/vk_address
vk_ring:$P/vk/vk_ring ring
vk_fft:$P/vk3p/vk_fft"
    while IFS=: read -r name cmd; do
        prog=${cmd%% *}
        if [ ! -x "$prog" ]; then
            note SKIP "$name" 0 "not in this tree ($prog)"
            continue
        fi
        # shellcheck disable=SC2086
        capture_cycle "$name" vulkan 60 90 $cmd
    done <<< "$VK"
else
    note SKIP "vulkan" 0 "reprise devices lists no Vulkan device"
fi

# ---- 2b. CUDA: PyTorch ---------------------------------------------------------------------------
if [ "${TORCH:-0}" = 1 ]; then
    if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
        > "$O/torch-probe.log" 2>&1; then
        capture_cycle cuda-torch cuda 180 150 python3 "$T/share/reprise/torch_step.py"
        capture_cycle cuda-torch-graph cuda 120 120 python3 "$T/share/reprise/torch_graph.py"
    else
        note SKIP "cuda-torch" 0 "python3 has no torch with a CUDA device: $(tail -n 1 "$O/torch-probe.log" | cut -c1-100)"
    fi
fi

# ---- 4. timings ---------------------------------------------------------------------------------
[ -n "$CUDA_TIMED" ] && timing cuda cuda "$CUDA_TIMED"
VK_TIMED=$P/vk3p/vk_fft
[ -x "$VK_TIMED" ] || VK_TIMED=$P/vk/vk_compute
if [ -f "$O/${VK_TIMED##*/}.sbt" ]; then
    timing vulkan vulkan "$VK_TIMED"
fi

# ---- the report ---------------------------------------------------------------------------------
{
    echo "# reprise gpu-check"
    echo
    echo '```'
    cat "$O/environment.txt"
    echo '```'
    echo
    echo "| result | step | seconds | what |"
    echo "| --- | --- | --- | --- |"
    awk -F'\t' '{ gsub(/\|/, "\\|", $4); printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$O/results.tsv"
    echo
    awk -F'\t' '{ c[$1]++ } END { printf "%d passed, %d failed, %d skipped", c["PASS"], c["FAIL"], c["SKIP"] }' "$O/results.tsv"
    echo " in $(($(date +%s) - START)) s. Each command's output: NN-step.log; each trace's info: NAME.info."
} > "$REPORT"
echo "gpu-check: report in $REPORT" >&2
tail -n 1 "$REPORT" >&2
exit $FAILED
