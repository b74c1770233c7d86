/*
 * capture/vk/cap_vk_commands.c — command pools and command buffers, and every recorded vkCmd*:
 * each appends one raw record (format/sbt_vk.h CMD_*, with the program's own handles) to its
 * command buffer's recording, without a lock (the application already serialises use of a
 * command buffer). cap_vk_submit.c turns recordings into ops when they are submitted. Commands
 * outside the compute subset have generated wrappers (capture/vk/cap_vk_gen.py) that count them
 * and, when they can affect replay, leave a CMD_UNSUPPORTED record here (cap_vk_count_cmd).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

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
    if (tls_cb.handle == CAP_H(h) && tls_cb.gen == gen)
        return tls_cb.cb;
    pthread_mutex_lock(&cap.mu);
    struct cap_cmdbuf *cb = cap_obj_find(CAP_H(h), CAP_T_CMDBUF);
    pthread_mutex_unlock(&cap.mu);
    tls_cb.handle = CAP_H(h);
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
    sbt_payload_enc_free(&cb->raw);
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
    sbt_payload_enc_reset(&cb->raw);
    cb->n_cmds = 0;
    cap_blob_unref(cb->rec);
    cb->rec = NULL;
    cap_cmdbuf_drop_ops(cb);
    cb->recording = 0;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateCommandPool(VkDevice device,
                                                     const VkCommandPoolCreateInfo *ci,
                                                     const VkAllocationCallbacks *alloc,
                                                     VkCommandPool *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    VkResult r =
        cap_vk_result(d->fn.CreateCommandPool(device, ci, alloc, out), "vkCreateCommandPool");
    if (r == VK_SUCCESS && cap.timing && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        sbt_map_putp(&cap.cmd_pools, CAP_H(*out), (void *)(uintptr_t)(ci->queueFamilyIndex + 1ull));
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

static void pool_each_cb(uint64_t pool, int destroy)
{
    struct sbt_map *m = &cap.objs[CAP_T_CMDBUF];
    uint64_t pos = 0, k, v, n = 0, *mine = malloc((sbt_map_count(m) + 1) * sizeof *mine);
    if (!mine) {
        cap_fail("out of memory listing a pool's command buffers");
        return;
    }
    while (sbt_map_next(m, &pos, &k, &v)) { /* collected first: the map changes below */
        const struct cap_cmdbuf *cb = (const void *)(uintptr_t)v;
        if (cb && cb->pool_handle == pool)
            mine[n++] = k;
    }
    for (uint64_t i = 0; i < n; i++) {
        struct cap_cmdbuf *cb = sbt_map_getp(m, mine[i]);
        if (destroy) {
            sbt_map_del(m, mine[i]);
            cb_free(cb);
        } else {
            cb_reset(cb);
        }
    }
    free(mine);
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyCommandPool(VkDevice device, VkCommandPool pool,
                                                  const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (pool && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        pool_each_cb(CAP_H(pool), 1);
        sbt_map_delp(&cap.cmd_pools, CAP_H(pool));
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.DestroyCommandPool(device, pool, alloc);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_ResetCommandPool(VkDevice device, VkCommandPool pool,
                                                    VkCommandPoolResetFlags f)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        pool_each_cb(CAP_H(pool), 0);
        pthread_mutex_unlock(&cap.mu);
    }
    return cap_vk_result(d->fn.ResetCommandPool(device, pool, f), "vkResetCommandPool");
}

VKAPI_ATTR VkResult VKAPI_CALL cap_AllocateCommandBuffers(VkDevice device,
                                                          const VkCommandBufferAllocateInfo *ai,
                                                          VkCommandBuffer *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    VkResult r =
        cap_vk_result(d->fn.AllocateCommandBuffers(device, ai, out), "vkAllocateCommandBuffers");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    for (uint32_t i = 0; i < ai->commandBufferCount; i++) {
        struct cap_cmdbuf *cb =
            cap_obj_new(sizeof *cb, CAP_T_CMDBUF, VK_OBJECT_TYPE_COMMAND_BUFFER, CAP_H(out[i]), d);
        if (!cb)
            break;
        cb->pool_handle = CAP_H(ai->commandPool);
        cb->level = ai->level;
        uintptr_t fam =
            cap.timing ? (uintptr_t)sbt_map_getp(&cap.cmd_pools, CAP_H(ai->commandPool)) : 0;
        if (fam && fam - 1 < d->n_qfam) {
            cb->family = (uint32_t)(fam - 1);
            cb->ts_bits = d->qfam[cb->family].timestampValidBits;
        }
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_FreeCommandBuffers(VkDevice device, VkCommandPool pool, uint32_t n,
                                                  const VkCommandBuffer *cbs)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        for (uint32_t i = 0; i < n; i++)
            cb_free(cap_obj_del(CAP_H(cbs[i]), CAP_T_CMDBUF));
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.FreeCommandBuffers(device, pool, n, cbs);
}

/* --timing: a timestamp before a timed command (its pair, UINT32_MAX = untimed) and after it.
 * The default path pays one load of cap.timing. */
#define TS_BEFORE(h) (cap.timing && CAP_ON() ? cap_ts_before(cb_get(h), h) : UINT32_MAX)
#define TS_AFTER(h, ts)                     \
    do {                                    \
        if ((ts) != UINT32_MAX)             \
            cap_ts_after(cb_get(h), h, ts); \
    } while (0)

/* Starts a raw record of call in h's recording: its command buffer, or NULL when the layer is
 * not recording it. No lock: the program owns h on this thread. */
static struct cap_cmdbuf *rec_begin(VkCommandBuffer h, uint32_t call)
{
    struct cap_cmdbuf *cb = CAP_ON() ? cb_get(h) : NULL;
    if (cb)
        sbt_payload_enc_begin(&cb->raw, call);
    return cb;
}

/* Ends the record rec_begin started (cb not NULL): counted, and a failure to encode (out of
 * memory) fails the capture. */
static void rec_end(struct cap_cmdbuf *cb)
{
    sbt_payload_enc_end(&cb->raw, NULL, 0);
    cb->n_cmds++;
    if (cb->raw.status)
        cap_fail("recording a command buffer: %s", sbt_errmsg());
}

/* Appends one raw record of call with arguments a[n] and bytes to h's recording. */
static void cb_rec(VkCommandBuffer h, uint32_t call, const uint64_t *a, size_t n, const void *bytes,
                   size_t nb)
{
    struct cap_cmdbuf *cb = CAP_ON() ? cb_get(h) : NULL;
    if (!cb)
        return;
    sbt_payload_put(&cb->raw, call, a, n, bytes, nb);
    cb->n_cmds++;
    if (cb->raw.status)
        cap_fail("recording a command buffer: %s", sbt_errmsg());
}

/* Outside what the layer records: counted now, and a CMD_UNSUPPORTED record naming it, so
 * that every submission carrying it gets its marker where the device meets it. */
void cap_vk_count_cmd(VkCommandBuffer h, uint32_t id)
{
    cap_vk_count(id);
    const char *name = cap_vk_cmds[id].name;
    cb_rec(h, SBT_VK_CMD_UNSUPPORTED, NULL, 0, name, strlen(name));
}

/* The same for a case of a recorded command that could not be recorded (what: a literal). */
static void cb_unmodelled(VkCommandBuffer h, const char *what)
{
    cap_vk_count(cap_unmod_id(what, SBT_UNMODELLED_AFFECTS, 0));
    cb_rec(h, SBT_VK_CMD_UNSUPPORTED, NULL, 0, what, strlen(what));
}

VKAPI_ATTR VkResult VKAPI_CALL cap_BeginCommandBuffer(VkCommandBuffer h,
                                                      const VkCommandBufferBeginInfo *bi)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    if (CAP_ON()) {
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
            cb_rec(h, SBT_VK_CMD_BEGIN, (uint64_t[]){CAP_H(h), cb->level, bi->flags}, 3, NULL, 0);
        }
    }
    return cap_vk_result(d->fn.BeginCommandBuffer(h, bi), "vkBeginCommandBuffer");
}

