/*
 * replay/vk/replay_vk_cmd.c — the Vulkan backend: device ops recorded into the open batch of their
 * queue: dependencies (cross-queue waits, barriers on hazards), dispatches with descriptor sets
 * built from their resolved bindings, copies, fills, updates (image ops: replay_vk_image.c),
 * read-backs of outputs, timestamps.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "format/sbt_vk.h"
#include "replay/vk/replay_vk_int.h"

/* ========================================================================================== */
/* exec                                                                                       */
/* ========================================================================================== */

static int overlap(const struct sbt_access *a, const struct sbt_access *c)
{
    return a->resource == c->resource && a->offset < c->offset + c->len &&
           c->offset < a->offset + a->len && ((a->mode | c->mode) & SBT_ACCESS_WRITE);
}

/* 1 if the graph (declared order) says the program leaves op seq unordered with n. */
static int unordered(const struct sched_node *n, uint64_t seq)
{
    for (uint32_t i = 0; i < n->n_unordered; i++)
        if (n->unordered[i] == seq)
            return 1;
    return 0;
}

void vkr_barrier(VkCommandBuffer cb)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
}

/* Makes the host wait for every executed predecessor of n. */
int vkr_host_wait_deps(struct vkbe *b, const struct sched_node *n)
{
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint64_t s = n->in[i].from_val;
        if (!s || s >= b->n_slots || !b->slot_q[s])
            continue;
        struct rq *q = &b->q[b->slot_q[s] - 1];
        int st = vkr_wait_value(b, q, b->slot_val[s]);
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
            int st = vkr_flush(b, p);
            if (st < 0)
                return st;
        }
        if (q->open && q->open->has_cmds) {
            int st = vkr_flush(b, q);
            if (st < 0)
                return st;
        }
        int st = vkr_batch_open(b, q);
        if (st < 0)
            return st;
        if (vkr_batch_add_wait(q->open, p->timeline, v) < 0)
            return SBT_ENOMEM;
    }
    int st = vkr_batch_open(b, q);
    if (st < 0)
        return st;
    struct batch *x = q->open;
    const struct sbt_op *op = n->op;
    /* a barrier where two ops' accesses conflict; under the declared order (replay --order
     * declared) only where the program orders them: a pair it leaves unordered runs as a GPU
     * would run it, without one */
    for (uint32_t i = 0; i < op->n_access && !need_barrier; i++)
        for (uint32_t k = 0; k < x->n_acc && !need_barrier; k++)
            if (overlap(&op->access[i], &x->acc[k]) && !unordered(n, x->acc_seq[k]))
                need_barrier = 1;
    if (need_barrier && x->has_cmds) {
        vkr_barrier(x->cb);
        x->n_acc = 0;
    }
    if (grow((void **)&x->acc, &x->cap_acc, x->n_acc + op->n_access, sizeof *x->acc) < 0 ||
        grow((void **)&x->acc_seq, &x->cap_acc_seq, x->n_acc + op->n_access, sizeof *x->acc_seq) <
            0)
        return SBT_ENOMEM;
    if (op->n_access) /* else x->acc may still be NULL: memcpy(NULL, ...) is undefined */
        memcpy(x->acc + x->n_acc, op->access, op->n_access * sizeof *x->acc);
    for (uint32_t i = 0; i < op->n_access; i++)
        x->acc_seq[x->n_acc + i] = op->seq;
    x->n_acc += op->n_access;
    return 0;
}

int vkr_slot_set(struct vkbe *b, uint64_t slot, uint8_t q, uint64_t value)
{
    if (slot >= b->n_slots) {
        uint64_t n = b->n_slots ? b->n_slots : 4096;
        while (n <= slot)
            n *= 2;
        uint8_t *sq = realloc(b->slot_q, n);
        if (!sq)
            return replay__fail(SBT_ENOMEM, "out of memory for %" PRIu64 " op slots", n);
        b->slot_q = sq;
        uint64_t *sv = realloc(b->slot_val, n * sizeof *sv);
        if (!sv)
            return replay__fail(SBT_ENOMEM, "out of memory for %" PRIu64 " op slots", n);
        b->slot_val = sv;
        memset(sq + b->n_slots, 0, n - b->n_slots);
        b->n_slots = n;
    }
    b->slot_q[slot] = q;
    b->slot_val[slot] = value;
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
    if (vkr_slot_set(b, slot, (uint8_t)(q - b->q + 1), x->value) < 0)
        return NULL;
    return o;
}

/* ---- descriptor sets ---------------------------------------------------------------------- */

/* Descriptor types a pool holds, with the counts of a standard pool (one serves many
 * dispatches; a set that needs more gets a pool of its own size). */
