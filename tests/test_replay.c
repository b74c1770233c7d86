/*
 * tests/test_replay.c — the replay engine and its Vulkan backend.
 *
 * engine: a fake backend (host memory; a "kernel" writes a hash of what it reads) runs
 * synthetic traces, so ranges, slices, errors, result files (and the regime they record) and
 * the refusal of incomplete traces and of graph errors are checked without a device.
 * vulkan: captures every tests/vk program with the layer (through `reprise capture`, so the
 * binary and layer of this build: REPRISE_BIN / REPRISE_BUILD, set by `make check`), replays
 * them on the first Vulkan device (lavapipe in CI) and compares with the capture; edits traces
 * with the writer (other memory-type layout, an unsupported command) and patches a blob byte.
 * Skipped, saying why, without a Vulkan device or without the build's binaries.
 */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

#include "format/sbt.h"
#include "format/sbt_vk.h"
#include "replay/replay.h"
#include "replay/replay_int.h"
#include "replay/vk/replay_vk_int.h"
#include "tests/testenv.h"

/* ========================================================================================== */
/* A fake backend                                                                             */
/* ========================================================================================== */

#define FAKE_RES 4096
struct fake {
    struct replay_bk_cb cb;
    uint8_t *mem[FAKE_RES];
    uint64_t cap[FAKE_RES]; /* bytes allocated, zeroed where never written */
    sbt_reader *r;
    uint64_t n_exec;
    const char *fail_name; /* ops with this name fail with fail_status (0: unsupported) */
    int fail_status;
    int fail_prepare; /* prepare fails: the device does not compile a pipeline */
};
static struct fake *fake_last;

static int fake_devices(struct replay_device_info *out, uint32_t max)
{
    if (max)
        snprintf(out[0].name, sizeof out[0].name, "fake");
    return 1;
}

static int fake_open(sbt_reader *r, const struct replay_bk_opts *o, const struct replay_bk_cb *cb,
                     struct replay_device_info *info, void **be)
{
    (void)o;
    struct fake *f = calloc(1, sizeof *f);
    cr_assert(f);
    f->cb = *cb;
    f->r = r;
    if (fake_last) {
        f->fail_name = fake_last->fail_name;
        f->fail_status = fake_last->fail_status;
        f->fail_prepare = fake_last->fail_prepare;
    }
    snprintf(info->name, sizeof info->name, "fake device");
    *be = f;
    fake_last = f;
    return 0;
}

static int fake_prepare(void *be)
{
    struct fake *f = be;
    return f->fail_prepare ? replay__fail(REPLAY_EDEVICE, "the driver does not compile kernel 1")
                           : 0;
}

static uint8_t *fake_bytes(struct fake *f, uint64_t res, uint64_t end)
{
    uint64_t i = res % FAKE_RES;
    if (f->cap[i] < end) { /* doubling: a restore page by page must not copy quadratically */
        uint64_t c = f->cap[i] * 2 > end ? f->cap[i] * 2 : end;
        uint8_t *m = realloc(f->mem[i], c);
        cr_assert(m, "out of memory for %" PRIu64 " bytes", c);
        memset(m + f->cap[i], 0, c - f->cap[i]);
        f->mem[i] = m;
        f->cap[i] = c;
    }
    return f->mem[i];
}

static int fake_exec(void *be, const struct replay_x *x)
{
    struct fake *f = be;
    const struct sbt_op *op = x->node->op;
    f->n_exec++;
    const char *name = sbt_reader_string(f->r, op->name);
    if (f->fail_name && name && !strcmp(name, f->fail_name))
        return f->fail_status ? replay__fail(f->fail_status, "device lost at %s", name)
                              : replay__fail(REPLAY_EUNSUPPORTED, "%s is not supported", name);
    /* outputs: a hash of every byte read, of the kernel and of the write's position */
    sbt_hasher *h;
    sbt_hasher_create(&h);
    for (uint32_t i = 0; i < op->n_access; i++) {
        const struct sbt_access *a = &op->access[i];
        if (a->mode & SBT_ACCESS_READ)
            sbt_hasher_update(h, fake_bytes(f, a->resource, a->offset + a->len) + a->offset,
                              a->len);
    }
    sbt_hasher_update(h, &op->kind, sizeof op->kind);
    sbt_hasher_update(h, &op->kernel, sizeof op->kernel);
    sbt_hash in = sbt_hasher_digest(h);
    sbt_hasher_destroy(h);
    const void *bytes[64] = {0};
    uint64_t len[64] = {0};
    uint32_t na = op->n_access < 64 ? op->n_access : 64;
    for (uint32_t i = 0; i < na; i++) {
        const struct sbt_access *a = &op->access[i];
        uint8_t *m = fake_bytes(f, a->resource, a->offset + a->len) + a->offset;
        if (a->mode & SBT_ACCESS_WRITE)
            for (uint64_t k = 0; k < a->len; k++)
                m[k] = (uint8_t)((in.lo >> (8 * (k % 8))) ^ (k / 8));
        if (((a->mode & SBT_ACCESS_WRITE) && (x->flags & REPLAY_X_OUTPUTS)) ||
            ((a->mode & SBT_ACCESS_READ) && (x->flags & REPLAY_X_READ))) {
            bytes[i] = m;
            len[i] = a->len;
        }
    }
    struct replay_done d = {.slot = x->slot,
                            .has_dev_time = 1,
                            .dev_begin = replay__now_ns(),
                            .dev_end = replay__now_ns() + 1,
                            .n_access = na,
                            .bytes = bytes,
                            .len = len};
    f->cb.done(f->cb.eng, &d);
    return 0;
}

static int fake_drain(void *be)
{
    (void)be;
    return 0;
}

static int fake_read(void *be, uint64_t res, uint64_t off, uint64_t len, void *dst)
{
    memcpy(dst, fake_bytes(be, res, off + len) + off, len);
    return 0;
}

static int fake_write(void *be, uint64_t res, uint64_t off, uint64_t len, const void *src)
{
    memcpy(fake_bytes(be, res, off + len) + off, src, len);
    return 0;
}

static void fake_reset(void *be)
{
    struct fake *f = be;
    for (int i = 0; i < FAKE_RES; i++) {
        free(f->mem[i]);
        f->mem[i] = NULL;
        f->cap[i] = 0;
    }
}

static void fake_close(void *be)
{
    if (!be)
        return;
    fake_reset(be);
    if (fake_last == be)
        fake_last = NULL;
    free(be);
}

static const struct replay_backend fake_backend = {
    .name = "fake",
    .api = SBT_API_SYNTH,
    .devices = fake_devices,
    .open = fake_open,
    .prepare = fake_prepare,
    .exec = fake_exec,
    .drain = fake_drain,
    .read = fake_read,
    .write = fake_write,
    .reset = fake_reset,
    .close = fake_close,
};

/* Collected per-op results: digest by seq. */
struct coll {
    uint64_t n;
    sbt_hash *dig;
    uint8_t *has, *untimed, *err;
};

static void coll_on_op(void *ctx, const struct replay_op *op)
{
    struct coll *c = ctx;
    if (op->seq >= c->n)
        return;
    c->has[op->seq] = (uint8_t)op->has_digest;
    c->dig[op->seq] = op->digest;
    c->untimed[op->seq] = (uint8_t)op->untimed;
    c->err[op->seq] = op->error != NULL;
}

static void coll_init(struct coll *c, uint64_t n)
{
    c->n = n;
    c->dig = calloc(n, sizeof *c->dig);
    c->has = calloc(n, 1);
    c->untimed = calloc(n, 1);
    c->err = calloc(n, 1);
    cr_assert(c->dig && c->has && c->untimed && c->err);
}

static void coll_free(struct coll *c)
{
    free(c->dig);
    free(c->has);
    free(c->untimed);
    free(c->err);
}

static char tmpdir[256];

static void make_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/reprise-test-replay-XXXXXX");
    cr_assert(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_expect(system(cmd) == 0);
}

TestSuite(engine, .init = make_tmp, .fini = rm_tmp);

static sbt_reader *gen_trace(const char *name, uint64_t n_ops)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    cr_assert_eq(sbt_gen_write(path, &SBT_GEN_OPTS(.n_ops = n_ops, .seed = 7), NULL, NULL), 0, "%s",
                 sbt_errmsg());
    sbt_reader *r;
    cr_assert_eq(sbt_reader_open(path, NULL, &r), 0, "%s", sbt_errmsg());
    return r;
}

Test(engine, full_replay_reports_every_op_and_writes_a_result)
{
    sbt_reader *r = gen_trace("g.sbt", 3000);
    char out[512];
    snprintf(out, sizeof out, "%s/res.sbt", tmpdir);
    struct coll c;
    coll_init(&c, 3000);
    struct replay_result res;
    int st = replay_run(r,
                        &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                     .out_path = out, .source_path = "g.sbt", .on_op = coll_on_op,
                                     .ctx = &c),
                        &res);
    cr_assert_eq(st, 0, "%s", replay_errmsg());
    cr_expect_eq(res.range_ops, sbt_reader_info(r)->n_ops);
    cr_expect_eq(res.n_errors, 0);
    cr_expect_gt(res.n_digests, 0);
    sbt_reader *rr;
    cr_assert_eq(sbt_reader_open(out, NULL, &rr), 0, "%s", sbt_errmsg());
    cr_expect_eq(sbt_reader_info(rr)->n_ops, sbt_reader_info(r)->n_ops, "same seq numbers");
    cr_expect_str_eq(sbt_reader_meta_get(rr, "replay.of"), "g.sbt");
    cr_expect_str_eq(sbt_reader_meta_get(rr, "replay.backend"), "fake");
    cr_expect_str_eq(sbt_reader_meta_get(rr, "replay.device"), "fake device");
    /* digests in the result are those reported */
    sbt_cursor *cu;
    const struct sbt_op *op;
    cr_assert_eq(sbt_cursor_open(rr, NULL, &cu), 0);
    uint64_t n_dig = 0;
    while (sbt_cursor_next(cu, &op) == 1)
        if (op->flags & SBT_OPF_DIGEST) {
            cr_expect(c.has[op->seq] && sbt_hash_eq(op->digest, c.dig[op->seq]), "op %" PRIu64,
                      op->seq);
            n_dig++;
        }
    cr_expect_eq(n_dig, res.n_digests);
    sbt_cursor_close(cu);
    sbt_reader_close(rr);
    replay_result_free(&res);
    coll_free(&c);
    sbt_reader_close(r);
}

Test(engine, range_outputs_equal_those_of_the_full_replay)
{
    sbt_reader *r = gen_trace("g.sbt", 5000);
    struct coll full, part;
    coll_init(&full, 5000);
    coll_init(&part, 5000);
    struct replay_result res;
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                         .on_op = coll_on_op, .ctx = &full),
                            &res),
                 0, "%s", replay_errmsg());
    replay_result_free(&res);
    struct sbt_range rg = {.has_seq = 1, .seq_begin = 2500, .seq_end = 2550};
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                         .range = &rg, .on_op = coll_on_op, .ctx = &part),
                            &res),
                 0, "%s", replay_errmsg());
    cr_expect_eq(res.range_ops, 50);
    cr_expect_lt(res.slice_ops, 2500, "fast-forward runs the slice, not everything before");
    cr_expect_gt(res.skipped_ops, 0);
    uint64_t compared = 0;
    for (uint64_t s = 2500; s < 2550; s++) {
        cr_expect(!part.untimed[s]);
        if (full.has[s]) {
            cr_expect(part.has[s] && sbt_hash_eq(part.dig[s], full.dig[s]),
                      "op %" PRIu64 " differs between the range and the full replay", s);
            compared++;
        }
    }
    cr_expect_gt(compared, 0);
    for (uint64_t s = 0; s < 2500; s++)
        cr_expect(!part.has[s] || part.untimed[s], "op %" PRIu64 " before the range", s);
    replay_result_free(&res);
    coll_free(&full);
    coll_free(&part);
    sbt_reader_close(r);
}

/* ---- snapshots, restores, trim ------------------------------------------------------------ */

static char *tmp_path(const char *name)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", tmpdir, name);
    return p[k];
}

/* Two allocations and three kernels (the fake backend writes what a hash of the inputs says):
 *   0 ALLOC 1 (256 KiB: 4 chunks)   1 ALLOC 2 (64 KiB)
 *   2 KERNEL reads 2, writes chunk 0 of 1          3 marker (snapshot A)
 *   4 KERNEL reads chunk 0 of 1, writes chunk 1    5 marker (snapshot B)
 *   6 KERNEL reads chunk 1 of 1, writes 2 */
static void write_chain(const char *path)
{
    sbt_writer *w;
    cr_assert_eq(sbt_writer_open(path, NULL, &w), 0);
    uint32_t dev, st, kn;
    struct sbt_device d = {.api = SBT_API_SYNTH};
    cr_assert_eq(sbt_writer_add_device(w, &d, &dev), 0);
    struct sbt_stream sm = {.device = dev, .kind = SBT_STREAM_QUEUE};
    cr_assert_eq(sbt_writer_add_stream(w, &sm, &st), 0);
    cr_assert_eq(sbt_writer_intern(w, "step", &kn), 0);
    const uint64_t K = 64 << 10;
    struct sbt_access acc[3][2] = {{{2, 0, K, SBT_ACCESS_READ}, {1, 0, K, SBT_ACCESS_WRITE}},
                                   {{1, 0, K, SBT_ACCESS_READ}, {1, K, K, SBT_ACCESS_WRITE}},
                                   {{1, K, K, SBT_ACCESS_READ}, {2, 0, K, SBT_ACCESS_WRITE}}};
    for (int i = 0; i < 7; i++) {
        struct sbt_op op = {.stream = st, .name = kn, .host_begin = 10 * i, .host_end = 10 * i + 5};
        if (i < 2) {
            op.kind = SBT_OP_ALLOC;
            op.flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES;
            op.resource = 1 + i;
            op.bytes = i ? K : 4 * K;
        } else if (i % 2) {
            op.kind = SBT_OP_MARKER;
        } else {
            op.kind = SBT_OP_KERNEL;
            op.n_access = 2;
            op.access = acc[i / 2 - 1];
        }
        cr_assert_eq(sbt_writer_add_op(w, &op, NULL), 0, "%s", sbt_errmsg());
    }
    cr_assert_eq(sbt_writer_close(w), 0);
}

Test(engine, snapshots_store_only_what_changed)
{
    write_chain(tmp_path("c.sbt"));
    sbt_reader *r;
    cr_assert_eq(sbt_reader_open(tmp_path("c.sbt"), NULL, &r), 0);
    static const uint64_t at[2] = {3, 5};
    struct replay_result res;
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .snapshot_at = at,
                                         .verify = REPLAY_VERIFY_OP, .runs = 2, .n_snapshot_at = 2,
                                         .snapshot_out = tmp_path("c.snap")),
                            &res),
                 0, "%s", replay_errmsg());
    const uint64_t K = 64 << 10;
    cr_expect_eq(res.n_snapshots, 2);
    /* A reads everything; B only the chunk kernel 4 wrote */
    cr_expect_eq(res.snapshot_read_bytes, 5 * K + K);
    /* blobs: a zero chunk (three of 1, all of 2), chunk 0 of 1 after A, chunk 1 after B */
    cr_expect_eq(res.snapshot_new_bytes, 3 * K);
    replay_result_free(&res);
    sbt_reader *sc;
    cr_assert_eq(replay_snapshots_open(r, tmp_path("c.snap"), &sc), 0, "%s", replay_errmsg());
    cr_expect_eq(sbt_reader_info(sc)->n_blobs, 3);
    struct sbt_state *a, *b;
    cr_assert_eq(sbt_reader_state(sc, 0, &a), 0);
    cr_assert_eq(sbt_reader_state(sc, 1, &b), 0);
    cr_expect_eq(a->seq, 3);
    cr_expect_eq(b->seq, 5);
    cr_assert_eq(a->n_alloc, 2);
    cr_assert_eq(b->n_alloc, 2);
    for (uint64_t k = 0; k < 4; k++)
        cr_expect_eq(sbt_hash_eq(a->alloc[0].hash[k], b->alloc[0].hash[k]), k != 1,
                     "chunk %" PRIu64 " of allocation 1", k);
    cr_expect(sbt_hash_eq(a->alloc[1].hash[0], b->alloc[1].hash[0]),
              "allocation 2 did not change: same blob");
    cr_expect(sbt_hash_eq(a->alloc[1].hash[0], a->alloc[0].hash[2]), "zero chunks are one blob");
    sbt_state_free(a);
    sbt_state_free(b);
    sbt_reader_close(sc);
    sbt_reader_close(r);
}

struct counted {
    struct coll c;
    uint64_t n_reported;
};

static void count_on_op(void *ctx, const struct replay_op *op)
{
    struct counted *k = ctx;
    k->n_reported++;
    coll_on_op(&k->c, op);
}

/* A full replay of g.sbt (verify op) writing snapshots every `every` ops into g.snap.sbt. */
static sbt_reader *full_with_snapshots(const char *name, uint64_t n, uint64_t every,
                                       struct coll *full)
{
    sbt_reader *r = gen_trace(name, n);
    coll_init(full, n);
    struct replay_result res;
    cr_assert_eq(
        replay_run(r,
                   &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                .runs = 2, /* a synthetic trace has no captured digest: the
                                              second run's outputs are the evidence that keeps
                                              the sidecar */
                                .snapshot_every_ops = every, .snapshot_out = tmp_path("g.snap.sbt"),
                                .on_op = coll_on_op, .ctx = full),
                   &res),
        0, "%s", replay_errmsg());
    cr_assert_gt(res.n_snapshots, 0);
    replay_result_free(&res);
    return r;
}

