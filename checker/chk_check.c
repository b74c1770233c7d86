/*
 * checker/chk_check.c — `check`: the capture and N replay results read in lockstep by seq (one
 * cursor each, so memory does not grow with the trace), every op classified, every device op
 * counted as compared or listed as unverified, timings gathered per group and run; the
 * baseline results read once each before; then the timing tests (chk_timing.c) and the
 * first-divergence pass (chk_roots.c) over the ops that mismatched.
 *
 * chk_check() is a list of its steps, each a function below: the arguments checked, the
 * report allocated (it reads the options it keeps: names, tolerance, gate settings) and every
 * other option read once into struct chk_check_ctx (check_opts); what the report says about
 * its inputs (report_inputs: the expectations' device, completeness, the timing regime); the
 * walk opened (walk_open: the range, the baseline, the cursors); the capture walked op by op
 * (walk, and check_op for each: presence, then its outputs and expectations in
 * chk_check_outputs.c, then coverage, timing, the Perfetto event); the ops the runs hold
 * beyond the capture (walk_beyond); the verdict (verdict).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker/chk_int.h"
#include "scheduler/sched.h"

struct chk_runcur {
    sbt_cursor *c;
    const struct sbt_op *op; /* current op, NULL at the end */
};

static int rc_next(struct chk_runcur *rc)
{
    int st = sbt_cursor_next(rc->c, &rc->op);
    if (st < 0)
        return chk__fail_sbt(st);
    if (st == 0)
        rc->op = NULL;
    return 0;
}

const char *chk__check_op_name(struct chk_check_ctx *c, const struct sbt_op *op)
{
    return c->name[0] ? c->name : chk__op_name(c->cap, op, c->name, sizeof c->name);
}

static const char *base_name(const struct chk_check_ctx *c, uint32_t i, char *buf, size_t cap)
{
    if (c->base_names && c->base_names[i])
        return c->base_names[i];
    snprintf(buf, cap, "baseline %u", i + 1);
    return buf;
}

/* ========================================================================================== */
/* Options                                                                                    */
/* ========================================================================================== */

/* Which runs are perturbed (replay.perturb), the class of their divergences and what they
 * changed, into c->pcls and the report. */
static int perturbed_runs(struct chk_check_ctx *c)
{
    struct chk_report *rep = c->rep;
    rep->run_perturb = chk__calloc(c->n_runs + 1, sizeof *rep->run_perturb);
    rep->run_perturb_what = chk__calloc(c->n_runs + 1, sizeof *rep->run_perturb_what);
    if (!rep->run_perturb || !rep->run_perturb_what)
        return chk__fail(SBT_ENOMEM, "out of memory for the report");
    for (uint32_t i = 0; i < c->n_runs; i++) {
        const char *p = sbt_reader_meta_get(c->runs[i], "replay.perturb");
        const char *k = sbt_reader_meta_get(c->runs[i], "replay.perturb_class");
        const char *w = sbt_reader_meta_get(c->runs[i], "replay.perturb_what");
        c->pcls[i] = -1;
        if (p && *p) {
            uint32_t cls = CHK__NCLASS;
            for (uint32_t j = CHK_RACE; k && j <= CHK_UNINIT_READ; j++)
                if (!strcmp(k, chk_class_name(j)))
                    cls = j;
            if (cls == CHK__NCLASS)
                return chk__fail(SBT_ECORRUPT,
                                 "check: %s: a perturbed run (%s) whose replay.perturb_class "
                                 "'%s' is no perturbed finding class (race, order-dependence, "
                                 "uninitialised-read)",
                                 rep->run_names[i], p, k ? k : "");
            c->pcls[i] = (int32_t)cls;
            c->n_pert++;
        }
        if (!(rep->run_perturb[i] = chk__strdup(p ? p : "")) ||
            !(rep->run_perturb_what[i] = chk__strdup(w ? w : "")))
            return chk__fail(SBT_ENOMEM, "out of memory for the report");
    }
    rep->n_perturbed = c->n_pert;
    return 0;
}

/* Checks the arguments, allocates the report (which reads the options it keeps) and reads
 * every other option into c. */
/* ---- static races (opts.static_races) --------------------------------------------------- */

struct race_keep {
    struct chk_report *rep;
    uint32_t cap;
    int oom;
};

