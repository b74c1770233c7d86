/*
 * cli/cli_export.c — `reprise export`: a trace (or a window of it) as a Perfetto protobuf
 * trace, Chrome JSON, or the Graphviz DOT of its dependency graph.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"
#include "format/sbt_export.h"
#include "scheduler/sched.h"

static const char export_help[] =
    "usage: reprise export TRACE -f perfetto|json|dot [-o OUT] [--time-range A:B] [--ops A:B]\n"
    "                      [--stream S] [--group-by device,stream|thread] [--no-args] [-q]\n"
    "       reprise export JOB -f perfetto|json [-o OUT] [--time-range A:B] [--no-args] [-q]\n\n"
    "Writes TRACE for a viewer:\n"
    "  perfetto  Perfetto protobuf (.pftrace): open it in https://ui.perfetto.dev or query it\n"
    "            with trace_processor. A process per device with a track per stream or queue\n"
    "            (overlapping work spreads over lanes drawn as one track), a host process with\n"
    "            the API calls of each thread, arrows from each call to the GPU work it launched\n"
    "            and from event records to the waits they released, counters of memory\n"
    "            allocated and bytes in flight, and args (seq, geometry, bytes, resources,\n"
    "            digests) on every slice. Times are relative to the trace start.\n"
    "  json      Chrome JSON trace events, for tools that do not read protobuf\n"
    "            (ts and dur in microseconds with three decimals: nanoseconds are kept).\n"
    "  dot       the dependency graph as Graphviz DOT, edges labelled with their reason\n"
    "            (small traces or ranges).\n\n"
    "  -f, --format F       perfetto, json or dot (required)\n"
    "  -o, --output OUT     output file; '-' for stdout. Default: TRACE with its .sbt\n"
    "                       extension replaced by .pftrace, .json or .dot\n"
    "  --time-range A:B     ops whose span overlaps [A, B), relative to the trace start\n"
    "                       (times like 5ms, 1.5s; either side may be empty)\n"
    "  --ops A:B            ops with sequence number in [A, B)\n"
    "  --stream S           ops on stream S only\n"
    "  --group-by G         device,stream (default): a process per device, a track per stream;\n"
    "                       thread: a process per host thread with its API calls and the GPU\n"
    "                       work it launched, stream by stream\n"
    "  --no-args            leave the args out (smaller files)\n"
    "  -q, --quiet          no summary line on stderr\n\n"
    "JOB (the capture's manifest TRACE-stem.procs, or a directory of traces; see reprise info):\n"
    "every process on one timeline, a process per rank (in rank order) with a track per host\n"
    "thread and per stream, times on the job's axis (each trace's clock pairs fitted to\n"
    "realtime, FORMAT.md 3.6; 0 = the job's first op), and a process \"job\" whose \"clock\n"
    "alignment\" track has one instant per rank with its offset, drift, error bound and\n"
    "trace. Traces are exported one after the other: one trace is open at a time, so memory\n"
    "does not grow with the number of ranks. --time-range A:B is a window of the job's time\n"
    "axis (0 = its first op), each rank's ops overlapping it. Default OUT: JOB-stem.pftrace or\n"
    "JOB.pftrace.\n\n"
    "The Perfetto UI struggles with files of a few hundred MB: export prints a note when the\n"
    "output will be that large; export a window with --time-range or --ops then.\n";

#define LARGE_OUTPUT_BYTES (300ull << 20)

static void progress(void *ctx, uint64_t done, uint64_t total)
{
    (void)ctx;
    cli_progress("export", done, total);
}

/* trace.sbt -> trace.pftrace (any other name gets the extension appended) */
static void default_output(const char *in, const char *ext, char *out, size_t cap)
{
    size_t n = strlen(in);
    if (n > 4 && !strcmp(in + n - 4, ".sbt"))
        n -= 4;
    snprintf(out, cap, "%.*s%s", (int)n, in, ext);
}

