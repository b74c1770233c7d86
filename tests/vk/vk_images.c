/*
 * tests/vk/vk_images.c — images in Vulkan compute, every way the capture layer records them:
 * image creation (1D arrays, 2D arrays, 3D, mip levels; optimal and linear tiling;
 * block-compressed, depth and stencil formats where the device has them), memory binding
 * (vkBindImageMemory at an offset of memory a buffer shares, vkBindImageMemory2 of a dedicated
 * allocation), views, samplers (linear with mip levels; an immutable one), descriptors of every
 * image type written plainly, through an update template, by copy and pushed
 * (VK_KHR_push_descriptor, plainly and through a template), buffer<->image copies
 * (v1 and v2, padded row lengths and image heights, offsets, boxes, layers, levels), image
 * copies, blits, color and depth/stencil clears, layout transitions and image barriers (v1 and
 * synchronization2), and the host writing a linear image through its mapping (at the row pitch
 * vkGetImageSubresourceLayout gives) and reading one a shader wrote.
 *
 * Prints one checksum per part of everything it read back (the same with or without capture);
 * a part the device cannot do says "unsupported". `vk_images exact` samples and blits with
 * nearest filtering at whole levels only, so that what it computes is the same on every
 * driver (filtering's precision is the driver's choice): the driver-upgrade tests use it.
 * `vk_images unpushed` leaves the immutable sampler's binding out of the push descriptors, a
 * bug of this program's first version: the shader then samples with an undefined sampler.
 * Exits 4 without a device.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vk/vkt.h"

struct ctx {
    struct vkt v;
    VkCommandPool pool;
    VkFence fence;
    int exact;    /* nearest filtering, whole levels */
    int unpushed; /* the push descriptors leave the immutable sampler's binding out */
};

static VkCommandBuffer begin(struct ctx *c)
{
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = c->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkCommandBuffer cb;
    VKT_CHECK(vkAllocateCommandBuffers(c->v.dev, &ai, &cb));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VKT_CHECK(vkBeginCommandBuffer(cb, &bi));
    return cb;
}

static void submit(struct ctx *c, VkCommandBuffer cb)
{
    VKT_CHECK(vkEndCommandBuffer(cb));
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    VKT_CHECK(vkQueueSubmit(c->v.queue[0], 1, &si, c->fence));
    VKT_CHECK(vkWaitForFences(c->v.dev, 1, &c->fence, VK_TRUE, UINT64_MAX));
    VKT_CHECK(vkResetFences(c->v.dev, 1, &c->fence));
    vkFreeCommandBuffers(c->v.dev, c->pool, 1, &cb);
}

static int supports(struct ctx *c, VkFormat f, VkImageTiling t, VkFormatFeatureFlags want)
{
    VkFormatProperties fp;
    vkGetPhysicalDeviceFormatProperties(c->v.phys, f, &fp);
    VkFormatFeatureFlags have =
        t == VK_IMAGE_TILING_LINEAR ? fp.linearTilingFeatures : fp.optimalTilingFeatures;
    return (have & want) == want;
}

static VkImage image(struct ctx *c, VkImageType type, VkFormat f, uint32_t w, uint32_t h,
                     uint32_t d, uint32_t mips, uint32_t layers, VkImageTiling tiling,
                     VkImageUsageFlags usage, VkImageLayout initial)
{
    VkImageCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                            .imageType = type,
                            .format = f,
                            .extent = {w, h, d},
                            .mipLevels = mips,
                            .arrayLayers = layers,
                            .samples = VK_SAMPLE_COUNT_1_BIT,
                            .tiling = tiling,
                            .usage = usage,
                            .initialLayout = initial};
    VkImage img;
    VKT_CHECK(vkCreateImage(c->v.dev, &ci, NULL, &img));
    return img;
}

/* Memory of its own for img (dedicated: VkMemoryDedicatedAllocateInfo, bound with
 * vkBindImageMemory2). */
static VkDeviceMemory own_memory(struct ctx *c, VkImage img, VkMemoryPropertyFlags props,
                                 int dedicated)
{
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(c->v.dev, img, &req);
    VkMemoryDedicatedAllocateInfo da = {.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
                                        .image = img};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .pNext = dedicated ? &da : NULL,
                               .allocationSize = req.size,
                               .memoryTypeIndex = vkt_mem_type(&c->v, req.memoryTypeBits, props)};
    VkDeviceMemory m;
    VKT_CHECK(vkAllocateMemory(c->v.dev, &ai, NULL, &m));
    if (dedicated) {
        VkBindImageMemoryInfo bi = {
            .sType = VK_STRUCTURE_TYPE_BIND_IMAGE_MEMORY_INFO, .image = img, .memory = m};
        VKT_CHECK(vkBindImageMemory2(c->v.dev, 1, &bi));
    } else {
        VKT_CHECK(vkBindImageMemory(c->v.dev, img, m, 0));
    }
    return m;
}

static VkImageView view(struct ctx *c, VkImage img, VkImageViewType t, VkFormat f,
                        VkImageAspectFlags aspect, uint32_t mip, uint32_t n_mips, uint32_t layer,
                        uint32_t n_layers)
{
    VkImageViewCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
                                .image = img,
                                .viewType = t,
                                .format = f,
                                .subresourceRange = {aspect, mip, n_mips, layer, n_layers}};
    VkImageView v;
    VKT_CHECK(vkCreateImageView(c->v.dev, &ci, NULL, &v));
    return v;
}

/* A layout transition of every level and layer of img (v1). */
static void to_layout(VkCommandBuffer cb, VkImage img, VkImageAspectFlags aspect,
                      VkImageLayout from, VkImageLayout to, VkAccessFlags src, VkAccessFlags dst)
{
    VkImageMemoryBarrier b = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
        .srcAccessMask = src,
        .dstAccessMask = dst,
        .oldLayout = from,
        .newLayout = to,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .image = img,
        .subresourceRange = {aspect, 0, VK_REMAINING_MIP_LEVELS, 0, VK_REMAINING_ARRAY_LAYERS}};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 0, NULL, 0, NULL, 1, &b);
}

