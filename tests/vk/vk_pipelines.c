/*
 * tests/vk/vk_pipelines.c — compute pipelines made every way the capture records, one mode
 * each, for the capture and replay tests (each must capture complete and replay bit for bit):
 *
 *   subgroup  a subgroup reduction (its output depends on the subgroup size) in two pipelines:
 *             full subgroups with a required subgroup size, and full subgroups with a varying
 *             size (VK_EXT_subgroup_size_control, Vulkan 1.3)
 *   spec      specialization constants of each scalar kind (int, float, bool, uint), the local
 *             size from one, map entries out of order with gaps in the data
 *   flags     create flags: DISPATCH_BASE with vkCmdDispatchBase, DISABLE_OPTIMIZATION,
 *             ALLOW_DERIVATIVES and a DERIVATIVE pipeline, a pipeline cache and
 *             FAIL_ON_PIPELINE_COMPILE_REQUIRED (retried without it when compiling is required)
 *   maint5    maintenance5: the shader module chained into the stage (no VkShaderModule) and
 *             VkPipelineCreateFlags2CreateInfoKHR (Mesa 25)
 *   robust    VkPipelineRobustnessCreateInfo (VK_EXT_pipeline_robustness; Mesa 25): robust
 *             buffer access 2 for the pipeline's storage buffers, whose input binding is half
 *             the dispatch: reads past it give 0, which the output shows
 *   robust-off the same structure asking for no robustness (DISABLED, as ggml-vulkan asks),
 *             every access in bounds
 *   nonuniform the shaderStorageBufferArrayNonUniformIndexing feature enabled (Mesa 25 has it,
 *             22.3 not) and used: the shader indexes a descriptor array non-uniformly
 *             (nonuniform.comp)
 *   nonuniform-unused  the feature enabled, as ggml-vulkan enables every feature, and not used
 *             (scale.comp): the same results
 *
 * Prints what it computed (checksums), the same with or without capture; exits 4 when the
 * device lacks what the mode needs.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vk/vkt.h"

#define N 1024u

struct prog {
    struct vkt v;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout pl;
    VkDescriptorPool dp;
    VkDescriptorSet set;
    struct vkt_buf in, out;
    VkCommandBuffer cb;
};

/* Two storage buffers in set 0 (in, out) and 8 bytes of push constants. */
static void setup(struct prog *g, const char *argv0, const struct vkt_opts *o)
{
    vkt_init_opts(&g->v, argv0, 1, o);
    struct vkt *v = &g->v;
    VkDescriptorSetLayoutBinding b[2] = {
        {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
        {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL}};
    VkDescriptorSetLayoutCreateInfo lci = {.sType =
                                               VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 2,
                                           .pBindings = b};
    VKT_CHECK(vkCreateDescriptorSetLayout(v->dev, &lci, NULL, &g->dsl));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = 1,
                                       .pSetLayouts = &g->dsl,
                                       .pushConstantRangeCount = 1,
                                       .pPushConstantRanges = &pcr};
    VKT_CHECK(vkCreatePipelineLayout(v->dev, &plci, NULL, &g->pl));
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 1,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &ps};
    VKT_CHECK(vkCreateDescriptorPool(v->dev, &dpci, NULL, &g->dp));
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = g->dp,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &g->dsl};
    VKT_CHECK(vkAllocateDescriptorSets(v->dev, &ai, &g->set));
    vkt_buffer(v, N * 4, 1, &g->in);
    vkt_buffer(v, N * 4, 1, &g->out);
    for (uint32_t i = 0; i < N; i++)
        ((uint32_t *)g->in.map)[i] = i * 3 + 1;
    memset(g->out.map, 0, N * 4); /* dispatches with a base leave the start alone */
    VkDescriptorBufferInfo bi[2] = {{g->in.buf, 0, VK_WHOLE_SIZE}, {g->out.buf, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = g->set,
                              .descriptorCount = 2,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = bi};
    vkUpdateDescriptorSets(v->dev, 1, &w, 0, NULL);
    g->cb = vkt_cmdbuf(v);
}

static void done(struct prog *g)
{
    struct vkt *v = &g->v;
    vkDestroyDescriptorPool(v->dev, g->dp, NULL);
    vkDestroyPipelineLayout(v->dev, g->pl, NULL);
    vkDestroyDescriptorSetLayout(v->dev, g->dsl, NULL);
    vkt_buffer_free(v, &g->in);
    vkt_buffer_free(v, &g->out);
    vkt_done(v);
}

