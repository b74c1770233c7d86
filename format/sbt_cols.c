/*
 * format/sbt_cols.c — the columnar op codec of OPS records (FORMAT.md "OPS record").
 *
 * Ops are stored column by column: all kinds, then all flags, then all streams, ... Values in
 * one column look alike (stream ids repeat, time deltas are small), which is what lets zstd
 * get a 10M-op trace under a few bytes per op. Optional fields appear in their column only for
 * the ops whose flags say so. Host begin times are deltas from the previous op's host end (seq
 * order is nearly time order, so this is the gap between API calls); device begin times are
 * deltas from the previous device end on the same stream (the gap between back-to-back work),
 * so interleaved streams do not cost 10-byte varints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sbt_int.h"

/* Per-stream previous device time, reset per chunk by bumping a generation counter. */
static int dev_slot(uint64_t **prev, uint32_t **gen, uint32_t *cap, uint32_t stream)
{
    if (stream < *cap)
        return 0;
    if (stream >= (1u << 24)) /* absurd id: no slot, caller uses host_begin as the base */
        return 1;
    uint32_t ncap = *cap ? *cap : 16;
    while (ncap <= stream)
        ncap *= 2;
    uint64_t *p = sbt__realloc(*prev, ncap * sizeof *p);
    if (!p)
        return sbt__fail(SBT_ENOMEM, "out of memory for %u stream slots", ncap);
    *prev = p;
    uint32_t *g = sbt__realloc(*gen, ncap * sizeof *g);
    if (!g)
        return sbt__fail(SBT_ENOMEM, "out of memory for %u stream slots", ncap);
    memset(g + *cap, 0, (ncap - *cap) * sizeof *g);
    *gen = g;
    *cap = ncap;
    return 0;
}

uint32_t *sbt__geom_slot(struct sbt__geoms *t, uint32_t k)
{
    if (k >= t->cap) {
        if (k >= (1u << 20))
            return NULL;
        uint32_t cap = t->cap ? t->cap : 64;
        while (cap <= k)
            cap *= 2;
        uint32_t(*g)[8] = sbt__realloc(t->g, cap * sizeof *g);
        if (!g)
            return NULL;
        memset(g + t->cap, 0, (cap - t->cap) * sizeof *g);
        t->g = g;
        t->cap = cap;
    }
    return t->g[k];
}

/* ========================================================================================== */
/* Encoder                                                                                    */
/* ========================================================================================== */

static inline int put_hash(struct sbt_buf *b, sbt_hash h)
{
    uint8_t x[16];
    sbt__put_hash(x, h);
    return sbt__buf_put(b, x, 16);
}

