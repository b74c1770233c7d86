/*
 * format/sbt_reader.c — reading SBT files: open (footer index or recovery scan), tables, blobs,
 * range cursors, and validate.
 *
 * Memory: the chunk index (one entry per chunk), the tables and strings (proportional to
 * distinct content) and the blob index stay in memory; op chunks are read one at a time by each
 * cursor, so iterating a 100M-op trace needs one chunk of buffers, not the trace.
 *
 * Seeks: op chunks are in seq order, so a seq seek is a binary search on seq_first. Chunk time
 * ranges need not be monotonic (ops are in capture order, device times can run late), so a time
 * seek searches the running maximum of t_max, which is monotonic: every chunk before the found
 * one ends before the window starts. The suffix minimum of t_min says when no later chunk can
 * start inside the window.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "format/sbt_int.h"

struct blob_loc {
    sbt_hash h;
    uint64_t chunk_off, pos, len;
};

struct sbt_reader {
    int fd;
    char *path;
    uint32_t max_chunk;
    struct sbt_info info;
    uint32_t header_len;

    struct sbt_chunk_info *chunks;
    uint64_t n_chunks, cap_chunks;
    uint64_t *opc; /* indices of op chunks */
    uint64_t n_opc;
    uint64_t *runmax_tmax, *sufmin_tmin; /* per op chunk */

    struct sbt_buf strs; /* NUL-terminated strings */
    uint64_t *str_off;   /* by id; [0] is "" */
    uint32_t n_strings, cap_strings;

    struct sbt_device *devices;
    struct sbt_stream *streams;
    struct sbt_program *programs;
    struct sbt_kernel *kernels;
    uint32_t n_devices, n_streams, n_programs, n_kernels;
    uint32_t cap_devices, cap_streams, cap_programs, cap_kernels;
    struct sbt_meta *meta;
    uint32_t n_meta, cap_meta;
    struct sbt_unsupported *unsup;
    uint32_t n_unsup;
    void **exts; /* copies of ext bytes, freed at close */
    uint64_t n_exts, cap_exts;

    struct blob_loc *blobs; /* sorted by hash */
    uint64_t n_blobs, cap_blobs;

    uint64_t *stc; /* indices of STATE chunks, in file order (increasing seq) */
    uint64_t n_stc, cap_stc;

    struct sbt_buf stored, raw; /* scratch for open, tables, blobs and states */
    uint64_t raw_off;           /* the chunk whose payload raw holds (blob reads), or 0 */
    ZSTD_DCtx *zd;
};

static int grow(void **p, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    if (c > SIZE_MAX / elem)
        return sbt__fail(SBT_ENOMEM, "table of %" PRIu64 " entries too large", c);
    void *q = sbt__realloc(*p, (size_t)c * elem);
    if (!q)
        return sbt__fail(SBT_ENOMEM, "out of memory growing a table to %" PRIu64 " entries", c);
    *p = q;
    *cap = c;
    return 0;
}

static int grow32(void **p, uint32_t *cap, uint64_t need, size_t elem)
{
    uint64_t c = *cap;
    int st = grow(p, &c, need, elem);
    *cap = (uint32_t)c;
    return st;
}

static int pread_all(const sbt_reader *r, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t k = pread(r->fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return sbt__fail(SBT_EIO, "%s: read of %zu bytes at offset %" PRIu64 " failed: %s",
                             r->path, len, off, strerror(errno));
        if (k == 0)
            return sbt__fail(SBT_ECORRUPT,
                             "%s: file ends at offset %" PRIu64
                             " inside a read of %zu bytes at offset %" PRIu64,
                             r->path, off + got, len, off);
        got += (size_t)k;
    }
    return SBT_OK;
}

/* ========================================================================================== */
/* Chunks                                                                                     */
/* ========================================================================================== */

/* Reads and checks the chunk header at off. */
static int read_hdr(const sbt_reader *r, uint64_t off, struct sbt__chunk_hdr *h)
{
    uint8_t hb[SBT_CHUNK_HEADER_LEN];
    if (off + SBT_CHUNK_HEADER_LEN > r->info.file_bytes)
        return sbt__fail(SBT_ECORRUPT,
                         "offset %" PRIu64 ": chunk header runs past end of file (%" PRIu64
                         " bytes)",
                         off, r->info.file_bytes);
    int st = pread_all(r, hb, sizeof hb, off);
    if (st || (st = sbt__chunk_hdr_decode(hb, off, h)))
        return st;
    if (h->stored_len > r->max_chunk || h->raw_len > r->max_chunk)
        return sbt__fail(SBT_ELIMIT,
                         "offset %" PRIu64 ": chunk of %u bytes (%u raw) > max_chunk_bytes %u", off,
                         h->stored_len, h->raw_len, r->max_chunk);
    if (off + SBT_CHUNK_HEADER_LEN + h->stored_len > r->info.file_bytes)
        return sbt__fail(SBT_ECORRUPT,
                         "offset %" PRIu64 ": chunk of %u bytes runs past end of file (%" PRIu64
                         " bytes): torn write",
                         off, h->stored_len, r->info.file_bytes);
    return SBT_OK;
}

/* Reads the payload of the chunk at off (header h) into raw, checking CRC and size. */
static int read_payload(const sbt_reader *r, uint64_t off, const struct sbt__chunk_hdr *h,
                        struct sbt_buf *stored, struct sbt_buf *raw, ZSTD_DCtx *zd)
{
    struct sbt_buf *dst = h->codec == SBT_CODEC_NONE ? raw : stored;
    dst->len = 0;
    if (sbt__buf_reserve(dst, h->stored_len))
        return SBT_ENOMEM;
    int st = pread_all(r, dst->p, h->stored_len, off + SBT_CHUNK_HEADER_LEN);
    if (st)
        return st;
    dst->len = h->stored_len;
    uint32_t crc = sbt_crc32c(0, dst->p, dst->len);
    if (crc != h->payload_crc && SBT__ENFORCE_CHECKSUMS)
        return sbt__fail(SBT_ECORRUPT,
                         "chunk at offset %" PRIu64 ": payload CRC mismatch (stored %08x, "
                         "computed %08x): the chunk's %u bytes are damaged",
                         off, h->payload_crc, crc, h->stored_len);
    if (h->codec == SBT_CODEC_ZSTD) {
        raw->len = 0;
        if (sbt__buf_reserve(raw, h->raw_len))
            return SBT_ENOMEM;
        size_t n = ZSTD_decompressDCtx(zd, raw->p, h->raw_len, stored->p, stored->len);
        if (ZSTD_isError(n) || n != h->raw_len)
            return sbt__fail(SBT_ECORRUPT,
                             "chunk at offset %" PRIu64 ": zstd payload does not decode to %u "
                             "bytes (%s)",
                             off, h->raw_len, ZSTD_isError(n) ? ZSTD_getErrorName(n) : "size");
        raw->len = n;
    }
    return SBT_OK;
}

static int read_chunk_at(const sbt_reader *r, const struct sbt_chunk_info *c,
                         struct sbt_buf *stored, struct sbt_buf *raw, ZSTD_DCtx *zd)
{
    struct sbt__chunk_hdr h;
    int st = read_hdr(r, c->offset, &h);
    if (st)
        return st;
    if (h.stored_len != c->stored_len || h.raw_len != c->raw_len || h.content != c->content ||
        h.n_ops != c->n_ops || h.seq_first != c->seq_first)
        return sbt__fail(SBT_ECORRUPT,
                         "chunk at offset %" PRIu64 ": header disagrees with the footer index",
                         c->offset);
    return read_payload(r, c->offset, &h, stored, raw, zd);
}

/* Iterates the records of a payload. Returns 1 with *type and body set, 0 at the end. */
static int next_record(struct sbt__rd *p, uint32_t *type, struct sbt__rd *body)
{
    if (p->pos == p->len)
        return 0;
    uint64_t len;
    const uint8_t *b;
    int st;
    p->what = "record header";
    if ((st = sbt__rd_u32(p, type)) || (st = sbt__rd_varint(p, &len)))
        return st;
    if (len > p->len - p->pos)
        return sbt__fail(SBT_ECORRUPT,
                         "chunk at offset %" PRIu64 ": record type %u of %" PRIu64
                         " bytes at byte %zu runs past the chunk (%zu bytes)",
                         p->file_off, *type, len, p->pos, p->len);
    if ((st = sbt__rd_bytes(p, (size_t)len, &b)))
        return st;
    *body = (struct sbt__rd){b, (size_t)len, 0, p->file_off, "record"};
    return 1;
}

