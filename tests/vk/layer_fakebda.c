/*
 * tests/vk/layer_fakebda.c — VK_LAYER_REPRISE_fakebda, a test-only Vulkan layer that gives
 * lavapipe bufferDeviceAddressCaptureReplay, which it lacks, so that the capture and replay of
 * buffer device addresses (capture/vk/cap_vk_address.c, replay/vk/replay_vk_memory.c) run end to
 * end in CI.
 *
 * How: lavapipe's device address of a buffer is the host address of its memory plus the
 * buffer's offset. So every allocation with VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT is made
 * here from host memory mapped at an address the layer chooses (VK_EXT_external_memory_host),
 * and that address is the allocation's opaque capture address. An allocation given an opaque
 * capture address (VkMemoryOpaqueCaptureAddressAllocateInfo) is mapped at exactly that address
 * again, so its buffers get their captured device addresses. Addresses are handed out from a
 * fixed arena in allocation order. Buffers report opaque address 0 (their address follows their
 * memory, as on drivers that derive it so).
 *
 * The layer advertises the feature, takes it (and the capture-replay flags and structures) out
 * of what reaches lavapipe, and enables VK_EXT_external_memory_host. As a test layer it edits
 * the create infos it is given in place for the duration of the call (its callers are the
 * capture layer, replay and our test programs, none with read-only create infos). One instance
 * and one device at a time.
 * Reference: Vulkan-Loader docs/LoaderLayerInterface.md; VK_EXT_external_memory_host.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "tests/vk/layer_common.h"

#define ARENA      0x7e5000000000ull /* where the allocations' host memory goes */
#define ARENA_SIZE (1ull << 36)
#define MAX_MEM    256

static PFN_vkGetPhysicalDeviceFeatures2 next_features2;
static PFN_vkAllocateMemory next_alloc;
static PFN_vkFreeMemory next_free;
static PFN_vkCreateBuffer next_create_buffer;
static uint64_t arena_next = ARENA;
static struct {
    VkDeviceMemory mem;
    uint64_t addr, size;
} mems[MAX_MEM];

