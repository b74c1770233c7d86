/*
 * replay/replay_int.h — the backend interface of the replay engine, and what the engine's
 * files and the backends share (failure reporting, allocation, clocks). Only replay/ and the
 * replay tests include this.
 *
 * A backend executes ops of one API on one device; the engine (replay_engine.c) decides which
 * ops, in which order (the scheduler's topological order), and does everything that does not
 * depend on the API: ranges and slices, verification levels, digests, comparison with the
 * capture, dumps, errors per op, timings and the result trace.
 *
 * Life of a backend (one replay_run):
 *     devices()                         any time, no state
 *     open(r, opts, cb)                 device + queues; check the trace fits (REPLAY_ENODEV)
 *     for each run:
 *         prepare()                     programs and kernels of the tables (untimed)
 *         exec(x) ...                   ops in graph order; may return before the op ran
 *         drain()                       everything exec'd has completed and been reported
 *         ... more exec / drain (a range replay drains between fast-forward and range)
 *         reset()                       destroy what the trace created, keep the device
 *     close()
 *
 * Completion. Every exec'd op is reported exactly once through cb->done(), from the thread
 * that called exec/drain (never another thread), at the latest by the next drain(). A backend
 * that executes synchronously reports inside exec. The report carries the op's device times
 * (when measured) and, when asked (x->flags), the bytes of its accesses, which the engine
 * digests and dumps; the byte pointers need only live during the callback.
 *
 * Errors. exec() returns 0, or a negative status with a message (replay__fail) about this op:
 * REPLAY_EUNSUPPORTED ("vkCmdDraw is not supported"), SBT_ECORRUPT (a blob that fails its hash),
 * SBT_EINVAL (references an object the trace never created). The engine records it at the op,
 * prefixes "op N: " and goes on; the op is then not reported through done(). REPLAY_EDEVICE
 * (device lost, out of device memory) from exec or drain ends the run.
 *
 * Dependencies. x->node is the scheduler's node: the op with its incoming edges. Edges whose
 * predecessor the engine did not execute (outside the range and its slice) have
 * from_val == 0; an executed predecessor has from_val = the slot the engine gave it (>= 1).
 * The backend must honour every edge from an executed op (device-side: semaphores/barriers;
 * host-side: wait before acting), and may run anything the edges do not order concurrently.
 * The scheduler leaves out hazard edges between ops of the same stream (stream order implies
 * them): a backend that reorders or overlaps ops within a stream must find those itself.
 */
#ifndef REPRISE_REPLAY_INT_H
#define REPRISE_REPLAY_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "format/sbt.h"
#include "replay/replay.h"
#include "scheduler/sched.h"

/* ========================================================================================== */
/* Shared helpers                                                                             */
/* ========================================================================================== */

/* Sets the thread's message (replay_errmsg) and returns status. */
int replay__fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* CLOCK_MONOTONIC in ns: the replay's host clock (result traces say so in clock.domain). */
uint64_t replay__now_ns(void);

/* ========================================================================================== */
/* The backend interface                                                                      */
/* ========================================================================================== */

struct replay_bk_opts {
    uint32_t device; /* index among the backend's devices (replay_device_info.index) */
    uint32_t verify; /* enum replay_verify of the run: a backend may skip timestamp or
                        read-back setup it will not need */
    uint32_t timing; /* enum replay_timing: REPLAY_TIMING_NONE = no device timestamps */
};

/* What the engine asks for one op. */
enum replay_x_flags {
    REPLAY_X_UNTIMED = 1u << 0,     /* fast-forward: no device timestamps needed */
    REPLAY_X_OUTPUTS = 1u << 1,     /* report the bytes of its WRITE accesses as they were right
                                       after it ran (verify op) */
    REPLAY_X_OUTPUTS_END = 1u << 2, /* the same, read when its submission completed (verify
                                       submit): later ops of that submission may show */
    REPLAY_X_READ = 1u << 3,        /* HOST_READ: report the bytes of its READ accesses */
};

struct replay_x {
    const struct sched_node *node; /* node->op is the op; valid during exec only */
    uint64_t slot;                 /* engine's id of this op (>= 1); pass back in done() */
    uint32_t flags;                /* enum replay_x_flags */
};

/* A completion report. */
struct replay_done {
    uint64_t slot;
    int has_dev_time;
    uint64_t dev_begin, dev_end; /* ns on replay__now_ns()'s clock */
    /* With REPLAY_X_OUTPUTS*, REPLAY_X_READ: bytes[i] / len[i] for access i of the op
     * (NULL / 0 for accesses not asked for). n_access = the op's n_access, or 0 when no bytes. */
    uint32_t n_access;
    const void *const *bytes;
    const uint64_t *len;
};

struct replay_bk_cb {
    void (*done)(void *eng, const struct replay_done *d);
    void *eng;
};

struct replay_backend {
    const char *name; /* "vulkan", "cuda", "fake" */
    uint32_t api;     /* enum sbt_api of the traces it replays */
    /* As replay_devices(). */
    int (*devices)(struct replay_device_info *out, uint32_t max);
    /* Opens device o->device for the trace r (borrowed until close). Checks that the device can
     * replay it (queue families, features, memory types): REPLAY_ENODEV with a message naming
     * what is missing. *info: what to record as replay.device. *be: the backend's state. */
    int (*open)(sbt_reader *r, const struct replay_bk_opts *o, const struct replay_bk_cb *cb,
                struct replay_device_info *info, void **be);
    /* Per run, untimed: programs and kernels of r's tables (shader modules, pipelines, images).
     * An unusable entry is not an error here; the first op that uses it fails. */
    int (*prepare)(void *be);
    /* One op (see Errors and Dependencies above). */
    int (*exec)(void *be, const struct replay_x *x);
    /* Waits until every exec'd op has completed and been reported. */
    int (*drain)(void *be);
    /* After drain: bytes [off, off+len) of a resource as the device has them. */
    int (*read)(void *be, uint64_t resource, uint64_t off, uint64_t len, void *dst);
    /* End of run: destroys what the trace's ops created (memory, buffers, sets, ...). */
    void (*reset)(void *be);
    void (*close)(void *be); /* NULL accepted */
};

/* Built-in backends. replay__cuda_backend is defined by replay_cuda.c when that is built; the
 * engine tolerates its absence (weak reference). */
extern const struct replay_backend replay__vk_backend;
extern const struct replay_backend replay__cuda_backend __attribute__((weak));

/* The backend for an API, or NULL. */
const struct replay_backend *replay__backend_for_api(uint32_t api);
const struct replay_backend *replay__backend_by_name(const char *name);

#endif /* REPRISE_REPLAY_INT_H */
