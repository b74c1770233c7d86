/*
 * replay/vk/replay_vk_image.c — the Vulkan backend's images, image views and samplers, the image
 * ops (buffer<->image and image copies, blits, clears), and an image's bytes in the trace's
 * packed layout (format/sbt_vk.h) read and written through buffer<->image copies.
 *
 * Why each image gets memory of its own, in the general layout. The trace defines an image's
 * bytes in the packed layout, not where the capture's driver put them in its VkDeviceMemory,
 * so replay need not (and, with another driver's tiling and sizes, could not) bind it where the
 * capture did. Its own memory, zero-filled like replayed allocations, sidesteps alignment and
 * size differences between drivers. It stays in VK_IMAGE_LAYOUT_GENERAL from its bind on, which
 * every use allows: the captured layout transitions are recorded for the record only, and the
 * graph's edges (barriers between ops, replay_vk_cmd.c) order every access. Transfer usage is
 * added where the format allows it, so the engine can read an image's outputs and the trace's
 * host writes can reach it whatever the tiling.
 *
 * Packed bytes. A range of an image's packed bytes is covered by boxes of whole rows of texel
 * blocks (sbt_vk_image_cover), each copied to or from tightly packed buffer bytes. A buffer
 * offset must be a multiple of the texel block (4 for depth and stencil): boxes that would not
 * land aligned where they belong are copied to aligned scratch bytes first, then moved.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "format/sbt_vk.h"
#include "replay/vk/replay_vk_int.h"

#define ASPECT_DS (VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT)

static struct img *img_of(struct vkbe *b, uint64_t id, int *st, const char *what)
{
    struct img *im = sbt_map_getp(&b->imgs, id);
    if (!im)
        *st = replay__fail(SBT_EINVAL,
                           "%s: image %" PRIu64 " does not exist here (never created, or "
                           "destroyed)",
                           what, id);
    else if (!im->mem)
        *st = replay__fail(SBT_EINVAL, "%s: image %" PRIu64 " has no memory bound", what, id);
    return im && im->mem ? im : NULL;
}

static int need_transfer(const struct img *im, const char *what)
{
    if (im->transfer)
        return 0;
    const struct sbt_vk_format *f = sbt_vk_format(im->desc.format);
    return replay__fail(REPLAY_ENODEV,
                        "%s: image %" PRIu64 " has format %s, which this device cannot copy "
                        "with its tiling (no transfer format features)",
                        what, im->id, f ? f->name : "?");
}

/* ========================================================================================== */
/* Objects                                                                                    */
/* ========================================================================================== */

