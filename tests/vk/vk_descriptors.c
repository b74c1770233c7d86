/*
 * tests/vk/vk_descriptors.c — compute programs that bind their buffers every way Vulkan offers,
 * one per mode, for the capture and replay tests (each must capture complete and replay bit for
 * bit):
 *
 *   push           saxpy (saxpy.comp) bound by vkCmdPushDescriptorSetKHR, two dispatches
 *                  per submission, the second pushing only binding 1 (incremental push)
 *   push-template  the same through vkCmdPushDescriptorSetWithTemplateKHR, a template of two
 *                  entries with a stride
 *   template       vkUpdateDescriptorSetWithTemplate of a set holding a uniform texel buffer, a
 *                  uniform buffer, a storage buffer and a storage texel buffer
 *   dynamic        a uniform and a storage buffer with dynamic offsets, four dispatches over
 *                  four windows in one command buffer
 *   push2          the maintenance6 forms (Vulkan 1.4): vkCmdPushDescriptorSet2KHR,
 *                  vkCmdPushDescriptorSetWithTemplate2KHR, vkCmdBindDescriptorSets2KHR with a
 *                  dynamic offset and vkCmdPushConstants2KHR
 *   indexing       descriptor indexing: a runtime array of storage buffers, partially bound,
 *                  with a variable descriptor count, updated after it was bound
 *
 * Prints what it computed (checksums), the same with or without capture; exits 4 when the
 * device lacks what the mode needs (push2 and indexing need Mesa 25's lavapipe).
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vk/vkt.h"

#define N 1024u

static const char *const push_ext[] = {"VK_KHR_push_descriptor"};

/* A set layout of n bindings 0..n-1 (types[i], one descriptor each). */
static VkDescriptorSetLayout set_layout(struct vkt *v, VkDescriptorSetLayoutCreateFlags flags,
                                        uint32_t n, const VkDescriptorType *types)
{
    VkDescriptorSetLayoutBinding b[8];
    for (uint32_t i = 0; i < n; i++)
        b[i] = (VkDescriptorSetLayoutBinding){i, types[i], 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo ci = {.sType =
                                              VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .flags = flags,
                                          .bindingCount = n,
                                          .pBindings = b};
    VkDescriptorSetLayout l;
    VKT_CHECK(vkCreateDescriptorSetLayout(v->dev, &ci, NULL, &l));
    return l;
}

static VkPipelineLayout pipeline_layout(struct vkt *v, uint32_t n, const VkDescriptorSetLayout *sl,
                                        uint32_t pc_bytes)
{
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, pc_bytes};
    VkPipelineLayoutCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = n,
                                     .pSetLayouts = sl,
                                     .pushConstantRangeCount = pc_bytes ? 1 : 0,
                                     .pPushConstantRanges = &pcr};
    VkPipelineLayout l;
    VKT_CHECK(vkCreatePipelineLayout(v->dev, &ci, NULL, &l));
    return l;
}

static VkPipeline pipeline(struct vkt *v, const char *shader, VkPipelineLayout layout,
                           VkShaderModule *mod)
{
    *mod = vkt_module(v, shader);
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = *mod,
                  .pName = "main"},
        .layout = layout};
    VkPipeline p;
    VKT_CHECK(vkCreateComputePipelines(v->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p));
    return p;
}

static VkDescriptorPool pool(struct vkt *v, VkDescriptorPoolCreateFlags flags, uint32_t n_sets)
{
    VkDescriptorPoolSize ps[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 64},
                                 {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 8},
                                 {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC, 4},
                                 {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC, 4},
                                 {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, 4},
                                 {VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, 4}};
    VkDescriptorPoolCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                     .flags = flags,
                                     .maxSets = n_sets,
                                     .poolSizeCount = sizeof ps / sizeof ps[0],
                                     .pPoolSizes = ps};
    VkDescriptorPool p;
    VKT_CHECK(vkCreateDescriptorPool(v->dev, &ci, NULL, &p));
    return p;
}

