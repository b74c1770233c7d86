/*
 * replay/replay_vk_check.c — every value a trace gives the Vulkan backend is checked here
 * before it reaches the driver: against the layouts format/sbt_vk.h documents, the objects the
 * replay made (their sizes, passed in), and the replay device's limits (struct vkr_limits). A
 * bad value is SBT_ECORRUPT (the trace cannot be right: a range past a buffer's end, a record
 * too short for its own count) or REPLAY_ENODEV (the trace is fine, this device cannot run it:
 * a limit named). The functions are pure — no Vulkan call, no state — so
 * tests/fuzz/fuzz_vk_payload.c runs them on any bytes without a device.
 *
 * Why here and not in the driver: a driver given an out-of-range copy, an oversized push
 * constant block or a specialization entry past its data may crash or write out of bounds;
 * the validation layers are not there at replay. A crafted or corrupt trace must give exit 3.
 */
#include <inttypes.h>
#include <stdio.h>

#include "replay/replay_vk_int.h"

/* off + len within size, without overflow. */
static int in_range(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

#define BAD(...) replay__fail(SBT_ECORRUPT, __VA_ARGS__)

void vkr_limits_from(struct vkr_limits *l, const VkPhysicalDeviceLimits *d, uint32_t min_subgroup,
                     uint32_t max_subgroup, uint32_t subgroup_size)
{
    memset(l, 0, sizeof *l);
    l->max_push_constants = d->maxPushConstantsSize;
    for (int i = 0; i < 3; i++) {
        l->max_group_count[i] = d->maxComputeWorkGroupCount[i];
        l->max_group_size[i] = d->maxComputeWorkGroupSize[i];
    }
    l->max_invocations = d->maxComputeWorkGroupInvocations;
    l->max_shared = d->maxComputeSharedMemorySize;
    l->max_storage_range = d->maxStorageBufferRange;
    l->max_uniform_range = d->maxUniformBufferRange;
    l->storage_align = d->minStorageBufferOffsetAlignment;
    l->uniform_align = d->minUniformBufferOffsetAlignment;
    l->texel_align = d->minTexelBufferOffsetAlignment;
    l->max_texel_elements = d->maxTexelBufferElements;
    l->max_bound_sets = d->maxBoundDescriptorSets;
    l->min_subgroup = min_subgroup;
    l->max_subgroup = max_subgroup;
    l->subgroup_size = subgroup_size;
}

/* ---- device row ------------------------------------------------------------------------- */

int vkr_check_features(const struct sbt_vk_rec *r, const struct sbt_vk_feature_struct **out)
{
    uint64_t stype = sbt_vk_arg(r, 0), n = sbt_vk_arg(r, 1);
    const struct sbt_vk_feature_struct *t =
        stype <= UINT32_MAX ? sbt_vk_feature_struct((uint32_t)stype) : NULL;
    *out = t;
    if (!t)
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "the trace's device enabled features structure type %" PRIu64
                            ", which this build's Vulkan registry (header version %s) does not "
                            "describe",
                            stype, sbt_vk_registry_version);
    /* captures before the registry table counted the structure's tail padding as one more
     * member (always 0): accept that, nothing else */
    if (n < t->n || n > t->n + 1 || r->n_arg < 2 + n || (n > t->n && sbt_vk_arg(r, 2 + t->n)))
        return BAD("device row: FEATURES record of %s gives %" PRIu64
                   " members in %u arguments; the structure has %u",
                   t->name, n, r->n_arg, t->n);
    return 0;
}

/* ---- command payloads --------------------------------------------------------------------- */