VKAPI_ATTR VkResult VKAPI_CALL cap_EndCommandBuffer(VkCommandBuffer h)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    if (CAP_ON()) {
        struct cap_cmdbuf *cb = cb_get(h);
        if (cb) {
            cb_rec(h, SBT_VK_CMD_END, (uint64_t[]){cb->n_cmds}, 1, NULL, 0);
            cb->recording = 0;
        }
    }
    return cap_vk_result(d->fn.EndCommandBuffer(h), "vkEndCommandBuffer");
}

VKAPI_ATTR VkResult VKAPI_CALL cap_ResetCommandBuffer(VkCommandBuffer h,
                                                      VkCommandBufferResetFlags f)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    if (CAP_ON()) {
        struct cap_cmdbuf *cb = cb_get(h);
        if (cb && cb->n_ts_pool) {
            pthread_mutex_lock(&cap.mu);
            cb_reset(cb);
            pthread_mutex_unlock(&cap.mu);
        } else if (cb) {
            cb_reset(cb);
        }
    }
    return cap_vk_result(d->fn.ResetCommandBuffer(h, f), "vkResetCommandBuffer");
}

VKAPI_ATTR void VKAPI_CALL cap_CmdBindPipeline(VkCommandBuffer h, VkPipelineBindPoint bp,
                                               VkPipeline p)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    cb_rec(h, SBT_VK_CMD_BIND_PIPELINE, (uint64_t[]){bp, CAP_H(p)}, 2, NULL, 0);
    d->fn.CmdBindPipeline(h, bp, p);
}

/* CMD_BIND_SETS: bind point, layout, first set, the sets, the dynamic offsets. */
static void rec_bind_sets(VkCommandBuffer h, uint32_t bp, VkPipelineLayout layout, uint32_t first,
                          uint32_t n, const VkDescriptorSet *sets, uint32_t n_dyn,
                          const uint32_t *dyn, const char *too_many)
{
    if (!CAP_ON())
        return;
    if (n > 64 || n_dyn > 256) {
        cb_unmodelled(h, too_many);
        return;
    }
    uint64_t a[4 + 64 + 1 + 256];
    size_t k = 0;
    a[k++] = bp;
    a[k++] = CAP_H(layout);
    a[k++] = first;
    a[k++] = n;
    for (uint32_t i = 0; i < n; i++)
        a[k++] = CAP_H(sets[i]);
    a[k++] = n_dyn;
    for (uint32_t i = 0; i < n_dyn; i++)
        a[k++] = dyn[i];
    cb_rec(h, SBT_VK_CMD_BIND_SETS, a, k, NULL, 0);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdBindDescriptorSets(VkCommandBuffer h, VkPipelineBindPoint bp,
                                                     VkPipelineLayout layout, uint32_t first,
                                                     uint32_t n, const VkDescriptorSet *sets,
                                                     uint32_t n_dyn, const uint32_t *dyn)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    rec_bind_sets(h, bp, layout, first, n, sets, n_dyn, dyn,
                  "vkCmdBindDescriptorSets (more than 64 sets or 256 dynamic offsets)");
    d->fn.CmdBindDescriptorSets(h, bp, layout, first, n, sets, n_dyn, dyn);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdPushConstants(VkCommandBuffer h, VkPipelineLayout layout,
                                                VkShaderStageFlags stages, uint32_t off,
                                                uint32_t size, const void *values)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    cb_rec(h, SBT_VK_CMD_PUSH_CONSTANTS, (uint64_t[]){CAP_H(layout), stages, off}, 3, values, size);
    d->fn.CmdPushConstants(h, layout, stages, off, size, values);
}

