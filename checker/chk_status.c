/*
 * checker/chk_status.c — the per-op status map: 2 bits per reference seq (unknown, matched,
 * mismatched, known-flaky), filled by the comparisons (chk_check.c, chk_diff.c) and read by
 * the first-divergence pass (chk_roots.c). Two bits, because it holds every op of the range
 * (a billion ops take 250 MB).
 */
#include <inttypes.h>
#include <string.h>

#include "checker/chk_int.h"

int chk__status_init(struct chk_status *s, uint64_t base, uint64_t end)
{
    memset(s, 0, sizeof *s);
    s->base = base;
    s->n = end > base ? end - base : 0;
    s->last_mismatch = UINT64_MAX;
    if (s->n > (uint64_t)SIZE_MAX / 2)
        return chk__fail(SBT_ELIMIT, "%" PRIu64 " ops: too many for the status map", s->n);
    s->bits = chk__calloc((size_t)(s->n / 4 + 1), 1);
    if (!s->bits)
        return chk__fail(SBT_ENOMEM, "out of memory for the status of %" PRIu64 " ops", s->n);
    return 0;
}

void chk__status_set(struct chk_status *s, uint64_t seq, uint32_t v)
{
    if (seq < s->base || seq - s->base >= s->n)
        return;
    uint64_t i = seq - s->base;
    uint8_t *b = &s->bits[i / 4];
    unsigned sh = (unsigned)(i % 4) * 2;
    uint32_t old = (*b >> sh) & 3;
    if (old == CHK_ST_MISMATCH)
        return; /* a mismatch is never downgraded by a later comparison of the same op */
    *b = (uint8_t)((*b & ~(3u << sh)) | (v << sh));
    if (v == CHK_ST_MISMATCH) {
        s->n_mismatch++;
        if (s->last_mismatch == UINT64_MAX || seq > s->last_mismatch)
            s->last_mismatch = seq;
    }
}

uint32_t chk__status_get(const struct chk_status *s, uint64_t seq)
{
    if (!s->bits || seq < s->base || seq - s->base >= s->n)
        return CHK_ST_UNKNOWN;
    uint64_t i = seq - s->base;
    return (s->bits[i / 4] >> ((i % 4) * 2)) & 3;
}

void chk__status_free(struct chk_status *s)
{
    free(s->bits);
    s->bits = NULL;
}
