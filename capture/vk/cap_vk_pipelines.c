/*
 * capture/vk/cap_vk_pipelines.c — shader modules (SPIR-V stored as a program blob, with the
 * reflection of cap_vk_spirv.c), pipeline layouts and compute pipelines (kernel rows with their
 * local size, specialization, shader stage flags, required subgroup size, create flags of both
 * widths and layout). A module chained into the stage (maintenance5) gets a program row of its
 * own. Pipeline caches are not recorded: a pipeline is recorded whole, and replay compiles it
 * afresh. Graphics pipelines are unmodelled (counted; only draws use them, and draws mark the
 * trace incomplete).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

/* ========================================================================================== */
/* Shader modules, layouts, pipelines                                                         */
/* ========================================================================================== */

/* The program row of a module (its SPIR-V as a blob, the reflection records); 0, or -1 when out
 * of memory (recording stops). cap.mu held. */
static int module_row(struct cap_dev *d, struct cap_module *m, const VkShaderModuleCreateInfo *ci)
{
    const struct cap_refl *refl = &m->refl;
    struct cap_ev *e = cap_ev_new(CAP_EV_PROGRAM);
    if (!e)
        return -1;
    struct sbt_payload_enc enc = {0};
    sbt_payload_put(&enc, SBT_VK_MODULE,
                    (uint64_t[]){m->o.id, ci->flags, ci->codeSize, refl->ok, refl->addresses}, 5,
                    NULL, 0);
    for (uint32_t i = 0; i < refl->n_b; i++) {
        const struct cap_refl_binding *b = &refl->b[i];
        sbt_payload_put(&enc, SBT_VK_MODULE_BINDING,
                        (uint64_t[]){b->set, b->binding, b->access, b->storage, b->array}, 5, NULL,
                        0);
    }
    for (uint32_t i = 0; i < refl->n_e; i++) {
        const struct cap_refl_entry *x = &refl->e[i];
        sbt_payload_put(&enc, SBT_VK_ENTRY_POINT,
                        (uint64_t[]){x->local[0], x->local[1], x->local[2], x->spec_id[0],
                                     x->spec_id[1], x->spec_id[2]},
                        6, x->name, strlen(x->name));
    }
    e->dev_id = d->id;
    e->prog_id = m->o.id;
    e->data = malloc(ci->codeSize ? ci->codeSize : 1);
    if (e->data) {
        memcpy(e->data, ci->pCode, ci->codeSize);
        e->data_len = ci->codeSize;
    }
    sbt_hash h = sbt_hash_bytes(ci->pCode, ci->codeSize);
    snprintf(m->label, sizeof m->label, "spirv:%08llx", (unsigned long long)(h.hi >> 32));
    e->str = strdup(m->label);
    e->payload = enc.buf;
    e->payload_len = enc.len;
    e->ext_kind = SBT_VK_EXT_MODULE;
    int bad = !e->data || sbt_payload_enc_status(&enc);
    free(enc.args);
    if (bad) {
        cap_ev_free_chain(e);
        cap_fail("out of memory storing a shader module");
        return -1;
    }
    cap_emit(e);
    return 0;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateShaderModule(VkDevice device,
                                                      const VkShaderModuleCreateInfo *ci,
                                                      const VkAllocationCallbacks *alloc,
                                                      VkShaderModule *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    VkResult r =
        cap_vk_result(d->fn.CreateShaderModule(device, ci, alloc, out), "vkCreateShaderModule");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    static const uint32_t known[] = {
        VK_STRUCTURE_TYPE_SHADER_MODULE_VALIDATION_CACHE_CREATE_INFO_EXT, /* a cache: a hint */
        VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
    };
    cap_chain_check(d, "vkCreateShaderModule", ci->pNext, known, sizeof known / sizeof known[0]);
    struct cap_refl refl;
    cap_spirv_reflect(ci->pCode, ci->codeSize / 4, &refl);
    pthread_mutex_lock(&cap.mu);
    struct cap_module *m =
        cap_obj_new(sizeof *m, CAP_T_MODULE, VK_OBJECT_TYPE_SHADER_MODULE, CAP_H(*out), d);
    if (m) {
        m->refl = refl;
        module_row(d, m, ci);
    } else {
        cap_refl_free(&refl);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyShaderModule(VkDevice device, VkShaderModule mod,
                                                   const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (mod && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_module *m = cap_obj_del(CAP_H(mod), CAP_T_MODULE);
        if (m)
            cap_refl_free(&m->refl);
        free(m);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyShaderModule(device, mod, alloc);
}

static void enc_pipeline_layout(struct sbt_payload_enc *enc, const struct cap_playout *pl,
                                const VkPipelineLayoutCreateInfo *ci)
{
    sbt_payload_enc_begin(enc, SBT_VK_PIPELINE_LAYOUT);
    sbt_payload_enc_arg(enc, pl->o.id);
    sbt_payload_enc_arg(enc, ci ? ci->flags : 0);
    sbt_payload_enc_arg(enc, pl->n_sets);
    for (uint32_t i = 0; i < pl->n_sets; i++) {
        struct cap_dsl *l = cap_obj_find(pl->set_layout[i], CAP_T_DSL);
        sbt_payload_enc_arg(enc, l ? l->o.id : 0);
    }
    uint32_t np = ci && ci->pPushConstantRanges ? ci->pushConstantRangeCount : 0;
    sbt_payload_enc_arg(enc, np);
    for (uint32_t i = 0; i < np; i++) {
        sbt_payload_enc_arg(enc, ci->pPushConstantRanges[i].stageFlags);
        sbt_payload_enc_arg(enc, ci->pPushConstantRanges[i].offset);
        sbt_payload_enc_arg(enc, ci->pPushConstantRanges[i].size);
    }
    sbt_payload_enc_end(enc, NULL, 0);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreatePipelineLayout(VkDevice device,
                                                        const VkPipelineLayoutCreateInfo *ci,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkPipelineLayout *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r =
        cap_vk_result(d->fn.CreatePipelineLayout(device, ci, alloc, out), "vkCreatePipelineLayout");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    struct cap_playout *p =
        cap_obj_new(sizeof *p, CAP_T_PLAYOUT, VK_OBJECT_TYPE_PIPELINE_LAYOUT, CAP_H(*out), d);
    if (p) {
        p->n_sets = ci->setLayoutCount < CAP_MAX_SETS ? ci->setLayoutCount : CAP_MAX_SETS;
        for (uint32_t i = 0; i < p->n_sets; i++)
            p->set_layout[i] = CAP_H(ci->pSetLayouts[i]);
        enc_pipeline_layout(&p->rec, p, ci);
        for (uint32_t i = 0; i < p->n_sets; i++) {
            struct cap_dsl *l = cap_obj_find(p->set_layout[i], CAP_T_DSL);
            if (l)
                cap_enc_set_layout(&p->rec, l);
        }
        struct sbt_payload_enc enc = {0};
        enc_pipeline_layout(&enc, p, ci);
        cap_emit_marker(d, "vkCreatePipelineLayout", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyPipelineLayout(VkDevice device, VkPipelineLayout h,
                                                     const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (h && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_playout *p = cap_obj_del(CAP_H(h), CAP_T_PLAYOUT);
        if (p)
            sbt_payload_enc_free(&p->rec);
        free(p);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyPipelineLayout(device, h, alloc);
}

/* What a compute pipeline's create info and its stage may chain: recorded (required subgroup
 * size, flags2, an inline module, robustness), or feedback and hints results do not depend on.
 * Any other structure is counted as affecting, by name (cap_chain_check). */
static const uint32_t pipeline_known[] = {
#ifdef VK_KHR_maintenance5
    VK_STRUCTURE_TYPE_PIPELINE_CREATE_FLAGS_2_CREATE_INFO_KHR,
#endif
    VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
    VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
    VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT,
    VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO,
    VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
    VK_STRUCTURE_TYPE_PIPELINE_COMPILER_CONTROL_CREATE_INFO_AMD,
    VK_STRUCTURE_TYPE_SHADER_MODULE_VALIDATION_CACHE_CREATE_INFO_EXT,
};

/* A VkPipelineRobustnessCreateInfo of chain (the pipeline's: where 0, its stage's: 1): out-of-
 * bounds accesses read and write what it says, so replay must ask for the same. */
static void robustness(struct sbt_payload_enc *enc, const void *chain, uint32_t where)
{
    for (const VkBaseInStructure *s = chain; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT) {
            const VkPipelineRobustnessCreateInfoEXT *r = (const void *)s;
            sbt_payload_put(enc, SBT_VK_PIPELINE_ROBUSTNESS,
                            (uint64_t[]){where, r->storageBuffers, r->uniformBuffers,
                                         r->vertexInputs, r->images},
                            5, NULL, 0);
        }
}

static void pipeline_row(struct cap_dev *d, const VkComputePipelineCreateInfo *ci, VkPipeline h,
                         uint64_t cache_id)
{
    const VkPipelineShaderStageCreateInfo *st = &ci->stage;
    struct cap_module *m = cap_obj_find(CAP_H(st->module), CAP_T_MODULE);
    struct cap_playout *pl = cap_obj_find(CAP_H(ci->layout), CAP_T_PLAYOUT);
    uint32_t req_subgroup = 0, has_flags2 = 0;
    uint64_t flags2 = 0;
    const VkShaderModuleCreateInfo *inline_mod = NULL;
    for (const VkBaseInStructure *s = st->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO)
            req_subgroup = ((const VkPipelineShaderStageRequiredSubgroupSizeCreateInfo *)s)
                               ->requiredSubgroupSize;
        else if (s->sType == VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO)
            inline_mod = (const VkShaderModuleCreateInfo *)s;
#ifdef VK_KHR_maintenance5
    for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_PIPELINE_CREATE_FLAGS_2_CREATE_INFO_KHR) {
            flags2 = ((const VkPipelineCreateFlags2CreateInfoKHR *)s)->flags;
            has_flags2 = 1;
        }
#endif
    cap_chain_check(d, "vkCreateComputePipelines", ci->pNext, pipeline_known,
                    sizeof pipeline_known / sizeof pipeline_known[0]);
    cap_chain_check(d, "vkCreateComputePipelines", st->pNext, pipeline_known,
                    sizeof pipeline_known / sizeof pipeline_known[0]);
    /* maintenance5: the module's create info chained to the stage instead of a module; it gets
     * a program row of its own, not tracked as an object */
    struct cap_module inl;
    if (!m && !st->module && inline_mod) {
        memset(&inl, 0, sizeof inl);
        inl.o.id = cap_new_id();
        cap_spirv_reflect(inline_mod->pCode, inline_mod->codeSize / 4, &inl.refl);
        if (module_row(d, &inl, inline_mod) < 0) {
            cap_refl_free(&inl.refl);
            return;
        }
        m = &inl;
    }
    if (!m) {
        /* a module identifier, a pipeline binary, or a module made while not recording: the
         * dispatches of this pipeline cannot be replayed */
        cap_unmodelled(d, "vkCreateComputePipelines (shader module not captured)",
                       SBT_UNMODELLED_AFFECTS);
        return;
    }
    struct cap_pipeline *p =
        cap_obj_new(sizeof *p, CAP_T_PIPELINE, VK_OBJECT_TYPE_PIPELINE, CAP_H(h), d);
    if (!p)
        goto out;
    p->layout_handle = CAP_H(ci->layout);
    const char *entry = st->pName ? st->pName : "main";
    cap_spirv_local_size(&m->refl, entry, st->pSpecializationInfo, p->local);
    p->refl_ok = m->refl.ok;
    p->addresses = m->refl.addresses;
    if (m->refl.n_b) {
        p->acc = malloc(m->refl.n_b * sizeof *p->acc);
        if (p->acc) {
            memcpy(p->acc, m->refl.b, m->refl.n_b * sizeof *p->acc);
            p->n_acc = m->refl.n_b;
        } else {
            p->refl_ok = 0;
        }
    }
    const VkSpecializationInfo *sp = st->pSpecializationInfo;
    struct sbt_payload_enc enc = {0};
    sbt_payload_put(&enc, SBT_VK_PIPELINE,
                    (uint64_t[]){p->o.id, ci->flags, m->o.id, pl ? pl->o.id : 0, st->stage,
                                 p->local[0], p->local[1], p->local[2], req_subgroup, cache_id,
                                 st->flags, flags2, has_flags2},
                    13, sp && sp->pData ? sp->pData : NULL, sp && sp->pData ? sp->dataSize : 0);
    for (uint32_t i = 0; sp && sp->pMapEntries && i < sp->mapEntryCount; i++)
        sbt_payload_put(&enc, SBT_VK_SPEC_ENTRY,
                        (uint64_t[]){sp->pMapEntries[i].constantID, sp->pMapEntries[i].offset,
                                     sp->pMapEntries[i].size},
                        3, NULL, 0);
    robustness(&enc, ci->pNext, 0);
    robustness(&enc, st->pNext, 1);
    if (pl)
        sbt_payload_enc_raw(&enc, pl->rec.buf, pl->rec.len);
    struct cap_ev *e = cap_ev_new(CAP_EV_KERNEL);
    if (!e || sbt_payload_enc_status(&enc)) {
        cap_ev_free_chain(e);
        sbt_payload_enc_free(&enc);
        cap_fail("out of memory describing a pipeline");
        goto out;
    }
    e->dev_id = d->id;
    e->kernel_id = p->o.id;
    e->prog_id = m->o.id;
    e->str = strdup(entry);
    e->payload = enc.buf;
    e->payload_len = enc.len;
    e->ext_kind = SBT_VK_EXT_PIPELINE;
    enc.buf = NULL;
    sbt_payload_enc_free(&enc);
    cap_emit(e);
out:
    if (m == &inl)
        cap_refl_free(&inl.refl);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateComputePipelines(VkDevice device, VkPipelineCache cache,
                                                          uint32_t n,
                                                          const VkComputePipelineCreateInfo *ci,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkPipeline *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    VkResult r = cap_vk_result(d->fn.CreateComputePipelines(device, cache, n, ci, alloc, out),
                               "vkCreateComputePipelines");
    if ((r != VK_SUCCESS && r != VK_PIPELINE_COMPILE_REQUIRED) || !CAP_ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    for (uint32_t i = 0; i < n; i++)
        if (out[i])
            pipeline_row(d, &ci[i], out[i], 0);
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyPipeline(VkDevice device, VkPipeline h,
                                               const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (h && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_pipeline *p = cap_obj_del(CAP_H(h), CAP_T_PIPELINE);
        if (p)
            free(p->acc);
        free(p);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyPipeline(device, h, alloc);
}
