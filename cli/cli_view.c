/*
 * cli/cli_view.c — `reprise view`: ops of a range, one per line, or a kernel table (--stats).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_int.h"

static const char view_help[] =
    "usage: reprise view TRACE [--stats] [--time-range A:B] [--ops A:B] [--stream S]\n"
    "                          [--limit N]\n\n"
    "Lists ops (seq, start relative to the trace start, duration, kind, stream, name and\n"
    "details), or with --stats a kernel table: name, count, total, mean, min, max, geometry.\n"
    "Durations are device times where the trace has them, host times otherwise.\n\n"
    "  --stats            kernel table and op counts instead of the op list\n"
    "  --time-range A:B   ops whose span overlaps [A, B) (times like 5ms, 1.5s; either side\n"
    "                     may be empty), relative to the trace start\n"
    "  --ops A:B          ops with sequence number in [A, B)\n"
    "  --stream S         ops on stream S only (ids as `reprise info` lists them)\n"
    "  --limit N          list at most N ops (default 50; 0 = all)\n";

static void print_op(const sbt_reader *r, const struct sbt_op *op, uint64_t t0)
{
    char b1[32], b2[32], hex[33];
    uint64_t b, e;
    sbt_op_span(op, &b, &e);
    printf("%10" PRIu64 " %12s %10s %-12s s%-3u %s", op->seq,
           cli_fmt_ns((double)(b - t0), b1, sizeof b1),
           cli_fmt_ns((double)sbt_op_duration(op), b2, sizeof b2), sbt_op_kind_name(op->kind),
           op->stream, sbt_reader_string(r, op->name) ? sbt_reader_string(r, op->name) : "?");
    if (op->flags & SBT_OPF_GEOM)
        printf(" grid %ux%ux%u block %ux%ux%u", op->grid[0], op->grid[1], op->grid[2], op->block[0],
               op->block[1], op->block[2]);
    if (op->flags & SBT_OPF_BYTES)
        printf(" %s", cli_fmt_bytes((double)op->bytes, b1, sizeof b1));
    if (op->flags & SBT_OPF_RESOURCE)
        printf(" res %" PRIu64, op->resource);
    if (op->flags & SBT_OPF_OBJ)
        printf(" obj %" PRIu64 " value %" PRIu64, op->obj, op->value);
    for (uint32_t i = 0; i < op->n_access; i++)
        printf(" %s[r%" PRIu64 " +%" PRIu64 " %" PRIu64 "]",
               op->access[i].mode == SBT_ACCESS_READ    ? "R"
               : op->access[i].mode == SBT_ACCESS_WRITE ? "W"
                                                        : "RW",
               op->access[i].resource, op->access[i].offset, op->access[i].len);
    if (op->flags & SBT_OPF_DIGEST)
        printf(" digest %.16s", sbt_hash_hex(op->digest, hex));
    if (op->flags & SBT_OPF_ERROR)
        printf(" ERROR: %s", sbt_reader_string(r, op->error));
    if (op->flags & SBT_OPF_UNSUPPORTED)
        printf(" (unsupported)");
    printf("\n");
}

static int print_stats(sbt_reader *r, const struct sbt_range *rg)
{
    struct sbt_stats *s;
    int st = sbt_stats_compute(r, rg, &s);
    if (st < 0) {
        cli_err("view", "%s", sbt_errmsg());
        return cli_exit_for(st);
    }
    char b[5][32];
    printf("%" PRIu64 " ops over %s:", s->n_ops,
           cli_fmt_ns((double)(s->t_max - s->t_min), b[0], 32));
    for (uint32_t k = 1; k < SBT_OP__COUNT; k++)
        if (s->by_kind[k])
            printf(" %s=%" PRIu64, sbt_op_kind_name(k), s->by_kind[k]);
    printf("\n\n%-60s %8s %11s %11s %11s %11s  %s\n", "kernel", "count", "total", "mean", "min",
           "max", "geometry (grid / block)");
    for (uint32_t i = 0; i < s->n_kernels; i++) {
        const struct sbt_kstat *k = &s->kernels[i];
        const char *name = sbt_reader_string(r, k->name);
        char label[400], shortname[61];
        snprintf(label, sizeof label, "%s", name ? name : "?");
        /* kernels that share a name (Vulkan entry points are nearly all "main") are told
         * apart by their program */
        const struct sbt_kernel *kr = k->kernel ? sbt_reader_kernel(r, k->kernel) : NULL;
        const struct sbt_program *pr = kr ? sbt_reader_program(r, kr->program) : NULL;
        for (uint32_t j = 0; pr && j < s->n_kernels; j++)
            if (j != i && s->kernels[j].name == k->name) {
                snprintf(label, sizeof label, "%s [%s]", name ? name : "?",
                         sbt_reader_string(r, pr->name));
                break;
            }
        name = label;
        size_t nl = strlen(name);
        memcpy(shortname, name, nl < 60 ? nl + 1 : 60);
        shortname[60] = 0;
        if (nl > 60)
            memcpy(shortname + 57, "...", 4);
        printf("%-60s %8" PRIu64 " %11s %11s %11s %11s  %ux%ux%u / %ux%ux%u%s\n", shortname,
               k->count, cli_fmt_ns((double)k->total_ns, b[0], 32),
               cli_fmt_ns((double)k->total_ns / (double)k->count, b[1], 32),
               cli_fmt_ns((double)k->min_ns, b[2], 32), cli_fmt_ns((double)k->max_ns, b[3], 32),
               k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2],
               k->geom_varies ? " (varies)" : "");
    }
    sbt_stats_free(s);
    return CLI_OK;
}

