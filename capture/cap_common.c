/*
 * capture/cap_common.c — what the Vulkan layer and the CUDA shim share (capture/cap_int.h):
 * configuration and process metadata, the pump thread that flushes the trace on a timer and
 * on demand, and the fatal-signal handlers that write what the capture holds before the
 * program's own handler or the default action runs. Linked into both capture libraries (each
 * has its own copy of this state).
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
#include "capture/cap_int.h"

int cap__env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

void cap__trace_path(char *out, size_t cap)
{
    const char *t = getenv(CAP_ENV_TRACE);
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (!t || !*t) {
        snprintf(out, cap, "reprise-%s.sbt", pid);
        fprintf(stderr, "reprise capture: %s is not set; writing %s\n", CAP_ENV_TRACE, out);
        return;
    }
    size_t o = 0;
    for (const char *p = t; *p && o + 24 < cap; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(out + o, cap - o, "%s", pid);
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

struct sbt_writer_opts cap__writer_opts(void)
{
    struct sbt_writer_opts o = SBT_WRITER_OPTS();
    const char *z = getenv(CAP_ENV_ZSTD);
    if (z && *z)
        o.zstd_level = atoi(z) > 0 ? atoi(z) : -1;
    return o;
}

int cap__meta_process(sbt_writer *w, const char *api, const char *tool, uint64_t epoch_ns)
{
    char buf[4096];
    int st = sbt_writer_meta(w, "capture.api", api);
    if (!st)
        st = sbt_writer_meta(w, "capture.tool", tool);
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (!st && n > 0) {
        buf[n] = 0;
        st = sbt_writer_meta(w, "program", buf);
    }
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (f) {
        size_t m = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i + 1 < m; i++)
            if (!buf[i])
                buf[i] = ' ';
        buf[m] = 0;
        if (!st)
            st = sbt_writer_meta(w, "argv", buf);
    }
    if (!st && gethostname(buf, sizeof buf) == 0) {
        buf[sizeof buf - 1] = 0;
        st = sbt_writer_meta(w, "host", buf);
    }
    if (!st)
        st = sbt_writer_meta(w, "clock.domain", "CLOCK_MONOTONIC");
    snprintf(buf, sizeof buf, "%" PRIu64, epoch_ns);
    if (!st)
        st = sbt_writer_meta(w, "clock.epoch_monotonic_ns", buf);
    struct timespec rt, mt;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mt);
    /* the realtime instant of the epoch: now, less the monotonic time since the epoch */
    uint64_t now_rt = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    uint64_t now_mt = (uint64_t)mt.tv_sec * 1000000000u + (uint64_t)mt.tv_nsec;
    snprintf(buf, sizeof buf, "%" PRIu64, now_rt - (now_mt > epoch_ns ? now_mt - epoch_ns : 0));
    if (!st)
        st = sbt_writer_meta(w, "clock.epoch_realtime_ns", buf);
    return st;
}

/* ========================================================================================== */
/* The pump                                                                                   */
/* ========================================================================================== */

/* What is touched from signal handlers here is lock-free atomics and the pipe's write end;
 * everything else belongs to the pump thread or is set before it starts. */
