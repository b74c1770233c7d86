/*
 * tests/vk/vk_bench.c — the workloads of bench/vk_capture_overhead.sh (capture overhead side
 * by side with GFXReconstruct), also runnable on their own:
 *
 *   vk_bench dispatch [--reuse]  20,000 small dispatches in 100 submissions of 200, each with
 *                                its push constants and a barrier; a fence wait per submission.
 *                                The command buffer is re-recorded for every submission, or
 *                                recorded once and resubmitted with --reuse.
 *   vk_bench data                4 rounds over 64 MiB buffers: the host writes 64 MiB through a
 *                                mapping, one dispatch transforms it, the host reads 64 MiB back.
 *   vk_bench gate [--slow PCT] [--submits N]
 *                                the timing gate's workload (bench/gate_timing.sh): N (default
 *                                20) submissions of 100 dispatches over 4096 elements, saxpy
 *                                (saxpy.comp, 48 iterations per element) alternating with
 *                                bench.comp; the host reads the result back after each fence.
 *                                --slow PCT gives saxpy PCT% more iterations: that one kernel
 *                                gets slower, everything else stays as it was.
 *   vk_bench train               a training-loop-like chain (bench/RESULTS.md, range replay from
 *                                snapshots and trim): 20,000 steps in 100 submissions of 200;
 *                                before each submission the host writes a fresh input batch
 *                                (200 slices of 1 KiB) through a mapping; step k reads the
 *                                weights step k-1 wrote (64 KiB, ping-pong between two
 *                                device-local buffers) and its slice of the batch, and writes
 *                                the new weights (tests/vk/train.comp); a fence wait and a
 *                                read-back of the weights per submission.
 *   vk_bench sparse              the same 64 MiB buffers as data, mapped, but 100 rounds that each
 *                                write 4 KiB somewhere in the input and read 4 KiB of output
 *                                back: what capture costs should follow what the host writes,
 *                                not what is mapped.
 *   vk_bench threads             2 threads, each with 16 MiB mapped in and out, 200 rounds each:
 *                                16 KiB written, one dispatch over it, submitted to the shared
 *                                queue (a mutex, as Vulkan requires), waited for, 16 KiB read
 *                                back: do the threads wait for each other in the layer?
 *
 * Prints a checksum of everything read back, so runs with and without capture compare.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vk/vkt.h"

#define N_SUBMITS    100u
#define N_PER_SUBMIT 200u
#define SMALL_N      256u             /* elements per small dispatch */
#define BIG_BYTES    (64u << 20)      /* data workload buffers */
#define BIG_N        (BIG_BYTES / 4u) /* elements */
#define ROW_GROUPS   4096u            /* groups per row of the 2D grid */
#define N_ROUNDS     4u

static uint64_t sum64(uint64_t h, const void *p, size_t n)
{
    const uint64_t *w = p;
    for (size_t i = 0; i < n / 8; i++)
        h = (h ^ w[i]) * 0x100000001b3ull + (h >> 29);
    return h;
}

static void barrier(VkCommandBuffer cb)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &mb, 0, NULL, 0, NULL);
}

struct ctx {
    struct vkt v;
    struct vkt_pipe p;
    VkDescriptorPool pool;
    VkDescriptorSet set;
    VkCommandPool cpool;
    VkCommandBuffer cb;
    VkFence fence;
};

static void setup(struct ctx *c, const char *argv0, struct vkt_buf *in, struct vkt_buf *out)
{
    VkDescriptorType t[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    vkt_pipeline(&c->v, "bench", 2, t, 8, NULL, &c->p);
    (void)argv0;
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 2,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &size};
    VKT_CHECK(vkCreateDescriptorPool(c->v.dev, &dpci, NULL, &c->pool));
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = c->pool,
                                        .descriptorSetCount = 1,
                                        .pSetLayouts = &c->p.dsl};
    VKT_CHECK(vkAllocateDescriptorSets(c->v.dev, &dsai, &c->set));
    VkDescriptorBufferInfo bi[] = {{in->buf, 0, VK_WHOLE_SIZE}, {out->buf, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = c->set,
                              .dstBinding = 0,
                              .descriptorCount = 2,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = bi};
    vkUpdateDescriptorSets(c->v.dev, 1, &w, 0, NULL);
    VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = c->v.family};
    VKT_CHECK(vkCreateCommandPool(c->v.dev, &cpci, NULL, &c->cpool));
    VkCommandBufferAllocateInfo cbai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                        .commandPool = c->cpool,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                        .commandBufferCount = 1};
    VKT_CHECK(vkAllocateCommandBuffers(c->v.dev, &cbai, &c->cb));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKT_CHECK(vkCreateFence(c->v.dev, &fci, NULL, &c->fence));
}