/* Runs pipe over groups x (base bx) with push constants pc, and prints out's checksum. */
static void run(struct prog *g, const char *what, VkPipeline pipe, uint32_t bx, uint32_t x,
                const uint32_t pc[2])
{
    vkt_begin(g->cb);
    vkCmdBindPipeline(g->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(g->cb, VK_PIPELINE_BIND_POINT_COMPUTE, g->pl, 0, 1, &g->set, 0, NULL);
    vkCmdPushConstants(g->cb, g->pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
    if (bx)
        vkCmdDispatchBase(g->cb, bx, 0, 0, x, 1, 1);
    else
        vkCmdDispatch(g->cb, x, 1, 1);
    vkt_submit_wait(&g->v, g->cb);
    printf("%s checksum %016llx\n", what, (unsigned long long)vkt_sum(0, g->out.map, N * 4));
}

static VkComputePipelineCreateInfo pipe_info(struct prog *g, VkShaderModule m,
                                             VkPipelineCreateFlags flags)
{
    return (VkComputePipelineCreateInfo){
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = flags,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = m,
                  .pName = "main"},
        .layout = g->pl,
        .basePipelineIndex = -1};
}

/* ---- subgroup -------------------------------------------------------------------------------- */

static int mode_subgroup(const char *argv0)
{
    struct vkt_opts o = {0};
    o.f13.subgroupSizeControl = 1;
    o.f13.computeFullSubgroups = 1;
    struct prog g;
    setup(&g, argv0, &o);
    VkPhysicalDeviceSubgroupSizeControlProperties sp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sp};
    vkGetPhysicalDeviceProperties2(g.v.phys, &p2);
    if (!(sp.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) || sp.maxSubgroupSize > 64) {
        fprintf(stderr, "no required subgroup size for compute (or subgroups over 64)\n");
        return 4;
    }
    VkShaderModule m = vkt_module(&g.v, "subgroup");
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rs = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = sp.minSubgroupSize};
    VkComputePipelineCreateInfo ci[2] = {pipe_info(&g, m, 0), pipe_info(&g, m, 0)};
    ci[0].stage.pNext = &rs;
    ci[0].stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    ci[1].stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT |
                        VK_PIPELINE_SHADER_STAGE_CREATE_ALLOW_VARYING_SUBGROUP_SIZE_BIT;
    VkPipeline p[2];
    VKT_CHECK(vkCreateComputePipelines(g.v.dev, VK_NULL_HANDLE, 2, ci, NULL, p));
    uint32_t pc[2] = {0, N};
    run(&g, "required", p[0], 0, N / 64, pc);
    run(&g, "varying", p[1], 0, N / 64, pc);
    vkDestroyPipeline(g.v.dev, p[0], NULL);
    vkDestroyPipeline(g.v.dev, p[1], NULL);
    vkDestroyShaderModule(g.v.dev, m, NULL);
    done(&g);
    return 0;
}

/* ---- spec ------------------------------------------------------------------------------------ */

static int mode_spec(const char *argv0)
{
    struct prog g;
    setup(&g, argv0, NULL);
    VkShaderModule m = vkt_module(&g.v, "spec");
    /* the data: U, a gap, local size x, F, I, B (VkBool32) */
    struct {
        uint32_t u, gap, local;
        float f;
        int32_t i;
        VkBool32 b;
    } data[2] = {{11, 0xdead, 32, 0.75f, -5, VK_FALSE}, {13, 0xbeef, 128, 2.5f, 9, VK_TRUE}};
    VkSpecializationMapEntry me[5] = {{4, offsetof(__typeof__(data[0]), u), 4},
                                      {0, offsetof(__typeof__(data[0]), local), 4},
                                      {2, offsetof(__typeof__(data[0]), f), 4},
                                      {1, offsetof(__typeof__(data[0]), i), 4},
                                      {3, offsetof(__typeof__(data[0]), b), sizeof(VkBool32)}};
    for (int k = 0; k < 2; k++) {
        VkSpecializationInfo si = {5, me, sizeof data[k], &data[k]};
        VkComputePipelineCreateInfo ci = pipe_info(&g, m, 0);
        ci.stage.pSpecializationInfo = &si;
        VkPipeline p;
        VKT_CHECK(vkCreateComputePipelines(g.v.dev, VK_NULL_HANDLE, 1, &ci, NULL, &p));
        uint32_t pc[2] = {0, N};
        run(&g, k ? "spec B" : "spec A", p, 0, N / data[k].local, pc);
        vkDestroyPipeline(g.v.dev, p, NULL);
    }
    vkDestroyShaderModule(g.v.dev, m, NULL);
    done(&g);
    return 0;
}

