/*
 * replay/replay_vk.c — the Vulkan backend of the replay engine (replay_int.h): re-executes a
 * captured compute stream (format/sbt_vk.h says what the capture records) through the loader
 * on any ICD — lavapipe in CI, a GPU elsewhere.
 *
 * Ops, not command buffers. Every device op the capture expanded (dispatch, copy, fill,
 * update) carries a self-contained payload: pipeline, resolved bindings, push constants. The
 * backend records those ops itself, one replay command buffer per queue at a time ("batch"),
 * instead of re-submitting the application's recordings. That makes a range replay and a full
 * replay the same code (the slice is just a subset of ops), lets verification copy an op's
 * outputs right behind it, and puts timestamps around each op.
 *
 * Ordering. The engine delivers ops in the scheduler's topological order with their edges.
 * Each trace queue maps to a replay VkQueue with one timeline semaphore; a batch signals the
 * next value of its queue's timeline when submitted and waits for the previous batch of the
 * same queue. An edge from an op in another queue's batch becomes a wait on that timeline
 * value (submitting that batch first if still open); an edge from an op earlier in the same
 * open batch, or an access overlapping one since the last barrier with a write on either side
 * (hazard edges within a stream are implied, so the scheduler does not deliver them), becomes
 * a full memory barrier. Host ops (host writes and reads, host waits, frees) first wait on the
 * host for the batches their predecessors are in. So the captured semaphores, fences and
 * events are honoured through the graph's edges, and independent queues run concurrently.
 *
 * Memory. Captured allocations map to replay memory types by property flags (host-visible
 * kept, device-local and cached preferred), so a trace from another memory-type layout still
 * replays. New allocations are zero-filled (the capture's page shadow starts as zeros). Each
 * allocation gets a "whole" buffer over it for zero-fill and read-back. Host-visible memory
 * stays mapped.
 *
 * Descriptor sets are built per dispatch from the dispatch's resolved bindings, from pools
 * owned by the batch and reset when it completes, so a dispatch replays on its own.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "format/sbt_vk.h"
#include "replay/replay_int.h"

#define MAX_QUEUES    16
#define QUERIES       1024 /* timestamps per batch (2 per timed op) */
#define STAGING_CHUNK (4u << 20)
#define MAX_SETS      8
#define FF_CHUNK      1024 /* untimed ops per submission: overlaps recording and execution */

/* ========================================================================================== */
/* A small id -> pointer map (capture ids are dense-ish 64-bit numbers)                      */
/* ========================================================================================== */

struct idmap {
    uint64_t *k;
    void **v;
    uint32_t cap, n;
};

static void *idmap_get(const struct idmap *m, uint64_t k)
{
    if (!m->cap || !k)
        return NULL;
    for (uint32_t i = (uint32_t)(k * 0x9e3779b97f4a7c15ull >> 32) & (m->cap - 1);;
         i = (i + 1) & (m->cap - 1)) {
        if (m->k[i] == k)
            return m->v[i];
        if (!m->k[i])
            return NULL;
    }
}

static int idmap_put(struct idmap *m, uint64_t k, void *v)
{
    if ((m->n + 1) * 2 > m->cap) {
        uint32_t nc = m->cap ? m->cap * 2 : 64;
        struct idmap g = {calloc(nc, sizeof *g.k), calloc(nc, sizeof *g.v), nc, 0};
        if (!g.k || !g.v) {
            free(g.k);
            free(g.v);
            return SBT_ENOMEM;
        }
        for (uint32_t i = 0; i < m->cap; i++)
            if (m->k[i])
                idmap_put(&g, m->k[i], m->v[i]);
        free(m->k);
        free(m->v);
        *m = g;
    }
    uint32_t i = (uint32_t)(k * 0x9e3779b97f4a7c15ull >> 32) & (m->cap - 1);
    while (m->k[i] && m->k[i] != k)
        i = (i + 1) & (m->cap - 1);
    if (!m->k[i])
        m->n++;
    m->k[i] = k;
    m->v[i] = v;
    return 0;
}

static void idmap_del(struct idmap *m, uint64_t k)
{
    /* tombstone-free delete: keep the key, clear the value (ids are never reused) */
    if (!m->cap || !k)
        return;
    for (uint32_t i = (uint32_t)(k * 0x9e3779b97f4a7c15ull >> 32) & (m->cap - 1);;
         i = (i + 1) & (m->cap - 1)) {
        if (m->k[i] == k) {
            m->v[i] = NULL;
            return;
        }
        if (!m->k[i])
            return;
    }
}

static void idmap_free(struct idmap *m)
{
    free(m->k);
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* ========================================================================================== */
/* State                                                                                      */
/* ========================================================================================== */

struct mem {
    VkDeviceMemory mem;
    VkBuffer whole; /* over the whole allocation: zero-fill, read-back */
    uint64_t size;
    uint32_t type;
    int host_visible, coherent;
    uint8_t *map;
};

struct buf {
    VkBuffer buf;
    uint64_t size;
    struct mem *mem; /* bound memory */
    uint64_t mem_off;
    uint64_t id;
};

struct bview {
    VkBufferView view;
    uint64_t buf, offset, range;
};

struct setlayout {
    VkDescriptorSetLayout dsl;
    uint32_t n_b;
    uint32_t *binding, *type, *count;
};

struct playout {
    VkPipelineLayout pl;
    uint32_t n_sets;
    uint64_t sets[MAX_SETS];
    uint32_t n_push;
    uint32_t push_stage[8], push_off[8], push_size[8];
};

struct pipe {
    VkPipeline pipe;
    uint64_t layout;
    char *error; /* why it could not be created */
};

/* Staging memory for read-backs (host-visible, mapped). */
struct staging {
    VkBuffer buf;
    VkDeviceMemory mem;
    uint8_t *map;
    uint64_t size, used;
    int coherent;
    struct staging *next;
};

/* A read-back request: access i of an op lands at staging offset. */
struct rb {
    uint32_t acc;
    struct staging *st;
    uint64_t off, len;
};

struct bop { /* an op in a batch, reported when the batch completes */
    uint64_t slot;
    int32_t q0;         /* first timestamp query, -1 = none */
    uint32_t n_access;  /* for read-backs */
    uint32_t rb0, n_rb; /* into batch.rbs */
};

struct batch {
    VkCommandBuffer cb;
    VkQueryPool qp;
    uint32_t n_queries;
    uint64_t value; /* timeline value it signals */
    struct bop *ops;
    uint32_t n_ops, cap_ops;
    struct rb *rbs;
    uint32_t n_rb, cap_rb;
    struct staging *staging; /* chunks it owns */
    VkDescriptorPool *pools;
    uint32_t n_pools, cap_pools;
    VkSemaphore *wait_sem;
    uint64_t *wait_val;
    uint32_t n_wait, cap_wait;
    /* accesses since the last barrier (hazard check) */
    struct sbt_access *acc;
    uint32_t n_acc, cap_acc;
    int recording, has_cmds;
    int had_base;          /* a dispatch with a nonzero base was recorded (see rec_dispatch) */
    VkPipeline bound_pipe; /* last compute pipeline bound in cb (VK_NULL_HANDLE = none) */
    struct batch *next;    /* in flight list / free list */
};

struct rq { /* a replay queue for one trace stream */
    VkQueue q;
    uint32_t family;
    int ts; /* timestamps supported */
    VkCommandPool pool;
    VkSemaphore timeline;
    uint64_t value;      /* last value submitted */
    uint64_t done_value; /* last value retired */
    struct batch *open;  /* being recorded, or NULL */
    struct batch *flight, **flight_tail;
};

struct vkbe {
    sbt_reader *r;
    struct replay_bk_cb cb;
    uint32_t verify;
    VkInstance inst;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memp;
    uint32_t n_fam;
    VkQueueFamilyProperties fam[32];
    uint32_t whole_type_bits; /* memory types a generic buffer accepts */
    double ts_period;         /* ns per tick */
    int64_t ts_offset;        /* host ns = ticks * period + offset */
    uint64_t ts_mask;
    /* streams: trace stream id -> replay queue index; queues */
    uint32_t n_streams;
    int32_t *stream_q; /* [n_streams + 1], -1 = host */
    struct rq q[MAX_QUEUES];
    uint32_t n_q;
    uint32_t families[MAX_QUEUES], n_families; /* distinct families in use */
    /* where each executed op went: slot -> queue + 1 (0 = host, complete), timeline value */
    uint8_t *slot_q;
    uint64_t *slot_val;
    uint64_t n_slots;
    /* objects by capture id */
    struct idmap mems, bufs, views, setlayouts, playouts, pipes, modules;
    struct buf **dead_bufs; /* destroyed by the trace; freed at drain */
    uint32_t n_dead, cap_dead;
    struct staging *free_staging;
    struct batch *free_batches;
    VkDescriptorPool *free_pools;
    uint32_t n_free_pools, cap_free_pools;
    /* one-shot submissions (zero-fill) */
    VkCommandPool os_pool;
    VkFence os_fence;
};

/* Every Vulkan failure while executing is the device's (lost, out of memory): the run stops. */
#define VKFAIL(r, what) replay__fail(REPLAY_EDEVICE, "%s failed: VkResult %d", what, (int)(r))

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, (size_t)c * elem);
    if (!n)
        return replay__fail(SBT_ENOMEM, "out of memory");
    *p = n;
    *cap = c;
    return 0;
}

/* ========================================================================================== */
/* Instance and devices                                                                       */
/* ========================================================================================== */

static int make_instance(VkInstance *out)
{
    uint32_t ver = VK_API_VERSION_1_0;
    PFN_vkEnumerateInstanceVersion ev =
        (PFN_vkEnumerateInstanceVersion)vkGetInstanceProcAddr(NULL, "vkEnumerateInstanceVersion");
    if (ev)
        ev(&ver);
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "reprise replay",
                             .pEngineName = "reprise",
                             .apiVersion = ver >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : ver};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &app};
    VkResult r = vkCreateInstance(&ci, NULL, out);
    if (r != VK_SUCCESS)
        return replay__fail(REPLAY_ENODEV,
                            "no Vulkan instance (VkResult %d): is a Vulkan driver (ICD) "
                            "installed? lavapipe is in Debian's mesa-vulkan-drivers",
                            (int)r);
    return 0;
}

static const char *dev_type(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return "cpu";
    default:
        return "other";
    }
}

static void fill_info(VkPhysicalDevice p, uint32_t index, struct replay_device_info *d)
{
    VkPhysicalDeviceProperties pr;
    vkGetPhysicalDeviceProperties(p, &pr);
    memset(d, 0, sizeof *d);
    d->api = SBT_API_VULKAN;
    d->index = index;
    snprintf(d->name, sizeof d->name, "%s", pr.deviceName);
    VkPhysicalDeviceDriverProperties dp = {.sType =
                                               VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &dp};
    if (pr.apiVersion >= VK_API_VERSION_1_2) {
        vkGetPhysicalDeviceProperties2(p, &p2);
        snprintf(d->driver, sizeof d->driver, "%.60s %.60s", dp.driverName, dp.driverInfo);
    } else {
        snprintf(d->driver, sizeof d->driver, "driver 0x%x", pr.driverVersion);
    }
    d->vendor_id = pr.vendorID;
    d->device_id = pr.deviceID;
    d->api_version = pr.apiVersion;
    snprintf(d->type, sizeof d->type, "%s", dev_type(pr.deviceType));
}

