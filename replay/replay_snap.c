/*
 * replay/replay_snap.c — one run's snapshot machinery (struct replay__snap, replay_int.h): the
 * table of live allocations with the chunks written since the last snapshot, the restore
 * points, and the hooks the engine calls around every op. At each op boundary they restore a
 * due state (replay_snap_restore.c), capture trim's initial state (replay_trim_state.c) or
 * take a due snapshot (replay_snap_take.c). Together these let a range replay rebuild the
 * state before the range from bytes instead of re-executing the ops that computed them
 * (DESIGN.md, replay/ "Snapshots"; FORMAT.md 5a for the STATE record).
 *
 * The engine tells this file every op it executed: allocations and frees keep the table of
 * live allocations, and in a run that takes snapshots every write access marks the chunks it
 * touches (opts.snapshot_chunk bytes, 64 KiB by default) dirty.
 *
 * All three need a quiescent op boundary — the graph holds no op back, so the ops executed are
 * exactly those before it: a restore point or the range start of a trim that is not one is an
 * error; a due snapshot waits for the next one. Restore points, by seq, are a trimmed trace's
 * own initial states (restored whole) and the sidecar snapshot replay__plan chose (only the
 * bytes the rest of the run reads).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay_int.h"

#define DEFAULT_CHUNK (64u << 10)

int replay__snap_nomem(void)
{
    return replay__fail(SBT_ENOMEM, "out of memory for snapshots");
}

int replay__snap_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, c * elem);
    if (!n)
        return replay__snap_nomem();
    *p = n;
    *cap = c;
    return 0;
}

uint8_t *replay__snap_scratch(struct replay__snap *s, size_t n)
{
    if (n > s->cap_buf) {
        uint8_t *b = realloc(s->buf, n);
        if (!b)
            return NULL;
        s->buf = b;
        s->cap_buf = n;
    }
    return s->buf;
}

/* ========================================================================================== */
/* Live allocations                                                                           */
/* ========================================================================================== */

static size_t live_pos(const struct replay__snap *s, uint64_t res)
{
    size_t lo = 0, hi = s->n_lv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->lv[mid].resource < res)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct replay__live *replay__snap_live(struct replay__snap *s, uint64_t res)
{
    size_t i = live_pos(s, res);
    return i < s->n_lv && s->lv[i].resource == res ? &s->lv[i] : NULL;
}

static void live_drop(struct replay__live *l)
{
    free(l->hash);
    free(l->dirty);
}

static void live_del(struct replay__snap *s, uint64_t res)
{
    size_t i = live_pos(s, res);
    if (i >= s->n_lv || s->lv[i].resource != res)
        return;
    live_drop(&s->lv[i]);
    memmove(&s->lv[i], &s->lv[i + 1], (s->n_lv - i - 1) * sizeof *s->lv);
    s->n_lv--;
}

static int live_add(struct replay__snap *s, uint64_t res, uint64_t size)
{
    live_del(s, res); /* an id allocated again: a new allocation */
    if (replay__snap_grow((void **)&s->lv, &s->cap_lv, s->n_lv + 1, sizeof *s->lv))
        return SBT_ENOMEM;
    size_t i = live_pos(s, res);
    memmove(&s->lv[i + 1], &s->lv[i], (s->n_lv - i) * sizeof *s->lv);
    struct replay__live *l = &s->lv[i];
    memset(l, 0, sizeof *l);
    l->resource = res;
    l->size = size;
    s->n_lv++;
    if (!s->taking)
        return 0;
    l->n_chunks = size / s->chunk + (size % s->chunk != 0);
    l->hash = calloc(l->n_chunks ? l->n_chunks : 1, sizeof *l->hash);
    l->dirty = malloc(l->n_chunks / 8 + 1);
    if (!l->hash || !l->dirty)
        return replay__snap_nomem();
    memset(l->dirty, 0xff, l->n_chunks / 8 + 1); /* nothing read yet */
    return 0;
}

static void mark_dirty(struct replay__snap *s, const struct sbt_access *a)
{
    struct replay__live *l = replay__snap_live(s, a->resource);
    if (!l || !a->len || a->offset >= l->size)
        return;
    uint64_t end = a->len > l->size - a->offset ? l->size : a->offset + a->len;
    for (uint64_t k = a->offset / s->chunk; k <= (end - 1) / s->chunk; k++)
        l->dirty[k / 8] |= (uint8_t)(1u << (k % 8));
}

int replay__snap_executed(struct replay__snap *s, const struct sbt_op *op)
{
    if (op->kind == SBT_OP_ALLOC)
        return live_add(s, op->resource, op->bytes);
    if (op->kind == SBT_OP_FREE) {
        live_del(s, op->resource);
        return 0;
    }
    if (s->taking)
        for (uint32_t i = 0; i < op->n_access; i++)
            if (op->access[i].mode & SBT_ACCESS_WRITE)
                mark_dirty(s, &op->access[i]);
    return 0;
}

/* ========================================================================================== */
/* The run                                                                                    */
/* ========================================================================================== */

