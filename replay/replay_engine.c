/*
 * replay/replay_engine.c — the API-neutral half of a full replay: which ops run (range, slice,
 * state ops), in which order (the scheduler's topological order, through its visitor), what
 * is verified, digests and their comparison with the capture, dumps, per-op errors, timings,
 * and the result trace. The backends (replay_vk.c, replay_cuda.c) only execute.
 *
 * Results are kept per executed op (88 bytes each), in the order the ops were handed to the
 * backend (the slot is the index + 1), because they arrive in graph order and asynchronously
 * but the result trace is written in seq order by a second pass over the source (through an
 * index sorted by seq). Ops a range replay skips cost nothing, so a range replay's memory
 * follows the range, the state ops and the slice it runs (after a snapshot: the slice after
 * it), not the trace prefix. Snapshots and restores are replay_snap*.c's, range plans
 * replay_plan.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "replay/replay_int.h"

/* ========================================================================================== */
/* Errors, clock, names                                                                       */
/* ========================================================================================== */

static _Thread_local char errbuf[1024];

int replay__fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return status;
}

const char *replay_errmsg(void)
{
    return errbuf;
}

const char *replay_strerror(int status)
{
    switch (status) {
#define REPLAY__STR(name, val, msg) \
    case val:                       \
        return msg;
        REPLAY_STATUS_MAP(REPLAY__STR)
#undef REPLAY__STR
    default:
        return sbt_strerror(status);
    }
}

uint64_t replay__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *replay__path_of(const sbt_reader *r)
{
    const char *p = sbt_reader_path(r);
    return p ? p : "?";
}

static const char *const verify_names[] = {"none", "end", NULL, "op"};

const char *replay_verify_name(uint32_t v)
{
    return v < 4 && verify_names[v] ? verify_names[v] : "?";
}

int replay_verify_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (s && verify_names[i] && !strcmp(s, verify_names[i]))
            return i;
    return -1;
}

const struct replay_backend *replay__backend_for_api(uint32_t api)
{
    if (api == SBT_API_VULKAN)
        return &replay__vk_backend;
    if (api == SBT_API_CUDA && &replay__cuda_backend)
        return &replay__cuda_backend;
    return NULL;
}

const struct replay_backend *replay__backend_by_name(const char *name)
{
    if (!strcmp(name, "vulkan"))
        return &replay__vk_backend;
    if (!strcmp(name, "cuda") && &replay__cuda_backend)
        return &replay__cuda_backend;
    return NULL;
}

int replay_devices(uint32_t api, struct replay_device_info *out, uint32_t max)
{
    const struct replay_backend *b = replay__backend_for_api(api);
    if (!b)
        return replay__fail(REPLAY_ENODEV, "%s: no replay backend built into this binary",
                            sbt_api_name(api));
    return b->devices(out, max);
}

/* ========================================================================================== */
/* The engine                                                                                 */
/* ========================================================================================== */

enum { ST_SKIP = 0, ST_FF = 1, ST_RANGE = 2 };

struct op_result {
    uint64_t seq;
    uint8_t state; /* ST_* */
    uint8_t has_dev, has_digest, has_captured, done;
    uint32_t err; /* index + 1 into eng.errs, 0 = none */
    uint32_t kind;
    uint64_t dev_begin, dev_end, host_begin, host_end;
    sbt_hash digest, captured;
};

struct eng {
    sbt_reader *r;
    const struct replay_opts *o;
    const struct replay_backend *bk;
    void *be;
    struct replay_result *out;
    uint32_t run;
    uint64_t lo, hi;       /* seq window */
    struct op_result *res; /* executed ops, by slot - 1 */
    uint64_t n_res, cap_res;
    uint64_t *by_seq; /* indices into res in seq order (after the run) */
    struct replay__snap *sp;
    uint64_t n_added, n_visited; /* ops given to the graph, ops it delivered */
    int stopped;                 /* the run ended before the range (trim) */
    /* range */
    const struct sbt_range *range;
    struct sched_slice slice;
    uint64_t slice_pos;
    int range_started;
    uint64_t range_first;
    /* errors of this run */
    char **errs;
    uint32_t n_errs, cap_errs;
    int fatal; /* < 0: the run stopped with this status */
    sbt_hasher *h;
    uint64_t t_run0, t_range0;
    int dump_ok;
    /* a perturbed run: the poison word (outputs still holding it are digested as zeros), the
     * order window, what the backend changed */
    int poison;
    uint32_t poison_word;
    uint8_t *mask;
    size_t cap_mask;
    struct replay__reorder *ro;
    struct replay__pstats ps;
};

static int want_dump(const struct eng *e)
{
    return e->o->dump_dir && e->run == 0 && e->dump_ok;
}

static void dump_bytes(struct eng *e, uint64_t seq, const struct replay_done *d)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%" PRIu64 ".bin", e->o->dump_dir, seq);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    for (uint32_t i = 0; i < d->n_access; i++)
        if (d->bytes[i] && d->len[i])
            fwrite(d->bytes[i], 1, d->len[i], f);
    if (fclose(f) == 0)
        e->out->n_dumped++;
}

/* poison: the bytes with every aligned word that still holds the pattern (nothing wrote it)
 * turned back into the zeros a plain replay has there, so that only values computed from
 * unwritten bytes differ; NULL when out of memory (the raw bytes are digested then) */
static const void *unpoison(struct eng *e, const void *bytes, uint64_t len)
{
    if (len > e->cap_mask) {
        uint8_t *m = realloc(e->mask, len);
        if (!m)
            return NULL;
        e->mask = m;
        e->cap_mask = len;
    }
    memcpy(e->mask, bytes, len);
    for (uint64_t i = 0; i + 4 <= len; i += 4) {
        uint32_t w;
        memcpy(&w, e->mask + i, 4);
        if (w == e->poison_word)
            memset(e->mask + i, 0, 4);
    }
    return e->mask;
}

static void on_done(void *ctx, const struct replay_done *d)
{
    struct eng *e = ctx;
    if (d->slot < 1 || d->slot > e->n_res)
        return;
    struct op_result *x = &e->res[d->slot - 1];
    x->done = 1;
    x->host_end = replay__now_ns();
    if (d->has_dev_time && x->state == ST_RANGE) {
        x->has_dev = 1;
        x->dev_begin = d->dev_begin;
        x->dev_end = d->dev_end;
    }
    if (!d->n_access)
        return;
    int any = 0;
    sbt_hasher_reset(e->h);
    for (uint32_t i = 0; i < d->n_access; i++)
        if (d->bytes[i]) {
            const void *p = e->poison ? unpoison(e, d->bytes[i], d->len[i]) : d->bytes[i];
            sbt_hasher_update(e->h, p ? p : d->bytes[i], d->len[i]);
            any = 1;
        }
    if (!any)
        return;
    x->has_digest = 1;
    x->digest = sbt_hasher_digest(e->h);
    e->out->n_digests++;
    if (want_dump(e) && !e->poison)
        dump_bytes(e, x->seq, d);
}

