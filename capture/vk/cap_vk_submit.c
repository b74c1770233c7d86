/*
 * capture/vk/cap_vk_submit.c — what happens at vkQueueSubmit: command-buffer recordings expanded
 * into ops with exact resource accesses, their device writes remembered (cap_vk_mapped.c)
 * until a wait tells the host they are done, and what a wait tells.
 *
 * Resources. A trace resource is a VkDeviceMemory allocation (its capture id). A buffer bound
 * at memoryOffset M turns a buffer range [a, a+n) into the access (memory, M + a, n), so
 * accesses from buffers that alias one allocation overlap exactly where the bytes do.
 *
 * Order. The submission is built before the driver sees it (cap_vk_sync.c): the host writes it
 * can read are published first, its device writes are pending from then on (so that a publish
 * of another thread leaves those bytes alone), and its ops take their place in the trace
 * (cap_seq_take) before the driver can finish it, so that a HOST_READ of its output always
 * comes after it. A wait on a fence completes that submission and every earlier one on its
 * queue (queues finish in order on every driver we know; the specification promises less),
 * and what those waited for on other queues, through semaphores, transitively (reached_close:
 * found on an NVIDIA H200, where a fence of queue 1 was all the host waited for and queue 0's
 * output was never read back into the program's copy of its mapping).
 *
 * Indirect dispatches get their group counts at submit when the arguments sit in mapped
 * host-visible memory no unfinished device work writes (the usual case: the host wrote them);
 * arguments produced on the device, or in memory the program has not mapped, are not read
 * (grid 0, DISPATCH "groups known" 0): replay takes them from the buffer it rebuilt.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

/* ========================================================================================== */
/* Waits                                                                                      */
/* ========================================================================================== */

/* Adds (queue, serial) to r; 1 when r changed. */
static int reached_add(struct cap_reached *r, uint64_t queue, uint64_t serial)
{
    for (uint32_t i = 0; i < r->n; i++)
        if (r->v[i].queue == queue) {
            if (serial <= r->v[i].serial)
                return 0;
            r->v[i].serial = serial;
            return 1;
        }
    if (r->n == CAP_REACHED_MAX) {
        r->overflow = 1; /* the rest complete at a later wait, if there is one */
        return 0;
    }
    r->v[r->n].queue = queue;
    r->v[r->n].serial = serial;
    r->n++;
    return 1;
}

void cap_sync_reached(struct cap_sync *s, uint64_t value, struct cap_reached *r)
{
    if (!s->n_sig)
        return;
    if (s->kind == SBT_SYNC_FENCE) {
        const struct cap_sig *g = &s->sig[s->n_sig - 1];
        reached_add(r, g->queue, g->serial);
        return;
    }
    for (uint32_t i = 0; i < s->n_sig; i++)
        if (s->sig[i].value <= value)
            reached_add(r, s->sig[i].queue, s->sig[i].serial);
}

void cap_sync_free(struct cap_sync *s)
{
    free(s->sig);
    s->sig = NULL;
    s->n_sig = s->cap_sig = 0;
}

static struct cap_queue *queue_by_id(uint64_t id)
{
    uint64_t pos = 0, k, v;
    while (sbt_map_next(&cap.objs[CAP_T_QUEUE], &pos, &k, &v)) {
        struct cap_queue *q = (struct cap_queue *)(uintptr_t)v;
        if (q && q->o.id == id)
            return q;
    }
    return NULL;
}

/* Adds to r what the submissions r names waited for, and what those waited for, until nothing
 * changes: a submission that finished waited for its semaphores, so their signals finished
 * too (a fence on queue 1 whose work waited on queue 0's semaphore tells of both). cap.mu. */
static void reached_close(struct cap_reached *r)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t i = 0; i < r->n; i++) {
            struct cap_queue *q = queue_by_id(r->v[i].queue);
            if (!q)
                continue;
            for (size_t k = 0; k < q->n_waits && q->waits[k].serial <= r->v[i].serial; k++) {
                const struct cap_qwait *w = &q->waits[k];
                struct cap_reached more = {0};
                if (w->kind == CAP_QW_TIMELINE) {
                    struct cap_sync *s = cap_obj_find(w->sem, CAP_T_SEM);
                    if (s && s->o.id == w->sem_id) /* not destroyed since */
                        cap_sync_reached(s, w->value, &more);
                } else if (w->queue) { /* binary, or the one set an event waited for */
                    reached_add(&more, w->queue, w->at_serial);
                }
                for (uint32_t m = 0; m < more.n; m++)
                    changed |= reached_add(r, more.v[m].queue, more.v[m].serial);
                r->overflow |= more.overflow;
            }
        }
    }
}

/* The waits of q's finished submissions need no more closing (cap.mu). */
static void waits_prune(struct cap_queue *q)
{
    size_t k = 0;
    while (k < q->n_waits && q->waits[k].serial <= q->done_serial)
        k++;
    if (k) {
        memmove(q->waits, q->waits + k, (q->n_waits - k) * sizeof *q->waits);
        q->n_waits -= k;
    }
}

void cap_reached_complete(struct cap_dev *dev, struct cap_reached *r, uint64_t now)
{
    pthread_mutex_lock(&cap.mu);
    reached_close(r);
    struct cap_queue *dq[CAP_REACHED_MAX];
    uint32_t n_dq = 0;
    for (uint32_t i = 0; i < r->n; i++) {
        struct cap_queue *q = queue_by_id(r->v[i].queue);
        if (q && q->n_deferred)
            dq[n_dq++] = q;
    }
    pthread_mutex_unlock(&cap.mu);
    if (r->overflow)
        cap_unmodelled(dev,
                       "a wait telling of work finished on more than 64 queues (the rest is not "
                       "seen finished there)",
                       SBT_UNMODELLED_AFFECTS);
    for (uint32_t i = 0; i < n_dq; i++) /* finished: it ran, unseen by cap_cpu_drain */
        cap_queue_flush_deferred(dq[i]);
    for (uint32_t i = 0; i < r->n; i++)
        cap_complete(dev, r->v[i].queue, r->v[i].serial, now);
    pthread_mutex_lock(&cap.mu);
    for (uint32_t i = 0; i < r->n; i++) {
        struct cap_queue *q = queue_by_id(r->v[i].queue);
        if (q)
            waits_prune(q);
    }
    pthread_mutex_unlock(&cap.mu);
}

/* Notes that submission serial of q waits on s (a semaphore or an event) for value (cap.mu).
 * Out of memory: forgotten (what the wait would have told then completes at a later wait, as
 * without it; a CPU device's queue is then not drained early: cap_queue_can_drain says no). */
static void queue_waits(struct cap_queue *q, uint64_t serial, struct cap_sync *s, uint64_t value)
{
    struct cap_qwait w = {.serial = serial, .kind = CAP_QW_UNKNOWN};
    if (s->kind == SBT_SYNC_TIMELINE_SEMAPHORE) {
        w.kind = CAP_QW_TIMELINE;
        w.value = value;
    } else if (s->kind == SBT_SYNC_EVENT) {
        /* the set it waits for is known only when one device set is all there has been
         * since the host last set or reset it (a wait may see any set that came before) */
        w.kind = CAP_QW_EVENT;
        if (s->n_sig == 1) {
            w.queue = s->sig[0].queue;
            w.at_serial = s->sig[0].serial;
        }
    } else if (s->n_sig) { /* a binary semaphore's wait takes its last signal */
        const struct cap_sig *g = &s->sig[s->n_sig - 1];
        w.kind = CAP_QW_BINARY;
        w.queue = g->queue;
        w.at_serial = g->serial;
    } /* else signalled by nothing the layer saw (an import, a swapchain): unknown */
    w.sem = s->o.handle;
    w.sem_id = s->o.id;
    waits_prune(q); /* those a device or queue idle wait finished */
    if (q->n_waits == q->cap_waits) {
        size_t c = q->cap_waits ? 2 * q->cap_waits : 16;
        struct cap_qwait *nw = realloc(q->waits, c * sizeof *nw);
        if (!nw) {
            q->stalled |= 2; /* a wait not noted: never drained early (cap_queue_can_drain) */
            return;
        }
        q->waits = nw;
        q->cap_waits = c;
    }
    q->waits[q->n_waits++] = w;
}

/* Notes a signal of s by submission serial of queue (cap.mu). When the list is full, the
 * signals whose submissions the host has seen finish go first (what they would complete is
 * complete); an event keeps all (which set the host sees is told by their number). Out of
 * memory: the oldest is dropped, and the trace says completion was lost. */
static void sync_signaled(struct cap_sync *s, uint64_t value, uint64_t queue, uint64_t serial)
{
    s->n_total++;
    if (s->n_sig == s->cap_sig && s->kind != SBT_SYNC_EVENT) {
        uint32_t keep = 0;
        for (uint32_t i = 0; i < s->n_sig; i++) {
            struct cap_queue *q = i + 1 < s->n_sig ? queue_by_id(s->sig[i].queue) : NULL;
            if (i + 1 == s->n_sig || !q || s->sig[i].serial > q->done_serial)
                s->sig[keep++] = s->sig[i];
        }
        s->n_sig = keep;
    }
    if (s->n_sig == s->cap_sig) {
        uint32_t c = s->cap_sig ? 2 * s->cap_sig : 4;
        struct cap_sig *v = realloc(s->sig, c * sizeof *v);
        if (!v) {
            cap_unmodelled(s->o.dev,
                           "semaphore signals (out of memory: a wait may not complete the work "
                           "it tells of)",
                           SBT_UNMODELLED_AFFECTS);
            memmove(s->sig, s->sig + 1, (s->n_sig - 1) * sizeof *s->sig);
            s->n_sig--;
        } else {
            s->sig = v;
            s->cap_sig = c;
        }
    }
    s->sig[s->n_sig++] = (struct cap_sig){value, queue, serial};
}

