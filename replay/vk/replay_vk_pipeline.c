/*
 * replay/vk/replay_vk_pipeline.c — the Vulkan backend: descriptor set layouts, pipeline layouts and
 * compute pipelines, made from the trace's kernel rows (prepare) and layout markers. A pipeline
 * that cannot be made is kept with its reason; the first dispatch that uses it fails with it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "format/sbt_vk.h"
#include "replay/vk/replay_vk_int.h"

/* ========================================================================================== */
/* prepare: modules, layouts, pipelines                                                       */
/* ========================================================================================== */

static void setlayout_free(struct setlayout *s)
{
    if (!s)
        return;
    free(s->binding);
    free(s->type);
    free(s->count);
    free(s->flags);
    free(s);
}

struct setlayout *vkr_make_setlayout(struct vkbe *b, const struct sbt_payload_rec *slr,
                                     struct sbt_payload_dec *dec, int *st)
{
    /* slr's arguments live in the decoder: read them before decoding further */
    uint64_t id = sbt_payload_arg(slr, 0), lflags = sbt_payload_arg(slr, 1);
    uint32_t n_b = (uint32_t)sbt_payload_arg(slr, 2);
    if ((*st = vkr_check_set_layout(slr)) < 0)
        return NULL;
    struct setlayout *s = sbt_map_getp(&b->setlayouts, id);
    struct sbt_payload_rec r;
    /* each SET_BINDING record takes at least 4 bytes of what is left */
    if (sbt_payload_arg(slr, 2) > (dec->len - dec->pos) / 4) {
        *st = replay__fail(SBT_ECORRUPT,
                           "set layout %" PRIu64 ": %" PRIu64 " bindings announced, %zu bytes left",
                           id, sbt_payload_arg(slr, 2), dec->len - dec->pos);
        return NULL;
    }
    VkDescriptorSetLayoutBinding *lb = calloc(n_b ? n_b : 1, sizeof *lb);
    VkDescriptorBindingFlags *bf = calloc(n_b ? n_b : 1, sizeof *bf);
    struct setlayout *ns = s ? NULL : calloc(1, sizeof *ns);
    if (!lb || !bf || (!s && !ns)) {
        free(lb);
        free(bf);
        free(ns);
        *st = replay__fail(SBT_ENOMEM, "out of memory");
        return NULL;
    }
    uint32_t k = 0, any_flags = 0;
    for (; k < n_b; k++) {
        size_t save = dec->pos;
        if (sbt_payload_dec_next(dec, &r) != 1 || r.call != SBT_VK_SET_BINDING) {
            dec->pos = save;
            break;
        }
        if ((*st = vkr_check_set_binding(&r, lflags)) < 0) {
            free(lb);
            free(bf);
            free(ns);
            return NULL;
        }
        lb[k] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)sbt_payload_arg(&r, 0),
                                               .descriptorType =
                                                   (VkDescriptorType)sbt_payload_arg(&r, 1),
                                               .descriptorCount = (uint32_t)sbt_payload_arg(&r, 2),
                                               .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
        bf[k] = (VkDescriptorBindingFlags)sbt_payload_arg(&r, 4);
        any_flags |= bf[k];
    }
    /* a variable descriptor count is for the layout's highest binding number only */
    int32_t var = -1;
    for (uint32_t i = 0; i < k; i++)
        if (bf[i] & VK_DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT_BIT)
            var = (int32_t)i;
    for (uint32_t i = 0; var >= 0 && i < k; i++)
        if (lb[i].binding > lb[var].binding) {
            *st = replay__fail(SBT_ECORRUPT,
                               "set layout %" PRIu64 ": binding %u has a variable descriptor "
                               "count but binding %u comes after it",
                               id, lb[var].binding, lb[i].binding);
            free(lb);
            free(bf);
            free(ns);
            return NULL;
        }
    if (s) {
        free(lb);
        free(bf);
        return s;
    }
    ns->n_b = k;
    ns->var = var;
    ns->uab = (lflags & VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT) != 0;
    ns->binding = calloc(k + 1, sizeof *ns->binding);
    ns->type = calloc(k + 1, sizeof *ns->type);
    ns->count = calloc(k + 1, sizeof *ns->count);
    ns->flags = calloc(k + 1, sizeof *ns->flags);
    for (uint32_t i = 0; ns->binding && ns->type && ns->count && ns->flags && i < k; i++) {
        ns->binding[i] = lb[i].binding;
        ns->type[i] = lb[i].descriptorType;
        ns->count[i] = lb[i].descriptorCount;
        ns->flags[i] = bf[i];
    }
    /* the binding flags as captured (partially bound, variable count, update after bind; the
     * trace's device enabled the features they need); of the layout flags only the
     * update-after-bind pool: a push-descriptor layout becomes an ordinary one, since replay
     * allocates the sets of every dispatch, pushed or bound */
    VkDescriptorSetLayoutBindingFlagsCreateInfo bfci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_BINDING_FLAGS_CREATE_INFO,
        .bindingCount = k,
        .pBindingFlags = bf};
    VkDescriptorSetLayoutCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .pNext = any_flags ? &bfci : NULL,
        .flags = ns->uab ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT : 0,
        .bindingCount = k,
        .pBindings = lb};
    VkResult vr = vkCreateDescriptorSetLayout(b->dev, &ci, NULL, &ns->dsl);
    free(lb);
    free(bf);
    if (vr != VK_SUCCESS || !ns->binding || !ns->type || !ns->count || !ns->flags ||
        sbt_map_putp(&b->setlayouts, id, ns) < 0) {
        if (vr == VK_SUCCESS)
            vkDestroyDescriptorSetLayout(b->dev, ns->dsl, NULL);
        setlayout_free(ns);
        *st = vr != VK_SUCCESS ? VKFAIL(vr, "vkCreateDescriptorSetLayout")
                               : replay__fail(SBT_ENOMEM, "out of memory");
        return NULL;
    }
    return ns;
}