static int add_err(struct eng *e, struct op_result *x, int status, const char *msg)
{
    if (e->n_errs == e->cap_errs) {
        uint32_t c = e->cap_errs ? e->cap_errs * 2 : 16;
        char **v = realloc(e->errs, c * sizeof *v);
        if (!v)
            return SBT_ENOMEM;
        e->errs = v;
        e->cap_errs = c;
    }
    char *s = strdup(msg);
    if (!s)
        return SBT_ENOMEM;
    e->errs[e->n_errs++] = s;
    x->err = e->n_errs;
    (void)status;
    return 0;
}

/* Op x failed with st (replay_errmsg() says why): its error in the result, counted. 0, or
 * SBT_ENOMEM. */
static int op_error(struct eng *e, struct op_result *x, const struct sbt_op *op, int st)
{
    char msg[1200];
    const char *name = sbt_reader_string(e->r, op->name);
    snprintf(msg, sizeof msg, "op %" PRIu64 " (%s): %s", op->seq,
             name && *name ? name : sbt_op_kind_name(op->kind), replay_errmsg());
    if (add_err(e, x, st, msg) < 0)
        return SBT_ENOMEM;
    struct replay_result *o = e->out;
    o->n_errors++;
    if (o->first_error == UINT64_MAX || op->seq < o->first_error) {
        o->first_error = op->seq;
        o->first_error_status = st;
        snprintf(o->first_error_msg, sizeof o->first_error_msg, "%.500s", msg);
    }
    return 0;
}

static int in_slice(struct eng *e, uint64_t seq)
{
    const uint64_t *v = e->slice.seqs;
    uint64_t a = 0, b = e->slice.n_seqs;
    while (a < b) {
        uint64_t m = a + (b - a) / 2;
        if (v[m] < seq)
            a = m + 1;
        else
            b = m;
    }
    return a < e->slice.n_seqs && v[a] == seq;
}

static uint64_t upload_bytes(const struct sbt_op *op)
{
    if (op->kind != SBT_OP_HOST_WRITE && !(op->kind == SBT_OP_COPY && op->subkind == SBT_COPY_H2D))
        return 0;
    uint64_t n = 0;
    for (uint32_t i = 0; i < op->n_access; i++)
        if (op->access[i].mode & SBT_ACCESS_WRITE)
            n += op->access[i].len;
    return n;
}

/* A result entry for an op about to be executed; its slot is the index + 1. */
static struct op_result *res_new(struct eng *e, uint64_t seq)
{
    if (e->n_res == e->cap_res) {
        uint64_t c = e->cap_res ? e->cap_res * 2 : 1024;
        struct op_result *v = realloc(e->res, c * sizeof *v);
        if (!v)
            return NULL;
        e->res = v;
        e->cap_res = c;
    }
    struct op_result *x = &e->res[e->n_res++];
    memset(x, 0, sizeof *x);
    x->seq = seq;
    return x;
}

static int node_visit(void *ctx, struct sched_node *n)
{
    struct eng *e = ctx;
    const struct sbt_op *op = n->op;
    n->val = 0;
    e->n_visited++;
    if (op->seq < e->lo || op->seq >= e->hi)
        return 0;
    int state = ST_RANGE;
    /* outside the range: the slice, and object creation and lifetime (replay__is_state), which
     * the slice (a data-flow notion) does not cover but later ops may name */
    if (e->range && !sched_range_contains(e->range, op))
        state = in_slice(e, op->seq) || replay__is_state(e->bk, op) ? ST_FF : ST_SKIP;
    if (state == ST_SKIP) {
        e->out->skipped_ops += e->run == 0;
        return 0;
    }
    struct op_result *x = res_new(e, op->seq);
    if (!x) {
        e->fatal =
            replay__fail(SBT_ENOMEM, "out of memory for the results of %" PRIu64 " ops", e->n_res);
        return e->fatal;
    }
    x->kind = op->kind;
    x->state = (uint8_t)state;
    if (e->run == 0) {
        if (state == ST_RANGE) {
            e->out->range_ops++;
            e->out->range_upload_bytes += upload_bytes(op);
        } else {
            e->out->slice_ops++;
            e->out->slice_upload_bytes += upload_bytes(op);
        }
    }
    if (op->flags & SBT_OPF_DIGEST) {
        x->has_captured = 1;
        x->captured = op->digest;
    }
    uint32_t flags = 0;
    uint32_t v = e->o->verify;
    if (state == ST_FF)
        flags |= REPLAY_X_UNTIMED;
    else if (op->kind == SBT_OP_HOST_READ) {
        if (v >= REPLAY_VERIFY_END || want_dump(e))
            flags |= REPLAY_X_READ;
    } else if (op->kind == SBT_OP_KERNEL || op->kind == SBT_OP_COPY || op->kind == SBT_OP_FILL) {
        if (v == REPLAY_VERIFY_OP)
            flags |= REPLAY_X_OUTPUTS;
    }
    uint64_t slot = e->n_res;
    struct replay_x rx = {.node = n, .slot = slot, .flags = flags};
    x->host_begin = replay__now_ns();
    int st = e->bk->exec(e->be, &rx);
    x = &e->res[slot - 1];      /* (exec reports through on_done, which does not move res) */
    if (st == REPLAY_EDEVICE) { /* the device or driver failed: this op's error, the run ends */
        op_error(e, x, op, st);
        e->fatal = st;
        return st;
    }
    if (st == SBT_ENOMEM) {
        e->fatal = st;
        return st;
    }
    if (st >= 0 && e->sp) { /* what the snapshots follow: only what the backend did */
        int ss = replay__snap_executed(e->sp, op);
        if (ss < 0) {
            e->fatal = ss;
            return ss;
        }
    }
    if (st < 0)
        return op_error(e, x, op, st) < 0 ? (e->fatal = SBT_ENOMEM) : 0;
    n->val = slot;
    return 0;
}

/* Run-queue wait of every thread of this process so far (schedstat's second field, ns), or
 * UINT64_MAX when /proc does not say. */
static uint64_t cpu_wait_now(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return UINT64_MAX;
    uint64_t sum = 0;
    int any = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%.200s/schedstat", de->d_name);
        FILE *f = fopen(path, "r");
        unsigned long long run, wait;
        if (!f)
            continue;
        if (fscanf(f, "%llu %llu", &run, &wait) == 2)
            sum += wait, any = 1;
        fclose(f);
    }
    closedir(d);
    return any ? sum : UINT64_MAX;
}

