/*
 * scheduler/sched_graph.c — the dependency graph, built in one streaming pass, and the
 * validation that falls out of it.
 *
 * Per op, in two phases:
 *   A. compute the incoming edges from the live state as it was before the op (stream order,
 *      host issue order, event/signal/sync waits, ALLOC, and RAW/WAR/WAW hazards from the byte
 *      intervals of each resource), and the findings;
 *   B. deliver the node (or hold it, if a predecessor is held or it waits for a signal that has
 *      not come yet), then update the live state with the op.
 * Live state: per stream its last op; per host thread its last host-stream op; per event its
 * latest record; per fence/semaphore the signals not yet consumed (binary), or the signalled
 * values (timeline; older entries are folded into a floor once there are more than TL_MAX); per
 * resource a sorted array of byte intervals, each with its last writer and the readers since,
 * one per stream. Nothing is kept per op once it is delivered, except for ops that were held:
 * their seq -> val stays in a map because live state may still name them.
 *
 * Transitive reduction is partial and cheap: known[a][b] = the latest op of stream b that some
 * op of stream a already waits for (+1). An edge from op P of b into stream a with P <= that is
 * implied (P -> ... -> that op -> earlier op of a -> this op) and is dropped.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

#define NONE        SCHED_NONE
#define SEG_RD      2          /* readers kept inline in a segment */
#define TL_MAX      4096       /* timeline signals kept per semaphore before folding */
#define KNOWN_MAX   1024       /* streams + 1 up to which the known[][] matrix is kept */
#define THREADS_MAX 65536      /* host thread ids tracked */
#define FREED_MAX   (1u << 18) /* freed resource ids kept for use-after-free reports */
#define EDGE_HELD   (1u << 31) /* internal: from_val must be looked up, the pred was held */

/* A reference to a node from live state. */
struct sref {
    uint64_t seq; /* NONE: no node */
    uint64_t val; /* the visitor's value; see held */
    uint32_t stream;
    uint32_t held; /* recorded while held: the value is in g->late (or still unknown) */
};
static const struct sref NOREF = {NONE, 0, 0, 0};

struct seg {
    uint64_t b, e;
    struct sref w; /* last writer; w.seq == NONE: never written */
    uint32_t n_rd, cap_more;
    struct sref rd[SEG_RD]; /* readers since the last write, one per stream */
    struct sref *more;      /* readers SEG_RD.. */
};

struct res_hist {
    uint64_t id;
    uint64_t size;     /* bytes; UINT64_MAX when no ALLOC said */
    struct sref alloc; /* seq NONE: no ALLOC seen */
    uint64_t freed_by; /* NONE while live */
    int reported_unalloc;
    struct seg *s;
    uint32_t n, cap;
};

struct strm {
    struct sref last;
    struct sref prev; /* the op before last (SCHED_ORDER_DECLARED, Vulkan queues) */
    /* SCHED_ORDER_DECLARED, Vulkan queues: ops a later op did not follow (the program leaves
     * the two unordered), still to join the first op after them that is ordered with them (a
     * signal, the next barrier-ordered command): every later op still follows them */
    struct sref dangling[4];
    uint32_t n_dangling;
    uint64_t destroyed_by;
    uint32_t device, kind;
};

struct tsig {
    uint64_t value;
    struct sref ref;
};

struct syncobj {
    uint32_t kind;    /* enum sbt_sync_kind of the first op naming it */
    struct sref last; /* latest signal */
    struct sref *q;   /* binary: unconsumed signals, FIFO ring */
    uint32_t qh, qn, qcap;
    struct tsig *tl; /* timeline: signals sorted by value */
    uint32_t n_tl, cap_tl;
    uint64_t max_val;
    uint64_t floor_val; /* timeline entries folded away: the newest of them */
    struct sref floor;
    uint64_t *pw; /* seqs of held waits pending on this object */
    uint32_t n_pw, cap_pw;
};

struct held {
    uint64_t seq;
    struct sbt_op op; /* deep copy */
    struct sbt_access *acc;
    void *payload;
    struct sched_edge *in;
    uint32_t n_in, cap_in;
    uint32_t n_pending; /* held predecessors */
    int waiting;        /* for a signal not seen yet */
    uint32_t wkind;
    uint64_t wobj, wval;
    uint64_t *deps; /* seqs of held nodes that wait for this one */
    uint32_t n_deps, cap_deps;
    /* Tarjan */
    int64_t index, low;
    int on_stack, in_cycle;
};

/* Bytes a trimmed trace's initial contents give (its STATE records), from the state's op on. */
struct init_ival {
    uint64_t seq, resource, b, e;
};

struct sched_graph {
    const sbt_reader *r;
    struct init_ival *init;            /* in seq order */
    uint64_t n_init, cap_init, i_init; /* i_init: those given so far */
    struct sbt_map init_map;           /* resource id -> index in init_set */
    struct sbt_iset *init_set;
    uint32_t n_init_set, cap_init_set;
    struct sched_graph_opts o;
    struct sched_visitor v;
    struct sched_graph_stats st;
    int stop; /* the visitor's stop value, once it asked */
    int finished;

    struct strm *streams;   /* by id; [0] collects ops on unknown streams */
    uint32_t n_streams;     /* table size; slots 0..n_streams */
    uint32_t **dev_streams; /* per device id: non-host stream ids, 0-terminated */
    uint32_t n_devices;
    uint64_t *known; /* (n_streams+1)^2, or NULL */
    struct sref *threads;
    uint32_t n_threads, cap_threads;

    struct sbt_map res_map; /* resource id -> index in res (live resources) */
    struct res_hist *res;
    uint32_t n_res, cap_res;
    uint32_t *res_free; /* slots of freed resources, for reuse */
    uint32_t n_res_free, cap_res_free;
    struct sbt_map freed; /* resource id -> seq of the FREE; cleared past FREED_MAX */
    struct res_hist tomb; /* what res_get returns for a freed resource */
    uint64_t live_segs;

    struct sbt_map ev_map; /* event id -> index in ev */
    uint64_t ev_max;       /* events kept before the old ones are dropped */
    uint64_t ev_cutoff;    /* records before this seq may have been dropped */
    struct sref *ev;
    uint32_t n_ev, cap_ev;

    struct sbt_map sync_map; /* fence/semaphore id -> index in sync */
    struct syncobj *sync;
    uint32_t n_sync, cap_sync;

    struct sbt_map held_map; /* seq -> index in held */
    struct held *held;
    uint32_t n_heldslots, cap_held;
    uint32_t *free_slots;
    uint32_t n_free, cap_free;
    uint64_t n_held;
    struct sbt_map late; /* seq -> val of ops delivered after being held */
    uint64_t *work;      /* release worklist */
    uint64_t n_work, cap_work;

    /* the op being added */
    const struct sbt_op *x;
    uint32_t xs; /* its stream slot */
    struct sched_edge *eb;
    uint32_t n_eb, cap_eb;
    uint32_t *acc_res; /* per access of x: index in res, found in phase A, used in phase B */
    uint32_t cap_acc_res;
    int x_waiting;
    uint64_t x_wobj, x_wval;
    uint32_t x_wkind;
    char msg[768];
    /* SCHED_ORDER_DECLARED */
    struct sched_ra *ra;
    uint64_t *unord; /* the current op's unordered predecessors */
    uint32_t n_unord, cap_unord;
    int unord_oom;
};

/* ========================================================================================== */
/* Findings                                                                                   */
/* ========================================================================================== */

static void finding(sched_graph *g, uint32_t kind, uint64_t seq, uint64_t other, const char *fmt,
                    ...) __attribute__((format(printf, 5, 6)));

/* Counts a finding; 1 if it is to be passed on (then call finding() for the message). Keeps
 * the cost of the many that are only counted to an increment: no message is formatted. */
static int want(sched_graph *g, uint32_t kind)
{
    uint32_t sev = sched_finding_severity(kind);
    g->st.findings[kind]++;
    if (sev == SCHED_ERROR)
        g->st.n_errors++;
    else if (sev == SCHED_WARNING)
        g->st.n_warnings++;
    return g->v.finding && g->st.findings[kind] <= g->o.max_findings_per_kind;
}

/* Passes a finding counted by want() to the visitor. */
static void finding(sched_graph *g, uint32_t kind, uint64_t seq, uint64_t other, const char *fmt,
                    ...)
{
    uint32_t sev = sched_finding_severity(kind);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->msg, sizeof g->msg, fmt, ap);
    va_end(ap);
    struct sched_finding f = {kind, sev, seq, other, g->msg};
    g->v.finding(g->v.ctx, &f);
}

/* "kernel 'name'" or "copy" for messages */
static const char *opname(sched_graph *g, const struct sbt_op *op, char *buf, size_t len)
{
    const char *n = op->name ? sbt_reader_string(g->r, op->name) : NULL;
    if (n && *n)
        snprintf(buf, len, "%s '%s'", sbt_op_kind_name(op->kind), n);
    else
        snprintf(buf, len, "%s", sbt_op_kind_name(op->kind));
    return buf;
}

static const char *sync_kind_name(uint32_t k)
{
    switch (k) {
    case SBT_SYNC_BINARY_SEMAPHORE:
        return "binary semaphore";
    case SBT_SYNC_TIMELINE_SEMAPHORE:
        return "timeline semaphore";
    case SBT_SYNC_EVENT:
        return "VkEvent";
    default:
        return "fence";
    }
}

/* ========================================================================================== */
/* Edges                                                                                      */
/* ========================================================================================== */

static uint64_t *known_at(sched_graph *g, uint32_t a, uint32_t b)
{
    return g->known ? &g->known[(size_t)a * (g->n_streams + 1) + b] : NULL;
}

/* Adds an edge p -> x unless it is implied or a duplicate. 0 or SBT_ENOMEM. */
/* SCHED_ORDER_DECLARED: whether the current op is unordered with op seq. */
static int unord_has(const sched_graph *g, uint64_t seq)
{
    for (uint32_t i = 0; i < g->n_unord; i++)
        if (g->unord[i] == seq)
            return 1;
    return 0;
}