static void begin(struct ctx *c)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VKT_CHECK(vkBeginCommandBuffer(c->cb, &bi));
    vkCmdBindPipeline(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, c->p.pipe);
    vkCmdBindDescriptorSets(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, c->p.layout, 0, 1, &c->set, 0,
                            NULL);
}

static void submit_wait(struct ctx *c)
{
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &c->cb};
    VKT_CHECK(vkQueueSubmit(c->v.queue[0], 1, &si, c->fence));
    VKT_CHECK(vkWaitForFences(c->v.dev, 1, &c->fence, VK_TRUE, UINT64_MAX));
    VKT_CHECK(vkResetFences(c->v.dev, 1, &c->fence));
}

static void record_small(struct ctx *c, uint32_t s)
{
    begin(c);
    for (uint32_t i = 0; i < N_PER_SUBMIT; i++) {
        uint32_t pc[2] = {s * N_PER_SUBMIT + i, SMALL_N};
        vkCmdPushConstants(c->cb, c->p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
        vkCmdDispatch(c->cb, SMALL_N / 64, 1, 1);
        barrier(c->cb);
    }
    VKT_CHECK(vkEndCommandBuffer(c->cb));
}

static uint64_t dispatch_heavy(struct ctx *c, struct vkt_buf *in, struct vkt_buf *out, int reuse)
{
    uint32_t *p = in->map;
    for (uint32_t i = 0; i < SMALL_N; i++)
        p[i] = i * 7u + 1u;
    uint64_t h = 0;
    for (uint32_t s = 0; s < N_SUBMITS; s++) {
        if (!reuse || s == 0)
            record_small(c, s);
        submit_wait(c);
        h = sum64(h, out->map, SMALL_N * 4);
    }
    return h;
}

#define GATE_N          4096u /* elements */
#define GATE_PER_SUBMIT 100u
#define GATE_ITERS      48u

/* saxpy and bench alternate; each dispatch waits for the one before (barrier) */
static uint64_t gate(struct ctx *c, struct vkt_buf *x, struct vkt_buf *y, uint32_t submits,
                     uint32_t slow_pct)
{
    VkDescriptorType t[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    struct vkt_pipe sp;
    vkt_pipeline(&c->v, "saxpy", 2, t, 12, NULL, &sp);
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = c->pool,
                                        .descriptorSetCount = 1,
                                        .pSetLayouts = &sp.dsl};
    VkDescriptorSet set;
    VKT_CHECK(vkAllocateDescriptorSets(c->v.dev, &dsai, &set));
    VkDescriptorBufferInfo bi[] = {{x->buf, 0, VK_WHOLE_SIZE}, {y->buf, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = set,
                              .dstBinding = 0,
                              .descriptorCount = 2,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = bi};
    vkUpdateDescriptorSets(c->v.dev, 1, &w, 0, NULL);
    uint32_t *px = x->map, *py = y->map;
    for (uint32_t i = 0; i < GATE_N; i++)
        px[i] = i * 2654435761u + 1u, py[i] = i;
    uint32_t iters = GATE_ITERS + GATE_ITERS * slow_pct / 100u;
    uint64_t h = 0;
    for (uint32_t s = 0; s < submits; s++) {
        begin(c); /* binds bench and its set (x -> y) */
        for (uint32_t i = 0; i < GATE_PER_SUBMIT; i++) {
            if (i % 2 == 0) {
                uint32_t pc[3] = {3u + s, GATE_N, iters};
                vkCmdBindPipeline(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, sp.pipe);
                vkCmdBindDescriptorSets(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, sp.layout, 0, 1,
                                        &set, 0, NULL);
                vkCmdPushConstants(c->cb, sp.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 12, pc);
            } else {
                uint32_t pc[2] = {s * GATE_PER_SUBMIT + i, GATE_N};
                vkCmdBindPipeline(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, c->p.pipe);
                vkCmdBindDescriptorSets(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, c->p.layout, 0, 1,
                                        &c->set, 0, NULL);
                vkCmdPushConstants(c->cb, c->p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
            }
            vkCmdDispatch(c->cb, GATE_N / 64, 1, 1);
            barrier(c->cb);
        }
        VKT_CHECK(vkEndCommandBuffer(c->cb));
        submit_wait(c);
        h = sum64(h, y->map, GATE_N * 4);
    }
    VKT_CHECK(vkDeviceWaitIdle(c->v.dev));
    vkt_pipeline_free(&c->v, &sp);
    return h;
}

#define TRAIN_N  16384u /* weights */
#define TRAIN_XN 256u   /* input elements per step */

/* The train workload: its own pipeline (3 bindings), two descriptor sets (A -> B, B -> A). */
static uint64_t train(struct ctx *c)
{
    struct vkt_buf x, w[2], rb;
    vkt_buffer(&c->v, (VkDeviceSize)N_PER_SUBMIT * TRAIN_XN * 4, 1, &x);
    vkt_buffer(&c->v, TRAIN_N * 4, 0, &w[0]);
    vkt_buffer(&c->v, TRAIN_N * 4, 0, &w[1]);
    vkt_buffer(&c->v, TRAIN_N * 4, 1, &rb);
    struct vkt_pipe p;
    VkDescriptorType t[3] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                             VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    vkt_pipeline(&c->v, "train", 3, t, 12, NULL, &p);
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 6};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 2,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &size};
    VkDescriptorPool pool;
    VKT_CHECK(vkCreateDescriptorPool(c->v.dev, &dpci, NULL, &pool));
    VkDescriptorSetLayout dsl[2] = {p.dsl, p.dsl};
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = pool,
                                        .descriptorSetCount = 2,
                                        .pSetLayouts = dsl};
    VkDescriptorSet set[2];
    VKT_CHECK(vkAllocateDescriptorSets(c->v.dev, &dsai, set));
    for (int k = 0; k < 2; k++) {
        VkDescriptorBufferInfo bi[3] = {
            {x.buf, 0, VK_WHOLE_SIZE}, {w[k].buf, 0, VK_WHOLE_SIZE}, {w[!k].buf, 0, VK_WHOLE_SIZE}};
        VkWriteDescriptorSet wr = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                   .dstSet = set[k],
                                   .dstBinding = 0,
                                   .descriptorCount = 3,
                                   .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                   .pBufferInfo = bi};
        vkUpdateDescriptorSets(c->v.dev, 1, &wr, 0, NULL);
    }
    uint64_t h = 0;
    uint32_t seed = 12345u;
    for (uint32_t s = 0; s < N_SUBMITS; s++) {
        uint32_t *px = x.map; /* a fresh batch: new bytes every submission */
        for (uint32_t i = 0; i < N_PER_SUBMIT * TRAIN_XN; i++) {
            seed = seed * 1664525u + 1013904223u;
            px[i] = seed;
        }
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        VKT_CHECK(vkBeginCommandBuffer(c->cb, &bi));
        vkCmdBindPipeline(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipe);
        for (uint32_t i = 0; i < N_PER_SUBMIT; i++) {
            uint32_t step = s * N_PER_SUBMIT + i;
            vkCmdBindDescriptorSets(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1,
                                    &set[step & 1], 0, NULL);
            uint32_t pc[3] = {i, TRAIN_XN, TRAIN_N};
            vkCmdPushConstants(c->cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 12, pc);
            vkCmdDispatch(c->cb, TRAIN_N / 64, 1, 1);
            barrier(c->cb);
        }
        /* the weights the last step wrote, for the host */
        VkBufferCopy cp = {0, 0, TRAIN_N * 4};
        vkCmdCopyBuffer(c->cb, w[N_PER_SUBMIT * (s + 1) & 1].buf, rb.buf, 1, &cp);
        barrier(c->cb);
        VKT_CHECK(vkEndCommandBuffer(c->cb));
        submit_wait(c);
        h = sum64(h, rb.map, TRAIN_N * 4);
    }
    VKT_CHECK(vkDeviceWaitIdle(c->v.dev));
    vkDestroyDescriptorPool(c->v.dev, pool, NULL);
    vkt_pipeline_free(&c->v, &p);
    vkt_buffer_free(&c->v, &x);
    vkt_buffer_free(&c->v, &w[0]);
    vkt_buffer_free(&c->v, &w[1]);
    vkt_buffer_free(&c->v, &rb);
    return h;
}

