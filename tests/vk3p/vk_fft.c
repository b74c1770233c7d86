/*
 * tests/vk3p/vk_fft.c — a third-party Vulkan compute workload for the capture tests: VkFFT
 * (Debian package libvkfft-dev, header-only; it generates GLSL, compiles it with glslang at
 * run time and records its own pipelines, descriptor sets, push constants and dispatches).
 * A 2D 256x256 complex FFT forward, then inverse, on a host-visible buffer; prints a checksum
 * of the result bits (lavapipe is deterministic run to run). Linked with the helper
 * tests/vk/vkt.o. Built by the Makefile, against a patched copy of vkFFT.h (the Makefile says
 * why), where /usr/include/vkFFT.h and glslang's headers are installed. Exit 4: no device; 1: a
 * Vulkan or VkFFT call failed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <vkFFT.h>

#ifdef __cplusplus /* vkFFT.h needs C++ (empty initializers): built with c++ -x c++ */
extern "C" {
#endif
#include "tests/vk/vkt.h"
#ifdef __cplusplus
}
#endif

#define NX 256u
#define NY 256u

static void run_fft(VkFFTApplication *app, struct vkt *v, VkCommandPool pool, VkFence fence,
                    VkBuffer buf, int inverse)
{
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkCommandBuffer cb;
    VKT_CHECK(vkAllocateCommandBuffers(v->dev, &ai, &cb));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VKT_CHECK(vkBeginCommandBuffer(cb, &bi));
    VkFFTLaunchParams lp;
    memset(&lp, 0, sizeof lp);
    lp.commandBuffer = &cb;
    lp.buffer = &buf;
    VkFFTResult r = VkFFTAppend(app, inverse, &lp);
    if (r != VKFFT_SUCCESS) {
        fprintf(stderr, "VkFFTAppend: error %d\n", (int)r);
        exit(1);
    }
    VKT_CHECK(vkEndCommandBuffer(cb));
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    VKT_CHECK(vkQueueSubmit(v->queue[0], 1, &si, fence));
    VKT_CHECK(vkWaitForFences(v->dev, 1, &fence, VK_TRUE, UINT64_MAX));
    VKT_CHECK(vkResetFences(v->dev, 1, &fence));
    vkFreeCommandBuffers(v->dev, pool, 1, &cb);
}

int main(int argc, char **argv)
{
    (void)argc;
    struct vkt v;
    vkt_init(&v, argv[0], 1);
    struct vkt_buf b;
    uint64_t size = (uint64_t)NX * NY * 2 * sizeof(float);
    vkt_buffer(&v, size, 1, &b);
    float *x = b.map;
    for (uint32_t i = 0; i < NX * NY; i++) {
        x[2 * i] = (float)((i * 2654435761u) >> 20) / 4096.0f;
        x[2 * i + 1] = (float)(i % 17) - 8.0f;
    }
    VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .queueFamilyIndex = v.family};
    VkCommandPool pool;
    VKT_CHECK(vkCreateCommandPool(v.dev, &cpci, NULL, &pool));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    VKT_CHECK(vkCreateFence(v.dev, &fci, NULL, &fence));

    VkFFTConfiguration c;
    memset(&c, 0, sizeof c);
    c.FFTdim = 2;
    c.size[0] = NX;
    c.size[1] = NY;
    c.physicalDevice = &v.phys;
    c.device = &v.dev;
    c.queue = &v.queue[0];
    c.commandPool = &pool;
    c.fence = &fence;
    c.buffer = &b.buf;
    c.bufferSize = &size;
    VkFFTApplication app;
    memset(&app, 0, sizeof app);
    VkFFTResult r = initializeVkFFT(&app, c);
    if (r != VKFFT_SUCCESS) {
        fprintf(stderr, "initializeVkFFT: error %d\n", (int)r);
        return 1;
    }
    run_fft(&app, &v, pool, fence, b.buf, -1);
    uint64_t h = vkt_sum(0, b.map, size);
    run_fft(&app, &v, pool, fence, b.buf, 1);
    h = vkt_sum(h, b.map, size);
    printf("vk_fft checksum %016" PRIx64 "\n", h);
    deleteVkFFT(&app);
    vkDestroyFence(v.dev, fence, NULL);
    vkDestroyCommandPool(v.dev, pool, NULL);
    vkt_buffer_free(&v, &b);
    vkt_done(&v);
    return 0;
}