static int add_edge(sched_graph *g, const struct sref *p, uint32_t reason, uint64_t obj,
                    uint64_t lo, uint64_t hi, uint32_t sync_kind)
{
    const struct sbt_op *x = g->x;
    if (p->seq == NONE || p->seq == x->seq)
        return 0;
    if (g->ra && reason >= SCHED_DEP_RAW && reason <= SCHED_DEP_WAW) {
        if (unord_has(g, p->seq)) {
            g->st.n_undeclared++;
            return 0; /* the program does not order them */
        }
    }
    if (reason != SCHED_DEP_STREAM && p->stream == g->xs && p->seq < x->seq)
        return 0; /* stream order implies it */
    if (!g->o.keep_implied && reason != SCHED_DEP_STREAM) {
        uint64_t *k = known_at(g, g->xs, p->stream);
        if (k && p->seq < *k)
            return 0;
    }
    uint32_t lim = g->n_eb > 64 ? g->n_eb - 8 : 0;
    for (uint32_t i = g->n_eb; i-- > lim;) {
        struct sched_edge *e = &g->eb[i];
        if (e->from != p->seq)
            continue;
        if (e->reason == reason && e->obj == obj && reason >= SCHED_DEP_RAW) {
            if (lo < e->lo)
                e->lo = lo;
            if (hi > e->hi)
                e->hi = hi;
        }
        return 0;
    }
    int st = sched__grow((void **)&g->eb, sizeof *g->eb, &g->cap_eb, (uint64_t)g->n_eb + 1);
    if (st)
        return st;
    g->eb[g->n_eb++] = (struct sched_edge){
        .from = p->seq,
        .from_val = p->val,
        .reason = reason,
        .from_stream = p->stream,
        .flags = (p->held ? EDGE_HELD : 0) | (p->seq > x->seq ? SCHED_EDGE_LATE : 0),
        .sync_kind = sync_kind,
        .obj = obj,
        .lo = lo,
        .hi = hi,
    };
    return 0;
}

/* ========================================================================================== */
/* Resources and byte intervals                                                               */
/* ========================================================================================== */

/* The live resource id; for a freed one g->tomb (freed_by set, no intervals), valid until the
 * next call; else a new one if create, or NULL. */
static struct res_hist *res_get(sched_graph *g, uint64_t id, int create)
{
    uint64_t *ix = sbt_map_get(&g->res_map, id);
    if (ix)
        return &g->res[*ix];
    uint64_t *fs = sbt_map_get(&g->freed, id);
    if (fs) {
        memset(&g->tomb, 0, sizeof g->tomb);
        g->tomb.id = id;
        g->tomb.size = UINT64_MAX;
        g->tomb.alloc = NOREF;
        g->tomb.freed_by = *fs;
        return &g->tomb;
    }
    if (!create)
        return NULL;
    uint32_t slot;
    if (g->n_res_free) {
        slot = g->res_free[g->n_res_free - 1];
    } else {
        if (sched__grow((void **)&g->res, sizeof *g->res, &g->cap_res, (uint64_t)g->n_res + 1))
            return NULL;
        slot = g->n_res;
    }
    int is_new;
    ix = sbt_map_put(&g->res_map, id, &is_new);
    if (!ix) {
        sched__fail_sbt(SBT_ENOMEM);
        return NULL;
    }
    *ix = slot;
    if (g->n_res_free)
        g->n_res_free--;
    else
        g->n_res++;
    struct res_hist *r = &g->res[slot];
    memset(r, 0, sizeof *r);
    r->id = id;
    r->size = UINT64_MAX;
    r->alloc = NOREF;
    r->freed_by = NONE;
    g->st.n_resources++;
    return r;
}

static struct sref *rd_at(struct seg *s, uint32_t i)
{
    return i < SEG_RD ? &s->rd[i] : &s->more[i - SEG_RD];
}

static int seg_add_reader(struct seg *s, const struct sref *x)
{
    for (uint32_t i = 0; i < s->n_rd; i++) {
        struct sref *r = rd_at(s, i);
        if (r->stream == x->stream) {
            *r = *x;
            return 0;
        }
    }
    if (s->n_rd >= SEG_RD) {
        int st = sched__grow((void **)&s->more, sizeof *s->more, &s->cap_more,
                             (uint64_t)s->n_rd + 1 - SEG_RD);
        if (st)
            return st;
    }
    *rd_at(s, s->n_rd++) = *x;
    return 0;
}

static int seg_same(struct seg *a, struct seg *b)
{
    if (a->e != b->b || a->w.seq != b->w.seq || a->n_rd != b->n_rd)
        return 0;
    for (uint32_t i = 0; i < a->n_rd; i++) {
        struct sref *ra = rd_at(a, i);
        uint32_t j = 0;
        while (j < b->n_rd && (rd_at(b, j)->seq != ra->seq || rd_at(b, j)->stream != ra->stream))
            j++;
        if (j == b->n_rd)
            return 0;
    }
    return 1;
}

