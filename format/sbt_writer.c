/*
 * format/sbt_writer.c — the streaming SBT writer.
 *
 * Memory is bounded by one chunk of ops plus one chunk of blobs, whatever the trace length;
 * what grows is proportional to distinct content only: interned strings, table rows, the set of
 * blob hashes (for deduplication and the footer's blob index) and one index entry per chunk.
 *
 * Order of chunks on disk keeps every chunk readable on its own after a crash: pending blobs go
 * out before the ops chunk that may refer to them, and dictionary records (strings, tables,
 * metadata) travel in the ops chunk that first needs them. close() adds the END chunk (the
 * completeness record), the INDEX chunk and the 16-byte trailer that points at it.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <xxhash.h>
#include <zstd.h>

#include "format/sbt_int.h"

struct blob_ent {
    sbt_hash h;
    uint64_t chunk_off; /* 0 while pending; then the chunk's number + 1 until close, which
                         * turns it into the chunk's file offset for the footer */
    uint64_t pos;       /* offset of the bytes inside the chunk's raw payload */
    uint64_t len;
};

struct unsup {
    uint32_t what;
    uint64_t count, first_seq;
    uint32_t flags;
};

/* A chunk handed to the background thread (opts.threads = 1). */
struct job {
    struct sbt_buf raw;
    uint32_t content, n_ops;
    uint64_t seq_first, t_min, t_max;
    uint32_t strings_upto; /* a chunk with a dictionary defines the strings up to this id */
};

struct sbt_writer {
    int fd;
    int failed;               /* sticky: after an I/O failure every call returns it */
    char failmsg[512];        /* the first I/O failure, for the trace's END (see salvage) */
    uint32_t durable_strings; /* strings whose records are in chunks written whole */
    uint64_t n_chunks;        /* chunks handed out so far (written or queued) */

    /* background compression and writing: two job slots, head is the oldest */
    int threaded;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job jobs[2];
    int head, count, stop;
    _Atomic int werr;  /* the worker's failure status, 0 if none */
    char werrmsg[512]; /* and its message (sbt_errmsg is per thread) */
    struct sbt_writer_opts o;
    uint64_t off;      /* where the next chunk goes */
    uint64_t next_seq; /* seq of the next op */

    /* pending chunk contents */
    struct sbt_buf dict;
    struct sbt__colenc enc;
    uint64_t chunk_seq_first, t_min, t_max;
    size_t enc_bytes; /* approximate raw bytes of the columns, refreshed every 64 ops */
    struct sbt_buf blobs;
    sbt_hash *pending; /* blobs in the pending blob chunk */
    size_t n_pending, cap_pending;

    /* scratch */
    struct sbt_buf raw, zbuf, body;
    ZSTD_CCtx *zc;

    /* deduplication and index */
    struct blob_ent *bt; /* open addressing by hash.lo */
    size_t bt_cap, bt_n;
    uint64_t blob_bytes;
    struct sbt_chunk_info *idx;
    size_t n_idx, cap_idx;

    /* strings: id -> (offset in strs, length); hash table of ids */
    struct sbt_buf strs;
    uint64_t *str_at; /* offset << 24 | len is not enough for long strings: two arrays */
    uint32_t *str_len;
    uint32_t n_strings, cap_strings;
    uint32_t *st_tab;
    uint32_t st_cap;

    uint32_t n_devices, n_streams, n_programs, n_kernels;
    struct unsup *unsup;
    uint32_t n_unsup, cap_unsup;
    int incomplete;
    uint32_t incomplete_reason;
    char *incomplete_text; /* the reason as given (salvage writes it again) */
    uint32_t chunks_since_sync;
    int has_state;
    uint64_t last_state_seq;
    uint64_t n_ops_total; /* ops written (fewer than next_seq after a gap) */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = sbt__realloc(*p, c * elem);
    if (!q)
        return sbt__fail(SBT_ENOMEM, "out of memory growing a table to %zu entries", c);
    *p = q;
    *cap = c;
    return 0;
}

/* ========================================================================================== */
/* Writing chunks                                                                             */
/* ========================================================================================== */

static int write_all(sbt_writer *w, const struct iovec *iov, int n)
{
    struct iovec v[3];
    memcpy(v, iov, (size_t)n * sizeof *v);
    int i = 0;
    while (i < n) {
        ssize_t k = writev(w->fd, v + i, n - i);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            w->failed = SBT_EIO;
            int e = errno;
            snprintf(w->failmsg, sizeof w->failmsg, "write at offset %llu failed: %s",
                     (unsigned long long)w->off, strerror(e));
            return sbt__fail(SBT_EIO, "%s", w->failmsg);
        }
        while (i < n && (size_t)k >= v[i].iov_len)
            k -= (ssize_t)v[i++].iov_len;
        if (i < n) {
            v[i].iov_base = (char *)v[i].iov_base + k;
            v[i].iov_len -= (size_t)k;
        }
    }
    return SBT_OK;
}

/* Whether a chunk may compress: a large one (uploads of images, weights, random or already
 * compressed data are common) is judged by compressing 16 KiB from its middle first, which
 * costs 1/64 of a 1 MiB chunk; one whose sample does not shrink by 1/16 is stored as it is.
 * Small chunks (op records, which compress well) are always tried. */
