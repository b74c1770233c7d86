/*
 * replay/vk/replay_vk_queue.c — the Vulkan backend: one-shot submissions, staging memory, batches
 * (one replay command buffer per queue at a time) and their submission on a timeline semaphore,
 * completion reports with device times and read-back bytes, drain.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "format/sbt_vk.h"
#include "replay/vk/replay_vk_int.h"

/* ========================================================================================== */
/* One-shot submissions, staging, batches                                                     */
/* ========================================================================================== */

int vkr_oneshot_begin(struct vkbe *b, VkCommandBuffer *cb)
{
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = b->os_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkResult vr = vkAllocateCommandBuffers(b->dev, &ai, cb);
    if (vr != VK_SUCCESS)
        return VKFAIL(vr, "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkBeginCommandBuffer(*cb, &bi);
    return 0;
}

int vkr_oneshot_end(struct vkbe *b, VkCommandBuffer cb)
{
    vkEndCommandBuffer(cb);
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    VkResult vr = vkQueueSubmit(b->q[0].q, 1, &si, b->os_fence);
    if (vr == VK_SUCCESS)
        vr = vkWaitForFences(b->dev, 1, &b->os_fence, VK_TRUE, UINT64_MAX);
    vkResetFences(b->dev, 1, &b->os_fence);
    vkFreeCommandBuffers(b->dev, b->os_pool, 1, &cb);
    return vr == VK_SUCCESS ? 0 : VKFAIL(vr, "a one-shot submission");
}

int vkr_timestamp_calibrate(struct vkbe *b, struct rq *q)
{
    (void)q;
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                .queryCount = 1};
    VkQueryPool qp;
    if (vkCreateQueryPool(b->dev, &qi, NULL, &qp) != VK_SUCCESS)
        return 0;
    VkCommandBuffer cb;
    if (vkr_oneshot_begin(b, &cb) < 0) {
        vkDestroyQueryPool(b->dev, qp, NULL);
        return 0;
    }
    vkCmdResetQueryPool(cb, qp, 0, 1);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
    uint64_t h0 = replay__now_ns();
    vkr_oneshot_end(b, cb);
    uint64_t h1 = replay__now_ns();
    uint64_t t = 0;
    if (vkGetQueryPoolResults(b->dev, qp, 0, 1, sizeof t, &t, sizeof t,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS)
        b->ts_offset = (int64_t)(h0 + (h1 - h0) / 4) - (int64_t)((double)t * b->ts_period);
    vkDestroyQueryPool(b->dev, qp, NULL);
    return 0;
}

uint32_t vkr_find_type(const struct vkbe *b, uint32_t bits, uint32_t need, uint32_t prefer)
{
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < b->memp.memoryTypeCount; i++) {
        if (!(bits & (1u << i)))
            continue;
        uint32_t f = b->memp.memoryTypes[i].propertyFlags;
        if ((f & need) != need)
            continue;
        int score = __builtin_popcount(f & prefer) * 2 - __builtin_popcount(f & ~(need | prefer));
        if (score > best_score)
            best = (int)i, best_score = score;
    }
    return best < 0 ? UINT32_MAX : (uint32_t)best;
}

struct staging *vkr_staging_get(struct vkbe *b, uint64_t need)
{
    struct staging **pp = &b->free_staging;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->size >= need) {
            struct staging *s = *pp;
            *pp = s->next;
            s->next = NULL;
            s->used = 0;
            return s;
        }
    uint64_t size = need > STAGING_CHUNK ? need : STAGING_CHUNK;
    struct staging *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->size = size;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT, /* reads, writes */
                              .sharingMode = b->n_families > 1 ? VK_SHARING_MODE_CONCURRENT
                                                               : VK_SHARING_MODE_EXCLUSIVE,
                              .queueFamilyIndexCount = b->n_families > 1 ? b->n_families : 0,
                              .pQueueFamilyIndices = b->families};
    VkMemoryRequirements mr;
    if (vkCreateBuffer(b->dev, &bci, NULL, &s->buf) != VK_SUCCESS)
        goto fail;
    vkGetBufferMemoryRequirements(b->dev, s->buf, &mr);
    uint32_t t =
        vkr_find_type(b, mr.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                      VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (t == UINT32_MAX)
        goto fail;
    s->coherent =
        (b->memp.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = mr.size,
                               .memoryTypeIndex = t};
    if (vkAllocateMemory(b->dev, &ai, NULL, &s->mem) != VK_SUCCESS)
        goto fail;
    if (vkBindBufferMemory(b->dev, s->buf, s->mem, 0) != VK_SUCCESS ||
        vkMapMemory(b->dev, s->mem, 0, VK_WHOLE_SIZE, 0, (void **)&s->map) != VK_SUCCESS)
        goto fail;
    return s;
fail:
    if (s->mem)
        vkFreeMemory(b->dev, s->mem, NULL);
    if (s->buf)
        vkDestroyBuffer(b->dev, s->buf, NULL);
    free(s);
    return NULL;
}

