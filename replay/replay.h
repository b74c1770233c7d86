/*
 * replay/replay.h — full replay of a trace on a device: the engine that walks the scheduler's
 * dependency graph and drives a backend (Vulkan, CUDA, or a test backend), measures per-op
 * timings, digests what each op wrote, compares with what the capture recorded, and writes the
 * result as an .sbt with the source's seq numbers.
 *
 * Dry runs are not here: the scheduler (scheduler/sched.h) is the one way to dry-run.
 *
 * What a run does (replay_run):
 *   1. Opens the backend's device (--device N) and checks that it can replay the trace
 *      (queue families, features, memory types): REPLAY_ENODEV when it cannot.
 *   2. Prepares the tables (programs, kernels / pipelines) untimed.
 *   3. Walks the graph (sched_graph_run) and hands each selected op to the backend in that
 *      topological order. With a range, the ops executed are: the state ops before the range's
 *      end (allocations, frees, object creation), the scheduler's backward slice of the range
 *      (sched_slice_compute) executed untimed ("fast-forward"), then, after the device drained,
 *      the range itself, timed and verified.
 *   4. Verification (opts.verify): END digests what the program read back (HOST_READ ops);
 *      SUBMIT also digests, per submission, the bytes its ops wrote; OP digests each device op's
 *      written ranges right after it ran (each op's output read exactly once). A digest is the
 *      XXH3-128 of the op's written (for HOST_READ: read) ranges in access order, as the capture
 *      computes it, so the two compare; a difference is a mismatch at that op.
 *   5. Errors are per op ("op 812: vkCmdDraw is not supported", "op 40: blob ...: hash
 *      mismatch"): the op is skipped, the run goes on, the error is in the result.
 *
 * Before anything reaches a device (replay_preflight): an incomplete trace (sbt_info.complete
 * = 0: unmodelled calls that affect replay, a capture that stopped recording, a writer that
 * did not finish) is refused with REPLAY_EINCOMPLETE naming what it lacks
 * (sbt_reader_incomplete_why: the calls with their counts and first ops), and a trace whose
 * dependency graph has error findings (cycles, waits nothing satisfies, use after free, ops the
 * capture marked unsupported, ...) up to the range's end with REPLAY_EGRAPH naming the first
 * ones; opts.allow_incomplete replays them anyway, and the result trace then carries the
 * reason (it is marked incomplete itself, so whatever reads it says so).
 *
 * The result records the replay's regime in metadata, which timing comparisons check
 * (checker/chk.h): replay.verify (none|end|submit|op), replay.timing (op|none), replay.device
 * and replay.driver (as the backend reports them), replay.env (driver settings from the
 * environment that change timings: LP_NUM_THREADS, CUDA_LAUNCH_BLOCKING; "none"),
 * replay.backend; and replay.of, replay.run,
 * replay.range_seq, replay.host.
 *
 * Snapshots (opts.snapshot_out): a full replay writes the contents of the live allocations at
 * quiescent points (op boundaries where the graph holds nothing back, after draining the
 * device) into a sidecar .sbt of STATE records (FORMAT.md 5a), each allocation in chunks whose
 * blobs are deduplicated by content: what did not change since the last snapshot is not read
 * back again and costs no new blob. A range replay given the sidecar (opts.snapshots) restores,
 * at the latest snapshot at or before the range, only the bytes the rest of the run reads (the
 * scheduler's slice with that snapshot as its floor), then executes the slice after it: the
 * state costs bytes, not ops. replay_plan says what a range replay will do, without a device.
 * A trace whose header has SBT_FEATURE_INITIAL_STATE (a trimmed trace) carries STATE records
 * that every replay of it writes into the allocations when it reaches their seq.
 *
 * Memory: per executed op (the range, the state ops and the slice it runs), not per op of the
 * trace prefix; the graph pass over the prefix keeps only the scheduler's live state.
 *
 * Conventions as format/sbt.h: 0 / counts on success, a negative status on failure with a
 * one-line message in replay_errmsg() (thread-local). Statuses are the SBT_E* codes plus the
 * REPLAY_E* codes below. One thread per run; separate runs are independent.
 */
