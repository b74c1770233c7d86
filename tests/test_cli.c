/*
 * tests/test_cli.c — the `reprise` binary as users and CI scripts meet it: exit codes, messages
 * that name the problem and the fix, --help on every command, and the format commands (info,
 * view, validate, gen, import) end to end. The binary comes from REPRISE_BIN (set by
 * `make check`), else build/default/reprise.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/sbt.h"

static char tmpdir[64];
static char out[1 << 16];

static void make_tmp(void)
{
    strcpy(tmpdir, "/tmp/reprise-cli-XXXXXX");
    cr_assert(mkdtemp(tmpdir) != NULL);
}

static void rm_tmp(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    cr_assert(system(cmd) == 0);
}

static const char *bin(void)
{
    const char *b = getenv("REPRISE_BIN");
    return b && *b ? b : "build/default/reprise";
}

/* Runs `reprise ARGS` (a shell fragment) in the temp dir, stdout and stderr into out;
 * returns the exit code. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char args[1024], cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char cwd[512] = "";
    if (bin()[0] != '/')
        cr_assert(getcwd(cwd, sizeof cwd - 1) != NULL);
    snprintf(cmd, sizeof cmd, "cd %s && { %s%s%s %s; } 2>&1", tmpdir, cwd, *cwd ? "/" : "", bin(),
             args);
    FILE *p = popen(cmd, "r");
    cr_assert(p != NULL);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TestSuite(cli, .init = make_tmp, .fini = rm_tmp);

Test(cli, help_everywhere)
{
    cr_assert(eq(int, run("--help"), 0));
    cr_assert(strstr(out, "Exit codes") != NULL);
    static const char *cmds[] = {"info",   "view",    "validate", "gen", "import",
                                 "replay", "analyze", "export",   "trim"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cr_assert(eq(int, run("%s --help", cmds[i]), 0), "%s --help: %s", cmds[i], out);
        cr_assert(strstr(out, "usage: reprise") != NULL, "%s --help: %s", cmds[i], out);
    }
    cr_assert(eq(int, run("frobnicate"), 2));
    cr_assert(strstr(out, "unknown command 'frobnicate'") != NULL);
    cr_assert(eq(int, run(" "), 2));
}

Test(cli, gen_info_view_validate)
{
    cr_assert(eq(int, run("gen -o t.sbt --ops 5000 --seed 3"), 0), "%s", out);
    cr_assert(eq(int, run("info t.sbt"), 0), "%s", out);
    cr_assert(strstr(out, "ops        5000 (seq 0..4999)") != NULL, "%s", out);
    cr_assert(strstr(out, "complete   yes") != NULL, "%s", out);
    cr_assert(strstr(out, "footer index present") != NULL, "%s", out);
    cr_assert(eq(int, run("view t.sbt --limit 3"), 0));
    cr_assert(strstr(out, "more ops; --limit N") != NULL, "%s", out);
    cr_assert(eq(int, run("view t.sbt --ops 10:12 --limit 0"), 0));
    cr_assert(strstr(out, "        10 ") != NULL && strstr(out, "        11 ") != NULL, "%s", out);
    cr_assert(strstr(out, "        12 ") == NULL, "%s", out);
    cr_assert(eq(int, run("view --stats t.sbt"), 0));
    cr_assert(strstr(out, "geometry (grid / block)") != NULL, "%s", out);
    cr_assert(eq(int, run("validate t.sbt"), 0), "%s", out);
    cr_assert(strstr(out, "0 problems") != NULL, "%s", out);
    /* the same seed gives the same bytes */
    cr_assert(eq(int, run("gen -o u.sbt --ops 5000 --seed 3 && cmp t.sbt u.sbt"), 0), "%s", out);
}

/* `--json -` gives stdout to the report alone (the text summary goes to stderr): check and
 * diff printed their summary before the JSON, so stdout did not parse (found writing the Python
 * API). The JSON is the only thing on stdout: it starts with '{', ends with '}'. */
Test(cli, json_to_stdout_is_the_report_alone)
{
    cr_assert(eq(int, run("gen -o t.sbt --ops 200 --seed 3"), 0), "%s", out);
    const char *cmds[] = {"check t.sbt --results t.sbt --json -", "diff t.sbt t.sbt --json -"};
    for (int i = 0; i < 2; i++) {
        run("%s 2>/dev/null", cmds[i]);
        size_t n = strlen(out);
        while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
            n--;
        cr_expect(n && out[0] == '{' && out[n - 1] == '}',
                  "%s: stdout is not the JSON alone: %.80s", cmds[i], out);
    }
}

Test(cli, usage_errors_exit_2)
{
    cr_assert(eq(int, run("view"), 2));
    cr_assert(eq(int, run("gen"), 2));
    cr_assert(strstr(out, "-o TRACE is required") != NULL, "%s", out);
    cr_assert(eq(int, run("gen -o x.sbt --ops -5"), 2));
    cr_assert(eq(int, run("view t.sbt --time-range 5ms:1ms"), 2));
    cr_assert(strstr(out, "--time-range '5ms:1ms'") != NULL, "%s", out);
    cr_assert(eq(int, run("view t.sbt --ops abc"), 2));
    cr_assert(eq(int, run("view t.sbt --time-range 1parsec:"), 2));
    cr_assert(eq(int, run("info a.sbt b.sbt"), 2));
}

Test(cli, bad_input_exit_3_with_where)
{
    cr_assert(eq(int, run("info missing.sbt"), 3));
    cr_assert(strstr(out, "cannot open missing.sbt") != NULL, "%s", out);
    cr_assert(eq(int, run("gen -o t.sbt --ops 20000 --chunk-ops 1000"), 0));
    /* flip a byte in the middle: validate names the chunk offset and fails */
    /* flip a byte among the ops chunks at the end of the file (blobs come first) */
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "f=%s/t.sbt; printf '\\377' | dd of=$f bs=1 seek=$(( $(stat -c %%s $f) - 60000 )) "
             "conv=notrunc 2>/dev/null",
             tmpdir);
    cr_assert(eq(int, system(cmd), 0));
    cr_assert(eq(int, run("validate t.sbt"), 3), "%s", out);
    cr_assert(strstr(out, "problem: chunk at offset") != NULL, "%s", out);
    cr_assert(strstr(out, "CRC mismatch") != NULL, "%s", out);
    cr_assert(eq(int, run("view t.sbt --limit 0 >/dev/null"), 3), "%s", out);
    cr_assert(strstr(out, "chunk at offset") != NULL, "%s", out);
}