struct playout *vkr_make_playout(struct vkbe *b, const struct sbt_payload_rec *r, int *st)
{
    uint64_t id = sbt_payload_arg(r, 0);
    struct playout *p = sbt_map_getp(&b->playouts, id);
    if (p)
        return p;
    p = calloc(1, sizeof *p);
    if (!p) {
        *st = replay__fail(SBT_ENOMEM, "out of memory");
        return NULL;
    }
    if ((*st = vkr_check_playout(&b->lim, r, MAX_SETS)) < 0) {
        free(p);
        return NULL;
    }
    uint32_t ns = (uint32_t)sbt_payload_arg(r, 2);
    VkDescriptorSetLayout dsl[MAX_SETS];
    for (uint32_t i = 0; i < ns; i++) {
        p->sets[i] = sbt_payload_arg(r, 3 + i);
        struct setlayout *s = sbt_map_getp(&b->setlayouts, p->sets[i]);
        if (!s) {
            uint64_t missing = p->sets[i];
            free(p);
            *st = replay__fail(SBT_EINVAL,
                               "pipeline layout %" PRIu64 ": set layout %" PRIu64
                               " was never described",
                               id, missing);
            return NULL;
        }
        dsl[i] = s->dsl;
    }
    p->n_sets = ns;
    uint32_t np = (uint32_t)sbt_payload_arg(r, 3 + ns); /* <= 32: checked */
    VkPushConstantRange pr[32];
    for (uint32_t i = 0; i < np; i++) {
        p->push_stage[i] = (uint32_t)sbt_payload_arg(r, 4 + ns + 3 * i);
        p->push_off[i] = (uint32_t)sbt_payload_arg(r, 5 + ns + 3 * i);
        p->push_size[i] = (uint32_t)sbt_payload_arg(r, 6 + ns + 3 * i);
        pr[i] = (VkPushConstantRange){p->push_stage[i], p->push_off[i], p->push_size[i]};
    }
    p->n_push = np;
    VkPipelineLayoutCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = ns,
                                     .pSetLayouts = dsl,
                                     .pushConstantRangeCount = np,
                                     .pPushConstantRanges = pr};
    VkResult vr = vkCreatePipelineLayout(b->dev, &ci, NULL, &p->pl);
    if (vr != VK_SUCCESS || sbt_map_putp(&b->playouts, id, p) < 0) {
        if (vr == VK_SUCCESS)
            vkDestroyPipelineLayout(b->dev, p->pl, NULL);
        free(p);
        *st = vr != VK_SUCCESS ? VKFAIL(vr, "vkCreatePipelineLayout")
                               : replay__fail(SBT_ENOMEM, "out of memory");
        return NULL;
    }
    return p;
}

