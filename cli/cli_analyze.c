/*
 * cli/cli_analyze.c — `reprise analyze`: where the time goes. Kernel table, critical path,
 * per-stream and per-device utilisation, concurrency and idle gaps, from the dependency graph
 * and the simulated timeline; `--why SEQ` explains why an op waits.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "cli/cli_int.h"
#include "format/sbt_map.h"
#include "scheduler/sched.h"

static const char analyze_help[] =
    "usage: reprise analyze TRACE [--time-range A:B] [--ops A:B] [--stream S] [--json F]\n"
    "                             [--top N] [--why SEQ[:FROM]]\n\n"
    "Kernel statistics (count, total, mean, min, max, geometry, time on the critical path),\n"
    "the critical path and its share of the makespan, per-stream and per-device utilisation,\n"
    "maximum and mean concurrency, and idle gaps. Times are on the timeline predicted from the\n"
    "recorded durations with streams running concurrently as far as the dependencies allow\n"
    "(the range starts at 0); the captured makespan is shown beside it.\n\n"
    "  --time-range A:B   ops whose span overlaps [A, B), relative to the trace start\n"
    "  --ops A:B          ops with sequence number in [A, B)\n"
    "  --stream S         ops on stream S only\n"
    "  --json F           write everything as JSON to F ('-' = stdout)\n"
    "  --top N            rows of the kernel and critical-path tables (default 20; 0 = all)\n"
    "  --why SEQ          why op SEQ waits: its incoming dependency edges with their reasons\n"
    "  --why SEQ:FROM     the chain of dependencies by which op SEQ waits for op FROM\n\n"
    "Then the races the program's own synchronisation allows: pairs of ops whose accesses\n"
    "conflict that nothing the program declared orders (Vulkan barriers, events, semaphores,\n"
    "fences; CUDA stream order, events, syncs), each naming both ops, the resource, the bytes\n"
    "and what is missing (an execution dependency, or only the memory dependency). A kernel's\n"
    "writes are may-writes: these are possible races, listed, never a failure.\n\n"
    "JOB (the capture's manifest TRACE-stem.procs, or a directory of traces; see reprise info):\n"
    "for each process in rank order, its summary and kernel table (--top rows), then the skew\n"
    "between ranks at shared points. A shared point is the n-th launch of a kernel (entry point\n"
    "and program image) that every rank makes at least n times; its skew is the spread of the\n"
    "ranks' device begin times (the host begin of the call where the trace has no device times)\n"
    "on the job's time axis (clock pairs fitted to realtime, or NCCL collectives across hosts:\n"
    "reprise info); the alignment's error bound is printed beside it. Per kernel: points,\n"
    "median and largest skew, and at the largest which rank was first and which last (at a\n"
    "collective: who arrived first and last). Ranks are read one at a time; memory holds the\n"
    "points of the first rank (at most 1M; the rest are left out, and the output says so).\n"
    "--json F: all of it as JSON (per process its placement and analysis, then the skew).\n"
    "--why, --time-range, --ops and --stream are for one trace.\n";

/* "op 12 (kernel 'name' on stream 3)" into buf. */
static const char *describe(sbt_reader *r, uint64_t seq, char *buf, size_t len)
{
    struct sbt_range rg = {.has_seq = 1, .seq_begin = seq, .seq_end = seq + 1};
    sbt_cursor *c;
    const struct sbt_op *op;
    snprintf(buf, len, "op %" PRIu64, seq);
    if (sbt_cursor_open(r, &rg, &c) < 0)
        return buf;
    if (sbt_cursor_next(c, &op) == 1) {
        const char *n = sbt_reader_string(r, op->name);
        if (n && *n)
            snprintf(buf, len, "op %" PRIu64 " (%s '%.60s' on stream %u)", seq,
                     sbt_op_kind_name(op->kind), n, op->stream);
        else
            snprintf(buf, len, "op %" PRIu64 " (%s on stream %u)", seq, sbt_op_kind_name(op->kind),
                     op->stream);
    }
    sbt_cursor_close(c);
    return buf;
}

