/*
 * format/sbt_align.c — clock pairs of a trace and their least-squares fit to realtime
 * (format/sbt_align.h, FORMAT.md 3.5 and 3.6).
 *
 * The fit works on differences from the first pair (ns, as doubles: exact below 2^53 ns, 104
 * days), never on absolute 64-bit times, which a double would round to 256 ns.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sbt_align.h"
#include "format/sbt_int.h"

/* "123" -> 123; 0 when s is not a whole decimal number (with *end at what follows it). */
static int parse_u64(const char *s, const char **end, uint64_t *v)
{
    if (*s < '0' || *s > '9')
        return -1;
    uint64_t x = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (x > (UINT64_MAX - 9) / 10)
            return -1;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    *v = x;
    *end = s;
    return 0;
}

static int meta_u64(const sbt_reader *r, const char *key, uint64_t *v)
{
    const char *s = sbt_reader_meta_get(r, key), *end;
    if (!s)
        return 0;
    if (parse_u64(s, &end, v) < 0 || *end)
        return sbt__fail(SBT_ECORRUPT, "metadata %s: '%.40s' is not a number of ns", key, s);
    return 1;
}

int sbt_clock_pairs(const sbt_reader *r, struct sbt_clock_pair **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    uint32_t n_meta = 0, cap = 0, got = 0;
    const struct sbt_meta *m = sbt_reader_meta(r, &n_meta);
    struct sbt_clock_pair *p = NULL;
    for (uint32_t i = 0; i < n_meta; i++) {
        const char *k = sbt_reader_string(r, m[i].key);
        if (!k || strncmp(k, "clock.sync.", 11) != 0)
            continue;
        const char *idx = k + 11, *end;
        uint64_t id;
        if (parse_u64(idx, &end, &id) < 0 || *end || id >= (1u << 30))
            continue; /* another key of the family: not ours to judge */
        const char *v = sbt_reader_string(r, m[i].value);
        struct sbt_clock_pair q;
        if (!v || parse_u64(v, &end, &q.mono_ns) < 0 || *end != ' ' ||
            parse_u64(end + 1, &end, &q.real_ns) < 0 || *end != ' ' ||
            parse_u64(end + 1, &end, &q.err_ns) < 0 || (*end && *end != ' ')) {
            sbt__free(p);
            return sbt__fail(SBT_ECORRUPT, "metadata %s: '%.60s' is not 'MONO REAL ERR WHY'", k,
                             v ? v : "");
        }
        if (got == cap) {
            cap = cap ? cap * 2 : 16;
            struct sbt_clock_pair *np = sbt__realloc(p, (size_t)cap * sizeof *p);
            if (!np) {
                sbt__free(p);
                return sbt__fail(SBT_ENOMEM, "clock pairs: no memory for %u", cap);
            }
            p = np;
        }
        p[got++] = q;
    }
    if (!got) { /* older traces: the epoch is one pair */
        uint64_t mono, real;
        int a = meta_u64(r, "clock.epoch_monotonic_ns", &mono);
        int b = a < 0 ? a : meta_u64(r, "clock.epoch_realtime_ns", &real);
        if (a < 0 || b < 0)
            return a < 0 ? a : b;
        if (!a || !b)
            return 0;
        if (!(p = sbt__malloc(sizeof *p)))
            return sbt__fail(SBT_ENOMEM, "clock pairs: no memory");
        p[0] = (struct sbt_clock_pair){.mono_ns = mono, .real_ns = real, .err_ns = 0};
        got = 1;
    }
    *out = p;
    *n = got;
    return 0;
}

int sbt_clock_fit_pairs(const struct sbt_clock_pair *p, uint32_t n, uint64_t epoch_ns,
                        struct sbt_clock_fit *out)
{
    memset(out, 0, sizeof *out);
    out->b = 1;
    if (!n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (p[i].mono_ns < epoch_ns)
            return sbt__fail(SBT_EINVAL,
                             "clock pair %u: monotonic %" PRIu64 " before the epoch %" PRIu64, i,
                             p[i].mono_ns, epoch_ns);
    out->n_pairs = n;
    out->t_base = p[0].mono_ns - epoch_ns;
    out->real_base = p[0].real_ns;
    double mx = 0, my = 0, max_err = 0;
    for (uint32_t i = 0; i < n; i++) {
        mx += (double)(int64_t)(p[i].mono_ns - p[0].mono_ns);
        my += (double)(int64_t)(p[i].real_ns - p[0].real_ns);
        if ((double)p[i].err_ns > max_err)
            max_err = (double)p[i].err_ns;
    }
    mx /= n;
    my /= n;
    double sxx = 0, sxy = 0;
    for (uint32_t i = 0; i < n; i++) {
        double x = (double)(int64_t)(p[i].mono_ns - p[0].mono_ns) - mx;
        double y = (double)(int64_t)(p[i].real_ns - p[0].real_ns) - my;
        sxx += x * x;
        sxy += x * y;
    }
    if (n == 1 || sxx < 1.0) {
        /* one instant: no slope to fit. Pairs all at one MONO must agree on REAL */
        for (uint32_t i = 1; i < n; i++)
            if (p[i].real_ns != p[0].real_ns)
                return sbt__fail(SBT_EINVAL,
                                 "clock pairs 0 and %u: the same monotonic time, realtimes %" PRIu64
                                 " and %" PRIu64,
                                 i, p[0].real_ns, p[i].real_ns);
        out->source = p[0].err_ns || n > 1 ? SBT_CLOCK_PAIRS : SBT_CLOCK_EPOCH;
        out->a = 0;
        out->b = 1;
        out->err_ns = max_err;
        out->drift_err_ppm = SBT_CLOCK_MAX_DRIFT_PPM;
        return 0;
    }
    out->source = SBT_CLOCK_PAIRS;
    out->b = sxy / sxx;
    out->a = my - out->b * mx;
    double max_res = 0;
    for (uint32_t i = 0; i < n; i++) {
        double x = (double)(int64_t)(p[i].mono_ns - p[0].mono_ns);
        double y = (double)(int64_t)(p[i].real_ns - p[0].real_ns);
        double res = fabs(y - (out->a + out->b * x));
        if (res > max_res)
            max_res = res;
    }
    out->err_ns = max_res + max_err;
    return 0;
}

int sbt_clock_fit_trace(const sbt_reader *r, struct sbt_clock_fit *out)
{
    memset(out, 0, sizeof *out);
    out->b = 1;
    uint64_t epoch;
    int st = meta_u64(r, "clock.epoch_monotonic_ns", &epoch);
    if (st <= 0)
        return st;
    struct sbt_clock_pair *p;
    uint32_t n;
    if ((st = sbt_clock_pairs(r, &p, &n)) < 0)
        return st;
    st = sbt_clock_fit_pairs(p, n, epoch, out);
    sbt__free(p);
    return st;
}

void sbt_clock_map(const struct sbt_clock_fit *f, uint64_t t, double *off_ns)
{
    double dt = t >= f->t_base ? (double)(t - f->t_base) : -(double)(f->t_base - t);
    *off_ns = f->a + f->b * dt;
}

double sbt_clock_bound(const struct sbt_clock_fit *f, uint64_t t)
{
    double dt = t >= f->t_base ? (double)(t - f->t_base) : (double)(f->t_base - t);
    return f->err_ns + f->drift_err_ppm * dt / 1e6;
}
