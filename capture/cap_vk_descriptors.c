/*
 * capture/cap_vk_descriptors.c — descriptor set layouts, pools, sets, their updates (plain,
 * copied and through update templates): the shadow slots that expanding a dispatch reads to
 * know which buffer ranges it touches, and WRITE_SET / COPY_SET records for replay. Buffer and
 * texel-buffer descriptors are recorded; writing any other kind (images, samplers, inline
 * uniform blocks, acceleration structures) marks the trace incomplete. Push descriptors are
 * unmodelled commands (capture/cap_vk_classes.txt).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/cap_vk_int.h"

static int is_buffer_type(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER || t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER ||
           t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC ||
           t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
}

static int is_texel_type(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER ||
           t == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
}

static int cmp_binding(const void *a, const void *b)
{
    const struct cap_dsl_binding *x = a, *y = b;
    return x->binding < y->binding ? -1 : x->binding > y->binding;
}

void cap_enc_set_layout(struct sbt_vk_enc *enc, const struct cap_dsl *l)
{
    sbt_vk_enc_rec(enc, SBT_VK_SET_LAYOUT, (uint64_t[]){l->o.id, l->flags, l->n_b}, 3, NULL, 0);
    for (uint32_t i = 0; i < l->n_b; i++)
        sbt_vk_enc_rec(enc, SBT_VK_SET_BINDING,
                       (uint64_t[]){l->b[i].binding, l->b[i].type, l->b[i].count, l->b[i].stages,
                                    l->b[i].flags},
                       5, NULL, 0);
}

VKAPI_ATTR VkResult VKAPI_CALL
cap_CreateDescriptorSetLayout(VkDevice device, const VkDescriptorSetLayoutCreateInfo *ci,
                              const VkAllocationCallbacks *alloc, VkDescriptorSetLayout *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.CreateDescriptorSetLayout(device, ci, alloc, out),
                               "vkCreateDescriptorSetLayout");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    const VkDescriptorSetLayoutBindingFlagsCreateInfo *bf = NULL;
    for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_BINDING_FLAGS_CREATE_INFO)
            bf = (const VkDescriptorSetLayoutBindingFlagsCreateInfo *)s;
    pthread_mutex_lock(&cap.mu);
    struct cap_dsl *l =
        cap_obj_new(sizeof *l, CAP_T_DSL, VK_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT, CAP_H(*out), d);
    if (l && ci->bindingCount) {
        l->b = calloc(ci->bindingCount, sizeof *l->b);
        if (!l->b)
            cap_fail("out of memory for a descriptor set layout");
    }
    if (l && (l->b || !ci->bindingCount)) {
        l->n_b = ci->bindingCount;
        l->flags = ci->flags;
        for (uint32_t i = 0; i < ci->bindingCount; i++) {
            const VkDescriptorSetLayoutBinding *x = &ci->pBindings[i];
            /* pImmutableSamplers is not read: it only matters for sampler types */
            l->b[i] = (struct cap_dsl_binding){x->binding,
                                               x->descriptorType,
                                               x->descriptorCount,
                                               x->stageFlags,
                                               bf && bf->bindingCount == ci->bindingCount &&
                                                       bf->pBindingFlags
                                                   ? bf->pBindingFlags[i]
                                                   : 0,
                                               0};
            if (x->descriptorType == VK_DESCRIPTOR_TYPE_INLINE_UNIFORM_BLOCK)
                l->b[i].count = 0; /* bytes, not descriptors: not tracked */
        }
        qsort(l->b, l->n_b, sizeof *l->b, cmp_binding);
        for (uint32_t i = 0; i < l->n_b; i++) {
            l->b[i].base = l->n_slots;
            l->n_slots += l->b[i].count;
        }
        struct sbt_vk_enc enc = {0};
        cap_enc_set_layout(&enc, l);
        cap_emit_marker(d, "vkCreateDescriptorSetLayout", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyDescriptorSetLayout(VkDevice device, VkDescriptorSetLayout h,
                                                          const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (h && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_dsl *l = cap_obj_del(CAP_H(h), CAP_T_DSL);
        if (l)
            free(l->b);
        free(l);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyDescriptorSetLayout(device, h, alloc);
}

/* ========================================================================================== */
/* Descriptor sets                                                                            */
/* ========================================================================================== */

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateDescriptorPool(VkDevice device,
                                                        const VkDescriptorPoolCreateInfo *ci,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkDescriptorPool *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    return cap_vk_result(d->fn.CreateDescriptorPool(device, ci, alloc, out),
                         "vkCreateDescriptorPool");
}

static void dset_free(struct cap_dset *s)
{
    if (!s)
        return;
    free(s->b);
    free(s->slot);
    free(s);
}

/* Forgets the sets of a pool (destroyed or reset). cap.mu held. */
static void pool_forget_sets(uint64_t pool)
{
    struct cap_map *m = &cap.objs[CAP_T_DSET];
    for (size_t i = 0; i < m->cap; i++) {
        if (m->e[i].key < 2)
            continue;
        struct cap_dset *s = m->e[i].val;
        if (s && s->pool_handle == pool) {
            cap_map_del(m, s->o.handle);
            dset_free(s);
        }
    }
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyDescriptorPool(VkDevice device, VkDescriptorPool h,
                                                     const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (h && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        pool_forget_sets(CAP_H(h));
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyDescriptorPool(device, h, alloc);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_ResetDescriptorPool(VkDevice device, VkDescriptorPool h,
                                                       VkDescriptorPoolResetFlags f)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (h && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        pool_forget_sets(CAP_H(h));
        pthread_mutex_unlock(&cap.mu);
    }
    return cap_vk_result(d->fn.ResetDescriptorPool(device, h, f), "vkResetDescriptorPool");
}

VKAPI_ATTR VkResult VKAPI_CALL cap_AllocateDescriptorSets(VkDevice device,
                                                          const VkDescriptorSetAllocateInfo *ai,
                                                          VkDescriptorSet *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r =
        cap_vk_result(d->fn.AllocateDescriptorSets(device, ai, out), "vkAllocateDescriptorSets");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    const VkDescriptorSetVariableDescriptorCountAllocateInfo *var = NULL;
    for (const VkBaseInStructure *s = ai->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_DESCRIPTOR_SET_VARIABLE_DESCRIPTOR_COUNT_ALLOCATE_INFO)
            var = (const VkDescriptorSetVariableDescriptorCountAllocateInfo *)s;
    pthread_mutex_lock(&cap.mu);
    struct sbt_vk_enc enc = {0};
    for (uint32_t i = 0; i < ai->descriptorSetCount; i++) {
        struct cap_dsl *l = cap_obj_find(CAP_H(ai->pSetLayouts[i]), CAP_T_DSL);
        if (!l)
            continue;
        struct cap_dset *s =
            cap_obj_new(sizeof *s, CAP_T_DSET, VK_OBJECT_TYPE_DESCRIPTOR_SET, CAP_H(out[i]), d);
        if (!s)
            break;
        s->pool_handle = CAP_H(ai->descriptorPool);
        s->n_b = l->n_b;
        s->n_slots = l->n_slots;
        s->b = l->n_b ? malloc(l->n_b * sizeof *s->b) : NULL;
        s->slot = l->n_slots ? calloc(l->n_slots, sizeof *s->slot) : NULL;
        if ((l->n_b && !s->b) || (l->n_slots && !s->slot)) {
            cap_fail("out of memory for a descriptor set");
            break;
        }
        if (l->n_b)
            memcpy(s->b, l->b, l->n_b * sizeof *s->b);
        uint64_t vc = var && var->pDescriptorCounts && i < var->descriptorSetCount
                          ? var->pDescriptorCounts[i]
                          : 0;
        sbt_vk_enc_rec(&enc, SBT_VK_ALLOC_SET,
                       (uint64_t[]){s->o.id, l->o.id, CAP_H(ai->descriptorPool), vc}, 4, NULL, 0);
    }
    cap_emit_marker(d, "vkAllocateDescriptorSets", &enc, t0);
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_FreeDescriptorSets(VkDevice device, VkDescriptorPool pool,
                                                      uint32_t n, const VkDescriptorSet *s)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        for (uint32_t i = 0; i < n; i++)
            dset_free(cap_obj_del(CAP_H(s[i]), CAP_T_DSET));
        pthread_mutex_unlock(&cap.mu);
    }
    return cap_vk_result(d->fn.FreeDescriptorSets(device, pool, n, s), "vkFreeDescriptorSets");
}

/* Slot of (binding, element) in set s, following consecutive-binding updates; NULL past it. */
static struct cap_slot *dset_slot(struct cap_dset *s, uint32_t binding, uint32_t elem,
                                  uint32_t *type)
{
    cap.shadow_gen++; /* the slot is about to be written */
    for (uint32_t i = 0; i < s->n_b; i++) {
        if (s->b[i].binding < binding)
            continue;
        if (s->b[i].binding > binding && elem == 0 && s->b[i].count) {
            /* rolled over into the next binding (consecutive binding updates) */
        } else if (s->b[i].binding != binding) {
            return NULL;
        }
        while (i < s->n_b && elem >= s->b[i].count) {
            elem -= s->b[i].count;
            i++;
        }
        if (i >= s->n_b)
            return NULL;
        *type = s->b[i].type;
        return &s->slot[s->b[i].base + elem];
    }
    return NULL;
}

/* One descriptor written: slot updated, record argument tuple appended. */
static void write_one(struct sbt_vk_enc *enc, struct cap_slot *sl, uint32_t type, uint64_t buf,
                      uint64_t off, uint64_t range, uint64_t view)
{
    struct cap_buf *b = cap_obj_find(buf, CAP_T_BUF);
    struct cap_bview *v = cap_obj_find(view, CAP_T_BVIEW);
    if (sl) {
        sl->type = type;
        sl->buf_handle = buf;
        sl->offset = off;
        sl->range = range;
        sl->view_handle = view;
    }
    sbt_vk_enc_arg(enc, b ? b->o.id : 0);
    sbt_vk_enc_arg(enc, off);
    sbt_vk_enc_arg(enc, range == VK_WHOLE_SIZE && b && off <= b->size ? b->size - off : range);
    sbt_vk_enc_arg(enc, v ? v->o.id : 0);
}

/* One WRITE_SET record for w. Descriptors of other types than buffers and texel buffers
 * (images, samplers, inline uniform blocks, acceleration structures) are not recorded: the
 * dispatches that use them would replay without them, so the trace says so (templ: written by
 * vkUpdateDescriptorSetWithTemplate). */
static void enc_write_set(struct cap_dev *d, struct sbt_vk_enc *enc, const VkWriteDescriptorSet *w,
                          int templ)
{
    struct cap_dset *s = cap_obj_find(CAP_H(w->dstSet), CAP_T_DSET);
    uint32_t t = w->descriptorType;
    if (!is_buffer_type(t) && !is_texel_type(t)) {
        cap_unmodelled(d,
                       templ ? "vkUpdateDescriptorSetWithTemplate (descriptor other than a "
                               "buffer or texel buffer)"
                             : "vkUpdateDescriptorSets (descriptor other than a buffer or texel "
                               "buffer)",
                       SBT_UNMODELLED_AFFECTS);
        return;
    }
    if (!s)
        return;
    sbt_vk_enc_begin(enc, SBT_VK_WRITE_SET);
    sbt_vk_enc_arg(enc, s->o.id);
    sbt_vk_enc_arg(enc, w->dstBinding);
    sbt_vk_enc_arg(enc, w->dstArrayElement);
    sbt_vk_enc_arg(enc, t);
    sbt_vk_enc_arg(enc, w->descriptorCount);
    for (uint32_t i = 0; i < w->descriptorCount; i++) {
        uint32_t st = t;
        struct cap_slot *sl = dset_slot(s, w->dstBinding, w->dstArrayElement + i, &st);
        if (is_buffer_type(t) && w->pBufferInfo)
            write_one(enc, sl, t, CAP_H(w->pBufferInfo[i].buffer), w->pBufferInfo[i].offset,
                      w->pBufferInfo[i].range, 0);
        else if (is_texel_type(t) && w->pTexelBufferView)
            write_one(enc, sl, t, 0, 0, 0, CAP_H(w->pTexelBufferView[i]));
        else
            write_one(enc, sl, t, 0, 0, 0, 0);
    }
    sbt_vk_enc_end(enc, NULL, 0);
}

VKAPI_ATTR void VKAPI_CALL cap_UpdateDescriptorSets(VkDevice device, uint32_t nw,
                                                    const VkWriteDescriptorSet *w, uint32_t nc,
                                                    const VkCopyDescriptorSet *c)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    d->fn.UpdateDescriptorSets(device, nw, w, nc, c);
    if (!CAP_ON())
        return;
    pthread_mutex_lock(&cap.mu);
    struct sbt_vk_enc enc = {0};
    for (uint32_t i = 0; i < nw; i++)
        enc_write_set(d, &enc, &w[i], 0);
    for (uint32_t i = 0; i < nc; i++) {
        struct cap_dset *src = cap_obj_find(CAP_H(c[i].srcSet), CAP_T_DSET);
        struct cap_dset *dst = cap_obj_find(CAP_H(c[i].dstSet), CAP_T_DSET);
        if (!src || !dst)
            continue;
        for (uint32_t k = 0; k < c[i].descriptorCount; k++) {
            uint32_t ts, td;
            struct cap_slot *a = dset_slot(src, c[i].srcBinding, c[i].srcArrayElement + k, &ts);
            struct cap_slot *b = dset_slot(dst, c[i].dstBinding, c[i].dstArrayElement + k, &td);
            if (a && b)
                *b = *a;
        }
        sbt_vk_enc_rec(&enc, SBT_VK_COPY_SET,
                       (uint64_t[]){src->o.id, c[i].srcBinding, c[i].srcArrayElement, dst->o.id,
                                    c[i].dstBinding, c[i].dstArrayElement, c[i].descriptorCount},
                       7, NULL, 0);
    }
    if (enc.len)
        cap_emit_marker(d, "vkUpdateDescriptorSets", &enc, t0);
    sbt_vk_enc_free(&enc);
    pthread_mutex_unlock(&cap.mu);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateDescriptorUpdateTemplate(
    VkDevice device, const VkDescriptorUpdateTemplateCreateInfo *ci,
    const VkAllocationCallbacks *alloc, VkDescriptorUpdateTemplate *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    VkResult r = cap_vk_result(d->fn.CreateDescriptorUpdateTemplate(device, ci, alloc, out),
                               "vkCreateDescriptorUpdateTemplate");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    if (ci->templateType != VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_DESCRIPTOR_SET) {
        /* harmless by itself: the pushes that use it are affecting */
        cap_unmodelled(d, "vkCreateDescriptorUpdateTemplate (push descriptors)", 0);
        return r;
    }
    pthread_mutex_lock(&cap.mu);
    struct cap_templ *t = cap_obj_new(sizeof *t, CAP_T_TEMPL,
                                      VK_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE, CAP_H(*out), d);
    if (t && ci->descriptorUpdateEntryCount) {
        t->e = calloc(ci->descriptorUpdateEntryCount, sizeof *t->e);
        if (!t->e)
            cap_fail("out of memory for an update template");
        else
            t->n_e = ci->descriptorUpdateEntryCount;
        for (uint32_t i = 0; i < t->n_e; i++) {
            const VkDescriptorUpdateTemplateEntry *x = &ci->pDescriptorUpdateEntries[i];
            t->e[i] =
                (struct cap_templ_entry){x->dstBinding,     x->dstArrayElement, x->descriptorCount,
                                         x->descriptorType, x->offset,          x->stride};
        }
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyDescriptorUpdateTemplate(VkDevice device,
                                                               VkDescriptorUpdateTemplate h,
                                                               const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (h && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_templ *t = cap_obj_del(CAP_H(h), CAP_T_TEMPL);
        if (t)
            free(t->e);
        free(t);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyDescriptorUpdateTemplate(device, h, alloc);
}

/* Template updates are recorded as the WRITE_SET records they amount to. */
VKAPI_ATTR void VKAPI_CALL cap_UpdateDescriptorSetWithTemplate(VkDevice device, VkDescriptorSet set,
                                                               VkDescriptorUpdateTemplate h,
                                                               const void *data)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    d->fn.UpdateDescriptorSetWithTemplate(device, set, h, data);
    if (!CAP_ON() || !data)
        return;
    pthread_mutex_lock(&cap.mu);
    struct cap_templ *t = cap_obj_find(CAP_H(h), CAP_T_TEMPL);
    struct sbt_vk_enc enc = {0};
    for (uint32_t i = 0; t && i < t->n_e; i++) {
        const struct cap_templ_entry *x = &t->e[i];
        VkDescriptorBufferInfo bi[64];
        VkBufferView bv[64];
        for (uint32_t k0 = 0; k0 < x->count; k0 += 64) {
            uint32_t n = x->count - k0 < 64 ? x->count - k0 : 64;
            VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set,
                                      .dstBinding = x->binding,
                                      .dstArrayElement = x->elem + k0,
                                      .descriptorCount = n,
                                      .descriptorType = x->type};
            for (uint32_t k = 0; k < n; k++) {
                const uint8_t *p = (const uint8_t *)data + x->offset + (k0 + k) * x->stride;
                if (is_buffer_type(x->type))
                    memcpy(&bi[k], p, sizeof bi[k]);
                else if (is_texel_type(x->type))
                    memcpy(&bv[k], p, sizeof bv[k]);
            }
            w.pBufferInfo = bi;
            w.pTexelBufferView = bv;
            enc_write_set(d, &enc, &w, 1);
        }
    }
    if (enc.len)
        cap_emit_marker(d, "vkUpdateDescriptorSetWithTemplate", &enc, t0);
    sbt_vk_enc_free(&enc);
    pthread_mutex_unlock(&cap.mu);
}