Test(cli, torn_trace_is_recovered)
{
    cr_assert(eq(int, run("gen -o t.sbt --ops 20000 --chunk-ops 1000"), 0));
    char cmd[256];
    snprintf(cmd, sizeof cmd, "head -c 750000 %s/t.sbt > %s/cut.sbt", tmpdir, tmpdir);
    cr_assert(eq(int, system(cmd), 0));
    cr_assert(eq(int, run("info cut.sbt"), 0), "%s", out);
    cr_assert(strstr(out, "no footer index") != NULL, "%s", out);
    cr_assert(strstr(out, "the writer did not finish") != NULL, "%s", out);
    cr_assert(eq(int, run("validate cut.sbt"), 3), "%s", out);
    cr_assert(strstr(out, "recovered everything before offset") != NULL, "%s", out);
}

Test(cli, tracesmith_named_and_imported)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "cp tests/fuzz/seeds/tracesmith/example-2-events %s/body && "
             "(printf 'SBT\\0'; cat %s/body) > %s/ts.sbt",
             tmpdir, tmpdir, tmpdir);
    cr_assert(eq(int, system(cmd), 0));
    cr_assert(eq(int, run("info ts.sbt"), 3), "%s", out);
    cr_assert(strstr(out, "TraceSmith SBT file") != NULL, "%s", out);
    cr_assert(strstr(out, "reprise import ts.sbt -o converted.sbt") != NULL, "%s", out);
    cr_assert(eq(int, run("import ts.sbt -o conv.sbt"), 0), "%s", out);
    cr_assert(strstr(out, "imported 2 ops") != NULL, "%s", out);
    cr_assert(eq(int, run("view conv.sbt"), 0), "%s", out);
    cr_assert(strstr(out, "gemm grid 128x1x1 block 256x1x1") != NULL, "%s", out);
    cr_assert(eq(int, run("import conv.sbt -o again.sbt"), 3), "%s", out);
    cr_assert(strstr(out, "not a TraceSmith SBT file") != NULL, "%s", out);
}

/* ========================================================================================== */
/* diff without evidence                                                                      */
/* ========================================================================================== */

Test(cli, diff_that_compared_nothing_is_not_verified)
{
    /* gen writes no output digests unless asked: a diff of such traces compares nothing */
    cr_assert(eq(int, run("gen -o a.sbt --ops 3000 --seed 1"), 0), "%s", out);
    cr_expect(eq(int, run("diff a.sbt a.sbt"), 1), "%s", out);
    cr_expect(strstr(out, "reprise diff: NOT VERIFIED") != NULL, "%s", out);
    cr_expect(strstr(out, "nothing was verified") != NULL, "%s", out);
    cr_expect(eq(int, run("diff a.sbt a.sbt -q --max-findings 3 --json -"), 1), "%s", out);
    cr_expect(strstr(out, "\"verdict\":\"not-verified\"") != NULL, "%s", out);
    /* with digests on both sides the same traces agree */
    cr_assert(eq(int, run("gen -o d.sbt --ops 3000 --seed 1 --digests"), 0), "%s", out);
    cr_expect(eq(int, run("diff d.sbt d.sbt"), 0), "%s", out);
    cr_expect(strstr(out, "reprise diff: PASS") != NULL, "%s", out);
}

/* ========================================================================================== */
/* trim, and sidecars of snapshots                                                            */
/* ========================================================================================== */

Test(cli, trim_without_a_device_keeps_the_slice)
{
    cr_assert(eq(int, run("gen -o t.sbt --ops 5000 --seed 3"), 0), "%s", out);
    cr_assert(eq(int, run("trim t.sbt -o s.sbt"), 2), "%s", out);
    cr_assert(strstr(out, "give the range") != NULL, "%s", out);
    cr_assert(eq(int, run("trim t.sbt --ops 2500:2550"), 2), "%s", out);
    cr_assert(strstr(out, "-o SMALL.sbt is required") != NULL, "%s", out);
    cr_assert(eq(int, run("trim t.sbt --ops 2500:2550 -o t.sbt"), 2), "%s", out);
    cr_assert(eq(int, run("trim t.sbt --ops 2500:2550 -o s.sbt --chunk 3"), 2), "%s", out);
    cr_assert(eq(int, run("trim t.sbt --ops 9000:9100 -o s.sbt"), 3), "%s", out);
    cr_assert(strstr(out, "the range selects no op") != NULL, "%s", out);
    /* a synthetic trace has no device: the slice's ops are kept, and it says so */
    cr_assert(eq(int, run("trim t.sbt --ops 2500:2550 -o s.sbt"), 0), "%s", out);
    cr_assert(strstr(out, "no device (a synthetic trace has no device to replay on) and no "
                          "snapshot, so the slice's") != NULL,
              "%s", out);
    cr_assert(strstr(out, "kept        50 ops of the range") != NULL, "%s", out);
    /* it keeps the original numbers: ops 2500..2549 are there, and replayable (dry run) */
    cr_assert(eq(int, run("view s.sbt --ops 2500:2501 --limit 1"), 0), "%s", out);
    cr_assert(strstr(out, "      2500 ") != NULL, "%s", out);
    cr_assert(eq(int, run("info s.sbt"), 0), "%s", out);
    cr_assert(strstr(out, "(seq 0..2549)") != NULL, "%s", out);
    cr_assert(eq(int, run("validate s.sbt"), 0), "%s", out);
    cr_assert(strstr(out, "ops skip seq") != NULL, "%s", out);
    cr_assert(eq(int, run("replay s.sbt"), 0), "%s", out);
    cr_assert(strstr(out, "result      replayable") != NULL, "%s", out);
}

