/*
 * tests/cuda/fake_cuda.c — a test-only fake CUDA driver (libcuda.so.1 ABI) with no GPU behind
 * it: device memory sits behind addresses the program cannot touch, at a configurable base
 * (fake_cuda.h), "kernels" are host functions found
 * by name in fake module images, streams run each op as it is enqueued (unless it is behind an
 * unmet cuStreamWaitValue: then it is deferred), events carry host timestamps. It implements the
 * entry points the shim wraps and the test programs and the replay backend call, answers
 * cuGetProcAddress_v2 by (name, version, flags) the way the real driver does (the version tables of
 * cudaTypedefs.h for those names), and returns a dummy private table from cuGetExportTable. Every
 * other stub symbol is a weak 801 stub (fake_stubs.c). Built with -Bsymbolic so that the addresses
 * it hands out are its own even when the shim exports the same names. Never installed. See
 * fake_cuda.h for the contract.
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
#include <unistd.h>

#include "tests/cuda/fake_cuda.h"

/* ========================================================================================== */
/* Device memory                                                                              */
/* ========================================================================================== */

/* Device addresses are [heap_base, heap_base + heap_size), reserved PROT_NONE: the program,
 * and the capture shim that runs inside it, fault on any host access to device memory, as on a
 * real GPU. The bytes live in a memfd, the store, that the fake maps a second time read-write
 * and reaches through dev_at(). Addresses and store bytes come from one bump allocator and are
 * never reused: an allocation at address a owns store bytes a - heap_base. cuMemAddressReserve
 * takes addresses only (their store bytes stay unused), cuMemCreate store bytes only; cuMemMap
 * and cuIpcOpenMemHandle make a range of addresses reach store bytes of another allocation.
 * Host memory the driver knows (pinned, registered) and managed memory are ordinary host
 * memory that kernels reach at the same address. */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *store;
static uint64_t heap_base, heap_size, heap_top;
static int inited;

enum fkind {
    F_DEVICE = 1, /* cuMemAlloc*, pools, pitch, module globals */
    F_HOST,       /* pinned or registered host memory */
    F_MANAGED,    /* cuMemAllocManaged */
    F_RESERVED,   /* cuMemAddressReserve: addresses, nothing behind them until mapped */
    F_MAPPED,     /* cuMemMap / cuMemIpcOpenMemHandle: addresses onto other store bytes */
};

struct falloc {
    uint64_t base, size;
    uint64_t store_off; /* F_DEVICE, F_MAPPED */
    int kind, live;
    int owned;    /* F_HOST: allocated by the fake (cuMemAllocHost), freed by it */
    void *handle; /* F_MAPPED by cuMemMap: the struct fphys mapped */
};
static struct falloc *fa;
static size_t n_fa, cap_fa;

/* A physical allocation (cuMemCreate): store bytes with no address of their own. */
struct fphys {
    uint64_t store_off, size;
    struct fphys *next;
};
static struct fphys *phys;

