/*
 * capture/vk/cap_vk_descriptors.c — descriptor set layouts, pools, sets, their updates (plain,
 * copied and through update templates of either type) and push descriptors: the shadow slots
 * that expanding a dispatch reads to know which buffer ranges and images it touches, and
 * WRITE_SET / COPY_SET records for replay. Buffer, texel-buffer, sampler and image descriptors
 * (sampled, storage, combined with a sampler; immutable samplers included) are recorded;
 * writing any other kind (inline uniform blocks, acceleration structures, input attachments)
 * marks the trace incomplete.
 *
 * One representation of a descriptor write serves every path: "binding, array element,
 * VkDescriptorType, n, then n tuples" (format/sbt_vk.h WRITE_SET after its set id). Updates of
 * sets apply it to the set's slots at once; push descriptors (vkCmdPushDescriptorSet*, plain,
 * with a template, and the maintenance6 forms) append it with the program's handles to the
 * command buffer's recording (CMD_PUSH_SET), and cap_vk_submit.c applies it to the command
 * buffer's push set when it expands the recording at submit. Templates become the
 * VkWriteDescriptorSet structures they amount to, so every type a plain write records, a
 * template records too.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

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

void cap_enc_set_layout(struct sbt_payload_enc *enc, const struct cap_dsl *l)
{
    sbt_payload_put(enc, SBT_VK_SET_LAYOUT, (uint64_t[]){l->o.id, l->flags, l->n_b}, 3, NULL, 0);
    for (uint32_t i = 0; i < l->n_b; i++) {
        const struct cap_dsl_binding *b = &l->b[i];
        sbt_payload_enc_begin(enc, SBT_VK_SET_BINDING);
        sbt_payload_enc_arg(enc, b->binding);
        sbt_payload_enc_arg(enc, b->type);
        sbt_payload_enc_arg(enc, b->count);
        sbt_payload_enc_arg(enc, b->stages);
        sbt_payload_enc_arg(enc, b->flags);
        uint32_t n_imm = b->immutable && l->imm ? b->count : 0;
        sbt_payload_enc_arg(enc, n_imm);
        for (uint32_t k = 0; k < n_imm; k++)
            sbt_payload_enc_arg(enc, l->imm[b->base + k]);
        sbt_payload_enc_end(enc, NULL, 0);
    }
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
        int any_imm = 0;
        for (uint32_t i = 0; i < ci->bindingCount; i++) {
            const VkDescriptorSetLayoutBinding *x = &ci->pBindings[i];
            /* pImmutableSamplers matters for sampler types only (elsewhere it may be garbage) */
            int imm = (x->descriptorType == VK_DESCRIPTOR_TYPE_SAMPLER ||
                       x->descriptorType == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER) &&
                      x->pImmutableSamplers;
            any_imm |= imm;
            l->b[i] = (struct cap_dsl_binding){x->binding,
                                               x->descriptorType,
                                               x->descriptorCount,
                                               x->stageFlags,
                                               bf && bf->bindingCount == ci->bindingCount &&
                                                       bf->pBindingFlags
                                                   ? bf->pBindingFlags[i]
                                                   : 0,
                                               0,
                                               (uint32_t)imm};
            if (x->descriptorType == VK_DESCRIPTOR_TYPE_INLINE_UNIFORM_BLOCK)
                l->b[i].count = 0; /* bytes, not descriptors: not tracked */
        }
        qsort(l->b, l->n_b, sizeof *l->b, cmp_binding);
        for (uint32_t i = 0; i < l->n_b; i++) {
            l->b[i].base = l->n_slots;
            l->n_slots += l->b[i].count;
        }
        /* immutable samplers, by capture id, per slot (sets start with them) */
        if (any_imm && l->n_slots && !(l->imm = calloc(l->n_slots, sizeof *l->imm)))
            cap_fail("out of memory for immutable samplers");
        for (uint32_t i = 0; l->imm && i < l->n_b; i++) {
            const VkDescriptorSetLayoutBinding *x = ci->pBindings;
            while (x->binding != l->b[i].binding) /* the same binding number, before sorting */
                x++;
            for (uint32_t k = 0; l->b[i].immutable && k < l->b[i].count; k++) {
                struct cap_sampler *sm =
                    cap_obj_find(CAP_H(x->pImmutableSamplers[k]), CAP_T_SAMPLER);
                l->imm[l->b[i].base + k] = sm ? sm->o.id : 0;
            }
        }
        struct sbt_payload_enc enc = {0};
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
        if (l) {
            free(l->b);
            free(l->imm);
        }
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
    cap_dset_release(s);
    free(s);
}

