/*
 * tests/vk/layer_twoqueues.c — VK_LAYER_REPRISE_twoqueues, a test-only Vulkan layer that gives
 * every queue family with compute at least two queues, so that programs using two queues run,
 * and are captured and replayed, in CI on lavapipe, whose one family has one queue. (A bug
 * first seen on an NVIDIA GPU needs two: work on queue 0 signals a timeline semaphore, work on
 * queue 1 waits on it and signals a fence, and the host waits on the fence only.)
 *
 * How: the layer reports queueCount max(real, 2) for such families and creates the device with
 * the real count (on a copy of the create info). A queue index the driver has is its real
 * queue; an extra one is a dispatchable handle made here (the loader's dispatch pointer, then
 * the real queue) standing for real queue index % real count, the same handle every time.
 * Every command given a queue (the vkQueue* commands, vkGetQueueCheckpointData*NV, and the
 * name, tag and private-data commands about a queue) hands the driver the real queue; the
 * private data of an extra queue is its real queue's. Vulkan lets two queues be used from two
 * threads at once, so the calls down to one real queue take its mutex; vkQueueWaitIdle submits
 * a fence under it and waits for the fence outside it, so that a wait does not hold up the
 * other queues. Batches on the virtual queues run in their submission order on the real queue,
 * a legal execution of the program, except where a batch waits on a semaphore that only a
 * batch submitted later to the same real queue signals (wait-before-signal across the virtual
 * queues): that waits forever.
 *
 * One instance at a time (a test layer); any number of devices, each with its table of queues.
 * Reference: Vulkan-Loader docs/LoaderLayerInterface.md ("Creating New Dispatchable Objects").
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "tests/vk/layer_common.h"

struct rqueue {         /* a queue the driver has */
    VkQueue q;          /* once fetched */
    pthread_mutex_t mu; /* serialises the calls down to it */
};

struct extra {         /* the handle of a queue the driver lacks */
    void *loader_data; /* as in every dispatchable handle: the loader's dispatch pointer */
    VkQueue real;
};

struct qfam { /* the queues of one VkDeviceQueueCreateInfo */
    uint32_t family, n_asked, n_real;
    VkDeviceQueueCreateFlags flags;
    struct rqueue *rq; /* [n_real] */
    VkQueue *handed;   /* [n_asked]: the handle handed out (real below n_real, else extra) */
};

struct dev {
    struct dev *next;
    VkDevice dev;
    uint32_t n_fam;
    struct qfam *fam;
    PFN_vkDestroyDevice destroy_device;
    PFN_vkGetDeviceQueue get_queue;
    PFN_vkGetDeviceQueue2 get_queue2;
    PFN_vkCreateFence create_fence;
    PFN_vkDestroyFence destroy_fence;
    PFN_vkWaitForFences wait_fences;
    PFN_vkQueueSubmit submit;
    PFN_vkQueueSubmit2 submit2; /* or vkQueueSubmit2KHR */
    PFN_vkQueueWaitIdle wait_idle;
    PFN_vkQueueBindSparse bind_sparse;
    PFN_vkQueuePresentKHR present;
    PFN_vkQueueBeginDebugUtilsLabelEXT begin_label;
    PFN_vkQueueEndDebugUtilsLabelEXT end_label;
    PFN_vkQueueInsertDebugUtilsLabelEXT insert_label;
    PFN_vkGetQueueCheckpointDataNV checkpoints;
    PFN_vkGetQueueCheckpointData2NV checkpoints2;
    PFN_vkQueueSetPerformanceConfigurationINTEL perf_config;
#ifdef VK_NV_low_latency2
    PFN_vkQueueNotifyOutOfBandNV out_of_band;
#endif
    PFN_vkSetDebugUtilsObjectNameEXT set_name;
    PFN_vkSetDebugUtilsObjectTagEXT set_tag;
    PFN_vkDebugMarkerSetObjectNameEXT marker_name;
    PFN_vkDebugMarkerSetObjectTagEXT marker_tag;
    PFN_vkSetPrivateData set_private; /* or the EXT one */
    PFN_vkGetPrivateData get_private; /* or the EXT one */
};

static PFN_vkGetPhysicalDeviceQueueFamilyProperties next_qfp;
static PFN_vkGetPhysicalDeviceQueueFamilyProperties2 next_qfp2; /* or the KHR one */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;          /* guards devs and their tables */
static struct dev *devs;