Test(engine, range_from_a_snapshot_equals_the_full_replay)
{
    struct coll full;
    sbt_reader *r = full_with_snapshots("g.sbt", 5000, 400, &full);
    sbt_reader *sc;
    cr_assert_eq(replay_snapshots_open(r, tmp_path("g.snap.sbt"), &sc), 0, "%s", replay_errmsg());
    struct sbt_range rg = {.has_seq = 1, .seq_begin = 2500, .seq_end = 2550};
    for (int with = 1; with >= 0; with--) { /* from the snapshot, then the slice as before */
        struct counted part = {0};
        coll_init(&part.c, 5000);
        struct replay_result res;
        cr_assert_eq(
            replay_run(r,
                       &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                    .range = &rg, .snapshots = with ? sc : NULL,
                                    .on_op = count_on_op, .ctx = &part),
                       &res),
            0, "%s", replay_errmsg());
        if (with) {
            cr_expect_leq(res.restore_seq, 2500);
            cr_expect_gt(res.restore_seq, 2000, "the latest snapshot before the range");
            cr_expect_gt(res.restore_bytes, 0);
            cr_expect_lt(res.slice_ops, 1000, "only what comes after the snapshot");
        } else {
            cr_expect_eq(res.restore_seq, UINT64_MAX, "fallback: no snapshot");
            cr_expect_eq(res.restore_bytes, 0);
        }
        /* results exist for the executed ops only */
        cr_expect_eq(part.n_reported, res.range_ops + res.slice_ops);
        uint64_t compared = 0;
        for (uint64_t q = 2500; q < 2550; q++)
            if (full.has[q]) {
                cr_expect(part.c.has[q] && sbt_hash_eq(part.c.dig[q], full.dig[q]),
                          "op %" PRIu64 " differs from the full replay (%s)", q,
                          with ? "snapshot" : "slice");
                compared++;
            }
        cr_expect_gt(compared, 0);
        replay_result_free(&res);
        coll_free(&part.c);
    }
    sbt_reader_close(sc);
    coll_free(&full);
    sbt_reader_close(r);
}

Test(engine, plan_says_what_a_range_replay_will_do)
{
    struct coll full;
    sbt_reader *r = full_with_snapshots("g.sbt", 5000, 400, &full);
    sbt_reader *sc;
    cr_assert_eq(replay_snapshots_open(r, tmp_path("g.snap.sbt"), &sc), 0, "%s", replay_errmsg());
    struct sbt_range rg = {.has_seq = 1, .seq_begin = 2500, .seq_end = 2550};
    struct replay_plan p;
    cr_assert_eq(replay_plan(r, &rg, sc, &p), 0, "%s", replay_errmsg());
    cr_expect(p.use_snapshot);
    cr_expect_leq(p.snapshot_seq, p.range_first);
    cr_expect_eq(p.range_first, 2500);
    cr_expect_gt(p.restore_bytes, 0);
    cr_expect_gt(p.restore_allocs, 0);
    cr_expect_lt(p.slice_ops, p.full_slice_ops);
    cr_expect_gt(p.n_snapshots, 5);
    struct sbt_range early = {.has_seq = 1, .seq_begin = 100, .seq_end = 150};
    cr_assert_eq(replay_plan(r, &early, sc, &p), 0, "%s", replay_errmsg());
    cr_expect(!p.use_snapshot);
    cr_expect(strstr(p.why, "no snapshot at or before op 100"), "%s", p.why);
    cr_expect_eq(p.slice_ops, p.full_slice_ops);
    cr_assert_eq(replay_plan(r, &rg, NULL, &p), 0);
    cr_expect(!p.use_snapshot);
    cr_expect_str_eq(p.why, "no sidecar of snapshots");
    sbt_reader_close(sc);
    coll_free(&full);
    sbt_reader_close(r);
}

Test(engine, a_damaged_or_foreign_sidecar_is_refused_with_where)
{
    struct coll full;
    sbt_reader *r = full_with_snapshots("g.sbt", 3000, 500, &full);
    coll_free(&full);
    /* another trace */
    char path[512];
    snprintf(path, sizeof path, "%s/o.sbt", tmpdir);
    cr_assert_eq(sbt_gen_write(path, &SBT_GEN_OPTS(.n_ops = 3000, .seed = 8), NULL, NULL), 0);
    sbt_reader *o, *sc;
    cr_assert_eq(sbt_reader_open(path, NULL, &o), 0);
    cr_expect_eq(replay_snapshots_open(o, tmp_path("g.snap.sbt"), &sc), SBT_ECORRUPT);
    cr_expect(strstr(replay_errmsg(), "g.snap.sbt: snapshots of another trace"), "%s",
              replay_errmsg());
    cr_expect_eq(replay_snapshots_open(o, path, &sc), SBT_ECORRUPT, "a trace is no sidecar");
    cr_expect(strstr(replay_errmsg(), "not a sidecar of snapshots"), "%s", replay_errmsg());
    sbt_reader_close(o);
    /* the CLI says so and exits 3 */
    const char *cli = getenv("REPRISE_BIN");
    if (!cli)
        cr_skip_test("REPRISE_BIN not set: run through `make check`");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' replay o.sbt --ops 1500:1550 --snapshots g.snap.sbt >out 2>&1",
             tmpdir, cli);
    int rc = system(cmd);
    cr_expect_eq(WEXITSTATUS(rc), 3);
    snprintf(cmd, sizeof cmd, "grep -q 'g.snap.sbt: snapshots of another trace' '%s/out'", tmpdir);
    cr_expect_eq(system(cmd), 0);
    /* a damaged state chunk: the payload CRC names the chunk's offset */
    sbt_reader *sc2;
    cr_assert_eq(replay_snapshots_open(r, tmp_path("g.snap.sbt"), &sc2), 0);
    uint64_t nc, off = 0;
    const struct sbt_chunk_info *ci = sbt_reader_chunks(sc2, &nc);
    for (uint64_t i = 0; i < nc; i++)
        if (ci[i].content & SBT_CHUNK_STATE)
            off = ci[i].offset; /* the last */
    sbt_reader_close(sc2);
    cr_assert(off != 0);
    FILE *f = fopen(tmp_path("g.snap.sbt"), "r+b");
    cr_assert(f);
    fseek(f, (long)off + 56 + 3, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, (long)off + 56 + 3, SEEK_SET);
    fputc(ch ^ 0x5a, f);
    fclose(f);
    cr_assert_eq(replay_snapshots_open(r, tmp_path("g.snap.sbt"), &sc2), 0);
    struct sbt_range rg = {.has_seq = 1, .seq_begin = 2990, .seq_end = 3000};
    struct replay_plan p;
    cr_expect_eq(replay_plan(r, &rg, sc2, &p), SBT_ECORRUPT);
    char want[128];
    snprintf(want, sizeof want, "chunk at offset %" PRIu64 ": payload CRC mismatch", off);
    cr_expect(strstr(replay_errmsg(), want) && strstr(replay_errmsg(), "g.snap.sbt"), "%s",
              replay_errmsg());
    sbt_reader_close(sc2);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' replay g.sbt --ops 2990:3000 >out 2>&1", tmpdir,
             cli);
    rc = system(cmd);
    cr_expect_eq(WEXITSTATUS(rc), 3, "the dry run finds the sidecar and refuses it");
    snprintf(cmd, sizeof cmd, "grep -q 'payload CRC mismatch' '%s/out'", tmpdir);
    cr_expect_eq(system(cmd), 0);
    sbt_reader_close(r);
}

/* Replays a trimmed trace on its own; every range op of it must equal the full replay's. */
static void trimmed_equals(const char *name, const struct coll *full, uint64_t a, uint64_t b,
                           uint32_t mode)
{
    sbt_reader *t;
    cr_assert_eq(sbt_reader_open(tmp_path(name), NULL, &t), 0, "%s", sbt_errmsg());
    const struct sbt_info *in = sbt_reader_info(t);
    cr_expect_eq(in->n_states, mode == REPLAY_TRIM_SLICE ? 0 : 1);
    cr_expect_eq(!!(in->required_features & SBT_FEATURE_INITIAL_STATE), mode != REPLAY_TRIM_SLICE);
    cr_expect_eq(in->seq_end, b, "the range's last op keeps its seq");
    struct coll part;
    coll_init(&part, b);
    struct replay_result res;
    cr_assert_eq(replay_run(t,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                         .on_op = coll_on_op, .ctx = &part),
                            &res),
                 0, "%s", replay_errmsg());
    cr_expect_eq(res.n_errors, 0, "%s", res.first_error_msg);
    uint64_t compared = 0;
    for (uint64_t q = a; q < b; q++)
        if (full->has[q]) {
            cr_expect(part.has[q] && sbt_hash_eq(part.dig[q], full->dig[q]),
                      "op %" PRIu64 " of the trimmed trace (mode %u) differs", q, mode);
            compared++;
        }
    cr_expect_gt(compared, 0);
    replay_result_free(&res);
    coll_free(&part);
    sbt_reader_close(t);
}

/* The first kernel op of r: its seq and name. */
static const char *first_kernel(sbt_reader *r, uint64_t *seq)
{
    sbt_cursor *cu;
    const struct sbt_op *op;
    const char *name = NULL;
    cr_assert_eq(sbt_cursor_open(r, NULL, &cu), 0);
    while (!name && sbt_cursor_next(cu, &op) == 1)
        if (op->kind == SBT_OP_KERNEL) {
            name = sbt_reader_string(r, op->name);
            *seq = op->seq;
        }
    sbt_cursor_close(cu);
    cr_assert(name);
    return name;
}

/* Snapshots rest only on a replay that verified: one that compared nothing, or whose ops
 * failed, leaves no sidecar; a sidecar that does not say where its bytes came from is refused;
 * a range replay's result says which snapshot it restored and where that came from. */
Test(engine, snapshots_come_only_from_a_replay_that_verified)
{
    sbt_reader *r = gen_trace("g.sbt", 3000);
    const char *sp = tmp_path("g.snap.sbt");
    struct replay_result res;
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                         .snapshot_every_ops = 500, .snapshot_out = sp),
                            &res),
                 0, "%s", replay_errmsg());
    cr_expect_gt(res.n_snapshots, 0);
    cr_expect(strstr(res.snapshots_dropped, "not verified: nothing compared") ==
                  res.snapshots_dropped,
              "%s", res.snapshots_dropped);
    cr_expect_neq(access(sp, F_OK), 0, "a sidecar of a replay that compared nothing was kept");
    replay_result_free(&res);
    /* op errors: the same, with runs that agree */
    uint64_t first;
    static struct fake cfg;
    cfg.fail_name = first_kernel(r, &first);
    fake_last = &cfg;
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                         .runs = 2, .snapshot_every_ops = 500, .snapshot_out = sp),
                            &res),
                 0, "%s", replay_errmsg());
    fake_last = NULL;
    cr_expect(strstr(res.snapshots_dropped, "not replayable: ") == res.snapshots_dropped, "%s",
              res.snapshots_dropped);
    cr_expect_neq(access(sp, F_OK), 0, "a sidecar of a replay with op errors was kept");
    replay_result_free(&res);
    /* verified: kept, with its provenance; a range replay says what it restored */
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                         .runs = 2, .snapshot_every_ops = 500, .snapshot_out = sp),
                            &res),
                 0, "%s", replay_errmsg());
    cr_expect_str_empty(res.snapshots_dropped);
    replay_result_free(&res);
    sbt_reader *sc;
    cr_assert_eq(replay_snapshots_open(r, sp, &sc), 0, "%s", replay_errmsg());
    cr_expect_str_eq(sbt_reader_meta_get(sc, "snapshot.device"), "fake device");
    const char *v = sbt_reader_meta_get(sc, "snapshot.verified");
    cr_expect(v && strstr(v, "verified: 0 output(s) compared with the capture, ") == v, "%s",
              v ? v : "(none)");
    struct sbt_range rg = {.has_seq = 1, .seq_begin = 2000, .seq_end = 2050};
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .range = &rg,
                                         .snapshots = sc, .out_path = tmp_path("res.sbt")),
                            &res),
                 0, "%s", replay_errmsg());
    cr_expect_neq(res.restore_seq, UINT64_MAX);
    sbt_reader *rr;
    cr_assert_eq(sbt_reader_open(tmp_path("res.sbt"), NULL, &rr), 0, "%s", sbt_errmsg());
    const char *from = sbt_reader_meta_get(rr, "replay.restored_from");
    cr_expect(from && strstr(from, "snapshot: device fake device") && strstr(from, v), "%s",
              from ? from : "(no replay.restored_from)");
    sbt_reader_close(rr);
    replay_result_free(&res);
    sbt_reader_close(sc);
    /* a sidecar of this trace that does not say where its bytes came from */
    sbt_writer *w;
    char hex[33];
    cr_assert_eq(sbt_writer_open(sp, NULL, &w), 0);
    cr_assert_eq(sbt_writer_meta(w, "snapshot.of", sbt_hash_hex(sbt_reader_fingerprint(r), hex)),
                 0);
    cr_assert_eq(sbt_writer_close(w), 0);
    cr_expect_eq(replay_snapshots_open(r, sp, &sc), SBT_ECORRUPT);
    cr_expect(strstr(replay_errmsg(), "g.snap.sbt: snapshots of unknown provenance"), "%s",
              replay_errmsg());
    sbt_reader_close(r);
}

Test(engine, trim_replays_on_its_own_to_the_same_outputs)
{
    struct coll full;
    sbt_reader *r = full_with_snapshots("g.sbt", 5000, 400, &full);
    sbt_reader *sc;
    cr_assert_eq(replay_snapshots_open(r, tmp_path("g.snap.sbt"), &sc), 0, "%s", replay_errmsg());
    struct sbt_range rg = {.has_seq = 1, .seq_begin = 2500, .seq_end = 2550};
    struct replay_trim_result tr;
    /* on a "device": the contents the range reads, read after restoring + the slice after */
    cr_assert_eq(replay_trim(r, &rg, sc, tmp_path("t1.sbt"),
                             &REPLAY_TRIM_OPTS(.backend_impl = &fake_backend), &tr),
                 0, "%s", replay_errmsg());
    cr_expect_eq(tr.mode, REPLAY_TRIM_DEVICE);
    cr_expect_eq(tr.state_seq, 2500);
    cr_expect_gt(tr.state_bytes, 0);
    cr_expect_eq(tr.range_ops, 50);
    cr_expect(strstr(tr.verified, "not verified: nothing compared") == tr.verified, "%s",
              tr.verified);
    trimmed_equals("t1.sbt", &full, 2500, 2550, REPLAY_TRIM_DEVICE);
    {
        sbt_reader *t;
        cr_assert_eq(sbt_reader_open(tmp_path("t1.sbt"), NULL, &t), 0);
        cr_expect_str_eq(sbt_reader_meta_get(t, "trim.device"), "fake device");
        cr_expect_str_eq(sbt_reader_meta_get(t, "trim.verified"), tr.verified);
        const char *from = sbt_reader_meta_get(t, "trim.restored_from");
        cr_expect(from && strstr(from, "snapshot: device fake device") &&
                      strstr(from, "that replay: verified: "),
                  "the snapshot the contents rest on: %s", from ? from : "(none)");
        sbt_reader_close(t);
    }
    /* no device: the snapshot's chunks, and the slice after it as ops */
    cr_assert_eq(replay_trim(r, &rg, sc, tmp_path("t2.sbt"),
                             &REPLAY_TRIM_OPTS(.backend_impl = &fake_backend, .no_device = 1), &tr),
                 0, "%s", replay_errmsg());
    cr_expect_eq(tr.mode, REPLAY_TRIM_SNAPSHOT);
    cr_expect_lt(tr.state_seq, 2500);
    cr_expect_str_eq(tr.why, "--no-device");
    trimmed_equals("t2.sbt", &full, 2500, 2550, REPLAY_TRIM_SNAPSHOT);
    {
        sbt_reader *t;
        cr_assert_eq(sbt_reader_open(tmp_path("t2.sbt"), NULL, &t), 0);
        cr_expect_str_eq(sbt_reader_meta_get(t, "trim.verified"),
                         sbt_reader_meta_get(sc, "snapshot.verified"),
                         "the snapshot's provenance is the trimmed trace's");
        sbt_reader_close(t);
    }
    /* no device and no snapshot: the slice's ops */
    cr_assert_eq(replay_trim(r, &rg, NULL, tmp_path("t3.sbt"),
                             &REPLAY_TRIM_OPTS(.backend_impl = &fake_backend, .no_device = 1), &tr),
                 0, "%s", replay_errmsg());
    cr_expect_eq(tr.mode, REPLAY_TRIM_SLICE);
    cr_expect_gt(tr.slice_ops, 0);
    cr_expect_eq(tr.state_seq, UINT64_MAX);
    trimmed_equals("t3.sbt", &full, 2500, 2550, REPLAY_TRIM_SLICE);
    sbt_reader_close(sc);
    coll_free(&full);
    sbt_reader_close(r);
}

Test(engine, op_errors_are_recorded_at_the_op_and_the_run_goes_on)
{
    sbt_reader *r = gen_trace("g.sbt", 2000);
    /* the gen trace names kernels; make the first kernel name fail */
    sbt_cursor *cu;
    const struct sbt_op *op;
    const char *name = NULL;
    uint64_t first = UINT64_MAX;
    cr_assert_eq(sbt_cursor_open(r, NULL, &cu), 0);
    while (sbt_cursor_next(cu, &op) == 1)
        if (op->kind == SBT_OP_KERNEL) {
            name = sbt_reader_string(r, op->name);
            first = op->seq;
            break;
        }
    sbt_cursor_close(cu);
    cr_assert(name);
    static struct fake cfg;
    cfg.fail_name = name;
    fake_last = &cfg;
    struct replay_result res;
    char out[512];
    snprintf(out, sizeof out, "%s/res.sbt", tmpdir);
    cr_assert_eq(replay_run(r, &REPLAY_OPTS(.backend_impl = &fake_backend, .out_path = out), &res),
                 0, "%s", replay_errmsg());
    fake_last = NULL;
    cr_expect_gt(res.n_errors, 0);
    cr_expect_eq(res.first_error, first);
    cr_expect_eq(res.first_error_status, REPLAY_EUNSUPPORTED);
    char want[256];
    snprintf(want, sizeof want, "op %" PRIu64 " (%s): %s is not supported", first, name, name);
    cr_expect_str_eq(res.first_error_msg, want);
    sbt_reader *rr;
    cr_assert_eq(sbt_reader_open(out, NULL, &rr), 0);
    struct sbt_range one = {.has_seq = 1, .seq_begin = first, .seq_end = first + 1};
    cr_assert_eq(sbt_cursor_open(rr, &one, &cu), 0);
    cr_assert_eq(sbt_cursor_next(cu, &op), 1);
    cr_expect(op->flags & SBT_OPF_ERROR);
    cr_expect_str_eq(sbt_reader_string(rr, op->error), want);
    sbt_cursor_close(cu);
    sbt_reader_close(rr);
    replay_result_free(&res);
    sbt_reader_close(r);
}