/* ---- push descriptors ---------------------------------------------------------------------- */

/* By their 1.4 core names (VK_KHR_push_descriptor, VK_KHR_maintenance6): an older registry
 * leaves these commands to the rules (affecting). */
#ifdef VK_VERSION_1_4

/* A descriptor of a type the capture does not record, pushed through via (a literal). */
static void cb_unmodelled_desc(VkCommandBuffer h, const char *via, uint32_t type)
{
    char what[192];
    snprintf(what, sizeof what, "%s (%s)", via, cap_desc_why(type));
    uint32_t id = cap_unmod_id(what, SBT_UNMODELLED_AFFECTS, 1);
    cap_vk_count(id);
    const char *name = cap_unmod_name(id);
    cb_rec(h, SBT_VK_CMD_UNSUPPORTED, NULL, 0, name, strlen(name));
}

/* A CMD_PUSH_SET record being built: the writes of one push. */
struct push_rec {
    struct cap_cmdbuf *cb;
    uint32_t bad_type, n_bad; /* writes of types not recorded (the first one's type) */
};

static void push_write(void *ctx, const VkWriteDescriptorSet *w)
{
    struct push_rec *p = ctx;
    if (!cap_desc_recorded(w->descriptorType)) {
        if (!p->n_bad++)
            p->bad_type = w->descriptorType;
        return;
    }
    cap_enc_write(&p->cb->raw, w);
}

/* Push descriptors become one CMD_PUSH_SET record of the command buffer, with the writes in
 * the form set updates use (cap_vk_descriptors.c); cap_vk_submit.c applies them to the command
 * buffer's push set when it expands the recording. A template push turns into the writes it
 * amounts to here, while its data is valid. Writes of a type the capture does not record are
 * left out and counted. */
static void rec_push(VkCommandBuffer h, uint32_t bp, VkPipelineLayout layout, uint32_t set,
                     uint32_t n, const VkWriteDescriptorSet *w, VkDescriptorUpdateTemplate templ,
                     const void *data, const char *via)
{
    struct cap_cmdbuf *cb = CAP_ON() ? cb_get(h) : NULL;
    if (!cb)
        return;
    struct push_rec p = {cb, 0, 0};
    if (templ)
        pthread_mutex_lock(&cap.mu); /* the template's shadow */
    const struct cap_templ *t = templ ? cap_obj_find(CAP_H(templ), CAP_T_TEMPL) : NULL;
    if (t)
        bp = t->bind_point;
    sbt_payload_enc_begin(&cb->raw, SBT_VK_CMD_PUSH_SET);
    sbt_payload_enc_arg(&cb->raw, bp);
    sbt_payload_enc_arg(&cb->raw, CAP_H(layout));
    sbt_payload_enc_arg(&cb->raw, set);
    for (uint32_t i = 0; i < n; i++)
        push_write(&p, &w[i]);
    if (t)
        cap_templ_writes(t, data, push_write, &p);
    sbt_payload_enc_end(&cb->raw, NULL, 0);
    cb->n_cmds++;
    if (templ)
        pthread_mutex_unlock(&cap.mu);
    if (cb->raw.status)
        cap_fail("recording a command buffer: %s", sbt_errmsg());
    if (templ && !t)
        cb_unmodelled(h, "vkCmdPushDescriptorSetWithTemplate (template not captured)");
    if (p.n_bad)
        cb_unmodelled_desc(h, via, p.bad_type);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdPushDescriptorSet(VkCommandBuffer h, VkPipelineBindPoint bp,
                                                    VkPipelineLayout layout, uint32_t set,
                                                    uint32_t n, const VkWriteDescriptorSet *w)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    rec_push(h, bp, layout, set, n, w, VK_NULL_HANDLE, NULL, "vkCmdPushDescriptorSet");
    d->fn.CmdPushDescriptorSet(h, bp, layout, set, n, w);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdPushDescriptorSetWithTemplate(VkCommandBuffer h,
                                                                VkDescriptorUpdateTemplate templ,
                                                                VkPipelineLayout layout,
                                                                uint32_t set, const void *data)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    rec_push(h, 0, layout, set, 0, NULL, templ, data, "vkCmdPushDescriptorSetWithTemplate");
    d->fn.CmdPushDescriptorSetWithTemplate(h, templ, layout, set, data);
}

/* The maintenance6 forms name shader stages instead of a bind point: what they do to the
 * compute stage is recorded (graphics is outside the subset). A null layout with a
 * VkPipelineLayoutCreateInfo in pNext (dynamicPipelineLayout) is not. */
static int stage_layout(VkCommandBuffer h, VkShaderStageFlags stages, VkPipelineLayout layout,
                        const char *what)
{
    if (!(stages & VK_SHADER_STAGE_COMPUTE_BIT) || !CAP_ON())
        return 0;
    if (!layout) {
        cb_unmodelled(h, what);
        return 0;
    }
    return 1;
}

