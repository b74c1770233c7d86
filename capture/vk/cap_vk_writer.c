/*
 * capture/vk/cap_vk_writer.c — the capture's back half: per-thread event buffers, the writer
 * thread that puts events back into global order and feeds the sbt_writer, opening and
 * closing the trace, and failing safely.
 *
 * Order. Every batch of events takes one number from cap.seq (an atomic counter) when it is
 * made, then goes into the calling thread's buffer (a mutex only that thread and the writer
 * touch, so never contended on the hot path). The writer drains all buffers every few
 * milliseconds (or when kicked), keeps what it got in a min-heap by number, and writes events
 * while the heap's top is the next number; a number taken but not yet pushed holds later ones
 * back until it arrives. The sbt_writer assigns op seq in add order, so the trace's order is
 * the capture's.
 *
 * Keeping what happened. The writer thread is the pump of capture/common/cap_pump.c: it cuts
 * the chunk every CAP_FLUSH_MS, so a process killed with SIGKILL loses at most that much; on a
 * fatal signal or cap_flush_now() it writes everything queued at once (urgent), without
 * waiting on a lock the crashed thread may hold, and names the reason in the metadata
 * (capture.flush_reason). The trace of a process that died is read up to its last flush.
 *
 * Failure. Anything that goes wrong here or in the layer calls cap_fail(): one line on
 * stderr, recording off, the reason kept for sbt_writer_mark_incomplete. The program goes on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/common/cap_int.h"
#include "capture/vk/cap_vk_int.h"

struct cap_global cap = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ========================================================================================== */
/* Small helpers                                                                              */
/* ========================================================================================== */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t cap_now(void)
{
    return mono_ns() - cap.epoch_ns;
}

uint64_t cap_new_id(void)
{
    return atomic_fetch_add(&cap.next_id, 1) + 1;
}

static atomic_uint thread_counter;
static _Thread_local uint32_t my_thread;

uint32_t cap_thread(void)
{
    if (!my_thread)
        my_thread = atomic_fetch_add(&thread_counter, 1) + 1;
    return my_thread;
}

struct cap_blob *cap_blob_new(const void *data, size_t len)
{
    struct cap_blob *b = malloc(sizeof *b + len);
    if (!b)
        return NULL;
    atomic_init(&b->ref, 1);
    b->stored = 0;
    b->len = len;
    memcpy(b->data, data, len);
    b->hash = sbt_hash_bytes(b->data, len);
    return b;
}

void cap_blob_unref(struct cap_blob *b)
{
    if (b && atomic_fetch_sub(&b->ref, 1) == 1)
        free(b);
}

struct cap_ev *cap_ev_new(uint32_t type)
{
    struct cap_ev *e = calloc(1, sizeof *e);
    if (!e) {
        cap_fail("out of memory for an event");
        return NULL;
    }
    e->type = type;
    e->thread = cap_thread();
    return e;
}

size_t cap_ev_op_bytes(uint32_t n_acc, size_t payload_len)
{
    size_t n = sizeof(struct cap_ev) + n_acc * sizeof(struct sbt_access) + payload_len;
    return (n + 7) & ~(size_t)7;
}

void cap_ev_op_fix(struct cap_ev *e)
{
    struct sbt_access *acc = (struct sbt_access *)(e + 1);
    e->acc = e->op.n_access ? acc : NULL;
    e->payload = e->payload_len ? (uint8_t *)(acc + e->op.n_access) : NULL;
}

struct cap_ev *cap_ev_new_op(uint32_t n_acc, size_t payload_len)
{
    struct cap_ev *e = malloc(cap_ev_op_bytes(n_acc, payload_len));
    if (!e) {
        cap_fail("out of memory for an event");
        return NULL;
    }
    memset(e, 0, sizeof *e);
    e->type = CAP_EV_OP;
    e->thread = cap_thread();
    e->packed = 1;
    e->op.n_access = n_acc;
    e->payload_len = payload_len;
    cap_ev_op_fix(e);
    return e;
}