/* First segment with e > x. */
static uint32_t seg_lower(const struct res_hist *r, uint64_t x)
{
    uint32_t lo = 0, hi = r->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->s[mid].e > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static int seg_insert(sched_graph *g, struct res_hist *r, uint32_t i, const struct seg *s)
{
    int st = sched__grow((void **)&r->s, sizeof *r->s, &r->cap, (uint64_t)r->n + 1);
    if (st)
        return st;
    memmove(&r->s[i + 1], &r->s[i], (r->n - i) * sizeof *r->s);
    r->s[i] = *s;
    r->n++;
    if (++g->live_segs > g->st.peak_segments)
        g->st.peak_segments = g->live_segs;
    return 0;
}

/* Splits segment i at `at` (b < at < e): [b, at) stays at i, [at, e) goes to i + 1. */
static int seg_split(sched_graph *g, struct res_hist *r, uint32_t i, uint64_t at)
{
    struct seg c = r->s[i];
    c.b = at;
    c.more = NULL;
    c.cap_more = 0;
    if (c.n_rd > SEG_RD) {
        c.more = sched__malloc((c.n_rd - SEG_RD) * sizeof *c.more);
        if (!c.more)
            return sched__fail(SBT_ENOMEM, "out of memory splitting a byte interval");
        memcpy(c.more, r->s[i].more, (c.n_rd - SEG_RD) * sizeof *c.more);
        c.cap_more = c.n_rd - SEG_RD;
    }
    int st = seg_insert(g, r, i + 1, &c);
    if (st) {
        sched__free(c.more);
        return st;
    }
    r->s[i].e = at;
    return 0;
}

/* Merges equal neighbours in [i0, i1] (indices clamped). */
static void seg_coalesce(sched_graph *g, struct res_hist *r, uint32_t i0, uint32_t i1)
{
    if (i1 >= r->n)
        i1 = r->n ? r->n - 1 : 0;
    uint32_t i = i0;
    while (i < i1 && i + 1 < r->n) {
        if (seg_same(&r->s[i], &r->s[i + 1])) {
            r->s[i].e = r->s[i + 1].e;
            if (r->s[i + 1].more)
                sched__free(r->s[i + 1].more);
            memmove(&r->s[i + 1], &r->s[i + 2], (r->n - i - 2) * sizeof *r->s);
            r->n--;
            g->live_segs--;
            i1--;
        } else {
            i++;
        }
    }
}

static void res_drop_segs(sched_graph *g, struct res_hist *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        sched__free(r->s[i].more);
    g->live_segs -= r->n;
    sched__free(r->s);
    r->s = NULL;
    r->n = r->cap = 0;
}

/* add_edge's first rejections, inline: most hazard candidates are on the op's own stream or
 * repeat the previous candidate. */
static inline int edge_worth(const sched_graph *g, const struct sref *p)
{
    if (p->seq == NONE || (p->stream == g->xs && p->seq < g->x->seq))
        return 0;
    return !g->n_eb || g->eb[g->n_eb - 1].from != p->seq;
}

/* Adds the bytes of [lo, hi) of r that initial contents given so far do not cover to the
 * uninitialised bytes of a read, remembering the first such range. */
static void uninit_add(const sched_graph *g, const struct res_hist *r, uint64_t lo, uint64_t hi,
                       uint64_t *uninit, uint64_t *ulo, uint64_t *uhi)
{
    const uint64_t *ix = g->n_init_set ? sbt_map_get(&g->init_map, r->id) : NULL;
    const struct sbt_iset *s = ix ? &g->init_set[*ix] : NULL;
    uint64_t pos = lo;
    for (uint32_t i = 0; pos < hi; i++) { /* the gaps of s in [pos, hi) */
        uint64_t b = s && i < s->n ? s->v[i].b : hi, e = s && i < s->n ? s->v[i].e : hi;
        if (e <= pos)
            continue;
        uint64_t gap_end = b < hi ? (b > pos ? b : pos) : hi;
        if (gap_end > pos) {
            if (!*uninit)
                *ulo = pos, *uhi = gap_end;
            *uninit += gap_end - pos;
        }
        pos = e;
    }
}

/* The initial contents of states at or before seq become written bytes. */
static int init_give(sched_graph *g, uint64_t seq)
{
    for (; g->i_init < g->n_init && g->init[g->i_init].seq <= seq; g->i_init++) {
        const struct init_ival *v = &g->init[g->i_init];
        int is_new;
        uint64_t *ix = sbt_map_put(&g->init_map, v->resource, &is_new);
        if (!ix)
            return sched__fail(SBT_ENOMEM, "out of memory for initial contents");
        if (is_new) {
            if (sched__grow((void **)&g->init_set, sizeof *g->init_set, &g->cap_init_set,
                            (uint64_t)g->n_init_set + 1))
                return sched__fail(SBT_ENOMEM, "out of memory for initial contents");
            memset(&g->init_set[g->n_init_set], 0, sizeof *g->init_set);
            *ix = g->n_init_set++;
        }
        if (sbt_iset_add(&g->init_set[*ix], v->b, v->e) < 0)
            return sched__fail(SBT_ENOMEM, "out of memory for initial contents");
    }
    return 0;
}

/* The byte ranges of r's STATE records (a trimmed trace's initial contents), adjacent chunks
 * merged. */
static int init_load(sched_graph *g, sbt_reader *r)
{
    uint64_t ns = sbt_reader_info(r)->n_states;
    for (uint64_t i = 0; i < ns; i++) {
        struct sbt_state *s;
        int st = sbt_reader_state(r, i, &s);
        if (st < 0)
            return sched__fail(st, "%s", sbt_errmsg());
        for (uint32_t a = 0; a < s->n_alloc && st == 0; a++) {
            const struct sbt_state_alloc *al = &s->alloc[a];
            for (uint64_t k = 0; k < al->n_present && st == 0; k++) {
                uint64_t b = al->index[k] * al->chunk_bytes;
                uint64_t e = b + al->chunk_bytes < al->size ? b + al->chunk_bytes : al->size;
                struct init_ival *last = g->n_init ? &g->init[g->n_init - 1] : NULL;
                if (last && last->seq == s->seq && last->resource == al->resource && last->e == b) {
                    last->e = e;
                    continue;
                }
                if ((st = sched__grow64((void **)&g->init, sizeof *g->init, &g->cap_init,
                                        g->n_init + 1)))
                    break;
                g->init[g->n_init++] =
                    (struct init_ival){.seq = s->seq, .resource = al->resource, .b = b, .e = e};
            }
        }
        sbt_state_free(s);
        if (st < 0)
            return st;
    }
    return 0;
}

/* Phase A for one access: hazard edges, ALLOC edge, uninitialised bytes (reads). */
static int access_edges(sched_graph *g, struct res_hist *r, uint64_t o, uint64_t end, int is_write,
                        uint64_t *uninit, uint64_t *uninit_lo, uint64_t *uninit_hi)
{
    int st, found = 0;
    uint64_t pos = o;
    for (uint32_t i = seg_lower(r, o); i < r->n && r->s[i].b < end; i++) {
        struct seg *s = &r->s[i];
        uint64_t lo = s->b > o ? s->b : o, hi = s->e < end ? s->e : end;
        if (!is_write && lo > pos && uninit) /* gap: never touched */
            uninit_add(g, r, pos, lo, uninit, uninit_lo, uninit_hi);
        pos = hi;
        if (s->w.seq != NONE) {
            found = 1;
            if (edge_worth(g, &s->w) &&
                (st = add_edge(g, &s->w, is_write ? SCHED_DEP_WAW : SCHED_DEP_RAW, r->id, lo, hi,
                               0)))
                return st;
        } else if (!is_write && uninit) {
            uninit_add(g, r, lo, hi, uninit, uninit_lo, uninit_hi);
        }
        if (is_write) {
            for (uint32_t k = 0; k < s->n_rd; k++) {
                found = 1;
                if (edge_worth(g, rd_at(s, k)) &&
                    (st = add_edge(g, rd_at(s, k), SCHED_DEP_WAR, r->id, lo, hi, 0)))
                    return st;
            }
        }
    }
    if (!is_write && pos < end && uninit)
        uninit_add(g, r, pos, end, uninit, uninit_lo, uninit_hi);
    /* any earlier accessor depends on the ALLOC already, so only the first needs the edge */
    if (!found && r->alloc.seq != NONE)
        return add_edge(g, &r->alloc, SCHED_DEP_ALLOC, r->id, o, end, 0);
    return 0;
}

/* Phase B: x reads [o, end). */
static int apply_read(sched_graph *g, struct res_hist *r, uint64_t o, uint64_t end,
                      const struct sref *x)
{
    int st;
    uint32_t i = seg_lower(r, o), i0 = i ? i - 1 : 0;
    uint64_t pos = o;
    while (pos < end) {
        if (i < r->n && r->s[i].b <= pos) {
            if (r->s[i].b < pos) {
                if ((st = seg_split(g, r, i, pos)))
                    return st;
                i++;
            }
            if (r->s[i].e > end && (st = seg_split(g, r, i, end)))
                return st;
            if ((st = seg_add_reader(&r->s[i], x)))
                return st;
            pos = r->s[i].e;
            i++;
        } else {
            uint64_t gend = i < r->n && r->s[i].b < end ? r->s[i].b : end;
            struct seg s = {.b = pos, .e = gend, .w = NOREF, .n_rd = 1};
            s.rd[0] = *x;
            if ((st = seg_insert(g, r, i, &s)))
                return st;
            pos = gend;
            i++;
        }
    }
    seg_coalesce(g, r, i0, i);
    return 0;
}

/* Phase B: x writes [o, end). */
static int apply_write(sched_graph *g, struct res_hist *r, uint64_t o, uint64_t end,
                       const struct sref *x)
{
    int st;
    uint32_t i = seg_lower(r, o);
    if (i < r->n && r->s[i].b < o) {
        if ((st = seg_split(g, r, i, o)))
            return st;
        i++;
    }
    uint32_t j = i;
    while (j < r->n && r->s[j].e <= end)
        j++;
    if (j < r->n && r->s[j].b < end) {
        if ((st = seg_split(g, r, j, end)))
            return st;
        j++;
    }
    struct seg s = {.b = o, .e = end, .w = *x};
    if (i < j) { /* reuse slot i, drop i+1..j-1 */
        for (uint32_t k = i; k < j; k++)
            if (r->s[k].more)
                sched__free(r->s[k].more);
        r->s[i] = s;
        memmove(&r->s[i + 1], &r->s[j], (r->n - j) * sizeof *r->s);
        r->n -= j - i - 1;
        g->live_segs -= j - i - 1;
    } else if ((st = seg_insert(g, r, i, &s))) {
        return st;
    }
    seg_coalesce(g, r, i ? i - 1 : 0, i + 1);
    return 0;
}

/* Phase A of the accesses of x: checks, hazards. */
static int accesses_edges(sched_graph *g)
{
    const struct sbt_op *x = g->x;
    char nb[160];
    int st;
    if ((st = sched__grow((void **)&g->acc_res, sizeof *g->acc_res, &g->cap_acc_res, x->n_access)))
        return st;
    for (int pass = 0; pass < 2; pass++) { /* reads, then writes */
        for (uint32_t a = 0; a < x->n_access; a++) {
            const struct sbt_access *ac = &x->access[a];
            int is_write = pass == 1;
            if (!(ac->mode & (is_write ? SBT_ACCESS_WRITE : SBT_ACCESS_READ)) || !ac->len)
                continue;
            const char *verb = is_write ? "writes" : "reads";
            struct res_hist *r = pass && (ac->mode & SBT_ACCESS_READ) && g->acc_res[a] != UINT32_MAX
                                     ? &g->res[g->acc_res[a]]
                                     : res_get(g, ac->resource, 1);
            if (!r)
                return sched__fail(SBT_ENOMEM, "out of memory tracking resource %" PRIu64,
                                   ac->resource);
            g->acc_res[a] = r == &g->tomb ? UINT32_MAX : (uint32_t)(r - g->res);
            if (r->freed_by != NONE) {
                if (pass == 0 || !(ac->mode & SBT_ACCESS_READ))
                    if (want(g, SCHED_F_USE_AFTER_FREE))
                        finding(g, SCHED_F_USE_AFTER_FREE, x->seq, r->freed_by,
                                "op %" PRIu64 " (%s) %s resource %" PRIu64 " freed by op %" PRIu64,
                                x->seq, opname(g, x, nb, sizeof nb), verb, r->id, r->freed_by);
                continue;
            }
            uint64_t end = sched__end(ac->offset, ac->len);
            if (pass == 0 || !(ac->mode & SBT_ACCESS_READ)) {
                if (r->alloc.seq == NONE && !r->reported_unalloc) {
                    r->reported_unalloc = 1;
                    if (want(g, SCHED_F_UNALLOCATED))
                        finding(g, SCHED_F_UNALLOCATED, x->seq, NONE,
                                "op %" PRIu64 " (%s) %s resource %" PRIu64
                                " that no ALLOC before it created (allocated before the capture "
                                "started?)",
                                x->seq, opname(g, x, nb, sizeof nb), verb, r->id);
                }
                if (r->size != UINT64_MAX && end > r->size)
                    if (want(g, SCHED_F_OUT_OF_BOUNDS))
                        finding(g, SCHED_F_OUT_OF_BOUNDS, x->seq, r->alloc.seq,
                                "op %" PRIu64 " (%s) %s bytes [%" PRIu64 ", %" PRIu64
                                ") of resource %" PRIu64 " of %" PRIu64
                                " bytes (allocated by op %" PRIu64 ")",
                                x->seq, opname(g, x, nb, sizeof nb), verb, ac->offset, end, r->id,
                                r->size, r->alloc.seq);
            }
            uint64_t un = 0, ulo = 0, uhi = 0;
            if ((st = access_edges(g, r, ac->offset, end, is_write, is_write ? NULL : &un, &ulo,
                                   &uhi)))
                return st;
            if (un) {
                char al[48] = "no ALLOC in the trace";
                if (r->alloc.seq != NONE)
                    snprintf(al, sizeof al, "allocated by op %" PRIu64, r->alloc.seq);
                if (want(g, SCHED_F_UNINIT_READ))
                    finding(g, SCHED_F_UNINIT_READ, x->seq, r->alloc.seq,
                            "op %" PRIu64 " (%s) reads %" PRIu64 " bytes of resource %" PRIu64
                            " that nothing wrote, first [%" PRIu64 ", %" PRIu64 ") (%s)",
                            x->seq, opname(g, x, nb, sizeof nb), un, r->id, ulo, uhi, al);
            }
        }
    }
    return 0;
}

static int accesses_apply(sched_graph *g, const struct sref *xr)
{
    const struct sbt_op *x = g->x;
    int st;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t a = 0; a < x->n_access; a++) {
            const struct sbt_access *ac = &x->access[a];
            int is_write = pass == 1;
            if (!(ac->mode & (is_write ? SBT_ACCESS_WRITE : SBT_ACCESS_READ)) || !ac->len)
                continue;
            if (g->acc_res[a] == UINT32_MAX)
                continue; /* freed */
            struct res_hist *r = &g->res[g->acc_res[a]];
            uint64_t end = sched__end(ac->offset, ac->len);
            st = is_write ? apply_write(g, r, ac->offset, end, xr)
                          : apply_read(g, r, ac->offset, end, xr);
            if (st)
                return st;
        }
    }
    return 0;
}