static int vk_devices(struct replay_device_info *out, uint32_t max)
{
    VkInstance inst;
    int st = make_instance(&inst);
    if (st < 0)
        return st;
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(inst, &n, NULL);
    VkPhysicalDevice *p = calloc(n ? n : 1, sizeof *p);
    if (!p) {
        vkDestroyInstance(inst, NULL);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    vkEnumeratePhysicalDevices(inst, &n, p);
    for (uint32_t i = 0; i < n && i < max; i++)
        fill_info(p[i], i, &out[i]);
    free(p);
    vkDestroyInstance(inst, NULL);
    if (!n)
        return replay__fail(REPLAY_ENODEV, "the Vulkan loader sees no device");
    return (int)n;
}

/* ========================================================================================== */
/* open: device, queues, features                                                             */
/* ========================================================================================== */

struct devreq {
    uint32_t fam_flags[32]; /* captured families' flags */
    uint32_t n_fam;
    uint32_t created[32]; /* queues the app created per captured family */
    char **ext;
    uint32_t n_ext;
    /* features: sType + values */
    struct feat {
        uint64_t stype;
        uint32_t n;
        uint32_t *v;
    } feat[8];
    uint32_t n_feat;
};

static void devreq_free(struct devreq *q)
{
    for (uint32_t i = 0; i < q->n_ext; i++)
        free(q->ext[i]);
    free(q->ext);
    for (uint32_t i = 0; i < q->n_feat; i++)
        free(q->feat[i].v);
}

static int parse_device_ext(const struct sbt_device *d, struct devreq *q)
{
    if (d->ext.kind != SBT_VK_EXT_DEVICE)
        return 0;
    struct sbt_vk_dec dec;
    struct sbt_vk_rec r;
    sbt_vk_dec_init(&dec, d->ext.data, d->ext.len);
    int st;
    while ((st = sbt_vk_dec_next(&dec, &r)) == 1) {
        uint64_t a0 = sbt_vk_arg(&r, 0);
        if (r.call == SBT_VK_QUEUE_FAMILY && a0 < 32) {
            q->fam_flags[a0] = (uint32_t)sbt_vk_arg(&r, 1);
            if (a0 + 1 > q->n_fam)
                q->n_fam = (uint32_t)a0 + 1;
        } else if (r.call == SBT_VK_QUEUE_CREATE && a0 < 32) {
            q->created[a0] += (uint32_t)sbt_vk_arg(&r, 1);
        } else if (r.call == SBT_VK_EXTENSION) {
            char **v = realloc(q->ext, (q->n_ext + 1) * sizeof *v);
            char *s = malloc(r.n_bytes + 1);
            if (!v || !s) {
                free(s);
                if (v)
                    q->ext = v;
                st = replay__fail(SBT_ENOMEM, "out of memory");
                break;
            }
            memcpy(s, r.bytes, r.n_bytes);
            s[r.n_bytes] = 0;
            q->ext = v;
            q->ext[q->n_ext++] = s;
        } else if (r.call == SBT_VK_FEATURES && q->n_feat < 8) {
            uint32_t n = (uint32_t)sbt_vk_arg(&r, 1);
            if (n > 256)
                n = 256;
            struct feat *f = &q->feat[q->n_feat];
            f->v = calloc(n ? n : 1, sizeof *f->v);
            if (!f->v) {
                st = replay__fail(SBT_ENOMEM, "out of memory");
                break;
            }
            f->stype = a0;
            f->n = n;
            for (uint32_t i = 0; i < n; i++)
                f->v[i] = (uint32_t)sbt_vk_arg(&r, 2 + i);
            q->n_feat++;
        }
    }
    sbt_vk_dec_free(&dec);
    if (st < 0)
        return st == SBT_ENOMEM ? st : replay__fail(st, "device row: %s", sbt_errmsg());
    return 0;
}

/* Generic features structs: sType, pNext, then VkBool32 fields (every core/KHR features
 * struct the capture records has that layout). */
struct gfeat {
    VkStructureType sType;
    void *pNext;
    VkBool32 v[];
};

static const char *missing_feature(VkPhysicalDevice p, const struct devreq *q, void **chain,
                                   VkPhysicalDeviceFeatures *core, char *buf, size_t len)
{
    VkPhysicalDeviceFeatures have;
    vkGetPhysicalDeviceFeatures(p, &have);
    memset(core, 0, sizeof *core);
    *chain = NULL;
    for (uint32_t i = 0; i < q->n_feat; i++) {
        const struct feat *f = &q->feat[i];
        if (f->stype == 0) {
            VkBool32 *hv = (VkBool32 *)&have, *want = (VkBool32 *)core;
            uint32_t n = (uint32_t)(sizeof have / sizeof(VkBool32));
            for (uint32_t k = 0; k < f->n && k < n; k++)
                if (f->v[k]) {
                    if (!hv[k]) {
                        snprintf(buf, len, "VkPhysicalDeviceFeatures field %u", k);
                        return buf;
                    }
                    want[k] = VK_TRUE;
                }
            continue;
        }
        size_t sz = sizeof(struct gfeat) + f->n * sizeof(VkBool32);
        struct gfeat *h = calloc(1, sz), *w = calloc(1, sz);
        if (!h || !w) {
            free(h);
            free(w);
            snprintf(buf, len, "(out of memory)");
            return buf;
        }
        h->sType = w->sType = (VkStructureType)f->stype;
        VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                        .pNext = h};
        vkGetPhysicalDeviceFeatures2(p, &f2);
        for (uint32_t k = 0; k < f->n; k++)
            if (f->v[k]) {
                if (!h->v[k]) {
                    snprintf(buf, len, "feature %u of structure type %" PRIu64, k, f->stype);
                    free(h);
                    free(w);
                    return buf;
                }
                w->v[k] = VK_TRUE;
            }
        free(h);
        w->pNext = *chain;
        *chain = w;
    }
    return NULL;
}

static void free_chain(void *chain)
{
    while (chain) {
        struct gfeat *g = chain;
        chain = g->pNext;
        free(g);
    }
}

static int has_feature_in_chain(void *chain, VkStructureType t, uint32_t field)
{
    for (struct gfeat *g = chain; g; g = g->pNext)
        if (g->sType == t)
            return g->v[field] != 0;
    return 0;
}

static int timestamp_calibrate(struct vkbe *b, struct rq *q);

static int vk_open(sbt_reader *r, const struct replay_bk_opts *o, const struct replay_bk_cb *cb,
                   struct replay_device_info *info, void **out)
{
    *out = NULL;
    struct vkbe *b = calloc(1, sizeof *b);
    if (!b)
        return replay__fail(SBT_ENOMEM, "out of memory");
    b->r = r;
    b->cb = *cb;
    b->verify = o->verify;
    struct devreq req = {0};
    void *chain = NULL;
    int st = make_instance(&b->inst);
    if (st < 0)
        goto fail;
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(b->inst, &n, NULL);
    if (!n) {
        st = replay__fail(REPLAY_ENODEV, "the Vulkan loader sees no device");
        goto fail;
    }
    if (o->device >= n) {
        st = replay__fail(REPLAY_ENODEV, "--device %u: there are %u Vulkan devices (0..%u)",
                          o->device, n, n - 1);
        goto fail;
    }
    VkPhysicalDevice pd[64];
    if (n > 64)
        n = 64;
    vkEnumeratePhysicalDevices(b->inst, &n, pd);
    b->phys = pd[o->device];
    fill_info(b->phys, o->device, info);
    vkGetPhysicalDeviceProperties(b->phys, &b->props);
    vkGetPhysicalDeviceMemoryProperties(b->phys, &b->memp);
    b->n_fam = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(b->phys, &b->n_fam, b->fam);
    if (b->props.apiVersion < VK_API_VERSION_1_2) {
        st = replay__fail(REPLAY_ENODEV,
                          "%s supports Vulkan %u.%u; replay needs 1.2 (timeline "
                          "semaphores)",
                          b->props.deviceName, VK_API_VERSION_MAJOR(b->props.apiVersion),
                          VK_API_VERSION_MINOR(b->props.apiVersion));
        goto fail;
    }

    uint32_t nd = 0;
    const struct sbt_device *devs = sbt_reader_devices(r, &nd);
    if (nd > 1) {
        st = replay__fail(REPLAY_EUNSUPPORTED,
                          "the trace uses %u Vulkan devices; replay supports one", nd);
        goto fail;
    }
    if (nd && (st = parse_device_ext(&devs[0], &req)) < 0)
        goto fail;

    /* extensions the app enabled must exist here */
    uint32_t ne = 0;
    vkEnumerateDeviceExtensionProperties(b->phys, NULL, &ne, NULL);
    VkExtensionProperties *ep = calloc(ne ? ne : 1, sizeof *ep);
    if (!ep) {
        st = replay__fail(SBT_ENOMEM, "out of memory");
        goto fail;
    }
    vkEnumerateDeviceExtensionProperties(b->phys, NULL, &ne, ep);
    for (uint32_t i = 0; i < req.n_ext; i++) {
        int found = 0;
        for (uint32_t k = 0; k < ne && !found; k++)
            found = !strcmp(ep[k].extensionName, req.ext[i]);
        if (!found) {
            st = replay__fail(REPLAY_ENODEV, "%s lacks device extension %s that the trace uses",
                              b->props.deviceName, req.ext[i]);
            free(ep);
            goto fail;
        }
    }
    free(ep);
    VkPhysicalDeviceFeatures core;
    char fbuf[128];
    const char *miss = missing_feature(b->phys, &req, &chain, &core, fbuf, sizeof fbuf);
    if (miss) {
        st = replay__fail(REPLAY_ENODEV, "%s lacks %s that the trace's device enabled",
                          b->props.deviceName, miss);
        goto fail;
    }

