/*
 * format/sbt_state.c — the STATE record (FORMAT.md section 5a): the contents of allocations at
 * a point of a replay, as chunk hashes that name blobs. The writer and the reader share these
 * two functions, so the two sides cannot drift.
 *
 * A decoded state is one malloc'd block: the sbt_state, its allocations, then every index and
 * hash array, so sbt_state_free is one free.
 */
#include <inttypes.h>
#include <stdio.h>

#include "format/sbt_int.h"

/* A state with this many allocations or chunks in all is refused as corrupt: far beyond what a
 * process can map (2^32 allocations; 2^40 chunks of at least one byte each). */
#define MAX_ALLOCS (1ull << 32)

int sbt__enc_state(struct sbt_buf *b, const struct sbt_state *s)
{
    int st = sbt__buf_varint(b, s->seq);
    st = st ? st : sbt__buf_varint(b, s->time);
    st = st ? st : sbt__buf_varint(b, 0); /* flags: none defined */
    st = st ? st : sbt__buf_varint(b, s->n_alloc);
    for (uint32_t i = 0; i < s->n_alloc && !st; i++) {
        const struct sbt_state_alloc *a = &s->alloc[i];
        if (i && a->resource <= s->alloc[i - 1].resource)
            return sbt__fail(SBT_EINVAL,
                             "state at op %" PRIu64 ": resource %" PRIu64 " after resource %" PRIu64
                             " (must increase)",
                             s->seq, a->resource, s->alloc[i - 1].resource);
        if (!a->chunk_bytes || a->chunk_bytes > SBT_MAX_CHUNK_DEFAULT || a->size >= (1ull << 62))
            return sbt__fail(SBT_EINVAL,
                             "state at op %" PRIu64 ": resource %" PRIu64 ": chunk size %" PRIu32
                             " or size %" PRIu64 " out of range (the reader would refuse them)",
                             s->seq, a->resource, a->chunk_bytes, a->size);
        uint64_t n_chunks = a->size / a->chunk_bytes + (a->size % a->chunk_bytes != 0);
        st = sbt__buf_varint(b, a->resource);
        st = st ? st : sbt__buf_varint(b, a->size);
        st = st ? st : sbt__buf_varint(b, a->chunk_bytes);
        st = st ? st : sbt__buf_varint(b, a->n_present);
        uint64_t next = 0;
        for (uint64_t k = 0; k < a->n_present && !st; k++) {
            if (a->index[k] < next || a->index[k] >= n_chunks)
                return sbt__fail(SBT_EINVAL,
                                 "state at op %" PRIu64 ": resource %" PRIu64 ": chunk %" PRIu64
                                 " out of order or past its %" PRIu64 " chunks",
                                 s->seq, a->resource, a->index[k], n_chunks);
            uint8_t h[16];
            sbt__put_hash(h, a->hash[k]);
            st = sbt__buf_varint(b, a->index[k] - next);
            st = st ? st : sbt__buf_put(b, h, 16);
            next = a->index[k] + 1;
        }
    }
    return st;
}

/* Bounds of a record body, checked before anything is allocated from its counts. */
static int too_many(struct sbt__rd *r, uint64_t n, uint64_t min_bytes, const char *what)
{
    if (n > (r->len - r->pos) / min_bytes)
        return sbt__fail(SBT_ECORRUPT,
                         "chunk at offset %" PRIu64 ": STATE record: %" PRIu64
                         " %s do not fit in its %zu bytes left",
                         r->file_off, n, what, r->len - r->pos);
    return 0;
}

