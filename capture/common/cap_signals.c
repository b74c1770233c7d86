/*
 * capture/common/cap_signals.c — the fatal-signal handlers: on SIGSEGV, SIGBUS, SIGILL, SIGFPE,
 * SIGABRT, SIGTERM, SIGINT and SIGHUP they have the pump write what the capture holds before
 * the default action ends the process; a signal the program handles goes to its handler first,
 * and is flushed for (and named in capture.flush_reason) only when that handler leaves the
 * default action to end the process. Faults the capture causes itself (write-protected
 * mappings) are claimed first (cap_fault_claim_add). Shared by the Vulkan
 * layer and the CUDA shim (capture/common/cap_int.h); its state (the levels, the claims) is
 * owned here, one copy per capture library.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capture/cap.h"
#include "capture/common/cap_int.h"

/* ========================================================================================== */
/* Fatal signals                                                                              */
/* ========================================================================================== */

/* What is async-signal-safe here, and why the rest is acceptable.
 *
 * The handler itself only reads data written before its handler function was installed (a
 * level's chain target, below), uses lock-free atomics, and calls write(2) (the kick), poll(2)
 * (to wait), getpid(2), gettid(2), sigaction(2) and raise(3): all async-signal-safe. It never
 * takes a lock, allocates, or touches the trace. The work happens on the pump thread, which is
 * not interrupted: it drains, encodes, compresses and writes as usual, and uses a bounded
 * trylock (cap__lock_bounded) for each lock that the crashed thread might hold (its own event
 * buffer, the recorder's mutex). What can still go wrong is that the crash left memory the pump
 * needs in a bad state (a corrupted heap: malloc may block or crash on the pump). The handler
 * waits at most CAP_FLUSH_WAIT_MS and then goes on as if we were not there, so a crash never
 * becomes a hang; the trace then keeps what the timer flushed.
 *
 * Chaining. Everything we put our handler over is kept in one list, oldest first; a handler
 * put back over us again is one handler (its older entry is marked gone: it saved us as its
 * old action again, so it must be called once, at its newest place). Each of the first
 * N_LEVELS - 1 times we use a new handler function, a "level", whose fault starts at its own
 * entry; after that the last level is put back on top as often as the program puts its
 * handlers over it (a runtime that re-installs its handler at every phase must never end up
 * above our write faults), starting at the newest entry. A handler the program installed after
 * ours keeps one of our functions as its old action and calls it when a fault is not its own:
 * we then go on below the entry we called, not from the start (a function chaining to "what
 * is there now" would call the same handler again, for ever). That is told per thread: a
 * frame records the fault it is running (its siginfo and context) and the stack depth; an
 * entry for the same signal on the same thread, further down the stack, with the same siginfo
 * or context, is the handler we called handing it on. A handler left by siglongjmp leaves its
 * frame behind: a new fault at or above that point of the stack discards it. Without a frame
 * (none free, or a handler that hands on a copy of both), a level starts at its own entry,
 * which is right whenever no handler was put over us twice.
 *
 * Our sigaction mirrors the target's sa_mask, SA_NODEFER, SA_RESTART and SA_ONSTACK, so the
 * program's handler runs with the mask, restart behaviour and stack it asked for; SA_RESETHAND
 * is emulated (the second call takes the default action), SA_SIGINFO decides how it is called.
 */
#define N_LEVELS 8
#define N_BELOW  (N_LEVELS - 1 + 64) /* the first levels' entries, then the last one's newest */
#define N_FRAMES 64                  /* threads running a chain at once */
#define N_CLAIMS 4
static const int fatal_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT, SIGHUP};
#define N_FATAL ((int)(sizeof fatal_sigs / sizeof fatal_sigs[0]))

/* What we were put over; once: it has SA_RESETHAND and was called; gone: put over again. */
struct below {
    struct sigaction a;
    atomic_int once, gone;
};
static struct {
    atomic_int n; /* entries; levels installed: at most N_LEVELS */
    struct below e[N_BELOW];
} sigs[N_FATAL];
/* A thread running a fault through the chain: the entry it reached. */
static struct frame {
    atomic_int tid; /* 0: free */
    int sig, pos;
    const void *si, *uc;
    uintptr_t sp;
} frames[N_FRAMES];
static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER; /* install and re-assert */
static atomic_int sig_pid; /* the process that installed them (a forked child does not) */
static _Atomic(cap_fault_claim_fn) claims[N_CLAIMS];
static void *reprise_handlers[8]; /* handlers of the other reprise capture library (sig_mu) */