    /* queues: each trace queue stream onto a family with at least its family's flags */
    uint32_t ns = 0;
    const struct sbt_stream *sv = sbt_reader_streams(r, &ns);
    b->n_streams = ns;
    b->stream_q = calloc(ns + 1, sizeof *b->stream_q);
    if (!b->stream_q) {
        st = replay__fail(SBT_ENOMEM, "out of memory");
        goto fail;
    }
    uint32_t per_fam[32] = {0}; /* replay queues used per replay family */
    uint32_t qmap_fam[MAX_QUEUES], qmap_idx[MAX_QUEUES];
    for (uint32_t i = 0; i < ns; i++) {
        b->stream_q[i + 1] = -1;
        if (sv[i].kind != SBT_STREAM_QUEUE)
            continue;
        uint32_t want = sv[i].family < 32 ? req.fam_flags[sv[i].family] : 0;
        want &= VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT | VK_QUEUE_GRAPHICS_BIT;
        if (!want)
            want = VK_QUEUE_COMPUTE_BIT;
        /* transfer is implied by compute/graphics */
        if (want & (VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT))
            want &= ~(uint32_t)VK_QUEUE_TRANSFER_BIT;
        /* same captured (family, index) already mapped? */
        int32_t found = -1;
        for (uint32_t k = 0; k < i; k++)
            if (b->stream_q[k + 1] >= 0 && sv[k].family == sv[i].family &&
                sv[k].index == sv[i].index)
                found = b->stream_q[k + 1];
        if (found >= 0) {
            b->stream_q[i + 1] = found;
            continue;
        }
        int32_t fam = -1;
        for (uint32_t f = 0; f < b->n_fam && fam < 0; f++) {
            uint32_t have = b->fam[f].queueFlags;
            if (have & (VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT))
                have |= VK_QUEUE_TRANSFER_BIT;
            if ((have & want) == want && per_fam[f] < b->fam[f].queueCount)
                fam = (int32_t)f;
        }
        /* no free queue of a matching family: share one already created */
        if (fam < 0)
            for (uint32_t k = 0; k < b->n_q && fam < 0; k++) {
                uint32_t have = b->fam[qmap_fam[k]].queueFlags | VK_QUEUE_TRANSFER_BIT;
                if ((have & want) == want) {
                    b->stream_q[i + 1] = (int32_t)k;
                    fam = -2;
                }
            }
        if (fam == -2)
            continue;
        if (fam < 0) {
            st = replay__fail(REPLAY_ENODEV,
                              "%s has no queue family with the capabilities of captured queue "
                              "family %u (flags 0x%x)",
                              b->props.deviceName, sv[i].family, want);
            goto fail;
        }
        if (b->n_q == MAX_QUEUES) {
            st = replay__fail(REPLAY_EUNSUPPORTED, "more than %u queues", MAX_QUEUES);
            goto fail;
        }
        qmap_fam[b->n_q] = (uint32_t)fam;
        qmap_idx[b->n_q] = per_fam[fam]++;
        b->stream_q[i + 1] = (int32_t)b->n_q++;
    }
    if (!b->n_q) { /* a trace without queues still needs one for zero-fills */
        for (uint32_t f = 0; f < b->n_fam; f++)
            if (b->fam[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                qmap_fam[0] = f;
                qmap_idx[0] = per_fam[f]++;
                b->n_q = 1;
                break;
            }
        if (!b->n_q) {
            st = replay__fail(REPLAY_ENODEV, "%s has no compute queue", b->props.deviceName);
            goto fail;
        }
    }
    VkDeviceQueueCreateInfo qci[32];
    float prio[64];
    for (uint32_t i = 0; i < 64; i++)
        prio[i] = 1.0f;
    uint32_t nqci = 0;
    for (uint32_t f = 0; f < b->n_fam; f++)
        if (per_fam[f]) {
            qci[nqci++] =
                (VkDeviceQueueCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                          .queueFamilyIndex = f,
                                          .queueCount = per_fam[f],
                                          .pQueuePriorities = prio};
            b->families[b->n_families++] = f;
        }

    /* what replay itself needs: timeline semaphores (1.2 core), on top of the app's */
    VkPhysicalDeviceTimelineSemaphoreFeatures tl = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &tl};
    vkGetPhysicalDeviceFeatures2(b->phys, &f2);
    if (!tl.timelineSemaphore) {
        st = replay__fail(REPLAY_ENODEV, "%s lacks timeline semaphores", b->props.deviceName);
        goto fail;
    }
    int tl_in_chain = 0;
    for (struct gfeat *g = chain; g; g = g->pNext)
        if (g->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
            g->v[offsetof(VkPhysicalDeviceVulkan12Features, timelineSemaphore) / 4 - 4] = VK_TRUE;
            tl_in_chain = 1;
        } else if (g->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES) {
            g->v[0] = VK_TRUE;
            tl_in_chain = 1;
        }
    (void)has_feature_in_chain;
    VkPhysicalDeviceTimelineSemaphoreFeatures tl_on = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
        .pNext = chain,
        .timelineSemaphore = VK_TRUE};
    const char **exts = calloc(req.n_ext + 1, sizeof *exts);
    if (!exts) {
        st = replay__fail(SBT_ENOMEM, "out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < req.n_ext; i++)
        exts[i] = req.ext[i];
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = tl_in_chain ? chain : (void *)&tl_on,
                              .queueCreateInfoCount = nqci,
                              .pQueueCreateInfos = qci,
                              .enabledExtensionCount = req.n_ext,
                              .ppEnabledExtensionNames = exts,
                              .pEnabledFeatures = &core};
    VkResult vr = vkCreateDevice(b->phys, &dci, NULL, &b->dev);
    free(exts);
    if (vr != VK_SUCCESS) {
        st = replay__fail(REPLAY_ENODEV, "vkCreateDevice on %s failed (VkResult %d)",
                          b->props.deviceName, (int)vr);
        goto fail;
    }
    for (uint32_t i = 0; i < b->n_q; i++) {
        struct rq *q = &b->q[i];
        q->family = qmap_fam[i];
        vkGetDeviceQueue(b->dev, qmap_fam[i], qmap_idx[i], &q->q);
        q->ts = b->fam[q->family].timestampValidBits > 0 && o->timing != REPLAY_TIMING_NONE;
        VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                       .queueFamilyIndex = q->family};
        VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                         .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
        VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                     .pNext = &tci};
        if ((vr = vkCreateCommandPool(b->dev, &pci, NULL, &q->pool)) != VK_SUCCESS ||
            (vr = vkCreateSemaphore(b->dev, &sci, NULL, &q->timeline)) != VK_SUCCESS) {
            st = VKFAIL(vr, "creating a command pool / timeline semaphore");
            goto fail;
        }
        q->flight_tail = &q->flight;
    }
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = b->q[0].family};
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((vr = vkCreateCommandPool(b->dev, &pci, NULL, &b->os_pool)) != VK_SUCCESS ||
        (vr = vkCreateFence(b->dev, &fci, NULL, &b->os_fence)) != VK_SUCCESS) {
        st = VKFAIL(vr, "creating the one-shot pool");
        goto fail;
    }
    /* which memory types a buffer of any usage accepts */
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = 65536,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                       VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    VkBuffer tb;
    if (vkCreateBuffer(b->dev, &bci, NULL, &tb) == VK_SUCCESS) {
        VkMemoryRequirements mr;
        vkGetBufferMemoryRequirements(b->dev, tb, &mr);
        b->whole_type_bits = mr.memoryTypeBits;
        vkDestroyBuffer(b->dev, tb, NULL);
    }
    b->ts_period = b->props.limits.timestampPeriod;
    uint32_t bits = b->fam[b->q[0].family].timestampValidBits;
    b->ts_mask = bits >= 64 ? UINT64_MAX : bits ? (1ull << bits) - 1 : 0;
    if (b->q[0].ts)
        timestamp_calibrate(b, &b->q[0]);
    uint64_t n_ops = sbt_reader_info(r)->seq_end + 1;
    b->n_slots = n_ops + 1;
    b->slot_q = calloc(b->n_slots, 1);
    b->slot_val = calloc(b->n_slots, sizeof *b->slot_val);
    if (!b->slot_q || !b->slot_val) {
        st = replay__fail(SBT_ENOMEM, "out of memory for %" PRIu64 " op slots", n_ops);
        goto fail;
    }
    free_chain(chain);
    devreq_free(&req);
    *out = b;
    return 0;
fail:
    free_chain(chain);
    devreq_free(&req);
    replay__vk_backend.close(b);
    return st;
}

/* ========================================================================================== */
/* One-shot submissions, staging, batches                                                     */
/* ========================================================================================== */

static int oneshot_begin(struct vkbe *b, VkCommandBuffer *cb)
{
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = b->os_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkResult vr = vkAllocateCommandBuffers(b->dev, &ai, cb);
    if (vr != VK_SUCCESS)
        return VKFAIL(vr, "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkBeginCommandBuffer(*cb, &bi);
    return 0;
}

static int oneshot_end(struct vkbe *b, VkCommandBuffer cb)
{
    vkEndCommandBuffer(cb);
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    VkResult vr = vkQueueSubmit(b->q[0].q, 1, &si, b->os_fence);
    if (vr == VK_SUCCESS)
        vr = vkWaitForFences(b->dev, 1, &b->os_fence, VK_TRUE, UINT64_MAX);
    vkResetFences(b->dev, 1, &b->os_fence);
    vkFreeCommandBuffers(b->dev, b->os_pool, 1, &cb);
    return vr == VK_SUCCESS ? 0 : VKFAIL(vr, "a one-shot submission");
}

static int timestamp_calibrate(struct vkbe *b, struct rq *q)
{
    (void)q;
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                .queryCount = 1};
    VkQueryPool qp;
    if (vkCreateQueryPool(b->dev, &qi, NULL, &qp) != VK_SUCCESS)
        return 0;
    VkCommandBuffer cb;
    if (oneshot_begin(b, &cb) < 0) {
        vkDestroyQueryPool(b->dev, qp, NULL);
        return 0;
    }
    vkCmdResetQueryPool(cb, qp, 0, 1);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
    uint64_t h0 = replay__now_ns();
    oneshot_end(b, cb);
    uint64_t h1 = replay__now_ns();
    uint64_t t = 0;
    if (vkGetQueryPoolResults(b->dev, qp, 0, 1, sizeof t, &t, sizeof t,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS)
        b->ts_offset = (int64_t)(h0 + (h1 - h0) / 4) - (int64_t)((double)t * b->ts_period);
    vkDestroyQueryPool(b->dev, qp, NULL);
    return 0;
}

static uint32_t find_type(const struct vkbe *b, uint32_t bits, uint32_t need, uint32_t prefer)
{
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < b->memp.memoryTypeCount; i++) {
        if (!(bits & (1u << i)))
            continue;
        uint32_t f = b->memp.memoryTypes[i].propertyFlags;
        if ((f & need) != need)
            continue;
        int score = __builtin_popcount(f & prefer) * 2 - __builtin_popcount(f & ~(need | prefer));
        if (score > best_score)
            best = (int)i, best_score = score;
    }
    return best < 0 ? UINT32_MAX : (uint32_t)best;
}

static struct staging *staging_get(struct vkbe *b, uint64_t need)
{
    struct staging **pp = &b->free_staging;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->size >= need) {
            struct staging *s = *pp;
            *pp = s->next;
            s->next = NULL;
            s->used = 0;
            return s;
        }
    uint64_t size = need > STAGING_CHUNK ? need : STAGING_CHUNK;
    struct staging *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->size = size;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = b->n_families > 1 ? VK_SHARING_MODE_CONCURRENT
                                                               : VK_SHARING_MODE_EXCLUSIVE,
                              .queueFamilyIndexCount = b->n_families > 1 ? b->n_families : 0,
                              .pQueueFamilyIndices = b->families};
    VkMemoryRequirements mr;
    if (vkCreateBuffer(b->dev, &bci, NULL, &s->buf) != VK_SUCCESS)
        goto fail;
    vkGetBufferMemoryRequirements(b->dev, s->buf, &mr);
    uint32_t t =
        find_type(b, mr.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                  VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (t == UINT32_MAX)
        goto fail;
    s->coherent =
        (b->memp.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = mr.size,
                               .memoryTypeIndex = t};
    if (vkAllocateMemory(b->dev, &ai, NULL, &s->mem) != VK_SUCCESS)
        goto fail;
    if (vkBindBufferMemory(b->dev, s->buf, s->mem, 0) != VK_SUCCESS ||
        vkMapMemory(b->dev, s->mem, 0, VK_WHOLE_SIZE, 0, (void **)&s->map) != VK_SUCCESS)
        goto fail;
    return s;
fail:
    if (s->mem)
        vkFreeMemory(b->dev, s->mem, NULL);
    if (s->buf)
        vkDestroyBuffer(b->dev, s->buf, NULL);
    free(s);
    return NULL;
}

static void staging_destroy(struct vkbe *b, struct staging *s)
{
    while (s) {
        struct staging *n = s->next;
        vkDestroyBuffer(b->dev, s->buf, NULL);
        vkFreeMemory(b->dev, s->mem, NULL);
        free(s);
        s = n;
    }
}

static int batch_open(struct vkbe *b, struct rq *q)
{
    if (q->open)
        return 0;
    struct batch *x = b->free_batches;
    if (x) {
        b->free_batches = x->next;
    } else {
        x = calloc(1, sizeof *x);
        if (!x)
            return replay__fail(SBT_ENOMEM, "out of memory");
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = q->pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        VkResult vr = vkAllocateCommandBuffers(b->dev, &ai, &x->cb);
        if (vr != VK_SUCCESS) {
            free(x);
            return VKFAIL(vr, "vkAllocateCommandBuffers");
        }
        if (q->ts) {
            VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                        .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                        .queryCount = QUERIES};
            if (vkCreateQueryPool(b->dev, &qi, NULL, &x->qp) != VK_SUCCESS)
                x->qp = VK_NULL_HANDLE;
        }
    }
    /* batches come from one queue's pool: a free batch from another queue is re-allocated */
    x->next = NULL;
    x->n_ops = x->n_rb = x->n_wait = x->n_acc = 0;
    x->n_queries = 0;
    x->recording = 1;
    x->has_cmds = 0;
    x->had_base = 0;
    x->bound_pipe = VK_NULL_HANDLE;
    x->value = q->value + 1;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkResetCommandBuffer(x->cb, 0);
    vkBeginCommandBuffer(x->cb, &bi);
    if (x->qp)
        vkCmdResetQueryPool(x->cb, x->qp, 0, QUERIES);
    q->open = x;
    return 0;
}

static int batch_add_wait(struct batch *x, VkSemaphore s, uint64_t v)
{
    for (uint32_t i = 0; i < x->n_wait; i++)
        if (x->wait_sem[i] == s) {
            if (x->wait_val[i] < v)
                x->wait_val[i] = v;
            return 0;
        }
    uint32_t c = x->cap_wait;
    if (grow((void **)&x->wait_sem, &c, x->n_wait + 1, sizeof *x->wait_sem) < 0)
        return SBT_ENOMEM;
    c = x->cap_wait;
    if (grow((void **)&x->wait_val, &c, x->n_wait + 1, sizeof *x->wait_val) < 0)
        return SBT_ENOMEM;
    x->cap_wait = c;
    x->wait_sem[x->n_wait] = s;
    x->wait_val[x->n_wait++] = v;
    return 0;
}