static const struct {
    VkDescriptorType type;
    uint32_t n;
} pool_types[] = {
    {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4096},
    {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1024},
    {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC, 256},
    {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC, 256},
    {VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, 256},
    {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, 256},
    {VK_DESCRIPTOR_TYPE_SAMPLER, 256},
    {VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 256},
    {VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, 256},
    {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 256},
};
#define N_POOL_TYPES (sizeof pool_types / sizeof pool_types[0])
#define POOL_SETS    512u

/* The descriptors of each pool type a set of layout sl needs (var: the count of its
 * variable-count binding); 1 if they fit a standard pool, 0 if not, < 0 for a type replay has
 * no descriptors of. */
static int set_needs(const struct setlayout *sl, uint32_t var, uint32_t need[N_POOL_TYPES])
{
    int fits = 1;
    memset(need, 0, N_POOL_TYPES * sizeof *need);
    for (uint32_t i = 0; i < sl->n_b; i++) {
        uint32_t n = (int32_t)i == sl->var ? var : sl->count[i], t = 0;
        while (t < N_POOL_TYPES && pool_types[t].type != (VkDescriptorType)sl->type[i])
            t++;
        if (t == N_POOL_TYPES && n)
            return replay__fail(REPLAY_EUNSUPPORTED,
                                "set layout binding %u: descriptors of type %u, which replay does "
                                "not make",
                                sl->binding[i], sl->type[i]);
        if (t < N_POOL_TYPES) {
            if (n > (1u << 24) - need[t]) /* n <= 1 << 20 (checked): no overflow */
                return replay__fail(REPLAY_EUNSUPPORTED,
                                    "a set of layout binding %u needs more than %u descriptors of "
                                    "type %u",
                                    sl->binding[i], 1u << 24, sl->type[i]);
            need[t] += n;
            fits &= need[t] <= pool_types[t].n;
        }
    }
    return fits;
}

/* A pool for the batch: a recycled standard one of the same kind, or a new one (sized for
 * need when a standard pool cannot hold it). */
static VkDescriptorPool pool_get(struct vkbe *b, struct batch *x, int uab,
                                 const uint32_t need[N_POOL_TYPES], int fits)
{
    struct dpool p = {VK_NULL_HANDLE, uab};
    for (uint32_t i = b->n_free_pools; fits && i-- > 0;)
        if (b->free_pools[i].uab == uab) {
            p = b->free_pools[i];
            b->free_pools[i] = b->free_pools[--b->n_free_pools];
            break;
        }
    if (!p.pool) {
        VkDescriptorPoolSize ps[N_POOL_TYPES];
        for (uint32_t t = 0; t < N_POOL_TYPES; t++)
            ps[t] = (VkDescriptorPoolSize){pool_types[t].type,
                                           pool_types[t].n > need[t] ? pool_types[t].n : need[t]};
        VkDescriptorPoolCreateInfo ci = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
            .flags = uab ? VK_DESCRIPTOR_POOL_CREATE_UPDATE_AFTER_BIND_BIT : 0,
            .maxSets = POOL_SETS,
            .poolSizeCount = N_POOL_TYPES,
            .pPoolSizes = ps};
        if (vkCreateDescriptorPool(b->dev, &ci, NULL, &p.pool) != VK_SUCCESS)
            return VK_NULL_HANDLE;
    }
    if (grow((void **)&x->pools, &x->cap_pools, x->n_pools + 1, sizeof *x->pools) < 0) {
        vkDestroyDescriptorPool(b->dev, p.pool, NULL);
        return VK_NULL_HANDLE;
    }
    x->pools[x->n_pools++] = p;
    return p.pool;
}

/* A set of layout sl (var: the count of its variable-count binding) from the batch's pools. */
static int alloc_set(struct vkbe *b, struct batch *x, const struct setlayout *sl, uint32_t var,
                     VkDescriptorSet *out)
{
    uint32_t need[N_POOL_TYPES];
    int fits = set_needs(sl, var, need);
    if (fits < 0)
        return fits;
    VkDescriptorSetVariableDescriptorCountAllocateInfo vc = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_VARIABLE_DESCRIPTOR_COUNT_ALLOCATE_INFO,
        .descriptorSetCount = 1,
        .pDescriptorCounts = &var};
    for (int tries = 0; tries < 2; tries++) {
        VkDescriptorPool p = VK_NULL_HANDLE;
        /* the batch's latest pool of this kind first */
        for (uint32_t i = x->n_pools; tries == 0 && fits && i-- > 0 && !p;)
            if (x->pools[i].uab == sl->uab)
                p = x->pools[i].pool;
        if (!p && !(p = pool_get(b, x, sl->uab, need, fits)))
            return replay__fail(REPLAY_EDEVICE, "cannot create a descriptor pool");
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .pNext = sl->var >= 0 ? &vc : NULL,
                                          .descriptorPool = p,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &sl->dsl};
        if (vkAllocateDescriptorSets(b->dev, &ai, out) == VK_SUCCESS)
            return 0;
        if (tries == 0 && !fits)
            break;
    }
    return replay__fail(REPLAY_EDEVICE, "cannot allocate a descriptor set");
}

