/*
 * tests/cuda/prog_memkinds.c — one Driver-API program per kind of memory the CUDA shim must
 * classify before it touches a pointer, for tests/test_cuda.c. Each mode prints what it read
 * back; under capture it must print the same bytes (and not crash: the fake's device memory is
 * not host-readable, fake_cuda.h).
 *
 * Usage: prog_memkinds MODE, MODE one of
 *   pool         allocations from a created pool and the default pool, unified-address copies
 *   pitch        a pitch allocation written by a kernel
 *   vmm          cuMemCreate + cuMemMap of one reserved range, written by a kernel
 *   vmm_alias    one physical allocation mapped at two addresses (not replayable)
 *   vmm_adjacent two mappings side by side in one reservation (not replayable)
 *   ipc          an allocation opened through an IPC handle, read by cuMemcpy (not replayable)
 *   managed      managed memory as a copy source and kernel argument (not replayable)
 *   pinned       pinned and registered host memory as async copy ends
 *   zerocopy     a kernel writing pinned host memory through its device alias (not replayable)
 *   devhost      cuMemcpyHtoD whose "host" source is a device allocation (a device copy)
 *   unmodelled   cuCtxSetLimit between two launches (not replayable)
 *   stream_fill  a fill and a device copy on a non-blocking stream, then a kernel on it that
 *                reads what they wrote: replay must keep them on that stream (with the fake's
 *                FAKE_CUDA_LATE the legacy stream's fills and copies complete late)
 *   graph        a graph made by stream capture (two streams joined by events, a launch, a
 *                memset, a device-to-device and a device-to-host copy) launched twice, the host
 *                changing its input in between: replayable, each launch's read-back compared
 *   graph_node   a graph made with the node API, launched (not replayable)
 *   funcattr     launches with 64 KiB of dynamic shared memory, allowed by the function's
 *                MAX_DYNAMIC_SHARED_SIZE_BYTES (cuFuncSetAttribute on a module's function,
 *                cuKernelSetAttribute on a library's kernel): replay must set them too
 *   gpa          cuMemsetD32 through a cuGetProcAddress answer the shim cannot identify (run
 *                with FAKE_CUDA_GPA_INTERNAL=cuMemsetD32; not replayable)
 *   gpa_unused   the same answer resolved and never called (replayable)
 *   libglobal    a library global written by a kernel
 *   enumerate    a kernel found by cuModuleEnumerateFunctions
 *   reload       a module unloaded and another loaded, whose saxpy function gets the handle
 *                the first module's iota had (the fake reuses handles, as a driver may): the
 *                trace must launch saxpy, not iota
 *   xsync        async device-to-host copies into one pinned buffer on stream a, which the host
 *                learns finished only through another stream (b waited for an event recorded
 *                after the copy; b synchronised) and through the legacy stream's implicit
 *                synchronisation (a synchronous device-to-host copy on it returns once the
 *                blocking streams' earlier work is done); the host
 *                reuses the buffer after each: the trace must read it before that
 *   waitvalue    a blocking stream waits on a memory value (cuStreamWaitValue32) ahead of a
 *                kernel; the main thread's synchronous cuMemcpyDtoH on the legacy stream waits
 *                for that stream's earlier work, so it blocks until another thread, a little
 *                later, writes the value on a non-blocking stream: cuStreamWriteValue32, then
 *                (second round) cuMemsetD32Async; third round, a synchronous memset, a
 *                device-to-device copy and a cuMemcpyHtoD from device memory behind the wait,
 *                which the host does not wait for, then
 *                the same thread releases it; fourth, the wait and the copy on the default
 *                stream (prog_memkinds_ptds: the per-thread one, whose synchronous copies are
 *                the _ptds variants; it runs only this round). The capture must not deadlock,
 *                nor wait for more
 *                than the program does (the trace is incomplete: the wait is not modelled)
 *   syncwindow   while the main thread waits in cuStreamSynchronize(s) (s blocked on a value),
 *                another thread queues a kernel and an async device-to-host copy on s behind a
 *                second wait, then releases the first: the sync returns with the copy still
 *                queued; the main thread releases the second and synchronises again, then
 *                prints the copy. The trace must read the copy's bytes at the second sync
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cuda/ck.h"
#include "tests/cuda/fake_cuda.h"

#define N 1024

static CUdevice dev;
static CUmodule mod;
static CUfunction f_saxpy, f_iota;

static void print_words(const char *what, const void *p, size_t n)
{
    const unsigned *w = p;
    unsigned long long sum = 0;
    for (size_t i = 0; i < n / 4; i++)
        sum = sum * 31 + w[i];
    printf("%s: %08x %08x ... sum %016llx\n", what, w[0], w[n / 4 - 1], sum);
}

static void iota(CUdeviceptr out, unsigned n, unsigned start, CUstream s)
{
    void *params[] = {&out, &n, &start};
    CK(cuLaunchKernel(f_iota, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, params, NULL));
}

static void saxpy(float a, CUdeviceptr x, CUdeviceptr y, unsigned n, CUstream s)
{
    void *params[] = {&a, &x, &y, &n};
    CK(cuLaunchKernel(f_saxpy, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, params, NULL));
}

static void fill_host(float *x, float *y)
{
    for (int i = 0; i < N; i++)
        x[i] = (float)i * 0.25f, y[i] = 3.0f - (float)i / 512.0f;
}

static CUmemAllocationProp device_prop(void)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    return p;
}

static void set_access(CUdeviceptr p, size_t n)
{
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemSetAccess(p, n, &a, 1));
}

static int pool(void)
{
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool mine, dflt;
    CK(cuMemPoolCreate(&mine, &props));
    CK(cuDeviceGetDefaultMemPool(&dflt, dev));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x, y;
    CK(cuMemAllocFromPoolAsync(&x, N * 4, mine, s));
    CK(cuMemAllocFromPoolAsync(&y, N * 4, dflt, s));
    static float hx[N], hy[N], out[N];
    fill_host(hx, hy);
    CK(cuMemcpyAsync(x, (CUdeviceptr)(uintptr_t)hx, sizeof hx, s)); /* unified: host -> pool */
    CK(cuMemcpyHtoDAsync(y, hy, sizeof hy, s));
    saxpy(1.5f, x, y, N, s);
    CK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)out, y, sizeof out, s)); /* pool -> host */
    CK(cuStreamSynchronize(s));
    print_words("pool y", out, sizeof out);
    CUdeviceptr z; /* cuMemAlloc'ed: a copy between it and the pool must not read either */
    CK(cuMemAlloc(&z, N * 4));
    CK(cuMemcpy(z, x, N * 4));
    CK(cuMemcpy((CUdeviceptr)(uintptr_t)out, z, sizeof out));
    print_words("pool x", out, sizeof out);
    CK(cuMemFree(z));
    CK(cuMemFreeAsync(x, s));
    CK(cuMemFreeAsync(y, s));
    CK(cuStreamSynchronize(s));
    CK(cuStreamDestroy(s));
    CK(cuMemPoolDestroy(mine));
    return 0;
}

