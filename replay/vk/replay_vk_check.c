/*
 * replay/vk/replay_vk_check.c — every value a trace gives the Vulkan backend is checked here
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

#include "replay/vk/replay_vk_int.h"

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

int vkr_check_features(const struct sbt_payload_rec *r, const struct sbt_vk_feature_struct **out)
{
    uint64_t stype = sbt_payload_arg(r, 0), n = sbt_payload_arg(r, 1);
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
    if (n < t->n || n > t->n + 1 || r->n_arg < 2 + n || (n > t->n && sbt_payload_arg(r, 2 + t->n)))
        return BAD("device row: FEATURES record of %s gives %" PRIu64
                   " members in %u arguments; the structure has %u",
                   t->name, n, r->n_arg, t->n);
    return 0;
}

/* ---- command payloads --------------------------------------------------------------------- */

int vkr_check_dispatch(const struct vkr_limits *l, const struct sbt_payload_rec *d)
{
    if (d->call != SBT_VK_DISPATCH)
        return BAD("DISPATCH expected, record %u found", d->call);
    static const char axis[] = "xyz";
    for (int i = 0; i < 3; i++) {
        uint64_t base = sbt_payload_arg(d, 2 + (uint32_t)i),
                 n = sbt_payload_arg(d, 5 + (uint32_t)i);
        if (base > UINT32_MAX || n > UINT32_MAX)
            return BAD("dispatch base %" PRIu64 " / group count %" PRIu64 " on %c is not a 32-bit "
                       "value",
                       base, n, axis[i]);
        if (!sbt_payload_arg(d, 8) && base + n > l->max_group_count[i])
            return replay__fail(REPLAY_ENODEV,
                                "dispatch of groups %" PRIu64 "..%" PRIu64 " on %c exceeds this "
                                "device's maxComputeWorkGroupCount[%d] = %u",
                                base, base + n, axis[i], i, l->max_group_count[i]);
    }
    if (sbt_payload_arg(d, 8) && sbt_payload_arg(d, 9) % 4)
        return BAD("indirect dispatch at offset %" PRIu64 ", not a multiple of 4",
                   sbt_payload_arg(d, 9));
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

int vkr_check_binding(const struct vkr_limits *l, const struct sbt_payload_rec *r,
                      uint64_t buf_size)
{
    if (r->n_arg < 8)
        return BAD("BINDING record with %u arguments (needs 8)", r->n_arg);
    uint32_t type = (uint32_t)sbt_payload_arg(r, 3);
    uint64_t off = sbt_payload_arg(r, 6), range = sbt_payload_arg(r, 7);
    if (sbt_payload_arg(r, 3) > UINT32_MAX ||
        !(is_storage(type) || is_uniform(type) || vkr_is_texel(type)))
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "binding of set %" PRIu64 " binding %" PRIu64
                            ": descriptor type %" PRIu64 " is not a buffer type replay supports",
                            sbt_payload_arg(r, 0), sbt_payload_arg(r, 1), sbt_payload_arg(r, 3));
    if (!range || !in_range(off, range, buf_size))
        return BAD("binding of set %" PRIu64 " binding %" PRIu64 ": range [%" PRIu64 ", +%" PRIu64
                   ") outside its buffer of %" PRIu64 " bytes",
                   sbt_payload_arg(r, 0), sbt_payload_arg(r, 1), off, range, buf_size);
    if (vkr_is_texel(type))
        return 0; /* the view holds the range: checked when it was made */
    uint64_t align = is_storage(type) ? l->storage_align : l->uniform_align;
    uint64_t max = is_storage(type) ? l->max_storage_range : l->max_uniform_range;
    if (align && off % align)
        return replay__fail(REPLAY_ENODEV,
                            "binding of set %" PRIu64 " binding %" PRIu64
                            " at buffer offset %" PRIu64
                            ": this device needs %s offsets aligned to %" PRIu64,
                            sbt_payload_arg(r, 0), sbt_payload_arg(r, 1), off,
                            is_storage(type) ? "minStorageBufferOffsetAlignment"
                                             : "minUniformBufferOffsetAlignment",
                            align);
    if (range > max)
        return replay__fail(REPLAY_ENODEV,
                            "binding of set %" PRIu64 " binding %" PRIu64 " spans %" PRIu64
                            " bytes: this device's %s is %" PRIu64,
                            sbt_payload_arg(r, 0), sbt_payload_arg(r, 1), range,
                            is_storage(type) ? "maxStorageBufferRange" : "maxUniformBufferRange",
                            max);
    return 0;
}

int vkr_check_copy(const struct sbt_payload_rec *r, uint64_t src_size, uint64_t dst_size,
                   uint32_t *n_regions)
{
    uint64_t n = sbt_payload_arg(r, 2);
    if (r->n_arg < 3 || n > (r->n_arg - 3) / 3)
        return BAD("COPY_BUFFER record of %" PRIu64 " regions in %u arguments", n, r->n_arg);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t so = sbt_payload_arg(r, 3 + 3 * (uint32_t)i),
                 dof = sbt_payload_arg(r, 4 + 3 * (uint32_t)i),
                 sz = sbt_payload_arg(r, 5 + 3 * (uint32_t)i);
        if (!in_range(so, sz, src_size) || !in_range(dof, sz, dst_size))
            return BAD("copy region %" PRIu64 " [%" PRIu64 ", +%" PRIu64 ") -> [%" PRIu64
                       ", +%" PRIu64 ") outside its buffers (%" PRIu64 " and %" PRIu64 " bytes)",
                       i, so, sz, dof, sz, src_size, dst_size);
        if (sbt_payload_arg(r, 0) == sbt_payload_arg(r, 1) && sz && so < dof + sz && dof < so + sz)
            return BAD("copy region %" PRIu64 " overlaps itself in buffer %" PRIu64, i,
                       sbt_payload_arg(r, 0));
    }
    *n_regions = (uint32_t)n;
    return 0;
}

int vkr_check_fill(const struct sbt_payload_rec *r, uint64_t buf_size)
{
    uint64_t off = sbt_payload_arg(r, 1), size = sbt_payload_arg(r, 2);
    if (off % 4 || size % 4 || !in_range(off, size, buf_size))
        return BAD("fill of [%" PRIu64 ", +%" PRIu64 ") in a buffer of %" PRIu64
                   " bytes (offset and size must be multiples of 4 and inside it)",
                   off, size, buf_size);
    return 0;
}

