/*
 * scheduler/sched_sim.c — the dry-run simulation and the analysis built on it.
 *
 * Simulation: a graph visitor. Each op of the range starts when the last of its predecessors
 * finishes (their finish times ride on the edges as from_val, so nothing is looked up) and runs
 * for its recorded duration; stream order is an edge like any other, so streams run concurrently
 * exactly as far as the edges allow. Ops outside the range count as done at time 0 and pass their
 * predecessors' finish times through. O(n + e), O(1) state per stream.
 *
 * Analysis adds, still in the pass: the kernel table (a hash map by kernel), per-stream busy
 * time and idle gaps, and a sweep over the predicted intervals of device streams for the
 * concurrency and per-device busy time. Per stream the intervals come in time order, so the
 * sweep queues them per stream, and every SWEEP_BUF intervals it merges the queues (a heap of
 * their heads) up to the frontier: the earliest finish among streams active lately, before
 * which nothing later can start. O(n log s) for s streams. An interval arriving behind the
 * frontier (from a stream that was idle a long while) is counted in late_intervals and
 * clipped to it.
 *
 * Critical path: 2 bytes per op of the range (distance back to the predecessor that finished
 * last; farther ones go to a hash map); at the end the chain is walked back from the op that
 * finishes last into a bitmap, and one more pass over the range reads the details of its ops.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

#define NONE      SCHED_NONE
#define SWEEP_BUF (1u << 18)
#define MAX_GEOMS 16
#define FAR       UINT16_MAX

struct krow {
    struct sched_kernel_row row;
    uint64_t geoms[MAX_GEOMS];
    char *own_name;
};

struct ival {
    uint64_t b, e;
    uint32_t dev;
};

struct sstate {
    uint64_t prev_end; /* predicted end of the last timed op, NONE before it */
    uint64_t last_add; /* sweep: interval counter when it last added one */
    uint64_t last_finish;
    struct ival *q; /* sweep: its intervals not yet swept, in time order */
    uint64_t qh, qn, qcap;
};

struct dstate {
    uint32_t active;
    uint64_t busy_since, last_end;
    int has_end;
};

struct sched_sim {
    sbt_reader *r;
    struct sbt_range range;
    int has_range;
    struct sched_sim_opts o;
    struct sched_sim_result res;
    uint32_t n_streams, n_devices;
    const struct sbt_stream *stab;
    struct sched_stream_row *srow; /* by slot 0..n_streams */
    struct sstate *ss;
    struct sched_device_row *drow; /* by device 0..n_devices */
    struct dstate *ds;
    uint64_t cap_begin, cap_end;

    struct sbt_map kmap; /* key -> krow index */
    struct krow *k;
    uint32_t n_k, cap_k;

    /* critical path */
    uint64_t lo, hi; /* seq span of the range */
    uint16_t *crit;  /* per seq - lo: seq - critical predecessor, 0 none, FAR: see far */
    struct sbt_map far;
    uint64_t end_seq, end_val;

    /* sweep */
    uint64_t n_buf, n_added; /* intervals queued, added */
    uint32_t *slot_heap;     /* n_streams + 1 */
    struct ival *heap;       /* active intervals, min-heap by e */
    uint64_t n_heap, cap_heap;
    uint64_t t_swept;
    uint32_t active;
    uint64_t dev_busy_total;
    int err;
};

/* ========================================================================================== */
/* Kernel table                                                                               */
/* ========================================================================================== */

static const char *row_name(sched_sim *s, const struct sbt_op *op, char *buf, size_t len)
{
    static const char *dirs[] = {"", "h2d", "d2h", "d2d", "h2h"};
    if (op->kind == SBT_OP_KERNEL) {
        const char *n = NULL;
        if ((op->flags & SBT_OPF_KERNEL) && op->kernel) {
            const struct sbt_kernel *k = sbt_reader_kernel(s->r, op->kernel);
            if (k)
                n = sbt_reader_string(s->r, k->name);
        }
        if ((!n || !*n) && op->name)
            n = sbt_reader_string(s->r, op->name);
        return n && *n ? n : "[kernel]";
    }
    if (op->kind == SBT_OP_COPY)
        snprintf(buf, len, "[copy %s]", op->subkind < 5 ? dirs[op->subkind] : "?");
    else
        snprintf(buf, len, "[%s]", sbt_op_kind_name(op->kind));
    return buf;
}