int vkr_check_dispatch(const struct vkr_limits *l, const struct sbt_vk_rec *d)
{
    if (d->call != SBT_VK_DISPATCH)
        return BAD("DISPATCH expected, record %u found", d->call);
    static const char axis[] = "xyz";
    for (int i = 0; i < 3; i++) {
        uint64_t base = sbt_vk_arg(d, 2 + (uint32_t)i), n = sbt_vk_arg(d, 5 + (uint32_t)i);
        if (base > UINT32_MAX || n > UINT32_MAX)
            return BAD("dispatch base %" PRIu64 " / group count %" PRIu64 " on %c is not a 32-bit "
                       "value",
                       base, n, axis[i]);
        if (!sbt_vk_arg(d, 8) && base + n > l->max_group_count[i])
            return replay__fail(REPLAY_ENODEV,
                                "dispatch of groups %" PRIu64 "..%" PRIu64 " on %c exceeds this "
                                "device's maxComputeWorkGroupCount[%d] = %u",
                                base, base + n, axis[i], i, l->max_group_count[i]);
    }
    if (sbt_vk_arg(d, 8) && sbt_vk_arg(d, 9) % 4)
        return BAD("indirect dispatch at offset %" PRIu64 ", not a multiple of 4",
                   sbt_vk_arg(d, 9));
    if (d->n_bytes > l->max_push_constants)
        return replay__fail(REPLAY_ENODEV,
                            "dispatch with %u bytes of push constants; this device's "
                            "maxPushConstantsSize is %u",
                            d->n_bytes, l->max_push_constants);
    return 0;
}

int vkr_check_indirect(uint64_t offset, uint64_t buf_size)
{
    if (!in_range(offset, 12, buf_size))
        return BAD("indirect dispatch arguments at offset %" PRIu64 " (12 bytes) past the end "
                   "of their buffer (%" PRIu64 " bytes)",
                   offset, buf_size);
    return 0;
}

static int is_storage(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER || t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
}

static int is_uniform(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER || t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC;
}

int vkr_check_binding(const struct vkr_limits *l, const struct sbt_vk_rec *r, uint64_t buf_size)
{
    if (r->n_arg < 8)
        return BAD("BINDING record with %u arguments (needs 8)", r->n_arg);
    uint32_t type = (uint32_t)sbt_vk_arg(r, 3);
    uint64_t off = sbt_vk_arg(r, 6), range = sbt_vk_arg(r, 7);
    if (sbt_vk_arg(r, 3) > UINT32_MAX ||
        !(is_storage(type) || is_uniform(type) || vkr_is_texel(type)))
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "binding of set %" PRIu64 " binding %" PRIu64
                            ": descriptor type %" PRIu64 " is not a buffer type replay supports",
                            sbt_vk_arg(r, 0), sbt_vk_arg(r, 1), sbt_vk_arg(r, 3));
    if (!range || !in_range(off, range, buf_size))
        return BAD("binding of set %" PRIu64 " binding %" PRIu64 ": range [%" PRIu64 ", +%" PRIu64
                   ") outside its buffer of %" PRIu64 " bytes",
                   sbt_vk_arg(r, 0), sbt_vk_arg(r, 1), off, range, buf_size);
    if (vkr_is_texel(type))
        return 0; /* the view holds the range: checked when it was made */
    uint64_t align = is_storage(type) ? l->storage_align : l->uniform_align;
    uint64_t max = is_storage(type) ? l->max_storage_range : l->max_uniform_range;
    if (align && off % align)
        return replay__fail(REPLAY_ENODEV,
                            "binding of set %" PRIu64 " binding %" PRIu64
                            " at buffer offset %" PRIu64
                            ": this device needs %s offsets aligned to %" PRIu64,
                            sbt_vk_arg(r, 0), sbt_vk_arg(r, 1), off,
                            is_storage(type) ? "minStorageBufferOffsetAlignment"
                                             : "minUniformBufferOffsetAlignment",
                            align);
    if (range > max)
        return replay__fail(REPLAY_ENODEV,
                            "binding of set %" PRIu64 " binding %" PRIu64 " spans %" PRIu64
                            " bytes: this device's %s is %" PRIu64,
                            sbt_vk_arg(r, 0), sbt_vk_arg(r, 1), range,
                            is_storage(type) ? "maxStorageBufferRange" : "maxUniformBufferRange",
                            max);
    return 0;
}

