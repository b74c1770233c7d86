/*
 * cli/cli_trim.c — `reprise trim`: a self-contained trace of a range (replay/replay.h,
 * replay_trim), small enough for a bug report, that replays on its own to the same outputs and
 * keeps the source's op numbers so that diff and check line up with the original.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"
#include "replay/replay.h"

static const char trim_help[] =
    "usage: reprise trim TRACE (--ops A:B | --time-range A:B) [--stream S] -o SMALL.sbt\n"
    "                    [--snapshots FILE | --no-snapshots] [--no-device] [--device N]\n"
    "                    [--chunk BYTES]\n\n"
    "Writes a trace of the range that replays on its own to the same outputs: the objects the\n"
    "range uses (allocations, buffers, streams, layouts), the memory contents the range reads\n"
    "at its first op as initial contents, and the range's ops, each with its sequence number\n"
    "in TRACE, so that `reprise diff` and `reprise check` line up with the original.\n\n"
    "The initial contents are read on a device after replaying what the range needs: from the\n"
    "latest snapshot at or before the range (the sidecar TRACE-stem.snap.sbt written by\n"
    "`reprise replay --snapshot-every`, or --snapshots FILE) plus the slice after it, or the\n"
    "whole slice. Without a device (or with --no-device), the snapshot's chunks the range\n"
    "reads become the initial contents and the slice after the snapshot stays as ops; without\n"
    "a snapshot either, the slice's ops are kept instead of contents. It says which it did.\n\n"
    "  --ops A:B          ops with sequence number in [A, B)\n"
    "  --time-range A:B   ops whose span overlaps [A, B), relative to the trace start\n"
    "  --stream S         only the ops of stream S in that range\n"
    "  -o FILE            the trimmed trace (required)\n"
    "  --snapshots FILE   the sidecar of snapshots (default TRACE-stem.snap.sbt if present)\n"
    "  --no-snapshots     ignore the sidecar\n"
    "  --no-device        do not replay: use the snapshot, or keep the slice's ops\n"
    "  --device N         device index as `reprise devices` lists them (default 0)\n"
    "  --chunk BYTES      granularity of the stored contents (default 4096)\n\n"
    "Provenance: the trimmed trace records the device, driver and verdict of the replay its\n"
    "contents come from (trim.device, trim.driver, trim.verified; with a snapshot, those the\n"
    "sidecar recorded), and a replay of it records them in its result.\n\n"
    "Exit codes: 0 written, 1 the replay that reads the contents went wrong (an output differs\n"
    "from the capture's, or the device failed): nothing written, 2 usage, 3 bad input\n"
    "(corrupt trace or sidecar, a sidecar of another trace or of unknown provenance, an empty\n"
    "range, an op that failed while replaying what comes before the range), 4 no device and\n"
    "no way around it, 5 internal error.\n";

int cli_trim(int argc, char **argv)
{
    static const struct option lo[] = {
        {"ops", required_argument, 0, 'P'},    {"time-range", required_argument, 0, 't'},
        {"stream", required_argument, 0, 's'}, {"snapshots", required_argument, 0, 'S'},
        {"no-snapshots", no_argument, 0, 'N'}, {"no-device", no_argument, 0, 'X'},
        {"device", required_argument, 0, 'D'}, {"chunk", required_argument, 0, 'C'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    struct cli_range cr = {0};
    const char *out = NULL, *snap_file = NULL;
    int no_snaps = 0, no_device = 0, c;
    uint64_t device = 0, chunk = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
        switch (c) {
        case 'P':
            if (cli_range_ops("trim", optarg, &cr))
                return CLI_USAGE;
            break;
        case 't':
            if (cli_range_time("trim", optarg, &cr))
                return CLI_USAGE;
            break;
        case 's':
            if (cli_range_stream("trim", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'o':
            out = optarg;
            break;
        case 'S':
            snap_file = optarg;
            break;
        case 'N':
            no_snaps = 1;
            break;
        case 'X':
            no_device = 1;
            break;
        case 'D':
            if (cli_parse_u64(optarg, &device) || device > 1000)
                return cli_usage("trim", "--device '%s': expected a device index", optarg);
            break;
        case 'C':
            if (cli_parse_u64(optarg, &chunk) || chunk < 64 || chunk > (64u << 20))
                return cli_usage("trim", "--chunk '%s': expected bytes from 64 to 64M", optarg);
            break;
        case 'h':
            fputs(trim_help, stdout);
            return CLI_OK;
        default:
            return cli_usage("trim", "unknown option");
        }
    }
    if (optind != argc - 1)
        return cli_usage("trim", "expected exactly one TRACE");
    if (!cr.has_ops && !cr.has_time)
        return cli_usage("trim", "give the range: --ops A:B or --time-range A:B");
    if (!out)
        return cli_usage("trim", "-o SMALL.sbt is required");
    if (snap_file && no_snaps)
        return cli_usage("trim", "--snapshots and --no-snapshots together");
    const char *path = argv[optind];
    if (!strcmp(path, out))
        return cli_usage("trim", "-o %s would overwrite the trace it reads", out);

    sbt_reader *r, *snaps = NULL;
    char *sidecar = NULL;
    int rc = cli_open_trace("trim", path, &r);
    if (rc)
        return rc;
    if ((rc = cli_open_snapshots("trim", path, r, snap_file, no_snaps, &snaps, &sidecar))) {
        sbt_reader_close(r);
        return rc;
    }
    struct sbt_range rg;
    cli_range_resolve(&cr, r, &rg);
    struct replay_trim_result res;
    int st = replay_trim(r, &rg, snaps, out,
                         &REPLAY_TRIM_OPTS(.device = (uint32_t)device, .no_device = no_device,
                                           .chunk_bytes = (uint32_t)chunk, .source_path = path),
                         &res);
    if (st < 0) {
        cli_err("trim", "%s", replay_errmsg());
        rc = cli_replay_exit_for(st);
        goto out;
    }
    char b[3][32];
    const struct sbt_info *in = sbt_reader_info(r);
    printf("trimmed     %s ops %" PRIu64 "..%" PRIu64 " (%" PRIu64
           " ops of the range) -> %s: %" PRIu64 " ops, %s (%.1f%% of %s)\n",
           path, res.range_first, res.range_last, res.range_ops, out, res.ops,
           cli_fmt_bytes((double)res.bytes, b[0], 32),
           in->file_bytes ? 100.0 * (double)res.bytes / (double)in->file_bytes : 0.0,
           cli_fmt_bytes((double)in->file_bytes, b[1], 32));
    printf("kept        %" PRIu64 " ops of the range, %" PRIu64
           " that create what it uses, %" PRIu64 " of its slice; seq numbers as in %s\n",
           res.range_ops, res.state_ops, res.slice_ops, path);
    if (res.verified[0])
        printf("provenance  %s\n", res.verified);
    if (res.verified[0] && strncmp(res.verified, "verified", 8))
        printf("WARNING     the initial contents were not verified: no output of the replay "
               "that read them could be compared with the capture\n");
    switch (res.mode) {
    case REPLAY_TRIM_DEVICE:
        printf("contents    read on %s at op %" PRIu64 ": %s in %" PRIu64
               " chunks (what the range reads), after %s\n",
               res.device, res.state_seq, cli_fmt_bytes((double)res.state_bytes, b[0], 32),
               res.state_chunks,
               sidecar ? "restoring a snapshot and replaying the slice after it"
                       : "replaying the slice");
        break;
    case REPLAY_TRIM_SNAPSHOT:
        printf("contents    no device (%s): the snapshot at op %" PRIu64 " of %s, %s in %" PRIu64
               " chunks, plus the slice after it as ops\n",
               res.why, res.state_seq, sidecar, cli_fmt_bytes((double)res.state_bytes, b[0], 32),
               res.state_chunks);
        break;
    default:
        printf("contents    none: no device (%s) and no snapshot, so the slice's %" PRIu64
               " ops were kept instead of initial contents\n",
               res.why, res.slice_ops);
        break;
    }
    rc = CLI_OK;
out:
    sbt_reader_close(snaps);
    free(sidecar);
    sbt_reader_close(r);
    return rc;
}