/* Events have no destroy op in the trace, and a program that creates an event per step would
 * make the event map grow with the trace. Past ev_max events, those last recorded more than
 * 4 * max_events ops ago are dropped (a wait on one of them then gets no edge: the record has
 * long completed). */
static int ev_evict(sched_graph *g, uint64_t now)
{
    uint64_t keep = 4 * g->o.max_events; /* "long ago": more ops back than this */
    uint64_t cutoff = now > keep ? now - keep : 0;
    struct sbt_map nm = {0};
    struct sref *nev = NULL;
    uint32_t nn = 0, ncap = 0;
    int st = 0;
    for (uint64_t i = 0; i < g->ev_map.cap && !st; i++) {
        if (!g->ev_map.keys[i])
            continue;
        struct sref *e = &g->ev[g->ev_map.vals[i]];
        if (e->seq < cutoff && !e->held)
            continue;
        uint64_t *ix;
        if ((st = sched__grow((void **)&nev, sizeof *nev, &ncap, (uint64_t)nn + 1)))
            break;
        if (!(ix = sbt_map_put(&nm, g->ev_map.keys[i] - 1, NULL))) {
            st = sched__fail(SBT_ENOMEM, "out of memory dropping old events");
            break;
        }
        *ix = nn;
        nev[nn++] = *e;
    }
    if (st) {
        sbt_map_free(&nm);
        sched__free(nev);
        return st;
    }
    if (nn < g->n_ev)
        g->ev_cutoff = cutoff ? cutoff : 1;
    sbt_map_free(&g->ev_map);
    sched__free(g->ev);
    g->ev_map = nm;
    g->ev = nev;
    g->n_ev = nn;
    g->cap_ev = ncap;
    if ((uint64_t)nn * 2 > g->ev_max) /* most are recent: this much is live state */
        g->ev_max = (uint64_t)nn * 2;
    return 0;
}

/* ========================================================================================== */
/* Sync objects                                                                               */
/* ========================================================================================== */

static struct syncobj *sync_get(sched_graph *g, uint64_t id, uint32_t kind)
{
    int is_new;
    uint64_t *ix = sbt_map_get(&g->sync_map, id);
    if (ix)
        return &g->sync[*ix];
    if (sched__grow((void **)&g->sync, sizeof *g->sync, &g->cap_sync, (uint64_t)g->n_sync + 1))
        return NULL;
    if (!(ix = sbt_map_put(&g->sync_map, id, &is_new))) {
        sched__fail_sbt(SBT_ENOMEM);
        return NULL;
    }
    *ix = g->n_sync;
    struct syncobj *s = &g->sync[g->n_sync++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->last = NOREF;
    s->floor = NOREF;
    return s;
}

static int is_timeline(uint32_t kind)
{
    return kind == SBT_SYNC_TIMELINE_SEMAPHORE;
}

/* Phase A of a WAIT: the signal it waits for, or x_waiting. */
static int wait_edges(sched_graph *g)
{
    const struct sbt_op *x = g->x;
    struct syncobj *s = sync_get(g, x->obj, x->subkind);
    if (!s)
        return sched__fail(SBT_ENOMEM, "out of memory tracking sync object %" PRIu64, x->obj);
    if (is_timeline(x->subkind)) {
        if (x->value == 0)
            return 0; /* the initial value satisfies it */
        uint32_t lo = 0, hi = s->n_tl;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (s->tl[mid].value >= x->value)
                hi = mid;
            else
                lo = mid + 1;
        }
        if (lo < s->n_tl)
            return add_edge(g, &s->tl[lo].ref, SCHED_DEP_SIGNAL, x->obj, x->value, s->tl[lo].value,
                            x->subkind);
        if (s->floor.seq != NONE && x->value <= s->floor_val)
            return add_edge(g, &s->floor, SCHED_DEP_SIGNAL, x->obj, x->value, s->floor_val,
                            x->subkind);
    } else if (x->subkind == SBT_SYNC_BINARY_SEMAPHORE) {
        if (s->qn) {
            struct sref p = s->q[s->qh];
            s->qh = (s->qh + 1) % s->qcap;
            s->qn--;
            return add_edge(g, &p, SCHED_DEP_SIGNAL, x->obj, 0, 0, x->subkind);
        }
    } else if (s->last.seq != NONE) {
        return add_edge(g, &s->last, SCHED_DEP_SIGNAL, x->obj, 0, 0, x->subkind);
    }
    g->x_waiting = 1;
    g->x_wobj = x->obj;
    g->x_wval = x->value;
    g->x_wkind = x->subkind;
    return 0;
}

/* ========================================================================================== */
/* Held nodes and delivery                                                                    */
/* ========================================================================================== */

static struct held *held_get(sched_graph *g, uint64_t seq)
{
    uint64_t *ix = g->n_held ? sbt_map_get(&g->held_map, seq) : NULL;
    return ix ? &g->held[*ix] : NULL;
}

/* Calls the visitor; records the stop value. */
static int deliver(sched_graph *g, const struct sbt_op *op, struct sched_edge *in, uint32_t n,
                   uint64_t *val)
{
    g->st.n_edges += n;
    for (uint32_t i = 0; i < n; i++) {
        if (in[i].reason < SCHED_DEP__COUNT)
            g->st.edges[in[i].reason]++;
        in[i].flags &= ~EDGE_HELD;
    }
    *val = 0;
    if (!g->v.node || g->stop)
        return 0;
    struct sched_node node = {op, in, n, 0, NULL, 0};
    if (g->ra && op == g->x) {
        node.unordered = g->unord;
        node.n_unordered = g->n_unord;
    }
    int rc = g->v.node(g->v.ctx, &node);
    *val = node.val;
    if (rc < 0)
        return rc;
    if (rc > 0)
        g->stop = rc;
    return 0;
}

/* Resolves from_val of edges whose predecessor was held. Predecessors still held (only when
 * forced) make the edge BROKEN. */
static void resolve_vals(sched_graph *g, struct sched_edge *in, uint32_t n)
{
    if (!g->late.n && !g->n_held)
        return; /* nothing was ever held */
    for (uint32_t i = 0; i < n; i++) {
        if (!(in[i].flags & EDGE_HELD))
            continue;
        uint64_t *v = sbt_map_get(&g->late, in[i].from);
        if (v) {
            in[i].from_val = *v;
        } else {
            in[i].from_val = 0;
            in[i].flags |= SCHED_EDGE_BROKEN;
        }
    }
}

static void held_free(sched_graph *g, uint64_t seq)
{
    uint64_t *ix = sbt_map_get(&g->held_map, seq);
    if (!ix)
        return;
    uint32_t slot = (uint32_t)*ix;
    struct held *h = &g->held[slot];
    sched__free(h->acc);
    sched__free(h->payload);
    sched__free(h->in);
    sched__free(h->deps);
    memset(h, 0, sizeof *h);
    sbt_map_del(&g->held_map, seq);
    g->free_slots[g->n_free++] = slot; /* cap_free >= slots, grown at hold time */
    g->n_held--;
}

static int push_work(sched_graph *g, uint64_t seq)
{
    int st = sched__grow64((void **)&g->work, sizeof *g->work, &g->cap_work, g->n_work + 1);
    if (st)
        return st;
    g->work[g->n_work++] = seq;
    return 0;
}

/* Delivers held node seq and whatever becomes ready after it. */
static int release(sched_graph *g, uint64_t seq)
{
    int st = push_work(g, seq);
    while (!st && g->n_work) {
        uint64_t s = g->work[--g->n_work];
        struct held *h = held_get(g, s);
        if (!h)
            continue;
        resolve_vals(g, h->in, h->n_in);
        uint64_t val;
        if ((st = deliver(g, &h->op, h->in, h->n_in, &val)))
            return st;
        uint64_t *lv = sbt_map_put(&g->late, s, NULL);
        if (!lv)
            return sched__fail(SBT_ENOMEM, "out of memory recording held op %" PRIu64, s);
        *lv = val;
        h = held_get(g, s); /* the map may have moved nothing, but be safe */
        for (uint32_t i = 0; h && i < h->n_deps && !st; i++) {
            struct held *d = held_get(g, h->deps[i]);
            if (d && d->n_pending && --d->n_pending == 0 && !d->waiting)
                st = push_work(g, h->deps[i]);
        }
        held_free(g, s);
    }
    return st;
}