static int pitch(void)
{
    CUdeviceptr p;
    size_t pt;
    CK(cuMemAllocPitch(&p, &pt, 100 * 4, 8, 4));
    unsigned n = (unsigned)(pt * 8 / 4);
    iota(p, n, 40, NULL);
    unsigned *out = malloc(pt * 8);
    CK(cuMemcpyDtoH(out, p, pt * 8));
    print_words("pitch", out, pt * 8);
    free(out);
    CK(cuMemFree(p));
    return 0;
}

static int vmm(const char *mode)
{
    CUmemAllocationProp prop = device_prop();
    size_t g;
    CK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va;
    CK(cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
    CUmemGenericAllocationHandle h, h2;
    CK(cuMemCreate(&h, g, &prop, 0));
    CK(cuMemMap(va, g, 0, h, 0));
    set_access(va, g);
    CUdeviceptr other = 0;
    if (!strcmp(mode, "vmm_alias")) { /* the same bytes at va + 2g */
        other = va + 2 * g;
        CK(cuMemMap(other, g, 0, h, 0));
        set_access(other, g);
    } else if (!strcmp(mode, "vmm_adjacent")) { /* new bytes right after the first mapping */
        other = va + g;
        CK(cuMemCreate(&h2, g, &prop, 0));
        CK(cuMemMap(other, g, 0, h2, 0));
        set_access(other, g);
    }
    iota(va, (unsigned)(g / 4), 5, NULL);
    unsigned *out = malloc(g);
    CK(cuMemcpyDtoH(out, other ? other : va, g));
    print_words(mode, out, g);
    free(out);
    if (other) {
        CK(cuMemUnmap(other, g));
        if (!strcmp(mode, "vmm_adjacent"))
            CK(cuMemRelease(h2));
    }
    CK(cuMemUnmap(va, g));
    CK(cuMemRelease(h));
    CK(cuMemAddressFree(va, 4 * g));
    return 0;
}

static int ipc(void)
{
    CUdeviceptr d, o;
    CK(cuMemAlloc(&d, N * 4));
    iota(d, N, 9, NULL);
    CUipcMemHandle h;
    CK(cuIpcGetMemHandle(&h, d));
    CK(cuIpcOpenMemHandle(&o, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    static unsigned out[N];
    CK(cuMemcpy((CUdeviceptr)(uintptr_t)out, o, sizeof out)); /* from memory it never saw */
    print_words("ipc", out, sizeof out);
    CUdeviceptr e;
    CK(cuMemAlloc(&e, N * 4));
    CK(cuMemcpy(e, o, N * 4)); /* into tracked memory: the source must not be read */
    CK(cuMemcpyDtoH(out, e, sizeof out));
    print_words("ipc copy", out, sizeof out);
    CK(cuMemFree(e));
    CK(cuMemcpyDtoH(out, o + 64, 256));
    print_words("ipc dtoh", out, 256);
    CK(cuIpcCloseMemHandle(o));
    CK(cuMemFree(d));
    return 0;
}

static int managed(void)
{
    CUdeviceptr m, d;
    CK(cuMemAllocManaged(&m, N * 4, CU_MEM_ATTACH_GLOBAL));
    float *hm = (float *)(uintptr_t)m;
    for (int i = 0; i < N; i++)
        hm[i] = (float)i;
    CK(cuMemAlloc(&d, N * 4));
    CK(cuMemcpy(d, m, N * 4)); /* managed -> device */
    saxpy(2.0f, d, m, N, NULL);
    CK(cuCtxSynchronize());
    print_words("managed", hm, N * 4);
    CK(cuMemFree(d));
    CK(cuMemFree(m));
    return 0;
}

static int pinned(void)
{
    float *hp;
    static float reg[N], out[N];
    CK(cuMemAllocHost((void **)&hp, N * 4));
    CK(cuMemHostRegister(reg, sizeof reg, 0));
    fill_host(hp, reg);
    CUdeviceptr x, y;
    CK(cuMemAlloc(&x, N * 4));
    CK(cuMemAlloc(&y, N * 4));
    CUstream s;
    CK(cuStreamCreate(&s, 0));
    CK(cuMemcpyHtoDAsync(x, hp, N * 4, s));
    CK(cuMemcpyAsync(y, (CUdeviceptr)(uintptr_t)reg, N * 4, s));
    saxpy(-0.5f, x, y, N, s);
    CK(cuMemcpyDtoHAsync(reg, y, N * 4, s));
    CK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)hp, x, N * 4, s));
    CK(cuStreamSynchronize(s));
    print_words("pinned y", reg, sizeof reg);
    memcpy(out, hp, sizeof out);
    print_words("pinned x", out, sizeof out);
    CK(cuStreamDestroy(s));
    CK(cuMemHostUnregister(reg));
    CK(cuMemFreeHost(hp));
    CK(cuMemFree(x));
    CK(cuMemFree(y));
    return 0;
}

