/*
 * tests/fuzz/fuzz_sbt_reader.c — the SBT reader on arbitrary bytes: open (footer and forced
 * scan), the clock fit of its metadata, every op (and a bulk read of every column
 * against it), every blob, every state (and the blobs of its chunks), validate, and
 * the race analysis (scheduler/sched_race.c) over it. Any outcome is fine but a crash,
 * a leak, a hang or a failure without a message.
 */
#include <stdint.h>
#include <string.h>

#include "format/sbt.h"
#include "format/sbt_align.h"
#include "scheduler/sched.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void need_message(int st)
{
    if (st < 0 && !strcmp(sbt_errmsg(), "no error"))
        abort();
}

/* sbt_cursor_read of every column, 64 rows at a time, against sbt_cursor_next over range rg. */
#define BULK_CAP 64
static void bulk_check(sbt_reader *r, const struct sbt_range *rg)
{
    static uint64_t seq[BULK_CAP], hb[BULK_CAP], he[BULK_CAP], db[BULK_CAP], de[BULK_CAP];
    static uint64_t by[BULK_CAP], res[BULK_CAP], obj[BULK_CAP], val[BULK_CAP];
    static uint64_t blob[2 * BULK_CAP], dig[2 * BULK_CAP];
    static uint32_t fl[BULK_CAP], str[BULK_CAP], thr[BULK_CAP], nm[BULK_CAP], ker[BULK_CAP];
    static uint32_t grid[3 * BULK_CAP], blk[3 * BULK_CAP], shm[BULK_CAP], err[BULK_CAP];
    static uint32_t nacc[BULK_CAP];
    static uint8_t kind[BULK_CAP], sub[BULK_CAP];
    struct sbt_columns cols =
        SBT_COLUMNS(.seq = seq, .kind = kind, .subkind = sub, .flags = fl, .stream = str,
                    .thread = thr, .name = nm, .host_begin = hb, .host_end = he, .dev_begin = db,
                    .dev_end = de, .kernel = ker, .grid = grid, .block = blk, .shmem = shm,
                    .bytes = by, .resource = res, .obj = obj, .value = val, .blob = blob,
                    .digest = dig, .error = err, .n_access = nacc);
    sbt_cursor *a, *b;
    if (sbt_cursor_open(r, rg, &a))
        return;
    if (sbt_cursor_open(r, rg, &b)) {
        sbt_cursor_close(a);
        return;
    }
    int sa;
    const struct sbt_op *op;
    while ((sa = sbt_cursor_next(a, &op)) == 1)
        ;
    sbt_cursor_close(a);
    if (sbt_cursor_open(r, rg, &a)) {
        sbt_cursor_close(b);
        return;
    }
    uint64_t bound = sbt_cursor_bound(b), total = 0, n;
    int sb;
    while ((sb = sbt_cursor_read(b, &cols, BULK_CAP, &n)) == 0 && n) {
        total += n;
        for (uint64_t i = 0; i < n && sa == 0; i++) {
            if (sbt_cursor_next(a, &op) != 1)
                abort(); /* more rows than the cursor has ops */
            if (seq[i] != op->seq || kind[i] != op->kind || sub[i] != op->subkind ||
                fl[i] != op->flags || str[i] != op->stream || thr[i] != op->thread ||
                nm[i] != op->name || hb[i] != op->host_begin || he[i] != op->host_end ||
                db[i] != op->dev_begin || de[i] != op->dev_end || ker[i] != op->kernel ||
                memcmp(grid + 3 * i, op->grid, 12) || memcmp(blk + 3 * i, op->block, 12) ||
                shm[i] != op->shmem || by[i] != op->bytes || res[i] != op->resource ||
                obj[i] != op->obj || val[i] != op->value || blob[2 * i] != op->blob.lo ||
                blob[2 * i + 1] != op->blob.hi || dig[2 * i] != op->digest.lo ||
                dig[2 * i + 1] != op->digest.hi || err[i] != op->error || nacc[i] != op->n_access)
                abort(); /* a row differs from the cursor's op */
        }
    }
    need_message(sb);
    if (sa == 0 && sb < 0)
        abort(); /* the cursor read every op, the bulk read failed */
    if (sa == 0 && (sbt_cursor_next(a, &op) != 0 || (total > bound && (!rg || !rg->has_time))))
        abort(); /* fewer rows than ops, or more than the bound */
    sbt_cursor_close(a);
    sbt_cursor_close(b);
}

static void race(void *ctx, const struct sched_race *f)
{
    (void)ctx;
    if (!f->msg || !*f->msg || f->first >= f->second)
        abort();
}

static void report(void *ctx, int sev, const char *msg)
{
    (void)ctx;
    (void)sev;
    if (!msg || !*msg)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_path("sbt");
    if (fuzz_write(path, data, size))
        return 0;
    for (int scan = 0; scan < 2; scan++) {
        struct sbt_open_opts o = SBT_OPEN_OPTS(.force_scan = scan, .max_chunk_bytes = 1 << 24);
        sbt_reader *r;
        int st = sbt_reader_open(path, &o, &r);
        need_message(st);
        if (st < 0)
            continue;
        struct sbt_clock_fit fit; /* the clock pairs in its metadata (sbt_align.h) */
        need_message(sbt_clock_fit_trace(r, &fit));
        sbt_cursor *c;
        const struct sbt_op *op;
        if (sbt_cursor_open(r, NULL, &c) == 0) {
            while ((st = sbt_cursor_next(c, &op)) == 1)
                for (uint32_t i = 0; i < op->n_access; i++)
                    if (op->access[i].mode == 0)
                        abort();
            need_message(st);
            sbt_cursor_close(c);
        }
        bulk_check(r, NULL);
        /* the race analysis decodes Vulkan recordings and submissions, CUDA stream rows */
        if (sched_races_run(r, NULL, race, NULL, NULL) < 0 && !strcmp(sched_errmsg(), "no error"))
            abort();
        const struct sbt_info *in = sbt_reader_info(r);
        struct sbt_range rg = {.has_time = 1,
                               .t_begin = in->t_min + (in->t_max - in->t_min) / 2,
                               .t_end = in->t_max,
                               .has_seq = 1,
                               .seq_begin = 1,
                               .seq_end = 100};
        if (sbt_cursor_open(r, &rg, &c) == 0) {
            while ((st = sbt_cursor_next(c, &op)) == 1)
                ;
            sbt_cursor_close(c);
        }
        bulk_check(r, &rg);
        uint32_t n;
        const struct sbt_program *p = sbt_reader_programs(r, &n);
        for (uint32_t i = 0; i < n; i++) {
            void *b;
            size_t len;
            if (sbt_reader_blob(r, &p[i].blob, &b, &len) == 0)
                free(b);
        }
        for (uint64_t i = 0; i < in->n_states; i++) {
            struct sbt_state *s;
            st = sbt_reader_state(r, i, &s);
            need_message(st);
            if (st < 0)
                continue;
            for (uint32_t a = 0; a < s->n_alloc; a++) {
                const struct sbt_state_alloc *al = &s->alloc[a];
                for (uint64_t k = 0; k < al->n_present; k++) {
                    void *b;
                    size_t len;
                    if (al->index[k] * (uint64_t)al->chunk_bytes >= al->size)
                        abort(); /* the decoder let a chunk past the allocation through */
                    if (sbt_reader_blob(r, &al->hash[k], &b, &len) == 0)
                        free(b);
                }
            }
            sbt_state_free(s);
        }
        need_message(sbt_reader_validate(r, report, NULL));
        sbt_reader_close(r);
    }
    unlink(path);
    return 0;
}
