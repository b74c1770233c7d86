/*
 * tests/vk/vk_unmodelled.c — compute programs that use Vulkan the capture layer does not
 * record, one per mode, so the tests can check that their traces say so (incomplete, naming
 * the call, its count and the op where it first happened) while the program's results stay
 * its own:
 *
 *   plain          two dispatches of scale.comp through ordinary descriptor sets (complete)
 *   push           the same through vkCmdPushDescriptorSetKHR (VK_KHR_push_descriptor)
 *   push-template  the same through vkCmdPushDescriptorSetWithTemplateKHR
 *   query          timestamps copied into a buffer by vkCmdCopyQueryPoolResults
 *   address        vkGetBufferDeviceAddress of a buffer
 *   image          a multisampled image sampled through a descriptor set (images are recorded;
 *                  multisampled ones are not)
 *   unknown        vkReprisetestSumREPRISE, a command only the test layer
 *                  VK_LAYER_REPRISE_fakecmd (tests/vk/layer_fakecmd.c) provides, called twice
 *                  with arguments in every kind of register and on the stack
 *   chain          plain, its allocations chaining a structure the layer does not know
 *                  (VkMemoryOpaqueCaptureAddressAllocateInfo, asking for no address: valid
 *                  Vulkan 1.2, and what it would ask of the driver is not in the trace)
 *   lost           three rounds like plain, where the test layer makes the third wait return
 *                  VK_ERROR_DEVICE_LOST (REPRISE_FAKECMD_LOSE_WAIT=3): the program then dies at
 *                  once (_exit(3)), as programs with a hung GPU do, without closing anything
 *
 * Prints what it computed (checksums, counts), the same with or without capture; exits 4 when
 * the device lacks what the mode needs.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/vk/vkt.h"

#define N 1024u

struct prog {
    struct vkt v;
    struct vkt_pipe p;
    struct vkt_buf in, out;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkFence fence;
};

static void setup(struct prog *g, const char *argv0, const struct vkt_opts *o, int push)
{
    vkt_init_opts(&g->v, argv0, 1, o);
    vkt_set_layout_flags = push ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
    static const VkDescriptorType types[2] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    const uint32_t k = 5;
    vkt_pipeline(&g->v, "scale", 2, types, 8, &k, &g->p);
    vkt_buffer(&g->v, N * 4, 1, &g->in);
    vkt_buffer(&g->v, N * 4, 1, &g->out);
    for (uint32_t i = 0; i < N; i++)
        ((uint32_t *)g->in.map)[i] = i * 7 + 1;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = g->v.family};
    VKT_CHECK(vkCreateCommandPool(g->v.dev, &pci, NULL, &g->pool));
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = g->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VKT_CHECK(vkAllocateCommandBuffers(g->v.dev, &ai, &g->cb));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKT_CHECK(vkCreateFence(g->v.dev, &fci, NULL, &g->fence));
}

static void begin(struct prog *g)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VKT_CHECK(vkBeginCommandBuffer(g->cb, &bi));
}

static void submit_wait(struct prog *g)
{
    VKT_CHECK(vkEndCommandBuffer(g->cb));
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &g->cb};
    VKT_CHECK(vkQueueSubmit(g->v.queue[0], 1, &si, g->fence));
    VKT_CHECK(vkWaitForFences(g->v.dev, 1, &g->fence, VK_TRUE, UINT64_MAX));
    VKT_CHECK(vkResetFences(g->v.dev, 1, &g->fence));
}

static void done(struct prog *g)
{
    vkDestroyFence(g->v.dev, g->fence, NULL);
    vkDestroyCommandPool(g->v.dev, g->pool, NULL);
    vkt_buffer_free(&g->v, &g->in);
    vkt_buffer_free(&g->v, &g->out);
    vkt_pipeline_free(&g->v, &g->p);
    vkt_done(&g->v);
}

/* Two submissions of one dispatch each (push constants add = round), the buffers bound by
 * bind(): out = in * 5 + round. Prints the checksum of out after each. */
