/*
 * tests/fuzz/mkseeds.c — writes the fuzz targets' seed inputs into tests/fuzz/seeds/<target>/:
 * small files (a few KiB) that between them hold every record type, every op kind and every op
 * field of FORMAT.md, and every TraceSmith event type and flag, so that a fuzzer starts inside
 * the decoders instead of having to discover the layout byte by byte. The seeds are committed;
 * `make seeds` rewrites them. The same build always writes the same bytes (no clocks, no
 * randomness; zstd's output depends only on its version and level).
 *
 * Usage: mkseeds DIR   (DIR/sbt_reader, DIR/tracesmith are created if missing)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/sbt.h"
#include "format/sbt_cuda.h"
#include "format/sbt_int.h" /* chunk header codec, for the hand-made chunks */
#include "format/sbt_vk.h"

static const char *tmp = "/tmp/reprise-mkseeds.sbt";

static void die(const char *what)
{
    fprintf(stderr, "mkseeds: %s: %s\n", what, sbt_errmsg());
    exit(1);
}

#define CK(call)        \
    do {                \
        if ((call) < 0) \
            die(#call); \
    } while (0)

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len + 1);
    if (!b || fread(b, 1, *len, f) != *len)
        die(path);
    fclose(f);
    return b;
}

static void spit(const char *dir, const char *name, const void *b, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(b, 1, len, f) != len)
        die(p);
    fclose(f);
    if (len > 16384)
        fprintf(stderr, "mkseeds: %s is %zu bytes: seeds should stay small\n", p, len);
}

/* ========================================================================================== */
/* SBT traces                                                                                 */
/* ========================================================================================== */

struct ids {
    uint32_t dev_vk, dev_cuda, q, cs, host, prog, prog2, kern, kern2;
    uint32_t name[8];
    sbt_hash blob, blob2;
};

/* Tables: a Vulkan and a CUDA device with their ext rows, a queue, a CUDA stream, a host
 * thread, a program with a stored image and one without, two kernels, metadata. */
