/*
 * tests/test_format.c — the SBT format: encoding helpers, writer/reader round trips of every
 * op kind and field, seeks, recovery after truncation at every byte, corruption, versioning,
 * foreign (TraceSmith) files and the golden files under tests/data/format.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/sbt.h"
#include "format/sbt_align.h"
#include "format/sbt_iset.h"
#include "format/sbt_map.h"
#include "format/sbt_vk.h"

uint32_t sbt__crc32c_sw(uint32_t crc, const void *buf, size_t len);

static char tmpdir[64];

static void make_tmp(void)
{
    strcpy(tmpdir, "/tmp/reprise-test-XXXXXX");
    cr_assert(mkdtemp(tmpdir) != NULL);
}

static void rm_tmp(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    cr_assert(system(cmd) == 0);
}

static char *tpath(const char *name)
{
    static char p[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", tmpdir, name);
    return p[k];
}

static size_t file_size(const char *path)
{
    struct stat st;
    cr_assert(stat(path, &st) == 0, "stat %s", path);
    return (size_t)st.st_size;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    *len = file_size(path);
    uint8_t *b = malloc(*len ? *len : 1);
    FILE *f = fopen(path, "rb");
    cr_assert(f && fread(b, 1, *len, f) == *len);
    fclose(f);
    return b;
}

static void spit(const char *path, const void *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f && fwrite(b, 1, len, f) == len);
    fclose(f);
}

/* ========================================================================================== */
/* Varints, zigzag, CRC-32C, hashes                                                           */
/* ========================================================================================== */

struct varint_case {
    uint8_t in[12];
    size_t len;
    int status;
    uint64_t value;
    size_t pos;
};

ParameterizedTestParameters(varint, decode)
{
    static struct varint_case cases[] = {
        {{0x00}, 1, SBT_OK, 0, 1},                 // zero
        {{0x7f}, 1, SBT_OK, 127, 1},               // one byte
        {{0x80, 0x01}, 2, SBT_OK, 128, 2},         // two bytes
        {{0xff, 0xff, 0x03}, 3, SBT_OK, 65535, 3}, // three bytes
        {{0x80}, 1, SBT_ECORRUPT, 0, 0},           // truncated
        {{0x80, 0x80}, 2, SBT_ECORRUPT, 0, 0},     // truncated long
        {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
         10,
         SBT_OK,
         UINT64_MAX,
         10}, // max
        {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
         10,
         SBT_ECORRUPT,
         0,
         0}, // overflow
        {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
         11,
         SBT_ECORRUPT,
         0,
         0},                          // 11 bytes
        {{0}, 0, SBT_ECORRUPT, 0, 0}, // empty
    };
    return cr_make_param_array(struct varint_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct varint_case *c, varint, decode)
{
    size_t pos = 0;
    uint64_t v = 0;
    int st = sbt_varint_decode(c->in, c->len, &pos, &v);
    cr_assert(eq(int, st, c->status), "%s", sbt_errmsg());
    if (st == SBT_OK) {
        cr_assert(eq(u64, v, c->value));
        cr_assert(eq(sz, pos, c->pos));
    } else {
        cr_assert(strstr(sbt_errmsg(), "varint") != NULL, "message: %s", sbt_errmsg());
    }
}

Test(varint, roundtrip)
{
    uint64_t vals[] = {0,          1,         127, 128, 16383, 16384, 1ull << 35, (1ull << 63) - 1,
                       1ull << 63, UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t b[10];
        size_t n = sbt_varint_encode(vals[i], b), pos = 0;
        uint64_t v;
        cr_assert(n >= 1 && n <= 10);
        cr_assert(eq(int, sbt_varint_decode(b, n, &pos, &v), SBT_OK));
        cr_assert(eq(u64, v, vals[i]));
        cr_assert(eq(sz, pos, n));
    }
    int64_t s[] = {0, -1, 1, INT64_MIN, INT64_MAX, -123456789};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        cr_assert(eq(i64, sbt_zigzag_decode(sbt_zigzag_encode(s[i])), s[i]));
    cr_assert(eq(u64, sbt_zigzag_encode(-1), 1));
    cr_assert(eq(u64, sbt_zigzag_encode(1), 2));
}

Test(crc32c, rfc3720_vectors)
{
    uint8_t zeros[32] = {0}, ones[32], inc[32];
    memset(ones, 0xff, sizeof ones);
    for (int i = 0; i < 32; i++)
        inc[i] = (uint8_t)i;
    cr_assert(eq(u32, sbt_crc32c(0, zeros, 32), 0x8A9136AAu));
    cr_assert(eq(u32, sbt_crc32c(0, ones, 32), 0x62A8AB43u));
    cr_assert(eq(u32, sbt_crc32c(0, inc, 32), 0x46DD794Eu));
    cr_assert(eq(u32, sbt_crc32c(0, "123456789", 9), 0xE3069283u));
    /* incremental == one shot; hardware == tables at every alignment and length */
    uint8_t buf[300];
    for (int i = 0; i < 300; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    cr_assert(
        eq(u32, sbt_crc32c(sbt_crc32c(0, buf, 100), buf + 100, 200), sbt_crc32c(0, buf, 300)));
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len < 40; len++)
            cr_assert(eq(u32, sbt_crc32c(0, buf + off, len), sbt__crc32c_sw(0, buf + off, len)));
}

Test(hash, content_addressed)
{
    sbt_hash a = sbt_hash_bytes("abc", 3), b = sbt_hash_bytes("abc", 3),
             c = sbt_hash_bytes("abd", 3);
    cr_assert(sbt_hash_eq(a, b));
    cr_assert(0 == sbt_hash_eq(a, c));
    sbt_hasher *h;
    cr_assert(eq(int, sbt_hasher_create(&h), SBT_OK));
    sbt_hasher_update(h, "a", 1);
    sbt_hasher_update(h, "bc", 2);
    cr_assert(sbt_hash_eq(sbt_hasher_digest(h), a));
    sbt_hasher_destroy(h);
    char hex[33];
    cr_assert(eq(sz, strlen(sbt_hash_hex(a, hex)), 32));
}

Test(status, messages)
{
    cr_assert(eq(str, (char *)sbt_strerror(SBT_ECORRUPT), "corrupt trace"));
    cr_assert(eq(str, (char *)sbt_strerror(12345), "unknown status"));
    cr_assert(eq(str, (char *)sbt_op_kind_name(SBT_OP_KERNEL), "kernel"));
    cr_assert(eq(str, (char *)sbt_op_kind_name(999), "unknown"));
}

/* ========================================================================================== */
/* A trace with every op kind and field                                                       */
/* ========================================================================================== */

struct fixture {
    uint32_t dev, stream, stream2, host, prog, kern, name, err;
    sbt_hash blob, img;
    struct sbt_access acc[3];
    uint8_t payload[5];
};

static struct fixture fx;

/* Op i of the round-trip trace: kind cycles through every kind, fields through every flag. */
static struct sbt_op make_op(uint64_t i)
{
    struct sbt_op op;
    memset(&op, 0, sizeof op);
    op.kind = 1 + (uint32_t)(i % (SBT_OP__COUNT - 1));
    op.subkind = (uint32_t)(i % 5);
    op.stream = i % 3 == 0 ? fx.stream : i % 3 == 1 ? fx.stream2 : fx.host;
    op.thread = (uint32_t)(i % 4);
    op.name = i % 2 ? fx.name : 0;
    op.host_begin = 1000000 + i * 1000 - (i % 7 == 3 ? 900 : 0); /* some out of order */
    op.host_end = op.host_begin + 10 + i % 13;
    op.flags = (uint32_t)(i * 0x9E3779B1u) & SBT_OPF__FIELDS;
    if (i % 11 == 0)
        op.flags |= SBT_OPF_UNSUPPORTED;
    if (op.flags & SBT_OPF_DEV_TIME) {
        op.dev_begin = op.host_begin + 500 - (i % 5) * 300; /* may precede host_begin */
        op.dev_end = op.dev_begin + 77 * (i % 9);
    }
    if (op.flags & SBT_OPF_KERNEL)
        op.kernel = fx.kern;
    if (op.flags & SBT_OPF_GEOM) {
        op.grid[0] = (uint32_t)(i % 3 + 1), op.grid[1] = 2, op.grid[2] = 3;
        op.block[0] = 64, op.block[1] = (uint32_t)(i % 2 + 1), op.block[2] = 1;
        op.shmem = (uint32_t)(i % 3) * 1024;
    }
    if (op.flags & SBT_OPF_BYTES)
        op.bytes = i * 4096 + 1;
    if (op.flags & SBT_OPF_RESOURCE)
        op.resource = i + 1;
    if (op.flags & SBT_OPF_OBJ)
        op.obj = i * 3, op.value = UINT64_MAX - i;
    if (op.flags & SBT_OPF_BLOB)
        op.blob = fx.blob;
    if (op.flags & SBT_OPF_DIGEST)
        op.digest = sbt_hash_bytes(&i, sizeof i);
    if (op.flags & SBT_OPF_ERROR)
        op.error = fx.err;
    if (op.flags & SBT_OPF_PAYLOAD) {
        op.payload.kind = 0x100 + (uint32_t)(i % 3);
        op.payload.len = (uint32_t)(i % 6);
        op.payload.data = fx.payload;
    }
    op.n_access = (uint32_t)(i % 4);
    op.access = fx.acc;
    return op;
}

static void check_op(const struct sbt_op *got, uint64_t i)
{
    struct sbt_op want = make_op(i);
    cr_assert(eq(u64, got->seq, i));
    cr_assert(eq(u32, got->kind, want.kind), "op %llu", (unsigned long long)i);
    cr_assert(eq(u32, got->subkind, want.subkind));
    cr_assert(eq(u32, got->flags, want.flags), "op %llu", (unsigned long long)i);
    cr_assert(eq(u32, got->stream, want.stream));
    cr_assert(eq(u32, got->thread, want.thread));
    cr_assert(eq(u32, got->name, want.name));
    cr_assert(eq(u64, got->host_begin, want.host_begin));
    cr_assert(eq(u64, got->host_end, want.host_end));
    cr_assert(eq(u64, got->dev_begin, want.dev_begin), "op %llu", (unsigned long long)i);
    cr_assert(eq(u64, got->dev_end, want.dev_end));
    cr_assert(eq(u32, got->kernel, want.kernel));
    cr_assert(0 == memcmp(got->grid, want.grid, sizeof want.grid));
    cr_assert(0 == memcmp(got->block, want.block, sizeof want.block));
    cr_assert(eq(u32, got->shmem, want.shmem));
    cr_assert(eq(u64, got->bytes, want.bytes));
    cr_assert(eq(u64, got->resource, want.resource));
    cr_assert(eq(u64, got->obj, want.obj));
    cr_assert(eq(u64, got->value, want.value));
    cr_assert(sbt_hash_eq(got->blob, want.blob));
    cr_assert(sbt_hash_eq(got->digest, want.digest));
    cr_assert(eq(u32, got->error, want.error));
    cr_assert(eq(u32, got->n_access, want.n_access));
    for (uint32_t k = 0; k < want.n_access; k++) {
        cr_assert(eq(u64, got->access[k].resource, want.access[k].resource));
        cr_assert(eq(u64, got->access[k].offset, want.access[k].offset));
        cr_assert(eq(u64, got->access[k].len, want.access[k].len));
        cr_assert(eq(u32, got->access[k].mode, want.access[k].mode));
    }
    cr_assert(eq(u32, got->payload.kind, want.payload.kind));
    cr_assert(eq(u32, got->payload.len, want.payload.len));
    if (want.payload.len)
        cr_assert(0 == memcmp(got->payload.data, want.payload.data, want.payload.len));
}

/* Writes n ops of the round-trip trace to path; chunk_ops small so there are many chunks. */
static int threads; /* writer option for write_trace */

static void write_trace(const char *path, uint64_t n, uint32_t chunk_ops, int zstd, int close_it)
{
    sbt_writer *w;
    struct sbt_writer_opts o =
        SBT_WRITER_OPTS(.chunk_ops = chunk_ops, .zstd_level = zstd, .threads = (uint32_t)threads);
    cr_assert(eq(int, sbt_writer_open(path, &o, &w), SBT_OK), "%s", sbt_errmsg());
    uint32_t s_dev, s_host;
    static const uint8_t props[] = {1, 2, 3, 4};
    cr_assert(eq(int, sbt_writer_intern(w, "Test GPU", &s_dev), SBT_OK));
    cr_assert(eq(int, sbt_writer_intern(w, "testhost", &s_host), SBT_OK));
    struct sbt_device d = {.api = SBT_API_VULKAN,
                           .name = s_dev,
                           .vendor_id = 0x10005,
                           .device_id = 7,
                           .driver_version = 42,
                           .api_version = 0x403000,
                           .timestamp_period_fs = 1000000,
                           .host = s_host,
                           .ext = {0x100, sizeof props, props}};
    d.uuid[3] = 9;
    cr_assert(eq(int, sbt_writer_add_device(w, &d, &fx.dev), SBT_OK));
    struct sbt_stream s = {
        .device = fx.dev, .kind = SBT_STREAM_QUEUE, .handle = 0xabc, .family = 1};
    cr_assert(eq(int, sbt_writer_add_stream(w, &s, &fx.stream), SBT_OK));
    s.index = 1;
    cr_assert(eq(int, sbt_writer_add_stream(w, &s, &fx.stream2), SBT_OK));
    s.kind = SBT_STREAM_HOST_THREAD;
    cr_assert(eq(int, sbt_writer_add_stream(w, &s, &fx.host), SBT_OK));
    static const char spirv[] = "\x03\x02\x23\x07 pretend spirv";
    cr_assert(eq(int, sbt_writer_blob(w, spirv, sizeof spirv, &fx.img), SBT_OK));
    struct sbt_program p = {.device = fx.dev, .kind = SBT_PROGRAM_SPIRV, .blob = fx.img};
    cr_assert(eq(int, sbt_writer_intern(w, "shader.comp", &p.name), SBT_OK));
    cr_assert(eq(int, sbt_writer_add_program(w, &p, &fx.prog), SBT_OK));
    struct sbt_kernel k = {.program = fx.prog};
    cr_assert(eq(int, sbt_writer_intern(w, "main", &k.name), SBT_OK));
    cr_assert(eq(int, sbt_writer_add_kernel(w, &k, &fx.kern), SBT_OK));
    cr_assert(eq(int, sbt_writer_intern(w, "vkCmdDispatch", &fx.name), SBT_OK));
    cr_assert(eq(int, sbt_writer_intern(w, "device lost", &fx.err), SBT_OK));
    static const char data[] = "uploaded bytes";
    cr_assert(eq(int, sbt_writer_blob(w, data, sizeof data, &fx.blob), SBT_OK));
    cr_assert(eq(int, sbt_writer_meta(w, "program", "/usr/bin/test \"quoted\""), SBT_OK));
    fx.acc[0] = (struct sbt_access){1, 0, 4096, SBT_ACCESS_READ};
    fx.acc[1] = (struct sbt_access){(1ull << 61) - 1, 1ull << 40, 1, SBT_ACCESS_WRITE};
    fx.acc[2] = (struct sbt_access){3, 17, UINT64_MAX / 4, SBT_ACCESS_RW};
    memcpy(fx.payload, "\x00\x01\xfe\xff\x80", 5);
    for (uint64_t i = 0; i < n; i++) {
        struct sbt_op op = make_op(i);
        uint64_t seq;
        cr_assert(eq(int, sbt_writer_add_op(w, &op, &seq), SBT_OK), "op %llu: %s",
                  (unsigned long long)i, sbt_errmsg());
        cr_assert(eq(u64, seq, i));
    }
    cr_assert(eq(int, sbt_writer_unsupported(w, "vkCmdDraw", 3, 40, 0), SBT_OK));
    cr_assert(eq(int, sbt_writer_unsupported(w, "vkCmdDraw", 2, 12, 0), SBT_OK));
    cr_assert(
        eq(int, sbt_writer_unsupported(w, "vkCreateSwapchainKHR", 1, SBT_SEQ_NONE, 0), SBT_OK));
    if (close_it)
        cr_assert(eq(int, sbt_writer_close(w), SBT_OK), "%s", sbt_errmsg());
    else
        sbt_writer_abandon(w);
}

TestSuite(roundtrip, .init = make_tmp, .fini = rm_tmp);

Test(roundtrip, every_kind_and_field)
{
    for (int z = 0; z < 4; z++) {
        const char *path = tpath(z & 1 ? "z.sbt" : "raw.sbt");
        threads = z >> 1; /* also with compression and writing on a background thread */
        write_trace(path, 1000, 64, z & 1 ? 3 : -1, 1);
        sbt_reader *r;
        cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK), "%s", sbt_errmsg());
        const struct sbt_info *in = sbt_reader_info(r);
        cr_assert(eq(u64, in->n_ops, 1000));
        cr_assert(in->has_footer && in->writer_finished && in->complete);
        cr_assert(eq(u64, in->n_blobs, 2));
        uint32_t n;
        const struct sbt_device *d = sbt_reader_devices(r, &n);
        cr_assert(eq(u32, n, 1));
        cr_assert(eq(str, (char *)sbt_reader_string(r, d->name), "Test GPU"));
        cr_assert(eq(u32, d->vendor_id, 0x10005));
        cr_assert(eq(u64, d->timestamp_period_fs, 1000000));
        cr_assert(eq(u32, d->uuid[3], 9));
        cr_assert(eq(u32, d->ext.kind, 0x100));
        cr_assert(eq(u32, d->ext.len, 4));
        cr_assert(0 == memcmp(d->ext.data, "\x01\x02\x03\x04", 4));
        sbt_reader_streams(r, &n);
        cr_assert(eq(u32, n, 3));
        cr_assert(eq(u32, sbt_reader_stream(r, fx.host)->kind, SBT_STREAM_HOST_THREAD));
        cr_assert(sbt_hash_eq(sbt_reader_program(r, fx.prog)->blob, fx.img));
        cr_assert(
            eq(str, (char *)sbt_reader_string(r, sbt_reader_kernel(r, fx.kern)->name), "main"));
        cr_assert(eq(str, (char *)sbt_reader_meta_get(r, "program"), "/usr/bin/test \"quoted\""));
        cr_assert(sbt_reader_meta_get(r, "nope") == NULL);
        const struct sbt_unsupported *u = sbt_reader_unsupported(r, &n);
        cr_assert(eq(u32, n, 2));
        cr_assert(eq(str, (char *)sbt_reader_string(r, u[0].what), "vkCmdDraw"));
        cr_assert(eq(u64, u[0].count, 5));
        cr_assert(eq(u64, u[0].first_seq, 12), "the earliest first op is kept");
        cr_assert(eq(u64, u[1].first_seq, SBT_SEQ_NONE));
        cr_assert(eq(u32, u[0].flags | u[1].flags, 0));
        cr_assert(sbt_reader_string(r, 9999) == NULL);
        cr_assert(eq(str, (char *)sbt_reader_string(r, 0), ""));

        sbt_cursor *c;
        const struct sbt_op *op;
        uint64_t i = 0;
        cr_assert(eq(int, sbt_cursor_open(r, NULL, &c), SBT_OK));
        int st;
        while ((st = sbt_cursor_next(c, &op)) == 1)
            check_op(op, i++);
        cr_assert(eq(int, st, 0), "%s", sbt_errmsg());
        cr_assert(eq(u64, i, 1000));
        sbt_cursor_close(c);

        void *data;
        size_t len;
        cr_assert(eq(int, sbt_reader_blob(r, &fx.blob, &data, &len), SBT_OK));
        cr_assert(eq(sz, len, sizeof "uploaded bytes"));
        cr_assert(0 == memcmp(data, "uploaded bytes", len));
        free(data);
        sbt_hash none = {1, 2};
        cr_assert(eq(int, sbt_reader_blob(r, &none, &data, &len), SBT_ENOTFOUND));
        cr_assert(data == NULL);
        cr_assert(eq(int, sbt_reader_validate(r, NULL, NULL), 0), "%s", sbt_errmsg());
        sbt_reader_close(r);
    }
}