/* The same with synchronization2. */
static void to_layout2(VkCommandBuffer cb, VkImage img, VkImageLayout from, VkImageLayout to)
{
    VkImageMemoryBarrier2 b = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
        .srcStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
        .srcAccessMask = VK_ACCESS_2_MEMORY_WRITE_BIT,
        .dstStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
        .dstAccessMask = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT,
        .oldLayout = from,
        .newLayout = to,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .image = img,
        .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, VK_REMAINING_MIP_LEVELS, 0,
                             VK_REMAINING_ARRAY_LAYERS}};
    VkDependencyInfo di = {.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                           .imageMemoryBarrierCount = 1,
                           .pImageMemoryBarriers = &b};
    vkCmdPipelineBarrier2(cb, &di);
}

static void memory_barrier(VkCommandBuffer cb)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
}

static void fill_pattern(void *p, size_t n, uint32_t seed)
{
    uint8_t *b = p;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (uint8_t)(x >> 16);
    }
}

/* Half floats in [0, 1) from the pattern (16-bit float images must not hold NaNs). */
static void fill_halves(void *p, size_t n_halves, uint32_t seed)
{
    uint16_t *h = p;
    fill_pattern(p, n_halves * 2, seed);
    for (size_t i = 0; i < n_halves; i++)
        h[i] = (uint16_t)(0x3800 | (h[i] & 0x3ff)); /* 0.5 .. 1.0 */
}

/* ========================================================================================== */
/* Sampled, storage, combined images; copies, blits, clears                                   */
/* ========================================================================================== */

