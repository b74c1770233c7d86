/*
 * scheduler/sched_int.h — what the scheduler's files share: allocation through the module
 * hook, the error buffer and growable arrays (its maps and byte-interval sets are the
 * project's: format/sbt_map.h, format/sbt_iset.h). Only scheduler/ includes this.
 */
#ifndef REPRISE_SCHED_INT_H
#define REPRISE_SCHED_INT_H

#include <stddef.h>
#include <stdint.h>

#include "format/sbt_iset.h"
#include "format/sbt_map.h"
#include "scheduler/sched.h"

void *sched__malloc(size_t n);
void *sched__calloc(size_t n, size_t size);
void *sched__realloc(void *p, size_t n);
void sched__free(void *p);
/* Fills the message buffer; returns status. */
int sched__fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Copies sbt_errmsg() into the scheduler's buffer; returns status. */
int sched__fail_sbt(int status);

/* Grows *p (of elem bytes each) so that it holds at least need elements. 0 or SBT_ENOMEM.
 * The check that there is room already is inline: these sit on the per-op path. */
int sched__grow_slow(void **p, size_t elem, uint32_t *cap, uint64_t need);
int sched__grow64_slow(void **p, size_t elem, uint64_t *cap, uint64_t need);
static inline int sched__grow(void **p, size_t elem, uint32_t *cap, uint64_t need)
{
    return need <= *cap ? 0 : sched__grow_slow(p, elem, cap, need);
}
static inline int sched__grow64(void **p, size_t elem, uint64_t *cap, uint64_t need)
{
    return need <= *cap ? 0 : sched__grow64_slow(p, elem, cap, need);
}

/* End of an access, saturating on overflow. */
static inline uint64_t sched__end(uint64_t off, uint64_t len)
{
    return len > UINT64_MAX - off ? UINT64_MAX : off + len;
}

/* The race analysis one op at a time (sched_race.c), for sched_graph's declared order:
 * create, add every op in seq order (fn is called per finding of that op, during the add),
 * destroy. A trace without declared order gives an analysis that finds nothing
 * (stats->declared = 0). */
struct sched_ra;
int sched__race_create(sbt_reader *r, void (*fn)(void *ctx, const struct sched_race *f), void *ctx,
                       struct sched_ra **out);
int sched__race_add(struct sched_ra *a, const struct sbt_op *op);
const struct sched_race_stats *sched__race_stats(const struct sched_ra *a);
void sched__race_destroy(struct sched_ra *a);

#endif /* REPRISE_SCHED_INT_H */
