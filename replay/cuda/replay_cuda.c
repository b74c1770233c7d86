/*
 * replay/cuda/replay_cuda.c — the CUDA backend of the replay engine (replay_int.h): replays a
 * Driver-API capture (format/sbt_cuda.h payloads) through a driver loaded at run time with
 * dlopen, so the reprise binary runs where CUDA is absent and says so (REPLAY_ENODEV).
 *
 * The driver is $REPRISE_CUDA_DRIVER when set, else libcuda.so.1 from the loader's path.
 * prepare() loads every program image with cuModuleLoadData and resolves kernels by (program,
 * name). exec() runs one op and waits for it (a synchronous backend: it reports inside exec,
 * so every dependency edge is honoured by construction; concurrency between streams is given
 * up for simplicity). Allocations are recreated where the driver puts them and every device
 * address the capture found in kernel parameters (PTR records) is rewritten to the same
 * (resource, offset) in the replay: relocation. Addresses stored inside device memory are not
 * rewritten (research/cuda.md 2.4: needs VA-identical placement, not done yet). Each op is
 * issued through the same entry point variant as captured (_ptsz/_ptds or legacy). Kernel
 * device times come from a CUDA event pair around the launch (duration), placed at the host
 * time the launch was issued.
 *
 * Nothing from the file reaches the driver unchecked: each op is decoded and validated by
 * sbt_cuda_op_decode (format/sbt_cuda.h; no device needed, fuzzed by
 * tests/fuzz/fuzz_cuda_payload.c) against the trace's tables, the live allocations and the
 * device's limits, and a kernel's recorded parameter layout must equal the one the driver
 * reports for the replayed function before its launches run. A bad value is an op error.
 */
#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sbt_cuda.h"
#include "replay/replay_int.h"

/* ========================================================================================== */
/* The driver                                                                                 */
/* ========================================================================================== */

/* clang-format off */
#define DRV_FNS(X) \
    X(cuInit) \
    X(cuDriverGetVersion) \
    X(cuDeviceGetCount) \
    X(cuDeviceGet) \
    X(cuDeviceGetName) \
    X(cuDevicePrimaryCtxRetain) \
    X(cuDevicePrimaryCtxRelease_v2) \
    X(cuCtxSetCurrent) \
    X(cuCtxSynchronize) \
    X(cuModuleLoadData) \
    X(cuModuleUnload) \
    X(cuModuleGetFunction) \
    X(cuModuleGetGlobal_v2) \
    X(cuMemAlloc_v2) \
    X(cuMemFree_v2) \
    X(cuMemcpyHtoD_v2) \
    X(cuMemcpyDtoH_v2) \
    X(cuStreamCreate) \
    X(cuStreamDestroy_v2) \
    X(cuStreamSynchronize) \
    X(cuStreamSynchronize_ptsz) \
    X(cuStreamWaitEvent) \
    X(cuStreamWaitEvent_ptsz) \
    X(cuEventCreate) \
    X(cuEventDestroy_v2) \
    X(cuEventRecord) \
    X(cuEventRecord_ptsz) \
    X(cuEventSynchronize) \
    X(cuEventElapsedTime) \
    X(cuLaunchKernel) \
    X(cuLaunchKernel_ptsz) \
    X(cuGetErrorName) \
    X(cuDeviceGetAttribute) \
    X(cuDeviceTotalMem_v2) \
    X(cuFuncSetAttribute) \
    X(cuLaunchKernelEx) \
    X(cuLaunchKernelEx_ptsz) \
    X(cuMemcpyHtoDAsync_v2) \
    X(cuMemcpyHtoDAsync_v2_ptsz) \
    X(cuMemcpyDtoDAsync_v2) \
    X(cuMemcpyDtoDAsync_v2_ptsz) \
    X(cuMemsetD8Async) \
    X(cuMemsetD8Async_ptsz) \
    X(cuMemsetD16Async) \
    X(cuMemsetD16Async_ptsz) \
    X(cuMemsetD32Async) \
    X(cuMemsetD32Async_ptsz)
/* clang-format on */

struct drv {
    void *h;
#define X(n) __typeof__(&n) n;
    DRV_FNS(X)
#undef X
    /* optional (driver >= 12.4): checks recorded layouts against the replayed functions */
    __typeof__(&cuFuncGetParamInfo) cuFuncGetParamInfo;
};

static int drv_load(struct drv *d)
{
    memset(d, 0, sizeof *d);
    const char *path = getenv("REPRISE_CUDA_DRIVER");
    if (!path || !*path)
        path = "libcuda.so.1";
    d->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!d->h)
        return replay__fail(REPLAY_ENODEV, "CUDA driver not available: %s", dlerror());
