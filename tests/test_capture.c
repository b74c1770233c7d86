/*
 * tests/test_capture.c — the Vulkan capture layer end to end on whatever Vulkan device is
 * here (lavapipe in CI): each tests/vk program runs without and with `reprise capture`, with
 * the Khronos validation layer loaded next to ours when it is installed; the program's output
 * must not change, validation must report nothing, and the trace must hold the ops, bytes and
 * read-back digests the program is known to issue. Programs that are killed or crash keep what
 * they submitted, and end as they would without the capture. tests/vk/vk_unmodelled uses what
 * the layer does not record (push descriptors, query copies, device addresses, multisampled
 * images, a command no registry has, a lost device): its traces must say they are
 * incomplete, naming the call, its count and where it first happened, while its results stay
 * its own.
 * Needs REPRISE_BIN and REPRISE_BUILD (set by `make check`; REPRISE_VK_XML names the registry
 * the layer was built from).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/vk/cap_vk_spirv.h"
#include "format/sbt.h"
#include "format/sbt_align.h"
#include "format/sbt_vk.h"
#include "scheduler/sched.h"
#include "tests/testenv.h"
#include "tests/tproc.h"

static const char *bin, *build;

static void setup(void)
{
    bin = getenv("REPRISE_BIN");
    build = getenv("REPRISE_BUILD");
    if (!bin || !build)
        cr_skip_test("REPRISE_BIN / REPRISE_BUILD not set (run through make check)");
}

TestSuite(capture, .init = setup);

/* Runs cmd through the shell; stdout into out, stderr into err; returns the exit status. */
static int run(const char *cmd, char *out, size_t n_out, char *err, size_t n_err)
{
    char full[8192], ef[] = "/tmp/reprise-test-err-XXXXXX";
    int fd = mkstemp(ef);
    if (fd < 0)
        return -1;
    close(fd);
    snprintf(full, sizeof full, "%s 2>%s", cmd, ef);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t k = fread(out, 1, n_out - 1, p);
    out[k] = 0;
    int st = pclose(p);
    FILE *f = fopen(ef, "r");
    k = f ? fread(err, 1, n_err - 1, f) : 0;
    err[k] = 0;
    if (f)
        fclose(f);
    unlink(ef);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Precision of the static race analysis (issue 22): a correct program's trace has no race the
 * program's own synchronisation allows. Each finding is printed. */
static void race_print(void *ctx, const struct sched_race *f)
{
    fprintf(stderr, "  %s: race: %s\n", (const char *)ctx, f->msg);
}

static void expect_no_races(sbt_reader *r, const char *what)
{
    struct sched_race_stats st;
    cr_assert_eq(sched_races_run(r, NULL, race_print, (void *)what, &st), 0, "%s", sched_errmsg());
    cr_expect(st.declared, "%s: no declared order: %s", what, st.why_not);
    cr_expect_eq(st.n_findings, 0, "%s: %llu possible races in a correct program", what,
                 (unsigned long long)st.n_findings);
}

static int have_device(void)
{
    char out[4096], err[4096], cmd[4200];
    snprintf(cmd, sizeof cmd, "%s/tests/vk/vk_compute", build);
    return run(cmd, out, sizeof out, err, sizeof err) != 4;
}

static int have_validation(void)
{
    return access("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json", R_OK) == 0;
}

struct expect {
    const char *prog;
    uint64_t kernels, submits, min_host_reads, min_host_writes;
    uint64_t d2d_bytes, h2d_bytes, fill_bytes;
    const char *opts; /* reprise capture options ("--timing"), NULL for none */
    const char *path; /* the program, when not $REPRISE_BUILD/tests/vk/<prog> */
};

static void capture_and_check(const struct expect *x)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char plain[8192], pe[8192], cap[8192], ce[8192], cmd[8192], prog[4096];
    if (x->path)
        snprintf(prog, sizeof prog, "%s", x->path);
    else
        snprintf(prog, sizeof prog, "%s/tests/vk/%s", build, x->prog);
    snprintf(cmd, sizeof cmd, "%s", prog);
    cr_assert_eq(run(cmd, plain, sizeof plain, pe, sizeof pe), 0, "%s failed: %s", x->prog, pe);
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt";
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    int val = have_validation();
    if (!val)
        fprintf(stderr, "test_capture: VK_LAYER_KHRONOS_validation is not installed "
                        "(apt-get install vulkan-validationlayers): running without it\n");
    /* in `make asan` the program is instrumented and LeakSanitizer checks it: the layer frees
     * what it kept for racing calls when it is unloaded */
    snprintf(cmd, sizeof cmd, "%s %s capture %s -o %s -- %s",
             val ? "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation" : "", bin,
             x->opts ? x->opts : "", trace, prog);
    cr_assert_eq(run(cmd, cap, sizeof cap, ce, sizeof ce), 0, "capture of %s failed: %s", x->prog,
                 ce);
    cr_assert_str_eq(cap, plain, "output changed under capture");
    cr_assert_null(strstr(ce, "Validation Error"), "validation errors under capture: %s", ce);
    cr_assert_null(strstr(ce, "recording stopped"), "the layer failed: %s", ce);
    cr_assert_not_null(strstr(ce, "ops captured"), "no capture summary: %s", ce);

    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    const struct sbt_info *info = sbt_reader_info(r);
    cr_assert(info->complete, "trace incomplete");
    cr_assert_eq(sbt_reader_validate(r, NULL, NULL), 0, "validate found problems");
    struct sbt_stats *st = NULL;
    cr_assert_eq(sbt_stats_compute(r, NULL, &st), 0, "%s", sbt_errmsg());
    cr_assert_eq(st->by_kind[SBT_OP_KERNEL], x->kernels);
    cr_assert_eq(st->by_kind[SBT_OP_SUBMIT], x->submits);
    cr_assert_geq(st->by_kind[SBT_OP_HOST_READ], x->min_host_reads);
    cr_assert_geq(st->by_kind[SBT_OP_HOST_WRITE], x->min_host_writes);
    cr_assert_eq(st->copy_bytes[SBT_COPY_D2D], x->d2d_bytes);
    cr_assert_eq(st->copy_bytes[SBT_COPY_H2D], x->h2d_bytes);
    cr_assert_eq(st->fill_bytes, x->fill_bytes);
    sbt_stats_free(st);
    /* every host read carries the digest of what was read, and its bytes are not stored */
    sbt_cursor *c = NULL;
    const struct sbt_op *op;
    cr_assert_eq(sbt_cursor_open(r, NULL, &c), 0);
    uint64_t reads = 0, kernels_with_access = 0, timed = 0, device_ops = 0;
    int timing = x->opts && strstr(x->opts, "--timing");
    while (sbt_cursor_next(c, &op) == 1) {
        if (op->kind == SBT_OP_KERNEL || op->kind == SBT_OP_COPY || op->kind == SBT_OP_FILL) {
            device_ops++;
            if (op->flags & SBT_OPF_DEV_TIME) {
                cr_assert_geq(op->dev_end, op->dev_begin, "op %llu", (unsigned long long)op->seq);
                timed++;
            }
        }
        if (op->kind == SBT_OP_HOST_READ) {
            cr_assert(op->flags & SBT_OPF_DIGEST);
            cr_assert(!(op->flags & SBT_OPF_BLOB));
            cr_assert_eq(op->n_access, 1);
            cr_assert_eq(op->access[0].mode, SBT_ACCESS_READ);
            reads++;
        }
        if (op->kind == SBT_OP_KERNEL && op->n_access && (op->flags & SBT_OPF_PAYLOAD))
            kernels_with_access++;
        /* the programs write their indirect arguments from the host: geometry is known */
        if (op->kind == SBT_OP_KERNEL)
            cr_assert(op->grid[0] && op->grid[1] && op->grid[2], "op %llu: grid %ux%ux%u",
                      (unsigned long long)op->seq, op->grid[0], op->grid[1], op->grid[2]);
    }
    sbt_cursor_close(c);
    cr_assert_geq(reads, 1);
    cr_assert_eq(kernels_with_access, x->kernels);
    /* --timing: a device time on every dispatch, copy and fill; none without it */
    cr_assert_eq(timed, timing ? device_ops : 0, "%llu of %llu device ops timed",
                 (unsigned long long)timed, (unsigned long long)device_ops);
    if (timing) {
        const char *m = sbt_reader_meta_get(r, "clock.device_mapping");
        cr_assert(m && *m, "no clock.device_mapping metadata");
    }
    expect_no_races(r, x->prog);
    sbt_reader_close(r);
    unlink(trace);
}

Test(capture, vk_compute)
{
    /* 2 direct + 3 indirect dispatches; copies 16 KiB in and 16 KiB out; one 256-byte
     * vkCmdUpdateBuffer; a 16 KiB fill; four submissions */
    struct expect x = {"vk_compute", 5, 4, 3, 1, 32768, 256, 16384, NULL, NULL};
    capture_and_check(&x);
}

Test(capture, vk_threads)
{
    /* 3 threads x 4 rounds, one dispatch and one submission each, each read back */
    struct expect x = {"vk_threads", 12, 12, 12, 12, 0, 0, 0, NULL, NULL};
    capture_and_check(&x);
}

/* --timing injects timestamp queries into the program's command buffers: same checksums,
 * same ops, and a device time on each of them */
Test(capture, vk_compute_timing)
{
    struct expect x = {"vk_compute", 5, 4, 3, 1, 32768, 256, 16384, "--timing", NULL};
    capture_and_check(&x);
}

Test(capture, vk_threads_timing)
{
    struct expect x = {"vk_threads", 12, 12, 12, 12, 0, 0, 0, "--timing", NULL};
    capture_and_check(&x);
}

/* tests/vk/vk_images: every image feature the layer records. Without and with capture (and the
 * validation layer) the same output; the trace is complete and holds each kind of image op:
 * images as resources of their own (ALLOC with CREATE_IMAGE, FREE), views and samplers, image
 * descriptors of dispatches, buffer<->image and image copies, blits, color and depth/stencil
 * clears, and the host's writes and reads of linear images as accesses of their packed bytes.
 * With --timing every image op has its device time too. */
static void images_trace(const char *opts)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char plain[8192], pe[8192], cap[8192], ce[16384], cmd[8192];
    snprintf(cmd, sizeof cmd, "%s/tests/vk/vk_images", build);
    cr_assert_eq(run(cmd, plain, sizeof plain, pe, sizeof pe), 0, "vk_images failed: %s", pe);
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt";
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    int val = have_validation();
    snprintf(cmd, sizeof cmd, "%s %s capture %s -o %s -- %s/tests/vk/vk_images",
             val ? "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation" : "", bin, opts, trace, build);
    cr_assert_eq(run(cmd, cap, sizeof cap, ce, sizeof ce), 0, "capture failed: %s", ce);
    cr_assert_str_eq(cap, plain, "output changed under capture");
    cr_assert_null(strstr(ce, "Validation Error"), "validation errors under capture: %s", ce);
    cr_assert_not_null(strstr(ce, "unmodelled: none; complete"), "summary: %s", ce);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    cr_assert(sbt_reader_info(r)->complete);
    cr_assert_eq(sbt_reader_validate(r, NULL, NULL), 0, "validate found problems");
    enum { N_CALLS = 160 };
    uint64_t calls[N_CALLS] = {0}, images = 0, frees = 0, img_writes = 0, img_reads = 0;
    uint64_t img_ops = 0, timed = 0;
    sbt_cursor *c = NULL;
    const struct sbt_op *op;
    cr_assert_eq(sbt_cursor_open(r, NULL, &c), 0);
    static uint64_t image_ids[256];
    while (sbt_cursor_next(c, &op) == 1) {
        struct sbt_payload_dec d;
        struct sbt_payload_rec rec;
        int any_image = 0;
        sbt_payload_dec_init(&d, op->payload.kind == SBT_VK_PAYLOAD ? op->payload.data : NULL,
                             op->payload.kind == SBT_VK_PAYLOAD ? op->payload.len : 0);
        while (sbt_payload_dec_next(&d, &rec) == 1) {
            if (rec.call < N_CALLS)
                calls[rec.call]++;
            any_image |= rec.call >= SBT_VK_IMAGE_BINDING && rec.call <= SBT_VK_CLEAR_IMAGE;
            if (rec.call == SBT_VK_CREATE_IMAGE && op->kind == SBT_OP_ALLOC) {
                cr_assert_eq(op->resource, sbt_payload_arg(&rec, 0));
                cr_assert_eq(op->bytes, sbt_payload_arg(&rec, 14), "the packed size");
                cr_assert_lt(images, 256);
                image_ids[images++] = op->resource;
            }
        }
        sbt_payload_dec_free(&d);
        if (any_image && op->kind != SBT_OP_MARKER) {
            img_ops++;
            timed += (op->flags & SBT_OPF_DEV_TIME) != 0;
        }
        if (op->kind == SBT_OP_FREE && op->payload.kind == SBT_VK_PAYLOAD)
            frees++;
        for (uint32_t i = 0; i < op->n_access; i++)
            for (uint64_t k = 0; k < images; k++)
                if (op->access[i].resource == image_ids[k]) {
                    img_writes += op->kind == SBT_OP_HOST_WRITE;
                    img_reads += op->kind == SBT_OP_HOST_READ;
                }
    }
    sbt_cursor_close(c);
    expect_no_races(r, "vk_images");
    sbt_reader_close(r);
    unlink(trace);
    cr_expect_geq(images, 10, "images created: %llu", (unsigned long long)images);
    cr_expect_eq(frees, images, "every image destroyed by a FREE op");
    cr_expect_geq(calls[SBT_VK_BIND_IMAGE], images);
    cr_expect_geq(calls[SBT_VK_CREATE_IMAGE_VIEW], 6);
    cr_expect_geq(calls[SBT_VK_CREATE_SAMPLER], 3);
    cr_expect_geq(calls[SBT_VK_IMAGE_BINDING], 3 * 5 + 2 * 2, "3 dispatches x 5, 2 x 2");
    cr_expect_geq(calls[SBT_VK_COPY_BUFFER_TO_IMAGE], 4);
    cr_expect_geq(calls[SBT_VK_COPY_IMAGE_TO_BUFFER], 4);
    cr_expect_geq(calls[SBT_VK_COPY_IMAGE], 2);
    cr_expect_geq(calls[SBT_VK_BLIT_IMAGE], 2);
    cr_expect_geq(calls[SBT_VK_CLEAR_IMAGE], 4);
    cr_expect_geq(img_writes, 2, "host writes of the linear image, in its packed bytes");
    cr_expect_geq(img_reads, 2, "host reads of the linear image a shader wrote");
    if (strstr(opts, "--timing"))
        cr_expect_eq(timed, img_ops, "%llu of %llu image ops timed", (unsigned long long)timed,
                     (unsigned long long)img_ops);
}

