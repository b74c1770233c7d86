/*
 * capture/cuda/cap_cuda_shim.c — the CUDA Driver API shim: it stands in for libcuda.so.1, loads the
 * real driver by path, answers cuGetProcAddress with its own function for exactly the variant
 * the driver returned, and wraps the entry points that reprise records (research/cuda.md
 * section 6, "minimum viable capture").
 *
 * Deployment (research/cuda.md 1.4, option A): the shim is installed as a file named
 * libcuda.so.1 in a directory of its own (build/default/cuda/, <prefix>/lib/reprise/cuda/) that
 * `reprise capture --api cuda` puts first on LD_LIBRARY_PATH. Programs linked with -lcuda
 * (DT_NEEDED libcuda.so.1), libcudart's dlopen("libcuda.so.1") + dlsym("cuGetProcAddress_v2"),
 * and libraries that dlsym driver symbols on that handle all reach the shim with no dlsym
 * games. The real driver is dlopen'ed RTLD_LOCAL by absolute path: $REPRISE_CUDA_DRIVER, else
 * the usual distribution paths. We chose this over LD_PRELOAD + dlsym interposition (option B)
 * because an LD_PRELOAD shim sees none of cudart's 440 cuGetProcAddress requests unless it also
 * overrides dlsym (two glibc symbol versions, recursion), and a replacement directory catches
 * every caller the same way. Limits: a program that dlopens the driver by absolute path, or has
 * a DT_RPATH naming the driver's directory, bypasses the shim.
 *
 * cuGetProcAddress dispatch (research/cuda.md 1.5): forward the request unchanged, identify the
 * returned pointer among the driver's exported variants {sym, sym_v2..v9} x {"", _ptds, _ptsz}
 * by address, and return the shim's export of that same variant (its wrapper, or its counting
 * trampoline). An answer that matches no export (a runtime asks for its whole table at start:
 * on NVIDIA's 580 driver the GL, EGL and VDPAU interop entry points are such) is handed back
 * behind an unexported counting trampoline of its own; only its first call names it in the
 * trace, which is then incomplete unless every export of that name is a pure query or
 * harmless. When all CAP_CUDA_UNKNOWN_SLOTS are taken, the answer is returned as is and named
 * at once.
 * cuGetExportTable is a trampoline: the private tables pass through untouched (1.6).
 *
 * Wrappers call the real function through cap_cuda_next[], and the recorder (cap_cuda_rec.c)
 * only after the real call succeeded. A failure inside reprise never changes what the program
 * sees: the recorder logs once and stops, the calls keep going through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/cap.h"
#include "capture/cuda/cap_cuda_int.h"

/* ========================================================================================== */
/* Loading the real driver                                                                    */
/* ========================================================================================== */

static void *real_handle;
static char real_path[4096];
static int sorted[CAP_SYM__COUNT]; /* symbol indices by name, for cap_cuda_sym_find */

static CUresult stub_no_driver(void)
{
    return CUDA_ERROR_NO_DEVICE;
}

static CUresult stub_missing(void)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}

static int cmp_sym(const void *a, const void *b)
{
    return strcmp(cap_cuda_names[*(const int *)a], cap_cuda_names[*(const int *)b]);
}

int cap_cuda_sym_find(const char *name)
{
    size_t lo = 0, hi = CAP_SYM__COUNT;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(cap_cuda_names[sorted[mid]], name);
        if (!c)
            return sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int cap_cuda_have_driver(void)
{
    return real_handle != NULL;
}

const char *cap_cuda_driver_path(void)
{
    return real_path;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static void *open_driver(const char *self)
{
    static const char *const paths[] = {
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
        "/usr/lib64/libcuda.so.1",
        "/usr/lib/libcuda.so.1",
        "/usr/local/nvidia/lib64/libcuda.so.1",
        "/usr/lib/wsl/lib/libcuda.so.1",
    };
    const char *env = getenv("REPRISE_CUDA_DRIVER");
    if (env && *env) {
        if (self && same_file(env, self)) {
            fprintf(stderr, "reprise: CUDA capture: REPRISE_CUDA_DRIVER=%s is the shim itself\n",
                    env);
            return NULL;
        }
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            fprintf(stderr, "reprise: CUDA capture: cannot load REPRISE_CUDA_DRIVER=%s: %s\n", env,
                    dlerror());
        else
            snprintf(real_path, sizeof real_path, "%s", env);
        return h;
    }
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0 || (self && same_file(paths[i], self)))
            continue;
        void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(real_path, sizeof real_path, "%s", paths[i]);
            return h;
        }
    }
    return NULL;
}

__attribute__((constructor)) static void cap_cuda_load(void)
{
    for (int i = 0; i < CAP_SYM__COUNT; i++)
        sorted[i] = i;
    qsort(sorted, CAP_SYM__COUNT, sizeof sorted[0], cmp_sym);

    Dl_info self;
    const char *self_path = NULL;
    void *self_handle = NULL;
    if (dladdr((void *)cap_cuda_load, &self) && self.dli_fname) {
        self_path = self.dli_fname;
        self_handle = dlopen(self_path, RTLD_NOW | RTLD_NOLOAD);
    }
    real_handle = open_driver(self_path);
    for (int i = 0; i < CAP_SYM__COUNT; i++) {
        void *p = real_handle ? dlsym(real_handle, cap_cuda_names[i]) : NULL;
        cap_cuda_real[i] = p;
        cap_cuda_next[i] = p ? p : real_handle ? (void *)stub_missing : (void *)stub_no_driver;
        cap_cuda_self[i] = self_handle ? dlsym(self_handle, cap_cuda_names[i]) : NULL;
    }
    if (self_handle)
        dlclose(self_handle); /* drops the reference NOLOAD took; the shim stays loaded */
}

