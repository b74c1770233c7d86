/*
 * tests/test_checker.c — the checker (checker/chk.h) on hand-built traces whose answers are
 * known: classification of each finding, the first divergence named at the root of a chain (not
 * downstream), alignment of diff with inserted and removed ops, statistics against values
 * computed by hand, expectations round trip, JSON and JUnit parsed back, the Perfetto diff
 * decoded packet by packet (protobuf-c) against the import rules, and the CLI's exit codes.
 * replays: captures of tests/vk programs checked with real replays on the first Vulkan device
 * (lavapipe): the deterministic vk_compute passes, racy fails at its racy dispatch, an upload
 * byte flipped in the trace is divergent at its first reader. Skipped, saying why, without a
 * device or without the build's binaries (REPRISE_BIN / REPRISE_BUILD, set by `make check`).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checker/chk.h"
#include "format/perfetto_trace.pb-c.h"
#include "format/sbt.h"
#include "format/sbt_vk.h"
#include "replay/replay.h"
#include "tests/testenv.h"

/* ========================================================================================== */
/* Hand-built traces                                                                          */
/* ========================================================================================== */

/* One op: a kernel (kernel >= 1: index into the kernel names), a copy or a HOST_READ; reads and
 * writes name resources 1.., bytes [0, 256) (a kernel's write is a may-write: the bound range,
 * which it need not write all of); digest 0 = none. */
struct top {
    uint32_t kind, stream, kernel;
    uint64_t db, dur; /* device time, ns; dur 0 = none */
    uint32_t rd, wr;  /* resource read / written, 0 = none */
    uint64_t digest;
    const char *error;
    uint32_t geom; /* grid x; bytes of a copy or fill (0: 256) */
};

static const char *const knames[] = {"", "produce", "consume", "finish", "other", "k<&>\"'\x01"};

/* Trace-wide extras of the next write_trace: metadata pairs (a replay's regime) and an
 * incomplete mark. Reset by every suite's init. */
static const char *tx_meta[8][2];
static const char *tx_incomplete;
static const char *tx_unmodelled; /* a call that affects replay, 3 times from op 2 */

static void write_trace(const char *path, const struct top *ops, size_t n)
{
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(path, NULL, &w), 0), "%s", sbt_errmsg());
    uint32_t id, dev, s[3], k[6];
    cr_assert(eq(int, sbt_writer_intern(w, "lavapipe", &id), 0));
    struct sbt_device d = {.api = SBT_API_VULKAN, .name = id};
    sbt_writer_add_device(w, &d, &dev);
    for (int i = 0; i < 3; i++) {
        struct sbt_stream st = {.device = dev, .kind = SBT_STREAM_QUEUE};
        sbt_writer_add_stream(w, &st, &s[i]);
    }
    for (int i = 1; i < 6; i++) {
        sbt_writer_intern(w, knames[i], &id);
        struct sbt_kernel kk = {.name = id};
        sbt_writer_add_kernel(w, &kk, &k[i]);
    }
    for (size_t i = 0; i < 8 && tx_meta[i][0]; i++)
        cr_assert(eq(int, sbt_writer_meta(w, tx_meta[i][0], tx_meta[i][1]), 0));
    for (size_t i = 0; i < n; i++) {
        const struct top *t = &ops[i];
        struct sbt_access acc[2];
        uint32_t na = 0;
        if (t->rd)
            acc[na++] = (struct sbt_access){t->rd, 0, 256, SBT_ACCESS_READ};
        if (t->wr)
            acc[na++] = (struct sbt_access){t->wr, 0, 256, SBT_ACCESS_WRITE};
        struct sbt_op op = {.kind = t->kind ? t->kind : SBT_OP_KERNEL,
                            .stream = s[t->stream],
                            .host_begin = 1000 + i * 10,
                            .host_end = 1005 + i * 10,
                            .n_access = na,
                            .access = acc};
        if (op.kind == SBT_OP_KERNEL) {
            op.flags |= SBT_OPF_KERNEL | SBT_OPF_GEOM;
            op.kernel = k[t->kernel ? t->kernel : 1];
            op.grid[0] = t->geom ? t->geom : 1, op.grid[1] = op.grid[2] = 1;
            op.block[0] = 64, op.block[1] = op.block[2] = 1;
        }
        if (op.kind == SBT_OP_COPY || op.kind == SBT_OP_FILL) {
            op.subkind = op.kind == SBT_OP_COPY ? SBT_COPY_D2D : 0;
            op.flags |= SBT_OPF_BYTES;
            op.bytes = t->geom ? t->geom : 256; /* geom: the byte count of a copy or fill */
        }
        if (t->dur) {
            op.flags |= SBT_OPF_DEV_TIME;
            op.dev_begin = t->db ? t->db : 2000 + i * 1000;
            op.dev_end = op.dev_begin + t->dur;
        }
        if (t->digest) {
            op.flags |= SBT_OPF_DIGEST;
            op.digest = (sbt_hash){t->digest, 0x1234};
        }
        if (t->error) {
            op.flags |= SBT_OPF_ERROR;
            sbt_writer_intern(w, t->error, &op.error);
        }
        cr_assert(eq(int, sbt_writer_add_op(w, &op, NULL), 0), "%s", sbt_errmsg());
    }
    if (tx_incomplete)
        cr_assert(eq(int, sbt_writer_mark_incomplete(w, tx_incomplete), 0));
    if (tx_unmodelled) {
        cr_assert(
            eq(int, sbt_writer_unsupported(w, tx_unmodelled, 3, 2, SBT_UNMODELLED_AFFECTS), 0));
        cr_assert(eq(int, sbt_writer_unsupported(w, "vkGetPhysicalDeviceFoo", 9, 0, 0), 0));
    }
    cr_assert(eq(int, sbt_writer_close(w), 0), "%s", sbt_errmsg());
}

static char dir[64];

static void mkdir_tmp(void)
{
    strcpy(dir, "/tmp/test_checker_XXXXXX");
    cr_assert(mkdtemp(dir) != NULL);
    memset(tx_meta, 0, sizeof tx_meta);
    tx_incomplete = tx_unmodelled = NULL;
}

static void rm_tmp(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert(system(cmd) == 0);
}

static const char *pathf(const char *name)
{
    static char buf[8][128];
    static int i;
    char *p = buf[i++ % 8];
    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

static sbt_reader *open_r(const char *path)
{
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), 0), "%s", sbt_errmsg());
    return r;
}

/* capture + results, checked */
static struct chk_report *check_n(const struct top *cap, size_t ncap, const struct top *const *runs,
                                  const size_t *nrun, uint32_t n, const struct chk_opts *o)
{
    write_trace(pathf("cap.sbt"), cap, ncap);
    sbt_reader *rc = open_r(pathf("cap.sbt")), *rr[8];
    for (uint32_t i = 0; i < n; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "run%u.sbt", i);
        write_trace(pathf(nm), runs[i], nrun[i]);
        rr[i] = open_r(pathf(nm));
    }
    struct chk_report *rep;
    cr_assert(eq(int, chk_check(rc, rr, n, NULL, 0, o, &rep), 0), "%s", chk_errmsg());
    for (uint32_t i = 0; i < n; i++)
        sbt_reader_close(rr[i]);
    sbt_reader_close(rc);
    return rep;
}

/* A chain produce(r1) -> consume(r1 -> r2) -> finish(r2 -> r3) on stream 0, and an independent
 * "other" (r4) on stream 1. Digests: 10, 20, 30, 40. */
#define CHAIN(d0, d1, d2, d3)                                 \
    {                                                         \
        {SBT_OP_KERNEL, 0, 1, 0, 100, 0, 1, d0, NULL, 0},     \
            {SBT_OP_KERNEL, 0, 2, 0, 100, 1, 2, d1, NULL, 0}, \
            {SBT_OP_KERNEL, 1, 4, 0, 100, 0, 4, d3, NULL, 0}, \
            {SBT_OP_KERNEL, 0, 3, 0, 100, 2, 3, d2, NULL, 0}, \
    }

/* ========================================================================================== */
/* Classification, coverage and first divergence                                              */
/* ========================================================================================== */

TestSuite(classify, .init = mkdir_tmp, .fini = rm_tmp);

Test(classify, all_match_passes_and_says_what_it_means)
{
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    const struct top *runs[] = {cap, cap, cap};
    const size_t n[] = {4, 4, 4};
    struct chk_report *rep = check_n(cap, 4, runs, n, 3, NULL);
    cr_expect(eq(int, rep->failed, 0));
    cr_expect(eq(u64, rep->n_matched, 4));
    cr_expect(eq(u64, rep->n_device_ops, 4));
    cr_expect(eq(u64, rep->n_verified, 4));
    cr_expect(eq(u64, rep->n_unverified, 0));
    cr_expect(eq(int, rep->has_first, 0));
    /* 3 runs each compared with the capture: 1 - 0.05^(1/3) */
    cr_expect(eq(u32, rep->n_compared_runs, 3));
    cr_expect(fabs(rep->pass_bound - (1 - pow(0.05, 1.0 / 3))) < 1e-12);
    chk_report_free(rep);
}

Test(classify, divergent_root_not_downstream)
{
    /* the runs agree among themselves; produce differs from the capture, and so (downstream)
     * do consume and finish; other is fine */
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    const struct top run[] = CHAIN(11, 21, 31, 40);
    const struct top *runs[] = {run, run};
    const size_t n[] = {4, 4};
    struct chk_report *rep = check_n(cap, 4, runs, n, 2, NULL);
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 3));
    cr_expect(eq(u64, rep->count[CHK_NONDETERMINISTIC], 0));
    cr_expect(eq(u64, rep->n_roots, 1));
    cr_assert(eq(int, rep->has_first, 1));
    cr_expect(eq(u64, rep->first.seq, 0));
    cr_expect(eq(str, rep->first.name, "produce"));
    cr_expect(eq(u32, rep->first.cls, CHK_DIVERGENT));
    for (uint32_t i = 0; i < rep->n_findings; i++)
        cr_expect(eq(int, rep->findings[i].is_root, rep->findings[i].seq == 0));
    chk_report_free(rep);
}

Test(classify, nondeterministic_in_the_middle)
{
    /* run 2 differs from run 1 at consume (and so at finish): consume is the root */
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    const struct top r2[] = CHAIN(10, 22, 32, 40);
    const struct top *runs[] = {cap, r2, cap};
    const size_t n[] = {4, 4, 4};
    struct chk_report *rep = check_n(cap, 4, runs, n, 3, NULL);
    cr_expect(eq(u64, rep->count[CHK_NONDETERMINISTIC], 2));
    cr_assert(eq(int, rep->has_first, 1));
    cr_expect(eq(str, rep->first.name, "consume"));
    cr_expect(eq(u32, rep->first.cls, CHK_NONDETERMINISTIC));
    cr_expect(eq(u32, rep->first.run, 2));
    cr_expect(eq(u64, rep->n_roots, 1));
    chk_report_free(rep);
}

Test(classify, match_stops_the_taint)
{
    /* produce differs, but consume's output still matches: finish's mismatch is its own root */
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    const struct top run[] = CHAIN(11, 20, 31, 40);
    const struct top *runs[] = {run};
    const size_t n[] = {4};
    struct chk_report *rep = check_n(cap, 4, runs, n, 1, NULL);
    cr_expect(eq(u64, rep->n_roots, 2));
    cr_expect(eq(u64, rep->first.seq, 0));
    chk_report_free(rep);
}

/* A divergence whose inputs came from ops no comparison vouched for is not a located root: the
 * report says between which ops the root lies, never "its inputs matched" (a capture without
 * --digests has digests only where the program read back). */
Test(classify, a_divergence_after_unverified_writers_is_not_located)
{
    const struct top cap[] = CHAIN(0, 0, 30, 40); /* produce and consume: no digest */
    const struct top run[] = CHAIN(11, 12, 31, 40);
    const struct top *runs[] = {run};
    const size_t n[] = {4};
    struct chk_report *rep = check_n(cap, 4, runs, n, 1, NULL);
    cr_assert(rep->has_first);
    cr_expect(eq(u64, rep->first.seq, 3));
    cr_expect(eq(u64, rep->first_after, 0), "the root lies between op 0 (the first writer of what "
                                            "op 3 read that nothing compared) and op 3");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    chk_report_text(rep, f, 10);
    fclose(f);
    cr_expect(strstr(text, "NOT LOCATED") && strstr(text, "between op 0 and op 3") &&
                  !strstr(text, "its inputs matched"),
              "%s", text);
    free(text);
    chk_report_free(rep);
    /* every input compared: located */
    const struct top cap2[] = CHAIN(10, 20, 30, 40);
    const struct top run2[] = CHAIN(10, 20, 31, 40);
    const struct top *runs2[] = {run2};
    rep = check_n(cap2, 4, runs2, n, 1, NULL);
    cr_assert(rep->has_first);
    cr_expect(eq(u64, rep->first.seq, 3));
    cr_expect(eq(u64, rep->first_after, UINT64_MAX));
    chk_report_free(rep);
}

Test(classify, unverified_op_passes_the_taint_on)
{
    /* consume has no digest anywhere: finish is downstream of produce through it, and consume
     * is listed as unverified (no digest), not as passing */
    const struct top cap[] = CHAIN(10, 0, 30, 40);
    const struct top run[] = CHAIN(11, 0, 31, 40);
    const struct top *runs[] = {run};
    const size_t n[] = {4};
    struct chk_report *rep = check_n(cap, 4, runs, n, 1, NULL);
    cr_expect(eq(u64, rep->n_roots, 1));
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 2));
    cr_expect(eq(u64, rep->n_device_ops, 4));
    cr_expect(eq(u64, rep->n_verified, 3));
    cr_expect(eq(u64, rep->n_unverified, 1));
    cr_assert(eq(u32, rep->n_unverified_listed, 1));
    cr_expect(eq(u64, rep->unverified[0].seq, 1));
    cr_expect(eq(u32, rep->unverified[0].why, CHK_UNV_NO_DIGEST));
    cr_expect(eq(str, rep->unverified[0].name, "consume"));
    chk_report_free(rep);
}

Test(classify, agreement_without_reference_passes_the_taint_on)
{
    /* consume has no capture digest and the runs agree on it (as a copy of a changed upload
     * does): that says nothing about its input, so finish is still downstream of produce */
    const struct top cap[] = CHAIN(10, 0, 30, 40);
    const struct top run[] = CHAIN(11, 21, 31, 40);
    const struct top *runs[] = {run, run};
    const size_t n[] = {4, 4};
    struct chk_report *rep = check_n(cap, 4, runs, n, 2, NULL);
    cr_expect(eq(u64, rep->n_roots, 1));
    cr_expect(eq(u64, rep->first.seq, 0));
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 2));
    cr_expect(eq(u64, rep->n_matched, 2), "consume (runs agree) and other");
    chk_report_free(rep);
}

/* produce writes r1 and differs; a kernel "other" then binds all of r1 for writing but writes
 * part of it (a may-write), unverified; consume reads r1 and differs. */
Test(classify, unverified_kernel_does_not_clear_what_it_may_not_have_written)
{
    const struct top cap[] = {
        {SBT_OP_KERNEL, 0, 1, 0, 100, 0, 1, 10, NULL, 0},
        {SBT_OP_KERNEL, 0, 4, 0, 100, 0, 1, 0, NULL, 0},
        {SBT_OP_KERNEL, 0, 2, 0, 100, 1, 2, 20, NULL, 0},
    };
    const struct top run[] = {
        {SBT_OP_KERNEL, 0, 1, 0, 100, 0, 1, 11, NULL, 0},
        {SBT_OP_KERNEL, 0, 4, 0, 100, 0, 1, 0, NULL, 0},
        {SBT_OP_KERNEL, 0, 2, 0, 100, 1, 2, 21, NULL, 0},
    };
    const struct top *runs[] = {run};
    const size_t n[] = {3};
    struct chk_report *rep = check_n(cap, 3, runs, n, 1, NULL);
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 2));
    cr_expect(eq(u64, rep->n_roots, 1), "consume read bytes \"other\" may have left from produce");
    cr_expect(eq(u64, rep->first.seq, 0));
    chk_report_free(rep);
    /* the same with a copy in the middle: a copy overwrites its whole range with bytes read
     * from an untouched resource, so consume's difference is its own */
    struct top cap2[3], run2[3];
    memcpy(cap2, cap, sizeof cap);
    memcpy(run2, run, sizeof run);
    cap2[1] = run2[1] = (struct top){SBT_OP_COPY, 0, 0, 0, 0, 5, 1, 0, NULL, 0};
    rep = check_n(cap2, 3, (const struct top *[]){run2}, n, 1, NULL);
    cr_expect(eq(u64, rep->n_roots, 2));
    chk_report_free(rep);
}

Test(classify, mismatch_from_bytes_left_in_place_is_not_a_root)
{
    /* produce differs in r1; "other" reads only r5 (clean) and binds all of r1 but writes, say,
     * its first 64 bytes: its digest covers the whole bound range, 192 bytes of which still
     * hold produce's difference */
    const struct top cap[] = {
        {SBT_OP_KERNEL, 0, 1, 0, 100, 0, 1, 10, NULL, 0},
        {SBT_OP_KERNEL, 0, 4, 0, 100, 5, 1, 40, NULL, 0},
    };
    const struct top run[] = {
        {SBT_OP_KERNEL, 0, 1, 0, 100, 0, 1, 11, NULL, 0},
        {SBT_OP_KERNEL, 0, 4, 0, 100, 5, 1, 41, NULL, 0},
    };
    const size_t n[] = {2};
    struct chk_report *rep = check_n(cap, 2, (const struct top *[]){run}, n, 1, NULL);
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 2));
    cr_expect(eq(u64, rep->n_roots, 1));
    for (uint32_t i = 0; i < rep->n_findings; i++)
        cr_expect(eq(int, rep->findings[i].is_root, rep->findings[i].seq == 0));
    chk_report_free(rep);
    /* written elsewhere (r6): nothing of produce's is in its range, so it is a root */
    struct top cap2[2], run2[2];
    memcpy(cap2, cap, sizeof cap);
    memcpy(run2, run, sizeof run);
    cap2[1].wr = run2[1].wr = 6;
    rep = check_n(cap2, 2, (const struct top *[]){run2}, n, 1, NULL);
    cr_expect(eq(u64, rep->n_roots, 2));
    chk_report_free(rep);
}

Test(classify, nothing_verified_is_a_failure)
{
    /* no digest anywhere: every device op unverified, the gate fails saying why */
    const struct top cap[] = CHAIN(0, 0, 0, 0);
    const struct top *runs[] = {cap, cap};
    const size_t n[] = {4, 4};
    struct chk_report *rep = check_n(cap, 4, runs, n, 2, NULL);
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(eq(u64, rep->n_verified, 0));
    cr_expect(eq(u64, rep->n_unverified, 4));
    cr_expect(eq(u64, rep->n_unverified_why[CHK_UNV_NO_DIGEST], 4));
    cr_expect(strstr(rep->fail_reason, "nothing was verified") != NULL, "%s", rep->fail_reason);
    chk_report_free(rep);
    /* digests in one run only: one side, still nothing compared */
    const struct top one[] = CHAIN(10, 20, 30, 40);
    rep = check_n(cap, 4, (const struct top *[]){one}, n, 1, NULL);
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(eq(u64, rep->n_unverified_why[CHK_UNV_ONE_SIDE], 4));
    chk_report_free(rep);
    /* no runs at all */
    rep = check_n(one, 4, NULL, NULL, 0, NULL);
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(strstr(rep->fail_reason, "no replay results") != NULL, "%s", rep->fail_reason);
    chk_report_free(rep);
}

Test(classify, missing_extra_error)
{
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    /* run 1: the last op is missing; run 2: one more op beyond the capture, and an error */
    const struct top r1[] = CHAIN(10, 20, 30, 40);
    struct top r2[5] = CHAIN(10, 20, 30, 40);
    r2[4] = (struct top){SBT_OP_KERNEL, 2, 4, 0, 100, 0, 5, 50, NULL, 0};
    r2[2].error = "VK_ERROR_DEVICE_LOST";
    const struct top *runs[] = {r1, r2};
    const size_t n[] = {3, 5};
    struct chk_report *rep = check_n(cap, 4, runs, n, 2, NULL);
    cr_expect(eq(u64, rep->count[CHK_MISSING], 1));
    cr_expect(eq(u64, rep->count[CHK_EXTRA], 1));
    cr_expect(eq(u64, rep->count[CHK_REPLAY_ERROR], 1));
    int seen_err = 0;
    for (uint32_t i = 0; i < rep->n_findings; i++)
        if (rep->findings[i].cls == CHK_REPLAY_ERROR) {
            cr_expect(eq(u64, rep->findings[i].seq, 2));
            cr_expect(strstr(rep->findings[i].note, "DEVICE_LOST") != NULL);
            seen_err = 1;
        }
    cr_expect(seen_err);
    chk_report_free(rep);
}

Test(classify, incomplete_traces_are_said_so)
{
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    tx_incomplete = "vkCmdDrawIndirect passed through unrecorded";
    struct chk_report *rep = check_n(cap, 4, (const struct top *[]){cap}, (const size_t[]){4}, 1,
                                     &CHK_OPTS(.ref_name = "c.sbt"));
    cr_expect(eq(int, rep->incomplete, 1));
    cr_expect(strstr(rep->incomplete_why, "c.sbt: vkCmdDrawIndirect") != NULL, "%s",
              rep->incomplete_why);
    chk_report_free(rep);
    tx_incomplete = NULL;
    rep = check_n(cap, 4, (const struct top *[]){cap}, (const size_t[]){4}, 1, NULL);
    cr_expect(eq(int, rep->incomplete, 0));
    chk_report_free(rep);
}

/* ========================================================================================== */
/* diff alignment                                                                             */
/* ========================================================================================== */

TestSuite(align, .init = mkdir_tmp, .fini = rm_tmp);

static struct chk_report *diff_of(const struct top *a, size_t na, const struct top *b, size_t nb,
                                  uint32_t window)
{
    write_trace(pathf("a.sbt"), a, na);
    write_trace(pathf("b.sbt"), b, nb);
    sbt_reader *ra = open_r(pathf("a.sbt")), *rb = open_r(pathf("b.sbt"));
    struct chk_report *rep;
    cr_assert(eq(int, chk_diff(ra, rb, &CHK_OPTS(.window = window, .collect_events = 1), &rep), 0),
              "%s", chk_errmsg());
    sbt_reader_close(ra);
    sbt_reader_close(rb);
    return rep;
}