int vkr_check_update(const struct sbt_payload_rec *r, uint64_t data_len, uint64_t buf_size)
{
    uint64_t off = sbt_payload_arg(r, 1), size = sbt_payload_arg(r, 2);
    if (r->n_arg >= 3 && size != data_len)
        return BAD("update of %" PRIu64 " bytes with %" PRIu64 " bytes of data", size, data_len);
    if (off % 4 || data_len % 4 || !in_range(off, data_len, buf_size))
        return BAD("update of [%" PRIu64 ", +%" PRIu64 ") in a buffer of %" PRIu64
                   " bytes (offset and size must be multiples of 4 and inside it)",
                   off, data_len, buf_size);
    return 0;
}

/* ---- layouts and pipelines ---------------------------------------------------------------- */

int vkr_check_set_layout(const struct sbt_payload_rec *r)
{
    /* push descriptors (replay allocates sets instead) and update-after-bind pools; what needs
     * descriptor buffers, host-only pools or per-stage layouts is not replayed */
    uint64_t flags = sbt_payload_arg(r, 1);
    uint64_t known = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR |
                     VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT;
    if (r->call != SBT_VK_SET_LAYOUT || r->n_arg < 3)
        return BAD("SET_LAYOUT record expected (%u arguments)", r->n_arg);
    if (flags & ~known)
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "set layout %" PRIu64 ": create flags 0x%" PRIx64
                            " include bits replay does not support (0x%" PRIx64 ")",
                            sbt_payload_arg(r, 0), flags, flags & ~known);
    if ((flags & known) == known)
        return BAD("set layout %" PRIu64 ": push descriptors in an update-after-bind pool",
                   sbt_payload_arg(r, 0));
    return 0;
}

static int is_dynamic(uint64_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC ||
           t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
}

int vkr_check_set_binding(const struct sbt_payload_rec *r, uint64_t layout_flags)
{
    if (r->call != SBT_VK_SET_BINDING || r->n_arg < 3)
        return BAD("set layout: SET_BINDING record expected (%u arguments)", r->n_arg);
    uint64_t type = sbt_payload_arg(r, 1), count = sbt_payload_arg(r, 2),
             flags = sbt_payload_arg(r, 4);
    if (sbt_payload_arg(r, 0) > UINT32_MAX || type > UINT32_MAX || count > (1u << 20))
        return BAD("set layout binding %" PRIu64 ": type %" PRIu64 ", %" PRIu64 " descriptors",
                   sbt_payload_arg(r, 0), type, count);
    if (type > VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC) /* what replay_vk_cmd.c's pools hold */
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "set layout binding %" PRIu64 ": descriptor type %" PRIu64
                            " (inline uniform blocks, acceleration structures and other types "
                            "are not replayed)",
                            sbt_payload_arg(r, 0), type);
    uint64_t known = VK_DESCRIPTOR_BINDING_UPDATE_AFTER_BIND_BIT |
                     VK_DESCRIPTOR_BINDING_UPDATE_UNUSED_WHILE_PENDING_BIT |
                     VK_DESCRIPTOR_BINDING_PARTIALLY_BOUND_BIT |
                     VK_DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT_BIT;
    if (flags & ~known)
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "set layout binding %" PRIu64 ": binding flags 0x%" PRIx64
                            " include bits replay does not support (0x%" PRIx64 ")",
                            sbt_payload_arg(r, 0), flags, flags & ~known);
    if ((flags & VK_DESCRIPTOR_BINDING_UPDATE_AFTER_BIND_BIT) &&
        !(layout_flags & VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT))
        return BAD("set layout binding %" PRIu64 ": update after bind in a layout without "
                   "UPDATE_AFTER_BIND_POOL",
                   sbt_payload_arg(r, 0));
    if (is_dynamic(type) && (flags & (VK_DESCRIPTOR_BINDING_UPDATE_AFTER_BIND_BIT |
                                      VK_DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT_BIT)))
        return BAD("set layout binding %" PRIu64 ": dynamic buffer descriptors cannot have "
                   "binding flags 0x%" PRIx64,
                   sbt_payload_arg(r, 0), flags);
    return 0;
}

int vkr_check_playout(const struct vkr_limits *l, const struct sbt_payload_rec *r,
                      uint32_t max_sets)
{
    uint64_t ns = sbt_payload_arg(r, 2);
    if (ns > max_sets || ns > l->max_bound_sets)
        return replay__fail(REPLAY_ENODEV,
                            "pipeline layout %" PRIu64 " with %" PRIu64
                            " sets: this device's maxBoundDescriptorSets is %u (replay: %u)",
                            sbt_payload_arg(r, 0), ns, l->max_bound_sets, max_sets);
    uint64_t np = sbt_payload_arg(r, 3 + (uint32_t)ns);
    if (np > 32 || r->n_arg < 4 + ns + 3 * np)
        return BAD("pipeline layout %" PRIu64 ": %" PRIu64 " push constant ranges in %u "
                   "arguments",
                   sbt_payload_arg(r, 0), np, r->n_arg);
    for (uint32_t i = 0; i < np; i++) {
        uint64_t stages = sbt_payload_arg(r, 4 + (uint32_t)ns + 3 * i),
                 off = sbt_payload_arg(r, 5 + (uint32_t)ns + 3 * i),
                 size = sbt_payload_arg(r, 6 + (uint32_t)ns + 3 * i);
        if (!stages || stages > VK_SHADER_STAGE_ALL)
            return BAD("pipeline layout %" PRIu64 ": push constant stage flags 0x%" PRIx64,
                       sbt_payload_arg(r, 0), stages);
        if (off % 4 || size % 4 || !size || !in_range(off, size, UINT32_MAX))
            return BAD("pipeline layout %" PRIu64 ": push constant range [%" PRIu64 ", +%" PRIu64
                       ") (offset and size: nonzero multiples of 4)",
                       sbt_payload_arg(r, 0), off, size);
        if (off + size > l->max_push_constants)
            return replay__fail(REPLAY_ENODEV,
                                "pipeline layout %" PRIu64 ": push constants up to byte %" PRIu64
                                "; this device's maxPushConstantsSize is %u",
                                sbt_payload_arg(r, 0), off + size, l->max_push_constants);
    }
    return 0;
}