#define X(n)                                                                     \
    if (!(d->n = (__typeof__(&n))dlsym(d->h, #n))) {                             \
        dlclose(d->h);                                                           \
        d->h = NULL;                                                             \
        return replay__fail(REPLAY_ENODEV, "CUDA driver %s lacks %s", path, #n); \
    }
    DRV_FNS(X)
#undef X
    d->cuFuncGetParamInfo = (__typeof__(&cuFuncGetParamInfo))dlsym(d->h, "cuFuncGetParamInfo");
    CUresult r = d->cuInit(0);
    if (r != CUDA_SUCCESS) {
        dlclose(d->h);
        d->h = NULL;
        return replay__fail(REPLAY_ENODEV, "cuInit failed with CUresult %d (no usable GPU)",
                            (int)r);
    }
    return 0;
}

static int cu_fail(const struct drv *d, CUresult r, const char *what)
{
    const char *name = "?";
    if (d->cuGetErrorName)
        d->cuGetErrorName(r, &name);
    return replay__fail(REPLAY_EDEVICE, "%s failed: %s (%d)", what, name ? name : "?", (int)r);
}

#define CU(call, what)                       \
    do {                                     \
        CUresult r_ = (call);                \
        if (r_ != CUDA_SUCCESS)              \
            return cu_fail(&b->d, r_, what); \
    } while (0)

static int cuda_devices(struct replay_device_info *out, uint32_t max)
{
    struct drv d;
    int st = drv_load(&d);
    if (st < 0)
        return st;
    int n = 0, ver = 0;
    d.cuDeviceGetCount(&n);
    d.cuDriverGetVersion(&ver);
    for (int i = 0; i < n && (uint32_t)i < max; i++) {
        struct replay_device_info *o = &out[i];
        memset(o, 0, sizeof *o);
        CUdevice dev = 0;
        d.cuDeviceGet(&dev, i);
        o->api = SBT_API_CUDA;
        o->index = (uint32_t)i;
        d.cuDeviceGetName(o->name, (int)sizeof o->name, dev);
        snprintf(o->driver, sizeof o->driver, "CUDA driver %d.%d", ver / 1000, ver % 1000 / 10);
        o->vendor_id = 0x10de;
        o->api_version = (uint32_t)ver;
        snprintf(o->type, sizeof o->type, "cuda");
    }
    dlclose(d.h);
    if (n == 0)
        return replay__fail(REPLAY_ENODEV, "the CUDA driver reports no device");
    return n;
}

/* ========================================================================================== */
/* State                                                                                      */
/* ========================================================================================== */

struct dev_alloc {
    uint64_t id;
    CUdeviceptr p;
    uint64_t size;
    int owned; /* cuMemAlloc'ed by us (globals are not) */
};

struct kern {
    CUfunction f;
    const char *why; /* why f cannot be launched (NULL when it can) */
};

struct be {
    struct drv d;
    sbt_reader *r;
    struct replay_bk_cb cb;
    /* a perturbed run: poison fills new allocations (replay.h); counted into *ps */
    struct replay_perturb perturb;
    struct replay__pstats *ps;
    CUdevice dev;
    CUcontext ctx;
    CUmodule *mods; /* by program id - 1 */
    uint32_t n_mods;
    struct kern *kerns;              /* by kernel id - 1 */
    struct sbt_cuda_layout *layouts; /* by kernel id - 1: the trace's parameter layouts */
    uint32_t n_kerns;
    struct sbt_cuda_view view; /* what each op is validated against */
    struct dev_alloc *res;     /* sorted by id */
    size_t n_res, cap_res;
    CUstream *streams; /* by sbt stream id - 1: created streams, else NULL */
    uint8_t *stream_made;
    uint32_t n_streams;
    CUevent *events; /* by event id */
    uint32_t n_events;
};

static struct dev_alloc *res_get(struct be *b, uint64_t id)
{
    size_t lo = 0, hi = b->n_res;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (b->res[mid].id == id)
            return &b->res[mid];
        if (b->res[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int res_add(struct be *b, uint64_t id, CUdeviceptr p, uint64_t size, int owned)
{
    if (b->n_res == b->cap_res) {
        size_t cap = b->cap_res ? b->cap_res * 2 : 64;
        struct dev_alloc *n = realloc(b->res, cap * sizeof *n);
        if (!n)
            return replay__fail(SBT_ENOMEM, "out of memory");
        b->res = n, b->cap_res = cap;
    }
    size_t i = b->n_res;
    while (i > 0 && b->res[i - 1].id > id)
        i--;
    memmove(&b->res[i + 1], &b->res[i], (b->n_res - i) * sizeof *b->res);
    b->res[i] = (struct dev_alloc){id, p, size, owned};
    b->n_res++;
    return 0;
}

/* Device address of (resource, offset, len), checked against the allocation. */
static int addr(struct be *b, uint64_t res, uint64_t off, uint64_t len, CUdeviceptr *out)
{
    struct dev_alloc *r = res_get(b, res);
    if (!r)
        return replay__fail(SBT_EINVAL, "resource %llu was never allocated",
                            (unsigned long long)res);
    if (off > r->size || len > r->size - off)
        return replay__fail(SBT_ECORRUPT, "range %llu+%llu outside resource %llu (%llu bytes)",
                            (unsigned long long)off, (unsigned long long)len,
                            (unsigned long long)res, (unsigned long long)r->size);
    *out = r->p + off;
    return 0;
}

static int res_live(void *ctx, uint64_t id, uint64_t *size)
{
    struct dev_alloc *r = res_get(ctx, id);
    if (r)
        *size = r->size;
    return r != NULL;
}

/* The CUstream to replay an op of sbt stream id on: created streams by id; the legacy stream
 * is NULL and a per-thread default stream is CU_STREAM_PER_THREAD. */
static int stream_for(struct be *b, uint32_t id, CUstream *out)
{
    *out = NULL;
    const struct sbt_stream *s = sbt_reader_stream(b->r, id);
    if (!s || s->kind != SBT_STREAM_CUDA)
        return 0;
    uint64_t origin = SBT_CUDA_STREAM_CREATED;
    struct sbt_payload_dec d;
    struct sbt_payload_rec rec;
    if (s->ext.kind == SBT_CUDA_EXT_STREAM &&
        sbt_payload_find(&d, s->ext.data, s->ext.len, SBT_CUDA_STREAM, &rec) == 1)
        origin = sbt_payload_arg(&rec, 0);
    if (s->ext.kind == SBT_CUDA_EXT_STREAM)
        sbt_payload_dec_free(&d);
    if (origin == SBT_CUDA_STREAM_LEGACY)
        return 0;
    if (origin == SBT_CUDA_STREAM_PER_THREAD) {
        *out = CU_STREAM_PER_THREAD;
        return 0;
    }
    if (id > b->n_streams)
        return replay__fail(SBT_EINVAL, "stream %u is not in the trace", id);
    if (!b->stream_made[id - 1]) {
        CU(b->d.cuStreamCreate(&b->streams[id - 1], (unsigned)s->family), "cuStreamCreate");
        b->stream_made[id - 1] = 1;
    }
    *out = b->streams[id - 1];
    return 0;
}

static int event_for(struct be *b, uint64_t id, CUevent *out)
{
    if (id == 0 || id > (1u << 24))
        return replay__fail(SBT_ECORRUPT, "event id %llu out of range", (unsigned long long)id);
    if (id >= b->n_events) {
        uint32_t n = (uint32_t)id * 2;
        CUevent *e = realloc(b->events, n * sizeof *e);
        if (!e)
            return replay__fail(SBT_ENOMEM, "out of memory");
        memset(e + b->n_events, 0, (n - b->n_events) * sizeof *e);
        b->events = e, b->n_events = n;
    }
    if (!b->events[id])
        CU(b->d.cuEventCreate(&b->events[id], CU_EVENT_DEFAULT), "cuEventCreate");
    *out = b->events[id];
    return 0;
}

/* ========================================================================================== */
/* Backend entry points                                                                       */
/* ========================================================================================== */

static void cuda_close(void *p);

static int cuda_open(sbt_reader *r, const struct replay_bk_opts *o, const struct replay_bk_cb *cb,
                     struct replay_device_info *info, void **out)
{
    *out = NULL;
    struct be *b = calloc(1, sizeof *b);
    if (!b)
        return replay__fail(SBT_ENOMEM, "out of memory");
    int st = drv_load(&b->d);
    if (st < 0) {
        free(b);
        return st;
    }
    b->r = r;
    b->cb = *cb;
    b->perturb = o->perturb;
    b->ps = o->pstats;
    int n = 0, ver = 0;
    b->d.cuDeviceGetCount(&n);
    b->d.cuDriverGetVersion(&ver);
    if ((int)o->device >= n) {
        cuda_close(b);
        return replay__fail(REPLAY_ENODEV, "--device %u: the CUDA driver reports %d device(s)",
                            o->device, n);
    }
    CUresult cr;
    if ((cr = b->d.cuDeviceGet(&b->dev, (int)o->device)) != CUDA_SUCCESS ||
        (cr = b->d.cuDevicePrimaryCtxRetain(&b->ctx, b->dev)) != CUDA_SUCCESS ||
        (cr = b->d.cuCtxSetCurrent(b->ctx)) != CUDA_SUCCESS) {
        cuda_close(b);
        return replay__fail(REPLAY_ENODEV, "cannot open CUDA device %u: CUresult %d", o->device,
                            (int)cr);
    }
    memset(info, 0, sizeof *info);
    info->api = SBT_API_CUDA;
    info->index = o->device;
    b->d.cuDeviceGetName(info->name, (int)sizeof info->name, b->dev);
    snprintf(info->driver, sizeof info->driver, "CUDA driver %d.%d", ver / 1000, ver % 1000 / 10);
    info->vendor_id = 0x10de;
    info->api_version = (uint32_t)ver;
    snprintf(info->type, sizeof info->type, "cuda");
    sbt_reader_streams(r, &b->n_streams);
    /* the limits ops are checked against; 0 (an attribute the driver does not answer) means
     * unknown, and sbt_cuda_op_decode then assumes the CUDA maxima */
    static const CUdevice_attribute lim_attr[8] = {
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    };
    uint32_t *lim_val[8] = {&b->view.lim.max_grid[0],  &b->view.lim.max_grid[1],
                            &b->view.lim.max_grid[2],  &b->view.lim.max_block[0],
                            &b->view.lim.max_block[1], &b->view.lim.max_block[2],
                            &b->view.lim.max_threads,  &b->view.lim.max_shmem};
    for (int i = 0; i < 8; i++) {
        int v = 0;
        if (b->d.cuDeviceGetAttribute(&v, lim_attr[i], b->dev) == CUDA_SUCCESS && v > 0)
            *lim_val[i] = (uint32_t)v;
    }
    size_t mem = 0;
    if (b->d.cuDeviceTotalMem_v2(&mem, b->dev) == CUDA_SUCCESS)
        b->view.lim.max_alloc = mem;
    b->view.n_streams = b->n_streams;
    b->view.resource = res_live;
    b->view.ctx = b;
    b->streams = calloc(b->n_streams + 1, sizeof *b->streams);
    b->stream_made = calloc(b->n_streams + 1, 1);
    if (!b->streams || !b->stream_made) {
        cuda_close(b);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    *out = b;
    return 0;
}

/* The kernel's layout as the driver reports it for f equals the trace's: otherwise the driver
 * would read parameters at offsets the packed buffer does not have. */
static const char *layout_mismatch(const struct drv *d, CUfunction f,
                                   const struct sbt_cuda_layout *l)
{
    if (!d->cuFuncGetParamInfo || !l->known)
        return NULL; /* a launch with kernelParams then fails: the trace has no layout */
    for (uint32_t i = 0; i <= l->n_params && i < SBT_CUDA_MAX_PARAMS; i++) {
        size_t off = 0, size = 0;
        CUresult r = d->cuFuncGetParamInfo(f, i, &off, &size);
        if (i == l->n_params)
            return r == CUDA_SUCCESS ? "the replayed kernel has more parameters than the trace's"
                                     : NULL;
        if (r == CUDA_ERROR_INVALID_VALUE)
            return "the replayed kernel has fewer parameters than the trace's";
        if (r != CUDA_SUCCESS)
            return NULL; /* the driver cannot say: nothing to compare */
        if (off != l->off[i] || size != l->size[i])
            return "the replayed kernel's parameter layout differs from the trace's";
    }
    return NULL;
}

static int cuda_prepare(void *p)
{
    struct be *b = p;
    const struct sbt_program *progs = sbt_reader_programs(b->r, &b->n_mods);
    const struct sbt_kernel *ks = sbt_reader_kernels(b->r, &b->n_kerns);
    b->mods = calloc(b->n_mods + 1, sizeof *b->mods);
    b->kerns = calloc(b->n_kerns + 1, sizeof *b->kerns);
    b->layouts = calloc(b->n_kerns + 1, sizeof *b->layouts);
    if (!b->mods || !b->kerns || !b->layouts)
        return replay__fail(SBT_ENOMEM, "out of memory");
    b->view.kernels = b->layouts;
    b->view.n_kernels = b->n_kerns;
    b->view.n_programs = b->n_mods;
    for (uint32_t i = 0; i < b->n_mods; i++) {
        void *img = NULL;
        size_t len = 0;
        uint32_t kind;
        if (sbt_hash_is_zero(progs[i].blob) || sbt_reader_blob(b->r, &progs[i].blob, &img, &len))
            continue; /* the first launch of one of its kernels fails */
        /* cuModuleLoadData takes no length: the image must end inside the blob */
        if (sbt_cuda_image_size_in(img, len, &kind) == 0 ||
            b->d.cuModuleLoadData(&b->mods[i], img) != CUDA_SUCCESS)
            b->mods[i] = NULL;
        free(img);
    }
    for (uint32_t i = 0; i < b->n_kerns; i++) {
        const struct sbt_kernel *k = &ks[i];
        struct kern *kk = &b->kerns[i];
        const char *name = sbt_reader_string(b->r, k->name);
        if (sbt_cuda_layout_decode(k, &b->layouts[i]) < 0) {
            kk->why = "its parameter layout in the trace is corrupt";
            continue;
        }
        if (!k->program || k->program > b->n_mods || !b->mods[k->program - 1] || !name) {
            kk->why = "its program is not a complete image, or the driver refused it";
            continue;
        }
        if (b->d.cuModuleGetFunction(&kk->f, b->mods[k->program - 1], name) != CUDA_SUCCESS) {
            kk->f = NULL;
            kk->why = "the driver does not find it in its program";
            continue;
        }
        kk->why = layout_mismatch(&b->d, kk->f, &b->layouts[i]);
    }
    return 0;
}

/* Reports op completion, with the bytes of the accesses the engine asked for. */
static int report(struct be *b, const struct replay_x *x, int has_time, uint64_t t0, uint64_t t1)
{
    const struct sbt_op *op = x->node->op;
    struct replay_done d = {x->slot, has_time, t0, t1, 0, NULL, NULL};
    int want_w = x->flags & REPLAY_X_OUTPUTS;
    int want_r = x->flags & REPLAY_X_READ;
    void **bytes = NULL;
    uint64_t *len = NULL;
    int st = 0;
    if ((want_w || want_r) && op->n_access) {
        bytes = calloc(op->n_access, sizeof *bytes);
        len = calloc(op->n_access, sizeof *len);
        if (!bytes || !len) {
            st = replay__fail(SBT_ENOMEM, "out of memory");
            goto out;
        }
        b->d.cuCtxSynchronize();
        for (uint32_t i = 0; i < op->n_access; i++) {
            const struct sbt_access *a = &op->access[i];
            int w = a->mode & SBT_ACCESS_WRITE, rd = a->mode & SBT_ACCESS_READ;
            if (!((want_w && w) || (want_r && rd && op->kind == SBT_OP_HOST_READ)))
                continue;
            CUdeviceptr p;
            if ((st = addr(b, a->resource, a->offset, a->len, &p)) < 0)
                goto out;
            if (!(bytes[i] = malloc(a->len ? a->len : 1))) {
                st = replay__fail(SBT_ENOMEM, "out of memory");
                goto out;
            }
            CUresult r = b->d.cuMemcpyDtoH_v2(bytes[i], p, a->len);
            if (r != CUDA_SUCCESS) {
                st = cu_fail(&b->d, r, "reading back an op's bytes");
                goto out;
            }
            len[i] = a->len;
        }
        d.n_access = op->n_access;
        d.bytes = (const void *const *)bytes;
        d.len = len;
    }
    b->cb.done(b->cb.eng, &d);
out:
    for (uint32_t i = 0; bytes && i < op->n_access; i++)
        free(bytes[i]);
    free(bytes);
    free(len);
    return st;
}

static int exec_launch(struct be *b, const struct replay_x *x, const struct sbt_cuda_op *o,
                       CUstream s)
{
    const struct sbt_op *op = x->node->op;
    struct kern *k = &b->kerns[op->kernel - 1]; /* decode checked the id */
    const struct sbt_cuda_layout *l = &b->layouts[op->kernel - 1];
    if (!k->f || k->why)
        return replay__fail(REPLAY_EUNSUPPORTED, "kernel %s cannot be launched: %s",
                            sbt_reader_string(b->r, sbt_reader_kernel(b->r, op->kernel)->name),
                            k->why ? k->why : "not loaded");
    /* relocation: each recorded device address becomes the replay address of its byte */
    for (uint32_t i = 0; i < o->n_relocs; i++) {
        CUdeviceptr p;
        int st = addr(b, o->relocs[i].resource, o->relocs[i].res_off, 0, &p);
        if (st < 0)
            return st;
        uint64_t v = p;
        memcpy(o->params + o->relocs[i].off, &v, 8);
    }
    void **params = NULL, *extra[5];
    size_t blen = o->param_len;
    if (o->form == 1) {
        extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER, extra[1] = o->params;
        extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE, extra[3] = &blen, extra[4] = CU_LAUNCH_PARAM_END;
    } else {
        if (!(params = calloc(l->n_params + 1, sizeof *params)))
            return replay__fail(SBT_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < l->n_params; i++) /* decode checked off + size <= param_len */
            params[i] = o->params + l->off[i];
    }
    int timed = !(x->flags & REPLAY_X_UNTIMED);
    CUevent e0 = NULL, e1 = NULL;
    if (timed &&
        (b->d.cuEventCreate(&e0, 0) != CUDA_SUCCESS || b->d.cuEventCreate(&e1, 0) != CUDA_SUCCESS))
        timed = 0;
    /* the function attributes the program had set (the dynamic shared memory limit, ...):
     * set again before every launch, since another launch of the same function may have
     * different ones (the program may change them between launches) */
    CUresult r = CUDA_SUCCESS;
    for (uint32_t i = 0; i < o->n_fattr && r == CUDA_SUCCESS; i++)
        if ((r = b->d.cuFuncSetAttribute(k->f, (CUfunction_attribute)o->fattr[i].id,
                                         o->fattr[i].value)) != CUDA_SUCCESS) {
            free(params);
            if (e0)
                b->d.cuEventDestroy_v2(e0);
            if (e1)
                b->d.cuEventDestroy_v2(e1);
            char what[80];
            snprintf(what, sizeof what, "cuFuncSetAttribute(attribute %u, %d)", o->fattr[i].id,
                     o->fattr[i].value);
            return cu_fail(&b->d, r, what);
        }
    /* launch attributes (cluster shape, cooperative, priority, ...): through cuLaunchKernelEx */
    _Static_assert(sizeof(CUlaunchAttributeValue) == 64, "a 64-byte attribute value");
    CUlaunchAttribute la[SBT_CUDA_MAX_ATTRS];
    memset(la, 0, sizeof la);
    for (uint32_t i = 0; i < o->n_lattr; i++) {
        la[i].id = (CUlaunchAttributeID)o->lattr[i].id;
        memcpy(&la[i].value, o->lattr[i].value, sizeof la[i].value);
    }
    CUlaunchConfig cfg = {op->grid[0],  op->grid[1], op->grid[2], op->block[0], op->block[1],
                          op->block[2], op->shmem,   s,           la,           o->n_lattr};
    __typeof__(&cuEventRecord) record = o->pt ? b->d.cuEventRecord_ptsz : b->d.cuEventRecord;
    __typeof__(&cuLaunchKernel) launch = o->pt ? b->d.cuLaunchKernel_ptsz : b->d.cuLaunchKernel;
    __typeof__(&cuLaunchKernelEx) launch_ex =
        o->pt ? b->d.cuLaunchKernelEx_ptsz : b->d.cuLaunchKernelEx;
    uint64_t t0 = replay__now_ns();
    if (timed)
        record(e0, s);
    if (o->n_lattr)
        r = launch_ex(&cfg, k->f, o->form == 1 ? NULL : params, o->form == 1 ? extra : NULL);
    else
        r = launch(k->f, op->grid[0], op->grid[1], op->grid[2], op->block[0], op->block[1],
                   op->block[2], op->shmem, s, o->form == 1 ? NULL : params,
                   o->form == 1 ? extra : NULL);
    if (timed)
        record(e1, s);
    if (r == CUDA_SUCCESS)
        r = (o->pt ? b->d.cuStreamSynchronize_ptsz : b->d.cuStreamSynchronize)(s);
    float ms = 0;
    int has_time = timed && r == CUDA_SUCCESS &&
                   b->d.cuEventElapsedTime(&ms, e0, e1) == CUDA_SUCCESS && ms >= 0;
    if (e0)
        b->d.cuEventDestroy_v2(e0);
    if (e1)
        b->d.cuEventDestroy_v2(e1);
    free(params);
    if (r != CUDA_SUCCESS) /* the driver under test refused or failed what it once ran */
        return cu_fail(&b->d, r, o->n_lattr ? "cuLaunchKernelEx" : "cuLaunchKernel");
    return report(b, x, has_time, t0, t0 + (uint64_t)((double)ms * 1e6));
}

/* One decoded, validated op. */
static int exec_op(struct be *b, const struct replay_x *x, const struct sbt_cuda_op *o, CUstream s)
{
    const struct sbt_op *op = x->node->op;
    CUdeviceptr dst = 0, src = 0;
    int st;
    switch (op->kind) {
    case SBT_OP_ALLOC: {
        CUdeviceptr a = 0;
        size_t size = 0;
        if (o->origin == SBT_CUDA_ALLOC_GLOBAL) {
            if (!b->mods[o->program - 1])
                return replay__fail(REPLAY_EUNSUPPORTED, "global %s of an unloaded module",
                                    o->name);
            CU(b->d.cuModuleGetGlobal_v2(&a, &size, b->mods[o->program - 1], o->name),
               "cuModuleGetGlobal");
            if (size < op->bytes)
                return replay__fail(SBT_ECORRUPT, "global %s has %zu bytes, the trace %llu",
                                    o->name, size, (unsigned long long)op->bytes);
            st = res_add(b, op->resource, a, op->bytes, 0);
        } else { /* cuMemAlloc, pools, pitch, VMM mappings: memory of the same size */
            CU(b->d.cuMemAlloc_v2(&a, o->size), "cuMemAlloc");
            st = res_add(b, op->resource, a, op->bytes, 1);
            if (st == 0 && b->perturb.kind == REPLAY_PERTURB_POISON && o->size) {
                /* the pattern instead of what the driver left there; the trailing bytes of a
                 * size that is no multiple of 4 get its low bytes */
                uint32_t w = replay_perturb_poison_word(b->perturb.seed);
                size_t nw = o->size / 4, tail = o->size % 4;
                CUresult r =
                    nw ? (o->pt ? b->d.cuMemsetD32Async_ptsz : b->d.cuMemsetD32Async)(a, w, nw, s)
                       : CUDA_SUCCESS;
                if (r == CUDA_SUCCESS && tail)
                    r = (o->pt ? b->d.cuMemsetD8Async_ptsz
                               : b->d.cuMemsetD8Async)(a + nw * 4, (unsigned char)w, tail, s);
                if (r == CUDA_SUCCESS)
                    r = (o->pt ? b->d.cuStreamSynchronize_ptsz : b->d.cuStreamSynchronize)(s);
                if (r != CUDA_SUCCESS)
                    return cu_fail(&b->d, r, "poisoning an allocation (cuMemsetD32Async)");
                if (b->ps) {
                    b->ps->poisoned_allocs++;
                    b->ps->poisoned_bytes += o->size;
                }
            }
        }
        return st < 0 ? st : report(b, x, 0, 0, 0);
    }
    case SBT_OP_FREE: {
        struct dev_alloc *r = res_get(b, op->resource);
        if (r->owned)
            CU(b->d.cuMemFree_v2(r->p), "cuMemFree");
        size_t i = (size_t)(r - b->res);
        memmove(r, r + 1, (b->n_res - i - 1) * sizeof *r);
        b->n_res--;
        return report(b, x, 0, 0, 0);
    }
    case SBT_OP_COPY: {
        if ((o->dst && (st = addr(b, o->dst->resource, o->dst->offset, o->dst->len, &dst)) < 0) ||
            (o->src && (st = addr(b, o->src->resource, o->src->offset, o->src->len, &src)) < 0))
            return st;
        if (op->subkind == SBT_COPY_H2D) {
            void *data = NULL;
            size_t len = 0;
            if ((st = sbt_reader_blob(b->r, &op->blob, &data, &len)) < 0)
                return replay__fail(st, "copy data: %s", sbt_errmsg());
            if (len != o->dst->len) {
                free(data);
                return replay__fail(SBT_ECORRUPT, "copy data of %zu bytes for a %llu-byte copy",
                                    len, (unsigned long long)o->dst->len);
            }
            CUresult r = (o->pt ? b->d.cuMemcpyHtoDAsync_v2_ptsz
                                : b->d.cuMemcpyHtoDAsync_v2)(dst, data, len, s);
            if (r == CUDA_SUCCESS) /* data is freed below */
                r = (o->pt ? b->d.cuStreamSynchronize_ptsz : b->d.cuStreamSynchronize)(s);
            free(data);
            CU(r, "cuMemcpyHtoDAsync");
        } else if (op->subkind == SBT_COPY_D2D) {
            CU((o->pt ? b->d.cuMemcpyDtoDAsync_v2_ptsz : b->d.cuMemcpyDtoDAsync_v2)(dst, src,
                                                                                    o->src->len, s),
               "cuMemcpyDtoDAsync");
            CU((o->pt ? b->d.cuStreamSynchronize_ptsz : b->d.cuStreamSynchronize)(s),
               "cuStreamSynchronize");
        } /* D2H: checked at the HOST_READ that follows; H2H: nothing for the device */
        return report(b, x, 0, 0, 0);
    }
    case SBT_OP_FILL: {
        /* on the stream it was captured on, as the program ordered it (a fill through the
         * "synchronous" cuMemsetD* runs on the legacy stream, which is s then) */
        if ((st = addr(b, o->dst->resource, o->dst->offset, o->dst->len, &dst)) < 0)
            return st;
        size_t n = (size_t)o->count; /* count * elem == dst->len, inside the resource */
        CUresult r = o->elem == 4 ? (o->pt ? b->d.cuMemsetD32Async_ptsz
                                           : b->d.cuMemsetD32Async)(dst, (unsigned)op->value, n, s)
                     : o->elem == 2
                         ? (o->pt ? b->d.cuMemsetD16Async_ptsz
                                  : b->d.cuMemsetD16Async)(dst, (unsigned short)op->value, n, s)
                         : (o->pt ? b->d.cuMemsetD8Async_ptsz
                                  : b->d.cuMemsetD8Async)(dst, (unsigned char)op->value, n, s);
        CU(r, "cuMemsetAsync");
        CU((o->pt ? b->d.cuStreamSynchronize_ptsz : b->d.cuStreamSynchronize)(s),
           "cuStreamSynchronize");
        return report(b, x, 0, 0, 0);
    }
    case SBT_OP_KERNEL:
        return exec_launch(b, x, o, s);
    case SBT_OP_EVENT_RECORD: {
        CUevent e;
        if ((st = event_for(b, op->obj, &e)) < 0)
            return st;
        CU((o->pt ? b->d.cuEventRecord_ptsz : b->d.cuEventRecord)(e, s), "cuEventRecord");
        return report(b, x, 0, 0, 0);
    }
    case SBT_OP_EVENT_WAIT: {
        CUevent e;
        if ((st = event_for(b, op->obj, &e)) < 0)
            return st;
        const struct sbt_stream *ss = sbt_reader_stream(b->r, op->stream);
        if (ss && ss->kind == SBT_STREAM_HOST_THREAD)
            CU(b->d.cuEventSynchronize(e), "cuEventSynchronize");
        else
            CU((o->pt ? b->d.cuStreamWaitEvent_ptsz : b->d.cuStreamWaitEvent)(s, e, 0),
               "cuStreamWaitEvent");
        return report(b, x, 0, 0, 0);
    }
    case SBT_OP_STREAM_SYNC: {
        CUstream t;
        if ((st = stream_for(b, (uint32_t)op->obj, &t)) < 0)
            return st;
        CU((o->pt ? b->d.cuStreamSynchronize_ptsz : b->d.cuStreamSynchronize)(t),
           "cuStreamSynchronize");
        return report(b, x, 0, 0, 0);
    }
    case SBT_OP_DEVICE_SYNC:
        CU(b->d.cuCtxSynchronize(), "cuCtxSynchronize");
        return report(b, x, 0, 0, 0);
    case SBT_OP_STREAM_CREATE: {
        CUstream t;
        return (st = stream_for(b, (uint32_t)op->obj, &t)) < 0 ? st : report(b, x, 0, 0, 0);
    }
    case SBT_OP_STREAM_DESTROY:
        if (b->stream_made[op->obj - 1]) {
            b->d.cuStreamSynchronize(b->streams[op->obj - 1]);
            b->d.cuStreamDestroy_v2(b->streams[op->obj - 1]);
            b->stream_made[op->obj - 1] = 0;
        }
        return report(b, x, 0, 0, 0);
    case SBT_OP_HOST_READ:
    case SBT_OP_MARKER:
        return report(b, x, 0, 0, 0);
    default:
        return replay__fail(REPLAY_EUNSUPPORTED, "%s ops are not part of a CUDA trace",
                            sbt_op_kind_name(op->kind));
    }
}

static int cuda_exec(void *p, const struct replay_x *x)
{
    struct be *b = p;
    const struct sbt_op *op = x->node->op;
    if (op->flags & SBT_OPF_UNSUPPORTED)
        return replay__fail(REPLAY_EUNSUPPORTED, "the capture could not record this %s fully",
                            sbt_op_kind_name(op->kind));
    struct sbt_cuda_op o;
    int st = sbt_cuda_op_decode(&b->view, op, &o);
    if (st < 0) /* past this device's limits: the environment's fault, not the trace's */
        return replay__fail(st == SBT_ELIMIT ? REPLAY_ENODEV : st, "%s", sbt_errmsg());
    CUstream s = NULL;
    if ((st = stream_for(b, op->stream, &s)) == 0)
        st = exec_op(b, x, &o, s);
    sbt_cuda_op_free(&o);
    return st;
}

static int cuda_drain(void *p)
{
    struct be *b = p;
    CU(b->d.cuCtxSynchronize(), "cuCtxSynchronize");
    return 0;
}

static int cuda_read(void *p, uint64_t resource, uint64_t off, uint64_t len, void *dst)
{
    struct be *b = p;
    CUdeviceptr a;
    int st = addr(b, resource, off, len, &a);
    if (st < 0)
        return st;
    CU(b->d.cuMemcpyDtoH_v2(dst, a, len), "cuMemcpyDtoH");
    return 0;
}

static int cuda_write(void *p, uint64_t resource, uint64_t off, uint64_t len, const void *src)
{
    struct be *b = p;
    CUdeviceptr a;
    int st = addr(b, resource, off, len, &a);
    if (st < 0)
        return st;
    CU(b->d.cuMemcpyHtoD_v2(a, src, len), "cuMemcpyHtoD (restoring memory)");
    return 0;
}

/* Markers are annotations here (the CUDA backend only reports them): not needed before a
 * range. */
static int cuda_state_op(const struct sbt_op *op)
{
    return op->kind != SBT_OP_MARKER;
}

static void cuda_reset(void *p)
{
    struct be *b = p;
    b->d.cuCtxSynchronize();
    for (size_t i = 0; i < b->n_res; i++)
        if (b->res[i].owned)
            b->d.cuMemFree_v2(b->res[i].p);
    b->n_res = 0;
    for (uint32_t i = 0; i < b->n_streams; i++)
        if (b->stream_made[i]) {
            b->d.cuStreamDestroy_v2(b->streams[i]);
            b->stream_made[i] = 0;
        }
    for (uint32_t i = 0; i < b->n_events; i++)
        if (b->events[i]) {
            b->d.cuEventDestroy_v2(b->events[i]);
            b->events[i] = NULL;
        }
    for (uint32_t i = 0; b->mods && i < b->n_mods; i++)
        if (b->mods[i])
            b->d.cuModuleUnload(b->mods[i]);
    for (uint32_t i = 0; b->layouts && i < b->n_kerns; i++)
        sbt_cuda_layout_free(&b->layouts[i]);
    free(b->mods);
    free(b->kerns);
    free(b->layouts);
    b->mods = NULL, b->kerns = NULL, b->layouts = NULL;
    b->view.kernels = NULL, b->view.n_kernels = 0, b->view.n_programs = 0;
}

static void cuda_close(void *p)
{
    struct be *b = p;
    if (!b)
        return;
    if (b->d.h) {
        cuda_reset(b);
        if (b->ctx)
            b->d.cuDevicePrimaryCtxRelease_v2(b->dev);
        dlclose(b->d.h);
    }
    free(b->res);
    free(b->streams);
    free(b->stream_made);
    free(b->events);
    free(b);
}

const struct replay_backend replay__cuda_backend = {
    .name = "cuda",
    .api = SBT_API_CUDA,
    .devices = cuda_devices,
    .open = cuda_open,
    .prepare = cuda_prepare,
    .exec = cuda_exec,
    .drain = cuda_drain,
    .read = cuda_read,
    .write = cuda_write,
    .state_op = cuda_state_op,
    .reset = cuda_reset,
    .close = cuda_close,
};
