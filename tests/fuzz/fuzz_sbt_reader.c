/*
 * tests/fuzz/fuzz_sbt_reader.c — the SBT reader on arbitrary bytes: open (footer and forced
 * scan), every op, every blob, every state (and the blobs of its chunks), validate, and the
 * race analysis (scheduler/sched_race.c) over it. Any outcome is
 * fine but a crash, a leak, a hang or a failure without a message.
 */
#include <stdint.h>
#include <string.h>

#include "format/sbt.h"
#include "scheduler/sched.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void need_message(int st)
{
    if (st < 0 && !strcmp(sbt_errmsg(), "no error"))
        abort();
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
