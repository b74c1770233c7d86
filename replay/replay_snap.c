/*
 * replay/replay_snap.c — snapshots of device memory and their restores: what lets a range
 * replay rebuild the state before the range from bytes instead of re-executing the ops that
 * computed them (DESIGN.md, replay/ "Snapshots"; FORMAT.md 5a for the STATE record).
 *
 * Taking (a full replay with opts.snapshot_out). The engine tells this file every op it
 * executed: allocations and frees keep a table of the live allocations, and every write access
 * marks the chunks it touches (opts.snapshot_chunk bytes, 64 KiB by default) dirty. At a due
 * point (every N ops, every T of trace time, given seqs) that is quiescent — the graph holds no
 * op back, so the ops executed are exactly those before the point — the device is drained and
 * only the dirty chunks are read back and hashed; a chunk whose bytes are already in the
 * sidecar (unchanged since an earlier snapshot, all zeros, ...) costs no new blob. Each
 * snapshot is one STATE record listing every chunk of every live allocation.
 *
 * Restoring (a range replay with a sidecar). replay__plan picks the latest snapshot at or
 * before the range's first op and has the scheduler slice the range with that snapshot as its
 * floor: the ops after it that the range needs, and the bytes still needed at it. At the
 * snapshot's seq the device is drained and exactly those bytes are written from the chunks'
 * blobs (backend write()). A trimmed trace's own states are restored the same way, whole.
 *
 * Trim (opts.state_out): at the range's first op, after the state ops and the slice ran, the
 * chunks holding bytes the range reads are read back and written to the trimmed trace as its
 * initial state; the run stops there.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay/replay_int.h"

#define DEFAULT_CHUNK (64u << 10)
#define READ_MAX      (16u << 20) /* bytes read back per backend call */

struct live {
    uint64_t resource, size;
    uint64_t n_chunks;
    sbt_hash *hash; /* per chunk: its blob, where not dirty */
    uint8_t *dirty; /* bit per chunk: written since its hash was taken */
};

struct point { /* a state to restore when the run reaches seq */
    uint64_t seq;
    sbt_reader *src;
    uint64_t state_i;
    int whole;                      /* every chunk the state holds (initial contents) */
    const struct sbt_access *needs; /* else these bytes only */
    uint64_t n_needs;
};

struct replay__snap {
    struct replay__snap_cfg c;
    uint32_t chunk; /* bytes per chunk: snapshots, dirty bits and the trim state */
    int taking;     /* snapshots are written in this run */
    uint32_t run;
    /* live allocations, sorted by resource */
    struct live *lv;
    size_t n_lv, cap_lv;
    /* the sidecar */
    sbt_writer *w;
    uint64_t next_op, next_ns, t0;
    uint32_t i_at;
    uint64_t n_seen; /* ops seen (candidates for every_ops) */
    /* restore points, by seq */
    struct point *pt;
    size_t n_pt, cap_pt, i_pt;
    int trim_done;
    uint8_t *buf;
    size_t cap_buf;
};

static int fail_mem(void)
{
    return replay__fail(SBT_ENOMEM, "out of memory for snapshots");
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, c * elem);
    if (!n)
        return fail_mem();
    *p = n;
    *cap = c;
    return 0;
}

static uint8_t *scratch(struct replay__snap *s, size_t n)
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

static const char *src_name(sbt_reader *src)
{
    const char *p = sbt_reader_path(src);
    return p ? p : "?";
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

static struct live *live_get(struct replay__snap *s, uint64_t res)
{
    size_t i = live_pos(s, res);
    return i < s->n_lv && s->lv[i].resource == res ? &s->lv[i] : NULL;
}

static void live_drop(struct live *l)
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
    if (grow((void **)&s->lv, &s->cap_lv, s->n_lv + 1, sizeof *s->lv))
        return SBT_ENOMEM;
    size_t i = live_pos(s, res);
    memmove(&s->lv[i + 1], &s->lv[i], (s->n_lv - i) * sizeof *s->lv);
    struct live *l = &s->lv[i];
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
        return fail_mem();
    memset(l->dirty, 0xff, l->n_chunks / 8 + 1); /* nothing read yet */
    return 0;
}

