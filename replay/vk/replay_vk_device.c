/*
 * replay/vk/replay_vk_device.c — the Vulkan backend: instance, the devices it can replay on, and
 * opening one for a trace: queue families mapped by capability, the extensions and features the
 * captured device enabled (exit 4 naming what is missing), replay's own needs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "format/sbt_vk.h"
#include "replay/vk/replay_vk_int.h"

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

int vkr_devices(struct replay_device_info *out, uint32_t max)
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

/* The features the trace's device enabled, per features structure of the registry's table
 * (format/sbt_vk.h): which members were on. */
struct featreq {
    const struct sbt_vk_feature_struct *t;
    VkBool32 *on; /* t->n */
};

struct devreq {
    uint32_t fam_flags[32]; /* captured families' flags */
    uint32_t n_fam;
    uint32_t created[32]; /* queues the app created per captured family */
    char **ext;
    uint32_t n_ext;
    struct featreq *feat;
    uint32_t n_feat;
    int addr_replay; /* ADDRESS_REPLAY: the capture had bufferDeviceAddressCaptureReplay on */
};

static void devreq_free(struct devreq *q)
{
    for (uint32_t i = 0; i < q->n_ext; i++)
        free(q->ext[i]);
    free(q->ext);
    for (uint32_t i = 0; i < q->n_feat; i++)
        free(q->feat[i].on);
    free(q->feat);
}

/* A FEATURES record: (sType, n, n member values). The structure must be one the registry
 * describes, with as many members; the same structure twice adds up. */
static int parse_features(const struct sbt_payload_rec *r, struct devreq *q)
{
    const struct sbt_vk_feature_struct *t;
    int st = vkr_check_features(r, &t);
    if (st < 0)
        return st;
    struct featreq *f = NULL;
    for (uint32_t i = 0; i < q->n_feat && !f; i++)
        if (q->feat[i].t == t)
            f = &q->feat[i];
    if (!f) {
        struct featreq *v = realloc(q->feat, (q->n_feat + 1) * sizeof *v);
        if (!v)
            return replay__fail(SBT_ENOMEM, "out of memory");
        q->feat = v;
        f = &q->feat[q->n_feat];
        f->t = t;
        f->on = calloc(t->n ? t->n : 1, sizeof *f->on);
        if (!f->on)
            return replay__fail(SBT_ENOMEM, "out of memory");
        q->n_feat++;
    }
    for (uint32_t k = 0; k < t->n; k++)
        if (sbt_payload_arg(r, 2 + k))
            f->on[k] = VK_TRUE;
    return 0;
}

static int parse_device_ext(const struct sbt_device *d, struct devreq *q)
{
    if (d->ext.kind != SBT_VK_EXT_DEVICE)
        return 0;
    struct sbt_payload_dec dec;
    struct sbt_payload_rec r;
    sbt_payload_dec_init(&dec, d->ext.data, d->ext.len);
    int st, bad = 0;
    while (!bad && (st = sbt_payload_dec_next(&dec, &r)) == 1) {
        uint64_t a0 = sbt_payload_arg(&r, 0);
        if (r.call == SBT_VK_QUEUE_FAMILY && a0 < 32) {
            q->fam_flags[a0] = (uint32_t)sbt_payload_arg(&r, 1);
            if (a0 + 1 > q->n_fam)
                q->n_fam = (uint32_t)a0 + 1;
        } else if (r.call == SBT_VK_QUEUE_CREATE && a0 < 32) {
            q->created[a0] += (uint32_t)sbt_payload_arg(&r, 1);
        } else if (r.call == SBT_VK_EXTENSION) {
            char **v = realloc(q->ext, (q->n_ext + 1) * sizeof *v);
            char *s = malloc(r.n_bytes + 1);
            if (!v || !s) {
                free(s);
                if (v)
                    q->ext = v;
                st = bad = replay__fail(SBT_ENOMEM, "out of memory");
                break;
            }
            memcpy(s, r.bytes, r.n_bytes);
            s[r.n_bytes] = 0;
            q->ext = v;
            q->ext[q->n_ext++] = s;
        } else if (r.call == SBT_VK_FEATURES) {
            st = bad = parse_features(&r, q);
        } else if (r.call == SBT_VK_ADDRESS_REPLAY) {
            q->addr_replay = a0 != 0;
        }
    }
    sbt_payload_dec_free(&dec);
    if (bad)
        return bad;
    if (st < 0)
        return replay__fail(SBT_ECORRUPT, "device row: %s", sbt_errmsg());
    return 0;
}