static void widen(VkQueueFamilyProperties *p)
{
    if ((p->queueFlags & VK_QUEUE_COMPUTE_BIT) && p->queueCount < 2)
        p->queueCount = 2;
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPhysicalDeviceQueueFamilyProperties(
    VkPhysicalDevice p, uint32_t *n, VkQueueFamilyProperties *props)
{
    next_qfp(p, n, props);
    for (uint32_t i = 0; props && i < *n; i++)
        widen(&props[i]);
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPhysicalDeviceQueueFamilyProperties2(
    VkPhysicalDevice p, uint32_t *n, VkQueueFamilyProperties2 *props)
{
    next_qfp2(p, n, props);
    for (uint32_t i = 0; props && i < *n; i++)
        widen(&props[i].queueFamilyProperties);
}

/* The device of handle dev, NULL if not made here. Under mu. */
static struct dev *dev_of(VkDevice dev)
{
    struct dev *d = devs;
    while (d && d->dev != dev)
        d = d->next;
    return d;
}

static struct dev *dev_find(VkDevice dev)
{
    pthread_mutex_lock(&mu);
    struct dev *d = dev_of(dev);
    pthread_mutex_unlock(&mu);
    return d;
}

/* The device and real queue of handle *q, with that queue's mutex taken (*rq, NULL for a
 * handle not handed out here) and *q made the real queue. */
static struct dev *enter(VkQueue *q, struct rqueue **rq)
{
    struct dev *found = NULL;
    VkQueue real = *q;
    *rq = NULL;
    pthread_mutex_lock(&mu);
    for (struct dev *d = devs; d && !found; d = d->next)
        for (uint32_t f = 0; f < d->n_fam && !found; f++)
            for (uint32_t i = 0; i < d->fam[f].n_asked && !found; i++)
                if (*q && d->fam[f].handed[i] == *q) {
                    found = d;
                    *rq = &d->fam[f].rq[i % d->fam[f].n_real];
                    real = (*rq)->q;
                }
    /* not handed out here (not expected): the device whose dispatch the handle carries */
    for (struct dev *d = devs; d && !found && *q; d = d->next)
        if (*(void **)d->dev == *(void **)*q)
            found = d;
    pthread_mutex_unlock(&mu);
    if (*rq)
        pthread_mutex_lock(&(*rq)->mu);
    *q = real;
    return found;
}

static void leave(struct rqueue *rq)
{
    if (rq)
        pthread_mutex_unlock(&rq->mu);
}

/* For the commands about an object given by type and handle: if it is a queue handed out here,
 * its real queue, with that queue's mutex taken (returned; else NULL). */
static struct rqueue *enter_object(int is_queue, uint64_t *h)
{
    struct rqueue *rq = NULL;
    VkQueue q = (VkQueue)(uintptr_t)*h;
    if (is_queue && q) {
        enter(&q, &rq);
        *h = (uint64_t)(uintptr_t)q;
    }
    return rq;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateInstance(const VkInstanceCreateInfo *ci,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkInstance *out)
{
    PFN_vkCreateInstance next = layer_next_create_instance(ci);
    VkResult r = next ? next(ci, alloc, out) : VK_ERROR_INITIALIZATION_FAILED;
    if (r == VK_SUCCESS) {
        instance = *out;
        next_qfp = (PFN_vkGetPhysicalDeviceQueueFamilyProperties)next_gipa(
            *out, "vkGetPhysicalDeviceQueueFamilyProperties");
        next_qfp2 = (PFN_vkGetPhysicalDeviceQueueFamilyProperties2)next_gipa(
            *out, "vkGetPhysicalDeviceQueueFamilyProperties2");
        if (!next_qfp2)
            next_qfp2 = (PFN_vkGetPhysicalDeviceQueueFamilyProperties2)next_gipa(
                *out, "vkGetPhysicalDeviceQueueFamilyProperties2KHR");
    }
    return r;
}

static void dev_free(struct dev *d)
{
    for (uint32_t f = 0; d->fam && f < d->n_fam; f++) {
        struct qfam *qf = &d->fam[f];
        for (uint32_t i = qf->n_real; qf->handed && i < qf->n_asked; i++)
            free((void *)qf->handed[i]);
        for (uint32_t i = 0; qf->rq && i < qf->n_real; i++)
            pthread_mutex_destroy(&qf->rq[i].mu);
        free(qf->rq);
        free(qf->handed);
    }
    free(d->fam);
    free(d);
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateDevice(VkPhysicalDevice phys,
                                                        const VkDeviceCreateInfo *ci,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkDevice *out)
{
    PFN_vkCreateDevice next = layer_next_create_device(ci);
    if (!next || !next_qfp)
        return VK_ERROR_INITIALIZATION_FAILED;
    /* the driver's families, and the copies of the queue create infos it gets */
    uint32_t n_props = 0, n_qci = ci->queueCreateInfoCount, n_prio = 0;
    next_qfp(phys, &n_props, NULL);
    VkQueueFamilyProperties *props = calloc(n_props + 1, sizeof *props);
    VkDeviceQueueCreateInfo *qci = calloc(n_qci + 1, sizeof *qci);
    for (uint32_t i = 0; i < n_qci; i++)
        n_prio += ci->pQueueCreateInfos[i].queueCount;
    float *prio = calloc(n_prio + 1, sizeof *prio);
    struct dev *d = calloc(1, sizeof *d);
    if (d)
        d->fam = calloc(n_qci + 1, sizeof *d->fam);
    VkResult r = VK_ERROR_OUT_OF_HOST_MEMORY;
    if (!props || !qci || !prio || !d || !d->fam)
        goto out;
    next_qfp(phys, &n_props, props);
    d->n_fam = n_qci;
    for (uint32_t i = 0, k = 0; i < n_qci; i++) {
        struct qfam *qf = &d->fam[i];
        qci[i] = ci->pQueueCreateInfos[i];
        qf->family = qci[i].queueFamilyIndex;
        qf->flags = qci[i].flags;
        qf->n_asked = qci[i].queueCount;
        uint32_t real = qf->family < n_props ? props[qf->family].queueCount : qf->n_asked;
        if (qf->n_asked > real && real && (props[qf->family].queueFlags & VK_QUEUE_COMPUTE_BIT)) {
            /* real queue j gets the highest priority of the queues standing for it */
            for (uint32_t j = 0; j < qf->n_asked; j++)
                if (j < real || qci[i].pQueuePriorities[j] > prio[k + j % real])
                    prio[k + j % real] = qci[i].pQueuePriorities[j];
            qci[i].queueCount = real;
            qci[i].pQueuePriorities = prio + k;
            k += real;
        }
        qf->n_real = qci[i].queueCount;
        qf->rq = calloc(qf->n_real + 1, sizeof *qf->rq);
        qf->handed = calloc(qf->n_asked + 1, sizeof *qf->handed);
        if (!qf->rq || !qf->handed) {
            d->n_fam = i + 1;
            goto out;
        }
        for (uint32_t j = 0; j < qf->n_real; j++)
            pthread_mutex_init(&qf->rq[j].mu, NULL);
    }
    VkDeviceCreateInfo ci2 = *ci;
    ci2.pQueueCreateInfos = qci;
    r = next(phys, &ci2, alloc, out);
    if (r == VK_SUCCESS) {
        d->dev = *out;
        d->destroy_device = (PFN_vkDestroyDevice)next_gdpa(*out, "vkDestroyDevice");
        d->get_queue = (PFN_vkGetDeviceQueue)next_gdpa(*out, "vkGetDeviceQueue");
        d->get_queue2 = (PFN_vkGetDeviceQueue2)next_gdpa(*out, "vkGetDeviceQueue2");
        d->create_fence = (PFN_vkCreateFence)next_gdpa(*out, "vkCreateFence");
        d->destroy_fence = (PFN_vkDestroyFence)next_gdpa(*out, "vkDestroyFence");
        d->wait_fences = (PFN_vkWaitForFences)next_gdpa(*out, "vkWaitForFences");
        d->submit = (PFN_vkQueueSubmit)next_gdpa(*out, "vkQueueSubmit");
        d->submit2 = (PFN_vkQueueSubmit2)next_gdpa(*out, "vkQueueSubmit2");
        if (!d->submit2)
            d->submit2 = (PFN_vkQueueSubmit2)next_gdpa(*out, "vkQueueSubmit2KHR");
        d->wait_idle = (PFN_vkQueueWaitIdle)next_gdpa(*out, "vkQueueWaitIdle");
        d->bind_sparse = (PFN_vkQueueBindSparse)next_gdpa(*out, "vkQueueBindSparse");
        d->present = (PFN_vkQueuePresentKHR)next_gdpa(*out, "vkQueuePresentKHR");
        d->begin_label =
            (PFN_vkQueueBeginDebugUtilsLabelEXT)next_gdpa(*out, "vkQueueBeginDebugUtilsLabelEXT");
        d->end_label =
            (PFN_vkQueueEndDebugUtilsLabelEXT)next_gdpa(*out, "vkQueueEndDebugUtilsLabelEXT");
        d->insert_label =
            (PFN_vkQueueInsertDebugUtilsLabelEXT)next_gdpa(*out, "vkQueueInsertDebugUtilsLabelEXT");
        d->checkpoints =
            (PFN_vkGetQueueCheckpointDataNV)next_gdpa(*out, "vkGetQueueCheckpointDataNV");
        d->checkpoints2 =
            (PFN_vkGetQueueCheckpointData2NV)next_gdpa(*out, "vkGetQueueCheckpointData2NV");
        d->perf_config = (PFN_vkQueueSetPerformanceConfigurationINTEL)next_gdpa(
            *out, "vkQueueSetPerformanceConfigurationINTEL");
#ifdef VK_NV_low_latency2
        d->out_of_band = (PFN_vkQueueNotifyOutOfBandNV)next_gdpa(*out, "vkQueueNotifyOutOfBandNV");
#endif
        d->set_name =
            (PFN_vkSetDebugUtilsObjectNameEXT)next_gdpa(*out, "vkSetDebugUtilsObjectNameEXT");
        d->set_tag =
            (PFN_vkSetDebugUtilsObjectTagEXT)next_gdpa(*out, "vkSetDebugUtilsObjectTagEXT");
        d->marker_name =
            (PFN_vkDebugMarkerSetObjectNameEXT)next_gdpa(*out, "vkDebugMarkerSetObjectNameEXT");
        d->marker_tag =
            (PFN_vkDebugMarkerSetObjectTagEXT)next_gdpa(*out, "vkDebugMarkerSetObjectTagEXT");
        d->set_private = (PFN_vkSetPrivateData)next_gdpa(*out, "vkSetPrivateData");
        if (!d->set_private)
            d->set_private = (PFN_vkSetPrivateData)next_gdpa(*out, "vkSetPrivateDataEXT");
        d->get_private = (PFN_vkGetPrivateData)next_gdpa(*out, "vkGetPrivateData");
        if (!d->get_private)
            d->get_private = (PFN_vkGetPrivateData)next_gdpa(*out, "vkGetPrivateDataEXT");
        pthread_mutex_lock(&mu);
        d->next = devs;
        devs = d;
        pthread_mutex_unlock(&mu);
        d = NULL;
    }
out:
    if (d)
        dev_free(d);
    free(props);
    free(qci);
    free(prio);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL fake_DestroyDevice(VkDevice dev,
                                                     const VkAllocationCallbacks *alloc)
{
    pthread_mutex_lock(&mu);
    struct dev **p = &devs;
    while (*p && (*p)->dev != dev)
        p = &(*p)->next;
    struct dev *d = *p;
    if (d)
        *p = d->next;
    pthread_mutex_unlock(&mu);
    if (!d)
        return;
    d->destroy_device(dev, alloc);
    dev_free(d);
}

/* The handle of queue info->queueIndex of the queues made with info's family and flags: the
 * real queue, or the extra one standing for real queue index % n_real (fetched with
 * vkGetDeviceQueue2 when two, else vkGetDeviceQueue). */
static void get_queue(VkDevice dev, const VkDeviceQueueInfo2 *info, int two, VkQueue *out)
{
    pthread_mutex_lock(&mu);
    struct dev *d = dev_of(dev);
    struct qfam *qf = NULL;
    for (uint32_t f = 0; d && f < d->n_fam; f++)
        if (d->fam[f].family == info->queueFamilyIndex && d->fam[f].flags == info->flags)
            qf = &d->fam[f];
    *out = VK_NULL_HANDLE;
    if (!qf || info->queueIndex >= qf->n_asked) { /* not made: as the driver says */
        if (d && two)
            d->get_queue2(dev, info, out);
        else if (d)
            d->get_queue(dev, info->queueFamilyIndex, info->queueIndex, out);
        pthread_mutex_unlock(&mu);
        return;
    }
    VkQueue *h = &qf->handed[info->queueIndex];
    uint32_t ri = info->queueIndex % qf->n_real;
    struct rqueue *rq = &qf->rq[ri];
    if (!rq->q) {
        if (two) {
            VkDeviceQueueInfo2 i2 = *info;
            i2.queueIndex = ri;
            d->get_queue2(dev, &i2, &rq->q);
        } else {
            d->get_queue(dev, info->queueFamilyIndex, ri, &rq->q);
        }
    }
    if (!*h && ri == info->queueIndex) {
        *h = rq->q;
    } else if (!*h && rq->q) {
        struct extra *e = malloc(sizeof *e);
        if (e) {
            e->loader_data = *(void **)dev; /* what the loader sets in the device's queues */
            e->real = rq->q;
            *h = (VkQueue)(void *)e;
        }
    }
    *out = *h;
    pthread_mutex_unlock(&mu);
}

static VKAPI_ATTR void VKAPI_CALL fake_GetDeviceQueue(VkDevice dev, uint32_t family, uint32_t index,
                                                      VkQueue *out)
{
    VkDeviceQueueInfo2 info = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_INFO_2,
                               .queueFamilyIndex = family,
                               .queueIndex = index};
    get_queue(dev, &info, 0, out);
}

static VKAPI_ATTR void VKAPI_CALL fake_GetDeviceQueue2(VkDevice dev, const VkDeviceQueueInfo2 *info,
                                                       VkQueue *out)
{
    get_queue(dev, info, 1, out);
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_QueueSubmit(VkQueue q, uint32_t n, const VkSubmitInfo *s,
                                                       VkFence fence)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    VkResult r = d && d->submit ? d->submit(q, n, s, fence) : VK_ERROR_UNKNOWN;
    leave(rq);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_QueueSubmit2(VkQueue q, uint32_t n,
                                                        const VkSubmitInfo2 *s, VkFence fence)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    VkResult r = d && d->submit2 ? d->submit2(q, n, s, fence) : VK_ERROR_UNKNOWN;
    leave(rq);
    return r;
}

/* An empty submission's fence signals once all work submitted before it is done: waiting on
 * it outside the queue's mutex lets the other queues standing for this one go on. */
static VKAPI_ATTR VkResult VKAPI_CALL fake_QueueWaitIdle(VkQueue q)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    if (!d) {
        leave(rq);
        return VK_ERROR_UNKNOWN;
    }
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence = VK_NULL_HANDLE;
    VkResult r = d->create_fence(d->dev, &fci, NULL, &fence);
    if (r == VK_SUCCESS)
        r = d->submit(q, 0, NULL, fence);
    else
        r = d->wait_idle(q); /* no fence: wait holding the queue */
    leave(rq);
    if (fence) {
        if (r == VK_SUCCESS)
            r = d->wait_fences(d->dev, 1, &fence, VK_TRUE, UINT64_MAX);
        d->destroy_fence(d->dev, fence, NULL);
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_QueueBindSparse(VkQueue q, uint32_t n,
                                                           const VkBindSparseInfo *b, VkFence fence)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    VkResult r = d && d->bind_sparse ? d->bind_sparse(q, n, b, fence) : VK_ERROR_UNKNOWN;
    leave(rq);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_QueuePresentKHR(VkQueue q, const VkPresentInfoKHR *info)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    VkResult r = d && d->present ? d->present(q, info) : VK_ERROR_UNKNOWN;
    leave(rq);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL fake_QueueBeginDebugUtilsLabelEXT(VkQueue q,
                                                                    const VkDebugUtilsLabelEXT *l)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    if (d && d->begin_label)
        d->begin_label(q, l);
    leave(rq);
}

static VKAPI_ATTR void VKAPI_CALL fake_QueueEndDebugUtilsLabelEXT(VkQueue q)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    if (d && d->end_label)
        d->end_label(q);
    leave(rq);
}

static VKAPI_ATTR void VKAPI_CALL fake_QueueInsertDebugUtilsLabelEXT(VkQueue q,
                                                                     const VkDebugUtilsLabelEXT *l)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    if (d && d->insert_label)
        d->insert_label(q, l);
    leave(rq);
}

static VKAPI_ATTR void VKAPI_CALL fake_GetQueueCheckpointDataNV(VkQueue q, uint32_t *n,
                                                                VkCheckpointDataNV *data)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    if (d && d->checkpoints)
        d->checkpoints(q, n, data);
    leave(rq);
}

static VKAPI_ATTR void VKAPI_CALL fake_GetQueueCheckpointData2NV(VkQueue q, uint32_t *n,
                                                                 VkCheckpointData2NV *data)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    if (d && d->checkpoints2)
        d->checkpoints2(q, n, data);
    leave(rq);
}

