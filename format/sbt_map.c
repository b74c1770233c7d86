/*
 * format/sbt_map.c — the project's hash map (format/sbt_map.h): growth, insertion,
 * backward-shift deletion and iteration.
 */
#include <string.h>

#include "format/sbt_int.h"
#include "format/sbt_map.h"

static int resize(struct sbt_map *m, uint64_t ncap)
{
    if (ncap > SIZE_MAX / sizeof(uint64_t))
        return sbt__fail(SBT_ENOMEM, "out of memory growing a map to %llu slots",
                         (unsigned long long)ncap);
    uint64_t *nk = sbt__calloc((size_t)ncap, sizeof *nk);
    uint64_t *nv = sbt__malloc((size_t)ncap * sizeof *nv);
    if (!nk || !nv) {
        sbt__free(nk);
        sbt__free(nv);
        return sbt__fail(SBT_ENOMEM, "out of memory growing a map to %llu slots",
                         (unsigned long long)ncap);
    }
    for (uint64_t j = 0; j < m->cap; j++) {
        if (!m->keys[j])
            continue;
        uint64_t i = sbt_map_hash(m->keys[j]) & (ncap - 1);
        while (nk[i])
            i = (i + 1) & (ncap - 1);
        nk[i] = m->keys[j];
        nv[i] = m->vals[j];
    }
    sbt__free(m->keys);
    sbt__free(m->vals);
    m->keys = nk, m->vals = nv, m->cap = ncap;
    return 0;
}

uint64_t *sbt_map_put(struct sbt_map *m, uint64_t key, int *is_new)
{
    if (key == UINT64_MAX) {
        if (is_new)
            *is_new = !m->has_max;
        if (!m->has_max)
            m->has_max = 1, m->max_val = 0;
        return &m->max_val;
    }
    if ((m->n + 1) * 4 > m->cap * 3 && resize(m, m->cap ? m->cap * 2 : 16))
        return NULL;
    uint64_t k = key + 1, mask = m->cap - 1;
    uint64_t i = sbt_map_hash(k) & mask;
    for (; m->keys[i]; i = (i + 1) & mask)
        if (m->keys[i] == k) {
            if (is_new)
                *is_new = 0;
            return &m->vals[i];
        }
    m->keys[i] = k;
    m->vals[i] = 0;
    m->n++;
    if (is_new)
        *is_new = 1;
    return &m->vals[i];
}

int sbt_map_del(struct sbt_map *m, uint64_t key)
{
    if (key == UINT64_MAX) {
        int had = m->has_max;
        m->has_max = 0;
        return had;
    }
    if (!m->n)
        return 0;
    uint64_t k = key + 1, mask = m->cap - 1;
    uint64_t i = sbt_map_hash(k) & mask;
    while (m->keys[i] != k) {
        if (!m->keys[i])
            return 0;
        i = (i + 1) & mask;
    }
    /* backward-shift deletion: each later key of the probe chain that may move into the hole
     * does, so every key stays reachable from its home slot and no tombstone is needed */
    for (uint64_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        uint64_t home = sbt_map_hash(m->keys[j]) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
    m->n--;
    return 1;
}

int sbt_map_next(const struct sbt_map *m, uint64_t *pos, uint64_t *key, uint64_t *val)
{
    for (; *pos < m->cap; (*pos)++)
        if (m->keys[*pos]) {
            *key = m->keys[*pos] - 1;
            *val = m->vals[*pos];
            (*pos)++;
            return 1;
        }
    if (*pos == m->cap && m->has_max) {
        *key = UINT64_MAX;
        *val = m->max_val;
        (*pos)++;
        return 1;
    }
    return 0;
}

void sbt_map_clear(struct sbt_map *m)
{
    if (m->cap)
        memset(m->keys, 0, (size_t)m->cap * sizeof *m->keys);
    m->n = 0;
    m->has_max = 0;
}

void sbt_map_free(struct sbt_map *m)
{
    sbt__free(m->keys);
    sbt__free(m->vals);
    memset(m, 0, sizeof *m);
}