int sbt__colenc_add(struct sbt__colenc *e, const struct sbt_op *op)
{
    struct sbt_buf *c = e->col;
    int st = 0;
    if (op->kind == 0 || op->kind > SBT_KIND_MAX || op->subkind > SBT_SUBKIND_MAX)
        return sbt__fail(SBT_EINVAL, "op kind %u / subkind %u out of range (kind 1..%u, sub 0..%u)",
                         op->kind, op->subkind, SBT_KIND_MAX, SBT_SUBKIND_MAX);
    if (op->flags & ~(uint32_t)SBT_OPF__KNOWN)
        return sbt__fail(SBT_EINVAL, "op flags 0x%x has unknown bits", op->flags);
    if (op->host_end < op->host_begin ||
        ((op->flags & SBT_OPF_DEV_TIME) && op->dev_end < op->dev_begin))
        return sbt__fail(SBT_EINVAL, "op ends before it begins");
    if (op->n_access && !op->access)
        return sbt__fail(SBT_EINVAL, "op has %u accesses but no access array", op->n_access);
    if ((op->flags & SBT_OPF_PAYLOAD) && op->payload.len && !op->payload.data)
        return sbt__fail(SBT_EINVAL, "op payload of %u bytes has no data", op->payload.len);

    uint8_t kb = (uint8_t)(op->kind | op->subkind << 5);
    uint32_t flags = op->flags | (op->n_access ? SBT_OPF__ACCESS : 0);
    st |= sbt__buf_put(&c[SBT_COL_KIND], &kb, 1);
    st |= sbt__buf_varint(&c[SBT_COL_FLAGS], flags);
    st |= sbt__buf_varint(&c[SBT_COL_STREAM], op->stream);
    st |= sbt__buf_varint(&c[SBT_COL_THREAD], op->thread);
    st |= sbt__buf_varint(&c[SBT_COL_NAME], op->name);
    st |= sbt__buf_varint(&c[SBT_COL_HBEGIN],
                          sbt_zigzag_encode((int64_t)(op->host_begin - e->prev_host)));
    e->prev_host = op->host_end;
    st |= sbt__buf_varint(&c[SBT_COL_HDUR], op->host_end - op->host_begin);
    if (flags & SBT_OPF_DEV_TIME) {
        uint64_t base = op->host_begin;
        int slot = dev_slot(&e->prev_dev, &e->gen, &e->n_streams_cap, op->stream);
        if (slot < 0)
            return slot;
        if (slot == 0 && e->gen[op->stream] == e->cur_gen)
            base = e->prev_dev[op->stream];
        if (slot == 0) {
            e->gen[op->stream] = e->cur_gen;
            e->prev_dev[op->stream] = op->dev_end;
        }
        st |=
            sbt__buf_varint(&c[SBT_COL_DBEGIN], sbt_zigzag_encode((int64_t)(op->dev_begin - base)));
        st |= sbt__buf_varint(&c[SBT_COL_DDUR], op->dev_end - op->dev_begin);
    }
    if (flags & SBT_OPF_KERNEL)
        st |= sbt__buf_varint(&c[SBT_COL_KERNEL], op->kernel);
    if (flags & SBT_OPF_GEOM) {
        uint32_t g[8] = {e->cur_gen,   op->grid[0],  op->grid[1],  op->grid[2],
                         op->block[0], op->block[1], op->block[2], op->shmem};
        uint32_t *slot = (flags & SBT_OPF_KERNEL) ? sbt__geom_slot(&e->geoms, op->kernel) : NULL;
        if (slot && !memcmp(slot, g, sizeof g)) {
            st |= sbt__buf_varint(&c[SBT_COL_GEOM], 0);
        } else {
            st |= sbt__buf_varint(&c[SBT_COL_GEOM], 1);
            for (int i = 1; i < 8; i++)
                st |= sbt__buf_varint(&c[SBT_COL_GEOM], g[i]);
            if (slot)
                memcpy(slot, g, sizeof g);
        }
    }
    if (flags & SBT_OPF_BYTES)
        st |= sbt__buf_varint(&c[SBT_COL_BYTES], op->bytes);
    if (flags & SBT_OPF_RESOURCE)
        st |= sbt__buf_varint(&c[SBT_COL_RESOURCE], op->resource);
    if (flags & SBT_OPF_OBJ) {
        st |= sbt__buf_varint(&c[SBT_COL_OBJ], op->obj);
        st |= sbt__buf_varint(&c[SBT_COL_OBJ], op->value);
    }
    if (flags & SBT_OPF_BLOB)
        st |= put_hash(&c[SBT_COL_BLOB], op->blob);
    if (flags & SBT_OPF_DIGEST)
        st |= put_hash(&c[SBT_COL_DIGEST], op->digest);
    if (flags & SBT_OPF_ERROR)
        st |= sbt__buf_varint(&c[SBT_COL_ERROR], op->error);
    if (flags & SBT_OPF__ACCESS) {
        st |= sbt__buf_varint(&c[SBT_COL_ACCESS], op->n_access);
        for (uint32_t i = 0; i < op->n_access; i++) {
            const struct sbt_access *a = &op->access[i];
            if (a->mode < SBT_ACCESS_READ || a->mode > SBT_ACCESS_RW || a->resource >> 61)
                return sbt__fail(SBT_EINVAL, "access %u: mode %u or resource %llu out of range", i,
                                 a->mode, (unsigned long long)a->resource);
            st |= sbt__buf_varint(&c[SBT_COL_ACCESS], a->resource << 2 | a->mode);
            st |= sbt__buf_varint(&c[SBT_COL_ACCESS], a->offset);
            st |= sbt__buf_varint(&c[SBT_COL_ACCESS], a->len);
        }
    }
    if (flags & SBT_OPF_PAYLOAD) {
        st |= sbt__buf_varint(&c[SBT_COL_PAYLOAD], op->payload.kind);
        st |= sbt__buf_varint(&c[SBT_COL_PAYLOAD], op->payload.len);
        st |= sbt__buf_put(&c[SBT_COL_PAYLOAD], op->payload.data, op->payload.len);
    }
    if (st)
        return sbt__fail(SBT_ENOMEM, "out of memory encoding op");
    e->n_ops++;
    return SBT_OK;
}

