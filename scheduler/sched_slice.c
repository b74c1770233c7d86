/*
 * scheduler/sched_slice.c — backward slices: what a partial replay must re-execute before a
 * range ("fast-forward").
 *
 * A backward liveness walk (the dynamic-slicing form of it). Ops are read forward one window at
 * a time, from the window that ends the range back to the start of the trace, and each window
 * is walked in reverse. State, all live-sized:
 *   need[res]      bytes whose current value some op of range ∪ slice (later in seq) reads;
 *   touched[res]   an op of range ∪ slice uses the resource: its ALLOC is needed;
 *   streams        streams used by range ∪ slice: their STREAM_CREATE is needed;
 *   events, sigs   waits of the range: the record / signal they wait for is needed.
 * Op X (walking back): X is in the slice iff it is outside the range and writes a needed byte or
 * is a needed ALLOC / STREAM_CREATE / EVENT_RECORD / SIGNAL. If X is in range ∪ slice, its writes
 * leave need (they are satisfied by X) and then its reads enter it (X sees the value from
 * before). A kernel's writes are may-writes (it can leave part of a write range untouched), so
 * they satisfy nothing: the bytes stay needed and their earlier writers join the slice too. An
 * ALLOC clears need and touched of its resource: bytes still needed there were never written
 * (uninit_bytes).
 *
 * This computes exactly the closure defined in sched.h: the last writer of a byte before a
 * reader is the first op met walking back from the reader that writes the byte, and the walk
 * meets it while the byte is still needed. Time O(P · (a + log k)) for P ops before the range's
 * end; memory one window of ops plus the need intervals.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

#define NONE SCHED_NONE

struct nres {
    struct sbt_iset need;
    int touched;
    uint64_t id;
};

struct pend { /* pending signal needs of one object: values waited for */
    uint64_t *v;
    uint32_t n, cap;
};

struct slicer {
    const struct sbt_range *range;
    struct sched_slice *out;
    int collect, range_outputs;
    uint64_t floor;
    int at_floor; /* the needs at floor were taken */
    uint64_t seq_cap;
    struct sbt_map res_ix; /* resource -> index in res */
    struct nres *res;
    uint32_t n_res, cap_res;
    struct sbt_map streams; /* stream id -> 1 */
    struct sbt_map events;  /* event id -> 1 */
    struct sbt_map sig_ix;  /* object -> index in sig */
    struct pend *sig;
    uint32_t n_sig, cap_sig;
    uint64_t cum_ops, cum_up, at_first_ops, at_first_up;
};

static uint64_t upload_bytes(const struct sbt_op *op)
{
    if (!(op->kind == SBT_OP_HOST_WRITE ||
          (op->kind == SBT_OP_COPY && op->subkind == SBT_COPY_H2D)))
        return 0;
    if (op->flags & SBT_OPF_BYTES)
        return op->bytes;
    uint64_t b = 0;
    for (uint32_t i = 0; i < op->n_access; i++)
        if (op->access[i].mode & SBT_ACCESS_WRITE)
            b += op->access[i].len;
    return b;
}

static struct nres *nres_get(struct slicer *s, uint64_t id, int create)
{
    uint64_t *ix = sbt_map_get(&s->res_ix, id);
    if (ix)
        return &s->res[*ix];
    if (!create)
        return NULL;
    if (sched__grow((void **)&s->res, sizeof *s->res, &s->cap_res, (uint64_t)s->n_res + 1))
        return NULL;
    if (!(ix = sbt_map_put(&s->res_ix, id, NULL))) {
        sched__fail_sbt(SBT_ENOMEM);
        return NULL;
    }
    *ix = s->n_res;
    struct nres *r = &s->res[s->n_res++];
    memset(r, 0, sizeof *r);
    r->id = id;
    return r;
}

static int writes_needed(struct slicer *s, const struct sbt_op *op)
{
    if (!s->n_res)
        return 0;
    for (uint32_t i = 0; i < op->n_access; i++) {
        const struct sbt_access *a = &op->access[i];
        if (!(a->mode & SBT_ACCESS_WRITE))
            continue;
        struct nres *r = nres_get(s, a->resource, 0);
        if (r && sbt_iset_overlaps(&r->need, a->offset, sched__end(a->offset, a->len)))
            return 1;
    }
    return 0;
}