static struct cap_sync *event_by_id(uint64_t id)
{
    uint64_t pos = 0, k, v;
    while (sbt_map_next(&cap.objs[CAP_T_EVENT], &pos, &k, &v)) {
        struct cap_sync *s = (struct cap_sync *)(uintptr_t)v;
        if (s && s->o.id == id)
            return s;
    }
    return NULL;
}

void cap_submit_events(struct cap_queue *q, uint64_t serial, const struct cap_ev *chain)
{
    for (const struct cap_ev *e = chain; e; e = e->next) {
        if (e->type != CAP_EV_OP ||
            (e->op.kind != SBT_OP_EVENT_RECORD && e->op.kind != SBT_OP_EVENT_WAIT))
            continue;
        struct cap_sync *s = event_by_id(e->op.obj);
        if (!s)
            continue;
        if (e->op.kind == SBT_OP_EVENT_RECORD)
            sync_signaled(s, 0, q->o.id, serial);
        else
            queue_waits(q, serial, s, 0);
    }
}

/* ========================================================================================== */
/* Draining a CPU device's queue                                                              */
/* ========================================================================================== */

static int ready_upto(struct cap_dev *dev, struct cap_queue *q, uint64_t upto, int depth);

/* Whether wait w of q is signalled or will be by submitted work that can drain: 1 yes, 0 no
 * (the host, or a submission yet to come, has to do it), -1 not known. The driver is asked for
 * counter values and event states: what the host already did counts. */
static int wait_state(struct cap_dev *dev, struct cap_queue *q, const struct cap_qwait *w,
                      int depth)
{
    uint64_t on_queue = 0, at = 0;
    if (w->kind == CAP_QW_UNKNOWN) {
        return -1;
    } else if (w->kind == CAP_QW_TIMELINE) {
        struct cap_sync *s = cap_obj_find(w->sem, CAP_T_SEM);
        uint64_t cur = 0;
        if (!s || s->o.id != w->sem_id)
            return -1;
        if (dev->fn.GetSemaphoreCounterValue &&
            dev->fn.GetSemaphoreCounterValue(dev->handle, (VkSemaphore)(uintptr_t)w->sem, &cur) ==
                VK_SUCCESS &&
            cur >= w->value)
            return 1;
        /* a submitted signal of the value or a later one */
        for (uint32_t i = s->n_sig; i-- > 0 && !on_queue;) {
            const struct cap_sig *g = &s->sig[i];
            if (g->value >= w->value && g->queue) {
                on_queue = g->queue;
                at = g->serial;
            }
        }
        if (!on_queue)
            return 0; /* the host has yet to signal it, or a submission yet to come */
    } else if (w->kind == CAP_QW_EVENT) {
        struct cap_sync *s = cap_obj_find(w->sem, CAP_T_EVENT);
        if (!s || s->o.id != w->sem_id)
            return -1;
        if (dev->fn.GetEventStatus(dev->handle, (VkEvent)(uintptr_t)w->sem) == VK_EVENT_SET)
            return 1;
        if (!w->queue)
            return s->n_sig ? -1 : 0; /* set by no device work submitted since the host's */
        on_queue = w->queue;
        at = w->at_serial;
    } else {
        on_queue = w->queue;
        at = w->at_serial;
    }
    if (on_queue == q->o.id)
        return 1; /* earlier work of this queue: drained with it */
    struct cap_queue *o = queue_by_id(on_queue);
    if (!o)
        return -1;
    return at <= o->done_serial ? 1 : ready_upto(dev, o, at, depth + 1);
}

/* The states of the waits of q's unfinished submissions up to upto, combined: 0 if one is 0
 * (neither it nor what follows it can start), else -1 if one is -1, else 1. depth bounds the
 * chase through other queues (deeper is "not known"). */
static int ready_upto(struct cap_dev *dev, struct cap_queue *q, uint64_t upto, int depth)
{
    if (depth > 8)
        return -1;
    int st = (q->stalled & 2) ? -1 : 1;
    for (size_t k = 0; k < q->n_waits && q->waits[k].serial <= upto; k++) {
        if (q->waits[k].serial <= q->done_serial)
            continue;
        int w = wait_state(dev, q, &q->waits[k], depth);
        if (w == 0)
            return 0;
        if (w < 0)
            st = -1;
    }
    return st;
}

int cap_queue_can_drain(struct cap_dev *dev, struct cap_queue *q, uint64_t *blocked_from)
{
    *blocked_from = 0;
    int st = (q->stalled & 2) ? -1 : 1;
    for (size_t k = 0; k < q->n_waits; k++) {
        if (q->waits[k].serial <= q->done_serial)
            continue;
        int w = wait_state(dev, q, &q->waits[k], 0);
        if (w == 0) {
            *blocked_from = q->waits[k].serial;
            return 0;
        }
        if (w < 0)
            st = -1;
    }
    return st;
}

uint64_t cap_blocked_from(uint64_t queue)
{
    for (uint32_t i = 0; i < CAP_MAX_BLOCKED; i++)
        if (atomic_load(&cap.blocked[i].queue) == queue)
            return atomic_load(&cap.blocked[i].from);
    return 0;
}

/* ========================================================================================== */
/* Expansion of a command buffer into ops                                                     */
/* ========================================================================================== */

#define MAX_DYN 64u

struct xstate {
    struct cap_dev *dev;
    struct cap_queue *q;
    uint64_t serial, t0, t1;
    struct cap_cmdbuf *cb;
    struct cap_ev **tail; /* where the next op goes */
    uint32_t n_ops;
    /* compute state while walking */
    struct cap_pipeline *pipe;
    uint64_t set[CAP_MAX_SETS];
    uint32_t dyn[CAP_MAX_SETS][MAX_DYN], n_dyn[CAP_MAX_SETS];
    /* push descriptors: set number i reads pset[i] while is_push[i] (the sets are the
     * submission's, reshaped when a push names another set layout) */
    struct cap_dset pset[CAP_MAX_SETS];
    uint8_t is_push[CAP_MAX_SETS];
    uint8_t push[256];
    uint32_t push_hi;
    /* per op */
    struct sbt_access *acc;
    uint32_t n_acc, cap_acc;
    struct sbt_payload_enc pay;
    struct cap_timing *timing; /* --timing: the timed ops of the submission */
    int failed;
    int nocache; /* the ops depend on more than the recording and the shadows: not cached */
};

static uint64_t id_of(uint64_t handle, uint32_t t)
{
    struct cap_obj *o = cap_obj_find(handle, t);
    return o ? o->id : 0;
}

/* One more access of the op being built. */
static void acc_push(struct xstate *x, uint64_t resource, uint64_t off, uint64_t len, uint32_t mode)
{
    if (x->n_acc == x->cap_acc) {
        uint32_t c = x->cap_acc ? x->cap_acc * 2 : 16;
        struct sbt_access *p = realloc(x->acc, c * sizeof *p);
        if (!p) {
            x->failed = 1;
            return;
        }
        x->acc = p;
        x->cap_acc = c;
    }
    x->acc[x->n_acc++] = (struct sbt_access){resource, off, len, mode};
}

static void add_acc(struct xstate *x, struct cap_buf *b, uint64_t off, uint64_t len, uint32_t mode)
{
    if (!b || !b->mem || !len)
        return;
    if (len == VK_WHOLE_SIZE)
        len = off < b->size ? b->size - off : 0;
    uint64_t a = b->mem_off + off;
    if (a >= b->mem->size)
        return;
    if (len > b->mem->size - a)
        len = b->mem->size - a;
    acc_push(x, b->mem->o.id, a, len, mode);
    if (mode & SBT_ACCESS_WRITE)
        x->q->writes_mapped |= cap_mem_pend(b->mem, a, len, x->q->o.id, x->serial);
}

/* Finishes the op being built: accesses and payload are copied into a new event (one
 * allocation) on the queue. */
static struct cap_ev *op_done(struct xstate *x, uint32_t kind, const char *name)
{
    struct cap_ev *e = sbt_payload_enc_status(&x->pay) ? NULL : cap_ev_new_op(x->n_acc, x->pay.len);
    if (!e) {
        x->failed = 1;
        return NULL;
    }
    e->dev_id = x->dev->id;
    e->queue_id = x->q->o.id;
    e->name = name;
    e->op.kind = kind;
    e->op.host_begin = x->t0;
    e->op.host_end = x->t1;
    if (x->n_acc)
        memcpy(e->acc, x->acc, x->n_acc * sizeof *e->acc);
    if (x->pay.len)
        memcpy(e->payload, x->pay.buf, x->pay.len);
    x->n_acc = 0;
    sbt_payload_enc_reset(&x->pay);
    *x->tail = e;
    x->tail = &e->next;
    x->n_ops++;
    return e;
}

/* --timing: e gets the device times of the timestamps around command index of x->cb. */
static void timed(struct xstate *x, struct cap_ev *e, uint32_t index)
{
    if (!e || !x->cb->n_ts)
        return;
    uint32_t pair = cap_ts_pair(x->cb, index);
    if (pair != UINT32_MAX)
        cap_timing_add(&x->timing, e, x->cb, pair);
}

/* An UNSUPPORTED marker for what (a static string, affecting) on the queue, where the device
 * meets it; counted once per submission that carries it. */
static void unmod_op(struct xstate *x, const char *what)
{
    uint32_t id = cap_unmod_id(what, SBT_UNMODELLED_AFFECTS, 0);
    cap_vk_count(id);
    struct cap_ev *e = cap_unmod_marker(x->dev, id, x->t0);
    if (!e) {
        x->failed = 1;
        return;
    }
    e->queue_id = x->q->o.id;
    e->op.host_end = x->t1;
    *x->tail = e;
    x->tail = &e->next;
    x->n_ops++;
    x->nocache = 1; /* counted at every submission */
}

static int is_uniform(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER ||
           t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC ||
           t == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
}

static int is_dynamic(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC ||
           t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
}