static CUresult init_heap(void)
{
    if (store)
        return CUDA_SUCCESS;
    const char *b = getenv("FAKE_CUDA_BASE"), *s = getenv("FAKE_CUDA_HEAP");
    heap_base = b && *b ? strtoull(b, NULL, 16) : 0x7e0000000000ull;
    heap_size = s && *s ? strtoull(s, NULL, 0) : 64ull << 20;
    int fd = memfd_create("fake-cuda-device-memory", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)heap_size) != 0) {
        if (fd >= 0)
            close(fd);
        fprintf(stderr, "fake libcuda: cannot create the device store\n");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    void *st = mmap(NULL, heap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    void *p = mmap((void *)(uintptr_t)heap_base, heap_size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (st == MAP_FAILED || p == MAP_FAILED || (uint64_t)(uintptr_t)p != heap_base) {
        if (st != MAP_FAILED)
            munmap(st, heap_size);
        if (p != MAP_FAILED)
            munmap(p, heap_size);
        fprintf(stderr, "fake libcuda: cannot reserve the device addresses at 0x%llx\n",
                (unsigned long long)heap_base);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    store = st;
    heap_top = 0;
    return CUDA_SUCCESS;
}

/* Store offset of n bytes aligned to align, or UINT64_MAX. mu held. */
static uint64_t bump(uint64_t n, uint64_t align)
{
    uint64_t at = (heap_top + align - 1) & ~(align - 1);
    if (!store || at > heap_size || n > heap_size - at)
        return UINT64_MAX;
    heap_top = at + n;
    return at;
}

/* Adds an entry; mu held. */
static struct falloc *fa_add(uint64_t base, uint64_t size, uint64_t store_off, int kind)
{
    if (n_fa == cap_fa) {
        size_t cap = cap_fa ? cap_fa * 2 : 64;
        struct falloc *n = realloc(fa, cap * sizeof *n);
        if (!n)
            return NULL;
        fa = n, cap_fa = cap;
    }
    fa[n_fa] = (struct falloc){base, size, store_off, kind, 1, 0, NULL};
    return &fa[n_fa++];
}

/* The live entry of one of the kinds in mask (1 << kind) holding p; mu held. */
static struct falloc *fa_find(uint64_t p, unsigned mask)
{
    for (size_t i = n_fa; i-- > 0;)
        if (fa[i].live && (mask >> fa[i].kind & 1) && p - fa[i].base < fa[i].size)
            return &fa[i];
    return NULL;
}

#define ACCESSIBLE (1u << F_DEVICE | 1u << F_HOST | 1u << F_MANAGED | 1u << F_MAPPED)

/* Where the device reaches [p, p+n): the store behind device memory, the address itself for
 * host and managed memory; NULL when the range is not accessible memory. */
static void *dev_at(CUdeviceptr p, uint64_t n)
{
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_find(p, ACCESSIBLE);
    void *r = NULL;
    if (f && n <= f->size - (p - f->base))
        r = f->kind == F_DEVICE || f->kind == F_MAPPED ? store + f->store_off + (p - f->base)
                                                       : (void *)(uintptr_t)p;
    pthread_mutex_unlock(&mu);
    return r;
}

/* Unified addressing: a device address must be accessible memory; any other address is host
 * memory of the program. NULL for a device address that is not. */
static void *any_at(uint64_t p, uint64_t n)
{
    if (store && p - heap_base < heap_size)
        return dev_at(p, n);
    return (void *)(uintptr_t)p;
}

/* A new allocation of kind F_DEVICE, zeroed. */
static CUresult dev_alloc(CUdeviceptr *p, uint64_t n, uint64_t align)
{
    if (!p || !n)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    uint64_t at = bump(n, align);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (at != UINT64_MAX && fa_add(heap_base + at, n, at, F_DEVICE)) {
        memset(store + at, 0, n);
        *p = heap_base + at;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

__attribute__((destructor)) static void mem_free(void)
{
    for (size_t i = 0; i < n_fa; i++) {
        if (fa[i].live && fa[i].kind == F_HOST && fa[i].owned)
            free((void *)(uintptr_t)fa[i].base);
        if (fa[i].live && fa[i].kind == F_MANAGED)
            munmap((void *)(uintptr_t)fa[i].base, fa[i].size);
    }
    free(fa);
    while (phys) {
        struct fphys *p = phys;
        phys = p->next;
        free(p);
    }
    if (store) { /* the addresses and the store too: a process may load the driver again */
        munmap(store, heap_size);
        munmap((void *)(uintptr_t)heap_base, heap_size);
        store = NULL;
    }
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

/* ========================================================================================== */
/* Lies the tests tell on purpose (FAKE_CUDA_LIE, fake_cuda.h)                                */
/* ========================================================================================== */

enum { LIE_PARTIAL = 1, LIE_WRONG, LIE_NUDGE, LIE_LOST };
static struct {
    pthread_once_t once;
    struct {
        int kind;
        char kernel[32];
        unsigned run; /* 0: every run */
    } l[8];
    int n, late;
    char name[128];
    char *first_image; /* the first image loaded: each load of it starts a run */
    unsigned run;      /* runs so far: 1 from the first load on */
    int lost;          /* the context failed: every later launch, sync, read and load fails */
} lie = {.once = PTHREAD_ONCE_INIT};

static void lie_parse(void)
{
    const char *e = getenv("FAKE_CUDA_LIE");
    char buf[512];
    snprintf(buf, sizeof buf, "%s", e ? e : "");
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "late")) {
            lie.late = 1;
            continue;
        }
        if (!strncmp(t, "name:", 5)) {
            snprintf(lie.name, sizeof lie.name, "%s", t + 5);
            continue;
        }
        char kind[16] = "", kern[32] = "";
        unsigned run = 0;
        if (sscanf(t, "%15[a-z]:%31[a-z_]/%u", kind, kern, &run) < 2 ||
            lie.n == (int)(sizeof lie.l / sizeof lie.l[0])) {
            fprintf(stderr, "fake CUDA driver: FAKE_CUDA_LIE: cannot parse '%s'\n", t);
            abort(); /* a test that asks for a lie it does not get must not pass */
        }
        int k = !strcmp(kind, "partial") ? LIE_PARTIAL
                : !strcmp(kind, "wrong") ? LIE_WRONG
                : !strcmp(kind, "nudge") ? LIE_NUDGE
                : !strcmp(kind, "lost")  ? LIE_LOST
                                         : 0;
        if (!k) {
            fprintf(stderr, "fake CUDA driver: FAKE_CUDA_LIE: no lie '%s'\n", kind);
            abort();
        }
        lie.l[lie.n].kind = k;
        lie.l[lie.n].run = run;
        snprintf(lie.l[lie.n].kernel, sizeof lie.l[lie.n].kernel, "%s", kern);
        lie.n++;
    }
}

/* Whether kernel name is told lie kind in this run. */
static int lie_for(int kind, const char *name)
{
    pthread_once(&lie.once, lie_parse);
    unsigned run = __atomic_load_n(&lie.run, __ATOMIC_SEQ_CST);
    for (int i = 0; i < lie.n; i++)
        if (lie.l[i].kind == kind && !strcmp(lie.l[i].kernel, name) &&
            (!lie.l[i].run || lie.l[i].run == run))
            return 1;
    return 0;
}

static int is_lost(void)
{
    return __atomic_load_n(&lie.lost, __ATOMIC_SEQ_CST);
}

/* Module images are loaded once per run by the replay: a load of the first image starts one. */
static void lie_count_run(const char *image)
{
    pthread_once(&lie.once, lie_parse);
    pthread_mutex_lock(&mu);
    if (!lie.first_image)
        lie.first_image = strdup(image);
    if (lie.first_image && !strcmp(lie.first_image, image))
        lie.run++;
    pthread_mutex_unlock(&mu);
}

#define NEED_LIVE()                          \
    do {                                     \
        NEED_INIT();                         \
        if (is_lost())                       \
            return CUDA_ERROR_LAUNCH_FAILED; \
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
    pthread_once(&lie.once, lie_parse);
    snprintf(name, (size_t)len, "%s", lie.name[0] ? lie.name : "reprise fake CUDA device");
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
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *pi = 9;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *pi = 4;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        *pi = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        *pi = 64;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        *pi = 0x7fffffff;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        *pi = 65535;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        *pi = 99 << 10;
        break;
    default:
        *pi = 0;
    }
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

/* The legacy stream's late work (FAKE_CUDA_LATE, below). */
static int late_on(void);
static int blocking(CUstream s);
static CUresult late_flush(void);

static void fq_ctx_sync(void);

CUresult cuCtxSynchronize(void)
{
    NEED_LIVE();
    fq_ctx_sync();
    return late_on() ? late_flush() : CUDA_SUCCESS;
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
    const float *xs = dev_at(x, m * 4);
    float *ys = dev_at(y, m * 4);
    if (!xs || !ys)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
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
    unsigned *out = dev_at(o, m * 4);
    if (!out)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (uint64_t i = 0; i < m; i++)
        out[i] = start + (unsigned)i;
    return CUDA_SUCCESS;
}

static CUresult k_scale_struct(const struct launch *l)
{
    struct fake_span s;
    rd(l, 0, &s, sizeof s);
    uint64_t m = min_n(s.n, l->n);
    float *p = dev_at((CUdeviceptr)(uintptr_t)s.p, m * 4);
    if (!p)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (uint64_t i = 0; i < m; i++)
        p[i] *= s.s;
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
    const float *xs = dev_at(x, m * 4);
    float *out = dev_at(o, 4);
    if (!xs || !out)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    pthread_t th[4];
    struct racy rs[4];
    for (int t = 0; t < 4; t++) {
        rs[t] = (struct racy){xs, out, m * (uint64_t)t / 4, m * (uint64_t)(t + 1) / 4};
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
    struct {               /* modules: their globals ("@name bytes" lines), in device memory */
        char name[32];
        CUdeviceptr p;
        size_t size;
    } globals[4];
    int n_globals;
    int max_dyn_shmem; /* functions: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (0: 48 KiB) */
    struct fake_obj *module; /* functions: the module or library they came from */
    int dead;                /* functions: their module was unloaded (the handle may come back) */
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
    free(lie.first_image);
    lie.first_image = NULL;
}

static CUresult load(const void *image, struct fake_obj **out)
{
    NEED_LIVE();
    if (!image || strncmp(image, "FAKECUDA 1\n", 11))
        return CUDA_ERROR_INVALID_IMAGE;
    lie_count_run(image);
    struct fake_obj *m = obj_new(MAGIC_MOD);
    if (!m || !(m->image = strdup(image)))
        return CUDA_ERROR_OUT_OF_MEMORY; /* m, if any, is freed with the others */
    for (const char *p = strchr(m->image, '@'); p && m->n_globals < 4; p = strchr(p + 1, '@')) {
        unsigned long long size = 0;
        int k = m->n_globals;
        if (sscanf(p, "@%31s %llu", m->globals[k].name, &size) != 2 || !size ||
            dev_alloc(&m->globals[k].p, size, 256) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_IMAGE;
        m->globals[k].size = (size_t)size;
        m->n_globals++;
    }
    *out = m;
    return CUDA_SUCCESS;
}

static CUresult get_global(struct fake_obj *m, CUdeviceptr *p, size_t *size, const char *name)
{
    if (!m || m->magic != MAGIC_MOD || !name)
        return CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < m->n_globals; i++)
        if (!strcmp(m->globals[i].name, name)) {
            if (p)
                *p = m->globals[i].p;
            if (size)
                *size = m->globals[i].size;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *size, CUmodule m, const char *name)
{
    return get_global((struct fake_obj *)m, p, size, name);
}

CUresult cuLibraryGetGlobal(CUdeviceptr *p, size_t *size, CUlibrary lib, const char *name)
{
    return get_global((struct fake_obj *)lib, p, size, name);
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
            /* as a driver may: the handle of a function of an unloaded module comes back */
            struct fake_obj *f = NULL;
            pthread_mutex_lock(&objs_mu);
            for (struct fake_obj *o = objs; o && !f; o = o->next)
                if (o->magic == MAGIC_FUN && o->dead)
                    f = o;
            if (f) {
                f->dead = 0;
                f->max_dyn_shmem = 0;
            }
            pthread_mutex_unlock(&objs_mu);
            if (!f && !(f = obj_new(MAGIC_FUN)))
                return CUDA_ERROR_OUT_OF_MEMORY;
            f->k = &kdefs[i];
            f->module = m;
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

/* Unloading kills the module's functions; their handles are handed out again by later
 * cuModuleGetFunction / cuLibraryGetKernel calls (as a real driver may reuse them). */
static CUresult unload(struct fake_obj *m)
{
    if (!m || m->magic != MAGIC_MOD)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&objs_mu);
    for (struct fake_obj *o = objs; o; o = o->next)
        if (o->magic == MAGIC_FUN && o->module == m)
            o->dead = 1;
    pthread_mutex_unlock(&objs_mu);
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m)
{
    return unload((struct fake_obj *)m);
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    return get_fn((struct fake_obj *)m, name, (struct fake_obj **)f);
}

/* The kernels a module lists that the fake implements, in image order. */
static CUresult enumerate(struct fake_obj *m, unsigned *count, struct fake_obj **out, unsigned max)
{
    if (!m || m->magic != MAGIC_MOD)
        return CUDA_ERROR_INVALID_HANDLE;
    unsigned n = 0;
    char name[64];
    for (const char *p = m->image + 11; *p;) {
        size_t len = strcspn(p, "\n");
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), p);
        int known = 0;
        for (size_t i = 0; i < sizeof kdefs / sizeof kdefs[0]; i++)
            known |= !strcmp(kdefs[i].name, name);
        struct fake_obj *f;
        if (known && !out)
            n++;
        else if (known && n < max && get_fn(m, name, &f) == CUDA_SUCCESS)
            out[n++] = f;
        p += len + (p[len] != 0);
    }
    if (count)
        *count = n;
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule m)
{
    return count ? enumerate((struct fake_obj *)m, count, NULL, 0) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuModuleEnumerateFunctions(CUfunction *fs, unsigned int n, CUmodule m)
{
    return fs ? enumerate((struct fake_obj *)m, NULL, (struct fake_obj **)fs, n)
              : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    return count ? enumerate((struct fake_obj *)lib, count, NULL, 0) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuLibraryEnumerateKernels(CUkernel *ks, unsigned int n, CUlibrary lib)
{
    return ks ? enumerate((struct fake_obj *)lib, NULL, (struct fake_obj **)ks, n)
              : CUDA_ERROR_INVALID_VALUE;
}

static CUresult fn_name(const struct fake_obj *f, const char **name)
{
    if (!f || f->magic != MAGIC_FUN || !name)
        return CUDA_ERROR_INVALID_VALUE;
    *name = f->k->name;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char **name, CUfunction f)
{
    return fn_name((const struct fake_obj *)f, name);
}

CUresult cuKernelGetName(const char **name, CUkernel k)
{
    return fn_name((const struct fake_obj *)k, name);
}

/* Dynamic shared memory: as on a GPU, a launch may ask for up to 48 KiB unless the function's
 * MAX_DYNAMIC_SHARED_SIZE_BYTES was raised (up to the device's opt-in maximum, 99 KiB), so a
 * replay that forgets the program's attribute fails the launch. Other attributes: accepted. */
#define FAKE_SHMEM_DEFAULT (48u << 10)
#define FAKE_SHMEM_OPTIN   (99u << 10)
static CUresult set_attr(struct fake_obj *o, CUfunction_attribute a, int v)
{
    if (!o || o->magic != MAGIC_FUN)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (v < 0 || (unsigned)v > FAKE_SHMEM_OPTIN)
            return CUDA_ERROR_INVALID_VALUE;
        o->max_dyn_shmem = v;
    }
    return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
    return set_attr((struct fake_obj *)f, a, v);
}

CUresult cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return set_attr((struct fake_obj *)k, a, v);
}

/* Accepted: the fake has no limits of this kind (reprise does not record it: the trace is
 * then incomplete, which is what the tests look for). */
CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    (void)limit, (void)value;
    return CUDA_SUCCESS;
}

CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv,
                           unsigned int nj, CUlibraryOption *lo, void **lv, unsigned int nl)
{
    (void)jo, (void)jv, (void)nj, (void)lo, (void)lv, (void)nl;
    return load(code, (struct fake_obj **)lib);
}

CUresult cuLibraryUnload(CUlibrary lib)
{
    return unload((struct fake_obj *)lib);
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

/* ========================================================================================== */
/* Stream capture and graphs                                                                  */
/* ========================================================================================== */

/* Work issued to a capturing stream is recorded as tasks, not run; a graph exec runs its graph's
 * tasks in the order they were issued (one valid order of any graph stream capture makes).
 * A stream joins a capture by waiting on an event recorded in it; EndCapture ends it for all. */
enum { T_LAUNCH, T_ANY, T_HTOD, T_DTOH, T_DTOD, T_FILL, T_WRITE, T_NOP };
struct task { /* T_WRITE: v (elem 4) or d2 (elem 8) written at d (cuStreamWriteValue*) */
    int kind;
    const struct fake_obj *f; /* T_LAUNCH: the function, its packed parameters, threads */
    uint8_t buf[64];
    uint64_t threads;
    uint64_t d, s; /* copies and fills: destination, source; fills: value, element size */
    size_t n;
    uint32_t v;
    int elem;
    uint64_t v64;
};
struct fq; /* a stream's deferred work (below) */
static int fq_task(CUstream st, const struct task *t, int wait, CUresult *r);
static void fq_kick(void);
struct CUgraph_st {
    struct task *t;
    size_t n, cap;
    CUstream joined[8]; /* the streams capturing into it */
    int n_joined;
};
struct CUgraphExec_st {
    struct task *t;
    size_t n;
};
struct CUstream_st {
    unsigned flags;
    CUgraph cap;  /* the graph it is capturing into, or NULL */
    struct fq *q; /* its deferred work, once it had some */
};
struct CUevent_st {
    uint64_t t;   /* host ns of the latest record */
    CUgraph cap;  /* recorded in a capturing stream: waiting on it joins that capture */
    struct fq *q; /* recorded behind deferred work: complete when q ran its entry seq */
    uint64_t seq;
};

static CUgraph capturing(CUstream s)
{
    return s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD ? s->cap : NULL;
}

static CUresult defer(CUgraph g, const struct task *t)
{
    if (g->n == g->cap) {
        size_t c = g->cap ? 2 * g->cap : 16;
        struct task *nt = realloc(g->t, c * sizeof *nt);
        if (!nt)
            return CUDA_ERROR_OUT_OF_MEMORY;
        g->t = nt, g->cap = c;
    }
    g->t[g->n++] = *t;
    return CUDA_SUCCESS;
}

/* The wrong-bytes lies: bit 30 (wrong: far off, as a float 1.0 becomes infinity, or as an
 * integer) or bit 0 (nudge: one ulp of a float) of the first word of the kernel's last
 * device-pointer parameter (its output, for the kernels above that have one) flipped. */
static void lie_wrong(const struct kdef *k, const uint8_t *buf, int far)
{
    for (uint32_t i = k->n_params; i-- > 0;) {
        uint64_t v = 0;
        if (k->size[i] != 8)
            continue;
        memcpy(&v, buf + k->off[i], 8);
        uint8_t *p = dev_at(v, 4);
        if (p) {
            if (far)
                p[3] ^= 0x40;
            else
                p[0] ^= 1;
            return;
        }
    }
}

static CUresult launch(CUfunction fn, unsigned gx, unsigned bx, unsigned shmem, void **params,
                       void **extra, CUstream st)
{
    NEED_INIT();
    const struct fake_obj *f = (const struct fake_obj *)fn;
    if (!f || f->magic != MAGIC_FUN || f->dead)
        return CUDA_ERROR_INVALID_HANDLE;
    if (shmem > (f->max_dyn_shmem ? (unsigned)f->max_dyn_shmem : FAKE_SHMEM_DEFAULT))
        return CUDA_ERROR_INVALID_VALUE;
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
    struct task t = {.kind = T_LAUNCH, .f = f, .threads = (uint64_t)gx * bx};
    memcpy(t.buf, buf, sizeof buf);
    CUgraph g = capturing(st);
    if (g)
        return defer(g, &t);
    CUresult qr;
    if (fq_task(st, &t, 0, &qr))
        return qr;
    if (late_on() && blocking(st))
        late_flush();
    if (is_lost())
        return CUDA_ERROR_LAUNCH_FAILED;
    if (lie_for(LIE_LOST, f->k->name)) {
        __atomic_store_n(&lie.lost, 1, __ATOMIC_SEQ_CST);
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    struct launch l = {buf, (uint64_t)gx * bx};
    if (lie_for(LIE_PARTIAL, f->k->name)) /* half the threads: half the elements written */
        l.n /= 2;
    CUresult r = f->k->fn(&l);
    if (r == CUDA_SUCCESS && lie_for(LIE_WRONG, f->k->name))
        lie_wrong(f->k, buf, 1);
    if (r == CUDA_SUCCESS && lie_for(LIE_NUDGE, f->k->name))
        lie_wrong(f->k, buf, 0);
    fq_kick();
    return r;
}

#define LAUNCHES(SFX, NULLS)                                                                      \
    CUresult cuLaunchKernel##SFX(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, \
                                 unsigned int bx, unsigned int by, unsigned int bz,               \
                                 unsigned int shmem, CUstream s, void **params, void **extra)     \
    {                                                                                             \
        (void)gy, (void)gz, (void)by, (void)bz;                                                   \
        return launch(f, gx, bx, shmem, params, extra, s ? s : NULLS);                            \
    }                                                                                             \
    CUresult cuLaunchKernelEx##SFX(const CUlaunchConfig *c, CUfunction f, void **params,          \
                                   void **extra)                                                  \
    {                                                                                             \
        if (!c)                                                                                   \
            return CUDA_ERROR_INVALID_VALUE;                                                      \
        return launch(f, c->gridDimX, c->blockDimX, c->sharedMemBytes, params, extra,             \
                      c->hStream ? c->hStream : NULLS);                                           \
    }                                                                                             \
    CUresult cuLaunchCooperativeKernel##SFX(                                                      \
        CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
        unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params)          \
    {                                                                                             \
        (void)gy, (void)gz, (void)by, (void)bz;                                                   \
        return launch(f, gx, bx, shmem, params, NULL, s ? s : NULLS);                             \
    }
