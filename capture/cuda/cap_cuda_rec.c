/*
 * capture/cuda/cap_cuda_rec.c — the CUDA shim's recorder: turns wrapped Driver API calls into the
 * SBT model (format/sbt.h) with the CUDA payloads of format/sbt_cuda.h.
 *
 *   devices      one row per CUdevice a context was made on (name, UUID, capability)
 *   streams      the legacy NULL stream of a device, each thread's per-thread default stream,
 *                every created CUstream; host-side waits run on a HOST_THREAD stream per thread
 *   programs     every module / library image, stored as a blob (cuModuleLoad* and
 *                cuLibraryLoad*); kernels by (program, name) with their parameter layout from
 *                cuFuncGetParamInfo / cuKernelGetParamInfo
 *   resources    device allocations (cuMemAlloc[Async], pools, pitch, VMM mappings) and module
 *                and library globals, kept in a sorted interval map; every 8-byte-aligned word
 *                of a launch's parameters that falls in a live allocation is recorded as
 *                (offset, resource, offset in resource) so replay can relocate it
 *   pointers     an address outside the map is classified with the driver's pointer
 *                attributes before anything reads it: only host memory is read on the host
 *   ops          launches (geometry, packed parameters, RW access to each referenced
 *                allocation), copies (H2D bytes as blobs), fills, allocations, event
 *                record/wait, stream/device syncs, and HOST_READ ops carrying the digest of what
 *                a device-to-host copy delivered (sync copies at once, async ones when a sync
 *                or successful query shows them complete)
 *   timing       with REPRISE_TIMING=1, a pair of CUDA events around each launch; ops wait in
 *                a queue, in order, until their events complete, then get device times mapped
 *                onto the host clock through a reference event synchronised once per device
 *   completeness what could not be recorded, by kind, and every unwrapped export by its class
 *                (capture/cuda/cap_cuda_class.h): affecting ones with a MARKER op where they first
 *                happened; the END record carries them (FORMAT.md section 5)
 *
 * One mutex guards everything here and the writer (the capture is "a mutex-protected writer":
 * simple and correct with several threads; chunk compression happens under it when a chunk
 * fills). Any internal failure (no memory, I/O) logs once, marks the trace incomplete and turns
 * recording off; wrappers keep passing calls through. The pump thread of capture/common/cap_pump.c
 * takes the mutex every CAP_FLUSH_MS to cut the chunk, and at once on a fatal signal (cap_int.h).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/cap.h"
#include "capture/common/cap_int.h"
#include "capture/cuda/cap_cuda_int.h"
#include "format/sbt_map.h"

/* The handle tables are the project's map (format/sbt_map.h), pointer-valued. */

/* Frees every value of m, then m. */
static void free_map_and_values(struct sbt_map *m)
{
    uint64_t pos = 0, k, v;
    while (sbt_map_next(m, &pos, &k, &v))
        free((void *)(uintptr_t)v);
    sbt_map_free(m);
}

/* ========================================================================================== */
/* State                                                                                      */
/* ========================================================================================== */

#define MAX_DEV 64
/* Parameter words at or above this are not addresses (user space is 47 bits on x86-64, at most
 * 52 on aarch64 and 56 with 5-level paging), so they are not shown to the driver. */
#define MAX_USER_ADDRESS (1ull << 57)

struct stream {
    uint32_t id;  /* sbt stream id */
    uint32_t dev; /* ordinal */
};

struct event {
    uint32_t id;
    uint32_t rec_stream; /* sbt stream of its latest record, 0 = never recorded */
    uint64_t rec_ord;    /* emit ordinal of that record */
    struct grec *cap;    /* recorded in a capturing stream: a wait on it joins that capture */
};

/* CUDA graphs made by stream capture: the ops that would have run on the capturing streams, in
 * the order the program issued them (a valid order of the graph: capture only adds
 * dependencies on work issued before), emitted again on the launching stream at each
 * cuGraphLaunch. Graphs built or changed through the node API are not modelled (their calls
 * are AFFECTS), nor stream-ordered allocations inside a capture (bad). */
struct gop {
    struct sbt_op op;
    struct sbt_access *acc;
    uint8_t *payload;
    uint32_t payload_len;
    CUevent event;   /* an event record: the event is recorded again at each launch */
    void *read_host; /* an async device-to-host copy: the host read after each launch */
    uint64_t read_len, read_res, read_off;
};
struct grec {
    struct grec *next; /* every recording, freed at the end */
    uint32_t id;
    int open; /* still capturing */
    struct gop *ops;
    size_t n, cap;
    char bad[96]; /* why its launches cannot be replayed; "" when they can */
};

struct kern {
    uint32_t id;    /* sbt kernel id */
    uint64_t owner; /* the module or library handle it came from (unloading it forgets it) */
    uint32_t name;
    int known; /* layout known */
    uint32_t n_params;
    uint32_t *off, *size; /* bytes */
    uint64_t param_bytes;
    /* function attributes set by the program, in force at its next launches (FUNC_ATTR) */
    struct {
        int id, value;
    } attr[SBT_CUDA_MAX_ATTRS];
    uint32_t n_attr;
};

struct alloc {
    uint64_t base, size, res;
    uint32_t origin;                     /* enum sbt_cuda_alloc_origin */
    CUmemGenericAllocationHandle handle; /* VMM: the physical allocation mapped here */
};

struct pending_read {
    uint32_t stream;
    void *host;
    uint64_t len, res, off, ord;
};

/* What tells the host that work of one stream finished through another: stream waited (at
 * ordinal ord) for an event recorded on on_stream at on_ord (cuStreamWaitEvent). */
struct stream_wait {
    uint32_t stream, on_stream;
    uint64_t ord, on_ord;
};

/* Per sbt stream id: how it synchronises with the legacy stream (enum sbt_cuda_stream_origin;
 * a created stream's flags) and the ordinal of its last op. */
struct stream_info {
    uint32_t origin, dev;
    unsigned flags;
    uint64_t last_ord;
};

struct qop { /* an op waiting for its device times (timing on) */
    struct qop *next;
    struct sbt_op op;
    struct sbt_access *acc;
    uint8_t *payload;
    CUevent ev0, ev1;
    uint32_t dev;
};

static struct {
    pthread_mutex_t mu;
    int started, on, closed;
    int timing, digests;
    sbt_writer *w;
    char path[4096];
    uint64_t epoch;
    uint32_t n_threads;
    struct {
        uint32_t id, legacy;
        CUevent ref;       /* timing reference event */
        uint64_t ref_host; /* host ns when ref completed */
    } dev[MAX_DEV];
    struct sbt_map streams, pt_streams, host_streams, events, modules, libs, funcs;
    /* stream capture: sbt stream id -> the grec it captures into; CUgraph and CUgraphExec
     * handles -> the grec they hold */
    struct sbt_map cap_streams, graphs, execs;
    struct grec *grecs;
    uint32_t n_grecs;
    struct gop *captured; /* the op the last emit put into a capture, NULL when written */
    struct kern **kerns;  /* every kern, for freeing (funcs may alias one) */
    size_t n_kerns, cap_kerns;
    struct alloc *allocs; /* live, sorted by base */
    size_t n_allocs, cap_allocs;
    uint64_t next_res, next_event, ord, n_ops, n_calls;
    struct pending_read *reads;
    size_t n_reads, cap_reads;
    struct stream_wait *swaits; /* while reads are pending */
    size_t n_swaits, cap_swaits;
    struct stream_info *sinfo; /* by sbt stream id */
    size_t cap_sinfo;
    struct qop *qhead, **qtail;
    struct sbt_payload_enc enc;
    uint64_t n_emitted; /* ops handed to the writer or its queue: the seq of the next op */
    /* what the capture could not record, by kind; its own lock, never held across a call */
    pthread_mutex_t unsup_mu;
    struct {
        char what[96];
        uint64_t count, first_seq; /* SBT_SEQ_NONE: unknown */
        uint32_t flags;            /* enum sbt_unmodelled_flags */
    } unsup[64];
    uint32_t n_unsup;
    uint64_t sym_first[CAP_SYM__COUNT]; /* seq + 1 at an unwrapped symbol's first call */
    char fail_reason[256];
    char affects[400]; /* the unmodelled calls that make the trace incomplete, for the summary */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .unsup_mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local uint32_t my_tid;
static _Thread_local int depth;

uint64_t cap_cuda_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return t > g.epoch ? t - g.epoch : 0;
}

int cap_cuda_enter(void)
{
    if (depth++ > 0 || !__atomic_load_n(&g.on, __ATOMIC_ACQUIRE)) {
        depth--;
        return 0;
    }
    __atomic_fetch_add(&g.n_calls, 1, __ATOMIC_RELAXED);
    return 1;
}

void cap_cuda_leave(void)
{
    depth--;
}

void cap_cuda_lock(void)
{
    pthread_mutex_lock(&g.mu);
}

void cap_cuda_unlock(void)
{
    pthread_mutex_unlock(&g.mu);
}

/* ========================================================================================== */
/* Failure and completeness                                                                   */
/* ========================================================================================== */

void cap_cuda_fail(const char *fmt, ...)
{
    if (!g.on)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g.fail_reason, sizeof g.fail_reason, fmt, ap);
    va_end(ap);
    fprintf(stderr, "reprise: CUDA capture: %s; recording stopped, the program continues\n",
            g.fail_reason);
    __atomic_store_n(&g.on, 0, __ATOMIC_RELEASE);
}

static void unsup_note(const char *what, uint64_t n, uint64_t first_seq, uint32_t flags)
{
    const uint32_t cap = sizeof g.unsup / sizeof g.unsup[0];
    pthread_mutex_lock(&g.unsup_mu);
    uint32_t i = 0;
    while (i < g.n_unsup && strcmp(g.unsup[i].what, what))
        i++;
    if (i == cap) /* the table is full: the last entry stands for every later kind */
        i = cap - 1;
    if (i == g.n_unsup) {
        snprintf(g.unsup[i].what, sizeof g.unsup[0].what, "%s",
                 i == cap - 1 ? "other things the capture could not record" : what);
        g.unsup[i].first_seq = SBT_SEQ_NONE;
        g.n_unsup++;
    }
    g.unsup[i].count += n;
    g.unsup[i].flags |= flags;
    if (first_seq < g.unsup[i].first_seq)
        g.unsup[i].first_seq = first_seq;
    pthread_mutex_unlock(&g.unsup_mu);
}

void cap_cuda_unsupported(const char *what, int affects)
{
    unsup_note(what, 1, __atomic_load_n(&g.n_emitted, __ATOMIC_RELAXED),
               affects ? SBT_UNMODELLED_AFFECTS : 0);
}

static uint64_t unsupported_marker(const char *what);
static void writer_check(int st, const char *what);

/* Where an unrecorded call that affects replay first happened: a MARKER op there when this
 * thread may take the lock (not inside one of our own wrappers), else the next op's seq. */
static uint64_t first_affecting(const char *what)
{
    if (depth > 0 || !__atomic_load_n(&g.on, __ATOMIC_ACQUIRE))
        return __atomic_load_n(&g.n_emitted, __ATOMIC_RELAXED);
    cap_cuda_lock();
    uint64_t seq = unsupported_marker(what);
    cap_cuda_unlock();
    return seq;
}