void vkr_staging_destroy(struct vkbe *b, struct staging *s)
{
    while (s) {
        struct staging *n = s->next;
        vkDestroyBuffer(b->dev, s->buf, NULL);
        vkFreeMemory(b->dev, s->mem, NULL);
        free(s);
        s = n;
    }
}

int vkr_batch_open(struct vkbe *b, struct rq *q)
{
    if (q->open)
        return 0;
    /* a batch is made for its queue (its command buffer comes from the queue's pool) and freed
     * when retired */
    struct batch *x = calloc(1, sizeof *x);
    if (!x)
        return replay__fail(SBT_ENOMEM, "out of memory");
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = q->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkResult vr = vkAllocateCommandBuffers(b->dev, &ai, &x->cb);
    if (vr != VK_SUCCESS) {
        free(x);
        return VKFAIL(vr, "vkAllocateCommandBuffers");
    }
    if (q->ts) {
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                    .queryCount = QUERIES};
        if (vkCreateQueryPool(b->dev, &qi, NULL, &x->qp) != VK_SUCCESS)
            x->qp = VK_NULL_HANDLE;
    }
    x->has_cmds = 0;
    x->had_base = 0;
    x->bound_pipe = VK_NULL_HANDLE;
    x->value = q->value + 1;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkResetCommandBuffer(x->cb, 0);
    vkBeginCommandBuffer(x->cb, &bi);
    if (x->qp)
        vkCmdResetQueryPool(x->cb, x->qp, 0, QUERIES);
    q->open = x;
    return 0;
}

int vkr_batch_add_wait(struct batch *x, VkSemaphore s, uint64_t v)
{
    for (uint32_t i = 0; i < x->n_wait; i++)
        if (x->wait_sem[i] == s) {
            if (x->wait_val[i] < v)
                x->wait_val[i] = v;
            return 0;
        }
    uint32_t c = x->cap_wait;
    if (grow((void **)&x->wait_sem, &c, x->n_wait + 1, sizeof *x->wait_sem) < 0)
        return SBT_ENOMEM;
    c = x->cap_wait;
    if (grow((void **)&x->wait_val, &c, x->n_wait + 1, sizeof *x->wait_val) < 0)
        return SBT_ENOMEM;
    x->cap_wait = c;
    x->wait_sem[x->n_wait] = s;
    x->wait_val[x->n_wait++] = v;
    return 0;
}

int vkr_flush(struct vkbe *b, struct rq *q)
{
    (void)b;
    struct batch *x = q->open;
    if (!x)
        return 0;
    q->open = NULL;
    vkEndCommandBuffer(x->cb);
    /* submission order on one queue does not order execution: chain on the previous batch */
    if (x->value > 1 && vkr_batch_add_wait(x, q->timeline, x->value - 1) < 0)
        return SBT_ENOMEM;
    VkPipelineStageFlags *stages = calloc(x->n_wait + 1, sizeof *stages);
    if (!stages)
        return replay__fail(SBT_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < x->n_wait; i++)
        stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .waitSemaphoreValueCount = x->n_wait,
                                        .pWaitSemaphoreValues = x->wait_val,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &x->value};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ts,
                       .waitSemaphoreCount = x->n_wait,
                       .pWaitSemaphores = x->wait_sem,
                       .pWaitDstStageMask = stages,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &x->cb,
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &q->timeline};
    VkResult vr = vkQueueSubmit(q->q, 1, &si, VK_NULL_HANDLE);
    free(stages);
    if (vr != VK_SUCCESS)
        return VKFAIL(vr, "vkQueueSubmit");
    q->value = x->value;
    *q->flight_tail = x;
    q->flight_tail = &x->next;
    return 0;
}

static uint64_t ts_ns(const struct vkbe *b, uint64_t t)
{
    int64_t v = (int64_t)((double)(t & b->ts_mask) * b->ts_period) + b->ts_offset;
    return v < 0 ? 0 : (uint64_t)v;
}

