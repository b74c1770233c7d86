/*
 * replay/replay_trim_state.c — the device's half of `reprise trim` (opts.state_out; the trimmed
 * trace itself is replay_trim.c's): the state the range reads at its first op, captured into
 * the trimmed trace as its initial STATE (FORMAT.md 5a, "initial contents").
 *
 * The engine runs the state ops and the slice (after restoring a snapshot, if any), and at the
 * range's first op, once quiescent, this drains the device and reads back the chunks (chunk
 * bytes: opts.snapshot_chunk) holding bytes the range reads, the scheduler's needs with the
 * range start as floor, each chunk once; bytes of allocations not live there are nothing to
 * keep. They become one STATE record at that op; the run stops there.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "replay/replay_int.h"

/* Chunks of one allocation kept for the trim state. */
struct kept {
    uint64_t resource, size, first, n; /* [first, first + n) of the index / hash arrays */
};

int replay__trim_state(struct replay__snap *s, const struct sbt_op *x)
{
    int r = s->c.bk->drain(s->c.be);
    if (r < 0)
        return r;
    sbt_writer *w = s->c.o->state_out;
    const struct sbt_access *nd = s->c.trim_needs;
    uint64_t nn = s->c.n_trim_needs, cb = s->chunk;
    struct kept *kp = NULL;
    uint64_t *idx = NULL;
    sbt_hash *hs = NULL;
    size_t n_kp = 0, cap_kp = 0, n_idx = 0, cap_idx = 0, cap_hs = 0;
    for (uint64_t i = 0; i < nn && r == 0;) {
        uint64_t res = nd[i].resource, last_k = UINT64_MAX;
        struct replay__live *l = replay__snap_live(s, res);
        size_t first = n_idx;
        for (; i < nn && nd[i].resource == res && r == 0; i++) {
            if (!l || nd[i].offset >= l->size)
                continue; /* not allocated there: nothing to keep */
            uint64_t end = nd[i].len < l->size - nd[i].offset ? nd[i].offset + nd[i].len : l->size;
            for (uint64_t k = nd[i].offset / cb; k <= (end - 1) / cb && r == 0; k++) {
                if (last_k != UINT64_MAX && k <= last_k)
                    continue; /* needs are sorted: a chunk shared with the previous need */
                uint64_t off = k * cb, len = l->size - off < cb ? l->size - off : cb;
                uint8_t *b = replay__snap_scratch(s, (size_t)len);
                if (!b || replay__snap_grow((void **)&idx, &cap_idx, n_idx + 1, sizeof *idx) ||
                    replay__snap_grow((void **)&hs, &cap_hs, n_idx + 1, sizeof *hs)) {
                    r = replay__snap_nomem();
                    break;
                }
                if ((r = s->c.bk->read(s->c.be, res, off, len, b)) < 0)
                    break;
                if ((r = sbt_writer_blob(w, b, (size_t)len, &hs[n_idx])) < 0) {
                    r = replay__fail(r, "trim: %s", sbt_errmsg());
                    break;
                }
                idx[n_idx++] = k;
                s->c.out->state_bytes += len;
                s->c.out->state_chunks++;
                last_k = k;
            }
        }
        if (r == 0 && n_idx > first) {
            if (replay__snap_grow((void **)&kp, &cap_kp, n_kp + 1, sizeof *kp)) {
                r = replay__snap_nomem();
                break;
            }
            kp[n_kp++] = (struct kept){res, l->size, first, n_idx - first};
        }
    }
    struct sbt_state_alloc *al = r == 0 ? calloc(n_kp ? n_kp : 1, sizeof *al) : NULL;
    if (r == 0 && !al)
        r = replay__snap_nomem();
    if (r == 0) {
        for (size_t i = 0; i < n_kp; i++)
            al[i] = (struct sbt_state_alloc){kp[i].resource, kp[i].size,        (uint32_t)cb,
                                             kp[i].n,        idx + kp[i].first, hs + kp[i].first};
        uint64_t b, e;
        sbt_op_span(x, &b, &e);
        struct sbt_state state = {.seq = x->seq, .time = b, .n_alloc = (uint32_t)n_kp, .alloc = al};
        if ((r = sbt_writer_add_state(w, &state)) < 0)
            r = replay__fail(r, "trim: %s", sbt_errmsg());
    }
    free(al);
    free(kp);
    free(idx);
    free(hs);
    return r;
}
