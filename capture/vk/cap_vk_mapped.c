/*
 * capture/vk/cap_vk_mapped.c — host-visible memory as the host sees it: which bytes the host wrote
 * into a mapping before a submission (or vkSetEvent, vkSignalSemaphore, a flush, an unmap)
 * could read them (HOST_WRITE ops carrying those bytes), and what device work left there for the
 * host to read once a wait says it finished (HOST_READ ops carrying a digest).
 *
 * Exact, byte for byte. Host and device may write different bytes of one page at the same time
 * (an upload ring: the device writes one KiB while the host fills the next submission's input
 * in another KiB of the same page). So a page is never taken as a whole where device work may
 * write or has written part of it: the layer keeps a shadow copy of such a page (what it knows
 * each byte holds) and compares it byte by byte, leaving out the bytes unfinished device work
 * may write (its may-write intervals, struct cap_mem.pend). When a wait says that work finished
 * (cap_complete, before the program can touch the bytes), what it wrote goes into the shadow as
 * device output, or the page is write-protected so that the first host write copies it there
 * first (copy on first write, PS_STALE). Bytes the device wrote are never recorded as host
 * writes; runs of host writes are never joined across them (struct cap_mem.devb). Pages device
 * work never touched are recorded whole when written (their other bytes are the host's too, or
 * the contents the mapping had when first mapped). Those contents are recorded when the bytes
 * are first mapped, zeros and device output left out (map_initial): a driver may hand a new
 * allocation what a freed one held, while the trace's memory starts zeroed, and the shadows and
 * hashes taken of a mapping must hold what the trace says its bytes are.
 *
 * Cheap: the cost follows what the host wrote, not what is mapped. How written pages are found
 * (userfaultfd write-protection, mprotect and the first fault per page, or a scan) is
 * capture/vk/cap_vk_track.c's part; this file decides what to read, compares and records.
 * A page written at two publishes in a row (a buffer the host rewrites every round) is left
 * unprotected and compared by the hash of the copy recorded anyway, until it stops changing.
 * Memory the CPU reads slowly (no HOST_CACHED: write-combined on discrete GPUs) is handed to
 * the program as a copy in ordinary memory ("copy" mappings): host writes are found there as
 * before and written through to the driver's mapping at publish, device output is copied in when
 * a wait says it finished. Host and device then write different memory, so even host writes
 * into bytes a descriptor lets unfinished work write are told apart (byte by byte, against the
 * shadow taken at the host's first write).
 *
 * Non-coherent memory (host-visible without HOST_COHERENT: a discrete GPU's, often) is seen as the
 * program must use it. Its mapping is always a copy mapping, so that nothing the driver stores
 * into its own mapping (at an invalidate, on a driver that keeps a host copy) is ever taken for a
 * host write, whatever finds the host's writes. Host writes reach the device at the program's
 * vkFlushMappedMemoryRanges: they are published there (the flushed ranges' pages, written
 * through to the driver's mapping before the driver flushes) and not at submissions or signals.
 * What the program wrote and never flushed did not reach the device: found at the unmap (or
 * free, or shutdown), it makes the trace incomplete, naming it (the program relies on a
 * coherence the memory lacks). Device output reaches the host at the program's
 * vkInvalidateMappedMemoryRanges: a wait that says device work finished leaves its intervals
 * waiting (struct cap_mem.done), and the invalidate, once the driver did it, reads back those in
 * its ranges (HOST_READ digests of the driver's mapping, copied into the program's view) as a wait
 * does for coherent memory. Mappings the program places or imports cannot be copies: the trace is
 * then incomplete.
 *
 * Limits. A host write during a submission's run into bytes its descriptors let it write (its
 * may-write intervals are wider than what it writes) cannot be told from device output in a
 * mapping the program writes directly; copy mappings tell them apart. So that it does not
 * happen on a CPU device (lavapipe: the device writes with the CPU, into the very pages),
 * cap_vk_sync.c waits there for a submission that writes mapped memory before vkQueueSubmit
 * returns (when it cannot wait for the host). On a device that writes by DMA the pages such
 * work may write wholly stay protected while it runs (PS_WATCH): a host write there makes the
 * trace incomplete, naming it. One into the may-write part of a page the host shares is not
 * seen. Host writes the program makes without a publish point after them are recorded at the
 * next one, unmap or free.
 *
 * Locks. cap.mu guards cap.mems (allocations are counted references, so the work is done under
 * the allocation's own m->mu only); m->mu guards one allocation's mapping, page states (but for
 * the transitions the fault handler makes, all atomic), shadow and intervals. Ops are emitted
 * under m->mu: two threads publishing the same bytes put them into the trace in the order they
 * read them. The fault handler (cap_vk_track.c) takes no lock: it finds the page through a table
 * published with an atomic pointer (freed only when no handler runs) and changes the page's state
 * with atomics.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/vk/cap_vk_track.h"

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
    if (!m) {
        cap_fail("out of memory tracking allocations");
        return NULL;
    }
    m->o.handle = handle;
    m->o.type = VK_OBJECT_TYPE_DEVICE_MEMORY;
    m->o.id = cap_new_id();
    m->o.dev = dev;
    m->size = size;
    m->type_index = type_index;
    m->props = type_index < dev->mem_props.memoryTypeCount
                   ? dev->mem_props.memoryTypes[type_index].propertyFlags
                   : 0;
    atomic_init(&m->ref, 1);
    pthread_mutex_init(&m->mu, NULL);
    if (sbt_map_putp(&cap.objs[CAP_T_MEM], handle, m)) {
        pthread_mutex_destroy(&m->mu);
        free(m);
        cap_fail("out of memory tracking allocations");
        return NULL;
    }
    cap.mems[cap.n_mems++] = m;
    cap.shadow_gen++;
    return m;
}

static void track_free(struct cap_mem *m);

static void mem_destroy(struct cap_mem *m)
{
    track_free(m);
    free(m->pend);
    free(m->done);
    sbt_iset_free(&m->devb);
    free(m->img);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void cap_mem_unref(struct cap_mem *m)
{
    if (m && atomic_fetch_sub(&m->ref, 1) == 1)
        mem_destroy(m);
}

void cap_mem_release(struct cap_mem *m)
{
    cap.shadow_gen++;
    for (uint32_t i = 0; i < cap.n_mems; i++)
        if (cap.mems[i] == m) {
            cap.mems[i] = cap.mems[--cap.n_mems];
            break;
        }
    /* buffers that outlive their memory have none (a dispatch that reaches every buffer with
     * a device address must not follow them into freed memory) */
    uint64_t pos = 0, k, v;
    while (sbt_map_next(&cap.objs[CAP_T_BUF], &pos, &k, &v)) {
        struct cap_buf *b = (struct cap_buf *)(uintptr_t)v;
        if (b && b->mem == m)
            b->mem = NULL;
    }
    cap_mem_unref(m);
}

struct cap_mem *cap_mem_by_id(uint64_t id)
{
    for (uint32_t i = 0; i < cap.n_mems; i++)
        if (cap.mems[i]->o.id == id)
            return cap.mems[i];
    return NULL;
}

struct cap_mem *cap_mem_get(uint64_t handle)
{
    pthread_mutex_lock(&cap.mu);
    struct cap_mem *m = cap_obj_find(handle, CAP_T_MEM);
    if (m)
        atomic_fetch_add(&m->ref, 1);
    pthread_mutex_unlock(&cap.mu);
    return m;
}

/* The mapped allocations of dev (all devices: NULL), each with a reference; *n of them. */
static struct cap_mem **mems_of(struct cap_dev *dev, int with_pending, uint32_t *n)
{
    pthread_mutex_lock(&cap.mu);
    struct cap_mem **v = malloc((cap.n_mems ? cap.n_mems : 1) * sizeof *v);
    uint32_t k = 0;
    for (uint32_t i = 0; v && i < cap.n_mems; i++) {
        struct cap_mem *m = cap.mems[i];
        /* racy reads as a filter: m->mu is taken before anything is done with m. A read-back
         * in progress in another thread (mem_complete) counts as pending: its submissions
         * are no longer pending, but their bytes are not yet in the program's view, and the
         * waiting thread must not return before they are (found on lavapipe with copy
         * mappings: vk_threads read a stale copy one time in ten) */
        int want = with_pending ? __atomic_load_n(&m->n_pend, __ATOMIC_ACQUIRE) != 0 ||
                                      __atomic_load_n(&m->completing, __ATOMIC_ACQUIRE) != 0
                                : __atomic_load_n(&m->mapped, __ATOMIC_RELAXED) != 0;
        if ((dev && m->o.dev != dev) || !want)
            continue;
        atomic_fetch_add(&m->ref, 1);
        v[k++] = m;
    }
    pthread_mutex_unlock(&cap.mu);
    if (!v)
        cap_fail("out of memory listing allocations");
    *n = k;
    return v;
}