static struct {
    pthread_t th;
    void (*work)(unsigned what);
    unsigned period_ms;
    int fd[2];         /* wake pipe, non-blocking; open for the process's life, so a
                        * late kick never writes into an fd number reused by the program */
    atomic_int kicked; /* a wake byte is in the pipe (or about to be) */
    atomic_int stop, stopping;
    atomic_int pid;          /* the process the pump runs in; 0 = no pump */
    atomic_long tid;         /* the pump thread */
    atomic_uint req, done;   /* urgent flushes asked for, and the last one served */
    atomic_uint sig_reasons; /* bit per signal number whose handler asked for a flush */
    uint32_t sig_reported;   /* pump only: signals already named in the metadata */
    pthread_mutex_t why_mu;  /* cap_flush_now's reason (never taken in a signal handler) */
    char why[200], why_last[200];
} pump = {.fd = {-1, -1}, .why_mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static long my_tid(void)
{
    return (long)syscall(SYS_gettid);
}

static void *pump_main(void *arg)
{
    (void)arg;
    atomic_store(&pump.tid, my_tid());
    uint64_t last_flush = mono_ms(), last_reassert = last_flush;
    for (;;) {
        struct pollfd p = {.fd = pump.fd[0], .events = POLLIN};
        if (poll(&p, 1, (int)pump.period_ms) > 0) {
            char buf[64];
            while (read(pump.fd[0], buf, sizeof buf) > 0)
                ;
        }
        atomic_store(&pump.kicked, 0); /* a kick from here on writes again */
        unsigned req = atomic_load(&pump.req);
        int stop = atomic_load(&pump.stop);
        uint64_t now = mono_ms();
        unsigned what = CAP_PUMP_TICK;
        if (now - last_flush >= CAP_FLUSH_MS)
            what |= CAP_PUMP_FLUSH;
        if (req != atomic_load(&pump.done))
            what |= CAP_PUMP_URGENT | CAP_PUMP_FLUSH;
        if (stop)
            what |= CAP_PUMP_STOP | CAP_PUMP_FLUSH;
        pump.work(what);
        if (what & CAP_PUMP_FLUSH)
            last_flush = now;
        atomic_store(&pump.done, req);
        if (stop)
            return NULL;
        if (now - last_reassert >= 100) {
            cap__signals_reassert();
            last_reassert = now;
        }
    }
}

int cap__pump_start(unsigned period_ms, void (*work)(unsigned what))
{
    if (atomic_load(&pump.pid))
        return 0;
    if (pump.fd[0] < 0 && pipe2(pump.fd, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    pump.work = work;
    pump.period_ms = period_ms ? period_ms : CAP_FLUSH_MS;
    atomic_store(&pump.stop, 0);
    atomic_store(&pump.stopping, 0);
    /* The thread inherits this mask: asynchronous signals go to the program's threads. The
     * synchronous ones stay unblocked: the kernel would turn a fault on a thread that blocks
     * them into the default action, skipping the program's handler. */
    sigset_t block, old;
    sigfillset(&block);
    static const int sync_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT};
    for (size_t i = 0; i < sizeof sync_sigs / sizeof sync_sigs[0]; i++)
        sigdelset(&block, sync_sigs[i]);
    pthread_sigmask(SIG_SETMASK, &block, &old);
    int e = pthread_create(&pump.th, NULL, pump_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e)
        return -1;
    atomic_store(&pump.pid, (int)getpid());
    return 0;
}

void cap__pump_kick(void)
{
    if (pump.fd[1] >= 0 && !atomic_exchange(&pump.kicked, 1)) {
        int e = errno;
        ssize_t r = write(pump.fd[1], "", 1); /* full pipe: it is awake anyway */
        (void)r;
        errno = e;
    }
}

void cap__pump_stop(void)
{
    if (atomic_load(&pump.pid) != (int)getpid() || atomic_exchange(&pump.stopping, 1))
        return; /* no pump, a forked child's copy of it, or stopping already */
    atomic_store(&pump.stop, 1);
    cap__pump_kick();
    pthread_join(pump.th, NULL);
    atomic_store(&pump.pid, 0);
    atomic_store(&pump.tid, 0);
}

int cap__flush_wait(unsigned wait_ms)
{
    int e = errno, ok = 0;
    int pid = (int)getpid();
    if (atomic_load(&pump.pid) == pid && atomic_load(&pump.tid) != my_tid()) {
        unsigned want = atomic_fetch_add(&pump.req, 1) + 1;
        cap__pump_kick();
        for (unsigned t = 0; t <= wait_ms; t++) {
            if ((int)(atomic_load(&pump.done) - want) >= 0) {
                ok = 1;
                break;
            }
            if (atomic_load(&pump.pid) != pid)
                break; /* the pump stopped */
            poll(NULL, 0, 1);
        }
    }
    errno = e;
    return ok;
}

static const char *sig_name(int sig)
{
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGILL:
        return "SIGILL";
    case SIGFPE:
        return "SIGFPE";
    case SIGABRT:
        return "SIGABRT";
    case SIGTERM:
        return "SIGTERM";
    case SIGINT:
        return "SIGINT";
    case SIGHUP:
        return "SIGHUP";
    }
    return "?";
}

size_t cap__flush_reasons(char *buf, size_t cap)
{
    size_t n = 0;
#define PUT(...)                                                                          \
    do {                                                                                  \
        int k_ = snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, __VA_ARGS__); \
        n += k_ > 0 ? (size_t)k_ : 0;                                                     \
    } while (0)
    if (cap)
        buf[0] = 0;
    uint32_t sigs = atomic_exchange(&pump.sig_reasons, 0) & ~pump.sig_reported;
    pump.sig_reported |= sigs;
    for (int s = 1; s < 32; s++)
        if (sigs & (1u << s))
            PUT("%ssignal %d (%s)", n ? "; " : "", s, sig_name(s));
    pthread_mutex_lock(&pump.why_mu);
    if (pump.why[0]) {
        PUT("%s%s", n ? "; " : "", pump.why);
        pump.why[0] = 0;
    }
    pthread_mutex_unlock(&pump.why_mu);
#undef PUT
    return n < cap ? n : (cap ? cap - 1 : 0);
}

int cap__lock_bounded(pthread_mutex_t *mu, int urgent)
{
    if (!urgent)
        return pthread_mutex_lock(mu) == 0;
    for (int i = 0; i < 50; i++) {
        if (pthread_mutex_trylock(mu) == 0)
            return 1;
        poll(NULL, 0, 1);
    }
    return 0;
}

