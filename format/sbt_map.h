/*
 * format/sbt_map.h — the one hash map of the project: 64-bit keys to 64-bit values (or
 * pointers), open addressing with linear probing and backward-shift deletion (no tombstones:
 * deleting and putting again can never leave a key twice or a stale entry behind). Every
 * module uses it: the scheduler's maps of ids, the capture libraries' handle tables, replay's
 * id maps. Not thread-safe: its user holds whatever lock guards it. Allocation goes through
 * the format's hooks (sbt_set_alloc_hooks); a failure is SBT_ENOMEM with sbt_errmsg() set.
 */
#ifndef REPRISE_SBT_MAP_H
#define REPRISE_SBT_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "format/sbt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Zero-initialise it ({0}). */
struct sbt_map {
    uint64_t *keys; /* key + 1; 0 = empty (key UINT64_MAX lives in has_max/max_val) */
    uint64_t *vals;
    uint64_t cap; /* a power of two, or 0 */
    uint64_t n;   /* keys in the table (without UINT64_MAX) */
    int has_max;
    uint64_t max_val;
};

static inline uint64_t sbt_map_hash(uint64_t k)
{
    /* splitmix64's finaliser: ids are dense and handles aligned, so mix them well */
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    k ^= k >> 31;
    return k;
}

/* Pointer to the value of key, or NULL. Valid until the next put or del. */
static inline uint64_t *sbt_map_get(const struct sbt_map *m, uint64_t key)
{
    if (key == UINT64_MAX)
        return m->has_max ? (uint64_t *)(uintptr_t)&m->max_val : NULL;
    if (!m->n)
        return NULL;
    uint64_t k = key + 1, mask = m->cap - 1;
    for (uint64_t i = sbt_map_hash(k) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == k)
            return &m->vals[i];
        if (!m->keys[i])
            return NULL;
    }
}

/* Inserts key (value 0 when new) and returns a pointer to its value, valid until the next put
 * or del; *is_new (may be NULL) says which. NULL when the table cannot grow (SBT_ENOMEM). */
uint64_t *sbt_map_put(struct sbt_map *m, uint64_t key, int *is_new);
/* Removes key; 1 if it was there. */
int sbt_map_del(struct sbt_map *m, uint64_t key);
/* The number of keys. */
static inline uint64_t sbt_map_count(const struct sbt_map *m)
{
    return m->n + (m->has_max ? 1 : 0);
}
/* Iteration, in no particular order: start with *pos = 0; 1 with *key and *val set, 0 at the
 * end. The map must not change during it (collect the keys to delete, then delete them). */
int sbt_map_next(const struct sbt_map *m, uint64_t *pos, uint64_t *key, uint64_t *val);
/* Empties the map, keeps its memory. */
void sbt_map_clear(struct sbt_map *m);
void sbt_map_free(struct sbt_map *m);

/* ---- pointer values ---- */
static inline void *sbt_map_getp(const struct sbt_map *m, uint64_t key)
{
    uint64_t *v = sbt_map_get(m, key);
    return v ? (void *)(uintptr_t)*v : NULL;
}
/* 0, or SBT_ENOMEM. */
static inline int sbt_map_putp(struct sbt_map *m, uint64_t key, const void *p)
{
    uint64_t *v = sbt_map_put(m, key, NULL);
    if (!v)
        return SBT_ENOMEM;
    *v = (uint64_t)(uintptr_t)p;
    return 0;
}
/* Pointer-valued iteration: start with *pos = 0; the next non-NULL value, NULL at the end. The
 * map must not change during it. */
static inline void *sbt_map_nextp(const struct sbt_map *m, uint64_t *pos)
{
    uint64_t k, v;
    while (sbt_map_next(m, pos, &k, &v))
        if (v)
            return (void *)(uintptr_t)v;
    return NULL;
}
/* Removes key and returns its pointer (NULL if it was not there). */
static inline void *sbt_map_delp(struct sbt_map *m, uint64_t key)
{
    void *p = sbt_map_getp(m, key);
    sbt_map_del(m, key);
    return p;
}

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SBT_MAP_H */