#define SAMPLE_BYTES (16u << 10)
static int worth_compressing(sbt_writer *w, const struct sbt_buf *raw)
{
    if (raw->len < 4 * SAMPLE_BYTES)
        return 1;
    size_t bound = ZSTD_compressBound(SAMPLE_BYTES);
    w->zbuf.len = 0;
    if (sbt__buf_reserve(&w->zbuf, bound))
        return 1; /* let the full attempt report it */
    size_t z = ZSTD_compressCCtx(w->zc, w->zbuf.p, bound, raw->p + raw->len / 2 - SAMPLE_BYTES / 2,
                                 SAMPLE_BYTES, w->o.zstd_level ? w->o.zstd_level : 3);
    return ZSTD_isError(z) || z < SAMPLE_BYTES - SAMPLE_BYTES / 16;
}

/* Compresses and writes one chunk, and records it in the index. Runs on the background thread
 * when there is one (which then owns zc, zbuf, off and idx until close joins it). */
static int write_job(sbt_writer *w, const struct job *j)
{
    const struct sbt_buf *raw = &j->raw;
    struct sbt__chunk_hdr h = {.codec = SBT_CODEC_NONE,
                               .content = j->content,
                               .raw_len = (uint32_t)raw->len,
                               .stored_len = (uint32_t)raw->len,
                               .n_ops = j->n_ops,
                               .seq_first = j->seq_first,
                               .t_min = j->t_min,
                               .t_max = j->t_max};
    const uint8_t *stored = raw->p;
    if (w->o.zstd_level >= 0 && raw->len >= 64 && worth_compressing(w, raw)) {
        size_t bound = ZSTD_compressBound(raw->len);
        w->zbuf.len = 0;
        if (sbt__buf_reserve(&w->zbuf, bound))
            return SBT_ENOMEM;
        size_t z = ZSTD_compressCCtx(w->zc, w->zbuf.p, bound, raw->p, raw->len,
                                     w->o.zstd_level ? w->o.zstd_level : 3);
        if (ZSTD_isError(z))
            return sbt__fail(SBT_ENOMEM, "zstd: %s", ZSTD_getErrorName(z));
        if (z < raw->len - raw->len / 16) { /* store compressed only where it pays */
            h.codec = SBT_CODEC_ZSTD;
            h.stored_len = (uint32_t)z;
            stored = w->zbuf.p;
        }
    }
    h.payload_crc = sbt_crc32c(0, stored, h.stored_len);
    uint8_t hb[SBT_CHUNK_HEADER_LEN];
    sbt__chunk_hdr_encode(&h, hb);
    struct iovec iov[2] = {{hb, sizeof hb}, {(void *)stored, h.stored_len}};
    int st = write_all(w, iov, 2);
    if (st)
        return st;
    if (grow((void **)&w->idx, &w->cap_idx, w->n_idx + 1, sizeof *w->idx))
        return SBT_ENOMEM;
    w->idx[w->n_idx++] =
        (struct sbt_chunk_info){w->off,       h.stored_len, h.raw_len, h.codec, j->content,
                                j->seq_first, j->n_ops,     j->t_min,  j->t_max};
    w->off += SBT_CHUNK_HEADER_LEN + h.stored_len;
    if (j->strings_upto > w->durable_strings)
        w->durable_strings = j->strings_upto;
    if (w->o.sync_every && ++w->chunks_since_sync >= w->o.sync_every) {
        fdatasync(w->fd);
        w->chunks_since_sync = 0;
    }
    return SBT_OK;
}

static void *worker(void *arg)
{
    sbt_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->count && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->count)
            break;
        struct job *j = &w->jobs[w->head];
        pthread_mutex_unlock(&w->mu);
        int st = w->werr ? 0 : write_job(w, j); /* after a failure, drain without writing */
        if (st && !w->werr) {
            snprintf(w->werrmsg, sizeof w->werrmsg, "%s", sbt_errmsg());
            w->werr = st;
        }
        pthread_mutex_lock(&w->mu);
        w->head ^= 1;
        w->count--;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* The worker's failure, re-raised on the calling thread. */
static int worker_failed(sbt_writer *w)
{
    int st = w->werr;
    if (st) {
        w->failed = st;
        return sbt__fail(st, "%s", w->werrmsg);
    }
    return SBT_OK;
}

/* Waits until the background thread has written everything and stops it. */
static int join_worker(sbt_writer *w)
{
    if (!w->threaded)
        return SBT_OK;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    w->threaded = 0;
    return worker_failed(w);
}

/* Writes w->raw as one chunk: now, or by handing it to the background thread (w->raw then
 * comes back as an empty buffer to refill). Returns the chunk's number. */
static int write_chunk(sbt_writer *w, uint32_t content, uint64_t seq_first, uint32_t n_ops,
                       uint64_t t_min, uint64_t t_max)
{
    if (w->raw.len > SBT_MAX_CHUNK_DEFAULT)
        return sbt__fail(SBT_ELIMIT, "chunk of %zu bytes > max chunk size %u", w->raw.len,
                         SBT_MAX_CHUNK_DEFAULT);
    struct job j = {w->raw,
                    content,
                    n_ops,
                    seq_first,
                    t_min,
                    t_max,
                    content & SBT_CHUNK_DICT ? w->n_strings : 0};
    w->n_chunks++;
    if (!w->threaded)
        return write_job(w, &j);
    pthread_mutex_lock(&w->mu);
    while (w->count == 2)
        pthread_cond_wait(&w->cv, &w->mu);
    struct job *slot = &w->jobs[(w->head + w->count) & 1];
    w->raw = slot->raw; /* the slot's old buffer comes back for reuse */
    w->raw.len = 0;
    *slot = j;
    w->count++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return worker_failed(w);
}

