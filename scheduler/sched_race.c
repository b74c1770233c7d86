/*
 * scheduler/sched_race.c — races the program's own synchronisation allows: pairs of ops whose
 * recorded accesses conflict (overlapping bytes, one of them a write) that nothing the program
 * declared orders. One streaming pass in seq order, with vector clocks over "actors".
 *
 * Actors. An actor is a sequence of ops whose positions only grow: each class of work on a
 * Vulkan queue (compute: dispatches; transfer: copies, fills, updates, clears, blits), each
 * CUDA stream (in order: one class), and the host (every host thread's host-side ops, in seq
 * order: the capture saw them happen in that order, and the program's own host-side locks are
 * not in the trace). An op at position p of actor a happens before an op Y if p < ev[a], where
 * ev is the execution clock of Y's stream and class; its writes are visible to Y if p < mv[a]
 * (the memory clock). Per stream and class three clocks are kept: execution (ev), available
 * writes chained to that class (av), and writes made visible to it (mv).
 *
 * What moves the clocks (the declared order):
 *   - Vulkan pipeline barriers, from the command-buffer recordings the SUBMIT ops reference
 *     (CMD_BARRIER records, sbt_vk.h): each memory, buffer or image barrier orders the earlier
 *     work of its source stages on the queue (and what is already chained to them) before the
 *     later work of its destination stages; its access masks make the writes of the source
 *     classes available, and visible to the destination classes whose accesses it names.
 *     Buffer and image barriers are taken as global ones (their ranges are not narrowed: a
 *     barrier on another buffer hides a race, never invents one).
 *   - vkCmdSetEvent / vkCmdWaitEvents (records of the recording, at the EVENT_RECORD and
 *     EVENT_WAIT ops), vkSetEvent on the host.
 *   - Semaphores (binary: FIFO of signals; timeline: by value) and fences between queues and
 *     the host; vkQueueWaitIdle, vkDeviceWaitIdle. A signal makes all earlier work of its queue
 *     available; a wait makes it visible to the wait's stages.
 *   - Submission: host work before a vkQueueSubmit happens before the submitted work (the host
 *     write ordering guarantee); the same for every CUDA call.
 *   - CUDA: stream order, events recorded and waited (cuStreamWaitEvent, cuEventSynchronize),
 *     stream and context synchronisation, synchronous copies (the host waits), and the legacy
 *     default stream's implicit synchronisation with the blocking streams of its device.
 *   - A host wait on a fence is taken to make the device's writes visible to the host (strictly
 *     a barrier to the host stage is needed; programs on coherent memory omit it everywhere).
 *   HOST_READ ops are not analysed: they are the capture's read-back of results, written when
 *   it knows the writing work done, not program accesses at a point of their own. HOST_WRITE
 *   ops (mapped memory the capture found written by the next submission) are.
 *
 * Accesses. Per resource a sorted array of byte intervals, each with the accesses that no
 * later write has been ordered after: at most one write and one read per actor (positions only
 * grow, so the latest stands for the earlier ones), ENT_MAX in all. A write drops the accesses
 * it is ordered after. Memory: the live intervals, the clocks ((streams + 1) x classes entries
 * each, per stream and per pending signal or event), and the recordings of one submission.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sbt_cuda.h"
#include "format/sbt_payload.h"
#include "format/sbt_vk.h"
#include "scheduler/sched_int.h"

#define NCLS        2    /* classes of work on a Vulkan queue */
#define CLS_COMPUTE 0    /* dispatches */
#define CLS_XFER    1    /* copies, fills, updates, clears, blits */
#define ALLCLS      3u   /* class set: both */
#define ENT_MAX     8    /* accesses kept per byte interval */
#define TL_KEEP     64   /* timeline signals kept per semaphore before folding */
#define EV_KEEP     4096 /* events kept before the oldest are folded */
#define PEND_MAX    256  /* findings of one op merged before they are passed on */
#define MAX_ACTORS  4096 /* (streams + 1) x classes: the analysis refuses more */

/* Vulkan stage and access bits (VkPipelineStageFlags2 / VkAccessFlags2 values). */
#define ST_TOP       0x1ull
#define ST_INDIRECT  0x2ull
#define ST_COMPUTE   0x800ull
#define ST_TRANSFER  0x1000ull
#define ST_BOTTOM    0x2000ull
#define ST_ALL       0x10000ull
#define ST_XFER2     0xf00000000ull /* COPY, RESOLVE, BLIT, CLEAR */
#define AC_MEM_READ  0x8000ull
#define AC_MEM_WRITE 0x10000ull
#define AC_C_WRITE   (0x40ull | 0x400000000ull | AC_MEM_WRITE)
#define AC_X_WRITE   (0x1000ull | AC_MEM_WRITE)
#define AC_C_ANY     (0x1ull | 0x8ull | 0x20ull | 0x40ull | 0x300000000ull | 0x400000000ull)
#define AC_X_ANY     (0x800ull | 0x1000ull)
#define AC_WRITES    (AC_C_WRITE | AC_X_WRITE | 0x4000ull)

enum skind { SK_NONE = 0, SK_QUEUE, SK_INORDER, SK_HOST };

struct ent {
    uint64_t seq, pos;
    uint32_t actor, stream;
    uint32_t kind, kernel; /* op kind, kernel id: for messages */
    uint16_t w;
    uint16_t addr; /* 1: a kernel's may-access through device addresses; 2: a host write
                    * recorded as whole pages (a may-write) */
};

struct seg {
    uint64_t b, e;
    uint32_t n;
    struct ent ent[ENT_MAX];
};

struct rhist {
    struct seg *s;
    uint32_t n, cap;
};

/* One sync item of a recording: a barrier, an event set or wait, an execute. */
struct sub {
    uint64_t s_st, s_ac, d_st, d_ac;
    uint32_t kind;      /* SUB_GLOBAL, SUB_BUFFER, SUB_IMAGE */
    uint64_t obj;       /* buffer or image id */
    uint64_t off, size; /* buffer barriers: the range in the buffer (size may be VK_WHOLE_SIZE) */
};
enum { SUB_GLOBAL = 0, SUB_BUFFER = 1, SUB_IMAGE = 2 };

/* The memory dependency of a buffer or image barrier: the writes of its queue made available
 * and visible, for its bytes only (execution is ordered whatever the range). */
#define GRANT_MAX 256 /* kept per queue; older ones are taken as global (may hide a race) */
struct grant {
    uint64_t res, lo, hi;
    uint64_t pos[NCLS]; /* writes of the queue's class c at positions < pos[c] */
    uint32_t dst;       /* classes they are made visible to */
};
struct bbind { /* a buffer's memory (BIND_BUFFER) */
    uint64_t mem, off, size;
};
struct item {
    uint32_t index; /* record number in the recording */
    uint32_t call;
    uint64_t event;   /* CMD_SET_EVENT: the event; CMD_WAIT_EVENTS: first of events */
    uint64_t *events; /* CMD_WAIT_EVENTS: all of them */
    uint32_t n_events;
    struct sub *sub; /* barrier layout */
    uint32_t n_sub;
    uint64_t set_stage; /* CMD_SET_EVENT */
};
struct rec {
    sbt_hash hash;
    struct item *it;
    uint32_t n_it;
    int opaque; /* executes secondaries (their barriers are not recorded) or unreadable */
};

/* The script of a submission: what its ops are, in order. */
enum { SC_WAIT = 1, SC_CB, SC_SIGNAL };
struct script {
    uint32_t what;
    uint64_t cb;   /* SC_CB: command buffer id */
    int32_t rec;   /* SC_CB: index into the submission's recordings, -1 none */
    uint32_t next; /* SC_CB: next item of the recording to apply */
};

struct rstream {
    uint32_t kind, device, cuda_origin, cuda_flags;
    uint64_t pos[NCLS];
    uint64_t *ev[NCLS], *av[NCLS], *mv[NCLS];
    /* queue: the submission being consumed */
    struct script *sc;
    uint32_t n_sc, cap_sc, i_sc;
    struct rec *recs;
    uint32_t n_recs, cap_recs;
    struct grant *grants; /* ring of GRANT_MAX */
    uint32_t n_grants, i_grant;
    int blind; /* the current submission's barriers are unknown: ops are taken as ordered */
};

struct snap {
    uint64_t key, value, seq;
    uint64_t *e, *a;
};

struct sync_o {
    uint64_t id;
    uint32_t kind;
    uint32_t fam;      /* FAM_*; FAM_FREE: a free slot */
    uint64_t last_seq; /* of its latest signal (events: which to forget first) */
    struct snap *q;    /* binary: FIFO; timeline: by value; fence/event: [0] = latest */
    uint32_t n, cap;
    uint64_t *floor; /* folded signals: their join (NULL: none) */
};

struct pend {
    struct sched_race f;
};