Test(roundtrip, strings_and_blobs_dedup)
{
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(tpath("d.sbt"), NULL, &w), SBT_OK));
    uint32_t a, b, c, e;
    cr_assert(eq(int, sbt_writer_intern(w, "same", &a), SBT_OK));
    cr_assert(eq(int, sbt_writer_intern(w, "same", &b), SBT_OK));
    cr_assert(eq(int, sbt_writer_intern(w, "other", &c), SBT_OK));
    cr_assert(eq(int, sbt_writer_intern(w, "", &e), SBT_OK));
    cr_assert(eq(u32, a, b));
    cr_assert(ne(u32, a, c));
    cr_assert(eq(u32, e, 0));
    for (int i = 0; i < 3000; i++) { /* grows the intern and blob tables past their first size */
        char s[32];
        snprintf(s, sizeof s, "s%d", i % 1500);
        uint32_t id;
        sbt_hash h;
        cr_assert(eq(int, sbt_writer_intern(w, s, &id), SBT_OK));
        cr_assert(eq(int, sbt_writer_blob(w, s, strlen(s), &h), SBT_OK));
    }
    sbt_hash h1, h2;
    static uint8_t big[3 << 20];
    big[12345] = 1;
    cr_assert(eq(int, sbt_writer_blob(w, big, sizeof big, &h1), SBT_OK));
    cr_assert(eq(int, sbt_writer_blob(w, big, sizeof big, &h2), SBT_OK));
    cr_assert(sbt_hash_eq(h1, h2));
    cr_assert(eq(int, sbt_writer_close(w), SBT_OK));
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(tpath("d.sbt"), NULL, &r), SBT_OK));
    cr_assert(eq(u64, sbt_reader_info(r)->n_blobs, 1501));
    cr_assert(eq(u32, sbt_reader_n_strings(r), 1502));
    void *data;
    size_t len;
    cr_assert(eq(int, sbt_reader_blob(r, &h1, &data, &len), SBT_OK));
    cr_assert(eq(sz, len, sizeof big));
    cr_assert(eq(int, ((uint8_t *)data)[12345], 1));
    free(data);
    sbt_reader_close(r);
}

Test(roundtrip, writer_rejects_bad_ops)
{
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(tpath("bad.sbt"), NULL, &w), SBT_OK));
    struct sbt_op op = {.kind = 0};
    cr_assert(eq(int, sbt_writer_add_op(w, &op, NULL), SBT_EINVAL));
    cr_assert(strstr(sbt_errmsg(), "kind") != NULL, "%s", sbt_errmsg());
    op.kind = SBT_OP_KERNEL;
    op.stream = 5;
    cr_assert(eq(int, sbt_writer_add_op(w, &op, NULL), SBT_EINVAL));
    cr_assert(strstr(sbt_errmsg(), "stream 5") != NULL, "%s", sbt_errmsg());
    op.stream = 0;
    op.host_begin = 10, op.host_end = 5;
    cr_assert(eq(int, sbt_writer_add_op(w, &op, NULL), SBT_EINVAL));
    op.host_end = 10;
    op.n_access = 1;
    cr_assert(eq(int, sbt_writer_add_op(w, &op, NULL), SBT_EINVAL));
    struct sbt_stream s = {.device = 3};
    uint32_t id;
    cr_assert(eq(int, sbt_writer_add_stream(w, &s, &id), SBT_EINVAL));
    cr_assert(strstr(sbt_errmsg(), "device 3") != NULL, "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_writer_close(w), SBT_OK));
    sbt_writer *w2;
    cr_assert(eq(int, sbt_writer_open("/nonexistent/dir/x.sbt", NULL, &w2), SBT_EIO));
    cr_assert(w2 == NULL);
    cr_assert(strstr(sbt_errmsg(), "/nonexistent/dir/x.sbt") != NULL);
}

/* An unmodelled call that affects replay makes the trace incomplete by itself, named with its
 * count and first op; a harmless one is only counted. */
Test(roundtrip, unmodelled_call_affects_completeness)
{
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(tpath("u.sbt"), NULL, &w), SBT_OK));
    cr_assert(
        eq(int, sbt_writer_unsupported(w, "vkGetPhysicalDeviceFormatProperties", 4, 0, 0), SBT_OK));
    cr_assert(eq(int, sbt_writer_close(w), SBT_OK));
    sbt_reader *r;
    char why[256];
    cr_assert(eq(int, sbt_reader_open(tpath("u.sbt"), NULL, &r), SBT_OK));
    cr_assert(sbt_reader_info(r)->complete, "a harmless call leaves the trace complete");
    cr_assert(eq(sz, sbt_reader_incomplete_why(r, why, sizeof why), 0));
    sbt_reader_close(r);

    cr_assert(eq(int, sbt_writer_open(tpath("u.sbt"), NULL, &w), SBT_OK));
    cr_assert(eq(
        int, sbt_writer_unsupported(w, "vkCmdCopyQueryPoolResults", 2, 57, SBT_UNMODELLED_AFFECTS),
        SBT_OK));
    cr_assert(eq(int, sbt_writer_unsupported(w, "vkCmdCopyQueryPoolResults", 1, 9, 0), SBT_OK));
    cr_assert(eq(int, sbt_writer_close(w), SBT_OK));
    cr_assert(eq(int, sbt_reader_open(tpath("u.sbt"), NULL, &r), SBT_OK));
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(in->writer_finished && !in->complete);
    uint32_t n;
    const struct sbt_unsupported *u = sbt_reader_unsupported(r, &n);
    cr_assert(eq(u32, n, 1));
    cr_assert(eq(u64, u->count, 3));
    cr_assert(eq(u64, u->first_seq, 9));
    cr_assert(eq(u32, u->flags, SBT_UNMODELLED_AFFECTS));
    size_t len = sbt_reader_incomplete_why(r, why, sizeof why);
    cr_assert(eq(sz, len, strlen(why)));
    cr_assert(eq(str, why,
                 "unmodelled calls that affect replay: vkCmdCopyQueryPoolResults x3 (first at "
                 "op 9)"));
    cr_assert(eq(sz, sbt_reader_incomplete_why(r, why, 8), len), "the length it needs");
    cr_assert(eq(str, why, "unmodel"));
    sbt_reader_close(r);
}

/* Large chunks are stored compressed only where a sample from their middle compresses, and
 * read back intact: noise is stored as it is, zeros are compressed, and zeros with 64 KiB of
 * noise in the middle are stored as they are although the whole would compress (so the
 * decision is the sample's: no full zstd pass was made). */
