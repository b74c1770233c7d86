/*
 * tests/cuda/prog_saxpy.c — a Driver-API program for the CUDA capture and replay tests, built
 * with the CUDA headers and run against the fake driver (tests/cuda/fake_cuda.h), with and
 * without the capture shim in front. It prints its results; capture must not change a byte.
 *
 * Usage: prog_saxpy [racy|uninit|init]
 *   (default) module load, allocations, H2D, saxpy through kernelParams, iota through the extra
 *             buffer, a by-value struct holding a device pointer, memsets, a second stream with
 *             an event edge, async D2H resolved at a stream sync, a D2D copy, an entry point
 *             fetched through cuGetProcAddress, two host threads with streams of their own,
 *             cuLaunchKernelEx, context sync
 *   racy      the racy_sum kernel, whose result varies from run to run
 *   uninit    saxpy y = a x + y with y allocated and never written: it reads memory nothing
 *             wrote (zeros from the fake driver; a replay with poison:S shows it), read back
 *   init      the same with y uploaded first: correct
 * (The default run's second saxpy, z = -y + z, reads z[0..16), which iota never wrote: a
 * replay with poison:S names it.)
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cuda/ck.h"
#include "tests/cuda/fake_cuda.h"

#define N 1024

static CUfunction f_iota;
static CUcontext ctx;

static void print_words(const char *what, const void *p, size_t n)
{
    const unsigned *w = p;
    unsigned long long sum = 0;
    for (size_t i = 0; i < n / 4; i++)
        sum = sum * 31 + w[i];
    printf("%s: %08x %08x %08x ... sum %016llx\n", what, w[0], w[1], w[n / 4 - 1], sum);
}

static void *worker(void *arg)
{
    unsigned start = (unsigned)(size_t)arg;
    CK(cuCtxSetCurrent(ctx));
    CUstream s;
    CUdeviceptr d;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&d, N * 4));
    unsigned n = N;
    void *params[] = {&d, &n, &start};
    CK(cuLaunchKernel(f_iota, N / 128, 1, 1, 128, 1, 1, 0, s, params, NULL));
    static unsigned out[2][N];
    unsigned *o = out[start == 1000 ? 0 : 1];
    CK(cuMemcpyDtoHAsync(o, d, N * 4, s));
    CK(cuStreamSynchronize(s));
    CK(cuStreamDestroy(s));
    CK(cuMemFree(d));
    return o;
}

static int racy(CUmodule mod)
{
    CUfunction f;
    CK(cuModuleGetFunction(&f, mod, "racy_sum"));
    CUdeviceptr x, out;
    static float h[N * 16];
    for (int i = 0; i < N * 16; i++)
        h[i] = 1.0f + (float)(i % 7) * 0.25f;
    CK(cuMemAlloc(&x, sizeof h));
    CK(cuMemAlloc(&out, 4));
    CK(cuMemcpyHtoD(x, h, sizeof h));
    CK(cuMemsetD32(out, 0, 1));
    unsigned n = N * 16;
    void *params[] = {&x, &out, &n};
    CK(cuLaunchKernel(f, N * 16 / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    float r;
    CK(cuMemcpyDtoH(&r, out, 4));
    printf("racy_sum %.6f\n", r);
    return 0;
}

static int uninit(CUmodule mod, int init)
{
    CUfunction f;
    CK(cuModuleGetFunction(&f, mod, "saxpy"));
    CUdeviceptr x, y;
    static float hx[N], out[N];
    for (int i = 0; i < N; i++)
        hx[i] = (float)i * 0.5f;
    CK(cuMemAlloc(&x, sizeof hx));
    CK(cuMemAlloc(&y, sizeof hx));
    CK(cuMemcpyHtoD(x, hx, sizeof hx));
    if (init)
        CK(cuMemcpyHtoD(y, hx, sizeof hx));
    float a = 2.5f;
    unsigned n = N;
    void *p[] = {&a, &x, &y, &n};
    CK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, p, NULL));
    CK(cuMemcpyDtoH(out, y, sizeof out));
    print_words("uninit y", out, sizeof out);
    return 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUmodule mod;
    CK(cuModuleLoadData(&mod, FAKE_IMAGE));
    if (argc > 1 && !strcmp(argv[1], "racy"))
        return racy(mod);
    if (argc > 1 && (!strcmp(argv[1], "uninit") || !strcmp(argv[1], "init")))
        return uninit(mod, !strcmp(argv[1], "init"));

    /* an allocation through an entry point fetched by cuGetProcAddress, as cudart does */
    CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
    CUdriverProcAddressQueryResult st;
    CK(cuGetProcAddress("cuMemAlloc", (void **)&alloc, 12000, 0, &st));
    if (!alloc || st != CU_GET_PROC_ADDRESS_SUCCESS) {
        fprintf(stderr, "cuGetProcAddress(cuMemAlloc) failed\n");
        return 1;
    }
    CUfunction f_saxpy, f_scale;
    CK(cuModuleGetFunction(&f_saxpy, mod, "saxpy"));
    CK(cuModuleGetFunction(&f_iota, mod, "iota"));
    CK(cuModuleGetFunction(&f_scale, mod, "scale_struct"));
    CUdeviceptr x, y, z;
    CK(alloc(&x, N * 4));
    CK(cuMemAlloc(&y, N * 4));
    CK(cuMemAlloc(&z, N * 4));
    static float hx[N], hy[N], out[N];
    for (int i = 0; i < N; i++)
        hx[i] = (float)i * 0.5f, hy[i] = 1.0f / (float)(i + 1);
    CK(cuMemcpyHtoD(x, hx, sizeof hx));
    CK(cuMemcpyHtoD(y, hy, sizeof hy));

    float a = 2.5f;
    unsigned n = N;
    void *p1[] = {&a, &x, &y, &n};
    CK(cuLaunchKernel(f_saxpy, N / 256, 1, 1, 256, 1, 1, 0, NULL, p1, NULL));

    /* iota into z through the extra buffer form, at an offset inside the allocation */
    struct {
        CUdeviceptr out;
        unsigned n, start;
    } buf = {z + 64, N - 16, 7};
    size_t bsize = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bsize,
                     CU_LAUNCH_PARAM_END};
    CK(cuLaunchKernel(f_iota, N / 256, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));

    /* a device pointer inside a by-value struct */
    struct fake_span span = {(float *)(uintptr_t)y, N / 2, 0.75f};
    void *p3[] = {&span};
    CK(cuLaunchKernel(f_scale, N / 256, 1, 1, 256, 1, 1, 0, NULL, p3, NULL));

    /* second stream ordered after the legacy stream's work by an event */
    CUstream s;
    CUevent e;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&e, CU_EVENT_DEFAULT));
    CK(cuEventRecord(e, NULL));
    CK(cuStreamWaitEvent(s, e, 0));
    CK(cuMemsetD8Async(x, 0x5a, 128, s));
    CK(cuMemcpyDtoDAsync(x + 256, y, 512, s));
    CK(cuMemcpyDtoHAsync(out, x, sizeof out, s));
    CK(cuStreamSynchronize(s));
    print_words("x", out, sizeof out);

    /* cuLaunchKernelEx with an attribute */
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attr.value.priority = 0;
    CUlaunchConfig cfg = {N / 256, 1, 1, 256, 1, 1, 0, s, &attr, 1};
    float b = -1.0f;
    void *p4[] = {&b, &y, &z, &n};
    CK(cuLaunchKernelEx(&cfg, f_saxpy, p4, NULL));
    CK(cuEventRecord(e, s));
    CK(cuEventSynchronize(e));

    pthread_t th[2];
    pthread_create(&th[0], NULL, worker, (void *)(size_t)1000);
    pthread_create(&th[1], NULL, worker, (void *)(size_t)2000);
    void *r0, *r1;
    pthread_join(th[0], &r0);
    pthread_join(th[1], &r1);
    print_words("thread 0", r0, N * 4);
    print_words("thread 1", r1, N * 4);

    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(out, y, sizeof out));
    print_words("y", out, sizeof out);
    CK(cuMemcpy((CUdeviceptr)(uintptr_t)out, z, sizeof out));
    print_words("z", out, sizeof out);
    CK(cuEventDestroy(e));
    CK(cuStreamDestroy(s));
    CK(cuMemFree(x));
    CK(cuMemFree(y));
    CK(cuMemFree(z));
    CK(cuModuleUnload(mod));
    CK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
