/*
 * format/sbt_export.h — export traces for viewers: Perfetto protobuf (.pftrace, opens in
 * ui.perfetto.dev and trace_processor) and Chrome JSON (the legacy trace-event format), both
 * streamed with bounded memory.
 *
 * Two layers:
 *   - The emitter: tracks (process, thread, slice and counter tracks), slices, instants,
 *     counters, flows, interned names and debug annotations, written one packet (or one JSON
 *     object) at a time. It knows nothing about SBT; the checker uses it for diff traces (two
 *     runs on one timeline plus verdict tracks).
 *   - sbt_export_trace(): the layout of one SBT trace on an emitter: a process group per
 *     device and one for the host, a thread track per host thread with the API calls, a track
 *     per stream/queue with kernels, copies and fills (overlapping work spills to lanes that
 *     the UI draws as one track), flows from each API call to the GPU work it launched and from
 *     event record/signal to the waits it released, counters of memory allocated and bytes in
 *     flight per device, debug annotations with launch geometry, bytes, resources and digests.
 *
 * Output is deterministic: the same input and options give the same bytes. Track uuids, flow
 * ids, pids, sequence ids and interned ids are derived from trace ids and first-use order,
 * never from pointers or the clock.
 *
 * Perfetto specifics (../shared/research/perfetto.md): every slice or counter track gets its
 * own packet sequence whose TracePacketDefaults name the track, so events carry no track uuid;
 * every event packet has a sequence id and SEQ_NEEDS_INCREMENTAL_STATE; the first packet of a
 * sequence sets SEQ_INCREMENTAL_STATE_CLEARED; interned strings are defined on a sequence in
 * the first packet that uses them; descriptors precede every use; timestamps are ns on one
 * clock (no clock ids) and never decrease on a sequence; repeated fields are never packed.
 *
 * Errors follow sbt.h: 0 or a count on success, a negative SBT_E* status with sbt_errmsg()
 * on failure. An emitter is used by one thread at a time.
 */
#ifndef REPRISE_SBT_EXPORT_H
#define REPRISE_SBT_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "format/sbt.h"