static int put_record(struct sbt_buf *b, uint32_t type, const void *body, size_t len)
{
    int st = sbt__buf_varint(b, type);
    st = st ? st : sbt__buf_varint(b, len);
    return st ? st : sbt__buf_put(b, body, len);
}

static int bt_used(const struct blob_ent *e)
{
    return e->len || e->chunk_off || !sbt_hash_is_zero(e->h);
}

/* The slot of h, or the empty slot where it would go. */
static struct blob_ent *bt_find(sbt_writer *w, sbt_hash h)
{
    size_t j = h.lo & (w->bt_cap - 1);
    while (bt_used(&w->bt[j]) && !sbt_hash_eq(w->bt[j].h, h))
        j = (j + 1) & (w->bt_cap - 1);
    return &w->bt[j];
}

static int flush_blobs(sbt_writer *w)
{
    if (!w->n_pending)
        return SBT_OK;
    w->raw.len = 0;
    if (sbt__buf_put(&w->raw, w->blobs.p, w->blobs.len))
        return SBT_ENOMEM;
    int st = write_chunk(w, SBT_CHUNK_BLOBS, w->next_seq, 0, 0, 0);
    if (st)
        return st;
    for (size_t i = 0; i < w->n_pending; i++)
        bt_find(w, w->pending[i])->chunk_off = w->n_chunks; /* number + 1, see blob_ent */
    w->n_pending = 0;
    w->blobs.len = 0;
    return SBT_OK;
}

/* Writes pending dictionary records and ops as one chunk (after pending blobs). */
static int flush_ops(sbt_writer *w)
{
    int st = flush_blobs(w);
    if (st)
        return st;
    if (!w->enc.n_ops && !w->dict.len)
        return SBT_OK;
    w->raw.len = 0;
    uint32_t content = 0;
    if (w->dict.len) {
        content |= SBT_CHUNK_DICT;
        if (sbt__buf_put(&w->raw, w->dict.p, w->dict.len))
            return SBT_ENOMEM;
    }
    uint32_t n_ops = w->enc.n_ops;
    if (n_ops) {
        content |= SBT_CHUNK_OPS;
        w->body.len = 0;
        if ((st = sbt__colenc_emit(&w->enc, w->chunk_seq_first, &w->body)) ||
            (st = put_record(&w->raw, SBT_REC_OPS, w->body.p, w->body.len)))
            return st;
    }
    st = write_chunk(w, content, n_ops ? w->chunk_seq_first : w->next_seq, n_ops,
                     n_ops ? w->t_min : 0, n_ops ? w->t_max : 0);
    if (st)
        return st;
    w->dict.len = 0;
    sbt__colenc_reset(&w->enc);
    w->enc_bytes = 0;
    return SBT_OK;
}

/* ========================================================================================== */
/* Open and close                                                                             */
/* ========================================================================================== */

#define OPT(o, field, dflt)                                                                       \
    ((o) && (o)->sz >= offsetof(struct sbt_writer_opts, field) + sizeof((o)->field) && (o)->field \
         ? (o)->field                                                                             \
         : (dflt))

int sbt_writer_open(const char *path, const struct sbt_writer_opts *opts, sbt_writer **out)
{
    *out = NULL;
    if (!path)
        return sbt__fail(SBT_EINVAL, "sbt_writer_open: no path");
    sbt_writer *w = sbt__calloc(1, sizeof *w);
    if (!w)
        return sbt__fail(SBT_ENOMEM, "out of memory for a writer");
    w->o.chunk_ops = OPT(opts, chunk_ops, 8192u);
    w->o.chunk_bytes = OPT(opts, chunk_bytes, 1u << 20);
    w->o.zstd_level = OPT(opts, zstd_level, 3);
    w->o.sync_every = OPT(opts, sync_every, 0u);
    w->o.threads = OPT(opts, threads, 0u);
    w->o.required_features = OPT(opts, required_features, 0u);
    if (w->o.required_features & ~(uint32_t)SBT_FEATURE__KNOWN) {
        uint32_t f = w->o.required_features;
        sbt__free(w);
        return sbt__fail(SBT_EINVAL, "sbt_writer_open: unknown required features 0x%x",
                         f & ~(uint32_t)SBT_FEATURE__KNOWN);
    }
    if (w->o.chunk_bytes > SBT_MAX_CHUNK_DEFAULT / 2)
        w->o.chunk_bytes = SBT_MAX_CHUNK_DEFAULT / 2;
    w->zc = ZSTD_createCCtx();
    w->fd = -1;
    if (!w->zc) {
        sbt__free(w);
        return sbt__fail(SBT_ENOMEM, "out of memory for a zstd context");
    }
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        int e = errno;
        sbt_writer_abandon(w);
        return sbt__fail(SBT_EIO, "cannot create %s: %s", path, strerror(e));
    }
    uint8_t hb[SBT_FILE_HEADER_LEN] = {0};
    memcpy(hb, SBT_FILE_MAGIC, SBT_FILE_MAGIC_LEN);
    hb[8] = SBT_WRITER_VERSION;
    hb[10] = SBT_MIN_READER_VERSION;
    sbt__put_le32(hb + 12, w->o.required_features);
    sbt__put_le32(hb + 20, SBT_FILE_HEADER_LEN);
    sbt__put_le32(hb + 28, sbt_crc32c(0, hb, 28));
    struct iovec iov = {hb, sizeof hb};
    int st = write_all(w, &iov, 1);
    if (st) {
        sbt_writer_abandon(w);
        return st;
    }
    w->off = SBT_FILE_HEADER_LEN;
    w->enc.cur_gen = 1;
    if (w->o.threads) {
        if (pthread_mutex_init(&w->mu, NULL) || pthread_cond_init(&w->cv, NULL) ||
            pthread_create(&w->th, NULL, worker, w)) {
            sbt_writer_abandon(w);
            return sbt__fail(SBT_ENOMEM, "cannot start the writer thread");
        }
        w->threaded = 1;
    }
    *out = w;
    return SBT_OK;
}