/* ---- flags ----------------------------------------------------------------------------------- */

static int mode_flags(const char *argv0)
{
    struct vkt_opts o = {0};
    o.f13.pipelineCreationCacheControl = 1;
    struct prog g;
    setup(&g, argv0, &o);
    VkShaderModule m = vkt_module(&g.v, "scale");
    VkPipelineCacheCreateInfo cci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    VkPipelineCache cache;
    VKT_CHECK(vkCreatePipelineCache(g.v.dev, &cci, NULL, &cache));
    uint32_t k1 = 3, k2 = 7;
    VkSpecializationMapEntry me = {0, 0, 4};
    VkSpecializationInfo s1 = {1, &me, 4, &k1}, s2 = {1, &me, 4, &k2};
    VkComputePipelineCreateInfo ci =
        pipe_info(&g, m,
                  VK_PIPELINE_CREATE_DISPATCH_BASE_BIT | VK_PIPELINE_CREATE_ALLOW_DERIVATIVES_BIT |
                      VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT);
    ci.stage.pSpecializationInfo = &s1;
    VkPipeline base;
    VkResult r = vkCreateComputePipelines(g.v.dev, cache, 1, &ci, NULL, &base);
    if (r == VK_PIPELINE_COMPILE_REQUIRED) { /* not in the cache: compile it after all */
        ci.flags &=
            ~(VkPipelineCreateFlags)VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT;
        r = vkCreateComputePipelines(g.v.dev, cache, 1, &ci, NULL, &base);
    }
    VKT_CHECK(r);
    VkComputePipelineCreateInfo dci =
        pipe_info(&g, m,
                  VK_PIPELINE_CREATE_DERIVATIVE_BIT | VK_PIPELINE_CREATE_DISABLE_OPTIMIZATION_BIT |
                      VK_PIPELINE_CREATE_DISPATCH_BASE_BIT);
    dci.stage.pSpecializationInfo = &s2;
    dci.basePipelineHandle = base;
    VkPipeline der;
    VKT_CHECK(vkCreateComputePipelines(g.v.dev, cache, 1, &dci, NULL, &der));
    uint32_t pc[2] = {5, N};
    run(&g, "base", base, 4, N / 64 - 4, pc);
    pc[0] = 9;
    run(&g, "derivative", der, 2, N / 64 - 2, pc);
    vkDestroyPipeline(g.v.dev, base, NULL);
    vkDestroyPipeline(g.v.dev, der, NULL);
    vkDestroyPipelineCache(g.v.dev, cache, NULL);
    vkDestroyShaderModule(g.v.dev, m, NULL);
    done(&g);
    return 0;
}

/* ---- maint5 ---------------------------------------------------------------------------------- */

static int mode_maint5(const char *argv0)
{
#ifndef VK_KHR_maintenance5
    (void)argv0;
    fprintf(stderr, "built with Vulkan headers older than VK_KHR_maintenance5\n");
    return 4;
#else
    static const char *const ext[] = {"VK_KHR_maintenance5"};
    VkPhysicalDeviceMaintenance5FeaturesKHR m5 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_5_FEATURES_KHR, .maintenance5 = 1};
    struct vkt_opts o = {.extensions = ext, .n_extensions = 1, .chain = &m5};
    struct prog g;
    setup(&g, argv0, &o);
    static uint32_t code[1 << 16];
    size_t len = vkt_spirv(&g.v, "scale", code, sizeof code);
    VkShaderModuleCreateInfo smci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = len, .pCode = code};
    VkPipelineCreateFlags2CreateInfoKHR f2 = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATE_FLAGS_2_CREATE_INFO_KHR,
        .flags = VK_PIPELINE_CREATE_2_DISPATCH_BASE_BIT_KHR |
                 VK_PIPELINE_CREATE_2_DISABLE_OPTIMIZATION_BIT_KHR};
    uint32_t k = 6;
    VkSpecializationMapEntry me = {0, 0, 4};
    VkSpecializationInfo si = {1, &me, 4, &k};
    /* flags says 0 (no dispatch base): the chained VkPipelineCreateFlags2 replace them */
    VkComputePipelineCreateInfo ci = pipe_info(&g, VK_NULL_HANDLE, 0);
    ci.pNext = &f2;
    ci.stage.pNext = &smci;
    ci.stage.pSpecializationInfo = &si;
    VkPipeline p;
    VKT_CHECK(vkCreateComputePipelines(g.v.dev, VK_NULL_HANDLE, 1, &ci, NULL, &p));
    uint32_t pc[2] = {17, N};
    run(&g, "inline", p, 3, N / 64 - 3, pc);
    vkDestroyPipeline(g.v.dev, p, NULL);
    done(&g);
    return 0;