LAUNCHES(, CU_STREAM_LEGACY)
LAUNCHES(_ptsz, CU_STREAM_PER_THREAD)

/* ========================================================================================== */
/* Memory, copies, fills                                                                      */
/* ========================================================================================== */

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    NEED_INIT();
    return dev_alloc(p, n, 256);
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
    NEED_INIT();
    if (late_on()) /* cuMemFree synchronises the device first */
        late_flush();
    if (!p)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_find(p, 1u << F_DEVICE | 1u << F_MANAGED);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (f && f->base == p) {
        if (f->kind == F_MANAGED)
            munmap((void *)(uintptr_t)f->base, f->size);
        f->live = 0;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

#define ASYNC_ALLOCS(SFX)                                                                          \
    CUresult cuMemAllocAsync##SFX(CUdeviceptr *p, size_t n, CUstream s)                            \
    {                                                                                              \
        (void)s;                                                                                   \
        return cuMemAlloc_v2(p, n);                                                                \
    }                                                                                              \
    CUresult cuMemFreeAsync##SFX(CUdeviceptr p, CUstream s)                                        \
    {                                                                                              \
        (void)s;                                                                                   \
        return cuMemFree_v2(p);                                                                    \
    }                                                                                              \
    CUresult cuMemAllocFromPoolAsync##SFX(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) \
    {                                                                                              \
        (void)s;                                                                                   \
        return pool ? cuMemAlloc_v2(p, n) : CUDA_ERROR_INVALID_VALUE;                              \
    }
ASYNC_ALLOCS()
ASYNC_ALLOCS(_ptsz)

/* ---- memory pools: allocations come from the one heap whatever the pool ------------------- */

struct CUmemPoolHandle_st {
    int is_default;
};
static struct CUmemPoolHandle_st default_pool = {1};

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice d)
{
    NEED_INIT();
    if (!pool || d != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *pool = &default_pool;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    NEED_INIT();
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    return (*pool = calloc(1, sizeof **pool)) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    if (!pool || pool->is_default)
        return CUDA_ERROR_INVALID_VALUE;
    free(pool);
    return CUDA_SUCCESS;
}

/* ---- pitch: rows padded to 512 bytes ------------------------------------------------------- */

CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height,
                            unsigned int elem)
{
    NEED_INIT();
    if (!pitch || !width || !height || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pt = (width + 511) & ~(size_t)511;
    CUresult r = dev_alloc(p, (uint64_t)pt * height, 512);
    if (r == CUDA_SUCCESS)
        *pitch = pt;
    return r;
}

/* ---- managed and host memory ---------------------------------------------------------------- */

CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
    NEED_INIT();
    if (!p || !n || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_add((uint64_t)(uintptr_t)m, n, 0, F_MANAGED);
    pthread_mutex_unlock(&mu);
    if (!f) {
        munmap(m, n);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}

static CUresult host_register(void *p, size_t n, int owned)
{
    if (!p || !n)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_find((uint64_t)(uintptr_t)p, 1u << F_HOST)
                           ? NULL
                           : fa_add((uint64_t)(uintptr_t)p, n, 0, F_HOST);
    if (f)
        f->owned = owned;
    pthread_mutex_unlock(&mu);
    return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
    NEED_INIT();
    (void)flags;
    if (!pp || !n)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = calloc(1, n);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = host_register(p, n, 1);
    if (r != CUDA_SUCCESS)
        free(p);
    else
        *pp = p;
    return r;
}

CUresult cuMemAllocHost_v2(void **pp, size_t n)
{
    return cuMemHostAlloc(pp, n, 0);
}

static CUresult host_unregister(void *p, int owned)
{
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_find((uint64_t)(uintptr_t)p, 1u << F_HOST);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (f && f->base == (uint64_t)(uintptr_t)p && f->owned == owned) {
        f->live = 0;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&mu);
    if (r == CUDA_SUCCESS && owned)
        free(p);
    return r;
}

CUresult cuMemFreeHost(void *p)
{
    return host_unregister(p, 1);
}

CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
    NEED_INIT();
    (void)flags;
    return host_register(p, n, 0);
}

CUresult cuMemHostUnregister(void *p)
{
    return host_unregister(p, 0);
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags)
{
    NEED_INIT();
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_find((uint64_t)(uintptr_t)p, 1u << F_HOST);
    pthread_mutex_unlock(&mu);
    if (!d || !f || flags)
        return CUDA_ERROR_INVALID_VALUE;
    *d = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
    return CUDA_SUCCESS;
}

/* ---- virtual memory management: 64 KiB granularity ------------------------------------------ */

#define GRANULE (64u << 10)

CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    (void)option;
    if (!g || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *g = GRANULE;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                             unsigned long long flags)
{
    NEED_INIT();
    (void)addr, (void)flags; /* the hint is not honoured, as a driver may not */
    if (!ptr || !size || size % GRANULE || (align && align % GRANULE))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    uint64_t at = bump(size, align > GRANULE ? align : GRANULE);
    struct falloc *f = at == UINT64_MAX ? NULL : fa_add(heap_base + at, size, 0, F_RESERVED);
    pthread_mutex_unlock(&mu);
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = heap_base + at;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_find(ptr, 1u << F_RESERVED);
    int ok = f && f->base == ptr && f->size == size;
    if (ok)
        f->live = 0;
    pthread_mutex_unlock(&mu);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
    NEED_INIT();
    (void)flags;
    if (!h || !prop || !size || size % GRANULE || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    struct fphys *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&mu);
    uint64_t at = bump(size, GRANULE);
    if (at != UINT64_MAX) {
        memset(store + at, 0, size);
        *p = (struct fphys){at, size, phys};
        phys = p;
    }
    pthread_mutex_unlock(&mu);
    if (at == UINT64_MAX) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *h = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; /* freed with the driver */
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                  unsigned long long flags)
{
    NEED_INIT();
    struct fphys *p = (struct fphys *)(uintptr_t)h;
    if (!p || flags || !size || offset > p->size || size > p->size - offset)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    struct falloc *r = fa_find(ptr, 1u << F_RESERVED);
    CUresult st = CUDA_ERROR_INVALID_VALUE;
    if (r && size <= r->size - (ptr - r->base) && !fa_find(ptr, 1u << F_MAPPED) &&
        !fa_find(ptr + size - 1, 1u << F_MAPPED)) {
        struct falloc *m = fa_add(ptr, size, p->store_off + offset, F_MAPPED);
        if (m)
            m->handle = p;
        st = m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&mu);
    return st;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    pthread_mutex_lock(&mu);
    int n = 0;
    for (size_t i = 0; i < n_fa; i++)
        if (fa[i].live && fa[i].kind == F_MAPPED && fa[i].handle && fa[i].base >= ptr &&
            fa[i].base - ptr < size)
            fa[i].live = 0, n++;
    pthread_mutex_unlock(&mu);
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    if (!desc || !count || !dev_at(ptr, size))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* ---- IPC: "another process" opening an allocation sees its bytes at other addresses -------- */

struct ipc_handle {
    uint64_t magic, store_off, size;
};
#define IPC_MAGIC 0x6370696b61667250ull

CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
    NEED_INIT();
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_find(p, 1u << F_DEVICE);
    struct ipc_handle ih = {IPC_MAGIC, f ? f->store_off : 0, f ? f->size : 0};
    pthread_mutex_unlock(&mu);
    if (!h || !f || f->base != p)
        return CUDA_ERROR_INVALID_VALUE;
    memset(h, 0, sizeof *h);
    memcpy(h->reserved, &ih, sizeof ih);
    return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags)
{
    NEED_INIT();
    struct ipc_handle ih;
    memcpy(&ih, h.reserved, sizeof ih);
    if (!p || ih.magic != IPC_MAGIC || flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    uint64_t at = bump(ih.size, 256); /* addresses only: the bytes are the original's */
    struct falloc *f =
        at == UINT64_MAX ? NULL : fa_add(heap_base + at, ih.size, ih.store_off, F_MAPPED);
    pthread_mutex_unlock(&mu);
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = heap_base + at;
    return CUDA_SUCCESS;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_find(p, 1u << F_MAPPED);
    int ok = f && f->base == p && !f->handle;
    if (ok)
        f->live = 0;
    pthread_mutex_unlock(&mu);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- pointer attributes ---------------------------------------------------------------------- */

/* Bytes the driver writes for attribute a (0: not supported here). */
static size_t attr_size(CUpointer_attribute a)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        return 4;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_MAPPED:
        return 1; /* a boolean */
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        return 8;
    default:
        return 0;
    }
}

/* Attribute a of p, which lies in f (NULL: not memory the driver knows; every value is its
 * default). */
static CUresult attr(const struct falloc *f, CUpointer_attribute a, CUdeviceptr p, void *data)
{
    size_t n = attr_size(a);
    if (!n || !data)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t v = 0;
    int host = f && (f->kind == F_HOST || f->kind == F_MANAGED);
    if (f)
        switch (a) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            v = f->kind == F_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            v = f->kind == F_MANAGED;
            break;
        case CU_POINTER_ATTRIBUTE_MAPPED:
            v = 1;
            break;
        case CU_POINTER_ATTRIBUTE_CONTEXT:
            v = (uint64_t)(uintptr_t)&the_ctx;
            break;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
            v = p;
            break;
        case CU_POINTER_ATTRIBUTE_HOST_POINTER:
            v = host ? p : 0;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            v = f->base;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            v = f->size;
            break;
        default:
            break;
        }
    memcpy(data, &v, n); /* little-endian: the low bytes */
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p)
{
    NEED_INIT();
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_find(p, ACCESSIBLE);
    struct falloc copy = f ? *f : (struct falloc){0};
    pthread_mutex_unlock(&mu);
    return f ? attr(&copy, a, p, data) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                CUdeviceptr p)
{
    NEED_INIT();
    if (!attrs || !data)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    struct falloc *f = fa_find(p, ACCESSIBLE);
    struct falloc copy = f ? *f : (struct falloc){0};
    pthread_mutex_unlock(&mu);
    for (unsigned i = 0; i < n; i++) {
        CUresult r = attr(f ? &copy : NULL, attrs[i], p, data[i]);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

/* ---- copies and fills --------------------------------------------------------------------------
 */

static CUresult copy(void *dst, const void *src, size_t n)
{
    NEED_INIT();
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    memmove(dst, src, n);
    return CUDA_SUCCESS;
}

/* The typed entry points go by the addresses too (unified addressing), except that their
 * device side must be device-accessible memory. */
static CUresult htod(CUdeviceptr d, const void *s, size_t n)
{
    return copy(dev_at(d, n), any_at((uint64_t)(uintptr_t)s, n), n);
}

static CUresult dtoh(void *d, CUdeviceptr s, size_t n)
{
    if (is_lost())
        return CUDA_ERROR_LAUNCH_FAILED;
    return copy(any_at((uint64_t)(uintptr_t)d, n), dev_at(s, n), n);
}

static CUresult dtod(CUdeviceptr d, CUdeviceptr s, size_t n)
{
    return copy(dev_at(d, n), dev_at(s, n), n);
}

static CUresult any(CUdeviceptr d, CUdeviceptr s, size_t n)
{
    return copy(any_at(d, n), any_at(s, n), n);
}

static CUresult fill(CUdeviceptr d, uint32_t v, size_t n, int elem)
{
    NEED_INIT();
    uint8_t *p = dev_at(d, (uint64_t)n * (uint64_t)elem);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++)
        memcpy(p + i * (size_t)elem, &v, (size_t)elem); /* little-endian: low bytes first */
    return CUDA_SUCCESS;
}

/* A task run now (or again, at a graph's launch). */
static CUresult run_task(const struct task *t)
{
    switch (t->kind) {
    case T_LAUNCH: {
        struct launch l = {t->buf, t->threads};
        return t->f->k->fn(&l);
    }
    case T_ANY:
        return any(t->d, t->s, t->n);
    case T_HTOD:
        return htod(t->d, (const void *)(uintptr_t)t->s, t->n);
    case T_DTOH:
        return dtoh((void *)(uintptr_t)t->d, t->s, t->n);
    case T_DTOD:
        return dtod(t->d, t->s, t->n);
    case T_WRITE: {
        uint8_t *p = any_at(t->d, (uint64_t)t->elem);
        if (!p)
            return CUDA_ERROR_INVALID_VALUE;
        if (t->elem == 8)
            __atomic_store_n((uint64_t *)p, t->v64, __ATOMIC_SEQ_CST);
        else
            __atomic_store_n((uint32_t *)p, t->v, __ATOMIC_SEQ_CST);
        return CUDA_SUCCESS;
    }
    case T_NOP:
        return CUDA_SUCCESS;
    default:
        return fill(t->d, t->v, t->n, t->elem);
    }
}

/* An asynchronous copy or fill on stream st: run, or recorded while st captures. */
/* FAKE_CUDA_LATE=1 (a lie the tests tell on purpose): work that CUDA lets the legacy default
 * stream run asynchronously to the host — memsets and device-to-device copies, even through
 * the "synchronous" entry points — completes late: it is held until something is ordered after
 * it on the legacy stream (a launch or copy on it or on a blocking stream, a synchronisation of
 * it or of the context). A kernel on a non-blocking stream does not wait for it, as on a GPU.
 * Without it every op runs as it is enqueued. */
static struct {
    pthread_mutex_t mu;
    struct task *t;
    size_t n, cap;
} late = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int late_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("FAKE_CUDA_LATE");
        pthread_once(&lie.once, lie_parse);
        on = (e && *e && strcmp(e, "0") != 0) || lie.late;
    }
    return on;
}

