/*
 * tests/cuda/fake_cuda.c — a test-only fake CUDA driver (libcuda.so.1 ABI) with no GPU behind
 * it: device memory is host memory at a configurable base, "kernels" are host functions found
 * by name in fake module images, streams run each op as it is enqueued, events carry host
 * timestamps. It implements the entry points the shim wraps and the test programs and the
 * replay backend call, answers cuGetProcAddress_v2 by (name, version, flags) the way the real
 * driver does (the version tables of cudaTypedefs.h for those names), and returns a dummy
 * private table from cuGetExportTable. Every other stub symbol is a weak 801 stub
 * (fake_stubs.c). Built with -Bsymbolic so that the addresses it hands out are its own even
 * when the shim exports the same names. Never installed. See fake_cuda.h for the contract.
 */
#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "tests/cuda/fake_cuda.h"

/* ========================================================================================== */
/* Device memory                                                                              */
/* ========================================================================================== */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *heap;
static uint64_t heap_base, heap_size, heap_top;
static int inited;

static CUresult init_heap(void)
{
    if (heap)
        return CUDA_SUCCESS;
    const char *b = getenv("FAKE_CUDA_BASE"), *s = getenv("FAKE_CUDA_HEAP");
    heap_base = b && *b ? strtoull(b, NULL, 16) : 0x7e0000000000ull;
    heap_size = s && *s ? strtoull(s, NULL, 0) : 64ull << 20;
    void *p = mmap((void *)(uintptr_t)heap_base, heap_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED || (uint64_t)(uintptr_t)p != heap_base) {
        if (p != MAP_FAILED)
            munmap(p, heap_size);
        fprintf(stderr, "fake libcuda: cannot map the device heap at 0x%llx\n",
                (unsigned long long)heap_base);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    heap = p;
    heap_top = 0;
    return CUDA_SUCCESS;
}

static int dev_ok(CUdeviceptr p, uint64_t n)
{
    return heap && p >= heap_base && p - heap_base <= heap_size && n <= heap_size - (p - heap_base);
}

static void *dev(CUdeviceptr p)
{
    return (void *)(uintptr_t)p;
}

/* ========================================================================================== */
/* Init, devices, contexts                                                                    */
/* ========================================================================================== */

struct CUctx_st {
    int magic;
};
static struct CUctx_st the_ctx = {0xc7c7};
static _Thread_local CUcontext current;

CUresult cuInit(unsigned int Flags)
{
    (void)Flags;
    pthread_mutex_lock(&mu);
    CUresult r = init_heap();
    inited = r == CUDA_SUCCESS;
    pthread_mutex_unlock(&mu);
    return r;
}

#define NEED_INIT()                            \
    do {                                       \
        if (!inited)                           \
            return CUDA_ERROR_NOT_INITIALIZED; \
    } while (0)

CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    NEED_INIT();
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    NEED_INIT();
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    NEED_INIT();
    if (d != 0 || !name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "reprise fake CUDA device");
    return CUDA_SUCCESS;
}

