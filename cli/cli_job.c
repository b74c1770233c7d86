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

#include "capture/cap.h"
#include "cli/cli_int.h"
#include "format/sbt_export.h"

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
    return CLI_OK;
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
    o->label = p->label;
    o->ts_offset = (int64_t)llround(p->start_ns);
    o->ts_drift = p->fit.source == SBT_CLOCK_PAIRS && p->fit.n_pairs > 1 ? p->fit.b - 1 : 0;
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