Test(roundtrip, large_chunks_compressed_where_a_sample_shrinks)
{
    size_t n = 1u << 20;
    uint8_t *noise = malloc(n), *zeros = calloc(1, n), *holed = calloc(1, n);
    cr_assert(noise && zeros && holed);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        noise[i] = (uint8_t)x;
    }
    memcpy(holed + n / 2 - 32768, noise, 65536);
    const struct {
        const char *what;
        const uint8_t *bytes;
        uint32_t codec;
    } c[] = {
        {"noise", noise, 0}, {"zeros", zeros, 1}, {"zeros with noise in the middle", holed, 0}};
    for (int k = 0; k < 3; k++) {
        sbt_writer *w;
        sbt_hash h;
        cr_assert(eq(int, sbt_writer_open(tpath("z.sbt"), NULL, &w), SBT_OK));
        cr_assert(eq(int, sbt_writer_blob(w, c[k].bytes, n, &h), SBT_OK));
        cr_assert(eq(int, sbt_writer_close(w), SBT_OK));
        sbt_reader *r;
        cr_assert(eq(int, sbt_reader_open(tpath("z.sbt"), NULL, &r), SBT_OK));
        uint64_t nc;
        const struct sbt_chunk_info *ci = sbt_reader_chunks(r, &nc);
        int found = 0;
        for (uint64_t i = 0; i < nc; i++)
            if (ci[i].raw_len >= n) {
                found = 1;
                cr_expect(eq(u32, ci[i].codec, c[k].codec), "%s: chunk stored with codec %u",
                          c[k].what, ci[i].codec);
            }
        cr_assert(found, "the blob's chunk");
        void *back;
        size_t len;
        cr_assert(eq(int, sbt_reader_blob(r, &h, &back, &len), SBT_OK));
        cr_assert(len == n && !memcmp(back, c[k].bytes, n), "%s read back", c[k].what);
        free(back);
        sbt_reader_close(r);
    }
    free(noise);
    free(zeros);
    free(holed);
}

Test(roundtrip, incomplete_mark)
{
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(tpath("i.sbt"), NULL, &w), SBT_OK));
    cr_assert(eq(int, sbt_writer_mark_incomplete(w, "out of memory in capture"), SBT_OK));
    cr_assert(eq(int, sbt_writer_mark_incomplete(w, "second reason ignored"), SBT_OK));
    cr_assert(eq(int, sbt_writer_close(w), SBT_OK));
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(tpath("i.sbt"), NULL, &r), SBT_OK));
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(in->writer_finished && !in->complete);
    cr_assert(
        eq(str, (char *)sbt_reader_string(r, in->incomplete_reason), "out of memory in capture"));
    cr_assert(eq(u64, in->n_ops, 0));
    sbt_reader_close(r);
}

/* ========================================================================================== */
/* Seeks                                                                                      */
/* ========================================================================================== */

TestSuite(seek, .init = make_tmp, .fini = rm_tmp);

static int selected(const struct sbt_op *op, const struct sbt_range *rg)
{
    if (rg->has_seq && (op->seq < rg->seq_begin || op->seq >= rg->seq_end))
        return 0;
    if (rg->stream && op->stream != rg->stream)
        return 0;
    if (rg->has_time) {
        uint64_t b, e;
        sbt_op_span(op, &b, &e);
        if (e < rg->t_begin || b >= rg->t_end)
            return 0;
    }
    return 1;
}

Test(seek, ranges_equal_brute_force)
{
    const char *path = tpath("s.sbt");
    write_trace(path, 3000, 50, 1, 1);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK));
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(in->n_chunks > 60);
    uint64_t x = 12345;
    for (int trial = 0; trial < 120; trial++) {
        struct sbt_range rg = {0};
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if (trial % 3 != 1) {
            rg.has_seq = 1;
            rg.seq_begin = (x >> 33) % 3100;
            rg.seq_end = rg.seq_begin + (x >> 17) % 500;
        }
        if (trial % 3 != 0) {
            rg.has_time = 1;
            rg.t_begin = in->t_min + (x >> 20) % (in->t_max - in->t_min + 1000);
            rg.t_end = rg.t_begin + (x >> 40) % 300000;
        }
        if (trial % 5 == 0)
            rg.stream = fx.stream2;
        uint64_t want = 0, got = 0;
        for (uint64_t i = 0; i < 3000; i++) {
            struct sbt_op op = make_op(i);
            op.seq = i;
            want += selected(&op, &rg);
        }
        sbt_cursor *c;
        const struct sbt_op *op;
        cr_assert(eq(int, sbt_cursor_open(r, &rg, &c), SBT_OK));
        int st;
        while ((st = sbt_cursor_next(c, &op)) == 1) {
            cr_assert(selected(op, &rg), "trial %d: op %llu outside the range", trial,
                      (unsigned long long)op->seq);
            check_op(op, op->seq);
            got++;
        }
        cr_assert(eq(int, st, 0));
        cr_assert(eq(u64, got, want), "trial %d", trial);
        sbt_cursor_close(c);
    }
    sbt_reader_close(r);
}

/* ========================================================================================== */
/* Recovery: cut at every byte of the last two chunks and the footer                          */
/* ========================================================================================== */

TestSuite(recovery, .init = make_tmp, .fini = rm_tmp);

Test(recovery, truncation_at_every_byte)
{
    const char *path = tpath("full.sbt"), *cut = tpath("cut.sbt");
    write_trace(path, 600, 100, 3, 1);
    size_t len;
    uint8_t *b = slurp(path, &len);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK));
    uint64_t n_chunks;
    const struct sbt_chunk_info *ci = sbt_reader_chunks(r, &n_chunks);
    struct sbt_chunk_info chunks[64];
    cr_assert(n_chunks >= 4 && n_chunks < 64);
    memcpy(chunks, ci, n_chunks * sizeof *ci);
    sbt_reader_close(r);
    /* ops chunks: the last two that hold ops */
    uint64_t k_last = n_chunks, k_prev = n_chunks;
    for (uint64_t k = 0; k < n_chunks; k++)
        if (chunks[k].content & SBT_CHUNK_OPS)
            k_prev = k_last, k_last = k;
    cr_assert(k_prev < n_chunks);
    for (size_t at = chunks[k_prev].offset; at < len; at++) {
        spit(cut, b, at);
        /* ops in chunks that end at or before the cut; the index chunk (the last before the
         * 16-byte trailer) counts as a chunk whose loss loses no ops */
        uint64_t want = 0, lost_at = len - 16;
        int whole = 1;
        for (uint64_t k = 0; k < n_chunks; k++) {
            uint64_t end = chunks[k].offset + 56 + chunks[k].stored_len;
            if (end <= at) {
                want += chunks[k].n_ops;
            } else if (whole) {
                lost_at = chunks[k].offset;
                whole = 0;
            }
        }
        if (whole)
            lost_at = chunks[n_chunks - 1].offset + 56 + chunks[n_chunks - 1].stored_len;
        int torn = at > lost_at && at < len - 16;
        cr_assert(eq(int, sbt_reader_open(cut, NULL, &r), SBT_OK), "cut at %zu: %s", at,
                  sbt_errmsg());
        const struct sbt_info *in = sbt_reader_info(r);
        cr_assert(0 == in->has_footer, "cut at %zu", at);
        cr_assert(eq(u64, in->n_ops, want), "cut at %zu", at);
        if (torn) {
            cr_assert(eq(u64, in->lost_offset, lost_at), "cut at %zu", at);
            cr_assert(eq(u64, in->lost_bytes, at - lost_at), "cut at %zu", at);
        } else {
            cr_assert(eq(u64, in->lost_bytes, 0), "cut at %zu", at);
        }
        if (whole)
            cr_assert(in->writer_finished, "cut at %zu: END chunk is complete", at);
        /* every recovered op reads back exactly */
        sbt_cursor *c;
        const struct sbt_op *op;
        uint64_t i = 0;
        cr_assert(eq(int, sbt_cursor_open(r, NULL, &c), SBT_OK));
        while (sbt_cursor_next(c, &op) == 1)
            check_op(op, i++);
        cr_assert(eq(u64, i, want));
        sbt_cursor_close(c);
        int problems = sbt_reader_validate(r, NULL, NULL);
        cr_assert(problems >= 0);
        cr_assert(eq(int, problems > 0, torn), "cut at %zu", at);
        sbt_reader_close(r);
    }
    free(b);
}

Test(recovery, abandoned_writer_is_readable)
{
    const char *path = tpath("a.sbt");
    threads = 1; /* what the background thread was handed is written before abandon returns */
    write_trace(path, 1000, 100, 3, 0);
    threads = 0;
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK), "%s", sbt_errmsg());
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(0 == (in->has_footer | in->writer_finished | in->complete));
    cr_assert(eq(u64, in->n_ops, 1000)); /* 10 full chunks of 100: all were flushed */
    cr_assert(eq(u64, in->lost_bytes, 0));
    sbt_reader_close(r);
}

/* A write that fails (here a file size limit; a full disk alike) after some chunks: close cuts
 * the file back to the chunks written whole and ends it with an END record naming the failure
 * and the op where it stops, so it reads as incomplete with that reason, not as cut short;
 * strings interned in the lost chunks and named by the END (an unmodelled call) are written
 * again so that their ids stay consecutive. */
Test(recovery, a_failed_write_closes_with_what_was_written_whole)
{
    const char *path = tpath("full.sbt");
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(path, &SBT_WRITER_OPTS(.zstd_level = -1), &w), SBT_OK), "%s",
              sbt_errmsg());
    signal(SIGXFSZ, SIG_IGN); /* the limit then fails the write with EFBIG */
    struct rlimit rl = {64 << 10, 64 << 10};
    cr_assert(eq(int, setrlimit(RLIMIT_FSIZE, &rl), 0));
    struct sbt_device d = {.api = SBT_API_SYNTH};
    struct sbt_stream s = {.kind = SBT_STREAM_HOST_THREAD};
    cr_assert(eq(int, sbt_writer_add_device(w, &d, &s.device), SBT_OK));
    uint32_t stream;
    cr_assert(eq(int, sbt_writer_add_stream(w, &s, &stream), SBT_OK));
    int st = SBT_OK;
    uint64_t i = 0;
    for (; i < 100000 && st == SBT_OK; i++) {
        char name[64];
        snprintf(name, sizeof name, "marker number %llu", (unsigned long long)i);
        struct sbt_op op = {
            .kind = SBT_OP_MARKER, .stream = stream, .host_begin = 10 * i, .host_end = 10 * i + 5};
        st = sbt_writer_intern(w, name, &op.name);
        if (st == SBT_OK)
            st = sbt_writer_add_op(w, &op, NULL);
        if (st == SBT_OK && i % 100 == 99)
            st = sbt_writer_flush(w);
    }
    cr_assert(eq(int, st, SBT_EIO), "the limit was never reached (%llu ops)",
              (unsigned long long)i);
    sbt_writer_unsupported(w, "vkLateCall", 2, SBT_SEQ_NONE, 0); /* a string after the failure */
    sbt_writer_mark_incomplete(w, "the capture layer: writing failed");
    cr_assert(eq(int, sbt_writer_close(w), SBT_EIO));
    cr_assert(strstr(sbt_errmsg(), "closed with what was written whole") != NULL, "%s",
              sbt_errmsg());
    rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
    setrlimit(RLIMIT_FSIZE, &rl);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK), "%s", sbt_errmsg());
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(in->has_footer && in->writer_finished && !in->complete);
    cr_assert(gt(u64, in->n_ops, 0));
    cr_assert(eq(u64, in->n_ops % 100, 0), "whole chunks only: %llu ops",
              (unsigned long long)in->n_ops);
    char why[1024], want[128];
    sbt_reader_incomplete_why(r, why, sizeof why);
    snprintf(want, sizeof want, "holds the ops before op %llu and nothing after",
             (unsigned long long)in->n_ops);
    cr_assert(strstr(why, "the capture layer: writing failed") && strstr(why, "File too large") &&
                  strstr(why, want) && !strstr(why, "did not finish"),
              "%s", why);
    uint32_t nu;
    const struct sbt_unsupported *u = sbt_reader_unsupported(r, &nu);
    cr_assert(eq(u32, nu, 1));
    cr_assert(eq(str, (char *)sbt_reader_string(r, u[0].what), "vkLateCall"));
    sbt_cursor *c;
    const struct sbt_op *op;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &c), SBT_OK));
    for (uint64_t k = 0; k < in->n_ops; k++) {
        cr_assert(eq(int, sbt_cursor_next(c, &op), 1), "%s", sbt_errmsg());
        char name[64];
        snprintf(name, sizeof name, "marker number %llu", (unsigned long long)k);
        cr_assert(eq(str, (char *)sbt_reader_string(r, op->name), name));
    }
    sbt_cursor_close(c);
    cr_assert(eq(int, sbt_reader_validate(r, NULL, NULL), 0));
    sbt_reader_close(r);
}

/* What a killed capture leaves: ops cut into a chunk by sbt_writer_flush are on disk, those
 * after the last flush are not, and the reader says the writer did not finish. */
Test(recovery, unfinished_writer_keeps_what_it_flushed)
{
    const char *path = tpath("flushed.sbt");
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(path, NULL, &w), SBT_OK), "%s", sbt_errmsg());
    struct sbt_device d = {.api = SBT_API_SYNTH};
    struct sbt_stream s = {.kind = SBT_STREAM_HOST_THREAD};
    cr_assert(eq(int, sbt_writer_add_device(w, &d, &s.device), SBT_OK));
    uint32_t stream;
    cr_assert(eq(int, sbt_writer_add_stream(w, &s, &stream), SBT_OK));
    for (uint64_t i = 0; i < 15; i++) {
        if (i == 10)
            cr_assert(eq(int, sbt_writer_flush(w), SBT_OK), "%s", sbt_errmsg());
        struct sbt_op op = {.kind = SBT_OP_MARKER,
                            .stream = stream,
                            .host_begin = 100 * i,
                            .host_end = 100 * i + 50};
        cr_assert(eq(int, sbt_writer_add_op(w, &op, NULL), SBT_OK), "%s", sbt_errmsg());
    }
    sbt_writer_abandon(w); /* the process died: ops 10..14 were only in memory */
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK), "%s", sbt_errmsg());
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(eq(u64, in->n_ops, 10));
    cr_assert(eq(u64, in->lost_bytes, 0));
    cr_assert(0 == (in->has_footer | in->writer_finished | in->complete));
    char why[256];
    sbt_reader_incomplete_why(r, why, sizeof why);
    cr_assert(strstr(why, "the writer did not finish") != NULL, "%s", why);
    sbt_cursor *c;
    const struct sbt_op *op;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &c), SBT_OK));
    for (uint64_t i = 0; i < 10; i++) {
        cr_assert(eq(int, sbt_cursor_next(c, &op), 1), "%s", sbt_errmsg());
        cr_assert(eq(u64, op->host_begin, 100 * i));
    }
    cr_assert(eq(int, sbt_cursor_next(c, &op), 0));
    sbt_cursor_close(c);
    cr_assert(eq(int, sbt_reader_validate(r, NULL, NULL), 0));
    sbt_reader_close(r);
}