void cap_cuda_first_call(int sym)
{
    if (sym >= CAP_SYM__COUNT && sym < CAP_CUDA_SLOTS) {
        /* an entry point cuGetProcAddress returned that is none of the exports, now called */
        const char *name = cap_cuda_unknown_name(sym - CAP_SYM__COUNT);
        if (name)
            cap_cuda_unidentified(name);
        return;
    }
    if (sym < 0 || sym >= CAP_SYM__COUNT)
        return;
    uint8_t cls = cap_cuda_class[sym];
    uint64_t seq;
    if (cls == CAP_CLASS_AFFECTS)
        seq = first_affecting(cap_cuda_names[sym]);
    else if (cls == CAP_CLASS_HARMLESS)
        seq = __atomic_load_n(&g.n_emitted, __ATOMIC_RELAXED);
    else
        return;
    __atomic_store_n(&g.sym_first[sym], seq + 1, __ATOMIC_RELAXED);
}

/* 1 when every export named like symbol (symbol, symbol_vN, with _ptds / _ptsz) is a pure
 * query or harmless: calling it unseen loses nothing. */
static int passes_unseen_harmlessly(const char *symbol)
{
    static const char *const ver[] = {"", "_v2", "_v3", "_v4", "_v5", "_v6", "_v7", "_v8", "_v9"};
    static const char *const pt[] = {"", "_ptds", "_ptsz"};
    char name[256];
    int found = 0;
    for (size_t v = 0; v < sizeof ver / sizeof ver[0]; v++)
        for (size_t p = 0; p < sizeof pt / sizeof pt[0]; p++) {
            snprintf(name, sizeof name, "%.200s%s%s", symbol, ver[v], pt[p]);
            int i = cap_cuda_sym_find(name);
            if (i < 0)
                continue;
            if (cap_cuda_class[i] != CAP_CLASS_QUERY && cap_cuda_class[i] != CAP_CLASS_HARMLESS)
                return 0;
            found = 1;
        }
    return found;
}

void cap_cuda_unidentified(const char *symbol)
{
    char what[96];
    snprintf(what, sizeof what, "cuGetProcAddress(%.40s): unidentified entry point", symbol);
    if (passes_unseen_harmlessly(symbol))
        unsup_note(what, 1, __atomic_load_n(&g.n_emitted, __ATOMIC_RELAXED), 0);
    else
        unsup_note(what, 1, first_affecting(what), SBT_UNMODELLED_AFFECTS);
}

/* Adds "what xN" to the summary of what makes the trace incomplete. */
static void affects_note(const char *what, uint64_t n)
{
    size_t len = strlen(g.affects);
    if (len + 8 < sizeof g.affects)
        snprintf(g.affects + len, sizeof g.affects - len, "%s%s x%" PRIu64,
                 len ? ", " : "unmodelled calls that affect replay: ", what, n);
}

/* The completeness record: what the recorder could not record, and every unwrapped symbol that
 * was called and is not a pure query (capture/cuda/cap_cuda_class.h). Returns the calls counted. */
static uint64_t write_completeness(void)
{
    uint64_t total = 0;
    pthread_mutex_lock(&g.unsup_mu);
    for (uint32_t i = 0; i < g.n_unsup; i++) {
        total += g.unsup[i].count;
        if (g.unsup[i].flags & SBT_UNMODELLED_AFFECTS)
            affects_note(g.unsup[i].what, g.unsup[i].count);
        writer_check(sbt_writer_unsupported(g.w, g.unsup[i].what, g.unsup[i].count,
                                            g.unsup[i].first_seq, g.unsup[i].flags),
                     "writing the completeness record");
    }
    pthread_mutex_unlock(&g.unsup_mu);
    for (int i = 0; i < CAP_SYM__COUNT; i++) {
        uint64_t n = __atomic_load_n(&cap_cuda_calls[i], __ATOMIC_RELAXED);
        uint8_t cls = cap_cuda_class[i];
        if (!n || (cls != CAP_CLASS_HARMLESS && cls != CAP_CLASS_AFFECTS))
            continue;
        uint64_t first = __atomic_load_n(&g.sym_first[i], __ATOMIC_RELAXED);
        total += n;
        if (cls == CAP_CLASS_AFFECTS)
            affects_note(cap_cuda_names[i], n);
        writer_check(sbt_writer_unsupported(g.w, cap_cuda_names[i], n,
                                            first ? first - 1 : SBT_SEQ_NONE,
                                            cls == CAP_CLASS_AFFECTS ? SBT_UNMODELLED_AFFECTS : 0),
                     "writing the completeness record");
    }
    return total;
}

/* ========================================================================================== */
/* Ops: emitted in order, through a queue while device times are pending                      */
/* ========================================================================================== */

static void writer_check(int st, const char *what)
{
    if (st < 0)
        cap_cuda_fail("%s: %s", what, sbt_errmsg());
}

static uint32_t intern(const char *s)
{
    uint32_t id = 0;
    if (g.on && s)
        writer_check(sbt_writer_intern(g.w, s, &id), "interning a string");
    return id;
}

static uint32_t tid(void)
{
    if (!my_tid)
        my_tid = ++g.n_threads;
    return my_tid;
}

static void append(const struct sbt_op *op)
{
    if (!g.on)
        return;
    writer_check(sbt_writer_add_op(g.w, op, NULL), "writing an op");
    g.n_ops++;
}

static void qop_free(struct qop *q)
{
    free(q->acc);
    free(q->payload);
    free(q);
}

/* Maps a timed op's events to device times. 0 when not complete yet (and !force). */
static int resolve_times(struct qop *q, int force)
{
    if (!force && CAP_NEXT(cuEventQuery)(q->ev1) != CUDA_SUCCESS)
        return 0;
    if (force)
        CAP_NEXT(cuEventSynchronize)(q->ev1);
    float a = 0, b = 0;
    CUevent ref = g.dev[q->dev].ref;
    if (CAP_NEXT(cuEventElapsedTime)(&a, ref, q->ev0) == CUDA_SUCCESS &&
        CAP_NEXT(cuEventElapsedTime)(&b, q->ev0, q->ev1) == CUDA_SUCCESS && a >= 0 && b >= 0) {
        q->op.dev_begin = g.dev[q->dev].ref_host + (uint64_t)((double)a * 1e6);
        q->op.dev_end = q->op.dev_begin + (uint64_t)((double)b * 1e6);
        q->op.flags |= SBT_OPF_DEV_TIME;
    }
    CAP_NEXT(cuEventDestroy_v2)(q->ev0);
    CAP_NEXT(cuEventDestroy_v2)(q->ev1);
    q->ev0 = q->ev1 = NULL;
    return 1;
}

static void drain(int force)
{
    while (g.qhead) {
        struct qop *q = g.qhead;
        if (q->ev1 && !resolve_times(q, force))
            return;
        q->op.access = q->acc;
        q->op.payload.data = q->payload;
        append(&q->op);
        g.qhead = q->next;
        if (!g.qhead)
            g.qtail = &g.qhead;
        qop_free(q);
    }
}

/* Emits op with accesses acc and the payload being built in g.enc. ev0/ev1: timing events
 * (NULL for none); the op then waits in the queue with every later op behind it. */
static void graph_add(struct grec *gr, const struct sbt_op *op, const struct sbt_access *acc,
                      uint32_t n_acc);

static void emit(struct sbt_op *op, const struct sbt_access *acc, uint32_t n_acc, CUevent ev0,
                 CUevent ev1, uint32_t dev)
{
    __atomic_store_n(&g.ord, g.ord + 1, __ATOMIC_RELEASE); /* cap_cuda_ord reads it unlocked */
    g.captured = NULL;
    if (op->stream < g.cap_sinfo)
        g.sinfo[op->stream].last_ord = g.ord;
    if (!g.on)
        return;
    if (sbt_payload_enc_status(&g.enc) < 0) {
        cap_cuda_fail("out of memory encoding a payload");
        return;
    }
    op->thread = tid();
    struct grec *gr = op->stream ? sbt_map_getp(&g.cap_streams, op->stream) : NULL;
    if (gr) { /* issued to a capturing stream: a graph node, run at each launch */
        graph_add(gr, op, acc, n_acc);
        return;
    }
    op->n_access = n_acc;
    op->access = acc;
    if (g.enc.len) {
        op->flags |= SBT_OPF_PAYLOAD;
        op->payload = (struct sbt_ext){SBT_CUDA_PAYLOAD, (uint32_t)g.enc.len, g.enc.buf};
    }
    if (!g.qhead && !ev1) {
        append(op);
        __atomic_add_fetch(&g.n_emitted, 1, __ATOMIC_RELAXED);
        return;
    }
    struct qop *q = calloc(1, sizeof *q);
    if (!q || (n_acc && !(q->acc = malloc(n_acc * sizeof *acc))) ||
        (g.enc.len && !(q->payload = malloc(g.enc.len)))) {
        if (q)
            qop_free(q);
        cap_cuda_fail("out of memory queueing an op");
        return;
    }
    q->op = *op;
    if (n_acc)
        memcpy(q->acc, acc, n_acc * sizeof *acc);
    if (g.enc.len)
        memcpy(q->payload, g.enc.buf, g.enc.len);
    q->ev0 = ev0, q->ev1 = ev1, q->dev = dev;
    *g.qtail = q;
    g.qtail = &q->next;
    __atomic_add_fetch(&g.n_emitted, 1, __ATOMIC_RELAXED);
}

static void enc_call(const struct cap_cuda_call *c, CUresult r)
{
    sbt_payload_enc_reset(&g.enc);
    uint64_t a[4] = {c->api, (uint64_t)c->pt, (uint64_t)(uintptr_t)c->stream, (uint64_t)r};
    sbt_payload_put(&g.enc, SBT_CUDA_CALL, a, 4, NULL, 0);
}

static void op_init(struct sbt_op *op, uint32_t kind, const struct cap_cuda_call *c)
{
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->host_begin = c->t0;
    op->host_end = c->t1 >= c->t0 ? c->t1 : c->t0;
    op->name = intern(sbt_cuda_api_name(c->api));
}

static uint32_t host_stream(void);

/* A MARKER op named what, with the UNSUPPORTED mark, on the calling thread's host stream: where
 * a call the trace cannot replay happened. Returns its seq. Lock held. */
static uint64_t unsupported_marker(const char *what)
{
    uint64_t seq = g.n_emitted;
    if (!g.on)
        return seq;
    struct cap_cuda_call c = {0, 0, NULL, cap_cuda_now(), 0, 0};
    c.t1 = c.t0;
    struct sbt_op op;
    op_init(&op, SBT_OP_MARKER, &c);
    op.name = intern(what);
    op.stream = host_stream();
    op.flags = SBT_OPF_UNSUPPORTED;
    sbt_payload_enc_reset(&g.enc);
    emit(&op, NULL, 0, NULL, NULL, 0);
    return seq;
}

/* ========================================================================================== */
/* Devices and streams                                                                        */
/* ========================================================================================== */