Test(capture, vk_images)
{
    images_trace("");
}

Test(capture, vk_images_timing)
{
    images_trace("--timing");
}

/* Races the program's own synchronisation allows (issue 22), on real lavapipe captures of
 * tests/vk/vk_hazards: every mode prints the same checksum (lavapipe runs commands in order), so
 * only the static analysis tells them apart. The broken modes must be named exactly: which two
 * ops, which resource and bytes, and what is missing; the correct ones must give nothing. */
struct race_got {
    struct sched_race v[8];
    char msg[8][512]; /* v[i].msg points here: the analysis's is valid during the call only */
    uint32_t n;
};

static void race_keep(void *ctx, const struct sched_race *f)
{
    struct race_got *g = ctx;
    if (g->n < 8) {
        snprintf(g->msg[g->n], sizeof g->msg[g->n], "%s", f->msg);
        g->v[g->n] = *f;
        g->v[g->n].msg = g->msg[g->n];
        g->n++;
    }
    fprintf(stderr, "  race: %s\n", f->msg);
}

struct hz_ops {
    uint64_t k1, k2, copy; /* the two dispatches and the copy to the host-visible buffer */
    uint64_t y, z;         /* the buffers they write (resources) */
};

/* Captures vk_hazards MODE (with env before the command: the test layer that gives lavapipe a
 * second queue) and runs the analysis over the trace. */
static void hazards_env(const char *env, const char *mode, struct race_got *got, struct hz_ops *o,
                        struct sched_race_stats *st)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", cmd[8192], out[4096], err[8192];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s %s capture -o %s -- %s/tests/vk/vk_hazards %s", env, bin, trace,
             build, mode);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s: %s", cmd, err);
    cr_assert_not_null(strstr(out, strcmp(mode, "poll") ? "vk_hazards checksum 8cc87b976081c719"
                                                        : "vk_hazards checksum "),
                       "%s", out);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    cr_assert(sbt_reader_info(r)->complete);
    memset(o, 0, sizeof *o);
    uint32_t nk = 0;
    sbt_cursor *c = NULL;
    const struct sbt_op *op;
    cr_assert_eq(sbt_cursor_open(r, NULL, &c), 0);
    while (sbt_cursor_next(c, &op) == 1) {
        if (op->kind == SBT_OP_KERNEL) { /* the first and the last */
            *(nk ? &o->k2 : &o->k1) = op->seq;
            for (uint32_t i = 0; i < op->n_access; i++)
                if (op->access[i].mode & SBT_ACCESS_WRITE)
                    *(nk ? &o->z : &o->y) = op->access[i].resource;
            nk++;
        }
        if (op->kind == SBT_OP_COPY)
            o->copy = op->seq;
    }
    sbt_cursor_close(c);
    cr_assert(nk >= 2 && o->copy && o->y && o->z && o->y != o->z);
    memset(got, 0, sizeof *got);
    cr_assert_eq(sched_races_run(r, NULL, race_keep, got, st), 0, "%s", sched_errmsg());
    cr_assert(st->declared);
    sbt_reader_close(r);
    unlink(trace);
}

static void hazards(const char *mode, struct race_got *got, struct hz_ops *o,
                    struct sched_race_stats *st)
{
    hazards_env("", mode, got, o, st);
}

static void expect_race(const struct sched_race *f, uint64_t first, uint64_t second, uint64_t res,
                        uint32_t missing)
{
    cr_expect_eq(f->first, first, "first op %llu, expected %llu", (unsigned long long)f->first,
                 (unsigned long long)first);
    cr_expect_eq(f->second, second);
    cr_expect_eq(f->resource, res);
    cr_expect_eq(f->lo, 0);
    cr_expect_eq(f->hi, 4096, "bytes [%llu, %llu)", (unsigned long long)f->lo,
                 (unsigned long long)f->hi);
    cr_expect_eq(f->first_mode, SBT_ACCESS_WRITE);
    cr_expect_eq(f->second_mode, SBT_ACCESS_READ);
    cr_expect_eq(f->missing, missing, "missing %s", sched_race_missing_name(f->missing));
}

Test(capture, races_missing_barriers_named, .timeout = 120)
{
    struct race_got g;
    struct hz_ops o;
    struct sched_race_stats st;
    hazards("nobarrier", &g, &o, &st);
    cr_assert_eq(g.n, 2, "%u races", g.n);
    expect_race(&g.v[0], o.k1, o.k2, o.y, SCHED_RACE_EXEC);   /* saxpy x,y -> saxpy y,z */
    expect_race(&g.v[1], o.k2, o.copy, o.z, SCHED_RACE_EXEC); /* saxpy y,z -> copy z */
    cr_expect(strstr(g.v[0].msg, "missing execution dependency"));
}

Test(capture, races_empty_access_masks_are_memory, .timeout = 120)
{
    struct race_got g;
    struct hz_ops o;
    struct sched_race_stats st;
    hazards("execonly", &g, &o, &st);
    cr_assert_eq(g.n, 2, "%u races", g.n);
    expect_race(&g.v[0], o.k1, o.k2, o.y, SCHED_RACE_MEMORY);
    expect_race(&g.v[1], o.k2, o.copy, o.z, SCHED_RACE_MEMORY);
    cr_expect(strstr(g.v[0].msg, "missing memory dependency"));
    cr_expect_eq(st.n_memory, 2);
}

Test(capture, races_missing_semaphore_between_submissions, .timeout = 120)
{
    struct race_got g;
    struct hz_ops o;
    struct sched_race_stats st;
    hazards("nosemaphore", &g, &o, &st);
    cr_assert_eq(g.n, 1, "%u races", g.n);
    expect_race(&g.v[0], o.k1, o.k2, o.y, SCHED_RACE_EXEC);
}

/* The graph in declared order (sched_graph's SCHED_ORDER_DECLARED, replay --order declared):
 * a node names the ops the program leaves it unordered with, and the Vulkan replay inserts no
 * barrier between them (one queue: no edge either way, stream order; across streams the edge
 * is left out, test_scheduler's races/declared_graph); the replay still reproduces the
 * capture (lavapipe runs commands in order). */
struct dgot {
    uint64_t k2_unord[4];
    uint32_t n_k2_unord;
    uint64_t k2;
    uint64_t k1;
};

static int dnode(void *ctx, struct sched_node *n)
{
    struct dgot *g = ctx;
    if (n->op->seq != g->k2)
        return 0;
    for (uint32_t i = 0; i < n->n_unordered && i < 4; i++)
        g->k2_unord[g->n_k2_unord++] = n->unordered[i];
    return 0;
}

static void declared_graph(const char *mode, struct dgot *g, struct sched_graph_stats *gs)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", cmd[8192], out[4096], err[8192];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s capture -o %s -- %s/tests/vk/vk_hazards %s", bin, trace, build,
             mode);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s: %s", cmd, err);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    memset(g, 0, sizeof *g);
    sbt_cursor *c = NULL;
    const struct sbt_op *op;
    cr_assert_eq(sbt_cursor_open(r, NULL, &c), 0);
    while (sbt_cursor_next(c, &op) == 1)
        if (op->kind == SBT_OP_KERNEL)
            *(g->k1 ? &g->k2 : &g->k1) = op->seq;
    sbt_cursor_close(c);
    struct sched_visitor v = {.node = dnode, .ctx = g};
    cr_assert_eq(sched_graph_run(
                     r, SCHED_NONE,
                     &SCHED_GRAPH_OPTS(.keep_implied = 1, .order = SCHED_ORDER_DECLARED), &v, gs),
                 0, "%s", sched_errmsg());
    /* a full replay in the program's own order reproduces the capture's outputs */
    snprintf(cmd, sizeof cmd, "%s replay %s --mode full --order declared", bin, trace);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s: %s%s", cmd, out, err);
    cr_assert_not_null(strstr(out, "verdict     verified"), "%s", out);
    sbt_reader_close(r);
    unlink(trace);
}

Test(capture, declared_order_graph_leaves_out_what_the_program_does, .timeout = 120)
{
    struct dgot g;
    struct sched_graph_stats gs;
    declared_graph("nobarrier", &g, &gs);
    cr_expect_eq(g.n_k2_unord, 1);
    cr_expect_eq(g.k2_unord[0], g.k1);
    declared_graph("execonly", &g, &gs); /* ordered, but the write never made visible */
    cr_expect_eq(g.n_k2_unord, 1);
    cr_expect_eq(g.k2_unord[0], g.k1);
    declared_graph("ok", &g, &gs);
    cr_expect_eq(g.n_k2_unord, 0);
}

/* two queues (VK_LAYER_REPRISE_twoqueues gives lavapipe a second one): the semaphores order
 * the second queue's work after the first's; without one, the pair is named across them */
#define TWOQ                                                                       \
    "VK_ADD_LAYER_PATH=%s/tests/vk VK_INSTANCE_LAYERS=VK_LAYER_REPRISE_twoqueues " \
    "VK_LOADER_LAYERS_ENABLE=VK_LAYER_REPRISE_twoqueues"

Test(capture, races_across_two_queues, .timeout = 120)
{
    char env[4200];
    snprintf(env, sizeof env, TWOQ, build);
    struct race_got g;
    struct hz_ops o;
    struct sched_race_stats st;
    hazards_env(env, "nosemaphore", &g, &o, &st);
    /* saxpy y, z reads y unordered with saxpy x, y; it and the copy touch z, filled on the first
     * queue (the fill's barrier orders only that queue) */
    cr_assert_eq(g.n, 3, "%u races", g.n);
    expect_race(&g.v[0], o.k1, o.k2, o.y, SCHED_RACE_EXEC);
    cr_expect_neq(g.v[0].first_stream, g.v[0].second_stream, "not across the two queues");
    cr_expect_eq(g.v[1].resource, o.z);
    cr_expect_eq(g.v[1].second, o.k2);
    cr_expect_eq(g.v[2].resource, o.z);
    cr_expect_eq(g.v[2].second, o.copy);
    cr_expect_eq(g.v[1].first, g.v[2].first); /* the fill */
    cr_expect_eq(g.v[1].first_mode, SBT_ACCESS_WRITE);
    hazards_env(env, "semaphore", &g, &o, &st);
    cr_expect_eq(g.n, 0, "binary semaphore: %u races", g.n);
    hazards_env(env, "timeline", &g, &o, &st);
    cr_expect_eq(g.n, 0, "timeline semaphore: %u races", g.n);
}

/* Replay in the program's declared order shows what the missing semaphore does: the second
 * queue's work is submitted without waiting for the first's, and on lavapipe with two queues
 * (batches run in submission order on its one real queue) it reads y and z before the first
 * queue's work wrote them: the output differs from the capture (exit 1), where the order of the
 * accesses (the default) hides it. With the semaphore both replays verify. */
static int replay_declared(const char *env, const char *mode, const char *order, char *out,
                           size_t n_out)
{
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", cmd[8192], err[8192];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s %s capture -o %s -- %s/tests/vk/vk_hazards %s", env, bin, trace,
             build, mode);
    cr_assert_eq(run(cmd, out, n_out, err, sizeof err), 0, "%s: %s", cmd, err);
    snprintf(cmd, sizeof cmd, "%s %s replay %s --mode full --order %s", env, bin, trace, order);
    int rc = run(cmd, out, n_out, err, sizeof err);
    unlink(trace);
    return rc;
}

Test(capture, declared_order_replay_shows_a_missing_semaphore, .timeout = 120)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char env[4200], out[8192];
    snprintf(env, sizeof env, TWOQ, build);
    cr_expect_eq(replay_declared(env, "nosemaphore", "accesses", out, sizeof out), 0, "%s", out);
    cr_expect_eq(replay_declared(env, "nosemaphore", "declared", out, sizeof out), 1, "%s", out);
    cr_expect_not_null(strstr(out, "differ from the capture"), "%s", out);
    cr_expect_eq(replay_declared(env, "semaphore", "declared", out, sizeof out), 0, "%s", out);
    cr_expect_not_null(strstr(out, "verdict     verified"), "%s", out);
    cr_expect_eq(replay_declared(env, "timeline", "declared", out, sizeof out), 0, "%s", out);
}

/* a buffer barrier on the wrong buffer orders the dispatches but makes nothing of y visible */
Test(capture, races_buffer_barrier_on_the_wrong_buffer, .timeout = 120)
{
    struct race_got g;
    struct hz_ops o;
    struct sched_race_stats st;
    hazards("wrongbuffer", &g, &o, &st);
    cr_assert_eq(g.n, 1, "%u races", g.n);
    expect_race(&g.v[0], o.k1, o.k2, o.y, SCHED_RACE_MEMORY);
}

/* The correct programs: barriers (global, and buffer barriers on the right buffers), an event,
 * binary and timeline semaphores across submissions, a fence polled and reset between submissions
 * (the capture used to drop the polls after a reset: two races then): no finding, and the analysis
 * saw their barriers */
struct hzmode {
    char name[16];
};

ParameterizedTestParameters(capture, races_none_in_correct_programs)
{
    static struct hzmode m[] = {{"ok"},       {"event"}, {"semaphore"},
                                {"timeline"}, {"poll"},  {"bufbarrier"}};
    return cr_make_param_array(struct hzmode, m, sizeof m / sizeof m[0]);
}

ParameterizedTest(struct hzmode *m, capture, races_none_in_correct_programs, .timeout = 120)
{
    struct race_got g;
    struct hz_ops o;
    struct sched_race_stats st;
    hazards(m->name, &g, &o, &st);
    cr_expect_eq(g.n, 0, "%s: %u races", m->name, g.n);
    cr_expect_geq(st.n_barriers, 2);
    cr_expect_eq(st.n_blind_submits, 0);
    cr_expect_eq(st.n_blind_ops, 0);
}

