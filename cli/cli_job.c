/*
 * cli/cli_job.c — a job: the traces of the processes of one capture (or of captures on several
 * machines given one REPRISE_JOB), in rank order, each with its identity and its clock fit to
 * realtime (format/sbt_align.h), so that the commands that take a job (info, export, analyze,
 * check, diff) put them on one time axis. The index is the capture's manifest (capture/cap.h,
 * CAP_MANIFEST_SUFFIX) or a directory of traces. A trace is opened only while its identity is
 * read: the job holds what it read, never a reader, so 1,000 ranks cost 1,000 small records.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "capture/cap.h"
#include "cli/cli_int.h"
#include "format/sbt_export.h"
#include "format/sbt_map.h"

int cli_job_is(const char *path)
{
    struct stat st;
    size_t n = strlen(path), k = strlen(CAP_MANIFEST_SUFFIX);
    if (n > k && !strcmp(path + n - k, CAP_MANIFEST_SUFFIX))
        return 1;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

struct paths {
    char **v;
    uint32_t n, cap;
    int oom;
    const char *dir; /* the manifest's directory: where a trace it names relatively may be */
};

static void paths_add(struct paths *ps, const char *p)
{
    if (ps->n == ps->cap) {
        uint32_t cap = ps->cap ? ps->cap * 2 : 16;
        char **v = realloc(ps->v, cap * sizeof *v);
        if (!v) {
            ps->oom = 1;
            return;
        }
        ps->v = v;
        ps->cap = cap;
    }
    if (!(ps->v[ps->n] = strdup(p)))
        ps->oom = 1;
    else
        ps->n++;
}

/* A manifest line: its trace, where it is now (as written, else beside the manifest). */
static void manifest_proc(void *ctx, const struct cli_proc *p)
{
    struct paths *ps = ctx;
    char alt[PATH_MAX];
    const char *base = strrchr(p->trace, '/');
    snprintf(alt, sizeof alt, "%s/%s", ps->dir, base ? base + 1 : p->trace);
    paths_add(ps, access(p->trace, R_OK) != 0 && access(alt, R_OK) == 0 ? alt : p->trace);
}

static int is_trace_name(const char *n)
{
    size_t len = strlen(n);
    return len > 4 && !strcmp(n + len - 4, ".sbt") &&
           !(len > 9 && !strcmp(n + len - 9, ".snap.sbt"));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_traces(const char *cmd, const char *path, struct paths *ps)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (!d) {
            cli_err(cmd, "cannot read directory %s: %s", path, strerror(errno));
            return CLI_BADINPUT;
        }
        struct dirent *e;
        char full[PATH_MAX];
        while ((e = readdir(d))) {
            if (!is_trace_name(e->d_name))
                continue;
            snprintf(full, sizeof full, "%s/%s", path, e->d_name);
            paths_add(ps, full);
        }
        closedir(d);
        if (ps->n)
            qsort(ps->v, ps->n, sizeof *ps->v, cmp_str);
        return CLI_OK;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    ps->dir = dir;
    if (cli_manifest_read(path, manifest_proc, ps) < 0) {
        cli_err(cmd, "cannot read the job's manifest %s: %s", path, strerror(errno));
        return CLI_BADINPUT;
    }
    ps->dir = NULL;
    return CLI_OK;
}

static char *meta_dup(sbt_reader *r, const char *key)
{
    const char *v = sbt_reader_meta_get(r, key);
    return strdup(v ? v : "");
}

static int64_t meta_num(sbt_reader *r, const char *key)
{
    const char *v = sbt_reader_meta_get(r, key);
    char *end;
    if (!v || !*v)
        return -1;
    long long x = strtoll(v, &end, 10);
    return *end || x < 0 ? -1 : x;
}

static int cmp_proc(const void *a, const void *b)
{
    const struct cli_job_proc *x = a, *y = b;
    if ((x->rank < 0) != (y->rank < 0))
        return x->rank < 0 ? 1 : -1; /* ranked first */
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    long px = atol(x->pid), py = atol(y->pid);
    if (px != py)
        return px < py ? -1 : 1;
    return strcmp(x->trace, y->trace);
}

