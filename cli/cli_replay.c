/*
 * cli/cli_replay.c — `reprise replay`: a dry run (validate, slice, simulate, report) of a
 * trace or of a range of it, through the scheduler; or `--mode full`, execution on a device
 * through the replay engine (replay/replay.h), with verification, timings and a result trace.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"
#include "replay/replay.h"
#include "scheduler/sched.h"

static const char replay_help[] =
    "usage: reprise replay TRACE --mode dry-run|full [--time-range A:B] [--ops A:B]\n"
    "                            [--stream S] [--json F]\n"
    "                            [--verify none|end|op] [--runs N] [-o result.sbt]\n"
    "                            [--device N] [--dump DIR] [--timing op|none]\n"
    "                            [--allow-incomplete] [--snapshot-every N|T] [--snapshot-at S,...]\n"
    "                            [--snapshots FILE | --no-snapshots]\n"
    "                            [--order accesses|declared] [--perturb KIND:SEED]\n\n"
    "Dry run (no device): builds the dependency graph and validates it (cycles, waits nothing\n"
    "satisfies, use after free, reads of bytes never written, ops on destroyed streams,\n"
    "unsupported ops), computes the backward slice of the range (the earlier ops a range replay\n"
    "must re-execute first) and predicts the range's duration from the recorded ones, streams\n"
    "running concurrently as far as the dependencies allow. An incomplete trace (unmodelled\n"
    "calls that change what the device computes, a capture that stopped recording) is an\n"
    "error finding.\n\n"
    "Full replay (--mode full): executes the trace on a device (Vulkan traces on any Vulkan\n"
    "driver, lavapipe included) in the dependency graph's order, independent queues\n"
    "concurrently. With a range, the range's backward slice (and the object creations before\n"
    "it) runs first, untimed (fast-forward); then the range, timed and verified. An incomplete\n"
    "trace, or one whose dependency graph has errors, is refused (exit 3) naming what it lacks\n"
    "or the first errors, before anything reaches the device.\n\n"
    "Snapshots: a full replay of the whole trace with --snapshot-every or --snapshot-at writes\n"
    "the contents of the live allocations at those points (after draining the device) into a\n"
    "sidecar, TRACE-stem.snap.sbt unless --snapshots names another; chunks that did not change\n"
    "are stored once. The sidecar is kept only when that replay verified (see Verdict): it\n"
    "records the device, driver and verdict that produced its bytes, and a sidecar without\n"
    "them is refused. A range replay (and its dry run) finds that sidecar by itself: it\n"
    "restores the latest snapshot at or before the range, only the bytes the rest of the run\n"
    "reads, and fast-forwards only the part of the slice after it; the result trace records\n"
    "which snapshot it restored and where it came from. The dry run says which it will do and\n"
    "what it costs.\n\n"
    "  --mode M           dry-run (default), or full (execute on a device)\n"
    "  --time-range A:B   ops whose span overlaps [A, B), relative to the trace start\n"
    "                     (times like 5ms, 1.5s; either side may be empty)\n"
    "  --ops A:B          ops with sequence number in [A, B)\n"
    "  --stream S         ops on stream S only\n"
    "  --json F           dry run: write the result as JSON to F ('-' = stdout)\n"
    "  --verify L         full: none; end (default: digests of what the program read back,\n"
    "                     compared with the capture's); op (+ each device op's outputs, read\n"
    "                     right after it ran)\n"
    "  --runs N           full: replay N times (outputs are also compared between runs)\n"
    "  -o FILE            full: write the result trace (per-op replay times, digests, errors;\n"
    "                     same seq numbers as TRACE); run k > 1 goes to FILE-stem.k.sbt\n"
    "  --device N         full: device index as `reprise devices` lists them (default 0)\n"
    "  --dump DIR         full: write the bytes the program read back, and at --verify op each\n"
    "                     op's outputs, to DIR/<op seq>.bin (first run)\n"
    "  --timing T         full: op (default: device timestamps around each op, where the queue\n"
    "                     has them) or none (host times only; lavapipe drains the queue at each\n"
    "                     timestamp, so none is the faster replay there)\n"
    "  --allow-incomplete replay (full) an incomplete trace or one with graph errors anyway;\n"
    "                     the result trace is marked incomplete with the reason. Dry run:\n"
    "                     incompleteness becomes a warning\n"
    "  --snapshot-every X full, no range: a snapshot every X ops (1000, 10k) or every X of\n"
    "                     trace time (50ms, 1s), at the first op boundary where no op waits on\n"
    "                     a later one\n"
    "  --snapshot-at S,.. full, no range: snapshots before these ops (same rule)\n"
    "  --snapshots FILE   the sidecar to write (full replay with snapshots) or to restore from\n"
    "                     (range replay); default TRACE-stem.snap.sbt\n"
    "  --no-snapshots     a range replay ignores the sidecar and runs its whole slice\n"
    "  --order O          full: accesses (default: every pair of ops whose accesses conflict\n"
    "                     is ordered, barriers inserted where the program left them out) or\n"
    "                     declared (only the program's own order: its barriers, events,\n"
    "                     semaphores, fences, stream order; pairs it leaves unordered run as a\n"
    "                     GPU would run them, which is what the dry run's races name; with\n"
    "                     --verify op each op's outputs are read back behind a barrier, which\n"
    "                     orders them again: use end)\n"
    "  --perturb K:S      full, no range: a perturbed replay, reproduced exactly by kind K and\n"
    "                     seed S (S defaults to 1): poison (device memory the program never\n"
    "                     maps starts as a pattern instead of zeros; output words still\n"
    "                     holding it digest as zeros), split (each dispatch's workgroups in a\n"
    "                     seeded order, cut into vkCmdDispatchBase pieces; a shader that reads\n"
    "                     NumWorkgroups is left whole and counted), threads (lavapipe's LP_NUM_THREADS = 1 + S % 4),\n"
    "                     order (a seeded choice among the ops the dependency graph leaves\n"
    "                     unordered), declared (as --order declared: only the program's own\n"
    "                     barriers and syncs, and a seeded order among what they leave\n"
    "                     unordered).\n"
    "                     The result records it (replay.perturb, replay.perturb_what); a\n"
    "                     correct program gives the same outputs as a plain replay\n\n"
    "Verdict (full): verified only with positive evidence, outputs compared (with the\n"
    "capture's digests or between runs) and all equal; a replay that compared nothing (a\n"
    "range without a read-back of a trace captured without --digests, --verify none) is\n"
    "\"not verified\", never a pass.\n\n"
    "Exit codes: 0 replayable (dry run) / replayed and verified, or replayed with --verify none\n"
    "(the verdict line says \"not verified\"); 1 an output differs from the capture's (or\n"
    "between runs), nothing could be compared, or the device or driver failed during the\n"
    "replay (device lost, a failing call, a pipeline it does not compile: the result trace is\n"
    "written up to there); 2 usage; 3 not replayable (incomplete trace, graph errors,\n"
    "unsupported op, corrupt trace, a sidecar that is damaged or belongs to another trace);\n"
    "4 no device or driver to start with, or a device that lacks what an op needs; 5 internal\n"
    "error.\n";

#define SHOW_PER_KIND 5

/* --snapshot-every, --snapshot-at, --snapshots, --no-snapshots */
struct snap_opts {
    uint64_t every_ops, every_ns;
    uint64_t *at;
    uint32_t n_at;
    const char *file;
    int none;
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* "1000" or "10k" ops, or "50ms" / "1s" of trace time. */
static int parse_every(const char *arg, struct snap_opts *so)
{
    uint64_t v;
    if (!cli_parse_u64(arg, &v) && v > 0) {
        so->every_ops = v;
        return 0;
    }
    size_t n = strlen(arg);
    if (n && arg[n - 1] == 's' && !cli_parse_time(arg, &v) && v > 0) {
        so->every_ns = v;
        return 0;
    }
    return cli_usage("replay",
                     "--snapshot-every '%s': expected a count of ops (1000, 10k) or a "
                     "time (50ms, 1s)",
                     arg);
}

static int parse_at(const char *arg, struct snap_opts *so)
{
    char buf[64];
    for (const char *p = arg; *p;) {
        size_t n = strcspn(p, ",");
        uint64_t v;
        if (n == 0 || n >= sizeof buf)
            return cli_usage("replay", "--snapshot-at '%s': expected op numbers like 100,2000",
                             arg);
        memcpy(buf, p, n);
        buf[n] = 0;
        if (cli_parse_u64(buf, &v))
            return cli_usage("replay", "--snapshot-at '%s': '%s' is not an op number", arg, buf);
        uint64_t *a = realloc(so->at, (so->n_at + 1) * sizeof *a);
        if (!a)
            return CLI_INTERNAL;
        so->at = a;
        so->at[so->n_at++] = v;
        p += n + (p[n] == ',');
    }
    qsort(so->at, so->n_at, sizeof *so->at, cmp_u64);
    return 0;
}

/* "restore ..." lines of a range replay's plan (dry run and full). */
static void print_plan(FILE *tx, const struct replay_plan *pl, const char *sidecar)
{
    char b[3][32];
    if (pl->use_snapshot)
        fprintf(tx,
                "restore     snapshot at op %" PRIu64 " (%s): %s into %u allocations, then %" PRIu64
                " ops of the slice after it (%s of uploads) instead of %" PRIu64 "\n",
                pl->snapshot_seq, sidecar, cli_fmt_bytes((double)pl->restore_bytes, b[0], 32),
                pl->restore_allocs, pl->slice_ops,
                cli_fmt_bytes((double)pl->slice_upload_bytes, b[1], 32), pl->full_slice_ops);
    else
        fprintf(tx, "restore     none (%s): the slice runs from the trace start\n", pl->why);
}

struct collected {
    struct sched_finding f;
    char *msg;
};

struct report {
    struct collected *v;
    size_t n, cap;
    int oom;
};

static void on_finding(void *ctx, const struct sched_finding *f)
{
    struct report *rep = ctx;
    if (rep->n == rep->cap) {
        size_t nc = rep->cap ? rep->cap * 2 : 64;
        struct collected *v = realloc(rep->v, nc * sizeof *v);
        if (!v) {
            rep->oom = 1;
            return;
        }
        rep->v = v, rep->cap = nc;
    }
    char *m = strdup(f->msg);
    if (!m) {
        rep->oom = 1;
        return;
    }
    rep->v[rep->n].f = *f;
    rep->v[rep->n].f.msg = m;
    rep->v[rep->n++].msg = m;
}

/* The graph visitor has one ctx: nodes go to the simulation, findings to the report. */
struct both {
    sched_sim *sim;
    struct report *rep;
};

static int both_node(void *ctx, struct sched_node *n)
{
    return sched_sim_node(((struct both *)ctx)->sim, n);
}

static void both_finding(void *ctx, const struct sched_finding *f)
{
    on_finding(((struct both *)ctx)->rep, f);
}

static void print_findings(FILE *tx, const struct report *rep, const struct sched_graph_stats *gs)
{
    uint64_t shown[SCHED_F__COUNT] = {0};
    for (int sev = SCHED_ERROR; sev >= SCHED_NOTE; sev--)
        for (size_t i = 0; i < rep->n; i++) {
            const struct sched_finding *f = &rep->v[i].f;
            if ((int)f->severity != sev || shown[f->kind]++ >= SHOW_PER_KIND)
                continue;
            fprintf(tx, "  %-7s %s\n", sched_severity_name(f->severity), f->msg);
        }
    for (uint32_t k = 0; k < SCHED_F__COUNT; k++)
        if (gs->findings[k] > SHOW_PER_KIND)
            fprintf(tx, "  ... %" PRIu64 " %s findings in all (%s); --json F lists up to 100\n",
                    gs->findings[k], sched_finding_name(k),
                    sched_severity_name(sched_finding_severity(k)));
}

static int write_json(const char *path, const char *trace, const sbt_reader *r,
                      const struct report *rep, const struct sched_graph_stats *gs,
                      const struct sched_slice *sl, const struct replay_plan *pl,
                      const sched_sim *sim, const char *incomplete, int allow,
                      const struct cli_races *races)
{
    int has_range = pl != NULL;
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f) {
        cli_err("replay", "--json %s: cannot write it", path);
        return CLI_USAGE;
    }
    fprintf(f, "{\"trace\":");
    cli_json_str(f, trace);
    uint64_t inc_err = incomplete && !allow, inc_warn = incomplete && allow;
    fprintf(f,
            ",\"mode\":\"dry-run\",\"n_ops\":%" PRIu64 ",\"complete\":%s,\"replayable\":%s,"
            "\"errors\":%" PRIu64 ",\"warnings\":%" PRIu64 ",\"findings_by_kind\":{",
            sbt_reader_info(r)->n_ops, incomplete ? "false" : "true",
            gs->n_errors || inc_err ? "false" : "true", gs->n_errors + inc_err,
            gs->n_warnings + inc_warn + races->st.n_findings);
    int first = !incomplete;
    if (incomplete)
        fprintf(f, "\"incomplete\":1");
    for (uint32_t k = 0; k < SCHED_F__COUNT; k++)
        if (gs->findings[k]) {
            fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", sched_finding_name(k),
                    gs->findings[k]);
            first = 0;
        }
    fprintf(f, "},\"findings\":[");
    if (incomplete) {
        fprintf(f, "{\"kind\":\"incomplete\",\"severity\":\"%s\",\"message\":",
                allow ? "warning" : "error");
        cli_json_str(f, incomplete);
        fprintf(f, "}");
    }
    for (size_t i = 0; i < rep->n; i++) {
        const struct sched_finding *x = &rep->v[i].f;
        fprintf(f, "%s{\"kind\":\"%s\",\"severity\":\"%s\",\"seq\":%" PRIu64,
                i || incomplete ? "," : "", sched_finding_name(x->kind),
                sched_severity_name(x->severity), x->seq);
        if (x->other != SCHED_NONE)
            fprintf(f, ",\"other\":%" PRIu64, x->other);
        fprintf(f, ",\"message\":");
        cli_json_str(f, x->msg);
        fprintf(f, "}");
    }
    fprintf(f,
            "],\"graph\":{\"edges\":%" PRIu64 ",\"max_held\":%" PRIu64
            ",\"peak_intervals\":%" PRIu64 ",\"resources\":%" PRIu64 ",\"edges_by_reason\":{",
            gs->n_edges, gs->max_held, gs->peak_segments, gs->n_resources);
    for (uint32_t k = 1; k < SCHED_DEP__COUNT; k++)
        fprintf(f, "%s\"%s\":%" PRIu64, k > 1 ? "," : "", sched_dep_name(k), gs->edges[k]);
    fprintf(f, "}}");
    if (has_range) {
        fprintf(f,
                ",\"range\":{\"ops\":%" PRIu64 ",\"first_seq\":%" PRId64 ",\"last_seq\":%" PRId64
                "},\"slice\":{\"ops\":%" PRIu64 ",\"upload_bytes\":%" PRIu64
                ",\"uninit_bytes\":%" PRIu64 "},\"before\":{\"ops\":%" PRIu64
                ",\"upload_bytes\":%" PRIu64 "}",
                sl->range_ops,
                sl->range_first == SCHED_NONE ? (int64_t)-1 : (int64_t)sl->range_first,
                sl->range_last == SCHED_NONE ? (int64_t)-1 : (int64_t)sl->range_last, sl->slice_ops,
                sl->slice_upload_bytes, sl->uninit_bytes, sl->before_ops, sl->before_upload_bytes);
        fprintf(f, ",\"plan\":{\"use_snapshot\":%s", pl->use_snapshot ? "true" : "false");
        if (pl->use_snapshot)
            fprintf(f,
                    ",\"snapshot_seq\":%" PRIu64 ",\"restore_bytes\":%" PRIu64
                    ",\"restore_allocs\":%u",
                    pl->snapshot_seq, pl->restore_bytes, pl->restore_allocs);
        else {
            fprintf(f, ",\"why\":");
            cli_json_str(f, pl->why);
        }
        fprintf(f, ",\"snapshots\":%" PRIu64 ",\"ops_before_range\":%" PRIu64 "}", pl->n_snapshots,
                pl->slice_ops);
    }
    fprintf(f, ",\"races\":");
    cli_races_json(f, races);
    fprintf(f, ",\"simulation\":");
    sched_sim_write_json(sim, r, f);
    fprintf(f, "}\n");
    int bad = ferror(f);
    if (f != stdout)
        bad |= fclose(f) != 0;
    if (bad) {
        cli_err("replay", "--json %s: write failed", path);
        return CLI_INTERNAL;
    }
    return CLI_OK;
}