/* A third-party compute workload from a Debian package: VkFFT (libvkfft-dev) generates its
 * GLSL, compiles it with glslang at run time and records its own pipelines, descriptor sets,
 * push constants and dispatches; tests/vk3p/vk_fft.c only drives it (the Makefile builds it
 * where the headers are installed; `make test` installs them). */
Test(capture, vkfft)
{
    char prog[4200];
    snprintf(prog, sizeof prog, "%s/tests/vk3p/vk_fft", build);
    if (access(prog, X_OK))
        cr_skip_test("%s not built: VkFFT or glslang headers not installed (apt-get install "
                     "libvkfft-dev glslang-dev, or scripts/deps.sh test): third-party workload "
                     "not run",
                     prog);
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    /* two 2D FFTs (forward, inverse) of 256x256: two dispatches each, one submission each */
    struct expect x = {"vk_fft", 4, 2, 2, 1, 0, 0, 0, NULL, prog};
    capture_and_check(&x);
}

/* Programs we did not write: WGSL compute on Dawn, Chromium's WebGPU implementation (npm
 * `webgpu`), which needs Mesa 25's lavapipe (Debian 12's lacks features it requires), and
 * TensorFlow.js's WebGPU backend on Dawn. Under capture each prints the same checksum of what
 * it read back, and the trace is complete and valid. */
struct wgprog { /* an array: Criterion copies parameters into another process */
    char name[16];
};

ParameterizedTestParameters(capture, webgpu)
{
    static struct wgprog p[] = {
        {"buffers"},  // storage buffers, uniforms, several submissions, mapped read-back
        {"textures"}, // storage and sampled textures, samplers, image copies
        {"mlp"},      // two dense layers and a softmax, three batches
        {"tfjs"},     // TensorFlow.js's WebGPU backend: a CNN's inference, a kernel mix
    };
    return cr_make_param_array(struct wgprog, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct wgprog *p, capture, webgpu, .timeout = 300)
{
#if defined(__SANITIZE_ADDRESS__)
    /* node (V8) reserves the addresses where AddressSanitizer's shadow must go, so an
     * ASan-built layer cannot be loaded into it ("Shadow memory range interleaves") */
    cr_skip_test("an ASan build of the capture layer cannot load into node");
#endif
    char why[512], cmd[8192], plain[8192], pe[8192], cap[8192], ce[8192];
    const char *mesa = tenv_mesa25(why, sizeof why),
               *wg = mesa ? tenv_webgpu(why, sizeof why) : NULL;
    if (!mesa || !wg)
        cr_skip_test("%s", why);
    snprintf(cmd, sizeof cmd, "%s%s node '%s/tests/webgpu/%s.mjs'", mesa, wg, tenv_src(), p->name);
    cr_assert_eq(run(cmd, plain, sizeof plain, pe, sizeof pe), 0, "%s failed: %s", p->name, pe);
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt";
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s%s %s capture -o %s -- node '%s/tests/webgpu/%s.mjs'", mesa, wg,
             bin, trace, tenv_src(), p->name);
    cr_assert_eq(run(cmd, cap, sizeof cap, ce, sizeof ce), 0, "capture of %s failed: %s", p->name,
                 ce);
    cr_assert_str_eq(cap, plain, "output changed under capture");
    cr_assert_null(strstr(ce, "recording stopped"), "the layer failed: %s", ce);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    char inc[2048];
    sbt_reader_incomplete_why(r, inc, sizeof inc);
    cr_expect(sbt_reader_info(r)->complete, "%s: trace incomplete: %s", p->name, inc);
    cr_assert_eq(sbt_reader_validate(r, NULL, NULL), 0, "validate found problems");
    expect_no_races(r, p->name);
    sbt_reader_close(r);
    unlink(trace);
}

/* --api cuda is built (tests/test_cuda.c covers it); without a driver it is an environment
 * error, exit 4, that says what is missing */
Test(capture, cuda_without_driver)
{
    char out[4096], err[4096], cmd[4200];
    if (system("ldconfig -p 2>/dev/null | grep -q 'libcuda\\.so\\.1'") == 0)
        cr_skip_test("a CUDA driver is installed here");
    snprintf(cmd, sizeof cmd, "%s capture --api cuda -- true", bin);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 4);
    cr_assert_not_null(strstr(err, "no CUDA driver"), "%s", err);
}

/* Lines of the manifest dir/t.procs: their traces into paths[] (at most max), their count. */
static int manifest_traces(const char *dir, char (*paths)[512], int max)
{
    char man[600];
    snprintf(man, sizeof man, "%s/t.procs", dir);
    FILE *f = fopen(man, "r");
    if (!f)
        return 0;
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        char *save = NULL;
        strtok_r(line, "\t", &save);
        strtok_r(NULL, "\t", &save);
        strtok_r(NULL, "\t", &save);
        char *tr = strtok_r(NULL, "\t", &save);
        if (tr)
            snprintf(paths[n++], 512, "%s", tr);
    }
    fclose(f);
    return n;
}

/* One trace per process: a wrapper's children, run one after another and at once, each write
 * their own, complete trace beside the one -o names, listed in the manifest; none writes the
 * root's path (the wrapper, which never used the GPU, has none) and none overwrites another's.
 * Before, every process opened -o with O_TRUNC: sequential children left the last one's trace,
 * concurrent ones a corrupt file, and capture said "complete". */
Test(capture, every_process_of_a_tree_writes_its_own_trace)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char dir[] = "/tmp/reprise-test-tree-XXXXXX", cmd[8192], out[4096], err[8192];
    cr_assert(mkdtemp(dir));
    snprintf(
        cmd, sizeof cmd,
        "cd %s && %s capture -o t.sbt -- sh -c '%s/tests/vk/vk_compute; %s/tests/vk/vk_compute "
        "& %s/tests/vk/vk_compute; wait'",
        dir, bin, build, build, build);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
    char t[600];
    snprintf(t, sizeof t, "%s/t.sbt", dir);
    cr_expect_neq(access(t, F_OK), 0, "the wrapper used no GPU: no root trace");
    cr_expect_not_null(strstr(err, "t.sbt: not written: the program itself did not use the GPU; "
                                   "3 processes it started did"),
                       "%s", err);
    char paths[8][512];
    int n = manifest_traces(dir, paths, 8);
    cr_assert_eq(n, 3, "manifest lists %d traces: %s", n, err);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++)
            cr_expect_str_neq(paths[i], paths[j], "two processes share a trace");
        sbt_reader *r = NULL;
        cr_assert_eq(sbt_reader_open(paths[i], NULL, &r), 0, "%s: %s", paths[i], sbt_errmsg());
        cr_expect(sbt_reader_info(r)->complete, "%s is incomplete", paths[i]);
        cr_expect_gt(sbt_reader_info(r)->n_ops, 50);
        char pid[32];
        snprintf(pid, sizeof pid, ".%s.sbt", sbt_reader_meta_get(r, "capture.pid"));
        cr_expect_not_null(strstr(paths[i], pid), "%s is not named for its pid", paths[i]);
        cr_expect_str_neq(sbt_reader_meta_get(r, "capture.pid"),
                          sbt_reader_meta_get(r, "capture.root_pid"));
        sbt_reader_close(r);
        cr_expect_not_null(strstr(err, paths[i]), "capture's summary misses %s: %s", paths[i], err);
    }
    /* the program itself uses the GPU (exec keeps its pid) and starts one that does too */
    snprintf(cmd, sizeof cmd,
             "cd %s && %s capture -o t.sbt -- sh -c '%s/tests/vk/vk_compute >/dev/null & exec "
             "%s/tests/vk/vk_compute'",
             dir, bin, build, build);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
    n = manifest_traces(dir, paths, 8);
    cr_assert_eq(n, 2, "%s", err);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(t, NULL, &r), 0, "the root's trace: %s", sbt_errmsg());
    cr_expect(sbt_reader_info(r)->complete);
    cr_expect_str_eq(sbt_reader_meta_get(r, "capture.pid"),
                     sbt_reader_meta_get(r, "capture.root_pid"));
    sbt_reader_close(r);
    snprintf(cmd, sizeof cmd, "%s info %s", bin, t);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0);
    cr_expect_not_null(strstr(out, "capture    one trace per process, listed in"), "%s", out);
    cr_expect_not_null(strstr(out, "(this trace)"), "%s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* A capture that cannot write its trace (a full disk: a 256 KiB tmpfs where the test may mount
 * one, else a file size limit) leaves the program unharmed, keeps what it wrote whole as a
 * readable trace whose END says why and where it stops, says so, exits non-zero, and never
 * claims a crash. Before: "closing t.sbt: no error" and "the writer did not finish (the capture
 * was cut short: killed or crashed)". */
Test(capture, a_trace_that_cannot_be_written_says_why_not_crashed)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char dir[] = "/tmp/reprise-test-full-XXXXXX", cmd[8192], out[4096], err[8192];
    cr_assert(mkdtemp(dir));
    const char *want = "No space left on device";
    snprintf(cmd, sizeof cmd,
             "unshare -m sh -c 'mount -t tmpfs -o size=256k none %s && cd %s && %s capture -o "
             "t.sbt -- %s/tests/vk/vk_threads 2000 && exit 9; rc=$?; cp t.sbt %s.sbt; exit $rc'",
             dir, dir, bin, build, dir);
    int rc = run(cmd, out, sizeof out, err, sizeof err);
    if (rc != 3 && strstr(err, "mount")) { /* no mounts here: a file size limit instead */
        want = "File too large";
        snprintf(cmd, sizeof cmd,
                 "cd %s && sh -c 'trap \"\" XFSZ; ulimit -f 512; exec %s capture -o t.sbt -- "
                 "%s/tests/vk/vk_threads 2000'; rc=$?; cp t.sbt %s.sbt; exit $rc",
                 dir, bin, build, dir);
        rc = run(cmd, out, sizeof out, err, sizeof err);
    }
    cr_assert_eq(rc, 3, "the program succeeded, its trace is incomplete: exit 3, not %d: %s", rc,
                 err);
    cr_expect_not_null(strstr(out, "vk_threads checksum"), "the program's output: %s", out);
    cr_expect_null(strstr(err, "no error"), "%s", err);
    cr_expect_not_null(strstr(err, want), "%s", err);
    char t[600], why[2048];
    snprintf(t, sizeof t, "%s.sbt", dir);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(t, NULL, &r), 0, "%s", sbt_errmsg());
    const struct sbt_info *in = sbt_reader_info(r);
    cr_expect(in->has_footer && in->writer_finished, "closed, not cut short");
    cr_expect(!in->complete);
    cr_expect_gt(in->n_ops, 0, "what was written whole is kept");
    sbt_reader_incomplete_why(r, why, sizeof why);
    char stops[64];
    snprintf(stops, sizeof stops, "holds the ops before op %" PRIu64 " ", in->seq_end);
    cr_expect(strstr(why, want) && strstr(why, stops) && !strstr(why, "crash"), "%s", why);
    sbt_reader_close(r);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s.sbt", dir, dir);
    cr_expect_eq(system(cmd), 0);
}

/* A program that polls a fence and a timeline counter in a loop: a poll that tells the host
 * nothing new records nothing, so the trace does not grow with the number of polls (before,
 * each poll was an op and a completion scan). */
Test(capture, polling_does_not_grow_the_trace)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    uint64_t ops[2];
    const int polls[2] = {3, 3000};
    for (int k = 0; k < 2; k++) {
        char trace[] = "/tmp/reprise-test-XXXXXX.sbt", cmd[8192], out[4096], err[8192];
        int fd = mkstemps(trace, 4);
        cr_assert(fd >= 0);
        close(fd);
        snprintf(cmd, sizeof cmd, "%s capture -o %s -- %s/tests/vk/vk_compute poll %d", bin, trace,
                 build, polls[k]);
        cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
        sbt_reader *r = NULL;
        cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
        cr_assert(sbt_reader_info(r)->complete);
        ops[k] = sbt_reader_info(r)->n_ops;
        sbt_reader_close(r);
        unlink(trace);
    }
    /* vk_compute's own op count varies by an op or two from run to run (its host writes) */
    cr_expect_leq(ops[1], ops[0] + 5, "%d polls: %" PRIu64 " ops, %d polls: %" PRIu64 " ops",
                  polls[0], ops[0], polls[1], ops[1]);
}

Test(capture, exit_status_is_the_programs)
{
    char out[4096], err[4096], cmd[4200];
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt";
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s capture -o %s -- sh -c 'exit 7'", bin, trace);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 7);
    unlink(trace);
}

/* How `make asan` judges leaks (tests/lsan/): the Vulkan loader unloads drivers and layers
 * before exit, which makes LeakSanitizer report what they still held from "<unknown module>"
 * on some machines and not others (issue 11). Every process of an ASan test run therefore has
 * dlclose() made a no-op (tests/lsan/keep_loaded.c), so nothing is unloaded and every frame
 * names its module, and tests/lsan/leaks.sh counts a leak as ours only when the innermost
 * allocating frame outside the C runtime lies in a module under the build directory. Here a
 * program dlopen()s and dlclose()s the same leaking library twice: from the build directory
 * (standing for our capture layer, which the loader also unloads) and from a copy elsewhere
 * (standing for a driver). The first must be reported, the second ignored. */