/* ========================================================================================== */
/* cuGetProcAddress                                                                           */
/* ========================================================================================== */

/* Appends one line to $REPRISE_CUDA_PROCLOG (capture/cap.h): one write(2) per line on an
 * O_APPEND descriptor, so that threads and processes sharing the file do not interleave. */
static void proclog(const char *symbol, int version, unsigned long long flags, const char *what)
{
    static int fd = -2;
    int f = __atomic_load_n(&fd, __ATOMIC_ACQUIRE);
    if (f == -2) {
        const char *p = getenv(CAP_ENV_PROCLOG);
        int nf = p && *p ? open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
        int expect = -2;
        if (!__atomic_compare_exchange_n(&fd, &expect, nf, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            if (nf >= 0)
                close(nf);
        }
        f = __atomic_load_n(&fd, __ATOMIC_ACQUIRE);
    }
    if (f < 0)
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "%.200s %d %llu %.200s\n", symbol ? symbol : "(null)",
                     version, flags, what);
    if (n > 0 && write(f, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0)
        return; /* a log that cannot be written is not the program's problem */
}

/* The unknown slots handed out (capture/cuda/cap_cuda_int.h): the name each stands for, written
 * once under the lock before its trampoline is returned. */
static struct {
    pthread_mutex_t mu;
    int n;
    char names[CAP_CUDA_UNKNOWN_SLOTS][64];
} unknown = {.mu = PTHREAD_MUTEX_INITIALIZER};

const char *cap_cuda_unknown_name(int k)
{
    return k >= 0 && k < __atomic_load_n(&unknown.n, __ATOMIC_ACQUIRE) ? unknown.names[k] : NULL;
}

/* A trampoline standing for real under the name symbol: the slot already given to that pair,
 * else a new one; NULL when every slot is taken. */
static void *unknown_slot(const char *symbol, void *real)
{
    void *t = NULL;
    pthread_mutex_lock(&unknown.mu);
    for (int k = 0; k < unknown.n && !t; k++)
        if (cap_cuda_next[CAP_SYM__COUNT + k] == real && !strcmp(unknown.names[k], symbol))
            t = cap_cuda_unknown_tramp(k);
    if (!t && unknown.n < CAP_CUDA_UNKNOWN_SLOTS) {
        int k = unknown.n;
        snprintf(unknown.names[k], sizeof unknown.names[k], "%s", symbol);
        __atomic_store_n(&cap_cuda_next[CAP_SYM__COUNT + k], real, __ATOMIC_RELEASE);
        __atomic_store_n(&unknown.n, k + 1, __ATOMIC_RELEASE);
        t = cap_cuda_unknown_tramp(k);
    }
    pthread_mutex_unlock(&unknown.mu);
    return t;
}

void *cap_cuda_dispatch(const char *symbol, void *real, int version, unsigned long long flags)
{
    static const char *const ver[] = {"", "_v2", "_v3", "_v4", "_v5", "_v6", "_v7", "_v8", "_v9"};
    static const char *const pt[] = {"", "_ptds", "_ptsz"};
    char name[256];
    if (symbol && strlen(symbol) <= sizeof name - 16) {
        for (size_t v = 0; v < sizeof ver / sizeof ver[0]; v++)
            for (size_t p = 0; p < sizeof pt / sizeof pt[0]; p++) {
                snprintf(name, sizeof name, "%s%s%s", symbol, ver[v], pt[p]);
                int i = cap_cuda_sym_find(name);
                if (i >= 0 && cap_cuda_real[i] == real && cap_cuda_self[i]) {
                    proclog(symbol, version, flags, name);
                    return cap_cuda_self[i];
                }
            }
    }
    /* none of the exports: a trampoline that notes the first call, where a slot is left (a
     * name too long for a slot is one no driver has) */
    void *t =
        symbol && strlen(symbol) < sizeof unknown.names[0] ? unknown_slot(symbol, real) : NULL;
    if (t) {
        proclog(symbol, version, flags, "unidentified");
        return t;
    }
    proclog(symbol, version, flags, "unidentified, passed through (no slot left)");
    cap_cuda_unidentified(symbol ? symbol : "(null)");
    return real;
}

/* Every wrapper from here on is exported (the objects are built with -fvisibility=hidden; the
 * version script capture/cuda/cap_cuda.map keeps only cu* names). */
#pragma GCC visibility push(default)

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    CUresult r = CAP_NEXT(cuGetProcAddress_v2)(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && pfn && *pfn)
        *pfn = cap_cuda_dispatch(symbol, *pfn, cudaVersion, (unsigned long long)flags);
    else
        proclog(symbol, cudaVersion, (unsigned long long)flags, "-");
    return r;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    CUresult r = CAP_NEXT(cuGetProcAddress)(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS && pfn && *pfn)
        *pfn = cap_cuda_dispatch(symbol, *pfn, cudaVersion, (unsigned long long)flags);
    else
        proclog(symbol, cudaVersion, (unsigned long long)flags, "-");
    return r;
}

/* ========================================================================================== */
/* Initialisation, devices, contexts                                                          */
/* ========================================================================================== */

CUresult cuInit(unsigned int Flags)
{
    CUresult r = CAP_NEXT(cuInit)(Flags);
    if (r == CUDA_SUCCESS)
        cap_cuda_rec_start();
    return r;
}