static VkDescriptorSet alloc_set(struct vkt *v, VkDescriptorPool p, VkDescriptorSetLayout l,
                                 const void *pnext)
{
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .pNext = pnext,
                                      .descriptorPool = p,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &l};
    VkDescriptorSet s;
    VKT_CHECK(vkAllocateDescriptorSets(v->dev, &ai, &s));
    return s;
}

static void print_sum(const char *what, uint32_t round, const struct vkt_buf *b)
{
    printf("%s round %u checksum %016llx\n", what, round,
           (unsigned long long)vkt_sum(0, b->map, b->size));
}

/* ---- push, push-template ------------------------------------------------------------------- */

struct saxpy_pc { /* saxpy.comp's */
    uint32_t a, n, iters;
};

static void fill_uints(struct vkt_buf *b, uint32_t base)
{
    for (uint32_t i = 0; i < b->size / 4; i++)
        ((uint32_t *)b->map)[i] = base + i * 2654435761u;
}

static int mode_push(const char *argv0, int templ)
{
    struct vkt v;
    struct vkt_opts o = {.extensions = push_ext, .n_extensions = 1};
    vkt_init_opts(&v, argv0, 1, &o);
    PFN_vkCmdPushDescriptorSetKHR push = vkt_dev_fn(&v, "vkCmdPushDescriptorSetKHR");
    PFN_vkCmdPushDescriptorSetWithTemplateKHR push_t =
        vkt_dev_fn(&v, "vkCmdPushDescriptorSetWithTemplateKHR");
    static const VkDescriptorType types[2] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    VkDescriptorSetLayout dsl =
        set_layout(&v, VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR, 2, types);
    VkPipelineLayout pl = pipeline_layout(&v, 1, &dsl, sizeof(struct saxpy_pc));
    VkShaderModule mod;
    VkPipeline pipe = pipeline(&v, "saxpy", pl, &mod);
    struct vkt_buf x, y, y2;
    vkt_buffer(&v, N * 4, 1, &x);
    vkt_buffer(&v, N * 4, 1, &y);
    vkt_buffer(&v, N * 4, 1, &y2);
    fill_uints(&x, 1);
    fill_uints(&y, 3);
    fill_uints(&y2, 7);
    /* the template's data: the two buffer infos 2 * sizeof apart (a stride), y first */
    struct {
        VkDescriptorBufferInfo info[4];
    } data = {{{y.buf, 0, VK_WHOLE_SIZE}, {0}, {x.buf, 0, VK_WHOLE_SIZE}, {0}}};
    VkDescriptorUpdateTemplate t = VK_NULL_HANDLE;
    if (templ) {
        VkDescriptorUpdateTemplateEntry e[2] = {
            {1, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 0, 2 * sizeof(VkDescriptorBufferInfo)},
            {0, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * sizeof(VkDescriptorBufferInfo),
             2 * sizeof(VkDescriptorBufferInfo)}};
        VkDescriptorUpdateTemplateCreateInfo tci = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_UPDATE_TEMPLATE_CREATE_INFO,
            .descriptorUpdateEntryCount = 2,
            .pDescriptorUpdateEntries = e,
            .templateType = VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_PUSH_DESCRIPTORS_KHR,
            .pipelineBindPoint = VK_PIPELINE_BIND_POINT_COMPUTE,
            .pipelineLayout = pl,
            .set = 0};
        VKT_CHECK(vkCreateDescriptorUpdateTemplate(v.dev, &tci, NULL, &t));
    }
    VkCommandBuffer cb = vkt_cmdbuf(&v);
    for (uint32_t round = 1; round <= 2; round++) {
        vkt_begin(cb);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        VkDescriptorBufferInfo bi[2] = {{x.buf, 0, VK_WHOLE_SIZE}, {y.buf, 0, VK_WHOLE_SIZE}};
        VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstBinding = 0,
                                  .descriptorCount = 2,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                  .pBufferInfo = bi};
        if (templ)
            push_t(cb, t, pl, 0, &data);
        else
            push(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &w);
        struct saxpy_pc pc = {round * 3 + 1, N, 4};
        vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, &pc);
        vkCmdDispatch(cb, N / 64, 1, 1);
        /* only y changes: binding 0 keeps x from the push above */
        VkDescriptorBufferInfo b1 = {y2.buf, 0, VK_WHOLE_SIZE};
        VkWriteDescriptorSet w1 = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                   .dstBinding = 1,
                                   .descriptorCount = 1,
                                   .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                   .pBufferInfo = &b1};
        push(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &w1);
        pc.a = 12345;
        vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, &pc);
        vkCmdDispatch(cb, N / 64, 1, 1);
        vkt_submit_wait(&v, cb);
        print_sum("y", round, &y);
        print_sum("y2", round, &y2);
    }
    if (t)
        vkDestroyDescriptorUpdateTemplate(v.dev, t, NULL);
    vkDestroyPipeline(v.dev, pipe, NULL);
    vkDestroyShaderModule(v.dev, mod, NULL);
    vkDestroyPipelineLayout(v.dev, pl, NULL);
    vkDestroyDescriptorSetLayout(v.dev, dsl, NULL);
    vkt_buffer_free(&v, &x);
    vkt_buffer_free(&v, &y);
    vkt_buffer_free(&v, &y2);
    vkt_done(&v);
    return 0;
}