/* Reads one trace's identity and clock fit. */
static int read_proc(const char *cmd, const char *path, struct cli_job_proc *p)
{
    sbt_reader *r;
    int ex = cli_open_trace(cmd, path, &r);
    if (ex != CLI_OK)
        return ex;
    const struct sbt_info *in = sbt_reader_info(r);
    p->trace = strdup(path);
    p->rank = meta_num(r, "job.rank");
    p->world = meta_num(r, "job.world_size");
    p->local_rank = meta_num(r, "job.local_rank");
    p->host = meta_dup(r, "host");
    p->pid = meta_dup(r, "capture.pid");
    p->ppid = meta_dup(r, "capture.ppid");
    p->id = meta_dup(r, "job.id");
    p->argv = meta_dup(r, "argv");
    const char *ep = sbt_reader_meta_get(r, "clock.epoch_monotonic_ns");
    p->epoch_mono = ep ? strtoull(ep, NULL, 10) : 0;
    p->n_ops = in->n_ops;
    p->t_min = in->t_min;
    p->t_max = in->t_max;
    int st = sbt_clock_fit_trace(r, &p->fit);
    sbt_reader_close(r);
    if (!p->trace || !p->host || !p->pid || !p->ppid || !p->id || !p->argv) {
        cli_err(cmd, "out of memory reading %s", path);
        return CLI_INTERNAL;
    }
    if (st < 0) {
        cli_err(cmd, "%s: clock: %s", path, sbt_errmsg());
        return CLI_BADINPUT;
    }
    if (p->rank >= 0)
        snprintf(p->label, sizeof p->label, "rank %" PRId64, p->rank);
    else if (*p->pid)
        snprintf(p->label, sizeof p->label, "pid %s", p->pid);
    else /* not captured (gen, import): its file's name */
        snprintf(p->label, sizeof p->label, "%.40s",
                 strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
    if (*p->pid)
        snprintf(p->title, sizeof p->title, "%s (pid %s on %.80s)", p->label, p->pid,
                 *p->host ? p->host : "?");
    else
        snprintf(p->title, sizeof p->title, "%s", p->label);
    return CLI_OK;
}

/* ==========================================================================================
 * Anchors: points every rank waits on. A NCCL collective (a kernel named ncclDevKernel_* or
 * ncclKernel_* of AllReduce, AllGather, ReduceScatter, Broadcast or Reduce) completes on every
 * rank at once, within its last hop: the device end of the n-th launch of one collective is
 * the same instant in every rank. A rank on another host than the reference (the first rank)
 * is placed by least squares over those instants instead of its realtime clock, whose error
 * against the reference's host is unknown. Ops without device times are no anchors (a launch
 * returns before the collective runs).
 * ========================================================================================== */

#define MAX_ANCHORS (1u << 20)

static const char *anchor_name(sbt_reader *r, const struct sbt_op *op)
{
    static const char *const coll[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                       "Reduce"};
    if (op->kind != SBT_OP_KERNEL || !(op->flags & SBT_OPF_DEV_TIME))
        return NULL;
    const struct sbt_kernel *k = op->kernel ? sbt_reader_kernel(r, op->kernel) : NULL;
    const char *n = k ? sbt_reader_string(r, k->name) : NULL;
    if (!n || !*n)
        n = sbt_reader_string(r, op->name);
    if (!n || (strncmp(n, "ncclDevKernel_", 14) && strncmp(n, "ncclKernel_", 11)))
        return NULL;
    for (size_t i = 0; i < sizeof coll / sizeof coll[0]; i++)
        if (strstr(n, coll[i]))
            return n;
    return NULL;
}

/* Calls fn(ctx, key, device end) for each anchor of the trace at path, in op order; key names
 * the collective and its occurrence. */
static int anchors_read(const char *cmd, const char *path,
                        int (*fn)(void *ctx, uint64_t key, uint64_t t_end), void *ctx)
{
    sbt_reader *r;
    int ex = cli_open_trace(cmd, path, &r);
    if (ex != CLI_OK)
        return ex;
    struct sbt_map occ = {0};
    sbt_cursor *c;
    const struct sbt_op *op;
    int st = sbt_cursor_open(r, NULL, &c);
    while (st >= 0 && (st = sbt_cursor_next(c, &op)) == 1) {
        const char *n = anchor_name(r, op);
        if (!n)
            continue;
        uint64_t h = XXH3_64bits(n, strlen(n));
        uint64_t *k = sbt_map_put(&occ, h, NULL);
        if (!k) {
            st = SBT_ENOMEM;
            break;
        }
        if (fn(ctx, sbt_map_hash(h ^ sbt_map_hash((*k)++ + 0x9e3779b97f4a7c15ull)), op->dev_end))
            break;
    }
    if (st < 0)
        cli_err(cmd, "%s: %s", path, sbt_errmsg());
    sbt_cursor_close(c);
    sbt_map_free(&occ);
    sbt_reader_close(r);
    return st < 0 ? cli_exit_for(st) : CLI_OK;
}

struct anchor_ref {     /* the reference rank's anchors */
    struct sbt_map idx; /* key -> index + 1 */
    uint64_t *t;        /* device end, its trace time */
    uint32_t n, cap;
};

static int ref_add(void *ctx, uint64_t key, uint64_t t_end)
{
    struct anchor_ref *a = ctx;
    if (a->n >= MAX_ANCHORS)
        return 1;
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 256;
        uint64_t *t = realloc(a->t, cap * sizeof *t);
        if (!t)
            return 1;
        a->t = t;
        a->cap = cap;
    }
    int is_new;
    uint64_t *v = sbt_map_put(&a->idx, key, &is_new);
    if (!v)
        return 1;
    if (is_new) {
        a->t[a->n] = t_end;
        *v = ++a->n;
    }
    return 0;
}