Test(capture, leak_check_blames_only_our_modules)
{
#if !defined(__SANITIZE_ADDRESS__)
    cr_skip_test("not an ASan build: the leak attribution is exercised by `make asan`");
#else
    char dir[] = "/tmp/reprise-lsan-XXXXXX", cmd[8192], out[8192], err[8192];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "cp %s/tests/lsan/libleak.so %s/libdriver.so && mkdir %s/logs && "
             "ASAN_OPTIONS='log_path=%s/logs/log:log_exe_name=1:verify_asan_link_order=0:"
             "stack_trace_format=\"#%%n %%p %%F {%%m}\"' LSAN_OPTIONS=exitcode=0 "
             "LD_PRELOAD=%s/tests/lsan/libkeep_loaded.so %s/tests/lsan/leaky "
             "%s/tests/lsan/libleak.so %s/libdriver.so",
             build, dir, dir, dir, build, build, build, dir);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
    snprintf(cmd, sizeof cmd, "%s/tests/lsan/leaks.sh %s/logs %s", tenv_src(), dir, build);
    int rc = run(cmd, out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 1, "a leak of ours must fail the run: %s", err);
    const char *ours = strstr(err, "leak of ours in leaky");
    cr_assert_not_null(ours, "%s", err);
    cr_assert_null(strstr(ours + 1, "leak of ours"), "only one leak is ours: %s", err);
    char want[4200];
    snprintf(want, sizeof want, "(allocated in %s/tests/lsan/libleak.so):\nDirect leak of 1001 ",
             build);
    cr_assert_not_null(strstr(err, want), "the build directory's copy is blamed: %s", err);
    snprintf(want, sizeof want, "ignored, not ours (%s/libdriver.so): Direct leak of 1002 ", dir);
    cr_assert_not_null(strstr(err, want), "the driver's leak is ignored: %s", err);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    run(cmd, out, sizeof out, err, sizeof err);
#endif
}

/* ========================================================================================== */
/* A program that dies keeps what it did (tests/vk/vk_dies.c)                                 */
/* ========================================================================================== */

/* Runs vk_dies with args (NULL-terminated), under the layer when trace is not NULL (the
 * environment `reprise capture` sets, without the CLI in between: the wait status is the
 * program's own). With kill_after: SIGKILL one second after that many submissions finished. */
static int run_dies(const char *const *args, const char *trace, int kill_after, char *out,
                    size_t n_out)
{
    char prog[4200], layers[4200], tenv[4200], asan[4200];
    snprintf(prog, sizeof prog, "%s/tests/vk/vk_dies", build);
    snprintf(layers, sizeof layers, "VK_ADD_LAYER_PATH=%s", build);
    snprintf(tenv, sizeof tenv, "REPRISE_TRACE=%s", trace ? trace : "");
    char *argv[8] = {prog};
    for (int i = 0; args[i] && i < 6; i++)
        argv[i + 1] = (char *)args[i];
    char *env[] = {tproc_env_fault_kills(asan, sizeof asan),
                   layers,
                   "VK_INSTANCE_LAYERS=VK_LAYER_REPRISE_capture",
                   "VK_LOADER_LAYERS_ENABLE=VK_LAYER_REPRISE_capture",
                   tenv,
                   NULL};
    if (!trace)
        env[1] = NULL; /* without the capture */
    struct tproc p;
    cr_assert_eq(tproc_start(&p, argv, env), 0);
    if (kill_after) {
        cr_assert_eq(tproc_wait_for(&p, "done\n", kill_after), kill_after, "%s", p.text);
        sleep(1);
        kill(p.pid, SIGKILL);
    }
    int st = tproc_finish(&p);
    snprintf(out, n_out, "%s", p.text);
    return st;
}

/* The trace of a program that died: read by scanning, "the writer did not finish", and at
 * least `submits` submissions, each with its dispatch. */
static void check_died(const char *trace, uint64_t submits, const char *flush_reason)
{
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(!in->writer_finished && !in->has_footer);
    char why[512];
    sbt_reader_incomplete_why(r, why, sizeof why);
    cr_assert_not_null(strstr(why, "the writer did not finish"), "%s", why);
    struct sbt_stats *st = NULL;
    cr_assert_eq(sbt_stats_compute(r, NULL, &st), 0, "%s", sbt_errmsg());
    cr_assert_geq(st->by_kind[SBT_OP_SUBMIT], submits);
    cr_assert_geq(st->by_kind[SBT_OP_KERNEL], submits);
    sbt_stats_free(st);
    const char *reason = sbt_reader_meta_get(r, "capture.flush_reason");
    if (flush_reason)
        cr_assert(reason && strstr(reason, flush_reason), "capture.flush_reason: %s",
                  reason ? reason : "(none)");
    cr_assert_eq(sbt_reader_validate(r, NULL, NULL), 0, "validate found problems");
    sbt_reader_close(r);
    /* and `reprise info` says so */
    char cmd[8400], out[8192], err[8192];
    snprintf(cmd, sizeof cmd, "%s info %s", bin, trace);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
    cr_assert_not_null(strstr(out, "the writer did not finish"), "%s", out);
}

/* kill -9 of a program that submits every 300 ms, one second after its 9th submission
 * finished: every op submitted at least a second before the kill is in the trace */
Test(capture, sigkill_keeps_every_op_submitted_a_second_before)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-kill-XXXXXX.sbt", out[16384];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    const char *args[] = {"slow", "40", NULL};
    int st = run_dies(args, trace, 9, out, sizeof out);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
    check_died(trace, 9, NULL);
    unlink(trace);
}

/* A crash after N submissions: the trace holds them, the program's own handler (if any) still
 * runs, and the wait status is the one it has without the capture. */
static void crash(const char *mode, const char *when, const char *reason)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-crash-XXXXXX.sbt", plain[16384], cap[16384];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    const char *args[] = {mode, "3", when, NULL};
    int st_plain = run_dies(args, NULL, 0, plain, sizeof plain);
    int st_cap = run_dies(args, trace, 0, cap, sizeof cap);
    cr_assert(WIFSIGNALED(st_plain) || WEXITSTATUS(st_plain) != 0, "%s did not die", mode);
    cr_assert_eq(st_cap, st_plain, "wait status %#x under capture, %#x without", st_cap, st_plain);
    cr_assert_str_eq(cap, plain, "output changed under capture");
    cr_assert_not_null(strstr(plain, "submit 3 done"), "%s", plain);
    if (when)
        cr_assert_not_null(strstr(cap, "handler ran"), "the program's handler did not run: %s",
                           cap);
    check_died(trace, 3, reason);
    unlink(trace);
}

Test(capture, segv_keeps_the_ops_before_it)
{
    crash("segv", NULL, "SIGSEGV");
}

/* the program's handler, installed before the layer, runs after the layer wrote the trace */
Test(capture, segv_chains_to_the_programs_earlier_handler)
{
    crash("segv", "early", "SIGSEGV");
}

/* installed after the layer: the layer puts its own back on top at its next safe point (after
 * a wait) and chains to it */
Test(capture, segv_goes_through_a_handler_installed_later)
{
    crash("segv", "late", "SIGSEGV");
}

/* A program that takes write faults routinely and handles them (a garbage collector's write
 * barrier: 1000 faults): they go to its handler, the trace records no crash and is complete,
 * and the output is the program's. Before, each fault forced a synchronous flush and the trace
 * said capture.flush_reason "signal 11 (SIGSEGV)". */
/* vk_dies gc N [again] under capture with ENV: the program's output unchanged, its 200N
 * faults handled by its own handler, the trace complete and no crash recorded. */
static void gc_program(const char *n, const char *again, const char *env)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-gc-XXXXXX.sbt", plain[4096], pe[4096], cap[4096], ce[8192];
    char cmd[8192], want[64];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s/tests/vk/vk_dies gc %s %s", build, n, again);
    cr_assert_eq(run(cmd, plain, sizeof plain, pe, sizeof pe), 0, "%s", pe);
    snprintf(cmd, sizeof cmd, "%s %s capture -o %s -- %s/tests/vk/vk_dies gc %s %s", env, bin,
             trace, build, n, again);
    cr_assert_eq(run(cmd, cap, sizeof cap, ce, sizeof ce), 0, "%s", ce);
    cr_assert_str_eq(cap, plain);
    snprintf(want, sizeof want, "faults handled %d", 200 * atoi(n));
    cr_assert_not_null(strstr(cap, want), "%s", cap);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    cr_expect(sbt_reader_info(r)->complete);
    const char *why = sbt_reader_meta_get(r, "capture.flush_reason");
    cr_expect_null(why, "a crash recorded: capture.flush_reason %s", why);
    sbt_reader_close(r);
    unlink(trace);
}

Test(capture, faults_the_program_handles_are_no_crash)
{
    gc_program("5", "", "");
}

/* The same program putting its handler (one that hands no fault on) over ours before every
 * submission, while the layer write-protects the buffer the host fills each round: ours goes
 * back on top each time, however often (before, it stopped after 8 times, and the program's
 * handler took the layer's fault as its own crash). */
Test(capture, a_handler_installed_again_and_again_never_takes_our_faults)
{
    gc_program("24", "again", "REPRISE_HOST_WRITES=protect REPRISE_CPU_DEVICE_WAIT=0");
}

/* A thread writing a mapping while the capture stops tracking it (issue 21): `vk_dies busy`
 * exits while its thread writes every page of a 1 MiB mapping the layer write-protects
 * (REPRISE_HOST_WRITES=protect); at exit the layer publishes (the pages it had opened go back
 * under protection) and makes the whole mapping writable. The preloaded tests/preload/slow_rw.c
 * holds that last mprotect 100 ms, so the thread writes pages still protected meanwhile: they
 * must still be the layer's faults to take (writable first, out of the fault table after;
 * before, the other way round, and the thread died of a fault nobody claimed). */
Test(capture, a_thread_writing_while_tracking_ends)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-busy-XXXXXX.sbt", plain[4096], pe[4096], cap[4096];
    char ce[8192], cmd[8192];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s/tests/vk/vk_dies busy 3", build);
    cr_assert_eq(run(cmd, plain, sizeof plain, pe, sizeof pe), 0, "%s", pe);
    snprintf(cmd, sizeof cmd,
             "REPRISE_HOST_WRITES=protect REPRISE_CPU_DEVICE_WAIT=0 "
             "REPRISE_TEST_SLOW_RW_BYTES=524288 "
             "LD_PRELOAD=\"%s/tests/preload/libslow_rw.so ${LD_PRELOAD:-}\" "
             "%s capture -o %s -- %s/tests/vk/vk_dies busy 3",
             build, bin, trace, build);
    cr_assert_eq(run(cmd, cap, sizeof cap, ce, sizeof ce), 0, "%s", ce);
    cr_assert_str_eq(cap, plain);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    cr_expect(sbt_reader_info(r)->complete);
    const char *how = sbt_reader_meta_get(r, "capture.host_writes_used");
    cr_expect(how && strstr(how, "protect"), "%s", how ? how : "(none)");
    sbt_reader_close(r);
    unlink(trace);
}

Test(capture, abort_keeps_the_ops_before_it)
{
    crash("abort", NULL, "SIGABRT");
}

/* ========================================================================================== */
/* The fatal-signal machinery itself (capture/common/cap_signals.c, linked into this test) */
/* ========================================================================================== */

/* What the capture libraries share (capture/common/cap_int.h); only these are used here. */
typedef int (*cap_fault_claim_fn)(int sig, siginfo_t *si, void *uctx);
int cap_fault_claim_add(cap_fault_claim_fn fn);
void cap__signals_install(void);
void cap__signals_reassert(void);
void cap__signals_reassert_now(void);

static volatile sig_atomic_t calls_below, calls_above, order[8], n_order;
static void *page;

static void note_call(int who)
{
    if (n_order < 8)
        order[n_order++] = who;
}

static void below_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    calls_below++;
    note_call(1);
    if (!si || si->si_signo != sig)
        _exit(90); /* the siginfo did not come through */
}

static struct sigaction above_old;
static void above_handler(int sig, siginfo_t *si, void *uc)
{
    calls_above++;
    note_call(2);
    if (calls_above > 1)
        _exit(91);                       /* called again: a cycle through our handlers */
    above_old.sa_sigaction(sig, si, uc); /* not ours: hand it on, as V8 and Breakpad do */
}

static void handler_of(int sig, struct sigaction *a)
{
    cr_assert_eq(sigaction(sig, NULL, a), 0);
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *), int flags, struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(sig, &sa, old), 0);
}

/* the program's handler from before the capture runs, with its siginfo */
Test(signals, chains_to_the_handler_installed_before)
{
    install(SIGTERM, below_handler, 0, NULL);
    cap__signals_install();
    struct sigaction cur;
    handler_of(SIGTERM, &cur);
    cr_assert_neq((void *)cur.sa_sigaction, (void *)below_handler, "the capture is not on top");
    raise(SIGTERM);
    cr_assert_eq(calls_below, 1);
}

/* a handler installed after the capture that hands faults on to its old action: the capture
 * goes back on top, and each handler runs once, top to bottom, with no cycle */
Test(signals, reasserted_over_a_later_handler_without_a_cycle)
{
    install(SIGTERM, below_handler, 0, NULL);
    cap__signals_install();
    install(SIGTERM, above_handler, 0, &above_old);
    usleep(20000); /* re-assertion looks at most every 10 ms */
    cap__signals_reassert();
    struct sigaction cur;
    handler_of(SIGTERM, &cur);
    cr_assert_neq((void *)cur.sa_sigaction, (void *)above_handler, "not re-asserted");
    raise(SIGTERM);
    cr_assert_eq(calls_above, 1);
    cr_assert_eq(calls_below, 1);
    cr_assert(n_order == 2 && order[0] == 2 && order[1] == 1, "order %d %d", order[0], order[1]);
}

static struct sigaction other_old;
static void other_handler(int sig, siginfo_t *si, void *uc)
{
    calls_above++;
    note_call(3);
    other_old.sa_sigaction(sig, si, uc);
}

/* a program that puts a handler handing faults on over ours again and again (each time it
 * saves ours as its old action): ours goes back on top every time, and a signal runs each of
 * the program's handlers once, then the one from before the capture (before: no more levels
 * after 8, and the handler on top called itself through ours until the stack ran out) */
Test(signals, a_handler_put_over_ours_again_and_again_runs_once)
{
    install(SIGTERM, below_handler, 0, NULL);
    cap__signals_install();
    for (int i = 0; i < 40; i++) {
        install(SIGTERM, above_handler, 0, &above_old);
        cap__signals_reassert_now();
        struct sigaction cur;
        handler_of(SIGTERM, &cur);
        cr_assert_neq((void *)cur.sa_sigaction, (void *)above_handler, "not re-asserted (%d)", i);
    }
    raise(SIGTERM);
    cr_assert_eq(calls_above, 1);
    cr_assert_eq(calls_below, 1);
    cr_assert(n_order == 2 && order[0] == 2 && order[1] == 1, "order %d %d", order[0], order[1]);
}