VKAPI_ATTR void VKAPI_CALL cap_CmdBindDescriptorSets2(VkCommandBuffer h,
                                                      const VkBindDescriptorSetsInfo *i)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    if (stage_layout(h, i->stageFlags, i->layout,
                     "vkCmdBindDescriptorSets2 (pipeline layout given in pNext)"))
        rec_bind_sets(h, VK_PIPELINE_BIND_POINT_COMPUTE, i->layout, i->firstSet,
                      i->descriptorSetCount, i->pDescriptorSets, i->dynamicOffsetCount,
                      i->pDynamicOffsets,
                      "vkCmdBindDescriptorSets2 (more than 64 sets or 256 dynamic offsets)");
    d->fn.CmdBindDescriptorSets2(h, i);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdPushConstants2(VkCommandBuffer h, const VkPushConstantsInfo *i)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    if (stage_layout(h, i->stageFlags, i->layout,
                     "vkCmdPushConstants2 (pipeline layout given in pNext)"))
        cb_rec(h, SBT_VK_CMD_PUSH_CONSTANTS,
               (uint64_t[]){CAP_H(i->layout), i->stageFlags, i->offset}, 3, i->pValues, i->size);
    d->fn.CmdPushConstants2(h, i);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdPushDescriptorSet2(VkCommandBuffer h,
                                                     const VkPushDescriptorSetInfo *i)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    if (stage_layout(h, i->stageFlags, i->layout,
                     "vkCmdPushDescriptorSet2 (pipeline layout given in pNext)"))
        rec_push(h, VK_PIPELINE_BIND_POINT_COMPUTE, i->layout, i->set, i->descriptorWriteCount,
                 i->pDescriptorWrites, VK_NULL_HANDLE, NULL, "vkCmdPushDescriptorSet2");
    d->fn.CmdPushDescriptorSet2(h, i);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdPushDescriptorSetWithTemplate2(
    VkCommandBuffer h, const VkPushDescriptorSetWithTemplateInfo *i)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    /* the template says which bind point; a null layout comes with a VkPipelineLayoutCreateInfo */
    if (CAP_ON() && !i->layout)
        cb_unmodelled(h, "vkCmdPushDescriptorSetWithTemplate2 (pipeline layout given in pNext)");
    else
        rec_push(h, 0, i->layout, i->set, 0, NULL, i->descriptorUpdateTemplate, i->pData,
                 "vkCmdPushDescriptorSetWithTemplate2");
    d->fn.CmdPushDescriptorSetWithTemplate2(h, i);
}
#endif

VKAPI_ATTR void VKAPI_CALL cap_CmdDispatch(VkCommandBuffer h, uint32_t x, uint32_t y, uint32_t z)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    cb_rec(h, SBT_VK_CMD_DISPATCH, (uint64_t[]){0, 0, 0, x, y, z}, 6, NULL, 0);
    d->fn.CmdDispatch(h, x, y, z);
    TS_AFTER(h, ts);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdDispatchBase(VkCommandBuffer h, uint32_t bx, uint32_t by,
                                               uint32_t bz, uint32_t x, uint32_t y, uint32_t z)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    cb_rec(h, SBT_VK_CMD_DISPATCH, (uint64_t[]){bx, by, bz, x, y, z}, 6, NULL, 0);
    d->fn.CmdDispatchBase(h, bx, by, bz, x, y, z);
    TS_AFTER(h, ts);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdDispatchIndirect(VkCommandBuffer h, VkBuffer b, VkDeviceSize off)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    cb_rec(h, SBT_VK_CMD_DISPATCH_INDIRECT, (uint64_t[]){CAP_H(b), off}, 2, NULL, 0);
    d->fn.CmdDispatchIndirect(h, b, off);
    TS_AFTER(h, ts);
}

static void rec_copy(VkCommandBuffer h, uint64_t src, uint64_t dst, uint32_t n,
                     const VkBufferCopy *r1, const VkBufferCopy2 *r2)
{
    struct cap_cmdbuf *cb = rec_begin(h, SBT_VK_CMD_COPY_BUFFER);
    if (!cb)
        return;
    struct sbt_payload_enc *e = &cb->raw;
    sbt_payload_enc_arg(e, src);
    sbt_payload_enc_arg(e, dst);
    sbt_payload_enc_arg(e, n);
    for (uint32_t i = 0; i < n; i++) {
        sbt_payload_enc_arg(e, r1 ? r1[i].srcOffset : r2[i].srcOffset);
        sbt_payload_enc_arg(e, r1 ? r1[i].dstOffset : r2[i].dstOffset);
        sbt_payload_enc_arg(e, r1 ? r1[i].size : r2[i].size);
    }
    rec_end(cb);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdCopyBuffer(VkCommandBuffer h, VkBuffer src, VkBuffer dst,
                                             uint32_t n, const VkBufferCopy *r)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    rec_copy(h, CAP_H(src), CAP_H(dst), n, r, NULL);
    d->fn.CmdCopyBuffer(h, src, dst, n, r);
    TS_AFTER(h, ts);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdCopyBuffer2(VkCommandBuffer h, const VkCopyBufferInfo2 *ci)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    rec_copy(h, CAP_H(ci->srcBuffer), CAP_H(ci->dstBuffer), ci->regionCount, NULL, ci->pRegions);
    d->fn.CmdCopyBuffer2(h, ci);
    TS_AFTER(h, ts);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdFillBuffer(VkCommandBuffer h, VkBuffer dst, VkDeviceSize off,
                                             VkDeviceSize size, uint32_t data)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    cb_rec(h, SBT_VK_CMD_FILL_BUFFER, (uint64_t[]){CAP_H(dst), off, size, data}, 4, NULL, 0);
    d->fn.CmdFillBuffer(h, dst, off, size, data);
    TS_AFTER(h, ts);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdUpdateBuffer(VkCommandBuffer h, VkBuffer dst, VkDeviceSize off,
                                               VkDeviceSize size, const void *data)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    cb_rec(h, SBT_VK_CMD_UPDATE_BUFFER, (uint64_t[]){CAP_H(dst), off, size}, 3, data, size);
    d->fn.CmdUpdateBuffer(h, dst, off, size, data);
    TS_AFTER(h, ts);
}

/* ---- images: copies, blits, clears ---------------------------------------------------- */

