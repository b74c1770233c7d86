/*
 * checker/chk_timing.c — the timing gate's arithmetic, shared by check and diff: the
 * accumulators (per group, per run, a reservoir of launch durations, and of each launch's time
 * after the op before it on its stream ended), the reference runs, the tests per group (chk.h
 * "Timing": a one-sided Mann-Whitney U test against the minimum effect, the Hodges-Lehmann
 * effect, Holm's adjustment over the gate) and the verdicts, the gate's verdict as a whole
 * (passed and failed only when the runs could have failed it, else not gated, with the reason
 * and the runs it needs), blame (a slowdown that the op before it on the queue accounts for is
 * downstream of that op's regression), the confirmation on a fresh batch (chk_confirm_timing),
 * and the regime of a replay result, which says whose timings may be compared at all. The
 * statistics themselves are in chk_stats.c.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"
#include "scheduler/sched.h"

const char *chk_time_verdict_name(uint32_t v)
{
    static const char *const n[] = {"same",        "slower",  "faster",    "regression",
                                    "improvement", "no-data", "downstream"};
    return v < sizeof n / sizeof n[0] ? n[v] : "?";
}

const char *chk_timing_gate_name(uint32_t g)
{
    static const char *const n[] = {"not-gated", "passed", "failed"};
    return g < sizeof n / sizeof n[0] ? n[g] : "?";
}

/* ========================================================================================== */
/* Accumulators                                                                               */
/* ========================================================================================== */

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

int chk__samples_add(struct chk_samples *s, double v, uint64_t *rng)
{
    s->seen++;
    if (s->n < CHK_RESERVOIR) {
        if (s->n == s->cap) {
            int st = chk__grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v);
            if (st)
                return st;
        }
        s->v[s->n++] = v;
        return 0;
    }
    /* reservoir (Vitter's algorithm R) with a fixed seed: output stays reproducible */
    uint64_t j = xorshift(rng) % s->seen;
    if (j < CHK_RESERVOIR)
        s->v[j] = v;
    return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double chk__samples_quantile(struct chk_samples *s, double q)
{
    if (!s->n)
        return NAN;
    qsort(s->v, s->n, sizeof *s->v, cmp_dbl);
    double h = (double)(s->n - 1) * q;
    uint32_t lo = (uint32_t)floor(h), hi = lo + 1 < s->n ? lo + 1 : lo;
    return s->v[lo] + (h - (double)lo) * (s->v[hi] - s->v[lo]);
}

int chk__timing_group(struct chk_timing *t, const char *name, struct chk_tgroup **out)
{
    uint32_t idx;
    int added, st = chk__strmap_find(&t->names, name, &idx, &added);
    if (st)
        return st;
    if (added) {
        if ((st = chk__grow((void **)&t->g, &t->cap, idx + 1, sizeof *t->g)))
            return st;
        struct chk_tgroup *g = &t->g[idx];
        memset(g, 0, sizeof *g);
        if (!(g->run = chk__calloc(t->n_runs + 1, sizeof *g->run)) ||
            !(g->excl = chk__calloc(t->n_runs + 1, sizeof *g->excl)))
            return chk__fail(SBT_ENOMEM, "out of memory for the timing of '%s'", name);
    }
    *out = &t->g[idx];
    return 0;
}

/* Stream ids beyond this are not followed for blame: their launches count as not overlapping
 * (a trace has a handful of streams; the ids are table indices). */
#define CHK_MAX_STREAM_ID 65536

/* The entry of run slot `run` for stream id `stream`, grown on demand; NULL beyond
 * CHK_MAX_STREAM_ID, or out of memory (*st set). */