void sbt_writer_abandon(sbt_writer *w)
{
    if (!w)
        return;
    join_worker(w); /* what was handed to it is written: the file stays a readable prefix */
    if (w->fd >= 0)
        close(w->fd);
    for (int i = 0; i < 2; i++)
        sbt__buf_free(&w->jobs[i].raw);
    sbt__buf_free(&w->dict);
    sbt__colenc_free(&w->enc);
    sbt__buf_free(&w->blobs);
    sbt__buf_free(&w->raw);
    sbt__buf_free(&w->zbuf);
    sbt__buf_free(&w->body);
    sbt__buf_free(&w->strs);
    ZSTD_freeCCtx(w->zc);
    sbt__free(w->pending);
    sbt__free(w->bt);
    sbt__free(w->idx);
    sbt__free(w->str_at);
    sbt__free(w->str_len);
    sbt__free(w->st_tab);
    sbt__free(w->unsup);
    free(w->incomplete_text);
    sbt__free(w);
}

static int cmp_blob(const void *a, const void *b)
{
    const struct blob_ent *x = a, *y = b;
    if (x->h.hi != y->h.hi)
        return x->h.hi < y->h.hi ? -1 : 1;
    if (x->h.lo != y->h.lo)
        return x->h.lo < y->h.lo ? -1 : 1;
    return 0;
}

static int write_end_and_index(sbt_writer *w)
{
    int st = 0;
    /* END: the completeness record */
    w->body.len = 0;
    st |= sbt__buf_varint(&w->body, w->incomplete ? 1 : 0);
    st |= sbt__buf_varint(&w->body, w->incomplete_reason);
    st |= sbt__buf_varint(&w->body, w->n_ops_total);
    st |= sbt__buf_varint(&w->body, w->n_unsup);
    for (uint32_t i = 0; i < w->n_unsup; i++) {
        st |= sbt__buf_varint(&w->body, w->unsup[i].what);
        st |= sbt__buf_varint(&w->body, w->unsup[i].count);
    }
    /* grown at the end (FORMAT.md section 5): per call, first op + 1 (0 = unknown), flags */
    for (uint32_t i = 0; i < w->n_unsup; i++) {
        uint64_t f = w->unsup[i].first_seq;
        st |= sbt__buf_varint(&w->body, f == SBT_SEQ_NONE ? 0 : f + 1);
        st |= sbt__buf_varint(&w->body, w->unsup[i].flags);
    }
    w->raw.len = 0;
    if (w->dict.len) /* strings the END record names */
        st |= sbt__buf_put(&w->raw, w->dict.p, w->dict.len);
    st |= put_record(&w->raw, SBT_REC_END, w->body.p, w->body.len);
    if (st)
        return sbt__fail(SBT_ENOMEM, "out of memory writing the END record");
    if ((st = write_chunk(w, SBT_CHUNK_END | (w->dict.len ? SBT_CHUNK_DICT : 0), w->next_seq, 0, 0,
                          0)))
        return st;
    w->dict.len = 0;

    /* INDEX: chunk entries, then blobs sorted by hash */
    w->body.len = 0;
    st |= sbt__buf_varint(&w->body, w->n_idx);
    uint64_t prev_off = 0;
    for (size_t i = 0; i < w->n_idx; i++) {
        const struct sbt_chunk_info *c = &w->idx[i];
        st |= sbt__buf_varint(&w->body, c->offset - prev_off);
        prev_off = c->offset;
        st |= sbt__buf_varint(&w->body, c->stored_len);
        st |= sbt__buf_varint(&w->body, c->raw_len);
        st |= sbt__buf_varint(&w->body, c->codec);
        st |= sbt__buf_varint(&w->body, c->content);
        st |= sbt__buf_varint(&w->body, c->seq_first);
        st |= sbt__buf_varint(&w->body, c->n_ops);
        st |= sbt__buf_varint(&w->body, c->t_min);
        st |= sbt__buf_varint(&w->body, c->t_max - c->t_min);
    }
    w->raw.len = 0;
    st |= put_record(&w->raw, SBT_REC_INDEX, w->body.p, w->body.len);
    /* compact the hash table into a sorted array in place; chunk numbers become offsets */
    size_t n = 0;
    for (size_t i = 0; i < w->bt_cap; i++)
        if (bt_used(&w->bt[i])) {
            w->bt[n] = w->bt[i];
            uint64_t k = w->bt[n].chunk_off - 1;
            assert(w->bt[n].chunk_off && k < w->n_idx); /* every blob was flushed and written */
            w->bt[n++].chunk_off = w->idx[k].offset;
        }
    if (n)
        qsort(w->bt, n, sizeof *w->bt, cmp_blob);
    w->bt_cap = 0; /* the table is no longer a hash table */
    w->body.len = 0;
    st |= sbt__buf_varint(&w->body, n);
    for (size_t i = 0; i < n; i++) {
        uint8_t hb[16];
        sbt__put_hash(hb, w->bt[i].h);
        st |= sbt__buf_put(&w->body, hb, 16);
        st |= sbt__buf_varint(&w->body, w->bt[i].chunk_off);
        st |= sbt__buf_varint(&w->body, w->bt[i].pos);
        st |= sbt__buf_varint(&w->body, w->bt[i].len);
    }
    st |= put_record(&w->raw, SBT_REC_BLOB_INDEX, w->body.p, w->body.len);
    if (st)
        return sbt__fail(SBT_ENOMEM, "out of memory writing the index");
    uint64_t index_off = w->off;
    if ((st = write_chunk(w, SBT_CHUNK_INDEX, w->next_seq, 0, 0, 0)))
        return st;
    uint8_t tr[SBT_TRAILER_LEN];
    sbt__put_le64(tr, index_off);
    sbt__put_le32(tr + 8, sbt_crc32c(0, tr, 8));
    sbt__put_le32(tr + 12, SBT_TRAILER_MAGIC);
    struct iovec iov = {tr, sizeof tr};
    return write_all(w, &iov, 1);
}