static CUresult uuid(CUuuid *u, CUdevice d)
{
    NEED_INIT();
    if (d != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    memcpy(u->bytes, "reprise-fakecuda", 16);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d)
{
    return uuid(u, d);
}

CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
    return uuid(u, d);
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute a, CUdevice d)
{
    NEED_INIT();
    if (d != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *pi = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? 9
          : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? 0
          : a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT     ? 4
                                                              : 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    NEED_INIT();
    (void)d;
    *bytes = heap_size;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d)
{
    NEED_INIT();
    if (d != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *pctx = &the_ctx;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice d)
{
    (void)flags;
    CUresult r = cuDevicePrimaryCtxRetain(pctx, d);
    if (r == CUDA_SUCCESS)
        current = *pctx;
    return r;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *p, unsigned int flags, CUdevice d)
{
    (void)p;
    return cuCtxCreate_v2(pctx, flags, d);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    (void)ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    current = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    *pctx = current;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *d)
{
    NEED_INIT();
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    *d = 0;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    NEED_INIT();
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    (void)ctx;
    return cuCtxSynchronize();
}

CUresult cuGetErrorString(CUresult e, const char **s)
{
    *s = e == CUDA_SUCCESS ? "no error" : "fake driver error";
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult e, const char **s)
{
    *s = e == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

/* ========================================================================================== */
/* Kernels                                                                                    */
/* ========================================================================================== */

struct launch {
    const uint8_t *p; /* packed parameters */
    uint64_t n;       /* threads: grid.x * block.x */
};

static uint64_t min_n(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static void rd(const struct launch *l, uint32_t off, void *v, size_t n)
{
    memcpy(v, l->p + off, n);
}

static CUresult k_saxpy(const struct launch *l)
{
    float a;
    CUdeviceptr x, y;
    unsigned n;
    rd(l, 0, &a, 4), rd(l, 8, &x, 8), rd(l, 16, &y, 8), rd(l, 24, &n, 4);
    uint64_t m = min_n(n, l->n);
    if (!dev_ok(x, m * 4) || !dev_ok(y, m * 4))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    const float *xs = dev(x);
    float *ys = dev(y);
    for (uint64_t i = 0; i < m; i++)
        ys[i] = a * xs[i] + ys[i];
    return CUDA_SUCCESS;
}

static CUresult k_iota(const struct launch *l)
{
    CUdeviceptr o;
    unsigned n, start;
    rd(l, 0, &o, 8), rd(l, 8, &n, 4), rd(l, 12, &start, 4);
    uint64_t m = min_n(n, l->n);
    if (!dev_ok(o, m * 4))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    unsigned *out = dev(o);
    for (uint64_t i = 0; i < m; i++)
        out[i] = start + (unsigned)i;
    return CUDA_SUCCESS;
}

static CUresult k_scale_struct(const struct launch *l)
{
    struct fake_span s;
    rd(l, 0, &s, sizeof s);
    uint64_t m = min_n(s.n, l->n);
    if (!dev_ok((CUdeviceptr)(uintptr_t)s.p, m * 4))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (uint64_t i = 0; i < m; i++)
        s.p[i] *= s.s;
    return CUDA_SUCCESS;
}

struct racy {
    const float *x;
    volatile float *out;
    uint64_t lo, hi;
};

static void *racy_worker(void *arg)
{
    const struct racy *r = arg;
    for (int rep = 0; rep < 200; rep++)
        for (uint64_t i = r->lo; i < r->hi; i++)
            *r->out = *r->out + r->x[i] * 1e-3f; /* read-modify-write, deliberately unordered */
    return NULL;
}

static CUresult k_racy_sum(const struct launch *l)
{
    CUdeviceptr x, o;
    unsigned n;
    rd(l, 0, &x, 8), rd(l, 8, &o, 8), rd(l, 16, &n, 4);
    uint64_t m = min_n(n, l->n);
    if (!dev_ok(x, m * 4) || !dev_ok(o, 4))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    pthread_t th[4];
    struct racy rs[4];
    for (int t = 0; t < 4; t++) {
        rs[t] = (struct racy){dev(x), dev(o), m * (uint64_t)t / 4, m * (uint64_t)(t + 1) / 4};
        pthread_create(&th[t], NULL, racy_worker, &rs[t]);
    }
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    return CUDA_SUCCESS;
}

struct kdef {
    const char *name;
    CUresult (*fn)(const struct launch *);
    uint32_t n_params;
    uint32_t off[4], size[4];
};

static const struct kdef kdefs[] = {
    {"saxpy", k_saxpy, 4, {0, 8, 16, 24}, {4, 8, 8, 4}},
    {"iota", k_iota, 3, {0, 8, 12}, {8, 4, 4}},
    {"scale_struct", k_scale_struct, 1, {0}, {16}},
    {"racy_sum", k_racy_sum, 3, {0, 8, 16}, {8, 8, 4}},
};

/* Modules, libraries, functions and kernels are all this one struct. */
struct fake_obj {
    uint32_t magic; /* 'FMOD' module/library, 'FFUN' function/kernel */
    char *image;    /* modules: a copy of the image text */
    const struct kdef *k;
    struct fake_obj *next; /* every object, so handles stay valid until the driver unloads */
};
#define MAGIC_MOD 0x444f4d46u
#define MAGIC_FUN 0x4e554646u

static pthread_mutex_t objs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fake_obj *objs;

static struct fake_obj *obj_new(uint32_t magic)
{
    struct fake_obj *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->magic = magic;
    pthread_mutex_lock(&objs_mu);
    o->next = objs;
    objs = o;
    pthread_mutex_unlock(&objs_mu);
    return o;
}

/* Like a real driver, everything goes when the library does (process exit or dlclose). */
__attribute__((destructor)) static void objs_free(void)
{
    while (objs) {
        struct fake_obj *o = objs;
        objs = o->next;
        free(o->image);
        free(o);
    }
}

static CUresult load(const void *image, struct fake_obj **out)
{
    NEED_INIT();
    if (!image || strncmp(image, "FAKECUDA 1\n", 11))
        return CUDA_ERROR_INVALID_IMAGE;
    struct fake_obj *m = obj_new(MAGIC_MOD);
    if (!m || !(m->image = strdup(image)))
        return CUDA_ERROR_OUT_OF_MEMORY; /* m, if any, is freed with the others */
    *out = m;
    return CUDA_SUCCESS;
}

static CUresult get_fn(struct fake_obj *m, const char *name, struct fake_obj **out)
{
    if (!m || m->magic != MAGIC_MOD || !name)
        return CUDA_ERROR_INVALID_HANDLE;
    size_t n = strlen(name);
    const char *p = m->image + 11;
    int listed = 0;
    while (*p && !listed) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        listed = len == n && !strncmp(p, name, n);
        p += len + (e != NULL);
    }
    for (size_t i = 0; listed && i < sizeof kdefs / sizeof kdefs[0]; i++)
        if (!strcmp(kdefs[i].name, name)) {
            struct fake_obj *f = obj_new(MAGIC_FUN);
            if (!f)
                return CUDA_ERROR_OUT_OF_MEMORY;
            f->k = &kdefs[i];
            *out = f;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return load(image, (struct fake_obj **)module);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n, CUjit_option *o,
                            void **v)
{
    (void)n, (void)o, (void)v;
    return load(image, (struct fake_obj **)module);
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    FILE *f = fopen(fname, "rb");
    if (!f)
        return CUDA_ERROR_FILE_NOT_FOUND;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return load(buf, (struct fake_obj **)module);
}

CUresult cuModuleUnload(CUmodule m)
{
    (void)m; /* handles stay valid: functions point into nothing the unload frees */
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    return get_fn((struct fake_obj *)m, name, (struct fake_obj **)f);
}

CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv,
                           unsigned int nj, CUlibraryOption *lo, void **lv, unsigned int nl)
{
    (void)jo, (void)jv, (void)nj, (void)lo, (void)lv, (void)nl;
    return load(code, (struct fake_obj **)lib);
}

CUresult cuLibraryUnload(CUlibrary lib)
{
    (void)lib;
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
    return get_fn((struct fake_obj *)lib, name, (struct fake_obj **)k);
}

CUresult cuLibraryGetModule(CUmodule *m, CUlibrary lib)
{
    *m = (CUmodule)lib;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
    *f = (CUfunction)k;
    return CUDA_SUCCESS;
}

static CUresult param_info(const struct fake_obj *f, size_t i, size_t *off, size_t *size)
{
    if (!f || f->magic != MAGIC_FUN)
        return CUDA_ERROR_INVALID_HANDLE;
    if (i >= f->k->n_params)
        return CUDA_ERROR_INVALID_VALUE;
    *off = f->k->off[i];
    *size = f->k->size[i];
    return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
    return param_info((const struct fake_obj *)f, i, off, size);
}

CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size)
{
    return param_info((const struct fake_obj *)k, i, off, size);
}

static CUresult launch(CUfunction fn, unsigned gx, unsigned bx, void **params, void **extra)
{
    NEED_INIT();
    const struct fake_obj *f = (const struct fake_obj *)fn;
    if (!f || f->magic != MAGIC_FUN)
        return CUDA_ERROR_INVALID_HANDLE;
    uint8_t buf[64] = {0};
    if (extra) {
        const void *p = NULL;
        size_t n = 0;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                p = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                n = *(const size_t *)extra[i + 1];
        }
        if (!p || n > sizeof buf)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(buf, p, n);
    } else {
        if (!params)
            return CUDA_ERROR_INVALID_VALUE;
        for (uint32_t i = 0; i < f->k->n_params; i++)
            memcpy(buf + f->k->off[i], params[i], f->k->size[i]);
    }
    struct launch l = {buf, (uint64_t)gx * bx};
    return f->k->fn(&l);
}

#define LAUNCHES(SFX)                                                                             \
    CUresult cuLaunchKernel##SFX(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, \
                                 unsigned int bx, unsigned int by, unsigned int bz,               \
                                 unsigned int shmem, CUstream s, void **params, void **extra)     \
    {                                                                                             \
        (void)gy, (void)gz, (void)by, (void)bz, (void)shmem, (void)s;                             \
        return launch(f, gx, bx, params, extra);                                                  \
    }                                                                                             \
    CUresult cuLaunchKernelEx##SFX(const CUlaunchConfig *c, CUfunction f, void **params,          \
                                   void **extra)                                                  \
    {                                                                                             \
        if (!c)                                                                                   \
            return CUDA_ERROR_INVALID_VALUE;                                                      \
        return launch(f, c->gridDimX, c->blockDimX, params, extra);                               \
    }                                                                                             \
    CUresult cuLaunchCooperativeKernel##SFX(                                                      \
        CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
        unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params)          \
    {                                                                                             \
        (void)gy, (void)gz, (void)by, (void)bz, (void)shmem, (void)s;                             \
        return launch(f, gx, bx, params, NULL);                                                   \
    }
