/*
 * checker/chk_alloc.c — the buffers every checker file writes into: the allocation wrappers
 * (one place to fail an allocation), growable arrays, appending to a fixed-size string, and
 * the thread-local message that every failure leaves for chk_errmsg().
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

static _Thread_local char errbuf[512];

const char *chk_errmsg(void)
{
    return errbuf;
}

int chk__fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return status;
}

int chk__fail_sbt(int status)
{
    return chk__fail(status, "%s", sbt_errmsg());
}

void *chk__malloc(size_t n)
{
    return malloc(n ? n : 1);
}

void *chk__calloc(size_t n, size_t sz)
{
    return calloc(n ? n : 1, sz ? sz : 1);
}

void *chk__realloc(void *p, size_t n)
{
    return realloc(p, n ? n : 1);
}

char *chk__strdup(const char *s)
{
    size_t n = strlen(s ? s : "") + 1;
    char *d = chk__malloc(n);
    if (d)
        memcpy(d, s ? s : "", n);
    return d;
}

int chk__grow(void **arr, uint32_t *cap, uint32_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    uint64_t nc = *cap ? (uint64_t)*cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    if (nc > UINT32_MAX)
        return chk__fail(SBT_ELIMIT, "array of %u elements is too large", need);
    void *p = chk__realloc(*arr, (size_t)nc * sz);
    if (!p)
        return chk__fail(SBT_ENOMEM, "out of memory growing an array to %" PRIu64 " elements", nc);
    *arr = p;
    *cap = (uint32_t)nc;
    return 0;
}

void chk__putf(char *buf, size_t cap, size_t *pos, const char *fmt, ...)
{
    if (*pos >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *pos, cap - *pos, fmt, ap);
    va_end(ap);
    if (n > 0)
        *pos = *pos + (size_t)n < cap ? *pos + (size_t)n : cap - 1;
}
