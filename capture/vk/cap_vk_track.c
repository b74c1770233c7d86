/*
 * capture/vk/cap_vk_track.c — which pages of a mapping the host wrote since they were last looked
 * at, for capture/vk/cap_vk_mapped.c (which reads them, compares them against its shadows and
 * records HOST_WRITE ops): page states, the fault handler and its table, protection, and the
 * choice of a way at capture time.
 *
 * The cost follows what the host wrote, not what is mapped. Each mapping's pages are
 * write-protected and the first write to a page after a publish marks it; a publish reads only
 * marked pages (and the few pages shared with unfinished device work, and the partial pages at
 * either end of a mapping that does not start or end on a page boundary). Three ways, chosen at
 * capture time (REPRISE_HOST_WRITES, capture/cap.h) and per mapping, and recorded in the
 * trace's metadata (capture.host_writes):
 *   uffd     userfaultfd asynchronous write-protection (Linux 6.7: UFFD_FEATURE_WP_ASYNC, and
 *            PAGEMAP_SCAN to read and re-arm the marks in one call): the kernel marks a page on
 *            its first write without stopping the program, system calls that write into the
 *            mapping (read(2)) work as before, and no signal is involved. Anonymous and shmem
 *            memory only (lavapipe's, the program's own pages imported as device memory).
 *   protect  mprotect(PROT_READ) and the first write fault per page, taken by the claim hook of
 *            capture/common/cap_signals.c (our SIGSEGV handler asks this file first, and chains to
 * the program's own handler for every fault that is not ours). A run of writes opens the pages
 * after it as well (fault-ahead), whose bytes are hashed so that those left unwritten are not
 * recorded. Any mapping a driver hands out. A system call that writes into a protected page fails
 * with EFAULT instead of faulting: this is why uffd comes first where it works. scan     every page
 * hashed at every publish (the fallback: no tracking, or the program's own SIGSEGV handling could
 * not be put under ours).
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

struct cap_tracking trk_hm = {.uffd = -1, .pagemap = -1};

static const char *mode_name(int mode)
{
    switch (mode) {
    case CAP_TRACK_UFFD:
        return "uffd";
    case CAP_TRACK_PROTECT:
        return "protect";
    case CAP_TRACK_SCAN:
        return "scan";
    }
    return "none";
}

/* ========================================================================================== */
/* The fault handler's table                                                                  */
/* ========================================================================================== */

/* Sorted by address; replaced whole under tab_mu and published with an atomic pointer. A
 * handler counts itself in tab_readers while it looks: a replaced table is freed when none is
 * looking (handlers are short and never wait for the table's writer). */
struct tab {
    uint32_t n;
    struct tab_ent {
        uintptr_t lo, hi; /* protected span pages [lo, hi) */
        struct cap_track *t;
    } e[];
};
static _Atomic(struct tab *) tab;
static atomic_int tab_readers;
static pthread_mutex_t tab_mu = PTHREAD_MUTEX_INITIALIZER;

static void tab_publish(struct tab *nt)
{
    struct tab *old = atomic_exchange(&tab, nt);
    while (atomic_load(&tab_readers))
        sched_yield();
    free(old);
}

int trk_tab_add(struct cap_track *t)
{
    pthread_mutex_lock(&tab_mu);
    struct tab *ot = atomic_load(&tab);
    uint32_t n = ot ? ot->n : 0;
    struct tab *nt = malloc(sizeof *nt + (n + 1) * sizeof nt->e[0]);
    if (!nt) {
        pthread_mutex_unlock(&tab_mu);
        return -1;
    }
    /* the pages we protect: a fault on a partial page at an end of the mapping is not ours */
    uintptr_t lo = (uintptr_t)(t->base + t->lo * PG), hi = (uintptr_t)(t->base + t->hi * PG);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (ot->e[i].lo > lo && k == i)
            nt->e[k++] = (struct tab_ent){lo, hi, t};
        nt->e[k++] = ot->e[i];
    }
    if (k == n)
        nt->e[k++] = (struct tab_ent){lo, hi, t};
    nt->n = k;
    tab_publish(nt);
    t->in_tab = 1;
    pthread_mutex_unlock(&tab_mu);
    return 0;
}

