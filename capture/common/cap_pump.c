/*
 * capture/common/cap_pump.c — the pump: the one background thread per capture library that
 * writes the trace, flushes it on a timer and on demand (cap_flush_now, and the fatal-signal
 * handlers of cap_signals.c through cap__flush_wait), and names in the metadata why it flushed.
 * Shared by the Vulkan layer and the CUDA shim (capture/common/cap_int.h); its state (the
 * struct pump below) is owned here, one copy per capture library.
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

uint64_t cap__mono_ms(void)
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
    uint64_t last_flush = cap__mono_ms(), last_reassert = last_flush;
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
        uint64_t now = cap__mono_ms();
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

void cap__pump_note_signal(int sig)
{
    atomic_fetch_or(&pump.sig_reasons, 1u << sig);
}
