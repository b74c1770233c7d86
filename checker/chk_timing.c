/*
 * checker/chk_timing.c — the timing gate's arithmetic, shared by check and diff: the
 * accumulators (per group, per run, a reservoir of launch durations), the reference runs, the
 * tests per group (chk.h "Timing": a one-sided Mann-Whitney U test against the minimum effect,
 * the Hodges-Lehmann effect, Holm's adjustment over the gate) and the verdicts, the
 * confirmation on a fresh batch (chk_confirm_timing), and the regime of a replay result, which
 * says whose timings may be compared at all. The statistics themselves are in chk_stats.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

const char *chk_time_verdict_name(uint32_t v)
{
    static const char *const n[] = {"same",       "slower",      "faster",
                                    "regression", "improvement", "no-data"};
    return v < 6 ? n[v] : "?";
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
        if (!(g->run = chk__calloc(t->n_runs + 1, sizeof *g->run)))
            return chk__fail(SBT_ENOMEM, "out of memory for the timing of '%s'", name);
    }
    *out = &t->g[idx];
    return 0;
}

int chk__timing_ref_done(struct chk_timing *t)
{
    for (uint32_t i = 0; i < t->names.n; i++) {
        struct chk_tgroup *g = &t->g[i];
        if (!g->ref.n)
            continue;
        int st =
            chk__grow((void **)&g->ref_med, &g->cap_ref_med, g->n_ref_med + 1, sizeof *g->ref_med);
        if (st)
            return st;
        g->ref_med[g->n_ref_med++] = chk__samples_quantile(&g->ref, t->q > 0 ? t->q : 0.5);
        g->n_ref += g->ref.seen;
        g->ref.n = 0;
        g->ref.seen = 0;
    }
    return 0;
}

void chk__timing_free(struct chk_timing *t)
{
    for (uint32_t i = 0; i < t->names.n; i++) {
        struct chk_tgroup *g = &t->g[i];
        if (g->run)
            for (uint32_t r = 0; r < t->n_runs; r++)
                free(g->run[r].v);
        free(g->run);
        free(g->ref.v);
        free(g->ref_med);
    }
    free(t->g);
    chk__strmap_free(&t->names);
    memset(t, 0, sizeof *t);
}

static int cmp_row(const void *a, const void *b)
{
    const struct chk_timing_row *x = a, *y = b;
    int rx = x->verdict == CHK_TIME_REGRESSION, ry = y->verdict == CHK_TIME_REGRESSION;
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

int chk__timing_report(struct chk_timing *t, struct chk_report *rep, int tested)
{
    rep->min_p = 1;
    if (!t->names.n)
        return 0;
    uint32_t n = t->names.n;
    rep->kernels = chk__calloc(n, sizeof *rep->kernels);
    double *x = chk__calloc(t->n_runs + 1, sizeof *x), *xs = chk__calloc(t->n_runs + 1, sizeof *xs);
    double *ps = chk__calloc(2 * (size_t)n, sizeof *ps);
    uint32_t *tidx = chk__calloc(n, sizeof *tidx);
    int st = 0;
    if (!rep->kernels || !x || !xs || !ps || !tidx) {
        st = chk__fail(SBT_ENOMEM, "out of memory for the kernel table");
        goto out;
    }
    double thr = rep->threshold, alpha = 1 - rep->confidence;
    tested = tested && thr >= 0;
    uint32_t n_t = 0;
    size_t max_nx = 0, max_ny = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct chk_tgroup *g = &t->g[i];
        struct chk_timing_row *row = &rep->kernels[rep->n_kernels++];
        snprintf(row->name, sizeof row->name, "%s", t->names.names[i]);
        size_t nx = 0;
        for (uint32_t r = 0; r < t->n_runs; r++) {
            row->n_run += g->run[r].seen;
            if (g->run[r].n)
                x[nx++] = chk__samples_quantile(&g->run[r], t->q > 0 ? t->q : 0.5);
        }
        row->n_runs = (uint32_t)nx;
        row->n_ref_runs = g->n_ref_med;
        row->n_ref = g->n_ref;
        row->p_value = row->p_adj = row->p_faster = row->p_faster_adj = 1;
        row->confirmed = -1;
        row->effect = row->effect_lo = row->effect_hi = NAN;
        row->ref_median = NAN;
        if (g->n_ref_med) {
            double *rm = chk__malloc(g->n_ref_med * sizeof *rm);
            if (!rm) {
                st = chk__fail(SBT_ENOMEM, "out of memory for the kernel table");
                goto out;
            }
            memcpy(rm, g->ref_med, g->n_ref_med * sizeof *rm);
            qsort(rm, g->n_ref_med, sizeof *rm, cmp_dbl);
            uint32_t m = g->n_ref_med;
            row->ref_median = m & 1 ? rm[m / 2] : (rm[m / 2 - 1] + rm[m / 2]) / 2;
            free(rm);
        }
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
                for (size_t q = 0; q < nx; q++)
                    xs[q] = x[q] / (1 + thr);
                row->p_value = chk_mann_whitney(xs, nx, g->ref_med, g->n_ref_med, NULL);
                for (size_t q = 0; q < nx; q++)
                    xs[q] = x[q] * (1 + thr);
                row->p_faster = chk_mann_whitney(g->ref_med, g->n_ref_med, xs, nx, NULL);
                ps[n_t] = row->p_value;
                ps[n + n_t] = row->p_faster;
                tidx[n_t++] = i;
                max_nx = nx > max_nx ? nx : max_nx;
                max_ny = g->n_ref_med > max_ny ? g->n_ref_med : max_ny;
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
    rep->min_p = n_t ? chk_mann_whitney_min_p(max_nx, max_ny) : 1;
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
        if (row->verdict == CHK_TIME_REGRESSION)
            rep->count[CHK_TIMING]++;
    }
    qsort(rep->kernels, rep->n_kernels, sizeof *rep->kernels, cmp_row);
out:
    free(x);
    free(xs);
    free(ps);
    free(tidx);
    return st;
}

int chk_confirm_timing(struct chk_report *rep, const struct chk_report *again)
{
    if (!rep || !again)
        return chk__fail(SBT_EINVAL, "confirm: two reports are required");
    rep->n_confirm_runs = again->n_runs;
    for (uint32_t i = 0; i < rep->n_kernels; i++) {
        struct chk_timing_row *k = &rep->kernels[i];
        if (k->verdict != CHK_TIME_REGRESSION)
            continue;
        int twice = 0;
        for (uint32_t j = 0; j < again->n_kernels && !twice; j++)
            twice = again->kernels[j].verdict == CHK_TIME_REGRESSION &&
                    !strcmp(again->kernels[j].name, k->name);
        k->confirmed = twice;
        if (!twice) {
            k->verdict = CHK_TIME_SLOWER;
            rep->count[CHK_TIMING]--;
        }
    }
    rep->failed = rep->fail_reason[0] != 0;
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        rep->failed |= rep->count[c] != 0;
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