static int xsync(void)
{
    unsigned *hp;
    static unsigned one[N], two[N];
    for (unsigned i = 0; i < N; i++)
        one[i] = i * 2654435761u, two[i] = ~one[i];
    CK(cuMemAllocHost((void **)&hp, N * 4));
    CUdeviceptr x, y, z;
    CK(cuMemAlloc(&x, N * 4));
    CK(cuMemAlloc(&y, N * 4));
    CK(cuMemAlloc(&z, 4));
    CK(cuMemcpyHtoD(x, one, sizeof one));
    CK(cuMemcpyHtoD(y, two, sizeof two));
    CUstream a, b;
    CUevent e;
    CK(cuStreamCreate(&a, CU_STREAM_DEFAULT));
    CK(cuStreamCreate(&b, CU_STREAM_DEFAULT));
    CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    /* finished as far as the host knows through b */
    CK(cuMemcpyDtoHAsync(hp, x, N * 4, a));
    CK(cuEventRecord(e, a));
    CK(cuStreamWaitEvent(b, e, 0));
    CK(cuStreamSynchronize(b));
    print_words("xsync through b", hp, N * 4);
    memset(hp, 0xee, N * 4); /* reused */
    /* finished as far as the host knows through the legacy stream's synchronous copy */
    unsigned word;
    CK(cuMemcpyDtoHAsync(hp, y, N * 4, a));
    CK(cuMemcpyDtoH(&word, z, 4)); /* returns once it, hence a's earlier work, is done */
    print_words("xsync through legacy", hp, N * 4);
    memset(hp, 0xdd, N * 4);
    CK(cuCtxSynchronize());
    CK(cuEventDestroy(e));
    CK(cuStreamDestroy(a));
    CK(cuStreamDestroy(b));
    CK(cuMemFreeHost(hp));
    CK(cuMemFree(x));
    CK(cuMemFree(y));
    CK(cuMemFree(z));
    return 0;
}