struct ra {
    sbt_reader *r;
    void (*fn)(void *, const struct sched_race *);
    void *ctx;
    struct sched_race_stats st;
    uint32_t api;
    uint32_t n_streams, n_act;
    struct rstream *s; /* by stream id, [0] unused */
    uint64_t host_pos;
    uint64_t *hv;       /* the host's clock */
    struct sbt_map res; /* resource id -> index in hist */
    struct rhist *hist;
    uint32_t n_hist, cap_hist;
    uint32_t *hist_free;
    uint32_t n_hist_free, cap_hist_free;
    struct sbt_map syncs; /* id << 3 | family -> index in so */
    struct sync_o *so;
    uint32_t n_so, cap_so;
    uint32_t *so_free; /* free slots of so */
    uint32_t n_so_free, cap_so_free;
    uint64_t n_ev_live; /* event objects held */
    uint64_t *ev_floor; /* the join of the events forgotten: a wait on one of them joins it */
    uint64_t *ev_seqs;  /* scratch for ev_evict */
    uint32_t cap_ev_seqs;
    uint64_t n_events;
    uint64_t *tmp, *tmp2;
    uint64_t live_segs;
    struct sbt_map bufs; /* buffer id -> index in bb */
    struct bbind *bb;
    uint32_t n_bb, cap_bb;
    uint8_t *k_addr; /* per kernel id: its shader uses device addresses (Vulkan MODULE) */
    uint32_t n_kernels;
    uint8_t *x_addr; /* per access of the current op: through device addresses */
    uint32_t cap_x_addr;
    uint32_t x_acc; /* the access being analysed */
    int x_uses;     /* x_addr is valid for the current op */
    int x_hostpage; /* the access being analysed is a host write of whole pages */
    /* the op being analysed */
    const struct sbt_op *x;
    uint32_t xs, xactor, xcls;
    uint64_t xpos;
    const uint64_t *xev, *xmv;
    struct pend pend[PEND_MAX];
    uint32_t n_pend;
    char msg[1024];
};

/* ========================================================================================== */
/* Clocks                                                                                     */
/* ========================================================================================== */

static inline uint32_t actor(uint32_t stream, uint32_t cls)
{
    return stream * NCLS + cls;
}

static void vjoin(uint64_t *d, const uint64_t *s, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (s[i] > d[i])
            d[i] = s[i];
}

static uint64_t *vnew(struct ra *a)
{
    uint64_t *v = sched__calloc(a->n_act, sizeof *v);
    if (!v)
        sched__fail(SBT_ENOMEM, "out of memory for a clock of the race analysis");
    return v;
}

static uint32_t cls_src(uint64_t st)
{
    if (st & (ST_ALL | ST_BOTTOM))
        return ALLCLS;
    uint32_t c = 0;
    if (st & (ST_COMPUTE | ST_INDIRECT))
        c |= 1u << CLS_COMPUTE;
    if (st & (ST_TRANSFER | ST_XFER2))
        c |= 1u << CLS_XFER;
    return c;
}

static uint32_t cls_dst(uint64_t st)
{
    if (st & (ST_ALL | ST_TOP))
        return ALLCLS;
    uint32_t c = 0;
    if (st & (ST_COMPUTE | ST_INDIRECT))
        c |= 1u << CLS_COMPUTE;
    if (st & (ST_TRANSFER | ST_XFER2))
        c |= 1u << CLS_XFER;
    return c;
}

static uint64_t cls_writes(uint32_t c)
{
    return c == CLS_COMPUTE ? AC_C_WRITE : AC_X_WRITE;
}

static uint64_t cls_any(uint32_t c)
{
    return (c == CLS_COMPUTE ? AC_C_ANY : AC_X_ANY) | AC_MEM_READ | AC_MEM_WRITE;
}

static int stream_init(struct ra *a, uint32_t id)
{
    struct rstream *s = &a->s[id];
    if (s->ev[0])
        return 0;
    for (int c = 0; c < NCLS; c++) {
        s->ev[c] = vnew(a);
        s->av[c] = vnew(a);
        s->mv[c] = vnew(a);
        if (!s->ev[c] || !s->av[c] || !s->mv[c])
            return SBT_ENOMEM;
    }
    return 0;
}

/* Everything stream s has done so far (all classes), as a clock: for waits on the whole
 * stream (signals, idle waits, CUDA events). */
static int snap_full(struct ra *a, uint32_t id, uint64_t *out)
{
    int st = stream_init(a, id);
    if (st)
        return st;
    struct rstream *s = &a->s[id];
    memset(out, 0, a->n_act * sizeof *out);
    for (int c = 0; c < NCLS; c++) {
        vjoin(out, s->ev[c], a->n_act);
        if (s->pos[c] > out[actor(id, (uint32_t)c)])
            out[actor(id, (uint32_t)c)] = s->pos[c];
    }
    return 0;
}

/* Joins clock e (execution) and m (memory; NULL: e) into classes cls of stream id. */
static int join_into(struct ra *a, uint32_t id, uint32_t cls, const uint64_t *e, const uint64_t *m)
{
    int st = stream_init(a, id);
    if (st)
        return st;
    struct rstream *s = &a->s[id];
    for (uint32_t c = 0; c < NCLS; c++) {
        if (!(cls & (1u << c)))
            continue;
        vjoin(s->ev[c], e, a->n_act);
        vjoin(s->av[c], m ? m : e, a->n_act);
        vjoin(s->mv[c], m ? m : e, a->n_act);
    }
    return 0;
}

/* The bytes a buffer or image barrier covers: (memory, from, to) of a buffer bound with
 * BIND_BUFFER, an image's whole resource. 0 when unknown (then it counts as a global one). */
static int range_of(struct ra *a, const struct sub *b, uint64_t *res, uint64_t *lo, uint64_t *hi)
{
    if (b->kind == SUB_IMAGE) {
        *res = b->obj;
        *lo = 0;
        *hi = UINT64_MAX;
        return b->obj != 0;
    }
    uint64_t *ix = sbt_map_get(&a->bufs, b->obj);
    if (!ix)
        return 0;
    const struct bbind *bb = &a->bb[*ix];
    if (b->off >= bb->size)
        return 0;
    uint64_t n = b->size == UINT64_MAX || b->size > bb->size - b->off ? bb->size - b->off : b->size;
    *res = bb->mem;
    *lo = bb->off + b->off;
    *hi = sched__end(*lo, n);
    return 1;
}

/* Takes grant g of queue id as a global memory dependency (the ring is full). */
static void grant_global(struct ra *a, uint32_t id, const struct grant *g)
{
    struct rstream *s = &a->s[id];
    for (uint32_t c = 0; c < NCLS; c++) {
        if (!(g->dst & (1u << c)))
            continue;
        for (uint32_t k = 0; k < NCLS; k++) {
            uint32_t x = actor(id, k);
            if (g->pos[k] > s->av[c][x])
                s->av[c][x] = g->pos[k];
            if (g->pos[k] > s->mv[c][x])
                s->mv[c][x] = g->pos[k];
        }
    }
}

static void grant_add(struct ra *a, uint32_t id, const struct grant *g)
{
    struct rstream *s = &a->s[id];
    if (!s->grants) {
        s->grants = sched__calloc(GRANT_MAX, sizeof *s->grants);
        if (!s->grants) { /* only less precise */
            grant_global(a, id, g);
            return;
        }
    }
    if (s->n_grants == GRANT_MAX) {
        grant_global(a, id, &s->grants[s->i_grant]);
        a->st.n_grants_folded++;
    } else {
        s->n_grants++;
    }
    s->grants[s->i_grant] = *g;
    s->i_grant = (s->i_grant + 1) % GRANT_MAX;
}

/* 1 if a buffer or image barrier of the current op's queue made entry e's write (on that
 * queue) available and visible to the op for all of [lo, hi) of res. */
static int granted(const struct ra *a, uint32_t e_actor, uint64_t e_pos, uint64_t res, uint64_t lo,
                   uint64_t hi)
{
    uint32_t q = e_actor / NCLS;
    if (q != a->x->stream || !a->s[q].grants || a->s[q].kind != SK_QUEUE)
        return 0;
    const struct rstream *s = &a->s[q];
    for (uint32_t i = 0; i < s->n_grants; i++) {
        const struct grant *g = &s->grants[i];
        if (g->res == res && g->lo <= lo && hi <= g->hi && (g->dst & (1u << a->xcls)) &&
            e_pos < g->pos[e_actor % NCLS])
            return 1;
    }
    return 0;
}

/* One barrier on queue id: source stages/accesses, destination stages/accesses. */
static void barrier(struct ra *a, uint32_t id, const struct sub *b)
{
    struct rstream *s = &a->s[id];
    uint32_t sc = cls_src(b->s_st), dc = cls_dst(b->d_st);
    if (!sc || !dc)
        return;
    uint64_t *ne = a->tmp, *na = a->tmp2;
    memset(ne, 0, a->n_act * sizeof *ne);
    memset(na, 0, a->n_act * sizeof *na);
    for (uint32_t c = 0; c < NCLS; c++) {
        if (!(sc & (1u << c)))
            continue;
        vjoin(ne, s->ev[c], a->n_act);
        vjoin(na, s->av[c], a->n_act);
        uint32_t me = actor(id, c);
        if (s->pos[c] > ne[me])
            ne[me] = s->pos[c];
        if ((b->s_ac & cls_writes(c)) && s->pos[c] > na[me])
            na[me] = s->pos[c];
    }
    struct grant gr = {0};
    int ranged = b->kind != SUB_GLOBAL && range_of(a, b, &gr.res, &gr.lo, &gr.hi);
    for (uint32_t c = 0; c < NCLS; c++) {
        if (!(dc & (1u << c)))
            continue;
        vjoin(s->ev[c], ne, a->n_act);
        if (ranged) {
            if (b->d_ac & cls_any(c))
                gr.dst |= 1u << c;
            continue;
        }
        vjoin(s->av[c], na, a->n_act);
        if (b->d_ac & cls_any(c))
            vjoin(s->mv[c], na, a->n_act);
    }
    a->st.n_barriers++;
    if (!ranged || !gr.dst)
        return;
    for (uint32_t c = 0; c < NCLS; c++)
        gr.pos[c] = na[actor(id, c)];
    grant_add(a, id, &gr);
}