/* two handlers taking turns over ours, 40 times: each runs once, newest first */
Test(signals, handlers_taking_turns_over_ours_run_once_each)
{
    install(SIGTERM, below_handler, 0, NULL);
    cap__signals_install();
    for (int i = 0; i < 40; i++) {
        if (i % 2)
            install(SIGTERM, above_handler, 0, &above_old);
        else
            install(SIGTERM, other_handler, 0, &other_old);
        cap__signals_reassert_now();
    }
    raise(SIGTERM);
    cr_assert_eq(calls_below, 1);
    cr_assert(n_order == 3 && order[0] == 2 && order[1] == 3 && order[2] == 1,
              "order %d %d %d (of %d)", order[0], order[1], order[2], (int)n_order);
}

/* a handler that takes only its own faults (a write barrier's), put over ours 40 times: the
 * capture's faults are still claimed, the program's still reach it */
static void *own_page;
static void own_faults_only(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if ((char *)si->si_addr < (char *)own_page || (char *)si->si_addr >= (char *)own_page + 4096)
        _exit(94); /* the capture's fault reached the program */
    calls_above++;
    mprotect(own_page, 4096, PROT_READ | PROT_WRITE);
}

static int claimed;
static int claim_page(int sig, siginfo_t *si, void *uc);

Test(signals, a_handler_installed_again_and_again_never_takes_claimed_faults)
{
    page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    own_page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(page != MAP_FAILED && own_page != MAP_FAILED);
    cr_assert_eq(cap_fault_claim_add(claim_page), 0);
    cap__signals_install();
    for (int i = 0; i < 40; i++) {
        install(SIGSEGV, own_faults_only, 0, NULL);
        cap__signals_reassert_now();
        cr_assert_eq(mprotect(page, 4096, PROT_READ), 0);
        *(volatile int *)page = i; /* the capture's */
        cr_assert_eq(mprotect(own_page, 4096, PROT_READ), 0);
        *(volatile int *)own_page = i; /* the program's */
    }
    cr_assert_eq(claimed, 40);
    cr_assert_eq(calls_above, 40);
}

/* an ignored signal stays ignored (children started with exec inherit SIG_IGN) */
Test(signals, ignored_signals_are_left_alone)
{
    signal(SIGHUP, SIG_IGN);
    cap__signals_install();
    struct sigaction cur;
    handler_of(SIGHUP, &cur);
    cr_assert_eq((void *)cur.sa_handler, (void *)SIG_IGN);
    raise(SIGHUP); /* nothing happens */
}

static int claim_page(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (sig != SIGSEGV || (char *)si->si_addr < (char *)page ||
        (char *)si->si_addr >= (char *)page + 4096)
        return 0;
    claimed++;
    return mprotect(page, 4096, PROT_READ | PROT_WRITE) == 0;
}

/* a write fault the capture caused itself (a write-protected page) is claimed and the program
 * goes on; the program's own handler never sees it */
Test(signals, a_claimed_fault_resumes_the_program)
{
    install(SIGSEGV, below_handler, 0, NULL);
    page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(page != MAP_FAILED);
    cr_assert_eq(cap_fault_claim_add(claim_page), 0);
    cap__signals_install();
    *(volatile int *)page = 42;
    cr_assert_eq(*(volatile int *)page, 42);
    cr_assert_eq(claimed, 1);
    cr_assert_eq(calls_below, 0);
}

/* Runs fn in a child; returns its wait status. */
static int in_child(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        fn();
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

/* A store through a null pointer that neither the compiler nor UBSan takes away. */
__attribute__((noinline, no_sanitize("undefined"))) static void write_null_here(void)
{
    volatile int *volatile null = NULL;
    *null = 1;
}

static void default_segv(void)
{
    signal(SIGSEGV, SIG_DFL); /* no handler: not even a sanitizer's (make asan) */
    cap__signals_install();
    write_null_here();
}

static void default_term(void)
{
    cap__signals_install();
    raise(SIGTERM);
}

static void resethand_twice(void)
{
    install(SIGTERM, below_handler, SA_RESETHAND, NULL);
    cap__signals_install();
    raise(SIGTERM); /* the program's one-shot handler */
    if (calls_below != 1)
        _exit(92);
    raise(SIGTERM); /* then the default action */
    _exit(93);
}

/* with no handler of the program's, the process ends by the signal as it would have (the
 * default action restored, the fault repeated or the signal raised again); SA_RESETHAND
 * handlers run once */
Test(signals, the_default_action_ends_the_process_as_without_us)
{
    int st = in_child(default_segv);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %#x", st);
    st = in_child(default_term);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
    st = in_child(resethand_twice);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
}

/* ---- host writes into mapped memory (issue 14) ------------------------------------------ */

/* tests/vk/vk_ring ARGS captured with ENV: the program's output is its own and the trace
 * complete; the trace says how host writes were found. Returns the open reader (the caller
 * closes it and unlinks trace). */
static sbt_reader *capture_ring(const char *args, const char *env, char *trace, char *cap,
                                size_t n_cap)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char plain[4096], pe[8192], ce[8192], cmd[8192];
    snprintf(cmd, sizeof cmd, "%s/tests/vk/vk_ring %s", build, args);
    cr_assert_eq(run(cmd, plain, sizeof plain, pe, sizeof pe), 0, "vk_ring %s failed: %s", args,
                 pe);
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s %s capture -o %s -- %s/tests/vk/vk_ring %s", env, bin, trace,
             build, args);
    cr_assert_eq(run(cmd, cap, n_cap, ce, sizeof ce), 0, "capture failed: %s", ce);
    cr_assert_str_eq(cap, plain, "output changed under capture");
    cr_assert_null(strstr(ce, "recording stopped"), "the layer failed: %s", ce);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    cr_assert(sbt_reader_info(r)->complete, "trace incomplete");
    const char *how = sbt_reader_meta_get(r, "capture.host_writes");
    cr_assert(how && *how, "the trace does not say how host writes were found");
    return r;
}

/* Device output is never recorded as host writes: after the host's first fill, each round of
 * `vk_ring chain` changes four words of what the device just wrote, and exactly those four
 * words are recorded (the device's other bytes, in the same pages, are not), with each way of
 * finding host writes and whether or not the device still runs while the host writes. */
struct ringenv { /* arrays: Criterion copies parameters into another process */
    char env[96], how[16], args[32];
};

ParameterizedTestParameters(capture, host_writes_are_the_bytes_the_host_changed)
{
    static struct ringenv e[] = {
        {"", "", ""},                                                             // the default
        {"REPRISE_CPU_DEVICE_WAIT=0", "", ""},                                    // device running
        {"REPRISE_CPU_DEVICE_WAIT=0 REPRISE_HOST_WRITES=protect", "protect", ""}, // write faults
        {"REPRISE_CPU_DEVICE_WAIT=0 REPRISE_HOST_WRITES=scan", "scan", ""}, // compared every time
        {"REPRISE_CPU_DEVICE_WAIT=0 REPRISE_HOST_COPY=1", "", ""},          // the program's copy
        {"REPRISE_CPU_DEVICE_WAIT=0", "", "--remap"}, // output final while unmapped
        {"REPRISE_CPU_DEVICE_WAIT=0 REPRISE_HOST_WRITES=protect", "protect", "--remap"},
    };
    return cr_make_param_array(struct ringenv, e, sizeof e / sizeof e[0]);
}

ParameterizedTest(struct ringenv *e, capture, host_writes_are_the_bytes_the_host_changed)
{
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", cap[4096], args[128];
    snprintf(args, sizeof args, "chain --size 16384 %s", e->args);
    sbt_reader *r = capture_ring(args, e->env, trace, cap, sizeof cap);
    if (e->how[0])
        cr_assert_not_null(strstr(sbt_reader_meta_get(r, "capture.host_writes"), e->how), "%s",
                           sbt_reader_meta_get(r, "capture.host_writes"));
    sbt_cursor *c = NULL;
    const struct sbt_op *op;
    cr_assert_eq(sbt_cursor_open(r, NULL, &c), 0);
    uint64_t reads = 0, edits = 0, first = 0;
    while (sbt_cursor_next(c, &op) == 1) {
        if (op->kind == SBT_OP_HOST_READ)
            reads++;
        if (op->kind != SBT_OP_HOST_WRITE)
            continue;
        cr_assert_eq(op->n_access, 1);
        if (!reads) { /* the first fill: region 0, 16 KiB (whole pages around it at most) */
            first += op->access[0].len;
            continue;
        }
        cr_expect_eq(op->access[0].len, 4, "op %llu: host write of %llu bytes at +%llu",
                     (unsigned long long)op->seq, (unsigned long long)op->access[0].len,
                     (unsigned long long)op->access[0].offset);
        edits++;
    }
    sbt_cursor_close(c);
    cr_expect_eq(reads, 32);
    cr_expect_geq(first, 16384);
    cr_expect_leq(first, 16384 + 8192);
    cr_expect_eq(edits, 4 * 32, "%llu four-byte host writes", (unsigned long long)edits);
    sbt_reader_close(r);
    unlink(trace);
}

/* Non-coherent memory (host-visible without HOST_COHERENT, as a discrete GPU's often is; the
 * test layer VK_LAYER_REPRISE_noncoherent, below the capture layer, makes lavapipe's so: the
 * program's mapping is a copy that reaches the device at a flush and sees device output at an
 * invalidate). The layer is in place: a program that reads its output without invalidating
 * reads stale bytes, one that invalidates reads what it reads without the layer. */
#define NONCOHERENT                                                                  \
    "VK_ADD_LAYER_PATH=%s/tests/vk VK_INSTANCE_LAYERS=VK_LAYER_REPRISE_noncoherent " \
    "VK_LOADER_LAYERS_ENABLE=VK_LAYER_REPRISE_noncoherent"

Test(capture, noncoherent_test_layer_is_really_noncoherent, .timeout = 120)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char nc[4200], cmd[8192], plain[4096], out[4096], err[8192];
    snprintf(nc, sizeof nc, NONCOHERENT, build);
    const char *modes[] = {"ring", "chain"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s/tests/vk/vk_ring %s --noncoherent", build, modes[i]);
        cr_assert_eq(run(cmd, plain, sizeof plain, err, sizeof err), 0, "%s: %s", cmd, err);
        snprintf(cmd, sizeof cmd, "%s %s/tests/vk/vk_ring %s --noncoherent", nc, build, modes[i]);
        cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s: %s", cmd, err);
        cr_expect_str_eq(out, plain, "%s: a correct program reads another result", modes[i]);
        snprintf(cmd, sizeof cmd, "%s %s/tests/vk/vk_ring %s --noncoherent-wrong", nc, build,
                 modes[i]);
        cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s: %s", cmd, err);
        cr_expect_str_neq(out, plain, "%s: the output read without an invalidate is not stale",
                          modes[i]);
    }
}

/* Captured under that layer, with each way of finding host writes and the device running while
 * the host writes: the program prints what it prints alone; the trace is complete; device output
 * is read back at the program's invalidates (one HOST_READ a round, its digest what the device
 * wrote) and never taken for host writes (chain: after the first fill, exactly the four words
 * the host changes each round, recorded at its flush); replay reproduces every read-back bit for
 * bit on the non-coherent device (check, two runs) and on lavapipe as it is. Before: the layer
 * digested the stale mapping at the wait and took the bytes the invalidate brought for host
 * writes: "complete", and check found every read-back divergent. */
struct ncenv { /* arrays: Criterion copies parameters into another process */
    char how[16], args[48];
};

ParameterizedTestParameters(capture, noncoherent_memory_is_read_at_invalidate_written_at_flush)
{
    static struct ncenv e[] = {
        {"uffd", "chain --size 16384"},
        {"protect", "chain --size 16384"},
        {"scan", "chain --size 16384"},
        {"uffd", "ring"},
        {"protect", "ring"},
        {"scan", "ring --size 2048"},
        /* the output binding is the whole ring: the host fills the next input where the running
         * dispatch may write, and flushes it; it must reach the device at that flush */
        {"uffd", "ring --wide"},
        {"protect", "ring --wide"},
        {"scan", "ring --wide"},
        /* unmapped while each dispatch runs, mapped again after the wait: the map makes
         * nothing visible (the host copy keeps what it held), the invalidate does */
        {"uffd", "ring --remap"},
        {"protect", "chain --size 16384 --remap"},
        {"scan", "chain --size 16384 --remap"},
    };
    return cr_make_param_array(struct ncenv, e, sizeof e / sizeof e[0]);
}

ParameterizedTest(struct ncenv *e, capture,
                  noncoherent_memory_is_read_at_invalidate_written_at_flush, .timeout = 240)
{
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", cap[4096], args[128], env[4400], nc[4200],
         cmd[8192], out[8192], err[8192];
    snprintf(nc, sizeof nc, NONCOHERENT, build);
    snprintf(env, sizeof env, "%s REPRISE_HOST_WRITES=%s REPRISE_CPU_DEVICE_WAIT=0", nc, e->how);
    snprintf(args, sizeof args, "%s --noncoherent", e->args);
    sbt_reader *r = capture_ring(args, env, trace, cap, sizeof cap);
    const char *how = sbt_reader_meta_get(r, "capture.host_writes");
    if (strcmp(e->how, "uffd") || !strstr(how, "protect")) /* uffd falls back where it lacks */
        cr_assert_not_null(strstr(how, e->how), "%s", how);
    int chain = !strncmp(e->args, "chain", 5);
    sbt_cursor *c = NULL;
    const struct sbt_op *op;
    cr_assert_eq(sbt_cursor_open(r, NULL, &c), 0);
    uint64_t reads = 0, edits = 0, first = 0, later = 0;
    while (sbt_cursor_next(c, &op) == 1) {
        if (op->kind == SBT_OP_HOST_READ) {
            reads++;
            cr_expect(op->flags & SBT_OPF_DIGEST, "op %llu: a host read without its digest",
                      (unsigned long long)op->seq);
        }
        if (op->kind != SBT_OP_HOST_WRITE)
            continue;
        cr_assert_eq(op->n_access, 1);
        if (!reads) {
            first += op->access[0].len;
            continue;
        }
        later += op->access[0].len;
        if (!chain)
            continue;
        cr_expect_eq(op->access[0].len, 4, "op %llu: host write of %llu bytes at +%llu",
                     (unsigned long long)op->seq, (unsigned long long)op->access[0].len,
                     (unsigned long long)op->access[0].offset);
        edits++;
    }
    sbt_cursor_close(c);
    sbt_reader_close(r);
    cr_expect_eq(reads, 32);
    if (chain) {
        cr_expect_geq(first, 16384);
        cr_expect_leq(first, 16384 + 8192);
        cr_expect_eq(edits, 4 * 32, "%llu four-byte host writes", (unsigned long long)edits);
    } else { /* 32 inputs of one region each (the last round's fills the next, unused) */
        uint64_t region = strstr(e->args, "2048") ? 2048 : 1024;
        cr_expect_leq(later, 32 * (region > 4096 ? region : 4096), "%llu bytes of host writes",
                      (unsigned long long)later);
    }
    char runs[] = "/tmp/reprise-test-XXXXXX";
    cr_assert_not_null(mkdtemp(runs));
    snprintf(cmd, sizeof cmd, "%s %s check %s --runs 2 --keep %s", nc, bin, trace, runs);
    int rc = run(cmd, out, sizeof out, err, sizeof err);
    cr_expect_eq(rc, 0, "check on the non-coherent device: exit %d: %s%s", rc, out, err);
    snprintf(cmd, sizeof cmd, "rm -rf %s", runs);
    run(cmd, out, sizeof out, err, sizeof err);
    snprintf(cmd, sizeof cmd, "%s replay %s --mode full", bin, trace);
    rc = run(cmd, out, sizeof out, err, sizeof err);
    cr_expect_eq(rc, 0, "replay on lavapipe: exit %d: %s%s", rc, out, err);
    cr_expect_not_null(strstr(out, "32 compared with the capture, 0 differ"), "%s", out);
    unlink(trace);
    snprintf(cmd, sizeof cmd, "%.*s.procs", (int)(strlen(trace) - 4), trace);
    unlink(cmd);
}

