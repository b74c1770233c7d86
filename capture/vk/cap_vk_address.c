/*
 * capture/vk/cap_vk_address.c — buffer device addresses. A shader that dereferences addresses
 * (PhysicalStorageBuffer pointers) reads pointers the program put in push constants and
 * buffers as raw data, so a replay is exact only when every buffer has its captured address
 * again. Vulkan offers that as bufferDeviceAddressCaptureReplay: a buffer or allocation created
 * with the capture-replay flag has an opaque capture address, and a later one created with
 * that opaque address gets the same device address.
 *
 * So when the program enables bufferDeviceAddress and the device offers capture-replay, the
 * layer turns capture-replay on at device creation (the device row says so: ADDRESS_REPLAY),
 * adds the capture-replay flag to every buffer with SHADER_DEVICE_ADDRESS usage and every
 * allocation with DEVICE_ADDRESS, and records their opaque capture addresses (CREATE_BUFFER,
 * MEMORY). vkGetBufferDeviceAddress is recorded (BUFFER_ADDRESS) so replay can check it gets
 * the same address. Where the device does not offer capture-replay the trace is complete all
 * the same, and replay refuses a trace whose shaders use addresses (exit 4, saying why).
 *
 * Changing what the program asked for means copying what it passed: the create infos are
 * const. A pNext chain is copied up to the structure that changes, which works when every
 * structure before it has a size the layer knows (features structures, the loader's link and
 * the usual allocation structures); otherwise the layer leaves it alone and says so.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

/* ========================================================================================== */
/* Copies of pNext chains                                                                     */
/* ========================================================================================== */

/* The size of a structure the layer may copy out of a chain, 0 if it does not know it. */
static size_t struct_size(uint32_t stype)
{
    if (stype == SBT_VK_STYPE_FEATURES2)
        return sizeof(VkPhysicalDeviceFeatures2);
    const struct sbt_vk_feature_struct *t = sbt_vk_feature_struct(stype);
    if (t) /* sType, pNext, n VkBool32 (format/sbt_vk.h) */
        return offsetof(VkPhysicalDeviceVulkan12Features, samplerMirrorClampToEdge) +
               t->n * sizeof(VkBool32);
    switch (stype) {
    case VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO:
        return sizeof(VkLayerDeviceCreateInfo);
    case VK_STRUCTURE_TYPE_DEVICE_GROUP_DEVICE_CREATE_INFO:
        return sizeof(VkDeviceGroupDeviceCreateInfo);
    case VK_STRUCTURE_TYPE_DEVICE_PRIVATE_DATA_CREATE_INFO:
        return sizeof(VkDevicePrivateDataCreateInfo);
    case VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO:
        return sizeof(VkMemoryAllocateFlagsInfo);
    case VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO:
        return sizeof(VkMemoryDedicatedAllocateInfo);
    case VK_STRUCTURE_TYPE_MEMORY_OPAQUE_CAPTURE_ADDRESS_ALLOCATE_INFO:
        return sizeof(VkMemoryOpaqueCaptureAddressAllocateInfo);
    case VK_STRUCTURE_TYPE_MEMORY_PRIORITY_ALLOCATE_INFO_EXT:
        return sizeof(VkMemoryPriorityAllocateInfoEXT);
    case VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO:
        return sizeof(VkExportMemoryAllocateInfo);
    default:
        return 0;
    }
}

/* Copies the structures of chain up to and including the first of type stype into one
 * allocation (*mem, the caller frees it): returns the copy's head and in *target the copy of
 * that structure; NULL when the chain has no such structure, a structure before it has a size
 * the layer does not know, or memory ran out. */
static void *chain_copy(const void *chain, uint32_t stype, VkBaseOutStructure **target, void **mem)
{
    size_t total = 0;
    const VkBaseInStructure *s = chain;
    for (; s; s = s->pNext) {
        size_t n = struct_size((uint32_t)s->sType);
        if (!n)
            return NULL;
        total += (n + 7) & ~(size_t)7;
        if ((uint32_t)s->sType == stype)
            break;
    }
    if (!s || !(*mem = malloc(total)))
        return NULL;
    uint8_t *p = *mem;
    VkBaseOutStructure *head = NULL, *prev = NULL;
    for (s = chain;; s = s->pNext) {
        size_t n = struct_size((uint32_t)s->sType);
        VkBaseOutStructure *c = (VkBaseOutStructure *)p;
        memcpy(c, s, n);
        p += (n + 7) & ~(size_t)7;
        if (prev)
            prev->pNext = c;
        else
            head = c;
        prev = c;
        if ((uint32_t)s->sType == stype) {
            *target = c; /* its pNext still leads to the rest of the program's chain */
            return head;
        }
    }
}

/* ========================================================================================== */
/* Device creation                                                                            */
/* ========================================================================================== */

/* Member `field` of a features structure of the registry's table, or NULL. */
static VkBool32 *feature(void *s, const char *field)
{
    const struct sbt_vk_feature_struct *t =
        sbt_vk_feature_struct((uint32_t)((VkBaseOutStructure *)s)->sType);
    for (uint32_t i = 0; t && i < t->n; i++)
        if (!strcmp(t->fields[i], field))
            return (VkBool32 *)((uint8_t *)s + offsetof(VkPhysicalDeviceVulkan12Features,
                                                        samplerMirrorClampToEdge)) +
                   i;
    return NULL;
}