int sbt__dec_state(struct sbt__rd *r, struct sbt_state **out)
{
    *out = NULL;
    uint64_t seq, time, flags, n_alloc;
    int st;
    r->what = "STATE record";
    if ((st = sbt__rd_varint(r, &seq)) || (st = sbt__rd_varint(r, &time)) ||
        (st = sbt__rd_varint(r, &flags)) || (st = sbt__rd_varint(r, &n_alloc)))
        return st;
    if (n_alloc >= MAX_ALLOCS || (st = too_many(r, n_alloc, 4, "allocations")))
        return st ? st
                  : sbt__fail(SBT_ECORRUPT,
                              "chunk at offset %" PRIu64 ": STATE record: %" PRIu64 " allocations",
                              r->file_off, n_alloc);
    /* first pass: count chunks, so that one block holds everything */
    size_t save = r->pos;
    uint64_t total = 0;
    for (uint64_t i = 0; i < n_alloc; i++) {
        uint64_t v[4], d;
        for (int k = 0; k < 4; k++)
            if ((st = sbt__rd_varint(r, &v[k])))
                return st;
        if ((st = too_many(r, v[3], 17, "chunks")))
            return st;
        for (uint64_t k = 0; k < v[3]; k++) {
            const uint8_t *h;
            if ((st = sbt__rd_varint(r, &d)) || (st = sbt__rd_bytes(r, 16, &h)))
                return st;
        }
        total += v[3];
    }
    r->pos = save;
    size_t bytes = sizeof(struct sbt_state) + (size_t)n_alloc * sizeof(struct sbt_state_alloc) +
                   (size_t)total * (sizeof(uint64_t) + sizeof(sbt_hash));
    uint8_t *blk = sbt__calloc(1, bytes);
    if (!blk)
        return sbt__fail(SBT_ENOMEM, "out of memory for a state of %" PRIu64 " chunks", total);
    struct sbt_state *s = (struct sbt_state *)blk;
    struct sbt_state_alloc *al = (struct sbt_state_alloc *)(s + 1);
    uint64_t *idx = (uint64_t *)(al + n_alloc);
    sbt_hash *hs = (sbt_hash *)(idx + total);
    s->seq = seq;
    s->time = time;
    s->n_alloc = (uint32_t)n_alloc;
    s->alloc = al;
    for (uint64_t i = 0; i < n_alloc; i++) {
        struct sbt_state_alloc *a = &al[i];
        uint64_t cb;
        if ((st = sbt__rd_varint(r, &a->resource)) || (st = sbt__rd_varint(r, &a->size)) ||
            (st = sbt__rd_varint(r, &cb)) || (st = sbt__rd_varint(r, &a->n_present)))
            goto fail;
        if (i && a->resource <= al[i - 1].resource) {
            st = sbt__fail(SBT_ECORRUPT,
                           "chunk at offset %" PRIu64 ": state at op %" PRIu64 ": resource %" PRIu64
                           " after resource %" PRIu64 " (must increase)",
                           r->file_off, seq, a->resource, al[i - 1].resource);
            goto fail;
        }
        if (cb == 0 || cb > SBT_MAX_CHUNK_DEFAULT || a->size >= (1ull << 62)) {
            st = sbt__fail(SBT_ECORRUPT,
                           "chunk at offset %" PRIu64 ": state at op %" PRIu64 ": resource %" PRIu64
                           ": chunk size %" PRIu64 " or size %" PRIu64 " out of range",
                           r->file_off, seq, a->resource, cb, a->size);
            goto fail;
        }
        a->chunk_bytes = (uint32_t)cb;
        uint64_t n_chunks = a->size / cb + (a->size % cb != 0);
        a->index = idx;
        a->hash = hs;
        uint64_t next = 0;
        for (uint64_t k = 0; k < a->n_present; k++) {
            uint64_t d;
            if ((st = sbt__rd_varint(r, &d)) || (st = sbt__rd_hash(r, &hs[k])))
                goto fail;
            if (d >= n_chunks || next + d >= n_chunks) {
                st = sbt__fail(SBT_ECORRUPT,
                               "chunk at offset %" PRIu64 ": state at op %" PRIu64
                               ": resource %" PRIu64 ": chunk %" PRIu64 " past its %" PRIu64
                               " chunks",
                               r->file_off, seq, a->resource, next + d, n_chunks);
                goto fail;
            }
            idx[k] = next + d;
            next = idx[k] + 1;
        }
        idx += a->n_present;
        hs += a->n_present;
    }
    if (r->pos != r->len) {
        st = sbt__fail(SBT_ECORRUPT,
                       "chunk at offset %" PRIu64 ": state at op %" PRIu64
                       ": %zu bytes left over after its %" PRIu64 " allocations",
                       r->file_off, seq, r->len - r->pos, n_alloc);
        goto fail;
    }
    *out = s;
    return SBT_OK;
fail:
    sbt__free(blk);
    return st;
}

void sbt_state_free(struct sbt_state *s)
{
    sbt__free(s);
}