static void print_edge(sbt_reader *r, const struct sched_edge *e)
{
    char d[160];
    printf("  %s: %s", describe(r, e->from, d, sizeof d), sched_dep_desc(e->reason));
    switch (e->reason) {
    case SCHED_DEP_RAW:
    case SCHED_DEP_WAR:
    case SCHED_DEP_WAW:
    case SCHED_DEP_FREE:
    case SCHED_DEP_ALLOC:
        printf(" on resource %" PRIu64, e->obj);
        if (e->hi > e->lo)
            printf(" bytes [%" PRIu64 ", %" PRIu64 ")", e->lo, e->hi);
        break;
    case SCHED_DEP_EVENT:
        printf(" (event %" PRIu64 ")", e->obj);
        break;
    case SCHED_DEP_SIGNAL:
        printf(" (object %" PRIu64, e->obj);
        if (e->sync_kind == SBT_SYNC_TIMELINE_SEMAPHORE)
            printf(", waits for value %" PRIu64 ", signalled %" PRIu64, e->lo, e->hi);
        printf(")");
        break;
    case SCHED_DEP_STREAM_SYNC:
        printf(" (stream %" PRIu64 ")", e->obj);
        break;
    case SCHED_DEP_DEVICE_SYNC:
        printf(" (device %" PRIu64 ")", e->obj);
        break;
    case SCHED_DEP_HOST:
        printf(" (thread %" PRIu64 ")", e->obj);
        break;
    default:
        break;
    }
    if (e->flags & SCHED_EDGE_LATE)
        printf(" [later in capture order]");
    if (e->flags & SCHED_EDGE_BROKEN)
        printf(" [broken: cycle or never satisfied]");
    printf("\n");
}

static int why(sbt_reader *r, const char *arg)
{
    uint64_t seq, from = SCHED_NONE;
    char a[64];
    const char *colon = strchr(arg, ':');
    snprintf(a, sizeof a, "%.*s", colon ? (int)(colon - arg) : (int)strlen(arg), arg);
    if (cli_parse_u64(a, &seq) || (colon && cli_parse_u64(colon + 1, &from)))
        return cli_usage("analyze", "--why '%s': expected SEQ or SEQ:FROM (op numbers)", arg);
    char d[160];
    int st;
    if (from == SCHED_NONE) {
        struct sched_edge *e;
        uint32_t n;
        if ((st = sched_why(r, seq, &e, &n)) < 0) {
            cli_err("analyze", "%s", sched_errmsg());
            return st == SBT_ENOTFOUND ? CLI_USAGE : cli_exit_for(st);
        }
        printf("%s waits for %u op%s:\n", describe(r, seq, d, sizeof d), n, n == 1 ? "" : "s");
        for (uint32_t i = 0; i < n; i++)
            print_edge(r, &e[i]);
        if (!n)
            printf("  nothing: it can start as soon as the replay reaches it\n");
        free(e);
        return CLI_OK;
    }
    struct sched_edge *e;
    uint64_t *nodes;
    uint32_t n;
    if ((st = sched_why_path(r, seq, from, &e, &nodes, &n)) < 0) {
        cli_err("analyze", "%s", sched_errmsg());
        return st == SBT_ENOTFOUND || st == SBT_EINVAL ? CLI_USAGE : cli_exit_for(st);
    }
    if (!n) {
        printf("op %" PRIu64 " does not depend on op %" PRIu64 "\n", seq, from);
        return CLI_OK;
    }
    printf("op %" PRIu64 " waits for op %" PRIu64 " through %u edge%s:\n", seq, from, n,
           n == 1 ? "" : "s");
    for (uint32_t i = 0; i < n; i++) {
        printf("%s", describe(r, nodes[i + 1], d, sizeof d));
        printf(" <-");
        print_edge(r, &e[i]);
    }
    free(e);
    free(nodes);
    return CLI_OK;
}