static void race_keep(void *ctx, const struct sched_race *f)
{
    struct race_keep *k = ctx;
    struct chk_report *rep = k->rep;
    if (k->oom || rep->n_races_listed >= k->cap)
        return;
    if (!(rep->n_races_listed & (rep->n_races_listed + 1))) { /* 0, 1, 3, 7, ...: grow */
        uint32_t n = rep->n_races_listed ? 2 * (rep->n_races_listed + 1) : 4;
        struct chk_race_note *v = realloc(rep->races, n * sizeof *v);
        if (!v) {
            k->oom = 1;
            return;
        }
        rep->races = v;
    }
    struct chk_race_note *r = &rep->races[rep->n_races_listed++];
    *r = (struct chk_race_note){f->first, f->second, f->resource, f->lo, f->hi, f->missing, 0, ""};
    snprintf(r->msg, sizeof r->msg, "%s", f->msg ? f->msg : "");
}

/* The static finding a perturbed finding on op f->seq confirms: the first listed race with
 * that op on either side. */
static int confirm_static(void *ctx, const struct chk_finding *f, char *out, size_t cap)
{
    struct chk_report *rep = ctx;
    for (uint32_t i = 0; i < rep->n_races_listed; i++) {
        struct chk_race_note *r = &rep->races[i];
        if (r->first != f->seq && r->second != f->seq)
            continue;
        if (!r->confirmed) {
            r->confirmed = 1;
            rep->n_races_confirmed++;
        }
        snprintf(out, cap,
                 "static race %u: ops %" PRIu64 " and %" PRIu64 ", resource %" PRIu64 " [%" PRIu64
                 ", %" PRIu64 "), missing %s",
                 i + 1, r->first, r->second, r->resource, r->lo, r->hi,
                 sched_race_missing_name(r->missing));
        return 1;
    }
    return 0;
}

/* The scheduler's race analysis over the capture: counts and the first max_findings into the
 * report; a perturbed finding on one of their ops then confirms it (unless opts.confirm). */
static int static_races(struct chk_check_ctx *c)
{
    struct chk_report *rep = c->rep;
    struct race_keep k = {rep, c->max_f, 0};
    struct sched_race_stats st = {0};
    int rc = sched_races_run(c->cap, &SCHED_RACE_OPTS(), race_keep, &k, &st);
    if (rc < 0)
        return chk__fail(rc, "check: race analysis: %s", sched_errmsg());
    if (k.oom)
        return chk__fail(SBT_ENOMEM, "check: out of memory listing the static races");
    rep->races_run = 1;
    rep->races_declared = st.declared;
    snprintf(rep->races_why_not, sizeof rep->races_why_not, "%s", st.why_not ? st.why_not : "");
    rep->n_races = st.n_findings;
    rep->n_races_exec = st.n_exec;
    rep->n_races_memory = st.n_memory;
    if (!c->confirm) {
        c->confirm = confirm_static;
        c->confirm_ctx = rep;
    }
    return 0;
}

static int check_opts(struct chk_check_ctx *c, const struct chk_opts *o)
{
    if (!c->cap || (c->n_runs && !c->runs) || (c->n_base && !c->base))
        return chk__fail(SBT_EINVAL, "check: a capture and the result traces are required");
    if (c->n_runs > CHK_MAX_RUNS)
        return chk__fail(SBT_ELIMIT, "check: %u result traces > %u", c->n_runs, CHK_MAX_RUNS);
    uint32_t tref = CHK_OPT(o, timing_ref, (uint32_t)CHK_TREF_AUTO);
    if (tref == CHK_TREF_AUTO)
        tref = c->n_base ? CHK_TREF_BASELINE : CHK_TREF_NONE;
    if (tref > CHK_TREF_BASELINE)
        return chk__fail(SBT_EINVAL, "check: timing reference %u unknown", tref);
    if (tref == CHK_TREF_BASELINE && !c->n_base)
        return chk__fail(SBT_EINVAL,
                         "check: the timing reference is a baseline, and none is given");
    if (tref != CHK_TREF_BASELINE && c->n_base)
        return chk__fail(SBT_EINVAL,
                         "check: %u baseline results given, but the timing reference "
                         "is %s",
                         c->n_base, tref == CHK_TREF_CAPTURE ? "the capture" : "none");
    int st = chk__report_alloc(&c->rep, o, CHK_MODE_CHECK, c->n_runs);
    if (st)
        return st;
    c->tref = tref;
    c->range = CHK_OPT(o, range, (const struct sbt_range *)NULL);
    c->max_f = CHK_OPT(o, max_findings, 1000u);
    c->def_elem = CHK_OPT(o, elem_type, 0u);
    c->expect = CHK_OPT(o, expect, (const chk_expect *)NULL);
    c->upd = CHK_OPT(o, expect_update, (chk_expect *)NULL);
    c->ref_dump = CHK_OPT(o, ref_dump, (const char *)NULL);
    c->run_dumps = CHK_OPT(o, run_dumps, (const char *const *)NULL);
    c->base_names = CHK_OPT(o, base_names, (const char *const *)NULL);
    c->collect = CHK_OPT(o, collect_events, 0);
    c->allow_regime = CHK_OPT(o, allow_regime_change, 0);
    c->progress = CHK_OPT(o, progress, NULL);
    c->pctx = CHK_OPT(o, progress_ctx, (void *)NULL);
    c->thr = c->rep->threshold;
    c->confirm = CHK_OPT(o, confirm, NULL);
    c->confirm_ctx = CHK_OPT(o, confirm_ctx, (void *)NULL);
    if (CHK_OPT(o, static_races, 0) && (st = static_races(c)) < 0)
        return st;
    if ((st = perturbed_runs(c)))
        return st;
    c->rep->timing_ref = tref;
    c->rep->n_ref_runs = tref == CHK_TREF_BASELINE ? c->n_base : tref == CHK_TREF_CAPTURE ? 1 : 0;
    return 0;
}