/* Run buffers: CAP_RUN_MAX plus a page (a run may start mid-page and grow by a page past
 * CAP_RUN_MAX - 1 bytes). At most RUN_KEEP are kept (64 MiB: one large upload in flight). */
#define RUN_BYTES (CAP_RUN_MAX + CAP_PAGE)
#define RUN_KEEP  64
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *run_free[RUN_KEEP];
static uint32_t n_run_free;

uint8_t *cap_run_alloc(void)
{
    uint8_t *p = NULL;
    pthread_mutex_lock(&run_mu);
    if (n_run_free)
        p = run_free[--n_run_free];
    pthread_mutex_unlock(&run_mu);
    return p ? p : malloc(RUN_BYTES);
}

void cap_run_free(uint8_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&run_mu);
    if (n_run_free < RUN_KEEP) {
        run_free[n_run_free++] = p;
        p = NULL;
    }
    pthread_mutex_unlock(&run_mu);
    free(p);
}

static void ev_free(struct cap_ev *e)
{
    if (!e->packed) {
        free(e->acc);
        free(e->payload);
    }
    if (e->data_pooled)
        cap_run_free(e->data);
    else
        free(e->data);
    free(e->str);
    for (uint32_t i = 0; i < e->n_recs; i++)
        cap_blob_unref(e->recs[i]);
    free(e->recs);
    if (e->timing) {
        free(e->timing->ops);
        free(e->timing->query);
        free(e->timing->pool);
        free(e->timing);
    }
    free(e);
}

void cap_ev_free_chain(struct cap_ev *e)
{
    while (e) {
        struct cap_ev *n = e->next;
        ev_free(e);
        e = n;
    }
}

/* ========================================================================================== */
/* Failure and completeness                                                                   */
/* ========================================================================================== */

static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;
static char fail_reason[256];

void cap_fail(const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&fail_mu);
    int first = !fail_reason[0];
    if (first)
        snprintf(fail_reason, sizeof fail_reason, "%s", msg);
    pthread_mutex_unlock(&fail_mu);
    atomic_store(&cap.on, 0);
    atomic_store(&cap.failed, 1);
    if (first)
        fprintf(stderr, "reprise capture: %s; recording stopped (the program goes on)\n", msg);
}

/* ========================================================================================== */
/* Per-thread buffers                                                                         */
/* ========================================================================================== */

struct tbuf {
    pthread_mutex_t mu;
    struct cap_ev **v;
    size_t n, cap;
    int dead; /* its thread exited: the writer frees it once drained */
    struct tbuf *next;
};

static pthread_mutex_t tb_list_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tbuf *tb_list;
static pthread_key_t tb_key;
static int tb_key_made;
static _Thread_local struct tbuf *my_tb;

static void tb_thread_exit(void *p)
{
    struct tbuf *tb = p;
    pthread_mutex_lock(&tb->mu);
    tb->dead = 1;
    pthread_mutex_unlock(&tb->mu);
}

static struct tbuf *tb_get(void)
{
    if (my_tb)
        return my_tb;
    struct tbuf *tb = calloc(1, sizeof *tb);
    if (!tb)
        return NULL;
    pthread_mutex_init(&tb->mu, NULL);
    pthread_mutex_lock(&tb_list_mu);
    tb->next = tb_list;
    tb_list = tb;
    pthread_mutex_unlock(&tb_list_mu);
    pthread_setspecific(tb_key, tb);
    return my_tb = tb;
}

/* ========================================================================================== */
/* Writer thread                                                                              */
/* ========================================================================================== */

static struct {
    int started; /* the pump runs: events are queued */
    sbt_writer *w;
    int broken; /* the sbt_writer failed: drain and free, write nothing */
    char path[4096];
    /* heap of batches by seq */
    struct cap_ev **heap;
    size_t n_heap, cap_heap;
    uint64_t next_seq;
    /* capture id -> sbt ids (stored as pointer-sized integers) */
    struct sbt_map devs, queues, progs, kernels, host_streams, names;
    uint64_t n_ops;
} wr;

