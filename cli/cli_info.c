/*
 * cli/cli_info.c — `reprise info`: what a trace holds, how big it is and whether it is complete.
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/cap.h"
#include "cli/cli_int.h"

static const char info_help[] =
    "usage: reprise info TRACE\n"
    "       reprise info JOB\n\n"
    "Summary of a trace: format and size, completeness (did the capture finish, what it could\n"
    "not record), devices, streams, programs and kernels, op counts by kind, blobs and metadata;\n"
    "for a capture of several processes (`reprise capture` writes one trace per process), the\n"
    "manifest beside it: every process's pid, parent, trace and command line.\n\n"
    "JOB is the capture's manifest (TRACE-stem.procs) or a directory of traces (of one job\n"
    "captured on several machines): one line per process in rank order with its rank, world\n"
    "size, host, pid, ops, where it starts on the job's time axis and the error bound of that\n"
    "placement (clock pairs fitted to realtime, FORMAT.md 3.6; for a rank on another host than\n"
    "the first rank, the NCCL collectives both ran where the traces have device times: \"N\n"
    "anchors, moved T\" says how far they moved it from where its realtime clock put it), trace\n"
    "and command line.\n"
    "Exit codes: 0 ok, 3 unreadable or foreign trace.\n";

struct info_ctx {
    const char *man, *pid;
    int n;
};

static void info_proc(void *ctx, const struct cli_proc *p)
{
    struct info_ctx *c = ctx;
    if (!c->n++)
        printf("capture    one trace per process, listed in %s:\n", c->man);
    printf("  pid %-8s parent %-8s %s%s  %.120s\n", p->pid, p->ppid, p->trace,
           c->pid && !strcmp(p->pid, c->pid) ? " (this trace)" : "", p->cmd);
}

/* The manifest of the capture path belongs to (capture/cap.h): STEM.procs, where a trace of a
 * process other than the root is STEM.PID.sbt. Prints its processes; nothing when none. */
static void show_manifest(sbt_reader *r, const char *path)
{
    char root_trace[PATH_MAX + 8], man[PATH_MAX + 16];
    snprintf(root_trace, sizeof root_trace, "%s", path);
    const char *pid = sbt_reader_meta_get(r, "capture.pid");
    const char *root = sbt_reader_meta_get(r, "capture.root_pid");
    size_t n = strlen(root_trace);
    if (n > 4 && !strcmp(root_trace + n - 4, ".sbt"))
        root_trace[n - 4] = 0;
    char *dot = strrchr(root_trace, '.');
    if (pid && root && strcmp(pid, root) && dot && !strcmp(dot + 1, pid))
        *dot = 0; /* STEM.PID: the root's stem */
    strcat(root_trace, ".sbt");
    cli_manifest_path(root_trace, man, sizeof man);
    struct info_ctx c = {man, pid, 0};
    cli_manifest_read(man, info_proc, &c);
}

static const char *stream_kind(uint32_t k)
{
    return k == SBT_STREAM_QUEUE         ? "queue"
           : k == SBT_STREAM_CUDA        ? "cuda-stream"
           : k == SBT_STREAM_HOST_THREAD ? "host-thread"
                                         : "?";
}