Test(align, inserted_and_removed_ops)
{
    /* stream 0: A = k1 k2 k3 k1(g2) k2(g3); B = k1 k2 other k3 k2(g3): "other" inserted, k1(g2)
     * removed (geometry is part of the key). Stream 1 identical. */
    const struct top a[] = {
        {SBT_OP_KERNEL, 0, 1, 0, 100, 0, 1, 1, NULL, 1},
        {SBT_OP_KERNEL, 1, 4, 0, 100, 0, 9, 9, NULL, 1},
        {SBT_OP_KERNEL, 0, 2, 0, 100, 1, 2, 2, NULL, 1},
        {SBT_OP_KERNEL, 0, 3, 0, 100, 2, 3, 3, NULL, 1},
        {SBT_OP_KERNEL, 0, 1, 0, 100, 0, 1, 4, NULL, 2},
        {SBT_OP_KERNEL, 0, 2, 0, 100, 1, 2, 5, NULL, 3},
    };
    const struct top b[] = {
        {SBT_OP_KERNEL, 0, 1, 0, 100, 0, 1, 1, NULL, 1},
        {SBT_OP_KERNEL, 0, 2, 0, 100, 1, 2, 2, NULL, 1},
        {SBT_OP_KERNEL, 0, 4, 0, 100, 0, 7, 7, NULL, 1},
        {SBT_OP_KERNEL, 1, 4, 0, 100, 0, 9, 9, NULL, 1},
        {SBT_OP_KERNEL, 0, 3, 0, 100, 2, 3, 3, NULL, 1},
        {SBT_OP_KERNEL, 0, 2, 0, 100, 1, 2, 5, NULL, 3},
    };
    struct chk_report *rep = diff_of(a, 6, b, 6, 4);
    cr_expect(eq(u64, rep->count[CHK_MISSING], 1));
    cr_expect(eq(u64, rep->count[CHK_EXTRA], 1));
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 0));
    cr_expect(eq(u64, rep->n_matched, 5));
    for (uint32_t i = 0; i < rep->n_findings; i++) {
        if (rep->findings[i].cls == CHK_MISSING)
            cr_expect(eq(u64, rep->findings[i].seq, 4)); /* k1 with grid 2 */
        if (rep->findings[i].cls == CHK_EXTRA)
            cr_expect(eq(str, rep->findings[i].name, "other"));
    }
    chk_report_free(rep);
    /* a trace against itself: nothing */
    rep = diff_of(a, 6, a, 6, 4);
    cr_expect(eq(int, rep->failed, 0));
    cr_expect(eq(u64, rep->n_matched, 6));
    chk_report_free(rep);
}

/* n launches of one kernel (same key) with digests 1..n on stream 0 */
static void same_kernel(struct top *t, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        t[i] = (struct top){SBT_OP_KERNEL, 0, 2, 0, 100, 1, 2, 1 + i, NULL, 1};
}

Test(align, duplicated_launch_costs_one_finding)
{
    /* B repeats launch 50 right after itself (same kernel and geometry, its own outputs): the
     * other 100 still pair with their counterparts, none is reported as differing */
    static struct top a[100], b[101];
    same_kernel(a, 100);
    memcpy(b, a, 50 * sizeof *a);
    b[50] = a[49];
    b[50].digest = 5000;
    memcpy(b + 51, a + 50, 50 * sizeof *a);
    struct chk_report *rep = diff_of(a, 100, b, 101, 16);
    cr_expect(eq(u64, rep->count[CHK_EXTRA], 1));
    cr_expect(eq(u64, rep->count[CHK_MISSING], 0));
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 0));
    cr_expect(eq(u64, rep->n_matched, 100));
    cr_expect(eq(u64, rep->findings[0].seq_run, 50));
    chk_report_free(rep);
    /* a duplicate that computed the same as its neighbour: one extra either way */
    b[50].digest = b[49].digest;
    rep = diff_of(a, 100, b, 101, 16);
    cr_expect(eq(u64, rep->count[CHK_EXTRA], 1));
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 0));
    chk_report_free(rep);
}

Test(align, removed_and_inserted_far_apart_with_a_small_window)
{
    /* 2000 launches alternating two kernels; B drops A's ops 100, 700 and 701, and inserts
     * another kernel before A's 1500 and a duplicate of A's 1800 after it. Window 16. */
    static struct top a[2000], b[2000];
    for (uint32_t i = 0; i < 2000; i++)
        a[i] = (struct top){SBT_OP_KERNEL, 0, 1 + i % 2, 0, 100, 1, 2, 1 + i, NULL, 1};
    size_t nb = 0;
    for (uint32_t i = 0; i < 2000; i++) {
        if (i == 100 || i == 700 || i == 701)
            continue;
        if (i == 1500)
            b[nb++] = (struct top){SBT_OP_KERNEL, 0, 4, 0, 100, 0, 7, 7777, NULL, 1};
        b[nb++] = a[i];
        if (i == 1800) {
            b[nb] = a[i];
            b[nb++].digest = 8888;
        }
    }
    struct chk_report *rep = diff_of(a, 2000, b, nb, 16);
    cr_expect(eq(u64, rep->count[CHK_MISSING], 3));
    cr_expect(eq(u64, rep->count[CHK_EXTRA], 2));
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 0));
    cr_expect(eq(u64, rep->n_matched, 1997));
    chk_report_free(rep);
}

Test(align, a_changed_output_stays_one_aligned_mismatch)
{
    /* same keys, one digest differs: a deletion and an insertion of one key pair up again */
    static struct top a[40], b[40];
    same_kernel(a, 40);
    memcpy(b, a, sizeof a);
    b[17].digest = 999;
    b[30].digest = 998;
    struct chk_report *rep = diff_of(a, 40, b, 40, 8);
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 2));
    cr_expect(eq(u64, rep->count[CHK_MISSING], 0));
    cr_expect(eq(u64, rep->count[CHK_EXTRA], 0));
    cr_expect(eq(u64, rep->n_verified, 40));
    chk_report_free(rep);
}

/* ========================================================================================== */
/* Statistics with known answers                                                              */
/* ========================================================================================== */

Test(stats, summary_by_hand)
{
    double x[] = {9, 1, 8, 2, 7, 3, 6, 4, 5};
    struct chk_summary s;
    cr_assert(eq(int, chk_summarize(x, 9, 0.95, &s), 0));
    cr_expect(eq(dbl, s.median, 5));
    cr_expect(eq(dbl, s.q1, 3));
    cr_expect(eq(dbl, s.q3, 7));
    cr_expect(eq(dbl, s.iqr, 4));
    cr_expect(eq(dbl, s.mad, 2));
    /* n = 9: P(B <= 1) = 10/512, 2x = 0.039 <= 0.05; P(B <= 2) = 46/512 too large: k = 2 */
    cr_expect(eq(dbl, s.ci_lo, 2));
    cr_expect(eq(dbl, s.ci_hi, 8));
    cr_expect(fabs(s.ci_level - (1 - 20.0 / 512)) < 1e-12);
    /* three runs: the widest CI is (min, max) and covers 75% only */
    double y[] = {3, 1, 2};
    cr_assert(eq(int, chk_summarize(y, 3, 0.95, &s), 0));
    cr_expect(eq(dbl, s.ci_lo, 1));
    cr_expect(eq(dbl, s.ci_hi, 3));
    cr_expect(fabs(s.ci_level - 0.75) < 1e-12);
    cr_expect(eq(int, chk_summarize(y, 3, 1.5, &s), SBT_EINVAL));
}

Test(stats, mann_whitney_exact_with_and_without_ties)
{
    double x[] = {6, 7, 8, 9, 10}, y[] = {1, 2, 3, 4, 5};
    double u;
    /* complete separation: U = 25, exact p = 1 / C(10, 5) */
    cr_expect(fabs(chk_mann_whitney(x, 5, y, 5, &u) - 1.0 / 252) < 1e-12);
    cr_expect(eq(dbl, u, 25));
    cr_expect(fabs(chk_mann_whitney(y, 5, x, 5, &u) - 1.0) < 1e-12);
    cr_expect(fabs(chk_mann_whitney_min_p(5, 5) - 1.0 / 252) < 1e-15);
    cr_expect(fabs(chk_mann_whitney_min_p(5, 10) - 1.0 / 3003) < 1e-15);
    /* x = {2, 4}, y = {1, 3}: U = 3; P(U >= 3) = 2/6 (U over 6 arrangements: 0,1,2,2,3,4) */
    double a[] = {2, 4}, b[] = {1, 3};
    cr_expect(fabs(chk_mann_whitney(a, 2, b, 2, &u) - 2.0 / 6) < 1e-12);
    cr_expect(eq(dbl, u, 3));
    /* ties, exactly: x = {2, 2}, y = {1, 2}. Midranks 1, 3, 3, 3; the 6 ways to pick x's two
     * ranks give sums 4, 4, 4, 6, 6, 6; x's is 6: P = 3/6 */
    double c[] = {2, 2}, d[] = {1, 2};
    cr_expect(fabs(chk_mann_whitney(c, 2, d, 2, &u) - 0.5) < 1e-12);
    cr_expect(eq(dbl, u, 3));
    /* all tied: no evidence at all */
    double t[] = {5, 5, 5, 5};
    cr_expect(fabs(chk_mann_whitney(t, 4, t, 4, NULL) - 1.0) < 1e-12);
    /* beyond 60 values: the normal approximation, still far below 1e-6 when separated */
    double big[80];
    for (int i = 0; i < 80; i++)
        big[i] = i;
    cr_expect(chk_mann_whitney(big + 40, 40, big, 40, NULL) < 1e-6);
    cr_expect(chk_mann_whitney(big, 40, big + 40, 40, NULL) > 0.99);
}

Test(stats, holm_by_hand)
{
    /* p = .01 .04 .03 .005 (n = 4): sorted .005 .01 .03 .04 -> x4 x3 x2 x1 = .02 .03 .06 .04,
     * made monotone: .02 .03 .06 .06 */
    double p[] = {0.01, 0.04, 0.03, 0.005}, adj[4];
    cr_assert(eq(int, chk_holm(p, 4, adj), 0));
    cr_expect(fabs(adj[3] - 0.02) < 1e-12);
    cr_expect(fabs(adj[0] - 0.03) < 1e-12);
    cr_expect(fabs(adj[2] - 0.06) < 1e-12);
    cr_expect(fabs(adj[1] - 0.06) < 1e-12);
    double q[] = {0.9, 0.8};
    chk_holm(q, 2, q); /* in place; capped at 1 */
    cr_expect(eq(dbl, q[0], 1));
    cr_expect(eq(dbl, q[1], 1));
}

Test(stats, ratio_estimate_and_its_interval)
{
    /* x = 2 y exactly: every ratio is 2 */
    double y[] = {100, 110, 120, 130, 140, 150}, x[6];
    for (int i = 0; i < 6; i++)
        x[i] = 2 * y[i];
    double r, lo, hi, level;
    cr_assert(eq(int, chk_ratio_estimate(x, 6, y, 6, 0.95, &r, &lo, &hi, &level), 0));
    /* 36 ratios 2 y_i / y_j: the median is 2 by symmetry of log ratios */
    cr_expect(fabs(r - 2) < 1e-9, "%g", r);
    cr_expect(lo < 2 && hi > 2);
    /* n = m = 6: the counts of U = 0, 1, ... are 1 1 2 3 5 7 11 (partitions in a 6 x 6 box),
     * so P(U <= 5) = 19/924 = 0.0206 <= 0.025 < P(U <= 6) = 30/924: k = 6, coverage
     * 1 - 2 x 19/924 */
    cr_expect(fabs(level - (1 - 38.0 / 924)) < 1e-12, "%g", level);
    /* one value a side: the ratio, coverage 0 */
    cr_assert(eq(int, chk_ratio_estimate(x, 1, y, 1, 0.95, &r, &lo, &hi, &level), 0));
    cr_expect(fabs(r - 2) < 1e-12);
    cr_expect(eq(dbl, level, 0));
    cr_expect(eq(int, chk_ratio_estimate(x, 0, y, 1, 0.95, &r, &lo, &hi, &level), SBT_EINVAL));
}

Test(stats, what_a_pass_means)
{
    cr_expect(eq(dbl, chk_no_difference_bound(0, 0.95), 1));
    cr_expect(fabs(chk_no_difference_bound(1, 0.95) - 0.95) < 1e-12);
    /* rule of three: about 3/N */
    double b = chk_no_difference_bound(100, 0.95);
    cr_expect(b > 0.029 && b < 0.031, "%g", b);
}

/* ========================================================================================== */
/* Tolerances: exact ULPs                                                                      */
/* ========================================================================================== */

static uint64_t ulp64(double a, double b)
{
    return chk_ulp_distance(&a, &b, CHK_ELEM_F64);
}
static uint64_t ulp32(float a, float b)
{
    return chk_ulp_distance(&a, &b, CHK_ELEM_F32);
}
static uint64_t ulpbits(uint64_t a, uint64_t b, uint32_t e)
{
    return chk_ulp_distance(&a, &b, e); /* little-endian: the low bytes are the element */
}

Test(tolerance, parse)
{
    struct chk_tolerance t;
    cr_expect(eq(int, chk_tolerance_parse("ulp:4", &t), 0));
    cr_expect(eq(u32, t.kind, CHK_TOL_ULP));
    cr_expect(eq(u64, t.ulps, 4));
    cr_expect(eq(int, chk_tolerance_parse("ulp:18446744073709551615", &t), 0));
    cr_expect(eq(u64, t.ulps, UINT64_MAX));
    cr_expect(eq(int, chk_tolerance_parse("ulp:18446744073709551616", &t), SBT_EINVAL));
    cr_expect(eq(int, chk_tolerance_parse("ulp:9007199254740993", &t), 0));
    cr_expect(eq(u64, t.ulps, 9007199254740993ull), "exact above 2^53");
    cr_expect(eq(int, chk_tolerance_parse("ulp:-1", &t), SBT_EINVAL));
    cr_expect(eq(int, chk_tolerance_parse("ulp:1.5", &t), SBT_EINVAL));
    cr_expect(eq(int, chk_tolerance_parse("abs:1e-3", &t), 0));
    cr_expect(eq(int, chk_tolerance_parse("foo:1", &t), SBT_EINVAL));
    cr_expect(strstr(chk_errmsg(), "foo:1") != NULL);
}

Test(tolerance, f64_ulp0_catches_one_ulp)
{
    double a[] = {1.0, 3.0}, b[] = {1.0, nextafter(3.0, 4.0)};
    struct chk_tolerance t;
    int within;
    double md;
    chk_tolerance_parse("ulp:0", &t);
    cr_assert(eq(int, chk_compare_bytes(a, b, 16, 16, CHK_ELEM_F64, &t, &within, &md), 0));
    cr_expect(eq(int, within, 0), "a 1-ULP f64 difference is outside ulp:0");
    cr_expect(eq(dbl, md, 1));
    chk_tolerance_parse("ulp:1", &t);
    chk_compare_bytes(a, b, 16, 16, CHK_ELEM_F64, &t, &within, &md);
    cr_expect(eq(int, within, 1));
    /* far from 1: still one */
    cr_expect(eq(u64, ulp64(1e300, nextafter(1e300, 0)), 1));
    cr_expect(eq(u64, ulp64(-1e-300, nextafter(-1e-300, -1)), 1));
    cr_expect(eq(u64, ulp64(1.0, 1.0 + 0x1p-52 * 5), 5));
}

Test(tolerance, edges_of_every_float_format)
{
    /* f64 */
    cr_expect(eq(u64, ulp64(0.0, -0.0), 0), "+0 and -0 are equal");
    cr_expect(eq(u64, ulp64(0x1p-1074, 0.0), 1), "smallest subnormal next to zero");
    cr_expect(eq(u64, ulp64(0x1p-1074, -0x1p-1074), 2), "across zero");
    cr_expect(eq(u64, ulp64(0x1p-1022, nextafter(0x1p-1022, 0)), 1), "normal/subnormal edge");
    cr_expect(eq(u64, ulp64(DBL_MAX, INFINITY), 1), "largest finite next to infinity");
    cr_expect(eq(u64, ulp64(-DBL_MAX, -INFINITY), 1));
    cr_expect(eq(u64, ulp64(DBL_MAX, -DBL_MAX), 2 * 0x7fefffffffffffffull), "no overflow");
    cr_expect(eq(u64, ulp64(INFINITY, -INFINITY), 2 * 0x7ff0000000000000ull));
    cr_expect(eq(u64, ulpbits(0x7ff8000000000001ull, 0xfff0000000000abcull, CHK_ELEM_F64), 0),
              "NaNs of any payload and sign are equal");
    cr_expect(eq(u64, ulp64(NAN, 1.0), UINT64_MAX));
    cr_expect(eq(u64, ulp64(NAN, INFINITY), UINT64_MAX));
    /* f32 */
    cr_expect(eq(u64, ulp32(0.0f, -0.0f), 0));
    cr_expect(eq(u64, ulp32(0x1p-149f, -0x1p-149f), 2));
    cr_expect(eq(u64, ulp32(FLT_MAX, INFINITY), 1));
    cr_expect(eq(u64, ulp32(1.0f, nextafterf(1.0f, 2.0f)), 1));
    cr_expect(eq(u64, ulpbits(0x7fc00001, 0x7f800002, CHK_ELEM_F32), 0), "NaN payloads");
    cr_expect(eq(u64, ulpbits(0x7fc00000, 0x7f800000, CHK_ELEM_F32), UINT64_MAX), "NaN vs inf");
    /* f16: 0x7bff largest finite, 0x7c00 inf, 0x0001 smallest subnormal, 0x8000 -0 */
    cr_expect(eq(u64, ulpbits(0x0000, 0x8000, CHK_ELEM_F16), 0));
    cr_expect(eq(u64, ulpbits(0x0001, 0x8001, CHK_ELEM_F16), 2));
    cr_expect(eq(u64, ulpbits(0x7bff, 0x7c00, CHK_ELEM_F16), 1));
    cr_expect(eq(u64, ulpbits(0x7bff, 0xfbff, CHK_ELEM_F16), 2 * 0x7bffu));
    cr_expect(eq(u64, ulpbits(0x7e00, 0x7c01, CHK_ELEM_F16), 0), "NaN payloads");
    cr_expect(eq(u64, ulpbits(0x3c00, 0x3c02, CHK_ELEM_F16), 2));
    /* bf16: 0x7f7f largest finite, 0x7f80 inf, 0x7fc0 NaN */
    cr_expect(eq(u64, ulpbits(0x0000, 0x8000, CHK_ELEM_BF16), 0));
    cr_expect(eq(u64, ulpbits(0x7f7f, 0x7f80, CHK_ELEM_BF16), 1));
    cr_expect(eq(u64, ulpbits(0x0001, 0x0000, CHK_ELEM_BF16), 1));
    cr_expect(eq(u64, ulpbits(0x7fc0, 0xff81, CHK_ELEM_BF16), 0));
    cr_expect(eq(u64, ulpbits(0x7fc0, 0x3f80, CHK_ELEM_BF16), UINT64_MAX));
    /* integers */
    cr_expect(eq(u64, ulpbits(0x80000000u, 0x7fffffffu, CHK_ELEM_I32), 0xffffffffu));
    cr_expect(eq(u64, ulpbits(0, 0xffffffffu, CHK_ELEM_U32), 0xffffffffu));
}

Test(tolerance, compare_bytes)
{
    struct chk_tolerance t;
    float a[] = {1.0f, 2.0f}, b[] = {1.0f, 2.0f};
    uint32_t bits;
    memcpy(&bits, &b[1], 4);
    bits += 3; /* 3 ULPs */
    memcpy(&b[1], &bits, 4);
    int within;
    double md;
    chk_tolerance_parse("ulp:4", &t);
    chk_compare_bytes(a, b, 8, 8, CHK_ELEM_F32, &t, &within, &md);
    cr_expect(eq(int, within, 1));
    cr_expect(eq(dbl, md, 3));
    chk_tolerance_parse("ulp:2", &t);
    chk_compare_bytes(a, b, 8, 8, CHK_ELEM_F32, &t, &within, &md);
    cr_expect(eq(int, within, 0));
    chk_tolerance_parse("rel:1e-6", &t);
    chk_compare_bytes(a, b, 8, 8, CHK_ELEM_F32, &t, &within, &md);
    cr_expect(eq(int, within, 1));
    /* f16 1.0 = 0x3c00; 0x3c02 is 2^-9 away */
    uint16_t h1 = 0x3c00, h2 = 0x3c02;
    chk_tolerance_parse("abs:0.01", &t);
    chk_compare_bytes(&h1, &h2, 2, 2, CHK_ELEM_F16, &t, &within, &md);
    cr_expect(eq(int, within, 1));
    /* NaN against NaN of another payload is within any tolerance; against a number, none */
    uint32_t n1 = 0x7fc00001, n2 = 0x7fc00002, one = 0x3f800000;
    chk_tolerance_parse("abs:0", &t);
    chk_compare_bytes(&n1, &n2, 4, 4, CHK_ELEM_F32, &t, &within, &md);
    cr_expect(eq(int, within, 1));
    chk_compare_bytes(&n1, &one, 4, 4, CHK_ELEM_F32, &t, &within, &md);
    cr_expect(eq(int, within, 0));
    chk_tolerance_parse("ulp:1000", &t);
    chk_compare_bytes(&n1, &one, 4, 4, CHK_ELEM_F32, &t, &within, &md);
    cr_expect(eq(int, within, 0));
    cr_expect(isinf(md));
    int32_t i1 = 10, i2 = 13;
    chk_tolerance_parse("abs:3", &t);
    chk_compare_bytes(&i1, &i2, 4, 4, CHK_ELEM_I32, &t, &within, &md);
    cr_expect(eq(int, within, 1));
    chk_compare_bytes(&i1, &i2, 4, 3, CHK_ELEM_I32, &t, &within, &md);
    cr_expect(eq(int, within, 0));
}

/* ========================================================================================== */
/* Timing: synthetic runs with known answers                                                  */
/* ========================================================================================== */

TestSuite(timing, .init = mkdir_tmp, .fini = rm_tmp);

/* A deterministic generator: the tests are reproducible, their noise realistic. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static double rng_normal(uint64_t *s)
{
    double u1 = ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* One replay result of a workload of three kernels (produce 200 us, consume 100 us, finish
 * 50 us; 40 launches each, interleaved) under a noise model taken from lavapipe on a shared
 * machine: a run-wide load factor (lognormal, sd 4%) shared by every kernel of the run, a
 * per-kernel run factor (sd 2%), and per-launch noise (sd 15%, plus a 5% chance of a 3x
 * outlier). slow: factor on consume's launches. */
static void synth_run(const char *name, uint64_t seed, double slow)
{
    static struct top t[120];
    uint64_t s = seed;
    double load = exp(0.04 * rng_normal(&s)), kf[3];
    for (int k = 0; k < 3; k++)
        kf[k] = exp(0.02 * rng_normal(&s));
    static const double base[3] = {200000, 100000, 50000};
    for (int i = 0; i < 120; i++) {
        int k = i % 3;
        double d = base[k] * load * kf[k] * exp(0.15 * rng_normal(&s));
        if (rng_next(&s) % 100 < 5)
            d *= 3;
        if (k == 1)
            d *= slow;
        /* the same outputs in every run: only timings differ */
        t[i] = (struct top){
            SBT_OP_KERNEL, 0, 1 + (uint32_t)k, 0, (uint64_t)llround(d), 0, 0, 1000 + (uint64_t)i,
            NULL,          0};
    }
    write_trace(pathf(name), t, 120);
}

