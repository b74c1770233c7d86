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
/* The path r was opened with (for messages), or "?" when it has none. */
const char *replay__path_of(const sbt_reader *r);
/* String ids of a source trace interned in a writer, each once: v has n = source strings + 1
 * entries (calloc'd by the caller, 0 = not yet). */
struct replay__strmap {
    uint32_t *v;
    uint32_t n;
};
int replay__str_of(sbt_writer *w, const sbt_reader *r, struct replay__strmap *m, uint32_t id,
                   uint32_t *out);

/* ========================================================================================== */
/* The backend interface                                                                      */
/* ========================================================================================== */

struct replay_bk_opts {
    uint32_t device; /* index among the backend's devices (replay_device_info.index) */
    uint32_t verify; /* enum replay_verify of the run: a backend may skip timestamp or
                        read-back setup it will not need */
    uint32_t timing; /* enum replay_timing: REPLAY_TIMING_NONE = no device timestamps */
    /* a perturbed replay (replay.h): the backend applies the kinds it executes (poison,
     * split) and counts what it changed into *pstats (zeroed by the engine per run) */
    struct replay_perturb perturb;
    struct replay__pstats *pstats;
};

/* What a backend changed in a perturbed run (replay_bk_opts.pstats), per run. */
struct replay__pstats {
    uint64_t poisoned_allocs, poisoned_bytes; /* poison: allocations filled with the pattern */
    uint64_t zeroed_allocs; /* poison: host-visible allocations kept at zero (see replay.h) */
    uint64_t split_dispatches, split_pieces; /* split: dispatches cut, vkCmdDispatchBase calls */
    uint64_t whole_dispatches;               /* split: dispatches left whole ... */
    uint64_t first_whole_seq;                /* ... the first of them (UINT64_MAX: none) */
    char first_whole_why[160];               /* ... and why ("its shader reads NumWorkgroups") */
};

/* The seeded generator perturbations draw from (splitmix64): the same seed, the same choices. */
uint64_t replay__rand(uint64_t *state);

/* ---- the order perturbation (replay_perturb.c) -------------------------------------------- */

/* A window of nodes the graph delivered, handed on in a seeded order that keeps every edge:
 * the next node is drawn among those whose predecessors were all handed on. Nodes are copied
 * (op, accesses, payload, edges); each gets a token as its val, and its edges' from_val are
 * turned back into the val emit gave the predecessor when it is handed on. */
struct replay__reorder;
int replay__reorder_create(uint64_t seed, uint32_t window,
                           int (*emit)(void *ctx, struct sched_node *n), void *ctx,
                           struct replay__reorder **out);
/* Takes node n (valid during the call only); may hand on others. emit's status, or < 0. */
int replay__reorder_add(struct replay__reorder *ro, struct sched_node *n);
/* Hands on every node still held, in a seeded order. */
int replay__reorder_flush(struct replay__reorder *ro);
/* Nodes handed on before a node the graph had delivered earlier (out of delivery order). */
uint64_t replay__reorder_moved(const struct replay__reorder *ro);
void replay__reorder_destroy(struct replay__reorder *ro); /* NULL accepted */

/* What the engine asks for one op. */
enum replay_x_flags {
    REPLAY_X_UNTIMED = 1u << 0, /* fast-forward: no device timestamps needed */
    REPLAY_X_OUTPUTS = 1u << 1, /* report the bytes of its WRITE accesses as they were right
                                   after it ran (verify op) */
    REPLAY_X_READ = 1u << 3,    /* HOST_READ: report the bytes of its READ accesses */
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
    /* After drain: writes len bytes from src into [off, off+len) of a resource (restoring a
     * snapshot or a trimmed trace's initial contents); complete when it returns. NULL: the
     * backend cannot, and range replays run their whole slice instead. */
    int (*write)(void *be, uint64_t resource, uint64_t off, uint64_t len, const void *src);
    /* Of the ops that create, bind or destroy objects (allocations, frees, streams, API state
     * markers), those this backend needs to have run before later ops, whether or not the
     * range's slice includes them: 1 to run, 0 for one it ignores (a marker of API state it
     * rebuilds itself). Static: no device needed. NULL: all of them. */
    int (*state_op)(const struct sbt_op *op);
    /* End of run: destroys what the trace's ops created (memory, buffers, sets, ...). */
    void (*reset)(void *be);
    void (*close)(void *be); /* NULL accepted */
};