/* Holds the current op (deep copy) with its edges. */
static int hold(sched_graph *g, uint32_t n_pending)
{
    const struct sbt_op *x = g->x;
    int st;
    uint32_t slot;
    if (g->n_free) {
        slot = g->free_slots[--g->n_free];
    } else {
        if ((st = sched__grow((void **)&g->held, sizeof *g->held, &g->cap_held,
                              (uint64_t)g->n_heldslots + 1)) ||
            (st = sched__grow((void **)&g->free_slots, sizeof *g->free_slots, &g->cap_free,
                              (uint64_t)g->n_heldslots + 1)))
            return st;
        slot = g->n_heldslots++;
    }
    struct held *h = &g->held[slot];
    memset(h, 0, sizeof *h);
    h->seq = x->seq;
    h->op = *x;
    h->acc = x->n_access ? sched__malloc(x->n_access * sizeof *h->acc) : NULL;
    h->payload = x->payload.len ? sched__malloc(x->payload.len) : NULL;
    h->in = g->n_eb ? sched__malloc(g->n_eb * sizeof *h->in) : NULL;
    uint64_t *ix = sbt_map_put(&g->held_map, x->seq, NULL);
    if ((x->n_access && !h->acc) || (x->payload.len && !h->payload) || (g->n_eb && !h->in) || !ix) {
        sched__free(h->acc);
        sched__free(h->payload);
        sched__free(h->in);
        memset(h, 0, sizeof *h);
        if (ix)
            sbt_map_del(&g->held_map, x->seq);
        g->free_slots[g->n_free++] = slot;
        return sched__fail(SBT_ENOMEM, "out of memory holding op %" PRIu64, x->seq);
    }
    *ix = slot;
    if (x->n_access)
        memcpy(h->acc, x->access, x->n_access * sizeof *h->acc);
    if (x->payload.len)
        memcpy(h->payload, x->payload.data, x->payload.len);
    h->op.access = h->acc;
    h->op.payload.data = h->payload;
    if (g->n_eb)
        memcpy(h->in, g->eb, g->n_eb * sizeof *h->in);
    h->n_in = h->cap_in = g->n_eb;
    h->n_pending = n_pending;
    h->waiting = g->x_waiting;
    h->wobj = g->x_wobj;
    h->wval = g->x_wval;
    h->wkind = g->x_wkind;
    g->n_held++;
    if (g->n_held > g->st.max_held)
        g->st.max_held = g->n_held;
    /* register with held predecessors */
    for (uint32_t i = 0; i < g->n_eb; i++) {
        struct held *p = held_get(g, g->eb[i].from);
        if (!p)
            continue;
        if ((st = sched__grow((void **)&p->deps, sizeof *p->deps, &p->cap_deps,
                              (uint64_t)p->n_deps + 1)))
            return st;
        p->deps[p->n_deps++] = x->seq;
    }
    if (g->x_waiting) {
        struct syncobj *s = sync_get(g, g->x_wobj, g->x_wkind);
        if (!s || sched__grow((void **)&s->pw, sizeof *s->pw, &s->cap_pw, (uint64_t)s->n_pw + 1))
            return sched__fail(SBT_ENOMEM, "out of memory holding op %" PRIu64, x->seq);
        s->pw[s->n_pw++] = x->seq;
    }
    return 0;
}

/* Phase B of a SIGNAL x (already delivered or held): record it, then satisfy pending waits. */
static int signal_apply(sched_graph *g, const struct sref *xr)
{
    const struct sbt_op *x = g->x;
    struct syncobj *s = sync_get(g, x->obj, x->subkind);
    int st;
    if (!s)
        return sched__fail(SBT_ENOMEM, "out of memory tracking sync object %" PRIu64, x->obj);
    s->last = *xr;
    int consumed = 0; /* binary: this signal went to a pending wait */
    /* pending waits, oldest first */
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->n_pw; i++) {
        uint64_t ws = s->pw[i];
        struct held *w = held_get(g, ws);
        if (!w || !w->waiting)
            continue; /* forced out already */
        int ok;
        if (is_timeline(w->wkind))
            ok = x->value >= w->wval;
        else if (w->wkind == SBT_SYNC_BINARY_SEMAPHORE)
            ok = !consumed;
        else
            ok = 1;
        if (!ok) {
            s->pw[k++] = ws;
            continue;
        }
        consumed = 1;
        if ((st = sched__grow((void **)&w->in, sizeof *w->in, &w->cap_in, (uint64_t)w->n_in + 1)))
            return st;
        w->in[w->n_in++] = (struct sched_edge){
            .from = x->seq,
            .from_val = xr->val,
            .reason = SCHED_DEP_SIGNAL,
            .from_stream = xr->stream,
            .flags = (xr->held ? EDGE_HELD : 0) | (x->seq > ws ? SCHED_EDGE_LATE : 0),
            .sync_kind = w->wkind,
            .obj = x->obj,
            .lo = w->wval,
            .hi = x->value,
        };
        uint64_t *kn = known_at(g, w->op.stream <= g->n_streams ? w->op.stream : 0, xr->stream);
        if (kn && x->seq + 1 > *kn)
            *kn = x->seq + 1;
        w->waiting = 0;
        struct held *xh = xr->held ? held_get(g, x->seq) : NULL;
        if (xh) {
            w->n_pending++;
            if ((st = sched__grow((void **)&xh->deps, sizeof *xh->deps, &xh->cap_deps,
                                  (uint64_t)xh->n_deps + 1)))
                return st;
            xh->deps[xh->n_deps++] = ws;
        } else if (!w->n_pending && (st = push_work(g, ws))) {
            return st;
        }
    }
    s->n_pw = k;
    while (g->n_work)
        if ((st = release(g, g->work[--g->n_work])))
            return st;
    if (is_timeline(x->subkind)) {
        if (x->value > s->max_val)
            s->max_val = x->value;
        if (s->n_tl >= TL_MAX) { /* fold the older half into the floor */
            uint32_t h = s->n_tl / 2;
            s->floor_val = s->tl[h - 1].value;
            s->floor = s->tl[h - 1].ref;
            memmove(s->tl, s->tl + h, (s->n_tl - h) * sizeof *s->tl);
            s->n_tl -= h;
        }
        if ((st = sched__grow((void **)&s->tl, sizeof *s->tl, &s->cap_tl, (uint64_t)s->n_tl + 1)))
            return st;
        uint32_t i = s->n_tl;
        while (i > 0 && s->tl[i - 1].value > x->value)
            i--;
        if (i > 0 && s->tl[i - 1].value == x->value)
            return 0; /* the earlier signal of that value is the one waits depend on */
        memmove(&s->tl[i + 1], &s->tl[i], (s->n_tl - i) * sizeof *s->tl);
        s->tl[i] = (struct tsig){x->value, *xr};
        s->n_tl++;
    } else if (x->subkind == SBT_SYNC_BINARY_SEMAPHORE && !consumed) {
        if (s->qn == s->qcap) { /* grow the ring, unrolling it */
            uint32_t nc = s->qcap ? s->qcap * 2 : 4;
            struct sref *q = sched__malloc(nc * sizeof *q);
            if (!q)
                return sched__fail(SBT_ENOMEM, "out of memory queueing a semaphore signal");
            for (uint32_t i = 0; i < s->qn; i++)
                q[i] = s->q[(s->qh + i) % s->qcap];
            sched__free(s->q);
            s->q = q, s->qh = 0, s->qcap = nc;
        }
        s->q[(s->qh + s->qn++) % s->qcap] = *xr;
    }
    return 0;
}

/* ========================================================================================== */
/* Stuck nodes: cycles and waits nothing satisfies                                            */
/* ========================================================================================== */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Tarjan's SCC over held nodes, iterative. Marks in_cycle and reports each cycle. */
static int find_cycles(sched_graph *g, uint64_t *seqs, uint64_t n)
{
    uint64_t *stack = sched__malloc((n + 1) * sizeof *stack);
    struct frame {
        uint64_t seq;
        uint32_t edge;
    } *cs = sched__malloc((n + 1) * sizeof *cs);
    if (!stack || !cs) {
        sched__free(stack);
        sched__free(cs);
        return sched__fail(SBT_ENOMEM, "out of memory looking for cycles");
    }
    for (uint64_t i = 0; i < n; i++) {
        struct held *h = held_get(g, seqs[i]);
        h->index = -1;
        h->on_stack = h->in_cycle = 0;
    }
    int64_t index = 0;
    uint64_t sp = 0, csp = 0;
    char nb[160], nb2[160];
    for (uint64_t i = 0; i < n; i++) {
        if (held_get(g, seqs[i])->index >= 0)
            continue;
        cs[csp++] = (struct frame){seqs[i], 0};
        while (csp) {
            struct frame *f = &cs[csp - 1];
            struct held *h = held_get(g, f->seq);
            if (f->edge == 0 && h->index < 0) {
                h->index = h->low = index++;
                stack[sp++] = f->seq;
                h->on_stack = 1;
            }
            int pushed = 0;
            while (f->edge < h->n_in) {
                struct sched_edge *e = &h->in[f->edge++];
                struct held *p = held_get(g, e->from);
                if (!p)
                    continue;
                if (p->index < 0) {
                    cs[csp++] = (struct frame){e->from, 0};
                    pushed = 1;
                    break;
                }
                if (p->on_stack && p->index < h->low)
                    h->low = p->index;
            }
            if (pushed)
                continue;
            if (h->low == h->index) { /* root of an SCC: pop it */
                uint64_t cnt = 0, first = sp;
                do {
                    first--;
                    cnt++;
                } while (stack[first] != f->seq);
                int self = 0;
                for (uint32_t k = 0; k < h->n_in; k++)
                    self |= h->in[k].from == f->seq;
                if (cnt > 1 || self) {
                    /* describe: from the lowest seq, follow predecessors inside the SCC */
                    uint64_t lo = NONE;
                    for (uint64_t k = first; k < sp; k++) {
                        held_get(g, stack[k])->in_cycle = 2;
                        if (stack[k] < lo)
                            lo = stack[k];
                    }
                    char chain[512];
                    size_t len = 0;
                    uint64_t cur = lo;
                    for (int hop = 0; hop < 6; hop++) {
                        struct held *c = held_get(g, cur);
                        struct sched_edge *ne = NULL;
                        for (uint32_t k = 0; k < c->n_in && !ne; k++) {
                            struct held *p = held_get(g, c->in[k].from);
                            if (p && p->in_cycle == 2)
                                ne = &c->in[k];
                        }
                        if (!ne)
                            break;
                        struct held *p = held_get(g, ne->from);
                        int w = snprintf(
                            chain + len, sizeof chain - len,
                            "%sop %" PRIu64 " (%s) waits for op %" PRIu64 " (%s, %s)",
                            hop ? ", which " : "", cur, opname(g, &c->op, nb, sizeof nb), ne->from,
                            opname(g, &p->op, nb2, sizeof nb2), sched_dep_desc(ne->reason));
                        if (w < 0 || (size_t)w >= sizeof chain - len)
                            break;
                        len += (size_t)w;
                        cur = ne->from;
                        if (cur == lo)
                            break;
                    }
                    if (want(g, SCHED_F_CYCLE))
                        finding(g, SCHED_F_CYCLE, lo, NONE, "cycle of %" PRIu64 " ops: %s", cnt,
                                chain);
                }
                for (uint64_t k = first; k < sp; k++) {
                    struct held *m = held_get(g, stack[k]);
                    m->on_stack = 0;
                    m->in_cycle = cnt > 1 || self;
                }
                sp = first;
            }
            uint64_t done = f->seq;
            csp--;
            if (csp) {
                struct held *parent = held_get(g, cs[csp - 1].seq);
                struct held *child = held_get(g, done);
                if (child->low < parent->low)
                    parent->low = child->low;
            }
        }
    }
    sched__free(stack);
    sched__free(cs);
    return 0;
}