/* A gate: 5 runs (seeds from `seed`) against the 10-run baseline b0..b9. */
static struct chk_report *synth_gate(uint64_t seed, double slow, const struct chk_opts *o)
{
    sbt_reader *runs[5], *base[10];
    for (int i = 0; i < 10; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "b%d.sbt", i);
        base[i] = open_r(pathf(nm));
    }
    for (int i = 0; i < 5; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "r%d.sbt", i);
        synth_run(nm, seed * 100 + (uint64_t)i, slow);
        runs[i] = open_r(pathf(nm));
    }
    sbt_reader *cap = open_r(pathf("b0.sbt"));
    struct chk_report *rep;
    cr_assert(eq(int, chk_check(cap, runs, 5, base, 10, o, &rep), 0), "%s", chk_errmsg());
    for (int i = 0; i < 5; i++)
        sbt_reader_close(runs[i]);
    for (int i = 0; i < 10; i++)
        sbt_reader_close(base[i]);
    sbt_reader_close(cap);
    return rep;
}

static void synth_baseline(void)
{
    for (int i = 0; i < 10; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "b%d.sbt", i);
        synth_run(nm, 777000 + (uint64_t)i, 1.0);
    }
}

Test(timing, no_false_failures_in_20_gates_of_an_unchanged_workload)
{
    synth_baseline();
    uint32_t fails = 0;
    for (uint64_t g = 1; g <= 20; g++) {
        struct chk_report *rep = synth_gate(g, 1.0, NULL);
        cr_expect(eq(u32, rep->n_tests, 3), "three kernel groups tested");
        cr_expect(eq(u32, rep->n_ref_runs, 10));
        fails += rep->count[CHK_TIMING] != 0;
        for (uint32_t i = 0; i < rep->n_kernels; i++)
            if (rep->kernels[i].verdict == CHK_TIME_REGRESSION)
                cr_log_error("gate %" PRIu64 ": %s %+.1f%% p_adj %g", g, rep->kernels[i].name,
                             rep->kernels[i].effect * 100, rep->kernels[i].p_adj);
        chk_report_free(rep);
    }
    cr_expect(eq(u32, fails, 0), "%u of 20 gates failed on timing", fails);
}

Test(timing, a_25_percent_slowdown_of_one_kernel_is_caught_and_named)
{
    synth_baseline();
    uint32_t caught = 0, named_wrong = 0;
    for (uint64_t g = 1; g <= 20; g++) {
        struct chk_report *rep = synth_gate(g, 1.25, NULL);
        int hit = 0;
        for (uint32_t i = 0; i < rep->n_kernels; i++) {
            const struct chk_timing_row *k = &rep->kernels[i];
            if (k->verdict != CHK_TIME_REGRESSION)
                continue;
            if (!strncmp(k->name, "consume", 7)) {
                hit = 1;
                cr_expect(k->effect > 0.15 && k->effect < 0.35, "effect %g", k->effect);
                cr_expect(k->effect_lo < k->effect && k->effect < k->effect_hi);
                cr_expect(k->p_adj >= k->p_value && k->p_adj < 0.05);
            } else {
                named_wrong++;
                cr_log_error("gate %" PRIu64 ": %s %+.1f%% p_adj %g", g, k->name, k->effect * 100,
                             k->p_adj);
            }
        }
        caught += hit;
        cr_expect(eq(int, rep->failed, hit));
        chk_report_free(rep);
    }
    cr_expect(caught >= 19, "caught in %u of 20 gates", caught);
    cr_expect(eq(u32, named_wrong, 0));
}

Test(timing, a_regression_must_be_confirmed_by_a_second_batch)
{
    synth_baseline();
    /* found in the first batch, found again: stays, confirmed */
    struct chk_report *rep = synth_gate(4, 1.40, NULL), *again = synth_gate(5, 1.40, NULL);
    cr_assert(eq(u64, rep->count[CHK_TIMING], 1));
    cr_assert(eq(int, chk_confirm_timing(rep, again), 0));
    cr_expect(eq(u64, rep->count[CHK_TIMING], 1));
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(eq(u32, rep->n_confirm_runs, 5));
    for (uint32_t i = 0; i < rep->n_kernels; i++)
        if (rep->kernels[i].verdict == CHK_TIME_REGRESSION)
            cr_expect(eq(int, rep->kernels[i].confirmed, 1));
    chk_report_free(again);
    /* a slowdown that did not persist (the second batch is as fast as the baseline): shown as
     * slower, not confirmed, and the gate passes */
    chk_report_free(rep);
    rep = synth_gate(4, 1.40, NULL); /* the same first batch (seeded) */
    again = synth_gate(5, 1.0, NULL);
    cr_assert(eq(u64, rep->count[CHK_TIMING], 1));
    cr_assert(eq(int, chk_confirm_timing(rep, again), 0));
    cr_expect(eq(u64, rep->count[CHK_TIMING], 0));
    cr_expect(eq(int, rep->failed, 0));
    int seen = 0;
    for (uint32_t i = 0; i < rep->n_kernels; i++)
        if (!strncmp(rep->kernels[i].name, "consume", 7)) {
            cr_expect(eq(u32, rep->kernels[i].verdict, CHK_TIME_SLOWER));
            cr_expect(eq(int, rep->kernels[i].confirmed, 0));
            seen = 1;
        }
    cr_expect(seen);
    chk_report_free(again);
    chk_report_free(rep);
}

Test(timing, min_effect_and_significance_are_both_needed)
{
    synth_baseline();
    /* 5% slower: significant perhaps, below the 10% minimum effect: never a regression */
    struct chk_report *rep = synth_gate(3, 1.05, NULL);
    cr_expect(eq(u64, rep->count[CHK_TIMING], 0));
    chk_report_free(rep);
    /* 40% slower with the gate off */
    rep = synth_gate(3, 1.40, &CHK_OPTS(.timing_threshold = -1));
    cr_expect(eq(u64, rep->count[CHK_TIMING], 0));
    chk_report_free(rep);
    /* 40% faster: an improvement, not a failure */
    rep = synth_gate(3, 0.60, NULL);
    int improved = 0;
    for (uint32_t i = 0; i < rep->n_kernels; i++)
        improved |= rep->kernels[i].verdict == CHK_TIME_IMPROVEMENT;
    cr_expect(improved);
    cr_expect(eq(u64, rep->count[CHK_TIMING], 0));
    chk_report_free(rep);
}

Test(timing, one_reference_run_cannot_detect_and_says_so)
{
    /* the capture as the timing reference is one run: 1 / C(6, 1) = 1/6 is the smallest p */
    synth_run("cap.sbt", 1, 1.0);
    sbt_reader *runs[5];
    for (int i = 0; i < 5; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "r%d.sbt", i);
        synth_run(nm, 50 + (uint64_t)i, 2.0);
        runs[i] = open_r(pathf(nm));
    }
    sbt_reader *cap = open_r(pathf("cap.sbt"));
    struct chk_report *rep;
    cr_assert(eq(int,
                 chk_check(cap, runs, 5, NULL, 0, &CHK_OPTS(.timing_ref = CHK_TREF_CAPTURE), &rep),
                 0),
              "%s", chk_errmsg());
    cr_expect(eq(u32, rep->timing_ref, CHK_TREF_CAPTURE));
    cr_expect(fabs(rep->min_p - 1.0 / 6) < 1e-12);
    cr_expect(eq(u64, rep->count[CHK_TIMING], 0), "a doubling, but one reference run");
    int slower = 0;
    for (uint32_t i = 0; i < rep->n_kernels; i++)
        slower |= rep->kernels[i].verdict == CHK_TIME_SLOWER;
    cr_expect(slower, "shown as slower, not failed");
    chk_report_free(rep);
    /* no reference: summarised, not tested */
    cr_assert(eq(int, chk_check(cap, runs, 5, NULL, 0, NULL, &rep), 0));
    cr_expect(eq(u32, rep->timing_ref, CHK_TREF_NONE));
    cr_expect(eq(u32, rep->n_tests, 0));
    cr_expect(rep->n_kernels == 3 && rep->kernels[0].n_runs == 5);
    chk_report_free(rep);
    for (int i = 0; i < 5; i++)
        sbt_reader_close(runs[i]);
    sbt_reader_close(cap);
}

Test(timing, groups_are_program_entry_point_and_geometry)
{
    /* the same kernel at two grid sizes is two groups; launches pool across runs by group */
    struct top t[4] = {
        {SBT_OP_KERNEL, 0, 1, 0, 1000, 0, 0, 0, NULL, 1},
        {SBT_OP_KERNEL, 0, 1, 0, 9000, 0, 0, 0, NULL, 8},
        {SBT_OP_KERNEL, 1, 1, 0, 1100, 0, 0, 0, NULL, 1},
        {SBT_OP_KERNEL, 0, 1, 0, 9100, 0, 0, 0, NULL, 8},
    };
    struct chk_report *rep = check_n(t, 4, (const struct top *[]){t}, (const size_t[]){4}, 1, NULL);
    cr_assert(eq(u32, rep->n_kernels, 2));
    int seen = 0;
    for (uint32_t i = 0; i < 2; i++) {
        if (!strcmp(rep->kernels[i].name, "produce 1x1x1/64x1x1")) {
            seen |= 1;
            cr_expect(eq(dbl, rep->kernels[i].run.median, 1050));
        }
        if (!strcmp(rep->kernels[i].name, "produce 8x1x1/64x1x1")) {
            seen |= 2;
            cr_expect(eq(dbl, rep->kernels[i].run.median, 9050));
        }
    }
    cr_expect(eq(int, seen, 3), "%s / %s", rep->kernels[0].name, rep->kernels[1].name);
    chk_report_free(rep);
}

Test(timing, regimes_must_match)
{
    synth_baseline(); /* no regime metadata: "?" everywhere */
    tx_meta[0][0] = "replay.verify", tx_meta[0][1] = "op";
    tx_meta[1][0] = "replay.driver", tx_meta[1][1] = "Mesa 23";
    synth_run("x.sbt", 5, 1.0);
    sbt_reader *run = open_r(pathf("x.sbt")), *base = open_r(pathf("b0.sbt"));
    struct chk_report *rep;
    cr_expect(eq(int, chk_check(run, &run, 1, &base, 1, NULL, &rep), SBT_EINVAL));
    cr_expect(strstr(chk_errmsg(), "verify 'op' vs '?'") != NULL, "%s", chk_errmsg());
    cr_expect(strstr(chk_errmsg(), "driver 'Mesa 23' vs '?'") != NULL, "%s", chk_errmsg());
    cr_assert(
        eq(int, chk_check(run, &run, 1, &base, 1, &CHK_OPTS(.allow_regime_change = 1), &rep), 0));
    cr_expect(strstr(rep->regime_note, "driver") != NULL);
    cr_expect(strstr(rep->regime, "driver='Mesa 23'") != NULL, "%s", rep->regime);
    chk_report_free(rep);
    /* the timing gate off: no regime to compare */
    cr_assert(
        eq(int, chk_check(run, &run, 1, &base, 1, &CHK_OPTS(.timing_threshold = -1), &rep), 0));
    chk_report_free(rep);
    sbt_reader_close(run);
    sbt_reader_close(base);
}

/* ========================================================================================== */
/* Expectations                                                                               */
/* ========================================================================================== */

TestSuite(expect, .init = mkdir_tmp, .fini = rm_tmp);

Test(expect, round_trip_and_update_by_repetition)
{
    chk_expect *e;
    cr_assert(eq(int, chk_expect_create(&e), 0));
    sbt_hash d = {0x1111, 0x2222};
    cr_assert(eq(int,
                 chk_expect_set(e, "lavapipe", "s1/spirv:ab:main/g1x1x1.b64x1x1#3", 3, CHK_LABEL_OK,
                                &d, "gemm"),
                 0));
    cr_assert(eq(int, chk_expect_set(e, "lavapipe", NULL, 1, CHK_LABEL_SKIP, NULL, NULL), 0));
    cr_assert(
        eq(int, chk_expect_set(e, "other gpu", "s1/x#0", 3, CHK_LABEL_FLAKY, NULL, "x y"), 0));
    cr_expect(eq(int, chk_expect_set(e, "lavapipe", "a b", 3, CHK_LABEL_OK, &d, NULL), SBT_EINVAL));
    cr_assert(eq(int, chk_expect_save(e, pathf("e.txt")), 0), "%s", chk_errmsg());
    chk_expect_free(e);
    cr_assert(eq(int, chk_expect_load(pathf("e.txt"), &e), 0), "%s", chk_errmsg());
    uint32_t label;
    sbt_hash got;
    /* by identity, whatever seq the op has now */
    cr_expect(eq(
        int, chk_expect_get(e, "lavapipe", "s1/spirv:ab:main/g1x1x1.b64x1x1#3", 99, &label, &got),
        1));
    cr_expect(eq(u32, label, CHK_LABEL_OK));
    cr_expect(sbt_hash_eq(got, d));
    /* "@1": by seq */
    cr_expect(eq(int, chk_expect_get(e, "lavapipe", "s9/none#0", 1, &label, &got), 1));
    cr_expect(eq(u32, label, CHK_LABEL_SKIP));
    cr_expect(eq(int, chk_expect_get(e, "other gpu", "s1/x#0", 0, &label, &got), 1));
    cr_expect(eq(u32, label, CHK_LABEL_FLAKY));
    cr_expect(eq(int, chk_expect_get(e, "lavapipe", "s1/x#9", 2, &label, &got), 0));
    cr_expect(eq(u64, chk_expect_unused(e, "lavapipe"), 0));
    chk_expect_free(e);

    /* bad files name the line */
    FILE *f = fopen(pathf("bad.txt"), "w");
    fputs("reprise-expect 2\ndevice x\nop s1/k#0 zz ok 4\n", f);
    fclose(f);
    cr_expect(eq(int, chk_expect_load(pathf("bad.txt"), &e), SBT_ECORRUPT));
    cr_expect(strstr(chk_errmsg(), ":3:") != NULL, "%s", chk_errmsg());
    cr_expect(eq(int, chk_expect_load(pathf("none.txt"), &e), SBT_EIO));
    f = fopen(pathf("bad.txt"), "w");
    fputs("reprise-expect 3\n", f);
    fclose(f);
    cr_expect(eq(int, chk_expect_load(pathf("bad.txt"), &e), SBT_ECORRUPT));

    /* update by repetition: consume varies across the runs -> flaky; the rest ok */
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    const struct top r2[] = CHAIN(10, 22, 30, 40);
    const struct top *runs[] = {cap, r2, cap};
    const size_t n[] = {4, 4, 4};
    chk_expect *upd;
    cr_assert(eq(int, chk_expect_create(&upd), 0));
    struct chk_report *rep = check_n(cap, 4, runs, n, 3, &CHK_OPTS(.expect_update = upd));
    cr_expect(eq(str, rep->device, "lavapipe"));
    cr_expect(
        eq(int, chk_expect_get(upd, "lavapipe", "s1/%3F:consume/g1x1x1.b64x1x1#0", 1, &label, &got),
           1));
    cr_expect(eq(u32, label, CHK_LABEL_FLAKY));
    cr_expect(
        eq(int, chk_expect_get(upd, "lavapipe", "s1/%3F:produce/g1x1x1.b64x1x1#0", 0, &label, &got),
           1));
    cr_expect(eq(u32, label, CHK_LABEL_OK));
    chk_report_free(rep);
    /* checked against it: the known-flaky op may vary, so the gate passes; it is unverified */
    rep = check_n(cap, 4, runs, n, 3, &CHK_OPTS(.expect = upd));
    cr_expect(eq(int, rep->failed, 0));
    cr_expect(eq(u64, rep->n_flaky, 1));
    cr_expect(eq(u64, rep->n_unverified_why[CHK_UNV_FLAKY], 1));
    chk_report_free(rep);
    chk_expect_free(upd);
}

/* chk_op_identities gives the identities the expectations file keys ops by (what check
 * --update-expect writes), for any set of seqs; a seq past the trace gets "". */
Test(expect, identities_are_those_of_the_expectations)
{
    struct sbt_gen_opts g = SBT_GEN_OPTS(.n_ops = 3000, .seed = 5, .digests = 1);
    cr_assert(eq(int, sbt_gen_write(pathf("g.sbt"), &g, NULL, NULL), 0), "%s", sbt_errmsg());
    sbt_reader *r = open_r(pathf("g.sbt")),
               *runs[2] = {open_r(pathf("g.sbt")), open_r(pathf("g.sbt"))};
    chk_expect *upd;
    cr_assert(eq(int, chk_expect_create(&upd), 0));
    struct chk_report *rep;
    cr_assert(eq(int, chk_check(r, runs, 2, NULL, 0, &CHK_OPTS(.expect_update = upd), &rep), 0),
              "%s", chk_errmsg());
    chk_report_free(rep);
    cr_assert(eq(int, chk_expect_save(upd, pathf("e.txt")), 0), "%s", chk_errmsg());
    chk_expect_free(upd);
    FILE *f = fopen(pathf("e.txt"), "r");
    cr_assert(f != NULL);
    static uint64_t seqs[4000];
    static char want[4000][200], got[4000][200];
    size_t n = 0;
    char line[1024];
    while (fgets(line, sizeof line, f) && n < 3990) {
        char id[200], dig[64], label[16];
        unsigned long long seq;
        if (sscanf(line, "op %199s %63s %15s %llu", id, dig, label, &seq) == 4 &&
            (!n || seq > seqs[n - 1])) {
            seqs[n] = seq;
            snprintf(want[n++], sizeof want[0], "%s", id);
        }
    }
    fclose(f);
    cr_assert(n > 1000, "%zu ops in the expectations", n);
    seqs[n] = 5000; /* no such op */
    cr_assert(eq(int, chk_op_identities(r, seqs, n + 1, got[0], sizeof got[0]), 0), "%s",
              chk_errmsg());
    for (size_t i = 0; i < n; i++)
        cr_assert(eq(str, got[i], want[i]), "op %llu", (unsigned long long)seqs[i]);
    cr_assert(eq(str, got[n], ""));
    /* one op alone: its occurrence still counts from the trace's first op */
    cr_assert(eq(int, chk_op_identities(r, &seqs[n - 1], 1, got[0], sizeof got[0]), 0));
    cr_assert(eq(str, got[0], want[n - 1]));
    uint64_t bad[2] = {7, 7};
    cr_assert(eq(int, chk_op_identities(r, bad, 2, got[0], sizeof got[0]), SBT_EINVAL));
    sbt_reader_close(runs[0]);
    sbt_reader_close(runs[1]);
    sbt_reader_close(r);
}

/* Rounds of produce, consume, finish on stream 0 (digests from 100 in order); round 5 also has an
 * "other" launch at grid 3 (its own key). A re-capture may insert a launch of "other" at grid 1
 * (another key) before round insert_at, and drop round 5's "other" (drop_other). */
static size_t pipeline(struct top *t, int n, int insert_at, int drop_other)
{
    size_t k = 0;
    uint64_t d = 100;
    for (int i = 0; i < n; i++) {
        if (i == insert_at)
            t[k++] = (struct top){SBT_OP_KERNEL, 0, 4, 0, 100, 0, 7, 77, NULL, 1};
        for (uint32_t j = 0; j < 3; j++)
            t[k++] = (struct top){SBT_OP_KERNEL, 0, 1 + j, 0, 100, 1, 2, d++, NULL, 1};
        if (i == 5 && !drop_other)
            t[k++] = (struct top){SBT_OP_KERNEL, 0, 4, 0, 100, 1, 2, 555, NULL, 3};
    }
    return k;
}

Test(expect, survive_a_recapture_that_inserts_and_removes_ops)
{
    /* expectations from a capture of 10 rounds; the re-capture has a new launch before round 2
     * and lacks round 5's "other": every other op keeps its expected digest, though all the
     * ops after the insertion have new seq numbers. (An op inserted or removed with the key
     * of a later op of its stream would shift that key's occurrences: chk.h.) */
    static struct top a[40], b[40];
    size_t na = pipeline(a, 10, -1, 0), nb = pipeline(b, 10, 2, 1);
    chk_expect *upd;
    cr_assert(eq(int, chk_expect_create(&upd), 0));
    struct chk_report *rep = check_n(a, na, (const struct top *[]){a, a}, (size_t[]){na, na}, 2,
                                     &CHK_OPTS(.expect_update = upd));
    chk_report_free(rep);
    cr_assert(eq(int, chk_expect_save(upd, pathf("e2.txt")), 0));
    chk_expect_free(upd);
    chk_expect *e;
    cr_assert(eq(int, chk_expect_load(pathf("e2.txt"), &e), 0), "%s", chk_errmsg());
    /* the re-capture replays as it was captured; its capture digests are left out so that
     * only the expectations are the reference */
    static struct top b_nodig[40];
    memcpy(b_nodig, b, sizeof b);
    for (size_t i = 0; i < nb; i++)
        b_nodig[i].digest = 0;
    rep = check_n(b_nodig, nb, (const struct top *[]){b, b}, (size_t[]){nb, nb}, 2,
                  &CHK_OPTS(.expect = e));
    cr_expect(eq(int, rep->failed, 0), "divergent %" PRIu64, rep->count[CHK_DIVERGENT]);
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 0));
    cr_expect(eq(u64, rep->n_matched, nb));
    cr_expect(eq(u64, rep->n_expect_unused, 1), "the removed op's expectation matched nothing");
    chk_report_free(rep);
    chk_expect_free(e);
    /* the same file keyed by seq (version 1) attaches expectations to the wrong ops */
    FILE *f = fopen(pathf("e1.txt"), "w");
    fputs("reprise-expect 1\ndevice lavapipe\n", f);
    for (size_t i = 0; i < na; i++)
        fprintf(f, "op %zu 0000000000001234%016" PRIx64 " ok\n", i, a[i].digest);
    fclose(f);
    cr_assert(eq(int, chk_expect_load(pathf("e1.txt"), &e), 0), "%s", chk_errmsg());
    rep = check_n(b_nodig, nb, (const struct top *[]){b, b}, (size_t[]){nb, nb}, 2,
                  &CHK_OPTS(.expect = e));
    /* the 13 ops between the insertion and the removal got their neighbours' expectations */
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 13));
    chk_report_free(rep);
    chk_expect_free(e);
}

/* ========================================================================================== */
/* Reports parsed back                                                                        */
/* ========================================================================================== */