static int kernel_add(sched_sim *s, const struct sbt_op *op, uint64_t dur)
{
    uint64_t key;
    if (op->kind == SBT_OP_KERNEL)
        key = (op->flags & SBT_OPF_KERNEL) && op->kernel ? (1ull << 62) | op->kernel
                                                         : (2ull << 62) | op->name;
    else
        key = (3ull << 62) | ((uint64_t)op->kind << 32) | op->subkind;
    int is_new;
    uint64_t *ix = sbt_map_put(&s->kmap, key, &is_new);
    if (!ix)
        return sched__fail_sbt(SBT_ENOMEM);
    if (is_new) {
        int st = sched__grow((void **)&s->k, sizeof *s->k, &s->cap_k, (uint64_t)s->n_k + 1);
        if (st)
            return st;
        struct krow *k = &s->k[s->n_k];
        memset(k, 0, sizeof *k);
        char buf[64];
        const char *n = row_name(s, op, buf, sizeof buf);
        if (n == buf) {
            if (!(k->own_name = sched__malloc(strlen(buf) + 1)))
                return sched__fail(SBT_ENOMEM, "out of memory naming a kernel row");
            strcpy(k->own_name, buf);
            n = k->own_name;
        }
        k->row.name = n;
        k->row.kernel = op->kind == SBT_OP_KERNEL && (op->flags & SBT_OPF_KERNEL) ? op->kernel : 0;
        k->row.min_ns = UINT64_MAX;
        memcpy(k->row.grid, op->grid, sizeof op->grid);
        memcpy(k->row.block, op->block, sizeof op->block);
        *ix = s->n_k++;
    }
    struct krow *k = &s->k[*ix];
    k->row.count++;
    k->row.total_ns += dur;
    if (dur < k->row.min_ns)
        k->row.min_ns = dur;
    if (dur > k->row.max_ns)
        k->row.max_ns = dur;
    if (op->kind == SBT_OP_KERNEL && k->row.n_geoms < MAX_GEOMS) {
        uint64_t h = 1469598103934665603ull;
        for (int i = 0; i < 3; i++)
            h = (h ^ op->grid[i]) * 1099511628211ull, h = (h ^ op->block[i]) * 1099511628211ull;
        uint32_t i = 0;
        while (i < k->row.n_geoms && k->geoms[i] != h)
            i++;
        if (i == k->row.n_geoms)
            k->geoms[k->row.n_geoms++] = h;
    }
    return 0;
}

/* ========================================================================================== */
/* Sweep                                                                                      */
/* ========================================================================================== */

static void heap_push(sched_sim *s, struct ival v)
{
    uint64_t i = s->n_heap++;
    while (i) {
        uint64_t p = (i - 1) / 2;
        if (s->heap[p].e <= v.e)
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = v;
}

static struct ival heap_pop(sched_sim *s)
{
    struct ival top = s->heap[0], last = s->heap[--s->n_heap];
    uint64_t i = 0;
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= s->n_heap)
            break;
        if (c + 1 < s->n_heap && s->heap[c + 1].e < s->heap[c].e)
            c++;
        if (last.e <= s->heap[c].e)
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->n_heap)
        s->heap[i] = last;
    return top;
}

static void dev_up(sched_sim *s, uint32_t dev, uint64_t t)
{
    struct dstate *d = &s->ds[dev];
    if (d->active++ == 0) {
        d->busy_since = t;
        if (d->has_end && t > d->last_end) {
            struct sched_device_row *r = &s->drow[dev];
            uint64_t gap = t - d->last_end;
            r->n_gaps++;
            r->gap_ns += gap;
            if (gap > r->max_gap_ns)
                r->max_gap_ns = gap, r->max_gap_at = d->last_end;
        }
    }
    if (++s->active > s->res.max_concurrency) {
        s->res.max_concurrency = s->active;
        s->res.max_concurrency_at = t;
    }
}