int vkr_image_create(struct vkbe *b, const struct sbt_payload_rec *r)
{
    struct sbt_vk_image desc;
    uint64_t size;
    int st = vkr_check_image(r, &desc, &size);
    if (st < 0)
        return st;
    uint64_t id = sbt_payload_arg(r, 0);
    if (sbt_map_getp(&b->imgs, id))
        return replay__fail(SBT_ECORRUPT, "image %" PRIu64 " is created twice", id);
    uint32_t flags = (uint32_t)sbt_payload_arg(r, 1), tiling = (uint32_t)sbt_payload_arg(r, 10);
    uint32_t usage = (uint32_t)sbt_payload_arg(r, 11);
    uint64_t nf = sbt_payload_arg(r, 16), nv = sbt_payload_arg(r, 17 + nf);
    VkFormat vf[64];
    if (nf > r->n_arg || nv > 64 || r->n_arg < 18 + nf + nv)
        nv = 0; /* an older or shorter record: no format list */
    for (uint64_t i = 0; i < nv; i++)
        vf[i] = (VkFormat)sbt_payload_arg(r, (uint32_t)(18 + nf + i));
    uint64_t stencil_usage = sbt_payload_arg(r, (uint32_t)(18 + nf + nv));
    VkFormatProperties fp;
    vkGetPhysicalDeviceFormatProperties(b->phys, (VkFormat)desc.format, &fp);
    VkFormatFeatureFlags ff = tiling ? fp.linearTilingFeatures : fp.optimalTilingFeatures;
    uint32_t xfer = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    int transfer =
        (ff & VK_FORMAT_FEATURE_TRANSFER_SRC_BIT) && (ff & VK_FORMAT_FEATURE_TRANSFER_DST_BIT);
    VkImageFormatProperties ifp;
    VkResult vr = VK_ERROR_FORMAT_NOT_SUPPORTED;
    for (int tries = 0; tries < 2 && vr != VK_SUCCESS; tries++) {
        if (tries)
            transfer = 0;
        vr = vkGetPhysicalDeviceImageFormatProperties(b->phys, (VkFormat)desc.format,
                                                      (VkImageType)desc.type, (VkImageTiling)tiling,
                                                      usage | (transfer ? xfer : 0), flags, &ifp);
    }
    const struct sbt_vk_format *f = sbt_vk_format(desc.format);
    if (vr != VK_SUCCESS)
        return replay__fail(REPLAY_ENODEV,
                            "image %" PRIu64 ": this device cannot create a %uD %s image of format "
                            "%s with usage 0x%x and flags 0x%x",
                            id, desc.type + 1, tiling ? "linear" : "optimal", f->name, usage,
                            flags);
    if (desc.extent[0] > ifp.maxExtent.width || desc.extent[1] > ifp.maxExtent.height ||
        desc.extent[2] > ifp.maxExtent.depth || desc.mips > ifp.maxMipLevels ||
        desc.layers > ifp.maxArrayLayers)
        return replay__fail(REPLAY_ENODEV,
                            "image %" PRIu64 ": %ux%ux%u, %u levels, %u layers of format %s; this "
                            "device allows %ux%ux%u, %u levels, %u layers",
                            id, desc.extent[0], desc.extent[1], desc.extent[2], desc.mips,
                            desc.layers, f->name, ifp.maxExtent.width, ifp.maxExtent.height,
                            ifp.maxExtent.depth, ifp.maxMipLevels, ifp.maxArrayLayers);
    VkImageStencilUsageCreateInfo su = {.sType = VK_STRUCTURE_TYPE_IMAGE_STENCIL_USAGE_CREATE_INFO,
                                        .stencilUsage = (VkImageUsageFlags)stencil_usage |
                                                        (transfer ? xfer : 0)};
    VkImageFormatListCreateInfo fl = {.sType = VK_STRUCTURE_TYPE_IMAGE_FORMAT_LIST_CREATE_INFO,
                                      .pNext = stencil_usage ? &su : NULL,
                                      .viewFormatCount = (uint32_t)nv,
                                      .pViewFormats = vf};
    VkImageCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                            .pNext = nv              ? (const void *)&fl
                                     : stencil_usage ? (const void *)&su
                                                     : NULL,
                            .flags = flags,
                            .imageType = (VkImageType)desc.type,
                            .format = (VkFormat)desc.format,
                            .extent = {desc.extent[0], desc.extent[1], desc.extent[2]},
                            .mipLevels = desc.mips,
                            .arrayLayers = desc.layers,
                            .samples = VK_SAMPLE_COUNT_1_BIT,
                            .tiling = (VkImageTiling)tiling,
                            .usage = usage | (transfer ? xfer : 0),
                            .sharingMode = b->n_families > 1 ? VK_SHARING_MODE_CONCURRENT
                                                             : VK_SHARING_MODE_EXCLUSIVE,
                            .queueFamilyIndexCount = b->n_families > 1 ? b->n_families : 0,
                            .pQueueFamilyIndices = b->families,
                            .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
    struct img *im = calloc(1, sizeof *im);
    if (!im)
        return replay__fail(SBT_ENOMEM, "out of memory");
    vr = vkCreateImage(b->dev, &ci, NULL, &im->image);
    if (vr != VK_SUCCESS) {
        free(im);
        return VKFAIL(vr, "vkCreateImage");
    }
    im->id = id;
    im->desc = desc;
    im->packed_size = size;
    im->aspects = sbt_vk_format_aspects(desc.format);
    im->flags = flags;
    im->linear = tiling == VK_IMAGE_TILING_LINEAR;
    im->transfer = transfer;
    if (sbt_map_putp(&b->imgs, id, im) < 0) {
        vkDestroyImage(b->dev, im->image, NULL);
        free(im);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    return 0;
}

/* The aspects a barrier or clear of the whole image names. */
static uint32_t barrier_aspects(const struct img *im)
{
    return im->aspects & ASPECT_DS ? im->aspects & ASPECT_DS : VK_IMAGE_ASPECT_COLOR_BIT;
}

/* BIND_IMAGE: memory of its own (the captured memory's property flags preferred), zeroed, the
 * image in the general layout. */
int vkr_image_bind(struct vkbe *b, const struct sbt_payload_rec *r, struct sbt_payload_dec *dec)
{
    (void)dec;
    int st = 0;
    struct img *im = sbt_map_getp(&b->imgs, sbt_payload_arg(r, 0));
    if (!im)
        return replay__fail(SBT_EINVAL, "vkBindImageMemory: image %" PRIu64 " does not exist",
                            sbt_payload_arg(r, 0));
    if (im->mem)
        return replay__fail(SBT_ECORRUPT, "image %" PRIu64 " is bound twice", im->id);
    struct mem *cm = sbt_map_getp(&b->mems, sbt_payload_arg(r, 1));
    uint32_t prefer = cm ? cm->flags & (VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
                         : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    VkMemoryRequirements mr;
    vkGetImageMemoryRequirements(b->dev, im->image, &mr);
    uint32_t t = vkr_find_type(b, mr.memoryTypeBits, 0, prefer);
    if (t == UINT32_MAX)
        return replay__fail(REPLAY_ENODEV, "image %" PRIu64 ": no memory type among 0x%x", im->id,
                            mr.memoryTypeBits);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = mr.size,
                               .memoryTypeIndex = t};
    VkDeviceMemory mem;
    VkResult vr = vkAllocateMemory(b->dev, &ai, NULL, &mem);
    if (vr != VK_SUCCESS)
        return replay__fail(REPLAY_EDEVICE,
                            "image %" PRIu64 ": %" PRIu64 " bytes: allocation failed (VkResult %d)",
                            im->id, (uint64_t)mr.size, (int)vr);
    uint32_t tf = b->memp.memoryTypes[t].propertyFlags;
    void *p = NULL;
    if ((tf & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
        vkMapMemory(b->dev, mem, 0, VK_WHOLE_SIZE, 0, &p) == VK_SUCCESS) {
        memset(p, 0, mr.size); /* as replayed allocations are: the capture's are fresh too */
        if (!(tf & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) {
            VkMappedMemoryRange rg = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                      .memory = mem,
                                      .size = VK_WHOLE_SIZE};
            vkFlushMappedMemoryRanges(b->dev, 1, &rg);
        }
        vkUnmapMemory(b->dev, mem);
    }
    vr = vkBindImageMemory(b->dev, im->image, mem, 0);
    if (vr != VK_SUCCESS) {
        vkFreeMemory(b->dev, mem, NULL);
        return VKFAIL(vr, "vkBindImageMemory");
    }
    im->mem = mem;
    VkCommandBuffer cb;
    if ((st = vkr_oneshot_begin(b, &cb)) < 0)
        return st;
    VkImageMemoryBarrier ib = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
                               .dstAccessMask =
                                   VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
                               .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
                               .newLayout = VK_IMAGE_LAYOUT_GENERAL,
                               .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                               .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                               .image = im->image,
                               .subresourceRange = {barrier_aspects(im), 0, VK_REMAINING_MIP_LEVELS,
                                                    0, VK_REMAINING_ARRAY_LAYERS}};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 0, NULL, 0, NULL, 1, &ib);
    /* an optimal tiling need not hold zero texels in zero bytes: clear where a clear can */
    const struct sbt_vk_format *f = sbt_vk_format(im->desc.format);
    if (im->transfer && !(tf & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && f && f->block[0] == 1 &&
        f->block[1] == 1 && !f->n_planes) {
        VkImageSubresourceRange all = {barrier_aspects(im), 0, VK_REMAINING_MIP_LEVELS, 0,
                                       VK_REMAINING_ARRAY_LAYERS};
        if (im->aspects & ASPECT_DS) {
            VkClearDepthStencilValue z = {0, 0};
            vkCmdClearDepthStencilImage(cb, im->image, VK_IMAGE_LAYOUT_GENERAL, &z, 1, &all);
        } else {
            VkClearColorValue z = {{0, 0, 0, 0}};
            vkCmdClearColorImage(cb, im->image, VK_IMAGE_LAYOUT_GENERAL, &z, 1, &all);
        }
    }
    return vkr_oneshot_end(b, cb);
}

int vkr_image_view_make(struct vkbe *b, const struct sbt_payload_rec *r,
                        struct sbt_payload_dec *dec)
{
    (void)dec;
    int st = 0;
    uint64_t id = sbt_payload_arg(r, 0);
    struct img *im = img_of(b, sbt_payload_arg(r, 1), &st, "vkCreateImageView");
    if (!im)
        return st;
    if ((st = vkr_check_image_view(r, &im->desc, im->flags)) < 0)
        return st;
    if (sbt_map_getp(&b->iviews, id))
        return replay__fail(SBT_ECORRUPT, "image view %" PRIu64 " is created twice", id);
    VkImageViewUsageCreateInfo vu = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_USAGE_CREATE_INFO,
                                     .usage = (VkImageUsageFlags)sbt_payload_arg(r, 14)};
    VkImageViewCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
        .pNext = vu.usage ? &vu : NULL,
        .flags = (VkImageViewCreateFlags)sbt_payload_arg(r, 2),
        .image = im->image,
        .viewType = (VkImageViewType)sbt_payload_arg(r, 3),
        .format = (VkFormat)sbt_payload_arg(r, 4),
        .components = {(VkComponentSwizzle)sbt_payload_arg(r, 5),
                       (VkComponentSwizzle)sbt_payload_arg(r, 6),
                       (VkComponentSwizzle)sbt_payload_arg(r, 7),
                       (VkComponentSwizzle)sbt_payload_arg(r, 8)},
        .subresourceRange = {(VkImageAspectFlags)sbt_payload_arg(r, 9),
                             (uint32_t)sbt_payload_arg(r, 10), (uint32_t)sbt_payload_arg(r, 11),
                             (uint32_t)sbt_payload_arg(r, 12), (uint32_t)sbt_payload_arg(r, 13)}};
    struct iview *v = calloc(1, sizeof *v);
    if (!v)
        return replay__fail(SBT_ENOMEM, "out of memory");
    VkResult vr = vkCreateImageView(b->dev, &ci, NULL, &v->view);
    if (vr != VK_SUCCESS) {
        free(v);
        return replay__fail(REPLAY_ENODEV,
                            "image view %" PRIu64 " of image %" PRIu64
                            ": vkCreateImageView failed (VkResult %d)",
                            id, im->id, (int)vr);
    }
    v->image = im->id;
    if (sbt_map_putp(&b->iviews, id, v) < 0) {
        vkDestroyImageView(b->dev, v->view, NULL);
        free(v);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    return 0;
}