/* A strict JSON validator (RFC 8259 grammar, no extensions). */
struct js {
    const char *p, *end;
};
static int js_value(struct js *j);
static void js_ws(struct js *j)
{
    while (j->p < j->end && strchr(" \t\r\n", *j->p))
        j->p++;
}
static int js_string(struct js *j)
{
    if (j->p >= j->end || *j->p != '"')
        return -1;
    for (j->p++; j->p < j->end; j->p++) {
        unsigned char c = (unsigned char)*j->p;
        if (c == '"') {
            j->p++;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            j->p++;
            if (j->p >= j->end || !strchr("\"\\/bfnrtu", *j->p))
                return -1;
            if (*j->p == 'u')
                for (int i = 0; i < 4; i++)
                    if (++j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p))
                        return -1;
        }
    }
    return -1;
}
static int js_value(struct js *j)
{
    js_ws(j);
    if (j->p >= j->end)
        return -1;
    char c = *j->p;
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->p++;
        js_ws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                js_ws(j);
                if (js_string(j))
                    return -1;
                js_ws(j);
                if (j->p >= j->end || *j->p++ != ':')
                    return -1;
            }
            if (js_value(j))
                return -1;
            js_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == close) {
                j->p++;
                return 0;
            }
            return -1;
        }
    }
    if (c == '"')
        return js_string(j);
    for (const char *lit = "true\0false\0null\0"; *lit; lit += strlen(lit) + 1)
        if ((size_t)(j->end - j->p) >= strlen(lit) && !strncmp(j->p, lit, strlen(lit))) {
            j->p += strlen(lit);
            return 0;
        }
    char *e;
    if (c != '-' && (c < '0' || c > '9'))
        return -1;
    strtod(j->p, &e);
    if (e == j->p)
        return -1;
    j->p = e;
    return 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Well-formed XML for what JUnit writers produce: elements balance, attribute values are
 * quoted, text has no raw '<', every '&' starts one of the five entities. */
static int xml_ok(const char *s, int *n_testcase, int *n_failure)
{
    const char *stack[32];
    size_t lens[32];
    int depth = 0;
    *n_testcase = *n_failure = 0;
    if (strncmp(s, "<?xml", 5))
        return -1;
    s = strstr(s, "?>") + 2;
    while (*s) {
        if (*s == '&') {
            if (strncmp(s, "&lt;", 4) && strncmp(s, "&gt;", 4) && strncmp(s, "&amp;", 5) &&
                strncmp(s, "&quot;", 6) && strncmp(s, "&apos;", 6))
                return -2;
            s++;
            continue;
        }
        if (*s != '<') {
            if ((unsigned char)*s < 0x20 && !strchr("\n\t\r", *s))
                return -3;
            s++;
            continue;
        }
        s++;
        int closing = *s == '/';
        if (closing)
            s++;
        const char *name = s;
        while (*s && !strchr(" />", *s))
            s++;
        size_t nlen = (size_t)(s - name);
        if (!closing) {
            if (nlen == 8 && !strncmp(name, "testcase", 8))
                (*n_testcase)++;
            if (nlen == 7 && !strncmp(name, "failure", 7))
                (*n_failure)++;
        }
        while (*s == ' ') { /* attributes */
            s++;
            while (*s && *s != '=' && *s != '>' && *s != '/')
                s++;
            if (*s != '=')
                break;
            if (*++s != '"')
                return -4;
            for (s++; *s && *s != '"'; s++)
                if (*s == '<' ||
                    (*s == '&' && strncmp(s, "&lt;", 4) && strncmp(s, "&gt;", 4) &&
                     strncmp(s, "&amp;", 5) && strncmp(s, "&quot;", 6) && strncmp(s, "&apos;", 6)))
                    return -5;
            if (*s++ != '"')
                return -6;
        }
        int empty = *s == '/';
        if (empty)
            s++;
        if (*s++ != '>')
            return -7;
        if (closing) {
            if (!depth || lens[depth - 1] != nlen || strncmp(stack[depth - 1], name, nlen))
                return -8;
            depth--;
        } else if (!empty) {
            if (depth == 32)
                return -9;
            stack[depth] = name, lens[depth++] = nlen;
        }
    }
    return depth == 0 ? 0 : -10;
}

TestSuite(reports, .init = mkdir_tmp, .fini = rm_tmp);

Test(reports, json_and_junit_parse)
{
    /* a kernel name that needs escaping in both formats, and every class present */
    struct top cap[] = CHAIN(10, 20, 30, 40);
    cap[1].kernel = 5;
    struct top r1[] = CHAIN(11, 21, 30, 40);
    r1[1].kernel = 5;
    struct top r2[5] = CHAIN(11, 22, 30, 40);
    r2[1].kernel = 5;
    r2[2].error = "bad <thing> & \"more\"";
    r2[4] = (struct top){SBT_OP_KERNEL, 2, 4, 0, 100, 0, 5, 50, NULL, 0};
    const struct top *runs[] = {r1, r2};
    const size_t n[] = {3, 5};
    struct chk_report *rep = check_n(cap, 4, runs, n, 2, &CHK_OPTS(.ref_name = "cap <1>.sbt"));
    FILE *f = fopen(pathf("r.json"), "w");
    cr_assert(eq(int, chk_report_json(rep, f), 0));
    fclose(f);
    f = fopen(pathf("r.xml"), "w");
    cr_assert(eq(int, chk_report_junit(rep, f), 0));
    fclose(f);
    f = fopen(pathf("r.txt"), "w");
    cr_assert(eq(int, chk_report_text(rep, f, 10), 0));
    fclose(f);
    size_t len;
    char *b = slurp(pathf("r.json"), &len);
    struct js j = {b, b + len};
    cr_expect(eq(int, js_value(&j), 0), "JSON does not parse near: %.40s", j.p);
    js_ws(&j);
    cr_expect(j.p == j.end);
    cr_expect(strstr(b, "\"first_divergence\":{") != NULL);
    free(b);
    b = slurp(pathf("r.xml"), &len);
    int n_tc, n_fail;
    cr_expect(eq(int, xml_ok(b, &n_tc, &n_fail), 0), "%s", b);
    /* reference + 2 runs + one per class + coverage */
    cr_expect(eq(int, n_tc, 4 + CHK__NCLASS));
    cr_expect(n_fail >= 4);
    cr_expect(strstr(b, "k&lt;&amp;&gt;&quot;&apos;?") != NULL);
    free(b);
    b = slurp(pathf("r.txt"), &len);
    cr_expect(strstr(b, "FAIL") != NULL);
    cr_expect(strstr(b, "first divergence: op 0") != NULL, "%s", b);
    cr_expect(strstr(b, "a pass means") == NULL, "outputs differed: no bound to claim");
    free(b);
    b = slurp(pathf("r.json"), &len);
    cr_expect(strstr(b, "\"pass_means\":{\"holds\":false") != NULL);
    free(b);
    chk_report_free(rep);
}

/* Every form of the report: an incomplete trace, the coverage, the unverified ops, the bound. */
static void report_forms(const struct chk_report *rep, char **txt, char **json, char **xml)
{
    FILE *f = fopen(pathf("f.txt"), "w");
    cr_assert(eq(int, chk_report_text(rep, f, 10), 0));
    fclose(f);
    f = fopen(pathf("f.json"), "w");
    cr_assert(eq(int, chk_report_json(rep, f), 0));
    fclose(f);
    f = fopen(pathf("f.xml"), "w");
    cr_assert(eq(int, chk_report_junit(rep, f), 0));
    fclose(f);
    size_t len;
    *txt = slurp(pathf("f.txt"), &len);
    *json = slurp(pathf("f.json"), &len);
    struct js j = {*json, *json + len};
    cr_expect(eq(int, js_value(&j), 0), "JSON does not parse near: %.40s", j.p);
    *xml = slurp(pathf("f.xml"), &len);
    int n_tc, n_fail;
    cr_expect(eq(int, xml_ok(*xml, &n_tc, &n_fail), 0), "%s", *xml);
}

Test(reports, incompleteness_and_coverage_in_every_form)
{
    /* consume has no digest anywhere; the capture is marked incomplete */
    const struct top cap[] = CHAIN(10, 0, 30, 40);
    tx_incomplete = "stopped recording: out of memory";
    struct chk_report *rep = check_n(cap, 4, (const struct top *[]){cap, cap},
                                     (const size_t[]){4, 4}, 2, &CHK_OPTS(.ref_name = "c.sbt"));
    char *txt, *json, *xml;
    report_forms(rep, &txt, &json, &xml);
    cr_expect(strstr(txt, "INCOMPLETE TRACE") && strstr(txt, "stopped recording"), "%s", txt);
    cr_expect(strstr(txt, "3 of 4 device ops compared") != NULL, "%s", txt);
    cr_expect(strstr(txt, "unverified: 1 device op") != NULL, "%s", txt);
    cr_expect(strstr(txt, "op 1 kernel \"consume\" (stream 1): no-digest") != NULL, "%s", txt);
    cr_expect(strstr(txt, "a pass means") != NULL, "%s", txt);
    cr_expect(strstr(json, "\"complete\":false") != NULL);
    cr_expect(strstr(json, "\"incomplete_reason\":\"c.sbt: stopped recording") != NULL, "%s", json);
    cr_expect(strstr(json, "\"device_ops\":4,\"verified\":3") != NULL, "%s", json);
    cr_expect(strstr(json, "\"unverified_ops\":[{\"seq\":1") != NULL, "%s", json);
    cr_expect(strstr(json, "\"runs_compared\":2") != NULL, "%s", json);
    cr_expect(strstr(xml, "name=\"trace completeness\"") != NULL, "%s", xml);
    cr_expect(strstr(xml, "<skipped message=\"trace incomplete, compared anyway") != NULL);
    cr_expect(strstr(xml, "<property name=\"trace.complete\" value=\"no\"/>") != NULL);
    cr_expect(strstr(xml, "unverified: op 1 kernel") != NULL, "%s", xml);
    free(txt), free(json), free(xml);
    chk_report_free(rep);
    /* nothing compared: the coverage testcase fails with the reason */
    tx_incomplete = NULL;
    const struct top none[] = CHAIN(0, 0, 0, 0);
    rep = check_n(none, 4, (const struct top *[]){none}, (const size_t[]){4}, 1, NULL);
    report_forms(rep, &txt, &json, &xml);
    cr_expect(strstr(txt, "FAIL: nothing was verified") != NULL, "%s", txt);
    cr_expect(strstr(json, "\"result\":\"fail\",") != NULL);
    cr_expect(strstr(json, "\"complete\":true") != NULL);
    cr_expect(strstr(xml, "name=\"coverage\">\n      <failure message=\"nothing was verified") !=
                  NULL,
              "%s", xml);
    free(txt), free(json), free(xml);
    chk_report_free(rep);
}

/* ========================================================================================== */
/* Timing: the gate's verdict, size classes, blame (uses the report readers above)           */
/* ========================================================================================== */

/* The JUnit testcase of the timing gate: its text up to </testcase> or its self-closing end. */
static const char *timing_case(const char *xml, char *buf, size_t cap)
{
    const char *p = strstr(xml, "name=\"timing-regression\"");
    cr_assert(p != NULL, "%s", xml);
    const char *e = strstr(p, "/>");
    const char *c = strstr(p, "</testcase>");
    if (p[strlen("name=\"timing-regression\"")] != '/' && c)
        e = c;
    size_t n = (size_t)(e - p) < cap - 1 ? (size_t)(e - p) : cap - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    return buf;
}

Test(timing, too_few_runs_are_not_gated_never_passed)
{
    /* the README's defaults: 3 runs against a 3-run baseline. consume twice as slow; no
     * p-value of 3 runs against 3 can get below 0.05 / 3 groups (1 / C(6, 3) = 0.05) */
    sbt_reader *runs[3], *base[3];
    for (int i = 0; i < 3; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "b%d.sbt", i);
        synth_run(nm, 777000 + (uint64_t)i, 1.0);
        base[i] = open_r(pathf(nm));
        snprintf(nm, sizeof nm, "r%d.sbt", i);
        synth_run(nm, 500 + (uint64_t)i, 2.0);
        runs[i] = open_r(pathf(nm));
    }
    for (int req = 0; req < 2; req++) {
        struct chk_report *rep;
        cr_assert(eq(int,
                     chk_check(base[0], runs, 3, base, 3, &CHK_OPTS(.require_timing = req), &rep),
                     0),
                  "%s", chk_errmsg());
        cr_expect(eq(u32, rep->timing_gate, CHK_TGATE_NOT_GATED));
        cr_expect(eq(u32, rep->n_tests, 3));
        cr_expect(eq(u64, rep->count[CHK_TIMING], 0));
        cr_expect(eq(u32, rep->runs_needed, 8), "2 x 3 / C(8 + 3, 3) < 0.05 <= 2 x 3 / C(10, 3)");
        cr_expect(strstr(rep->timing_why, "3 runs against 3 reference runs") != NULL, "%s",
                  rep->timing_why);
        cr_expect(strstr(rep->timing_why, "needs --runs 8") != NULL, "%s", rep->timing_why);
        cr_expect(eq(int, rep->failed, req), "outputs agree: fails only when timing is required");
        int slower = 0;
        for (uint32_t i = 0; i < rep->n_kernels; i++)
            if (!strncmp(rep->kernels[i].name, "consume", 7))
                slower = rep->kernels[i].verdict == CHK_TIME_SLOWER;
        cr_expect(slower, "the doubling is shown, as slower");
        char *txt, *json, *xml, tc[2048];
        report_forms(rep, &txt, &json, &xml);
        cr_expect(strstr(txt, "timing: NOT GATED") != NULL, "%s", txt);
        cr_expect(strstr(txt, "needs --runs 8") != NULL, "%s", txt);
        cr_expect(strstr(json, "\"gate\":\"not-gated\"") != NULL, "%s", json);
        cr_expect(strstr(json, "\"runs_needed\":8") != NULL, "%s", json);
        cr_expect(strstr(json, req ? "\"required\":true" : "\"required\":false") != NULL, "%s",
                  json);
        timing_case(xml, tc, sizeof tc);
        if (req) {
            cr_expect(strstr(tc, "<failure message=\"timing not gated (--require-timing): 3 "
                                 "runs against 3") != NULL,
                      "%s", tc);
            cr_expect(strstr(txt, "FAIL: timing not gated (--require-timing)") != NULL, "%s", txt);
            cr_expect(strstr(json, "\"result\":\"fail\"") != NULL);
        } else {
            cr_expect(strstr(tc, "<skipped message=\"timing not gated: 3 runs against 3") != NULL,
                      "%s", tc);
            cr_expect(strstr(tc, "<failure") == NULL, "%s", tc);
            cr_expect(strstr(json, "\"result\":\"pass\"") != NULL);
        }
        free(txt), free(json), free(xml);
        chk_report_free(rep);
    }
    for (int i = 0; i < 3; i++)
        sbt_reader_close(runs[i]), sbt_reader_close(base[i]);
}

Test(timing, a_gate_says_passed_or_failed_only_when_it_could_fail)
{
    synth_baseline();
    /* 5 runs against 10: gated (1 / C(15, 5) x 3 groups is far below 0.05) */
    struct chk_report *rep = synth_gate(7, 1.0, NULL);
    cr_expect(eq(u32, rep->timing_gate, CHK_TGATE_PASSED), "%s", rep->timing_why);
    cr_expect(eq(u32, rep->runs_needed, chk_timing_runs_needed(10, 3, 0.95)));
    char *txt, *json, *xml, tc[2048];
    report_forms(rep, &txt, &json, &xml);
    cr_expect(strstr(json, "\"gate\":\"passed\"") != NULL, "%s", json);
    timing_case(xml, tc, sizeof tc);
    cr_expect(strstr(tc, "<skipped") == NULL && strstr(tc, "<failure") == NULL, "%s", tc);
    free(txt), free(json), free(xml);
    chk_report_free(rep);
    rep = synth_gate(7, 1.4, NULL);
    cr_expect(eq(u32, rep->timing_gate, CHK_TGATE_FAILED));
    chk_report_free(rep);
    /* the gate off, no reference, diff: never a pass, each with its reason */
    rep = synth_gate(7, 1.4, &CHK_OPTS(.timing_threshold = -1, .require_timing = 1));
    cr_expect(eq(u32, rep->timing_gate, CHK_TGATE_NOT_GATED));
    cr_expect(strstr(rep->timing_why, "--timing-threshold off") != NULL, "%s", rep->timing_why);
    cr_expect(eq(int, rep->failed, 1));
    chk_report_free(rep);
    sbt_reader *b0 = open_r(pathf("b0.sbt")), *b1 = open_r(pathf("b1.sbt"));
    cr_assert(eq(int, chk_check(b0, &b1, 1, NULL, 0, NULL, &rep), 0));
    cr_expect(eq(u32, rep->timing_gate, CHK_TGATE_NOT_GATED));
    cr_expect(strstr(rep->timing_why, "no timing reference") != NULL, "%s", rep->timing_why);
    cr_expect(eq(int, rep->failed, 0));
    report_forms(rep, &txt, &json, &xml);
    timing_case(xml, tc, sizeof tc);
    cr_expect(strstr(tc, "<skipped message=\"timing not gated: no timing reference") != NULL, "%s",
              tc);
    free(txt), free(json), free(xml);
    chk_report_free(rep);
    cr_assert(eq(int, chk_diff(b0, b1, NULL, &rep), 0));
    cr_expect(eq(u32, rep->timing_gate, CHK_TGATE_NOT_GATED));
    cr_expect(strstr(rep->timing_why, "one run a side") != NULL, "%s", rep->timing_why);
    chk_report_free(rep);
    sbt_reader_close(b0);
    sbt_reader_close(b1);
}

Test(timing, runs_needed_by_hand)
{
    /* the fewest n with 2 x tests / C(n + ref, n) < 0.05 */
    cr_expect(eq(u32, chk_timing_runs_needed(3, 3, 0.95), 8));   /* 6/165; 6/120 is not below */
    cr_expect(eq(u32, chk_timing_runs_needed(10, 2, 0.95), 3));  /* 4/286; 4/66 */
    cr_expect(eq(u32, chk_timing_runs_needed(20, 2, 0.95), 2));  /* 4/231; 4/21 */
    cr_expect(eq(u32, chk_timing_runs_needed(1, 2, 0.95), 80));  /* 4/81; 4/80 */
    cr_expect(eq(u32, chk_timing_runs_needed(3, 56, 0.95), 22)); /* 112/2300; 112/2024 */
    cr_expect(eq(u32, chk_timing_runs_needed(10, 2, 0.99), 4));  /* 4/1001; 4/286 */
    cr_expect(eq(u32, chk_timing_runs_needed(0, 2, 0.95), 0), "no reference");
    cr_expect(eq(u32, chk_timing_runs_needed(3, 0, 0.95), 0), "nothing to test");
    cr_expect(eq(u32, chk_timing_runs_needed(1, 1000, 0.95), 0), "beyond CHK_RUNS_NEEDED_MAX");
}

Test(timing, copies_and_fills_are_grouped_by_size_class)
{
    /* 120 copies of 120 distinct sizes from 1 KiB to 1 MiB, and fills of 100, 120 and 129
     * bytes: one group per power-of-two class [2^k, 2^(k+1)), not one per size */
    struct top t[123];
    uint32_t n_in[32] = {0};
    for (uint32_t i = 0; i < 120; i++) {
        uint32_t sz = (uint32_t)llround(1024.0 * pow(1024.0, i / 119.0)); /* geometric */
        t[i] = (struct top){SBT_OP_COPY, 0, 0, 0, 1000 + i, 0, 0, 100 + i, NULL, sz};
        uint32_t k = 0;
        while (sz >> (k + 1))
            k++;
        n_in[k]++;
    }
    const uint32_t fill_sz[3] = {100, 120, 129};
    for (uint32_t i = 0; i < 3; i++)
        t[120 + i] = (struct top){SBT_OP_FILL, 0, 0, 0, 500, 0, 0, 300 + i, NULL, fill_sz[i]};
    uint32_t n_classes = 0;
    for (int k = 0; k < 32; k++)
        n_classes += n_in[k] != 0;
    cr_assert(eq(u32, n_classes, 11), "2^10 .. 2^20");
    struct chk_report *rep =
        check_n(t, 123, (const struct top *[]){t}, (const size_t[]){123}, 1, NULL);
    cr_expect(eq(u32, rep->n_kernels, n_classes + 2));
    static const struct {
        const char *name;
        uint64_t n;
    } want[] = {
        {"[copy d2d] 1 KiB..<2 KiB", 0}, {"[copy d2d] 512 KiB..<1 MiB", 0},
        {"[copy d2d] 1 MiB..<2 MiB", 1}, {"[fill] 64 B..<128 B", 2},
        {"[fill] 128 B..<256 B", 1},
    };
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        uint64_t n = w == 0 ? n_in[10] : w == 1 ? n_in[19] : want[w].n;
        int seen = 0;
        for (uint32_t i = 0; i < rep->n_kernels; i++)
            if (!strcmp(rep->kernels[i].name, want[w].name)) {
                seen = 1;
                cr_expect(eq(u64, rep->kernels[i].n_run, n), "%s", want[w].name);
            }
        cr_expect(seen, "no group %s", want[w].name);
    }
    chk_report_free(rep);
}

/* Blame. A queue's timestamps as a GPU writes them: each op runs when the one before it has
 * ended, but its begin timestamp (TOP_OF_PIPE) is written while the last `drain` of the one
 * before is still running, so its measured time holds that tail. produce (200 us), consume
 * (100 us), finish (50 us), 40 each, on one stream; noise as synth_run. slow_p: factor on
 * produce's own work; own_c: on consume's own work. */
static void blame_run(const char *name, uint64_t seed, double slow_p, double own_c, double drain)
{
    static struct top t[120];
    uint64_t s = seed;
    double load = exp(0.04 * rng_normal(&s)), kf[3];
    for (int k = 0; k < 3; k++)
        kf[k] = exp(0.02 * rng_normal(&s));
    static const double base[3] = {200000, 100000, 50000};
    uint64_t end = 1000000, prev = 0; /* ns: the previous op's end and its own duration */
    for (int i = 0; i < 120; i++) {
        int k = i % 3;
        double d = base[k] * load * kf[k] * exp(0.10 * rng_normal(&s));
        if (rng_next(&s) % 100 < 3)
            d *= 3;
        d *= k == 0 ? slow_p : k == 1 ? own_c : 1.0;
        uint64_t own = (uint64_t)llround(d), begin = end - (uint64_t)llround(drain * (double)prev);
        t[i] = (struct top){
            SBT_OP_KERNEL, 0, 1 + (uint32_t)k, begin, end + own - begin, 0, 0, 1000 + (uint64_t)i,
            NULL,          0};
        end += own;
        prev = own;
        if (k == 2)
            end += 5000; /* the host between iterations */
    }
    write_trace(pathf(name), t, 120);
}

/* 5 runs against a 10-run baseline (seeds 888000..), of blame_run. */
static struct chk_report *blame_gate(uint64_t seed, double slow_p, double own_c, double drain)
{
    sbt_reader *runs[5], *base[10];
    for (int i = 0; i < 10; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "bb%d.sbt", i);
        if (seed == 1)
            blame_run(nm, 888000 + (uint64_t)i, 1.0, 1.0, drain);
        base[i] = open_r(pathf(nm));
    }
    for (int i = 0; i < 5; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "br%d.sbt", i);
        blame_run(nm, seed * 100 + (uint64_t)i, slow_p, own_c, drain);
        runs[i] = open_r(pathf(nm));
    }
    struct chk_report *rep;
    cr_assert(eq(int, chk_check(base[0], runs, 5, base, 10, NULL, &rep), 0), "%s", chk_errmsg());
    for (int i = 0; i < 5; i++)
        sbt_reader_close(runs[i]);
    for (int i = 0; i < 10; i++)
        sbt_reader_close(base[i]);
    return rep;
}