/* Reports what is stuck and delivers held ops, oldest first, with their stuck edges BROKEN,
 * until at most keep are held. */
static int resolve_stuck(sched_graph *g, uint64_t keep, int final)
{
    if (g->n_held <= keep)
        return 0;
    uint64_t n = 0, *seqs = sched__malloc(g->n_held * sizeof *seqs);
    if (!seqs)
        return sched__fail(SBT_ENOMEM, "out of memory resolving %" PRIu64 " held ops", g->n_held);
    for (uint64_t i = 0; i < g->held_map.cap; i++)
        if (g->held_map.keys[i])
            seqs[n++] = g->held_map.keys[i] - 1;
    qsort(seqs, n, sizeof *seqs, cmp_u64);
    int st = find_cycles(g, seqs, n);
    char nb[160];
    uint64_t blocked = 0, first_blocked = NONE;
    for (uint64_t i = 0; i < n && !st; i++) {
        struct held *h = held_get(g, seqs[i]);
        if (h->waiting) {
            struct syncobj *s = sync_get(g, h->wobj, h->wkind);
            char why[160];
            if (is_timeline(h->wkind) && s && s->n_tl)
                snprintf(why, sizeof why,
                         "the highest value signalled is %" PRIu64 " (op %" PRIu64 ")", s->max_val,
                         s->tl[s->n_tl - 1].ref.seq);
            else if (s && s->last.seq != NONE)
                snprintf(why, sizeof why,
                         "its signals were all consumed by earlier waits (last: op %" PRIu64 ")",
                         s->last.seq);
            else
                snprintf(why, sizeof why, "no op signals it");
            char what[96];
            if (is_timeline(h->wkind))
                snprintf(what, sizeof what, "%s %" PRIu64 " to reach %" PRIu64,
                         sync_kind_name(h->wkind), h->wobj, h->wval);
            else
                snprintf(what, sizeof what, "%s %" PRIu64, sync_kind_name(h->wkind), h->wobj);
            if (!want(g, SCHED_F_UNSATISFIED_WAIT))
                ;
            else if (final)
                finding(g, SCHED_F_UNSATISFIED_WAIT, h->seq, NONE,
                        "op %" PRIu64 " (%s) waits for %s, which nothing satisfies: %s", h->seq,
                        opname(g, &h->op, nb, sizeof nb), what, why);
            else
                finding(g, SCHED_F_UNSATISFIED_WAIT, h->seq, NONE,
                        "op %" PRIu64 " (%s) waits for %s, not signalled within the next %" PRIu64
                        " ops; giving up on it (%s)",
                        h->seq, opname(g, &h->op, nb, sizeof nb), what, g->n_held, why);
        } else if (!h->in_cycle) {
            if (!blocked++)
                first_blocked = h->seq;
        }
    }
    if (blocked && final && !st) {
        struct held *h = held_get(g, first_blocked);
        if (want(g, SCHED_F_BLOCKED))
            finding(g, SCHED_F_BLOCKED, first_blocked, NONE,
                    "%" PRIu64
                    " ops never run because they depend on the ops above; the first is op %" PRIu64
                    " (%s) on stream %u",
                    blocked, first_blocked, opname(g, &h->op, nb, sizeof nb), h->op.stream);
    }
    for (uint64_t i = 0; i < n && !st && g->n_held > keep; i++) {
        struct held *h = held_get(g, seqs[i]);
        if (!h)
            continue; /* released by an earlier cascade */
        for (uint32_t k = 0; k < h->n_in; k++)
            if (held_get(g, h->in[k].from))
                h->in[k].flags |= SCHED_EDGE_BROKEN;
        h->waiting = 0;
        h->n_pending = 0;
        st = release(g, seqs[i]);
    }
    sched__free(seqs);
    return st;
}

/* ========================================================================================== */
/* The pass                                                                                   */
/* ========================================================================================== */

/* SCHED_ORDER_DECLARED: a race finding of the current op: its first op is unordered with it. */
static void unord_add(void *ctx, const struct sched_race *f)
{
    sched_graph *g = ctx;
    if (unord_has(g, f->first))
        return;
    if (sched__grow((void **)&g->unord, sizeof *g->unord, &g->cap_unord,
                    (uint64_t)g->n_unord + 1)) {
        g->unord_oom = 1;
        return;
    }
    g->unord[g->n_unord++] = f->first;
}

int sched_graph_create(sbt_reader *r, const struct sched_graph_opts *opts,
                       const struct sched_visitor *v, sched_graph **out)
{
    *out = NULL;
    sched_graph *g = sched__calloc(1, sizeof *g);
    if (!g)
        return sched__fail(SBT_ENOMEM, "out of memory creating the graph");
    g->r = r;
    if (opts) {
        size_t n = opts->sz < sizeof g->o ? opts->sz : sizeof g->o;
        memcpy(&g->o, opts, n);
    }
    if (!g->o.max_held_ops)
        g->o.max_held_ops = 1000000;
    if (!g->o.max_findings_per_kind)
        g->o.max_findings_per_kind = 100;
    if (!g->o.max_events)
        g->o.max_events = 1u << 18;
    g->ev_max = g->o.max_events;
    if (v)
        g->v = *v;
    uint32_t ns = 0, nd = 0;
    const struct sbt_stream *st = sbt_reader_streams(r, &ns);
    sbt_reader_devices(r, &nd);
    g->n_streams = ns;
    g->n_devices = nd;
    g->streams = sched__calloc((size_t)ns + 1, sizeof *g->streams);
    g->dev_streams = sched__calloc((size_t)nd + 1, sizeof *g->dev_streams);
    if (!g->streams || !g->dev_streams)
        goto oom;
    for (uint32_t i = 0; i <= ns; i++) {
        g->streams[i].last = NOREF;
        g->streams[i].prev = NOREF;
        g->streams[i].destroyed_by = NONE;
        if (i) {
            g->streams[i].device = st[i - 1].device;
            g->streams[i].kind = st[i - 1].kind;
        }
    }
    for (uint32_t d = 1; d <= nd; d++) {
        uint32_t c = 0;
        for (uint32_t i = 1; i <= ns; i++)
            c += g->streams[i].device == d && g->streams[i].kind != SBT_STREAM_HOST_THREAD;
        if (!(g->dev_streams[d] = sched__calloc((size_t)c + 1, sizeof **g->dev_streams)))
            goto oom;
        c = 0;
        for (uint32_t i = 1; i <= ns; i++)
            if (g->streams[i].device == d && g->streams[i].kind != SBT_STREAM_HOST_THREAD)
                g->dev_streams[d][c++] = i;
    }
    if ((uint64_t)ns + 1 <= KNOWN_MAX &&
        !(g->known = sched__calloc((size_t)(ns + 1) * (ns + 1), sizeof *g->known)))
        goto oom;
    int ist = init_load(g, r);
    if (ist < 0) {
        sched_graph_destroy(g);
        return ist;
    }
    if (g->o.order == SCHED_ORDER_DECLARED) {
        if ((ist = sched__race_create(r, unord_add, g, &g->ra)) < 0) {
            sched_graph_destroy(g);
            return ist;
        }
        const struct sched_race_stats *rs = sched__race_stats(g->ra);
        if (!rs->declared) {
            ist = sched__fail(SBT_EVERSION,
                              "declared order: the trace records none (%s); use the order of "
                              "the accesses",
                              rs->why_not ? rs->why_not : "?");
            sched_graph_destroy(g);
            return ist;
        }
    } else if (g->o.order != SCHED_ORDER_ACCESSES) {
        sched_graph_destroy(g);
        return sched__fail(SBT_EINVAL, "unknown graph order %u", g->o.order);
    }
    *out = g;
    return 0;
oom:
    sched_graph_destroy(g);
    return sched__fail(SBT_ENOMEM, "out of memory creating the graph (%u streams)", ns);
}