#ifdef __cplusplus
extern "C" {
#endif

enum sbt_export_format {
    SBT_EXPORT_PERFETTO = 1, /* protobuf perfetto.protos.Trace, streamed packet by packet */
    SBT_EXPORT_JSON = 2,     /* {"traceEvents":[...]}: ts/dur in us with 3 decimals (ns) */
};

/* ========================================================================================== */
/* Emitter                                                                                    */
/* ========================================================================================== */

typedef struct sbt_export_emitter sbt_export_emitter;

struct sbt_export_emitter_opts {
    size_t sz;             /* = sizeof(struct sbt_export_emitter_opts); set by the macro */
    uint32_t max_interned; /* distinct strings interned per kind (event names, annotation
                              names, annotation values); later ones are written inline.
                              0 = 65536 */
    uint32_t max_pending;  /* delta-counter samples held for reordering before the oldest is
                              forced out; 0 = 1 << 20 */
};
#define SBT_EXPORT_EMITTER_OPTS(...) \
    ((struct sbt_export_emitter_opts){.sz = sizeof(struct sbt_export_emitter_opts), __VA_ARGS__})

/* Starts a file on f (which must be open for writing; the emitter buffers and fwrite()s to it,
 * and never closes it). opts may be NULL. *out: owned emitter, or NULL on failure. */
int sbt_export_emitter_open(FILE *f, int format, const struct sbt_export_emitter_opts *opts,
                            sbt_export_emitter **out);
/* Emits every held counter sample, finishes the file (the JSON closing bracket), flushes f and
 * frees em whatever the status. SBT_EIO if a write failed. NULL is accepted. */
int sbt_export_emitter_close(sbt_export_emitter *em);
/* Bytes produced so far (written or buffered). */
uint64_t sbt_export_emitter_bytes(const sbt_export_emitter *em);

/* Stable ids. A uuid names a track, a flow id an arrow; both are global to the file, so
 * writers that put several runs in one file give each run its own `run` number. Never 0.
 * Flow ids stay below 2^53 so that JSON readers keep them exact. */
uint64_t sbt_export_uuid(uint32_t run, uint32_t kind, uint64_t a, uint64_t b);
uint64_t sbt_export_flow_id(uint32_t run, uint32_t kind, uint64_t a);

enum sbt_export_track_kind {
    SBT_EXPORT_TRACK_PROCESS = 1, /* a process group: pid (>= 1, unique in the file), name */
    SBT_EXPORT_TRACK_THREAD = 2,  /* a thread of a process: pid, tid (unique), name; slices on
                                     it must nest strictly (they are drawn as a call stack) */
    SBT_EXPORT_TRACK_SLICES = 3,  /* a named track for slices and instants, under parent */
    SBT_EXPORT_TRACK_COUNTER = 4, /* a counter track, under parent */
};
enum sbt_export_unit {
    SBT_EXPORT_UNIT_NONE = 0,
    SBT_EXPORT_UNIT_NS = 1,
    SBT_EXPORT_UNIT_COUNT = 2,
    SBT_EXPORT_UNIT_BYTES = 3,
};

struct sbt_export_track {
    uint64_t uuid;   /* != 0, unique in the file: sbt_export_uuid() */
    uint64_t parent; /* uuid of a declared PROCESS/SLICES track; 0 = top level. Ignored for
                        PROCESS and THREAD (a thread belongs to the process of its pid) */
    uint32_t kind;   /* enum sbt_export_track_kind */
    const char *name;
    const char *description; /* shown in the UI's track help; NULL = none */
    int32_t pid;             /* PROCESS, THREAD */
    int64_t tid;             /* THREAD */
    int32_t rank;            /* order among siblings, smaller first; 0 = unspecified */
    int separate;            /* SLICES/COUNTER: never merge with same-named siblings. By
                                default same-named siblings (lanes) are drawn as one track */
    uint32_t unit;           /* COUNTER: enum sbt_export_unit */
};

/* Declares a track; it must be declared once, after its parent, before any event on it. */
int sbt_export_track(sbt_export_emitter *em, const struct sbt_export_track *t);

/* Interned strings: a string used on many events can be interned once and then named by its
 * id (name_id, category_id, ...) instead of being hashed on every event. Each kind is its own
 * id space. */
enum sbt_export_str {
    SBT_EXPORT_STR_NAME = 0,     /* event names */
    SBT_EXPORT_STR_CATEGORY = 1, /* categories */
    SBT_EXPORT_STR_ARG = 2,      /* arg names */
    SBT_EXPORT_STR_VALUE = 3,    /* ISTR arg values */
};
/* Id (> 0) of s in kind what, valid for the emitter's life; 0 when the table of that kind is
 * full (max_interned) or memory ran out: pass the string itself then. */
uint32_t sbt_export_intern(sbt_export_emitter *em, int what, const char *s);

enum sbt_export_arg_type {
    SBT_EXPORT_ARG_UINT = 1,
    SBT_EXPORT_ARG_INT = 2,
    SBT_EXPORT_ARG_DOUBLE = 3,
    SBT_EXPORT_ARG_BOOL = 4,
    SBT_EXPORT_ARG_STR = 5,      /* written inline: values that rarely repeat (digests) */
    SBT_EXPORT_ARG_ISTR = 6,     /* interned: values that repeat (geometry, resource lists) */
    SBT_EXPORT_ARG_HEX = 7,      /* shown in hex (handles, addresses) */
    SBT_EXPORT_ARG_VALUE_ID = 8, /* an ISTR given by its sbt_export_intern(..._VALUE) id */
};

/* One debug annotation (an arg in the UI's details panel). */
struct sbt_export_arg {
    const char *name; /* interned */
    uint32_t type;    /* enum sbt_export_arg_type */
    uint32_t name_id; /* if > 0: sbt_export_intern(SBT_EXPORT_STR_ARG) id, name unused */
    union {
        uint64_t u; /* UINT, HEX, BOOL (0/1) */
        int64_t i;
        double d;
        const char *s; /* STR, ISTR; NULL = "" */
        uint32_t id;   /* VALUE_ID */
    } v;
};

/* What a slice or instant says. Zero-initialise, then fill what applies. */
struct sbt_export_event {
    const char *name;     /* interned; NULL = "" */
    const char *category; /* interned; NULL = none */
    uint32_t name_id;     /* if > 0: sbt_export_intern(SBT_EXPORT_STR_NAME) id, name unused */
    uint32_t category_id; /* if > 0: sbt_export_intern(SBT_EXPORT_STR_CATEGORY) id */
    const struct sbt_export_arg *args;
    uint32_t n_args;
    uint32_t n_flow_out, n_flow_in;
    const uint64_t *flow_out; /* arrows starting here (to a later event carrying the id in
                                 flow_in); each id is used by exactly one source and one sink */
    const uint64_t *flow_in;  /* arrows ending here */
    uint64_t correlation_id;  /* the UI highlights slices sharing it; 0 = none */
};

/* Events. ts in ns on the file's single clock. On one track, timestamps must not decrease
 * and slices must nest (begin/end pairs balance): SBT_EINVAL with a message otherwise. Names,
 * categories and arg names are copied or interned before returning. */
int sbt_export_slice_begin(sbt_export_emitter *em, uint64_t track, uint64_t ts,
                           const struct sbt_export_event *ev);
int sbt_export_slice_end(sbt_export_emitter *em, uint64_t track, uint64_t ts);
/* A whole slice [ts, ts + dur]: begin and end at once (a JSON "X" event). */
int sbt_export_slice(sbt_export_emitter *em, uint64_t track, uint64_t ts, uint64_t dur,
                     const struct sbt_export_event *ev);
int sbt_export_instant(sbt_export_emitter *em, uint64_t track, uint64_t ts,
                       const struct sbt_export_event *ev);
/* A counter sample, in time order on its track. */
int sbt_export_counter(sbt_export_emitter *em, uint64_t track, uint64_t ts, int64_t value);
int sbt_export_counter_double(sbt_export_emitter *em, uint64_t track, uint64_t ts, double value);

/* Step counters built from changes that arrive out of time order (allocations made by several
 * threads, bytes in flight across streams): the emitter holds the changes and writes the
 * running value at each distinct time once sbt_export_advance() promises that nothing
 * earlier will come. A change that breaks the promise (earlier than a sample already written)
 * is applied at the time of that sample, and counted in sbt_export_late(). */
int sbt_export_counter_add(sbt_export_emitter *em, uint64_t track, uint64_t ts, int64_t delta);
/* Promise: no counter change earlier than ts follows. Writes the held samples before ts. */
int sbt_export_advance(sbt_export_emitter *em, uint64_t ts);
uint64_t sbt_export_late(const sbt_export_emitter *em);

/* ========================================================================================== */
/* One trace                                                                                  */
/* ========================================================================================== */

enum sbt_export_group {
    SBT_EXPORT_GROUP_DEVICE = 0, /* "device,stream": a process per device, a track per stream
                                    under it, host threads in a host process */
    SBT_EXPORT_GROUP_THREAD = 1, /* "thread": a process per host thread holding its API calls
                                    and the GPU work it launched, stream by stream */
};

struct sbt_export_opts {
    size_t sz;                     /* = sizeof(struct sbt_export_opts); set by the macro */
    const struct sbt_range *range; /* ops to export (sbt_cursor_open); NULL = all */
    uint32_t group_by;             /* enum sbt_export_group */
    uint32_t run;                  /* namespace of uuids, flow ids and pids when several runs share
                                      one emitter (diff traces, the processes of a job):
                                      0..SBT_EXPORT_MAX_RUN */
    const char *label;             /* prefix of process names ("baseline"); NULL = none */
    int64_t ts_offset;    /* output ts = op time - trace start (sbt_info.t_min) + ts_offset */
    uint32_t flow_window; /* ops of look-ahead that link waits to their event record or
                             signal; waits further away get no arrow. 0 = 4096 */
    int no_args;          /* 1: leave debug annotations out (smaller files) */
    void (*progress)(void *ctx, uint64_t done, uint64_t total); /* ops; may be NULL */
    void *progress_ctx;
    double ts_drift; /* output ts = (op time - trace start) * (1 + ts_drift) + ts_offset: a
                        clock that runs fast or slow against the file's (the processes of a
                        job, format/sbt_align.h); 0 = none, within (-0.5, 0.5) */
    int32_t pid;     /* > 0: the whole trace is one process of this pid named by label (host
                        threads and device streams are its tracks), as for a rank of a job
                        (device,stream grouping only; keep pid * 1000 + threads below 2^31);
                        0: a process per device and one for the host, pids from run */
};
#define SBT_EXPORT_MAX_RUN 3555 /* flow ids of runs 100 and up hold 2^37 ops each */
#define SBT_EXPORT_OPTS(...) \
    ((struct sbt_export_opts){.sz = sizeof(struct sbt_export_opts), __VA_ARGS__})

struct sbt_export_stats {
    uint64_t n_ops; /* ops read */
    uint64_t n_slices, n_instants, n_counter_samples, n_flows;
    uint64_t n_tracks;         /* tracks declared, lanes included */
    uint32_t max_lanes;        /* most lanes one stream or thread needed */
    uint64_t n_waits_unlinked; /* waits whose record/signal was outside the window */
    uint64_t n_frees_unknown;  /* frees of resources allocated before the range */
    uint64_t n_late;           /* counter changes applied late (sbt_export_late) */
    uint64_t n_clamped;        /* events delayed because a track had all 256 lanes busy */
};

/* Lays out the ops of r selected by opts->range on em. opts may be NULL; stats may be NULL.
 * Memory stays bounded by the tables, the look-ahead window, live allocations and the
 * number of tracks, whatever the number of ops. */
int sbt_export_trace(sbt_export_emitter *em, sbt_reader *r, const struct sbt_export_opts *opts,
                     struct sbt_export_stats *stats);

/* Opens an emitter on f, exports r and closes the emitter: `reprise export`. */
int sbt_export_file(sbt_reader *r, FILE *f, int format, const struct sbt_export_opts *opts,
                    struct sbt_export_stats *stats);

/* Rough size of the export of range (NULL = all) in bytes, from the chunk index, so callers
 * can warn before writing a file too large for the Perfetto UI (a few hundred MB). */
uint64_t sbt_export_estimate_bytes(const sbt_reader *r, const struct sbt_range *range, int format);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SBT_EXPORT_H */