static void dev_down(sched_sim *s, uint32_t dev, uint64_t t)
{
    struct dstate *d = &s->ds[dev];
    s->active--;
    if (--d->active == 0) {
        s->drow[dev].busy_ns += t - d->busy_since;
        d->last_end = t;
        d->has_end = 1;
    }
}

static uint64_t head_b(const sched_sim *s, uint32_t slot)
{
    const struct sstate *q = &s->ss[slot];
    return q->q[q->qh].b;
}

static void slot_sift(sched_sim *s, uint32_t *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && head_b(s, h[c + 1]) < head_b(s, h[c]))
            c++;
        if (head_b(s, h[i]) <= head_b(s, h[c]))
            break;
        uint32_t t = h[i];
        h[i] = h[c], h[c] = t;
        i = c;
    }
}

/* Processes, in time order, the queued intervals that start before frontier: a k-way merge of
 * the per-stream queues (each already in time order) with a heap of their heads. */
static void sweep(sched_sim *s, uint64_t frontier)
{
    uint32_t n = 0, *h = s->slot_heap;
    for (uint32_t i = 1; i <= s->n_streams; i++)
        if (s->ss[i].qh < s->ss[i].qn)
            h[n++] = i;
    for (uint32_t i = n / 2; i-- > 0;)
        slot_sift(s, h, n, i);
    while (n) {
        struct sstate *q = &s->ss[h[0]];
        struct ival v = q->q[q->qh];
        if (v.b >= frontier)
            break;
        while (s->n_heap && s->heap[0].e <= v.b) {
            struct ival e = heap_pop(s);
            dev_down(s, e.dev, e.e);
        }
        s->t_swept = v.b;
        dev_up(s, v.dev, v.b);
        heap_push(s, v);
        s->n_buf--;
        if (++q->qh == q->qn)
            h[0] = h[--n];
        if (n)
            slot_sift(s, h, n, 0);
    }
    if (frontier == NONE)
        while (s->n_heap) {
            struct ival e = heap_pop(s);
            dev_down(s, e.dev, e.e);
        }
    for (uint32_t i = 1; i <= s->n_streams; i++) { /* compact the queues */
        struct sstate *q = &s->ss[i];
        if (q->qh && q->qh < q->qn)
            memmove(q->q, q->q + q->qh, (size_t)(q->qn - q->qh) * sizeof *q->q);
        q->qn -= q->qh;
        q->qh = 0;
    }
}

static int sweep_add(sched_sim *s, uint32_t slot, uint64_t b, uint64_t e)
{
    uint32_t dev = s->stab[slot - 1].device;
    if (dev > s->n_devices)
        return 0;
    struct sstate *q = &s->ss[slot];
    if (q->qn > q->qh && b < q->q[q->qn - 1].b) /* keep the queue in order (broken edges) */
        b = q->q[q->qn - 1].b;
    if (b < s->t_swept) { /* behind the frontier: clip */
        s->res.late_intervals++;
        b = s->t_swept;
    }
    if (e <= b)
        return 0;
    int st;
    if ((st = sched__grow64((void **)&q->q, sizeof *q->q, &q->qcap, q->qn + 1)) ||
        (st = sched__grow64((void **)&s->heap, sizeof *s->heap, &s->cap_heap,
                            s->n_heap + s->n_buf + 1)))
        return st;
    q->q[q->qn++] = (struct ival){b, e, dev};
    s->n_buf++;
    q->last_add = ++s->n_added;
    q->last_finish = e;
    if (s->n_buf >= SWEEP_BUF) {
        uint64_t f = NONE, maxhead = 0;
        for (uint32_t i = 1; i <= s->n_streams; i++) {
            struct sstate *t = &s->ss[i];
            if (t->last_add && t->last_add + 4 * SWEEP_BUF > s->n_added && t->last_finish < f)
                f = t->last_finish;
            if (t->qh < t->qn && t->q[t->qh].b > maxhead)
                maxhead = t->q[t->qh].b;
        }
        if (f == NONE || f <= s->t_swept) /* nothing can move: force progress */
            f = maxhead + 1;
        sweep(s, f);
    }
    return 0;
}

/* ========================================================================================== */
/* The visitor                                                                                */
/* ========================================================================================== */

