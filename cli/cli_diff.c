/*
 * cli/cli_diff.c — `reprise diff A B`: two captures or replays aligned op by op (robust to
 * inserted and removed ops; the rule is in checker/chk.h), with output and timing differences,
 * reports and a Perfetto diff trace. Exit 0 when they agree, 1 when they differ or nothing could be
 * compared (not verified), 3 bad input.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker/chk.h"
#include "cli/cli_int.h"

static const char diff_help[] =
    "usage: reprise diff A B [--perfetto F] [--json F] [--junit F] [options]\n"
    "       reprise diff JOB_A JOB_B [options]\n\n"
    "Aligns the ops of B with those of A (the reference) and reports output mismatches\n"
    "(digests), ops missing from B or extra in B, replay errors, and timing differences.\n"
    "Exit 0 when they agree, 1 when they differ, nothing could be compared (not verified), or\n"
    "either side's replay had an error or a device that failed (replay.device_failed), 2\n"
    "usage, 3 bad input, 5 internal error.\n\n"
    "Alignment: per stream (by stream id), a shortest edit script (Myers' O(ND) diff) over op\n"
    "keys: (kind, direction, program and entry point, geometry, bytes), names compared by\n"
    "content. Matching ops at the heads are taken at once; where the streams differ, the edit\n"
    "script of a window of W ops of each side is computed and its first half kept, so every\n"
    "decision sees at least W/2 ops of context. An inserted op, a removed op or a duplicated\n"
    "launch costs one finding, never a shift of everything after it. Memory: O(streams x W)\n"
    "plus the script's (edit distance)^2, at most 16 MiB.\n\n"
    "  --perfetto F          both runs on one timeline plus a diff group (verdict tracks,\n"
    "                        delta and drift counters, the first divergence, linked pairs)\n"
    "  --json F, --junit F   reports ('-' = stdout, the summary then on stderr)\n"
    "  --window W            alignment window per stream (default 256, 2..4096)\n"
    "  --timing-threshold P% relative change marked slower/faster (default 10%; 'off')\n"
    "  --confidence C        of the bounds in the reports (default 0.95)\n"
    "  --ops A:B             ops of A with seq in [A, B), and of B likewise\n"
    "  --max-findings N      findings and unverified ops listed (default 1000)\n"
    "  -q, --quiet           no summary\n\n"
    "Outputs: the report says how many device ops had their digests compared on both sides out\n"
    "of how many; the others are listed as unverified. Where no device op could be compared\n"
    "(neither side, or only one, has digests: capture with --digests, replay with --verify op)\n"
    "the diff is NOT VERIFIED and exits 1: agreement needs evidence. An error recorded at an op\n"
    "on either side is a replay-error finding. An incomplete trace is compared and every report\n"
    "says so.\n\n"
    "Timing: per kernel group (program, entry point, geometry) the median of A's launches\n"
    "against B's. With one run a side nothing can be tested (runs, not launches, are the\n"
    "samples): the effects are shown, never failed on; `reprise check --baseline` gates them.\n\n"
    "Jobs (each a capture's manifest TRACE-stem.procs or a directory of traces; see reprise\n"
    "info): processes are paired by rank (those without one by their order, pid order) and each\n"
    "pair is diffed as above; a rank on one side only is a difference. Exit: the highest of\n"
    "the pairs'; the summary names every rank that differs. --json/--junit/--perfetto F give\n"
    "rank K F-stem.rank-K.ext.\n";

/* One pair of traces: the report, its outputs, the exit code. */
static int diff_pair(const char *pa, const char *pb, const struct cli_range *cr, struct chk_opts o,
                     int quiet, const char *json, const char *junit, const char *pf)
{
    sbt_reader *a = NULL, *b = NULL;
    struct chk_report *rep = NULL;
    int rc = cli_open_trace("diff", pa, &a);
    if (rc == CLI_OK)
        rc = cli_open_trace("diff", pb, &b);
    if (rc != CLI_OK)
        goto done;
    struct sbt_range range;
    cli_range_resolve(cr, a, &range);
    o.range = cr->has_ops ? &range : NULL;
    o.ref_name = pa;
    o.run_names = &pb;
    o.collect_events = pf != NULL;
    int st = chk_diff(a, b, &o, &rep);
    if (st < 0) {
        cli_err("diff", "%s", chk_errmsg());
        rc = st == SBT_ENOMEM ? CLI_INTERNAL : CLI_BADINPUT;
        goto done;
    }
    if (!quiet) /* with --json - (or --junit -) the report owns stdout: the text goes to stderr */
        chk_report_text(rep, cli_report_stdout(json, junit) ? stderr : stdout, 10);
    if ((rc = cli_check_outputs("diff", rep, json, junit, pf, a, b)) != CLI_OK)
        goto done;
    rc = rep->failed ? CLI_FAIL : CLI_OK;
done:
    chk_report_free(rep);
    sbt_reader_close(a);
    sbt_reader_close(b);
    return rc;
}

/* The process of b paired with a's process i: the same rank, or without ranks the same
 * position among the processes without one. NULL when b has none. */
static const struct cli_job_proc *pair_of(const struct cli_job *a, uint32_t i,
                                          const struct cli_job *b)
{
    const struct cli_job_proc *p = &a->p[i];
    if (p->rank >= 0) {
        for (uint32_t k = 0; k < b->n; k++)
            if (b->p[k].rank == p->rank)
                return &b->p[k];
        return NULL;
    }
    uint32_t pos = 0, k;
    for (k = 0; k < i; k++)
        pos += a->p[k].rank < 0;
    for (k = 0; k < b->n; k++)
        if (b->p[k].rank < 0 && !pos--)
            return &b->p[k];
    return NULL;
}