/* ========================================================================================== */
/* Before a device: completeness and the graph's errors                                       */
/* ========================================================================================== */

static void put(char *buf, size_t cap, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *pos, const char *fmt, ...)
{
    if (*pos + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *pos, cap - *pos, fmt, ap);
    va_end(ap);
    if (n > 0)
        *pos = *pos + (size_t)n < cap ? *pos + (size_t)n : cap - 1;
}

const char *replay_env_settings(char *buf, size_t cap)
{
    /* driver settings that change timings as much as a driver version does */
    static const char *const knobs[] = {"LP_NUM_THREADS", "CUDA_LAUNCH_BLOCKING"};
    size_t pos = 0;
    if (!cap)
        return buf;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        const char *v = getenv(knobs[i]);
        if (v)
            put(buf, cap, &pos, "%s%s=%.60s", pos ? " " : "", knobs[i], v);
    }
    if (!pos)
        put(buf, cap, &pos, "none");
    return buf;
}

struct pf {
    uint32_t n_msg;
    char msg[512];
};

static void pf_finding(void *ctx, const struct sched_finding *f)
{
    struct pf *p = ctx;
    if (f->severity != SCHED_ERROR || p->n_msg >= 3)
        return;
    size_t n = strlen(p->msg);
    snprintf(p->msg + n, sizeof p->msg - n, "%s%s: %s", p->n_msg ? "; " : "",
             sched_finding_name(f->kind), f->msg);
    p->n_msg++;
}

/* Completeness, then the graph up to the range's end. why/graph_msg: the reasons. */
static int preflight(sbt_reader *r, const struct sbt_range *range, int *incomplete, char *why,
                     size_t why_cap, uint64_t *n_graph, char *graph_msg, size_t graph_cap)
{
    *incomplete = !sbt_reader_info(r)->complete;
    if (*incomplete)
        sbt_reader_incomplete_why(r, why, why_cap);
    uint64_t lo = 0, hi = SCHED_NONE;
    if (range)
        sched_range_bounds(r, range, &lo, &hi);
    struct pf p = {0};
    struct sched_visitor v = {.finding = pf_finding, .ctx = &p};
    struct sched_graph_stats gs;
    int st = sched_graph_run(r, hi, NULL, &v, &gs);
    if (st < 0)
        return replay__fail(st, "%s", sched_errmsg());
    *n_graph = gs.n_errors;
    snprintf(graph_msg, graph_cap, "%s", p.msg);
    return 0;
}

/* The refusal, with its reasons. */
static int refuse(int incomplete, const char *why, uint64_t ng, const char *gmsg)
{
    if (incomplete)
        return replay__fail(REPLAY_EINCOMPLETE,
                            "the trace is incomplete: %s. A replay of it cannot be trusted to "
                            "compute what the program did (--allow-incomplete replays it anyway)",
                            why);
    if (ng)
        return replay__fail(REPLAY_EGRAPH,
                            "the dependency graph has %" PRIu64 " error%s: %s%s. Replay would "
                            "execute ops the trace does not describe or order (reprise replay "
                            "--mode dry-run lists them; --allow-incomplete replays it anyway)",
                            ng, ng == 1 ? "" : "s", gmsg, ng > 3 ? "; ..." : "");
    return 0;
}

int replay_preflight(sbt_reader *r, const struct sbt_range *range, uint64_t *n_graph_errors)
{
    int incomplete;
    char why[512], gmsg[512];
    uint64_t ng = 0;
    int st = preflight(r, range, &incomplete, why, sizeof why, &ng, gmsg, sizeof gmsg);
    if (n_graph_errors)
        *n_graph_errors = ng;
    return st < 0 ? st : refuse(incomplete, why, ng, gmsg);
}

static int reorder_visit(void *ctx, struct sched_node *n)
{
    struct eng *e = ctx;
    int st = replay__reorder_add(e->ro, n);
    if (st < 0 && e->fatal == 0)
        e->fatal = st;
    return st;
}

/* One pass of the graph over [seq_first, hi), draining before the range starts. */
static int run_graph(struct eng *e)
{
    /* the graph's findings were looked at before (replay_preflight) */
    struct sched_visitor v = {.node = node_visit, .ctx = e};
    if (e->ro) /* order: the window takes the nodes and hands them on to node_visit */
        v = (struct sched_visitor){.node = reorder_visit, .ctx = e};
    sched_graph *g = NULL;
    int st = sched_graph_create(
        e->r,
        &SCHED_GRAPH_OPTS(.keep_implied = 1,
                          /* declared:SEED is order:SEED over the program's own order */
                          .order = e->o->order == REPLAY_ORDER_DECLARED ||
                                           e->o->perturb.kind == REPLAY_PERTURB_DECLARED
                                       ? SCHED_ORDER_DECLARED
                                       : SCHED_ORDER_ACCESSES),
        &v, &g);
    if (st < 0)
        return replay__fail(st, "%s", sched_errmsg());
    sbt_cursor *c = NULL;
    struct sbt_range all = {.has_seq = 1, .seq_begin = e->lo, .seq_end = e->hi};
    st = sbt_cursor_open(e->r, &all, &c);
    if (st < 0) {
        sched_graph_destroy(g);
        return replay__fail(st, "%s", sbt_errmsg());
    }
    const struct sbt_op *op;
    uint64_t done = 0, total = e->hi - e->lo;
    e->t_range0 = e->range ? 0 : replay__now_ns();
    e->n_added = e->n_visited = 0;
    while ((st = sbt_cursor_next(c, &op)) == 1) {
        if (e->sp && (st = replay__snap_before(e->sp, op, e->n_added == e->n_visited)) != 0) {
            if (st > 0) { /* trim: the state before the range is written, the range not run */
                e->stopped = 1;
                st = 0;
            } else {
                e->fatal = st; /* keeps its message */
            }
            break;
        }
        if (e->range && !e->range_started && op->seq >= e->range_first) {
            /* fast-forward done: the range starts on a drained device */
            if ((st = e->bk->drain(e->be)) < 0)
                break;
            e->range_started = 1;
            e->t_range0 = replay__now_ns();
        }
        e->n_added++;
        if ((st = sched_graph_add(g, op)) != 0)
            break;
        if (e->o->progress && (++done & 0xffff) == 0)
            e->o->progress(e->o->ctx, done, total);
    }
    if (st < 0 && e->fatal == 0 && st != REPLAY_EDEVICE)
        st = replay__fail(st, "%s",
                          st == SBT_ECORRUPT || st == SBT_EIO ? sbt_errmsg() : sched_errmsg());
    if (st == 0 && !e->stopped)
        st = sched_graph_finish(g);
    if (st == 0 && e->ro && (st = replay__reorder_flush(e->ro)) < 0 && e->fatal == 0)
        e->fatal = st;
    if (st > 0)
        st = 0;
    if (st == 0) {
        st = e->bk->drain(e->be);
        if (!e->t_range0)
            e->t_range0 = replay__now_ns();
    }
    sbt_cursor_close(c);
    sched_graph_destroy(g);
    if (e->fatal)
        st = e->fatal;
    return st;
}