Test(cli, a_bad_sidecar_exits_3_naming_it)
{
    cr_assert(eq(int, run("gen -o t.sbt --ops 3000 --seed 3"), 0), "%s", out);
    /* none: the dry run says the slice runs from the start */
    cr_assert(eq(int, run("replay t.sbt --ops 1500:1550"), 0), "%s", out);
    cr_assert(strstr(out, "restore     none (no sidecar of snapshots)") != NULL, "%s", out);
    /* the default sidecar is found by itself: garbage, another trace, named with --snapshots */
    cr_assert(eq(int, run("gen -o t.snap.sbt --ops 10 --seed 4"), 0), "%s", out);
    cr_assert(eq(int, run("replay t.sbt --ops 1500:1550"), 3), "%s", out);
    cr_assert(strstr(out, "t.snap.sbt: not a sidecar of snapshots") != NULL, "%s", out);
    cr_assert(eq(int, run("trim t.sbt --ops 1500:1550 -o s.sbt"), 3), "%s", out);
    cr_assert(strstr(out, "t.snap.sbt: not a sidecar of snapshots") != NULL, "%s", out);
    cr_assert(eq(int, run("replay t.sbt --ops 1500:1550 --no-snapshots"), 0), "%s", out);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "printf 'garbage!' > %s/t.snap.sbt", tmpdir);
    cr_assert(eq(int, system(cmd), 0));
    cr_assert(eq(int, run("replay t.sbt --ops 1500:1550"), 3), "%s", out);
    cr_assert(strstr(out, "t.snap.sbt: not an SBT trace: offset 0: bad magic") != NULL, "%s", out);
    cr_assert(eq(int, run("replay t.sbt --ops 1500:1550 --snapshots missing.sbt"), 3), "%s", out);
    cr_assert(strstr(out, "cannot open missing.sbt") != NULL, "%s", out);
    /* snapshots are written by a full replay of the whole trace */
    cr_assert(eq(int, run("replay t.sbt --snapshot-every 100"), 2), "%s", out);
    cr_assert(strstr(out, "need --mode full") != NULL, "%s", out);
    cr_assert(eq(int, run("replay t.sbt --mode full --snapshot-every 100 --ops 1:5"), 2), "%s",
              out);
    cr_assert(eq(int, run("replay t.sbt --mode full --snapshot-every often"), 2), "%s", out);
    cr_assert(eq(int, run("replay t.sbt --mode full --snapshot-at 5,x"), 2), "%s", out);
}

/* The timing gate's verdict as CI meets it (checker/chk.h "Timing"): a gate whose runs and
 * reference cannot reach significance is "not gated" in every report, a JUnit skip, never a
 * pass; --require-timing makes that exit 1. A synthetic trace (gen) is capture, results and
 * baseline at once: outputs agree, timings are identical. */
/* The file name in the temporary directory into out. */
static const char *read_tmp(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL, "no %s", path);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    fclose(f);
    return out;
}

Test(cli, timing_not_gated_is_skipped_and_require_timing_fails_it)
{
    cr_assert(eq(int, run("gen -o g.sbt --ops 3000 --seed 1 --digests"), 0), "%s", out);
    const char *r3 = "--results g.sbt g.sbt g.sbt --baseline g.sbt g.sbt g.sbt";
    cr_assert(eq(int, run("check g.sbt %s --junit j.xml --json j.json", r3), 0), "%s", out);
    cr_expect(strstr(out, "timing: NOT GATED") != NULL, "%s", out);
    cr_expect(strstr(out, "needs --runs") != NULL, "%s", out);
    read_tmp("j.xml");
    cr_expect(strstr(out, "name=\"timing-regression\">\n      <skipped message=\"timing not "
                          "gated: 3 runs against 3 reference runs") != NULL,
              "%s", out);
    read_tmp("j.json");
    cr_expect(strstr(out, "\"gate\":\"not-gated\"") != NULL, "%s", out);
    /* required: the same gate fails, saying why, in the text and the JUnit */
    cr_assert(eq(int, run("check g.sbt %s --require-timing --junit j.xml", r3), 1), "%s", out);
    cr_expect(strstr(out, "reprise check: FAIL") != NULL, "%s", out);
    cr_expect(strstr(out, "FAIL: timing not gated (--require-timing): 3 runs against 3") != NULL,
              "%s", out);
    read_tmp("j.xml");
    cr_expect(strstr(out, "name=\"timing-regression\">\n      <failure message=\"timing not "
                          "gated (--require-timing): 3 runs") != NULL,
              "%s", out);
    /* no reference at all is not gated either */
    cr_assert(eq(int, run("check g.sbt --results g.sbt g.sbt --require-timing"), 1), "%s", out);
    cr_expect(strstr(out, "no timing reference") != NULL, "%s", out);
    cr_assert(eq(int, run("check g.sbt --results g.sbt g.sbt"), 0), "%s", out);
    /* a gate off cannot be required */
    cr_assert(eq(int, run("check g.sbt %s --require-timing --timing-threshold off", r3), 2), "%s",
              out);
    cr_expect(strstr(out, "--require-timing") != NULL, "%s", out);
    /* 10 runs against 10: gated, passed, also when required */
    char ten[256] = "--results", b[128] = " --baseline";
    for (int i = 0; i < 10; i++)
        strcat(ten, " g.sbt"), strcat(b, " g.sbt");
    strcat(ten, b);
    cr_assert(eq(int, run("check g.sbt %s --require-timing --json -", ten), 0), "%s", out);
    cr_expect(strstr(out, "\"gate\":\"passed\"") != NULL, "%s", out);
    cr_assert(eq(int, run("check --help"), 0));
    cr_expect(strstr(out, "--require-timing") != NULL, "%s", out);
}

/* --perturb: kinds and seeds are checked before anything runs; perturbed runs are made here,
 * so not with --results, and compared bitwise, so not under a tolerance. */
Test(cli, perturb_usage_is_checked)
{
    cr_assert(eq(int, run("gen -o g.sbt --ops 300 --seed 1 --digests"), 0), "%s", out);
    cr_expect(eq(int, run("check g.sbt --perturb=shuffle"), 2), "%s", out);
    cr_expect(strstr(out, "poison, split, threads, order, declared") != NULL, "%s", out);
    cr_expect(eq(int, run("check g.sbt --perturb=split:x"), 2), "%s", out);
    cr_expect(eq(int, run("check g.sbt --results g.sbt --perturb"), 2), "%s", out);
    cr_expect(strstr(out, "--perturb replays here") != NULL, "%s", out);
    cr_expect(eq(int, run("check g.sbt --perturb split --tolerance ulp:2"), 2), "%s", out);
    cr_expect(eq(int, run("replay g.sbt --perturb poison:1"), 2), "%s", out);
    cr_expect(strstr(out, "need --mode full") != NULL, "%s", out);
    cr_assert(eq(int, run("check --help"), 0));
    cr_expect(strstr(out, "--perturb [KINDS]") != NULL, "%s", out);
}