int vkr_check_pipeline(const struct vkr_limits *l, const struct sbt_payload_rec *p,
                       uint32_t *out_flags)
{
    /* create flags (VkPipelineCreateFlags2 when the capture chained them: the same bits below
     * bit 32): those that change what the pipeline computes are passed on; those that only ask
     * for caching behaviour, statistics or derivatives are dropped (replay compiles every
     * pipeline afresh, without a cache); the rest need more than one create info, a library or
     * features replay does not rebuild */
    uint64_t flags = sbt_payload_arg(p, 12) ? sbt_payload_arg(p, 11) : sbt_payload_arg(p, 1);
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
                            sbt_payload_arg(p, 0), flags, flags & ~(pass | drop));
    *out_flags = (uint32_t)(flags & pass);
    if (sbt_payload_arg(p, 4) && sbt_payload_arg(p, 4) != VK_SHADER_STAGE_COMPUTE_BIT)
        return BAD("pipeline %" PRIu64 ": shader stage 0x%" PRIx64 " in a compute pipeline",
                   sbt_payload_arg(p, 0), sbt_payload_arg(p, 4));
    uint64_t req = sbt_payload_arg(p, 8), sflags = sbt_payload_arg(p, 10);
    const uint64_t vary = VK_PIPELINE_SHADER_STAGE_CREATE_ALLOW_VARYING_SUBGROUP_SIZE_BIT,
                   full = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    if (sflags & ~(vary | full))
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "pipeline %" PRIu64 ": shader stage create flags 0x%" PRIx64
                            " include bits replay does not support (0x%" PRIx64 ")",
                            sbt_payload_arg(p, 0), sflags, sflags & ~(vary | full));
    if (req && (req & (req - 1)))
        return BAD("pipeline %" PRIu64 ": required subgroup size %" PRIu64 " is not a power of two",
                   sbt_payload_arg(p, 0), req);
    if (req && (sflags & vary))
        return BAD("pipeline %" PRIu64 ": a required subgroup size with a varying one",
                   sbt_payload_arg(p, 0));
    if (req && (req < l->min_subgroup || req > l->max_subgroup))
        return replay__fail(REPLAY_ENODEV,
                            "pipeline %" PRIu64 ": required subgroup size %" PRIu64
                            "; this device offers %u..%u%s",
                            sbt_payload_arg(p, 0), req, l->min_subgroup, l->max_subgroup,
                            l->max_subgroup ? "" : " (no subgroupSizeControl)");
    for (int i = 0; i < 3; i++)
        if (sbt_payload_arg(p, 5 + (uint32_t)i) > l->max_group_size[i])
            return replay__fail(REPLAY_ENODEV,
                                "pipeline %" PRIu64 ": workgroup size %" PRIu64
                                " on axis %d exceeds this device's maxComputeWorkGroupSize[%d] = "
                                "%u",
                                sbt_payload_arg(p, 0), sbt_payload_arg(p, 5 + (uint32_t)i), i, i,
                                l->max_group_size[i]);
    uint64_t inv = sbt_payload_arg(p, 5) * sbt_payload_arg(p, 6) * sbt_payload_arg(p, 7);
    if (inv > l->max_invocations)
        return replay__fail(REPLAY_ENODEV,
                            "pipeline %" PRIu64 ": %" PRIu64 " invocations per workgroup; this "
                            "device's maxComputeWorkGroupInvocations is %u",
                            sbt_payload_arg(p, 0), inv, l->max_invocations);
    /* full subgroups: the workgroup's x size must be a multiple of the subgroup size the
     * pipeline will run with on this device (it may differ from the capture's) */
    if (sflags & full) {
        uint64_t sg = req ? req : (sflags & vary) ? l->max_subgroup : l->subgroup_size;
        const char *what = req               ? "its required subgroup size"
                           : (sflags & vary) ? "this device's maxSubgroupSize"
                                             : "this device's subgroupSize";
        if (sg && sbt_payload_arg(p, 5) % sg)
            return replay__fail(REPLAY_ENODEV,
                                "pipeline %" PRIu64
                                " requires full subgroups: its workgroup size x "
                                "= %" PRIu64 " is not a multiple of %s (%" PRIu64 ")",
                                sbt_payload_arg(p, 0), sbt_payload_arg(p, 5), what, sg);
    }
    return 0;
}

int vkr_check_spec_entry(const struct sbt_payload_rec *r, uint32_t data_len)
{
    uint64_t off = sbt_payload_arg(r, 1), size = sbt_payload_arg(r, 2);
    if (r->n_arg < 3 || sbt_payload_arg(r, 0) > UINT32_MAX || !size || size > 8 ||
        !in_range(off, size, data_len))
        return BAD("specialization constant %" PRIu64 ": [%" PRIu64 ", +%" PRIu64
                   ") outside its %u bytes of data",
                   sbt_payload_arg(r, 0), off, size, data_len);
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

int vkr_spirv_capabilities(const void *code, size_t len, void (*fn)(void *ctx, uint32_t cap),
                           void *ctx)
{
    /* OpCapability (17): word count 2, the capability */
    const uint8_t *p = code;
    size_t n = len / 4;
    for (size_t i = 5; i < n;) {
        uint32_t w0, w1 = 0;
        memcpy(&w0, p + i * 4, 4);
        uint32_t wc = w0 >> 16;
        if (!wc || wc > n - i)
            return -1;
        if ((w0 & 0xffff) == 17 && wc >= 2) {
            memcpy(&w1, p + (i + 1) * 4, 4);
            fn(ctx, w1);
        }
        i += wc;
    }
    return 0;
}

int vkr_spirv_reads_numwg(const void *code, size_t len)
{
    /* instructions after the 5-word header: word 0 = word count << 16 | opcode;
     * OpDecorate (71) target BuiltIn(11) b, OpMemberDecorate (72) type member BuiltIn(11) b */
    const uint8_t *p = code;
    size_t n = len / 4;
    for (size_t i = 5; i < n;) {
        uint32_t w[5] = {0};
        memcpy(&w[0], p + i * 4, 4);
        uint32_t wc = w[0] >> 16, opc = w[0] & 0xffff;
        if (!wc || wc > n - i)
            return -1;
        for (uint32_t k = 1; k < wc && k < 5; k++)
            memcpy(&w[k], p + (i + k) * 4, 4);
        if (opc == 71 && wc >= 4 && w[2] == 11 && w[3] == 24)
            return 1;
        if (opc == 72 && wc >= 5 && w[3] == 11 && w[4] == 24)
            return 1;
        i += wc;
    }
    return 0;
}

/* ---- memory and buffers ------------------------------------------------------------------- */

int vkr_check_buffer(const struct sbt_payload_rec *r)
{
    if (!sbt_payload_arg(r, 0) || !sbt_payload_arg(r, 1))
        return BAD("buffer %" PRIu64 " of %" PRIu64 " bytes (id and size must be nonzero)",
                   sbt_payload_arg(r, 0), sbt_payload_arg(r, 1));
    if (sbt_payload_arg(r, 3) > UINT32_MAX)
        return BAD("buffer %" PRIu64 ": usage 0x%" PRIx64 ", flags 0x%" PRIx64,
                   sbt_payload_arg(r, 0), sbt_payload_arg(r, 2), sbt_payload_arg(r, 3));
    if (sbt_payload_arg(r, 2) > UINT32_MAX) /* VkBufferUsageFlags2 (maintenance5) past 32 bits */
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "buffer %" PRIu64 ": usage 0x%" PRIx64
                            " includes bits past VkBufferUsageFlags",
                            sbt_payload_arg(r, 0), sbt_payload_arg(r, 2));
    return 0;
}

