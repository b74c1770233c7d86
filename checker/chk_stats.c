/*
 * checker/chk_stats.c — the statistics behind the timing gate: quartiles, MAD, an
 * order-statistic confidence interval of the median, the Mann-Whitney U test (exact with ties),
 * the Hodges-Lehmann ratio and its confidence interval, Holm's adjustment, the bound a clean
 * pass gives; and element-wise comparison of output bytes under a tolerance, with exact ULP
 * distances.
 *
 * References: Conover, "Practical Nonparametric Statistics" (3rd ed.): the median CI from
 * binomial order statistics (3.2), the U test and its normal approximation with ties (5.1);
 * the exact distribution here is the permutation distribution of the doubled midrank sum,
 * counted by a subset-sum table, so ties need no approximation. Bauer, "Constructing confidence
 * sets using rank statistics", JASA 67 (1972): the CI of a shift from the ordered pairwise
 * differences. Holm, "A simple sequentially rejective multiple test procedure", Scand. J.
 * Statist. 6 (1979). Bruce Dawson, "Comparing floating point numbers" (2012): ULPs as integer
 * distances on the sign-magnitude line.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checker/chk_int.h"

/* ========================================================================================== */
/* Summaries                                                                                  */
/* ========================================================================================== */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(const double *s, size_t n, double p)
{
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return s[lo] + (h - (double)lo) * (s[hi] - s[lo]);
}

static double norm_cdf(double z)
{
    return 0.5 * erfc(-z / sqrt(2.0));
}