static int unknown_record(uint32_t type, uint64_t off)
{
    if (type >= SBT_REC_SKIPPABLE)
        return 0;
    return sbt__fail(SBT_EVERSION,
                     "chunk at offset %" PRIu64 ": record type %u is unknown and not skippable: "
                     "the trace needs a newer reprise (this one reads format version %d)",
                     off, type, SBT_READER_VERSION);
}

/* ========================================================================================== */
/* Tables                                                                                     */
/* ========================================================================================== */

static int keep_ext(sbt_reader *r, struct sbt_ext *x)
{
    if (!x->len) {
        x->data = NULL;
        return SBT_OK;
    }
    void *c = sbt__malloc(x->len);
    if (!c || grow((void **)&r->exts, &r->cap_exts, r->n_exts + 1, sizeof *r->exts)) {
        sbt__free(c);
        return sbt__fail(SBT_ENOMEM, "out of memory for table payloads");
    }
    memcpy(c, x->data, x->len);
    r->exts[r->n_exts++] = c;
    x->data = c;
    return SBT_OK;
}

static int bad_id(uint64_t off, const char *what, uint32_t id, uint32_t want)
{
    return sbt__fail(SBT_ECORRUPT, "chunk at offset %" PRIu64 ": %s record has id %u, expected %u",
                     off, what, id, want);
}

static int add_string(sbt_reader *r, struct sbt__rd *b)
{
    uint32_t id;
    int st = sbt__rd_u32(b, &id);
    if (st)
        return st;
    if (id != r->n_strings + 1)
        return bad_id(b->file_off, "string", id, r->n_strings + 1);
    if (grow32((void **)&r->str_off, &r->cap_strings, (uint64_t)id + 1, sizeof *r->str_off))
        return SBT_ENOMEM;
    r->str_off[id] = r->strs.len;
    uint8_t nul = 0;
    if (sbt__buf_put(&r->strs, b->p + b->pos, b->len - b->pos) || sbt__buf_put(&r->strs, &nul, 1))
        return SBT_ENOMEM;
    r->n_strings = id;
    return SBT_OK;
}

static int parse_tables(sbt_reader *r, const struct sbt_buf *raw, uint64_t off)
{
    struct sbt__rd p = {raw->p, raw->len, 0, off, "chunk"};
    struct sbt__rd b;
    uint32_t type;
    int st;
    while ((st = next_record(&p, &type, &b)) == 1) {
        st = SBT_OK;
        switch (type) {
        case SBT_REC_STRING:
            b.what = "string record";
            st = add_string(r, &b);
            break;
        case SBT_REC_DEVICE: {
            struct sbt_device d;
            b.what = "device record";
            if ((st = sbt__dec_device(&b, &d)) || (st = keep_ext(r, &d.ext)))
                break;
            if (d.id != r->n_devices + 1)
                return bad_id(off, "device", d.id, r->n_devices + 1);
            if ((st = grow32((void **)&r->devices, &r->cap_devices, d.id, sizeof d)))
                break;
            r->devices[r->n_devices++] = d;
            break;
        }
        case SBT_REC_STREAM: {
            struct sbt_stream s;
            b.what = "stream record";
            if ((st = sbt__dec_stream(&b, &s)) || (st = keep_ext(r, &s.ext)))
                break;
            if (s.id != r->n_streams + 1)
                return bad_id(off, "stream", s.id, r->n_streams + 1);
            if ((st = grow32((void **)&r->streams, &r->cap_streams, s.id, sizeof s)))
                break;
            r->streams[r->n_streams++] = s;
            break;
        }
        case SBT_REC_PROGRAM: {
            struct sbt_program pr;
            b.what = "program record";
            if ((st = sbt__dec_program(&b, &pr)) || (st = keep_ext(r, &pr.ext)))
                break;
            if (pr.id != r->n_programs + 1)
                return bad_id(off, "program", pr.id, r->n_programs + 1);
            if ((st = grow32((void **)&r->programs, &r->cap_programs, pr.id, sizeof pr)))
                break;
            r->programs[r->n_programs++] = pr;
            break;
        }
        case SBT_REC_KERNEL: {
            struct sbt_kernel k;
            b.what = "kernel record";
            if ((st = sbt__dec_kernel(&b, &k)) || (st = keep_ext(r, &k.ext)))
                break;
            if (k.id != r->n_kernels + 1)
                return bad_id(off, "kernel", k.id, r->n_kernels + 1);
            if ((st = grow32((void **)&r->kernels, &r->cap_kernels, k.id, sizeof k)))
                break;
            r->kernels[r->n_kernels++] = k;
            break;
        }
        case SBT_REC_META: {
            struct sbt_meta m;
            b.what = "meta record";
            if ((st = sbt__rd_u32(&b, &m.key)) || (st = sbt__rd_u32(&b, &m.value)))
                break;
            if ((st = grow32((void **)&r->meta, &r->cap_meta, r->n_meta + 1, sizeof m)))
                break;
            r->meta[r->n_meta++] = m;
            break;
        }
        case SBT_REC_END: {
            uint64_t flags, total, n;
            uint32_t reason;
            b.what = "END record";
            if ((st = sbt__rd_varint(&b, &flags)) || (st = sbt__rd_u32(&b, &reason)) ||
                (st = sbt__rd_varint(&b, &total)) || (st = sbt__rd_varint(&b, &n)))
                break;
            if (n > b.len)
                return sbt__fail(SBT_ECORRUPT,
                                 "chunk at offset %" PRIu64 ": END record lists %" PRIu64
                                 " unsupported calls in %zu bytes",
                                 off, n, b.len);
            sbt__free(r->unsup);
            r->unsup = sbt__calloc(n ? n : 1, sizeof *r->unsup);
            if (!r->unsup)
                return sbt__fail(SBT_ENOMEM, "out of memory");
            r->n_unsup = 0;
            int affects = 0;
            for (uint64_t i = 0; i < n && !st; i++) {
                st = sbt__rd_u32(&b, &r->unsup[i].what);
                st = st ? st : sbt__rd_varint(&b, &r->unsup[i].count);
                r->unsup[i].first_seq = SBT_SEQ_NONE;
                r->n_unsup += !st;
            }
            /* grown at the end: first op + 1 and flags per call (absent in older files) */
            for (uint32_t i = 0; i < r->n_unsup && !st && b.pos < b.len; i++) {
                uint64_t first, f;
                if ((st = sbt__rd_varint(&b, &first)) || (st = sbt__rd_varint(&b, &f)))
                    break;
                r->unsup[i].first_seq = first ? first - 1 : SBT_SEQ_NONE;
                r->unsup[i].flags = (uint32_t)f;
                affects |= (f & SBT_UNMODELLED_AFFECTS) != 0;
            }
            if (st)
                break;
            r->info.writer_finished = 1;
            r->info.incomplete_reason = (flags & 1) ? reason : 0;
            r->info.complete = !(flags & 1) && !affects;
            break;
        }
        case SBT_REC_OPS:
        case SBT_REC_BLOB:
        case SBT_REC_INDEX:
        case SBT_REC_BLOB_INDEX:
            break;
        default:
            st = unknown_record(type, off);
        }
        if (st)
            return st;
    }
    return st;
}

/* ========================================================================================== */
/* Blob index                                                                                 */
/* ========================================================================================== */

static int cmp_loc(const void *a, const void *b)
{
    const struct blob_loc *x = a, *y = b;
    if (x->h.hi != y->h.hi)
        return x->h.hi < y->h.hi ? -1 : 1;
    if (x->h.lo != y->h.lo)
        return x->h.lo < y->h.lo ? -1 : 1;
    return 0;
}

