/*
 * format/sbt_int.h — internals shared by the format module's files: the byte layout constants
 * of FORMAT.md, growable buffers, the allocation hook, failure reporting, and the codecs for
 * table rows and op columns that the writer and reader share so the two sides cannot drift.
 * Nothing outside format/ includes this.
 */
#ifndef REPRISE_SBT_INT_H
#define REPRISE_SBT_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format/sbt.h"

/* ---- layout (FORMAT.md) ------------------------------------------------------------------ */

#define SBT_FILE_MAGIC         "\x89RPRSBT\n"
#define SBT_FILE_MAGIC_LEN     8
#define SBT_FILE_HEADER_LEN    32
#define SBT_WRITER_VERSION     2
#define SBT_MIN_READER_VERSION 1 /* a version 1 reader reads a version 2 file's ops and tables */
#define SBT_READER_VERSION     2
#define SBT_REQUIRED_FEATURES  SBT_FEATURE__KNOWN /* required feature bits this reader knows */
#define SBT_CHUNK_MAGIC        0x43544253u        /* "SBTC" little-endian */
#define SBT_CHUNK_HEADER_LEN   56
#define SBT_TRAILER_MAGIC      0x45544253u /* "SBTE" */
#define SBT_TRAILER_LEN        16
#define SBT_CODEC_NONE         0
#define SBT_CODEC_ZSTD         1
#define SBT_MAX_CHUNK_DEFAULT  (1u << 30)
#define SBT_TRACESMITH_MAGIC   "SBT\0"

/* Checksums (file header, chunk header and payload CRCs, the trailer CRC, blob hashes) are
 * always computed, and enforced everywhere but in a fuzzing build: `make fuzz` and the corpus
 * runners of `make check` define FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (the name libFuzzer
 * and OSS-Fuzz use) so that mutated inputs get past the CRCs into the decoders behind them. No
 * other build defines it; a reader built with it must never read real traces. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define SBT__ENFORCE_CHECKSUMS 0
#else
#define SBT__ENFORCE_CHECKSUMS 1
#endif

/* Record types. Types >= SBT_REC_SKIPPABLE may be skipped by readers that do not know them;
 * an unknown type below it makes the file unreadable (EVERSION). */
enum sbt_rec {
    SBT_REC_STRING = 1,
    SBT_REC_DEVICE = 2,
    SBT_REC_STREAM = 3,
    SBT_REC_PROGRAM = 4,
    SBT_REC_KERNEL = 5,
    SBT_REC_META = 6,
    SBT_REC_BLOB = 7,
    SBT_REC_OPS = 8,
    SBT_REC_END = 9,
    SBT_REC_INDEX = 10,
    SBT_REC_BLOB_INDEX = 11,
    SBT_REC_STATE = 12, /* version 2 */
    SBT_REC_SKIPPABLE = 64,
};

/* Op columns inside an OPS record, in this order. A reader ignores columns past the ones it
 * knows (a newer writer may append some). */
enum sbt_col {
    SBT_COL_KIND,     /* u8: kind | subkind << 5 */
    SBT_COL_FLAGS,    /* varint: op flags | SBT_OPF__ACCESS if it has accesses */
    SBT_COL_STREAM,   /* varint */
    SBT_COL_THREAD,   /* varint */
    SBT_COL_NAME,     /* varint */
    SBT_COL_HBEGIN,   /* zigzag varint: host_begin - previous op's host_end (0 before) */
    SBT_COL_HDUR,     /* varint: host_end - host_begin */
    SBT_COL_DBEGIN,   /* DEV_TIME: zigzag: dev_begin - previous dev_end on the stream, or
                         - host_begin for the stream's first op in the chunk */
    SBT_COL_DDUR,     /* DEV_TIME: varint */
    SBT_COL_KERNEL,   /* KERNEL: varint */
    SBT_COL_GEOM,     /* GEOM: varint 0 = as the kernel's last launch in this chunk, or
                         1 then 7 varints grid xyz, block xyz, shmem */
    SBT_COL_BYTES,    /* BYTES: varint */
    SBT_COL_RESOURCE, /* RESOURCE: varint */
    SBT_COL_OBJ,      /* OBJ: varint obj, varint value */
    SBT_COL_BLOB,     /* BLOB: 16 bytes lo, hi little-endian */
    SBT_COL_DIGEST,   /* DIGEST: 16 bytes */
    SBT_COL_ERROR,    /* ERROR: varint */
    SBT_COL_ACCESS,   /* accesses: varint n, then n x (varint resource<<2|mode, offset, len) */
    SBT_COL_PAYLOAD,  /* PAYLOAD: varint kind, varint len, bytes */
    SBT_N_COLS
};
#define SBT_OPF__ACCESS (1u << 10) /* column-only flag: the op has accesses */
#define SBT_KIND_MAX    31u
#define SBT_SUBKIND_MAX 7u