/* ========================================================================================== */
/* Sync objects                                                                               */
/* ========================================================================================== */

enum { FAM_SYNC = 0, FAM_EVENT = 1, FAM_FREE = 2 };

static struct sync_o *sync_get(struct ra *a, uint64_t id, uint32_t fam, uint32_t kind)
{
    int is_new;
    uint64_t *ix = sbt_map_put(&a->syncs, id << 1 | fam, &is_new);
    if (!ix) {
        sched__fail(SBT_ENOMEM, "out of memory for a sync object");
        return NULL;
    }
    if (is_new) {
        uint32_t slot;
        if (a->n_so_free) {
            slot = a->so_free[--a->n_so_free];
        } else {
            if (sched__grow((void **)&a->so, sizeof *a->so, &a->cap_so, (uint64_t)a->n_so + 1)) {
                sbt_map_del(&a->syncs, id << 1 | fam);
                return NULL;
            }
            slot = a->n_so++;
        }
        *ix = slot;
        memset(&a->so[slot], 0, sizeof *a->so);
        a->so[slot].id = id;
        a->so[slot].kind = kind;
        a->so[slot].fam = fam;
        if (fam == FAM_EVENT)
            a->n_ev_live++;
    }
    struct sync_o *o = &a->so[*ix];
    if (kind && !o->kind)
        o->kind = kind;
    return o;
}

static void snap_free(struct snap *s)
{
    sched__free(s->e);
    sched__free(s->a);
    s->e = s->a = NULL;
}

/* Folds q[0] into the floor and drops it. */
static int fold_first(struct ra *a, struct sync_o *o)
{
    if (!o->floor && !(o->floor = vnew(a)))
        return SBT_ENOMEM;
    vjoin(o->floor, o->q[0].e, a->n_act);
    snap_free(&o->q[0]);
    memmove(&o->q[0], &o->q[1], (o->n - 1) * sizeof *o->q);
    o->n--;
    return 0;
}

/* Records a signal of o with clocks e (execution) and av (availability; NULL = e). */
static int sync_signal(struct ra *a, struct sync_o *o, uint64_t value, const uint64_t *e,
                       const uint64_t *av)
{
    o->last_seq = a->x->seq;
    struct snap sn = {.value = value, .seq = a->x->seq, .e = vnew(a), .a = vnew(a)};
    if (!sn.e || !sn.a) {
        snap_free(&sn);
        return SBT_ENOMEM;
    }
    memcpy(sn.e, e, a->n_act * sizeof *e);
    memcpy(sn.a, av ? av : e, a->n_act * sizeof *e);
    if (o->kind == SBT_SYNC_FENCE || o->kind == SBT_SYNC_EVENT) {
        /* the latest signal stands alone: a wait joins it */
        for (uint32_t i = 0; i < o->n; i++)
            snap_free(&o->q[i]);
        o->n = 0;
        sched__free(o->floor);
        o->floor = NULL;
    } else if (o->n >= TL_KEEP) {
        int st = fold_first(a, o);
        if (st) {
            snap_free(&sn);
            return st;
        }
    }
    if (sched__grow((void **)&o->q, sizeof *o->q, &o->cap, (uint64_t)o->n + 1)) {
        snap_free(&sn);
        return SBT_ENOMEM;
    }
    uint32_t i = o->n;
    if (o->kind == SBT_SYNC_TIMELINE_SEMAPHORE)
        while (i > 0 && o->q[i - 1].value > value)
            i--;
    memmove(&o->q[i + 1], &o->q[i], (o->n - i) * sizeof *o->q);
    o->q[i] = sn;
    o->n++;
    return 0;
}

/* The signal a wait of o (timeline: for value) joins: its clocks in *e, *av (both NULL when
 * nothing is known: the wait adds no order). A binary semaphore's signal is consumed. The
 * returned clocks stay valid until the next call. */
