/*
 * checker/chk_perfetto.c — the Perfetto diff trace: both runs laid out by sbt_export_trace (run 0
 * "baseline", run 1 "candidate", re-based to the same start), then a "diff" process built from
 * the events the comparison kept (chk_int.h): verdict tracks, counters, the first divergence.
 *
 * Layout rules (../shared/research/perfetto.md 5.2): verdict slices cover the candidate op;
 * overlapping verdicts of one kind spill to lanes (same name, merged by the UI); counters are
 * declared before their first sample and end at 0; a matched pair is linked by a flow from the
 * earlier of its two slices to the later one, and both carry the same correlation id.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

#define T0        1000000ull /* both runs start at 1 ms */
#define DIFF_RUN  2          /* uuid / flow namespace of the diff group (runs are 0 and 1) */
#define DIFF_PID  29999
#define MAX_LANES 32

enum { TK_PROC = 1000, TK_VERDICT = 1001, TK_REF = 1010, TK_DIV = 1011, TK_DELTA = 1012 };

static const char *const verdict_track[] = {
    "same", "slower", "faster", "output mismatch", "missing in candidate", "extra in candidate"};

struct lanes {
    uint64_t end[MAX_LANES];
    uint32_t declared;
};

static int lane_track(sbt_export_emitter *em, struct lanes *L, uint32_t kind, uint32_t which,
                      const char *name, const char *desc, int32_t rank, uint64_t ts, uint64_t dur,
                      uint64_t *uuid)
{
    uint32_t lane = 0;
    while (lane < MAX_LANES && lane < L->declared && L->end[lane] > ts)
        lane++;
    if (lane == MAX_LANES)
        return 0; /* every lane busy: dropped (counted by the caller) */
    *uuid = sbt_export_uuid(DIFF_RUN, kind, which, lane);
    if (lane == L->declared) {
        struct sbt_export_track t = {.uuid = *uuid,
                                     .parent = sbt_export_uuid(DIFF_RUN, TK_PROC, 0, 0),
                                     .kind = SBT_EXPORT_TRACK_SLICES,
                                     .name = name,
                                     .description = desc,
                                     .rank = rank};
        int st = sbt_export_track(em, &t);
        if (st < 0)
            return chk__fail_sbt(st);
        L->declared++;
    }
    L->end[lane] = ts + dur;
    return 1;
}