LAUNCHES()
LAUNCHES(_ptsz)

/* ========================================================================================== */
/* Memory, copies, fills                                                                      */
/* ========================================================================================== */

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    NEED_INIT();
    if (!p || !n)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    uint64_t at = (heap_top + 255) & ~(uint64_t)255;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (at <= heap_size && n <= heap_size - at) {
        heap_top = at + n;
        *p = heap_base + at;
        memset(heap + at, 0, n);
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
    return !p || dev_ok(p, 0) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
    (void)s;
    return cuMemAlloc_v2(p, n);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s)
{
    (void)s;
    return cuMemAlloc_v2(p, n);
}

CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    (void)s;
    return cuMemFree_v2(p);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
    (void)s;
    return cuMemFree_v2(p);
}

static CUresult copy(void *dst, const void *src, size_t n)
{
    NEED_INIT();
    memmove(dst, src, n);
    return CUDA_SUCCESS;
}

static CUresult htod(CUdeviceptr d, const void *s, size_t n)
{
    return dev_ok(d, n) ? copy(dev(d), s, n) : CUDA_ERROR_INVALID_VALUE;
}

static CUresult dtoh(void *d, CUdeviceptr s, size_t n)
{
    return dev_ok(s, n) ? copy(d, dev(s), n) : CUDA_ERROR_INVALID_VALUE;
}