/* z with norm_cdf(z) = p, by bisection (p in (0, 1)); plenty fast for a few calls. */
static double norm_quantile(double p)
{
    double lo = -40, hi = 40;
    for (int i = 0; i < 200; i++) {
        double mid = (lo + hi) / 2;
        if (norm_cdf(mid) < p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* P(Binomial(n, 1/2) <= k) */
static double binom_cdf_half(uint64_t k, uint64_t n)
{
    if (k >= n)
        return 1.0;
    /* sum in log space: n may be large */
    double sum = 0, lp = -(double)n * log(2.0);
    double lc = 0; /* log C(n, 0) */
    for (uint64_t i = 0; i <= k; i++) {
        sum += exp(lc + lp);
        lc += log((double)(n - i)) - log((double)(i + 1));
    }
    return sum > 1 ? 1 : sum;
}

int chk_summarize(double *x, size_t n, double confidence, struct chk_summary *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (!n)
        return 0;
    if (!(confidence > 0 && confidence < 1))
        return chk__fail(SBT_EINVAL, "confidence %g: expected a value in (0, 1)", confidence);
    qsort(x, n, sizeof *x, cmp_double);
    out->median = quantile(x, n, 0.5);
    out->q1 = quantile(x, n, 0.25);
    out->q3 = quantile(x, n, 0.75);
    out->iqr = out->q3 - out->q1;
    double *dev = chk__malloc(n * sizeof *dev);
    if (!dev)
        return chk__fail(SBT_ENOMEM, "out of memory for %zu samples", n);
    for (size_t i = 0; i < n; i++)
        dev[i] = fabs(x[i] - out->median);
    qsort(dev, n, sizeof *dev, cmp_double);
    out->mad = quantile(dev, n, 0.5);
    free(dev);
    /* CI [x_(k), x_(n-k+1)] (1-based) with coverage 1 - 2 P(B <= k - 1): the largest k whose
     * coverage still reaches the level; k = 1 (min, max) when none does. Large n: the normal
     * approximation of the rank avoids an O(n) binomial sum per k. */
    double alpha = 1 - confidence;
    uint64_t k = 1;
    if (n > 1000) {
        double z = norm_quantile(1 - alpha / 2);
        double kk = floor((double)n / 2 - z * sqrt((double)n) / 2);
        k = kk < 1 ? 1 : (uint64_t)kk;
        out->ci_level = 1 - 2 * norm_cdf(((double)k - 0.5 - (double)n / 2) / (sqrt((double)n) / 2));
    } else {
        for (uint64_t t = 1; t <= n / 2; t++) {
            if (2 * binom_cdf_half(t - 1, n) <= alpha)
                k = t;
            else
                break;
        }
        out->ci_level = n == 1 ? 0 : 1 - 2 * binom_cdf_half(k - 1, n);
    }
    out->ci_lo = x[k - 1];
    out->ci_hi = x[n - k];
    return 0;
}

/* ========================================================================================== */
/* Mann-Whitney U                                                                             */
/* ========================================================================================== */

struct ranked {
    double v;
    int from_x;
};

static int cmp_ranked(const void *a, const void *b)
{
    const struct ranked *p = a, *q = b;
    return p->v < q->v ? -1 : p->v > q->v;
}

#define MW_EXACT_MAX 60 /* values in all: the exact distribution's table stays below 1 MB */

/* The permutation distribution of the sum of k doubled ranks drawn from r2[0..n): on return
 * cnt[s] = number of k-subsets whose doubled-rank sum is s, for s in [0, *smax]. Doubled
 * midranks are integers, so ties are exact. Counts are doubles: exact below 2^53, and to 1e-16
 * relative beyond, which a p-value does not notice. NULL when out of memory. */
static double *rank_sum_dist(const uint32_t *r2, size_t n, size_t k, size_t *smax)
{
    size_t top = 0;
    for (size_t i = 0; i < n; i++)
        top += r2[i];
    double *dp = calloc((k + 1) * (top + 1), sizeof *dp);
    if (!dp)
        return NULL;
#define DP(j, s) dp[(j) * (top + 1) + (s)]
    DP(0, 0) = 1;
    size_t reach = 0; /* largest sum reachable so far */
    for (size_t i = 0; i < n; i++) {
        reach += r2[i];
        size_t jmax = i + 1 < k ? i + 1 : k;
        for (size_t j = jmax; j >= 1; j--)
            for (size_t s = reach; s >= r2[i]; s--)
                DP(j, s) += DP(j - 1, s - r2[i]);
    }
    double *out = malloc((top + 1) * sizeof *out);
    if (out)
        memcpy(out, &DP(k, 0), (top + 1) * sizeof *out);
#undef DP
    free(dp);
    *smax = top;
    return out;
}

double chk_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, double *u_out)
{
    if (u_out)
        *u_out = 0;
    if (!nx || !ny)
        return 1.0;
    size_t n = nx + ny;
    struct ranked *r = malloc(n * sizeof *r);
    uint32_t *r2 = malloc(n * sizeof *r2);
    if (!r || !r2) {
        free(r);
        free(r2);
        return 1.0;
    }
    for (size_t i = 0; i < nx; i++)
        r[i] = (struct ranked){x[i], 1};
    for (size_t i = 0; i < ny; i++)
        r[nx + i] = (struct ranked){y[i], 0};
    qsort(r, n, sizeof *r, cmp_ranked);
    /* doubled midranks: a tie block [i, j) (0-based) has midrank (i + 1 + j) / 2 */
    uint64_t w2 = 0;
    double ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && r[j].v == r[i].v)
            j++;
        double t = (double)(j - i);
        for (size_t k = i; k < j; k++) {
            r2[k] = (uint32_t)(i + 1 + j);
            if (r[k].from_x)
                w2 += r2[k];
        }
        ties += t * t * t - t;
        i = j;
    }
    free(r);
    double u = (double)w2 / 2 - (double)nx * ((double)nx + 1) / 2;
    if (u_out)
        *u_out = u;
    if (n <= MW_EXACT_MAX) {
        size_t smax;
        double *cnt = rank_sum_dist(r2, n, nx, &smax);
        if (cnt) {
            double total = 0, upper = 0;
            for (size_t s = 0; s <= smax; s++) {
                total += cnt[s];
                if (s >= w2)
                    upper += cnt[s];
            }
            free(cnt);
            free(r2);
            return total > 0 ? upper / total : 1.0;
        }
    }
    free(r2);
    double mu = (double)nx * (double)ny / 2;
    double nn = (double)n;
    double var = (double)nx * (double)ny / 12 * ((nn + 1) - ties / (nn * (nn - 1)));
    if (var <= 0)
        return u > mu ? 0.0 : 1.0;
    double z = (u - mu - 0.5) / sqrt(var);
    return 0.5 * erfc(z / sqrt(2.0));
}

