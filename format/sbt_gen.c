/*
 * format/sbt_gen.c — synthetic traces for tests and benchmarks (`reprise gen`).
 *
 * The generator simulates a small program: host threads issue work to streams on several
 * devices; each stream executes in order, starting an op when the stream is free, the launch has
 * reached the device, and every event it waits on has completed. Kernels read buffers that
 * earlier ops wrote, so the trace has real read-after-write chains, and frees happen only after
 * a sync, like a correct program. Buffers belong to streams; data crosses streams after an
 * event. A step of 100-400 ops repeats with fresh timings (1 op in 32 deviates), as training and
 * inference loops do. State is a fixed pool of live buffers per device and one free time per
 * stream, so memory does not grow with n_ops.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sbt_int.h"

#define POOL      24 /* live buffers per device, at most */
#define N_UPLOADS 24

static const char *const kernel_names[] = {
    "ampere_sgemm_128x64_nn",
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
    "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps>>",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float>",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>",
    "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>",
    "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
    "void layer_norm_kernel<float, float>",
    "void rms_norm_kernel<c10::BFloat16, 1024>",
    "void rotary_embedding_kernel<c10::BFloat16, true>",
    "void vllm::paged_attention_v2_kernel<__nv_bfloat16, 128, 16, 128, 512>",
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    "ncclDevKernel_AllGather_RING_LL",
    "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>",
    "void cudnn::cnn::conv2d_grouped_direct_kernel<float, float>",
    "implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, true, false, true>",
    "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false>",
    "void at::native::index_elementwise_kernel<128, 4>",
    "void at::native::embedding_backward_feature_kernel<float, float, long>",
    "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel",
    "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4>",
    "triton_poi_fused_add_mul_0",
    "triton_red_fused__softmax_1",
    "triton_per_fused_native_layer_norm_2",
    "matmul_f32",
    "reduce_sum",
    "prefix_scan",
    "histogram_atomic",
    "transpose_tiled",
};
#define N_KERNELS (sizeof kernel_names / sizeof kernel_names[0])

struct kprof {
    uint32_t id, name;
    uint32_t grid[3], block[3], shmem;
    uint64_t mean_ns;
};

struct buf {
    uint64_t res, size;
};

struct gen {
    uint64_t rng;  /* timing and deviations */
    uint64_t srng; /* structure: reset at every step, so steps repeat */
    uint64_t step_seed;
    int deviate; /* this op draws its structure from rng: a one-off variation */
    struct sbt_gen_opts o;
    sbt_writer *w;
    uint64_t now;        /* host clock, ns */
    uint64_t *free_at;   /* per stream id: device time when the stream is idle */
    uint32_t first_host; /* stream id of host thread 0 */
    struct buf (*pool)[POOL];
    uint32_t *n_live;
    uint64_t next_res, next_event;
    uint64_t emitted; /* ops written so far */
    struct kprof k[N_KERNELS];
    sbt_hash uploads[N_UPLOADS];
    uint64_t upload_len[N_UPLOADS];
    uint32_t s_h2d, s_d2h, s_d2d, s_fill, s_alloc, s_free, s_rec, s_wait, s_ssync, s_dsync;
    uint32_t s_marker[4];
};