static struct chk_tlast *tlast(struct chk_timing *t, uint32_t run, uint32_t stream, int *st)
{
    *st = 0;
    if (stream >= CHK_MAX_STREAM_ID)
        return NULL;
    if (!t->last) {
        t->last = chk__calloc(t->n_runs + 1, sizeof *t->last);
        t->n_last = chk__calloc(t->n_runs + 1, sizeof *t->n_last);
        if (!t->last || !t->n_last) {
            *st = chk__fail(SBT_ENOMEM, "out of memory for the timing of streams");
            return NULL;
        }
    }
    if (stream >= t->n_last[run]) {
        uint32_t n = stream + 1 > 2 * t->n_last[run] ? stream + 1 : 2 * t->n_last[run];
        struct chk_tlast *l = chk__realloc(t->last[run], n * sizeof *l);
        if (!l) {
            *st = chk__fail(SBT_ENOMEM, "out of memory for the timing of streams");
            return NULL;
        }
        memset(l + t->n_last[run], 0, (n - t->n_last[run]) * sizeof *l);
        t->last[run] = l, t->n_last[run] = n;
    }
    return &t->last[run][stream];
}

int chk__timing_add(struct chk_timing *t, struct chk_tgroup *g, uint32_t run,
                    const struct sbt_op *op, uint64_t ns)
{
    assert(run <= t->n_runs && g >= t->g && g < t->g + t->names.n);
    int is_ref = run == t->n_runs, st;
    uint32_t gi = (uint32_t)(g - t->g);
    if ((st = chk__samples_add(is_ref ? &g->ref : &g->run[run], (double)ns, &t->rng)))
        return st;
    /* the time after the op before it on the stream ended: a begin timestamp written while
     * that op still ran (a queue's TOP_OF_PIPE timestamp does not wait for it) puts that op's
     * tail into this one's interval */
    double excl = (double)ns;
    struct chk_tlast *l = tlast(t, run, op->stream, &st);
    if (st)
        return st;
    if (l && l->group) {
        int overlap = l->end > op->dev_begin;
        if (overlap)
            excl = op->dev_end > l->end ? (double)(op->dev_end - l->end) : 0;
        if (!is_ref) {
            uint32_t p = l->group - 1, k = 0;
            while (k < g->n_pred && g->pred[k].group != p)
                k++;
            if (k == g->n_pred) {
                if ((st = chk__grow((void **)&g->pred, &g->cap_pred, k + 1, sizeof *g->pred)))
                    return st;
                g->pred[g->n_pred++] = (struct chk_tpred){.group = p};
            }
            g->pred[k].n++;
            g->pred[k].n_overlap += overlap;
        }
    }
    if ((st = chk__samples_add(is_ref ? &g->ref_excl : &g->excl[run], excl, &t->rng_excl)))
        return st;
    if (l && (!l->group || op->dev_end >= l->end))
        *l = (struct chk_tlast){.end = op->dev_end, .group = gi + 1};
    return 0;
}

int chk__timing_ref_done(struct chk_timing *t)
{
    double q = t->q > 0 ? t->q : 0.5;
    for (uint32_t i = 0; i < t->names.n; i++) {
        struct chk_tgroup *g = &t->g[i];
        if (!g->ref.n)
            continue;
        int st =
            chk__grow((void **)&g->ref_med, &g->cap_ref_med, g->n_ref_med + 1, sizeof *g->ref_med);
        if (!st)
            st = chk__grow((void **)&g->ref_excl_med, &g->cap_ref_excl, g->n_ref_med + 1,
                           sizeof *g->ref_excl_med);
        if (st)
            return st;
        uint32_t k = g->n_ref_med++;
        g->ref_med[k] = chk__samples_quantile(&g->ref, q);
        g->ref_excl_med[k] = g->ref_excl.n ? chk__samples_quantile(&g->ref_excl, q) : g->ref_med[k];
        g->n_ref += g->ref.seen;
        g->ref.n = g->ref_excl.n = 0;
        g->ref.seen = g->ref_excl.seen = 0;
    }
    /* the next reference run is another trace: nothing of this one precedes its ops */
    if (t->last && t->last[t->n_runs])
        memset(t->last[t->n_runs], 0, t->n_last[t->n_runs] * sizeof *t->last[t->n_runs]);
    return 0;
}

void chk__timing_free(struct chk_timing *t)
{
    for (uint32_t i = 0; i < t->names.n; i++) {
        struct chk_tgroup *g = &t->g[i];
        for (uint32_t r = 0; r < t->n_runs; r++) {
            if (g->run)
                free(g->run[r].v);
            if (g->excl)
                free(g->excl[r].v);
        }
        free(g->run);
        free(g->excl);
        free(g->ref.v);
        free(g->ref_excl.v);
        free(g->ref_med);
        free(g->ref_excl_med);
        free(g->pred);
    }
    if (t->last)
        for (uint32_t r = 0; r <= t->n_runs; r++)
            free(t->last[r]);
    free(t->last);
    free(t->n_last);
    free(t->g);
    chk__strmap_free(&t->names);
    memset(t, 0, sizeof *t);
}