/* The device failing during a replay (lost, a failing call) is the run's error: the result is
 * written up to there and says so, no later run is made, and the verdict is a failure of the
 * device, not of the trace and not "environment". */
Test(engine, a_device_failure_ends_the_replay_with_a_result_and_a_failed_verdict)
{
    sbt_reader *r = gen_trace("g.sbt", 2000);
    uint64_t first = 0;
    static struct fake cfg;
    cfg.fail_name = first_kernel(r, &first);
    cfg.fail_status = REPLAY_EDEVICE;
    fake_last = &cfg;
    struct replay_result res;
    char out[512];
    snprintf(out, sizeof out, "%s/res.sbt", tmpdir);
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .out_path = out,
                                         .verify = REPLAY_VERIFY_OP, .runs = 3),
                            &res),
                 0, "%s", replay_errmsg());
    fake_last = NULL;
    cr_expect_eq(res.runs, 1, "no run after the device failed");
    cr_expect_eq(res.first_error, first);
    cr_expect_eq(res.first_error_status, REPLAY_EDEVICE);
    cr_expect(strstr(res.device_failed, "run 1: ") == res.device_failed, "%s", res.device_failed);
    cr_expect(strstr(res.device_failed, "device lost at") != NULL, "%s", res.device_failed);
    char why[1200];
    cr_expect_eq(replay_verdict(&res, REPLAY_VERIFY_OP, why, sizeof why),
                 REPLAY_VERDICT_DEVICE_FAILED);
    cr_expect(strstr(why, "device lost") != NULL, "%s", why);
    sbt_reader *rr;
    cr_assert_eq(sbt_reader_open(out, NULL, &rr), 0, "%s", sbt_errmsg());
    const char *m = sbt_reader_meta_get(rr, "replay.device_failed");
    cr_expect(m && strstr(m, "device lost"), "%s", m ? m : "(no replay.device_failed)");
    sbt_cursor *cu;
    const struct sbt_op *op;
    struct sbt_range one = {.has_seq = 1, .seq_begin = first, .seq_end = first + 1};
    cr_assert_eq(sbt_cursor_open(rr, &one, &cu), 0);
    cr_assert_eq(sbt_cursor_next(cu, &op), 1);
    cr_expect(op->flags & SBT_OPF_ERROR, "the failing op carries the error");
    sbt_cursor_close(cu);
    sbt_reader_close(rr);
    replay_result_free(&res);

    /* a pipeline the driver does not compile: the same, before the first op */
    memset(&cfg, 0, sizeof cfg);
    cfg.fail_prepare = 1;
    fake_last = &cfg;
    cr_assert_eq(replay_run(r, &REPLAY_OPTS(.backend_impl = &fake_backend, .out_path = out), &res),
                 0, "%s", replay_errmsg());
    fake_last = NULL;
    cr_expect(strstr(res.device_failed, "run 1: preparing: ") == res.device_failed, "%s",
              res.device_failed);
    cr_expect_eq(replay_verdict(&res, REPLAY_VERIFY_END, why, sizeof why),
                 REPLAY_VERDICT_DEVICE_FAILED);
    cr_assert_eq(sbt_reader_open(out, NULL, &rr), 0, "%s", sbt_errmsg());
    cr_expect(sbt_reader_meta_get(rr, "replay.device_failed") != NULL);
    sbt_reader_close(rr);
    replay_result_free(&res);
    sbt_reader_close(r);
}

/* No positive evidence, no pass: a replay that compared nothing is "not verified". */
Test(engine, a_replay_that_compared_nothing_is_not_verified)
{
    sbt_reader *r = gen_trace("g.sbt", 500); /* synthetic: no captured digest to compare */
    struct replay_result res;
    char why[1200];
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP),
                            &res),
                 0, "%s", replay_errmsg());
    cr_assert_gt(res.n_digests, 0);
    cr_assert_eq(res.n_compared, 0);
    cr_expect_eq(replay_verdict(&res, REPLAY_VERIFY_OP, why, sizeof why),
                 REPLAY_VERDICT_NOT_VERIFIED);
    cr_expect(strstr(why, "nothing compared") != NULL, "%s", why);
    replay_result_free(&res);
    /* two runs compare with each other: that is evidence */
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                         .runs = 2),
                            &res),
                 0, "%s", replay_errmsg());
    cr_expect_gt(res.n_run_compared, 0);
    cr_expect_eq(replay_verdict(&res, REPLAY_VERIFY_OP, why, sizeof why), REPLAY_VERDICT_VERIFIED,
                 "%s", why);
    cr_expect_eq(replay_verdict(&res, REPLAY_VERIFY_NONE, why, sizeof why),
                 REPLAY_VERDICT_NOT_VERIFIED,
                 "verify none says not verified, whatever was computed");
    replay_result_free(&res);
    sbt_reader_close(r);
}

/* A small synthetic trace by hand: alloc r1, a kernel writing it, another reading it into r2;
 * use_after_free: r1 freed before the reader; incomplete: the reason it is marked with. */
static sbt_reader *hand_trace(const char *name, int use_after_free, const char *incomplete)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    sbt_writer *w;
    cr_assert_eq(sbt_writer_open(path, NULL, &w), 0, "%s", sbt_errmsg());
    uint32_t dev, st, k;
    struct sbt_device d = {.api = SBT_API_SYNTH};
    cr_assert_eq(sbt_writer_add_device(w, &d, &dev), 0);
    struct sbt_stream s = {.device = dev, .kind = SBT_STREAM_QUEUE};
    cr_assert_eq(sbt_writer_add_stream(w, &s, &st), 0);
    struct sbt_kernel kk = {0};
    cr_assert_eq(sbt_writer_add_kernel(w, &kk, &k), 0);
    struct sbt_access wr1 = {1, 0, 64, SBT_ACCESS_WRITE};
    struct sbt_access rd1[] = {{1, 0, 64, SBT_ACCESS_READ}, {2, 0, 64, SBT_ACCESS_WRITE}};
    struct sbt_op ops[] = {
        {.kind = SBT_OP_ALLOC,
         .flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES,
         .resource = 1,
         .bytes = 64},
        {.kind = SBT_OP_ALLOC,
         .flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES,
         .resource = 2,
         .bytes = 64},
        {.kind = SBT_OP_KERNEL,
         .flags = SBT_OPF_KERNEL,
         .kernel = k,
         .n_access = 1,
         .access = &wr1},
        {.kind = SBT_OP_FREE, .flags = SBT_OPF_RESOURCE, .resource = 1},
        {.kind = SBT_OP_KERNEL, .flags = SBT_OPF_KERNEL, .kernel = k, .n_access = 2, .access = rd1},
    };
    for (uint32_t i = 0; i < 5; i++) {
        if (i == 3 && !use_after_free)
            continue;
        ops[i].stream = st;
        ops[i].host_begin = 1000 * (i + 1), ops[i].host_end = 1000 * (i + 1) + 10;
        cr_assert_eq(sbt_writer_add_op(w, &ops[i], NULL), 0, "%s", sbt_errmsg());
    }
    if (incomplete)
        cr_assert_eq(sbt_writer_mark_incomplete(w, incomplete), 0);
    cr_assert_eq(sbt_writer_close(w), 0, "%s", sbt_errmsg());
    sbt_reader *r;
    cr_assert_eq(sbt_reader_open(path, NULL, &r), 0, "%s", sbt_errmsg());
    return r;
}

Test(engine, an_incomplete_trace_is_refused_unless_allowed)
{
    sbt_reader *r = hand_trace("i.sbt", 0, "vkCmdCopyQueryPoolResults passed through unrecorded");
    struct replay_result res;
    int st = replay_run(r, &REPLAY_OPTS(.backend_impl = &fake_backend), &res);
    cr_expect_eq(st, REPLAY_EINCOMPLETE);
    cr_expect(strstr(replay_errmsg(), "incomplete: vkCmdCopyQueryPoolResults"), "%s",
              replay_errmsg());
    cr_expect_eq(fake_last ? fake_last->n_exec : 0, 0, "nothing reached the device");
    replay_result_free(&res);
    /* allowed: replayed, and the result says what its source lacked */
    char out[512];
    snprintf(out, sizeof out, "%s/res.sbt", tmpdir);
    st = replay_run(r,
                    &REPLAY_OPTS(.backend_impl = &fake_backend, .allow_incomplete = 1,
                                 .verify = REPLAY_VERIFY_OP, .out_path = out),
                    &res);
    cr_assert_eq(st, 0, "%s", replay_errmsg());
    cr_expect_eq(res.incomplete, 1);
    cr_expect(strstr(res.incomplete_why, "vkCmdCopyQueryPoolResults"));
    sbt_reader *rr;
    cr_assert_eq(sbt_reader_open(out, NULL, &rr), 0);
    cr_expect_eq(sbt_reader_info(rr)->complete, 0);
    const char *why = sbt_reader_string(rr, sbt_reader_info(rr)->incomplete_reason);
    cr_expect(why && strstr(why, "replay of an incomplete trace"), "%s", why ? why : "");
    sbt_reader_close(rr);
    replay_result_free(&res);
    sbt_reader_close(r);
    fake_last = NULL;
}

Test(engine, graph_errors_are_refused_before_the_device)
{
    sbt_reader *r = hand_trace("u.sbt", 1, NULL);
    struct replay_result res;
    fake_last = NULL;
    uint64_t ne = 0;
    cr_expect_eq(replay_preflight(r, NULL, &ne), REPLAY_EGRAPH);
    cr_expect_eq(ne, 1);
    int st = replay_run(r, &REPLAY_OPTS(.backend_impl = &fake_backend), &res);
    cr_expect_eq(st, REPLAY_EGRAPH);
    cr_expect(
        strstr(replay_errmsg(), "use-after-free: op 4 (kernel) reads resource 1 freed by op 3"),
        "%s", replay_errmsg());
    cr_expect(fake_last == NULL, "the backend was never opened");
    replay_result_free(&res);
    st = replay_run(r, &REPLAY_OPTS(.backend_impl = &fake_backend, .allow_incomplete = 1), &res);
    cr_expect_eq(st, 0, "%s", replay_errmsg());
    cr_expect_eq(res.n_graph_errors, 1);
    replay_result_free(&res);
    sbt_reader_close(r);
    /* the same without the free: nothing to say */
    r = hand_trace("ok.sbt", 0, NULL);
    cr_expect_eq(replay_preflight(r, NULL, &ne), 0);
    cr_expect_eq(ne, 0);
    sbt_reader_close(r);
    fake_last = NULL;
}

Test(engine, the_result_records_its_regime)
{
    sbt_reader *r = hand_trace("ok.sbt", 0, NULL);
    char out[512];
    snprintf(out, sizeof out, "%s/res.sbt", tmpdir);
    struct replay_result res;
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                         .timing = REPLAY_TIMING_NONE, .out_path = out),
                            &res),
                 0, "%s", replay_errmsg());
    sbt_reader *rr;
    cr_assert_eq(sbt_reader_open(out, NULL, &rr), 0);
    cr_expect_str_eq(sbt_reader_meta_get(rr, "replay.verify"), "op");
    cr_expect_str_eq(sbt_reader_meta_get(rr, "replay.timing"), "none");
    cr_expect_str_eq(sbt_reader_meta_get(rr, "replay.device"), "fake device");
    cr_expect(sbt_reader_meta_get(rr, "replay.driver") != NULL);
    const char *lp = getenv("LP_NUM_THREADS"), *env = sbt_reader_meta_get(rr, "replay.env");
    cr_assert(env != NULL);
    if (!lp && !getenv("CUDA_LAUNCH_BLOCKING"))
        cr_expect_str_eq(env, "none");
    else if (lp)
        cr_expect(strstr(env, "LP_NUM_THREADS="), "%s", env);
    cr_expect(sbt_reader_meta_get(rr, "replay.wall_ns") != NULL);
    cr_expect_eq(sbt_reader_info(rr)->complete, 1);
    sbt_reader_close(rr);
    replay_result_free(&res);
    sbt_reader_close(r);
    fake_last = NULL;
}

Test(engine, no_backend_for_a_synthetic_trace)
{
    sbt_reader *r = gen_trace("g.sbt", 100);
    struct replay_result res;
    int st = replay_run(r, &REPLAY_OPTS(), &res);
    cr_expect_eq(st, REPLAY_EUNSUPPORTED);
    cr_expect(strstr(replay_errmsg(), "use --mode dry-run"), "%s", replay_errmsg());
    replay_result_free(&res);
    sbt_reader_close(r);
}

/* ========================================================================================== */
/* Perturbed replays on the fake backend                                                      */
/* ========================================================================================== */

Test(engine, perturbation_kinds_parse_with_their_seeds)
{
    struct replay_perturb p;
    cr_expect_eq(replay_perturb_parse("split:42", &p), 0);
    cr_expect(p.kind == REPLAY_PERTURB_SPLIT && p.seed == 42);
    cr_expect_eq(replay_perturb_parse("poison", &p), 0, "the seed defaults to 1");
    cr_expect(p.kind == REPLAY_PERTURB_POISON && p.seed == 1);
    const char *bad[] = {"", "split:", "split:x", "split:1x", "shuffle:1", "poisonous", ":3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(replay_perturb_parse(bad[i], &p), SBT_EINVAL, "'%s' accepted", bad[i]);
        cr_expect(strstr(replay_errmsg(), "perturbation") != NULL, "%s", replay_errmsg());
    }
    cr_expect_str_eq(replay_perturb_class(REPLAY_PERTURB_ORDER), "race");
    cr_expect_str_eq(replay_perturb_class(REPLAY_PERTURB_SPLIT), "order-dependence");
    cr_expect_str_eq(replay_perturb_class(REPLAY_PERTURB_POISON), "uninitialised-read");
    /* the poison word is a signalling NaN: exponent all ones, quiet bit clear, payload != 0 */
    for (uint64_t seed = 0; seed < 64; seed++) {
        uint32_t w = replay_perturb_poison_word(seed);
        cr_expect((w & 0x7f800000u) == 0x7f800000u && !(w & 0x400000u) && (w & 0x3fffffu),
                  "seed %" PRIu64 ": 0x%08x", seed, w);
    }
}

/* split leaves whole the dispatches of a module that decorates something BuiltIn
 * NumWorkgroups (24), by OpDecorate (71) or OpMemberDecorate (72); a stream it cannot walk
 * (a word count of 0, or past the end) counts as reading it. */
Test(engine, spirv_scan_finds_the_num_workgroups_builtin)
{
#define HDR 0x07230203u, 0x00010000u, 0u, 16u, 0u
    const uint32_t deco[] = {HDR, 4u << 16 | 71, 5, 11, 24};
    const uint32_t member[] = {HDR, 5u << 16 | 72, 5, 0, 11, 24};
    const uint32_t other[] = {HDR, 4u << 16 | 71, 5, 11, 28, 4u << 16 | 71, 6, 30, 0};
    const uint32_t zero_wc[] = {HDR, 0u << 16 | 71, 5, 11, 24};
    const uint32_t past[] = {HDR, 9u << 16 | 71, 5, 11, 24};
#undef HDR
    cr_expect_eq(vkr_spirv_reads_numwg(deco, sizeof deco), 1);
    cr_expect_eq(vkr_spirv_reads_numwg(member, sizeof member), 1);
    cr_expect_eq(vkr_spirv_reads_numwg(other, sizeof other), 0, "GlobalInvocationId is not it");
    cr_expect_eq(vkr_spirv_reads_numwg(zero_wc, sizeof zero_wc), -1);
    cr_expect_eq(vkr_spirv_reads_numwg(past, sizeof past), -1);
    /* the glslang output of the test shaders, where built */
    const char *b = getenv("REPRISE_BUILD");
    const char *names[] = {"numwg.spv", "orderdep.spv"};
    for (int i = 0; b && i < 2; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/vk/%s", b, names[i]);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        static uint8_t code[1 << 16];
        size_t n = fread(code, 1, sizeof code, f);
        fclose(f);
        cr_expect_eq(vkr_check_spirv(code, n), 0, "%s", replay_errmsg());
        cr_expect_eq(vkr_spirv_reads_numwg(code, n), i == 0, "%s", names[i]);
    }
}

/* Every op's digest of a replay of r (on the fake backend) with perturbation p into dig. */
static void replay_digests(sbt_reader *r, struct replay_perturb p, struct coll *c,
                           struct replay_result *res)
{
    int st = replay_run(r,
                        &REPLAY_OPTS(.backend_impl = &fake_backend, .verify = REPLAY_VERIFY_OP,
                                     .on_op = coll_on_op, .ctx = c, .perturb = p),
                        res);
    cr_assert_eq(st, 0, "%s", replay_errmsg());
}

/* The fake kernel writes a hash of what it read: an op run before one whose outputs it reads
 * (an edge not kept) changes its digest. order:S must move ops (across streams and host
 * threads) and keep every digest; the same seed must move them the same way. */