static uint64_t rnd(struct gen *g) /* splitmix64 */
{
    uint64_t z = (g->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rnd_in(struct gen *g, uint64_t lo, uint64_t hi) /* [lo, hi] */
{
    return lo + rnd(g) % (hi - lo + 1);
}

/* Structural choices (which op, stream, kernel, buffer, range): the same sequence every step,
 * as a training or inference loop issues the same work each iteration. */
static uint64_t rs(struct gen *g)
{
    if (g->deviate)
        return rnd(g);
    uint64_t z = (g->srng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* Device duration: the same kernel on the same sizes runs within a few percent of its mean
 * (mean * 0.97 .. 1.03), with a tail: 1 in 50 takes 1.5x to 3x (contention, clocks). */
static uint64_t jitter(struct gen *g, uint64_t mean)
{
    uint64_t d = mean * rnd_in(g, 970, 1030) / 1000;
    if (rnd(g) % 50 == 0)
        d = d * rnd_in(g, 150, 300) / 100;
    return d ? d : 1;
}

static int emit(struct gen *g, struct sbt_op *op)
{
    g->emitted++;
    return sbt_writer_add_op(g->w, op, NULL);
}

static uint32_t pick_stream(struct gen *g, uint32_t *dev)
{
    uint32_t d = (uint32_t)(rs(g) % g->o.n_devices);
    *dev = d;
    return 1 + d * g->o.streams_per_device + (uint32_t)(rs(g) % g->o.streams_per_device);
}

/* Starts a host op: advances the host clock and fills the common fields. Gaps between API
 * calls are mostly a tight launch loop (0.2-1 us), sometimes host work (5-100 us); an API call
 * takes 1.5-3 us. */
static void host_op(struct gen *g, struct sbt_op *op, uint32_t kind, uint32_t stream)
{
    memset(op, 0, sizeof *op);
    g->now += rnd(g) % 8 ? rnd_in(g, 200, 1000) : rnd_in(g, 5000, 100000);
    op->kind = kind;
    op->stream = stream;
    op->thread = stream >= g->first_host ? stream - g->first_host + 1
                                         : 1 + (uint32_t)(rs(g) % g->o.n_threads);
    op->host_begin = g->now;
    op->host_end = g->now + rnd_in(g, 1500, 3000);
    g->now = op->host_end;
}

/* Device execution on op->stream after `after`. */
static void dev_exec(struct gen *g, struct sbt_op *op, uint64_t after, uint64_t dur)
{
    uint64_t b = max64(max64(g->free_at[op->stream], op->host_begin + 1500), after);
    op->flags |= SBT_OPF_DEV_TIME;
    op->dev_begin = b;
    op->dev_end = b + dur;
    g->free_at[op->stream] = op->dev_end;
}

/* Buffers belong to streams (pool slot i to the stream i % streams_per_device of its device),
 * as a program keeps each stream's data apart; data crosses streams after an event. */
static struct buf *pick_buf(struct gen *g, uint32_t dev, uint32_t stream)
{
    uint32_t spd = g->o.streams_per_device, n = g->n_live[dev];
    uint32_t local = (stream - 1) % spd, mine = n / spd + (local < n % spd);
    if (!n)
        return NULL;
    if (!mine)
        return &g->pool[dev][rs(g) % n];
    return &g->pool[dev][local + spd * (uint32_t)(rs(g) % mine)];
}

static uint32_t owner_stream(const struct gen *g, uint32_t dev, uint32_t slot)
{
    return 1 + dev * g->o.streams_per_device + slot % g->o.streams_per_device;
}

/* A sub-range of b: whole buffer half the time, else an aligned piece. */
static void pick_range(struct gen *g, const struct buf *b, uint64_t *off, uint64_t *len)
{
    if (rs(g) & 1) {
        *off = 0;
        *len = b->size;
        return;
    }
    uint64_t pieces = 1ull << (1 + rs(g) % 4);
    uint64_t piece = b->size / pieces;
    *off = piece * (rs(g) % pieces);
    *len = piece;
}

static void set_digest(struct gen *g, struct sbt_op *op)
{
    if (!g->o.digests)
        return;
    uint64_t x[2] = {op->host_begin, rnd(g)};
    op->flags |= SBT_OPF_DIGEST;
    op->digest = sbt_hash_bytes(x, sizeof x);
}

static int gen_alloc(struct gen *g, uint32_t dev)
{
    struct sbt_op op;
    uint32_t host = g->first_host + (uint32_t)(rs(g) % g->o.n_threads);
    host_op(g, &op, SBT_OP_ALLOC, host);
    struct buf *b = &g->pool[dev][g->n_live[dev]++];
    b->res = ++g->next_res;
    b->size = (uint64_t)1 << (16 + rs(g) % 11); /* 64 KiB .. 64 MiB */
    op.subkind = SBT_RES_DEVICE;
    op.name = g->s_alloc;
    op.flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES | SBT_OPF_OBJ;
    op.resource = b->res;
    op.bytes = b->size;
    op.obj = dev + 1; /* the device the memory lives on */
    int st = emit(g, &op);
    if (st)
        return st;
    /* new memory is initialised on its stream before anyone reads it */
    host_op(g, &op, SBT_OP_FILL, owner_stream(g, dev, g->n_live[dev] - 1));
    struct sbt_access acc = {b->res, 0, b->size, SBT_ACCESS_WRITE};
    op.name = g->s_fill;
    op.flags |= SBT_OPF_BYTES | SBT_OPF_OBJ;
    op.bytes = b->size;
    op.n_access = 1;
    op.access = &acc;
    dev_exec(g, &op, 0, jitter(g, 1500 + b->size / 1500));
    set_digest(g, &op);
    return emit(g, &op);
}

/* Frees one buffer after a device sync, as a correct program would. */
static int gen_free(struct gen *g, uint32_t dev)
{
    struct sbt_op op;
    uint32_t host = g->first_host + (uint32_t)(rs(g) % g->o.n_threads);
    host_op(g, &op, SBT_OP_DEVICE_SYNC, host);
    uint64_t done = 0;
    for (uint32_t s = 0; s < g->o.streams_per_device; s++)
        done = max64(done, g->free_at[1 + dev * g->o.streams_per_device + s]);
    op.name = g->s_dsync;
    op.flags = SBT_OPF_OBJ;
    op.obj = dev + 1;
    if (done > op.host_end)
        op.host_end = done + 500;
    g->now = op.host_end;
    int st = emit(g, &op);
    if (st)
        return st;
    uint32_t i = (uint32_t)(rs(g) % g->n_live[dev]);
    struct buf b = g->pool[dev][i];
    g->pool[dev][i] = g->pool[dev][--g->n_live[dev]];
    host_op(g, &op, SBT_OP_FREE, host);
    op.name = g->s_free;
    op.flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES;
    op.resource = b.res;
    op.bytes = b.size;
    return emit(g, &op);
}

/* A kernel on stream s of device dev; extra, if not NULL, is one more input (another stream's
 * buffer, after an event). */
static int gen_kernel_on(struct gen *g, uint32_t s, uint32_t dev, const struct buf *extra)
{
    struct sbt_op op;
    host_op(g, &op, SBT_OP_KERNEL, s);
    /* a few kernels are hot, as in real programs */
    uint32_t ki = (uint32_t)(rs(g) % 4 ? rs(g) % 8 : rs(g) % N_KERNELS);
    const struct kprof *k = &g->k[ki];
    struct sbt_access acc[3];
    uint32_t n = 0;
    uint32_t n_in = 1 + (uint32_t)(rs(g) % 2);
    for (uint32_t i = 0; i < n_in; i++) {
        const struct buf *b = i == 0 && extra ? extra : pick_buf(g, dev, s);
        if (!b)
            break;
        acc[n] = (struct sbt_access){.resource = b->res, .mode = SBT_ACCESS_READ};
        pick_range(g, b, &acc[n].offset, &acc[n].len);
        n++;
    }
    struct buf *out = pick_buf(g, dev, s);
    if (out) {
        acc[n] = (struct sbt_access){.resource = out->res, .mode = SBT_ACCESS_WRITE};
        pick_range(g, out, &acc[n].offset, &acc[n].len);
        n++;
    }
    op.name = k->name;
    op.flags |= SBT_OPF_KERNEL | SBT_OPF_GEOM;
    op.kernel = k->id;
    memcpy(op.grid, k->grid, sizeof op.grid);
    memcpy(op.block, k->block, sizeof op.block);
    op.shmem = k->shmem;
    op.n_access = n;
    op.access = acc;
    /* a stream does not wait for other streams' writers unless told to (an event): ordering
     * is the program's business, and the scheduler's hazard edges show where it relies on it */
    dev_exec(g, &op, 0, jitter(g, k->mean_ns));
    set_digest(g, &op);
    return emit(g, &op);
}

static int gen_kernel(struct gen *g)
{
    uint32_t dev;
    uint32_t s = pick_stream(g, &dev);
    return gen_kernel_on(g, s, dev, NULL);
}

static int gen_copy(struct gen *g, uint32_t dir)
{
    uint32_t dev;
    uint32_t s = pick_stream(g, &dev);
    struct sbt_op op;
    host_op(g, &op, SBT_OP_COPY, s);
    struct buf *a = pick_buf(g, dev, s), *b = pick_buf(g, dev, s);
    if (!a || !b)
        return 0;
    struct sbt_access acc[2];
    uint32_t n = 0;
    uint64_t bytes;
    op.subkind = dir;
    if (dir == SBT_COPY_H2D) {
        uint32_t u = (uint32_t)(rs(g) % N_UPLOADS);
        bytes = g->upload_len[u] < a->size ? g->upload_len[u] : a->size;
        op.flags |= SBT_OPF_BLOB;
        op.blob = g->uploads[u];
        acc[n++] = (struct sbt_access){a->res, 0, bytes, SBT_ACCESS_WRITE};
        op.name = g->s_h2d;
    } else if (dir == SBT_COPY_D2H) {
        uint64_t off;
        pick_range(g, a, &off, &bytes);
        acc[n++] = (struct sbt_access){a->res, off, bytes, SBT_ACCESS_READ};
        op.name = g->s_d2h;
    } else {
        uint64_t off;
        pick_range(g, a, &off, &bytes);
        if (bytes > b->size)
            bytes = b->size;
        acc[n++] = (struct sbt_access){a->res, off, bytes, SBT_ACCESS_READ};
        acc[n++] = (struct sbt_access){b->res, 0, bytes, SBT_ACCESS_WRITE};
        op.name = g->s_d2d;
    }
    op.flags |= SBT_OPF_BYTES;
    op.bytes = bytes;
    op.n_access = n;
    op.access = acc;
    /* ~12 GB/s over PCIe, ~900 GB/s device to device, plus a fixed cost */
    uint64_t dur = 2000 + (dir == SBT_COPY_D2D ? bytes / 900 : bytes / 12);
    dev_exec(g, &op, 0, jitter(g, dur));
    if (dir != SBT_COPY_D2H)
        set_digest(g, &op);
    return emit(g, &op);
}

static int gen_fill(struct gen *g)
{
    uint32_t dev;
    uint32_t s = pick_stream(g, &dev);
    struct sbt_op op;
    host_op(g, &op, SBT_OP_FILL, s);
    struct buf *b = pick_buf(g, dev, s);
    if (!b)
        return 0;
    struct sbt_access acc;
    acc = (struct sbt_access){.resource = b->res, .mode = SBT_ACCESS_WRITE};
    pick_range(g, b, &acc.offset, &acc.len);
    op.name = g->s_fill;
    op.flags |= SBT_OPF_BYTES | SBT_OPF_OBJ;
    op.bytes = acc.len;
    op.value = rs(g) % 3 ? 0 : 0xffffffffu;
    op.n_access = 1;
    op.access = &acc;
    dev_exec(g, &op, 0, jitter(g, 1500 + acc.len / 1500));
    set_digest(g, &op);
    return emit(g, &op);
}

/* Event record on one stream, wait on another (a third of them on another device). */
static int gen_event(struct gen *g)
{
    uint32_t d1, d2;
    uint32_t s1 = pick_stream(g, &d1), s2 = pick_stream(g, &d2);
    if (s1 == s2)
        s2 = 1 + (s2 % (g->o.n_devices * g->o.streams_per_device));
    struct sbt_op op;
    host_op(g, &op, SBT_OP_EVENT_RECORD, s1);
    uint64_t id = ++g->next_event;
    op.name = g->s_rec;
    op.flags |= SBT_OPF_OBJ;
    op.obj = id;
    dev_exec(g, &op, 0, 1);
    uint64_t recorded = op.dev_end;
    int st = emit(g, &op);
    if (st)
        return st;
    host_op(g, &op, SBT_OP_EVENT_WAIT, s2);
    op.name = g->s_wait;
    op.flags |= SBT_OPF_OBJ;
    op.obj = id;
    dev_exec(g, &op, recorded, 1);
    if ((st = emit(g, &op)) || d1 != d2)
        return st;
    /* the consumer: reads what the producer stream wrote */
    return gen_kernel_on(g, s2, d2, pick_buf(g, d1, s1));
}

static int gen_stream_sync(struct gen *g)
{
    uint32_t dev;
    uint32_t s = pick_stream(g, &dev);
    struct sbt_op op;
    host_op(g, &op, SBT_OP_STREAM_SYNC, g->first_host + (uint32_t)(rs(g) % g->o.n_threads));
    op.name = g->s_ssync;
    op.flags |= SBT_OPF_OBJ;
    op.obj = s;
    if (g->free_at[s] > op.host_end)
        op.host_end = g->free_at[s] + 500;
    g->now = op.host_end;
    return emit(g, &op);
}

static int gen_marker(struct gen *g)
{
    struct sbt_op op;
    host_op(g, &op, SBT_OP_MARKER, g->first_host + (uint32_t)(rs(g) % g->o.n_threads));
    op.name = g->s_marker[rs(g) % 4];
    op.host_end = op.host_begin;
    return emit(g, &op);
}

static int setup(struct gen *g)
{
    sbt_writer *w = g->w;
    int st;
    uint32_t id, name, host;
    char buf[96];
    if ((st = sbt_writer_intern(w, "synthetic-host", &host)))
        return st;
    for (uint32_t d = 0; d < g->o.n_devices; d++) {
        struct sbt_device dev = {.api = SBT_API_SYNTH,
                                 .vendor_id = 0x10de,
                                 .device_id = 0x2330,
                                 .timestamp_period_fs = 1000000,
                                 .host = host};
        snprintf(buf, sizeof buf, "Synthetic GPU %u", d);
        if ((st = sbt_writer_intern(w, buf, &dev.name)))
            return st;
        for (int i = 0; i < 16; i++)
            dev.uuid[i] = (uint8_t)(rnd(g) >> 56);
        if ((st = sbt_writer_add_device(w, &dev, &id)))
            return st;
    }
    for (uint32_t d = 0; d < g->o.n_devices; d++)
        for (uint32_t s = 0; s < g->o.streams_per_device; s++) {
            struct sbt_stream str = {.device = d + 1,
                                     .kind = SBT_STREAM_CUDA,
                                     .handle = 0x7f0000001000ull + (d * 64 + s) * 0x100,
                                     .index = s};
            snprintf(buf, sizeof buf, "gpu%u/stream%u", d, s);
            if ((st = sbt_writer_intern(w, buf, &str.name)) ||
                (st = sbt_writer_add_stream(w, &str, &id)))
                return st;
        }
    for (uint32_t t = 0; t < g->o.n_threads; t++) {
        struct sbt_stream str = {.device = 1, .kind = SBT_STREAM_HOST_THREAD, .handle = 1000 + t};
        snprintf(buf, sizeof buf, "host thread %u", t + 1);
        if ((st = sbt_writer_intern(w, buf, &str.name)) ||
            (st = sbt_writer_add_stream(w, &str, &id)))
            return st;
        if (t == 0)
            g->first_host = id;
    }
    struct sbt_program prog = {.kind = SBT_PROGRAM_HOST};
    uint32_t prog_id;
    if ((st = sbt_writer_intern(w, "synthetic.fatbin", &prog.name)) ||
        (st = sbt_writer_add_program(w, &prog, &prog_id)))
        return st;
    for (uint32_t i = 0; i < N_KERNELS; i++) {
        struct kprof *k = &g->k[i];
        if ((st = sbt_writer_intern(w, kernel_names[i], &name)))
            return st;
        struct sbt_kernel kr = {.program = prog_id, .name = name};
        if ((st = sbt_writer_add_kernel(w, &kr, &k->id)))
            return st;
        k->name = name;
        k->grid[0] = (uint32_t)1 << rnd_in(g, 3, 14);
        k->grid[1] = rnd(g) % 3 ? 1 : (uint32_t)rnd_in(g, 1, 64);
        k->grid[2] = 1;
        k->block[0] = (uint32_t)32 << rnd_in(g, 0, 5);
        k->block[1] = k->block[2] = 1;
        k->shmem = rnd(g) % 2 ? 0 : (uint32_t)1024 << rnd_in(g, 0, 7);
        k->mean_ns = (uint64_t)1000 << rnd_in(g, 1, 8); /* 2 us .. 256 us */
    }
    static const char *ops[] = {"cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync",
                                "cuMemsetD32Async",  "cuMemAlloc",        "cuMemFree",
                                "cuEventRecord",     "cuStreamWaitEvent", "cuStreamSynchronize",
                                "cuCtxSynchronize"};
    uint32_t *slots[] = {&g->s_h2d,  &g->s_d2h, &g->s_d2d,  &g->s_fill,  &g->s_alloc,
                         &g->s_free, &g->s_rec, &g->s_wait, &g->s_ssync, &g->s_dsync};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if ((st = sbt_writer_intern(w, ops[i], slots[i])))
            return st;
    static const char *marks[] = {"step", "forward", "backward", "optimizer"};
    for (int i = 0; i < 4; i++)
        if ((st = sbt_writer_intern(w, marks[i], &g->s_marker[i])))
            return st;
    /* upload payloads: a few sizes and contents, stored once and reused */
    for (int u = 0; u < N_UPLOADS; u++) {
        size_t len = (size_t)4096 << (u % 3) * 2; /* 4, 16, 64 KiB */
        uint8_t *p = sbt__malloc(len);
        if (!p)
            return sbt__fail(SBT_ENOMEM, "out of memory");
        for (size_t i = 0; i < len; i += 8) {
            uint64_t v = rnd(g);
            memcpy(p + i, &v, 8);
        }
        st = sbt_writer_blob(w, p, len, &g->uploads[u]);
        sbt__free(p);
        if (st)
            return st;
        g->upload_len[u] = len;
    }
    char seed[32], nops[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)g->o.seed);
    snprintf(nops, sizeof nops, "%llu", (unsigned long long)g->o.n_ops);
    if ((st = sbt_writer_meta(w, "generator", "reprise gen")) ||
        (st = sbt_writer_meta(w, "gen.seed", seed)) || (st = sbt_writer_meta(w, "gen.ops", nops)) ||
        (st = sbt_writer_meta(w, "clock.domain", "synthetic (ns from 0)")))
        return st;
    return SBT_OK;
}

int sbt_gen_write(const char *path, const struct sbt_gen_opts *opts,
                  const struct sbt_writer_opts *wopts, void (*progress)(uint64_t, uint64_t))
{
    struct gen g;
    memset(&g, 0, sizeof g);
    if (opts && opts->sz <= sizeof g.o)
        memcpy(&g.o, opts, opts->sz);
    g.o.sz = sizeof g.o;
    if (!g.o.n_ops)
        g.o.n_ops = 10000;
    if (!g.o.n_devices)
        g.o.n_devices = 2;
    if (!g.o.streams_per_device)
        g.o.streams_per_device = 4;
    if (!g.o.n_threads)
        g.o.n_threads = 2;
    if (g.o.n_devices > 64 || g.o.streams_per_device > 64 || g.o.n_threads > 256)
        return sbt__fail(SBT_EINVAL, "gen: at most 64 devices, 64 streams per device, 256 threads");
    g.rng = g.o.seed ^ 0x5851F42D4C957F2Dull;
    uint32_t n_streams = g.o.n_devices * g.o.streams_per_device + g.o.n_threads;
    g.free_at = sbt__calloc(n_streams + 1, sizeof *g.free_at);
    g.pool = sbt__calloc(g.o.n_devices, sizeof *g.pool);
    g.n_live = sbt__calloc(g.o.n_devices, sizeof *g.n_live);
    int st = SBT_OK;
    if (!g.free_at || !g.pool || !g.n_live) {
        st = sbt__fail(SBT_ENOMEM, "out of memory");
        goto out;
    }
    if ((st = sbt_writer_open(path, wopts, &g.w)) || (st = setup(&g)))
        goto out;
    g.now = 1000000;
    uint64_t target = g.o.n_ops;
    for (uint32_t d = 0; d < g.o.n_devices && !st; d++)
        for (uint32_t i = 0; i < 2 * g.o.streams_per_device && !st && g.emitted + 2 <= target; i++)
            st = gen_alloc(&g, d);
    /* A step of 100..400 ops repeats with fresh timings; 1 op in 32 deviates from it. */
    uint64_t step_len = rnd_in(&g, 100, 400), in_step = step_len;
    g.step_seed = rnd(&g);
    while (!st && g.emitted < target) {
        if (in_step >= step_len) {
            in_step = 0;
            g.srng = g.step_seed;
        }
        g.deviate = rnd(&g) % 32 == 0;
        uint32_t r = (uint32_t)(rs(&g) % 1000);
        uint32_t dev = (uint32_t)(rs(&g) % g.o.n_devices);
        uint64_t before = g.emitted, left = target - g.emitted;
        if (r < 620 || (r >= 890 && r < 930)) {
            st = gen_kernel(&g);
        } else if (r < 700) {
            st = gen_copy(&g, SBT_COPY_H2D);
        } else if (r < 770) {
            st = gen_copy(&g, SBT_COPY_D2H);
        } else if (r < 810) {
            st = gen_copy(&g, SBT_COPY_D2D);
        } else if (r < 850) {
            st = gen_fill(&g);
        } else if (r < 880) {
            if (left >= 3)
                st = gen_event(&g);
        } else if (r < 885) {
            if (g.n_live[dev] < POOL && left >= 2)
                st = gen_alloc(&g, dev);
        } else if (r < 890) {
            if (g.n_live[dev] > 4 && left >= 2)
                st = gen_free(&g, dev);
        } else if (r < 975) {
            st = gen_stream_sync(&g);
        } else {
            st = gen_marker(&g);
        }
        in_step += g.emitted - before;
        if (progress && g.emitted / 1000000 != before / 1000000)
            progress(g.emitted, target);
    }
out:
    if (st)
        sbt_writer_abandon(g.w);
    else
        st = sbt_writer_close(g.w);
    sbt__free(g.free_at);
    sbt__free(g.pool);
    sbt__free(g.n_live);
    return st;
}