static int cmp_row(const void *a, const void *b)
{
    const struct chk_timing_row *x = a, *y = b;
    int rx = x->verdict == CHK_TIME_REGRESSION ? 2 : x->verdict == CHK_TIME_DOWNSTREAM;
    int ry = y->verdict == CHK_TIME_REGRESSION ? 2 : y->verdict == CHK_TIME_DOWNSTREAM;
    if (rx != ry)
        return ry - rx;
    double dx = fabs(x->effect), dy = fabs(y->effect);
    if (isnan(dx))
        dx = -1;
    if (isnan(dy))
        dy = -1;
    if (dx != dy)
        return dx > dy ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* ========================================================================================== */
/* Tests and verdicts                                                                         */
/* ========================================================================================== */

/* The median of n values (copied: v is left as it is); NAN when n = 0. */
static double median_of(const double *v, uint32_t n)
{
    if (!n)
        return NAN;
    double *c = chk__malloc(n * sizeof *c);
    if (!c)
        return NAN;
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_dbl);
    double m = n & 1 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

/* Blame: which regressions the ops before them on their stream account for.
 *
 * A group regressed (its adjusted p below alpha) is DOWNSTREAM of a group P when
 *   - its time after the op before it ended did not regress: the same test on those times
 *     ("at most threshold slower", raw, not adjusted: the lenient way round, so that doubt
 *     keeps it a regression) is not significant;
 *   - some of its launches in the runs followed a launch of P on the same stream and began
 *     before it ended (the drain: the slowdown can sit in that overlap at all);
 *   - P regressed and its slowdown in ns (median of the runs minus the reference's) is at
 *     least this group's: the overlap cannot grow by more than P's time did;
 *   - and P is itself a regression in its own right, or downstream of one.
 * A regression that nothing accounts for is its own. Groups that would be downstream only of
 * each other stay regressions, so a report with a DOWNSTREAM group always has a REGRESSION: blame
 * changes which groups a failed gate names, never whether it fails. Rows are still in group
 * order (before they are sorted), so row i is group i. */
static void blame(const struct chk_timing *t, struct chk_report *rep, double alpha)
{
    uint32_t n = rep->n_kernels;
    uint8_t *state = chk__calloc(n ? n : 1, 1); /* 0 -, 1 undecided, 2 own, 3 downstream */
    if (!state)
        return; /* out of memory: every regression stays its own */
    for (uint32_t i = 0; i < n; i++) {
        const struct chk_timing_row *k = &rep->kernels[i];
        if (k->verdict == CHK_TIME_REGRESSION)
            state[i] = k->p_excl >= alpha && k->n_overlap ? 1 : 2;
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (state[i] != 1)
                continue;
            struct chk_timing_row *k = &rep->kernels[i];
            double d = k->run.median - k->ref_median;
            const struct chk_tgroup *g = &t->g[i];
            uint32_t best = UINT32_MAX;
            uint64_t best_n = 0;
            for (uint32_t q = 0; q < g->n_pred; q++) {
                uint32_t p = g->pred[q].group;
                if (p == i || p >= n || state[p] < 2 || !g->pred[q].n_overlap)
                    continue;
                const struct chk_timing_row *pk = &rep->kernels[p];
                if (!(pk->run.median - pk->ref_median >= d) || g->pred[q].n_overlap <= best_n)
                    continue;
                best = p, best_n = g->pred[q].n_overlap;
            }
            if (best == UINT32_MAX)
                continue;
            state[i] = 3, changed = 1;
            k->verdict = CHK_TIME_DOWNSTREAM;
            snprintf(k->downstream_of, sizeof k->downstream_of, "%s", rep->kernels[best].name);
        }
    }
    free(state);
}

