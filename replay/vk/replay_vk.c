/*
 * replay/vk/replay_vk.c — the Vulkan backend of the replay engine (replay_int.h): re-executes a
 * captured compute stream (format/sbt_vk.h says what the capture records) through the loader
 * on any ICD — lavapipe in CI, a GPU elsewhere.
 *
 * Ops, not command buffers. Every device op the capture expanded (dispatch, copy, fill,
 * update) carries a self-contained payload: pipeline, resolved bindings, push constants. The
 * backend records those ops itself, one replay command buffer per queue at a time ("batch"),
 * instead of re-submitting the application's recordings. That makes a range replay and a full
 * replay the same code (the slice is just a subset of ops), lets verification copy an op's
 * outputs right behind it, and puts timestamps around each op.
 *
 * Ordering. The engine delivers ops in the scheduler's topological order with their edges.
 * Each trace queue maps to a replay VkQueue with one timeline semaphore; a batch signals the
 * next value of its queue's timeline when submitted and waits for the previous batch of the
 * same queue. An edge from an op in another queue's batch becomes a wait on that timeline
 * value (submitting that batch first if still open); an edge from an op earlier in the same
 * open batch, or an access overlapping one since the last barrier with a write on either side
 * (hazard edges within a stream are implied, so the scheduler does not deliver them), becomes
 * a full memory barrier. Host ops (host writes and reads, host waits, frees) first wait on the
 * host for the batches their predecessors are in. So the captured semaphores, fences and
 * events are honoured through the graph's edges, and independent queues run concurrently.
 *
 * Memory. Captured allocations map to replay memory types by property flags (host-visible
 * kept, device-local and cached preferred), so a trace from another memory-type layout still
 * replays. New allocations are zero-filled (the capture's page shadow starts as zeros). Each
 * allocation gets a "whole" buffer over it for zero-fill and read-back. Host-visible memory
 * stays mapped.
 *
 * Descriptor sets are built per dispatch from the dispatch's resolved bindings, from pools
 * owned by the batch and reset when it completes, so a dispatch replays on its own: pushed
 * descriptors, bound sets and dynamic offsets (already applied to the bindings' offsets) all
 * come down to sets written just before the dispatch. Set layouts keep their binding flags
 * (partially bound, variable counts, update after bind) and update-after-bind pools.
 *
 * Images are resources of their own, in memory of their own and the general layout; their
 * bytes, as read() returns and read-backs report them, are the trace's packed layout
 * (replay_vk_image.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "format/sbt_vk.h"
#include "replay/vk/replay_vk_int.h"

static int vk_exec(void *be, const struct replay_x *rx)
{
    struct vkbe *b = be;
    const struct sched_node *n = rx->node;
    const struct sbt_op *op = n->op;
    int32_t qi = op->stream <= b->n_streams ? b->stream_q[op->stream] : -1;
    int st = 0;
    switch (op->kind) {
    case SBT_OP_KERNEL:
    case SBT_OP_COPY:
    case SBT_OP_FILL:
        st = vkr_exec_device(b, rx, qi);
        for (uint32_t i = 0; i < b->n_q; i++)
            vkr_poll_done(b, &b->q[i]);
        return st;
    case SBT_OP_SUBMIT:
    case SBT_OP_SIGNAL:
    case SBT_OP_WAIT:
    case SBT_OP_EVENT_RECORD:
    case SBT_OP_EVENT_WAIT:
        if (qi >= 0)
            return vkr_exec_queue_mark(b, rx, qi);
        break; /* a host-side wait / signal: host_wait_deps below */
    case SBT_OP_HOST_WRITE:
    case SBT_OP_HOST_READ:
    case SBT_OP_ALLOC:
    case SBT_OP_FREE:
    case SBT_OP_MARKER:
    case SBT_OP_STREAM_SYNC:
    case SBT_OP_DEVICE_SYNC:
    case SBT_OP_STREAM_CREATE:
    case SBT_OP_STREAM_DESTROY:
        break;
    default:
        return replay__fail(REPLAY_EUNSUPPORTED, "op kind %u is not supported", op->kind);
    }
    if ((st = vkr_host_wait_deps(b, n)) < 0)
        return st;
    switch (op->kind) {
    case SBT_OP_HOST_WRITE:
        st = vkr_host_write(b, op);
        break;
    case SBT_OP_HOST_READ:
        return vkr_host_read(b, rx);
    case SBT_OP_ALLOC:
        st = vkr_mem_alloc(b, op);
        break;
    case SBT_OP_FREE: {
        struct mem *m = sbt_map_getp(&b->mems, op->resource);
        struct img *im = m ? NULL : sbt_map_getp(&b->imgs, op->resource);
        if (m) {
            /* work on it is done (the FREE edges), but a buffer on it may be queued to die */
            if ((st = vkr_drain(b)) < 0)
                return st;
            sbt_map_del(&b->mems, op->resource);
            vkr_mem_destroy(b, m);
        } else if (im) {
            vkr_image_free(b, im);
        }
        break;
    }
    case SBT_OP_MARKER:
        st = vkr_marker(b, op);
        break;
    default:
        break;
    }
    if (st < 0)
        return st;
    struct replay_done d = {.slot = rx->slot};
    b->cb.done(b->cb.eng, &d);
    return 0;
}

