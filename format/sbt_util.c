/*
 * format/sbt_util.c — the small pieces everything in format/ stands on: status messages,
 * the allocation hook, varints, CRC-32C, XXH3 hashes, growable buffers, the chunk header and
 * the table-row codecs (FORMAT.md "Tables").
 *
 * CRC-32C: Debian 12 packages no CRC-32C library for C, so it is here: the SSE4.2 crc32
 * instruction when the CPU has it (x86-64), slicing-by-8 tables otherwise. Both are checked
 * against the RFC 3720 test vectors in tests/test_format.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "format/sbt_int.h"

/* ========================================================================================== */
/* Status and messages                                                                        */
/* ========================================================================================== */

static _Thread_local char errbuf[512];

const char *sbt_strerror(int status)
{
    switch (status) {
#define SBT__CASE(name, val, msg) \
    case val:                     \
        return msg;
        SBT_STATUS_MAP(SBT__CASE)
#undef SBT__CASE
    }
    return "unknown status";
}

const char *sbt_errmsg(void)
{
    return errbuf[0] ? errbuf : "no error";
}

int sbt__fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return status;
}

/* ========================================================================================== */
/* Allocation                                                                                 */
/* ========================================================================================== */

static struct sbt_alloc_hooks hooks = {malloc, realloc, free};

void sbt_set_alloc_hooks(const struct sbt_alloc_hooks *h)
{
    if (h && h->malloc_fn && h->realloc_fn && h->free_fn)
        hooks = *h;
    else
        hooks = (struct sbt_alloc_hooks){malloc, realloc, free};
}

void *sbt__malloc(size_t n)
{
    return hooks.malloc_fn(n ? n : 1);
}

void *sbt__calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = sbt__malloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *sbt__realloc(void *p, size_t n)
{
    return hooks.realloc_fn(p, n ? n : 1);
}

void sbt__free(void *p)
{
    if (p)
        hooks.free_fn(p);
}

int sbt__buf_reserve(struct sbt_buf *b, size_t extra)
{
    if (b->cap - b->len >= extra)
        return 0;
    if (extra > SIZE_MAX / 2 - b->len)
        return sbt__fail(SBT_ENOMEM, "buffer of %zu bytes cannot grow by %zu", b->len, extra);
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra)
        cap *= 2;
    uint8_t *p = sbt__realloc(b->p, cap);
    if (!p)
        return sbt__fail(SBT_ENOMEM, "out of memory growing a buffer to %zu bytes", cap);
    b->p = p;
    b->cap = cap;
    return 0;
}

void sbt__buf_free(struct sbt_buf *b)
{
    sbt__free(b->p);
    memset(b, 0, sizeof *b);
}

/* ========================================================================================== */
/* Varints                                                                                    */
/* ========================================================================================== */

size_t sbt_varint_encode(uint64_t v, uint8_t *out)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

int sbt_varint_decode(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out)
{
    size_t i = *pos;
    if (i < len && buf[i] < 0x80) { /* the common one-byte case */
        *out = buf[i];
        *pos = i + 1;
        return SBT_OK;
    }
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (i >= len)
            return sbt__fail(SBT_ECORRUPT, "offset %zu: varint runs past end of buffer (%zu bytes)",
                             *pos, len);
        uint8_t b = buf[i++];
        if (shift == 63 && b > 1)
            return sbt__fail(SBT_ECORRUPT, "offset %zu: varint overflows 64 bits", *pos);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            *pos = i;
            return SBT_OK;
        }
    }
    return sbt__fail(SBT_ECORRUPT, "offset %zu: varint longer than 10 bytes", *pos);
}

/* ========================================================================================== */
/* CRC-32C                                                                                    */
/* ========================================================================================== */

static uint32_t crc_table[8][256];
static int crc_hw = -1;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2");
#else
    crc_hw = 0;
#endif
}

static uint32_t crc_sw(uint32_t c, const uint8_t *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
        n--;
    }
    while (n >= 8) {
        uint32_t lo = sbt__le32(p) ^ c, hi = sbt__le32(p + 4);
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
            crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^
            crc_table[2][(hi >> 8) & 0xff] ^ crc_table[1][(hi >> 16) & 0xff] ^
            crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw_x86(uint32_t c, const uint8_t *p, size_t n)
{
    uint64_t c64 = c;
    while (n && ((uintptr_t)p & 7)) {
        c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
        p += 8;
        n -= 8;
    }
    while (n--)
        c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
    return (uint32_t)c64;
}
#endif

/* Exposed for the test that checks both paths against each other. */
uint32_t sbt__crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t sbt__crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    if (crc_hw < 0)
        crc_init();
    return ~crc_sw(~crc, buf, len);
}