/* ========================================================================================== */
/* The result trace                                                                           */
/* ========================================================================================== */

int replay__str_of(sbt_writer *w, const sbt_reader *r, struct replay__strmap *m, uint32_t id,
                   uint32_t *out)
{
    *out = 0;
    if (!id)
        return 0;
    if (id < m->n && m->v[id]) {
        *out = m->v[id];
        return 0;
    }
    const char *s = sbt_reader_string(r, id);
    int st = sbt_writer_intern(w, s ? s : "", out);
    if (st < 0)
        return st;
    if (id < m->n)
        m->v[id] = *out;
    return 0;
}

static int write_result(struct eng *e, const char *path)
{
    sbt_reader *r = e->r;
    sbt_writer *w = NULL;
    struct replay__strmap sm = {0};
    sbt_cursor *c = NULL;
    int st = sbt_writer_open(path, NULL, &w);
    if (st < 0)
        return replay__fail(st, "%s", sbt_errmsg());
    sm.n = sbt_reader_n_strings(r) + 1;
    sm.v = calloc(sm.n, sizeof *sm.v);
    if (!sm.v) {
        st = replay__fail(SBT_ENOMEM, "out of memory for %u string ids", sm.n);
        goto out;
    }
#define TRY(x)                                                   \
    do {                                                         \
        if ((st = (x)) < 0) {                                    \
            st = replay__fail(st, "%s: %s", path, sbt_errmsg()); \
            goto out;                                            \
        }                                                        \
    } while (0)
    uint32_t n, id;
    const struct sbt_device *dv = sbt_reader_devices(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_device d = dv[i];
        TRY(replay__str_of(w, r, &sm, dv[i].name, &d.name));
        TRY(replay__str_of(w, r, &sm, dv[i].host, &d.host));
        TRY(sbt_writer_add_device(w, &d, &id));
    }
    const struct sbt_stream *sv = sbt_reader_streams(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_stream s = sv[i];
        TRY(replay__str_of(w, r, &sm, sv[i].name, &s.name));
        TRY(sbt_writer_add_stream(w, &s, &id));
    }
    const struct sbt_program *pv = sbt_reader_programs(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_program p = pv[i];
        TRY(replay__str_of(w, r, &sm, pv[i].name, &p.name));
        if (!sbt_hash_is_zero(p.blob)) {
            void *data = NULL;
            size_t len = 0;
            if (sbt_reader_blob(r, &p.blob, &data, &len) == 0) {
                st = sbt_writer_blob(w, data, len, &p.blob);
                free(data);
                TRY(st);
            } else {
                p.blob = (sbt_hash){0, 0};
            }
        }
        TRY(sbt_writer_add_program(w, &p, &id));
    }
    const struct sbt_kernel *kv = sbt_reader_kernels(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_kernel k = kv[i];
        TRY(replay__str_of(w, r, &sm, kv[i].name, &k.name));
        TRY(sbt_writer_add_kernel(w, &k, &id));
    }
    const struct sbt_meta *mv = sbt_reader_meta(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        const char *k = sbt_reader_string(r, mv[i].key);
        if (k && (!strncmp(k, "clock.", 6) || !strncmp(k, "replay.", 7)))
            continue; /* the result has its own clock */
        char key[512];
        snprintf(key, sizeof key, "capture.%s", k ? k : "");
        const char *val = sbt_reader_string(r, mv[i].value);
        TRY(sbt_writer_meta(w, key, val ? val : ""));
    }
    char buf[64];
    TRY(sbt_writer_meta(w, "replay.of", e->o->source_path ? e->o->source_path : ""));
    TRY(sbt_writer_meta(w, "replay.backend", e->out->backend));
    TRY(sbt_writer_meta(w, "replay.device", e->out->device));
    TRY(sbt_writer_meta(w, "replay.driver", e->out->driver));
    TRY(sbt_writer_meta(w, "replay.verify", replay_verify_name(e->o->verify)));
    if (e->out->device_failed[0]) /* the ops after it were not run */
        TRY(sbt_writer_meta(w, "replay.device_failed", e->out->device_failed));
    if (e->out->restore_seq != UINT64_MAX) { /* what the bytes before the range rest on */
        snprintf(buf, sizeof buf, "%" PRIu64, e->out->restore_seq);
        TRY(sbt_writer_meta(w, "replay.restored_seq", buf));
        TRY(sbt_writer_meta(w, "replay.restored_from", e->out->restore_from));
    }
    TRY(sbt_writer_meta(w, "replay.timing", e->o->timing == REPLAY_TIMING_NONE ? "none" : "op"));
    if (e->o->perturb.kind) { /* what the checker names a divergence of this run by */
        TRY(sbt_writer_meta(w, "replay.perturb", e->out->perturb));
        TRY(sbt_writer_meta(w, "replay.perturb_class", replay_perturb_class(e->o->perturb.kind)));
        TRY(sbt_writer_meta(w, "replay.perturb_what", e->out->perturb_what));
    }
    {
        char env[256];
        TRY(sbt_writer_meta(w, "replay.env", replay_env_settings(env, sizeof env)));
    }
    {
        char host[256] = "";
        if (gethostname(host, sizeof host - 1) == 0)
            TRY(sbt_writer_meta(w, "replay.host", host));
    }
    /* a result inherits what its source lacks: whatever reads it says so */
    if (e->out->incomplete || e->out->n_graph_errors) {
        char why[1200];
        if (e->out->incomplete)
            snprintf(why, sizeof why,
                     "replay of an incomplete trace (--allow-incomplete): %.500s%s%.40s",
                     e->out->incomplete_why, e->out->n_graph_errors ? "; and graph errors: " : "",
                     e->out->n_graph_errors ? e->out->first_graph_error : "");
        else
            snprintf(why, sizeof why,
                     "replay of a trace whose dependency graph has %" PRIu64
                     " errors (--allow-incomplete): %.500s",
                     e->out->n_graph_errors, e->out->first_graph_error);
        TRY(sbt_writer_mark_incomplete(w, why));
    }
    snprintf(buf, sizeof buf, "%u", e->run + 1);
    TRY(sbt_writer_meta(w, "replay.run", buf));
    if (e->range) {
        snprintf(buf, sizeof buf, "%" PRIu64 ":%" PRIu64, e->range_first, e->hi);
        TRY(sbt_writer_meta(w, "replay.range_seq", buf));
    }
    {
        const struct replay_run_stats *rs = &e->out->run[e->run];
        snprintf(buf, sizeof buf, "%" PRIu64, rs->wall_ns);
        TRY(sbt_writer_meta(w, "replay.wall_ns", buf));
        if (rs->cpu_wait_ns != UINT64_MAX) {
            snprintf(buf, sizeof buf, "%" PRIu64, rs->cpu_wait_ns);
            TRY(sbt_writer_meta(w, "replay.cpu_wait_ns", buf));
        }
    }
    TRY(sbt_writer_meta(w, "clock.domain", "CLOCK_MONOTONIC"));
    snprintf(buf, sizeof buf, "%" PRIu64, e->t_run0);
    TRY(sbt_writer_meta(w, "clock.replay_start_ns", buf));

    const struct sbt_info *in = sbt_reader_info(r);
    struct sbt_range all = {.has_seq = 1, .seq_begin = in->seq_first, .seq_end = in->seq_end};
    TRY(sbt_cursor_open(r, &all, &c));
    const struct sbt_op *sop;
    uint64_t k = 0; /* next executed op, in seq order */
    while ((st = sbt_cursor_next(c, &sop)) == 1) {
        struct sbt_op op = *sop;
        TRY(replay__str_of(w, r, &sm, sop->name, &op.name));
        op.flags &= ~(uint32_t)(SBT_OPF_DEV_TIME | SBT_OPF_DIGEST | SBT_OPF_ERROR | SBT_OPF_BLOB |
                                SBT_OPF_UNTIMED);
        op.error = 0;
        op.dev_begin = op.dev_end = 0;
        op.digest = (sbt_hash){0, 0};
        op.blob = (sbt_hash){0, 0};
        while (k < e->n_res && e->res[e->by_seq[k]].seq < sop->seq)
            k++;
        const struct op_result *x =
            k < e->n_res && e->res[e->by_seq[k]].seq == sop->seq ? &e->res[e->by_seq[k]] : NULL;
        TRY(sbt_writer_set_next_seq(w, sop->seq)); /* a trimmed source keeps its numbers */
        if (!x || x->state == ST_SKIP) {
            op.flags |= SBT_OPF_UNTIMED; /* not executed: no times */
            op.host_begin = op.host_end = e->t_run0;
        } else {
            op.host_begin = x->host_begin;
            op.host_end = x->host_end > x->host_begin ? x->host_end : x->host_begin;
            if (x->state == ST_FF)
                op.flags |= SBT_OPF_UNTIMED;
            if (x->has_dev) {
                op.flags |= SBT_OPF_DEV_TIME;
                op.dev_begin = x->dev_begin;
                op.dev_end = x->dev_end > x->dev_begin ? x->dev_end : x->dev_begin;
            }
            if (x->has_digest) {
                op.flags |= SBT_OPF_DIGEST;
                op.digest = x->digest;
            }
            if (x->err) {
                op.flags |= SBT_OPF_ERROR;
                TRY(sbt_writer_intern(w, e->errs[x->err - 1], &op.error));
            }
        }
        TRY(sbt_writer_add_op(w, &op, NULL));
    }
    if (st < 0) {
        st = replay__fail(st, "%s", sbt_errmsg());
        goto out;
    }
    sbt_cursor_close(c);
    c = NULL;
    st = sbt_writer_close(w);
    w = NULL;
    if (st < 0)
        st = replay__fail(st, "%s: %s", path, sbt_errmsg());
#undef TRY
out:
    sbt_cursor_close(c);
    sbt_writer_abandon(w);
    free(sm.v);
    return st < 0 ? st : 0;
}