struct release {
    CUcontext ctx;
    CUstream nb;
    CUdeviceptr flag;
    unsigned value;
    int memset;
};

static void *releaser(void *arg)
{
    const struct release *r = arg;
    CK(cuCtxSetCurrent(r->ctx));
    usleep(200 * 1000); /* the main thread is in its copy by then (if not, it does not wait) */
    if (r->memset)
        CK(cuMemsetD32Async(r->flag, r->value, 1, r->nb));
    else
        CK(cuStreamWriteValue32(r->nb, r->flag, r->value, CU_STREAM_WRITE_VALUE_DEFAULT));
    CK(cuStreamSynchronize(r->nb));
    return NULL;
}

static int waitvalue(void)
{
    static unsigned h[N];
    CUdeviceptr flag, d;
    CUstream s, nb;
    struct release rel = {0};
    CK(cuCtxGetCurrent(&rel.ctx));
    CK(cuMemAlloc(&flag, 4));
    CK(cuMemAlloc(&d, N * 4));
    CK(cuMemsetD32(flag, 0, 1));
    CK(cuMemsetD32(d, 0, N));
    CK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    CK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    rel.nb = nb, rel.flag = flag;
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM /* the legacy stream's waits for blocking streams */
    for (unsigned round = 1; round <= 2; round++) {
        CK(cuStreamWaitValue32(s, flag, round, CU_STREAM_WAIT_VALUE_GEQ));
        iota(d, N, 1000 * round, s); /* runs once the value is there */
        rel.value = round, rel.memset = round == 2;
        pthread_t t;
        if (pthread_create(&t, NULL, releaser, &rel) != 0)
            return 1;
        CK(cuMemcpyDtoH(h, d, N * 4)); /* the legacy stream: after s's earlier work */
        pthread_join(t, NULL);
        print_words(round == 1 ? "released by cuStreamWriteValue32" : "released by a memset", h,
                    N * 4);
    }
    /* a synchronous memset and device-to-device copy on the legacy stream are ordered after
     * s's wait, but the host does not wait for them (NVIDIA's rules): this thread releases the
     * wait itself after them, so a capture that waits for them hangs */
    CUdeviceptr e;
    CK(cuMemAlloc(&e, N * 4));
    CK(cuStreamWaitValue32(s, flag, 3, CU_STREAM_WAIT_VALUE_GEQ));
    iota(d, N, 3000, s);
    CK(cuMemsetD32(e, 5, N));
    CK(cuMemcpyDtoD(e, d, N * 4));
    CK(cuMemcpyHtoD(e, (const void *)(uintptr_t)d, N * 4)); /* device memory: a device copy */
    CK(cuStreamWriteValue32(nb, flag, 3, CU_STREAM_WRITE_VALUE_DEFAULT));
    CK(cuMemcpyDtoH(h, e, N * 4));
    print_words("released after a memset and a device copy", h, N * 4);
    CK(cuMemFree(e));
#endif
    /* the default stream itself (the legacy stream; built with per-thread default streams,
     * this thread's): the copy waits for the wait on it */
    CK(cuStreamWaitValue32(NULL, flag, 4, CU_STREAM_WAIT_VALUE_GEQ));
    iota(d, N, 4000, NULL);
    rel.value = 4, rel.memset = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, releaser, &rel) != 0)
        return 1;
    CK(cuMemcpyDtoH(h, d, N * 4));
    pthread_join(t, NULL);
    print_words("released on the default stream", h, N * 4);
    CK(cuStreamDestroy(s));
    CK(cuStreamDestroy(nb));
    CK(cuMemFree(flag));
    CK(cuMemFree(d));
    return 0;
}