static atomic_int initialised, closed;
static pthread_once_t once = PTHREAD_ONCE_INIT;

void cap_kick(void)
{
    cap__pump_kick();
    /* after a wait the program has run for a while: a handler it installed meanwhile goes
     * under ours (cap_int.h) */
    cap__signals_reassert();
}

/* Queues batch e under number seq (e NULL: an empty batch that only moves order on). */
static void emit_at(struct cap_ev *e, uint64_t seq, int take)
{
    if (!atomic_load(&cap.on) || !wr.started) {
        cap_ev_free_chain(e);
        return;
    }
    struct tbuf *tb = tb_get();
    if (!e && !(e = calloc(1, sizeof *e))) { /* type 0: written as nothing */
        cap_fail("out of memory for an event");
        return;
    }
    if (!tb) {
        cap_ev_free_chain(e);
        cap_fail("out of memory for a thread buffer");
        return;
    }
    pthread_mutex_lock(&tb->mu);
    e->seq = take ? atomic_fetch_add(&cap.seq, 1) : seq;
    if (tb->n == tb->cap) {
        size_t cap2 = tb->cap ? tb->cap * 2 : 64;
        struct cap_ev **v = realloc(tb->v, cap2 * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&tb->mu);
            /* the number is taken: hand the writer an empty batch so order can go on */
            cap_fail("out of memory queueing an event");
            return;
        }
        tb->v = v;
        tb->cap = cap2;
    }
    tb->v[tb->n++] = e;
    size_t n = tb->n;
    pthread_mutex_unlock(&tb->mu);
    if (n >= 256)
        cap__pump_kick();
}

void cap_emit(struct cap_ev *e)
{
    if (e)
        emit_at(e, 0, 1);
}

uint64_t cap_seq_take(void)
{
    return atomic_fetch_add(&cap.seq, 1);
}

void cap_emit_seq(struct cap_ev *e, uint64_t seq)
{
    emit_at(e, seq, 0);
}

static int heap_push(struct cap_ev *e)
{
    if (wr.n_heap == wr.cap_heap) {
        size_t c = wr.cap_heap ? wr.cap_heap * 2 : 1024;
        struct cap_ev **h = realloc(wr.heap, c * sizeof *h);
        if (!h)
            return -1;
        wr.heap = h;
        wr.cap_heap = c;
    }
    size_t i = wr.n_heap++;
    while (i && wr.heap[(i - 1) / 2]->seq > e->seq) {
        wr.heap[i] = wr.heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    wr.heap[i] = e;
    return 0;
}

static struct cap_ev *heap_pop(void)
{
    struct cap_ev *top = wr.heap[0], *last = wr.heap[--wr.n_heap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= wr.n_heap)
            break;
        if (c + 1 < wr.n_heap && wr.heap[c + 1]->seq < wr.heap[c]->seq)
            c++;
        if (wr.heap[c]->seq >= last->seq)
            break;
        wr.heap[i] = wr.heap[c];
        i = c;
    }
    if (wr.n_heap)
        wr.heap[i] = last;
    return top;
}

static void writer_failed(const char *what)
{
    if (!wr.broken)
        cap_fail("trace %s: %s: %s", wr.path, what, sbt_errmsg());
    wr.broken = 1;
}

static void meta_now(const char *key, const char *val)
{
    if (sbt_writer_meta(wr.w, key, val) < 0)
        writer_failed("writing metadata");
}

static uint32_t name_id(const char *s)
{
    if (!s || !*s)
        return 0;
    uintptr_t v = (uintptr_t)sbt_map_getp(&wr.names, (uint64_t)(uintptr_t)s);
    if (v)
        return (uint32_t)v;
    uint32_t id;
    if (sbt_writer_intern(wr.w, s, &id) < 0) {
        writer_failed("interning a name");
        return 0;
    }
    sbt_map_putp(&wr.names, (uint64_t)(uintptr_t)s, (void *)(uintptr_t)id);
    return id;
}