static char *run_path(const char *path, uint32_t run)
{
    size_t n = strlen(path) + 32;
    char *p = malloc(n);
    if (!p)
        return NULL;
    if (run == 0) {
        snprintf(p, n, "%s", path);
        return p;
    }
    size_t stem = strlen(path);
    if (stem > 4 && !strcmp(path + stem - 4, ".sbt"))
        stem -= 4;
    snprintf(p, n, "%.*s.%u.sbt", (int)stem, path, run + 1);
    return p;
}

/* ========================================================================================== */
/* replay_run                                                                                 */
/* ========================================================================================== */

/* The digests of the first run, in seq order, to compare the later runs with. */
struct first_run {
    uint64_t *seq;
    sbt_hash *dig;
    uint8_t *has;
    uint64_t n;
};

struct seq_ix {
    uint64_t seq, i;
};

static int cmp_seq_ix(const void *a, const void *b)
{
    const struct seq_ix *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* e->by_seq: the executed ops in seq order (they were executed in graph order). */
static int sort_by_seq(struct eng *e)
{
    free(e->by_seq);
    e->by_seq = malloc((e->n_res ? e->n_res : 1) * sizeof *e->by_seq);
    if (!e->by_seq)
        return replay__fail(SBT_ENOMEM, "out of memory for the results of %" PRIu64 " ops",
                            e->n_res);
    int sorted = 1;
    for (uint64_t i = 0; i < e->n_res; i++) {
        e->by_seq[i] = i;
        sorted &= i == 0 || e->res[i - 1].seq < e->res[i].seq;
    }
    if (sorted)
        return 0;
    struct seq_ix *v = malloc(e->n_res * sizeof *v);
    if (!v)
        return replay__fail(SBT_ENOMEM, "out of memory for the results of %" PRIu64 " ops",
                            e->n_res);
    for (uint64_t i = 0; i < e->n_res; i++)
        v[i] = (struct seq_ix){e->res[i].seq, i};
    qsort(v, e->n_res, sizeof *v, cmp_seq_ix);
    for (uint64_t i = 0; i < e->n_res; i++)
        e->by_seq[i] = v[i].i;
    free(v);
    return 0;
}

static void report_ops(struct eng *e, struct first_run *fr)
{
    struct replay_result *o = e->out;
    uint64_t j = 0; /* position in the first run */
    for (uint64_t i = 0; i < e->n_res; i++) {
        struct op_result *x = &e->res[e->by_seq[i]];
        uint64_t seq = x->seq;
        int mismatch = 0;
        if (x->has_digest && x->has_captured) {
            o->n_compared++;
            if (!sbt_hash_eq(x->digest, x->captured)) {
                mismatch = 1;
                o->n_mismatch++;
                if (o->first_mismatch == UINT64_MAX || seq < o->first_mismatch)
                    o->first_mismatch = seq;
            }
        }
        if (fr && e->run == 0) {
            fr->seq[fr->n] = seq;
            fr->dig[fr->n] = x->digest;
            fr->has[fr->n++] = (uint8_t)x->has_digest;
        } else if (fr) {
            while (j < fr->n && fr->seq[j] < seq)
                j++;
            if (x->has_digest && j < fr->n && fr->seq[j] == seq && fr->has[j])
                o->n_run_compared++;
            if (x->has_digest && j < fr->n && fr->seq[j] == seq && fr->has[j] &&
                !sbt_hash_eq(x->digest, fr->dig[j])) {
                o->n_run_mismatch++;
                if (o->first_run_mismatch == UINT64_MAX || seq < o->first_run_mismatch)
                    o->first_run_mismatch = seq;
            }
        }
        if (e->o->on_op) {
            struct replay_op ro = {.seq = seq,
                                   .kind = x->kind,
                                   .run = e->run,
                                   .untimed = x->state == ST_FF,
                                   .has_dev_time = x->has_dev,
                                   .dev_begin = x->dev_begin,
                                   .dev_end = x->dev_end,
                                   .host_begin = x->host_begin,
                                   .host_end = x->host_end,
                                   .has_digest = x->has_digest,
                                   .digest = x->digest,
                                   .has_captured = x->has_captured,
                                   .captured = x->captured,
                                   .mismatch = mismatch,
                                   .error = x->err ? e->errs[x->err - 1] : NULL};
            e->o->on_op(e->o->ctx, &ro);
        }
    }
}

/* ========================================================================================== */
/* Perturbed runs                                                                             */
/* ========================================================================================== */

/* Ops the order perturbation draws the next one from. */
#define ORDER_WINDOW 16

static uint64_t count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    uint64_t n = 0;
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* What o.perturb may not be combined with, and the kinds a backend cannot apply. */
static int perturb_check(const struct replay_opts *o, const struct replay_backend *bk,
                         const struct sbt_info *in)
{
    uint32_t k = o->perturb.kind;
    if (!k)
        return 0;
    const char *name = replay_perturb_name(k);
    if (k > REPLAY_PERTURB_DECLARED)
        return replay__fail(SBT_EINVAL, "perturbation kind %u: unknown", k);
    if (o->range || o->snapshot_out || o->snapshots || o->state_out)
        return replay__fail(SBT_EINVAL,
                            "perturbation %s: a perturbed replay runs the whole trace (no range, "
                            "snapshots or trim)",
                            name);
    if ((k == REPLAY_PERTURB_ORDER || k == REPLAY_PERTURB_DECLARED) &&
        (in->required_features & SBT_FEATURE_INITIAL_STATE))
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "perturbation %s: not on a trace that starts from stored "
                            "contents (a trimmed trace)",
                            name);
    if ((k == REPLAY_PERTURB_SPLIT || k == REPLAY_PERTURB_THREADS) && bk->api != SBT_API_VULKAN)
        return replay__fail(REPLAY_EUNSUPPORTED, "perturbation %s: the %s backend has no %s", name,
                            bk->name,
                            k == REPLAY_PERTURB_SPLIT ? "workgroup split (Vulkan's "
                                                        "vkCmdDispatchBase)"
                                                      : "driver thread-count knob");
    return 0;
}