int vkr_check_view(const struct vkr_limits *l, const struct sbt_payload_rec *r, uint64_t buf_size)
{
    uint64_t off = sbt_payload_arg(r, 3), range = sbt_payload_arg(r, 4);
    if (range == VK_WHOLE_SIZE && off <= buf_size)
        range = buf_size - off;
    if (sbt_payload_arg(r, 2) > INT32_MAX || !sbt_vk_format((uint32_t)sbt_payload_arg(r, 2)) ||
        !range || !in_range(off, range, buf_size))
        return BAD("buffer view %" PRIu64 ": format %" PRIu64
                   " (one the registry describes), [%" PRIu64 ", +%" PRIu64
                   ") of a buffer of %" PRIu64 " bytes",
                   sbt_payload_arg(r, 0), sbt_payload_arg(r, 2), off, range, buf_size);
    uint32_t texel = sbt_vk_format((uint32_t)sbt_payload_arg(r, 2))->block_bytes;
    if (l->max_texel_elements && texel && range / texel > l->max_texel_elements)
        return replay__fail(REPLAY_ENODEV,
                            "buffer view %" PRIu64 ": %" PRIu64
                            " texels; this device's maxTexelBufferElements is %u",
                            sbt_payload_arg(r, 0), range / texel, l->max_texel_elements);
    if (l->texel_align && off % l->texel_align)
        return replay__fail(REPLAY_ENODEV,
                            "buffer view %" PRIu64 " at offset %" PRIu64
                            ": this device's minTexelBufferOffsetAlignment is %" PRIu64,
                            sbt_payload_arg(r, 0), off, l->texel_align);
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

/* ---- images ------------------------------------------------------------------------------- */

#define ASPECT_COLOR VK_IMAGE_ASPECT_COLOR_BIT
#define ASPECT_PLANES \
    (VK_IMAGE_ASPECT_PLANE_0_BIT | VK_IMAGE_ASPECT_PLANE_1_BIT | VK_IMAGE_ASPECT_PLANE_2_BIT)

static int one_bit(uint64_t v)
{
    return v && !(v & (v - 1));
}

int vkr_check_image(const struct sbt_payload_rec *r, struct sbt_vk_image *desc, uint64_t *size)
{
    if (r->n_arg < 16)
        return BAD("CREATE_IMAGE record with %u arguments (needs 16)", r->n_arg);
    uint64_t id = sbt_payload_arg(r, 0), flags = sbt_payload_arg(r, 1);
    if (!id)
        return BAD("image with capture id 0");
    for (uint32_t i = 1; i < 14; i++)
        if (sbt_payload_arg(r, i) > UINT32_MAX)
            return BAD("image %" PRIu64 ": argument %u is %" PRIu64 " (not a 32-bit value)", id, i,
                       sbt_payload_arg(r, i));
    if (flags & (VK_IMAGE_CREATE_SPARSE_BINDING_BIT | VK_IMAGE_CREATE_SPARSE_RESIDENCY_BIT |
                 VK_IMAGE_CREATE_SPARSE_ALIASED_BIT | VK_IMAGE_CREATE_DISJOINT_BIT))
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "image %" PRIu64 ": create flags 0x%" PRIx64
                            " (sparse or disjoint images are not replayed)",
                            id, flags);
    if (sbt_payload_arg(r, 9) != VK_SAMPLE_COUNT_1_BIT)
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "image %" PRIu64 ": %" PRIu64 " samples (multisampled images are not "
                            "replayed)",
                            id, sbt_payload_arg(r, 9));
    if (sbt_payload_arg(r, 10) > VK_IMAGE_TILING_LINEAR)
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "image %" PRIu64 ": tiling %" PRIu64 " (optimal and linear only)", id,
                            sbt_payload_arg(r, 10));
    *desc = (struct sbt_vk_image){(uint32_t)sbt_payload_arg(r, 3),
                                  (uint32_t)sbt_payload_arg(r, 2),
                                  {(uint32_t)sbt_payload_arg(r, 4), (uint32_t)sbt_payload_arg(r, 5),
                                   (uint32_t)sbt_payload_arg(r, 6)},
                                  (uint32_t)sbt_payload_arg(r, 7),
                                  (uint32_t)sbt_payload_arg(r, 8)};
    if (sbt_vk_image_check(desc, size) < 0)
        return BAD("image %" PRIu64 ": %s", id, sbt_errmsg());
    if (*size != sbt_payload_arg(r, 14))
        return BAD("image %" PRIu64 ": its packed size is %" PRIu64
                   " bytes, the record says %" PRIu64,
                   id, *size, sbt_payload_arg(r, 14));
    /* then queue families (count, list), view formats (count, list), stencil usage; a shorter
     * record has no format list */
    uint64_t nf = sbt_payload_arg(r, 16),
             nv = nf > r->n_arg ? 0 : sbt_payload_arg(r, 17 + (uint32_t)nf);
    if (nf > r->n_arg || nv > 64 || r->n_arg < 18 + nf + nv)
        return 0;
    for (uint64_t i = 0; i < nv; i++) {
        uint64_t vf = sbt_payload_arg(r, (uint32_t)(18 + nf + i));
        if (vf > UINT32_MAX || !sbt_vk_format((uint32_t)vf))
            return BAD("image %" PRIu64 ": view format %" PRIu64
                       " is not one this build's registry describes",
                       id, vf);
    }
    if (sbt_payload_arg(r, (uint32_t)(18 + nf + nv)) > UINT32_MAX)
        return BAD("image %" PRIu64 ": stencil usage 0x%" PRIx64, id,
                   sbt_payload_arg(r, (uint32_t)(18 + nf + nv)));
    return 0;
}