static const struct blob_loc *find_blob(const sbt_reader *r, const sbt_hash *h)
{
    size_t lo = 0, hi = r->n_blobs;
    struct blob_loc key = {.h = *h};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_loc(&r->blobs[mid], &key);
        if (c == 0)
            return &r->blobs[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Collects the blobs of a BLOBS chunk (scan mode). */
static int scan_blobs(sbt_reader *r, const struct sbt_buf *raw, uint64_t off)
{
    struct sbt__rd p = {raw->p, raw->len, 0, off, "chunk"};
    struct sbt__rd b;
    uint32_t type;
    int st;
    while ((st = next_record(&p, &type, &b)) == 1) {
        if (type != SBT_REC_BLOB) {
            if ((st = unknown_record(type, off)) && type != SBT_REC_STRING)
                return st;
            continue;
        }
        if (b.len < 16)
            return sbt__fail(SBT_ECORRUPT, "chunk at offset %" PRIu64 ": blob record of %zu bytes",
                             off, b.len);
        if (grow((void **)&r->blobs, &r->cap_blobs, r->n_blobs + 1, sizeof *r->blobs))
            return SBT_ENOMEM;
        struct blob_loc *l = &r->blobs[r->n_blobs++];
        b.what = "blob record";
        sbt__rd_hash(&b, &l->h);
        l->chunk_off = off;
        l->pos = (uint64_t)(b.p - raw->p) + 16;
        l->len = b.len - 16;
        r->info.blob_bytes += l->len;
    }
    return st;
}

static int parse_index(sbt_reader *r, const struct sbt_buf *raw, uint64_t off)
{
    struct sbt__rd p = {raw->p, raw->len, 0, off, "chunk"};
    struct sbt__rd b;
    uint32_t type;
    int st, seen = 0;
    while ((st = next_record(&p, &type, &b)) == 1) {
        uint64_t n;
        if (type == SBT_REC_INDEX) {
            b.what = "index record";
            if ((st = sbt__rd_varint(&b, &n)))
                return st;
            if (n > b.len)
                return sbt__fail(SBT_ECORRUPT, "footer index claims %" PRIu64 " chunks", n);
            if (grow((void **)&r->chunks, &r->cap_chunks, n, sizeof *r->chunks))
                return SBT_ENOMEM;
            uint64_t prev = 0;
            for (uint64_t i = 0; i < n; i++) {
                struct sbt_chunk_info *c = &r->chunks[i];
                uint64_t delta, span;
                if ((st = sbt__rd_varint(&b, &delta)) || (st = sbt__rd_u32(&b, &c->stored_len)) ||
                    (st = sbt__rd_u32(&b, &c->raw_len)) || (st = sbt__rd_u32(&b, &c->codec)) ||
                    (st = sbt__rd_u32(&b, &c->content)) ||
                    (st = sbt__rd_varint(&b, &c->seq_first)) || (st = sbt__rd_u32(&b, &c->n_ops)) ||
                    (st = sbt__rd_varint(&b, &c->t_min)) || (st = sbt__rd_varint(&b, &span)))
                    return st;
                c->offset = prev + delta;
                c->t_max = c->t_min + span;
                if (c->offset < prev || c->offset + SBT_CHUNK_HEADER_LEN + c->stored_len > off)
                    return sbt__fail(SBT_ECORRUPT,
                                     "footer index entry %" PRIu64 ": chunk at offset %" PRIu64
                                     " lies outside the data",
                                     i, c->offset);
                prev = c->offset;
            }
            r->n_chunks = n;
            seen |= 1;
        } else if (type == SBT_REC_BLOB_INDEX) {
            b.what = "blob index record";
            if ((st = sbt__rd_varint(&b, &n)))
                return st;
            if (n > b.len)
                return sbt__fail(SBT_ECORRUPT, "footer blob index claims %" PRIu64 " blobs", n);
            if (grow((void **)&r->blobs, &r->cap_blobs, n, sizeof *r->blobs))
                return SBT_ENOMEM;
            for (uint64_t i = 0; i < n; i++) {
                struct blob_loc *l = &r->blobs[i];
                if ((st = sbt__rd_hash(&b, &l->h)) || (st = sbt__rd_varint(&b, &l->chunk_off)) ||
                    (st = sbt__rd_varint(&b, &l->pos)) || (st = sbt__rd_varint(&b, &l->len)))
                    return st;
                if (i && cmp_loc(&r->blobs[i - 1], l) >= 0)
                    return sbt__fail(SBT_ECORRUPT,
                                     "footer blob index is not sorted at entry %" PRIu64, i);
                r->info.blob_bytes += l->len;
            }
            r->n_blobs = n;
            seen |= 2;
        } else if ((st = unknown_record(type, off))) {
            return st;
        }
    }
    if (st)
        return st;
    if (seen != 3)
        return sbt__fail(SBT_ECORRUPT, "footer at offset %" PRIu64 " lacks its index records", off);
    return SBT_OK;
}

/* ========================================================================================== */
/* Open                                                                                       */
/* ========================================================================================== */

static int try_footer(sbt_reader *r)
{
    uint64_t size = r->info.file_bytes;
    uint8_t tr[SBT_TRAILER_LEN];
    if (size < r->header_len + SBT_TRAILER_LEN + SBT_CHUNK_HEADER_LEN)
        return sbt__fail(SBT_ECORRUPT, "no room for a footer");
    int st = pread_all(r, tr, sizeof tr, size - SBT_TRAILER_LEN);
    if (st)
        return st;
    if (sbt__le32(tr + 12) != SBT_TRAILER_MAGIC ||
        (sbt__le32(tr + 8) != sbt_crc32c(0, tr, 8) && SBT__ENFORCE_CHECKSUMS))
        return sbt__fail(SBT_ECORRUPT, "no trailer at offset %" PRIu64, size - SBT_TRAILER_LEN);
    uint64_t off = sbt__le64(tr);
    struct sbt__chunk_hdr h;
    if (off < r->header_len || off > size - SBT_TRAILER_LEN - SBT_CHUNK_HEADER_LEN)
        return sbt__fail(SBT_ECORRUPT, "trailer points at offset %" PRIu64 ", outside the file",
                         off);
    if ((st = read_hdr(r, off, &h)))
        return st;
    if (!(h.content & SBT_CHUNK_INDEX) ||
        off + SBT_CHUNK_HEADER_LEN + h.stored_len != size - SBT_TRAILER_LEN)
        return sbt__fail(SBT_ECORRUPT, "trailer does not point at an index chunk");
    if ((st = read_payload(r, off, &h, &r->stored, &r->raw, r->zd)))
        return st;
    return parse_index(r, &r->raw, off);
}

static int scan(sbt_reader *r)
{
    uint64_t off = r->header_len, size = r->info.file_bytes;
    r->n_chunks = 0;
    r->n_blobs = 0;
    r->info.blob_bytes = 0;
    while (off < size) {
        struct sbt__chunk_hdr h;
        int st = read_hdr(r, off, &h);
        if (!st)
            st = read_payload(r, off, &h, &r->stored, &r->raw, r->zd);
        if (st == SBT_ENOMEM || st == SBT_EIO)
            return st;
        if (st)
            break; /* torn or corrupt: keep what came before */
        if (h.content & SBT_CHUNK_INDEX) {
            /* the footer chunk is here but its trailer is not: the data ends here */
            off = size;
            break;
        }
        if ((h.content & SBT_CHUNK_BLOBS) && (st = scan_blobs(r, &r->raw, off)))
            return st;
        if (grow((void **)&r->chunks, &r->cap_chunks, r->n_chunks + 1, sizeof *r->chunks))
            return SBT_ENOMEM;
        r->chunks[r->n_chunks++] =
            (struct sbt_chunk_info){off,         h.stored_len, h.raw_len, h.codec, h.content,
                                    h.seq_first, h.n_ops,      h.t_min,   h.t_max};
        off += SBT_CHUNK_HEADER_LEN + h.stored_len;
    }
    if (off < size) {
        r->info.lost_offset = off;
        r->info.lost_bytes = size - off;
    }
    if (r->n_blobs)
        qsort(r->blobs, r->n_blobs, sizeof *r->blobs, cmp_loc);
    return SBT_OK;
}

static int check_header(sbt_reader *r)
{
    uint8_t hb[SBT_FILE_HEADER_LEN] = {0};
    uint64_t size = r->info.file_bytes;
    size_t n = size < sizeof hb ? (size_t)size : sizeof hb;
    int st = pread_all(r, hb, n, 0);
    if (st)
        return st;
    if (n >= 4 && !memcmp(hb, SBT_TRACESMITH_MAGIC, 4)) {
        unsigned maj = n >= 8 ? hb[4] | hb[5] << 8 : 0, min = n >= 8 ? hb[6] | hb[7] << 8 : 0;
        return sbt__fail(SBT_EFOREIGN,
                         "%s is a TraceSmith SBT file (magic 'SBT\\0', format %u.%u), not a "
                         "reprise trace; the two share the .sbt extension but not the layout",
                         r->path, maj, min);
    }
    if (n < SBT_FILE_MAGIC_LEN || memcmp(hb, SBT_FILE_MAGIC, SBT_FILE_MAGIC_LEN))
        return sbt__fail(SBT_ECORRUPT,
                         "%s: not an SBT trace: offset 0: bad magic (%" PRIu64 " bytes in file)",
                         r->path, size);
    if (n < SBT_FILE_HEADER_LEN)
        return sbt__fail(SBT_ECORRUPT, "%s: file header truncated: %" PRIu64 " bytes < %d", r->path,
                         size, SBT_FILE_HEADER_LEN);
    uint32_t crc = sbt_crc32c(0, hb, 28);
    if (crc != sbt__le32(hb + 28) && SBT__ENFORCE_CHECKSUMS)
        return sbt__fail(SBT_ECORRUPT,
                         "%s: offset 28: file header CRC mismatch (stored %08x, "
                         "computed %08x)",
                         r->path, sbt__le32(hb + 28), crc);
    r->info.writer_version = hb[8] | hb[9] << 8;
    r->info.min_reader_version = hb[10] | hb[11] << 8;
    uint32_t req = sbt__le32(hb + 12);
    r->info.required_features = req;
    r->header_len = sbt__le32(hb + 20);
    if (r->info.min_reader_version > SBT_READER_VERSION)
        return sbt__fail(SBT_EVERSION,
                         "%s: written by format version %u and needs a reader of version %u; "
                         "this reprise reads version %d: upgrade reprise",
                         r->path, r->info.writer_version, r->info.min_reader_version,
                         SBT_READER_VERSION);
    if (req & ~SBT_REQUIRED_FEATURES)
        return sbt__fail(SBT_EVERSION,
                         "%s: requires format features 0x%x that this reprise does not know "
                         "(offset 12): upgrade reprise",
                         r->path, req & ~SBT_REQUIRED_FEATURES);
    if (r->header_len < SBT_FILE_HEADER_LEN || r->header_len > size)
        return sbt__fail(SBT_ECORRUPT, "%s: offset 20: header length %u out of range", r->path,
                         r->header_len);
    return SBT_OK;
}

static int build_views(sbt_reader *r)
{
    struct sbt_info *in = &r->info;
    uint64_t n_op = 0;
    for (uint64_t i = 0; i < r->n_chunks; i++)
        n_op += (r->chunks[i].content & SBT_CHUNK_OPS) && r->chunks[i].n_ops;
    r->opc = sbt__calloc(n_op ? n_op : 1, sizeof *r->opc);
    r->runmax_tmax = sbt__calloc(n_op ? n_op : 1, sizeof *r->runmax_tmax);
    r->sufmin_tmin = sbt__calloc(n_op ? n_op : 1, sizeof *r->sufmin_tmin);
    if (!r->opc || !r->runmax_tmax || !r->sufmin_tmin)
        return sbt__fail(SBT_ENOMEM, "out of memory for the chunk index");
    in->t_min = UINT64_MAX;
    for (uint64_t i = 0; i < r->n_chunks; i++) {
        const struct sbt_chunk_info *c = &r->chunks[i];
        if (!(c->content & SBT_CHUNK_STATE))
            continue;
        if (r->n_stc && c->seq_first < r->chunks[r->stc[r->n_stc - 1]].seq_first)
            return sbt__fail(SBT_ECORRUPT,
                             "state chunk at offset %" PRIu64 " has seq %" PRIu64
                             ", before the previous state's %" PRIu64 " (states must increase)",
                             c->offset, c->seq_first, r->chunks[r->stc[r->n_stc - 1]].seq_first);
        if (grow((void **)&r->stc, &r->cap_stc, r->n_stc + 1, sizeof *r->stc))
            return SBT_ENOMEM;
        r->stc[r->n_stc++] = i;
    }
    in->n_states = r->n_stc;
    for (uint64_t i = 0; i < r->n_chunks; i++) {
        const struct sbt_chunk_info *c = &r->chunks[i];
        in->raw_bytes += c->raw_len;
        if (!(c->content & SBT_CHUNK_OPS) || !c->n_ops)
            continue;
        uint64_t k = r->n_opc++;
        r->opc[k] = i;
        if (k == 0)
            in->seq_first = c->seq_first;
        in->seq_end = c->seq_first + c->n_ops;
        in->n_ops += c->n_ops;
        if (c->t_min < in->t_min)
            in->t_min = c->t_min;
        if (c->t_max > in->t_max)
            in->t_max = c->t_max;
        r->runmax_tmax[k] =
            k && r->runmax_tmax[k - 1] > c->t_max ? r->runmax_tmax[k - 1] : c->t_max;
    }
    for (uint64_t k = r->n_opc; k-- > 0;) {
        uint64_t t = r->chunks[r->opc[k]].t_min;
        r->sufmin_tmin[k] =
            k + 1 < r->n_opc && r->sufmin_tmin[k + 1] < t ? r->sufmin_tmin[k + 1] : t;
    }
    if (!in->n_ops)
        in->t_min = 0;
    in->n_chunks = r->n_chunks;
    in->n_blobs = r->n_blobs;
    return SBT_OK;
}

int sbt_reader_open(const char *path, const struct sbt_open_opts *opts, sbt_reader **out)
{
    *out = NULL;
    if (!path)
        return sbt__fail(SBT_EINVAL, "sbt_reader_open: no path");
    sbt_reader *r = sbt__calloc(1, sizeof *r);
    if (!r)
        return sbt__fail(SBT_ENOMEM, "out of memory for a reader");
    r->fd = -1;
    r->path = sbt__malloc(strlen(path) + 1);
    r->zd = ZSTD_createDCtx();
    if (!r->path || !r->zd) {
        sbt_reader_close(r);
        return sbt__fail(SBT_ENOMEM, "out of memory for a reader");
    }
    strcpy(r->path, path);
    r->max_chunk = SBT_MAX_CHUNK_DEFAULT;
    int force_scan = 0;
    if (opts && opts->sz >= offsetof(struct sbt_open_opts, max_chunk_bytes) + sizeof(uint32_t) &&
        opts->max_chunk_bytes)
        r->max_chunk = opts->max_chunk_bytes;
    if (opts && opts->sz >= offsetof(struct sbt_open_opts, force_scan) + sizeof(int))
        force_scan = opts->force_scan;

    int st;
    struct stat sb;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        st = sbt__fail(SBT_EIO, "cannot open %s: %s", path, strerror(errno));
        goto fail;
    }
    if (fstat(r->fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        st = sbt__fail(SBT_EIO, "%s: not a regular file", path);
        goto fail;
    }
    r->info.file_bytes = (uint64_t)sb.st_size;
    if ((st = check_header(r)))
        goto fail;
    r->info.has_footer = 0;
    if (!force_scan && try_footer(r) == SBT_OK) {
        r->info.has_footer = 1;
    } else if ((st = scan(r))) {
        goto fail;
    }
    /* tables: every chunk that defines something, in file order */
    for (uint64_t i = 0; i < r->n_chunks; i++) {
        const struct sbt_chunk_info *c = &r->chunks[i];
        if (!(c->content & (SBT_CHUNK_DICT | SBT_CHUNK_END)))
            continue;
        if ((st = read_chunk_at(r, c, &r->stored, &r->raw, r->zd)) ||
            (st = parse_tables(r, &r->raw, c->offset)))
            goto fail;
    }
    if ((st = build_views(r)))
        goto fail;
    r->stored.len = r->raw.len = 0;
    *out = r;
    return SBT_OK;
fail:
    sbt_reader_close(r);
    return st;
}

void sbt_reader_close(sbt_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    for (size_t i = 0; i < r->n_exts; i++)
        sbt__free(r->exts[i]);
    sbt__free(r->exts);
    sbt__free(r->path);
    sbt__free(r->chunks);
    sbt__free(r->opc);
    sbt__free(r->runmax_tmax);
    sbt__free(r->sufmin_tmin);
    sbt__free(r->stc);
    sbt__buf_free(&r->strs);
    sbt__free(r->str_off);
    sbt__free(r->devices);
    sbt__free(r->streams);
    sbt__free(r->programs);
    sbt__free(r->kernels);
    sbt__free(r->meta);
    sbt__free(r->unsup);
    sbt__free(r->blobs);
    sbt__buf_free(&r->stored);
    sbt__buf_free(&r->raw);
    ZSTD_freeDCtx(r->zd);
    sbt__free(r);
}

/* ========================================================================================== */
/* Accessors                                                                                  */
/* ========================================================================================== */

const struct sbt_info *sbt_reader_info(const sbt_reader *r)
{
    return &r->info;
}

const char *sbt_reader_path(const sbt_reader *r)
{
    return r->path;
}

const char *sbt_reader_string(const sbt_reader *r, uint32_t id)
{
    if (id == 0)
        return "";
    if (id > r->n_strings)
        return NULL;
    return (const char *)r->strs.p + r->str_off[id];
}

uint32_t sbt_reader_n_strings(const sbt_reader *r)
{
    return r->n_strings;
}

#define TABLE(name, type, arr, count)                                      \
    const struct type *sbt_reader_##name(const sbt_reader *r, uint32_t *n) \
    {                                                                      \
        *n = r->count;                                                     \
        return r->arr;                                                     \
    }
TABLE(devices, sbt_device, devices, n_devices)
TABLE(streams, sbt_stream, streams, n_streams)
TABLE(programs, sbt_program, programs, n_programs)
TABLE(kernels, sbt_kernel, kernels, n_kernels)
TABLE(meta, sbt_meta, meta, n_meta)
TABLE(unsupported, sbt_unsupported, unsup, n_unsup)
#undef TABLE

#define BYID(name, type, arr, count)                                       \
    const struct type *sbt_reader_##name(const sbt_reader *r, uint32_t id) \
    {                                                                      \
        return id >= 1 && id <= r->count ? &r->arr[id - 1] : NULL;         \
    }
BYID(device, sbt_device, devices, n_devices)
BYID(stream, sbt_stream, streams, n_streams)
BYID(kernel, sbt_kernel, kernels, n_kernels)
BYID(program, sbt_program, programs, n_programs)
#undef BYID

const char *sbt_reader_meta_get(const sbt_reader *r, const char *key)
{
    for (uint32_t i = r->n_meta; i-- > 0;) {
        const char *k = sbt_reader_string(r, r->meta[i].key);
        if (k && !strcmp(k, key))
            return sbt_reader_string(r, r->meta[i].value);
    }
    return NULL;
}

size_t sbt_reader_incomplete_why(const sbt_reader *r, char *buf, size_t cap)
{
    const struct sbt_info *in = &r->info;
    size_t n = 0;
#define PUT(...)                                                                          \
    do {                                                                                  \
        int k_ = snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, __VA_ARGS__); \
        n += k_ > 0 ? (size_t)k_ : 0;                                                     \
    } while (0)
    if (cap)
        buf[0] = 0;
    if (in->complete)
        return 0;
    if (!in->writer_finished)
        PUT("the writer did not finish (the capture was cut short: killed or crashed)");
    else if (in->incomplete_reason)
        PUT("%s", sbt_reader_string(r, in->incomplete_reason));
    int first = 1;
    for (uint32_t i = 0; i < r->n_unsup; i++) {
        const struct sbt_unsupported *u = &r->unsup[i];
        if (!(u->flags & SBT_UNMODELLED_AFFECTS))
            continue;
        if (first)
            PUT("%sunmodelled calls that affect replay: ", n ? "; " : "");
        else
            PUT(", ");
        first = 0;
        PUT("%s x%" PRIu64, sbt_reader_string(r, u->what), u->count);
        if (u->first_seq != SBT_SEQ_NONE)
            PUT(" (first at op %" PRIu64 ")", u->first_seq);
    }
#undef PUT
    return n;
}

const struct sbt_chunk_info *sbt_reader_chunks(const sbt_reader *r, uint64_t *n)
{
    *n = r->n_chunks;
    return r->chunks;
}

sbt_hash sbt_reader_fingerprint(const sbt_reader *r)
{
    struct sbt_buf b = {0};
    int st = 0;
    const struct sbt_info *in = &r->info;
    uint64_t head[] = {in->writer_version, in->required_features, r->header_len,
                       r->n_chunks,        in->n_blobs,           in->blob_bytes};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        st |= sbt__buf_varint(&b, head[i]);
    for (uint64_t i = 0; i < r->n_chunks; i++) {
        const struct sbt_chunk_info *c = &r->chunks[i];
        uint64_t v[] = {c->offset,    c->stored_len, c->raw_len, c->codec, c->content,
                        c->seq_first, c->n_ops,      c->t_min,   c->t_max};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            st |= sbt__buf_varint(&b, v[k]);
    }
    /* out of memory: the fingerprint of the header alone still tells most files apart */
    sbt_hash h = sbt_hash_bytes(b.p, st ? 0 : b.len);
    sbt__buf_free(&b);
    return h;
}

/* ========================================================================================== */
/* States                                                                                     */
/* ========================================================================================== */

int sbt_reader_state_at(const sbt_reader *r, uint64_t i, uint64_t *seq, uint64_t *time)
{
    if (i >= r->n_stc)
        return sbt__fail(SBT_EINVAL, "state %" PRIu64 ": the file has %" PRIu64 " states", i,
                         r->n_stc);
    const struct sbt_chunk_info *c = &r->chunks[r->stc[i]];
    if (seq)
        *seq = c->seq_first;
    if (time)
        *time = c->t_min;
    return SBT_OK;
}

int64_t sbt_reader_state_find(const sbt_reader *r, uint64_t seq)
{
    uint64_t lo = 0, hi = r->n_stc; /* first state with seq > seq */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (r->chunks[r->stc[mid]].seq_first <= seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? (int64_t)(lo - 1) : -1;
}

int sbt_reader_state(sbt_reader *r, uint64_t i, struct sbt_state **out)
{
    *out = NULL;
    if (i >= r->n_stc)
        return sbt__fail(SBT_EINVAL, "state %" PRIu64 ": the file has %" PRIu64 " states", i,
                         r->n_stc);
    const struct sbt_chunk_info *c = &r->chunks[r->stc[i]];
    r->raw_off = 0;
    int st = read_chunk_at(r, c, &r->stored, &r->raw, r->zd);
    if (st)
        return st;
    struct sbt__rd p = {r->raw.p, r->raw.len, 0, c->offset, "chunk"};
    struct sbt__rd body;
    uint32_t type;
    while ((st = next_record(&p, &type, &body)) == 1) {
        if (type == SBT_REC_STATE) {
            if (*out)
                break;
            if ((st = sbt__dec_state(&body, out)))
                return st;
            if ((*out)->seq != c->seq_first || (*out)->time != c->t_min) {
                uint64_t got = (*out)->seq;
                sbt_state_free(*out);
                *out = NULL;
                return sbt__fail(SBT_ECORRUPT,
                                 "chunk at offset %" PRIu64 ": state at op %" PRIu64
                                 " in a chunk whose header says op %" PRIu64 " (time %" PRIu64 ")",
                                 c->offset, got, c->seq_first, c->t_min);
            }
        } else if ((st = unknown_record(type, c->offset))) {
            break;
        }
    }
    if (st == 1) /* a second STATE record */
        st = sbt__fail(SBT_ECORRUPT, "chunk at offset %" PRIu64 ": more than one STATE record",
                       c->offset);
    if (st == 0 && !*out)
        st = sbt__fail(SBT_ECORRUPT,
                       "chunk at offset %" PRIu64 ": state chunk without a STATE "
                       "record",
                       c->offset);
    if (st < 0) {
        sbt_state_free(*out);
        *out = NULL;
    }
    return st;
}

/* ========================================================================================== */
/* Blobs                                                                                      */
/* ========================================================================================== */

int sbt_reader_has_blob(const sbt_reader *r, const sbt_hash *hash)
{
    return find_blob(r, hash) != NULL;
}

static const struct sbt_chunk_info *chunk_at(const sbt_reader *r, uint64_t off)
{
    size_t lo = 0, hi = r->n_chunks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->chunks[mid].offset == off)
            return &r->chunks[mid];
        if (r->chunks[mid].offset < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int sbt_reader_blob(sbt_reader *r, const sbt_hash *hash, void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    char hex[33];
    const struct blob_loc *l = find_blob(r, hash);
    if (!l)
        return sbt__fail(SBT_ENOTFOUND, "blob %s is not in the trace", sbt_hash_hex(*hash, hex));
    const struct sbt_chunk_info *c = chunk_at(r, l->chunk_off);
    if (!c)
        return sbt__fail(SBT_ECORRUPT, "blob %s: its chunk at offset %" PRIu64 " is not indexed",
                         sbt_hash_hex(*hash, hex), l->chunk_off);
    if (r->raw_off != c->offset) { /* consecutive blobs of one chunk decode it once */
        r->raw_off = 0;
        int st = read_chunk_at(r, c, &r->stored, &r->raw, r->zd);
        if (st)
            return st;
        r->raw_off = c->offset;
    }
    if (l->pos > r->raw.len || l->len > r->raw.len - l->pos)
        return sbt__fail(SBT_ECORRUPT,
                         "blob %s: bytes %" PRIu64 "+%" PRIu64
                         " lie outside chunk at offset %" PRIu64,
                         sbt_hash_hex(*hash, hex), l->pos, l->len, c->offset);
    const uint8_t *p = r->raw.p + l->pos;
    sbt_hash got = sbt_hash_bytes(p, (size_t)l->len);
    if (!sbt_hash_eq(got, *hash) && SBT__ENFORCE_CHECKSUMS)
        return sbt__fail(SBT_ECORRUPT,
                         "blob %s in chunk at offset %" PRIu64 ": content does not match its hash",
                         sbt_hash_hex(*hash, hex), c->offset);
    void *copy = sbt__malloc((size_t)l->len);
    if (!copy)
        return sbt__fail(SBT_ENOMEM, "out of memory for a blob of %" PRIu64 " bytes", l->len);
    memcpy(copy, p, (size_t)l->len);
    *data = copy;
    *len = (size_t)l->len;
    return SBT_OK;
}

/* ========================================================================================== */
/* Cursors                                                                                    */
/* ========================================================================================== */

struct sbt_cursor {
    sbt_reader *r;
    struct sbt_range rg;
    uint64_t next_oc; /* next op chunk to load */
    struct sbt__opdec d;
    int have; /* d holds a record to read from */
    struct sbt_buf stored, raw;
    ZSTD_DCtx *zd;
    int err;
    int done;          /* sbt_cursor_read saw the end of the range */
    uint32_t *scratch; /* sbt_cursor_read: stream ids of a chunk, for a stream range */
    uint32_t cap_scratch;
};

int sbt_cursor_open(sbt_reader *r, const struct sbt_range *range, sbt_cursor **out)
{
    *out = NULL;
    if (!r)
        return sbt__fail(SBT_EINVAL, "sbt_cursor_open: NULL reader");
    sbt_cursor *c = sbt__calloc(1, sizeof *c);
    if (!c || !(c->zd = ZSTD_createDCtx())) {
        sbt__free(c);
        return sbt__fail(SBT_ENOMEM, "out of memory for a cursor");
    }
    c->r = r;
    if (range)
        c->rg = *range;
    uint64_t start = 0;
    if (c->rg.has_seq) { /* first op chunk whose seq range reaches seq_begin */
        uint64_t lo = 0, hi = r->n_opc;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            const struct sbt_chunk_info *ci = &r->chunks[r->opc[mid]];
            if (ci->seq_first + ci->n_ops <= c->rg.seq_begin)
                lo = mid + 1;
            else
                hi = mid;
        }
        start = lo;
    }
    if (c->rg.has_time) { /* first op chunk that may reach t_begin */
        uint64_t lo = 0, hi = r->n_opc;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (r->runmax_tmax[mid] < c->rg.t_begin)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > start)
            start = lo;
    }
    c->next_oc = start;
    *out = c;
    return SBT_OK;
}

static int load_next(sbt_cursor *c)
{
    sbt_reader *r = c->r;
    c->have = 0;
    for (;;) {
        if (c->next_oc >= r->n_opc)
            return 0;
        uint64_t k = c->next_oc++;
        const struct sbt_chunk_info *ci = &r->chunks[r->opc[k]];
        if (c->rg.has_seq && ci->seq_first >= c->rg.seq_end)
            return 0;
        if (c->rg.has_time && r->sufmin_tmin[k] >= c->rg.t_end)
            return 0;
        if (c->rg.has_time && (ci->t_max < c->rg.t_begin || ci->t_min >= c->rg.t_end))
            continue;
        int st = read_chunk_at(r, ci, &c->stored, &c->raw, c->zd);
        if (st)
            return st;
        struct sbt__rd p = {c->raw.p, c->raw.len, 0, ci->offset, "chunk"};
        struct sbt__rd body;
        uint32_t type;
        while ((st = next_record(&p, &type, &body)) == 1) {
            if (type == SBT_REC_OPS && !c->have) {
                body.what = "OPS record";
                if ((st = sbt__opdec_begin(&c->d, &body)))
                    return st;
                c->have = 1;
            } else if (type > SBT_REC_STATE && (st = unknown_record(type, ci->offset))) {
                return st;
            }
        }
        if (st < 0)
            return st;
        if (!c->have || c->d.n_ops != ci->n_ops || c->d.seq_first != ci->seq_first)
            return sbt__fail(SBT_ECORRUPT,
                             "chunk at offset %" PRIu64 ": holds %" PRIu64 " ops from seq %" PRIu64
                             ", its header says %u from %" PRIu64,
                             ci->offset, c->have ? c->d.n_ops : 0, c->have ? c->d.seq_first : 0,
                             ci->n_ops, ci->seq_first);
        return 1;
    }
}

int sbt_cursor_next(sbt_cursor *c, const struct sbt_op **op)
{
    *op = NULL;
    if (c->err)
        return c->err;
    for (;;) {
        const struct sbt_op *o;
        int st = c->have ? sbt__opdec_next(&c->d, &o) : 0;
        if (st == 1) {
            if (c->rg.has_seq) {
                if (o->seq >= c->rg.seq_end)
                    return 0;
                if (o->seq < c->rg.seq_begin)
                    continue;
            }
            if (c->rg.stream && o->stream != c->rg.stream)
                continue;
            if (c->rg.has_time) {
                uint64_t b, e;
                sbt_op_span(o, &b, &e);
                if (e < c->rg.t_begin || b >= c->rg.t_end)
                    continue;
            }
            *op = o;
            return 1;
        }
        if (st == 0)
            st = load_next(c);
        if (st <= 0) {
            if (st < 0)
                c->err = st;
            return st;
        }
    }
}

/* One op into row i of the arrays (sbt_cursor_read's op-by-op path). */
static void put_row(const struct sbt_columns *o, uint64_t i, const struct sbt_op *op)
{
    if (o->seq)
        o->seq[i] = op->seq;
    if (o->kind)
        o->kind[i] = (uint8_t)op->kind;
    if (o->subkind)
        o->subkind[i] = (uint8_t)op->subkind;
    if (o->flags)
        o->flags[i] = op->flags;
    if (o->stream)
        o->stream[i] = op->stream;
    if (o->thread)
        o->thread[i] = op->thread;
    if (o->name)
        o->name[i] = op->name;
    if (o->host_begin)
        o->host_begin[i] = op->host_begin;
    if (o->host_end)
        o->host_end[i] = op->host_end;
    if (o->dev_begin)
        o->dev_begin[i] = op->dev_begin;
    if (o->dev_end)
        o->dev_end[i] = op->dev_end;
    if (o->kernel)
        o->kernel[i] = op->kernel;
    if (o->grid)
        memcpy(o->grid + 3 * i, op->grid, sizeof op->grid);
    if (o->block)
        memcpy(o->block + 3 * i, op->block, sizeof op->block);
    if (o->shmem)
        o->shmem[i] = op->shmem;
    if (o->bytes)
        o->bytes[i] = op->bytes;
    if (o->resource)
        o->resource[i] = op->resource;
    if (o->obj)
        o->obj[i] = op->obj;
    if (o->value)
        o->value[i] = op->value;
    if (o->blob) {
        o->blob[2 * i] = op->blob.lo;
        o->blob[2 * i + 1] = op->blob.hi;
    }
    if (o->digest) {
        o->digest[2 * i] = op->digest.lo;
        o->digest[2 * i + 1] = op->digest.hi;
    }
    if (o->error)
        o->error[i] = op->error;
    if (o->n_access)
        o->n_access[i] = op->n_access;
}

/* Every op of the chunk is in the cursor's seq and time range (by the index); a stream range
 * is applied after decoding (compact_stream). */
static int chunk_whole(const sbt_cursor *c, const struct sbt_chunk_info *ci)
{
    const struct sbt_range *rg = &c->rg;
    if (rg->has_seq && (ci->seq_first < rg->seq_begin || ci->seq_first + ci->n_ops > rg->seq_end))
        return 0;
    if (rg->has_time && (ci->t_min < rg->t_begin || ci->t_max >= rg->t_end))
        return 0;
    return 1;
}

/* The fields of struct sbt_columns with their values per row. */
/* clang-format off */
#define SBT__COLUMNS(X)                                                                        \
    X(seq, 1) X(kind, 1) X(subkind, 1) X(flags, 1) X(stream, 1) X(thread, 1) X(name, 1)        \
    X(host_begin, 1) X(host_end, 1) X(dev_begin, 1) X(dev_end, 1) X(kernel, 1) X(grid, 3)      \
    X(block, 3) X(shmem, 1) X(bytes, 1) X(resource, 1) X(obj, 1) X(value, 1) X(blob, 2)        \
    X(digest, 2) X(error, 1) X(n_access, 1)
/* clang-format on */

/* The arrays of o from row `at` on (pointers advanced by at rows). */
static struct sbt_columns cols_at(const struct sbt_columns *o, uint64_t at)
{
    struct sbt_columns w = *o;
#define SBT__AT(f, k) w.f = w.f ? w.f + (k)*at : NULL;
    SBT__COLUMNS(SBT__AT)
#undef SBT__AT
    return w;
}

/* Keeps the rows [0, n) of w whose stream[i] is want, in order, at the front; returns how
 * many. */
static uint64_t compact_stream(const struct sbt_columns *w, const uint32_t *stream, uint64_t n,
                               uint32_t want)
{
    uint64_t j = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (stream[i] != want)
            continue;
#define SBT__MV(f, k) \
    if (w->f)         \
        memmove(w->f + (k)*j, w->f + (k)*i, (k) * sizeof *w->f);
        if (i != j) {
            SBT__COLUMNS(SBT__MV)
        }
#undef SBT__MV
        j++;
    }
    return j;
}

