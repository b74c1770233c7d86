#!/bin/sh
# tests/lsan/run.sh — runs one test command the way `make asan` needs it, then judges the
# sanitizer reports of every process it started (tests/lsan/leaks.sh).
#
# Usage: tests/lsan/run.sh BUILDDIR COMMAND [ARGS...]
#
# Every process the command starts inherits: reports written to BUILDDIR/sanitizer/log.<exe>.<pid>
# (so a report from a captured program or a child of the CLI is never lost in a test's captured
# stderr), frames printed with their module, a leak not changing the exit status by itself, and
# libkeep_loaded.so preloaded (tests/lsan/keep_loaded.c explains why). UndefinedBehaviorSanitizer
# reports stay on stderr and stop the process (-fno-sanitize-recover).
# Exit status: the command's, or 1 when it passed but a sanitizer found an error or a leak of ours.
set -u
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
logs=$build/sanitizer
rm -rf "$logs"
mkdir -p "$logs"
# max_malloc_fill_size=0: a fresh allocation holds what the allocator hands out, not ASan's
# 0xbe fill: lavapipe allocates device memory with malloc, and a program reading device memory
# nothing wrote (tests/vk/vk_orderdep uninit) must read there what it reads without ASan
ASAN_OPTIONS="log_path=$logs/log:log_exe_name=1:verify_asan_link_order=0:max_malloc_fill_size=0:stack_trace_format=\"#%n %p %F {%m}\"${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
LSAN_OPTIONS="exitcode=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
LD_PRELOAD="$build/tests/lsan/libkeep_loaded.so${LD_PRELOAD:+ $LD_PRELOAD}"
export ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS LD_PRELOAD
"$@"
rc=$?
unset LD_PRELOAD
"$here/leaks.sh" "$logs" "$build" || { [ "$rc" -ne 0 ] || rc=1; }
exit $rc
