/*
 * tests/vk/vk_threads.c — several host threads, each with its own command pool, buffers and
 * descriptor set, recording and submitting dispatches to the queues (shared queues are
 * guarded by a mutex, as Vulkan requires) while the main thread waits on a timeline
 * semaphore that every thread signals. Prints one checksum over all threads' results.
 * Usage: vk_threads [ROUNDS] (dispatches per thread, default 4).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vk/vkt.h"

#define THREADS 3
#define N       2048u

static struct vkt v;
static struct vkt_pipe ps;
static pthread_mutex_t qmu[4] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                 PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static VkSemaphore tl;
static uint64_t sums[THREADS];
static uint32_t rounds = 4;

static void *worker(void *arg)
{
    uint32_t t = (uint32_t)(uintptr_t)arg;
    uint32_t qi = t % v.n_queues;
    struct vkt_buf in, out;
    vkt_buffer(&v, N * 4, 1, &in);
    vkt_buffer(&v, N * 4, 1, &out);
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 1,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &size};
    VkDescriptorPool pool;
    VKT_CHECK(vkCreateDescriptorPool(v.dev, &dpci, NULL, &pool));
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = pool,
                                        .descriptorSetCount = 1,
                                        .pSetLayouts = &ps.dsl};
    VkDescriptorSet set;
    VKT_CHECK(vkAllocateDescriptorSets(v.dev, &dsai, &set));
    VkDescriptorBufferInfo bi[] = {{in.buf, 0, VK_WHOLE_SIZE}, {out.buf, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = set,
                              .descriptorCount = 2,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = bi};
    vkUpdateDescriptorSets(v.dev, 1, &w, 0, NULL);
    VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = v.family};
    VkCommandPool cpool;
    VKT_CHECK(vkCreateCommandPool(v.dev, &cpci, NULL, &cpool));
    VkCommandBufferAllocateInfo cbai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                        .commandPool = cpool,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                        .commandBufferCount = 1};
    VkCommandBuffer cb;
    VKT_CHECK(vkAllocateCommandBuffers(v.dev, &cbai, &cb));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    VKT_CHECK(vkCreateFence(v.dev, &fci, NULL, &fence));
    uint64_t h = 0;
    for (uint32_t r = 0; r < rounds; r++) {
        uint32_t *p = in.map;
        for (uint32_t i = 0; i < N; i++)
            p[i] = i * (t + 1) + r * 7919u;
        VkCommandBufferBeginInfo bb = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        VKT_CHECK(vkBeginCommandBuffer(cb, &bb));
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ps.pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ps.layout, 0, 1, &set, 0, NULL);
        uint32_t pc[2] = {t * 100 + r, N};
        vkCmdPushConstants(cb, ps.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
        vkCmdDispatch(cb, N / 64, 1, 1);
        VKT_CHECK(vkEndCommandBuffer(cb));
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &cb};
        pthread_mutex_lock(&qmu[qi]);
        VKT_CHECK(vkQueueSubmit(v.queue[qi], 1, &si, fence));
        pthread_mutex_unlock(&qmu[qi]);
        VKT_CHECK(vkWaitForFences(v.dev, 1, &fence, VK_TRUE, UINT64_MAX));
        VKT_CHECK(vkResetFences(v.dev, 1, &fence));
        h = vkt_sum(h, out.map, N * 4);
    }
    sums[t] = h;
    vkDestroyFence(v.dev, fence, NULL);
    vkDestroyCommandPool(v.dev, cpool, NULL);
    vkDestroyDescriptorPool(v.dev, pool, NULL);
    vkt_buffer_free(&v, &in);
    vkt_buffer_free(&v, &out);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && (rounds = (uint32_t)atoi(argv[1])) == 0) {
        fprintf(stderr, "usage: vk_threads [ROUNDS] (default 4)\n");
        return 2;
    }
    vkt_init(&v, argv[0], 2);
    VkDescriptorType types[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    vkt_pipeline(&v, "scale", 2, types, 8, NULL, &ps);
    VkSemaphoreTypeCreateInfo stci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &stci};
    VKT_CHECK(vkCreateSemaphore(v.dev, &sci, NULL, &tl));
    pthread_t th[THREADS];
    for (uint32_t t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
    for (uint32_t t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    /* the host signals the timeline; the main thread waits for it */
    VkSemaphoreSignalInfo ssi = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = tl, .value = THREADS};
    VKT_CHECK(vkSignalSemaphore(v.dev, &ssi));
    uint64_t val = THREADS;
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1,
                              .pSemaphores = &tl,
                              .pValues = &val};
    VKT_CHECK(vkWaitSemaphores(v.dev, &wi, UINT64_MAX));
    uint64_t h = 0;
    for (uint32_t t = 0; t < THREADS; t++)
        h = vkt_sum(h, &sums[t], sizeof sums[t]);
    printf("vk_threads checksum %016" PRIx64 "\n", h);
    VKT_CHECK(vkDeviceWaitIdle(v.dev)); /* nothing submitted may still use the semaphore */
    vkDestroySemaphore(v.dev, tl, NULL);
    vkt_pipeline_free(&v, &ps);
    vkt_done(&v);
    return 0;
}