#ifndef REPRISE_REPLAY_H
#define REPRISE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "format/sbt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Statuses beyond SBT_E* (which keep their meaning: SBT_ECORRUPT is bad input, ...). */
#define REPLAY_STATUS_MAP(X)                                                         \
    X(ENODEV, -32, "no device or driver can replay this trace")                      \
    X(EUNSUPPORTED, -33, "the trace holds an op or object replay does not support")  \
    X(EDEVICE, -34, "the device failed (lost, out of memory, API error)")            \
    X(EINCOMPLETE, -35, "the trace is incomplete: a replay of it cannot be trusted") \
    X(EGRAPH, -36, "the trace's dependency graph has errors")                        \
    X(EDIFFERS, -37, "the replay that would produce stored contents did not reproduce the capture")

enum replay_status {
#define REPLAY__ENUM(name, val, msg) REPLAY_##name = val,
    REPLAY_STATUS_MAP(REPLAY__ENUM)
#undef REPLAY__ENUM
};

/* Message of the last failure on this thread. Never NULL. */
const char *replay_errmsg(void);
/* Static description of a status, SBT_E* included. Never NULL. */
const char *replay_strerror(int status);

enum replay_verify {
    REPLAY_VERIFY_NONE = 0, /* no digests */
    REPLAY_VERIFY_END = 1,  /* what the program read back (HOST_READ) */
    /* 2 was "submit", which promised per-submission digests and read each op's outputs right
     * after it ran, as op does: removed rather than kept as a second name for op */
    REPLAY_VERIFY_OP = 3, /* + per device op: its written ranges, right after it ran */
};
/* "none", "end", "op" <-> enum; parse returns -1 for an unknown name. */
const char *replay_verify_name(uint32_t v);
int replay_verify_parse(const char *s);

/* ========================================================================================== */
/* Perturbed replays                                                                          */
/* ========================================================================================== */

/* A perturbed replay changes what the program's own synchronisation leaves free to change, and
 * nothing else, so that a correct program gives the same outputs and one that relies on what a
 * driver happens to do does not. Each is reproduced exactly by its kind and seed:
 *   poison:S   fresh device memory starts filled with a 32-bit pattern chosen by S (a
 *              signalling-NaN bit pattern) instead of zeros: Vulkan memory the host never
 *              writes or reads through a mapping (only device commands, all recorded,
 *              initialise it) and CUDA device allocations (cuMemAlloc, pools, pitch, VMM).
 *              Mapped memory keeps its zeros: the capture records host writes into it against
 *              a shadow that starts at zero (a zero written over a zero is left out). What the
 *              trace's uploads, fills and stored contents write overwrites the pattern as
 *              before. Output words that still hold the pattern (bytes of a kernel's bound
 *              range it never wrote) are digested as the zeros a plain replay has there, so
 *              only a value computed from, or derived from, bytes nothing wrote differs.
 *   split:S    each dispatch's workgroups run in an order chosen by S: the grid is cut into
 *              pieces issued as vkCmdDispatchBase calls in a permuted order (workgroup ids
 *              stay as they were). A dispatch whose shader reads NumWorkgroups (which would
 *              see a piece's count) or that is indirect is left whole, and counted.
 *   threads:S  the driver's thread-count knob (lavapipe: LP_NUM_THREADS = 1 + S % 4) for
 *              the run; refused on a driver that has none reprise knows.
 *   order:S    among the ops the dependency graph leaves unordered (other streams, host
 *              threads, whole submissions), a seeded choice of the next one, within a window
 *              of ops; the edges the graph gives are all kept.
 *   declared:S only the program's own synchronisation (the declared-order graph, as
 *              REPLAY_ORDER_DECLARED: barriers, events, semaphores, fences, stream order)
 *              plus order:S over what it leaves unordered: a missing barrier can then let two
 *              dependent ops run the other way round. A trace without declared order (an
 *              import) is refused.
 * A divergence only a perturbation exposes means, by kind (replay.perturb_class): race
 * (order, declared), order-dependence (split, threads), uninitialised-read (poison). */
enum replay_perturb_kind {
    REPLAY_PERTURB_NONE = 0,
    REPLAY_PERTURB_POISON = 1,
    REPLAY_PERTURB_SPLIT = 2,
    REPLAY_PERTURB_THREADS = 3,
    REPLAY_PERTURB_ORDER = 4,
    REPLAY_PERTURB_DECLARED = 5,
};
struct replay_perturb {
    uint32_t kind; /* enum replay_perturb_kind */
    uint64_t seed;
};
/* "KIND:SEED" (SEED a whole number, default 1 when ":SEED" is left out) -> *out; SBT_EINVAL
 * with a message naming the kinds otherwise. */