static int dict_record(sbt_writer *w, uint32_t type);
static int str_rehash(sbt_writer *w);

/* After a write failed (a full disk, a quota, an I/O error): the file is cut back to its chunks
 * written whole, and closed with an END record that says why and where it stops, and an
 * index, so that it reads as what it is, not as a capture cut short by a crash. What the
 * lost chunks defined is dropped (their tables, strings, blobs and ops); the strings the END
 * names are interned again. Needs the worker joined. */
static int salvage(sbt_writer *w)
{
    char why[1024];
    snprintf(why, sizeof why, "%s", w->failmsg[0] ? w->failmsg : "a write failed");
    if (ftruncate(w->fd, (off_t)w->off) < 0 || lseek(w->fd, (off_t)w->off, SEEK_SET) < 0)
        return SBT_EIO;
    w->failed = 0;
    w->werr = 0;
    uint64_t n_ops = 0, seq_end = 0;
    for (size_t i = 0; i < w->n_idx; i++)
        if (w->idx[i].content & SBT_CHUNK_OPS) {
            n_ops += w->idx[i].n_ops;
            if (w->idx[i].seq_first + w->idx[i].n_ops > seq_end)
                seq_end = w->idx[i].seq_first + w->idx[i].n_ops;
        }
    w->n_ops_total = n_ops;
    w->next_seq = seq_end;
    /* lost: pending and unwritten records (tables, ops), blobs of chunks never written */
    w->dict.len = 0;
    sbt__colenc_reset(&w->enc);
    w->n_pending = 0;
    w->blobs.len = 0;
    for (size_t i = 0; i < w->bt_cap; i++)
        if (bt_used(&w->bt[i]) && (!w->bt[i].chunk_off || w->bt[i].chunk_off > w->n_idx))
            memset(&w->bt[i], 0, sizeof w->bt[i]);
    /* the strings no written chunk defines are forgotten (ids stay consecutive in the file);
     * those the END names are interned again */
    char **names = sbt__calloc(w->n_unsup + 1, sizeof *names);
    if (!names)
        return SBT_ENOMEM;
    for (uint32_t i = 0; i < w->n_unsup; i++)
        names[i] = strndup((const char *)w->strs.p + w->str_at[w->unsup[i].what],
                           w->str_len[w->unsup[i].what]);
    uint32_t d = w->durable_strings;
    w->n_strings = d;
    w->strs.len = d ? w->str_at[d] + w->str_len[d] : 0;
    w->st_cap /= 2; /* rebuilt at the same size */
    int st = str_rehash(w);
    for (uint32_t i = 0; i < w->n_unsup; i++) {
        if (!st)
            st = names[i] ? sbt_writer_intern(w, names[i], &w->unsup[i].what) : SBT_ENOMEM;
        free(names[i]);
    }
    sbt__free(names);
    if (st)
        return st;
    char reason[2048];
    int said = w->incomplete_text && strstr(w->incomplete_text, why); /* the caller's words */
    snprintf(reason, sizeof reason,
             "%s%sthe trace could not be written%s%s%s: it holds the ops before op %" PRIu64
             " and nothing after",
             w->incomplete_text ? w->incomplete_text : "", w->incomplete_text ? "; " : "",
             said ? "" : " (", said ? "" : why, said ? "" : ")", seq_end);
    w->incomplete = 0;
    free(w->incomplete_text);
    w->incomplete_text = NULL;
    if ((st = sbt_writer_mark_incomplete(w, reason)))
        return st;
    return write_end_and_index(w);
}

int sbt_writer_close(sbt_writer *w)
{
    if (!w)
        return SBT_OK;
    int st = w->failed;
    if (!st)
        st = flush_ops(w);
    int jst = join_worker(w); /* from here on everything is written on this thread */
    if (!st)
        st = jst;
    if (st == SBT_EIO && w->fd >= 0) { /* what was written whole stays a trace that says why */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", w->failmsg[0] ? w->failmsg : sbt_errmsg());
        int ss = salvage(w);
        if (!ss && fsync(w->fd) < 0 && errno != EINVAL)
            ss = SBT_EIO;
        close(w->fd);
        w->fd = -1;
        sbt_writer_abandon(w);
        return sbt__fail(SBT_EIO, "%s%s", msg,
                         ss ? "; the trace could not be closed either: it reads as cut short"
                            : "; closed with what was written whole, its END saying so");
    }
    if (!st)
        st = write_end_and_index(w);
    if (!st && fsync(w->fd) < 0 && errno != EINVAL)
        st = sbt__fail(SBT_EIO, "fsync failed: %s", strerror(errno));
    if (close(w->fd) < 0 && !st)
        st = sbt__fail(SBT_EIO, "close failed: %s", strerror(errno));
    w->fd = -1;
    sbt_writer_abandon(w);
    return st;
}