/* ========================================================================================== */
/* make dist and scripts/gpu-check.sh                                                         */
/* ========================================================================================== */

/* Runs a shell command, its output into out; returns its exit code. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[4200];
    snprintf(full, sizeof full, "{ %s; } 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert(p != NULL);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The report line of step (its "| RESULT | step |" row), or NULL. */
static const char *report_row(const char *report, const char *result, const char *step)
{
    char want[256];
    snprintf(want, sizeof want, "| %s | %s |", result, step);
    return strstr(report, want);
}

/* The GPU check rehearsed where there is no GPU, so that it cannot rot between the rare runs
 * on one: `make dist`'s tree (REPRISE_DIST, made by `make check`), copied elsewhere to show it
 * runs from wherever it lies, runs scripts/gpu-check.sh on lavapipe and the tree's fake CUDA
 * driver: every step that can run here passes, the GPU-only ones skip saying why, and the
 * report, each step's log and each trace's info are written. */
Test(cli, gpu_check_rehearses_without_a_gpu, .timeout = 600)
{
    const char *dist = getenv("REPRISE_DIST");
    if (!dist || !*dist)
        cr_skip_test("REPRISE_DIST is not set (run through make check, which makes the tree)");
    cr_assert(eq(int, sh("cp -a '%s' %s/tree", dist, tmpdir), 0), "%s", out);
    /* LD_LIBRARY_PATH and VK_* as a user's shell would have them: none of the build's */
    int rc = sh("cd %s && env -u LD_LIBRARY_PATH GPU_CHECK_FAKE_CUDA=1 GPU_CHECK_ROUNDS=1 "
                "tree/scripts/gpu-check.sh out",
                tmpdir);
    char path[256];
    snprintf(path, sizeof path, "%s/out/report.md", tmpdir);
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL, "no report (exit %d): %s", rc, out);
    static char rep[1 << 16];
    size_t n = fread(rep, 1, sizeof rep - 1, f);
    rep[n] = 0;
    fclose(f);
    cr_assert(eq(int, rc, 0), "gpu-check failed:\n%s", rep);
    cr_assert(strstr(rep, "cuda driver: fake") != NULL, "%s", rep);
    static const char *const pass[] = {
        "devices",
        "cuda-saxpy-fake: capture",
        "cuda-saxpy-fake: replay --verify op",
        "cuda-saxpy-fake: check --runs 2",
        "vk_compute: capture",
        "vk_compute: replay --verify op",
        "vk_compute: check --runs 2",
        "vk_threads: check --runs 2",
        "vk_images: check --runs 2",
        "vk_fft: check --runs 2",
    };
    for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++)
        cr_expect(report_row(rep, "PASS", pass[i]) != NULL, "no PASS row for %s:\n%s", pass[i],
                  rep);
    cr_expect(report_row(rep, "SKIP", "cuda-torch") != NULL, "%s", rep);
    cr_expect(report_row(rep, "SKIP", "cuda-streams") != NULL, "%s", rep);
    cr_expect(report_row(rep, "INFO", "timing vulkan") != NULL, "%s", rep);
    cr_expect(strstr(rep, " 0 failed") != NULL, "%s", rep);
    cr_expect(eq(int,
                 sh("test -s %s/out/vk_compute.info && grep -q 'complete   yes' "
                    "%s/out/vk_compute.info",
                    tmpdir, tmpdir),
                 0),
              "vk_compute.info: %s", out);
    cr_expect(eq(int, sh("ls %s/out/*-vk_compute-capture.log", tmpdir), 0), "%s", out);
}

/* The tree needs nothing outside it but glibc and the machine's drivers: every program and
 * library in it resolves its libraries inside it (the rest: glibc's, the compiler's run-time,
 * the CUDA driver), with no LD_LIBRARY_PATH. */
Test(cli, dist_tree_resolves_its_libraries_inside_itself)
{
    const char *dist = getenv("REPRISE_DIST");
    if (!dist || !*dist)
        cr_skip_test("REPRISE_DIST is not set (run through make check, which makes the tree)");
    cr_assert(eq(int, sh("cp -a '%s' %s/tree", dist, tmpdir), 0), "%s", out);
    int rc =
        sh("cd %s/tree && find . -type f \\( -perm -u+x -o -name '*.so*' \\) | while read f; do "
           "head -c 4 \"$f\" | grep -q ELF || continue; "
           "case $f in */vk-fallback/*) continue;; esac; "
           "env -u LD_LIBRARY_PATH ldd \"$f\" 2>/dev/null | awk -v f=\"$f\" '$2 == \"=>\" "
           "{ print f, $1, $3 }'; done | grep -Ev ' (libc|libm|libdl|libpthread|librt|"
           "libgcc_s|libstdc\\+\\+|libcuda)\\.so' | grep -v \" $PWD/\"",
           tmpdir);
    cr_expect(ne(int, rc, 0), "libraries resolved outside the tree:\n%s", out);
    cr_assert(eq(int, sh("env -u LD_LIBRARY_PATH %s/tree/bin/reprise --version", tmpdir), 0), "%s",
              out);
}

/* `make dist`'s tree on a bare Debian 12 root (scripts/bare-root.sh: debootstrap minbase, none
 * of the build's packages, no Vulkan loader, no GL, no Python): copied there and run in a
 * chroot, `reprise` writes, reads and replays a trace, and the GPU check runs to its report on
 * the tree's fake CUDA driver (Vulkan skips: the root has no Vulkan driver). Needs root (chroot,
 * a private mount of /proc). */
