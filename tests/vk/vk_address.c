/*
 * tests/vk/vk_address.c — buffer device addresses, for the capture and replay tests: the
 * addresses of two input buffers go into a table buffer (raw data, written by the host) and the
 * output's into push constants; address.comp writes the output through its pointer, addrsum.comp
 * only reads through the table's pointers into a bound buffer. Two rounds, the inputs changed by
 * the host in between. Three of the buffers share one allocation (at offsets), the output has
 * its own.
 *
 * A capture of it is complete; a replay reproduces it only at the captured addresses, which
 * needs bufferDeviceAddressCaptureReplay at capture and at replay (lavapipe has none: the test
 * layer VK_LAYER_REPRISE_fakebda, tests/vk/layer_fakebda.c, provides it on top of lavapipe).
 * Prints what it computed (checksums), the same with or without capture; exits 4 when the
 * device lacks buffer device addresses.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vk/vkt.h"

#define N 1024u

struct abuf {
    VkBuffer buf;
    VkDeviceSize off;
    VkDeviceAddress addr;
};

static VkBuffer make_buffer(struct vkt *v, VkDeviceSize size, VkBufferUsageFlags extra)
{
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT | extra};
    VkBuffer b;
    VKT_CHECK(vkCreateBuffer(v->dev, &bci, NULL, &b));
    return b;
}

/* Host-visible memory of size bytes for buffers with device addresses, mapped. */
static VkDeviceMemory alloc(struct vkt *v, VkBuffer like, VkDeviceSize size, void **map)
{
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(v->dev, like, &req);
    VkMemoryAllocateFlagsInfo fi = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                    .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .pNext = &fi,
                                .allocationSize = size,
                                .memoryTypeIndex =
                                    vkt_mem_type(v, req.memoryTypeBits,
                                                 VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)};
    VkDeviceMemory m;
    VKT_CHECK(vkAllocateMemory(v->dev, &mai, NULL, &m));
    VKT_CHECK(vkMapMemory(v->dev, m, 0, VK_WHOLE_SIZE, 0, map));
    return m;
}

static VkDeviceAddress address(struct vkt *v, VkBuffer b)
{
    VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                    .buffer = b};
    return vkGetBufferDeviceAddress(v->dev, &ai);
}

static VkPipeline pipeline(struct vkt *v, const char *shader, VkPipelineLayout pl,
                           VkShaderModule *m)
{
    *m = vkt_module(v, shader);
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = *m,
                  .pName = "main"},
        .layout = pl};
    VkPipeline p;
    VKT_CHECK(vkCreateComputePipelines(v->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p));
    return p;
}

int main(int argc, char **argv)
{
    (void)argc;
    struct vkt_opts o = {.buffer_device_address = 1};
    struct vkt v;
    vkt_init_opts(&v, argv[0], 1, &o);
    const VkBufferUsageFlags sda = VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
    /* a, b and the table in one allocation at 64 KiB steps; out and sum alone */
    VkBuffer a = make_buffer(&v, N * 4, sda), b = make_buffer(&v, N * 4, sda),
             table = make_buffer(&v, 256, 0), out = make_buffer(&v, N * 4, sda),
             sum = make_buffer(&v, N * 4, 0);
    uint8_t *shared_map, *out_map, *sum_map;
    VkDeviceMemory shared = alloc(&v, a, 3 << 16, (void **)&shared_map);
    VkDeviceMemory out_mem = alloc(&v, out, N * 4, (void **)&out_map);
    VkDeviceMemory sum_mem = alloc(&v, sum, N * 4, (void **)&sum_map);
    VKT_CHECK(vkBindBufferMemory(v.dev, a, shared, 0));
    VKT_CHECK(vkBindBufferMemory(v.dev, b, shared, 1 << 16));
    VKT_CHECK(vkBindBufferMemory(v.dev, table, shared, 2 << 16));
    VKT_CHECK(vkBindBufferMemory(v.dev, out, out_mem, 0));
    VKT_CHECK(vkBindBufferMemory(v.dev, sum, sum_mem, 0));
    VkDeviceAddress addr[3] = {address(&v, a), address(&v, b), address(&v, out)};
    memcpy(shared_map + (2 << 16), addr, 2 * sizeof addr[0]); /* the table: a, b */
    uint32_t *av = (uint32_t *)shared_map, *bv = (uint32_t *)(shared_map + (1 << 16));
    memset(out_map, 0, N * 4);

    VkDescriptorSetLayoutBinding lb[2] = {
        {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
        {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL}};
    VkDescriptorSetLayoutCreateInfo lci = {.sType =
                                               VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 2,
                                           .pBindings = lb};
    VkDescriptorSetLayout dsl;
    VKT_CHECK(vkCreateDescriptorSetLayout(v.dev, &lci, NULL, &dsl));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 16};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = 1,
                                       .pSetLayouts = &dsl,
                                       .pushConstantRangeCount = 1,
                                       .pPushConstantRanges = &pcr};
    VkPipelineLayout pl;
    VKT_CHECK(vkCreatePipelineLayout(v.dev, &plci, NULL, &pl));
    VkShaderModule m1, m2;
    VkPipeline p_write = pipeline(&v, "address", pl, &m1),
               p_read = pipeline(&v, "addrsum", pl, &m2);
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 1,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &ps};
    VkDescriptorPool dp;
    VKT_CHECK(vkCreateDescriptorPool(v.dev, &dpci, NULL, &dp));
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = dp,
                                       .descriptorSetCount = 1,
                                       .pSetLayouts = &dsl};
    VkDescriptorSet set;
    VKT_CHECK(vkAllocateDescriptorSets(v.dev, &dai, &set));
    VkDescriptorBufferInfo bi[2] = {{table, 0, VK_WHOLE_SIZE}, {sum, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = set,
                              .descriptorCount = 2,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = bi};
    vkUpdateDescriptorSets(v.dev, 1, &w, 0, NULL);
    VkCommandBuffer cb = vkt_cmdbuf(&v);
    for (uint32_t round = 1; round <= 2; round++) {
        for (uint32_t i = 0; i < N; i++) {
            av[i] = i * round + 7;
            bv[i] = (i ^ round) * 2654435761u;
        }
        vkt_begin(cb);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &set, 0, NULL);
        struct {
            VkDeviceAddress dst;
            uint32_t n, round;
        } pc = {addr[2], N, round};
        vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, &pc);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p_write);
        vkCmdDispatch(cb, N / 64, 1, 1);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p_read);
        vkCmdDispatch(cb, N / 64, 1, 1);
        vkt_submit_wait(&v, cb);
        printf("round %u out %016llx sum %016llx\n", round,
               (unsigned long long)vkt_sum(0, out_map, N * 4),
               (unsigned long long)vkt_sum(0, sum_map, N * 4));
    }
    vkDestroyDescriptorPool(v.dev, dp, NULL);
    vkDestroyPipeline(v.dev, p_write, NULL);
    vkDestroyPipeline(v.dev, p_read, NULL);
    vkDestroyShaderModule(v.dev, m1, NULL);
    vkDestroyShaderModule(v.dev, m2, NULL);
    vkDestroyPipelineLayout(v.dev, pl, NULL);
    vkDestroyDescriptorSetLayout(v.dev, dsl, NULL);
    VkBuffer all[5] = {a, b, table, out, sum};
    for (int i = 0; i < 5; i++)
        vkDestroyBuffer(v.dev, all[i], NULL);
    vkFreeMemory(v.dev, shared, NULL);
    vkFreeMemory(v.dev, out_mem, NULL);
    vkFreeMemory(v.dev, sum_mem, NULL);
    vkt_done(&v);
    return 0;
}