int vkr_check_copy(const struct sbt_vk_rec *r, uint64_t src_size, uint64_t dst_size,
                   uint32_t *n_regions)
{
    uint64_t n = sbt_vk_arg(r, 2);
    if (r->n_arg < 3 || n > (r->n_arg - 3) / 3)
        return BAD("COPY_BUFFER record of %" PRIu64 " regions in %u arguments", n, r->n_arg);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t so = sbt_vk_arg(r, 3 + 3 * (uint32_t)i), dof = sbt_vk_arg(r, 4 + 3 * (uint32_t)i),
                 sz = sbt_vk_arg(r, 5 + 3 * (uint32_t)i);
        if (!in_range(so, sz, src_size) || !in_range(dof, sz, dst_size))
            return BAD("copy region %" PRIu64 " [%" PRIu64 ", +%" PRIu64 ") -> [%" PRIu64
                       ", +%" PRIu64 ") outside its buffers (%" PRIu64 " and %" PRIu64 " bytes)",
                       i, so, sz, dof, sz, src_size, dst_size);
        if (sbt_vk_arg(r, 0) == sbt_vk_arg(r, 1) && sz && so < dof + sz && dof < so + sz)
            return BAD("copy region %" PRIu64 " overlaps itself in buffer %" PRIu64, i,
                       sbt_vk_arg(r, 0));
    }
    *n_regions = (uint32_t)n;
    return 0;
}

int vkr_check_fill(const struct sbt_vk_rec *r, uint64_t buf_size)
{
    uint64_t off = sbt_vk_arg(r, 1), size = sbt_vk_arg(r, 2);
    if (off % 4 || size % 4 || !in_range(off, size, buf_size))
        return BAD("fill of [%" PRIu64 ", +%" PRIu64 ") in a buffer of %" PRIu64
                   " bytes (offset and size must be multiples of 4 and inside it)",
                   off, size, buf_size);
    return 0;
}

int vkr_check_update(const struct sbt_vk_rec *r, uint64_t data_len, uint64_t buf_size)
{
    uint64_t off = sbt_vk_arg(r, 1), size = sbt_vk_arg(r, 2);
    if (r->n_arg >= 3 && size != data_len)
        return BAD("update of %" PRIu64 " bytes with %" PRIu64 " bytes of data", size, data_len);
    if (off % 4 || data_len % 4 || !in_range(off, data_len, buf_size))
        return BAD("update of [%" PRIu64 ", +%" PRIu64 ") in a buffer of %" PRIu64
                   " bytes (offset and size must be multiples of 4 and inside it)",
                   off, data_len, buf_size);
    return 0;
}

/* ---- layouts and pipelines ---------------------------------------------------------------- */

int vkr_check_set_layout(const struct sbt_vk_rec *r)
{
    /* push descriptors (replay allocates sets instead) and update-after-bind pools; what needs
     * descriptor buffers, host-only pools or per-stage layouts is not replayed */
    uint64_t flags = sbt_vk_arg(r, 1);
    uint64_t known = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR |
                     VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT;
    if (r->call != SBT_VK_SET_LAYOUT || r->n_arg < 3)
        return BAD("SET_LAYOUT record expected (%u arguments)", r->n_arg);
    if (flags & ~known)
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "set layout %" PRIu64 ": create flags 0x%" PRIx64
                            " include bits replay does not support (0x%" PRIx64 ")",
                            sbt_vk_arg(r, 0), flags, flags & ~known);
    if ((flags & known) == known)
        return BAD("set layout %" PRIu64 ": push descriptors in an update-after-bind pool",
                   sbt_vk_arg(r, 0));
    return 0;
}

static int is_dynamic(uint64_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC ||
           t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
}

