/*
 * replay/replay_snap_restore.c — restoring a stored state into the live allocations of a run,
 * and checking ahead (replay_plan) that a snapshot can give what a range replay will ask of it.
 *
 * What is restored (replay_snap.c keeps the restore points). A range replay with a sidecar:
 * replay__plan picks the latest snapshot at or before the range's first op and has the
 * scheduler slice the range with that snapshot as its floor: the ops after it that the range
 * needs, and the bytes still needed at it. At the snapshot's seq the device is drained and
 * exactly those bytes are written from the chunks' blobs (backend write()); an allocation the
 * trace and the snapshot disagree on (missing on one side, another size) is SBT_ECORRUPT. A
 * trimmed trace's own initial states are restored the same way, whole: every chunk they hold.
 *
 * A restore makes every chunk dirty in a run that takes snapshots: what it wrote must be read
 * again by the next snapshot.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay_int.h"

static const struct sbt_state_alloc *state_alloc(const struct sbt_state *st, uint64_t res)
{
    uint32_t lo = 0, hi = st->n_alloc;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (st->alloc[mid].resource == res)
            return &st->alloc[mid];
        if (st->alloc[mid].resource < res)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int64_t chunk_pos(const struct sbt_state_alloc *a, uint64_t k)
{
    uint64_t lo = 0, hi = a->n_present;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (a->index[mid] == k)
            return (int64_t)mid;
        if (a->index[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The bytes of chunk k of a (from src), checked against the chunk's length. */
static int chunk_bytes(sbt_reader *src, const struct sbt_state *st, const struct sbt_state_alloc *a,
                       uint64_t k, void **data, uint64_t *len)
{
    *data = NULL;
    int64_t p = chunk_pos(a, k);
    if (p < 0)
        return replay__fail(SBT_ECORRUPT,
                            "%s: state at op %" PRIu64 ": resource %" PRIu64 ": chunk %" PRIu64
                            " (bytes %" PRIu64 "..) was not stored, but the range reads it",
                            replay__path_of(src), st->seq, a->resource, k, k * a->chunk_bytes);
    uint64_t off = k * a->chunk_bytes;
    uint64_t want = a->size - off < a->chunk_bytes ? a->size - off : a->chunk_bytes;
    size_t got = 0;
    int s = sbt_reader_blob(src, &a->hash[p], data, &got);
    if (s < 0)
        return replay__fail(s == SBT_ENOTFOUND ? SBT_ECORRUPT : s,
                            "%s: state at op %" PRIu64 ": resource %" PRIu64 " chunk %" PRIu64
                            ": %s",
                            replay__path_of(src), st->seq, a->resource, k, sbt_errmsg());
    if (got != want) {
        free(*data);
        *data = NULL;
        return replay__fail(SBT_ECORRUPT,
                            "%s: state at op %" PRIu64 ": resource %" PRIu64 " chunk %" PRIu64
                            ": blob of %zu bytes, the chunk has %" PRIu64,
                            replay__path_of(src), st->seq, a->resource, k, got, want);
    }
    *len = want;
    return 0;
}

/* Writes [off, off + len) of allocation a from the state's chunks. */
static int put_bytes(struct replay__snap *s, sbt_reader *src, const struct sbt_state *st,
                     const struct sbt_state_alloc *a, uint64_t off, uint64_t len)
{
    uint64_t end = off + len;
    for (uint64_t k = off / a->chunk_bytes; off < end; k++) {
        void *data;
        uint64_t clen = 0;
        int r = chunk_bytes(src, st, a, k, &data, &clen);
        if (r < 0)
            return r;
        uint64_t c0 = k * a->chunk_bytes, b = off, e = end < c0 + clen ? end : c0 + clen;
        r = s->c.bk->write(s->c.be, a->resource, b, e - b, (uint8_t *)data + (b - c0));
        free(data);
        if (r < 0)
            return r;
        s->c.out->restore_bytes += e - b;
        off = e;
    }
    return 0;
}