static void two_rounds(struct prog *g, void (*bind)(struct prog *, void *), void *ctx)
{
    for (uint32_t round = 1; round <= 2; round++) {
        begin(g);
        vkCmdBindPipeline(g->cb, VK_PIPELINE_BIND_POINT_COMPUTE, g->p.pipe);
        bind(g, ctx);
        uint32_t pc[2] = {round, N};
        vkCmdPushConstants(g->cb, g->p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
        vkCmdDispatch(g->cb, N / 64, 1, 1);
        submit_wait(g);
        printf("round %u checksum %016llx\n", round,
               (unsigned long long)vkt_sum(0, g->out.map, N * 4));
    }
}

static void bind_set(struct prog *g, void *ctx)
{
    VkDescriptorSet *set = ctx;
    vkCmdBindDescriptorSets(g->cb, VK_PIPELINE_BIND_POINT_COMPUTE, g->p.layout, 0, 1, set, 0, NULL);
}

static int mode_plain(const char *argv0, int lose)
{
    struct prog g;
    setup(&g, argv0, NULL, 0);
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 1,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &ps};
    VkDescriptorPool dp;
    VKT_CHECK(vkCreateDescriptorPool(g.v.dev, &dpci, NULL, &dp));
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = dp,
                                       .descriptorSetCount = 1,
                                       .pSetLayouts = &g.p.dsl};
    VkDescriptorSet set;
    VKT_CHECK(vkAllocateDescriptorSets(g.v.dev, &dai, &set));
    VkDescriptorBufferInfo bi[2] = {{g.in.buf, 0, VK_WHOLE_SIZE}, {g.out.buf, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = set,
                              .dstBinding = 0,
                              .descriptorCount = 2,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = bi};
    vkUpdateDescriptorSets(g.v.dev, 1, &w, 0, NULL);
    two_rounds(&g, bind_set, &set);
    if (lose) {
        begin(&g);
        vkCmdBindPipeline(g.cb, VK_PIPELINE_BIND_POINT_COMPUTE, g.p.pipe);
        bind_set(&g, &set);
        uint32_t pc[2] = {3, N};
        vkCmdPushConstants(g.cb, g.p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
        vkCmdDispatch(g.cb, N / 64, 1, 1);
        VKT_CHECK(vkEndCommandBuffer(g.cb));
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &g.cb};
        VKT_CHECK(vkQueueSubmit(g.v.queue[0], 1, &si, g.fence));
        VkResult r = vkWaitForFences(g.v.dev, 1, &g.fence, VK_TRUE, UINT64_MAX);
        printf("round 3: %s\n", r == VK_ERROR_DEVICE_LOST ? "device lost" : "no loss");
        fflush(stdout);
        _exit(3);
    }
    vkDestroyDescriptorPool(g.v.dev, dp, NULL);
    done(&g);
    return 0;
}

struct push_ctx {
    PFN_vkCmdPushDescriptorSetKHR push;
    PFN_vkCmdPushDescriptorSetWithTemplateKHR push_templ;
    VkDescriptorUpdateTemplate templ;
};

static void bind_push(struct prog *g, void *ctx)
{
    struct push_ctx *c = ctx;
    VkDescriptorBufferInfo bi[2] = {{g->in.buf, 0, VK_WHOLE_SIZE}, {g->out.buf, 0, VK_WHOLE_SIZE}};
    if (c->templ) {
        c->push_templ(g->cb, c->templ, g->p.layout, 0, bi);
        return;
    }
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstBinding = 0,
                              .descriptorCount = 2,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = bi};
    c->push(g->cb, VK_PIPELINE_BIND_POINT_COMPUTE, g->p.layout, 0, 1, &w);
}

static int mode_push(const char *argv0, int templ)
{
    static const char *const ext[] = {"VK_KHR_push_descriptor"};
    struct vkt_opts o = {.extensions = ext, .n_extensions = 1};
    struct prog g;
    setup(&g, argv0, &o, 1);
    struct push_ctx c = {vkt_dev_fn(&g.v, "vkCmdPushDescriptorSetKHR"),
                         vkt_dev_fn(&g.v, "vkCmdPushDescriptorSetWithTemplateKHR"), VK_NULL_HANDLE};
    if (templ) {
        VkDescriptorUpdateTemplateEntry e = {
            0, 0, 2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 0, sizeof(VkDescriptorBufferInfo)};
        VkDescriptorUpdateTemplateCreateInfo tci = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_UPDATE_TEMPLATE_CREATE_INFO,
            .descriptorUpdateEntryCount = 1,
            .pDescriptorUpdateEntries = &e,
            .templateType = VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_PUSH_DESCRIPTORS_KHR,
            .pipelineBindPoint = VK_PIPELINE_BIND_POINT_COMPUTE,
            .pipelineLayout = g.p.layout,
            .set = 0};
        VKT_CHECK(vkCreateDescriptorUpdateTemplate(g.v.dev, &tci, NULL, &c.templ));
    }
    two_rounds(&g, bind_push, &c);
    if (templ)
        vkDestroyDescriptorUpdateTemplate(g.v.dev, c.templ, NULL);
    done(&g);
    return 0;
}