int sched_sim_create(sbt_reader *r, const struct sbt_range *range,
                     const struct sched_sim_opts *opts, sched_sim **out)
{
    *out = NULL;
    sched_sim *s = sched__calloc(1, sizeof *s);
    if (!s)
        return sched__fail(SBT_ENOMEM, "out of memory creating the simulation");
    s->r = r;
    if (range) {
        s->range = *range;
        s->has_range = 1;
    }
    if (opts) {
        size_t n = opts->sz < sizeof s->o ? opts->sz : sizeof s->o;
        memcpy(&s->o, opts, n);
    }
    if (!s->o.max_critical_ops)
        s->o.max_critical_ops = 1000;
    s->stab = sbt_reader_streams(r, &s->n_streams);
    sbt_reader_devices(r, &s->n_devices);
    s->srow = sched__calloc((size_t)s->n_streams + 1, sizeof *s->srow);
    s->ss = sched__calloc((size_t)s->n_streams + 1, sizeof *s->ss);
    s->drow = sched__calloc((size_t)s->n_devices + 1, sizeof *s->drow);
    s->ds = sched__calloc((size_t)s->n_devices + 1, sizeof *s->ds);
    s->slot_heap = sched__calloc((size_t)s->n_streams + 1, sizeof *s->slot_heap);
    if (!s->srow || !s->ss || !s->drow || !s->ds || !s->slot_heap)
        goto oom;
    for (uint32_t i = 0; i <= s->n_streams; i++)
        s->ss[i].prev_end = NONE;
    s->cap_begin = UINT64_MAX;
    s->end_seq = NONE;
    sched_range_bounds(r, range, &s->lo, &s->hi);
    if (s->o.critical_path && s->hi > s->lo) {
        if (s->hi - s->lo > SIZE_MAX / sizeof *s->crit)
            goto oom;
        if (!(s->crit = sched__calloc((size_t)(s->hi - s->lo), sizeof *s->crit)))
            goto oom;
    }
    *out = s;
    return 0;
oom:
    sched_sim_destroy(s);
    return sched__fail(SBT_ENOMEM, "out of memory creating the simulation");
}

int sched_sim_node(void *ctx, struct sched_node *n)
{
    sched_sim *s = ctx;
    const struct sbt_op *op = n->op;
    uint64_t start = 0, cp = NONE;
    for (uint32_t i = 0; i < n->n_in; i++)
        if (!(n->in[i].flags & SCHED_EDGE_BROKEN) && n->in[i].from_val > start)
            start = n->in[i].from_val, cp = n->in[i].from;
    if (s->crit && op->seq >= s->lo && op->seq < s->hi && cp != NONE) {
        uint64_t d = op->seq > cp ? op->seq - cp : 0;
        if (d && d < FAR) {
            s->crit[op->seq - s->lo] = (uint16_t)d;
        } else {
            uint64_t *f = sbt_map_put(&s->far, op->seq, NULL);
            if (!f)
                return sched__fail(SBT_ENOMEM, "out of memory recording the critical path");
            *f = cp;
            s->crit[op->seq - s->lo] = FAR;
        }
    }
    if (s->has_range && !sched_range_contains(&s->range, op)) {
        n->val = start; /* done before the range, or replayed by the slice: no time */
        return 0;
    }
    uint64_t dur = sched_op_duration(op);
    uint64_t fin = start + dur;
    n->val = fin;
    struct sched_sim_result *res = &s->res;
    res->n_ops++;
    uint64_t b, e;
    sbt_op_span(op, &b, &e);
    if (b < s->cap_begin)
        s->cap_begin = b;
    if (e > s->cap_end)
        s->cap_end = e;
    if (s->end_seq == NONE || fin > res->makespan_ns) {
        res->makespan_ns = fin;
        s->end_seq = op->seq;
    }
    if (!dur)
        return 0;
    res->n_timed++;
    res->total_busy_ns += dur;
    if (!s->o.analysis)
        return 0;
    uint32_t slot = op->stream <= s->n_streams ? op->stream : 0;
    struct sched_stream_row *sr = &s->srow[slot];
    struct sstate *ss = &s->ss[slot];
    if (!sr->n_ops++)
        sr->first_ns = start;
    sr->busy_ns += dur;
    if (ss->prev_end != NONE && start > ss->prev_end) {
        uint64_t gap = start - ss->prev_end;
        sr->n_gaps++;
        sr->gap_ns += gap;
        if (gap > sr->max_gap_ns)
            sr->max_gap_ns = gap, sr->max_gap_at = ss->prev_end;
    }
    if (ss->prev_end == NONE || fin > ss->prev_end)
        ss->prev_end = fin;
    if (fin > sr->last_ns)
        sr->last_ns = fin;
    int st;
    if ((st = kernel_add(s, op, dur)))
        return st;
    if (slot && s->stab[slot - 1].kind != SBT_STREAM_HOST_THREAD) {
        s->dev_busy_total += dur;
        if ((st = sweep_add(s, slot, start, fin)))
            return st;
    }
    return 0;
}