/* Any features structure, as the registry lays them out (format/sbt_vk.h). */
struct gfeat {
    VkStructureType sType;
    void *pNext;
    VkBool32 v[];
};

static struct gfeat *gfeat_new(uint32_t stype, uint32_t n)
{
    struct gfeat *g = calloc(1, sizeof *g + (n ? n : 1) * sizeof(VkBool32));
    if (g)
        g->sType = (VkStructureType)stype;
    return g;
}

static void free_chain(void *chain)
{
    while (chain) {
        struct gfeat *g = chain;
        chain = g->pNext;
        free(g);
    }
}

/* What a trace shows of the features and extensions its device enabled, for telling one it
 * never used (feature_unused): the SPIR-V capabilities its programs declare, the binding flags
 * of the set layouts its pipelines use, whether it is complete, whether the program made a
 * sampler Y'CbCr conversion; known = 0 when a program could not be read: then every feature
 * counts as used. robustness_default: every VkPipelineRobustnessCreateInfo of its pipelines
 * asks only for the device's default behaviour or for none (DISABLED, as ggml-vulkan asks):
 * then a device without VK_EXT_pipeline_robustness computes what the program did wherever the
 * program stays in bounds, which replay checks op by op like any other output. */
struct featuse {
    uint32_t caps[256], n_caps;
    uint32_t binding_flags, layout_flags;
    int complete, ycbcr, known, robustness_default;
};

static void featuse_cap(void *ctx, uint32_t cap)
{
    struct featuse *u = ctx;
    for (uint32_t i = 0; i < u->n_caps; i++)
        if (u->caps[i] == cap)
            return;
    if (u->n_caps < sizeof u->caps / sizeof u->caps[0])
        u->caps[u->n_caps++] = cap;
    else
        u->known = 0; /* more than that: nobody can tell */
}

static void featuse_scan(sbt_reader *r, struct featuse *u)
{
    memset(u, 0, sizeof *u);
    u->known = u->robustness_default = 1;
    uint32_t np = 0, nk = 0, nu = 0;
    const struct sbt_program *pv = sbt_reader_programs(r, &np);
    for (uint32_t i = 0; i < np && u->known; i++) {
        void *code = NULL;
        size_t len = 0;
        if (sbt_hash_is_zero(pv[i].blob) || sbt_reader_blob(r, &pv[i].blob, &code, &len) < 0 ||
            vkr_check_spirv(code, len) < 0 || vkr_spirv_capabilities(code, len, featuse_cap, u) < 0)
            u->known = 0;
        free(code);
    }
    const struct sbt_kernel *k = sbt_reader_kernels(r, &nk);
    for (uint32_t i = 0; i < nk; i++) {
        if (k[i].ext.kind != SBT_VK_EXT_PIPELINE)
            continue;
        struct sbt_payload_dec dec;
        struct sbt_payload_rec rec;
        sbt_payload_dec_init(&dec, k[i].ext.data, k[i].ext.len);
        while (sbt_payload_dec_next(&dec, &rec) == 1)
            if (rec.call == SBT_VK_SET_BINDING)
                u->binding_flags |= (uint32_t)sbt_payload_arg(&rec, 4);
            else if (rec.call == SBT_VK_SET_LAYOUT)
                u->layout_flags |= (uint32_t)sbt_payload_arg(&rec, 1);
            else if (rec.call == SBT_VK_PIPELINE_ROBUSTNESS)
                for (uint32_t a = 1; a < 5; a++) /* DEVICE_DEFAULT 0, DISABLED 1 */
                    u->robustness_default &= sbt_payload_arg(&rec, a) <= 1;
        sbt_payload_dec_free(&dec);
    }
    const struct sbt_unsupported *un = sbt_reader_unsupported(r, &nu);
    for (uint32_t i = 0; i < nu; i++) {
        const char *name = sbt_reader_string(r, un[i].what);
        u->ycbcr |= name && !strncmp(name, "vkCreateSamplerYcbcrConversion", 30);
    }
    u->complete = sbt_reader_info(r)->complete;
}