/* The access a dispatch makes through (set, binding): 0 when the shader does not use it. */
static uint32_t binding_mode(const struct cap_pipeline *p, uint32_t set, uint32_t binding,
                             uint32_t type)
{
    if (is_uniform(type))
        return SBT_ACCESS_READ;
    if (!p->refl_ok)
        return SBT_ACCESS_RW;
    for (uint32_t i = 0; i < p->n_acc; i++)
        if (p->acc[i].set == set && p->acc[i].binding == binding)
            return p->acc[i].access;
    return 0;
}

/* ---- images ------------------------------------------------------------------------------ */

/* Accesses one image copy region may add; past it, one read-write range covers them (the bytes
 * between the runs are rewritten with what they held: exact for slices and digests). */
#define IMG_MAX_RUNS 256u

/* Device work of this submission writes image im: when its memory is host-visible, its bytes
 * there are the device's, not host writes (cap_vk_mapped.c), and the host may read a linear
 * one once a wait says the work finished. */
static void img_written(struct xstate *x, struct cap_image *im)
{
    if (im->mem && (im->mem->props & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) {
        x->q->writes_mapped |=
            cap_mem_pend(im->mem, im->mem_off, im->mem_size, x->q->o.id, x->serial);
        x->nocache = 1; /* the cached copy of these ops would not pend it */
    }
}

struct acc_to {
    struct xstate *x;
    uint64_t id;
    uint32_t mode;
};

/* One run of packed bytes: joined to the op's last access when it continues it (the levels of a
 * view, the rows of a box). */
static void acc_run(void *ctx, uint64_t off, uint64_t len)
{
    struct acc_to *c = ctx;
    struct sbt_access *l = c->x->n_acc ? &c->x->acc[c->x->n_acc - 1] : NULL;
    if (l && l->resource == c->id && l->mode == c->mode && l->offset + l->len == off)
        l->len += len;
    else
        acc_push(c->x, c->id, off, len, c->mode);
}

/* The accesses of box b of image im (one aspect); returns the bytes it covers. */
static uint64_t img_box_acc(struct xstate *x, struct cap_image *im, const struct sbt_vk_box *b,
                            uint32_t mode)
{
    uint64_t n = 0, lo = 0, hi = 0;
    if (!im || !im->packed_size ||
        sbt_vk_image_box_runs(&im->desc, b, NULL, NULL, &n, &lo, &hi) < 0 || !n)
        return 0; /* a box outside the image: the driver had the program's error too */
    struct sbt_vk_subres s;
    sbt_vk_image_subres(&im->desc, b->aspect, b->mip, &s);
    uint64_t bytes = (uint64_t)b->n_layers * s.block_bytes;
    for (int i = 0; i < 3; i++)
        bytes *= (b->off[i] + b->ext[i] + s.block[i] - 1) / s.block[i] - b->off[i] / s.block[i];
    struct acc_to c = {x, im->o.id, mode};
    if (n == 1 || (n <= IMG_MAX_RUNS && (mode & SBT_ACCESS_WRITE)))
        sbt_vk_image_box_runs(&im->desc, b, acc_run, &c, NULL, NULL, NULL);
    else
        acc_push(x, im->o.id, lo, hi - lo, mode | SBT_ACCESS_READ);
    if (mode & SBT_ACCESS_WRITE)
        img_written(x, im);
    return bytes;
}

static int32_t s32(uint64_t v)
{
    return (int32_t)(uint32_t)v;
}

/* The box of one aspect of an image copy region: 4 subresource arguments (aspect, mip, layer,
 * count) at sub, texel offsets at off (x, y, z), extent ext. A 3D image's layers are its z. */
static struct sbt_vk_box region_box(const struct cap_image *im, uint32_t aspect,
                                    const uint64_t *sub, const int32_t off[3],
                                    const uint32_t ext[3])
{
    struct sbt_vk_box b = {aspect,           (uint32_t)sub[1], (uint32_t)sub[2],
                           (uint32_t)sub[3], {0, 0, 0},        {ext[0], ext[1], ext[2]}};
    for (int i = 0; i < 3; i++)
        b.off[i] = off[i] < 0 ? UINT32_MAX : (uint32_t)off[i]; /* negative: outside, no access */
    if (im && b.n_layers == VK_REMAINING_ARRAY_LAYERS && b.layer < im->desc.layers)
        b.n_layers = im->desc.layers - b.layer;
    if (im && im->desc.type == VK_IMAGE_TYPE_3D) {
        b.layer = 0;
        b.n_layers = 1;
    }
    return b;
}

/* The buffer side of a buffer<->image copy region r (13 arguments, sbt_vk.h) of one aspect
 * of image im: its rows where exact, else the range they span (read-write when writing). */
static void buf_region_acc(struct xstate *x, struct cap_buf *buf, const struct cap_image *im,
                           uint32_t aspect, const uint64_t *r, uint32_t mode)
{
    struct sbt_vk_subres s;
    if (!buf || !im || !im->packed_size ||
        sbt_vk_image_subres(&im->desc, aspect, (uint32_t)r[4], &s) < 0)
        return;
    uint64_t w = r[10], h = r[11], d = r[12], layers = r[6];
    if (layers == VK_REMAINING_ARRAY_LAYERS)
        layers = r[5] < im->desc.layers ? im->desc.layers - r[5] : 0;
    if (im->desc.type == VK_IMAGE_TYPE_3D)
        layers = 1;
    uint64_t rl = r[1] ? r[1] : w, ih = r[2] ? r[2] : h;
    uint64_t bw = s.block[0], bh = s.block[1];
    uint64_t row = (rl + bw - 1) / bw * s.block_bytes, slice = (ih + bh - 1) / bh * row;
    uint64_t wb = (w + bw - 1) / bw * s.block_bytes, hb = (h + bh - 1) / bh, n_s = layers * d;
    if (!wb || !hb || !n_s || w > UINT32_MAX || h > UINT32_MAX || d > UINT32_MAX ||
        n_s > UINT32_MAX)
        return;
    uint64_t off = r[0], span = (n_s - 1) * slice + (hb - 1) * row + wb;
    int rows_tight = row == wb, slices_tight = rows_tight && slice == hb * row;
    uint64_t n = slices_tight ? 1 : rows_tight ? n_s : n_s * hb;
    if (n == 1 || !(mode & SBT_ACCESS_WRITE) || n > IMG_MAX_RUNS) {
        add_acc(x, buf, off, span,
                n == 1 || !(mode & SBT_ACCESS_WRITE) ? mode : mode | SBT_ACCESS_READ);
        return;
    }
    for (uint64_t z = 0; z < n_s; z++) {
        if (rows_tight) {
            add_acc(x, buf, off + z * slice, hb * row, mode);
            continue;
        }
        for (uint64_t y = 0; y < hb; y++)
            add_acc(x, buf, off + z * slice + y * row, wb, mode);
    }
}

/* vkCmdCopyBufferToImage / vkCmdCopyImageToBuffer: one COPY op. */
static void buf_img_copy_op(struct xstate *x, const struct sbt_payload_rec *r, uint32_t index)
{
    int to_img = r->call == SBT_VK_CMD_COPY_BUFFER_TO_IMAGE;
    struct cap_buf *buf = cap_obj_find(sbt_payload_arg(r, to_img ? 0 : 2), CAP_T_BUF);
    struct cap_image *im = cap_obj_find(sbt_payload_arg(r, to_img ? 1 : 0), CAP_T_IMAGE);
    if (!im || !im->packed_size) /* made before the capture, or a kind it cannot lay out */
        unmod_op(x, to_img ? "vkCmdCopyBufferToImage (image not captured)"
                           : "vkCmdCopyImageToBuffer (image not captured)");
    uint32_t n = (uint32_t)sbt_payload_arg(r, 3);
    if (r->n_arg < 4 || n > (r->n_arg - 4) / 13)
        n = 0;
    struct sbt_payload_enc *p = &x->pay;
    sbt_payload_enc_begin(p, to_img ? SBT_VK_COPY_BUFFER_TO_IMAGE : SBT_VK_COPY_IMAGE_TO_BUFFER);
    if (to_img) {
        sbt_payload_enc_arg(p, buf ? buf->o.id : 0);
        sbt_payload_enc_arg(p, im ? im->o.id : 0);
        sbt_payload_enc_arg(p, sbt_payload_arg(r, 2));
    } else {
        sbt_payload_enc_arg(p, im ? im->o.id : 0);
        sbt_payload_enc_arg(p, sbt_payload_arg(r, 1));
        sbt_payload_enc_arg(p, buf ? buf->o.id : 0);
    }
    sbt_payload_enc_arg(p, n);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t *g = r->arg + 4 + 13 * i;
        for (int k = 0; k < 13; k++)
            sbt_payload_enc_arg(p, g[k]);
        int32_t off[3] = {s32(g[7]), s32(g[8]), s32(g[9])};
        uint32_t ext[3] = {(uint32_t)g[10], (uint32_t)g[11], (uint32_t)g[12]};
        uint64_t sub[4] = {g[3], g[4], g[5], g[6]};
        for (uint32_t a = 1; a <= VK_IMAGE_ASPECT_PLANE_2_BIT && a; a <<= 1) {
            if (!(g[3] & a))
                continue;
            struct sbt_vk_box b = region_box(im, a, sub, off, ext);
            buf_region_acc(x, buf, im, a, g, to_img ? SBT_ACCESS_READ : SBT_ACCESS_WRITE);
            bytes += img_box_acc(x, im, &b, to_img ? SBT_ACCESS_WRITE : SBT_ACCESS_READ);
        }
    }
    sbt_payload_enc_arg(p, x->cb->o.id);
    sbt_payload_enc_arg(p, index);
    sbt_payload_enc_end(p, NULL, 0);
    struct cap_ev *e =
        op_done(x, SBT_OP_COPY, to_img ? "vkCmdCopyBufferToImage" : "vkCmdCopyImageToBuffer");
    timed(x, e, index);
    if (e) {
        e->op.subkind = SBT_COPY_D2D;
        e->op.bytes = bytes;
        e->op.flags |= SBT_OPF_BYTES;
    }
}