/* The 13 arguments of a buffer<->image copy region (sbt_vk.h COPY_BUFFER_TO_IMAGE). */
static void enc_bic(struct sbt_payload_enc *e, const VkBufferImageCopy *r)
{
    const VkImageSubresourceLayers *s = &r->imageSubresource;
    uint64_t a[] = {r->bufferOffset,
                    r->bufferRowLength,
                    r->bufferImageHeight,
                    s->aspectMask,
                    s->mipLevel,
                    s->baseArrayLayer,
                    s->layerCount,
                    (uint32_t)r->imageOffset.x,
                    (uint32_t)r->imageOffset.y,
                    (uint32_t)r->imageOffset.z,
                    r->imageExtent.width,
                    r->imageExtent.height,
                    r->imageExtent.depth};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        sbt_payload_enc_arg(e, a[i]);
}

static VkBufferImageCopy bic_of2(const VkBufferImageCopy2 *r)
{
    return (VkBufferImageCopy){r->bufferOffset,     r->bufferRowLength, r->bufferImageHeight,
                               r->imageSubresource, r->imageOffset,     r->imageExtent};
}

static void enc_subres(struct sbt_payload_enc *e, const VkImageSubresourceLayers *s)
{
    sbt_payload_enc_arg(e, s->aspectMask);
    sbt_payload_enc_arg(e, s->mipLevel);
    sbt_payload_enc_arg(e, s->baseArrayLayer);
    sbt_payload_enc_arg(e, s->layerCount);
}

static void enc_off(struct sbt_payload_enc *e, VkOffset3D o)
{
    sbt_payload_enc_arg(e, (uint32_t)o.x);
    sbt_payload_enc_arg(e, (uint32_t)o.y);
    sbt_payload_enc_arg(e, (uint32_t)o.z);
}

/* Starts a raw image command record of cb; NULL when not recording. */
/* Region structures chained to a *2 command's regions (transforms): not recorded. */
static int regions_chained(const void *regions, size_t stride, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (((const VkBaseInStructure *)((const uint8_t *)regions + i * stride))->pNext)
            return 1;
    return 0;
}

/* A *2 command (INFO: its info structure) whose info or regions chain a structure the capture
 * does not record is unmodelled where it runs; NAME names the command. */
#define V2_CHAIN_CHECK(h, info, name)                                                           \
    do {                                                                                        \
        if (CAP_ON() &&                                                                         \
            ((info)->pNext ||                                                                   \
             regions_chained((info)->pRegions, sizeof *(info)->pRegions, (info)->regionCount))) \
            cb_unmodelled(h, name " (a structure the capture does not record)");                \
    } while (0)

/* A buffer<->image copy: its three leading arguments in the record's order (buffer, image,
 * layout for BUFFER_TO_IMAGE; image, layout, buffer for IMAGE_TO_BUFFER), then the regions of
 * either version */
static void rec_bic(VkCommandBuffer h, uint32_t kind, uint64_t a0, uint64_t a1, uint64_t a2,
                    uint32_t n, const VkBufferImageCopy *r1, const VkBufferImageCopy2 *r2)
{
    struct cap_cmdbuf *cb = rec_begin(h, kind);
    if (!cb)
        return;
    sbt_payload_enc_arg(&cb->raw, a0);
    sbt_payload_enc_arg(&cb->raw, a1);
    sbt_payload_enc_arg(&cb->raw, a2);
    sbt_payload_enc_arg(&cb->raw, n);
    for (uint32_t i = 0; i < n; i++) {
        VkBufferImageCopy r = r1 ? r1[i] : bic_of2(&r2[i]);
        enc_bic(&cb->raw, &r);
    }
    rec_end(cb);
}

static void rec_buf_to_img(VkCommandBuffer h, VkBuffer src, VkImage dst, VkImageLayout layout,
                           uint32_t n, const VkBufferImageCopy *r1, const VkBufferImageCopy2 *r2)
{
    rec_bic(h, SBT_VK_CMD_COPY_BUFFER_TO_IMAGE, CAP_H(src), CAP_H(dst), layout, n, r1, r2);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdCopyBufferToImage(VkCommandBuffer h, VkBuffer src, VkImage dst,
                                                    VkImageLayout layout, uint32_t n,
                                                    const VkBufferImageCopy *r)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    rec_buf_to_img(h, src, dst, layout, n, r, NULL);
    d->fn.CmdCopyBufferToImage(h, src, dst, layout, n, r);
    TS_AFTER(h, ts);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdCopyBufferToImage2(VkCommandBuffer h,
                                                     const VkCopyBufferToImageInfo2 *ci)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    V2_CHAIN_CHECK(h, ci, "vkCmdCopyBufferToImage2");
    uint32_t ts = TS_BEFORE(h);
    rec_buf_to_img(h, ci->srcBuffer, ci->dstImage, ci->dstImageLayout, ci->regionCount, NULL,
                   ci->pRegions);
    d->fn.CmdCopyBufferToImage2(h, ci);
    TS_AFTER(h, ts);
}

static void rec_img_to_buf(VkCommandBuffer h, VkImage src, VkImageLayout layout, VkBuffer dst,
                           uint32_t n, const VkBufferImageCopy *r1, const VkBufferImageCopy2 *r2)
{
    rec_bic(h, SBT_VK_CMD_COPY_IMAGE_TO_BUFFER, CAP_H(src), layout, CAP_H(dst), n, r1, r2);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdCopyImageToBuffer(VkCommandBuffer h, VkImage src,
                                                    VkImageLayout layout, VkBuffer dst, uint32_t n,
                                                    const VkBufferImageCopy *r)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    rec_img_to_buf(h, src, layout, dst, n, r, NULL);
    d->fn.CmdCopyImageToBuffer(h, src, layout, dst, n, r);
    TS_AFTER(h, ts);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdCopyImageToBuffer2(VkCommandBuffer h,
                                                     const VkCopyImageToBufferInfo2 *ci)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    V2_CHAIN_CHECK(h, ci, "vkCmdCopyImageToBuffer2");
    uint32_t ts = TS_BEFORE(h);
    rec_img_to_buf(h, ci->srcImage, ci->srcImageLayout, ci->dstBuffer, ci->regionCount, NULL,
                   ci->pRegions);
    d->fn.CmdCopyImageToBuffer2(h, ci);
    TS_AFTER(h, ts);
}