/* replay_result.perturb_what from the first run. */
static void perturb_what(struct eng *e, const struct replay_opts *o)
{
    char *b = e->out->perturb_what;
    size_t cap = sizeof e->out->perturb_what, pos = strlen(b);
    const struct replay__pstats *p = &e->ps;
    switch (o->perturb.kind) {
    case REPLAY_PERTURB_POISON:
        put(b, cap, &pos,
            "poisoned %" PRIu64 " allocation%s (%" PRIu64 " bytes) with the word 0x%08x",
            p->poisoned_allocs, p->poisoned_allocs == 1 ? "" : "s", p->poisoned_bytes,
            e->poison_word);
        if (p->zeroed_allocs)
            put(b, cap, &pos,
                "; %" PRIu64 " mapped allocation%s kept at zero (the trace records host writes "
                "into mapped memory against zeros)",
                p->zeroed_allocs, p->zeroed_allocs == 1 ? "" : "s");
        break;
    case REPLAY_PERTURB_SPLIT:
        put(b, cap, &pos, "split %" PRIu64 " dispatch%s into %" PRIu64 " pieces",
            p->split_dispatches, p->split_dispatches == 1 ? "" : "es", p->split_pieces);
        if (p->whole_dispatches)
            put(b, cap, &pos, "; %" PRIu64 " left whole (first: op %" PRIu64 ", %s)",
                p->whole_dispatches, p->first_whole_seq, p->first_whole_why);
        break;
    case REPLAY_PERTURB_ORDER:
    case REPLAY_PERTURB_DECLARED:
        put(b, cap, &pos,
            "%s%" PRIu64 " ops run before an op the graph had delivered earlier (window %u)",
            o->perturb.kind == REPLAY_PERTURB_DECLARED
                ? "only the program's own synchronisation orders the ops; "
                : "",
            replay__reorder_moved(e->ro), ORDER_WINDOW);
        break;
    default:
        break;
    }
}