static void tables(sbt_writer *w, struct ids *id)
{
    struct sbt_payload_enc e = {0};
    uint64_t dev_args[] = {0x403000, 1, 0x10005, 0, 4, 64, 32768, 128, 16, 64, 1};
    sbt_payload_put(&e, SBT_VK_DEVICE, dev_args, 11, "llvmpipe", 8);
    sbt_payload_put(&e, SBT_VK_MEMORY_TYPE, (uint64_t[]){0, 7, 0}, 3, NULL, 0);
    sbt_payload_put(&e, SBT_VK_MEMORY_HEAP, (uint64_t[]){0, 1u << 30, 1}, 3, NULL, 0);
    sbt_payload_put(&e, SBT_VK_QUEUE_FAMILY, (uint64_t[]){0, 7, 1, 64}, 4, NULL, 0);
    sbt_payload_put(&e, SBT_VK_FEATURES, (uint64_t[]){1, 0, 1}, 3, NULL, 0);
    struct sbt_device d = {.api = SBT_API_VULKAN,
                           .vendor_id = 0x10005,
                           .device_id = 0x1234,
                           .uuid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
                           .driver_version = 1,
                           .api_version = 0x403000,
                           .timestamp_period_fs = 1000000,
                           .ext = {SBT_VK_EXT_DEVICE, (uint32_t)e.len, e.buf}};
    CK(sbt_writer_intern(w, "llvmpipe (LLVM 15.0.6, 256 bits)", &d.name));
    CK(sbt_writer_intern(w, "seedhost", &d.host));
    CK(sbt_writer_add_device(w, &d, &id->dev_vk));
    sbt_payload_enc_reset(&e);
    sbt_payload_put(&e, SBT_CUDA_DEVICE, (uint64_t[]){0, 8, 6, 4, 1u << 26, 13000}, 6, "fake", 4);
    struct sbt_device c = {
        .api = SBT_API_CUDA, .host = d.host, .ext = {SBT_CUDA_EXT_DEVICE, (uint32_t)e.len, e.buf}};
    CK(sbt_writer_intern(w, "fake CUDA device", &c.name));
    CK(sbt_writer_add_device(w, &c, &id->dev_cuda));

    sbt_payload_enc_reset(&e);
    sbt_payload_put(&e, SBT_VK_QUEUE, (uint64_t[]){0, 0, 7}, 3, NULL, 0);
    struct sbt_stream s = {.device = id->dev_vk,
                           .kind = SBT_STREAM_QUEUE,
                           .handle = 0x55aa55aa00,
                           .ext = {SBT_VK_EXT_QUEUE, (uint32_t)e.len, e.buf}};
    CK(sbt_writer_intern(w, "queue 0.0", &s.name));
    CK(sbt_writer_add_stream(w, &s, &id->q));
    sbt_payload_enc_reset(&e);
    sbt_payload_put(&e, SBT_CUDA_STREAM, (uint64_t[]){1, 1, 3, 0x7f00, 2}, 5, NULL, 0);
    struct sbt_stream cs = {.device = id->dev_cuda,
                            .kind = SBT_STREAM_CUDA,
                            .handle = 0x7f00,
                            .family = 1,
                            .index = 3,
                            .ext = {SBT_CUDA_EXT_STREAM, (uint32_t)e.len, e.buf}};
    CK(sbt_writer_add_stream(w, &cs, &id->cs)); /* no name: string 0 */
    struct sbt_stream h = {.device = id->dev_vk, .kind = SBT_STREAM_HOST_THREAD, .handle = 1};
    CK(sbt_writer_intern(w, "thread 1", &h.name));
    CK(sbt_writer_add_stream(w, &h, &id->host));

    static const uint32_t spirv[] = {0x07230203, 0x00010500, 0, 12, 0, 0x00020011, 1, 0x0003000e};
    CK(sbt_writer_blob(w, spirv, sizeof spirv, &id->blob));
    sbt_payload_enc_reset(&e);
    sbt_payload_put(&e, SBT_VK_MODULE, (uint64_t[]){1, sizeof spirv}, 2, NULL, 0);
    sbt_payload_put(&e, SBT_VK_ENTRY_POINT, (uint64_t[]){64, 1, 1}, 3, "main", 4);
    struct sbt_program p = {.device = id->dev_vk,
                            .kind = SBT_PROGRAM_SPIRV,
                            .blob = id->blob,
                            .ext = {SBT_VK_EXT_MODULE, (uint32_t)e.len, e.buf}};
    CK(sbt_writer_intern(w, "scale.spv", &p.name));
    CK(sbt_writer_add_program(w, &p, &id->prog));
    struct sbt_program p2 = {.kind = SBT_PROGRAM_HOST}; /* no image, every device */
    CK(sbt_writer_add_program(w, &p2, &id->prog2));
    sbt_payload_enc_reset(&e);
    sbt_payload_put(&e, SBT_VK_PIPELINE, (uint64_t[]){7, 1, 64, 1, 1}, 5, "main", 4);
    sbt_payload_put(&e, SBT_VK_SPEC_ENTRY, (uint64_t[]){0, 0, 4}, 3, "\x40\0\0\0", 4);
    sbt_payload_put(&e, SBT_VK_SET_LAYOUT, (uint64_t[]){0, 2}, 2, NULL, 0);
    sbt_payload_put(&e, SBT_VK_SET_BINDING, (uint64_t[]){0, 7, 1, 3}, 4, NULL, 0);
    struct sbt_kernel k = {.program = id->prog,
                           .ext = {SBT_VK_EXT_PIPELINE, (uint32_t)e.len, e.buf}};
    CK(sbt_writer_intern(w, "main", &k.name));
    CK(sbt_writer_add_kernel(w, &k, &id->kern));
    sbt_payload_enc_reset(&e);
    sbt_payload_put(&e, SBT_CUDA_KERNEL, (uint64_t[]){0, 1, 2, 0, 8, 8, 4}, 7, NULL, 0);
    struct sbt_kernel k2 = {.program = id->prog2,
                            .ext = {SBT_CUDA_EXT_KERNEL, (uint32_t)e.len, e.buf}};
    CK(sbt_writer_intern(w, "saxpy", &k2.name));
    CK(sbt_writer_add_kernel(w, &k2, &id->kern2));
    sbt_payload_enc_free(&e);

    CK(sbt_writer_meta(w, "generator", "tests/fuzz/mkseeds.c"));
    CK(sbt_writer_meta(w, "clock.domain", "CLOCK_MONOTONIC"));
    CK(sbt_writer_meta(w, "empty.value", ""));
    static const char *names[8] = {"vkAllocateMemory", "vkCmdCopyBuffer", "vkCmdFillBuffer",
                                   "vkQueueSubmit",    "vkWaitForFences", "cuLaunchKernel",
                                   "device lost",      "marker"};
    for (int i = 0; i < 8; i++)
        CK(sbt_writer_intern(w, names[i], &id->name[i]));
    static const uint8_t data[48] = "host bytes written into mapped memory, 48 bytes";
    CK(sbt_writer_blob(w, data, sizeof data, &id->blob2));
}