static uint32_t lookup(struct sbt_map *m, uint64_t id)
{
    return (uint32_t)(uintptr_t)sbt_map_getp(m, id);
}

static uint32_t host_stream(uint64_t dev_id, uint32_t thread)
{
    uint64_t key = (dev_id << 24) ^ thread ^ (1ull << 62);
    uint32_t s = lookup(&wr.host_streams, key);
    if (s)
        return s;
    char name[32];
    snprintf(name, sizeof name, "thread %u", thread);
    struct sbt_stream st = {
        .device = lookup(&wr.devs, dev_id), .kind = SBT_STREAM_HOST_THREAD, .handle = thread};
    if (sbt_writer_intern(wr.w, name, &st.name) < 0 || sbt_writer_add_stream(wr.w, &st, &s) < 0) {
        writer_failed("adding a host thread stream");
        return 0;
    }
    sbt_map_putp(&wr.host_streams, key, (void *)(uintptr_t)s);
    return s;
}

static void write_one(struct cap_ev *e)
{
    uint32_t id = 0;
    switch (e->type) {
    case CAP_EV_DEVICE: {
        struct sbt_device d = e->dev;
        if (sbt_writer_intern(wr.w, e->str ? e->str : "", &d.name) < 0)
            return writer_failed("interning a device name");
        d.ext = (struct sbt_ext){e->ext_kind, (uint32_t)e->payload_len, e->payload};
        if (sbt_writer_add_device(wr.w, &d, &id) < 0)
            return writer_failed("adding a device");
        sbt_map_putp(&wr.devs, e->dev_id, (void *)(uintptr_t)id);
        return;
    }
    case CAP_EV_QUEUE: {
        struct sbt_stream s = e->stream;
        s.device = lookup(&wr.devs, e->dev_id);
        if (sbt_writer_intern(wr.w, e->str ? e->str : "", &s.name) < 0)
            return writer_failed("interning a queue name");
        s.ext = (struct sbt_ext){e->ext_kind, (uint32_t)e->payload_len, e->payload};
        if (sbt_writer_add_stream(wr.w, &s, &id) < 0)
            return writer_failed("adding a queue stream");
        sbt_map_putp(&wr.queues, e->queue_id, (void *)(uintptr_t)id);
        return;
    }
    case CAP_EV_PROGRAM: {
        struct sbt_program p = {.device = lookup(&wr.devs, e->dev_id), .kind = SBT_PROGRAM_SPIRV};
        if (e->data && sbt_writer_blob(wr.w, e->data, e->data_len, &p.blob) < 0)
            return writer_failed("storing a SPIR-V module");
        if (sbt_writer_intern(wr.w, e->str ? e->str : "", &p.name) < 0)
            return writer_failed("interning a module name");
        p.ext = (struct sbt_ext){e->ext_kind, (uint32_t)e->payload_len, e->payload};
        if (sbt_writer_add_program(wr.w, &p, &id) < 0)
            return writer_failed("adding a program");
        sbt_map_putp(&wr.progs, e->prog_id, (void *)(uintptr_t)id);
        return;
    }
    case CAP_EV_KERNEL: {
        struct sbt_kernel k = {.program = lookup(&wr.progs, e->prog_id)};
        if (sbt_writer_intern(wr.w, e->str ? e->str : "", &k.name) < 0)
            return writer_failed("interning an entry point");
        k.ext = (struct sbt_ext){e->ext_kind, (uint32_t)e->payload_len, e->payload};
        if (sbt_writer_add_kernel(wr.w, &k, &id) < 0)
            return writer_failed("adding a kernel");
        sbt_map_putp(&wr.kernels, e->kernel_id, (void *)(uintptr_t)id);
        return;
    }
    case CAP_EV_META:
        if (sbt_writer_meta(wr.w, e->name, e->str ? e->str : "") < 0)
            return writer_failed("writing metadata");
        return;
    case CAP_EV_OP:
        break;
    default:
        return;
    }
    for (uint32_t i = 0; i < e->n_recs; i++) {
        struct cap_blob *b = e->recs[i];
        if (b->stored)
            continue;
        sbt_hash h;
        if (sbt_writer_blob(wr.w, b->data, b->len, &h) < 0)
            return writer_failed("storing a command-buffer recording");
        b->stored = 1;
    }
    struct sbt_op op = e->op;
    op.stream = e->queue_id ? lookup(&wr.queues, e->queue_id) : host_stream(e->dev_id, e->thread);
    op.thread = e->thread;
    op.name = name_id(e->name);
    if (e->kernel_id) {
        op.kernel = lookup(&wr.kernels, e->kernel_id);
        if (op.kernel)
            op.flags |= SBT_OPF_KERNEL;
    }
    if (op.kind == SBT_OP_STREAM_SYNC)
        op.obj = lookup(&wr.queues, e->obj_queue);
    if (op.kind == SBT_OP_DEVICE_SYNC)
        op.obj = lookup(&wr.devs, e->dev_id);
    if (e->data) {
        if (sbt_writer_blob(wr.w, e->data, e->data_len, &op.blob) < 0)
            return writer_failed("storing host data");
        op.flags |= SBT_OPF_BLOB;
    }
    op.access = e->acc;
    if (e->payload) {
        op.payload = (struct sbt_ext){SBT_VK_PAYLOAD, (uint32_t)e->payload_len, e->payload};
        op.flags |= SBT_OPF_PAYLOAD;
    }
    if (!op.stream)
        return; /* no device context: nothing to hang it on */
    uint64_t seq = 0;
    if (sbt_writer_add_op(wr.w, &op, &seq) < 0)
        return writer_failed("adding an op");
    if (e->unmod)
        cap_unmod_seen(e->unmod - 1, seq);
    wr.n_ops++;
}