static void rec_img_copy(VkCommandBuffer h, VkImage src, VkImageLayout sl, VkImage dst,
                         VkImageLayout dl, uint32_t n, const VkImageCopy *r1,
                         const VkImageCopy2 *r2)
{
    struct cap_cmdbuf *cb = rec_begin(h, SBT_VK_CMD_COPY_IMAGE);
    if (!cb)
        return;
    struct sbt_payload_enc *e = &cb->raw;
    sbt_payload_enc_arg(e, CAP_H(src));
    sbt_payload_enc_arg(e, sl);
    sbt_payload_enc_arg(e, CAP_H(dst));
    sbt_payload_enc_arg(e, dl);
    sbt_payload_enc_arg(e, n);
    for (uint32_t i = 0; i < n; i++) {
        enc_subres(e, r1 ? &r1[i].srcSubresource : &r2[i].srcSubresource);
        enc_off(e, r1 ? r1[i].srcOffset : r2[i].srcOffset);
        enc_subres(e, r1 ? &r1[i].dstSubresource : &r2[i].dstSubresource);
        enc_off(e, r1 ? r1[i].dstOffset : r2[i].dstOffset);
        VkExtent3D x = r1 ? r1[i].extent : r2[i].extent;
        sbt_payload_enc_arg(e, x.width);
        sbt_payload_enc_arg(e, x.height);
        sbt_payload_enc_arg(e, x.depth);
    }
    rec_end(cb);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdCopyImage(VkCommandBuffer h, VkImage src, VkImageLayout sl,
                                            VkImage dst, VkImageLayout dl, uint32_t n,
                                            const VkImageCopy *r)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    rec_img_copy(h, src, sl, dst, dl, n, r, NULL);
    d->fn.CmdCopyImage(h, src, sl, dst, dl, n, r);
    TS_AFTER(h, ts);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdCopyImage2(VkCommandBuffer h, const VkCopyImageInfo2 *ci)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    V2_CHAIN_CHECK(h, ci, "vkCmdCopyImage2");
    uint32_t ts = TS_BEFORE(h);
    rec_img_copy(h, ci->srcImage, ci->srcImageLayout, ci->dstImage, ci->dstImageLayout,
                 ci->regionCount, NULL, ci->pRegions);
    d->fn.CmdCopyImage2(h, ci);
    TS_AFTER(h, ts);
}

static void rec_blit(VkCommandBuffer h, VkImage src, VkImageLayout sl, VkImage dst,
                     VkImageLayout dl, VkFilter filter, uint32_t n, const VkImageBlit *r1,
                     const VkImageBlit2 *r2)
{
    struct cap_cmdbuf *cb = rec_begin(h, SBT_VK_CMD_BLIT_IMAGE);
    if (!cb)
        return;
    struct sbt_payload_enc *e = &cb->raw;
    sbt_payload_enc_arg(e, CAP_H(src));
    sbt_payload_enc_arg(e, sl);
    sbt_payload_enc_arg(e, CAP_H(dst));
    sbt_payload_enc_arg(e, dl);
    sbt_payload_enc_arg(e, filter);
    sbt_payload_enc_arg(e, n);
    for (uint32_t i = 0; i < n; i++) {
        enc_subres(e, r1 ? &r1[i].srcSubresource : &r2[i].srcSubresource);
        enc_off(e, r1 ? r1[i].srcOffsets[0] : r2[i].srcOffsets[0]);
        enc_off(e, r1 ? r1[i].srcOffsets[1] : r2[i].srcOffsets[1]);
        enc_subres(e, r1 ? &r1[i].dstSubresource : &r2[i].dstSubresource);
        enc_off(e, r1 ? r1[i].dstOffsets[0] : r2[i].dstOffsets[0]);
        enc_off(e, r1 ? r1[i].dstOffsets[1] : r2[i].dstOffsets[1]);
    }
    rec_end(cb);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdBlitImage(VkCommandBuffer h, VkImage src, VkImageLayout sl,
                                            VkImage dst, VkImageLayout dl, uint32_t n,
                                            const VkImageBlit *r, VkFilter filter)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    rec_blit(h, src, sl, dst, dl, filter, n, r, NULL);
    d->fn.CmdBlitImage(h, src, sl, dst, dl, n, r, filter);
    TS_AFTER(h, ts);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdBlitImage2(VkCommandBuffer h, const VkBlitImageInfo2 *bi)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    V2_CHAIN_CHECK(h, bi, "vkCmdBlitImage2");
    uint32_t ts = TS_BEFORE(h);
    rec_blit(h, bi->srcImage, bi->srcImageLayout, bi->dstImage, bi->dstImageLayout, bi->filter,
             bi->regionCount, NULL, bi->pRegions);
    d->fn.CmdBlitImage2(h, bi);
    TS_AFTER(h, ts);
}