/* Whether the trace never used feature `field` its device enabled, so that a device lacking it
 * replays it all the same (ggml-vulkan enables every feature a device offers). Only what the
 * trace can show: a feature SPIR-V capabilities need (vk.xml) that no program declares, and
 * beyond the shaders the binding flags of the set layouts, sparse resources (which only a
 * vkQueueBindSparse, unmodelled, makes usable: a complete trace has none), Y'CbCr conversion,
 * and descriptorIndexing (which only says the others are there). Anything else was used. */
static int feature_unused(const char *field, const struct featuse *u)
{
    if (!u->known)
        return 0;
    static const struct {
        const char *feature;
        uint32_t flag; /* VkDescriptorBindingFlagBits */
    } flagged[] = {
        {"descriptorBindingUniformBufferUpdateAfterBind", 0x1},
        {"descriptorBindingSampledImageUpdateAfterBind", 0x1},
        {"descriptorBindingStorageImageUpdateAfterBind", 0x1},
        {"descriptorBindingStorageBufferUpdateAfterBind", 0x1},
        {"descriptorBindingUniformTexelBufferUpdateAfterBind", 0x1},
        {"descriptorBindingStorageTexelBufferUpdateAfterBind", 0x1},
        {"descriptorBindingInlineUniformBlockUpdateAfterBind", 0x1},
        {"descriptorBindingUpdateUnusedWhilePending", 0x2},
        {"descriptorBindingPartiallyBound", 0x4},
        {"descriptorBindingVariableDescriptorCount", 0x8},
    };
    for (size_t i = 0; i < sizeof flagged / sizeof flagged[0]; i++)
        if (!strcmp(field, flagged[i].feature))
            return !(u->binding_flags & flagged[i].flag) &&
                   !(flagged[i].flag == 0x1 &&
                     (u->layout_flags &
                      VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT));
    if (!strcmp(field, "descriptorIndexing"))
        return 1;
    if (!strncmp(field, "sparseBinding", 13) || !strncmp(field, "sparseResidency", 15))
        return u->complete;
    if (!strcmp(field, "samplerYcbcrConversion"))
        return !u->ycbcr;
    /* features that also let the API hand out addresses stay, whatever the shaders declare */
    if (strstr(field, "bufferDeviceAddress") || strstr(field, "CaptureReplay"))
        return 0;
    const struct sbt_vk_feature_caps *c = sbt_vk_feature_caps_of(field);
    if (!c || c->unknown)
        return 0;
    for (uint32_t i = 0; i < c->n; i++)
        for (uint32_t j = 0; j < u->n_caps; j++)
            if (c->caps[i] == u->caps[j])
                return 0;
    return 1;
}

/* Takes extension i out of q, and the pipelineRobustness feature wherever q enables it. */
static void drop_robustness(struct devreq *q, uint32_t i)
{
    free(q->ext[i]);
    memmove(q->ext + i, q->ext + i + 1, (q->n_ext - i - 1) * sizeof *q->ext);
    q->n_ext--;
    for (uint32_t f = 0; f < q->n_feat; f++)
        for (uint32_t k = 0; k < q->feat[f].t->n; k++)
            if (!strcmp(q->feat[f].t->fields[k], "pipelineRobustness"))
                q->feat[f].on[k] = 0;
}

/* Checks every feature the trace enabled against what device p supports, and builds what
 * vkCreateDevice gets: *core (for pEnabledFeatures) and a chain with one structure per
 * features structure the trace enabled, VkPhysicalDeviceFeatures2 among them when the program
 * chained one (then *core_in_chain = 1 and pEnabledFeatures must stay NULL). Each structure is
 * allocated at the registry's size, never at a size from the trace. A feature p lacks that
 * the trace never used (feature_unused) is left off, and counted in *n_off (*first_off the
 * first). Returns 0, or REPLAY_ENODEV naming how many features are missing and the first 8, or
 * SBT_ENOMEM. */
