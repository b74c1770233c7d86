/*
 * capture/vk/cap_vk_instance.c — VK_LAYER_REPRISE_capture's frame: the loader interface
 * (negotiation, vkGetInstanceProcAddr, vkGetDeviceProcAddr), instances and devices found by
 * their dispatch keys, the device row of the trace, queues, the shadow objects every other
 * file registers its Vulkan objects in, and freeing everything at unload.
 *
 * Entry points. vkGetInstanceProcAddr / vkGetDeviceProcAddr look the name up in the table
 * generated from the registry (capture/vk/cap_vk_gen.py): a recorded command gets its hand-written
 * wrapper, an unmodelled one its generated pass-through, a query the next layer's function,
 * and a name the registry does not know a counting trampoline (cap_vk_tramp.c). The other
 * files are listed in cap_vk_int.h.
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

#include "capture/common/cap_int.h"
#include "capture/vk/cap_vk_int.h"

/* ========================================================================================== */
/* Instances and devices by dispatch key                                                      */
/* ========================================================================================== */

struct cap_inst *cap_insts[CAP_MAX_INST];
struct cap_dev *cap_devs[CAP_MAX_DEV];
static pthread_mutex_t tab_mu = PTHREAD_MUTEX_INITIALIZER;
/* Taken out of the tables but not freed (tab_mu): a racing call on another thread may still
 * read them. cap_layer_free_all() frees them at unload. */
static struct cap_inst *retired_insts;
static struct cap_dev *retired_devs;

/* ========================================================================================== */
/* Shadow objects                                                                             */
/* ========================================================================================== */

void *cap_obj_find(uint64_t handle, uint32_t t)
{
    return handle ? sbt_map_getp(&cap.objs[t], handle) : NULL;
}

/* Allocates a shadow of sz bytes and registers it. cap.mu held. NULL (and recording off) on
 * failure. */
void *cap_obj_new(size_t sz, uint32_t t, uint32_t vk_type, uint64_t handle, struct cap_dev *d)
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
    if (sbt_map_putp(&cap.objs[t], handle, o)) {
        free(o);
        cap_fail("out of memory tracking objects");
        return NULL;
    }
    return o;
}

void *cap_obj_del(uint64_t handle, uint32_t t)
{
    cap.shadow_gen++;
    return handle ? sbt_map_delp(&cap.objs[t], handle) : NULL;
}

/* ========================================================================================== */
/* Ops                                                                                        */
/* ========================================================================================== */