void cap_flush_now(const char *why)
{
    int first = 0;
    pthread_mutex_lock(&pump.why_mu);
    if (strcmp(why ? why : "", pump.why_last) != 0) { /* the same reason again: once is enough */
        snprintf(pump.why, sizeof pump.why, "%s", why ? why : "");
        snprintf(pump.why_last, sizeof pump.why_last, "%s", why ? why : "");
        first = 1;
    }
    pthread_mutex_unlock(&pump.why_mu);
    int ok = cap__flush_wait(CAP_FLUSH_WAIT_MS);
    if (first)
        fprintf(stderr, "reprise capture: %s: %s\n", why ? why : "flush",
                ok ? "the trace is written up to here" : "could not flush the trace");
}

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
 * Chaining. Each time we put our handler on top of another one we use a new "level": handler
 * function i calls what was installed just before it (next[i]). Handlers installed after ours
 * keep our function of the level below as their "old action" and call it when a fault is not
 * theirs; that function calls the next level down, so no cycle can form (a single handler
 * function chaining to "whatever was there when we last looked" would call itself). Levels are
 * never reused; after N_LEVELS re-assertions of one signal we stop re-asserting it.
 *
 * Our sigaction mirrors the target's sa_mask, SA_NODEFER, SA_RESTART and SA_ONSTACK, so the
 * program's handler runs with the mask, restart behaviour and stack it asked for; SA_RESETHAND
 * is emulated (the second call takes the default action), SA_SIGINFO decides how it is called.
 */
#define N_LEVELS 8
#define N_CLAIMS 4
static const int fatal_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT, SIGHUP};
#define N_FATAL ((int)(sizeof fatal_sigs / sizeof fatal_sigs[0]))

static struct {
    atomic_int n;                    /* levels installed */
    struct sigaction next[N_LEVELS]; /* what level i's handler chains to */
    atomic_int once[N_LEVELS];       /* next[i] has SA_RESETHAND and was called */
} sigs[N_FATAL];
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

static void chain(int k, int level, int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *a = &sigs[k].next[level];
    if (a->sa_handler == SIG_IGN && !kernel_fault(sig, si))
        return; /* as the kernel: an ignored signal does nothing, an ignored fault kills */
    if (a->sa_handler == SIG_DFL || a->sa_handler == SIG_IGN ||
        ((a->sa_flags & SA_RESETHAND) && atomic_exchange(&sigs[k].once[level], 1))) {
        default_action(sig, si);
        return;
    }
    if (a->sa_flags & SA_SIGINFO)
        a->sa_sigaction(sig, si, uc);
    else
        a->sa_handler(sig);
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
    atomic_fetch_or(&pump.sig_reasons, 1u << sig);
    cap__flush_wait(CAP_FLUSH_WAIT_MS);
    chain(k, level, sig, si, uc);
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

static int same_action(const struct sigaction *a, const struct sigaction *b)
{
    return a->sa_handler == b->sa_handler && a->sa_flags == b->sa_flags &&
           !memcmp(&a->sa_mask, &b->sa_mask, sizeof a->sa_mask);
}

/* Puts a new level of ours on top of *below (sig_mu held). */
static void push_level(int k, const struct sigaction *below)
{
    int n = atomic_load(&sigs[k].n);
    if (n >= N_LEVELS)
        return;
    sigs[k].next[n] = *below;
    atomic_store(&sigs[k].once[n], 0);
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = level_fn[n];
    if (below->sa_handler == SIG_DFL || below->sa_handler == SIG_IGN) {
        sigemptyset(&ours.sa_mask);
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    } else {
        ours.sa_mask = below->sa_mask;
        ours.sa_flags = SA_SIGINFO | (below->sa_flags & (SA_ONSTACK | SA_RESTART | SA_NODEFER));
    }
    atomic_store(&sigs[k].n, n + 1); /* next[n] is ready before anything can call level n */
    struct sigaction prev;
    if (sigaction(fatal_sigs[k], &ours, &prev) != 0) {
        atomic_store(&sigs[k].n, n);
        return;
    }
    if (!same_action(&prev, below)) /* the program changed it between our look and ours */
        sigs[k].next[n] = prev;
}

/* Puts ours on top of every fatal signal whose handler is not ours (sig_mu held). */
static void assert_all(void)
{
    for (int k = 0; k < N_FATAL; k++) {
        struct sigaction cur;
        if (sigaction(fatal_sigs[k], NULL, &cur) != 0)
            continue;
        if (cur.sa_handler == SIG_IGN || is_ours(&cur) || is_other_reprise(&cur))
            continue;
        push_level(k, &cur);
    }
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
    uint64_t now = mono_ms(), last = atomic_load(&last_ms);
    if (now - last < 10 || !atomic_compare_exchange_strong(&last_ms, &last, now))
        return; /* one look per 10 ms is enough (8 system calls, about 4 us) */
    cap__signals_reassert_now();
}