static int mode_query(const char *argv0)
{
    struct prog g;
    setup(&g, argv0, NULL, 0);
    VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                 .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                 .queryCount = 4};
    VkQueryPool qp;
    VKT_CHECK(vkCreateQueryPool(g.v.dev, &qci, NULL, &qp));
    begin(&g);
    vkCmdResetQueryPool(g.cb, qp, 0, 4);
    for (uint32_t q = 0; q < 4; q++)
        vkCmdWriteTimestamp(g.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, q);
    /* 4 x (timestamp, availability) as 64-bit words: a device write into the buffer */
    vkCmdCopyQueryPoolResults(g.cb, qp, 0, 4, g.out.buf, 0, 16,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT |
                                  VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    submit_wait(&g);
    const uint64_t *r = g.out.map;
    uint32_t avail = 0;
    for (uint32_t q = 0; q < 4; q++)
        avail += r[2 * q + 1] != 0;
    printf("query results copied: %u of 4 available\n", avail);
    vkDestroyQueryPool(g.v.dev, qp, NULL);
    done(&g);
    return 0;
}

static int mode_address(const char *argv0)
{
    struct vkt_opts o = {.buffer_device_address = 1};
    struct prog g;
    setup(&g, argv0, &o, 0);
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = 4096,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                       VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT};
    VkBuffer b;
    VKT_CHECK(vkCreateBuffer(g.v.dev, &bci, NULL, &b));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g.v.dev, b, &req);
    uint32_t type = 0;
    while (type < g.v.mem.memoryTypeCount && !(req.memoryTypeBits & (1u << type)))
        type++;
    VkMemoryAllocateFlagsInfo fi = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                    .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .pNext = &fi,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    VkDeviceMemory m;
    VKT_CHECK(vkAllocateMemory(g.v.dev, &mai, NULL, &m));
    VKT_CHECK(vkBindBufferMemory(g.v.dev, b, m, 0));
    VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                    .buffer = b};
    VkDeviceAddress a = vkGetBufferDeviceAddress(g.v.dev, &ai);
    printf("buffer device address %s\n", a ? "nonzero" : "zero");
    vkDestroyBuffer(g.v.dev, b, NULL);
    vkFreeMemory(g.v.dev, m, NULL);
    done(&g);
    return 0;
}