/* Reports the ops of a completed batch and recycles it. */
static void retire(struct vkbe *b, struct rq *q, struct batch *x)
{
    uint64_t tq[QUERIES];
    int have_ts = 0;
    if (x->qp && x->n_queries)
        have_ts = vkGetQueryPoolResults(b->dev, x->qp, 0, x->n_queries, sizeof tq, tq, sizeof tq[0],
                                        VK_QUERY_RESULT_64_BIT) == VK_SUCCESS;
    for (struct staging *s = x->staging; s; s = s->next)
        if (!s->coherent) {
            VkMappedMemoryRange mr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                      .memory = s->mem,
                                      .size = VK_WHOLE_SIZE};
            vkInvalidateMappedMemoryRanges(b->dev, 1, &mr);
        }
    /* every access of an op read back, however many it has (a digest covers all its outputs) */
    uint32_t most = 0;
    for (uint32_t i = 0; i < x->n_ops; i++)
        if (x->ops[i].n_rb && x->ops[i].n_access > most)
            most = x->ops[i].n_access;
    const void **bytes = most ? calloc(most, sizeof *bytes) : NULL;
    uint64_t *len = most ? calloc(most, sizeof *len) : NULL;
    for (uint32_t i = 0; i < x->n_ops; i++) {
        const struct bop *o = &x->ops[i];
        struct replay_done d = {.slot = o->slot};
        if (have_ts && o->q0 >= 0) {
            d.has_dev_time = 1;
            d.dev_begin = ts_ns(b, tq[o->q0]);
            d.dev_end = ts_ns(b, tq[o->q0 + 1]);
        }
        if (o->n_rb && bytes && len) { /* (out of memory: reported without bytes, unverified) */
            uint32_t na = o->n_access;
            memset(bytes, 0, na * sizeof *bytes);
            memset(len, 0, na * sizeof *len);
            for (uint32_t k = 0; k < o->n_rb; k++) {
                const struct rb *r = &x->rbs[o->rb0 + k];
                if (r->acc < na) {
                    bytes[r->acc] = r->st->map + r->off;
                    len[r->acc] = r->len;
                }
            }
            d.n_access = na;
            d.bytes = bytes;
            d.len = len;
        }
        b->cb.done(b->cb.eng, &d);
    }
    free(bytes);
    free(len);
    /* staging and descriptor pools go back for reuse; the batch itself is freed */
    struct staging *s = x->staging;
    while (s) {
        struct staging *n = s->next;
        s->next = b->free_staging;
        b->free_staging = s;
        s = n;
    }
    x->staging = NULL;
    for (uint32_t i = 0; i < x->n_pools; i++) {
        vkResetDescriptorPool(b->dev, x->pools[i].pool, 0);
        if (!grow((void **)&b->free_pools, &b->cap_free_pools, b->n_free_pools + 1,
                  sizeof *b->free_pools))
            b->free_pools[b->n_free_pools++] = x->pools[i];
        else
            vkDestroyDescriptorPool(b->dev, x->pools[i].pool, NULL);
    }
    free(x->ops);
    free(x->rbs);
    free(x->acc);
    free(x->acc_seq);
    free(x->wait_sem);
    free(x->wait_val);
    free(x->pools);
    if (x->qp)
        vkDestroyQueryPool(b->dev, x->qp, NULL);
    vkFreeCommandBuffers(b->dev, q->pool, 1, &x->cb);
    free(x);
}

/* Waits until queue q reached value v (flushing first if v is the open batch) and retires. */
int vkr_wait_value(struct vkbe *b, struct rq *q, uint64_t v)
{
    if (q->open && q->open->value <= v) {
        int st = vkr_flush(b, q);
        if (st < 0)
            return st;
    }
    if (v > q->done_value) {
        VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                  .semaphoreCount = 1,
                                  .pSemaphores = &q->timeline,
                                  .pValues = &v};
        VkResult vr = vkWaitSemaphores(b->dev, &wi, UINT64_MAX);
        if (vr != VK_SUCCESS)
            return VKFAIL(vr, "vkWaitSemaphores");
    }
    while (q->flight && q->flight->value <= v) {
        struct batch *x = q->flight;
        q->flight = x->next;
        if (!q->flight)
            q->flight_tail = &q->flight;
        if (x->value > q->done_value)
            q->done_value = x->value;
        retire(b, q, x);
    }
    return 0;
}

/* Retires what has completed without waiting. */
void vkr_poll_done(struct vkbe *b, struct rq *q)
{
    uint64_t v = 0;
    if (!q->flight || vkGetSemaphoreCounterValue(b->dev, q->timeline, &v) != VK_SUCCESS)
        return;
    if (v >= q->flight->value)
        vkr_wait_value(b, q, v);
}

void vkr_dead_bufs_free(struct vkbe *b)
{
    for (uint32_t i = 0; i < b->n_dead; i++)
        vkr_buf_destroy(b, b->dead_bufs[i]);
    b->n_dead = 0;
}

int vkr_drain(void *be)
{
    struct vkbe *b = be;
    for (uint32_t i = 0; i < b->n_q; i++) {
        struct rq *q = &b->q[i];
        uint64_t v = q->open ? q->open->value : q->value;
        int st = vkr_wait_value(b, q, v);
        if (st < 0)
            return st;
    }
    vkr_dead_bufs_free(b);
    vkr_dead_images_free(b);
    return 0;
}