int sbt_writer_flush(sbt_writer *w)
{
    if (!w)
        return sbt__fail(SBT_EINVAL, "sbt_writer_flush: NULL writer");
    if (w->failed)
        return w->failed;
    return flush_ops(w);
}

/* ========================================================================================== */
/* Strings and tables                                                                         */
/* ========================================================================================== */

static int dict_record(sbt_writer *w, uint32_t type)
{
    int st = put_record(&w->dict, type, w->body.p, w->body.len);
    if (st)
        return st;
    if (w->dict.len >= w->o.chunk_bytes) /* a flood of definitions: cut a chunk */
        return flush_ops(w);
    return SBT_OK;
}

static int str_rehash(sbt_writer *w)
{
    uint32_t cap = w->st_cap ? w->st_cap * 2 : 1024;
    uint32_t *t = sbt__calloc(cap, sizeof *t);
    if (!t)
        return sbt__fail(SBT_ENOMEM, "out of memory for the string table");
    for (uint32_t id = 1; id <= w->n_strings; id++) {
        uint64_t h = XXH3_64bits(w->strs.p + w->str_at[id], w->str_len[id]);
        uint32_t i = (uint32_t)h & (cap - 1);
        while (t[i])
            i = (i + 1) & (cap - 1);
        t[i] = id;
    }
    sbt__free(w->st_tab);
    w->st_tab = t;
    w->st_cap = cap;
    return SBT_OK;
}

int sbt_writer_intern_len(sbt_writer *w, const char *s, size_t len, uint32_t *id)
{
    if (!w || !id || (len && !s))
        return sbt__fail(SBT_EINVAL, "sbt_writer_intern: NULL argument");
    if (w->failed)
        return w->failed;
    if (len == 0) {
        *id = 0;
        return SBT_OK;
    }
    if (len > (1u << 24))
        return sbt__fail(SBT_ELIMIT, "string of %zu bytes > max 16 MiB", len);
    if ((w->n_strings + 1) * 2 > w->st_cap && str_rehash(w))
        return SBT_ENOMEM;
    uint64_t h = XXH3_64bits(s, len);
    uint32_t i = (uint32_t)h & (w->st_cap - 1);
    for (; w->st_tab[i]; i = (i + 1) & (w->st_cap - 1)) {
        uint32_t c = w->st_tab[i];
        if (w->str_len[c] == len && !memcmp(w->strs.p + w->str_at[c], s, len)) {
            *id = c;
            return SBT_OK;
        }
    }
    uint32_t nid = w->n_strings + 1;
    size_t cap = w->cap_strings;
    if (grow((void **)&w->str_at, &cap, nid + 1, sizeof *w->str_at))
        return SBT_ENOMEM;
    cap = w->cap_strings;
    if (grow((void **)&w->str_len, &cap, nid + 1, sizeof *w->str_len))
        return SBT_ENOMEM;
    w->cap_strings = (uint32_t)cap;
    w->str_at[nid] = w->strs.len;
    w->str_len[nid] = (uint32_t)len;
    if (sbt__buf_put(&w->strs, s, len))
        return SBT_ENOMEM;
    w->body.len = 0;
    if (sbt__buf_varint(&w->body, nid) || sbt__buf_put(&w->body, s, len))
        return SBT_ENOMEM;
    w->st_tab[i] = nid;
    w->n_strings = nid;
    *id = nid;
    return dict_record(w, SBT_REC_STRING);
}

int sbt_writer_intern(sbt_writer *w, const char *s, uint32_t *id)
{
    return sbt_writer_intern_len(w, s, s ? strlen(s) : 0, id);
}

#define CHECK_STR(w, id, what)                                                               \
    do {                                                                                     \
        if ((id) > (w)->n_strings)                                                           \
            return sbt__fail(SBT_EINVAL, "%s: string id %u not interned (%u strings)", what, \
                             (unsigned)(id), (w)->n_strings);                                \
    } while (0)

int sbt_writer_add_device(sbt_writer *w, const struct sbt_device *d, uint32_t *id)
{
    if (!w || !d || !id)
        return sbt__fail(SBT_EINVAL, "sbt_writer_add_device: NULL argument");
    if (w->failed)
        return w->failed;
    CHECK_STR(w, d->name, "device name");
    CHECK_STR(w, d->host, "device host");
    struct sbt_device c = *d;
    c.id = w->n_devices + 1;
    w->body.len = 0;
    int st = sbt__enc_device(&w->body, &c);
    if (st || (st = dict_record(w, SBT_REC_DEVICE)))
        return st;
    *id = ++w->n_devices;
    return SBT_OK;
}

int sbt_writer_add_stream(sbt_writer *w, const struct sbt_stream *s, uint32_t *id)
{
    if (!w || !s || !id)
        return sbt__fail(SBT_EINVAL, "sbt_writer_add_stream: NULL argument");
    if (w->failed)
        return w->failed;
    CHECK_STR(w, s->name, "stream name");
    if (s->device > w->n_devices)
        return sbt__fail(SBT_EINVAL, "stream: device %u not added (%u devices)", s->device,
                         w->n_devices);
    struct sbt_stream c = *s;
    c.id = w->n_streams + 1;
    w->body.len = 0;
    int st = sbt__enc_stream(&w->body, &c);
    if (st || (st = dict_record(w, SBT_REC_STREAM)))
        return st;
    *id = ++w->n_streams;
    return SBT_OK;
}

