/*
 * tests/vk/vkt.c — see vkt.h.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vk/vkt.h"

void vkt_die(const char *file, int line, const char *what, VkResult r)
{
    fprintf(stderr, "%s:%d: %s failed: VkResult %d\n", file, line, what, (int)r);
    exit(r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED ? 4 : 1);
}

void vkt_init(struct vkt *v, const char *argv0, uint32_t max_queues)
{
    vkt_init_opts(v, argv0, max_queues, NULL);
}

void vkt_init_opts(struct vkt *v, const char *argv0, uint32_t max_queues, const struct vkt_opts *o)
{
    memset(v, 0, sizeof *v);
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", argv0);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    v->spv_dir = dir;
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "reprise-test",
                             .apiVersion = VK_API_VERSION_1_3};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &app};
    VKT_CHECK(vkCreateInstance(&ici, NULL, &v->inst));
    uint32_t n = 8;
    VkPhysicalDevice phys[8];
    VKT_CHECK(vkEnumeratePhysicalDevices(v->inst, &n, phys));
    for (uint32_t i = 0; i < n && !v->phys; i++) {
        uint32_t nq = 16;
        VkQueueFamilyProperties qf[16];
        vkGetPhysicalDeviceQueueFamilyProperties(phys[i], &nq, qf);
        for (uint32_t f = 0; f < nq; f++)
            if (qf[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                v->phys = phys[i];
                v->family = f;
                v->n_queues = qf[f].queueCount < max_queues ? qf[f].queueCount : max_queues;
                break;
            }
    }
    if (!v->phys) {
        fprintf(stderr, "no Vulkan device with a compute queue\n");
        exit(4);
    }
    if (v->n_queues > 4)
        v->n_queues = 4;
    vkGetPhysicalDeviceMemoryProperties(v->phys, &v->mem);
    float prio[4] = {1, 1, 1, 1};
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = v->family,
                                   .queueCount = v->n_queues,
                                   .pQueuePriorities = prio};
    VkPhysicalDeviceVulkan13Features f13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
        .pNext = o ? o->chain : NULL,
        .synchronization2 = 1};
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = &f13,
        .timelineSemaphore = 1,
        .bufferDeviceAddress = o && o->buffer_device_address};
    if (o) { /* the members after sType and pNext are all VkBool32 */
        VkBool32 *d12 = &f12.samplerMirrorClampToEdge, *d13 = &f13.robustImageAccess;
        const VkBool32 *s12 = &o->f12.samplerMirrorClampToEdge, *s13 = &o->f13.robustImageAccess;
        for (size_t i = 0; i < (sizeof f12 - offsetof(VkPhysicalDeviceVulkan12Features,
                                                      samplerMirrorClampToEdge)) /
                                   sizeof(VkBool32);
             i++)
            d12[i] |= s12[i];
        for (size_t i = 0;
             i < (sizeof f13 - offsetof(VkPhysicalDeviceVulkan13Features, robustImageAccess)) /
                     sizeof(VkBool32);
             i++)
            d13[i] |= s13[i];
    }
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &f12,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci,
                              .enabledExtensionCount = o ? o->n_extensions : 0,
                              .ppEnabledExtensionNames = o ? o->extensions : NULL};
    /* VKT_FEATURES2=1: the core features in a VkPhysicalDeviceFeatures2 chained to the create
     * info, as Dawn does, instead of pEnabledFeatures (none here) */
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    if (getenv("VKT_FEATURES2") && atoi(getenv("VKT_FEATURES2"))) {
        VkPhysicalDeviceFeatures have;
        vkGetPhysicalDeviceFeatures(v->phys, &have);
        f2.features.shaderInt64 = have.shaderInt64;
        f2.features.shaderFloat64 = have.shaderFloat64;
        f2.pNext = (void *)dci.pNext;
        dci.pNext = &f2;
    }
    VkResult r = vkCreateDevice(v->phys, &dci, NULL, &v->dev);
    if (r == VK_ERROR_EXTENSION_NOT_PRESENT || r == VK_ERROR_FEATURE_NOT_PRESENT) {
        fprintf(stderr, "the device lacks an extension or feature this program needs\n");
        exit(4);
    }
    VKT_CHECK(r);
    for (uint32_t i = 0; i < v->n_queues; i++)
        vkGetDeviceQueue(v->dev, v->family, i, &v->queue[i]);
}

void vkt_done(struct vkt *v)
{
    if (v->pool)
        vkDestroyCommandPool(v->dev, v->pool, NULL);
    vkDestroyDevice(v->dev, NULL);
    vkDestroyInstance(v->inst, NULL);
}

uint32_t vkt_mem_type(struct vkt *v, uint32_t bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < v->mem.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (v->mem.memoryTypes[i].propertyFlags & want) == want)
            return i;
    fprintf(stderr, "no memory type with flags 0x%x\n", want);
    exit(4);
}