void sbt__colenc_reset(struct sbt__colenc *e)
{
    for (int i = 0; i < SBT_N_COLS; i++)
        e->col[i].len = 0;
    e->prev_host = 0;
    e->n_ops = 0;
    if (++e->cur_gen == 0) { /* wrapped: forget every slot */
        if (e->gen)
            memset(e->gen, 0, e->n_streams_cap * sizeof *e->gen);
        if (e->geoms.g)
            memset(e->geoms.g, 0, e->geoms.cap * sizeof *e->geoms.g);
        e->cur_gen = 1;
    }
}

void sbt__colenc_free(struct sbt__colenc *e)
{
    for (int i = 0; i < SBT_N_COLS; i++)
        sbt__buf_free(&e->col[i]);
    sbt__free(e->prev_dev);
    sbt__free(e->gen);
    sbt__free(e->geoms.g);
    memset(e, 0, sizeof *e);
}

int sbt__colenc_emit(struct sbt__colenc *e, uint64_t seq_first, struct sbt_buf *out)
{
    int st = 0;
    st |= sbt__buf_varint(out, e->n_ops);
    st |= sbt__buf_varint(out, seq_first);
    st |= sbt__buf_varint(out, SBT_N_COLS);
    for (int i = 0; i < SBT_N_COLS; i++)
        st |= sbt__buf_varint(out, e->col[i].len);
    for (int i = 0; i < SBT_N_COLS; i++)
        st |= sbt__buf_put(out, e->col[i].p, e->col[i].len);
    return st ? sbt__fail(SBT_ENOMEM, "out of memory emitting ops") : SBT_OK;
}

/* ========================================================================================== */
/* Decoder                                                                                    */
/* ========================================================================================== */

/* Column cursors share the chunk offset and the name of the column for messages. */
static const char *col_name[SBT_N_COLS] = {
    "kind column",          "flags column",        "stream column",
    "thread column",        "name column",         "host begin column",
    "host duration column", "device begin column", "device duration column",
    "kernel column",        "geometry column",     "bytes column",
    "resource column",      "obj column",          "blob column",
    "digest column",        "error column",        "access column",
    "payload column",
};

#define RD(col, dst)                                          \
    do {                                                      \
        if ((st = sbt__rd_varint(&c[col], &(dst))) != SBT_OK) \
            goto bad;                                         \
    } while (0)
#define RD32(col, dst)                                     \
    do {                                                   \
        if ((st = sbt__rd_u32(&c[col], &(dst))) != SBT_OK) \
            goto bad;                                      \
    } while (0)