static int flush(struct vkbe *b, struct rq *q)
{
    (void)b;
    struct batch *x = q->open;
    if (!x)
        return 0;
    q->open = NULL;
    vkEndCommandBuffer(x->cb);
    /* submission order on one queue does not order execution: chain on the previous batch */
    if (x->value > 1 && batch_add_wait(x, q->timeline, x->value - 1) < 0)
        return SBT_ENOMEM;
    VkPipelineStageFlags *stages = calloc(x->n_wait + 1, sizeof *stages);
    if (!stages)
        return replay__fail(SBT_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < x->n_wait; i++)
        stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .waitSemaphoreValueCount = x->n_wait,
                                        .pWaitSemaphoreValues = x->wait_val,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &x->value};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ts,
                       .waitSemaphoreCount = x->n_wait,
                       .pWaitSemaphores = x->wait_sem,
                       .pWaitDstStageMask = stages,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &x->cb,
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &q->timeline};
    VkResult vr = vkQueueSubmit(q->q, 1, &si, VK_NULL_HANDLE);
    free(stages);
    if (vr != VK_SUCCESS)
        return VKFAIL(vr, "vkQueueSubmit");
    q->value = x->value;
    x->recording = 0;
    *q->flight_tail = x;
    q->flight_tail = &x->next;
    return 0;
}

static uint64_t ts_ns(const struct vkbe *b, uint64_t t)
{
    int64_t v = (int64_t)((double)(t & b->ts_mask) * b->ts_period) + b->ts_offset;
    return v < 0 ? 0 : (uint64_t)v;
}

/* Reports the ops of a completed batch and recycles it. */
static void retire(struct vkbe *b, struct rq *q, struct batch *x)
{
    uint64_t tq[QUERIES];
    int have_ts = 0;
    if (x->qp && x->n_queries)
        have_ts = vkGetQueryPoolResults(b->dev, x->qp, 0, x->n_queries, sizeof tq, tq, sizeof tq[0],
                                        VK_QUERY_RESULT_64_BIT) == VK_SUCCESS;
    for (struct staging *s = x->staging; s; s = s->next)
        if (!s->coherent) {
            VkMappedMemoryRange mr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                      .memory = s->mem,
                                      .size = VK_WHOLE_SIZE};
            vkInvalidateMappedMemoryRanges(b->dev, 1, &mr);
        }
    const void *bytes[64];
    uint64_t len[64];
    for (uint32_t i = 0; i < x->n_ops; i++) {
        const struct bop *o = &x->ops[i];
        struct replay_done d = {.slot = o->slot};
        if (have_ts && o->q0 >= 0) {
            d.has_dev_time = 1;
            d.dev_begin = ts_ns(b, tq[o->q0]);
            d.dev_end = ts_ns(b, tq[o->q0 + 1]);
        }
        if (o->n_rb) {
            uint32_t na = o->n_access < 64 ? o->n_access : 64;
            memset(bytes, 0, sizeof bytes);
            memset(len, 0, sizeof len);
            for (uint32_t k = 0; k < o->n_rb; k++) {
                const struct rb *r = &x->rbs[o->rb0 + k];
                if (r->acc < na) {
                    bytes[r->acc] = r->st->map + r->off;
                    len[r->acc] = r->len;
                }
            }
            d.n_access = na;
            d.bytes = bytes;
            d.len = len;
        }
        b->cb.done(b->cb.eng, &d);
    }
    /* recycle */
    struct staging *s = x->staging;
    while (s) {
        struct staging *n = s->next;
        s->next = b->free_staging;
        b->free_staging = s;
        s = n;
    }
    x->staging = NULL;
    for (uint32_t i = 0; i < x->n_pools; i++) {
        vkResetDescriptorPool(b->dev, x->pools[i], 0);
        if (!grow((void **)&b->free_pools, &b->cap_free_pools, b->n_free_pools + 1,
                  sizeof *b->free_pools))
            b->free_pools[b->n_free_pools++] = x->pools[i];
        else
            vkDestroyDescriptorPool(b->dev, x->pools[i], NULL);
    }
    x->n_pools = 0;
    (void)q;
    x->next = NULL;
    /* a batch's command buffer belongs to its queue's pool: keep it on that queue */
    free(x->ops);
    free(x->rbs);
    free(x->acc);
    free(x->wait_sem);
    free(x->wait_val);
    free(x->pools);
    if (x->qp)
        vkDestroyQueryPool(b->dev, x->qp, NULL);
    vkFreeCommandBuffers(b->dev, q->pool, 1, &x->cb);
    free(x);
}

/* Waits until queue q reached value v (flushing first if v is the open batch) and retires. */
static int wait_value(struct vkbe *b, struct rq *q, uint64_t v)
{
    if (q->open && q->open->value <= v) {
        int st = flush(b, q);
        if (st < 0)
            return st;
    }
    if (v > q->done_value) {
        VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                  .semaphoreCount = 1,
                                  .pSemaphores = &q->timeline,
                                  .pValues = &v};
        VkResult vr = vkWaitSemaphores(b->dev, &wi, UINT64_MAX);
        if (vr != VK_SUCCESS)
            return VKFAIL(vr, "vkWaitSemaphores");
    }
    while (q->flight && q->flight->value <= v) {
        struct batch *x = q->flight;
        q->flight = x->next;
        if (!q->flight)
            q->flight_tail = &q->flight;
        if (x->value > q->done_value)
            q->done_value = x->value;
        retire(b, q, x);
    }
    return 0;
}

/* Retires what has completed without waiting. */
static void poll_done(struct vkbe *b, struct rq *q)
{
    uint64_t v = 0;
    if (!q->flight || vkGetSemaphoreCounterValue(b->dev, q->timeline, &v) != VK_SUCCESS)
        return;
    if (v >= q->flight->value)
        wait_value(b, q, v);
}

static void dead_bufs_free(struct vkbe *b)
{
    for (uint32_t i = 0; i < b->n_dead; i++) {
        vkDestroyBuffer(b->dev, b->dead_bufs[i]->buf, NULL);
        free(b->dead_bufs[i]);
    }
    b->n_dead = 0;
}

static int vk_drain(void *be)
{
    struct vkbe *b = be;
    for (uint32_t i = 0; i < b->n_q; i++) {
        struct rq *q = &b->q[i];
        uint64_t v = q->open ? q->open->value : q->value;
        int st = wait_value(b, q, v);
        if (st < 0)
            return st;
    }
    dead_bufs_free(b);
    return 0;
}

/* ========================================================================================== */
/* prepare: modules, layouts, pipelines                                                       */
/* ========================================================================================== */

static struct setlayout *make_setlayout(struct vkbe *b, uint64_t id, struct sbt_vk_dec *dec,
                                        uint32_t n_b, int *st)
{
    struct setlayout *s = idmap_get(&b->setlayouts, id);
    struct sbt_vk_rec r;
    VkDescriptorSetLayoutBinding *lb = calloc(n_b ? n_b : 1, sizeof *lb);
    struct setlayout *ns = s ? NULL : calloc(1, sizeof *ns);
    if (!lb || (!s && !ns)) {
        free(lb);
        free(ns);
        *st = replay__fail(SBT_ENOMEM, "out of memory");
        return NULL;
    }
    uint32_t k = 0;
    for (; k < n_b; k++) {
        size_t save = dec->pos;
        if (sbt_vk_dec_next(dec, &r) != 1 || r.call != SBT_VK_SET_BINDING) {
            dec->pos = save;
            break;
        }
        lb[k] =
            (VkDescriptorSetLayoutBinding){.binding = (uint32_t)sbt_vk_arg(&r, 0),
                                           .descriptorType = (VkDescriptorType)sbt_vk_arg(&r, 1),
                                           .descriptorCount = (uint32_t)sbt_vk_arg(&r, 2),
                                           .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    }
    if (s) {
        free(lb);
        return s;
    }
    ns->n_b = k;
    ns->binding = calloc(k + 1, sizeof *ns->binding);
    ns->type = calloc(k + 1, sizeof *ns->type);
    ns->count = calloc(k + 1, sizeof *ns->count);
    for (uint32_t i = 0; ns->binding && ns->type && ns->count && i < k; i++) {
        ns->binding[i] = lb[i].binding;
        ns->type[i] = lb[i].descriptorType;
        ns->count[i] = lb[i].descriptorCount;
    }
    VkDescriptorSetLayoutCreateInfo ci = {.sType =
                                              VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = k,
                                          .pBindings = lb};
    VkResult vr = vkCreateDescriptorSetLayout(b->dev, &ci, NULL, &ns->dsl);
    free(lb);
    if (vr != VK_SUCCESS || !ns->binding || !ns->type || !ns->count ||
        idmap_put(&b->setlayouts, id, ns) < 0) {
        if (vr == VK_SUCCESS)
            vkDestroyDescriptorSetLayout(b->dev, ns->dsl, NULL);
        free(ns->binding);
        free(ns->type);
        free(ns->count);
        free(ns);
        *st = vr != VK_SUCCESS ? VKFAIL(vr, "vkCreateDescriptorSetLayout")
                               : replay__fail(SBT_ENOMEM, "out of memory");
        return NULL;
    }
    return ns;
}

static struct playout *make_playout(struct vkbe *b, const struct sbt_vk_rec *r, int *st)
{
    uint64_t id = sbt_vk_arg(r, 0);
    struct playout *p = idmap_get(&b->playouts, id);
    if (p)
        return p;
    p = calloc(1, sizeof *p);
    if (!p) {
        *st = replay__fail(SBT_ENOMEM, "out of memory");
        return NULL;
    }
    uint32_t ns = (uint32_t)sbt_vk_arg(r, 2);
    VkDescriptorSetLayout dsl[MAX_SETS];
    if (ns > MAX_SETS) {
        free(p);
        *st = replay__fail(REPLAY_EUNSUPPORTED, "pipeline layout with %u sets > %u", ns, MAX_SETS);
        return NULL;
    }
    for (uint32_t i = 0; i < ns; i++) {
        p->sets[i] = sbt_vk_arg(r, 3 + i);
        struct setlayout *s = idmap_get(&b->setlayouts, p->sets[i]);
        if (!s) {
            uint64_t missing = p->sets[i];
            free(p);
            *st = replay__fail(SBT_EINVAL,
                               "pipeline layout %" PRIu64 ": set layout %" PRIu64
                               " was never described",
                               id, missing);
            return NULL;
        }
        dsl[i] = s->dsl;
    }
    p->n_sets = ns;
    uint32_t np = (uint32_t)sbt_vk_arg(r, 3 + ns);
    VkPushConstantRange pr[8];
    if (np > 8)
        np = 8;
    for (uint32_t i = 0; i < np; i++) {
        p->push_stage[i] = (uint32_t)sbt_vk_arg(r, 4 + ns + 3 * i);
        p->push_off[i] = (uint32_t)sbt_vk_arg(r, 5 + ns + 3 * i);
        p->push_size[i] = (uint32_t)sbt_vk_arg(r, 6 + ns + 3 * i);
        pr[i] = (VkPushConstantRange){p->push_stage[i], p->push_off[i], p->push_size[i]};
    }
    p->n_push = np;
    VkPipelineLayoutCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = ns,
                                     .pSetLayouts = dsl,
                                     .pushConstantRangeCount = np,
                                     .pPushConstantRanges = pr};
    VkResult vr = vkCreatePipelineLayout(b->dev, &ci, NULL, &p->pl);
    if (vr != VK_SUCCESS || idmap_put(&b->playouts, id, p) < 0) {
        if (vr == VK_SUCCESS)
            vkDestroyPipelineLayout(b->dev, p->pl, NULL);
        free(p);
        *st = vr != VK_SUCCESS ? VKFAIL(vr, "vkCreatePipelineLayout")
                               : replay__fail(SBT_ENOMEM, "out of memory");
        return NULL;
    }
    return p;
}