void cap_cuda_rec_device(CUdevice d)
{
    if (!g.on || d < 0 || d >= MAX_DEV || g.dev[d].id)
        return;
    char name[256] = "CUDA device";
    CUuuid uuid;
    memset(&uuid, 0, sizeof uuid);
    int drv = 0, major = 0, minor = 0, sms = 0;
    size_t mem = 0;
    CAP_NEXT(cuDeviceGetName)(name, (int)sizeof name, d);
    name[sizeof name - 1] = 0;
    if (CAP_NEXT(cuDeviceGetUuid_v2)(&uuid, d) != CUDA_SUCCESS)
        CAP_NEXT(cuDeviceGetUuid)(&uuid, d);
    CAP_NEXT(cuDriverGetVersion)(&drv);
    CAP_NEXT(cuDeviceGetAttribute)(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
    CAP_NEXT(cuDeviceGetAttribute)(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
    CAP_NEXT(cuDeviceGetAttribute)(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
    CAP_NEXT(cuDeviceTotalMem_v2)(&mem, d);
    struct sbt_payload_enc e = {0};
    uint64_t a[6] = {(uint64_t)d, (uint64_t)major, (uint64_t)minor, (uint64_t)sms,
                     mem,         (uint64_t)drv};
    sbt_payload_put(&e, SBT_CUDA_DEVICE, a, 6, name, strlen(name));
    struct sbt_device dv = {0};
    dv.api = SBT_API_CUDA;
    dv.name = intern(name);
    dv.vendor_id = 0x10de;
    memcpy(dv.uuid, uuid.bytes, 16);
    dv.driver_version = (uint32_t)drv;
    dv.api_version = (uint32_t)drv;
    char host[256];
    if (gethostname(host, sizeof host) == 0) {
        host[sizeof host - 1] = 0;
        dv.host = intern(host);
    }
    dv.ext = (struct sbt_ext){SBT_CUDA_EXT_DEVICE, (uint32_t)e.len, e.buf};
    if (sbt_payload_enc_status(&e) < 0)
        cap_cuda_fail("out of memory describing a device");
    else if (g.on)
        writer_check(sbt_writer_add_device(g.w, &dv, &g.dev[d].id), "adding a device");
    sbt_payload_enc_free(&e);
}

/* The ordinal of the calling thread's current device (0 when it cannot be asked). */
static uint32_t cur_dev(void)
{
    CUdevice d = 0;
    if (CAP_NEXT(cuCtxGetDevice)(&d) != CUDA_SUCCESS || d < 0 || d >= MAX_DEV)
        d = 0;
    cap_cuda_rec_device(d);
    return (uint32_t)d;
}

static uint32_t add_stream(uint32_t dev, uint32_t kind, const char *name, uint64_t handle,
                           uint32_t origin, unsigned flags, int prio)
{
    struct sbt_payload_enc e = {0};
    uint64_t a[5] = {origin, flags, sbt_zigzag_encode(prio), handle, tid()};
    if (kind == SBT_STREAM_CUDA)
        sbt_payload_put(&e, SBT_CUDA_STREAM, a, 5, NULL, 0);
    struct sbt_stream s = {0};
    s.device = g.dev[dev].id;
    s.kind = kind;
    s.name = intern(name);
    s.handle = handle;
    s.family = flags;
    s.index = (uint32_t)sbt_zigzag_encode(prio);
    if (e.len)
        s.ext = (struct sbt_ext){SBT_CUDA_EXT_STREAM, (uint32_t)e.len, e.buf};
    uint32_t id = 0;
    if (sbt_payload_enc_status(&e) < 0)
        cap_cuda_fail("out of memory describing a stream");
    else if (g.on)
        writer_check(sbt_writer_add_stream(g.w, &s, &id), "adding a stream");
    sbt_payload_enc_free(&e);
    if (id && kind == SBT_STREAM_CUDA && id >= g.cap_sinfo) {
        size_t c = g.cap_sinfo ? g.cap_sinfo : 16;
        while (c <= id)
            c *= 2;
        struct stream_info *v = realloc(g.sinfo, c * sizeof *v);
        if (v) {
            memset(v + g.cap_sinfo, 0, (c - g.cap_sinfo) * sizeof *v);
            g.sinfo = v;
            g.cap_sinfo = c;
        }
    }
    if (id && kind == SBT_STREAM_CUDA && id < g.cap_sinfo) /* else: no implicit sync known */
        g.sinfo[id] = (struct stream_info){origin, dev, flags, 0};
    return id;
}

static uint32_t host_stream(void)
{
    uint32_t t = tid();
    uintptr_t id = (uintptr_t)sbt_map_getp(&g.host_streams, t);
    if (id)
        return (uint32_t)id;
    char name[32];
    snprintf(name, sizeof name, "host thread %u", t);
    id = add_stream(cur_dev(), SBT_STREAM_HOST_THREAD, name, t, 0, 0, 0);
    if (id && sbt_map_putp(&g.host_streams, t, (void *)id))
        cap_cuda_fail("out of memory");
    return (uint32_t)id;
}

/* The sbt stream of a call's CUstream, by the rules of the variant: NULL is the legacy stream,
 * or this thread's per-thread stream for _ptsz/_ptds; 0x1 and 0x2 name those two explicitly. */
static uint32_t stream_of(const struct cap_cuda_call *c, uint32_t *dev_out)
{
    uintptr_t h = (uintptr_t)c->stream;
    uint32_t dev;
    if (h > 2) {
        struct stream *s = sbt_map_getp(&g.streams, h);
        if (!s) { /* created outside the wrappers: give it a row now */
            s = calloc(1, sizeof *s);
            if (!s || sbt_map_putp(&g.streams, h, s)) {
                free(s);
                cap_cuda_fail("out of memory");
                return 0;
            }
            s->dev = cur_dev();
            s->id = add_stream(s->dev, SBT_STREAM_CUDA, "stream", h, SBT_CUDA_STREAM_CREATED, 0, 0);
        }
        if (dev_out)
            *dev_out = s->dev;
        return s->id;
    }
    dev = cur_dev();
    if (dev_out)
        *dev_out = dev;
    if (h == 1 || (h == 0 && !c->pt)) {
        if (!g.dev[dev].legacy)
            g.dev[dev].legacy =
                add_stream(dev, SBT_STREAM_CUDA, "legacy stream", 0, SBT_CUDA_STREAM_LEGACY, 0, 0);
        return g.dev[dev].legacy;
    }
    uint64_t key = (uint64_t)tid() << 8 | dev;
    uintptr_t id = (uintptr_t)sbt_map_getp(&g.pt_streams, key);
    if (!id) {
        char name[48];
        snprintf(name, sizeof name, "per-thread stream %u", tid());
        id = add_stream(dev, SBT_STREAM_CUDA, name, 2, SBT_CUDA_STREAM_PER_THREAD, 0, 0);
        if (id && sbt_map_putp(&g.pt_streams, key, (void *)id))
            cap_cuda_fail("out of memory");
    }
    return (uint32_t)id;
}

void cap_cuda_rec_stream_create(const struct cap_cuda_call *c, CUstream h, unsigned flags,
                                int priority)
{
    if (!g.on)
        return;
    struct stream *s = calloc(1, sizeof *s);
    if (!s) {
        cap_cuda_fail("out of memory");
        return;
    }
    s->dev = cur_dev();
    s->id = add_stream(s->dev, SBT_STREAM_CUDA, "stream", (uintptr_t)h, SBT_CUDA_STREAM_CREATED,
                       flags, priority);
    free(sbt_map_getp(&g.streams, (uintptr_t)h));
    if (sbt_map_putp(&g.streams, (uintptr_t)h, s)) {
        free(s);
        cap_cuda_fail("out of memory");
        return;
    }
    struct sbt_op op;
    op_init(&op, SBT_OP_STREAM_CREATE, c);
    op.stream = host_stream();
    op.flags = SBT_OPF_OBJ;
    op.obj = s->id;
    enc_call(c, CUDA_SUCCESS);
    emit(&op, NULL, 0, NULL, NULL, 0);
}

void cap_cuda_rec_stream_destroy(const struct cap_cuda_call *c, CUstream h)
{
    struct stream *s = sbt_map_getp(&g.streams, (uintptr_t)h);
    if (!g.on || !s)
        return;
    struct sbt_op op;
    op_init(&op, SBT_OP_STREAM_DESTROY, c);
    op.stream = host_stream();
    op.flags = SBT_OPF_OBJ;
    op.obj = s->id;
    enc_call(c, CUDA_SUCCESS);
    emit(&op, NULL, 0, NULL, NULL, 0);
    sbt_map_del(&g.streams, (uintptr_t)h);
    free(s);
}

/* ========================================================================================== */
/* Events                                                                                     */
/* ========================================================================================== */

static struct event *event_of(CUevent e)
{
    struct event *ev = sbt_map_getp(&g.events, (uintptr_t)e);
    if (ev)
        return ev;
    if (!(ev = calloc(1, sizeof *ev)) || sbt_map_putp(&g.events, (uintptr_t)e, ev)) {
        free(ev);
        cap_cuda_fail("out of memory");
        return NULL;
    }
    ev->id = (uint32_t)++g.next_event;
    return ev;
}

static void event_marker(const struct cap_cuda_call *c, struct event *ev, unsigned flags)
{
    struct sbt_op op;
    op_init(&op, SBT_OP_MARKER, c);
    op.stream = host_stream();
    op.flags = SBT_OPF_OBJ;
    op.obj = ev->id;
    enc_call(c, CUDA_SUCCESS);
    uint64_t a[3] = {ev->id, flags, 0};
    sbt_payload_put(&g.enc, SBT_CUDA_EVENT, a, 3, NULL, 0);
    emit(&op, NULL, 0, NULL, NULL, 0);
}

void cap_cuda_rec_event_create(const struct cap_cuda_call *c, CUevent e, unsigned flags)
{
    if (!g.on)
        return;
    free(sbt_map_getp(&g.events, (uintptr_t)e));
    sbt_map_del(&g.events, (uintptr_t)e);
    struct event *ev = event_of(e);
    if (ev)
        event_marker(c, ev, flags);
}

void cap_cuda_rec_event_destroy(const struct cap_cuda_call *c, CUevent e)
{
    struct event *ev = sbt_map_getp(&g.events, (uintptr_t)e);
    if (!g.on || !ev)
        return;
    event_marker(c, ev, 0);
    sbt_map_del(&g.events, (uintptr_t)e);
    free(ev);
}

static void event_op(const struct cap_cuda_call *c, uint32_t kind, CUevent e, unsigned flags)
{
    struct event *ev = event_of(e);
    if (!g.on || !ev)
        return;
    struct sbt_op op;
    op_init(&op, kind, c);
    op.stream = stream_of(c, NULL);
    op.flags = SBT_OPF_OBJ;
    op.obj = ev->id;
    enc_call(c, CUDA_SUCCESS);
    uint64_t a[3] = {ev->id, 0, flags};
    sbt_payload_put(&g.enc, SBT_CUDA_EVENT, a, 3, NULL, 0);
    struct grec *gr = sbt_map_getp(&g.cap_streams, op.stream);
    if (kind == SBT_OP_EVENT_WAIT && !gr && ev->cap && ev->cap->open) {
        /* a stream waiting on an event of a capture joins it: the wait is a graph node */
        if (sbt_map_putp(&g.cap_streams, op.stream, ev->cap))
            cap_cuda_fail("out of memory");
        gr = ev->cap;
    }
    if (kind == SBT_OP_EVENT_RECORD) {
        ev->cap = gr;
        if (!gr) {
            ev->rec_stream = op.stream;
            ev->rec_ord = g.ord + 1;
        }
    } else if (!gr && ev->rec_stream && g.n_reads) { /* only pending reads need it */
        if (g.n_swaits == g.cap_swaits) {
            size_t cap = g.cap_swaits ? 2 * g.cap_swaits : 16;
            struct stream_wait *v = realloc(g.swaits, cap * sizeof *v);
            if (v)
                g.swaits = v, g.cap_swaits = cap;
        }
        if (g.n_swaits < g.cap_swaits) /* else the reads resolve at a later sync, as before */
            g.swaits[g.n_swaits++] =
                (struct stream_wait){op.stream, ev->rec_stream, g.ord + 1, ev->rec_ord};
    }
    emit(&op, NULL, 0, NULL, NULL, 0);
    if (g.captured && kind == SBT_OP_EVENT_RECORD)
        g.captured->event = e;
}

void cap_cuda_rec_event_record(const struct cap_cuda_call *c, CUevent e, unsigned flags)
{
    event_op(c, SBT_OP_EVENT_RECORD, e, flags);
}

void cap_cuda_rec_stream_wait(const struct cap_cuda_call *c, CUevent e, unsigned flags)
{
    event_op(c, SBT_OP_EVENT_WAIT, e, flags);
}

/* ========================================================================================== */
/* Memory: the interval map                                                                   */
/* ========================================================================================== */

/* Index of the allocation holding address p, or -1. */
static long alloc_find(uint64_t p)
{
    size_t lo = 0, hi = g.n_allocs;
    while (lo < hi) { /* first allocation with base > p */
        size_t mid = (lo + hi) / 2;
        if (g.allocs[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const struct alloc *a = &g.allocs[lo - 1];
    return p - a->base < a->size ? (long)(lo - 1) : -1;
}

/* (resource, offset) of [p, p+n) when it lies inside one allocation. */
static int resolve(uint64_t p, uint64_t n, uint64_t *res, uint64_t *off)
{
    long i = alloc_find(p);
    if (i < 0 || n > g.allocs[i].size - (p - g.allocs[i].base))
        return 0;
    *res = g.allocs[i].res;
    *off = p - g.allocs[i].base;
    return 1;
}

static uint64_t alloc_insert(uint64_t base, uint64_t size, uint32_t origin,
                             CUmemGenericAllocationHandle h)
{
    if (!size)
        size = 1;
    /* entries overlapping the new range were freed behind our back (a context reset, an
     * unwrapped free): drop them */
    size_t o = 0;
    for (size_t i = 0; i < g.n_allocs; i++)
        if (g.allocs[i].base + g.allocs[i].size <= base || g.allocs[i].base >= base + size)
            g.allocs[o++] = g.allocs[i];
    g.n_allocs = o;
    if (g.n_allocs == g.cap_allocs) {
        size_t cap = g.cap_allocs ? g.cap_allocs * 2 : 256;
        struct alloc *a = realloc(g.allocs, cap * sizeof *a);
        if (!a) {
            cap_cuda_fail("out of memory");
            return 0;
        }
        g.allocs = a, g.cap_allocs = cap;
    }
    size_t i = g.n_allocs;
    while (i > 0 && g.allocs[i - 1].base > base)
        i--;
    memmove(&g.allocs[i + 1], &g.allocs[i], (g.n_allocs - i) * sizeof *g.allocs);
    g.allocs[i] = (struct alloc){base, size, ++g.next_res, origin, h};
    g.n_allocs++;
    return g.next_res;
}

static void alloc_op(const struct cap_cuda_call *c, uint64_t res, uint64_t base, uint64_t size,
                     uint32_t origin, uint32_t program, const char *name, int on_stream)
{
    uint32_t dev = 0;
    struct sbt_op op;
    op_init(&op, SBT_OP_ALLOC, c);
    op.stream = on_stream ? stream_of(c, &dev) : host_stream();
    if (!on_stream)
        dev = cur_dev();
    op.subkind = SBT_RES_DEVICE;
    op.flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES | SBT_OPF_OBJ;
    op.resource = res;
    op.bytes = size;
    op.obj = g.dev[dev].id;
    enc_call(c, CUDA_SUCCESS);
    uint64_t a[4] = {origin, base, size, program};
    sbt_payload_put(&g.enc, SBT_CUDA_ALLOC, a, 4, name, name ? strlen(name) : 0);
    emit(&op, NULL, 0, NULL, NULL, 0);
}

static int on_stream(uint32_t api)
{
    return api == SBT_CUDA_API_cuMemAllocAsync || api == SBT_CUDA_API_cuMemFreeAsync ||
           api == SBT_CUDA_API_cuMemAllocFromPoolAsync;
}

void cap_cuda_rec_alloc(const struct cap_cuda_call *c, CUdeviceptr p, size_t size, uint32_t origin)
{
    if (!g.on)
        return;
    uint64_t res = alloc_insert(p, size, origin, 0);
    if (res)
        alloc_op(c, res, p, size, origin, 0, NULL, on_stream(c->api));
}

/* Removes allocation i from the map and emits its FREE op. */
static void free_op(const struct cap_cuda_call *c, size_t i)
{
    struct alloc a = g.allocs[i];
    memmove(&g.allocs[i], &g.allocs[i + 1], (g.n_allocs - i - 1) * sizeof *g.allocs);
    g.n_allocs--;
    uint32_t dev = 0;
    struct sbt_op op;
    op_init(&op, SBT_OP_FREE, c);
    op.stream = on_stream(c->api) ? stream_of(c, &dev) : host_stream();
    op.flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES;
    op.resource = a.res;
    op.bytes = a.size;
    enc_call(c, CUDA_SUCCESS);
    uint64_t args[4] = {a.origin, a.base, a.size, 0};
    sbt_payload_put(&g.enc, SBT_CUDA_ALLOC, args, 4, NULL, 0);
    emit(&op, NULL, 0, NULL, NULL, 0);
}

void cap_cuda_rec_free(const struct cap_cuda_call *c, CUdeviceptr p)
{
    long i = alloc_find(p);
    if (!g.on)
        return;
    if (i < 0 || g.allocs[i].base != p) {
        if (p) /* its uses were marked where they happened; replay has nothing to free */
            cap_cuda_unsupported("cuMemFree of an address the capture never saw allocated", 0);
        return;
    }
    free_op(c, (size_t)i);
}

void cap_cuda_rec_map(const struct cap_cuda_call *c, CUdeviceptr p, size_t size,
                      CUmemGenericAllocationHandle h)
{
    if (!g.on)
        return;
    int alias = 0, adjacent = 0;
    for (size_t i = 0; i < g.n_allocs; i++) {
        const struct alloc *a = &g.allocs[i];
        if (a->origin != SBT_CUDA_ALLOC_VMM)
            continue;
        alias |= a->handle == h;
        adjacent |= a->base + a->size == p || a->base == p + size;
    }
    /* the ALLOC op is the next op: the entries below name it */
    if (alias)
        cap_cuda_unsupported("cuMemMap of memory mapped elsewhere too (aliases are not replayed)",
                             1);
    if (adjacent)
        cap_cuda_unsupported("cuMemMap next to another mapping (not kept contiguous in replay)", 1);
    uint64_t res = alloc_insert(p, size, SBT_CUDA_ALLOC_VMM, h);
    if (res)
        alloc_op(c, res, p, size, SBT_CUDA_ALLOC_VMM, 0, NULL, 0);
}

void cap_cuda_rec_unmap(const struct cap_cuda_call *c, CUdeviceptr p, size_t size)
{
    if (!g.on)
        return;
    for (size_t i = 0; i < g.n_allocs;)
        if (g.allocs[i].origin == SBT_CUDA_ALLOC_VMM && g.allocs[i].base >= p &&
            g.allocs[i].base - p < size)
            free_op(c, i);
        else
            i++;
}

void cap_cuda_rec_global(CUdeviceptr p, size_t size, CUmodule mod, CUlibrary lib, const char *name)
{
    long i = alloc_find(p);
    if (!g.on || (i >= 0 && g.allocs[i].base == p))
        return;
    uint32_t prog = (uint32_t)(uintptr_t)(mod ? sbt_map_getp(&g.modules, (uintptr_t)mod)
                                              : sbt_map_getp(&g.libs, (uintptr_t)lib));
    uint64_t res = alloc_insert(p, size, SBT_CUDA_ALLOC_GLOBAL, 0);
    struct cap_cuda_call c = {mod ? SBT_CUDA_API_cuModuleGetGlobal_v2
                                  : SBT_CUDA_API_cuLibraryGetGlobal,
                              0,
                              NULL,
                              cap_cuda_now(),
                              0,
                              0};
    c.t1 = c.t0;
    if (!prog)
        cap_cuda_unsupported("global of a module the capture did not see loaded", 1);
    if (res)
        alloc_op(&c, res, p, size, SBT_CUDA_ALLOC_GLOBAL, prog, name, 0);
}

/* ========================================================================================== */
/* Pointers: what an address the program passes is, asked of the driver                       */
/* ========================================================================================== */

/* What one side of a copy, a fill or a parameter word points at. Only SIDE_HOST is ever read
 * on the host. */
enum side {
    SIDE_TRACKED, /* inside an allocation of the map */
    SIDE_HOST,    /* host memory: pageable (unknown to the driver), pinned or registered */
    SIDE_MANAGED, /* managed memory: host access may fault or migrate pages */
    SIDE_DEVICE,  /* device memory the capture did not see allocated (IPC, external, ...) */
    SIDE_SPAN,    /* starts inside an allocation and runs past its end */
    SIDE_UNKNOWN, /* the driver cannot say */
};

static const char *side_name(int k)
{
    static const char *const names[] = {
        "tracked device memory",
        "host memory",
        "managed memory",
        "device memory the capture did not see allocated",
        "a range past the end of an allocation",
        "memory the driver could not classify",
    };
    return names[k];
}

/* The driver's pointer attributes of p: 0 with *type (CUmemorytype; 0 when the driver does
 * not know the address, i.e. pageable host memory) and *managed, or -1 when it cannot say. */
static int ptr_attrs(uint64_t p, unsigned *type, int *managed)
{
    /* 8-byte slots, zeroed: the driver writes an unsigned int or a boolean */
    uint64_t t = 0, m = 0;
    CUpointer_attribute at[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[2] = {&t, &m};
    CUresult r = CAP_NEXT(cuPointerGetAttributes)(2, at, data, (CUdeviceptr)p);
    if (r != CUDA_SUCCESS) { /* one at a time: INVALID_VALUE means "not a CUDA pointer" */
        t = m = 0;
        r = CAP_NEXT(cuPointerGetAttribute)(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)p);
        if (r == CUDA_SUCCESS &&
            CAP_NEXT(cuPointerGetAttribute)(&m, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)p) !=
                CUDA_SUCCESS)
            m = 0;
        if (r == CUDA_ERROR_INVALID_VALUE)
            t = 0, r = CUDA_SUCCESS;
    }
    if (r != CUDA_SUCCESS)
        return -1;
    *type = (unsigned)t;
    *managed = m != 0;
    return 0;
}

/* Classifies [p, p+n). declared_host: the entry point types p as a host pointer, so the
 * driver read or wrote it as one; trusted when the driver cannot classify it. */
static int classify(uint64_t p, uint64_t n, int declared_host, uint64_t *res, uint64_t *off)
{
    long i = alloc_find(p);
    if (i >= 0)
        return resolve(p, n, res, off) ? SIDE_TRACKED : SIDE_SPAN;
    unsigned type;
    int managed;
    if (ptr_attrs(p, &type, &managed) < 0)
        return declared_host ? SIDE_HOST : SIDE_UNKNOWN;
    if (managed)
        return SIDE_MANAGED;
    return type == 0 || type == CU_MEMORYTYPE_HOST ? SIDE_HOST : SIDE_DEVICE;
}

/* ========================================================================================== */
/* Copies, fills, host reads                                                                  */
/* ========================================================================================== */

static void host_read(uint64_t res, uint64_t off, const void *host, uint64_t len)
{
    struct sbt_op op;
    struct cap_cuda_call c = {0, 0, NULL, cap_cuda_now(), 0, 0};
    c.t1 = c.t0;
    op_init(&op, SBT_OP_HOST_READ, &c);
    op.name = intern("host read");
    op.stream = host_stream();
    op.flags = SBT_OPF_BYTES | SBT_OPF_DIGEST;
    op.bytes = len;
    op.digest = sbt_hash_bytes(host, len);
    struct sbt_access a = {res, off, len, SBT_ACCESS_READ};
    sbt_payload_enc_reset(&g.enc);
    emit(&op, &a, 1, NULL, NULL, 0);
}

static void resolve_closure(uint32_t stream, uint64_t before);

void cap_cuda_rec_copy(const struct cap_cuda_call *c, CUdeviceptr dst, CUdeviceptr src,
                       const void *src_host, void *dst_host, size_t n, int is_async)
{
    if (!g.on)
        return;
    uint64_t dp = dst_host ? (uint64_t)(uintptr_t)dst_host : dst;
    uint64_t sp = src_host ? (uint64_t)(uintptr_t)src_host : src;
    uint64_t dres = 0, doff = 0, sres = 0, soff = 0;
    int dk = classify(dp, n, dst_host != NULL, &dres, &doff);
    int sk = classify(sp, n, src_host != NULL, &sres, &soff);
    int ok = (dk == SIDE_TRACKED || dk == SIDE_HOST) && (sk == SIDE_TRACKED || sk == SIDE_HOST);
    /* the direction the memory says, whatever the entry point's name (with unified addressing
     * the driver goes by the addresses too) */
    uint32_t dir = dk == SIDE_TRACKED ? (sk == SIDE_TRACKED ? SBT_COPY_D2D : SBT_COPY_H2D)
                                      : (sk == SIDE_TRACKED ? SBT_COPY_D2H : SBT_COPY_H2H);
    struct sbt_op op;
    op_init(&op, SBT_OP_COPY, c);
    op.stream = stream_of(c, NULL);
    op.flags = SBT_OPF_BYTES;
    op.bytes = n;
    struct sbt_access acc[2];
    uint32_t n_acc = 0;
    if (!ok) {
        dir = src_host ? SBT_COPY_H2D : dst_host ? SBT_COPY_D2H : SBT_COPY_D2D;
        char what[96];
        int bad_src = sk != SIDE_TRACKED && sk != SIDE_HOST;
        snprintf(what, sizeof what, "copy %s %s", bad_src ? "from" : "to",
                 side_name(bad_src ? sk : dk));
        op.flags |= SBT_OPF_UNSUPPORTED;
        cap_cuda_unsupported(what, 1);
    } else {
        if (sk == SIDE_TRACKED)
            acc[n_acc++] = (struct sbt_access){sres, soff, n, SBT_ACCESS_READ};
        if (dk == SIDE_TRACKED)
            acc[n_acc++] = (struct sbt_access){dres, doff, n, SBT_ACCESS_WRITE};
        if (dir == SBT_COPY_H2D) { /* classified as host memory: safe to read */
            op.flags |= SBT_OPF_BLOB;
            writer_check(sbt_writer_blob(g.w, (const void *)(uintptr_t)sp, n, &op.blob),
                         "storing copy data");
        }
    }
    op.subkind = dir;
    enc_call(c, CUDA_SUCCESS);
    uint64_t args[3] = {dk == SIDE_TRACKED ? dp : 0, sk == SIDE_TRACKED ? sp : 0, n};
    sbt_payload_put(&g.enc, SBT_CUDA_COPY, args, 3, NULL, 0);
    emit(&op, acc, n_acc, NULL, NULL, 0);
    if (dir != SBT_COPY_D2H || !ok || !n)
        return;
    if (g.captured) { /* read when a launch of its graph has run */
        g.captured->read_host = (void *)(uintptr_t)dp;
        g.captured->read_len = n;
        g.captured->read_res = sres;
        g.captured->read_off = soff;
        return;
    }
    if (!is_async) {
        host_read(sres, soff, (const void *)(uintptr_t)dp, n);
        resolve_closure(op.stream, g.ord); /* it waited for its stream's earlier work */
        return;
    }
    if (g.n_reads == g.cap_reads) {
        size_t cap = g.cap_reads ? g.cap_reads * 2 : 64;
        struct pending_read *r = realloc(g.reads, cap * sizeof *r);
        if (!r) {
            cap_cuda_fail("out of memory");
            return;
        }
        g.reads = r, g.cap_reads = cap;
    }
    g.reads[g.n_reads++] =
        (struct pending_read){op.stream, (void *)(uintptr_t)dp, n, sres, soff, g.ord};
}

void cap_cuda_rec_fill(const struct cap_cuda_call *c, CUdeviceptr dst, uint32_t elem,
                       uint32_t value, size_t n)
{
    if (!g.on)
        return;
    uint64_t res = 0, off = 0, bytes = (uint64_t)n * elem;
    struct sbt_op op;
    op_init(&op, SBT_OP_FILL, c);
    op.stream = stream_of(c, NULL);
    op.flags = SBT_OPF_BYTES | SBT_OPF_OBJ;
    op.bytes = bytes;
    op.value = value;
    struct sbt_access a;
    uint32_t n_acc = 0;
    int k = classify(dst, bytes, 0, &res, &off);
    if (k == SIDE_TRACKED) {
        a = (struct sbt_access){res, off, bytes, SBT_ACCESS_WRITE}, n_acc = 1;
    } else {
        char what[96];
        snprintf(what, sizeof what, "memset of %s", side_name(k));
        op.flags |= SBT_OPF_UNSUPPORTED;
        cap_cuda_unsupported(what, 1);
    }
    enc_call(c, CUDA_SUCCESS);
    uint64_t args[4] = {dst, elem, value, n};
    sbt_payload_put(&g.enc, SBT_CUDA_FILL, args, 4, NULL, 0);
    emit(&op, &a, n_acc, NULL, NULL, 0);
}

/* Emits HOST_READ ops for the async D2H copies a completed wait covers: those on stream (0 =
 * every stream) issued before ordinal before. */
static void resolve_reads(uint32_t stream, uint64_t before)
{
    size_t o = 0;
    for (size_t i = 0; i < g.n_reads; i++) {
        struct pending_read *r = &g.reads[i];
        if ((!stream || r->stream == stream) && r->ord < before)
            host_read(r->res, r->off, r->host, r->len);
        else
            g.reads[o++] = *r;
    }
    g.n_reads = o;
    if (!o) /* a wait recorded now can only tell of copies issued later */
        g.n_swaits = 0;
}

/* Whether a stream synchronises with its device's legacy stream (a per-thread stream does; a
 * created one unless CU_STREAM_NON_BLOCKING). */
static int is_blocking(const struct stream_info *i)
{
    return i->origin == SBT_CUDA_STREAM_PER_THREAD ||
           (i->origin == SBT_CUDA_STREAM_CREATED && !(i->flags & CU_STREAM_NON_BLOCKING));
}

#define MAX_COVER 64
struct cover {
    uint32_t n;
    struct {
        uint32_t stream;
        uint64_t before;
    } v[MAX_COVER];
};

static int cover_add(struct cover *c, uint32_t stream, uint64_t before)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (c->v[i].stream == stream) {
            if (before <= c->v[i].before)
                return 0;
            c->v[i].before = before;
            return 1;
        }
    if (c->n == MAX_COVER)
        return 0; /* the rest resolves at a later sync */
    c->v[c->n].stream = stream;
    c->v[c->n].before = before;
    c->n++;
    return 1;
}

/* The host learned that stream's work issued before ordinal before finished: so did what it
 * waited for, transitively — events recorded on other streams it waited for
 * (cuStreamWaitEvent), and the legacy stream's implicit synchronisation: legacy-stream work
 * waits for the blocking streams' earlier work, and a blocking stream's work for the legacy
 * stream's. Emits the HOST_READ ops of every async copy that covers. */
static void resolve_closure(uint32_t stream, uint64_t before)
{
    struct cover c = {0};
    cover_add(&c, stream, before);
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t i = 0; i < c.n; i++) {
            uint32_t s = c.v[i].stream;
            uint64_t b = c.v[i].before;
            for (size_t k = 0; k < g.n_swaits; k++)
                if (g.swaits[k].stream == s && g.swaits[k].ord < b)
                    changed |= cover_add(&c, g.swaits[k].on_stream, g.swaits[k].on_ord);
            if (s >= g.cap_sinfo)
                continue;
            const struct stream_info *si = &g.sinfo[s];
            if (si->origin == SBT_CUDA_STREAM_LEGACY) {
                for (uint32_t t = 1; t < g.cap_sinfo; t++)
                    if (g.sinfo[t].dev == si->dev && is_blocking(&g.sinfo[t]))
                        changed |= cover_add(&c, t, b);
            } else if (is_blocking(si) && si->last_ord < b && g.dev[si->dev].legacy) {
                /* all of it: its last op waited for the legacy stream's work before it */
                changed |= cover_add(&c, g.dev[si->dev].legacy, si->last_ord);
            }
        }
    }
    for (uint32_t i = 0; i < c.n; i++)
        resolve_reads(c.v[i].stream, c.v[i].before);
}

uint64_t cap_cuda_ord(void)
{
    return __atomic_load_n(&g.ord, __ATOMIC_ACQUIRE) + 1; /* every poll asks: no lock */
}

/* ---- synchronous calls: their wait, without the lock ------------------------------------------
 * A synchronous copy or fill blocks the host until the work it is ordered after is done: the
 * earlier work of its stream — the legacy stream (and through it every blocking stream's
 * earlier work), or this thread's per-thread stream (_ptds) — when NVIDIA's rules make it wait
 * at all (docs.nvidia.com/cuda/cuda-driver-api/api-sync-behavior.html): copies with a host side
 * do (pageable: "a stream sync is performed before the copy is initiated"; pinned: synchronous;
 * to the host: "returns only once the copy has completed"); device-to-device copies do not;
 * memsets only onto pinned host or managed memory. Held under the lock, that wait deadlocks a
 * program whose earlier work waits on a value another thread writes through the driver
 * (cuStreamWaitValue32 released by cuStreamWriteValue32 or a copy on a non-blocking stream):
 * that thread's wrapper waits for the lock. So the wrapper first waits without the lock — a
 * cuStreamSynchronize of the same stream, which waits for exactly that earlier work (for a
 * per-thread stream: its own, perhaps less than the copy, which also waits for the legacy
 * stream's) and never more: waiting for more could itself deadlock a program that releases the
 * wait after the call — then makes the real call under the lock, so that the trace's order is
 * still the driver's. Residual: work another thread enqueues between the two (on the stream,
 * or on a blocking stream for a legacy copy) is waited for under the lock; if it is itself
 * behind a value that a third call releases, that call waits until the copy returns. Skipped
 * while a stream capture is under way (the capture knows of it): a stream synchronisation
 * there can invalidate the program's capture, and waiting less is always safe. A pointer the
 * driver cannot classify counts as device memory (no wait). */
static int host_memory(uint64_t p, int managed_too)
{
    unsigned type;
    int managed;
    if (ptr_attrs(p, &type, &managed) < 0)
        return 0;
    if (managed)
        return managed_too;
    return type == 0 || type == CU_MEMORYTYPE_HOST;
}

void cap_cuda_prewait(int pt, int kind, uint64_t dst, uint64_t src)
{
    if (kind == CAP_PREWAIT_HOST && !host_memory(dst, 0))
        return; /* the "host" side is device memory: a device copy, by the addresses */
    if (kind == CAP_PREWAIT_ANY && !host_memory(dst, 0) && !host_memory(src, 0))
        return;
    if (kind == CAP_PREWAIT_FILL && !host_memory(dst, 1))
        return;
    cap_cuda_lock();
    int capturing = sbt_map_count(&g.cap_streams) > 0;
    cap_cuda_unlock();
    if (!capturing)
        (void)CAP_NEXT(cuStreamSynchronize)(pt ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY);
}

void cap_cuda_rec_sync(const struct cap_cuda_call *c, CUevent e, int is_ctx)
{
    cap_cuda_lock();
    if (!g.on) {
        cap_cuda_unlock();
        return;
    }
    uint32_t dev = cur_dev();
    struct sbt_op op;
    int is_query = c->api == SBT_CUDA_API_cuStreamQuery || c->api == SBT_CUDA_API_cuEventQuery;
    op_init(&op, is_ctx ? SBT_OP_DEVICE_SYNC : e ? SBT_OP_EVENT_WAIT : SBT_OP_STREAM_SYNC, c);
    op.stream = host_stream();
    op.flags = SBT_OPF_OBJ;
    uint32_t covered = 0;
    uint64_t before = c->before ? c->before : g.ord + 1;
    if (is_ctx) {
        op.obj = g.dev[dev].id;
    } else if (e) {
        struct event *ev = event_of(e);
        op.obj = ev ? ev->id : 0;
        covered = ev ? ev->rec_stream : 0;
        before = ev ? ev->rec_ord : 0;
    } else {
        op.obj = covered = stream_of(c, NULL);
    }
    enc_call(c, CUDA_SUCCESS);
    if (!is_query || g.on)
        emit(&op, NULL, 0, NULL, NULL, 0);
    if (is_ctx)
        resolve_reads(0, before);
    else if (covered)
        resolve_closure(covered, before);
    drain(is_ctx);
    cap_cuda_unlock();
}

/* ========================================================================================== */
/* Modules, libraries, kernels                                                                */
/* ========================================================================================== */

static uint32_t add_program(const void *image, const char *file, uint32_t api)
{
    void *fbuf = NULL;
    size_t len = 0;
    uint32_t kind = 0;
    if (file) {
        FILE *f = fopen(file, "rb");
        if (f) {
            if (fseek(f, 0, SEEK_END) == 0) {
                long sz = ftell(f);
                if (sz > 0 && (fbuf = malloc((size_t)sz)) && fseek(f, 0, SEEK_SET) == 0 &&
                    fread(fbuf, 1, (size_t)sz, f) == (size_t)sz)
                    len = (size_t)sz;
            }
            fclose(f);
        }
        image = fbuf;
        const void *p = image;
        if (len) {
            uint32_t k;
            sbt_cuda_image_size(&p, &k);
            kind = k;
        }
    } else {
        len = sbt_cuda_image_size(&image, &kind);
    }
    struct sbt_program p = {0};
    p.kind = kind ? kind : SBT_PROGRAM_CUBIN;
    /* named by its file, else by its content: the same image has the same name in every
     * trace, so kernels of two captures line up in diff */
    char name[64];
    if (len) {
        sbt_hash h = sbt_hash_bytes(image, len);
        snprintf(name, sizeof name, "%s:%08llx",
                 p.kind == SBT_PROGRAM_PTX      ? "ptx"
                 : p.kind == SBT_PROGRAM_FATBIN ? "fatbin"
                 : p.kind == SBT_PROGRAM_HOST   ? "image"
                                                : "cubin",
                 (unsigned long long)(h.hi >> 32));
    } else {
        snprintf(name, sizeof name, "module %u", (unsigned)(g.n_ops + 1));
    }
    p.name = intern(file ? file : name);
    if (len)
        writer_check(sbt_writer_blob(g.w, image, len, &p.blob), "storing a module image");
    else
        cap_cuda_unsupported("module image of unknown size (not stored)", 1);
    struct sbt_payload_enc e = {0};
    uint64_t a[3] = {api, len, p.kind};
    sbt_payload_put(&e, SBT_CUDA_MODULE, a, 3, file, file ? strlen(file) : 0);
    p.ext = (struct sbt_ext){SBT_CUDA_EXT_MODULE, (uint32_t)e.len, e.buf};
    uint32_t id = 0;
    if (g.on)
        writer_check(sbt_writer_add_program(g.w, &p, &id), "adding a program");
    sbt_payload_enc_free(&e);
    free(fbuf);
    return id;
}

void cap_cuda_rec_module(CUmodule mod, const void *image, const char *file, uint32_t api)
{
    if (!g.on)
        return;
    uint32_t id = add_program(image, file, api);
    if (id && sbt_map_putp(&g.modules, (uintptr_t)mod, (void *)(uintptr_t)id))
        cap_cuda_fail("out of memory");
}

void cap_cuda_rec_library(CUlibrary lib, const void *image, const char *file, uint32_t api)
{
    if (!g.on)
        return;
    uint32_t id = add_program(image, file, api);
    if (id && sbt_map_putp(&g.libs, (uintptr_t)lib, (void *)(uintptr_t)id))
        cap_cuda_fail("out of memory");
}

void cap_cuda_rec_library_module(CUlibrary lib, CUmodule mod)
{
    void *id = sbt_map_getp(&g.libs, (uintptr_t)lib);
    if (g.on && id && sbt_map_putp(&g.modules, (uintptr_t)mod, id))
        cap_cuda_fail("out of memory");
}

/* A kernel row with the layout the driver reports (is_kernel: h is a CUkernel). */
static void add_kernel(uint64_t h, uint64_t owner, uint32_t program, const char *name,
                       int is_kernel)
{
    if (!g.on || sbt_map_getp(&g.funcs, h))
        return;
    struct kern *k = calloc(1, sizeof *k);
    if (!k) {
        cap_cuda_fail("out of memory");
        return;
    }
    k->owner = owner;
    size_t cap = 0;
    for (size_t i = 0; i < 4096; i++) {
        size_t off = 0, size = 0;
        CUresult r = is_kernel
                         ? CAP_NEXT(cuKernelGetParamInfo)((CUkernel)(uintptr_t)h, i, &off, &size)
                         : CAP_NEXT(cuFuncGetParamInfo)((CUfunction)(uintptr_t)h, i, &off, &size);
        if (r != CUDA_SUCCESS) {
            k->known = i > 0 || r == CUDA_ERROR_INVALID_VALUE;
            break;
        }
        if (k->n_params == cap) {
            cap = cap ? cap * 2 : 8;
            uint32_t *o = realloc(k->off, cap * 4), *s = o ? realloc(k->size, cap * 4) : NULL;
            if (o)
                k->off = o;
            if (!o || !s) {
                cap_cuda_fail("out of memory");
                break;
            }
            k->size = s;
        }
        k->off[k->n_params] = (uint32_t)off;
        k->size[k->n_params++] = (uint32_t)size;
        if (off + size > k->param_bytes)
            k->param_bytes = off + size;
    }
    struct sbt_payload_enc e = {0};
    sbt_payload_enc_begin(&e, SBT_CUDA_KERNEL);
    sbt_payload_enc_arg(&e, (uint64_t)is_kernel);
    sbt_payload_enc_arg(&e, (uint64_t)k->known);
    sbt_payload_enc_arg(&e, k->n_params);
    for (uint32_t i = 0; i < k->n_params; i++) {
        sbt_payload_enc_arg(&e, k->off[i]);
        sbt_payload_enc_arg(&e, k->size[i]);
    }
    sbt_payload_enc_end(&e, NULL, 0);
    struct sbt_kernel row = {0};
    row.program = program;
    row.name = k->name = intern(name);
    row.ext = (struct sbt_ext){SBT_CUDA_EXT_KERNEL, (uint32_t)e.len, e.buf};
    if (g.n_kerns == g.cap_kerns) {
        size_t c2 = g.cap_kerns ? g.cap_kerns * 2 : 64;
        struct kern **kk = realloc(g.kerns, c2 * sizeof *kk);
        if (kk)
            g.kerns = kk, g.cap_kerns = c2;
    }
    if (g.n_kerns == g.cap_kerns || sbt_payload_enc_status(&e) < 0 ||
        sbt_map_putp(&g.funcs, h, k)) {
        free(k->off);
        free(k->size);
        free(k);
        cap_cuda_fail("out of memory");
    } else {
        g.kerns[g.n_kerns++] = k;
        if (!k->known)
            cap_cuda_unsupported("kernel without a parameter layout (cuFuncGetParamInfo failed)",
                                 0); /* its launches with kernelParams are marked */
        if (g.on)
            writer_check(sbt_writer_add_kernel(g.w, &row, &k->id), "adding a kernel");
    }
    sbt_payload_enc_free(&e);
}

void cap_cuda_rec_function(CUfunction f, CUmodule mod, const char *name)
{
    add_kernel((uintptr_t)f, (uintptr_t)mod,
               (uint32_t)(uintptr_t)sbt_map_getp(&g.modules, (uintptr_t)mod), name, 0);
}

void cap_cuda_rec_kernel(CUkernel k, CUlibrary lib, const char *name)
{
    add_kernel((uintptr_t)k, (uintptr_t)lib,
               (uint32_t)(uintptr_t)sbt_map_getp(&g.libs, (uintptr_t)lib), name, 1);
}

void cap_cuda_rec_unload(uint64_t h, int is_library)
{
    if (!g.on)
        return;
    /* its functions and kernels are forgotten: a handle the driver hands out again names
     * another function, recorded as such when it is obtained */
    uint64_t keys[256], pos, key, val;
    size_t n;
    do { /* (deleting moves entries: collect, then delete, until none is left) */
        n = 0;
        pos = 0;
        while (n < 256 && sbt_map_next(&g.funcs, &pos, &key, &val))
            if (val && ((const struct kern *)(uintptr_t)val)->owner == h)
                keys[n++] = key;
        for (size_t i = 0; i < n; i++)
            sbt_map_delp(&g.funcs, keys[i]);
    } while (n == 256);
    if (is_library)
        sbt_map_delp(&g.libs, h);
    else
        sbt_map_delp(&g.modules, h);
}

void cap_cuda_rec_func_attr(uint64_t h, int attrib, int value)
{
    struct kern *k = sbt_map_getp(&g.funcs, h);
    if (!g.on)
        return;
    if (!k) { /* a function the capture did not see obtained: its launches are marked too */
        cap_cuda_unsupported("function attribute of a function not captured", 1);
        return;
    }
    uint32_t i = 0;
    while (i < k->n_attr && k->attr[i].id != attrib)
        i++;
    if (i == SBT_CUDA_MAX_ATTRS) {
        cap_cuda_unsupported("more than 16 function attributes on one function", 1);
        return;
    }
    k->attr[i].id = attrib;
    k->attr[i].value = value;
    if (i == k->n_attr)
        k->n_attr++;
}

void cap_cuda_rec_kernel_function(CUfunction f, CUkernel k)
{
    struct kern *kk = sbt_map_getp(&g.funcs, (uintptr_t)k);
    if (g.on && kk && !sbt_map_getp(&g.funcs, (uintptr_t)f) &&
        sbt_map_putp(&g.funcs, (uintptr_t)f, kk))
        cap_cuda_fail("out of memory");
}

/* ========================================================================================== */
/* Launches                                                                                   */
/* ========================================================================================== */

/* Packs the parameters into buf (malloc'd): kernelParams at the layout's offsets, or the
 * extra buffer as given. 0 ok, -1 when the bytes cannot be known. */
static int pack_params(const struct kern *k, const struct cap_cuda_launch *l, uint8_t **buf,
                       uint64_t *len, uint32_t *form)
{
    *buf = NULL, *len = 0, *form = 0;
    if (l->extra) {
        const void *p = NULL;
        size_t n = 0;
        for (size_t i = 0; l->extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
            if (l->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                p = l->extra[i + 1];
            else if (l->extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && l->extra[i + 1])
                n = *(const size_t *)l->extra[i + 1];
        }
        if (!p && n)
            return -1;
        *form = 1;
        if (n && !(*buf = malloc(n)))
            return -1;
        if (n)
            memcpy(*buf, p, n);
        *len = n;
        return 0;
    }
    if (!k || !k->known)
        return -1;
    if (k->param_bytes && !(*buf = calloc(1, k->param_bytes)))
        return -1;
    for (uint32_t i = 0; i < k->n_params; i++)
        if (l->params && l->params[i])
            memcpy(*buf + k->off[i], l->params[i], k->size[i]);
    *len = k->param_bytes;
    return 0;
}

/* Starts timing for a launch on stream s: two events, the first recorded now. */
static void timing_begin(const struct cap_cuda_call *c, uint32_t dev, CUevent *ev0, CUevent *ev1)
{
    *ev0 = *ev1 = NULL;
    __typeof__(&cuEventRecord) record =
        c->pt ? CAP_NEXT(cuEventRecord_ptsz) : CAP_NEXT(cuEventRecord);
    if (!g.dev[dev].ref) {
        /* the reference point: recorded on a stream of our own that waits for nothing (no
         * blocking stream: it must not wait for the program's work, which may wait for another
         * thread that needs the lock), so that waiting for it under the lock is immediate */
        CUevent ref;
        CUstream own;
        if (CAP_NEXT(cuStreamCreate)(&own, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
            return;
        if (CAP_NEXT(cuEventCreate)(&ref, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
            CAP_NEXT(cuStreamDestroy_v2)(own);
            return;
        }
        CUresult rr = CAP_NEXT(cuEventRecord)(ref, own);
        if (rr == CUDA_SUCCESS)
            rr = CAP_NEXT(cuEventSynchronize)(ref);
        CAP_NEXT(cuStreamDestroy_v2)(own);
        if (rr != CUDA_SUCCESS) {
            CAP_NEXT(cuEventDestroy_v2)(ref);
            return;
        }
        g.dev[dev].ref = ref;
        g.dev[dev].ref_host = cap_cuda_now();
    }
    if (CAP_NEXT(cuEventCreate)(ev0, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        *ev0 = NULL;
    else if (CAP_NEXT(cuEventCreate)(ev1, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
             record(*ev0, c->stream) != CUDA_SUCCESS) {
        CAP_NEXT(cuEventDestroy_v2)(*ev0);
        if (*ev1)
            CAP_NEXT(cuEventDestroy_v2)(*ev1);
        *ev0 = *ev1 = NULL;
    }
}

CUresult cap_cuda_rec_launch(const struct cap_cuda_call *cc, const struct cap_cuda_launch *l,
                             CUresult (*issue)(void *ctx), void *ctx)
{
    cap_cuda_lock();
    if (!g.on) {
        cap_cuda_unlock();
        return issue(ctx);
    }
    struct cap_cuda_call c = *cc;
    const struct kern *k = sbt_map_getp(&g.funcs, (uintptr_t)l->f);
    uint8_t *buf;
    uint64_t len;
    uint32_t form, dev = 0;
    int packed = pack_params(k, l, &buf, &len, &form) == 0;
    uint32_t stream = stream_of(&c, &dev);
    CUevent ev0 = NULL, ev1 = NULL;
    if (g.timing &&
        !sbt_map_getp(&g.cap_streams, stream)) /* (an event record would be a graph node) */
        timing_begin(&c, dev, &ev0, &ev1);
    c.t0 = cap_cuda_now();
    CUresult r = issue(ctx);
    c.t1 = cap_cuda_now();
    if (ev1) {
        __typeof__(&cuEventRecord) record =
            c.pt ? CAP_NEXT(cuEventRecord_ptsz) : CAP_NEXT(cuEventRecord);
        if (r != CUDA_SUCCESS || record(ev1, c.stream) != CUDA_SUCCESS) {
            CAP_NEXT(cuEventDestroy_v2)(ev0);
            CAP_NEXT(cuEventDestroy_v2)(ev1);
            ev0 = ev1 = NULL;
        }
    }
    if (r != CUDA_SUCCESS) {
        free(buf);
        cap_cuda_unlock();
        return r;
    }
    struct sbt_op op;
    op_init(&op, SBT_OP_KERNEL, &c);
    op.stream = stream;
    op.flags = SBT_OPF_GEOM;
    if (k) {
        op.flags |= SBT_OPF_KERNEL;
        op.kernel = k->id;
        op.name = k->name;
    }
    for (int i = 0; i < 3; i++)
        op.grid[i] = l->grid[i], op.block[i] = l->block[i];
    op.shmem = l->shmem;
    enc_call(&c, r);
    uint64_t la[2] = {form, len};
    sbt_payload_put(&g.enc, SBT_CUDA_LAUNCH, la, 2, buf, packed ? len : 0);
    for (unsigned i = 0; i < l->n_attrs && l->attrs; i++) {
        uint64_t id = (uint64_t)l->attrs[i].id;
        sbt_payload_put(&g.enc, SBT_CUDA_LAUNCH_ATTR, &id, 1, &l->attrs[i].value,
                        sizeof l->attrs[i].value);
    }
    for (uint32_t i = 0; k && i < k->n_attr; i++) {
        uint64_t fa[2] = {(uint64_t)k->attr[i].id, (uint64_t)(int64_t)k->attr[i].value};
        sbt_payload_put(&g.enc, SBT_CUDA_FUNC_ATTR, fa, 2, NULL, 0);
    }
    if (l->cooperative) {
        uint64_t id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        CUlaunchAttributeValue v;
        memset(&v, 0, sizeof v);
        v.cooperative = 1;
        sbt_payload_put(&g.enc, SBT_CUDA_LAUNCH_ATTR, &id, 1, &v, sizeof v);
    }
    /* Device addresses among the parameters: every aligned 8-byte word that falls inside a
     * live allocation. HRR also skips words whose low half is below 0x10000 (packed scalars),
     * but allocations at 4 GiB-aligned addresses are common, so only the interval map decides.
     * A word outside the map that could be a user-space address is shown to the driver: memory
     * it knows (pinned host memory through its device alias, managed or untracked device
     * memory) is memory the kernel may touch and the trace does not hold. */
    struct sbt_access acc[64];
    uint32_t n_acc = 0;
    int untracked = -1, too_many = 0;
    for (uint64_t o = 0; packed && o + 8 <= len; o += 8) {
        uint64_t v;
        memcpy(&v, buf + o, 8);
        if (v < 0x10000)
            continue;
        long i = alloc_find(v);
        if (i < 0) {
            unsigned type;
            int managed;
            if (v < MAX_USER_ADDRESS && untracked < 0 && ptr_attrs(v, &type, &managed) == 0 &&
                (managed || type))
                untracked = managed                      ? SIDE_MANAGED
                            : type == CU_MEMORYTYPE_HOST ? SIDE_HOST
                                                         : SIDE_DEVICE;
            continue;
        }
        const struct alloc *a = &g.allocs[i];
        uint64_t pa[4] = {o, a->res, v - a->base, v};
        sbt_payload_put(&g.enc, SBT_CUDA_PTR, pa, 4, NULL, 0);
        uint32_t j = 0;
        while (j < n_acc && acc[j].resource != a->res)
            j++;
        if (j == n_acc && n_acc < sizeof acc / sizeof acc[0])
            acc[n_acc++] = (struct sbt_access){a->res, 0, a->size, SBT_ACCESS_RW};
        else if (j == n_acc)
            too_many = 1;
    }
    if (too_many) {
        op.flags |= SBT_OPF_UNSUPPORTED;
        cap_cuda_unsupported("launch referencing more than 64 allocations", 1);
    }
    if (!packed || !k) {
        op.flags |= SBT_OPF_UNSUPPORTED;
        cap_cuda_unsupported(!k ? "launch of a function loaded outside the wrapped loaders"
                                : "launch whose parameter bytes are unknown",
                             1);
    }
    if (untracked >= 0) {
        char what[96];
        snprintf(what, sizeof what, "launch with a parameter pointing into %s",
                 untracked == SIDE_HOST ? "pinned host memory" : side_name(untracked));
        op.flags |= SBT_OPF_UNSUPPORTED;
        cap_cuda_unsupported(what, 1);
    }
    emit(&op, acc, n_acc, ev0, ev1, dev);
    if (g.qhead)
        drain(0);
    free(buf);
    cap_cuda_unlock();
    return r;
}

/* ========================================================================================== */
/* Start and end                                                                              */
/* ========================================================================================== */

/* ========================================================================================== */
/* CUDA graphs made by stream capture                                                          */
/* ========================================================================================== */

static void graph_add(struct grec *gr, const struct sbt_op *op, const struct sbt_access *acc,
                      uint32_t n_acc)
{
    if (op->kind == SBT_OP_ALLOC || op->kind == SBT_OP_FREE)
        snprintf(gr->bad, sizeof gr->bad, "a stream-ordered allocation or free inside a graph");
    if (gr->n == gr->cap) {
        size_t c = gr->cap ? 2 * gr->cap : 16;
        struct gop *n = realloc(gr->ops, c * sizeof *n);
        if (!n) {
            cap_cuda_fail("out of memory recording a graph");
            return;
        }
        gr->ops = n, gr->cap = c;
    }
    struct gop *o = &gr->ops[gr->n];
    memset(o, 0, sizeof *o);
    o->op = *op;
    if ((n_acc && !(o->acc = malloc(n_acc * sizeof *acc))) ||
        (g.enc.len && !(o->payload = malloc(g.enc.len)))) {
        free(o->acc);
        cap_cuda_fail("out of memory recording a graph");
        return;
    }
    if (n_acc)
        memcpy(o->acc, acc, n_acc * sizeof *acc);
    if (g.enc.len)
        memcpy(o->payload, g.enc.buf, g.enc.len);
    o->payload_len = (uint32_t)g.enc.len;
    o->op.n_access = n_acc;
    o->op.access = NULL;
    o->op.payload = (struct sbt_ext){0};
    gr->n++;
    g.captured = o;
}

void cap_cuda_rec_capture_begin(const struct cap_cuda_call *c)
{
    if (!g.on)
        return;
    uint32_t sid = stream_of(c, NULL);
    struct grec *gr = calloc(1, sizeof *gr);
    if (!gr || sbt_map_putp(&g.cap_streams, sid, gr)) {
        free(gr);
        cap_cuda_fail("out of memory");
        return;
    }
    gr->id = ++g.n_grecs;
    gr->open = 1;
    gr->next = g.grecs;
    g.grecs = gr;
}

void cap_cuda_rec_capture_end(const struct cap_cuda_call *c, CUgraph graph)
{
    if (!g.on)
        return;
    struct grec *gr = sbt_map_getp(&g.cap_streams, stream_of(c, NULL));
    if (!gr)
        return;
    gr->open = 0;
    uint64_t pos = 0, k, v, joined[64];
    size_t n = 0; /* every stream that joined it (a capture with more keeps the rest joined) */
    while (sbt_map_next(&g.cap_streams, &pos, &k, &v) && n < sizeof joined / sizeof joined[0])
        if ((struct grec *)(uintptr_t)v == gr)
            joined[n++] = k;
    for (size_t i = 0; i < n; i++)
        sbt_map_del(&g.cap_streams, joined[i]);
    if (graph && sbt_map_putp(&g.graphs, (uintptr_t)graph, gr))
        cap_cuda_fail("out of memory");
}

void cap_cuda_rec_graph_instantiate(CUgraphExec exec, CUgraph graph)
{
    if (!g.on)
        return;
    struct grec *gr = sbt_map_getp(&g.graphs, (uintptr_t)graph);
    sbt_map_del(&g.execs, (uintptr_t)exec);
    if (gr && sbt_map_putp(&g.execs, (uintptr_t)exec, gr))
        cap_cuda_fail("out of memory");
}

void cap_cuda_rec_graph_destroy(CUgraph graph, CUgraphExec exec)
{
    if (graph)
        sbt_map_del(&g.graphs, (uintptr_t)graph);
    if (exec)
        sbt_map_del(&g.execs, (uintptr_t)exec);
}

void cap_cuda_rec_graph_launch(const struct cap_cuda_call *c, CUgraphExec exec)
{
    if (!g.on)
        return;
    struct grec *gr = sbt_map_getp(&g.execs, (uintptr_t)exec);
    if (!gr || gr->bad[0]) {
        char what[160];
        snprintf(what, sizeof what, "cuGraphLaunch of %s",
                 !gr ? "a graph not made by stream capture (or changed since)" : gr->bad);
        cap_cuda_unsupported(what, 1);
        unsupported_marker(what);
        return;
    }
    uint32_t sid = stream_of(c, NULL);
    struct sbt_op m;
    op_init(&m, SBT_OP_MARKER, c);
    m.stream = host_stream();
    m.flags = SBT_OPF_OBJ;
    m.obj = gr->id;
    enc_call(c, CUDA_SUCCESS);
    emit(&m, NULL, 0, NULL, NULL, 0);
    for (size_t i = 0; i < gr->n; i++) {
        const struct gop *o = &gr->ops[i];
        struct sbt_op op = o->op;
        op.stream = sid;
        op.host_begin = c->t0;
        op.host_end = c->t1 >= c->t0 ? c->t1 : c->t0;
        op.flags &= ~(uint32_t)SBT_OPF_DEV_TIME;
        sbt_payload_enc_reset(&g.enc);
        if (o->payload_len)
            sbt_payload_enc_raw(&g.enc, o->payload, o->payload_len); /* emit checks the status */
        emit(&op, o->acc, op.n_access, NULL, NULL, 0);
        if (o->event) { /* recorded again by this launch */
            struct event *ev = event_of(o->event);
            if (ev && !g.captured) {
                ev->rec_stream = sid;
                ev->rec_ord = g.ord;
            }
        }
        if (o->read_host && !g.captured) { /* read when the launch is seen finished */
            if (g.n_reads == g.cap_reads) {
                size_t cap = g.cap_reads ? g.cap_reads * 2 : 64;
                struct pending_read *r = realloc(g.reads, cap * sizeof *r);
                if (!r) {
                    cap_cuda_fail("out of memory");
                    return;
                }
                g.reads = r, g.cap_reads = cap;
            }
            g.reads[g.n_reads++] = (struct pending_read){sid,         o->read_host, o->read_len,
                                                         o->read_res, o->read_off,  g.ord};
        }
    }
}

static void graphs_free(void)
{
    while (g.grecs) {
        struct grec *gr = g.grecs;
        g.grecs = gr->next;
        for (size_t i = 0; i < gr->n; i++) {
            free(gr->ops[i].acc);
            free(gr->ops[i].payload);
        }
        free(gr->ops);
        free(gr);
    }
    sbt_map_free(&g.cap_streams);
    sbt_map_free(&g.graphs);
    sbt_map_free(&g.execs);
}

static void meta(const char *k, const char *v)
{
    if (g.on)
        writer_check(sbt_writer_meta(g.w, k, v), "writing metadata");
}

static void rec_stop(void);

/* The pump's work (cap_int.h): every CAP_FLUSH_MS, and at once for a fatal signal, the chunk
 * being filled is cut and written, so that a killed or crashed program keeps its ops. Ops
 * waiting in the queue for their device times (REPRISE_TIMING=1) are not written: reading
 * their events would call the driver from this thread. */
static void flush_work(unsigned what)
{
    if (!(what & CAP_PUMP_FLUSH))
        return;
    int urgent = (what & CAP_PUMP_URGENT) != 0;
    if (!cap__lock_bounded(&g.mu, urgent))
        return; /* held by the thread that crashed, perhaps: the timer's flushes remain */
    if (g.w && !g.closed && g.on) {
        char why[512];
        if (urgent && cap__flush_reasons(why, sizeof why))
            meta("capture.flush_reason", why);
        writer_check(cap__clock_pair(g.w, "flush", g.n_ops), "writing a clock pair");
        writer_check(sbt_writer_flush(g.w), "flushing the trace");
    }
    cap_cuda_unlock();
}

/* A forked child shares the trace's file descriptor but not the pump: it records nothing, and
 * at its exit it must not write its copy of the writer's state over the parent's trace. */
static void atfork_child(void)
{
    __atomic_store_n(&g.on, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g.closed, 1, __ATOMIC_RELEASE);
}

void cap_cuda_rec_start(void)
{
    cap_cuda_lock();
    if (g.started) {
        cap_cuda_unlock();
        return;
    }
    g.started = 1;
    g.qtail = &g.qhead;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    g.epoch = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    g.timing = cap__env_flag(CAP_ENV_TIMING);
    g.digests = cap__env_flag(CAP_ENV_DIGESTS);
    cap__trace_path(g.path, sizeof g.path);
    struct sbt_writer_opts o = cap__writer_opts();
    if (sbt_writer_open(g.path, &o, &g.w) < 0) {
        fprintf(stderr, "reprise: CUDA capture: cannot open trace %s: %s; not recording\n", g.path,
                sbt_errmsg());
        cap_cuda_unlock();
        return;
    }
    cap__manifest_add(g.path);
    __atomic_store_n(&g.on, 1, __ATOMIC_RELEASE);
    writer_check(cap__meta_process(g.w, "cuda", "reprise libreprise_cuda.so 0.1.0", g.epoch),
                 "writing metadata");
    meta("capture.timing", g.timing ? "1" : "0");
    meta("capture.digests", "0");
    meta("cuda.driver", cap_cuda_driver_path());
    meta("cuda.deployment", "libcuda.so.1 replacement directory on LD_LIBRARY_PATH");
    meta("cuda.resources", "device allocations and module globals; parameter words inside one "
                           "are recorded as (offset, resource, offset in resource)");
    if (g.digests)
        unsup_note("REPRISE_DIGESTS (per-launch digests are not implemented for CUDA)", 1,
                   SBT_SEQ_NONE, 0);
    atexit(rec_stop);
    pthread_atfork(NULL, NULL, atfork_child);
    if (cap__pump_start(CAP_FLUSH_MS, flush_work))
        fprintf(stderr, "reprise: CUDA capture: cannot start the flush thread; the trace is "
                        "written when chunks fill and at exit only\n");
    cap__signals_install();
    cap_cuda_unlock();
}

static void write_stats(uint64_t n_unsup_calls)
{
    const char *why = g.fail_reason[0] ? g.fail_reason : g.affects;
    if (cap__env_flag(CAP_ENV_SUMMARY))
        fprintf(stderr, "reprise capture: %s: %" PRIu64 " ops, %" PRIu64 " unsupported calls%s%s\n",
                g.path, g.n_ops, n_unsup_calls, why[0] ? "; incomplete: " : "", why);
    const char *p = getenv(CAP_ENV_STATS);
    FILE *f = p && *p && cap__is_root() ? fopen(p, "w") : NULL; /* the CLI reads the others' */
    if (!f)
        return;
    fprintf(f, "trace=%s\nops=%" PRIu64 "\ncalls=%" PRIu64 "\nunsupported=%" PRIu64 "\n", g.path,
            g.n_ops, g.n_calls, n_unsup_calls);
    for (uint32_t i = 0; i < g.n_unsup; i++)
        fprintf(f, "unsupported.%s=%" PRIu64 "\n", g.unsup[i].what, g.unsup[i].count);
    fprintf(f, "incomplete=%s\n", why);
    fclose(f);
}

/* atexit (registered after the real cuInit, so it runs before the driver's own teardown). */
static void rec_stop(void)
{
    if (__atomic_load_n(&g.closed, __ATOMIC_ACQUIRE))
        return; /* a forked child (its copy of the lock may be held by no thread of its own) */
    cap__pump_stop(); /* before the lock: its last flush takes it */
    cap_cuda_lock();
    if (g.closed || !g.w) {
        cap_cuda_unlock();
        return;
    }
    g.closed = 1;
    if (g.on && g.qhead) {
        CAP_NEXT(cuCtxSynchronize)();
        drain(1);
    }
    if (g.n_reads)
        unsup_note("async device-to-host copies never synchronised (no digest)", g.n_reads,
                   SBT_SEQ_NONE, 0);
    if (g.on)
        writer_check(cap__clock_pair(g.w, "end", g.n_ops), "writing a clock pair");
    uint64_t total = write_completeness();
    if (g.fail_reason[0])
        sbt_writer_mark_incomplete(g.w, g.fail_reason);
    if (sbt_writer_close(g.w) < 0)
        fprintf(stderr, "reprise capture: closing %s: %s\n", g.path, sbt_errmsg());
    g.w = NULL;
    __atomic_store_n(&g.on, 0, __ATOMIC_RELEASE);
    write_stats(total);
    while (g.qhead) {
        struct qop *q = g.qhead;
        g.qhead = q->next;
        qop_free(q);
    }
    free_map_and_values(&g.streams);
    free_map_and_values(&g.events);
    sbt_map_free(&g.pt_streams);
    sbt_map_free(&g.host_streams);
    sbt_map_free(&g.modules);
    sbt_map_free(&g.libs);
    sbt_map_free(&g.funcs);
    graphs_free();
    for (size_t i = 0; i < g.n_kerns; i++) {
        free(g.kerns[i]->off);
        free(g.kerns[i]->size);
        free(g.kerns[i]);
    }
    free(g.kerns);
    free(g.allocs);
    free(g.reads);
    free(g.swaits);
    free(g.sinfo);
    sbt_payload_enc_free(&g.enc);
    cap_cuda_unlock();
}