static VkBufferView find_view(struct vkbe *b, uint64_t buf, uint64_t off, uint64_t range)
{
    struct bview *v;
    for (uint64_t pos = 0; (v = sbt_map_nextp(&b->views, &pos));)
        if (v->buf == buf && v->offset == off && (v->range == range || range == 0))
            return v->view;
    return VK_NULL_HANDLE;
}

/* A BINDING's (set, binding, element) must exist in the pipeline's set layout with the same
 * descriptor type (the capture resolved it from there); *bi is that binding's index. */
static int binding_in_layout(struct vkbe *b, const struct playout *pl,
                             const struct sbt_payload_rec *r, uint32_t *bi)
{
    uint64_t set = sbt_payload_arg(r, 0), binding = sbt_payload_arg(r, 1),
             elem = sbt_payload_arg(r, 2);
    uint64_t type = sbt_payload_arg(r, 3);
    struct setlayout *sl = set < pl->n_sets ? sbt_map_getp(&b->setlayouts, pl->sets[set]) : NULL;
    for (uint32_t i = 0; sl && i < sl->n_b; i++)
        if (sl->binding[i] == binding) {
            if (elem >= sl->count[i] || sl->type[i] != type)
                break;
            *bi = i;
            return 0;
        }
    return replay__fail(SBT_ECORRUPT,
                        "binding of set %" PRIu64 " binding %" PRIu64 " element %" PRIu64
                        " (descriptor type %" PRIu64 ") is not in the pipeline's set layout",
                        set, binding, elem, type);
}

/* Every descriptor the shader declares (or, without reflection, every binding of the layout)
 * must have been written by the dispatch's BINDING records: a driver reading an unwritten
 * descriptor may crash (lavapipe does), and a trace that lacks one cannot replay right. A
 * partially bound binding may stay unwritten: the shader must not read what the program left
 * out. */
static int all_written(struct vkbe *b, const struct pipe *p, const struct playout *pl,
                       const uint64_t *written, uint32_t nw)
{
    for (uint32_t s = 0; s < pl->n_sets; s++) {
        struct setlayout *sl = sbt_map_getp(&b->setlayouts, pl->sets[s]);
        for (uint32_t i = 0; sl && i < sl->n_b; i++) {
            uint64_t key = (uint64_t)s << 32 | sl->binding[i];
            int used = p->used_all || !sl->count[i];
            for (uint32_t u = 0; u < p->n_used && !used; u++)
                used = p->used[u] == key;
            if (!used || !sl->count[i] ||
                (sl->flags[i] & VK_DESCRIPTOR_BINDING_PARTIALLY_BOUND_BIT))
                continue;
            int found = 0;
            for (uint32_t k = 0; k < nw && !found; k++)
                found = written[k] == key;
            if (!found)
                return replay__fail(REPLAY_EUNSUPPORTED,
                                    "the dispatch leaves set %u binding %u (descriptor type %u) "
                                    "unwritten: the trace holds no descriptor for it%s",
                                    s, sl->binding[i], sl->type[i],
                                    sl->type[i] <= VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC
                                        ? ""
                                        : " (a descriptor type the capture does not record)");
        }
    }
    return 0;
}

/* Room for n of each of rec_dispatch's per-binding scratch arrays. */
static int scratch_bindings(struct vkbe *b, uint32_t n)
{
    struct vkr_scratch *s = &b->scr;
    if (n <= s->cap_w)
        return 0;
    uint32_t c = s->cap_w;
    if (grow((void **)&s->w, &c, n, sizeof *s->w) < 0)
        return SBT_ENOMEM;
    c = s->cap_w;
    if (grow((void **)&s->bi, &c, n, sizeof *s->bi) < 0)
        return SBT_ENOMEM;
    c = s->cap_w;
    if (grow((void **)&s->bv, &c, n, sizeof *s->bv) < 0)
        return SBT_ENOMEM;
    c = s->cap_w;
    if (grow((void **)&s->ii, &c, n, sizeof *s->ii) < 0)
        return SBT_ENOMEM;
    c = s->cap_w;
    if (grow((void **)&s->written, &c, n, sizeof *s->written) < 0)
        return SBT_ENOMEM;
    s->cap_w = c;
    return 0;
}