/* ========================================================================================== */
/* Intervals                                                                                  */
/* ========================================================================================== */

static int push_write(struct cap_dev_write **v, uint32_t *n, uint32_t *cap_n,
                      struct cap_dev_write x)
{
    if (*n == *cap_n) {
        uint32_t c = *cap_n ? *cap_n * 2 : 8;
        struct cap_dev_write *p = realloc(*v, c * sizeof *p);
        if (!p)
            return -1;
        *v = p;
        *cap_n = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

/* [a, b) into devb. */
static void devb_add(struct cap_mem *m, uint64_t a, uint64_t b)
{
    if (sbt_iset_add(&m->devb, a, b))
        cap_fail("out of memory tracking device writes");
}

/* Does device work ever written intersect [a, b)? */
static int devb_hits(const struct cap_mem *m, uint64_t a, uint64_t b)
{
    return sbt_iset_overlaps(&m->devb, a, b);
}

/* Whether p's device work may have started: on a CPU device, work that waits for what the host
 * has yet to do has not (cap_vk_sync.c, "CPU devices"), and what the host writes into the bytes
 * it may write is the host's. */
static int pend_live(const struct cap_dev_write *p)
{
    uint64_t from = cap_blocked_from(p->queue);
    return !from || p->first < from;
}

/* Coverage of [a, b) by unfinished device writes: 0 none, 1 part, 2 all (one interval). */
static int pend_cover(const struct cap_mem *m, uint64_t a, uint64_t b)
{
    int any = 0;
    for (uint32_t i = 0; i < m->n_pend; i++) {
        const struct cap_dev_write *p = &m->pend[i];
        if (!pend_live(p))
            continue;
        if (p->off < b && a < p->off + p->len) {
            if (p->off <= a && p->off + p->len >= b)
                return 2;
            any = 1;
        }
    }
    return any;
}

int cap_mem_pending(const struct cap_mem *m, uint64_t a, uint64_t b)
{
    return pend_cover(m, a, b) != 0;
}

/* The end of the stretch from c that unfinished device writes cover (c if none does), and in
 * *next the start of the next one after c (or b). */
static uint64_t pend_skip(const struct cap_mem *m, uint64_t c, uint64_t b, uint64_t *next)
{
    int moved = 1;
    while (moved) {
        moved = 0;
        for (uint32_t i = 0; i < m->n_pend; i++) {
            const struct cap_dev_write *p = &m->pend[i];
            if (pend_live(p) && p->off <= c && c < p->off + p->len) {
                c = p->off + p->len;
                moved = 1;
            }
        }
    }
    uint64_t n = b;
    for (uint32_t i = 0; i < m->n_pend; i++)
        if (pend_live(&m->pend[i]) && m->pend[i].off > c && m->pend[i].off < n)
            n = m->pend[i].off;
    *next = n;
    return c < b ? c : b;
}

/* ========================================================================================== */
/* Host-write runs                                                                            */
/* ========================================================================================== */

#define GAP 64u /* unchanged bytes a run may span (never device output) */

/* Builds the HOST_WRITE ops of one publish: byte runs of the program's view, joined across
 * small gaps, at most CAP_RUN_MAX (+ a page) each. */
struct out {
    struct cap_mem *m;
    uint64_t now;
    int last; /* the last publish of the mapping (unmap): nothing goes back under protection */
    uint64_t ra, rb; /* the run being built (allocation offsets), empty when equal */
    uint8_t *buf;
    struct cap_ev *head, **tail;
};

static void out_init(struct out *o, struct cap_mem *m, uint64_t now)
{
    memset(o, 0, sizeof *o);
    o->m = m;
    o->now = now;
    o->tail = &o->head;
}

/* A host-side op on [a, b) of m (HOST_WRITE or HOST_READ) with its one access. */
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

/* Host bytes on images bound to the memory (cap_vk_images.c): the parts on a linear image are a
 * HOST_WRITE or HOST_READ of its packed rows, the rest stay the memory's. */
struct img_split {
    struct out *o;         /* HOST_WRITE: the run being ended */
    struct cap_mem *m;     /* HOST_READ */
    struct cap_ev ***tail; /* where the ops go */
    uint32_t kind;
    uint64_t now;
};

static void chain(struct cap_ev ***tail, struct cap_ev *e)
{
    **tail = e;
    *tail = &e->next;
}

static void split_img(void *ctx, struct cap_image *im, uint64_t x, uint64_t y)
{
    struct img_split *c = ctx;
    struct cap_mem *m = c->o ? c->o->m : c->m;
    int w = c->kind == SBT_OP_HOST_WRITE;
    /* writes: what the program wrote, in its view; reads: what the device left, in the
     * driver's mapping */
    struct cap_ev *e = cap_img_host_op(im, c->kind, x, y, w ? m->map_base : m->dev_base, c->now);
    if (e)
        chain(c->tail, e);
    else if (w && !im->lay)
        /* bytes of an optimal-tiling image changed under the mapping: the host may not write
         * there (Vulkan leaves it undefined), so a driver did (a layout transition that
         * rewrites memory, say); counted, not an input of the trace */
        cap_unmodelled(m->o.dev, "bytes of an optimal-tiling image changed in a mapping", 0);
}

static void split_write_mem(void *ctx, uint64_t x, uint64_t y)
{
    struct img_split *c = ctx;
    struct out *o = c->o;
    uint8_t *buf = cap_run_alloc();
    struct cap_ev *e = buf ? host_op(o->m, x, y, SBT_OP_HOST_WRITE, o->now) : NULL;
    if (!e) {
        cap_run_free(buf);
        cap_fail("out of memory storing %llu bytes of host writes", (unsigned long long)(y - x));
        return;
    }
    memcpy(buf, o->buf + (x - o->ra), y - x);
    e->data = buf;
    e->data_len = y - x;
    e->data_pooled = 1;
    chain(c->tail, e);
}

static void split_read_mem(void *ctx, uint64_t x, uint64_t y)
{
    struct img_split *c = ctx;
    struct cap_ev *e = host_op(c->m, x, y, SBT_OP_HOST_READ, c->now);
    if (!e) {
        cap_fail("out of memory recording a host read");
        return;
    }
    e->op.digest = sbt_hash_bytes(c->m->dev_base + x, y - x);
    e->op.flags |= SBT_OPF_DIGEST;
    chain(c->tail, e);
}

static void out_end_run(struct out *o)
{
    if (o->rb == o->ra)
        return;
    struct cap_mem *m = o->m;
    if (m->n_img && o->buf) {
        struct img_split c = {o, NULL, &o->tail, SBT_OP_HOST_WRITE, o->now};
        cap_img_split(m, o->ra, o->rb, split_write_mem, split_img, &c);
        if (m->tr && m->tr->copy) /* through to the driver's mapping */
            memcpy(m->dev_base + o->ra, o->buf, o->rb - o->ra);
        cap_run_free(o->buf);
        o->buf = NULL;
        o->ra = o->rb = 0;
        return;
    }
    struct cap_ev *e = o->buf ? host_op(m, o->ra, o->rb, SBT_OP_HOST_WRITE, o->now) : NULL;
    if (!e) {
        cap_run_free(o->buf);
        cap_fail("out of memory storing %llu bytes of host writes",
                 (unsigned long long)(o->rb - o->ra));
    } else {
        e->data = o->buf;
        e->data_len = o->rb - o->ra;
        e->data_pooled = 1;
        *o->tail = e;
        o->tail = &e->next;
        if (m->tr && m->tr->copy) /* through to the driver's mapping */
            memcpy(m->dev_base + o->ra, o->buf, o->rb - o->ra);
    }
    o->buf = NULL;
    o->ra = o->rb = 0;
}

/* Bytes [a, b) of the program's view are host writes. */
static void out_add(struct out *o, uint64_t a, uint64_t b)
{
    const uint8_t *src = o->m->map_base;
    if (o->rb > o->ra && a >= o->rb && a - o->rb <= GAP && b - o->ra <= CAP_RUN_MAX + PG &&
        o->rb - o->ra < CAP_RUN_MAX && (a == o->rb || !devb_hits(o->m, o->rb, a))) {
        if (o->buf)
            memcpy(o->buf + (o->rb - o->ra), src + o->rb, b - o->rb);
        o->rb = b;
        return;
    }
    out_end_run(o);
    o->ra = a;
    o->rb = b;
    o->buf = cap_run_alloc();
    if (o->buf)
        memcpy(o->buf, src + a, b - a);
}

/* Takes back [x, y), the last bytes out_add added (they did not change after all). */
static void out_undo(struct out *o, uint64_t x, uint64_t y)
{
    if (o->rb != y || o->rb == o->ra)
        return;
    if (o->ra >= x) { /* the run was this page alone */
        cap_run_free(o->buf);
        o->buf = NULL;
        o->ra = o->rb = 0;
    } else {
        o->rb = x;
    }
}

/* The hash of [x, y) as out_add just copied it (in cache), or of the mapping when the copy
 * failed. */
static sbt_hash out_hash(const struct out *o, uint64_t x, uint64_t y)
{
    if (o->buf && o->rb == y && o->ra <= x)
        return sbt_hash_bytes(o->buf + (x - o->ra), y - x);
    return sbt_hash_bytes(o->m->map_base + x, y - x);
}

static void out_emit(struct out *o)
{
    out_end_run(o);
    cap_emit(o->head);
    o->head = NULL;
    o->tail = &o->head;
}

/* ========================================================================================== */
/* Publishing                                                                                 */
/* ========================================================================================== */

/* Allocation offsets of page i's bytes in the mapping. */
static void page_bytes(const struct cap_mem *m, const struct cap_track *t, uint64_t i, uint64_t *x,
                       uint64_t *y)
{
    uint64_t a = (uint64_t)(page_at(t, i) - m->map_base), b = a + PG;
    *x = a > m->map_off ? a : m->map_off;
    *y = b < m->map_off + m->map_len ? b : m->map_off + m->map_len;
}

static int full_page(const struct cap_track *t, uint64_t k)
{
    return k >= t->lo && k < t->hi;
}

/* The shadow byte of allocation offset 0 (t->sh maps the span's pages). */
static uint8_t *sh_at0(const struct cap_mem *m, const struct cap_track *t)
{
    return t->sh - (page_at(t, 0) - m->map_base);
}

/* [a, b) of the program's view into o, and into the shadow from the bytes recorded: a host
 * write landing after they were read is then still a difference at the next publish. */
static void out_add_shadow(struct out *o, struct cap_track *t, uint64_t a, uint64_t b)
{
    out_add(o, a, b);
    if (o->buf)
        memcpy(sh_at0(o->m, t) + a, o->buf + (a - o->ra), b - a);
}

/* The host writes in [u, v) (no unfinished device write there) of a page with a shadow:
 * compared in 64-byte blocks, runs trimmed to the first and last byte that differ, split into
 * exact runs where device output lies. Returns the number of runs. */
static int diff_shadow(struct out *o, struct cap_track *t, uint64_t u, uint64_t v)
{
    struct cap_mem *m = o->m;
    const volatile uint8_t *p = m->map_base; /* other threads may be writing it */
    uint8_t *s = sh_at0(m, t);
    int n = 0;
    uint64_t c = u;
    while (c < v) {
        uint64_t blk = c + 64 < v ? c + 64 : v;
        if (!memcmp((const uint8_t *)p + c, s + c, blk - c)) {
            c = blk;
            continue;
        }
        uint64_t d = c;
        while (d < blk && p[d] == s[d])
            d++;
        if (d == blk) { /* changed back meanwhile */
            c = blk;
            continue;
        }
        uint64_t e = blk;
        while (e < v) { /* over the changed blocks that follow */
            uint64_t nb = e + 64 < v ? e + 64 : v;
            if (!memcmp((const uint8_t *)p + e, s + e, nb - e))
                break;
            e = nb;
        }
        while (e > d + 1 && p[e - 1] == s[e - 1])
            e--;
        if (!devb_hits(m, d, e)) {
            out_add_shadow(o, t, d, e);
            n++;
        } else { /* exact byte runs where device output lies */
            for (uint64_t k = d; k < e;) {
                while (k < e && p[k] == s[k])
                    k++;
                uint64_t r = k;
                while (r < e && p[r] != s[r])
                    r++;
                if (r > k) {
                    out_add_shadow(o, t, k, r);
                    n++;
                }
                k = r;
            }
        }
        c = e;
    }
    return n;
}

/* Page i recorded whole, its shadow made from the bytes recorded. */
static void record_whole(struct out *o, struct cap_track *t, uint64_t i)
{
    uint64_t x, y;
    page_bytes(o->m, t, i, &x, &y);
    if (x < y)
        out_add_shadow(o, t, x, y);
    ps_set(t, i, (uint8_t)((ps_get(t, i) | PS_SHADOW) & ~PS_HASHED));
}

/* Page i's host writes into o: found written, or to be compared. Returns whether any.
 * m->mu held; the page is not armed, or was re-armed by the collect that found it. */
static int publish_page(struct out *o, struct cap_track *t, uint64_t i)
{
    struct cap_mem *m = o->m;
    uint64_t x, y;
    page_bytes(m, t, i, &x, &y);
    if (x >= y)
        return 0;
    uint8_t s = ps_get(t, i);
    if ((s & PS_SHADOW) && t->copy && cap_mem_noncoherent(m))
        /* the device writes the driver's pages, not these: every difference is the host's,
         * also where unfinished device work may write, and it reaches the device at this flush
         * or never (the next publish is a flush too) */
        return diff_shadow(o, t, x, y) > 0;
    if (s & PS_SHADOW) {
        int n = 0;
        for (uint64_t c = x, nx; c < y; c = nx) {
            c = pend_skip(m, c, y, &nx);
            if (c < nx)
                n += diff_shadow(o, t, c, nx);
        }
        return n > 0;
    }
    /* a page device work never wrote: recorded whole, unless the hash of its bytes says they
     * did not change (a page opened ahead of a run of writes, or written with what it held) */
    if (t->mode == CAP_TRACK_SCAN) { /* hashed in place first: most pages did not change */
        sbt_hash h = sbt_hash_bytes(m->map_base + x, y - x);
        if ((s & PS_HASHED) && sbt_hash_eq(h, t->hash[i]))
            return 0;
        t->hash[i] = h;
        ps_set(t, i, (uint8_t)(ps_get(t, i) | PS_HASHED));
        out_add(o, x, y);
        return 1;
    }
    out_add(o, x, y);
    if (!(s & (PS_HASHED | PS_RECENT)) && (s & PS_MASK) != PS_HOT)
        return 1;                   /* written, and cannot go HOT yet: no hash needed */
    sbt_hash h = out_hash(o, x, y); /* from the copy, in cache */
    if ((s & PS_HASHED) && sbt_hash_eq(h, t->hash[i])) {
        out_undo(o, x, y);
        return 0;
    }
    t->hash[i] = h;
    ps_set(t, i, (uint8_t)(ps_get(t, i) | PS_HASHED));
    return 1;
}

/* Host-only pages [i, j) just collected as written, recorded: those recorded at the publish
 * before too go unprotected (HOT): a buffer the host rewrites every round costs a hash of what
 * is copied anyway instead of a fault per page. A write after the copy is still found: the
 * page's bytes then differ from the hash of the copy. */
static void heat(struct cap_track *t, uint64_t i, uint64_t j, const uint8_t *changed)
{
    uint64_t run = UINT64_MAX;
    for (uint64_t k = i; k <= j; k++) {
        int hot = 0;
        if (k < j) {
            uint8_t s = ps_get(t, k);
            hot = changed[k - i] && (s & PS_RECENT) && !(s & (PS_SHADOW | PS_STALE)) &&
                  (s & PS_HASHED) && (s & PS_MASK) == PS_ARMED;
            ps_set(t, k, (uint8_t)(changed[k - i] ? s | PS_RECENT : s & ~PS_RECENT));
        }
        if (hot) {
            if (run == UINT64_MAX)
                run = k;
            continue;
        }
        if (run != UINT64_MAX)
            trk_disarm(t, run, k, PS_HOT);
        run = UINT64_MAX;
    }
}

/* A HOT page that device work never wrote: compared by the hash of its bytes; one that did not
 * change since the last publish goes back under protection (checked again once protected, so
 * that a write between the two is not lost). */
static void publish_hot(struct out *o, struct cap_track *t, uint64_t k)
{
    struct cap_mem *m = o->m;
    uint64_t x, y;
    page_bytes(m, t, k, &x, &y);
    if (x >= y || publish_page(o, t, k))
        return; /* changed: stays HOT */
    if (o->last || t->mode == CAP_TRACK_SCAN || !full_page(t, k) || pend_cover(m, x, y))
        return;
    trk_arm(t, k, k + 1, 0);
    ps_set(t, k, (uint8_t)(ps_get(t, k) & ~PS_RECENT));
    if (!sbt_hash_eq(sbt_hash_bytes(m->map_base + x, y - x), t->hash[k]))
        publish_page(o, t, k);
}

/* uffd: the written pages among armed pages [i, j), re-armed in the same call, published. */
static void collect_uffd(struct out *o, struct cap_track *t, uint64_t i, uint64_t j)
{
    struct page_region v[64];
    uintptr_t start = (uintptr_t)page_at(t, i), end = (uintptr_t)page_at(t, j);
    while (start < end) {
        struct pm_scan_arg a = {.size = sizeof a,
                                .flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
                                .start = start,
                                .end = end,
                                .vec = (uintptr_t)v,
                                .vec_len = 64,
                                .category_mask = PAGE_IS_WRITTEN,
                                .return_mask = PAGE_IS_WRITTEN};
        long n = ioctl(trk_hm.pagemap, PAGEMAP_SCAN, &a);
        if (n < 0) { /* cannot tell: every page compared, as a scan would */
            for (uint64_t k = (start - (uintptr_t)t->base) / PG; k < j; k++)
                publish_page(o, t, k);
            return;
        }
        for (long r = 0; r < n; r++) {
            uint64_t a0 = (v[r].start - (uintptr_t)t->base) / PG,
                     a1 = (v[r].end - (uintptr_t)t->base) / PG;
            uint8_t changed[64];
            for (uint64_t k0 = a0; k0 < a1; k0 += 64) {
                uint64_t k1 = k0 + 64 < a1 ? k0 + 64 : a1;
                for (uint64_t k = k0; k < k1; k++)
                    changed[k - k0] = (uint8_t)publish_page(o, t, k);
                heat(t, k0, k1, changed);
            }
        }
        if (a.walk_end <= start || a.walk_end >= end)
            break;
        start = a.walk_end;
    }
}

/* protect: open pages [i, j) write-protected again, then published (a write from now on
 * faults again: it is not lost, whether or not the bytes read below already hold it). */
static void collect_prot(struct out *o, struct cap_track *t, uint64_t i, uint64_t j)
{
    trk_set_busy(t, i, j);
    trk_prot(t, i, j, 0);
    for (uint64_t k = i; k < j; k++)
        ps_set(t, k, (uint8_t)((ps_get(t, k) & ~PS_MASK) | PS_ARMED));
    uint8_t changed[64];
    for (uint64_t k0 = i; k0 < j; k0 += 64) {
        uint64_t k1 = k0 + 64 < j ? k0 + 64 : j;
        for (uint64_t k = k0; k < k1; k++)
            changed[k - k0] = (uint8_t)publish_page(o, t, k);
        heat(t, k0, k1, changed);
    }
}

/* uffd: was armed page k written since it was armed? (1 when it cannot tell) */
static int uffd_written(struct cap_track *t, uint64_t k)
{
    struct page_region v[1];
    struct pm_scan_arg a = {.size = sizeof a,
                            .flags = PM_SCAN_CHECK_WPASYNC,
                            .start = (uintptr_t)page_at(t, k),
                            .end = (uintptr_t)page_at(t, k + 1),
                            .vec = (uintptr_t)v,
                            .vec_len = 1,
                            .category_mask = PAGE_IS_WRITTEN,
                            .return_mask = PAGE_IS_WRITTEN};
    return ioctl(trk_hm.pagemap, PAGEMAP_SCAN, &a) != 0;
}

/* The shadow of page k taken from the page itself, when no host write can have changed it
 * since its last publish (one found before or during the copy makes this fail: 0): an armed
 * page, or in a scan a page whose copy hashes as what was recorded last (or the baseline). */
static int snap_clean(struct cap_track *t, uint64_t k)
{
    if (t->mode == CAP_TRACK_SCAN) { /* a write landing after the copy differs from it later */
        uint64_t x, y;
        page_bytes(t->m, t, k, &x, &y);
        if (!(ps_get(t, k) & PS_HASHED) || x >= y)
            return 0;
        trk_snap(t, k);
        return sbt_hash_eq(sbt_hash_bytes(sh_at0(t->m, t) + x, y - x), t->hash[k]);
    }
    if ((ps_get(t, k) & PS_MASK) != PS_ARMED)
        return 0;
    if (t->mode == CAP_TRACK_UFFD) {
        if (uffd_written(t, k))
            return 0;
        trk_snap(t, k);
        return !uffd_written(t, k);
    }
    if (t->mode != CAP_TRACK_PROTECT)
        return 0;
    trk_snap(t, k); /* read-only: a write faults, and the handler opens it (OPEN) */
    return (ps_get(t, k) & PS_MASK) == PS_ARMED;
}

/* Host writes on span pages [i, j) since the last publish, into o. A compared (HOT) page that
 * shares nothing with unfinished device work any more goes back under protection, before it
 * is compared: a write after that is found either way. */
static void publish_pages(struct out *o, struct cap_track *t, uint64_t i, uint64_t j)
{
    struct cap_mem *m = o->m;
    uint64_t k = i;
    while (k < j) {
        uint8_t st = ps_get(t, k) & PS_MASK;
        uint64_t e = k + 1;
        if (st == PS_ARMED && t->mode == CAP_TRACK_UFFD && trk_by_uffd(t, ps_get(t, k))) {
            while (e < j && trk_by_uffd(t, ps_get(t, e)))
                e++;
            collect_uffd(o, t, k, e);
        } else if (st == PS_OPEN) {
            while (e < j && (ps_get(t, e) & PS_MASK) == PS_OPEN)
                e++;
            collect_prot(o, t, k, e);
        } else if (st == PS_HOT && !(ps_get(t, k) & PS_SHADOW)) {
            publish_hot(o, t, k);
        } else if (st == PS_HOT) {
            /* shares bytes with device work: back under protection once that is over */
            uint64_t x, y;
            page_bytes(m, t, k, &x, &y);
            if (t->mode != CAP_TRACK_SCAN && full_page(t, k) && !pend_cover(m, x, y))
                trk_arm(t, k, k + 1, 0);
            publish_page(o, t, k);
        }
        k = e;
    }
}

static void span_of(const struct cap_mem *m, const struct cap_track *t, uint64_t a, uint64_t b,
                    uint64_t *i, uint64_t *j)
{
    uint64_t lo = m->map_off, hi = m->map_off + m->map_len;
    a = a > lo ? a : lo;
    b = b < hi ? b : hi;
    if (a >= b) {
        *i = *j = 0;
        return;
    }
    uint64_t base = (uint64_t)(page_at(t, 0) - m->map_base); /* offset of the span start */
    *i = (a - base) / PG;
    *j = (b - base + PG - 1) / PG;
}

/* Before a pass that may put pages of t (back) under mprotect: the capture's SIGSEGV handler on
 * top of any the program installed since, so that none takes their faults (once a pass: two
 * sigaction calls, not two per page). */
static void faults_ours(const struct cap_track *t)
{
    if (trk_armed_by_prot(t) || t->cofw)
        cap__signals_reassert_faults();
}

void cap_mem_publish(struct cap_mem *m, uint64_t off, uint64_t len, uint64_t now)
{
    struct cap_track *t = m->tr;
    if (!m->mapped || !t)
        return;
    faults_ours(t);
    uint64_t i, j;
    span_of(m, t, off, len > UINT64_MAX - off ? UINT64_MAX : off + len, &i, &j);
    struct out o;
    out_init(&o, m, now);
    publish_pages(&o, t, i, j);
    out_emit(&o);
}

void cap_publish_all(struct cap_dev *dev, uint64_t now)
{
    uint32_t n = 0;
    struct cap_mem **v = mems_of(dev, 0, &n);
    for (uint32_t k = 0; k < n; k++) {
        struct cap_mem *m = v[k];
        pthread_mutex_lock(&m->mu);
        if (m->mapped && !cap_mem_noncoherent(m)) /* a flush publishes those */
            cap_mem_publish(m, m->map_off, m->map_len, now);
        pthread_mutex_unlock(&m->mu);
        cap_mem_unref(m);
    }
    free(v);
}

/* ========================================================================================== */
/* Device writes                                                                              */
/* ========================================================================================== */

/* Pages [i, j), wholly in a may-write interval of a device that writes memory by DMA, stay
 * protected as they are (a host write there is seen: watched_touched). Armed or HOT before; the
 * HOT ones are armed first. m->mu held. */
static void watch(struct cap_track *t, uint64_t i, uint64_t j)
{
    for (uint64_t k = i; k < j; k++)
        if ((ps_get(t, k) & PS_MASK) != PS_ARMED)
            trk_arm(t, k, k + 1, 0);
    for (uint64_t k = i; k < j; k++) /* ARMED -> DEV: the fault handler opens and unmarks */
        ps_set(t, k, (uint8_t)((ps_get(t, k) & ~(PS_MASK | PS_RECENT)) | PS_DEV | PS_WATCH));
}

/* Watched DEV page k, its device work seen finished: did the host write it meanwhile? (The
 * uffd mark is read and re-armed; a protected page's handler cleared PS_WATCH.) */
static int watched_touched(struct cap_track *t, uint64_t k)
{
    uint8_t s = ps_get(t, k);
    if (!(s & PS_WATCH))
        return 1;
    if (t->uffd && !(s & PS_STALE) && t->mode == CAP_TRACK_UFFD) {
        struct page_region v[1];
        struct pm_scan_arg a = {.size = sizeof a,
                                .flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
                                .start = (uintptr_t)page_at(t, k),
                                .end = (uintptr_t)page_at(t, k + 1),
                                .vec = (uintptr_t)v,
                                .vec_len = 1,
                                .category_mask = PAGE_IS_WRITTEN,
                                .return_mask = PAGE_IS_WRITTEN};
        return ioctl(trk_hm.pagemap, PAGEMAP_SCAN, &a) != 0;
    }
    return 0;
}

/* Device work is about to write [a, b) (allocation offsets) of the mapping. Pages it covers
 * wholly are left to it (DEV: not compared, not protected, for lavapipe's device is the CPU);
 * pages it shares with the host are compared byte by byte from now on (HOT with a shadow).
 * What the host wrote there before is published first, with the interval not yet pending. A
 * copy mapping keeps the pages it covers protected instead (the device writes the driver's
 * pages, not these), copied on the host's first write so that cap_complete can tell whose
 * each byte is. m->mu held. */
static void pages_pend(struct cap_mem *m, struct cap_track *t, uint64_t a, uint64_t b)
{
    uint64_t i, j;
    span_of(m, t, a, b, &i, &j);
    if (i >= j)
        return;
    faults_ours(t);
    struct out o;
    out_init(&o, m, cap_now());
    uint64_t run = UINT64_MAX; /* first page of a run of wholly covered pages */
    for (uint64_t k = i; k <= j; k++) {
        uint64_t x = 0, y = 0;
        uint8_t s = 0;
        int whole = 0;
        if (k < j) {
            page_bytes(m, t, k, &x, &y);
            s = ps_get(t, k);
            whole = x >= a && y <= b && full_page(t, k);
            if (whole && !t->copy)
                whole = (s & PS_MASK) != PS_DEV;
            else if (whole)
                whole = t->cofw && !((s & PS_MASK) == PS_ARMED && (s & PS_STALE));
            if (whole) {
                if (run == UINT64_MAX)
                    run = k;
                continue;
            }
        }
        if (run != UINT64_MAX) {
            publish_pages(&o, t, run, k);
            if (t->copy)
                trk_arm(t, run, k, 1);
            else if (m->o.dev->cpu || t->mode == CAP_TRACK_SCAN)
                trk_disarm(t, run, k, PS_DEV); /* the device writes them with the CPU */
            else
                watch(t, run, k);
            run = UINT64_MAX;
        }
        if (k == j)
            break;
        if (x >= y || (s & PS_MASK) == PS_DEV || (x >= a && y <= b && !t->copy))
            continue; /* still the device's */
        if (x >= a && y <= b && t->copy && (s & PS_STALE))
            continue; /* a copy mapping's page the host has not written since: stays so */
        /* shared with the host from now on */
        if (s & PS_SHADOW) {
            publish_pages(&o, t, k, k + 1);
        } else if (s & PS_STALE) {
            trk_snap(t, k); /* protected and unwritten: the device's last output */
            ps_set(t, k, (uint8_t)((ps_get(t, k) & ~PS_STALE) | PS_SHADOW));
        } else if (snap_clean(t, k)) { /* what the host last published (or never wrote) */
            ps_set(t, k, (uint8_t)((ps_get(t, k) & ~PS_HASHED) | PS_SHADOW));
        } else {
            record_whole(&o, t, k);
        }
        if ((ps_get(t, k) & PS_MASK) != PS_HOT)
            trk_disarm(t, k, k + 1, PS_HOT);
    }
    out_emit(&o);
}

int cap_mem_pend(struct cap_mem *m, uint64_t off, uint64_t len, uint64_t queue, uint64_t serial)
{
    if (!((m->props & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) || m->imported) || !len ||
        off >= m->size)
        return 0;
    if (len > m->size - off)
        len = m->size - off;
    pthread_mutex_lock(&m->mu);
    int covered = 0;
    for (uint32_t i = 0; i < m->n_pend; i++) {
        struct cap_dev_write *p = &m->pend[i];
        if (p->off <= off && p->off + p->len >= off + len)
            covered = 1; /* its pages are the device's already */
        if (p->queue == queue && off <= p->off + p->len && p->off <= off + len) {
            uint64_t end = off + len > p->off + p->len ? off + len : p->off + p->len;
            p->off = off < p->off ? off : p->off;
            p->len = end - p->off;
            p->serial = serial > p->serial ? serial : p->serial;
            p->first = serial < p->first ? serial : p->first;
            covered |= 2;
            break;
        }
    }
    if (!(covered & 1) && m->mapped && m->tr)
        pages_pend(m, m->tr, off, off + len);
    if (!(covered & 2) && push_write(&m->pend, &m->n_pend, &m->cap_pend,
                                     (struct cap_dev_write){off, len, queue, serial, serial}))
        cap_fail("out of memory tracking device writes");
    if (!(covered & 1))
        devb_add(m, off, off + len);
    int mapped = m->mapped;
    pthread_mutex_unlock(&m->mu);
    return mapped;
}

/* ========================================================================================== */
/* Host reads                                                                                 */
/* ========================================================================================== */

void cap_mem_digest(struct cap_mem *m, uint64_t off, uint64_t len, sbt_hasher *h)
{
    if (m->mapped && m->dev_base && off >= m->map_off && off + len <= m->map_off + m->map_len) {
        sbt_hasher_update(h, m->dev_base + off, len);
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

/* Copy mapping: device output [u, v) of page k is in the driver's mapping; into the
 * program's copy now. Where the host wrote since its first write (against the shadow the
 * fault took), its bytes stay: they are host writes, published next time. */
static void copy_done(struct cap_mem *m, struct cap_track *t, uint64_t k, uint64_t u, uint64_t v)
{
    uint8_t *p = m->map_base, *sh0 = sh_at0(m, t);
    const uint8_t *d = m->dev_base;
    uint8_t s = ps_get(t, k);
    if (s & PS_SHADOW) {
        for (uint64_t c = u; c < v; c++) {
            if (p[c] == sh0[c])
                p[c] = d[c]; /* a protected page: our own write opens it (fault_claim) */
            sh0[c] = d[c];
        }
    } else if ((s & PS_STALE) && full_page(t, k)) {
        /* the host did not write it: the device's, and protected again */
        trk_set_busy(t, k, k + 1);
        trk_prot(t, k, k + 1, 1);
        memcpy(p + u, d + u, v - u);
        trk_arm(t, k, k + 1, 1);
    } else {
        memcpy(p + u, d + u, v - u);
    }
}

/* Device output [a, b) of the mapping is final (the host may read it from now on): into the
 * shadow of the pages that keep one; the pages it wholly covered back under protection, as
 * stale (copied on the host's first write) or with a shadow taken now. m->mu held. */
static void pages_done(struct cap_mem *m, struct cap_track *t, uint64_t a, uint64_t b)
{
    uint64_t i, j;
    span_of(m, t, a, b, &i, &j);
    faults_ours(t);
    uint8_t *sh0 = sh_at0(m, t);
    uint64_t run = UINT64_MAX; /* first of a run of DEV pages going stale */
    int watched = !t->copy && !m->o.dev->cpu && t->mode != CAP_TRACK_SCAN, touched = 0;
    for (uint64_t k = i; k <= j; k++) {
        uint64_t x = 0, y = 0;
        uint8_t s = 0;
        int dev = 0, cover = 0;
        if (k < j) {
            page_bytes(m, t, k, &x, &y);
            s = ps_get(t, k);
            dev = (s & PS_MASK) == PS_DEV;
            cover = dev ? pend_cover(m, x, y) : 0;
            if (dev && cover != 2 && watched) {
                /* protected all along: armed, as far as what follows is concerned */
                touched |= watched_touched(t, k);
                s = (uint8_t)((s & ~(PS_MASK | PS_WATCH)) | PS_ARMED);
                ps_set(t, k, s);
            }
            if (dev && cover == 0 && !t->copy && t->cofw && full_page(t, k)) {
                if (run == UINT64_MAX)
                    run = k;
                continue;
            }
        }
        if (run != UINT64_MAX) {
            trk_arm(t, run, k, 1);
            run = UINT64_MAX;
        }
        if (k == j)
            break;
        uint64_t u = x > a ? x : a, v = y < b ? y : b;
        if (u >= v)
            continue;
        if (t->copy) {
            copy_done(m, t, k, u, v);
        } else if (dev) {
            if (cover == 2)
                continue; /* still all the device's */
            trk_snap(t, k);
            ps_set(t, k, (uint8_t)(ps_get(t, k) | PS_SHADOW));
            if (cover == 0 && full_page(t, k) && t->mode != CAP_TRACK_SCAN)
                trk_arm(t, k, k + 1, 0);
            else
                trk_disarm(t, k, k + 1, PS_HOT);
        } else if (s & PS_SHADOW) {
            memcpy(sh0 + u, m->map_base + u, v - u);
        }
    }
    if (touched)
        cap_unmodelled(m->o.dev,
                       "host write into mapped memory while a submission that may write all of "
                       "its page ran (its bytes cannot be told from the device's)",
                       SBT_UNMODELLED_AFFECTS);
}

static int cmp_ivl(const void *a, const void *b)
{
    const struct cap_dev_write *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* The intervals v[0..n) sorted and merged; returns how many are left. */
static uint32_t merge_ivl(struct cap_dev_write *v, uint32_t n)
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
    return k + 1;
}

/* Reads back the intervals v[0..n) of m (sorted and merged here) that lie in the mapping: one
 * HOST_READ each; returns how many were left for later (kept at the front of v). */
static uint32_t read_back(struct cap_mem *m, struct cap_dev_write *v, uint32_t n, uint64_t now)
{
    if (!n)
        return 0;
    n = merge_ivl(v, n);
    struct cap_ev *head = NULL, **tail = &head;
    uint32_t left = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = v[i].off, b = v[i].off + v[i].len;
        if (b > m->size)
            b = m->size;
        if (m->mapped && m->dev_base) {
            uint64_t x = a > m->map_off ? a : m->map_off;
            uint64_t y = b < m->map_off + m->map_len ? b : m->map_off + m->map_len;
            if (x < y) {
                struct img_split c = {NULL, m, &tail, SBT_OP_HOST_READ, now};
                if (m->n_img)
                    cap_img_split(m, x, y, split_read_mem, split_img, &c);
                else
                    split_read_mem(&c, x, y);
                if (m->tr)
                    pages_done(m, m->tr, x, y);
                if (x > a)
                    v[left++] = (struct cap_dev_write){a, x - a, 0, 0, 0};
                if (y < b && left < n)
                    v[left++] = (struct cap_dev_write){y, b - y, 0, 0, 0};
                continue;
            }
        }
        v[left++] = v[i];
    }
    cap_emit(head);
    return left;
}

/* Finished intervals of queue up to serial move from pend to done and are read back. */
static void mem_complete(struct cap_mem *m, uint64_t queue, uint64_t serial, uint64_t now)
{
    __atomic_store_n(&m->completing, 1, __ATOMIC_RELEASE); /* before n_pend can go to 0 */
    uint32_t keep = 0, first_done = m->n_done;
    for (uint32_t k = 0; k < m->n_pend; k++) {
        struct cap_dev_write x = m->pend[k];
        if ((queue == 0 || x.queue == queue) && x.serial <= serial) {
            if (push_write(&m->done, &m->n_done, &m->cap_done, x))
                cap_fail("out of memory tracking device writes");
        } else {
            m->pend[keep++] = x;
        }
    }
    __atomic_store_n(&m->n_pend, keep, __ATOMIC_RELEASE);
    if (cap_mem_noncoherent(m)) {
        /* the mapping holds what it held: read back at the program's invalidate */
        if (m->n_done > 64 && m->n_done - first_done > 0)
            m->n_done = merge_ivl(m->done, m->n_done); /* a program that never invalidates */
    } else if (m->n_done > first_done) {
        /* read back only what is in the mapping; the rest waits for a map */
        uint32_t n_new = m->n_done - first_done;
        uint32_t left = read_back(m, m->done + first_done, n_new, now);
        m->n_done = first_done + left;
    }
    __atomic_store_n(&m->completing, 0, __ATOMIC_RELEASE); /* the read-back is in place */
}

void cap_mem_invalidate(struct cap_mem *m, uint64_t off, uint64_t len, uint64_t now)
{
    if (!m->mapped || !cap_mem_noncoherent(m) || !m->n_done || off >= m->size)
        return;
    uint64_t a = off > m->map_off ? off : m->map_off;
    uint64_t b = len == VK_WHOLE_SIZE || len > m->size - off ? m->size : off + len;
    if (b > m->map_off + m->map_len)
        b = m->map_off + m->map_len;
    if (a >= b)
        return;
    /* the finished device writes in [a, b) out of done (the rest of each stays), read back */
    uint32_t n = m->n_done, n_in = 0, n_rest = 0;
    struct cap_dev_write *in = malloc(n * sizeof *in), *rest = malloc(2 * n * sizeof *rest);
    if (!in || !rest) {
        free(in);
        free(rest);
        cap_fail("out of memory reading back device writes");
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct cap_dev_write x = m->done[i];
        uint64_t xa = x.off, xb = x.off + x.len;
        if (xb <= a || xa >= b) {
            rest[n_rest++] = x;
            continue;
        }
        uint64_t u = xa > a ? xa : a, v = xb < b ? xb : b;
        in[n_in++] = (struct cap_dev_write){u, v - u, x.queue, x.serial, x.first};
        if (xa < u)
            rest[n_rest++] = (struct cap_dev_write){xa, u - xa, x.queue, x.serial, x.first};
        if (v < xb)
            rest[n_rest++] = (struct cap_dev_write){v, xb - v, x.queue, x.serial, x.first};
    }
    free(m->done);
    m->done = rest;
    m->n_done = n_rest;
    m->cap_done = 2 * n;
    uint32_t left = read_back(m, in, n_in, now); /* none: [a, b) lies in the mapping */
    for (uint32_t i = 0; i < left; i++)
        if (push_write(&m->done, &m->n_done, &m->cap_done, in[i]))
            cap_fail("out of memory tracking device writes");
    free(in);
}

void cap_mem_host_owned(struct cap_dev *dev, uint64_t queue, uint64_t from)
{
    uint32_t n = 0;
    struct cap_mem **v = mems_of(dev, 1, &n);
    for (uint32_t k = 0; k < n; k++) {
        struct cap_mem *m = v[k];
        pthread_mutex_lock(&m->mu);
        struct cap_track *t = m->mapped ? m->tr : NULL;
        for (uint32_t i = 0; t && !t->copy && i < m->n_pend; i++) {
            const struct cap_dev_write *p = &m->pend[i];
            if (p->queue != queue || p->first < from)
                continue;
            uint64_t a, b;
            span_of(m, t, p->off, p->off + p->len, &a, &b);
            for (uint64_t g = a; g < b; g++) {
                if ((ps_get(t, g) & PS_MASK) != PS_DEV)
                    continue;
                /* what the host published last (the device has not started): compared
                 * byte by byte at each publish from now on */
                trk_snap(t, g);
                ps_set(t, g, (uint8_t)(ps_get(t, g) | PS_SHADOW));
                trk_disarm(t, g, g + 1, PS_HOT);
            }
        }
        pthread_mutex_unlock(&m->mu);
        cap_mem_unref(m);
    }
    free(v);
}

void cap_complete(struct cap_dev *dev, uint64_t queue, uint64_t serial, uint64_t now)
{
    pthread_mutex_lock(&cap.mu);
    if (cap.n_tpend)
        cap_timing_complete(dev, queue, serial);
    uint64_t pos = 0, key, val;
    while (sbt_map_next(&cap.objs[CAP_T_QUEUE], &pos, &key, &val)) {
        struct cap_queue *q = (struct cap_queue *)(uintptr_t)val;
        if (q && q->o.dev == dev && (queue == 0 || q->o.id == queue)) {
            uint64_t s = serial < q->serial ? serial : q->serial;
            if (s > q->done_serial)
                q->done_serial = s;
        }
    }
    pthread_mutex_unlock(&cap.mu);
    uint32_t n = 0;
    struct cap_mem **v = mems_of(dev, 1, &n);
    for (uint32_t k = 0; k < n; k++) {
        struct cap_mem *m = v[k];
        pthread_mutex_lock(&m->mu);
        mem_complete(m, queue, serial, now);
        pthread_mutex_unlock(&m->mu);
        cap_mem_unref(m);
    }
    free(v);
}

/* ========================================================================================== */
/* Mapping                                                                                    */
/* ========================================================================================== */

/* Can the kernel userfaultfd-protect this range (anonymous or shmem memory)? Registers it. */
static int uffd_register(struct cap_track *t)
{
    if (trk_hm.uffd < 0 || t->lo >= t->hi)
        return 0;
    struct uffdio_register r = {
        .range = {(uintptr_t)page_at(t, t->lo), (t->hi - t->lo) * PG},
        .mode = UFFDIO_REGISTER_MODE_WP,
    };
    if (ioctl(trk_hm.uffd, UFFDIO_REGISTER, &r) != 0)
        return 0;
    t->uffd = 1;
    return 1;
}

/* Tracking ends: every page writable again, out of the fault handler's table and of the
 * uffd. The program's copy of uncached memory is unmapped, unless keep_copy (the layer is going
 * away, the mapping is not: the program keeps writing it). */
static void track_end(struct cap_mem *m, int keep_copy)
{
    struct cap_track *t = m->tr;
    if (!t)
        return;
    m->tr = NULL;
    if (t->uffd) {
        struct uffdio_range r = {(uintptr_t)page_at(t, t->lo), (t->hi - t->lo) * PG};
        ioctl(trk_hm.uffd, UFFDIO_UNREGISTER, &r);
    }
    /* writable first, out of the fault table after: a thread still writing (at exit, or while
     * another destroys the device) must never fault on a page the handler no longer knows */
    if (t->lo < t->hi && (trk_armed_by_prot(t) || t->cofw) && (!t->copy || keep_copy))
        trk_prot(t, t->lo, t->hi, 1);
    trk_tab_remove(t);
    if (t->copy && !keep_copy)
        munmap(t->base, t->copy_len);
    if (t->sh)
        munmap(t->sh, t->n * PG);
    free((void *)t->ps);
    free(t->hash);
    free(t);
}

static void track_free(struct cap_mem *m)
{
    track_end(m, 0);
}

/* Where the program writes: the driver's mapping at ptr (len bytes from allocation offset
 * off), or a copy of it (copy: memory the CPU reads slowly); then the tracking of every page. */
static struct cap_track *track_new(struct cap_mem *m, uint8_t *ptr, uint64_t len, int copy,
                                   int placed)
{
    struct cap_track *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->m = m;
    uintptr_t a = (uintptr_t)ptr, first = a & ~(uintptr_t)(PG - 1);
    uintptr_t end = (a + len + PG - 1) & ~(uintptr_t)(PG - 1);
    t->n = (end - first) / PG;
    t->ps = calloc(t->n ? t->n : 1, 1);
    t->hash = calloc(t->n ? t->n : 1, sizeof *t->hash);
    t->sh = mmap(NULL, t->n * PG, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (t->sh == MAP_FAILED)
        t->sh = NULL;
    if (!t->ps || !t->hash || !t->sh || !t->n) {
        if (t->sh)
            munmap(t->sh, t->n * PG);
        free((void *)t->ps);
        free(t->hash);
        free(t);
        return NULL;
    }
    t->base = (uint8_t *)first;
    if (copy && !placed) {
        /* the program's copy: same offset within its first page as the driver's pointer */
        t->copy_len = t->n * PG;
        void *c =
            mmap(NULL, t->copy_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (c != MAP_FAILED) {
            t->copy = 1;
            t->base = c;
            memcpy(t->base + (a - first), ptr, len); /* what the mapping holds now */
            atomic_fetch_add(&trk_hm.n_copy, 1);
        }
    }
    uint8_t *pa = t->base + (a - first);
    t->first = pa;
    t->len = len;
    t->lo = (uintptr_t)pa == (uintptr_t)t->base ? 0 : 1;
    t->hi = (uintptr_t)(pa + len) == (uintptr_t)t->base + t->n * PG ? t->n : t->n - 1;
    if (t->hi < t->lo)
        t->hi = t->lo;
    /* faults are ours to take only while our SIGSEGV handler is installed (it asks the claim
     * first, and chains to the program's for the rest) */
    int claim = trk_hm.claim && cap__signals_installed();
    t->mode = trk_hm.mode;
    if (t->mode == CAP_TRACK_UFFD && !uffd_register(t))
        t->mode = claim ? CAP_TRACK_PROTECT : CAP_TRACK_SCAN;
    if (t->mode == CAP_TRACK_PROTECT && !claim)
        t->mode = CAP_TRACK_SCAN;
    t->cofw = claim && t->mode != CAP_TRACK_SCAN;
    if ((t->mode == CAP_TRACK_PROTECT || t->cofw) && trk_tab_add(t) != 0) {
        t->cofw = 0;
        if (t->mode == CAP_TRACK_PROTECT)
            t->mode = CAP_TRACK_SCAN;
    }
    if (t->mode == CAP_TRACK_PROTECT || t->cofw) /* its faults must reach our handler first */
        cap__signals_reassert_now();
    if (t->lo < t->hi && t->mode == CAP_TRACK_PROTECT && trk_prot(t, t->lo, t->hi, 0) != 0) {
        /* a mapping mprotect refuses: compared instead */
        t->mode = CAP_TRACK_SCAN;
        t->cofw = 0;
        trk_tab_remove(t);
    }
    atomic_fetch_add(&trk_hm.n_map[t->mode], 1);
    return t;
}

/* The pages of a fresh mapping: the partial ones at its ends compared from a shadow; the rest
 * protected, those holding device output the layer has not seen in the shadow so that the
 * first host write copies them first (or copied now); device work in flight applied. */
static void track_start(struct cap_mem *m, struct cap_track *t)
{
    for (uint64_t k = 0; k < t->n; k++) {
        uint64_t x, y;
        page_bytes(m, t, k, &x, &y);
        int full = k >= t->lo && k < t->hi;
        int devout = devb_hits(m, x, y);
        if (!full || t->mode == CAP_TRACK_SCAN) {
            uint8_t s = PS_HOT;
            if (!full || devout) {
                trk_snap(t, k);
                s |= PS_SHADOW;
            } else { /* scan: what is there now is the baseline, not a host write */
                t->hash[k] = sbt_hash_bytes(m->map_base + x, y - x);
                s |= PS_HASHED;
            }
            ps_set(t, k, s);
            continue;
        }
        if (devout && !t->cofw) {
            trk_snap(t, k);
            ps_set(t, k, PS_BUSY | PS_SHADOW);
        } else {
            ps_set(t, k, PS_BUSY | (devout ? PS_STALE : 0));
        }
    }
    if (t->mode != CAP_TRACK_SCAN && t->lo < t->hi) {
        if (t->uffd)
            trk_uffd_wp(t, t->lo, t->hi, 1);
        /* protect mode: every full page read-only; uffd: only the stale ones */
        uint64_t k = t->lo;
        while (k < t->hi) {
            uint64_t e = k + 1;
            int stale = (ps_get(t, k) & PS_STALE) != 0;
            while (e < t->hi && ((ps_get(t, e) & PS_STALE) != 0) == stale)
                e++;
            if (trk_armed_by_prot(t) || stale)
                trk_prot(t, k, e, 0);
            k = e;
        }
        for (k = t->lo; k < t->hi; k++)
            ps_set(t, k, (uint8_t)((ps_get(t, k) & ~PS_MASK) | PS_ARMED));
    }
    for (uint32_t i = 0; i < m->n_pend; i++)
        pages_pend(m, t, m->pend[i].off, m->pend[i].off + m->pend[i].len);
}

static int all_zero(const uint8_t *p, uint64_t n)
{
    return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

/* The non-zero bytes [a, b) of a mapping holds that no device work wrote, into o: what the
 * memory held when the layer first saw it there (a driver may recycle memory a freed allocation
 * wrote). The trace's memory starts zeroed, so from then on these bytes are in the trace what
 * they are in the mapping, and the shadows and hashes taken of them since compare right. */
static void out_initial(struct out *o, uint64_t a, uint64_t b)
{
    enum { BLK = 256 };
    const uint8_t *p = o->m->map_base;
    uint32_t i = 0;
    while (a < b) {
        const struct sbt_iset *d = &o->m->devb;
        while (i < d->n && d->v[i].e <= a)
            i++;
        uint64_t e = b; /* the next device output, or b */
        if (i < d->n && d->v[i].b < e) {
            if (d->v[i].b <= a) {
                a = d->v[i].e;
                continue;
            }
            e = d->v[i].b;
        }
        for (uint64_t x = a, y; x < e; x = y) {
            y = (x / BLK + 1) * BLK < e ? (x / BLK + 1) * BLK : e;
            if (!all_zero(p + x, y - x))
                out_add(o, x, y);
        }
        a = e;
    }
}

/* Records what [a, b) held when first mapped, but for the bytes recorded so before: m->seen_a
 * to seen_b, one interval (of two that do not touch, the longer). m->mu held. */
static void map_initial(struct cap_mem *m, uint64_t a, uint64_t b, uint64_t now)
{
    struct out o;
    out_init(&o, m, now);
    uint64_t sa = m->seen_a, sb = m->seen_b;
    if (sa < sb && a <= sb && sa <= b) { /* touching what was seen: the rest of it */
        if (a < sa)
            out_initial(&o, a, sa);
        if (b > sb)
            out_initial(&o, sb, b);
        m->seen_a = a < sa ? a : sa;
        m->seen_b = b > sb ? b : sb;
    } else {
        out_initial(&o, a, b);
        if (b - a > sb - sa) {
            m->seen_a = a;
            m->seen_b = b;
        }
    }
    out_emit(&o);
}

void cap_mem_map(struct cap_mem *m, uint64_t off, uint64_t len, void **pp, int placed, uint64_t now)
{
    if (m->mapped || off > m->size || !pp || !*pp)
        return;
    if (len == VK_WHOLE_SIZE || len > m->size - off)
        len = m->size - off;
    m->mapped = 1;
    m->map_off = off;
    m->map_len = len;
    m->map_base = m->dev_base = (uint8_t *)*pp - off;
    int nc = cap_mem_noncoherent(m); /* always a copy ("Non-coherent memory") */
    int copy = !placed && !m->imported &&
               (trk_hm.copy_all || nc || !(m->props & VK_MEMORY_PROPERTY_HOST_CACHED_BIT));
    struct cap_track *t = len ? track_new(m, *pp, len, copy, placed) : NULL;
    if (len && !t) {
        cap_fail("out of memory tracking a %llu-byte mapping", (unsigned long long)len);
        return;
    }
    if (nc && t && !t->copy)
        /* the program's view is the driver's: what a driver stores there at an invalidate
         * would look like host writes, and the view is stale between a wait and it */
        cap_unmodelled(m->o.dev,
                       m->imported ? "non-coherent memory imported from host pages"
                       : placed    ? "placed mapping of non-coherent memory"
                                   : "mapping of non-coherent memory (no copy)",
                       SBT_UNMODELLED_AFFECTS);
    if (t && t->copy) {
        m->map_base = t->base + ((uintptr_t)*pp & (PG - 1)) - off;
        *pp = m->map_base + off;
    }
    /* device writes that finished while it was unmapped: read back now (the program's copy
     * already holds them); the pages they touched get shadows below. Non-coherent memory: at
     * the program's invalidate (a mapping makes nothing visible) */
    if (!nc)
        m->n_done = read_back(m, m->done, m->n_done, now);
    m->tr = t;
    if (t) {
        track_start(m, t);
        if (!m->imported) /* an import records all of it */
            map_initial(m, off, off + len, now);
    }
}

void cap_mem_import(struct cap_mem *m, void *ptr, uint64_t now)
{
    void *p = ptr;
    cap_mem_map(m, 0, m->size, &p, 1, now);
    struct cap_track *t = m->tr;
    if (!t)
        return;
    /* its contents now are the program's input: recorded once, whole */
    struct out o;
    out_init(&o, m, now);
    for (uint64_t k = 0; k < t->n; k++) {
        uint64_t x, y;
        page_bytes(m, t, k, &x, &y);
        if (x >= y)
            continue;
        if (ps_get(t, k) & PS_SHADOW)
            out_add_shadow(&o, t, x, y);
        else
            out_add(&o, x, y);
    }
    out_emit(&o);
}

/* The last publish of m's mapping (unmap, free, shutdown). Non-coherent memory: what the host
 * wrote there and never flushed, which no flush published, did not reach the device in the
 * trace (the program relies on memory being coherent that is not): recorded now, for what the
 * program saw, and the trace is incomplete, naming it. m->mu held. */
static void publish_end(struct cap_mem *m, uint64_t now)
{
    struct cap_track *t = m->tr;
    if (!m->mapped || !t)
        return;
    faults_ours(t);
    struct out o;
    out_init(&o, m, now);
    o.last = 1;
    uint64_t i, j;
    span_of(m, t, m->map_off, m->map_off + m->map_len, &i, &j);
    publish_pages(&o, t, i, j);
    if (cap_mem_noncoherent(m) && (o.head || o.rb > o.ra))
        cap_unmodelled(m->o.dev, "host writes to non-coherent memory never flushed",
                       SBT_UNMODELLED_AFFECTS);
    out_emit(&o);
}

void cap_mem_unmap(struct cap_mem *m, uint64_t now)
{
    if (!m->mapped)
        return;
    publish_end(m, now);
    track_free(m);
    m->mapped = 0;
    m->map_base = m->dev_base = NULL;
}

int cap_mem_read_args(struct cap_mem *m, uint64_t off, void *out, size_t len)
{
    if (!m->mapped || !m->map_base || off < m->map_off || off + len > m->map_off + m->map_len ||
        off + len > m->size || pend_cover(m, off, off + len))
        return 0;
    memcpy(out, m->map_base + off, len);
    return 1;
}

/* ========================================================================================== */
/* Shutdown                                                                                   */
/* ========================================================================================== */

void cap_mapped_shutdown(void)
{
    /* the last host writes, and every page writable again before the layer stops handling
     * their faults; the program's copies of uncached memory stay (it still holds pointers into
     * them) */
    pthread_mutex_lock(&cap.mu);
    for (uint32_t i = 0; i < cap.n_mems; i++) {
        struct cap_mem *m = cap.mems[i];
        pthread_mutex_lock(&m->mu);
        if (cap_mem_noncoherent(m))
            publish_end(m, cap_now());
        else if (m->mapped && m->tr)
            cap_mem_publish(m, m->map_off, m->map_len, cap_now());
        track_end(m, 1);
        pthread_mutex_unlock(&m->mu);
    }
    pthread_mutex_unlock(&cap.mu);
}

void cap_mapped_device_gone(struct cap_dev *dev)
{
    uint32_t n = 0;
    struct cap_mem **v = mems_of(dev, 0, &n);
    for (uint32_t k = 0; k < n; k++) {
        struct cap_mem *m = v[k];
        pthread_mutex_lock(&m->mu);
        cap_mem_unmap(m, cap_now());
        pthread_mutex_unlock(&m->mu);
        cap_mem_unref(m);
    }
    free(v);
}
