/*
 * format/sbt_cols.c — the columnar op codec of OPS records (FORMAT.md "OPS record").
 *
 * Ops are stored column by column: all kinds, then all flags, then all streams, ... Values in
 * one column look alike (stream ids repeat, time deltas are small), which is what lets zstd
 * get a 10M-op trace under a few bytes per op. Optional fields appear in their column only for
 * the ops whose flags say so. Host begin times are deltas from the previous op (seq order is
 * nearly time order); device begin times are deltas from the previous device time on the same
 * stream, so interleaved streams do not cost 10-byte varints.
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
    e->prev_host = op->host_begin;
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
            e->prev_dev[op->stream] = op->dev_begin;
        }
        st |= sbt__buf_varint(&c[SBT_COL_DBEGIN], sbt_zigzag_encode((int64_t)(op->dev_begin - base)));
        st |= sbt__buf_varint(&c[SBT_COL_DDUR], op->dev_end - op->dev_begin);
    }
    if (flags & SBT_OPF_KERNEL)
        st |= sbt__buf_varint(&c[SBT_COL_KERNEL], op->kernel);
    if (flags & SBT_OPF_GEOM) {
        for (int i = 0; i < 3; i++)
            st |= sbt__buf_varint(&c[SBT_COL_GEOM], op->grid[i]);
        for (int i = 0; i < 3; i++)
            st |= sbt__buf_varint(&c[SBT_COL_GEOM], op->block[i]);
        st |= sbt__buf_varint(&c[SBT_COL_GEOM], op->shmem);
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
        e->cur_gen = 1;
    }
}

void sbt__colenc_free(struct sbt__colenc *e)
{
    for (int i = 0; i < SBT_N_COLS; i++)
        sbt__buf_free(&e->col[i]);
    sbt__free(e->prev_dev);
    sbt__free(e->gen);
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
    "kind column",   "flags column",  "stream column", "thread column",   "name column",
    "host begin column", "host duration column", "device begin column", "device duration column",
    "kernel column", "geometry column", "bytes column", "resource column", "obj column",
    "blob column",   "digest column", "error column",  "access column",   "payload column",
};

#define RD(col, dst)                                         \
    do {                                                     \
        if ((st = sbt__rd_varint(&c[col], &(dst))) != SBT_OK) \
            goto bad;                                        \
    } while (0)
#define RD32(col, dst)                                    \
    do {                                                  \
        if ((st = sbt__rd_u32(&c[col], &(dst))) != SBT_OK) \
            goto bad;                                     \
    } while (0)

int sbt__opbatch_decode(struct sbt__opbatch *b, struct sbt__rd *body)
{
    int st;
    uint64_t n_ops, seq_first, n_cols;
    if ((st = sbt__rd_varint(body, &n_ops)) || (st = sbt__rd_varint(body, &seq_first)) ||
        (st = sbt__rd_varint(body, &n_cols)))
        return st;
    if (n_ops > body->len) /* every op has at least its kind byte */
        return sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: OPS record claims %llu ops in %zu bytes",
                         (unsigned long long)body->file_off, (unsigned long long)n_ops, body->len);
    if (n_cols < SBT_N_COLS || n_cols > 4096)
        return sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: OPS record has %llu columns, need %d",
                         (unsigned long long)body->file_off, (unsigned long long)n_cols, SBT_N_COLS);
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
    struct sbt__rd c[SBT_N_COLS];
    for (int i = 0; i < SBT_N_COLS; i++) {
        const uint8_t *p;
        if ((st = sbt__rd_bytes(body, col_len[i], &p)))
            return st;
        c[i] = (struct sbt__rd){p, col_len[i], 0, body->file_off, col_name[i]};
    }
    const uint8_t *ignored;
    if ((st = sbt__rd_bytes(body, skip, &ignored)))
        return st;
    if (n_ops > b->cap_ops) {
        struct sbt_op *ops = sbt__realloc(b->ops, n_ops * sizeof *ops);
        if (!ops)
            return sbt__fail(SBT_ENOMEM, "out of memory for %llu ops", (unsigned long long)n_ops);
        b->ops = ops;
        b->cap_ops = (uint32_t)n_ops;
    }
    if (++b->cur_gen == 0) {
        if (b->gen)
            memset(b->gen, 0, b->n_streams_cap * sizeof *b->gen);
        b->cur_gen = 1;
    }
    b->n_ops = 0;
    b->n_acc = 0;
    uint64_t prev_host = 0;
    /* Access arrays are filled first and pointed to at the end, as acc may move. */
    for (uint64_t i = 0; i < n_ops; i++) {
        struct sbt_op *op = &b->ops[i];
        uint64_t v;
        memset(op, 0, sizeof *op);
        op->seq = seq_first + i;
        if (c[SBT_COL_KIND].pos >= c[SBT_COL_KIND].len) {
            st = sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: kind column ends at op %llu",
                           (unsigned long long)body->file_off, (unsigned long long)op->seq);
            goto bad;
        }
        uint8_t kb = c[SBT_COL_KIND].p[c[SBT_COL_KIND].pos++];
        op->kind = kb & SBT_KIND_MAX;
        op->subkind = kb >> 5;
        if (op->kind == 0 || op->kind >= SBT_OP__COUNT) {
            st = sbt__fail(SBT_EVERSION, "chunk at offset %llu: op %llu has unknown kind %u",
                           (unsigned long long)body->file_off, (unsigned long long)op->seq, op->kind);
            goto bad;
        }
        uint32_t flags;
        RD32(SBT_COL_FLAGS, flags);
        if (flags & 0xf800u) {
            st = sbt__fail(SBT_EVERSION, "chunk at offset %llu: op %llu has unknown field flags 0x%x",
                           (unsigned long long)body->file_off, (unsigned long long)op->seq,
                           flags & 0xf800u);
            goto bad;
        }
        op->flags = flags & ~SBT_OPF__ACCESS;
        RD32(SBT_COL_STREAM, op->stream);
        RD32(SBT_COL_THREAD, op->thread);
        RD32(SBT_COL_NAME, op->name);
        RD(SBT_COL_HBEGIN, v);
        op->host_begin = prev_host + (uint64_t)sbt_zigzag_decode(v);
        prev_host = op->host_begin;
        RD(SBT_COL_HDUR, v);
        op->host_end = op->host_begin + v;
        if (op->host_end < op->host_begin) {
            st = sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu host time overflows",
                           (unsigned long long)body->file_off, (unsigned long long)op->seq);
            goto bad;
        }
        if (flags & SBT_OPF_DEV_TIME) {
            uint64_t base = op->host_begin;
            int slot = dev_slot(&b->prev_dev, &b->gen, &b->n_streams_cap, op->stream);
            if (slot < 0) {
                st = slot;
                goto bad;
            }
            if (slot == 0 && b->gen[op->stream] == b->cur_gen)
                base = b->prev_dev[op->stream];
            RD(SBT_COL_DBEGIN, v);
            op->dev_begin = base + (uint64_t)sbt_zigzag_decode(v);
            if (slot == 0) {
                b->gen[op->stream] = b->cur_gen;
                b->prev_dev[op->stream] = op->dev_begin;
            }
            RD(SBT_COL_DDUR, v);
            op->dev_end = op->dev_begin + v;
            if (op->dev_end < op->dev_begin) {
                st = sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu device time overflows",
                               (unsigned long long)body->file_off, (unsigned long long)op->seq);
                goto bad;
            }
        }
        if (flags & SBT_OPF_KERNEL)
            RD32(SBT_COL_KERNEL, op->kernel);
        if (flags & SBT_OPF_GEOM) {
            for (int k = 0; k < 3; k++)
                RD32(SBT_COL_GEOM, op->grid[k]);
            for (int k = 0; k < 3; k++)
                RD32(SBT_COL_GEOM, op->block[k]);
            RD32(SBT_COL_GEOM, op->shmem);
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
                               (unsigned long long)body->file_off, (unsigned long long)op->seq, n);
                goto bad;
            }
            if (b->n_acc + n > b->cap_acc) {
                size_t cap = b->cap_acc ? b->cap_acc : 1024;
                while (cap < b->n_acc + n)
                    cap *= 2;
                struct sbt_access *a = sbt__realloc(b->acc, cap * sizeof *a);
                if (!a) {
                    st = sbt__fail(SBT_ENOMEM, "out of memory for %zu accesses", cap);
                    goto bad;
                }
                b->acc = a;
                b->cap_acc = cap;
            }
            for (uint32_t k = 0; k < n; k++) {
                struct sbt_access *a = &b->acc[b->n_acc++];
                RD(SBT_COL_ACCESS, v);
                a->resource = v >> 2;
                a->mode = (uint32_t)(v & 3);
                if (a->mode == 0) {
                    st = sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: op %llu: access mode 0",
                                   (unsigned long long)body->file_off, (unsigned long long)op->seq);
                    goto bad;
                }
                RD(SBT_COL_ACCESS, a->offset);
                RD(SBT_COL_ACCESS, a->len);
            }
            op->n_access = n;
            /* stash the start index in the pointer slot until acc stops moving */
            op->access = (const struct sbt_access *)(uintptr_t)(b->n_acc - n);
        }
        if (flags & SBT_OPF_PAYLOAD) {
            const uint8_t *p;
            RD32(SBT_COL_PAYLOAD, op->payload.kind);
            RD32(SBT_COL_PAYLOAD, op->payload.len);
            if ((st = sbt__rd_bytes(&c[SBT_COL_PAYLOAD], op->payload.len, &p)))
                goto bad;
            op->payload.data = p;
        }
        b->n_ops++;
    }
    for (uint32_t i = 0; i < b->n_ops; i++)
        if (b->ops[i].n_access)
            b->ops[i].access = b->acc + (uintptr_t)b->ops[i].access;
    for (int i = 0; i < SBT_N_COLS; i++)
        if (c[i].pos != c[i].len)
            return sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: %s has %zu bytes left over",
                             (unsigned long long)body->file_off, col_name[i], c[i].len - c[i].pos);
    return SBT_OK;
bad:
    if (st == SBT_ECORRUPT && !strstr(sbt_errmsg(), ": op ")) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s (decoding op %llu)", sbt_errmsg(),
                 (unsigned long long)(seq_first + b->n_ops));
        sbt__fail(st, "%s", msg);
    }
    for (uint32_t i = 0; i < b->n_ops; i++)
        b->ops[i].n_access = 0, b->ops[i].access = NULL;
    b->n_ops = 0;
    return st;
}

void sbt__opbatch_free(struct sbt__opbatch *b)
{
    sbt__free(b->ops);
    sbt__free(b->acc);
    sbt__free(b->prev_dev);
    sbt__free(b->gen);
    memset(b, 0, sizeof *b);
}
