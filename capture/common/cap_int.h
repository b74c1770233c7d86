/*
 * capture/common/cap_int.h — what the Vulkan layer and the CUDA shim share inside the capture
 * module (capture/common/: cap_env.c, cap_pump.c, cap_signals.c, linked into each library):
 * how a capture is configured from the environment, the metadata every trace records about
 * the captured process, the background thread that writes and flushes the trace ("pump"),
 * and what happens on a fatal signal. Only capture/ includes this.
 */
#ifndef REPRISE_CAP_INT_H
#define REPRISE_CAP_INT_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "format/sbt.h"

/* 1 if the environment variable is set to something other than "" or "0". */
int cap__env_flag(const char *name);
/* The trace path of this process: REPRISE_TRACE, "%p" replaced by the process id, and for a
 * process other than the capture's root (REPRISE_ROOT_PID, which the first process to get here
 * sets when it is unset) <stem>.<pid>.sbt; when unset, reprise-PID.sbt in the working
 * directory (and a line on stderr saying so). */
void cap__trace_path(char *out, size_t cap);
/* 1 when this process is the capture's root (its trace is the one REPRISE_TRACE names). */
int cap__is_root(void);
/* Appends this process's line to the capture's manifest (cap.h, CAP_MANIFEST_SUFFIX) for its
 * trace at path; the root of a capture that `reprise capture` did not start begins it anew. */
void cap__manifest_add(const char *path);
/* Writer options from the environment (REPRISE_ZSTD: level, 0 or negative = uncompressed). */
struct sbt_writer_opts cap__writer_opts(void);
/* Writes capture.api, capture.tool, program, argv, the process's identity in its job (job.id,
 * job.rank, job.world_size, job.local_rank, job.rank_from: FORMAT.md 3.5), host, clock.domain,
 * both epochs (epoch_ns is the CLOCK_MONOTONIC time the trace's times count from) and the
 * first clock pair. Returns 0 or the first failing status of the writer. */
int cap__meta_process(sbt_writer *w, const char *api, const char *tool, uint64_t epoch_ns);
/* Records a pair of CLOCK_MONOTONIC and CLOCK_REALTIME readings (metadata clock.sync.N,
 * FORMAT.md 3.5) with why ("start", "flush", "end"). For "flush", only when CAP_CLOCK_PAIR_MS
 * passed since the last pair and the trace has grown since (n_ops, the ops written so far,
 * differs): a long capture gets one pair a second, an idle one none. Call where the writer may
 * be used (the pump's work, or under the library's writer lock). Returns 0 or the writer's
 * status. */
int cap__clock_pair(sbt_writer *w, const char *why, uint64_t n_ops);
#define CAP_CLOCK_PAIR_MS 1000

/* ==========================================================================================
 * The pump: one background thread per capture library that writes the trace. It wakes every
 * period_ms (or at once when kicked) and calls work(what) with the enum cap_pump_what bits.
 * work runs only on that thread, never twice at a time. Every signal the kernel lets us block
 * is blocked on it, so a SIGTERM or SIGINT always lands on a program thread.
 *
 * Flushing: at least every CAP_FLUSH_MS the pump asks work for CAP_PUMP_FLUSH, which cuts the
 * current chunk (sbt_writer_flush) when anything is pending: a process killed with SIGKILL
 * loses at most the ops of the last CAP_FLUSH_MS plus one period. The file it leaves is read
 * by scanning, up to the last flush, and says "the writer did not finish".
 * ========================================================================================== */

enum cap_pump_what {
    CAP_PUMP_TICK = 1u << 0,   /* every call: the period passed, or the pump was kicked */
    CAP_PUMP_FLUSH = 1u << 1,  /* cut the current chunk and write it out */
    CAP_PUMP_URGENT = 1u << 2, /* a fatal signal or cap_flush_now() is waiting: write everything
                                * that can be written now, and take no lock that a crashed
                                * thread may hold without a bounded wait (cap__lock_bounded) */
    CAP_PUMP_STOP = 1u << 3,   /* the last call, from cap__pump_stop() */
};
#define CAP_FLUSH_MS      50   /* ms between timer flushes */
#define CAP_FLUSH_WAIT_MS 2000 /* how long a fatal signal waits for its flush, at most */