static VKAPI_ATTR VkResult VKAPI_CALL
fake_QueueSetPerformanceConfigurationINTEL(VkQueue q, VkPerformanceConfigurationINTEL c)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    VkResult r = d && d->perf_config ? d->perf_config(q, c) : VK_ERROR_UNKNOWN;
    leave(rq);
    return r;
}

#ifdef VK_NV_low_latency2
static VKAPI_ATTR void VKAPI_CALL fake_QueueNotifyOutOfBandNV(VkQueue q,
                                                              const VkOutOfBandQueueTypeInfoNV *i)
{
    struct rqueue *rq;
    struct dev *d = enter(&q, &rq);
    if (d && d->out_of_band)
        d->out_of_band(q, i);
    leave(rq);
}
#endif

/* The commands about an object, given an extra queue, are about its real queue (the driver
 * would take the extra handle for its own object). */
static VKAPI_ATTR VkResult VKAPI_CALL
fake_SetDebugUtilsObjectNameEXT(VkDevice dev, const VkDebugUtilsObjectNameInfoEXT *info)
{
    VkDebugUtilsObjectNameInfoEXT i = *info;
    struct rqueue *rq = enter_object(i.objectType == VK_OBJECT_TYPE_QUEUE, &i.objectHandle);
    struct dev *d = dev_find(dev);
    VkResult r = d && d->set_name ? d->set_name(dev, &i) : VK_ERROR_UNKNOWN;
    leave(rq);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL
fake_SetDebugUtilsObjectTagEXT(VkDevice dev, const VkDebugUtilsObjectTagInfoEXT *info)
{
    VkDebugUtilsObjectTagInfoEXT i = *info;
    struct rqueue *rq = enter_object(i.objectType == VK_OBJECT_TYPE_QUEUE, &i.objectHandle);
    struct dev *d = dev_find(dev);
    VkResult r = d && d->set_tag ? d->set_tag(dev, &i) : VK_ERROR_UNKNOWN;
    leave(rq);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL
fake_DebugMarkerSetObjectNameEXT(VkDevice dev, const VkDebugMarkerObjectNameInfoEXT *info)
{
    VkDebugMarkerObjectNameInfoEXT i = *info;
    struct rqueue *rq =
        enter_object(i.objectType == VK_DEBUG_REPORT_OBJECT_TYPE_QUEUE_EXT, &i.object);
    struct dev *d = dev_find(dev);
    VkResult r = d && d->marker_name ? d->marker_name(dev, &i) : VK_ERROR_UNKNOWN;
    leave(rq);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL
fake_DebugMarkerSetObjectTagEXT(VkDevice dev, const VkDebugMarkerObjectTagInfoEXT *info)
{
    VkDebugMarkerObjectTagInfoEXT i = *info;
    struct rqueue *rq =
        enter_object(i.objectType == VK_DEBUG_REPORT_OBJECT_TYPE_QUEUE_EXT, &i.object);
    struct dev *d = dev_find(dev);
    VkResult r = d && d->marker_tag ? d->marker_tag(dev, &i) : VK_ERROR_UNKNOWN;
    leave(rq);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_SetPrivateData(VkDevice dev, VkObjectType type,
                                                          uint64_t h, VkPrivateDataSlot slot,
                                                          uint64_t data)
{
    struct rqueue *rq = enter_object(type == VK_OBJECT_TYPE_QUEUE, &h);
    struct dev *d = dev_find(dev);
    VkResult r = d && d->set_private ? d->set_private(dev, type, h, slot, data) : VK_ERROR_UNKNOWN;
    leave(rq);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPrivateData(VkDevice dev, VkObjectType type, uint64_t h,
                                                      VkPrivateDataSlot slot, uint64_t *data)
{
    struct rqueue *rq = enter_object(type == VK_OBJECT_TYPE_QUEUE, &h);
    struct dev *d = dev_find(dev);
    if (d && d->get_private)
        d->get_private(dev, type, h, slot, data);
    leave(rq);
}

/* The layer's function for name, NULL if none; *wraps: whether it wraps a device command of
 * that name (absent where the next layer or the driver lacks it). */
static PFN_vkVoidFunction own(const char *name, int *wraps)
{
    static const struct {
        const char *name;
        PFN_vkVoidFunction fn;
        int wraps;
    } t[] = {
        {"vkCreateInstance", (PFN_vkVoidFunction)fake_CreateInstance, 0},
        {"vkCreateDevice", (PFN_vkVoidFunction)fake_CreateDevice, 0},
        {"vkGetPhysicalDeviceQueueFamilyProperties",
         (PFN_vkVoidFunction)fake_GetPhysicalDeviceQueueFamilyProperties, 0},
        {"vkGetPhysicalDeviceQueueFamilyProperties2",
         (PFN_vkVoidFunction)fake_GetPhysicalDeviceQueueFamilyProperties2, 0},
        {"vkGetPhysicalDeviceQueueFamilyProperties2KHR",
         (PFN_vkVoidFunction)fake_GetPhysicalDeviceQueueFamilyProperties2, 0},
        {"vkDestroyDevice", (PFN_vkVoidFunction)fake_DestroyDevice, 0},
        {"vkGetDeviceQueue", (PFN_vkVoidFunction)fake_GetDeviceQueue, 0},
        {"vkGetDeviceQueue2", (PFN_vkVoidFunction)fake_GetDeviceQueue2, 1},
        {"vkQueueSubmit", (PFN_vkVoidFunction)fake_QueueSubmit, 1},
        {"vkQueueSubmit2", (PFN_vkVoidFunction)fake_QueueSubmit2, 1},
        {"vkQueueSubmit2KHR", (PFN_vkVoidFunction)fake_QueueSubmit2, 1},
        {"vkQueueWaitIdle", (PFN_vkVoidFunction)fake_QueueWaitIdle, 1},
        {"vkQueueBindSparse", (PFN_vkVoidFunction)fake_QueueBindSparse, 1},
        {"vkQueuePresentKHR", (PFN_vkVoidFunction)fake_QueuePresentKHR, 1},
        {"vkQueueBeginDebugUtilsLabelEXT", (PFN_vkVoidFunction)fake_QueueBeginDebugUtilsLabelEXT,
         1},
        {"vkQueueEndDebugUtilsLabelEXT", (PFN_vkVoidFunction)fake_QueueEndDebugUtilsLabelEXT, 1},
        {"vkQueueInsertDebugUtilsLabelEXT", (PFN_vkVoidFunction)fake_QueueInsertDebugUtilsLabelEXT,
         1},
        {"vkGetQueueCheckpointDataNV", (PFN_vkVoidFunction)fake_GetQueueCheckpointDataNV, 1},
        {"vkGetQueueCheckpointData2NV", (PFN_vkVoidFunction)fake_GetQueueCheckpointData2NV, 1},
        {"vkQueueSetPerformanceConfigurationINTEL",
         (PFN_vkVoidFunction)fake_QueueSetPerformanceConfigurationINTEL, 1},
#ifdef VK_NV_low_latency2
        {"vkQueueNotifyOutOfBandNV", (PFN_vkVoidFunction)fake_QueueNotifyOutOfBandNV, 1},
#endif
        {"vkSetDebugUtilsObjectNameEXT", (PFN_vkVoidFunction)fake_SetDebugUtilsObjectNameEXT, 1},
        {"vkSetDebugUtilsObjectTagEXT", (PFN_vkVoidFunction)fake_SetDebugUtilsObjectTagEXT, 1},
        {"vkDebugMarkerSetObjectNameEXT", (PFN_vkVoidFunction)fake_DebugMarkerSetObjectNameEXT, 1},
        {"vkDebugMarkerSetObjectTagEXT", (PFN_vkVoidFunction)fake_DebugMarkerSetObjectTagEXT, 1},
        {"vkSetPrivateData", (PFN_vkVoidFunction)fake_SetPrivateData, 1},
        {"vkSetPrivateDataEXT", (PFN_vkVoidFunction)fake_SetPrivateData, 1},
        {"vkGetPrivateData", (PFN_vkVoidFunction)fake_GetPrivateData, 1},
        {"vkGetPrivateDataEXT", (PFN_vkVoidFunction)fake_GetPrivateData, 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(name, t[i].name)) {
            *wraps = t[i].wraps;
            return t[i].fn;
        }
    *wraps = 0;
    return NULL;
}
