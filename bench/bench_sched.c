/*
 * bench/bench_sched.c — time and memory of the scheduler's passes over one trace.
 *
 *   bench_sched TRACE [WINDOW_PCT [slice]]   ("slice": only the slice pass)
 *
 * Runs, one after the other, each timed on its own (one core):
 *   read      a cursor over every op, nothing else (the format's share of every pass)
 *   graph     graph + validation (no visitor)
 *   dry-run   graph + validation + simulation (what `replay --mode dry-run` does for a trace)
 *   analyze   graph + simulation + analysis + critical path
 *   slice     backward slice of a WINDOW_PCT% (default 1) time window in the middle
 * and prints ops/s per pass and the peak RSS of the process after each (getrusage; for the
 * peak of one pass alone run the CLI under /usr/bin/time -v). Results: bench/RESULTS.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "format/sbt.h"
#include "scheduler/sched.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

static double t_cpu;

/* Wall time t; CPU time since t_cpu was set (the machine may be shared: CPU time is the steadier
 * figure). */
static void line(const char *what, double t, uint64_t n, const char *extra)
{
    double c = cpu() - t_cpu;
    printf("%-8s %7.3f s wall %7.3f s cpu %6.2f Mops/s  peak RSS %5ld MiB  %s\n", what, t, c,
           (double)n / c / 1e6, rss_mb(), extra);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_sched TRACE [WINDOW_PCT [slice]]\n");
        return 2;
    }
    double pct = argc > 2 ? atof(argv[2]) : 1.0;
    int slice_only = argc > 3 && !strcmp(argv[3], "slice");
    sbt_reader *r;
    if (sbt_reader_open(argv[1], NULL, &r) < 0) {
        fprintf(stderr, "bench_sched: %s\n", sbt_errmsg());
        return 1;
    }
    const struct sbt_info *in = sbt_reader_info(r);
    uint64_t n = in->n_ops;
    char buf[256];
    printf("trace %s: %" PRIu64 " ops\n", argv[1], n);

    double t;
    if (slice_only)
        goto slice;
    t = now();
    t_cpu = cpu();
    sbt_cursor *c;
    const struct sbt_op *op;
    uint64_t k = 0;
    if (sbt_cursor_open(r, NULL, &c) < 0)
        return 1;
    while (sbt_cursor_next(c, &op) == 1)
        k++;
    sbt_cursor_close(c);
    line("read", now() - t, k, "");

    struct sched_graph_stats gs;
    t = now();
    t_cpu = cpu();
    if (sched_graph_run(r, SCHED_NONE, NULL, NULL, &gs) < 0)
        goto fail;
    snprintf(buf, sizeof buf,
             "%" PRIu64 " edges, %" PRIu64 " errors, %" PRIu64 " warnings, peak %" PRIu64
             " intervals",
             gs.n_edges, gs.n_errors, gs.n_warnings, gs.peak_segments);
    line("graph", now() - t, n, buf);

    for (int pass = 0; pass < 2; pass++) {
        sched_sim *sim;
        t = now();
        t_cpu = cpu();
        if (sched_sim_create(r, NULL, &SCHED_SIM_OPTS(.analysis = pass, .critical_path = pass),
                             &sim) < 0)
            goto fail;
        struct sched_visitor v = {.node = sched_sim_node, .ctx = sim};
        if (sched_graph_run(r, SCHED_NONE, NULL, &v, NULL) < 0 || sched_sim_finish(sim) < 0)
            goto fail;
        const struct sched_sim_result *res = sched_sim_result(sim);
        snprintf(buf, sizeof buf, "predicted %.3f s, captured %.3f s",
                 (double)res->makespan_ns / 1e9, (double)res->captured_ns / 1e9);
        line(pass ? "analyze" : "dry-run", now() - t, n, buf);
        sched_sim_destroy(sim);
    }

slice:;
    uint64_t span = in->t_max - in->t_min, w = (uint64_t)((double)span * pct / 100.0);
    struct sbt_range rg = {.has_time = 1, .t_begin = in->t_min + span / 2 - w / 2};
    rg.t_end = rg.t_begin + w;
    struct sched_slice sl;
    t = now();
    t_cpu = cpu();
    if (sched_slice_compute(r, &rg, NULL, &sl) < 0)
        goto fail;
    snprintf(buf, sizeof buf,
             "%.1f%% window: %" PRIu64 " ops in range, slice %" PRIu64 " ops / %" PRIu64
             " upload bytes vs before %" PRIu64 " ops / %" PRIu64 " bytes",
             pct, sl.range_ops, sl.slice_ops, sl.slice_upload_bytes, sl.before_ops,
             sl.before_upload_bytes);
    line("slice", now() - t, sl.range_last != SCHED_NONE ? sl.range_last + 1 : n, buf);
    sched_slice_free(&sl);
    sbt_reader_close(r);
    return 0;
fail:
    fprintf(stderr, "bench_sched: %s\n", sched_errmsg());
    sbt_reader_close(r);
    return 1;
}