/* ========================================================================================== */
/* The report's inputs: device, completeness, timing regime                                   */
/* ========================================================================================== */

/* Median share of their wall time the results' threads waited for a CPU; NAN if none says. */
static double cpu_wait_share(sbt_reader *const *r, uint32_t n)
{
    double v[1024];
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && k < 1024; i++) {
        const char *w = sbt_reader_meta_get(r[i], "replay.cpu_wait_ns");
        const char *t = sbt_reader_meta_get(r[i], "replay.wall_ns");
        double wv = w ? strtod(w, NULL) : 0, tv = t ? strtod(t, NULL) : 0;
        if (w && tv > 0)
            v[k++] = wv / tv;
    }
    if (!k)
        return NAN;
    struct chk_summary s;
    return chk_summarize(v, k, 0.95, &s) == 0 ? s.median : NAN;
}

/* The regimes of the runs and the baseline must be one (the first run's, else the first
 * baseline result's); a difference fails or, when allowed, is noted. */
static int check_regimes(struct chk_check_ctx *c)
{
    struct chk_report *rep = c->rep;
    sbt_reader *first = c->n_runs ? c->runs[0] : c->base[0];
    const char *first_name = c->n_runs       ? rep->run_names[0]
                             : c->base_names ? c->base_names[0]
                                             : "baseline 1";
    chk_regime(first, rep->regime, sizeof rep->regime);
    size_t pos = 0;
    for (uint32_t i = 0; i < c->n_runs + c->n_base; i++) {
        sbt_reader *r = i < c->n_runs ? c->runs[i] : c->base[i - c->n_runs];
        char why[300], nb[32];
        if (r == first || (i < c->n_runs && c->pcls[i] >= 0) ||
            chk_regime_same(first, r, why, sizeof why))
            continue; /* a perturbed run's timings are not compared */
        const char *name =
            i < c->n_runs ? rep->run_names[i] : base_name(c, i - c->n_runs, nb, sizeof nb);
        if (!c->allow_regime)
            return chk__fail(
                SBT_EINVAL,
                "timing regimes differ: %s vs %s: %s. Timings compare only within one regime "
                "(verify level, timing mode, device, driver, its settings): make the baseline "
                "the way the runs are made (reprise check TRACE --runs N --keep DIR), or "
                "--allow-regime-change",
                first_name, name, why);
        if (pos + 1 < sizeof rep->regime_note) {
            int n = snprintf(rep->regime_note + pos, sizeof rep->regime_note - pos, "%s%s: %s",
                             pos ? "; " : "", name, why);
            pos = n > 0 ? pos + (size_t)n : pos;
        }
    }
    return 0;
}

/* The device a trace ran on: a replay result's replay.device, else (a capture, or a result
 * written by something else) its device 1; NULL if it names none. The device table of a
 * replay result is the capture's, copied: it says where the capture ran, not the replay. */
static const char *ran_on(const sbt_reader *r, int is_result)
{
    const char *v = is_result ? sbt_reader_meta_get(r, "replay.device") : NULL;
    if (v && *v)
        return v;
    const struct sbt_device *d = sbt_reader_device(r, 1);
    const char *dn = d ? sbt_reader_string(r, d->name) : NULL;
    return dn && *dn ? dn : NULL;
}