static void sync_wait(struct ra *a, struct sync_o *o, uint64_t value, const uint64_t **e,
                      const uint64_t **av)
{
    *e = *av = NULL;
    memset(a->tmp2, 0, a->n_act * sizeof *a->tmp2);
    int have = 0;
    if (o->floor) {
        vjoin(a->tmp2, o->floor, a->n_act);
        have = 1;
    }
    if (o->kind == SBT_SYNC_TIMELINE_SEMAPHORE) {
        /* the first signal with a value >= value and everything below it */
        for (uint32_t i = 0; i < o->n; i++) {
            vjoin(a->tmp2, o->q[i].e, a->n_act);
            have = 1;
            if (o->q[i].value >= value)
                break;
        }
        if (have)
            *e = *av = a->tmp2;
        return;
    }
    if (o->kind == SBT_SYNC_BINARY_SEMAPHORE) {
        if (!o->n) {
            if (have)
                *e = *av = a->tmp2;
            return;
        }
        memcpy(a->tmp, o->q[0].e, a->n_act * sizeof *a->tmp);
        vjoin(a->tmp2, o->q[0].a, a->n_act);
        snap_free(&o->q[0]);
        memmove(&o->q[0], &o->q[1], (o->n - 1) * sizeof *o->q);
        o->n--;
        /* a binary semaphore's signal is consumed: a later wait joins the floor */
        if (!o->floor)
            o->floor = vnew(a);
        if (o->floor)
            vjoin(o->floor, a->tmp, a->n_act);
        *e = a->tmp;
        *av = a->tmp2;
        return;
    }
    if (o->n) {
        *e = o->q[o->n - 1].e;
        *av = o->q[o->n - 1].a;
    } else if (have) {
        *e = *av = a->tmp2;
    } else if (o->fam == FAM_EVENT && a->ev_floor) {
        *e = *av = a->ev_floor; /* perhaps one of those forgotten */
    }
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Past 2 x EV_KEEP events, forgets the older half (by their latest record): their clocks join
 * ev_floor, which a wait on an event without a record joins (an order that may not be the
 * program's: it hides races, never invents one). Amortised O(log) per event. */
static int ev_evict(struct ra *a)
{
    if (a->n_ev_live <= 2 * EV_KEEP)
        return 0;
    if (!a->ev_floor && !(a->ev_floor = vnew(a)))
        return SBT_ENOMEM;
    if (sched__grow((void **)&a->ev_seqs, sizeof *a->ev_seqs, &a->cap_ev_seqs, a->n_ev_live))
        return SBT_ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < a->n_so; i++)
        if (a->so[i].fam == FAM_EVENT && n < a->cap_ev_seqs)
            a->ev_seqs[n++] = a->so[i].last_seq;
    qsort(a->ev_seqs, n, sizeof *a->ev_seqs, cmp_u64);
    uint64_t cut = a->ev_seqs[n / 2];
    for (uint32_t i = 0; i < a->n_so; i++) {
        struct sync_o *o = &a->so[i];
        if (o->fam != FAM_EVENT || o->last_seq >= cut)
            continue;
        if (sched__grow((void **)&a->so_free, sizeof *a->so_free, &a->cap_so_free,
                        (uint64_t)a->n_so_free + 1))
            return SBT_ENOMEM;
        for (uint32_t k = 0; k < o->n; k++) {
            vjoin(a->ev_floor, o->q[k].e, a->n_act);
            snap_free(&o->q[k]);
        }
        if (o->floor)
            vjoin(a->ev_floor, o->floor, a->n_act);
        sched__free(o->floor);
        sched__free(o->q);
        sbt_map_del(&a->syncs, o->id << 1 | FAM_EVENT);
        memset(o, 0, sizeof *o);
        o->fam = FAM_FREE;
        a->so_free[a->n_so_free++] = i;
        a->n_ev_live--;
        a->st.n_events_forgotten++;
    }
    return 0;
}

/* ========================================================================================== */
/* Findings                                                                                   */
/* ========================================================================================== */

const char *sched_race_missing_name(uint32_t m)
{
    return m == SCHED_RACE_MEMORY ? "memory dependency" : "execution dependency";
}

static void pend_add(struct ra *a, const struct ent *e, uint64_t res, uint64_t lo, uint64_t hi,
                     uint32_t xw, uint32_t missing)
{
    for (uint32_t i = 0; i < a->n_pend; i++) {
        struct sched_race *f = &a->pend[i].f;
        if (f->first == e->seq && f->resource == res && f->missing == missing) {
            if (lo < f->lo)
                f->lo = lo;
            if (hi > f->hi)
                f->hi = hi;
            f->first_mode |= e->w ? SBT_ACCESS_WRITE : SBT_ACCESS_READ;
            f->second_mode |= xw ? SBT_ACCESS_WRITE : SBT_ACCESS_READ;
            return;
        }
    }
    if (a->n_pend == PEND_MAX) {
        a->st.n_dropped++;
        return;
    }
    struct sched_race *f = &a->pend[a->n_pend++].f;
    memset(f, 0, sizeof *f);
    f->first = e->seq;
    f->second = a->x->seq;
    f->first_stream = e->stream;
    f->second_stream = a->x->stream;
    f->first_kind = e->kind;
    f->second_kind = a->x->kind;
    f->first_kernel = e->kernel;
    f->second_kernel = a->x->kernel;
    f->first_mode = e->w ? SBT_ACCESS_WRITE : SBT_ACCESS_READ;
    f->second_mode = xw ? SBT_ACCESS_WRITE : SBT_ACCESS_READ;
    f->resource = res;
    f->lo = lo;
    f->hi = hi;
    f->missing = missing;
}

static const char *opdesc(struct ra *a, uint64_t seq, uint32_t kind, uint32_t kernel,
                          uint32_t stream, char *buf, size_t n)
{
    const struct sbt_kernel *k = kernel ? sbt_reader_kernel(a->r, kernel) : NULL;
    const char *kn = k ? sbt_reader_string(a->r, k->name) : NULL;
    const struct sbt_stream *s = sbt_reader_stream(a->r, stream);
    const char *sk = !s                                  ? "stream"
                     : s->kind == SBT_STREAM_QUEUE       ? "queue"
                     : s->kind == SBT_STREAM_HOST_THREAD ? "host thread"
                                                         : "stream";
    if (kn && *kn)
        snprintf(buf, n, "op %" PRIu64 " (%s '%s', %s s%u)", seq, sbt_op_kind_name(kind), kn, sk,
                 stream);
    else
        snprintf(buf, n, "op %" PRIu64 " (%s, %s s%u)", seq, sbt_op_kind_name(kind), sk, stream);
    return buf;
}

static const char *mode_verb(uint32_t m)
{
    return m == SBT_ACCESS_READ ? "reads" : m == SBT_ACCESS_WRITE ? "writes" : "reads and writes";
}

/* Passes the findings of the op just analysed on. */
static void pend_flush(struct ra *a)
{
    for (uint32_t i = 0; i < a->n_pend; i++) {
        struct sched_race *f = &a->pend[i].f;
        a->st.n_findings++;
        if (f->missing == SCHED_RACE_MEMORY)
            a->st.n_memory++;
        else
            a->st.n_exec++;
        if (!a->fn)
            continue;
        char d1[200], d2[200];
        opdesc(a, f->first, f->first_kind, f->first_kernel, f->first_stream, d1, sizeof d1);
        opdesc(a, f->second, f->second_kind, f->second_kernel, f->second_stream, d2, sizeof d2);
        if (f->missing == SCHED_RACE_MEMORY)
            snprintf(a->msg, sizeof a->msg,
                     "%s %s resource %" PRIu64 " bytes [%" PRIu64 ", %" PRIu64 ") that %s %s: "
                     "missing memory dependency (the stages are ordered, but no barrier makes the "
                     "write available and visible to it: its access masks, or a buffer or image "
                     "barrier that does not cover these bytes)",
                     d2, mode_verb(f->second_mode), f->resource, f->lo, f->hi, d1,
                     mode_verb(f->first_mode));
        else
            snprintf(a->msg, sizeof a->msg,
                     "%s %s resource %" PRIu64 " bytes [%" PRIu64 ", %" PRIu64 ") that %s %s: "
                     "missing execution dependency (nothing the program declared orders them)",
                     d2, mode_verb(f->second_mode), f->resource, f->lo, f->hi, d1,
                     mode_verb(f->first_mode));
        f->msg = a->msg;
        a->fn(a->ctx, f);
    }
    a->n_pend = 0;
}

/* ========================================================================================== */
/* Byte intervals                                                                             */
/* ========================================================================================== */

static struct rhist *hist_get(struct ra *a, uint64_t id)
{
    uint64_t *ix = sbt_map_get(&a->res, id);
    if (ix)
        return &a->hist[*ix];
    uint32_t slot;
    if (a->n_hist_free) {
        slot = a->hist_free[--a->n_hist_free];
    } else {
        if (sched__grow((void **)&a->hist, sizeof *a->hist, &a->cap_hist, (uint64_t)a->n_hist + 1))
            return NULL;
        slot = a->n_hist++;
    }
    int is_new;
    ix = sbt_map_put(&a->res, id, &is_new);
    if (!ix) {
        sched__fail(SBT_ENOMEM, "out of memory for a resource");
        return NULL;
    }
    *ix = slot;
    memset(&a->hist[slot], 0, sizeof a->hist[slot]);
    return &a->hist[slot];
}

static void hist_drop(struct ra *a, uint64_t id)
{
    uint64_t *ix = sbt_map_get(&a->res, id);
    if (!ix)
        return;
    uint32_t slot = (uint32_t)*ix;
    a->live_segs -= a->hist[slot].n;
    sched__free(a->hist[slot].s);
    memset(&a->hist[slot], 0, sizeof a->hist[slot]);
    sbt_map_del(&a->res, id);
    if (!sched__grow((void **)&a->hist_free, sizeof *a->hist_free, &a->cap_hist_free,
                     (uint64_t)a->n_hist_free + 1))
        a->hist_free[a->n_hist_free++] = slot;
}

static int seg_ins(struct ra *a, struct rhist *h, uint32_t i, const struct seg *s)
{
    if (sched__grow((void **)&h->s, sizeof *h->s, &h->cap, (uint64_t)h->n + 1))
        return SBT_ENOMEM;
    memmove(&h->s[i + 1], &h->s[i], (h->n - i) * sizeof *h->s);
    h->s[i] = *s;
    h->n++;
    if (++a->live_segs > a->st.peak_segments)
        a->st.peak_segments = a->live_segs;
    return 0;
}

static int seg_eq(const struct seg *x, const struct seg *y)
{
    if (x->e != y->b || x->n != y->n)
        return 0;
    for (uint32_t i = 0; i < x->n; i++) {
        uint32_t j = 0;
        while (j < y->n && memcmp(&x->ent[i], &y->ent[j], sizeof x->ent[i]))
            j++;
        if (j == y->n)
            return 0;
    }
    return 1;
}

/* First segment with e > off. */
static uint32_t seg_lower(const struct rhist *h, uint64_t off)
{
    uint32_t lo = 0, hi = h->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (h->s[mid].e > off)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Checks one segment's accesses against the op's access and records it there. */
static void seg_visit(struct ra *a, struct seg *s, uint64_t res, int xw)
{
    uint32_t o = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        struct ent *e = &s->ent[i];
        int keep = 1;
        if (e->seq != a->x->seq && (e->w || xw)) {
            int exec = e->pos < a->xev[e->actor];
            /* two kernels' may-writes: their write sets are whole bindings, and dispatches that
             * split one buffer between them (vkCmdDispatchBase, offsets in push constants) are
             * the rule; only counted */
            int maywaw = e->w && xw && e->kind == SBT_OP_KERNEL && a->x->kind == SBT_OP_KERNEL;
            /* an access through device addresses is every buffer with an address, whatever
             * the shader touches: a pair with one is only counted too */
            int addr = e->addr == 1 || (a->x_uses && a->x_addr[a->x_acc]);
            /* a host write recorded as whole pages (the capture saw the page written, without
             * a copy to tell which bytes): a may-write, only counted */
            int hpage = (e->w && e->addr == 2) || (xw && a->x_hostpage);
            int mem =
                !e->w || e->pos < a->xmv[e->actor] || granted(a, e->actor, e->pos, res, s->b, s->e);
            if ((maywaw || addr || hpage) && (!exec || !mem))
                *(maywaw ? &a->st.n_maywaw : addr ? &a->st.n_address : &a->st.n_hostpage) += 1;
            else if (!exec)
                pend_add(a, e, res, s->b, s->e, (uint32_t)xw, SCHED_RACE_EXEC);
            else if (!mem)
                pend_add(a, e, res, s->b, s->e, (uint32_t)xw, SCHED_RACE_MEMORY);
            if (xw && exec)
                keep = 0; /* ordered before this write: it stands for them */
        }
        if (e->actor == a->xactor && (uint32_t)xw == e->w)
            keep = 0; /* replaced below */
        if (e->actor == a->xactor && xw && !e->w)
            keep = 0; /* a write of the same actor supersedes its read */
        if (keep)
            s->ent[o++] = *e;
    }
    s->n = o;
    if (s->n == ENT_MAX) { /* drop the oldest: it may hide a race, never invent one */
        uint32_t old = 0;
        for (uint32_t i = 1; i < s->n; i++)
            if (s->ent[i].seq < s->ent[old].seq)
                old = i;
        s->ent[old] = s->ent[--s->n];
        a->st.n_forgotten++;
    }
    s->ent[s->n++] = (struct ent){
        a->x->seq,    a->xpos,
        a->xactor,    a->x->stream,
        a->x->kind,   a->x->kernel,
        (uint16_t)xw, (uint16_t)(a->x_uses && a->x_addr[a->x_acc] ? 1 : a->x_hostpage ? 2 : 0)};
}

static int access(struct ra *a, const struct sbt_access *acc)
{
    if (!acc->len)
        return 0;
    struct rhist *h = hist_get(a, acc->resource);
    if (!h)
        return SBT_ENOMEM;
    uint64_t b = acc->offset, e = sched__end(acc->offset, acc->len);
    int xw = (acc->mode & SBT_ACCESS_WRITE) != 0;
    a->x_hostpage =
        xw && a->x->kind == SBT_OP_HOST_WRITE && !(acc->offset % 4096) && !(acc->len % 4096);
    uint32_t i = seg_lower(h, b);
    uint64_t at = b;
    while (at < e) {
        if (i == h->n || h->s[i].b >= e) { /* gap to the end */
            struct seg s = {.b = at, .e = e};
            if (seg_ins(a, h, i, &s))
                return SBT_ENOMEM;
        } else if (h->s[i].b > at) { /* gap before segment i */
            struct seg s = {.b = at, .e = h->s[i].b};
            if (seg_ins(a, h, i, &s))
                return SBT_ENOMEM;
        } else if (h->s[i].b < at) { /* split: [b, at) stays */
            struct seg s = h->s[i];
            s.b = at;
            h->s[i].e = at;
            if (seg_ins(a, h, i + 1, &s))
                return SBT_ENOMEM;
            i++;
        }
        if (h->s[i].e > e) { /* split: [e, ..) after */
            struct seg s = h->s[i];
            s.b = e;
            h->s[i].e = e;
            if (seg_ins(a, h, i + 1, &s))
                return SBT_ENOMEM;
        }
        seg_visit(a, &h->s[i], acc->resource, xw);
        at = h->s[i].e;
        i++;
    }
    /* coalesce around the range */
    uint32_t j = seg_lower(h, b);
    if (j > 0)
        j--;
    while (j + 1 < h->n && h->s[j].b < e) {
        if (seg_eq(&h->s[j], &h->s[j + 1])) {
            h->s[j].e = h->s[j + 1].e;
            memmove(&h->s[j + 1], &h->s[j + 2], (h->n - j - 2) * sizeof *h->s);
            h->n--;
            a->live_segs--;
        } else {
            j++;
        }
    }
    return 0;
}

/* Marks the accesses of the current op that a Vulkan kernel makes through device addresses:
 * those of a kernel whose shader uses them (MODULE) that no BINDING / IMAGE_BINDING record of
 * its payload gives (the capture appends one per buffer with an address, the whole buffer). */
static int addr_marks(struct ra *a)
{
    const struct sbt_op *x = a->x;
    int uses = x->kind == SBT_OP_KERNEL && x->kernel && x->kernel <= a->n_kernels &&
               a->k_addr[x->kernel - 1] && x->payload.kind == SBT_VK_PAYLOAD;
    a->x_uses = 0;
    if (!uses)
        return 0;
    if (sched__grow((void **)&a->x_addr, 1, &a->cap_x_addr, x->n_access ? x->n_access : 1))
        return SBT_ENOMEM;
    memset(a->x_addr, 1, x->n_access);
    struct sbt_payload_dec d;
    struct sbt_payload_rec r;
    sbt_payload_dec_init(&d, x->payload.data, x->payload.len);
    int st;
    while ((st = sbt_payload_dec_next(&d, &r)) == 1) {
        uint64_t res = 0, len = UINT64_MAX;
        if (r.call == SBT_VK_BINDING) {
            res = sbt_payload_arg(&r, 5);
            len = sbt_payload_arg(&r, 7);
        } else if (r.call == SBT_VK_IMAGE_BINDING) {
            res = sbt_payload_arg(&r, 5);
        } else {
            continue;
        }
        for (uint32_t i = 0; i < x->n_access; i++)
            if (x->access[i].resource == res && (len == UINT64_MAX || x->access[i].len == len))
                a->x_addr[i] = 0;
    }
    sbt_payload_dec_free(&d);
    a->x_uses = 1;
    return 0;
}

/* Analyses the accesses of the current op as actor xactor at position xpos with clocks. */
static int accesses(struct ra *a)
{
    const struct sbt_op *x = a->x;
    int st = addr_marks(a);
    if (st)
        return st;
    for (uint32_t i = 0; i < x->n_access; i++) {
        a->x_acc = i;
        st = access(a, &x->access[i]);
        if (st)
            return st;
    }
    pend_flush(a);
    return 0;
}

/* ========================================================================================== */
/* Vulkan submissions                                                                         */
/* ========================================================================================== */

/* Parses the barrier layout of CMD_BARRIER (from argument base) into it->sub. */
static int parse_barrier(const struct sbt_payload_rec *r, uint32_t base, struct item *it)
{
    uint64_t src = sbt_payload_arg(r, base), dst = sbt_payload_arg(r, base + 1);
    uint32_t k = base + 3;
    uint64_t nm = sbt_payload_arg(r, k++);
    if (nm > r->n_arg)
        return SBT_ECORRUPT;
    uint32_t mk = k;
    k += (uint32_t)nm * 4;
    uint64_t nb = sbt_payload_arg(r, k++);
    if (nb > r->n_arg)
        return SBT_ECORRUPT;
    uint32_t bk = k;
    k += (uint32_t)nb * 9;
    uint64_t ni = k < r->n_arg ? sbt_payload_arg(r, k++) : 0;
    if (ni > r->n_arg)
        return SBT_ECORRUPT;
    uint32_t ik = k;
    uint64_t n = nm + nb + ni;
    it->sub = sched__calloc(n ? n : 1, sizeof *it->sub);
    if (!it->sub)
        return SBT_ENOMEM;
    if (!n) {
        it->sub[0] = (struct sub){.s_st = src, .d_st = dst};
        it->n_sub = 1;
        return 0;
    }
    for (uint64_t i = 0; i < nm; i++, mk += 4)
        it->sub[it->n_sub++] = (struct sub){.s_st = sbt_payload_arg(r, mk),
                                            .s_ac = sbt_payload_arg(r, mk + 1),
                                            .d_st = sbt_payload_arg(r, mk + 2),
                                            .d_ac = sbt_payload_arg(r, mk + 3)};
    for (uint64_t i = 0; i < nb; i++, bk += 9)
        it->sub[it->n_sub++] = (struct sub){sbt_payload_arg(r, bk),
                                            sbt_payload_arg(r, bk + 1),
                                            sbt_payload_arg(r, bk + 2),
                                            sbt_payload_arg(r, bk + 3),
                                            SUB_BUFFER,
                                            sbt_payload_arg(r, bk + 6),
                                            sbt_payload_arg(r, bk + 7),
                                            sbt_payload_arg(r, bk + 8)};
    for (uint64_t i = 0; i < ni; i++, ik += 14)
        it->sub[it->n_sub++] = (struct sub){sbt_payload_arg(r, ik),
                                            sbt_payload_arg(r, ik + 1),
                                            sbt_payload_arg(r, ik + 2),
                                            sbt_payload_arg(r, ik + 3),
                                            SUB_IMAGE,
                                            sbt_payload_arg(r, ik + 8),
                                            0,
                                            0};
    return 0;
}

static void rec_free(struct rec *rc)
{
    for (uint32_t i = 0; i < rc->n_it; i++) {
        sched__free(rc->it[i].sub);
        sched__free(rc->it[i].events);
    }
    sched__free(rc->it);
    memset(rc, 0, sizeof *rc);
}

/* Loads the sync items of a recording blob. A recording that cannot be read is opaque. */
static int rec_load(struct ra *a, sbt_hash h, struct rec *rc)
{
    memset(rc, 0, sizeof *rc);
    rc->hash = h;
    void *buf = NULL;
    size_t len = 0;
    if (sbt_reader_blob(a->r, &h, &buf, &len) < 0 || len < SBT_VK_RECORDING_MAGIC_LEN ||
        memcmp(buf, SBT_VK_RECORDING_MAGIC, SBT_VK_RECORDING_MAGIC_LEN)) {
        free(buf);
        rc->opaque = 1;
        return 0;
    }
    struct sbt_payload_dec d;
    struct sbt_payload_rec r;
    sbt_payload_dec_init(&d, (uint8_t *)buf + SBT_VK_RECORDING_MAGIC_LEN,
                         len - SBT_VK_RECORDING_MAGIC_LEN);
    uint32_t index = 0, cap = 0;
    int st, ret = 0;
    while ((st = sbt_payload_dec_next(&d, &r)) == 1) {
        uint32_t idx = index++;
        if (r.call != SBT_VK_CMD_BARRIER && r.call != SBT_VK_CMD_SET_EVENT &&
            r.call != SBT_VK_CMD_WAIT_EVENTS && r.call != SBT_VK_CMD_EXECUTE)
            continue;
        if (r.call == SBT_VK_CMD_EXECUTE) {
            rc->opaque = 1;
            continue;
        }
        if (sched__grow((void **)&rc->it, sizeof *rc->it, &cap, (uint64_t)rc->n_it + 1)) {
            ret = SBT_ENOMEM;
            break;
        }
        struct item *it = &rc->it[rc->n_it++];
        memset(it, 0, sizeof *it);
        it->index = idx;
        it->call = r.call;
        if (r.call == SBT_VK_CMD_SET_EVENT) {
            it->event = sbt_payload_arg(&r, 0);
            it->set_stage = sbt_payload_arg(&r, 1);
        } else if (r.call == SBT_VK_CMD_WAIT_EVENTS) {
            uint64_t n = sbt_payload_arg(&r, 0);
            if (n > r.n_arg) {
                rc->opaque = 1;
                continue;
            }
            it->events = sched__calloc(n ? n : 1, sizeof *it->events);
            if (!it->events) {
                ret = SBT_ENOMEM;
                break;
            }
            for (uint32_t k = 0; k < n; k++)
                it->events[k] = sbt_payload_arg(&r, 1 + k);
            it->n_events = (uint32_t)n;
            int pst = parse_barrier(&r, 1 + (uint32_t)n, it);
            if (pst == SBT_ENOMEM) {
                ret = pst;
                break;
            }
            if (pst)
                rc->opaque = 1;
        } else {
            int pst = parse_barrier(&r, 0, it);
            if (pst == SBT_ENOMEM) {
                ret = pst;
                break;
            }
            if (pst)
                rc->opaque = 1;
        }
    }
    if (st < 0)
        rc->opaque = 1;
    sbt_payload_dec_free(&d);
    free(buf);
    if (ret)
        return sched__fail(ret, "out of memory reading a command-buffer recording");
    return 0;
}

static uint64_t *hostclock(struct ra *a)
{
    if (a->host_pos > a->hv[0])
        a->hv[0] = a->host_pos;
    return a->hv;
}

/* Applies a recording item on queue id. */
static int item_apply(struct ra *a, uint32_t id, const struct item *it)
{
    struct rstream *s = &a->s[id];
    if (it->call == SBT_VK_CMD_BARRIER) {
        for (uint32_t i = 0; i < it->n_sub; i++)
            barrier(a, id, &it->sub[i]);
        return 0;
    }
    if (it->call == SBT_VK_CMD_SET_EVENT) {
        uint32_t sc = cls_src(it->set_stage);
        uint64_t *e = a->tmp;
        memset(e, 0, a->n_act * sizeof *e);
        for (uint32_t c = 0; c < NCLS; c++) {
            if (!(sc & (1u << c)))
                continue;
            vjoin(e, s->ev[c], a->n_act);
            if (s->pos[c] > e[actor(id, c)])
                e[actor(id, c)] = s->pos[c];
        }
        struct sync_o *o = sync_get(a, it->event, FAM_EVENT, SBT_SYNC_EVENT);
        if (!o)
            return SBT_ENOMEM;
        return sync_signal(a, o, 0, e, NULL);
    }
    /* CMD_WAIT_EVENTS: the events' first scopes before the destination stages */
    for (uint32_t k = 0; k < it->n_events; k++) {
        struct sync_o *o = sync_get(a, it->events[k], FAM_EVENT, SBT_SYNC_EVENT);
        if (!o)
            return SBT_ENOMEM;
        const uint64_t *e, *av;
        sync_wait(a, o, 0, &e, &av);
        if (!e)
            continue;
        for (uint32_t i = 0; i < it->n_sub; i++) {
            const struct sub *b = &it->sub[i];
            uint32_t dc = cls_dst(b->d_st);
            for (uint32_t c = 0; c < NCLS; c++) {
                if (!(dc & (1u << c)))
                    continue;
                vjoin(s->ev[c], e, a->n_act);
                if (b->s_ac & AC_WRITES) {
                    vjoin(s->av[c], e, a->n_act);
                    if (b->d_ac & cls_any(c))
                        vjoin(s->mv[c], e, a->n_act);
                }
            }
        }
    }
    return 0;
}

/* Applies the items of script entry i (a command buffer) up to record index `upto` (exclusive;
 * UINT32_MAX: all). */
static int cb_advance(struct ra *a, uint32_t id, uint32_t i, uint32_t upto)
{
    struct rstream *s = &a->s[id];
    struct script *sc = &s->sc[i];
    if (sc->rec < 0)
        return 0;
    struct rec *rc = &s->recs[sc->rec];
    while (sc->next < rc->n_it && rc->it[sc->next].index < upto) {
        int st = item_apply(a, id, &rc->it[sc->next++]);
        if (st)
            return st;
    }
    return 0;
}

/* Moves the queue's script cursor to the next entry of kind what (and, for SC_CB, of command
 * buffer cb), flushing the command buffers passed. 1 found, 0 not (cursor at the end). */
static int script_seek(struct ra *a, uint32_t id, uint32_t what, uint64_t cb, int *found)
{
    struct rstream *s = &a->s[id];
    *found = 0;
    uint32_t j = s->i_sc;
    while (j < s->n_sc && !(s->sc[j].what == what && (what != SC_CB || s->sc[j].cb == cb)))
        j++;
    if (j == s->n_sc)
        return 0;
    for (uint32_t k = s->i_sc; k < j; k++)
        if (s->sc[k].what == SC_CB) {
            int st = cb_advance(a, id, k, UINT32_MAX);
            if (st)
                return st;
        }
    s->i_sc = j;
    *found = 1;
    return 0;
}

static int script_end(struct ra *a, uint32_t id)
{
    struct rstream *s = &a->s[id];
    for (uint32_t k = s->i_sc; k < s->n_sc; k++)
        if (s->sc[k].what == SC_CB) {
            int st = cb_advance(a, id, k, UINT32_MAX);
            if (st)
                return st;
        }
    s->i_sc = s->n_sc = 0;
    for (uint32_t k = 0; k < s->n_recs; k++)
        rec_free(&s->recs[k]);
    s->n_recs = 0;
    s->blind = 0;
    return 0;
}

static int script_push(struct ra *a, struct rstream *s, struct script e)
{
    (void)a;
    if (sched__grow((void **)&s->sc, sizeof *s->sc, &s->cap_sc, (uint64_t)s->n_sc + 1))
        return SBT_ENOMEM;
    s->sc[s->n_sc++] = e;
    return 0;
}

static int on_submit(struct ra *a, uint32_t id)
{
    int st = script_end(a, id);
    if (st)
        return st;
    struct rstream *s = &a->s[id];
    /* host work before the submission happens before the submitted work */
    st = join_into(a, id, ALLCLS, hostclock(a), NULL);
    if (st)
        return st;
    const struct sbt_op *x = a->x;
    if (x->payload.kind != SBT_VK_PAYLOAD || !x->payload.len) {
        s->blind = 1;
        a->st.n_blind_submits++;
        return 0;
    }
    struct sbt_payload_dec d;
    struct sbt_payload_rec r;
    sbt_payload_dec_init(&d, x->payload.data, x->payload.len);
    while ((st = sbt_payload_dec_next(&d, &r)) == 1) {
        struct script e = {0};
        e.rec = -1;
        if (r.call == SBT_VK_WAIT_SEM) {
            e.what = SC_WAIT;
        } else if (r.call == SBT_VK_SIGNAL_SEM) {
            e.what = SC_SIGNAL;
        } else if (r.call == SBT_VK_CMDBUF) {
            e.what = SC_CB;
            e.cb = sbt_payload_arg(&r, 0);
            sbt_hash h = {sbt_payload_arg(&r, 1), sbt_payload_arg(&r, 2)};
            if (sched__grow((void **)&s->recs, sizeof *s->recs, &s->cap_recs,
                            (uint64_t)s->n_recs + 1)) {
                st = SBT_ENOMEM;
                break;
            }
            st = rec_load(a, h, &s->recs[s->n_recs]);
            if (st)
                break;
            if (s->recs[s->n_recs].opaque)
                s->blind = 1;
            e.rec = (int32_t)s->n_recs++;
        } else {
            continue;
        }
        if ((st = script_push(a, s, e)))
            break;
    }
    sbt_payload_dec_free(&d);
    if (st < 0)
        return st == SBT_ENOMEM ? sched__fail(st, "out of memory reading a submission") : st;
    if (s->blind)
        a->st.n_blind_submits++;
    return 0;
}

/* The command buffer id and record index of a queue op's payload (DISPATCH: arguments 10, 11;
 * the other commands: their last two). 0 if it has none. */
static int op_cmd(const struct sbt_op *x, uint64_t *cb, uint32_t *index)
{
    if (x->payload.kind != SBT_VK_PAYLOAD || !x->payload.len)
        return 0;
    struct sbt_payload_dec d;
    struct sbt_payload_rec r;
    sbt_payload_dec_init(&d, x->payload.data, x->payload.len);
    int ok = 0;
    if (sbt_payload_dec_next(&d, &r) == 1) {
        if (r.call == SBT_VK_DISPATCH && r.n_arg >= 12) {
            *cb = r.arg[10];
            *index = (uint32_t)r.arg[11];
            ok = 1;
        } else if (r.call != SBT_VK_DISPATCH && r.n_arg >= 2) {
            *cb = r.arg[r.n_arg - 2];
            *index = (uint32_t)r.arg[r.n_arg - 1];
            ok = 1;
        }
    }
    sbt_payload_dec_free(&d);
    return ok;
}

/* A full barrier on queue id (for ops whose recording the trace does not hold). */
static void full_barrier(struct ra *a, uint32_t id)
{
    struct sub b = {
        .s_st = ST_ALL, .s_ac = AC_MEM_WRITE, .d_st = ST_ALL, .d_ac = AC_MEM_READ | AC_MEM_WRITE};
    barrier(a, id, &b);
    a->st.n_barriers--;
}

/* A command of a submission (dispatch, copy, fill...) on queue id. */
static int queue_cmd(struct ra *a, uint32_t id, uint32_t cls)
{
    struct rstream *s = &a->s[id];
    uint64_t cb;
    uint32_t index;
    int st, found = 0;
    if (!s->blind && op_cmd(a->x, &cb, &index)) {
        if ((st = script_seek(a, id, SC_CB, cb, &found)))
            return st;
        if (found && (st = cb_advance(a, id, s->i_sc, index)))
            return st;
    }
    int blind = s->blind || !found;
    if (blind) {
        if (!s->blind)
            a->st.n_blind_ops++;
        full_barrier(a, id);
    }
    a->xcls = cls;
    a->xactor = actor(id, cls);
    a->xpos = s->pos[cls];
    a->xev = s->ev[cls];
    a->xmv = s->mv[cls];
    st = accesses(a);
    s->pos[cls]++;
    if (blind)
        full_barrier(a, id);
    return st;
}

/* ========================================================================================== */
/* Ops                                                                                        */
/* ========================================================================================== */

static uint64_t sync_info_stage(const struct sbt_op *x)
{
    if (x->payload.kind != SBT_VK_PAYLOAD || !x->payload.len)
        return 0;
    struct sbt_payload_dec d;
    struct sbt_payload_rec r;
    uint64_t stage = 0;
    if (sbt_payload_find(&d, x->payload.data, x->payload.len, SBT_VK_SYNC_INFO, &r) == 1)
        stage = sbt_payload_arg(&r, 0);
    sbt_payload_dec_free(&d);
    return stage;
}

/* The CUDA entry point of an op (enum sbt_cuda_api), 0 if none. */
static uint32_t cuda_api(const struct sbt_op *x)
{
    if (x->payload.kind != SBT_CUDA_PAYLOAD || !x->payload.len)
        return 0;
    struct sbt_payload_dec d;
    struct sbt_payload_rec r;
    uint32_t api = 0;
    if (sbt_payload_find(&d, x->payload.data, x->payload.len, SBT_CUDA_CALL, &r) == 1)
        api = (uint32_t)sbt_payload_arg(&r, 0);
    sbt_payload_dec_free(&d);
    return api;
}

static int cuda_host_sync(uint32_t api)
{
    switch (api) {
    case SBT_CUDA_API_cuMemcpy:
    case SBT_CUDA_API_cuMemcpyHtoD_v2:
    case SBT_CUDA_API_cuMemcpyDtoH_v2:
    case SBT_CUDA_API_cuMemcpyDtoD_v2:
    case SBT_CUDA_API_cuMemsetD8_v2:
    case SBT_CUDA_API_cuMemsetD16_v2:
    case SBT_CUDA_API_cuMemsetD32_v2:
        return 1;
    default:
        return 0;
    }
}

/* 1 if CUDA stream t synchronises implicitly with the legacy stream (a blocking stream). */
static int cuda_blocking(const struct rstream *t)
{
    return t->kind == SK_INORDER && t->cuda_origin != SBT_CUDA_STREAM_LEGACY &&
           !(t->cuda_flags & 1u /* CU_STREAM_NON_BLOCKING */);
}

/* A device op on an in-order stream (CUDA, synthetic). */
static int inorder_cmd(struct ra *a, uint32_t id)
{
    struct rstream *s = &a->s[id];
    int st;
    if ((st = join_into(a, id, 1u, hostclock(a), NULL)))
        return st;
    if (a->api == SBT_API_CUDA) {
        /* the legacy stream waits for the blocking streams of its device, they wait for it */
        for (uint32_t t = 1; t <= a->n_streams; t++) {
            struct rstream *o = &a->s[t];
            if (t == id || o->device != s->device || !o->ev[0])
                continue;
            int pair = (s->cuda_origin == SBT_CUDA_STREAM_LEGACY && cuda_blocking(o)) ||
                       (o->cuda_origin == SBT_CUDA_STREAM_LEGACY && cuda_blocking(s));
            if (!pair)
                continue;
            if ((st = snap_full(a, t, a->tmp)) || (st = join_into(a, id, 1u, a->tmp, NULL)))
                return st;
        }
    }
    uint32_t me = actor(id, 0);
    s->ev[0][me] = s->av[0][me] = s->mv[0][me] = s->pos[0];
    a->xcls = 0;
    a->xactor = me;
    a->xpos = s->pos[0];
    a->xev = s->ev[0];
    a->xmv = s->mv[0];
    st = accesses(a);
    s->pos[0]++;
    if (!st && a->api == SBT_API_CUDA && cuda_host_sync(cuda_api(a->x))) {
        if (!(st = snap_full(a, id, a->tmp)))
            vjoin(a->hv, a->tmp, a->n_act);
    }
    return st;
}

static int host_access(struct ra *a)
{
    uint64_t *hv = hostclock(a);
    a->xcls = 0;
    a->xactor = 0;
    a->xpos = a->host_pos;
    hv[0] = a->host_pos;
    a->xev = a->xmv = hv;
    int st = accesses(a);
    a->host_pos++;
    return st;
}

/* Vulkan state ops the analysis follows: which memory a buffer is bound to (for the ranges of
 * buffer barriers). */
static int marker(struct ra *a)
{
    const struct sbt_op *x = a->x;
    if (x->payload.kind != SBT_VK_PAYLOAD || !x->payload.len)
        return 0;
    struct sbt_payload_dec d;
    struct sbt_payload_rec r;
    int st = 0;
    sbt_payload_dec_init(&d, x->payload.data, x->payload.len);
    while (sbt_payload_dec_next(&d, &r) == 1) {
        if (r.call == SBT_VK_BIND_BUFFER) {
            int is_new;
            uint64_t *ix = sbt_map_put(&a->bufs, sbt_payload_arg(&r, 0), &is_new);
            if (!ix) {
                st = SBT_ENOMEM;
                break;
            }
            if (is_new) {
                if (sched__grow((void **)&a->bb, sizeof *a->bb, &a->cap_bb,
                                (uint64_t)a->n_bb + 1)) {
                    sbt_map_del(&a->bufs, sbt_payload_arg(&r, 0));
                    st = SBT_ENOMEM;
                    break;
                }
                *ix = a->n_bb++;
            }
            a->bb[*ix] = (struct bbind){sbt_payload_arg(&r, 1), sbt_payload_arg(&r, 2),
                                        sbt_payload_arg(&r, 3)};
        } else if (r.call == SBT_VK_DESTROY && sbt_payload_arg(&r, 0) == 9 /* BUFFER */) {
            /* the slot stays (bounded by the buffers bound at once, plus those destroyed) */
            sbt_map_del(&a->bufs, sbt_payload_arg(&r, 1));
        }
    }
    sbt_payload_dec_free(&d);
    return st ? sched__fail(st, "out of memory following buffer bindings") : 0;
}

static int stream_ok(struct ra *a, uint32_t id)
{
    return id >= 1 && id <= a->n_streams && a->s[id].kind != SK_NONE;
}

static int op(struct ra *a, const struct sbt_op *x)
{
    a->x = x;
    a->st.n_ops++;
    int est = ev_evict(a);
    if (est)
        return sched__fail(est, "out of memory forgetting old events");
    uint32_t id = x->stream;
    if (!stream_ok(a, id))
        return 0;
    struct rstream *s = &a->s[id];
    int st = stream_init(a, id);
    if (st)
        return st;
    int host = s->kind == SK_HOST;
    switch (x->kind) {
    case SBT_OP_FREE:
        hist_drop(a, x->resource);
        return 0;
    case SBT_OP_MARKER:
        return a->api == SBT_API_VULKAN ? marker(a) : 0;
    case SBT_OP_SUBMIT:
        return s->kind == SK_QUEUE ? on_submit(a, id) : 0;
    case SBT_OP_KERNEL:
    case SBT_OP_COPY:
    case SBT_OP_FILL:
        if (host)
            return host_access(a);
        if (s->kind == SK_QUEUE)
            return queue_cmd(a, id, x->kind == SBT_OP_KERNEL ? CLS_COMPUTE : CLS_XFER);
        return inorder_cmd(a, id);
    case SBT_OP_HOST_WRITE:
        return host_access(a);
    case SBT_OP_HOST_READ:
        /* the capture's read-back of results, written when it knows the work that wrote them
         * done (a fence it polled, the sync that covers an async copy), not a program access at
         * a point of its own: nothing to order */
        return 0;
    case SBT_OP_EVENT_RECORD:
    case SBT_OP_EVENT_WAIT: {
        int rec = x->kind == SBT_OP_EVENT_RECORD;
        if (s->kind == SK_QUEUE) {
            /* the recording's CMD_SET_EVENT / CMD_WAIT_EVENTS, at its place */
            if (s->blind)
                return 0;
            struct rstream *q = s;
            for (uint32_t k = q->i_sc; k < q->n_sc; k++) {
                if (q->sc[k].what != SC_CB || q->sc[k].rec < 0)
                    continue;
                struct rec *rc = &q->recs[q->sc[k].rec];
                uint32_t want = rec ? SBT_VK_CMD_SET_EVENT : SBT_VK_CMD_WAIT_EVENTS;
                uint32_t j = q->sc[k].next;
                while (j < rc->n_it && rc->it[j].call != want)
                    j++;
                if (j == rc->n_it)
                    continue;
                for (uint32_t m = q->i_sc; m < k; m++)
                    if (q->sc[m].what == SC_CB && (st = cb_advance(a, id, m, UINT32_MAX)))
                        return st;
                q->i_sc = k;
                return cb_advance(a, id, k, rc->it[j].index + 1);
            }
            return 0;
        }
        struct sync_o *o = sync_get(a, x->obj, FAM_EVENT, SBT_SYNC_EVENT);
        if (!o)
            return SBT_ENOMEM;
        if (rec) {
            if (host)
                return sync_signal(a, o, 0, hostclock(a), NULL);
            if ((st = snap_full(a, id, a->tmp)))
                return st;
            return sync_signal(a, o, 0, a->tmp, NULL);
        }
        const uint64_t *e, *av;
        sync_wait(a, o, 0, &e, &av);
        if (!e)
            return 0;
        if (host) {
            vjoin(a->hv, e, a->n_act);
            return 0;
        }
        return join_into(a, id, ALLCLS, e, NULL);
    }
    case SBT_OP_SIGNAL:
    case SBT_OP_WAIT: {
        /* the command buffers before it first (their events may move the sync objects, their
         * barriers use the scratch clocks), then the object */
        int found = 0;
        if (s->kind == SK_QUEUE) {
            if ((st =
                     script_seek(a, id, x->kind == SBT_OP_SIGNAL ? SC_SIGNAL : SC_WAIT, 0, &found)))
                return st;
            if (found)
                s->i_sc++;
            else if (x->kind == SBT_OP_SIGNAL && (st = script_end(a, id)))
                return st; /* the fence's: the submission's work is all before it */
        }
        struct sync_o *o = sync_get(a, x->obj, FAM_SYNC, x->subkind);
        if (!o)
            return SBT_ENOMEM;
        if (x->kind == SBT_OP_SIGNAL) {
            if (host)
                return sync_signal(a, o, x->value, hostclock(a), NULL);
            if ((st = snap_full(a, id, a->tmp)))
                return st;
            return sync_signal(a, o, x->value, a->tmp, NULL);
        }
        const uint64_t *e, *av;
        sync_wait(a, o, x->value, &e, &av);
        if (!e)
            return 0;
        if (host) {
            vjoin(a->hv, e, a->n_act);
            return 0;
        }
        uint32_t cls = ALLCLS;
        if (s->kind == SK_QUEUE) {
            uint64_t stage = sync_info_stage(x);
            if (stage)
                cls = cls_dst(stage);
        }
        return join_into(a, id, cls, e, av);
    }
    case SBT_OP_STREAM_SYNC:
        if (x->obj >= 1 && x->obj <= a->n_streams && stream_ok(a, (uint32_t)x->obj)) {
            if (a->s[x->obj].kind == SK_QUEUE && (st = script_end(a, (uint32_t)x->obj)))
                return st;
            if ((st = snap_full(a, (uint32_t)x->obj, a->tmp)))
                return st;
            vjoin(a->hv, a->tmp, a->n_act);
        }
        return 0;
    case SBT_OP_DEVICE_SYNC:
        for (uint32_t t = 1; t <= a->n_streams; t++) {
            if (a->s[t].kind == SK_NONE || a->s[t].kind == SK_HOST ||
                (x->obj && a->s[t].device != x->obj))
                continue;
            if (a->s[t].kind == SK_QUEUE && (st = script_end(a, t)))
                return st;
            if ((st = snap_full(a, t, a->tmp)))
                return st;
            vjoin(a->hv, a->tmp, a->n_act);
        }
        return 0;
    default:
        return 0;
    }
}

/* ========================================================================================== */
/* The pass                                                                                   */
/* ========================================================================================== */

static void ra_free(struct ra *a)
{
    for (uint32_t i = 0; a->s && i <= a->n_streams; i++) {
        struct rstream *s = &a->s[i];
        for (int c = 0; c < NCLS; c++) {
            sched__free(s->ev[c]);
            sched__free(s->av[c]);
            sched__free(s->mv[c]);
        }
        for (uint32_t k = 0; k < s->n_recs; k++)
            rec_free(&s->recs[k]);
        sched__free(s->recs);
        sched__free(s->sc);
        sched__free(s->grants);
    }
    sched__free(a->s);
    sched__free(a->hv);
    sched__free(a->tmp);
    sched__free(a->tmp2);
    sched__free(a->x_addr);
    sched__free(a->k_addr);
    sched__free(a->bb);
    sbt_map_free(&a->bufs);
    for (uint32_t i = 0; i < a->n_hist; i++)
        sched__free(a->hist[i].s);
    sched__free(a->hist);
    sched__free(a->hist_free);
    sbt_map_free(&a->res);
    for (uint32_t i = 0; i < a->n_so; i++) {
        for (uint32_t k = 0; k < a->so[i].n; k++)
            snap_free(&a->so[i].q[k]);
        sched__free(a->so[i].q);
        sched__free(a->so[i].floor);
    }
    sched__free(a->so);
    sched__free(a->so_free);
    sched__free(a->ev_floor);
    sched__free(a->ev_seqs);
    sbt_map_free(&a->syncs);
}

/* Whether the trace records the program's declared order, and if not why (for messages). */
static const char *declared_why(const sbt_reader *r, uint32_t *api)
{
    uint32_t n;
    const struct sbt_device *d = sbt_reader_devices(r, &n);
    *api = n ? d[0].api : SBT_API_NONE;
    for (uint32_t i = 1; i < n; i++)
        if (d[i].api != *api)
            return "devices of several APIs";
    switch (*api) {
    case SBT_API_VULKAN:
    case SBT_API_CUDA:
    case SBT_API_SYNTH:
        return NULL;
    case SBT_API_NONE:
        return "no device in the trace";
    default:
        return "the trace was imported from another tool (no synchronisation recorded)";
    }
}

/* Which kernels' shaders use device addresses (the Vulkan MODULE record of their program). */
static int kernels_init(struct ra *a)
{
    const struct sbt_kernel *k = sbt_reader_kernels(a->r, &a->n_kernels);
    a->k_addr = sched__calloc(a->n_kernels ? a->n_kernels : 1, 1);
    if (!a->k_addr)
        return sched__fail(SBT_ENOMEM, "out of memory for the race analysis");
    for (uint32_t i = 0; i < a->n_kernels; i++) {
        const struct sbt_program *p = sbt_reader_program(a->r, k[i].program);
        if (!p || p->ext.kind != SBT_VK_EXT_MODULE || !p->ext.len)
            continue;
        struct sbt_payload_dec d;
        struct sbt_payload_rec r;
        if (sbt_payload_find(&d, p->ext.data, p->ext.len, SBT_VK_MODULE, &r) == 1)
            a->k_addr[i] = sbt_payload_arg(&r, 4) != 0;
        sbt_payload_dec_free(&d);
    }
    return 0;
}

int sched__race_create(sbt_reader *r, void (*fn)(void *ctx, const struct sched_race *f), void *ctx,
                       struct sched_ra **out)
{
    *out = NULL;
    struct ra *a = sched__calloc(1, sizeof *a);
    if (!a)
        return sched__fail(SBT_ENOMEM, "out of memory for the race analysis");
    a->r = r;
    a->fn = fn;
    a->ctx = ctx;
    const char *why = declared_why(r, &a->api);
    a->st.declared = why == NULL;
    a->st.why_not = why;
    int st = 0;
    if (why) {
        *out = (struct sched_ra *)a;
        return 0;
    }
    const struct sbt_stream *strs = sbt_reader_streams(r, &a->n_streams);
    if ((uint64_t)(a->n_streams + 1) * NCLS > MAX_ACTORS) {
        st = sched__fail(SBT_ELIMIT,
                         "race analysis: the trace has %u streams; it keeps a clock entry per "
                         "stream and supports at most %u",
                         a->n_streams, MAX_ACTORS / NCLS - 1);
        goto fail;
    }
    a->n_act = (a->n_streams + 1) * NCLS;
    a->s = sched__calloc(a->n_streams + 1, sizeof *a->s);
    a->hv = a->s ? vnew(a) : NULL;
    a->tmp = a->hv ? vnew(a) : NULL;
    a->tmp2 = a->tmp ? vnew(a) : NULL;
    if (!a->tmp2) {
        st = sched__fail(SBT_ENOMEM, "out of memory for the race analysis");
        goto fail;
    }
    for (uint32_t i = 1; i <= a->n_streams; i++) {
        const struct sbt_stream *t = &strs[i - 1];
        struct rstream *s = &a->s[i];
        s->device = t->device;
        if (t->kind == SBT_STREAM_HOST_THREAD)
            s->kind = SK_HOST;
        else if (t->kind == SBT_STREAM_QUEUE && a->api == SBT_API_VULKAN)
            s->kind = SK_QUEUE;
        else
            s->kind = SK_INORDER;
        s->cuda_flags = t->family;
        if (t->ext.kind == SBT_CUDA_EXT_STREAM && t->ext.len) {
            struct sbt_payload_dec d;
            struct sbt_payload_rec rr;
            if (sbt_payload_find(&d, t->ext.data, t->ext.len, SBT_CUDA_STREAM, &rr) == 1)
                s->cuda_origin = (uint32_t)sbt_payload_arg(&rr, 0);
            sbt_payload_dec_free(&d);
        }
    }
    if ((st = kernels_init(a)) < 0)
        goto fail;
    *out = (struct sched_ra *)a;
    return 0;
fail:
    ra_free(a);
    sched__free(a);
    return st;
}

int sched__race_add(struct sched_ra *ra, const struct sbt_op *x)
{
    struct ra *a = (struct ra *)ra;
    return a->st.declared ? op(a, x) : 0;
}

const struct sched_race_stats *sched__race_stats(const struct sched_ra *ra)
{
    return &((const struct ra *)ra)->st;
}

void sched__race_destroy(struct sched_ra *ra)
{
    if (!ra)
        return;
    ra_free((struct ra *)ra);
    sched__free(ra);
}

int sched_races_run(sbt_reader *r, const struct sched_race_opts *opts,
                    void (*fn)(void *ctx, const struct sched_race *f), void *ctx,
                    struct sched_race_stats *stats)
{
    (void)opts;
    struct sched_ra *a;
    int st = sched__race_create(r, fn, ctx, &a);
    if (st < 0) {
        if (stats)
            memset(stats, 0, sizeof *stats);
        return st;
    }
    sbt_cursor *c = NULL;
    if (sched__race_stats(a)->declared && (st = sbt_cursor_open(r, NULL, &c)) < 0)
        st = sched__fail_sbt(st);
    const struct sbt_op *x;
    int from_op = 0;
    while (c && (st = sbt_cursor_next(c, &x)) == 1) {
        if ((st = sched__race_add(a, x)) < 0) {
            from_op = 1;
            break;
        }
    }
    if (st < 0 && c && !from_op)
        st = sched__fail_sbt(st);
    sbt_cursor_close(c);
    if (stats)
        *stats = *sched__race_stats(a);
    sched__race_destroy(a);
    return st < 0 ? st : 0;
}