static int dry_run(const char *path, const struct cli_range *cr, const char *json, int allow,
                   const struct snap_opts *so)
{
    sbt_reader *r, *snaps = NULL;
    char *sidecar = NULL;
    struct replay_plan plan;
    int rc = cli_open_trace("replay", path, &r);
    if (rc)
        return rc;
    const struct sbt_info *in = sbt_reader_info(r);
    struct sbt_range rg;
    cli_range_resolve(cr, r, &rg);
    int has_range = cr->has_time || cr->has_ops || cr->stream;
    uint64_t lo, hi;
    sched_range_bounds(r, has_range ? &rg : NULL, &lo, &hi);

    struct report rep = {0};
    struct sched_graph_stats gs = {0};
    struct sched_slice sl = {0};
    struct cli_races *races = calloc(1, sizeof *races); /* large: not on the stack */
    if (!races) {
        sbt_reader_close(r);
        cli_err("replay", "out of memory");
        return CLI_INTERNAL;
    }
    sched_sim *sim = NULL;
    int st = sched_sim_create(r, has_range ? &rg : NULL, NULL, &sim);
    if (st < 0)
        goto fail;
    struct both ctx = {sim, &rep};
    struct sched_visitor v = {.node = both_node, .finding = both_finding, .ctx = &ctx};
    st = sched_graph_run(r, hi, NULL, &v, &gs);
    if (st < 0)
        goto fail;
    if ((st = sched_sim_finish(sim)) < 0)
        goto fail;
    /* races the program's own synchronisation allows: warnings, never errors */
    if ((st = cli_races_collect(r, races)) < 0)
        goto fail;
    /* the slice a range replay runs (kernels' outputs included: replay_plan says so too) */
    if (has_range &&
        (st = sched_slice_compute(r, &rg, &SCHED_SLICE_OPTS(.range_outputs = 1), &sl)) < 0)
        goto fail;
    if (has_range) {
        if ((rc = cli_open_snapshots("replay", path, r, so->file, so->none, &snaps, &sidecar)))
            goto out;
        if ((st = replay_plan(r, &rg, snaps, &plan)) < 0) {
            cli_err("replay", "%s", replay_errmsg());
            rc = cli_replay_exit_for(st);
            goto out;
        }
    }
    if (rep.oom) {
        cli_err("replay", "out of memory collecting findings");
        rc = CLI_INTERNAL;
        goto out;
    }

    const struct sched_sim_result *res = sched_sim_result(sim);
    char b[4][32];
    uint32_t ns = 0, nd = 0;
    sbt_reader_streams(r, &ns);
    sbt_reader_devices(r, &nd);
    FILE *tx = json && !strcmp(json, "-") ? stderr : stdout; /* JSON owns stdout */
    fprintf(tx, "trace       %s: %" PRIu64 " ops, %u streams on %u devices\n", path, in->n_ops, ns,
            nd);
    /* incompleteness is a finding: an error, or a warning when allowed */
    char why[600] = "";
    int incomplete = !in->complete;
    if (incomplete)
        sbt_reader_incomplete_why(r, why, sizeof why);
    uint64_t n_err = gs.n_errors + (uint64_t)(incomplete && !allow);
    fprintf(tx,
            "validation  %" PRIu64 " errors, %" PRIu64 " warnings (ops before %" PRIu64
            " checked)\n",
            n_err, gs.n_warnings + (uint64_t)(incomplete && allow) + races->st.n_findings, hi);
    if (incomplete)
        fprintf(tx, "  %-7s incomplete: %s; a replay of it cannot be trusted%s\n",
                allow ? "warning" : "error", why,
                allow ? " (--allow-incomplete)" : " (--allow-incomplete replays it anyway)");
    print_findings(tx, &rep, &gs);
    cli_races_print(tx, races, 20);
    if (has_range) {
        if (sl.range_first == SCHED_NONE)
            fprintf(tx, "range       empty: no op matches\n");
        else
            fprintf(tx,
                    "range       %" PRIu64 " ops, seq %" PRIu64 "..%" PRIu64 ", captured span %s\n",
                    sl.range_ops, sl.range_first, sl.range_last,
                    cli_fmt_ns((double)res->captured_ns, b[0], 32));
        fprintf(tx,
                "slice       %" PRIu64 " ops, %s of uploads to replay first (everything before "
                "the range: %" PRIu64 " ops, %s)\n",
                sl.slice_ops, cli_fmt_bytes((double)sl.slice_upload_bytes, b[0], 32), sl.before_ops,
                cli_fmt_bytes((double)sl.before_upload_bytes, b[1], 32));
        if (sl.uninit_bytes)
            fprintf(tx, "            the range reads %s that nothing before it wrote\n",
                    cli_fmt_bytes((double)sl.uninit_bytes, b[0], 32));
        print_plan(tx, &plan, sidecar);
    }
    fprintf(tx, "predicted   %s for %" PRIu64 " ops (captured %s)\n",
            cli_fmt_ns((double)res->makespan_ns, b[0], 32), res->n_ops,
            cli_fmt_ns((double)res->captured_ns, b[1], 32));
    fprintf(tx, "result      %s\n", n_err ? "not replayable: see the errors above" : "replayable");
    rc = n_err ? CLI_BADINPUT : CLI_OK;
    if (json) {
        int jr = write_json(json, path, r, &rep, &gs, &sl, has_range ? &plan : NULL, sim,
                            incomplete ? why : NULL, allow, races);
        if (jr)
            rc = jr;
    }
    goto out;
fail:
    cli_err("replay", "%s", sched_errmsg());
    rc = cli_exit_for(st);
out:
    for (size_t i = 0; i < rep.n; i++)
        free(rep.v[i].msg);
    free(rep.v);
    cli_races_free(races);
    free(races);
    sched_slice_free(&sl);
    sched_sim_destroy(sim);
    sbt_reader_close(snaps);
    free(sidecar);
    sbt_reader_close(r);
    return rc;
}