/* Counts the regressions and downstream groups, and the gate's verdict once it is gated. */
static void recount(struct chk_report *rep)
{
    rep->count[CHK_TIMING] = 0;
    rep->n_downstream = 0;
    for (uint32_t i = 0; i < rep->n_kernels; i++) {
        rep->count[CHK_TIMING] += rep->kernels[i].verdict == CHK_TIME_REGRESSION;
        rep->n_downstream += rep->kernels[i].verdict == CHK_TIME_DOWNSTREAM;
    }
    if (rep->timing_gate != CHK_TGATE_NOT_GATED)
        rep->timing_gate = rep->count[CHK_TIMING] ? CHK_TGATE_FAILED : CHK_TGATE_PASSED;
}

/* The gate's verdict as a whole: gated only when some group could have failed. nx, ny: the run
 * counts of the group with the smallest attainable p (min_p), n_ref the most reference runs a
 * group had; n_groups: groups seen at all. */
static void gate(struct chk_report *rep, int tested, uint32_t n_groups, size_t nx, size_t ny,
                 uint32_t n_ref)
{
    size_t pos = 0;
    char *w = rep->timing_why;
    size_t cap = sizeof rep->timing_why;
    double alpha = 1 - rep->confidence;
    w[0] = 0;
    uint32_t n_slower = 0; /* regressions, downstream or not: a gate that found one is gated */
    for (uint32_t i = 0; i < rep->n_kernels; i++)
        n_slower += rep->kernels[i].verdict == CHK_TIME_REGRESSION ||
                    rep->kernels[i].verdict == CHK_TIME_DOWNSTREAM;
    rep->timing_gate = CHK_TGATE_NOT_GATED;
    rep->runs_needed = tested && rep->threshold >= 0 && rep->n_tests
                           ? chk_timing_runs_needed(n_ref, rep->n_tests, rep->confidence)
                           : 0;
    if (rep->mode == CHK_MODE_DIFF) {
        chk__putf(w, cap, &pos,
                  "one run a side: effects shown, not tested (check --baseline "
                  "tests them over runs)");
    } else if (rep->threshold < 0) {
        chk__putf(w, cap, &pos, "the timing gate is off (--timing-threshold off)");
    } else if (!tested || rep->timing_ref == CHK_TREF_NONE) {
        chk__putf(w, cap, &pos,
                  "no timing reference: timings are summarised, not compared (--baseline "
                  "RESULTS, or --timing-reference capture)");
    } else if (!n_groups) {
        chk__putf(w, cap, &pos, "no timed ops: the runs have no device times");
    } else if (!rep->n_tests) {
        chk__putf(w, cap, &pos,
                  "no group has timings in both the runs and the reference (%u group%s in one "
                  "only)",
                  n_groups, n_groups == 1 ? "" : "s");
    } else if (!(rep->min_p * rep->n_tests < alpha) && !n_slower) {
        chk__putf(w, cap, &pos, "%zu run%s against %zu reference run%s cannot fail it (", nx,
                  nx == 1 ? "" : "s", ny, ny == 1 ? "" : "s");
        if (rep->runs_needed)
            chk__putf(w, cap, &pos,
                      "needs --runs %u against this reference, or more reference "
                      "runs",
                      rep->runs_needed);
        else
            chk__putf(w, cap, &pos, "no number of runs up to %u would: keep more reference runs",
                      CHK_RUNS_NEEDED_MAX);
        chk__putf(w, cap, &pos,
                  "): the smallest p-value they can give, %.3g, times %u group%s (Holm) is not "
                  "below %.3g",
                  rep->min_p, rep->n_tests, rep->n_tests == 1 ? "" : "s", alpha);
    } else {
        rep->timing_gate = CHK_TGATE_PASSED;
        chk__putf(w, cap, &pos,
                  "%u group%s tested, %zu run%s against %zu reference run%s (smallest attainable "
                  "p %.3g)",
                  rep->n_tests, rep->n_tests == 1 ? "" : "s", nx, nx == 1 ? "" : "s", ny,
                  ny == 1 ? "" : "s", rep->min_p);
    }
    recount(rep);
    /* required: a failure with a reason, which the verdict's one rule (chk__verdict) fails */
    if (rep->timing_gate == CHK_TGATE_NOT_GATED && rep->timing_required) {
        size_t n = strlen(rep->fail_reason);
        snprintf(rep->fail_reason + n, sizeof rep->fail_reason - n,
                 "%stiming not gated (--require-timing): %s", n ? "; " : "", rep->timing_why);
        rep->failed = 1;
    }
}