int vkr_sampler_make(struct vkbe *b, const struct sbt_payload_rec *r, struct sbt_payload_dec *dec)
{
    (void)dec;
    uint64_t id = sbt_payload_arg(r, 0);
    int st = vkr_check_sampler(r, b->props.limits.maxSamplerAnisotropy);
    if (st < 0)
        return st;
    if (sbt_map_getp(&b->samplers, id))
        return replay__fail(SBT_ECORRUPT, "sampler %" PRIu64 " is created twice", id);
    VkSamplerCustomBorderColorCreateInfoEXT bc = {
        .sType = VK_STRUCTURE_TYPE_SAMPLER_CUSTOM_BORDER_COLOR_CREATE_INFO_EXT,
        .format = (VkFormat)sbt_payload_arg(r, 18)};
    for (int i = 0; i < 4; i++)
        bc.customBorderColor.uint32[i] = (uint32_t)sbt_payload_arg(r, 19 + (uint32_t)i);
    uint32_t border = (uint32_t)sbt_payload_arg(r, 15);
    int custom =
        border == VK_BORDER_COLOR_FLOAT_CUSTOM_EXT || border == VK_BORDER_COLOR_INT_CUSTOM_EXT;
    VkSamplerReductionModeCreateInfo rm = {
        .sType = VK_STRUCTURE_TYPE_SAMPLER_REDUCTION_MODE_CREATE_INFO,
        .pNext = custom ? &bc : NULL,
        .reductionMode = (VkSamplerReductionMode)sbt_payload_arg(r, 17)};
    VkSamplerCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
                              .pNext = rm.reductionMode ? (const void *)&rm
                                       : custom         ? (const void *)&bc
                                                        : NULL,
                              .flags = (VkSamplerCreateFlags)sbt_payload_arg(r, 1),
                              .magFilter = (VkFilter)sbt_payload_arg(r, 2),
                              .minFilter = (VkFilter)sbt_payload_arg(r, 3),
                              .mipmapMode = (VkSamplerMipmapMode)sbt_payload_arg(r, 4),
                              .addressModeU = (VkSamplerAddressMode)sbt_payload_arg(r, 5),
                              .addressModeV = (VkSamplerAddressMode)sbt_payload_arg(r, 6),
                              .addressModeW = (VkSamplerAddressMode)sbt_payload_arg(r, 7),
                              .mipLodBias = vkr_float_of(sbt_payload_arg(r, 8)),
                              .anisotropyEnable = (VkBool32)sbt_payload_arg(r, 9),
                              .maxAnisotropy = vkr_float_of(sbt_payload_arg(r, 10)),
                              .compareEnable = (VkBool32)sbt_payload_arg(r, 11),
                              .compareOp = (VkCompareOp)sbt_payload_arg(r, 12),
                              .minLod = vkr_float_of(sbt_payload_arg(r, 13)),
                              .maxLod = vkr_float_of(sbt_payload_arg(r, 14)),
                              .borderColor = (VkBorderColor)border,
                              .unnormalizedCoordinates = (VkBool32)sbt_payload_arg(r, 16)};
    VkSampler *s = calloc(1, sizeof *s);
    if (!s)
        return replay__fail(SBT_ENOMEM, "out of memory");
    VkResult vr = vkCreateSampler(b->dev, &ci, NULL, s);
    if (vr != VK_SUCCESS) {
        free(s);
        return replay__fail(REPLAY_ENODEV,
                            "sampler %" PRIu64 ": vkCreateSampler failed (VkResult %d)", id,
                            (int)vr);
    }
    if (sbt_map_putp(&b->samplers, id, s) < 0) {
        vkDestroySampler(b->dev, *s, NULL);
        free(s);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    return 0;
}