/* ---- split (a perturbed replay) ---------------------------------------------------------- */

/* Pieces a dispatch is cut into at most: each piece is one vkCmdDispatchBase. */
#define SPLIT_PIECES 64

static void left_whole(struct vkbe *b, const struct sbt_op *op, const char *why)
{
    if (!b->ps)
        return;
    if (!b->ps->whole_dispatches++) {
        b->ps->first_whole_seq = op->seq;
        snprintf(b->ps->first_whole_why, sizeof b->ps->first_whole_why, "%s", why);
    }
}

/* The workgroups of the dispatch (base g[0..2], counts g[3..5]) as up to SPLIT_PIECES pieces
 * along its longest dimension, issued in an order drawn from the seed and the op's seq (so
 * that each dispatch is cut the same way whatever ran before it). WorkgroupId and
 * GlobalInvocationId are what they were (the base adds back each piece's offset); only
 * NumWorkgroups would see a piece's count, and shaders that read it are not cut. */
static void split_dispatch(struct vkbe *b, VkCommandBuffer cb, const struct sbt_op *op,
                           const uint64_t *g)
{
    uint32_t d = g[4] > g[3] ? (g[5] > g[4] ? 2 : 1) : (g[5] > g[3] ? 2 : 0);
    uint64_t len = g[3 + d];
    uint32_t n = len < SPLIT_PIECES ? (uint32_t)len : SPLIT_PIECES;
    if (len <= 1) { /* cut along no dimension: the pieces are the other dimensions' rows */
        d = g[3] > 1 ? 0 : g[4] > 1 ? 1 : 2;
        len = g[3 + d];
        n = len < SPLIT_PIECES ? (uint32_t)len : SPLIT_PIECES;
    }
    uint32_t order[SPLIT_PIECES];
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    uint64_t rng = b->perturb.seed * 0x9e3779b97f4a7c15ull ^ op->seq;
    for (uint32_t i = n; i > 1; i--) { /* Fisher-Yates */
        uint32_t j = (uint32_t)(replay__rand(&rng) % i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t lo = len * order[i] / n, hi = len * (order[i] + 1) / n;
        uint64_t base[3] = {g[0], g[1], g[2]}, cnt[3] = {g[3], g[4], g[5]};
        base[d] += lo;
        cnt[d] = hi - lo;
        vkCmdDispatchBase(cb, (uint32_t)base[0], (uint32_t)base[1], (uint32_t)base[2],
                          (uint32_t)cnt[0], (uint32_t)cnt[1], (uint32_t)cnt[2]);
    }
    if (b->ps) {
        b->ps->split_dispatches++;
        b->ps->split_pieces += n;
    }
}

/* Records a DISPATCH payload into the open batch: its sets are allocated and written from
 * its BINDING records (whatever bound or pushed them at capture), then bound with every
 * dynamic offset 0 (the bindings' offsets have them applied). */
static int rec_dispatch(struct vkbe *b, struct batch *x, const struct sbt_op *op,
                        const struct sbt_payload_rec *d, struct sbt_payload_dec *dec)
{
    int st = 0;
    uint64_t pid = sbt_payload_arg(d, 0);
    struct pipe *p = sbt_map_getp(&b->pipes, pid);
    if (!p)
        return replay__fail(SBT_EINVAL, "pipeline %" PRIu64 " is not in the trace's kernels", pid);
    if (p->error)
        return replay__fail(REPLAY_EUNSUPPORTED, "%s", p->error);
    struct playout *pl = sbt_map_getp(&b->playouts, p->layout);
    if (!pl)
        return replay__fail(SBT_EINVAL, "pipeline %" PRIu64 " without layout", pid);
    if ((st = vkr_check_dispatch(&b->lim, d)) < 0)
        return st;
    /* push constants, groups before the bindings overwrite the decoder's args */
    uint64_t g[6];
    for (int i = 0; i < 6; i++)
        g[i] = sbt_payload_arg(d, 2 + (uint32_t)i);
    uint64_t ind_buf = sbt_payload_arg(d, 8), ind_off = sbt_payload_arg(d, 9);
    uint8_t push[4096];
    if (d->n_bytes > sizeof push)
        return replay__fail(REPLAY_EUNSUPPORTED, "dispatch with %u bytes of push constants (> %zu)",
                            d->n_bytes, sizeof push);
    uint32_t push_len = d->n_bytes;
    memcpy(push, d->bytes, push_len);

    /* the BINDING records, checked, with the index of their binding in its set layout */
    struct vkr_scratch *sc = &b->scr;
    uint32_t nw = 0, var[MAX_SETS] = {0};
    struct sbt_payload_rec r;
    int k;
    while ((k = sbt_payload_dec_next(dec, &r)) == 1) {
        if (r.call != SBT_VK_BINDING && r.call != SBT_VK_IMAGE_BINDING)
            continue;
        uint32_t set = (uint32_t)sbt_payload_arg(&r, 0), bi = 0;
        if (sbt_payload_arg(&r, 0) >= pl->n_sets)
            return replay__fail(SBT_EINVAL, "binding of set %" PRIu64 " but the layout has %u sets",
                                sbt_payload_arg(&r, 0), pl->n_sets);
        if (r.call == SBT_VK_IMAGE_BINDING) { /* a sampler or image: replay_vk_image.c */
            if (scratch_bindings(b, nw + 1) < 0)
                return replay__fail(SBT_ENOMEM, "out of memory");
            if ((st = vkr_image_binding(b, &r, &sc->ii[nw])) < 0 ||
                (st = binding_in_layout(b, pl, &r, &bi)) < 0)
                return st;
            struct setlayout *sl = sbt_map_getp(&b->setlayouts, pl->sets[set]);
            uint32_t elem = (uint32_t)sbt_payload_arg(&r, 2);
            if ((int32_t)bi == sl->var && elem + 1 > var[set])
                var[set] = elem + 1;
            sc->written[nw] = (uint64_t)set << 32 | (uint32_t)sbt_payload_arg(&r, 1);
            sc->w[nw] =
                (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstBinding = (uint32_t)sbt_payload_arg(&r, 1),
                                       .dstArrayElement = elem,
                                       .descriptorCount = 1,
                                       .descriptorType = (VkDescriptorType)sbt_payload_arg(&r, 3)};
            sc->bv[nw] = VK_NULL_HANDLE;
            nw++;
            continue;
        }
        struct buf *bf = vkr_buf_of(b, sbt_payload_arg(&r, 4), &st, "dispatch binding");
        if (!bf)
            return st;
        if ((st = vkr_check_binding(&b->lim, &r, bf->size)) < 0 ||
            (st = binding_in_layout(b, pl, &r, &bi)) < 0)
            return st;
        if (scratch_bindings(b, nw + 1) < 0)
            return replay__fail(SBT_ENOMEM, "out of memory");
        struct setlayout *sl = sbt_map_getp(&b->setlayouts, pl->sets[set]);
        uint32_t elem = (uint32_t)sbt_payload_arg(&r, 2), type = (uint32_t)sbt_payload_arg(&r, 3);
        if ((int32_t)bi == sl->var && elem + 1 > var[set])
            var[set] = elem + 1; /* the variable count: what the capture wrote */
        uint64_t off = sbt_payload_arg(&r, 6), range = sbt_payload_arg(&r, 7);
        sc->written[nw] = (uint64_t)set << 32 | (uint32_t)sbt_payload_arg(&r, 1);
        sc->w[nw] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                           .dstBinding = (uint32_t)sbt_payload_arg(&r, 1),
                                           .dstArrayElement = elem,
                                           .descriptorCount = 1,
                                           .descriptorType = (VkDescriptorType)type};
        sc->bv[nw] = VK_NULL_HANDLE;
        if (vkr_is_texel(type)) {
            sc->bv[nw] = find_view(b, bf->id, off, range);
            if (!sc->bv[nw])
                return replay__fail(REPLAY_EUNSUPPORTED,
                                    "texel buffer binding without a captured view of buffer "
                                    "%" PRIu64,
                                    bf->id);
        } else {
            sc->bi[nw] = (VkDescriptorBufferInfo){bf->buf, off, range};
        }
        nw++;
    }
    if (k < 0)
        return replay__fail(SBT_ECORRUPT, "%s", sbt_errmsg());
    if ((st = all_written(b, p, pl, sc->written, nw)) < 0)
        return st;
    /* the sets, then the writes into them */
    VkDescriptorSet sets[MAX_SETS] = {0};
    uint64_t ndyn = 0;
    for (uint32_t s = 0; s < pl->n_sets; s++) {
        struct setlayout *sl = sbt_map_getp(&b->setlayouts, pl->sets[s]);
        if (!sl)
            return replay__fail(SBT_EINVAL, "set layout %" PRIu64 " missing", pl->sets[s]);
        for (uint32_t i = 0; i < sl->n_b; i++)
            if (sl->type[i] == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC ||
                sl->type[i] == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC)
                ndyn += sl->count[i]; /* <= 1 << 20 each: checked */
        if ((st = alloc_set(b, x, sl, var[s], &sets[s])) < 0)
            return st;
    }
    for (uint32_t i = 0; i < nw; i++) {
        sc->w[i].dstSet = sets[sc->written[i] >> 32];
        if (vkr_is_image(sc->w[i].descriptorType))
            sc->w[i].pImageInfo = &sc->ii[i];
        else if (vkr_is_texel(sc->w[i].descriptorType))
            sc->w[i].pTexelBufferView = &sc->bv[i];
        else
            sc->w[i].pBufferInfo = &sc->bi[i];
    }
    if (ndyn > 4096) /* devices allow a few (maxDescriptorSet*BuffersDynamic) */
        return replay__fail(REPLAY_EUNSUPPORTED, "%" PRIu64 " dynamic offsets", ndyn);
    if (ndyn > sc->cap_dyn) {
        uint32_t c = sc->cap_dyn;
        if (grow((void **)&sc->dyn, &c, ndyn, sizeof *sc->dyn) < 0)
            return SBT_ENOMEM;
        sc->cap_dyn = c;
    }
    if (ndyn)
        memset(sc->dyn, 0, ndyn * sizeof *sc->dyn);
    if (nw)
        vkUpdateDescriptorSets(b->dev, nw, sc->w, 0, NULL);
    (void)op;
    VkCommandBuffer cb = x->cb;
    if (x->bound_pipe != p->pipe) { /* a redundant bind costs the driver a state re-emit */
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
        x->bound_pipe = p->pipe;
    }
    if (pl->n_sets)
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl->pl, 0, pl->n_sets, sets,
                                (uint32_t)ndyn, sc->dyn);
    for (uint32_t i = 0; i < pl->n_push; i++) {
        uint32_t a = pl->push_off[i], e = a + pl->push_size[i];
        if (e > push_len)
            e = push_len;
        if (a < e)
            vkCmdPushConstants(cb, pl->pl, pl->push_stage[i], a, e - a, push + a);
    }
    if (ind_buf) {
        struct buf *ib = vkr_buf_of(b, ind_buf, &st, "indirect dispatch");
        if (!ib)
            return st;
        if ((st = vkr_check_indirect(ind_off, ib->size)) < 0)
            return st;
        vkCmdDispatchIndirect(cb, ib->buf, ind_off);
    } else {
        /* always with an explicit base: lavapipe (Mesa 22.3) keeps the base of an earlier
         * vkCmdDispatchBase for later dispatches of the command buffer */
        if (b->perturb.kind == REPLAY_PERTURB_SPLIT && !p->reads_numwg &&
            (uint64_t)g[3] * g[4] * g[5] > 1) {
            split_dispatch(b, cb, op, g);
            x->had_base = 1;
            return 0;
        }
        if (b->perturb.kind == REPLAY_PERTURB_SPLIT && p->reads_numwg)
            left_whole(b, op, "its shader reads NumWorkgroups");
        vkCmdDispatchBase(cb, (uint32_t)g[0], (uint32_t)g[1], (uint32_t)g[2], (uint32_t)g[3],
                          (uint32_t)g[4], (uint32_t)g[5]);
        if (g[0] | g[1] | g[2])
            x->had_base = 1;
    }
    if (ind_buf && b->perturb.kind == REPLAY_PERTURB_SPLIT)
        left_whole(b, op, "an indirect dispatch (its group counts are on the device)");
    return 0;
}