int sched_graph_add(sched_graph *g, const struct sbt_op *x)
{
    if (g->stop)
        return g->stop;
    if (g->finished)
        return sched__fail(SBT_EINVAL, "sched_graph_add after sched_graph_finish");
    int st;
    char nb[160];
    g->st.n_ops++;
    g->x = x;
    if (g->i_init < g->n_init && (st = init_give(g, x->seq)))
        return st;
    g->n_eb = 0;
    g->x_waiting = 0;
    if (g->ra) {
        g->n_unord = 0;
        if ((st = sched__race_add(g->ra, x)) < 0)
            return st;
        if (g->unord_oom)
            return sched__fail(SBT_ENOMEM, "out of memory for op %" PRIu64 "'s unordered ops",
                               x->seq);
    }
    uint32_t xs = x->stream >= 1 && x->stream <= g->n_streams ? x->stream : 0;
    g->xs = xs;
    struct strm *sx = &g->streams[xs];

    /* ---- phase A: validation and edges ---- */
    if ((x->flags & SBT_OPF_UNSUPPORTED) && want(g, SCHED_F_UNSUPPORTED))
        finding(g, SCHED_F_UNSUPPORTED, x->seq, NONE,
                "op %" PRIu64 " (%s) is marked unsupported: the capture could not record it "
                "fully, so it cannot be replayed",
                x->seq, opname(g, x, nb, sizeof nb));
    if (!xs) {
        if (want(g, SCHED_F_UNKNOWN_STREAM))
            finding(g, SCHED_F_UNKNOWN_STREAM, x->seq, NONE,
                    "op %" PRIu64 " (%s) runs on stream %u, which the stream table does not have",
                    x->seq, opname(g, x, nb, sizeof nb), x->stream);
    } else if (sx->destroyed_by != NONE && want(g, SCHED_F_DESTROYED_STREAM)) {
        finding(g, SCHED_F_DESTROYED_STREAM, x->seq, sx->destroyed_by,
                "op %" PRIu64 " (%s) runs on stream %u, destroyed by op %" PRIu64, x->seq,
                opname(g, x, nb, sizeof nb), x->stream, sx->destroyed_by);
    }

    /* Declared order: a Vulkan queue runs its commands in any order the program's barriers
     * allow, so the op just before this one on the queue, when the program leaves the two
     * unordered (their accesses conflict and nothing it declared orders them), is not a
     * predecessor: this one follows the op before it instead (and so everything earlier) */
    struct sref *pred = &sx->last;
    int skipped = 0;
    if (g->ra && sx->kind == SBT_STREAM_QUEUE) {
        if (sx->last.seq != NONE && sx->n_dangling < 4 && unord_has(g, sx->last.seq)) {
            pred = &sx->prev;
            skipped = 1;
            g->st.n_undeclared++;
        }
        /* what earlier ops did not follow joins here unless this one is unordered with it */
        uint32_t keep = 0;
        for (uint32_t i = 0; i < sx->n_dangling; i++) {
            if (unord_has(g, sx->dangling[i].seq)) {
                sx->dangling[keep++] = sx->dangling[i];
            } else if ((st = add_edge(g, &sx->dangling[i], SCHED_DEP_STREAM, x->stream, 0, 0, 0))) {
                return st;
            }
        }
        sx->n_dangling = keep;
    }
    if ((st = add_edge(g, pred, SCHED_DEP_STREAM, x->stream, 0, 0, 0)))
        return st;
    if (skipped) /* the op this one did not follow: a later one must */
        sx->dangling[sx->n_dangling++] = sx->last;
    if (sx->kind != SBT_STREAM_HOST_THREAD && x->thread && x->thread < g->n_threads &&
        (st = add_edge(g, &g->threads[x->thread], SCHED_DEP_HOST, x->thread, 0, 0, 0)))
        return st;

    switch (x->kind) {
    case SBT_OP_EVENT_WAIT: {
        uint64_t *ix = sbt_map_get(&g->ev_map, x->obj);
        if (ix)
            st = add_edge(g, &g->ev[*ix], SCHED_DEP_EVENT, x->obj, 0, 0, 0);
        else if (!g->ev_cutoff && want(g, SCHED_F_EVENT_UNRECORDED))
            finding(g, SCHED_F_EVENT_UNRECORDED, x->seq, NONE,
                    "op %" PRIu64 " (%s) waits for event %" PRIu64
                    ", which no op recorded before it (the wait does nothing)",
                    x->seq, opname(g, x, nb, sizeof nb), x->obj);
        break;
    }
    case SBT_OP_WAIT:
        st = wait_edges(g);
        break;
    case SBT_OP_STREAM_SYNC:
        if (x->obj >= 1 && x->obj <= g->n_streams)
            st = add_edge(g, &g->streams[x->obj].last, SCHED_DEP_STREAM_SYNC, x->obj, 0, 0, 0);
        break;
    case SBT_OP_DEVICE_SYNC:
        if (x->obj >= 1 && x->obj <= g->n_devices)
            for (uint32_t *p = g->dev_streams[x->obj]; *p && !st; p++)
                st = add_edge(g, &g->streams[*p].last, SCHED_DEP_DEVICE_SYNC, x->obj, 0, 0, 0);
        break;
    case SBT_OP_FREE: {
        struct res_hist *r = res_get(g, x->resource, 0);
        if (!r) {
            if (want(g, SCHED_F_DOUBLE_FREE))
                finding(g, SCHED_F_DOUBLE_FREE, x->seq, NONE,
                        "op %" PRIu64 " (%s) frees resource %" PRIu64
                        ", which no op allocated or used",
                        x->seq, opname(g, x, nb, sizeof nb), x->resource);
        } else if (r->freed_by != NONE) {
            if (want(g, SCHED_F_DOUBLE_FREE))
                finding(g, SCHED_F_DOUBLE_FREE, x->seq, r->freed_by,
                        "op %" PRIu64 " (%s) frees resource %" PRIu64 " again (freed by op %" PRIu64
                        ")",
                        x->seq, opname(g, x, nb, sizeof nb), x->resource, r->freed_by);
        } else {
            for (uint32_t i = 0; i < r->n && !st; i++) {
                struct seg *s = &r->s[i];
                st = add_edge(g, &s->w, SCHED_DEP_FREE, r->id, s->b, s->e, 0);
                for (uint32_t k = 0; k < s->n_rd && !st; k++)
                    st = add_edge(g, rd_at(s, k), SCHED_DEP_FREE, r->id, s->b, s->e, 0);
            }
            if (!st && !r->n)
                st = add_edge(g, &r->alloc, SCHED_DEP_FREE, r->id, 0, 0, 0);
        }
        break;
    }
    default:
        break;
    }
    if (st || (x->n_access && (st = accesses_edges(g))))
        return st;

    /* ---- phase B: deliver or hold, then update live state ---- */
    uint32_t n_pending = 0;
    if (g->n_held)
        for (uint32_t i = 0; i < g->n_eb; i++)
            n_pending += held_get(g, g->eb[i].from) != NULL;
    struct sref xr = {x->seq, 0, xs, 0};
    if (n_pending || g->x_waiting) {
        if ((st = hold(g, n_pending)))
            return st;
        xr.held = 1;
    } else {
        resolve_vals(g, g->eb, g->n_eb);
        if ((st = deliver(g, x, g->eb, g->n_eb, &xr.val)))
            return st;
    }
    if (!g->o.keep_implied && g->known)
        for (uint32_t i = 0; i < g->n_eb; i++) {
            uint64_t *k = known_at(g, xs, g->eb[i].from_stream);
            if (g->eb[i].from + 1 > *k)
                *k = g->eb[i].from + 1;
        }

    sx->prev = sx->last;
    sx->last = xr;
    if (sx->kind == SBT_STREAM_HOST_THREAD && x->thread && x->thread < THREADS_MAX) {
        if (x->thread >= g->n_threads) {
            if ((st = sched__grow((void **)&g->threads, sizeof *g->threads, &g->cap_threads,
                                  (uint64_t)x->thread + 1)))
                return st;
            for (uint32_t i = g->n_threads; i <= x->thread; i++)
                g->threads[i] = NOREF;
            g->n_threads = x->thread + 1;
        }
        g->threads[x->thread] = xr;
    }
    if (x->n_access && (st = accesses_apply(g, &xr)))
        return st;
    switch (x->kind) {
    case SBT_OP_ALLOC: {
        sbt_map_del(&g->freed, x->resource);
        struct res_hist *r = res_get(g, x->resource, 1);
        if (!r)
            return sched__fail(SBT_ENOMEM, "out of memory tracking resource %" PRIu64, x->resource);
        res_drop_segs(g, r);
        r->reported_unalloc = 0;
        r->size = x->flags & SBT_OPF_BYTES ? x->bytes : UINT64_MAX;
        r->alloc = xr;
        r->freed_by = NONE;
        break;
    }
    case SBT_OP_FREE: {
        uint64_t *ix = sbt_map_get(&g->res_map, x->resource);
        if (ix) { /* forget it, keeping only the id and the FREE for later uses */
            uint32_t slot = (uint32_t)*ix;
            res_drop_segs(g, &g->res[slot]);
            sbt_map_del(&g->res_map, x->resource);
            if ((st = sched__grow((void **)&g->res_free, sizeof *g->res_free, &g->cap_res_free,
                                  (uint64_t)g->n_res_free + 1)))
                return st;
            g->res_free[g->n_res_free++] = slot;
            if (g->freed.n >= FREED_MAX)
                sbt_map_clear(&g->freed);
            uint64_t *fs = sbt_map_put(&g->freed, x->resource, NULL);
            if (!fs)
                return sched__fail(SBT_ENOMEM, "out of memory recording a free");
            *fs = x->seq;
        }
        break;
    }
    case SBT_OP_EVENT_RECORD: {
        int is_new;
        uint64_t *ix = sbt_map_get(&g->ev_map, x->obj);
        if (!ix && g->ev_map.n >= g->ev_max) {
            if ((st = ev_evict(g, x->seq)))
                return st;
        }
        if (!ix) {
            if ((st = sched__grow((void **)&g->ev, sizeof *g->ev, &g->cap_ev,
                                  (uint64_t)g->n_ev + 1)))
                return st;
            if (!(ix = sbt_map_put(&g->ev_map, x->obj, &is_new)))
                return sched__fail(SBT_ENOMEM, "out of memory tracking event %" PRIu64, x->obj);
            *ix = g->n_ev++;
        }
        g->ev[*ix] = xr;
        break;
    }
    case SBT_OP_SIGNAL:
        if ((st = signal_apply(g, &xr)))
            return st;
        break;
    case SBT_OP_STREAM_CREATE:
        if (x->obj >= 1 && x->obj <= g->n_streams)
            g->streams[x->obj].destroyed_by = NONE;
        break;
    case SBT_OP_STREAM_DESTROY:
        if (x->obj >= 1 && x->obj <= g->n_streams)
            g->streams[x->obj].destroyed_by = x->seq;
        break;
    default:
        break;
    }
    if (g->n_held > g->o.max_held_ops && (st = resolve_stuck(g, g->o.max_held_ops / 2, 0)))
        return st;
    return g->stop;
}