static int mode_image(const char *argv0)
{
    struct prog g;
    setup(&g, argv0, NULL, 0);
    VkImageCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                             .imageType = VK_IMAGE_TYPE_2D,
                             .format = VK_FORMAT_R8G8B8A8_UNORM,
                             .extent = {16, 16, 1},
                             .mipLevels = 1,
                             .arrayLayers = 1,
                             .samples = VK_SAMPLE_COUNT_4_BIT,
                             .tiling = VK_IMAGE_TILING_OPTIMAL,
                             .usage = VK_IMAGE_USAGE_SAMPLED_BIT};
    VkImageFormatProperties ifp;
    if (vkGetPhysicalDeviceImageFormatProperties(g.v.phys, ici.format, ici.imageType, ici.tiling,
                                                 ici.usage, 0, &ifp) != VK_SUCCESS ||
        !(ifp.sampleCounts & VK_SAMPLE_COUNT_4_BIT)) {
        fprintf(stderr, "no 4x multisampled sampled images here\n");
        exit(4);
    }
    VkImage img;
    VKT_CHECK(vkCreateImage(g.v.dev, &ici, NULL, &img));
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(g.v.dev, img, &req);
    uint32_t type = 0;
    while (type < g.v.mem.memoryTypeCount && !(req.memoryTypeBits & (1u << type)))
        type++;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    VkDeviceMemory m;
    VKT_CHECK(vkAllocateMemory(g.v.dev, &mai, NULL, &m));
    VKT_CHECK(vkBindImageMemory(g.v.dev, img, m, 0));
    VkImageViewCreateInfo vci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
                                 .image = img,
                                 .viewType = VK_IMAGE_VIEW_TYPE_2D,
                                 .format = VK_FORMAT_R8G8B8A8_UNORM,
                                 .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    VkImageView view;
    VKT_CHECK(vkCreateImageView(g.v.dev, &vci, NULL, &view));
    VkDescriptorSetLayoutBinding lb = {.binding = 0,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE,
                                       .descriptorCount = 1,
                                       .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo lci = {.sType =
                                               VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 1,
                                           .pBindings = &lb};
    VkDescriptorSetLayout dsl;
    VKT_CHECK(vkCreateDescriptorSetLayout(g.v.dev, &lci, NULL, &dsl));
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, 1};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 1,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &ps};
    VkDescriptorPool dp;
    VKT_CHECK(vkCreateDescriptorPool(g.v.dev, &dpci, NULL, &dp));
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = dp,
                                       .descriptorSetCount = 1,
                                       .pSetLayouts = &dsl};
    VkDescriptorSet set;
    VKT_CHECK(vkAllocateDescriptorSets(g.v.dev, &dai, &set));
    VkDescriptorImageInfo ii = {VK_NULL_HANDLE, view, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = set,
                              .descriptorCount = 1,
                              .descriptorType = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE,
                              .pImageInfo = &ii};
    vkUpdateDescriptorSets(g.v.dev, 1, &w, 0, NULL);
    printf("multisampled image descriptor written\n");
    vkDestroyDescriptorPool(g.v.dev, dp, NULL);
    vkDestroyDescriptorSetLayout(g.v.dev, dsl, NULL);
    vkDestroyImageView(g.v.dev, view, NULL);
    vkDestroyImage(g.v.dev, img, NULL);
    vkFreeMemory(g.v.dev, m, NULL);
    done(&g);
    return 0;
}

/* The test layer's command (tests/vk/layer_fakecmd.c has the same signature). */
typedef uint64_t(VKAPI_PTR *PFN_vkReprisetestSumREPRISE)(VkDevice, uint64_t, uint32_t, double,
                                                         uint64_t, float, uint64_t, uint64_t,
                                                         double, uint32_t);

static int mode_unknown(const char *argv0)
{
    struct prog g;
    setup(&g, argv0, NULL, 0);
    PFN_vkReprisetestSumREPRISE sum = vkt_dev_fn(&g.v, "vkReprisetestSumREPRISE");
    /* the first call takes the trampoline's first-call path, the second its fast path */
    for (uint32_t i = 1; i <= 2; i++)
        printf("vkReprisetestSumREPRISE = %llu\n",
               (unsigned long long)sum(g.v.dev, 1000 * i, 2, 3.5, 40, 0.25f, 600, 7000, 0.125,
                                       80000 * i));
    done(&g);
    return 0;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "plain"))
        return mode_plain(argv[0], 0);
    if (!strcmp(m, "lost"))
        return mode_plain(argv[0], 1);
    if (!strcmp(m, "chain")) {
        static const VkMemoryOpaqueCaptureAddressAllocateInfo no_address = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_OPAQUE_CAPTURE_ADDRESS_ALLOCATE_INFO};
        vkt_alloc_chain = &no_address;
        return mode_plain(argv[0], 0);
    }
    if (!strcmp(m, "push"))
        return mode_push(argv[0], 0);
    if (!strcmp(m, "push-template"))
        return mode_push(argv[0], 1);
    if (!strcmp(m, "query"))
        return mode_query(argv[0]);
    if (!strcmp(m, "address"))
        return mode_address(argv[0]);
    if (!strcmp(m, "image"))
        return mode_image(argv[0]);
    if (!strcmp(m, "unknown"))
        return mode_unknown(argv[0]);
    fprintf(
        stderr,
        "usage: vk_unmodelled plain|push|push-template|query|address|image|unknown|lost|chain\n");
    return 2;
}
