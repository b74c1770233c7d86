/*
 * scheduler/sched.h — the dependency graph of a trace and what is computed from it:
 * validation, a simulated ("dry-run") timeline, backward slices of a range, analysis (kernel
 * table, critical path, utilisation, concurrency, idle gaps), a Graphviz DOT writer, and the
 * races the program's own synchronisation allows (from its declared order, not its accesses;
 * the graph can also be built in that order: sched_graph_opts.order).
 *
 * The graph is never held whole. sched_graph reads ops in seq order in one streaming pass and
 * keeps only live state: the last op of each stream and host thread, the latest record of each
 * event, the pending signals of each fence/semaphore, and per resource a sorted array of byte
 * intervals with their last writer and the readers since (one per stream). Each op becomes a
 * node with its incoming edges (predecessor seq + reason) and is handed to a visitor; the
 * consumers below (simulation, analysis, DOT, "why") are visitors. Memory is proportional to
 * that live state, not to the trace.
 *
 * Order of delivery. Nodes arrive in a topological order: seq order, except that a wait whose
 * signal comes later in seq order (Vulkan allows wait-before-signal on timeline semaphores) is
 * held back, with everything that depends on it, until the signal arrives; its edge from the
 * later signal carries SCHED_EDGE_LATE. Cycles can only arise that way; they and waits nothing
 * satisfies are reported as findings at the end of the pass (or when more than max_held_ops are
 * held), and the nodes involved are then delivered with the offending edges marked
 * SCHED_EDGE_BROKEN, so every op reaches the visitor exactly once.
 *
 * Edges implied by others are left out: an access hazard from an earlier op of the same stream
 * (stream order implies it), and an edge from op P of stream A to an op of stream B when an
 * earlier op of B already waited for an op of A at or after P.
 *
 * Conventions (as format/sbt.h): functions return 0 or a count on success and a negative SBT_E*
 * status on failure, with a message in sched_errmsg(). On failure out-handles are NULL and
 * nothing leaks. Handles are used by one thread at a time. Seq numbers and times are those of
 * the trace (ns on the capture host clock).
 */
#ifndef REPRISE_SCHED_H
#define REPRISE_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format/sbt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Message of the last failure on this thread (thread-local, valid until the next failure). */
const char *sched_errmsg(void);
/* Allocation hook for tests (fail the N-th malloc). NULL restores the C library's. */
void sched_set_alloc_hooks(const struct sbt_alloc_hooks *hooks);

/* "no op" in seq fields */
#define SCHED_NONE UINT64_MAX

/* ========================================================================================== */
/* Edges                                                                                      */
/* ========================================================================================== */

/* Why one op must wait for another. X(name, short, description). */
#define SCHED_DEP_MAP(X)                                                     \
    X(STREAM, "stream", "stream order")                                      \
    X(HOST, "host", "issued by its host thread after this host op returned") \
    X(EVENT, "event", "event record -> wait")                                \
    X(SIGNAL, "signal", "fence/semaphore signal -> wait")                    \
    X(STREAM_SYNC, "stream-sync", "host waits for the stream to drain")      \
    X(DEVICE_SYNC, "device-sync", "host waits for the device to drain")      \
    X(ALLOC, "alloc", "allocation -> first use")                             \
    X(RAW, "raw", "read after write")                                        \
    X(WAR, "war", "write after read")                                        \
    X(WAW, "waw", "write after write")                                       \
    X(FREE, "free", "use -> free")

enum sched_dep {
    SCHED_DEP_NONE = 0,
#define SCHED__DEP_ENUM(name, s, d) SCHED_DEP_##name,
    SCHED_DEP_MAP(SCHED__DEP_ENUM)
#undef SCHED__DEP_ENUM
        SCHED_DEP__COUNT
};
const char *sched_dep_name(uint32_t reason); /* "raw"; "?" when unknown */
const char *sched_dep_desc(uint32_t reason); /* "read after write" */

enum sched_edge_flags {
    SCHED_EDGE_LATE = 1u << 0,   /* the predecessor comes later in seq order */
    SCHED_EDGE_BROKEN = 1u << 1, /* dropped: part of a cycle or of a wait never satisfied */
};