/* The block extent of one aspect of an image (1, 1, 1 when unknown). */
static void aspect_block(const struct cap_image *im, uint32_t aspect, uint32_t blk[3])
{
    struct sbt_vk_subres s;
    blk[0] = blk[1] = blk[2] = 1;
    if (im && im->packed_size && sbt_vk_image_subres(&im->desc, aspect, 0, &s) == 0)
        memcpy(blk, s.block, sizeof s.block);
}

/* vkCmdCopyImage: one COPY op. A region's extent is in source texels (blocks of the source
 * become blocks of the destination); a 3D image's depth pairs with the other's layers. */
static void img_copy_op(struct xstate *x, const struct sbt_payload_rec *r, uint32_t index)
{
    struct cap_image *src = cap_obj_find(sbt_payload_arg(r, 0), CAP_T_IMAGE);
    struct cap_image *dst = cap_obj_find(sbt_payload_arg(r, 2), CAP_T_IMAGE);
    if (!src || !dst || !src->packed_size || !dst->packed_size)
        unmod_op(x, "vkCmdCopyImage (image not captured)");
    uint32_t n = (uint32_t)sbt_payload_arg(r, 4);
    if (r->n_arg < 5 || n > (r->n_arg - 5) / 17)
        n = 0;
    struct sbt_payload_enc *p = &x->pay;
    sbt_payload_enc_begin(p, SBT_VK_COPY_IMAGE);
    sbt_payload_enc_arg(p, src ? src->o.id : 0);
    sbt_payload_enc_arg(p, sbt_payload_arg(r, 1));
    sbt_payload_enc_arg(p, dst ? dst->o.id : 0);
    sbt_payload_enc_arg(p, sbt_payload_arg(r, 3));
    sbt_payload_enc_arg(p, n);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t *g = r->arg + 5 + 17 * i;
        for (int k = 0; k < 17; k++)
            sbt_payload_enc_arg(p, g[k]);
        int32_t so[3] = {s32(g[4]), s32(g[5]), s32(g[6])};
        int32_t dof[3] = {s32(g[11]), s32(g[12]), s32(g[13])};
        uint32_t ext[3] = {(uint32_t)g[14], (uint32_t)g[15], (uint32_t)g[16]};
        int s3 = src && src->desc.type == VK_IMAGE_TYPE_3D;
        int d3 = dst && dst->desc.type == VK_IMAGE_TYPE_3D;
        for (uint32_t a = 1; a <= VK_IMAGE_ASPECT_PLANE_2_BIT; a <<= 1) {
            if (g[0] & a) {
                struct sbt_vk_box b = region_box(src, a, g, so, ext);
                img_box_acc(x, src, &b, SBT_ACCESS_READ);
            }
        }
        /* the destination's aspects pair with the source's in order (planes with color) */
        for (uint32_t a = 1; a <= VK_IMAGE_ASPECT_PLANE_2_BIT; a <<= 1) {
            if (!(g[7] & a))
                continue;
            uint32_t sa = (uint32_t)(g[0] & a) ? a : (uint32_t)(g[0] & -g[0]);
            uint32_t sb[3], db[3], de[3];
            aspect_block(src, sa, sb);
            aspect_block(dst, a, db);
            for (int k = 0; k < 3; k++)
                de[k] = sb[k] == db[k] ? ext[k] : (ext[k] + sb[k] - 1) / sb[k] * db[k];
            uint64_t sub[4] = {g[7], g[8], g[9], g[10]};
            if (s3 && !d3) { /* the source's slices are the destination's layers */
                sub[3] = ext[2];
                de[2] = 1;
            } else if (!s3 && d3) {
                uint64_t nl = g[3] == VK_REMAINING_ARRAY_LAYERS && src && g[2] < src->desc.layers
                                  ? src->desc.layers - g[2]
                                  : g[3];
                de[2] = (uint32_t)nl;
            }
            struct sbt_vk_box b = region_box(dst, a, sub, dof, de);
            bytes += img_box_acc(x, dst, &b, SBT_ACCESS_WRITE);
        }
    }
    sbt_payload_enc_arg(p, x->cb->o.id);
    sbt_payload_enc_arg(p, index);
    sbt_payload_enc_end(p, NULL, 0);
    struct cap_ev *e = op_done(x, SBT_OP_COPY, "vkCmdCopyImage");
    timed(x, e, index);
    if (e) {
        e->op.subkind = SBT_COPY_D2D;
        e->op.bytes = bytes;
        e->op.flags |= SBT_OPF_BYTES;
    }
}

/* The box two blit corners span (a 3D image's layers are its z). */
static struct sbt_vk_box blit_box(const struct cap_image *im, uint32_t aspect, const uint64_t *g)
{
    int32_t lo[3], hi[3];
    uint32_t ext[3];
    for (int k = 0; k < 3; k++) {
        int32_t a = s32(g[4 + k]), b = s32(g[7 + k]);
        lo[k] = a < b ? a : b;
        hi[k] = a < b ? b : a;
        ext[k] = (uint32_t)((int64_t)hi[k] - lo[k]);
    }
    return region_box(im, aspect, g, lo, ext);
}

/* vkCmdBlitImage: one COPY op. */
static void blit_op(struct xstate *x, const struct sbt_payload_rec *r, uint32_t index)
{
    struct cap_image *src = cap_obj_find(sbt_payload_arg(r, 0), CAP_T_IMAGE);
    struct cap_image *dst = cap_obj_find(sbt_payload_arg(r, 2), CAP_T_IMAGE);
    if (!src || !dst || !src->packed_size || !dst->packed_size)
        unmod_op(x, "vkCmdBlitImage (image not captured)");
    uint32_t n = (uint32_t)sbt_payload_arg(r, 5);
    if (r->n_arg < 6 || n > (r->n_arg - 6) / 20)
        n = 0;
    struct sbt_payload_enc *p = &x->pay;
    sbt_payload_enc_begin(p, SBT_VK_BLIT_IMAGE);
    sbt_payload_enc_arg(p, src ? src->o.id : 0);
    sbt_payload_enc_arg(p, sbt_payload_arg(r, 1));
    sbt_payload_enc_arg(p, dst ? dst->o.id : 0);
    sbt_payload_enc_arg(p, sbt_payload_arg(r, 3));
    sbt_payload_enc_arg(p, sbt_payload_arg(r, 4));
    sbt_payload_enc_arg(p, n);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t *g = r->arg + 6 + 20 * i;
        for (int k = 0; k < 20; k++)
            sbt_payload_enc_arg(p, g[k]);
        for (uint32_t a = 1; a <= VK_IMAGE_ASPECT_PLANE_2_BIT; a <<= 1) {
            if (g[0] & a) {
                struct sbt_vk_box b = blit_box(src, a, g);
                img_box_acc(x, src, &b, SBT_ACCESS_READ);
            }
            if (g[10] & a) {
                struct sbt_vk_box b = blit_box(dst, a, g + 10);
                bytes += img_box_acc(x, dst, &b, SBT_ACCESS_WRITE);
            }
        }
    }
    sbt_payload_enc_arg(p, x->cb->o.id);
    sbt_payload_enc_arg(p, index);
    sbt_payload_enc_end(p, NULL, 0);
    struct cap_ev *e = op_done(x, SBT_OP_COPY, "vkCmdBlitImage");
    timed(x, e, index);
    if (e) {
        e->op.subkind = SBT_COPY_D2D;
        e->op.bytes = bytes;
        e->op.flags |= SBT_OPF_BYTES;
    }
}

/* vkCmdClearColorImage / vkCmdClearDepthStencilImage: one FILL op; level and layer counts
 * resolved in its payload. */
static void clear_op(struct xstate *x, const struct sbt_payload_rec *r, uint32_t index)
{
    struct cap_image *im = cap_obj_find(sbt_payload_arg(r, 0), CAP_T_IMAGE);
    if (!im || !im->packed_size)
        unmod_op(x, "vkCmdClear*Image (image not captured)");
    uint32_t n = (uint32_t)sbt_payload_arg(r, 7);
    if (r->n_arg < 8 || n > (r->n_arg - 8) / 5)
        n = 0;
    struct sbt_payload_enc *p = &x->pay;
    sbt_payload_enc_begin(p, SBT_VK_CLEAR_IMAGE);
    sbt_payload_enc_arg(p, im ? im->o.id : 0);
    for (uint32_t k = 1; k < 7; k++)
        sbt_payload_enc_arg(p, sbt_payload_arg(r, k));
    sbt_payload_enc_arg(p, n);
    uint64_t bytes = 0;
    uint32_t mips = im ? im->desc.mips : 0, layers = im ? im->desc.layers : 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t *g = r->arg + 8 + 5 * i;
        uint64_t nm = g[2] == VK_REMAINING_MIP_LEVELS && g[1] < mips ? mips - g[1] : g[2];
        uint64_t nl = g[4] == VK_REMAINING_ARRAY_LAYERS && g[3] < layers ? layers - g[3] : g[4];
        uint64_t v[5] = {g[0], g[1], nm, g[3], nl};
        for (int k = 0; k < 5; k++)
            sbt_payload_enc_arg(p, v[k]);
        for (uint32_t a = 1; im && im->packed_size && a <= VK_IMAGE_ASPECT_PLANE_2_BIT; a <<= 1) {
            if (!(g[0] & a))
                continue;
            for (uint64_t m = g[1]; m < mips && m - g[1] < nm; m++) {
                struct sbt_vk_subres s;
                if (sbt_vk_image_subres(&im->desc, a, (uint32_t)m, &s) < 0)
                    break;
                struct sbt_vk_box b = {a,
                                       (uint32_t)m,
                                       (uint32_t)g[3],
                                       (uint32_t)nl,
                                       {0, 0, 0},
                                       {s.extent[0], s.extent[1], s.extent[2]}};
                if (im->desc.type == VK_IMAGE_TYPE_3D)
                    b.layer = 0, b.n_layers = 1;
                bytes += img_box_acc(x, im, &b, SBT_ACCESS_WRITE);
            }
        }
    }
    sbt_payload_enc_arg(p, x->cb->o.id);
    sbt_payload_enc_arg(p, index);
    sbt_payload_enc_end(p, NULL, 0);
    struct cap_ev *e =
        op_done(x, SBT_OP_FILL,
                sbt_payload_arg(r, 2) ? "vkCmdClearDepthStencilImage" : "vkCmdClearColorImage");
    timed(x, e, index);
    if (e) {
        e->op.bytes = bytes;
        e->op.value = sbt_payload_arg(r, 3);
        e->op.flags |= SBT_OPF_BYTES | SBT_OPF_OBJ;
    }
}