static uint64_t data_heavy(struct ctx *c, struct vkt_buf *in, struct vkt_buf *out)
{
    uint64_t h = 0;
    for (uint32_t r = 0; r < N_ROUNDS; r++) {
        uint32_t *p = in->map;
        for (uint32_t i = 0; i < BIG_N; i++)
            p[i] = (i + r * 0x9e3779b9u) * 2246822519u; /* new bytes every round */
        begin(c);
        uint32_t pc[2] = {r, BIG_N};
        vkCmdPushConstants(c->cb, c->p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
        vkCmdDispatch(c->cb, ROW_GROUPS, BIG_N / 64 / ROW_GROUPS, 1);
        barrier(c->cb);
        VKT_CHECK(vkEndCommandBuffer(c->cb));
        submit_wait(c);
        h = sum64(h, out->map, BIG_BYTES);
    }
    return h;
}

/* 100 rounds: 4 KiB written at a different place of the 64 MiB input, one dispatch over
 * those 1024 elements (the bindings are moved there), 4 KiB of its output read back. */
static uint64_t sparse(struct ctx *c, struct vkt_buf *in, struct vkt_buf *out)
{
    uint64_t h = 0;
    for (uint32_t r = 0; r < N_SUBMITS; r++) {
        uint32_t first = (r * 2654435761u) % (BIG_N / 1024) * 1024, *p = in->map;
        for (uint32_t i = 0; i < 1024; i++)
            p[first + i] = (first + i) * 2246822519u + r;
        VkDescriptorBufferInfo bi[] = {{in->buf, first * 4u, 4096}, {out->buf, first * 4u, 4096}};
        VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = c->set,
                                  .dstBinding = 0,
                                  .descriptorCount = 2,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                  .pBufferInfo = bi};
        vkUpdateDescriptorSets(c->v.dev, 1, &w, 0, NULL);
        begin(c);
        uint32_t pc[2] = {r, 1024};
        vkCmdPushConstants(c->cb, c->p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
        vkCmdDispatch(c->cb, 1024 / 64, 1, 1);
        barrier(c->cb);
        VKT_CHECK(vkEndCommandBuffer(c->cb));
        submit_wait(c);
        h = sum64(h, (uint32_t *)out->map + first, 4096);
    }
    return h;
}

/* ---- threads ----------------------------------------------------------------------------- */

#define MT_THREADS 2u
#define MT_ROUNDS  200u
#define MT_BYTES   (16u << 20)
#define MT_CHUNK   4096u /* elements per round: 16 KiB */

static struct {
    struct vkt v;
    struct vkt_pipe p;
    pthread_mutex_t qmu;
    uint64_t sum[MT_THREADS];
} mt = {.qmu = PTHREAD_MUTEX_INITIALIZER};

static void *mt_worker(void *arg)
{
    uint32_t t = (uint32_t)(uintptr_t)arg;
    struct vkt *v = &mt.v;
    struct vkt_buf in, out;
    vkt_buffer(v, MT_BYTES, 1, &in);
    vkt_buffer(v, MT_BYTES, 1, &out);
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 1,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &size};
    VkDescriptorPool pool;
    VKT_CHECK(vkCreateDescriptorPool(v->dev, &dpci, NULL, &pool));
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = pool,
                                        .descriptorSetCount = 1,
                                        .pSetLayouts = &mt.p.dsl};
    VkDescriptorSet set;
    VKT_CHECK(vkAllocateDescriptorSets(v->dev, &dsai, &set));
    VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = v->family};
    VkCommandPool cpool;
    VKT_CHECK(vkCreateCommandPool(v->dev, &cpci, NULL, &cpool));
    VkCommandBufferAllocateInfo cbai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                        .commandPool = cpool,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                        .commandBufferCount = 1};
    VkCommandBuffer cb;
    VKT_CHECK(vkAllocateCommandBuffers(v->dev, &cbai, &cb));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    VKT_CHECK(vkCreateFence(v->dev, &fci, NULL, &fence));
    uint64_t h = 0;
    for (uint32_t r = 0; r < MT_ROUNDS; r++) {
        uint32_t n = MT_BYTES / 4, first = (r * 2654435761u + t) % (n / MT_CHUNK) * MT_CHUNK;
        uint32_t *p = in.map;
        for (uint32_t i = 0; i < MT_CHUNK; i++)
            p[first + i] = (first + i) * 2246822519u + r + t;
        VkDescriptorBufferInfo bi[] = {{in.buf, first * 4u, MT_CHUNK * 4},
                                       {out.buf, first * 4u, MT_CHUNK * 4}};
        VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = set,
                                  .descriptorCount = 2,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                  .pBufferInfo = bi};
        vkUpdateDescriptorSets(v->dev, 1, &w, 0, NULL);
        VkCommandBufferBeginInfo bb = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        VKT_CHECK(vkBeginCommandBuffer(cb, &bb));
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, mt.p.pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, mt.p.layout, 0, 1, &set, 0,
                                NULL);
        uint32_t pc[2] = {r, MT_CHUNK};
        vkCmdPushConstants(cb, mt.p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
        vkCmdDispatch(cb, MT_CHUNK / 64, 1, 1);
        VKT_CHECK(vkEndCommandBuffer(cb));
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &cb};
        pthread_mutex_lock(&mt.qmu);
        VKT_CHECK(vkQueueSubmit(v->queue[0], 1, &si, fence));
        pthread_mutex_unlock(&mt.qmu);
        VKT_CHECK(vkWaitForFences(v->dev, 1, &fence, VK_TRUE, UINT64_MAX));
        VKT_CHECK(vkResetFences(v->dev, 1, &fence));
        h = sum64(h, (uint32_t *)out.map + first, MT_CHUNK * 4);
    }
    mt.sum[t] = h;
    vkDestroyFence(v->dev, fence, NULL);
    vkDestroyCommandPool(v->dev, cpool, NULL);
    vkDestroyDescriptorPool(v->dev, pool, NULL);
    vkt_buffer_free(v, &in);
    vkt_buffer_free(v, &out);
    return NULL;
}