#define REC_DEVICE(dev)                 \
    do {                                \
        if (r == CUDA_SUCCESS && rec) { \
            cap_cuda_lock();            \
            cap_cuda_rec_device(dev);   \
            cap_cuda_unlock();          \
        }                               \
        if (rec)                        \
            cap_cuda_leave();           \
    } while (0)

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    int rec = cap_cuda_enter();
    CUresult r = CAP_NEXT(cuDevicePrimaryCtxRetain)(pctx, dev);
    REC_DEVICE(dev);
    return r;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    int rec = cap_cuda_enter();
    CUresult r = CAP_NEXT(cuCtxCreate_v2)(pctx, flags, dev);
    REC_DEVICE(dev);
    return r;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                        CUdevice dev)
{
    int rec = cap_cuda_enter();
    CUresult r = CAP_NEXT(cuCtxCreate_v4)(pctx, ctxCreateParams, flags, dev);
    REC_DEVICE(dev);
    return r;
}

/* ========================================================================================== */
/* Synchronisation                                                                            */
/* ========================================================================================== */

/* Host-side waits: never under the lock (they block on device work, which may wait for
 * another thread's call). What they cover is what was issued before them (c.before). */
#define SYNC_WRAP(API, PT, STREAM, EV, IS_CTX, CALL)                                 \
    int rec = cap_cuda_enter();                                                      \
    struct cap_cuda_call c = {SBT_CUDA_API_##API, PT, STREAM, cap_cuda_now(), 0, 0}; \
    if (rec)                                                                         \
        c.before = cap_cuda_ord();                                                   \
    CUresult r = CALL;                                                               \
    if (rec) {                                                                       \
        c.t1 = cap_cuda_now();                                                       \
        if (r == CUDA_SUCCESS)                                                       \
            cap_cuda_rec_sync(&c, EV, IS_CTX);                                       \
        cap_cuda_leave();                                                            \
    }                                                                                \
    return r;

CUresult cuCtxSynchronize(void){
    SYNC_WRAP(cuCtxSynchronize, 0, NULL, NULL, 1, CAP_NEXT(cuCtxSynchronize)())}

CUresult cuCtxSynchronize_v2(CUcontext ctx){
    SYNC_WRAP(cuCtxSynchronize_v2, 0, NULL, NULL, 1, CAP_NEXT(cuCtxSynchronize_v2)(ctx))}

CUresult cuStreamSynchronize(CUstream hStream){
    SYNC_WRAP(cuStreamSynchronize, 0, hStream, NULL, 0, CAP_NEXT(cuStreamSynchronize)(hStream))}

CUresult cuStreamSynchronize_ptsz(CUstream hStream){
    SYNC_WRAP(cuStreamSynchronize, 1, hStream, NULL, 0,
              CAP_NEXT(cuStreamSynchronize_ptsz)(hStream))}

/* A query that returns CUDA_SUCCESS told the host the work is done: the same as a sync. */
CUresult cuStreamQuery(CUstream hStream){
    SYNC_WRAP(cuStreamQuery, 0, hStream, NULL, 0, CAP_NEXT(cuStreamQuery)(hStream))}

CUresult cuStreamQuery_ptsz(CUstream hStream){
    SYNC_WRAP(cuStreamQuery, 1, hStream, NULL, 0, CAP_NEXT(cuStreamQuery_ptsz)(hStream))}

CUresult cuEventSynchronize(CUevent hEvent){
    SYNC_WRAP(cuEventSynchronize, 0, NULL, hEvent, 0, CAP_NEXT(cuEventSynchronize)(hEvent))}

CUresult cuEventQuery(CUevent hEvent)
{
    SYNC_WRAP(cuEventQuery, 0, NULL, hEvent, 0, CAP_NEXT(cuEventQuery)(hEvent))
}

/* ========================================================================================== */
/* Enqueueing calls: the lock is held across the real call, so trace order = driver order     */
/* ========================================================================================== */

/* A synchronous copy or fill (PREWAIT: enum cap_cuda_prewait) first waits without the lock for
 * what it would wait for anyway (cap_cuda_prewait), so that the real call, made under the lock,
 * does not block on work that another thread's call releases. Launches and asynchronous calls
 * take the lock at once: they do not wait for device work (a driver whose launch queue is full
 * blocks a launch until the device drains some: that wait stays under the lock). */
#define ENQ_BEGIN_WAIT(API, PT, STREAM, PREWAIT, DST, SRC)                           \
    int rec = cap_cuda_enter();                                                      \
    struct cap_cuda_call c = {SBT_CUDA_API_##API, PT, STREAM, cap_cuda_now(), 0, 0}; \
    (void)c;                                                                         \
    if (rec) {                                                                       \
        if (PREWAIT >= 0)                                                            \
            cap_cuda_prewait(PT, PREWAIT, DST, SRC);                                 \
        cap_cuda_lock();                                                             \
    }
#define ENQ_BEGIN(API, PT, STREAM) ENQ_BEGIN_WAIT(API, PT, STREAM, -1, 0, 0)
#define ENQ_END(RECORD)        \
    if (rec) {                 \
        c.t1 = cap_cuda_now(); \
        if (r == CUDA_SUCCESS) \
            RECORD;            \
        cap_cuda_unlock();     \
        cap_cuda_leave();      \
    }                          \
    return r;

/* ---- modules and libraries ------------------------------------------------------------------ */

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    ENQ_BEGIN(cuModuleLoad, 0, NULL)
    CUresult r = CAP_NEXT(cuModuleLoad)(module, fname);
    ENQ_END(cap_cuda_rec_module(*module, NULL, fname, c.api))
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    ENQ_BEGIN(cuModuleLoadData, 0, NULL)
    CUresult r = CAP_NEXT(cuModuleLoadData)(module, image);
    ENQ_END(cap_cuda_rec_module(*module, image, NULL, c.api))
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues)
{
    ENQ_BEGIN(cuModuleLoadDataEx, 0, NULL)
    CUresult r = CAP_NEXT(cuModuleLoadDataEx)(module, image, numOptions, options, optionValues);
    ENQ_END(cap_cuda_rec_module(*module, image, NULL, c.api))
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    ENQ_BEGIN(cuModuleLoadFatBinary, 0, NULL)
    CUresult r = CAP_NEXT(cuModuleLoadFatBinary)(module, fatCubin);
    ENQ_END(cap_cuda_rec_module(*module, fatCubin, NULL, c.api))
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                           void **jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    ENQ_BEGIN(cuLibraryLoadData, 0, NULL)
    CUresult r =
        CAP_NEXT(cuLibraryLoadData)(library, code, jitOptions, jitOptionsValues, numJitOptions,
                                    libraryOptions, libraryOptionValues, numLibraryOptions);
    ENQ_END(cap_cuda_rec_library(*library, code, NULL, c.api))
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions,
                               CUlibraryOption *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions)
{
    ENQ_BEGIN(cuLibraryLoadFromFile, 0, NULL)
    CUresult r = CAP_NEXT(cuLibraryLoadFromFile)(library, fileName, jitOptions, jitOptionsValues,
                                                 numJitOptions, libraryOptions, libraryOptionValues,
                                                 numLibraryOptions);
    ENQ_END(cap_cuda_rec_library(*library, NULL, fileName, c.api))
}

CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    ENQ_BEGIN(cuLibraryLoadData, 0, NULL)
    CUresult r = CAP_NEXT(cuLibraryGetModule)(pMod, library);
    ENQ_END(cap_cuda_rec_library_module(library, *pMod))
}

