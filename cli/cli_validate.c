/*
 * cli/cli_validate.c — `reprise validate`: integrity check and recovery report.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_int.h"

static const char validate_help[] =
    "usage: reprise validate TRACE\n\n"
    "Reads every chunk of a trace: CRCs, decoding, sequence numbers, time ranges, references to\n"
    "strings, streams, kernels, programs and blobs, and blob hashes. Reports what was recovered\n"
    "from a trace whose writer did not finish (no footer; a torn last chunk).\n"
    "Exit codes: 0 no problems, 3 problems found or the trace cannot be opened.\n";

static void report(void *ctx, int severity, const char *msg)
{
    int *shown = ctx;
    if (*shown < 200)
        printf("%s: %s\n", severity ? "problem" : "note", msg);
    else if (*shown == 200)
        printf("... (further findings not shown)\n");
    ++*shown;
}

int cli_validate(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(validate_help, stdout);
        return CLI_OK;
    }
    if (argc != 2 || argv[1][0] == '-')
        return cli_usage("validate", "expected exactly one TRACE");
    sbt_reader *r;
    int rc = cli_open_trace("validate", argv[1], &r);
    if (rc)
        return rc;
    int shown = 0;
    int bad = sbt_reader_validate(r, report, &shown);
    const struct sbt_info *in = sbt_reader_info(r);
    if (bad < 0) {
        cli_err("validate", "%s", sbt_errmsg());
        sbt_reader_close(r);
        return cli_exit_for(bad);
    }
    printf("%s: %" PRIu64 " chunks, %" PRIu64 " ops, %" PRIu64 " blobs; footer %s; "
           "writer %s; %d problem%s\n",
           argv[1], in->n_chunks, in->n_ops, in->n_blobs, in->has_footer ? "ok" : "missing",
           in->writer_finished ? "finished" : "did not finish", bad, bad == 1 ? "" : "s");
    if (in->lost_bytes)
        printf("recovered everything before offset %" PRIu64 "; lost %" PRIu64 " bytes\n",
               in->lost_offset, in->lost_bytes);
    sbt_reader_close(r);
    return bad ? CLI_BADINPUT : CLI_OK;
}