static CUresult dtod(CUdeviceptr d, CUdeviceptr s, size_t n)
{
    return dev_ok(d, n) && dev_ok(s, n) ? copy(dev(d), dev(s), n) : CUDA_ERROR_INVALID_VALUE;
}

/* Unified addressing: an address inside the heap is device memory, anything else host. */
static CUresult any(CUdeviceptr d, CUdeviceptr s, size_t n)
{
    return copy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
}

static CUresult fill(CUdeviceptr d, uint32_t v, size_t n, int elem)
{
    NEED_INIT();
    if (!dev_ok(d, (uint64_t)n * (uint64_t)elem))
        return CUDA_ERROR_INVALID_VALUE;
    uint8_t *p = dev(d);
    for (size_t i = 0; i < n; i++)
        memcpy(p + i * (size_t)elem, &v, (size_t)elem); /* little-endian: low bytes first */
    return CUDA_SUCCESS;
}

#define COPIES(SFX, ASFX)                                                                    \
    CUresult cuMemcpy##SFX(CUdeviceptr d, CUdeviceptr s, size_t n)                           \
    {                                                                                        \
        return any(d, s, n);                                                                 \
    }                                                                                        \
    CUresult cuMemcpyHtoD_v2##SFX(CUdeviceptr d, const void *s, size_t n)                    \
    {                                                                                        \
        return htod(d, s, n);                                                                \
    }                                                                                        \
    CUresult cuMemcpyDtoH_v2##SFX(void *d, CUdeviceptr s, size_t n)                          \
    {                                                                                        \
        return dtoh(d, s, n);                                                                \
    }                                                                                        \
    CUresult cuMemcpyDtoD_v2##SFX(CUdeviceptr d, CUdeviceptr s, size_t n)                    \
    {                                                                                        \
        return dtod(d, s, n);                                                                \
    }                                                                                        \
    CUresult cuMemcpyAsync##ASFX(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)        \
    {                                                                                        \
        (void)st;                                                                            \
        return any(d, s, n);                                                                 \
    }                                                                                        \
    CUresult cuMemcpyHtoDAsync_v2##ASFX(CUdeviceptr d, const void *s, size_t n, CUstream st) \
    {                                                                                        \
        (void)st;                                                                            \
        return htod(d, s, n);                                                                \
    }                                                                                        \
    CUresult cuMemcpyDtoHAsync_v2##ASFX(void *d, CUdeviceptr s, size_t n, CUstream st)       \
    {                                                                                        \
        (void)st;                                                                            \
        return dtoh(d, s, n);                                                                \
    }                                                                                        \
    CUresult cuMemcpyDtoDAsync_v2##ASFX(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) \
    {                                                                                        \
        (void)st;                                                                            \
        return dtod(d, s, n);                                                                \
    }                                                                                        \
    CUresult cuMemsetD8_v2##SFX(CUdeviceptr d, unsigned char v, size_t n)                    \
    {                                                                                        \
        return fill(d, v, n, 1);                                                             \
    }                                                                                        \
    CUresult cuMemsetD16_v2##SFX(CUdeviceptr d, unsigned short v, size_t n)                  \
    {                                                                                        \
        return fill(d, v, n, 2);                                                             \
    }                                                                                        \
    CUresult cuMemsetD32_v2##SFX(CUdeviceptr d, unsigned int v, size_t n)                    \
    {                                                                                        \
        return fill(d, v, n, 4);                                                             \
    }                                                                                        \
    CUresult cuMemsetD8Async##ASFX(CUdeviceptr d, unsigned char v, size_t n, CUstream st)    \
    {                                                                                        \
        (void)st;                                                                            \
        return fill(d, v, n, 1);                                                             \
    }                                                                                        \
    CUresult cuMemsetD16Async##ASFX(CUdeviceptr d, unsigned short v, size_t n, CUstream st)  \
    {                                                                                        \
        (void)st;                                                                            \
        return fill(d, v, n, 2);                                                             \
    }                                                                                        \
    CUresult cuMemsetD32Async##ASFX(CUdeviceptr d, unsigned int v, size_t n, CUstream st)    \
    {                                                                                        \
        (void)st;                                                                            \
        return fill(d, v, n, 4);                                                             \
    }