/* ---- memory -------------------------------------------------------------------------------- */

void *sbt__malloc(size_t n);
void *sbt__calloc(size_t n, size_t size);
void *sbt__realloc(void *p, size_t n);
void sbt__free(void *p);

/* Records the message for sbt_errmsg() and returns status. */
int sbt__fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A growable byte buffer. */
struct sbt_buf {
    uint8_t *p;
    size_t len, cap;
};
int sbt__buf_reserve(struct sbt_buf *b, size_t extra);
static inline int sbt__buf_put(struct sbt_buf *b, const void *src, size_t n)
{
    if (b->cap - b->len < n && sbt__buf_reserve(b, n))
        return SBT_ENOMEM;
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}
static inline int sbt__buf_varint(struct sbt_buf *b, uint64_t v)
{
    if (b->cap - b->len < 10 && sbt__buf_reserve(b, 10))
        return SBT_ENOMEM;
    uint8_t *p = b->p + b->len;
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    b->len += n;
    return 0;
}
void sbt__buf_free(struct sbt_buf *b);

static inline void sbt__put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void sbt__put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t sbt__le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t sbt__le64(const uint8_t *p)
{
    return (uint64_t)sbt__le32(p) | (uint64_t)sbt__le32(p + 4) << 32;
}

/* ---- chunk header --------------------------------------------------------------------------- */

struct sbt__chunk_hdr {
    uint32_t codec, content, stored_len, raw_len, n_ops, payload_crc;
    uint64_t seq_first, t_min, t_max;
};
void sbt__chunk_hdr_encode(const struct sbt__chunk_hdr *h, uint8_t out[SBT_CHUNK_HEADER_LEN]);
/* SBT_ECORRUPT (message names offset) if magic or header CRC is wrong. */
int sbt__chunk_hdr_decode(const uint8_t in[SBT_CHUNK_HEADER_LEN], uint64_t offset,
                          struct sbt__chunk_hdr *h);

/* ---- a cursor over one record body, for decoding ------------------------------------------ */

struct sbt__rd {
    const uint8_t *p;
    size_t len, pos;
    uint64_t file_off; /* for messages: chunk offset */
    const char *what;  /* for messages: what is being decoded */
};
int sbt__rd_varint_slow(struct sbt__rd *r, uint64_t *v);
int sbt__rd_u32_slow(struct sbt__rd *r, uint32_t *v);
/* The decoders' hot path, inlined: with 10 bytes of room the loop needs no bounds checks. */
static inline __attribute__((always_inline)) int sbt__rd_varint(struct sbt__rd *r, uint64_t *v)
{
    size_t i = r->pos;
    if (r->len - i >= 10) {
        const uint8_t *p = r->p + i;
        uint64_t x = p[0];
        if (x < 0x80) {
            *v = x;
            r->pos = i + 1;
            return 0;
        }
        x &= 0x7f;
        for (unsigned k = 1; k < 10; k++) {
            uint64_t b = p[k];
            x |= (b & 0x7f) << (7 * k);
            if (b < 0x80) {
                if (k == 9 && b > 1)
                    break; /* overflow: let the slow path report it */
                *v = x;
                r->pos = i + k + 1;
                return 0;
            }
        }
    }
    return sbt__rd_varint_slow(r, v);
}
static inline __attribute__((always_inline)) int
sbt__rd_u32(struct sbt__rd *r, uint32_t *v) /* varint that fits 32 bits */
{
    size_t i = r->pos;
    if (i < r->len && r->p[i] < 0x80) {
        *v = r->p[i];
        r->pos = i + 1;
        return 0;
    }
    return sbt__rd_u32_slow(r, v);
}
int sbt__rd_bytes(struct sbt__rd *r, size_t n, const uint8_t **out);
int sbt__rd_hash(struct sbt__rd *r, sbt_hash *h);
void sbt__put_hash(uint8_t out[16], sbt_hash h);