Test(recovery, force_scan_equals_footer)
{
    const char *path = tpath("f.sbt");
    write_trace(path, 700, 64, 3, 1);
    sbt_reader *a, *b;
    struct sbt_open_opts o = SBT_OPEN_OPTS(.force_scan = 1);
    cr_assert(eq(int, sbt_reader_open(path, NULL, &a), SBT_OK));
    cr_assert(eq(int, sbt_reader_open(path, &o, &b), SBT_OK));
    const struct sbt_info *ia = sbt_reader_info(a), *ib = sbt_reader_info(b);
    cr_assert(ia->has_footer && !ib->has_footer);
    cr_assert(eq(u64, ia->n_ops, ib->n_ops));
    cr_assert(eq(u64, ia->n_chunks, ib->n_chunks));
    cr_assert(eq(u64, ia->n_blobs, ib->n_blobs));
    cr_assert(eq(u64, ia->t_min, ib->t_min));
    cr_assert(eq(u64, ia->t_max, ib->t_max));
    cr_assert(ib->writer_finished);
    sbt_reader_close(a);
    sbt_reader_close(b);
}

/* ========================================================================================== */
/* Corruption: every single-byte flip is detected, and nothing crashes                        */
/* ========================================================================================== */

TestSuite(corrupt, .init = make_tmp, .fini = rm_tmp);

Test(corrupt, every_byte_flip_is_detected)
{
    const char *path = tpath("c.sbt"), *bad = tpath("bad.sbt");
    write_trace(path, 120, 40, 3, 1);
    size_t len;
    uint8_t *b = slurp(path, &len);
    for (size_t at = 0; at < len; at++) {
        b[at] ^= 0x10;
        spit(bad, b, len);
        b[at] ^= 0x10;
        sbt_reader *r;
        int st = sbt_reader_open(bad, NULL, &r);
        if (st < 0) {
            cr_assert(strlen(sbt_errmsg()) > 10, "flip at %zu: message '%s'", at, sbt_errmsg());
            continue;
        }
        const struct sbt_info *in = sbt_reader_info(r);
        int problems = sbt_reader_validate(r, NULL, NULL);
        /* detected: validate finds a problem, or the footer was rejected (scan fallback) */
        cr_assert(problems > 0 || !in->has_footer, "flip at offset %zu went unnoticed", at);
        sbt_cursor *c;
        const struct sbt_op *op;
        cr_assert(eq(int, sbt_cursor_open(r, NULL, &c), SBT_OK));
        while ((st = sbt_cursor_next(c, &op)) == 1)
            ;
        if (st < 0)
            cr_assert(strstr(sbt_errmsg(), "offset") != NULL, "flip at %zu: '%s'", at,
                      sbt_errmsg());
        sbt_cursor_close(c);
        sbt_reader_close(r);
    }
    free(b);
}

/* ========================================================================================== */
/* Versions and foreign files                                                                 */
/* ========================================================================================== */

TestSuite(version, .init = make_tmp, .fini = rm_tmp);

static void patch_header(uint8_t *b, int at, uint32_t v32, int width)
{
    for (int i = 0; i < width; i++)
        b[at + i] = (uint8_t)(v32 >> (8 * i));
    uint32_t crc = sbt_crc32c(0, b, 28);
    for (int i = 0; i < 4; i++)
        b[28 + i] = (uint8_t)(crc >> (8 * i));
}

Test(version, newer_reader_required)
{
    write_trace(tpath("v.sbt"), 10, 64, 3, 1);
    size_t len;
    uint8_t *b = slurp(tpath("v.sbt"), &len);
    patch_header(b, 10, 3, 2); /* min_reader_version = 3 */
    spit(tpath("v2.sbt"), b, len);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(tpath("v2.sbt"), NULL, &r), SBT_EVERSION));
    cr_assert(r == NULL);
    cr_assert(strstr(sbt_errmsg(), "needs a reader of version 3") != NULL, "%s", sbt_errmsg());
    patch_header(b, 10, 1, 2);
    patch_header(b, 12, 0x20, 4); /* an unknown required feature */
    spit(tpath("v3.sbt"), b, len);
    cr_assert(eq(int, sbt_reader_open(tpath("v3.sbt"), NULL, &r), SBT_EVERSION));
    cr_assert(strstr(sbt_errmsg(), "features 0x20") != NULL, "%s", sbt_errmsg());
    patch_header(b, 12, 0, 4);
    patch_header(b, 16, 0x80, 4); /* an unknown optional feature is ignored */
    spit(tpath("v4.sbt"), b, len);
    cr_assert(eq(int, sbt_reader_open(tpath("v4.sbt"), NULL, &r), SBT_OK), "%s", sbt_errmsg());
    sbt_reader_close(r);
    free(b);
}

/* The two-event TraceSmith file of shared/research/tracesmith.md, byte for byte. */
static const uint8_t ts_file[] = {
    0x53, 0x42, 0x54, 0x00, 0x00, 0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00,
    0x48, 0, 0, 0, 0, 0, 0, 0, 0x7d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x58, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0, 0x00, 0, 0, 0, 0, 0, 0, 0,
    /* 0x48 metadata */
    0x01, 0x03, 'a', 'p', 'p', 0x03, 'r', 'u', 'n', 0xe8, 0x07, 0xa8, 0x46, 0x01, 'h', 0x07,
    /* 0x58 events */
    0x04, 0xc0, 0x84, 0x3d, 0x01, 0x02, 0x00, 0x00, 0x01, 0x05, 0x00, 0x80, 0x01, 0x01, 0x01, 0x80,
    0x02, 0x01, 0x01, 0x00, 0x20, 0x03, 0x05, 0xac, 0x02, 0xd0, 0x0f, 0x00, 0x01, 0x06, 0x01, 0x80,
    0x20, 0x80, 0x40, 0x80, 0x20,
    /* 0x7d strings */
    0x02, 0x02, 0x04, 'g', 'e', 'm', 'm', 0x16, 'c', 'u', 'd', 'a', 'M', 'e', 'm', 'c', 'p', 'y',
    'H', 'o', 's', 't', 'T', 'o', 'D', 'e', 'v', 'i', 'c', 'e', 0xff};

Test(version, tracesmith_recognised_and_imported)
{
    cr_assert(eq(sz, sizeof ts_file, 156));
    spit(tpath("ts.sbt"), ts_file, sizeof ts_file);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(tpath("ts.sbt"), NULL, &r), SBT_EFOREIGN));
    cr_assert(strstr(sbt_errmsg(), "TraceSmith SBT file") != NULL, "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_is_tracesmith(tpath("ts.sbt")), 1));
    uint64_t n;
    cr_assert(eq(int, sbt_import_tracesmith(tpath("ts.sbt"), tpath("out.sbt"), NULL, &n), SBT_OK),
              "%s", sbt_errmsg());
    cr_assert(eq(u64, n, 2));
    cr_assert(eq(int, sbt_reader_open(tpath("out.sbt"), NULL, &r), SBT_OK));
    cr_assert(eq(str, (char *)sbt_reader_meta_get(r, "tracesmith.application"), "app"));
    sbt_cursor *c;
    const struct sbt_op *op;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &c), SBT_OK));
    /* the never-completed launch comes out at the end; the copy first */
    cr_assert(eq(int, sbt_cursor_next(c, &op), 1));
    cr_assert(eq(u32, op->kind, SBT_OP_COPY));
    cr_assert(eq(u32, op->subkind, SBT_COPY_H2D));
    cr_assert(eq(u64, op->bytes, 4096));
    cr_assert(eq(u64, op->host_end - op->host_begin, 2000));
    cr_assert(eq(u64, op->host_begin, 300));
    cr_assert(eq(str, (char *)sbt_reader_string(r, op->name), "cudaMemcpyHostToDevice"));
    cr_assert(eq(int, sbt_cursor_next(c, &op), 1));
    cr_assert(eq(u32, op->kind, SBT_OP_KERNEL));
    cr_assert(eq(u32, op->grid[0], 128));
    cr_assert(eq(u32, op->block[0], 256));
    cr_assert(eq(str, (char *)sbt_reader_string(r, op->name), "gemm"));
    cr_assert(eq(int, sbt_cursor_next(c, &op), 0));
    sbt_cursor_close(c);
    sbt_reader_close(r);
    /* a truncated TraceSmith file is an error naming the offset, not "0 events, OK" */
    spit(tpath("ts-cut.sbt"), ts_file, 100);
    cr_assert(eq(int, sbt_import_tracesmith(tpath("ts-cut.sbt"), tpath("o2.sbt"), NULL, &n),
                 SBT_ECORRUPT));
    cr_assert(strstr(sbt_errmsg(), "TraceSmith") != NULL, "%s", sbt_errmsg());
    cr_assert(access(tpath("o2.sbt"), F_OK) != 0, "no half-written output is left behind");
}

/* ========================================================================================== */
/* States (FORMAT.md 5a) and seq gaps                                                         */
/* ========================================================================================== */

TestSuite(state, .init = make_tmp, .fini = rm_tmp);

/* A trace with ops 0..9, then 100..109 (a gap), and two states whose chunks are blobs: resource
 * 5 (10 bytes in chunks of 4: 3 chunks, all stored) and resource 9 (8 bytes, only chunk 1). */
static void write_states(const char *path, uint32_t features)
{
    sbt_writer *w;
    cr_assert(eq(int,
                 sbt_writer_open(
                     path, &SBT_WRITER_OPTS(.chunk_ops = 4, .required_features = features), &w),
                 SBT_OK),
              "%s", sbt_errmsg());
    uint32_t dev, strm;
    struct sbt_device d = {.api = SBT_API_SYNTH};
    cr_assert(eq(int, sbt_writer_add_device(w, &d, &dev), SBT_OK));
    struct sbt_stream st = {.device = dev, .kind = SBT_STREAM_QUEUE};
    cr_assert(eq(int, sbt_writer_add_stream(w, &st, &strm), SBT_OK));
    static const char a[10] = "0123456789", b[8] = "abcdefgh";
    sbt_hash h[4];
    cr_assert(eq(int, sbt_writer_blob(w, a, 4, &h[0]), SBT_OK));
    cr_assert(eq(int, sbt_writer_blob(w, a + 4, 4, &h[1]), SBT_OK));
    cr_assert(eq(int, sbt_writer_blob(w, a + 8, 2, &h[2]), SBT_OK));
    cr_assert(eq(int, sbt_writer_blob(w, b + 4, 4, &h[3]), SBT_OK));
    cr_assert(sbt_writer_has_blob(w, &h[3]));
    for (uint64_t i = 0; i < 20; i++) {
        if (i == 10) { /* the second half keeps the numbers of a longer source */
            cr_assert(eq(int, sbt_writer_set_next_seq(w, 100), SBT_OK));
            cr_assert(eq(int, sbt_writer_set_next_seq(w, 99), SBT_EINVAL), "seqs only increase");
            uint64_t idx5[3] = {0, 1, 2}, idx9[1] = {1};
            struct sbt_state_alloc al[2] = {{5, 10, 4, 3, idx5, h}, {9, 8, 4, 1, idx9, &h[3]}};
            struct sbt_state s = {.seq = 100, .time = 5000, .n_alloc = 2, .alloc = al};
            cr_assert(eq(int, sbt_writer_add_state(w, &s), SBT_OK), "%s", sbt_errmsg());
            struct sbt_state early = {.seq = 50, .time = 1};
            cr_assert(eq(int, sbt_writer_add_state(w, &early), SBT_EINVAL), "states increase");
        }
        struct sbt_op op = {.kind = SBT_OP_MARKER,
                            .stream = strm,
                            .host_begin = 1000 * i,
                            .host_end = 1000 * i + 10};
        uint64_t seq;
        cr_assert(eq(int, sbt_writer_add_op(w, &op, &seq), SBT_OK));
        cr_assert(eq(u64, seq, i < 10 ? i : 90 + i));
    }
    uint64_t idx0[1] = {0};
    struct sbt_state_alloc al = {5, 10, 4, 1, idx0, h};
    struct sbt_state s2 = {.seq = 105, .time = 6000, .n_alloc = 1, .alloc = &al};
    cr_assert(eq(int, sbt_writer_add_state(w, &s2), SBT_OK), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_writer_close(w), SBT_OK), "%s", sbt_errmsg());
}