int cli_view(int argc, char **argv)
{
    static const struct option lo[] = {{"stats", no_argument, 0, 'S'},
                                       {"time-range", required_argument, 0, 't'},
                                       {"ops", required_argument, 0, 'o'},
                                       {"stream", required_argument, 0, 's'},
                                       {"limit", required_argument, 0, 'l'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    struct cli_range cr = {0};
    int stats = 0, c;
    uint64_t limit = 50;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'S':
            stats = 1;
            break;
        case 't':
            if (cli_range_time("view", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'o':
            if (cli_range_ops("view", optarg, &cr))
                return CLI_USAGE;
            break;
        case 's':
            if (cli_range_stream("view", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'l':
            if (cli_parse_u64(optarg, &limit))
                return cli_usage("view", "--limit '%s': expected a count", optarg);
            break;
        case 'h':
            fputs(view_help, stdout);
            return CLI_OK;
        default:
            return cli_usage("view", "unknown option");
        }
    }
    if (optind != argc - 1)
        return cli_usage("view", "expected exactly one TRACE");
    sbt_reader *r;
    if (cli_job_is(argv[optind]))
        return cli_usage("view",
                         "%s is a job (a manifest or a directory): view lists one trace's ops; "
                         "reprise info %s lists its traces",
                         argv[optind], argv[optind]);
    int rc = cli_open_trace("view", argv[optind], &r);
    if (rc)
        return rc;
    struct sbt_range rg;
    cli_range_resolve(&cr, r, &rg);
    if (stats) {
        rc = print_stats(r, &rg);
        sbt_reader_close(r);
        return rc;
    }
    sbt_cursor *cur;
    int st = sbt_cursor_open(r, &rg, &cur);
    const struct sbt_op *op;
    uint64_t n = 0, t0 = sbt_reader_info(r)->t_min;
    if (!st) {
        printf("%10s %12s %10s %-12s %-4s %s\n", "seq", "start", "duration", "kind", "strm",
               "name / details");
        while ((limit == 0 || n < limit) && (st = sbt_cursor_next(cur, &op)) == 1) {
            print_op(r, op, t0);
            n++;
        }
        if (st == 1 && sbt_cursor_next(cur, &op) == 1)
            printf("... (more ops; --limit N to see more, --limit 0 for all)\n");
        sbt_cursor_close(cur);
    }
    sbt_reader_close(r);
    if (st < 0) {
        cli_err("view", "%s", sbt_errmsg());
        return cli_exit_for(st);
    }
    return CLI_OK;
}