/* Ops using them may still be queued: destroyed at the next drain. */
int vkr_iview_free(struct vkbe *b, uint64_t id)
{
    struct iview *v = sbt_map_getp(&b->iviews, id);
    if (!v)
        return 0;
    sbt_map_del(&b->iviews, id);
    if (grow((void **)&b->dead_iviews, &b->cap_dead_iviews, b->n_dead_iviews + 1,
             sizeof *b->dead_iviews) < 0) {
        vkDestroyImageView(b->dev, v->view, NULL);
        free(v);
        return SBT_ENOMEM;
    }
    b->dead_iviews[b->n_dead_iviews++] = v;
    return 0;
}

int vkr_sampler_free(struct vkbe *b, uint64_t id)
{
    VkSampler *s = sbt_map_getp(&b->samplers, id);
    if (!s)
        return 0;
    sbt_map_del(&b->samplers, id);
    int st = 0;
    if (grow((void **)&b->dead_samplers, &b->cap_dead_samplers, b->n_dead_samplers + 1,
             sizeof *b->dead_samplers) < 0)
        st = SBT_ENOMEM;
    else
        b->dead_samplers[b->n_dead_samplers++] = *s;
    free(s);
    return st;
}

void vkr_image_destroy(struct vkbe *b, struct img *im)
{
    vkDestroyImage(b->dev, im->image, NULL);
    if (im->mem)
        vkFreeMemory(b->dev, im->mem, NULL);
    free(im);
}

void vkr_image_free(struct vkbe *b, struct img *im)
{
    sbt_map_del(&b->imgs, im->id);
    if (grow((void **)&b->dead_imgs, &b->cap_dead_imgs, b->n_dead_imgs + 1, sizeof *b->dead_imgs) <
        0) {
        vkr_drain(b); /* out of memory for the list: destroy it once nothing uses it */
        vkr_image_destroy(b, im);
        return;
    }
    b->dead_imgs[b->n_dead_imgs++] = im;
}