static int features_build(VkPhysicalDevice p, const char *dev_name, const struct devreq *q,
                          const struct featuse *use, struct gfeat **chain,
                          VkPhysicalDeviceFeatures *core, int *core_in_chain, uint32_t *n_off,
                          const char **first_off)
{
    VkPhysicalDeviceFeatures have_core;
    vkGetPhysicalDeviceFeatures(p, &have_core);
    memset(core, 0, sizeof *core);
    *chain = NULL;
    *core_in_chain = 0;
    char missing[1024] = "";
    size_t n_missing = 0, len = 0;
    *n_off = 0;
    *first_off = NULL;
    for (uint32_t i = 0; i < q->n_feat; i++) {
        const struct sbt_vk_feature_struct *t = q->feat[i].t;
        VkBool32 *on = q->feat[i].on;
        int is_core = t->stype == 0 || t->stype == SBT_VK_STYPE_FEATURES2;
        struct gfeat *have = NULL;
        if (!is_core) {
            if (!(have = gfeat_new(t->stype, t->n)))
                return replay__fail(SBT_ENOMEM, "out of memory");
            VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                            .pNext = have};
            vkGetPhysicalDeviceFeatures2(p, &f2);
        }
        const VkBool32 *hv = is_core ? (const VkBool32 *)&have_core : have->v;
        for (uint32_t k = 0; k < t->n; k++)
            if (on[k] && !hv[k] && feature_unused(t->fields[k], use)) {
                on[k] = VK_FALSE; /* left off: the trace never used it */
                if (!(*n_off)++)
                    *first_off = t->fields[k];
            } else if (on[k] && !hv[k] && n_missing++ < 8 && len < sizeof missing)
                len += (size_t)snprintf(missing + len, sizeof missing - len, "%s%s (%s)",
                                        n_missing > 1 ? ", " : "", t->fields[k], t->name);
        free(have);
        if (n_missing)
            continue;
        if (t->stype == 0) {
            VkBool32 *w = (VkBool32 *)core;
            for (uint32_t k = 0; k < t->n && k < sizeof *core / sizeof(VkBool32); k++)
                w[k] |= on[k];
            continue;
        }
        struct gfeat *w = gfeat_new(t->stype, t->n);
        if (!w)
            return replay__fail(SBT_ENOMEM, "out of memory");
        memcpy(w->v, on, t->n * sizeof *on);
        w->pNext = *chain;
        *chain = w;
        *core_in_chain |= t->stype == SBT_VK_STYPE_FEATURES2;
    }
    if (n_missing) {
        free_chain(*chain);
        *chain = NULL;
        return replay__fail(
            REPLAY_ENODEV, "%s lacks %zu feature%s the trace's device enabled: %s%s", dev_name,
            n_missing, n_missing > 1 ? "s" : "", missing, n_missing > 8 ? ", ..." : "");
    }
    if (*core_in_chain) { /* VkPhysicalDeviceFeatures given both ways: one structure holds all */
        struct gfeat *f2 = *chain;
        while (f2->sType != (VkStructureType)SBT_VK_STYPE_FEATURES2)
            f2 = f2->pNext;
        const VkBool32 *c = (const VkBool32 *)core;
        for (size_t k = 0; k < sizeof *core / sizeof(VkBool32); k++)
            f2->v[k] |= c[k];
    }
    return 0;
}

/* Turns member `field` of the features structure stype on where the chain has that structure;
 * 1 if it did. */
static int chain_enable(struct gfeat *chain, uint32_t stype, const char *field)
{
    const struct sbt_vk_feature_struct *t = sbt_vk_feature_struct(stype);
    for (struct gfeat *g = chain; g && t; g = g->pNext)
        if ((uint32_t)g->sType == stype)
            for (uint32_t k = 0; k < t->n; k++)
                if (!strcmp(t->fields[k], field)) {
                    g->v[k] = VK_TRUE;
                    return 1;
                }
    return 0;
}

/* poison: the memories the program maps (its host writes and reads name them). The trace's
 * mapped memory starts at zero: the capture leaves out host writes of zeros over bytes its
 * shadow holds as zero, so these keep their zeros, and only memory the host never touches
 * (initialised by device commands alone, all recorded) is poisoned. */
static int host_memories(struct vkbe *b)
{
    sbt_cursor *c = NULL;
    const struct sbt_op *op;
    int st = sbt_cursor_open(b->r, NULL, &c);
    while (st >= 0 && (st = sbt_cursor_next(c, &op)) == 1)
        for (uint32_t i = 0;
             (op->kind == SBT_OP_HOST_WRITE || op->kind == SBT_OP_HOST_READ) && i < op->n_access;
             i++)
            if (!sbt_map_put(&b->host_mems, op->access[i].resource, NULL))
                st = SBT_ENOMEM;
    sbt_cursor_close(c);
    if (st < 0) {
        sbt_map_free(&b->host_mems);
        return replay__fail(st, "poison: reading the trace's host accesses: %s", sbt_errmsg());
    }
    return 0;
}

