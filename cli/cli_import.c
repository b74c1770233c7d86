/*
 * cli/cli_import.c — `reprise import`: convert a TraceSmith .sbt file into a reprise trace.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>

#include "cli/cli_int.h"

static const char import_help[] =
    "usage: reprise import TRACESMITH.sbt -o TRACE\n\n"
    "Converts a TraceSmith SBT file (format 0.1; same .sbt extension, different layout) into\n"
    "a reprise trace: kernels (launch and completion joined by correlation id, with geometry),\n"
    "copies, memsets, syncs, events, allocations and markers with their timings. TraceSmith\n"
    "stores no data, resource accesses or thread ids, so the result supports info, view,\n"
    "analysis and export but not full replay.\n"
    "Exit codes: 0 ok, 2 usage, 3 the input is not a readable TraceSmith file.\n";

int cli_import(int argc, char **argv)
{
    static const struct option lo[] = {
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        if (c == 'o')
            out = optarg;
        else if (c == 'h')
            return fputs(import_help, stdout), CLI_OK;
        else
            return cli_usage("import", "unknown option");
    }
    if (optind != argc - 1 || !out)
        return cli_usage("import", "expected TRACESMITH.sbt and -o TRACE");
    uint64_t n;
    struct sbt_writer_opts wo = SBT_WRITER_OPTS(.threads = 1);
    int st = sbt_import_tracesmith(argv[optind], out, &wo, &n);
    if (st < 0) {
        cli_err("import", "%s", sbt_errmsg());
        return st == SBT_EINVAL ? CLI_BADINPUT : cli_exit_for(st);
    }
    printf("imported %" PRIu64 " ops from %s into %s\n", n, argv[optind], out);
    return CLI_OK;
}
