/*
 * capture/vk/cap_vk_timing.c — `--timing` (REPRISE_TIMING=1): device begin/end times of every
 * dispatch, copy, fill and update, from timestamp queries the layer injects into the
 * program's own command buffers.
 *
 * Recording. When the program records a timed command into a command buffer whose pool's
 * queue family has timestampValidBits, the layer writes a TOP_OF_PIPE timestamp before it and
 * a BOTTOM_OF_PIPE timestamp after it into query pools that belong to that command buffer
 * (CAP_TS_POOL_QUERIES queries each, created on first need and kept across re-recordings; the
 * first use of a pool in a recording is preceded by vkCmdResetQueryPool, so every execution
 * of the command buffer resets what it writes). The queries touch no memory of the program,
 * so its results cannot change; on lavapipe they cost one host clock read each.
 *
 * Reading. A submission's timed ops are listed in a struct cap_timing hung on its batch; the
 * writer thread holds that batch (and everything after it) back until it is ready. When the
 * host sees the submission finish (fence or timeline wait, counter read, idle wait: the same
 * moments that produce HOST_READ ops, cap_complete), the layer reads the queries without
 * waiting, maps the ticks to the host clock and marks the batch ready. A command buffer that
 * is re-recorded, reset, freed or submitted again before the layer saw its previous
 * submission finish settles that submission with whatever results are available then; ops
 * whose results are not available keep no device time (counted in capture.timing_untimed_ops).
 *
 * Clock. With VK_EXT_calibrated_timestamps (added to the program's device extensions when the
 * driver has it and it can calibrate against CLOCK_MONOTONIC) a (device tick, host ns) pair
 * is taken at the first read and again once a second, and device ticks map through it exactly.
 * Without it, the first timestamp of each submission is aligned to the host time of its
 * vkQueueSubmit call: durations and gaps inside a submission are exact, the offset is an upper
 * bound on queueing delay. Metadata clock.device_mapping says which.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

/* ========================================================================================== */
/* Recording                                                                                  */
/* ========================================================================================== */

uint32_t cap_ts_before(struct cap_cmdbuf *cb, VkCommandBuffer h)
{
    if (!cb || !cb->ts_bits || !cb->recording)
        return UINT32_MAX;
    struct cap_dev *d = cb->o.dev;
    if (!d->fn.CmdWriteTimestamp || !d->fn.CmdResetQueryPool || !d->fn.CreateQueryPool)
        return UINT32_MAX;
    uint32_t pair = cb->n_ts, q = 2 * pair;
    uint32_t pi = q / CAP_TS_POOL_QUERIES, qi = q % CAP_TS_POOL_QUERIES;
    if (pi >= cb->n_ts_pool) {
        VkQueryPool *v = realloc(cb->ts_pool, (pi + 1) * sizeof *v);
        if (!v)
            return UINT32_MAX;
        cb->ts_pool = v;
        VkQueryPoolCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                    .queryCount = CAP_TS_POOL_QUERIES};
        if (d->fn.CreateQueryPool(d->handle, &ci, NULL, &v[pi]) != VK_SUCCESS)
            return UINT32_MAX;
        cb->n_ts_pool = pi + 1;
    }
    if (cb->n_ts == cb->cap_ts) {
        uint32_t c = cb->cap_ts ? 2 * cb->cap_ts : 64;
        uint32_t *v = realloc(cb->ts_at, c * sizeof *v);
        if (!v)
            return UINT32_MAX;
        cb->ts_at = v;
        cb->cap_ts = c;
    }
    if (qi == 0)
        d->fn.CmdResetQueryPool(h, cb->ts_pool[pi], 0, CAP_TS_POOL_QUERIES);
    cb->ts_at[cb->n_ts++] = cb->n_cmds; /* the index the command's record is about to get */
    d->fn.CmdWriteTimestamp(h, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, cb->ts_pool[pi], qi);
    return pair;
}