struct late_read {
    CUcontext ctx;
    CUstream s, nb;
    CUdeviceptr flag1, flag2, d;
    unsigned *hp;
};

static void *late_reader(void *arg)
{
    const struct late_read *a = arg;
    CK(cuCtxSetCurrent(a->ctx));
    usleep(200 * 1000); /* the main thread is in cuStreamSynchronize(s) by then */
    CK(cuStreamWaitValue32(a->s, a->flag2, 1, CU_STREAM_WAIT_VALUE_GEQ));
    iota(a->d, N, 700, a->s);
    CK(cuMemcpyDtoHAsync(a->hp, a->d, N * 4, a->s)); /* issued after that sync began */
    CK(cuStreamWriteValue32(a->nb, a->flag1, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
    return NULL;
}

static int syncwindow(void)
{
    struct late_read a = {0};
    CK(cuCtxGetCurrent(&a.ctx));
    CK(cuMemAlloc(&a.flag1, 4));
    CK(cuMemAlloc(&a.flag2, 4));
    CK(cuMemAlloc(&a.d, N * 4));
    CK(cuMemsetD32(a.flag1, 0, 1));
    CK(cuMemsetD32(a.flag2, 0, 1));
    CK(cuMemAllocHost((void **)&a.hp, N * 4));
    memset(a.hp, 0x11, N * 4);
    CK(cuStreamCreate(&a.s, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&a.nb, CU_STREAM_NON_BLOCKING));
    CK(cuStreamWaitValue32(a.s, a.flag1, 1, CU_STREAM_WAIT_VALUE_GEQ));
    pthread_t t;
    if (pthread_create(&t, NULL, late_reader, &a) != 0)
        return 1;
    CK(cuStreamSynchronize(a.s)); /* returns when flag1 is written: the copy is still queued */
    pthread_join(t, NULL);
    CK(cuStreamWriteValue32(a.nb, a.flag2, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
    CK(cuStreamSynchronize(a.s)); /* now the copy is done */
    print_words("read after the second sync", a.hp, N * 4);
    CK(cuStreamDestroy(a.s));
    CK(cuStreamDestroy(a.nb));
    CK(cuMemFreeHost(a.hp));
    CK(cuMemFree(a.flag1));
    CK(cuMemFree(a.flag2));
    CK(cuMemFree(a.d));
    return 0;
}

static int zerocopy(void)
{
    unsigned *hp;
    CUdeviceptr dp;
    CK(cuMemHostAlloc((void **)&hp, N * 4, CU_MEMHOSTALLOC_DEVICEMAP));
    CK(cuMemHostGetDevicePointer(&dp, hp, 0));
    iota(dp, N, 77, NULL); /* the kernel writes host memory */
    CK(cuCtxSynchronize());
    print_words("zerocopy", hp, N * 4);
    CK(cuMemFreeHost(hp));
    return 0;
}

static int devhost(void)
{
    CUdeviceptr a, b;
    CK(cuMemAlloc(&a, N * 4));
    CK(cuMemAlloc(&b, N * 4));
    iota(a, N, 3, NULL);
    CK(cuMemcpyHtoD(b, (const void *)(uintptr_t)a, N * 4)); /* the "host" side is device memory */
    static unsigned out[N];
    CK(cuMemcpyDtoH(out, b, sizeof out));
    print_words("devhost", out, sizeof out);
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    return 0;
}

static int unmodelled(void)
{
    CUdeviceptr d;
    CK(cuMemAlloc(&d, N * 4));
    iota(d, N, 1, NULL);
    CK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
    iota(d, N / 2, 2, NULL);
    static unsigned out[N];
    CK(cuMemcpyDtoH(out, d, sizeof out));
    print_words("unmodelled", out, sizeof out);
    CK(cuMemFree(d));
    return 0;
}

static int gpa(void)
{
    CUresult (*memset32)(CUdeviceptr, unsigned, size_t) = NULL;
    CUdriverProcAddressQueryResult st;
    CK(cuGetProcAddress("cuMemsetD32", (void **)&memset32, 12000, 0, &st));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, N * 4));
    CK(memset32(d, 0x01020304u, N));
    static unsigned out[N];
    CK(cuMemcpyDtoH(out, d, sizeof out));
    print_words("gpa", out, sizeof out);
    CK(cuMemFree(d));
    return 0;
}

/* cuMemsetD32 resolved (the fake answers with a function none of its exports is) and never
 * called, as a runtime resolves its whole table: the trace stays complete */
static int gpa_unused(void)
{
    void *memset32 = NULL;
    CUdriverProcAddressQueryResult st;
    CK(cuGetProcAddress("cuMemsetD32", &memset32, 12000, 0, &st));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, N * 4));
    iota(d, N, 3, NULL);
    static unsigned out[N];
    CK(cuMemcpyDtoH(out, d, sizeof out));
    print_words("gpa_unused", out, sizeof out);
    printf("gpa_unused: resolved %s\n", memset32 ? "yes" : "no");
    CK(cuMemFree(d));
    return 0;
}