/* Takes everything out of the thread buffers into the heap. urgent: a thread that crashed
 * may hold its buffer's lock (or the list's); what cannot be locked soon stays for later. */
static void drain(int urgent)
{
    if (!cap__lock_bounded(&tb_list_mu, urgent))
        return;
    struct tbuf **pp = &tb_list;
    while (*pp) {
        struct tbuf *tb = *pp;
        if (!cap__lock_bounded(&tb->mu, urgent)) {
            pp = &tb->next;
            continue;
        }
        struct cap_ev **v = tb->v;
        size_t n = tb->n;
        int dead = tb->dead;
        tb->v = NULL;
        tb->n = tb->cap = 0;
        pthread_mutex_unlock(&tb->mu);
        for (size_t i = 0; i < n; i++)
            if (heap_push(v[i]) < 0) {
                cap_fail("out of memory ordering events");
                cap_ev_free_chain(v[i]);
            }
        free(v);
        if (dead) {
            *pp = tb->next;
            pthread_mutex_destroy(&tb->mu);
            free(tb);
        } else {
            pp = &tb->next;
        }
    }
    pthread_mutex_unlock(&tb_list_mu);
}

/* Writes the batches that are next in order; at the end (final) writes all that remain. */
static void write_ready(int final)
{
    while (wr.n_heap && (final || wr.heap[0]->seq == wr.next_seq)) {
        struct cap_ev *top = wr.heap[0];
        if (!final && top->timing && !atomic_load(&top->timing->ready))
            return; /* its device times come when the program sees it finish */
        heap_pop();
        wr.next_seq = top->seq + 1;
        for (struct cap_ev *e = top; e; e = e->next)
            if (!wr.broken)
                write_one(e);
        cap_ev_free_chain(top);
    }
}

/* The pump's work (cap_int.h), every 5 ms or when kicked: batches into order and into the
 * sbt_writer; every CAP_FLUSH_MS the chunk is cut, so a killed process keeps its ops. */
