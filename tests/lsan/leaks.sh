#!/bin/sh
# tests/lsan/leaks.sh — reads the sanitizer logs of one test run and decides what is ours.
#
# Usage: tests/lsan/leaks.sh LOGDIR BUILDDIR
#
# `make asan` runs every process with ASAN_OPTIONS=log_path=LOGDIR/log (reports go to files,
# one per process), LSAN_OPTIONS=exitcode=0 (a leak alone does not change an exit status) and
# tests/lsan/keep_loaded.c preloaded (no library is unloaded before exit, so every frame names
# its module; see that file for why). This script then:
#   - fails on any AddressSanitizer or UndefinedBehaviorSanitizer error, printing the report;
#   - fails on a leak of ours, printing it: a leak is ours when the innermost frame of its
#     allocation stack that is neither the sanitizer runtime nor the C/C++ runtime (which
#     allocate on behalf of their caller: strdup, fopen, ...) lies in a module under BUILDDIR
#     (the reprise CLI, the capture layer and shim, test programs and test binaries);
#   - ignores, with one line each, leaks whose allocating module is anything else: the Vulkan
#     loader, drivers (lavapipe, LLVM), implicit layers, Criterion. Their leaks are not ours to
#     fix, and the suite's verdict must not depend on which versions a machine has installed.
# Exit status: 0 clean (or only foreign leaks), 1 errors or leaks of ours.
set -eu
logdir=$1
build=$(cd "$2" && pwd)
[ -d "$logdir" ] || exit 0
status=0
for f in "$logdir"/log.*; do
    [ -f "$f" ] || continue
    exe=$(basename "$f" | sed 's/^log\.//')
    if grep -q -E 'ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error:' "$f"; then
        echo "sanitizer: error in $exe:" >&2
        cat "$f" >&2
        status=1
        continue
    fi
    grep -q 'leak of' "$f" || continue
    rc=0
    out=$(awk -v build="$build/" -v exe="$exe" '
        function module(line,   m) {
            if (line !~ /\{[^{}]*\}[ \t]*$/)
                return ""
            m = line
            sub(/.*\{/, "", m)
            sub(/\}[ \t]*$/, "", m)
            return m
        }
        function runtime(m) {
            return m ~ /\/lib(asan|ubsan|lsan)\.so|\/libc\.so|\/libstdc\+\+\.so|\/libgcc_s\.so|\/ld-linux|\/libpthread\.so|\/libdl\.so|libkeep_loaded\.so/
        }
        function flush(   m, i, owner) {
            if (!n)
                return
            owner = ""
            for (i = 1; i <= n; i++) {
                if (frames[i] !~ /^[ \t]*#[0-9]+ /)
                    continue
                m = module(frames[i])
                if (m == "" || runtime(m))
                    continue
                owner = m
                break
            }
            if (owner != "" && index(owner, build) == 1) {
                ours++
                print "sanitizer: leak of ours in " exe " (allocated in " owner "):"
                for (i = 1; i <= n; i++)
                    print frames[i]
            } else {
                foreign++
                print "sanitizer: ignored, not ours (" (owner == "" ? "no module named" : owner) "): " frames[1] > "/dev/stderr"
            }
            n = 0
        }
        /^(Direct|Indirect) leak of/ { flush(); n = 1; frames[1] = $0; inleak = 1; next }
        inleak && /^[ \t]*$/ { flush(); inleak = 0; next }
        inleak { frames[++n] = $0; next }
        END { flush(); if (ours) exit 1 }
    ' "$f") || rc=$?
    if [ -n "$out" ]; then
        echo "$out" >&2
    fi
    [ "$rc" -eq 0 ] || status=1
done
exit $status