void trk_tab_remove(struct cap_track *t)
{
    if (!t->in_tab)
        return;
    pthread_mutex_lock(&tab_mu);
    struct tab *ot = atomic_load(&tab);
    struct tab *nt = malloc(sizeof *nt + (ot ? ot->n : 0) * sizeof nt->e[0] + 1);
    if (nt) {
        nt->n = 0;
        for (uint32_t i = 0; ot && i < ot->n; i++)
            if (ot->e[i].t != t)
                nt->e[nt->n++] = ot->e[i];
        tab_publish(nt);
    } else {
        /* cannot shrink: blank the entry in place (the handler then finds nothing there) */
        for (uint32_t i = 0; ot && i < ot->n; i++)
            if (ot->e[i].t == t)
                ot->e[i].lo = ot->e[i].hi = 0;
        while (atomic_load(&tab_readers))
            sched_yield();
    }
    t->in_tab = 0;
    pthread_mutex_unlock(&tab_mu);
}

/* ========================================================================================== */
/* Protection                                                                                 */
/* ========================================================================================== */

/* uffd write-protection of pages [i, j) on (wp) or off. */
int trk_uffd_wp(struct cap_track *t, uint64_t i, uint64_t j, int wp)
{
    if (!t->uffd || i >= j)
        return 0;
    struct uffdio_writeprotect w = {
        .range = {(uintptr_t)page_at(t, i), (j - i) * PG},
        .mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
    };
    return ioctl(trk_hm.uffd, UFFDIO_WRITEPROTECT, &w);
}

/* Pages [i, j) writable (rw) or read-only as far as mprotect goes. */
int trk_prot(struct cap_track *t, uint64_t i, uint64_t j, int rw)
{
    if (i >= j)
        return 0;
    return mprotect(page_at(t, i), (j - i) * PG, rw ? PROT_READ | PROT_WRITE : PROT_READ);
}

/* Does t protect its armed pages with mprotect (rather than uffd)? */
int trk_armed_by_prot(const struct cap_track *t)
{
    return t->mode == CAP_TRACK_PROTECT;
}

void trk_set_busy(struct cap_track *t, uint64_t i, uint64_t j)
{
    for (uint64_t k = i; k < j; k++)
        ps_set(t, k, (uint8_t)((ps_get(t, k) & ~PS_MASK) | PS_BUSY));
}

/* Arms pages [i, j) (not armed now: HOT, DEV or OPEN), flags kept: a write from now on is
 * found. stale (only with t->cofw): they hold device output the shadow lacks; mprotect keeps
 * them read-only (uffd or not) until the first host write copies them into the shadow. m->mu
 * held. */
void trk_arm(struct cap_track *t, uint64_t i, uint64_t j, int stale)
{
    if (i >= j)
        return;
    trk_set_busy(t, i, j);
    if (!stale)
        trk_uffd_wp(t, i, j, 1);
    if (trk_armed_by_prot(t) || stale)
        trk_prot(t, i, j, 0);
    for (uint64_t k = i; k < j; k++) {
        uint8_t s = ps_get(t, k) & ~(PS_MASK | PS_STALE);
        if (stale)
            s = (uint8_t)((s & ~PS_SHADOW) | PS_STALE);
        ps_set(t, k, (uint8_t)(PS_ARMED | s));
    }
}

/* Is page k write-protected by uffd (armed, not stale, in a uffd mapping)? */
int trk_by_uffd(const struct cap_track *t, uint8_t s)
{
    return t->uffd && (s & PS_MASK) == PS_ARMED && !(s & PS_STALE);
}

