/*
 * tests/vk/vk_formats.c — every image format the device can copy, each in the shapes it
 * allows: a 2D array with mip levels (block-compressed ones with edge blocks), a 3D image and a
 * 1D array for uncompressed color formats, one 2D image of each multi-planar format. Each image
 * gets its bytes from one vkCmdCopyBufferToImage, a region per aspect and level covering every
 * layer, from tightly packed buffer bytes (bufferRowLength = bufferImageHeight = 0), and is
 * read back the same way. The trace of this program lets the tests check the packed layout of
 * format/sbt_vk.h against the driver itself: a replay's outputs of each upload (the image's
 * packed bytes, read back through the replay's own copies) must be the upload's regions one
 * after the other.
 *
 * Prints one line per format and shape: its name, "ok" when the read-back bytes are the
 * uploaded ones, and a checksum. Links the reprise library for the format table.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sbt_vk.h"
#include "tests/vk/vkt.h"

struct shape {
    const char *name;
    VkImageType type;
    uint32_t w, h, d, mips, layers;
};

static uint32_t lcm16(uint32_t a)
{
    uint32_t x = a, y = 16;
    while (y) {
        uint32_t t = x % y;
        x = y;
        y = t;
    }
    return a / x * 16;
}

static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 7;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

/* Bytes that are the aspect's texels and defined on read-back: depth as floats in [0, 1) for
 * D32, the 24 bits of D24 (its upper byte is undefined), anything else as it is. */
static void texels(const struct sbt_vk_format *f, uint32_t aspect, uint8_t *p, size_t n,
                   uint32_t seed)
{
    pattern(p, n, seed);
    if (aspect != VK_IMAGE_ASPECT_DEPTH_BIT || f->depth_bytes != 4)
        return;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        if (strstr(f->name, "D32")) {
            float v = (float)(p[i] | p[i + 1] << 8) / 65536.0f;
            memcpy(p + i, &v, 4);
        } else {
            p[i + 3] = 0;
        }
    }
}

struct region {
    uint32_t aspect, mip;
    VkDeviceSize off, len;
    struct sbt_vk_subres s;
};

static int one(struct vkt *v, VkCommandPool pool, VkFence fence, const struct sbt_vk_format *f,
               const struct shape *sh, uint64_t *sum)
{
    VkDevice dev = v->dev;
    VkImageFormatProperties ifp;
    VkImageUsageFlags usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    if (vkGetPhysicalDeviceImageFormatProperties(v->phys, (VkFormat)f->format, sh->type,
                                                 VK_IMAGE_TILING_OPTIMAL, usage, 0,
                                                 &ifp) != VK_SUCCESS ||
        ifp.maxMipLevels < sh->mips || ifp.maxArrayLayers < sh->layers ||
        ifp.maxExtent.width < sh->w || ifp.maxExtent.height < sh->h || ifp.maxExtent.depth < sh->d)
        return 0;
    struct sbt_vk_image desc = {f->format, sh->type, {sh->w, sh->h, sh->d}, sh->mips, sh->layers};
    uint64_t packed;
    if (sbt_vk_image_check(&desc, &packed) < 0)
        return 0;
    uint32_t aspects = sbt_vk_format_aspects(f->format);
    struct region r[3 * 16];
    uint32_t n = 0;
    VkDeviceSize at = 0;
    for (uint32_t a = 1; a <= VK_IMAGE_ASPECT_PLANE_2_BIT; a <<= 1) {
        if (!(aspects & a))
            continue;
        for (uint32_t m = 0; m < sh->mips; m++) {
            struct region *x = &r[n++];
            x->aspect = a;
            x->mip = m;
            sbt_vk_image_subres(&desc, a, m, &x->s);
            uint32_t al = lcm16(a & (VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT)
                                    ? 4
                                    : x->s.block_bytes);
            at = (at + al - 1) / al * al;
            x->off = at;
            x->len = x->s.layer_bytes * sh->layers;
            at += x->len;
        }
    }
    struct vkt_buf up, rb;
    vkt_buffer(v, at, 1, &up);
    vkt_buffer(v, at, 1, &rb);
    memset(up.map, 0, at);
    memset(rb.map, 0, at);
    for (uint32_t i = 0; i < n; i++)
        texels(f, r[i].aspect, (uint8_t *)up.map + r[i].off, r[i].len, f->format * 31 + i);
    VkImageCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                            .imageType = sh->type,
                            .format = (VkFormat)f->format,
                            .extent = {sh->w, sh->h, sh->d},
                            .mipLevels = sh->mips,
                            .arrayLayers = sh->layers,
                            .samples = VK_SAMPLE_COUNT_1_BIT,
                            .tiling = VK_IMAGE_TILING_OPTIMAL,
                            .usage = usage};
    VkImage img;
    VKT_CHECK(vkCreateImage(dev, &ci, NULL, &img));
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(dev, img, &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = vkt_mem_type(v, req.memoryTypeBits, 0)};
    VkDeviceMemory mem;
    VKT_CHECK(vkAllocateMemory(dev, &ai, NULL, &mem));
    VKT_CHECK(vkBindImageMemory(dev, img, mem, 0));
    VkBufferImageCopy c[3 * 16];
    for (uint32_t i = 0; i < n; i++)
        c[i] =
            (VkBufferImageCopy){r[i].off,  0,
                                0,         {r[i].aspect, r[i].mip, 0, sh->layers},
                                {0, 0, 0}, {r[i].s.extent[0], r[i].s.extent[1], r[i].s.extent[2]}};
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    VkCommandBuffer cb;
    VKT_CHECK(vkAllocateCommandBuffers(dev, &cai, &cb));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VKT_CHECK(vkBeginCommandBuffer(cb, &bi));
    uint32_t all = aspects & (VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT)
                       ? aspects
                       : VK_IMAGE_ASPECT_COLOR_BIT;
    VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
                              .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                              .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
                              .newLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                              .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .image = img,
                              .subresourceRange = {all, 0, sh->mips, 0, sh->layers}};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                         0, NULL, 0, NULL, 1, &b);
    vkCmdCopyBufferToImage(cb, up.buf, img, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, n, c);
    b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    b.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
    b.newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0,
                         NULL, 0, NULL, 1, &b);
    vkCmdCopyImageToBuffer(cb, img, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, rb.buf, n, c);
    VKT_CHECK(vkEndCommandBuffer(cb));
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    VKT_CHECK(vkQueueSubmit(v->queue[0], 1, &si, fence));
    VKT_CHECK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));
    VKT_CHECK(vkResetFences(dev, 1, &fence));
    vkFreeCommandBuffers(dev, pool, 1, &cb);
    int same = 1;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *u = (uint8_t *)up.map + r[i].off, *d = (uint8_t *)rb.map + r[i].off;
        if (r[i].aspect == VK_IMAGE_ASPECT_DEPTH_BIT && f->depth_bytes == 4 &&
            !strstr(f->name, "D32"))
            for (VkDeviceSize k = 3; k < r[i].len; k += 4)
                d[k] = 0; /* D24's undefined byte */
        same &= !memcmp(u, d, r[i].len);
    }
    *sum = vkt_sum(0, rb.map, at) ^ (same ? 0 : 1);
    vkDestroyImage(dev, img, NULL);
    vkFreeMemory(dev, mem, NULL);
    vkt_buffer_free(v, &up);
    vkt_buffer_free(v, &rb);
    return same ? 1 : 2;
}