static int add_point(struct replay__snap *s, const struct replay__point *p)
{
    if (replay__snap_grow((void **)&s->pt, &s->cap_pt, s->n_pt + 1, sizeof *s->pt))
        return SBT_ENOMEM;
    size_t i = s->n_pt;
    while (i > 0 && s->pt[i - 1].seq > p->seq) {
        s->pt[i] = s->pt[i - 1];
        i--;
    }
    s->pt[i] = *p;
    s->n_pt++;
    return 0;
}

int replay__snap_create(const struct replay__snap_cfg *cfg, struct replay__snap **out)
{
    *out = NULL;
    struct replay__snap *s = calloc(1, sizeof *s);
    if (!s)
        return replay__snap_nomem();
    s->c = *cfg;
    const struct replay_opts *o = cfg->o;
    s->chunk = o->snapshot_chunk ? o->snapshot_chunk : DEFAULT_CHUNK;
    int st = 0;
    /* a trimmed trace's initial contents */
    const struct sbt_info *in = sbt_reader_info(cfg->r);
    if (in->required_features & SBT_FEATURE_INITIAL_STATE)
        for (uint64_t i = 0; i < in->n_states && st == 0; i++) {
            struct replay__point p = {.src = cfg->r, .state_i = i, .whole = 1};
            sbt_reader_state_at(cfg->r, i, &p.seq, NULL);
            if (p.seq >= cfg->lo && p.seq < cfg->hi)
                st = add_point(s, &p);
        }
    if (st == 0 && cfg->snaps && cfg->snap_i >= 0) {
        struct replay__point p = {.src = cfg->snaps,
                                  .state_i = (uint64_t)cfg->snap_i,
                                  .needs = cfg->needs,
                                  .n_needs = cfg->n_needs};
        sbt_reader_state_at(cfg->snaps, p.state_i, &p.seq, NULL);
        st = add_point(s, &p);
    }
    if (st == 0 && o->snapshot_out)
        st = replay__sidecar_create(o->snapshot_out, cfg->r, o->source_path, s->chunk, &s->w);
    if (st < 0) {
        replay__snap_destroy(s);
        return st;
    }
    *out = s;
    return 0;
}

void replay__snap_rewind(struct replay__snap *s, uint32_t run)
{
    for (size_t i = 0; i < s->n_lv; i++)
        live_drop(&s->lv[i]);
    s->n_lv = 0;
    s->run = run;
    s->c.out->restore_seq = UINT64_MAX; /* the restore counts are those of the last run */
    s->c.out->restore_bytes = 0;
    s->c.out->restore_allocs = 0;
    s->taking = s->w && run == 0;
    s->i_pt = 0;
    s->trim_done = 0;
    s->n_seen = 0;
    s->i_at = 0;
    const struct replay_opts *o = s->c.o;
    s->next_op = o->snapshot_every_ops ? o->snapshot_every_ops : UINT64_MAX;
    s->t0 = sbt_reader_info(s->c.r)->t_min;
    s->next_ns = o->snapshot_every_ns ? s->t0 + o->snapshot_every_ns : UINT64_MAX;
}

int replay__snap_before(struct replay__snap *s, const struct sbt_op *x, int quiescent)
{
    int st;
    while (s->i_pt < s->n_pt && x->seq >= s->pt[s->i_pt].seq) {
        const struct replay__point *p = &s->pt[s->i_pt++];
        if (!quiescent)
            return replay__fail(SBT_ECORRUPT,
                                "%s: the state at op %" PRIu64
                                " cannot be restored: ops before it wait on later ones there",
                                replay__path_of(p->src), p->seq);
        if ((st = replay__snap_restore(s, p)) < 0)
            return st;
    }
    if (s->c.o->state_out && !s->trim_done && x->seq >= s->c.range_first) {
        if (!quiescent)
            return replay__fail(REPLAY_EUNSUPPORTED,
                                "op %" PRIu64 ": ops before the range wait on later ones, so no "
                                "state there is the effect of exactly the ops before it",
                                x->seq);
        s->trim_done = 1;
        return (st = replay__trim_state(s, x)) < 0 ? st : 1;
    }
    if (s->taking && x->seq > s->c.lo && quiescent && replay__snap_due(s, x) &&
        (st = replay__snap_take(s, x)) < 0)
        return st;
    s->n_seen++;
    return 0;
}

int replay__snap_finish(struct replay__snap *s, int ok, const char *device, const char *driver,
                        const char *verified)
{
    if (!s || !s->w)
        return 0;
    if (ok && (sbt_writer_meta(s->w, "snapshot.device", device ? device : "") < 0 ||
               sbt_writer_meta(s->w, "snapshot.driver", driver ? driver : "") < 0 ||
               sbt_writer_meta(s->w, "snapshot.verified", verified ? verified : "") < 0))
        ok = 0;
    int st = replay__sidecar_close(s->w, s->c.o->snapshot_out, ok);
    s->w = NULL;
    return st;
}

void replay__snap_destroy(struct replay__snap *s)
{
    if (!s)
        return;
    replay__snap_finish(s, 0, NULL, NULL, NULL);
    for (size_t i = 0; i < s->n_lv; i++)
        live_drop(&s->lv[i]);
    free(s->lv);
    free(s->pt);
    free(s->buf);
    free(s);
}