static int is_timeline_wait(const struct sbt_op *op)
{
    return op->subkind == SBT_SYNC_TIMELINE_SEMAPHORE;
}

/* 1 if signal op satisfies a pending need (and removes those it satisfies). */
static int take_signal(struct slicer *s, const struct sbt_op *op)
{
    uint64_t *ix = sbt_map_get(&s->sig_ix, op->obj);
    if (!ix)
        return 0;
    struct pend *p = &s->sig[*ix];
    uint32_t k = 0;
    int hit = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        if (p->v[i] <= op->value)
            hit = 1;
        else
            p->v[k++] = p->v[i];
    }
    p->n = k;
    return hit;
}

static int cmp_need(const void *a, const void *b)
{
    const struct sbt_access *x = a, *y = b;
    if (x->resource != y->resource)
        return x->resource < y->resource ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The walk reached the floor: what is still needed is what a snapshot there must provide. */
static int take_needs(struct slicer *s)
{
    struct sched_slice *o = s->out;
    s->at_floor = 1;
    uint64_t n = 0, cap = 0;
    for (uint32_t i = 0; i < s->n_res; i++)
        n += s->res[i].need.n;
    if (!n)
        return 0;
    int st = sched__grow64((void **)&o->needs, sizeof *o->needs, &cap, n);
    if (st)
        return st;
    for (uint32_t i = 0; i < s->n_res; i++) {
        const struct nres *r = &s->res[i];
        for (uint32_t k = 0; k < r->need.n; k++) {
            const struct sbt_ival *v = &r->need.v[k];
            o->needs[o->n_needs++] = (struct sbt_access){r->id, v->b, v->e - v->b, SBT_ACCESS_READ};
            o->need_bytes += v->e - v->b;
        }
    }
    qsort(o->needs, o->n_needs, sizeof *o->needs, cmp_need);
    return 0;
}

/* Below the floor: only the EVENT_RECORD / SIGNAL that waits of the range need. */
static int process_below(struct slicer *s, const struct sbt_op *x)
{
    uint64_t up = upload_bytes(x);
    s->cum_ops++;
    s->cum_up += up;
    int inc = 0;
    if (x->kind == SBT_OP_EVENT_RECORD && sbt_map_get(&s->events, x->obj)) {
        sbt_map_del(&s->events, x->obj);
        inc = 1;
    } else if (x->kind == SBT_OP_SIGNAL) {
        inc = take_signal(s, x);
    }
    if (!inc)
        return 0;
    struct sched_slice *o = s->out;
    o->slice_ops++;
    o->slice_upload_bytes += up;
    if (s->collect) {
        int st = sched__grow64((void **)&o->seqs, sizeof *o->seqs, &s->seq_cap, o->n_seqs + 1);
        if (st)
            return st;
        o->seqs[o->n_seqs++] = x->seq;
    }
    return 0;
}

static int process(struct slicer *s, const struct sbt_op *x)
{
    int in = sched_range_contains(s->range, x);
    if (!in && s->floor && x->seq < s->floor) {
        int st = s->at_floor ? 0 : take_needs(s);
        return st ? st : process_below(s, x);
    }
    uint64_t up = upload_bytes(x);
    s->cum_ops++;
    s->cum_up += up;
    int inc = in;
    if (!in) {
        switch (x->kind) {
        case SBT_OP_EVENT_RECORD:
            inc = sbt_map_get(&s->events, x->obj) != NULL;
            break;
        case SBT_OP_SIGNAL: {
            uint64_t *ix = sbt_map_get(&s->sig_ix, x->obj);
            if (ix) {
                struct pend *p = &s->sig[*ix];
                for (uint32_t i = 0; i < p->n && !inc; i++)
                    inc = p->v[i] <= x->value;
            }
            break;
        }
        case SBT_OP_ALLOC: {
            struct nres *r = nres_get(s, x->resource, 0);
            inc = r && r->touched;
            break;
        }
        case SBT_OP_STREAM_CREATE:
            inc = sbt_map_get(&s->streams, x->obj) != NULL;
            break;
        default:
            break;
        }
        if (!inc && x->n_access)
            inc = writes_needed(s, x);
    }
    int st;
    struct sched_slice *o = s->out;
    if (inc) {
        if (in) {
            o->range_ops++;
            if (o->range_last == NONE)
                o->range_last = x->seq;
            o->range_first = x->seq;
            s->at_first_ops = s->cum_ops;
            s->at_first_up = s->cum_up;
        } else {
            o->slice_ops++;
            o->slice_upload_bytes += up;
            if (s->collect) {
                if ((st = sched__grow64((void **)&o->seqs, sizeof *o->seqs, &s->seq_cap,
                                        o->n_seqs + 1)))
                    return st;
                o->seqs[o->n_seqs++] = x->seq;
            }
        }
        for (int pass = 0; pass < 2; pass++) { /* writes leave need, then reads enter it */
            for (uint32_t i = 0; i < x->n_access; i++) {
                const struct sbt_access *a = &x->access[i];
                uint32_t m = pass ? SBT_ACCESS_READ : SBT_ACCESS_WRITE;
                struct nres *r = nres_get(s, a->resource, 1);
                if (!r)
                    return sched__fail(SBT_ENOMEM, "out of memory in the slice");
                r->touched = 1;
                int as_read = pass && in && s->range_outputs && x->kind == SBT_OP_KERNEL &&
                              (a->mode & SBT_ACCESS_WRITE);
                if ((!(a->mode & m) && !as_read) || !a->len)
                    continue;
                /* a kernel may write any part of its write ranges (FORMAT.md, accesses): its
                 * writes satisfy no need, earlier writers of the bytes stay needed */
                if (!pass && x->kind == SBT_OP_KERNEL)
                    continue;
                uint64_t e = sched__end(a->offset, a->len);
                st = pass ? sbt_iset_add(&r->need, a->offset, e)
                          : sbt_iset_sub(&r->need, a->offset, e);
                if (st)
                    return sched__fail_sbt(st);
            }
        }
        if (!sbt_map_put(&s->streams, x->stream, NULL))
            return sched__fail(SBT_ENOMEM, "out of memory in the slice");
        if (in && x->kind == SBT_OP_EVENT_WAIT && !sbt_map_put(&s->events, x->obj, NULL))
            return sched__fail(SBT_ENOMEM, "out of memory in the slice");
        if (in && x->kind == SBT_OP_WAIT && !(is_timeline_wait(x) && x->value == 0)) {
            int is_new;
            uint64_t *ix = sbt_map_put(&s->sig_ix, x->obj, &is_new);
            if (!ix)
                return sched__fail(SBT_ENOMEM, "out of memory in the slice");
            if (is_new) {
                if ((st = sched__grow((void **)&s->sig, sizeof *s->sig, &s->cap_sig,
                                      (uint64_t)s->n_sig + 1)))
                    return st;
                memset(&s->sig[s->n_sig], 0, sizeof *s->sig);
                *ix = s->n_sig++;
            }
            struct pend *p = &s->sig[*ix];
            if ((st = sched__grow((void **)&p->v, sizeof *p->v, &p->cap, (uint64_t)p->n + 1)))
                return st;
            p->v[p->n++] = is_timeline_wait(x) ? x->value : 0;
        }
        /* what this op provides, for needs of later ops */
        switch (x->kind) {
        case SBT_OP_EVENT_RECORD:
            sbt_map_del(&s->events, x->obj);
            break;
        case SBT_OP_SIGNAL:
            take_signal(s, x);
            break;
        case SBT_OP_STREAM_CREATE:
            sbt_map_del(&s->streams, x->obj);
            break;
        default:
            break;
        }
    }
    if (x->kind == SBT_OP_ALLOC) {
        struct nres *r = nres_get(s, x->resource, 0);
        if (r) {
            o->uninit_bytes += sbt_iset_bytes(&r->need);
            r->need.n = 0;
            r->touched = 0;
        }
    }
    return 0;
}

int sched_slice_compute(sbt_reader *r, const struct sbt_range *range,
                        const struct sched_slice_opts *opts, struct sched_slice *out)
{
    memset(out, 0, sizeof *out);
    out->range_first = out->range_last = NONE;
    struct sched_slice_opts o = {0};
    if (opts) {
        size_t n = opts->sz < sizeof o ? opts->sz : sizeof o;
        memcpy(&o, opts, n);
    }
    uint32_t w = o.window_ops ? o.window_ops : 65536;
    struct slicer s = {.range = range,
                       .out = out,
                       .collect = o.collect,
                       .floor = o.floor,
                       .range_outputs = o.range_outputs};
    uint64_t lo, hi;
    sched_range_bounds(r, range, &lo, &hi);
    const struct sbt_info *in = sbt_reader_info(r);
    struct sbt_op *ops = NULL;
    struct sbt_access *acc = NULL;
    uint64_t cap_ops = 0, cap_acc = 0;
    sbt_cursor *c = NULL;
    int st = 0;
    uint64_t total = 0;
    for (uint64_t end = hi; end > in->seq_first && !st;) {
        uint64_t beg = end - in->seq_first > w ? end - w : in->seq_first;
        struct sbt_range wr = {.has_seq = 1, .seq_begin = beg, .seq_end = end};
        if ((st = sbt_cursor_open(r, &wr, &c)) < 0) {
            st = sched__fail_sbt(st);
            break;
        }
        uint64_t n = 0, n_acc = 0;
        const struct sbt_op *op;
        int rc;
        while ((rc = sbt_cursor_next(c, &op)) > 0) {
            if ((st = sched__grow64((void **)&ops, sizeof *ops, &cap_ops, n + 1)) ||
                (st = sched__grow64((void **)&acc, sizeof *acc, &cap_acc, n_acc + op->n_access)))
                break;
            ops[n] = *op;
            if (op->n_access)
                memcpy(acc + n_acc, op->access, op->n_access * sizeof *acc);
            ops[n].access = (const struct sbt_access *)(uintptr_t)n_acc; /* offset, fixed below */
            n_acc += op->n_access;
            n++;
        }
        sbt_cursor_close(c);
        c = NULL;
        if (!st && rc < 0)
            st = sched__fail_sbt(rc);
        for (uint64_t i = 0; i < n; i++)
            ops[i].access = ops[i].n_access ? acc + (uintptr_t)ops[i].access : NULL;
        for (uint64_t i = n; i-- > 0 && !st;)
            st = process(&s, &ops[i]);
        total += n;
        end = beg;
    }
    if (!st && s.floor && !s.at_floor) /* the trace starts at or after the floor */
        st = take_needs(&s);
    if (!st) {
        out->before_ops = out->range_first == NONE ? total : total - s.at_first_ops;
        out->before_upload_bytes = out->range_first == NONE ? s.cum_up : s.cum_up - s.at_first_up;
        for (uint64_t i = 0; i < out->n_seqs / 2; i++) { /* collected backwards */
            uint64_t t = out->seqs[i];
            out->seqs[i] = out->seqs[out->n_seqs - 1 - i];
            out->seqs[out->n_seqs - 1 - i] = t;
        }
    }
    for (uint32_t i = 0; i < s.n_res; i++)
        sbt_iset_free(&s.res[i].need);
    for (uint32_t i = 0; i < s.n_sig; i++)
        sched__free(s.sig[i].v);
    sched__free(s.res);
    sched__free(s.sig);
    sbt_map_free(&s.res_ix);
    sbt_map_free(&s.streams);
    sbt_map_free(&s.events);
    sbt_map_free(&s.sig_ix);
    sched__free(ops);
    sched__free(acc);
    if (st)
        sched_slice_free(out);
    return st;
}

void sched_slice_free(struct sched_slice *s)
{
    if (!s)
        return;
    sched__free(s->seqs);
    s->seqs = NULL;
    s->n_seqs = 0;
    sched__free(s->needs);
    s->needs = NULL;
    s->n_needs = s->need_bytes = 0;
}