int sbt_cursor_read(sbt_cursor *c, const struct sbt_columns *cols, uint64_t cap, uint64_t *n)
{
    *n = 0;
    if (!cols || cols->sz < offsetof(struct sbt_columns, seq))
        return sbt__fail(SBT_EINVAL, "sbt_cursor_read: no columns (set them with SBT_COLUMNS())");
    struct sbt_columns o = {0}; /* a caller built with an older header has fewer fields */
    memcpy(&o, cols, cols->sz < sizeof o ? cols->sz : sizeof o);
    uint64_t got = 0;
    int st = 0;
    while (got < cap && !c->err && !c->done) {
        if (c->have && c->d.i < c->d.n_ops) { /* a chunk begun op by op: go on that way */
            const struct sbt_op *op;
            st = sbt_cursor_next(c, &op);
            if (st == 1) {
                put_row(&o, got++, op);
                continue;
            }
            if (st == 0) /* the range ended within the chunk */
                c->done = 1;
            break;
        }
        if (c->have) { /* every op read: 0 once the columns are checked used up */
            const struct sbt_op *op;
            if ((st = sbt__opdec_next(&c->d, &op)) < 0)
                break;
            c->have = 0;
        }
        if ((st = load_next(c)) <= 0) {
            c->done = st == 0;
            break;
        }
        const struct sbt_chunk_info *ci = &c->r->chunks[c->r->opc[c->next_oc - 1]];
        if (!chunk_whole(c, ci) || ci->n_ops > cap - got)
            continue; /* op by op, above */
        uint64_t span[2] = {c->rg.t_begin, c->rg.t_end};
        if (!c->rg.stream) {
            if ((st = sbt__opdec_columns(&c->d, &o, got, c->rg.has_time ? span : NULL)) < 0)
                break;
            c->have = 0;
            got += ci->n_ops;
            continue;
        }
        /* a stream range: decode the chunk, then keep its ops of the stream */
        struct sbt_columns w = cols_at(&o, got);
        if (!w.stream) { /* the stream column goes to scratch */
            if (ci->n_ops > c->cap_scratch) {
                uint32_t *p = sbt__realloc(c->scratch, ci->n_ops * sizeof *p);
                if (!p) {
                    st = sbt__fail(SBT_ENOMEM, "out of memory for %u stream ids", ci->n_ops);
                    break;
                }
                c->scratch = p;
                c->cap_scratch = ci->n_ops;
            }
            w.stream = c->scratch;
        }
        if ((st = sbt__opdec_columns(&c->d, &w, 0, c->rg.has_time ? span : NULL)) < 0)
            break;
        c->have = 0;
        got += compact_stream(&w, w.stream, ci->n_ops, c->rg.stream);
    }
    if (st < 0 || c->err) {
        if (!c->err)
            c->err = st;
        return c->err;
    }
    *n = got;
    return SBT_OK;
}