static uint64_t threads(const char *argv0)
{
    vkt_init(&mt.v, argv0, 1);
    VkDescriptorType t[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    vkt_pipeline(&mt.v, "bench", 2, t, 8, NULL, &mt.p);
    pthread_t th[MT_THREADS];
    for (uint32_t i = 0; i < MT_THREADS; i++)
        pthread_create(&th[i], NULL, mt_worker, (void *)(uintptr_t)i);
    uint64_t h = 0;
    for (uint32_t i = 0; i < MT_THREADS; i++) {
        pthread_join(th[i], NULL);
        h = sum64(h, &mt.sum[i], sizeof mt.sum[i]);
    }
    vkt_pipeline_free(&mt.v, &mt.p);
    vkt_done(&mt.v);
    return h;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    vkt_clean_structs = 1; /* GFXReconstruct runs this too */
    if (!strcmp(mode, "threads") && argc == 2) {
        printf("vk_bench threads checksum %016" PRIx64 "\n", threads(argv[0]));
        return 0;
    }
    int reuse = 0;
    uint32_t slow = 0, submits = 20;
    int bad = strcmp(mode, "dispatch") && strcmp(mode, "data") && strcmp(mode, "gate") &&
              strcmp(mode, "train") && strcmp(mode, "sparse");
    for (int i = 2; i < argc && !bad; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--reuse") && !strcmp(mode, "dispatch"))
            reuse = 1;
        else if (!strcmp(argv[i], "--slow") && i + 1 < argc && !strcmp(mode, "gate"))
            slow = (uint32_t)strtoul(argv[++i], &end, 10), bad = *end || slow > 1000;
        else if (!strcmp(argv[i], "--submits") && i + 1 < argc && !strcmp(mode, "gate"))
            submits = (uint32_t)strtoul(argv[++i], &end, 10), bad = *end || !submits;
        else
            bad = 1;
    }
    if (bad) {
        fprintf(stderr, "usage: vk_bench dispatch [--reuse] | data | sparse | threads | gate "
                        "[--slow PCT] [--submits N] | train\n");
        return 2;
    }
    int data = !strcmp(mode, "data") || !strcmp(mode, "sparse");
    struct ctx c;
    memset(&c, 0, sizeof c);
    vkt_init(&c.v, argv[0], 1);
    struct vkt_buf in, out;
    VkDeviceSize size = data ? BIG_BYTES : !strcmp(mode, "gate") ? GATE_N * 4 : SMALL_N * 4;
    vkt_buffer(&c.v, size, 1, &in);
    vkt_buffer(&c.v, size, 1, &out);
    setup(&c, argv[0], &in, &out);
    uint64_t h = !strcmp(mode, "sparse")  ? sparse(&c, &in, &out)
                 : data                   ? data_heavy(&c, &in, &out)
                 : !strcmp(mode, "gate")  ? gate(&c, &in, &out, submits, slow)
                 : !strcmp(mode, "train") ? train(&c)
                                          : dispatch_heavy(&c, &in, &out, reuse);
    printf("vk_bench %s checksum %016" PRIx64 "\n", mode, h);
    VKT_CHECK(vkDeviceWaitIdle(c.v.dev));
    vkDestroyFence(c.v.dev, c.fence, NULL);
    vkDestroyCommandPool(c.v.dev, c.cpool, NULL);
    vkDestroyDescriptorPool(c.v.dev, c.pool, NULL);
    vkt_pipeline_free(&c.v, &c.p);
    vkt_buffer_free(&c.v, &in);
    vkt_buffer_free(&c.v, &out);
    vkt_done(&c.v);
    return 0;
}
