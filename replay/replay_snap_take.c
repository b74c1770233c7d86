/*
 * replay/replay_snap_take.c — taking snapshots (a full replay with opts.snapshot_out): when one
 * is due, and writing it into the sidecar (replay_sidecar.c) as one STATE record listing every
 * chunk of every live allocation (FORMAT.md 5a).
 *
 * A snapshot is due at the first quiescent op boundary at or after every snapshot_every_ops
 * ops, every snapshot_every_ns of trace time, and each seq of snapshot_at. Taking it drains
 * the device and reads back only the chunks written since the last one (replay_snap.c keeps
 * their dirty bits), in runs of up to READ_MAX bytes per backend read; a chunk whose bytes are
 * already in the sidecar (unchanged since an earlier snapshot, all zeros, ...) costs no new
 * blob. snapshot_ns counts from after the drain: the drain's time is the ops'.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "replay/replay_int.h"

#define READ_MAX (16u << 20) /* bytes read back per backend call */

/* Reads back the dirty chunks of l and stores their blobs in w. */
static int refresh(struct replay__snap *s, struct replay__live *l, sbt_writer *w)
{
    struct replay_result *o = s->c.out;
    for (uint64_t k = 0; k < l->n_chunks;) {
        if (!(l->dirty[k / 8] & (1u << (k % 8)))) {
            k++;
            continue;
        }
        uint64_t e = k + 1; /* a run of dirty chunks, read in one call */
        while (e < l->n_chunks && (l->dirty[e / 8] & (1u << (e % 8))) &&
               (e - k + 1) * s->chunk <= READ_MAX)
            e++;
        uint64_t off = k * s->chunk, len = (e * s->chunk < l->size ? e * s->chunk : l->size) - off;
        uint8_t *b = replay__snap_scratch(s, (size_t)len);
        if (!b)
            return replay__snap_nomem();
        int st = s->c.bk->read(s->c.be, l->resource, off, len, b);
        if (st < 0)
            return st;
        o->snapshot_read_bytes += len;
        for (uint64_t j = k; j < e; j++) {
            uint64_t co = j * s->chunk - off;
            uint64_t cl = len - co < s->chunk ? len - co : s->chunk;
            sbt_hash h = sbt_hash_bytes(b + co, (size_t)cl);
            if (!sbt_writer_has_blob(w, &h))
                o->snapshot_new_bytes += cl;
            if ((st = sbt_writer_blob(w, b + co, (size_t)cl, &h)) < 0)
                return replay__fail(st, "snapshot: %s", sbt_errmsg());
            l->hash[j] = h;
            l->dirty[j / 8] &= (uint8_t) ~(1u << (j % 8));
        }
        k = e;
    }
    return 0;
}

/* Writes a STATE record of every chunk of every live allocation, before op x. */
static int write_snapshot(struct replay__snap *s, const struct sbt_op *x)
{
    int st = s->c.bk->drain(s->c.be);
    if (st < 0)
        return st;
    uint64_t t0 = replay__now_ns(); /* the drain's time is the ops', not the snapshot's */
    struct sbt_state_alloc *al = calloc(s->n_lv ? s->n_lv : 1, sizeof *al);
    uint64_t max_chunks = 1;
    for (size_t i = 0; i < s->n_lv; i++)
        if (s->lv[i].n_chunks > max_chunks)
            max_chunks = s->lv[i].n_chunks;
    uint64_t *iota = malloc(max_chunks * sizeof *iota);
    if (!al || !iota) {
        free(al);
        free(iota);
        return replay__snap_nomem();
    }
    for (uint64_t k = 0; k < max_chunks; k++)
        iota[k] = k;
    for (size_t i = 0; i < s->n_lv && st == 0; i++) {
        struct replay__live *l = &s->lv[i];
        st = refresh(s, l, s->w);
        al[i] =
            (struct sbt_state_alloc){l->resource, l->size, s->chunk, l->n_chunks, iota, l->hash};
    }
    uint64_t b, e;
    sbt_op_span(x, &b, &e);
    struct sbt_state state = {.seq = x->seq, .time = b, .n_alloc = (uint32_t)s->n_lv, .alloc = al};
    if (st == 0 && (st = sbt_writer_add_state(s->w, &state)) < 0)
        st = replay__fail(st, "snapshot at op %" PRIu64 ": %s", x->seq, sbt_errmsg());
    free(al);
    free(iota);
    if (st == 0)
        s->c.out->n_snapshots++;
    s->c.out->snapshot_ns += replay__now_ns() - t0;
    return st;
}

int replay__snap_due(const struct replay__snap *s, const struct sbt_op *x)
{
    const struct replay_opts *o = s->c.o;
    int d = 0;
    if (o->snapshot_every_ops && s->n_seen >= s->next_op)
        d = 1;
    if (o->snapshot_every_ns) {
        uint64_t b, e;
        sbt_op_span(x, &b, &e);
        if (b >= s->next_ns)
            d = 1;
    }
    if (s->i_at < o->n_snapshot_at && x->seq >= o->snapshot_at[s->i_at])
        d = 1;
    return d;
}

/* Moves the schedule past op x (after a snapshot before it). */
static void advance(struct replay__snap *s, const struct sbt_op *x)
{
    const struct replay_opts *o = s->c.o;
    while (o->snapshot_every_ops && s->next_op <= s->n_seen)
        s->next_op += o->snapshot_every_ops;
    if (o->snapshot_every_ns) {
        uint64_t b, e;
        sbt_op_span(x, &b, &e);
        while (s->next_ns <= b)
            s->next_ns += o->snapshot_every_ns;
    }
    while (s->i_at < o->n_snapshot_at && o->snapshot_at[s->i_at] <= x->seq)
        s->i_at++;
}

int replay__snap_take(struct replay__snap *s, const struct sbt_op *x)
{
    int st = write_snapshot(s, x);
    if (st == 0)
        advance(s, x);
    return st;
}