/* ---- template: every buffer descriptor type through vkUpdateDescriptorSetWithTemplate ----- */

static int mode_template(const char *argv0)
{
    struct vkt v;
    vkt_init(&v, argv0, 1);
    static const VkDescriptorType types[4] = {
        VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
        VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER};
    VkDescriptorSetLayout dsl = set_layout(&v, 0, 4, types);
    VkPipelineLayout pl = pipeline_layout(&v, 1, &dsl, 0);
    VkShaderModule mod;
    VkPipeline pipe = pipeline(&v, "texel", pl, &mod);
    struct vkt_buf src, par, out, acc;
    vkt_buffer(&v, N * 4, 1, &src);
    vkt_buffer(&v, 256, 1, &par);
    vkt_buffer(&v, N * 4, 1, &out);
    vkt_buffer(&v, N * 4, 1, &acc);
    for (uint32_t i = 0; i < N; i++) {
        ((uint32_t *)src.map)[i] = i * 13 + 5;
        ((uint32_t *)acc.map)[i] = 1000 + i;
    }
    VkBufferViewCreateInfo bvci = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                                   .buffer = src.buf,
                                   .format = VK_FORMAT_R32_UINT,
                                   .range = VK_WHOLE_SIZE};
    VkBufferView views[2];
    VKT_CHECK(vkCreateBufferView(v.dev, &bvci, NULL, &views[0]));
    bvci.buffer = acc.buf;
    VKT_CHECK(vkCreateBufferView(v.dev, &bvci, NULL, &views[1]));
    /* the program's own record: views and buffer infos in one struct, at their offsets */
    struct rec {
        VkBufferView src;
        VkDescriptorBufferInfo par, out;
        VkBufferView acc;
    } data = {views[0], {par.buf, 0, 16}, {out.buf, 0, VK_WHOLE_SIZE}, views[1]};
    VkDescriptorUpdateTemplateEntry all[4] = {
        {0, 0, 1, VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, offsetof(struct rec, src), 0},
        {1, 0, 1, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, offsetof(struct rec, par), 0},
        {2, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, offsetof(struct rec, out), 0},
        {3, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, offsetof(struct rec, acc), 0}};
    VkDescriptorUpdateTemplateCreateInfo tci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_UPDATE_TEMPLATE_CREATE_INFO,
        .descriptorUpdateEntryCount = 4,
        .pDescriptorUpdateEntries = all,
        .templateType = VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_DESCRIPTOR_SET,
        .descriptorSetLayout = dsl};
    VkDescriptorUpdateTemplate t;
    VKT_CHECK(vkCreateDescriptorUpdateTemplate(v.dev, &tci, NULL, &t));
    VkDescriptorPool dp = pool(&v, 0, 1);
    VkDescriptorSet set = alloc_set(&v, dp, dsl, NULL);
    vkUpdateDescriptorSetWithTemplate(v.dev, set, t, &data);
    VkCommandBuffer cb = vkt_cmdbuf(&v);
    for (uint32_t round = 1; round <= 2; round++) {
        ((uint32_t *)par.map)[0] = round + 2;
        ((uint32_t *)par.map)[1] = N;
        vkt_begin(cb);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &set, 0, NULL);
        vkCmdDispatch(cb, N / 64, 1, 1);
        vkt_submit_wait(&v, cb);
        print_sum("out", round, &out);
        print_sum("acc", round, &acc);
    }
    vkDestroyDescriptorPool(v.dev, dp, NULL);
    vkDestroyDescriptorUpdateTemplate(v.dev, t, NULL);
    vkDestroyBufferView(v.dev, views[0], NULL);
    vkDestroyBufferView(v.dev, views[1], NULL);
    vkDestroyPipeline(v.dev, pipe, NULL);
    vkDestroyShaderModule(v.dev, mod, NULL);
    vkDestroyPipelineLayout(v.dev, pl, NULL);
    vkDestroyDescriptorSetLayout(v.dev, dsl, NULL);
    vkt_buffer_free(&v, &src);
    vkt_buffer_free(&v, &par);
    vkt_buffer_free(&v, &out);
    vkt_buffer_free(&v, &acc);
    vkt_done(&v);
    return 0;
}