CUresult cuModuleUnload(CUmodule hmod)
{
    ENQ_BEGIN(cuModuleLoadData, 0, NULL)
    CUresult r = CAP_NEXT(cuModuleUnload)(hmod);
    ENQ_END(cap_cuda_rec_unload((uintptr_t)hmod, 0))
}

CUresult cuLibraryUnload(CUlibrary library)
{
    ENQ_BEGIN(cuLibraryLoadData, 0, NULL)
    CUresult r = CAP_NEXT(cuLibraryUnload)(library);
    ENQ_END(cap_cuda_rec_unload((uintptr_t)library, 1))
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    ENQ_BEGIN(cuModuleLoadData, 0, NULL)
    CUresult r = CAP_NEXT(cuModuleGetFunction)(hfunc, hmod, name);
    ENQ_END(cap_cuda_rec_function(*hfunc, hmod, name))
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    ENQ_BEGIN(cuLibraryLoadData, 0, NULL)
    CUresult r = CAP_NEXT(cuLibraryGetKernel)(pKernel, library, name);
    ENQ_END(cap_cuda_rec_kernel(*pKernel, library, name))
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    ENQ_BEGIN(cuLibraryLoadData, 0, NULL)
    CUresult r = CAP_NEXT(cuKernelGetFunction)(pFunc, kernel);
    ENQ_END(cap_cuda_rec_kernel_function(*pFunc, kernel))
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    ENQ_BEGIN(cuFuncSetAttribute, 0, NULL)
    CUresult r = CAP_NEXT(cuFuncSetAttribute)(hfunc, attrib, value);
    ENQ_END(cap_cuda_rec_func_attr((uintptr_t)hfunc, (int)attrib, value))
}

/* The attribute is the kernel's on device dev; a trace replays on one device, so it is taken
 * for the kernel's (every launch of a trace is on its device). */
CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    ENQ_BEGIN(cuKernelSetAttribute, 0, NULL)
    CUresult r = CAP_NEXT(cuKernelSetAttribute)(attrib, val, kernel, dev);
    ENQ_END(cap_cuda_rec_func_attr((uintptr_t)kernel, (int)attrib, val))
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    size_t size = 0;
    CUdeviceptr p = 0;
    ENQ_BEGIN(cuModuleGetGlobal_v2, 0, NULL)
    CUresult r = CAP_NEXT(cuModuleGetGlobal_v2)(&p, &size, hmod, name);
    if (r == CUDA_SUCCESS) {
        if (dptr)
            *dptr = p;
        if (bytes)
            *bytes = size;
    }
    ENQ_END(cap_cuda_rec_global(p, size, hmod, NULL, name))
}

CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    size_t size = 0;
    CUdeviceptr p = 0;
    ENQ_BEGIN(cuLibraryGetGlobal, 0, NULL)
    CUresult r = CAP_NEXT(cuLibraryGetGlobal)(&p, &size, library, name);
    if (r == CUDA_SUCCESS) {
        if (dptr)
            *dptr = p;
        if (bytes)
            *bytes = size;
    }
    ENQ_END(cap_cuda_rec_global(p, size, NULL, library, name))
}

/* Handles handed out in bulk: named through the driver, so their launches are identified. */
static void rec_functions(const CUfunction *fs, unsigned n, CUmodule mod)
{
    for (unsigned i = 0; fs && i < n; i++) {
        const char *name = NULL;
        if (CAP_NEXT(cuFuncGetName)(&name, fs[i]) == CUDA_SUCCESS && name)
            cap_cuda_rec_function(fs[i], mod, name);
    }
}