uint64_t sbt_cursor_bound(const sbt_cursor *c)
{
    const sbt_reader *r = c->r;
    const struct sbt_range *rg = &c->rg;
    uint64_t n = 0;
    if (c->err || c->done)
        return 0;
    if (c->have && c->d.i < c->d.n_ops) {
        uint64_t end = c->d.seq_first + c->d.n_ops, at = c->d.seq_first + c->d.i;
        if (rg->has_seq && end > rg->seq_end)
            end = rg->seq_end;
        if (rg->has_seq && at < rg->seq_begin)
            at = rg->seq_begin;
        n += end > at ? end - at : 0;
    }
    for (uint64_t k = c->next_oc; k < r->n_opc; k++) {
        const struct sbt_chunk_info *ci = &r->chunks[r->opc[k]];
        uint64_t b = ci->seq_first, e = ci->seq_first + ci->n_ops;
        if (rg->has_seq && b >= rg->seq_end)
            break;
        if (rg->has_time && r->sufmin_tmin[k] >= rg->t_end)
            break;
        if (rg->has_time && (ci->t_max < rg->t_begin || ci->t_min >= rg->t_end))
            continue;
        if (rg->has_seq) {
            b = b > rg->seq_begin ? b : rg->seq_begin;
            e = e < rg->seq_end ? e : rg->seq_end;
        }
        n += e > b ? e - b : 0;
    }
    return n;
}