int main(int argc, char **argv)
{
    (void)argc;
    struct vkt v;
    vkt_init(&v, argv[0], 1);
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .queueFamilyIndex = v.family};
    VkCommandPool pool;
    VKT_CHECK(vkCreateCommandPool(v.dev, &cpi, NULL, &pool));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    VKT_CHECK(vkCreateFence(v.dev, &fci, NULL, &fence));
    static const struct shape color[] = {{"2d", VK_IMAGE_TYPE_2D, 13, 7, 1, 3, 2},
                                         {"3d", VK_IMAGE_TYPE_3D, 9, 5, 3, 2, 1},
                                         {"1d", VK_IMAGE_TYPE_1D, 17, 1, 1, 2, 2}};
    static const struct shape compressed = {"2d", VK_IMAGE_TYPE_2D, 20, 12, 1, 2, 3};
    static const struct shape planar = {"2d", VK_IMAGE_TYPE_2D, 8, 4, 1, 1, 1};
    uint32_t n_ok = 0, n_bad = 0;
    for (uint32_t i = 0; i < sbt_vk_n_formats; i++) {
        const struct sbt_vk_format *f = &sbt_vk_formats[i];
        /* Vulkan 1.3's formats: the core ones and those of extensions it promoted (Y'CbCr,
         * ASTC HDR, 4444, 2-plane 444); asking about others is invalid without their
         * extension */
        uint32_t ext = f->format >= 1000000000u ? (f->format - 1000000000u) / 1000 + 1 : 0;
        if (ext && ext != 157 && ext != 67 && ext != 331 && ext != 341)
            continue;
        VkFormatProperties fp;
        vkGetPhysicalDeviceFormatProperties(v.phys, (VkFormat)f->format, &fp);
        VkFormatFeatureFlags need =
            VK_FORMAT_FEATURE_TRANSFER_SRC_BIT | VK_FORMAT_FEATURE_TRANSFER_DST_BIT;
        if ((fp.optimalTilingFeatures & need) != need)
            continue;
        const struct shape *sh = color;
        uint32_t n_sh = 3;
        if (f->n_planes)
            sh = &planar, n_sh = 1;
        else if (f->block[0] > 1 || f->block[1] > 1)
            sh = &compressed, n_sh = 1;
        else if (f->depth_bytes || f->stencil_bytes)
            n_sh = 1;
        for (uint32_t k = 0; k < n_sh; k++) {
            uint64_t sum = 0;
            int st = one(&v, pool, fence, f, &sh[k], &sum);
            if (!st)
                continue;
            printf("%s %s %s %016llx\n", f->name, sh[k].name, st == 1 ? "ok" : "differs",
                   (unsigned long long)sum);
            n_ok += st == 1;
            n_bad += st == 2;
        }
    }
    printf("%u format shapes round trip, %u do not\n", n_ok, n_bad);
    vkDestroyFence(v.dev, fence, NULL);
    vkDestroyCommandPool(v.dev, pool, NULL);
    vkt_done(&v);
    return 0;
}