static double pct(uint64_t a, uint64_t b)
{
    return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void print_analysis(FILE *tx, sbt_reader *r, const struct sched_sim_result *res,
                           const struct sched_graph_stats *gs, uint32_t top, int kernels_only)
{
    char b[6][32];
    fprintf(tx, "ops         %" PRIu64 " (%" PRIu64 " timed); predicted makespan %s, captured %s\n",
            res->n_ops, res->n_timed, cli_fmt_ns((double)res->makespan_ns, b[0], 32),
            cli_fmt_ns((double)res->captured_ns, b[1], 32));
    fprintf(tx,
            "validation  %" PRIu64 " errors, %" PRIu64 " warnings (details: reprise replay TRACE "
            "--mode dry-run)\n",
            gs->n_errors, gs->n_warnings);
    fprintf(tx, "concurrency max %u at %s, mean %.2f device ops at once\n", res->max_concurrency,
            cli_fmt_ns((double)res->max_concurrency_at, b[0], 32), res->mean_concurrency);

    fprintf(tx, "\nkernels and other timed ops (by total time)\n");
    fprintf(tx, "  %-48s %8s %10s %10s %10s %10s %7s  %s\n", "name", "count", "total", "mean",
            "min", "max", "crit%", "geometry (grid / block)");
    for (uint32_t i = 0; i < res->n_kernels && (!top || i < top); i++) {
        const struct sched_kernel_row *k = &res->kernels[i];
        char nm[49];
        snprintf(nm, sizeof nm, "%s", k->name);
        if (strlen(k->name) > 48)
            memcpy(nm + 45, "...", 4);
        fprintf(tx, "  %-48s %8" PRIu64 " %10s %10s %10s %10s %6.1f%%", nm, k->count,
                cli_fmt_ns((double)k->total_ns, b[0], 32), cli_fmt_ns(k->mean_ns, b[1], 32),
                cli_fmt_ns((double)k->min_ns, b[2], 32), cli_fmt_ns((double)k->max_ns, b[3], 32),
                pct(k->crit_ns, res->makespan_ns));
        if (k->kernel || k->grid[0])
            fprintf(tx, "  %ux%ux%u / %ux%ux%u%s", k->grid[0], k->grid[1], k->grid[2], k->block[0],
                    k->block[1], k->block[2], k->n_geoms > 1 ? " (varies)" : "");
        fprintf(tx, "\n");
    }
    if (top && res->n_kernels > top)
        fprintf(tx, "  ... %u more rows (--top 0 or --json F for all)\n", res->n_kernels - top);
    if (kernels_only)
        return;

    fprintf(tx, "\ncritical path: %" PRIu64 " timed ops, %s = %.1f%% of the predicted makespan\n",
            res->crit_n_ops, cli_fmt_ns((double)res->crit_busy_ns, b[0], 32),
            pct(res->crit_busy_ns, res->makespan_ns));
    uint32_t shown = 0;
    fprintf(tx, "  %10s %12s %10s %7s  %-6s %s\n", "seq", "start", "duration", "share", "stream",
            "op");
    for (uint32_t i = 0; i < res->n_crit && (!top || shown < top); i++) {
        const struct sched_crit_op *c = &res->crit[i];
        if (!c->dur_ns)
            continue;
        const char *n = sbt_reader_string(r, c->name);
        fprintf(tx, "  %10" PRIu64 " %12s %10s %6.2f%%  %-6u %s %.60s\n", c->seq,
                cli_fmt_ns((double)c->start_ns, b[0], 32), cli_fmt_ns((double)c->dur_ns, b[1], 32),
                pct(c->dur_ns, res->makespan_ns), c->stream, sbt_op_kind_name(c->kind), n ? n : "");
        shown++;
    }
    if (res->crit_n_ops > shown)
        fprintf(tx, "  ... %" PRIu64 " more ops on the path (--json F lists the first 1000)\n",
                res->crit_n_ops - shown);

    fprintf(tx, "\nstreams (utilisation = busy / predicted makespan)\n");
    fprintf(tx, "  %6s %-24s %6s %10s %10s %7s %8s %10s %10s\n", "stream", "name", "device", "ops",
            "busy", "util", "gaps", "idle", "max gap");
    for (uint32_t i = 0; i < res->n_streams; i++) {
        const struct sched_stream_row *s = &res->streams[i];
        const struct sbt_stream *t = sbt_reader_stream(r, s->stream);
        const char *n = t ? sbt_reader_string(r, t->name) : "?";
        fprintf(tx, "  %6u %-24.24s %6u %10" PRIu64 " %10s %6.1f%% %8" PRIu64 " %10s %10s\n",
                s->stream, n ? n : "", s->device, s->n_ops,
                cli_fmt_ns((double)s->busy_ns, b[0], 32), pct(s->busy_ns, res->makespan_ns),
                s->n_gaps, cli_fmt_ns((double)s->gap_ns, b[1], 32),
                cli_fmt_ns((double)s->max_gap_ns, b[2], 32));
    }
    fprintf(tx, "\ndevices (busy = at least one of its streams running)\n");
    fprintf(tx, "  %6s %10s %7s %8s %10s %10s %12s\n", "device", "busy", "util", "gaps", "idle",
            "max gap", "at");
    for (uint32_t i = 0; i < res->n_devices; i++) {
        const struct sched_device_row *d = &res->devices[i];
        fprintf(tx, "  %6u %10s %6.1f%% %8" PRIu64 " %10s %10s %12s\n", d->device,
                cli_fmt_ns((double)d->busy_ns, b[0], 32), pct(d->busy_ns, res->makespan_ns),
                d->n_gaps, cli_fmt_ns((double)d->gap_ns, b[1], 32),
                cli_fmt_ns((double)d->max_gap_ns, b[2], 32),
                cli_fmt_ns((double)d->max_gap_at, b[3], 32));
    }
    if (res->late_intervals)
        fprintf(tx,
                "\nnote: %" PRIu64
                " intervals reached the concurrency sweep late and were clipped\n",
                res->late_intervals);
}

/* ==========================================================================================
 * A job: per-rank tables, then skew at shared points (see the help).
 * ========================================================================================== */

#define MAX_POINTS (1u << 20)

struct point {
    uint64_t name; /* hash of the kernel's name */
    uint32_t occ;  /* its occurrence, from 0 */
    uint32_t n_seen;
    double t_min, t_max; /* host begin on the job's axis, ns */
    uint32_t r_min, r_max;
};

struct skew {
    struct sbt_map idx;   /* (name, occ) key -> point index + 1 */
    struct sbt_map names; /* name hash -> index + 1 in name_str */
    struct point *pt;
    uint32_t n_pt, cap_pt;
    char **name_str;
    uint64_t *name_key;
    uint32_t n_names, cap_names;
    int capped, oom;
};

static uint64_t point_key(uint64_t name, uint32_t occ)
{
    return sbt_map_hash(name ^ sbt_map_hash(occ + 0x9e3779b97f4a7c15ull));
}

static void skew_name(struct skew *sk, uint64_t h, const char *name)
{
    int is_new;
    uint64_t *v = sbt_map_put(&sk->names, h, &is_new);
    if (!v) {
        sk->oom = 1;
        return;
    }
    if (!is_new)
        return;
    if (sk->n_names == sk->cap_names) {
        uint32_t cap = sk->cap_names ? sk->cap_names * 2 : 64;
        char **ns = realloc(sk->name_str, cap * sizeof *ns);
        uint64_t *nk = ns ? realloc(sk->name_key, cap * sizeof *nk) : NULL;
        if (ns)
            sk->name_str = ns;
        if (!ns || !nk) {
            sk->oom = 1;
            return;
        }
        sk->name_key = nk;
        sk->cap_names = cap;
    }
    sk->name_str[sk->n_names] = strdup(name);
    sk->name_key[sk->n_names] = h;
    *v = ++sk->n_names;
}

/* One rank's kernel launches into the points (rank 0 makes them, the others meet them). */
static int skew_rank(struct skew *sk, const struct cli_job *j, uint32_t ri)
{
    const struct cli_job_proc *p = &j->p[ri];
    sbt_reader *r;
    int ex = cli_open_trace("analyze", p->trace, &r);
    if (ex != CLI_OK)
        return ex;
    struct sbt_map occ = {0};
    sbt_cursor *c;
    int st = sbt_cursor_open(r, NULL, &c);
    const struct sbt_op *op;
    while (st >= 0 && (st = sbt_cursor_next(c, &op)) == 1) {
        if (op->kind != SBT_OP_KERNEL)
            continue;
        /* the kernel by entry point and program image (the same in every rank, whatever
         * its handles), else the op's name */
        char name[160];
        const char *opn = sbt_reader_string(r, op->name);
        const struct sbt_kernel *k = op->kernel ? sbt_reader_kernel(r, op->kernel) : NULL;
        const struct sbt_program *pg = k ? sbt_reader_program(r, k->program) : NULL;
        const char *kn = k ? sbt_reader_string(r, k->name) : NULL;
        if (kn && *kn && pg && (pg->blob.lo || pg->blob.hi))
            snprintf(name, sizeof name, "%s (program %08" PRIx64 ")", kn, pg->blob.lo >> 32);
        else
            snprintf(name, sizeof name, "%s", kn && *kn ? kn : opn ? opn : "");
        uint64_t h = XXH3_64bits(name, strlen(name));
        uint64_t *n = sbt_map_put(&occ, h, NULL);
        if (!n) {
            sk->oom = 1;
            break;
        }
        uint32_t o = (uint32_t)(*n)++;
        /* when it ran: its device begin where measured (the capture maps device times to
         * the host clock), else the host begin of its call */
        uint64_t at = op->flags & SBT_OPF_DEV_TIME ? op->dev_begin : op->host_begin;
        double off;
        sbt_clock_map(&p->fit, at, &off);
        double t = (double)(int64_t)(p->fit.real_base - j->origin_real) + off;
        if (p->fit.source == SBT_CLOCK_NONE)
            t = (double)(at > p->t_min ? at - p->t_min : 0);
        uint64_t key = point_key(h, o);
        uint64_t *v = ri == 0 ? NULL : sbt_map_get(&sk->idx, key);
        if (ri == 0) {
            if (sk->n_pt >= MAX_POINTS) {
                sk->capped = 1;
                continue;
            }
            if (sk->n_pt == sk->cap_pt) {
                uint32_t cap = sk->cap_pt ? sk->cap_pt * 2 : 1024;
                struct point *np = realloc(sk->pt, cap * sizeof *np);
                if (!np) {
                    sk->oom = 1;
                    break;
                }
                sk->pt = np;
                sk->cap_pt = cap;
            }
            if (!(v = sbt_map_put(&sk->idx, key, NULL))) {
                sk->oom = 1;
                break;
            }
            skew_name(sk, h, name);
            sk->pt[sk->n_pt] = (struct point){.name = h, .occ = o, .t_min = t, .t_max = t};
            *v = ++sk->n_pt;
        }
        if (!v)
            continue;
        struct point *pt = &sk->pt[*v - 1];
        if (pt->n_seen != ri)
            continue; /* a key collision within this rank: counted once */
        pt->n_seen++;
        if (t < pt->t_min)
            pt->t_min = t, pt->r_min = ri;
        if (t > pt->t_max)
            pt->t_max = t, pt->r_max = ri;
    }
    if (st < 0)
        cli_err("analyze", "%s: %s", p->trace, sbt_errmsg());
    sbt_cursor_close(c);
    sbt_map_free(&occ);
    sbt_reader_close(r);
    return st < 0 ? cli_exit_for(st) : sk->oom ? CLI_INTERNAL : CLI_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The skew table on tx, and as the JSON value of "skew" on js (NULL: none). */
static void skew_print(const struct skew *sk, const struct cli_job *j, FILE *tx, FILE *js)
{
    char b[4][32];
    double bound = 0;
    for (uint32_t i = 0; i < j->n; i++)
        if (j->p[i].bound_ns > bound)
            bound = j->p[i].bound_ns;
    fprintf(tx,
            "\nskew between ranks at shared points (begin of the n-th launch of a kernel "
            "every rank launches; alignment bound %s per rank%s)\n",
            cli_fmt_ns(bound, b[0], 32), j->unaligned ? "; some ranks unaligned" : "");
    if (js)
        fprintf(js, "{\"bound_ns\":%.1f,\"capped\":%s,\"kernels\":[", bound,
                sk->capped ? "true" : "false");
    double *v = j->n < 2 ? NULL : malloc((sk->n_pt ? sk->n_pt : 1) * sizeof *v);
    if (!v) {
        fprintf(tx, "  %s\n", j->n < 2 ? "one process: no skew" : "out of memory");
        if (js)
            fprintf(js, "],\"points\":0,\"max_ns\":0}");
        return;
    }
    fprintf(tx, "  %-40s %8s %12s %12s %10s  %s\n", "kernel", "points", "median skew", "max skew",
            "at launch", "first -> last rank at the max");
    uint32_t n_all = 0;
    double all_max = 0;
    for (uint32_t f = 0; f < sk->n_names; f++) {
        uint32_t n = 0, at = 0;
        double mx = -1;
        const struct point *pm = NULL;
        for (uint32_t i = 0; i < sk->n_pt; i++) {
            const struct point *pt = &sk->pt[i];
            if (pt->name != sk->name_key[f] || pt->n_seen != j->n)
                continue;
            double d = pt->t_max - pt->t_min;
            v[n++] = d;
            if (d > mx)
                mx = d, at = pt->occ, pm = pt;
        }
        if (!n)
            continue;
        n_all += n;
        if (mx > all_max)
            all_max = mx;
        qsort(v, n, sizeof *v, cmp_double);
        const char *name = sk->name_str[f] ? sk->name_str[f] : "?";
        fprintf(tx, "  %-40.40s %8u %12s %12s %10u  %s -> %s\n", name, n,
                cli_fmt_ns(v[n / 2], b[0], 32), cli_fmt_ns(mx, b[1], 32), at, j->p[pm->r_min].label,
                j->p[pm->r_max].label);
        if (js) {
            fprintf(js, "%s{\"kernel\":", n_all == n ? "" : ",");
            cli_json_str(js, name);
            fprintf(js, ",\"points\":%u,\"median_ns\":%.1f,\"max_ns\":%.1f,\"at\":%u,\"first\":", n,
                    v[n / 2], mx, at);
            cli_json_str(js, j->p[pm->r_min].label);
            fprintf(js, ",\"last\":");
            cli_json_str(js, j->p[pm->r_max].label);
            fprintf(js, "}");
        }
    }
    if (!n_all)
        fprintf(tx, "  none: no kernel is launched by every rank\n");
    else
        fprintf(tx, "  %u shared points; largest skew %s\n", n_all, cli_fmt_ns(all_max, b[0], 32));
    if (sk->capped)
        fprintf(tx,
                "  note: the first rank launches more than %u kernels; the later ones are left "
                "out\n",
                MAX_POINTS);
    if (js)
        fprintf(js, "],\"points\":%u,\"max_ns\":%.1f}", n_all, all_max);
    free(v);
}

static const char *clock_word(uint32_t source)
{
    return source == SBT_CLOCK_ANCHORS ? "anchors"
           : source == SBT_CLOCK_PAIRS ? "pairs"
           : source == SBT_CLOCK_EPOCH ? "epoch"
                                       : "none";
}

static int analyze_job(const char *path, uint32_t top, const char *json)
{
    struct cli_job *j;
    int ex = cli_job_open("analyze", path, &j);
    if (ex != CLI_OK)
        return ex;
    /* with --json -, JSON owns stdout and the tables go to stderr */
    FILE *js = NULL, *tx = json && !strcmp(json, "-") ? stderr : stdout;
    if (json && !(js = strcmp(json, "-") ? fopen(json, "w") : stdout)) {
        cli_err("analyze", "--json %s: cannot write it", json);
        cli_job_free(j);
        return CLI_USAGE;
    }
    char b[2][32];
    fprintf(tx, "job %s: %u processes\n", *j->p[0].id ? j->p[0].id : path, j->n);
    if (js) {
        fprintf(js, "{\"job\":");
        cli_json_str(js, j->p[0].id);
        fprintf(js, ",\"index\":");
        cli_json_str(js, path);
        fprintf(js, ",\"origin_realtime_ns\":%" PRIu64 ",\"processes\":[", j->origin_real);
    }
    for (uint32_t i = 0; ex == CLI_OK && i < j->n; i++) {
        const struct cli_job_proc *p = &j->p[i];
        fprintf(tx, "\n== %s (pid %s on %s): %s; starts at %s on the job's axis (bound %s)\n",
                p->label, p->pid, p->host, p->trace, cli_fmt_ns(p->start_ns, b[0], 32),
                cli_fmt_ns(p->bound_ns, b[1], 32));
        if (js) {
            fprintf(js, "%s{\"rank\":%" PRId64 ",\"label\":", i ? "," : "", p->rank);
            cli_json_str(js, p->label);
            fprintf(js, ",\"host\":");
            cli_json_str(js, p->host);
            fprintf(js, ",\"pid\":");
            cli_json_str(js, p->pid);
            fprintf(js, ",\"trace\":");
            cli_json_str(js, p->trace);
            fprintf(js, ",\"start_ns\":%.1f,\"bound_ns\":%.1f,\"clock\":\"%s\"", p->start_ns,
                    p->bound_ns, clock_word(p->fit.source));
        }
        sbt_reader *r;
        if ((ex = cli_open_trace("analyze", p->trace, &r)) != CLI_OK)
            break;
        uint64_t lo_seq, hi_seq;
        sched_range_bounds(r, NULL, &lo_seq, &hi_seq);
        sched_sim *sim = NULL;
        struct sched_graph_stats gs;
        int st =
            sched_sim_create(r, NULL, &SCHED_SIM_OPTS(.analysis = 1, .critical_path = 1), &sim);
        struct sched_visitor v = {.node = sched_sim_node, .ctx = sim};
        if (st >= 0)
            st = sched_graph_run(r, hi_seq, NULL, &v, &gs);
        if (st >= 0)
            st = sched_sim_finish(sim);
        if (st < 0) {
            cli_err("analyze", "%s (%s): %s", p->trace, p->label, sched_errmsg());
            ex = cli_exit_for(st);
        } else {
            print_analysis(tx, r, sched_sim_result(sim), &gs, top, 1);
            if (js) {
                fprintf(js, ",\"errors\":%" PRIu64 ",\"warnings\":%" PRIu64 ",\"analysis\":",
                        gs.n_errors, gs.n_warnings);
                sched_sim_write_json(sim, r, js);
                fprintf(js, "}");
            }
        }
        sched_sim_destroy(sim);
        sbt_reader_close(r);
    }
    struct skew sk = {0};
    for (uint32_t i = 0; ex == CLI_OK && i < j->n; i++)
        ex = skew_rank(&sk, j, i);
    if (js && ex == CLI_OK)
        fprintf(js, "],\"skew\":");
    if (ex == CLI_OK)
        skew_print(&sk, j, tx, js);
    if (js) {
        if (ex == CLI_OK)
            fprintf(js, "}\n");
        int bad = ferror(js);
        if (js != stdout)
            bad |= fclose(js) != 0;
        if (bad && ex == CLI_OK) {
            cli_err("analyze", "--json %s: write failed", json);
            ex = CLI_INTERNAL;
        }
        if (ex != CLI_OK && js != stdout)
            remove(json);
    }
    for (uint32_t i = 0; i < sk.n_names; i++)
        free(sk.name_str[i]);
    free(sk.name_str);
    free(sk.name_key);
    free(sk.pt);
    sbt_map_free(&sk.idx);
    sbt_map_free(&sk.names);
    cli_job_free(j);
    return ex;
}

int cli_analyze(int argc, char **argv)
{
    static const struct option lo[] = {{"time-range", required_argument, 0, 't'},
                                       {"ops", required_argument, 0, 'o'},
                                       {"stream", required_argument, 0, 's'},
                                       {"json", required_argument, 0, 'j'},
                                       {"why", required_argument, 0, 'w'},
                                       {"top", required_argument, 0, 'n'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    struct cli_range cr = {0};
    const char *json = NULL, *why_arg = NULL;
    uint64_t top = 20;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 't':
            if (cli_range_time("analyze", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'o':
            if (cli_range_ops("analyze", optarg, &cr))
                return CLI_USAGE;
            break;
        case 's':
            if (cli_range_stream("analyze", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'j':
            json = optarg;
            break;
        case 'w':
            why_arg = optarg;
            break;
        case 'n':
            if (cli_parse_u64(optarg, &top) || top > UINT32_MAX)
                return cli_usage("analyze", "--top '%s': expected a count", optarg);
            break;
        case 'h':
            fputs(analyze_help, stdout);
            return CLI_OK;
        default:
            return cli_usage("analyze", "unknown option");
        }
    }
    if (optind != argc - 1)
        return cli_usage("analyze", "expected exactly one TRACE");
    if (cli_job_is(argv[optind])) {
        if (why_arg || cr.has_time || cr.has_ops || cr.stream)
            return cli_usage("analyze",
                             "%s is a job: --why, --time-range, --ops and --stream "
                             "are for one trace",
                             argv[optind]);
        return analyze_job(argv[optind], (uint32_t)top, json);
    }
    sbt_reader *r;
    int rc = cli_open_trace("analyze", argv[optind], &r);
    if (rc)
        return rc;
    if (why_arg) {
        rc = why(r, why_arg);
        sbt_reader_close(r);
        return rc;
    }
    struct sbt_range rg;
    cli_range_resolve(&cr, r, &rg);
    int has_range = cr.has_time || cr.has_ops || cr.stream;
    uint64_t lo_seq, hi_seq;
    sched_range_bounds(r, has_range ? &rg : NULL, &lo_seq, &hi_seq);
    sched_sim *sim = NULL;
    struct sched_graph_stats gs;
    struct cli_races *races = NULL;
    int st = sched_sim_create(r, has_range ? &rg : NULL,
                              &SCHED_SIM_OPTS(.analysis = 1, .critical_path = 1), &sim);
    struct sched_visitor v = {.node = sched_sim_node, .ctx = sim};
    if (st >= 0)
        st = sched_graph_run(r, hi_seq, NULL, &v, &gs);
    if (st >= 0)
        st = sched_sim_finish(sim);
    /* races the program's own synchronisation allows (the whole trace, whatever the range) */
    races = calloc(1, sizeof *races);
    if (st >= 0 && !races)
        st = SBT_ENOMEM;
    if (st >= 0)
        st = cli_races_collect(r, races);
    if (st < 0) {
        cli_err("analyze", "%s", st == SBT_ENOMEM && !races ? "out of memory" : sched_errmsg());
        rc = cli_exit_for(st);
        goto out;
    }
    /* with --json -, JSON owns stdout and the tables go to stderr */
    FILE *tx = json && !strcmp(json, "-") ? stderr : stdout;
    print_analysis(tx, r, sched_sim_result(sim), &gs, (uint32_t)top, 0);
    fprintf(tx, "\n");
    cli_races_print(tx, races, (uint32_t)top);
    if (json) {
        FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;
        if (!f) {
            cli_err("analyze", "--json %s: cannot write it", json);
            rc = CLI_USAGE;
            goto out;
        }
        fprintf(f, "{\"trace\":\"");
        for (const char *p = argv[optind]; *p; p++)
            fprintf(f, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
        fprintf(f, "\",\"errors\":%" PRIu64 ",\"warnings\":%" PRIu64 ",\"analysis\":", gs.n_errors,
                gs.n_warnings);
        sched_sim_write_json(sim, r, f);
        fprintf(f, ",\"races\":");
        cli_races_json(f, races);
        fprintf(f, "}\n");
        int bad = ferror(f);
        if (f != stdout)
            bad |= fclose(f) != 0;
        if (bad) {
            cli_err("analyze", "--json %s: write failed", json);
            rc = CLI_INTERNAL;
        }
    }
out:
    if (races)
        cli_races_free(races);
    free(races);
    sched_sim_destroy(sim);
    sbt_reader_close(r);
    return rc;
}