/* The legacy stream, or a stream that synchronises with it (created without
 * CU_STREAM_NON_BLOCKING; the per-thread default stream). */
static int blocking(CUstream s)
{
    return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ||
           !(s->flags & CU_STREAM_NON_BLOCKING);
}

/* Runs what the legacy stream held back: something is ordered after it now. */
static CUresult late_flush(void)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&late.mu);
    for (size_t i = 0; i < late.n; i++) {
        CUresult ri = run_task(&late.t[i]);
        if (r == CUDA_SUCCESS)
            r = ri;
    }
    late.n = 0;
    pthread_mutex_unlock(&late.mu);
    return r;
}

/* ---- waits on memory values: a stream's deferred work ------------------------------------------
 * cuStreamWaitValue32/64 whose condition is not met blocks its stream: from then on the stream's
 * work is deferred, queued in order behind the wait, until the value at the address meets the
 * condition (cuStreamWriteValue32/64 on another stream, a copy, fill or kernel writing it, or a
 * host write to pinned or managed memory). The CUDA ordering rules hold for deferred work: an op
 * on the legacy stream runs after the earlier work of every blocking stream (created without
 * CU_STREAM_NON_BLOCKING, or a per-thread default stream), an op on a blocking stream after the
 * legacy stream's earlier work; cuStreamWaitEvent waits for what preceded the event's record.
 * A stream with nothing deferred and nothing to wait for runs each op as it is enqueued, as
 * before. The host blocks (a condition variable, polling host memory every 2 ms) where a real
 * driver blocks it: cuStreamSynchronize (the legacy stream: with the blocking streams' earlier
 * work), cuEventSynchronize of an event recorded behind deferred work, cuCtxSynchronize, and the
 * synchronous copies that involve host memory (cuMemcpyDtoH/HtoD, cuMemcpy with a host side),
 * which wait for their stream's earlier work and then for themselves. Synchronous fills and
 * device-to-device copies return at once, as on a GPU. Deferred launches run without the lies
 * (FAKE_CUDA_LIE) and deferred work without FAKE_CUDA_LATE: both apply to work run as issued. */
