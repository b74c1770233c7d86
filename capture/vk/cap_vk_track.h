/*
 * capture/vk/cap_vk_track.h — how the capture layer finds the pages the host wrote in a mapping
 * (capture/vk/cap_vk_track.c), for capture/vk/cap_vk_mapped.c, which decides what to read and
 * records it: the page states of a tracked mapping, the tracking set-up, the protection primitives,
 * and the kernel ABI of userfaultfd write-protection and PAGEMAP_SCAN for older headers. Internal
 * to the capture layer.
 */
#ifndef CAP_VK_TRACK_H
#define CAP_VK_TRACK_H

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#include "capture/common/cap_int.h"
#include "capture/vk/cap_vk_int.h"

/* Linux 6.7's userfaultfd asynchronous write-protection and PAGEMAP_SCAN, for headers older
 * than the kernel we run on (Debian 12's are 6.1); the values are the kernel ABI. */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef PAGEMAP_SCAN
struct page_region {
    __u64 start, end, categories;
};
struct pm_scan_arg {
    __u64 size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted,
        category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN          _IOWR('f', 16, struct pm_scan_arg)
#define PM_SCAN_WP_MATCHING   (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#define PAGE_IS_WPALLOWED     (1 << 0)
#define PAGE_IS_WRITTEN       (1 << 1)
#endif

#define PG CAP_PAGE

/* Page states (struct cap_track.ps, one byte per page of a mapping's span). The low bits say
 * how a host write to the page is found; the flags what the layer knows of its bytes. */
#define PS_MASK  0x07
#define PS_ARMED 0 /* write-protected: the first write marks it (uffd) or faults (protect) */
#define PS_OPEN  1 /* protect: written since the last publish, writable until the next */
#define PS_HOT                                                                  \
    2 /* not protected, compared at every publish: shares bytes with unfinished \
       * device work, or is a partial page at an end of the mapping, or scan */
#define PS_DEV                                                                          \
    3             /* every byte of it may be written by unfinished device work: neither \
                   * protected (lavapipe's device is the CPU) nor compared */
#define PS_BUSY 4 /* a thread is changing its protection: the fault handler waits */
#define PS_RECENT                                                                                 \
    0x08               /* recorded at the last publish that looked at it: a page written at two   \
                        * publishes in a row (a buffer rewritten every round) is left unprotected \
                        * (HOT) and compared by the hash of its bytes instead of faulting */
#define PS_SHADOW 0x10 /* sh holds its known bytes: compared byte by byte */
#define PS_STALE                                                                               \
    0x20               /* holds device output sh lacks: mprotect'ed in every mode, so that the \
                        * first host write copies the page into sh first */
#define PS_HASHED 0x40 /* hash[] holds the hash of its bytes as last recorded or opened ahead */
#define PS_WATCH                                                                  \
    0x80 /* DEV on a device that writes memory by DMA: still protected, so that a \
          * host write while the device may write it is seen (the handler clears  \
          * this; uffd marks it) and the trace said incomplete */

struct cap_track {
    struct cap_mem *m;
    int mode;        /* enum cap_track_mode */
    int copy;        /* the program writes a copy (uncached memory): map_base != dev_base */
    int cofw;        /* device output is kept by copy on first write (PS_STALE) */
    int uffd;        /* the span's full pages are registered with hm.uffd */
    int in_tab;      /* in the fault handler's table */
    uint8_t *base;   /* the program's address of the span's first page */
    uint8_t *first;  /* ... and of the mapping's first byte */
    uint64_t len;    /* bytes mapped */
    uint64_t n;      /* pages in the span (the mapping, rounded out to pages) */
    uint64_t lo, hi; /* pages [lo, hi) lie wholly in the mapping: only they are protected */
    _Atomic uint8_t *ps;
    sbt_hash *hash;  /* per page, valid with PS_HASHED */
    uint8_t *sh;     /* the shadow: n pages, reserved (MAP_NORESERVE), touched per page */
    size_t copy_len; /* copy mappings: bytes of the program's copy at base (munmap) */
};

struct cap_tracking {
    int mode;      /* what a new mapping gets first (uffd falls back per mapping) */
    int copy_all;  /* REPRISE_HOST_COPY=1: every mapping a copy (tests) */
    int uffd;      /* userfaultfd with asynchronous write-protection, -1 without */
    int pagemap;   /* /proc/self/pagemap (PAGEMAP_SCAN), -1 without */
    int claim;     /* our fault claim is registered */
    char why[200]; /* why the default is not uffd */
    atomic_uint_fast64_t n_map[4], n_copy, n_cofw_faults, n_faults;
};
extern struct cap_tracking trk_hm;

static inline uint8_t ps_get(const struct cap_track *t, uint64_t i)
{
    return atomic_load_explicit(&t->ps[i], memory_order_acquire);
}

static inline void ps_set(struct cap_track *t, uint64_t i, uint8_t s)
{
    atomic_store_explicit(&t->ps[i], s, memory_order_release);
}

static inline uint8_t *page_at(const struct cap_track *t, uint64_t i)
{
    return t->base + i * PG;
}

/* uffd write-protection of pages [i, j) on (wp) or off. */
int trk_uffd_wp(struct cap_track *t, uint64_t i, uint64_t j, int wp);

/* Pages [i, j) writable (rw) or read-only as far as mprotect goes. */
int trk_prot(struct cap_track *t, uint64_t i, uint64_t j, int rw);

/* Does t protect its armed pages with mprotect (rather than uffd)? */
int trk_armed_by_prot(const struct cap_track *t);

/* Pages [i, j) PS_BUSY (flags kept) while their protection changes: the fault handler waits. */
void trk_set_busy(struct cap_track *t, uint64_t i, uint64_t j);

/* Arms pages [i, j) (not armed now: HOT, DEV or OPEN), flags kept: a write from now on is
 * found. stale (only with t->cofw): they hold device output the shadow lacks; mprotect keeps
 * them read-only (uffd or not) until the first host write copies them into the shadow. m->mu
 * held. */
void trk_arm(struct cap_track *t, uint64_t i, uint64_t j, int stale);

/* Is page k write-protected by uffd (armed, not stale, in a uffd mapping)? */
int trk_by_uffd(const struct cap_track *t, uint8_t s);

/* Takes pages [i, j) out of protection into state to (PS_HOT or PS_DEV), flags kept but
 * PS_STALE. What the host wrote there must have been published (or is found against a
 * shadow). One system call per run of pages protected the same way. m->mu held. */
void trk_disarm(struct cap_track *t, uint64_t i, uint64_t j, uint8_t to);

/* Copies page i of the program's view into the shadow (m->mu held, or the fault handler with
 * the page busy): the bytes of the mapping only (a partial page at an end of it shares the rest
 * with memory that is none of ours). */
void trk_snap(struct cap_track *t, uint64_t i);

/* Puts t's protected pages into the fault handler's table (0), or fails (-1: no memory). */
int trk_tab_add(struct cap_track *t);

/* Takes t out of that table; when this returns, no handler is looking at t. */
void trk_tab_remove(struct cap_track *t);

#endif