/* A dispatch's image or sampler descriptor (slot sl of binding b of set si, element el): an
 * IMAGE_BINDING record and the accesses of its view. */
static void image_binding(struct xstate *x, uint32_t si, const struct cap_dsl_binding *b,
                          uint32_t el, const struct cap_slot *sl, uint32_t mode)
{
    struct cap_iview *v = sl->view_handle ? cap_obj_find(sl->view_handle, CAP_T_IVIEW) : NULL;
    struct cap_image *im = v ? cap_obj_find(v->image, CAP_T_IMAGE) : NULL;
    if (sl->view_handle && !im) /* a view or image made before the capture, or destroyed */
        unmod_op(x, "vkCmdDispatch (image view not captured)");
    if (b->type == VK_DESCRIPTOR_TYPE_SAMPLER)
        mode = 0; /* touches no bytes */
    else if (b->type != VK_DESCRIPTOR_TYPE_STORAGE_IMAGE)
        mode = SBT_ACCESS_READ; /* sampled */
    if ((b->type != VK_DESCRIPTOR_TYPE_SAMPLER && !im) ||
        ((b->type == VK_DESCRIPTOR_TYPE_SAMPLER ||
          b->type == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER) &&
         !sl->sampler))
        return; /* never written: replay says the dispatch lacks it */
    sbt_payload_put(&x->pay, SBT_VK_IMAGE_BINDING,
                    (uint64_t[]){si, b->binding, el, b->type, v ? v->o.id : 0, im ? im->o.id : 0,
                                 sl->sampler, sl->layout, mode},
                    9, NULL, 0);
    if (!im || !mode)
        return;
    struct acc_to c = {x, im->o.id, mode};
    cap_img_view_ranges(im, v, acc_run, &c);
    if (mode & SBT_ACCESS_WRITE)
        img_written(x, im);
}

/* The group counts of an indirect dispatch when they can be known at submit: the arguments
 * lie in host-visible memory the program has mapped, and no device work of this or an
 * unfinished submission writes them (host writes were published just before the submit, so
 * the mapping holds what the device will read). 1 with out[] set, else 0. */
static int indirect_groups(const struct cap_buf *b, uint64_t off, uint32_t out[3])
{
    struct cap_mem *m = b ? b->mem : NULL;
    if (!m || off > b->size || b->size - off < sizeof(VkDispatchIndirectCommand))
        return 0;
    VkDispatchIndirectCommand c;
    pthread_mutex_lock(&m->mu);
    int ok = cap_mem_read_args(m, b->mem_off + off, &c, sizeof c);
    pthread_mutex_unlock(&m->mu);
    if (!ok)
        return 0;
    out[0] = c.x;
    out[1] = c.y;
    out[2] = c.z;
    return 1;
}

/* A shader that dereferences buffer device addresses may read (and, if its SPIR-V stores
 * through them, write) any buffer that has an address: the dispatch gets that access to the
 * whole of every live buffer of the device with SHADER_DEVICE_ADDRESS usage, so the graph,
 * slices and digests stay sound. */