/* Layout records (SET_LAYOUT + SET_BINDING*, PIPELINE_LAYOUT) of a kernel ext or a marker. */
static int layouts_from(struct vkbe *b, const void *data, size_t len)
{
    struct sbt_vk_dec dec;
    struct sbt_vk_rec r;
    int st = 0, k = 0;
    /* set layouts first: the capture writes PIPELINE_LAYOUT before the sets it names */
    for (int pass = 0; pass < 2 && st == 0 && k >= 0; pass++) {
        sbt_vk_dec_init(&dec, data, len);
        while (st == 0 && (k = sbt_vk_dec_next(&dec, &r)) == 1) {
            if (pass == 0 && r.call == SBT_VK_SET_LAYOUT) {
                uint64_t id = sbt_vk_arg(&r, 0);
                uint32_t nb = (uint32_t)sbt_vk_arg(&r, 2);
                make_setlayout(b, id, &dec, nb, &st);
            } else if (pass == 1 && r.call == SBT_VK_PIPELINE_LAYOUT) {
                make_playout(b, &r, &st);
            }
        }
        sbt_vk_dec_free(&dec);
    }
    if (st == 0 && k < 0)
        st = replay__fail(SBT_ECORRUPT, "%s", sbt_errmsg());
    return st;
}

static void pipe_error(struct vkbe *b, uint64_t id, const char *msg)
{
    struct pipe *p = calloc(1, sizeof *p);
    if (!p)
        return;
    p->error = strdup(msg);
    if (idmap_put(&b->pipes, id, p) < 0) {
        free(p->error);
        free(p);
    }
}

static int make_pipeline(struct vkbe *b, const struct sbt_kernel *k)
{
    if (k->ext.kind != SBT_VK_EXT_PIPELINE)
        return 0;
    struct sbt_vk_dec dec;
    struct sbt_vk_rec pr;
    int st = layouts_from(b, k->ext.data, k->ext.len);
    int f = sbt_vk_find(&dec, k->ext.data, k->ext.len, SBT_VK_PIPELINE, &pr);
    if (f != 1) {
        sbt_vk_dec_free(&dec);
        return 0;
    }
    uint64_t id = sbt_vk_arg(&pr, 0);
    char msg[512];
    if (st < 0) {
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": %s", id, replay_errmsg());
        pipe_error(b, id, msg);
        sbt_vk_dec_free(&dec);
        return 0;
    }
    uint64_t layout = sbt_vk_arg(&pr, 3);
    struct playout *pl = idmap_get(&b->playouts, layout);
    const struct sbt_program *prog = sbt_reader_program(b->r, k->program);
    VkShaderModule mod = VK_NULL_HANDLE;
    void *code = NULL;
    size_t code_len = 0;
    if (!pl) {
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": its layout %" PRIu64 " was not captured",
                 id, layout);
        goto bad;
    }
    if (!prog || sbt_hash_is_zero(prog->blob)) {
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": its SPIR-V module was not captured", id);
        goto bad;
    }
    st = sbt_reader_blob(b->r, &prog->blob, &code, &code_len);
    if (st < 0) {
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": SPIR-V blob: %s", id, sbt_errmsg());
        goto bad;
    }
    VkShaderModuleCreateInfo mci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = code_len, .pCode = code};
    VkResult vr = vkCreateShaderModule(b->dev, &mci, NULL, &mod);
    free(code);
    if (vr != VK_SUCCESS) {
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": vkCreateShaderModule: VkResult %d", id,
                 (int)vr);
        goto bad;
    }
    /* specialization */
    VkSpecializationMapEntry me[64];
    uint32_t nme = 0;
    struct sbt_vk_dec d2;
    struct sbt_vk_rec r2;
    sbt_vk_dec_init(&d2, k->ext.data, k->ext.len);
    while (sbt_vk_dec_next(&d2, &r2) == 1)
        if (r2.call == SBT_VK_SPEC_ENTRY && nme < 64)
            me[nme++] = (VkSpecializationMapEntry){(uint32_t)sbt_vk_arg(&r2, 0),
                                                   (uint32_t)sbt_vk_arg(&r2, 1),
                                                   (size_t)sbt_vk_arg(&r2, 2)};
    sbt_vk_dec_free(&d2);
    VkSpecializationInfo si = {
        .mapEntryCount = nme, .pMapEntries = me, .dataSize = pr.n_bytes, .pData = pr.bytes};
    const char *entry = sbt_reader_string(b->r, k->name);
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rs = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = (uint32_t)sbt_vk_arg(&pr, 8)};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = (VkPipelineCreateFlags)sbt_vk_arg(&pr, 1),
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .pNext = rs.requiredSubgroupSize ? &rs : NULL,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod,
                  .pName = entry && *entry ? entry : "main",
                  .pSpecializationInfo = nme || pr.n_bytes ? &si : NULL},
        .layout = pl->pl};
    struct pipe *p = calloc(1, sizeof *p);
    if (!p) {
        vkDestroyShaderModule(b->dev, mod, NULL);
        sbt_vk_dec_free(&dec);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    vr = vkCreateComputePipelines(b->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p->pipe);
    vkDestroyShaderModule(b->dev, mod, NULL);
    sbt_vk_dec_free(&dec);
    if (vr != VK_SUCCESS) {
        free(p);
        snprintf(msg, sizeof msg, "pipeline %" PRIu64 ": vkCreateComputePipelines: VkResult %d", id,
                 (int)vr);
        pipe_error(b, id, msg);
        return 0;
    }
    p->layout = layout;
    if (idmap_put(&b->pipes, id, p) < 0) {
        vkDestroyPipeline(b->dev, p->pipe, NULL);
        free(p);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    return 0;
bad:
    pipe_error(b, id, msg);
    sbt_vk_dec_free(&dec);
    return 0;
}

static int vk_prepare(void *be)
{
    struct vkbe *b = be;
    uint32_t nk = 0;
    const struct sbt_kernel *k = sbt_reader_kernels(b->r, &nk);
    for (uint32_t i = 0; i < nk; i++) {
        int st = make_pipeline(b, &k[i]);
        if (st < 0)
            return st;
    }
    return 0;
}

/* ========================================================================================== */
/* exec                                                                                       */
/* ========================================================================================== */

static int overlap(const struct sbt_access *a, const struct sbt_access *c)
{
    return a->resource == c->resource && a->offset < c->offset + c->len &&
           c->offset < a->offset + a->len && ((a->mode | c->mode) & SBT_ACCESS_WRITE);
}

static void barrier(VkCommandBuffer cb)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
}

/* Makes the host wait for every executed predecessor of n. */
static int host_wait_deps(struct vkbe *b, const struct sched_node *n)
{
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint64_t s = n->in[i].from_val;
        if (!s || s >= b->n_slots || !b->slot_q[s])
            continue;
        struct rq *q = &b->q[b->slot_q[s] - 1];
        int st = wait_value(b, q, b->slot_val[s]);
        if (st < 0)
            return st;
    }
    return 0;
}

/* Sets up the open batch of q for a device op: waits for other queues, barriers. */
static int device_deps(struct vkbe *b, struct rq *q, const struct sched_node *n)
{
    uint32_t qi = (uint32_t)(q - b->q);
    int need_barrier = 0;
    /* cross-queue predecessors: submit their batches; a wait must precede our commands */
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint64_t s = n->in[i].from_val;
        if (!s || s >= b->n_slots || !b->slot_q[s])
            continue;
        uint32_t pq = b->slot_q[s] - 1;
        uint64_t v = b->slot_val[s];
        struct rq *p = &b->q[pq];
        if (pq == qi) {
            if (q->open && v == q->open->value)
                need_barrier = 1;
            continue; /* earlier batch of this queue: the batch chain orders it */
        }
        if (v <= p->done_value)
            continue;
        if (p->open && p->open->value <= v) {
            int st = flush(b, p);
            if (st < 0)
                return st;
        }
        if (q->open && q->open->has_cmds) {
            int st = flush(b, q);
            if (st < 0)
                return st;
        }
        int st = batch_open(b, q);
        if (st < 0)
            return st;
        if (batch_add_wait(q->open, p->timeline, v) < 0)
            return SBT_ENOMEM;
    }
    int st = batch_open(b, q);
    if (st < 0)
        return st;
    struct batch *x = q->open;
    const struct sbt_op *op = n->op;
    for (uint32_t i = 0; i < op->n_access && !need_barrier; i++)
        for (uint32_t k = 0; k < x->n_acc && !need_barrier; k++)
            if (overlap(&op->access[i], &x->acc[k]))
                need_barrier = 1;
    if (need_barrier && x->has_cmds) {
        barrier(x->cb);
        x->n_acc = 0;
    }
    if (grow((void **)&x->acc, &x->cap_acc, x->n_acc + op->n_access, sizeof *x->acc) < 0)
        return SBT_ENOMEM;
    if (op->n_access) /* else x->acc may still be NULL: memcpy(NULL, ...) is undefined */
        memcpy(x->acc + x->n_acc, op->access, op->n_access * sizeof *x->acc);
    x->n_acc += op->n_access;
    return 0;
}

static struct bop *bop_add(struct vkbe *b, struct rq *q, uint64_t slot)
{
    struct batch *x = q->open;
    if (grow((void **)&x->ops, &x->cap_ops, x->n_ops + 1, sizeof *x->ops) < 0)
        return NULL;
    struct bop *o = &x->ops[x->n_ops++];
    memset(o, 0, sizeof *o);
    o->slot = slot;
    o->q0 = -1;
    if (slot < b->n_slots) {
        b->slot_q[slot] = (uint8_t)(q - b->q + 1);
        b->slot_val[slot] = x->value;
    }
    return o;
}

static struct buf *buf_of(struct vkbe *b, uint64_t id, int *st, const char *what)
{
    struct buf *x = idmap_get(&b->bufs, id);
    if (!x)
        *st = replay__fail(SBT_EINVAL,
                           "%s: buffer %" PRIu64 " does not exist here (never "
                           "created, or destroyed)",
                           what, id);
    else if (!x->mem)
        *st = replay__fail(SBT_EINVAL, "%s: buffer %" PRIu64 " has no memory bound", what, id);
    return x && x->mem ? x : NULL;
}

static VkDescriptorPool pool_get(struct vkbe *b, struct batch *x)
{
    VkDescriptorPool p = VK_NULL_HANDLE;
    if (b->n_free_pools) {
        p = b->free_pools[--b->n_free_pools];
    } else {
        VkDescriptorPoolSize ps[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4096},
                                     {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1024},
                                     {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC, 256},
                                     {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC, 256},
                                     {VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, 256},
                                     {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, 256}};
        VkDescriptorPoolCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                         .maxSets = 512,
                                         .poolSizeCount = 6,
                                         .pPoolSizes = ps};
        if (vkCreateDescriptorPool(b->dev, &ci, NULL, &p) != VK_SUCCESS)
            return VK_NULL_HANDLE;
    }
    if (grow((void **)&x->pools, &x->cap_pools, x->n_pools + 1, sizeof *x->pools) < 0) {
        vkDestroyDescriptorPool(b->dev, p, NULL);
        return VK_NULL_HANDLE;
    }
    x->pools[x->n_pools++] = p;
    return p;
}

static int alloc_set(struct vkbe *b, struct batch *x, VkDescriptorSetLayout dsl,
                     VkDescriptorSet *out)
{
    for (int tries = 0; tries < 2; tries++) {
        VkDescriptorPool p = x->n_pools && tries == 0 ? x->pools[x->n_pools - 1] : pool_get(b, x);
        if (!p)
            return replay__fail(REPLAY_EDEVICE, "cannot create a descriptor pool");
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = p,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &dsl};
        if (vkAllocateDescriptorSets(b->dev, &ai, out) == VK_SUCCESS)
            return 0;
    }
    return replay__fail(REPLAY_EDEVICE, "cannot allocate a descriptor set");
}

static int is_texel(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER ||
           t == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
}

static VkBufferView find_view(struct vkbe *b, uint64_t buf, uint64_t off, uint64_t range)
{
    for (uint32_t i = 0; i < b->views.cap; i++) {
        struct bview *v = b->views.v[i];
        if (v && v->buf == buf && v->offset == off && (v->range == range || range == 0))
            return v->view;
    }
    return VK_NULL_HANDLE;
}