/* Forgets the sets of a pool (destroyed or reset). cap.mu held. */
static void pool_forget_sets(uint64_t pool)
{
    struct sbt_map *m = &cap.objs[CAP_T_DSET];
    uint64_t pos = 0, k, v, n = 0, *mine = malloc((sbt_map_count(m) + 1) * sizeof *mine);
    if (!mine) {
        cap_fail("out of memory listing a pool's descriptor sets");
        return;
    }
    while (sbt_map_next(m, &pos, &k, &v)) { /* collected first: the map changes below */
        const struct cap_dset *s = (const void *)(uintptr_t)v;
        if (s && s->pool_handle == pool)
            mine[n++] = k;
    }
    for (uint64_t i = 0; i < n; i++)
        dset_free(sbt_map_delp(m, mine[i]));
    free(mine);
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
    struct sbt_payload_enc enc = {0};
    for (uint32_t i = 0; i < ai->descriptorSetCount; i++) {
        struct cap_dsl *l = cap_obj_find(CAP_H(ai->pSetLayouts[i]), CAP_T_DSL);
        if (!l)
            continue;
        struct cap_dset *s =
            cap_obj_new(sizeof *s, CAP_T_DSET, VK_OBJECT_TYPE_DESCRIPTOR_SET, CAP_H(out[i]), d);
        if (!s)
            break;
        s->pool_handle = CAP_H(ai->descriptorPool);
        uint32_t vc = var && var->pDescriptorCounts && i < var->descriptorSetCount
                          ? var->pDescriptorCounts[i]
                          : 0;
        if (cap_dset_shape(s, l, vc, 0) < 0)
            break;
        sbt_payload_put(&enc, SBT_VK_ALLOC_SET,
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

/* ========================================================================================== */
/* Descriptor writes: one representation for set updates and push descriptors                */
/* ========================================================================================== */

int cap_desc_recorded(uint32_t t)
{
    return is_buffer_type(t) || is_texel_type(t) || cap_is_image_desc(t);
}

const char *cap_desc_why(uint32_t t)
{
    (void)t;
    return "descriptor other than a buffer, texel buffer, sampler or image";
}

int cap_dset_shape(struct cap_dset *s, const struct cap_dsl *l, uint32_t var, int push)
{
    s->n_b = l->n_b;
    s->n_slots = 0;
    s->layout_id = l->o.id;
    s->b = l->n_b ? malloc(l->n_b * sizeof *s->b) : NULL;
    if (l->n_b && !s->b) {
        cap_fail("out of memory for a descriptor set");
        return -1;
    }
    for (uint32_t i = 0; i < l->n_b; i++) {
        s->b[i] = l->b[i];
        /* a variable-count binding (the layout's last) holds what the allocation asked for */
        if ((l->b[i].flags & VK_DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT_BIT) &&
            var < l->b[i].count)
            s->b[i].count = var;
        s->b[i].base = s->n_slots;
        s->n_slots += s->b[i].count;
    }
    s->slot = s->n_slots ? calloc(s->n_slots, sizeof *s->slot) : NULL;
    if (s->n_slots && !s->slot) {
        free(s->b);
        s->b = NULL;
        cap_fail("out of memory for a descriptor set of %u descriptors", s->n_slots);
        return -1;
    }
    for (uint32_t i = 0; l->imm && i < l->n_b; i++) /* the layout's immutable samplers */
        for (uint32_t k = 0; l->b[i].immutable && k < s->b[i].count; k++) {
            struct cap_slot *sl = &s->slot[s->b[i].base + k];
            sl->imm = l->imm[l->b[i].base + k];
            sl->sampler = push ? 0 : sl->imm;
        }
    return 0;
}

void cap_dset_release(struct cap_dset *s)
{
    free(s->b);
    free(s->slot);
    s->b = NULL;
    s->slot = NULL;
    s->n_b = s->n_slots = 0;
}

/* Slot of (binding, element) in set s, following consecutive-binding updates; NULL past it.
 * *imm (may be NULL): whether its sampler is the layout's (immutable). */
static struct cap_slot *dset_slot(struct cap_dset *s, uint32_t binding, uint32_t elem,
                                  uint32_t *imm)
{
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
        if (imm)
            *imm = s->b[i].immutable;
        return &s->slot[s->b[i].base + elem];
    }
    return NULL;
}

void cap_enc_write(struct sbt_payload_enc *enc, const VkWriteDescriptorSet *w)
{
    uint32_t t = w->descriptorType;
    sbt_payload_enc_arg(enc, w->dstBinding);
    sbt_payload_enc_arg(enc, w->dstArrayElement);
    sbt_payload_enc_arg(enc, t);
    sbt_payload_enc_arg(enc, w->descriptorCount);
    for (uint32_t i = 0; i < w->descriptorCount; i++) {
        uint64_t a[CAP_DESC_TUPLE] = {0};
        if (is_buffer_type(t) && w->pBufferInfo) {
            a[0] = CAP_H(w->pBufferInfo[i].buffer);
            a[1] = w->pBufferInfo[i].offset;
            a[2] = w->pBufferInfo[i].range;
        } else if (is_texel_type(t) && w->pTexelBufferView) {
            a[3] = CAP_H(w->pTexelBufferView[i]);
        } else if (cap_is_image_desc(t) && w->pImageInfo) { /* view, sampler, layout */
            if (t != VK_DESCRIPTOR_TYPE_SAMPLER) {
                a[0] = CAP_H(w->pImageInfo[i].imageView);
                a[2] = w->pImageInfo[i].imageLayout;
            }
            if (t == VK_DESCRIPTOR_TYPE_SAMPLER || t == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER)
                a[1] = CAP_H(w->pImageInfo[i].sampler);
        }
        for (uint32_t k = 0; k < CAP_DESC_TUPLE; k++)
            sbt_payload_enc_arg(enc, a[k]);
    }
}

/* The number of arguments of the write at a[0..n), 0 if it does not fit. */
static uint32_t write_len(const uint64_t *a, uint32_t n)
{
    if (n < 4 || a[3] > (n - 4) / CAP_DESC_TUPLE)
        return 0;
    return 4 + (uint32_t)a[3] * CAP_DESC_TUPLE;
}

uint32_t cap_dset_apply(struct cap_dset *s, const uint64_t *a, uint32_t n)
{
    uint32_t len = write_len(a, n);
    for (uint32_t i = 0; len && i < a[3]; i++) {
        const uint64_t *x = a + 4 + i * CAP_DESC_TUPLE;
        uint32_t imm = 0;
        struct cap_slot *sl = dset_slot(s, (uint32_t)a[0], (uint32_t)(a[1] + i), &imm);
        if (!sl)
            continue;
        if (cap_is_image_desc((uint32_t)a[2])) {
            /* the view by handle (its image and subresources are looked up when a dispatch
             * uses it), the sampler by capture id (an immutable one stays the layout's) */
            struct cap_sampler *sm = imm ? NULL : cap_obj_find(x[1], CAP_T_SAMPLER);
            *sl = (struct cap_slot){
                (uint32_t)a[2], 0,      0, 0, x[0], imm ? sl->imm : sm ? sm->o.id : 0,
                (uint32_t)x[2], sl->imm};
        } else {
            *sl = (struct cap_slot){(uint32_t)a[2], x[0], x[1], x[2], x[3], 0, 0, sl->imm};
        }
    }
    return len;
}

uint32_t cap_write_ids(uint64_t *a, uint32_t n)
{
    uint32_t len = write_len(a, n);
    for (uint32_t i = 0; len && i < a[3]; i++) {
        uint64_t *x = a + 4 + i * CAP_DESC_TUPLE;
        if (cap_is_image_desc((uint32_t)a[2])) { /* view, sampler, layout */
            struct cap_iview *iv = cap_obj_find(x[0], CAP_T_IVIEW);
            struct cap_sampler *sm = cap_obj_find(x[1], CAP_T_SAMPLER);
            x[0] = iv ? iv->o.id : 0;
            x[1] = sm ? sm->o.id : 0;
            continue;
        }
        struct cap_buf *b = cap_obj_find(x[0], CAP_T_BUF);
        struct cap_bview *v = cap_obj_find(x[3], CAP_T_BVIEW);
        if (x[2] == VK_WHOLE_SIZE && b && x[1] <= b->size)
            x[2] = b->size - x[1];
        x[0] = b ? b->o.id : 0;
        x[3] = v ? v->o.id : 0;
    }
    return len;
}

/* One WRITE_SET record for w, its slots updated. Descriptors of the types cap_desc_recorded
 * does not take (inline uniform blocks, acceleration structures) are not recorded: the
 * dispatches that use them would replay without them, so the trace says so (via names the call
 * that wrote it). */
static void enc_write_set(struct cap_dev *d, struct sbt_payload_enc *enc,
                          const VkWriteDescriptorSet *w, const char *via)
{
    if (!cap_desc_recorded(w->descriptorType)) {
        char what[160];
        snprintf(what, sizeof what, "%s (%s)", via, cap_desc_why(w->descriptorType));
        cap_vk_count_affecting(cap_unmod_id(what, SBT_UNMODELLED_AFFECTS, 1), d);
        return;
    }
    struct cap_dset *s = cap_obj_find(CAP_H(w->dstSet), CAP_T_DSET);
    if (!s)
        return;
    cap.shadow_gen++; /* the slots are about to change */
    sbt_payload_enc_begin(enc, SBT_VK_WRITE_SET);
    sbt_payload_enc_arg(enc, s->o.id);
    size_t first = enc->n_args;
    cap_enc_write(enc, w);
    if (!enc->status) {
        cap_dset_apply(s, enc->args + first, (uint32_t)(enc->n_args - first));
        cap_write_ids(enc->args + first, (uint32_t)(enc->n_args - first));
    }
    sbt_payload_enc_end(enc, NULL, 0);
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
    struct sbt_payload_enc enc = {0};
    for (uint32_t i = 0; i < nw; i++)
        enc_write_set(d, &enc, &w[i], "vkUpdateDescriptorSets");
    for (uint32_t i = 0; i < nc; i++) {
        struct cap_dset *src = cap_obj_find(CAP_H(c[i].srcSet), CAP_T_DSET);
        struct cap_dset *dst = cap_obj_find(CAP_H(c[i].dstSet), CAP_T_DSET);
        if (!src || !dst)
            continue;
        cap.shadow_gen++;
        for (uint32_t k = 0; k < c[i].descriptorCount; k++) {
            uint32_t imm = 0;
            struct cap_slot *a = dset_slot(src, c[i].srcBinding, c[i].srcArrayElement + k, NULL);
            struct cap_slot *b = dset_slot(dst, c[i].dstBinding, c[i].dstArrayElement + k, &imm);
            if (a && b) {
                uint64_t keep = b->sampler, keep_imm = b->imm;
                *b = *a;
                b->imm = keep_imm; /* the destination layout's */
                if (imm)           /* an immutable sampler is not copied over */
                    b->sampler = keep;
            }
        }
        sbt_payload_put(&enc, SBT_VK_COPY_SET,
                        (uint64_t[]){src->o.id, c[i].srcBinding, c[i].srcArrayElement, dst->o.id,
                                     c[i].dstBinding, c[i].dstArrayElement, c[i].descriptorCount},
                        7, NULL, 0);
    }
    if (enc.len)
        cap_emit_marker(d, "vkUpdateDescriptorSets", &enc, t0);
    sbt_payload_enc_free(&enc);
    pthread_mutex_unlock(&cap.mu);
}

/* ========================================================================================== */
/* Update templates                                                                           */
/* ========================================================================================== */

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
    pthread_mutex_lock(&cap.mu);
    struct cap_templ *t = cap_obj_new(sizeof *t, CAP_T_TEMPL,
                                      VK_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE, CAP_H(*out), d);
    if (t) {
        t->type = ci->templateType;
        t->bind_point = ci->pipelineBindPoint;
    }
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

void cap_templ_writes(const struct cap_templ *t, const void *data,
                      void (*fn)(void *ctx, const VkWriteDescriptorSet *w), void *ctx)
{
    enum { CHUNK = 64 };
    for (uint32_t i = 0; t && data && i < t->n_e; i++) {
        const struct cap_templ_entry *x = &t->e[i];
        const uint8_t *base = (const uint8_t *)data + x->offset;
        if (x->type == VK_DESCRIPTOR_TYPE_INLINE_UNIFORM_BLOCK) {
            /* count is bytes, the data one block at offset (stride is ignored) */
            VkWriteDescriptorSetInlineUniformBlock ib = {
                .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET_INLINE_UNIFORM_BLOCK,
                .dataSize = x->count,
                .pData = base};
            VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .pNext = &ib,
                                      .dstBinding = x->binding,
                                      .dstArrayElement = x->elem,
                                      .descriptorCount = x->count,
                                      .descriptorType = x->type};
            fn(ctx, &w);
            continue;
        }
        VkDescriptorBufferInfo bi[CHUNK];
        VkBufferView bv[CHUNK];
        VkDescriptorImageInfo ii[CHUNK];
        VkAccelerationStructureKHR as[CHUNK];
        for (uint32_t k0 = 0; k0 < x->count; k0 += CHUNK) {
            uint32_t n = x->count - k0 < CHUNK ? x->count - k0 : CHUNK;
            VkWriteDescriptorSetAccelerationStructureKHR wa = {
                .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET_ACCELERATION_STRUCTURE_KHR,
                .accelerationStructureCount = n,
                .pAccelerationStructures = as};
            VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstBinding = x->binding,
                                      .dstArrayElement = x->elem + k0,
                                      .descriptorCount = n,
                                      .descriptorType = x->type,
                                      .pImageInfo = ii,
                                      .pBufferInfo = bi,
                                      .pTexelBufferView = bv};
            if (x->type == VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_KHR)
                w.pNext = &wa;
            for (uint32_t k = 0; k < n; k++) {
                const uint8_t *p = base + (k0 + k) * x->stride;
                if (is_buffer_type(x->type))
                    memcpy(&bi[k], p, sizeof bi[k]);
                else if (is_texel_type(x->type))
                    memcpy(&bv[k], p, sizeof bv[k]);
                else if (x->type == VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_KHR)
                    memcpy(&as[k], p, sizeof as[k]);
                else
                    memcpy(&ii[k], p, sizeof ii[k]);
            }
            fn(ctx, &w);
        }
    }
}

struct set_templ_ctx {
    struct cap_dev *d;
    struct sbt_payload_enc *enc;
    VkDescriptorSet set;
};

static void set_templ_write(void *ctx, const VkWriteDescriptorSet *w)
{
    struct set_templ_ctx *c = ctx;
    VkWriteDescriptorSet x = *w;
    x.dstSet = c->set;
    enc_write_set(c->d, c->enc, &x, "vkUpdateDescriptorSetWithTemplate");
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
    struct sbt_payload_enc enc = {0};
    struct set_templ_ctx c = {d, &enc, set};
    cap_templ_writes(cap_obj_find(CAP_H(h), CAP_T_TEMPL), data, set_templ_write, &c);
    if (enc.len)
        cap_emit_marker(d, "vkUpdateDescriptorSetWithTemplate", &enc, t0);
    sbt_payload_enc_free(&enc);
    pthread_mutex_unlock(&cap.mu);
}
