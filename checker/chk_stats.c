/*
 * checker/chk_stats.c — the statistics behind the timing gate: quartiles, MAD, an
 * order-statistic confidence interval of the median, the Mann-Whitney U test and the sign test;
 * and element-wise comparison of output bytes under a tolerance.
 *
 * References: Conover, "Practical Nonparametric Statistics" (3rd ed.): the median CI from
 * binomial order statistics (3.2), the U test and its normal approximation with ties (5.1).
 * The exact U distribution is the coefficient list of the Gaussian binomial [n+m choose n]_q,
 * built as prod_{i=1..n} (1 - q^(m+i)) / (1 - q^i) in modular uint64 arithmetic (exact while the
 * true counts stay below 2^64).
 */
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

double chk_sign_test(uint64_t k, uint64_t n)
{
    if (k == 0)
        return 1.0;
    return 1.0 - binom_cdf_half(k - 1, n);
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

/* P(U >= u) under H0, exact: counts of U values are the coefficients of [n+m choose n]_q. */
static double u_exact_upper(size_t n, size_t m, double u)
{
    size_t top = n * m;
    uint64_t *c = calloc(top + 1, sizeof *c);
    if (!c)
        return -1;
    c[0] = 1;
    for (size_t i = 1; i <= n; i++) {
        size_t a = m + i; /* multiply by (1 - q^a) */
        for (size_t t = top; t >= a; t--)
            c[t] -= c[t - a];
        for (size_t t = i; t <= top; t++) /* divide by (1 - q^i) */
            c[t] += c[t - i];
    }
    double total = 0, upper = 0;
    for (size_t t = 0; t <= top; t++) {
        total += (double)c[t];
        if ((double)t >= u - 1e-9)
            upper += (double)c[t];
    }
    free(c);
    return upper / total;
}

double chk_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, double *u_out)
{
    if (u_out)
        *u_out = 0;
    if (!nx || !ny)
        return 1.0;
    size_t n = nx + ny;
    struct ranked *r = malloc(n * sizeof *r);
    if (!r)
        return 1.0;
    for (size_t i = 0; i < nx; i++)
        r[i] = (struct ranked){x[i], 1};
    for (size_t i = 0; i < ny; i++)
        r[nx + i] = (struct ranked){y[i], 0};
    qsort(r, n, sizeof *r, cmp_ranked);
    /* midranks; tie term sum(t^3 - t) for the variance */
    double rank_x = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && r[j].v == r[i].v)
            j++;
        double mid = ((double)i + 1 + (double)j) / 2, t = (double)(j - i);
        for (size_t k = i; k < j; k++)
            if (r[k].from_x)
                rank_x += mid;
        ties += t * t * t - t;
        i = j;
    }
    free(r);
    double u = rank_x - (double)nx * ((double)nx + 1) / 2;
    if (u_out)
        *u_out = u;
    /* exact when there are no ties and the counts fit: C(n, nx) < 2^63 */
    double lc = lgamma((double)n + 1) - lgamma((double)nx + 1) - lgamma((double)ny + 1);
    if (ties == 0 && lc < 63 * log(2.0) && (double)nx * (double)ny <= 4e6) {
        double p = u_exact_upper(nx, ny, u);
        if (p >= 0)
            return p;
    }
    double mu = (double)nx * (double)ny / 2;
    double nn = (double)n;
    double var = (double)nx * (double)ny / 12 * ((nn + 1) - ties / (nn * (nn - 1)));
    if (var <= 0)
        return u > mu ? 0.0 : 1.0;
    double z = (u - mu - 0.5) / sqrt(var);
    return 0.5 * erfc(z / sqrt(2.0));
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
    char *end = NULL;
    double v = colon ? strtod(colon + 1, &end) : 0;
    if (!colon || end == colon + 1 || *end || !(v >= 0) || !isfinite(v))
        return chk__fail(SBT_EINVAL,
                         "tolerance '%s': expected bitwise, ulp:K, abs:E or rel:E (K, E >= 0)", s);
    size_t klen = (size_t)(colon - s);
    if (klen == 3 && !strncmp(s, "ulp", 3)) {
        if (v != floor(v))
            return chk__fail(SBT_EINVAL, "tolerance '%s': ULPs must be a whole number", s);
        out->kind = CHK_TOL_ULP;
    } else if (klen == 3 && !strncmp(s, "abs", 3)) {
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

int chk_elem_parse(const char *s, uint32_t *out)
{
    for (uint32_t i = 0; i < sizeof elem_names / sizeof elem_names[0]; i++)
        if (s && !strcmp(s, elem_names[i])) {
            *out = i;
            return 0;
        }
    return chk__fail(SBT_EINVAL, "element type '%s': expected f32, f16, bf16, f64, i32 or u32",
                     s ? s : "");
}

const char *chk_elem_name(uint32_t e)
{
    return e < sizeof elem_names / sizeof elem_names[0] ? elem_names[e] : "?";
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

/* Element value as double, and its position on the ordered integer line of its format (for
 * ULP distances: adjacent floats differ by 1). */
static void elem_at(const uint8_t *p, uint32_t e, double *v, int64_t *ord)
{
    switch (e) {
    case CHK_ELEM_F16:
    case CHK_ELEM_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        if (e == CHK_ELEM_F16) {
            *v = half_to_double(h);
        } else {
            uint32_t w = (uint32_t)h << 16;
            float f;
            memcpy(&f, &w, 4);
            *v = f;
        }
        *ord = (h & 0x8000) ? -(int64_t)(h & 0x7fff) : (int64_t)h;
        break;
    }
    case CHK_ELEM_F64: {
        double d;
        int64_t i;
        memcpy(&d, p, 8);
        memcpy(&i, p, 8);
        *v = d;
        *ord = i < 0 ? -(i & INT64_MAX) : i;
        break;
    }
    case CHK_ELEM_I32: {
        int32_t i;
        memcpy(&i, p, 4);
        *v = i, *ord = i;
        break;
    }
    case CHK_ELEM_U32: {
        uint32_t u;
        memcpy(&u, p, 4);
        *v = u, *ord = u;
        break;
    }
    default: {
        float f;
        int32_t i;
        memcpy(&f, p, 4);
        memcpy(&i, p, 4);
        *v = f;
        *ord = i < 0 ? -(int64_t)(i & INT32_MAX) : i;
        break;
    }
    }
}

int chk_compare_bytes(const void *a, const void *b, size_t len_a, size_t len_b, uint32_t elem,
                      const struct chk_tolerance *tol, int *within, double *max_diff)
{
    *within = 0;
    *max_diff = 0;
    if (elem >= sizeof elem_size / sizeof elem_size[0])
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
    size_t es = elem_size[elem], n = len_a / es;
    int ok = len_a % es == 0 ? 1 : memcmp(pa + n * es, pb + n * es, len_a % es) == 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double x, y, d;
        int64_t ox, oy;
        elem_at(pa + i * es, elem, &x, &ox);
        elem_at(pb + i * es, elem, &y, &oy);
        if (memcmp(pa + i * es, pb + i * es, es) == 0)
            continue;
        if (isnan(x) || isnan(y)) {
            d = isnan(x) && isnan(y) ? 0 : INFINITY;
        } else if (tol->kind == CHK_TOL_ULP) {
            d = fabs((double)ox - (double)oy);
        } else if (tol->kind == CHK_TOL_ABS) {
            d = fabs(x - y);
        } else {
            double m = fmax(fabs(x), fabs(y));
            d = m > 0 ? fabs(x - y) / m : 0;
            if (isinf(x) || isinf(y))
                d = x == y ? 0 : INFINITY;
        }
        if (d > worst || isnan(d))
            worst = d;
        if (!(d <= tol->eps))
            ok = 0;
    }
    *max_diff = worst;
    *within = ok;
    return 0;
}