static int cmp_start(const void *a, const void *b)
{
    const struct cli_job_proc *x = *(const struct cli_job_proc *const *)a;
    const struct cli_job_proc *y = *(const struct cli_job_proc *const *)b;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* The "job" process: an instant per rank, at its start, saying how it was placed. */
static int job_alignment_track(sbt_export_emitter *em, const struct cli_job *j)
{
    uint64_t proc = sbt_export_uuid(SBT_EXPORT_MAX_RUN, 1, 0, 0);
    uint64_t track = sbt_export_uuid(SBT_EXPORT_MAX_RUN, 2, 0, 0);
    char name[160];
    snprintf(name, sizeof name, "job %s", *j->p[0].id ? j->p[0].id : "(no job id)");
    struct sbt_export_track tp = {.uuid = proc,
                                  .kind = SBT_EXPORT_TRACK_PROCESS,
                                  .name = name,
                                  .pid = (int32_t)j->n + 1,
                                  .rank = 0};
    struct sbt_export_track tt = {
        .uuid = track,
        .parent = proc,
        .kind = SBT_EXPORT_TRACK_SLICES,
        .name = "clock alignment",
        .description = "Where each rank's trace was placed on the job's time axis: its clock "
                       "pairs fitted to realtime (least squares), offset, drift and error bound"};
    int st = sbt_export_track(em, &tp);
    if (st >= 0)
        st = sbt_export_track(em, &tt);
    const struct cli_job_proc **by = malloc(j->n * sizeof *by);
    if (!by)
        return st < 0 ? st : -1;
    for (uint32_t i = 0; i < j->n; i++)
        by[i] = &j->p[i];
    qsort(by, j->n, sizeof *by, cmp_start);
    for (uint32_t i = 0; st >= 0 && i < j->n; i++) {
        const struct cli_job_proc *p = by[i];
        const char *src = p->fit.source == SBT_CLOCK_ANCHORS
                              ? "anchors (NCCL collectives shared with the first rank), least "
                                "squares"
                          : p->fit.source == SBT_CLOCK_PAIRS ? "clock pairs, least squares"
                          : p->fit.source == SBT_CLOCK_EPOCH ? "epoch pair only"
                                                             : "no realtime: placed at 0";
        struct sbt_export_arg a[] = {
            {.name = "rank", .type = SBT_EXPORT_ARG_INT, .v.i = p->rank},
            {.name = "trace", .type = SBT_EXPORT_ARG_STR, .v.s = p->trace},
            {.name = "host", .type = SBT_EXPORT_ARG_STR, .v.s = p->host},
            {.name = "pid", .type = SBT_EXPORT_ARG_STR, .v.s = p->pid},
            {.name = "start_ns", .type = SBT_EXPORT_ARG_DOUBLE, .v.d = p->start_ns},
            {.name = "drift_ppm", .type = SBT_EXPORT_ARG_DOUBLE, .v.d = (p->fit.b - 1) * 1e6},
            {.name = "bound_ns", .type = SBT_EXPORT_ARG_DOUBLE, .v.d = p->bound_ns},
            {.name = "clock_pairs", .type = SBT_EXPORT_ARG_UINT, .v.u = p->fit.n_pairs},
            {.name = "source", .type = SBT_EXPORT_ARG_STR, .v.s = src},
            {.name = "origin_realtime_ns", .type = SBT_EXPORT_ARG_UINT, .v.u = j->origin_real},
            {.name = "anchors", .type = SBT_EXPORT_ARG_UINT, .v.u = p->n_anchors},
            {.name = "anchor_shift_ns", .type = SBT_EXPORT_ARG_DOUBLE, .v.d = p->anchor_shift_ns},
        };
        struct sbt_export_event ev = {.name = p->label, .args = a, .n_args = sizeof a / sizeof *a};
        st = sbt_export_instant(em, track, p->start_ns > 0 ? (uint64_t)p->start_ns : 0, &ev);
    }
    free(by);
    return st;
}

/* The window [cr->t0, cr->t1) of the job's time axis in the trace times of process i. */
static void job_window(const struct cli_job *j, uint32_t i, const struct cli_range *cr,
                       struct sbt_range *rg)
{
    const struct cli_job_proc *p = &j->p[i];
    struct sbt_export_opts o = SBT_EXPORT_OPTS();
    cli_job_export_opts(j, i, &o);
    double rate = 1 + o.ts_drift; /* job ns per trace ns */
    double a = ((double)cr->t0 - p->start_ns) / rate;
    double b = cr->t1 == UINT64_MAX ? 1e30 : ((double)cr->t1 - p->start_ns) / rate;
    memset(rg, 0, sizeof *rg);
    rg->has_time = 1;
    rg->t_begin = a <= 0 ? p->t_min : p->t_min + (uint64_t)a;
    rg->t_end = b >= 1e19 ? UINT64_MAX : b <= 0 ? p->t_min : p->t_min + (uint64_t)b;
    if (rg->t_end < rg->t_begin)
        rg->t_end = rg->t_begin;
}

static int export_job(const char *in, const char *out, int format, int no_args, int quiet,
                      const struct cli_range *cr)
{
    struct cli_job *j;
    int ex = cli_job_open("export", in, &j);
    if (ex != CLI_OK)
        return ex;
    if (j->n > SBT_EXPORT_MAX_RUN) {
        cli_err("export", "%s: %u processes; one timeline holds at most %u", in, j->n,
                SBT_EXPORT_MAX_RUN);
        cli_job_free(j);
        return CLI_BADINPUT;
    }
    uint64_t est = 0;
    for (uint32_t i = 0; i < j->n; i++)
        est += j->p[i].n_ops * (format == SBT_EXPORT_JSON ? 560 : 140); /* as export TRACE */
    char b1[32];
    if (est >= LARGE_OUTPUT_BYTES && !cr->has_time)
        fprintf(stderr,
                "reprise: export: note: the output will be about %s (%u processes); the "
                "Perfetto UI struggles with files of a few hundred MB. Export a window of the "
                "job (--time-range 0:100ms), a directory holding the ranks of interest, or query "
                "the file with trace_processor.\n",
                cli_fmt_bytes((double)est, b1, sizeof b1), j->n);
    char outbuf[4096];
    if (!out) {
        size_t n = strlen(in), k = strlen(".procs");
        while (n > 1 && in[n - 1] == '/')
            n--;
        if (n > k && !strcmp(in + n - k, ".procs"))
            n -= k;
        snprintf(outbuf, sizeof outbuf, "%.*s%s", (int)n, in,
                 format == SBT_EXPORT_PERFETTO ? ".pftrace" : ".json");
        out = outbuf;
    }
    int to_stdout = !strcmp(out, "-");
    FILE *f = to_stdout ? stdout : fopen(out, "wb");
    if (!f) {
        cli_err("export", "cannot write %s: %s", out, strerror(errno));
        cli_job_free(j);
        return CLI_BADINPUT;
    }
    sbt_export_emitter *em = NULL;
    int st = sbt_export_emitter_open(f, format, NULL, &em);
    if (st >= 0)
        st = job_alignment_track(em, j);
    struct sbt_export_stats sum = {0};
    ex = CLI_OK;
    for (uint32_t i = 0; st >= 0 && ex == CLI_OK && i < j->n; i++) {
        sbt_reader *r;
        if ((ex = cli_open_trace("export", j->p[i].trace, &r)) != CLI_OK)
            break;
        struct sbt_export_opts eo = SBT_EXPORT_OPTS(.no_args = no_args);
        cli_job_export_opts(j, i, &eo);
        struct sbt_range rg;
        if (cr->has_time) {
            job_window(j, i, cr, &rg);
            eo.range = &rg;
        }
        struct sbt_export_stats s;
        st = sbt_export_trace(em, r, &eo, &s);
        if (st < 0)
            cli_err("export", "%s (%s): %s", j->p[i].trace, j->p[i].label, sbt_errmsg());
        sbt_reader_close(r);
        sum.n_ops += s.n_ops;
        sum.n_slices += s.n_slices;
        sum.n_flows += s.n_flows;
        sum.n_tracks += s.n_tracks;
        if (!quiet)
            cli_progress("export", i + 1, j->n);
    }
    cli_progress_end();
    uint64_t bytes = em ? sbt_export_emitter_bytes(em) : 0;
    int st2 = em ? sbt_export_emitter_close(em) : 0;
    if (st >= 0 && st2 < 0) {
        cli_err("export", "%s", sbt_errmsg());
        st = st2;
    }
    int close_failed = !to_stdout && fclose(f) != 0;
    if (st < 0 || ex != CLI_OK || close_failed) {
        if (close_failed && st >= 0)
            cli_err("export", "write failed while closing the output");
        if (!to_stdout)
            remove(out);
        cli_job_free(j);
        return ex != CLI_OK ? ex : st == SBT_EIO || close_failed ? CLI_BADINPUT : cli_exit_for(st);
    }
    if (!quiet)
        fprintf(stderr,
                "reprise: export: wrote %s: %u processes of job %s, %" PRIu64 " ops, %" PRIu64
                " slices, %" PRIu64 " flows, %" PRIu64 " tracks, %" PRIu64 " bytes\n",
                to_stdout ? "stdout" : out, j->n, *j->p[0].id ? j->p[0].id : "(no id)", sum.n_ops,
                sum.n_slices, sum.n_flows, sum.n_tracks, bytes);
    cli_job_free(j);
    return CLI_OK;
}

int cli_export(int argc, char **argv)
{
    static const struct option lo[] = {{"format", required_argument, 0, 'f'},
                                       {"output", required_argument, 0, 'o'},
                                       {"time-range", required_argument, 0, 'T'},
                                       {"ops", required_argument, 0, 'O'},
                                       {"stream", required_argument, 0, 'S'},
                                       {"group-by", required_argument, 0, 'g'},
                                       {"no-args", no_argument, 0, 'A'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    const char *fmt = NULL, *out = NULL;
    struct cli_range cr = {0};
    struct sbt_export_opts eo = SBT_EXPORT_OPTS(.progress = progress);
    int quiet = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:o:qh", lo, NULL)) != -1) {
        switch (c) {
        case 'f':
            fmt = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'T':
            if (cli_range_time("export", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'O':
            if (cli_range_ops("export", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'S':
            if (cli_range_stream("export", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'g':
            if (!strcmp(optarg, "device,stream") || !strcmp(optarg, "device") ||
                !strcmp(optarg, "stream"))
                eo.group_by = SBT_EXPORT_GROUP_DEVICE;
            else if (!strcmp(optarg, "thread") || !strcmp(optarg, "thread,stream"))
                eo.group_by = SBT_EXPORT_GROUP_THREAD;
            else
                return cli_usage("export", "--group-by '%s': expected device,stream or thread",
                                 optarg);
            break;
        case 'A':
            eo.no_args = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            fputs(export_help, stdout);
            return CLI_OK;
        default:
            return cli_usage("export", "unknown option");
        }
    }
    if (optind + 1 != argc)
        return cli_usage("export", optind >= argc ? "missing TRACE" : "one TRACE expected");
    const char *in = argv[optind];
    if (!fmt)
        return cli_usage("export", "missing -f perfetto|json|dot");
    int format;
    const char *ext;
    if (!strcmp(fmt, "perfetto") || !strcmp(fmt, "pftrace") || !strcmp(fmt, "proto"))
        format = SBT_EXPORT_PERFETTO, ext = ".pftrace";
    else if (!strcmp(fmt, "json") || !strcmp(fmt, "chrome"))
        format = SBT_EXPORT_JSON, ext = ".json";
    else if (!strcmp(fmt, "dot"))
        format = 0, ext = ".dot";
    else
        return cli_usage("export", "-f '%s': expected perfetto, json or dot", fmt);
    if (cli_job_is(in)) {
        if (!format || cr.has_ops || cr.stream || eo.group_by)
            return cli_usage("export",
                             "%s is a job: -f dot, --ops, --stream and --group-by "
                             "thread are for one trace",
                             in);
        return export_job(in, out, format, eo.no_args, quiet, &cr);
    }

    sbt_reader *r;
    int rc = cli_open_trace("export", in, &r);
    if (rc != CLI_OK)
        return rc;
    struct sbt_range range;
    cli_range_resolve(&cr, r, &range);
    int ranged = cr.has_time || cr.has_ops || cr.stream;
    eo.range = ranged ? &range : NULL;

    char outbuf[4096];
    if (!out) {
        default_output(in, ext, outbuf, sizeof outbuf);
        out = outbuf;
    }
    int to_stdout = !strcmp(out, "-");
    char b1[32];
    uint64_t est = format ? sbt_export_estimate_bytes(r, eo.range, format) : 0;
    if (est >= LARGE_OUTPUT_BYTES && format == SBT_EXPORT_PERFETTO)
        fprintf(stderr,
                "reprise: export: note: the output will be about %s; the Perfetto UI struggles "
                "with files of a few hundred MB. Export a window to browse it, e.g. "
                "--time-range 0:100ms or --ops 0:1M, or query the whole file with "
                "trace_processor.\n",
                cli_fmt_bytes((double)est, b1, sizeof b1));
    else if (est >= LARGE_OUTPUT_BYTES)
        fprintf(stderr,
                "reprise: export: note: the output will be about %s; JSON viewers load it "
                "whole into memory. -f perfetto is about 4x smaller, or export a window with "
                "--time-range or --ops.\n",
                cli_fmt_bytes((double)est, b1, sizeof b1));

    FILE *f = to_stdout ? stdout : fopen(out, "wb");
    if (!f) {
        cli_err("export", "cannot write %s: %s", out, strerror(errno));
        sbt_reader_close(r);
        return CLI_BADINPUT;
    }
    struct sbt_export_stats stats;
    int st = format ? sbt_export_file(r, f, format, &eo, &stats)
                    : sched_dot_write(r, eo.range, 0, f); /* 0: the default node limit */
    cli_progress_end();
    int close_failed = !to_stdout && fclose(f) != 0;
    if (st < 0 || close_failed) {
        cli_err("export", "%s",
                st >= 0  ? "write failed while closing the output"
                : format ? sbt_errmsg()
                         : sched_errmsg());
        if (!to_stdout)
            remove(out);
        sbt_reader_close(r);
        return st == SBT_EIO || close_failed ? CLI_BADINPUT : cli_exit_for(st);
    }
    if (!format) {
        if (!quiet && !to_stdout)
            fprintf(stderr,
                    "reprise: export: wrote %s (render it with: dot -Tsvg %s -o graph.svg)\n", out,
                    out);
        sbt_reader_close(r);
        return CLI_OK;
    }
    if (!quiet) {
        long size = 0;
        if (!to_stdout && (f = fopen(out, "rb")) != NULL) {
            if (fseek(f, 0, SEEK_END) == 0)
                size = ftell(f);
            fclose(f);
        }
        if (!to_stdout)
            fprintf(stderr, "reprise: export: wrote %s (%s, %.1f bytes per op)\n", out,
                    cli_fmt_bytes((double)size, b1, sizeof b1),
                    stats.n_ops ? (double)size / (double)stats.n_ops : 0.0);
        fprintf(stderr,
                "reprise: export: %" PRIu64 " ops: %" PRIu64 " slices, %" PRIu64
                " instants, %" PRIu64 " flows, %" PRIu64 " counter samples, %" PRIu64
                " tracks (at most %u lane%s per stream or thread)\n",
                stats.n_ops, stats.n_slices, stats.n_instants, stats.n_flows,
                stats.n_counter_samples, stats.n_tracks, stats.max_lanes,
                stats.max_lanes == 1 ? "" : "s");
        if (!stats.n_ops)
            fprintf(stderr, "reprise: export: note: the range selects no ops; the output is "
                            "empty\n");
        if (stats.n_waits_unlinked)
            fprintf(stderr,
                    "reprise: export: note: %" PRIu64 " waits have no arrow from their event "
                    "record (recorded outside the range or too far back)\n",
                    stats.n_waits_unlinked);
        if (stats.n_frees_unknown)
            fprintf(stderr,
                    "reprise: export: note: %" PRIu64 " frees of memory allocated before the "
                    "range are not counted in \"memory allocated\"\n",
                    stats.n_frees_unknown);
        if (stats.n_late + stats.n_clamped)
            fprintf(stderr,
                    "reprise: export: note: %" PRIu64 " counter changes and %" PRIu64
                    " slices were drawn later than recorded (out-of-order times)\n",
                    stats.n_late, stats.n_clamped);
    }
    sbt_reader_close(r);
    return CLI_OK;
}