/* ========================================================================================== */
/* Finish: tables and the critical path                                                       */
/* ========================================================================================== */

static int cmp_krow(const void *a, const void *b)
{
    const struct sched_kernel_row *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

static uint64_t row_key(const struct sbt_op *op)
{
    if (op->kind == SBT_OP_KERNEL)
        return (op->flags & SBT_OPF_KERNEL) && op->kernel ? (1ull << 62) | op->kernel
                                                          : (2ull << 62) | op->name;
    return (3ull << 62) | ((uint64_t)op->kind << 32) | op->subkind;
}

/* Walks the chain back from the op that ends last, marking its ops in a bitmap over the range,
 * then reads the marked ops once more (in seq order) for their details. Start times listed are
 * cumulative in seq order, which is the path's order unless it takes a late (wait-before-signal)
 * edge. */
static int crit_finish(sched_sim *s)
{
    struct sched_sim_result *res = &s->res;
    if (!s->crit || s->end_seq == NONE)
        return 0;
    uint64_t span = s->hi - s->lo, n = 0, first = NONE, last = 0;
    uint64_t *bits = sched__calloc((size_t)(span / 64 + 1), sizeof *bits);
    if (!bits)
        return sched__fail(SBT_ENOMEM, "out of memory for the critical path of %" PRIu64 " ops",
                           span);
    for (uint64_t cur = s->end_seq; cur != NONE && cur >= s->lo && cur < s->hi && n <= span;) {
        uint64_t i = cur - s->lo;
        if (bits[i / 64] & (1ull << (i % 64)))
            break; /* a loop would be a bug; do not spin */
        bits[i / 64] |= 1ull << (i % 64);
        n++;
        if (cur < first)
            first = cur;
        if (cur > last)
            last = cur;
        uint16_t d = s->crit[i];
        if (!d)
            cur = NONE;
        else if (d == FAR)
            cur = *sbt_map_get(&s->far, cur);
        else
            cur -= d;
    }
    uint32_t max = s->o.max_critical_ops;
    struct sched_crit_op *ops = sched__calloc(n < max ? n : max, sizeof *ops);
    sbt_cursor *c = NULL;
    int st = 0, rc = 0;
    if (!ops) {
        st = sched__fail(SBT_ENOMEM, "out of memory for a critical path of %" PRIu64 " ops", n);
        goto out;
    }
    struct sbt_range rg = {.has_seq = 1, .seq_begin = first, .seq_end = last + 1};
    if ((st = sbt_cursor_open(s->r, &rg, &c)) < 0) {
        st = sched__fail_sbt(st);
        goto out;
    }
    const struct sbt_op *op;
    uint64_t t = 0, k = 0;
    while ((rc = sbt_cursor_next(c, &op)) > 0) {
        uint64_t i = op->seq - s->lo;
        if (op->seq < s->lo || op->seq >= s->hi || !(bits[i / 64] & (1ull << (i % 64))))
            continue;
        int in = !s->has_range || sched_range_contains(&s->range, op);
        uint64_t dur = in ? sched_op_duration(op) : 0;
        if (k < max)
            ops[k] =
                (struct sched_crit_op){op->seq, op->kind, op->stream, op->name, op->kernel, t, dur};
        k++;
        t += dur;
        res->crit_busy_ns += dur;
        if (!dur)
            continue;
        res->crit_n_ops++;
        uint64_t *kx = sbt_map_get(&s->kmap, row_key(op));
        if (kx)
            s->k[*kx].row.crit_ns += dur;
    }
    if (rc < 0) {
        st = sched__fail_sbt(rc);
        goto out;
    }
    res->crit = ops;
    res->n_crit = (uint32_t)(k < max ? k : max);
    ops = NULL;
out:
    sbt_cursor_close(c);
    sched__free(bits);
    sched__free(ops);
    return st;
}

int sched_sim_finish(sched_sim *s)
{
    struct sched_sim_result *res = &s->res;
    res->captured_begin = s->cap_begin == UINT64_MAX ? 0 : s->cap_begin;
    res->captured_ns = s->cap_end > res->captured_begin ? s->cap_end - res->captured_begin : 0;
    if (!s->o.analysis)
        return crit_finish(s);
    sweep(s, NONE);
    if (res->makespan_ns)
        res->mean_concurrency = (double)s->dev_busy_total / (double)res->makespan_ns;
    int st = crit_finish(s);
    if (st)
        return st;
    /* tables */
    res->kernels = sched__calloc(s->n_k ? s->n_k : 1, sizeof *res->kernels);
    res->streams = sched__calloc((size_t)s->n_streams + 1, sizeof *res->streams);
    res->devices = sched__calloc((size_t)s->n_devices + 1, sizeof *res->devices);
    if (!res->kernels || !res->streams || !res->devices)
        return sched__fail(SBT_ENOMEM, "out of memory for the analysis tables");
    for (uint32_t i = 0; i < s->n_k; i++) {
        s->k[i].row.mean_ns =
            s->k[i].row.count ? (double)s->k[i].row.total_ns / (double)s->k[i].row.count : 0;
        res->kernels[i] = s->k[i].row;
    }
    res->n_kernels = s->n_k;
    qsort(res->kernels, s->n_k, sizeof *res->kernels, cmp_krow);
    for (uint32_t i = 0; i <= s->n_streams; i++) {
        if (!s->srow[i].n_ops)
            continue;
        struct sched_stream_row *r = &res->streams[res->n_streams++];
        *r = s->srow[i];
        r->stream = i;
        if (i) {
            r->device = s->stab[i - 1].device;
            r->kind = s->stab[i - 1].kind;
        }
    }
    for (uint32_t d = 1; d <= s->n_devices; d++) {
        if (!s->drow[d].busy_ns)
            continue;
        struct sched_device_row *r = &res->devices[res->n_devices++];
        *r = s->drow[d];
        r->device = d;
    }
    return 0;
}

const struct sched_sim_result *sched_sim_result(const sched_sim *s)
{
    return &s->res;
}

void sched_sim_destroy(sched_sim *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n_k; i++)
        sched__free(s->k[i].own_name);
    sched__free(s->k);
    sbt_map_free(&s->kmap);
    sbt_map_free(&s->far);
    sched__free(s->crit);
    sched__free(s->slot_heap);
    if (s->ss)
        for (uint32_t i = 0; i <= s->n_streams; i++)
            sched__free(s->ss[i].q);
    sched__free(s->heap);
    sched__free(s->srow);
    sched__free(s->ss);
    sched__free(s->drow);
    sched__free(s->ds);
    sched__free(s->res.kernels);
    sched__free(s->res.streams);
    sched__free(s->res.devices);
    sched__free(s->res.crit);
    sched__free(s);
}