/* iota launched with 64 KiB of dynamic shared memory: past the 48 KiB a function gets by
 * default, so the launch needs the attribute (the fake refuses it otherwise, as a GPU does) */
static void iota_shmem(CUfunction fn, CUdeviceptr out, unsigned n, unsigned start)
{
    void *params[] = {&out, &n, &start};
    CK(cuLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 64u << 10, NULL, params, NULL));
}

static int funcattr(void)
{
    CUdeviceptr d;
    CK(cuMemAlloc(&d, N * 4));
    CK(cuFuncSetAttribute(f_iota, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 << 10));
    iota_shmem(f_iota, d, N, 7);
    static unsigned out[N];
    CK(cuMemcpyDtoH(out, d, sizeof out));
    print_words("funcattr module", out, sizeof out);
    CUlibrary lib;
    CUkernel k;
    CK(cuLibraryLoadData(&lib, FAKE_IMAGE_GLOBALS, NULL, NULL, 0, NULL, NULL, 0));
    CK(cuLibraryGetKernel(&k, lib, "iota"));
    CK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 80 << 10, k, dev));
    iota_shmem((CUfunction)k, d, N / 2, 9);
    CK(cuMemcpyDtoH(out, d, sizeof out));
    print_words("funcattr library", out, sizeof out);
    CK(cuLibraryUnload(lib));
    CK(cuMemFree(d));
    return 0;
}