/* The device whose expectations apply: the one the runs ran on (the capture's when there are
 * no runs). Expectations that have no section for it (nor "*"), or runs on several devices,
 * leave the check without its reference: c->no_ref says why (an update of expectations from
 * runs on several devices is refused: it would file one device's outputs under another). */
static int expect_device(struct chk_check_ctx *c)
{
    struct chk_report *rep = c->rep;
    const char *dn = ran_on(c->n_runs ? c->runs[0] : c->cap, c->n_runs != 0);
    if (!(rep->device = chk__strdup(dn ? dn : "*")))
        return chk__fail(SBT_ENOMEM, "out of memory");
    if (!c->expect && !c->upd)
        return 0;
    for (uint32_t i = 1; i < c->n_runs; i++) {
        const char *di = ran_on(c->runs[i], 1);
        if (!strcmp(di ? di : "*", rep->device))
            continue;
        if (c->upd)
            return chk__fail(SBT_EINVAL,
                             "expectations are kept per device, and %s ran on '%s', %s on '%s': "
                             "update them from runs on one device",
                             rep->run_names[0], rep->device, rep->run_names[i], di ? di : "*");
        snprintf(c->no_ref, sizeof c->no_ref,
                 "the runs ran on several devices (%s on '%s', %s on '%s'), and expectations "
                 "are kept per device",
                 rep->run_names[0], rep->device, rep->run_names[i], di ? di : "*");
        return 0;
    }
    if (c->expect && !c->upd)
        chk_expect_section(c->expect, rep->device, NULL, c->no_ref, sizeof c->no_ref);
    return 0;
}

/* What the report says about its inputs: the device whose expectations apply, the completeness
 * of every trace read, the runs' timing regime (one for the runs and the baseline, when the
 * baseline is the reference of a timing gate) and how busy the machine was. */
static int report_inputs(struct chk_check_ctx *c)
{
    struct chk_report *rep = c->rep;
    int st = expect_device(c);
    if (st)
        return st;
    chk__note_complete(rep, c->cap, rep->ref_name);
    for (uint32_t i = 0; i < c->n_runs; i++)
        chk__note_complete(rep, c->runs[i], rep->run_names[i]);
    for (uint32_t i = 0; i < c->n_base; i++) {
        char nb[32];
        chk__note_complete(rep, c->base[i], base_name(c, i, nb, sizeof nb));
    }
    rep->cpu_wait = cpu_wait_share(c->runs, c->n_runs);
    rep->ref_cpu_wait = cpu_wait_share(c->base, c->n_base);
    if (c->n_runs)
        chk_regime(c->runs[0], rep->regime, sizeof rep->regime);
    if (c->tref == CHK_TREF_BASELINE && c->thr >= 0)
        return check_regimes(c);
    return 0;
}

/* ========================================================================================== */
/* Opening the walk: range, baseline, cursors                                                 */
/* ========================================================================================== */

/* Reads one reference run (a baseline result) into the groups' reference reservoirs. */
static int read_reference(struct chk_timing *tm, sbt_reader *r, const struct sbt_range *rr)
{
    sbt_cursor *c;
    int st = sbt_cursor_open(r, rr, &c);
    if (st < 0)
        return chk__fail_sbt(st);
    const struct sbt_op *op;
    char gb[160];
    while ((st = sbt_cursor_next(c, &op)) == 1) {
        uint64_t ns;
        const char *g;
        struct chk_tgroup *tg;
        if (!chk__op_dur(op, &ns) || !(g = chk_group_name(r, op, gb, sizeof gb)))
            continue;
        if ((st = chk__timing_group(tm, g, &tg)) ||
            (st = chk__timing_add(tm, tg, tm->n_runs, op, ns)))
            break;
    }
    sbt_cursor_close(c);
    if (st < 0)
        return st == SBT_ENOMEM || st == SBT_ELIMIT ? st : chk__fail_sbt(st);
    return chk__timing_ref_done(tm);
}

/* The reference seqs [lo, hi) the range selects, the state of the walk, the baseline read into
 * the timing groups, a cursor on the capture and one on each run. */