Test(engine, order_perturbation_moves_ops_and_keeps_every_edge)
{
    sbt_reader *r = gen_trace("g.sbt", 3000);
    struct coll plain, a, b;
    coll_init(&plain, 3000);
    coll_init(&a, 3000);
    coll_init(&b, 3000);
    struct replay_result res;
    replay_digests(r, (struct replay_perturb){0}, &plain, &res);
    cr_expect_str_eq(res.perturb, "");
    replay_result_free(&res);
    replay_digests(r, (struct replay_perturb){REPLAY_PERTURB_ORDER, 5}, &a, &res);
    cr_expect_str_eq(res.perturb, "order:5");
    uint64_t moved = strtoull(res.perturb_what, NULL, 10);
    cr_expect_gt(moved, 100, "ops run out of the graph's order: %s", res.perturb_what);
    cr_expect_eq(res.n_errors, 0, "%s", res.first_error_msg);
    replay_result_free(&res);
    replay_digests(r, (struct replay_perturb){REPLAY_PERTURB_ORDER, 5}, &b, &res);
    cr_expect_eq(strtoull(res.perturb_what, NULL, 10), moved, "the same seed, the same order");
    replay_result_free(&res);
    uint64_t n = 0;
    for (uint64_t i = 0; i < 3000; i++) {
        if (!plain.has[i])
            continue;
        n++;
        cr_expect(a.has[i] && sbt_hash_eq(a.dig[i], plain.dig[i]), "op %" PRIu64 " differs", i);
        cr_expect(b.has[i] && sbt_hash_eq(b.dig[i], a.dig[i]), "op %" PRIu64 " not reproduced", i);
    }
    cr_expect_gt(n, 100);
    coll_free(&plain);
    coll_free(&a);
    coll_free(&b);
    sbt_reader_close(r);
}

/* What a perturbed replay cannot be combined with, or this backend cannot do, is refused
 * naming it. */
Test(engine, perturbations_a_backend_cannot_apply_are_refused)
{
    sbt_reader *r = gen_trace("g.sbt", 300);
    struct replay_result res;
    struct sbt_range rg = {.has_seq = 1, .seq_begin = 10, .seq_end = 20};
    struct {
        struct replay_perturb p;
        const struct sbt_range *range;
        int st;
        const char *msg;
    } c[] = {
        {{REPLAY_PERTURB_DECLARED, 1}, &rg, SBT_EINVAL, "runs the whole trace"},
        {{REPLAY_PERTURB_SPLIT, 1}, NULL, REPLAY_EUNSUPPORTED, "vkCmdDispatchBase"},
        {{REPLAY_PERTURB_THREADS, 1}, NULL, REPLAY_EUNSUPPORTED, "thread-count knob"},
        {{REPLAY_PERTURB_ORDER, 1}, &rg, SBT_EINVAL, "runs the whole trace"},
        {{9, 1}, NULL, SBT_EINVAL, "unknown"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int st = replay_run(
            r, &REPLAY_OPTS(.backend_impl = &fake_backend, .perturb = c[i].p, .range = c[i].range),
            &res);
        cr_expect_eq(st, c[i].st, "case %zu: %d %s", i, st, replay_errmsg());
        cr_expect(strstr(replay_errmsg(), c[i].msg) != NULL, "case %zu: %s", i, replay_errmsg());
        replay_result_free(&res);
    }
    sbt_reader_close(r);
}

/* ========================================================================================== */
/* Vulkan, on lavapipe                                                                        */
/* ========================================================================================== */

static const char *bin, *build;

static void vk_setup(void)
{
    make_tmp();
    bin = getenv("REPRISE_BIN");
    build = getenv("REPRISE_BUILD");
}

TestSuite(vulkan, .init = vk_setup, .fini = rm_tmp, .timeout = 300);

static void need_vulkan(void)
{
    if (!bin || !build)
        cr_skip_test("REPRISE_BIN / REPRISE_BUILD not set: run through `make check`");
    struct replay_device_info d[4];
    if (replay_devices(SBT_API_VULKAN, d, 4) <= 0)
        cr_skip_test("no Vulkan device: %s", replay_errmsg());
}

/* Captures build/tests/vk/<prog> [args] with --digests into tmpdir/<out>. */
static void capture(const char *prog, const char *args, const char *out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' capture --digests -o '%s' -- "
             "'%s/tests/vk/%s' %s >/dev/null 2>&1",
             tmpdir, bin, out, build, prog, args ? args : "");
    cr_assert_eq(system(cmd), 0, "capture of %s failed: %s", prog, cmd);
}

static sbt_reader *open_tmp(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    sbt_reader *r;
    cr_assert_eq(sbt_reader_open(path, NULL, &r), 0, "%s", sbt_errmsg());
    return r;
}

struct vkprog { /* arrays, not pointers: Criterion copies parameters into another process */
    char prog[32], args[16];
};

ParameterizedTestParameters(vulkan, programs_replay_with_their_own_outputs)
{
    static struct vkprog p[] = {
        {"vk_compute", ""},   // submits on two queues, events, indirect, ...
        {"vk_threads", ""},   // several host threads
        {"vk_bench", "data"}, // 64 MiB host writes and reads
        {"vk_images", ""},    // images: descriptors, copies, blits, clears, linear host I/O
    };
    return cr_make_param_array(struct vkprog, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct vkprog *p, vulkan, programs_replay_with_their_own_outputs)
{
    need_vulkan();
    char exe[1024];
    snprintf(exe, sizeof exe, "%s/tests/vk/%s", build, p->prog);
    if (access(exe, X_OK))
        cr_skip_test("%s not built", exe);
    capture(p->prog, p->args, "t.sbt");
    sbt_reader *r = open_tmp("t.sbt");
    char dump[512];
    snprintf(dump, sizeof dump, "%s/dump", tmpdir);
    struct replay_result res;
    int st = replay_run(r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP, .dump_dir = dump), &res);
    cr_assert_eq(st, 0, "%s", replay_errmsg());
    cr_expect_eq(res.n_errors, 0, "%s", res.first_error_msg);
    cr_expect_gt(res.n_compared, 0, "the capture's read-backs are compared");
    cr_expect_eq(res.n_mismatch, 0, "first mismatch at op %" PRIu64, res.first_mismatch);
    cr_expect_gt(res.n_dumped, 0);
    replay_result_free(&res);
    sbt_reader_close(r);
}

/* Push descriptors start undefined, immutable samplers too: `vk_images unpushed` never pushes
 * the immutable sampler its shader samples with (a bug this program had; lavapipe used the
 * immutable sampler, NVIDIA's driver another: the H200 gave another result than replay). The
 * trace must not fill in what the program never set: replay says which descriptor is missing
 * instead of replaying a program that never ran. */
Test(vulkan, unpushed_immutable_sampler_is_missing_not_filled_in)
{
    need_vulkan();
    capture("vk_images", "exact unpushed", "t.sbt");
    sbt_reader *r = open_tmp("t.sbt");
    struct replay_result res;
    int st = replay_run(r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP), &res);
    cr_assert_eq(st, 0, "%s", replay_errmsg());
    cr_assert_gt(res.n_errors, 0, "the dispatches that sample with it replayed");
    cr_expect(strstr(res.first_error_msg, "set 0 binding 3") &&
                  strstr(res.first_error_msg, "unwritten"),
              "%s", res.first_error_msg);
    replay_result_free(&res);
    sbt_reader_close(r);
}

/* Upload rings (tests/vk/vk_ring, issue 14): the host writes next to device output that is
 * still being written, in the same page, from one or several threads, with and without
 * flushes, in device output itself once it is final, through vkMapMemory, vkMapMemory2 and
 * its own imported pages, with submissions chained by semaphores (issue 21: before, lavapipe's
 * device was waited for only when a submission waited for nothing, and all 32 differed);
 * captured (without --digests: the device must still be running
 * while the host writes) with each way of finding host writes, every read-back of the program
 * must replay bit for bit. */
struct ringcase { /* arrays: Criterion copies parameters into another process */
    char args[64], env[96];
    int mesa25; /* needs Mesa 25's lavapipe (VK_KHR_map_memory2) */
};

ParameterizedTestParameters(vulkan, upload_rings_replay_every_read_back)
{
#define NOWAIT "REPRISE_CPU_DEVICE_WAIT=0 " /* the device runs while the host writes */
    static struct ringcase c[] = {
        {"ring", "", 0},                                   // the ring of issue 14
        {"ring", NOWAIT, 0},                               // ... while the device runs
        {"ring --threads 4", NOWAIT, 0},                   // host writes from 4 threads
        {"ring --flush", NOWAIT, 0},                       // flushed
        {"ring --size 16384", NOWAIT, 0},                  // whole pages
        {"chain", NOWAIT, 0},                              // host edits device output
        {"chain --size 16384", NOWAIT, 0},                 // ... in whole pages
        {"ring --wide", "", 0},                            // may-write covers the host's
        {"ring --wide --threads 3", "", 0},                // ... from 3 threads
        {"ring --wide", NOWAIT "REPRISE_HOST_COPY=1", 0},  // ... told apart by a copy
        {"ring", NOWAIT "REPRISE_HOST_WRITES=protect", 0}, // mprotect and write faults
        {"chain --size 16384", NOWAIT "REPRISE_HOST_WRITES=protect", 0},
        {"chain --size 16384 --own-segv late", NOWAIT "REPRISE_HOST_WRITES=protect", 0},
        {"ring --threads 4", NOWAIT "REPRISE_HOST_WRITES=scan", 0}, // no tracking
        {"chain --size 16384", NOWAIT "REPRISE_HOST_WRITES=scan", 0},
        {"chain --size 8192", NOWAIT "REPRISE_HOST_COPY=1", 0}, // the program's copy
        {"ring --remap", NOWAIT, 0},                            // unmapped while it runs
        {"chain --size 16384 --remap", NOWAIT "REPRISE_HOST_WRITES=protect", 0},
        {"ring --import", NOWAIT, 0}, // imported host pages
        {"chain --size 8192 --import", NOWAIT "REPRISE_HOST_WRITES=protect", 0},
        {"ring --wide --sem binary", "", 0},            // semaphore-chained submissions
        {"ring --wide --sem timeline", "", 0},          // ... by timeline values
        {"ring --wide --sem host --threads 2", "", 0},  // ... the host signals after its writes
        {"chain --size 16384 --sem timeline", "", 0},   // host edits output, chained
        {"chain --size 16384 --signals 80", NOWAIT, 0}, // its wait names a signal 80 back
        {"ring --map2", NOWAIT, 1},                     // vkMapMemory2KHR
        {"chain --size 16384 --map2", "", 1},
    };
#undef NOWAIT
    return cr_make_param_array(struct ringcase, c, sizeof c / sizeof c[0]);
}

ParameterizedTest(struct ringcase *c, vulkan, upload_rings_replay_every_read_back)
{
    need_vulkan();
    char why[512], cmd[4096];
    const char *mesa = "";
    if (c->mesa25 && !(mesa = tenv_mesa25(why, sizeof why)))
        cr_skip_test("%s", why);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s %s '%s' capture -o ring.sbt -- '%s/tests/vk/vk_ring' %s >out 2>err",
             tmpdir, mesa, c->env, bin, build, c->args);
    int rc = system(cmd);
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 4) {
        char err[512] = "";
        FILE *ef = fopen(tmp_path("err"), "r");
        if (ef) {
            size_t k = fread(err, 1, sizeof err - 1, ef);
            err[k] = 0;
            fclose(ef);
        }
        cr_skip_test("vk_ring %s cannot run here: %s", c->args, err);
    }
    cr_assert_eq(rc, 0, "capture failed: %s", cmd);
    sbt_reader *r = open_tmp("ring.sbt");
    cr_assert(sbt_reader_info(r)->complete, "vk_ring %s: trace incomplete", c->args);
    sbt_reader_close(r);
    /* replayed by the CLI, on the driver it was captured with (the trace names the device
     * extensions the program enabled) */
    char out[4096] = "", line[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s' replay ring.sbt --mode full --verify op 2>&1",
             tmpdir, mesa, bin);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    while (fgets(line, sizeof line, p))
        if (strlen(out) + strlen(line) < sizeof out)
            strcat(out, line);
    rc = pclose(p);
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "replay of vk_ring %s failed: %s", c->args,
              out);
    cr_expect_not_null(strstr(out, " 32 compared with the capture, 0 differ"),
                       "vk_ring %s [%s]: every read-back must replay bit for bit: %s", c->args,
                       c->env, out);
}

/* Runs `reprise ARGS` in tmpdir; output into tmpdir/out; returns the exit code. */
static int cli(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int cli(const char *fmt, ...)
{
    char args[1024], cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >out 2>&1", tmpdir, bin, args);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int out_has(const char *what)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "grep -qF -- '%s' '%s/out'", what, tmpdir);
    return system(cmd) == 0;
}

/* vk_images: images are resources too, snapshotted and restored in their packed layout */
ParameterizedTestParameters(vulkan, snapshots_restore_a_range_and_trim_cuts_it)
{
    static struct vkprog p[] = {{"vk_compute", ""}, {"vk_images", ""}};
    return cr_make_param_array(struct vkprog, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct vkprog *p, vulkan, snapshots_restore_a_range_and_trim_cuts_it)
{
    need_vulkan();
    capture(p->prog, p->args, "t.sbt");
    sbt_reader *r = open_tmp("t.sbt");
    uint64_t n = sbt_reader_info(r)->seq_end;
    uint64_t sub[16], n_sub = 0;
    sbt_cursor *cu;
    const struct sbt_op *op;
    cr_assert_eq(sbt_cursor_open(r, NULL, &cu), 0);
    while (sbt_cursor_next(cu, &op) == 1)
        if (op->kind == SBT_OP_SUBMIT && n_sub < 16)
            sub[n_sub++] = op->seq;
    sbt_cursor_close(cu);
    cr_assert_geq(n_sub, 4);
    /* the full replay writes a snapshot every few ops */
    struct coll full, part;
    coll_init(&full, n);
    coll_init(&part, n);
    struct replay_result res;
    cr_assert_eq(
        replay_run(r,
                   &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP, .on_op = coll_on_op, .ctx = &full,
                                .snapshot_every_ops = 3, .snapshot_out = tmp_path("t.snap.sbt")),
                   &res),
        0, "%s", replay_errmsg());
    cr_expect_eq(res.n_errors, 0, "%s", res.first_error_msg);
    cr_expect_eq(res.n_mismatch, 0, "snapshots do not change what the replay computes");
    cr_expect_gt(res.n_snapshots, 1);
    replay_result_free(&res);
    sbt_reader *sc;
    cr_assert_eq(replay_snapshots_open(r, tmp_path("t.snap.sbt"), &sc), 0, "%s", replay_errmsg());
    struct sbt_range rg = {.has_seq = 1, .seq_begin = sub[1] + 1, .seq_end = sub[n_sub - 1]};
    cr_assert_eq(replay_run(r,
                            &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP, .range = &rg, .snapshots = sc,
                                         .on_op = coll_on_op, .ctx = &part),
                            &res),
                 0, "%s", replay_errmsg());
    cr_expect_eq(res.n_errors, 0, "%s", res.first_error_msg);
    cr_expect_neq(res.restore_seq, UINT64_MAX, "restored from a snapshot");
    cr_expect_gt(res.restore_bytes, 0);
    uint64_t compared = 0;
    for (uint64_t q = rg.seq_begin; q < rg.seq_end; q++)
        if (full.has[q]) {
            cr_expect(part.has[q] && sbt_hash_eq(part.dig[q], full.dig[q]),
                      "op %" PRIu64 ": the range from a snapshot differs from the full replay", q);
            compared++;
        }
    cr_expect_gt(compared, 0);
    replay_result_free(&res);
    sbt_reader_close(sc);
    /* the dry run finds the sidecar and says what it will cost */
    cr_expect_eq(cli("replay t.sbt --ops %" PRIu64 ":%" PRIu64, rg.seq_begin, rg.seq_end), 0);
    cr_expect(out_has("restore     snapshot at op"), "dry run without a restore line");
    /* trim: read on the device, replayed on its own to the same outputs */
    cr_assert_eq(
        cli("trim t.sbt --ops %" PRIu64 ":%" PRIu64 " -o small.sbt", rg.seq_begin, rg.seq_end), 0);
    cr_expect(out_has("contents    read on"));
    sbt_reader *t = open_tmp("small.sbt");
    cr_expect_lt(sbt_reader_info(t)->n_ops, n, "smaller than the original");
    struct coll alone;
    coll_init(&alone, n);
    cr_assert_eq(
        replay_run(t, &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP, .on_op = coll_on_op, .ctx = &alone),
                   &res),
        0, "%s", replay_errmsg());
    cr_expect_eq(res.n_errors, 0, "%s", res.first_error_msg);
    cr_expect_eq(res.n_mismatch, 0, "the capture's read-backs in the range still match");
    for (uint64_t q = rg.seq_begin; q < rg.seq_end; q++)
        if (full.has[q])
            cr_expect(alone.has[q] && sbt_hash_eq(alone.dig[q], full.dig[q]),
                      "op %" PRIu64 ": the trimmed trace differs from the full replay", q);
    replay_result_free(&res);
    sbt_reader_close(t);
    /* without a device: the slice's ops, and it says so */
    cr_assert_eq(cli("trim t.sbt --ops %" PRIu64 ":%" PRIu64 " -o s2.sbt --no-snapshots "
                     "--no-device",
                     rg.seq_begin, rg.seq_end),
                 0);
    cr_expect(out_has("contents    none: no device (--no-device) and no snapshot"));
    coll_free(&full);
    coll_free(&part);
    coll_free(&alone);
    sbt_reader_close(r);
}

/* ---- trace editing: copy a trace through the writer, changing what edit() says ------------ */

struct editor {
    /* returns 1 to drop the op; may change *op (payload data must outlive the call) */
    int (*op)(struct editor *e, sbt_writer *w, struct sbt_op *op);
    void (*device)(struct editor *e, struct sbt_device *d);
    uint8_t buf[4096];
    struct sbt_payload_enc enc;
    int done;
};

static uint32_t str(sbt_writer *w, const sbt_reader *r, uint32_t id)
{
    uint32_t out = 0;
    if (id)
        cr_assert_eq(sbt_writer_intern(w, sbt_reader_string(r, id), &out), 0);
    return out;
}