void cap_ts_after(struct cap_cmdbuf *cb, VkCommandBuffer h, uint32_t pair)
{
    if (!cb || pair == UINT32_MAX)
        return;
    uint32_t q = 2 * pair + 1;
    if (q / CAP_TS_POOL_QUERIES >= cb->n_ts_pool)
        return;
    cb->o.dev->fn.CmdWriteTimestamp(h, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                                    cb->ts_pool[q / CAP_TS_POOL_QUERIES], q % CAP_TS_POOL_QUERIES);
}

uint32_t cap_ts_pair(const struct cap_cmdbuf *cb, uint32_t index)
{
    uint32_t lo = 0, hi = cb->n_ts;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cb->ts_at[mid] < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < cb->n_ts && cb->ts_at[lo] == index ? lo : UINT32_MAX;
}

void cap_ts_free(struct cap_cmdbuf *cb)
{
    struct cap_dev *d = cb->o.dev;
    for (uint32_t i = 0; i < cb->n_ts_pool; i++)
        if (d && !d->dead && d->fn.DestroyQueryPool)
            d->fn.DestroyQueryPool(d->handle, cb->ts_pool[i], NULL);
    free(cb->ts_pool);
    free(cb->ts_at);
    cb->ts_pool = NULL;
    cb->ts_at = NULL;
    cb->n_ts_pool = cb->n_ts = cb->cap_ts = 0;
}

/* ========================================================================================== */
/* Submissions                                                                                */
/* ========================================================================================== */

void cap_timing_add(struct cap_timing **tp, struct cap_ev *e, const struct cap_cmdbuf *cb,
                    uint32_t pair)
{
    uint32_t q = 2 * pair;
    if (q / CAP_TS_POOL_QUERIES >= cb->n_ts_pool)
        return;
    struct cap_timing *t = *tp;
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t)
            return;
        *tp = t;
    }
    if (t->n == t->cap_n) {
        uint32_t c = t->cap_n ? 2 * t->cap_n : 64;
        struct cap_ev **o = realloc(t->ops, c * sizeof *o);
        if (o)
            t->ops = o;
        uint32_t *qq = o ? realloc(t->query, c * sizeof *qq) : NULL;
        if (qq)
            t->query = qq;
        VkQueryPool *p = qq ? realloc(t->pool, c * sizeof *p) : NULL;
        if (!p)
            return; /* this op stays untimed */
        t->pool = p;
        t->cap_n = c;
    }
    t->ops[t->n] = e;
    t->pool[t->n] = cb->ts_pool[q / CAP_TS_POOL_QUERIES];
    t->query[t->n] = q % CAP_TS_POOL_QUERIES;
    t->n++;
}

void cap_timing_submit(struct cap_timing *t, struct cap_ev *head, struct cap_dev *dev,
                       struct cap_queue *q, uint64_t serial, uint64_t t_submit)
{
    uint32_t bits = q->family < dev->n_qfam ? dev->qfam[q->family].timestampValidBits : 0;
    t->dev = dev;
    t->queue = q->o.id;
    t->serial = serial;
    t->t_submit = t_submit;
    t->mask = bits >= 64 ? UINT64_MAX : bits ? (1ull << bits) - 1 : 0;
    head->timing = t;
    if (cap.n_tpend == cap.cap_tpend) {
        uint32_t c = cap.cap_tpend ? 2 * cap.cap_tpend : 16;
        struct cap_timing **v = realloc(cap.tpend, c * sizeof *v);
        if (!v) {
            atomic_fetch_add(&cap.n_untimed, t->n);
            atomic_store_explicit(&t->ready, 1, memory_order_release);
            return;
        }
        cap.tpend = v;
        cap.cap_tpend = c;
    }
    cap.tpend[cap.n_tpend++] = t;
}