static const struct chk_timing_row *row_of(const struct chk_report *rep, const char *prefix)
{
    for (uint32_t i = 0; i < rep->n_kernels; i++)
        if (!strncmp(rep->kernels[i].name, prefix, strlen(prefix)))
            return &rep->kernels[i];
    cr_assert(0, "no group %s", prefix);
    return NULL;
}

/* Every DOWNSTREAM row names a group of the report that regressed (or is downstream itself),
 * and a report with one has a regression that fails the gate: blame never passes a gate. */
static void blame_invariants(const struct chk_report *rep)
{
    uint32_t n_down = 0, n_reg = 0;
    for (uint32_t i = 0; i < rep->n_kernels; i++) {
        const struct chk_timing_row *k = &rep->kernels[i];
        n_reg += k->verdict == CHK_TIME_REGRESSION;
        if (k->verdict != CHK_TIME_DOWNSTREAM)
            continue;
        n_down++;
        const struct chk_timing_row *p = row_of(rep, k->downstream_of);
        cr_expect(p->verdict == CHK_TIME_REGRESSION || p->verdict == CHK_TIME_DOWNSTREAM, "%s",
                  k->downstream_of);
        cr_expect(k->n_overlap > 0);
    }
    cr_expect(eq(u32, rep->n_downstream, n_down));
    cr_expect(eq(u64, rep->count[CHK_TIMING], n_reg));
    if (n_down)
        cr_expect(n_reg >= 1 && rep->failed);
}

Test(timing, a_neighbours_drain_is_downstream_not_a_regression)
{
    /* produce twice as slow; consume's measured time holds 15% of produce's: +25% measured
     * (130 -> 160 us), none of it its own */
    uint32_t named = 0, down = 0, consume_counted = 0;
    for (uint64_t g = 1; g <= 10; g++) {
        struct chk_report *rep = blame_gate(g, 2.0, 1.0, 0.15);
        blame_invariants(rep);
        const struct chk_timing_row *p = row_of(rep, "produce"), *c = row_of(rep, "consume");
        named += p->verdict == CHK_TIME_REGRESSION;
        cr_expect(c->effect > 0.15, "consume measured +%.1f%%", c->effect * 100);
        cr_expect(fabs(c->excl_effect) < 0.1, "its own time: %+.1f%%", c->excl_effect * 100);
        if (c->verdict == CHK_TIME_DOWNSTREAM) {
            down++;
            cr_expect(strncmp(c->downstream_of, "produce", 7) == 0, "%s", c->downstream_of);
        }
        consume_counted += c->verdict == CHK_TIME_REGRESSION;
        cr_expect(eq(u64, rep->count[CHK_TIMING], 1), "gate %" PRIu64 ": only produce counts", g);
        if (g == 1) {
            char *txt, *json, *xml, tc[4096];
            report_forms(rep, &txt, &json, &xml);
            cr_expect(strstr(txt, "downstream  consume") != NULL, "%s", txt);
            cr_expect(strstr(txt, "downstream of produce") != NULL, "%s", txt);
            cr_expect(strstr(json, "\"verdict\":\"downstream\"") != NULL, "%s", json);
            cr_expect(strstr(json, "\"downstream_of\":\"produce") != NULL, "%s", json);
            timing_case(xml, tc, sizeof tc);
            cr_expect(strstr(tc, "<failure message=\"1 groups") != NULL, "%s", tc);
            cr_expect(strstr(tc, "&quot;consume") != NULL && strstr(tc, "downstream of") != NULL,
                      "%s", tc);
            free(txt), free(json), free(xml);
            /* confirmed on a second batch: the same blame */
            struct chk_report *again = blame_gate(50, 2.0, 1.0, 0.15);
            cr_assert(eq(int, chk_confirm_timing(rep, again), 0));
            blame_invariants(rep);
            cr_expect(eq(u32, row_of(rep, "produce")->verdict, CHK_TIME_REGRESSION));
            cr_expect(eq(int, row_of(rep, "produce")->confirmed, 1));
            cr_expect(eq(u32, row_of(rep, "consume")->verdict, CHK_TIME_DOWNSTREAM));
            cr_expect(eq(u64, rep->count[CHK_TIMING], 1));
            chk_report_free(again);
        }
        chk_report_free(rep);
    }
    cr_expect(eq(u32, named, 10), "produce named in %u of 10 gates", named);
    cr_expect(eq(u32, consume_counted, 0), "consume counted as a regression in %u of 10 gates",
              consume_counted);
    cr_expect(down >= 8, "consume downstream in %u of 10 gates", down);
}

Test(timing, a_neighbour_that_slowed_on_its_own_stays_a_regression)
{
    /* consume 50% slower on its own, with the drain: its own time regressed, it is named */
    uint32_t both = 0;
    for (uint64_t g = 1; g <= 10; g++) {
        struct chk_report *rep = blame_gate(g, 2.0, 1.5, 0.15);
        blame_invariants(rep);
        both += row_of(rep, "produce")->verdict == CHK_TIME_REGRESSION &&
                row_of(rep, "consume")->verdict == CHK_TIME_REGRESSION;
        /* finish holds 15% of consume's time: downstream of consume when it shows */
        const struct chk_timing_row *f = row_of(rep, "finish");
        if (f->verdict == CHK_TIME_DOWNSTREAM)
            cr_expect(strncmp(f->downstream_of, "consume", 7) == 0, "%s", f->downstream_of);
        cr_expect(ne(u32, row_of(rep, "consume")->verdict, CHK_TIME_DOWNSTREAM));
        chk_report_free(rep);
    }
    cr_expect(both >= 9, "both named in %u of 10", both);
    /* no drain in the timestamps (no overlap): nothing explains consume's slowdown away */
    both = 0;
    for (uint64_t g = 1; g <= 10; g++) {
        struct chk_report *rep = blame_gate(g, 2.0, 1.3, 0.0);
        blame_invariants(rep);
        cr_expect(eq(u64, row_of(rep, "consume")->n_overlap, 0));
        both += row_of(rep, "consume")->verdict == CHK_TIME_REGRESSION;
        cr_expect(eq(u32, rep->n_downstream, 0));
        chk_report_free(rep);
    }
    cr_expect(both >= 9, "consume named in %u of 10", both);
    /* nothing changed, drain or not: no false failure */
    for (uint64_t g = 1; g <= 10; g++) {
        struct chk_report *rep = blame_gate(g, 1.0, 1.0, 0.15);
        cr_expect(eq(u64, rep->count[CHK_TIMING], 0));
        cr_expect(eq(u32, rep->n_downstream, 0));
        chk_report_free(rep);
    }
}

/* ========================================================================================== */
/* The Perfetto diff                                                                          */
/* ========================================================================================== */

struct pf_track {
    uint64_t uuid;
    int counter;
};

/* Decodes every packet and checks the import rules that matter for a file built from several
 * writers: sequence ids on events, incremental state cleared before use, tracks (and parents)
 * declared before events, counters only on counter tracks, no unknown fields, and flows that
 * start once and end once. Returns the number of problems; fills what it saw. */
struct pf_seen {
    uint32_t packets, tracks, slices, instants, counters, flows_out, flows_in;
    int diff_process, first_div, verdict_slower, verdict_mismatch, incomplete, gate;
};

static int pf_check(const uint8_t *buf, size_t len, struct pf_seen *seen)
{
    int errors = 0;
    size_t pos = 0, nt = 0, cap = 1024;
    struct pf_track *t = calloc(cap, sizeof *t);
    uint8_t valid[65536] = {0};
    uint64_t def_track[65536] = {0};
    memset(seen, 0, sizeof *seen);
    while (pos < len) {
        uint64_t n;
        if (buf[pos++] != 0x0a || sbt_varint_decode(buf, len, &pos, &n) < 0 || n > len - pos) {
            cr_log_error("offset %zu: not a packet", pos);
            errors++;
            break;
        }
        Perfetto__Protos__TracePacket *p =
            perfetto__protos__trace_packet__unpack(NULL, (size_t)n, buf + pos);
        pos += n;
        seen->packets++;
        if (!p) {
            errors++;
            continue;
        }
        errors += p->base.n_unknown_fields != 0;
        uint32_t sid = p->has_trusted_packet_sequence_id ? p->trusted_packet_sequence_id : 0;
        if (sid >= 65536) {
            errors++;
            sid = 0;
        }
        uint32_t flags = p->has_sequence_flags ? p->sequence_flags : 0;
        if (flags & 1)
            valid[sid] = 1;
        if ((flags & 2) && !valid[sid]) {
            cr_log_error("packet %u: needs incremental state before it was cleared", seen->packets);
            errors++;
        }
        if (p->trace_packet_defaults && p->trace_packet_defaults->track_event_defaults)
            def_track[sid] = p->trace_packet_defaults->track_event_defaults->track_uuid;
        if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR) {
            Perfetto__Protos__TrackDescriptor *d = p->track_descriptor;
            int parent_ok = !d->has_parent_uuid;
            for (size_t i = 0; i < nt; i++) {
                if (t[i].uuid == d->uuid) {
                    cr_log_error("track %" PRIu64 " declared twice", d->uuid);
                    errors++;
                }
                parent_ok |= t[i].uuid == d->parent_uuid;
            }
            if (!parent_ok) {
                cr_log_error("track %s: parent declared later", d->name ? d->name : "");
                errors++;
            }
            if (nt == cap)
                t = realloc(t, (cap *= 2) * sizeof *t);
            t[nt++] = (struct pf_track){d->uuid, d->counter != NULL};
            seen->tracks++;
            if (d->process && d->process->process_name &&
                !strncmp(d->process->process_name, "diff:", 5)) {
                seen->diff_process = 1;
                seen->incomplete = strstr(d->process->process_name, "INCOMPLETE") != NULL;
            }
        }
        if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT) {
            Perfetto__Protos__TrackEvent *te = p->track_event;
            if (!sid || !p->has_timestamp) {
                errors++;
                cr_log_error("packet %u: event without sequence id or timestamp", seen->packets);
            }
            uint64_t uuid = te->has_track_uuid ? te->track_uuid : def_track[sid];
            struct pf_track *tr = NULL;
            for (size_t i = 0; i < nt; i++)
                if (t[i].uuid == uuid)
                    tr = &t[i];
            if (!tr) {
                cr_log_error("packet %u: event on an undeclared track", seen->packets);
                errors++;
            } else if ((te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER) !=
                       tr->counter) {
                cr_log_error("packet %u: counter/slice on the wrong kind of track", seen->packets);
                errors++;
            }
            seen->slices += te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
            seen->instants += te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
            seen->counters += te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
            seen->flows_out += (uint32_t)te->n_flow_ids;
            seen->flows_in += (uint32_t)te->n_terminating_flow_ids;
            if (te->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME && te->name) {
                if (!strncmp(te->name, "first divergence", 16))
                    seen->first_div = 1;
                if (!strncmp(te->name, "gate: ", 6))
                    seen->gate = 1;
            }
            for (size_t i = 0; i < te->n_categories; i++)
                if (!strcmp(te->categories[i], "diff"))
                    seen->verdict_mismatch++;
        }
        if (p->interned_data) { /* names and categories are interned by the emitter */
            Perfetto__Protos__InternedData *d = p->interned_data;
            for (size_t i = 0; i < d->n_event_names; i++)
                if (d->event_names[i]->name &&
                    !strncmp(d->event_names[i]->name, "first divergence", 16))
                    seen->first_div = 1;
                else if (d->event_names[i]->name && !strncmp(d->event_names[i]->name, "gate: ", 6))
                    seen->gate = 1;
            for (size_t i = 0; i < d->n_event_categories; i++)
                if (d->event_categories[i]->name && !strcmp(d->event_categories[i]->name, "diff"))
                    seen->verdict_mismatch++;
        }
        perfetto__protos__trace_packet__free_unpacked(p, NULL);
    }
    free(t);
    return errors;
}

TestSuite(perfetto, .init = mkdir_tmp, .fini = rm_tmp);

Test(perfetto, diff_decodes_and_follows_import_rules)
{
    /* run: produce diverges (downstream too), "other" is 50% slower */
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    struct top run[] = CHAIN(11, 21, 31, 40);
    run[2].dur = 150;
    const struct top *runs[] = {run};
    const size_t n[] = {4};
    /* per-op slower / faster verdicts need the capture as the timing reference */
    struct chk_report *rep =
        check_n(cap, 4, runs, n, 1, &CHK_OPTS(.collect_events = 1, .timing_ref = CHK_TREF_CAPTURE));
    sbt_reader *rc = open_r(pathf("cap.sbt")), *rr = open_r(pathf("run0.sbt"));
    FILE *f = fopen(pathf("d.pftrace"), "wb");
    cr_assert(eq(int, chk_perfetto_write(rep, rc, rr, f, NULL), 0), "%s", chk_errmsg());
    fclose(f);
    size_t len;
    uint8_t *b = (uint8_t *)slurp(pathf("d.pftrace"), &len);
    struct pf_seen s;
    cr_expect(eq(int, pf_check(b, len, &s), 0));
    cr_expect(s.diff_process);
    cr_expect(s.first_div);
    cr_expect(s.gate, "the gate's verdict and coverage at the start");
    cr_expect(eq(int, s.incomplete, 0));
    cr_expect(s.counters > 0);
    cr_expect(eq(u32, s.flows_out, s.flows_in));
    cr_expect(s.verdict_mismatch >= 1); /* the "diff" category of the verdicts */
    cr_expect(s.flows_out >= 4);        /* 3 mismatches + 1 slower, each linked */
    free(b);
    /* the shared checker, when shared/ sits beside the checkout (tests run from its root) */
    if (access("../shared/perfetto/check_pftrace.sh", X_OK) == 0 &&
        system("command -v protoc >/dev/null 2>&1") == 0) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "../shared/perfetto/check_pftrace.sh --strict %s >/dev/null 2>&1",
                 pathf("d.pftrace"));
        cr_expect(eq(int, system(cmd), 0), "check_pftrace.sh --strict failed on %s", cmd);
    }
    chk_report_free(rep);
    sbt_reader_close(rc);
    sbt_reader_close(rr);
    /* an incomplete capture names itself so in the diff process */
    tx_incomplete = "unmodelled vkCmdFoo";
    rep = check_n(cap, 4, runs, n, 1, &CHK_OPTS(.collect_events = 1));
    rc = open_r(pathf("cap.sbt")), rr = open_r(pathf("run0.sbt"));
    f = fopen(pathf("i.pftrace"), "wb");
    cr_assert(eq(int, chk_perfetto_write(rep, rc, rr, f, NULL), 0), "%s", chk_errmsg());
    fclose(f);
    b = (uint8_t *)slurp(pathf("i.pftrace"), &len);
    cr_expect(eq(int, pf_check(b, len, &s), 0));
    cr_expect(s.incomplete);
    free(b);
    chk_report_free(rep);
    sbt_reader_close(rc);
    sbt_reader_close(rr);
}

/* ========================================================================================== */
/* CLI                                                                                        */
/* ========================================================================================== */