struct sched_edge {
    uint64_t from;        /* seq of the predecessor */
    uint64_t from_val;    /* the val the visitor gave the predecessor (0 for BROKEN edges) */
    uint32_t reason;      /* enum sched_dep */
    uint32_t from_stream; /* stream id of the predecessor */
    uint32_t flags;       /* enum sched_edge_flags */
    uint32_t sync_kind;   /* SIGNAL: enum sbt_sync_kind */
    uint64_t obj;         /* resource, event, fence/semaphore, stream or device id */
    uint64_t lo, hi;      /* hazards: first overlapping byte range [lo, hi) of resource obj;
                           * SIGNAL on a timeline: lo = value waited for, hi = value signalled */
};

/* One op with its incoming edges. */
struct sched_node {
    const struct sbt_op *op; /* valid during the visit only */
    const struct sched_edge *in;
    uint32_t n_in;
    uint64_t val; /* 0 on entry; whatever the visitor stores here is what later edges from this
                     node carry in from_val (the simulation stores the predicted finish time) */
    /* SCHED_ORDER_DECLARED: the earlier ops whose accesses conflict with this op's and that the
     * program's declared order leaves unordered with it (the race findings naming it second),
     * seqs, valid during the visit; NULL otherwise (and for ops delivered after being held) */
    const uint64_t *unordered;
    uint32_t n_unordered;
};

/* ========================================================================================== */
/* Validation findings                                                                        */
/* ========================================================================================== */

enum sched_severity { SCHED_NOTE = 0, SCHED_WARNING = 1, SCHED_ERROR = 2 };

/* X(name, severity, short name) */
#define SCHED_FINDING_MAP(X)                              \
    X(CYCLE, SCHED_ERROR, "cycle")                        \
    X(UNSATISFIED_WAIT, SCHED_ERROR, "unsatisfied-wait")  \
    X(BLOCKED, SCHED_ERROR, "blocked")                    \
    X(USE_AFTER_FREE, SCHED_ERROR, "use-after-free")      \
    X(DOUBLE_FREE, SCHED_ERROR, "double-free")            \
    X(OUT_OF_BOUNDS, SCHED_ERROR, "out-of-bounds")        \
    X(DESTROYED_STREAM, SCHED_ERROR, "destroyed-stream")  \
    X(UNKNOWN_STREAM, SCHED_ERROR, "unknown-stream")      \
    X(UNSUPPORTED, SCHED_ERROR, "unsupported")            \
    X(UNINIT_READ, SCHED_WARNING, "uninitialised-read")   \
    X(UNALLOCATED, SCHED_WARNING, "unallocated-resource") \
    X(EVENT_UNRECORDED, SCHED_WARNING, "event-unrecorded")

enum sched_finding_kind {
#define SCHED__F_ENUM(name, sev, s) SCHED_F_##name,
    SCHED_FINDING_MAP(SCHED__F_ENUM)
#undef SCHED__F_ENUM
        SCHED_F__COUNT
};
const char *sched_finding_name(uint32_t kind); /* "use-after-free" */
uint32_t sched_finding_severity(uint32_t kind);
const char *sched_severity_name(uint32_t severity); /* "note", "warning", "error" */

struct sched_finding {
    uint32_t kind;     /* enum sched_finding_kind */
    uint32_t severity; /* enum sched_severity */
    uint64_t seq;      /* the op it is about */
    uint64_t other;    /* the op it relates to (the free, the destroy, ...), or SCHED_NONE */
    const char *msg;   /* one line naming the ops, without severity prefix; valid in the call */
};

/* ========================================================================================== */
/* The graph                                                                                  */
/* ========================================================================================== */

struct sched_visitor {
    /* Called once per op, in topological order. Return 0 to go on, > 0 to stop the pass
     * early (sched_graph_add then returns that value), < 0 to fail it. */
    int (*node)(void *ctx, struct sched_node *n);
    /* Called per finding (at most max_findings_per_kind of each kind; the rest are counted). */
    void (*finding)(void *ctx, const struct sched_finding *f);
    void *ctx;
};