int replay_run(sbt_reader *r, const struct replay_opts *opts, struct replay_result *out)
{
    memset(out, 0, sizeof *out);
    out->first_mismatch = out->first_error = out->first_run_mismatch = UINT64_MAX;
    if (!r || !opts || opts->sz < offsetof(struct replay_opts, progress))
        return replay__fail(SBT_EINVAL, "replay_run: missing reader or options");
    struct replay_opts o = {0};
    memcpy(&o, opts, opts->sz < sizeof o ? opts->sz : sizeof o);
    o.sz = sizeof o;
    if (o.verify > REPLAY_VERIFY_OP || !verify_names[o.verify])
        return replay__fail(SBT_EINVAL, "verify level %u: not none, end or op", o.verify);
    if (o.order > REPLAY_ORDER_DECLARED)
        return replay__fail(SBT_EINVAL, "order %u: not accesses or declared", o.order);
    uint32_t runs = o.runs ? o.runs : 1;

    /* the backend: asked for, or that of the trace's first device */
    const struct replay_backend *bk = o.backend_impl;
    uint32_t nd = 0;
    const struct sbt_device *devs = sbt_reader_devices(r, &nd);
    if (!bk && o.backend) {
        bk = replay__backend_by_name(o.backend);
        if (!bk)
            return replay__fail(REPLAY_ENODEV, "backend '%s' is not built into this binary",
                                o.backend);
    }
    if (!bk) {
        if (!nd)
            return replay__fail(REPLAY_EUNSUPPORTED, "the trace names no device to replay on");
        uint32_t api = devs[0].api;
        if (api == SBT_API_SYNTH || api == SBT_API_TRACESMITH)
            return replay__fail(REPLAY_EUNSUPPORTED,
                                "a %s trace has no device work to execute: use --mode dry-run",
                                sbt_api_name(api));
        bk = replay__backend_for_api(api);
        if (!bk)
            return replay__fail(REPLAY_ENODEV, "no %s replay backend in this binary",
                                sbt_api_name(api));
    }
    for (uint32_t i = 0; i < nd; i++)
        if (devs[i].api != bk->api)
            return replay__fail(REPLAY_EUNSUPPORTED,
                                "device %u of the trace is %s; the %s backend replays %s only",
                                i + 1, sbt_api_name(devs[i].api), bk->name, sbt_api_name(bk->api));
    snprintf(out->backend, sizeof out->backend, "%s", bk->name);
    /* nothing reaches a device before the trace has been found fit to replay */
    {
        int st =
            preflight(r, o.range, &out->incomplete, out->incomplete_why, sizeof out->incomplete_why,
                      &out->n_graph_errors, out->first_graph_error, sizeof out->first_graph_error);
        if (st < 0)
            return st;
        if (!o.allow_incomplete && (st = refuse(out->incomplete, out->incomplete_why,
                                                out->n_graph_errors, out->first_graph_error)))
            return st;
    }
    out->runs = runs;
    out->run = calloc(runs, sizeof *out->run);
    if (!out->run)
        return replay__fail(SBT_ENOMEM, "out of memory");

    struct eng e = {.r = r, .o = &o, .bk = bk, .out = out, .range = o.range};
    const struct sbt_info *in = sbt_reader_info(r);
    e.lo = in->seq_first;
    e.hi = in->seq_end;
    out->restore_seq = UINT64_MAX;
    int st = 0;
    struct first_run fr = {0};
    struct replay_plan plan;
    int64_t snap_i = -1;
    struct sched_slice trim = {0};
    char *saved_threads = NULL;
    int had_threads = 0, threads_set = 0;
    if ((o.snapshot_out || o.snapshot_every_ops || o.snapshot_every_ns || o.n_snapshot_at) &&
        (o.range || !o.snapshot_out)) {
        st = replay__fail(SBT_EINVAL, "snapshots are taken by a full replay of the whole trace "
                                      "into a sidecar (snapshot_out, no range)");
        goto out;
    }
    if (o.state_out && !o.range) {
        st = replay__fail(SBT_EINVAL, "state_out needs a range");
        goto out;
    }
    if ((st = perturb_check(&o, bk, in)) < 0)
        goto out;
    if (o.perturb.kind) {
        snprintf(out->perturb, sizeof out->perturb, "%s:%" PRIu64,
                 replay_perturb_name(o.perturb.kind), o.perturb.seed);
        e.poison = o.perturb.kind == REPLAY_PERTURB_POISON;
        e.poison_word = replay_perturb_poison_word(o.perturb.seed);
    }
    if ((st = sbt_hasher_create(&e.h)) < 0) {
        st = replay__fail(st, "%s", sbt_errmsg());
        goto out;
    }
    if (e.range) {
        /* the slice after the latest snapshot at or before the range, or from the start */
        if ((st = replay__plan(r, e.range, bk->write ? o.snapshots : NULL, 0, &plan, &e.slice,
                               &snap_i)) < 0)
            goto out;
        if (e.slice.range_first == SCHED_NONE) {
            st = replay__fail(SBT_EINVAL, "the range selects no op");
            goto out;
        }
        e.range_first = e.slice.range_first;
        e.hi = e.slice.range_last + 1;
        if (o.state_out &&
            (st = sched_slice_compute(r, e.range,
                                      &SCHED_SLICE_OPTS(.floor = e.range_first, .range_outputs = 1),
                                      &trim)) < 0) {
            st = replay__fail(st, "%s", sched_errmsg());
            goto out;
        }
    }
    if (e.hi < e.lo)
        e.hi = e.lo;
    if (o.dump_dir) {
        if (mkdir(o.dump_dir, 0777) < 0 && errno != EEXIST) {
            st = replay__fail(SBT_EIO, "--dump %s: cannot create it: %s", o.dump_dir,
                              strerror(errno));
            goto out;
        }
        e.dump_ok = 1;
    }

    struct replay_bk_opts bo = {.device = o.device,
                                .verify = o.verify,
                                .timing = o.timing,
                                .perturb = o.perturb,
                                .pstats = &e.ps};
    struct replay_bk_cb cb = {.done = on_done, .eng = &e};
    struct replay_device_info di = {0};
    uint64_t threads_before = 0;
    if (o.perturb.kind == REPLAY_PERTURB_THREADS) {
        /* lavapipe reads LP_NUM_THREADS when the device is created: set for this run's device
         * (and recorded in replay.env), as it was again after it */
        const char *old = getenv("LP_NUM_THREADS");
        if (old && !(saved_threads = strdup(old))) {
            st = replay__fail(SBT_ENOMEM, "out of memory");
            goto out;
        }
        had_threads = old != NULL;
        char v[24];
        snprintf(v, sizeof v, "%" PRIu64, 1 + o.perturb.seed % 4);
        setenv("LP_NUM_THREADS", v, 1);
        threads_set = 1;
        threads_before = count_threads();
    }
    if ((st = bk->open(r, &bo, &cb, &di, &e.be)) < 0)
        goto out;
    if (o.perturb.kind == REPLAY_PERTURB_THREADS) {
        if (!strstr(di.name, "llvmpipe") && !strstr(di.driver, "llvmpipe") &&
            !strstr(di.driver, "lavapipe") && !strstr(di.name, "lavapipe")) {
            st = replay__fail(REPLAY_EUNSUPPORTED,
                              "perturbation threads: the device '%s' (driver %s) has no "
                              "thread-count knob reprise knows (lavapipe's LP_NUM_THREADS)",
                              di.name, di.driver);
            goto out;
        }
        snprintf(out->perturb_what, sizeof out->perturb_what,
                 "LP_NUM_THREADS=%s for the device (the process had %" PRIu64
                 " threads before it opened, %" PRIu64 " after)",
                 getenv("LP_NUM_THREADS"), threads_before, count_threads());
    }
    snprintf(out->device, sizeof out->device, "%s", di.name);
    snprintf(out->driver, sizeof out->driver, "%s", di.driver);
    out->device_index = o.device;
    if (o.snapshot_out || snap_i >= 0 || o.state_out ||
        (in->required_features & SBT_FEATURE_INITIAL_STATE)) {
        if ((in->required_features & SBT_FEATURE_INITIAL_STATE) && in->n_states && !bk->write) {
            st = replay__fail(REPLAY_EUNSUPPORTED,
                              "the trace starts from stored contents and the %s backend cannot "
                              "write them",
                              bk->name);
            goto out;
        }
        struct replay__snap_cfg sc = {.r = r,
                                      .o = &o,
                                      .bk = bk,
                                      .be = e.be,
                                      .out = out,
                                      .lo = e.lo,
                                      .hi = e.hi,
                                      .snaps = o.snapshots,
                                      .snap_i = snap_i,
                                      .needs = e.slice.needs,
                                      .n_needs = e.slice.n_needs,
                                      .range_first = e.range_first,
                                      .trim_needs = trim.needs,
                                      .n_trim_needs = trim.n_needs};
        if ((st = replay__snap_create(&sc, &e.sp)) < 0)
            goto out;
    }

    for (e.run = 0; e.run < runs; e.run++) {
        e.n_res = 0;
        for (uint32_t i = 0; i < e.n_errs; i++)
            free(e.errs[i]);
        e.n_errs = 0;
        e.range_started = 0;
        e.stopped = 0;
        e.fatal = 0;
        if (e.sp)
            replay__snap_rewind(e.sp, e.run);
        e.ps = (struct replay__pstats){.first_whole_seq = UINT64_MAX};
        replay__reorder_destroy(e.ro);
        e.ro = NULL;
        if ((o.perturb.kind == REPLAY_PERTURB_ORDER || o.perturb.kind == REPLAY_PERTURB_DECLARED) &&
            (st = replay__reorder_create(o.perturb.seed + e.run, ORDER_WINDOW, node_visit, &e,
                                         &e.ro)) < 0)
            goto out;
        struct replay_run_stats *rs = &out->run[e.run];
        uint64_t t0 = replay__now_ns();
        char why[400] = "";
        if ((st = bk->prepare(e.be)) < 0) { /* a pipeline the driver does not compile, ... */
            snprintf(why, sizeof why, "preparing: %.380s", replay_errmsg());
            if (st != REPLAY_EDEVICE) {
                bk->reset(e.be);
                goto out;
            }
        }
        e.t_run0 = replay__now_ns();
        rs->prepare_ns = e.t_run0 - t0;
        uint64_t w0 = cpu_wait_now();
        if (!why[0] && (st = run_graph(&e)) == REPLAY_EDEVICE)
            snprintf(why, sizeof why, "%s", replay_errmsg());
        uint64_t t1 = replay__now_ns(), w1 = cpu_wait_now();
        /* threads that ended during the run took their counts with them: never below 0 */
        rs->cpu_wait_ns = w0 == UINT64_MAX || w1 == UINT64_MAX ? UINT64_MAX : w1 > w0 ? w1 - w0 : 0;
        rs->wall_ns = t1 - e.t_run0;
        rs->range_ns = e.t_range0 ? t1 - e.t_range0 : 0;
        rs->ff_ns = e.range && e.t_range0 ? e.t_range0 - e.t_run0 : 0;
        for (uint64_t i = 0; i < e.n_res; i++)
            if (e.res[i].state == ST_RANGE && e.res[i].has_dev)
                rs->device_ns += e.res[i].dev_end - e.res[i].dev_begin;
        bk->reset(e.be);
        int failed = st == REPLAY_EDEVICE; /* the device or driver failed during the run */
        if (failed) { /* a result like any other, with the error, and the last run */
            if (!out->n_errors || out->first_error_status != REPLAY_EDEVICE) {
                out->n_errors++; /* failed outside an op (preparing, a queue wait) */
                if (out->first_error == UINT64_MAX) {
                    out->first_error_status = REPLAY_EDEVICE;
                    snprintf(out->first_error_msg, sizeof out->first_error_msg, "%s", why);
                }
            }
            snprintf(out->device_failed, sizeof out->device_failed, "run %u: %s", e.run + 1, why);
            st = 0;
        }
        if (st < 0 || (st = sort_by_seq(&e)) < 0)
            goto out;
        if (runs > 1 && e.run == 0) { /* the first run's digests, for the others */
            fr.seq = malloc((e.n_res + 1) * sizeof *fr.seq);
            fr.dig = malloc((e.n_res + 1) * sizeof *fr.dig);
            fr.has = malloc(e.n_res + 1);
            if (!fr.seq || !fr.dig || !fr.has) {
                st = replay__fail(SBT_ENOMEM, "out of memory for the results of %" PRIu64 " ops",
                                  e.n_res);
                goto out;
            }
        }
        report_ops(&e, runs > 1 ? &fr : NULL);
        if (o.perturb.kind && e.run == 0)
            perturb_what(&e, &o);
        if (o.out_path) {
            char *p = run_path(o.out_path, e.run);
            if (!p) {
                st = replay__fail(SBT_ENOMEM, "out of memory");
                goto out;
            }
            st = write_result(&e, p);
            free(p);
            if (st < 0)
                goto out;
        }
        if (failed) {
            out->runs = e.run + 1; /* the runs after it would not be of the same device */
            break;
        }
    }
    st = 0;
out:
    if (e.sp) {
        /* the sidecar is kept only when this replay verified: no later range replay or trim
         * rests on bytes a run that went wrong computed */
        char why[1200] = "";
        int ok = st == 0;
        if (ok && o.snapshot_out) {
            enum replay_verdict v = replay_verdict(out, o.verify, why, sizeof why);
            if (v != REPLAY_VERDICT_VERIFIED) {
                ok = 0;
                snprintf(out->snapshots_dropped, sizeof out->snapshots_dropped, "%s: %.600s",
                         replay_verdict_name(v), why);
            } else {
                char tmp[1200];
                snprintf(tmp, sizeof tmp, "%s: %.1100s", replay_verdict_name(v), why);
                snprintf(why, sizeof why, "%s", tmp);
            }
        }
        int fs = replay__snap_finish(e.sp, ok, out->device, out->driver, why);
        if (st == 0)
            st = fs;
        replay__snap_destroy(e.sp);
    }
    if (e.be)
        bk->close(e.be);
    if (threads_set) {
        if (had_threads)
            setenv("LP_NUM_THREADS", saved_threads, 1);
        else
            unsetenv("LP_NUM_THREADS");
    }
    free(saved_threads);
    replay__reorder_destroy(e.ro);
    free(e.mask);
    for (uint32_t i = 0; i < e.n_errs; i++)
        free(e.errs[i]);
    free(e.errs);
    free(e.res);
    free(e.by_seq);
    free(fr.seq);
    free(fr.dig);
    free(fr.has);
    sched_slice_free(&e.slice);
    sched_slice_free(&trim);
    sbt_hasher_destroy(e.h);
    return st;
}

void replay_result_free(struct replay_result *res)
{
    if (!res)
        return;
    free(res->run);
    res->run = NULL;
}