static int cmp_acc(const void *a, const void *b)
{
    const struct sbt_access *x = a, *y = b;
    if (x->resource != y->resource)
        return x->resource < y->resource ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void address_accesses(struct xstate *x, uint32_t mode)
{
    uint32_t first = x->n_acc;
    uint64_t pos = 0, k, v;
    while (sbt_map_next(&cap.objs[CAP_T_BUF], &pos, &k, &v)) {
        struct cap_buf *b = (struct cap_buf *)(uintptr_t)v;
        if (b && b->o.dev == x->dev && (b->usage & VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT))
            add_acc(x, b, 0, b->size, mode);
    }
    /* in memory order, not the order of the handle map: the same in every capture */
    if (x->n_acc > first)
        qsort(x->acc + first, x->n_acc - first, sizeof *x->acc, cmp_acc);
}

static void dispatch_op(struct xstate *x, const uint64_t *g, uint64_t ind_buf, uint64_t ind_off,
                        uint32_t index)
{
    struct cap_pipeline *p = x->pipe;
    if (ind_buf)
        x->nocache = 1; /* group counts read from memory at each submit */
    if (!p) {
        /* a pipeline made while not recording, or from a module the layer did not see: the
         * dispatch cannot be replayed */
        unmod_op(x, "vkCmdDispatch (pipeline not captured)");
        return;
    }
    struct cap_buf *ib = ind_buf ? cap_obj_find(ind_buf, CAP_T_BUF) : NULL;
    uint32_t ig[3] = {0, 0, 0};
    int ig_known = ib && indirect_groups(ib, ind_off, ig);
    sbt_payload_put(&x->pay, SBT_VK_DISPATCH,
                    (uint64_t[]){p->o.id, id_of(p->layout_handle, CAP_T_PLAYOUT), g[0], g[1], g[2],
                                 g[3], g[4], g[5], ib ? ib->o.id : 0, ind_off, x->cb->o.id, index,
                                 ig_known, ig[0], ig[1], ig[2]},
                    ib ? 16 : 12, x->push, x->push_hi);
    if (ib)
        add_acc(x, ib, ind_off, sizeof(VkDispatchIndirectCommand), SBT_ACCESS_READ);
    for (uint32_t si = 0; si < CAP_MAX_SETS; si++) {
        struct cap_dset *s = x->is_push[si] ? &x->pset[si]
                             : x->set[si]   ? cap_obj_find(x->set[si], CAP_T_DSET)
                                            : NULL;
        if (!s)
            continue;
        uint32_t di = 0;
        for (uint32_t bi = 0; bi < s->n_b; bi++) {
            const struct cap_dsl_binding *b = &s->b[bi];
            uint32_t mode = binding_mode(p, si, b->binding, b->type);
            for (uint32_t el = 0; el < b->count; el++) {
                uint64_t dyn = 0;
                if (is_dynamic(b->type)) {
                    dyn = di < x->n_dyn[si] ? x->dyn[si][di] : 0;
                    di++;
                }
                if (!mode)
                    continue;
                const struct cap_slot *sl = &s->slot[b->base + el];
                if (cap_is_image_desc(b->type)) {
                    image_binding(x, si, b, el, sl, mode);
                    continue;
                }
                struct cap_buf *buf = NULL;
                uint64_t off = sl->offset + dyn, range = sl->range;
                if (sl->view_handle) {
                    struct cap_bview *v = cap_obj_find(sl->view_handle, CAP_T_BVIEW);
                    if (v) {
                        buf = v->buf;
                        off = v->offset;
                        range = v->range;
                    }
                } else {
                    buf = cap_obj_find(sl->buf_handle, CAP_T_BUF);
                }
                if (!buf || !buf->mem)
                    continue;
                if (range == VK_WHOLE_SIZE)
                    range = off < buf->size ? buf->size - off : 0;
                sbt_payload_put(&x->pay, SBT_VK_BINDING,
                                (uint64_t[]){si, b->binding, el, b->type, buf->o.id, buf->mem->o.id,
                                             off, range, mode},
                                9, NULL, 0);
                add_acc(x, buf, off, range, mode);
            }
        }
    }
    if (p->addresses)
        address_accesses(x, p->addresses);
    struct cap_ev *e = op_done(x, SBT_OP_KERNEL, "vkCmdDispatch");
    if (!e)
        return;
    timed(x, e, index);
    e->kernel_id = p->o.id;
    e->op.flags |= SBT_OPF_GEOM;
    for (int d = 0; d < 3; d++) {
        e->op.grid[d] = ind_buf ? ig[d] : (uint32_t)g[3 + d];
        e->op.block[d] = p->local[d];
    }
}

static void bind_sets(struct xstate *x, const struct sbt_payload_rec *r)
{
    if (sbt_payload_arg(r, 0) != VK_PIPELINE_BIND_POINT_COMPUTE)
        return;
    uint32_t first = (uint32_t)sbt_payload_arg(r, 2), n = (uint32_t)sbt_payload_arg(r, 3);
    uint32_t n_dyn = (uint32_t)sbt_payload_arg(r, 4 + n), k = 0;
    if (first >= CAP_MAX_SETS || n > CAP_MAX_SETS - first)
        unmod_op(x, "vkCmdBindDescriptorSets (set index past the 32 the capture tracks)");
    for (uint32_t i = 0; i < n && first + i < CAP_MAX_SETS; i++) {
        uint32_t si = first + i;
        x->set[si] = sbt_payload_arg(r, 4 + i);
        x->is_push[si] = 0;
        x->n_dyn[si] = 0;
        struct cap_dset *s = cap_obj_find(x->set[si], CAP_T_DSET);
        for (uint32_t b = 0; s && b < s->n_b; b++)
            for (uint32_t el = 0; is_dynamic(s->b[b].type) && el < s->b[b].count; el++) {
                if (k < n_dyn && x->n_dyn[si] < MAX_DYN)
                    x->dyn[si][x->n_dyn[si]++] = (uint32_t)sbt_payload_arg(r, 5 + n + k);
                else if (k < n_dyn)
                    unmod_op(x, "vkCmdBindDescriptorSets (more than 64 dynamic offsets in a "
                                "set)");
                k++;
            }
    }
}

/* CMD_PUSH_SET: the writes go into the push set of that set number, shaped by the set layout
 * the pipeline layout has there; pushing again with the same set layout keeps what earlier
 * pushes wrote elsewhere in it. */
static void push_set(struct xstate *x, const struct sbt_payload_rec *r)
{
    if (sbt_payload_arg(r, 0) != VK_PIPELINE_BIND_POINT_COMPUTE)
        return;
    uint64_t si = sbt_payload_arg(r, 2);
    struct cap_playout *pl = cap_obj_find(sbt_payload_arg(r, 1), CAP_T_PLAYOUT);
    struct cap_dsl *l = pl && si < pl->n_sets ? cap_obj_find(pl->set_layout[si], CAP_T_DSL) : NULL;
    if (!l) {
        unmod_op(x, "vkCmdPushDescriptorSet (pipeline layout or set layout not captured)");
        return;
    }
    struct cap_dset *s = &x->pset[si];
    if (!x->is_push[si] || s->layout_id != l->o.id) {
        cap_dset_release(s);
        if (cap_dset_shape(s, l, UINT32_MAX, 1) < 0) {
            x->failed = 1;
            return;
        }
    }
    x->is_push[si] = 1;
    x->set[si] = 0;
    x->n_dyn[si] = 0;
    for (uint32_t i = 3, len; i < r->n_arg; i += len)
        if (!(len = cap_dset_apply(s, r->arg + i, r->n_arg - i)))
            break;
}

/* Translates a raw record's handles into capture ids for the stored recording. */
static void translate(struct sbt_payload_enc *t, const struct sbt_payload_rec *r)
{
    uint64_t on_stack[512];
    uint32_t n = r->n_arg;
    uint64_t *a = n <= 512 ? on_stack : malloc(n * sizeof *a);
    if (!a) {
        t->status = SBT_ENOMEM;
        return;
    }
    memcpy(a, r->arg, n * sizeof *a);
#define TR(i, ty)                   \
    do {                            \
        if ((i) < n)                \
            a[i] = id_of(a[i], ty); \
    } while (0)
    switch (r->call) {
    case SBT_VK_CMD_BEGIN:
        TR(0, CAP_T_CMDBUF);
        break;
    case SBT_VK_CMD_BIND_PIPELINE:
        TR(1, CAP_T_PIPELINE);
        break;
    case SBT_VK_CMD_BIND_SETS:
        TR(1, CAP_T_PLAYOUT);
        for (uint32_t i = 0; i < sbt_payload_arg(r, 3); i++)
            TR(4 + i, CAP_T_DSET);
        break;
    case SBT_VK_CMD_PUSH_CONSTANTS:
        TR(0, CAP_T_PLAYOUT);
        break;
    case SBT_VK_CMD_PUSH_SET:
        TR(1, CAP_T_PLAYOUT);
        for (uint32_t i = 3, len; i < n; i += len)
            if (!(len = cap_write_ids(a + i, n - i)))
                break;
        break;
    case SBT_VK_CMD_DISPATCH_INDIRECT:
    case SBT_VK_CMD_FILL_BUFFER:
    case SBT_VK_CMD_UPDATE_BUFFER:
        TR(0, CAP_T_BUF);
        break;
    case SBT_VK_CMD_COPY_BUFFER:
        TR(0, CAP_T_BUF);
        TR(1, CAP_T_BUF);
        break;
    case SBT_VK_CMD_COPY_BUFFER_TO_IMAGE:
        TR(0, CAP_T_BUF);
        TR(1, CAP_T_IMAGE);
        break;
    case SBT_VK_CMD_COPY_IMAGE_TO_BUFFER:
        TR(0, CAP_T_IMAGE);
        TR(2, CAP_T_BUF);
        break;
    case SBT_VK_CMD_COPY_IMAGE:
    case SBT_VK_CMD_BLIT_IMAGE:
        TR(0, CAP_T_IMAGE);
        TR(2, CAP_T_IMAGE);
        break;
    case SBT_VK_CMD_CLEAR_IMAGE:
        TR(0, CAP_T_IMAGE);
        break;
    case SBT_VK_CMD_SET_EVENT:
    case SBT_VK_CMD_RESET_EVENT:
        TR(0, CAP_T_EVENT);
        break;
    case SBT_VK_CMD_WAIT_EVENTS:
    case SBT_VK_CMD_BARRIER: {
        uint32_t base = 0;
        if (r->call == SBT_VK_CMD_WAIT_EVENTS) {
            uint32_t ne = (uint32_t)sbt_payload_arg(r, 0);
            for (uint32_t i = 0; i < ne; i++)
                TR(1 + i, CAP_T_EVENT);
            base = 1 + ne;
        }
        uint32_t nm = (uint32_t)sbt_payload_arg(r, base + 3);
        uint32_t bb = base + 4 + 4 * nm;
        uint32_t nb = (uint32_t)sbt_payload_arg(r, bb);
        for (uint32_t i = 0; i < nb; i++)
            TR(bb + 1 + 9 * i + 6, CAP_T_BUF);
        uint32_t ib = bb + 1 + 9 * nb, ni = (uint32_t)sbt_payload_arg(r, ib);
        for (uint32_t i = 0; i < ni; i++)
            TR(ib + 1 + 14 * i + 8, CAP_T_IMAGE);
        break;
    }
    case SBT_VK_CMD_WRITE_TIMESTAMP:
        TR(1, CAP_T_QPOOL);
        break;
    case SBT_VK_CMD_RESET_QUERIES:
        TR(0, CAP_T_QPOOL);
        break;
    case SBT_VK_CMD_EXECUTE:
        for (uint32_t i = 0; i < sbt_payload_arg(r, 0); i++)
            TR(1 + i, CAP_T_CMDBUF);
        break;
    default:
        break;
    }
#undef TR
    sbt_payload_put(t, r->call, a, n, r->bytes, r->n_bytes);
    if (a != on_stack)
        free(a);
}

static void sync_op(struct xstate *x, uint32_t kind, const char *name, struct cap_sync *s,
                    uint64_t value, uint64_t stage)
{
    if (!s)
        return;
    if (stage)
        sbt_payload_put(&x->pay, SBT_VK_SYNC_INFO, &stage, 1, NULL, 0);
    struct cap_ev *e = op_done(x, kind, name);
    if (e) {
        e->op.subkind = s->kind;
        e->op.obj = s->o.id;
        e->op.value = value;
        e->op.flags |= SBT_OPF_OBJ;
    }
}

static void expand(struct xstate *x, struct cap_cmdbuf *cb, int depth,
                   struct sbt_payload_enc *trans);

static void expand_cmd(struct xstate *x, const struct sbt_payload_rec *r, uint32_t index, int depth)
{
    switch (r->call) {
    case SBT_VK_CMD_BIND_PIPELINE:
        if (sbt_payload_arg(r, 0) == VK_PIPELINE_BIND_POINT_COMPUTE)
            x->pipe = cap_obj_find(sbt_payload_arg(r, 1), CAP_T_PIPELINE);
        break;
    case SBT_VK_CMD_BIND_SETS:
        bind_sets(x, r);
        break;
    case SBT_VK_CMD_PUSH_SET:
        push_set(x, r);
        break;
    case SBT_VK_CMD_PUSH_CONSTANTS: {
        uint64_t off = sbt_payload_arg(r, 2);
        if (off < sizeof x->push && r->n_bytes <= sizeof x->push - off) {
            memcpy(x->push + off, r->bytes, r->n_bytes);
            if (off + r->n_bytes > x->push_hi)
                x->push_hi = (uint32_t)(off + r->n_bytes);
        } else {
            unmod_op(x, "vkCmdPushConstants (bytes past the 256 the capture keeps)");
        }
        break;
    }
    case SBT_VK_CMD_DISPATCH: {
        uint64_t g[6];
        for (int i = 0; i < 6; i++)
            g[i] = sbt_payload_arg(r, (uint32_t)i);
        dispatch_op(x, g, 0, 0, index);
        break;
    }
    case SBT_VK_CMD_DISPATCH_INDIRECT: {
        uint64_t g[6] = {0};
        dispatch_op(x, g, sbt_payload_arg(r, 0), sbt_payload_arg(r, 1), index);
        break;
    }
    case SBT_VK_CMD_COPY_BUFFER: {
        struct cap_buf *s = cap_obj_find(sbt_payload_arg(r, 0), CAP_T_BUF);
        struct cap_buf *d = cap_obj_find(sbt_payload_arg(r, 1), CAP_T_BUF);
        uint32_t n = (uint32_t)sbt_payload_arg(r, 2);
        uint64_t bytes = 0;
        sbt_payload_enc_begin(&x->pay, SBT_VK_COPY_BUFFER);
        sbt_payload_enc_arg(&x->pay, s ? s->o.id : 0);
        sbt_payload_enc_arg(&x->pay, d ? d->o.id : 0);
        sbt_payload_enc_arg(&x->pay, n);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t so = sbt_payload_arg(r, 3 + 3 * i), doff = sbt_payload_arg(r, 4 + 3 * i),
                     sz = sbt_payload_arg(r, 5 + 3 * i);
            sbt_payload_enc_arg(&x->pay, so);
            sbt_payload_enc_arg(&x->pay, doff);
            sbt_payload_enc_arg(&x->pay, sz);
            add_acc(x, s, so, sz, SBT_ACCESS_READ);
            add_acc(x, d, doff, sz, SBT_ACCESS_WRITE);
            bytes += sz;
        }
        sbt_payload_enc_arg(&x->pay, x->cb->o.id);
        sbt_payload_enc_arg(&x->pay, index);
        sbt_payload_enc_end(&x->pay, NULL, 0);
        struct cap_ev *e = op_done(x, SBT_OP_COPY, "vkCmdCopyBuffer");
        timed(x, e, index);
        if (e) {
            e->op.subkind = SBT_COPY_D2D;
            e->op.bytes = bytes;
            e->op.flags |= SBT_OPF_BYTES;
        }
        break;
    }
    case SBT_VK_CMD_FILL_BUFFER: {
        struct cap_buf *d = cap_obj_find(sbt_payload_arg(r, 0), CAP_T_BUF);
        uint64_t off = sbt_payload_arg(r, 1), sz = sbt_payload_arg(r, 2);
        if (sz == VK_WHOLE_SIZE)
            sz = d && off < d->size ? (d->size - off) & ~(uint64_t)3 : 0;
        sbt_payload_put(
            &x->pay, SBT_VK_FILL_BUFFER,
            (uint64_t[]){d ? d->o.id : 0, off, sz, sbt_payload_arg(r, 3), x->cb->o.id, index}, 6,
            NULL, 0);
        add_acc(x, d, off, sz, SBT_ACCESS_WRITE);
        struct cap_ev *e = op_done(x, SBT_OP_FILL, "vkCmdFillBuffer");
        timed(x, e, index);
        if (e) {
            e->op.bytes = sz;
            e->op.value = sbt_payload_arg(r, 3);
            e->op.flags |= SBT_OPF_BYTES | SBT_OPF_OBJ;
        }
        break;
    }
    case SBT_VK_CMD_UPDATE_BUFFER: {
        struct cap_buf *d = cap_obj_find(sbt_payload_arg(r, 0), CAP_T_BUF);
        uint64_t off = sbt_payload_arg(r, 1), sz = sbt_payload_arg(r, 2);
        sbt_payload_put(&x->pay, SBT_VK_UPDATE_BUFFER,
                        (uint64_t[]){d ? d->o.id : 0, off, sz, x->cb->o.id, index}, 5, NULL, 0);
        add_acc(x, d, off, sz, SBT_ACCESS_WRITE);
        struct cap_ev *e = op_done(x, SBT_OP_COPY, "vkCmdUpdateBuffer");
        x->nocache = 1; /* e->data is a separate allocation */
        timed(x, e, index);
        if (e) {
            e->op.subkind = SBT_COPY_H2D;
            e->op.bytes = sz;
            e->op.flags |= SBT_OPF_BYTES | SBT_OPF_BLOB;
            e->data = malloc(r->n_bytes ? r->n_bytes : 1);
            if (e->data) {
                memcpy(e->data, r->bytes, r->n_bytes);
                e->data_len = r->n_bytes;
            } else {
                x->failed = 1;
            }
        }
        break;
    }
    case SBT_VK_CMD_COPY_BUFFER_TO_IMAGE:
    case SBT_VK_CMD_COPY_IMAGE_TO_BUFFER:
        buf_img_copy_op(x, r, index);
        break;
    case SBT_VK_CMD_COPY_IMAGE:
        img_copy_op(x, r, index);
        break;
    case SBT_VK_CMD_BLIT_IMAGE:
        blit_op(x, r, index);
        break;
    case SBT_VK_CMD_CLEAR_IMAGE:
        clear_op(x, r, index);
        break;
    case SBT_VK_CMD_SET_EVENT:
        sync_op(x, SBT_OP_EVENT_RECORD, "vkCmdSetEvent",
                cap_obj_find(sbt_payload_arg(r, 0), CAP_T_EVENT), 0, sbt_payload_arg(r, 1));
        break;
    case SBT_VK_CMD_WAIT_EVENTS:
        for (uint32_t i = 0; i < sbt_payload_arg(r, 0); i++)
            sync_op(x, SBT_OP_EVENT_WAIT, "vkCmdWaitEvents",
                    cap_obj_find(sbt_payload_arg(r, 1 + i), CAP_T_EVENT), 0, 0);
        break;
    case SBT_VK_CMD_EXECUTE:
        x->nocache = 1; /* a secondary can be re-recorded without the primary */
        for (uint32_t i = 0; i < sbt_payload_arg(r, 0); i++) {
            struct cap_cmdbuf *sec = cap_obj_find(sbt_payload_arg(r, 1 + i), CAP_T_CMDBUF);
            if (!sec || depth >= 2)
                unmod_op(x, !sec ? "vkCmdExecuteCommands (secondary command buffer not captured)"
                                 : "vkCmdExecuteCommands (nested deeper than the capture follows)");
            if (sec && depth < 2) {
                struct xstate save = *x;
                expand(x, sec, depth + 1, NULL);
                /* state does not flow between primary and secondary command buffers */
                struct cap_ev **tail = x->tail;
                uint32_t n_ops = x->n_ops;
                int failed = x->failed, nocache = x->nocache;
                struct sbt_access *acc = x->acc;
                uint32_t cap_acc = x->cap_acc;
                struct sbt_payload_enc pay = x->pay;
                struct cap_timing *timing = x->timing;
                struct cap_dset pset[CAP_MAX_SETS]; /* the secondary may have reshaped them */
                memcpy(pset, x->pset, sizeof pset);
                *x = save;
                memcpy(x->pset, pset, sizeof pset);
                x->timing = timing;
                x->tail = tail;
                x->n_ops = n_ops;
                x->failed = failed;
                x->nocache = nocache;
                x->acc = acc;
                x->cap_acc = cap_acc;
                x->pay = pay;
            }
        }
        break;
    case SBT_VK_CMD_UNSUPPORTED: {
        /* an unrecorded vkCmd* (counted when recorded): its marker, where it runs */
        char name[256];
        size_t len = r->n_bytes < sizeof name - 1 ? r->n_bytes : sizeof name - 1;
        memcpy(name, r->bytes, len);
        name[len] = 0;
        const struct cap_vk_cmd *c = cap_vk_find(name);
        uint32_t id =
            c ? (uint32_t)(c - cap_vk_cmds) : cap_unmod_id(name, SBT_UNMODELLED_AFFECTS, 1);
        struct cap_ev *e = cap_unmod_marker(x->dev, id, x->t0);
        if (!e) {
            x->failed = 1;
            break;
        }
        e->queue_id = x->q->o.id;
        e->op.host_end = x->t1;
        *x->tail = e;
        x->tail = &e->next;
        x->n_ops++;
        break;
    }
    default:
        break;
    }
}