struct sched_graph_opts {
    size_t sz;                      /* = sizeof(struct sched_graph_opts); SCHED_GRAPH_OPTS() */
    uint64_t max_held_ops;          /* ops held back behind waits before giving up; 0 = 1M */
    uint32_t max_findings_per_kind; /* findings passed to the visitor per kind; 0 = 100 */
    int keep_implied;               /* 1: keep cross-stream edges implied by earlier ones */
    uint64_t max_events; /* events tracked; past it, those last recorded more than 4 x this many
                            ops ago are forgotten (a wait on one gets no edge); 0 = 256k */
    /* Where the edges between conflicting accesses come from (enum sched_order): every pair of
     * conflicting accesses (RAW/WAR/WAW edges, the default), or only the pairs the program's
     * declared order orders (barriers, events, semaphores, fences, submission and stream
     * order: sched_races_run's analysis, run alongside); a pair it leaves unordered gets no
     * edge (counted in n_undeclared) and is named in the node's unordered list. A trace that
     * records no declared order is refused (SBT_EVERSION). */
    uint32_t order;
};
enum sched_order { SCHED_ORDER_ACCESSES = 0, SCHED_ORDER_DECLARED = 1 };
#define SCHED_GRAPH_OPTS(...) \
    ((struct sched_graph_opts){.sz = sizeof(struct sched_graph_opts), __VA_ARGS__})

struct sched_graph_stats {
    uint64_t n_ops;                      /* ops added */
    uint64_t n_edges;                    /* edges delivered */
    uint64_t edges[SCHED_DEP__COUNT];    /* per reason */
    uint64_t findings[SCHED_F__COUNT];   /* per kind, all of them (not only those passed on) */
    uint64_t n_errors, n_warnings;       /* findings by severity */
    uint64_t max_held;                   /* most ops held back at once */
    uint64_t n_resources, peak_segments; /* resources seen; most byte intervals live at once */
    uint64_t n_undeclared; /* SCHED_ORDER_DECLARED: hazard edges left out (the program does not
                              order the two ops) */
};

typedef struct sched_graph sched_graph;

/* Creates a graph builder for the streams and devices of r (borrowed: it must outlive *out).
 * v is copied; v->node may be NULL (validation only). opts may be NULL. The initial contents
 * of a trimmed trace (its STATE records) count as written from their op on: a read of them is
 * no uninitialised read. */
int sched_graph_create(sbt_reader *r, const struct sched_graph_opts *opts,
                       const struct sched_visitor *v, sched_graph **out);
/* Adds the next op (ops must come in increasing seq order). Returns 0, or the visitor's
 * positive "stop" value, or < 0 on failure. The op is copied if it has to be held. */
int sched_graph_add(sched_graph *g, const struct sbt_op *op);
/* Ends the pass: reports cycles and waits never satisfied, and delivers the ops still held.
 * Returns 0, the visitor's stop value, or < 0. Call once. */
int sched_graph_finish(sched_graph *g);
const struct sched_graph_stats *sched_graph_stats(const sched_graph *g);
void sched_graph_destroy(sched_graph *g); /* NULL accepted */

/* One pass over the ops of r with seq < seq_end (SCHED_NONE: all), through create, add, finish.
 * stats may be NULL. Returns 0, the visitor's stop value, or < 0. */
int sched_graph_run(sbt_reader *r, uint64_t seq_end, const struct sched_graph_opts *opts,
                    const struct sched_visitor *v, struct sched_graph_stats *stats);

/* "Why does op seq wait?": its incoming edges, in a malloc'd array the caller frees (*n may be
 * 0). Runs the pass up to seq. SBT_ENOTFOUND if the trace has no op seq. */
int sched_why(sbt_reader *r, uint64_t seq, struct sched_edge **edges, uint32_t *n);
/* A shortest chain of edges by which op `to` waits for op `from` (from < to), in order from
 * `from`; 0 edges if `to` does not depend on `from`. Holds the edges of ops in [from, to]. */
int sched_why_path(sbt_reader *r, uint64_t to, uint64_t from, struct sched_edge **edges,
                   uint64_t **nodes, uint32_t *n);

/* ========================================================================================== */
/* Ranges                                                                                     */
/* ========================================================================================== */

/* 1 if op is in range (NULL = everything), else 0. */
int sched_range_contains(const struct sbt_range *range, const struct sbt_op *op);
/* Seq bounds [*lo, *hi) that hold every op of range, from the chunk index (a superset). */
int sched_range_bounds(const sbt_reader *r, const struct sbt_range *range, uint64_t *lo,
                       uint64_t *hi);