static int rec_transfer(struct vkbe *b, struct batch *x, const struct sbt_op *op,
                        const struct sbt_payload_rec *d)
{
    int st = 0;
    VkCommandBuffer cb = x->cb;
    if (d->call == SBT_VK_COPY_BUFFER) {
        struct buf *s = vkr_buf_of(b, sbt_payload_arg(d, 0), &st, "vkCmdCopyBuffer source");
        struct buf *t =
            s ? vkr_buf_of(b, sbt_payload_arg(d, 1), &st, "vkCmdCopyBuffer destination") : NULL;
        if (!t)
            return st;
        uint32_t n;
        if ((st = vkr_check_copy(d, s->size, t->size, &n)) < 0)
            return st;
        for (uint32_t i = 0; i < n; i++) {
            VkBufferCopy c = {sbt_payload_arg(d, 3 + 3 * i), sbt_payload_arg(d, 4 + 3 * i),
                              sbt_payload_arg(d, 5 + 3 * i)};
            if (c.size)
                vkCmdCopyBuffer(cb, s->buf, t->buf, 1, &c);
        }
        return 0;
    }
    if (d->call == SBT_VK_FILL_BUFFER) {
        struct buf *t = vkr_buf_of(b, sbt_payload_arg(d, 0), &st, "vkCmdFillBuffer");
        if (!t || (st = vkr_check_fill(d, t->size)) < 0)
            return st;
        if (sbt_payload_arg(d, 2))
            vkCmdFillBuffer(cb, t->buf, sbt_payload_arg(d, 1), sbt_payload_arg(d, 2),
                            (uint32_t)sbt_payload_arg(d, 3));
        return 0;
    }
    /* UPDATE_BUFFER: the bytes are the op's blob */
    struct buf *t = vkr_buf_of(b, sbt_payload_arg(d, 0), &st, "vkCmdUpdateBuffer");
    if (!t)
        return st;
    void *data = NULL;
    size_t len = 0;
    if (!(op->flags & SBT_OPF_BLOB))
        return replay__fail(SBT_EINVAL, "vkCmdUpdateBuffer without its data blob");
    if ((st = sbt_reader_blob(b->r, &op->blob, &data, &len)) < 0)
        return replay__fail(st, "%s", sbt_errmsg());
    if ((st = vkr_check_update(d, len, t->size)) < 0) {
        free(data);
        return st;
    }
    uint64_t off = sbt_payload_arg(d, 1);
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
    int st;
    for (uint32_t i = 0; i < op->n_access; i++) {
        const struct sbt_access *a = &op->access[i];
        if (!(a->mode & want))
            continue;
        struct img *im = sbt_map_getp(&b->imgs, a->resource);
        if (im) { /* its packed bytes, through copies of whole rows */
            if ((st = vkr_check_access(a, im->packed_size, op->seq)) < 0)
                return st;
            need += vkr_img_copy_need(im, a->offset, a->len) + 16;
            continue;
        }
        struct mem *m = sbt_map_getp(&b->mems, a->resource);
        if (!m)
            return replay__fail(SBT_EINVAL, "access to memory %" PRIu64 " that does not exist",
                                a->resource);
        if ((st = vkr_check_access(a, m->size, op->seq)) < 0)
            return st;
        need += (a->len + 15) & ~(uint64_t)15; /* each len <= a memory size: no overflow */
    }
    if (!need)
        return 0;
    struct staging *s = x->staging;
    if (!s || s->size - s->used < need) {
        struct staging *n = vkr_staging_get(b, need);
        if (!n)
            return replay__fail(REPLAY_EDEVICE, "cannot allocate %" PRIu64 " bytes of staging",
                                need);
        n->next = x->staging;
        x->staging = s = n;
    }
    vkr_barrier(x->cb);
    o->rb0 = x->n_rb;
    o->n_access = op->n_access;
    for (uint32_t i = 0; i < op->n_access; i++) {
        const struct sbt_access *a = &op->access[i];
        if (!(a->mode & want))
            continue;
        if (grow((void **)&x->rbs, &x->cap_rb, x->n_rb + 1, sizeof *x->rbs) < 0)
            return SBT_ENOMEM;
        struct img *im = sbt_map_getp(&b->imgs, a->resource);
        if (im) {
            uint64_t at;
            if ((st = vkr_img_copy_out(b, x->cb, im, a->offset, a->len, s, &at)) < 0)
                return st;
            x->rbs[x->n_rb++] = (struct rb){i, s, at, a->len};
            s->used = (s->used + 15) & ~(uint64_t)15;
            o->n_rb++;
            continue;
        }
        struct mem *m = sbt_map_getp(&b->mems, a->resource); /* checked above */
        x->rbs[x->n_rb++] = (struct rb){i, s, s->used, a->len};
        vkr_mem_copy_out(x->cb, m, a->offset, a->len, s->buf, s->used);
        s->used += (a->len + 15) & ~(uint64_t)15;
        o->n_rb++;
    }
    return 0;
}