/* A host-stream op with a payload built in enc (copied). */
struct cap_ev *cap_op_ev(struct cap_dev *d, uint32_t kind, const char *name,
                         const struct sbt_payload_enc *enc, uint64_t t0)
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
        if (sbt_payload_enc_status(enc)) {
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
void cap_emit_marker(struct cap_dev *d, const char *name, struct sbt_payload_enc *enc, uint64_t t0)
{
    cap_emit(cap_op_ev(d, SBT_OP_MARKER, name, enc, t0));
    sbt_payload_enc_free(enc);
}

void cap_emit_destroy(struct cap_dev *d, const char *name, uint32_t vk_type, uint64_t id,
                      uint64_t t0)
{
    struct sbt_payload_enc enc = {0};
    sbt_payload_put(&enc, SBT_VK_DESTROY, (uint64_t[]){vk_type, id}, 2, NULL, 0);
    cap_emit_marker(d, name, &enc, t0);
}

void cap_destroy_plain(struct cap_dev *d, uint64_t h, uint32_t t, uint32_t vk_type,
                       const char *name)
{
    if (!h || !CAP_ON())
        return;
    uint64_t t0 = cap_now();
    pthread_mutex_lock(&cap.mu);
    struct cap_obj *o = cap_obj_del(h, t);
    if (o)
        cap_emit_destroy(d, name, vk_type, o->id, t0);
    if (o && (t == CAP_T_FENCE || t == CAP_T_SEM || t == CAP_T_EVENT))
        cap_sync_free((struct cap_sync *)o);
    free(o);
    pthread_mutex_unlock(&cap.mu);
}

/* ========================================================================================== */
/* Instance                                                                                   */
/* ========================================================================================== */

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateInstance(const VkInstanceCreateInfo *ci,
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
    in->key = cap_dkey(*out);
    in->handle = *out;
    in->gipa = gipa;
    cap_inst_fns_load(&in->fn, gipa, *out);
    in->api_version = ci->pApplicationInfo ? ci->pApplicationInfo->apiVersion : 0;
    pthread_mutex_lock(&tab_mu);
    int placed = 0;
    for (int i = 0; i < CAP_MAX_INST && !placed; i++)
        if (!cap_insts[i]) {
            __atomic_store_n(&cap_insts[i], in, __ATOMIC_RELEASE);
            placed = 1;
        }
    pthread_mutex_unlock(&tab_mu);
    if (!placed) {
        cap_fail("more than %d Vulkan instances", CAP_MAX_INST);
        free(in);
    }
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyInstance(VkInstance instance,
                                               const VkAllocationCallbacks *alloc)
{
    if (!instance)
        return;
    struct cap_inst *in = cap_inst_of(instance);
    if (!in)
        return;
    PFN_vkDestroyInstance fn = in->fn.DestroyInstance;
    pthread_mutex_lock(&tab_mu);
    for (int i = 0; i < CAP_MAX_INST; i++)
        if (cap_insts[i] == in)
            __atomic_store_n(&cap_insts[i], NULL, __ATOMIC_RELEASE);
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

/* Every structure in VkDeviceCreateInfo's pNext chain: a features structure of the
 * registry's table (format/sbt_vk.h; VkPhysicalDeviceFeatures2 included) becomes a FEATURES
 * record with all its members, whatever structure it is; any other structure a DEVICE_CHAIN
 * record with its sType (replay does not rebuild those). */
static void enc_features(struct sbt_payload_enc *enc, const void *pnext)
{
    for (const VkBaseInStructure *s = pnext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO)
            continue; /* the loader's own link: not the program's */
        const struct sbt_vk_feature_struct *t = sbt_vk_feature_struct((uint32_t)s->sType);
        if (!t) { /* counted too, so `reprise info` shows that replay leaves it out */
            sbt_payload_put(enc, SBT_VK_DEVICE_CHAIN, (uint64_t[]){(uint64_t)s->sType}, 1, NULL, 0);
            cap_unmodelled(NULL, "VkDeviceCreateInfo.pNext: a structure replay does not rebuild",
                           0);
            continue;
        }
        const VkBool32 *f = (const VkBool32 *)(s + 1);
        sbt_payload_enc_begin(enc, SBT_VK_FEATURES);
        sbt_payload_enc_arg(enc, t->stype);
        sbt_payload_enc_arg(enc, t->n);
        for (uint32_t i = 0; i < t->n; i++)
            sbt_payload_enc_arg(enc, f[i] ? 1 : 0);
        sbt_payload_enc_end(enc, NULL, 0);
    }
}

static void device_row(struct cap_dev *d, const VkDeviceCreateInfo *ci)
{
    struct cap_inst *in = d->inst;
    VkPhysicalDeviceProperties p;
    memset(&p, 0, sizeof p);
    VkPhysicalDeviceIDProperties idp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    if (in->fn.GetPhysicalDeviceProperties2) {
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &idp};
        in->fn.GetPhysicalDeviceProperties2(d->phys, &p2);
        p = p2.properties;
    } else {
        in->fn.GetPhysicalDeviceProperties(d->phys, &p);
    }
    in->fn.GetPhysicalDeviceMemoryProperties(d->phys, &d->mem_props);
    uint32_t nq = 0;
    in->fn.GetPhysicalDeviceQueueFamilyProperties(d->phys, &nq, NULL);
    if (nq > 16)
        nq = 16;
    in->fn.GetPhysicalDeviceQueueFamilyProperties(d->phys, &nq, d->qfam);
    d->n_qfam = nq;
    d->ts_period_ns = p.limits.timestampPeriod;
    d->cpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && !cap__env_flag(CAP_ENV_TEST_DMA);
    d->nc_atom = p.limits.nonCoherentAtomSize;

    struct sbt_payload_enc enc = {0};
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
    sbt_payload_put(&enc, SBT_VK_DEVICE, a, sizeof a / sizeof a[0], p.deviceName,
                    strnlen(p.deviceName, sizeof p.deviceName));
    for (uint32_t i = 0; i < d->mem_props.memoryTypeCount && i < VK_MAX_MEMORY_TYPES; i++)
        sbt_payload_put(&enc, SBT_VK_MEMORY_TYPE,
                        (uint64_t[]){i, d->mem_props.memoryTypes[i].propertyFlags,
                                     d->mem_props.memoryTypes[i].heapIndex},
                        3, NULL, 0);
    for (uint32_t i = 0; i < d->mem_props.memoryHeapCount && i < VK_MAX_MEMORY_HEAPS; i++)
        sbt_payload_put(
            &enc, SBT_VK_MEMORY_HEAP,
            (uint64_t[]){i, d->mem_props.memoryHeaps[i].size, d->mem_props.memoryHeaps[i].flags}, 3,
            NULL, 0);
    for (uint32_t i = 0; i < nq; i++)
        sbt_payload_put(&enc, SBT_VK_QUEUE_FAMILY,
                        (uint64_t[]){i, d->qfam[i].queueFlags, d->qfam[i].queueCount,
                                     d->qfam[i].timestampValidBits},
                        4, NULL, 0);
    for (uint32_t i = 0; ci->pQueueCreateInfos && i < ci->queueCreateInfoCount; i++)
        sbt_payload_put(&enc, SBT_VK_QUEUE_CREATE,
                        (uint64_t[]){ci->pQueueCreateInfos[i].queueFamilyIndex,
                                     ci->pQueueCreateInfos[i].queueCount,
                                     ci->pQueueCreateInfos[i].flags},
                        3, NULL, 0);
    for (uint32_t i = 0; ci->ppEnabledExtensionNames && i < ci->enabledExtensionCount; i++)
        if (ci->ppEnabledExtensionNames[i])
            sbt_payload_put(&enc, SBT_VK_EXTENSION, NULL, 0, ci->ppEnabledExtensionNames[i],
                            strlen(ci->ppEnabledExtensionNames[i]));
    if (ci->pEnabledFeatures) {
        const VkBool32 *f = (const VkBool32 *)ci->pEnabledFeatures;
        size_t n = sizeof(VkPhysicalDeviceFeatures) / sizeof(VkBool32);
        sbt_payload_enc_begin(&enc, SBT_VK_FEATURES);
        sbt_payload_enc_arg(&enc, 0);
        sbt_payload_enc_arg(&enc, n);
        for (size_t i = 0; i < n; i++)
            sbt_payload_enc_arg(&enc, f[i] ? 1 : 0);
        sbt_payload_enc_end(&enc, NULL, 0);
    }
    enc_features(&enc, ci->pNext);
    if (d->addr_replay)
        sbt_payload_put(&enc, SBT_VK_ADDRESS_REPLAY, (uint64_t[]){1}, 1, NULL, 0);

    struct cap_ev *e = cap_ev_new(CAP_EV_DEVICE);
    if (!e || sbt_payload_enc_status(&enc)) {
        cap_ev_free_chain(e);
        sbt_payload_enc_free(&enc);
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
    sbt_payload_enc_free(&enc);
    cap_emit(e);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateDevice(VkPhysicalDevice phys, const VkDeviceCreateInfo *ci,
                                                const VkAllocationCallbacks *alloc, VkDevice *out)
{
    struct cap_inst *in = cap_inst_of(phys);
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
    /* buffer device addresses: capture-replay turned on where the device offers it */
    int addr_replay = 0;
    void *addr_mem = CAP_ON() ? cap_addr_device_info(in, phys, &ci2, &addr_replay) : NULL;
    if (names) {
        for (uint32_t i = 0; i < ci->enabledExtensionCount; i++)
            names[i] = ci->ppEnabledExtensionNames[i];
        names[ci->enabledExtensionCount] = ext;
        ci2.enabledExtensionCount = ci->enabledExtensionCount + 1;
        ci2.ppEnabledExtensionNames = names;
    } else if (ext) {
        ext_on = 0;
    }
    VkResult r = cap_vk_result(next(phys, &ci2, alloc, out), "vkCreateDevice");
    free(names);
    free(addr_mem);
    if (r != VK_SUCCESS)
        return r;
    struct cap_dev *d = calloc(1, sizeof *d);
    if (!d) {
        cap_fail("out of memory for a device");
        return r;
    }
    d->key = cap_dkey(*out);
    d->handle = *out;
    d->phys = phys;
    d->inst = in;
    d->gdpa = gdpa;
    d->id = cap_new_id();
    d->addr_replay = addr_replay;
    cap_dev_fns_load(&d->fn, gdpa, *out);
    pthread_mutex_lock(&tab_mu);
    int placed = 0;
    for (int i = 0; i < CAP_MAX_DEV && !placed; i++)
        if (!cap_devs[i]) {
            __atomic_store_n(&cap_devs[i], d, __ATOMIC_RELEASE);
            placed = 1;
        }
    pthread_mutex_unlock(&tab_mu);
    if (!placed) {
        /* without a table entry our entry points cannot find the next layer: this device's
         * calls would fail. Refuse cleanly instead. */
        cap_fail("more than %d Vulkan devices", CAP_MAX_DEV);
        d->fn.DestroyDevice(*out, alloc);
        free(d);
        *out = VK_NULL_HANDLE;
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    if (CAP_ON()) {
        device_row(d, ci);
        cap_timing_device(d, ext_on);
    }
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyDevice(VkDevice device, const VkAllocationCallbacks *alloc)
{
    if (!device)
        return;
    struct cap_dev *d = cap_dev_of(device);
    if (!d)
        return;
    CAP_COUNT();
    /* submissions still waiting for the host (cap_vk_sync.c, "CPU devices") are the program's
     * all the same: into the trace before the device goes */
    struct cap_queue *dq[16];
    uint32_t n_dq = 0;
    pthread_mutex_lock(&cap.mu);
    uint64_t pos = 0, key, val;
    while (n_dq < 16 && sbt_map_next(&cap.objs[CAP_T_QUEUE], &pos, &key, &val)) {
        struct cap_queue *q = (struct cap_queue *)(uintptr_t)val;
        if (q && q->o.dev == d && q->n_deferred)
            dq[n_dq++] = q;
    }
    pthread_mutex_unlock(&cap.mu);
    for (uint32_t i = 0; i < n_dq; i++)
        cap_queue_flush_deferred(dq[i]);
    cap_mapped_device_gone(d); /* memory still mapped goes away with the device */
    d->fn.DestroyDevice(device, alloc);
    pthread_mutex_lock(&tab_mu);
    for (int i = 0; i < CAP_MAX_DEV; i++)
        if (cap_devs[i] == d)
            __atomic_store_n(&cap_devs[i], NULL, __ATOMIC_RELEASE);
    d->dead = 1; /* kept until unload: shadows and racing calls may still point at it */
    d->retired_next = retired_devs;
    retired_devs = d;
    pthread_mutex_unlock(&tab_mu);
}

static void queue_seen(struct cap_dev *d, VkQueue q, uint32_t family, uint32_t index)
{
    if (!q || !CAP_ON())
        return;
    pthread_mutex_lock(&cap.mu);
    if (cap_obj_find(CAP_H(q), CAP_T_QUEUE)) {
        pthread_mutex_unlock(&cap.mu);
        return;
    }
    struct cap_queue *cq = cap_obj_new(sizeof *cq, CAP_T_QUEUE, VK_OBJECT_TYPE_QUEUE, CAP_H(q), d);
    if (cq) {
        cq->family = family;
        cq->index = index;
        pthread_mutex_init(&cq->mu, NULL);
    }
    struct cap_ev *e = cq ? cap_ev_new(CAP_EV_QUEUE) : NULL;
    if (e) {
        struct sbt_payload_enc enc = {0};
        sbt_payload_put(&enc, SBT_VK_QUEUE, (uint64_t[]){cq->o.id, family, index, d->id}, 4, NULL,
                        0);
        e->dev_id = d->id;
        e->queue_id = cq->o.id;
        e->stream.kind = SBT_STREAM_QUEUE;
        e->stream.handle = CAP_H(q);
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

VKAPI_ATTR void VKAPI_CALL cap_GetDeviceQueue(VkDevice device, uint32_t family, uint32_t index,
                                              VkQueue *q)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    d->fn.GetDeviceQueue(device, family, index, q);
    queue_seen(d, *q, family, index);
}

VKAPI_ATTR void VKAPI_CALL cap_GetDeviceQueue2(VkDevice device, const VkDeviceQueueInfo2 *info,
                                               VkQueue *q)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    d->fn.GetDeviceQueue2(device, info, q);
    queue_seen(d, *q, info->queueFamilyIndex, info->queueIndex);
}

/* ========================================================================================== */
/* A lost device                                                                              */
/* ========================================================================================== */

void cap_device_lost(const char *call)
{
    static atomic_int seen;
    if (atomic_exchange(&seen, 1))
        return;
    char why[128];
    snprintf(why, sizeof why, "%s returned VK_ERROR_DEVICE_LOST", call);
    cap_flush_now(why);
}

/* ========================================================================================== */
/* Unload                                                                                     */
/* ========================================================================================== */

/* Frees shadow o of map t and what it owns, without calling Vulkan (the query pools of a
 * command buffer go with their device). */
static void obj_free_at_unload(struct cap_obj *o, uint32_t t)
{
    switch (t) {
    case CAP_T_MEM:
        cap_mem_unref((struct cap_mem *)o); /* the reference of cap.mems */
        return;
    case CAP_T_IMAGE:
        free(((struct cap_image *)o)->lay);
        break;
    case CAP_T_MODULE:
        cap_refl_free(&((struct cap_module *)o)->refl);
        break;
    case CAP_T_DSL:
        free(((struct cap_dsl *)o)->b);
        free(((struct cap_dsl *)o)->imm);
        break;
    case CAP_T_PLAYOUT:
        sbt_payload_enc_free(&((struct cap_playout *)o)->rec);
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
    case CAP_T_FENCE:
    case CAP_T_SEM:
    case CAP_T_EVENT:
        cap_sync_free((struct cap_sync *)o);
        break;
    case CAP_T_QUEUE:
        free(((struct cap_queue *)o)->waits);
        free(((struct cap_queue *)o)->deferred);
        break;
    case CAP_T_CMDBUF: {
        struct cap_cmdbuf *cb = (struct cap_cmdbuf *)o;
        sbt_payload_enc_free(&cb->raw);
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
        struct sbt_map *m = &cap.objs[t];
        uint64_t pos = 0, k, v;
        while (sbt_map_next(m, &pos, &k, &v))
            if (v)
                obj_free_at_unload((struct cap_obj *)(uintptr_t)v, t);
        sbt_map_free(m);
    }
    free(cap.mems);
    cap.mems = NULL;
    cap.n_mems = cap.cap_mems = 0;
    free(cap.tpend); /* the timings themselves belong to their batches (cap_timing_drop_all) */
    cap.tpend = NULL;
    cap.n_tpend = cap.cap_tpend = 0;
    sbt_map_free(&cap.cmd_pools);
    cap_unmod_free_all();
    cap.shadow_gen++;
    atomic_fetch_add(&cap.gen, 1); /* no cached command buffer survives */
    pthread_mutex_unlock(&cap.mu);

    pthread_mutex_lock(&tab_mu);
    for (int i = 0; i < CAP_MAX_INST; i++) {
        free(cap_insts[i]);
        __atomic_store_n(&cap_insts[i], NULL, __ATOMIC_RELEASE);
    }
    for (int i = 0; i < CAP_MAX_DEV; i++) {
        free(cap_devs[i]);
        __atomic_store_n(&cap_devs[i], NULL, __ATOMIC_RELEASE);
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

/* What the layer hands out for name, which the next layer resolved to next for the device or
 * instance with dispatch key owner (d: that device, or NULL). A recorded command or a typed
 * unmodelled one: our wrapper. A query: next itself. A command without a typed wrapper (a
 * platform one) or a name the registry does not know: a counting trampoline; where there is
 * none, next itself, after counting the name at resolution (affecting when unknown). */
static PFN_vkVoidFunction resolve(void *owner, struct cap_dev *d, const char *name,
                                  PFN_vkVoidFunction next)
{
    const struct cap_vk_cmd *c = cap_vk_find(name);
    if (c && c->fn)
        return c->fn;
    if (c && (c->cls == CAP_VK_QUERY || c->cls == CAP_VK_RECORDED))
        return next;
    uint32_t id;
    if (c) {
        id = (uint32_t)(c - cap_vk_cmds);
    } else {
        char what[256];
        snprintf(what, sizeof what, "%.160s (unknown to vk.xml %s)", name, CAP_VK_XML_VERSION);
        id = cap_unmod_id(what, SBT_UNMODELLED_AFFECTS, 1);
    }
    PFN_vkVoidFunction tr = cap_tramp_get(owner, id, next);
    if (tr)
        return tr;
    /* no trampoline (another architecture, or all of them used): its calls cannot be counted,
     * so the resolution itself is what the trace names */
    char what[320];
    snprintf(what, sizeof what, "%.200s (resolved, calls not counted: no trampoline)",
             cap_unmod_name(id));
    uint32_t flags = !c || c->cls == CAP_VK_AFFECTING ? SBT_UNMODELLED_AFFECTS : 0;
    cap_vk_count_affecting(cap_unmod_id(what, flags, 1), d);
    return next;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL cap_GetDeviceProcAddr(VkDevice device, const char *name)
{
    if (!name)
        return NULL;
    if (!strcmp(name, "vkGetDeviceProcAddr"))
        return (PFN_vkVoidFunction)cap_GetDeviceProcAddr;
    struct cap_dev *d = device ? cap_dev_of(device) : NULL;
    if (!d)
        return NULL;
    PFN_vkVoidFunction next = d->gdpa(device, name);
    if (!next)
        return NULL; /* not enabled below us: neither are we */
    return resolve(d->key, d, name, next);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL cap_GetInstanceProcAddr(VkInstance instance,
                                                                 const char *name)
{
    if (!name)
        return NULL;
    if (!strcmp(name, "vkGetInstanceProcAddr"))
        return (PFN_vkVoidFunction)cap_GetInstanceProcAddr;
    if (!strcmp(name, "vkCreateInstance"))
        return (PFN_vkVoidFunction)cap_CreateInstance;
    if (!strcmp(name, "vkGetDeviceProcAddr"))
        return (PFN_vkVoidFunction)cap_GetDeviceProcAddr;
    if (!instance)
        return NULL;
    struct cap_inst *in = cap_inst_of(instance);
    if (!in)
        return NULL;
    PFN_vkVoidFunction next = in->gipa(instance, name);
    if (!next)
        return NULL;
    return resolve(in->key, NULL, name, next);
}

/* The loader finds the layer by these three names (capture/vk/cap_vk.map exports only them). */
CAP_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice device,
                                                                        const char *name);
CAP_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice device,
                                                                        const char *name)
{
    return cap_GetDeviceProcAddr(device, name);
}

CAP_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance instance,
                                                                          const char *name);
CAP_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance instance,
                                                                          const char *name)
{
    return cap_GetInstanceProcAddr(instance, name);
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
    v->pfnGetInstanceProcAddr = cap_GetInstanceProcAddr;
    v->pfnGetDeviceProcAddr = cap_GetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