static VkBool32 *bda_member(VkBaseOutStructure *s, int capture_replay)
{
    switch ((uint32_t)s->sType) {
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
        VkPhysicalDeviceVulkan12Features *f = (void *)s;
        return capture_replay ? &f->bufferDeviceAddressCaptureReplay : &f->bufferDeviceAddress;
    }
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES: {
        VkPhysicalDeviceBufferDeviceAddressFeatures *f = (void *)s;
        return capture_replay ? &f->bufferDeviceAddressCaptureReplay : &f->bufferDeviceAddress;
    }
    default:
        return NULL;
    }
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPhysicalDeviceFeatures2(VkPhysicalDevice p,
                                                                  VkPhysicalDeviceFeatures2 *f)
{
    next_features2(p, f);
    for (VkBaseOutStructure *s = (void *)f; s; s = s->pNext)
        if (bda_member(s, 0) && *bda_member(s, 0))
            *bda_member(s, 1) = VK_TRUE;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateInstance(const VkInstanceCreateInfo *ci,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkInstance *out)
{
    PFN_vkCreateInstance next = layer_next_create_instance(ci);
    VkResult r = next ? next(ci, alloc, out) : VK_ERROR_INITIALIZATION_FAILED;
    if (r == VK_SUCCESS) {
        instance = *out;
        next_features2 =
            (PFN_vkGetPhysicalDeviceFeatures2)next_gipa(*out, "vkGetPhysicalDeviceFeatures2");
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateDevice(VkPhysicalDevice phys,
                                                        const VkDeviceCreateInfo *ci,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkDevice *out)
{
    PFN_vkCreateDevice next = layer_next_create_device(ci);
    /* lavapipe gets neither the feature (it would refuse it) nor fewer extensions than it needs */
    VkBool32 *cr[8];
    int n_cr = 0;
    for (VkBaseOutStructure *s = (void *)ci->pNext; s && n_cr < 8; s = s->pNext)
        if (bda_member(s, 1) && *bda_member(s, 1)) {
            cr[n_cr++] = bda_member(s, 1);
            *bda_member(s, 1) = VK_FALSE;
        }
    const char *ext[64];
    uint32_t n = ci->enabledExtensionCount < 63 ? ci->enabledExtensionCount : 63;
    for (uint32_t i = 0; i < n; i++)
        ext[i] = ci->ppEnabledExtensionNames[i];
    ext[n++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    VkDeviceCreateInfo ci2 = *ci;
    ci2.enabledExtensionCount = n;
    ci2.ppEnabledExtensionNames = ext;
    VkResult r = next ? next(phys, &ci2, alloc, out) : VK_ERROR_INITIALIZATION_FAILED;
    for (int i = 0; i < n_cr; i++)
        *cr[i] = VK_TRUE;
    if (r == VK_SUCCESS) {
        next_alloc = (PFN_vkAllocateMemory)next_gdpa(*out, "vkAllocateMemory");
        next_free = (PFN_vkFreeMemory)next_gdpa(*out, "vkFreeMemory");
        next_create_buffer = (PFN_vkCreateBuffer)next_gdpa(*out, "vkCreateBuffer");
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_AllocateMemory(VkDevice dev,
                                                          const VkMemoryAllocateInfo *ai,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkDeviceMemory *out)
{
    const VkMemoryAllocateFlagsInfo *fi = NULL;
    uint64_t want = 0;
    for (const VkBaseInStructure *s = ai->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO)
            fi = (const void *)s;
        else if (s->sType == VK_STRUCTURE_TYPE_MEMORY_OPAQUE_CAPTURE_ADDRESS_ALLOCATE_INFO)
            want = ((const VkMemoryOpaqueCaptureAddressAllocateInfo *)s)->opaqueCaptureAddress;
    if (!fi || !(fi->flags & VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT))
        return next_alloc(dev, ai, alloc, out);
    int slot = 0;
    while (slot < MAX_MEM && mems[slot].mem)
        slot++;
    uint64_t size = (ai->allocationSize + 4095) & ~4095ull;
    uint64_t addr = want ? want : arena_next;
    if (slot == MAX_MEM || addr < ARENA || addr + size > ARENA + ARENA_SIZE)
        return VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS;
    void *p = mmap((void *)(uintptr_t)addr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != (void *)(uintptr_t)addr) {
        if (p != MAP_FAILED)
            munmap(p, size);
        return VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS;
    }
    if (!want || addr + size > arena_next)
        arena_next = addr + size;
    VkImportMemoryHostPointerInfoEXT imp = {
        .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
        .pHostPointer = p};
    VkMemoryAllocateFlagsInfo f2 = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                    .pNext = &imp,
                                    .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo a2 = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .pNext = &f2,
                               .allocationSize = size,
                               .memoryTypeIndex = ai->memoryTypeIndex};
    VkResult r = next_alloc(dev, &a2, alloc, out);
    if (r != VK_SUCCESS) {
        munmap(p, size);
        return r;
    }
    mems[slot].mem = *out;
    mems[slot].addr = addr;
    mems[slot].size = size;
    return r;
}

static VKAPI_ATTR void VKAPI_CALL fake_FreeMemory(VkDevice dev, VkDeviceMemory m,
                                                  const VkAllocationCallbacks *alloc)
{
    next_free(dev, m, alloc);
    for (int i = 0; m && i < MAX_MEM; i++)
        if (mems[i].mem == m) {
            munmap((void *)(uintptr_t)mems[i].addr, mems[i].size);
            mems[i].mem = VK_NULL_HANDLE;
        }
}

static VKAPI_ATTR uint64_t VKAPI_CALL fake_GetDeviceMemoryOpaqueCaptureAddress(
    VkDevice dev, const VkDeviceMemoryOpaqueCaptureAddressInfo *i)
{
    (void)dev;
    for (int k = 0; k < MAX_MEM; k++)
        if (mems[k].mem && mems[k].mem == i->memory)
            return mems[k].addr;
    return 0;
}

static VKAPI_ATTR uint64_t VKAPI_CALL
fake_GetBufferOpaqueCaptureAddress(VkDevice dev, const VkBufferDeviceAddressInfo *i)
{
    (void)dev;
    (void)i;
    return 0; /* the address follows the memory's */
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateBuffer(VkDevice dev, const VkBufferCreateInfo *ci,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkBuffer *out)
{
    VkBufferCreateInfo c = *ci;
    c.flags &= ~(VkBufferCreateFlags)VK_BUFFER_CREATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT;
    while (c.pNext && ((const VkBaseInStructure *)c.pNext)->sType ==
                          VK_STRUCTURE_TYPE_BUFFER_OPAQUE_CAPTURE_ADDRESS_CREATE_INFO)
        c.pNext = ((const VkBaseInStructure *)c.pNext)->pNext;
    return next_create_buffer(dev, &c, alloc, out);
}

/* The layer's own functions (tests/vk/layer_common.h); none wraps a command the driver may lack. */
static PFN_vkVoidFunction own(const char *name, int *wraps)
{
    *wraps = 0;
    static const struct {
        const char *name;
        PFN_vkVoidFunction fn;
    } t[] = {
        {"vkCreateInstance", (PFN_vkVoidFunction)fake_CreateInstance},
        {"vkCreateDevice", (PFN_vkVoidFunction)fake_CreateDevice},
        {"vkGetPhysicalDeviceFeatures2", (PFN_vkVoidFunction)fake_GetPhysicalDeviceFeatures2},
        {"vkGetPhysicalDeviceFeatures2KHR", (PFN_vkVoidFunction)fake_GetPhysicalDeviceFeatures2},
        {"vkAllocateMemory", (PFN_vkVoidFunction)fake_AllocateMemory},
        {"vkFreeMemory", (PFN_vkVoidFunction)fake_FreeMemory},
        {"vkCreateBuffer", (PFN_vkVoidFunction)fake_CreateBuffer},
        {"vkGetDeviceMemoryOpaqueCaptureAddress",
         (PFN_vkVoidFunction)fake_GetDeviceMemoryOpaqueCaptureAddress},
        {"vkGetDeviceMemoryOpaqueCaptureAddressKHR",
         (PFN_vkVoidFunction)fake_GetDeviceMemoryOpaqueCaptureAddress},
        {"vkGetBufferOpaqueCaptureAddress", (PFN_vkVoidFunction)fake_GetBufferOpaqueCaptureAddress},
        {"vkGetBufferOpaqueCaptureAddressKHR",
         (PFN_vkVoidFunction)fake_GetBufferOpaqueCaptureAddress},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(name, t[i].name))
            return t[i].fn;
    return NULL;
}