static int walk_open(struct chk_check_ctx *c)
{
    const struct sbt_info *ci = c->ci = sbt_reader_info(c->cap);
    int st;
    c->lo = ci->seq_first, c->hi = ci->seq_end;
    if (c->range && (st = sched_range_bounds(c->cap, c->range, &c->lo, &c->hi)) < 0)
        return chk__fail(st, "check: %s", sched_errmsg());
    c->tm = (struct chk_timing){.n_runs = c->n_runs, .rng = 0x5eed, .q = c->rep->timing_quantile};
    c->rc = chk__calloc(c->n_runs + 1, sizeof *c->rc);
    c->dur = chk__calloc(c->n_runs + 1, sizeof *c->dur);
    c->run_used = chk__calloc(c->n_runs + 1, 1);
    c->cls = chk__calloc(c->n_runs + 1, sizeof *c->cls);
    c->bytes = chk__calloc(c->n_runs + 1, sizeof *c->bytes);
    if ((st = chk__status_init(&c->status, c->lo, c->hi)))
        return st;
    if (!c->rc || !c->dur || !c->run_used || !c->cls || !c->bytes)
        return chk__fail(SBT_ENOMEM, "out of memory");
    /* identities count from the trace's first op, also when a range is read */
    if ((c->expect || c->upd) && c->range) {
        if ((st = sbt_cursor_open(c->cap, NULL, &c->idc)) < 0 ||
            (st = sbt_cursor_next(c->idc, &c->idop)) < 0)
            return chk__fail_sbt(st);
        if (st == 0)
            c->idop = NULL;
    }
    /* the baseline: each result is one reference run of every group it has (by seq in the
     * range when there is one) */
    struct sbt_range br = {.has_seq = 1, .seq_begin = c->lo, .seq_end = c->hi};
    for (uint32_t i = 0; c->tref == CHK_TREF_BASELINE && i < c->n_base; i++)
        if ((st = read_reference(&c->tm, c->base[i], c->range ? &br : NULL)) < 0)
            return st;
    /* runs read [lo, hi) plus what lies beyond the capture (extra ops) */
    struct sbt_range rr = {.has_seq = 1, .seq_begin = c->lo, .seq_end = UINT64_MAX};
    if (c->hi < ci->seq_end)
        rr.seq_end = c->hi;
    for (uint32_t i = 0; i < c->n_runs; i++) {
        if ((st = sbt_cursor_open(c->runs[i], &rr, &c->rc[i].c)) < 0)
            return chk__fail_sbt(st);
        if ((st = rc_next(&c->rc[i])))
            return st;
    }
    if ((st = sbt_cursor_open(c->cap, c->range, &c->cc)) < 0)
        return chk__fail_sbt(st);
    if (c->collect) {
        c->rep->priv->ref_t0 = ci->t_min;
        c->rep->priv->run_t0 = c->n_runs ? sbt_reader_info(c->runs[0])->t_min : ci->t_min;
    }
    return 0;
}

static void walk_close(struct chk_check_ctx *c)
{
    if (c->rc)
        for (uint32_t i = 0; i < c->n_runs; i++)
            sbt_cursor_close(c->rc[i].c);
    sbt_cursor_close(c->cc);
    sbt_cursor_close(c->idc);
    free(c->rc);
    free(c->dur);
    free(c->run_used);
    free(c->cls);
    if (c->bytes)
        for (uint32_t i = 0; i <= c->n_runs; i++)
            free(c->bytes[i].p);
    free(c->bytes);
    chk__timing_free(&c->tm);
    chk__idgen_free(&c->idg);
    chk__status_free(&c->status);
}

/* ========================================================================================== */
/* One op: presence                                                                           */
/* ========================================================================================== */

/* Brings every run to the seq of op: ops before it not selected by the range are skipped, ops
 * before the capture's seq span are EXTRA. Then c->rop[i] is run i's op of that seq, or NULL. */
static int align_runs(struct chk_check_ctx *c, const struct sbt_op *op)
{
    for (uint32_t i = 0; i < c->n_runs; i++) {
        struct chk_runcur *rc = &c->rc[i];
        while (rc->op && rc->op->seq < op->seq) {
            if (rc->op->seq < c->ci->seq_first) {
                struct chk_finding *f = chk__finding_add(c->rep, c->max_f, CHK_EXTRA);
                chk__finding_op(f, c->runs[i], rc->op);
                if (f)
                    f->run = i + 1, f->seq_run = rc->op->seq;
            }
            int st = rc_next(rc);
            if (st)
                return st;
        }
        c->rop[i] = rc->op && rc->op->seq == op->seq ? rc->op : NULL;
    }
    return 0;
}

/* Missing, kind changes, errors: a run's op of another kind is EXTRA (and the op is missing
 * from that run), the runs that lack the op make one MISSING, the first run that reported an
 * error at it a REPLAY_ERROR. */