/* A memory's bytes as they lie; an image's in its packed layout (format/sbt_vk.h): zeros
 * before it is bound (binding zero-fills it, so a snapshot then restores the same). */
static int vk_read(void *be, uint64_t resource, uint64_t off, uint64_t len, void *dst)
{
    struct vkbe *b = be;
    struct img *im = sbt_map_getp(&b->imgs, resource);
    if (im) {
        if (off > im->packed_size || len > im->packed_size - off)
            return replay__fail(SBT_EINVAL, "read of image %" PRIu64 ": out of bounds", resource);
        if (!im->mem) {
            memset(dst, 0, len);
            return 0;
        }
        return vkr_img_read(b, im, off, dst, len);
    }
    struct mem *m = sbt_map_getp(&b->mems, resource);
    if (!m || off > m->size || len > m->size - off)
        return replay__fail(SBT_EINVAL, "read of memory %" PRIu64 ": %s", resource,
                            m ? "out of bounds" : "no such memory");
    return vkr_mem_read(b, m, off, dst, len);
}

/* Restores (snapshots, a trimmed trace's initial contents): wherever the bytes live; an
 * image's in its packed layout. */
static int vk_write(void *be, uint64_t resource, uint64_t off, uint64_t len, const void *src)
{
    struct vkbe *b = be;
    struct img *im = sbt_map_getp(&b->imgs, resource);
    if (im) {
        if (off > im->packed_size || len > im->packed_size - off)
            return replay__fail(SBT_EINVAL, "write of image %" PRIu64 ": out of bounds", resource);
        if (!im->mem) { /* before its bind: nothing to hold bytes, and binding zero-fills it */
            for (uint64_t i = 0; i < len; i++)
                if (((const uint8_t *)src)[i])
                    return replay__fail(
                        SBT_EINVAL, "write of image %" PRIu64 ": no memory bound yet", resource);
            return 0;
        }
        return vkr_img_write(b, im, off, src, len);
    }
    struct mem *m = sbt_map_getp(&b->mems, resource);
    if (!m || off > m->size || len > m->size - off)
        return replay__fail(SBT_EINVAL, "write of memory %" PRIu64 ": %s", resource,
                            m ? "out of bounds" : "no such memory");
    return vkr_mem_write(b, m, off, src, len);
}

/* ========================================================================================== */
/* reset, close                                                                               */
/* ========================================================================================== */