int replay_perturb_parse(const char *s, struct replay_perturb *out);
/* "poison", "split", "threads", "order", "declared"; "none"; "?" if unknown. */
const char *replay_perturb_name(uint32_t kind);
/* The finding class a divergence under this kind is: "race", "order-dependence",
 * "uninitialised-read" ("" for NONE). */
const char *replay_perturb_class(uint32_t kind);
/* The 32-bit word poison:seed fills memory with. */
uint32_t replay_perturb_poison_word(uint64_t seed);

/* ========================================================================================== */
/* Devices                                                                                    */
/* ========================================================================================== */

struct replay_device_info {
    uint32_t api;   /* enum sbt_api */
    uint32_t index; /* what --device takes */
    char name[256];
    char driver[256]; /* driver name and version as the API reports them */
    uint32_t vendor_id, device_id;
    uint32_t api_version;
    char type[32]; /* "integrated", "discrete", "cpu", ... */
};

/* Devices of one API visible here (api = SBT_API_VULKAN / SBT_API_CUDA). Fills up to max
 * entries of out and returns how many there are (may exceed max), or REPLAY_ENODEV with a
 * message saying why none can be seen ("no Vulkan loader", "libcuda.so.1 not found"). */
int replay_devices(uint32_t api, struct replay_device_info *out, uint32_t max);

/* ========================================================================================== */
/* A replay                                                                                   */
/* ========================================================================================== */

/* What the engine reports per executed op (opts.on_op), in seq order after each run. */
struct replay_op {
    uint64_t seq;
    uint32_t kind; /* enum sbt_op_kind */
    uint32_t run;  /* 0-based */
    int untimed;   /* executed as fast-forward (outside the range) */
    int has_dev_time;
    uint64_t dev_begin, dev_end;   /* ns on the replay host's CLOCK_MONOTONIC */
    uint64_t host_begin, host_end; /* ns, same clock: when the engine issued / completed it */
    int has_digest;
    sbt_hash digest; /* replay digest of its outputs (HOST_READ: of what it read) */
    int has_captured;
    sbt_hash captured; /* the capture's digest of the same op */
    int mismatch;      /* has_digest && has_captured && they differ */
    const char *error; /* NULL, or the op's error message (valid during the callback) */
};

struct replay_backend; /* the backend interface: replay/replay_int.h */

struct replay_opts {
    size_t sz;                     /* = sizeof(struct replay_opts); set by REPLAY_OPTS() */
    const char *backend;           /* "vulkan", "cuda"; NULL = from the trace's device API */
    uint32_t device;               /* device index among the backend's devices */
    uint32_t verify;               /* enum replay_verify; 0 = none */
    uint32_t runs;                 /* 0 = 1 */
    const struct sbt_range *range; /* NULL = the whole trace */
    const char *out_path;          /* result .sbt (run k > 1 of several: <stem>.<k>.sbt); NULL */
    const char *dump_dir;          /* write read-back bytes (and at OP, outputs) here; NULL */
    const char *source_path;       /* recorded as replay.of in the result; NULL = unknown */
    /* Called per executed op after each run, in seq order. */
    void (*on_op)(void *ctx, const struct replay_op *op);
    void *ctx;
    /* Tests: a backend to use instead of the built-in ones (replay/replay_int.h). */
    const struct replay_backend *backend_impl;
    /* Progress (ops done of total) now and then; NULL for none. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    /* Device timestamps around each timed op: REPLAY_TIMING_OP (0, default) or
     * REPLAY_TIMING_NONE (host times only: on lavapipe each timestamp drains the queue). */
    uint32_t timing;
    /* Replay an incomplete trace, or one whose graph has errors, anyway (see above). */
    int allow_incomplete;
    /* Snapshots written by this (full, rangeless) replay into the sidecar snapshot_out: at the
     * first quiescent op boundary at or after every snapshot_every_ops ops, every
     * snapshot_every_ns of trace time, and each seq of snapshot_at (sorted); 0 / NULL = none
     * of that kind. snapshot_chunk: bytes per hashed chunk of an allocation (0 = 64 KiB). */
    const char *snapshot_out;
    uint64_t snapshot_every_ops, snapshot_every_ns;
    const uint64_t *snapshot_at;
    uint32_t n_snapshot_at;
    uint32_t snapshot_chunk;
    /* A range replay restores the latest snapshot of this sidecar at or before the range
     * (replay_snapshots_open checked that it belongs to the trace) and executes only the slice
     * after it. NULL: the whole slice (as without snapshots). */
    sbt_reader *snapshots;
    /* reprise trim: the state the range reads at its first op is written into state_out as a
     * STATE record (chunks of snapshot_chunk bytes, only those the range reads), after the
     * state ops and the slice ran; the run then stops before the range. Needs a range. */
    sbt_writer *state_out;
    /* Where barriers and waits between conflicting ops come from: REPLAY_ORDER_ACCESSES (0,
     * default): every pair of conflicting accesses is ordered, whatever the program declared;
     * REPLAY_ORDER_DECLARED: only the pairs the program's own synchronisation orders (its
     * barriers, events, semaphores, fences, stream order), so a pair it leaves unordered runs
     * as a GPU would run it (a trace without declared order is refused). */
    uint32_t order;
    /* A perturbed replay (see Perturbed replays): kind NONE = a plain one. Not with a range,
     * snapshots or trim (REPLAY_EUNSUPPORTED... SBT_EINVAL naming it). The result records it as
     * replay.perturb (KIND:SEED), replay.perturb_class and replay.perturb_what. */
    struct replay_perturb perturb;
};
enum replay_order { REPLAY_ORDER_ACCESSES = 0, REPLAY_ORDER_DECLARED = 1 };
enum replay_timing { REPLAY_TIMING_OP = 0, REPLAY_TIMING_NONE = 1 };
#define REPLAY_OPTS(...) ((struct replay_opts){.sz = sizeof(struct replay_opts), __VA_ARGS__})