static void op_presence(struct chk_check_ctx *c, struct chk_check_op *o)
{
    struct chk_report *rep = c->rep;
    const struct sbt_op *op = o->op;
    uint32_t n_missing = 0, first_missing = 0;
    for (uint32_t i = 0; i < c->n_runs; i++) {
        const struct sbt_op *r = c->rop[i];
        if (r && r->kind != op->kind) {
            struct chk_finding *f = chk__finding_add(rep, c->max_f, CHK_EXTRA);
            chk__finding_op(f, c->runs[i], r);
            if (f) {
                f->run = i + 1, f->seq_run = r->seq;
                snprintf(f->note, sizeof f->note, "a %s where the capture has a %s",
                         sbt_op_kind_name(r->kind), sbt_op_kind_name(op->kind));
            }
            c->rop[i] = NULL;
        }
        if (!c->rop[i] && !n_missing++)
            first_missing = i;
        o->n_have += c->rop[i] != NULL;
    }
    if (n_missing) {
        struct chk_finding *f = chk__finding_add(rep, c->max_f, CHK_MISSING);
        chk__finding_op(f, c->cap, op);
        if (f) {
            f->run = first_missing + 1;
            snprintf(f->note, sizeof f->note, "absent from %u of %u runs (first: %s)", n_missing,
                     c->n_runs, rep->run_names[first_missing]);
        }
        o->opst = CHK_ST_MISMATCH;
    }
    for (uint32_t i = 0; i < c->n_runs; i++) {
        if (!c->rop[i] || !(c->rop[i]->flags & SBT_OPF_ERROR))
            continue;
        if (!o->n_err++) {
            struct chk_finding *f = chk__finding_add(rep, c->max_f, CHK_REPLAY_ERROR);
            chk__finding_op(f, c->cap, op);
            if (f) {
                f->run = i + 1;
                const char *m = sbt_reader_string(c->runs[i], c->rop[i]->error);
                snprintf(f->note, sizeof f->note, "%s", m && *m ? m : "error");
            }
        }
        o->opst = CHK_ST_MISMATCH;
    }
}

/* ========================================================================================== */
/* One op: coverage, timing, event                                                            */
/* ========================================================================================== */

/* Coverage: a compared op is verified (and the runs whose digests it compared count for the
 * bound); a device op that was not is listed as unverified with the reason. */
static int op_coverage(struct chk_check_ctx *c, const struct chk_check_op *o)
{
    struct chk_report *rep = c->rep;
    if (o->compared) {
        rep->n_verified++;
        for (uint32_t i = 0; i < c->n_runs; i++)
            if (c->rop[i] && (c->rop[i]->flags & SBT_OPF_DIGEST) &&
                !(c->rop[i]->flags & SBT_OPF_ERROR))
                c->run_used[i] = 1;
    }
    if (!chk__is_device_op(o->op) && !o->n_d)
        return 0;
    rep->n_device_ops++;
    if (o->compared)
        return 0;
    int unv = o->unv;
    if (unv < 0)
        unv = o->n_have && o->n_err == o->n_have                               ? CHK_UNV_ERROR
              : o->n_d || o->cap_d || (o->has_exp && o->label == CHK_LABEL_OK) ? CHK_UNV_ONE_SIDE
                                                                               : CHK_UNV_NO_DIGEST;
    return chk__unverified_add(rep, c->max_f, c->cap, o->op, (uint32_t)unv);
}

/* Timing: each run's launch into its own reservoir of the op's group, the capture's into the
 * reference when the capture is the timing reference. */
static int op_timing(struct chk_check_ctx *c, const struct chk_check_op *o)
{
    const struct sbt_op *op = o->op;
    uint64_t ref_ns = 0;
    int has_ref_t = c->tref == CHK_TREF_CAPTURE && chk__op_dur(op, &ref_ns);
    uint32_t n_t = 0;
    for (uint32_t i = 0; i < c->n_runs; i++)
        if (c->rop[i] && c->pcls[i] < 0 && chk__op_dur(c->rop[i], &c->dur[i]))
            n_t++;
        else
            c->dur[i] = UINT64_MAX; /* perturbed runs: another regime, not timed */
    const char *g = has_ref_t || n_t ? chk_group_name(c->cap, op, c->gbuf, sizeof c->gbuf) : NULL;
    if (g) {
        struct chk_tgroup *tg;
        int st;
        if ((st = chk__timing_group(&c->tm, g, &tg)) ||
            (has_ref_t && (st = chk__timing_add(&c->tm, tg, c->tm.n_runs, op, ref_ns))))
            return st;
        for (uint32_t i = 0; i < c->n_runs; i++)
            if (c->dur[i] != UINT64_MAX &&
                (st = chk__timing_add(&c->tm, tg, i, c->rop[i], c->dur[i])))
                return st;
    }
    c->rep->n_timed += n_t != 0;
    return 0;
}