/* What cannot be made exact under that layer is loud: non-coherent memory the program imports
 * from its own pages cannot be handed to it as a copy (it writes through its own pointer), and
 * a program that never flushes its host writes relies on a coherence the memory lacks (they
 * never reached the device, nor the trace): the trace is incomplete, naming it. */
struct ncmisuse { /* arrays: Criterion copies parameters into another process */
    char args[48], why[64];
};

ParameterizedTestParameters(capture, noncoherent_misuse_is_incomplete_naming_it)
{
    static struct ncmisuse e[] = {
        {"ring --import --noncoherent", "non-coherent memory imported from host pages"},
        {"ring --noncoherent-noflush", "host writes to non-coherent memory never flushed"},
        {"chain --noncoherent-noflush", "host writes to non-coherent memory never flushed"},
    };
    return cr_make_param_array(struct ncmisuse, e, sizeof e / sizeof e[0]);
}

ParameterizedTest(struct ncmisuse *e, capture, noncoherent_misuse_is_incomplete_naming_it,
                  .timeout = 120)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", nc[4200], out[4096], err[8192], cmd[8192];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(nc, sizeof nc, NONCOHERENT, build);
    snprintf(cmd, sizeof cmd, "%s %s capture -o %s -- %s/tests/vk/vk_ring %s", nc, bin, trace,
             build, e->args);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 3, "an incomplete trace: %s", err);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    char why[2048];
    cr_expect(!sbt_reader_info(r)->complete);
    sbt_reader_incomplete_why(r, why, sizeof why);
    cr_expect_not_null(strstr(why, e->why), "%s", why);
    sbt_reader_close(r);
    unlink(trace);
    snprintf(cmd, sizeof cmd, "%.*s.procs", (int)(strlen(trace) - 4), trace);
    unlink(cmd);
}

/* What cannot be made exact is loud: on a device that writes memory by DMA (a GPU; simulated on
 * lavapipe), the layer does not wait inside vkQueueSubmit, and a host write into a page a
 * running submission may write wholly (here its output binding is the whole ring) cannot be
 * told from the device's bytes: the trace is incomplete, naming it. */
Test(capture, host_write_under_running_device_output_is_loud)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", out[4096], err[8192], cmd[8192];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd,
             "REPRISE_TEST_DMA_DEVICE=1 %s capture -o %s -- %s/tests/vk/vk_ring ring --wide", bin,
             trace, build);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 3, "an incomplete trace: %s", err);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    char why[2048];
    sbt_reader_incomplete_why(r, why, sizeof why);
    cr_expect(!sbt_reader_info(r)->complete && strstr(why, "host write into mapped memory"),
              "the trace must say it lacks what the host wrote: %s", why);
    cr_expect_not_null(strstr(err, "INCOMPLETE"), "%s", err);
    sbt_reader_close(r);
    unlink(trace);
}

/* The SPIR-V reflection's view of buffer device addresses (capture/vk/cap_vk_spirv.c): a
 * shader that writes through a PhysicalStorageBuffer pointer only with a cooperative-matrix
 * store (KHR 4458, NV 5360: ggml's matrix kernels on GPUs that have them) or a cooperative-vector
 * store or accumulation (NV 5303, 5290, 5291) may write (before: READ, and the dispatch's
 * address accesses missed its writes: issue 21); one that only loads
 * through such a pointer reads. A minimal module: the capability, a pointer type, a value of
 * it, and the instruction under test. */
static uint32_t refl_addresses(uint32_t op, uint32_t n_operands)
{
    uint32_t code[] = {
        0x07230203u,
        0x00010600u,
        0,
        9, /* bound */
        0,
        2u << 16 | 17,
        5347, /* OpCapability PhysicalStorageBufferAddresses */
        4u << 16 | 21,
        1,
        32,
        0, /* %1 = OpTypeInt 32 0 */
        4u << 16 | 32,
        2,
        5349,
        1, /* %2 = OpTypePointer PhysicalStorageBuffer %1 */
        3u << 16 | 1,
        2,
        3, /* %3 = OpUndef %2 */
        3u << 16 | 1,
        1,
        4, /* %4 = OpUndef %1 */
        (1 + n_operands) << 16 | op,
        3,
        4,
        5,
        6,
        7,
        8, /* OP %3 %4 %5 %6 %7 %8 (pointer first) */
    };
    size_t n = sizeof code / sizeof code[0] - (6 - n_operands);
    struct cap_refl refl;
    cap_spirv_reflect(code, n, &refl);
    uint32_t a = refl.addresses;
    cap_refl_free(&refl);
    return a;
}

Test(capture, cooperative_matrix_and_vector_stores_through_addresses_are_writes)
{
    cr_expect_eq(refl_addresses(4458, 3), SBT_ACCESS_RW, "OpCooperativeMatrixStoreKHR");
    cr_expect_eq(refl_addresses(5360, 4), SBT_ACCESS_RW, "OpCooperativeMatrixStoreNV");
    cr_expect_eq(refl_addresses(5303, 3), SBT_ACCESS_RW, "OpCooperativeVectorStoreNV");
    cr_expect_eq(refl_addresses(5290, 6), SBT_ACCESS_RW,
                 "OpCooperativeVectorOuterProductAccumulateNV");
    cr_expect_eq(refl_addresses(5291, 3), SBT_ACCESS_RW,
                 "OpCooperativeVectorReduceSumAccumulateNV");
    cr_expect_eq(refl_addresses(62, 2), SBT_ACCESS_RW, "OpStore");
    /* %5 = OpLoad %1 %3: only reads through the pointer */
    uint32_t code[] = {0x07230203u,
                       0x00010600u,
                       0,
                       8,
                       0,
                       2u << 16 | 17,
                       5347,
                       4u << 16 | 21,
                       1,
                       32,
                       0,
                       4u << 16 | 32,
                       2,
                       5349,
                       1,
                       3u << 16 | 1,
                       2,
                       3,
                       4u << 16 | 61,
                       1,
                       5,
                       3};
    struct cap_refl refl;
    cap_spirv_reflect(code, sizeof code / sizeof code[0], &refl);
    cr_expect_eq(refl.addresses, SBT_ACCESS_READ, "OpLoad only");
    cap_refl_free(&refl);
}

/* Two allocations importing the same host pages (issue 21): what the device writes through one
 * the other holds too, which replay's separate allocations cannot do, and the page tracking has
 * one owner per page: the trace says it is incomplete, naming it (before: "complete"). */
Test(capture, overlapping_imports_are_loud)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", out[4096], err[8192], cmd[8192];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s capture -o %s -- %s/tests/vk/vk_ring ring --import-twice", bin,
             trace, build);
    int rc = run(cmd, out, sizeof out, err, sizeof err);
    if (rc == 4 && strstr(err, "VK_EXT_external_memory_host"))
        cr_skip_test("the driver lacks VK_EXT_external_memory_host");
    cr_assert_eq(rc, 3, "an incomplete trace: %s", err);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    char why[2048];
    sbt_reader_incomplete_why(r, why, sizeof why);
    cr_expect(!sbt_reader_info(r)->complete && strstr(why, "another allocation imports too"),
              "the trace must name the second import: %s", why);
    sbt_reader_close(r);
    unlink(trace);
}

/* A fence on one queue tells of the work on another that the fenced work waited for: on a
 * device that writes memory by DMA (a GPU; simulated on lavapipe), with the program handed a copy
 * of every mapping (as for a GPU's uncached memory) and two queues (the test layer
 * VK_LAYER_REPRISE_twoqueues gives lavapipe a second one), vk_compute and vk_threads chain their
 * queues with timeline semaphores and wait on a fence or a semaphore of the last: what the
 * program reads back under capture must be what it computes without it. Found on an NVIDIA
 * H200, where vk_compute printed another checksum under capture (the device output of queue 0
 * never reached the program's copy). */
ParameterizedTestParameters(capture, semaphore_chained_queues_complete_together)
{
    static struct ringenv e[] = {
        {"", "", "vk_compute"},
        {"", "", "vk_threads"},
    };
    return cr_make_param_array(struct ringenv, e, sizeof e / sizeof e[0]);
}

ParameterizedTest(struct ringenv *e, capture, semaphore_chained_queues_complete_together)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", plain[4096], out[4096], err[8192], cmd[8192],
         layers[2048];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(layers, sizeof layers,
             "VK_ADD_LAYER_PATH=%s/tests/vk VK_INSTANCE_LAYERS=VK_LAYER_REPRISE_twoqueues "
             "VK_LOADER_LAYERS_ENABLE=VK_LAYER_REPRISE_twoqueues",
             build);
    snprintf(cmd, sizeof cmd, "%s %s/tests/vk/%s", layers, build, e->args);
    cr_assert_eq(run(cmd, plain, sizeof plain, err, sizeof err), 0, "%s: %s", e->args, err);
    snprintf(cmd, sizeof cmd,
             "%s REPRISE_TEST_DMA_DEVICE=1 REPRISE_HOST_COPY=1 %s capture -o %s -- %s/tests/vk/%s",
             layers, bin, trace, build, e->args);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "capture failed: %s", err);
    cr_assert_str_eq(out, plain, "%s printed something else under capture", e->args);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    uint32_t n = 0, queues = 0;
    const struct sbt_stream *st = sbt_reader_streams(r, &n);
    for (uint32_t i = 0; i < n; i++)
        queues += st[i].kind == SBT_STREAM_QUEUE;
    cr_assert_geq(queues, 2, "the program ran on %u queue(s): the test layer is not in place",
                  queues);
    sbt_reader_close(r);
    unlink(trace);
}

/* A wait returns only once what it finished is in the program's view, also when another
 * thread is reading it back: vk_threads' three threads share queues and wait on their own
 * fences, so one thread's wait often finishes another's submission. With the program handed a
 * copy of every mapping on a simulated DMA device (as for a GPU's uncached memory), a thread
 * whose wait found nothing left pending returned while the other was still copying, and read
 * its output stale (4 runs in 5 at 64 rounds; on an NVIDIA H200 at the default 4). Three
 * runs, each of which must print what the program prints alone. */
Test(capture, wait_sees_read_back_done_by_another_thread)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", plain[4096], out[4096], err[8192], cmd[8192];
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s/tests/vk/vk_threads 64", build);
    cr_assert_eq(run(cmd, plain, sizeof plain, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd,
                 "REPRISE_TEST_DMA_DEVICE=1 REPRISE_HOST_COPY=1 %s capture -o %s -- "
                 "%s/tests/vk/vk_threads 64",
                 bin, trace, build);
        cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "capture failed: %s", err);
        cr_assert_str_eq(out, plain, "run %d: vk_threads read another result under capture", i);
    }
    unlink(trace);
}

/* A program that takes SIGSEGV for faults of its own (as V8 and the JVM do) still sees every
 * one of them while the layer write-protects mapped pages: its handler, installed before the
 * layer's or after it, passes the faults it does not know on, and the layer passes on the
 * ones that are not its own. */
ParameterizedTestParameters(capture, programs_own_sigsegv_handler_sees_its_faults)
{
    static struct ringenv e[] = {
        {"", "", "--own-segv early"}, // installed before the layer's
        {"", "", "--own-segv late"},  // after it
    };
    return cr_make_param_array(struct ringenv, e, sizeof e / sizeof e[0]);
}

ParameterizedTest(struct ringenv *e, capture, programs_own_sigsegv_handler_sees_its_faults)
{
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt", cap[4096], args[128];
    snprintf(args, sizeof args, "chain --size 16384 %s", e->args);
    sbt_reader *r = capture_ring(args, "REPRISE_HOST_WRITES=protect REPRISE_CPU_DEVICE_WAIT=0",
                                 trace, cap, sizeof cap);
    cr_assert_not_null(strstr(cap, "own faults 32"), "%s", cap);
    /* and the layer took write faults of its own meanwhile */
    const char *used = sbt_reader_meta_get(r, "capture.host_writes_used");
    unsigned long long faults = 0;
    const char *f = used ? strstr(used, "copied; ") : NULL;
    cr_assert(f && sscanf(f, "copied; %llu write faults", &faults) == 1, "%s", used);
    cr_expect_gt(faults, 0, "%s", used);
    sbt_reader_close(r);
    unlink(trace);
}

/* ---- completeness: programs that use Vulkan the layer does not record --------------------- */