static void rec_clear(VkCommandBuffer h, VkImage img, VkImageLayout layout, uint32_t kind,
                      const uint32_t v[4], uint32_t n, const VkImageSubresourceRange *rg)
{
    struct cap_cmdbuf *cb = rec_begin(h, SBT_VK_CMD_CLEAR_IMAGE);
    if (!cb)
        return;
    struct sbt_payload_enc *e = &cb->raw;
    sbt_payload_enc_arg(e, CAP_H(img));
    sbt_payload_enc_arg(e, layout);
    sbt_payload_enc_arg(e, kind);
    for (int i = 0; i < 4; i++)
        sbt_payload_enc_arg(e, v[i]);
    sbt_payload_enc_arg(e, n);
    for (uint32_t i = 0; i < n; i++) {
        sbt_payload_enc_arg(e, rg[i].aspectMask);
        sbt_payload_enc_arg(e, rg[i].baseMipLevel);
        sbt_payload_enc_arg(e, rg[i].levelCount);
        sbt_payload_enc_arg(e, rg[i].baseArrayLayer);
        sbt_payload_enc_arg(e, rg[i].layerCount);
    }
    rec_end(cb);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdClearColorImage(VkCommandBuffer h, VkImage img,
                                                  VkImageLayout layout,
                                                  const VkClearColorValue *color, uint32_t n,
                                                  const VkImageSubresourceRange *rg)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    rec_clear(h, img, layout, 0, color->uint32, n, rg);
    d->fn.CmdClearColorImage(h, img, layout, color, n, rg);
    TS_AFTER(h, ts);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdClearDepthStencilImage(VkCommandBuffer h, VkImage img,
                                                         VkImageLayout layout,
                                                         const VkClearDepthStencilValue *ds,
                                                         uint32_t n,
                                                         const VkImageSubresourceRange *rg)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    uint32_t ts = TS_BEFORE(h);
    uint32_t v[4] = {0, ds->stencil, 0, 0};
    memcpy(&v[0], &ds->depth, sizeof v[0]);
    rec_clear(h, img, layout, 1, v, n, rg);
    d->fn.CmdClearDepthStencilImage(h, img, layout, ds, n, rg);
    TS_AFTER(h, ts);
}

/* ---- barriers ------------------------------------------------------------------------- */

/* Barriers: argument layout of CMD_BARRIER (sbt_vk.h), image barriers with their layouts and
 * subresource ranges. Replay orders its ops by the dependency graph and keeps every image in
 * the general layout, so it needs none of them; the recording keeps them for the record. */
static void enc_barrier(struct sbt_payload_enc *e, uint64_t src, uint64_t dst, uint32_t flags,
                        uint32_t nm, const VkMemoryBarrier *m1, const VkMemoryBarrier2 *m2,
                        uint32_t nb, const VkBufferMemoryBarrier *b1,
                        const VkBufferMemoryBarrier2 *b2, uint32_t ni,
                        const VkImageMemoryBarrier *i1, const VkImageMemoryBarrier2 *i2)
{
    sbt_payload_enc_arg(e, src);
    sbt_payload_enc_arg(e, dst);
    sbt_payload_enc_arg(e, flags);
    sbt_payload_enc_arg(e, nm);
    for (uint32_t i = 0; i < nm; i++) {
        sbt_payload_enc_arg(e, m1 ? src : m2[i].srcStageMask);
        sbt_payload_enc_arg(e, m1 ? m1[i].srcAccessMask : m2[i].srcAccessMask);
        sbt_payload_enc_arg(e, m1 ? dst : m2[i].dstStageMask);
        sbt_payload_enc_arg(e, m1 ? m1[i].dstAccessMask : m2[i].dstAccessMask);
    }
    sbt_payload_enc_arg(e, nb);
    for (uint32_t i = 0; i < nb; i++) {
        sbt_payload_enc_arg(e, b1 ? src : b2[i].srcStageMask);
        sbt_payload_enc_arg(e, b1 ? b1[i].srcAccessMask : b2[i].srcAccessMask);
        sbt_payload_enc_arg(e, b1 ? dst : b2[i].dstStageMask);
        sbt_payload_enc_arg(e, b1 ? b1[i].dstAccessMask : b2[i].dstAccessMask);
        sbt_payload_enc_arg(e, b1 ? b1[i].srcQueueFamilyIndex : b2[i].srcQueueFamilyIndex);
        sbt_payload_enc_arg(e, b1 ? b1[i].dstQueueFamilyIndex : b2[i].dstQueueFamilyIndex);
        sbt_payload_enc_arg(e, CAP_H(b1 ? b1[i].buffer : b2[i].buffer));
        sbt_payload_enc_arg(e, b1 ? b1[i].offset : b2[i].offset);
        sbt_payload_enc_arg(e, b1 ? b1[i].size : b2[i].size);
    }
    sbt_payload_enc_arg(e, ni);
    for (uint32_t i = 0; i < ni; i++) {
        const VkImageSubresourceRange *r = i1 ? &i1[i].subresourceRange : &i2[i].subresourceRange;
        uint64_t a[] = {i1 ? src : i2[i].srcStageMask,
                        i1 ? i1[i].srcAccessMask : i2[i].srcAccessMask,
                        i1 ? dst : i2[i].dstStageMask,
                        i1 ? i1[i].dstAccessMask : i2[i].dstAccessMask,
                        i1 ? i1[i].oldLayout : i2[i].oldLayout,
                        i1 ? i1[i].newLayout : i2[i].newLayout,
                        i1 ? i1[i].srcQueueFamilyIndex : i2[i].srcQueueFamilyIndex,
                        i1 ? i1[i].dstQueueFamilyIndex : i2[i].dstQueueFamilyIndex,
                        CAP_H(i1 ? i1[i].image : i2[i].image),
                        r->aspectMask,
                        r->baseMipLevel,
                        r->levelCount,
                        r->baseArrayLayer,
                        r->layerCount};
        for (size_t k = 0; k < sizeof a / sizeof a[0]; k++)
            sbt_payload_enc_arg(e, a[k]);
    }
}

VKAPI_ATTR void VKAPI_CALL cap_CmdPipelineBarrier(VkCommandBuffer h, VkPipelineStageFlags src,
                                                  VkPipelineStageFlags dst, VkDependencyFlags f,
                                                  uint32_t nm, const VkMemoryBarrier *m,
                                                  uint32_t nb, const VkBufferMemoryBarrier *b,
                                                  uint32_t ni, const VkImageMemoryBarrier *im)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    struct cap_cmdbuf *cb = rec_begin(h, SBT_VK_CMD_BARRIER);
    if (cb) {
        enc_barrier(&cb->raw, src, dst, f, nm, m, NULL, nb, b, NULL, ni, im, NULL);
        rec_end(cb);
    }
    d->fn.CmdPipelineBarrier(h, src, dst, f, nm, m, nb, b, ni, im);
}