Test(state, round_trip_with_seq_gaps)
{
    write_states(tpath("s.sbt"), SBT_FEATURE_INITIAL_STATE);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(tpath("s.sbt"), NULL, &r), SBT_OK), "%s", sbt_errmsg());
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(eq(u64, in->n_ops, 20));
    cr_assert(eq(u64, in->seq_first, 0));
    cr_assert(eq(u64, in->seq_end, 110));
    cr_assert(eq(u32, in->required_features, SBT_FEATURE_INITIAL_STATE));
    cr_assert(eq(u64, in->n_states, 2));
    /* ops keep their numbers; a seek into the gap lands on the op after it */
    sbt_cursor *c;
    const struct sbt_op *op;
    uint64_t n = 0;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &c), SBT_OK));
    while (sbt_cursor_next(c, &op) == 1) {
        cr_assert(eq(u64, op->seq, n < 10 ? n : 90 + n));
        n++;
    }
    sbt_cursor_close(c);
    cr_assert(eq(u64, n, 20));
    struct sbt_range rg = {.has_seq = 1, .seq_begin = 50, .seq_end = 102};
    cr_assert(eq(int, sbt_cursor_open(r, &rg, &c), SBT_OK));
    cr_assert(eq(int, sbt_cursor_next(c, &op), 1));
    cr_assert(eq(u64, op->seq, 100));
    sbt_cursor_close(c);
    /* states: found by seq, decoded whole */
    uint64_t seq, t;
    cr_assert(eq(int, sbt_reader_state_at(r, 1, &seq, &t), SBT_OK));
    cr_assert(eq(u64, seq, 105));
    cr_assert(eq(u64, t, 6000));
    cr_assert(eq(i64, sbt_reader_state_find(r, 99), -1));
    cr_assert(eq(i64, sbt_reader_state_find(r, 104), 0));
    cr_assert(eq(i64, sbt_reader_state_find(r, 1000), 1));
    struct sbt_state *s;
    cr_assert(eq(int, sbt_reader_state(r, 0, &s), SBT_OK), "%s", sbt_errmsg());
    cr_assert(eq(u64, s->seq, 100));
    cr_assert(eq(u64, s->time, 5000));
    cr_assert(eq(u32, s->n_alloc, 2));
    cr_assert(eq(u64, s->alloc[0].resource, 5));
    cr_assert(eq(u64, s->alloc[0].n_present, 3));
    cr_assert(eq(u64, s->alloc[1].resource, 9));
    cr_assert(eq(u64, s->alloc[1].n_present, 1));
    cr_assert(eq(u64, s->alloc[1].index[0], 1));
    void *data;
    size_t len;
    cr_assert(eq(int, sbt_reader_blob(r, &s->alloc[0].hash[2], &data, &len), SBT_OK));
    cr_assert(len == 2 && !memcmp(data, "89", 2));
    free(data);
    cr_assert(eq(int, sbt_reader_blob(r, &s->alloc[1].hash[0], &data, &len), SBT_OK));
    cr_assert(len == 4 && !memcmp(data, "efgh", 4));
    free(data);
    sbt_state_free(s);
    cr_assert(eq(int, sbt_reader_state(r, 2, &s), SBT_EINVAL));
    cr_assert(eq(int, sbt_reader_validate(r, NULL, NULL), 0), "gaps and states are valid");
    sbt_reader_close(r);
}

Test(state, writer_checks_what_a_state_names)
{
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(tpath("w.sbt"), NULL, &w), SBT_OK));
    sbt_hash h, other = {1, 2};
    cr_assert(eq(int, sbt_writer_blob(w, "abcd", 4, &h), SBT_OK));
    uint64_t idx[2] = {0, 1};
    sbt_hash hh[2] = {h, h};
    struct sbt_state_alloc al[2] = {{7, 8, 4, 2, idx, hh}, {3, 4, 4, 1, idx, hh}};
    struct sbt_state s = {.seq = 1, .n_alloc = 2, .alloc = al};
    cr_assert(eq(int, sbt_writer_add_state(w, &s), SBT_EINVAL), "resources must increase");
    cr_assert(strstr(sbt_errmsg(), "must increase") != NULL, "%s", sbt_errmsg());
    al[1].resource = 9;
    al[1].hash = &other;
    cr_assert(eq(int, sbt_writer_add_state(w, &s), SBT_EINVAL), "a blob that was not written");
    cr_assert(strstr(sbt_errmsg(), "was not written") != NULL, "%s", sbt_errmsg());
    al[1].hash = hh;
    idx[1] = 5;
    cr_assert(eq(int, sbt_writer_add_state(w, &s), SBT_EINVAL), "chunk past the allocation");
    cr_assert(strstr(sbt_errmsg(), "past its 2 chunks") != NULL, "%s", sbt_errmsg());
    sbt_writer_abandon(w);
    cr_assert(eq(int,
                 sbt_writer_open(tpath("w.sbt"), &SBT_WRITER_OPTS(.required_features = 0x80), &w),
                 SBT_EINVAL),
              "unknown feature");
}

Test(state, corrupt_state_record_names_chunk_and_resource)
{
    write_states(tpath("s.sbt"), 0);
    /* rewrite with stored (uncompressed) chunks so the record's bytes can be found */
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(tpath("s.sbt"), NULL, &r), SBT_OK));
    uint64_t nc;
    const struct sbt_chunk_info *ci = sbt_reader_chunks(r, &nc);
    uint64_t off = 0;
    for (uint64_t i = 0; i < nc && !off; i++)
        if (ci[i].content & SBT_CHUNK_STATE)
            off = ci[i].offset;
    cr_assert(off != 0, "no state chunk among %llu", (unsigned long long)nc);
    sbt_reader_close(r);
    size_t len;
    uint8_t *b = slurp(tpath("s.sbt"), &len);
    /* the STATE chunk payload: type 12, length, seq 100 (0x64), time 5000 (0x88 0x27), flags 0,
     * n_alloc 2, resource 5, size 10, chunk 4, 3 present... make resource 9 come before 5 */
    uint8_t *p = b + off + 56;
    cr_assert(eq(u8, p[0], 12), "a STATE record");
    cr_assert(eq(u8, p[2], 100));
    cr_assert(eq(u8, p[7], 5), "resource 5 is first");
    p[7] = 11; /* now 11 comes before 9: unsorted */
    uint32_t pc = sbt_crc32c(0, b + off + 56, (size_t)(b[off + 8] | b[off + 9] << 8));
    for (int i = 0; i < 4; i++)
        b[off + 28 + i] = (uint8_t)(pc >> (8 * i));
    uint32_t hc = sbt_crc32c(0, b + off, 52);
    for (int i = 0; i < 4; i++)
        b[off + 52 + i] = (uint8_t)(hc >> (8 * i));
    spit(tpath("bad.sbt"), b, len);
    free(b);
    cr_assert(eq(int, sbt_reader_open(tpath("bad.sbt"), NULL, &r), SBT_OK), "%s", sbt_errmsg());
    struct sbt_state *s;
    cr_assert(eq(int, sbt_reader_state(r, 0, &s), SBT_ECORRUPT));
    char want[128];
    snprintf(want, sizeof want,
             "chunk at offset %llu: state at op 100: resource 9 after resource 11",
             (unsigned long long)off);
    cr_assert(strstr(sbt_errmsg(), want) != NULL, "%s", sbt_errmsg());
    cr_assert(gt(int, sbt_reader_validate(r, NULL, NULL), 0));
    sbt_reader_close(r);
}

Test(state, fingerprint_tells_files_apart)
{
    write_trace(tpath("a.sbt"), 500, 64, 1, 1);
    write_trace(tpath("b.sbt"), 501, 64, 1, 1);
    sbt_reader *a, *a2, *b;
    cr_assert(eq(int, sbt_reader_open(tpath("a.sbt"), NULL, &a), SBT_OK));
    cr_assert(
        eq(int, sbt_reader_open(tpath("a.sbt"), &SBT_OPEN_OPTS(.force_scan = 1), &a2), SBT_OK));
    cr_assert(eq(int, sbt_reader_open(tpath("b.sbt"), NULL, &b), SBT_OK));
    cr_assert(sbt_hash_eq(sbt_reader_fingerprint(a), sbt_reader_fingerprint(a2)),
              "footer or scan: the same file");
    cr_assert(sbt_hash_eq(sbt_reader_fingerprint(a), sbt_reader_fingerprint(b)) == 0,
              "another file");
    cr_assert(eq(str, (char *)sbt_reader_path(a), tpath("a.sbt")));
    sbt_reader_close(a);
    sbt_reader_close(a2);
    sbt_reader_close(b);
}

/* ========================================================================================== */
/* Golden files: good/ must read, bad/ must fail with the message in NAME.expect             */
/* ========================================================================================== */

static void for_each_file(const char *dir, void (*fn)(const char *path, const char *name))
{
    DIR *d = opendir(dir);
    cr_assert(d != NULL, "tests run from the repository root; %s is missing", dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".sbt"))
            continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        fn(p, e->d_name);
        n++;
    }
    closedir(d);
    cr_assert(n > 0, "no golden files in %s", dir);
}

static void good_one(const char *path, const char *name)
{
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK), "%s: %s", name, sbt_errmsg());
    cr_assert(sbt_reader_info(r)->n_ops > 0, "%s", name);
    for (uint64_t i = 0; i < sbt_reader_info(r)->n_states; i++) {
        struct sbt_state *s;
        cr_assert(eq(int, sbt_reader_state(r, i, &s), SBT_OK), "%s: %s", name, sbt_errmsg());
        sbt_state_free(s);
    }
    int problems = sbt_reader_validate(r, NULL, NULL);
    cr_assert(problems >= 0);
    /* no-footer goldens are recovered traces: their only problem is the torn tail */
    if (sbt_reader_info(r)->has_footer)
        cr_assert(eq(int, problems, 0), "%s", name);
    sbt_reader_close(r);
}

static void bad_one(const char *path, const char *name)
{
    char exp_path[600], expect[300] = {0};
    snprintf(exp_path, sizeof exp_path, "%s.expect", path);
    FILE *f = fopen(exp_path, "r");
    cr_assert(f != NULL, "%s has no .expect file", name);
    cr_assert(fgets(expect, sizeof expect, f) != NULL);
    fclose(f);
    expect[strcspn(expect, "\n")] = 0;
    sbt_reader *r;
    int st = sbt_reader_open(path, NULL, &r);
    if (st == SBT_OK) { /* some damage only shows when the ops are read */
        st = sbt_reader_validate(r, NULL, NULL) > 0 ? SBT_ECORRUPT : SBT_OK;
        sbt_cursor *c;
        const struct sbt_op *op;
        cr_assert(eq(int, sbt_cursor_open(r, NULL, &c), SBT_OK));
        int s2;
        while ((s2 = sbt_cursor_next(c, &op)) == 1)
            ;
        sbt_cursor_close(c);
        for (uint64_t i = 0; s2 == 0 && i < sbt_reader_info(r)->n_states; i++) {
            struct sbt_state *s; /* ... or when the states are decoded */
            s2 = sbt_reader_state(r, i, &s);
            sbt_state_free(s);
        }
        sbt_reader_close(r);
        cr_assert(s2 < 0, "%s: reading every op and state should fail", name);
        st = s2;
    }
    cr_assert(st < 0, "%s must not read", name);
    cr_assert(strstr(sbt_errmsg(), expect) != NULL, "%s: message '%s' lacks '%s'", name,
              sbt_errmsg(), expect);
}

Test(golden, good_files_read)
{
    for_each_file("tests/data/format/good", good_one);
}

Test(golden, bad_files_fail_with_their_message)
{
    for_each_file("tests/data/format/bad", bad_one);
}

/* ========================================================================================== */
/* Bulk reads: sbt_cursor_read gives what sbt_cursor_next gives                               */
/* ========================================================================================== */

TestSuite(bulk, .init = make_tmp, .fini = rm_tmp);

/* Arrays for every column (or the ones set in mask: bit i = i-th field after sz). */
struct colbuf {
    struct sbt_columns c;
    uint64_t cap;
};
#define N_COLFIELDS 23
static void colbuf_init(struct colbuf *b, uint64_t cap, uint32_t mask)
{
    b->cap = cap;
    b->c = SBT_COLUMNS();
    void **f = (void **)&b->c.seq; /* the fields are pointers, in declaration order */
    static const size_t width[N_COLFIELDS] = {8,  1,  1, 4, 4, 4, 4, 8,  8,  8, 8, 4,
                                              12, 12, 4, 8, 8, 8, 8, 16, 16, 4, 4};
    cr_assert(eq(sz, sizeof(struct sbt_columns), sizeof(size_t) + N_COLFIELDS * sizeof(void *)));
    for (int i = 0; i < N_COLFIELDS; i++)
        if (mask >> i & 1) {
            f[i] = malloc(cap * width[i] + 1);
            memset(f[i], 0xa5, cap * width[i]); /* not zero: a row left unwritten shows */
        }
}
static void colbuf_free(struct colbuf *b)
{
    void **f = (void **)&b->c.seq;
    for (int i = 0; i < N_COLFIELDS; i++)
        free(f[i]);
}