/* Records a DISPATCH payload into the open batch. */
static int rec_dispatch(struct vkbe *b, struct batch *x, const struct sbt_op *op,
                        const struct sbt_vk_rec *d, struct sbt_vk_dec *dec)
{
    int st = 0;
    uint64_t pid = sbt_vk_arg(d, 0);
    struct pipe *p = idmap_get(&b->pipes, pid);
    if (!p)
        return replay__fail(SBT_EINVAL, "pipeline %" PRIu64 " is not in the trace's kernels", pid);
    if (p->error)
        return replay__fail(REPLAY_EUNSUPPORTED, "%s", p->error);
    struct playout *pl = idmap_get(&b->playouts, p->layout);
    if (!pl)
        return replay__fail(SBT_EINVAL, "pipeline %" PRIu64 " without layout", pid);
    /* push constants, groups before the bindings overwrite the decoder's args */
    uint64_t g[6];
    for (int i = 0; i < 6; i++)
        g[i] = sbt_vk_arg(d, 2 + (uint32_t)i);
    uint64_t ind_buf = sbt_vk_arg(d, 8), ind_off = sbt_vk_arg(d, 9);
    uint8_t push[256];
    uint32_t push_len = d->n_bytes < sizeof push ? d->n_bytes : (uint32_t)sizeof push;
    memcpy(push, d->bytes, push_len);

    VkDescriptorSet sets[MAX_SETS] = {0};
    VkWriteDescriptorSet w[64];
    VkDescriptorBufferInfo bi[64];
    VkBufferView bv[64];
    uint32_t nw = 0;
    struct sbt_vk_rec r;
    int k;
    while ((k = sbt_vk_dec_next(dec, &r)) == 1) {
        if (r.call != SBT_VK_BINDING)
            continue;
        uint32_t set = (uint32_t)sbt_vk_arg(&r, 0);
        if (set >= pl->n_sets)
            return replay__fail(SBT_EINVAL, "binding of set %u but the layout has %u sets", set,
                                pl->n_sets);
        if (!sets[set]) {
            struct setlayout *sl = idmap_get(&b->setlayouts, pl->sets[set]);
            if (!sl)
                return replay__fail(SBT_EINVAL, "set layout %" PRIu64 " missing", pl->sets[set]);
            if ((st = alloc_set(b, x, sl->dsl, &sets[set])) < 0)
                return st;
        }
        if (nw == 64)
            return replay__fail(REPLAY_EUNSUPPORTED, "more than 64 bindings in one dispatch");
        struct buf *bf = buf_of(b, sbt_vk_arg(&r, 4), &st, "dispatch binding");
        if (!bf)
            return st;
        uint32_t type = (uint32_t)sbt_vk_arg(&r, 3);
        uint64_t off = sbt_vk_arg(&r, 6), range = sbt_vk_arg(&r, 7);
        w[nw] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstSet = sets[set],
                                       .dstBinding = (uint32_t)sbt_vk_arg(&r, 1),
                                       .dstArrayElement = (uint32_t)sbt_vk_arg(&r, 2),
                                       .descriptorCount = 1,
                                       .descriptorType = (VkDescriptorType)type};
        if (type == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC)
            w[nw].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
        if (is_texel(type)) {
            bv[nw] = find_view(b, bf->id, off, range);
            if (!bv[nw])
                return replay__fail(REPLAY_EUNSUPPORTED,
                                    "texel buffer binding without a captured view of buffer "
                                    "%" PRIu64,
                                    bf->id);
            w[nw].pTexelBufferView = &bv[nw];
        } else {
            bi[nw] = (VkDescriptorBufferInfo){bf->buf, off, range};
            w[nw].pBufferInfo = &bi[nw];
        }
        nw++;
    }
    if (k < 0)
        return replay__fail(SBT_ECORRUPT, "%s", sbt_errmsg());
    /* dynamic offsets: the binding's offset already has them applied */
    uint32_t dyn[64] = {0}, ndyn = 0;
    for (uint32_t s = 0; s < pl->n_sets; s++) {
        struct setlayout *sl = idmap_get(&b->setlayouts, pl->sets[s]);
        for (uint32_t i = 0; sl && i < sl->n_b; i++)
            if (sl->type[i] == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC ||
                sl->type[i] == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC)
                ndyn += sl->count[i];
        if (!sets[s] && sl && (st = alloc_set(b, x, sl->dsl, &sets[s])) < 0)
            return st;
    }
    if (ndyn > 64)
        return replay__fail(REPLAY_EUNSUPPORTED, "more than 64 dynamic offsets");
    if (nw)
        vkUpdateDescriptorSets(b->dev, nw, w, 0, NULL);
    (void)op;
    VkCommandBuffer cb = x->cb;
    if (x->bound_pipe != p->pipe) { /* a redundant bind costs the driver a state re-emit */
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
        x->bound_pipe = p->pipe;
    }
    if (pl->n_sets)
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl->pl, 0, pl->n_sets, sets,
                                ndyn, dyn);
    for (uint32_t i = 0; i < pl->n_push; i++) {
        uint32_t a = pl->push_off[i], e = a + pl->push_size[i];
        if (e > push_len)
            e = push_len;
        if (a < e)
            vkCmdPushConstants(cb, pl->pl, pl->push_stage[i], a, e - a, push + a);
    }
    if (ind_buf) {
        struct buf *ib = buf_of(b, ind_buf, &st, "indirect dispatch");
        if (!ib)
            return st;
        vkCmdDispatchIndirect(cb, ib->buf, ind_off);
    } else {
        /* always with an explicit base: lavapipe (Mesa 22.3) keeps the base of an earlier
         * vkCmdDispatchBase for later dispatches of the command buffer */
        vkCmdDispatchBase(cb, (uint32_t)g[0], (uint32_t)g[1], (uint32_t)g[2], (uint32_t)g[3],
                          (uint32_t)g[4], (uint32_t)g[5]);
        if (g[0] | g[1] | g[2])
            x->had_base = 1;
    }
    return 0;
}

static int rec_transfer(struct vkbe *b, struct batch *x, const struct sbt_op *op,
                        const struct sbt_vk_rec *d)
{
    int st = 0;
    VkCommandBuffer cb = x->cb;
    if (d->call == SBT_VK_COPY_BUFFER) {
        struct buf *s = buf_of(b, sbt_vk_arg(d, 0), &st, "vkCmdCopyBuffer source");
        struct buf *t = s ? buf_of(b, sbt_vk_arg(d, 1), &st, "vkCmdCopyBuffer destination") : NULL;
        if (!t)
            return st;
        uint32_t n = (uint32_t)sbt_vk_arg(d, 2);
        for (uint32_t i = 0; i < n; i++) {
            VkBufferCopy c = {sbt_vk_arg(d, 3 + 3 * i), sbt_vk_arg(d, 4 + 3 * i),
                              sbt_vk_arg(d, 5 + 3 * i)};
            if (c.size)
                vkCmdCopyBuffer(cb, s->buf, t->buf, 1, &c);
        }
        return 0;
    }
    if (d->call == SBT_VK_FILL_BUFFER) {
        struct buf *t = buf_of(b, sbt_vk_arg(d, 0), &st, "vkCmdFillBuffer");
        if (!t)
            return st;
        if (sbt_vk_arg(d, 2))
            vkCmdFillBuffer(cb, t->buf, sbt_vk_arg(d, 1), sbt_vk_arg(d, 2),
                            (uint32_t)sbt_vk_arg(d, 3));
        return 0;
    }
    /* UPDATE_BUFFER: the bytes are the op's blob */
    struct buf *t = buf_of(b, sbt_vk_arg(d, 0), &st, "vkCmdUpdateBuffer");
    if (!t)
        return st;
    void *data = NULL;
    size_t len = 0;
    if (!(op->flags & SBT_OPF_BLOB))
        return replay__fail(SBT_EINVAL, "vkCmdUpdateBuffer without its data blob");
    if ((st = sbt_reader_blob(b->r, &op->blob, &data, &len)) < 0)
        return replay__fail(st, "%s", sbt_errmsg());
    uint64_t off = sbt_vk_arg(d, 1);
    for (size_t a = 0; a < len; a += 65536) {
        size_t n = len - a < 65536 ? len - a : 65536;
        vkCmdUpdateBuffer(cb, t->buf, off + a, n, (const uint8_t *)data + a);
    }
    free(data);
    return 0;
}

/* Copies the op's accesses with mode bits `want` into staging behind it. */
static int readback(struct vkbe *b, struct batch *x, struct bop *o, const struct sbt_op *op,
                    uint32_t want)
{
    uint64_t need = 0;
    for (uint32_t i = 0; i < op->n_access; i++)
        if (op->access[i].mode & want)
            need += (op->access[i].len + 15) & ~(uint64_t)15;
    if (!need)
        return 0;
    struct staging *s = x->staging;
    if (!s || s->size - s->used < need) {
        struct staging *n = staging_get(b, need);
        if (!n)
            return replay__fail(REPLAY_EDEVICE, "cannot allocate %" PRIu64 " bytes of staging",
                                need);
        n->next = x->staging;
        x->staging = s = n;
    }
    barrier(x->cb);
    o->rb0 = x->n_rb;
    o->n_access = op->n_access;
    for (uint32_t i = 0; i < op->n_access; i++) {
        const struct sbt_access *a = &op->access[i];
        if (!(a->mode & want))
            continue;
        struct mem *m = idmap_get(&b->mems, a->resource);
        if (!m)
            return replay__fail(SBT_EINVAL, "access to memory %" PRIu64 " that does not exist",
                                a->resource);
        if (grow((void **)&x->rbs, &x->cap_rb, x->n_rb + 1, sizeof *x->rbs) < 0)
            return SBT_ENOMEM;
        x->rbs[x->n_rb++] = (struct rb){i, s, s->used, a->len};
        if (a->len) {
            VkBufferCopy c = {a->offset, s->used, a->len};
            vkCmdCopyBuffer(x->cb, m->whole, s->buf, 1, &c);
        }
        s->used += (a->len + 15) & ~(uint64_t)15;
        o->n_rb++;
    }
    return 0;
}

static int exec_device(struct vkbe *b, const struct replay_x *rx, int32_t qi)
{
    const struct sched_node *n = rx->node;
    const struct sbt_op *op = n->op;
    if (qi < 0)
        return replay__fail(REPLAY_EUNSUPPORTED, "%s op on a host-thread stream",
                            sbt_op_kind_name(op->kind));
    struct rq *q = &b->q[qi];
    struct sbt_vk_dec dec;
    struct sbt_vk_rec d;
    int f = op->payload.kind == SBT_VK_PAYLOAD
                ? sbt_vk_find(&dec, op->payload.data, op->payload.len,
                              op->kind == SBT_OP_KERNEL ? SBT_VK_DISPATCH
                              : op->kind == SBT_OP_FILL ? SBT_VK_FILL_BUFFER
                                                        : SBT_VK_COPY_BUFFER,
                              &d)
                : 0;
    if (f == 0 && op->kind == SBT_OP_COPY) {
        sbt_vk_dec_free(&dec);
        f = sbt_vk_find(&dec, op->payload.data, op->payload.len, SBT_VK_UPDATE_BUFFER, &d);
    }
    if (f != 1) {
        if (op->payload.kind == SBT_VK_PAYLOAD)
            sbt_vk_dec_free(&dec);
        return f < 0 ? replay__fail(SBT_ECORRUPT, "%s", sbt_errmsg())
                     : replay__fail(REPLAY_EUNSUPPORTED,
                                    "%s op without a Vulkan payload to replay it from",
                                    sbt_op_kind_name(op->kind));
    }
    int st = device_deps(b, q, n);
    if (st < 0) {
        sbt_vk_dec_free(&dec);
        return st;
    }
    struct batch *x = q->open;
    int timed = !(rx->flags & REPLAY_X_UNTIMED) && x->qp && q->ts;
    int indirect = op->kind == SBT_OP_KERNEL && sbt_vk_arg(&d, 8) != 0;
    if ((timed && x->n_queries + 2 > QUERIES) || (indirect && x->had_base)) {
        /* a fresh command buffer: no dispatch base leaks into an indirect dispatch */
        sbt_vk_dec_free(&dec);
        if ((st = flush(b, q)) < 0 || (st = batch_open(b, q)) < 0)
            return st;
        return exec_device(b, rx, qi);
    }
    int32_t q0 = -1;
    if (timed) {
        q0 = (int32_t)x->n_queries;
        vkCmdWriteTimestamp(x->cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, x->qp, x->n_queries++);
    }
    if (op->kind == SBT_OP_KERNEL)
        st = rec_dispatch(b, x, op, &d, &dec);
    else
        st = rec_transfer(b, x, op, &d);
    sbt_vk_dec_free(&dec);
    if (st < 0) {
        if (timed) /* keep the query pair consistent */
            vkCmdWriteTimestamp(x->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, x->qp, x->n_queries++);
        return st;
    }
    x->has_cmds = 1;
    if (timed)
        vkCmdWriteTimestamp(x->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, x->qp, x->n_queries++);
    struct bop *o = bop_add(b, q, rx->slot);
    if (!o)
        return SBT_ENOMEM;
    o->q0 = q0;
    if (rx->flags & (REPLAY_X_OUTPUTS | REPLAY_X_OUTPUTS_END)) {
        if ((st = readback(b, x, o, op, SBT_ACCESS_WRITE)) < 0)
            return st;
        /* the barrier before the read-back copies separates what came before; the copies still
         * read the op's outputs, so a later op that writes those bytes must wait for them: keep
         * them in the batch's list for the overlap check (capacity: device_deps grew it) */
        uint32_t n_w = 0;
        for (uint32_t i = 0; i < op->n_access; i++)
            if (op->access[i].mode & SBT_ACCESS_WRITE)
                x->acc[n_w++] = op->access[i];
        x->n_acc = n_w;
    }
    /* fast-forward: nothing to time or read back, so the device can start on what is recorded
     * while the host records the rest (the timeline chain keeps the order) */
    if ((rx->flags & REPLAY_X_UNTIMED) && x->n_ops >= FF_CHUNK)
        return flush(b, q);
    return 0;
}