/* Recorded duration of an op, ns: device time if measured, else host time; 0 for ops that only
 * wait (syncs, waits, records, signals, markers, stream create/destroy): their waiting is what
 * the edges model. */
uint64_t sched_op_duration(const struct sbt_op *op);

/* ========================================================================================== */
/* Simulation and analysis (a visitor)                                                       */
/* ========================================================================================== */

struct sched_sim_opts {
    size_t sz;         /* = sizeof(struct sched_sim_opts); SCHED_SIM_OPTS() */
    int analysis;      /* 1: also kernel table, utilisation, concurrency, idle gaps */
    int critical_path; /* 1: keep 2 bytes per op of the range to rebuild the critical path */
    uint32_t max_critical_ops; /* critical path ops listed in the result; 0 = 1000 */
};
#define SCHED_SIM_OPTS(...) \
    ((struct sched_sim_opts){.sz = sizeof(struct sched_sim_opts), __VA_ARGS__})

/* One row of the kernel table: a kernel, or "[copy h2d]"-style rows for other timed ops. */
struct sched_kernel_row {
    const char *name; /* owned by the sim (or the reader's string table) */
    uint32_t kernel;  /* kernel id, 0 for non-kernel rows */
    uint64_t count;
    uint64_t total_ns, min_ns, max_ns;
    double mean_ns;
    uint32_t grid[3], block[3]; /* geometry of the first launch */
    uint32_t n_geoms;           /* distinct geometries seen (capped at 16) */
    uint64_t crit_ns;           /* time on the critical path */
};

struct sched_stream_row {
    uint32_t stream, device, kind;
    uint64_t n_ops;
    uint64_t busy_ns;           /* sum of recorded durations */
    uint64_t first_ns, last_ns; /* predicted start of first op, end of last op */
    uint64_t n_gaps, gap_ns, max_gap_ns, max_gap_at; /* idle gaps between ops */
};

struct sched_device_row {
    uint32_t device;
    uint64_t busy_ns; /* time at least one of its (non host-thread) streams is busy */
    uint64_t n_gaps, gap_ns, max_gap_ns, max_gap_at; /* idle gaps (none of its streams busy) */
};

struct sched_crit_op {
    uint64_t seq;
    uint32_t kind, stream, name, kernel;
    uint64_t start_ns, dur_ns; /* predicted */
};

struct sched_sim_result {
    uint64_t n_ops;          /* ops in the range */
    uint64_t n_timed;        /* ... with a duration > 0 */
    uint64_t makespan_ns;    /* predicted: end of the last op (the range starts at 0) */
    uint64_t captured_ns;    /* captured: from the earliest begin to the latest end in range */
    uint64_t captured_begin; /* absolute ns of that earliest begin */
    uint64_t total_busy_ns;  /* sum of durations */
    /* analysis */
    double mean_concurrency;  /* device-stream busy time / makespan */
    uint32_t max_concurrency; /* most device-stream ops running at once (predicted) */
    uint64_t max_concurrency_at;
    uint64_t late_intervals; /* timeline intervals that arrived after the sweep passed them */
    struct sched_kernel_row *kernels; /* sorted by total_ns, descending */
    uint32_t n_kernels;
    struct sched_stream_row *streams; /* by stream id; only streams with ops */
    uint32_t n_streams;
    struct sched_device_row *devices;
    uint32_t n_devices;
    /* critical path */
    uint64_t crit_n_ops;        /* ops on it */
    uint64_t crit_busy_ns;      /* sum of their durations (= makespan when edges have no latency) */
    struct sched_crit_op *crit; /* the first max_critical_ops of them, in order */
    uint32_t n_crit;
};

typedef struct sched_sim sched_sim;
/* range NULL = every op. r is borrowed. Ops outside the range are taken as done at time 0 and
 * pass their predecessors' finish times through (they are replayed by the slice). */
int sched_sim_create(sbt_reader *r, const struct sbt_range *range,
                     const struct sched_sim_opts *opts, sched_sim **out);
/* The node visitor: pass it as sched_visitor.node with ctx = the sim. */
int sched_sim_node(void *sim, struct sched_node *n);
/* After the pass: computes the result (sorting; the critical path, which re-reads the ops of
 * the range once to get their details). */