/* ---- dynamic offsets ------------------------------------------------------------------------ */

static int mode_dynamic(const char *argv0)
{
    struct vkt v;
    vkt_init(&v, argv0, 1);
    static const VkDescriptorType types[2] = {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC,
                                              VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC};
    VkDescriptorSetLayout dsl = set_layout(&v, 0, 2, types);
    VkPipelineLayout pl = pipeline_layout(&v, 1, &dsl, 0);
    VkShaderModule mod;
    VkPipeline pipe = pipeline(&v, "dynoff", pl, &mod);
    struct vkt_buf u, s;
    vkt_buffer(&v, 4 * 256, 1, &u);
    vkt_buffer(&v, 4 * 256, 1, &s);
    for (uint32_t i = 0; i < 256; i++) {
        ((uint32_t *)u.map)[i] = i * 7 + 1;
        ((uint32_t *)s.map)[i] = i;
    }
    VkDescriptorPool dp = pool(&v, 0, 1);
    VkDescriptorSet set = alloc_set(&v, dp, dsl, NULL);
    VkDescriptorBufferInfo bi[2] = {{u.buf, 0, 16}, {s.buf, 0, 256}};
    VkWriteDescriptorSet w[2] = {{.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = set,
                                  .dstBinding = 0,
                                  .descriptorCount = 1,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC,
                                  .pBufferInfo = &bi[0]},
                                 {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = set,
                                  .dstBinding = 1,
                                  .descriptorCount = 1,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC,
                                  .pBufferInfo = &bi[1]}};
    vkUpdateDescriptorSets(v.dev, 2, w, 0, NULL);
    VkCommandBuffer cb = vkt_cmdbuf(&v);
    for (uint32_t round = 1; round <= 2; round++) {
        vkt_begin(cb);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        for (uint32_t k = 0; k < 4; k++) {
            /* uniform window k + round, storage window 3 - k: every window written once */
            uint32_t dyn[2] = {((k + round) % 4) * 256, (3 - k) * 256};
            vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &set, 2, dyn);
            vkCmdDispatch(cb, 1, 1, 1);
        }
        vkt_submit_wait(&v, cb);
        print_sum("s", round, &s);
    }
    vkDestroyDescriptorPool(v.dev, dp, NULL);
    vkDestroyPipeline(v.dev, pipe, NULL);
    vkDestroyShaderModule(v.dev, mod, NULL);
    vkDestroyPipelineLayout(v.dev, pl, NULL);
    vkDestroyDescriptorSetLayout(v.dev, dsl, NULL);
    vkt_buffer_free(&v, &u);
    vkt_buffer_free(&v, &s);
    vkt_done(&v);
    return 0;
}