Test(cli, dist_runs_on_a_bare_debian_root, .timeout = 600)
{
    const char *dist = getenv("REPRISE_DIST");
    if (!dist || !*dist)
        cr_skip_test("REPRISE_DIST is not set (run through make check, which makes the tree)");
    char root[1024];
    snprintf(root, sizeof root, "%s/build/bare-root",
             getenv("REPRISE_SRC") ? getenv("REPRISE_SRC") : ".");
    char mark[1100];
    snprintf(mark, sizeof mark, "%s/.reprise-bare-root", root);
    if (access(mark, F_OK))
        cr_skip_test("no bare Debian 12 root at %s (scripts/bare-root.sh makes it, as root)", root);
    if (geteuid() != 0)
        cr_skip_test("chroot into %s needs root", root);
    cr_assert(eq(int,
                 sh("rm -rf %s/opt/reprise %s/tmp/gc && cp -a '%s' %s/opt/reprise", root, root,
                    dist, root),
                 0),
              "%s", out);
    /* a mount namespace of its own: /proc is mounted for the chroot and gone when it ends */
    int rc =
        sh("env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin GPU_CHECK_FAKE_CUDA=1 GPU_CHECK_ROUNDS=1 "
           "unshare -m sh -c 'mount -t proc proc %s/proc && chroot %s sh -c \""
           "cd /tmp && /opt/reprise/bin/reprise gen -o g.sbt --ops 1000 && "
           "/opt/reprise/bin/reprise info g.sbt && "
           "/opt/reprise/bin/reprise replay g.sbt --mode dry-run && "
           "/opt/reprise/scripts/gpu-check.sh /tmp/gc\"'",
           root, root);
    cr_assert(eq(int, rc, 0), "in the bare root:\n%s", out);
    char path[1200];
    snprintf(path, sizeof path, "%s/tmp/gc/report.md", root);
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL, "no report: %s", out);
    static char rep[1 << 16];
    size_t n = fread(rep, 1, sizeof rep - 1, f);
    rep[n] = 0;
    fclose(f);
    cr_expect(report_row(rep, "PASS", "cuda-saxpy-fake: check --runs 2") != NULL, "%s", rep);
    cr_expect(report_row(rep, "SKIP", "vulkan") != NULL, "%s", rep);
    cr_expect(strstr(rep, " 0 failed") != NULL, "%s", rep);
}

static int tsh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A rank of a job on `host`, written directly (no device needed): at true time T its monotonic
 * clock reads T + mono_off and its realtime clock W + T + real_err (an NTP error of real_err).
 * A NCCL all-reduce ends at T = 10, 20, ..., 200 ms on every rank (its device times; the
 * ranks enter it 300 us apart), and a kernel of the rank's own runs after each. */
