/*
 * tests/test_cli.c — the `reprise` binary as users and CI scripts meet it: exit codes, messages
 * that name the problem and the fix, --help on every command, and the format commands (info,
 * view, validate, gen, import) end to end. The binary comes from REPRISE_BIN (set by
 * `make check`), else build/default/reprise.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
