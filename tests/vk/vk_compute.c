/*
 * tests/vk/vk_compute.c — one program that uses most of the compute subset the capture layer
 * records: mapped uploads and read-backs, fill/update/copy, pipeline barriers (v1 and v2), an
 * event, push constants, a specialization constant, a uniform buffer, indirect dispatch,
 * dispatch base, several submissions (v1 and v2) on up to two queues chained by a timeline
 * semaphore, a fence, command-buffer reuse, and queue/device idle waits. Prints a checksum.
 * "vk_compute poll N" ends with N polls of the fence and the timeline counter.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vk/vkt.h"

#define N 4096u

static void barrier(VkCommandBuffer cb)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
}

static void barrier2(VkCommandBuffer cb)
{
    VkMemoryBarrier2 mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                           .srcStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                           .srcAccessMask = VK_ACCESS_2_MEMORY_WRITE_BIT,
                           .dstStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                           .dstAccessMask =
                               VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT};
    VkDependencyInfo di = {.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                           .memoryBarrierCount = 1,
                           .pMemoryBarriers = &mb};
    vkCmdPipelineBarrier2(cb, &di);
}

int main(int argc, char **argv)
{
    /* "poll N": at the end, N polls of the fence and of the timeline counter (a status loop);
     * what the program computes is the same */
    int polls = argc > 2 && !strcmp(argv[1], "poll") ? atoi(argv[2]) : 0;
    struct vkt v;
    vkt_init(&v, argv[0], 2);
    VkQueue q0 = v.queue[0], q1 = v.queue[v.n_queues > 1 ? 1 : 0];

    struct vkt_buf in, out, acc, x, ubo, ind, rb;
    vkt_buffer(&v, N * 4, 1, &in);
    vkt_buffer(&v, N * 4, 0, &out);
    vkt_buffer(&v, N * 4, 1, &acc);
    vkt_buffer(&v, N * 4, 0, &x);
    vkt_buffer(&v, 256, 1, &ubo);
    vkt_buffer(&v, 64, 1, &ind);
    vkt_buffer(&v, N * 4, 1, &rb);
    uint32_t *pin = in.map;
    for (uint32_t i = 0; i < N; i++)
        pin[i] = i * 2654435761u;
    uint32_t *pu = ubo.map;
    pu[0] = 11;
    pu[1] = N;
    uint32_t *pi = ind.map;
    pi[4] = N / 64; /* indirect args at offset 16 */
    pi[5] = 1;
    pi[6] = 1;

    VkDescriptorType t_scale[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                  VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    VkDescriptorType t_acc[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER};
    struct vkt_pipe ps, pa;
    uint32_t k = 5;
    vkt_pipeline(&v, "scale", 2, t_scale, 8, &k, &ps);
    vkt_pipeline(&v, "accum", 3, t_acc, 0, NULL, &pa);

    VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 8},
                                    {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 2}};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 2,
                                       .poolSizeCount = 2,
                                       .pPoolSizes = sizes};
    VkDescriptorPool pool;
    VKT_CHECK(vkCreateDescriptorPool(v.dev, &dpci, NULL, &pool));
    VkDescriptorSetLayout layouts[] = {ps.dsl, pa.dsl};
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = pool,
                                        .descriptorSetCount = 2,
                                        .pSetLayouts = layouts};
    VkDescriptorSet sets[2];
    VKT_CHECK(vkAllocateDescriptorSets(v.dev, &dsai, sets));
    VkDescriptorBufferInfo bi[] = {{in.buf, 0, VK_WHOLE_SIZE},
                                   {out.buf, 0, VK_WHOLE_SIZE},
                                   {acc.buf, 0, VK_WHOLE_SIZE},
                                   {x.buf, 0, N * 4},
                                   {ubo.buf, 0, 16}};
    VkWriteDescriptorSet w[] = {
        {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = sets[0],
         .dstBinding = 0,
         .descriptorCount = 2,
         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
         .pBufferInfo = &bi[0]},
        {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = sets[1],
         .dstBinding = 0,
         .descriptorCount = 2,
         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
         .pBufferInfo = &bi[2]},
        {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = sets[1],
         .dstBinding = 2,
         .descriptorCount = 1,
         .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
         .pBufferInfo = &bi[4]},
    };
    vkUpdateDescriptorSets(v.dev, 3, w, 0, NULL);

    VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .queueFamilyIndex = v.family};
    VkCommandPool cpool;
    VKT_CHECK(vkCreateCommandPool(v.dev, &cpci, NULL, &cpool));
    VkCommandBufferAllocateInfo cbai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                        .commandPool = cpool,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                        .commandBufferCount = 2};
    VkCommandBuffer cb[2];
    VKT_CHECK(vkAllocateCommandBuffers(v.dev, &cbai, cb));
    VkEventCreateInfo eci = {.sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
    VkEvent ev;
    VKT_CHECK(vkCreateEvent(v.dev, &eci, NULL, &ev));

    /* cb[0]: fill, update, copy, scale (direct, in two halves with dispatch base), copy out */
    VkCommandBufferBeginInfo cbbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VKT_CHECK(vkBeginCommandBuffer(cb[0], &cbbi));
    vkCmdFillBuffer(cb[0], acc.buf, 0, VK_WHOLE_SIZE, 7);
    vkCmdCopyBuffer(cb[0], in.buf, x.buf, 1, &(VkBufferCopy){0, 0, N * 4});
    barrier(cb[0]);
    uint32_t upd[64];
    for (uint32_t i = 0; i < 64; i++)
        upd[i] = 1000 + i;
    vkCmdUpdateBuffer(cb[0], x.buf, 256, sizeof upd, upd);
    barrier(cb[0]);
    vkCmdBindPipeline(cb[0], VK_PIPELINE_BIND_POINT_COMPUTE, ps.pipe);
    vkCmdBindDescriptorSets(cb[0], VK_PIPELINE_BIND_POINT_COMPUTE, ps.layout, 0, 1, &sets[0], 0,
                            NULL);
    uint32_t pc[2] = {3, N};
    vkCmdPushConstants(cb[0], ps.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
    vkCmdDispatch(cb[0], N / 128, 1, 1);
    vkCmdDispatchBase(cb[0], N / 128, 0, 0, N / 128, 1, 1);
    vkCmdSetEvent(cb[0], ev, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT};
    vkCmdWaitEvents(cb[0], 1, &ev, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_PIPELINE_STAGE_TRANSFER_BIT, 1, &mb, 0, NULL, 0, NULL);
    vkCmdCopyBuffer(cb[0], out.buf, rb.buf, 1, &(VkBufferCopy){0, 0, N * 4});
    VKT_CHECK(vkEndCommandBuffer(cb[0]));

    /* cb[1]: accumulate x into acc (indirect), reused by three submissions */
    VKT_CHECK(vkBeginCommandBuffer(cb[1], &cbbi));
    barrier2(cb[1]);
    vkCmdBindPipeline(cb[1], VK_PIPELINE_BIND_POINT_COMPUTE, pa.pipe);
    vkCmdBindDescriptorSets(cb[1], VK_PIPELINE_BIND_POINT_COMPUTE, pa.layout, 0, 1, &sets[1], 0,
                            NULL);
    vkCmdDispatchIndirect(cb[1], ind.buf, 16);
    barrier2(cb[1]);
    VKT_CHECK(vkEndCommandBuffer(cb[1]));

    VkSemaphoreTypeCreateInfo stci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &stci};
    VkSemaphore tl;
    VKT_CHECK(vkCreateSemaphore(v.dev, &sci, NULL, &tl));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    VKT_CHECK(vkCreateFence(v.dev, &fci, NULL, &fence));

    /* submit 1 (v1, queue 0): cb[0], signals timeline 1 */
    uint64_t one = 1, two = 2;
    VkTimelineSemaphoreSubmitInfo ts1 = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                         .signalSemaphoreValueCount = 1,
                                         .pSignalSemaphoreValues = &one};
    VkSubmitInfo s1 = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ts1,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &cb[0],
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &tl};
    VKT_CHECK(vkQueueSubmit(q0, 1, &s1, VK_NULL_HANDLE));
    /* submit 2 (v1, queue 1): waits 1, cb[1], signals 2 and the fence */
    VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    VkTimelineSemaphoreSubmitInfo ts2 = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                         .waitSemaphoreValueCount = 1,
                                         .pWaitSemaphoreValues = &one,
                                         .signalSemaphoreValueCount = 1,
                                         .pSignalSemaphoreValues = &two};
    VkSubmitInfo s2 = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ts2,
                       .waitSemaphoreCount = 1,
                       .pWaitSemaphores = &tl,
                       .pWaitDstStageMask = &st,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &cb[1],
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &tl};
    VKT_CHECK(vkQueueSubmit(q1, 1, &s2, fence));
    VKT_CHECK(vkWaitForFences(v.dev, 1, &fence, VK_TRUE, UINT64_MAX));
    uint64_t h = vkt_sum(0, rb.map, N * 4);
    h = vkt_sum(h, acc.map, N * 4);

    /* the host changes the uniform and resubmits cb[1] twice with vkQueueSubmit2 */
    for (uint32_t r = 0; r < 2; r++) {
        pu[0] = 100 + r;
        VkSemaphoreSubmitInfo wsi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                     .semaphore = tl,
                                     .value = 2 + r,
                                     .stageMask = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT};
        VkSemaphoreSubmitInfo ssi = wsi;
        ssi.value = 3 + r;
        VkCommandBufferSubmitInfo cbsi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                          .commandBuffer = cb[1]};
        VkSubmitInfo2 s = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                           .waitSemaphoreInfoCount = 1,
                           .pWaitSemaphoreInfos = &wsi,
                           .commandBufferInfoCount = 1,
                           .pCommandBufferInfos = &cbsi,
                           .signalSemaphoreInfoCount = 1,
                           .pSignalSemaphoreInfos = &ssi};
        VKT_CHECK(vkQueueSubmit2(r ? q1 : q0, 1, &s, VK_NULL_HANDLE));
        uint64_t val = 3 + r;
        VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                  .semaphoreCount = 1,
                                  .pSemaphores = &tl,
                                  .pValues = &val};
        VKT_CHECK(vkWaitSemaphores(v.dev, &wi, UINT64_MAX));
        h = vkt_sum(h, acc.map, N * 4);
    }
    for (int i = 0; i < polls; i++) {
        uint64_t cv = 0;
        VKT_CHECK(vkGetSemaphoreCounterValue(v.dev, tl, &cv));
        if (cv != 4 || vkGetFenceStatus(v.dev, fence) != VK_SUCCESS) {
            fprintf(stderr, "vk_compute: poll %d: counter %llu\n", i, (unsigned long long)cv);
            return 1;
        }
    }
    VKT_CHECK(vkQueueWaitIdle(q0));
    VKT_CHECK(vkDeviceWaitIdle(v.dev));
    printf("vk_compute checksum %016" PRIx64 "\n", h);

    vkDestroyFence(v.dev, fence, NULL);
    vkDestroySemaphore(v.dev, tl, NULL);
    vkDestroyEvent(v.dev, ev, NULL);
    vkDestroyCommandPool(v.dev, cpool, NULL);
    vkDestroyDescriptorPool(v.dev, pool, NULL);
    vkt_pipeline_free(&v, &ps);
    vkt_pipeline_free(&v, &pa);
    struct vkt_buf *all[] = {&in, &out, &acc, &x, &ubo, &ind, &rb};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        vkt_buffer_free(&v, all[i]);
    vkt_done(&v);
    return 0;
}