static int is_image_op(uint32_t call)
{
    return call == SBT_VK_COPY_BUFFER_TO_IMAGE || call == SBT_VK_COPY_IMAGE_TO_BUFFER ||
           call == SBT_VK_COPY_IMAGE || call == SBT_VK_BLIT_IMAGE || call == SBT_VK_CLEAR_IMAGE;
}

/* The record a device op replays from: its first DISPATCH (kernels), FILL_BUFFER or CLEAR_IMAGE
 * (fills), or copy record (copies); dec stays after it (a dispatch's bindings follow). 1 found,
 * 0 not, < 0 corrupt. Free dec after, whatever the result. */
static int device_rec(const struct sbt_op *op, struct sbt_payload_dec *dec,
                      struct sbt_payload_rec *d)
{
    int vk = op->payload.kind == SBT_VK_PAYLOAD;
    sbt_payload_dec_init(dec, vk ? op->payload.data : NULL, vk ? op->payload.len : 0);
    int k;
    while ((k = sbt_payload_dec_next(dec, d)) == 1) {
        uint32_t c = d->call;
        if (op->kind == SBT_OP_KERNEL ? c == SBT_VK_DISPATCH
            : op->kind == SBT_OP_FILL ? c == SBT_VK_FILL_BUFFER || c == SBT_VK_CLEAR_IMAGE
                                      : c == SBT_VK_COPY_BUFFER || c == SBT_VK_UPDATE_BUFFER ||
                                            (is_image_op(c) && c != SBT_VK_CLEAR_IMAGE))
            return 1;
    }
    return k;
}

