/*
 * capture/cap_vk_layer.c — VK_LAYER_REPRISE_capture: the loader interface, the per-instance
 * and per-device dispatch tables, and the intercepted calls of the compute subset. State
 * changes (memory, buffers, modules, layouts, pipelines, descriptor sets, sync objects) become
 * table rows and MARKER/ALLOC/FREE ops with payloads from format/sbt_vk.h; vkCmd* calls are
 * appended to their command buffer's own raw recording (no lock: the application already
 * serialises use of a command buffer) and expanded into ops at submit (cap_vk_submit.c).
 *
 * Reading structures. Only the fields the specification says are meaningful are read:
 * pImmutableSamplers only for sampler types, pBufferInfo only for buffer descriptor types,
 * pTexelBufferView only for texel buffers, pNext chains walked by sType and never assumed.
 *
 * Failure. Shadow bookkeeping that runs out of memory calls cap_fail(); from then on every
 * call is passed straight down (cap.on == 0) and the trace is marked incomplete.
 *
 * Reference: Vulkan-Loader docs/LoaderLayerInterface.md (negotiation, chain info, dispatch
 * keys); Vulkan 1.3 specification.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/cap_vk_int.h"

#define ON()    atomic_load_explicit(&cap.on, memory_order_relaxed)
#define COUNT() atomic_fetch_add_explicit(&cap.n_calls, 1, memory_order_relaxed)
#define H(x)    ((uint64_t)(uintptr_t)(x))

/* ========================================================================================== */
/* Instances and devices by dispatch key                                                      */
/* ========================================================================================== */

#define MAX_INST 16
#define MAX_DEV  32
static struct cap_inst *insts[MAX_INST];
static struct cap_dev *devs[MAX_DEV];
static pthread_mutex_t tab_mu = PTHREAD_MUTEX_INITIALIZER;
/* Taken out of the tables but not freed (tab_mu): a racing call on another thread may still
 * read them. cap_layer_free_all() frees them at unload. */
static struct cap_inst *retired_insts;
static struct cap_dev *retired_devs;

static void *dkey(const void *dispatchable)
{
    return *(void *const *)dispatchable;
}

static struct cap_inst *inst_of(const void *h)
{
    void *k = dkey(h);
    for (int i = 0; i < MAX_INST; i++) {
        struct cap_inst *p = __atomic_load_n(&insts[i], __ATOMIC_ACQUIRE);
        if (p && p->key == k)
            return p;
    }
    return NULL;
}

static struct cap_dev *dev_of(const void *h)
{
    void *k = dkey(h);
    for (int i = 0; i < MAX_DEV; i++) {
        struct cap_dev *p = __atomic_load_n(&devs[i], __ATOMIC_ACQUIRE);
        if (p && p->key == k)
            return p;
    }
    return NULL;
}

/* ========================================================================================== */
/* Shadow objects                                                                             */
/* ========================================================================================== */

void *cap_obj_find(uint64_t handle, uint32_t t)
{
    return handle ? cap_map_get(&cap.objs[t], handle) : NULL;
}

/* Allocates a shadow of sz bytes and registers it. cap.mu held. NULL (and recording off) on
 * failure. */
static void *obj_new(size_t sz, uint32_t t, uint32_t vk_type, uint64_t handle, struct cap_dev *d)
{
    struct cap_obj *o = calloc(1, sz);
    if (!o) {
        cap_fail("out of memory for a shadow object");
        return NULL;
    }
    o->handle = handle;
    o->type = vk_type;
    o->id = cap_new_id();
    o->dev = d;
    cap.shadow_gen++;
    if (cap_map_put(&cap.objs[t], handle, o)) {
        free(o);
        cap_fail("out of memory tracking objects");
        return NULL;
    }
    return o;
}

static void *obj_del(uint64_t handle, uint32_t t)
{
    cap.shadow_gen++;
    return handle ? cap_map_del(&cap.objs[t], handle) : NULL;
}

/* ========================================================================================== */
/* Ops                                                                                        */
/* ========================================================================================== */

/* A host-stream op with a payload built in enc (copied). */
static struct cap_ev *op_ev(struct cap_dev *d, uint32_t kind, const char *name,
                            const struct sbt_vk_enc *enc, uint64_t t0)
{
    struct cap_ev *e = cap_ev_new(CAP_EV_OP);
    if (!e)
        return NULL;
    e->dev_id = d ? d->id : 0;
    e->name = name;
    e->op.kind = kind;
    e->op.host_begin = t0;
    e->op.host_end = cap_now();
    if (enc && enc->len) {
        if (sbt_vk_enc_status(enc)) {
            cap_fail("encoding %s: %s", name, sbt_errmsg());
            cap_ev_free_chain(e);
            return NULL;
        }
        e->payload = malloc(enc->len);
        if (!e->payload) {
            cap_fail("out of memory for a payload");
            cap_ev_free_chain(e);
            return NULL;
        }
        memcpy(e->payload, enc->buf, enc->len);
        e->payload_len = enc->len;
    }
    return e;
}

/* One MARKER op (a state change) with the records in enc. */
static void emit_marker(struct cap_dev *d, const char *name, struct sbt_vk_enc *enc, uint64_t t0)
{
    cap_emit(op_ev(d, SBT_OP_MARKER, name, enc, t0));
    sbt_vk_enc_free(enc);
}

static void emit_destroy(struct cap_dev *d, const char *name, uint32_t vk_type, uint64_t id,
                         uint64_t t0)
{
    struct sbt_vk_enc enc = {0};
    sbt_vk_enc_rec(&enc, SBT_VK_DESTROY, (uint64_t[]){vk_type, id}, 2, NULL, 0);
    emit_marker(d, name, &enc, t0);
}

/* ========================================================================================== */
/* Instance                                                                                   */
/* ========================================================================================== */

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateInstance(const VkInstanceCreateInfo *ci,
                                                         const VkAllocationCallbacks *alloc,
                                                         VkInstance *out)
{
    VkLayerInstanceCreateInfo *chain = (VkLayerInstanceCreateInfo *)ci->pNext;
    while (chain && !(chain->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
                      chain->function == VK_LAYER_LINK_INFO))
        chain = (VkLayerInstanceCreateInfo *)chain->pNext;
    if (!chain || !chain->u.pLayerInfo)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = chain->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    chain->u.pLayerInfo = chain->u.pLayerInfo->pNext;
    PFN_vkCreateInstance next = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
    if (!next)
        return VK_ERROR_INITIALIZATION_FAILED;
    VkResult r = next(ci, alloc, out);
    if (r != VK_SUCCESS)
        return r;
    cap_init_once();
    struct cap_inst *in = calloc(1, sizeof *in);
    if (!in) {
        cap_fail("out of memory for an instance");
        return r; /* without a table the layer cannot pass calls down: see inst_of users */
    }
    in->key = dkey(*out);
    in->handle = *out;
    in->gipa = gipa;
#define LOAD(n) in->n = (PFN_vk##n)gipa(*out, "vk" #n)
    LOAD(DestroyInstance);
    LOAD(CreateDevice);
    LOAD(EnumerateDeviceExtensionProperties);
    LOAD(GetPhysicalDeviceProperties);
    LOAD(GetPhysicalDeviceProperties2);
    LOAD(GetPhysicalDeviceMemoryProperties);
    LOAD(GetPhysicalDeviceQueueFamilyProperties);
#undef LOAD
    if (!in->GetPhysicalDeviceProperties2)
        in->GetPhysicalDeviceProperties2 =
            (PFN_vkGetPhysicalDeviceProperties2)gipa(*out, "vkGetPhysicalDeviceProperties2KHR");
    in->api_version = ci->pApplicationInfo ? ci->pApplicationInfo->apiVersion : 0;
    pthread_mutex_lock(&tab_mu);
    int placed = 0;
    for (int i = 0; i < MAX_INST && !placed; i++)
        if (!insts[i]) {
            __atomic_store_n(&insts[i], in, __ATOMIC_RELEASE);
            placed = 1;
        }
    pthread_mutex_unlock(&tab_mu);
    if (!placed) {
        cap_fail("more than %d Vulkan instances", MAX_INST);
        free(in);
    }
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyInstance(VkInstance instance,
                                                      const VkAllocationCallbacks *alloc)
{
    if (!instance)
        return;
    struct cap_inst *in = inst_of(instance);
    if (!in)
        return;
    PFN_vkDestroyInstance fn = in->DestroyInstance;
    pthread_mutex_lock(&tab_mu);
    for (int i = 0; i < MAX_INST; i++)
        if (insts[i] == in)
            __atomic_store_n(&insts[i], NULL, __ATOMIC_RELEASE);
    /* not freed here: a racing call on another thread may still read it */
    in->dead = 1;
    in->retired_next = retired_insts;
    retired_insts = in;
    pthread_mutex_unlock(&tab_mu);
    fn(instance, alloc);
}

/* ========================================================================================== */
/* Device                                                                                     */
/* ========================================================================================== */

/* Feature structs whose VkBool32 fields are recorded (they follow sType and pNext). */
static void enc_features(struct sbt_vk_enc *enc, const void *pnext)
{
    for (const VkBaseInStructure *s = pnext; s; s = s->pNext) {
        const VkBool32 *f = NULL;
        size_t n = 0;
        switch (s->sType) {
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2:
            f = (const VkBool32 *)&((const VkPhysicalDeviceFeatures2 *)s)->features;
            n = sizeof(VkPhysicalDeviceFeatures) / sizeof(VkBool32);
            break;
#define FEAT(ST, T)                                                                              \
    case ST:                                                                                     \
        f = (const VkBool32 *)((const uint8_t *)s + offsetof(VkPhysicalDeviceVulkan11Features,   \
                                                             storageBuffer16BitAccess));         \
        n = (sizeof(T) - offsetof(VkPhysicalDeviceVulkan11Features, storageBuffer16BitAccess)) / \
            sizeof(VkBool32);                                                                    \
        break;
            FEAT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                 VkPhysicalDeviceVulkan11Features)
            FEAT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                 VkPhysicalDeviceVulkan12Features)
            FEAT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                 VkPhysicalDeviceVulkan13Features)
            FEAT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
                 VkPhysicalDeviceTimelineSemaphoreFeatures)
            FEAT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES,
                 VkPhysicalDeviceSynchronization2Features)
#undef FEAT
        default:
            break;
        }
        if (!f)
            continue;
        sbt_vk_enc_begin(enc, SBT_VK_FEATURES);
        sbt_vk_enc_arg(enc, (uint64_t)s->sType);
        sbt_vk_enc_arg(enc, n);
        for (size_t i = 0; i < n; i++)
            sbt_vk_enc_arg(enc, f[i] ? 1 : 0);
        sbt_vk_enc_end(enc, NULL, 0);
    }
}