int sbt__opdec_begin(struct sbt__opdec *d, struct sbt__rd *body)
{
    int st;
    uint64_t n_cols;
    d->file_off = body->file_off;
    d->n_ops = d->i = 0;
    if ((st = sbt__rd_varint(body, &d->n_ops)) || (st = sbt__rd_varint(body, &d->seq_first)) ||
        (st = sbt__rd_varint(body, &n_cols)))
        return st;
    if (d->n_ops > body->len) /* every op has at least its kind byte */
        return sbt__fail(
            SBT_ECORRUPT, "chunk at offset %llu: OPS record claims %llu ops in %zu bytes",
            (unsigned long long)body->file_off, (unsigned long long)d->n_ops, body->len);
    if (n_cols < SBT_N_COLS || n_cols > 4096)
        return sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: OPS record has %llu columns, need %d",
                         (unsigned long long)body->file_off, (unsigned long long)n_cols,
                         SBT_N_COLS);
    uint64_t col_len[SBT_N_COLS], skip = 0;
    for (uint64_t i = 0; i < n_cols; i++) {
        uint64_t l;
        if ((st = sbt__rd_varint(body, &l)))
            return st;
        if (l > body->len)
            return sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: column %llu length %llu > record",
                             (unsigned long long)body->file_off, (unsigned long long)i,
                             (unsigned long long)l);
        if (i < SBT_N_COLS)
            col_len[i] = l;
        else
            skip += l;
    }
    for (int i = 0; i < SBT_N_COLS; i++) {
        const uint8_t *p;
        if ((st = sbt__rd_bytes(body, col_len[i], &p)))
            return st;
        d->c[i] = (struct sbt__rd){p, col_len[i], 0, body->file_off, col_name[i]};
    }
    const uint8_t *ignored; /* columns of a newer writer */
    if ((st = sbt__rd_bytes(body, skip, &ignored)))
        return st;
    if (d->n_ops > d->c[SBT_COL_KIND].len)
        return sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: %llu ops but %zu kind bytes",
                         (unsigned long long)body->file_off, (unsigned long long)d->n_ops,
                         d->c[SBT_COL_KIND].len);
    if (++d->cur_gen == 0) {
        if (d->gen)
            memset(d->gen, 0, d->n_streams_cap * sizeof *d->gen);
        if (d->geoms.g)
            memset(d->geoms.g, 0, d->geoms.cap * sizeof *d->geoms.g);
        d->cur_gen = 1;
    }
    d->prev_host = 0;
    return SBT_OK;
}

