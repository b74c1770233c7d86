/*
 * format/sbt_iset.h — the one byte-interval set of the project: disjoint, sorted intervals
 * [b, e), merged on insertion. The scheduler's written/read byte sets, the Vulkan capture's
 * record of every byte device work ever wrote. Allocation through the format's hooks.
 */
#ifndef REPRISE_SBT_ISET_H
#define REPRISE_SBT_ISET_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbt_ival {
    uint64_t b, e;
};
/* Zero-initialise it ({0}). */
struct sbt_iset {
    struct sbt_ival *v;
    uint32_t n, cap;
};
/* Adds [b, e), merging with the intervals it touches. 0 or SBT_ENOMEM. */
int sbt_iset_add(struct sbt_iset *s, uint64_t b, uint64_t e);
/* Removes [b, e). 0 or SBT_ENOMEM (a split needs one more interval). */
int sbt_iset_sub(struct sbt_iset *s, uint64_t b, uint64_t e);
/* 1 if some byte of [b, e) is in s. */
int sbt_iset_overlaps(const struct sbt_iset *s, uint64_t b, uint64_t e);
/* The bytes in s. */
uint64_t sbt_iset_bytes(const struct sbt_iset *s);
void sbt_iset_free(struct sbt_iset *s);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SBT_ISET_H */