/* The layers a view of an image may address: a 3D image's 2D views address the slices of
 * their level. */
static uint64_t view_layers(const struct sbt_vk_image *im, uint64_t view_type, uint64_t mip)
{
    if (im->type == VK_IMAGE_TYPE_3D && view_type != VK_IMAGE_VIEW_TYPE_3D)
        return mip < 32 && (im->extent[2] >> mip) ? im->extent[2] >> mip : 1;
    return im->layers;
}

int vkr_check_image_view(const struct sbt_payload_rec *r, const struct sbt_vk_image *im,
                         uint32_t im_flags)
{
    if (r->n_arg < 14)
        return BAD("CREATE_IMAGE_VIEW record with %u arguments (needs 14)", r->n_arg);
    uint64_t id = sbt_payload_arg(r, 0), vt = sbt_payload_arg(r, 3), fmt = sbt_payload_arg(r, 4);
    uint64_t aspect = sbt_payload_arg(r, 9), mip = sbt_payload_arg(r, 10),
             nm = sbt_payload_arg(r, 11);
    uint64_t layer = sbt_payload_arg(r, 12), nl = sbt_payload_arg(r, 13);
    for (uint32_t i = 5; i < 9; i++)
        if (sbt_payload_arg(r, i) > VK_COMPONENT_SWIZZLE_A)
            return BAD("image view %" PRIu64 ": component swizzle %" PRIu64, id,
                       sbt_payload_arg(r, i));
    static const uint8_t ok_types[3][7] = {
        {1, 0, 0, 0, 1, 0, 0}, /* 1D image: 1D, 1D array */
        {0, 1, 0, 1, 0, 1, 1}, /* 2D: 2D, cube, 2D array, cube array */
        {0, 1, 1, 0, 0, 1, 0}, /* 3D: 3D; 2D and 2D array when 2D_ARRAY_COMPATIBLE */
    };
    if (vt > VK_IMAGE_VIEW_TYPE_CUBE_ARRAY || !ok_types[im->type][vt] ||
        (im->type == VK_IMAGE_TYPE_3D && vt != VK_IMAGE_VIEW_TYPE_3D &&
         !(im_flags & VK_IMAGE_CREATE_2D_ARRAY_COMPATIBLE_BIT)) ||
        ((vt == VK_IMAGE_VIEW_TYPE_CUBE || vt == VK_IMAGE_VIEW_TYPE_CUBE_ARRAY) &&
         (!(im_flags & VK_IMAGE_CREATE_CUBE_COMPATIBLE_BIT) || nl % 6)))
        return BAD("image view %" PRIu64 ": view type %" PRIu64
                   " of a %uD image (flags 0x%x, %" PRIu64 " layers)",
                   id, vt, im->type + 1, im_flags, nl);
    const struct sbt_vk_format *f = fmt <= UINT32_MAX ? sbt_vk_format((uint32_t)fmt) : NULL;
    const struct sbt_vk_format *imf = sbt_vk_format(im->format);
    uint32_t aspects = sbt_vk_format_aspects(im->format);
    if (!f || !imf)
        return BAD("image view %" PRIu64 ": format %" PRIu64 " is not one this build's registry "
                   "describes",
                   id, fmt);
    int planar = (aspects & ASPECT_PLANES) != 0;
    if (fmt != im->format && !(im_flags & VK_IMAGE_CREATE_MUTABLE_FORMAT_BIT))
        return BAD("image view %" PRIu64 ": format %" PRIu64
                   " of an image of format %u that is not "
                   "mutable",
                   id, fmt, im->format);
    if (fmt != im->format && !planar &&
        !(im_flags & VK_IMAGE_CREATE_BLOCK_TEXEL_VIEW_COMPATIBLE_BIT) &&
        (f->block_bytes != imf->block_bytes || memcmp(f->block, imf->block, 3)))
        return BAD("image view %" PRIu64 ": format %s is not size-compatible with the image's %s",
                   id, f->name, imf->name);
    if (!aspect || (aspect & ~(uint64_t)aspects && !(planar && aspect == ASPECT_COLOR)))
        return BAD("image view %" PRIu64 ": aspects 0x%" PRIx64 " of an image with aspects 0x%x",
                   id, aspect, aspects);
    if (!nm || mip >= im->mips || nm > im->mips - mip)
        return BAD("image view %" PRIu64 ": levels %" PRIu64 "..+%" PRIu64 " of an image with %u",
                   id, mip, nm, im->mips);
    uint64_t layers = view_layers(im, vt, mip);
    if (!nl || layer >= layers || nl > layers - layer ||
        ((vt == VK_IMAGE_VIEW_TYPE_1D || vt == VK_IMAGE_VIEW_TYPE_2D ||
          vt == VK_IMAGE_VIEW_TYPE_3D) &&
         nl != 1) ||
        (vt == VK_IMAGE_VIEW_TYPE_CUBE && nl != 6))
        return BAD("image view %" PRIu64 ": layers %" PRIu64 "..+%" PRIu64
                   " of an image with %" PRIu64 " (view type %" PRIu64 ")",
                   id, layer, nl, layers, vt);
    if (sbt_payload_arg(r, 2) > UINT32_MAX || sbt_payload_arg(r, 14) > UINT32_MAX)
        return BAD("image view %" PRIu64 ": flags 0x%" PRIx64 ", usage 0x%" PRIx64, id,
                   sbt_payload_arg(r, 2), sbt_payload_arg(r, 14));
    return 0;
}