static void writer_work(unsigned what)
{
    int urgent = (what & CAP_PUMP_URGENT) != 0;
    drain(urgent);
    if (what & CAP_PUMP_STOP) {
        /* what is still waiting for device times is written without them; cap.mu keeps
         * a late completion from filling ops being freed here */
        pthread_mutex_lock(&cap.mu);
        cap_timing_drop_all();
        drain(0);
        write_ready(1);
        pthread_mutex_unlock(&cap.mu);
        return; /* cap_shutdown closes the trace */
    }
    /* urgent (the process may be about to end): batches waiting for device times go without
     * them, unless cap.mu is held (by a thread in the driver, perhaps the crashed one) */
    if (urgent && cap.timing && cap__lock_bounded(&cap.mu, 1)) {
        cap_timing_drop_all();
        pthread_mutex_unlock(&cap.mu);
    }
    write_ready(0);
    if (!(what & CAP_PUMP_FLUSH) || !wr.w || wr.broken)
        return;
    char why[512];
    if (urgent && cap__flush_reasons(why, sizeof why))
        meta_now("capture.flush_reason", why);
    if (!wr.broken && cap__clock_pair(wr.w, "flush", wr.n_ops) < 0)
        writer_failed("writing a clock pair");
    if (!wr.broken && sbt_writer_flush(wr.w) < 0)
        writer_failed("flushing the trace");
}

/* ========================================================================================== */
/* Open and close                                                                             */
/* ========================================================================================== */

static void atfork_child(void)
{
    /* the writer thread does not exist in the child: record nothing there */
    atomic_store(&cap.on, 0);
    wr.started = 0;
    atomic_store(&closed, 1);
}

static void init(void)
{
    tb_key_made = !pthread_key_create(&tb_key, tb_thread_exit);
    pthread_atfork(NULL, NULL, atfork_child);
    cap.timing = cap__env_flag(CAP_ENV_TIMING);
    cap.digests = cap__env_flag(CAP_ENV_DIGESTS);
    cap.cpu_wait = !getenv(CAP_ENV_CPU_WAIT) || cap__env_flag(CAP_ENV_CPU_WAIT);
    cap__trace_path(wr.path, sizeof wr.path);
    struct sbt_writer_opts o = cap__writer_opts();
    cap.epoch_ns = mono_ns();
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    if (sbt_writer_open(wr.path, &o, &wr.w) < 0) {
        cap_fail("cannot open trace %s: %s", wr.path, sbt_errmsg());
        return;
    }
    cap__manifest_add(wr.path);
    if (cap__meta_process(wr.w, "vulkan", "reprise VK_LAYER_REPRISE_capture 0.1.0", cap.epoch_ns) <
        0)
        writer_failed("writing metadata");
    meta_now("capture.timing", cap.timing ? "1" : "0");
    meta_now("capture.digests", cap.digests ? "1" : "0");
    meta_now("capture.page_bytes", "4096");
    cap_mapped_init();
    char how[256];
    cap_mapped_describe(how, sizeof how, 0);
    meta_now("capture.host_writes", how);
    meta_now("vulkan.resources", "VkDeviceMemory allocations; buffer ranges map to "
                                 "(memory, bind offset + buffer offset)");
    if (wr.broken)
        return;
    if (cap__pump_start(5, writer_work)) {
        cap_fail("cannot start the writer thread");
        return;
    }
    wr.started = 1;
    atomic_store(&cap.on, 1);
    atomic_store(&initialised, 1);
    cap__signals_install();
}

void cap_init_once(void)
{
    pthread_once(&once, init);
}

static void write_stats(uint64_t n_unmod_calls)
{
    const char *p = getenv(CAP_ENV_STATS);
    uint64_t calls = atomic_load(&cap.n_calls) + cap_unmod_total_calls();
    if (cap__env_flag(CAP_ENV_SUMMARY))
        fprintf(stderr,
                "reprise capture: %s: %" PRIu64 " ops from %" PRIu64 " Vulkan calls, %" PRIu64
                " unmodelled calls%s%s\n",
                wr.path, wr.n_ops, calls, n_unmod_calls, fail_reason[0] ? "; incomplete: " : "",
                fail_reason);
    if (!p || !*p || !cap__is_root()) /* the CLI reads the others' traces */
        return;
    FILE *f = fopen(p, "w");
    if (!f)
        return;
    fprintf(f, "trace=%s\nops=%" PRIu64 "\ncalls=%" PRIu64 "\nunsupported=%" PRIu64 "\n", wr.path,
            wr.n_ops, calls, n_unmod_calls);
    cap_unmod_write(NULL, f);
    fprintf(f, "incomplete=%s\n", fail_reason);
    fclose(f);
}