/* CLOCK_MONOTONIC in ms. */
uint64_t cap__mono_ms(void);
/* Notes that the handler of sig asked for a flush (named in capture.flush_reason).
 * Async-signal-safe. */
void cap__pump_note_signal(int sig);
/* Starts the pump. Returns 0, or -1 if the thread cannot be made (then nothing flushes on a
 * timer; the caller logs it and goes on). */
int cap__pump_start(unsigned period_ms, void (*work)(unsigned what));
/* Wakes the pump now. Async-signal-safe. */
void cap__pump_kick(void);
/* Calls work(CAP_PUMP_STOP | CAP_PUMP_FLUSH | ...) one last time on the pump and joins it. The
 * caller must not hold a lock that work takes. Idempotent; later flush requests return at once. */
void cap__pump_stop(void);
/* Asks the pump for an urgent flush and waits until it is written, at most wait_ms.
 * Async-signal-safe (atomics, write(2), poll(2), getpid(2), gettid(2)). 1 when written; 0 when
 * it timed out, when there is no pump (not started, stopped, a forked child) or when called on
 * the pump itself. */
int cap__flush_wait(unsigned wait_ms);
/* For work(CAP_PUMP_URGENT): the reasons for urgent flushes not reported yet ("signal 11
 * (SIGSEGV)", cap_flush_now's why), joined by "; ", into buf; returns their length (0: none).
 * The caller records them as the metadata key "capture.flush_reason". */
size_t cap__flush_reasons(char *buf, size_t cap);
/* pthread_mutex_lock, or when urgent a trylock retried for at most ~50 ms: the holder may be
 * the thread that crashed. Returns 1 when locked, 0 when not. */
int cap__lock_bounded(pthread_mutex_t *mu, int urgent);

/* Writes what the capture holds now, before something that may end the process (for the
 * Vulkan layer when a call returns VK_ERROR_DEVICE_LOST). why (copied) is recorded in the
 * trace's metadata, and said once on stderr. Waits for the pump, at most CAP_FLUSH_WAIT_MS. Not
 * for signal handlers. */
void cap_flush_now(const char *why);

/* ==========================================================================================
 * Fatal signals: SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT and SIGHUP, unless
 * the program ignores them (SIG_IGN is left alone: children started with exec inherit it).
 * Our handler first offers SIGSEGV and SIGBUS to the claim callbacks, then has the pump flush
 * (bounded wait), then does what the program's own disposition says: calls its handler the way
 * the kernel would have (sa_sigaction or sa_handler, SA_RESETHAND once), or for SIG_DFL
 * restores the default and re-raises, so the exit status is the program's.
 * ========================================================================================== */

/* A claim callback runs first on SIGSEGV and SIGBUS, on the faulting thread, in signal context:
 * it must be async-signal-safe. It returns 1 when the fault was its own and is handled (the
 * program resumes at the faulting instruction), 0 otherwise. */
typedef int (*cap_fault_claim_fn)(int sig, siginfo_t *si, void *uctx);
/* Registers one (at most 4). Returns 0, or -1 when full. */
int cap_fault_claim_add(cap_fault_claim_fn fn);
/* Installs the handlers (once per process; later calls do nothing), and pins the capture
 * library in memory: a handler installed after ours may keep our address to chain to. */
void cap__signals_install(void);
/* Are our handlers installed in this process (not a forked child's copy)? A claim callback is
 * only ever asked when they are. */
int cap__signals_installed(void);
/* At a safe point (the pump does it every 100 ms; the Vulkan layer after each wait): for each
 * signal whose handler the program replaced after us, put ours back on top, chaining to the
 * program's. Looks at most once per 10 ms (8 sigaction calls, a few microseconds). */
void cap__signals_reassert(void);
/* The same look, now: before the layer write-protects pages whose faults only its handler
 * understands (a handler the program installed since the last look, which would take them
 * without chaining, goes under ours first). */
void cap__signals_reassert_now(void);
/* SIGSEGV and SIGBUS only, now (two sigaction calls): each time pages are write-protected
 * again, so a handler the program installed since (a runtime entering a phase) goes under ours
 * before it could take their faults, however often it does. */
void cap__signals_reassert_faults(void);

#endif