void vkt_buffer(struct vkt *v, VkDeviceSize size, int host_visible, struct vkt_buf *out)
{
    memset(out, 0, sizeof *out);
    out->size = size;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                 VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                 VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT};
    VKT_CHECK(vkCreateBuffer(v->dev, &bci, NULL, &out->buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(v->dev, out->buf, &req);
    VkMemoryPropertyFlags want =
        host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                     : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .pNext = vkt_alloc_chain,
                                .allocationSize = req.size,
                                .memoryTypeIndex = vkt_mem_type(v, req.memoryTypeBits, want)};
    VKT_CHECK(vkAllocateMemory(v->dev, &mai, NULL, &out->mem));
    VKT_CHECK(vkBindBufferMemory(v->dev, out->buf, out->mem, 0));
    if (host_visible)
        VKT_CHECK(vkMapMemory(v->dev, out->mem, 0, VK_WHOLE_SIZE, 0, &out->map));
}

void vkt_buffer_free(struct vkt *v, struct vkt_buf *b)
{
    if (b->map)
        vkUnmapMemory(v->dev, b->mem);
    vkDestroyBuffer(v->dev, b->buf, NULL);
    vkFreeMemory(v->dev, b->mem, NULL);
}

int vkt_clean_structs;
VkDescriptorSetLayoutCreateFlags vkt_set_layout_flags;
const void *vkt_alloc_chain;

size_t vkt_spirv(struct vkt *v, const char *name, uint32_t *code, size_t cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.spv", v->spv_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    size_t len = fread(code, 1, cap, f);
    fclose(f);
    return len;
}

VkShaderModule vkt_module(struct vkt *v, const char *name)
{
    static uint32_t code[1 << 16];
    size_t len = vkt_spirv(v, name, code, sizeof code);
    VkShaderModuleCreateInfo smci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = len, .pCode = code};
    VkShaderModule m;
    VKT_CHECK(vkCreateShaderModule(v->dev, &smci, NULL, &m));
    return m;
}

void *vkt_dev_fn(struct vkt *v, const char *name)
{
    PFN_vkVoidFunction f = vkGetDeviceProcAddr(v->dev, name);
    if (!f) {
        fprintf(stderr, "%s is not available\n", name);
        exit(4);
    }
    return (void *)f;
}

VkCommandBuffer vkt_cmdbuf(struct vkt *v)
{
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = v->family};
    if (!v->pool)
        VKT_CHECK(vkCreateCommandPool(v->dev, &pci, NULL, &v->pool));
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = v->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkCommandBuffer cb;
    VKT_CHECK(vkAllocateCommandBuffers(v->dev, &ai, &cb));
    return cb;
}

void vkt_begin(VkCommandBuffer cb)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VKT_CHECK(vkBeginCommandBuffer(cb, &bi));
}

void vkt_submit_wait(struct vkt *v, VkCommandBuffer cb)
{
    VKT_CHECK(vkEndCommandBuffer(cb));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    VKT_CHECK(vkCreateFence(v->dev, &fci, NULL, &fence));
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    VKT_CHECK(vkQueueSubmit(v->queue[0], 1, &si, fence));
    VKT_CHECK(vkWaitForFences(v->dev, 1, &fence, VK_TRUE, UINT64_MAX));
    vkDestroyFence(v->dev, fence, NULL);
}

void vkt_pipeline(struct vkt *v, const char *name, uint32_t n, const VkDescriptorType *types,
                  uint32_t pc_bytes, const uint32_t *spec, struct vkt_pipe *out)
{
    VkDescriptorSetLayoutBinding b[8];
    for (uint32_t i = 0; i < n; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = types[i],
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                                              /* left as garbage on purpose: the spec says
                                                 it is ignored for buffer descriptors */
                                              .pImmutableSamplers =
                                                  vkt_clean_structs ? NULL : (const VkSampler *)16};
    vkt_pipeline_bindings(v, name, n, b, pc_bytes, spec, out);
}

void vkt_pipeline_bindings(struct vkt *v, const char *name, uint32_t n,
                           const VkDescriptorSetLayoutBinding *b, uint32_t pc_bytes,
                           const uint32_t *spec, struct vkt_pipe *out)
{
    out->mod = vkt_module(v, name);
    VkDescriptorSetLayoutCreateInfo dci = {.sType =
                                               VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .flags = vkt_set_layout_flags,
                                           .bindingCount = n,
                                           .pBindings = b};
    VKT_CHECK(vkCreateDescriptorSetLayout(v->dev, &dci, NULL, &out->dsl));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, pc_bytes};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = 1,
                                       .pSetLayouts = &out->dsl,
                                       .pushConstantRangeCount = pc_bytes ? 1 : 0,
                                       .pPushConstantRanges = &pcr};
    VKT_CHECK(vkCreatePipelineLayout(v->dev, &plci, NULL, &out->layout));
    VkSpecializationMapEntry me = {0, 0, 4};
    VkSpecializationInfo si = {1, &me, 4, spec};
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = VK_PIPELINE_CREATE_DISPATCH_BASE_BIT,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = out->mod,
                  .pName = "main",
                  .pSpecializationInfo = spec ? &si : NULL},
        .layout = out->layout};
    VKT_CHECK(vkCreateComputePipelines(v->dev, VK_NULL_HANDLE, 1, &cpci, NULL, &out->pipe));
}

void vkt_pipeline_free(struct vkt *v, struct vkt_pipe *p)
{
    vkDestroyPipeline(v->dev, p->pipe, NULL);
    vkDestroyPipelineLayout(v->dev, p->layout, NULL);
    vkDestroyDescriptorSetLayout(v->dev, p->dsl, NULL);
    vkDestroyShaderModule(v->dev, p->mod, NULL);
}

uint64_t vkt_sum(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    if (!h)
        h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