static void mark_dirty(struct replay__snap *s, const struct sbt_access *a)
{
    struct live *l = live_get(s, a->resource);
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
/* Taking snapshots                                                                           */
/* ========================================================================================== */

/* Reads back the dirty chunks of l and stores their blobs in w. */
static int refresh(struct replay__snap *s, struct live *l, sbt_writer *w)
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
        uint8_t *b = scratch(s, (size_t)len);
        if (!b)
            return fail_mem();
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
static int take(struct replay__snap *s, const struct sbt_op *x)
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
        return fail_mem();
    }
    for (uint64_t k = 0; k < max_chunks; k++)
        iota[k] = k;
    for (size_t i = 0; i < s->n_lv && st == 0; i++) {
        struct live *l = &s->lv[i];
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

/* 1 if a snapshot is due before op x. */
static int due(struct replay__snap *s, const struct sbt_op *x)
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

/* ========================================================================================== */
/* Restoring                                                                                  */
/* ========================================================================================== */

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
                            src_name(src), st->seq, a->resource, k, k * a->chunk_bytes);
    uint64_t off = k * a->chunk_bytes;
    uint64_t want = a->size - off < a->chunk_bytes ? a->size - off : a->chunk_bytes;
    size_t got = 0;
    int s = sbt_reader_blob(src, &a->hash[p], data, &got);
    if (s < 0)
        return replay__fail(s == SBT_ENOTFOUND ? SBT_ECORRUPT : s,
                            "%s: state at op %" PRIu64 ": resource %" PRIu64 " chunk %" PRIu64
                            ": %s",
                            src_name(src), st->seq, a->resource, k, sbt_errmsg());
    if (got != want) {
        free(*data);
        *data = NULL;
        return replay__fail(SBT_ECORRUPT,
                            "%s: state at op %" PRIu64 ": resource %" PRIu64 " chunk %" PRIu64
                            ": blob of %zu bytes, the chunk has %" PRIu64,
                            src_name(src), st->seq, a->resource, k, got, want);
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

static int restore(struct replay__snap *s, const struct point *p)
{
    int r = s->c.bk->drain(s->c.be);
    if (r < 0)
        return r;
    struct sbt_state *st;
    if ((r = sbt_reader_state(p->src, p->state_i, &st)) < 0)
        return replay__fail(r, "%s: %s", src_name(p->src), sbt_errmsg());
    uint64_t last_res = UINT64_MAX;
    if (!p->whole) {
        for (uint64_t i = 0; i < p->n_needs && r == 0; i++) {
            const struct sbt_access *n = &p->needs[i];
            const struct sbt_state_alloc *a = state_alloc(st, n->resource);
            struct live *l = live_get(s, n->resource);
            if (!a && !l)
                continue; /* not allocated at the snapshot: a read the trace makes of nothing */
            if (!a || !l || a->size != l->size || n->offset + n->len > a->size) {
                r = replay__fail(SBT_ECORRUPT,
                                 "%s: snapshot at op %" PRIu64 " does not match the trace: "
                                 "resource %" PRIu64 " is %s (the range reads bytes %" PRIu64
                                 "..%" PRIu64 ")",
                                 src_name(p->src), st->seq, n->resource,
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
            struct live *l = live_get(s, a->resource);
            if (!l || l->size != a->size) {
                r = replay__fail(SBT_ECORRUPT,
                                 "%s: initial state at op %" PRIu64 ": resource %" PRIu64
                                 " (%" PRIu64 " bytes) is %s there",
                                 src_name(p->src), st->seq, a->resource, a->size,
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
    if (r == 0)
        s->c.out->restore_seq = st->seq;
    sbt_state_free(st);
    if (r == 0 && s->taking) /* what was restored must be read again by the next snapshot */
        for (size_t i = 0; i < s->n_lv; i++)
            memset(s->lv[i].dirty, 0xff, s->lv[i].n_chunks / 8 + 1);
    return r;
}

/* ========================================================================================== */
/* Trim: the state the range reads                                                            */
/* ========================================================================================== */

/* Chunks of one allocation kept for the trim state. */
struct kept {
    uint64_t resource, size, first, n; /* [first, first + n) of the index / hash arrays */
};

static int trim_state(struct replay__snap *s, const struct sbt_op *x)
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
        struct live *l = live_get(s, res);
        size_t first = n_idx;
        for (; i < nn && nd[i].resource == res && r == 0; i++) {
            if (!l || nd[i].offset >= l->size)
                continue; /* not allocated there: nothing to keep */
            uint64_t end = nd[i].len < l->size - nd[i].offset ? nd[i].offset + nd[i].len : l->size;
            for (uint64_t k = nd[i].offset / cb; k <= (end - 1) / cb && r == 0; k++) {
                if (last_k != UINT64_MAX && k <= last_k)
                    continue; /* needs are sorted: a chunk shared with the previous need */
                uint64_t off = k * cb, len = l->size - off < cb ? l->size - off : cb;
                uint8_t *b = scratch(s, (size_t)len);
                if (!b || grow((void **)&idx, &cap_idx, n_idx + 1, sizeof *idx) ||
                    grow((void **)&hs, &cap_hs, n_idx + 1, sizeof *hs)) {
                    r = fail_mem();
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
            if (grow((void **)&kp, &cap_kp, n_kp + 1, sizeof *kp)) {
                r = fail_mem();
                break;
            }
            kp[n_kp++] = (struct kept){res, l->size, first, n_idx - first};
        }
    }
    struct sbt_state_alloc *al = r == 0 ? calloc(n_kp ? n_kp : 1, sizeof *al) : NULL;
    if (r == 0 && !al)
        r = fail_mem();
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

/* ========================================================================================== */
/* The run                                                                                    */
/* ========================================================================================== */

static int add_point(struct replay__snap *s, const struct point *p)
{
    if (grow((void **)&s->pt, &s->cap_pt, s->n_pt + 1, sizeof *s->pt))
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
        return fail_mem();
    s->c = *cfg;
    const struct replay_opts *o = cfg->o;
    s->chunk = o->snapshot_chunk ? o->snapshot_chunk : DEFAULT_CHUNK;
    int st = 0;
    /* a trimmed trace's initial contents */
    const struct sbt_info *in = sbt_reader_info(cfg->r);
    if (in->required_features & SBT_FEATURE_INITIAL_STATE)
        for (uint64_t i = 0; i < in->n_states && st == 0; i++) {
            struct point p = {.src = cfg->r, .state_i = i, .whole = 1};
            sbt_reader_state_at(cfg->r, i, &p.seq, NULL);
            if (p.seq >= cfg->lo && p.seq < cfg->hi)
                st = add_point(s, &p);
        }
    if (st == 0 && cfg->snaps && cfg->snap_i >= 0) {
        struct point p = {.src = cfg->snaps,
                          .state_i = (uint64_t)cfg->snap_i,
                          .needs = cfg->needs,
                          .n_needs = cfg->n_needs};
        sbt_reader_state_at(cfg->snaps, p.state_i, &p.seq, NULL);
        st = add_point(s, &p);
    }
    if (st == 0 && o->snapshot_out) {
        if ((st = sbt_writer_open(o->snapshot_out, NULL, &s->w)) < 0) {
            st = replay__fail(st, "--snapshots: %s", sbt_errmsg());
        } else {
            char hex[33], num[32];
            sbt_hash fp = sbt_reader_fingerprint(cfg->r);
            snprintf(num, sizeof num, "%u", s->chunk);
            if ((st = sbt_writer_meta(s->w, "generator", "reprise replay --snapshot")) ||
                (st = sbt_writer_meta(s->w, "snapshot.of", sbt_hash_hex(fp, hex))) ||
                (st = sbt_writer_meta(s->w, "snapshot.trace",
                                      o->source_path ? o->source_path : "")) ||
                (st = sbt_writer_meta(s->w, "snapshot.chunk_bytes", num)))
                st = replay__fail(st, "%s: %s", o->snapshot_out, sbt_errmsg());
        }
    }
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
        const struct point *p = &s->pt[s->i_pt++];
        if (!quiescent)
            return replay__fail(SBT_ECORRUPT,
                                "%s: the state at op %" PRIu64
                                " cannot be restored: ops before it wait on later ones there",
                                src_name(p->src), p->seq);
        if ((st = restore(s, p)) < 0)
            return st;
    }
    if (s->c.o->state_out && !s->trim_done && x->seq >= s->c.range_first) {
        if (!quiescent)
            return replay__fail(REPLAY_EUNSUPPORTED,
                                "op %" PRIu64 ": ops before the range wait on later ones, so no "
                                "state there is the effect of exactly the ops before it",
                                x->seq);
        s->trim_done = 1;
        return (st = trim_state(s, x)) < 0 ? st : 1;
    }
    if (s->taking && x->seq > s->c.lo && quiescent && due(s, x)) {
        if ((st = take(s, x)) < 0)
            return st;
        advance(s, x);
    }
    s->n_seen++;
    return 0;
}

int replay__snap_finish(struct replay__snap *s, int ok)
{
    if (!s || !s->w)
        return 0;
    int st = 0;
    if (ok) {
        st = sbt_writer_close(s->w);
        if (st < 0)
            st = replay__fail(st, "%s: %s", s->c.o->snapshot_out, sbt_errmsg());
    } else {
        sbt_writer_abandon(s->w);
    }
    s->w = NULL;
    if (!ok || st < 0)
        unlink(s->c.o->snapshot_out); /* no half sidecar that a later range replay would trust */
    return st;
}

void replay__snap_destroy(struct replay__snap *s)
{
    if (!s)
        return;
    replay__snap_finish(s, 0);
    for (size_t i = 0; i < s->n_lv; i++)
        live_drop(&s->lv[i]);
    free(s->lv);
    free(s->pt);
    free(s->buf);
    free(s);
}

/* ========================================================================================== */
/* Plans, sidecars                                                                            */
/* ========================================================================================== */

int replay_op_is_state(const struct sbt_op *op)
{
    switch (op->kind) {
    case SBT_OP_ALLOC:
    case SBT_OP_FREE:
    case SBT_OP_STREAM_CREATE:
    case SBT_OP_STREAM_DESTROY:
        return 1;
    case SBT_OP_MARKER:
        return !(op->flags & SBT_OPF_UNSUPPORTED);
    default:
        return 0;
    }
}

int replay__is_state(const struct replay_backend *bk, const struct sbt_op *op)
{
    return replay_op_is_state(op) && (!bk || !bk->state_op || bk->state_op(op));
}

/* Restore bytes of the needs the snapshot covers; SBT_ECORRUPT naming the sidecar, the
 * snapshot and the resource when it cannot provide one. */
static int cover(sbt_reader *snaps, int64_t i, const struct sched_slice *sl,
                 struct replay_plan *plan)
{
    struct sbt_state *st;
    int r = sbt_reader_state(snaps, (uint64_t)i, &st);
    if (r < 0)
        return replay__fail(r, "%s: %s", src_name(snaps), sbt_errmsg());
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
                             src_name(snaps), st->seq, n->resource, a->size, n->offset + n->len);
            break;
        }
        for (uint64_t c = n->offset / a->chunk_bytes;
             n->len && c <= (n->offset + n->len - 1) / a->chunk_bytes; c++)
            if (chunk_pos(a, c) < 0) {
                r = replay__fail(SBT_ECORRUPT,
                                 "%s: snapshot at op %" PRIu64 ": resource %" PRIu64
                                 ": chunk %" PRIu64 " was not stored, but the range reads it",
                                 src_name(snaps), st->seq, n->resource, c);
                break;
            }
        plan->restore_bytes += n->len;
        plan->restore_allocs += n->resource != last;
        last = n->resource;
    }
    sbt_state_free(st);
    return r;
}

int replay__plan(sbt_reader *r, const struct sbt_range *range, sbt_reader *snaps, int full,
                 struct replay_plan *plan, struct sched_slice *slice, int64_t *snap_i)
{
    memset(plan, 0, sizeof *plan);
    memset(slice, 0, sizeof *slice);
    plan->range_first = plan->range_last = plan->snapshot_seq = UINT64_MAX;
    *snap_i = -1;
    sbt_cursor *c;
    const struct sbt_op *op;
    int st = sbt_cursor_open(r, range, &c);
    if (st < 0)
        return replay__fail(st, "%s", sbt_errmsg());
    st = sbt_cursor_next(c, &op);
    uint64_t first = st == 1 ? op->seq : UINT64_MAX;
    sbt_cursor_close(c);
    if (st < 0)
        return replay__fail(st, "%s", sbt_errmsg());
    uint64_t floor = 0;
    if (!snaps) {
        snprintf(plan->why, sizeof plan->why, "no sidecar of snapshots");
    } else {
        plan->n_snapshots = sbt_reader_info(snaps)->n_states;
        int64_t i = first == UINT64_MAX ? -1 : sbt_reader_state_find(snaps, first);
        if (i < 0) {
            uint64_t s0 = 0;
            if (plan->n_snapshots)
                sbt_reader_state_at(snaps, 0, &s0, NULL);
            if (plan->n_snapshots)
                snprintf(plan->why, sizeof plan->why,
                         "no snapshot at or before op %" PRIu64 " (the first is at op %" PRIu64 ")",
                         first, s0);
            else
                snprintf(plan->why, sizeof plan->why, "%s holds no snapshot", src_name(snaps));
        } else {
            *snap_i = i;
            sbt_reader_state_at(snaps, (uint64_t)i, &plan->snapshot_seq, &plan->snapshot_time);
            floor = plan->snapshot_seq;
            plan->use_snapshot = 1;
        }
    }
    st = sched_slice_compute(
        r, range, &SCHED_SLICE_OPTS(.collect = 1, .floor = floor, .range_outputs = 1), slice);
    if (st < 0)
        return replay__fail(st, "%s", sched_errmsg());
    plan->range_first = slice->range_first;
    plan->range_last = slice->range_last;
    plan->range_ops = slice->range_ops;
    plan->slice_ops = slice->slice_ops;
    plan->slice_upload_bytes = slice->slice_upload_bytes;
    plan->before_ops = slice->before_ops;
    plan->full_slice_ops = slice->slice_ops;
    plan->full_slice_upload_bytes = slice->slice_upload_bytes;
    if (plan->use_snapshot && (st = cover(snaps, *snap_i, slice, plan)) < 0) {
        sched_slice_free(slice);
        return st;
    }
    if (plan->use_snapshot && full) {
        struct sched_slice all;
        st = sched_slice_compute(r, range, &SCHED_SLICE_OPTS(.range_outputs = 1), &all);
        if (st < 0) {
            sched_slice_free(slice);
            return replay__fail(st, "%s", sched_errmsg());
        }
        plan->full_slice_ops = all.slice_ops;
        plan->full_slice_upload_bytes = all.slice_upload_bytes;
        sched_slice_free(&all);
    }
    return 0;
}

int replay_plan(sbt_reader *r, const struct sbt_range *range, sbt_reader *snapshots,
                struct replay_plan *out)
{
    struct sched_slice sl;
    int64_t i;
    if (!r || !range || !out)
        return replay__fail(SBT_EINVAL, "replay_plan: missing trace, range or result");
    int st = replay__plan(r, range, snapshots, 1, out, &sl, &i);
    if (st == 0)
        sched_slice_free(&sl);
    return st;
}

char *replay_snapshots_path(const char *trace_path)
{
    if (!trace_path)
        return NULL;
    size_t n = strlen(trace_path);
    if (n > 4 && !strcmp(trace_path + n - 4, ".sbt"))
        n -= 4;
    char *p = malloc(n + 10);
    if (p)
        snprintf(p, n + 10, "%.*s.snap.sbt", (int)n, trace_path);
    return p;
}

int replay_snapshots_open(sbt_reader *r, const char *path, sbt_reader **out)
{
    *out = NULL;
    sbt_reader *s;
    int st = sbt_reader_open(path, NULL, &s);
    if (st < 0)
        return replay__fail(st, "snapshots: %s", sbt_errmsg());
    const char *of = sbt_reader_meta_get(s, "snapshot.of");
    char hex[33];
    sbt_hash_hex(sbt_reader_fingerprint(r), hex);
    if (!of) {
        sbt_reader_close(s);
        return replay__fail(SBT_ECORRUPT,
                            "%s: not a sidecar of snapshots (no snapshot.of metadata)", path);
    }
    if (strcmp(of, hex)) {
        const char *tr = sbt_reader_meta_get(s, "snapshot.trace");
        st = replay__fail(SBT_ECORRUPT,
                          "%s: snapshots of another trace (%s, fingerprint %s; this trace's is "
                          "%s): make them again with replay --snapshot-every, or pass "
                          "--no-snapshots",
                          path, tr && *tr ? tr : "unnamed", of, hex);
        sbt_reader_close(s);
        return st;
    }
    if (sbt_reader_info(s)->lost_bytes) {
        uint64_t at = sbt_reader_info(s)->lost_offset;
        sbt_reader_close(s);
        return replay__fail(SBT_ECORRUPT,
                            "%s: damaged at offset %" PRIu64 " (reprise validate says more)", path,
                            at);
    }
    *out = s;
    return 0;
}