int chk__timing_report(struct chk_timing *t, struct chk_report *rep, int tested)
{
    rep->min_p = 1;
    uint32_t n = t->names.n;
    if (!n) {
        rep->n_tests = 0;
        gate(rep, tested, 0, 0, 0, 0);
        return 0;
    }
    rep->kernels = chk__calloc(n, sizeof *rep->kernels);
    double *x = chk__calloc(t->n_runs + 1, sizeof *x), *xs = chk__calloc(t->n_runs + 1, sizeof *xs);
    double *xe = chk__calloc(t->n_runs + 1, sizeof *xe);
    double *ps = chk__calloc(2 * (size_t)n, sizeof *ps);
    uint32_t *tidx = chk__calloc(n, sizeof *tidx);
    int st = 0;
    if (!rep->kernels || !x || !xs || !xe || !ps || !tidx) {
        st = chk__fail(SBT_ENOMEM, "out of memory for the kernel table");
        goto out;
    }
    double thr = rep->threshold, alpha = 1 - rep->confidence, q = t->q > 0 ? t->q : 0.5;
    tested = tested && thr >= 0;
    uint32_t n_t = 0, n_ref = 0;
    size_t best_nx = 0, best_ny = 0;
    double min_p = 1;
    for (uint32_t i = 0; i < n; i++) {
        struct chk_tgroup *g = &t->g[i];
        struct chk_timing_row *row = &rep->kernels[rep->n_kernels++];
        snprintf(row->name, sizeof row->name, "%s", t->names.names[i]);
        size_t nx = 0;
        for (uint32_t r = 0; r < t->n_runs; r++) {
            row->n_run += g->run[r].seen;
            if (g->run[r].n) {
                x[nx] = chk__samples_quantile(&g->run[r], q);
                xe[nx] = g->excl[r].n ? chk__samples_quantile(&g->excl[r], q) : x[nx];
                nx++;
            }
        }
        for (uint32_t k = 0; k < g->n_pred; k++)
            row->n_overlap += g->pred[k].n_overlap;
        row->n_runs = (uint32_t)nx;
        row->n_ref_runs = g->n_ref_med;
        row->n_ref = g->n_ref;
        row->p_value = row->p_adj = row->p_faster = row->p_faster_adj = row->p_excl = 1;
        row->confirmed = -1;
        row->effect = row->effect_lo = row->effect_hi = row->excl_effect = NAN;
        row->ref_median = median_of(g->ref_med, g->n_ref_med);
        if (nx && g->n_ref_med) {
            double ratio, lo, hi, level;
            if ((st = chk_ratio_estimate(x, nx, g->ref_med, g->n_ref_med, rep->confidence, &ratio,
                                         &lo, &hi, &level)))
                goto out;
            row->effect = ratio - 1, row->effect_lo = lo - 1, row->effect_hi = hi - 1;
            row->effect_level = level;
            if (tested) {
                /* H0 "at most thr slower": the runs scaled down by 1 + thr against the
                 * reference; and "at most thr faster" the other way round */
                for (size_t k = 0; k < nx; k++)
                    xs[k] = x[k] / (1 + thr);
                row->p_value = chk_mann_whitney(xs, nx, g->ref_med, g->n_ref_med, NULL);
                for (size_t k = 0; k < nx; k++)
                    xs[k] = x[k] * (1 + thr);
                row->p_faster = chk_mann_whitney(g->ref_med, g->n_ref_med, xs, nx, NULL);
                /* blame: the same test on the time after the op before ended */
                if ((st = chk_ratio_estimate(xe, nx, g->ref_excl_med, g->n_ref_med, rep->confidence,
                                             &ratio, &lo, &hi, &level)))
                    goto out;
                row->excl_effect = ratio - 1;
                for (size_t k = 0; k < nx; k++)
                    xs[k] = xe[k] / (1 + thr);
                row->p_excl = chk_mann_whitney(xs, nx, g->ref_excl_med, g->n_ref_med, NULL);
                ps[n_t] = row->p_value;
                ps[n + n_t] = row->p_faster;
                tidx[n_t++] = i;
                double mp = chk_mann_whitney_min_p(nx, g->n_ref_med);
                if (n_t == 1 || mp < min_p)
                    min_p = mp, best_nx = nx, best_ny = g->n_ref_med;
                n_ref = g->n_ref_med > n_ref ? g->n_ref_med : n_ref;
            }
        }
        /* summarize last: it sorts x */
        if ((st = chk_summarize(x, nx, rep->confidence, &row->run)))
            goto out;
    }
    if ((st = chk_holm(ps, n_t, ps)) || (st = chk_holm(ps + n, n_t, ps + n)))
        goto out;
    for (uint32_t k = 0; k < n_t; k++) {
        rep->kernels[tidx[k]].p_adj = ps[k];
        rep->kernels[tidx[k]].p_faster_adj = ps[n + k];
    }
    rep->n_tests = n_t;
    rep->min_p = n_t ? min_p : 1;
    for (uint32_t i = 0; i < rep->n_kernels; i++) {
        struct chk_timing_row *row = &rep->kernels[i];
        if (!row->n_runs || !row->n_ref_runs) {
            row->verdict = CHK_TIME_NO_DATA;
        } else if (thr < 0) {
            row->verdict = CHK_TIME_SAME;
        } else if (row->effect > thr) {
            row->verdict = tested && row->p_adj < alpha ? CHK_TIME_REGRESSION : CHK_TIME_SLOWER;
        } else if (row->effect < -thr) {
            row->verdict =
                tested && row->p_faster_adj < alpha ? CHK_TIME_IMPROVEMENT : CHK_TIME_FASTER;
        } else {
            row->verdict = CHK_TIME_SAME;
        }
    }
    if (tested)
        blame(t, rep, alpha);
    gate(rep, tested, n, best_nx, best_ny, n_ref);
    qsort(rep->kernels, rep->n_kernels, sizeof *rep->kernels, cmp_row);
out:
    free(x);
    free(xs);
    free(xe);
    free(ps);
    free(tidx);
    return st;
}

