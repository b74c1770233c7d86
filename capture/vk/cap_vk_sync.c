/*
 * capture/vk/cap_vk_sync.c — fences, semaphores (binary and timeline) and events; host waits,
 * signals and counter reads, which tell the layer which submissions finished (and so which
 * device writes the host can now read: cap_complete); vkQueueSubmit / vkQueueSubmit2 (the host
 * writes are published before the driver sees the submission, then cap_submit_build expands the
 * command buffers), queue and device idle waits.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

/* ========================================================================================== */
/* Sync objects                                                                               */
/* ========================================================================================== */

static struct cap_sync *sync_new(struct cap_dev *d, uint32_t t, uint32_t vk_type, uint64_t h,
                                 uint32_t kind, const char *name, uint64_t flags, uint64_t initial,
                                 uint64_t t0)
{
    struct cap_sync *s = cap_obj_new(sizeof *s, t, vk_type, h, d);
    if (!s)
        return NULL;
    s->kind = kind;
    struct sbt_payload_enc enc = {0};
    sbt_payload_put(
        &enc, SBT_VK_CREATE_SYNC,
        (uint64_t[]){s->o.id, vk_type, flags, kind == SBT_SYNC_TIMELINE_SEMAPHORE ? 1 : 0, initial},
        5, NULL, 0);
    cap_emit_marker(d, name, &enc, t0);
    return s;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateFence(VkDevice device, const VkFenceCreateInfo *ci,
                                               const VkAllocationCallbacks *alloc, VkFence *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.CreateFence(device, ci, alloc, out), "vkCreateFence");
    if (r == VK_SUCCESS && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        sync_new(d, CAP_T_FENCE, VK_OBJECT_TYPE_FENCE, CAP_H(*out), SBT_SYNC_FENCE, "vkCreateFence",
                 ci->flags, 0, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateSemaphore(VkDevice device, const VkSemaphoreCreateInfo *ci,
                                                   const VkAllocationCallbacks *alloc,
                                                   VkSemaphore *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.CreateSemaphore(device, ci, alloc, out), "vkCreateSemaphore");
    if (r == VK_SUCCESS && CAP_ON()) {
        uint32_t kind = SBT_SYNC_BINARY_SEMAPHORE;
        uint64_t initial = 0;
        for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext)
            if (s->sType == VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO) {
                const VkSemaphoreTypeCreateInfo *t = (const VkSemaphoreTypeCreateInfo *)s;
                if (t->semaphoreType == VK_SEMAPHORE_TYPE_TIMELINE) {
                    kind = SBT_SYNC_TIMELINE_SEMAPHORE;
                    initial = t->initialValue;
                }
            }
        pthread_mutex_lock(&cap.mu);
        sync_new(d, CAP_T_SEM, VK_OBJECT_TYPE_SEMAPHORE, CAP_H(*out), kind, "vkCreateSemaphore",
                 ci->flags, initial, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateEvent(VkDevice device, const VkEventCreateInfo *ci,
                                               const VkAllocationCallbacks *alloc, VkEvent *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.CreateEvent(device, ci, alloc, out), "vkCreateEvent");
    if (r == VK_SUCCESS && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        sync_new(d, CAP_T_EVENT, VK_OBJECT_TYPE_EVENT, CAP_H(*out), SBT_SYNC_EVENT, "vkCreateEvent",
                 ci->flags, 0, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyFence(VkDevice device, VkFence f,
                                            const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    cap_destroy_plain(d, CAP_H(f), CAP_T_FENCE, VK_OBJECT_TYPE_FENCE, "vkDestroyFence");
    d->fn.DestroyFence(device, f, alloc);
}

VKAPI_ATTR void VKAPI_CALL cap_DestroySemaphore(VkDevice device, VkSemaphore s,
                                                const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    cap_destroy_plain(d, CAP_H(s), CAP_T_SEM, VK_OBJECT_TYPE_SEMAPHORE, "vkDestroySemaphore");
    d->fn.DestroySemaphore(device, s, alloc);
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyEvent(VkDevice device, VkEvent e,
                                            const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    cap_destroy_plain(d, CAP_H(e), CAP_T_EVENT, VK_OBJECT_TYPE_EVENT, "vkDestroyEvent");
    d->fn.DestroyEvent(device, e, alloc);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_ResetFences(VkDevice device, uint32_t n, const VkFence *f)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.ResetFences(device, n, f), "vkResetFences");
    if (r == VK_SUCCESS && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        struct sbt_payload_enc enc = {0};
        sbt_payload_enc_begin(&enc, SBT_VK_RESET_SYNC);
        sbt_payload_enc_arg(&enc, VK_OBJECT_TYPE_FENCE);
        sbt_payload_enc_arg(&enc, n);
        for (uint32_t i = 0; i < n; i++) {
            struct cap_sync *s = cap_obj_find(CAP_H(f[i]), CAP_T_FENCE);
            sbt_payload_enc_arg(&enc, s ? s->o.id : 0);
            if (s)
                s->n_sig = s->polled_n_sig = 0; /* the next signal is one the host has not seen */
        }
        sbt_payload_enc_end(&enc, NULL, 0);
        cap_emit_marker(d, "vkResetFences", &enc, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

/* A host-side SIGNAL / WAIT / EVENT op on the calling thread's stream. */
static struct cap_ev *host_sync_op(struct cap_dev *d, uint32_t kind, const char *name,
                                   const struct cap_sync *s, uint64_t value, uint64_t t0)
{
    struct cap_ev *e = cap_op_ev(d, kind, name, NULL, t0);
    if (e && s) {
        e->op.subkind = s->kind;
        e->op.obj = s->o.id;
        e->op.value = value;
        e->op.flags = SBT_OPF_OBJ;
    }
    return e;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_WaitForFences(VkDevice device, uint32_t n, const VkFence *f,
                                                 VkBool32 all, uint64_t timeout)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.WaitForFences(device, n, f, all, timeout), "vkWaitForFences");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    uint64_t now = cap_now();
    struct cap_reached done = {0};
    pthread_mutex_lock(&cap.mu);
    struct cap_ev *head = NULL, **tail = &head;
    for (uint32_t i = 0; i < n; i++) {
        struct cap_sync *s = cap_obj_find(CAP_H(f[i]), CAP_T_FENCE);
        if (!s)
            continue;
        /* with waitAll = false only the fences that are signaled now are known done */
        if (!all && n > 1 && d->fn.GetFenceStatus(device, f[i]) != VK_SUCCESS)
            continue;
        struct cap_ev *e = host_sync_op(d, SBT_OP_WAIT, "vkWaitForFences", s, 0, t0);
        if (e) {
            *tail = e;
            tail = &e->next;
        }
        cap_sync_reached(s, 0, &done);
    }
    cap_emit(head);
    pthread_mutex_unlock(&cap.mu);
    cap_reached_complete(d, &done, now);
    cap_kick();
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_GetFenceStatus(VkDevice device, VkFence f)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.GetFenceStatus(device, f), "vkGetFenceStatus");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    struct cap_reached done = {0};
    pthread_mutex_lock(&cap.mu);
    struct cap_sync *s = cap_obj_find(CAP_H(f), CAP_T_FENCE);
    if (s && s->n_sig && s->polled_n_sig != s->n_total) { /* a signal the host had not seen */
        s->polled_n_sig = s->n_total;
        cap_emit(host_sync_op(d, SBT_OP_WAIT, "vkGetFenceStatus", s, 0, t0));
        cap_sync_reached(s, 0, &done);
    }
    pthread_mutex_unlock(&cap.mu);
    cap_reached_complete(d, &done, cap_now());
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_WaitSemaphores(VkDevice device, const VkSemaphoreWaitInfo *wi,
                                                  uint64_t timeout)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.WaitSemaphores(device, wi, timeout), "vkWaitSemaphores");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    int any = (wi->flags & VK_SEMAPHORE_WAIT_ANY_BIT) && wi->semaphoreCount > 1;
    uint64_t now = cap_now();
    struct cap_reached done = {0};
    pthread_mutex_lock(&cap.mu);
    struct cap_ev *head = NULL, **tail = &head;
    for (uint32_t i = 0; i < wi->semaphoreCount; i++) {
        struct cap_sync *s = cap_obj_find(CAP_H(wi->pSemaphores[i]), CAP_T_SEM);
        if (!s)
            continue;
        uint64_t v = wi->pValues[i];
        if (any) {
            uint64_t cur = 0;
            if (d->fn.GetSemaphoreCounterValue(device, wi->pSemaphores[i], &cur) != VK_SUCCESS ||
                cur < v)
                continue;
        }
        struct cap_ev *e = host_sync_op(d, SBT_OP_WAIT, "vkWaitSemaphores", s, v, t0);
        if (e) {
            *tail = e;
            tail = &e->next;
        }
        cap_sync_reached(s, v, &done);
    }
    cap_emit(head);
    pthread_mutex_unlock(&cap.mu);
    cap_reached_complete(d, &done, now);
    cap_kick();
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_GetSemaphoreCounterValue(VkDevice device, VkSemaphore sem,
                                                            uint64_t *value)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.GetSemaphoreCounterValue(device, sem, value),
                               "vkGetSemaphoreCounterValue");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    struct cap_reached done = {0};
    pthread_mutex_lock(&cap.mu);
    struct cap_sync *s = cap_obj_find(CAP_H(sem), CAP_T_SEM);
    if (s && s->n_sig && (*value > s->polled_value || s->polled_n_sig != s->n_total)) {
        /* a value read back completes the signals up to it, as a wait would; the same value
         * again (a polling loop) tells nothing new */
        s->polled_value = *value;
        s->polled_n_sig = s->n_total;
        cap_emit(host_sync_op(d, SBT_OP_WAIT, "vkGetSemaphoreCounterValue", s, *value, t0));
        cap_sync_reached(s, *value, &done);
    }
    pthread_mutex_unlock(&cap.mu);
    cap_reached_complete(d, &done, cap_now());
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_SignalSemaphore(VkDevice device, const VkSemaphoreSignalInfo *si)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    if (CAP_ON()) {
        /* host writes before the signal may be read by work that waits for it */
        cap_publish_all(d, t0);
        pthread_mutex_lock(&cap.mu);
        struct cap_sync *s = cap_obj_find(CAP_H(si->semaphore), CAP_T_SEM);
        if (s)
            cap_emit(host_sync_op(d, SBT_OP_SIGNAL, "vkSignalSemaphore", s, si->value, t0));
        pthread_mutex_unlock(&cap.mu);
    }
    VkResult r = cap_vk_result(d->fn.SignalSemaphore(device, si), "vkSignalSemaphore");
    if (r == VK_SUCCESS && CAP_ON())
        cap_cpu_drain(d); /* work that waited for this value runs now */
    return r;
}

static VkResult host_event(VkDevice device, VkEvent ev, int set)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    if (CAP_ON()) {
        if (set) /* host writes before it may be read by work that waits for the event */
            cap_publish_all(d, t0);
        pthread_mutex_lock(&cap.mu);
        struct cap_ev *head = NULL, **tail = &head;
        struct cap_sync *s = cap_obj_find(CAP_H(ev), CAP_T_EVENT);
        if (s) /* device sets before this one no longer tell which set the host sees */
            s->n_sig = 0;
        if (s && set) {
            *tail = host_sync_op(d, SBT_OP_EVENT_RECORD, "vkSetEvent", s, 0, t0);
        } else if (s) {
            struct sbt_payload_enc enc = {0};
            sbt_payload_put(&enc, SBT_VK_RESET_SYNC, (uint64_t[]){VK_OBJECT_TYPE_EVENT, 1, s->o.id},
                            3, NULL, 0);
            *tail = cap_op_ev(d, SBT_OP_MARKER, "vkResetEvent", &enc, t0);
            sbt_payload_enc_free(&enc);
        }
        cap_emit(head);
        pthread_mutex_unlock(&cap.mu);
    }
    VkResult r = set ? cap_vk_result(d->fn.SetEvent(device, ev), "vkSetEvent")
                     : cap_vk_result(d->fn.ResetEvent(device, ev), "vkResetEvent");
    if (set && r == VK_SUCCESS && CAP_ON())
        cap_cpu_drain(d); /* work that waited for it runs now */
    return r;
}

/* The host sees an event set: when the only set since the host last set or reset it was
 * device work's (cap_vk_submit.c: cap_submit_events), that work finished, as a fence would
 * say. A poll that sees nothing new records nothing. */
VKAPI_ATTR VkResult VKAPI_CALL cap_GetEventStatus(VkDevice device, VkEvent ev)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.GetEventStatus(device, ev);
    if (r < 0)
        return cap_vk_result(r, "vkGetEventStatus");
    if (r != VK_EVENT_SET || !CAP_ON())
        return r;
    struct cap_reached done = {0};
    pthread_mutex_lock(&cap.mu);
    struct cap_sync *s = cap_obj_find(CAP_H(ev), CAP_T_EVENT);
    if (s && s->n_sig == 1 && s->polled_n_sig != s->n_total) {
        s->polled_n_sig = s->n_total;
        cap_emit(host_sync_op(d, SBT_OP_EVENT_WAIT, "vkGetEventStatus", s, 0, t0));
        done.n = 1;
        done.v[0].queue = s->sig[0].queue;
        done.v[0].serial = s->sig[0].serial;
    }
    pthread_mutex_unlock(&cap.mu);
    if (done.n)
        cap_reached_complete(d, &done, cap_now());
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_SetEvent(VkDevice device, VkEvent ev)
{
    return host_event(device, ev, 1);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_ResetEvent(VkDevice device, VkEvent ev)
{
    return host_event(device, ev, 0);
}

/* ========================================================================================== */
/* Submission and idle waits                                                                  */
/* ========================================================================================== */

static void blocked_set(uint64_t queue, uint64_t from);
static void emit_deferred(struct cap_queue *q);

/* The driver's vkQueueSubmit or vkQueueSubmit2, with its arguments. */
struct submit_call {
    VkResult (*fn)(const struct submit_call *c);
    const struct cap_dev *d;
    VkQueue queue;
    uint32_t n;
    const void *si;
    VkFence fence;
};

static VkResult call_submit1(const struct submit_call *c)
{
    return c->d->fn.QueueSubmit(c->queue, c->n, c->si, c->fence);
}

static VkResult call_submit2(const struct submit_call *c)
{
    return c->d->fn.QueueSubmit2(c->queue, c->n, c->si, c->fence);
}

/* A submission of batches b (NULL: out of memory describing them) around the driver's call.
 * Only the queue's own lock is held across the driver (cap_vk_submit.c, "Order"): the host
 * writes it can read are published first (once the driver has it, the device may be writing
 * mapped memory already, and that is not the host's doing), the batch is built, with its
 * device writes pending and its number in the trace taken, then the driver is called. */
static VkResult submit(struct cap_dev *d, const struct submit_call *c,
                       const struct cap_submit_batch *b, int version, const char *name, uint64_t t0)
{
    pthread_mutex_lock(&cap.mu);
    struct cap_queue *q = cap_obj_find(CAP_H(c->queue), CAP_T_QUEUE);
    pthread_mutex_unlock(&cap.mu);
    if (q)
        pthread_mutex_lock(&q->mu);
    cap_publish_all(d, t0);
    struct cap_ev *chain = NULL;
    uint64_t seq = 0, blocked = 0;
    int numbered = 0, st = 1;
    if (q && b) {
        pthread_mutex_lock(&cap.mu);
        chain = cap_submit_build(d, q, b, c->n, c->fence, version, t0, t0);
        if (chain) {
            cap_submit_events(q, q->serial, chain);
            /* a CPU device writes mapped memory with the CPU, into the pages the program
             * writes: waiting for it (below) leaves no time in which a host write could land
             * among its bytes. Only when nothing it or an earlier submission waits for is the
             * host's to do (a value it has yet to signal, an event it has yet to set): else
             * the device does not start it before the host does that; its ops are numbered
             * then, and cap_cpu_drain waits for it */
            if (d->cpu && cap.cpu_wait) {
                st = cap_queue_can_drain(d, q, &blocked);
                blocked_set(q->o.id, blocked);
            }
            if (st != 0) {
                emit_deferred(q); /* those before it first (not known blocked any more) */
                seq = cap_seq_take();
                numbered = 1;
            }
        }
        pthread_mutex_unlock(&cap.mu);
    }
    VkResult r = cap_vk_result(c->fn(c), name);
    uint64_t t1 = cap_now();
    if (r == VK_SUCCESS && !q) /* obtained while not recording: its work is not in the trace */
        cap_unmodelled(d,
                       version == 2 ? "vkQueueSubmit2 (queue not captured)"
                                    : "vkQueueSubmit (queue not captured)",
                       SBT_UNMODELLED_AFFECTS);
    if (chain && r != VK_SUCCESS) {
        /* refused: its signals and timing forgotten; its device writes stay pending until a
         * later wait on the queue (a program whose submission failed rarely writes there) */
        pthread_mutex_lock(&cap.mu);
        cap_submit_abandon(d, q, b, c->n, c->fence, chain);
        pthread_mutex_unlock(&cap.mu);
        chain = NULL;
    }
    for (struct cap_ev *e = chain; e; e = e->next)
        e->op.host_end = t1;
    int wait = 0;
    if (chain && d->cpu && cap.cpu_wait) {
        wait = st == 1 && q->writes_mapped;
        if (st != 1 && q->writes_mapped)
            q->stalled |= 1;
        if (blocked && q->writes_mapped)
            cap_mem_host_owned(d, q->o.id, blocked);
    }
    if (chain && !numbered) { /* kept until the host lets it start */
        if (q->n_deferred == q->cap_deferred) {
            uint32_t nc = q->cap_deferred ? 2 * q->cap_deferred : 8;
            struct cap_ev **v = realloc(q->deferred, nc * sizeof *v);
            if (v) {
                q->deferred = v;
                q->cap_deferred = nc;
            }
        }
        if (q->n_deferred < q->cap_deferred) {
            q->deferred[q->n_deferred++] = chain;
        } else { /* out of memory: numbered now, as before */
            seq = cap_seq_take();
            numbered = 1;
        }
        if (!numbered)
            chain = NULL;
    }
    /* --digests needs the results: the queue is drained here (not work that waits for the
     * host: that would wait for ever) */
    int idle = 0;
    if ((wait || cap.digests) && chain && st != 0)
        idle = d->fn.QueueWaitIdle(c->queue) == VK_SUCCESS;
    if (idle && cap.digests)
        cap_digest_ops(chain);
    uint64_t serial = chain ? q->serial : 0;
    if (numbered)
        cap_emit_seq(chain, seq); /* NULL when refused: the number is given back */
    if (idle && wait) {
        atomic_fetch_add(&cap.n_cpu_waits, 1);
        q->stalled &= ~1;
        cap_complete(d, q->o.id, serial, cap_now());
    }
    if (q)
        pthread_mutex_unlock(&q->mu);
    if (chain)
        cap_cpu_drain(d); /* its signals may let stalled work on other queues run */
    return r;
}

/* q->mu held. */
static void emit_deferred(struct cap_queue *q)
{
    for (uint32_t i = 0; i < q->n_deferred; i++)
        cap_emit_seq(q->deferred[i], cap_seq_take());
    q->n_deferred = 0;
}

void cap_queue_flush_deferred(struct cap_queue *q)
{
    pthread_mutex_lock(&q->mu);
    emit_deferred(q);
    pthread_mutex_unlock(&q->mu);
}

/* ========================================================================================== */
/* CPU devices                                                                                */
/* ========================================================================================== */

/* Notes that queue's submissions from serial from on cannot have started (0: none). */
static void blocked_set(uint64_t queue, uint64_t from)
{
    uint32_t free_slot = CAP_MAX_BLOCKED;
    for (uint32_t i = 0; i < CAP_MAX_BLOCKED; i++) {
        uint64_t k = atomic_load(&cap.blocked[i].queue);
        if (k == queue) {
            atomic_store(&cap.blocked[i].from, from);
            return;
        }
        if (!k && free_slot == CAP_MAX_BLOCKED)
            free_slot = i;
    }
    if (from && free_slot < CAP_MAX_BLOCKED) { /* else its may-writes stay the device's */
        atomic_store(&cap.blocked[free_slot].from, 0);
        atomic_store(&cap.blocked[free_slot].queue, queue);
        atomic_store(&cap.blocked[free_slot].from, from);
    }
}

void cap_cpu_drain(struct cap_dev *d)
{
    if (!d->cpu || !cap.cpu_wait)
        return;
    struct cap_queue *qs[16];
    uint32_t n = 0;
    pthread_mutex_lock(&cap.mu);
    uint64_t pos = 0, key, val;
    while (n < 16 && sbt_map_next(&cap.objs[CAP_T_QUEUE], &pos, &key, &val)) {
        struct cap_queue *q = (struct cap_queue *)(uintptr_t)val;
        if (q && q->o.dev == d && ((q->stalled & 1) || q->n_deferred || cap_blocked_from(q->o.id)))
            qs[n++] = q;
    }
    pthread_mutex_unlock(&cap.mu);
    for (uint32_t i = 0; i < n; i++) {
        struct cap_queue *q = qs[i];
        pthread_mutex_lock(&q->mu); /* queues are never destroyed before their device */
        pthread_mutex_lock(&cap.mu);
        uint64_t serial = q->serial, from;
        int st = cap_queue_can_drain(d, q, &from);
        blocked_set(q->o.id, from);
        int go = (q->stalled & 1) && q->done_serial < serial && st == 1;
        if ((q->stalled & 1) && q->done_serial >= serial)
            q->stalled &= ~1; /* a wait of the program's finished it meanwhile */
        pthread_mutex_unlock(&cap.mu);
        if (st != 0) /* it may run from now on: after what the host did before, in the trace */
            emit_deferred(q);
        VkQueue h = (VkQueue)(uintptr_t)q->o.handle;
        if (go && d->fn.QueueWaitIdle(h) == VK_SUCCESS) {
            atomic_fetch_add(&cap.n_cpu_waits, 1);
            q->stalled &= ~1;
            cap_complete(d, q->o.id, serial, cap_now());
        }
        pthread_mutex_unlock(&q->mu);
    }
}

VKAPI_ATTR VkResult VKAPI_CALL cap_QueueSubmit(VkQueue queue, uint32_t n, const VkSubmitInfo *si,
                                               VkFence fence)
{
    struct cap_dev *d = cap_dev_of(queue);
    CAP_COUNT();
    if (!CAP_ON())
        return cap_vk_result(d->fn.QueueSubmit(queue, n, si, fence), "vkQueueSubmit");
    uint64_t t0 = cap_now();
    struct cap_submit_batch bb[64], *b = n <= 64 ? bb : calloc(n, sizeof *b);
    uint64_t st[64];
    if (!b)
        cap_fail("out of memory for %u submit batches", n);
    for (uint32_t i = 0; b && i < n; i++) {
        const VkTimelineSemaphoreSubmitInfo *tl = NULL;
        for (const VkBaseInStructure *s = si[i].pNext; s; s = s->pNext)
            if (s->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO)
                tl = (const VkTimelineSemaphoreSubmitInfo *)s;
        b[i] = (struct cap_submit_batch){0};
        b[i].n_wait = si[i].waitSemaphoreCount;
        b[i].wait = si[i].pWaitSemaphores;
        b[i].n_cb = si[i].commandBufferCount;
        b[i].cb = si[i].pCommandBuffers;
        b[i].n_signal = si[i].signalSemaphoreCount;
        b[i].signal = si[i].pSignalSemaphores;
        if (tl && tl->pWaitSemaphoreValues &&
            tl->waitSemaphoreValueCount == si[i].waitSemaphoreCount)
            b[i].wait_value = tl->pWaitSemaphoreValues;
        if (tl && tl->pSignalSemaphoreValues &&
            tl->signalSemaphoreValueCount == si[i].signalSemaphoreCount)
            b[i].signal_value = tl->pSignalSemaphoreValues;
        /* stage masks are 32-bit in v1: widened into st when there are few */
        if (si[i].pWaitDstStageMask && si[i].waitSemaphoreCount <= 64 && n == 1) {
            for (uint32_t k = 0; k < si[i].waitSemaphoreCount; k++)
                st[k] = si[i].pWaitDstStageMask[k];
            b[i].wait_stage = st;
        }
    }
    struct submit_call c = {call_submit1, d, queue, n, si, fence};
    VkResult r = submit(d, &c, b, 1, "vkQueueSubmit", t0);
    if (b != bb)
        free(b);
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_QueueSubmit2(VkQueue queue, uint32_t n, const VkSubmitInfo2 *si,
                                                VkFence fence)
{
    struct cap_dev *d = cap_dev_of(queue);
    CAP_COUNT();
    if (!CAP_ON())
        return cap_vk_result(d->fn.QueueSubmit2(queue, n, si, fence), "vkQueueSubmit2");
    uint64_t t0 = cap_now();
    /* flatten the v2 infos into arrays of handles / values / stages */
    size_t nw = 0, nc = 0, ns = 0;
    for (uint32_t i = 0; i < n; i++) {
        nw += si[i].waitSemaphoreInfoCount;
        nc += si[i].commandBufferInfoCount;
        ns += si[i].signalSemaphoreInfoCount;
    }
    struct cap_submit_batch *b = calloc(n ? n : 1, sizeof *b);
    VkSemaphore *sem = calloc(nw + ns + 1, sizeof *sem);
    uint64_t *val = calloc(2 * (nw + ns) + 1, sizeof *val);
    VkCommandBuffer *cbs = calloc(nc + 1, sizeof *cbs);
    if (!b || !sem || !val || !cbs) {
        cap_fail("out of memory for a vkQueueSubmit2");
        free(b);
        b = NULL;
    } else {
        size_t is = 0, iv = 0, ic = 0;
        for (uint32_t i = 0; i < n; i++) {
            b[i].n_wait = si[i].waitSemaphoreInfoCount;
            b[i].wait = sem + is;
            b[i].wait_value = val + iv;
            b[i].wait_stage = val + iv + b[i].n_wait;
            for (uint32_t k = 0; k < b[i].n_wait; k++) {
                sem[is++] = si[i].pWaitSemaphoreInfos[k].semaphore;
                val[iv + k] = si[i].pWaitSemaphoreInfos[k].value;
                val[iv + b[i].n_wait + k] = si[i].pWaitSemaphoreInfos[k].stageMask;
            }
            iv += 2 * b[i].n_wait;
            b[i].n_cb = si[i].commandBufferInfoCount;
            b[i].cb = cbs + ic;
            for (uint32_t k = 0; k < b[i].n_cb; k++)
                cbs[ic++] = si[i].pCommandBufferInfos[k].commandBuffer;
            b[i].n_signal = si[i].signalSemaphoreInfoCount;
            b[i].signal = sem + is;
            b[i].signal_value = val + iv;
            b[i].signal_stage = val + iv + b[i].n_signal;
            for (uint32_t k = 0; k < b[i].n_signal; k++) {
                sem[is++] = si[i].pSignalSemaphoreInfos[k].semaphore;
                val[iv + k] = si[i].pSignalSemaphoreInfos[k].value;
                val[iv + b[i].n_signal + k] = si[i].pSignalSemaphoreInfos[k].stageMask;
            }
            iv += 2 * b[i].n_signal;
        }
    }
    struct submit_call c = {call_submit2, d, queue, n, si, fence};
    VkResult r = submit(d, &c, b, 2, "vkQueueSubmit2", t0);
    free(b);
    free(sem);
    free(val);
    free(cbs);
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_QueueWaitIdle(VkQueue queue)
{
    struct cap_dev *d = cap_dev_of(queue);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.QueueWaitIdle(queue), "vkQueueWaitIdle");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    struct cap_reached done = {0};
    pthread_mutex_lock(&cap.mu);
    struct cap_queue *q = cap_obj_find(CAP_H(queue), CAP_T_QUEUE);
    if (q) {
        struct cap_ev *e = cap_op_ev(d, SBT_OP_STREAM_SYNC, "vkQueueWaitIdle", NULL, t0);
        if (e) {
            e->obj_queue = q->o.id;
            e->op.flags = SBT_OPF_OBJ;
        }
        cap_emit(e);
        done.n = 1;
        done.v[0].queue = q->o.id;
        done.v[0].serial = q->serial;
    }
    pthread_mutex_unlock(&cap.mu);
    if (done.n) /* its queue, and what its work waited for on others */
        cap_reached_complete(d, &done, cap_now());
    cap_kick();
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_DeviceWaitIdle(VkDevice device)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.DeviceWaitIdle(device), "vkDeviceWaitIdle");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    struct cap_ev *e = cap_op_ev(d, SBT_OP_DEVICE_SYNC, "vkDeviceWaitIdle", NULL, t0);
    if (e)
        e->op.flags = SBT_OPF_OBJ;
    cap_emit(e);
    cap_complete(d, 0, UINT64_MAX, cap_now());
    cap_kick();
    return r;
}