/* Walks cb's raw recording: ops appended at x->tail, and if trans is not NULL the recording
 * with capture ids is written there. */
static void expand(struct xstate *x, struct cap_cmdbuf *cb, int depth,
                   struct sbt_payload_enc *trans)
{
    struct cap_cmdbuf *outer = x->cb;
    x->cb = cb;
    x->pipe = NULL;
    memset(x->set, 0, sizeof x->set);
    memset(x->n_dyn, 0, sizeof x->n_dyn);
    memset(x->is_push, 0, sizeof x->is_push);
    x->push_hi = 0;
    struct sbt_payload_dec dec;
    struct sbt_payload_rec r;
    sbt_payload_dec_init(&dec, cb->raw.buf, cb->raw.len);
    uint32_t index = 0;
    int st;
    while ((st = sbt_payload_dec_next(&dec, &r)) == 1 && !x->failed) {
        if (trans)
            translate(trans, &r);
        expand_cmd(x, &r, index++, depth);
    }
    if (st < 0)
        x->failed = 1;
    sbt_payload_dec_free(&dec);
    x->cb = outer;
}

static struct cap_blob *recording(struct xstate *x, struct cap_cmdbuf *cb)
{
    struct sbt_payload_enc t = {0};
    sbt_payload_enc_raw(&t, SBT_VK_RECORDING_MAGIC, SBT_VK_RECORDING_MAGIC_LEN);
    expand(x, cb, 0, &t);
    struct cap_blob *b = sbt_payload_enc_status(&t) ? NULL : cap_blob_new(t.buf, t.len);
    sbt_payload_enc_free(&t);
    if (!b)
        x->failed = 1;
    return b;
}

/* ========================================================================================== */
/* Cached expansions                                                                          */
/* ========================================================================================== */

/* A command buffer submitted again unchanged (its recording, and every shadow object the
 * expansion looked at, as they were) makes the same ops but for the submission's times,
 * queue and thread: they are copied from the packed blocks of its last expansion, and the
 * device writes are remembered for this submission as add_acc would have. */

void cap_cmdbuf_drop_ops(struct cap_cmdbuf *cb)
{
    free(cb->ops);
    cb->ops = NULL;
    cb->ops_len = 0;
}

/* Keeps the ops of chain (the expansion of cb just made) for its next submits. */
static void cache_ops(struct cap_cmdbuf *cb, const struct cap_ev *chain)
{
    cap_cmdbuf_drop_ops(cb);
    size_t len = 0;
    for (const struct cap_ev *e = chain; e; e = e->next) {
        if (!e->packed || e->data || e->timing || e->n_recs || e->str)
            return;
        len += sizeof(size_t) + cap_ev_op_bytes(e->op.n_access, e->payload_len);
    }
    uint8_t *p = len ? malloc(len) : NULL;
    if (!p)
        return; /* only slower */
    size_t o = 0;
    for (const struct cap_ev *e = chain; e; e = e->next) {
        size_t n = cap_ev_op_bytes(e->op.n_access, e->payload_len);
        memcpy(p + o, &n, sizeof n);
        memcpy(p + o + sizeof n, e, n);
        o += sizeof n + n;
    }
    cb->ops = p;
    cb->ops_len = len;
    cb->ops_gen = cap.shadow_gen;
}

static void replay_ops(struct xstate *x, const struct cap_cmdbuf *cb)
{
    uint32_t thread = cap_thread();
    for (size_t o = 0; o < cb->ops_len && !x->failed;) {
        size_t n;
        memcpy(&n, cb->ops + o, sizeof n);
        struct cap_ev *e = malloc(n);
        if (!e) {
            cap_fail("out of memory for an event");
            x->failed = 1;
            return;
        }
        memcpy(e, cb->ops + o + sizeof n, n);
        o += sizeof n + n;
        cap_ev_op_fix(e);
        e->next = NULL;
        e->thread = thread;
        e->queue_id = x->q->o.id;
        e->op.host_begin = x->t0;
        e->op.host_end = x->t1;
        struct cap_mem *last = NULL;
        for (uint32_t i = 0; i < e->op.n_access; i++) {
            const struct sbt_access *a = &e->acc[i];
            if (!(a->mode & SBT_ACCESS_WRITE))
                continue;
            if (!last || last->o.id != a->resource)
                last = cap_mem_by_id(a->resource);
            if (last)
                x->q->writes_mapped |= cap_mem_pend(last, a->offset, a->len, x->q->o.id, x->serial);
        }
        *x->tail = e;
        x->tail = &e->next;
        x->n_ops++;
    }
}