/* Adds one op built from a template; t advances so every op has its own times. */
static void op(sbt_writer *w, uint64_t *t, struct sbt_op o, const struct sbt_access *acc,
               uint32_t n_acc)
{
    o.host_begin = o.host_begin ? o.host_begin : *t;
    o.host_end = o.host_end ? o.host_end : o.host_begin + 700;
    o.access = acc;
    o.n_access = n_acc;
    if (o.thread == 0 && o.stream)
        o.thread = 1;
    CK(sbt_writer_add_op(w, &o, NULL));
    *t += 1000;
}

/* Every op kind (1..17), every subkind, every field and mark, accesses of every mode. */
static void ops(sbt_writer *w, const struct ids *id, uint64_t *t)
{
    struct sbt_payload_enc e = {0};
    const uint64_t mem = 17, mem2 = 18;
    const struct sbt_access wr = {mem, 0, 256, SBT_ACCESS_WRITE},
                            rd = {mem, 256, 256, SBT_ACCESS_READ},
                            rw[3] = {{mem, 0, 256, SBT_ACCESS_RW},
                                     {mem2, 64, 64, SBT_ACCESS_READ},
                                     {mem2, 0, 64, SBT_ACCESS_WRITE}};
    sbt_payload_put(&e, SBT_VK_MEMORY, (uint64_t[]){mem, 4096, 0}, 3, NULL, 0);
    op(w, t,
       (struct sbt_op){.kind = SBT_OP_ALLOC,
                       .subkind = SBT_RES_DEVICE,
                       .flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES | SBT_OPF_OBJ | SBT_OPF_PAYLOAD,
                       .stream = id->host,
                       .name = id->name[0],
                       .resource = mem,
                       .bytes = 4096,
                       .obj = id->dev_vk,
                       .payload = {SBT_VK_PAYLOAD, (uint32_t)e.len, e.buf}},
       NULL, 0);
    op(w, t,
       (struct sbt_op){.kind = SBT_OP_ALLOC,
                       .subkind = SBT_RES_HOST_PINNED,
                       .flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES,
                       .stream = id->host,
                       .resource = mem2,
                       .bytes = 128},
       NULL, 0);
    op(w, t,
       (struct sbt_op){.kind = SBT_OP_ALLOC,
                       .subkind = SBT_RES_MANAGED,
                       .flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES | SBT_OPF_OBJ,
                       .stream = id->cs,
                       .thread = 2,
                       .resource = (1ull << 61) - 1, /* the largest resource id */
                       .bytes = UINT64_MAX,
                       .obj = id->dev_cuda},
       NULL, 0);
    op(w, t,
       (struct sbt_op){
           .kind = SBT_OP_HOST_WRITE, .flags = SBT_OPF_BLOB, .stream = id->host, .blob = id->blob2},
       &wr, 1);
    for (uint32_t dir = SBT_COPY_H2D; dir <= SBT_COPY_H2H; dir++) {
        sbt_payload_enc_reset(&e);
        sbt_payload_put(&e, SBT_VK_COPY_BUFFER, (uint64_t[]){5, 6, 1, 0, 256, 256}, 6, NULL, 0);
        op(w, t,
           (struct sbt_op){.kind = SBT_OP_COPY,
                           .subkind = dir,
                           .flags = SBT_OPF_BYTES | SBT_OPF_PAYLOAD |
                                    (dir == SBT_COPY_H2D ? SBT_OPF_BLOB : 0),
                           .stream = id->q,
                           .name = id->name[1],
                           .bytes = 256,
                           .blob = id->blob2,
                           .payload = {SBT_VK_PAYLOAD, (uint32_t)e.len, e.buf}},
           dir == SBT_COPY_D2D   ? rw
           : dir == SBT_COPY_D2H ? &rd
                                 : &wr,
           dir == SBT_COPY_D2D ? 2 : 1);
    }
    op(w, t,
       (struct sbt_op){.kind = SBT_OP_FILL,
                       .flags = SBT_OPF_BYTES | SBT_OPF_OBJ | SBT_OPF_DEV_TIME,
                       .stream = id->q,
                       .name = id->name[2],
                       .bytes = 256,
                       .value = 0xdeadbeef,
                       .dev_begin = *t - 200, /* first device time on the stream: before host */
                       .dev_end = *t + 100},
       &wr, 1);
    /* kernels: full geometry, then the same kernel again (geometry tag 0), device times that
     * run on from the previous one, a digest, an error with the UNTIMED mark */
    sbt_payload_enc_reset(&e);
    sbt_payload_put(&e, SBT_VK_DISPATCH, (uint64_t[]){7, 4, 1, 1, 0, 0, 0, 1}, 8, "\1\0\0\0", 4);
    sbt_payload_put(&e, SBT_VK_BINDING, (uint64_t[]){0, 0, 7, 5, 0, 256, 3}, 7, NULL, 0);
    for (int i = 0; i < 3; i++)
        op(w, t,
           (struct sbt_op){.kind = SBT_OP_KERNEL,
                           .flags = SBT_OPF_KERNEL | SBT_OPF_GEOM | SBT_OPF_PAYLOAD |
                                    SBT_OPF_DEV_TIME | (i == 1 ? SBT_OPF_DIGEST : 0),
                           .stream = id->q,
                           .kernel = id->kern,
                           .grid = {4, 1, i == 2 ? 2 : 1},
                           .block = {64, 1, 1},
                           .shmem = i == 2 ? 1024 : 0,
                           .dev_begin = *t + 5000 + 300 * (uint64_t)i,
                           .dev_end = *t + 5250 + 300 * (uint64_t)i,
                           .digest = {0x0123456789abcdefull, 0xfedcba9876543210ull},
                           .payload = {SBT_VK_PAYLOAD, (uint32_t)e.len, e.buf}},
           rw, 3);
    uint32_t err;
    CK(sbt_writer_intern(w, "replay: VK_ERROR_DEVICE_LOST", &err));
    sbt_payload_enc_reset(&e);
    sbt_payload_put(&e, SBT_CUDA_CALL, (uint64_t[]){19, 1, 0x7f00, 0}, 4, NULL, 0);
    static const uint8_t params[28] = {0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7e,
                                       0, 0, 0, 0,    0, 0, 0, 0, 0, 0, 0, 4, 0, 0};
    sbt_payload_put(&e, SBT_CUDA_LAUNCH, (uint64_t[]){0, sizeof params}, 2, params, sizeof params);
    sbt_payload_put(&e, SBT_CUDA_PTR, (uint64_t[]){8, mem, 0, 0x7e0000000000}, 4, NULL, 0);
    op(w, t,
       (struct sbt_op){.kind = SBT_OP_KERNEL,
                       .flags = SBT_OPF_KERNEL | SBT_OPF_GEOM | SBT_OPF_ERROR | SBT_OPF_PAYLOAD |
                                SBT_OPF_UNTIMED,
                       .stream = id->cs,
                       .thread = 2,
                       .name = id->name[5],
                       .kernel = id->kern2,
                       .grid = {UINT32_MAX, 65535, 65535},
                       .block = {1024, 1, 1},
                       .shmem = 49152,
                       .error = err,
                       .payload = {SBT_CUDA_PAYLOAD, (uint32_t)e.len, e.buf}},
       &rw[1], 2);
    /* synchronisation: events, every sync object kind, waits, syncs, a submission */
    op(w, t,
       (struct sbt_op){
           .kind = SBT_OP_EVENT_RECORD, .flags = SBT_OPF_OBJ, .stream = id->cs, .obj = 3},
       NULL, 0);
    op(w, t,
       (struct sbt_op){.kind = SBT_OP_EVENT_WAIT, .flags = SBT_OPF_OBJ, .stream = id->q, .obj = 3},
       NULL, 0);
    for (uint32_t k = SBT_SYNC_FENCE; k <= SBT_SYNC_EVENT; k++) {
        sbt_payload_enc_reset(&e);
        sbt_payload_put(&e, SBT_VK_SYNC_INFO, (uint64_t[]){0x800}, 1, NULL, 0);
        op(w, t,
           (struct sbt_op){.kind = SBT_OP_SIGNAL,
                           .subkind = k,
                           .flags = SBT_OPF_OBJ | SBT_OPF_PAYLOAD,
                           .stream = id->q,
                           .obj = 40 + k,
                           .value = k == SBT_SYNC_TIMELINE_SEMAPHORE ? 12 : 0,
                           .payload = {SBT_VK_PAYLOAD, (uint32_t)e.len, e.buf}},
           NULL, 0);
        op(w, t,
           (struct sbt_op){.kind = SBT_OP_WAIT,
                           .subkind = k,
                           .flags = SBT_OPF_OBJ,
                           .stream = k == SBT_SYNC_FENCE ? id->host : id->q,
                           .name = id->name[4],
                           .obj = 40 + k,
                           .value = k == SBT_SYNC_TIMELINE_SEMAPHORE ? 12 : 0},
           NULL, 0);
    }
    sbt_payload_enc_reset(&e);
    sbt_payload_put(&e, SBT_VK_SUBMIT, (uint64_t[]){1, 9}, 2, NULL, 0);
    sbt_payload_put(&e, SBT_VK_BATCH, (uint64_t[]){0, 1, 1}, 3, NULL, 0);
    sbt_payload_put(&e, SBT_VK_CMDBUF, (uint64_t[]){21, 0}, 2, NULL, 0);
    op(w, t,
       (struct sbt_op){.kind = SBT_OP_SUBMIT,
                       .flags = SBT_OPF_OBJ | SBT_OPF_PAYLOAD | SBT_OPF_BLOB,
                       .stream = id->q,
                       .name = id->name[3],
                       .obj = 1,
                       .value = 9,
                       .blob = id->blob,
                       .payload = {SBT_VK_PAYLOAD, (uint32_t)e.len, e.buf}},
       NULL, 0);
    op(w, t,
       (struct sbt_op){
           .kind = SBT_OP_STREAM_SYNC, .flags = SBT_OPF_OBJ, .stream = id->host, .obj = id->q},
       NULL, 0);
    op(w, t,
       (struct sbt_op){
           .kind = SBT_OP_DEVICE_SYNC, .flags = SBT_OPF_OBJ, .stream = id->host, .obj = id->dev_vk},
       NULL, 0);
    op(w, t,
       (struct sbt_op){.kind = SBT_OP_MARKER,
                       .flags = SBT_OPF_UNSUPPORTED,
                       .stream = id->host,
                       .name = id->name[7]},
       NULL, 0);
    op(w, t,
       (struct sbt_op){.kind = SBT_OP_HOST_READ,
                       .flags = SBT_OPF_DIGEST,
                       .stream = id->host,
                       .digest = {42, 43}},
       &rd, 1);
    op(w, t,
       (struct sbt_op){
           .kind = SBT_OP_STREAM_CREATE, .flags = SBT_OPF_OBJ, .stream = id->host, .obj = id->cs},
       NULL, 0);
    op(w, t,
       (struct sbt_op){
           .kind = SBT_OP_STREAM_DESTROY, .flags = SBT_OPF_OBJ, .stream = id->host, .obj = id->cs},
       NULL, 0);
    op(w, t,
       (struct sbt_op){
           .kind = SBT_OP_FREE, .flags = SBT_OPF_RESOURCE, .stream = id->host, .resource = mem2},
       NULL, 0);
    /* an op with no stream, no name and equal begin and end */
    op(w, t, (struct sbt_op){.kind = SBT_OP_MARKER, .host_begin = *t, .host_end = *t}, NULL, 0);
    sbt_payload_enc_free(&e);
}