/* ---- table rows: encode appends the body (no type/length) ---------------------------------- */

int sbt__enc_device(struct sbt_buf *b, const struct sbt_device *d);
int sbt__enc_stream(struct sbt_buf *b, const struct sbt_stream *s);
int sbt__enc_program(struct sbt_buf *b, const struct sbt_program *p);
int sbt__enc_kernel(struct sbt_buf *b, const struct sbt_kernel *k);
/* Decoders point ext.data into the body; the caller copies it if the body goes away. */
int sbt__dec_device(struct sbt__rd *r, struct sbt_device *d);
int sbt__dec_stream(struct sbt__rd *r, struct sbt_stream *s);
int sbt__dec_program(struct sbt__rd *r, struct sbt_program *p);
int sbt__dec_kernel(struct sbt__rd *r, struct sbt_kernel *k);

/* ---- STATE records (sbt_state.c) ----------------------------------------------------------- */

/* Appends the body; SBT_EINVAL (with a message) for unsorted resources or bad chunk indices. */
int sbt__enc_state(struct sbt_buf *b, const struct sbt_state *s);
/* Decodes a body into one malloc'd block (sbt_state_free). */
int sbt__dec_state(struct sbt__rd *r, struct sbt_state **out);

/* ---- op columns ----------------------------------------------------------------------------- */

/* Per-chunk state of the column encoder. prev_dev is indexed by stream id; streams beyond
 * its size fall back to delta against host_begin. */
/* Per-kernel last geometry in the current chunk (a launch usually repeats its kernel's). */
struct sbt__geoms {
    uint32_t (*g)[8]; /* [0] = generation, [1..7] = grid xyz, block xyz, shmem */
    uint32_t cap;
};
/* Slot of kernel k, growing the table; NULL for absurd ids (> 2^20) or no memory. */
uint32_t *sbt__geom_slot(struct sbt__geoms *t, uint32_t k);

struct sbt__colenc {
    struct sbt_buf col[SBT_N_COLS];
    struct sbt__geoms geoms;
    uint64_t prev_host;
    uint64_t *prev_dev; /* per stream; valid where gen[s] == cur_gen */
    uint32_t *gen;
    uint32_t n_streams_cap, cur_gen;
    uint32_t n_ops;
};
int sbt__colenc_add(struct sbt__colenc *e, const struct sbt_op *op);
void sbt__colenc_reset(struct sbt__colenc *e); /* new chunk: empty columns, fresh deltas */
void sbt__colenc_free(struct sbt__colenc *e);
/* Appends the OPS record body (n_ops, seq_first, column lengths, columns). */
int sbt__colenc_emit(struct sbt__colenc *e, uint64_t seq_first, struct sbt_buf *out);

/* Streaming decoder of one OPS record: ops come out one at a time into one struct, so the
 * working set stays in cache. Payloads point into the record body, which must outlive them. */
struct sbt__opdec {
    struct sbt__rd c[SBT_N_COLS];
    uint64_t file_off;
    uint64_t seq_first, n_ops, i; /* ops [seq_first, seq_first + n_ops), next is i */
    uint64_t prev_host;
    uint64_t *prev_dev;
    uint32_t *gen;
    uint32_t n_streams_cap, cur_gen;
    struct sbt__geoms geoms;
    struct sbt_op op;
    struct sbt_access *acc;
    uint32_t cap_acc;
};
/* Reads the record header and sets up the columns. */
int sbt__opdec_begin(struct sbt__opdec *d, struct sbt__rd *body);
/* 1 with *op set (valid until the next call), 0 after the last op (checking that every column
 * was used up exactly), < 0 on corrupt data with a message naming chunk and op. */
int sbt__opdec_next(struct sbt__opdec *d, const struct sbt_op **op);
/* Decodes every op of a record not yet begun (i == 0) into rows at.. of the arrays of cols,
 * reading only the columns those arrays need, and checks that each column it read was used up
 * exactly. span (may be NULL): [begin, end) that every op's span must overlap (the chunk index
 * said so), else SBT_ECORRUPT. */
int sbt__opdec_columns(struct sbt__opdec *d, const struct sbt_columns *cols, uint64_t at,
                       const uint64_t *span);
void sbt__opdec_free(struct sbt__opdec *d);

#endif /* REPRISE_SBT_INT_H */