int sched_graph_finish(sched_graph *g)
{
    if (g->finished)
        return sched__fail(SBT_EINVAL, "sched_graph_finish called twice");
    g->finished = 1;
    int st = resolve_stuck(g, 0, 1);
    return st ? st : g->stop;
}

const struct sched_graph_stats *sched_graph_stats(const sched_graph *g)
{
    return &g->st;
}

void sched_graph_destroy(sched_graph *g)
{
    if (!g)
        return;
    sched__race_destroy(g->ra);
    sched__free(g->unord);
    for (uint32_t i = 0; i < g->n_res; i++)
        res_drop_segs(g, &g->res[i]);
    for (uint32_t i = 0; i < g->n_sync; i++) {
        sched__free(g->sync[i].q);
        sched__free(g->sync[i].tl);
        sched__free(g->sync[i].pw);
    }
    for (uint32_t i = 0; i < g->n_heldslots; i++) {
        sched__free(g->held[i].acc);
        sched__free(g->held[i].payload);
        sched__free(g->held[i].in);
        sched__free(g->held[i].deps);
    }
    if (g->dev_streams)
        for (uint32_t d = 0; d <= g->n_devices; d++)
            sched__free(g->dev_streams[d]);
    sched__free(g->dev_streams);
    sched__free(g->streams);
    for (uint32_t i = 0; i < g->n_init_set; i++)
        sbt_iset_free(&g->init_set[i]);
    sched__free(g->init_set);
    sched__free(g->init);
    sbt_map_free(&g->init_map);
    sched__free(g->known);
    sched__free(g->threads);
    sched__free(g->res);
    sched__free(g->ev);
    sched__free(g->sync);
    sched__free(g->held);
    sched__free(g->free_slots);
    sched__free(g->work);
    sched__free(g->eb);
    sched__free(g->acc_res);
    sbt_map_free(&g->res_map);
    sbt_map_free(&g->freed);
    sched__free(g->res_free);
    sbt_map_free(&g->ev_map);
    sbt_map_free(&g->sync_map);
    sbt_map_free(&g->held_map);
    sbt_map_free(&g->late);
    sched__free(g);
}

int sched_graph_run(sbt_reader *r, uint64_t seq_end, const struct sched_graph_opts *opts,
                    const struct sched_visitor *v, struct sched_graph_stats *stats)
{
    sched_graph *g = NULL;
    sbt_cursor *c = NULL;
    struct sbt_range range = {0};
    if (seq_end != SCHED_NONE) {
        range.has_seq = 1;
        range.seq_begin = 0;
        range.seq_end = seq_end;
    }
    int st = sched_graph_create(r, opts, v, &g);
    if (st)
        return st;
    if ((st = sbt_cursor_open(r, seq_end != SCHED_NONE ? &range : NULL, &c)) < 0) {
        st = sched__fail_sbt(st);
        goto out;
    }
    const struct sbt_op *op;
    int rc;
    while ((rc = sbt_cursor_next(c, &op)) > 0)
        if ((st = sched_graph_add(g, op)))
            goto out;
    if (rc < 0) {
        st = sched__fail_sbt(rc);
        goto out;
    }
    st = sched_graph_finish(g);
out:
    if (stats && g)
        *stats = g->st;
    sbt_cursor_close(c);
    sched_graph_destroy(g);
    return st;
}

/* ========================================================================================== */
/* Why                                                                                        */
/* ========================================================================================== */

struct why_ctx {
    uint64_t seq;
    int found;
    struct sched_edge *e;
    uint32_t n;
};

static int why_node(void *ctx, struct sched_node *n)
{
    struct why_ctx *w = ctx;
    if (n->op->seq != w->seq)
        return 0;
    w->found = 1;
    if (n->n_in) {
        if (!(w->e = sched__malloc(n->n_in * sizeof *w->e)))
            return sched__fail(SBT_ENOMEM, "out of memory copying %u edges", n->n_in);
        memcpy(w->e, n->in, n->n_in * sizeof *w->e);
    }
    w->n = n->n_in;
    return 1;
}

int sched_why(sbt_reader *r, uint64_t seq, struct sched_edge **edges, uint32_t *n)
{
    *edges = NULL;
    *n = 0;
    struct why_ctx w = {.seq = seq};
    struct sched_visitor v = {.node = why_node, .ctx = &w};
    /* a held op may need later ops (its signal) to be delivered: run to the end if needed */
    int st = sched_graph_run(r, seq == NONE ? NONE : seq + 1, NULL, &v, NULL);
    if (st >= 0 && !w.found)
        st = sched_graph_run(r, NONE, NULL, &v, NULL);
    if (st < 0) {
        sched__free(w.e);
        return st;
    }
    if (!w.found)
        return sched__fail(SBT_ENOTFOUND, "the trace has no op %" PRIu64, seq);
    *edges = w.e;
    *n = w.n;
    return 0;
}

struct path_ctx {
    uint64_t from, to;
    struct sbt_map ix; /* seq -> first edge index + 1 */
    struct sched_edge *e;
    uint64_t *owner; /* per edge: the node it goes into */
    uint64_t n, cap, cap_owner;
    int seen_to;
};

static int path_node(void *ctx, struct sched_node *n)
{
    struct path_ctx *p = ctx;
    uint64_t s = n->op->seq;
    if (s < p->from || s > p->to)
        return 0;
    int st;
    uint64_t *slot = sbt_map_put(&p->ix, s, NULL);
    if (!slot)
        return sched__fail_sbt(SBT_ENOMEM);
    *slot = p->n + 1;
    for (uint32_t i = 0; i < n->n_in; i++) {
        if (n->in[i].from < p->from || (n->in[i].flags & SCHED_EDGE_BROKEN))
            continue;
        if ((st = sched__grow64((void **)&p->e, sizeof *p->e, &p->cap, p->n + 1)) ||
            (st = sched__grow64((void **)&p->owner, sizeof *p->owner, &p->cap_owner, p->n + 1)))
            return st;
        p->e[p->n] = n->in[i];
        p->owner[p->n++] = s;
    }
    if (s == p->to) {
        p->seen_to = 1;
        return 1; /* everything it depends on has been delivered */
    }
    return 0;
}

int sched_why_path(sbt_reader *r, uint64_t to, uint64_t from, struct sched_edge **edges,
                   uint64_t **nodes, uint32_t *n)
{
    *edges = NULL;
    *nodes = NULL;
    *n = 0;
    if (from >= to)
        return sched__fail(SBT_EINVAL, "--why: op %" PRIu64 " is not before op %" PRIu64, from, to);
    struct path_ctx p = {.from = from, .to = to};
    struct sched_visitor v = {.node = path_node, .ctx = &p};
    int st = sched_graph_run(r, NONE, NULL, &v, NULL);
    struct sbt_map prev = {0}; /* seq -> edge index + 1 by which BFS reached it */
    uint64_t *queue = NULL;
    if (st < 0)
        goto out;
    st = 0;
    if (!p.seen_to) {
        st = sched__fail(SBT_ENOTFOUND, "the trace has no op %" PRIu64, to);
        goto out;
    }
    /* edges are grouped by owner in delivery order; BFS backwards from `to` */
    queue = sched__malloc((p.n + 2) * sizeof *queue);
    if (!queue) {
        st = sched__fail(SBT_ENOMEM, "out of memory searching a path");
        goto out;
    }
    uint64_t qh = 0, qt = 0;
    queue[qt++] = to;
    if (!sbt_map_put(&prev, to, NULL)) {
        st = sched__fail_sbt(SBT_ENOMEM);
        goto out;
    }
    int reached = 0;
    while (qh < qt && !reached) {
        uint64_t s = queue[qh++];
        uint64_t *first = sbt_map_get(&p.ix, s);
        if (!first)
            continue;
        for (uint64_t i = *first - 1; i < p.n && p.owner[i] == s; i++) {
            uint64_t f = p.e[i].from;
            int is_new;
            uint64_t *pv = sbt_map_put(&prev, f, &is_new);
            if (!pv) {
                st = sched__fail_sbt(SBT_ENOMEM);
                goto out;
            }
            if (!is_new)
                continue;
            *pv = i + 1;
            if (f == from) {
                reached = 1;
                break;
            }
            if (qt < p.n + 2)
                queue[qt++] = f;
        }
    }
    if (reached) {
        uint32_t len = 0;
        for (uint64_t s = from; s != to; len++)
            s = p.owner[*sbt_map_get(&prev, s) - 1];
        *edges = sched__malloc(len * sizeof **edges);
        *nodes = sched__malloc((len + 1) * sizeof **nodes);
        if (!*edges || !*nodes) {
            sched__free(*edges);
            sched__free(*nodes);
            *edges = NULL, *nodes = NULL;
            st = sched__fail(SBT_ENOMEM, "out of memory returning a path");
            goto out;
        }
        uint64_t s = from;
        for (uint32_t i = 0; i < len; i++) {
            uint64_t ei = *sbt_map_get(&prev, s) - 1;
            (*nodes)[i] = s;
            (*edges)[i] = p.e[ei];
            s = p.owner[ei];
        }
        (*nodes)[len] = to;
        *n = len;
    }
out:
    sched__free(queue);
    sbt_map_free(&prev);
    sbt_map_free(&p.ix);
    sched__free(p.e);
    sched__free(p.owner);
    return st;
}