enum { Q_TASK, Q_WAIT, Q_AFTER };
struct fq_ent {
    int kind;
    struct task t;  /* Q_TASK */
    uint64_t value; /* Q_WAIT: at t.d, t.elem bytes, by t.v (CUstreamWaitValue_flags) */
    struct fq *on;  /* Q_AFTER: until on has run its entry upto */
    uint64_t upto;
    CUresult *result; /* a synchronous caller's, set when the entry ran */
};
enum { FQ_LEGACY, FQ_PER_THREAD, FQ_CREATED };
struct fq {
    struct fq *next;        /* every queue that ever deferred work */
    int kind, linked, dead; /* dead: its stream was destroyed (the queue stays: events and
                             * other queues' entries name it) */
    unsigned flags;
    struct fq_ent *e;
    size_t head, n, cap;
    uint64_t issued, done; /* entries queued and run, ever: entry k (from 1) ran when done >= k */
};
static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cv = PTHREAD_COND_INITIALIZER;
static struct fq legacy_q = {.kind = FQ_LEGACY}, *queues;
static _Thread_local struct fq *pt_q;

static int fq_pending(const struct fq *q)
{
    return q && q->done < q->issued;
}

static int fq_blocking(const struct fq *q)
{
    return q->kind == FQ_PER_THREAD ||
           (q->kind == FQ_CREATED && !(q->flags & CU_STREAM_NON_BLOCKING));
}

/* The queue of stream st (CU_STREAM_LEGACY / CU_STREAM_PER_THREAD for the NULL stream of each
 * variant), made when make is set; NULL when it has none yet. q_mu held. */