static void rec_kernels(const CUkernel *ks, unsigned n, CUlibrary lib)
{
    for (unsigned i = 0; ks && i < n; i++) {
        const char *name = NULL;
        if (CAP_NEXT(cuKernelGetName)(&name, ks[i]) == CUDA_SUCCESS && name)
            cap_cuda_rec_kernel(ks[i], lib, name);
    }
}

CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions, CUmodule mod)
{
    ENQ_BEGIN(cuModuleLoadData, 0, NULL)
    CUresult r = CAP_NEXT(cuModuleEnumerateFunctions)(functions, numFunctions, mod);
    ENQ_END(rec_functions(functions, numFunctions, mod))
}

CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib)
{
    ENQ_BEGIN(cuLibraryLoadData, 0, NULL)
    CUresult r = CAP_NEXT(cuLibraryEnumerateKernels)(kernels, numKernels, lib);
    ENQ_END(rec_kernels(kernels, numKernels, lib))
}

/* ---- memory -----------------------------------------------------------------------------------
 */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    ENQ_BEGIN(cuMemAlloc_v2, 0, NULL)
    CUresult r = CAP_NEXT(cuMemAlloc_v2)(dptr, bytesize);
    ENQ_END(cap_cuda_rec_alloc(&c, *dptr, bytesize, SBT_CUDA_ALLOC_MEM))
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    ENQ_BEGIN(cuMemAllocPitch_v2, 0, NULL)
    CUresult r = CAP_NEXT(cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    ENQ_END(cap_cuda_rec_alloc(&c, *dptr, *pPitch * Height, SBT_CUDA_ALLOC_PITCH))
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    ENQ_BEGIN(cuMemFree_v2, 0, NULL)
    CUresult r = CAP_NEXT(cuMemFree_v2)(dptr);
    ENQ_END(cap_cuda_rec_free(&c, dptr))
}

#define ALLOC_ASYNC(NAME, PT)                                                \
    CUresult NAME(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)      \
    {                                                                        \
        ENQ_BEGIN(cuMemAllocAsync, PT, hStream)                              \
        CUresult r = CAP_NEXT(NAME)(dptr, bytesize, hStream);                \
        ENQ_END(cap_cuda_rec_alloc(&c, *dptr, bytesize, SBT_CUDA_ALLOC_MEM)) \
    }
ALLOC_ASYNC(cuMemAllocAsync, 0)
ALLOC_ASYNC(cuMemAllocAsync_ptsz, 1)

#define ALLOC_POOL(NAME, PT)                                                               \
    CUresult NAME(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) \
    {                                                                                      \
        ENQ_BEGIN(cuMemAllocFromPoolAsync, PT, hStream)                                    \
        CUresult r = CAP_NEXT(NAME)(dptr, bytesize, pool, hStream);                        \
        ENQ_END(cap_cuda_rec_alloc(&c, *dptr, bytesize, SBT_CUDA_ALLOC_POOL))              \
    }
ALLOC_POOL(cuMemAllocFromPoolAsync, 0)
ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz, 1)

/* Virtual memory management: a mapping is what kernels and copies address. */
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    ENQ_BEGIN(cuMemMap, 0, NULL)
    CUresult r = CAP_NEXT(cuMemMap)(ptr, size, offset, handle, flags);
    ENQ_END(cap_cuda_rec_map(&c, ptr, size, handle))
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    ENQ_BEGIN(cuMemUnmap, 0, NULL)
    CUresult r = CAP_NEXT(cuMemUnmap)(ptr, size);
    ENQ_END(cap_cuda_rec_unmap(&c, ptr, size))
}

#define FREE_ASYNC(NAME, PT)                          \
    CUresult NAME(CUdeviceptr dptr, CUstream hStream) \
    {                                                 \
        ENQ_BEGIN(cuMemFreeAsync, PT, hStream)        \
        CUresult r = CAP_NEXT(NAME)(dptr, hStream);   \
        ENQ_END(cap_cuda_rec_free(&c, dptr))          \
    }
FREE_ASYNC(cuMemFreeAsync, 0)
FREE_ASYNC(cuMemFreeAsync_ptsz, 1)

/* ---- copies and fills: a legacy and a per-thread variant of each ------------------------------
 */