/* A trace of every op, written with the given options; unfinished: cut after a flush (as a
 * killed capture leaves it), else closed with the completeness record and the footer. */
static void trace(const struct sbt_writer_opts *o, int unfinished, int incomplete)
{
    sbt_writer *w;
    CK(sbt_writer_open(tmp, o, &w));
    struct ids id;
    tables(w, &id);
    uint64_t t = 1000000;
    ops(w, &id, &t);
    if (incomplete) {
        CK(sbt_writer_unsupported(w, "vkCmdCopyQueryPoolResults", 3, 5, SBT_UNMODELLED_AFFECTS));
        CK(sbt_writer_unsupported(w, "vkGetPhysicalDeviceFormatProperties", 12, SBT_SEQ_NONE, 0));
        CK(sbt_writer_unsupported(w, "cuGraphLaunch", 1, 0, SBT_UNMODELLED_AFFECTS | 2));
        CK(sbt_writer_mark_incomplete(w, "the capture ran out of memory"));
    } else {
        CK(sbt_writer_unsupported(w, "vkGetPhysicalDeviceFormatProperties", 2, 0, 0));
    }
    if (unfinished) {
        CK(sbt_writer_flush(w));
        ops(w, &id, &t); /* never written: the "process" dies before the next flush */
        sbt_writer_abandon(w);
        return;
    }
    CK(sbt_writer_close(w));
}