#endif
}

/* ---- robust ---------------------------------------------------------------------------------- */

static int mode_robust(const char *argv0, int off)
{
    static const char *const ext[] = {"VK_EXT_pipeline_robustness"};
    VkPhysicalDevicePipelineRobustnessFeaturesEXT pr = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT,
        .pipelineRobustness = 1};
    struct vkt_opts o = {.extensions = ext, .n_extensions = 1, .chain = &pr};
    struct prog g;
    setup(&g, argv0, &o);
    /* the input binding covers the first half (or all of it); the shader reads all N */
    VkDescriptorBufferInfo bi = {g.in.buf, 0, off ? N * 4 : N * 2};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = g.set,
                              .descriptorCount = 1,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = &bi};
    vkUpdateDescriptorSets(g.v.dev, 1, &w, 0, NULL);
    static uint32_t code[1 << 16];
    size_t len = vkt_spirv(&g.v, "scale", code, sizeof code);
    VkShaderModuleCreateInfo smci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = len, .pCode = code};
    VkShaderModule m;
    VKT_CHECK(vkCreateShaderModule(g.v.dev, &smci, NULL, &m));
    VkPipelineRobustnessCreateInfoEXT rob = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT,
        .storageBuffers = off ? VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT
                              : VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_ROBUST_BUFFER_ACCESS_2_EXT,
        .uniformBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DEVICE_DEFAULT_EXT,
        .vertexInputs = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DEVICE_DEFAULT_EXT,
        .images = VK_PIPELINE_ROBUSTNESS_IMAGE_BEHAVIOR_DEVICE_DEFAULT_EXT};
    VkComputePipelineCreateInfo ci = pipe_info(&g, m, 0);
    ci.pNext = &rob;
    VkPipeline p;
    VKT_CHECK(vkCreateComputePipelines(g.v.dev, VK_NULL_HANDLE, 1, &ci, NULL, &p));
    uint32_t pc[2] = {5, N};
    run(&g, off ? "robust-off" : "robust", p, 0, N / 64, pc);
    if (!off)
        printf("robust out[%u] %u (0 * K + 5 when reads past the binding give 0)\n", N - 1,
               ((uint32_t *)g.out.map)[N - 1]);
    vkDestroyPipeline(g.v.dev, p, NULL);
    vkDestroyShaderModule(g.v.dev, m, NULL);
    done(&g);
    return 0;
}

/* ---- nonuniform -------------------------------------------------------------------------- */

static int mode_nonuniform(const char *argv0, int used)
{
    struct vkt_opts o = {.f12 = {.shaderStorageBufferArrayNonUniformIndexing = 1}};
    struct prog g;
    setup(&g, argv0, &o);
    static uint32_t code[1 << 16];
    size_t len = vkt_spirv(&g.v, used ? "nonuniform" : "scale", code, sizeof code);
    VkShaderModuleCreateInfo smci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = len, .pCode = code};
    VkShaderModule m;
    VKT_CHECK(vkCreateShaderModule(g.v.dev, &smci, NULL, &m));
    VkComputePipelineCreateInfo ci = pipe_info(&g, m, 0);
    VkPipeline p;
    VKT_CHECK(vkCreateComputePipelines(g.v.dev, VK_NULL_HANDLE, 1, &ci, NULL, &p));
    uint32_t pc[2] = {5, N};
    run(&g, "nonuniform", p, 0, N / 64, pc);
    vkDestroyPipeline(g.v.dev, p, NULL);
    vkDestroyShaderModule(g.v.dev, m, NULL);
    done(&g);
    return 0;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "subgroup"))
        return mode_subgroup(argv[0]);
    if (!strcmp(m, "spec"))
        return mode_spec(argv[0]);
    if (!strcmp(m, "flags"))
        return mode_flags(argv[0]);
    if (!strcmp(m, "maint5"))
        return mode_maint5(argv[0]);
    if (!strcmp(m, "robust") || !strcmp(m, "robust-off"))
        return mode_robust(argv[0], !strcmp(m, "robust-off"));
    if (!strcmp(m, "nonuniform") || !strcmp(m, "nonuniform-unused"))
        return mode_nonuniform(argv[0], !strcmp(m, "nonuniform"));
    fprintf(stderr, "usage: vk_pipelines subgroup|spec|flags|maint5|robust|robust-off|"
                    "nonuniform|nonuniform-unused\n");
    return 2;
}
