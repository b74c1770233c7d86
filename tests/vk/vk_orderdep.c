/*
 * tests/vk/vk_orderdep.c — programs whose outputs a single-threaded driver keeps stable but
 * which rely on what no Vulkan driver promises, for the perturbed replays of `reprise check
 * --perturb` (tests/test_checker.c), each beside its correct version:
 *
 *   ok       one dispatch of orderdep.comp: every invocation atomicAdds its input (whole
 *            numbers, so every partial sum is exact and the total is the same in any order)
 *            into a float the program zeroed, and writes y = 2 x + t from a buffer t it filled
 *   atomics  the same with inputs of mixed magnitudes: the float sum's rounding follows the
 *            order the workgroups run in (stable under LP_NUM_THREADS=0, changed by split)
 *   uninit   the same as ok, but t is never written: y reads memory nothing wrote (zeros on
 *            lavapipe, whatever a GPU left there; changed by poison)
 *   numwg    a dispatch of numwg.comp, which reads gl_NumWorkGroups: correct, and left whole
 *            by split (cut into pieces it would see each piece's count)
 *
 * Usage: vk_orderdep MODE. Prints the checksum of what it read back (out, sum).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vk/vkt.h"

#define N      4096u
#define GROUPS (N / 64)

static void barrier(VkCommandBuffer cb)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask =
                              VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
}

static VkDescriptorSet make_set(struct vkt *v, const struct vkt_pipe *p, VkDescriptorPool pool,
                                const struct vkt_buf *const *bufs, uint32_t n)
{
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = pool,
                                        .descriptorSetCount = 1,
                                        .pSetLayouts = &p->dsl};
    VkDescriptorSet set;
    VKT_CHECK(vkAllocateDescriptorSets(v->dev, &dsai, &set));
    VkDescriptorBufferInfo bi[4];
    for (uint32_t i = 0; i < n; i++)
        bi[i] = (VkDescriptorBufferInfo){bufs[i]->buf, 0, VK_WHOLE_SIZE};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = set,
                              .dstBinding = 0,
                              .descriptorCount = n,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = bi};
    vkUpdateDescriptorSets(v->dev, 1, &w, 0, NULL);
    return set;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int atomics = !strcmp(mode, "atomics"), uninit = !strcmp(mode, "uninit");
    int numwg = !strcmp(mode, "numwg");
    if (!atomics && !uninit && !numwg && strcmp(mode, "ok")) {
        fprintf(stderr, "usage: vk_orderdep ok|atomics|uninit|numwg\n");
        return 2;
    }
    static const char *const ext[] = {"VK_EXT_shader_atomic_float"};
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT,
        .shaderBufferFloat32AtomicAdd = VK_TRUE};
    struct vkt_opts o = {.extensions = ext, .n_extensions = 1, .chain = &af};
    struct vkt v;
    vkt_init_opts(&v, argv[0], 1, &o);

    struct vkt_buf in, sum, scratch, out;
    vkt_buffer(&v, N * 4, 1, &in);
    vkt_buffer(&v, 64, 1, &sum);
    /* 1 MiB: lavapipe takes that much from fresh pages (zeros), so the capture and a plain
     * replay read the same zeros where uninit reads t; a GPU would give whatever was there */
    vkt_buffer(&v, 1u << 20, 0, &scratch);
    vkt_buffer(&v, N * 4, 1, &out);
    /* atomics: fractions of 24 significant bits scaled by 2^0..2^19, so that the running sum
     * rounds at almost every step, and differently in another order */
    float *x = in.map;
    uint32_t r = 12345;
    for (uint32_t i = 0; i < N; i++) {
        r = r * 1664525u + 1013904223u;
        x[i] = atomics ? (float)(r >> 8) / 16777216.0f * (float)(1u << (i % 20)) : (float)(i % 13);
    }

    VkDescriptorType t4[4] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    struct vkt_pipe p;
    if (numwg)
        vkt_pipeline(&v, "numwg", 2, t4, 0, NULL, &p);
    else
        vkt_pipeline(&v, "orderdep", 4, t4, 4, NULL, &p);
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 1,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &size};
    VkDescriptorPool pool;
    VKT_CHECK(vkCreateDescriptorPool(v.dev, &dpci, NULL, &pool));
    const struct vkt_buf *b4[] = {&in, &sum, &scratch, &out}, *b2[] = {&in, &out};
    VkDescriptorSet set = numwg ? make_set(&v, &p, pool, b2, 2) : make_set(&v, &p, pool, b4, 4);

    VkCommandBuffer cb = vkt_cmdbuf(&v);
    vkt_begin(cb);
    vkCmdFillBuffer(cb, sum.buf, 0, VK_WHOLE_SIZE, 0);
    if (!uninit) /* 1.0f: what y adds; uninit leaves t as the allocation came */
        vkCmdFillBuffer(cb, scratch.buf, 0, VK_WHOLE_SIZE, 0x3f800000u);
    barrier(cb);
    uint32_t n = N;
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipe);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, NULL);
    if (!numwg)
        vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &n);
    vkCmdDispatch(cb, GROUPS, 1, 1);
    barrier(cb);
    VKT_CHECK(vkEndCommandBuffer(cb));
    vkt_submit_wait(&v, cb);
    uint64_t h = vkt_sum(0, out.map, N * 4);
    h = vkt_sum(h, sum.map, 4);
    printf("vk_orderdep %s: checksum %016" PRIx64 " sum %.9g\n", mode, h,
           (double)*(float *)sum.map);

    vkDestroyDescriptorPool(v.dev, pool, NULL);
    vkt_pipeline_free(&v, &p);
    struct vkt_buf *bufs[] = {&in, &sum, &scratch, &out};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        vkt_buffer_free(&v, bufs[i]);
    vkt_done(&v);
    return 0;
}