/* ========================================================================================== */
/* --mode full                                                                                */
/* ========================================================================================== */

struct full_opts {
    int verify, allow_incomplete, order;
    uint32_t timing;
    uint64_t runs, device;
    const char *out, *dump;
    struct replay_perturb perturb;
};

static void full_progress(void *ctx, uint64_t done, uint64_t total)
{
    (void)ctx;
    cli_progress("replay", done, total);
}

static int full_run(const char *path, const struct cli_range *cr, const struct full_opts *fo,
                    const struct snap_opts *so)
{
    sbt_reader *r, *snaps = NULL;
    char *sidecar = NULL;
    int rc = cli_open_trace("replay", path, &r);
    if (rc)
        return rc;
    struct sbt_range rg;
    cli_range_resolve(cr, r, &rg);
    int has_range = cr->has_time || cr->has_ops || cr->stream;
    int taking = so->every_ops || so->every_ns || so->n_at;
    struct replay_plan plan = {0};
    if (taking) {
        sidecar = so->file ? strdup(so->file) : replay_snapshots_path(path);
        if (!sidecar) {
            sbt_reader_close(r);
            return CLI_INTERNAL;
        }
    } else if (has_range) {
        if ((rc = cli_open_snapshots("replay", path, r, so->file, so->none, &snaps, &sidecar))) {
            sbt_reader_close(r);
            return rc;
        }
        int pst = replay_plan(r, &rg, snaps, &plan);
        if (pst < 0) {
            cli_err("replay", "%s", replay_errmsg());
            sbt_reader_close(snaps);
            sbt_reader_close(r);
            free(sidecar);
            return cli_replay_exit_for(pst);
        }
    }
    struct replay_result res;
    int st = replay_run(
        r,
        &REPLAY_OPTS(.device = (uint32_t)fo->device, .verify = (uint32_t)fo->verify,
                     .runs = (uint32_t)fo->runs, .range = has_range ? &rg : NULL,
                     .out_path = fo->out, .dump_dir = fo->dump, .source_path = path,
                     .progress = full_progress, .timing = fo->timing,
                     .allow_incomplete = fo->allow_incomplete, .order = (uint32_t)fo->order,
                     .snapshot_out = taking ? sidecar : NULL, .snapshot_every_ops = so->every_ops,
                     .snapshot_every_ns = so->every_ns, .snapshot_at = so->at,
                     .n_snapshot_at = so->n_at, .snapshots = snaps, .perturb = fo->perturb),
        &res);
    cli_progress_end();
    if (st < 0) {
        cli_err("replay", "%s", replay_errmsg());
        rc = cli_replay_exit_for(st);
        goto out;
    }
    char b[4][32];
    const struct sbt_info *in = sbt_reader_info(r);
    printf("replayed    %s: %" PRIu64 " ops on %s (%s backend, device %u), %u run%s\n", path,
           in->n_ops, res.device, res.backend, res.device_index, res.runs,
           res.runs == 1 ? "" : "s");
    if (res.incomplete)
        printf("WARNING     incomplete trace replayed anyway (--allow-incomplete): %s\n",
               res.incomplete_why);
    if (res.n_graph_errors)
        printf("WARNING     %" PRIu64 " dependency graph errors, replayed anyway "
               "(--allow-incomplete): %s\n",
               res.n_graph_errors, res.first_graph_error);
    if (has_range) {
        printf("range       %" PRIu64 " ops, %s uploaded; fast-forward first: %" PRIu64
               " ops, %s uploaded (%" PRIu64 " ops not needed, skipped)\n",
               res.range_ops, cli_fmt_bytes((double)res.range_upload_bytes, b[0], 32),
               res.slice_ops, cli_fmt_bytes((double)res.slice_upload_bytes, b[1], 32),
               res.skipped_ops);
        if (res.restore_seq != UINT64_MAX)
            printf("restore     snapshot at op %" PRIu64 " (%s): %s into %u allocations\n"
                   "            provenance: %s\n",
                   res.restore_seq, sidecar, cli_fmt_bytes((double)res.restore_bytes, b[0], 32),
                   res.restore_allocs, res.restore_from);
        else
            printf("restore     none (%s)\n", plan.why[0] ? plan.why : "no snapshot used");
    }
    if (taking && res.snapshots_dropped[0])
        printf("snapshots   NONE KEPT (%" PRIu64 " taken, %s removed): the replay did not verify "
               "(%s); a range replay or trim must not rest on its bytes\n",
               res.n_snapshots, sidecar, res.snapshots_dropped);
    else if (taking)
        printf("snapshots   %" PRIu64 " in %s: %s read back, %s stored as new blobs, %s\n",
               res.n_snapshots, sidecar, cli_fmt_bytes((double)res.snapshot_read_bytes, b[0], 32),
               cli_fmt_bytes((double)res.snapshot_new_bytes, b[1], 32),
               cli_fmt_ns((double)res.snapshot_ns, b[2], 32));
    for (uint32_t i = 0; i < res.runs; i++) {
        const struct replay_run_stats *s = &res.run[i];
        printf("run %-7u %s wall", i + 1, cli_fmt_ns((double)s->wall_ns, b[0], 32));
        if (has_range)
            printf(" (fast-forward %s, range %s)", cli_fmt_ns((double)s->ff_ns, b[1], 32),
                   cli_fmt_ns((double)s->range_ns, b[2], 32));
        printf(", device busy %s, prepare %s\n", cli_fmt_ns((double)s->device_ns, b[3], 32),
               cli_fmt_ns((double)s->prepare_ns, b[1], 32));
    }
    printf("verify      %s: %" PRIu64 " digests, %" PRIu64 " compared with the capture, %" PRIu64
           " differ",
           replay_verify_name((uint32_t)fo->verify), res.n_digests, res.n_compared, res.n_mismatch);
    if (res.n_mismatch)
        printf(" (first at op %" PRIu64 ")", res.first_mismatch);
    printf("\n");
    if (res.runs > 1) {
        printf("runs        %" PRIu64 " ops compared between runs, %" PRIu64 " differ",
               res.n_run_compared, res.n_run_mismatch);
        if (res.n_run_mismatch)
            printf(" (first at op %" PRIu64 ")", res.first_run_mismatch);
        printf("\n");
    }
    if (res.perturb[0])
        printf("perturbed   %s: %s\n", res.perturb, res.perturb_what);
    if (res.device_failed[0])
        printf("device      FAILED in %s; the ops after it were not run\n", res.device_failed);
    if (res.n_errors)
        printf("errors      %" PRIu64 " (first: %s)\n", res.n_errors, res.first_error_msg);
    if (fo->dump)
        printf("dump        %" PRIu64 " files in %s\n", res.n_dumped, fo->dump);
    if (fo->out)
        printf("result      %s\n", fo->out);
    char why[1200];
    enum replay_verdict v = replay_verdict(&res, (uint32_t)fo->verify, why, sizeof why);
    printf("verdict     %s: %s\n", replay_verdict_name(v), why);
    if (v != REPLAY_VERDICT_VERIFIED && v != REPLAY_VERDICT_NOT_VERIFIED)
        cli_err("replay", "%s", why);
    rc = cli_verdict_exit(v, fo->verify == REPLAY_VERIFY_NONE);
out:
    replay_result_free(&res);
    sbt_reader_close(snaps);
    free(sidecar);
    sbt_reader_close(r);
    return rc;
}