/* The row named name, or NULL. */
static struct chk_timing_row *row_named(const struct chk_report *rep, const char *name)
{
    for (uint32_t i = 0; i < rep->n_kernels; i++)
        if (!strcmp(rep->kernels[i].name, name))
            return &rep->kernels[i];
    return NULL;
}

int chk_confirm_timing(struct chk_report *rep, const struct chk_report *again)
{
    if (!rep || !again)
        return chk__fail(SBT_EINVAL, "confirm: two reports are required");
    rep->n_confirm_runs = again->n_runs;
    /* a group found slower (a regression, or downstream of one) stays so only if it is found
     * again; it then takes the blame the two batches together give it */
    for (uint32_t i = 0; i < rep->n_kernels; i++) {
        struct chk_timing_row *k = &rep->kernels[i];
        if (k->verdict != CHK_TIME_REGRESSION && k->verdict != CHK_TIME_DOWNSTREAM)
            continue;
        const struct chk_timing_row *a = row_named(again, k->name);
        int twice = a && (a->verdict == CHK_TIME_REGRESSION || a->verdict == CHK_TIME_DOWNSTREAM);
        k->confirmed = twice;
        k->verdict = !twice ? CHK_TIME_SLOWER : a->verdict;
        snprintf(k->downstream_of, sizeof k->downstream_of, "%s",
                 twice && a->verdict == CHK_TIME_DOWNSTREAM ? a->downstream_of : "");
    }
    /* downstream only of a regression that stands here: else it is one in its own right */
    for (uint32_t i = 0; i < rep->n_kernels; i++) {
        struct chk_timing_row *k = &rep->kernels[i];
        const struct chk_timing_row *p = k;
        for (uint32_t hops = 0; p && p->verdict == CHK_TIME_DOWNSTREAM && hops <= rep->n_kernels;
             hops++)
            p = row_named(rep, p->downstream_of);
        if (k->verdict == CHK_TIME_DOWNSTREAM && (!p || p->verdict != CHK_TIME_REGRESSION)) {
            k->verdict = CHK_TIME_REGRESSION;
            k->downstream_of[0] = 0;
        }
    }
    recount(rep);
    qsort(rep->kernels, rep->n_kernels, sizeof *rep->kernels, cmp_row);
    rep->failed = rep->fail_reason[0] != 0;
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        rep->failed |= rep->count[c] != 0;
    return 0;
}