int sbt__opdec_next(struct sbt__opdec *d, const struct sbt_op **out)
{
    int st;
    struct sbt__rd *c = d->c;
    struct sbt_op *op = &d->op;
    uint64_t v;
    *out = NULL;
    if (d->i == d->n_ops) {
        for (int i = 0; i < SBT_N_COLS; i++)
            if (c[i].pos != c[i].len)
                return sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: %s has %zu bytes left over",
                                 (unsigned long long)d->file_off, col_name[i], c[i].len - c[i].pos);
        return 0;
    }
    memset(op, 0, sizeof *op);
    op->seq = d->seq_first + d->i;
    uint8_t kb = c[SBT_COL_KIND].p[c[SBT_COL_KIND].pos++]; /* n_ops <= kind bytes, checked */
    op->kind = kb & SBT_KIND_MAX;
    op->subkind = kb >> 5;
    if (op->kind == 0 || op->kind >= SBT_OP__COUNT) {
        st = sbt__fail(SBT_EVERSION, "chunk at offset %llu: op %llu has unknown kind %u",
                       (unsigned long long)d->file_off, (unsigned long long)op->seq, op->kind);
        goto bad;
    }
    uint32_t flags;
    RD32(SBT_COL_FLAGS, flags);
    if (flags & 0xf800u) {
        st = sbt__fail(SBT_EVERSION, "chunk at offset %llu: op %llu has unknown field flags 0x%x",
                       (unsigned long long)d->file_off, (unsigned long long)op->seq,
                       flags & 0xf800u);
        goto bad;
    }
    op->flags = flags & ~SBT_OPF__ACCESS;
    RD32(SBT_COL_STREAM, op->stream);
    RD32(SBT_COL_THREAD, op->thread);
    RD32(SBT_COL_NAME, op->name);
    RD(SBT_COL_HBEGIN, v);
    op->host_begin = d->prev_host + (uint64_t)sbt_zigzag_decode(v);
    RD(SBT_COL_HDUR, v);
    op->host_end = op->host_begin + v;
    d->prev_host = op->host_end;
    if (op->host_end < op->host_begin)
        goto overflow;
    if (flags & SBT_OPF_DEV_TIME) {
        uint64_t base = op->host_begin;
        int slot = dev_slot(&d->prev_dev, &d->gen, &d->n_streams_cap, op->stream);
        if (slot < 0) {
            st = slot;
            goto bad;
        }
        if (slot == 0 && d->gen[op->stream] == d->cur_gen)
            base = d->prev_dev[op->stream];
        RD(SBT_COL_DBEGIN, v);
        op->dev_begin = base + (uint64_t)sbt_zigzag_decode(v);
        RD(SBT_COL_DDUR, v);
        op->dev_end = op->dev_begin + v;
        if (op->dev_end < op->dev_begin)
            goto overflow;
        if (slot == 0) {
            d->gen[op->stream] = d->cur_gen;
            d->prev_dev[op->stream] = op->dev_end;
        }
    }
    if (flags & SBT_OPF_KERNEL)
        RD32(SBT_COL_KERNEL, op->kernel);
    if (flags & SBT_OPF_GEOM) {
        uint32_t tag, g[8];
        uint32_t *slot = (flags & SBT_OPF_KERNEL) ? sbt__geom_slot(&d->geoms, op->kernel) : NULL;
        RD32(SBT_COL_GEOM, tag);
        if (tag == 0) {
            if (!slot || slot[0] != d->cur_gen) {
                st = sbt__fail(SBT_ECORRUPT,
                               "chunk at offset %llu: op %llu repeats a geometry its "
                               "kernel has not had in this chunk",
                               (unsigned long long)d->file_off, (unsigned long long)op->seq);
                goto bad;
            }
            memcpy(g, slot, sizeof g);
        } else if (tag == 1) {
            g[0] = d->cur_gen;
            for (int k = 1; k < 8; k++)
                RD32(SBT_COL_GEOM, g[k]);
            if (slot)
                memcpy(slot, g, sizeof g);
        } else {
            st = sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu geometry tag %u",
                           (unsigned long long)d->file_off, (unsigned long long)op->seq, tag);
            goto bad;
        }
        memcpy(op->grid, g + 1, sizeof op->grid);
        memcpy(op->block, g + 4, sizeof op->block);
        op->shmem = g[7];
    }
    if (flags & SBT_OPF_BYTES)
        RD(SBT_COL_BYTES, op->bytes);
    if (flags & SBT_OPF_RESOURCE)
        RD(SBT_COL_RESOURCE, op->resource);
    if (flags & SBT_OPF_OBJ) {
        RD(SBT_COL_OBJ, op->obj);
        RD(SBT_COL_OBJ, op->value);
    }
    if ((flags & SBT_OPF_BLOB) && (st = sbt__rd_hash(&c[SBT_COL_BLOB], &op->blob)))
        goto bad;
    if ((flags & SBT_OPF_DIGEST) && (st = sbt__rd_hash(&c[SBT_COL_DIGEST], &op->digest)))
        goto bad;
    if (flags & SBT_OPF_ERROR)
        RD32(SBT_COL_ERROR, op->error);
    if (flags & SBT_OPF__ACCESS) {
        uint32_t n;
        RD32(SBT_COL_ACCESS, n);
        if (n == 0 || n > c[SBT_COL_ACCESS].len) {
            st = sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu: %u accesses",
                           (unsigned long long)d->file_off, (unsigned long long)op->seq, n);
            goto bad;
        }
        if (n > d->cap_acc) {
            struct sbt_access *a = sbt__realloc(d->acc, n * sizeof *a);
            if (!a) {
                st = sbt__fail(SBT_ENOMEM, "out of memory for %u accesses", n);
                goto bad;
            }
            d->acc = a;
            d->cap_acc = n;
        }
        for (uint32_t k = 0; k < n; k++) {
            struct sbt_access *a = &d->acc[k];
            RD(SBT_COL_ACCESS, v);
            a->resource = v >> 2;
            a->mode = (uint32_t)(v & 3);
            if (a->mode == 0) {
                st = sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu: access mode 0",
                               (unsigned long long)d->file_off, (unsigned long long)op->seq);
                goto bad;
            }
            RD(SBT_COL_ACCESS, a->offset);
            RD(SBT_COL_ACCESS, a->len);
        }
        op->n_access = n;
        op->access = d->acc;
    }
    if (flags & SBT_OPF_PAYLOAD) {
        const uint8_t *p;
        RD32(SBT_COL_PAYLOAD, op->payload.kind);
        RD32(SBT_COL_PAYLOAD, op->payload.len);
        if ((st = sbt__rd_bytes(&c[SBT_COL_PAYLOAD], op->payload.len, &p)))
            goto bad;
        op->payload.data = p;
    }
    d->i++;
    *out = op;
    return 1;