struct anchor_pairs { /* one rank's anchors met in the reference, as clock pairs */
    const struct anchor_ref *ref;
    const struct cli_job_proc *rp, *p;
    struct sbt_clock_pair *v;
    uint32_t n, cap;
};

static int pair_add(void *ctx, uint64_t key, uint64_t t_end)
{
    struct anchor_pairs *a = ctx;
    const uint64_t *i = sbt_map_get(&a->ref->idx, key);
    if (!i)
        return 0;
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 256;
        struct sbt_clock_pair *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return 1;
        a->v = v;
        a->cap = cap;
    }
    uint64_t t_ref = a->ref->t[*i - 1];
    double off;
    sbt_clock_map(&a->rp->fit, t_ref, &off);
    a->v[a->n++] =
        (struct sbt_clock_pair){.mono_ns = a->p->epoch_mono + t_end,
                                .real_ns = a->rp->fit.real_base + (uint64_t)llround(off),
                                .err_ns = (uint64_t)ceil(sbt_clock_bound(&a->rp->fit, t_ref)) + 1};
    return 0;
}

/* Places the ranks on other hosts than the reference by the anchors they share with it. */
static int job_anchors(const char *cmd, struct cli_job *j)
{
    const struct cli_job_proc *rp = &j->p[0];
    int need = 0;
    for (uint32_t i = 1; i < j->n; i++)
        need |= strcmp(j->p[i].host, rp->host) != 0;
    if (!need || rp->fit.source == SBT_CLOCK_NONE)
        return CLI_OK;
    struct anchor_ref ref = {0};
    int ex = anchors_read(cmd, rp->trace, ref_add, &ref);
    for (uint32_t i = 1; ex == CLI_OK && ref.n && i < j->n; i++) {
        struct cli_job_proc *p = &j->p[i];
        if (!strcmp(p->host, rp->host) || p->fit.source == SBT_CLOCK_NONE || !p->epoch_mono)
            continue;
        struct anchor_pairs a = {.ref = &ref, .rp = rp, .p = p};
        ex = anchors_read(cmd, p->trace, pair_add, &a);
        struct sbt_clock_fit f;
        if (ex == CLI_OK && a.n >= 2) {
            if (sbt_clock_fit_pairs(a.v, a.n, p->epoch_mono, &f) == 0) {
                double was, now;
                sbt_clock_map(&p->fit, p->t_min, &was);
                sbt_clock_map(&f, p->t_min, &now);
                p->anchor_shift_ns = (double)(int64_t)(f.real_base - p->fit.real_base) + now - was;
                f.source = SBT_CLOCK_ANCHORS;
                p->fit = f;
                p->n_anchors = a.n;
            } else {
                fprintf(stderr,
                        "reprise: %s: note: %s: its anchors do not fit (%s); placed by "
                        "its clock pairs\n",
                        cmd, p->trace, sbt_errmsg());
            }
        }
        free(a.v);
    }
    free(ref.t);
    sbt_map_free(&ref.idx);
    return ex;
}