static void synth_rank(const char *name, int rank, const char *host, uint64_t mono_off,
                       int64_t real_err)
{
    const uint64_t W = 1795000000000000000ull, ms = 1000000;
    uint64_t epoch = mono_off + ms; /* capture started at T = 1 ms */
    char path[256], v[128];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(path, NULL, &w), 0), "%s", sbt_errmsg());
    snprintf(v, sizeof v, "%d", rank);
    cr_assert(eq(int, sbt_writer_meta(w, "job.rank", v), 0));
    cr_assert(eq(int, sbt_writer_meta(w, "job.id", "synthetic"), 0));
    cr_assert(eq(int, sbt_writer_meta(w, "host", host), 0));
    snprintf(v, sizeof v, "%" PRIu64, epoch);
    cr_assert(eq(int, sbt_writer_meta(w, "clock.epoch_monotonic_ns", v), 0));
    snprintf(v, sizeof v, "%" PRIu64 " %" PRIu64 " 20 start", epoch, W + ms + real_err);
    cr_assert(eq(int, sbt_writer_meta(w, "clock.sync.0", v), 0));
    snprintf(v, sizeof v, "%" PRIu64 " %" PRIu64 " 20 end", mono_off + 300 * ms,
             W + 300 * ms + real_err);
    cr_assert(eq(int, sbt_writer_meta(w, "clock.sync.1", v), 0));
    struct sbt_device d = {.api = SBT_API_CUDA};
    uint32_t dev, st, k_ar, k_own;
    cr_assert(eq(int, sbt_writer_intern(w, "gpu", &d.name), 0));
    cr_assert(eq(int, sbt_writer_add_device(w, &d, &dev), 0));
    struct sbt_stream sd = {.device = dev, .kind = SBT_STREAM_CUDA, .handle = 1};
    cr_assert(eq(int, sbt_writer_add_stream(w, &sd, &st), 0));
    struct sbt_kernel k = {0};
    cr_assert(eq(int, sbt_writer_intern(w, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", &k.name), 0));
    cr_assert(eq(int, sbt_writer_add_kernel(w, &k, &k_ar), 0));
    cr_assert(eq(int, sbt_writer_intern(w, "own_work", &k.name), 0));
    cr_assert(eq(int, sbt_writer_add_kernel(w, &k, &k_own), 0));
    for (uint64_t i = 1; i <= 20; i++) {
        uint64_t end = i * 10 * ms, begin = end - 2 * ms + (uint64_t)rank * 300000;
        struct sbt_op o = {.kind = SBT_OP_KERNEL,
                           .flags = SBT_OPF_DEV_TIME | SBT_OPF_KERNEL,
                           .stream = st,
                           .kernel = k_ar,
                           .host_begin = begin - 50000 + mono_off - epoch,
                           .host_end = begin - 40000 + mono_off - epoch,
                           .dev_begin = begin + mono_off - epoch,
                           .dev_end = end + mono_off - epoch};
        cr_assert(eq(int, sbt_writer_add_op(w, &o, NULL), 0), "%s", sbt_errmsg());
        o.kernel = k_own;
        o.dev_begin = end + ms + mono_off - epoch;
        o.dev_end = o.dev_begin + 3 * ms;
        o.host_begin = o.dev_begin - 50000;
        o.host_end = o.host_begin + 10000;
        cr_assert(eq(int, sbt_writer_add_op(w, &o, NULL), 0), "%s", sbt_errmsg());
    }
    cr_assert(eq(int, sbt_writer_close(w), 0), "%s", sbt_errmsg());
}

/* Two ranks on two machines whose realtime clocks disagree by 3 ms (NTP): their NCCL
 * all-reduces, which end at one instant on every rank, place the second machine's rank where
 * it really ran (its first op 300 us after rank 0's), not where its realtime clock says (3 ms
 * later): analyze then shows rank 1 entering each all-reduce 300 us late and the work after
 * it starting at once on both. Before: placed by its realtime clock (skews of 2.7 and 3 ms). */
Test(cli, job_on_two_hosts_is_placed_by_its_collectives)
{
    synth_rank("r0.sbt", 0, "machine-a", 5000000000000ull, 0);
    synth_rank("r1.sbt", 1, "machine-b", 9000000000000ull, 3000000);
    cr_assert(eq(int, run("info ."), 0), "%s", out);
    cr_expect(strstr(out, "20 anchors, moved -3.00 ms") != NULL, "rank 1 moved back 3 ms: %s", out);
    cr_assert(eq(int, run("export . -f json -o j.json -q"), 0), "%s", out);
    /* a window of the job's axis: every rank's ops overlapping [50 ms, 80 ms) of it, no other
     * (the job's time 0 is rank 0's first op, at T = 7.95 ms) */
    cr_assert(eq(int, run("export . -f json -o w.json -q --time-range 50ms:80ms"), 0), "%s", out);
    cr_assert(
        eq(int,
           tsh("python3 -c 'import json,sys; ev=json.load(open(\"w.json\"))[\"traceEvents\"]; "
               "x=[e for e in ev if e.get(\"ph\")==\"X\" and e.get(\"name\")!=\"\"]; "
               "bad=[e for e in x if not (e[\"ts\"]<80000 and e[\"ts\"]+e[\"dur\"]>=50000)]; "
               "pids=set(e[\"pid\"] for e in x); print(len(x), len(bad), len(pids)); "
               "sys.exit(0 if x and not bad and len(pids)==2 else 1)'"),
           0),
        "window: %s", out);
    cr_assert(eq(int, run("analyze . --top 2"), 0), "%s", out);
    char *row = strstr(out, "skew between ranks at shared points");
    row = row ? strstr(row, "ncclDevKernel_AllReduce_Sum_f32_RING_LL") : NULL;
    cr_assert(row != NULL, "%s", out);
    unsigned n_pts = 0;
    char med[16], unit[8];
    cr_assert(sscanf(row + 40, "%u %15s %7s", &n_pts, med, unit) == 3, "%s", row);
    cr_expect(eq(u32, n_pts, 20));
    cr_expect(strcmp(med, "300.00") == 0 && strcmp(unit, "us") == 0,
              "rank 1 enters each all-reduce 300 us after rank 0: %s %s", med, unit);
    cr_expect(strstr(row, "rank 0 -> rank 1") != NULL, "%.160s", row);
    char *own = strstr(row, "own_work");
    cr_assert(own != NULL, "%s", row);
    cr_assert(sscanf(own + 40, "%u %15s %7s", &n_pts, med, unit) == 3, "%s", own);
    cr_expect(strtod(med, NULL) <= 2 && !strcmp(unit, "ns"),
              "the work after each all-reduce starts at once on both: %s %s", med, unit);
    /* the same as JSON */
    cr_assert(eq(int, run("analyze . --json a.json"), 0), "%s", out);
    cr_expect(eq(int,
                 tsh("python3 -c 'import json; d=json.load(open(\"a.json\")); "
                     "k={x[\"kernel\"]: x for x in d[\"skew\"][\"kernels\"]}; "
                     "a=k[\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\"]; o=k[\"own_work\"]; "
                     "assert d[\"processes\"][1][\"clock\"]==\"anchors\", d[\"processes\"]; "
                     "assert abs(a[\"median_ns\"]-300000)<=2 and a[\"last\"]==\"rank 1\", a; "
                     "assert o[\"max_ns\"]<=2, o'"),
                 0),
              "analyze --json: %s", out);
}

/* ========================================================================================== */
/* Jobs: the traces of a capture's processes taken together (info, export, check, diff,      */
/* analyze on TRACE-stem.procs or a directory)                                               */
/* ========================================================================================== */

static char vkbuild[600];

static void job_setup(void)
{
    make_tmp();
    const char *b = getenv("REPRISE_BUILD");
    snprintf(vkbuild, sizeof vkbuild, "%s", b && *b ? b : "build/default");
    char cmd[800];
    snprintf(cmd, sizeof cmd, "%s/tests/vk/vk_compute >/dev/null 2>&1", vkbuild);
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rm_tmp();
        cr_skip_test("no Vulkan device with a compute queue here (or tests/vk not built)");
    }
}

TestSuite(job, .init = job_setup, .fini = rm_tmp);

/* Runs a shell command in the temp dir (no reprise in front), output into out. */
static int tsh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int tsh(const char *fmt, ...)
{
    char args[1024], cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd %s && { %s; } 2>&1", tmpdir, args);
    FILE *p = popen(cmd, "r");
    cr_assert(p != NULL);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* mpirun is installed and can start a process here (a container without network interfaces
 * may refuse to). */
static int have_mpirun(void)
{
    return system("command -v mpirun >/dev/null 2>&1 && mpirun --allow-run-as-root "
                  "--oversubscribe -np 1 true >/dev/null 2>&1") == 0;
}

/* Validates a Perfetto file with ../shared/perfetto/check_pftrace.sh when it is there (with
 * protoc); 1 when it was validated, 0 when the validator is absent. */
static int validate_pftrace(const char *name)
{
    char cwd[512], cmd[2048];
    cr_assert(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(cmd, sizeof cmd, "%s/../shared/perfetto/check_pftrace.sh", cwd);
    if (access(cmd, X_OK) != 0 || system("command -v protoc >/dev/null 2>&1") != 0)
        return 0;
    snprintf(cmd, sizeof cmd,
             "%s/../shared/perfetto/check_pftrace.sh --strict --no-tp %s/%s >%s/v.txt 2>&1", cwd,
             tmpdir, name, tmpdir);
    cr_expect(eq(int, system(cmd), 0), "check_pftrace.sh --strict failed on %s (see v.txt)", name);
    return 1;
}

/* `mpirun -np 2` of a deterministic program: the job's manifest lists both ranks (info), one
 * validated timeline holds a process per rank and the alignment (export), every rank passes
 * (check), the job agrees with itself given as a directory (diff pairs by rank), and analyze
 * gives both ranks' tables and the skew at their shared launches. */
Test(job, mpirun_job_info_export_check_diff_analyze, .timeout = 300)
{
    if (!have_mpirun())
        cr_skip_test("no working mpirun (Debian: openmpi-bin, scripts/deps.sh)");
    cr_assert(eq(int,
                 run("capture --digests -o t.sbt -- mpirun --allow-run-as-root --oversubscribe "
                     "-np 2 %s/tests/vk/vk_compute",
                     vkbuild),
                 0),
              "%s", out);
    cr_assert(eq(int, run("info t.procs"), 0), "%s", out);
    cr_expect(strstr(out, ": 2 processes") != NULL, "%s", out);
    cr_expect(strstr(out, "\n0        2      0") != NULL && strstr(out, "\n1        2      1"),
              "ranks 0 and 1 of 2 with their local ranks: %s", out);
    cr_expect(strstr(out, "2 pairs") != NULL, "clock pairs at start and end: %s", out);

    cr_assert(eq(int, run("export t.procs -f perfetto -o j.pftrace"), 0), "%s", out);
    cr_expect(strstr(out, "wrote j.pftrace: 2 processes of job") != NULL, "%s", out);
    validate_pftrace("j.pftrace");
    cr_assert(eq(int,
                 run("export t.procs -f json -o j.json -q && grep -c '\"rank [01]\"' j.json "
                     "&& grep -q 'clock alignment' j.json && grep -q origin_realtime_ns "
                     "j.json"),
                 0),
              "%s", out);

    cr_assert(eq(int, run("check t.procs --runs 2 --keep k"), 0), "%s", out);
    cr_expect(strstr(out, "PASS: 2 of 2 processes passed") != NULL, "%s", out);
    cr_expect(strstr(out, "== rank 0 (pid") != NULL && strstr(out, "== rank 1 (pid") != NULL, "%s",
              out);
    cr_expect(eq(int, tsh("test -f k/rank-0.log && test -f k/rank-1/run2.sbt"), 0),
              "per-rank logs and results under --keep");

    cr_assert(eq(int, tsh("mkdir d && cp t.*.sbt d/"), 0));
    cr_assert(eq(int, run("diff t.procs d -q"), 0), "%s", out);
    cr_expect(strstr(out, "AGREE: 2 pairs of processes by rank, 0 differ") != NULL, "%s", out);
    cr_assert(eq(int, tsh("rm d/$(ls d | head -1)"), 0));
    cr_assert(eq(int, run("diff t.procs d -q"), 1), "%s", out);
    cr_expect(strstr(out, "only in t.procs") != NULL, "the rank missing from d: %s", out);

    cr_assert(eq(int, run("analyze t.procs --top 3"), 0), "%s", out);
    cr_expect(strstr(out, "== rank 0 (pid") != NULL && strstr(out, "== rank 1 (pid") != NULL, "%s",
              out);
    cr_expect(strstr(out, "kernels and other timed ops") != NULL, "%s", out);
    cr_expect(strstr(out, "skew between ranks at shared points") != NULL &&
                  strstr(out, "shared points; largest skew") != NULL,
              "%s", out);
}

/* One nondeterministic rank (tests/vk/racy, with lavapipe on 4 threads) fails the job, and the
 * job's report names it; the deterministic rank still passes. */
Test(job, a_racy_rank_fails_the_job_and_is_named, .timeout = 300)
{
    if (!have_mpirun())
        cr_skip_test("no working mpirun (Debian: openmpi-bin, scripts/deps.sh)");
    setenv("LP_NUM_THREADS", "4", 1); /* racy's race shows with two threads or more */
    cr_assert(eq(int,
                 run("capture --digests -o t.sbt -- mpirun --allow-run-as-root --oversubscribe "
                     "-np 1 %s/tests/vk/vk_compute : -np 1 %s/tests/vk/racy",
                     vkbuild, vkbuild),
                 0),
              "%s", out);
    int rc = run("check t.procs --runs 3 --parallel 2");
    cr_expect(eq(int, rc, 1), "%s", out);
    cr_expect(strstr(out, "FAIL: 1 of 2 processes passed") != NULL, "%s", out);
    cr_expect(strstr(out, "  rank 1: FAIL (exit 1): ") != NULL, "names rank 1: %s", out);
    cr_expect(strstr(out, "nondeterministic") != NULL, "%s", out);
    char *r0 = strstr(out, "== rank 0 (pid");
    cr_expect(r0 && strstr(r0, ": pass\n") && strstr(r0, ": pass\n") < strstr(r0, "== rank 1"),
              "rank 0 passes: %s", out);
    /* the job's own reports: rank 1 failing, named */
    cr_assert(eq(int, run("check t.procs --runs 3 -q --json j.json --junit j.xml"), 1), "%s", out);
    cr_expect(eq(int,
                 tsh("grep -q '\"verdict\":\"fail\"' j.json && grep -q '\"label\":\"rank "
                     "1\",[^}]*\"exit\":1' j.json && grep -q 'tests=\"2\" failures=\"1\"' j.xml && "
                     "grep -q '<failure message=\"FAIL: rank 1 (exit 1)' j.xml && test -s "
                     "j.rank-1.json"),
                 0),
              "job reports naming rank 1");
}

/* A program that forks its workers: their traces, put together, export to one valid timeline
 * (a process per worker) and check as one passing job, several at a time. */
Test(job, forked_workers_export_and_check, .timeout = 300)
{
    cr_assert(eq(int, run("capture --digests -o t.sbt -- %s/tests/vk/vk_fork 3 3", vkbuild), 0),
              "%s", out);
    cr_assert(eq(int, run("export t.procs -f perfetto"), 0), "%s", out);
    cr_expect(strstr(out, "wrote t.pftrace: 3 processes") != NULL, "%s", out);
    validate_pftrace("t.pftrace");
    cr_assert(eq(int, run("check t.procs --runs 2 --parallel 2 --json r.json -q"), 0), "%s", out);
    cr_expect(strstr(out, "PASS: 3 of 3 processes passed") != NULL, "%s", out);
    cr_expect(eq(int, tsh("test -s r.rank-0.json && test -s r.rank-2.json"), 0),
              "one JSON report per rank");
}

/* The op time (ns since its epoch) of a trace's first op, on this machine's CLOCK_MONOTONIC:
 * its recorded epoch less the test's shift. */
static double first_op_mono(const char *name, uint64_t shift)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), 0), "%s", sbt_errmsg());
    const char *e = sbt_reader_meta_get(r, "clock.epoch_monotonic_ns");
    cr_assert(e != NULL);
    double v = (double)(strtoull(e, NULL, 10) - shift) + (double)sbt_reader_info(r)->t_min;
    sbt_reader_close(r);
    return v;
}