int vkr_check_set_binding(const struct sbt_vk_rec *r, uint64_t layout_flags)
{
    if (r->call != SBT_VK_SET_BINDING || r->n_arg < 3)
        return BAD("set layout: SET_BINDING record expected (%u arguments)", r->n_arg);
    uint64_t type = sbt_vk_arg(r, 1), count = sbt_vk_arg(r, 2), flags = sbt_vk_arg(r, 4);
    if (sbt_vk_arg(r, 0) > UINT32_MAX || type > UINT32_MAX || count > (1u << 20))
        return BAD("set layout binding %" PRIu64 ": type %" PRIu64 ", %" PRIu64 " descriptors",
                   sbt_vk_arg(r, 0), type, count);
    uint64_t known = VK_DESCRIPTOR_BINDING_UPDATE_AFTER_BIND_BIT |
                     VK_DESCRIPTOR_BINDING_UPDATE_UNUSED_WHILE_PENDING_BIT |
                     VK_DESCRIPTOR_BINDING_PARTIALLY_BOUND_BIT |
                     VK_DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT_BIT;
    if (flags & ~known)
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "set layout binding %" PRIu64 ": binding flags 0x%" PRIx64
                            " include bits replay does not support (0x%" PRIx64 ")",
                            sbt_vk_arg(r, 0), flags, flags & ~known);
    if ((flags & VK_DESCRIPTOR_BINDING_UPDATE_AFTER_BIND_BIT) &&
        !(layout_flags & VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT))
        return BAD("set layout binding %" PRIu64 ": update after bind in a layout without "
                   "UPDATE_AFTER_BIND_POOL",
                   sbt_vk_arg(r, 0));
    if (is_dynamic(type) && (flags & (VK_DESCRIPTOR_BINDING_UPDATE_AFTER_BIND_BIT |
                                      VK_DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT_BIT)))
        return BAD("set layout binding %" PRIu64 ": dynamic buffer descriptors cannot have "
                   "binding flags 0x%" PRIx64,
                   sbt_vk_arg(r, 0), flags);
    return 0;
}

int vkr_check_playout(const struct vkr_limits *l, const struct sbt_vk_rec *r, uint32_t max_sets)
{
    uint64_t ns = sbt_vk_arg(r, 2);
    if (ns > max_sets || ns > l->max_bound_sets)
        return replay__fail(REPLAY_ENODEV,
                            "pipeline layout %" PRIu64 " with %" PRIu64
                            " sets: this device's maxBoundDescriptorSets is %u (replay: %u)",
                            sbt_vk_arg(r, 0), ns, l->max_bound_sets, max_sets);
    uint64_t np = sbt_vk_arg(r, 3 + (uint32_t)ns);
    if (np > 32 || r->n_arg < 4 + ns + 3 * np)
        return BAD("pipeline layout %" PRIu64 ": %" PRIu64 " push constant ranges in %u "
                   "arguments",
                   sbt_vk_arg(r, 0), np, r->n_arg);
    for (uint32_t i = 0; i < np; i++) {
        uint64_t off = sbt_vk_arg(r, 5 + (uint32_t)ns + 3 * i),
                 size = sbt_vk_arg(r, 6 + (uint32_t)ns + 3 * i);
        if (off % 4 || size % 4 || !size || !in_range(off, size, UINT32_MAX))
            return BAD("pipeline layout %" PRIu64 ": push constant range [%" PRIu64 ", +%" PRIu64
                       ") (offset and size: nonzero multiples of 4)",
                       sbt_vk_arg(r, 0), off, size);
        if (off + size > l->max_push_constants)
            return replay__fail(REPLAY_ENODEV,
                                "pipeline layout %" PRIu64 ": push constants up to byte %" PRIu64
                                "; this device's maxPushConstantsSize is %u",
                                sbt_vk_arg(r, 0), off + size, l->max_push_constants);
    }
    return 0;
}