static int diff_jobs(const char *pa, const char *pb, const struct cli_range *cr,
                     const struct chk_opts *o, int quiet, const char *const outs[3])
{
    struct cli_job *a = NULL, *b = NULL;
    int rc = cli_job_open("diff", pa, &a);
    if (rc == CLI_OK)
        rc = cli_job_open("diff", pb, &b);
    if (rc != CLI_OK || a->dup_ranks || b->dup_ranks) {
        if (rc == CLI_OK)
            cli_err("diff", "%s has two traces of one rank: processes cannot be paired",
                    a->dup_ranks ? pa : pb);
        cli_job_free(a);
        cli_job_free(b);
        return rc != CLI_OK ? rc : CLI_BADINPUT;
    }
    int worst = CLI_OK;
    uint32_t n_diff = 0, n_pairs = 0;
    char **bad = calloc((size_t)a->n + b->n, sizeof *bad);
    for (uint32_t i = 0; i < a->n; i++) {
        const struct cli_job_proc *p = &a->p[i], *q = pair_of(a, i, b);
        int code;
        if (!q) {
            printf("== %s: %s: only in %s\n", p->label, p->trace, pa);
            code = CLI_FAIL;
        } else {
            printf("== %s: %s vs %s\n", p->label, p->trace, q->trace);
            char *po[3] = {0};
            for (int k = 0; k < 3; k++)
                po[k] = outs[k] ? cli_job_out_path(outs[k], 0, p) : NULL;
            code = diff_pair(p->trace, q->trace, cr, *o, quiet, po[0], po[1], po[2]);
            for (int k = 0; k < 3; k++)
                free(po[k]);
            n_pairs++;
        }
        if (code != CLI_OK) {
            n_diff++;
            if (bad)
                bad[i] = strdup(p->label);
        }
        if (code > worst)
            worst = code;
    }
    for (uint32_t k = 0; k < b->n; k++) { /* processes of b that a lacks */
        int found = 0;
        for (uint32_t i = 0; i < a->n && !found; i++)
            found = pair_of(a, i, b) == &b->p[k];
        if (!found) {
            printf("== %s: %s: only in %s\n", b->p[k].label, b->p[k].trace, pb);
            n_diff++;
            if (worst < CLI_FAIL)
                worst = CLI_FAIL;
            if (bad)
                bad[a->n + k] = strdup(b->p[k].label);
        }
    }
    printf("jobs %s vs %s: %s: %u pairs of processes by rank, %u differ or are unpaired\n", pa, pb,
           worst == CLI_OK ? "AGREE" : "DIFFER", n_pairs, n_diff);
    for (uint32_t k = 0; bad && k < a->n + b->n; k++)
        if (bad[k])
            printf("  %s\n", bad[k]);
    for (uint32_t k = 0; bad && k < a->n + b->n; k++)
        free(bad[k]);
    free(bad);
    cli_job_free(a);
    cli_job_free(b);
    return worst;
}

int cli_diff(int argc, char **argv)
{
    static const struct option lo[] = {{"perfetto", required_argument, 0, 'p'},
                                       {"json", required_argument, 0, 'j'},
                                       {"junit", required_argument, 0, 'J'},
                                       {"window", required_argument, 0, 'w'},
                                       {"timing-threshold", required_argument, 0, 'P'},
                                       {"confidence", required_argument, 0, 'C'},
                                       {"ops", required_argument, 0, 'O'},
                                       {"max-findings", required_argument, 0, 'M'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    const char *pf = NULL, *json = NULL, *junit = NULL;
    struct chk_opts o = CHK_OPTS();
    struct cli_range cr = {0};
    uint64_t v;
    int quiet = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
        switch (c) {
        case 'p':
            pf = optarg;
            break;
        case 'j':
            json = optarg;
            break;
        case 'J':
            junit = optarg;
            break;
        case 'w':
            if (cli_parse_u64(optarg, &v) || v < 2 || v > 4096)
                return cli_usage("diff", "--window '%s': expected 2..4096", optarg);
            o.window = (uint32_t)v;
            break;
        case 'P':
            if (cli_parse_threshold("diff", optarg, &o.timing_threshold))
                return CLI_USAGE;
            break;
        case 'C':
            if (cli_parse_confidence("diff", optarg, &o.confidence))
                return CLI_USAGE;
            break;
        case 'O':
            if (cli_range_ops("diff", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'M':
            if (cli_parse_u64(optarg, &v) || v > 10000000)
                return cli_usage("diff", "--max-findings '%s': expected 0..10M", optarg);
            o.max_findings = (uint32_t)v;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            fputs(diff_help, stdout);
            return CLI_OK;
        default:
            return cli_usage("diff", "unknown option");
        }
    }
    if (optind != argc - 2)
        return cli_usage("diff", "expected two traces A B");
    const char *pa = argv[optind], *pb = argv[optind + 1];
    int ja = cli_job_is(pa), jb = cli_job_is(pb);
    if (ja != jb)
        return cli_usage("diff", "%s is a job and %s is not: diff two traces or two jobs",
                         ja ? pa : pb, ja ? pb : pa);
    if (ja) {
        const char *outs[3] = {json, junit, pf};
        for (int k = 0; k < 2; k++)
            if (outs[k] && !strcmp(outs[k], "-"))
                return cli_usage("diff", "jobs: reports go to one file per rank, not '-'");
        return diff_jobs(pa, pb, &cr, &o, quiet, outs);
    }
    return diff_pair(pa, pb, &cr, o, quiet, json, junit, pf);
}