static void rewrite(const char *in, const char *out, struct editor *e, int zstd_level)
{
    sbt_reader *r = open_tmp(in);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, out);
    sbt_writer *w;
    cr_assert_eq(sbt_writer_open(path, &SBT_WRITER_OPTS(.zstd_level = zstd_level), &w), 0);
    uint32_t n, id;
    const struct sbt_device *dv = sbt_reader_devices(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_device d = dv[i];
        d.name = str(w, r, d.name);
        d.host = str(w, r, d.host);
        if (e && e->device)
            e->device(e, &d);
        cr_assert_eq(sbt_writer_add_device(w, &d, &id), 0);
    }
    const struct sbt_stream *sv = sbt_reader_streams(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_stream s = sv[i];
        s.name = str(w, r, s.name);
        cr_assert_eq(sbt_writer_add_stream(w, &s, &id), 0);
    }
    const struct sbt_program *pv = sbt_reader_programs(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_program p = pv[i];
        p.name = str(w, r, p.name);
        void *data;
        size_t len;
        cr_assert_eq(sbt_reader_blob(r, &p.blob, &data, &len), 0);
        cr_assert_eq(sbt_writer_blob(w, data, len, &p.blob), 0);
        free(data);
        cr_assert_eq(sbt_writer_add_program(w, &p, &id), 0);
    }
    const struct sbt_kernel *kv = sbt_reader_kernels(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_kernel k = kv[i];
        k.name = str(w, r, k.name);
        cr_assert_eq(sbt_writer_add_kernel(w, &k, &id), 0);
    }
    sbt_cursor *cu;
    const struct sbt_op *sop;
    cr_assert_eq(sbt_cursor_open(r, NULL, &cu), 0);
    while (sbt_cursor_next(cu, &sop) == 1) {
        struct sbt_op op = *sop;
        op.name = str(w, r, op.name);
        if (op.flags & SBT_OPF_BLOB) {
            void *data;
            size_t len;
            cr_assert_eq(sbt_reader_blob(r, &op.blob, &data, &len), 0);
            cr_assert_eq(sbt_writer_blob(w, data, len, &op.blob), 0);
            free(data);
        }
        if (e && e->op && e->op(e, w, &op))
            continue;
        cr_assert_eq(sbt_writer_add_op(w, &op, NULL), 0, "%s", sbt_errmsg());
    }
    sbt_cursor_close(cu);
    cr_assert_eq(sbt_writer_close(w), 0);
    sbt_reader_close(r);
}

/* The capture device's memory types become a discrete GPU's: 0 device-local, 1 host-visible
 * coherent, 2 device-local + host-visible (ReBAR), 3 host cached; allocations are renumbered
 * to the type with their flags (plus device-local where the type has it). */
static uint32_t map_type(uint32_t flags)
{
    if (!(flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
        return 0;
    if (flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
        return 3;
    return 2;
}
static const uint32_t discrete_flags[4] = {
    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
        VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
};

static void recode(const void *data, uint32_t len, struct sbt_payload_enc *out,
                   void (*fix)(struct sbt_payload_rec *r, uint64_t *args))
{
    struct sbt_payload_dec d;
    struct sbt_payload_rec rec;
    sbt_payload_dec_init(&d, data, len);
    sbt_payload_enc_reset(out);
    while (sbt_payload_dec_next(&d, &rec) == 1) {
        uint64_t args[512];
        memcpy(args, rec.arg, rec.n_arg * sizeof *args);
        fix(&rec, args);
        if (rec.call)
            sbt_payload_put(out, rec.call, args, rec.n_arg, rec.bytes, rec.n_bytes);
    }
    sbt_payload_dec_free(&d);
    cr_assert_eq(sbt_payload_enc_status(out), 0);
}

static void fix_device(struct sbt_payload_rec *r, uint64_t *a)
{
    if (r->call == SBT_VK_MEMORY_TYPE) {
        if (a[0] >= 4)
            r->call = 0; /* drop the others */
        else
            a[1] = discrete_flags[a[0]], a[2] = a[0] == 1 || a[0] == 3;
    }
}

static void fix_alloc(struct sbt_payload_rec *r, uint64_t *a)
{
    if (r->call == SBT_VK_MEMORY) {
        a[2] = map_type((uint32_t)a[3]);
        a[3] = discrete_flags[a[2]];
    }
}

static void edit_device(struct editor *e, struct sbt_device *d)
{
    recode(d->ext.data, d->ext.len, &e->enc, fix_device);
    d->ext.data = e->enc.buf; /* the writer copies it when the device is added, next */
    d->ext.len = (uint32_t)e->enc.len;
}

static int edit_alloc(struct editor *e, sbt_writer *w, struct sbt_op *op)
{
    (void)w;
    if (op->kind == SBT_OP_ALLOC && op->payload.kind == SBT_VK_PAYLOAD) {
        recode(op->payload.data, op->payload.len, &e->enc, fix_alloc);
        op->payload.data = e->enc.buf;
        op->payload.len = (uint32_t)e->enc.len;
        e->done++;
    }
    return 0;
}

Test(vulkan, another_memory_type_layout_still_replays)
{
    need_vulkan();
    capture("vk_compute", NULL, "t.sbt");
    struct editor e = {.op = edit_alloc, .device = edit_device};
    rewrite("t.sbt", "m.sbt", &e, 0);
    cr_assert_gt(e.done, 0);
    sbt_reader *r = open_tmp("m.sbt");
    struct replay_result res;
    cr_assert_eq(replay_run(r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP), &res), 0, "%s",
                 replay_errmsg());
    cr_expect_eq(res.n_errors, 0, "%s", res.first_error_msg);
    cr_expect_gt(res.n_compared, 0);
    cr_expect_eq(res.n_mismatch, 0);
    replay_result_free(&res);
    sbt_reader_close(r);
    sbt_payload_enc_free(&e.enc);
}

/* Pipeline robustness across drivers (issue 21): a trace whose pipelines chain
 * VkPipelineRobustnessCreateInfo asking for no robustness (ggml-vulkan's) replays on a device
 * without VK_EXT_pipeline_robustness (captured on Mesa 25, replayed on Debian 12's Mesa 22.3),
 * and the result says the structure was left out; one asking for robust buffer access 2 is
 * refused there, naming the extension (before: both refused). */
Test(vulkan, pipeline_robustness_across_drivers)
{
    need_vulkan();
    char why[512], cmd[4096];
    const char *mesa = tenv_mesa25(why, sizeof why);
    if (!mesa)
        cr_skip_test("%s", why);
    if (system("vulkaninfo 2>/dev/null | grep -q VK_EXT_pipeline_robustness") == 0)
        cr_skip_test("this machine's own driver has VK_EXT_pipeline_robustness");
    for (int off = 1; off >= 0; off--) {
        const char *mode = off ? "robust-off" : "robust";
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && (%s '%s' capture -o %s.sbt -- '%s/tests/vk/vk_pipelines' %s) "
                 ">out 2>&1",
                 tmpdir, mesa, bin, mode, build, mode);
        cr_assert_eq(system(cmd), 0, "capture of vk_pipelines %s on Mesa 25 failed", mode);
        int rc = cli("replay %s.sbt --mode full --verify op -o x%s.sbt", mode, mode);
        if (off) {
            cr_assert_eq(rc, 0, "replay of robust-off on this driver failed");
            cr_expect(out_has(" 1 compared with the capture, 0 differ"),
                      "robust-off: not verified");
            cr_assert_eq(cli("info x%s.sbt", mode), 0);
            cr_expect(out_has("no pipeline robustness (default/disabled asked)"),
                      "the result does not say the structure was left out");
        } else {
            cr_expect_neq(rc, 0, "robust buffer access 2 replayed without the extension");
            cr_expect(out_has("lacks device extension VK_EXT_pipeline_robustness"),
                      "the refusal does not name the extension");
        }
    }
}

/* Features a trace's device enabled and the trace never used (issue 21): ggml-vulkan enables
 * every feature a device offers, so its traces could replay nowhere with fewer. vk_pipelines
 * enables shaderStorageBufferArrayNonUniformIndexing on Mesa 25 (Debian 12's Mesa 22.3 lacks
 * it): when no shader declares a SPIR-V capability needing it (vk.xml), replay on 22.3 leaves
 * it off, says so, and reproduces the read-back; when the shader indexes a descriptor array
 * non-uniformly, replay refuses, naming that one feature (before: both refused). */
Test(vulkan, features_the_trace_never_used_are_left_off_across_drivers)
{
    need_vulkan();
    char why[512], cmd[4096];
    const char *mesa = tenv_mesa25(why, sizeof why);
    if (!mesa)
        cr_skip_test("%s", why);
    if (!sbt_vk_spirv_grammar[0])
        cr_skip_test("built without a SPIR-V grammar: replay leaves no feature off");
    snprintf(cmd, sizeof cmd, "'%s/tests/vk/vk_pipelines' nonuniform >/dev/null 2>&1", build);
    int own = system(cmd);
    if (!WIFEXITED(own) || WEXITSTATUS(own) != 4)
        cr_skip_test("this machine's own driver has shaderStorageBufferArrayNonUniformIndexing");
    for (int used = 0; used < 2; used++) {
        const char *mode = used ? "nonuniform" : "nonuniform-unused";
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && (%s '%s' capture -o %s.sbt -- '%s/tests/vk/vk_pipelines' %s) "
                 ">out 2>&1",
                 tmpdir, mesa, bin, mode, build, mode);
        cr_assert_eq(system(cmd), 0, "capture of vk_pipelines %s on Mesa 25 failed", mode);
        int rc = cli("replay %s.sbt --mode full --verify op -o x%s.sbt", mode, mode);
        if (!used) {
            cr_assert_eq(rc, 0, "replay of %s on this driver failed", mode);
            cr_expect(out_has(" 1 compared with the capture, 0 differ"), "%s: not verified", mode);
            cr_assert_eq(cli("info x%s.sbt", mode), 0);
            cr_expect(out_has("1 unused feature left off "
                              "(shaderStorageBufferArrayNonUniformIndexing)"),
                      "the result does not say the feature was left off");
        } else {
            cr_expect_eq(rc, 4, "a feature the shader needs was left off");
            cr_expect(out_has("lacks 1 feature the trace") &&
                          out_has("enabled: shaderStorageBufferArrayNonUniformIndexing ("),
                      "the refusal does not name the feature");
        }
    }
}

/* A program that chains its core features in a VkPhysicalDeviceFeatures2 to
 * VkDeviceCreateInfo (Dawn does) replays: replay rebuilds the chain from the registry's table
 * instead of nesting the structure in its own query. */
Test(vulkan, features2_in_the_device_chain_replays)
{
    need_vulkan();
    setenv("VKT_FEATURES2", "1", 1);
    capture("vk_compute", NULL, "t.sbt");
    unsetenv("VKT_FEATURES2");
    sbt_reader *r = open_tmp("t.sbt");
    uint32_t n;
    const struct sbt_device *d = sbt_reader_devices(r, &n);
    cr_assert_eq(n, 1);
    struct sbt_payload_dec dec;
    struct sbt_payload_rec rec;
    int found = 0;
    sbt_payload_dec_init(&dec, d->ext.data, d->ext.len);
    while (sbt_payload_dec_next(&dec, &rec) == 1)
        found |= rec.call == SBT_VK_FEATURES &&
                 sbt_payload_arg(&rec, 0) == SBT_VK_STYPE_FEATURES2 &&
                 sbt_payload_arg(&rec, 1) == 55;
    sbt_payload_dec_free(&dec);
    cr_assert(found, "the capture records VkPhysicalDeviceFeatures2 with its 55 members");
    struct replay_result res;
    cr_assert_eq(replay_run(r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP), &res), 0, "%s",
                 replay_errmsg());
    cr_expect_eq(res.n_errors, 0, "%s", res.first_error_msg);
    cr_expect_gt(res.n_compared, 0);
    cr_expect_eq(res.n_mismatch, 0);
    replay_result_free(&res);
    sbt_reader_close(r);
}

/* A FEATURES record is checked against the registry before anything reaches the driver: a
 * member count other than the structure's (which once sized the structure the driver then
 * filled at its own size) is a corrupt trace, an unknown structure type an unsupported one. */
static uint64_t features_count, features_stype;
static void fix_features(struct sbt_payload_rec *r, uint64_t *a)
{
    if (r->call == SBT_VK_FEATURES &&
        a[0] == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
        a[0] = features_stype;
        a[1] = features_count;
        if (features_count < r->n_arg - 2)
            r->n_arg = 2 + (uint32_t)features_count;
    }
}
static void edit_features(struct editor *e, struct sbt_device *d)
{
    recode(d->ext.data, d->ext.len, &e->enc, fix_features);
    d->ext.data = e->enc.buf;
    d->ext.len = (uint32_t)e->enc.len;
}

Test(vulkan, a_features_record_is_checked_against_the_registry)
{
    need_vulkan();
    capture("vk_compute", NULL, "t.sbt");
    static const struct {
        uint64_t stype, count;
        int status;
        const char *msg;
    } cases[] = {
        {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, 3, SBT_ECORRUPT,
         "FEATURES record of VkPhysicalDeviceVulkan12Features gives 3 members in 5 arguments; "
         "the structure has 47"},
        {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, 100000, SBT_ECORRUPT,
         "gives 100000 members"},
        {1234567, 47, REPLAY_EUNSUPPORTED, "features structure type 1234567"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        features_stype = cases[i].stype;
        features_count = cases[i].count;
        struct editor e = {.device = edit_features};
        rewrite("t.sbt", "f.sbt", &e, 0);
        sbt_reader *r = open_tmp("f.sbt");
        struct replay_result res;
        cr_expect_eq(replay_run(r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_END), &res),
                     cases[i].status, "case %zu: %s", i, replay_errmsg());
        cr_expect(strstr(replay_errmsg(), cases[i].msg), "case %zu: %s", i, replay_errmsg());
        replay_result_free(&res);
        sbt_reader_close(r);
        sbt_payload_enc_free(&e.enc);
    }
}

/* Values from the trace are checked before they reach the driver (replay_vk_check.c): each
 * check with a value inside and one outside, and the status and message it gives. */