/* Appends a chunk (header with CRCs, stored payload) to b at *len. */
static void add_chunk(uint8_t *b, size_t *len, uint32_t content, const uint8_t *raw, size_t n,
                      uint64_t seq_first)
{
    struct sbt__chunk_hdr h = {.codec = SBT_CODEC_NONE,
                               .content = content,
                               .stored_len = (uint32_t)n,
                               .raw_len = (uint32_t)n,
                               .seq_first = seq_first,
                               .payload_crc = sbt_crc32c(0, raw, n)};
    sbt__chunk_hdr_encode(&h, b + *len);
    memcpy(b + *len + SBT_CHUNK_HEADER_LEN, raw, n);
    *len += SBT_CHUNK_HEADER_LEN + n;
}

static void sbt_seeds(const char *dir)
{
    size_t len;
    uint8_t *b;
    /* stored chunks of 6 ops (several op chunks, a blob chunk, seeks by seq and time) */
    trace(&SBT_WRITER_OPTS(.chunk_ops = 6, .zstd_level = -1), 0, 0);
    b = slurp(tmp, &len);
    spit(dir, "every-op.sbt", b, len);
    /* the same cut in its third op chunk: a torn tail, read by scanning */
    sbt_reader *r;
    CK(sbt_reader_open(tmp, NULL, &r));
    uint64_t n;
    const struct sbt_chunk_info *ci = sbt_reader_chunks(r, &n);
    size_t cut = 0;
    for (uint64_t k = 0, seen = 0; k < n && !cut; k++)
        if ((ci[k].content & SBT_CHUNK_OPS) && ++seen == 3)
            cut = (size_t)ci[k].offset + SBT_CHUNK_HEADER_LEN + ci[k].stored_len / 2;
    sbt_reader_close(r);
    spit(dir, "torn.sbt", b, cut);
    free(b);
    /* compressed, one op chunk; marked incomplete with unmodelled calls */
    trace(&SBT_WRITER_OPTS(.zstd_level = 1), 0, 1);
    b = slurp(tmp, &len);
    spit(dir, "every-op-zstd-incomplete.sbt", b, len);
    free(b);
    /* flushed then abandoned: no END, no index, no trailer (a killed capture) */
    trace(&SBT_WRITER_OPTS(.chunk_ops = 1000, .zstd_level = -1), 1, 0);
    b = slurp(tmp, &len);
    /* and a chunk a newer writer might add: a skippable record type among definitions */
    uint8_t *c = realloc(b, len + 256);
    if (!c)
        die("realloc");
    static const uint8_t raw[] = {SBT_REC_STRING,
                                  5,
                                  0,
                                  'x',
                                  'y',
                                  'z',
                                  'w', /* id patched */
                                  70,
                                  3,
                                  1,
                                  2,
                                  3};
    uint8_t rec[sizeof raw];
    memcpy(rec, raw, sizeof raw);
    sbt_reader *u;
    CK(sbt_reader_open(tmp, NULL, &u));
    rec[2] = (uint8_t)(sbt_reader_n_strings(u) + 1); /* the next string id (< 128) */
    uint64_t seq_end = sbt_reader_info(u)->seq_end;
    sbt_reader_close(u);
    add_chunk(c, &len, SBT_CHUNK_DICT, rec, sizeof rec, seq_end);
    spit(dir, "unfinished-skippable.sbt", c, len);
    free(c);
    /* a rank of a job with its clock pairs (FORMAT.md 3.5), one of them malformed */
    sbt_writer *w;
    CK(sbt_writer_open(tmp, &SBT_WRITER_OPTS(.zstd_level = -1), &w));
    CK(sbt_writer_meta(w, "job.id", "host-1-abc"));
    CK(sbt_writer_meta(w, "job.rank", "1"));
    CK(sbt_writer_meta(w, "job.world_size", "2"));
    CK(sbt_writer_meta(w, "clock.epoch_monotonic_ns", "1000"));
    CK(sbt_writer_meta(w, "clock.epoch_realtime_ns", "1795000000000000000"));
    CK(sbt_writer_meta(w, "clock.sync.0", "1100 1795000000000000100 5 start"));
    CK(sbt_writer_meta(w, "clock.sync.1", "2001100 1795000000002000300 7 flush"));
    CK(sbt_writer_meta(w, "clock.sync.2", "3001100 17950000000030 7 end"));
    CK(sbt_writer_close(w));
    b = slurp(tmp, &len);
    spit(dir, "job-clock.sbt", b, len);
    free(b);
    /* nothing recorded: header, END and index only */
    CK(sbt_writer_open(tmp, NULL, &w));
    CK(sbt_writer_close(w));
    b = slurp(tmp, &len);
    spit(dir, "empty-trace.sbt", b, len);
    free(b);
    remove(tmp);
}