static void device_row(struct cap_dev *d, const VkDeviceCreateInfo *ci)
{
    struct cap_inst *in = d->inst;
    VkPhysicalDeviceProperties p;
    memset(&p, 0, sizeof p);
    VkPhysicalDeviceIDProperties idp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    if (in->GetPhysicalDeviceProperties2) {
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &idp};
        in->GetPhysicalDeviceProperties2(d->phys, &p2);
        p = p2.properties;
    } else {
        in->GetPhysicalDeviceProperties(d->phys, &p);
    }
    in->GetPhysicalDeviceMemoryProperties(d->phys, &d->mem_props);
    uint32_t nq = 0;
    in->GetPhysicalDeviceQueueFamilyProperties(d->phys, &nq, NULL);
    if (nq > 16)
        nq = 16;
    in->GetPhysicalDeviceQueueFamilyProperties(d->phys, &nq, d->qfam);
    d->n_qfam = nq;
    d->ts_period_ns = p.limits.timestampPeriod;
    d->nc_atom = p.limits.nonCoherentAtomSize;

    struct sbt_vk_enc enc = {0};
    uint64_t a[] = {p.apiVersion,
                    p.driverVersion,
                    p.vendorID,
                    p.deviceID,
                    p.deviceType,
                    nq ? d->qfam[0].timestampValidBits : 0,
                    p.limits.maxComputeSharedMemorySize,
                    p.limits.maxPushConstantsSize,
                    p.limits.minStorageBufferOffsetAlignment,
                    p.limits.nonCoherentAtomSize,
                    d->id};
    sbt_vk_enc_rec(&enc, SBT_VK_DEVICE, a, sizeof a / sizeof a[0], p.deviceName,
                   strnlen(p.deviceName, sizeof p.deviceName));
    for (uint32_t i = 0; i < d->mem_props.memoryTypeCount && i < VK_MAX_MEMORY_TYPES; i++)
        sbt_vk_enc_rec(&enc, SBT_VK_MEMORY_TYPE,
                       (uint64_t[]){i, d->mem_props.memoryTypes[i].propertyFlags,
                                    d->mem_props.memoryTypes[i].heapIndex},
                       3, NULL, 0);
    for (uint32_t i = 0; i < d->mem_props.memoryHeapCount && i < VK_MAX_MEMORY_HEAPS; i++)
        sbt_vk_enc_rec(
            &enc, SBT_VK_MEMORY_HEAP,
            (uint64_t[]){i, d->mem_props.memoryHeaps[i].size, d->mem_props.memoryHeaps[i].flags}, 3,
            NULL, 0);
    for (uint32_t i = 0; i < nq; i++)
        sbt_vk_enc_rec(&enc, SBT_VK_QUEUE_FAMILY,
                       (uint64_t[]){i, d->qfam[i].queueFlags, d->qfam[i].queueCount,
                                    d->qfam[i].timestampValidBits},
                       4, NULL, 0);
    for (uint32_t i = 0; ci->pQueueCreateInfos && i < ci->queueCreateInfoCount; i++)
        sbt_vk_enc_rec(&enc, SBT_VK_QUEUE_CREATE,
                       (uint64_t[]){ci->pQueueCreateInfos[i].queueFamilyIndex,
                                    ci->pQueueCreateInfos[i].queueCount,
                                    ci->pQueueCreateInfos[i].flags},
                       3, NULL, 0);
    for (uint32_t i = 0; ci->ppEnabledExtensionNames && i < ci->enabledExtensionCount; i++)
        if (ci->ppEnabledExtensionNames[i])
            sbt_vk_enc_rec(&enc, SBT_VK_EXTENSION, NULL, 0, ci->ppEnabledExtensionNames[i],
                           strlen(ci->ppEnabledExtensionNames[i]));
    if (ci->pEnabledFeatures) {
        const VkBool32 *f = (const VkBool32 *)ci->pEnabledFeatures;
        size_t n = sizeof(VkPhysicalDeviceFeatures) / sizeof(VkBool32);
        sbt_vk_enc_begin(&enc, SBT_VK_FEATURES);
        sbt_vk_enc_arg(&enc, 0);
        sbt_vk_enc_arg(&enc, n);
        for (size_t i = 0; i < n; i++)
            sbt_vk_enc_arg(&enc, f[i] ? 1 : 0);
        sbt_vk_enc_end(&enc, NULL, 0);
    }
    enc_features(&enc, ci->pNext);

    struct cap_ev *e = cap_ev_new(CAP_EV_DEVICE);
    if (!e || sbt_vk_enc_status(&enc)) {
        cap_ev_free_chain(e);
        sbt_vk_enc_free(&enc);
        cap_fail("out of memory describing a device");
        return;
    }
    e->dev_id = d->id;
    e->dev.api = SBT_API_VULKAN;
    e->dev.vendor_id = p.vendorID;
    e->dev.device_id = p.deviceID;
    memcpy(e->dev.uuid, idp.deviceUUID, 16);
    e->dev.driver_version = p.driverVersion;
    e->dev.api_version = p.apiVersion;
    e->dev.timestamp_period_fs = (uint64_t)(p.limits.timestampPeriod * 1e6 + 0.5);
    e->str = strndup(p.deviceName, sizeof p.deviceName);
    e->payload = enc.buf; /* ownership moves to the event */
    e->payload_len = enc.len;
    e->ext_kind = SBT_VK_EXT_DEVICE;
    enc.buf = NULL;
    sbt_vk_enc_free(&enc);
    cap_emit(e);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateDevice(VkPhysicalDevice phys,
                                                       const VkDeviceCreateInfo *ci,
                                                       const VkAllocationCallbacks *alloc,
                                                       VkDevice *out)
{
    struct cap_inst *in = inst_of(phys);
    VkLayerDeviceCreateInfo *chain = (VkLayerDeviceCreateInfo *)ci->pNext;
    while (chain && !(chain->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
                      chain->function == VK_LAYER_LINK_INFO))
        chain = (VkLayerDeviceCreateInfo *)chain->pNext;
    if (!chain || !chain->u.pLayerInfo || !in)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = chain->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr gdpa = chain->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    chain->u.pLayerInfo = chain->u.pLayerInfo->pNext;
    PFN_vkCreateDevice next = (PFN_vkCreateDevice)gipa(in->handle, "vkCreateDevice");
    if (!next)
        return VK_ERROR_INITIALIZATION_FAILED;
    /* --timing: calibrated timestamps, added to the program's extensions when the driver has
     * them (the device row keeps the program's own list) */
    const char *ext = cap_timing_ext(in, phys);
    int ext_on = ext != NULL;
    for (uint32_t i = 0; ext && ci->ppEnabledExtensionNames && i < ci->enabledExtensionCount; i++)
        if (ci->ppEnabledExtensionNames[i] && !strcmp(ci->ppEnabledExtensionNames[i], ext))
            ext = NULL; /* the program enables it itself */
    const char **names = ext ? calloc(ci->enabledExtensionCount + 1u, sizeof *names) : NULL;
    VkDeviceCreateInfo ci2 = *ci;
    if (names) {
        for (uint32_t i = 0; i < ci->enabledExtensionCount; i++)
            names[i] = ci->ppEnabledExtensionNames[i];
        names[ci->enabledExtensionCount] = ext;
        ci2.enabledExtensionCount = ci->enabledExtensionCount + 1;
        ci2.ppEnabledExtensionNames = names;
    } else if (ext) {
        ext_on = 0;
    }
    VkResult r = next(phys, &ci2, alloc, out);
    free(names);
    if (r != VK_SUCCESS)
        return r;
    struct cap_dev *d = calloc(1, sizeof *d);
    if (!d) {
        cap_fail("out of memory for a device");
        return r;
    }
    d->key = dkey(*out);
    d->handle = *out;
    d->phys = phys;
    d->inst = in;
    d->gdpa = gdpa;
    d->id = cap_new_id();
#define LOAD(n) d->fn.n = (PFN_vk##n)gdpa(*out, "vk" #n);
    CAP_DEVICE_FNS(LOAD)
#undef LOAD
#define ALIAS(n, s) \
    if (!d->fn.n)   \
        d->fn.n = (PFN_vk##n)gdpa(*out, "vk" #n s);
    ALIAS(BindBufferMemory2, "KHR")
    ALIAS(CreateDescriptorUpdateTemplate, "KHR")
    ALIAS(DestroyDescriptorUpdateTemplate, "KHR")
    ALIAS(UpdateDescriptorSetWithTemplate, "KHR")
    ALIAS(CmdDispatchBase, "KHR")
    ALIAS(CmdCopyBuffer2, "KHR")
    ALIAS(CmdPipelineBarrier2, "KHR")
    ALIAS(CmdSetEvent2, "KHR")
    ALIAS(CmdResetEvent2, "KHR")
    ALIAS(CmdWaitEvents2, "KHR")
    ALIAS(CmdWriteTimestamp2, "KHR")
    ALIAS(QueueSubmit2, "KHR")
    ALIAS(SignalSemaphore, "KHR")
    ALIAS(WaitSemaphores, "KHR")
    ALIAS(GetSemaphoreCounterValue, "KHR")
    ALIAS(GetBufferDeviceAddress, "KHR")
#undef ALIAS
    pthread_mutex_lock(&tab_mu);
    int placed = 0;
    for (int i = 0; i < MAX_DEV && !placed; i++)
        if (!devs[i]) {
            __atomic_store_n(&devs[i], d, __ATOMIC_RELEASE);
            placed = 1;
        }
    pthread_mutex_unlock(&tab_mu);
    if (!placed) {
        /* without a table entry our entry points cannot find the next layer: this device's
         * calls would fail. Refuse cleanly instead. */
        cap_fail("more than %d Vulkan devices", MAX_DEV);
        d->fn.DestroyDevice(*out, alloc);
        free(d);
        *out = VK_NULL_HANDLE;
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    if (ON()) {
        device_row(d, ci);
        cap_timing_device(d, ext_on);
    }
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyDevice(VkDevice device,
                                                    const VkAllocationCallbacks *alloc)
{
    if (!device)
        return;
    struct cap_dev *d = dev_of(device);
    if (!d)
        return;
    COUNT();
    d->fn.DestroyDevice(device, alloc);
    pthread_mutex_lock(&tab_mu);
    for (int i = 0; i < MAX_DEV; i++)
        if (devs[i] == d)
            __atomic_store_n(&devs[i], NULL, __ATOMIC_RELEASE);
    d->dead = 1; /* kept until unload: shadows and racing calls may still point at it */
    d->retired_next = retired_devs;
    retired_devs = d;
    pthread_mutex_unlock(&tab_mu);
}

static void queue_seen(struct cap_dev *d, VkQueue q, uint32_t family, uint32_t index)
{
    if (!q || !ON())
        return;
    pthread_mutex_lock(&cap.mu);
    if (cap_obj_find(H(q), CAP_T_QUEUE)) {
        pthread_mutex_unlock(&cap.mu);
        return;
    }
    struct cap_queue *cq = obj_new(sizeof *cq, CAP_T_QUEUE, VK_OBJECT_TYPE_QUEUE, H(q), d);
    if (cq) {
        cq->family = family;
        cq->index = index;
    }
    struct cap_ev *e = cq ? cap_ev_new(CAP_EV_QUEUE) : NULL;
    if (e) {
        struct sbt_vk_enc enc = {0};
        sbt_vk_enc_rec(&enc, SBT_VK_QUEUE, (uint64_t[]){cq->o.id, family, index, d->id}, 4, NULL,
                       0);
        e->dev_id = d->id;
        e->queue_id = cq->o.id;
        e->stream.kind = SBT_STREAM_QUEUE;
        e->stream.handle = H(q);
        e->stream.family = family;
        e->stream.index = index;
        char name[48];
        snprintf(name, sizeof name, "queue %u.%u", family, index);
        e->str = strdup(name);
        e->payload = enc.buf;
        e->payload_len = enc.len;
        e->ext_kind = SBT_VK_EXT_QUEUE;
        cap_emit(e); /* under cap.mu: a submit on another thread cannot overtake the row */
    }
    pthread_mutex_unlock(&cap.mu);
}

static VKAPI_ATTR void VKAPI_CALL cap_GetDeviceQueue(VkDevice device, uint32_t family,
                                                     uint32_t index, VkQueue *q)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    d->fn.GetDeviceQueue(device, family, index, q);
    queue_seen(d, *q, family, index);
}

static VKAPI_ATTR void VKAPI_CALL cap_GetDeviceQueue2(VkDevice device,
                                                      const VkDeviceQueueInfo2 *info, VkQueue *q)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    d->fn.GetDeviceQueue2(device, info, q);
    queue_seen(d, *q, info->queueFamilyIndex, info->queueIndex);
}

/* ========================================================================================== */
/* Memory and buffers                                                                         */
/* ========================================================================================== */

static VKAPI_ATTR VkResult VKAPI_CALL cap_AllocateMemory(VkDevice device,
                                                         const VkMemoryAllocateInfo *ai,
                                                         const VkAllocationCallbacks *alloc,
                                                         VkDeviceMemory *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.AllocateMemory(device, ai, alloc, out);
    if (r != VK_SUCCESS || !ON())
        return r;
    uint32_t flags = 0;
    uint64_t dedicated = 0;
    int foreign = 0;
    for (const VkBaseInStructure *s = ai->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO)
            flags = ((const VkMemoryAllocateFlagsInfo *)s)->flags;
        else if (s->sType == VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO)
            dedicated = H(((const VkMemoryDedicatedAllocateInfo *)s)->buffer);
        else if (s->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR ||
                 s->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT ||
                 s->sType == VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO)
            foreign = 1;
    }
    if (foreign)
        cap_unsupported("vkAllocateMemory(external memory)");
    pthread_mutex_lock(&cap.mu);
    struct cap_mem *m = cap_mem_new(d, H(*out), ai->allocationSize, ai->memoryTypeIndex);
    if (m) {
        struct cap_buf *db = cap_obj_find(dedicated, CAP_T_BUF);
        struct sbt_vk_enc enc = {0};
        sbt_vk_enc_rec(&enc, SBT_VK_MEMORY,
                       (uint64_t[]){m->o.id, m->size, m->type_index, m->props, flags,
                                    db ? db->o.id : 0, d->id},
                       7, NULL, 0);
        struct cap_ev *e = op_ev(d, SBT_OP_ALLOC, "vkAllocateMemory", &enc, t0);
        if (e) {
            e->op.resource = m->o.id;
            e->op.bytes = m->size;
            e->op.subkind = SBT_RES_DEVICE;
            e->op.flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES;
            if (foreign)
                e->op.flags |= SBT_OPF_UNSUPPORTED;
        }
        cap_emit(e);
        sbt_vk_enc_free(&enc);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_FreeMemory(VkDevice device, VkDeviceMemory mem,
                                                 const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    if (mem && ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_mem *m = obj_del(H(mem), CAP_T_MEM);
        if (m) {
            struct cap_ev *head = NULL, **tail = &head;
            if (m->mapped) /* freeing a mapped allocation unmaps it: last writes count */
                cap_mem_scan(m, m->map_off, m->map_len, &tail, t0);
            struct cap_ev *e = op_ev(d, SBT_OP_FREE, "vkFreeMemory", NULL, t0);
            if (e) {
                e->op.resource = m->o.id;
                e->op.flags = SBT_OPF_RESOURCE;
                *tail = e;
            }
            cap_emit(head);
            cap_mem_free(m);
        }
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.FreeMemory(device, mem, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_MapMemory(VkDevice device, VkDeviceMemory mem,
                                                    VkDeviceSize off, VkDeviceSize size,
                                                    VkMemoryMapFlags flags, void **pp)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    VkResult r = d->fn.MapMemory(device, mem, off, size, flags, pp);
    if (r != VK_SUCCESS || !ON())
        return r;
    uint64_t t0 = cap_now();
    pthread_mutex_lock(&cap.mu);
    struct cap_mem *m = cap_obj_find(H(mem), CAP_T_MEM);
    if (m && off <= m->size) {
        m->mapped = 1;
        m->map_off = off;
        m->map_len = size == VK_WHOLE_SIZE ? m->size - off : size;
        if (m->map_len > m->size - off)
            m->map_len = m->size - off;
        m->map_base = (uint8_t *)*pp - off;
        struct cap_ev *head = NULL, **tail = &head;
        cap_mem_mapped(m, &tail, t0);
        cap_emit(head);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_UnmapMemory(VkDevice device, VkDeviceMemory mem)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (ON()) {
        uint64_t t0 = cap_now();
        pthread_mutex_lock(&cap.mu);
        struct cap_mem *m = cap_obj_find(H(mem), CAP_T_MEM);
        if (m && m->mapped) {
            struct cap_ev *head = NULL, **tail = &head;
            cap_mem_scan(m, m->map_off, m->map_len, &tail, t0);
            cap_emit(head);
            m->mapped = 0;
            m->map_base = NULL;
        }
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.UnmapMemory(device, mem);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_FlushMappedMemoryRanges(VkDevice device, uint32_t n,
                                                                  const VkMappedMemoryRange *rg)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (ON()) {
        uint64_t t0 = cap_now();
        pthread_mutex_lock(&cap.mu);
        struct cap_ev *head = NULL, **tail = &head;
        for (uint32_t i = 0; i < n; i++) {
            struct cap_mem *m = cap_obj_find(H(rg[i].memory), CAP_T_MEM);
            if (!m || !m->mapped || rg[i].offset > m->size)
                continue;
            uint64_t len = rg[i].size == VK_WHOLE_SIZE ? m->size - rg[i].offset : rg[i].size;
            cap_mem_scan(m, rg[i].offset, len, &tail, t0);
        }
        cap_emit(head);
        pthread_mutex_unlock(&cap.mu);
    }
    return d->fn.FlushMappedMemoryRanges(device, n, rg);
}

static VKAPI_ATTR VkResult VKAPI_CALL
cap_InvalidateMappedMemoryRanges(VkDevice device, uint32_t n, const VkMappedMemoryRange *rg)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    return d->fn.InvalidateMappedMemoryRanges(device, n, rg);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateBuffer(VkDevice device,
                                                       const VkBufferCreateInfo *ci,
                                                       const VkAllocationCallbacks *alloc,
                                                       VkBuffer *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.CreateBuffer(device, ci, alloc, out);
    if (r != VK_SUCCESS || !ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    struct cap_buf *b = obj_new(sizeof *b, CAP_T_BUF, VK_OBJECT_TYPE_BUFFER, H(*out), d);
    if (b) {
        b->size = ci->size;
        b->usage = ci->usage;
        struct sbt_vk_enc enc = {0};
        sbt_vk_enc_begin(&enc, SBT_VK_CREATE_BUFFER);
        sbt_vk_enc_arg(&enc, b->o.id);
        sbt_vk_enc_arg(&enc, ci->size);
        sbt_vk_enc_arg(&enc, ci->usage);
        sbt_vk_enc_arg(&enc, ci->flags);
        sbt_vk_enc_arg(&enc, ci->sharingMode);
        uint32_t nf = ci->sharingMode == VK_SHARING_MODE_CONCURRENT && ci->pQueueFamilyIndices
                          ? ci->queueFamilyIndexCount
                          : 0;
        sbt_vk_enc_arg(&enc, nf);
        for (uint32_t i = 0; i < nf; i++)
            sbt_vk_enc_arg(&enc, ci->pQueueFamilyIndices[i]);
        sbt_vk_enc_arg(&enc, d->id);
        sbt_vk_enc_end(&enc, NULL, 0);
        emit_marker(d, "vkCreateBuffer", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyBuffer(VkDevice device, VkBuffer buf,
                                                    const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (buf && ON()) {
        uint64_t t0 = cap_now();
        pthread_mutex_lock(&cap.mu);
        struct cap_buf *b = obj_del(H(buf), CAP_T_BUF);
        if (b)
            emit_destroy(d, "vkDestroyBuffer", VK_OBJECT_TYPE_BUFFER, b->o.id, t0);
        free(b);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyBuffer(device, buf, alloc);
}

static void bind_buffer(struct cap_dev *d, VkBuffer buf, VkDeviceMemory mem, uint64_t off,
                        uint64_t t0)
{
    struct cap_buf *b = cap_obj_find(H(buf), CAP_T_BUF);
    struct cap_mem *m = cap_obj_find(H(mem), CAP_T_MEM);
    if (!b || !m)
        return;
    b->mem = m;
    b->mem_off = off;
    cap.shadow_gen++;
    VkMemoryRequirements req = {0};
    if (d->fn.GetBufferMemoryRequirements)
        d->fn.GetBufferMemoryRequirements(d->handle, buf, &req);
    struct sbt_vk_enc enc = {0};
    sbt_vk_enc_rec(&enc, SBT_VK_BIND_BUFFER,
                   (uint64_t[]){b->o.id, m->o.id, off, b->size, req.alignment}, 5, NULL, 0);
    emit_marker(d, "vkBindBufferMemory", &enc, t0);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_BindBufferMemory(VkDevice device, VkBuffer buf,
                                                           VkDeviceMemory mem, VkDeviceSize off)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.BindBufferMemory(device, buf, mem, off);
    if (r == VK_SUCCESS && ON()) {
        pthread_mutex_lock(&cap.mu);
        bind_buffer(d, buf, mem, off, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_BindBufferMemory2(VkDevice device, uint32_t n,
                                                            const VkBindBufferMemoryInfo *bi)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.BindBufferMemory2(device, n, bi);
    if (r == VK_SUCCESS && ON()) {
        pthread_mutex_lock(&cap.mu);
        for (uint32_t i = 0; i < n; i++)
            bind_buffer(d, bi[i].buffer, bi[i].memory, bi[i].memoryOffset, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateBufferView(VkDevice device,
                                                           const VkBufferViewCreateInfo *ci,
                                                           const VkAllocationCallbacks *alloc,
                                                           VkBufferView *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.CreateBufferView(device, ci, alloc, out);
    if (r != VK_SUCCESS || !ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    struct cap_buf *b = cap_obj_find(H(ci->buffer), CAP_T_BUF);
    struct cap_bview *v =
        b ? obj_new(sizeof *v, CAP_T_BVIEW, VK_OBJECT_TYPE_BUFFER_VIEW, H(*out), d) : NULL;
    if (v) {
        v->buf = b;
        v->offset = ci->offset;
        v->range = ci->range == VK_WHOLE_SIZE ? b->size - ci->offset : ci->range;
        struct sbt_vk_enc enc = {0};
        sbt_vk_enc_rec(&enc, SBT_VK_CREATE_BUFFER_VIEW,
                       (uint64_t[]){v->o.id, b->o.id, ci->format, ci->offset, v->range, ci->flags},
                       6, NULL, 0);
        emit_marker(d, "vkCreateBufferView", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyBufferView(VkDevice device, VkBufferView view,
                                                        const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (view && ON()) {
        uint64_t t0 = cap_now();
        pthread_mutex_lock(&cap.mu);
        struct cap_bview *v = obj_del(H(view), CAP_T_BVIEW);
        if (v)
            emit_destroy(d, "vkDestroyBufferView", VK_OBJECT_TYPE_BUFFER_VIEW, v->o.id, t0);
        free(v);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyBufferView(device, view, alloc);
}

/* ========================================================================================== */
/* Shader modules, layouts, pipelines                                                         */
/* ========================================================================================== */

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateShaderModule(VkDevice device,
                                                             const VkShaderModuleCreateInfo *ci,
                                                             const VkAllocationCallbacks *alloc,
                                                             VkShaderModule *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    VkResult r = d->fn.CreateShaderModule(device, ci, alloc, out);
    if (r != VK_SUCCESS || !ON())
        return r;
    struct cap_refl refl;
    cap_spirv_reflect(ci->pCode, ci->codeSize / 4, &refl);
    pthread_mutex_lock(&cap.mu);
    struct cap_module *m =
        obj_new(sizeof *m, CAP_T_MODULE, VK_OBJECT_TYPE_SHADER_MODULE, H(*out), d);
    struct cap_ev *e = m ? cap_ev_new(CAP_EV_PROGRAM) : NULL;
    if (!e) {
        cap_refl_free(&refl);
        pthread_mutex_unlock(&cap.mu);
        return r;
    }
    m->refl = refl;
    struct sbt_vk_enc enc = {0};
    sbt_vk_enc_rec(&enc, SBT_VK_MODULE, (uint64_t[]){m->o.id, ci->flags, ci->codeSize, refl.ok}, 4,
                   NULL, 0);
    for (uint32_t i = 0; i < refl.n_b; i++) {
        const struct cap_refl_binding *b = &refl.b[i];
        sbt_vk_enc_rec(&enc, SBT_VK_MODULE_BINDING,
                       (uint64_t[]){b->set, b->binding, b->access, b->storage, b->array}, 5, NULL,
                       0);
    }
    for (uint32_t i = 0; i < refl.n_e; i++) {
        const struct cap_refl_entry *x = &refl.e[i];
        sbt_vk_enc_rec(&enc, SBT_VK_ENTRY_POINT,
                       (uint64_t[]){x->local[0], x->local[1], x->local[2], x->spec_id[0],
                                    x->spec_id[1], x->spec_id[2]},
                       6, x->name, strlen(x->name));
    }
    e->dev_id = d->id;
    e->prog_id = m->o.id;
    e->data = malloc(ci->codeSize);
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
    if (!e->data || sbt_vk_enc_status(&enc)) {
        cap_ev_free_chain(e);
        cap_fail("out of memory storing a shader module");
    } else {
        cap_emit(e);
    }
    free(enc.args);
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyShaderModule(VkDevice device, VkShaderModule mod,
                                                          const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (mod && ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_module *m = obj_del(H(mod), CAP_T_MODULE);
        if (m)
            cap_refl_free(&m->refl);
        free(m);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyShaderModule(device, mod, alloc);
}

static int is_buffer_type(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER || t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER ||
           t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC ||
           t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
}

static int is_texel_type(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER ||
           t == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
}

static int cmp_binding(const void *a, const void *b)
{
    const struct cap_dsl_binding *x = a, *y = b;
    return x->binding < y->binding ? -1 : x->binding > y->binding;
}

static void enc_set_layout(struct sbt_vk_enc *enc, const struct cap_dsl *l)
{
    sbt_vk_enc_rec(enc, SBT_VK_SET_LAYOUT, (uint64_t[]){l->o.id, l->flags, l->n_b}, 3, NULL, 0);
    for (uint32_t i = 0; i < l->n_b; i++)
        sbt_vk_enc_rec(enc, SBT_VK_SET_BINDING,
                       (uint64_t[]){l->b[i].binding, l->b[i].type, l->b[i].count, l->b[i].stages,
                                    l->b[i].flags},
                       5, NULL, 0);
}

static VKAPI_ATTR VkResult VKAPI_CALL
cap_CreateDescriptorSetLayout(VkDevice device, const VkDescriptorSetLayoutCreateInfo *ci,
                              const VkAllocationCallbacks *alloc, VkDescriptorSetLayout *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.CreateDescriptorSetLayout(device, ci, alloc, out);
    if (r != VK_SUCCESS || !ON())
        return r;
    const VkDescriptorSetLayoutBindingFlagsCreateInfo *bf = NULL;
    for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_BINDING_FLAGS_CREATE_INFO)
            bf = (const VkDescriptorSetLayoutBindingFlagsCreateInfo *)s;
    pthread_mutex_lock(&cap.mu);
    struct cap_dsl *l =
        obj_new(sizeof *l, CAP_T_DSL, VK_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT, H(*out), d);
    if (l && ci->bindingCount) {
        l->b = calloc(ci->bindingCount, sizeof *l->b);
        if (!l->b)
            cap_fail("out of memory for a descriptor set layout");
    }
    if (l && (l->b || !ci->bindingCount)) {
        l->n_b = ci->bindingCount;
        l->flags = ci->flags;
        for (uint32_t i = 0; i < ci->bindingCount; i++) {
            const VkDescriptorSetLayoutBinding *x = &ci->pBindings[i];
            /* pImmutableSamplers is not read: it only matters for sampler types */
            l->b[i] = (struct cap_dsl_binding){x->binding,
                                               x->descriptorType,
                                               x->descriptorCount,
                                               x->stageFlags,
                                               bf && bf->bindingCount == ci->bindingCount &&
                                                       bf->pBindingFlags
                                                   ? bf->pBindingFlags[i]
                                                   : 0,
                                               0};
            if (x->descriptorType == VK_DESCRIPTOR_TYPE_INLINE_UNIFORM_BLOCK)
                l->b[i].count = 0; /* bytes, not descriptors: not tracked */
        }
        qsort(l->b, l->n_b, sizeof *l->b, cmp_binding);
        for (uint32_t i = 0; i < l->n_b; i++) {
            l->b[i].base = l->n_slots;
            l->n_slots += l->b[i].count;
        }
        struct sbt_vk_enc enc = {0};
        enc_set_layout(&enc, l);
        emit_marker(d, "vkCreateDescriptorSetLayout", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyDescriptorSetLayout(VkDevice device,
                                                                 VkDescriptorSetLayout h,
                                                                 const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (h && ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_dsl *l = obj_del(H(h), CAP_T_DSL);
        if (l)
            free(l->b);
        free(l);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyDescriptorSetLayout(device, h, alloc);
}

static void enc_pipeline_layout(struct sbt_vk_enc *enc, const struct cap_playout *pl,
                                const VkPipelineLayoutCreateInfo *ci)
{
    sbt_vk_enc_begin(enc, SBT_VK_PIPELINE_LAYOUT);
    sbt_vk_enc_arg(enc, pl->o.id);
    sbt_vk_enc_arg(enc, ci ? ci->flags : 0);
    sbt_vk_enc_arg(enc, pl->n_sets);
    for (uint32_t i = 0; i < pl->n_sets; i++) {
        struct cap_dsl *l = cap_obj_find(pl->set_layout[i], CAP_T_DSL);
        sbt_vk_enc_arg(enc, l ? l->o.id : 0);
    }
    uint32_t np = ci && ci->pPushConstantRanges ? ci->pushConstantRangeCount : 0;
    sbt_vk_enc_arg(enc, np);
    for (uint32_t i = 0; i < np; i++) {
        sbt_vk_enc_arg(enc, ci->pPushConstantRanges[i].stageFlags);
        sbt_vk_enc_arg(enc, ci->pPushConstantRanges[i].offset);
        sbt_vk_enc_arg(enc, ci->pPushConstantRanges[i].size);
    }
    sbt_vk_enc_end(enc, NULL, 0);
}

/* Pipeline layout records are kept per layout (kernel rows repeat them). */
struct playout_rec {
    struct cap_playout pl;
    struct sbt_vk_enc rec; /* PIPELINE_LAYOUT + SET_LAYOUT/SET_BINDING of its sets */
};

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreatePipelineLayout(VkDevice device,
                                                               const VkPipelineLayoutCreateInfo *ci,
                                                               const VkAllocationCallbacks *alloc,
                                                               VkPipelineLayout *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.CreatePipelineLayout(device, ci, alloc, out);
    if (r != VK_SUCCESS || !ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    struct playout_rec *p =
        obj_new(sizeof *p, CAP_T_PLAYOUT, VK_OBJECT_TYPE_PIPELINE_LAYOUT, H(*out), d);
    if (p) {
        p->pl.n_sets = ci->setLayoutCount < CAP_MAX_SETS ? ci->setLayoutCount : CAP_MAX_SETS;
        for (uint32_t i = 0; i < p->pl.n_sets; i++)
            p->pl.set_layout[i] = H(ci->pSetLayouts[i]);
        enc_pipeline_layout(&p->rec, &p->pl, ci);
        for (uint32_t i = 0; i < p->pl.n_sets; i++) {
            struct cap_dsl *l = cap_obj_find(p->pl.set_layout[i], CAP_T_DSL);
            if (l)
                enc_set_layout(&p->rec, l);
        }
        struct sbt_vk_enc enc = {0};
        enc_pipeline_layout(&enc, &p->pl, ci);
        emit_marker(d, "vkCreatePipelineLayout", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyPipelineLayout(VkDevice device, VkPipelineLayout h,
                                                            const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (h && ON()) {
        pthread_mutex_lock(&cap.mu);
        struct playout_rec *p = obj_del(H(h), CAP_T_PLAYOUT);
        if (p)
            sbt_vk_enc_free(&p->rec);
        free(p);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyPipelineLayout(device, h, alloc);
}

static void pipeline_row(struct cap_dev *d, const VkComputePipelineCreateInfo *ci, VkPipeline h,
                         uint64_t cache_id)
{
    const VkPipelineShaderStageCreateInfo *st = &ci->stage;
    struct cap_module *m = cap_obj_find(H(st->module), CAP_T_MODULE);
    struct playout_rec *pl = cap_obj_find(H(ci->layout), CAP_T_PLAYOUT);
    if (!m) {
        cap_unsupported("vkCreateComputePipelines(module not captured)");
        return;
    }
    struct cap_pipeline *p = obj_new(sizeof *p, CAP_T_PIPELINE, VK_OBJECT_TYPE_PIPELINE, H(h), d);
    if (!p)
        return;
    p->layout_handle = H(ci->layout);
    const char *entry = st->pName ? st->pName : "main";
    cap_spirv_local_size(&m->refl, entry, st->pSpecializationInfo, p->local);
    uint32_t req_subgroup = 0;
    for (const VkBaseInStructure *s = st->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO)
            req_subgroup = ((const VkPipelineShaderStageRequiredSubgroupSizeCreateInfo *)s)
                               ->requiredSubgroupSize;
    p->refl_ok = m->refl.ok;
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
    struct sbt_vk_enc enc = {0};
    sbt_vk_enc_rec(&enc, SBT_VK_PIPELINE,
                   (uint64_t[]){p->o.id, ci->flags, m->o.id, pl ? pl->pl.o.id : 0, st->stage,
                                p->local[0], p->local[1], p->local[2], req_subgroup, cache_id},
                   10, sp && sp->pData ? sp->pData : NULL, sp && sp->pData ? sp->dataSize : 0);
    for (uint32_t i = 0; sp && sp->pMapEntries && i < sp->mapEntryCount; i++)
        sbt_vk_enc_rec(&enc, SBT_VK_SPEC_ENTRY,
                       (uint64_t[]){sp->pMapEntries[i].constantID, sp->pMapEntries[i].offset,
                                    sp->pMapEntries[i].size},
                       3, NULL, 0);
    if (pl)
        sbt_vk_enc_raw(&enc, pl->rec.buf, pl->rec.len);
    struct cap_ev *e = cap_ev_new(CAP_EV_KERNEL);
    if (!e || sbt_vk_enc_status(&enc)) {
        cap_ev_free_chain(e);
        sbt_vk_enc_free(&enc);
        cap_fail("out of memory describing a pipeline");
        return;
    }
    e->dev_id = d->id;
    e->kernel_id = p->o.id;
    e->prog_id = m->o.id;
    e->str = strdup(entry);
    e->payload = enc.buf;
    e->payload_len = enc.len;
    e->ext_kind = SBT_VK_EXT_PIPELINE;
    enc.buf = NULL;
    sbt_vk_enc_free(&enc);
    cap_emit(e);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateComputePipelines(
    VkDevice device, VkPipelineCache cache, uint32_t n, const VkComputePipelineCreateInfo *ci,
    const VkAllocationCallbacks *alloc, VkPipeline *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    VkResult r = d->fn.CreateComputePipelines(device, cache, n, ci, alloc, out);
    if ((r != VK_SUCCESS && r != VK_PIPELINE_COMPILE_REQUIRED) || !ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    for (uint32_t i = 0; i < n; i++)
        if (out[i])
            pipeline_row(d, &ci[i], out[i], 0);
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyPipeline(VkDevice device, VkPipeline h,
                                                      const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (h && ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_pipeline *p = obj_del(H(h), CAP_T_PIPELINE);
        if (p)
            free(p->acc);
        free(p);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyPipeline(device, h, alloc);
}

/* ========================================================================================== */
/* Descriptor sets                                                                            */
/* ========================================================================================== */

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateDescriptorPool(VkDevice device,
                                                               const VkDescriptorPoolCreateInfo *ci,
                                                               const VkAllocationCallbacks *alloc,
                                                               VkDescriptorPool *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    return d->fn.CreateDescriptorPool(device, ci, alloc, out);
}

static void dset_free(struct cap_dset *s)
{
    if (!s)
        return;
    free(s->b);
    free(s->slot);
    free(s);
}

/* Forgets the sets of a pool (destroyed or reset). cap.mu held. */
static void pool_forget_sets(uint64_t pool)
{
    struct cap_map *m = &cap.objs[CAP_T_DSET];
    for (size_t i = 0; i < m->cap; i++) {
        if (m->e[i].key < 2)
            continue;
        struct cap_dset *s = m->e[i].val;
        if (s && s->pool_handle == pool) {
            cap_map_del(m, s->o.handle);
            dset_free(s);
        }
    }
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyDescriptorPool(VkDevice device, VkDescriptorPool h,
                                                            const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (h && ON()) {
        pthread_mutex_lock(&cap.mu);
        pool_forget_sets(H(h));
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyDescriptorPool(device, h, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_ResetDescriptorPool(VkDevice device, VkDescriptorPool h,
                                                              VkDescriptorPoolResetFlags f)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (h && ON()) {
        pthread_mutex_lock(&cap.mu);
        pool_forget_sets(H(h));
        pthread_mutex_unlock(&cap.mu);
    }
    return d->fn.ResetDescriptorPool(device, h, f);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_AllocateDescriptorSets(
    VkDevice device, const VkDescriptorSetAllocateInfo *ai, VkDescriptorSet *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.AllocateDescriptorSets(device, ai, out);
    if (r != VK_SUCCESS || !ON())
        return r;
    const VkDescriptorSetVariableDescriptorCountAllocateInfo *var = NULL;
    for (const VkBaseInStructure *s = ai->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_DESCRIPTOR_SET_VARIABLE_DESCRIPTOR_COUNT_ALLOCATE_INFO)
            var = (const VkDescriptorSetVariableDescriptorCountAllocateInfo *)s;
    pthread_mutex_lock(&cap.mu);
    struct sbt_vk_enc enc = {0};
    for (uint32_t i = 0; i < ai->descriptorSetCount; i++) {
        struct cap_dsl *l = cap_obj_find(H(ai->pSetLayouts[i]), CAP_T_DSL);
        if (!l)
            continue;
        struct cap_dset *s =
            obj_new(sizeof *s, CAP_T_DSET, VK_OBJECT_TYPE_DESCRIPTOR_SET, H(out[i]), d);
        if (!s)
            break;
        s->pool_handle = H(ai->descriptorPool);
        s->n_b = l->n_b;
        s->n_slots = l->n_slots;
        s->b = l->n_b ? malloc(l->n_b * sizeof *s->b) : NULL;
        s->slot = l->n_slots ? calloc(l->n_slots, sizeof *s->slot) : NULL;
        if ((l->n_b && !s->b) || (l->n_slots && !s->slot)) {
            cap_fail("out of memory for a descriptor set");
            break;
        }
        if (l->n_b)
            memcpy(s->b, l->b, l->n_b * sizeof *s->b);
        uint64_t vc = var && var->pDescriptorCounts && i < var->descriptorSetCount
                          ? var->pDescriptorCounts[i]
                          : 0;
        sbt_vk_enc_rec(&enc, SBT_VK_ALLOC_SET,
                       (uint64_t[]){s->o.id, l->o.id, H(ai->descriptorPool), vc}, 4, NULL, 0);
    }
    emit_marker(d, "vkAllocateDescriptorSets", &enc, t0);
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_FreeDescriptorSets(VkDevice device, VkDescriptorPool pool,
                                                             uint32_t n, const VkDescriptorSet *s)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (ON()) {
        pthread_mutex_lock(&cap.mu);
        for (uint32_t i = 0; i < n; i++)
            dset_free(obj_del(H(s[i]), CAP_T_DSET));
        pthread_mutex_unlock(&cap.mu);
    }
    return d->fn.FreeDescriptorSets(device, pool, n, s);
}

/* Slot of (binding, element) in set s, following consecutive-binding updates; NULL past it. */
static struct cap_slot *dset_slot(struct cap_dset *s, uint32_t binding, uint32_t elem,
                                  uint32_t *type)
{
    cap.shadow_gen++; /* the slot is about to be written */
    for (uint32_t i = 0; i < s->n_b; i++) {
        if (s->b[i].binding < binding)
            continue;
        if (s->b[i].binding > binding && elem == 0 && s->b[i].count) {
            /* rolled over into the next binding (consecutive binding updates) */
        } else if (s->b[i].binding != binding) {
            return NULL;
        }
        while (i < s->n_b && elem >= s->b[i].count) {
            elem -= s->b[i].count;
            i++;
        }
        if (i >= s->n_b)
            return NULL;
        *type = s->b[i].type;
        return &s->slot[s->b[i].base + elem];
    }
    return NULL;
}

/* One descriptor written: slot updated, record argument tuple appended. */
static void write_one(struct sbt_vk_enc *enc, struct cap_slot *sl, uint32_t type, uint64_t buf,
                      uint64_t off, uint64_t range, uint64_t view)
{
    struct cap_buf *b = cap_obj_find(buf, CAP_T_BUF);
    struct cap_bview *v = cap_obj_find(view, CAP_T_BVIEW);
    if (sl) {
        sl->type = type;
        sl->buf_handle = buf;
        sl->offset = off;
        sl->range = range;
        sl->view_handle = view;
    }
    sbt_vk_enc_arg(enc, b ? b->o.id : 0);
    sbt_vk_enc_arg(enc, off);
    sbt_vk_enc_arg(enc, range == VK_WHOLE_SIZE && b && off <= b->size ? b->size - off : range);
    sbt_vk_enc_arg(enc, v ? v->o.id : 0);
}

static void enc_write_set(struct sbt_vk_enc *enc, const VkWriteDescriptorSet *w)
{
    struct cap_dset *s = cap_obj_find(H(w->dstSet), CAP_T_DSET);
    uint32_t t = w->descriptorType;
    if (!is_buffer_type(t) && !is_texel_type(t)) {
        if (t == VK_DESCRIPTOR_TYPE_INLINE_UNIFORM_BLOCK)
            cap_unsupported("vkUpdateDescriptorSets(inline uniform block)");
        else
            cap_unsupported("vkUpdateDescriptorSets(image/sampler descriptor)");
        return;
    }
    if (!s)
        return;
    sbt_vk_enc_begin(enc, SBT_VK_WRITE_SET);
    sbt_vk_enc_arg(enc, s->o.id);
    sbt_vk_enc_arg(enc, w->dstBinding);
    sbt_vk_enc_arg(enc, w->dstArrayElement);
    sbt_vk_enc_arg(enc, t);
    sbt_vk_enc_arg(enc, w->descriptorCount);
    for (uint32_t i = 0; i < w->descriptorCount; i++) {
        uint32_t st = t;
        struct cap_slot *sl = dset_slot(s, w->dstBinding, w->dstArrayElement + i, &st);
        if (is_buffer_type(t) && w->pBufferInfo)
            write_one(enc, sl, t, H(w->pBufferInfo[i].buffer), w->pBufferInfo[i].offset,
                      w->pBufferInfo[i].range, 0);
        else if (is_texel_type(t) && w->pTexelBufferView)
            write_one(enc, sl, t, 0, 0, 0, H(w->pTexelBufferView[i]));
        else
            write_one(enc, sl, t, 0, 0, 0, 0);
    }
    sbt_vk_enc_end(enc, NULL, 0);
}

static VKAPI_ATTR void VKAPI_CALL cap_UpdateDescriptorSets(VkDevice device, uint32_t nw,
                                                           const VkWriteDescriptorSet *w,
                                                           uint32_t nc,
                                                           const VkCopyDescriptorSet *c)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    d->fn.UpdateDescriptorSets(device, nw, w, nc, c);
    if (!ON())
        return;
    pthread_mutex_lock(&cap.mu);
    struct sbt_vk_enc enc = {0};
    for (uint32_t i = 0; i < nw; i++)
        enc_write_set(&enc, &w[i]);
    for (uint32_t i = 0; i < nc; i++) {
        struct cap_dset *src = cap_obj_find(H(c[i].srcSet), CAP_T_DSET);
        struct cap_dset *dst = cap_obj_find(H(c[i].dstSet), CAP_T_DSET);
        if (!src || !dst)
            continue;
        for (uint32_t k = 0; k < c[i].descriptorCount; k++) {
            uint32_t ts, td;
            struct cap_slot *a = dset_slot(src, c[i].srcBinding, c[i].srcArrayElement + k, &ts);
            struct cap_slot *b = dset_slot(dst, c[i].dstBinding, c[i].dstArrayElement + k, &td);
            if (a && b)
                *b = *a;
        }
        sbt_vk_enc_rec(&enc, SBT_VK_COPY_SET,
                       (uint64_t[]){src->o.id, c[i].srcBinding, c[i].srcArrayElement, dst->o.id,
                                    c[i].dstBinding, c[i].dstArrayElement, c[i].descriptorCount},
                       7, NULL, 0);
    }
    if (enc.len)
        emit_marker(d, "vkUpdateDescriptorSets", &enc, t0);
    sbt_vk_enc_free(&enc);
    pthread_mutex_unlock(&cap.mu);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateDescriptorUpdateTemplate(
    VkDevice device, const VkDescriptorUpdateTemplateCreateInfo *ci,
    const VkAllocationCallbacks *alloc, VkDescriptorUpdateTemplate *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    VkResult r = d->fn.CreateDescriptorUpdateTemplate(device, ci, alloc, out);
    if (r != VK_SUCCESS || !ON())
        return r;
    if (ci->templateType != VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_DESCRIPTOR_SET) {
        cap_unsupported("vkCreateDescriptorUpdateTemplate(push descriptors)");
        return r;
    }
    pthread_mutex_lock(&cap.mu);
    struct cap_templ *t =
        obj_new(sizeof *t, CAP_T_TEMPL, VK_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE, H(*out), d);
    if (t && ci->descriptorUpdateEntryCount) {
        t->e = calloc(ci->descriptorUpdateEntryCount, sizeof *t->e);
        if (!t->e)
            cap_fail("out of memory for an update template");
        else
            t->n_e = ci->descriptorUpdateEntryCount;
        for (uint32_t i = 0; i < t->n_e; i++) {
            const VkDescriptorUpdateTemplateEntry *x = &ci->pDescriptorUpdateEntries[i];
            t->e[i] =
                (struct cap_templ_entry){x->dstBinding,     x->dstArrayElement, x->descriptorCount,
                                         x->descriptorType, x->offset,          x->stride};
        }
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyDescriptorUpdateTemplate(
    VkDevice device, VkDescriptorUpdateTemplate h, const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (h && ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_templ *t = obj_del(H(h), CAP_T_TEMPL);
        if (t)
            free(t->e);
        free(t);
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyDescriptorUpdateTemplate(device, h, alloc);
}

/* Template updates are recorded as the WRITE_SET records they amount to. */
static VKAPI_ATTR void VKAPI_CALL cap_UpdateDescriptorSetWithTemplate(VkDevice device,
                                                                      VkDescriptorSet set,
                                                                      VkDescriptorUpdateTemplate h,
                                                                      const void *data)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    d->fn.UpdateDescriptorSetWithTemplate(device, set, h, data);
    if (!ON() || !data)
        return;
    pthread_mutex_lock(&cap.mu);
    struct cap_templ *t = cap_obj_find(H(h), CAP_T_TEMPL);
    struct sbt_vk_enc enc = {0};
    for (uint32_t i = 0; t && i < t->n_e; i++) {
        const struct cap_templ_entry *x = &t->e[i];
        VkDescriptorBufferInfo bi[64];
        VkBufferView bv[64];
        for (uint32_t k0 = 0; k0 < x->count; k0 += 64) {
            uint32_t n = x->count - k0 < 64 ? x->count - k0 : 64;
            VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set,
                                      .dstBinding = x->binding,
                                      .dstArrayElement = x->elem + k0,
                                      .descriptorCount = n,
                                      .descriptorType = x->type};
            for (uint32_t k = 0; k < n; k++) {
                const uint8_t *p = (const uint8_t *)data + x->offset + (k0 + k) * x->stride;
                if (is_buffer_type(x->type))
                    memcpy(&bi[k], p, sizeof bi[k]);
                else if (is_texel_type(x->type))
                    memcpy(&bv[k], p, sizeof bv[k]);
            }
            w.pBufferInfo = bi;
            w.pTexelBufferView = bv;
            enc_write_set(&enc, &w);
        }
    }
    if (enc.len)
        emit_marker(d, "vkUpdateDescriptorSetWithTemplate", &enc, t0);
    sbt_vk_enc_free(&enc);
    pthread_mutex_unlock(&cap.mu);
}

/* ========================================================================================== */
/* Command pools and buffers                                                                  */
/* ========================================================================================== */

/* The command buffer being recorded on this thread, looked up without the lock while the
 * generation (bumped whenever a command buffer shadow is freed) has not moved. */
static _Thread_local struct {
    uint64_t handle;
    struct cap_cmdbuf *cb;
    uint32_t gen;
} tls_cb;

static struct cap_cmdbuf *cb_get(VkCommandBuffer h)
{
    uint32_t gen = atomic_load_explicit(&cap.gen, memory_order_acquire);
    if (tls_cb.handle == H(h) && tls_cb.gen == gen)
        return tls_cb.cb;
    pthread_mutex_lock(&cap.mu);
    struct cap_cmdbuf *cb = cap_obj_find(H(h), CAP_T_CMDBUF);
    pthread_mutex_unlock(&cap.mu);
    tls_cb.handle = H(h);
    tls_cb.cb = cb;
    tls_cb.gen = gen;
    return cb;
}

static void cb_free(struct cap_cmdbuf *cb)
{
    if (!cb)
        return;
    if (cb->n_ts_pool) {
        cap_timing_settle_cb(cb);
        cap_ts_free(cb);
    }
    atomic_fetch_add(&cap.gen, 1);
    sbt_vk_enc_free(&cb->raw);
    cap_blob_unref(cb->rec);
    cap_cmdbuf_drop_ops(cb);
    free(cb);
}

/* cap.mu held when cb has timestamp pools (--timing). */
static void cb_reset(struct cap_cmdbuf *cb)
{
    if (cb->n_ts_pool)
        cap_timing_settle_cb(cb);
    cb->n_ts = 0;
    sbt_vk_enc_reset(&cb->raw);
    cb->n_cmds = 0;
    cap_blob_unref(cb->rec);
    cb->rec = NULL;
    cap_cmdbuf_drop_ops(cb);
    cb->recording = 0;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateCommandPool(VkDevice device,
                                                            const VkCommandPoolCreateInfo *ci,
                                                            const VkAllocationCallbacks *alloc,
                                                            VkCommandPool *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    VkResult r = d->fn.CreateCommandPool(device, ci, alloc, out);
    if (r == VK_SUCCESS && cap.timing && ON()) {
        pthread_mutex_lock(&cap.mu);
        cap_map_put(&cap.cmd_pools, H(*out), (void *)(uintptr_t)(ci->queueFamilyIndex + 1ull));
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

static void pool_each_cb(uint64_t pool, int destroy)
{
    struct cap_map *m = &cap.objs[CAP_T_CMDBUF];
    for (size_t i = 0; i < m->cap; i++) {
        if (m->e[i].key < 2)
            continue;
        struct cap_cmdbuf *cb = m->e[i].val;
        if (!cb || cb->pool_handle != pool)
            continue;
        if (destroy) {
            cap_map_del(m, cb->o.handle);
            cb_free(cb);
        } else {
            cb_reset(cb);
        }
    }
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyCommandPool(VkDevice device, VkCommandPool pool,
                                                         const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (pool && ON()) {
        pthread_mutex_lock(&cap.mu);
        pool_each_cb(H(pool), 1);
        cap_map_del(&cap.cmd_pools, H(pool));
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyCommandPool(device, pool, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_ResetCommandPool(VkDevice device, VkCommandPool pool,
                                                           VkCommandPoolResetFlags f)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (ON()) {
        pthread_mutex_lock(&cap.mu);
        pool_each_cb(H(pool), 0);
        pthread_mutex_unlock(&cap.mu);
    }
    return d->fn.ResetCommandPool(device, pool, f);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_AllocateCommandBuffers(
    VkDevice device, const VkCommandBufferAllocateInfo *ai, VkCommandBuffer *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    VkResult r = d->fn.AllocateCommandBuffers(device, ai, out);
    if (r != VK_SUCCESS || !ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    for (uint32_t i = 0; i < ai->commandBufferCount; i++) {
        struct cap_cmdbuf *cb =
            obj_new(sizeof *cb, CAP_T_CMDBUF, VK_OBJECT_TYPE_COMMAND_BUFFER, H(out[i]), d);
        if (!cb)
            break;
        cb->pool_handle = H(ai->commandPool);
        cb->level = ai->level;
        uintptr_t fam = cap.timing ? (uintptr_t)cap_map_get(&cap.cmd_pools, H(ai->commandPool)) : 0;
        if (fam && fam - 1 < d->n_qfam) {
            cb->family = (uint32_t)(fam - 1);
            cb->ts_bits = d->qfam[cb->family].timestampValidBits;
        }
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL cap_FreeCommandBuffers(VkDevice device, VkCommandPool pool,
                                                         uint32_t n, const VkCommandBuffer *cbs)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    if (ON()) {
        pthread_mutex_lock(&cap.mu);
        for (uint32_t i = 0; i < n; i++)
            cb_free(obj_del(H(cbs[i]), CAP_T_CMDBUF));
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.FreeCommandBuffers(device, pool, n, cbs);
}

/* --timing: a timestamp before a timed command (its pair, UINT32_MAX = untimed) and after it.
 * The default path pays one load of cap.timing. */
#define TS_BEFORE(h) (cap.timing && ON() ? cap_ts_before(cb_get(h), h) : UINT32_MAX)
#define TS_AFTER(h, ts)                     \
    do {                                    \
        if ((ts) != UINT32_MAX)             \
            cap_ts_after(cb_get(h), h, ts); \
    } while (0)

/* Appends one raw record to cb's recording. No lock: the program owns cb on this thread. */
static void cb_rec(VkCommandBuffer h, uint32_t call, const uint64_t *a, size_t n, const void *bytes,
                   size_t nb)
{
    if (!ON())
        return;
    struct cap_cmdbuf *cb = cb_get(h);
    if (!cb)
        return;
    sbt_vk_enc_rec(&cb->raw, call, a, n, bytes, nb);
    cb->n_cmds++;
    if (cb->raw.status)
        cap_fail("recording a command buffer: %s", sbt_errmsg());
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_BeginCommandBuffer(VkCommandBuffer h,
                                                             const VkCommandBufferBeginInfo *bi)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    if (ON()) {
        struct cap_cmdbuf *cb = cb_get(h);
        if (cb && cb->n_ts_pool) {
            pthread_mutex_lock(&cap.mu);
            cb_reset(cb);
            pthread_mutex_unlock(&cap.mu);
        } else if (cb) {
            cb_reset(cb);
        }
        if (cb) {
            cb->recording = 1;
            cb->usage = bi->flags;
            cb_rec(h, SBT_VK_CMD_BEGIN, (uint64_t[]){H(h), cb->level, bi->flags}, 3, NULL, 0);
        }
    }
    return d->fn.BeginCommandBuffer(h, bi);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_EndCommandBuffer(VkCommandBuffer h)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    if (ON()) {
        struct cap_cmdbuf *cb = cb_get(h);
        if (cb) {
            cb_rec(h, SBT_VK_CMD_END, (uint64_t[]){cb->n_cmds}, 1, NULL, 0);
            cb->recording = 0;
        }
    }
    return d->fn.EndCommandBuffer(h);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_ResetCommandBuffer(VkCommandBuffer h,
                                                             VkCommandBufferResetFlags f)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    if (ON()) {
        struct cap_cmdbuf *cb = cb_get(h);
        if (cb && cb->n_ts_pool) {
            pthread_mutex_lock(&cap.mu);
            cb_reset(cb);
            pthread_mutex_unlock(&cap.mu);
        } else if (cb) {
            cb_reset(cb);
        }
    }
    return d->fn.ResetCommandBuffer(h, f);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdBindPipeline(VkCommandBuffer h, VkPipelineBindPoint bp,
                                                      VkPipeline p)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    cb_rec(h, SBT_VK_CMD_BIND_PIPELINE, (uint64_t[]){bp, H(p)}, 2, NULL, 0);
    d->fn.CmdBindPipeline(h, bp, p);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdBindDescriptorSets(VkCommandBuffer h,
                                                            VkPipelineBindPoint bp,
                                                            VkPipelineLayout layout, uint32_t first,
                                                            uint32_t n, const VkDescriptorSet *sets,
                                                            uint32_t n_dyn, const uint32_t *dyn)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    if (ON() && n <= 64 && n_dyn <= 256) {
        uint64_t a[4 + 64 + 1 + 256];
        size_t k = 0;
        a[k++] = bp;
        a[k++] = H(layout);
        a[k++] = first;
        a[k++] = n;
        for (uint32_t i = 0; i < n; i++)
            a[k++] = H(sets[i]);
        a[k++] = n_dyn;
        for (uint32_t i = 0; i < n_dyn; i++)
            a[k++] = dyn[i];
        cb_rec(h, SBT_VK_CMD_BIND_SETS, a, k, NULL, 0);
    }
    d->fn.CmdBindDescriptorSets(h, bp, layout, first, n, sets, n_dyn, dyn);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdPushConstants(VkCommandBuffer h, VkPipelineLayout layout,
                                                       VkShaderStageFlags stages, uint32_t off,
                                                       uint32_t size, const void *values)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    cb_rec(h, SBT_VK_CMD_PUSH_CONSTANTS, (uint64_t[]){H(layout), stages, off}, 3, values, size);
    d->fn.CmdPushConstants(h, layout, stages, off, size, values);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdDispatch(VkCommandBuffer h, uint32_t x, uint32_t y,
                                                  uint32_t z)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    uint32_t ts = TS_BEFORE(h);
    cb_rec(h, SBT_VK_CMD_DISPATCH, (uint64_t[]){0, 0, 0, x, y, z}, 6, NULL, 0);
    d->fn.CmdDispatch(h, x, y, z);
    TS_AFTER(h, ts);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdDispatchBase(VkCommandBuffer h, uint32_t bx, uint32_t by,
                                                      uint32_t bz, uint32_t x, uint32_t y,
                                                      uint32_t z)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    uint32_t ts = TS_BEFORE(h);
    cb_rec(h, SBT_VK_CMD_DISPATCH, (uint64_t[]){bx, by, bz, x, y, z}, 6, NULL, 0);
    d->fn.CmdDispatchBase(h, bx, by, bz, x, y, z);
    TS_AFTER(h, ts);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdDispatchIndirect(VkCommandBuffer h, VkBuffer b,
                                                          VkDeviceSize off)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    uint32_t ts = TS_BEFORE(h);
    cb_rec(h, SBT_VK_CMD_DISPATCH_INDIRECT, (uint64_t[]){H(b), off}, 2, NULL, 0);
    d->fn.CmdDispatchIndirect(h, b, off);
    TS_AFTER(h, ts);
}

static void rec_copy(VkCommandBuffer h, uint64_t src, uint64_t dst, uint32_t n,
                     const VkBufferCopy *r1, const VkBufferCopy2 *r2)
{
    if (!ON())
        return;
    struct cap_cmdbuf *cb = cb_get(h);
    if (!cb)
        return;
    struct sbt_vk_enc *e = &cb->raw;
    sbt_vk_enc_begin(e, SBT_VK_CMD_COPY_BUFFER);
    sbt_vk_enc_arg(e, src);
    sbt_vk_enc_arg(e, dst);
    sbt_vk_enc_arg(e, n);
    for (uint32_t i = 0; i < n; i++) {
        sbt_vk_enc_arg(e, r1 ? r1[i].srcOffset : r2[i].srcOffset);
        sbt_vk_enc_arg(e, r1 ? r1[i].dstOffset : r2[i].dstOffset);
        sbt_vk_enc_arg(e, r1 ? r1[i].size : r2[i].size);
    }
    sbt_vk_enc_end(e, NULL, 0);
    cb->n_cmds++;
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdCopyBuffer(VkCommandBuffer h, VkBuffer src, VkBuffer dst,
                                                    uint32_t n, const VkBufferCopy *r)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    uint32_t ts = TS_BEFORE(h);
    rec_copy(h, H(src), H(dst), n, r, NULL);
    d->fn.CmdCopyBuffer(h, src, dst, n, r);
    TS_AFTER(h, ts);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdCopyBuffer2(VkCommandBuffer h, const VkCopyBufferInfo2 *ci)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    uint32_t ts = TS_BEFORE(h);
    rec_copy(h, H(ci->srcBuffer), H(ci->dstBuffer), ci->regionCount, NULL, ci->pRegions);
    d->fn.CmdCopyBuffer2(h, ci);
    TS_AFTER(h, ts);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdFillBuffer(VkCommandBuffer h, VkBuffer dst,
                                                    VkDeviceSize off, VkDeviceSize size,
                                                    uint32_t data)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    uint32_t ts = TS_BEFORE(h);
    cb_rec(h, SBT_VK_CMD_FILL_BUFFER, (uint64_t[]){H(dst), off, size, data}, 4, NULL, 0);
    d->fn.CmdFillBuffer(h, dst, off, size, data);
    TS_AFTER(h, ts);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdUpdateBuffer(VkCommandBuffer h, VkBuffer dst,
                                                      VkDeviceSize off, VkDeviceSize size,
                                                      const void *data)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    uint32_t ts = TS_BEFORE(h);
    cb_rec(h, SBT_VK_CMD_UPDATE_BUFFER, (uint64_t[]){H(dst), off, size}, 3, data, size);
    d->fn.CmdUpdateBuffer(h, dst, off, size, data);
    TS_AFTER(h, ts);
}

/* Barriers: argument layout of CMD_BARRIER (sbt_vk.h); image barriers are counted only. */
static void enc_barrier(struct sbt_vk_enc *e, uint64_t src, uint64_t dst, uint32_t flags,
                        uint32_t nm, const VkMemoryBarrier *m1, const VkMemoryBarrier2 *m2,
                        uint32_t nb, const VkBufferMemoryBarrier *b1,
                        const VkBufferMemoryBarrier2 *b2, uint32_t ni)
{
    sbt_vk_enc_arg(e, src);
    sbt_vk_enc_arg(e, dst);
    sbt_vk_enc_arg(e, flags);
    sbt_vk_enc_arg(e, nm);
    for (uint32_t i = 0; i < nm; i++) {
        sbt_vk_enc_arg(e, m1 ? src : m2[i].srcStageMask);
        sbt_vk_enc_arg(e, m1 ? m1[i].srcAccessMask : m2[i].srcAccessMask);
        sbt_vk_enc_arg(e, m1 ? dst : m2[i].dstStageMask);
        sbt_vk_enc_arg(e, m1 ? m1[i].dstAccessMask : m2[i].dstAccessMask);
    }
    sbt_vk_enc_arg(e, nb);
    for (uint32_t i = 0; i < nb; i++) {
        sbt_vk_enc_arg(e, b1 ? src : b2[i].srcStageMask);
        sbt_vk_enc_arg(e, b1 ? b1[i].srcAccessMask : b2[i].srcAccessMask);
        sbt_vk_enc_arg(e, b1 ? dst : b2[i].dstStageMask);
        sbt_vk_enc_arg(e, b1 ? b1[i].dstAccessMask : b2[i].dstAccessMask);
        sbt_vk_enc_arg(e, b1 ? b1[i].srcQueueFamilyIndex : b2[i].srcQueueFamilyIndex);
        sbt_vk_enc_arg(e, b1 ? b1[i].dstQueueFamilyIndex : b2[i].dstQueueFamilyIndex);
        sbt_vk_enc_arg(e, H(b1 ? b1[i].buffer : b2[i].buffer));
        sbt_vk_enc_arg(e, b1 ? b1[i].offset : b2[i].offset);
        sbt_vk_enc_arg(e, b1 ? b1[i].size : b2[i].size);
    }
    if (ni)
        cap_unsupported("image memory barrier");
}

static VKAPI_ATTR void VKAPI_CALL
cap_CmdPipelineBarrier(VkCommandBuffer h, VkPipelineStageFlags src, VkPipelineStageFlags dst,
                       VkDependencyFlags f, uint32_t nm, const VkMemoryBarrier *m, uint32_t nb,
                       const VkBufferMemoryBarrier *b, uint32_t ni, const VkImageMemoryBarrier *im)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    struct cap_cmdbuf *cb = ON() ? cb_get(h) : NULL;
    if (cb) {
        sbt_vk_enc_begin(&cb->raw, SBT_VK_CMD_BARRIER);
        enc_barrier(&cb->raw, src, dst, f, nm, m, NULL, nb, b, NULL, ni);
        sbt_vk_enc_end(&cb->raw, NULL, 0);
        cb->n_cmds++;
    }
    d->fn.CmdPipelineBarrier(h, src, dst, f, nm, m, nb, b, ni, im);
}

static void rec_dep2(struct sbt_vk_enc *e, const VkDependencyInfo *di)
{
    enc_barrier(e, 0, 0, di->dependencyFlags, di->memoryBarrierCount, NULL, di->pMemoryBarriers,
                di->bufferMemoryBarrierCount, NULL, di->pBufferMemoryBarriers,
                di->imageMemoryBarrierCount);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdPipelineBarrier2(VkCommandBuffer h,
                                                          const VkDependencyInfo *di)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    struct cap_cmdbuf *cb = ON() ? cb_get(h) : NULL;
    if (cb) {
        sbt_vk_enc_begin(&cb->raw, SBT_VK_CMD_BARRIER);
        rec_dep2(&cb->raw, di);
        sbt_vk_enc_end(&cb->raw, NULL, 0);
        cb->n_cmds++;
    }
    d->fn.CmdPipelineBarrier2(h, di);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdSetEvent(VkCommandBuffer h, VkEvent ev,
                                                  VkPipelineStageFlags st)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    cb_rec(h, SBT_VK_CMD_SET_EVENT, (uint64_t[]){H(ev), st}, 2, NULL, 0);
    d->fn.CmdSetEvent(h, ev, st);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdSetEvent2(VkCommandBuffer h, VkEvent ev,
                                                   const VkDependencyInfo *di)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    cb_rec(h, SBT_VK_CMD_SET_EVENT, (uint64_t[]){H(ev), VK_PIPELINE_STAGE_ALL_COMMANDS_BIT}, 2,
           NULL, 0);
    d->fn.CmdSetEvent2(h, ev, di);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdResetEvent(VkCommandBuffer h, VkEvent ev,
                                                    VkPipelineStageFlags st)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    cb_rec(h, SBT_VK_CMD_RESET_EVENT, (uint64_t[]){H(ev), st}, 2, NULL, 0);
    d->fn.CmdResetEvent(h, ev, st);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdResetEvent2(VkCommandBuffer h, VkEvent ev,
                                                     VkPipelineStageFlags2 st)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    cb_rec(h, SBT_VK_CMD_RESET_EVENT, (uint64_t[]){H(ev), st}, 2, NULL, 0);
    d->fn.CmdResetEvent2(h, ev, st);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdWaitEvents(VkCommandBuffer h, uint32_t n,
                                                    const VkEvent *evs, VkPipelineStageFlags src,
                                                    VkPipelineStageFlags dst, uint32_t nm,
                                                    const VkMemoryBarrier *m, uint32_t nb,
                                                    const VkBufferMemoryBarrier *b, uint32_t ni,
                                                    const VkImageMemoryBarrier *im)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    struct cap_cmdbuf *cb = ON() ? cb_get(h) : NULL;
    if (cb) {
        sbt_vk_enc_begin(&cb->raw, SBT_VK_CMD_WAIT_EVENTS);
        sbt_vk_enc_arg(&cb->raw, n);
        for (uint32_t i = 0; i < n; i++)
            sbt_vk_enc_arg(&cb->raw, H(evs[i]));
        enc_barrier(&cb->raw, src, dst, 0, nm, m, NULL, nb, b, NULL, ni);
        sbt_vk_enc_end(&cb->raw, NULL, 0);
        cb->n_cmds++;
    }
    d->fn.CmdWaitEvents(h, n, evs, src, dst, nm, m, nb, b, ni, im);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdWaitEvents2(VkCommandBuffer h, uint32_t n,
                                                     const VkEvent *evs, const VkDependencyInfo *di)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    struct cap_cmdbuf *cb = ON() ? cb_get(h) : NULL;
    if (cb) {
        sbt_vk_enc_begin(&cb->raw, SBT_VK_CMD_WAIT_EVENTS);
        sbt_vk_enc_arg(&cb->raw, n);
        for (uint32_t i = 0; i < n; i++)
            sbt_vk_enc_arg(&cb->raw, H(evs[i]));
        if (n)
            rec_dep2(&cb->raw, &di[0]); /* one VkDependencyInfo per event; the first kept */
        sbt_vk_enc_end(&cb->raw, NULL, 0);
        cb->n_cmds++;
    }
    d->fn.CmdWaitEvents2(h, n, evs, di);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdWriteTimestamp(VkCommandBuffer h,
                                                        VkPipelineStageFlagBits st, VkQueryPool qp,
                                                        uint32_t q)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    cb_rec(h, SBT_VK_CMD_WRITE_TIMESTAMP, (uint64_t[]){st, H(qp), q}, 3, NULL, 0);
    d->fn.CmdWriteTimestamp(h, st, qp, q);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdWriteTimestamp2(VkCommandBuffer h,
                                                         VkPipelineStageFlags2 st, VkQueryPool qp,
                                                         uint32_t q)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    cb_rec(h, SBT_VK_CMD_WRITE_TIMESTAMP, (uint64_t[]){st, H(qp), q}, 3, NULL, 0);
    d->fn.CmdWriteTimestamp2(h, st, qp, q);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdResetQueryPool(VkCommandBuffer h, VkQueryPool qp,
                                                        uint32_t first, uint32_t n)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    cb_rec(h, SBT_VK_CMD_RESET_QUERIES, (uint64_t[]){H(qp), first, n}, 3, NULL, 0);
    d->fn.CmdResetQueryPool(h, qp, first, n);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdExecuteCommands(VkCommandBuffer h, uint32_t n,
                                                         const VkCommandBuffer *cbs)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    struct cap_cmdbuf *cb = ON() ? cb_get(h) : NULL;
    if (cb) {
        sbt_vk_enc_begin(&cb->raw, SBT_VK_CMD_EXECUTE);
        sbt_vk_enc_arg(&cb->raw, n);
        for (uint32_t i = 0; i < n; i++)
            sbt_vk_enc_arg(&cb->raw, H(cbs[i]));
        sbt_vk_enc_end(&cb->raw, NULL, 0);
        cb->n_cmds++;
    }
    d->fn.CmdExecuteCommands(h, n, cbs);
}

/* ---- outside the compute subset: counted, recorded as CMD_UNSUPPORTED, passed down ------- */

static void unsup_cmd(VkCommandBuffer h, const char *name)
{
    cap_unsupported(name);
    cb_rec(h, SBT_VK_CMD_UNSUPPORTED, NULL, 0, name, strlen(name));
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdDraw(VkCommandBuffer h, uint32_t a, uint32_t b, uint32_t c,
                                              uint32_t e)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    unsup_cmd(h, "vkCmdDraw");
    d->fn.CmdDraw(h, a, b, c, e);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdDrawIndexed(VkCommandBuffer h, uint32_t a, uint32_t b,
                                                     uint32_t c, int32_t o, uint32_t e)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    unsup_cmd(h, "vkCmdDrawIndexed");
    d->fn.CmdDrawIndexed(h, a, b, c, o, e);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdBeginRenderPass(VkCommandBuffer h,
                                                         const VkRenderPassBeginInfo *bi,
                                                         VkSubpassContents c)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    unsup_cmd(h, "vkCmdBeginRenderPass");
    d->fn.CmdBeginRenderPass(h, bi, c);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdCopyBufferToImage(VkCommandBuffer h, VkBuffer b, VkImage i,
                                                           VkImageLayout l, uint32_t n,
                                                           const VkBufferImageCopy *r)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    unsup_cmd(h, "vkCmdCopyBufferToImage");
    d->fn.CmdCopyBufferToImage(h, b, i, l, n, r);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdCopyImageToBuffer(VkCommandBuffer h, VkImage i,
                                                           VkImageLayout l, VkBuffer b, uint32_t n,
                                                           const VkBufferImageCopy *r)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    unsup_cmd(h, "vkCmdCopyImageToBuffer");
    d->fn.CmdCopyImageToBuffer(h, i, l, b, n, r);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdCopyImage(VkCommandBuffer h, VkImage s, VkImageLayout sl,
                                                   VkImage t, VkImageLayout tl, uint32_t n,
                                                   const VkImageCopy *r)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    unsup_cmd(h, "vkCmdCopyImage");
    d->fn.CmdCopyImage(h, s, sl, t, tl, n, r);
}

static VKAPI_ATTR void VKAPI_CALL cap_CmdClearColorImage(VkCommandBuffer h, VkImage i,
                                                         VkImageLayout l,
                                                         const VkClearColorValue *c, uint32_t n,
                                                         const VkImageSubresourceRange *r)
{
    struct cap_dev *d = dev_of(h);
    COUNT();
    unsup_cmd(h, "vkCmdClearColorImage");
    d->fn.CmdClearColorImage(h, i, l, c, n, r);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateImage(VkDevice device, const VkImageCreateInfo *ci,
                                                      const VkAllocationCallbacks *alloc,
                                                      VkImage *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    cap_unsupported("vkCreateImage");
    return d->fn.CreateImage(device, ci, alloc, out);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_BindImageMemory(VkDevice device, VkImage i,
                                                          VkDeviceMemory m, VkDeviceSize o)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    cap_unsupported("vkBindImageMemory");
    return d->fn.BindImageMemory(device, i, m, o);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateGraphicsPipelines(
    VkDevice device, VkPipelineCache c, uint32_t n, const VkGraphicsPipelineCreateInfo *ci,
    const VkAllocationCallbacks *alloc, VkPipeline *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    cap_unsupported("vkCreateGraphicsPipelines");
    return d->fn.CreateGraphicsPipelines(device, c, n, ci, alloc, out);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_QueueBindSparse(VkQueue q, uint32_t n,
                                                          const VkBindSparseInfo *bi, VkFence f)
{
    struct cap_dev *d = dev_of(q);
    COUNT();
    cap_unsupported("vkQueueBindSparse");
    return d->fn.QueueBindSparse(q, n, bi, f);
}

static VKAPI_ATTR VkDeviceAddress VKAPI_CALL
cap_GetBufferDeviceAddress(VkDevice device, const VkBufferDeviceAddressInfo *info)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    cap_unsupported("vkGetBufferDeviceAddress");
    return d->fn.GetBufferDeviceAddress(device, info);
}

/* ========================================================================================== */
/* Sync objects                                                                               */
/* ========================================================================================== */

static struct cap_sync *sync_new(struct cap_dev *d, uint32_t t, uint32_t vk_type, uint64_t h,
                                 uint32_t kind, const char *name, uint64_t flags, uint64_t initial,
                                 uint64_t t0)
{
    struct cap_sync *s = obj_new(sizeof *s, t, vk_type, h, d);
    if (!s)
        return NULL;
    s->kind = kind;
    struct sbt_vk_enc enc = {0};
    sbt_vk_enc_rec(
        &enc, SBT_VK_CREATE_SYNC,
        (uint64_t[]){s->o.id, vk_type, flags, kind == SBT_SYNC_TIMELINE_SEMAPHORE ? 1 : 0, initial},
        5, NULL, 0);
    emit_marker(d, name, &enc, t0);
    return s;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateFence(VkDevice device, const VkFenceCreateInfo *ci,
                                                      const VkAllocationCallbacks *alloc,
                                                      VkFence *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.CreateFence(device, ci, alloc, out);
    if (r == VK_SUCCESS && ON()) {
        pthread_mutex_lock(&cap.mu);
        sync_new(d, CAP_T_FENCE, VK_OBJECT_TYPE_FENCE, H(*out), SBT_SYNC_FENCE, "vkCreateFence",
                 ci->flags, 0, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateSemaphore(VkDevice device,
                                                          const VkSemaphoreCreateInfo *ci,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkSemaphore *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.CreateSemaphore(device, ci, alloc, out);
    if (r == VK_SUCCESS && ON()) {
        uint32_t kind = SBT_SYNC_BINARY_SEMAPHORE;
        uint64_t initial = 0;
        for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext)
            if (s->sType == VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO) {
                const VkSemaphoreTypeCreateInfo *t = (const VkSemaphoreTypeCreateInfo *)s;
                if (t->semaphoreType == VK_SEMAPHORE_TYPE_TIMELINE) {
                    kind = SBT_SYNC_TIMELINE_SEMAPHORE;
                    initial = t->initialValue;
                }
            }
        pthread_mutex_lock(&cap.mu);
        sync_new(d, CAP_T_SEM, VK_OBJECT_TYPE_SEMAPHORE, H(*out), kind, "vkCreateSemaphore",
                 ci->flags, initial, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_CreateEvent(VkDevice device, const VkEventCreateInfo *ci,
                                                      const VkAllocationCallbacks *alloc,
                                                      VkEvent *out)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.CreateEvent(device, ci, alloc, out);
    if (r == VK_SUCCESS && ON()) {
        pthread_mutex_lock(&cap.mu);
        sync_new(d, CAP_T_EVENT, VK_OBJECT_TYPE_EVENT, H(*out), SBT_SYNC_EVENT, "vkCreateEvent",
                 ci->flags, 0, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

static void sync_destroy(struct cap_dev *d, uint64_t h, uint32_t t, uint32_t vk_type,
                         const char *name)
{
    if (!h || !ON())
        return;
    uint64_t t0 = cap_now();
    pthread_mutex_lock(&cap.mu);
    struct cap_sync *s = obj_del(h, t);
    if (s)
        emit_destroy(d, name, vk_type, s->o.id, t0);
    free(s);
    pthread_mutex_unlock(&cap.mu);
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyFence(VkDevice device, VkFence f,
                                                   const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    sync_destroy(d, H(f), CAP_T_FENCE, VK_OBJECT_TYPE_FENCE, "vkDestroyFence");
    d->fn.DestroyFence(device, f, alloc);
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroySemaphore(VkDevice device, VkSemaphore s,
                                                       const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    sync_destroy(d, H(s), CAP_T_SEM, VK_OBJECT_TYPE_SEMAPHORE, "vkDestroySemaphore");
    d->fn.DestroySemaphore(device, s, alloc);
}

static VKAPI_ATTR void VKAPI_CALL cap_DestroyEvent(VkDevice device, VkEvent e,
                                                   const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    sync_destroy(d, H(e), CAP_T_EVENT, VK_OBJECT_TYPE_EVENT, "vkDestroyEvent");
    d->fn.DestroyEvent(device, e, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_ResetFences(VkDevice device, uint32_t n, const VkFence *f)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.ResetFences(device, n, f);
    if (r == VK_SUCCESS && ON()) {
        pthread_mutex_lock(&cap.mu);
        struct sbt_vk_enc enc = {0};
        sbt_vk_enc_begin(&enc, SBT_VK_RESET_SYNC);
        sbt_vk_enc_arg(&enc, VK_OBJECT_TYPE_FENCE);
        sbt_vk_enc_arg(&enc, n);
        for (uint32_t i = 0; i < n; i++) {
            struct cap_sync *s = cap_obj_find(H(f[i]), CAP_T_FENCE);
            sbt_vk_enc_arg(&enc, s ? s->o.id : 0);
            if (s)
                s->n_sig = 0;
        }
        sbt_vk_enc_end(&enc, NULL, 0);
        emit_marker(d, "vkResetFences", &enc, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

/* A host-side SIGNAL / WAIT / EVENT op on the calling thread's stream. */
static struct cap_ev *host_sync_op(struct cap_dev *d, uint32_t kind, const char *name,
                                   const struct cap_sync *s, uint64_t value, uint64_t t0)
{
    struct cap_ev *e = op_ev(d, kind, name, NULL, t0);
    if (e && s) {
        e->op.subkind = s->kind;
        e->op.obj = s->o.id;
        e->op.value = value;
        e->op.flags = SBT_OPF_OBJ;
    }
    return e;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_WaitForFences(VkDevice device, uint32_t n,
                                                        const VkFence *f, VkBool32 all,
                                                        uint64_t timeout)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.WaitForFences(device, n, f, all, timeout);
    if (r != VK_SUCCESS || !ON())
        return r;
    uint64_t now = cap_now();
    pthread_mutex_lock(&cap.mu);
    struct cap_ev *head = NULL, **tail = &head;
    for (uint32_t i = 0; i < n; i++) {
        struct cap_sync *s = cap_obj_find(H(f[i]), CAP_T_FENCE);
        if (!s)
            continue;
        /* with waitAll = false only the fences that are signaled now are known done */
        if (!all && n > 1 && d->fn.GetFenceStatus(device, f[i]) != VK_SUCCESS)
            continue;
        struct cap_ev *e = host_sync_op(d, SBT_OP_WAIT, "vkWaitForFences", s, 0, t0);
        if (e) {
            *tail = e;
            tail = &e->next;
        }
        cap_sync_reached(d, s, 0, &tail, now);
    }
    cap_emit(head);
    pthread_mutex_unlock(&cap.mu);
    cap_kick();
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_GetFenceStatus(VkDevice device, VkFence f)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.GetFenceStatus(device, f);
    if (r != VK_SUCCESS || !ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    struct cap_sync *s = cap_obj_find(H(f), CAP_T_FENCE);
    if (s && s->n_sig) {
        struct cap_ev *head = host_sync_op(d, SBT_OP_WAIT, "vkGetFenceStatus", s, 0, t0);
        struct cap_ev **tail = head ? &head->next : &head;
        cap_sync_reached(d, s, 0, &tail, cap_now());
        cap_emit(head);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_WaitSemaphores(VkDevice device,
                                                         const VkSemaphoreWaitInfo *wi,
                                                         uint64_t timeout)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.WaitSemaphores(device, wi, timeout);
    if (r != VK_SUCCESS || !ON())
        return r;
    int any = (wi->flags & VK_SEMAPHORE_WAIT_ANY_BIT) && wi->semaphoreCount > 1;
    uint64_t now = cap_now();
    pthread_mutex_lock(&cap.mu);
    struct cap_ev *head = NULL, **tail = &head;
    for (uint32_t i = 0; i < wi->semaphoreCount; i++) {
        struct cap_sync *s = cap_obj_find(H(wi->pSemaphores[i]), CAP_T_SEM);
        if (!s)
            continue;
        uint64_t v = wi->pValues[i];
        if (any) {
            uint64_t cur = 0;
            if (d->fn.GetSemaphoreCounterValue(device, wi->pSemaphores[i], &cur) != VK_SUCCESS ||
                cur < v)
                continue;
        }
        struct cap_ev *e = host_sync_op(d, SBT_OP_WAIT, "vkWaitSemaphores", s, v, t0);
        if (e) {
            *tail = e;
            tail = &e->next;
        }
        cap_sync_reached(d, s, v, &tail, now);
    }
    cap_emit(head);
    pthread_mutex_unlock(&cap.mu);
    cap_kick();
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_GetSemaphoreCounterValue(VkDevice device, VkSemaphore sem,
                                                                   uint64_t *value)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.GetSemaphoreCounterValue(device, sem, value);
    if (r != VK_SUCCESS || !ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    struct cap_sync *s = cap_obj_find(H(sem), CAP_T_SEM);
    if (s && s->n_sig) {
        /* a value read back completes the signals up to it, as a wait would */
        struct cap_ev *head =
            host_sync_op(d, SBT_OP_WAIT, "vkGetSemaphoreCounterValue", s, *value, t0);
        struct cap_ev **tail = head ? &head->next : &head;
        cap_sync_reached(d, s, *value, &tail, cap_now());
        cap_emit(head);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_SignalSemaphore(VkDevice device,
                                                          const VkSemaphoreSignalInfo *si)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    if (ON()) {
        /* host writes before the signal may be read by work that waits for it */
        pthread_mutex_lock(&cap.mu);
        struct cap_ev *head = NULL, **tail = &head;
        cap_mem_scan_all(d, &tail, t0);
        struct cap_sync *s = cap_obj_find(H(si->semaphore), CAP_T_SEM);
        if (s)
            *tail = host_sync_op(d, SBT_OP_SIGNAL, "vkSignalSemaphore", s, si->value, t0);
        cap_emit(head);
        pthread_mutex_unlock(&cap.mu);
    }
    return d->fn.SignalSemaphore(device, si);
}

static VkResult host_event(VkDevice device, VkEvent ev, int set)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    if (ON()) {
        pthread_mutex_lock(&cap.mu);
        struct cap_ev *head = NULL, **tail = &head;
        if (set)
            cap_mem_scan_all(d, &tail, t0);
        struct cap_sync *s = cap_obj_find(H(ev), CAP_T_EVENT);
        if (s && set) {
            *tail = host_sync_op(d, SBT_OP_EVENT_RECORD, "vkSetEvent", s, 0, t0);
        } else if (s) {
            struct sbt_vk_enc enc = {0};
            sbt_vk_enc_rec(&enc, SBT_VK_RESET_SYNC, (uint64_t[]){VK_OBJECT_TYPE_EVENT, 1, s->o.id},
                           3, NULL, 0);
            *tail = op_ev(d, SBT_OP_MARKER, "vkResetEvent", &enc, t0);
            sbt_vk_enc_free(&enc);
        }
        cap_emit(head);
        pthread_mutex_unlock(&cap.mu);
    }
    return set ? d->fn.SetEvent(device, ev) : d->fn.ResetEvent(device, ev);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_SetEvent(VkDevice device, VkEvent ev)
{
    return host_event(device, ev, 1);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_ResetEvent(VkDevice device, VkEvent ev)
{
    return host_event(device, ev, 0);
}

/* ========================================================================================== */
/* Submission and idle waits                                                                  */
/* ========================================================================================== */

/* After the submission: --digests needs the results, so the queue is drained here. */
static void after_submit(struct cap_dev *d, VkQueue q, struct cap_ev *chain)
{
    if (cap.digests && chain && d->fn.QueueWaitIdle(q) == VK_SUCCESS)
        cap_digest_ops(chain);
    cap_emit(chain);
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_QueueSubmit(VkQueue queue, uint32_t n,
                                                      const VkSubmitInfo *si, VkFence fence)
{
    struct cap_dev *d = dev_of(queue);
    COUNT();
    if (!ON())
        return d->fn.QueueSubmit(queue, n, si, fence);
    uint64_t t0 = cap_now();
    /* the lock is held across the call so that submissions keep the driver's order */
    pthread_mutex_lock(&cap.mu);
    /* host writes are found before the driver sees the submission: once it has, the device
     * may be writing mapped memory already, and that is not the host's doing */
    struct cap_ev *pre = NULL, **pre_tail = &pre;
    cap_mem_scan_all(d, &pre_tail, t0);
    VkResult r = d->fn.QueueSubmit(queue, n, si, fence);
    struct cap_queue *q = cap_obj_find(H(queue), CAP_T_QUEUE);
    struct cap_ev *chain = NULL;
    if (r == VK_SUCCESS && q) {
        struct cap_submit_batch bb[64], *b = n <= 64 ? bb : calloc(n, sizeof *b);
        if (!b) {
            cap_fail("out of memory for %u submit batches", n);
        } else {
            uint64_t st[64];
            for (uint32_t i = 0; i < n; i++) {
                const VkTimelineSemaphoreSubmitInfo *tl = NULL;
                for (const VkBaseInStructure *s = si[i].pNext; s; s = s->pNext)
                    if (s->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO)
                        tl = (const VkTimelineSemaphoreSubmitInfo *)s;
                b[i] = (struct cap_submit_batch){0};
                b[i].n_wait = si[i].waitSemaphoreCount;
                b[i].wait = si[i].pWaitSemaphores;
                b[i].n_cb = si[i].commandBufferCount;
                b[i].cb = si[i].pCommandBuffers;
                b[i].n_signal = si[i].signalSemaphoreCount;
                b[i].signal = si[i].pSignalSemaphores;
                if (tl && tl->pWaitSemaphoreValues &&
                    tl->waitSemaphoreValueCount == si[i].waitSemaphoreCount)
                    b[i].wait_value = tl->pWaitSemaphoreValues;
                if (tl && tl->pSignalSemaphoreValues &&
                    tl->signalSemaphoreValueCount == si[i].signalSemaphoreCount)
                    b[i].signal_value = tl->pSignalSemaphoreValues;
                /* stage masks are 32-bit in v1: widened into st when there are few */
                if (si[i].pWaitDstStageMask && si[i].waitSemaphoreCount <= 64 && n == 1) {
                    for (uint32_t k = 0; k < si[i].waitSemaphoreCount; k++)
                        st[k] = si[i].pWaitDstStageMask[k];
                    b[i].wait_stage = st;
                }
            }
            chain = cap_submit_build(d, q, b, n, fence, 1, t0, cap_now(), pre);
            pre = NULL;
            if (b != bb)
                free(b);
        }
    }
    cap_emit(pre); /* not taken by a submission: the host writes stand on their own */
    pthread_mutex_unlock(&cap.mu);
    after_submit(d, queue, chain);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_QueueSubmit2(VkQueue queue, uint32_t n,
                                                       const VkSubmitInfo2 *si, VkFence fence)
{
    struct cap_dev *d = dev_of(queue);
    COUNT();
    if (!ON())
        return d->fn.QueueSubmit2(queue, n, si, fence);
    uint64_t t0 = cap_now();
    pthread_mutex_lock(&cap.mu);
    /* host writes are found before the driver sees the submission: once it has, the device
     * may be writing mapped memory already, and that is not the host's doing */
    struct cap_ev *pre = NULL, **pre_tail = &pre;
    cap_mem_scan_all(d, &pre_tail, t0);
    VkResult r = d->fn.QueueSubmit2(queue, n, si, fence);
    struct cap_queue *q = cap_obj_find(H(queue), CAP_T_QUEUE);
    struct cap_ev *chain = NULL;
    if (r == VK_SUCCESS && q) {
        /* flatten the v2 infos into arrays of handles / values / stages */
        size_t nw = 0, nc = 0, ns = 0;
        for (uint32_t i = 0; i < n; i++) {
            nw += si[i].waitSemaphoreInfoCount;
            nc += si[i].commandBufferInfoCount;
            ns += si[i].signalSemaphoreInfoCount;
        }
        struct cap_submit_batch *b = calloc(n ? n : 1, sizeof *b);
        VkSemaphore *sem = calloc(nw + ns + 1, sizeof *sem);
        uint64_t *val = calloc(2 * (nw + ns) + 1, sizeof *val);
        VkCommandBuffer *cbs = calloc(nc + 1, sizeof *cbs);
        if (!b || !sem || !val || !cbs) {
            cap_fail("out of memory for a vkQueueSubmit2");
        } else {
            size_t is = 0, iv = 0, ic = 0;
            for (uint32_t i = 0; i < n; i++) {
                b[i].n_wait = si[i].waitSemaphoreInfoCount;
                b[i].wait = sem + is;
                b[i].wait_value = val + iv;
                b[i].wait_stage = val + iv + b[i].n_wait;
                for (uint32_t k = 0; k < b[i].n_wait; k++) {
                    sem[is++] = si[i].pWaitSemaphoreInfos[k].semaphore;
                    val[iv + k] = si[i].pWaitSemaphoreInfos[k].value;
                    val[iv + b[i].n_wait + k] = si[i].pWaitSemaphoreInfos[k].stageMask;
                }
                iv += 2 * b[i].n_wait;
                b[i].n_cb = si[i].commandBufferInfoCount;
                b[i].cb = cbs + ic;
                for (uint32_t k = 0; k < b[i].n_cb; k++)
                    cbs[ic++] = si[i].pCommandBufferInfos[k].commandBuffer;
                b[i].n_signal = si[i].signalSemaphoreInfoCount;
                b[i].signal = sem + is;
                b[i].signal_value = val + iv;
                b[i].signal_stage = val + iv + b[i].n_signal;
                for (uint32_t k = 0; k < b[i].n_signal; k++) {
                    sem[is++] = si[i].pSignalSemaphoreInfos[k].semaphore;
                    val[iv + k] = si[i].pSignalSemaphoreInfos[k].value;
                    val[iv + b[i].n_signal + k] = si[i].pSignalSemaphoreInfos[k].stageMask;
                }
                iv += 2 * b[i].n_signal;
            }
            chain = cap_submit_build(d, q, b, n, fence, 2, t0, cap_now(), pre);
            pre = NULL;
        }
        free(b);
        free(sem);
        free(val);
        free(cbs);
    }
    cap_emit(pre); /* not taken by a submission: the host writes stand on their own */
    pthread_mutex_unlock(&cap.mu);
    after_submit(d, queue, chain);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_QueueWaitIdle(VkQueue queue)
{
    struct cap_dev *d = dev_of(queue);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.QueueWaitIdle(queue);
    if (r != VK_SUCCESS || !ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    struct cap_queue *q = cap_obj_find(H(queue), CAP_T_QUEUE);
    if (q) {
        struct cap_ev *head = op_ev(d, SBT_OP_STREAM_SYNC, "vkQueueWaitIdle", NULL, t0);
        struct cap_ev **tail = head ? &head->next : &head;
        if (head) {
            head->obj_queue = q->o.id;
            head->op.flags = SBT_OPF_OBJ;
        }
        cap_complete(d, q->o.id, UINT64_MAX, &tail, cap_now());
        cap_emit(head);
    }
    pthread_mutex_unlock(&cap.mu);
    cap_kick();
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL cap_DeviceWaitIdle(VkDevice device)
{
    struct cap_dev *d = dev_of(device);
    COUNT();
    uint64_t t0 = cap_now();
    VkResult r = d->fn.DeviceWaitIdle(device);
    if (r != VK_SUCCESS || !ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    struct cap_ev *head = op_ev(d, SBT_OP_DEVICE_SYNC, "vkDeviceWaitIdle", NULL, t0);
    struct cap_ev **tail = head ? &head->next : &head;
    if (head)
        head->op.flags = SBT_OPF_OBJ;
    cap_complete(d, 0, UINT64_MAX, &tail, cap_now());
    cap_emit(head);
    pthread_mutex_unlock(&cap.mu);
    cap_kick();
    return r;
}

/* ========================================================================================== */
/* Unload                                                                                     */
/* ========================================================================================== */

/* Frees shadow o of map t and what it owns, without calling Vulkan (the query pools of a
 * command buffer go with their device). */
static void obj_free_at_unload(struct cap_obj *o, uint32_t t)
{
    switch (t) {
    case CAP_T_MEM: {
        struct cap_mem *m = (struct cap_mem *)o;
        free(m->page);
        free(m->pend);
        free(m->done);
        break;
    }
    case CAP_T_MODULE:
        cap_refl_free(&((struct cap_module *)o)->refl);
        break;
    case CAP_T_DSL:
        free(((struct cap_dsl *)o)->b);
        break;
    case CAP_T_PLAYOUT:
        sbt_vk_enc_free(&((struct playout_rec *)o)->rec);
        break;
    case CAP_T_PIPELINE:
        free(((struct cap_pipeline *)o)->acc);
        break;
    case CAP_T_DSET:
        free(((struct cap_dset *)o)->b);
        free(((struct cap_dset *)o)->slot);
        break;
    case CAP_T_TEMPL:
        free(((struct cap_templ *)o)->e);
        break;
    case CAP_T_CMDBUF: {
        struct cap_cmdbuf *cb = (struct cap_cmdbuf *)o;
        sbt_vk_enc_free(&cb->raw);
        cap_blob_unref(cb->rec);
        cap_cmdbuf_drop_ops(cb);
        free(cb->ts_pool);
        free(cb->ts_at);
        break;
    }
    default:
        break;
    }
    free(o);
}

void cap_layer_free_all(void)
{
    pthread_mutex_lock(&cap.mu);
    for (uint32_t t = 0; t < CAP_T__COUNT; t++) {
        struct cap_map *m = &cap.objs[t];
        for (size_t i = 0; i < m->cap; i++)
            if (m->e[i].key >= 2 && m->e[i].val)
                obj_free_at_unload(m->e[i].val, t);
        cap_map_free(m);
    }
    free(cap.mems);
    cap.mems = NULL;
    cap.n_mems = cap.cap_mems = 0;
    free(cap.tpend); /* the timings themselves belong to their batches (cap_timing_drop_all) */
    cap.tpend = NULL;
    cap.n_tpend = cap.cap_tpend = 0;
    cap_map_free(&cap.cmd_pools);
    cap_submit_free_all();
    cap.shadow_gen++;
    atomic_fetch_add(&cap.gen, 1); /* no cached command buffer survives */
    pthread_mutex_unlock(&cap.mu);

    pthread_mutex_lock(&tab_mu);
    for (int i = 0; i < MAX_INST; i++) {
        free(insts[i]);
        __atomic_store_n(&insts[i], NULL, __ATOMIC_RELEASE);
    }
    for (int i = 0; i < MAX_DEV; i++) {
        free(devs[i]);
        __atomic_store_n(&devs[i], NULL, __ATOMIC_RELEASE);
    }
    while (retired_insts) {
        struct cap_inst *in = retired_insts;
        retired_insts = in->retired_next;
        free(in);
    }
    while (retired_devs) {
        struct cap_dev *d = retired_devs;
        retired_devs = d->retired_next;
        free(d);
    }
    pthread_mutex_unlock(&tab_mu);
}

/* ========================================================================================== */
/* Entry points                                                                               */
/* ========================================================================================== */

struct fn_ent {
    const char *name;
    PFN_vkVoidFunction fn;
};

#define F(n)                                 \
    {                                        \
        "vk" #n, (PFN_vkVoidFunction)cap_##n \
    }
#define FA(n, s)                               \
    {                                          \
        "vk" #n s, (PFN_vkVoidFunction)cap_##n \
    }
static const struct fn_ent device_fns[] = {
    F(DestroyDevice),
    F(GetDeviceQueue),
    F(GetDeviceQueue2),
    F(AllocateMemory),
    F(FreeMemory),
    F(MapMemory),
    F(UnmapMemory),
    F(FlushMappedMemoryRanges),
    F(InvalidateMappedMemoryRanges),
    F(CreateBuffer),
    F(DestroyBuffer),
    F(BindBufferMemory),
    F(BindBufferMemory2),
    FA(BindBufferMemory2, "KHR"),
    F(CreateBufferView),
    F(DestroyBufferView),
    F(CreateShaderModule),
    F(DestroyShaderModule),
    F(CreateDescriptorSetLayout),
    F(DestroyDescriptorSetLayout),
    F(CreatePipelineLayout),
    F(DestroyPipelineLayout),
    F(CreateComputePipelines),
    F(DestroyPipeline),
    F(CreateDescriptorPool),
    F(DestroyDescriptorPool),
    F(ResetDescriptorPool),
    F(AllocateDescriptorSets),
    F(FreeDescriptorSets),
    F(UpdateDescriptorSets),
    F(CreateDescriptorUpdateTemplate),
    FA(CreateDescriptorUpdateTemplate, "KHR"),
    F(DestroyDescriptorUpdateTemplate),
    FA(DestroyDescriptorUpdateTemplate, "KHR"),
    F(UpdateDescriptorSetWithTemplate),
    FA(UpdateDescriptorSetWithTemplate, "KHR"),
    F(CreateCommandPool),
    F(DestroyCommandPool),
    F(ResetCommandPool),
    F(AllocateCommandBuffers),
    F(FreeCommandBuffers),
    F(BeginCommandBuffer),
    F(EndCommandBuffer),
    F(ResetCommandBuffer),
    F(CmdBindPipeline),
    F(CmdBindDescriptorSets),
    F(CmdPushConstants),
    F(CmdDispatch),
    F(CmdDispatchBase),
    FA(CmdDispatchBase, "KHR"),
    F(CmdDispatchIndirect),
    F(CmdCopyBuffer),
    F(CmdCopyBuffer2),
    FA(CmdCopyBuffer2, "KHR"),
    F(CmdFillBuffer),
    F(CmdUpdateBuffer),
    F(CmdPipelineBarrier),
    F(CmdPipelineBarrier2),
    FA(CmdPipelineBarrier2, "KHR"),
    F(CmdSetEvent),
    F(CmdSetEvent2),
    FA(CmdSetEvent2, "KHR"),
    F(CmdResetEvent),
    F(CmdResetEvent2),
    FA(CmdResetEvent2, "KHR"),
    F(CmdWaitEvents),
    F(CmdWaitEvents2),
    FA(CmdWaitEvents2, "KHR"),
    F(CmdWriteTimestamp),
    F(CmdWriteTimestamp2),
    FA(CmdWriteTimestamp2, "KHR"),
    F(CmdResetQueryPool),
    F(CmdExecuteCommands),
    F(QueueSubmit),
    F(QueueSubmit2),
    FA(QueueSubmit2, "KHR"),
    F(QueueWaitIdle),
    F(DeviceWaitIdle),
    F(CreateFence),
    F(DestroyFence),
    F(ResetFences),
    F(GetFenceStatus),
    F(WaitForFences),
    F(CreateSemaphore),
    F(DestroySemaphore),
    F(SignalSemaphore),
    FA(SignalSemaphore, "KHR"),
    F(WaitSemaphores),
    FA(WaitSemaphores, "KHR"),
    F(GetSemaphoreCounterValue),
    FA(GetSemaphoreCounterValue, "KHR"),
    F(CreateEvent),
    F(DestroyEvent),
    F(SetEvent),
    F(ResetEvent),
    F(CmdDraw),
    F(CmdDrawIndexed),
    F(CmdBeginRenderPass),
    F(CmdCopyBufferToImage),
    F(CmdCopyImageToBuffer),
    F(CmdCopyImage),
    F(CmdClearColorImage),
    F(CreateImage),
    F(BindImageMemory),
    F(CreateGraphicsPipelines),
    F(QueueBindSparse),
    F(GetBufferDeviceAddress),
    FA(GetBufferDeviceAddress, "KHR"),
};
#undef F
#undef FA

static PFN_vkVoidFunction find_fn(const char *name)
{
    for (size_t i = 0; i < sizeof device_fns / sizeof device_fns[0]; i++)
        if (!strcmp(device_fns[i].name, name))
            return device_fns[i].fn;
    return NULL;
}

CAP_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice device,
                                                                        const char *name);

CAP_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice device,
                                                                        const char *name)
{
    if (!name)
        return NULL;
    if (!strcmp(name, "vkGetDeviceProcAddr"))
        return (PFN_vkVoidFunction)vkGetDeviceProcAddr;
    struct cap_dev *d = device ? dev_of(device) : NULL;
    if (!d)
        return NULL;
    PFN_vkVoidFunction next = d->gdpa(device, name);
    if (!next)
        return NULL; /* not enabled below us: neither are we */
    PFN_vkVoidFunction mine = find_fn(name);
    return mine ? mine : next;
}

CAP_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance instance,
                                                                          const char *name);

CAP_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance instance,
                                                                          const char *name)
{
    if (!name)
        return NULL;
    if (!strcmp(name, "vkGetInstanceProcAddr"))
        return (PFN_vkVoidFunction)vkGetInstanceProcAddr;
    if (!strcmp(name, "vkCreateInstance"))
        return (PFN_vkVoidFunction)cap_CreateInstance;
    if (!strcmp(name, "vkGetDeviceProcAddr"))
        return (PFN_vkVoidFunction)vkGetDeviceProcAddr;
    if (!instance)
        return NULL;
    struct cap_inst *in = inst_of(instance);
    if (!in)
        return NULL;
    if (!strcmp(name, "vkDestroyInstance"))
        return (PFN_vkVoidFunction)cap_DestroyInstance;
    if (!strcmp(name, "vkCreateDevice"))
        return (PFN_vkVoidFunction)cap_CreateDevice;
    PFN_vkVoidFunction next = in->gipa(instance, name);
    if (!next)
        return NULL;
    PFN_vkVoidFunction mine = find_fn(name);
    return mine ? mine : next;
}

CAP_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v);

CAP_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v)
{
    if (!v || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT)
        return VK_ERROR_INITIALIZATION_FAILED;
    if (v->loaderLayerInterfaceVersion > 2)
        v->loaderLayerInterfaceVersion = 2;
    if (v->loaderLayerInterfaceVersion < 2)
        return VK_ERROR_INITIALIZATION_FAILED;
    v->pfnGetInstanceProcAddr = vkGetInstanceProcAddr;
    v->pfnGetDeviceProcAddr = vkGetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
