/*
 * capture/cap_vk_submit.c — what happens at vkQueueSubmit and when the host sees work finish:
 * host writes through mapped memory found by page hashes, command-buffer recordings expanded
 * into ops with exact resource accesses, device writes remembered until a wait tells the host
 * they are done, and then the digests of what the program can read back (HOST_READ).
 *
 * Resources. A trace resource is a VkDeviceMemory allocation (its capture id). A buffer bound
 * at memoryOffset M turns a buffer range [a, a+n) into the access (memory, M + a, n), so
 * accesses from buffers that alias one allocation overlap exactly where the bytes do.
 *
 * Host writes. Every allocation keeps one hash per 4 KiB page of what the layer last saw
 * there; the first vkMapMemory takes the contents as they are as the baseline (new memory is
 * undefined in Vulkan: bytes the program never wrote are not stored). At submit, flush,
 * unmap, free, vkSignalSemaphore and vkSetEvent every mapped page is compared; a page that
 * changed and is not being written by unfinished device work is host-written: runs of such
 * pages become one HOST_WRITE op whose blob is the bytes (deduplicated by the writer).
 *
 * Host reads. Device writes to host-visible memory are kept as pending intervals tagged with
 * (queue, submission serial). When a fence wait, timeline wait, counter read or idle wait
 * says a submission finished, its intervals become HOST_READ ops carrying the digest of the
 * bytes the program can now read (never the bytes: they are outputs, not inputs), and the
 * page hashes are refreshed so the next scan does not mistake them for host writes. A wait on
 * a fence completes that submission and every earlier one on its queue (queues finish in
 * order on every driver we know; the specification promises less). If the memory is not
 * mapped at that moment, the read is recorded when the program maps it.
 *
 * Limits (documented in the report): host writes to a page that device work of an unfinished
 * submission also writes are attributed to the device; digests cover host-visible memory only.
 * Indirect dispatches get their group counts at submit when the arguments sit in mapped
 * host-visible memory no unfinished device work writes (the usual case: the host wrote them);
 * arguments produced on the device, or in memory the program has not mapped, are not read
 * (grid 0, DISPATCH "groups known" 0): replay takes them from the buffer it rebuilt.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "capture/cap_vk_int.h"

/* ========================================================================================== */
/* Allocations                                                                                */
/* ========================================================================================== */