/* ========================================================================================== */
/* JSON                                                                                       */
/* ========================================================================================== */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

int sched_sim_write_json(const sched_sim *s, const sbt_reader *r, FILE *f)
{
    const struct sched_sim_result *res = &s->res;
    fprintf(f,
            "{\"n_ops\":%" PRIu64 ",\"n_timed\":%" PRIu64 ",\"makespan_ns\":%" PRIu64
            ",\"captured_ns\":%" PRIu64 ",\"total_busy_ns\":%" PRIu64,
            res->n_ops, res->n_timed, res->makespan_ns, res->captured_ns, res->total_busy_ns);
    if (s->o.analysis) {
        fprintf(
            f,
            ",\"mean_concurrency\":%.4f,\"max_concurrency\":%u,\"max_concurrency_at_ns\":%" PRIu64
            ",\"late_intervals\":%" PRIu64 ",\"kernels\":[",
            res->mean_concurrency, res->max_concurrency, res->max_concurrency_at,
            res->late_intervals);
        for (uint32_t i = 0; i < res->n_kernels; i++) {
            const struct sched_kernel_row *k = &res->kernels[i];
            fprintf(f, "%s{\"name\":", i ? "," : "");
            json_str(f, k->name);
            fprintf(f,
                    ",\"kernel\":%u,\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64
                    ",\"mean_ns\":%.1f,\"min_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
                    ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"geometries\":%u"
                    ",\"critical_ns\":%" PRIu64 "}",
                    k->kernel, k->count, k->total_ns, k->mean_ns, k->min_ns, k->max_ns, k->grid[0],
                    k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2], k->n_geoms,
                    k->crit_ns);
        }
        fprintf(f, "],\"streams\":[");
        for (uint32_t i = 0; i < res->n_streams; i++) {
            const struct sched_stream_row *t = &res->streams[i];
            const struct sbt_stream *st = sbt_reader_stream(r, t->stream);
            fprintf(f, "%s{\"stream\":%u,\"name\":", i ? "," : "", t->stream);
            json_str(f, st ? sbt_reader_string(r, st->name) : "");
            fprintf(f,
                    ",\"device\":%u,\"kind\":%u,\"n_ops\":%" PRIu64 ",\"busy_ns\":%" PRIu64
                    ",\"utilisation\":%.4f,\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64
                    ",\"idle_gaps\":%" PRIu64 ",\"idle_ns\":%" PRIu64 ",\"max_gap_ns\":%" PRIu64
                    ",\"max_gap_at_ns\":%" PRIu64 "}",
                    t->device, t->kind, t->n_ops, t->busy_ns,
                    res->makespan_ns ? (double)t->busy_ns / (double)res->makespan_ns : 0.0,
                    t->first_ns, t->last_ns, t->n_gaps, t->gap_ns, t->max_gap_ns, t->max_gap_at);
        }
        fprintf(f, "],\"devices\":[");
        for (uint32_t i = 0; i < res->n_devices; i++) {
            const struct sched_device_row *d = &res->devices[i];
            fprintf(f,
                    "%s{\"device\":%u,\"busy_ns\":%" PRIu64
                    ",\"utilisation\":%.4f,\"idle_gaps\":%" PRIu64 ",\"idle_ns\":%" PRIu64
                    ",\"max_gap_ns\":%" PRIu64 ",\"max_gap_at_ns\":%" PRIu64 "}",
                    i ? "," : "", d->device, d->busy_ns,
                    res->makespan_ns ? (double)d->busy_ns / (double)res->makespan_ns : 0.0,
                    d->n_gaps, d->gap_ns, d->max_gap_ns, d->max_gap_at);
        }
        fprintf(f, "]");
    }
    if (s->crit) {
        fprintf(f,
                ",\"critical_path\":{\"n_ops\":%" PRIu64 ",\"busy_ns\":%" PRIu64
                ",\"share\":%.4f,\"ops\":[",
                res->crit_n_ops, res->crit_busy_ns,
                res->makespan_ns ? (double)res->crit_busy_ns / (double)res->makespan_ns : 0.0);
        uint32_t k = 0;
        for (uint32_t i = 0; i < res->n_crit; i++) {
            const struct sched_crit_op *c = &res->crit[i];
            if (!c->dur_ns)
                continue;
            fprintf(f, "%s{\"seq\":%" PRIu64 ",\"kind\":", k++ ? "," : "", c->seq);
            json_str(f, sbt_op_kind_name(c->kind));
            fprintf(f, ",\"name\":");
            json_str(f, sbt_reader_string(r, c->name));
            fprintf(
                f, ",\"stream\":%u,\"start_ns\":%" PRIu64 ",\"dur_ns\":%" PRIu64 ",\"share\":%.6f}",
                c->stream, c->start_ns, c->dur_ns,
                res->makespan_ns ? (double)c->dur_ns / (double)res->makespan_ns : 0.0);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "}");
    return ferror(f) ? sched__fail(SBT_EIO, "writing JSON failed") : 0;
}
