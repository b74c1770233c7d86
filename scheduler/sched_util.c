/*
 * scheduler/sched_util.c — the small pieces every scheduler file uses: the allocation hook,
 * the thread-local error message, names of edge reasons and findings, and range/duration
 * helpers. (Its maps and byte-interval sets are the project's: format/sbt_map.h,
 * format/sbt_iset.h.)
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

/* ========================================================================================== */
/* Allocation and errors                                                                      */
/* ========================================================================================== */

static struct sbt_alloc_hooks hooks = {malloc, realloc, free};

void sched_set_alloc_hooks(const struct sbt_alloc_hooks *h)
{
    if (h)
        hooks = *h;
    else
        hooks = (struct sbt_alloc_hooks){malloc, realloc, free};
}

void *sched__malloc(size_t n)
{
    return hooks.malloc_fn(n ? n : 1);
}

void *sched__calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = sched__malloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *sched__realloc(void *p, size_t n)
{
    return hooks.realloc_fn(p, n ? n : 1);
}

void sched__free(void *p)
{
    if (p)
        hooks.free_fn(p);
}

static _Thread_local char errbuf[512];

const char *sched_errmsg(void)
{
    return errbuf[0] ? errbuf : "no error";
}

int sched__fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return status;
}

int sched__fail_sbt(int status)
{
    return sched__fail(status, "%s", sbt_errmsg());
}

int sched__grow64_slow(void **p, size_t elem, uint64_t *cap, uint64_t need)
{
    uint64_t nc = *cap ? *cap : 8;
    while (nc < need)
        nc *= 2;
    if (nc > SIZE_MAX / elem)
        return sched__fail(SBT_ENOMEM, "array of %llu elements is too large",
                           (unsigned long long)nc);
    void *q = sched__realloc(*p, (size_t)(nc * elem));
    if (!q)
        return sched__fail(SBT_ENOMEM, "out of memory growing an array to %llu elements",
                           (unsigned long long)nc);
    *p = q;
    *cap = nc;
    return 0;
}

int sched__grow_slow(void **p, size_t elem, uint32_t *cap, uint64_t need)
{
    if (need > UINT32_MAX / 2)
        return sched__fail(SBT_ELIMIT, "array of %llu elements > limit %u",
                           (unsigned long long)need, UINT32_MAX / 2);
    uint64_t c = *cap;
    int st = sched__grow64(p, elem, &c, need);
    if (st == 0)
        *cap = (uint32_t)c;
    return st;
}

/* ========================================================================================== */
/* Names                                                                                      */
/* ========================================================================================== */

const char *sched_dep_name(uint32_t r)
{
    static const char *names[] = {"none",
#define SCHED__DEP_NAME(name, s, d) s,
                                  SCHED_DEP_MAP(SCHED__DEP_NAME)
#undef SCHED__DEP_NAME
    };
    return r < SCHED_DEP__COUNT ? names[r] : "?";
}

const char *sched_dep_desc(uint32_t r)
{
    static const char *names[] = {"none",
#define SCHED__DEP_DESC(name, s, d) d,
                                  SCHED_DEP_MAP(SCHED__DEP_DESC)
#undef SCHED__DEP_DESC
    };
    return r < SCHED_DEP__COUNT ? names[r] : "?";
}

const char *sched_finding_name(uint32_t k)
{
    static const char *names[] = {
#define SCHED__F_NAME(name, sev, s) s,
        SCHED_FINDING_MAP(SCHED__F_NAME)
#undef SCHED__F_NAME
    };
    return k < SCHED_F__COUNT ? names[k] : "?";
}

uint32_t sched_finding_severity(uint32_t k)
{
    static const uint32_t sev[] = {
#define SCHED__F_SEV(name, sv, s) sv,
        SCHED_FINDING_MAP(SCHED__F_SEV)
#undef SCHED__F_SEV
    };
    return k < SCHED_F__COUNT ? sev[k] : SCHED_ERROR;
}

const char *sched_severity_name(uint32_t s)
{
    return s == SCHED_NOTE ? "note" : s == SCHED_WARNING ? "warning" : "error";
}

/* ========================================================================================== */
/* Ranges and durations                                                                       */
/* ========================================================================================== */

int sched_range_contains(const struct sbt_range *r, const struct sbt_op *op)
{
    if (!r)
        return 1;
    if (r->has_seq && (op->seq < r->seq_begin || op->seq >= r->seq_end))
        return 0;
    if (r->stream && op->stream != r->stream)
        return 0;
    if (r->has_time) {
        uint64_t b, e;
        sbt_op_span(op, &b, &e);
        /* an instant op (b == e) is in [t_begin, t_end) if b is */
        if (e == b ? (b < r->t_begin || b >= r->t_end) : (e <= r->t_begin || b >= r->t_end))
            return 0;
    }
    return 1;
}

int sched_range_bounds(const sbt_reader *r, const struct sbt_range *range, uint64_t *lo,
                       uint64_t *hi)
{
    const struct sbt_info *in = sbt_reader_info(r);
    *lo = in->seq_first;
    *hi = in->seq_end;
    if (!range)
        return 0;
    if (range->has_seq) {
        if (range->seq_begin > *lo)
            *lo = range->seq_begin;
        if (range->seq_end < *hi)
            *hi = range->seq_end;
    }
    if (range->has_time) {
        uint64_t n = 0, tlo = UINT64_MAX, thi = 0;
        const struct sbt_chunk_info *c = sbt_reader_chunks(r, &n);
        for (uint64_t i = 0; i < n; i++) {
            if (!(c[i].content & SBT_CHUNK_OPS) || !c[i].n_ops)
                continue;
            if (c[i].t_max < range->t_begin || c[i].t_min >= range->t_end)
                continue;
            if (c[i].seq_first < tlo)
                tlo = c[i].seq_first;
            if (c[i].seq_first + c[i].n_ops > thi)
                thi = c[i].seq_first + c[i].n_ops;
        }
        if (tlo == UINT64_MAX)
            tlo = thi = *lo;
        if (tlo > *lo)
            *lo = tlo;
        if (thi < *hi)
            *hi = thi;
    }
    if (*hi < *lo)
        *hi = *lo;
    return 0;
}

uint64_t sched_op_duration(const struct sbt_op *op)
{
    switch (op->kind) {
    case SBT_OP_EVENT_RECORD:
    case SBT_OP_EVENT_WAIT:
    case SBT_OP_SIGNAL:
    case SBT_OP_WAIT:
    case SBT_OP_STREAM_SYNC:
    case SBT_OP_DEVICE_SYNC:
    case SBT_OP_MARKER:
    case SBT_OP_STREAM_CREATE:
    case SBT_OP_STREAM_DESTROY:
    case SBT_OP_SUBMIT:
        return 0;
    default:
        break;
    }
    if ((op->flags & SBT_OPF_DEV_TIME) && op->dev_end >= op->dev_begin)
        return op->dev_end - op->dev_begin;
    return op->host_end >= op->host_begin ? op->host_end - op->host_begin : 0;
}