#define COPY_WRAPPERS(SFX, ASFX, PT)                                                            \
    CUresult cuMemcpy##SFX(CUdeviceptr dst, CUdeviceptr src, size_t n)                          \
    {                                                                                           \
        ENQ_BEGIN_WAIT(cuMemcpy, PT, NULL, CAP_PREWAIT_ANY, dst, src)                           \
        CUresult r = CAP_NEXT(cuMemcpy##SFX)(dst, src, n);                                      \
        ENQ_END(cap_cuda_rec_copy(&c, dst, src, NULL, NULL, n, 0))                              \
    }                                                                                           \
    CUresult cuMemcpyHtoD_v2##SFX(CUdeviceptr dst, const void *src, size_t n)                   \
    {                                                                                           \
        ENQ_BEGIN_WAIT(cuMemcpyHtoD_v2, PT, NULL, CAP_PREWAIT_HOST, (uintptr_t)src, 0)          \
        CUresult r = CAP_NEXT(cuMemcpyHtoD_v2##SFX)(dst, src, n);                               \
        ENQ_END(cap_cuda_rec_copy(&c, dst, 0, src, NULL, n, 0))                                 \
    }                                                                                           \
    CUresult cuMemcpyDtoH_v2##SFX(void *dst, CUdeviceptr src, size_t n)                         \
    {                                                                                           \
        ENQ_BEGIN_WAIT(cuMemcpyDtoH_v2, PT, NULL, CAP_PREWAIT_HOST, (uintptr_t)dst, 0)          \
        CUresult r = CAP_NEXT(cuMemcpyDtoH_v2##SFX)(dst, src, n);                               \
        ENQ_END(cap_cuda_rec_copy(&c, 0, src, NULL, dst, n, 0))                                 \
    }                                                                                           \
    CUresult cuMemcpyDtoD_v2##SFX(CUdeviceptr dst, CUdeviceptr src, size_t n)                   \
    {                                                                                           \
        ENQ_BEGIN(cuMemcpyDtoD_v2, PT, NULL)                                                    \
        CUresult r = CAP_NEXT(cuMemcpyDtoD_v2##SFX)(dst, src, n);                               \
        ENQ_END(cap_cuda_rec_copy(&c, dst, src, NULL, NULL, n, 0))                              \
    }                                                                                           \
    CUresult cuMemcpyAsync##ASFX(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)        \
    {                                                                                           \
        ENQ_BEGIN(cuMemcpyAsync, PT, s)                                                         \
        CUresult r = CAP_NEXT(cuMemcpyAsync##ASFX)(dst, src, n, s);                             \
        ENQ_END(cap_cuda_rec_copy(&c, dst, src, NULL, NULL, n, 1))                              \
    }                                                                                           \
    CUresult cuMemcpyHtoDAsync_v2##ASFX(CUdeviceptr dst, const void *src, size_t n, CUstream s) \
    {                                                                                           \
        ENQ_BEGIN(cuMemcpyHtoDAsync_v2, PT, s)                                                  \
        CUresult r = CAP_NEXT(cuMemcpyHtoDAsync_v2##ASFX)(dst, src, n, s);                      \
        ENQ_END(cap_cuda_rec_copy(&c, dst, 0, src, NULL, n, 1))                                 \
    }                                                                                           \
    CUresult cuMemcpyDtoHAsync_v2##ASFX(void *dst, CUdeviceptr src, size_t n, CUstream s)       \
    {                                                                                           \
        ENQ_BEGIN(cuMemcpyDtoHAsync_v2, PT, s)                                                  \
        CUresult r = CAP_NEXT(cuMemcpyDtoHAsync_v2##ASFX)(dst, src, n, s);                      \
        ENQ_END(cap_cuda_rec_copy(&c, 0, src, NULL, dst, n, 1))                                 \
    }                                                                                           \
    CUresult cuMemcpyDtoDAsync_v2##ASFX(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) \
    {                                                                                           \
        ENQ_BEGIN(cuMemcpyDtoDAsync_v2, PT, s)                                                  \
        CUresult r = CAP_NEXT(cuMemcpyDtoDAsync_v2##ASFX)(dst, src, n, s);                      \
        ENQ_END(cap_cuda_rec_copy(&c, dst, src, NULL, NULL, n, 1))                              \
    }
COPY_WRAPPERS(, , 0)
COPY_WRAPPERS(_ptds, _ptsz, 1)

#define FILL_WRAPPERS(BITS, T, SFX, ASFX, PT)                                         \
    CUresult cuMemsetD##BITS##_v2##SFX(CUdeviceptr dst, T v, size_t n)                \
    {                                                                                 \
        ENQ_BEGIN_WAIT(cuMemsetD##BITS##_v2, PT, NULL, CAP_PREWAIT_FILL, dst, 0)      \
        CUresult r = CAP_NEXT(cuMemsetD##BITS##_v2##SFX)(dst, v, n);                  \
        ENQ_END(cap_cuda_rec_fill(&c, dst, BITS / 8, v, n))                           \
    }                                                                                 \
    CUresult cuMemsetD##BITS##Async##ASFX(CUdeviceptr dst, T v, size_t n, CUstream s) \
    {                                                                                 \
        ENQ_BEGIN(cuMemsetD##BITS##Async, PT, s)                                      \
        CUresult r = CAP_NEXT(cuMemsetD##BITS##Async##ASFX)(dst, v, n, s);            \
        ENQ_END(cap_cuda_rec_fill(&c, dst, BITS / 8, v, n))                           \
    }
FILL_WRAPPERS(8, unsigned char, , , 0)
FILL_WRAPPERS(8, unsigned char, _ptds, _ptsz, 1)
FILL_WRAPPERS(16, unsigned short, , , 0)
FILL_WRAPPERS(16, unsigned short, _ptds, _ptsz, 1)
FILL_WRAPPERS(32, unsigned int, , , 0)
FILL_WRAPPERS(32, unsigned int, _ptds, _ptsz, 1)

/* ---- streams and events ---------------------------------------------------------------------- */

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    ENQ_BEGIN(cuStreamCreate, 0, NULL)
    CUresult r = CAP_NEXT(cuStreamCreate)(phStream, Flags);
    ENQ_END(cap_cuda_rec_stream_create(&c, *phStream, Flags, 0))
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    ENQ_BEGIN(cuStreamCreateWithPriority, 0, NULL)
    CUresult r = CAP_NEXT(cuStreamCreateWithPriority)(phStream, flags, priority);
    ENQ_END(cap_cuda_rec_stream_create(&c, *phStream, flags, priority))
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    ENQ_BEGIN(cuStreamDestroy_v2, 0, hStream)
    CUresult r = CAP_NEXT(cuStreamDestroy_v2)(hStream);
    ENQ_END(cap_cuda_rec_stream_destroy(&c, hStream))
}

CUresult cuStreamDestroy(CUstream hStream)
{
    ENQ_BEGIN(cuStreamDestroy, 0, hStream)
    CUresult r = CAP_NEXT(cuStreamDestroy)(hStream);
    ENQ_END(cap_cuda_rec_stream_destroy(&c, hStream))
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    ENQ_BEGIN(cuEventCreate, 0, NULL)
    CUresult r = CAP_NEXT(cuEventCreate)(phEvent, Flags);
    ENQ_END(cap_cuda_rec_event_create(&c, *phEvent, Flags))
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
    ENQ_BEGIN(cuEventDestroy_v2, 0, NULL)
    CUresult r = CAP_NEXT(cuEventDestroy_v2)(hEvent);
    ENQ_END(cap_cuda_rec_event_destroy(&c, hEvent))
}

CUresult cuEventDestroy(CUevent hEvent)
{
    ENQ_BEGIN(cuEventDestroy, 0, NULL)
    CUresult r = CAP_NEXT(cuEventDestroy)(hEvent);
    ENQ_END(cap_cuda_rec_event_destroy(&c, hEvent))
}

#define EVENT_WRAPPERS(SFX, PT)                                                     \
    CUresult cuEventRecord##SFX(CUevent e, CUstream s)                              \
    {                                                                               \
        ENQ_BEGIN(cuEventRecord, PT, s)                                             \
        CUresult r = CAP_NEXT(cuEventRecord##SFX)(e, s);                            \
        ENQ_END(cap_cuda_rec_event_record(&c, e, 0))                                \
    }                                                                               \
    CUresult cuEventRecordWithFlags##SFX(CUevent e, CUstream s, unsigned int flags) \
    {                                                                               \
        ENQ_BEGIN(cuEventRecordWithFlags, PT, s)                                    \
        CUresult r = CAP_NEXT(cuEventRecordWithFlags##SFX)(e, s, flags);            \
        ENQ_END(cap_cuda_rec_event_record(&c, e, flags))                            \
    }                                                                               \
    CUresult cuStreamWaitEvent##SFX(CUstream s, CUevent e, unsigned int flags)      \
    {                                                                               \
        ENQ_BEGIN(cuStreamWaitEvent, PT, s)                                         \
        CUresult r = CAP_NEXT(cuStreamWaitEvent##SFX)(s, e, flags);                 \
        ENQ_END(cap_cuda_rec_stream_wait(&c, e, flags))                             \
    }
EVENT_WRAPPERS(, 0)
EVENT_WRAPPERS(_ptsz, 1)

/* ---- stream capture and graphs -----------------------------------------------------------------
 * Work issued to a capturing stream only becomes part of a graph; it runs at each cuGraphLaunch
 * of an exec instantiated from it (cap_cuda_rec.c records it then). */

#define BEGIN_CAPTURE(NAME, PT, ...)              \
    {                                             \
        ENQ_BEGIN(cuStreamBeginCapture_v2, PT, s) \
        CUresult r = CAP_NEXT(NAME)(__VA_ARGS__); \
        ENQ_END(cap_cuda_rec_capture_begin(&c))   \
    }
CUresult cuStreamBeginCapture(CUstream s) BEGIN_CAPTURE(cuStreamBeginCapture, 0, s) CUresult
    cuStreamBeginCapture_ptsz(CUstream s) BEGIN_CAPTURE(cuStreamBeginCapture_ptsz, 1, s) CUresult
    cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
        BEGIN_CAPTURE(cuStreamBeginCapture_v2, 0, s, mode) CUresult
    cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
        BEGIN_CAPTURE(cuStreamBeginCapture_v2_ptsz, 1, s, mode)

/* A capture that fails (invalidated) ends too: its streams stop capturing. */
#define END_CAPTURE(NAME, PT)                                                       \
    {                                                                               \
        int rec = cap_cuda_enter();                                                 \
        struct cap_cuda_call c = {SBT_CUDA_API_cuStreamEndCapture, PT, s, 0, 0, 0}; \
        if (rec)                                                                    \
            cap_cuda_lock();                                                        \
        CUresult r = CAP_NEXT(NAME)(s, g);                                          \
        if (rec) {                                                                  \
            cap_cuda_rec_capture_end(&c, r == CUDA_SUCCESS && g ? *g : NULL);       \
            cap_cuda_unlock();                                                      \
            cap_cuda_leave();                                                       \
        }                                                                           \
        return r;                                                                   \
    }
            CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
                END_CAPTURE(cuStreamEndCapture, 0) CUresult
    cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) END_CAPTURE(cuStreamEndCapture_ptsz, 1)

#define INSTANTIATE(NAME, ...)                             \
    {                                                      \
        ENQ_BEGIN(cuGraphInstantiateWithFlags, 0, NULL)    \
        CUresult r = CAP_NEXT(NAME)(__VA_ARGS__);          \
        ENQ_END(cap_cuda_rec_graph_instantiate(*x, graph)) \
    }
        CUresult
    cuGraphInstantiate(CUgraphExec *x, CUgraph graph, CUgraphNode *err, char *log, size_t n)
        INSTANTIATE(cuGraphInstantiate, x, graph, err, log, n) CUresult
    cuGraphInstantiate_v2(CUgraphExec *x, CUgraph graph, CUgraphNode *err, char *log, size_t n)
        INSTANTIATE(cuGraphInstantiate_v2, x, graph, err, log, n) CUresult
    cuGraphInstantiateWithFlags(CUgraphExec *x, CUgraph graph, unsigned long long flags)
        INSTANTIATE(cuGraphInstantiateWithFlags, x, graph, flags) CUresult
    cuGraphInstantiateWithParams(CUgraphExec *x, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
        INSTANTIATE(cuGraphInstantiateWithParams, x, graph, p) CUresult
    cuGraphInstantiateWithParams_ptsz(CUgraphExec *x, CUgraph graph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *p)
        INSTANTIATE(cuGraphInstantiateWithParams_ptsz, x, graph, p)

            CUresult cuGraphLaunch(CUgraphExec x, CUstream s)
{
    ENQ_BEGIN(cuGraphLaunch, 0, s)
    CUresult r = CAP_NEXT(cuGraphLaunch)(x, s);
    ENQ_END(cap_cuda_rec_graph_launch(&c, x))
}

CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream s)
{
    ENQ_BEGIN(cuGraphLaunch, 1, s)
    CUresult r = CAP_NEXT(cuGraphLaunch_ptsz)(x, s);
    ENQ_END(cap_cuda_rec_graph_launch(&c, x))
}

CUresult cuGraphDestroy(CUgraph graph)
{
    ENQ_BEGIN(cuGraphDestroy, 0, NULL)
    CUresult r = CAP_NEXT(cuGraphDestroy)(graph);
    ENQ_END(cap_cuda_rec_graph_destroy(graph, NULL))
}

CUresult cuGraphExecDestroy(CUgraphExec x)
{
    ENQ_BEGIN(cuGraphExecDestroy, 0, NULL)
    CUresult r = CAP_NEXT(cuGraphExecDestroy)(x);
    ENQ_END(cap_cuda_rec_graph_destroy(NULL, x))
}

/* ---- launches ---------------------------------------------------------------------------------
 */

struct launch_args {
    void *next;
    int kind; /* 0 cuLaunchKernel, 1 cuLaunchKernelEx, 2 cuLaunchCooperativeKernel */
    const struct cap_cuda_launch *l;
    const CUlaunchConfig *config;
    CUstream s;
};

static CUresult issue_launch(void *ctx)
{
    const struct launch_args *a = ctx;
    const struct cap_cuda_launch *l = a->l;
    if (a->kind == 1)
        return ((__typeof__(&cuLaunchKernelEx))a->next)(a->config, l->f, l->params, l->extra);
    if (a->kind == 2)
        return ((__typeof__(&cuLaunchCooperativeKernel))a->next)(
            l->f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
            l->shmem, a->s, l->params);
    return ((__typeof__(&cuLaunchKernel))a->next)(l->f, l->grid[0], l->grid[1], l->grid[2],
                                                  l->block[0], l->block[1], l->block[2], l->shmem,
                                                  a->s, l->params, l->extra);
}

static CUresult launch(uint32_t api, int pt, void *next, int kind, const CUlaunchConfig *config,
                       struct cap_cuda_launch *l, CUstream s)
{
    struct launch_args a = {next, kind, l, config, s};
    if (!cap_cuda_enter())
        return issue_launch(&a);
    struct cap_cuda_call c = {api, pt, s, 0, 0, 0};
    CUresult r = cap_cuda_rec_launch(&c, l, issue_launch, &a);
    cap_cuda_leave();
    return r;
}

#define LAUNCH_WRAPPERS(SFX, PT)                                                                   \
    CUresult cuLaunchKernel##SFX(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,  \
                                 unsigned int bx, unsigned int by, unsigned int bz,                \
                                 unsigned int shmem, CUstream s, void **params, void **extra)      \
    {                                                                                              \
        struct cap_cuda_launch l = {f, {gx, gy, gz}, {bx, by, bz}, shmem, params, extra, NULL, 0,  \
                                    0};                                                            \
        return launch(SBT_CUDA_API_cuLaunchKernel, PT, cap_cuda_next[CAP_SYM_cuLaunchKernel##SFX], \
                      0, NULL, &l, s);                                                             \
    }                                                                                              \
    CUresult cuLaunchKernelEx##SFX(const CUlaunchConfig *cfg, CUfunction f, void **params,         \
                                   void **extra)                                                   \
    {                                                                                              \
        if (!cfg)                                                                                  \
            return CAP_NEXT(cuLaunchKernelEx##SFX)(cfg, f, params, extra);                         \
        struct cap_cuda_launch l = {f,                                                             \
                                    {cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ},                 \
                                    {cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ},              \
                                    cfg->sharedMemBytes,                                           \
                                    params,                                                        \
                                    extra,                                                         \
                                    cfg->attrs,                                                    \
                                    cfg->numAttrs,                                                 \
                                    0};                                                            \
        return launch(SBT_CUDA_API_cuLaunchKernelEx, PT,                                           \
                      cap_cuda_next[CAP_SYM_cuLaunchKernelEx##SFX], 1, cfg, &l, cfg->hStream);     \
    }                                                                                              \
    CUresult cuLaunchCooperativeKernel##SFX(                                                       \
        CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,          \
        unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params)           \
    {                                                                                              \
        struct cap_cuda_launch l = {                                                               \
            f, {gx, gy, gz}, {bx, by, bz}, shmem, params, NULL, NULL, 0, 1};                       \
        return launch(SBT_CUDA_API_cuLaunchCooperativeKernel, PT,                                  \
                      cap_cuda_next[CAP_SYM_cuLaunchCooperativeKernel##SFX], 2, NULL, &l, s);      \
    }
LAUNCH_WRAPPERS(, 0)
LAUNCH_WRAPPERS(_ptsz, 1)

#pragma GCC visibility pop
