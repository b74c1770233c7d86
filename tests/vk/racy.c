/*
 * tests/vk/racy.c — a workload whose outputs vary between runs, for the checker's tests
 * (tests/test_checker.c) and the README's demo: a dispatch with a deliberate cross-workgroup
 * data race (racy.comp: non-atomic read-modify-write chains on four shared words) between
 * deterministic dispatches of scale.comp:
 *
 *     fill acc = 0, scale in -> mid | racy mid -> acc | scale mid -> out, scale acc -> tail
 *
 * in is uploaded by the host, out and tail are read back. scale mid -> out does not depend on
 * the race; scale acc -> tail does (downstream of it). lavapipe runs the workgroups of a
 * dispatch on LP_NUM_THREADS threads (default: one per CPU), so with two or more the order and
 * the overlap of the updates, hence acc and tail, change from run to run; with LP_NUM_THREADS=0
 * (or one CPU) it runs them in order and the result is stable.
 *
 * Usage: racy [ITERATIONS [GROUPS]] (defaults 2000 and 64). Prints the checksum of everything
 * read back and, separately, of the part that does not depend on the race.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/vk/vkt.h"

#define N 4096u

static void barrier(VkCommandBuffer cb)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask =
                              VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
}

static void dispatch(VkCommandBuffer cb, const struct vkt_pipe *p, VkDescriptorSet set,
                     uint32_t pc0, uint32_t pc1, uint32_t groups)
{
    uint32_t pc[2] = {pc0, pc1};
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
    vkCmdDispatch(cb, groups, 1, 1);
}

int main(int argc, char **argv)
{
    uint32_t iters = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 2000;
    uint32_t groups = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 64;
    if (!iters || !groups || groups > N / 64) {
        fprintf(stderr, "usage: racy [ITERATIONS [GROUPS]] (GROUPS 1..%u)\n", N / 64);
        return 2;
    }
    struct vkt v;
    vkt_init(&v, argv[0], 1);

    struct vkt_buf in, mid, acc, out, tail;
    vkt_buffer(&v, N * 4, 1, &in);
    vkt_buffer(&v, N * 4, 0, &mid);
    vkt_buffer(&v, 64 * 4, 0, &acc);
    vkt_buffer(&v, N * 4, 1, &out);
    vkt_buffer(&v, 64 * 4, 1, &tail);
    uint32_t *pin = in.map;
    for (uint32_t i = 0; i < N; i++)
        pin[i] = i * 2246822519u + 374761393u;

    VkDescriptorType t2[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    struct vkt_pipe ps, pr;
    uint32_t k = 7;
    vkt_pipeline(&v, "scale", 2, t2, 8, &k, &ps);
    vkt_pipeline(&v, "racy", 2, t2, 8, NULL, &pr);

    /* four sets of (source, destination): scale in -> mid, racy mid -> acc, scale mid -> out,
     * scale acc -> tail */
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 8};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 4,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &size};
    VkDescriptorPool pool;
    VKT_CHECK(vkCreateDescriptorPool(v.dev, &dpci, NULL, &pool));
    VkDescriptorSetLayout layouts[] = {ps.dsl, pr.dsl, ps.dsl, ps.dsl};
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = pool,
                                        .descriptorSetCount = 4,
                                        .pSetLayouts = layouts};
    VkDescriptorSet sets[4];
    VKT_CHECK(vkAllocateDescriptorSets(v.dev, &dsai, sets));
    const struct vkt_buf *pairs[4][2] = {{&in, &mid}, {&mid, &acc}, {&mid, &out}, {&acc, &tail}};
    VkDescriptorBufferInfo bi[4][2];
    VkWriteDescriptorSet w[4];
    for (uint32_t i = 0; i < 4; i++) {
        for (uint32_t b = 0; b < 2; b++)
            bi[i][b] = (VkDescriptorBufferInfo){pairs[i][b]->buf, 0, VK_WHOLE_SIZE};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = sets[i],
                                      .dstBinding = 0,
                                      .descriptorCount = 2,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = bi[i]};
    }
    vkUpdateDescriptorSets(v.dev, 4, w, 0, NULL);

    VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .queueFamilyIndex = v.family};
    VkCommandPool cpool;
    VKT_CHECK(vkCreateCommandPool(v.dev, &cpci, NULL, &cpool));
    VkCommandBufferAllocateInfo cbai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                        .commandPool = cpool,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                        .commandBufferCount = 1};
    VkCommandBuffer cb;
    VKT_CHECK(vkAllocateCommandBuffers(v.dev, &cbai, &cb));
    VkCommandBufferBeginInfo cbbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VKT_CHECK(vkBeginCommandBuffer(cb, &cbbi));
    vkCmdFillBuffer(cb, acc.buf, 0, VK_WHOLE_SIZE, 0);
    dispatch(cb, &ps, sets[0], 1, N, N / 64);
    barrier(cb);
    dispatch(cb, &pr, sets[1], iters, N, groups);
    barrier(cb);
    dispatch(cb, &ps, sets[2], 2, N, N / 64);
    dispatch(cb, &ps, sets[3], 3, 64, 1);
    VKT_CHECK(vkEndCommandBuffer(cb));

    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    VKT_CHECK(vkCreateFence(v.dev, &fci, NULL, &fence));
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    VKT_CHECK(vkQueueSubmit(v.queue[0], 1, &si, fence));
    VKT_CHECK(vkWaitForFences(v.dev, 1, &fence, VK_TRUE, UINT64_MAX));
    uint64_t det = vkt_sum(0, out.map, N * 4);
    uint64_t all = vkt_sum(det, tail.map, 64 * 4);
    printf("racy checksum %016" PRIx64 " (deterministic part %016" PRIx64 ")\n", all, det);

    vkDestroyFence(v.dev, fence, NULL);
    vkDestroyCommandPool(v.dev, cpool, NULL);
    vkDestroyDescriptorPool(v.dev, pool, NULL);
    vkt_pipeline_free(&v, &ps);
    vkt_pipeline_free(&v, &pr);
    struct vkt_buf *bufs[] = {&in, &mid, &acc, &out, &tail};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        vkt_buffer_free(&v, bufs[i]);
    vkt_done(&v);
    return 0;
}