overflow:
    st = sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu: time overflows 64 bits",
                   (unsigned long long)d->file_off, (unsigned long long)op->seq);
bad:
    if (st == SBT_ECORRUPT && !strstr(sbt_errmsg(), ": op ")) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s (decoding op %llu)", sbt_errmsg(),
                 (unsigned long long)(d->seq_first + d->i));
        sbt__fail(st, "%s", msg);
    }
    d->i = d->n_ops; /* no further ops from a broken record */
    return st;
}

/* Columns into arrays (sbt_cursor_read): the same record decoded op by op as
 * sbt__opdec_next does, but each value goes straight to its array, and a column that no
 * asked-for field needs is not read. */
static int cols_fail(struct sbt__opdec *d, int st, uint64_t i)
{
    if (st == SBT_ECORRUPT && !strstr(sbt_errmsg(), ": op ")) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s (decoding op %llu)", sbt_errmsg(),
                 (unsigned long long)(d->seq_first + i));
        sbt__fail(st, "%s", msg);
    }
    d->i = d->n_ops; /* no further ops from a broken record */
    return st;
}

#define CRD(col, dst)                                         \
    do {                                                      \
        if ((st = sbt__rd_varint(&c[col], &(dst))) != SBT_OK) \
            return cols_fail(d, st, i);                       \
    } while (0)
#define CRD32(col, dst)                                    \
    do {                                                   \
        if ((st = sbt__rd_u32(&c[col], &(dst))) != SBT_OK) \
            return cols_fail(d, st, i);                    \
    } while (0)