int vkr_exec_device(struct vkbe *b, const struct replay_x *rx, int32_t qi)
{
    const struct sched_node *n = rx->node;
    const struct sbt_op *op = n->op;
    if (qi < 0)
        return replay__fail(REPLAY_EUNSUPPORTED, "%s op on a host-thread stream",
                            sbt_op_kind_name(op->kind));
    struct rq *q = &b->q[qi];
    struct sbt_payload_dec dec;
    struct sbt_payload_rec d;
    int f = device_rec(op, &dec, &d);
    if (f != 1) {
        sbt_payload_dec_free(&dec);
        return f < 0 ? replay__fail(SBT_ECORRUPT, "%s", sbt_errmsg())
                     : replay__fail(REPLAY_EUNSUPPORTED,
                                    "%s op without a Vulkan payload to replay it from",
                                    sbt_op_kind_name(op->kind));
    }
    int st = device_deps(b, q, n);
    if (st < 0) {
        sbt_payload_dec_free(&dec);
        return st;
    }
    struct batch *x = q->open;
    int timed = !(rx->flags & REPLAY_X_UNTIMED) && x->qp && q->ts;
    int indirect = op->kind == SBT_OP_KERNEL && sbt_payload_arg(&d, 8) != 0;
    if ((timed && x->n_queries + 2 > QUERIES) || (indirect && x->had_base)) {
        /* a fresh command buffer: no dispatch base leaks into an indirect dispatch */
        sbt_payload_dec_free(&dec);
        if ((st = vkr_flush(b, q)) < 0 || (st = vkr_batch_open(b, q)) < 0)
            return st;
        return vkr_exec_device(b, rx, qi);
    }
    int32_t q0 = -1;
    if (timed) {
        q0 = (int32_t)x->n_queries;
        vkCmdWriteTimestamp(x->cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, x->qp, x->n_queries++);
    }
    if (op->kind == SBT_OP_KERNEL)
        st = rec_dispatch(b, x, op, &d, &dec);
    else if (is_image_op(d.call))
        st = vkr_rec_image_op(b, x->cb, &d);
    else
        st = rec_transfer(b, x, op, &d);
    sbt_payload_dec_free(&dec);
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
    if (rx->flags & REPLAY_X_OUTPUTS) {
        if ((st = readback(b, x, o, op, SBT_ACCESS_WRITE)) < 0)
            return st;
        /* the barrier before the read-back copies separates what came before; the copies still
         * read the op's outputs, so a later op that writes those bytes must wait for them: keep
         * them in the batch's list for the overlap check (capacity: device_deps grew it) */
        uint32_t n_w = 0;
        for (uint32_t i = 0; i < op->n_access; i++)
            if (op->access[i].mode & SBT_ACCESS_WRITE) {
                x->acc_seq[n_w] = op->seq;
                x->acc[n_w++] = op->access[i];
            }
        x->n_acc = n_w;
    }
    /* fast-forward: nothing to time or read back, so the device can start on what is recorded
     * while the host records the rest (the timeline chain keeps the order) */
    if ((rx->flags & REPLAY_X_UNTIMED) && x->n_ops >= FF_CHUNK)
        return vkr_flush(b, q);
    return 0;
}

/* Queue-side ops without commands (submission marks, semaphore waits/signals, events): they
 * order work through their edges and complete with their batch. */
int vkr_exec_queue_mark(struct vkbe *b, const struct replay_x *rx, int32_t qi)
{
    struct rq *q = &b->q[qi];
    int st = device_deps(b, q, rx->node);
    if (st < 0)
        return st;
    if (rx->node->op->kind == SBT_OP_EVENT_WAIT && q->open->has_cmds) {
        vkr_barrier(q->open->cb);
        q->open->n_acc = 0;
    }
    return bop_add(b, q, rx->slot) ? 0 : SBT_ENOMEM;
}