void sbt_cursor_close(sbt_cursor *c)
{
    if (!c)
        return;
    sbt__opdec_free(&c->d);
    sbt__free(c->scratch);
    sbt__buf_free(&c->stored);
    sbt__buf_free(&c->raw);
    ZSTD_freeDCtx(c->zd);
    sbt__free(c);
}

/* ========================================================================================== */
/* Validate                                                                                   */
/* ========================================================================================== */

static void note(sbt_report_fn fn, void *ctx, int sev, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note(sbt_report_fn fn, void *ctx, int sev, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (fn)
        fn(ctx, sev, msg);
}

static int check_op_refs(sbt_reader *r, const struct sbt_op *o, sbt_report_fn fn, void *ctx)
{
    int bad = 0;
#define REF(cond, ...)                 \
    if (cond) {                        \
        note(fn, ctx, 1, __VA_ARGS__); \
        bad++;                         \
    }
    REF(o->name > r->n_strings, "op %" PRIu64 ": name string %u is not defined (%u strings)",
        o->seq, o->name, r->n_strings);
    REF(o->stream > r->n_streams, "op %" PRIu64 ": stream %u is not defined (%u streams)", o->seq,
        o->stream, r->n_streams);
    REF((o->flags & SBT_OPF_KERNEL) && (o->kernel == 0 || o->kernel > r->n_kernels),
        "op %" PRIu64 ": kernel %u is not defined (%u kernels)", o->seq, o->kernel, r->n_kernels);
    REF((o->flags & SBT_OPF_ERROR) && o->error > r->n_strings,
        "op %" PRIu64 ": error string %u is not defined", o->seq, o->error);
    char hex[33];
    REF((o->flags & SBT_OPF_BLOB) && !find_blob(r, &o->blob),
        "op %" PRIu64 ": blob %s is not in the trace", o->seq, sbt_hash_hex(o->blob, hex));
    for (uint32_t i = 0; i < o->n_access; i++)
        REF(o->access[i].len && o->access[i].offset + o->access[i].len < o->access[i].offset,
            "op %" PRIu64 ": access %u byte range overflows", o->seq, i);
#undef REF
    return bad;
}

/* A STATE record: decodes, matches its chunk header, names blobs of the right length. */
static int check_state(sbt_reader *r, const struct sbt_chunk_info *ci, struct sbt__rd *body,
                       sbt_report_fn fn, void *ctx)
{
    struct sbt_state *s;
    if (!(ci->content & SBT_CHUNK_STATE)) {
        note(fn, ctx, 1, "chunk at offset %" PRIu64 ": STATE record outside a state chunk",
             ci->offset);
        return 1;
    }
    if (sbt__dec_state(body, &s)) {
        note(fn, ctx, 1, "%s", sbt_errmsg());
        return 1;
    }
    int bad = 0;
    if (s->seq != ci->seq_first || s->time != ci->t_min) {
        note(fn, ctx, 1,
             "chunk at offset %" PRIu64 ": state at op %" PRIu64 " in a chunk whose header says "
             "op %" PRIu64,
             ci->offset, s->seq, ci->seq_first);
        bad++;
    }
    for (uint32_t i = 0; i < s->n_alloc && bad < 8; i++) {
        const struct sbt_state_alloc *a = &s->alloc[i];
        for (uint64_t k = 0; k < a->n_present && bad < 8; k++) {
            const struct blob_loc *l = find_blob(r, &a->hash[k]);
            uint64_t off = a->index[k] * a->chunk_bytes;
            uint64_t want = a->size - off < a->chunk_bytes ? a->size - off : a->chunk_bytes;
            char hex[33];
            if (!l || l->len != want) {
                note(fn, ctx, 1,
                     "state at op %" PRIu64 ": resource %" PRIu64 " chunk %" PRIu64 ": blob %s %s",
                     s->seq, a->resource, a->index[k], sbt_hash_hex(a->hash[k], hex),
                     l ? "has the wrong length" : "is not in the file");
                bad++;
            }
        }
    }
    sbt_state_free(s);
    return bad;
}

int sbt_reader_validate(sbt_reader *r, sbt_report_fn fn, void *ctx)
{
    int bad = 0;
    const struct sbt_info *in = &r->info;
    if (!in->has_footer)
        note(fn, ctx, 0, "no footer index: rebuilt by scanning %" PRIu64 " chunks", r->n_chunks);
    if (in->lost_bytes) {
        note(fn, ctx, 1,
             "data lost: %" PRIu64 " bytes from offset %" PRIu64 " could not be read (torn or "
             "corrupt chunk); everything before it was recovered",
             in->lost_bytes, in->lost_offset);
        bad++;
    }
    if (!in->complete) {
        char why[1024];
        sbt_reader_incomplete_why(r, why, sizeof why);
        note(fn, ctx, 0, "incomplete trace: %s", why);
    }
    /* tables refer to defined things */
    for (uint32_t i = 0; i < r->n_streams; i++)
        if (r->streams[i].device > r->n_devices || r->streams[i].name > r->n_strings) {
            note(fn, ctx, 1, "stream %u: device %u or name %u is not defined", i + 1,
                 r->streams[i].device, r->streams[i].name);
            bad++;
        }
    for (uint32_t i = 0; i < r->n_programs; i++) {
        char hex[33];
        const struct sbt_program *p = &r->programs[i];
        if (!sbt_hash_is_zero(p->blob) && !find_blob(r, &p->blob)) {
            note(fn, ctx, 1, "program %u: image blob %s is not in the trace", i + 1,
                 sbt_hash_hex(p->blob, hex));
            bad++;
        }
    }
    for (uint32_t i = 0; i < r->n_kernels; i++)
        if (r->kernels[i].program > r->n_programs || r->kernels[i].name > r->n_strings) {
            note(fn, ctx, 1, "kernel %u: program %u or name %u is not defined", i + 1,
                 r->kernels[i].program, r->kernels[i].name);
            bad++;
        }
    /* every chunk: CRC, decode, ranges; ops: seq continuity and references */
    sbt_cursor *c = NULL;
    int st = sbt_cursor_open(r, NULL, &c);
    if (st)
        return st;
    uint64_t expect_seq = r->n_opc ? r->chunks[r->opc[0]].seq_first : 0, n_gaps = 0;
    for (uint64_t i = 0; i < r->n_chunks; i++) {
        const struct sbt_chunk_info *ci = &r->chunks[i];
        if (i && ci->offset <
                     r->chunks[i - 1].offset + SBT_CHUNK_HEADER_LEN + r->chunks[i - 1].stored_len) {
            note(fn, ctx, 1, "chunk at offset %" PRIu64 " overlaps the chunk before it",
                 ci->offset);
            bad++;
        }
        st = read_chunk_at(r, ci, &c->stored, &c->raw, c->zd);
        if (st == SBT_ENOMEM)
            goto out;
        if (st) {
            note(fn, ctx, 1, "%s", sbt_errmsg());
            bad++;
            continue;
        }
        struct sbt__rd p = {c->raw.p, c->raw.len, 0, ci->offset, "chunk"};
        struct sbt__rd body;
        uint32_t type;
        while ((st = next_record(&p, &type, &body)) == 1) {
            if (type == SBT_REC_BLOB) {
                sbt_hash h;
                char hex[33];
                body.what = "blob record";
                if (sbt__rd_hash(&body, &h) == SBT_OK &&
                    !sbt_hash_eq(h, sbt_hash_bytes(body.p + 16, body.len - 16))) {
                    note(fn, ctx, 1, "chunk at offset %" PRIu64 ": blob %s does not match its hash",
                         ci->offset, sbt_hash_hex(h, hex));
                    bad++;
                }
            } else if (type == SBT_REC_OPS) {
                const struct sbt_op *o;
                uint64_t n = 0, first = 0;
                body.what = "OPS record";
                if ((st = sbt__opdec_begin(&c->d, &body))) {
                    note(fn, ctx, 1, "%s", sbt_errmsg());
                    bad++;
                    st = 0;
                    continue;
                }
                while ((st = sbt__opdec_next(&c->d, &o)) == 1) {
                    uint64_t b, e;
                    if (n++ == 0)
                        first = o->seq;
                    sbt_op_span(o, &b, &e);
                    if (b < ci->t_min || e > ci->t_max) {
                        note(fn, ctx, 1,
                             "op %" PRIu64 ": times %" PRIu64 "..%" PRIu64
                             " fall outside its chunk's range",
                             o->seq, b, e);
                        bad++;
                    }
                    bad += check_op_refs(r, o, fn, ctx);
                }
                if (st < 0) {
                    note(fn, ctx, 1, "%s", sbt_errmsg());
                    bad++;
                    st = 0;
                }
                if (n != ci->n_ops || (n && first < expect_seq)) {
                    note(fn, ctx, 1,
                         "chunk at offset %" PRIu64 ": ops %" PRIu64 "..+%" PRIu64
                         ", expected seq %" PRIu64 " or later and %u ops",
                         ci->offset, first, n, expect_seq, ci->n_ops);
                    bad++;
                } else if (n && first > expect_seq && ci != &r->chunks[r->opc[0]]) {
                    if (n_gaps++ < 3)
                        note(fn, ctx, 0,
                             "ops skip seq %" PRIu64 "..%" PRIu64
                             " (kept from the trace this one was cut from)",
                             expect_seq, first - 1);
                }
                expect_seq = (n ? first : expect_seq) + n;
            } else if (type == SBT_REC_STATE) {
                bad += check_state(r, ci, &body, fn, ctx);
            } else if (type >= SBT_REC_SKIPPABLE) {
                note(fn, ctx, 0, "chunk at offset %" PRIu64 ": skipped unknown record type %u",
                     ci->offset, type);
            } else if (type > SBT_REC_STATE) {
                note(fn, ctx, 1, "chunk at offset %" PRIu64 ": unknown record type %u", ci->offset,
                     type);
                bad++;
            }
        }
        if (st < 0) {
            note(fn, ctx, 1, "%s", sbt_errmsg());
            bad++;
        }
    }
    if (n_gaps > 3)
        note(fn, ctx, 0, "ops skip seqs at %" PRIu64 " places in all", n_gaps);
    st = bad;
out:
    sbt_cursor_close(c);
    return st;
}