static struct fq *fq_of(CUstream st, int make)
{
    struct fq **slot = !st || st == CU_STREAM_LEGACY ? NULL
                       : st == CU_STREAM_PER_THREAD  ? &pt_q
                                                     : &st->q;
    if (!slot) {
        if (make && !legacy_q.linked)
            legacy_q.next = queues, queues = &legacy_q, legacy_q.linked = 1;
        return legacy_q.linked ? &legacy_q : NULL;
    }
    if (!*slot && make) {
        struct fq *q = calloc(1, sizeof *q);
        if (!q)
            return NULL;
        q->kind = slot == &pt_q ? FQ_PER_THREAD : FQ_CREATED;
        q->flags = slot == &pt_q ? 0 : st->flags;
        q->next = queues, queues = q, q->linked = 1;
        *slot = q;
    }
    return *slot;
}

static int fq_push(struct fq *q, const struct fq_ent *e)
{
    if (q->n == q->cap) {
        size_t c = q->cap ? 2 * q->cap : 16;
        struct fq_ent *ne = realloc(q->e, c * sizeof *ne);
        if (!ne)
            return -1;
        q->e = ne, q->cap = c;
    }
    q->e[q->n++] = *e;
    q->issued++;
    return 0;
}

/* Whether an op enqueued on q now must wait: q has deferred work, or the stream's kind orders
 * it after another stream's deferred work. With add, the waits for the latter are queued. */
static int fq_behind(struct fq *q, int add)
{
    int behind = fq_pending(q);
    for (struct fq *o = queues; o; o = o->next) {
        if (o == q || !fq_pending(o))
            continue;
        if ((q->kind == FQ_LEGACY && fq_blocking(o)) || (o->kind == FQ_LEGACY && fq_blocking(q))) {
            behind = 1;
            struct fq_ent w = {.kind = Q_AFTER, .on = o, .upto = o->issued};
            if (add && fq_push(q, &w))
                return -1;
        }
    }
    return behind;
}

static int wait_met(const struct fq_ent *e)
{
    const uint8_t *p = any_at(e->t.d, (uint64_t)e->t.elem);
    if (!p)
        return 1; /* the memory went away: the wait would fault on a GPU */
    uint64_t v = e->t.elem == 8 ? __atomic_load_n((const uint64_t *)p, __ATOMIC_SEQ_CST)
                                : __atomic_load_n((const uint32_t *)p, __ATOMIC_SEQ_CST);
    uint64_t x = e->value;
    switch (e->t.v & 3) {
    case CU_STREAM_WAIT_VALUE_EQ:
        return v == x;
    case CU_STREAM_WAIT_VALUE_AND:
        return (v & x) != 0;
    case CU_STREAM_WAIT_VALUE_NOR:
        return (e->t.elem == 8 ? ~(v | x) : (uint32_t) ~(v | x)) != 0;
    default: /* GEQ, cyclic */
        return e->t.elem == 8 ? (int64_t)(v - x) >= 0 : (int32_t)(uint32_t)(v - x) >= 0;
    }
}

/* Runs every queue's head entries that can run, until none can. q_mu held. */
static void fq_pump(void)
{
    for (int progress = 1; progress;) {
        progress = 0;
        for (struct fq *q = queues; q; q = q->next) {
            while (q->head < q->n) {
                struct fq_ent *e = &q->e[q->head];
                CUresult r = CUDA_SUCCESS;
                if (e->kind == Q_WAIT && !wait_met(e))
                    break;
                if (e->kind == Q_AFTER && e->on->done < e->upto)
                    break;
                if (e->kind == Q_TASK)
                    r = run_task(&e->t);
                if (e->result)
                    *e->result = r;
                q->head++, q->done++, progress = 1;
            }
            if (q->head == q->n)
                q->head = q->n = 0;
        }
    }
    pthread_cond_broadcast(&q_cv);
}

/* Blocks until q has run entry upto (every queue in qs up to ups[i] when n > 0). q_mu held. */
static void fq_wait(struct fq **qs, const uint64_t *ups, size_t n)
{
    for (;;) {
        fq_pump();
        size_t i = 0;
        while (i < n && qs[i]->done >= ups[i])
            i++;
        if (i == n)
            return;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 2000000;
        if (ts.tv_nsec >= 1000000000)
            ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&q_cv, &q_mu, &ts); /* host writes release waits too */
    }
}

/* Enqueues e on stream st when something is ahead of it (for a wait: or its value is not met):
 * returns 1 and, with wait, blocks until it ran (*r: its result). Returns 0 when the caller
 * runs the op now. *seq: the entry's number in its queue (0 when not deferred). */
static int fq_submit(CUstream st, struct fq_ent *e, int wait, CUresult *r, struct fq **qo,
                     uint64_t *seq)
{
    pthread_mutex_lock(&q_mu);
    struct fq *q = fq_of(st, 0);
    int behind = q ? fq_behind(q, 0) : 0;
    if (!q && !behind) { /* nothing of its own deferred: only the kind's rules */
        struct fq probe = {
            .kind = !st || st == CU_STREAM_LEGACY ? FQ_LEGACY
                    : st == CU_STREAM_PER_THREAD  ? FQ_PER_THREAD
                                                  : FQ_CREATED,
            .flags = st && st != CU_STREAM_LEGACY && st != CU_STREAM_PER_THREAD ? st->flags : 0};
        behind = fq_behind(&probe, 0);
    }
    if (!behind && !(e->kind == Q_WAIT && !wait_met(e))) {
        pthread_mutex_unlock(&q_mu);
        if (seq)
            *seq = 0;
        return 0;
    }
    *r = CUDA_SUCCESS;
    q = fq_of(st, 1);
    if (!q || fq_behind(q, 1) < 0 || (e->result = wait ? r : NULL, fq_push(q, e))) {
        pthread_mutex_unlock(&q_mu);
        *r = CUDA_ERROR_OUT_OF_MEMORY;
        return 1;
    }
    uint64_t k = q->issued;
    if (qo)
        *qo = q;
    if (seq)
        *seq = k;
    fq_pump();
    if (wait)
        fq_wait(&q, &k, 1);
    pthread_mutex_unlock(&q_mu);
    return 1;
}

/* After an op ran as issued: what waited for a value it wrote runs now. */
static void fq_kick(void)
{
    pthread_mutex_lock(&q_mu);
    if (queues)
        fq_pump();
    pthread_mutex_unlock(&q_mu);
}

/* A task on stream st deferred when it must wait (1, *r set), else 0: run it now. */
static int fq_task(CUstream st, const struct task *t, int wait, CUresult *r)
{
    struct fq_ent e = {.kind = Q_TASK, .t = *t};
    return fq_submit(st, &e, wait, r, NULL, NULL);
}

/* Whether a synchronous copy blocks the host until it is done: one with a host side, by the
 * addresses (a "host" pointer that is device memory makes a device copy). Fills and
 * device-to-device copies do not. */
static int host_waits(const struct task *t)
{
    int dev_d = store && t->d - heap_base < heap_size,
        dev_s = store && t->s - heap_base < heap_size;
    if (t->kind == T_DTOH)
        return !dev_d;
    if (t->kind == T_HTOD)
        return !dev_s;
    return t->kind == T_ANY && !(dev_d && dev_s);
}

/* A copy or fill on stream st (CU_STREAM_LEGACY / CU_STREAM_PER_THREAD for the NULL stream of
 * each variant): recorded while st captures; deferred behind waits (above; sync: from a
 * synchronous entry point); on a blocking stream, held back (late, for fills and device copies)
 * or run after what was held; else run now. */
static CUresult async_op(CUstream st, int kind, uint64_t d, uint64_t s, size_t n, uint32_t v,
                         int elem, int sync)
{
    struct task t = {.kind = kind, .d = d, .s = s, .n = n, .v = v, .elem = elem};
    CUgraph g = capturing(st);
    if (g)
        return defer(g, &t);
    CUresult qr;
    if (fq_task(st, &t, sync && host_waits(&t), &qr))
        return qr;
    if (late_on() && blocking(st)) {
        if (kind == T_FILL || kind == T_DTOD) {
            pthread_mutex_lock(&late.mu);
            CUresult r = CUDA_SUCCESS;
            if (late.n == late.cap) {
                size_t c = late.cap ? 2 * late.cap : 16;
                struct task *nt = realloc(late.t, c * sizeof *nt);
                if (nt)
                    late.t = nt, late.cap = c;
                else
                    r = CUDA_ERROR_OUT_OF_MEMORY;
            }
            if (r == CUDA_SUCCESS)
                late.t[late.n++] = t;
            pthread_mutex_unlock(&late.mu);
            return r;
        }
        late_flush();
    }
    CUresult r = run_task(&t);
    fq_kick();
    return r;
}