/* Per run. Times in ns of wall clock. */
struct replay_run_stats {
    uint64_t wall_ns;    /* whole run: fast-forward + range (prepare excluded) */
    uint64_t prepare_ns; /* recreating programs and pipelines */
    uint64_t ff_ns;      /* fast-forward (0 without a range) */
    uint64_t range_ns;   /* the range (the whole trace without one) */
    uint64_t device_ns;  /* sum of measured device time of the range's timed ops */
    /* Time this process's threads spent runnable but waiting for a CPU during the run (Linux
     * schedstat run delay, summed over threads): other load on the machine. UINT64_MAX when
     * the system does not say. */
    uint64_t cpu_wait_ns;
};

struct replay_result {
    char backend[16];
    char device[256];
    char driver[256]; /* the device's driver name and version, and what replay left out */
    uint32_t device_index;
    uint32_t runs;
    /* what was executed (per run) */
    uint64_t range_ops, range_upload_bytes; /* the range (whole trace without a range) */
    uint64_t slice_ops, slice_upload_bytes; /* fast-forward: state ops + backward slice */
    uint64_t skipped_ops;                   /* ops neither in the range nor needed by it */
    /* verification, over all runs */
    uint64_t n_digests;  /* digests computed */
    uint64_t n_compared; /* ... with a captured digest to compare with */
    uint64_t n_mismatch;
    uint64_t first_mismatch; /* seq, or UINT64_MAX */
    uint64_t n_run_compared; /* digests compared between runs (runs > 1) */
    uint64_t n_run_mismatch; /* ops whose digests differ between runs (runs > 1) */
    uint64_t first_run_mismatch;
    /* errors, over all runs */
    uint64_t n_errors;
    uint64_t first_error; /* seq, or UINT64_MAX */
    char first_error_msg[512];
    int first_error_status; /* what kind of error: SBT_ECORRUPT, REPLAY_EUNSUPPORTED, ... */
    /* "run K: why" when the device or driver failed during run K (REPLAY_EDEVICE: lost, an API
     * error, a pipeline that does not compile): that run's result is written up to there, with
     * the error, and no later run is made; "" otherwise */
    char device_failed[512];
    uint64_t n_dumped; /* files written to dump_dir */
    /* replayed with allow_incomplete although: */
    int incomplete; /* the trace is incomplete (why: incomplete_why) */
    char incomplete_why[512];
    uint64_t n_graph_errors; /* error findings of the dependency graph */
    char first_graph_error[512];
    struct replay_run_stats *run; /* [runs], malloc'd */
    /* snapshots (per run) */
    uint64_t restore_seq;    /* the snapshot restored; UINT64_MAX = none (the slice) */
    uint64_t restore_bytes;  /* bytes written into allocations from it */
    uint32_t restore_allocs; /* allocations they went into */
    uint64_t n_snapshots;    /* taken for snapshot_out */
    /* "" when the sidecar was kept; else why it was not: a replay that did not verify cleanly
     * (replay_verdict) writes none, so no later range replay or trim rests on its bytes */
    char snapshots_dropped[700];
    /* the snapshot restored (restore_seq): the device, driver and verification of the replay
     * that took it, "device D, driver V; that replay: verified: ..." */
    char restore_from[700];
    uint64_t snapshot_read_bytes;       /* read back from the device for them */
    uint64_t snapshot_new_bytes;        /* stored as new blobs (the rest was deduplicated) */
    uint64_t snapshot_ns;               /* time spent on them (in wall_ns) */
    uint64_t state_bytes, state_chunks; /* state_out */
    /* opts.perturb: "KIND:SEED" ("" for a plain replay) and what it changed, in a sentence
     * ("poisoned 5 allocations (1.2 MiB) with 0x7fa3c2d1"; "split 3 dispatches into 40
     * pieces; 1 left whole: op 12 reads NumWorkgroups") */
    char perturb[48];
    char perturb_what[600];
};