/* ========================================================================================== */
/* TraceSmith files (shared/research/tracesmith.md), without their 4-byte magic              */
/* ========================================================================================== */

struct tb {
    uint8_t b[4096];
    size_t n;
};

static void tb_u8(struct tb *t, uint8_t v)
{
    t->b[t->n++] = v;
}

static void tb_var(struct tb *t, uint64_t v)
{
    t->n += sbt_varint_encode(v, t->b + t->n);
}

static void tb_str(struct tb *t, const char *s)
{
    tb_var(t, strlen(s));
    memcpy(t->b + t->n, s, strlen(s));
    t->n += strlen(s);
}

static void tb_event(struct tb *t, uint8_t type, uint8_t flags, uint64_t delta, uint64_t corr,
                     uint64_t name)
{
    tb_u8(t, type);
    tb_u8(t, flags);
    tb_var(t, delta);
    if (flags & 0x01)
        tb_var(t, 1500);          /* duration */
    tb_var(t, type == 8 ? 1 : 0); /* device */
    tb_var(t, type == 5 ? 0 : 7); /* stream */
    tb_var(t, corr);
    tb_var(t, name);
    if (flags & 0x02) /* grid xyz, block xyz, shared memory, registers */
        for (uint64_t v = 0; v < 8; v++)
            tb_var(t, v == 6 ? 49152 : v + 1);
    if (flags & 0x04) { /* src, dst, size */
        tb_var(t, 0x7f0000001000);
        tb_var(t, type == 15 ? 0x7e0000002000 : 0);
        tb_var(t, 1u << 20);
    }
    if (flags & 0x08) { /* call stack: thread id, two frames of 4 varints */
        tb_var(t, 4242);
        tb_var(t, 2);
        for (int i = 0; i < 8; i++)
            tb_var(t, 0x401000 + (uint64_t)i);
    }
}