/* Two captures started separately, as on two machines: one REPRISE_JOB, ranks given by
 * REPRISE_RANK, the second's monotonic clock recorded 500 s ahead (another machine's boot
 * time). Gathered in a directory they are one job of two ranks, and on the exported timeline
 * the second starts where it really did after the first (the truth: both ran on this
 * machine's monotonic clock), within the stated bounds; by monotonic time it would be 500 s
 * off. */
Test(job, two_captures_of_one_job_with_a_clock_500s_off, .timeout = 300)
{
    const uint64_t shift = 500000000000ull;
    setenv("REPRISE_JOB", "two-machines", 1);
    setenv("REPRISE_WORLD_SIZE", "2", 1);
    setenv("REPRISE_RANK", "0", 1);
    cr_assert(eq(int, run("capture -o a.sbt -- %s/tests/vk/vk_compute", vkbuild), 0), "%s", out);
    setenv("REPRISE_RANK", "1", 1);
    setenv("REPRISE_TEST_CLOCK_SHIFT_NS", "500000000000", 1);
    cr_assert(eq(int, run("capture -o b.sbt -- %s/tests/vk/vk_compute", vkbuild), 0), "%s", out);
    unsetenv("REPRISE_TEST_CLOCK_SHIFT_NS");
    unsetenv("REPRISE_RANK");
    unsetenv("REPRISE_WORLD_SIZE");
    unsetenv("REPRISE_JOB");
    double truth = first_op_mono("b.sbt", shift) - first_op_mono("a.sbt", 0);
    cr_assert(truth > 0, "b ran after a");
    cr_assert(eq(int, tsh("mkdir d && mv a.sbt b.sbt d/"), 0));
    cr_assert(eq(int, run("info d"), 0), "%s", out);
    cr_expect(strstr(out, "job        two-machines: 2 processes") != NULL, "%s", out);
    cr_assert(eq(int, run("export d -f json -o j.json -q"), 0), "%s", out);
    /* the alignment instants, in order of start: rank 0 at 0, then rank 1 */
    cr_assert(eq(int, tsh("grep -o -E '\"(start|bound)_ns\":[^,}]*' j.json"), 0));
    double start[2] = {-1, -1}, bound[2] = {-1, -1};
    char *p = out;
    for (int k = 0; k < 2; k++) {
        p = strstr(p, "\"start_ns\":");
        cr_assert(p != NULL, "%s", out);
        start[k] = strtod(p + 11, NULL);
        p = strstr(p, "\"bound_ns\":");
        cr_assert(p != NULL, "%s", out);
        bound[k] = strtod(p + 11, NULL);
    }
    cr_expect(fabs(start[0]) < 1, "rank 0 starts the job: %.1f", start[0]);
    cr_expect(fabs(start[1] - truth) <= bound[0] + bound[1] + 1000,
              "rank 1 starts %.0f ns after rank 0 on the timeline, %.0f ns in truth (bounds %.0f + "
              "%.0f)",
              start[1], truth, bound[0], bound[1]);
    cr_expect(bound[0] > 0 && bound[0] < 1e6 && bound[1] > 0 && bound[1] < 1e6);
}