/* ---- push2: the maintenance6 forms ---------------------------------------------------------- */

#ifdef VK_KHR_maintenance6
static void fill_floats(struct vkt_buf *b, float base)
{
    float *f = b->map;
    for (uint32_t i = 0; i < b->size / 4; i++)
        f[i] = base + (float)i * 0.25f;
}
#endif

static int mode_push2(const char *argv0)
{
#ifndef VK_KHR_maintenance6
    (void)argv0;
    fprintf(stderr, "built with Vulkan headers older than VK_KHR_maintenance6\n");
    return 4;
#else
    static const char *const ext[] = {"VK_KHR_push_descriptor", "VK_KHR_maintenance6"};
    VkPhysicalDeviceMaintenance6FeaturesKHR m6 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_6_FEATURES_KHR, .maintenance6 = 1};
    struct vkt_opts o = {.extensions = ext, .n_extensions = 2, .chain = &m6};
    struct vkt v;
    vkt_init_opts(&v, argv0, 1, &o);
    PFN_vkCmdPushDescriptorSet2KHR push2 = vkt_dev_fn(&v, "vkCmdPushDescriptorSet2KHR");
    PFN_vkCmdPushDescriptorSetWithTemplate2KHR push_t2 =
        vkt_dev_fn(&v, "vkCmdPushDescriptorSetWithTemplate2KHR");
    PFN_vkCmdBindDescriptorSets2KHR bind2 = vkt_dev_fn(&v, "vkCmdBindDescriptorSets2KHR");
    PFN_vkCmdPushConstants2KHR pc2 = vkt_dev_fn(&v, "vkCmdPushConstants2KHR");
    static const VkDescriptorType t0[2] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    static const VkDescriptorType t1[1] = {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC};
    VkDescriptorSetLayout dsl[2] = {
        set_layout(&v, VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR, 2, t0),
        set_layout(&v, 0, 1, t1)};
    VkPipelineLayout pl = pipeline_layout(&v, 2, dsl, 8);
    VkShaderModule mod;
    VkPipeline pipe = pipeline(&v, "saxpy2", pl, &mod);
    struct vkt_buf x, y, a;
    vkt_buffer(&v, N * 4, 1, &x);
    vkt_buffer(&v, N * 4, 1, &y);
    vkt_buffer(&v, 4 * 256, 1, &a);
    fill_floats(&x, 2.0f);
    fill_floats(&y, 0.5f);
    for (uint32_t i = 0; i < 4; i++)
        ((float *)a.map)[i * 64] = 1.5f + (float)i;
    VkDescriptorPool dp = pool(&v, 0, 1);
    VkDescriptorSet set = alloc_set(&v, dp, dsl[1], NULL);
    VkDescriptorBufferInfo abi = {a.buf, 0, 4};
    VkWriteDescriptorSet aw = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                               .dstSet = set,
                               .descriptorCount = 1,
                               .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC,
                               .pBufferInfo = &abi};
    vkUpdateDescriptorSets(v.dev, 1, &aw, 0, NULL);
    VkDescriptorUpdateTemplateEntry e = {
        0, 0, 2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 0, sizeof(VkDescriptorBufferInfo)};
    VkDescriptorUpdateTemplateCreateInfo tci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_UPDATE_TEMPLATE_CREATE_INFO,
        .descriptorUpdateEntryCount = 1,
        .pDescriptorUpdateEntries = &e,
        .templateType = VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_PUSH_DESCRIPTORS_KHR,
        .pipelineBindPoint = VK_PIPELINE_BIND_POINT_COMPUTE,
        .pipelineLayout = pl,
        .set = 0};
    VkDescriptorUpdateTemplate t;
    VKT_CHECK(vkCreateDescriptorUpdateTemplate(v.dev, &tci, NULL, &t));
    VkCommandBuffer cb = vkt_cmdbuf(&v);
    for (uint32_t round = 1; round <= 2; round++) {
        vkt_begin(cb);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        for (uint32_t k = 0; k < 2; k++) {
            VkDescriptorBufferInfo bi[2] = {{x.buf, 0, VK_WHOLE_SIZE}, {y.buf, 0, VK_WHOLE_SIZE}};
            if (k == 0) {
                VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                          .descriptorCount = 2,
                                          .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                          .pBufferInfo = bi};
                VkPushDescriptorSetInfoKHR pi = {.sType =
                                                     VK_STRUCTURE_TYPE_PUSH_DESCRIPTOR_SET_INFO_KHR,
                                                 .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                                                 .layout = pl,
                                                 .set = 0,
                                                 .descriptorWriteCount = 1,
                                                 .pDescriptorWrites = &w};
                push2(cb, &pi);
            } else {
                VkPushDescriptorSetWithTemplateInfoKHR pi = {
                    .sType = VK_STRUCTURE_TYPE_PUSH_DESCRIPTOR_SET_WITH_TEMPLATE_INFO_KHR,
                    .descriptorUpdateTemplate = t,
                    .layout = pl,
                    .set = 0,
                    .pData = bi};
                push_t2(cb, &pi);
            }
            uint32_t dyn = (round * 2 + k) % 4 * 256;
            VkBindDescriptorSetsInfoKHR bsi = {.sType =
                                                   VK_STRUCTURE_TYPE_BIND_DESCRIPTOR_SETS_INFO_KHR,
                                               .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                                               .layout = pl,
                                               .firstSet = 1,
                                               .descriptorSetCount = 1,
                                               .pDescriptorSets = &set,
                                               .dynamicOffsetCount = 1,
                                               .pDynamicOffsets = &dyn};
            bind2(cb, &bsi);
            struct {
                float b;
                uint32_t n;
            } pcv = {(float)(round * 10 + k), N};
            VkPushConstantsInfoKHR pci = {.sType = VK_STRUCTURE_TYPE_PUSH_CONSTANTS_INFO_KHR,
                                          .layout = pl,
                                          .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                                          .offset = 0,
                                          .size = sizeof pcv,
                                          .pValues = &pcv};
            pc2(cb, &pci);
            vkCmdDispatch(cb, N / 64, 1, 1);
        }
        vkt_submit_wait(&v, cb);
        print_sum("y", round, &y);
    }
    vkDestroyDescriptorUpdateTemplate(v.dev, t, NULL);
    vkDestroyDescriptorPool(v.dev, dp, NULL);
    vkDestroyPipeline(v.dev, pipe, NULL);
    vkDestroyShaderModule(v.dev, mod, NULL);
    vkDestroyPipelineLayout(v.dev, pl, NULL);
    vkDestroyDescriptorSetLayout(v.dev, dsl[0], NULL);
    vkDestroyDescriptorSetLayout(v.dev, dsl[1], NULL);
    vkt_buffer_free(&v, &x);
    vkt_buffer_free(&v, &y);
    vkt_buffer_free(&v, &a);
    vkt_done(&v);
    return 0;