void cap_timing_forget(struct cap_timing *t)
{
    for (uint32_t i = 0; i < cap.n_tpend; i++)
        if (cap.tpend[i] == t) {
            cap.tpend[i] = cap.tpend[--cap.n_tpend];
            return;
        }
}

/* ========================================================================================== */
/* Reading                                                                                    */
/* ========================================================================================== */

/* Ticks b - a on a counter of mask's width, signed (half the range each way). */
static int64_t tick_delta(uint64_t a, uint64_t b, uint64_t mask)
{
    uint64_t d = (b - a) & mask;
    if (mask == UINT64_MAX)
        return (int64_t)d;
    return d > mask / 2 ? -(int64_t)(mask - d + 1) : (int64_t)d;
}

static void calibrate(struct cap_dev *d)
{
    uint64_t now = cap_now();
    if (d->calib_at && now - d->calib_at < 1000000000u)
        return;
    VkCalibratedTimestampInfoEXT ti[2] = {
        {.sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT,
         .timeDomain = VK_TIME_DOMAIN_DEVICE_EXT},
        {.sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT,
         .timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT},
    };
    uint64_t ts[2], dev_ns;
    if (d->GetCalibratedTimestampsEXT(d->handle, 2, ti, ts, &dev_ns) != VK_SUCCESS)
        return;
    d->calib_ticks = ts[0];
    d->calib_host = ts[1] - cap.epoch_ns; /* wraps when before the epoch: read as signed */
    d->calib_at = now ? now : 1;
}

/* ns since the epoch, clamped at 0 */
static uint64_t clamp_ns(double v)
{
    return v <= 0 ? 0 : (uint64_t)(v + 0.5);
}

static void resolve(struct cap_timing *t)
{
    struct cap_dev *d = t->dev;
    int calib = d->GetCalibratedTimestampsEXT && !d->dead;
    if (calib) {
        calibrate(d);
        calib = d->calib_at != 0;
    }
    uint64_t first = 0;
    int have_first = 0;
    uint32_t n_ok = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        struct cap_ev *e = t->ops[i];
        uint64_t v[2] = {0, 0};
        if (d->dead ||
            d->fn.GetQueryPoolResults(d->handle, t->pool[i], t->query[i], 2, sizeof v, v,
                                      sizeof v[0], VK_QUERY_RESULT_64_BIT) != VK_SUCCESS) {
            t->ops[i] = NULL;
            continue;
        }
        /* raw ticks parked in the op until the mapping is known */
        e->op.dev_begin = v[0] & t->mask;
        e->op.dev_end = v[1] & t->mask;
        if (!have_first || tick_delta(first, e->op.dev_begin, t->mask) < 0)
            first = e->op.dev_begin;
        have_first = 1;
        n_ok++;
    }
    double period = d->ts_period_ns > 0 ? d->ts_period_ns : 1.0;
    for (uint32_t i = 0; i < t->n; i++) {
        struct cap_ev *e = t->ops[i];
        if (!e)
            continue;
        double b;
        if (calib)
            b = (double)(int64_t)d->calib_host +
                (double)tick_delta(d->calib_ticks, e->op.dev_begin, t->mask) * period;
        else
            b = (double)t->t_submit + (double)tick_delta(first, e->op.dev_begin, t->mask) * period;
        int64_t dur = tick_delta(e->op.dev_begin, e->op.dev_end, t->mask);
        e->op.dev_begin = clamp_ns(b);
        e->op.dev_end = e->op.dev_begin + clamp_ns((double)(dur > 0 ? dur : 0) * period);
        e->op.flags |= SBT_OPF_DEV_TIME;
    }
    atomic_fetch_add(&cap.n_timed, n_ok);
    atomic_fetch_add(&cap.n_untimed, t->n - n_ok);
}

/* Resolves pending entry i and takes it off the list (order is not kept). */
static void resolve_at(uint32_t i)
{
    struct cap_timing *t = cap.tpend[i];
    cap.tpend[i] = cap.tpend[--cap.n_tpend];
    resolve(t);
    /* the writer may free t from here on */
    atomic_store_explicit(&t->ready, 1, memory_order_release);
}