static int cmp_ts(const void *a, const void *b)
{
    const struct chk_event *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_ref_ts(const void *a, const void *b)
{
    const struct chk_event *x = a, *y = b;
    if (x->ref_ts != y->ref_ts)
        return x->ref_ts < y->ref_ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int linked(const struct chk_event *e)
{
    return e->ref_ts != UINT64_MAX && (e->verdict == CHK_V_SLOWER || e->verdict == CHK_V_FASTER ||
                                       e->verdict == CHK_V_MISMATCH);
}

static uint64_t flow_of(const struct chk_event *e)
{
    return sbt_export_flow_id(DIFF_RUN, 0, e->seq);
}

int chk_perfetto_write(const struct chk_report *rep, sbt_reader *ref, sbt_reader *run, FILE *f,
                       struct sbt_export_stats *stats)
{
    if (!rep || !ref || !run || !f)
        return chk__fail(SBT_EINVAL, "perfetto diff: a report and two traces are required");
    struct chk_priv *P = rep->priv;
    sbt_export_emitter *em = NULL;
    struct chk_event *refs = NULL;
    int st = sbt_export_emitter_open(f, SBT_EXPORT_PERFETTO, NULL, &em);
    if (st < 0)
        return chk__fail_sbt(st);
    struct sbt_export_stats s0 = {0}, s1 = {0};
    const char *cand = rep->n_runs ? rep->run_names[0] : "candidate";
    char l0[200], l1[200];
    snprintf(l0, sizeof l0, "baseline %s", rep->ref_name);
    snprintf(l1, sizeof l1, "candidate %s", cand);
    if ((st = sbt_export_trace(em, ref, &SBT_EXPORT_OPTS(.run = 0, .label = l0, .ts_offset = T0),
                               &s0)) < 0 ||
        (st = sbt_export_trace(em, run, &SBT_EXPORT_OPTS(.run = 1, .label = l1, .ts_offset = T0),
                               &s1)) < 0) {
        st = chk__fail_sbt(st);
        goto done;
    }

    /* the diff process and its fixed tracks, counters first (declared before any sample) */
    uint64_t proc = sbt_export_uuid(DIFF_RUN, TK_PROC, 0, 0);
    uint64_t u_delta = sbt_export_uuid(DIFF_RUN, TK_DELTA, 0, 0);
    uint64_t u_drift = sbt_export_uuid(DIFF_RUN, TK_DELTA, 1, 0);
    uint64_t u_mism = sbt_export_uuid(DIFF_RUN, TK_DELTA, 2, 0);
    uint64_t u_div = sbt_export_uuid(DIFF_RUN, TK_DIV, 0, 0);
    char pname[256];
    snprintf(pname, sizeof pname, "diff: %s vs %s%s", cand, rep->ref_name,
             rep->incomplete ? " [INCOMPLETE TRACE]" : "");
    const struct sbt_export_track fixed[] = {
        {.uuid = proc, .kind = SBT_EXPORT_TRACK_PROCESS, .name = pname, .pid = DIFF_PID},
        {.uuid = u_div,
         .parent = proc,
         .kind = SBT_EXPORT_TRACK_SLICES,
         .name = "divergences",
         .description =
             "the first divergence: earliest op whose inputs matched and outputs did not",
         .rank = 1},
        {.uuid = u_delta,
         .parent = proc,
         .kind = SBT_EXPORT_TRACK_COUNTER,
         .name = "delta duration",
         .description = "candidate - baseline duration of each matched op",
         .rank = 20,
         .unit = SBT_EXPORT_UNIT_NS},
        {.uuid = u_drift,
         .parent = proc,
         .kind = SBT_EXPORT_TRACK_COUNTER,
         .name = "cumulative drift",
         .description = "candidate start - baseline start of each matched op, from the run starts",
         .rank = 21,
         .unit = SBT_EXPORT_UNIT_NS},
        {.uuid = u_mism,
         .parent = proc,
         .kind = SBT_EXPORT_TRACK_COUNTER,
         .name = "output mismatches so far",
         .rank = 22,
         .unit = SBT_EXPORT_UNIT_COUNT},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if ((st = sbt_export_track(em, &fixed[i])) < 0) {
            st = chk__fail_sbt(st);
            goto done;
        }

    qsort(P->ev, P->n_ev, sizeof *P->ev, cmp_ts);

    /* baseline side of each linked pair, in baseline time */
    uint64_t n_refs = 0, dropped = 0;
    for (uint64_t i = 0; i < P->n_ev; i++)
        n_refs += linked(&P->ev[i]);
    refs = chk__calloc(n_refs + 1, sizeof *refs);
    if (!refs) {
        st = chk__fail(SBT_ENOMEM, "out of memory for %" PRIu64 " linked ops", n_refs);
        goto done;
    }
    n_refs = 0;
    for (uint64_t i = 0; i < P->n_ev; i++)
        if (linked(&P->ev[i]))
            refs[n_refs++] = P->ev[i];
    qsort(refs, n_refs, sizeof *refs, cmp_ref_ts);
    struct lanes lref = {0};
    for (uint64_t i = 0; i < n_refs; i++) {
        const struct chk_event *e = &refs[i];
        uint64_t track, id = flow_of(e);
        int ok = lane_track(em, &lref, TK_REF, 0, "baseline (matched)",
                            "the baseline op of each verdict, linked to it by a flow", 10,
                            e->ref_ts + T0, e->ref_dur, &track);
        if (ok < 0) {
            st = ok;
            goto done;
        }
        if (!ok) {
            dropped++;
            continue;
        }
        struct sbt_export_arg args[] = {
            {.name = "seq", .type = SBT_EXPORT_ARG_UINT, .v.u = e->seq}};
        struct sbt_export_event ev = {.name = P->names[e->name],
                                      .category = "diff.baseline",
                                      .args = args,
                                      .n_args = 1,
                                      .correlation_id = id};
        /* the earlier end of the pair starts the arrow (ties: this one, written first) */
        if (e->ref_ts <= e->ts)
            ev.flow_out = &id, ev.n_flow_out = 1;
        else
            ev.flow_in = &id, ev.n_flow_in = 1;
        if ((st = sbt_export_slice(em, track, e->ref_ts + T0, e->ref_dur, &ev)) < 0) {
            st = chk__fail_sbt(st);
            goto done;
        }
    }

    /* verdict slices and counters, in candidate time */
    struct lanes lv[6] = {{{0}, 0}};
    int64_t last_delta = 0;
    uint64_t mism = 0, t_end = T0;
    for (uint64_t i = 0; i < P->n_ev; i++) {
        const struct chk_event *e = &P->ev[i];
        uint64_t ts = e->ts + T0;
        if (ts + e->dur > t_end)
            t_end = ts + e->dur;
        if (e->ref_ts != UINT64_MAX && e->verdict != CHK_V_MISSING) {
            int64_t delta = (int64_t)e->dur - (int64_t)e->ref_dur;
            int64_t drift = (int64_t)e->ts - (int64_t)e->ref_ts;
            if ((st = sbt_export_counter(em, u_delta, ts, delta)) < 0 ||
                (st = sbt_export_counter(em, u_drift, ts, drift)) < 0) {
                st = chk__fail_sbt(st);
                goto done;
            }
            last_delta = delta;
        }
        if (e->verdict == CHK_V_SAME || e->verdict > CHK_V_EXTRA)
            continue;
        if (e->verdict == CHK_V_MISMATCH &&
            (st = sbt_export_counter(em, u_mism, ts, (int64_t)++mism)) < 0) {
            st = chk__fail_sbt(st);
            goto done;
        }
        uint64_t track;
        int ok = lane_track(em, &lv[e->verdict], TK_VERDICT, e->verdict, verdict_track[e->verdict],
                            NULL, 1 + (int32_t)e->verdict, ts, e->dur, &track);
        if (ok < 0) {
            st = ok;
            goto done;
        }
        if (!ok) {
            dropped++;
            continue;
        }
        char h1[33], h2[33];
        struct sbt_export_arg args[8];
        uint32_t n = 0;
        if (e->seq != UINT64_MAX)
            args[n++] =
                (struct sbt_export_arg){.name = "seq", .type = SBT_EXPORT_ARG_UINT, .v.u = e->seq};
        if (e->seq_run != UINT64_MAX)
            args[n++] = (struct sbt_export_arg){
                .name = "seq_candidate", .type = SBT_EXPORT_ARG_UINT, .v.u = e->seq_run};
        if (e->ref_ts != UINT64_MAX) {
            args[n++] = (struct sbt_export_arg){
                .name = "dur_baseline_ns", .type = SBT_EXPORT_ARG_UINT, .v.u = e->ref_dur};
            args[n++] = (struct sbt_export_arg){
                .name = "dur_candidate_ns", .type = SBT_EXPORT_ARG_UINT, .v.u = e->dur};
            args[n++] = (struct sbt_export_arg){.name = "delta_ns",
                                                .type = SBT_EXPORT_ARG_INT,
                                                .v.i = (int64_t)e->dur - (int64_t)e->ref_dur};
        }
        if (e->verdict == CHK_V_MISMATCH) {
            args[n++] = (struct sbt_export_arg){.name = "digest_baseline",
                                                .type = SBT_EXPORT_ARG_STR,
                                                .v.s = sbt_hash_hex(e->d_ref, h1)};
            args[n++] = (struct sbt_export_arg){.name = "digest_candidate",
                                                .type = SBT_EXPORT_ARG_STR,
                                                .v.s = sbt_hash_hex(e->d_run, h2)};
        }
        struct sbt_export_event ev = {
            .name = P->names[e->name], .category = "diff", .args = args, .n_args = n};
        uint64_t id = flow_of(e);
        if (linked(e)) {
            ev.correlation_id = id;
            if (e->ref_ts <= e->ts)
                ev.flow_in = &id, ev.n_flow_in = 1;
            else
                ev.flow_out = &id, ev.n_flow_out = 1;
        }
        if ((st = sbt_export_slice(em, track, ts, e->dur, &ev)) < 0) {
            st = chk__fail_sbt(st);
            goto done;
        }
    }
    if (P->n_ev) {
        if (last_delta && (st = sbt_export_counter(em, u_delta, t_end, 0)) < 0) {
            st = chk__fail_sbt(st);
            goto done;
        }
    }

    /* the gate's verdict and what it rests on, at the start of the divergences track */
    {
        char verdict[64];
        static const char *const gate[] = {"PASS", "FAIL", "NOT VERIFIED"};
        snprintf(verdict, sizeof verdict, "gate: %s%s", gate[chk_report_gate(rep) % 3],
                 rep->incomplete ? " (incomplete trace)" : "");
        struct sbt_export_arg args[] = {
            {.name = "outputs_compared", .type = SBT_EXPORT_ARG_UINT, .v.u = rep->n_verified},
            {.name = "device_ops", .type = SBT_EXPORT_ARG_UINT, .v.u = rep->n_device_ops},
            {.name = "unverified", .type = SBT_EXPORT_ARG_UINT, .v.u = rep->n_unverified},
            {.name = "runs_compared", .type = SBT_EXPORT_ARG_UINT, .v.u = rep->n_compared_runs},
            {.name = "per_run_difference_bound",
             .type = SBT_EXPORT_ARG_DOUBLE,
             .v.d = rep->pass_bound},
            {.name = "trace_complete",
             .type = SBT_EXPORT_ARG_STR,
             .v.s = rep->incomplete ? "no" : "yes"},
            {.name = "incomplete_reason", .type = SBT_EXPORT_ARG_STR, .v.s = rep->incomplete_why},
            {.name = "fail_reason", .type = SBT_EXPORT_ARG_STR, .v.s = rep->fail_reason},
        };
        struct sbt_export_event ev = {.name = verdict,
                                      .category = "diff",
                                      .args = args,
                                      .n_args = sizeof args / sizeof args[0]};
        if ((st = sbt_export_instant(em, u_div, T0, &ev)) < 0) {
            st = chk__fail_sbt(st);
            goto done;
        }
    }

    /* the first divergence */
    if (rep->has_first) {
        const struct chk_finding *x = &rep->first;
        uint64_t ts = T0;
        for (uint64_t i = 0; i < P->n_ev; i++)
            if (P->ev[i].seq == x->seq) {
                ts = P->ev[i].ts + T0;
                break;
            }
        char h1[33], h2[33];
        struct sbt_export_arg args[] = {
            {.name = "seq", .type = SBT_EXPORT_ARG_UINT, .v.u = x->seq},
            {.name = "class", .type = SBT_EXPORT_ARG_STR, .v.s = chk_class_name(x->cls)},
            {.name = "op", .type = SBT_EXPORT_ARG_STR, .v.s = x->name},
            {.name = "kind", .type = SBT_EXPORT_ARG_STR, .v.s = sbt_op_kind_name(x->op_kind)},
            {.name = "stream", .type = SBT_EXPORT_ARG_UINT, .v.u = x->stream},
            {.name = "detail", .type = SBT_EXPORT_ARG_STR, .v.s = x->note},
            {.name = "digest_expected",
             .type = SBT_EXPORT_ARG_STR,
             .v.s = x->has_ref ? sbt_hash_hex(x->ref_digest, h1) : ""},
            {.name = "digest_got",
             .type = SBT_EXPORT_ARG_STR,
             .v.s = x->has_ref ? sbt_hash_hex(x->got_digest, h2) : ""},
            {.name = "root_causes", .type = SBT_EXPORT_ARG_UINT, .v.u = rep->n_roots},
            /* a perturbed finding: the run's kind:seed, what it changed, the static finding
             * it confirms ("" for none) */
            {.name = "perturb", .type = SBT_EXPORT_ARG_STR, .v.s = x->perturb},
            {.name = "perturb_what", .type = SBT_EXPORT_ARG_STR, .v.s = x->perturb_what},
            {.name = "confirms", .type = SBT_EXPORT_ARG_STR, .v.s = x->confirms},
        };
        char name[160];
        snprintf(name, sizeof name, "first divergence: op %" PRIu64 " %s", x->seq, x->name);
        struct sbt_export_event ev = {
            .name = name, .category = "diff", .args = args, .n_args = sizeof args / sizeof args[0]};
        if ((st = sbt_export_instant(em, u_div, ts, &ev)) < 0) {
            st = chk__fail_sbt(st);
            goto done;
        }
    }
    if (stats) {
        *stats = s0;
        stats->n_ops += s1.n_ops;
        stats->n_slices += s1.n_slices;
        stats->n_tracks += s1.n_tracks;
        stats->n_flows += s1.n_flows;
        stats->n_clamped += dropped;
    }
    st = 0;
done:
    free(refs);
    {
        int cs = sbt_export_emitter_close(em);
        if (!st && cs < 0)
            st = chk__fail_sbt(cs);
    }
    return st;
}