static int info_job(const char *path)
{
    struct cli_job *j;
    int ex = cli_job_open("info", path, &j);
    if (ex != CLI_OK)
        return ex;
    char b1[32], b2[32], b3[32];
    printf("job        %s: %u process%s%s\n", *j->p[0].id ? j->p[0].id : "(no job id)", j->n,
           j->n == 1 ? "" : "es", j->n_ids > 1 ? " (of several job ids!)" : "");
    printf("index      %s\n", path);
    char when[64] = "";
    time_t secs = (time_t)(j->origin_real / 1000000000u);
    struct tm tm;
    if (j->origin_real && gmtime_r(&secs, &tm))
        strftime(when, sizeof when, " = %Y-%m-%d %H:%M:%S UTC", &tm);
    printf("time 0     realtime %" PRIu64 " ns%s (the job's first op)%s\n", j->origin_real, when,
           j->unaligned ? "; some traces record no realtime: placed at 0" : "");
    printf("%-8s %-6s %-6s %-12s %-8s %-8s %10s %12s %12s %-22s %s\n", "rank", "world", "local",
           "host", "pid", "parent", "ops", "start", "bound", "clock", "trace  command");
    for (uint32_t i = 0; i < j->n; i++) {
        const struct cli_job_proc *p = &j->p[i];
        char rank[24] = "-", world[24] = "-", local[24] = "-", clk[64];
        if (p->rank >= 0)
            snprintf(rank, sizeof rank, "%" PRId64, p->rank);
        if (p->world >= 0)
            snprintf(world, sizeof world, "%" PRId64, p->world);
        if (p->local_rank >= 0)
            snprintf(local, sizeof local, "%" PRId64, p->local_rank);
        if (p->fit.source == SBT_CLOCK_ANCHORS)
            snprintf(clk, sizeof clk, "%u anchors, moved %s%s", p->n_anchors,
                     p->anchor_shift_ns < 0 ? "-" : "+",
                     cli_fmt_ns(fabs(p->anchor_shift_ns), b3, sizeof b3));
        else if (p->fit.source == SBT_CLOCK_PAIRS)
            snprintf(clk, sizeof clk, "%u pairs, %+.2f ppm", p->fit.n_pairs, (p->fit.b - 1) * 1e6);
        else
            snprintf(clk, sizeof clk, "%s",
                     p->fit.source == SBT_CLOCK_EPOCH ? "epoch only" : "none (at 0)");
        printf("%-8s %-6s %-6s %-12.12s %-8s %-8s %10" PRIu64 " %12s %12s %-22s %s  %.80s\n", rank,
               world, local, p->host, p->pid, p->ppid, p->n_ops,
               cli_fmt_ns(p->start_ns, b1, sizeof b1), cli_fmt_ns(p->bound_ns, b2, sizeof b2), clk,
               p->trace, p->argv);
    }
    cli_job_free(j);
    return CLI_OK;
}