/* tests/vk/PROG MODE under capture (env: a shell prefix, or NULL): the program's output is its
 * own, and the trace is incomplete, naming `call` with its count and the op where it first
 * happened, which is a MARKER with the UNSUPPORTED mark named after it; `reprise capture` and
 * `reprise info` say so. call is matched as the start of the name. NULL: the trace must be
 * complete and name no call that affects replay. */
static void capture_prog(const char *prog, const char *mode, const char *env, const char *call,
                         uint64_t count)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char plain[4096], pe[8192], cap[4096], ce[8192], cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s/tests/vk/%s %s", env ? env : "", build, prog, mode);
    int rc = run(cmd, plain, sizeof plain, pe, sizeof pe);
    if (rc == 4)
        cr_skip_test("the device lacks what %s %s needs: %s", prog, mode, pe);
    cr_assert_eq(rc, 0, "%s %s failed: %s", prog, mode, pe);
    char trace[] = "/tmp/reprise-test-XXXXXX.sbt";
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s %s capture -o %s -- %s/tests/vk/%s %s", env ? env : "", bin,
             trace, build, prog, mode);
    /* an incomplete trace fails the capture (exit 3) although the program succeeded */
    cr_assert_eq(run(cmd, cap, sizeof cap, ce, sizeof ce), call ? 3 : 0, "capture: %s", ce);
    cr_assert_str_eq(cap, plain, "output changed under capture");
    cr_assert_null(strstr(ce, "recording stopped"), "the layer failed: %s", ce);

    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    const struct sbt_info *info = sbt_reader_info(r);
    uint32_t n = 0;
    const struct sbt_unsupported *u = sbt_reader_unsupported(r, &n);
    if (!call) {
        cr_assert(info->complete, "trace incomplete");
        for (uint32_t i = 0; i < n; i++)
            cr_assert(!(u[i].flags & SBT_UNMODELLED_AFFECTS), "%s affects replay",
                      sbt_reader_string(r, u[i].what));
        cr_assert_not_null(strstr(ce, "; complete"), "summary: %s",
                           ce); /* harmless ones may be named */
        sbt_reader_close(r);
        unlink(trace);
        return;
    }
    cr_assert(!info->complete, "a trace with %s says it is complete", call);
    const struct sbt_unsupported *hit = NULL;
    for (uint32_t i = 0; i < n; i++)
        if (!strncmp(sbt_reader_string(r, u[i].what), call, strlen(call)))
            hit = &u[i];
    cr_assert_not_null(hit, "%s is not among the %u unmodelled calls", call, n);
    char name[256];
    snprintf(name, sizeof name, "%s", sbt_reader_string(r, hit->what));
    call = name;
    const uint64_t first = hit->first_seq; /* hit lives as long as the reader */
    cr_assert_eq(hit->count, count, "%s: count %llu", call, (unsigned long long)hit->count);
    cr_assert(hit->flags & SBT_UNMODELLED_AFFECTS, "%s does not affect replay", call);
    cr_assert_neq(hit->first_seq, SBT_SEQ_NONE, "%s: no first op", call);
    struct sbt_range at = {
        .has_seq = 1, .seq_begin = hit->first_seq, .seq_end = hit->first_seq + 1};
    sbt_cursor *c = NULL;
    const struct sbt_op *op = NULL;
    cr_assert_eq(sbt_cursor_open(r, &at, &c), 0);
    cr_assert_eq(sbt_cursor_next(c, &op), 1);
    cr_assert_eq(op->kind, SBT_OP_MARKER);
    cr_assert(op->flags & SBT_OPF_UNSUPPORTED);
    cr_assert_str_eq(sbt_reader_string(r, op->name), call);
    sbt_cursor_close(c);
    sbt_reader_close(r);

    char want[512];
    snprintf(want, sizeof want, "%s x%llu (affects replay, first at op %llu)", call,
             (unsigned long long)count, (unsigned long long)first);
    cr_assert_not_null(strstr(ce, want), "capture summary without \"%s\": %s", want, ce);
    cr_assert_not_null(strstr(ce, "INCOMPLETE"), "capture summary: %s", ce);
    char out[16384], err[4096];
    snprintf(cmd, sizeof cmd, "%s info %s", bin, trace);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
    snprintf(want, sizeof want, "%s x%llu (first at op %llu)", call, (unsigned long long)count,
             (unsigned long long)first);
    cr_assert_not_null(strstr(out, "complete   no:"), "%s", out);
    cr_assert_not_null(strstr(out, want), "info without \"%s\": %s", want, out);
    unlink(trace);
}

/* tests/vk/vk_unmodelled MODE under capture, as capture_prog. */
static void capture_mode(const char *mode, const char *env, const char *call, uint64_t count)
{
    capture_prog("vk_unmodelled", mode, env, call, count);
}

Test(capture, plain_program_is_complete)
{
    capture_mode("plain", NULL, NULL, 0);
}

/* the issue's lead example: dispatches bound through push descriptors used to be recorded
 * without their bindings, and the trace said "complete"; they are recorded now (with a registry
 * of Vulkan 1.4 or later: an older one leaves them unmodelled, and the trace says so) */
Test(capture, push_descriptors_complete)
{
    if (!tenv_vk_registry_has("vkCmdPushDescriptorSet"))
        capture_mode("push", NULL, "vkCmdPushDescriptorSetKHR", 2);
    else
        capture_mode("push", NULL, NULL, 0);
}

Test(capture, push_descriptor_template_complete)
{
    if (!tenv_vk_registry_has("vkCmdPushDescriptorSet"))
        capture_mode("push-template", NULL, "vkCmdPushDescriptorSetWithTemplateKHR", 2);
    else
        capture_mode("push-template", NULL, NULL, 0);
}

/* Every way of binding buffers (tests/vk/vk_descriptors) and of making pipelines
 * (tests/vk/vk_pipelines): complete traces, outputs unchanged. The modes Debian 12's lavapipe
 * lacks (maintenance5 and 6, descriptor indexing) run on Mesa 25. */
struct progmode { /* arrays: Criterion copies parameters into another process */
    char prog[32], mode[16];
    int mesa25;
};

ParameterizedTestParameters(capture, binding_and_pipeline_programs_are_complete)
{
    static struct progmode p[] = {
        {"vk_descriptors", "push", 0},
        {"vk_descriptors", "push-template", 0},
        {"vk_descriptors", "template", 0},
        {"vk_descriptors", "dynamic", 0},
        {"vk_descriptors", "push2", 1},
        {"vk_descriptors", "indexing", 1},
        {"vk_pipelines", "subgroup", 0},
        {"vk_pipelines", "spec", 0},
        {"vk_pipelines", "flags", 0},
        {"vk_pipelines", "maint5", 1},
        {"vk_pipelines", "robust", 1},
        {"vk_pipelines", "nonuniform", 1},
        {"vk_address", "", 0},
    };
    return cr_make_param_array(struct progmode, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct progmode *p, capture, binding_and_pipeline_programs_are_complete)
{
    char why[512];
    const char *env = p->mesa25 ? tenv_mesa25(why, sizeof why) : NULL;
    if (p->mesa25 && !env)
        cr_skip_test("%s", why);
    if (!strncmp(p->mode, "push", 4) && !tenv_vk_registry_has("vkCmdPushDescriptorSet"))
        cr_skip_test("this build's Vulkan registry predates 1.4: push descriptors are unmodelled");
    capture_prog(p->prog, p->mode, env, NULL, 0);
}

Test(capture, copy_query_pool_results_incomplete)
{
    capture_mode("query", NULL, "vkCmdCopyQueryPoolResults", 1);
}

/* device addresses are recorded (replay needs capture-replay to reproduce them) */
Test(capture, buffer_device_address_complete)
{
    capture_mode("address", NULL, NULL, 0);
}

/* a structure chained into an allocation that the layer does not know: the trace says it is
 * incomplete, naming it by its registry name, once per allocation (before: ignored, and the
 * trace "complete") */
Test(capture, unknown_allocation_chain_incomplete)
{
    capture_mode("chain", NULL, "vkAllocateMemory (VkMemoryOpaqueCaptureAddressAllocateInfo)", 2);
}

/* images are recorded, multisampled ones not */
Test(capture, multisampled_image_incomplete)
{
    capture_mode("image", NULL, "vkCreateImage (multisampled image)", 1);
}

/* A command the registry the layer was built from does not know, provided by a test layer
 * below it (as a newer driver would): handed out through a counting trampoline that keeps every
 * argument (the program prints what the command computed from them, the same as without
 * capture), counted, and affecting. */
Test(capture, unknown_command_trampoline)
{
#if !defined(__x86_64__)
    cr_skip_test("counting trampolines exist for x86-64 only");
#endif
    char env[4400];
    snprintf(env, sizeof env,
             "VK_ADD_LAYER_PATH=%s/tests/vk VK_INSTANCE_LAYERS=VK_LAYER_REPRISE_fakecmd", build);
    capture_mode("unknown", env, "vkReprisetestSumREPRISE (unknown to vk.xml ", 2);
}

/* ---- the registry, all of it ---------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s) {
        s[n] = 0;
        *len = (size_t)n;
    }
    return s;
}

/* Is name (of length n) a whole word of text: between line start or a space, and a space or
 * line end? */
static int listed(const char *text, const char *name, size_t n)
{
    for (const char *p = text; (p = strstr(p, name)); p++)
        if ((p == text || p[-1] == '\n' || p[-1] == ' ') &&
            (p[n] == ' ' || p[n] == '\n' || p[n] == 0) && !memchr(name, ' ', n))
            return 1;
    return 0;
}

/* Every command vk.xml defines (read here with plain string search, independently of the
 * generator) is in the generated class list of the layer: covered with a class, or named as
 * outside the "vulkan" API (disabled or Vulkan SC extensions). */
Test(capture, registry_fully_covered)
{
    const char *xml =
        getenv("REPRISE_VK_XML") ? getenv("REPRISE_VK_XML") : "/usr/share/vulkan/registry/vk.xml";
    char path[4200];
    snprintf(path, sizeof path, "%s/gen/capture/vk/cap_vk_classes.txt", build);
    size_t xn = 0, ln = 0;
    char *x = slurp(xml, &xn), *l = slurp(path, &ln);
    if (!x)
        cr_skip_test("%s not readable (apt-get install libvulkan-dev)", xml);
    cr_assert_not_null(l, "%s: not generated", path);
    char *cmds = strstr(x, "<commands");
    char *end = cmds ? strstr(cmds, "</commands>") : NULL;
    cr_assert(cmds && end, "no <commands> in %s", xml);
    *end = 0;
    uint64_t n_cmds = 0, n_skipped = 0;
    for (char *p = cmds + 1; (p = strstr(p, "<command")); p++) {
        if (p[8] != ' ' && p[8] != '>')
            continue;
        char *tag_end = strchr(p, '>'), *name = NULL;
        *tag_end = 0;
        char *alias = strstr(p, " alias=");
        char *attr = alias ? strstr(p, " name=\"") : NULL;
        *tag_end = '>';
        if (attr) {
            name = attr + 7;
        } else {
            char *proto = strstr(p, "<proto>");
            name = proto ? strstr(proto, "<name>") : NULL;
            cr_assert_not_null(name, "a <command> without a name near byte %ld", (long)(p - x));
            name += 6;
        }
        size_t n = strcspn(name, "\"<");
        char nm[256];
        snprintf(nm, sizeof nm, "%.*s", (int)n, name);
        cr_assert(listed(l, nm, n), "%s of %s is not in %s", nm, xml, path);
        char skip[300];
        snprintf(skip, sizeof skip, "\n%s skipped ", nm);
        n_skipped += strstr(l, skip) != NULL;
        n_cmds++;
    }
    cr_assert_gt(n_cmds, 500, "only %llu commands found in %s", (unsigned long long)n_cmds, xml);
    /* what is skipped is outside the "vulkan" API, never a gap */
    for (char *p = l; (p = strstr(p, " skipped \"")); p++) {
        char *eol = strchr(p, '\n');
        cr_assert(eol, "%s: unterminated line", path);
        *eol = 0;
        cr_assert(strstr(p, "disabled") || strstr(p, "vulkansc") || strstr(p, "not required"),
                  "skipped without a reason: %s", p);
        *eol = '\n';
    }
    cr_assert_lt(n_skipped * 5, n_cmds, "%llu of %llu commands skipped",
                 (unsigned long long)n_skipped, (unsigned long long)n_cmds);
    free(x);
    free(l);
}

/* VK_ERROR_DEVICE_LOST (made by the test layer below ours), then the program dies at once
 * without closing anything: the trace still holds every op before the loss, because the layer
 * wrote it out when the driver said so. */
Test(capture, device_lost_writes_the_trace)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char cmd[8192], out[4096], err[8192], trace[] = "/tmp/reprise-test-XXXXXX.sbt";
    int fd = mkstemps(trace, 4);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd,
             "VK_ADD_LAYER_PATH=%s/tests/vk VK_INSTANCE_LAYERS=VK_LAYER_REPRISE_fakecmd "
             "REPRISE_FAKECMD_LOSE_WAIT=3 %s capture -o %s -- %s/tests/vk/vk_unmodelled lost",
             build, bin, trace, build);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 3, "%s", err);
    cr_assert_not_null(strstr(out, "round 3: device lost"), "%s", out);
    cr_assert_not_null(strstr(err, "VK_ERROR_DEVICE_LOST"), "%s", err);
    sbt_reader *r = NULL;
    cr_assert_eq(sbt_reader_open(trace, NULL, &r), 0, "%s", sbt_errmsg());
    cr_assert(!sbt_reader_info(r)->writer_finished);
    const char *why = sbt_reader_meta_get(r, "capture.flush_reason");
    cr_assert(why && strstr(why, "vkWaitForFences returned VK_ERROR_DEVICE_LOST"),
              "capture.flush_reason: %s", why ? why : "(none)");
    struct sbt_stats *st = NULL;
    cr_assert_eq(sbt_stats_compute(r, NULL, &st), 0, "%s", sbt_errmsg());
    /* all three dispatches were submitted before the wait that failed */
    cr_assert_eq(st->by_kind[SBT_OP_KERNEL], 3);
    cr_assert_eq(st->by_kind[SBT_OP_SUBMIT], 3);
    sbt_stats_free(st);
    sbt_reader_close(r);
    unlink(trace);
}