static int finite_bits(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, sizeof f);
    return v <= UINT32_MAX && f == f && f <= 3.4e38f && f >= -3.4e38f;
}

float vkr_float_of(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

int vkr_check_sampler(const struct sbt_payload_rec *r, float max_anisotropy)
{
    if (r->n_arg < 17)
        return BAD("CREATE_SAMPLER record with %u arguments (needs 17)", r->n_arg);
    uint64_t id = sbt_payload_arg(r, 0);
    uint64_t mag = sbt_payload_arg(r, 2), min = sbt_payload_arg(r, 3), mm = sbt_payload_arg(r, 4);
    uint64_t border = sbt_payload_arg(r, 15), unnorm = sbt_payload_arg(r, 16),
             red = sbt_payload_arg(r, 17);
    for (uint32_t i = 2; i < 4; i++)
        if (sbt_payload_arg(r, i) > VK_FILTER_LINEAR &&
            sbt_payload_arg(r, i) != VK_FILTER_CUBIC_EXT)
            return BAD("sampler %" PRIu64 ": filter %" PRIu64, id, sbt_payload_arg(r, i));
    if (mm > VK_SAMPLER_MIPMAP_MODE_LINEAR)
        return BAD("sampler %" PRIu64 ": mipmap mode %" PRIu64, id, mm);
    for (uint32_t i = 5; i < 8; i++)
        if (sbt_payload_arg(r, i) > VK_SAMPLER_ADDRESS_MODE_MIRROR_CLAMP_TO_EDGE)
            return BAD("sampler %" PRIu64 ": address mode %" PRIu64, id, sbt_payload_arg(r, i));
    if (!finite_bits(sbt_payload_arg(r, 8)) || !finite_bits(sbt_payload_arg(r, 10)) ||
        !finite_bits(sbt_payload_arg(r, 13)) || !finite_bits(sbt_payload_arg(r, 14)) ||
        vkr_float_of(sbt_payload_arg(r, 14)) < vkr_float_of(sbt_payload_arg(r, 13)))
        return BAD("sampler %" PRIu64 ": LOD bias, anisotropy or LOD range is not a finite float "
                   "(or maxLod < minLod)",
                   id);
    if (sbt_payload_arg(r, 9) > 1 || sbt_payload_arg(r, 11) > 1 || unnorm > 1 ||
        sbt_payload_arg(r, 12) > VK_COMPARE_OP_ALWAYS || red > VK_SAMPLER_REDUCTION_MODE_MAX ||
        (border > VK_BORDER_COLOR_INT_OPAQUE_WHITE && border != VK_BORDER_COLOR_FLOAT_CUSTOM_EXT &&
         border != VK_BORDER_COLOR_INT_CUSTOM_EXT) ||
        sbt_payload_arg(r, 1) > UINT32_MAX)
        return BAD("sampler %" PRIu64 ": an enable, compare op, reduction mode or border color out "
                   "of range",
                   id);
    if ((border == VK_BORDER_COLOR_FLOAT_CUSTOM_EXT || border == VK_BORDER_COLOR_INT_CUSTOM_EXT) &&
        sbt_payload_arg(r, 18) != VK_FORMAT_UNDEFINED &&
        (sbt_payload_arg(r, 18) > UINT32_MAX || !sbt_vk_format((uint32_t)sbt_payload_arg(r, 18))))
        return BAD("sampler %" PRIu64 ": custom border color format %" PRIu64, id,
                   sbt_payload_arg(r, 18));
    float aniso = vkr_float_of(sbt_payload_arg(r, 10));
    if (sbt_payload_arg(r, 9) && (aniso < 1.0f || aniso > max_anisotropy))
        return replay__fail(REPLAY_ENODEV,
                            "sampler %" PRIu64 ": anisotropy %g; this device's "
                            "maxSamplerAnisotropy is %g",
                            id, (double)aniso, (double)max_anisotropy);
    if (unnorm &&
        (min != mag || mm != VK_SAMPLER_MIPMAP_MODE_NEAREST ||
         vkr_float_of(sbt_payload_arg(r, 13)) != 0 || vkr_float_of(sbt_payload_arg(r, 14)) != 0 ||
         sbt_payload_arg(r, 9) || sbt_payload_arg(r, 11) ||
         (sbt_payload_arg(r, 5) != VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE &&
          sbt_payload_arg(r, 5) != VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER) ||
         (sbt_payload_arg(r, 6) != VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE &&
          sbt_payload_arg(r, 6) != VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER)))
        return BAD("sampler %" PRIu64
                   ": unnormalized coordinates with filters, LODs, address modes "
                   "or comparison Vulkan does not allow with them",
                   id);
    return 0;
}

int vkr_check_image_binding(const struct sbt_payload_rec *r)
{
    if (r->n_arg < 9)
        return BAD("IMAGE_BINDING record with %u arguments (needs 9)", r->n_arg);
    uint64_t type = sbt_payload_arg(r, 3);
    int sampler =
        type == VK_DESCRIPTOR_TYPE_SAMPLER || type == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
    int view = type == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER ||
               type == VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE || type == VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
    if (!sampler && !view)
        return BAD("image binding of set %" PRIu64 " binding %" PRIu64 ": descriptor type %" PRIu64
                   " is not a sampler or image type",
                   sbt_payload_arg(r, 0), sbt_payload_arg(r, 1), type);
    if ((view && !sbt_payload_arg(r, 4)) || (sampler && !sbt_payload_arg(r, 6)) ||
        sbt_payload_arg(r, 8) > 3 || sbt_payload_arg(r, 0) > UINT32_MAX ||
        sbt_payload_arg(r, 1) > UINT32_MAX || sbt_payload_arg(r, 2) > UINT32_MAX)
        return BAD("image binding of set %" PRIu64 " binding %" PRIu64 " (type %" PRIu64
                   "): view %" PRIu64 ", sampler %" PRIu64 ", access %" PRIu64,
                   sbt_payload_arg(r, 0), sbt_payload_arg(r, 1), type, sbt_payload_arg(r, 4),
                   sbt_payload_arg(r, 6), sbt_payload_arg(r, 8));
    return 0;
}

/* The box of a copy region's image side: subresource (aspect, mip, layer, count) at sub,
 * offsets at o, extent ext (a 3D image: layer 0 of 1, z and depth as given). Checks it against
 * the image: one aspect of it, inside, block-aligned. */
static int region_box(const struct sbt_vk_image *im, const uint64_t *sub, const uint64_t *o,
                      const uint64_t ext[3], const char *what, uint64_t i, struct sbt_vk_box *b)
{
    uint64_t count = sub[3];
    if (count == VK_REMAINING_ARRAY_LAYERS && sub[2] < im->layers)
        count = im->layers - sub[2];
    if (!one_bit(sub[0]) || sub[0] > UINT32_MAX || sub[1] > UINT32_MAX || sub[2] > UINT32_MAX ||
        !count || count > UINT32_MAX || (im->type == VK_IMAGE_TYPE_3D && (sub[2] || count != 1)))
        return BAD("%s region %" PRIu64 ": aspect 0x%" PRIx64 ", level %" PRIu64 ", layers %" PRIu64
                   "..+%" PRIu64,
                   what, i, sub[0], sub[1], sub[2], sub[3]);
    *b = (struct sbt_vk_box){(uint32_t)sub[0], (uint32_t)sub[1], (uint32_t)sub[2],
                             (uint32_t)count,  {0, 0, 0},        {0, 0, 0}};
    for (int k = 0; k < 3; k++) {
        if (o[k] > INT32_MAX || !ext[k] || ext[k] > UINT32_MAX)
            return BAD("%s region %" PRIu64 ": offset %" PRIu64 ", extent %" PRIu64 " on axis %d",
                       what, i, o[k], ext[k], k);
        b->off[k] = (uint32_t)o[k];
        b->ext[k] = (uint32_t)ext[k];
    }
    if (sbt_vk_image_box_runs(im, b, NULL, NULL, NULL, NULL, NULL) < 0)
        return BAD("%s region %" PRIu64 ": %s", what, i, sbt_errmsg());
    return 0;
}

int vkr_check_buf_img_copy(const struct sbt_payload_rec *r, uint64_t buf_size,
                           const struct sbt_vk_image *im, uint32_t *n_regions)
{
    const char *what =
        r->call == SBT_VK_COPY_BUFFER_TO_IMAGE ? "buffer-to-image copy" : "image-to-buffer copy";
    uint64_t n = sbt_payload_arg(r, 3);
    if (r->n_arg < 4 || n > (r->n_arg - 4) / 13)
        return BAD("%s of %" PRIu64 " regions in %u arguments", what, n, r->n_arg);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t *g = r->arg + 4 + 13 * i;
        uint64_t ext[3] = {g[10], g[11], g[12]};
        struct sbt_vk_box b;
        int st = region_box(im, g + 3, g + 7, ext, what, i, &b);
        if (st < 0)
            return st;
        struct sbt_vk_subres s;
        sbt_vk_image_subres(im, b.aspect, b.mip, &s); /* the box checked it */
        uint64_t rl = g[1] ? g[1] : ext[0], ih = g[2] ? g[2] : ext[1];
        int ds = b.aspect == VK_IMAGE_ASPECT_DEPTH_BIT || b.aspect == VK_IMAGE_ASPECT_STENCIL_BIT;
        if (rl < ext[0] || ih < ext[1] || rl > (1u << 24) || ih > (1u << 24) ||
            g[0] % (ds ? 4 : s.block_bytes))
            return BAD("%s region %" PRIu64 ": buffer offset %" PRIu64 ", row length %" PRIu64
                       ", image height %" PRIu64 " for an extent %" PRIu64 "x%" PRIu64
                       " (lengths at least the extent, offset a multiple of %u)",
                       what, i, g[0], g[1], g[2], ext[0], ext[1], ds ? 4 : s.block_bytes);
        unsigned __int128 row =
            (rl + s.block[0] - 1) / s.block[0] * (unsigned __int128)s.block_bytes;
        unsigned __int128 slice = (ih + s.block[1] - 1) / s.block[1] * row;
        unsigned __int128 wb = (ext[0] + s.block[0] - 1) / s.block[0] * (uint64_t)s.block_bytes;
        uint64_t hb = (ext[1] + s.block[1] - 1) / s.block[1];
        uint64_t n_s = (uint64_t)b.n_layers * ext[2];
        unsigned __int128 span = (n_s - 1) * slice + (hb - 1) * row + wb;
        if (span > buf_size || g[0] > buf_size - (uint64_t)span)
            return BAD("%s region %" PRIu64 ": buffer bytes [%" PRIu64
                       ", +%.0f) past its buffer of %" PRIu64 " bytes",
                       what, i, g[0], (double)span, buf_size);
    }
    *n_regions = (uint32_t)n;
    return 0;
}