void vkr_dead_images_free(struct vkbe *b)
{
    for (uint32_t i = 0; i < b->n_dead_iviews; i++) {
        vkDestroyImageView(b->dev, b->dead_iviews[i]->view, NULL);
        free(b->dead_iviews[i]);
    }
    b->n_dead_iviews = 0;
    for (uint32_t i = 0; i < b->n_dead_samplers; i++)
        vkDestroySampler(b->dev, b->dead_samplers[i], NULL);
    b->n_dead_samplers = 0;
    for (uint32_t i = 0; i < b->n_dead_imgs; i++)
        vkr_image_destroy(b, b->dead_imgs[i]);
    b->n_dead_imgs = 0;
}

void vkr_images_reset(struct vkbe *b)
{
    struct iview *v;
    for (uint64_t pos = 0; (v = sbt_map_nextp(&b->iviews, &pos));) {
        vkDestroyImageView(b->dev, v->view, NULL);
        free(v);
    }
    VkSampler *s;
    for (uint64_t pos = 0; (s = sbt_map_nextp(&b->samplers, &pos));) {
        vkDestroySampler(b->dev, *s, NULL);
        free(s);
    }
    struct img *im;
    for (uint64_t pos = 0; (im = sbt_map_nextp(&b->imgs, &pos));)
        vkr_image_destroy(b, im);
    vkr_dead_images_free(b);
    sbt_map_free(&b->iviews);
    sbt_map_free(&b->samplers);
    sbt_map_free(&b->imgs);
}

/* ========================================================================================== */
/* Packed bytes                                                                               */
/* ========================================================================================== */

struct box_at {
    struct sbt_vk_box box;
    uint64_t off, len; /* its packed bytes */
};
struct boxes {
    struct box_at *v;
    uint32_t n, cap;
};

static int add_box(void *ctx, const struct sbt_vk_box *bx, uint64_t off, uint64_t len)
{
    struct boxes *l = ctx;
    if (grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) < 0)
        return SBT_ENOMEM;
    l->v[l->n++] = (struct box_at){*bx, off, len};
    return 0;
}

static int cover(const struct img *im, uint64_t off, uint64_t len, struct boxes *l)
{
    memset(l, 0, sizeof *l);
    int st = sbt_vk_image_cover(&im->desc, off, len, add_box, l);
    if (st == SBT_ECORRUPT)
        st = replay__fail(SBT_ECORRUPT, "image %" PRIu64 ": %s", im->id, sbt_errmsg());
    if (st < 0)
        free(l->v);
    return st;
}

static uint64_t lcm(uint64_t a, uint64_t b)
{
    uint64_t x = a, y = b;
    while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
    }
    return a / x * b;
}

/* The alignment a buffer offset of a copy of box bx needs (with 16 for the staging's own). */
static uint64_t box_align(const struct img *im, const struct sbt_vk_box *bx)
{
    struct sbt_vk_subres s;
    uint64_t a = 4;
    if (!(bx->aspect & ASPECT_DS) && sbt_vk_image_subres(&im->desc, bx->aspect, bx->mip, &s) == 0)
        a = s.block_bytes;
    return lcm(a, 16);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static VkBufferImageCopy box_copy(const struct img *im, const struct sbt_vk_box *bx,
                                  uint64_t buf_off)
{
    VkBufferImageCopy c = {
        .bufferOffset = buf_off,
        .imageSubresource = {bx->aspect, bx->mip, bx->layer, bx->n_layers},
        .imageOffset = {(int32_t)bx->off[0], (int32_t)bx->off[1], (int32_t)bx->off[2]},
        .imageExtent = {bx->ext[0], bx->ext[1], bx->ext[2]}};
    if (im->desc.type == VK_IMAGE_TYPE_3D)
        c.imageSubresource.layerCount = 1;
    return c;
}

/* Staging layout of the boxes for a host read or write: each at an aligned offset. */
static uint64_t place_boxes(const struct img *im, const struct boxes *l, uint64_t *at)
{
    uint64_t pos = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        pos = align_up(pos, box_align(im, &l->v[i].box));
        at[i] = pos;
        pos += l->v[i].len;
    }
    return pos;
}

/* Copies boxes l of im into staging (write 0) or from it (write 1), through a one-shot. */
static int host_copy(struct vkbe *b, struct img *im, const struct boxes *l, uint8_t *bytes,
                     int write, uint64_t bytes_off)
{
    int st = need_transfer(im, write ? "host write" : "host read");
    if (st < 0)
        return st;
    uint64_t *at = malloc((l->n ? l->n : 1) * sizeof *at);
    if (!at)
        return replay__fail(SBT_ENOMEM, "out of memory");
    uint64_t need = place_boxes(im, l, at);
    struct staging *s = vkr_staging_get(b, need ? need : 1);
    if (!s) {
        free(at);
        return replay__fail(REPLAY_EDEVICE, "no staging memory for %" PRIu64 " bytes", need);
    }
    VkMappedMemoryRange sr = {
        .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = s->mem, .size = VK_WHOLE_SIZE};
    if (write) {
        for (uint32_t i = 0; i < l->n; i++)
            memcpy(s->map + at[i], bytes + (l->v[i].off - bytes_off), l->v[i].len);
        if (!s->coherent)
            vkFlushMappedMemoryRanges(b->dev, 1, &sr);
    }
    VkCommandBuffer cb;
    if ((st = vkr_oneshot_begin(b, &cb)) == 0) {
        for (uint32_t i = 0; i < l->n; i++) {
            VkBufferImageCopy c = box_copy(im, &l->v[i].box, at[i]);
            if (write)
                vkCmdCopyBufferToImage(cb, s->buf, im->image, VK_IMAGE_LAYOUT_GENERAL, 1, &c);
            else
                vkCmdCopyImageToBuffer(cb, im->image, VK_IMAGE_LAYOUT_GENERAL, s->buf, 1, &c);
        }
        st = vkr_oneshot_end(b, cb);
    }
    if (st == 0 && !write) {
        if (!s->coherent)
            vkInvalidateMappedMemoryRanges(b->dev, 1, &sr);
        for (uint32_t i = 0; i < l->n; i++)
            memcpy(bytes + (l->v[i].off - bytes_off), s->map + at[i], l->v[i].len);
    }
    s->next = b->free_staging;
    b->free_staging = s;
    free(at);
    return st;
}