int vkr_open(sbt_reader *r, const struct replay_bk_opts *o, const struct replay_bk_cb *cb,
             struct replay_device_info *info, void **out)
{
    *out = NULL;
    int st0;
    struct vkbe *b = calloc(1, sizeof *b);
    if (!b)
        return replay__fail(SBT_ENOMEM, "out of memory");
    b->r = r;
    b->cb = *cb;
    b->verify = o->verify;
    b->perturb = o->perturb;
    b->ps = o->pstats;
    if (b->perturb.kind == REPLAY_PERTURB_POISON && (st0 = host_memories(b)) < 0) {
        free(b);
        return st0;
    }
    struct devreq req = {0};
    struct gfeat *chain = NULL;
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
    /* limits the checks compare with (replay_vk_check.c); subgroup sizes a pipeline may
     * require, where the device reports them (Vulkan 1.3 or VK_EXT_subgroup_size_control) */
    VkPhysicalDeviceSubgroupSizeControlProperties sgp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties sg = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
        .pNext = b->props.apiVersion >= VK_API_VERSION_1_3 ? &sgp : NULL};
    if (b->props.apiVersion >= VK_API_VERSION_1_1) {
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &sg};
        vkGetPhysicalDeviceProperties2(b->phys, &p2);
    }
    vkr_limits_from(&b->lim, &b->props.limits, sgp.minSubgroupSize, sgp.maxSubgroupSize,
                    sg.subgroupSize);
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

    /* extensions the app enabled must exist here (but for pipeline robustness that asks for
     * nothing but the default or none: see struct featuse) */
    struct featuse use;
    featuse_scan(r, &use);
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
        if (!found && !strcmp(req.ext[i], "VK_EXT_pipeline_robustness") && use.robustness_default) {
            drop_robustness(&req, i--);
            b->no_robustness = 1;
            size_t dl = strlen(info->driver); /* the result says so (replay.driver) */
            snprintf(info->driver + dl, sizeof info->driver - dl, "%s",
                     "; no pipeline robustness (default/disabled asked)");
            continue;
        }
        if (!found) {
            st = replay__fail(REPLAY_ENODEV, "%s lacks device extension %s that the trace uses",
                              b->props.deviceName, req.ext[i]);
            free(ep);
            goto fail;
        }
    }
    free(ep);
    VkPhysicalDeviceFeatures core;
    int core_in_chain;
    uint32_t n_off;
    const char *first_off;
    if ((st = features_build(b->phys, b->props.deviceName, &req, &use, &chain, &core,
                             &core_in_chain, &n_off, &first_off)) < 0)
        goto fail;
    if (n_off) { /* the result says so (replay.driver) */
        size_t dl = strlen(info->driver);
        snprintf(info->driver + dl, sizeof info->driver - dl,
                 "; %u unused feature%s left off (%s%s)", n_off, n_off > 1 ? "s" : "", first_off,
                 n_off > 1 ? ", ..." : "");
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
    b->stream_q[0] = -1;        /* stream 0 is no queue */
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
    /* buffer device addresses at their captured places: capture-replay, where the capture had it
     * and this device offers it (else prepare refuses the shaders that use addresses) */
    VkPhysicalDeviceBufferDeviceAddressFeatures bda = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES};
    f2.pNext = &bda;
    vkGetPhysicalDeviceFeatures2(b->phys, &f2);
    b->addr_capture = req.addr_replay;
    if (req.addr_replay && bda.bufferDeviceAddressCaptureReplay)
        b->addr_replay =
            chain_enable(chain, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                         "bufferDeviceAddressCaptureReplay") |
            chain_enable(chain, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES,
                         "bufferDeviceAddressCaptureReplay") |
            chain_enable(chain,
                         VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES_EXT,
                         "bufferDeviceAddressCaptureReplay");
    int tl_in_chain =
        chain_enable(chain, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                     "timelineSemaphore") |
        chain_enable(chain, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
                     "timelineSemaphore");
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
                              .pEnabledFeatures = core_in_chain ? NULL : &core};
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
        vkr_timestamp_calibrate(b, &b->q[0]);
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
