/*
 * checker/chk_strmap.c — a string -> index map: strings owned and numbered in the order they
 * were added, found by open addressing (FNV-1a, linear probing, at most half full). It names
 * the timing groups (chk_timing.c), the keys of op identities (chk_identity.c) and the
 * identities of an expectations section (chk_expect.c).
 */
#include <string.h>

#include "checker/chk_int.h"

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

int chk__strmap_find(struct chk_strmap *m, const char *name, uint32_t *idx, int *added)
{
    if (added)
        *added = 0;
    if (m->n * 2 >= m->n_slot) {
        uint32_t ns = m->n_slot ? m->n_slot * 2 : 64;
        uint32_t *slot = chk__calloc(ns, sizeof *slot);
        if (!slot)
            return chk__fail(SBT_ENOMEM, "out of memory for a name table");
        for (uint32_t i = 0; i < m->n; i++) {
            uint32_t h = (uint32_t)hash_name(m->names[i]) & (ns - 1);
            while (slot[h])
                h = (h + 1) & (ns - 1);
            slot[h] = i + 1;
        }
        free(m->slot);
        m->slot = slot;
        m->n_slot = ns;
    }
    uint32_t h = (uint32_t)hash_name(name) & (m->n_slot - 1);
    while (m->slot[h]) {
        if (!strcmp(m->names[m->slot[h] - 1], name)) {
            *idx = m->slot[h] - 1;
            return 0;
        }
        h = (h + 1) & (m->n_slot - 1);
    }
    int st = chk__grow((void **)&m->names, &m->cap, m->n + 1, sizeof *m->names);
    if (st)
        return st;
    if (!(m->names[m->n] = chk__strdup(name)))
        return chk__fail(SBT_ENOMEM, "out of memory for a name table");
    m->slot[h] = m->n + 1;
    *idx = m->n++;
    if (added)
        *added = 1;
    return 0;
}

uint32_t chk__strmap_get(const struct chk_strmap *m, const char *name)
{
    if (!m->n_slot)
        return UINT32_MAX;
    uint32_t h = (uint32_t)hash_name(name) & (m->n_slot - 1);
    while (m->slot[h]) {
        if (!strcmp(m->names[m->slot[h] - 1], name))
            return m->slot[h] - 1;
        h = (h + 1) & (m->n_slot - 1);
    }
    return UINT32_MAX;
}

void chk__strmap_free(struct chk_strmap *m)
{
    for (uint32_t i = 0; i < m->n; i++)
        free(m->names[i]);
    free(m->names);
    free(m->slot);
    memset(m, 0, sizeof *m);
}