int vkr_img_read(struct vkbe *b, struct img *im, uint64_t off, void *dst, uint64_t len)
{
    struct boxes l;
    int st = cover(im, off, len, &l);
    if (st < 0 || !l.n) {
        free(l.v);
        return st;
    }
    uint64_t lo = l.v[0].off, hi = l.v[l.n - 1].off + l.v[l.n - 1].len;
    uint8_t *tmp = lo == off && hi == off + len ? dst : malloc(hi - lo);
    if (!tmp) {
        free(l.v);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    st = host_copy(b, im, &l, tmp, 0, lo);
    if (st == 0 && tmp != dst)
        memcpy(dst, tmp + (off - lo), len);
    if (tmp != dst)
        free(tmp);
    free(l.v);
    return st;
}

int vkr_img_write(struct vkbe *b, struct img *im, uint64_t off, const void *src, uint64_t len)
{
    struct boxes l;
    int st = cover(im, off, len, &l);
    if (st < 0 || !l.n) {
        free(l.v);
        return st;
    }
    uint64_t lo = l.v[0].off, hi = l.v[l.n - 1].off + l.v[l.n - 1].len;
    uint8_t *tmp = (uint8_t *)src;
    if (lo != off || hi != off + len) { /* part of a row: what the rest holds goes back */
        tmp = malloc(hi - lo);
        if (!tmp) {
            free(l.v);
            return replay__fail(SBT_ENOMEM, "out of memory");
        }
        st = host_copy(b, im, &l, tmp, 0, lo);
        memcpy(tmp + (off - lo), src, len);
    }
    if (st == 0)
        st = host_copy(b, im, &l, tmp, 1, lo);
    if (tmp != src)
        free(tmp);
    free(l.v);
    return st;
}

/* Whether every box lands aligned when the first lands at an offset aligned to all of them
 * (*align: that alignment, a few hundred bytes at most). */
static int boxes_aligned(const struct img *im, const struct boxes *l, uint64_t *align)
{
    uint64_t a = 16;
    int ok = 1;
    for (uint32_t i = 0; i < l->n; i++) {
        uint64_t ba = box_align(im, &l->v[i].box);
        a = lcm(a, ba);
        if ((l->v[i].off - l->v[0].off) % ba)
            ok = 0;
    }
    *align = a;
    return ok;
}

uint64_t vkr_img_copy_need(const struct img *im, uint64_t off, uint64_t len)
{
    struct boxes l;
    if (cover(im, off, len, &l) < 0 || !l.n) {
        free(l.v);
        return 0;
    }
    uint64_t a, need = l.v[l.n - 1].off + l.v[l.n - 1].len - l.v[0].off;
    if (!boxes_aligned(im, &l, &a))
        for (uint32_t i = 0; i < l.n; i++)
            need += l.v[i].len + a;
    free(l.v);
    return need + a;
}

int vkr_img_copy_out(struct vkbe *b, VkCommandBuffer cb, struct img *im, uint64_t off, uint64_t len,
                     struct staging *s, uint64_t *at)
{
    (void)b;
    int st = need_transfer(im, "read-back");
    if (st < 0)
        return st;
    struct boxes l;
    if ((st = cover(im, off, len, &l)) < 0 || !l.n) {
        free(l.v);
        *at = s->used;
        return st;
    }
    uint64_t a, lo = l.v[0].off, hi = l.v[l.n - 1].off + l.v[l.n - 1].len;
    int direct = boxes_aligned(im, &l, &a);
    uint64_t base = align_up(s->used, a);
    if (direct) {
        for (uint32_t i = 0; i < l.n; i++) {
            VkBufferImageCopy c = box_copy(im, &l.v[i].box, base + (l.v[i].off - lo));
            vkCmdCopyImageToBuffer(cb, im->image, VK_IMAGE_LAYOUT_GENERAL, s->buf, 1, &c);
        }
        s->used = base + (hi - lo);
    } else {
        /* each box to aligned scratch after the packed bytes, then moved into place */
        uint64_t scratch = align_up(base + (hi - lo), a), pos = scratch;
        for (uint32_t i = 0; i < l.n; i++) {
            pos = align_up(pos, a);
            VkBufferImageCopy c = box_copy(im, &l.v[i].box, pos);
            vkCmdCopyImageToBuffer(cb, im->image, VK_IMAGE_LAYOUT_GENERAL, s->buf, 1, &c);
            pos += l.v[i].len;
        }
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                             1, &mb, 0, NULL, 0, NULL);
        pos = scratch;
        for (uint32_t i = 0; i < l.n; i++) {
            pos = align_up(pos, a);
            VkBufferCopy c = {pos, base + (l.v[i].off - lo), l.v[i].len};
            vkCmdCopyBuffer(cb, s->buf, s->buf, 1, &c);
            pos += l.v[i].len;
        }
        s->used = pos;
    }
    *at = base + (off - lo);
    free(l.v);
    return 0;
}

