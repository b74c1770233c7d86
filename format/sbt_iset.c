/*
 * format/sbt_iset.c — the project's byte-interval set (format/sbt_iset.h).
 */
#include <string.h>

#include "format/sbt_int.h"
#include "format/sbt_iset.h"

/* Room for one more interval. 0 or SBT_ENOMEM / SBT_ELIMIT. */
static int grow(struct sbt_iset *s)
{
    if (s->n < s->cap)
        return 0;
    if (s->cap >= UINT32_MAX / 4)
        return sbt__fail(SBT_ELIMIT, "interval set of %u intervals > limit", s->cap);
    uint32_t c = s->cap ? s->cap * 2 : 8;
    struct sbt_ival *v = sbt__realloc(s->v, (size_t)c * sizeof *v);
    if (!v)
        return sbt__fail(SBT_ENOMEM, "out of memory growing an interval set to %u", c);
    s->v = v, s->cap = c;
    return 0;
}

/* First interval with e > x. */
static uint32_t lower(const struct sbt_iset *s, uint64_t x)
{
    uint32_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->v[mid].e > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

int sbt_iset_add(struct sbt_iset *s, uint64_t b, uint64_t e)
{
    if (b >= e)
        return 0;
    /* intervals touching [b, e) merge with it: first with v.e >= b, last with v.b <= e */
    uint32_t i = b ? lower(s, b - 1) : 0, j = i;
    while (j < s->n && s->v[j].b <= e)
        j++;
    if (i < j) {
        if (s->v[i].b < b)
            b = s->v[i].b;
        if (s->v[j - 1].e > e)
            e = s->v[j - 1].e;
        s->v[i] = (struct sbt_ival){b, e};
        memmove(&s->v[i + 1], &s->v[j], (s->n - j) * sizeof *s->v);
        s->n -= j - i - 1;
        return 0;
    }
    int st = grow(s);
    if (st)
        return st;
    memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof *s->v);
    s->v[i] = (struct sbt_ival){b, e};
    s->n++;
    return 0;
}

int sbt_iset_sub(struct sbt_iset *s, uint64_t b, uint64_t e)
{
    if (b >= e)
        return 0;
    uint32_t i = lower(s, b);
    if (i >= s->n || s->v[i].b >= e)
        return 0;
    if (s->v[i].b < b && s->v[i].e > e) { /* split one interval in two */
        int st = grow(s);
        if (st)
            return st;
        memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof *s->v);
        s->n++;
        s->v[i].e = b;
        s->v[i + 1].b = e;
        return 0;
    }
    if (s->v[i].b < b) {
        s->v[i].e = b;
        i++;
    }
    uint32_t j = i;
    while (j < s->n && s->v[j].e <= e)
        j++;
    if (j < s->n && s->v[j].b < e)
        s->v[j].b = e;
    memmove(&s->v[i], &s->v[j], (s->n - j) * sizeof *s->v);
    s->n -= j - i;
    return 0;
}

int sbt_iset_overlaps(const struct sbt_iset *s, uint64_t b, uint64_t e)
{
    if (b >= e || !s->n)
        return 0;
    uint32_t i = lower(s, b);
    return i < s->n && s->v[i].b < e;
}

uint64_t sbt_iset_bytes(const struct sbt_iset *s)
{
    uint64_t t = 0;
    for (uint32_t i = 0; i < s->n; i++)
        t += s->v[i].e - s->v[i].b;
    return t;
}

void sbt_iset_free(struct sbt_iset *s)
{
    sbt__free(s->v);
    memset(s, 0, sizeof *s);
}