int cli_info(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(info_help, stdout);
        return CLI_OK;
    }
    if (argc != 2 || argv[1][0] == '-')
        return cli_usage("info", "expected exactly one TRACE");
    if (cli_job_is(argv[1]))
        return info_job(argv[1]);
    sbt_reader *r;
    int rc = cli_open_trace("info", argv[1], &r);
    if (rc)
        return rc;
    const struct sbt_info *in = sbt_reader_info(r);
    char b1[32], b2[32], b3[32], b4[32];
    printf("trace      %s\n", argv[1]);
    printf("format     version %u (reads with >= %u), %s, footer index %s\n", in->writer_version,
           in->min_reader_version, cli_fmt_bytes((double)in->file_bytes, b1, sizeof b1),
           in->has_footer ? "present" : "MISSING (rebuilt by scanning)");
    if (in->lost_bytes)
        printf("recovery   %" PRIu64 " bytes from offset %" PRIu64 " unreadable (torn tail)\n",
               in->lost_bytes, in->lost_offset);
    if (!in->complete) {
        char why[2048];
        sbt_reader_incomplete_why(r, why, sizeof why);
        printf("complete   no: %s\n", why);
    } else {
        printf("complete   yes\n");
    }
    show_manifest(r, argv[1]);
    printf("ops        %" PRIu64, in->n_ops);
    if (in->n_ops)
        printf(" (seq %" PRIu64 "..%" PRIu64 ")", in->seq_first, in->seq_end - 1);
    printf(" in %" PRIu64 " chunks", in->n_chunks);
    if (in->n_ops)
        printf(", %.2f bytes/op on disk", (double)in->file_bytes / (double)in->n_ops);
    printf("\n");
    printf("time span  %s\n", cli_fmt_ns((double)(in->t_max - in->t_min), b1, sizeof b1));
    printf("blobs      %" PRIu64 " distinct, %s raw; chunks %s raw\n", in->n_blobs,
           cli_fmt_bytes((double)in->blob_bytes, b2, sizeof b2),
           cli_fmt_bytes((double)in->raw_bytes, b3, sizeof b3));

    uint32_t n;
    const struct sbt_device *dev = sbt_reader_devices(r, &n);
    printf("devices    %u\n", n);
    for (uint32_t i = 0; i < n; i++) {
        printf("  %u  %-28s %-10s vendor 0x%04x device 0x%04x driver %u", dev[i].id,
               sbt_reader_string(r, dev[i].name), sbt_api_name(dev[i].api), dev[i].vendor_id,
               dev[i].device_id, dev[i].driver_version);
        if (dev[i].timestamp_period_fs)
            printf(" tick %.3f ns", (double)dev[i].timestamp_period_fs / 1e6);
        const char *host = sbt_reader_string(r, dev[i].host);
        if (host && *host)
            printf(" host %s", host);
        printf("\n");
    }
    const struct sbt_stream *s = sbt_reader_streams(r, &n);
    printf("streams    %u\n", n);
    for (uint32_t i = 0; i < n; i++)
        printf("  %u  %-28s %-11s device %u handle 0x%" PRIx64 "\n", s[i].id,
               sbt_reader_string(r, s[i].name), stream_kind(s[i].kind), s[i].device, s[i].handle);
    sbt_reader_programs(r, &n);
    printf("programs   %u\n", n);
    sbt_reader_kernels(r, &n);
    printf("kernels    %u\n", n);

    struct sbt_stats *st;
    int e = sbt_stats_compute(r, NULL, &st);
    if (e < 0) {
        cli_err("info", "%s", sbt_errmsg());
        sbt_reader_close(r);
        return cli_exit_for(e);
    }
    printf("op kinds  ");
    for (uint32_t k = 1; k < SBT_OP__COUNT; k++)
        if (st->by_kind[k])
            printf(" %s=%" PRIu64, sbt_op_kind_name(k), st->by_kind[k]);
    printf("\n");
    printf("copies     h2d %s, d2h %s, d2d %s; fills %s\n",
           cli_fmt_bytes((double)st->copy_bytes[SBT_COPY_H2D], b1, sizeof b1),
           cli_fmt_bytes((double)st->copy_bytes[SBT_COPY_D2H], b2, sizeof b2),
           cli_fmt_bytes((double)st->copy_bytes[SBT_COPY_D2D], b3, sizeof b3),
           cli_fmt_bytes((double)st->fill_bytes, b4, sizeof b4));
    sbt_stats_free(st);

    const struct sbt_unsupported *u = sbt_reader_unsupported(r, &n);
    printf("unmodelled %u kinds of call passed through unrecorded\n", n);
    for (uint32_t i = 0; i < n; i++) {
        printf("  %-40s %10" PRIu64, sbt_reader_string(r, u[i].what), u[i].count);
        if (u[i].first_seq != SBT_SEQ_NONE)
            printf("  first at op %" PRIu64, u[i].first_seq);
        printf("%s\n", u[i].flags & SBT_UNMODELLED_AFFECTS ? "  affects replay" : "");
    }
    const struct sbt_meta *m = sbt_reader_meta(r, &n);
    if (n)
        printf("metadata\n");
    uint32_t n_pairs = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *k = sbt_reader_string(r, m[i].key);
        if (!strncmp(k, "clock.sync.", 11) && n_pairs++ >= 2)
            continue; /* one a second: the first two and the last say enough */
        printf("  %-20s %s\n", k, sbt_reader_string(r, m[i].value));
    }
    if (n_pairs > 2)
        printf("  (%u clock pairs in all; reprise info on the job fits them)\n", n_pairs);
    sbt_reader_close(r);
    return CLI_OK;
}