/* ========================================================================================== */
/* Image ops and descriptors                                                                  */
/* ========================================================================================== */

static VkImageSubresourceLayers subres(const struct img *im, const uint64_t *g)
{
    VkImageSubresourceLayers s = {(VkImageAspectFlags)g[0], (uint32_t)g[1], (uint32_t)g[2],
                                  (uint32_t)g[3]};
    if (g[3] == VK_REMAINING_ARRAY_LAYERS) /* checked: base < layers */
        s.layerCount = im->desc.layers - s.baseArrayLayer;
    return s;
}

static VkOffset3D off3(const uint64_t *g)
{
    return (VkOffset3D){(int32_t)(uint32_t)g[0], (int32_t)(uint32_t)g[1], (int32_t)(uint32_t)g[2]};
}

/* The format features this device gives im's format with its tiling. */
static VkFormatFeatureFlags features(struct vkbe *b, const struct img *im, int linear)
{
    VkFormatProperties fp;
    vkGetPhysicalDeviceFormatProperties(b->phys, (VkFormat)im->desc.format, &fp);
    return linear ? fp.linearTilingFeatures : fp.optimalTilingFeatures;
}

static int blit(struct vkbe *b, VkCommandBuffer cb, const struct sbt_payload_rec *d,
                struct img *src, struct img *dst)
{
    uint32_t n;
    int st = vkr_check_blit(d, &src->desc, &dst->desc, &n);
    if (st < 0)
        return st;
    VkFormatFeatureFlags sf = features(b, src, src->linear);
    VkFormatFeatureFlags df = features(b, dst, dst->linear);
    VkFilter filter = (VkFilter)sbt_payload_arg(d, 4);
    if (!(sf & VK_FORMAT_FEATURE_BLIT_SRC_BIT) || !(df & VK_FORMAT_FEATURE_BLIT_DST_BIT) ||
        (filter == VK_FILTER_LINEAR && !(sf & VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT)))
        return replay__fail(REPLAY_ENODEV,
                            "blit from image %" PRIu64 " to image %" PRIu64
                            ": this device lacks the blit (or linear filter) format features",
                            src->id, dst->id);
    VkImageBlit *r = malloc((n ? n : 1) * sizeof *r);
    if (!r)
        return replay__fail(SBT_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t *g = d->arg + 6 + 20 * i;
        r[i] = (VkImageBlit){.srcSubresource = subres(src, g),
                             .srcOffsets = {off3(g + 4), off3(g + 7)},
                             .dstSubresource = subres(dst, g + 10),
                             .dstOffsets = {off3(g + 14), off3(g + 17)}};
    }
    if (n)
        vkCmdBlitImage(cb, src->image, VK_IMAGE_LAYOUT_GENERAL, dst->image, VK_IMAGE_LAYOUT_GENERAL,
                       n, r, filter);
    free(r);
    return 0;
}