int cli_job_open(const char *cmd, const char *path, struct cli_job **out)
{
    *out = NULL;
    struct paths ps = {0};
    int ex = list_traces(cmd, path, &ps);
    struct cli_job *j = calloc(1, sizeof *j);
    if (ex == CLI_OK && (ps.oom || !j || !(j->index = strdup(path)))) {
        cli_err(cmd, "out of memory reading the job %s", path);
        ex = CLI_INTERNAL;
    }
    if (ex == CLI_OK && !ps.n) {
        cli_err(cmd,
                "%s: no traces in this job (a manifest lists them, a directory holds "
                "them as *.sbt)",
                path);
        ex = CLI_BADINPUT;
    }
    if (ex == CLI_OK && !(j->p = calloc(ps.n, sizeof *j->p))) {
        cli_err(cmd, "out of memory for %u processes", ps.n);
        ex = CLI_INTERNAL;
    }
    for (uint32_t i = 0; ex == CLI_OK && i < ps.n; i++) {
        ex = read_proc(cmd, ps.v[i], &j->p[i]);
        j->n = i + 1;
    }
    for (uint32_t i = 0; i < ps.n; i++)
        free(ps.v[i]);
    free(ps.v);
    if (ex != CLI_OK) {
        cli_job_free(j);
        return ex;
    }
    qsort(j->p, j->n, sizeof *j->p, cmp_proc);
    if ((ex = job_anchors(cmd, j)) != CLI_OK) {
        cli_job_free(j);
        return ex;
    }

    /* the origin: the earliest first op on the realtime axis, relative to the first
     * aligned trace's base (differences of ns fit a double exactly) */
    int have = 0;
    double lo = 0;
    uint64_t base = 0;
    for (uint32_t i = 0; i < j->n; i++) {
        const struct cli_job_proc *p = &j->p[i];
        if (p->fit.source == SBT_CLOCK_NONE) {
            j->unaligned++;
            continue;
        }
        double off;
        sbt_clock_map(&p->fit, p->t_min, &off);
        if (!have)
            base = p->fit.real_base;
        double at = (double)(int64_t)(p->fit.real_base - base) + off;
        if (!have || at < lo)
            lo = at;
        have = 1;
    }
    j->origin_real = have ? base + (uint64_t)llround(lo) : 0;
    for (uint32_t i = 0; i < j->n; i++) {
        struct cli_job_proc *p = &j->p[i];
        if (p->fit.source == SBT_CLOCK_NONE)
            continue;
        double off;
        sbt_clock_map(&p->fit, p->t_min, &off);
        p->start_ns = (double)(int64_t)(p->fit.real_base - j->origin_real) + off;
        if (p->start_ns < 0 && p->start_ns > -1)
            p->start_ns = 0; /* the origin is rounded to whole ns */
        double b0 = sbt_clock_bound(&p->fit, p->t_min), b1 = sbt_clock_bound(&p->fit, p->t_max);
        p->bound_ns = b0 > b1 ? b0 : b1;
    }
    for (uint32_t i = 0; i < j->n; i++) {
        int seen = 0;
        for (uint32_t k = 0; k < i && !seen; k++)
            seen = !strcmp(j->p[k].id, j->p[i].id);
        j->n_ids += !seen;
        if (i && j->p[i].rank >= 0 && j->p[i].rank == j->p[i - 1].rank)
            j->dup_ranks = 1;
    }
    if (j->n_ids > 1)
        fprintf(stderr, "reprise: %s: note: %s holds traces of %u different jobs (job.id)\n", cmd,
                path, j->n_ids);
    if (j->dup_ranks)
        fprintf(stderr, "reprise: %s: note: %s has several traces with the same rank\n", cmd, path);
    *out = j;
    return CLI_OK;
}

void cli_job_free(struct cli_job *j)
{
    if (!j)
        return;
    for (uint32_t i = 0; i < j->n; i++) {
        struct cli_job_proc *p = &j->p[i];
        free(p->trace);
        free(p->host);
        free(p->pid);
        free(p->ppid);
        free(p->id);
        free(p->argv);
    }
    free(j->p);
    free(j->index);
    free(j);
}

void cli_job_export_opts(const struct cli_job *j, uint32_t i, struct sbt_export_opts *o)
{
    const struct cli_job_proc *p = &j->p[i];
    o->run = i;
    o->pid = (int32_t)i + 1;
    o->label = p->title;
    o->ts_offset = (int64_t)llround(p->start_ns);
    o->ts_drift = p->fit.source >= SBT_CLOCK_PAIRS && p->fit.n_pairs > 1 ? p->fit.b - 1 : 0;
}

char *cli_job_out_path(const char *v, int is_dir, const struct cli_job_proc *p)
{
    char buf[4400], who[48];
    if (p->rank >= 0)
        snprintf(who, sizeof who, "rank-%" PRId64, p->rank);
    else
        snprintf(who, sizeof who, "pid-%s", *p->pid ? p->pid : "unknown");
    if (is_dir) {
        snprintf(buf, sizeof buf, "%s/%s", v, who);
    } else {
        const char *slash = strrchr(v, '/'), *dot = strrchr(v, '.');
        if (!dot || (slash && dot < slash) || dot == v || (slash && dot == slash + 1))
            snprintf(buf, sizeof buf, "%s.%s", v, who);
        else
            snprintf(buf, sizeof buf, "%.*s.%s%s", (int)(dot - v), v, who, dot);
    }
    return strdup(buf);
}