int cap_fault_claim_add(cap_fault_claim_fn fn)
{
    for (int i = 0; i < N_CLAIMS; i++) {
        cap_fault_claim_fn none = NULL;
        if (atomic_compare_exchange_strong(&claims[i], &none, fn))
            return 0;
    }
    return -1;
}

static int fatal_index(int sig)
{
    for (int k = 0; k < N_FATAL; k++)
        if (fatal_sigs[k] == sig)
            return k;
    return -1;
}

/* A fault the kernel raised for the instruction being executed: it happens again if we return. */
static int kernel_fault(int sig, const siginfo_t *si)
{
    return (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) && si &&
           si->si_code > 0;
}

/* The default action, as if no handler had been installed: restore it, then let the fault
 * repeat, or re-raise (the signal is blocked while we run, so it ends the process when we
 * return; with SA_NODEFER, at once). */
static void default_action(int sig, const siginfo_t *si)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (!kernel_fault(sig, si))
        raise(sig);
}

static void chain(struct below *b, int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *a = &b->a;
    if (a->sa_handler == SIG_IGN && !kernel_fault(sig, si))
        return; /* as the kernel: an ignored signal does nothing, an ignored fault kills */
    if (a->sa_handler == SIG_DFL || a->sa_handler == SIG_IGN ||
        ((a->sa_flags & SA_RESETHAND) && atomic_exchange(&b->once, 1))) {
        default_action(sig, si);
        return;
    }
    if (a->sa_flags & SA_SIGINFO)
        a->sa_sigaction(sig, si, uc);
    else
        a->sa_handler(sig);
}

/* The entry at or below i that is not gone; -1: none. */
static int live_at_or_below(int k, int i)
{
    while (i >= 0 && atomic_load(&sigs[k].e[i].gone))
        i--;
    return i;
}

/* The frame of the fault this thread is running that this entry hands on (*fresh = 0), or a
 * new one (*fresh = 1; NULL when none is free). See "Chaining". */
static struct frame *frame_of(int sig, const void *si, const void *uc, int *fresh)
{
    int tid = (int)syscall(SYS_gettid);
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    *fresh = 0;
    for (int i = 0; i < N_FRAMES; i++) {
        struct frame *f = &frames[i];
        if (atomic_load(&f->tid) != tid || f->sig != sig)
            continue;
        if (sp < f->sp && (f->si == si || f->uc == uc))
            return f;
        if (f->sp <= sp)
            atomic_store(&f->tid, 0); /* left by siglongjmp: this fault is above it */
    }
    *fresh = 1;
    for (int i = 0; i < N_FRAMES; i++) {
        int none = 0;
        if (atomic_compare_exchange_strong(&frames[i].tid, &none, tid)) {
            struct frame *f = &frames[i];
            f->sig = sig;
            f->si = si;
            f->uc = uc;
            f->sp = sp;
            return f;
        }
    }
    return NULL;
}

/* Hands a fault nobody claimed to entry b: the program's handler first, the default action
 * last (what we hold written first). b NULL: below everything, the default action. */
static void run_below(struct below *b, int sig, siginfo_t *si, void *uc)
{
    static struct below dfl; /* zeroed: SIG_DFL */
    if (!b)
        b = &dfl;
    const struct sigaction *a = &b->a;
    int handler = a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN && sig != SIGABRT &&
                  !((a->sa_flags & SA_RESETHAND) && atomic_load(&b->once));
    if (handler) {
        /* The program's handler first: a JVM, a GC or V8 take faults routinely, a server
         * handles SIGTERM, and a signal it handles is no crash to record or to flush for. Only
         * when it leaves the default action behind (it restored it, or was SA_RESETHAND: the
         * fault repeats, or a signal it raised again arrives, once we return) does the
         * process end: then what we hold is written first. */
        chain(b, sig, si, uc);
        struct sigaction now;
        int ends = (a->sa_flags & SA_RESETHAND) ||
                   (sigaction(sig, NULL, &now) == 0 && now.sa_handler == SIG_DFL);
        if (ends) {
            cap__pump_note_signal(sig);
            cap__flush_wait(CAP_FLUSH_WAIT_MS);
        } else {
            cap__pump_kick(); /* an early flush, not waited for */
        }
        return;
    }
    cap__pump_note_signal(sig); /* the default action ends the process: write what we hold */
    cap__flush_wait(CAP_FLUSH_WAIT_MS);
    chain(b, sig, si, uc);
}