uint32_t sbt_crc32c(uint32_t crc, const void *buf, size_t len)
{
    if (crc_hw < 0)
        crc_init(); /* idempotent: racing threads compute the same tables */
#if defined(__x86_64__)
    if (crc_hw)
        return ~crc_hw_x86(~crc, buf, len);
#endif
    return ~crc_sw(~crc, buf, len);
}

/* ========================================================================================== */
/* Hashes                                                                                     */
/* ========================================================================================== */

sbt_hash sbt_hash_bytes(const void *buf, size_t len)
{
    XXH128_hash_t h = XXH3_128bits(buf, len);
    return (sbt_hash){h.low64, h.high64};
}

struct sbt_hasher {
    XXH3_state_t st;
};

int sbt_hasher_create(sbt_hasher **out)
{
    *out = sbt__malloc(sizeof **out);
    if (!*out)
        return sbt__fail(SBT_ENOMEM, "out of memory for a hasher");
    sbt_hasher_reset(*out);
    return SBT_OK;
}

void sbt_hasher_reset(sbt_hasher *h)
{
    XXH3_128bits_reset(&h->st);
}

void sbt_hasher_update(sbt_hasher *h, const void *buf, size_t len)
{
    XXH3_128bits_update(&h->st, buf, len);
}

sbt_hash sbt_hasher_digest(const sbt_hasher *h)
{
    XXH128_hash_t d = XXH3_128bits_digest(&h->st);
    return (sbt_hash){d.low64, d.high64};
}

void sbt_hasher_destroy(sbt_hasher *h)
{
    sbt__free(h);
}

char *sbt_hash_hex(sbt_hash h, char out[33])
{
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.hi, (unsigned long long)h.lo);
    return out;
}

void sbt__put_hash(uint8_t out[16], sbt_hash h)
{
    sbt__put_le64(out, h.lo);
    sbt__put_le64(out + 8, h.hi);
}

/* ========================================================================================== */
/* Names                                                                                      */
/* ========================================================================================== */

const char *sbt_api_name(uint32_t api)
{
    static const char *names[] = {"none", "vulkan", "cuda", "synthetic", "tracesmith"};
    return api < sizeof names / sizeof names[0] ? names[api] : "unknown";
}

const char *sbt_op_kind_name(uint32_t kind)
{
    static const char *names[SBT_OP__COUNT] = {
        [SBT_OP_KERNEL] = "kernel",
        [SBT_OP_COPY] = "copy",
        [SBT_OP_FILL] = "fill",
        [SBT_OP_HOST_WRITE] = "host_write",
        [SBT_OP_ALLOC] = "alloc",
        [SBT_OP_FREE] = "free",
        [SBT_OP_EVENT_RECORD] = "event_record",
        [SBT_OP_EVENT_WAIT] = "event_wait",
        [SBT_OP_SIGNAL] = "signal",
        [SBT_OP_WAIT] = "wait",
        [SBT_OP_STREAM_SYNC] = "stream_sync",
        [SBT_OP_DEVICE_SYNC] = "device_sync",
        [SBT_OP_SUBMIT] = "submit",
        [SBT_OP_MARKER] = "marker",
        [SBT_OP_HOST_READ] = "host_read",
        [SBT_OP_STREAM_CREATE] = "stream_create",
        [SBT_OP_STREAM_DESTROY] = "stream_destroy",
    };
    return kind < SBT_OP__COUNT && names[kind] ? names[kind] : "unknown";
}

void sbt_op_span(const struct sbt_op *op, uint64_t *begin, uint64_t *end)
{
    uint64_t b = op->host_begin, e = op->host_end;
    if (op->flags & SBT_OPF_DEV_TIME) {
        if (op->dev_begin < b)
            b = op->dev_begin;
        if (op->dev_end > e)
            e = op->dev_end;
    }
    *begin = b;
    *end = e;
}

/* ========================================================================================== */
/* Chunk header                                                                               */
/* ========================================================================================== */