int vkr_rec_image_op(struct vkbe *b, VkCommandBuffer cb, const struct sbt_payload_rec *d)
{
    int st = 0;
    uint32_t n = 0;
    switch (d->call) {
    case SBT_VK_COPY_BUFFER_TO_IMAGE:
    case SBT_VK_COPY_IMAGE_TO_BUFFER: {
        int to_img = d->call == SBT_VK_COPY_BUFFER_TO_IMAGE;
        const char *what = to_img ? "vkCmdCopyBufferToImage" : "vkCmdCopyImageToBuffer";
        struct buf *bf = vkr_buf_of(b, sbt_payload_arg(d, to_img ? 0 : 2), &st, what);
        struct img *im = bf ? img_of(b, sbt_payload_arg(d, to_img ? 1 : 0), &st, what) : NULL;
        if (!im || (st = need_transfer(im, what)) < 0 ||
            (st = vkr_check_buf_img_copy(d, bf->size, &im->desc, &n)) < 0)
            return st;
        VkBufferImageCopy *r = malloc((n ? n : 1) * sizeof *r);
        if (!r)
            return replay__fail(SBT_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < n; i++) {
            const uint64_t *g = d->arg + 4 + 13 * i;
            r[i] = (VkBufferImageCopy){
                g[0],           (uint32_t)g[1],
                (uint32_t)g[2], subres(im, g + 3),
                off3(g + 7),    {(uint32_t)g[10], (uint32_t)g[11], (uint32_t)g[12]}};
            if (im->desc.type == VK_IMAGE_TYPE_3D)
                r[i].imageSubresource.layerCount = 1;
        }
        if (n && to_img)
            vkCmdCopyBufferToImage(cb, bf->buf, im->image, VK_IMAGE_LAYOUT_GENERAL, n, r);
        else if (n)
            vkCmdCopyImageToBuffer(cb, im->image, VK_IMAGE_LAYOUT_GENERAL, bf->buf, n, r);
        free(r);
        return 0;
    }
    case SBT_VK_COPY_IMAGE:
    case SBT_VK_BLIT_IMAGE: {
        const char *what = d->call == SBT_VK_COPY_IMAGE ? "vkCmdCopyImage" : "vkCmdBlitImage";
        struct img *src = img_of(b, sbt_payload_arg(d, 0), &st, what);
        struct img *dst = src ? img_of(b, sbt_payload_arg(d, 2), &st, what) : NULL;
        if (!dst || (st = need_transfer(src, what)) < 0 || (st = need_transfer(dst, what)) < 0)
            return st;
        if (d->call == SBT_VK_BLIT_IMAGE)
            return blit(b, cb, d, src, dst);
        if ((st = vkr_check_img_copy(d, &src->desc, &dst->desc, &n)) < 0)
            return st;
        VkImageCopy *r = malloc((n ? n : 1) * sizeof *r);
        if (!r)
            return replay__fail(SBT_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < n; i++) {
            const uint64_t *g = d->arg + 5 + 17 * i;
            r[i] = (VkImageCopy){subres(src, g),
                                 off3(g + 4),
                                 subres(dst, g + 7),
                                 off3(g + 11),
                                 {(uint32_t)g[14], (uint32_t)g[15], (uint32_t)g[16]}};
        }
        if (n)
            vkCmdCopyImage(cb, src->image, VK_IMAGE_LAYOUT_GENERAL, dst->image,
                           VK_IMAGE_LAYOUT_GENERAL, n, r);
        free(r);
        return 0;
    }
    case SBT_VK_CLEAR_IMAGE: {
        struct img *im = img_of(b, sbt_payload_arg(d, 0), &st, "vkCmdClear*Image");
        if (!im || (st = need_transfer(im, "vkCmdClear*Image")) < 0 ||
            (st = vkr_check_clear(d, &im->desc, &n)) < 0)
            return st;
        VkImageSubresourceRange *r = malloc((n ? n : 1) * sizeof *r);
        if (!r)
            return replay__fail(SBT_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < n; i++) {
            const uint64_t *g = d->arg + 8 + 5 * i;
            r[i] = (VkImageSubresourceRange){(VkImageAspectFlags)g[0], (uint32_t)g[1],
                                             (uint32_t)g[2], (uint32_t)g[3], (uint32_t)g[4]};
        }
        if (sbt_payload_arg(d, 2)) {
            VkClearDepthStencilValue v = {vkr_float_of(sbt_payload_arg(d, 3)),
                                          (uint32_t)sbt_payload_arg(d, 4)};
            if (!(v.depth >= 0.0f && v.depth <= 1.0f)) {
                free(r);
                return replay__fail(SBT_ECORRUPT, "depth clear value %g (0..1)", (double)v.depth);
            }
            if (n)
                vkCmdClearDepthStencilImage(cb, im->image, VK_IMAGE_LAYOUT_GENERAL, &v, n, r);
        } else {
            VkClearColorValue v;
            for (int k = 0; k < 4; k++)
                v.uint32[k] = (uint32_t)sbt_payload_arg(d, 3 + (uint32_t)k);
            if (n)
                vkCmdClearColorImage(cb, im->image, VK_IMAGE_LAYOUT_GENERAL, &v, n, r);
        }
        free(r);
        return 0;
    }
    default:
        return replay__fail(SBT_EINVAL, "not an image op (record %u)", d->call);
    }
}

int vkr_image_binding(struct vkbe *b, const struct sbt_payload_rec *r, VkDescriptorImageInfo *out)
{
    int st = vkr_check_image_binding(r);
    if (st < 0)
        return st;
    memset(out, 0, sizeof *out);
    out->imageLayout = VK_IMAGE_LAYOUT_GENERAL;
    if (sbt_payload_arg(r, 4)) {
        struct iview *v = sbt_map_getp(&b->iviews, sbt_payload_arg(r, 4));
        struct img *im = v ? sbt_map_getp(&b->imgs, v->image) : NULL;
        if (!v || !im || !im->mem)
            return replay__fail(SBT_EINVAL,
                                "image binding of set %" PRIu64 " binding %" PRIu64
                                ": image view %" PRIu64 " %s",
                                sbt_payload_arg(r, 0), sbt_payload_arg(r, 1), sbt_payload_arg(r, 4),
                                !v ? "does not exist here" : "has no image with memory");
        out->imageView = v->view;
    }
    if (sbt_payload_arg(r, 6)) {
        VkSampler *s = sbt_map_getp(&b->samplers, sbt_payload_arg(r, 6));
        if (!s)
            return replay__fail(SBT_EINVAL,
                                "image binding of set %" PRIu64 " binding %" PRIu64
                                ": sampler %" PRIu64 " does not exist here",
                                sbt_payload_arg(r, 0), sbt_payload_arg(r, 1),
                                sbt_payload_arg(r, 6));
        out->sampler = *s;
    }
    return 0;
}