/* The destination extent of an image copy region: the source's blocks in destination blocks,
 * a 3D side's depth paired with the other side's layers. */
int vkr_check_img_copy(const struct sbt_payload_rec *r, const struct sbt_vk_image *src,
                       const struct sbt_vk_image *dst, uint32_t *n_regions)
{
    uint64_t n = sbt_payload_arg(r, 4);
    if (r->n_arg < 5 || n > (r->n_arg - 5) / 17)
        return BAD("image copy of %" PRIu64 " regions in %u arguments", n, r->n_arg);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t *g = r->arg + 5 + 17 * i;
        uint64_t ext[3] = {g[14], g[15], g[16]}, sub[4] = {g[0], g[1], g[2], g[3]};
        uint64_t dsub[4] = {g[7], g[8], g[9], g[10]};
        int s3 = src->type == VK_IMAGE_TYPE_3D, d3 = dst->type == VK_IMAGE_TYPE_3D;
        struct sbt_vk_box sb, db;
        int st = region_box(src, sub, g + 4, ext, "image copy source", i, &sb);
        if (st < 0)
            return st;
        struct sbt_vk_subres ss, ds;
        sbt_vk_image_subres(src, sb.aspect, sb.mip, &ss);
        if (!one_bit(g[7]) || !(sbt_vk_format_aspects(dst->format) & g[7]))
            return BAD("image copy region %" PRIu64 ": destination aspect 0x%" PRIx64, i, g[7]);
        if (sbt_vk_image_subres(dst, (uint32_t)g[7],
                                g[8] > UINT32_MAX ? UINT32_MAX : (uint32_t)g[8], &ds) < 0)
            return BAD("image copy region %" PRIu64 ": %s", i, sbt_errmsg());
        uint64_t de[3];
        for (int k = 0; k < 3; k++)
            de[k] = ss.block[k] == ds.block[k]
                        ? ext[k]
                        : (ext[k] + ss.block[k] - 1) / ss.block[k] * ds.block[k];
        if (s3 && !d3) {
            dsub[3] = ext[2];
            de[2] = 1;
        } else if (!s3 && d3) {
            de[2] = sb.n_layers;
        } else if (dsub[3] != VK_REMAINING_ARRAY_LAYERS && dsub[3] != sb.n_layers && !s3) {
            return BAD("image copy region %" PRIu64 ": %" PRIu64 " source and %" PRIu64
                       " destination layers",
                       i, sub[3], dsub[3]);
        }
        if ((st = region_box(dst, dsub, g + 11, de, "image copy destination", i, &db)) < 0)
            return st;
        if (ss.block_bytes != ds.block_bytes)
            return BAD("image copy region %" PRIu64 ": %u-byte source blocks into %u-byte "
                       "destination blocks",
                       i, ss.block_bytes, ds.block_bytes);
    }
    *n_regions = (uint32_t)n;
    return 0;
}