static int reload(void)
{
    CUmodule m1, m2;
    CUfunction f1, f2;
    CK(cuModuleLoadData(&m1, FAKE_IMAGE));
    CK(cuModuleGetFunction(&f1, m1, "iota"));
    CUdeviceptr x, y;
    CK(cuMemAlloc(&x, N * 4));
    CK(cuMemAlloc(&y, N * 4));
    iota(x, N, 3, NULL);
    CK(cuModuleUnload(m1));
    CK(cuModuleLoadData(&m2, FAKE_IMAGE));
    CK(cuModuleGetFunction(&f2, m2, "saxpy"));
    printf("reload: handle %s\n", f2 == f1 ? "reused" : "new");
    iota(y, N, 100, NULL);
    float a = 2.0f;
    unsigned n = N;
    void *params[] = {&a, &x, &y, &n};
    CK(cuLaunchKernel(f2, N / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    static unsigned out[N];
    CK(cuMemcpyDtoH(out, y, sizeof out));
    print_words("reload saxpy", out, sizeof out);
    CK(cuModuleUnload(m2));
    CK(cuMemFree(x));
    CK(cuMemFree(y));
    return 0;
}

static int stream_fill(void)
{
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a, b, c;
    CK(cuMemAlloc(&a, N * 4));
    CK(cuMemAlloc(&b, N * 4));
    CK(cuMemAlloc(&c, N * 4));
    iota(c, N, 5, s);
    CK(cuMemsetD32Async(a, 0x3f800000u, N, s)); /* 1.0f */
    CK(cuMemcpyDtoDAsync(b, c, N * 4, s));
    saxpy(2.0f, a, b, N, s); /* b = 2a + b: reads both */
    static unsigned out[N];
    CK(cuMemcpyDtoHAsync(out, b, sizeof out, s));
    CK(cuStreamSynchronize(s));
    print_words("stream_fill", out, sizeof out);
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    CK(cuMemFree(c));
    CK(cuStreamDestroy(s));
    return 0;
}

static int graph(void)
{
    CUstream s, s2;
    CUevent fork, joined;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&joined, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr a, b;
    CK(cuMemAlloc(&a, N * 4));
    CK(cuMemAlloc(&b, N * 4));
    static unsigned in[N], out[N];
    for (unsigned i = 0; i < N; i++)
        in[i] = i * 3u;
    CK(cuMemcpyHtoD(a, in, sizeof in));
    /* captured, not run: a += 0.5 * a (saxpy on s), b = 7 on s2 after a fork, b[0..N/2) = a
     * on s after the join, then b back to the host */
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    saxpy(0.5f, a, a, N, s);
    CK(cuEventRecord(fork, s));
    CK(cuStreamWaitEvent(s2, fork, 0));
    CK(cuMemsetD32Async(b, 7u, N, s2));
    CK(cuEventRecord(joined, s2));
    CK(cuStreamWaitEvent(s, joined, 0));
    CK(cuMemcpyDtoDAsync(b, a, N / 2 * 4, s));
    CK(cuMemcpyDtoHAsync(out, b, sizeof out, s));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    CUgraphExec x;
    CK(cuGraphInstantiate(&x, g, 0));
    for (int launch = 0; launch < 2; launch++) {
        memset(out, 0, sizeof out);
        CK(cuGraphLaunch(x, s));
        CK(cuStreamSynchronize(s));
        print_words(launch ? "graph launch 2" : "graph launch 1", out, sizeof out);
        for (unsigned i = 0; i < N; i++) /* the next launch starts from other values */
            in[i] = i + 1000u * (unsigned)launch;
        CK(cuMemcpyHtoD(a, in, sizeof in));
    }
    CK(cuGraphExecDestroy(x));
    CK(cuGraphDestroy(g));
    CK(cuEventDestroy(fork));
    CK(cuEventDestroy(joined));
    CK(cuStreamDestroy(s2));
    CK(cuStreamDestroy(s));
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    return 0;
}

static int graph_node(void)
{
    CUgraph g;
    CUgraphNode n;
    CUgraphExec x;
    CK(cuGraphCreate(&g, 0));
    CK(cuGraphAddEmptyNode(&n, g, NULL, 0));
    CK(cuGraphInstantiate(&x, g, 0));
    CK(cuGraphLaunch(x, NULL));
    CK(cuCtxSynchronize());
    printf("graph_node: launched\n");
    CK(cuGraphExecDestroy(x));
    CK(cuGraphDestroy(g));
    return 0;
}

static int libglobal(void)
{
    CUlibrary lib;
    CK(cuLibraryLoadData(&lib, FAKE_IMAGE_GLOBALS, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel k;
    CK(cuLibraryGetKernel(&k, lib, "iota"));
    CUdeviceptr g;
    size_t size;
    CK(cuLibraryGetGlobal(&g, &size, lib, "table"));
    unsigned n = (unsigned)(size / 4), start = 11;
    void *params[] = {&g, &n, &start};
    CK(cuLaunchKernel((CUfunction)k, (n + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
    unsigned *out = malloc(size);
    CK(cuMemcpyDtoH(out, g, size));
    print_words("libglobal", out, size);
    free(out);
    CK(cuLibraryUnload(lib));
    return 0;
}

static int enumerate(void)
{
    unsigned n;
    CK(cuModuleGetFunctionCount(&n, mod));
    CUfunction fs[8];
    CK(cuModuleEnumerateFunctions(fs, n < 8 ? n : 8, mod));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, N * 4));
    for (unsigned i = 0; i < n && i < 8; i++) {
        const char *name;
        CK(cuFuncGetName(&name, fs[i]));
        if (strcmp(name, "iota"))
            continue;
        unsigned m = N, start = 21;
        void *params[] = {&d, &m, &start};
        CK(cuLaunchKernel(fs[i], N / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
    }
    static unsigned out[N];
    CK(cuMemcpyDtoH(out, d, sizeof out));
    print_words("enumerate", out, sizeof out);
    CK(cuMemFree(d));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prog_memkinds MODE\n");
        return 2;
    }
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, FAKE_IMAGE));
    CK(cuModuleGetFunction(&f_saxpy, mod, "saxpy"));
    CK(cuModuleGetFunction(&f_iota, mod, "iota"));
    const char *m = argv[1];
    int r = !strcmp(m, "pool")          ? pool()
            : !strcmp(m, "pitch")       ? pitch()
            : !strncmp(m, "vmm", 3)     ? vmm(m)
            : !strcmp(m, "ipc")         ? ipc()
            : !strcmp(m, "managed")     ? managed()
            : !strcmp(m, "pinned")      ? pinned()
            : !strcmp(m, "zerocopy")    ? zerocopy()
            : !strcmp(m, "devhost")     ? devhost()
            : !strcmp(m, "unmodelled")  ? unmodelled()
            : !strcmp(m, "gpa")         ? gpa()
            : !strcmp(m, "gpa_unused")  ? gpa_unused()
            : !strcmp(m, "libglobal")   ? libglobal()
            : !strcmp(m, "funcattr")    ? funcattr()
            : !strcmp(m, "graph")       ? graph()
            : !strcmp(m, "stream_fill") ? stream_fill()
            : !strcmp(m, "graph_node")  ? graph_node()
            : !strcmp(m, "enumerate")   ? enumerate()
            : !strcmp(m, "reload")      ? reload()
            : !strcmp(m, "xsync")       ? xsync()
            : !strcmp(m, "waitvalue")   ? waitvalue()
            : !strcmp(m, "syncwindow")  ? syncwindow()
                                        : 2;
    if (r == 2)
        fprintf(stderr, "prog_memkinds: unknown mode %s\n", m);
    CK(cuModuleUnload(mod));
    CK(cuDevicePrimaryCtxRelease(dev));
    return r;
}