/* Each rank capturing itself (`mpirun -np 2 reprise capture -o job.%r.sbt -- PROGRAM`): %r is
 * the rank, the ranks share Open MPI's job id without being told, and the directory of their
 * traces is the job, which checks. Before: both ranks wrote the same file (-o taken as given)
 * and each got a job id of its own. */
Test(job, each_rank_captures_itself_under_mpirun, .timeout = 300)
{
    if (!have_mpirun())
        cr_skip_test("no working mpirun (Debian: openmpi-bin, scripts/deps.sh)");
    char cwd[512] = "";
    if (bin()[0] != '/')
        cr_assert(getcwd(cwd, sizeof cwd - 1) != NULL);
    cr_assert(
        eq(int,
           tsh("mkdir d && env -u REPRISE_JOB mpirun --allow-run-as-root --oversubscribe -np 2 "
               "%s%s%s capture --digests -o d/job.%%r.sbt -- %s/tests/vk/vk_compute",
               cwd, *cwd ? "/" : "", bin(), vkbuild),
           0),
        "%s", out);
    cr_assert(eq(int, tsh("test -s d/job.0.sbt && test -s d/job.1.sbt"), 0), "%s", out);
    cr_assert(eq(int, run("info d"), 0), "%s", out);
    cr_expect(strstr(out, "job        openmpi-") != NULL && strstr(out, ": 2 processes") != NULL,
              "one job, Open MPI's: %s", out);
    cr_assert(eq(int, run("check d --runs 2 -q"), 0), "%s", out);
    cr_expect(strstr(out, "PASS: 2 of 2 processes passed") != NULL, "%s", out);
    cr_assert(eq(int, run("capture -o x.%%r.sbt -- true"), 2), "%s", out);
    cr_expect(strstr(out, "%r is the rank, and no launcher variable gives one here") != NULL, "%s",
              out);
}

/* What a job cannot take, and a job with nothing in it. */
Test(job, usage_and_bad_jobs)
{
    cr_assert(eq(int, tsh("mkdir e"), 0));
    cr_assert(eq(int, run("info e"), 3), "%s", out);
    cr_expect(strstr(out, "no traces in this job") != NULL, "%s", out);
    cr_assert(eq(int, run("info missing.procs"), 3), "%s", out);
    cr_expect(strstr(out, "cannot read the job's manifest missing.procs") != NULL, "%s", out);
    cr_assert(eq(int, run("gen -o e/a.sbt --ops 100"), 0), "%s", out);
    cr_assert(eq(int, run("check e --results e/a.sbt"), 2), "%s", out);
    cr_expect(strstr(out, "is a job") != NULL, "%s", out);
    cr_assert(eq(int, run("export e -f dot"), 2), "%s", out);
    cr_assert(eq(int, run("diff e e/a.sbt"), 2), "%s", out);
    cr_assert(eq(int, run("analyze e --why 3"), 2), "%s", out);
    cr_assert(eq(int, run("view e"), 2), "%s", out);
    cr_expect(strstr(out, "reprise info e lists its traces") != NULL, "%s", out);
    /* gen traces have no rank and no clock: a job of one, placed at 0 */
    cr_assert(eq(int, run("info e"), 0), "%s", out);
    cr_expect(strstr(out, "none (at 0)") != NULL, "%s", out);
}