static int run_cli(const char *args)
{
    const char *bin = getenv("REPRISE_BIN");
    if (!bin)
        bin = "build/default/reprise";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", bin, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TestSuite(cli, .init = mkdir_tmp, .fini = rm_tmp);

Test(cli, exit_codes)
{
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    const struct top bad[] = CHAIN(10, 21, 31, 40);
    write_trace(pathf("c.sbt"), cap, 4);
    write_trace(pathf("b.sbt"), bad, 4);
    char a[512];
    snprintf(a, sizeof a, "check %s --results %s %s --junit %s --json %s", pathf("c.sbt"),
             pathf("c.sbt"), pathf("c.sbt"), pathf("j.xml"), pathf("j.json"));
    cr_expect(eq(int, run_cli(a), 0));
    snprintf(a, sizeof a, "check %s --results %s %s --perfetto %s", pathf("c.sbt"), pathf("b.sbt"),
             pathf("b.sbt"), pathf("p.pftrace"));
    cr_expect(eq(int, run_cli(a), 1));
    snprintf(a, sizeof a, "diff %s %s", pathf("c.sbt"), pathf("b.sbt"));
    cr_expect(eq(int, run_cli(a), 1));
    snprintf(a, sizeof a, "diff %s %s", pathf("c.sbt"), pathf("c.sbt"));
    cr_expect(eq(int, run_cli(a), 0));
    FILE *f = fopen(pathf("junk.sbt"), "w");
    fputs("not a trace", f);
    fclose(f);
    snprintf(a, sizeof a, "check %s --results %s", pathf("junk.sbt"), pathf("c.sbt"));
    cr_expect(eq(int, run_cli(a), 3));
    snprintf(a, sizeof a, "check %s --results %s --tolerance ulp:x", pathf("c.sbt"),
             pathf("c.sbt"));
    cr_expect(eq(int, run_cli(a), 2));
    /* --update-expect then --expect: the varying op becomes flaky and the gate passes */
    const struct top r2[] = CHAIN(10, 22, 30, 40);
    write_trace(pathf("r2.sbt"), r2, 4);
    snprintf(a, sizeof a, "check %s --results %s %s --expect %s --update-expect", pathf("c.sbt"),
             pathf("c.sbt"), pathf("r2.sbt"), pathf("e.txt"));
    cr_expect(eq(int, run_cli(a), 0));
    snprintf(a, sizeof a, "check %s --results %s %s --expect %s", pathf("c.sbt"), pathf("c.sbt"),
             pathf("r2.sbt"), pathf("e.txt"));
    cr_expect(eq(int, run_cli(a), 0));
    snprintf(a, sizeof a, "check %s --results %s %s", pathf("c.sbt"), pathf("c.sbt"),
             pathf("r2.sbt"));
    cr_expect(eq(int, run_cli(a), 1));
}

/* The output of a command in the temporary directory, and its exit status. */
static int run_out(const char *args, char *out, size_t cap)
{
    const char *bin = getenv("REPRISE_BIN");
    if (!bin)
        bin = "build/default/reprise";
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>&1", bin, args, pathf("out.txt"));
    int st = system(cmd);
    FILE *f = fopen(pathf("out.txt"), "r");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    out[n] = 0;
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(cli, incomplete_traces_are_refused_unless_allowed)
{
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    write_trace(pathf("r.sbt"), cap, 4);
    tx_incomplete = "vkCmdCopyQueryPoolResults passed through unrecorded";
    write_trace(pathf("c.sbt"), cap, 4);
    char a[1024], out[8192];
    snprintf(a, sizeof a, "check %s --results %s", pathf("c.sbt"), pathf("r.sbt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 3), "%s", out);
    cr_expect(strstr(out, "incomplete: vkCmdCopyQueryPoolResults") != NULL, "%s", out);
    cr_expect(strstr(out, "--allow-incomplete") != NULL, "%s", out);
    /* allowed: compared, and every report says so */
    snprintf(a, sizeof a, "check %s --results %s --allow-incomplete --json %s --junit %s",
             pathf("c.sbt"), pathf("r.sbt"), pathf("c.json"), pathf("c.xml"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 0), "%s", out);
    cr_expect(strstr(out, "INCOMPLETE TRACE") != NULL, "%s", out);
    size_t len;
    char *b = slurp(pathf("c.json"), &len);
    cr_expect(strstr(b, "\"complete\":false") != NULL);
    free(b);
    b = slurp(pathf("c.xml"), &len);
    cr_expect(strstr(b, "trace completeness") != NULL);
    free(b);
    /* the replay and its dry run */
    snprintf(a, sizeof a, "replay %s --mode full", pathf("c.sbt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 3), "%s", out);
    cr_expect(strstr(out, "incomplete: vkCmdCopyQueryPoolResults") != NULL, "%s", out);
    snprintf(a, sizeof a, "replay %s", pathf("c.sbt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 3), "%s", out);
    cr_expect(strstr(out, "error   incomplete: vkCmdCopyQueryPoolResults") != NULL, "%s", out);
    snprintf(a, sizeof a, "replay %s --allow-incomplete --json -", pathf("c.sbt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 0), "%s", out);
    cr_expect(strstr(out, "\"kind\":\"incomplete\",\"severity\":\"warning\"") != NULL, "%s", out);
}

Test(cli, nothing_verified_and_regimes_and_baselines)
{
    const struct top none[] = CHAIN(0, 0, 0, 0);
    write_trace(pathf("n.sbt"), none, 4);
    char a[1024], out[8192];
    snprintf(a, sizeof a, "check %s --results %s %s", pathf("n.sbt"), pathf("n.sbt"),
             pathf("n.sbt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 1), "%s", out);
    cr_expect(strstr(out, "nothing was verified") != NULL, "%s", out);
    /* a baseline directory in another regime is refused, naming the difference */
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    write_trace(pathf("c.sbt"), cap, 4);
    tx_meta[0][0] = "replay.verify", tx_meta[0][1] = "op";
    write_trace(pathf("r.sbt"), cap, 4);
    cr_assert(eq(int, system(strcat(strcat(strcpy(a, "mkdir "), dir), "/base")), 0));
    tx_meta[0][1] = "none";
    write_trace(pathf("base/run1.sbt"), cap, 4);
    write_trace(pathf("base/run2.sbt"), cap, 4);
    snprintf(a, sizeof a, "check %s --results %s --baseline %s", pathf("c.sbt"), pathf("r.sbt"),
             pathf("base"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 3), "%s", out);
    cr_expect(strstr(out, "verify 'op' vs 'none'") != NULL, "%s", out);
    /* with replays to run here, refused before the first of them */
    snprintf(a, sizeof a, "check %s --runs 2 --keep %s/k --baseline %s", pathf("c.sbt"), dir,
             pathf("base"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 3), "%s", out);
    cr_expect(strstr(out, "would run with verify 'op', the baseline") != NULL, "%s", out);
    cr_expect(ne(int, access(pathf("k/run1.sbt"), F_OK), 0), "no replay ran");
    snprintf(a, sizeof a, "check %s --results %s --baseline %s --allow-regime-change --json -",
             pathf("c.sbt"), pathf("r.sbt"), pathf("base"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 0), "%s", out);
    cr_expect(strstr(out, "\"reference_runs\":2") != NULL, "%s", out);
    snprintf(a, sizeof a, "check %s --results %s --timing-reference baseline", pathf("c.sbt"),
             pathf("r.sbt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 2), "%s", out);
    snprintf(a, sizeof a, "check %s --results %s --baseline %s/nothing", pathf("c.sbt"),
             pathf("r.sbt"), dir);
    cr_expect(eq(int, run_out(a, out, sizeof out), 3), "%s", out);
}

/* ========================================================================================== */
/* Verdicts fail closed: no pass without positive evidence                                    */
/* ========================================================================================== */

/* Each gate fails, or says it verified nothing, where it lacks the evidence for a pass: every
 * run compared under a tolerance whatever their order, expectations that keep their identities
 * on a range and are updated only there, a device section that does not apply, a diff that
 * compared nothing or saw an error on either side, expectation files that survive their own
 * round trip. */

TestSuite(closed, .init = mkdir_tmp, .fini = rm_tmp);

/* A dump directory (what replay --dump writes) holding one f32 as the outputs of op seq; its
 * path into out. */
static void dump_f32(const char *name, uint64_t seq, float v, char *out, size_t cap)
{
    snprintf(out, cap, "%s", pathf(name));
    char p[256];
    mkdir(out, 0777);
    snprintf(p, sizeof p, "%s/%" PRIu64 ".bin", out, seq);
    FILE *f = fopen(p, "wb");
    cr_assert(f != NULL);
    cr_assert(eq(sz, fwrite(&v, sizeof v, 1, f), 1));
    fclose(f);
}

/* One kernel (seq 0) with the capture's digest cap_d and dumped value cap_v, and n runs: run k
 * is input order[k], with digest d[] and dumped value v[]. Checked under tol. */
static struct chk_report *tol_check(uint64_t cap_d, float cap_v, const uint64_t *d, const float *v,
                                    const int *order, uint32_t n, const char *tol)
{
    static char dn[5][128];
    static struct top rt[4][1];
    const struct top cap[] = {{SBT_OP_KERNEL, 0, 1, 0, 100, 0, 1, cap_d, NULL, 0}};
    const struct top *runs[4];
    const char *dumps[4];
    size_t nr[4];
    dump_f32("ref.dump", 0, cap_v, dn[4], sizeof dn[4]);
    for (uint32_t k = 0; k < n; k++) {
        char nm[32];
        snprintf(nm, sizeof nm, "run%u.dump", k);
        dump_f32(nm, 0, v[order[k]], dn[k], sizeof dn[k]);
        dumps[k] = dn[k];
        rt[k][0] = cap[0];
        rt[k][0].digest = d[order[k]];
        runs[k] = rt[k];
        nr[k] = 1;
    }
    struct chk_opts o = CHK_OPTS(.ref_dump = dn[4], .run_dumps = dumps);
    cr_assert(eq(int, chk_tolerance_parse(tol, &o.tol), 0));
    return check_n(cap, 1, runs, nr, n, &o);
}

static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

Test(closed, every_run_is_compared_under_a_tolerance_whatever_the_order)
{
    /* runs 1.0, 1.25 (within abs:0.5 of each other and of the capture's 1.0) and 1e9 */
    const uint64_t d[] = {1, 2, 3};
    const float v[] = {1.0f, 1.25f, 1e9f};
    for (int p = 0; p < 6; p++) {
        struct chk_report *rep = tol_check(1, 1.0f, d, v, perms[p], 3, "abs:0.5");
        cr_expect(eq(int, rep->failed, 1), "order %d%d%d passed", perms[p][0], perms[p][1],
                  perms[p][2]);
        cr_expect(eq(u64, rep->count[CHK_NONDETERMINISTIC], 1), "order %d%d%d", perms[p][0],
                  perms[p][1], perms[p][2]);
        cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 0));
        chk_report_free(rep);
    }
    /* the runs agree within the tolerance (0.4, 0.4, 0.8); the third is beyond it from the
     * capture's 0.0: divergent, whatever the order */
    const uint64_t d2[] = {1, 1, 3};
    const float v2[] = {0.4f, 0.4f, 0.8f};
    for (int p = 0; p < 6; p++) {
        struct chk_report *rep = tol_check(9, 0.0f, d2, v2, perms[p], 3, "abs:0.5");
        cr_expect(eq(int, rep->failed, 1), "order %d%d%d passed", perms[p][0], perms[p][1],
                  perms[p][2]);
        cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 1), "order %d%d%d", perms[p][0], perms[p][1],
                  perms[p][2]);
        cr_expect(eq(u64, rep->count[CHK_NONDETERMINISTIC], 0));
        chk_report_free(rep);
    }
    /* every run within the tolerance of every other and of the capture: a pass in any order */
    const float v3[] = {0.1f, 0.2f, 0.3f};
    for (int p = 0; p < 6; p++) {
        struct chk_report *rep = tol_check(9, 0.0f, d, v3, perms[p], 3, "abs:0.5");
        cr_expect(eq(int, rep->failed, 0), "order %d%d%d: %s", perms[p][0], perms[p][1],
                  perms[p][2], rep->fail_reason);
        cr_expect(eq(u64, rep->n_verified, 1));
        cr_expect(eq(u64, rep->n_matched, 1));
        chk_report_free(rep);
    }
}

Test(closed, a_range_keeps_the_identities_of_the_whole_trace)
{
    /* expectations of the whole trace (rounds of produce, consume, finish), checked on a range
     * that starts in round 2: occurrences count from the trace's first op, so each expectation
     * lands on its own op. The capture carries no digests: the expectations are the reference. */
    static struct top a[40], a_nodig[40], a7[40];
    size_t na = pipeline(a, 10, -1, 0);
    memcpy(a_nodig, a, sizeof a);
    for (size_t i = 0; i < na; i++)
        a_nodig[i].digest = 0;
    chk_expect *upd;
    cr_assert(eq(int, chk_expect_create(&upd), 0));
    struct chk_report *rep = check_n(a, na, (const struct top *[]){a, a}, (size_t[]){na, na}, 2,
                                     &CHK_OPTS(.expect_update = upd));
    chk_report_free(rep);
    struct sbt_range r = {.has_seq = 1, .seq_begin = 6, .seq_end = 15};
    rep = check_n(a_nodig, na, (const struct top *[]){a, a}, (size_t[]){na, na}, 2,
                  &CHK_OPTS(.expect = upd, .range = &r));
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 0));
    cr_expect(eq(int, rep->failed, 0), "%s", rep->fail_reason);
    cr_expect(eq(u64, rep->n_matched, 9));
    chk_report_free(rep);
    /* a run whose op 7 differs is caught against that op's own expectation, and only there */
    memcpy(a7, a, sizeof a);
    a7[7].digest = 999;
    rep = check_n(a_nodig, na, (const struct top *[]){a7, a7}, (size_t[]){na, na}, 2,
                  &CHK_OPTS(.expect = upd, .range = &r));
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 1));
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(rep->n_findings >= 1 && rep->findings[0].seq == 7);
    chk_report_free(rep);
    chk_expect_free(upd);
}

/* Lines of a and b that differ (both with the same number of lines), else -1. */
static int lines_differ(const char *a, const char *b)
{
    int n = 0;
    while (*a && *b) {
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
        n += la != lb || memcmp(a, b, la);
        a += la + (ea != NULL), b += lb + (eb != NULL);
    }
    return *a || *b ? -1 : n;
}

static int count_str(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p++)
        n++;
    return n;
}

Test(closed, update_expect_on_a_range_keeps_the_rest_of_the_file)
{
    static struct top a[40];
    size_t na = pipeline(a, 10, -1, 0);
    write_trace(pathf("c.sbt"), a, na);
    write_trace(pathf("r.sbt"), a, na);
    a[7].digest = 999;
    write_trace(pathf("r7.sbt"), a, na);
    char cmd[1024], out[8192], e[128];
    snprintf(e, sizeof e, "%s", pathf("e.txt"));
    snprintf(cmd, sizeof cmd, "check %s --results %s %s --expect %s --update-expect",
             pathf("c.sbt"), pathf("r.sbt"), pathf("r.sbt"), e);
    cr_assert(eq(int, run_out(cmd, out, sizeof out), 0), "%s", out);
    size_t len;
    char *whole = slurp(e, &len);
    cr_expect(eq(int, count_str(whole, "\nop "), (int)na), "%s", whole);
    /* the same runs on a range: the file stays as it was */
    snprintf(cmd, sizeof cmd, "check %s --results %s %s --expect %s --update-expect --ops 6:15",
             pathf("c.sbt"), pathf("r.sbt"), pathf("r.sbt"), e);
    cr_expect(eq(int, run_out(cmd, out, sizeof out), 0), "%s", out);
    char *after = slurp(e, &len);
    cr_expect(eq(str, after, whole));
    /* runs whose op 7 computes something else, on that range: that line alone changes */
    snprintf(cmd, sizeof cmd, "check %s --results %s %s --expect %s --update-expect --ops 6:15",
             pathf("c.sbt"), pathf("r7.sbt"), pathf("r7.sbt"), e);
    cr_expect(eq(int, run_out(cmd, out, sizeof out), 0), "%s", out);
    char *after7 = slurp(e, &len);
    cr_expect(eq(int, count_str(after7, "\nop "), (int)na), "%s", after7);
    cr_expect(eq(int, lines_differ(whole, after7), 1), "%s", after7);
    cr_expect(strstr(after7, "000000000000123400000000000003e7 ok 7 ") != NULL, "%s", after7);
    /* the whole trace checked against the file: op 7 is divergent, nothing else */
    snprintf(cmd, sizeof cmd, "check %s --results %s %s --expect %s --json %s", pathf("c.sbt"),
             pathf("r.sbt"), pathf("r.sbt"), e, pathf("j.json"));
    cr_expect(eq(int, run_out(cmd, out, sizeof out), 1), "%s", out);
    char *js = slurp(pathf("j.json"), &len);
    cr_expect(strstr(js, "\"nondeterministic\":0,\"divergent\":1,\"missing\":0") != NULL, "%s", js);
    free(whole), free(after), free(after7), free(js);
}

/* Identities of CHAIN's ops (stream ids start at 1; the kernels have no program: "?"). */
static const char *const chain_ids[] = {
    "s1/%3F:produce/g1x1x1.b64x1x1#0",
    "s1/%3F:consume/g1x1x1.b64x1x1#0",
    "s2/%3F:other/g1x1x1.b64x1x1#0",
    "s1/%3F:finish/g1x1x1.b64x1x1#0",
};

Test(closed, expectations_of_another_device_are_not_applied_and_say_so)
{
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    const uint64_t dig[] = {10, 20, 40, 30};
    const sbt_hash wrong = {7, 7};
    chk_expect *e;
    cr_assert(eq(int, chk_expect_create(&e), 0));
    for (uint32_t k = 0; k < 4; k++)
        cr_assert(eq(
            int, chk_expect_set(e, "other gpu", chain_ids[k], k, CHK_LABEL_OK, &wrong, NULL), 0));
    /* the runs ran on lavapipe: the file has no section for it; nothing it expects applies */
    struct chk_report *rep = check_n(cap, 4, (const struct top *[]){cap, cap},
                                     (const size_t[]){4, 4}, 2, &CHK_OPTS(.expect = e));
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(strstr(rep->fail_reason, "no section for device 'lavapipe'") != NULL, "%s",
              rep->fail_reason);
    char *txt, *json, *xml;
    report_forms(rep, &txt, &json, &xml);
    cr_expect(strstr(txt, "reprise check: NOT VERIFIED") != NULL, "%s", txt);
    cr_expect(strstr(txt, "no section for device 'lavapipe'") != NULL, "%s", txt);
    cr_expect(strstr(json, "\"verdict\":\"not-verified\"") != NULL, "%s", json);
    cr_expect(strstr(json, "no section for device 'lavapipe'") != NULL, "%s", json);
    cr_expect(strstr(xml, "not verified") != NULL, "%s", xml);
    cr_expect(strstr(xml, "no section for device &apos;lavapipe&apos;") != NULL, "%s", xml);
    free(txt), free(json), free(xml);
    chk_report_free(rep);
    /* with a section for lavapipe it applies: every op differs from what it expects */
    for (uint32_t k = 0; k < 4; k++)
        cr_assert(
            eq(int, chk_expect_set(e, "lavapipe", chain_ids[k], k, CHK_LABEL_OK, &wrong, NULL), 0));
    rep = check_n(cap, 4, (const struct top *[]){cap, cap}, (const size_t[]){4, 4}, 2,
                  &CHK_OPTS(.expect = e));
    cr_expect(eq(u64, rep->count[CHK_DIVERGENT], 4));
    cr_expect(eq(int, rep->failed, 1));
    chk_report_free(rep);
    chk_expect_free(e);
    /* a section for any device ("*") applies on every device */
    cr_assert(eq(int, chk_expect_create(&e), 0));
    for (uint32_t k = 0; k < 4; k++) {
        sbt_hash h = {dig[k], 0x1234};
        cr_assert(eq(int, chk_expect_set(e, "*", chain_ids[k], k, CHK_LABEL_OK, &h, NULL), 0));
    }
    rep = check_n(cap, 4, (const struct top *[]){cap, cap}, (const size_t[]){4, 4}, 2,
                  &CHK_OPTS(.expect = e));
    cr_expect(eq(int, rep->failed, 0), "%s", rep->fail_reason);
    cr_expect(eq(u64, rep->n_matched, 4));
    chk_report_free(rep);
    chk_expect_free(e);
}

Test(closed, expectations_are_kept_per_replay_device)
{
    /* the runs ran on "gpu B" (replay.device); the device table they carry is the capture's */
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    tx_meta[0][0] = "replay.device", tx_meta[0][1] = "gpu B";
    chk_expect *upd;
    cr_assert(eq(int, chk_expect_create(&upd), 0));
    struct chk_report *rep = check_n(cap, 4, (const struct top *[]){cap, cap},
                                     (const size_t[]){4, 4}, 2, &CHK_OPTS(.expect_update = upd));
    cr_expect(eq(str, rep->device, "gpu B"));
    cr_expect(eq(u64, chk_expect_count(upd, "gpu B"), 4));
    cr_expect(eq(u64, chk_expect_count(upd, "lavapipe"), 0));
    chk_report_free(rep);
    rep = check_n(cap, 4, (const struct top *[]){cap, cap}, (const size_t[]){4, 4}, 2,
                  &CHK_OPTS(.expect = upd));
    cr_expect(eq(int, rep->failed, 0), "%s", rep->fail_reason);
    chk_report_free(rep);
    /* runs on gpu C: that section does not apply to them */
    tx_meta[0][1] = "gpu C";
    rep = check_n(cap, 4, (const struct top *[]){cap, cap}, (const size_t[]){4, 4}, 2,
                  &CHK_OPTS(.expect = upd));
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(strstr(rep->fail_reason, "no section for device 'gpu C'") != NULL, "%s",
              rep->fail_reason);
    chk_report_free(rep);
    chk_expect_free(upd);
}

Test(closed, diff_that_compared_nothing_is_not_verified_and_errors_count_on_either_side)
{
    const struct top none[] = CHAIN(0, 0, 0, 0);
    struct chk_report *rep = diff_of(none, 4, none, 4, 16);
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(eq(u64, rep->n_verified, 0));
    cr_expect(strstr(rep->fail_reason, "nothing was verified") != NULL, "%s", rep->fail_reason);
    char *txt, *json, *xml;
    report_forms(rep, &txt, &json, &xml);
    cr_expect(strstr(txt, "reprise diff: NOT VERIFIED") != NULL, "%s", txt);
    cr_expect(strstr(json, "\"verdict\":\"not-verified\"") != NULL, "%s", json);
    cr_expect(strstr(xml, "nothing was verified") != NULL, "%s", xml);
    free(txt), free(json), free(xml);
    chk_report_free(rep);
    /* an error on side A (the reference) is a finding, as one on side B is */
    struct top ea[] = CHAIN(10, 20, 30, 40);
    ea[1].error = "VK_ERROR_DEVICE_LOST";
    const struct top ok[] = CHAIN(10, 20, 30, 40);
    rep = diff_of(ea, 4, ok, 4, 16);
    cr_expect(eq(u64, rep->count[CHK_REPLAY_ERROR], 1));
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(rep->n_findings == 1 && strstr(rep->findings[0].note, "DEVICE_LOST") != NULL);
    chk_report_free(rep);
    rep = diff_of(ok, 4, ea, 4, 16);
    cr_expect(eq(u64, rep->count[CHK_REPLAY_ERROR], 1));
    cr_expect(eq(int, rep->failed, 1));
    chk_report_free(rep);
    /* digests on both sides, no error: a pass */
    rep = diff_of(ok, 4, ok, 4, 16);
    cr_expect(eq(int, rep->failed, 0), "%s", rep->fail_reason);
    cr_expect(eq(u64, rep->n_verified, 4));
    chk_report_free(rep);
}

Test(closed, expectation_files_survive_their_own_round_trip)
{
    /* devices and names holding what a line cannot hold as it is: carriage returns, a newline,
     * '#' after a blank (a comment), '%', blanks at the ends, control characters */
    static const char dev[] = "gpu\r\n# x %41 ";
    chk_expect *e;
    cr_assert(eq(int, chk_expect_create(&e), 0));
    sbt_hash d = {1, 2};
    cr_assert(eq(int, chk_expect_set(e, dev, "s1/k#0", 0, CHK_LABEL_OK, &d, "a\r#b"), 0));
    cr_assert(
        eq(int, chk_expect_set(e, dev, "s1/k#1", 1, CHK_LABEL_OK, &d, " lead\ttab #1 \r"), 0));
    cr_assert(eq(int, chk_expect_set(e, "*", NULL, 2, CHK_LABEL_SKIP, NULL, "%zz\x01%"), 0));
    cr_assert(eq(int, chk_expect_save(e, pathf("a.txt")), 0), "%s", chk_errmsg());
    chk_expect_free(e);
    cr_assert(eq(int, chk_expect_load(pathf("a.txt"), &e), 0), "%s", chk_errmsg());
    uint32_t label;
    sbt_hash got;
    cr_expect(eq(int, chk_expect_get(e, dev, "s1/k#0", 0, &label, &got), 1));
    cr_expect(eq(u64, chk_expect_count(e, dev), 2));
    cr_assert(eq(int, chk_expect_save(e, pathf("b.txt")), 0), "%s", chk_errmsg());
    chk_expect_free(e);
    size_t na, nb;
    char *a = slurp(pathf("a.txt"), &na), *b = slurp(pathf("b.txt"), &nb);
    cr_expect(eq(str, a, b));
    free(a), free(b);
    /* identities are words of a line: what is not one is refused, never written */
    cr_assert(eq(int, chk_expect_create(&e), 0));
    cr_expect(
        eq(int, chk_expect_set(e, "gpu", "s1/a\vb#0", 0, CHK_LABEL_OK, &d, NULL), SBT_EINVAL));
    cr_expect(eq(int, chk_expect_set(e, "gpu", "#0", 0, CHK_LABEL_OK, &d, NULL), SBT_EINVAL));
    cr_expect(strstr(chk_errmsg(), "identity") != NULL, "%s", chk_errmsg());
    chk_expect_free(e);
}

Test(closed, cli_exit_codes)
{
    /* a tolerance: every run compared, in either order */
    const struct top one[] = {{SBT_OP_KERNEL, 0, 1, 0, 100, 0, 1, 1, NULL, 0}};
    struct top r[3][1];
    char dd[3][128], a[1400], out[8192];
    const float v[] = {1.0f, 1.25f, 1e9f};
    write_trace(pathf("c1.sbt"), one, 1);
    for (int k = 0; k < 3; k++) {
        char nm[32];
        r[k][0] = one[0];
        r[k][0].digest = 1 + (uint64_t)k;
        snprintf(nm, sizeof nm, "r%d.sbt", k + 1);
        write_trace(pathf(nm), r[k], 1);
        snprintf(nm, sizeof nm, "d%d", k + 1);
        dump_f32(nm, 0, v[k], dd[k], sizeof dd[k]);
    }
    snprintf(a, sizeof a, "check %s --tolerance abs:0.5 --results %s %s %s --dump-dirs %s %s %s",
             pathf("c1.sbt"), pathf("r1.sbt"), pathf("r2.sbt"), pathf("r3.sbt"), dd[0], dd[1],
             dd[2]);
    cr_expect(eq(int, run_out(a, out, sizeof out), 1), "%s", out);
    snprintf(a, sizeof a, "check %s --tolerance abs:0.5 --results %s %s %s --dump-dirs %s %s %s",
             pathf("c1.sbt"), pathf("r3.sbt"), pathf("r1.sbt"), pathf("r2.sbt"), dd[2], dd[0],
             dd[1]);
    cr_expect(eq(int, run_out(a, out, sizeof out), 1), "%s", out);
    snprintf(a, sizeof a, "check %s --tolerance abs:0.5 --results %s %s --dump-dirs %s %s",
             pathf("c1.sbt"), pathf("r2.sbt"), pathf("r1.sbt"), dd[1], dd[0]);
    cr_expect(eq(int, run_out(a, out, sizeof out), 0), "%s", out);
    /* expectations of another device: exit 1, saying why; --update-expect adds this device's
     * section and keeps the other's */
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    write_trace(pathf("c.sbt"), cap, 4);
    FILE *f = fopen(pathf("e.txt"), "w");
    fprintf(f, "reprise-expect 2\ndevice other gpu\nop %s 00000000000000070000000000000007 ok 0\n",
            chain_ids[0]);
    fclose(f);
    snprintf(a, sizeof a, "check %s --results %s %s --expect %s", pathf("c.sbt"), pathf("c.sbt"),
             pathf("c.sbt"), pathf("e.txt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 1), "%s", out);
    cr_expect(strstr(out, "NOT VERIFIED") != NULL, "%s", out);
    cr_expect(strstr(out, "no section for device 'lavapipe'") != NULL, "%s", out);
    snprintf(a, sizeof a, "check %s --results %s %s --expect %s --update-expect", pathf("c.sbt"),
             pathf("c.sbt"), pathf("c.sbt"), pathf("e.txt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 0), "%s", out);
    snprintf(a, sizeof a, "check %s --results %s %s --expect %s", pathf("c.sbt"), pathf("c.sbt"),
             pathf("c.sbt"), pathf("e.txt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 0), "%s", out);
    size_t len;
    char *txt = slurp(pathf("e.txt"), &len);
    cr_expect(strstr(txt, "\ndevice other gpu\n") && strstr(txt, "\ndevice lavapipe\n"), "%s", txt);
    free(txt);
    /* diff: nothing compared; an error on side A */
    const struct top none[] = CHAIN(0, 0, 0, 0);
    write_trace(pathf("n.sbt"), none, 4);
    snprintf(a, sizeof a, "diff %s %s", pathf("n.sbt"), pathf("n.sbt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 1), "%s", out);
    cr_expect(strstr(out, "nothing was verified") != NULL, "%s", out);
    struct top ea[] = CHAIN(10, 20, 30, 40);
    ea[2].error = "VK_ERROR_DEVICE_LOST";
    write_trace(pathf("ea.sbt"), ea, 4);
    snprintf(a, sizeof a, "diff %s %s", pathf("ea.sbt"), pathf("c.sbt"));
    cr_expect(eq(int, run_out(a, out, sizeof out), 1), "%s", out);
    cr_expect(strstr(out, "DEVICE_LOST") != NULL, "%s", out);
}

/* ========================================================================================== */
/* Real replays, on lavapipe                                                                  */
/* ========================================================================================== */

/* Captures of the tests/vk programs checked with `reprise check --runs 3` (the replays run in
 * the CLI): the deterministic vk_compute passes; racy (a dispatch with a cross-workgroup data
 * race) fails with its racy dispatch named as the first divergence, nondeterministic; a capture
 * whose upload was altered in the trace is divergent at the op that reads the altered byte.
 * lavapipe runs a dispatch's workgroups on LP_NUM_THREADS threads (one per CPU by default):
 * four threads make the race show on one or two CPUs too. */

static const char *vk_bin, *vk_build;

static void vk_setup(void)
{
    mkdir_tmp();
    vk_bin = getenv("REPRISE_BIN");
    vk_build = getenv("REPRISE_BUILD");
}

TestSuite(replays, .init = vk_setup, .fini = rm_tmp, .timeout = 300);

static void need_vulkan(const char *prog)
{
    if (!vk_bin || !vk_build)
        cr_skip_test("REPRISE_BIN / REPRISE_BUILD not set: run through `make check`");
    char exe[1024];
    snprintf(exe, sizeof exe, "%s/tests/vk/%s", vk_build, prog);
    if (access(exe, X_OK) || access(vk_bin, X_OK))
        cr_skip_test("%s or %s not built", exe, vk_bin);
    struct replay_device_info d[4];
    if (replay_devices(SBT_API_VULKAN, d, 4) <= 0)
        cr_skip_test("no Vulkan device: %s", replay_errmsg());
}

/* Runs a shell command in the temporary directory with LP_NUM_THREADS=4; its exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[4096], full[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "cd '%s' && LP_NUM_THREADS=4 %s", dir, cmd);
    int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Under `make asan` the program is instrumented too, with leak detection on (test_capture.c). */
static void capture_prog(const char *prog, const char *out)
{
    int rc = sh("'%s' capture --digests -o %s -- '%s/tests/vk/%s' "
                ">/dev/null 2>capture.err",
                vk_bin, out, vk_build, prog);
    cr_assert(eq(int, rc, 0), "capture of %s failed (exit %d), see %s/capture.err", prog, rc, dir);
}

/* `reprise check TRACE --runs 3 EXTRA --json c.json --junit c.xml`: the exit status; the JSON
 * (validated) in *json, the JUnit failures in *n_fail. */
static int check_cli(const char *trace, const char *extra, char **json, int *n_fail)
{
    int rc = sh("'%s' check %s --runs 3 --keep runs %s --json c.json --junit c.xml >c.txt "
                "2>c.err",
                vk_bin, trace, extra ? extra : "");
    size_t len;
    char *b = slurp(pathf("c.json"), &len);
    struct js j = {b, b + len};
    cr_assert(eq(int, js_value(&j), 0), "JSON does not parse near: %.40s", j.p);
    *json = b;
    b = slurp(pathf("c.xml"), &len);
    int n_tc;
    cr_assert(eq(int, xml_ok(b, &n_tc, n_fail), 0), "%s", b);
    cr_expect(eq(int, n_tc, 5 + CHK__NCLASS),
              "the trace, 3 runs, one testcase per class and coverage");
    free(b);
    return rc;
}

/* The number after "key": in the object that starts at "obj": (whole document if obj NULL). */
static int64_t js_num(const char *json, const char *obj, const char *key)
{
    char k[96];
    const char *p = json;
    if (obj) {
        snprintf(k, sizeof k, "\"%s\":{", obj);
        p = strstr(json, k);
        cr_assert(p != NULL, "no %s in the JSON", k);
    }
    snprintf(k, sizeof k, "\"%s\":", key);
    p = strstr(p, k);
    cr_assert(p != NULL, "no %s in the JSON", k);
    return strtoll(p + strlen(k), NULL, 10);
}

/* The string value of "key": in the object that starts at "obj":. */
static void js_str(const char *json, const char *obj, const char *key, char *out, size_t n)
{
    char k[96];
    snprintf(k, sizeof k, "\"%s\":{", obj);
    const char *p = strstr(json, k);
    cr_assert(p != NULL, "no %s in the JSON", k);
    snprintf(k, sizeof k, "\"%s\":\"", key);
    p = strstr(p, k);
    cr_assert(p != NULL, "no %s in the JSON", k);
    p += strlen(k);
    size_t i = 0;
    while (p[i] && p[i] != '"' && i + 1 < n)
        out[i] = p[i], i++;
    out[i] = 0;
}

Test(replays, deterministic_workload_passes)
{
    need_vulkan("vk_compute");
    capture_prog("vk_compute", "c.sbt");
    char *json;
    int n_fail;
    int rc = check_cli("c.sbt", NULL, &json, &n_fail);
    cr_expect(eq(int, rc, 0), "check of vk_compute failed (exit %d); see %s/c.txt", rc, dir);
    cr_expect(strstr(json, "\"result\":\"pass\"") != NULL, "%s", json);
    cr_expect(js_num(json, NULL, "verified") > 0);
    cr_expect(eq(i64, js_num(json, "counts", "nondeterministic"), 0));
    cr_expect(eq(i64, js_num(json, "counts", "divergent"), 0));
    cr_expect(eq(i64, js_num(json, "counts", "replay-error"), 0));
    cr_expect(eq(int, n_fail, 0));
    free(json);
    /* the runs were kept where --keep said, and the CLI said so */
    cr_expect(eq(int, access(pathf("runs/run3.sbt"), R_OK), 0));
    cr_expect(eq(int, sh("grep -q 'kept in runs' c.err"), 0));
}

/* The timing gate against a 3-run baseline (the README's `check --runs 3 --keep base`): with
 * --runs 3 it cannot fail, so it is not gated and says how many runs it needs; without --runs,
 * check runs that many, and the gate is gated. */
Test(replays, default_runs_give_the_timing_gate_power_against_its_baseline)
{
    need_vulkan("vk_compute");
    capture_prog("vk_compute", "c.sbt");
    cr_assert(eq(int, sh("'%s' check c.sbt --runs 3 --keep base -q 2>/dev/null", vk_bin), 0));
    int rc = sh("'%s' check c.sbt --runs 3 --keep r3 --baseline base --junit r3.xml "
                "--json r3.json >r3.txt 2>&1",
                vk_bin);
    cr_expect(eq(int, rc, 0), "see %s/r3.txt", dir);
    size_t len;
    char *j = slurp(pathf("r3.json"), &len);
    cr_expect(strstr(j, "\"gate\":\"not-gated\"") != NULL, "%s", j);
    int64_t tests = js_num(j, "timing", "tests"), need = js_num(j, "timing", "runs_needed");
    cr_expect(tests > 0);
    cr_expect(eq(i64, need, chk_timing_runs_needed(3, (uint32_t)tests, 0.95)));
    cr_expect(need > 3, "3 runs against 3 can never fail: 1 / C(6, 3) = 0.05");
    free(j);
    j = slurp(pathf("r3.txt"), &len);
    char want[64];
    snprintf(want, sizeof want, "needs --runs %" PRId64, need);
    cr_expect(strstr(j, want) != NULL, "%s", j);
    free(j);
    j = slurp(pathf("r3.xml"), &len);
    cr_expect(strstr(j, "<skipped message=\"timing not gated: 3 runs against 3") != NULL, "%s", j);
    free(j);
    /* no --runs against those 3: no more runs than the baseline has results (more would
     * measure the machine's drift since the baseline): 3, not gated, saying what it needs */
    rc = sh("'%s' check c.sbt --keep r3a --baseline base --json r3a.json >r3a.txt 2>r3a.err",
            vk_bin);
    cr_expect(eq(int, rc, 0), "see %s/r3a.txt", dir);
    cr_expect(eq(int, sh("test $(ls r3a/run*.sbt | wc -l) -eq 3"), 0));
    cr_expect(eq(int, sh("grep -q 'no more than the baseline has results' r3a.err"), 0));
    j = slurp(pathf("r3a.json"), &len);
    cr_expect(strstr(j, "\"gate\":\"not-gated\"") != NULL, "%s", j);
    free(j);
    /* against 10 results at 99% confidence: as many as the gate needs, and it is gated
     * (passed, or failed if this machine's load made it so; never not gated) */
    cr_assert(eq(int, sh("'%s' check c.sbt --runs 10 --keep base10 -q 2>/dev/null", vk_bin), 0));
    uint32_t need10 = chk_timing_runs_needed(10, (uint32_t)tests, 0.99);
    cr_expect(need10 > 3 && need10 <= 10, "%u runs: 5 groups need 4", need10);
    rc = sh("'%s' check c.sbt --keep rn --baseline base10 --confidence 0.99 --no-confirm "
            "--json rn.json >rn.txt 2>rn.err",
            vk_bin);
    cr_expect(rc == 0 || rc == 1, "exit %d, see %s/rn.txt", rc, dir);
    j = slurp(pathf("rn.json"), &len);
    cr_expect(strstr(j, "\"gate\":\"not-gated\"") == NULL, "%s", j);
    free(j);
    cr_expect(eq(int, sh("test $(ls rn/run*.sbt | wc -l) -eq %u", need10), 0), "runs in %s/rn",
              dir);
    cr_expect(eq(
        int, sh("grep -q 'the fewest with which a timing gate of %" PRId64 " group' rn.err", tests),
        0));
}

/* The seq of the first dispatch of the pipeline built from <build>/tests/vk/<spv>: the program
 * whose blob holds the same SPIR-V. */
static uint64_t dispatch_of(const char *trace, const char *spv)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/vk/%s", vk_build, spv);
    size_t spv_len;
    char *code = slurp(path, &spv_len);
    sbt_reader *r = open_r(pathf(trace));
    uint32_t np, nk, prog = 0, kern[16], n_kern = 0;
    const struct sbt_program *pv = sbt_reader_programs(r, &np);
    for (uint32_t i = 0; i < np && !prog; i++) {
        void *data;
        size_t len;
        if (sbt_reader_blob(r, &pv[i].blob, &data, &len) == 0) {
            if (len == spv_len && !memcmp(data, code, len))
                prog = pv[i].id;
            free(data);
        }
    }
    cr_assert(prog != 0, "no program of %s holds %s", trace, path);
    const struct sbt_kernel *kv = sbt_reader_kernels(r, &nk);
    for (uint32_t i = 0; i < nk; i++)
        if (kv[i].program == prog && n_kern < 16)
            kern[n_kern++] = kv[i].id;
    sbt_cursor *cu;
    const struct sbt_op *op;
    uint64_t seq = UINT64_MAX;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &cu), 0));
    while (seq == UINT64_MAX && sbt_cursor_next(cu, &op) == 1)
        for (uint32_t i = 0; i < n_kern; i++)
            if (op->kind == SBT_OP_KERNEL && op->kernel == kern[i])
                seq = op->seq;
    sbt_cursor_close(cu);
    sbt_reader_close(r);
    free(code);
    cr_assert(seq != UINT64_MAX, "no dispatch of %s in %s", spv, trace);
    return seq;
}

Test(replays, racy_dispatch_is_the_first_divergence)
{
    need_vulkan("racy");
    capture_prog("racy", "r.sbt");
    uint64_t racy = dispatch_of("r.sbt", "racy.spv");
    char *json;
    int n_fail;
    int rc = check_cli("r.sbt", NULL, &json, &n_fail);
    cr_expect(eq(int, rc, 1), "check of racy: exit %d, expected 1; see %s/c.txt", rc, dir);
    char cls[64];
    js_str(json, "first_divergence", "class", cls, sizeof cls);
    cr_expect(eq(str, cls, "nondeterministic"));
    cr_expect(eq(i64, js_num(json, "first_divergence", "seq"), (int64_t)racy),
              "the first divergence is the racy dispatch, op %" PRIu64, racy);
    cr_expect(js_num(json, "counts", "nondeterministic") >= 1);
    /* what reads the race's output varies too, but is downstream: one root */
    cr_expect(eq(i64, js_num(json, NULL, "roots"), 1));
    cr_expect(n_fail >= 2, "the trace's testcase and the nondeterministic class fail");
    free(json);
    char want[64];
    snprintf(want, sizeof want, "grep -q 'first divergence: op %" PRIu64 " ' c.txt", racy);
    cr_expect(eq(int, sh("%s", want), 0), "the summary names op %" PRIu64, racy);
}

/* llama.cpp's Vulkan backend (ggml-vulkan, npm's node-llama-cpp prebuilt; issue 21) running
 * a tiny llama model the test makes (tests/llama): the same tokens with and without capture,
 * every trace of the capture (node-llama-cpp starts a second process to test its binary)
 * complete, and `check --runs 2` passing: every read-back bit for bit in both replays. On
 * Debian 12's Mesa 22.3 and on Mesa 25 (which lacks nothing ggml asks for: it chains
 * VkPipelineRobustnessCreateInfo, once unmodelled). A cold shader cache costs lavapipe minutes
 * compiling ggml's pipelines; tenv_llama puts Mesa's cache in the build tree. */
struct llamacase { /* an array: Criterion copies parameters into another process */
    int mesa25;
};

ParameterizedTestParameters(replays, llama_cpp)
{
    static struct llamacase c[] = {{0}, {1}};
    return cr_make_param_array(struct llamacase, c, sizeof c / sizeof c[0]);
}

/* The llama environment (and Mesa 25's before it, if mesa25) in *env; skips without them. */
static void llama_env(int mesa25, char *env, size_t n)
{
#if defined(__SANITIZE_ADDRESS__)
    /* node (V8) reserves the addresses where AddressSanitizer's shadow must go */
    cr_skip_test("an ASan build of the capture layer cannot load into node");
#endif
    need_vulkan("vk_compute");
    char why[512];
    const char *mesa = "";
    if (mesa25 && !(mesa = tenv_mesa25(why, sizeof why)))
        cr_skip_test("%s", why);
    const char *ll = tenv_llama(why, sizeof why);
    if (!ll)
        cr_skip_test("%s", why);
    snprintf(env, n, "%s%s", mesa, ll);
}

/* `ENV [reprise capture -o TRACE --] node llama.mjs tiny.gguf >OUT 2>OUT.err`: exit status. */
static int llama_run(const char *env, const char *trace, const char *out)
{
    char cap[1200] = "";
    if (trace)
        snprintf(cap, sizeof cap, "'%s' capture -o %s --", vk_bin, trace);
    return sh("%s %s '%s/build/llama/bin/node' '%s/tests/llama/llama.mjs' "
              "'%s/build/llama/tiny.gguf' >%s 2>%s.err",
              env, cap, tenv_src(), tenv_src(), tenv_src(), out, out);
}

ParameterizedTest(struct llamacase *c, replays, llama_cpp, .timeout = 1500)
{
    char env[8192];
    llama_env(c->mesa25, env, sizeof env);
    int rc = llama_run(env, NULL, "plain.txt");
    cr_assert(eq(int, rc, 0), "llama.mjs failed (exit %d): see %s/plain.txt.err", rc, dir);
    rc = llama_run(env, "l.sbt", "cap.txt");
    cr_assert(eq(int, rc, 0),
              "capture failed or a trace is incomplete (exit %d): see %s/cap.txt.err", rc, dir);
    cr_assert(eq(int, sh("cmp -s plain.txt cap.txt"), 0), "the tokens changed under capture");
    cr_expect(eq(int, sh("grep -q '^generated [0-9]' cap.txt"), 0), "no tokens generated");
    cr_expect(eq(int, sh("grep -q 'l.sbt: [0-9]* ops captured .*; complete' cap.txt.err"), 0),
              "the root trace is not complete: see %s/cap.txt.err", dir);
    char *json;
    int n_fail;
    rc = sh("%s '%s' check l.sbt --runs 2 --json c.json >c.txt 2>c.err", env, vk_bin);
    size_t len;
    json = slurp(pathf("c.json"), &len);
    cr_expect(eq(int, rc, 0), "check failed (exit %d); see %s/c.txt", rc, dir);
    cr_expect(strstr(json, "\"result\":\"pass\"") != NULL, "not a pass: see %s/c.txt", dir);
    cr_expect(js_num(json, NULL, "verified") > 100, "too few outputs compared");
    cr_expect(eq(i64, js_num(json, "counts", "nondeterministic"), 0));
    cr_expect(eq(i64, js_num(json, "counts", "divergent"), 0));
    cr_expect(eq(i64, js_num(json, "counts", "replay-error"), 0));
    (void)n_fail;
    free(json);
}

/* The line number (1-based) of seq among a `view` listing's host reads, and the digest on
 * line n of another: files of "seq digest" lines. */
static int line_of(const char *path, uint64_t seq)
{
    FILE *f = fopen(pathf(path), "r");
    cr_assert(f != NULL);
    char line[256];
    int n = 0, at = 0;
    while (!at && fgets(line, sizeof line, f)) {
        n++;
        if (strtoull(line, NULL, 10) == seq)
            at = n;
    }
    fclose(f);
    return at;
}

static void digest_at(const char *path, int n, char *out, size_t cap)
{
    FILE *f = fopen(pathf(path), "r");
    cr_assert(f != NULL);
    char line[256];
    out[0] = 0;
    for (int i = 1; fgets(line, sizeof line, f); i++)
        if (i == n) {
            const char *d = strchr(line, ' ');
            snprintf(out, cap, "%.16s", d ? d + 1 : "");
            break;
        }
    fclose(f);
}

/* The driver engineer's question: a llama.cpp trace captured on Mesa 22.3, checked on Mesa 25.
 * The two drivers compute different bits (their captures differ at the first graph's
 * read-backs), so the check fails as divergent, never nondeterministic (the replays agree),
 * and what the replay computed there is what the program itself gets on Mesa 25: the first
 * divergence's digest equals the Mesa 25 capture's digest of the same read-back. */
/* `check FROM.sbt` on the other Mesa (env): the replays agree and no replay fails, but they
 * differ from the capture, and the first read-back that differs is what the program itself
 * computed on that Mesa (the digest its own trace, TO, recorded for the same read-back). */
static void check_on_the_other_driver(const char *env, int from, int to)
{
    int rc = sh("%s '%s' check l%d.sbt --runs 2 --json x%d.json >x%d.txt 2>x%d.err", env, vk_bin,
                from, from, from, from);
    size_t len;
    char name[32];
    snprintf(name, sizeof name, "x%d.json", from);
    char *json = slurp(pathf(name), &len);
    cr_expect(eq(int, rc, 1), "check of the %d trace on the other Mesa: exit %d; see %s/x%d.txt",
              from, rc, dir, from);
    cr_expect(eq(i64, js_num(json, "counts", "nondeterministic"), 0), "the replays disagree");
    cr_expect(eq(i64, js_num(json, "counts", "replay-error"), 0));
    cr_expect(js_num(json, "counts", "divergent") > 0);
    char cls[32], kind[32], got[64], want[64], from_r[32], to_r[32];
    js_str(json, "first_divergence", "class", cls, sizeof cls);
    js_str(json, "first_divergence", "kind", kind, sizeof kind);
    js_str(json, "first_divergence", "got_digest", got, sizeof got);
    cr_expect(eq(str, cls, "divergent"));
    cr_expect(eq(str, kind, "host_read"));
    snprintf(from_r, sizeof from_r, "r%d.txt", from);
    snprintf(to_r, sizeof to_r, "r%d.txt", to);
    int n = line_of(from_r, (uint64_t)js_num(json, "first_divergence", "seq"));
    cr_assert(n > 0, "the first divergence is no host read of the trace");
    digest_at(to_r, n, want, sizeof want);
    got[16] = 0;
    cr_expect(eq(str, got, want),
              "read-back %d: the replay of the %d trace computed %s, the program on the other "
              "Mesa %s",
              n, from, got, want);
    free(json);
}

/* llama.cpp across the Mesas, both ways. Mesa 22.3 to 25 as any trace. Mesa 25 to 22.3:
 * ggml enables every feature a device offers, and 22.3's lavapipe lacks 31 of 25's (storage
 * image reads without format, sparse residency, descriptor indexing...); the trace never used
 * them (no shader declares a SPIR-V capability needing one, no set layout a binding flag, no
 * sparse binding), so replay leaves them off and says so (before: refused). */
Test(replays, llama_cpp_across_drivers, .timeout = 1500)
{
    char env22[8192], env25[8192];
    llama_env(0, env22, sizeof env22);
    llama_env(1, env25, sizeof env25);
    cr_assert(eq(int, llama_run(env22, "l22.sbt", "c22.txt"), 0), "capture on Mesa 22.3");
    cr_assert(eq(int, llama_run(env25, "l25.sbt", "c25.txt"), 0), "capture on Mesa 25");
    cr_assert(eq(int, sh("cmp -s c22.txt c25.txt"), 0), "the tokens differ between the Mesas");
    for (int i = 0; i < 2; i++)
        cr_assert(eq(int,
                     sh("'%s' view l%d.sbt --limit 0 | awk '$6 == \"host_read\" "
                        "{ print $1, $NF }' >r%d.txt",
                        vk_bin, i ? 25 : 22, i ? 25 : 22),
                     0));
    check_on_the_other_driver(env25, 22, 25);
    if (!sbt_vk_spirv_grammar[0])
        cr_skip_test("22.3 trace checked on Mesa 25; the other way needs a build with a SPIR-V "
                     "grammar (replay then leaves ggml's unused features off)");
    check_on_the_other_driver(env22, 25, 22);
    cr_expect(eq(int,
                 sh("%s '%s' replay l25.sbt --mode full -o y.sbt >y.txt 2>&1; '%s' info y.sbt "
                    "| grep -q 'unused features left off (shaderStorageImageReadWithoutFormat'",
                    env22, vk_bin, vk_bin),
                 0),
              "the result of the Mesa 25 trace on 22.3 does not say features were left off");
}

Test(replays, tolerance_compares_the_bytes_the_replays_dumped)
{
    /* every u32 is within 2^32 - 1 of any other: the racy outputs agree across runs under
     * that tolerance once the checker finds each replay's dump of them */
    need_vulkan("racy");
    capture_prog("racy", "r.sbt");
    char *json;
    int n_fail;
    check_cli("r.sbt", "--tolerance abs:4294967295 --elem-type u32", &json, &n_fail);
    cr_expect(eq(i64, js_num(json, "counts", "nondeterministic"), 0), "%s", json);
    cr_expect(js_num(json, NULL, "tolerated") >= 1);
    free(json);
    cr_expect(eq(int, access(pathf("runs/run1.dump"), X_OK), 0));
}

/* ---- a capture altered by hand: one byte of an upload flipped in the trace ----------------- */

static uint32_t restr(sbt_writer *w, const sbt_reader *r, uint32_t id)
{
    uint32_t out = 0;
    if (id)
        cr_assert(eq(int, sbt_writer_intern(w, sbt_reader_string(r, id), &out), 0));
    return out;
}

/* Copies in to out through the writer. The first HOST_WRITE whose blob starts with the 4 bytes
 * of `first` gets its byte `at` flipped: a new blob, the op pointed at it. Returns that op's
 * seq; *res the resource and offset of the flipped byte. */
static uint64_t flip_upload(const char *in, const char *out, uint32_t first, uint32_t at,
                            uint64_t *res, uint64_t *res_off)
{
    sbt_reader *r = open_r(pathf(in));
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(pathf(out), NULL, &w), 0), "%s", sbt_errmsg());
    uint32_t n, id;
    const struct sbt_device *dv = sbt_reader_devices(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_device d = dv[i];
        d.name = restr(w, r, d.name);
        d.host = restr(w, r, d.host);
        cr_assert(eq(int, sbt_writer_add_device(w, &d, &id), 0));
    }
    const struct sbt_stream *sv = sbt_reader_streams(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_stream s = sv[i];
        s.name = restr(w, r, s.name);
        cr_assert(eq(int, sbt_writer_add_stream(w, &s, &id), 0));
    }
    const struct sbt_program *pv = sbt_reader_programs(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_program p = pv[i];
        p.name = restr(w, r, p.name);
        void *data;
        size_t len;
        cr_assert(eq(int, sbt_reader_blob(r, &p.blob, &data, &len), 0));
        cr_assert(eq(int, sbt_writer_blob(w, data, len, &p.blob), 0));
        free(data);
        cr_assert(eq(int, sbt_writer_add_program(w, &p, &id), 0));
    }
    const struct sbt_kernel *kv = sbt_reader_kernels(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_kernel k = kv[i];
        k.name = restr(w, r, k.name);
        cr_assert(eq(int, sbt_writer_add_kernel(w, &k, &id), 0));
    }
    const struct sbt_meta *mv = sbt_reader_meta(r, &n);
    for (uint32_t i = 0; i < n; i++)
        cr_assert(eq(
            int,
            sbt_writer_meta(w, sbt_reader_string(r, mv[i].key), sbt_reader_string(r, mv[i].value)),
            0));
    sbt_cursor *cu;
    const struct sbt_op *sop;
    uint64_t flipped = UINT64_MAX;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &cu), 0));
    while (sbt_cursor_next(cu, &sop) == 1) {
        struct sbt_op op = *sop;
        op.name = restr(w, r, op.name);
        op.error = restr(w, r, op.error);
        if (op.flags & SBT_OPF_BLOB) {
            void *data;
            size_t len;
            cr_assert(eq(int, sbt_reader_blob(r, &op.blob, &data, &len), 0));
            uint8_t *b = data;
            if (flipped == UINT64_MAX && op.kind == SBT_OP_HOST_WRITE && len > at &&
                op.n_access == 1 && !memcmp(b, &first, 4)) {
                b[at] ^= 0x40;
                flipped = op.seq;
                *res = op.access[0].resource;
                *res_off = op.access[0].offset + at;
            }
            cr_assert(eq(int, sbt_writer_blob(w, data, len, &op.blob), 0));
            free(data);
        }
        cr_assert(eq(int, sbt_writer_add_op(w, &op, NULL), 0), "%s", sbt_errmsg());
    }
    sbt_cursor_close(cu);
    cr_assert(eq(int, sbt_writer_close(w), 0), "%s", sbt_errmsg());
    sbt_reader_close(r);
    cr_assert(flipped != UINT64_MAX, "no host write starting with %08x in %s", first, in);
    return flipped;
}

static void print_problem(void *ctx, int severity, const char *msg)
{
    (void)ctx;
    if (severity)
        cr_log_error("%s", msg);
}

Test(replays, flipped_upload_byte_is_divergent_where_it_is_read)
{
    need_vulkan("vk_compute");
    capture_prog("vk_compute", "c.sbt");
    /* vk_compute's uniform buffer: salt 11 then n; accum.comp adds the salt to every element,
     * so the first dispatch reading it is the first op whose outputs depend on the byte */
    uint64_t res = 0, off = 0;
    uint64_t hw = flip_upload("c.sbt", "f.sbt", 11, 0, &res, &off);
    uint64_t reader = UINT64_MAX;
    sbt_reader *r = open_r(pathf("f.sbt"));
    cr_assert(eq(int, sbt_reader_validate(r, print_problem, NULL), 0),
              "the altered trace is valid");
    sbt_cursor *cu;
    const struct sbt_op *op;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &cu), 0));
    while (reader == UINT64_MAX && sbt_cursor_next(cu, &op) == 1)
        for (uint32_t i = 0; op->seq > hw && i < op->n_access; i++) {
            const struct sbt_access *a = &op->access[i];
            if ((a->mode & SBT_ACCESS_READ) && a->resource == res && a->offset <= off &&
                off < a->offset + a->len) {
                reader = op->seq;
                cr_expect(eq(u32, op->kind, SBT_OP_KERNEL));
                cr_expect(ne(u32, op->flags & SBT_OPF_DIGEST, 0),
                          "op %" PRIu64 ": the capture digested its outputs", op->seq);
            }
        }
    sbt_cursor_close(cu);
    sbt_reader_close(r);
    cr_assert(reader != UINT64_MAX, "no op reads the flipped byte");
    char *json;
    int n_fail;
    int rc = check_cli("f.sbt", NULL, &json, &n_fail);
    cr_expect(eq(int, rc, 1), "exit %d, expected 1; see %s/c.txt", rc, dir);
    char cls[64];
    js_str(json, "first_divergence", "class", cls, sizeof cls);
    cr_expect(eq(str, cls, "divergent"));
    cr_expect(eq(i64, js_num(json, "first_divergence", "seq"), (int64_t)reader),
              "the first divergence is op %" PRIu64 ", the first reader of the byte", reader);
    cr_expect(eq(i64, js_num(json, "counts", "nondeterministic"), 0));
    cr_expect(js_num(json, "counts", "divergent") >= 2, "downstream ops differ too");
    cr_expect(eq(i64, js_num(json, NULL, "roots"), 1), "%s", json);
    cr_expect(n_fail >= 2);
    free(json);
}

/* ========================================================================================== */
/* Perturbed replays (check --perturb), on lavapipe                                           */
/* ========================================================================================== */

/* tests/vk/vk_orderdep MODE (ok, atomics, uninit, numwg): programs whose outputs lavapipe
 * keeps stable with LP_NUM_THREADS=0 although they rely on what no driver promises, and their
 * correct versions. Captured and checked with LP_NUM_THREADS=0 so that the plain runs agree:
 * `check --runs 2` passes every one of them (what it did before --perturb); with --perturb the
 * buggy ones fail with the finding class of the perturbation that exposed them, at their
 * dispatch, and the correct ones pass. */

static void capture_mode(const char *mode, const char *out)
{
    int rc = sh("env LP_NUM_THREADS=0 '%s' capture --digests -o %s -- '%s/tests/vk/vk_orderdep' "
                "%s >/dev/null 2>capture.err",
                vk_bin, out, vk_build, mode);
    cr_assert(eq(int, rc, 0), "capture of vk_orderdep %s failed (exit %d), see %s/capture.err",
              mode, rc, dir);
}

/* `check TRACE --runs 2 EXTRA` under LP_NUM_THREADS=0, reports in p.json, p.xml, p.txt, p.pf:
 * the exit status, the JSON (validated) in *json and the JUnit failures in *n_fail. */
static int check_perturb(const char *trace, const char *extra, char **json, int *n_fail)
{
    sh("rm -rf pk p.json p.xml p.pf");
    int rc = sh("env LP_NUM_THREADS=0 '%s' check %s --runs 2 --keep pk %s --json p.json --junit "
                "p.xml --perfetto p.pf >p.txt 2>p.err",
                vk_bin, trace, extra);
    size_t len;
    char *b = slurp(pathf("p.json"), &len);
    struct js j = {b, b + len};
    cr_assert(eq(int, js_value(&j), 0), "JSON does not parse near: %.40s", j.p);
    *json = b;
    b = slurp(pathf("p.xml"), &len);
    int n_tc;
    cr_assert(eq(int, xml_ok(b, &n_tc, n_fail), 0), "%s", b);
    free(b);
    return rc;
}

/* The first divergence of the failed check is dispatch seq, of class cls, exposed by the
 * perturbation want (kind:seed), in every report. */
static void expect_first(const char *json, uint64_t seq, const char *cls, const char *want)
{
    char got[64];
    js_str(json, "first_divergence", "class", got, sizeof got);
    cr_expect(eq(str, got, (char *)cls), "first divergence class %s, want %s", got, cls);
    cr_expect(eq(i64, js_num(json, "first_divergence", "seq"), (int64_t)seq),
              "the first divergence is the dispatch, op %" PRIu64, seq);
    js_str(json, "first_divergence", "perturb", got, sizeof got);
    cr_expect(eq(str, got, (char *)want));
    cr_expect(eq(i64, js_num(json, "counts", "nondeterministic"), 0), "the plain runs agree");
    cr_expect(eq(i64, js_num(json, "counts", "divergent"), 0), "and match the capture");
    cr_expect(eq(int,
                 sh("grep -q 'first divergence: op %" PRIu64 " .*%s.*(%s)' p.txt", seq, cls, want),
                 0),
              "the summary names op %" PRIu64 ", %s and %s; see %s/p.txt", seq, cls, want, dir);
    cr_expect(eq(int, sh("grep -q 'name=\"%s\">' p.xml", cls), 0), "the JUnit testcase of %s fails",
              cls);
    cr_expect(eq(int, sh("grep -q '%s' p.pf", want), 0), "the Perfetto diff names %s", want);
}

Test(replays, perturb_split_names_order_dependent_float_atomics)
{
    need_vulkan("vk_orderdep");
    capture_mode("atomics", "a.sbt");
    uint64_t d = dispatch_of("a.sbt", "orderdep.spv");
    char *json;
    int n_fail;
    /* before --perturb: the gate passes what the first GPU changes */
    cr_expect(eq(int, check_perturb("a.sbt", "", &json, &n_fail), 0), "see %s/p.txt", dir);
    free(json);
    int rc = check_perturb("a.sbt", "--perturb split:1", &json, &n_fail);
    cr_expect(eq(int, rc, 1), "check --perturb split: exit %d; see %s/p.txt", rc, dir);
    expect_first(json, d, "order-dependence", "split:1");
    cr_expect(strstr(json, "\"perturb\":\"split:1\",\"what\":\"split 1 dispatch into 64 pieces") !=
                  NULL,
              "%s", json);
    cr_expect(n_fail >= 3, "the trace, the perturbed run and the class fail");
    free(json);
}

Test(replays, perturb_poison_names_an_uninitialised_read)
{
    need_vulkan("vk_orderdep");
    capture_mode("uninit", "u.sbt");
    uint64_t d = dispatch_of("u.sbt", "orderdep.spv");
    char *json;
    int n_fail;
    cr_expect(eq(int, check_perturb("u.sbt", "", &json, &n_fail), 0), "see %s/p.txt", dir);
    free(json);
    int rc = check_perturb("u.sbt", "--perturb poison:3", &json, &n_fail);
    cr_expect(eq(int, rc, 1), "check --perturb poison: exit %d; see %s/p.txt", rc, dir);
    expect_first(json, d, "uninitialised-read", "poison:3");
    free(json);
}

/* declared:SEED replays with only the program's own synchronisation and a seeded order among
 * what it leaves unordered, inside a queue too (a Vulkan queue runs commands in any order its
 * barriers allow): vk_hazards nobarrier (a saxpy chain missing two barriers) passes its plain
 * runs on lavapipe, which runs a queue's commands in order, and fails as a race under a seed
 * that runs the unordered commands the other way round, the first divergence one of them (the
 * second dispatch before the first, or the copy before the second); with its barriers (ok)
 * every seed passes. The report lists the static races (check runs the analysis) and the
 * divergence names the one it confirms. Before the stream order of a queue was kept in the
 * declared graph: no seed could reorder. */
Test(replays, declared_order_exposes_a_missing_barrier)
{
    need_vulkan("vk_hazards");
    const char *seeds = "--perturb declared:1,declared:3,declared:5,declared:6";
    for (int bad = 1; bad >= 0; bad--) {
        int rc = sh("env LP_NUM_THREADS=0 '%s' capture --digests -o h.sbt -- "
                    "'%s/tests/vk/vk_hazards' %s >/dev/null 2>capture.err",
                    vk_bin, vk_build, bad ? "nobarrier" : "ok");
        cr_assert(eq(int, rc, 0), "capture failed, see %s/capture.err", dir);
        char *json;
        int n_fail;
        rc = check_perturb("h.sbt", seeds, &json, &n_fail);
        if (bad) {
            cr_expect(eq(int, rc, 1), "nobarrier: exit %d; see %s/p.txt", rc, dir);
            cr_expect(js_num(json, "counts", "race") > 0, "no race: see %s/p.txt", dir);
            char kind[32], cls[32];
            js_str(json, "first_divergence", "kind", kind, sizeof kind);
            js_str(json, "first_divergence", "class", cls, sizeof cls);
            cr_expect(eq(str, cls, "race"));
            /* the second saxpy, run before the first, or the copy, before the second */
            int pair_op = !strcmp(kind, "kernel") || !strcmp(kind, "copy");
            cr_expect(pair_op, "the first divergence is a dispatch or the copy: %s", kind);
            /* the static analysis listed both pairs; the divergence confirms one of them */
            cr_expect(eq(i64, js_num(json, "static_races", "count"), 2));
            cr_expect(js_num(json, "static_races", "confirmed") >= 1);
            char conf[200];
            js_str(json, "first_divergence", "confirms", conf, sizeof conf);
            cr_expect(strstr(conf, "static race") != NULL, "confirms: '%s'", conf);
        } else {
            cr_expect(eq(int, rc, 0), "ok: exit %d; see %s/p.txt", rc, dir);
            cr_expect(eq(i64, js_num(json, "counts", "race"), 0));
            cr_expect(eq(i64, js_num(json, "static_races", "count"), 0));
        }
        free(json);
    }
}

/* The correct programs pass every perturbation: vk_orderdep ok (exact float sums, every byte
 * it reads written), numwg (reads NumWorkgroups: split leaves it whole, and says so) and
 * vk_compute (two queues, events, indirect dispatches). */
Test(replays, perturb_passes_correct_programs)
{
    need_vulkan("vk_orderdep");
    const char *modes[] = {"ok", "numwg"};
    for (int i = 0; i < 2; i++) {
        capture_mode(modes[i], "ok.sbt");
        char *json;
        int n_fail;
        int rc = check_perturb("ok.sbt", "--perturb", &json, &n_fail);
        cr_expect(eq(int, rc, 0), "%s: exit %d; see %s/p.txt", modes[i], rc, dir);
        cr_expect(strstr(json, "\"result\":\"pass\"") != NULL, "%s: %s", modes[i], json);
        const char *cls[] = {"race", "order-dependence", "uninitialised-read"};
        for (int k = 0; k < 3; k++)
            cr_expect(eq(i64, js_num(json, "counts", cls[k]), 0), "%s: %s", modes[i], cls[k]);
        cr_expect(eq(int, sh("test $(ls pk/perturb-*.sbt | wc -l) -eq 5"), 0),
                  "%s: poison, split, threads, order, declared: one run each", modes[i]);
        if (i == 1)
            cr_expect(strstr(json, "1 left whole (first: op ") != NULL &&
                          strstr(json, "its shader reads NumWorkgroups") != NULL,
                      "split says it left the NumWorkgroups dispatch whole: %s", json);
        free(json);
    }
    need_vulkan("vk_compute");
    capture_prog("vk_compute", "c.sbt");
    char *json;
    int n_fail;
    int rc = check_perturb("c.sbt", "--perturb", &json, &n_fail);
    cr_expect(eq(int, rc, 0), "vk_compute: exit %d; see %s/p.txt", rc, dir);
    cr_expect(eq(int, n_fail, 0));
    free(json);
}

/* ========================================================================================== */
/* Perturbed runs, synthetic                                                                  */
/* ========================================================================================== */

TestSuite(perturbed, .init = mkdir_tmp, .fini = rm_tmp);

static int confirm_calls;

static int confirm_stub(void *ctx, const struct chk_finding *f, char *out, size_t cap)
{
    confirm_calls++;
    snprintf(out, cap, "%s %" PRIu64, (const char *)ctx, f->seq);
    return 1;
}

/* cap, two plain runs (digests p0, p1 of op consume) and one run perturbed as kind with class
 * cls (digest pd of consume), checked with the confirm hook. */
static struct chk_report *check_perturbed(uint64_t p0, uint64_t p1, uint64_t pd, const char *kind,
                                          const char *cls, int *st)
{
    const struct top cap[] = CHAIN(10, 20, 30, 40);
    struct top r0[] = CHAIN(10, 20, 30, 40), r1[] = CHAIN(10, 20, 30, 40),
               rp[] = CHAIN(10, 20, 30, 40);
    r0[1].digest = p0, r1[1].digest = p1, rp[1].digest = pd;
    /* what reads consume's output differs wherever it does */
    r0[3].digest = p0 == 20 ? 30 : 31, r1[3].digest = p1 == 20 ? 30 : 31;
    rp[3].digest = pd == 20 ? 30 : 32;
    write_trace(pathf("cap.sbt"), cap, 4);
    write_trace(pathf("r0.sbt"), r0, 4);
    write_trace(pathf("r1.sbt"), r1, 4);
    tx_meta[0][0] = "replay.perturb", tx_meta[0][1] = kind;
    tx_meta[1][0] = "replay.perturb_class", tx_meta[1][1] = cls;
    tx_meta[2][0] = "replay.perturb_what", tx_meta[2][1] = "split 1 dispatch into 4 pieces";
    write_trace(pathf("rp.sbt"), rp, 4);
    memset(tx_meta, 0, sizeof tx_meta);
    sbt_reader *rc = open_r(pathf("cap.sbt"));
    sbt_reader *rr[3] = {open_r(pathf("r0.sbt")), open_r(pathf("r1.sbt")), open_r(pathf("rp.sbt"))};
    struct chk_report *rep = NULL;
    confirm_calls = 0;
    *st = chk_check(rc, rr, 3, NULL, 0,
                    &CHK_OPTS(.confirm = confirm_stub, .confirm_ctx = (void *)"static finding"),
                    &rep);
    for (int i = 0; i < 3; i++)
        sbt_reader_close(rr[i]);
    sbt_reader_close(rc);
    return rep;
}

/* The plain runs agree with the capture and the perturbed one does not: a finding of the class
 * its replay recorded, at consume, naming the run's kind and seed and what it changed, with the
 * static finding the hook names; the first divergence; what reads consume is downstream. The
 * pass bound counts the plain runs only. */
Test(perturbed, a_divergence_only_a_perturbation_shows_is_its_class)
{
    int st;
    struct chk_report *rep = check_perturbed(20, 20, 21, "split:1", "order-dependence", &st);
    cr_assert(eq(int, st, 0), "%s", chk_errmsg());
    cr_expect(eq(int, rep->failed, 1));
    cr_expect(eq(u64, rep->count[CHK_ORDER_DEPENDENCE], 2));
    cr_expect(eq(u64, rep->count[CHK_NONDETERMINISTIC] + rep->count[CHK_DIVERGENT], 0));
    cr_expect(eq(int, rep->not_verified, 0), "%s", rep->fail_reason);
    cr_expect(eq(u32, rep->n_perturbed, 1));
    cr_expect(eq(u32, rep->n_compared_runs, 2), "the bound's N: the plain runs");
    cr_assert(eq(int, rep->has_first, 1));
    cr_expect(eq(u32, rep->first.cls, CHK_ORDER_DEPENDENCE));
    cr_expect(eq(u64, rep->first.seq, 1));
    cr_expect(eq(u32, rep->first.run, 3));
    cr_expect(eq(str, rep->first.perturb, "split:1"));
    cr_expect(eq(str, rep->first.perturb_what, "split 1 dispatch into 4 pieces"));
    cr_expect(eq(str, rep->first.confirms, "static finding 1"));
    cr_expect(eq(int, confirm_calls, 2), "once per perturbed finding");
    cr_expect(eq(u64, rep->n_roots, 1), "finish reads consume's output: downstream");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    chk_report_json(rep, f);
    fclose(f);
    cr_expect(strstr(buf, "\"perturbed_runs\":[{\"run\":") != NULL, "%s", buf);
    cr_expect(strstr(buf, "\"perturb\":\"split:1\",\"perturb_what\":\"split 1 dispatch into 4 "
                          "pieces\",\"confirms\":\"static finding 1\"") != NULL,
              "%s", buf);
    free(buf);
    chk_report_free(rep);
}

/* Plain runs that disagree keep today's verdict: nondeterministic, whatever the perturbed run
 * says at that op; the same perturbed difference with the plain runs agreeing is a race when
 * the run was an order perturbation. A perturbed run that agrees passes. */
Test(perturbed, plain_disagreement_stays_nondeterministic)
{
    int st;
    struct chk_report *rep = check_perturbed(20, 22, 21, "order:4", "race", &st);
    cr_assert(eq(int, st, 0), "%s", chk_errmsg());
    cr_expect(eq(u64, rep->count[CHK_RACE], 0));
    cr_expect(rep->count[CHK_NONDETERMINISTIC] >= 1);
    cr_expect(eq(u32, rep->first.cls, CHK_NONDETERMINISTIC));
    chk_report_free(rep);
    rep = check_perturbed(20, 20, 21, "order:4", "race", &st);
    cr_expect(eq(u64, rep->count[CHK_RACE], 2));
    cr_expect(eq(u32, rep->first.cls, CHK_RACE));
    chk_report_free(rep);
    rep = check_perturbed(20, 20, 20, "poison:2", "uninitialised-read", &st);
    cr_expect(eq(int, rep->failed, 0), "%s", rep->fail_reason);
    cr_expect(eq(u64, rep->count[CHK_UNINIT_READ], 0));
    chk_report_free(rep);
}

/* A perturbed result whose class is none of the three is refused, naming it. */
Test(perturbed, an_unknown_perturbation_class_is_refused)
{
    int st;
    struct chk_report *rep = check_perturbed(20, 20, 21, "split:1", "bad-class", &st);
    cr_expect(eq(int, st, SBT_ECORRUPT));
    cr_expect(strstr(chk_errmsg(), "bad-class") != NULL, "%s", chk_errmsg());
    cr_expect(rep == NULL);
}

/* threads: racy (a cross-workgroup data race) captured and replayed with LP_NUM_THREADS=0 is
 * stable, and `check --runs 2` passes it; threads:3 replays it with LP_NUM_THREADS=4, and the
 * racy dispatch is the first divergence, order-dependence, naming the thread count. */
Test(replays, perturb_threads_names_the_racy_dispatch)
{
    need_vulkan("racy");
    int rc = sh("env LP_NUM_THREADS=0 '%s' capture --digests -o r.sbt -- '%s/tests/vk/racy' "
                ">/dev/null 2>capture.err",
                vk_bin, vk_build);
    cr_assert(eq(int, rc, 0), "capture of racy failed, see %s/capture.err", dir);
    uint64_t racy = dispatch_of("r.sbt", "racy.spv");
    char *json;
    int n_fail;
    cr_expect(eq(int, check_perturb("r.sbt", "", &json, &n_fail), 0), "see %s/p.txt", dir);
    free(json);
    rc = check_perturb("r.sbt", "--perturb threads:3", &json, &n_fail);
    cr_expect(eq(int, rc, 1), "check --perturb threads:3: exit %d; see %s/p.txt", rc, dir);
    expect_first(json, racy, "order-dependence", "threads:3");
    cr_expect(strstr(json, "LP_NUM_THREADS=4 for the device") != NULL, "%s", json);
    free(json);
}