int sbt__opdec_columns(struct sbt__opdec *d, const struct sbt_columns *o, uint64_t at,
                       const uint64_t *span)
{
    int st;
    struct sbt__rd *c = d->c;
    uint64_t i = d->i, v;
    if (i != 0)
        return sbt__fail(SBT_EINVAL, "chunk at offset %llu: columns of a record already begun",
                         (unsigned long long)d->file_off);
    /* which columns are read: the asked fields and what they depend on */
    int want_dev = o->dev_begin || o->dev_end || span;
    int want_geom = o->grid || o->block || o->shmem;
    int want_host = o->host_begin || o->host_end || want_dev;
    int want_kernel = o->kernel || want_geom;
    int want_stream = o->stream || want_dev;
    uint32_t used = 1u << SBT_COL_KIND | 1u << SBT_COL_FLAGS;
    used |= (want_stream ? 1u << SBT_COL_STREAM : 0) | (o->thread ? 1u << SBT_COL_THREAD : 0) |
            (o->name ? 1u << SBT_COL_NAME : 0) |
            (want_host ? 1u << SBT_COL_HBEGIN | 1u << SBT_COL_HDUR : 0) |
            (want_dev ? 1u << SBT_COL_DBEGIN | 1u << SBT_COL_DDUR : 0) |
            (want_kernel ? 1u << SBT_COL_KERNEL : 0) | (want_geom ? 1u << SBT_COL_GEOM : 0) |
            (o->bytes ? 1u << SBT_COL_BYTES : 0) | (o->resource ? 1u << SBT_COL_RESOURCE : 0) |
            (o->obj || o->value ? 1u << SBT_COL_OBJ : 0) | (o->blob ? 1u << SBT_COL_BLOB : 0) |
            (o->digest ? 1u << SBT_COL_DIGEST : 0) | (o->error ? 1u << SBT_COL_ERROR : 0) |
            (o->n_access ? 1u << SBT_COL_ACCESS : 0);
    uint64_t prev_host = d->prev_host;
    for (; i < d->n_ops; i++) {
        uint64_t row = at + i, seq = d->seq_first + i;
        uint8_t kb = c[SBT_COL_KIND].p[c[SBT_COL_KIND].pos++]; /* n_ops <= kind bytes, checked */
        uint32_t kind = kb & SBT_KIND_MAX, flags, stream = 0, kernel = 0;
        if (kind == 0 || kind >= SBT_OP__COUNT)
            return cols_fail(
                d,
                sbt__fail(SBT_EVERSION, "chunk at offset %llu: op %llu has unknown kind %u",
                          (unsigned long long)d->file_off, (unsigned long long)seq, kind),
                i);
        CRD32(SBT_COL_FLAGS, flags);
        if (flags & 0xf800u)
            return cols_fail(d,
                             sbt__fail(SBT_EVERSION,
                                       "chunk at offset %llu: op %llu has unknown field flags 0x%x",
                                       (unsigned long long)d->file_off, (unsigned long long)seq,
                                       flags & 0xf800u),
                             i);
        if (o->seq)
            o->seq[row] = seq;
        if (o->kind)
            o->kind[row] = (uint8_t)kind;
        if (o->subkind)
            o->subkind[row] = (uint8_t)(kb >> 5);
        if (o->flags)
            o->flags[row] = flags & ~SBT_OPF__ACCESS;
        if (want_stream) {
            CRD32(SBT_COL_STREAM, stream);
            if (o->stream)
                o->stream[row] = stream;
        }
        if (o->thread)
            CRD32(SBT_COL_THREAD, o->thread[row]);
        if (o->name)
            CRD32(SBT_COL_NAME, o->name[row]);
        uint64_t hb = 0, he = 0, db = 0, de = 0;
        if (want_host) {
            CRD(SBT_COL_HBEGIN, v);
            hb = prev_host + (uint64_t)sbt_zigzag_decode(v);
            CRD(SBT_COL_HDUR, v);
            he = hb + v;
            prev_host = he;
            if (he < hb)
                goto overflow;
            if (o->host_begin)
                o->host_begin[row] = hb;
            if (o->host_end)
                o->host_end[row] = he;
        }
        if (want_dev && (flags & SBT_OPF_DEV_TIME)) {
            uint64_t base = hb;
            int slot = dev_slot(&d->prev_dev, &d->gen, &d->n_streams_cap, stream);
            if (slot < 0)
                return cols_fail(d, slot, i);
            if (slot == 0 && d->gen[stream] == d->cur_gen)
                base = d->prev_dev[stream];
            CRD(SBT_COL_DBEGIN, v);
            db = base + (uint64_t)sbt_zigzag_decode(v);
            CRD(SBT_COL_DDUR, v);
            de = db + v;
            if (de < db)
                goto overflow;
            if (slot == 0) {
                d->gen[stream] = d->cur_gen;
                d->prev_dev[stream] = de;
            }
        }
        if (o->dev_begin)
            o->dev_begin[row] = db;
        if (o->dev_end)
            o->dev_end[row] = de;
        if (span) { /* the op must overlap [span[0], span[1]) as sbt_cursor_next selects */
            uint64_t b = hb, e = he;
            if (flags & SBT_OPF_DEV_TIME) {
                b = db < b ? db : b;
                e = de > e ? de : e;
            }
            if (e < span[0] || b >= span[1])
                return cols_fail(d,
                                 sbt__fail(SBT_ECORRUPT,
                                           "chunk at offset %llu: op %llu spans [%llu, %llu], "
                                           "outside the chunk's indexed time range",
                                           (unsigned long long)d->file_off, (unsigned long long)seq,
                                           (unsigned long long)b, (unsigned long long)e),
                                 i);
        }
        if (want_kernel && (flags & SBT_OPF_KERNEL))
            CRD32(SBT_COL_KERNEL, kernel);
        if (o->kernel)
            o->kernel[row] = kernel;
        if (want_geom) {
            uint32_t g[8] = {0};
            if (flags & SBT_OPF_GEOM) {
                uint32_t tag;
                uint32_t *slot =
                    (flags & SBT_OPF_KERNEL) ? sbt__geom_slot(&d->geoms, kernel) : NULL;
                CRD32(SBT_COL_GEOM, tag);
                if (tag == 0) {
                    if (!slot || slot[0] != d->cur_gen)
                        return cols_fail(d,
                                         sbt__fail(SBT_ECORRUPT,
                                                   "chunk at offset %llu: op %llu repeats a "
                                                   "geometry its kernel has not had in this chunk",
                                                   (unsigned long long)d->file_off,
                                                   (unsigned long long)seq),
                                         i);
                    memcpy(g, slot, sizeof g);
                } else if (tag == 1) {
                    g[0] = d->cur_gen;
                    for (int k = 1; k < 8; k++)
                        CRD32(SBT_COL_GEOM, g[k]);
                    if (slot)
                        memcpy(slot, g, sizeof g);
                } else {
                    return cols_fail(
                        d,
                        sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu geometry tag %u",
                                  (unsigned long long)d->file_off, (unsigned long long)seq, tag),
                        i);
                }
            }
            if (o->grid)
                memcpy(o->grid + 3 * row, g + 1, 3 * sizeof *g);
            if (o->block)
                memcpy(o->block + 3 * row, g + 4, 3 * sizeof *g);
            if (o->shmem)
                o->shmem[row] = g[7];
        }
        if (o->bytes) {
            o->bytes[row] = 0;
            if (flags & SBT_OPF_BYTES)
                CRD(SBT_COL_BYTES, o->bytes[row]);
        }
        if (o->resource) {
            o->resource[row] = 0;
            if (flags & SBT_OPF_RESOURCE)
                CRD(SBT_COL_RESOURCE, o->resource[row]);
        }
        if (o->obj || o->value) {
            uint64_t ob = 0, va = 0;
            if (flags & SBT_OPF_OBJ) {
                CRD(SBT_COL_OBJ, ob);
                CRD(SBT_COL_OBJ, va);
            }
            if (o->obj)
                o->obj[row] = ob;
            if (o->value)
                o->value[row] = va;
        }
        if (o->blob) {
            sbt_hash h = {0, 0};
            if ((flags & SBT_OPF_BLOB) && (st = sbt__rd_hash(&c[SBT_COL_BLOB], &h)))
                return cols_fail(d, st, i);
            o->blob[2 * row] = h.lo;
            o->blob[2 * row + 1] = h.hi;
        }
        if (o->digest) {
            sbt_hash h = {0, 0};
            if ((flags & SBT_OPF_DIGEST) && (st = sbt__rd_hash(&c[SBT_COL_DIGEST], &h)))
                return cols_fail(d, st, i);
            o->digest[2 * row] = h.lo;
            o->digest[2 * row + 1] = h.hi;
        }
        if (o->error) {
            o->error[row] = 0;
            if (flags & SBT_OPF_ERROR)
                CRD32(SBT_COL_ERROR, o->error[row]);
        }
        if (o->n_access) {
            uint32_t n = 0;
            if (flags & SBT_OPF__ACCESS) {
                CRD32(SBT_COL_ACCESS, n);
                if (n == 0 || n > c[SBT_COL_ACCESS].len)
                    return cols_fail(
                        d,
                        sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu: %u accesses",
                                  (unsigned long long)d->file_off, (unsigned long long)seq, n),
                        i);
                for (uint32_t k = 0; k < n; k++) {
                    CRD(SBT_COL_ACCESS, v);
                    if ((v & 3) == 0)
                        return cols_fail(
                            d,
                            sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu: access mode 0",
                                      (unsigned long long)d->file_off, (unsigned long long)seq),
                            i);
                    CRD(SBT_COL_ACCESS, v);
                    CRD(SBT_COL_ACCESS, v);
                }
            }
            o->n_access[row] = n;
        }
    }
    d->prev_host = prev_host;
    d->i = d->n_ops;
    for (int k = 0; k < SBT_N_COLS; k++)
        if ((used >> k & 1) && c[k].pos != c[k].len)
            return sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: %s has %zu bytes left over",
                             (unsigned long long)d->file_off, col_name[k], c[k].len - c[k].pos);
    return SBT_OK;
overflow:
    return cols_fail(
        d,
        sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu: time overflows 64 bits",
                  (unsigned long long)d->file_off, (unsigned long long)(d->seq_first + i)),
        i);
}

void sbt__opdec_free(struct sbt__opdec *d)
{
    sbt__free(d->acc);
    sbt__free(d->prev_dev);
    sbt__free(d->gen);
    sbt__free(d->geoms.g);
    memset(d, 0, sizeof *d);
}