static uint64_t compute_part(struct ctx *c)
{
    struct vkt *v = &c->v;
    VkDevice dev = v->dev;
    struct vkt_buf up, rb;
    vkt_buffer(v, 65536, 1, &up);
    vkt_buffer(v, 262144, 1, &rb);
    memset(rb.map, 0, rb.size);
    fill_pattern(up.map, 32768, 1);
    fill_halves((uint8_t *)up.map + 32768, 8192, 2); /* line's texels */
    float *vf = (float *)((uint8_t *)up.map + 49152);
    for (int i = 0; i < 512; i++)
        vf[i] = (float)(i % 37) / 37.0f;

    /* tex: 2D array RGBA8 32x24, 3 levels, 2 layers, bound at an offset of memory a storage
     * buffer shares */
    VkImage tex = image(c, VK_IMAGE_TYPE_2D, VK_FORMAT_R8G8B8A8_UNORM, 32, 24, 1, 3, 2,
                        VK_IMAGE_TILING_OPTIMAL,
                        VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                            VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                        VK_IMAGE_LAYOUT_UNDEFINED);
    VkBufferCreateInfo rbci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                               .size = 3072,
                               .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                        VK_BUFFER_USAGE_TRANSFER_SRC_BIT};
    VkBuffer res;
    VKT_CHECK(vkCreateBuffer(dev, &rbci, NULL, &res));
    VkMemoryRequirements tr, br;
    vkGetImageMemoryRequirements(dev, tex, &tr);
    vkGetBufferMemoryRequirements(dev, res, &br);
    VkDeviceSize toff = (br.size + tr.alignment - 1) / tr.alignment * tr.alignment;
    VkMemoryAllocateInfo sai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = toff + tr.size,
                                .memoryTypeIndex =
                                    vkt_mem_type(v, tr.memoryTypeBits & br.memoryTypeBits,
                                                 VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)};
    VkDeviceMemory shared;
    VKT_CHECK(vkAllocateMemory(dev, &sai, NULL, &shared));
    VKT_CHECK(vkBindBufferMemory(dev, res, shared, 0));
    VKT_CHECK(vkBindImageMemory(dev, tex, shared, toff));

    /* vol: 3D R32F 16x8x4, 2 levels, dedicated memory bound with vkBindImageMemory2 */
    VkImage vol =
        image(c, VK_IMAGE_TYPE_3D, VK_FORMAT_R32_SFLOAT, 16, 8, 4, 2, 1, VK_IMAGE_TILING_OPTIMAL,
              VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                  VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
              VK_IMAGE_LAYOUT_UNDEFINED);
    VkDeviceMemory vol_mem = own_memory(c, vol, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 1);
    /* line: 1D array RGBA16F 64, 4 levels, 3 layers */
    VkImage line = image(c, VK_IMAGE_TYPE_1D, VK_FORMAT_R16G16B16A16_SFLOAT, 64, 1, 1, 4, 3,
                         VK_IMAGE_TILING_OPTIMAL,
                         VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                             VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                         VK_IMAGE_LAYOUT_UNDEFINED);
    VkDeviceMemory line_mem = own_memory(c, line, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    /* out: 2D RGBA32F 32x24 written by the shader */
    VkImage out =
        image(c, VK_IMAGE_TYPE_2D, VK_FORMAT_R32G32B32A32_SFLOAT, 32, 24, 1, 1, 1,
              VK_IMAGE_TILING_OPTIMAL, VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
              VK_IMAGE_LAYOUT_UNDEFINED);
    VkDeviceMemory out_mem = own_memory(c, out, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    /* tex2: copies and blits land here */
    VkImage tex2 = image(c, VK_IMAGE_TYPE_2D, VK_FORMAT_R8G8B8A8_UNORM, 40, 30, 1, 1, 1,
                         VK_IMAGE_TILING_OPTIMAL,
                         VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                         VK_IMAGE_LAYOUT_UNDEFINED);
    VkDeviceMemory tex2_mem = own_memory(c, tex2, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);

    /* uploads, clears, transitions */
    VkCommandBuffer cb = begin(c);
    to_layout(cb, tex, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
              VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0, VK_ACCESS_TRANSFER_WRITE_BIT);
    VkClearColorValue grey = {.float32 = {0.5f, 0.25f, 0.75f, 1.0f}};
    VkImageSubresourceRange all = {VK_IMAGE_ASPECT_COLOR_BIT, 0, VK_REMAINING_MIP_LEVELS, 0,
                                   VK_REMAINING_ARRAY_LAYERS};
    vkCmdClearColorImage(cb, tex, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &grey, 1, &all);
    memory_barrier(cb);
    VkBufferImageCopy tr1[] = {
        {0, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 2}, {0, 0, 0}, {32, 24, 1}},
        /* level 1 layer 0 from rows padded to 20 texels, slices to 14 rows */
        {8192, 20, 14, {VK_IMAGE_ASPECT_COLOR_BIT, 1, 0, 1}, {0, 0, 0}, {16, 12, 1}},
        /* level 1 layer 1: a box */
        {12288, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 1, 1, 1}, {4, 2, 0}, {8, 6, 1}},
    };
    vkCmdCopyBufferToImage(cb, up.buf, tex, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 3, tr1);
    VkBufferImageCopy2 tr2 = {.sType = VK_STRUCTURE_TYPE_BUFFER_IMAGE_COPY_2,
                              .bufferOffset = 16384,
                              .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 2, 0, 2},
                              .imageExtent = {8, 6, 1}};
    VkCopyBufferToImageInfo2 ci2 = {.sType = VK_STRUCTURE_TYPE_COPY_BUFFER_TO_IMAGE_INFO_2,
                                    .srcBuffer = up.buf,
                                    .dstImage = tex,
                                    .dstImageLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                    .regionCount = 1,
                                    .pRegions = &tr2};
    vkCmdCopyBufferToImage2(cb, &ci2);
    to_layout(cb, tex, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
              VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, VK_ACCESS_TRANSFER_WRITE_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
    to_layout(cb, vol, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
              VK_IMAGE_LAYOUT_GENERAL, 0, VK_ACCESS_TRANSFER_WRITE_BIT);
    VkClearColorValue quarter = {.float32 = {0.25f, 0, 0, 0}},
                      three = {.float32 = {0.75f, 0, 0, 0}};
    VkImageSubresourceRange l0 = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1},
                            l1 = {VK_IMAGE_ASPECT_COLOR_BIT, 1, 1, 0, 1};
    vkCmdClearColorImage(cb, vol, VK_IMAGE_LAYOUT_GENERAL, &quarter, 1, &l0);
    vkCmdClearColorImage(cb, vol, VK_IMAGE_LAYOUT_GENERAL, &three, 1, &l1);
    memory_barrier(cb);
    /* a box of slices 1..3 with padded rows (6 texels) and slices (5 rows) */
    VkBufferImageCopy vr = {49152,     6,        5, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                            {2, 1, 1}, {4, 3, 2}};
    vkCmdCopyBufferToImage(cb, up.buf, vol, VK_IMAGE_LAYOUT_GENERAL, 1, &vr);
    to_layout2(cb, line, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
    VkBufferImageCopy2 lr[4];
    VkDeviceSize lo = 32768;
    for (uint32_t m = 0; m < 4; m++) {
        lr[m] = (VkBufferImageCopy2){.sType = VK_STRUCTURE_TYPE_BUFFER_IMAGE_COPY_2,
                                     .bufferOffset = lo,
                                     .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, m, 0, 3},
                                     .imageExtent = {64u >> m, 1, 1}};
        lo += (64u >> m) * 8 * 3;
    }
    VkCopyBufferToImageInfo2 lci = {.sType = VK_STRUCTURE_TYPE_COPY_BUFFER_TO_IMAGE_INFO_2,
                                    .srcBuffer = up.buf,
                                    .dstImage = line,
                                    .dstImageLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                    .regionCount = 4,
                                    .pRegions = lr};
    vkCmdCopyBufferToImage2(cb, &lci);
    to_layout2(cb, line, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
               VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
    to_layout2(cb, out, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL);
    submit(c, cb);

    /* samplers: linear with levels for tex; a nearest one, immutable in the layout */
    VkFilter filter = c->exact ? VK_FILTER_NEAREST : VK_FILTER_LINEAR;
    VkSamplerCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
                               .magFilter = filter,
                               .minFilter = filter,
                               .mipmapMode = c->exact ? VK_SAMPLER_MIPMAP_MODE_NEAREST
                                                      : VK_SAMPLER_MIPMAP_MODE_LINEAR,
                               .addressModeU = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                               .addressModeV = VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT,
                               .addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                               .maxLod = 8.0f,
                               .borderColor = VK_BORDER_COLOR_FLOAT_OPAQUE_BLACK};
    VkSampler lin_s, near_s;
    VKT_CHECK(vkCreateSampler(dev, &sci, NULL, &lin_s));
    sci.magFilter = sci.minFilter = VK_FILTER_NEAREST;
    sci.mipmapMode = VK_SAMPLER_MIPMAP_MODE_NEAREST;
    sci.addressModeU = VK_SAMPLER_ADDRESS_MODE_REPEAT;
    VKT_CHECK(vkCreateSampler(dev, &sci, NULL, &near_s));
    VkDescriptorSetLayoutBinding b[] = {
        {0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
        {1, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
        {2, VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
        {3, VK_DESCRIPTOR_TYPE_SAMPLER, 1, VK_SHADER_STAGE_COMPUTE_BIT, &near_s},
        {4, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
        {5, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
    };
    struct vkt_pipe p;
    vkt_pipeline_bindings(v, "img_mix", 6, b, 8, NULL, &p);
    VkImageView tex_v =
        view(c, tex, VK_IMAGE_VIEW_TYPE_2D_ARRAY, VK_FORMAT_R8G8B8A8_UNORM,
             VK_IMAGE_ASPECT_COLOR_BIT, 0, VK_REMAINING_MIP_LEVELS, 0, VK_REMAINING_ARRAY_LAYERS);
    VkImageView vol_v = view(c, vol, VK_IMAGE_VIEW_TYPE_3D, VK_FORMAT_R32_SFLOAT,
                             VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1);
    VkImageView line_v = view(c, line, VK_IMAGE_VIEW_TYPE_1D_ARRAY, VK_FORMAT_R16G16B16A16_SFLOAT,
                              VK_IMAGE_ASPECT_COLOR_BIT, 0, 4, 0, 3);
    VkImageView out_v = view(c, out, VK_IMAGE_VIEW_TYPE_2D, VK_FORMAT_R32G32B32A32_SFLOAT,
                             VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1);
    VkDescriptorPoolSize ps[] = {{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 3},
                                 {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 6},
                                 {VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, 3},
                                 {VK_DESCRIPTOR_TYPE_SAMPLER, 3},
                                 {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3}};
    VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 3,
                                      .poolSizeCount = 5,
                                      .pPoolSizes = ps};
    VkDescriptorPool dp;
    VKT_CHECK(vkCreateDescriptorPool(dev, &pci, NULL, &dp));
    VkDescriptorSetLayout dsls[3] = {p.dsl, p.dsl, p.dsl};
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = dp,
                                       .descriptorSetCount = 3,
                                       .pSetLayouts = dsls};
    VkDescriptorSet sets[3];
    VKT_CHECK(vkAllocateDescriptorSets(dev, &dai, sets));
    /* set 0: written plainly */
    VkDescriptorImageInfo ii[4] = {
        {lin_s, tex_v, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL},
        {VK_NULL_HANDLE, vol_v, VK_IMAGE_LAYOUT_GENERAL},
        {VK_NULL_HANDLE, line_v, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL},
        {VK_NULL_HANDLE, out_v, VK_IMAGE_LAYOUT_GENERAL},
    };
    VkDescriptorBufferInfo bi = {res, 0, VK_WHOLE_SIZE};
    VkWriteDescriptorSet w[5];
    uint32_t bindings[4] = {0, 1, 2, 4};
    for (int i = 0; i < 4; i++)
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = sets[0],
                                      .dstBinding = bindings[i],
                                      .descriptorCount = 1,
                                      .descriptorType = b[bindings[i]].descriptorType,
                                      .pImageInfo = &ii[i]};
    w[4] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = sets[0],
                                  .dstBinding = 5,
                                  .descriptorCount = 1,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                  .pBufferInfo = &bi};
    vkUpdateDescriptorSets(dev, 5, w, 0, NULL);
    /* set 1: through an update template */
    struct {
        VkDescriptorImageInfo img[4];
        VkDescriptorBufferInfo buf;
    } td = {{ii[0], ii[1], ii[2], ii[3]}, bi};
    VkDescriptorUpdateTemplateEntry te[5];
    for (int i = 0; i < 4; i++)
        te[i] = (VkDescriptorUpdateTemplateEntry){bindings[i],
                                                  0,
                                                  1,
                                                  b[bindings[i]].descriptorType,
                                                  (size_t)i * sizeof(VkDescriptorImageInfo),
                                                  0};
    te[4] = (VkDescriptorUpdateTemplateEntry){
        5, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4 * sizeof(VkDescriptorImageInfo), 0};
    VkDescriptorUpdateTemplateCreateInfo tci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_UPDATE_TEMPLATE_CREATE_INFO,
        .descriptorUpdateEntryCount = 5,
        .pDescriptorUpdateEntries = te,
        .templateType = VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_DESCRIPTOR_SET,
        .descriptorSetLayout = p.dsl};
    VkDescriptorUpdateTemplate tpl;
    VKT_CHECK(vkCreateDescriptorUpdateTemplate(dev, &tci, NULL, &tpl));
    vkUpdateDescriptorSetWithTemplate(dev, sets[1], tpl, &td);
    /* set 2: copied from set 0 (the immutable sampler stays the layout's) */
    VkCopyDescriptorSet cp[5];
    uint32_t all_b[5] = {0, 1, 2, 4, 5};
    for (int i = 0; i < 5; i++)
        cp[i] = (VkCopyDescriptorSet){.sType = VK_STRUCTURE_TYPE_COPY_DESCRIPTOR_SET,
                                      .srcSet = sets[0],
                                      .srcBinding = all_b[i],
                                      .dstSet = sets[2],
                                      .dstBinding = all_b[i],
                                      .descriptorCount = 1};
    vkUpdateDescriptorSets(dev, 0, NULL, 5, cp);

    /* three dispatches, their outputs read back after each */
    struct {
        float lod, scale;
    } pc[3] = {{0.5f, 2.0f}, {1.25f, 1.0f}, {0.0f, 4.0f}};
    if (c->exact)
        pc[0].lod = 0.0f, pc[1].lod = 1.0f, pc[2].lod = 2.0f;
    VkDeviceSize at = 0;
    for (int k = 0; k < 3; k++) {
        cb = begin(c);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &sets[k], 0,
                                NULL);
        vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, &pc[k]);
        vkCmdDispatch(cb, 4, 3, 1);
        to_layout2(cb, out, VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_LAYOUT_GENERAL);
        memory_barrier(cb);
        /* out with padded rows (40 texels) and slices (30 rows), at an offset */
        VkBufferImageCopy oc = {at + 256,  40,         30, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                {0, 0, 0}, {32, 24, 1}};
        vkCmdCopyImageToBuffer(cb, out, VK_IMAGE_LAYOUT_GENERAL, rb.buf, 1, &oc);
        VkBufferCopy rc = {0, at + 256 + 40 * 30 * 16, 3072};
        vkCmdCopyBuffer(cb, res, rb.buf, 1, &rc);
        submit(c, cb);
        at += 24576;
    }

    /* the same shader through push descriptors (VK_KHR_push_descriptor): pushed plainly, then
     * through a template, set 0's images and buffer, and the immutable sampler's binding:
     * push descriptors start undefined, immutable samplers too, until a write names their
     * binding (its pImageInfo is then ignored). Left out, as this program first did, the
     * shader samples with an undefined sampler: lavapipe used the immutable one, NVIDIA's
     * driver (580, H200) computed another result, and replay says the descriptor is missing. */
    PFN_vkCmdPushDescriptorSetKHR push = vkt_dev_fn(v, "vkCmdPushDescriptorSetKHR");
    PFN_vkCmdPushDescriptorSetWithTemplateKHR push_t =
        vkt_dev_fn(v, "vkCmdPushDescriptorSetWithTemplateKHR");
    struct vkt_pipe pp;
    vkt_set_layout_flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    vkt_pipeline_bindings(v, "img_mix", 6, b, 8, NULL, &pp);
    vkt_set_layout_flags = 0;
    VkDescriptorImageInfo smp_i = {near_s, VK_NULL_HANDLE, VK_IMAGE_LAYOUT_UNDEFINED};
    VkWriteDescriptorSet pw[6];
    memcpy(pw, w, sizeof w);
    pw[5] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                   .dstBinding = 3,
                                   .descriptorCount = 1,
                                   .descriptorType = VK_DESCRIPTOR_TYPE_SAMPLER,
                                   .pImageInfo = &smp_i};
    struct {
        VkDescriptorImageInfo img[4];
        VkDescriptorBufferInfo buf;
        VkDescriptorImageInfo smp;
    } ptd = {{ii[0], ii[1], ii[2], ii[3]}, bi, smp_i};
    VkDescriptorUpdateTemplateEntry pte[6];
    memcpy(pte, te, sizeof te);
    pte[4].offset = offsetof(__typeof__(ptd), buf);
    pte[5] = (VkDescriptorUpdateTemplateEntry){
        3, 0, 1, VK_DESCRIPTOR_TYPE_SAMPLER, offsetof(__typeof__(ptd), smp), 0};
    tci.descriptorUpdateEntryCount = c->unpushed ? 5 : 6;
    tci.pDescriptorUpdateEntries = pte;
    tci.templateType = VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_PUSH_DESCRIPTORS_KHR;
    tci.descriptorSetLayout = VK_NULL_HANDLE;
    tci.pipelineBindPoint = VK_PIPELINE_BIND_POINT_COMPUTE;
    tci.pipelineLayout = pp.layout;
    tci.set = 0;
    VkDescriptorUpdateTemplate ptpl;
    VKT_CHECK(vkCreateDescriptorUpdateTemplate(dev, &tci, NULL, &ptpl));
    for (int k = 0; k < 2; k++) {
        cb = begin(c);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pp.pipe);
        if (k == 0)
            push(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pp.layout, 0, c->unpushed ? 5 : 6, pw);
        else
            push_t(cb, ptpl, pp.layout, 0, &ptd);
        vkCmdPushConstants(cb, pp.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, &pc[2 - k]);
        vkCmdDispatch(cb, 4, 3, 1);
        memory_barrier(cb);
        VkDeviceSize pat = 131072 + (VkDeviceSize)k * 24576;
        VkBufferImageCopy oc = {pat,       0,          0, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                {0, 0, 0}, {32, 24, 1}};
        vkCmdCopyImageToBuffer(cb, out, VK_IMAGE_LAYOUT_GENERAL, rb.buf, 1, &oc);
        VkBufferCopy rc = {0, pat + 32 * 24 * 16, 3072};
        vkCmdCopyBuffer(cb, res, rb.buf, 1, &rc);
        submit(c, cb);
    }

    /* image copies and blits into tex2 */
    cb = begin(c);
    to_layout(cb, tex2, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
              VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0, VK_ACCESS_TRANSFER_WRITE_BIT);
    VkClearColorValue teal = {.uint32 = {0, 0, 0, 0}};
    teal.float32[1] = 0.5f;
    teal.float32[2] = 0.5f;
    VkImageSubresourceRange one = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdClearColorImage(cb, tex2, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &teal, 1, &one);
    memory_barrier(cb);
    to_layout(cb, tex, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
              VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_ACCESS_SHADER_READ_BIT,
              VK_ACCESS_TRANSFER_READ_BIT);
    VkImageCopy ic = {{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 1},
                      {2, 3, 0},
                      {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                      {20, 15, 0},
                      {16, 10, 1}};
    vkCmdCopyImage(cb, tex, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, tex2,
                   VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &ic);
    VkImageCopy2 ic2 = {.sType = VK_STRUCTURE_TYPE_IMAGE_COPY_2,
                        .srcSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 1, 0, 1},
                        .dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                        .extent = {16, 12, 1}};
    VkCopyImageInfo2 cii = {.sType = VK_STRUCTURE_TYPE_COPY_IMAGE_INFO_2,
                            .srcImage = tex,
                            .srcImageLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                            .dstImage = tex2,
                            .dstImageLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                            .regionCount = 1,
                            .pRegions = &ic2};
    vkCmdCopyImage2(cb, &cii);
    memory_barrier(cb);
    /* scaled (exact: one to one, as where a nearest texel lies when scaling is the driver's) */
    VkImageBlit bl = {{VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                      {{0, 0, 0}, {c->exact ? 16 : 32, c->exact ? 12 : 24, 1}},
                      {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                      {{0, 18, 0}, {16, 30, 1}}};
    vkCmdBlitImage(cb, tex, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, tex2,
                   VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &bl, filter);
    memory_barrier(cb);
    VkImageBlit2 bl2 = {.sType = VK_STRUCTURE_TYPE_IMAGE_BLIT_2,
                        .srcSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 1},
                        .srcOffsets = {{0, 0, 0}, {c->exact ? 8 : 24, c->exact ? 6 : 12, 1}},
                        .dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                        .dstOffsets = {{38, 0, 0}, {30, 6, 1}}}; /* mirrored in x */
    VkBlitImageInfo2 bii = {.sType = VK_STRUCTURE_TYPE_BLIT_IMAGE_INFO_2,
                            .srcImage = tex,
                            .srcImageLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                            .dstImage = tex2,
                            .dstImageLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                            .regionCount = 1,
                            .pRegions = &bl2,
                            .filter = VK_FILTER_NEAREST};
    vkCmdBlitImage2(cb, &bii);
    to_layout(cb, tex2, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
              VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_ACCESS_TRANSFER_WRITE_BIT,
              VK_ACCESS_TRANSFER_READ_BIT);
    to_layout(cb, vol, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_GENERAL,
              VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_ACCESS_SHADER_READ_BIT,
              VK_ACCESS_TRANSFER_READ_BIT);
    to_layout2(cb, line, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
               VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
    /* read-backs: tex2 (v2), both levels of vol, level 2 of line's layers 1..2, a box of tex */
    VkBufferImageCopy2 r2 = {.sType = VK_STRUCTURE_TYPE_BUFFER_IMAGE_COPY_2,
                             .bufferOffset = 81920,
                             .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                             .imageExtent = {40, 30, 1}};
    VkCopyImageToBufferInfo2 cib = {.sType = VK_STRUCTURE_TYPE_COPY_IMAGE_TO_BUFFER_INFO_2,
                                    .srcImage = tex2,
                                    .srcImageLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                                    .dstBuffer = rb.buf,
                                    .regionCount = 1,
                                    .pRegions = &r2};
    vkCmdCopyImageToBuffer2(cb, &cib);
    VkBufferImageCopy vb[2] = {
        {87040, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, {0, 0, 0}, {16, 8, 4}},
        {89088, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 1, 0, 1}, {0, 0, 0}, {8, 4, 2}}};
    vkCmdCopyImageToBuffer(cb, vol, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, rb.buf, 2, vb);
    VkBufferImageCopy lb = {89600,     0,         0, {VK_IMAGE_ASPECT_COLOR_BIT, 2, 1, 2},
                            {0, 0, 0}, {16, 1, 1}};
    vkCmdCopyImageToBuffer(cb, line, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, rb.buf, 1, &lb);
    VkBufferImageCopy tb = {90112,     0,         0, {VK_IMAGE_ASPECT_COLOR_BIT, 1, 1, 1},
                            {2, 1, 0}, {12, 9, 1}};
    vkCmdCopyImageToBuffer(cb, tex, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, rb.buf, 1, &tb);
    submit(c, cb);
    uint64_t sum = vkt_sum(0, rb.map, rb.size);

    vkDestroyDescriptorUpdateTemplate(dev, tpl, NULL);
    vkDestroyDescriptorUpdateTemplate(dev, ptpl, NULL);
    vkt_pipeline_free(v, &pp);
    vkDestroyDescriptorPool(dev, dp, NULL);
    vkDestroyImageView(dev, tex_v, NULL);
    vkDestroyImageView(dev, vol_v, NULL);
    vkDestroyImageView(dev, line_v, NULL);
    vkDestroyImageView(dev, out_v, NULL);
    vkt_pipeline_free(v, &p);
    vkDestroySampler(dev, lin_s, NULL);
    vkDestroySampler(dev, near_s, NULL);
    vkDestroyImage(dev, tex, NULL);
    vkDestroyImage(dev, tex2, NULL);
    vkDestroyImage(dev, vol, NULL);
    vkDestroyImage(dev, line, NULL);
    vkDestroyImage(dev, out, NULL);
    vkDestroyBuffer(dev, res, NULL);
    vkFreeMemory(dev, shared, NULL);
    vkFreeMemory(dev, vol_mem, NULL);
    vkFreeMemory(dev, line_mem, NULL);
    vkFreeMemory(dev, out_mem, NULL);
    vkFreeMemory(dev, tex2_mem, NULL);
    vkt_buffer_free(v, &up);
    vkt_buffer_free(v, &rb);
    return sum;
}