/* A file with every section and every event type; sections: 0 leaves a section out. */
static size_t ts_file(uint8_t *out, int with_meta, int with_strings, int with_devices)
{
    struct tb t = {.n = 72};
    memset(t.b, 0, 72);
    memcpy(t.b, SBT_TRACESMITH_MAGIC, 4);
    t.b[4] = 0, t.b[6] = 1; /* format 0.1 */
    uint64_t meta = 0, str = 0, dev = 0, ev = 0, count = 0;
    if (with_meta) {
        meta = t.n;
        tb_u8(&t, 1);
        tb_str(&t, "app");
        tb_str(&t, "app --seed");
        tb_var(&t, 1000);
        tb_var(&t, 99000);
        tb_str(&t, "host");
        tb_var(&t, 4242);
    }
    if (with_strings) {
        str = t.n;
        tb_u8(&t, 2);
        tb_var(&t, 3);
        tb_str(&t, "saxpy");
        tb_str(&t, "");
        tb_str(&t, "range");
    }
    if (with_devices) {
        dev = t.n;
        tb_u8(&t, 3);
        tb_var(&t, 2);
        for (uint64_t d = 0; d < 2; d++) {
            tb_var(&t, d);
            tb_str(&t, d ? "GPU 1" : "GPU 0");
            tb_str(&t, "NVIDIA");
            for (uint64_t k = 0; k < 9; k++)
                tb_var(&t, k * 1000 + d);
        }
    }
    ev = t.n;
    tb_u8(&t, 4);
    tb_var(&t, 5000000); /* base timestamp */
    /* a launch and its completion, a launch completed twice, a completion without launch,
     * a launch that never completes, every other type (13 and 14 are not imported) */
    tb_event(&t, 1, 0x03, 0, 1, 0), count++;
    tb_event(&t, 2, 0x01, 300, 1, 0), count++;
    tb_event(&t, 1, 0x02, 10, 2, 0), count++;
    tb_event(&t, 1, 0x0b, 10, 2, 1), count++;
    tb_event(&t, 2, 0x01, 10, 2, 0), count++;
    tb_event(&t, 2, 0x01, 10, 9, 0), count++;
    tb_event(&t, 1, 0x02, 10, 3, 0), count++;
    for (uint8_t type = 3; type <= 19; type++)
        tb_event(&t, type, type <= 6 || type == 15 || type == 16 ? 0x05 : 0x01, 100, type,
                 type == 17 ? 2 : 0),
            count++;
    tb_event(&t, 42, 0x00, 1, 0, 99), count++; /* unknown type, name out of range */
    sbt__put_le64(t.b + 16, meta);
    sbt__put_le64(t.b + 24, str);
    sbt__put_le64(t.b + 32, dev);
    sbt__put_le64(t.b + 40, ev);
    sbt__put_le64(t.b + 56, count);
    memcpy(out, t.b, t.n);
    return t.n;
}

static void ts_seeds(const char *dir)
{
    uint8_t b[4096];
    size_t n = ts_file(b, 1, 1, 1);
    spit(dir, "every-event", b + 4, n - 4);
    n = ts_file(b, 0, 0, 0);
    spit(dir, "events-only", b + 4, n - 4);
    n = ts_file(b, 1, 1, 1);
    sbt__put_le64(b + 56, 0); /* no events */
    spit(dir, "no-events", b + 4, n - 4);
}

static void mkdir_p(const char *p)
{
    if (mkdir(p, 0755) && errno != EEXIST) {
        fprintf(stderr, "mkseeds: cannot create %s: %s\n", p, strerror(errno));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/fuzz/seeds";
    char p[400];
    mkdir_p(dir);
    snprintf(p, sizeof p, "%s/sbt_reader", dir);
    mkdir_p(p);
    sbt_seeds(p);
    snprintf(p, sizeof p, "%s/tracesmith", dir);
    mkdir_p(p);
    ts_seeds(p);
    return 0;
}