int sched_sim_finish(sched_sim *s);
const struct sched_sim_result *sched_sim_result(const sched_sim *s);
void sched_sim_destroy(sched_sim *s);
/* JSON object of the result ({"makespan_ns":..., "kernels":[...], ...}) onto f. */
int sched_sim_write_json(const sched_sim *s, const sbt_reader *r, FILE *f);

/* ========================================================================================== */
/* Backward slice                                                                             */
/* ========================================================================================== */

/* The minimal set of ops outside a range, earlier than the ops that need them, whose effects
 * the range reads: for every byte an op of range ∪ slice reads, its last writer before that op
 * and, since a kernel may write only part of its write ranges, every kernel that may have
 * written it since the last writer that is not a kernel (copy, fill, host write);
 * the latest ALLOC of each resource and STREAM_CREATE of each stream an op of range ∪ slice
 * touches; and for waits of the range, the latest EVENT_RECORD / SIGNAL (with a value >= the
 * one waited for, on timeline semaphores) before them.
 *
 * Computed backwards, one window of ops at a time (read forward, walked in reverse), with a
 * "needed bytes" interval set per resource: an op outside the range is in the slice iff it
 * writes a needed byte (or is a needed ALLOC/create/record/signal); then its writes leave the
 * needed set and its reads enter it. Time O(P · (a + log k)) for the P ops before the range's
 * end, a accesses per op and k intervals per resource; memory one window of ops plus the needed
 * intervals plus the result list (when collected). */
struct sched_slice_opts {
    size_t sz;           /* = sizeof(struct sched_slice_opts); SCHED_SLICE_OPTS() */
    int collect;         /* 1: fill seqs with the slice's ops */
    uint32_t window_ops; /* ops read per backward step; 0 = 65536 */
    /* A point where memory contents are known: a snapshot of the state before op floor
     * (<= the range's first op). Ops before it join the slice only as the EVENT_RECORD /
     * SIGNAL that a wait of the range needs (complete by then, but a replay's graph orders by
     * them); what is still needed when the walk reaches floor is returned in needs: the bytes
     * to restore. 0 = none (the walk goes to the trace start). */
    uint64_t floor;
    /* 1: kernels of the range read their write ranges as well. A replay that reads a kernel's
     * outputs back reads its whole write ranges, bytes it left untouched included, so their
     * earlier writers are needed to reproduce those outputs. */
    int range_outputs;
};
#define SCHED_SLICE_OPTS(...) \
    ((struct sched_slice_opts){.sz = sizeof(struct sched_slice_opts), __VA_ARGS__})

struct sched_slice {
    uint64_t range_ops;               /* ops in the range */
    uint64_t range_first, range_last; /* seqs of its first and last op (SCHED_NONE if empty) */
    uint64_t slice_ops, slice_upload_bytes;   /* the slice (H2D copies and host writes) */
    uint64_t before_ops, before_upload_bytes; /* everything before range_first (an empty
                                                 range: before its seq bound) */
    uint64_t uninit_bytes; /* bytes read by range ∪ slice that nothing wrote before */
    uint64_t *seqs;        /* collect: slice ops in increasing seq order (malloc'd) */
    uint64_t n_seqs;
    /* floor: the bytes still needed there (read by range ∪ slice, not written by an op of the
     * slice after floor): mode SBT_ACCESS_READ, sorted by resource then offset, disjoint
     * (malloc'd); need_bytes is their sum */
    struct sbt_access *needs;
    uint64_t n_needs, need_bytes;
};
int sched_slice_compute(sbt_reader *r, const struct sbt_range *range,
                        const struct sched_slice_opts *opts, struct sched_slice *out);
void sched_slice_free(struct sched_slice *s); /* frees seqs and needs; NULL accepted */

/* ========================================================================================== */
/* Races the program's own synchronisation allows (scheduler/sched_race.c)                    */
/* ========================================================================================== */