double chk_mann_whitney_min_p(size_t nx, size_t ny)
{
    if (!nx || !ny)
        return 1.0;
    double lc = lgamma((double)(nx + ny) + 1) - lgamma((double)nx + 1) - lgamma((double)ny + 1);
    return exp(-lc);
}

static int cmp_double_p(const void *a, const void *b)
{
    double x = **(double *const *)a, y = **(double *const *)b;
    return x < y ? -1 : x > y;
}

int chk_holm(const double *p, size_t n, double *adj)
{
    if (!n)
        return 0;
    const double **ord = malloc(n * sizeof *ord);
    double *tmp = malloc(n * sizeof *tmp);
    if (!ord || !tmp) {
        free(ord);
        free(tmp);
        return chk__fail(SBT_ENOMEM, "out of memory for %zu p-values", n);
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = &p[i];
    qsort(ord, n, sizeof *ord, cmp_double_p);
    double run = 0;
    for (size_t j = 0; j < n; j++) {
        double v = (double)(n - j) * *ord[j];
        if (v > 1 || isnan(v))
            v = 1;
        if (v > run)
            run = v;
        tmp[ord[j] - p] = run;
    }
    memcpy(adj, tmp, n * sizeof *adj);
    free(ord);
    free(tmp);
    return 0;
}

int chk_ratio_estimate(const double *x, size_t nx, const double *y, size_t ny, double confidence,
                       double *ratio, double *lo, double *hi, double *level)
{
    *ratio = *lo = *hi = NAN;
    *level = 0;
    if (!nx || !ny)
        return chk__fail(SBT_EINVAL, "ratio estimate: a side has no values");
    if (!(confidence > 0 && confidence < 1))
        return chk__fail(SBT_EINVAL, "confidence %g: expected a value in (0, 1)", confidence);
    size_t m = nx * ny, n = nx + ny;
    double *d = malloc(m * sizeof *d);
    if (!d)
        return chk__fail(SBT_ENOMEM, "out of memory for %zu ratios", m);
    /* differences of logs: the estimate of a scale change is a shift on the log scale */
    for (size_t i = 0; i < nx; i++)
        for (size_t j = 0; j < ny; j++)
            d[i * ny + j] = log(x[i] > 1 ? x[i] : 1) - log(y[j] > 1 ? y[j] : 1);
    qsort(d, m, sizeof *d, cmp_double);
    *ratio = exp(quantile(d, m, 0.5));
    /* k: the largest rank with P(U <= k - 1) <= (1 - C) / 2 under the null (no ties), from the
     * distribution of the rank sum of x (U = W - nx (nx + 1) / 2) */
    size_t k = 0;
    double tail = 0;
    if (n <= MW_EXACT_MAX) {
        uint32_t *r2 = malloc(n * sizeof *r2);
        size_t smax = 0;
        double *cnt = NULL;
        if (r2) {
            for (size_t i = 0; i < n; i++)
                r2[i] = (uint32_t)(2 * (i + 1));
            cnt = rank_sum_dist(r2, n, nx, &smax);
        }
        free(r2);
        if (!cnt) {
            free(d);
            return chk__fail(SBT_ENOMEM, "out of memory for the rank distribution");
        }
        double total = 0;
        for (size_t s = 0; s <= smax; s++)
            total += cnt[s];
        size_t s0 = nx * (nx + 1); /* doubled W of U = 0 */
        double cum = 0;
        for (size_t u = 0; u < m; u++) {
            cum += s0 + 2 * u <= smax ? cnt[s0 + 2 * u] / total : 0;
            if (cum > (1 - confidence) / 2)
                break;
            k = u + 1, tail = cum;
        }
        free(cnt);
    } else {
        double z = norm_quantile(1 - (1 - confidence) / 2);
        double kk = floor((double)m / 2 - z * sqrt((double)nx * (double)ny * ((double)n + 1) / 12));
        k = kk < 0 ? 0 : (size_t)kk;
        tail = (1 - confidence) / 2;
    }
    if (k == 0) { /* the asked level is out of reach: min..max covers 1 - 2 P(U = 0) */
        k = 1;
        tail = chk_mann_whitney_min_p(nx, ny);
    }
    if (k > m / 2 + (m & 1))
        k = m / 2 + (m & 1);
    *lo = exp(d[k - 1]);
    *hi = exp(d[m - k]);
    *level = 1 - 2 * tail;
    free(d);
    return 0;
}

double chk_no_difference_bound(uint64_t n, double confidence)
{
    if (!n)
        return 1.0;
    return 1 - pow(1 - confidence, 1.0 / (double)n);
}

/* ========================================================================================== */
/* Tolerances                                                                                 */
/* ========================================================================================== */

int chk_tolerance_parse(const char *s, struct chk_tolerance *out)
{
    memset(out, 0, sizeof *out);
    if (!s || !strcmp(s, "bitwise"))
        return 0;
    const char *colon = strchr(s, ':');
    size_t klen = colon ? (size_t)(colon - s) : 0;
    if (colon && klen == 3 && !strncmp(s, "ulp", 3)) {
        /* K exact: strtod would round K above 2^53 */
        const char *d = colon + 1;
        char *end = NULL;
        errno = 0;
        unsigned long long k = *d >= '0' && *d <= '9' ? strtoull(d, &end, 10) : 0;
        if (!end || *end || errno)
            return chk__fail(SBT_EINVAL,
                             "tolerance '%s': ULPs must be a whole number from 0 to 2^64 - 1", s);
        out->kind = CHK_TOL_ULP;
        out->ulps = k;
        out->eps = (double)k;
        return 0;
    }
    char *end = NULL;
    double v = colon ? strtod(colon + 1, &end) : 0;
    if (!colon || end == colon + 1 || *end || !(v >= 0) || !isfinite(v))
        return chk__fail(SBT_EINVAL,
                         "tolerance '%s': expected bitwise, ulp:K, abs:E or rel:E (K, E >= 0)", s);
    if (klen == 3 && !strncmp(s, "abs", 3)) {
        out->kind = CHK_TOL_ABS;
    } else if (klen == 3 && !strncmp(s, "rel", 3)) {
        out->kind = CHK_TOL_REL;
    } else {
        return chk__fail(SBT_EINVAL,
                         "tolerance '%s': expected bitwise, ulp:K, abs:E or rel:E (K, E >= 0)", s);
    }
    out->eps = v;
    return 0;
}

static const char *const elem_names[] = {"f32", "f16", "bf16", "f64", "i32", "u32"};
static const size_t elem_size[] = {4, 2, 2, 8, 4, 4};
#define N_ELEM (sizeof elem_names / sizeof elem_names[0])

int chk_elem_parse(const char *s, uint32_t *out)
{
    for (uint32_t i = 0; i < N_ELEM; i++)
        if (s && !strcmp(s, elem_names[i])) {
            *out = i;
            return 0;
        }
    return chk__fail(SBT_EINVAL, "element type '%s': expected f32, f16, bf16, f64, i32 or u32",
                     s ? s : "");
}

const char *chk_elem_name(uint32_t e)
{
    return e < N_ELEM ? elem_names[e] : "?";
}

size_t chk_elem_size(uint32_t e)
{
    return e < N_ELEM ? elem_size[e] : 0;
}

/* An element's bits (little-endian, as the device wrote them) and its format. */
struct elem {
    uint64_t bits;
    unsigned width;    /* bits: 16, 32, 64 */
    unsigned exp_bits; /* exponent field width; 0 for integers */
    int is_signed;     /* integers */
};

static struct elem elem_load(const uint8_t *p, uint32_t e)
{
    static const unsigned width[] = {32, 16, 16, 64, 32, 32}, expb[] = {8, 5, 8, 11, 0, 0};
    struct elem x = {0, width[e], expb[e], e == CHK_ELEM_I32};
    for (unsigned i = 0; i < x.width / 8; i++)
        x.bits |= (uint64_t)p[i] << (8 * i);
    return x;
}

static int elem_is_nan(const struct elem *x)
{
    if (!x->exp_bits)
        return 0;
    unsigned mant = x->width - 1 - x->exp_bits;
    uint64_t emask = ((1ull << x->exp_bits) - 1) << mant, mmask = (1ull << mant) - 1;
    return (x->bits & emask) == emask && (x->bits & mmask);
}

/* Position on the ordered line of the format: sign-magnitude folded around 2^(w-1), so that
 * -0 and +0 meet, adjacent values differ by 1 and every key fits in 64 bits unsigned. */
static uint64_t elem_key(const struct elem *x)
{
    uint64_t sign = 1ull << (x->width - 1), mag = x->bits & (sign - 1);
    return (x->bits & sign) ? sign - mag : sign + mag;
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0)
        v = ldexp(m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp(m | 0x400, e - 25);
    return (h & 0x8000) ? -v : v;
}

static double elem_value(const struct elem *x, uint32_t e)
{
    switch (e) {
    case CHK_ELEM_F16:
        return half_to_double((uint16_t)x->bits);
    case CHK_ELEM_BF16: {
        uint32_t w = (uint32_t)x->bits << 16;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    case CHK_ELEM_F64: {
        double d;
        memcpy(&d, &x->bits, 8);
        return d;
    }
    case CHK_ELEM_I32:
        return (double)(int32_t)(uint32_t)x->bits;
    case CHK_ELEM_U32:
        return (double)(uint32_t)x->bits;
    default: {
        uint32_t w = (uint32_t)x->bits;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    }
}

uint64_t chk_ulp_distance(const void *a, const void *b, uint32_t e)
{
    if (e >= N_ELEM)
        return UINT64_MAX;
    struct elem x = elem_load(a, e), y = elem_load(b, e);
    if (!x.exp_bits) {
        int64_t u = x.is_signed ? (int32_t)(uint32_t)x.bits : (int64_t)x.bits;
        int64_t v = y.is_signed ? (int32_t)(uint32_t)y.bits : (int64_t)y.bits;
        return u > v ? (uint64_t)(u - v) : (uint64_t)(v - u);
    }
    int na = elem_is_nan(&x), nb = elem_is_nan(&y);
    if (na || nb)
        return na && nb ? 0 : UINT64_MAX;
    uint64_t kx = elem_key(&x), ky = elem_key(&y);
    return kx > ky ? kx - ky : ky - kx;
}

int chk_compare_bytes(const void *a, const void *b, size_t len_a, size_t len_b, uint32_t elem,
                      const struct chk_tolerance *tol, int *within, double *max_diff)
{
    *within = 0;
    *max_diff = 0;
    if (elem >= N_ELEM)
        return chk__fail(SBT_EINVAL, "element type %u unknown", elem);
    if (len_a != len_b) {
        *max_diff = INFINITY;
        return 0;
    }
    const uint8_t *pa = a, *pb = b;
    if (!tol || tol->kind == CHK_TOL_BITWISE) {
        size_t nd = 0;
        for (size_t i = 0; i < len_a; i++)
            nd += pa[i] != pb[i];
        *max_diff = (double)nd;
        *within = nd == 0;
        return 0;
    }
    size_t es = chk_elem_size(elem), n = len_a / es; /* elem checked above: es > 0 */
    int ok = len_a % es == 0 ? 1 : memcmp(pa + n * es, pb + n * es, len_a % es) == 0;
    uint64_t worst_ulp = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(pa + i * es, pb + i * es, es) == 0)
            continue;
        if (tol->kind == CHK_TOL_ULP) {
            uint64_t d = chk_ulp_distance(pa + i * es, pb + i * es, elem);
            if (d > worst_ulp)
                worst_ulp = d;
            if (d > tol->ulps)
                ok = 0;
            continue;
        }
        struct elem ex = elem_load(pa + i * es, elem), ey = elem_load(pb + i * es, elem);
        double x = elem_value(&ex, elem), y = elem_value(&ey, elem), d;
        if (isnan(x) || isnan(y)) {
            d = isnan(x) && isnan(y) ? 0 : INFINITY;
        } else if (isinf(x) || isinf(y)) {
            d = x == y ? 0 : INFINITY;
        } else if (tol->kind == CHK_TOL_ABS) {
            d = fabs(x - y);
        } else {
            double m = fmax(fabs(x), fabs(y));
            d = m > 0 ? fabs(x - y) / m : 0;
        }
        if (d > worst)
            worst = d;
        if (!(d <= tol->eps))
            ok = 0;
    }
    *max_diff =
        tol->kind == CHK_TOL_ULP ? (worst_ulp == UINT64_MAX ? INFINITY : (double)worst_ulp) : worst;
    *within = ok;
    return 0;
}