Test(vulkan, payload_values_are_checked_before_the_driver)
{
    VkPhysicalDeviceLimits dl = {.maxPushConstantsSize = 128,
                                 .maxComputeWorkGroupCount = {65535, 65535, 65535},
                                 .maxComputeWorkGroupSize = {256, 256, 64},
                                 .maxComputeWorkGroupInvocations = 256,
                                 .maxStorageBufferRange = 1u << 27,
                                 .maxUniformBufferRange = 16384,
                                 .minStorageBufferOffsetAlignment = 64,
                                 .minUniformBufferOffsetAlignment = 256,
                                 .maxBoundDescriptorSets = 4};
    struct vkr_limits l;
    vkr_limits_from(&l, &dl, 8, 32, 16);
    static const struct {
        uint32_t call, n;
        uint64_t a[16];
        uint32_t n_bytes;
        uint64_t size0, size1;
        int status;
        const char *msg;
    } c[] = {
        {SBT_VK_DISPATCH, 8, {1, 2, 0, 0, 0, 65535, 1, 1}, 0, 0, 0, 0, ""},
        {SBT_VK_DISPATCH,
         8,
         {1, 2, 10, 0, 0, 65535, 1, 1},
         0,
         0,
         0,
         REPLAY_ENODEV,
         "groups 10..65545 on x exceeds this device's maxComputeWorkGroupCount[0] = 65535"},
        {SBT_VK_DISPATCH,
         8,
         {1, 2, 0, 0, 0, 1, 1, 1},
         132,
         0,
         0,
         REPLAY_ENODEV,
         "132 bytes of push constants; this device's maxPushConstantsSize is 128"},
        {SBT_VK_BINDING,
         8,
         {0, 1, 0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 5, 6, 64, 64},
         0,
         128,
         0,
         0,
         ""},
        {SBT_VK_BINDING,
         8,
         {0, 1, 0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 5, 6, 64, 65},
         0,
         128,
         0,
         SBT_ECORRUPT,
         "range [64, +65) outside its buffer of 128 bytes"},
        {SBT_VK_BINDING,
         8,
         {0, 1, 0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 5, 6, 32, 16},
         0,
         128,
         0,
         REPLAY_ENODEV,
         "needs minStorageBufferOffsetAlignment offsets aligned to 64"},
        {SBT_VK_BINDING,
         8,
         {0, 1, 0, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 5, 6, 0, 32768},
         0,
         65536,
         0,
         REPLAY_ENODEV,
         "spans 32768 bytes: this device's maxUniformBufferRange is 16384"},
        {SBT_VK_COPY_BUFFER, 6, {3, 4, 1, 0, 100, 28}, 0, 128, 128, 0, ""},
        {SBT_VK_COPY_BUFFER,
         6,
         {3, 4, 1, 0, 101, 28},
         0,
         128,
         128,
         SBT_ECORRUPT,
         "copy region 0 [0, +28) -> [101, +28) outside its buffers (128 and 128 bytes)"},
        {SBT_VK_COPY_BUFFER,
         6,
         {3, 4, 1, UINT64_MAX - 3, 0, 8},
         0,
         128,
         128,
         SBT_ECORRUPT,
         "outside its buffers"},
        {SBT_VK_COPY_BUFFER,
         6,
         {3, 4, 2, 0, 0, 8},
         0,
         128,
         128,
         SBT_ECORRUPT,
         "COPY_BUFFER record of 2 regions in 6 arguments"},
        {SBT_VK_COPY_BUFFER,
         6,
         {3, 3, 1, 0, 8, 16},
         0,
         128,
         128,
         SBT_ECORRUPT,
         "copy region 0 overlaps itself"},
        {SBT_VK_FILL_BUFFER, 4, {3, 64, 64, 7}, 0, 128, 0, 0, ""},
        {SBT_VK_FILL_BUFFER, 4, {3, 66, 64, 7}, 0, 128, 0, SBT_ECORRUPT, "fill of [66, +64)"},
        {SBT_VK_PIPELINE_LAYOUT,
         7,
         {9, 0, 0, 1, 32, 0, 132},
         0,
         0,
         0,
         REPLAY_ENODEV,
         "push constants up to byte 132; this device's maxPushConstantsSize is 128"},
        {SBT_VK_PIPELINE_LAYOUT,
         3,
         {9, 0, 5},
         0,
         0,
         0,
         REPLAY_ENODEV,
         "with 5 sets: this device's maxBoundDescriptorSets is 4"},
        {SBT_VK_PIPELINE, 9, {7, 0, 1, 2, 32, 64, 1, 1, 16}, 0, 0, 0, 0, ""},
        {SBT_VK_PIPELINE,
         9,
         {7, 0, 1, 2, 32, 64, 1, 1, 64},
         0,
         0,
         0,
         REPLAY_ENODEV,
         "required subgroup size 64; this device offers 8..32"},
        {SBT_VK_PIPELINE,
         9,
         {7, 0, 1, 2, 32, 64, 8, 1, 0},
         0,
         0,
         0,
         REPLAY_ENODEV,
         "512 invocations per workgroup"},
        {SBT_VK_PIPELINE,
         9,
         {7, 0x8, 1, 2, 32, 1, 1, 1, 0},
         0,
         0,
         0,
         REPLAY_EUNSUPPORTED,
         "create flags 0x8"},
        /* stage flags: full subgroups against the subgroup size this device would use */
        {SBT_VK_PIPELINE, 13, {7, 0, 1, 2, 32, 64, 1, 1, 0, 0, 2, 0, 0}, 0, 0, 0, 0, ""},
        {SBT_VK_PIPELINE,
         13,
         {7, 0, 1, 2, 32, 24, 1, 1, 0, 0, 2, 0, 0},
         0,
         0,
         0,
         REPLAY_ENODEV,
         "workgroup size x = 24 is not a multiple of this device's subgroupSize (16)"},
        {SBT_VK_PIPELINE,
         13,
         {7, 0, 1, 2, 32, 48, 1, 1, 0, 0, 3, 0, 0},
         0,
         0,
         0,
         REPLAY_ENODEV,
         "not a multiple of this device's maxSubgroupSize (32)"},
        {SBT_VK_PIPELINE, 13, {7, 0, 1, 2, 32, 48, 1, 1, 16, 0, 2, 0, 0}, 0, 0, 0, 0, ""},
        {SBT_VK_PIPELINE,
         13,
         {7, 0, 1, 2, 32, 48, 1, 1, 16, 0, 1, 0, 0},
         0,
         0,
         0,
         SBT_ECORRUPT,
         "a required subgroup size with a varying one"},
        {SBT_VK_PIPELINE,
         13,
         {7, 0, 1, 2, 32, 64, 1, 1, 0, 0, 4, 0, 0},
         0,
         0,
         0,
         REPLAY_EUNSUPPORTED,
         "shader stage create flags 0x4"},
        /* create flags: caching ones dropped; VkPipelineCreateFlags2 replace the 32-bit ones */
        {SBT_VK_PIPELINE, 13, {7, 0x310, 1, 2, 32, 64, 1, 1, 0, 0, 0, 0x800, 0}, 0, 0, 0, 0, ""},
        {SBT_VK_PIPELINE,
         13,
         {7, 0x10, 1, 2, 32, 64, 1, 1, 0, 0, 0, 0x800, 1},
         0,
         0,
         0,
         REPLAY_EUNSUPPORTED,
         "create flags 0x800"},
        {SBT_VK_PIPELINE,
         13,
         {7, 0, 1, 2, 32, 64, 1, 1, 0, 0, 0, 0x2000000011ull, 1},
         0,
         0,
         0,
         REPLAY_EUNSUPPORTED,
         "(0x2000000000)"},
        {SBT_VK_PIPELINE,
         9,
         {7, 0, 1, 2, 8, 64, 1, 1, 0},
         0,
         0,
         0,
         SBT_ECORRUPT,
         "shader stage 0x8 in a compute pipeline"},
        /* set layouts: push descriptors and update-after-bind pools; binding flags */
        {SBT_VK_SET_LAYOUT, 3, {5, 1, 2}, 0, 0, 0, 0, ""},
        {SBT_VK_SET_LAYOUT, 3, {5, 2, 2}, 0, 0, 0, 0, ""},
        {SBT_VK_SET_LAYOUT,
         3,
         {5, 0x10, 2},
         0,
         0,
         0,
         REPLAY_EUNSUPPORTED,
         "set layout 5: create flags 0x10"},
        {SBT_VK_SET_LAYOUT, 3, {5, 3, 2}, 0, 0, 0, SBT_ECORRUPT, "push descriptors in an update"},
        {SBT_VK_SET_BINDING, 5, {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 9, 32, 0xd}, 0, 2, 0, 0, ""},
        {SBT_VK_SET_BINDING,
         5,
         {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 9, 32, 0x1},
         0,
         0,
         0,
         SBT_ECORRUPT,
         "update after bind in a layout without UPDATE_AFTER_BIND_POOL"},
        {SBT_VK_SET_BINDING,
         5,
         {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC, 1, 32, 0x8},
         0,
         2,
         0,
         SBT_ECORRUPT,
         "dynamic buffer descriptors cannot have binding flags 0x8"},
        {SBT_VK_SET_BINDING,
         5,
         {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, 32, 0x10},
         0,
         0,
         0,
         REPLAY_EUNSUPPORTED,
         "binding flags 0x10"},
        {SBT_VK_SPEC_ENTRY, 3, {0, 4, 4}, 0, 8, 0, 0, ""},
        {SBT_VK_SPEC_ENTRY,
         3,
         {0, 6, 4},
         0,
         8,
         0,
         SBT_ECORRUPT,
         "specialization constant 0: [6, +4) outside its 8 bytes of data"},
    };
    uint8_t bytes[256] = {0};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        struct sbt_payload_rec r = {c[i].call, c[i].n, c[i].a, c[i].n_bytes, bytes};
        uint32_t n;
        int st = 0;
        switch (c[i].call) {
        case SBT_VK_DISPATCH:
            st = vkr_check_dispatch(&l, &r);
            break;
        case SBT_VK_BINDING:
            st = vkr_check_binding(&l, &r, c[i].size0);
            break;
        case SBT_VK_COPY_BUFFER:
            st = vkr_check_copy(&r, c[i].size0, c[i].size1, &n);
            break;
        case SBT_VK_FILL_BUFFER:
            st = vkr_check_fill(&r, c[i].size0);
            break;
        case SBT_VK_PIPELINE_LAYOUT:
            st = vkr_check_playout(&l, &r, 8);
            break;
        case SBT_VK_PIPELINE:
            st = vkr_check_pipeline(&l, &r, &n);
            if (i + 1 < sizeof c / sizeof c[0] && c[i].a[1] == 0x310) /* only 0x10 is kept */
                cr_expect_eq(n, 0x10, "case %zu: flags 0x%x", i, n);
            break;
        case SBT_VK_SET_LAYOUT:
            st = vkr_check_set_layout(&r);
            break;
        case SBT_VK_SET_BINDING:
            st = vkr_check_set_binding(&r, c[i].size0);
            break;
        case SBT_VK_SPEC_ENTRY:
            st = vkr_check_spec_entry(&r, (uint32_t)c[i].size0);
            break;
        }
        cr_expect_eq(st, c[i].status, "case %zu: %d %s", i, st, replay_errmsg());
        if (c[i].status)
            cr_expect(strstr(replay_errmsg(), c[i].msg), "case %zu: %s", i, replay_errmsg());
    }
}

/* The image records: every value checked against the image (or images) and buffer it names,
 * each failure naming the value and what it exceeds. */
Test(vulkan, image_payload_values_are_checked_before_the_driver)
{
    /* img: RGBA8 2D 32x24, 3 levels, 2 layers (packed 8064 bytes); bc: BC1 20x12, 2 levels; vol:
     * R32F 3D 16x8x4 */
    static const struct sbt_vk_image img = {37, 1, {32, 24, 1}, 3, 2},
                                     bc = {131, 1, {20, 12, 1}, 2, 1},
                                     vol = {100, 2, {16, 8, 4}, 1, 1};
    enum { B = 1 << 20 }; /* a big buffer */
    static const struct {
        uint32_t call, n;
        uint64_t a[48];
        const struct sbt_vk_image *im, *im2;
        uint64_t size;
        int status;
        const char *msg;
    } c[] = {
        {SBT_VK_CREATE_IMAGE,
         17,
         {5, 0, 1, 37, 32, 24, 1, 3, 2, 1, 0, 0x6, 0, 0, 8064, 1, 0},
         NULL,
         NULL,
         0,
         0,
         ""},
        {SBT_VK_CREATE_IMAGE,
         17,
         {5, 0, 1, 37, 32, 24, 1, 3, 2, 1, 0, 0x6, 0, 0, 8000, 1, 0},
         NULL,
         NULL,
         0,
         SBT_ECORRUPT,
         "packed size is 8064 bytes, the record says 8000"},
        {SBT_VK_CREATE_IMAGE,
         17,
         {5, 0, 1, 37, 32, 24, 1, 9, 2, 1, 0, 0x6, 0, 0, 8064, 1, 0},
         NULL,
         NULL,
         0,
         SBT_ECORRUPT,
         "9 levels"},
        {SBT_VK_CREATE_IMAGE,
         17,
         {5, 0, 1, 37, 32, 24, 1, 1, 1, 4, 0, 0x6, 0, 0, 3072, 1, 0},
         NULL,
         NULL,
         0,
         REPLAY_EUNSUPPORTED,
         "4 samples"},
        {SBT_VK_CREATE_IMAGE_VIEW,
         15,
         {6, 5, 0, VK_IMAGE_VIEW_TYPE_2D_ARRAY, 37, 0, 0, 0, 0, 1, 0, 3, 0, 2, 0},
         &img,
         NULL,
         0,
         0,
         ""},
        {SBT_VK_CREATE_IMAGE_VIEW,
         15,
         {6, 5, 0, VK_IMAGE_VIEW_TYPE_2D_ARRAY, 37, 0, 0, 0, 0, 1, 1, 3, 0, 2, 0},
         &img,
         NULL,
         0,
         SBT_ECORRUPT,
         "levels 1..+3 of an image with 3"},
        {SBT_VK_CREATE_IMAGE_VIEW,
         15,
         {6, 5, 0, VK_IMAGE_VIEW_TYPE_3D, 37, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0},
         &img,
         NULL,
         0,
         SBT_ECORRUPT,
         "view type 2 of a 2D image"},
        {SBT_VK_CREATE_IMAGE_VIEW,
         15,
         {6, 5, 0, VK_IMAGE_VIEW_TYPE_2D, 43, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0},
         &img,
         NULL,
         0,
         SBT_ECORRUPT,
         "not mutable"},
        {SBT_VK_CREATE_SAMPLER,
         18,
         {7, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0x3f800000, 0, 0, 0, 0x41000000, 0, 0, 0},
         NULL,
         NULL,
         0,
         0,
         ""},
        {SBT_VK_CREATE_SAMPLER,
         18,
         {7, 0, 1, 1, 1, 9, 0, 0, 0, 0, 0x3f800000, 0, 0, 0, 0x41000000, 0, 0, 0},
         NULL,
         NULL,
         0,
         SBT_ECORRUPT,
         "address mode 9"},
        {SBT_VK_CREATE_SAMPLER,
         18,
         {7, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0x42000000, 0, 0, 0, 0x41000000, 0, 0, 0},
         NULL,
         NULL,
         0,
         REPLAY_ENODEV,
         "anisotropy 32"},
        {SBT_VK_CREATE_SAMPLER,
         18,
         {7, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0x3f800000, 0, 0, 0x7fc00000, 0x41000000, 0, 0, 0},
         NULL,
         NULL,
         0,
         SBT_ECORRUPT,
         "not a finite float"},
        {SBT_VK_IMAGE_BINDING,
         9,
         {0, 1, 0, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 6, 5, 0, 1, 2},
         NULL,
         NULL,
         0,
         0,
         ""},
        {SBT_VK_IMAGE_BINDING,
         9,
         {0, 1, 0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 6, 5, 0, 1, 1},
         NULL,
         NULL,
         0,
         SBT_ECORRUPT,
         "sampler 0"},
        {SBT_VK_IMAGE_BINDING,
         9,
         {0, 1, 0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 6, 5, 0, 1, 1},
         NULL,
         NULL,
         0,
         SBT_ECORRUPT,
         "not a sampler or image type"},
        {SBT_VK_COPY_BUFFER_TO_IMAGE,
         19,
         {3, 5, 7, 1, 256, 40, 30, 1, 0, 0, 2, 0, 0, 0, 32, 24, 1, 9, 0},
         &img,
         NULL,
         B,
         0,
         ""},
        {SBT_VK_COPY_BUFFER_TO_IMAGE,
         19,
         {3, 5, 7, 1, 256, 40, 30, 1, 0, 0, 2, 0, 0, 0, 32, 24, 1, 9, 0},
         &img,
         NULL,
         8000,
         SBT_ECORRUPT,
         "past its buffer of 8000 bytes"},
        {SBT_VK_COPY_BUFFER_TO_IMAGE,
         19,
         {3, 5, 7, 1, 256, 10, 0, 1, 0, 0, 1, 0, 0, 0, 32, 24, 1, 9, 0},
         &img,
         NULL,
         B,
         SBT_ECORRUPT,
         "row length 10"},
        {SBT_VK_COPY_BUFFER_TO_IMAGE,
         19,
         {3, 5, 7, 1, 2, 0, 0, 1, 0, 0, 1, 0, 0, 0, 32, 24, 1, 9, 0},
         &img,
         NULL,
         B,
         SBT_ECORRUPT,
         "offset a multiple of 4"},
        {SBT_VK_COPY_BUFFER_TO_IMAGE,
         19,
         {3, 5, 7, 1, 0, 0, 0, 1, 1, 0, 1, 8, 0, 0, 16, 12, 1, 9, 0},
         &img,
         NULL,
         B,
         SBT_ECORRUPT,
         "past level 1's extent 16"},
        {SBT_VK_COPY_BUFFER_TO_IMAGE,
         19,
         {3, 5, 7, 1, 0, 0, 0, 1, 0, 0, 1, 2, 0, 0, 4, 4, 1, 9, 0},
         &bc,
         NULL,
         B,
         SBT_ECORRUPT,
         "not aligned to the 4-texel blocks"},
        {SBT_VK_COPY_BUFFER_TO_IMAGE,
         9,
         {3, 5, 7, 100, 0, 0, 0, 1, 0},
         &img,
         NULL,
         B,
         SBT_ECORRUPT,
         "100 regions in 9 arguments"},
        {SBT_VK_COPY_IMAGE_TO_BUFFER,
         19,
         {5, 7, 3, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 16, 8, 4, 9, 0},
         &vol,
         NULL,
         B,
         0,
         ""},
        {SBT_VK_COPY_IMAGE_TO_BUFFER,
         19,
         {5, 7, 3, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 16, 8, 4, 9, 0},
         &vol,
         NULL,
         B,
         SBT_ECORRUPT,
         "layers 1..+1"},
        {SBT_VK_COPY_IMAGE,
         24,
         {5, 7, 6, 7, 1, 1, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 4, 4, 0, 8, 8, 1, 9, 0},
         &img,
         &img,
         0,
         0,
         ""},
        {SBT_VK_COPY_IMAGE,
         24,
         {5, 7, 6, 7, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 10, 10, 0, 8, 8, 1, 9, 0},
         &img,
         &img,
         0,
         SBT_ECORRUPT,
         "past level 1's extent 16"},
        {SBT_VK_COPY_IMAGE,
         24,
         {5, 7, 6, 7, 1, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 8, 8, 1, 9, 0},
         &bc,
         &img,
         0,
         SBT_ECORRUPT,
         "8-byte source blocks into 4-byte"},
        {SBT_VK_BLIT_IMAGE,
         28,
         {5, 7, 6, 7, 1, 1, 1, 0, 0, 1, 0, 0, 0, 32, 24, 1, 1, 0, 1, 1, 16, 0, 0, 0, 12, 1, 9, 0},
         &img,
         &img,
         0,
         0,
         ""},
        {SBT_VK_BLIT_IMAGE,
         28,
         {5, 7, 6, 7, 1, 1, 1, 0, 0, 1, 0, 0, 0, 33, 24, 1, 1, 0, 1, 1, 16, 0, 0, 0, 12, 1, 9, 0},
         &img,
         &img,
         0,
         SBT_ECORRUPT,
         "box [0, 33) on x past level 0's extent 32"},
        {SBT_VK_BLIT_IMAGE,
         28,
         {5, 7, 6, 7, 1, 1, 1, 0, 0, 1, 0, 0, 0, 4, 4, 1, 1, 0, 0, 1, 0, 0, 0, 4, 4, 1, 9, 0},
         &bc,
         &img,
         0,
         SBT_ECORRUPT,
         "no compressed"},
        {SBT_VK_CLEAR_IMAGE,
         15,
         {5, 7, 0, 0, 0, 0, 0, 1, 1, 0, 3, 0, 2, 9, 0},
         &img,
         NULL,
         0,
         0,
         ""},
        {SBT_VK_CLEAR_IMAGE,
         15,
         {5, 7, 0, 0, 0, 0, 0, 1, 1, 1, 3, 0, 2, 9, 0},
         &img,
         NULL,
         0,
         SBT_ECORRUPT,
         "levels 1..+3"},
        {SBT_VK_CLEAR_IMAGE,
         15,
         {5, 7, 1, 0, 0, 0, 0, 1, 2, 0, 1, 0, 1, 9, 0},
         &img,
         NULL,
         0,
         SBT_ECORRUPT,
         "depth/stencil clear"},
        {SBT_VK_CLEAR_IMAGE,
         15,
         {5, 7, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 9, 0},
         &bc,
         NULL,
         0,
         SBT_ECORRUPT,
         "color clear"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        struct sbt_payload_rec r = {c[i].call, c[i].n, c[i].a, 0, NULL};
        struct sbt_vk_image d;
        uint64_t size;
        uint32_t n;
        int st = 0;
        switch (c[i].call) {
        case SBT_VK_CREATE_IMAGE:
            st = vkr_check_image(&r, &d, &size);
            break;
        case SBT_VK_CREATE_IMAGE_VIEW:
            st = vkr_check_image_view(&r, c[i].im, 0);
            break;
        case SBT_VK_CREATE_SAMPLER:
            st = vkr_check_sampler(&r, 16.0f);
            break;
        case SBT_VK_IMAGE_BINDING:
            st = vkr_check_image_binding(&r);
            break;
        case SBT_VK_COPY_BUFFER_TO_IMAGE:
        case SBT_VK_COPY_IMAGE_TO_BUFFER:
            st = vkr_check_buf_img_copy(&r, c[i].size, c[i].im, &n);
            break;
        case SBT_VK_COPY_IMAGE:
            st = vkr_check_img_copy(&r, c[i].im, c[i].im2, &n);
            break;
        case SBT_VK_BLIT_IMAGE:
            st = vkr_check_blit(&r, c[i].im, c[i].im2, &n);
            break;
        case SBT_VK_CLEAR_IMAGE:
            st = vkr_check_clear(&r, c[i].im, &n);
            break;
        }
        cr_expect_eq(st, c[i].status, "case %zu: %d %s", i, st, replay_errmsg());
        if (c[i].status)
            cr_expect(strstr(replay_errmsg(), c[i].msg), "case %zu: %s", i, replay_errmsg());
    }
}

/* A trace whose copy reaches past its buffer's end: the op is an error naming it, the run
 * goes on, the CLI exits 3 — the driver never sees the copy. */
static int edit_copy(struct editor *e, sbt_writer *w, struct sbt_op *op)
{
    (void)w;
    if (op->kind != SBT_OP_COPY || e->done || op->payload.kind != SBT_VK_PAYLOAD)
        return 0;
    struct sbt_payload_dec d;
    struct sbt_payload_rec r;
    if (sbt_payload_find(&d, op->payload.data, op->payload.len, SBT_VK_COPY_BUFFER, &r) == 1) {
        uint64_t a[64];
        memcpy(a, r.arg, r.n_arg * sizeof *a);
        a[5] = 1ull << 40; /* the first region's size */
        sbt_payload_enc_reset(&e->enc);
        sbt_payload_put(&e->enc, r.call, a, r.n_arg, r.bytes, r.n_bytes);
        op->payload.data = e->enc.buf;
        op->payload.len = (uint32_t)e->enc.len;
        e->done = (int)op->seq + 1;
    }
    sbt_payload_dec_free(&d);
    return 0;
}

Test(vulkan, a_copy_past_its_buffer_is_an_op_error_not_a_crash)
{
    need_vulkan();
    capture("vk_compute", NULL, "t.sbt");
    struct editor e = {.op = edit_copy};
    rewrite("t.sbt", "c.sbt", &e, 0);
    cr_assert_gt(e.done, 0, "vk_compute has a vkCmdCopyBuffer");
    sbt_reader *r = open_tmp("c.sbt");
    struct replay_result res;
    cr_assert_eq(replay_run(r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP), &res), 0, "%s",
                 replay_errmsg());
    cr_expect_eq(res.first_error, (uint64_t)e.done - 1);
    cr_expect_eq(res.first_error_status, SBT_ECORRUPT);
    cr_expect(strstr(res.first_error_msg, "outside its buffers"), "%s", res.first_error_msg);
    replay_result_free(&res);
    sbt_reader_close(r);
    sbt_payload_enc_free(&e.enc);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' replay '%s/c.sbt' --mode full >/dev/null 2>&1", bin, tmpdir);
    cr_expect_eq(WEXITSTATUS(system(cmd)), 3);
}