/* ========================================================================================== */
/* Jobs: identity of each process and its clock (FORMAT.md 3.5)                              */
/* ========================================================================================== */

/* mpirun is installed and can start a process here (a container without network interfaces
 * may refuse to). */
static int have_mpirun(void)
{
    return system("command -v mpirun >/dev/null 2>&1 && mpirun --allow-run-as-root "
                  "--oversubscribe -np 1 true >/dev/null 2>&1") == 0;
}

/* The traces of the manifest dir/t.procs, opened, in rank order (job.rank must be 0..n-1). */
static int job_traces(const char *dir, sbt_reader **r, int max)
{
    char paths[16][512];
    int n = manifest_traces(dir, paths, 16);
    cr_assert_leq(n, max);
    for (int i = 0; i < n; i++)
        r[i] = NULL;
    for (int i = 0; i < n; i++) {
        sbt_reader *t;
        cr_assert_eq(sbt_reader_open(paths[i], NULL, &t), 0, "%s: %s", paths[i], sbt_errmsg());
        const char *rank = sbt_reader_meta_get(t, "job.rank");
        cr_assert_not_null(rank, "%s has no job.rank", paths[i]);
        int k = atoi(rank);
        cr_assert(k >= 0 && k < n && !r[k], "%s: rank %s twice or out of 0..%d", paths[i], rank,
                  n - 1);
        r[k] = t;
    }
    return n;
}

/* The clock pairs of a trace: the first is "start", the last "end", each "MONO REAL ERR WHY". */
static void expect_clock_pairs(sbt_reader *r)
{
    const char *first = sbt_reader_meta_get(r, "clock.sync.0");
    cr_assert_not_null(first, "no clock.sync.0");
    cr_expect_not_null(strstr(first, " start"), "%s", first);
    struct sbt_clock_pair *p;
    uint32_t n;
    cr_assert_eq(sbt_clock_pairs(r, &p, &n), 0, "%s", sbt_errmsg());
    cr_expect_geq(n, 2, "a pair at the start and one at the end");
    char key[32];
    snprintf(key, sizeof key, "clock.sync.%u", n - 1);
    cr_expect_not_null(strstr(sbt_reader_meta_get(r, key), " end"), "%s",
                       sbt_reader_meta_get(r, key));
    for (uint32_t i = 0; i < n; i++) {
        cr_expect(p[i].err_ns >= 1 && p[i].err_ns < 10000000, "pair %u: err %" PRIu64, i,
                  p[i].err_ns);
        cr_expect(i == 0 || p[i].mono_ns > p[i - 1].mono_ns);
    }
    free(p);
}

/* `mpirun -np 2` under reprise capture: each rank's trace says which rank it is (Open MPI's
 * variables), of how many, on which host, under one job id that the ranks share although
 * mpirun itself never loads the layer; each has its clock pairs. Before: no job.* keys. */
Test(capture, mpirun_ranks_record_their_identity)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    if (!have_mpirun())
        cr_skip_test("no working mpirun (Debian: openmpi-bin, scripts/deps.sh)");
    char dir[] = "/tmp/reprise-test-mpi-XXXXXX", cmd[8192], out[8192], err[8192];
    cr_assert(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "cd %s && %s capture -o t.sbt -- mpirun --allow-run-as-root --oversubscribe -np 2 "
             "%s/tests/vk/vk_compute",
             dir, bin, build);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
    sbt_reader *r[2];
    cr_assert_eq(job_traces(dir, r, 2), 2, "%s", err);
    char host[256] = "";
    gethostname(host, sizeof host);
    for (int k = 0; k < 2; k++) {
        cr_expect_str_eq(sbt_reader_meta_get(r[k], "job.rank_from"), "openmpi");
        cr_expect_str_eq(sbt_reader_meta_get(r[k], "job.world_size"), "2");
        cr_expect_not_null(sbt_reader_meta_get(r[k], "job.local_rank"));
        cr_expect_str_eq(sbt_reader_meta_get(r[k], "host"), host);
        cr_expect_not_null(strstr(sbt_reader_meta_get(r[k], "argv"), "vk_compute"));
        const char *id = sbt_reader_meta_get(r[k], "job.id");
        cr_assert_not_null(id);
        cr_expect_gt(strlen(id), 3);
        expect_clock_pairs(r[k]);
    }
    cr_expect_str_eq(sbt_reader_meta_get(r[0], "job.id"), sbt_reader_meta_get(r[1], "job.id"),
                     "one job id for the ranks of one capture");
    cr_expect_str_neq(sbt_reader_meta_get(r[0], "capture.pid"),
                      sbt_reader_meta_get(r[1], "capture.pid"));
    for (int k = 0; k < 2; k++)
        sbt_reader_close(r[k]);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* Which variable gives the rank: REPRISE_RANK before the launchers', a rank variable that is
 * not a number is named and skipped for the next launcher's; REPRISE_JOB is the job id, and
 * without it the launcher's (Slurm's job id here). */
Test(capture, rank_variables_and_a_given_job_id)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    static const struct {
        const char *env, *rank, *world, *from, *ignored;
    } cases[] = {
        {"REPRISE_RANK=5 REPRISE_WORLD_SIZE=9 OMPI_COMM_WORLD_RANK=1", "5", "9", "REPRISE_RANK",
         NULL},
        {"RANK=abc WORLD_SIZE=4 SLURM_PROCID=3 SLURM_NTASKS=8", "3", "8", "slurm", "RANK"},
        {"RANK=2 WORLD_SIZE=4 LOCAL_RANK=0", "2", "4", "torchrun", NULL},
        {"PMI_RANK=7 PMI_SIZE=12", "7", "12", "pmi", NULL},
    };
    char dir[] = "/tmp/reprise-test-rank-XXXXXX", cmd[8192], out[8192], err[8192];
    cr_assert(mkdtemp(dir));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd,
                 "cd %s && env -u REPRISE_JOB %s REPRISE_JOB=job-%zu %s capture -o t.sbt -- "
                 "%s/tests/vk/vk_compute",
                 dir, cases[i].env, i, bin, build);
        cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
        char t[600], id[32];
        snprintf(t, sizeof t, "%s/t.sbt", dir);
        sbt_reader *r;
        cr_assert_eq(sbt_reader_open(t, NULL, &r), 0, "%s", sbt_errmsg());
        cr_expect_str_eq(sbt_reader_meta_get(r, "job.rank"), cases[i].rank, "%s", cases[i].env);
        cr_expect_str_eq(sbt_reader_meta_get(r, "job.world_size"), cases[i].world, "%s",
                         cases[i].env);
        cr_expect_str_eq(sbt_reader_meta_get(r, "job.rank_from"), cases[i].from, "%s",
                         cases[i].env);
        const char *ign = sbt_reader_meta_get(r, "job.rank_ignored");
        if (cases[i].ignored)
            cr_expect(ign && !strcmp(ign, cases[i].ignored), "%s: ignored %s", cases[i].env,
                      ign ? ign : "(none)");
        else
            cr_expect_null(ign, "%s", cases[i].env);
        snprintf(id, sizeof id, "job-%zu", i);
        cr_expect_str_eq(sbt_reader_meta_get(r, "job.id"), id);
        sbt_reader_close(r);
    }
    /* without REPRISE_JOB, the launcher's job id */
    snprintf(cmd, sizeof cmd,
             "cd %s && env -u REPRISE_JOB SLURM_PROCID=2 SLURM_NTASKS=4 SLURM_JOB_ID=9876 %s "
             "capture -o t.sbt -- %s/tests/vk/vk_compute",
             dir, bin, build);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
    char t[600];
    snprintf(t, sizeof t, "%s/t.sbt", dir);
    sbt_reader *r;
    cr_assert_eq(sbt_reader_open(t, NULL, &r), 0, "%s", sbt_errmsg());
    cr_expect_str_eq(sbt_reader_meta_get(r, "job.id"), "slurm-9876");
    cr_expect_str_eq(sbt_reader_meta_get(r, "job.rank"), "2");
    sbt_reader_close(r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* A program that forks its workers (tests/vk/vk_fork): each worker's trace has the rank it set,
 * all share the job id the first of them made. Worker 1's capture records its monotonic clock
 * 500 s ahead, as on another machine: putting the traces on one axis through their clock pairs
 * recovers where its ops really were (the workers share this machine's monotonic clock, so
 * the truth is known) within the bound the fits state. Aligning by the monotonic clock, as for
 * processes of one host, would be 500 s off. */
Test(capture, fork_workers_and_a_clock_500s_off_are_aligned_within_the_bound)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    const uint64_t shift = 500000000000ull;
    char dir[] = "/tmp/reprise-test-fork-XXXXXX", cmd[8192], out[8192], err[8192];
    cr_assert(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "cd %s && env -u REPRISE_JOB VK_FORK_SHIFT=1:%" PRIu64
             " %s capture -o t.sbt -- %s/tests/vk/vk_fork 3 4",
             dir, shift, bin, build);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
    sbt_reader *r[3];
    cr_assert_eq(job_traces(dir, r, 3), 3, "%s", err);
    double real[3], bound[3];
    uint64_t mono[3];
    for (int k = 0; k < 3; k++) {
        cr_expect_str_eq(sbt_reader_meta_get(r[k], "job.rank_from"), "REPRISE_RANK");
        cr_expect_str_eq(sbt_reader_meta_get(r[k], "job.world_size"), "3");
        cr_expect_str_eq(sbt_reader_meta_get(r[k], "job.id"), sbt_reader_meta_get(r[0], "job.id"));
        cr_expect(sbt_reader_info(r[k])->complete);
        expect_clock_pairs(r[k]);
        struct sbt_clock_fit f;
        cr_assert_eq(sbt_clock_fit_trace(r[k], &f), 0, "%s", sbt_errmsg());
        cr_assert_eq(f.source, SBT_CLOCK_PAIRS);
        uint64_t t = sbt_reader_info(r[k])->t_min;
        double off;
        sbt_clock_map(&f, t, &off);
        real[k] = (double)(int64_t)(f.real_base - 1700000000000000000ull) + off;
        bound[k] = sbt_clock_bound(&f, t);
        /* the truth: this machine's monotonic clock at the first op */
        mono[k] = strtoull(sbt_reader_meta_get(r[k], "clock.epoch_monotonic_ns"), NULL, 10) + t -
                  (k == 1 ? shift : 0);
        cr_expect_lt(bound[k], 1e6, "rank %d: bound %.0f ns", k, bound[k]);
    }
    for (int k = 1; k < 3; k++) {
        double est = real[k] - real[0];
        double truth = (double)(int64_t)(mono[k] - mono[0]);
        cr_expect(fabs(est - truth) <= bound[0] + bound[k] + 1000,
                  "rank %d vs 0: %.0f ns apart on the aligned axis, %.0f ns in truth (bounds %.0f "
                  "+ %.0f)",
                  k, est, truth, bound[0], bound[k]);
    }
    for (int k = 0; k < 3; k++)
        sbt_reader_close(r[k]);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* A process that starts using the GPU after the program `reprise capture` started has exited
 * (a daemonised worker) still belongs to the capture's job. Before: the capture CLI left the
 * job id to the capture libraries, which make it from the root's /proc entry, gone by then: the
 * late process got a job of its own. */
Test(capture, a_process_started_after_the_root_exited_shares_the_job)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char dir[] = "/tmp/reprise-test-late-XXXXXX", cmd[8192], out[8192], err[8192];
    cr_assert(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "cd %s && env -u REPRISE_JOB %s capture -o t.sbt -- sh -c '%s/tests/vk/vk_compute; "
             "(sleep 0.5; %s/tests/vk/vk_compute) & exit 0'",
             dir, bin, build, build);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
    char paths[8][512];
    cr_assert_eq(manifest_traces(dir, paths, 8), 2, "%s", err);
    char id[2][256];
    for (int i = 0; i < 2; i++) {
        sbt_reader *r;
        cr_assert_eq(sbt_reader_open(paths[i], NULL, &r), 0, "%s", sbt_errmsg());
        const char *v = sbt_reader_meta_get(r, "job.id");
        cr_assert_not_null(v, "%s", paths[i]);
        snprintf(id[i], sizeof id[i], "%s", v);
        sbt_reader_close(r);
    }
    cr_expect_str_eq(id[0], id[1], "one job for the capture's processes");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* A capture that runs for seconds records a clock pair at a flush about once a second, besides
 * the start and the end ones: a long capture's drift is measured along it. */
Test(capture, clock_pairs_at_flushes_once_a_second)
{
    if (!have_device())
        cr_skip_test("no Vulkan device with a compute queue here");
    char dir[] = "/tmp/reprise-test-pairs-XXXXXX", cmd[8192], out[8192], err[8192];
    cr_assert(mkdtemp(dir));
    /* one worker, dispatches waited for one by one: a few seconds of capture */
    snprintf(cmd, sizeof cmd, "cd %s && %s capture -o t.sbt -- %s/tests/vk/vk_fork 1 4000", dir,
             bin, build);
    cr_assert_eq(run(cmd, out, sizeof out, err, sizeof err), 0, "%s", err);
    sbt_reader *r[1];
    cr_assert_eq(job_traces(dir, r, 1), 1, "%s", err);
    struct sbt_clock_pair *p;
    uint32_t n;
    cr_assert_eq(sbt_clock_pairs(r[0], &p, &n), 0, "%s", sbt_errmsg());
    uint64_t span = p[n - 1].mono_ns - p[0].mono_ns;
    cr_expect_geq(n, 2 + span / 1000000000u - 1, "%u pairs over %.2f s", n, (double)span / 1e9);
    int flushes = 0;
    for (uint32_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "clock.sync.%u", i);
        flushes += strstr(sbt_reader_meta_get(r[0], key), " flush") != NULL;
        if (i)
            cr_expect_geq(p[i].mono_ns - p[i - 1].mono_ns, i + 1 < n ? 999000000u : 0u,
                          "pair %u: %" PRIu64 " ns after the previous (once a second)", i,
                          p[i].mono_ns - p[i - 1].mono_ns);
    }
    if (span > 1200000000u)
        cr_expect_geq(flushes, 1, "a run of %.2f s has a pair at a flush", (double)span / 1e9);
    free(p);
    sbt_reader_close(r[0]);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}