void cap_timing_complete(struct cap_dev *dev, uint64_t queue, uint64_t serial)
{
    for (uint32_t i = 0; i < cap.n_tpend;) {
        struct cap_timing *t = cap.tpend[i];
        if (t->dev == dev && (queue == 0 || t->queue == queue) && t->serial <= serial)
            resolve_at(i);
        else
            i++;
    }
}

void cap_timing_settle_cb(const struct cap_cmdbuf *cb)
{
    if (!cb->n_ts_pool)
        return;
    for (uint32_t i = 0; i < cap.n_tpend;) {
        struct cap_timing *t = cap.tpend[i];
        int uses = 0;
        for (uint32_t k = 0; k < t->n && !uses; k++)
            for (uint32_t p = 0; p < cb->n_ts_pool && !uses; p++)
                uses = t->pool[k] == cb->ts_pool[p];
        if (uses)
            resolve_at(i);
        else
            i++;
    }
}

void cap_timing_drop_all(void)
{
    for (uint32_t i = 0; i < cap.n_tpend; i++) {
        atomic_fetch_add(&cap.n_untimed, cap.tpend[i]->n);
        /* written without device times from here on (an urgent flush: the program goes on) */
        atomic_store_explicit(&cap.tpend[i]->ready, 1, memory_order_release);
    }
    cap.n_tpend = 0;
}

/* ========================================================================================== */
/* Device                                                                                     */
/* ========================================================================================== */

#define CALIB_EXT "VK_EXT_calibrated_timestamps"

const char *cap_timing_ext(struct cap_inst *in, VkPhysicalDevice phys)
{
    if (!cap.timing || !in->fn.EnumerateDeviceExtensionProperties)
        return NULL;
    uint32_t n = 0;
    if (in->fn.EnumerateDeviceExtensionProperties(phys, NULL, &n, NULL) != VK_SUCCESS || !n)
        return NULL;
    VkExtensionProperties *p = calloc(n, sizeof *p);
    if (!p)
        return NULL;
    int found = 0;
    if (in->fn.EnumerateDeviceExtensionProperties(phys, NULL, &n, p) >= 0)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(p[i].extensionName, CALIB_EXT);
    free(p);
    if (!found)
        return NULL;
    PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT dom =
        (PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)in->gipa(
            in->handle, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT");
    VkTimeDomainEXT td[8];
    uint32_t nd = 8;
    if (!dom || dom(phys, &nd, td) < 0)
        return NULL;
    int has_dev = 0, has_mono = 0;
    for (uint32_t i = 0; i < nd; i++) {
        has_dev |= td[i] == VK_TIME_DOMAIN_DEVICE_EXT;
        has_mono |= td[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    }
    return has_dev && has_mono ? CALIB_EXT : NULL;
}

void cap_timing_device(struct cap_dev *d, int ext_enabled)
{
    if (!cap.timing)
        return;
    if (ext_enabled)
        d->GetCalibratedTimestampsEXT =
            (PFN_vkGetCalibratedTimestampsEXT)d->gdpa(d->handle, "vkGetCalibratedTimestampsEXT");
    struct cap_ev *e = cap_ev_new(CAP_EV_META);
    if (!e)
        return;
    e->name = "clock.device_mapping";
    e->str = strdup(d->GetCalibratedTimestampsEXT
                        ? "calibrated: VK_EXT_calibrated_timestamps against CLOCK_MONOTONIC, "
                          "recalibrated once a second"
                        : "submit-aligned: no VK_EXT_calibrated_timestamps; the first timestamp "
                          "of each submission is set to the host time of its vkQueueSubmit");
    if (!e->str) {
        cap_ev_free_chain(e);
        return;
    }
    cap_emit(e);
}