void *cap_addr_device_info(struct cap_inst *in, VkPhysicalDevice phys, VkDeviceCreateInfo *ci,
                           int *on)
{
    *on = 0;
    /* the structure that enables bufferDeviceAddress, if the program enables it */
    uint32_t stype = 0;
    for (const VkBaseInStructure *s = ci->pNext; s && !stype; s = s->pNext) {
        const VkBool32 *f = feature((void *)s, "bufferDeviceAddress");
        const VkBool32 *cr = feature((void *)s, "bufferDeviceAddressCaptureReplay");
        if (f && *f && cr) {
            stype = (uint32_t)s->sType;
            *on = *cr; /* the program asked for it itself */
        }
    }
    if (!stype || *on || !in->fn.GetPhysicalDeviceFeatures2)
        return NULL;
    VkPhysicalDeviceBufferDeviceAddressFeatures have = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &have};
    in->fn.GetPhysicalDeviceFeatures2(phys, &f2);
    if (!have.bufferDeviceAddressCaptureReplay)
        return NULL; /* replay refuses what needs addresses, saying so */
    void *mem = NULL;
    VkBaseOutStructure *t = NULL;
    void *head = chain_copy(ci->pNext, stype, &t, &mem);
    if (!head) {
        cap_unmodelled(NULL,
                       "vkCreateDevice (bufferDeviceAddressCaptureReplay not turned on: the "
                       "features chain holds a structure the layer cannot copy)",
                       0);
        return NULL;
    }
    *feature(t, "bufferDeviceAddressCaptureReplay") = VK_TRUE;
    ci->pNext = head;
    *on = 1;
    return mem;
}

/* ========================================================================================== */
/* Allocations and buffers                                                                    */
/* ========================================================================================== */

void *cap_addr_alloc_info(struct cap_dev *d, VkMemoryAllocateInfo *ai)
{
    if (!d->addr_replay)
        return NULL;
    const VkMemoryAllocateFlagsInfo *fi = NULL;
    for (const VkBaseInStructure *s = ai->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO)
            fi = (const VkMemoryAllocateFlagsInfo *)s;
    if (!fi || !(fi->flags & VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT) ||
        (fi->flags & VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT))
        return NULL;
    void *mem = NULL;
    VkBaseOutStructure *t = NULL;
    void *head = chain_copy(ai->pNext, VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO, &t, &mem);
    if (!head) {
        cap_unmodelled(d,
                       "vkAllocateMemory (device-address memory the layer could not mark for "
                       "capture and replay)",
                       SBT_UNMODELLED_AFFECTS);
        return NULL;
    }
    ((VkMemoryAllocateFlagsInfo *)t)->flags |= VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT;
    ai->pNext = head;
    return mem;
}

uint64_t cap_addr_memory_opaque(struct cap_dev *d, const VkMemoryAllocateInfo *ai, VkDeviceMemory m)
{
    for (const VkBaseInStructure *s = ai->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO &&
            (((const VkMemoryAllocateFlagsInfo *)s)->flags &
             VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT) &&
            d->fn.GetDeviceMemoryOpaqueCaptureAddress) {
            VkDeviceMemoryOpaqueCaptureAddressInfo i = {
                .sType = VK_STRUCTURE_TYPE_DEVICE_MEMORY_OPAQUE_CAPTURE_ADDRESS_INFO, .memory = m};
            return d->fn.GetDeviceMemoryOpaqueCaptureAddress(d->handle, &i);
        }
    return 0;
}

uint64_t cap_addr_buffer_usage(const VkBufferCreateInfo *ci)
{
#ifdef VK_KHR_maintenance5
    for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_BUFFER_USAGE_FLAGS_2_CREATE_INFO_KHR)
            return ((const VkBufferUsageFlags2CreateInfoKHR *)s)->usage;
#endif
    return ci->usage;
}

int cap_addr_buffer_info(struct cap_dev *d, VkBufferCreateInfo *ci)
{
    if (!d->addr_replay || !(cap_addr_buffer_usage(ci) & VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT))
        return 0;
    ci->flags |= VK_BUFFER_CREATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT;
    return 1;
}

uint64_t cap_addr_buffer_opaque(struct cap_dev *d, const VkBufferCreateInfo *ci, VkBuffer b)
{
    if (!(ci->flags & VK_BUFFER_CREATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT) ||
        !d->fn.GetBufferOpaqueCaptureAddress)
        return 0;
    VkBufferDeviceAddressInfo i = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                   .buffer = b};
    return d->fn.GetBufferOpaqueCaptureAddress(d->handle, &i);
}

/* ========================================================================================== */
/* vkGetBufferDeviceAddress                                                                   */
/* ========================================================================================== */

/* The first time a buffer's address is handed out (and whenever it changes), a MARKER op with
 * a BUFFER_ADDRESS record: replay compares the address it gets. */
VKAPI_ATTR VkDeviceAddress VKAPI_CALL cap_GetBufferDeviceAddress(VkDevice device,
                                                                 const VkBufferDeviceAddressInfo *i)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkDeviceAddress a = d->fn.GetBufferDeviceAddress(device, i);
    if (!CAP_ON() || !a)
        return a;
    pthread_mutex_lock(&cap.mu);
    struct cap_buf *b = cap_obj_find(CAP_H(i->buffer), CAP_T_BUF);
    if (b && b->addr != a) {
        b->addr = a;
        struct sbt_payload_enc enc = {0};
        sbt_payload_put(&enc, SBT_VK_BUFFER_ADDRESS, (uint64_t[]){b->o.id, a}, 2, NULL, 0);
        cap_emit_marker(d, "vkGetBufferDeviceAddress", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return a;
}