struct cap_mem *cap_mem_new(struct cap_dev *dev, uint64_t handle, uint64_t size,
                            uint32_t type_index)
{
    if (cap.n_mems == cap.cap_mems) {
        uint32_t c = cap.cap_mems ? cap.cap_mems * 2 : 64;
        struct cap_mem **v = realloc(cap.mems, c * sizeof *v);
        if (!v) {
            cap_fail("out of memory tracking allocations");
            return NULL;
        }
        cap.mems = v;
        cap.cap_mems = c;
    }
    struct cap_mem *m = calloc(1, sizeof *m);
    uint64_t n_pages = (size + CAP_PAGE - 1) / CAP_PAGE;
    uint32_t props = type_index < dev->mem_props.memoryTypeCount
                         ? dev->mem_props.memoryTypes[type_index].propertyFlags
                         : 0;
    int hv = (props & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0;
    if (m && hv)
        m->page = calloc(n_pages ? n_pages : 1, sizeof *m->page); /* zero hash = "all zero" */
    if (!m || (hv && !m->page)) {
        free(m);
        cap_fail("out of memory for the page shadow of a %llu-byte allocation",
                 (unsigned long long)size);
        return NULL;
    }
    m->o.handle = handle;
    m->o.type = VK_OBJECT_TYPE_DEVICE_MEMORY;
    m->o.id = cap_new_id();
    m->o.dev = dev;
    m->size = size;
    m->type_index = type_index;
    m->props = props;
    m->n_pages = hv ? n_pages : 0;
    if (cap_map_put(&cap.objs[CAP_T_MEM], handle, m)) {
        free(m->page);
        free(m);
        cap_fail("out of memory tracking allocations");
        return NULL;
    }
    cap.mems[cap.n_mems++] = m;
    cap.shadow_gen++;
    return m;
}

void cap_mem_free(struct cap_mem *m)
{
    cap.shadow_gen++;
    for (uint32_t i = 0; i < cap.n_mems; i++)
        if (cap.mems[i] == m) {
            cap.mems[i] = cap.mems[--cap.n_mems];
            break;
        }
    /* buffers that outlive their memory have none (a dispatch that reaches every buffer with
     * a device address must not follow them into freed memory) */
    const struct cap_map *bm = &cap.objs[CAP_T_BUF];
    for (size_t i = 0; i < bm->cap; i++) {
        struct cap_buf *b = bm->e[i].key > 1 ? bm->e[i].val : NULL;
        if (b && b->mem == m)
            b->mem = NULL;
    }
    free(m->page);
    free(m->pend);
    free(m->done);
    free(m);
}

static struct cap_mem *mem_by_id(uint64_t id)
{
    for (uint32_t i = 0; i < cap.n_mems; i++)
        if (cap.mems[i]->o.id == id)
            return cap.mems[i];
    return NULL;
}

static int push_ivl(struct cap_ivl **v, uint32_t *n, uint32_t *cap_n, struct cap_ivl x)
{
    if (*n == *cap_n) {
        uint32_t c = *cap_n ? *cap_n * 2 : 8;
        struct cap_ivl *p = realloc(*v, c * sizeof *p);
        if (!p)
            return -1;
        *v = p;
        *cap_n = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

/* A device write of a submission: merged into an overlapping interval of the same queue. */
static void mem_pend(struct cap_mem *m, uint64_t off, uint64_t len, uint64_t queue, uint64_t serial)
{
    if (!(m->props & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) || !len)
        return;
    for (uint32_t i = 0; i < m->n_pend; i++) {
        struct cap_ivl *p = &m->pend[i];
        if (p->queue == queue && off <= p->off + p->len && p->off <= off + len) {
            uint64_t end = off + len > p->off + p->len ? off + len : p->off + p->len;
            p->off = off < p->off ? off : p->off;
            p->len = end - p->off;
            p->serial = serial > p->serial ? serial : p->serial;
            return;
        }
    }
    if (push_ivl(&m->pend, &m->n_pend, &m->cap_pend, (struct cap_ivl){off, len, queue, serial}))
        cap_fail("out of memory tracking device writes");
}

/* ========================================================================================== */
/* Host writes                                                                                */
/* ========================================================================================== */

static int all_zero(const uint8_t *p, size_t n)
{
    static const uint8_t zero[CAP_PAGE];
    while (n) {
        size_t k = n < CAP_PAGE ? n : CAP_PAGE;
        if (memcmp(p, zero, k))
            return 0;
        p += k;
        n -= k;
    }
    return 1;
}

static int page_pending(const struct cap_mem *m, uint64_t a, uint64_t b)
{
    for (uint32_t i = 0; i < m->n_pend; i++)
        if (m->pend[i].off < b && a < m->pend[i].off + m->pend[i].len)
            return 1;
    return 0;
}

/* A host-side op on [a, b) of m (HOST_WRITE or HOST_READ) with its one access; NULL when out
 * of memory. */
static struct cap_ev *host_op(struct cap_mem *m, uint64_t a, uint64_t b, uint32_t kind,
                              uint64_t now)
{
    struct cap_ev *e = cap_ev_new_op(1, 0);
    if (!e)
        return NULL;
    int w = kind == SBT_OP_HOST_WRITE;
    *e->acc = (struct sbt_access){m->o.id, a, b - a, w ? SBT_ACCESS_WRITE : SBT_ACCESS_READ};
    e->dev_id = m->o.dev->id;
    e->name = w ? "host write" : "host read";
    e->op.kind = kind;
    e->op.host_begin = e->op.host_end = now;
    e->op.bytes = b - a;
    e->op.flags = SBT_OPF_BYTES;
    return e;
}

/* A HOST_WRITE op of [a, b) of m whose bytes are already in data (a run buffer, owned). */
static void host_write_op(struct cap_mem *m, uint64_t a, uint64_t b, uint8_t *data,
                          struct cap_ev ***tail, uint64_t now)
{
    struct cap_ev *e = data ? host_op(m, a, b, SBT_OP_HOST_WRITE, now) : NULL;
    if (!e) {
        cap_run_free(data);
        cap_fail("out of memory storing %llu bytes of host writes", (unsigned long long)(b - a));
        return;
    }
    e->data = data;
    e->data_len = b - a;
    e->data_pooled = 1;
    **tail = e;
    *tail = &e->next;
}

void cap_mem_scan(struct cap_mem *m, uint64_t off, uint64_t len, struct cap_ev ***tail,
                  uint64_t now)
{
    if (!m->mapped || !m->page || !m->map_base)
        return;
    uint64_t lo = off > m->map_off ? off : m->map_off;
    uint64_t hi = m->map_off + m->map_len;
    if (len < hi - lo && off + len < hi)
        hi = off + len;
    if (lo >= hi)
        return;
    /* a changed page is copied into the run buffer right after it is hashed, while it is in
     * cache: the mapping is read once */
    uint64_t run_a = 0, run_b = 0;
    uint8_t *run = NULL;
    for (uint64_t p = lo / CAP_PAGE; p * CAP_PAGE < hi && p < m->n_pages; p++) {
        uint64_t a = p * CAP_PAGE > m->map_off ? p * CAP_PAGE : m->map_off;
        uint64_t b = (p + 1) * CAP_PAGE < m->map_off + m->map_len ? (p + 1) * CAP_PAGE
                                                                  : m->map_off + m->map_len;
        if (b > m->size)
            b = m->size;
        int changed = 0;
        if (a < b && !page_pending(m, a, b)) {
            const uint8_t *q = m->map_base + a;
            if (sbt_hash_is_zero(m->page[p])) {
                if (!all_zero(q, b - a)) {
                    m->page[p] = sbt_hash_bytes(q, b - a);
                    changed = 1;
                }
            } else {
                sbt_hash h = sbt_hash_bytes(q, b - a);
                if (!sbt_hash_eq(h, m->page[p])) {
                    m->page[p] = h;
                    changed = 1;
                }
            }
        }
        if (changed && run_b > run_a && run_b == a && run_b - run_a < CAP_RUN_MAX) {
            if (run)
                memcpy(run + (a - run_a), m->map_base + a, b - a);
            run_b = b;
            continue;
        }
        if (run_b > run_a) {
            host_write_op(m, run_a, run_b, run, tail, now);
            run = NULL;
        }
        run_a = run_b = changed ? a : 0;
        if (changed) {
            run_b = b;
            run = cap_run_alloc();
            if (run)
                memcpy(run, m->map_base + a, b - a);
        }
    }
    if (run_b > run_a)
        host_write_op(m, run_a, run_b, run, tail, now);
}

void cap_mem_scan_all(struct cap_dev *dev, struct cap_ev ***tail, uint64_t now)
{
    for (uint32_t i = 0; i < cap.n_mems; i++) {
        struct cap_mem *m = cap.mems[i];
        if (m->mapped && (!dev || m->o.dev == dev))
            cap_mem_scan(m, m->map_off, m->map_len, tail, now);
    }
}

/* ========================================================================================== */
/* Host reads                                                                                 */
/* ========================================================================================== */

static void refresh_pages(struct cap_mem *m, uint64_t a, uint64_t b)
{
    for (uint64_t p = a / CAP_PAGE; p * CAP_PAGE < b && p < m->n_pages; p++) {
        uint64_t x = p * CAP_PAGE > m->map_off ? p * CAP_PAGE : m->map_off;
        uint64_t y = (p + 1) * CAP_PAGE < m->map_off + m->map_len ? (p + 1) * CAP_PAGE
                                                                  : m->map_off + m->map_len;
        if (y > m->size)
            y = m->size;
        if (x < y)
            m->page[p] = sbt_hash_bytes(m->map_base + x, y - x);
    }
}

static sbt_hasher *refresh_hasher; /* cap.mu held; made on first use, freed at unload */

void cap_submit_free_all(void)
{
    sbt_hasher_destroy(refresh_hasher);
    refresh_hasher = NULL;
}

/* The digest of [a, b) of m, refreshing the page shadow of those pages in the same pass
 * (each page is hashed for the shadow right after it went into the digest, in cache). */
static sbt_hash digest_refresh(struct cap_mem *m, uint64_t a, uint64_t b)
{
    if (!refresh_hasher && sbt_hasher_create(&refresh_hasher) < 0)
        refresh_hasher = NULL;
    sbt_hasher *h = refresh_hasher;
    if (!h) {
        refresh_pages(m, a, b);
        return sbt_hash_bytes(m->map_base + a, b - a);
    }
    sbt_hasher_reset(h);
    for (uint64_t p = a / CAP_PAGE; p * CAP_PAGE < b; p++) {
        uint64_t sa = p * CAP_PAGE > a ? p * CAP_PAGE : a;
        uint64_t sb = (p + 1) * CAP_PAGE < b ? (p + 1) * CAP_PAGE : b;
        sbt_hasher_update(h, m->map_base + sa, sb - sa);
        if (p >= m->n_pages)
            continue;
        uint64_t x = p * CAP_PAGE > m->map_off ? p * CAP_PAGE : m->map_off;
        uint64_t y = (p + 1) * CAP_PAGE < m->map_off + m->map_len ? (p + 1) * CAP_PAGE
                                                                  : m->map_off + m->map_len;
        if (y > m->size)
            y = m->size;
        if (x < y)
            m->page[p] = sbt_hash_bytes(m->map_base + x, y - x);
    }
    return sbt_hasher_digest(h);
}

static void host_read_op(struct cap_mem *m, uint64_t a, uint64_t b, struct cap_ev ***tail,
                         uint64_t now)
{
    struct cap_ev *e = host_op(m, a, b, SBT_OP_HOST_READ, now);
    if (!e) {
        cap_fail("out of memory recording a host read");
        return;
    }
    e->op.digest = digest_refresh(m, a, b);
    e->op.flags |= SBT_OPF_DIGEST;
    **tail = e;
    *tail = &e->next;
}

static int cmp_ivl(const void *a, const void *b)
{
    const struct cap_ivl *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Reads back the intervals v[0..n) of m (sorted and merged here) that lie in the mapping;
 * returns how many were left for later (kept at the front of v). */
static uint32_t read_back(struct cap_mem *m, struct cap_ivl *v, uint32_t n, struct cap_ev ***tail,
                          uint64_t now)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_ivl);
    uint32_t k = 0;
    for (uint32_t i = 1; i < n; i++) {
        if (v[i].off <= v[k].off + v[k].len) {
            uint64_t end = v[i].off + v[i].len;
            if (end > v[k].off + v[k].len)
                v[k].len = end - v[k].off;
        } else {
            v[++k] = v[i];
        }
    }
    n = k + 1;
    uint32_t left = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = v[i].off, b = v[i].off + v[i].len;
        if (b > m->size)
            b = m->size;
        if (m->mapped && m->map_base) {
            uint64_t x = a > m->map_off ? a : m->map_off;
            uint64_t y = b < m->map_off + m->map_len ? b : m->map_off + m->map_len;
            if (x < y) {
                host_read_op(m, x, y, tail, now);
                continue;
            }
        }
        v[left++] = v[i];
    }
    return left;
}

void cap_mem_mapped(struct cap_mem *m, struct cap_ev ***tail, uint64_t now)
{
    m->n_done = read_back(m, m->done, m->n_done, tail, now);
    /* Pages seen for the first time: what is there now is the baseline, not a host write.
     * Drivers need not zero new allocations (lavapipe does not); bytes the program never
     * wrote are undefined in the capture as in any replay, so storing them would only cost. */
    for (uint64_t p = m->map_off / CAP_PAGE;
         p * CAP_PAGE < m->map_off + m->map_len && p < m->n_pages; p++) {
        if (!sbt_hash_is_zero(m->page[p]))
            continue;
        uint64_t a = p * CAP_PAGE > m->map_off ? p * CAP_PAGE : m->map_off;
        uint64_t b = (p + 1) * CAP_PAGE < m->map_off + m->map_len ? (p + 1) * CAP_PAGE
                                                                  : m->map_off + m->map_len;
        if (b > m->size)
            b = m->size;
        if (a < b && !page_pending(m, a, b))
            m->page[p] = sbt_hash_bytes(m->map_base + a, b - a);
    }
}

void cap_complete(struct cap_dev *dev, uint64_t queue, uint64_t serial, struct cap_ev ***tail,
                  uint64_t now)
{
    if (cap.n_tpend)
        cap_timing_complete(dev, queue, serial);
    for (uint32_t i = 0; i < cap.n_mems; i++) {
        struct cap_mem *m = cap.mems[i];
        if (m->o.dev != dev || !m->n_pend)
            continue;
        uint32_t keep = 0, first_done = m->n_done;
        for (uint32_t k = 0; k < m->n_pend; k++) {
            struct cap_ivl x = m->pend[k];
            if ((queue == 0 || x.queue == queue) && x.serial <= serial) {
                if (push_ivl(&m->done, &m->n_done, &m->cap_done, x))
                    cap_fail("out of memory tracking device writes");
            } else {
                m->pend[keep++] = x;
            }
        }
        m->n_pend = keep;
        if (m->n_done > first_done)
            m->n_done = read_back(m, m->done, m->n_done, tail, now);
    }
}

void cap_sync_reached(struct cap_dev *dev, struct cap_sync *s, uint64_t value,
                      struct cap_ev ***tail, uint64_t now)
{
    uint32_t n = s->n_sig < CAP_SIG_RING ? s->n_sig : CAP_SIG_RING;
    if (!n)
        return;
    if (s->kind == SBT_SYNC_FENCE) {
        const struct cap_sig *g = &s->sig[(s->n_sig - 1) % CAP_SIG_RING];
        cap_complete(dev, g->queue, g->serial, tail, now);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct cap_sig *g = &s->sig[(s->n_sig - 1 - i) % CAP_SIG_RING];
        if (g->value <= value)
            cap_complete(dev, g->queue, g->serial, tail, now);
    }
}

static void sync_signaled(struct cap_sync *s, uint64_t value, uint64_t queue, uint64_t serial)
{
    s->sig[s->n_sig % CAP_SIG_RING] = (struct cap_sig){value, queue, serial};
    s->n_sig++;
}

/* ========================================================================================== */
/* Expansion of a command buffer into ops                                                     */
/* ========================================================================================== */

#define MAX_DYN 64u

struct xstate {
    struct cap_dev *dev;
    struct cap_queue *q;
    uint64_t serial, t0, t1;
    struct cap_cmdbuf *cb;
    struct cap_ev **tail; /* where the next op goes */
    uint32_t n_ops;
    /* compute state while walking */
    struct cap_pipeline *pipe;
    uint64_t set[CAP_MAX_SETS];
    uint32_t dyn[CAP_MAX_SETS][MAX_DYN], n_dyn[CAP_MAX_SETS];
    /* push descriptors: set number i reads pset[i] while is_push[i] (the sets are the
     * submission's, reshaped when a push names another set layout) */
    struct cap_dset pset[CAP_MAX_SETS];
    uint8_t is_push[CAP_MAX_SETS];
    uint8_t push[256];
    uint32_t push_hi;
    /* per op */
    struct sbt_access *acc;
    uint32_t n_acc, cap_acc;
    struct sbt_vk_enc pay;
    struct cap_timing *timing; /* --timing: the timed ops of the submission */
    int failed;
    int nocache; /* the ops depend on more than the recording and the shadows: not cached */
};

static uint64_t id_of(uint64_t handle, uint32_t t)
{
    struct cap_obj *o = cap_obj_find(handle, t);
    return o ? o->id : 0;
}

static void add_acc(struct xstate *x, struct cap_buf *b, uint64_t off, uint64_t len, uint32_t mode)
{
    if (!b || !b->mem || !len)
        return;
    if (len == VK_WHOLE_SIZE)
        len = off < b->size ? b->size - off : 0;
    uint64_t a = b->mem_off + off;
    if (a >= b->mem->size)
        return;
    if (len > b->mem->size - a)
        len = b->mem->size - a;
    if (x->n_acc == x->cap_acc) {
        uint32_t c = x->cap_acc ? x->cap_acc * 2 : 16;
        struct sbt_access *p = realloc(x->acc, c * sizeof *p);
        if (!p) {
            x->failed = 1;
            return;
        }
        x->acc = p;
        x->cap_acc = c;
    }
    x->acc[x->n_acc++] = (struct sbt_access){b->mem->o.id, a, len, mode};
    if (mode & SBT_ACCESS_WRITE)
        mem_pend(b->mem, a, len, x->q->o.id, x->serial);
}

/* Finishes the op being built: accesses and payload are copied into a new event (one
 * allocation) on the queue. */
static struct cap_ev *op_done(struct xstate *x, uint32_t kind, const char *name)
{
    struct cap_ev *e = sbt_vk_enc_status(&x->pay) ? NULL : cap_ev_new_op(x->n_acc, x->pay.len);
    if (!e) {
        x->failed = 1;
        return NULL;
    }
    e->dev_id = x->dev->id;
    e->queue_id = x->q->o.id;
    e->name = name;
    e->op.kind = kind;
    e->op.host_begin = x->t0;
    e->op.host_end = x->t1;
    if (x->n_acc)
        memcpy(e->acc, x->acc, x->n_acc * sizeof *e->acc);
    if (x->pay.len)
        memcpy(e->payload, x->pay.buf, x->pay.len);
    x->n_acc = 0;
    sbt_vk_enc_reset(&x->pay);
    *x->tail = e;
    x->tail = &e->next;
    x->n_ops++;
    return e;
}

/* --timing: e gets the device times of the timestamps around command index of x->cb. */
static void timed(struct xstate *x, struct cap_ev *e, uint32_t index)
{
    if (!e || !x->cb->n_ts)
        return;
    uint32_t pair = cap_ts_pair(x->cb, index);
    if (pair != UINT32_MAX)
        cap_timing_add(&x->timing, e, x->cb, pair);
}

/* An UNSUPPORTED marker for what (a static string, affecting) on the queue, where the device
 * meets it; counted once per submission that carries it. */
static void unmod_op(struct xstate *x, const char *what)
{
    uint32_t id = cap_unmod_id(what, SBT_UNMODELLED_AFFECTS, 0);
    cap_vk_count(id);
    struct cap_ev *e = cap_unmod_marker(x->dev, id, x->t0);
    if (!e) {
        x->failed = 1;
        return;
    }
    e->queue_id = x->q->o.id;
    e->op.host_end = x->t1;
    *x->tail = e;
    x->tail = &e->next;
    x->n_ops++;
    x->nocache = 1; /* counted at every submission */
}

static int is_uniform(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER ||
           t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC ||
           t == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
}

static int is_dynamic(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC ||
           t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
}

/* The access a dispatch makes through (set, binding): 0 when the shader does not use it. */
static uint32_t binding_mode(const struct cap_pipeline *p, uint32_t set, uint32_t binding,
                             uint32_t type)
{
    if (is_uniform(type))
        return SBT_ACCESS_READ;
    if (!p->refl_ok)
        return SBT_ACCESS_RW;
    for (uint32_t i = 0; i < p->n_acc; i++)
        if (p->acc[i].set == set && p->acc[i].binding == binding)
            return p->acc[i].access;
    return 0;
}

/* The group counts of an indirect dispatch when they can be known at submit: the arguments
 * lie in host-visible memory the program has mapped, and no device work of this or an
 * unfinished submission writes them (host writes were scanned just before the submit, so
 * the mapping holds what the device will read). 1 with out[] set, else 0. */
static int indirect_groups(const struct cap_buf *b, uint64_t off, uint32_t out[3])
{
    const struct cap_mem *m = b ? b->mem : NULL;
    if (!m || !m->mapped || !m->map_base || off > b->size ||
        b->size - off < sizeof(VkDispatchIndirectCommand))
        return 0;
    uint64_t a = b->mem_off + off, e = a + sizeof(VkDispatchIndirectCommand);
    if (a < m->map_off || e > m->map_off + m->map_len || e > m->size || page_pending(m, a, e))
        return 0;
    VkDispatchIndirectCommand c;
    memcpy(&c, m->map_base + a, sizeof c);
    out[0] = c.x;
    out[1] = c.y;
    out[2] = c.z;
    return 1;
}

/* A shader that dereferences buffer device addresses may read (and, if its SPIR-V stores
 * through them, write) any buffer that has an address: the dispatch gets that access to the
 * whole of every live buffer of the device with SHADER_DEVICE_ADDRESS usage, so the graph,
 * slices and digests stay sound. */
static int cmp_acc(const void *a, const void *b)
{
    const struct sbt_access *x = a, *y = b;
    if (x->resource != y->resource)
        return x->resource < y->resource ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void address_accesses(struct xstate *x, uint32_t mode)
{
    const struct cap_map *m = &cap.objs[CAP_T_BUF];
    uint32_t first = x->n_acc;
    for (size_t i = 0; i < m->cap; i++) {
        struct cap_buf *b = m->e[i].key > 1 ? m->e[i].val : NULL;
        if (b && b->o.dev == x->dev && (b->usage & VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT))
            add_acc(x, b, 0, b->size, mode);
    }
    /* in memory order, not the order of the handle map: the same in every capture */
    if (x->n_acc > first)
        qsort(x->acc + first, x->n_acc - first, sizeof *x->acc, cmp_acc);
}

static void dispatch_op(struct xstate *x, const uint64_t *g, uint64_t ind_buf, uint64_t ind_off,
                        uint32_t index)
{
    struct cap_pipeline *p = x->pipe;
    if (ind_buf)
        x->nocache = 1; /* group counts read from memory at each submit */
    if (!p) {
        /* a pipeline made while not recording, or from a module the layer did not see: the
         * dispatch cannot be replayed */
        unmod_op(x, "vkCmdDispatch (pipeline not captured)");
        return;
    }
    struct cap_buf *ib = ind_buf ? cap_obj_find(ind_buf, CAP_T_BUF) : NULL;
    uint32_t ig[3] = {0, 0, 0};
    int ig_known = ib && indirect_groups(ib, ind_off, ig);
    sbt_vk_enc_rec(&x->pay, SBT_VK_DISPATCH,
                   (uint64_t[]){p->o.id, id_of(p->layout_handle, CAP_T_PLAYOUT), g[0], g[1], g[2],
                                g[3], g[4], g[5], ib ? ib->o.id : 0, ind_off, x->cb->o.id, index,
                                ig_known, ig[0], ig[1], ig[2]},
                   ib ? 16 : 12, x->push, x->push_hi);
    if (ib)
        add_acc(x, ib, ind_off, sizeof(VkDispatchIndirectCommand), SBT_ACCESS_READ);
    for (uint32_t si = 0; si < CAP_MAX_SETS; si++) {
        struct cap_dset *s = x->is_push[si] ? &x->pset[si]
                             : x->set[si]   ? cap_obj_find(x->set[si], CAP_T_DSET)
                                            : NULL;
        if (!s)
            continue;
        uint32_t di = 0;
        for (uint32_t bi = 0; bi < s->n_b; bi++) {
            const struct cap_dsl_binding *b = &s->b[bi];
            uint32_t mode = binding_mode(p, si, b->binding, b->type);
            for (uint32_t el = 0; el < b->count; el++) {
                uint64_t dyn = 0;
                if (is_dynamic(b->type)) {
                    dyn = di < x->n_dyn[si] ? x->dyn[si][di] : 0;
                    di++;
                }
                if (!mode)
                    continue;
                const struct cap_slot *sl = &s->slot[b->base + el];
                struct cap_buf *buf = NULL;
                uint64_t off = sl->offset + dyn, range = sl->range;
                if (sl->view_handle) {
                    struct cap_bview *v = cap_obj_find(sl->view_handle, CAP_T_BVIEW);
                    if (v) {
                        buf = v->buf;
                        off = v->offset;
                        range = v->range;
                    }
                } else {
                    buf = cap_obj_find(sl->buf_handle, CAP_T_BUF);
                }
                if (!buf || !buf->mem)
                    continue;
                if (range == VK_WHOLE_SIZE)
                    range = off < buf->size ? buf->size - off : 0;
                sbt_vk_enc_rec(&x->pay, SBT_VK_BINDING,
                               (uint64_t[]){si, b->binding, el, b->type, buf->o.id, buf->mem->o.id,
                                            off, range, mode},
                               9, NULL, 0);
                add_acc(x, buf, off, range, mode);
            }
        }
    }
    if (p->addresses)
        address_accesses(x, p->addresses);
    struct cap_ev *e = op_done(x, SBT_OP_KERNEL, "vkCmdDispatch");
    if (!e)
        return;
    timed(x, e, index);
    e->kernel_id = p->o.id;
    e->op.flags |= SBT_OPF_GEOM;
    for (int d = 0; d < 3; d++) {
        e->op.grid[d] = ind_buf ? ig[d] : (uint32_t)g[3 + d];
        e->op.block[d] = p->local[d];
    }
}

static void bind_sets(struct xstate *x, const struct sbt_vk_rec *r)
{
    if (sbt_vk_arg(r, 0) != VK_PIPELINE_BIND_POINT_COMPUTE)
        return;
    uint32_t first = (uint32_t)sbt_vk_arg(r, 2), n = (uint32_t)sbt_vk_arg(r, 3);
    uint32_t n_dyn = (uint32_t)sbt_vk_arg(r, 4 + n), k = 0;
    if (first >= CAP_MAX_SETS || n > CAP_MAX_SETS - first)
        unmod_op(x, "vkCmdBindDescriptorSets (set index past the 32 the capture tracks)");
    for (uint32_t i = 0; i < n && first + i < CAP_MAX_SETS; i++) {
        uint32_t si = first + i;
        x->set[si] = sbt_vk_arg(r, 4 + i);
        x->is_push[si] = 0;
        x->n_dyn[si] = 0;
        struct cap_dset *s = cap_obj_find(x->set[si], CAP_T_DSET);
        for (uint32_t b = 0; s && b < s->n_b; b++)
            for (uint32_t el = 0; is_dynamic(s->b[b].type) && el < s->b[b].count; el++) {
                if (k < n_dyn && x->n_dyn[si] < MAX_DYN)
                    x->dyn[si][x->n_dyn[si]++] = (uint32_t)sbt_vk_arg(r, 5 + n + k);
                else if (k < n_dyn)
                    unmod_op(x, "vkCmdBindDescriptorSets (more than 64 dynamic offsets in a "
                                "set)");
                k++;
            }
    }
}

/* CMD_PUSH_SET: the writes go into the push set of that set number, shaped by the set layout
 * the pipeline layout has there; pushing again with the same set layout keeps what earlier
 * pushes wrote elsewhere in it. */
static void push_set(struct xstate *x, const struct sbt_vk_rec *r)
{
    if (sbt_vk_arg(r, 0) != VK_PIPELINE_BIND_POINT_COMPUTE)
        return;
    uint64_t si = sbt_vk_arg(r, 2);
    struct cap_playout *pl = cap_obj_find(sbt_vk_arg(r, 1), CAP_T_PLAYOUT);
    struct cap_dsl *l = pl && si < pl->n_sets ? cap_obj_find(pl->set_layout[si], CAP_T_DSL) : NULL;
    if (!l) {
        unmod_op(x, "vkCmdPushDescriptorSet (pipeline layout or set layout not captured)");
        return;
    }
    struct cap_dset *s = &x->pset[si];
    if (!x->is_push[si] || s->layout_id != l->o.id) {
        cap_dset_release(s);
        if (cap_dset_shape(s, l, UINT32_MAX) < 0) {
            x->failed = 1;
            return;
        }
    }
    x->is_push[si] = 1;
    x->set[si] = 0;
    x->n_dyn[si] = 0;
    for (uint32_t i = 3, len; i < r->n_arg; i += len)
        if (!(len = cap_dset_apply(s, r->arg + i, r->n_arg - i)))
            break;
}

/* Translates a raw record's handles into capture ids for the stored recording. */
static void translate(struct sbt_vk_enc *t, const struct sbt_vk_rec *r)
{
    uint64_t on_stack[512];
    uint32_t n = r->n_arg;
    uint64_t *a = n <= 512 ? on_stack : malloc(n * sizeof *a);
    if (!a) {
        t->status = SBT_ENOMEM;
        return;
    }
    memcpy(a, r->arg, n * sizeof *a);
#define TR(i, ty)                   \
    do {                            \
        if ((i) < n)                \
            a[i] = id_of(a[i], ty); \
    } while (0)
    switch (r->call) {
    case SBT_VK_CMD_BEGIN:
        TR(0, CAP_T_CMDBUF);
        break;
    case SBT_VK_CMD_BIND_PIPELINE:
        TR(1, CAP_T_PIPELINE);
        break;
    case SBT_VK_CMD_BIND_SETS:
        TR(1, CAP_T_PLAYOUT);
        for (uint32_t i = 0; i < sbt_vk_arg(r, 3); i++)
            TR(4 + i, CAP_T_DSET);
        break;
    case SBT_VK_CMD_PUSH_CONSTANTS:
        TR(0, CAP_T_PLAYOUT);
        break;
    case SBT_VK_CMD_PUSH_SET:
        TR(1, CAP_T_PLAYOUT);
        for (uint32_t i = 3, len; i < n; i += len)
            if (!(len = cap_write_ids(a + i, n - i)))
                break;
        break;
    case SBT_VK_CMD_DISPATCH_INDIRECT:
    case SBT_VK_CMD_FILL_BUFFER:
    case SBT_VK_CMD_UPDATE_BUFFER:
        TR(0, CAP_T_BUF);
        break;
    case SBT_VK_CMD_COPY_BUFFER:
        TR(0, CAP_T_BUF);
        TR(1, CAP_T_BUF);
        break;
    case SBT_VK_CMD_SET_EVENT:
    case SBT_VK_CMD_RESET_EVENT:
        TR(0, CAP_T_EVENT);
        break;
    case SBT_VK_CMD_WAIT_EVENTS:
    case SBT_VK_CMD_BARRIER: {
        uint32_t base = 0;
        if (r->call == SBT_VK_CMD_WAIT_EVENTS) {
            uint32_t ne = (uint32_t)sbt_vk_arg(r, 0);
            for (uint32_t i = 0; i < ne; i++)
                TR(1 + i, CAP_T_EVENT);
            base = 1 + ne;
        }
        uint32_t nm = (uint32_t)sbt_vk_arg(r, base + 3);
        uint32_t bb = base + 4 + 4 * nm;
        uint32_t nb = (uint32_t)sbt_vk_arg(r, bb);
        for (uint32_t i = 0; i < nb; i++)
            TR(bb + 1 + 9 * i + 6, CAP_T_BUF);
        break;
    }
    case SBT_VK_CMD_WRITE_TIMESTAMP:
        TR(1, CAP_T_QPOOL);
        break;
    case SBT_VK_CMD_RESET_QUERIES:
        TR(0, CAP_T_QPOOL);
        break;
    case SBT_VK_CMD_EXECUTE:
        for (uint32_t i = 0; i < sbt_vk_arg(r, 0); i++)
            TR(1 + i, CAP_T_CMDBUF);
        break;
    default:
        break;
    }
#undef TR
    sbt_vk_enc_rec(t, r->call, a, n, r->bytes, r->n_bytes);
    if (a != on_stack)
        free(a);
}

static void sync_op(struct xstate *x, uint32_t kind, const char *name, struct cap_sync *s,
                    uint64_t value, uint64_t stage)
{
    if (!s)
        return;
    if (stage)
        sbt_vk_enc_rec(&x->pay, SBT_VK_SYNC_INFO, &stage, 1, NULL, 0);
    struct cap_ev *e = op_done(x, kind, name);
    if (e) {
        e->op.subkind = s->kind;
        e->op.obj = s->o.id;
        e->op.value = value;
        e->op.flags |= SBT_OPF_OBJ;
    }
}

static void expand(struct xstate *x, struct cap_cmdbuf *cb, int depth, struct sbt_vk_enc *trans);

static void expand_cmd(struct xstate *x, const struct sbt_vk_rec *r, uint32_t index, int depth)
{
    switch (r->call) {
    case SBT_VK_CMD_BIND_PIPELINE:
        if (sbt_vk_arg(r, 0) == VK_PIPELINE_BIND_POINT_COMPUTE)
            x->pipe = cap_obj_find(sbt_vk_arg(r, 1), CAP_T_PIPELINE);
        break;
    case SBT_VK_CMD_BIND_SETS:
        bind_sets(x, r);
        break;
    case SBT_VK_CMD_PUSH_SET:
        push_set(x, r);
        break;
    case SBT_VK_CMD_PUSH_CONSTANTS: {
        uint64_t off = sbt_vk_arg(r, 2);
        if (off < sizeof x->push && r->n_bytes <= sizeof x->push - off) {
            memcpy(x->push + off, r->bytes, r->n_bytes);
            if (off + r->n_bytes > x->push_hi)
                x->push_hi = (uint32_t)(off + r->n_bytes);
        } else {
            unmod_op(x, "vkCmdPushConstants (bytes past the 256 the capture keeps)");
        }
        break;
    }
    case SBT_VK_CMD_DISPATCH: {
        uint64_t g[6];
        for (int i = 0; i < 6; i++)
            g[i] = sbt_vk_arg(r, (uint32_t)i);
        dispatch_op(x, g, 0, 0, index);
        break;
    }
    case SBT_VK_CMD_DISPATCH_INDIRECT: {
        uint64_t g[6] = {0};
        dispatch_op(x, g, sbt_vk_arg(r, 0), sbt_vk_arg(r, 1), index);
        break;
    }
    case SBT_VK_CMD_COPY_BUFFER: {
        struct cap_buf *s = cap_obj_find(sbt_vk_arg(r, 0), CAP_T_BUF);
        struct cap_buf *d = cap_obj_find(sbt_vk_arg(r, 1), CAP_T_BUF);
        uint32_t n = (uint32_t)sbt_vk_arg(r, 2);
        uint64_t bytes = 0;
        sbt_vk_enc_begin(&x->pay, SBT_VK_COPY_BUFFER);
        sbt_vk_enc_arg(&x->pay, s ? s->o.id : 0);
        sbt_vk_enc_arg(&x->pay, d ? d->o.id : 0);
        sbt_vk_enc_arg(&x->pay, n);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t so = sbt_vk_arg(r, 3 + 3 * i), doff = sbt_vk_arg(r, 4 + 3 * i),
                     sz = sbt_vk_arg(r, 5 + 3 * i);
            sbt_vk_enc_arg(&x->pay, so);
            sbt_vk_enc_arg(&x->pay, doff);
            sbt_vk_enc_arg(&x->pay, sz);
            add_acc(x, s, so, sz, SBT_ACCESS_READ);
            add_acc(x, d, doff, sz, SBT_ACCESS_WRITE);
            bytes += sz;
        }
        sbt_vk_enc_arg(&x->pay, x->cb->o.id);
        sbt_vk_enc_arg(&x->pay, index);
        sbt_vk_enc_end(&x->pay, NULL, 0);
        struct cap_ev *e = op_done(x, SBT_OP_COPY, "vkCmdCopyBuffer");
        timed(x, e, index);
        if (e) {
            e->op.subkind = SBT_COPY_D2D;
            e->op.bytes = bytes;
            e->op.flags |= SBT_OPF_BYTES;
        }
        break;
    }
    case SBT_VK_CMD_FILL_BUFFER: {
        struct cap_buf *d = cap_obj_find(sbt_vk_arg(r, 0), CAP_T_BUF);
        uint64_t off = sbt_vk_arg(r, 1), sz = sbt_vk_arg(r, 2);
        if (sz == VK_WHOLE_SIZE)
            sz = d && off < d->size ? (d->size - off) & ~(uint64_t)3 : 0;
        sbt_vk_enc_rec(&x->pay, SBT_VK_FILL_BUFFER,
                       (uint64_t[]){d ? d->o.id : 0, off, sz, sbt_vk_arg(r, 3), x->cb->o.id, index},
                       6, NULL, 0);
        add_acc(x, d, off, sz, SBT_ACCESS_WRITE);
        struct cap_ev *e = op_done(x, SBT_OP_FILL, "vkCmdFillBuffer");
        timed(x, e, index);
        if (e) {
            e->op.bytes = sz;
            e->op.value = sbt_vk_arg(r, 3);
            e->op.flags |= SBT_OPF_BYTES | SBT_OPF_OBJ;
        }
        break;
    }
    case SBT_VK_CMD_UPDATE_BUFFER: {
        struct cap_buf *d = cap_obj_find(sbt_vk_arg(r, 0), CAP_T_BUF);
        uint64_t off = sbt_vk_arg(r, 1), sz = sbt_vk_arg(r, 2);
        sbt_vk_enc_rec(&x->pay, SBT_VK_UPDATE_BUFFER,
                       (uint64_t[]){d ? d->o.id : 0, off, sz, x->cb->o.id, index}, 5, NULL, 0);
        add_acc(x, d, off, sz, SBT_ACCESS_WRITE);
        struct cap_ev *e = op_done(x, SBT_OP_COPY, "vkCmdUpdateBuffer");
        x->nocache = 1; /* e->data is a separate allocation */
        timed(x, e, index);
        if (e) {
            e->op.subkind = SBT_COPY_H2D;
            e->op.bytes = sz;
            e->op.flags |= SBT_OPF_BYTES | SBT_OPF_BLOB;
            e->data = malloc(r->n_bytes ? r->n_bytes : 1);
            if (e->data) {
                memcpy(e->data, r->bytes, r->n_bytes);
                e->data_len = r->n_bytes;
            } else {
                x->failed = 1;
            }
        }
        break;
    }
    case SBT_VK_CMD_SET_EVENT:
        sync_op(x, SBT_OP_EVENT_RECORD, "vkCmdSetEvent",
                cap_obj_find(sbt_vk_arg(r, 0), CAP_T_EVENT), 0, sbt_vk_arg(r, 1));
        break;
    case SBT_VK_CMD_WAIT_EVENTS:
        for (uint32_t i = 0; i < sbt_vk_arg(r, 0); i++)
            sync_op(x, SBT_OP_EVENT_WAIT, "vkCmdWaitEvents",
                    cap_obj_find(sbt_vk_arg(r, 1 + i), CAP_T_EVENT), 0, 0);
        break;
    case SBT_VK_CMD_EXECUTE:
        x->nocache = 1; /* a secondary can be re-recorded without the primary */
        for (uint32_t i = 0; i < sbt_vk_arg(r, 0); i++) {
            struct cap_cmdbuf *sec = cap_obj_find(sbt_vk_arg(r, 1 + i), CAP_T_CMDBUF);
            if (!sec || depth >= 2)
                unmod_op(x, !sec ? "vkCmdExecuteCommands (secondary command buffer not captured)"
                                 : "vkCmdExecuteCommands (nested deeper than the capture follows)");
            if (sec && depth < 2) {
                struct xstate save = *x;
                expand(x, sec, depth + 1, NULL);
                /* state does not flow between primary and secondary command buffers */
                struct cap_ev **tail = x->tail;
                uint32_t n_ops = x->n_ops;
                int failed = x->failed, nocache = x->nocache;
                struct sbt_access *acc = x->acc;
                uint32_t cap_acc = x->cap_acc;
                struct sbt_vk_enc pay = x->pay;
                struct cap_timing *timing = x->timing;
                struct cap_dset pset[CAP_MAX_SETS]; /* the secondary may have reshaped them */
                memcpy(pset, x->pset, sizeof pset);
                *x = save;
                memcpy(x->pset, pset, sizeof pset);
                x->timing = timing;
                x->tail = tail;
                x->n_ops = n_ops;
                x->failed = failed;
                x->nocache = nocache;
                x->acc = acc;
                x->cap_acc = cap_acc;
                x->pay = pay;
            }
        }
        break;
    case SBT_VK_CMD_UNSUPPORTED: {
        /* an unrecorded vkCmd* (counted when recorded): its marker, where it runs */
        char name[256];
        size_t len = r->n_bytes < sizeof name - 1 ? r->n_bytes : sizeof name - 1;
        memcpy(name, r->bytes, len);
        name[len] = 0;
        const struct cap_vk_cmd *c = cap_vk_find(name);
        uint32_t id =
            c ? (uint32_t)(c - cap_vk_cmds) : cap_unmod_id(name, SBT_UNMODELLED_AFFECTS, 1);
        struct cap_ev *e = cap_unmod_marker(x->dev, id, x->t0);
        if (!e) {
            x->failed = 1;
            break;
        }
        e->queue_id = x->q->o.id;
        e->op.host_end = x->t1;
        *x->tail = e;
        x->tail = &e->next;
        x->n_ops++;
        break;
    }
    default:
        break;
    }
}

/* Walks cb's raw recording: ops appended at x->tail, and if trans is not NULL the recording
 * with capture ids is written there. */
static void expand(struct xstate *x, struct cap_cmdbuf *cb, int depth, struct sbt_vk_enc *trans)
{
    struct cap_cmdbuf *outer = x->cb;
    x->cb = cb;
    x->pipe = NULL;
    memset(x->set, 0, sizeof x->set);
    memset(x->n_dyn, 0, sizeof x->n_dyn);
    memset(x->is_push, 0, sizeof x->is_push);
    x->push_hi = 0;
    struct sbt_vk_dec dec;
    struct sbt_vk_rec r;
    sbt_vk_dec_init(&dec, cb->raw.buf, cb->raw.len);
    uint32_t index = 0;
    int st;
    while ((st = sbt_vk_dec_next(&dec, &r)) == 1 && !x->failed) {
        if (trans)
            translate(trans, &r);
        expand_cmd(x, &r, index++, depth);
    }
    if (st < 0)
        x->failed = 1;
    sbt_vk_dec_free(&dec);
    x->cb = outer;
}

static struct cap_blob *recording(struct xstate *x, struct cap_cmdbuf *cb)
{
    struct sbt_vk_enc t = {0};
    sbt_vk_enc_raw(&t, SBT_VK_RECORDING_MAGIC, SBT_VK_RECORDING_MAGIC_LEN);
    expand(x, cb, 0, &t);
    struct cap_blob *b = sbt_vk_enc_status(&t) ? NULL : cap_blob_new(t.buf, t.len);
    sbt_vk_enc_free(&t);
    if (!b)
        x->failed = 1;
    return b;
}

/* ========================================================================================== */
/* Cached expansions                                                                          */
/* ========================================================================================== */

/* A command buffer submitted again unchanged (its recording, and every shadow object the
 * expansion looked at, as they were) makes the same ops but for the submission's times,
 * queue and thread: they are copied from the packed blocks of its last expansion, and the
 * device writes are remembered for this submission as add_acc would have. */

void cap_cmdbuf_drop_ops(struct cap_cmdbuf *cb)
{
    free(cb->ops);
    cb->ops = NULL;
    cb->ops_len = 0;
}

/* Keeps the ops of chain (the expansion of cb just made) for its next submits. */
static void cache_ops(struct cap_cmdbuf *cb, const struct cap_ev *chain)
{
    cap_cmdbuf_drop_ops(cb);
    size_t len = 0;
    for (const struct cap_ev *e = chain; e; e = e->next) {
        if (!e->packed || e->data || e->timing || e->n_recs || e->str)
            return;
        len += sizeof(size_t) + cap_ev_op_bytes(e->op.n_access, e->payload_len);
    }
    uint8_t *p = len ? malloc(len) : NULL;
    if (!p)
        return; /* only slower */
    size_t o = 0;
    for (const struct cap_ev *e = chain; e; e = e->next) {
        size_t n = cap_ev_op_bytes(e->op.n_access, e->payload_len);
        memcpy(p + o, &n, sizeof n);
        memcpy(p + o + sizeof n, e, n);
        o += sizeof n + n;
    }
    cb->ops = p;
    cb->ops_len = len;
    cb->ops_gen = cap.shadow_gen;
}

static void replay_ops(struct xstate *x, const struct cap_cmdbuf *cb)
{
    uint32_t thread = cap_thread();
    for (size_t o = 0; o < cb->ops_len && !x->failed;) {
        size_t n;
        memcpy(&n, cb->ops + o, sizeof n);
        struct cap_ev *e = malloc(n);
        if (!e) {
            cap_fail("out of memory for an event");
            x->failed = 1;
            return;
        }
        memcpy(e, cb->ops + o + sizeof n, n);
        o += sizeof n + n;
        cap_ev_op_fix(e);
        e->next = NULL;
        e->thread = thread;
        e->queue_id = x->q->o.id;
        e->op.host_begin = x->t0;
        e->op.host_end = x->t1;
        struct cap_mem *last = NULL;
        for (uint32_t i = 0; i < e->op.n_access; i++) {
            const struct sbt_access *a = &e->acc[i];
            if (!(a->mode & SBT_ACCESS_WRITE))
                continue;
            if (!last || last->o.id != a->resource)
                last = mem_by_id(a->resource);
            if (last)
                mem_pend(last, a->offset, a->len, x->q->o.id, x->serial);
        }
        *x->tail = e;
        x->tail = &e->next;
        x->n_ops++;
    }
}

/* ========================================================================================== */
/* Submission                                                                                 */
/* ========================================================================================== */

struct cap_ev *cap_submit_build(struct cap_dev *dev, struct cap_queue *q,
                                const struct cap_submit_batch *b, uint32_t n, VkFence fence, int v2,
                                uint64_t t0, uint64_t t1, struct cap_ev *pre)
{
    struct cap_ev *head = pre, **tail = &head;
    while (*tail)
        tail = &(*tail)->next;
    struct cap_ev *sub = cap_ev_new(CAP_EV_OP);
    if (!sub) {
        cap_ev_free_chain(head);
        return NULL;
    }
    *tail = sub;
    tail = &sub->next;
    uint64_t serial = ++q->serial;
    struct xstate x = {.dev = dev, .q = q, .serial = serial, .t0 = t0, .t1 = t1, .tail = tail};
    struct sbt_vk_enc pay = {0};
    struct cap_sync *fs = cap_obj_find((uint64_t)(uintptr_t)fence, CAP_T_FENCE);
    sbt_vk_enc_rec(&pay, SBT_VK_SUBMIT, (uint64_t[]){q->o.id, n, fs ? fs->o.id : 0, (uint64_t)v2},
                   4, NULL, 0);
    uint32_t n_recs = 0;
    for (uint32_t i = 0; i < n; i++)
        n_recs += b[i].n_cb;
    sub->recs = n_recs ? calloc(n_recs, sizeof *sub->recs) : NULL;
    if (n_recs && !sub->recs)
        x.failed = 1;
    for (uint32_t i = 0; i < n && !x.failed; i++) {
        sbt_vk_enc_rec(&pay, SBT_VK_BATCH, (uint64_t[]){b[i].n_wait, b[i].n_cb, b[i].n_signal, 0},
                       4, NULL, 0);
        for (uint32_t k = 0; k < b[i].n_wait; k++) {
            struct cap_sync *s = cap_obj_find((uint64_t)(uintptr_t)b[i].wait[k], CAP_T_SEM);
            uint64_t v = b[i].wait_value && s && s->kind == SBT_SYNC_TIMELINE_SEMAPHORE
                             ? b[i].wait_value[k]
                             : 0;
            uint64_t stage = b[i].wait_stage ? b[i].wait_stage[k] : 0;
            sbt_vk_enc_rec(&pay, SBT_VK_WAIT_SEM, (uint64_t[]){s ? s->o.id : 0, v, stage}, 3, NULL,
                           0);
            sync_op(&x, SBT_OP_WAIT, "semaphore wait", s, v, stage);
        }
        for (uint32_t k = 0; k < b[i].n_cb; k++) {
            struct cap_cmdbuf *cb = cap_obj_find((uint64_t)(uintptr_t)b[i].cb[k], CAP_T_CMDBUF);
            if (!cb) {
                unmod_op(&x, "vkQueueSubmit (command buffer not captured)");
                continue;
            }
            uint32_t before = x.n_ops;
            if (cb->n_ts_pool)
                cap_timing_settle_cb(cb); /* its last submission, if not seen finishing */
            struct cap_ev **first = x.tail;
            if (cb->rec && cb->ops && cb->ops_gen == cap.shadow_gen && !cb->n_ts) {
                replay_ops(&x, cb);
            } else {
                x.nocache = 0;
                if (!cb->rec)
                    cb->rec = recording(&x, cb); /* first submit of this recording */
                else
                    expand(&x, cb, 0, NULL);
                if (cb->rec && !x.failed && !x.nocache && !cb->n_ts && x.n_ops > before)
                    cache_ops(cb, *first);
            }
            if (!cb->rec)
                break;
            atomic_fetch_add(&cb->rec->ref, 1);
            sub->recs[sub->n_recs++] = cb->rec;
            sbt_vk_enc_rec(
                &pay, SBT_VK_CMDBUF,
                (uint64_t[]){cb->o.id, cb->rec->hash.lo, cb->rec->hash.hi, x.n_ops - before}, 4,
                NULL, 0);
        }
        for (uint32_t k = 0; k < b[i].n_signal; k++) {
            struct cap_sync *s = cap_obj_find((uint64_t)(uintptr_t)b[i].signal[k], CAP_T_SEM);
            uint64_t v = b[i].signal_value && s && s->kind == SBT_SYNC_TIMELINE_SEMAPHORE
                             ? b[i].signal_value[k]
                             : 0;
            uint64_t stage = b[i].signal_stage ? b[i].signal_stage[k] : 0;
            sbt_vk_enc_rec(&pay, SBT_VK_SIGNAL_SEM, (uint64_t[]){s ? s->o.id : 0, v, stage}, 3,
                           NULL, 0);
            if (s)
                sync_signaled(s, v, q->o.id, serial);
            sync_op(&x, SBT_OP_SIGNAL, "semaphore signal", s, v, 0);
        }
    }
    if (fs) {
        sync_signaled(fs, 0, q->o.id, serial);
        sync_op(&x, SBT_OP_SIGNAL, "fence signal", fs, 0, 0);
    }
    free(x.acc);
    sbt_vk_enc_free(&x.pay);
    for (uint32_t i = 0; i < CAP_MAX_SETS; i++)
        cap_dset_release(&x.pset[i]);
    if (x.failed || sbt_vk_enc_status(&pay)) {
        sbt_vk_enc_free(&pay);
        if (x.timing) {
            free(x.timing->ops);
            free(x.timing->query);
            free(x.timing->pool);
            free(x.timing);
        }
        cap_ev_free_chain(head);
        cap_fail("out of memory building a submission");
        return NULL;
    }
    sub->dev_id = dev->id;
    sub->queue_id = q->o.id;
    sub->name = v2 == 2 ? "vkQueueSubmit2" : "vkQueueSubmit";
    sub->op.kind = SBT_OP_SUBMIT;
    sub->op.host_begin = t0;
    sub->op.host_end = t1;
    sub->op.value = x.n_ops;
    sub->op.flags = SBT_OPF_OBJ;
    sub->payload = pay.buf;
    sub->payload_len = pay.len;
    pay.buf = NULL;
    sbt_vk_enc_free(&pay);
    if (x.timing)
        cap_timing_submit(x.timing, head, dev, q, serial, t0);
    return head;
}

/* ========================================================================================== */
/* --digests                                                                                  */
/* ========================================================================================== */

static int overlaps(const struct sbt_access *a, const struct sbt_access *b)
{
    return a->resource == b->resource && a->offset < b->offset + b->len &&
           b->offset < a->offset + a->len;
}

/* Bytes of [off, off+len) of m, mapping it for the moment if the program has not. */
static void digest_range(struct cap_mem *m, uint64_t off, uint64_t len, sbt_hasher *h)
{
    if (m->mapped && m->map_base && off >= m->map_off && off + len <= m->map_off + m->map_len) {
        sbt_hasher_update(h, m->map_base + off, len);
        return;
    }
    if (m->mapped)
        return;
    void *p = NULL;
    struct cap_dev *d = m->o.dev;
    if (d->fn.MapMemory(d->handle, (VkDeviceMemory)(uintptr_t)m->o.handle, off, len, 0, &p) !=
        VK_SUCCESS)
        return;
    sbt_hasher_update(h, p, len);
    d->fn.UnmapMemory(d->handle, (VkDeviceMemory)(uintptr_t)m->o.handle);
}

void cap_digest_ops(struct cap_ev *chain)
{
    sbt_hasher *h = NULL;
    if (sbt_hasher_create(&h) < 0)
        return;
    pthread_mutex_lock(&cap.mu);
    for (struct cap_ev *e = chain; e; e = e->next) {
        if (e->op.kind != SBT_OP_KERNEL)
            continue;
        int exact = 1, any = 0;
        for (uint32_t i = 0; i < e->op.n_access && exact; i++) {
            const struct sbt_access *a = &e->acc[i];
            if (!(a->mode & SBT_ACCESS_WRITE))
                continue;
            struct cap_mem *m = mem_by_id(a->resource);
            if (!m || !(m->props & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
                exact = 0;
            any = 1;
            /* a later op of the same submission writing there would hide this one's output */
            for (struct cap_ev *l = e->next; l && exact; l = l->next)
                for (uint32_t k = 0; k < l->op.n_access && exact; k++)
                    if ((l->acc[k].mode & SBT_ACCESS_WRITE) && overlaps(a, &l->acc[k]))
                        exact = 0;
        }
        if (!exact || !any)
            continue;
        sbt_hasher_reset(h);
        for (uint32_t i = 0; i < e->op.n_access; i++) {
            const struct sbt_access *a = &e->acc[i];
            if (a->mode & SBT_ACCESS_WRITE)
                digest_range(mem_by_id(a->resource), a->offset, a->len, h);
        }
        e->op.digest = sbt_hasher_digest(h);
        e->op.flags |= SBT_OPF_DIGEST;
    }
    pthread_mutex_unlock(&cap.mu);
    sbt_hasher_destroy(h);
}