/* What a replay proved. Every verdict of reprise follows one rule: no positive evidence, no
 * pass. "Verified" needs outputs compared (with the capture's digests or between runs) and all
 * equal, with no error; a replay that compared nothing is "not verified". */
enum replay_verdict {
    REPLAY_VERDICT_VERIFIED = 0,
    REPLAY_VERDICT_NOT_VERIFIED,  /* ran without error, compared nothing */
    REPLAY_VERDICT_DIFFERS,       /* an output differs from the capture or between runs */
    REPLAY_VERDICT_DEVICE_FAILED, /* the device or driver failed during the replay */
    REPLAY_VERDICT_ENVIRONMENT,   /* this device lacks what an op needs */
    REPLAY_VERDICT_BAD_TRACE,     /* the trace holds what replay cannot run */
};
/* The verdict of r (replayed at verify level verify), with why[n] saying it in a sentence. */
enum replay_verdict replay_verdict(const struct replay_result *r, uint32_t verify, char *why,
                                   size_t n);
/* "verified", "not verified", "differs", "device failed", "environment", "not replayable". */
const char *replay_verdict_name(enum replay_verdict v);

/* The driver settings from this process's environment that a result records as replay.env
 * ("LP_NUM_THREADS=0", or "none"). Returns buf. */
const char *replay_env_settings(char *buf, size_t cap);

/* The checks replay_run makes before it opens a device: 0 when r (over the range, NULL = all)
 * can be replayed; REPLAY_EINCOMPLETE or REPLAY_EGRAPH (or SBT_E* for a trace that cannot be
 * read) with the reason in replay_errmsg() otherwise. *n_graph_errors (may be NULL): the
 * graph's error findings. */
int replay_preflight(sbt_reader *r, const struct sbt_range *range, uint64_t *n_graph_errors);

/* What a range replay will do (replay_plan); no device needed. */
struct replay_plan {
    uint64_t range_first, range_last, range_ops; /* SCHED_NONE / 0 when the range is empty */
    int use_snapshot;                            /* restore a snapshot, then its slice */
    uint64_t snapshot_seq, snapshot_time;        /* the state before this op */
    uint64_t n_snapshots;                        /* in the sidecar (0 without one) */
    uint64_t restore_bytes;                      /* bytes written from the snapshot */
    uint32_t restore_allocs;                     /* allocations they go into */
    uint64_t slice_ops, slice_upload_bytes; /* executed before the range (after the snapshot) */
    uint64_t full_slice_ops, full_slice_upload_bytes; /* the slice from the trace start */
    uint64_t before_ops;                              /* ops before the range */
    char why[256]; /* when !use_snapshot: why not ("no snapshot at or before op 10259") */
};
/* The plan of a range replay of r (range: not NULL) with the sidecar snapshots (NULL: none):
 * the latest snapshot at or before the range's first op, the bytes to restore and the slice
 * after it, next to the slice from the trace start. 0, or < 0 with a message. */
int replay_plan(sbt_reader *r, const struct sbt_range *range, sbt_reader *snapshots,
                struct replay_plan *out);

/* The default sidecar of a trace: "<path without .sbt>.snap.sbt" (malloc'd), or NULL. */
char *replay_snapshots_path(const char *trace_path);
/* Opens the sidecar at path for the trace r: SBT_ECORRUPT when it holds snapshots of another
 * trace ("FILE: snapshots of another trace (...)"), SBT_EIO / SBT_ECORRUPT / SBT_EVERSION when it
 * cannot be read, with a message naming the file. */