/* Runs a shell command in tmpdir; its stdout in out (NUL-terminated); the exit status. */
static int sh_out(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh_out(char *out, size_t n, const char *fmt, ...)
{
    char cmd[8192], full[8800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "cd '%s' && { %s; } 2>'%s/err'", tmpdir, cmd, tmpdir);
    FILE *p = popen(full, "r");
    cr_assert(p);
    size_t k = fread(out, 1, n - 1, p);
    out[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* "verify      op: D digests, C compared with the capture, M differ": C, or -1. */
static long compared(const char *replay_out)
{
    const char *v = strstr(replay_out, "digests, ");
    return v ? strtol(v + 9, NULL, 10) : -1;
}

/* Memory the driver recycles (tests/vk/vk_recycle): a new allocation holds what a freed one
 * did, and the host writes mostly the same bytes again. The trace's memory starts zeroed, so
 * what the mapping held when first mapped must be in it: with each way of finding host writes,
 * every read-back replays bit for bit. */
struct envcase { /* an array: Criterion copies parameters into another process */
    char env[64];
};

ParameterizedTestParameters(vulkan, recycled_memory_replays_every_read_back)
{
    static struct envcase c[] = {{""},
                                 {"REPRISE_HOST_WRITES=protect"},
                                 {"REPRISE_HOST_WRITES=scan"},
                                 {"REPRISE_HOST_COPY=1"}};
    return cr_make_param_array(struct envcase, c, sizeof c / sizeof c[0]);
}

ParameterizedTest(struct envcase *c, vulkan, recycled_memory_replays_every_read_back)
{
    need_vulkan();
    char cmd[4096], out[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s '%s' capture -o rc.sbt -- '%s/tests/vk/vk_recycle' >out 2>err", tmpdir,
             c->env, bin, build);
    cr_assert_eq(system(cmd), 0, "capture failed: %s", cmd);
    int rc = sh_out(out, sizeof out, "'%s' replay rc.sbt --mode full --verify op", bin);
    cr_assert_eq(rc, 0, "replay exit %d: %s", rc, out);
    cr_expect(strstr(out, " 16 compared with the capture, 0 differ"), "[%s] %s", c->env, out);
}

/* Programs we did not write, on the other driver: WGSL compute on Dawn (which needs Mesa 25),
 * and TensorFlow.js's WebGPU backend on it, captured and replayed on Mesa 25 with every op's
 * outputs read back; every read-back the program made is reproduced bit for bit, and the
 * determinism gate passes. */
ParameterizedTestParameters(vulkan, webgpu_programs_replay_exactly)
{
    static struct vkprog p[] = {{"buffers", ""}, {"textures", ""}, {"mlp", ""}, {"tfjs", ""}};
    return cr_make_param_array(struct vkprog, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct vkprog *p, vulkan, webgpu_programs_replay_exactly)
{
#if defined(__SANITIZE_ADDRESS__)
    /* node (V8) reserves the addresses where AddressSanitizer's shadow must go, so an
     * ASan-built layer cannot be loaded into it ("Shadow memory range interleaves") */
    cr_skip_test("an ASan build of the capture layer cannot load into node");
#endif
    char why[512], out[8192];
    need_vulkan();
    const char *mesa = tenv_mesa25(why, sizeof why),
               *wg = mesa ? tenv_webgpu(why, sizeof why) : NULL;
    if (!mesa || !wg)
        cr_skip_test("%s", why);
    cr_assert_eq(sh_out(out, sizeof out,
                        "%s%s '%s' capture -o t.sbt -- node '%s/tests/webgpu/%s.mjs'", mesa, wg,
                        bin, tenv_src(), p->prog),
                 0, "capture of %s failed (see %s/err)", p->prog, tmpdir);
    int rc = sh_out(out, sizeof out, "%s'%s' replay t.sbt --mode full --verify op", mesa, bin);
    cr_assert_eq(rc, 0, "%s: replay exit %d: %s (stderr in %s/err)", p->prog, rc, out, tmpdir);
    /* each program reads back at least twice (buffers: 3, textures: 2, mlp: 3, tfjs: 21) */
    cr_expect_geq(compared(out), 2, "%s: read-backs compared: %s", p->prog, out);
    cr_expect(strstr(out, ", 0 differ"), "%s", out);
    rc = sh_out(out, sizeof out, "%s'%s' check t.sbt --runs 2", mesa, bin);
    cr_expect_eq(rc, 0, "%s: check exit %d: %s", p->prog, rc, out);
}

/* Programs that bind their buffers every way Vulkan has (tests/vk/vk_descriptors: push
 * descriptors plain and through templates, set templates of every buffer descriptor type,
 * dynamic offsets, the maintenance6 forms, descriptor indexing) are captured and replayed with
 * every op's outputs read back: every read-back the program made is reproduced bit for bit. The
 * modes Debian 12's lavapipe lacks run on Mesa 25. */
struct vkmode { /* arrays, not pointers: Criterion copies parameters into another process */
    char prog[32], mode[16];
    int mesa25;
};

static void replay_mode_exactly(const struct vkmode *p)
{
    char why[512], out[8192];
    need_vulkan();
    const char *env = p->mesa25 ? tenv_mesa25(why, sizeof why) : "";
    if (!env)
        cr_skip_test("%s", why);
    if (!strncmp(p->mode, "push", 4) && !tenv_vk_registry_has("vkCmdPushDescriptorSet"))
        cr_skip_test("this build's Vulkan registry predates 1.4: push descriptors are unmodelled");
    int rc = sh_out(out, sizeof out, "%s'%s' capture --digests -o t.sbt -- '%s/tests/vk/%s' %s",
                    env, bin, build, p->prog, p->mode);
    if (rc == 4)
        cr_skip_test("the device lacks what %s %s needs", p->prog, p->mode);
    cr_assert_eq(rc, 0, "capture of %s %s failed (see %s/err)", p->prog, p->mode, tmpdir);
    rc = sh_out(out, sizeof out, "%s'%s' replay t.sbt --mode full --verify op", env, bin);
    cr_assert_eq(rc, 0, "%s %s: replay exit %d: %s (stderr in %s/err)", p->prog, p->mode, rc, out,
                 tmpdir);
    cr_expect_geq(compared(out), 2, "%s %s: read-backs compared: %s", p->prog, p->mode, out);
    cr_expect(strstr(out, ", 0 differ"), "%s", out);
}

ParameterizedTestParameters(vulkan, binding_programs_replay_exactly)
{
    static struct vkmode p[] = {
        {"vk_descriptors", "push", 0},     {"vk_descriptors", "push-template", 0},
        {"vk_descriptors", "template", 0}, {"vk_descriptors", "dynamic", 0},
        {"vk_descriptors", "push2", 1},    {"vk_descriptors", "indexing", 1},
    };
    return cr_make_param_array(struct vkmode, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct vkmode *p, vulkan, binding_programs_replay_exactly)
{
    replay_mode_exactly(p);
}

/* Pipelines made every way the capture records (tests/vk/vk_pipelines: full and required
 * subgroup sizes, specialization constants of each kind, create flags with a pipeline cache
 * and derivatives, maintenance5's inline module and 64-bit flags) replay bit for bit. */
ParameterizedTestParameters(vulkan, pipeline_programs_replay_exactly)
{
    static struct vkmode p[] = {
        {"vk_pipelines", "subgroup", 0}, {"vk_pipelines", "spec", 0},
        {"vk_pipelines", "flags", 0},    {"vk_pipelines", "maint5", 1},
        {"vk_pipelines", "robust", 1},
    };
    return cr_make_param_array(struct vkmode, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct vkmode *p, vulkan, pipeline_programs_replay_exactly)
{
    replay_mode_exactly(p);
}

/* The issue's lead example: saxpy through push descriptors passes the gate (it used to FAIL,
 * blaming a deterministic program). */
Test(vulkan, push_descriptor_saxpy_passes_check)
{
    char out[8192];
    need_vulkan();
    if (!tenv_vk_registry_has("vkCmdPushDescriptorSet"))
        cr_skip_test("this build's Vulkan registry predates 1.4: push descriptors are unmodelled");
    int rc = sh_out(out, sizeof out, "'%s' capture -o t.sbt -- '%s/tests/vk/vk_descriptors' push",
                    bin, build);
    cr_assert_eq(rc, 0, "capture failed (see %s/err)", tmpdir);
    rc = sh_out(out, sizeof out, "'%s' check t.sbt --runs 2", bin);
    cr_assert_eq(rc, 0, "check exit %d: %s (stderr in %s/err)", rc, out, tmpdir);
    cr_expect(strstr(out, "PASS"), "%s", out);
}

/* Buffer device addresses (tests/vk/vk_address: pointers in a buffer and in push constants, a
 * kernel writing through one, another only reading). lavapipe has no
 * bufferDeviceAddressCaptureReplay: its trace is complete, and replay refuses it (exit 4)
 * saying why instead of letting the shaders dereference stale pointers. */
Test(vulkan, device_addresses_without_capture_replay_are_refused)
{
    char out[8192], err[4096];
    need_vulkan();
    int rc =
        sh_out(out, sizeof out, "'%s' capture -o t.sbt -- '%s/tests/vk/vk_address'", bin, build);
    if (rc == 4)
        cr_skip_test("the device has no buffer device addresses");
    cr_assert_eq(rc, 0, "capture failed (see %s/err)", tmpdir);
    rc = sh_out(out, sizeof out, "'%s' replay t.sbt --mode full --verify op", bin);
    cr_expect_eq(rc, 4, "replay exit %d: %s", rc, out);
    snprintf(err, sizeof err, "%s/err", tmpdir);
    FILE *f = fopen(err, "r");
    cr_assert(f);
    size_t k = fread(out, 1, sizeof out - 1, f);
    out[k] = 0;
    fclose(f);
    cr_expect(strstr(out, "uses buffer device addresses") &&
                  strstr(out, "did not offer bufferDeviceAddressCaptureReplay"),
              "%s", out);
}

/* The test layer VK_LAYER_REPRISE_fakebda (tests/vk/layer_fakebda.c) gives lavapipe
 * capture-replay: the capture records opaque addresses, replay makes every buffer at its
 * captured address, and every read-back is reproduced; check passes; a range replay from the
 * second round rebuilds what the address-using kernels may have read (the slice follows their
 * accesses to every buffer with an address) and agrees; without the layer the same trace is
 * refused, naming the device's lack. */
Test(vulkan, device_addresses_replay_at_their_captured_addresses)
{
    char out[8192], layer[4400];
    need_vulkan();
    snprintf(layer, sizeof layer,
             "VK_ADD_LAYER_PATH='%s/tests/vk' VK_INSTANCE_LAYERS=VK_LAYER_REPRISE_fakebda ", build);
    int rc =
        sh_out(out, sizeof out, "%s'%s' capture --digests -o t.sbt -- '%s/tests/vk/vk_address'",
               layer, bin, build);
    if (rc == 4)
        cr_skip_test("the device has no buffer device addresses");
    cr_assert_eq(rc, 0, "capture failed (see %s/err)", tmpdir);
    rc = sh_out(out, sizeof out, "%s'%s' replay t.sbt --mode full --verify op", layer, bin);
    cr_assert_eq(rc, 0, "replay exit %d: %s (stderr in %s/err)", rc, out, tmpdir);
    cr_expect_geq(compared(out), 4, "%s", out);
    cr_expect(strstr(out, ", 0 differ"), "%s", out);
    rc = sh_out(out, sizeof out, "%s'%s' check t.sbt --runs 2", layer, bin);
    cr_expect_eq(rc, 0, "check exit %d: %s (stderr in %s/err)", rc, out, tmpdir);
    /* from the second submission on */
    sbt_reader *r = open_tmp("t.sbt");
    uint64_t sub[8], n_sub = 0, end = sbt_reader_info(r)->seq_end;
    sbt_cursor *c = NULL;
    const struct sbt_op *op;
    cr_assert_eq(sbt_cursor_open(r, NULL, &c), 0);
    while (sbt_cursor_next(c, &op) == 1)
        if (op->kind == SBT_OP_SUBMIT && n_sub < 8)
            sub[n_sub++] = op->seq;
    sbt_cursor_close(c);
    sbt_reader_close(r);
    cr_assert_geq(n_sub, 2);
    rc = sh_out(out, sizeof out, "%s'%s' replay t.sbt --mode full --verify op --ops %llu:%llu",
                layer, bin, (unsigned long long)sub[1], (unsigned long long)end);
    cr_assert_eq(rc, 0, "range replay exit %d: %s (stderr in %s/err)", rc, out, tmpdir);
    cr_expect_geq(compared(out), 2, "%s", out);
    cr_expect(strstr(out, ", 0 differ"), "%s", out);
    rc = sh_out(out, sizeof out, "'%s' replay t.sbt --mode full", bin);
    cr_expect_eq(rc, 4, "replay without capture-replay: exit %d", rc);
}

/* Replay on a device whose host-visible memory is not coherent (the test layer
 * VK_LAYER_REPRISE_noncoherent, tests/vk/layer_noncoherent.c, makes lavapipe's so: a mapping is
 * a host copy that reaches the device only at a flush, and sees device output only at an
 * invalidate, by atoms of nonCoherentAtomSize): a trace captured on coherent memory replays
 * with every host write flushed before the device reads it and every read-back invalidated
 * first, bit for bit, each device op's outputs too. Without its flushes, the dispatches read
 * zeros; without its invalidates, the read-backs are stale. */
struct ringargs { /* an array: Criterion copies parameters into another process */
    char args[48];
};

ParameterizedTestParameters(vulkan, noncoherent_device_replays_flushing_and_invalidating)
{
    static struct ringargs p[] = {{"chain --size 16384 --noncoherent"}, {"ring --noncoherent"}};
    return cr_make_param_array(struct ringargs, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct ringargs *p, vulkan, noncoherent_device_replays_flushing_and_invalidating)
{
    char out[8192], layer[4400];
    need_vulkan();
    snprintf(layer, sizeof layer,
             "VK_ADD_LAYER_PATH='%s/tests/vk' VK_INSTANCE_LAYERS=VK_LAYER_REPRISE_noncoherent "
             "VK_LOADER_LAYERS_ENABLE=VK_LAYER_REPRISE_noncoherent ",
             build);
    capture("vk_ring", p->args, "t.sbt");
    int rc = sh_out(out, sizeof out, "%s'%s' replay t.sbt --mode full --verify op", layer, bin);
    cr_assert_eq(rc, 0, "replay exit %d: %s (stderr in %s/err)", rc, out, tmpdir);
    cr_expect_geq(compared(out), 64, "%s", out); /* 32 read-backs, 32 dispatches */
    cr_expect(strstr(out, ", 0 differ"), "%s", out);
    rc = sh_out(out, sizeof out, "%s'%s' check t.sbt --runs 2 --keep runs", layer, bin);
    cr_expect_eq(rc, 0, "check exit %d: %s (stderr in %s/err)", rc, out, tmpdir);
}

/* The driver-upgrade gate: a capture made on the system's driver (Debian 12: Mesa 22.3) is
 * replayed and checked on Mesa 25; a deterministic program passes. vk_images exact: images in
 * both drivers' tilings, compared in the trace's packed layout. */
ParameterizedTestParameters(vulkan, a_capture_from_one_driver_passes_check_on_another)
{
    static struct vkprog p[] = {{"vk_compute", ""}, {"vk_images", "exact"}};
    return cr_make_param_array(struct vkprog, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct vkprog *p, vulkan, a_capture_from_one_driver_passes_check_on_another)
{
    char why[512], out[8192];
    need_vulkan();
    const char *mesa = tenv_mesa25(why, sizeof why);
    if (!mesa)
        cr_skip_test("%s", why);
    capture(p->prog, p->args, "t.sbt");
    int rc = sh_out(out, sizeof out, "%s'%s' check t.sbt --runs 2 --keep runs", mesa, bin);
    cr_assert_eq(rc, 0, "check on Mesa 25 exit %d: %s (stderr in %s/err)", rc, out, tmpdir);
    rc = sh_out(out, sizeof out, "'%s' info runs/run1.sbt | grep replay.driver", bin);
    cr_expect(strstr(out, "Mesa 25."), "the runs are on Mesa 25: %s", out);
}

/* A device that cannot bind a buffer where the capture did (alignment, memory type) gets it
 * relocated into memory of its own; REPRISE_VK_RELOCATE=1 relocates every buffer, so every
 * host write, read, read-back and device access goes through the relocation: the outputs stay
 * those of the capture. */
ParameterizedTestParameters(vulkan, relocated_buffers_replay_the_same)
{
    static struct vkprog p[] = {{"vk_compute", ""}, {"vk_bench", "data"}};
    return cr_make_param_array(struct vkprog, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct vkprog *p, vulkan, relocated_buffers_replay_the_same)
{
    need_vulkan();
    capture(p->prog, p->args, "t.sbt");
    sbt_reader *r = open_tmp("t.sbt");
    struct replay_result res;
    setenv("REPRISE_VK_RELOCATE", "1", 1);
    cr_assert_eq(replay_run(r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP), &res), 0, "%s",
                 replay_errmsg());
    unsetenv("REPRISE_VK_RELOCATE");
    cr_expect_eq(res.n_errors, 0, "%s", res.first_error_msg);
    cr_expect_gt(res.n_compared, 0);
    cr_expect_eq(res.n_mismatch, 0, "first mismatch at op %" PRIu64, res.first_mismatch);
    replay_result_free(&res);
    sbt_reader_close(r);
}

/* Images on Mesa 25 too: captured and replayed there, every read-back reproduced. */
Test(vulkan, image_programs_replay_on_mesa25)
{
    char why[512], out[8192];
    need_vulkan();
    const char *mesa = tenv_mesa25(why, sizeof why);
    if (!mesa)
        cr_skip_test("%s", why);
    cr_assert_eq(sh_out(out, sizeof out,
                        "%s'%s' capture --digests -o t.sbt -- '%s/tests/vk/vk_images' >/dev/null",
                        mesa, bin, build),
                 0, "capture of vk_images on Mesa 25 failed (see %s/err)", tmpdir);
    int rc = sh_out(out, sizeof out, "%s'%s' replay t.sbt --mode full --verify op", mesa, bin);
    cr_assert_eq(rc, 0, "replay exit %d: %s (stderr in %s/err)", rc, out, tmpdir);
    cr_expect_gt(compared(out), 10, "read-backs compared: %s", out);
    cr_expect(strstr(out, ", 0 differ"), "%s", out);
}

/* Every image format the device can copy, in every shape it allows (tests/vk/vk_formats): the
 * replay's outputs of each upload — the image's packed bytes, read back through the replay's
 * own copies of whole rows — are the upload's tightly packed regions one after the other, the
 * bytes the program itself wrote. So the packed layout of format/sbt_vk.h (sizes, levels,
 * layers, aspects, planes, blocks) is what the driver's copies give, format by format. */
struct mem_bytes {
    uint64_t res, size;
    uint8_t *b;
};

static struct mem_bytes *mem_of(struct mem_bytes *m, uint32_t *n, uint64_t res, uint64_t end)
{
    for (uint32_t i = 0; i < *n; i++)
        if (m[i].res == res) {
            if (m[i].size < end) {
                m[i].b = realloc(m[i].b, end);
                memset(m[i].b + m[i].size, 0, end - m[i].size);
                m[i].size = end;
            }
            return &m[i];
        }
    cr_assert_lt(*n, 4096);
    m[*n] = (struct mem_bytes){res, end, calloc(1, end ? end : 1)};
    return &m[(*n)++];
}

static void formats_in_packed_layout(const char *env)
{
    char out[65536], path[1024];
    cr_assert_eq(sh_out(out, sizeof out, "%s'%s' capture -o f.sbt -- '%s/tests/vk/vk_formats'", env,
                        bin, build),
                 0, "capture of vk_formats failed (see %s/err)", tmpdir);
    cr_assert(strstr(out, ", 0 do not"), "the driver's own round trip: %s", out);
    int rc =
        sh_out(out, sizeof out, "%s'%s' replay f.sbt --mode full --verify op --dump d", env, bin);
    cr_assert_eq(rc, 0, "replay exit %d: %s (stderr in %s/err)", rc, out, tmpdir);
    cr_expect(strstr(out, ", 0 differ"), "%s", out);
    sbt_reader *r = open_tmp("f.sbt");
    sbt_cursor *c = NULL;
    const struct sbt_op *op;
    cr_assert_eq(sbt_cursor_open(r, NULL, &c), 0);
    static struct mem_bytes mem[4096];
    uint32_t n_mem = 0, n_checked = 0;
    while (sbt_cursor_next(c, &op) == 1) {
        if (op->kind == SBT_OP_HOST_WRITE) { /* what the host wrote, where */
            void *data = NULL;
            size_t len = 0, pos = 0;
            cr_assert_eq(sbt_reader_blob(r, &op->blob, &data, &len), 0);
            for (uint32_t i = 0; i < op->n_access; i++) {
                const struct sbt_access *a = &op->access[i];
                struct mem_bytes *m = mem_of(mem, &n_mem, a->resource, a->offset + a->len);
                memcpy(m->b + a->offset, (uint8_t *)data + pos, a->len);
                pos += a->len;
            }
            free(data);
            continue;
        }
        struct sbt_payload_dec dec;
        struct sbt_payload_rec rec;
        int f = op->kind == SBT_OP_COPY && op->payload.kind == SBT_VK_PAYLOAD
                    ? sbt_payload_find(&dec, op->payload.data, op->payload.len,
                                       SBT_VK_COPY_BUFFER_TO_IMAGE, &rec)
                    : 0;
        if (op->kind == SBT_OP_COPY && op->payload.kind == SBT_VK_PAYLOAD)
            sbt_payload_dec_free(&dec);
        if (f != 1)
            continue;
        /* its reads are the regions' buffer bytes (tightly packed: one range each), in order */
        size_t cap = 0, n = 0;
        uint8_t *want = NULL;
        for (uint32_t i = 0; i < op->n_access; i++) {
            const struct sbt_access *a = &op->access[i];
            if (!(a->mode & SBT_ACCESS_READ))
                continue;
            struct mem_bytes *m = mem_of(mem, &n_mem, a->resource, a->offset + a->len);
            if (n + a->len > cap)
                want = realloc(want, cap = (n + a->len) * 2);
            memcpy(want + n, m->b + a->offset, a->len);
            n += a->len;
        }
        snprintf(path, sizeof path, "%s/d/%" PRIu64 ".bin", tmpdir, op->seq);
        FILE *df = fopen(path, "rb");
        cr_assert(df, "no dump of op %" PRIu64, op->seq);
        uint8_t *got = malloc(n + 1);
        size_t k = fread(got, 1, n + 1, df);
        fclose(df);
        cr_expect_eq(k, n, "op %" PRIu64 ": %zu packed bytes, the upload has %zu", op->seq, k, n);
        cr_expect(k == n && !memcmp(got, want, n),
                  "op %" PRIu64 ": the image's packed bytes are not the upload's", op->seq);
        free(got);
        free(want);
        n_checked++;
    }
    sbt_cursor_close(c);
    sbt_reader_close(r);
    for (uint32_t i = 0; i < n_mem; i++)
        free(mem[i].b);
    cr_expect_gt(n_checked, 100, "only %u uploads checked", n_checked);
}

Test(vulkan, every_format_replays_in_its_packed_layout)
{
    need_vulkan();
    formats_in_packed_layout("");
}

Test(vulkan, every_format_replays_in_its_packed_layout_on_mesa25)
{
    char why[512];
    need_vulkan();
    const char *mesa = tenv_mesa25(why, sizeof why);
    if (!mesa)
        cr_skip_test("%s", why);
    formats_in_packed_layout(mesa);
}

/* Puts an unrecorded vkCmdDraw (as the capture marks commands outside its subset) right after
 * the first dispatch. */
static int add_draw(struct editor *e, sbt_writer *w, struct sbt_op *op)
{
    if (op->kind != SBT_OP_KERNEL || e->done)
        return 0;
    cr_assert_eq(sbt_writer_add_op(w, op, NULL), 0);
    struct sbt_op m = *op;
    m.kind = SBT_OP_MARKER;
    m.flags = SBT_OPF_UNSUPPORTED | SBT_OPF_PAYLOAD;
    m.n_access = 0;
    sbt_payload_enc_reset(&e->enc);
    sbt_payload_put(&e->enc, SBT_VK_CMD_UNSUPPORTED, NULL, 0, "vkCmdDraw", 9);
    m.payload = (struct sbt_ext){SBT_VK_PAYLOAD, (uint32_t)e->enc.len, e->enc.buf};
    cr_assert_eq(sbt_writer_intern(w, "unsupported command", &m.name), 0);
    uint64_t seq;
    cr_assert_eq(sbt_writer_add_op(w, &m, &seq), 0);
    e->done = (int)seq;
    return 1;
}

Test(vulkan, an_unsupported_op_is_named)
{
    need_vulkan();
    capture("vk_compute", NULL, "t.sbt");
    struct editor e = {.op = add_draw};
    rewrite("t.sbt", "u.sbt", &e, 0);
    cr_assert_gt(e.done, 0);
    sbt_reader *r = open_tmp("u.sbt");
    struct replay_result res;
    /* the graph says so before anything runs */
    char want[160];
    snprintf(want, sizeof want, "op %d (marker 'unsupported command') is marked unsupported",
             e.done);
    cr_expect_eq(replay_run(r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_END), &res), REPLAY_EGRAPH);
    cr_expect(strstr(replay_errmsg(), want), "%s", replay_errmsg());
    replay_result_free(&res);
    /* replayed anyway, the op itself fails naming the command */
    cr_assert_eq(
        replay_run(r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_END, .allow_incomplete = 1), &res), 0,
        "%s", replay_errmsg());
    cr_expect_eq(res.first_error, (uint64_t)e.done);
    cr_expect_eq(res.first_error_status, REPLAY_EUNSUPPORTED);
    snprintf(want, sizeof want, "op %d (unsupported command): vkCmdDraw is not supported", e.done);
    cr_expect_str_eq(res.first_error_msg, want);
    replay_result_free(&res);
    sbt_reader_close(r);
    sbt_payload_enc_free(&e.enc);
    /* and the CLI exits 3 naming it, either way */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' replay '%s/u.sbt' --mode full 2>'%s/err' >/dev/null", bin,
             tmpdir, tmpdir);
    int rc = system(cmd);
    cr_expect_eq(WEXITSTATUS(rc), 3);
    snprintf(cmd, sizeof cmd, "grep -q 'is marked unsupported' '%s/err'", tmpdir);
    cr_expect_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "'%s' replay '%s/u.sbt' --mode full --allow-incomplete 2>'%s/err' >/dev/null", bin,
             tmpdir, tmpdir);
    rc = system(cmd);
    cr_expect_eq(WEXITSTATUS(rc), 3);
    snprintf(cmd, sizeof cmd, "grep -q 'vkCmdDraw is not supported' '%s/err'", tmpdir);
    cr_expect_eq(system(cmd), 0);
}

Test(vulkan, a_corrupted_blob_is_reported_at_the_op_that_reads_it)
{
    need_vulkan();
    capture("vk_compute", NULL, "t.sbt");
    rewrite("t.sbt", "raw.sbt", NULL, -1); /* chunks stored uncompressed */
    /* the input buffer vk_compute uploads: in[i] = i * 2654435761 */
    uint32_t pat[4];
    for (uint32_t i = 0; i < 4; i++)
        pat[i] = 100 * 2654435761u + i * 2654435761u;
    char path[512];
    snprintf(path, sizeof path, "%s/raw.sbt", tmpdir);
    FILE *f = fopen(path, "r+b");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    uint8_t *buf = malloc((size_t)size);
    fseek(f, 0, SEEK_SET);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    uint8_t *hit = memmem(buf, (size_t)size, pat, sizeof pat);
    cr_assert(hit, "upload bytes not found in the uncompressed trace");
    uint64_t at = (uint64_t)(hit - buf);
    buf[at] ^= 0x40;
    /* keep the chunk's CRCs right, so only the blob's hash can tell */
    sbt_reader *r = open_tmp("raw.sbt");
    uint64_t nc;
    const struct sbt_chunk_info *ci = sbt_reader_chunks(r, &nc);
    int fixed = 0;
    for (uint64_t i = 0; i < nc; i++)
        if (at >= ci[i].offset + 56 && at < ci[i].offset + 56 + ci[i].stored_len) {
            uint8_t *h = buf + ci[i].offset;
            uint32_t pc = sbt_crc32c(0, h + 56, ci[i].stored_len);
            memcpy(h + 28, &pc, 4);
            uint32_t hc = sbt_crc32c(0, h, 52);
            memcpy(h + 52, &hc, 4);
            fixed = 1;
        }
    sbt_reader_close(r);
    cr_assert(fixed);
    fseek(f, 0, SEEK_SET);
    cr_assert_eq(fwrite(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    free(buf);
    r = open_tmp("raw.sbt");
    /* which op uploads it: the host write of that memory before the first submit */
    struct replay_result res;
    cr_assert_eq(replay_run(r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_END), &res), 0, "%s",
                 replay_errmsg());
    cr_assert_gt(res.n_errors, 0);
    sbt_cursor *cu;
    const struct sbt_op *op;
    struct sbt_range one = {
        .has_seq = 1, .seq_begin = res.first_error, .seq_end = res.first_error + 1};
    cr_assert_eq(sbt_cursor_open(r, &one, &cu), 0);
    cr_assert_eq(sbt_cursor_next(cu, &op), 1);
    cr_expect_eq(op->kind, SBT_OP_HOST_WRITE, "the error is at the op that reads the blob");
    sbt_cursor_close(cu);
    cr_expect_eq(res.first_error_status, SBT_ECORRUPT);
    cr_expect(strstr(res.first_error_msg, "hash"), "%s", res.first_error_msg);
    replay_result_free(&res);
    sbt_reader_close(r);
}

/* ========================================================================================== */
/* Perturbed replays on lavapipe                                                              */
/* ========================================================================================== */

/* The digest of op seq in a replay of r with perturbation p (kind 0: a plain one). */
static sbt_hash perturbed_digest(sbt_reader *r, struct replay_perturb p, uint64_t seq,
                                 struct replay_result *res)
{
    uint64_t n = sbt_reader_info(r)->seq_end;
    struct coll c;
    coll_init(&c, n);
    int st = replay_run(
        r, &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP, .on_op = coll_on_op, .ctx = &c, .perturb = p),
        res);
    cr_assert_eq(st, 0, "%s", replay_errmsg());
    cr_assert(seq < n && c.has[seq], "op %" PRIu64 " has no digest", seq);
    sbt_hash d = c.dig[seq];
    coll_free(&c);
    return d;
}

/* `replay --perturb KIND:SEED` reproduces a perturbed replay exactly: vk_orderdep atomics
 * split by seed 3 (its float sum rounds in another workgroup order) and uninit poisoned by
 * seed 3 (it reads memory nothing wrote) give the same outputs twice, outputs that differ
 * from the plain replay's (so something was perturbed), and another seed gives others. With
 * LP_NUM_THREADS=0, as the plain replay is stable then. */
Test(vulkan, perturbed_replays_reproduce_with_their_seed)
{
    need_vulkan();
    char exe[1024];
    snprintf(exe, sizeof exe, "%s/tests/vk/vk_orderdep", build);
    if (access(exe, X_OK))
        cr_skip_test("%s not built", exe);
    setenv("LP_NUM_THREADS", "0", 1);
    const char *modes[] = {"atomics", "uninit"};
    uint32_t kinds[] = {REPLAY_PERTURB_SPLIT, REPLAY_PERTURB_POISON};
    for (int i = 0; i < 2; i++) {
        capture("vk_orderdep", modes[i], "o.sbt");
        sbt_reader *r = open_tmp("o.sbt");
        uint64_t k = UINT64_MAX;
        first_kernel(r, &k);
        struct replay_result res;
        sbt_hash plain = perturbed_digest(r, (struct replay_perturb){0}, k, &res);
        cr_expect_eq(res.n_mismatch, 0, "%s: the plain replay is the capture", modes[i]);
        replay_result_free(&res);
        struct replay_perturb p = {kinds[i], 3}, q = {kinds[i], 4};
        sbt_hash a = perturbed_digest(r, p, k, &res);
        cr_expect_str_eq(res.perturb, i ? "poison:3" : "split:3");
        cr_expect(res.perturb_what[0] != 0);
        replay_result_free(&res);
        sbt_hash b = perturbed_digest(r, p, k, &res);
        replay_result_free(&res);
        sbt_hash c = perturbed_digest(r, q, k, &res);
        replay_result_free(&res);
        cr_expect(!sbt_hash_eq(a, plain), "%s: the perturbation changed op %" PRIu64, modes[i], k);
        cr_expect(sbt_hash_eq(a, b), "%s: the same seed gives the same outputs", modes[i]);
        cr_expect(!sbt_hash_eq(c, a), "%s: another seed, other outputs", modes[i]);
        sbt_reader_close(r);
    }
    unsetenv("LP_NUM_THREADS");
}