/* Does mprotect keep page k read-only? */
static int by_prot(const struct cap_track *t, uint8_t s)
{
    return (s & PS_STALE) || (trk_armed_by_prot(t) && (s & PS_MASK) == PS_ARMED);
}

/* Takes pages [i, j) out of protection into state to (PS_HOT or PS_DEV), flags kept but
 * PS_STALE. What the host wrote there must have been published (or is found against a
 * shadow). One system call per run of pages protected the same way. m->mu held. */
void trk_disarm(struct cap_track *t, uint64_t i, uint64_t j, uint8_t to)
{
    if (i >= j)
        return;
    uint8_t st[64];
    for (uint64_t k0 = i; k0 < j; k0 += 64) {
        uint64_t k1 = k0 + 64 < j ? k0 + 64 : j;
        for (uint64_t k = k0; k < k1; k++)
            st[k - k0] = ps_get(t, k);
        trk_set_busy(t, k0, k1);
        for (uint64_t k = k0; k < k1;) { /* runs of pages uffd protects */
            uint64_t e = k;
            while (e < k1 && trk_by_uffd(t, st[e - k0]))
                e++;
            trk_uffd_wp(t, k, e, 0);
            k = e == k ? k + 1 : e;
        }
        for (uint64_t k = k0; k < k1;) { /* and those mprotect does */
            uint64_t e = k;
            while (e < k1 && by_prot(t, st[e - k0]))
                e++;
            trk_prot(t, k, e, 1);
            k = e == k ? k + 1 : e;
        }
        for (uint64_t k = k0; k < k1; k++)
            ps_set(t, k, (uint8_t)(to | (st[k - k0] & ~(PS_MASK | PS_STALE))));
    }
}

/* Copies page i of the program's view into the shadow (m->mu held, or the fault handler with
 * the page busy): the bytes of the mapping only (a partial page at an end of it shares the rest
 * with memory that is none of ours). */
void trk_snap(struct cap_track *t, uint64_t i)
{
    uint8_t *p = page_at(t, i), *lo = t->first, *hi = t->first + t->len;
    uint8_t *a = p > lo ? p : lo, *b = p + PG < hi ? p + PG : hi;
    if (a < b)
        memcpy(t->sh + i * PG + (a - p), a, (size_t)(b - a));
}

/* The claim hook (capture/common/cap_signals.c): a write fault on a page we protected. Signal
 * context: atomics, memcpy, mprotect and sched_yield only. */