#define COPIES(SFX, ASFX)                                                                      \
    CUresult cuMemcpy##SFX(CUdeviceptr d, CUdeviceptr s, size_t n)                             \
    {                                                                                          \
        return async_op(SYNC_STREAM, T_ANY, d, s, n, 0, 0, 1);                                 \
    }                                                                                          \
    CUresult cuMemcpyHtoD_v2##SFX(CUdeviceptr d, const void *s, size_t n)                      \
    {                                                                                          \
        return async_op(SYNC_STREAM, T_HTOD, d, (uint64_t)(uintptr_t)s, n, 0, 0, 1);           \
    }                                                                                          \
    CUresult cuMemcpyDtoH_v2##SFX(void *d, CUdeviceptr s, size_t n)                            \
    {                                                                                          \
        return async_op(SYNC_STREAM, T_DTOH, (uint64_t)(uintptr_t)d, s, n, 0, 0, 1);           \
    }                                                                                          \
    CUresult cuMemcpyDtoD_v2##SFX(CUdeviceptr d, CUdeviceptr s, size_t n)                      \
    {                                                                                          \
        return async_op(SYNC_STREAM, T_DTOD, d, s, n, 0, 0, 1);                                \
    }                                                                                          \
    CUresult cuMemcpyAsync##ASFX(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)          \
    {                                                                                          \
        return async_op(st ? st : SYNC_STREAM, T_ANY, d, s, n, 0, 0, 0);                       \
    }                                                                                          \
    CUresult cuMemcpyHtoDAsync_v2##ASFX(CUdeviceptr d, const void *s, size_t n, CUstream st)   \
    {                                                                                          \
        return async_op(st ? st : SYNC_STREAM, T_HTOD, d, (uint64_t)(uintptr_t)s, n, 0, 0, 0); \
    }                                                                                          \
    CUresult cuMemcpyDtoHAsync_v2##ASFX(void *d, CUdeviceptr s, size_t n, CUstream st)         \
    {                                                                                          \
        return async_op(st ? st : SYNC_STREAM, T_DTOH, (uint64_t)(uintptr_t)d, s, n, 0, 0, 0); \
    }                                                                                          \
    CUresult cuMemcpyDtoDAsync_v2##ASFX(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)   \
    {                                                                                          \
        return async_op(st ? st : SYNC_STREAM, T_DTOD, d, s, n, 0, 0, 0);                      \
    }                                                                                          \
    CUresult cuMemsetD8_v2##SFX(CUdeviceptr d, unsigned char v, size_t n)                      \
    {                                                                                          \
        return async_op(SYNC_STREAM, T_FILL, d, 0, n, v, 1, 1);                                \
    }                                                                                          \
    CUresult cuMemsetD16_v2##SFX(CUdeviceptr d, unsigned short v, size_t n)                    \
    {                                                                                          \
        return async_op(SYNC_STREAM, T_FILL, d, 0, n, v, 2, 1);                                \
    }                                                                                          \
    CUresult cuMemsetD32_v2##SFX(CUdeviceptr d, unsigned int v, size_t n)                      \
    {                                                                                          \
        return async_op(SYNC_STREAM, T_FILL, d, 0, n, v, 4, 1);                                \
    }                                                                                          \
    CUresult cuMemsetD8Async##ASFX(CUdeviceptr d, unsigned char v, size_t n, CUstream st)      \
    {                                                                                          \
        return async_op(st ? st : SYNC_STREAM, T_FILL, d, 0, n, v, 1, 0);                      \
    }                                                                                          \
    CUresult cuMemsetD16Async##ASFX(CUdeviceptr d, unsigned short v, size_t n, CUstream st)    \
    {                                                                                          \
        return async_op(st ? st : SYNC_STREAM, T_FILL, d, 0, n, v, 2, 0);                      \
    }                                                                                          \
    CUresult cuMemsetD32Async##ASFX(CUdeviceptr d, unsigned int v, size_t n, CUstream st)      \
    {                                                                                          \
        return async_op(st ? st : SYNC_STREAM, T_FILL, d, 0, n, v, 4, 0);                      \
    }
/* The stream a synchronous entry point runs on: the legacy one, or the per-thread one */
#define SYNC_STREAM CU_STREAM_LEGACY
COPIES(, )
#undef SYNC_STREAM
#define SYNC_STREAM CU_STREAM_PER_THREAD
COPIES(_ptds, _ptsz)
#undef SYNC_STREAM

/* ========================================================================================== */
/* Streams and events                                                                         */
/* ========================================================================================== */

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
    if (s && s->q) { /* its deferred work still runs (as on a GPU) */
        pthread_mutex_lock(&q_mu);
        s->q->dead = 1;
        pthread_mutex_unlock(&q_mu);
    }
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
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&q_mu);
    if (e->q)
        fq_wait(&e->q, &e->seq, 1);
    pthread_mutex_unlock(&q_mu);
    return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent e)
{
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&q_mu);
    fq_pump();
    int ready = !e->q || e->q->done >= e->seq;
    pthread_mutex_unlock(&q_mu);
    return ready ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

/* cuCtxSynchronize: every queue's work issued so far. */
static void fq_ctx_sync(void)
{
    pthread_mutex_lock(&q_mu);
    size_t n = 0, i = 0;
    for (struct fq *q = queues; q; q = q->next)
        n += fq_pending(q);
    struct fq **qs = n ? malloc(n * sizeof *qs) : NULL;
    uint64_t *ups = n ? malloc(n * sizeof *ups) : NULL;
    if (qs && ups) {
        for (struct fq *q = queues; q; q = q->next)
            if (fq_pending(q))
                qs[i] = q, ups[i++] = q->issued;
        fq_wait(qs, ups, n);
    } else if (n) { /* no memory for the list: every queue drained */
        for (int more = 1; more;) {
            more = 0;
            for (struct fq *q = queues; q; q = q->next)
                if (fq_pending(q)) {
                    uint64_t up = q->issued;
                    fq_wait(&q, &up, 1);
                    more = 1;
                }
        }
    }
    free(qs);
    free(ups);
    pthread_mutex_unlock(&q_mu);
}

/* cuStreamSynchronize / cuStreamQuery: what the stream waits for is its own earlier work, and
 * for the legacy stream the blocking streams' earlier work too (a no-op deferred behind it). */
static CUresult stream_sync(CUstream s, int query)
{
    pthread_mutex_lock(&q_mu);
    fq_pump();
    struct fq *q = fq_of(s, 0);
    int legacy = !s || s == CU_STREAM_LEGACY, busy = q && fq_pending(q);
    if (legacy) {
        struct fq probe = {.kind = FQ_LEGACY};
        busy |= fq_behind(&probe, 0);
    }
    if (!busy || query) {
        pthread_mutex_unlock(&q_mu);
        return busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
    }
    if (!legacy) {
        uint64_t up = q->issued;
        fq_wait(&q, &up, 1);
        pthread_mutex_unlock(&q_mu);
        return CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&q_mu);
    struct task t = {.kind = T_NOP};
    CUresult r = CUDA_SUCCESS;
    fq_task(CU_STREAM_LEGACY, &t, 1, &r);
    return r;
}

/* An event record: a no-op on its stream, complete when the stream reaches it. */
static void event_place(CUevent e, CUstream s)
{
    struct fq_ent n = {.kind = Q_TASK, .t = {.kind = T_NOP}};
    CUresult r;
    e->q = NULL, e->seq = 0;
    if (!fq_submit(s, &n, 0, &r, &e->q, &e->seq))
        e->q = NULL;
}

/* cuStreamWaitEvent: s waits for what preceded the event's record. */
static CUresult event_wait(CUstream s, CUevent e)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&q_mu);
    if (e->q && e->q->done < e->seq) { /* deferred: s runs nothing more before it ran */
        struct fq_ent w = {.kind = Q_AFTER, .on = e->q, .upto = e->seq};
        struct fq *q = fq_of(s, 1);
        if (!q || fq_behind(q, 1) < 0 || fq_push(q, &w))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        fq_pump();
    }
    pthread_mutex_unlock(&q_mu);
    return r;
}