uint32_t chk_timing_runs_needed(uint32_t n_ref, uint32_t n_tests, double confidence)
{
    if (!n_ref || !n_tests || !(confidence > 0 && confidence < 1))
        return 0;
    /* the margin keeps 2 x tests / C exactly at the bar (3 runs against 3 for 3 groups: 6/120
     * and 0.05) on the side that cannot reject */
    double log_bar = log((1 - confidence) * (1 - 1e-9)) - log(2.0 * n_tests);
    for (uint32_t k = 1; k <= CHK_RUNS_NEEDED_MAX; k++) {
        double lc =
            lgamma((double)k + n_ref + 1) - lgamma((double)k + 1) - lgamma((double)n_ref + 1);
        if (-lc < log_bar)
            return k;
    }
    return 0;
}

int chk_timing_groups(sbt_reader *capture, sbt_reader *result, const struct sbt_range *range,
                      uint32_t *n)
{
    *n = 0;
    if (!capture || !result)
        return chk__fail(SBT_EINVAL, "timing groups: a capture and a result are required");
    struct sbt_range br = {.has_seq = 1};
    int st;
    if (range && (st = sched_range_bounds(capture, range, &br.seq_begin, &br.seq_end)) < 0)
        return chk__fail(st, "timing groups: %s", sched_errmsg());
    sbt_cursor *c;
    if ((st = sbt_cursor_open(result, range ? &br : NULL, &c)) < 0)
        return chk__fail_sbt(st);
    struct chk_strmap names = {0};
    const struct sbt_op *op;
    char gb[160];
    while ((st = sbt_cursor_next(c, &op)) == 1) {
        uint64_t ns;
        const char *g;
        uint32_t idx;
        int added;
        if (chk__op_dur(op, &ns) && (g = chk_group_name(result, op, gb, sizeof gb)) &&
            (st = chk__strmap_find(&names, g, &idx, &added)))
            break;
    }
    sbt_cursor_close(c);
    *n = st < 0 ? 0 : names.n;
    chk__strmap_free(&names);
    if (st < 0)
        return st == SBT_ENOMEM ? st : chk__fail_sbt(st);
    return 0;
}

/* ========================================================================================== */
/* Regimes                                                                                    */
/* ========================================================================================== */

static const char *const regime_keys[][2] = {{"verify", "replay.verify"},
                                             {"timing", "replay.timing"},
                                             {"device", "replay.device"},
                                             {"driver", "replay.driver"},
                                             {"env", "replay.env"}};
#define N_REGIME (sizeof regime_keys / sizeof regime_keys[0])

static const char *regime_val(const sbt_reader *r, uint32_t i)
{
    const char *v = sbt_reader_meta_get(r, regime_keys[i][1]);
    return v && *v ? v : "?";
}

const char *chk_regime(const sbt_reader *r, char *buf, size_t cap)
{
    size_t pos = 0;
    if (!cap)
        return buf;
    buf[0] = 0;
    for (uint32_t i = 0; i < N_REGIME; i++) {
        const char *v = regime_val(r, i);
        chk__putf(buf, cap, &pos, strchr(v, ' ') ? "%s%s='%s'" : "%s%s=%s", i ? " " : "",
                  regime_keys[i][0], v);
    }
    return buf;
}

int chk_regime_same(const sbt_reader *a, const sbt_reader *b, char *why, size_t cap)
{
    size_t pos = 0;
    int same = 1;
    if (why && cap)
        why[0] = 0;
    for (uint32_t i = 0; i < N_REGIME; i++) {
        const char *x = regime_val(a, i), *y = regime_val(b, i);
        if (!strcmp(x, y))
            continue;
        if (why && cap)
            chk__putf(why, cap, &pos, "%s%s '%s' vs '%s'", same ? "" : ", ", regime_keys[i][0], x,
                      y);
        same = 0;
    }
    return same;
}
