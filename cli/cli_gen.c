/*
 * cli/cli_gen.c — `reprise gen`: synthetic traces for tests and benchmarks.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_int.h"

static const char gen_help[] =
    "usage: reprise gen -o TRACE [--ops N] [--seed S] [--devices D] [--streams S]\n"
    "                   [--threads T] [--digests] [--zstd-level L | --no-compress]\n"
    "                   [--chunk-ops N]\n\n"
    "Writes a deterministic synthetic trace: kernels with launch geometry, copies in every\n"
    "direction, fills, allocations and frees, events recorded on one stream and waited on\n"
    "another, stream and device syncs, markers, and resource accesses with real read/write\n"
    "dependencies. The same options give the same bytes. Memory does not grow with --ops.\n\n"
    "  -o, --output TRACE   file to write (required)\n"
    "  --ops N              number of ops (default 10000; k/M/G suffixes: 10M)\n"
    "  --seed S             random seed (default 1)\n"
    "  --devices D          devices (default 2)\n"
    "  --streams S          streams per device (default 4)\n"
    "  --threads T          host threads (default 2)\n"
    "  --digests            give every write an output digest\n"
    "  --zstd-level L       chunk compression level (default 3)\n"
    "  --no-compress        store chunks uncompressed\n"
    "  --chunk-ops N        ops per chunk (default 8192)\n";

static void progress(uint64_t done, uint64_t total)
{
    cli_progress("gen", done, total);
}

int cli_gen(int argc, char **argv)
{
    static const struct option lo[] = {
        {"output", required_argument, 0, 'o'},  {"ops", required_argument, 0, 'n'},
        {"seed", required_argument, 0, 's'},    {"devices", required_argument, 0, 'd'},
        {"streams", required_argument, 0, 'S'}, {"threads", required_argument, 0, 't'},
        {"digests", no_argument, 0, 'D'},       {"zstd-level", required_argument, 0, 'z'},
        {"no-compress", no_argument, 0, 'Z'},   {"chunk-ops", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *out = NULL;
    struct sbt_gen_opts go = SBT_GEN_OPTS(.n_ops = 10000, .seed = 1);
    struct sbt_writer_opts wo = SBT_WRITER_OPTS(.threads = 1);
    uint64_t v;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'n':
            if (cli_parse_u64(optarg, &go.n_ops) || go.n_ops == 0)
                return cli_usage("gen", "--ops '%s': expected a positive count", optarg);
            break;
        case 's':
            if (cli_parse_u64(optarg, &go.seed))
                return cli_usage("gen", "--seed '%s': expected a number", optarg);
            break;
        case 'd':
        case 'S':
        case 't':
            if (cli_parse_u64(optarg, &v) || v == 0 || v > (c == 't' ? 256u : 64u))
                return cli_usage("gen", "--%s '%s': expected 1..%u",
                                 c == 'd'   ? "devices"
                                 : c == 'S' ? "streams"
                                            : "threads",
                                 optarg, c == 't' ? 256u : 64u);
            *(c == 'd'   ? &go.n_devices
              : c == 'S' ? &go.streams_per_device
                         : &go.n_threads) = (uint32_t)v;
            break;
        case 'D':
            go.digests = 1;
            break;
        case 'z':
            if (cli_parse_u64(optarg, &v) || v < 1 || v > 22)
                return cli_usage("gen", "--zstd-level '%s': expected 1..22", optarg);
            wo.zstd_level = (int)v;
            break;
        case 'Z':
            wo.zstd_level = -1;
            break;
        case 'c':
            if (cli_parse_u64(optarg, &v) || v == 0 || v > 1000000)
                return cli_usage("gen", "--chunk-ops '%s': expected 1..1000000", optarg);
            wo.chunk_ops = (uint32_t)v;
            break;
        case 'h':
            fputs(gen_help, stdout);
            return CLI_OK;
        default:
            return cli_usage("gen", "unknown option");
        }
    }
    if (!out)
        return cli_usage("gen", "-o TRACE is required");
    if (optind < argc)
        return cli_usage("gen", "unexpected argument '%s'", argv[optind]);
    int st = sbt_gen_write(out, &go, &wo, progress);
    cli_progress_end();
    if (st < 0) {
        cli_err("gen", "%s", sbt_errmsg());
        return st == SBT_EIO ? CLI_BADINPUT : cli_exit_for(st);
    }
    return CLI_OK;
}