/* ========================================================================================== */
/* Block-compressed, depth and stencil images                                                 */
/* ========================================================================================== */

/* BC1 20x12 with 2 levels (edge blocks): uploaded, copied to a second one, read back. */
static int bc_part(struct ctx *c, uint64_t *sum)
{
    VkFormat f = VK_FORMAT_BC1_RGBA_UNORM_BLOCK;
    if (!supports(c, f, VK_IMAGE_TILING_OPTIMAL,
                  VK_FORMAT_FEATURE_TRANSFER_SRC_BIT | VK_FORMAT_FEATURE_TRANSFER_DST_BIT))
        return 0;
    struct vkt_buf up, rb;
    vkt_buffer(&c->v, 4096, 1, &up);
    vkt_buffer(&c->v, 4096, 1, &rb);
    fill_pattern(up.map, 4096, 7);
    memset(rb.map, 0, rb.size);
    VkImage a = image(c, VK_IMAGE_TYPE_2D, f, 20, 12, 1, 2, 1, VK_IMAGE_TILING_OPTIMAL,
                      VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                      VK_IMAGE_LAYOUT_UNDEFINED);
    VkImage bimg = image(c, VK_IMAGE_TYPE_2D, f, 20, 12, 1, 2, 1, VK_IMAGE_TILING_OPTIMAL,
                         VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                         VK_IMAGE_LAYOUT_UNDEFINED);
    VkDeviceMemory am = own_memory(c, a, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    VkDeviceMemory bm = own_memory(c, bimg, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 1);
    VkCommandBuffer cb = begin(c);
    to_layout(cb, a, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL,
              0, VK_ACCESS_TRANSFER_WRITE_BIT);
    to_layout(cb, bimg, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
              VK_IMAGE_LAYOUT_GENERAL, 0, VK_ACCESS_TRANSFER_WRITE_BIT);
    /* level 0: 5x3 blocks of 8 bytes; level 1 (10x6): 3x2 blocks, from rows of 4 blocks */
    VkBufferImageCopy up_r[2] = {
        {0, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, {0, 0, 0}, {20, 12, 1}},
        {256, 16, 8, {VK_IMAGE_ASPECT_COLOR_BIT, 1, 0, 1}, {0, 0, 0}, {10, 6, 1}}};
    vkCmdCopyBufferToImage(cb, up.buf, a, VK_IMAGE_LAYOUT_GENERAL, 2, up_r);
    memory_barrier(cb);
    /* both levels whole, then a box over them from level 0 into level 1 (4x4 blocks aligned) */
    VkImageCopy ic[3] = {{{VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                          {0, 0, 0},
                          {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                          {0, 0, 0},
                          {20, 12, 1}},
                         {{VK_IMAGE_ASPECT_COLOR_BIT, 1, 0, 1},
                          {0, 0, 0},
                          {VK_IMAGE_ASPECT_COLOR_BIT, 1, 0, 1},
                          {0, 0, 0},
                          {10, 6, 1}},
                         {{VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                          {8, 4, 0},
                          {VK_IMAGE_ASPECT_COLOR_BIT, 1, 0, 1},
                          {4, 0, 0},
                          {4, 4, 1}}};
    vkCmdCopyImage(cb, a, VK_IMAGE_LAYOUT_GENERAL, bimg, VK_IMAGE_LAYOUT_GENERAL, 2, ic);
    memory_barrier(cb);
    vkCmdCopyImage(cb, a, VK_IMAGE_LAYOUT_GENERAL, bimg, VK_IMAGE_LAYOUT_GENERAL, 1, &ic[2]);
    memory_barrier(cb);
    VkBufferImageCopy rb_r[2] = {
        {0, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, {0, 0, 0}, {20, 12, 1}},
        {512, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 1, 0, 1}, {0, 0, 0}, {10, 6, 1}}};
    vkCmdCopyImageToBuffer(cb, bimg, VK_IMAGE_LAYOUT_GENERAL, rb.buf, 2, rb_r);
    submit(c, cb);
    *sum = vkt_sum(0, rb.map, 1024);
    vkDestroyImage(c->v.dev, a, NULL);
    vkDestroyImage(c->v.dev, bimg, NULL);
    vkFreeMemory(c->v.dev, am, NULL);
    vkFreeMemory(c->v.dev, bm, NULL);
    vkt_buffer_free(&c->v, &up);
    vkt_buffer_free(&c->v, &rb);
    return 1;
}

/* A depth or depth/stencil image: cleared, a box uploaded into each aspect, read back. */
static int ds_part(struct ctx *c, VkFormat f, VkImageAspectFlags aspects, uint64_t *sum)
{
    if (!supports(c, f, VK_IMAGE_TILING_OPTIMAL,
                  VK_FORMAT_FEATURE_TRANSFER_SRC_BIT | VK_FORMAT_FEATURE_TRANSFER_DST_BIT))
        return 0;
    struct vkt_buf up, rb;
    vkt_buffer(&c->v, 4096, 1, &up);
    vkt_buffer(&c->v, 4096, 1, &rb);
    float *d = up.map;
    for (int i = 0; i < 64; i++)
        d[i] = (float)i / 64.0f;
    fill_pattern((uint8_t *)up.map + 1024, 256, (uint32_t)f); /* not the last part's bytes */
    memset(rb.map, 0, rb.size);
    VkImage img = image(c, VK_IMAGE_TYPE_2D, f, 8, 8, 1, 1, 2, VK_IMAGE_TILING_OPTIMAL,
                        VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                        VK_IMAGE_LAYOUT_UNDEFINED);
    VkDeviceMemory m = own_memory(c, img, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    VkCommandBuffer cb = begin(c);
    to_layout(cb, img, aspects, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0,
              VK_ACCESS_TRANSFER_WRITE_BIT);
    VkClearDepthStencilValue z = {0.375f, 0x5a};
    VkImageSubresourceRange all = {aspects, 0, 1, 0, 2};
    vkCmdClearDepthStencilImage(cb, img, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &z, 1, &all);
    memory_barrier(cb);
    VkDeviceSize out = 0;
    for (uint32_t a = VK_IMAGE_ASPECT_DEPTH_BIT; a <= VK_IMAGE_ASPECT_STENCIL_BIT; a <<= 1) {
        if (!(aspects & a))
            continue;
        VkBufferImageCopy r = {
            a == VK_IMAGE_ASPECT_DEPTH_BIT ? 0 : 1024, 0, 0, {a, 0, 1, 1}, {2, 1, 0}, {4, 5, 1}};
        if (a == VK_IMAGE_ASPECT_DEPTH_BIT && f == VK_FORMAT_D16_UNORM) /* 2-byte texels */
            r.bufferOffset = 1024;
        vkCmdCopyBufferToImage(cb, up.buf, img, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &r);
    }
    to_layout(cb, img, aspects, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
              VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_ACCESS_TRANSFER_WRITE_BIT,
              VK_ACCESS_TRANSFER_READ_BIT);
    for (uint32_t a = VK_IMAGE_ASPECT_DEPTH_BIT; a <= VK_IMAGE_ASPECT_STENCIL_BIT; a <<= 1) {
        if (!(aspects & a))
            continue;
        VkBufferImageCopy r = {out, 0, 0, {a, 0, 0, 2}, {0, 0, 0}, {8, 8, 1}};
        vkCmdCopyImageToBuffer(cb, img, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, rb.buf, 1, &r);
        out += 2048;
    }
    submit(c, cb);
    /* D24's eight upper bits of each word are undefined: not summed */
    if (f == VK_FORMAT_D24_UNORM_S8_UINT || f == VK_FORMAT_X8_D24_UNORM_PACK32)
        for (int i = 0; i < 128; i++)
            ((uint8_t *)rb.map)[i * 4 + 3] = 0;
    *sum = vkt_sum(0, rb.map, 4096);
    vkDestroyImage(c->v.dev, img, NULL);
    vkFreeMemory(c->v.dev, m, NULL);
    vkt_buffer_free(&c->v, &up);
    vkt_buffer_free(&c->v, &rb);
    return 1;
}

/* ========================================================================================== */
/* Linear images the host writes and reads through their mappings                             */
/* ========================================================================================== */

static int linear_part(struct ctx *c, uint64_t *sum)
{
    VkFormat f = VK_FORMAT_R8G8B8A8_UNORM;
    if (!supports(c, f, VK_IMAGE_TILING_LINEAR, VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT) ||
        !supports(c, f, VK_IMAGE_TILING_LINEAR, VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT))
        return 0;
    VkDevice dev = c->v.dev;
    VkMemoryPropertyFlags hv =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    VkImage lin = image(c, VK_IMAGE_TYPE_2D, f, 20, 10, 1, 1, 1, VK_IMAGE_TILING_LINEAR,
                        VK_IMAGE_USAGE_SAMPLED_BIT, VK_IMAGE_LAYOUT_PREINITIALIZED);
    VkImage lout = image(c, VK_IMAGE_TYPE_2D, f, 20, 10, 1, 1, 1, VK_IMAGE_TILING_LINEAR,
                         VK_IMAGE_USAGE_STORAGE_BIT, VK_IMAGE_LAYOUT_UNDEFINED);
    VkDeviceMemory lm = own_memory(c, lin, hv, 0), om = own_memory(c, lout, hv, 0);
    VkImageSubresource sr = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0};
    VkSubresourceLayout ll, ol;
    vkGetImageSubresourceLayout(dev, lin, &sr, &ll);
    vkGetImageSubresourceLayout(dev, lout, &sr, &ol);
    uint8_t *lp, *op;
    VKT_CHECK(vkMapMemory(dev, lm, 0, VK_WHOLE_SIZE, 0, (void **)&lp));
    VKT_CHECK(vkMapMemory(dev, om, 0, VK_WHOLE_SIZE, 0, (void **)&op));
    for (uint32_t y = 0; y < 10; y++) /* the texels, at the driver's row pitch */
        fill_pattern(lp + ll.offset + y * ll.rowPitch, 20 * 4, 100 + y);
    struct vkt_pipe p;
    VkDescriptorSetLayoutBinding b[] = {
        {0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
        {1, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL}};
    vkt_pipeline_bindings(&c->v, "img_linear", 2, b, 0, NULL, &p);
    VkSamplerCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
                               .addressModeU = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                               .addressModeV = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                               .addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE};
    VkSampler s;
    VKT_CHECK(vkCreateSampler(dev, &sci, NULL, &s));
    VkImageView lv = view(c, lin, VK_IMAGE_VIEW_TYPE_2D, f, VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1);
    VkImageView ov = view(c, lout, VK_IMAGE_VIEW_TYPE_2D, f, VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1);
    VkDescriptorPoolSize ps[] = {{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1},
                                 {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 1}};
    VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 1,
                                      .poolSizeCount = 2,
                                      .pPoolSizes = ps};
    VkDescriptorPool dp;
    VKT_CHECK(vkCreateDescriptorPool(dev, &pci, NULL, &dp));
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = dp,
                                       .descriptorSetCount = 1,
                                       .pSetLayouts = &p.dsl};
    VkDescriptorSet set;
    VKT_CHECK(vkAllocateDescriptorSets(dev, &dai, &set));
    VkDescriptorImageInfo ii[2] = {{s, lv, VK_IMAGE_LAYOUT_GENERAL},
                                   {VK_NULL_HANDLE, ov, VK_IMAGE_LAYOUT_GENERAL}};
    VkWriteDescriptorSet w[2] = {{.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = set,
                                  .dstBinding = 0,
                                  .descriptorCount = 1,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
                                  .pImageInfo = &ii[0]},
                                 {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = set,
                                  .dstBinding = 1,
                                  .descriptorCount = 1,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE,
                                  .pImageInfo = &ii[1]}};
    vkUpdateDescriptorSets(dev, 2, w, 0, NULL);
    uint64_t h = 0;
    for (int round = 0; round < 2; round++) {
        if (round) /* the host rewrites three rows */
            for (uint32_t y = 3; y < 6; y++)
                fill_pattern(lp + ll.offset + y * ll.rowPitch, 20 * 4, 200 + y);
        VkCommandBuffer cb = begin(c);
        if (!round) {
            to_layout(cb, lin, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_PREINITIALIZED,
                      VK_IMAGE_LAYOUT_GENERAL, VK_ACCESS_HOST_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT);
            to_layout(cb, lout, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
                      VK_IMAGE_LAYOUT_GENERAL, 0, VK_ACCESS_SHADER_WRITE_BIT);
        } else {
            memory_barrier(cb);
        }
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, NULL);
        vkCmdDispatch(cb, 5, 3, 1);
        VkMemoryBarrier hb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &hb, 0, NULL, 0, NULL);
        submit(c, cb);
        for (uint32_t y = 0; y < 10; y++) /* the shader's texels, at its row pitch */
            h = vkt_sum(h, op + ol.offset + y * ol.rowPitch, 20 * 4);
    }
    *sum = h;
    vkUnmapMemory(dev, lm);
    vkUnmapMemory(dev, om);
    vkDestroyDescriptorPool(dev, dp, NULL);
    vkDestroyImageView(dev, lv, NULL);
    vkDestroyImageView(dev, ov, NULL);
    vkDestroySampler(dev, s, NULL);
    vkt_pipeline_free(&c->v, &p);
    vkDestroyImage(dev, lin, NULL);
    vkDestroyImage(dev, lout, NULL);
    vkFreeMemory(dev, lm, NULL);
    vkFreeMemory(dev, om, NULL);
    return 1;
}