/* The event for the Perfetto diff: the capture against the first run; per-op slower and
 * faster only when the capture is the timing reference. */
static int op_event(struct chk_check_ctx *c, const struct chk_check_op *o)
{
    const struct sbt_op *op = o->op, *r = c->rop[0];
    const struct chk_priv *p = c->rep->priv;
    struct chk_event e = {.seq = op->seq, .seq_run = UINT64_MAX, .stream = op->stream};
    chk__op_interval(op, p->ref_t0, &e.ref_ts, &e.ref_dur);
    e.d_ref = op->digest;
    if (!r) {
        e.verdict = CHK_V_MISSING;
        e.ts = e.ref_ts, e.dur = e.ref_dur;
        e.ref_ts = UINT64_MAX;
    } else {
        e.seq_run = r->seq;
        chk__op_interval(r, p->run_t0, &e.ts, &e.dur);
        e.d_run = r->digest;
        uint64_t a, b;
        int ta = chk__op_dur(op, &a), tb = chk__op_dur(r, &b);
        int timed = ta && tb && c->thr >= 0 && c->tref == CHK_TREF_CAPTURE;
        if (o->opst == CHK_ST_MISMATCH)
            e.verdict = CHK_V_MISMATCH;
        else if (timed && (double)b > (double)a * (1 + c->thr))
            e.verdict = CHK_V_SLOWER;
        else if (timed && (double)b < (double)a * (1 - c->thr))
            e.verdict = CHK_V_FASTER;
    }
    return chk__event_add(c->rep, &e, chk__check_op_name(c, op));
}

/* ========================================================================================== */
/* The walk                                                                                   */
/* ========================================================================================== */

/* One reference op against the runs' ops of its seq (c->rop). */
static int check_op(struct chk_check_ctx *c, const struct sbt_op *op)
{
    struct chk_check_op o = {.op = op,
                             .label = CHK_LABEL_OK,
                             .opst = CHK_ST_UNKNOWN,
                             .first = -1,
                             .varied = -1,
                             .unv = -1};
    int st;
    c->name[0] = 0;
    if ((st = chk__check_expectation(c, &o)) < 0)
        return st;
    op_presence(c, &o);
    chk__check_outputs(c, &o);
    if ((st = chk__check_expect_update(c, &o)) < 0)
        return st;
    chk__status_set(&c->status, op->seq, o.opst);
    if ((st = op_coverage(c, &o)) || (st = op_timing(c, &o)))
        return st;
    return c->collect && c->n_runs ? op_event(c, &o) : 0;
}

/* The capture's ops in seq order, each with the runs' ops of the same seq. */
static int walk(struct chk_check_ctx *c)
{
    const struct sbt_op *op;
    uint64_t done_ops = 0, total = c->hi - c->lo;
    int st;
    while ((st = sbt_cursor_next(c->cc, &op)) == 1) {
        c->rep->n_ref_ops++;
        if (c->progress && (++done_ops & 0xffff) == 0)
            c->progress(c->pctx, done_ops, total);
        if ((st = align_runs(c, op)) || (st = check_op(c, op)))
            return st;
    }
    if (st < 0)
        return chk__fail_sbt(st);
    /* the capture as the timing reference: its launches are one reference run */
    return c->tref == CHK_TREF_CAPTURE ? chk__timing_ref_done(&c->tm) : 0;
}