static int replay_cli_dispatch(int argc, char **argv, const char *mode, const char *json,
                               const struct cli_range *cr, const struct full_opts *fo,
                               const struct snap_opts *so, int full_only);

int cli_replay(int argc, char **argv)
{
    static const struct option lo[] = {{"mode", required_argument, 0, 'm'},
                                       {"time-range", required_argument, 0, 't'},
                                       {"ops", required_argument, 0, 'P'},
                                       {"stream", required_argument, 0, 's'},
                                       {"json", required_argument, 0, 'j'},
                                       {"verify", required_argument, 0, 'V'},
                                       {"runs", required_argument, 0, 'R'},
                                       {"device", required_argument, 0, 'D'},
                                       {"dump", required_argument, 0, 'U'},
                                       {"timing", required_argument, 0, 'T'},
                                       {"allow-incomplete", no_argument, 0, 'I'},
                                       {"snapshot-every", required_argument, 0, 'E'},
                                       {"snapshot-at", required_argument, 0, 'A'},
                                       {"snapshots", required_argument, 0, 'S'},
                                       {"no-snapshots", no_argument, 0, 'N'},
                                       {"order", required_argument, 0, 'O'},
                                       {"perturb", required_argument, 0, 'X'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    struct cli_range cr = {0};
    const char *mode = "dry-run", *json = NULL;
    struct full_opts fo = {.verify = REPLAY_VERIFY_END, .runs = 1};
    struct snap_opts so = {0};
    int full_only = 0, rc;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
        switch (c) {
        case 'V':
            if ((fo.verify = replay_verify_parse(optarg)) < 0)
                return cli_usage("replay", "--verify '%s': expected none, end or op%s", optarg,
                                 strcmp(optarg, "submit") ? ""
                                                          : " (submit was removed: it read each "
                                                            "op's outputs right after it ran, "
                                                            "which is what op does)");
            full_only = 1;
            break;
        case 'R':
            if (cli_parse_u64(optarg, &fo.runs) || fo.runs < 1 || fo.runs > 100000)
                return cli_usage("replay", "--runs '%s': expected a count >= 1", optarg);
            full_only = 1;
            break;
        case 'D':
            if (cli_parse_u64(optarg, &fo.device) || fo.device > 1000)
                return cli_usage("replay", "--device '%s': expected a device index", optarg);
            full_only = 1;
            break;
        case 'U':
            fo.dump = optarg;
            full_only = 1;
            break;
        case 'T':
            if (strcmp(optarg, "op") && strcmp(optarg, "none"))
                return cli_usage("replay", "--timing '%s': expected op or none", optarg);
            fo.timing = !strcmp(optarg, "none") ? REPLAY_TIMING_NONE : REPLAY_TIMING_OP;
            full_only = 1;
            break;
        case 'O':
            if (strcmp(optarg, "accesses") && strcmp(optarg, "declared"))
                return cli_usage("replay", "--order '%s': expected accesses or declared", optarg);
            fo.order = !strcmp(optarg, "declared") ? REPLAY_ORDER_DECLARED : REPLAY_ORDER_ACCESSES;
            full_only = 1;
            break;
        case 'm':
            mode = optarg;
            break;
        case 'I':
            fo.allow_incomplete = 1;
            break;
        case 't':
            if (cli_range_time("replay", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'o':
            fo.out = optarg;
            full_only = 1;
            break;
        case 'P':
            if (cli_range_ops("replay", optarg, &cr))
                return CLI_USAGE;
            break;
        case 's':
            if (cli_range_stream("replay", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'j':
            json = optarg;
            break;
        case 'E':
            if ((rc = parse_every(optarg, &so))) {
                free(so.at);
                return rc;
            }
            full_only = 1;
            break;
        case 'A':
            if ((rc = parse_at(optarg, &so))) {
                free(so.at);
                return rc;
            }
            full_only = 1;
            break;
        case 'S':
            so.file = optarg;
            break;
        case 'N':
            so.none = 1;
            break;
        case 'X':
            if (replay_perturb_parse(optarg, &fo.perturb) < 0) {
                free(so.at);
                return cli_usage("replay", "--perturb: %s", replay_errmsg());
            }
            full_only = 1;
            break;
        case 'h':
            free(so.at);
            fputs(replay_help, stdout);
            return CLI_OK;
        default:
            free(so.at);
            return cli_usage("replay", "unknown option");
        }
    }
    rc = replay_cli_dispatch(argc, argv, mode, json, &cr, &fo, &so, full_only);
    free(so.at);
    return rc;
}

static int replay_cli_dispatch(int argc, char **argv, const char *mode, const char *json,
                               const struct cli_range *cr, const struct full_opts *fo,
                               const struct snap_opts *so, int full_only)
{
    int has_range = cr->has_time || cr->has_ops || cr->stream;
    if ((so->every_ops || so->every_ns || so->n_at) && has_range)
        return cli_usage("replay", "--snapshot-every and --snapshot-at take snapshots during a "
                                   "replay of the whole trace: drop the range");
    if ((so->every_ops || so->every_ns || so->n_at) && so->none)
        return cli_usage("replay", "--no-snapshots with --snapshot-every / --snapshot-at");
    if (so->file && so->none)
        return cli_usage("replay", "--snapshots and --no-snapshots together");
    if (optind != argc - 1)
        return cli_usage("replay", "expected exactly one TRACE");
    if (!strcmp(mode, "full")) {
        if (json)
            return cli_usage("replay", "--json is for --mode dry-run");
        return full_run(argv[optind], cr, fo, so);
    }
    if (strcmp(mode, "dry-run"))
        return cli_usage("replay", "--mode '%s': expected dry-run or full", mode);
    if (full_only)
        return cli_usage("replay", "--verify, --runs, -o, --device, --dump, --timing, "
                                   "--snapshot-every, --snapshot-at and --perturb need --mode "
                                   "full");
    return dry_run(argv[optind], cr, json, fo->allow_incomplete, so);
}