/* ========================================================================================== */
/* Snapshots and restores (replay_snap*.c, replay_trim_state.c, replay_sidecar.c)             */
/* ========================================================================================== */

/* One run's snapshot machinery: the live allocations (with chunk hashes and what was written
 * since the last snapshot), the sidecar being written, the restore points (a sidecar snapshot,
 * a trimmed trace's initial states) and the trim capture. The engine calls _before() ahead of
 * every op it gives the graph and _executed() for every op it executed. */
struct replay__snap;
struct replay__snap_cfg {
    sbt_reader *r;
    const struct replay_opts *o; /* snapshot_*, state_out, source_path */
    const struct replay_backend *bk;
    void *be;
    struct replay_result *out;
    uint64_t lo, hi; /* the ops the run covers */
    /* the sidecar snapshot to restore (state index, or -1) and the bytes to restore */
    sbt_reader *snaps;
    int64_t snap_i;
    const struct sbt_access *needs;
    uint64_t n_needs;
    /* state_out: the bytes the range reads at range_first */
    uint64_t range_first;
    const struct sbt_access *trim_needs;
    uint64_t n_trim_needs;
};
int replay__snap_create(const struct replay__snap_cfg *cfg, struct replay__snap **out);
/* Start of a run: no live allocations; restore points from the start. */
void replay__snap_rewind(struct replay__snap *s, uint32_t run);
/* Before op x goes to the graph; quiescent = every op given to the graph so far was executed
 * or skipped (none is held back). Takes a due snapshot, restores a due state, or captures the
 * trim state. 0 to go on, 1 to stop the run (trim), < 0 on failure. */
int replay__snap_before(struct replay__snap *s, const struct sbt_op *x, int quiescent);
/* After the backend executed op (not when it refused it): allocations, frees, written chunks. */
int replay__snap_executed(struct replay__snap *s, const struct sbt_op *op);
/* End of the runs: closes the sidecar (ok) or removes it (!ok). A sidecar kept records the
 * provenance of its bytes: the device and driver that computed them and the verification of
 * the replay that took them (snapshot.device, snapshot.driver, snapshot.verified). */
int replay__snap_finish(struct replay__snap *s, int ok, const char *device, const char *driver,
                        const char *verified);
/* Where the stored bytes of src came from, in a sentence (into buf[n]): for a sidecar, "device
 * D, driver V; that replay: verified: ..."; for a trimmed trace's initial contents the same of
 * the replay that read them (its trim.* metadata). */
const char *replay__provenance(sbt_reader *snaps, char *buf, size_t n);
void replay__snap_destroy(struct replay__snap *s); /* NULL accepted */

/* ---- inside the snapshot machinery (replay_snap*.c, replay_trim_state.c) ----------------- */

struct replay__live { /* an allocation live in the run */
    uint64_t resource, size;
    uint64_t n_chunks;
    sbt_hash *hash; /* per chunk: its blob, where not dirty */
    uint8_t *dirty; /* bit per chunk: written since its hash was taken */
};

struct replay__point { /* a state to restore when the run reaches seq */
    uint64_t seq;
    sbt_reader *src;
    uint64_t state_i;
    int whole;                      /* every chunk the state holds (initial contents) */
    const struct sbt_access *needs; /* else these bytes only */
    uint64_t n_needs;
};