static void on_fatal(int level, int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    int k = fatal_index(sig);
    if (k < 0)
        return;
    if (sig == SIGSEGV || sig == SIGBUS)
        for (int i = 0; i < N_CLAIMS; i++) {
            cap_fault_claim_fn fn = atomic_load(&claims[i]);
            if (fn && fn(sig, si, uc)) {
                errno = saved;
                return;
            }
        }
    int fresh, n = atomic_load(&sigs[k].n);
    struct frame *f = frame_of(sig, si, uc, &fresh);
    int start = !fresh ? f->pos - 1 : level < N_LEVELS - 1 ? level : n - 1;
    int pos = live_at_or_below(k, start < n ? start : n - 1);
    if (f)
        f->pos = pos;
    run_below(pos >= 0 ? &sigs[k].e[pos] : NULL, sig, si, uc);
    if (f && fresh)
        atomic_store(&f->tid, 0);
    errno = saved;
}

#define LEVEL(i)                                               \
    static void on_fatal_##i(int sig, siginfo_t *si, void *uc) \
    {                                                          \
        on_fatal(i, sig, si, uc);                              \
    }
LEVEL(0)
LEVEL(1)
LEVEL(2)
LEVEL(3)
LEVEL(4)
LEVEL(5)
LEVEL(6)
LEVEL(7)
#undef LEVEL
static void (*const level_fn[N_LEVELS])(int, siginfo_t *, void *) = {
    on_fatal_0, on_fatal_1, on_fatal_2, on_fatal_3, on_fatal_4, on_fatal_5, on_fatal_6, on_fatal_7};

static int is_ours(const struct sigaction *a)
{
    if (!(a->sa_flags & SA_SIGINFO))
        return 0;
    for (int i = 0; i < N_LEVELS; i++)
        if (a->sa_sigaction == level_fn[i])
            return 1;
    return 0;
}

/* The other capture library of this process (the Vulkan layer and the CUDA shim each link a
 * copy of this file): it chains to us and we to it, and neither re-asserts over the other. */
static int is_other_reprise(const struct sigaction *a)
{
    void *h = (void *)a->sa_sigaction;
    if (!(a->sa_flags & SA_SIGINFO) || a->sa_handler == SIG_DFL || a->sa_handler == SIG_IGN)
        return 0;
    for (size_t i = 0; i < sizeof reprise_handlers / sizeof reprise_handlers[0]; i++)
        if (reprise_handlers[i] == h)
            return 1;
    Dl_info di;
    char real[PATH_MAX];
    if (!dladdr(h, &di) || !di.dli_fname || !realpath(di.dli_fname, real))
        return 0;
    const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
    if (strcmp(base, CAP_VK_LAYER_LIB) && strcmp(base, CAP_CUDA_SHIM_LIB))
        return 0;
    for (size_t i = 0; i < sizeof reprise_handlers / sizeof reprise_handlers[0]; i++)
        if (!reprise_handlers[i]) {
            reprise_handlers[i] = h;
            break;
        }
    return 1;
}

/* The same disposition: handler, flags and the signals of the mask (sigaction(2) fills only
 * the kernel's part of a sigset_t: the rest is whatever the caller's memory held). */
static int same_action(const struct sigaction *a, const struct sigaction *b)
{
    if (a->sa_handler != b->sa_handler || a->sa_flags != b->sa_flags)
        return 0;
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&a->sa_mask, sig) != sigismember(&b->sa_mask, sig))
            return 0;
    return 1;
}

/* Adds what we are put over to the list (sig_mu held): an older entry of the same handler
 * is gone (among the last level's entries, taken out); when the list is full, the last
 * level's oldest entry goes. */
static void below_push(int k, const struct sigaction *a)
{
    int n = atomic_load(&sigs[k].n), j = 0;
    for (int i = 0; i < n; i++) {
        struct below *e = &sigs[k].e[i];
        int same = !atomic_load(&e->gone) && same_action(&e->a, a);
        if (same && i < N_LEVELS - 1)
            atomic_store(&e->gone, 1);
        if (same && i >= N_LEVELS - 1)
            continue; /* taken out */
        if (j != i) {
            sigs[k].e[j].a = e->a;
            atomic_store(&sigs[k].e[j].once, atomic_load(&e->once));
            atomic_store(&sigs[k].e[j].gone, atomic_load(&e->gone));
        }
        j++;
    }
    if (j == N_BELOW) {
        for (int i = N_LEVELS; i < N_BELOW; i++) {
            sigs[k].e[i - 1].a = sigs[k].e[i].a;
            atomic_store(&sigs[k].e[i - 1].once, atomic_load(&sigs[k].e[i].once));
            atomic_store(&sigs[k].e[i - 1].gone, atomic_load(&sigs[k].e[i].gone));
        }
        j--;
    }
    sigs[k].e[j].a = *a;
    atomic_store(&sigs[k].e[j].once, 0);
    atomic_store(&sigs[k].e[j].gone, 0);
    atomic_store(&sigs[k].n, j + 1);
}