void sbt__chunk_hdr_encode(const struct sbt__chunk_hdr *h, uint8_t out[SBT_CHUNK_HEADER_LEN])
{
    memset(out, 0, SBT_CHUNK_HEADER_LEN);
    sbt__put_le32(out, SBT_CHUNK_MAGIC);
    out[4] = (uint8_t)h->codec;
    out[5] = (uint8_t)h->content;
    sbt__put_le32(out + 8, h->stored_len);
    sbt__put_le32(out + 12, h->raw_len);
    sbt__put_le64(out + 16, h->seq_first);
    sbt__put_le32(out + 24, h->n_ops);
    sbt__put_le32(out + 28, h->payload_crc);
    sbt__put_le64(out + 32, h->t_min);
    sbt__put_le64(out + 40, h->t_max);
    sbt__put_le32(out + 52, sbt_crc32c(0, out, 52));
}

int sbt__chunk_hdr_decode(const uint8_t in[SBT_CHUNK_HEADER_LEN], uint64_t offset,
                          struct sbt__chunk_hdr *h)
{
    if (sbt__le32(in) != SBT_CHUNK_MAGIC)
        return sbt__fail(SBT_ECORRUPT, "offset %llu: no chunk here (magic %08x, expected %08x)",
                         (unsigned long long)offset, sbt__le32(in), SBT_CHUNK_MAGIC);
    uint32_t want = sbt__le32(in + 52), got = sbt_crc32c(0, in, 52);
    if (want != got && SBT__ENFORCE_CHECKSUMS)
        return sbt__fail(SBT_ECORRUPT,
                         "offset %llu: chunk header CRC mismatch (stored %08x, computed %08x)",
                         (unsigned long long)offset, want, got);
    h->codec = in[4];
    h->content = in[5];
    h->stored_len = sbt__le32(in + 8);
    h->raw_len = sbt__le32(in + 12);
    h->seq_first = sbt__le64(in + 16);
    h->n_ops = sbt__le32(in + 24);
    h->payload_crc = sbt__le32(in + 28);
    h->t_min = sbt__le64(in + 32);
    h->t_max = sbt__le64(in + 40);
    if (h->codec > SBT_CODEC_ZSTD)
        return sbt__fail(SBT_EVERSION, "offset %llu: chunk codec %u is unknown (0 none, 1 zstd)",
                         (unsigned long long)offset, h->codec);
    if (h->codec == SBT_CODEC_NONE && h->stored_len != h->raw_len)
        return sbt__fail(SBT_ECORRUPT,
                         "offset %llu: uncompressed chunk with stored_len %u != raw_len %u",
                         (unsigned long long)offset, h->stored_len, h->raw_len);
    return SBT_OK;
}

/* ========================================================================================== */
/* Record body decoding                                                                       */
/* ========================================================================================== */

int sbt__rd_varint_slow(struct sbt__rd *r, uint64_t *v)
{
    size_t at = r->pos;
    if (sbt_varint_decode(r->p, r->len, &r->pos, v))
        return sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: %s: bad varint at byte %zu of %zu",
                         (unsigned long long)r->file_off, r->what, at, r->len);
    return SBT_OK;
}

int sbt__rd_u32_slow(struct sbt__rd *r, uint32_t *v)
{
    uint64_t x;
    int st = sbt__rd_varint(r, &x);
    if (st)
        return st;
    if (x > UINT32_MAX)
        return sbt__fail(SBT_ECORRUPT, "chunk at offset %llu: %s: value %llu at byte %zu > 2^32-1",
                         (unsigned long long)r->file_off, r->what, (unsigned long long)x, r->pos);
    *v = (uint32_t)x;
    return SBT_OK;
}

int sbt__rd_bytes(struct sbt__rd *r, size_t n, const uint8_t **out)
{
    if (n > r->len - r->pos)
        return sbt__fail(SBT_ECORRUPT,
                         "chunk at offset %llu: %s: %zu bytes wanted at byte %zu, only %zu left",
                         (unsigned long long)r->file_off, r->what, n, r->pos, r->len - r->pos);
    *out = r->p + r->pos;
    r->pos += n;
    return SBT_OK;
}

int sbt__rd_hash(struct sbt__rd *r, sbt_hash *h)
{
    const uint8_t *p;
    int st = sbt__rd_bytes(r, 16, &p);
    if (st)
        return st;
    h->lo = sbt__le64(p);
    h->hi = sbt__le64(p + 8);
    return SBT_OK;
}

/* ========================================================================================== */
/* Table rows                                                                                 */
/* ========================================================================================== */