/* From the program's declared order alone (Vulkan pipeline barriers with their stage and access
 * masks, events, semaphores, fences, submission order, queue and device waits; CUDA stream
 * order, events, stream waits, synchronous calls and the legacy default stream's implicit
 * synchronisation), never from the accesses: every pair of ops whose accesses conflict
 * (overlapping bytes of one resource, one of them a write) that nothing declared orders, or
 * whose execution is ordered but whose write is not made available and visible (access masks).
 * A kernel's writes are may-writes, so each finding is a *possible* race until a replay
 * confirms it; findings never fail a gate by themselves.
 *
 * One streaming pass. Memory: per resource the byte intervals still live with at most 8
 * unordered accesses each, a clock of (streams + 1) x 2 entries per stream and per pending
 * signal or event, the recordings of one submission per queue. Where the trace lacks what an
 * op's order depends on (a submission whose recording is not stored, or that executes secondary
 * command buffers, whose barriers are not recorded), its ops are taken as ordered (counted in
 * n_blind_*), so missing information hides a race and never invents one. */
enum sched_race_missing {
    SCHED_RACE_EXEC = 1,   /* no execution dependency orders the two ops */
    SCHED_RACE_MEMORY = 2, /* execution ordered, but the write is not made available/visible */
};
const char *sched_race_missing_name(uint32_t m); /* "execution dependency" */

struct sched_race {
    uint64_t first, second;               /* seqs: first < second */
    uint32_t first_stream, second_stream; /* stream ids */
    uint32_t first_kind, second_kind;     /* enum sbt_op_kind */
    uint32_t first_kernel, second_kernel; /* kernel ids (0: none) */
    uint32_t first_mode, second_mode;     /* enum sbt_access_mode of their conflicting accesses */
    uint64_t resource, lo, hi;            /* the bytes [lo, hi) of resource both touch (covering) */
    uint32_t missing;                     /* enum sched_race_missing */
    const char *msg;                      /* one line naming all of it; valid during the call */
};

struct sched_race_opts {
    size_t sz; /* = sizeof(struct sched_race_opts); SCHED_RACE_OPTS() */
};
#define SCHED_RACE_OPTS(...) \
    ((struct sched_race_opts){.sz = sizeof(struct sched_race_opts), __VA_ARGS__})

struct sched_race_stats {
    int declared;        /* 1: the trace records the program's declared order */
    const char *why_not; /* when not: why ("the trace was imported from another tool ...") */
    uint64_t n_ops;
    uint64_t n_findings, n_exec, n_memory; /* findings, by what is missing */
    uint64_t n_barriers;                   /* barriers applied (each memory/buffer/image one) */
    uint64_t n_blind_submits;              /* submissions whose barriers the trace lacks */
    uint64_t n_blind_ops;                  /* queue ops that could not be placed in a recording */
    uint64_t n_forgotten;        /* accesses dropped from a full byte interval (may hide a race) */
    uint64_t n_dropped;          /* findings of one op past the 256 merged per op (not passed on) */
    uint64_t n_maywaw;           /* unordered write/write pairs of two kernels: not findings (a
                                  * kernel's write set is its whole binding, a may-write) */
    uint64_t n_address;          /* unordered pairs where one access is a kernel's through device
                                  * addresses (every buffer with an address): not findings */
    uint64_t n_events_forgotten; /* events dropped past 8192 held (a wait on one then joins
                                  * all those forgotten: may hide a race) */
    uint64_t n_grants_folded;    /* buffer/image barriers past 256 per queue taken as global ones
                                    (may hide a race) */
    uint64_t peak_segments;
    uint64_t n_hostpage; /* unordered pairs with a host write recorded as whole pages (the capture
                          * found the page written, not which of its bytes): not findings */
};

/* Runs the analysis over every op of r, calling fn(ctx, finding) for each (fn may be NULL: only
 * count). stats may be NULL. 0, or < 0 with sched_errmsg(). A trace without declared order
 * (stats->declared = 0) returns 0 with no findings. */
int sched_races_run(sbt_reader *r, const struct sched_race_opts *opts,
                    void (*fn)(void *ctx, const struct sched_race *f), void *ctx,
                    struct sched_race_stats *stats);

/* ========================================================================================== */
/* Graphviz DOT                                                                               */
/* ========================================================================================== */

/* Writes the graph of the ops in range (NULL = all) as DOT: a node per op (seq, kind, name),
 * clustered by stream, edges between ops of the range labelled with their reason. Refuses with
 * SBT_ELIMIT and a message suggesting a range when the range has more than max_nodes ops
 * (0 = 20000). */
int sched_dot_write(sbt_reader *r, const struct sbt_range *range, uint64_t max_nodes, FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SCHED_H */