int replay_snapshots_open(sbt_reader *r, const char *path, sbt_reader **out);
/* 1 if the op creates, binds or destroys an object later ops may name (allocations, frees,
 * streams, API state markers): a range replay runs such ops before the range whatever the
 * slice says (those of them its backend needs). */
int replay_op_is_state(const struct sbt_op *op);

/* ========================================================================================== */
/* Trim: a self-contained trace of a range                                                    */
/* ========================================================================================== */

/* How the state before the range got into the trimmed trace. */
enum replay_trim_mode {
    REPLAY_TRIM_DEVICE = 1,   /* read on a device after replaying the slice (or restoring a
                                 snapshot and replaying the slice after it) */
    REPLAY_TRIM_SNAPSHOT = 2, /* no device: the snapshot's chunks the rest reads, plus the ops of
                                 the slice after the snapshot */
    REPLAY_TRIM_SLICE = 3,    /* no device, no snapshot: the slice's ops, no stored contents */
};

struct replay_trim_opts {
    size_t sz;               /* = sizeof(struct replay_trim_opts); REPLAY_TRIM_OPTS() */
    const char *backend;     /* as replay_opts */
    uint32_t device;         /* device index */
    int no_device;           /* 1: do not try a device (keep the slice, or use the snapshot) */
    uint32_t chunk_bytes;    /* granularity of the stored contents; 0 = 4 KiB */
    const char *source_path; /* recorded as trim.of */
    const struct replay_backend *backend_impl; /* tests */
};
#define REPLAY_TRIM_OPTS(...) \
    ((struct replay_trim_opts){.sz = sizeof(struct replay_trim_opts), __VA_ARGS__})

struct replay_trim_result {
    uint32_t mode;                    /* enum replay_trim_mode */
    char why[512];                    /* why no device was used (modes 2 and 3), else "" */
    char device[256];                 /* mode 1: the device */
    uint64_t range_first, range_last; /* seqs */
    uint64_t range_ops;               /* ops of the range written */
    uint64_t state_ops;               /* object creation / lifetime ops written */
    uint64_t slice_ops;               /* ops of the slice written (sync ops the range waits for,
                                         and in modes 2 and 3 the data slice) */
    uint64_t ops;                     /* ops written in all */
    uint64_t state_seq;               /* the initial contents' point (UINT64_MAX: none) */
    uint64_t state_bytes, state_chunks;
    uint64_t bytes;     /* size of the written file */
    char verified[700]; /* the verdict of the replay the contents come from ("verified: ...",
                           "not verified: nothing compared ..."), or of the snapshot's */
};

/* Writes to out_path a trace of the ops of range (not NULL) of r that replays on its own to the
 * same outputs: r's tables; the ops that create what the range names; the contents the range
 * reads at its first op, as an initial STATE (SBT_FEATURE_INITIAL_STATE), read on a device (or
 * taken from the sidecar snapshots when there is no device); the range's ops. Every op keeps
 * its seq. Without a device and a snapshot the slice's ops are kept instead of contents.
 * 0, or < 0 with a message (REPLAY_ENODEV only when the fallback failed too; REPLAY_EDIFFERS
 * when the replay that reads the contents went wrong: an output differs from the capture's,
 * or the device failed); no partial file is left behind. The trimmed trace records where its
 * contents came from (trim.device, trim.driver, trim.verified: that replay's verdict). */
int replay_trim(sbt_reader *r, const struct sbt_range *range, sbt_reader *snapshots,
                const char *out_path, const struct replay_trim_opts *opts,
                struct replay_trim_result *res);

/* Replays r (borrowed) per opts. Returns 0 when the replay ran (op errors, mismatches and a
 * device that failed during a run are in *out, not in the status: replay_verdict says what it
 * proved), or < 0 when it could not start (REPLAY_EINCOMPLETE, REPLAY_EGRAPH, REPLAY_ENODEV,
 * REPLAY_EDEVICE when the device could not be opened, SBT_E*). *out is filled
 * either way (zeroed first); free it with replay_result_free. */
int replay_run(sbt_reader *r, const struct replay_opts *opts, struct replay_result *out);
void replay_result_free(struct replay_result *res); /* NULL accepted */

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_REPLAY_H */
