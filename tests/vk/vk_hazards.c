/*
 * tests/vk/vk_hazards.c — a saxpy chain with its synchronisation right, or with one piece of it
 * wrong, for the static race analysis (scheduler/sched_race.c; tests/test_capture.c):
 *
 *     fill y = 1, z = 2 | saxpy x, y -> y | saxpy y, z -> z | copy z -> out | host reads out
 *
 * x and out are host-visible (x written by the host before the submission, out read after the
 * fence); y and z live on the device. Modes (the first argument):
 *   ok           pipeline barriers between every dependent pair, with stage and access masks
 *   nobarrier    the barrier between the two dispatches and the one before the copy left out:
 *                the second dispatch reads y, the copy reads z, unordered (execution)
 *   execonly     those two barriers with their stages but empty access masks: ordered, the
 *                writes never made available and visible (memory dependency)
 *   event        vkCmdSetEvent / vkCmdWaitEvents (with a memory barrier) between the dispatches
 *   semaphore    the second half (saxpy y, z and the copy) in a second submission, on a second
 *                queue where there is one, waiting for a binary semaphore the first signals
 *   timeline     the same with a timeline semaphore (value 1)
 *   nosemaphore  the two submissions (on the second queue where there is one) with nothing
 *                between them (the fence only at the end)
 *   poll         three submissions (the first half, saxpy x, y -> y again, the second half) with
 *                one fence, polled with vkGetFenceStatus after each and reset in between, the
 *                host rewriting x after each poll: correct, as long as the trace holds every
 *                polled wait (it prints another checksum: y is updated twice)
 *   bufbarrier   as ok, the two barriers after the dispatches buffer barriers on y and on z
 *   wrongbuffer  the barrier between the dispatches a buffer barrier on z instead of y: the
 *                dispatches are ordered, y's bytes never made visible (memory dependency)
 * lavapipe runs the commands in order, so every mode prints the same checksum: only the
 * analysis tells them apart.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vk/vkt.h"

#define N 1024u

static void barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags sa,
                    VkPipelineStageFlags dst, VkAccessFlags da)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = sa, .dstAccessMask = da};
    vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

static void buf_barrier(VkCommandBuffer cb, VkBuffer b, VkPipelineStageFlags src, VkAccessFlags sa,
                        VkPipelineStageFlags dst, VkAccessFlags da)
{
    VkBufferMemoryBarrier bb = {.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                                .srcAccessMask = sa,
                                .dstAccessMask = da,
                                .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                .buffer = b,
                                .size = VK_WHOLE_SIZE};
    vkCmdPipelineBarrier(cb, src, dst, 0, 0, NULL, 1, &bb, 0, NULL);
}

static void saxpy(VkCommandBuffer cb, const struct vkt_pipe *p, VkDescriptorSet set, uint32_t a)
{
    uint32_t pc[3] = {a, N, 3};
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
    vkCmdDispatch(cb, N / 64, 1, 1);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    static const char *const modes[] = {"ok",         "nobarrier",  "execonly",    "event",
                                        "semaphore",  "timeline",   "nosemaphore", "poll",
                                        "bufbarrier", "wrongbuffer"};
    int m = -1;
    for (int i = 0; i < (int)(sizeof modes / sizeof modes[0]); i++)
        if (!strcmp(mode, modes[i]))
            m = i;
    if (m < 0) {
        fprintf(stderr, "usage: vk_hazards "
                        "[ok|nobarrier|execonly|event|semaphore|timeline|nosemaphore|poll|"
                        "bufbarrier|wrongbuffer]\n");
        return 2;
    }
    int nobar = m == 1, execonly = m == 2, event = m == 3, two = m >= 4 && m <= 7, buf = m >= 8;
    struct vkt v;
    vkt_init(&v, argv[0], 2);
    VkQueue q0 = v.queue[0], q1 = v.queue[v.n_queues > 1 ? 1 : 0];

    struct vkt_buf x, y, z, out;
    vkt_buffer(&v, N * 4, 1, &x);
    vkt_buffer(&v, N * 4, 0, &y);
    vkt_buffer(&v, N * 4, 0, &z);
    vkt_buffer(&v, N * 4, 1, &out);
    uint32_t *px = x.map;
    for (uint32_t i = 0; i < N; i++)
        px[i] = i * 2654435761u;

    VkDescriptorType t2[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    struct vkt_pipe p;
    vkt_pipeline(&v, "saxpy", 2, t2, 12, NULL, &p);
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 2,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &size};
    VkDescriptorPool pool;
    VKT_CHECK(vkCreateDescriptorPool(v.dev, &dpci, NULL, &pool));
    VkDescriptorSetLayout layouts[] = {p.dsl, p.dsl};
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = pool,
                                        .descriptorSetCount = 2,
                                        .pSetLayouts = layouts};
    VkDescriptorSet sets[2];
    VKT_CHECK(vkAllocateDescriptorSets(v.dev, &dsai, sets));
    const struct vkt_buf *pairs[2][2] = {{&x, &y}, {&y, &z}};
    VkDescriptorBufferInfo bi[2][2];
    VkWriteDescriptorSet w[2];
    for (uint32_t i = 0; i < 2; i++) {
        for (uint32_t b = 0; b < 2; b++)
            bi[i][b] = (VkDescriptorBufferInfo){pairs[i][b]->buf, 0, VK_WHOLE_SIZE};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = sets[i],
                                      .descriptorCount = 2,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = bi[i]};
    }
    vkUpdateDescriptorSets(v.dev, 2, w, 0, NULL);

    const VkPipelineStageFlags C = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               T = VK_PIPELINE_STAGE_TRANSFER_BIT;
    const VkAccessFlags SW = VK_ACCESS_SHADER_WRITE_BIT, SR = VK_ACCESS_SHADER_READ_BIT;
    VkCommandBuffer cb0 = vkt_cmdbuf(&v), cb1 = two ? vkt_cmdbuf(&v) : cb0;
    vkt_begin(cb0);
    vkCmdFillBuffer(cb0, y.buf, 0, VK_WHOLE_SIZE, 1);
    vkCmdFillBuffer(cb0, z.buf, 0, VK_WHOLE_SIZE, 2);
    barrier(cb0, T, VK_ACCESS_TRANSFER_WRITE_BIT, C, SR | SW);
    saxpy(cb0, &p, sets[0], 3);
    VkEvent ev = VK_NULL_HANDLE;
    if (event) {
        VkEventCreateInfo eci = {.sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
        VKT_CHECK(vkCreateEvent(v.dev, &eci, NULL, &ev));
        vkCmdSetEvent(cb0, ev, C);
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = SW,
                              .dstAccessMask = SR | SW};
        vkCmdWaitEvents(cb0, 1, &ev, C, C, 1, &mb, 0, NULL, 0, NULL);
    } else if (!nobar && !two) {
        if (buf)
            buf_barrier(cb0, m == 9 ? z.buf : y.buf, C, SW, C, SR | SW);
        else
            barrier(cb0, C, execonly ? 0 : SW, C, execonly ? 0 : SR | SW);
    }
    if (two) {
        VKT_CHECK(vkEndCommandBuffer(cb0));
        vkt_begin(cb1);
    }
    saxpy(cb1, &p, sets[1], 5);
    if (!nobar) {
        if (buf)
            buf_barrier(cb1, z.buf, C, SW, T, VK_ACCESS_TRANSFER_READ_BIT);
        else
            barrier(cb1, C, execonly ? 0 : SW, T, execonly ? 0 : VK_ACCESS_TRANSFER_READ_BIT);
    }
    VkBufferCopy region = {0, 0, N * 4};
    vkCmdCopyBuffer(cb1, z.buf, out.buf, 1, &region);
    VKT_CHECK(vkEndCommandBuffer(cb1));

    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    VKT_CHECK(vkCreateFence(v.dev, &fci, NULL, &fence));
    VkSemaphore sem = VK_NULL_HANDLE;
    if (m == 4 || m == 5) {
        VkSemaphoreTypeCreateInfo stci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                          .semaphoreType = m == 5 ? VK_SEMAPHORE_TYPE_TIMELINE
                                                                  : VK_SEMAPHORE_TYPE_BINARY};
        VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                     .pNext = &stci};
        VKT_CHECK(vkCreateSemaphore(v.dev, &sci, NULL, &sem));
    }
    if (!two) {
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &cb0};
        VKT_CHECK(vkQueueSubmit(q0, 1, &si, fence));
    } else {
        uint64_t one = 1;
        VkTimelineSemaphoreSubmitInfo ts0 = {.sType =
                                                 VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                             .signalSemaphoreValueCount = 1,
                                             .pSignalSemaphoreValues = &one};
        VkTimelineSemaphoreSubmitInfo ts1 = {.sType =
                                                 VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                             .waitSemaphoreValueCount = 1,
                                             .pWaitSemaphoreValues = &one};
        VkSubmitInfo s0 = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .pNext = m == 5 ? &ts0 : NULL,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &cb0,
                           .signalSemaphoreCount = sem ? 1 : 0,
                           .pSignalSemaphores = &sem};
        VKT_CHECK(vkQueueSubmit(q0, 1, &s0, m == 7 ? fence : VK_NULL_HANDLE));
        if (m == 7) {
            VkResult r;
            while ((r = vkGetFenceStatus(v.dev, fence)) == VK_NOT_READY)
                ;
            VKT_CHECK(r);
            VKT_CHECK(vkResetFences(v.dev, 1, &fence));
            for (uint32_t i = 0; i < N; i++) /* the first submission read x: done with it */
                px[i] = ~px[i];
            VkCommandBuffer again = vkt_cmdbuf(&v);
            vkt_begin(again);
            saxpy(again, &p, sets[0], 7);
            VKT_CHECK(vkEndCommandBuffer(again));
            VkSubmitInfo sa = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                               .commandBufferCount = 1,
                               .pCommandBuffers = &again};
            VKT_CHECK(vkQueueSubmit(q0, 1, &sa, fence));
            while ((r = vkGetFenceStatus(v.dev, fence)) == VK_NOT_READY)
                ;
            VKT_CHECK(r);
            VKT_CHECK(vkResetFences(v.dev, 1, &fence));
            for (uint32_t i = 0; i < N; i++)
                px[i] = ~px[i];
        }
        VkSubmitInfo s1 = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .pNext = m == 5 ? &ts1 : NULL,
                           .waitSemaphoreCount = sem ? 1 : 0,
                           .pWaitSemaphores = &sem,
                           .pWaitDstStageMask = &C,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &cb1};
        VKT_CHECK(vkQueueSubmit(m == 7 ? q0 : q1, 1, &s1, fence));
    }
    if (m == 7) {
        VkResult r;
        while ((r = vkGetFenceStatus(v.dev, fence)) == VK_NOT_READY)
            ;
        VKT_CHECK(r);
    }
    VKT_CHECK(vkWaitForFences(v.dev, 1, &fence, VK_TRUE, UINT64_MAX));
    if (two)
        VKT_CHECK(vkQueueWaitIdle(q0));
    printf("vk_hazards checksum %016" PRIx64 "\n", vkt_sum(0, out.map, N * 4));

    if (sem)
        vkDestroySemaphore(v.dev, sem, NULL);
    if (ev)
        vkDestroyEvent(v.dev, ev, NULL);
    vkDestroyFence(v.dev, fence, NULL);
    vkDestroyDescriptorPool(v.dev, pool, NULL);
    vkt_pipeline_free(&v, &p);
    vkt_buffer_free(&v, &x);
    vkt_buffer_free(&v, &y);
    vkt_buffer_free(&v, &z);
    vkt_buffer_free(&v, &out);
    vkt_done(&v);
    return 0;
}
