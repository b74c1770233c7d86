/*
 * tests/vk/vkt.h — boilerplate shared by the Vulkan test programs of the capture tests:
 * a headless instance and device (the first with a compute queue; lavapipe in CI), buffers in
 * host-visible or device-local memory, compute pipelines from the .spv files built beside the
 * programs, and a checksum that every program prints so runs with and without capture compare.
 * Errors print one line and exit 4 (no device) or 1 (a Vulkan call failed).
 */
#ifndef REPRISE_TESTS_VKT_H
#define REPRISE_TESTS_VKT_H

#include <stdint.h>
#include <vulkan/vulkan.h>

#define VKT_CHECK(call)                                 \
    do {                                                \
        VkResult vkt_r_ = (call);                       \
        if (vkt_r_ != VK_SUCCESS)                       \
            vkt_die(__FILE__, __LINE__, #call, vkt_r_); \
    } while (0)

struct vkt {
    VkInstance inst;
    VkPhysicalDevice phys;
    VkDevice dev;
    uint32_t family;
    uint32_t n_queues;
    VkQueue queue[4];
    VkPhysicalDeviceMemoryProperties mem;
    const char *spv_dir; /* directory of the .spv files: the program's own */
    VkCommandPool pool;  /* vkt_cmdbuf's, made on first use */
};

struct vkt_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    void *map; /* host-visible buffers stay mapped */
};

void vkt_die(const char *file, int line, const char *what, VkResult r);
/* Instance (API 1.3) and device with up to max_queues queues of one compute family and the
 * timeline semaphore and synchronization2 features. argv0 locates the .spv files. */
void vkt_init(struct vkt *v, const char *argv0, uint32_t max_queues);
/* What vkt_init_opts adds to that device. A missing extension or feature exits 4. */
struct vkt_opts {
    const char *const *extensions; /* device extensions to enable */
    uint32_t n_extensions;
    int buffer_device_address; /* the bufferDeviceAddress feature */
    /* more features: the VkBool32 members set here are turned on in vkt's own 1.2 / 1.3
     * structures (sType and pNext are ignored); chain: other features structures, as given */
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceVulkan13Features f13;
    void *chain;
};
void vkt_init_opts(struct vkt *v, const char *argv0, uint32_t max_queues, const struct vkt_opts *o);
void vkt_done(struct vkt *v);
/* A storage buffer (with uniform, texel, transfer src/dst and indirect usage) in its own
 * allocation. */
void vkt_buffer(struct vkt *v, VkDeviceSize size, int host_visible, struct vkt_buf *out);
void vkt_buffer_free(struct vkt *v, struct vkt_buf *b);
/* Compute pipeline from <spv_dir>/<name>.spv with n storage/uniform bindings in set 0
 * (types[i]) and push constants of pc_bytes; spec = one uint32 specialization constant 0
 * (NULL for none). */
struct vkt_pipe {
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipe;
    VkShaderModule mod;
};
/* Set to 1 to leave ignored pointers NULL instead of garbage (pImmutableSamplers on buffer
 * bindings): the benchmark runs other capture tools, and GFXReconstruct 0.9.18 crashes on the
 * garbage the specification allows. */
extern int vkt_clean_structs;
/* Flags of the descriptor set layout vkt_pipeline makes (push descriptors), 0 by default. */
extern VkDescriptorSetLayoutCreateFlags vkt_set_layout_flags;
/* A pNext chain for the allocations vkt_buffer makes (NULL by default). */
extern const void *vkt_alloc_chain;
void vkt_pipeline(struct vkt *v, const char *name, uint32_t n, const VkDescriptorType *types,
                  uint32_t pc_bytes, const uint32_t *spec, struct vkt_pipe *out);
/* The same with the set layout's bindings given (images, immutable samplers, arrays). */
void vkt_pipeline_bindings(struct vkt *v, const char *name, uint32_t n,
                           const VkDescriptorSetLayoutBinding *b, uint32_t pc_bytes,
                           const uint32_t *spec, struct vkt_pipe *out);
void vkt_pipeline_free(struct vkt *v, struct vkt_pipe *p);
/* <spv_dir>/<name>.spv into code (at most cap bytes); its length in bytes. Exits 1 without it. */
size_t vkt_spirv(struct vkt *v, const char *name, uint32_t *code, size_t cap);
VkShaderModule vkt_module(struct vkt *v, const char *name);
/* A memory type among bits with the flags want; exits 4 without one. */
uint32_t vkt_mem_type(struct vkt *v, uint32_t bits, VkMemoryPropertyFlags want);
/* A device function; exits 4 when the device has none by that name. */
void *vkt_dev_fn(struct vkt *v, const char *name);
/* Records and submits cb on queue 0 and waits for it (cb must be in the recording state). */
void vkt_submit_wait(struct vkt *v, VkCommandBuffer cb);
/* A primary command buffer (of v->pool, which vkt_done destroys). */
VkCommandBuffer vkt_cmdbuf(struct vkt *v);
/* Begins recording cb (one-time submit). */
void vkt_begin(VkCommandBuffer cb);
/* FNV-1a over bytes, chained through h (start with 0). */
uint64_t vkt_sum(uint64_t h, const void *p, size_t n);

#endif