/* cuStreamWaitValue32/64: a wait entry; cuStreamWriteValue32/64: a write task. */
static CUresult wait_value(CUstream s, CUdeviceptr addr, uint64_t value, unsigned flags, int elem)
{
    NEED_INIT();
    if (!any_at(addr, (uint64_t)elem) || (addr & (uint64_t)(elem - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (capturing(s))
        return CUDA_ERROR_NOT_SUPPORTED; /* (not in the fake's graphs) */
    struct fq_ent e = {.kind = Q_WAIT, .t = {.d = addr, .elem = elem, .v = flags}, .value = value};
    CUresult r = CUDA_SUCCESS;
    fq_submit(s, &e, 0, &r, NULL, NULL);
    return r;
}

static CUresult write_value(CUstream s, CUdeviceptr addr, uint64_t value, int elem)
{
    NEED_INIT();
    struct task t = {.kind = T_WRITE, .d = addr, .elem = elem, .v = (uint32_t)value, .v64 = value};
    if (!any_at(addr, (uint64_t)elem) || (addr & (uint64_t)(elem - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    CUgraph g = capturing(s);
    if (g)
        return defer(g, &t);
    CUresult r;
    if (fq_task(s, &t, 0, &r))
        return r;
    r = run_task(&t);
    fq_kick(); /* what waited for it runs now */
    return r;
}

#define VALUE_OPS(V, SFX, NULLS)                                                               \
    CUresult cuStreamWaitValue32##V##SFX(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned f)  \
    {                                                                                          \
        return wait_value(s ? s : NULLS, a, v, f, 4);                                          \
    }                                                                                          \
    CUresult cuStreamWaitValue64##V##SFX(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned f)  \
    {                                                                                          \
        return wait_value(s ? s : NULLS, a, v, f, 8);                                          \
    }                                                                                          \
    CUresult cuStreamWriteValue32##V##SFX(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned f) \
    {                                                                                          \
        (void)f;                                                                               \
        return write_value(s ? s : NULLS, a, v, 4);                                            \
    }                                                                                          \
    CUresult cuStreamWriteValue64##V##SFX(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned f) \
    {                                                                                          \
        (void)f;                                                                               \
        return write_value(s ? s : NULLS, a, v, 8);                                            \
    }
VALUE_OPS(, , CU_STREAM_LEGACY)
VALUE_OPS(, _ptsz, CU_STREAM_PER_THREAD)
VALUE_OPS(_v2, , CU_STREAM_LEGACY)
VALUE_OPS(_v2, _ptsz, CU_STREAM_PER_THREAD)

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

/* A stream waiting on an event recorded in a capturing stream joins that capture. */
static CUresult join(CUstream s, CUevent e)
{
    CUgraph g = e->cap;
    if (!g || capturing(s) == g)
        return CUDA_SUCCESS;
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || s->cap ||
        g->n_joined == (int)(sizeof g->joined / sizeof g->joined[0]))
        return CUDA_ERROR_INVALID_VALUE; /* (a real driver joins more) */
    s->cap = g;
    g->joined[g->n_joined++] = s;
    return CUDA_SUCCESS;
}

#define STREAM_OPS(SFX, NULLS)                                                        \
    CUresult cuStreamSynchronize##SFX(CUstream s)                                     \
    {                                                                                 \
        NEED_LIVE();                                                                  \
        CUresult r = stream_sync(s ? s : NULLS, 0);                                   \
        if (r != CUDA_SUCCESS)                                                        \
            return r;                                                                 \
        return late_on() && blocking(s) ? late_flush() : CUDA_SUCCESS;                \
    }                                                                                 \
    CUresult cuStreamQuery##SFX(CUstream s)                                           \
    {                                                                                 \
        return stream_sync(s ? s : NULLS, 1);                                         \
    }                                                                                 \
    CUresult cuStreamWaitEvent##SFX(CUstream s, CUevent e, unsigned int flags)        \
    {                                                                                 \
        (void)flags;                                                                  \
        if (!e)                                                                       \
            return CUDA_ERROR_INVALID_HANDLE;                                         \
        CUresult r = join(s, e);                                                      \
        return r == CUDA_SUCCESS && !capturing(s) ? event_wait(s ? s : NULLS, e) : r; \
    }                                                                                 \
    CUresult cuEventRecord##SFX(CUevent e, CUstream s)                                \
    {                                                                                 \
        if (!e)                                                                       \
            return CUDA_ERROR_INVALID_HANDLE;                                         \
        e->t = now_ns();                                                              \
        e->cap = capturing(s);                                                        \
        if (!e->cap)                                                                  \
            event_place(e, s ? s : NULLS);                                            \
        return CUDA_SUCCESS;                                                          \
    }                                                                                 \
    CUresult cuEventRecordWithFlags##SFX(CUevent e, CUstream s, unsigned int flags)   \
    {                                                                                 \
        (void)flags;                                                                  \
        return cuEventRecord##SFX(e, s);                                              \
    }
STREAM_OPS(, CU_STREAM_LEGACY)
STREAM_OPS(_ptsz, CU_STREAM_PER_THREAD)

static CUresult begin_capture(CUstream s)
{
    NEED_INIT();
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s->cap)
        return CUDA_ERROR_ILLEGAL_STATE;
    CUgraph g = calloc(1, sizeof *g);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->cap = g;
    g->joined[g->n_joined++] = s;
    return CUDA_SUCCESS;
}

static CUresult end_capture(CUstream s, CUgraph *out)
{
    CUgraph g = capturing(s);
    if (!g || !out)
        return CUDA_ERROR_ILLEGAL_STATE;
    for (int i = 0; i < g->n_joined; i++)
        g->joined[i]->cap = NULL;
    g->n_joined = 0;
    *out = g;
    return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture(CUstream s)
{
    return begin_capture(s);
}

CUresult cuStreamBeginCapture_ptsz(CUstream s)
{
    return begin_capture(s);
}

CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    (void)mode;
    return begin_capture(s);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    (void)mode;
    return begin_capture(s);
}

CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
    return end_capture(s, g);
}

CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
    return end_capture(s, g);
}

/* A graph built with the node API: the fake's nodes do nothing. */
CUresult cuGraphCreate(CUgraph *g, unsigned int flags)
{
    (void)flags;
    NEED_INIT();
    return g && (*g = calloc(1, sizeof **g)) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuGraphAddEmptyNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n)
{
    (void)deps, (void)n;
    if (!g || !node)
        return CUDA_ERROR_INVALID_VALUE;
    *node = (CUgraphNode)g; /* any non-null handle */
    return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *x, CUgraph g)
{
    NEED_INIT();
    if (!x || !g)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphExec e = calloc(1, sizeof *e);
    if (!e || (g->n && !(e->t = malloc(g->n * sizeof *e->t)))) {
        free(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (g->n)
        memcpy(e->t, g->t, g->n * sizeof *e->t);
    e->n = g->n;
    *x = e;
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate(CUgraphExec *x, CUgraph g, CUgraphNode *err, char *log, size_t n)
{
    (void)err, (void)log, (void)n;
    return instantiate(x, g);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *x, CUgraph g, CUgraphNode *err, char *log, size_t n)
{
    (void)err, (void)log, (void)n;
    return instantiate(x, g);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *x, CUgraph g, unsigned long long flags)
{
    (void)flags;
    return instantiate(x, g);
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    (void)p;
    return instantiate(x, g);
}

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *x, CUgraph g,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    (void)p;
    return instantiate(x, g);
}

/* The graph's tasks, in order; into the graph of a capturing stream instead (a child graph). */
static CUresult graph_launch(CUgraphExec x, CUstream s)
{
    NEED_INIT();
    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraph g = capturing(s);
    for (size_t i = 0; i < x->n; i++) {
        CUresult r;
        if (g)
            r = defer(g, &x->t[i]);
        else if (!fq_task(s, &x->t[i], 0, &r))
            r = run_task(&x->t[i]);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec x, CUstream s)
{
    return graph_launch(x, s ? s : CU_STREAM_LEGACY);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream s)
{
    return graph_launch(x, s ? s : CU_STREAM_PER_THREAD);
}

CUresult cuGraphDestroy(CUgraph g)
{
    if (g) {
        free(g->t);
        free(g);
    }
    return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec x)
{
    if (x) {
        free(x->t);
        free(x);
    }
    return CUDA_SUCCESS;
}

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

/* What FAKE_CUDA_GPA_INTERNAL=cuMemsetD32 makes cuGetProcAddress return for cuMemsetD32: a
 * function of the right ABI that is not one of the exported symbols (a driver may do that:
 * research/cuda.md section 7), so the shim cannot identify it. */
static CUresult internal_memsetd32(CUdeviceptr d, unsigned int v, size_t n)
{
    return fill(d, v, n, 4);
}

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
    const char *internal = getenv("FAKE_CUDA_GPA_INTERNAL");
    if (internal && !strcmp(internal, symbol) && !strcmp(symbol, "cuMemsetD32") && ver >= 3020) {
        *pfn = (void *)internal_memsetd32;
        st = CU_GET_PROC_ADDRESS_SUCCESS;
    }
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