int vkr_check_pipeline(const struct vkr_limits *l, const struct sbt_vk_rec *p, uint32_t *out_flags)
{
    /* create flags (VkPipelineCreateFlags2 when the capture chained them: the same bits below
     * bit 32): those that change what the pipeline computes are passed on; those that only ask
     * for caching behaviour, statistics or derivatives are dropped (replay compiles every
     * pipeline afresh, without a cache); the rest need more than one create info, a library or
     * features replay does not rebuild */
    uint64_t flags = sbt_vk_arg(p, 12) ? sbt_vk_arg(p, 11) : sbt_vk_arg(p, 1);
    const uint64_t pass =
        VK_PIPELINE_CREATE_DISABLE_OPTIMIZATION_BIT | VK_PIPELINE_CREATE_DISPATCH_BASE_BIT;
    const uint64_t drop = VK_PIPELINE_CREATE_ALLOW_DERIVATIVES_BIT |
                          VK_PIPELINE_CREATE_DERIVATIVE_BIT |
                          VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT |
                          VK_PIPELINE_CREATE_EARLY_RETURN_ON_FAILURE_BIT |
                          VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR |
                          VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR |
                          0x08000000ull /* NO_PROTECTED_ACCESS: what unprotected replay does */ |
                          0x80000000ull /* CAPTURE_DATA (pipeline binaries): not used */;
    if (flags & ~(pass | drop))
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "pipeline %" PRIu64 ": create flags 0x%" PRIx64
                            " include bits replay does not support (0x%" PRIx64 ")",
                            sbt_vk_arg(p, 0), flags, flags & ~(pass | drop));
    *out_flags = (uint32_t)(flags & pass);
    if (sbt_vk_arg(p, 4) && sbt_vk_arg(p, 4) != VK_SHADER_STAGE_COMPUTE_BIT)
        return BAD("pipeline %" PRIu64 ": shader stage 0x%" PRIx64 " in a compute pipeline",
                   sbt_vk_arg(p, 0), sbt_vk_arg(p, 4));
    uint64_t req = sbt_vk_arg(p, 8), sflags = sbt_vk_arg(p, 10);
    const uint64_t vary = VK_PIPELINE_SHADER_STAGE_CREATE_ALLOW_VARYING_SUBGROUP_SIZE_BIT,
                   full = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    if (sflags & ~(vary | full))
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "pipeline %" PRIu64 ": shader stage create flags 0x%" PRIx64
                            " include bits replay does not support (0x%" PRIx64 ")",
                            sbt_vk_arg(p, 0), sflags, sflags & ~(vary | full));
    if (req && (req & (req - 1)))
        return BAD("pipeline %" PRIu64 ": required subgroup size %" PRIu64 " is not a power of two",
                   sbt_vk_arg(p, 0), req);
    if (req && (sflags & vary))
        return BAD("pipeline %" PRIu64 ": a required subgroup size with a varying one",
                   sbt_vk_arg(p, 0));
    if (req && (req < l->min_subgroup || req > l->max_subgroup))
        return replay__fail(REPLAY_ENODEV,
                            "pipeline %" PRIu64 ": required subgroup size %" PRIu64
                            "; this device offers %u..%u%s",
                            sbt_vk_arg(p, 0), req, l->min_subgroup, l->max_subgroup,
                            l->max_subgroup ? "" : " (no subgroupSizeControl)");
    for (int i = 0; i < 3; i++)
        if (sbt_vk_arg(p, 5 + (uint32_t)i) > l->max_group_size[i])
            return replay__fail(REPLAY_ENODEV,
                                "pipeline %" PRIu64 ": workgroup size %" PRIu64
                                " on axis %d exceeds this device's maxComputeWorkGroupSize[%d] = "
                                "%u",
                                sbt_vk_arg(p, 0), sbt_vk_arg(p, 5 + (uint32_t)i), i, i,
                                l->max_group_size[i]);
    uint64_t inv = sbt_vk_arg(p, 5) * sbt_vk_arg(p, 6) * sbt_vk_arg(p, 7);
    if (inv > l->max_invocations)
        return replay__fail(REPLAY_ENODEV,
                            "pipeline %" PRIu64 ": %" PRIu64 " invocations per workgroup; this "
                            "device's maxComputeWorkGroupInvocations is %u",
                            sbt_vk_arg(p, 0), inv, l->max_invocations);
    /* full subgroups: the workgroup's x size must be a multiple of the subgroup size the
     * pipeline will run with on this device (it may differ from the capture's) */
    if (sflags & full) {
        uint64_t sg = req ? req : (sflags & vary) ? l->max_subgroup : l->subgroup_size;
        const char *what = req               ? "its required subgroup size"
                           : (sflags & vary) ? "this device's maxSubgroupSize"
                                             : "this device's subgroupSize";
        if (sg && sbt_vk_arg(p, 5) % sg)
            return replay__fail(REPLAY_ENODEV,
                                "pipeline %" PRIu64
                                " requires full subgroups: its workgroup size x "
                                "= %" PRIu64 " is not a multiple of %s (%" PRIu64 ")",
                                sbt_vk_arg(p, 0), sbt_vk_arg(p, 5), what, sg);
    }
    return 0;
}