void cap_shutdown(void)
{
    if (!atomic_load(&initialised) || atomic_exchange(&closed, 1))
        return;
    /* the last host writes, and every mapped page writable again */
    cap_mapped_shutdown();
    atomic_store(&cap.on, 0);
    uint64_t n_unmod = 0;
    if (wr.started) {
        cap__pump_stop();
        wr.started = 0;
    }
    if (wr.w) {
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64,
                 (uint64_t)atomic_load(&cap.n_calls) + cap_unmod_total_calls());
        meta_now("capture.vulkan_calls", buf);
        char how[256];
        cap_mapped_describe(how, sizeof how, 1);
        meta_now("capture.host_writes_used", how);
        if (cap.timing) {
            snprintf(buf, sizeof buf, "%" PRIu64, (uint64_t)atomic_load(&cap.n_timed));
            meta_now("capture.timing_timed_ops", buf);
            snprintf(buf, sizeof buf, "%" PRIu64, (uint64_t)atomic_load(&cap.n_untimed));
            meta_now("capture.timing_untimed_ops", buf);
        }
        if (!wr.broken && cap__clock_pair(wr.w, "end", wr.n_ops) < 0)
            writer_failed("writing a clock pair");
        n_unmod = cap_unmod_write(wr.w, NULL);
        pthread_mutex_lock(&fail_mu);
        if (fail_reason[0])
            sbt_writer_mark_incomplete(wr.w, fail_reason);
        pthread_mutex_unlock(&fail_mu);
        if (sbt_writer_close(wr.w) < 0)
            fprintf(stderr, "reprise capture: closing %s: %s\n", wr.path, sbt_errmsg());
        wr.w = NULL;
    }
    write_stats(n_unmod);
    free(wr.heap);
    wr.heap = NULL;
    wr.n_heap = wr.cap_heap = 0;
    sbt_map_free(&wr.devs);
    sbt_map_free(&wr.queues);
    sbt_map_free(&wr.progs);
    sbt_map_free(&wr.kernels);
    sbt_map_free(&wr.host_streams);
    sbt_map_free(&wr.names);
    /* the kept run buffers: the loader may unload the layer after this, and with it the only
     * pointers to them */
    pthread_mutex_lock(&run_mu);
    while (n_run_free)
        free(run_free[--n_run_free]);
    pthread_mutex_unlock(&run_mu);
}

/* At unload: the buffers of the threads still running (the writer has drained them, but a
 * forked child's copies may hold events), and the key whose destructor would run our code at
 * their exit after the layer is gone. */
static void tb_free_all(void)
{
    if (tb_key_made) {
        pthread_key_delete(tb_key);
        tb_key_made = 0;
    }
    pthread_mutex_lock(&tb_list_mu);
    while (tb_list) {
        struct tbuf *tb = tb_list;
        tb_list = tb->next;
        for (size_t i = 0; i < tb->n; i++)
            cap_ev_free_chain(tb->v[i]);
        free(tb->v);
        pthread_mutex_destroy(&tb->mu);
        free(tb);
    }
    pthread_mutex_unlock(&tb_list_mu);
    my_tb = NULL;
}

/* The loader dlcloses the layer at exit (or the process ends): no Vulkan call can reach it
 * any more, so what was kept for racing calls is freed too. */
__attribute__((destructor)) static void cap_at_exit(void)
{
    cap_shutdown();
    tb_free_all();
    cap_layer_free_all();
}