int sbt_writer_add_program(sbt_writer *w, const struct sbt_program *p, uint32_t *id)
{
    if (!w || !p || !id)
        return sbt__fail(SBT_EINVAL, "sbt_writer_add_program: NULL argument");
    if (w->failed)
        return w->failed;
    CHECK_STR(w, p->name, "program name");
    struct sbt_program c = *p;
    c.id = w->n_programs + 1;
    w->body.len = 0;
    int st = sbt__enc_program(&w->body, &c);
    if (st || (st = dict_record(w, SBT_REC_PROGRAM)))
        return st;
    *id = ++w->n_programs;
    return SBT_OK;
}

int sbt_writer_add_kernel(sbt_writer *w, const struct sbt_kernel *k, uint32_t *id)
{
    if (!w || !k || !id)
        return sbt__fail(SBT_EINVAL, "sbt_writer_add_kernel: NULL argument");
    if (w->failed)
        return w->failed;
    CHECK_STR(w, k->name, "kernel name");
    if (k->program > w->n_programs)
        return sbt__fail(SBT_EINVAL, "kernel: program %u not added (%u programs)", k->program,
                         w->n_programs);
    struct sbt_kernel c = *k;
    c.id = w->n_kernels + 1;
    w->body.len = 0;
    int st = sbt__enc_kernel(&w->body, &c);
    if (st || (st = dict_record(w, SBT_REC_KERNEL)))
        return st;
    *id = ++w->n_kernels;
    return SBT_OK;
}

int sbt_writer_meta(sbt_writer *w, const char *key, const char *value)
{
    uint32_t k, v;
    int st = sbt_writer_intern(w, key, &k);
    if (st || (st = sbt_writer_intern(w, value ? value : "", &v)))
        return st;
    w->body.len = 0;
    if (sbt__buf_varint(&w->body, k) || sbt__buf_varint(&w->body, v))
        return SBT_ENOMEM;
    return dict_record(w, SBT_REC_META);
}

int sbt_writer_unsupported(sbt_writer *w, const char *what, uint64_t count, uint64_t first_seq,
                           uint32_t flags)
{
    uint32_t id;
    /* after a failed write too: the END that close salvages names it */
    int failed = w ? w->failed : 0;
    if (w)
        w->failed = 0;
    int st = sbt_writer_intern(w, what, &id);
    if (w)
        w->failed = failed;
    if (st)
        return st;
    for (uint32_t i = 0; i < w->n_unsup; i++)
        if (w->unsup[i].what == id) {
            struct unsup *u = &w->unsup[i];
            u->count += count;
            u->flags |= flags;
            if (first_seq < u->first_seq)
                u->first_seq = first_seq;
            return SBT_OK;
        }
    size_t cap = w->cap_unsup;
    if (grow((void **)&w->unsup, &cap, w->n_unsup + 1, sizeof *w->unsup))
        return SBT_ENOMEM;
    w->cap_unsup = (uint32_t)cap;
    w->unsup[w->n_unsup++] = (struct unsup){id, count, first_seq, flags};
    return SBT_OK;
}

int sbt_writer_mark_incomplete(sbt_writer *w, const char *reason)
{
    if (!w)
        return sbt__fail(SBT_EINVAL, "sbt_writer_mark_incomplete: NULL writer");
    if (w->incomplete)
        return SBT_OK;
    w->incomplete = 1;
    free(w->incomplete_text);
    w->incomplete_text = strdup(reason ? reason : "unspecified");
    if (w->failed) /* interned when the trace is salvaged at close */
        return SBT_OK;
    return sbt_writer_intern(w, reason ? reason : "unspecified", &w->incomplete_reason);
}

/* ========================================================================================== */
/* Blobs                                                                                      */
/* ========================================================================================== */

static int bt_rehash(sbt_writer *w)
{
    size_t cap = w->bt_cap ? w->bt_cap * 2 : 1024;
    struct blob_ent *t = sbt__calloc(cap, sizeof *t);
    if (!t)
        return sbt__fail(SBT_ENOMEM, "out of memory for the blob table (%zu)", cap);
    struct blob_ent *old = w->bt;
    size_t old_cap = w->bt_cap;
    w->bt = t;
    w->bt_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (bt_used(&old[i]))
            *bt_find(w, old[i].h) = old[i];
    sbt__free(old);
    return SBT_OK;
}

int sbt_writer_has_blob(const sbt_writer *w, const sbt_hash *hash)
{
    if (!w || !hash || !w->bt_cap)
        return 0;
    size_t j = hash->lo & (w->bt_cap - 1);
    for (; bt_used(&w->bt[j]); j = (j + 1) & (w->bt_cap - 1))
        if (sbt_hash_eq(w->bt[j].h, *hash))
            return 1;
    return 0;
}