/* Queue-side ops without commands (submission marks, semaphore waits/signals, events): they
 * order work through their edges and complete with their batch. */
static int exec_queue_mark(struct vkbe *b, const struct replay_x *rx, int32_t qi)
{
    struct rq *q = &b->q[qi];
    int st = device_deps(b, q, rx->node);
    if (st < 0)
        return st;
    if (rx->node->op->kind == SBT_OP_EVENT_WAIT && q->open->has_cmds) {
        barrier(q->open->cb);
        q->open->n_acc = 0;
    }
    return bop_add(b, q, rx->slot) ? 0 : SBT_ENOMEM;
}

/* ---- host-side ops ------------------------------------------------------------------------ */

static int mem_alloc(struct vkbe *b, const struct sbt_op *op)
{
    struct sbt_vk_dec dec;
    struct sbt_vk_rec r;
    int f = sbt_vk_find(&dec, op->payload.data, op->payload.len, SBT_VK_MEMORY, &r);
    uint64_t id = op->resource, size = op->bytes;
    uint32_t flags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    if (f == 1) {
        id = sbt_vk_arg(&r, 0);
        size = sbt_vk_arg(&r, 1);
        flags = (uint32_t)sbt_vk_arg(&r, 3);
    }
    sbt_vk_dec_free(&dec);
    if (f < 0)
        return replay__fail(SBT_ECORRUPT, "%s", sbt_errmsg());
    if (!id)
        return replay__fail(SBT_EINVAL, "allocation without a resource id");
    struct mem *m = calloc(1, sizeof *m);
    if (!m)
        return replay__fail(SBT_ENOMEM, "out of memory");
    m->size = size;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size ? size : 4,
        .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = b->n_families > 1 ? VK_SHARING_MODE_CONCURRENT : VK_SHARING_MODE_EXCLUSIVE,
        .queueFamilyIndexCount = b->n_families > 1 ? b->n_families : 0,
        .pQueueFamilyIndices = b->families};
    VkResult vr = vkCreateBuffer(b->dev, &bci, NULL, &m->whole);
    if (vr != VK_SUCCESS) {
        free(m);
        return VKFAIL(vr, "vkCreateBuffer");
    }
    VkMemoryRequirements mr;
    vkGetBufferMemoryRequirements(b->dev, m->whole, &mr);
    /* keep host visibility (host writes and reads go through a mapping); prefer the rest */
    uint32_t need = flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    uint32_t prefer =
        flags & (VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                 VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    uint32_t t = find_type(b, mr.memoryTypeBits & b->whole_type_bits, need, prefer);
    if (t == UINT32_MAX)
        t = find_type(b, mr.memoryTypeBits, need, prefer);
    if (t == UINT32_MAX) {
        vkDestroyBuffer(b->dev, m->whole, NULL);
        free(m);
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "memory %" PRIu64 ": no memory type with flags 0x%x on this device", id,
                            need);
    }
    m->type = t;
    uint32_t tf = b->memp.memoryTypes[t].propertyFlags;
    m->host_visible = (tf & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0;
    m->coherent = (tf & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = mr.size > size ? mr.size : size,
                               .memoryTypeIndex = t};
    vr = vkAllocateMemory(b->dev, &ai, NULL, &m->mem);
    if (vr == VK_SUCCESS)
        vr = vkBindBufferMemory(b->dev, m->whole, m->mem, 0);
    if (vr == VK_SUCCESS && m->host_visible)
        vr = vkMapMemory(b->dev, m->mem, 0, VK_WHOLE_SIZE, 0, (void **)&m->map);
    if (vr != VK_SUCCESS) {
        if (m->mem)
            vkFreeMemory(b->dev, m->mem, NULL);
        vkDestroyBuffer(b->dev, m->whole, NULL);
        free(m);
        return replay__fail(REPLAY_EDEVICE,
                            "memory %" PRIu64 ": %" PRIu64
                            " bytes: allocation failed (VkResult %d)",
                            id, size, (int)vr);
    }
    /* the capture's page shadow starts at zero: so must the replay's memory */
    if (m->map) {
        memset(m->map, 0, size);
        if (!m->coherent) {
            VkMappedMemoryRange rg = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                      .memory = m->mem,
                                      .size = VK_WHOLE_SIZE};
            vkFlushMappedMemoryRanges(b->dev, 1, &rg);
        }
    } else if (size >= 4) {
        VkCommandBuffer cb;
        int st = oneshot_begin(b, &cb);
        if (st < 0)
            return st;
        vkCmdFillBuffer(cb, m->whole, 0, VK_WHOLE_SIZE, 0);
        if ((st = oneshot_end(b, cb)) < 0)
            return st;
    }
    if (idmap_put(&b->mems, id, m) < 0)
        return replay__fail(SBT_ENOMEM, "out of memory");
    return 0;
}

static void mem_destroy(struct vkbe *b, struct mem *m)
{
    vkDestroyBuffer(b->dev, m->whole, NULL);
    vkFreeMemory(b->dev, m->mem, NULL);
    free(m);
}

static int host_write(struct vkbe *b, const struct sbt_op *op)
{
    if (!(op->flags & SBT_OPF_BLOB))
        return replay__fail(SBT_EINVAL, "host write without its data blob");
    void *data = NULL;
    size_t len = 0;
    int st = sbt_reader_blob(b->r, &op->blob, &data, &len);
    if (st < 0)
        return replay__fail(st, "%s", sbt_errmsg());
    size_t pos = 0;
    for (uint32_t i = 0; i < op->n_access; i++) {
        const struct sbt_access *a = &op->access[i];
        if (!(a->mode & SBT_ACCESS_WRITE))
            continue;
        struct mem *m = idmap_get(&b->mems, a->resource);
        if (!m || !m->map || a->offset + a->len > m->size || pos + a->len > len) {
            free(data);
            return replay__fail(SBT_EINVAL,
                                "host write to memory %" PRIu64 " [%" PRIu64 ", +%" PRIu64 "): %s",
                                a->resource, a->offset, a->len,
                                !m                   ? "no such memory"
                                : !m->map            ? "not host-visible here"
                                : pos + a->len > len ? "blob shorter than the write"
                                                     : "out of bounds");
        }
        memcpy(m->map + a->offset, (uint8_t *)data + pos, a->len);
        pos += a->len;
        if (!m->coherent) {
            VkMappedMemoryRange rg = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                      .memory = m->mem,
                                      .size = VK_WHOLE_SIZE};
            vkFlushMappedMemoryRanges(b->dev, 1, &rg);
        }
    }
    free(data);
    return 0;
}

static int host_read(struct vkbe *b, const struct replay_x *rx)
{
    const struct sbt_op *op = rx->node->op;
    const void *bytes[64] = {0};
    uint64_t len[64] = {0};
    uint8_t *tmp[64] = {0};
    uint32_t na = op->n_access < 64 ? op->n_access : 64;
    int st = 0;
    for (uint32_t i = 0; i < na && (rx->flags & REPLAY_X_READ); i++) {
        const struct sbt_access *a = &op->access[i];
        if (!(a->mode & SBT_ACCESS_READ))
            continue;
        struct mem *m = idmap_get(&b->mems, a->resource);
        if (!m || a->offset + a->len > m->size) {
            st = replay__fail(SBT_EINVAL, "host read of memory %" PRIu64 ": %s", a->resource,
                              m ? "out of bounds" : "no such memory");
            break;
        }
        if (m->map) {
            if (!m->coherent) {
                VkMappedMemoryRange rg = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                          .memory = m->mem,
                                          .size = VK_WHOLE_SIZE};
                vkInvalidateMappedMemoryRanges(b->dev, 1, &rg);
            }
            bytes[i] = m->map + a->offset;
        } else {
            tmp[i] = malloc(a->len ? a->len : 1);
            if (!tmp[i] ||
                (st = replay__vk_backend.read(b, a->resource, a->offset, a->len, tmp[i])) < 0) {
                if (!tmp[i])
                    st = replay__fail(SBT_ENOMEM, "out of memory");
                break;
            }
            bytes[i] = tmp[i];
        }
        len[i] = a->len;
    }
    if (st == 0) {
        struct replay_done d = {.slot = rx->slot,
                                .n_access = (rx->flags & REPLAY_X_READ) ? na : 0,
                                .bytes = bytes,
                                .len = len};
        b->cb.done(b->cb.eng, &d);
    }
    for (uint32_t i = 0; i < na; i++)
        free(tmp[i]);
    return st;
}