/* ========================================================================================== */
/* Submission                                                                                 */
/* ========================================================================================== */

struct cap_ev *cap_submit_build(struct cap_dev *dev, struct cap_queue *q,
                                const struct cap_submit_batch *b, uint32_t n, VkFence fence,
                                int version, uint64_t t0, uint64_t t1)
{
    struct cap_ev *head = NULL, **tail = &head;
    struct cap_ev *sub = cap_ev_new(CAP_EV_OP);
    if (!sub)
        return NULL;
    *tail = sub;
    tail = &sub->next;
    uint64_t serial = ++q->serial;
    q->writes_mapped = 0;
    struct xstate x = {.dev = dev, .q = q, .serial = serial, .t0 = t0, .t1 = t1, .tail = tail};
    struct sbt_payload_enc pay = {0};
    struct cap_sync *fs = cap_obj_find((uint64_t)(uintptr_t)fence, CAP_T_FENCE);
    sbt_payload_put(&pay, SBT_VK_SUBMIT,
                    (uint64_t[]){q->o.id, n, fs ? fs->o.id : 0, (uint64_t)version}, 4, NULL, 0);
    uint32_t n_recs = 0;
    for (uint32_t i = 0; i < n; i++)
        n_recs += b[i].n_cb;
    sub->recs = n_recs ? calloc(n_recs, sizeof *sub->recs) : NULL;
    if (n_recs && !sub->recs)
        x.failed = 1;
    for (uint32_t i = 0; i < n && !x.failed; i++) {
        sbt_payload_put(&pay, SBT_VK_BATCH, (uint64_t[]){b[i].n_wait, b[i].n_cb, b[i].n_signal, 0},
                        4, NULL, 0);
        for (uint32_t k = 0; k < b[i].n_wait; k++) {
            struct cap_sync *s = cap_obj_find((uint64_t)(uintptr_t)b[i].wait[k], CAP_T_SEM);
            uint64_t v = b[i].wait_value && s && s->kind == SBT_SYNC_TIMELINE_SEMAPHORE
                             ? b[i].wait_value[k]
                             : 0;
            uint64_t stage = b[i].wait_stage ? b[i].wait_stage[k] : 0;
            sbt_payload_put(&pay, SBT_VK_WAIT_SEM, (uint64_t[]){s ? s->o.id : 0, v, stage}, 3, NULL,
                            0);
            sync_op(&x, SBT_OP_WAIT, "semaphore wait", s, v, stage);
            if (s)
                queue_waits(q, serial, s, v);
        }
        for (uint32_t k = 0; k < b[i].n_cb; k++) {
            struct cap_cmdbuf *cb = cap_obj_find((uint64_t)(uintptr_t)b[i].cb[k], CAP_T_CMDBUF);
            if (!cb) {
                unmod_op(&x, "vkQueueSubmit (command buffer not captured)");
                continue;
            }
            uint32_t before = x.n_ops;
            if (cb->n_ts_pool)
                cap_timing_settle_cb(cb); /* its last submission, if not seen finishing */
            struct cap_ev **first = x.tail;
            if (cb->rec && cb->ops && cb->ops_gen == cap.shadow_gen && !cb->n_ts) {
                replay_ops(&x, cb);
            } else {
                x.nocache = 0;
                if (!cb->rec)
                    cb->rec = recording(&x, cb); /* first submit of this recording */
                else
                    expand(&x, cb, 0, NULL);
                if (cb->rec && !x.failed && !x.nocache && !cb->n_ts && x.n_ops > before)
                    cache_ops(cb, *first);
            }
            if (!cb->rec)
                break;
            atomic_fetch_add(&cb->rec->ref, 1);
            sub->recs[sub->n_recs++] = cb->rec;
            sbt_payload_put(
                &pay, SBT_VK_CMDBUF,
                (uint64_t[]){cb->o.id, cb->rec->hash.lo, cb->rec->hash.hi, x.n_ops - before}, 4,
                NULL, 0);
        }
        for (uint32_t k = 0; k < b[i].n_signal; k++) {
            struct cap_sync *s = cap_obj_find((uint64_t)(uintptr_t)b[i].signal[k], CAP_T_SEM);
            uint64_t v = b[i].signal_value && s && s->kind == SBT_SYNC_TIMELINE_SEMAPHORE
                             ? b[i].signal_value[k]
                             : 0;
            uint64_t stage = b[i].signal_stage ? b[i].signal_stage[k] : 0;
            sbt_payload_put(&pay, SBT_VK_SIGNAL_SEM, (uint64_t[]){s ? s->o.id : 0, v, stage}, 3,
                            NULL, 0);
            if (s)
                sync_signaled(s, v, q->o.id, serial);
            sync_op(&x, SBT_OP_SIGNAL, "semaphore signal", s, v, 0);
        }
    }
    if (fs) {
        sync_signaled(fs, 0, q->o.id, serial);
        sync_op(&x, SBT_OP_SIGNAL, "fence signal", fs, 0, 0);
    }
    free(x.acc);
    sbt_payload_enc_free(&x.pay);
    for (uint32_t i = 0; i < CAP_MAX_SETS; i++)
        cap_dset_release(&x.pset[i]);
    if (x.failed || sbt_payload_enc_status(&pay)) {
        sbt_payload_enc_free(&pay);
        if (x.timing) {
            free(x.timing->ops);
            free(x.timing->query);
            free(x.timing->pool);
            free(x.timing);
        }
        cap_ev_free_chain(head);
        cap_fail("out of memory building a submission");
        return NULL;
    }
    sub->dev_id = dev->id;
    sub->queue_id = q->o.id;
    sub->name = version == 2 ? "vkQueueSubmit2" : "vkQueueSubmit";
    sub->op.kind = SBT_OP_SUBMIT;
    sub->op.host_begin = t0;
    sub->op.host_end = t1;
    sub->op.value = x.n_ops;
    sub->op.flags = SBT_OPF_OBJ;
    sub->payload = pay.buf;
    sub->payload_len = pay.len;
    pay.buf = NULL;
    sbt_payload_enc_free(&pay);
    if (x.timing)
        cap_timing_submit(x.timing, head, dev, q, serial, t0);
    return head;
}

/* The last signal of s, if it is (queue, serial)'s, is forgotten. */
static void unsignal(struct cap_sync *s, uint64_t queue, uint64_t serial)
{
    if (s && s->n_sig) {
        const struct cap_sig *g = &s->sig[s->n_sig - 1];
        if (g->queue == queue && g->serial == serial)
            s->n_sig--;
    }
}

void cap_submit_abandon(struct cap_dev *dev, struct cap_queue *q, const struct cap_submit_batch *b,
                        uint32_t n, VkFence fence, struct cap_ev *chain)
{
    (void)dev;
    while (q->n_waits && q->waits[q->n_waits - 1].serial == q->serial)
        q->n_waits--;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < b[i].n_signal; k++)
            unsignal(cap_obj_find((uint64_t)(uintptr_t)b[i].signal[k], CAP_T_SEM), q->o.id,
                     q->serial);
    unsignal(cap_obj_find((uint64_t)(uintptr_t)fence, CAP_T_FENCE), q->o.id, q->serial);
    if (chain && chain->timing)
        cap_timing_forget(chain->timing);
    cap_ev_free_chain(chain);
}

/* ========================================================================================== */
/* --digests                                                                                  */
/* ========================================================================================== */

static int overlaps(const struct sbt_access *a, const struct sbt_access *b)
{
    return a->resource == b->resource && a->offset < b->offset + b->len &&
           b->offset < a->offset + a->len;
}

void cap_digest_ops(struct cap_ev *chain)
{
    sbt_hasher *h = NULL;
    if (sbt_hasher_create(&h) < 0)
        return;
    pthread_mutex_lock(&cap.mu);
    for (struct cap_ev *e = chain; e; e = e->next) {
        if (e->op.kind != SBT_OP_KERNEL)
            continue;
        int exact = 1, any = 0;
        for (uint32_t i = 0; i < e->op.n_access && exact; i++) {
            const struct sbt_access *a = &e->acc[i];
            if (!(a->mode & SBT_ACCESS_WRITE))
                continue;
            struct cap_mem *m = cap_mem_by_id(a->resource);
            /* non-coherent: the mapping is not the device's view until an invalidate */
            if (!m || !(m->props & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) || cap_mem_noncoherent(m))
                exact = 0;
            any = 1;
            /* a later op of the same submission writing there would hide this one's output */
            for (struct cap_ev *l = e->next; l && exact; l = l->next)
                for (uint32_t k = 0; k < l->op.n_access && exact; k++)
                    if ((l->acc[k].mode & SBT_ACCESS_WRITE) && overlaps(a, &l->acc[k]))
                        exact = 0;
        }
        if (!exact || !any)
            continue;
        sbt_hasher_reset(h);
        for (uint32_t i = 0; i < e->op.n_access; i++) {
            const struct sbt_access *a = &e->acc[i];
            struct cap_mem *m = (a->mode & SBT_ACCESS_WRITE) ? cap_mem_by_id(a->resource) : NULL;
            if (m) {
                pthread_mutex_lock(&m->mu);
                cap_mem_digest(m, a->offset, a->len, h);
                pthread_mutex_unlock(&m->mu);
            }
        }
        e->op.digest = sbt_hasher_digest(h);
        e->op.flags |= SBT_OPF_DIGEST;
    }
    pthread_mutex_unlock(&cap.mu);
    sbt_hasher_destroy(h);
}