int main(int argc, char **argv)
{
    struct ctx c;
    memset(&c, 0, sizeof c);
    static const char *const ext[] = {"VK_KHR_push_descriptor"};
    struct vkt_opts o = {.extensions = ext, .n_extensions = 1};
    vkt_init_opts(&c.v, argv[0], 1, &o);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "exact"))
            c.exact = 1;
        else if (!strcmp(argv[i], "unpushed"))
            c.unpushed = 1;
        else {
            fprintf(stderr, "usage: vk_images [exact] [unpushed]\n");
            return 2;
        }
    }
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .queueFamilyIndex = c.v.family};
    VKT_CHECK(vkCreateCommandPool(c.v.dev, &cpi, NULL, &c.pool));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKT_CHECK(vkCreateFence(c.v.dev, &fci, NULL, &c.fence));
    uint64_t s = 0;
    printf("images %016llx\n", (unsigned long long)compute_part(&c));
    if (bc_part(&c, &s))
        printf("bc1 %016llx\n", (unsigned long long)s);
    else
        printf("bc1 unsupported\n");
    static const struct {
        VkFormat f;
        VkImageAspectFlags a;
        const char *name;
    } ds[] = {{VK_FORMAT_D32_SFLOAT, VK_IMAGE_ASPECT_DEPTH_BIT, "d32"},
              {VK_FORMAT_D16_UNORM, VK_IMAGE_ASPECT_DEPTH_BIT, "d16"},
              {VK_FORMAT_S8_UINT, VK_IMAGE_ASPECT_STENCIL_BIT, "s8"},
              {VK_FORMAT_D32_SFLOAT_S8_UINT,
               VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT, "d32s8"}};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        if (ds_part(&c, ds[i].f, ds[i].a, &s))
            printf("%s %016llx\n", ds[i].name, (unsigned long long)s);
        else
            printf("%s unsupported\n", ds[i].name);
    }
    if (linear_part(&c, &s))
        printf("linear %016llx\n", (unsigned long long)s);
    else
        printf("linear unsupported\n");
    vkDestroyFence(c.v.dev, c.fence, NULL);
    vkDestroyCommandPool(c.v.dev, c.pool, NULL);
    vkt_done(&c.v);
    return 0;
}