/* Row i of the arrays against the op (the fields the arrays hold). */
static void row_equals(const struct sbt_columns *o, uint64_t i, const struct sbt_op *op,
                       const char *what)
{
    unsigned long long s = (unsigned long long)op->seq;
    if (o->seq)
        cr_assert(eq(u64, o->seq[i], op->seq), "%s: row %llu", what, (unsigned long long)i);
    if (o->kind)
        cr_assert(eq(u32, o->kind[i], op->kind), "%s: op %llu", what, s);
    if (o->subkind)
        cr_assert(eq(u32, o->subkind[i], op->subkind), "%s: op %llu", what, s);
    if (o->flags)
        cr_assert(eq(u32, o->flags[i], op->flags), "%s: op %llu", what, s);
    if (o->stream)
        cr_assert(eq(u32, o->stream[i], op->stream), "%s: op %llu", what, s);
    if (o->thread)
        cr_assert(eq(u32, o->thread[i], op->thread), "%s: op %llu", what, s);
    if (o->name)
        cr_assert(eq(u32, o->name[i], op->name), "%s: op %llu", what, s);
    if (o->host_begin)
        cr_assert(eq(u64, o->host_begin[i], op->host_begin), "%s: op %llu", what, s);
    if (o->host_end)
        cr_assert(eq(u64, o->host_end[i], op->host_end), "%s: op %llu", what, s);
    if (o->dev_begin)
        cr_assert(eq(u64, o->dev_begin[i], op->dev_begin), "%s: op %llu", what, s);
    if (o->dev_end)
        cr_assert(eq(u64, o->dev_end[i], op->dev_end), "%s: op %llu", what, s);
    if (o->kernel)
        cr_assert(eq(u32, o->kernel[i], op->kernel), "%s: op %llu", what, s);
    if (o->grid)
        cr_assert(0 == memcmp(o->grid + 3 * i, op->grid, 12), "%s: op %llu grid", what, s);
    if (o->block)
        cr_assert(0 == memcmp(o->block + 3 * i, op->block, 12), "%s: op %llu block", what, s);
    if (o->shmem)
        cr_assert(eq(u32, o->shmem[i], op->shmem), "%s: op %llu", what, s);
    if (o->bytes)
        cr_assert(eq(u64, o->bytes[i], op->bytes), "%s: op %llu", what, s);
    if (o->resource)
        cr_assert(eq(u64, o->resource[i], op->resource), "%s: op %llu", what, s);
    if (o->obj)
        cr_assert(eq(u64, o->obj[i], op->obj), "%s: op %llu", what, s);
    if (o->value)
        cr_assert(eq(u64, o->value[i], op->value), "%s: op %llu", what, s);
    if (o->blob)
        cr_assert(o->blob[2 * i] == op->blob.lo && o->blob[2 * i + 1] == op->blob.hi,
                  "%s: op %llu blob", what, s);
    if (o->digest)
        cr_assert(o->digest[2 * i] == op->digest.lo && o->digest[2 * i + 1] == op->digest.hi,
                  "%s: op %llu digest", what, s);
    if (o->error)
        cr_assert(eq(u32, o->error[i], op->error), "%s: op %llu", what, s);
    if (o->n_access)
        cr_assert(eq(u32, o->n_access[i], op->n_access), "%s: op %llu", what, s);
}

/* Reads rg both ways, cap rows per sbt_cursor_read, after `first` ops taken with
 * sbt_cursor_next; every row must equal the cursor's op. Returns the ops read. */
static uint64_t bulk_vs_cursor(sbt_reader *r, const struct sbt_range *rg, uint64_t cap,
                               uint32_t mask, uint64_t first, const char *what)
{
    sbt_cursor *a, *b;
    const struct sbt_op *op;
    cr_assert(eq(int, sbt_cursor_open(r, rg, &a), SBT_OK));
    cr_assert(eq(int, sbt_cursor_open(r, rg, &b), SBT_OK));
    uint64_t bound = sbt_cursor_bound(b), total = 0;
    struct colbuf cb;
    colbuf_init(&cb, cap, mask);
    int st;
    for (uint64_t k = 0; k < first; k++) {
        int s1 = sbt_cursor_next(a, &op);
        const struct sbt_op *op2;
        cr_assert(eq(int, sbt_cursor_next(b, &op2), s1));
        if (s1 == 0)
            break;
        total++;
    }
    for (;;) {
        uint64_t n;
        cr_assert(eq(int, sbt_cursor_read(b, &cb.c, cap, &n), SBT_OK), "%s: %s", what,
                  sbt_errmsg());
        cr_assert(n <= cap);
        if (n == 0)
            break;
        for (uint64_t i = 0; i < n; i++) {
            cr_assert(eq(int, sbt_cursor_next(a, &op), 1), "%s: bulk read more than the cursor",
                      what);
            row_equals(&cb.c, i, op, what);
        }
        total += n;
    }
    cr_assert(eq(int, (st = sbt_cursor_next(a, &op)), 0), "%s: bulk read stopped early at %llu",
              what, (unsigned long long)total);
    cr_assert(total <= bound, "%s: bound %llu < %llu ops", what, (unsigned long long)bound,
              (unsigned long long)total);
    if (!rg || (!rg->has_time && !rg->stream))
        cr_assert(eq(u64, bound, total), "%s: the bound of a seq range is exact", what);
    colbuf_free(&cb);
    sbt_cursor_close(a);
    sbt_cursor_close(b);
    return total;
}

Test(bulk, every_field_every_range_and_cap)
{
    const char *path = tpath("b.sbt");
    write_trace(path, 3000, 50, 1, 1);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK));
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(eq(u64, bulk_vs_cursor(r, NULL, 3000, ~0u, 0, "all"), 3000));
    cr_assert(eq(u64, bulk_vs_cursor(r, NULL, 1, ~0u, 0, "cap 1"), 3000));
    cr_assert(eq(u64, bulk_vs_cursor(r, NULL, 77, ~0u, 5, "cap 77 after 5"), 3000));
    cr_assert(eq(u64, bulk_vs_cursor(r, NULL, 5000, ~0u, 120, "after 120"), 3000));
    uint64_t x = 777;
    for (int trial = 0; trial < 60; trial++) {
        struct sbt_range rg = {0};
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if (trial % 3 != 1) {
            rg.has_seq = 1;
            rg.seq_begin = (x >> 33) % 3100;
            rg.seq_end = rg.seq_begin + (x >> 17) % 900;
        }
        if (trial % 3 != 0) {
            rg.has_time = 1;
            rg.t_begin = in->t_min + (x >> 20) % (in->t_max - in->t_min + 1000);
            rg.t_end = rg.t_begin + (x >> 40) % 600000;
        }
        if (trial % 5 == 0)
            rg.stream = fx.stream2;
        char what[64];
        snprintf(what, sizeof what, "trial %d", trial);
        uint64_t cap = trial % 2 ? 4000 : 1 + (x >> 50) % 200;
        /* half the stream ranges without the stream column: the read keeps it aside */
        bulk_vs_cursor(r, &rg, cap, trial % 10 == 0 ? ~(1u << 4) : ~0u, trial % 4 == 3 ? 3 : 0,
                       what);
    }
    sbt_reader_close(r);
}

Test(bulk, some_columns_decode_what_they_depend_on)
{
    /* one field at a time, and pairs whose decoding depends on columns not asked for
     * (device times on stream and host times, geometry on the kernel) */
    const char *path = tpath("b.sbt");
    write_trace(path, 2000, 64, 1, 1);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK));
    for (int i = 0; i < N_COLFIELDS; i++) {
        char what[32];
        snprintf(what, sizeof what, "field %d only", i);
        cr_assert(eq(u64, bulk_vs_cursor(r, NULL, 2000, 1u << i, 0, what), 2000));
    }
    cr_assert(eq(u64, bulk_vs_cursor(r, NULL, 2000, 0, 0, "no field"), 2000));
    sbt_reader_close(r);
    struct sbt_gen_opts g = SBT_GEN_OPTS(.n_ops = 30000, .seed = 4, .digests = 1);
    struct sbt_writer_opts wo = SBT_WRITER_OPTS(.chunk_ops = 1000);
    cr_assert(eq(int, sbt_gen_write(path, &g, &wo, NULL), SBT_OK), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK));
    cr_assert(eq(u64, bulk_vs_cursor(r, NULL, 30000, ~0u, 0, "gen"), 30000));
    /* seq, kind, stream, kernel, host and device times (the DataFrame of the Python API) */
    uint32_t df = 1u << 0 | 1u << 1 | 1u << 4 | 1u << 7 | 1u << 8 | 1u << 9 | 1u << 10 | 1u << 11;
    cr_assert(eq(u64, bulk_vs_cursor(r, NULL, 30000, df, 0, "gen frame"), 30000));
    for (int i = 0; i < N_COLFIELDS; i++) { /* many kernels, streams, geometries */
        char what[32];
        snprintf(what, sizeof what, "gen field %d only", i);
        cr_assert(eq(u64, bulk_vs_cursor(r, NULL, 30000, 1u << i, 0, what), 30000));
    }
    sbt_reader_close(r);
}

static void bulk_golden(const char *path, const char *name)
{
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK), "%s: %s", name, sbt_errmsg());
    uint64_t n = sbt_reader_info(r)->n_ops;
    cr_assert(eq(u64, bulk_vs_cursor(r, NULL, n + 1, ~0u, 0, name), n));
    sbt_reader_close(r);
}

Test(bulk, golden_files)
{
    for_each_file("tests/data/format/good", bulk_golden);
}

/* Damage an OPS chunk's bytes with its CRCs fixed, so the decoders see it. Whatever the bulk
 * read of every field says must agree with the cursor: the same ops where the cursor reads
 * them all; where the cursor fails, a bulk failure naming the chunk offset, or success only
 * when the damage is in the payload column (which a bulk read skips). */
Test(bulk, damaged_columns_agree_with_the_cursor)
{
    const char *path = tpath("c.sbt"), *bad = tpath("bad.sbt");
    write_trace(path, 120, 40, -1, 1);
    size_t len;
    uint8_t *b = slurp(path, &len);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), SBT_OK));
    uint64_t nck;
    const struct sbt_chunk_info *ck = sbt_reader_chunks(r, &nck);
    struct sbt_chunk_info chunks[64];
    uint64_t nops = 0;
    for (uint64_t k = 0; k < nck; k++)
        if (ck[k].content & SBT_CHUNK_OPS)
            chunks[nops++] = ck[k];
    sbt_reader_close(r);
    cr_assert(nops >= 3);
    int failed = 0, flips = 0;
    for (uint64_t k = 0; k < nops; k++) {
        uint64_t off = chunks[k].offset, body = off + 56;
        for (uint64_t at = body; at < body + chunks[k].stored_len; at++) {
            for (int bit = (int)(at % 3); bit < 8; bit += 8) {
                uint8_t save = b[at], hdr[56];
                b[at] ^= (uint8_t)(1u << bit);
                memcpy(hdr, b + off, 56);
                uint32_t crc = sbt_crc32c(0, b + body, chunks[k].stored_len);
                for (int i = 0; i < 4; i++)
                    b[off + 28 + i] = (uint8_t)(crc >> (8 * i));
                crc = sbt_crc32c(0, b + off, 52);
                for (int i = 0; i < 4; i++)
                    b[off + 52 + i] = (uint8_t)(crc >> (8 * i));
                spit(bad, b, len);
                b[at] = save;
                memcpy(b + off, hdr, 56);
                flips++;
                if (sbt_reader_open(bad, NULL, &r) < 0)
                    continue;
                sbt_cursor *a;
                const struct sbt_op *op;
                int sa;
                cr_assert(eq(int, sbt_cursor_open(r, NULL, &a), SBT_OK));
                while ((sa = sbt_cursor_next(a, &op)) == 1)
                    ;
                char amsg[400];
                snprintf(amsg, sizeof amsg, "%s", sbt_errmsg());
                sbt_cursor_close(a);
                if (sa == 0) {
                    bulk_vs_cursor(r, NULL, 1000, ~0u, 0, "flip");
                } else {
                    struct colbuf cb;
                    colbuf_init(&cb, 1000, ~0u);
                    cr_assert(eq(int, sbt_cursor_open(r, NULL, &a), SBT_OK));
                    uint64_t n;
                    int sb;
                    while ((sb = sbt_cursor_read(a, &cb.c, 1000, &n)) == 0 && n)
                        ;
                    if (sb < 0) {
                        failed++;
                        cr_assert(strstr(sbt_errmsg(), "offset") != NULL, "flip at %llu: '%s'",
                                  (unsigned long long)at, sbt_errmsg());
                        cr_assert(eq(int, sbt_cursor_read(a, &cb.c, 1000, &n), sb),
                                  "an error sticks");
                    } else { /* the one column a bulk read never decodes */
                        cr_assert(strstr(amsg, "payload column") != NULL,
                                  "flip at %llu: bulk read fine, the cursor failed: %s",
                                  (unsigned long long)at, amsg);
                    }
                    sbt_cursor_close(a);
                    colbuf_free(&cb);
                }
                sbt_reader_close(r);
            }
        }
    }
    cr_assert(failed > 30, "only %d of %d flips reached a bulk decoder error", failed, flips);
    free(b);
}

/* ========================================================================================== */
/* Synthetic traces                                                                           */
/* ========================================================================================== */

TestSuite(gen, .init = make_tmp, .fini = rm_tmp);

Test(gen, deterministic_and_consistent)
{
    struct sbt_gen_opts o = SBT_GEN_OPTS(.n_ops = 20000, .seed = 9, .digests = 1);
    cr_assert(eq(int, sbt_gen_write(tpath("g1.sbt"), &o, NULL, NULL), SBT_OK), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_gen_write(tpath("g2.sbt"), &o, NULL, NULL), SBT_OK));
    size_t l1, l2;
    uint8_t *a = slurp(tpath("g1.sbt"), &l1), *b = slurp(tpath("g2.sbt"), &l2);
    cr_assert(eq(sz, l1, l2));
    cr_assert(0 == memcmp(a, b, l1), "same seed, same bytes");
    free(a);
    free(b);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(tpath("g1.sbt"), NULL, &r), SBT_OK));
    cr_assert(eq(u64, sbt_reader_info(r)->n_ops, 20000));
    cr_assert(eq(int, sbt_reader_validate(r, NULL, NULL), 0), "%s", sbt_errmsg());
    struct sbt_stats *s;
    cr_assert(eq(int, sbt_stats_compute(r, NULL, &s), SBT_OK));
    /* the mix has every kind it promises */
    uint32_t kinds[] = {SBT_OP_KERNEL,     SBT_OP_COPY,        SBT_OP_FILL,
                        SBT_OP_ALLOC,      SBT_OP_FREE,        SBT_OP_EVENT_RECORD,
                        SBT_OP_EVENT_WAIT, SBT_OP_STREAM_SYNC, SBT_OP_DEVICE_SYNC,
                        SBT_OP_MARKER};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        cr_assert(s->by_kind[kinds[i]] > 0, "no %s ops", sbt_op_kind_name(kinds[i]));
    cr_assert(s->copy_bytes[SBT_COPY_H2D] && s->copy_bytes[SBT_COPY_D2H] &&
              s->copy_bytes[SBT_COPY_D2D]);
    cr_assert(s->n_kernels > 5);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->n_kernels; i++) {
        cr_assert(s->kernels[i].min_ns <= s->kernels[i].max_ns);
        cr_assert(i == 0 || s->kernels[i - 1].total_ns >= s->kernels[i].total_ns);
        sum += s->kernels[i].count;
    }
    cr_assert(eq(u64, sum, s->by_kind[SBT_OP_KERNEL]));
    sbt_stats_free(s);
    /* device time on a stream never goes backwards; every wait has its record before it */
    sbt_cursor *c;
    const struct sbt_op *op;
    uint64_t last_end[64] = {0};
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &c), SBT_OK));
    while (sbt_cursor_next(c, &op) == 1) {
        if (!(op->flags & SBT_OPF_DEV_TIME))
            continue;
        cr_assert(op->stream < 64);
        cr_assert(op->dev_begin >= last_end[op->stream], "op %llu overlaps its stream",
                  (unsigned long long)op->seq);
        cr_assert(op->dev_begin >= op->host_begin, "op %llu runs before its launch",
                  (unsigned long long)op->seq);
        last_end[op->stream] = op->dev_end;
    }
    sbt_cursor_close(c);
    sbt_reader_close(r);
}