static int marker(struct vkbe *b, const struct sbt_op *op)
{
    if (op->flags & SBT_OPF_UNSUPPORTED) {
        struct sbt_vk_dec dec;
        struct sbt_vk_rec r;
        char name[128] = "an unrecorded command";
        if (sbt_vk_find(&dec, op->payload.data, op->payload.len, SBT_VK_CMD_UNSUPPORTED, &r) == 1 &&
            r.n_bytes)
            snprintf(name, sizeof name, "%.*s", (int)r.n_bytes, (const char *)r.bytes);
        sbt_vk_dec_free(&dec);
        return replay__fail(REPLAY_EUNSUPPORTED, "%s is not supported", name);
    }
    if (op->payload.kind != SBT_VK_PAYLOAD)
        return 0; /* a user marker */
    struct sbt_vk_dec dec;
    struct sbt_vk_rec r;
    sbt_vk_dec_init(&dec, op->payload.data, op->payload.len);
    int st = 0, k;
    while (st == 0 && (k = sbt_vk_dec_next(&dec, &r)) == 1) {
        switch (r.call) {
        case SBT_VK_CREATE_BUFFER: {
            uint64_t id = sbt_vk_arg(&r, 0);
            struct buf *x = calloc(1, sizeof *x);
            if (!x) {
                st = replay__fail(SBT_ENOMEM, "out of memory");
                break;
            }
            x->id = id;
            x->size = sbt_vk_arg(&r, 1);
            VkBufferCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                     .size = x->size,
                                     .usage = (VkBufferUsageFlags)sbt_vk_arg(&r, 2) |
                                              VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                              VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                     .flags = (VkBufferCreateFlags)sbt_vk_arg(&r, 3) &
                                              ~(uint32_t)(VK_BUFFER_CREATE_SPARSE_BINDING_BIT |
                                                          VK_BUFFER_CREATE_SPARSE_RESIDENCY_BIT |
                                                          VK_BUFFER_CREATE_SPARSE_ALIASED_BIT),
                                     .sharingMode = b->n_families > 1 ? VK_SHARING_MODE_CONCURRENT
                                                                      : VK_SHARING_MODE_EXCLUSIVE,
                                     .queueFamilyIndexCount = b->n_families > 1 ? b->n_families : 0,
                                     .pQueueFamilyIndices = b->families};
            VkResult vr = vkCreateBuffer(b->dev, &ci, NULL, &x->buf);
            if (vr != VK_SUCCESS) {
                free(x);
                st = VKFAIL(vr, "vkCreateBuffer");
                break;
            }
            if (idmap_put(&b->bufs, id, x) < 0) {
                vkDestroyBuffer(b->dev, x->buf, NULL);
                free(x);
                st = replay__fail(SBT_ENOMEM, "out of memory");
            }
            break;
        }
        case SBT_VK_BIND_BUFFER: {
            struct buf *x = idmap_get(&b->bufs, sbt_vk_arg(&r, 0));
            struct mem *m = idmap_get(&b->mems, sbt_vk_arg(&r, 1));
            uint64_t off = sbt_vk_arg(&r, 2);
            if (!x || !m) {
                st = replay__fail(SBT_EINVAL,
                                  "vkBindBufferMemory: buffer %" PRIu64 " or memory %" PRIu64
                                  " does not exist",
                                  sbt_vk_arg(&r, 0), sbt_vk_arg(&r, 1));
                break;
            }
            VkMemoryRequirements mr;
            vkGetBufferMemoryRequirements(b->dev, x->buf, &mr);
            if (!(mr.memoryTypeBits & (1u << m->type)) || off % mr.alignment ||
                off + mr.size > m->size + (mr.size - x->size)) {
                st = replay__fail(REPLAY_EUNSUPPORTED,
                                  "buffer %" PRIu64 " at offset %" PRIu64 " of memory %" PRIu64
                                  ": this device needs alignment %" PRIu64
                                  " and memory types 0x%x (chosen type %u)",
                                  x->id, off, sbt_vk_arg(&r, 1), (uint64_t)mr.alignment,
                                  mr.memoryTypeBits, m->type);
                break;
            }
            VkResult vr = vkBindBufferMemory(b->dev, x->buf, m->mem, off);
            if (vr != VK_SUCCESS) {
                st = VKFAIL(vr, "vkBindBufferMemory");
                break;
            }
            x->mem = m;
            x->mem_off = off;
            break;
        }
        case SBT_VK_CREATE_BUFFER_VIEW: {
            struct buf *x = idmap_get(&b->bufs, sbt_vk_arg(&r, 1));
            struct bview *v = x ? calloc(1, sizeof *v) : NULL;
            if (!v) {
                st = x ? replay__fail(SBT_ENOMEM, "out of memory")
                       : replay__fail(SBT_EINVAL, "buffer view of a missing buffer");
                break;
            }
            v->buf = x->id;
            v->offset = sbt_vk_arg(&r, 3);
            v->range = sbt_vk_arg(&r, 4);
            VkBufferViewCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                                         .buffer = x->buf,
                                         .format = (VkFormat)sbt_vk_arg(&r, 2),
                                         .offset = v->offset,
                                         .range = v->range};
            if (vkCreateBufferView(b->dev, &ci, NULL, &v->view) != VK_SUCCESS ||
                idmap_put(&b->views, sbt_vk_arg(&r, 0), v) < 0) {
                free(v);
                st = replay__fail(REPLAY_EUNSUPPORTED, "vkCreateBufferView failed");
            }
            break;
        }
        case SBT_VK_SET_LAYOUT:
            make_setlayout(b, sbt_vk_arg(&r, 0), &dec, (uint32_t)sbt_vk_arg(&r, 2), &st);
            break;
        case SBT_VK_PIPELINE_LAYOUT:
            make_playout(b, &r, &st);
            break;
        case SBT_VK_DESTROY:
            if (sbt_vk_arg(&r, 0) == VK_OBJECT_TYPE_BUFFER) {
                struct buf *x = idmap_get(&b->bufs, sbt_vk_arg(&r, 1));
                if (x) {
                    idmap_del(&b->bufs, sbt_vk_arg(&r, 1));
                    /* ops using it may still be queued: destroy at the next drain */
                    if (grow((void **)&b->dead_bufs, &b->cap_dead, b->n_dead + 1,
                             sizeof *b->dead_bufs) < 0) {
                        st = SBT_ENOMEM;
                        break;
                    }
                    b->dead_bufs[b->n_dead++] = x;
                }
            }
            break;
        default: /* descriptor sets, sync objects: replay builds its own */
            break;
        }
    }
    if (st == 0 && k < 0)
        st = replay__fail(SBT_ECORRUPT, "%s", sbt_errmsg());
    sbt_vk_dec_free(&dec);
    return st;
}

static int vk_exec(void *be, const struct replay_x *rx)
{
    struct vkbe *b = be;
    const struct sched_node *n = rx->node;
    const struct sbt_op *op = n->op;
    int32_t qi = op->stream <= b->n_streams ? b->stream_q[op->stream] : -1;
    int st = 0;
    switch (op->kind) {
    case SBT_OP_KERNEL:
    case SBT_OP_COPY:
    case SBT_OP_FILL:
        st = exec_device(b, rx, qi);
        for (uint32_t i = 0; i < b->n_q; i++)
            poll_done(b, &b->q[i]);
        return st;
    case SBT_OP_SUBMIT:
    case SBT_OP_SIGNAL:
    case SBT_OP_WAIT:
    case SBT_OP_EVENT_RECORD:
    case SBT_OP_EVENT_WAIT:
        if (qi >= 0)
            return exec_queue_mark(b, rx, qi);
        break; /* a host-side wait / signal: host_wait_deps below */
    case SBT_OP_HOST_WRITE:
    case SBT_OP_HOST_READ:
    case SBT_OP_ALLOC:
    case SBT_OP_FREE:
    case SBT_OP_MARKER:
    case SBT_OP_STREAM_SYNC:
    case SBT_OP_DEVICE_SYNC:
    case SBT_OP_STREAM_CREATE:
    case SBT_OP_STREAM_DESTROY:
        break;
    default:
        return replay__fail(REPLAY_EUNSUPPORTED, "op kind %u is not supported", op->kind);
    }
    if ((st = host_wait_deps(b, n)) < 0)
        return st;
    switch (op->kind) {
    case SBT_OP_HOST_WRITE:
        st = host_write(b, op);
        break;
    case SBT_OP_HOST_READ:
        return host_read(b, rx);
    case SBT_OP_ALLOC:
        st = mem_alloc(b, op);
        break;
    case SBT_OP_FREE: {
        struct mem *m = idmap_get(&b->mems, op->resource);
        if (m) {
            /* work on it is done (the FREE edges), but a buffer on it may be queued to die */
            if ((st = vk_drain(b)) < 0)
                return st;
            idmap_del(&b->mems, op->resource);
            mem_destroy(b, m);
        }
        break;
    }
    case SBT_OP_MARKER:
        st = marker(b, op);
        break;
    default:
        break;
    }
    if (st < 0)
        return st;
    struct replay_done d = {.slot = rx->slot};
    b->cb.done(b->cb.eng, &d);
    return 0;
}

static int vk_read(void *be, uint64_t resource, uint64_t off, uint64_t len, void *dst)
{
    struct vkbe *b = be;
    struct mem *m = idmap_get(&b->mems, resource);
    if (!m || off + len > m->size)
        return replay__fail(SBT_EINVAL, "read of memory %" PRIu64 ": %s", resource,
                            m ? "out of bounds" : "no such memory");
    if (m->map) {
        memcpy(dst, m->map + off, len);
        return 0;
    }
    struct staging *s = staging_get(b, len);
    if (!s)
        return replay__fail(REPLAY_EDEVICE, "no staging memory for a read");
    VkCommandBuffer cb;
    int st = oneshot_begin(b, &cb);
    if (st == 0) {
        VkBufferCopy c = {off, 0, len};
        vkCmdCopyBuffer(cb, m->whole, s->buf, 1, &c);
        st = oneshot_end(b, cb);
    }
    if (st == 0)
        memcpy(dst, s->map, len);
    s->next = b->free_staging;
    b->free_staging = s;
    return st;
}

/* ========================================================================================== */
/* reset, close                                                                               */
/* ========================================================================================== */

static void vk_reset(void *be)
{
    struct vkbe *b = be;
    if (!b->dev)
        return;
    vk_drain(b);
    vkDeviceWaitIdle(b->dev);
    for (uint32_t i = 0; i < b->n_q; i++) {
        struct rq *q = &b->q[i];
        if (q->open) { /* a failed run may leave one open */
            flush(b, q);
            wait_value(b, q, q->value);
        }
    }
    for (uint32_t i = 0; i < b->bufs.cap; i++) {
        struct buf *x = b->bufs.v[i];
        if (x) {
            vkDestroyBuffer(b->dev, x->buf, NULL);
            free(x);
        }
    }
    for (uint32_t i = 0; i < b->views.cap; i++) {
        struct bview *v = b->views.v[i];
        if (v) {
            vkDestroyBufferView(b->dev, v->view, NULL);
            free(v);
        }
    }
    for (uint32_t i = 0; i < b->mems.cap; i++)
        if (b->mems.v[i])
            mem_destroy(b, b->mems.v[i]);
    for (uint32_t i = 0; i < b->pipes.cap; i++) {
        struct pipe *p = b->pipes.v[i];
        if (p) {
            if (p->pipe)
                vkDestroyPipeline(b->dev, p->pipe, NULL);
            free(p->error);
            free(p);
        }
    }
    for (uint32_t i = 0; i < b->playouts.cap; i++) {
        struct playout *p = b->playouts.v[i];
        if (p) {
            vkDestroyPipelineLayout(b->dev, p->pl, NULL);
            free(p);
        }
    }
    for (uint32_t i = 0; i < b->setlayouts.cap; i++) {
        struct setlayout *s = b->setlayouts.v[i];
        if (s) {
            vkDestroyDescriptorSetLayout(b->dev, s->dsl, NULL);
            free(s->binding);
            free(s->type);
            free(s->count);
            free(s);
        }
    }
    idmap_free(&b->bufs);
    idmap_free(&b->views);
    idmap_free(&b->mems);
    idmap_free(&b->pipes);
    idmap_free(&b->playouts);
    idmap_free(&b->setlayouts);
    dead_bufs_free(b);
    memset(b->slot_q, 0, b->n_slots);
}

static void vk_close(void *be)
{
    struct vkbe *b = be;
    if (!b)
        return;
    if (b->dev) {
        vk_reset(b);
        staging_destroy(b, b->free_staging);
        for (uint32_t i = 0; i < b->n_free_pools; i++)
            vkDestroyDescriptorPool(b->dev, b->free_pools[i], NULL);
        for (uint32_t i = 0; i < b->n_q; i++) {
            if (b->q[i].timeline)
                vkDestroySemaphore(b->dev, b->q[i].timeline, NULL);
            if (b->q[i].pool)
                vkDestroyCommandPool(b->dev, b->q[i].pool, NULL);
        }
        if (b->os_fence)
            vkDestroyFence(b->dev, b->os_fence, NULL);
        if (b->os_pool)
            vkDestroyCommandPool(b->dev, b->os_pool, NULL);
        vkDestroyDevice(b->dev, NULL);
    }
    if (b->inst)
        vkDestroyInstance(b->inst, NULL);
    free(b->free_pools);
    free(b->dead_bufs);
    free(b->stream_q);
    free(b->slot_q);
    free(b->slot_val);
    free(b);
}

const struct replay_backend replay__vk_backend = {
    .name = "vulkan",
    .api = SBT_API_VULKAN,
    .devices = vk_devices,
    .open = vk_open,
    .prepare = vk_prepare,
    .exec = vk_exec,
    .drain = vk_drain,
    .read = vk_read,
    .reset = vk_reset,
    .close = vk_close,
};