/* Layout records (SET_LAYOUT + SET_BINDING*, PIPELINE_LAYOUT) of a kernel ext or a marker. */
static int layouts_from(struct vkbe *b, const void *data, size_t len)
{
    struct sbt_payload_dec dec;
    struct sbt_payload_rec r;
    int st = 0, k = 0;
    /* set layouts first: the capture writes PIPELINE_LAYOUT before the sets it names */
    for (int pass = 0; pass < 2 && st == 0 && k >= 0; pass++) {
        sbt_payload_dec_init(&dec, data, len);
        while (st == 0 && (k = sbt_payload_dec_next(&dec, &r)) == 1) {
            if (pass == 0 && r.call == SBT_VK_SET_LAYOUT) {
                vkr_make_setlayout(b, &r, &dec, &st);
            } else if (pass == 1 && r.call == SBT_VK_PIPELINE_LAYOUT) {
                vkr_make_playout(b, &r, &st);
            }
        }
        sbt_payload_dec_free(&dec);
    }
    if (st == 0 && k < 0)
        st = replay__fail(SBT_ECORRUPT, "%s", sbt_errmsg());
    return st;
}

static void pipe_error(struct vkbe *b, uint64_t id, const char *msg)
{
    struct pipe *p = calloc(1, sizeof *p);
    if (!p)
        return;
    p->error = strdup(msg);
    if (sbt_map_putp(&b->pipes, id, p) < 0) {
        free(p->error);
        free(p);
    }
}

/* The descriptors the pipeline's shader declares (struct pipe.used), from its program's
 * reflection records. */
static int used_bindings(const struct sbt_program *prog, struct pipe *p)
{
    struct sbt_payload_dec dec;
    struct sbt_payload_rec r;
    int reflected = 0;
    p->used_all = 1;
    if (prog->ext.kind != SBT_VK_EXT_MODULE)
        return 0;
    sbt_payload_dec_init(&dec, prog->ext.data, prog->ext.len);
    while (sbt_payload_dec_next(&dec, &r) == 1) {
        if (r.call == SBT_VK_MODULE) {
            reflected = sbt_payload_arg(&r, 3) != 0;
        } else if (r.call == SBT_VK_MODULE_BINDING && reflected) {
            uint64_t set = sbt_payload_arg(&r, 0), binding = sbt_payload_arg(&r, 1);
            if (set > UINT32_MAX || binding > UINT32_MAX)
                continue; /* no layout has it: the dispatch check names it */
            uint64_t *v = realloc(p->used, (p->n_used + 1) * sizeof *v);
            if (!v) {
                sbt_payload_dec_free(&dec);
                return SBT_ENOMEM;
            }
            p->used = v;
            p->used[p->n_used++] = set << 32 | binding;
        }
    }
    sbt_payload_dec_free(&dec);
    p->used_all = !reflected;
    return 0;
}

/* A shader that dereferences buffer device addresses reads pointers the program stored as
 * data: it replays right only with every buffer at its captured address, which takes
 * bufferDeviceAddressCaptureReplay at capture (the trace's opaque addresses) and here. 0, or
 * REPLAY_ENODEV saying which is missing. */
static int addresses_ok(struct vkbe *b, const struct sbt_program *prog, uint64_t id)
{
    struct sbt_payload_dec dec;
    struct sbt_payload_rec r;
    if (!prog || prog->ext.kind != SBT_VK_EXT_MODULE || b->addr_replay)
        return 0;
    int f = sbt_payload_find(&dec, prog->ext.data, prog->ext.len, SBT_VK_MODULE, &r);
    uint64_t uses = f == 1 ? sbt_payload_arg(&r, 4) : 0;
    sbt_payload_dec_free(&dec);
    if (!uses)
        return 0;
    return replay__fail(REPLAY_ENODEV,
                        "pipeline %" PRIu64 ": its shader uses buffer device addresses, which "
                        "replay must give every buffer again, and %s",
                        id,
                        !b->addr_capture
                            ? "the capture device did not offer bufferDeviceAddressCaptureReplay "
                              "(the trace holds no opaque capture addresses to replay them at)"
                            : "this device lacks bufferDeviceAddressCaptureReplay");
}