static int fault_claim(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (sig != SIGSEGV || !si || si->si_code != SEGV_ACCERR)
        return 0;
    uintptr_t a = (uintptr_t)si->si_addr;
    atomic_fetch_add(&tab_readers, 1);
    struct tab *tb = atomic_load(&tab);
    struct cap_track *t = NULL;
    if (tb) {
        uint32_t lo = 0, hi = tb->n;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (a < tb->e[mid].lo)
                hi = mid;
            else if (a >= tb->e[mid].hi)
                lo = mid + 1;
            else {
                t = tb->e[mid].t;
                break;
            }
        }
    }
    int ours = 0;
    if (t) {
        uint64_t i = (a - (uintptr_t)t->base) / PG;
        for (;;) {
            uint8_t s = ps_get(t, i);
            uint8_t st = s & PS_MASK;
            if (st == PS_BUSY) {
                sched_yield();
                continue;
            }
            if (st == PS_DEV && (s & PS_WATCH)) {
                /* the host writes a page device work in flight may write: let it, and say so
                 * when the work is seen finished */
                if (!atomic_compare_exchange_weak(&t->ps[i], &s, (uint8_t)(s & ~PS_WATCH)))
                    continue;
                trk_prot(t, i, i + 1, 1);
                ours = 1;
                break;
            }
            if (st != PS_ARMED) {
                /* writable as far as we know: another thread opened it between this thread's
                 * fault and now */
                trk_prot(t, i, i + 1, 1);
                ours = 1;
                break;
            }
            if (!atomic_compare_exchange_weak(&t->ps[i], &s, (uint8_t)((s & ~PS_MASK) | PS_BUSY)))
                continue;
            atomic_fetch_add(&trk_hm.n_faults, 1);
            uint64_t j = i + 1;
            if (s & PS_STALE) {
                /* device output: into the shadow before the host changes it */
                trk_snap(t, i);
                s = (uint8_t)((s & ~PS_STALE) | PS_SHADOW);
                atomic_fetch_add(&trk_hm.n_cofw_faults, 1);
            } else if (trk_armed_by_prot(t) && i > t->lo &&
                       (ps_get(t, i - 1) & PS_MASK) == PS_OPEN) {
                /* a run of writes: open as many pages ahead as it has behind it (at most 64),
                 * hashing them so that those it does not reach are not recorded */
                uint64_t back = 1;
                while (back < 64 && i - back > t->lo &&
                       (ps_get(t, i - back - 1) & PS_MASK) == PS_OPEN)
                    back++;
                while (j < t->hi && j - i <= back) {
                    uint8_t n = ps_get(t, j);
                    if ((n & (PS_MASK | PS_STALE | PS_SHADOW)) != PS_ARMED ||
                        !atomic_compare_exchange_strong(&t->ps[j], &n,
                                                        (uint8_t)((n & ~PS_MASK) | PS_BUSY)))
                        break;
                    t->hash[j] = sbt_hash_bytes(page_at(t, j), PG);
                    ps_set(t, j, (uint8_t)((n & ~PS_MASK) | PS_BUSY | PS_HASHED));
                    j++;
                }
            }
            trk_prot(t, i, j, 1);
            /* protect: open until the next publish. uffd: a stale page is not uffd-armed, so
             * it is compared against the shadow just taken until it settles */
            uint8_t to = trk_armed_by_prot(t) ? PS_OPEN : PS_HOT;
            ps_set(t, i, (uint8_t)((s & ~PS_MASK) | to));
            for (uint64_t k = i + 1; k < j; k++)
                ps_set(t, k, (uint8_t)((ps_get(t, k) & ~PS_MASK) | to));
            ours = 1;
            break;
        }
    }
    atomic_fetch_sub(&tab_readers, 1);
    return ours;
}

/* ========================================================================================== */
/* Setup                                                                                      */
/* ========================================================================================== */