int sbt_writer_blob(sbt_writer *w, const void *data, size_t len, sbt_hash *hash)
{
    if (!w || !hash || (len && !data))
        return sbt__fail(SBT_EINVAL, "sbt_writer_blob: NULL argument");
    if (w->failed)
        return w->failed;
    if (len > SBT_MAX_CHUNK_DEFAULT - 64)
        return sbt__fail(SBT_ELIMIT, "blob of %zu bytes > max %u bytes", len,
                         SBT_MAX_CHUNK_DEFAULT - 64);
    sbt_hash h = sbt_hash_bytes(data, len);
    *hash = h;
    if ((w->bt_n + 1) * 2 > w->bt_cap && bt_rehash(w))
        return SBT_ENOMEM;
    if (bt_used(bt_find(w, h)))
        return SBT_OK; /* stored already */
    if (w->blobs.len && w->blobs.len + len > w->o.chunk_bytes) {
        int st = flush_blobs(w);
        if (st)
            return st;
    }
    uint8_t hb[16];
    sbt__put_hash(hb, h);
    int st = sbt__buf_varint(&w->blobs, SBT_REC_BLOB);
    st = st ? st : sbt__buf_varint(&w->blobs, 16 + len);
    st = st ? st : sbt__buf_put(&w->blobs, hb, 16);
    size_t pos = w->blobs.len;
    st = st ? st : sbt__buf_put(&w->blobs, data, len);
    if (st || grow((void **)&w->pending, &w->cap_pending, w->n_pending + 1, sizeof *w->pending))
        return SBT_ENOMEM;
    *bt_find(w, h) = (struct blob_ent){h, 0, pos, len};
    w->bt_n++;
    w->blob_bytes += len;
    w->pending[w->n_pending++] = h;
    return SBT_OK;
}

/* ========================================================================================== */
/* States                                                                                     */
/* ========================================================================================== */

int sbt_writer_add_state(sbt_writer *w, const struct sbt_state *s)
{
    if (!w || !s || (s->n_alloc && !s->alloc))
        return sbt__fail(SBT_EINVAL, "sbt_writer_add_state: NULL argument");
    if (w->failed)
        return w->failed;
    if (w->has_state && s->seq < w->last_state_seq)
        return sbt__fail(SBT_EINVAL,
                         "state at op %llu after a state at op %llu (must not decrease)",
                         (unsigned long long)s->seq, (unsigned long long)w->last_state_seq);
    for (uint32_t i = 0; i < s->n_alloc; i++) {
        const struct sbt_state_alloc *a = &s->alloc[i];
        for (uint64_t k = 0; k < a->n_present; k++)
            if (!w->bt_cap || !bt_used(bt_find(w, a->hash[k]))) {
                char hex[33];
                return sbt__fail(SBT_EINVAL,
                                 "state at op %llu: resource %llu chunk %llu: blob %s was not "
                                 "written",
                                 (unsigned long long)s->seq, (unsigned long long)a->resource,
                                 (unsigned long long)a->index[k], sbt_hash_hex(a->hash[k], hex));
            }
    }
    /* what the state names goes out first: blobs, pending definitions and ops */
    int st = flush_ops(w);
    if (st)
        return st;
    w->body.len = 0;
    if ((st = sbt__enc_state(&w->body, s)))
        return st;
    w->raw.len = 0;
    if ((st = put_record(&w->raw, SBT_REC_STATE, w->body.p, w->body.len)))
        return st;
    if ((st = write_chunk(w, SBT_CHUNK_STATE, s->seq, 0, s->time, s->time)))
        return st;
    w->has_state = 1;
    w->last_state_seq = s->seq;
    return SBT_OK;
}

/* ========================================================================================== */
/* Ops                                                                                        */
/* ========================================================================================== */

int sbt_writer_set_next_seq(sbt_writer *w, uint64_t seq)
{
    if (!w)
        return sbt__fail(SBT_EINVAL, "sbt_writer_set_next_seq: NULL writer");
    if (w->failed)
        return w->failed;
    if (seq < w->next_seq)
        return sbt__fail(SBT_EINVAL, "next op seq %llu < %llu: seq numbers only increase",
                         (unsigned long long)seq, (unsigned long long)w->next_seq);
    if (seq == w->next_seq)
        return SBT_OK;
    /* an OPS record holds consecutive seqs: a gap starts a new chunk */
    int st = w->enc.n_ops ? flush_ops(w) : SBT_OK;
    if (st)
        return st;
    w->next_seq = seq;
    return SBT_OK;
}

int sbt_writer_add_op(sbt_writer *w, const struct sbt_op *op, uint64_t *seq)
{
    if (!w || !op)
        return sbt__fail(SBT_EINVAL, "sbt_writer_add_op: NULL argument");
    if (w->failed)
        return w->failed;
    if (op->name > w->n_strings || op->stream > w->n_streams ||
        ((op->flags & SBT_OPF_KERNEL) && op->kernel > w->n_kernels) ||
        ((op->flags & SBT_OPF_ERROR) && op->error > w->n_strings))
        return sbt__fail(SBT_EINVAL,
                         "op %llu: name %u, stream %u or kernel %u refers to nothing defined",
                         (unsigned long long)w->next_seq, op->name, op->stream, op->kernel);
    if (w->enc.n_ops == 0) {
        w->chunk_seq_first = w->next_seq;
        w->t_min = UINT64_MAX;
        w->t_max = 0;
    }
    int st = sbt__colenc_add(&w->enc, op);
    if (st)
        return st;
    uint64_t b, e;
    sbt_op_span(op, &b, &e);
    if (b < w->t_min)
        w->t_min = b;
    if (e > w->t_max)
        w->t_max = e;
    if (seq)
        *seq = w->next_seq;
    w->next_seq++;
    w->n_ops_total++;
    if ((w->enc.n_ops & 63) == 0) {
        w->enc_bytes = 0;
        for (int i = 0; i < SBT_N_COLS; i++)
            w->enc_bytes += w->enc.col[i].len;
    }
    if (w->enc.n_ops >= w->o.chunk_ops || w->enc_bytes >= w->o.chunk_bytes ||
        w->enc.col[SBT_COL_PAYLOAD].len >= w->o.chunk_bytes)
        return flush_ops(w);
    return SBT_OK;
}