int replay__snap_restore(struct replay__snap *s, const struct replay__point *p)
{
    int r = s->c.bk->drain(s->c.be);
    if (r < 0)
        return r;
    struct sbt_state *st;
    if ((r = sbt_reader_state(p->src, p->state_i, &st)) < 0)
        return replay__fail(r, "%s: %s", replay__path_of(p->src), sbt_errmsg());
    uint64_t last_res = UINT64_MAX;
    if (!p->whole) {
        for (uint64_t i = 0; i < p->n_needs && r == 0; i++) {
            const struct sbt_access *n = &p->needs[i];
            const struct sbt_state_alloc *a = state_alloc(st, n->resource);
            struct replay__live *l = replay__snap_live(s, n->resource);
            if (!a && !l)
                continue; /* not allocated at the snapshot: a read the trace makes of nothing */
            if (!a || !l || a->size != l->size || n->offset + n->len > a->size) {
                r = replay__fail(SBT_ECORRUPT,
                                 "%s: snapshot at op %" PRIu64 " does not match the trace: "
                                 "resource %" PRIu64 " is %s (the range reads bytes %" PRIu64
                                 "..%" PRIu64 ")",
                                 replay__path_of(p->src), st->seq, n->resource,
                                 !a   ? "live in the trace but not in the snapshot"
                                 : !l ? "in the snapshot but not allocated in the trace there"
                                      : "of another size in the snapshot",
                                 n->offset, n->offset + n->len);
                break;
            }
            r = put_bytes(s, p->src, st, a, n->offset, n->len);
            if (n->resource != last_res)
                s->c.out->restore_allocs++;
            last_res = n->resource;
        }
    } else {
        for (uint32_t i = 0; i < st->n_alloc && r == 0; i++) {
            const struct sbt_state_alloc *a = &st->alloc[i];
            struct replay__live *l = replay__snap_live(s, a->resource);
            if (!l || l->size != a->size) {
                r = replay__fail(SBT_ECORRUPT,
                                 "%s: initial state at op %" PRIu64 ": resource %" PRIu64
                                 " (%" PRIu64 " bytes) is %s there",
                                 replay__path_of(p->src), st->seq, a->resource, a->size,
                                 l ? "of another size" : "not allocated");
                break;
            }
            for (uint64_t k = 0; k < a->n_present && r == 0; k++) {
                uint64_t off = a->index[k] * a->chunk_bytes;
                uint64_t len = a->size - off < a->chunk_bytes ? a->size - off : a->chunk_bytes;
                r = put_bytes(s, p->src, st, a, off, len);
            }
            s->c.out->restore_allocs++;
        }
    }
    if (r == 0) {
        s->c.out->restore_seq = st->seq;
        replay__provenance(p->src, s->c.out->restore_from, sizeof s->c.out->restore_from);
    }
    sbt_state_free(st);
    if (r == 0 && s->taking) /* what was restored must be read again by the next snapshot */
        for (size_t i = 0; i < s->n_lv; i++)
            memset(s->lv[i].dirty, 0xff, s->lv[i].n_chunks / 8 + 1);
    return r;
}

/* ========================================================================================== */
/* What a restore would write (replay_plan)                                                   */
/* ========================================================================================== */

int replay__snap_cover(sbt_reader *snaps, int64_t i, const struct sched_slice *sl,
                       struct replay_plan *plan)
{
    struct sbt_state *st;
    int r = sbt_reader_state(snaps, (uint64_t)i, &st);
    if (r < 0)
        return replay__fail(r, "%s: %s", replay__path_of(snaps), sbt_errmsg());
    uint64_t last = UINT64_MAX;
    for (uint64_t k = 0; k < sl->n_needs && r == 0; k++) {
        const struct sbt_access *n = &sl->needs[k];
        const struct sbt_state_alloc *a = state_alloc(st, n->resource);
        if (!a)
            continue; /* not allocated there: the range reads bytes nothing wrote */
        if (n->offset + n->len > a->size) {
            r = replay__fail(SBT_ECORRUPT,
                             "%s: snapshot at op %" PRIu64 ": resource %" PRIu64 " has %" PRIu64
                             " bytes, the range reads up to byte %" PRIu64,
                             replay__path_of(snaps), st->seq, n->resource, a->size,
                             n->offset + n->len);
            break;
        }
        for (uint64_t c = n->offset / a->chunk_bytes;
             n->len && c <= (n->offset + n->len - 1) / a->chunk_bytes; c++)
            if (chunk_pos(a, c) < 0) {
                r = replay__fail(SBT_ECORRUPT,
                                 "%s: snapshot at op %" PRIu64 ": resource %" PRIu64
                                 ": chunk %" PRIu64 " was not stored, but the range reads it",
                                 replay__path_of(snaps), st->seq, n->resource, c);
                break;
            }
        plan->restore_bytes += n->len;
        plan->restore_allocs += n->resource != last;
        last = n->resource;
    }
    sbt_state_free(st);
    return r;
}