int vkr_check_spec_entry(const struct sbt_vk_rec *r, uint32_t data_len)
{
    uint64_t off = sbt_vk_arg(r, 1), size = sbt_vk_arg(r, 2);
    if (r->n_arg < 3 || sbt_vk_arg(r, 0) > UINT32_MAX || !size || size > 8 ||
        !in_range(off, size, data_len))
        return BAD("specialization constant %" PRIu64 ": [%" PRIu64 ", +%" PRIu64
                   ") outside its %u bytes of data",
                   sbt_vk_arg(r, 0), off, size, data_len);
    return 0;
}

int vkr_check_spirv(const void *code, size_t len)
{
    uint32_t magic = 0;
    if (len >= 4)
        memcpy(&magic, code, 4);
    if (len < 20 || len % 4 || magic != 0x07230203u)
        return BAD("SPIR-V module of %zu bytes (needs a multiple of 4, at least the 5-word "
                   "header, magic 0x07230203; found 0x%08x)",
                   len, magic);
    return 0;
}

/* ---- memory and buffers ------------------------------------------------------------------- */

int vkr_check_buffer(const struct sbt_vk_rec *r)
{
    if (!sbt_vk_arg(r, 0) || !sbt_vk_arg(r, 1))
        return BAD("buffer %" PRIu64 " of %" PRIu64 " bytes (id and size must be nonzero)",
                   sbt_vk_arg(r, 0), sbt_vk_arg(r, 1));
    if (sbt_vk_arg(r, 3) > UINT32_MAX)
        return BAD("buffer %" PRIu64 ": usage 0x%" PRIx64 ", flags 0x%" PRIx64, sbt_vk_arg(r, 0),
                   sbt_vk_arg(r, 2), sbt_vk_arg(r, 3));
    if (sbt_vk_arg(r, 2) > UINT32_MAX) /* VkBufferUsageFlags2 (maintenance5) past 32 bits */
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "buffer %" PRIu64 ": usage 0x%" PRIx64
                            " includes bits past VkBufferUsageFlags",
                            sbt_vk_arg(r, 0), sbt_vk_arg(r, 2));
    return 0;
}

int vkr_check_view(const struct vkr_limits *l, const struct sbt_vk_rec *r, uint64_t buf_size)
{
    uint64_t off = sbt_vk_arg(r, 3), range = sbt_vk_arg(r, 4);
    if (range == VK_WHOLE_SIZE && off <= buf_size)
        range = buf_size - off;
    if (sbt_vk_arg(r, 2) > INT32_MAX || !range || !in_range(off, range, buf_size))
        return BAD("buffer view %" PRIu64 ": format %" PRIu64 ", [%" PRIu64 ", +%" PRIu64
                   ") of a buffer of %" PRIu64 " bytes",
                   sbt_vk_arg(r, 0), sbt_vk_arg(r, 2), off, range, buf_size);
    if (l->texel_align && off % l->texel_align)
        return replay__fail(REPLAY_ENODEV,
                            "buffer view %" PRIu64 " at offset %" PRIu64
                            ": this device's minTexelBufferOffsetAlignment is %" PRIu64,
                            sbt_vk_arg(r, 0), off, l->texel_align);
    return 0;
}

int vkr_check_access(const struct sbt_access *a, uint64_t mem_size, uint64_t seq)
{
    if (!in_range(a->offset, a->len, mem_size))
        return BAD("op %" PRIu64 ": access [%" PRIu64 ", +%" PRIu64 ") of memory %" PRIu64
                   " outside its %" PRIu64 " bytes",
                   seq, a->offset, a->len, a->resource, mem_size);
    return 0;
}
