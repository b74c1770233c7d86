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

#include "cli/cli_int.h"
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
    "writes are may-writes: these are possible races, listed, never a failure.\n";

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
                           const struct sched_graph_stats *gs, uint32_t top)
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
    print_analysis(tx, r, sched_sim_result(sim), &gs, (uint32_t)top);
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