/* Puts a level of ours on top of *below (sig_mu held): a new one while there are, then the
 * last one again. */
static void push_level(int k, const struct sigaction *below)
{
    int n = atomic_load(&sigs[k].n);
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = level_fn[n < N_LEVELS - 1 ? n : N_LEVELS - 1];
    if (below->sa_handler == SIG_DFL || below->sa_handler == SIG_IGN) {
        sigemptyset(&ours.sa_mask);
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    } else {
        ours.sa_mask = below->sa_mask;
        ours.sa_flags = SA_SIGINFO | (below->sa_flags & (SA_ONSTACK | SA_RESTART | SA_NODEFER));
    }
    below_push(k, below); /* what it chains to is there before anything can call it */
    struct sigaction prev;
    memset(&prev, 0, sizeof prev);
    if (sigaction(fatal_sigs[k], &ours, &prev) != 0)
        return; /* the entry stays: harmless, and put over again it is one handler */
    if (!same_action(&prev, below)) /* the program changed it between our look and ours */
        sigs[k].e[atomic_load(&sigs[k].n) - 1].a = prev;
}

/* Puts ours on top of signal k if its handler is not ours (sig_mu held). */
static void assert_one(int k)
{
    struct sigaction cur;
    memset(&cur, 0, sizeof cur);
    if (sigaction(fatal_sigs[k], NULL, &cur) != 0)
        return;
    if (cur.sa_handler == SIG_IGN || is_ours(&cur) || is_other_reprise(&cur))
        return;
    push_level(k, &cur);
}

/* Puts ours on top of every fatal signal whose handler is not ours (sig_mu held). */
static void assert_all(void)
{
    for (int k = 0; k < N_FATAL; k++)
        assert_one(k);
}

void cap__signals_install(void)
{
    pthread_mutex_lock(&sig_mu);
    if (!atomic_load(&sig_pid)) {
        /* Never unloaded from here on: a handler installed after ours may keep our address as
         * the one to chain to, so the code must stay mapped after the loader's dlclose (the
         * trace is then closed at exit instead). */
        Dl_info di, exe;
        int in_exe = dladdr((void *)getauxval(AT_ENTRY), &exe) &&
                     dladdr((void *)&cap__signals_install, &di) &&
                     exe.dli_fbase == di.dli_fbase; /* linked into a program (the tests) */
        if (!in_exe && dladdr((void *)&cap__signals_install, &di) && di.dli_fname &&
            !dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
            fprintf(stderr, "reprise capture: cannot pin %s in memory: %s\n", di.dli_fname,
                    dlerror());
        assert_all();
        atomic_store(&sig_pid, (int)getpid());
    }
    pthread_mutex_unlock(&sig_mu);
}

int cap__signals_installed(void)
{
    return atomic_load(&sig_pid) == (int)getpid();
}

void cap__signals_reassert_now(void)
{
    if (atomic_load(&sig_pid) != (int)getpid() || pthread_mutex_trylock(&sig_mu) != 0)
        return; /* not installed, a forked child, or another thread is at it */
    assert_all();
    pthread_mutex_unlock(&sig_mu);
}

void cap__signals_reassert(void)
{
    static atomic_uint_fast64_t last_ms;
    uint64_t now = cap__mono_ms(), last = atomic_load(&last_ms);
    if (now - last < 10 || !atomic_compare_exchange_strong(&last_ms, &last, now))
        return; /* one look per 10 ms is enough (8 system calls, about 4 us) */
    cap__signals_reassert_now();
}

void cap__signals_reassert_faults(void)
{
    if (atomic_load(&sig_pid) != (int)getpid() || pthread_mutex_trylock(&sig_mu) != 0)
        return;
    assert_one(fatal_index(SIGSEGV));
    assert_one(fatal_index(SIGBUS));
    pthread_mutex_unlock(&sig_mu);
}