int vkr_check_blit(const struct sbt_payload_rec *r, const struct sbt_vk_image *src,
                   const struct sbt_vk_image *dst, uint32_t *n_regions)
{
    uint64_t n = sbt_payload_arg(r, 5), filter = sbt_payload_arg(r, 4);
    if (r->n_arg < 6 || n > (r->n_arg - 6) / 20)
        return BAD("blit of %" PRIu64 " regions in %u arguments", n, r->n_arg);
    if (filter > VK_FILTER_LINEAR && filter != VK_FILTER_CUBIC_EXT)
        return BAD("blit filter %" PRIu64, filter);
    const struct sbt_vk_format *sf = sbt_vk_format(src->format), *df = sbt_vk_format(dst->format);
    if (!sf || !df || sf->block[0] != 1 || sf->block[1] != 1 || df->block[0] != 1 ||
        df->block[1] != 1 || sf->n_planes || df->n_planes ||
        ((sf->depth_bytes || sf->stencil_bytes) &&
         (filter != VK_FILTER_NEAREST || src->format != dst->format)))
        return BAD("blit between formats %u and %u with filter %" PRIu64
                   " (no compressed, multi-planar, or filtered or converted depth/stencil blits)",
                   src->format, dst->format, filter);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t *g = r->arg + 6 + 20 * i;
        for (int side = 0; side < 2; side++) {
            const uint64_t *h = g + 10 * side;
            const struct sbt_vk_image *im = side ? dst : src;
            uint64_t lo[3], ext[3];
            for (int k = 0; k < 3; k++) {
                int64_t a = (int32_t)(uint32_t)h[4 + k], c = (int32_t)(uint32_t)h[7 + k];
                if (h[4 + k] > UINT32_MAX || h[7 + k] > UINT32_MAX || a < 0 || c < 0)
                    return BAD("blit region %" PRIu64 ": corner %" PRIu64 " or %" PRIu64
                               " on axis %d",
                               i, h[4 + k], h[7 + k], k);
                lo[k] = (uint64_t)(a < c ? a : c);
                ext[k] = (uint64_t)(a < c ? c - a : a - c);
            }
            if (!ext[0] || !ext[1] || !ext[2])
                continue; /* an empty region blits nothing */
            struct sbt_vk_box b;
            int st = region_box(im, h, lo, ext, side ? "blit destination" : "blit source", i, &b);
            if (st < 0)
                return st;
        }
        if (g[3] != g[13] && src->type != VK_IMAGE_TYPE_3D && dst->type != VK_IMAGE_TYPE_3D)
            return BAD("blit region %" PRIu64 ": %" PRIu64 " source and %" PRIu64
                       " destination layers",
                       i, g[3], g[13]);
    }
    *n_regions = (uint32_t)n;
    return 0;
}

int vkr_check_clear(const struct sbt_payload_rec *r, const struct sbt_vk_image *im,
                    uint32_t *n_ranges)
{
    uint64_t kind = sbt_payload_arg(r, 2), n = sbt_payload_arg(r, 7);
    if (r->n_arg < 8 || kind > 1 || n > (r->n_arg - 8) / 5)
        return BAD("image clear (kind %" PRIu64 ") of %" PRIu64 " ranges in %u arguments", kind, n,
                   r->n_arg);
    const struct sbt_vk_format *f = sbt_vk_format(im->format);
    uint32_t aspects = sbt_vk_format_aspects(im->format);
    uint32_t allowed = kind ? aspects & (VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT)
                            : aspects & (ASPECT_COLOR | ASPECT_PLANES);
    if (!f || !allowed || (!kind && (f->block[0] != 1 || f->block[1] != 1 || f->n_planes)))
        return BAD("%s clear of an image of format %u", kind ? "depth/stencil" : "color",
                   im->format);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t *g = r->arg + 8 + 5 * i;
        uint64_t layers = im->type == VK_IMAGE_TYPE_3D ? 1 : im->layers;
        if (!g[0] || (g[0] & ~(uint64_t)allowed) || !g[2] || g[1] >= im->mips ||
            g[2] > im->mips - g[1] || !g[4] || g[3] >= layers || g[4] > layers - g[3])
            return BAD("clear range %" PRIu64 ": aspects 0x%" PRIx64 ", levels %" PRIu64
                       "..+%" PRIu64 ", layers %" PRIu64 "..+%" PRIu64
                       " of an image with aspects 0x%x, %u levels, "
                       "%" PRIu64 " layers",
                       i, g[0], g[1], g[2], g[3], g[4], allowed, im->mips, layers);
    }
    *n_ranges = (uint32_t)n;
    return 0;
}
