/*
 * scheduler/sched_int.h — what the scheduler's files share: allocation through the module
 * hook, the error buffer, a u64 -> u64 hash map (open addressing, linear probing), growable
 * arrays and sorted byte-interval sets. Only scheduler/ includes this.
 */
#ifndef REPRISE_SCHED_INT_H
#define REPRISE_SCHED_INT_H

#include <stddef.h>
#include <stdint.h>

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

/* ---- u64 -> u64 hash map. Key UINT64_MAX is stored as UINT64_MAX - 1 (bad input only). ---- */
struct sched__map {
    uint64_t *keys; /* key + 1; 0 = empty */
    uint64_t *vals;
    uint64_t cap; /* power of two, or 0 */
    uint64_t n;
};
static inline uint64_t sched__map_hash(uint64_t k)
{
    /* splitmix64 finaliser: seqs and ids are dense, so mix them well */
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    k ^= k >> 31;
    return k;
}
static inline uint64_t sched__map_key(uint64_t key)
{
    return (key == UINT64_MAX ? UINT64_MAX - 1 : key) + 1;
}
/* Pointer to the value of key, or NULL. */
static inline uint64_t *sched__map_get(const struct sched__map *m, uint64_t key)
{
    if (!m->n)
        return NULL;
    uint64_t k = sched__map_key(key), mask = m->cap - 1;
    for (uint64_t i = sched__map_hash(k) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == k)
            return &m->vals[i];
        if (!m->keys[i])
            return NULL;
    }
}
/* Inserts key (value 0 if new) and returns a pointer to its value; *is_new says which. NULL on
 * allocation failure. The pointer is valid until the next put. */
uint64_t *sched__map_put(struct sched__map *m, uint64_t key, int *is_new);
/* Removes key; 1 if it was there. */
int sched__map_del(struct sched__map *m, uint64_t key);
void sched__map_clear(struct sched__map *m);
void sched__map_free(struct sched__map *m);

/* ---- a set of disjoint, sorted byte intervals [b, e) ---- */
struct sched__ival {
    uint64_t b, e;
};
struct sched__iset {
    struct sched__ival *v;
    uint32_t n, cap;
};
/* Adds [b, e) (merging). 0 or SBT_ENOMEM. */
int sched__iset_add(struct sched__iset *s, uint64_t b, uint64_t e);
/* Removes [b, e). 0 or SBT_ENOMEM (a split needs one more interval). */
int sched__iset_sub(struct sched__iset *s, uint64_t b, uint64_t e);
/* 1 if some byte of [b, e) is in s. */
int sched__iset_overlaps(const struct sched__iset *s, uint64_t b, uint64_t e);
uint64_t sched__iset_bytes(const struct sched__iset *s);
void sched__iset_free(struct sched__iset *s);

/* End of an access, saturating on overflow. */
static inline uint64_t sched__end(uint64_t off, uint64_t len)
{
    return len > UINT64_MAX - off ? UINT64_MAX : off + len;
}

#endif /* REPRISE_SCHED_INT_H */