static void vk_reset(void *be)
{
    struct vkbe *b = be;
    if (!b->dev)
        return;
    vkr_drain(b);
    vkDeviceWaitIdle(b->dev);
    for (uint32_t i = 0; i < b->n_q; i++) {
        struct rq *q = &b->q[i];
        if (q->open) { /* a failed run may leave one open */
            vkr_flush(b, q);
            vkr_wait_value(b, q, q->value);
        }
    }
    struct buf *x;
    for (uint64_t pos = 0; (x = sbt_map_nextp(&b->bufs, &pos));)
        vkr_buf_destroy(b, x);
    struct bview *v;
    for (uint64_t pos = 0; (v = sbt_map_nextp(&b->views, &pos));) {
        vkDestroyBufferView(b->dev, v->view, NULL);
        free(v);
    }
    vkr_images_reset(b);
    struct mem *m;
    for (uint64_t pos = 0; (m = sbt_map_nextp(&b->mems, &pos));)
        vkr_mem_destroy(b, m);
    struct pipe *p;
    for (uint64_t pos = 0; (p = sbt_map_nextp(&b->pipes, &pos));) {
        if (p->pipe)
            vkDestroyPipeline(b->dev, p->pipe, NULL);
        free(p->error);
        free(p->used);
        free(p);
    }
    struct playout *pl;
    for (uint64_t pos = 0; (pl = sbt_map_nextp(&b->playouts, &pos));) {
        vkDestroyPipelineLayout(b->dev, pl->pl, NULL);
        free(pl);
    }
    struct setlayout *s;
    for (uint64_t pos = 0; (s = sbt_map_nextp(&b->setlayouts, &pos));) {
        vkDestroyDescriptorSetLayout(b->dev, s->dsl, NULL);
        free(s->binding);
        free(s->type);
        free(s->count);
        free(s->flags);
        free(s);
    }
    sbt_map_free(&b->bufs);
    sbt_map_free(&b->views);
    sbt_map_free(&b->mems);
    sbt_map_free(&b->host_mems);
    sbt_map_free(&b->pipes);
    sbt_map_free(&b->playouts);
    sbt_map_free(&b->setlayouts);
    vkr_dead_bufs_free(b);
    if (b->slot_q) /* slots start again at 1 in the next run */
        memset(b->slot_q, 0, b->n_slots);
}

static void vk_close(void *be)
{
    struct vkbe *b = be;
    if (!b)
        return;
    if (b->dev) {
        vk_reset(b);
        vkr_staging_destroy(b, b->free_staging);
        for (uint32_t i = 0; i < b->n_free_pools; i++)
            vkDestroyDescriptorPool(b->dev, b->free_pools[i].pool, NULL);
        for (uint32_t i = 0; i < b->n_q; i++) {
            if (b->q[i].timeline)
                vkDestroySemaphore(b->dev, b->q[i].timeline, NULL);
            if (b->q[i].pool)
                vkDestroyCommandPool(b->dev, b->q[i].pool, NULL);
        }
        if (b->os_fence)
            vkDestroyFence(b->dev, b->os_fence, NULL);
        if (b->os_pool)
            vkDestroyCommandPool(b->dev, b->os_pool, NULL);
        vkDestroyDevice(b->dev, NULL);
    }
    if (b->inst)
        vkDestroyInstance(b->inst, NULL);
    free(b->free_pools);
    free(b->scr.w);
    free(b->scr.bi);
    free(b->scr.bv);
    free(b->scr.ii);
    free(b->scr.written);
    free(b->scr.dyn);
    free(b->dead_bufs);
    free(b->dead_imgs);
    free(b->dead_iviews);
    free(b->dead_samplers);
    free(b->stream_q);
    free(b->slot_q);
    free(b->slot_val);
    free(b);
}

const struct replay_backend replay__vk_backend = {
    .name = "vulkan",
    .api = SBT_API_VULKAN,
    .devices = vkr_devices,
    .open = vkr_open,
    .prepare = vkr_prepare,
    .exec = vk_exec,
    .drain = vkr_drain,
    .read = vk_read,
    .write = vk_write,
    .state_op = vkr_state_op,
    .reset = vk_reset,
    .close = vk_close,
};