/* What the runs hold beyond the capture: EXTRA, and for the first run an event. */
static int walk_beyond(struct chk_check_ctx *c)
{
    int st = 0;
    for (uint32_t i = 0; i < c->n_runs; i++) {
        struct chk_runcur *rc = &c->rc[i];
        for (; rc->op; st = rc_next(rc)) {
            if (st)
                return st;
            if (rc->op->seq < c->ci->seq_end)
                continue;
            struct chk_finding *f = chk__finding_add(c->rep, c->max_f, CHK_EXTRA);
            chk__finding_op(f, c->runs[i], rc->op);
            if (f) {
                f->run = i + 1, f->seq_run = rc->op->seq;
                snprintf(f->note, sizeof f->note, "beyond the capture's last op %" PRIu64,
                         c->ci->seq_end ? c->ci->seq_end - 1 : 0);
            }
            if (c->collect && i == 0) {
                struct chk_event e = {.seq = UINT64_MAX,
                                      .seq_run = rc->op->seq,
                                      .verdict = CHK_V_EXTRA,
                                      .ref_ts = UINT64_MAX,
                                      .stream = rc->op->stream};
                chk__op_interval(rc->op, c->rep->priv->run_t0, &e.ts, &e.dur);
                char nb[160];
                if ((st = chk__event_add(c->rep, &e,
                                         chk__op_name(c->runs[i], rc->op, nb, sizeof nb))))
                    return st;
            }
        }
        if (st)
            return st;
    }
    if (c->progress) /* the lockstep reading is done */
        c->progress(c->pctx, c->hi - c->lo, c->hi - c->lo);
    return 0;
}

/* ========================================================================================== */
/* The verdict                                                                                */
/* ========================================================================================== */

/* The timing tests, the first divergence, what a pass means, and whether the gate failed (with
 * the reason where no finding gives one). */
static int verdict(struct chk_check_ctx *c)
{
    struct chk_report *rep = c->rep;
    int st;
    if ((st = chk__timing_report(&c->tm, rep, c->tref != CHK_TREF_NONE)) ||
        (st = chk__roots(c->cap, &c->status, rep)))
        return st;
    /* what a pass means: with a reference, each run is a trial; across runs only, the first
     * run is the yardstick of the others */
    uint32_t n_used = 0, n_any = 0;
    for (uint32_t i = 0; i < c->n_runs; i++)
        n_used += c->run_used[i] && c->pcls[i] < 0, n_any += c->run_used[i]; /* N: plain */
    rep->n_compared_runs = c->ref_compared ? n_used : n_used ? n_used - 1 : 0;
    rep->pass_bound = chk_no_difference_bound(rep->n_compared_runs, rep->confidence);
    /* with a range, the entries of ops outside it are unused: that says nothing */
    if (c->expect && !c->range)
        rep->n_expect_unused = chk_expect_unused(c->expect, rep->device);
    /* expectations that apply but of which no entry met an op checked are no reference */
    uint64_t n_exp = 0;
    if (c->expect && !c->upd && !c->no_ref[0] &&
        chk_expect_section(c->expect, rep->device, &n_exp, NULL, 0) && !c->n_exp_hits &&
        rep->n_device_ops)
        snprintf(c->no_ref, sizeof c->no_ref,
                 "none of the %" PRIu64 " expectations for device '%s' matched an op of the %s",
                 n_exp, rep->device, c->range ? "range" : "trace");
    const char *unused = NULL;
    for (uint32_t i = 0; i < c->n_runs && !unused; i++)
        if (!c->run_used[i])
            unused = rep->run_names[i];
    char failed[300] = "";
    for (uint32_t i = 0; i < c->n_runs && !failed[0]; i++) {
        const char *v = sbt_reader_meta_get(c->runs[i], "replay.device_failed");
        if (v && *v)
            snprintf(failed, sizeof failed, "%.100s: %.190s", rep->run_names[i], v);
    }
    struct chk_evidence ev = {.is_range = c->range != NULL,
                              .n_device_ops = rep->n_device_ops,
                              .n_compared = rep->n_verified,
                              .n_runs = c->n_runs,
                              .n_runs_used = n_any,
                              .run_unused = unused,
                              .no_reference = c->no_ref[0] ? c->no_ref : NULL,
                              .how_to = "replay with --verify op, or capture with --digests",
                              .device_failed = failed[0] ? failed : NULL};
    chk__verdict(rep, &ev);
    return 0;
}

int chk_check(sbt_reader *cap, sbt_reader *const *runs, uint32_t n_runs, sbt_reader *const *base,
              uint32_t n_base, const struct chk_opts *o, struct chk_report **out)
{
    *out = NULL;
    struct chk_check_ctx c = {
        .cap = cap, .runs = runs, .base = base, .n_runs = n_runs, .n_base = n_base};
    int st;
    if ((st = check_opts(&c, o)) < 0 || (st = report_inputs(&c)) < 0 || (st = walk_open(&c)) < 0 ||
        (st = walk(&c)) < 0 || (st = walk_beyond(&c)) < 0 || (st = verdict(&c)) < 0) {
        walk_close(&c);
        chk_report_free(c.rep);
        return st;
    }
    walk_close(&c);
    *out = c.rep;
    return 0;
}
