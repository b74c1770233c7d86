/*
 * capture/vk/cap_vk_images.c — images, image views and samplers: what compute programs use
 * through storage and sampled images and buffer<->image copies (issue 13).
 *
 * An image is a trace resource of its own: vkCreateImage is an ALLOC op (CREATE_IMAGE, the
 * packed size as its bytes) and vkDestroyImage a FREE op, and every access to an image —
 * copies, clears, descriptors of dispatches, host writes and reads — names bytes of its packed
 * layout (format/sbt_vk.h, FORMAT.md "Images"), never the driver's tiling, so the dependency
 * graph, slices, digests and dumps compare across drivers. Binding memory (BIND_IMAGE), views
 * (CREATE_IMAGE_VIEW) and samplers (CREATE_SAMPLER) are MARKER ops replay recreates them from.
 *
 * Memory. Replay gives each image memory of its own, so where an image lies in its
 * VkDeviceMemory matters only here: a linear image bound to host-visible memory has its
 * subresource layouts read at bind time (vkGetImageSubresourceLayout), and what the program
 * writes into it through a mapping, or reads after device work, becomes a HOST_WRITE or
 * HOST_READ of its packed rows (cap_img_host_op, called where cap_vk_mapped.c makes host ops).
 * An image bound over bytes a buffer or another image uses (aliasing) is counted unmodelled:
 * the trace's resources could not say which writes reach which.
 *
 * Unmodelled (counted, the trace incomplete): sparse, disjoint and multisampled images,
 * tilings other than optimal and linear, image, view and sampler creation structures other
 * than format lists, stencil usage, view usage, sampler reduction modes and custom border
 * colors (Y'CbCr conversions among them).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

#define ASPECT_COLOR VK_IMAGE_ASPECT_COLOR_BIT
#define ASPECT_PLANES \
    (VK_IMAGE_ASPECT_PLANE_0_BIT | VK_IMAGE_ASPECT_PLANE_1_BIT | VK_IMAGE_ASPECT_PLANE_2_BIT)

int cap_is_image_desc(uint32_t type)
{
    return type == VK_DESCRIPTOR_TYPE_SAMPLER ||
           type == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER ||
           type == VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE || type == VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
}

/* ========================================================================================== */
/* Images                                                                                     */
/* ========================================================================================== */

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateImage(VkDevice device, const VkImageCreateInfo *ci,
                                               const VkAllocationCallbacks *alloc, VkImage *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.CreateImage(device, ci, alloc, out), "vkCreateImage");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    const VkImageFormatListCreateInfo *fl = NULL;
    uint64_t stencil_usage = 0;
    int other = 0;
    for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_IMAGE_FORMAT_LIST_CREATE_INFO)
            fl = (const VkImageFormatListCreateInfo *)s;
        else if (s->sType == VK_STRUCTURE_TYPE_IMAGE_STENCIL_USAGE_CREATE_INFO)
            stencil_usage = ((const VkImageStencilUsageCreateInfo *)s)->stencilUsage;
        else
            other = 1;
    }
    const char *why = NULL;
    if (other)
        why = "vkCreateImage (a creation structure the capture does not record)";
    else if (ci->flags &
             (VK_IMAGE_CREATE_SPARSE_BINDING_BIT | VK_IMAGE_CREATE_SPARSE_RESIDENCY_BIT |
              VK_IMAGE_CREATE_SPARSE_ALIASED_BIT))
        why = "vkCreateImage (sparse image)";
    else if (ci->flags & VK_IMAGE_CREATE_DISJOINT_BIT)
        why = "vkCreateImage (disjoint planes)";
    else if (ci->samples != VK_SAMPLE_COUNT_1_BIT)
        why = "vkCreateImage (multisampled image)";
    else if (ci->tiling != VK_IMAGE_TILING_OPTIMAL && ci->tiling != VK_IMAGE_TILING_LINEAR)
        why = "vkCreateImage (tiling other than optimal or linear)";
    struct sbt_vk_image desc = {ci->format,
                                ci->imageType,
                                {ci->extent.width, ci->extent.height, ci->extent.depth},
                                ci->mipLevels,
                                ci->arrayLayers};
    uint64_t packed = 0;
    if (!why && sbt_vk_image_check(&desc, &packed) < 0)
        why = "vkCreateImage (a format or extent the capture cannot lay out)";
    if (why)
        cap_unmodelled(d, why, SBT_UNMODELLED_AFFECTS);
    pthread_mutex_lock(&cap.mu);
    struct cap_image *im =
        cap_obj_new(sizeof *im, CAP_T_IMAGE, VK_OBJECT_TYPE_IMAGE, CAP_H(*out), d);
    if (im) {
        im->desc = desc;
        im->packed_size = why ? 0 : packed;
        im->tiling = ci->tiling;
        struct sbt_payload_enc enc = {0};
        sbt_payload_enc_begin(&enc, SBT_VK_CREATE_IMAGE);
        uint64_t a[] = {im->o.id,        ci->flags,         ci->imageType,   ci->format,
                        desc.extent[0],  desc.extent[1],    desc.extent[2],  ci->mipLevels,
                        ci->arrayLayers, ci->samples,       ci->tiling,      ci->usage,
                        ci->sharingMode, ci->initialLayout, im->packed_size, d->id};
        for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
            sbt_payload_enc_arg(&enc, a[i]);
        uint32_t nf = ci->sharingMode == VK_SHARING_MODE_CONCURRENT && ci->pQueueFamilyIndices
                          ? ci->queueFamilyIndexCount
                          : 0;
        sbt_payload_enc_arg(&enc, nf);
        for (uint32_t i = 0; i < nf; i++)
            sbt_payload_enc_arg(&enc, ci->pQueueFamilyIndices[i]);
        uint32_t nv = fl && fl->pViewFormats ? fl->viewFormatCount : 0;
        sbt_payload_enc_arg(&enc, nv);
        for (uint32_t i = 0; i < nv; i++)
            sbt_payload_enc_arg(&enc, fl->pViewFormats[i]);
        sbt_payload_enc_arg(&enc, stencil_usage);
        sbt_payload_enc_end(&enc, NULL, 0);
        struct cap_ev *e = cap_op_ev(d, SBT_OP_ALLOC, "vkCreateImage", &enc, t0);
        if (e) {
            e->op.resource = im->o.id;
            e->op.bytes = im->packed_size;
            e->op.subkind = SBT_RES_DEVICE;
            e->op.flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES | (why ? SBT_OPF_UNSUPPORTED : 0);
        }
        cap_emit(e);
        sbt_payload_enc_free(&enc);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

/* Takes im off its memory's list. cap.mu held; takes the memory's m->mu (its host writes and
 * reads look at the list under it, cap_vk_mapped.c). */
static void unbind(struct cap_image *im)
{
    struct cap_mem *m = im->mem;
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    for (uint32_t i = 0; i < m->n_img; i++)
        if (m->img[i] == im) {
            m->img[i] = m->img[--m->n_img];
            break;
        }
    im->mem = NULL;
    free(im->lay);
    im->lay = NULL;
    im->n_lay = 0;
    pthread_mutex_unlock(&m->mu);
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyImage(VkDevice device, VkImage h,
                                            const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (h && CAP_ON()) {
        uint64_t t0 = cap_now();
        pthread_mutex_lock(&cap.mu);
        struct cap_image *im = cap_obj_del(CAP_H(h), CAP_T_IMAGE);
        if (im) {
            unbind(im);
            struct sbt_payload_enc enc = {0};
            sbt_payload_put(&enc, SBT_VK_DESTROY, (uint64_t[]){VK_OBJECT_TYPE_IMAGE, im->o.id}, 2,
                            NULL, 0);
            struct cap_ev *e = cap_op_ev(d, SBT_OP_FREE, "vkDestroyImage", &enc, t0);
            if (e) {
                e->op.resource = im->o.id;
                e->op.flags = SBT_OPF_RESOURCE;
            }
            cap_emit(e);
            sbt_payload_enc_free(&enc);
            free(im->lay);
            free(im);
        }
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyImage(device, h, alloc);
}

/* Where each (aspect, level) of a linear image lies in its memory, for host writes and reads
 * through a mapping (*n entries; NULL when none). cap.mu held. */
static struct cap_img_lay *read_layouts(struct cap_dev *d, VkImage h, const struct cap_image *im,
                                        uint32_t *n_lay)
{
    uint32_t aspects = sbt_vk_format_aspects(im->desc.format), n = 0;
    for (uint32_t a = 1; a <= VK_IMAGE_ASPECT_PLANE_2_BIT; a <<= 1)
        n += (aspects & a) != 0;
    n *= im->desc.mips;
    struct cap_img_lay *lay = n && d->fn.GetImageSubresourceLayout ? calloc(n, sizeof *lay) : NULL;
    *n_lay = 0;
    if (!lay)
        return NULL;
    uint32_t k = 0;
    for (uint32_t a = 1; a <= VK_IMAGE_ASPECT_PLANE_2_BIT; a <<= 1) {
        if (!(aspects & a))
            continue;
        for (uint32_t m = 0; m < im->desc.mips; m++) {
            VkImageSubresource sr = {a, m, 0};
            VkSubresourceLayout l = {0};
            d->fn.GetImageSubresourceLayout(d->handle, h, &sr, &l);
            lay[k++] = (struct cap_img_lay){l.offset, l.rowPitch, l.arrayPitch, l.depthPitch};
        }
    }
    *n_lay = k;
    return lay;
}

static void bind_image(struct cap_dev *d, VkImage h, VkDeviceMemory mem, uint64_t off, uint64_t t0)
{
    struct cap_image *im = cap_obj_find(CAP_H(h), CAP_T_IMAGE);
    struct cap_mem *m = cap_obj_find(CAP_H(mem), CAP_T_MEM);
    if (!im || !m)
        return;
    VkMemoryRequirements req = {0};
    if (d->fn.GetImageMemoryRequirements)
        d->fn.GetImageMemoryRequirements(d->handle, h, &req);
    unbind(im);
    cap_img_check_alias(d, m, off, req.size, im,
                        "vkBindImageMemory (image aliasing a buffer or another image)");
    uint32_t n_lay = 0;
    struct cap_img_lay *lay = im->tiling == VK_IMAGE_TILING_LINEAR && im->packed_size &&
                                      (m->props & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
                                  ? read_layouts(d, h, im, &n_lay)
                                  : NULL;
    pthread_mutex_lock(&m->mu); /* what host writes and reads of m look at (cap_vk_mapped.c) */
    if (m->n_img == m->cap_img) {
        uint32_t c = m->cap_img ? m->cap_img * 2 : 4;
        struct cap_image **v = realloc(m->img, c * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&m->mu);
            free(lay);
            cap_fail("out of memory tracking images");
            return;
        }
        m->img = v;
        m->cap_img = c;
    }
    m->img[m->n_img++] = im;
    im->mem = m;
    im->mem_off = off;
    im->mem_size = req.size;
    im->lay = lay;
    im->n_lay = n_lay;
    pthread_mutex_unlock(&m->mu);
    cap.shadow_gen++;
    struct sbt_payload_enc enc = {0};
    sbt_payload_put(
        &enc, SBT_VK_BIND_IMAGE,
        (uint64_t[]){im->o.id, m->o.id, off, req.size, req.alignment, req.memoryTypeBits}, 6, NULL,
        0);
    cap_emit_marker(d, "vkBindImageMemory", &enc, t0);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_BindImageMemory(VkDevice device, VkImage h, VkDeviceMemory mem,
                                                   VkDeviceSize off)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.BindImageMemory(device, h, mem, off), "vkBindImageMemory");
    if (r == VK_SUCCESS && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        bind_image(d, h, mem, off, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_BindImageMemory2(VkDevice device, uint32_t n,
                                                    const VkBindImageMemoryInfo *bi)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.BindImageMemory2(device, n, bi), "vkBindImageMemory2");
    if (r == VK_SUCCESS && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        for (uint32_t i = 0; i < n; i++) {
            if (bi[i].pNext) /* device groups, swapchains, planes of disjoint images */
                cap_unmodelled(d,
                               "vkBindImageMemory2 (a bind structure the capture does not "
                               "record)",
                               SBT_UNMODELLED_AFFECTS);
            bind_image(d, bi[i].image, bi[i].memory, bi[i].memoryOffset, t0);
        }
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

void cap_img_mem_freed(struct cap_mem *m)
{
    pthread_mutex_lock(&m->mu);
    for (uint32_t i = 0; i < m->n_img; i++) {
        m->img[i]->mem = NULL;
        free(m->img[i]->lay);
        m->img[i]->lay = NULL;
        m->img[i]->n_lay = 0;
    }
    free(m->img);
    m->img = NULL;
    m->n_img = m->cap_img = 0;
    pthread_mutex_unlock(&m->mu);
}

void cap_img_check_alias(struct cap_dev *d, struct cap_mem *m, uint64_t off, uint64_t size,
                         const struct cap_image *self, const char *what)
{
    int alias = 0;
    for (uint32_t i = 0; i < m->n_img && !alias; i++) {
        const struct cap_image *o = m->img[i];
        alias = o != self && o->mem_off < off + size && off < o->mem_off + o->mem_size;
    }
    if (self) {
        uint64_t pos = 0, k, v;
        while (!alias && sbt_map_next(&cap.objs[CAP_T_BUF], &pos, &k, &v)) {
            const struct cap_buf *b = (const void *)(uintptr_t)v;
            alias = b && b->mem == m && b->mem_off < off + size && off < b->mem_off + b->size;
        }
    }
    if (alias)
        cap_unmodelled(d, what, SBT_UNMODELLED_AFFECTS);
}

/* ========================================================================================== */
/* Views and samplers                                                                         */
/* ========================================================================================== */

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateImageView(VkDevice device, const VkImageViewCreateInfo *ci,
                                                   const VkAllocationCallbacks *alloc,
                                                   VkImageView *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.CreateImageView(device, ci, alloc, out), "vkCreateImageView");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    uint64_t usage = 0;
    int other = 0;
    for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_IMAGE_VIEW_USAGE_CREATE_INFO)
            usage = ((const VkImageViewUsageCreateInfo *)s)->usage;
        else
            other = 1; /* Y'CbCr conversions, min LOD, sliced 3D views, ASTC decode modes */
    }
    if (other)
        cap_unmodelled(d, "vkCreateImageView (a creation structure the capture does not record)",
                       SBT_UNMODELLED_AFFECTS);
    pthread_mutex_lock(&cap.mu);
    struct cap_image *im = cap_obj_find(CAP_H(ci->image), CAP_T_IMAGE);
    struct cap_iview *v =
        im ? cap_obj_new(sizeof *v, CAP_T_IVIEW, VK_OBJECT_TYPE_IMAGE_VIEW, CAP_H(*out), d) : NULL;
    if (v) {
        const VkImageSubresourceRange *sr = &ci->subresourceRange;
        v->image = CAP_H(ci->image);
        v->view_type = ci->viewType;
        v->aspect = sr->aspectMask;
        v->base_mip = sr->baseMipLevel;
        v->n_mips = sr->levelCount == VK_REMAINING_MIP_LEVELS && sr->baseMipLevel < im->desc.mips
                        ? im->desc.mips - sr->baseMipLevel
                        : sr->levelCount;
        uint32_t layers = im->desc.type == VK_IMAGE_TYPE_3D ? im->desc.extent[2] : im->desc.layers;
        v->base_layer = sr->baseArrayLayer;
        v->n_layers = sr->layerCount == VK_REMAINING_ARRAY_LAYERS && sr->baseArrayLayer < layers
                          ? layers - sr->baseArrayLayer
                          : sr->layerCount;
        struct sbt_payload_enc enc = {0};
        sbt_payload_put(&enc, SBT_VK_CREATE_IMAGE_VIEW,
                        (uint64_t[]){v->o.id, im->o.id, ci->flags, ci->viewType, ci->format,
                                     ci->components.r, ci->components.g, ci->components.b,
                                     ci->components.a, sr->aspectMask, sr->baseMipLevel, v->n_mips,
                                     sr->baseArrayLayer, v->n_layers, usage},
                        15, NULL, 0);
        cap_emit_marker(d, "vkCreateImageView", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyImageView(VkDevice device, VkImageView h,
                                                const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    cap_destroy_plain(d, CAP_H(h), CAP_T_IVIEW, VK_OBJECT_TYPE_IMAGE_VIEW, "vkDestroyImageView");
    d->fn.DestroyImageView(device, h, alloc);
}

static uint64_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateSampler(VkDevice device, const VkSamplerCreateInfo *ci,
                                                 const VkAllocationCallbacks *alloc, VkSampler *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.CreateSampler(device, ci, alloc, out), "vkCreateSampler");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    uint64_t reduction = 0, border_format = 0, border[4] = {0};
    int other = 0;
    for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_SAMPLER_REDUCTION_MODE_CREATE_INFO) {
            reduction = ((const VkSamplerReductionModeCreateInfo *)s)->reductionMode;
        } else if (s->sType == VK_STRUCTURE_TYPE_SAMPLER_CUSTOM_BORDER_COLOR_CREATE_INFO_EXT) {
            const VkSamplerCustomBorderColorCreateInfoEXT *b =
                (const VkSamplerCustomBorderColorCreateInfoEXT *)s;
            border_format = b->format;
            for (int i = 0; i < 4; i++)
                border[i] = b->customBorderColor.uint32[i];
        } else {
            other = 1; /* Y'CbCr conversions, border color swizzles */
        }
    }
    if (other)
        cap_unmodelled(d, "vkCreateSampler (a creation structure the capture does not record)",
                       SBT_UNMODELLED_AFFECTS);
    pthread_mutex_lock(&cap.mu);
    struct cap_sampler *s =
        cap_obj_new(sizeof *s, CAP_T_SAMPLER, VK_OBJECT_TYPE_SAMPLER, CAP_H(*out), d);
    if (s) {
        struct sbt_payload_enc enc = {0};
        sbt_payload_put(&enc, SBT_VK_CREATE_SAMPLER,
                        (uint64_t[]){s->o.id,
                                     ci->flags,
                                     ci->magFilter,
                                     ci->minFilter,
                                     ci->mipmapMode,
                                     ci->addressModeU,
                                     ci->addressModeV,
                                     ci->addressModeW,
                                     fbits(ci->mipLodBias),
                                     ci->anisotropyEnable,
                                     fbits(ci->maxAnisotropy),
                                     ci->compareEnable,
                                     ci->compareOp,
                                     fbits(ci->minLod),
                                     fbits(ci->maxLod),
                                     ci->borderColor,
                                     ci->unnormalizedCoordinates,
                                     reduction,
                                     border_format,
                                     border[0],
                                     border[1],
                                     border[2],
                                     border[3]},
                        23, NULL, 0);
        cap_emit_marker(d, "vkCreateSampler", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroySampler(VkDevice device, VkSampler h,
                                              const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    cap_destroy_plain(d, CAP_H(h), CAP_T_SAMPLER, VK_OBJECT_TYPE_SAMPLER, "vkDestroySampler");
    d->fn.DestroySampler(device, h, alloc);
}

/* ========================================================================================== */
/* Accesses                                                                                   */
/* ========================================================================================== */

void cap_img_view_ranges(const struct cap_image *im, const struct cap_iview *v,
                         void (*fn)(void *ctx, uint64_t off, uint64_t len), void *ctx)
{
    if (!im->packed_size)
        return;
    uint32_t aspects = sbt_vk_format_aspects(im->desc.format);
    uint32_t va = v->aspect & aspects;
    if ((v->aspect & ASPECT_COLOR) && (aspects & ASPECT_PLANES))
        va = aspects; /* a Y'CbCr view reads every plane */
    int is3d = im->desc.type == VK_IMAGE_TYPE_3D;
    for (uint32_t a = 1; a <= VK_IMAGE_ASPECT_PLANE_2_BIT; a <<= 1) {
        if (!(va & a))
            continue;
        for (uint32_t m = v->base_mip; m < im->desc.mips && m - v->base_mip < v->n_mips; m++) {
            struct sbt_vk_subres s;
            if (sbt_vk_image_subres(&im->desc, a, m, &s) < 0)
                return;
            struct sbt_vk_box b = {a, m, 0, 1, {0, 0, 0}, {s.extent[0], s.extent[1], 1}};
            if (is3d && v->view_type != VK_IMAGE_VIEW_TYPE_3D) {
                /* a 2D (array) view of a 3D image: its layers are the level's slices */
                b.off[2] = v->base_layer < s.extent[2] ? v->base_layer : s.extent[2];
                b.ext[2] =
                    s.extent[2] - b.off[2] < v->n_layers ? s.extent[2] - b.off[2] : v->n_layers;
            } else if (is3d) {
                b.ext[2] = s.extent[2];
            } else {
                b.layer = v->base_layer < im->desc.layers ? v->base_layer : im->desc.layers;
                b.n_layers = im->desc.layers - b.layer < v->n_layers ? im->desc.layers - b.layer
                                                                     : v->n_layers;
            }
            sbt_vk_image_box_runs(&im->desc, &b, fn, ctx, NULL, NULL, NULL);
        }
    }
}

static int cmp_img_off(const void *a, const void *b)
{
    const struct cap_image *x = *(struct cap_image *const *)a, *y = *(struct cap_image *const *)b;
    return x->mem_off < y->mem_off ? -1 : x->mem_off > y->mem_off;
}

void cap_img_split(struct cap_mem *m, uint64_t a, uint64_t b,
                   void (*fn_mem)(void *ctx, uint64_t x, uint64_t y),
                   void (*fn_img)(void *ctx, struct cap_image *im, uint64_t x, uint64_t y),
                   void *ctx)
{
    struct cap_image *some[16], **on = some;
    if (m->n_img > 16 && !(on = malloc(m->n_img * sizeof *on))) {
        cap_fail("out of memory splitting a host access at images");
        return;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->n_img; i++) {
        struct cap_image *im = m->img[i];
        if (im->mem_off < b && a < im->mem_off + im->mem_size)
            on[n++] = im;
    }
    qsort(on, n, sizeof *on, cmp_img_off);
    uint64_t pos = a;
    for (uint32_t i = 0; i < n && pos < b; i++) {
        uint64_t x = on[i]->mem_off > pos ? on[i]->mem_off : pos;
        uint64_t y = on[i]->mem_off + on[i]->mem_size < b ? on[i]->mem_off + on[i]->mem_size : b;
        if (x >= y) /* aliasing images (counted unmodelled): the first one wins */
            continue;
        if (x > pos)
            fn_mem(ctx, pos, x);
        fn_img(ctx, on[i], x, y);
        pos = y;
    }
    if (pos < b)
        fn_mem(ctx, pos, b);
    if (on != some)
        free(on);
}

/* The packed rows of a linear image that memory range [x, y) holds in full or in part, and
 * that lie wholly inside the mapping: fn(ctx, packed offset, memory offset, length) in packed
 * order. */
static void linear_rows(const struct cap_image *im, uint64_t x, uint64_t y,
                        void (*fn)(void *ctx, uint64_t packed, uint64_t mem, uint64_t len),
                        void *ctx)
{
    const struct cap_mem *m = im->mem;
    uint64_t map_lo = m->map_off, map_hi = m->map_off + m->map_len;
    uint32_t aspects = sbt_vk_format_aspects(im->desc.format), k = 0;
    for (uint32_t a = 1; a <= VK_IMAGE_ASPECT_PLANE_2_BIT; a <<= 1) {
        if (!(aspects & a))
            continue;
        for (uint32_t mip = 0; mip < im->desc.mips && k < im->n_lay; mip++, k++) {
            struct sbt_vk_subres s;
            if (sbt_vk_image_subres(&im->desc, a, mip, &s) < 0)
                return;
            const struct cap_img_lay *l = &im->lay[k];
            uint64_t rp = l->row_pitch ? l->row_pitch : s.row_bytes;
            for (uint32_t layer = 0; layer < im->desc.layers; layer++) {
                for (uint32_t z = 0; z < s.blocks[2]; z++) {
                    uint64_t base =
                        im->mem_off + l->offset + layer * l->array_pitch + z * l->depth_pitch;
                    uint64_t packed = s.offset + layer * s.layer_bytes + z * s.slice_bytes;
                    uint64_t r = x > base + s.row_bytes ? (x - base - s.row_bytes) / rp : 0;
                    for (; r < s.blocks[1] && base + r * rp < y; r++) {
                        uint64_t ma = base + r * rp, mb = ma + s.row_bytes;
                        if (mb <= x || ma < map_lo || mb > map_hi)
                            continue;
                        fn(ctx, packed + r * s.row_bytes, ma, s.row_bytes);
                    }
                }
            }
        }
    }
}

struct host_rows {
    struct sbt_access *acc;
    uint32_t n_acc, cap_acc;
    uint64_t id, bytes;
    uint32_t mode;
    const uint8_t *map; /* the mapping's address of memory offset 0 */
    uint8_t *data;      /* HOST_WRITE: the rows' bytes, in order */
    sbt_hasher *h;      /* HOST_READ: their digest */
    int failed;
};

static void count_row(void *ctx, uint64_t packed, uint64_t mem, uint64_t len)
{
    struct host_rows *hr = ctx;
    (void)mem;
    if (hr->n_acc && hr->acc[hr->n_acc - 1].offset + hr->acc[hr->n_acc - 1].len == packed) {
        hr->acc[hr->n_acc - 1].len += len;
    } else {
        if (hr->n_acc == hr->cap_acc) {
            uint32_t c = hr->cap_acc ? hr->cap_acc * 2 : 8;
            struct sbt_access *v = realloc(hr->acc, c * sizeof *v);
            if (!v) {
                hr->failed = 1;
                return;
            }
            hr->acc = v;
            hr->cap_acc = c;
        }
        hr->acc[hr->n_acc++] = (struct sbt_access){hr->id, packed, len, hr->mode};
    }
    hr->bytes += len;
}

static void take_row(void *ctx, uint64_t packed, uint64_t mem, uint64_t len)
{
    struct host_rows *hr = ctx;
    (void)packed;
    if (hr->data) {
        memcpy(hr->data + hr->bytes, hr->map + mem, len);
        hr->bytes += len;
    } else if (hr->h) {
        sbt_hasher_update(hr->h, hr->map + mem, len);
    }
}

struct cap_ev *cap_img_host_op(struct cap_image *im, uint32_t kind, uint64_t x, uint64_t y,
                               const uint8_t *base, uint64_t now)
{
    struct cap_mem *m = im->mem;
    if (!im->lay || !m || !m->mapped || !base)
        return NULL;
    int w = kind == SBT_OP_HOST_WRITE;
    struct host_rows hr = {
        .id = im->o.id, .mode = w ? SBT_ACCESS_WRITE : SBT_ACCESS_READ, .map = base};
    linear_rows(im, x, y, count_row, &hr);
    struct cap_ev *e = hr.n_acc && !hr.failed ? cap_ev_new_op(hr.n_acc, 0) : NULL;
    if (!e) {
        if (hr.failed)
            cap_fail("out of memory for the rows of a linear image");
        free(hr.acc);
        return NULL;
    }
    memcpy(e->acc, hr.acc, hr.n_acc * sizeof *e->acc);
    e->op.n_access = hr.n_acc;
    uint64_t total = hr.bytes;
    free(hr.acc);
    hr.bytes = 0;
    if (w) {
        hr.data = malloc(total);
        if (!hr.data) {
            cap_ev_free_chain(e);
            cap_fail("out of memory for %llu bytes of a linear image", (unsigned long long)total);
            return NULL;
        }
    } else if (sbt_hasher_create(&hr.h) < 0) {
        cap_ev_free_chain(e);
        cap_fail("out of memory for a digest");
        return NULL;
    }
    linear_rows(im, x, y, take_row, &hr);
    e->dev_id = m->o.dev->id;
    e->name = w ? "host write" : "host read";
    e->op.kind = kind;
    e->op.host_begin = e->op.host_end = now;
    e->op.bytes = total;
    e->op.flags = SBT_OPF_BYTES;
    if (w) {
        e->data = hr.data;
        e->data_len = total;
    } else {
        e->op.digest = sbt_hasher_digest(hr.h);
        e->op.flags |= SBT_OPF_DIGEST;
        sbt_hasher_destroy(hr.h);
    }
    return e;
}