/* ========================================================================================== */
/* Allocation failures: every malloc of a round trip may fail, with a status, never a crash   */
/* ========================================================================================== */

static int fail_at, n_alloc;
static void *failing_malloc(size_t n)
{
    return ++n_alloc == fail_at ? NULL : malloc(n);
}
static void *failing_realloc(void *p, size_t n)
{
    return ++n_alloc == fail_at ? NULL : realloc(p, n);
}

TestSuite(oom, .init = make_tmp, .fini = rm_tmp);

Test(oom, every_allocation_may_fail)
{
    write_trace(tpath("o.sbt"), 300, 50, 3, 1);
    struct sbt_alloc_hooks h = {failing_malloc, failing_realloc, free};
    for (fail_at = 1; fail_at < 400; fail_at++) {
        n_alloc = 0;
        sbt_set_alloc_hooks(&h);
        sbt_reader *r = NULL;
        int st = sbt_reader_open(tpath("o.sbt"), NULL, &r);
        if (st == SBT_OK) {
            sbt_cursor *c = NULL;
            const struct sbt_op *op;
            if (sbt_cursor_open(r, NULL, &c) == SBT_OK) {
                while ((st = sbt_cursor_next(c, &op)) == 1)
                    ;
                sbt_cursor_close(c);
            }
            sbt_reader_close(r);
        } else {
            cr_assert(r == NULL);
            cr_assert(eq(int, st, SBT_ENOMEM), "fail_at %d: status %d %s", fail_at, st,
                      sbt_errmsg());
        }
        sbt_set_alloc_hooks(NULL);
    }
}

/* ========================================================================================== */
/* Vulkan images: the packed layout (format/sbt_vk.h)                                         */
/* ========================================================================================== */

/* The features SPIR-V capabilities need, generated from vk.xml's <spirvcapabilities> and the
 * SPIR-V grammar (format/gen_vk_features.py): replay leaves off only a feature no shader needs,
 * so the table must name the right capability numbers (the grammar's, not made up) and leave
 * out features no capability needs. */
Test(vk_features, spirv_capabilities_need_their_features)
{
    if (!sbt_vk_spirv_grammar[0])
        cr_skip_test("built without a SPIR-V grammar (scripts/vulkan-headers.sh fetches one)");
    const struct sbt_vk_feature_caps *c = sbt_vk_feature_caps_of("shaderInt8");
    cr_assert(c && !c->unknown && c->n == 1 && c->caps[0] == 39, "Int8 is capability 39");
    c = sbt_vk_feature_caps_of("shaderStorageImageReadWithoutFormat");
    cr_assert(c && c->n == 1 && c->caps[0] == 55, "StorageImageReadWithoutFormat is 55");
    c = sbt_vk_feature_caps_of("shaderStorageBufferArrayNonUniformIndexing");
    cr_assert(c && c->n == 1 && c->caps[0] == 5308, "StorageBufferArrayNonUniformIndexing");
    cr_expect_null(sbt_vk_feature_caps_of("robustBufferAccess"), "no capability needs it");
    cr_expect_null(sbt_vk_feature_caps_of("timelineSemaphore"));
    for (uint32_t i = 1; i < sbt_vk_n_feature_caps; i++)
        cr_assert_lt(strcmp(sbt_vk_feature_caps[i - 1].feature, sbt_vk_feature_caps[i].feature), 0,
                     "sorted by name, for the lookup");
}

Test(vk_image, formats_from_the_registry)
{
    const struct sbt_vk_format *f = sbt_vk_format(37); /* VK_FORMAT_R8G8B8A8_UNORM */
    cr_assert(f && !strcmp(f->name, "R8G8B8A8_UNORM") && f->block_bytes == 4);
    f = sbt_vk_format(131); /* BC1_RGB_UNORM_BLOCK */
    cr_assert(f && f->block[0] == 4 && f->block[1] == 4 && f->block_bytes == 8);
    f = sbt_vk_format(129); /* D24_UNORM_S8_UINT: 4-byte depth, 1-byte stencil in copies */
    cr_assert(f && f->depth_bytes == 4 && f->stencil_bytes == 1);
    cr_assert(eq(u32, sbt_vk_format_aspects(129), 0x6));
    cr_assert(eq(u32, sbt_vk_format_aspects(1000156003), 0x30)); /* 2-plane 420: planes 0, 1 */
    cr_assert(eq(u32, sbt_vk_format_aspects(37), 0x1));
    cr_assert_null(sbt_vk_format(0));
    cr_assert(eq(u32, sbt_vk_format_aspects(12345), 0));
    for (uint32_t i = 1; i < sbt_vk_n_formats; i++)
        cr_assert_lt(sbt_vk_formats[i - 1].format, sbt_vk_formats[i].format, "table sorted");
}

struct img_case { /* no pointers: Criterion copies parameters into another process */
    struct sbt_vk_image im;
    int status;
    uint64_t size;
    char msg[16];
};

ParameterizedTestParameters(vk_image, check)
{
    static struct img_case c[] = {
        {{37, 1, {64, 48, 1}, 3, 2}, 0, 32256, ""},                 // RGBA8 2D array, 3 levels
        {{131, 1, {30, 30, 1}, 2, 1}, 0, 640, ""},                  // BC1: 8x8 + 4x4 blocks of 8
        {{37, 2, {8, 8, 8}, 2, 1}, 0, 2304, ""},                    // 3D: 2048 + 4x4x4x4
        {{129, 1, {4, 4, 1}, 1, 1}, 0, 80, ""},                     // D24S8: depth 4, stencil 1
        {{1000156003, 1, {8, 4, 1}, 1, 1}, 0, 48, ""},              // 2-plane 420: 32 + 4x2x2
        {{37, 0, {17, 1, 1}, 5, 3}, 0, 384, ""},                    // 1D array: (17+8+4+2+1)*4*3
        {{12345, 1, {4, 4, 1}, 1, 1}, SBT_ECORRUPT, 0, "registry"}, // unknown format
        {{37, 0, {4, 2, 1}, 1, 1}, SBT_ECORRUPT, 0, "1D image"},    // 1D with height
        {{37, 2, {4, 4, 4}, 1, 2}, SBT_ECORRUPT, 0, "3D image"},    // 3D with layers
        {{37, 1, {4, 4, 1}, 4, 1}, SBT_ECORRUPT, 0, "levels"},      // more levels than extent
        {{37, 1, {0, 4, 1}, 1, 1}, SBT_ECORRUPT, 0, "extent"},      // empty
        {{37, 1, {4, 4, 1}, 1, 0}, SBT_ECORRUPT, 0, "layers"},      // no layers
        {{109, 1, {1u << 20, 1u << 20, 1}, 1, 1024}, SBT_ECORRUPT, 0, "2^50"}, // too big
    };
    return cr_make_param_array(struct img_case, c, sizeof c / sizeof c[0]);
}

ParameterizedTest(struct img_case *c, vk_image, check)
{
    uint64_t size = 0;
    int st = sbt_vk_image_check(&c->im, &size);
    cr_assert(eq(int, st, c->status), "%s", sbt_errmsg());
    if (!st)
        cr_assert(eq(u64, size, c->size));
    else
        cr_assert(strstr(sbt_errmsg(), c->msg) != NULL, "message: %s", sbt_errmsg());
}

struct run_list {
    uint64_t off[64], len[64];
    uint32_t n;
};

static void add_run(void *ctx, uint64_t off, uint64_t len)
{
    struct run_list *l = ctx;
    cr_assert_lt(l->n, 64);
    l->off[l->n] = off;
    l->len[l->n++] = len;
}

Test(vk_image, box_runs)
{
    struct sbt_vk_image im = {37, 1, {64, 48, 1}, 3, 2}; /* levels 64x48, 32x24, 16x12 */
    struct run_list l = {0};
    uint64_t n, lo, hi;
    /* level 0, both layers whole: one run */
    struct sbt_vk_box b = {1, 0, 0, 2, {0, 0, 0}, {64, 48, 1}};
    cr_assert(eq(int, sbt_vk_image_box_runs(&im, &b, add_run, &l, &n, &lo, &hi), 0));
    cr_assert(l.n == 1 && n == 1 && l.off[0] == 0 && l.len[0] == 24576 && lo == 0 && hi == 24576);
    /* level 1 layer 1, rows 2..4 whole: one run after level 0 and level 1's layer 0 */
    l.n = 0;
    b = (struct sbt_vk_box){1, 1, 1, 1, {0, 2, 0}, {32, 2, 1}};
    cr_assert(eq(int, sbt_vk_image_box_runs(&im, &b, add_run, &l, &n, &lo, &hi), 0));
    cr_assert(l.n == 1 && l.off[0] == 24576 + 3072 + 2 * 128 && l.len[0] == 256);
    /* a part of each row: one run per row */
    l.n = 0;
    b = (struct sbt_vk_box){1, 2, 0, 1, {4, 1, 0}, {8, 3, 1}};
    cr_assert(eq(int, sbt_vk_image_box_runs(&im, &b, add_run, &l, &n, &lo, &hi), 0));
    cr_assert(l.n == 3 && n == 3 && l.len[0] == 32 && l.off[1] - l.off[0] == 64);
    cr_assert(eq(u64, lo, l.off[0]));
    cr_assert(eq(u64, hi, l.off[2] + 32));
    /* counted only */
    b = (struct sbt_vk_box){1, 0, 0, 2, {0, 0, 0}, {63, 48, 1}};
    cr_assert(eq(int, sbt_vk_image_box_runs(&im, &b, NULL, NULL, &n, NULL, NULL), 0));
    cr_assert(eq(u64, n, 96));
    /* outside, and misaligned blocks */
    b = (struct sbt_vk_box){1, 1, 0, 1, {30, 0, 0}, {4, 1, 1}};
    cr_assert(eq(int, sbt_vk_image_box_runs(&im, &b, NULL, NULL, &n, NULL, NULL), SBT_ECORRUPT));
    cr_assert(strstr(sbt_errmsg(), "past level 1") != NULL, "%s", sbt_errmsg());
    struct sbt_vk_image bc = {131, 1, {30, 30, 1}, 2, 1};
    b = (struct sbt_vk_box){1, 0, 0, 1, {2, 0, 0}, {4, 4, 1}};
    cr_assert(eq(int, sbt_vk_image_box_runs(&bc, &b, NULL, NULL, &n, NULL, NULL), SBT_ECORRUPT));
    cr_assert(strstr(sbt_errmsg(), "aligned") != NULL, "%s", sbt_errmsg());
    b = (struct sbt_vk_box){1, 0, 0, 1, {28, 28, 0}, {2, 2, 1}}; /* the edge block */
    cr_assert(eq(int, sbt_vk_image_box_runs(&bc, &b, NULL, NULL, &n, &lo, &hi), 0));
    cr_assert(n == 1 && hi - lo == 8);
    b = (struct sbt_vk_box){4, 0, 0, 1, {0, 0, 0}, {1, 1, 1}}; /* an aspect it has not */
    cr_assert(eq(int, sbt_vk_image_box_runs(&im, &b, NULL, NULL, &n, NULL, NULL), SBT_ECORRUPT));
}

struct cover_check {
    const struct sbt_vk_image *im;
    uint64_t next; /* where the next box must start */
    uint32_t n;
    uint64_t first; /* where the first box starts */
};

static int check_box(void *ctx, const struct sbt_vk_box *b, uint64_t off, uint64_t len)
{
    struct cover_check *c = ctx;
    uint64_t n, lo, hi;
    cr_assert(c->n == 0 || off == c->next, "boxes are contiguous: %llu after %llu",
              (unsigned long long)off, (unsigned long long)c->next);
    cr_assert(eq(int, sbt_vk_image_box_runs(c->im, b, NULL, NULL, &n, &lo, &hi), 0), "%s",
              sbt_errmsg());
    cr_assert(n == 1 && lo == off && hi == off + len, "a box is its packed bytes");
    if (c->n == 0)
        c->first = off;
    c->next = off + len;
    c->n++;
    return 0;
}

/* Whatever range of whatever image: boxes that are contiguous, cover the range, are whole rows
 * of blocks, and each exactly its packed bytes (so the box functions agree with each other). */