static int enc_ext(struct sbt_buf *b, const struct sbt_ext *x)
{
    if (x->len && !x->data)
        return sbt__fail(SBT_EINVAL, "ext of kind %u has %u bytes but no data", x->kind, x->len);
    int st = sbt__buf_varint(b, x->len ? x->kind : 0);
    st = st ? st : sbt__buf_varint(b, x->len);
    return st ? st : sbt__buf_put(b, x->data, x->len);
}

static int dec_ext(struct sbt__rd *r, struct sbt_ext *x)
{
    const uint8_t *p;
    int st = sbt__rd_u32(r, &x->kind);
    st = st ? st : sbt__rd_u32(r, &x->len);
    st = st ? st : sbt__rd_bytes(r, x->len, &p);
    x->data = st ? NULL : p;
    return st;
}

#define ENC(v)                                        \
    do {                                              \
        if ((st = sbt__buf_varint(b, (v))) != SBT_OK) \
            return st;                                \
    } while (0)
#define DEC(field)                                     \
    do {                                               \
        if ((st = sbt__rd_u32(r, &(field))) != SBT_OK) \
            return st;                                 \
    } while (0)

int sbt__enc_device(struct sbt_buf *b, const struct sbt_device *d)
{
    int st;
    ENC(d->id);
    ENC(d->api);
    ENC(d->name);
    ENC(d->vendor_id);
    ENC(d->device_id);
    if ((st = sbt__buf_put(b, d->uuid, 16)))
        return st;
    ENC(d->driver_version);
    ENC(d->api_version);
    ENC(d->timestamp_period_fs);
    ENC(d->host);
    return enc_ext(b, &d->ext);
}

int sbt__dec_device(struct sbt__rd *r, struct sbt_device *d)
{
    int st;
    const uint8_t *u;
    memset(d, 0, sizeof *d);
    DEC(d->id);
    DEC(d->api);
    DEC(d->name);
    DEC(d->vendor_id);
    DEC(d->device_id);
    if ((st = sbt__rd_bytes(r, 16, &u)))
        return st;
    memcpy(d->uuid, u, 16);
    DEC(d->driver_version);
    DEC(d->api_version);
    if ((st = sbt__rd_varint(r, &d->timestamp_period_fs)))
        return st;
    DEC(d->host);
    return dec_ext(r, &d->ext);
}

int sbt__enc_stream(struct sbt_buf *b, const struct sbt_stream *s)
{
    int st;
    ENC(s->id);
    ENC(s->device);
    ENC(s->kind);
    ENC(s->name);
    ENC(s->handle);
    ENC(s->family);
    ENC(s->index);
    return enc_ext(b, &s->ext);
}

int sbt__dec_stream(struct sbt__rd *r, struct sbt_stream *s)
{
    int st;
    memset(s, 0, sizeof *s);
    DEC(s->id);
    DEC(s->device);
    DEC(s->kind);
    DEC(s->name);
    if ((st = sbt__rd_varint(r, &s->handle)))
        return st;
    DEC(s->family);
    DEC(s->index);
    return dec_ext(r, &s->ext);
}

int sbt__enc_program(struct sbt_buf *b, const struct sbt_program *p)
{
    int st;
    uint8_t h[16];
    ENC(p->id);
    ENC(p->device);
    ENC(p->kind);
    ENC(p->name);
    sbt__put_hash(h, p->blob);
    if ((st = sbt__buf_put(b, h, 16)))
        return st;
    return enc_ext(b, &p->ext);
}

int sbt__dec_program(struct sbt__rd *r, struct sbt_program *p)
{
    int st;
    memset(p, 0, sizeof *p);
    DEC(p->id);
    DEC(p->device);
    DEC(p->kind);
    DEC(p->name);
    if ((st = sbt__rd_hash(r, &p->blob)))
        return st;
    return dec_ext(r, &p->ext);
}

int sbt__enc_kernel(struct sbt_buf *b, const struct sbt_kernel *k)
{
    int st;
    ENC(k->id);
    ENC(k->program);
    ENC(k->name);
    return enc_ext(b, &k->ext);
}

int sbt__dec_kernel(struct sbt__rd *r, struct sbt_kernel *k)
{
    int st;
    memset(k, 0, sizeof *k);
    DEC(k->id);
    DEC(k->program);
    DEC(k->name);
    return dec_ext(r, &k->ext);
}