#endif
}

/* ---- indexing: descriptor indexing ---------------------------------------------------------- */

#define MAX_BUFS 16u /* the binding's descriptor count */
#define N_BUFS   8u  /* the set's variable count */
#define N_USED   6u  /* written (partially bound) and read by the shader */

static int mode_indexing(const char *argv0)
{
    struct vkt_opts o = {0};
    o.f12.descriptorIndexing = 1;
    o.f12.runtimeDescriptorArray = 1;
    o.f12.descriptorBindingPartiallyBound = 1;
    o.f12.descriptorBindingVariableDescriptorCount = 1;
    o.f12.descriptorBindingStorageBufferUpdateAfterBind = 1;
    o.f12.shaderStorageBufferArrayNonUniformIndexing = 1;
    struct vkt v;
    vkt_init_opts(&v, argv0, 1, &o);
    VkDescriptorSetLayoutBinding b = {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, MAX_BUFS,
                                      VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorBindingFlags bf = VK_DESCRIPTOR_BINDING_PARTIALLY_BOUND_BIT |
                                  VK_DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT_BIT |
                                  VK_DESCRIPTOR_BINDING_UPDATE_AFTER_BIND_BIT;
    VkDescriptorSetLayoutBindingFlagsCreateInfo bfci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_BINDING_FLAGS_CREATE_INFO,
        .bindingCount = 1,
        .pBindingFlags = &bf};
    VkDescriptorSetLayoutCreateInfo lci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .pNext = &bfci,
        .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT,
        .bindingCount = 1,
        .pBindings = &b};
    VkDescriptorSetLayout dsl;
    VKT_CHECK(vkCreateDescriptorSetLayout(v.dev, &lci, NULL, &dsl));
    VkPipelineLayout pl = pipeline_layout(&v, 1, &dsl, 8);
    VkShaderModule mod;
    VkPipeline pipe = pipeline(&v, "bindless", pl, &mod);
    struct vkt_buf bufs[N_USED];
    for (uint32_t k = 0; k < N_USED; k++) {
        vkt_buffer(&v, 256 * 4, 1, &bufs[k]);
        for (uint32_t i = 0; i < 256; i++)
            ((uint32_t *)bufs[k].map)[i] = k * 1000 + i;
    }
    VkDescriptorPool dp = pool(&v, VK_DESCRIPTOR_POOL_CREATE_UPDATE_AFTER_BIND_BIT, 1);
    uint32_t count = N_BUFS;
    VkDescriptorSetVariableDescriptorCountAllocateInfo vc = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_VARIABLE_DESCRIPTOR_COUNT_ALLOCATE_INFO,
        .descriptorSetCount = 1,
        .pDescriptorCounts = &count};
    VkDescriptorSet set = alloc_set(&v, dp, dsl, &vc);
    VkCommandBuffer cb = vkt_cmdbuf(&v);
    for (uint32_t round = 1; round <= 2; round++) {
        vkt_begin(cb);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &set, 0, NULL);
        uint32_t pc[2] = {N_USED, 256};
        vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
        vkCmdDispatch(cb, 256 / 64, 1, 1);
        /* written after the set was bound (update after bind), in another order each round;
         * elements N_USED..N_BUFS stay unwritten (partially bound) */
        VkDescriptorBufferInfo bi[N_USED];
        for (uint32_t k = 0; k < N_USED; k++)
            bi[k] = (VkDescriptorBufferInfo){bufs[round == 1 ? k : N_USED - 1 - k].buf, 0,
                                             VK_WHOLE_SIZE};
        VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = set,
                                  .descriptorCount = N_USED,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                  .pBufferInfo = bi};
        vkUpdateDescriptorSets(v.dev, 1, &w, 0, NULL);
        vkt_submit_wait(&v, cb);
        uint64_t h = 0;
        for (uint32_t k = 0; k < N_USED; k++)
            h = vkt_sum(h, bufs[k].map, bufs[k].size);
        printf("bufs round %u checksum %016llx\n", round, (unsigned long long)h);
    }
    vkDestroyDescriptorPool(v.dev, dp, NULL);
    vkDestroyPipeline(v.dev, pipe, NULL);
    vkDestroyShaderModule(v.dev, mod, NULL);
    vkDestroyPipelineLayout(v.dev, pl, NULL);
    vkDestroyDescriptorSetLayout(v.dev, dsl, NULL);
    for (uint32_t k = 0; k < N_USED; k++)
        vkt_buffer_free(&v, &bufs[k]);
    vkt_done(&v);
    return 0;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "push"))
        return mode_push(argv[0], 0);
    if (!strcmp(m, "push-template"))
        return mode_push(argv[0], 1);
    if (!strcmp(m, "template"))
        return mode_template(argv[0]);
    if (!strcmp(m, "dynamic"))
        return mode_dynamic(argv[0]);
    if (!strcmp(m, "push2"))
        return mode_push2(argv[0]);
    if (!strcmp(m, "indexing"))
        return mode_indexing(argv[0]);
    fprintf(stderr, "usage: vk_descriptors push|push-template|template|dynamic|push2|indexing\n");
    return 2;
}