static void rec_dep2(struct sbt_payload_enc *e, const VkDependencyInfo *di)
{
    enc_barrier(e, 0, 0, di->dependencyFlags, di->memoryBarrierCount, NULL, di->pMemoryBarriers,
                di->bufferMemoryBarrierCount, NULL, di->pBufferMemoryBarriers,
                di->imageMemoryBarrierCount, NULL, di->pImageMemoryBarriers);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdPipelineBarrier2(VkCommandBuffer h, const VkDependencyInfo *di)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    struct cap_cmdbuf *cb = rec_begin(h, SBT_VK_CMD_BARRIER);
    if (cb) {
        rec_dep2(&cb->raw, di);
        rec_end(cb);
    }
    d->fn.CmdPipelineBarrier2(h, di);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdSetEvent(VkCommandBuffer h, VkEvent ev, VkPipelineStageFlags st)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    cb_rec(h, SBT_VK_CMD_SET_EVENT, (uint64_t[]){CAP_H(ev), st}, 2, NULL, 0);
    d->fn.CmdSetEvent(h, ev, st);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdSetEvent2(VkCommandBuffer h, VkEvent ev,
                                            const VkDependencyInfo *di)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    cb_rec(h, SBT_VK_CMD_SET_EVENT, (uint64_t[]){CAP_H(ev), VK_PIPELINE_STAGE_ALL_COMMANDS_BIT}, 2,
           NULL, 0);
    d->fn.CmdSetEvent2(h, ev, di);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdResetEvent(VkCommandBuffer h, VkEvent ev, VkPipelineStageFlags st)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    cb_rec(h, SBT_VK_CMD_RESET_EVENT, (uint64_t[]){CAP_H(ev), st}, 2, NULL, 0);
    d->fn.CmdResetEvent(h, ev, st);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdResetEvent2(VkCommandBuffer h, VkEvent ev,
                                              VkPipelineStageFlags2 st)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    cb_rec(h, SBT_VK_CMD_RESET_EVENT, (uint64_t[]){CAP_H(ev), st}, 2, NULL, 0);
    d->fn.CmdResetEvent2(h, ev, st);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdWaitEvents(VkCommandBuffer h, uint32_t n, const VkEvent *evs,
                                             VkPipelineStageFlags src, VkPipelineStageFlags dst,
                                             uint32_t nm, const VkMemoryBarrier *m, uint32_t nb,
                                             const VkBufferMemoryBarrier *b, uint32_t ni,
                                             const VkImageMemoryBarrier *im)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    struct cap_cmdbuf *cb = rec_begin(h, SBT_VK_CMD_WAIT_EVENTS);
    if (cb) {
        sbt_payload_enc_arg(&cb->raw, n);
        for (uint32_t i = 0; i < n; i++)
            sbt_payload_enc_arg(&cb->raw, CAP_H(evs[i]));
        enc_barrier(&cb->raw, src, dst, 0, nm, m, NULL, nb, b, NULL, ni, im, NULL);
        rec_end(cb);
    }
    d->fn.CmdWaitEvents(h, n, evs, src, dst, nm, m, nb, b, ni, im);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdWaitEvents2(VkCommandBuffer h, uint32_t n, const VkEvent *evs,
                                              const VkDependencyInfo *di)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    struct cap_cmdbuf *cb = rec_begin(h, SBT_VK_CMD_WAIT_EVENTS);
    if (cb) {
        sbt_payload_enc_arg(&cb->raw, n);
        for (uint32_t i = 0; i < n; i++)
            sbt_payload_enc_arg(&cb->raw, CAP_H(evs[i]));
        if (n)
            rec_dep2(&cb->raw, &di[0]); /* one VkDependencyInfo per event; the first kept */
        rec_end(cb);
    }
    d->fn.CmdWaitEvents2(h, n, evs, di);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdWriteTimestamp(VkCommandBuffer h, VkPipelineStageFlagBits st,
                                                 VkQueryPool qp, uint32_t q)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    cb_rec(h, SBT_VK_CMD_WRITE_TIMESTAMP, (uint64_t[]){st, CAP_H(qp), q}, 3, NULL, 0);
    d->fn.CmdWriteTimestamp(h, st, qp, q);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdWriteTimestamp2(VkCommandBuffer h, VkPipelineStageFlags2 st,
                                                  VkQueryPool qp, uint32_t q)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    cb_rec(h, SBT_VK_CMD_WRITE_TIMESTAMP, (uint64_t[]){st, CAP_H(qp), q}, 3, NULL, 0);
    d->fn.CmdWriteTimestamp2(h, st, qp, q);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdResetQueryPool(VkCommandBuffer h, VkQueryPool qp, uint32_t first,
                                                 uint32_t n)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    cb_rec(h, SBT_VK_CMD_RESET_QUERIES, (uint64_t[]){CAP_H(qp), first, n}, 3, NULL, 0);
    d->fn.CmdResetQueryPool(h, qp, first, n);
}

VKAPI_ATTR void VKAPI_CALL cap_CmdExecuteCommands(VkCommandBuffer h, uint32_t n,
                                                  const VkCommandBuffer *cbs)
{
    struct cap_dev *d = cap_dev_of(h);
    CAP_COUNT();
    struct cap_cmdbuf *cb = rec_begin(h, SBT_VK_CMD_EXECUTE);
    if (cb) {
        sbt_payload_enc_arg(&cb->raw, n);
        for (uint32_t i = 0; i < n; i++)
            sbt_payload_enc_arg(&cb->raw, CAP_H(cbs[i]));
        rec_end(cb);
    }
    d->fn.CmdExecuteCommands(h, n, cbs);
}