struct replay__snap {
    struct replay__snap_cfg c;
    uint32_t chunk; /* bytes per chunk: snapshots, dirty bits and the trim state */
    int taking;     /* snapshots are written in this run */
    uint32_t run;
    /* live allocations, sorted by resource */
    struct replay__live *lv;
    size_t n_lv, cap_lv;
    /* the sidecar */
    sbt_writer *w;
    uint64_t next_op, next_ns, t0;
    uint32_t i_at;
    uint64_t n_seen; /* ops seen (candidates for every_ops) */
    /* restore points, by seq */
    struct replay__point *pt;
    size_t n_pt, cap_pt, i_pt;
    int trim_done;
    uint8_t *buf;
    size_t cap_buf;
};

/* replay_snap.c. SBT_ENOMEM with the snapshots' message. */
int replay__snap_nomem(void);
/* Makes room for need elements of elem bytes in *p (capacity *cap, doubled): 0 or SBT_ENOMEM. */
int replay__snap_grow(void **p, size_t *cap, size_t need, size_t elem);
/* The run's scratch buffer, at least n bytes (valid until the next call); NULL when out of
 * memory. */
uint8_t *replay__snap_scratch(struct replay__snap *s, size_t n);
/* The live allocation res, or NULL. */
struct replay__live *replay__snap_live(struct replay__snap *s, uint64_t res);

/* replay_snap_take.c. 1 if a snapshot is due before op x. */
int replay__snap_due(const struct replay__snap *s, const struct sbt_op *x);
/* Drains the device, writes a snapshot before op x into the sidecar (reading back only the
 * chunks written since the last one) and moves the schedule past x. */
int replay__snap_take(struct replay__snap *s, const struct sbt_op *x);

/* replay_snap_restore.c. Drains the device and writes p's bytes into the live allocations. */
int replay__snap_restore(struct replay__snap *s, const struct replay__point *p);
/* The bytes and allocations restoring snapshot i of snaps for the slice's needs would write,
 * added to plan->restore_*; SBT_ECORRUPT naming the sidecar, the snapshot and the resource
 * when it cannot provide one. */
int replay__snap_cover(sbt_reader *snaps, int64_t i, const struct sched_slice *sl,
                       struct replay_plan *plan);

/* replay_trim_state.c. Drains the device and writes to opts.state_out, as a STATE before op
 * x, the chunks holding the bytes the range reads (cfg.trim_needs). */
int replay__trim_state(struct replay__snap *s, const struct sbt_op *x);

/* replay_sidecar.c. Creates the sidecar of snapshots at path for the trace r, its metadata
 * tying it to r (fingerprint, source_path, chunk bytes). On failure *out = NULL and nothing
 * is left at path. */
int replay__sidecar_create(const char *path, sbt_reader *r, const char *source_path, uint32_t chunk,
                           sbt_writer **out);
/* Closes w (ok) or abandons it (!ok); removes path unless it was closed whole. */
int replay__sidecar_close(sbt_writer *w, const char *path, int ok);

/* ========================================================================================== */
/* Range plans (replay_plan.c)                                                                */
/* ========================================================================================== */

/* The range's first op, the snapshot to restore and the slice to run (replay_plan's work):
 * slice is computed with the snapshot as floor (collect = 1, range_outputs = 1); *snap_i is
 * the snapshot's index in snaps or -1. full: also the slice from the trace start (plan). */
int replay__plan(sbt_reader *r, const struct sbt_range *range, sbt_reader *snaps, int full,
                 struct replay_plan *plan, struct sched_slice *slice, int64_t *snap_i);

/* 1 if a range replay with backend bk runs op before the range whatever the slice says:
 * replay_op_is_state's kinds that bk->state_op keeps. */
int replay__is_state(const struct replay_backend *bk, const struct sbt_op *op);

/* ========================================================================================== */
/* Backends                                                                                   */
/* ========================================================================================== */

/* Built-in backends. replay__cuda_backend is defined by replay_cuda.c when that is built; the
 * engine tolerates its absence (weak reference). */
extern const struct replay_backend replay__vk_backend;
extern const struct replay_backend replay__cuda_backend __attribute__((weak));

/* The backend for an API, or NULL. */
const struct replay_backend *replay__backend_for_api(uint32_t api);
const struct replay_backend *replay__backend_by_name(const char *name);

#endif /* REPRISE_REPLAY_INT_H */