Test(vk_image, cover_is_whole_rows)
{
    static const struct sbt_vk_image ims[] = {
        {37, 1, {13, 7, 1}, 3, 2},        {131, 1, {20, 12, 1}, 2, 3},
        {37, 2, {9, 5, 3}, 2, 1},         {97, 0, {17, 1, 1}, 2, 2},
        {130, 1, {13, 7, 1}, 2, 2},       {1000156003, 1, {8, 4, 1}, 1, 1},
        {1000156002, 1, {8, 4, 1}, 1, 1},
    };
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof ims / sizeof ims[0]; i++) {
        uint64_t size;
        cr_assert(eq(int, sbt_vk_image_check(&ims[i], &size), 0), "%s", sbt_errmsg());
        for (int k = 0; k < 200; k++) {
            x = x * 1103515245u + 12345u;
            uint64_t off = (x >> 8) % size;
            x = x * 1103515245u + 12345u;
            uint64_t len = 1 + (x >> 8) % (size - off);
            struct cover_check c = {&ims[i], 0, 0, 0};
            cr_assert(eq(int, sbt_vk_image_cover(&ims[i], off, len, check_box, &c), 0));
            cr_assert(c.n >= 1);
            cr_assert(c.first <= off && c.next >= off + len,
                      "the boxes [%llu, %llu) cover the range [%llu, %llu)",
                      (unsigned long long)c.first, (unsigned long long)c.next,
                      (unsigned long long)off, (unsigned long long)(off + len));
        }
        struct cover_check c = {&ims[i], 0, 0, 0};
        cr_assert(eq(int, sbt_vk_image_cover(&ims[i], 0, size, check_box, &c), 0));
        cr_assert(eq(u64, c.next, size), "the whole image is covered");
        cr_assert(eq(int, sbt_vk_image_cover(&ims[i], size, 1, check_box, &c), SBT_ECORRUPT));
    }
}

/* ========================================================================================== */
/* The project's hash map and byte-interval set (format/sbt_map.h, format/sbt_iset.h)          */
/* ========================================================================================== */

/* n keys whose home slot in a 16-slot table is the same (so they probe into each other). */
static void colliding_keys(uint64_t *out, int n)
{
    uint64_t home = UINT64_MAX;
    int k = 0;
    for (uint64_t key = 0x7f0000001000ull; k < n; key += 0x40) { /* handle-like keys */
        uint64_t h = sbt_map_hash(key + 1) & 15;
        if (home == UINT64_MAX)
            home = h;
        if (h == home)
            out[k++] = key;
    }
}

/* How many times key occurs when iterating m (a map must hold each key once). */
static int occurrences(const struct sbt_map *m, uint64_t key)
{
    uint64_t pos = 0, k, v;
    int n = 0;
    while (sbt_map_next(m, &pos, &k, &v))
        n += k == key;
    return n;
}

/* Put, delete and put again keys that collide, then grow the table: every key once, with its
 * last value, deleted keys gone. The CUDA shim's own map failed this (it stopped at the first
 * deleted slot, so putting a key again after a colliding key was deleted stored it twice, and
 * the stale copy came back after a delete or a growth). */
Test(map, colliding_keys_put_deleted_put_again_then_grown)
{
    struct sbt_map m = {0};
    uint64_t key[6];
    colliding_keys(key, 6);
    for (int i = 0; i < 6; i++)
        *sbt_map_put(&m, key[i], NULL) = 100 + (uint64_t)i;
    cr_assert(sbt_map_del(&m, key[0]));
    cr_assert(sbt_map_del(&m, key[2]));
    int is_new = -1;
    *sbt_map_put(&m, key[3], &is_new) = 203; /* an update, past the deleted slots */
    cr_assert(eq(int, is_new, 0));
    *sbt_map_put(&m, key[0], &is_new) = 300; /* back */
    cr_assert(eq(int, is_new, 1));
    cr_assert(sbt_map_del(&m, key[3]));
    cr_assert(eq(u64, sbt_map_count(&m), 4));
    for (uint64_t i = 0; i < 200; i++) /* grow the table several times */
        *sbt_map_put(&m, 0x1000000 + i * 8, NULL) = i;
    static const uint64_t want[6] = {300, 101, 0, 0, 104, 105};
    for (int i = 0; i < 6; i++) {
        uint64_t *v = sbt_map_get(&m, key[i]);
        if (i == 2 || i == 3) {
            cr_assert(v == NULL, "key %d was deleted", i);
            cr_assert(eq(int, occurrences(&m, key[i]), 0));
        } else {
            cr_assert(v != NULL, "key %d lost", i);
            cr_assert(eq(u64, *v, want[i]), "key %d", i);
            cr_assert(eq(int, occurrences(&m, key[i]), 1), "key %d stored twice", i);
        }
    }
    for (uint64_t i = 0; i < 200; i++)
        cr_assert(eq(u64, *sbt_map_get(&m, 0x1000000 + i * 8), i));
    cr_assert(eq(u64, sbt_map_count(&m), 204));
    /* every key the iteration gives is one of them, once */
    uint64_t pos = 0, k, v, n = 0;
    while (sbt_map_next(&m, &pos, &k, &v))
        n++;
    cr_assert(eq(u64, n, 204));
    sbt_map_free(&m);
}

/* Keys 0 and UINT64_MAX are keys like any other. */
Test(map, extreme_keys)
{
    struct sbt_map m = {0};
    *sbt_map_put(&m, 0, NULL) = 1;
    *sbt_map_put(&m, UINT64_MAX, NULL) = 2;
    *sbt_map_put(&m, UINT64_MAX - 1, NULL) = 3;
    cr_assert(eq(u64, *sbt_map_get(&m, 0), 1));
    cr_assert(eq(u64, *sbt_map_get(&m, UINT64_MAX), 2));
    cr_assert(eq(u64, *sbt_map_get(&m, UINT64_MAX - 1), 3));
    cr_assert(eq(u64, sbt_map_count(&m), 3));
    cr_assert(sbt_map_del(&m, UINT64_MAX));
    cr_assert(sbt_map_get(&m, UINT64_MAX) == NULL);
    cr_assert(eq(u64, *sbt_map_get(&m, UINT64_MAX - 1), 3));
    sbt_map_free(&m);
}

/* The interval set merges what touches, subtracts with splits, answers overlaps. */
Test(iset, merge_split_overlap)
{
    struct sbt_iset s = {0};
    cr_assert(eq(int, sbt_iset_add(&s, 10, 20), 0));
    cr_assert(eq(int, sbt_iset_add(&s, 30, 40), 0));
    cr_assert(eq(int, sbt_iset_add(&s, 20, 30), 0)); /* touches both: one interval */
    cr_assert(eq(u32, s.n, 1));
    cr_assert(eq(u64, s.v[0].b, 10));
    cr_assert(eq(u64, s.v[0].e, 40));
    cr_assert(eq(int, sbt_iset_sub(&s, 15, 25), 0)); /* a split */
    cr_assert(eq(u32, s.n, 2));
    cr_assert(eq(u64, sbt_iset_bytes(&s), 20));
    cr_assert(sbt_iset_overlaps(&s, 24, 26));
    cr_assert(eq(int, sbt_iset_overlaps(&s, 15, 25), 0));
    cr_assert(eq(int, sbt_iset_overlaps(&s, 40, 50), 0));
    cr_assert(sbt_iset_overlaps(&s, 0, 11));
    sbt_iset_free(&s);
}

/* ========================================================================================== */
/* Clock alignment (format/sbt_align.h, FORMAT.md 3.5-3.6)                                    */
/* ========================================================================================== */

TestSuite(align, .init = make_tmp, .fini = rm_tmp);

/* A trace whose only content is metadata: (key, value) pairs, NULL-terminated. */
static sbt_reader *meta_trace(const char *name, const char *const *kv)
{
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(tpath(name), NULL, &w), SBT_OK), "%s", sbt_errmsg());
    for (; kv[0]; kv += 2)
        cr_assert(eq(int, sbt_writer_meta(w, kv[0], kv[1]), SBT_OK));
    cr_assert(eq(int, sbt_writer_close(w), SBT_OK));
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(tpath(name), NULL, &r), SBT_OK), "%s", sbt_errmsg());
    return r;
}

/* Pairs from a clock that runs 80 ppm fast against realtime with its own offset, read with
 * errors up to +-300 ns: the fit recovers the realtime of any op time within its stated
 * bound, and the drift to within a ppm. An offset-only alignment (HTA's, or one pair) misses
 * by 80 us per second of capture. */
Test(align, least_squares_recovers_offset_and_drift_within_the_bound)
{
    const uint64_t epoch = 5000000000000ull, real0 = 1795000000000000000ull;
    const double drift = 80e-6;
    struct sbt_clock_pair p[61];
    uint64_t seed = 7;
    for (int i = 0; i <= 60; i++) {
        uint64_t t = (uint64_t)i * 1000000000ull + 12345; /* one a second for a minute */
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int64_t noise = (int64_t)(seed >> 33) % 301; /* -300..300 ns */
        if (seed & 1)
            noise = -noise;
        p[i] = (struct sbt_clock_pair){.mono_ns = epoch + t,
                                       .real_ns = real0 + t + (uint64_t)llround(t * drift) +
                                                  (uint64_t)noise,
                                       .err_ns = 40};
    }
    struct sbt_clock_fit f;
    cr_assert(eq(int, sbt_clock_fit_pairs(p, 61, epoch, &f), 0), "%s", sbt_errmsg());
    cr_expect(eq(u32, f.source, SBT_CLOCK_PAIRS));
    cr_expect(eq(u32, f.n_pairs, 61));
    cr_expect(fabs((f.b - 1) - drift) < 1e-6, "drift %.3f ppm, want 80", (f.b - 1) * 1e6);
    cr_expect(f.err_ns >= 300 - 1 && f.err_ns < 1000, "bound %.0f ns: noise 300 + err 40",
              f.err_ns);
    cr_expect(eq(dbl, f.drift_err_ppm, 0));
    for (uint64_t t = 0; t <= 60000000000ull; t += 7777777777ull) {
        double off;
        sbt_clock_map(&f, t, &off);
        double truth = (double)(t + (uint64_t)llround(t * drift)); /* from real0 at t = 0 */
        double got = (double)(int64_t)(f.real_base - real0) + off;
        cr_expect(fabs(got - truth) <= sbt_clock_bound(&f, t) + 300,
                  "t %" PRIu64 ": %.0f ns off, bound %.0f", t, got - truth, sbt_clock_bound(&f, t));
        cr_expect(fabs(got - truth) < 1000, "t %" PRIu64 ": %.0f ns off", t, got - truth);
    }
}

/* The pairs come from the trace's metadata in the order of N; older traces have the epoch pair
 * only, whose fit assumes the largest drift; bad values are named. */
Test(align, pairs_from_metadata_epoch_fallback_and_bad_values)
{
    const char *kv[] = {"clock.epoch_monotonic_ns",
                        "1000",
                        "clock.epoch_realtime_ns",
                        "1795000000000000000",
                        "clock.sync.0",
                        "1100 1795000000000000100 5 start",
                        "clock.sync.1",
                        "2001100 1795000000002000300 7 end",
                        NULL};
    sbt_reader *r = meta_trace("p.sbt", kv);
    struct sbt_clock_pair *p;
    uint32_t n;
    cr_assert(eq(int, sbt_clock_pairs(r, &p, &n), 0), "%s", sbt_errmsg());
    cr_assert(eq(u32, n, 2));
    cr_expect(eq(u64, p[1].mono_ns, 2001100));
    cr_expect(eq(u64, p[1].real_ns, 1795000000002000300ull));
    cr_expect(eq(u64, p[1].err_ns, 7));
    free(p);
    struct sbt_clock_fit f;
    cr_assert(eq(int, sbt_clock_fit_trace(r, &f), 0));
    cr_expect(eq(u64, f.t_base, 100), "the first pair is 100 ns after the epoch");
    cr_expect(fabs(f.b - 1.0001) < 1e-9, "200 ns over 2 ms: 100 ppm, b %.9f", f.b);
    sbt_reader_close(r);

    const char *old[] = {"clock.epoch_monotonic_ns", "1000", "clock.epoch_realtime_ns",
                         "1795000000000000000", NULL};
    r = meta_trace("o.sbt", old);
    cr_assert(eq(int, sbt_clock_fit_trace(r, &f), 0));
    cr_expect(eq(u32, f.source, SBT_CLOCK_EPOCH));
    cr_expect(eq(u64, f.real_base, 1795000000000000000ull));
    cr_expect(eq(dbl, sbt_clock_bound(&f, 1000000000), 500000.0),
              "1 s from the pair at 500 ppm: 500 us");
    sbt_reader_close(r);

    const char *none[] = {"host", "x", NULL};
    r = meta_trace("n.sbt", none);
    cr_assert(eq(int, sbt_clock_fit_trace(r, &f), 0));
    cr_expect(eq(u32, f.source, SBT_CLOCK_NONE));
    sbt_reader_close(r);

    const char *bad[] = {"clock.epoch_monotonic_ns", "1000", "clock.sync.0", "1100 12x 5 start",
                         NULL};
    r = meta_trace("b.sbt", bad);
    cr_expect(eq(int, sbt_clock_fit_trace(r, &f), SBT_ECORRUPT));
    cr_expect(strstr(sbt_errmsg(), "clock.sync.0") && strstr(sbt_errmsg(), "MONO REAL ERR"), "%s",
              sbt_errmsg());
    sbt_reader_close(r);

    const char *early[] = {"clock.epoch_monotonic_ns", "5000", "clock.sync.0",
                           "1100 1795000000000000100 5 start", NULL};
    r = meta_trace("e.sbt", early);
    cr_expect(eq(int, sbt_clock_fit_trace(r, &f), SBT_EINVAL));
    cr_expect(strstr(sbt_errmsg(), "before the epoch") != NULL, "%s", sbt_errmsg());
    sbt_reader_close(r);
}