static int make_pipeline(struct vkbe *b, const struct sbt_kernel *k)
{
    if (k->ext.kind != SBT_VK_EXT_PIPELINE)
        return 0;
    struct sbt_payload_dec dec;
    struct sbt_payload_rec pr;
    int st = layouts_from(b, k->ext.data, k->ext.len);
    int f = sbt_payload_find(&dec, k->ext.data, k->ext.len, SBT_VK_PIPELINE, &pr);
    if (f != 1) {
        sbt_payload_dec_free(&dec);
        return 0;
    }
    uint64_t id = sbt_payload_arg(&pr, 0);
    char msg[512];
    uint32_t flags = 0;
    if (st == 0)
        st = vkr_check_pipeline(&b->lim, &pr, &flags);
    if (st == REPLAY_ENODEV) { /* a limit the trace needs: say so before replaying anything */
        sbt_payload_dec_free(&dec);
        return st;
    }
    if (st < 0) {
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": %s", id, replay_errmsg());
        pipe_error(b, id, msg);
        sbt_payload_dec_free(&dec);
        return 0;
    }
    uint64_t layout = sbt_payload_arg(&pr, 3);
    struct playout *pl = sbt_map_getp(&b->playouts, layout);
    const struct sbt_program *prog = sbt_reader_program(b->r, k->program);
    if ((st = addresses_ok(b, prog, id)) < 0) { /* say so before replaying anything */
        sbt_payload_dec_free(&dec);
        return st;
    }
    VkShaderModule mod = VK_NULL_HANDLE;
    void *code = NULL;
    size_t code_len = 0;
    if (!pl) {
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": its layout %" PRIu64 " was not captured",
                 id, layout);
        goto bad;
    }
    if (!prog || sbt_hash_is_zero(prog->blob)) {
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": its SPIR-V module was not captured", id);
        goto bad;
    }
    st = sbt_reader_blob(b->r, &prog->blob, &code, &code_len);
    if (st < 0) {
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": SPIR-V blob: %s", id, sbt_errmsg());
        goto bad;
    }
    if (vkr_check_spirv(code, code_len) < 0) {
        free(code);
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": %s", id, replay_errmsg());
        goto bad;
    }
    int reads_numwg = vkr_spirv_reads_numwg(code, code_len) != 0;
    if (b->perturb.kind == REPLAY_PERTURB_SPLIT) /* its dispatches are cut with a base */
        flags |= VK_PIPELINE_CREATE_DISPATCH_BASE_BIT;
    VkShaderModuleCreateInfo mci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = code_len, .pCode = code};
    VkResult vr = vkCreateShaderModule(b->dev, &mci, NULL, &mod);
    free(code);
    if (vr != VK_SUCCESS) {
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": vkCreateShaderModule: VkResult %d", id,
                 (int)vr);
        goto bad;
    }
    /* specialization */
    VkSpecializationMapEntry me[64];
    uint32_t nme = 0;
    struct sbt_payload_dec d2;
    struct sbt_payload_rec r2;
    sbt_payload_dec_init(&d2, k->ext.data, k->ext.len);
    int bad_spec = 0;
    /* robustness as captured, for the pipeline and its stage: the program enabled
     * VK_EXT_pipeline_robustness to chain it, so this device has it (the trace's extensions),
     * unless it asked only for the default or none and the device lacks it (no_robustness) */
    VkPipelineRobustnessCreateInfoEXT rob[2] = {{0}, {0}};
    while (!bad_spec && sbt_payload_dec_next(&d2, &r2) == 1) {
        if (r2.call == SBT_VK_PIPELINE_ROBUSTNESS && !b->no_robustness) {
            uint64_t where = sbt_payload_arg(&r2, 0);
            if (r2.n_arg < 5 || where > 1) {
                bad_spec = replay__fail(SBT_ECORRUPT,
                                        "a robustness record with %u arguments "
                                        "for where %" PRIu64,
                                        r2.n_arg, where);
                break;
            }
            rob[where] = (VkPipelineRobustnessCreateInfoEXT){
                .sType = VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT,
                .storageBuffers = (VkPipelineRobustnessBufferBehaviorEXT)sbt_payload_arg(&r2, 1),
                .uniformBuffers = (VkPipelineRobustnessBufferBehaviorEXT)sbt_payload_arg(&r2, 2),
                .vertexInputs = (VkPipelineRobustnessBufferBehaviorEXT)sbt_payload_arg(&r2, 3),
                .images = (VkPipelineRobustnessImageBehaviorEXT)sbt_payload_arg(&r2, 4)};
            continue;
        }
        if (r2.call != SBT_VK_SPEC_ENTRY)
            continue;
        if (nme == 64) {
            bad_spec = replay__fail(REPLAY_EUNSUPPORTED, "more than 64 specialization constants");
        } else if (!(bad_spec = vkr_check_spec_entry(&r2, pr.n_bytes))) {
            me[nme++] = (VkSpecializationMapEntry){(uint32_t)sbt_payload_arg(&r2, 0),
                                                   (uint32_t)sbt_payload_arg(&r2, 1),
                                                   (size_t)sbt_payload_arg(&r2, 2)};
        }
    }
    sbt_payload_dec_free(&d2);
    if (bad_spec) {
        vkDestroyShaderModule(b->dev, mod, NULL);
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": %s", id, replay_errmsg());
        goto bad;
    }
    VkSpecializationInfo si = {
        .mapEntryCount = nme, .pMapEntries = me, .dataSize = pr.n_bytes, .pData = pr.bytes};
    const char *entry = sbt_reader_string(b->r, k->name);
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rs = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = (uint32_t)sbt_payload_arg(&pr, 8)};
    if (rob[1].sType) { /* the stage's robustness, then its subgroup size */
        rob[1].pNext = rs.requiredSubgroupSize ? &rs : NULL;
    }
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .pNext = rob[0].sType ? &rob[0] : NULL,
        .flags = flags,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .pNext = rob[1].sType              ? (const void *)&rob[1]
                           : rs.requiredSubgroupSize ? (const void *)&rs
                                                     : NULL,
                  .flags = (VkPipelineShaderStageCreateFlags)sbt_payload_arg(&pr, 10),
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod,
                  .pName = entry && *entry ? entry : "main",
                  .pSpecializationInfo = nme || pr.n_bytes ? &si : NULL},
        .layout = pl->pl};
    struct pipe *p = calloc(1, sizeof *p);
    if (!p) {
        vkDestroyShaderModule(b->dev, mod, NULL);
        sbt_payload_dec_free(&dec);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    vr = vkCreateComputePipelines(b->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p->pipe);
    vkDestroyShaderModule(b->dev, mod, NULL);
    sbt_payload_dec_free(&dec);
    if (vr != VK_SUCCESS) {
        free(p);
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": vkCreateComputePipelines: VkResult %d", id,
                 (int)vr);
        pipe_error(b, id, msg);
        return 0;
    }
    p->layout = layout;
    p->reads_numwg = reads_numwg;
    if (used_bindings(prog, p) < 0 || sbt_map_putp(&b->pipes, id, p) < 0) {
        vkDestroyPipeline(b->dev, p->pipe, NULL);
        free(p->used);
        free(p);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    return 0;
bad:
    pipe_error(b, id, msg);
    sbt_payload_dec_free(&dec);
    return 0;
}

int vkr_prepare(void *be)
{
    struct vkbe *b = be;
    uint32_t nk = 0;
    const struct sbt_kernel *k = sbt_reader_kernels(b->r, &nk);
    for (uint32_t i = 0; i < nk; i++) {
        int st = make_pipeline(b, &k[i]);
        if (st < 0)
            return st;
    }
    return 0;
}