COPIES(, )
COPIES(_ptds, _ptsz)

/* ========================================================================================== */
/* Streams and events                                                                         */
/* ========================================================================================== */

struct CUstream_st {
    unsigned flags;
};
struct CUevent_st {
    uint64_t t; /* host ns of the latest record */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    NEED_INIT();
    if (!(*s = calloc(1, sizeof **s)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    (*s)->flags = flags;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int prio)
{
    (void)prio;
    return cuStreamCreate(s, flags);
}

CUresult cuStreamDestroy_v2(CUstream s)
{
    free(s);
    return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    NEED_INIT();
    (void)flags;
    if (!(*e = calloc(1, sizeof **e)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent e)
{
    free(e);
    return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e)
{
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventQuery(CUevent e)
{
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
    if (!a || !b || !ms)
        return CUDA_ERROR_INVALID_HANDLE;
    *ms = (float)((double)((int64_t)(b->t - a->t)) / 1e6);
    return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    return elapsed(ms, a, b);
}

CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    return elapsed(ms, a, b);
}

#define STREAM_OPS(SFX)                                                             \
    CUresult cuStreamSynchronize##SFX(CUstream s)                                   \
    {                                                                               \
        (void)s;                                                                    \
        NEED_INIT();                                                                \
        return CUDA_SUCCESS;                                                        \
    }                                                                               \
    CUresult cuStreamQuery##SFX(CUstream s)                                         \
    {                                                                               \
        (void)s;                                                                    \
        return CUDA_SUCCESS;                                                        \
    }                                                                               \
    CUresult cuStreamWaitEvent##SFX(CUstream s, CUevent e, unsigned int flags)      \
    {                                                                               \
        (void)s, (void)flags;                                                       \
        return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;                        \
    }                                                                               \
    CUresult cuEventRecord##SFX(CUevent e, CUstream s)                              \
    {                                                                               \
        (void)s;                                                                    \
        if (!e)                                                                     \
            return CUDA_ERROR_INVALID_HANDLE;                                       \
        e->t = now_ns();                                                            \
        return CUDA_SUCCESS;                                                        \
    }                                                                               \
    CUresult cuEventRecordWithFlags##SFX(CUevent e, CUstream s, unsigned int flags) \
    {                                                                               \
        (void)flags;                                                                \
        return cuEventRecord##SFX(e, s);                                            \
    }
STREAM_OPS()
STREAM_OPS(_ptsz)

/* ========================================================================================== */
/* cuGetProcAddress and cuGetExportTable                                                      */
/* ========================================================================================== */

/* (name, first version, legacy variant, per-thread variant, its first version): the ABI
 * versions of cudaTypedefs.h for the names cudart 13 asks for (research/cuda.md appendix A). */
struct gpa_rule {
    const char *name;
    int ver;
    const char *legacy, *pt;
    int pt_ver;
};

#define V2(n, v1, v2)             \
    {#n, v1, #n, NULL, 0},        \
    {                             \
#n, v2, #n "_v2", NULL, 0 \
    }
#define PTDS(n, v)                           \
    {                                        \
#n, v, #n "_v2", #n "_v2_ptds", 7000 \
    }
#define PTSZ(n, v)                           \
    {                                        \
#n, v, #n "_v2", #n "_v2_ptsz", 7000 \
    }
#define PTSZ1(n, v, pv)           \
    {                             \
#n, v, #n, #n "_ptsz", pv \
    }
static const struct gpa_rule rules[] = {
    V2(cuMemAlloc, 2000, 3020),
    V2(cuMemFree, 2000, 3020),
    V2(cuDeviceTotalMem, 2000, 3020),
    V2(cuModuleGetGlobal, 2000, 3020),
    V2(cuCtxDestroy, 2000, 4000),
    V2(cuStreamDestroy, 2000, 4000),
    V2(cuEventDestroy, 2000, 4000),
    V2(cuCtxSynchronize, 2000, 13000),
    V2(cuCtxGetDevice, 2000, 13000),
    V2(cuEventElapsedTime, 2000, 12080),
    V2(cuDevicePrimaryCtxRelease, 7000, 11000),
    V2(cuDevicePrimaryCtxSetFlags, 7000, 11000),
    V2(cuDeviceGetUuid, 9020, 11040),
    V2(cuMemAdvise, 8000, 12020),
    V2(cuIpcOpenMemHandle, 4010, 11000),
    V2(cuGetProcAddress, 11030, 12000),
    {"cuCtxCreate", 2000, "cuCtxCreate", NULL, 0},
    {"cuCtxCreate", 3020, "cuCtxCreate_v2", NULL, 0},
    {"cuCtxCreate", 11040, "cuCtxCreate_v3", NULL, 0},
    {"cuCtxCreate", 12050, "cuCtxCreate_v4", NULL, 0},
    PTDS(cuMemcpyHtoD, 3020),
    PTDS(cuMemcpyDtoH, 3020),
    PTDS(cuMemcpyDtoD, 3020),
    PTDS(cuMemsetD8, 3020),
    PTDS(cuMemsetD16, 3020),
    PTDS(cuMemsetD32, 3020),
    PTSZ(cuMemcpyHtoDAsync, 3020),
    PTSZ(cuMemcpyDtoHAsync, 3020),
    PTSZ(cuMemcpyDtoDAsync, 3020),
    {"cuMemcpy", 4000, "cuMemcpy", "cuMemcpy_ptds", 7000},
    PTSZ1(cuMemcpyAsync, 4000, 7000),
    PTSZ1(cuMemsetD8Async, 3020, 7000),
    PTSZ1(cuMemsetD16Async, 3020, 7000),
    PTSZ1(cuMemsetD32Async, 3020, 7000),
    PTSZ1(cuStreamSynchronize, 2000, 7000),
    PTSZ1(cuStreamQuery, 2000, 7000),
    PTSZ1(cuStreamWaitEvent, 3020, 7000),
    PTSZ1(cuEventRecord, 2000, 7000),
    PTSZ1(cuEventRecordWithFlags, 11010, 11010),
    PTSZ1(cuLaunchKernel, 4000, 7000),
    PTSZ1(cuLaunchKernelEx, 11060, 11060),
    PTSZ1(cuLaunchCooperativeKernel, 9000, 9000),
    PTSZ1(cuMemAllocAsync, 11020, 11020),
    PTSZ1(cuMemFreeAsync, 11020, 11020),
    PTSZ1(cuMemAllocFromPoolAsync, 11020, 11020),
    PTSZ1(cuGraphLaunch, 10000, 10000),
    PTSZ1(cuGraphUpload, 11010, 11010),
    PTSZ1(cuStreamAddCallback, 5000, 7000),
    PTSZ1(cuLaunchHostFunc, 10000, 10000),
    PTSZ1(cuStreamIsCapturing, 10000, 10000),
    PTSZ1(cuStreamEndCapture, 10000, 10000),
    PTSZ1(cuMemPrefetchAsync, 8000, 8000),
    {"cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2", "cuMemPrefetchAsync_v2_ptsz", 12020},
    PTSZ1(cuStreamBeginCapture, 10000, 10000),
    {"cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz",
     10010},
    PTSZ1(cuStreamGetCaptureInfo, 10010, 10010),
    {"cuStreamGetCaptureInfo", 11030, "cuStreamGetCaptureInfo_v2", "cuStreamGetCaptureInfo_v2_ptsz",
     11030},
    {"cuStreamGetCaptureInfo", 12030, "cuStreamGetCaptureInfo_v3", "cuStreamGetCaptureInfo_v3_ptsz",
     12030},
    PTSZ1(cuMemcpyBatchAsync, 12080, 12080),
    {"cuMemcpyBatchAsync", 13000, "cuMemcpyBatchAsync_v2", "cuMemcpyBatchAsync_v2_ptsz", 13000},
    PTSZ1(cuMemcpy3DBatchAsync, 12080, 12080),
    {"cuMemcpy3DBatchAsync", 13000, "cuMemcpy3DBatchAsync_v2", "cuMemcpy3DBatchAsync_v2_ptsz",
     13000},
};

static void *self_sym(const char *name)
{
    static void *self;
    if (!self) {
        Dl_info di;
        if (dladdr((void *)self_sym, &di) && di.dli_fname)
            self = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    }
    return self ? dlsym(self, name) : NULL;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    if (ver > 13000)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    const struct gpa_rule *best = NULL;
    int any = 0;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (!strcmp(rules[i].name, symbol)) {
            any = 1;
            if (rules[i].ver <= ver && (!best || rules[i].ver > best->ver))
                best = &rules[i];
        }
    const char *variant = NULL;
    if (best)
        variant = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->pt &&
                          best->pt_ver <= ver
                      ? best->pt
                      : best->legacy;
    else if (any)
        st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    else if (*symbol)
        variant = symbol;
    if (variant && (*pfn = self_sym(variant)))
        st = CU_GET_PROC_ADDRESS_SUCCESS;
    if (status)
        *status = st;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, ver, flags, NULL);
}

/* A private table: its size and nothing callable. The shim must hand back this very pointer. */
static const uintptr_t dummy_table[4] = {sizeof dummy_table, 0, 0, 0};

CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    *table = dummy_table;
    return CUDA_SUCCESS;
}