static int uffd_open(char *why, size_t len)
{
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0) {
        snprintf(why, len, "userfaultfd: %s", strerror(errno));
        return -1;
    }
    struct uffdio_api api = {.api = UFFD_API};
    if (ioctl(fd, UFFDIO_API, &api) != 0) {
        snprintf(why, len, "UFFDIO_API: %s", strerror(errno));
        close(fd);
        return -1;
    }
    uint64_t need = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED;
    if ((api.features & need) != need) {
        snprintf(why, len, "userfaultfd lacks asynchronous write-protection (Linux 6.7)");
        close(fd);
        return -1;
    }
    close(fd); /* the features are negotiated once per descriptor: a fresh one asks for them */
    fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    api = (struct uffdio_api){.api = UFFD_API,
                              .features = need | (api.features & UFFD_FEATURE_WP_HUGETLBFS_SHMEM)};
    if (fd < 0 || ioctl(fd, UFFDIO_API, &api) != 0) {
        snprintf(why, len, "UFFDIO_API with write-protection: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* PAGEMAP_SCAN answers (Linux 6.7): an empty range is scanned without error. */
static int pagemap_open(char *why, size_t len)
{
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, len, "/proc/self/pagemap: %s", strerror(errno));
        return -1;
    }
    static char probe[2 * PG] __attribute__((aligned(PG)));
    struct page_region v[1];
    struct pm_scan_arg a = {.size = sizeof a,
                            .start = (uintptr_t)probe,
                            .end = (uintptr_t)probe,
                            .vec = (uintptr_t)v,
                            .vec_len = 1,
                            .category_mask = PAGE_IS_WRITTEN,
                            .return_mask = PAGE_IS_WRITTEN};
    if (ioctl(fd, PAGEMAP_SCAN, &a) < 0) {
        snprintf(why, len, "PAGEMAP_SCAN: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

void cap_mapped_init(void)
{
    const char *e = getenv(CAP_ENV_HOST_WRITES);
    int want = 0; /* auto */
    if (e && *e && strcmp(e, "auto")) {
        want = !strcmp(e, "uffd")      ? CAP_TRACK_UFFD
               : !strcmp(e, "protect") ? CAP_TRACK_PROTECT
               : !strcmp(e, "scan")    ? CAP_TRACK_SCAN
                                       : -1;
        if (want < 0) {
            fprintf(stderr, "reprise capture: %s=%s: not auto, uffd, protect or scan; using auto\n",
                    CAP_ENV_HOST_WRITES, e);
            want = 0;
        }
    }
    trk_hm.copy_all = cap__env_flag(CAP_ENV_HOST_COPY);
    trk_hm.claim = cap_fault_claim_add(fault_claim) == 0;
    long psz = sysconf(_SC_PAGESIZE);
    if (psz != PG) {
        snprintf(trk_hm.why, sizeof trk_hm.why, "page size %ld, not %u", psz, PG);
        trk_hm.mode = CAP_TRACK_SCAN;
        return;
    }
    if (want == CAP_TRACK_SCAN) {
        snprintf(trk_hm.why, sizeof trk_hm.why, "%s=scan", CAP_ENV_HOST_WRITES);
        trk_hm.mode = CAP_TRACK_SCAN;
        return;
    }
    if (want != CAP_TRACK_PROTECT) {
        trk_hm.uffd = uffd_open(trk_hm.why, sizeof trk_hm.why);
        if (trk_hm.uffd >= 0) {
            trk_hm.pagemap = pagemap_open(trk_hm.why, sizeof trk_hm.why);
            if (trk_hm.pagemap < 0) {
                close(trk_hm.uffd);
                trk_hm.uffd = -1;
            }
        }
    } else {
        snprintf(trk_hm.why, sizeof trk_hm.why, "%s=protect", CAP_ENV_HOST_WRITES);
    }
    if (trk_hm.uffd >= 0) {
        trk_hm.mode = CAP_TRACK_UFFD;
        trk_hm.why[0] = 0;
    } else if (trk_hm.claim) {
        trk_hm.mode = CAP_TRACK_PROTECT;
    } else {
        snprintf(trk_hm.why + strlen(trk_hm.why), sizeof trk_hm.why - strlen(trk_hm.why),
                 "%sno fault claim slot", trk_hm.why[0] ? "; " : "");
        trk_hm.mode = CAP_TRACK_SCAN;
    }
}

size_t cap_mapped_describe(char *buf, size_t len, int at_close)
{
    int n;
    if (!at_close)
        n = snprintf(buf, len, "%s%s%s%s", mode_name(trk_hm.mode), trk_hm.why[0] ? " (" : "",
                     trk_hm.why, trk_hm.why[0] ? ")" : "");
    else
        n = snprintf(buf, len,
                     "mappings: %llu uffd, %llu protect, %llu scan, %llu copied; %llu write "
                     "faults taken, %llu of them copying device output first; %llu submissions "
                     "waited for (CPU device)",
                     (unsigned long long)atomic_load(&trk_hm.n_map[CAP_TRACK_UFFD]),
                     (unsigned long long)atomic_load(&trk_hm.n_map[CAP_TRACK_PROTECT]),
                     (unsigned long long)atomic_load(&trk_hm.n_map[CAP_TRACK_SCAN]),
                     (unsigned long long)atomic_load(&trk_hm.n_copy),
                     (unsigned long long)atomic_load(&trk_hm.n_faults),
                     (unsigned long long)atomic_load(&trk_hm.n_cofw_faults),
                     (unsigned long long)atomic_load(&cap.n_cpu_waits));
    return n > 0 ? (size_t)n : 0;
}
