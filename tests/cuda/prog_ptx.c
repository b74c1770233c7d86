/*
 * tests/cuda/prog_ptx.c — a Driver-API program for a real GPU: a saxpy written in PTX, compiled
 * by the driver's JIT at cuModuleLoadData (no toolkit needed), launched on two streams ordered
 * by an event, its result copied back, checked against the CPU's (exit 1 when it differs) and
 * printed as a checksum. The fake driver cannot run PTX: tests/test_cuda.c runs this only where
 * the machine's own libcuda.so.1 has a device.
 */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/cuda/ck.h"

#define N 4096

/* y[i] = a * x[i] + y[i] for i < n */
static const char ptx[] = ".version 6.0\n"
                          ".target sm_60\n"
                          ".address_size 64\n"
                          ".visible .entry saxpy(.param .u64 px, .param .u64 py,\n"
                          "                      .param .f32 pa, .param .u32 pn)\n"
                          "{\n"
                          "  .reg .pred p;\n"
                          "  .reg .b32 r<6>;\n"
                          "  .reg .f32 f<4>;\n"
                          "  .reg .b64 d<8>;\n"
                          "  ld.param.u64 d1, [px];\n"
                          "  ld.param.u64 d2, [py];\n"
                          "  ld.param.f32 f1, [pa];\n"
                          "  ld.param.u32 r1, [pn];\n"
                          "  mov.u32 r2, %ctaid.x;\n"
                          "  mov.u32 r3, %ntid.x;\n"
                          "  mov.u32 r4, %tid.x;\n"
                          "  mad.lo.s32 r5, r2, r3, r4;\n"
                          "  setp.ge.u32 p, r5, r1;\n"
                          "  @p bra done;\n"
                          "  cvta.to.global.u64 d3, d1;\n"
                          "  cvta.to.global.u64 d4, d2;\n"
                          "  mul.wide.u32 d5, r5, 4;\n"
                          "  add.s64 d6, d3, d5;\n"
                          "  add.s64 d7, d4, d5;\n"
                          "  ld.global.f32 f2, [d6];\n"
                          "  ld.global.f32 f3, [d7];\n"
                          "  fma.rn.f32 f3, f1, f2, f3;\n"
                          "  st.global.f32 [d7], f3;\n"
                          "done:\n"
                          "  ret;\n"
                          "}\n";

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, ptx));
    CK(cuModuleGetFunction(&f, mod, "saxpy"));

    static float hx[N], hy[N], out[N];
    for (int i = 0; i < N; i++)
        hx[i] = (float)i * 0.25f, hy[i] = 1.0f / (float)(i + 1);
    CUdeviceptr x, y;
    CK(cuMemAlloc(&x, sizeof hx));
    CK(cuMemAlloc(&y, sizeof hy));
    CK(cuMemcpyHtoD(x, hx, sizeof hx));
    CK(cuMemcpyHtoD(y, hy, sizeof hy));

    /* y = 2.5 x + y on one stream, then y = -0.5 x + y on another after an event */
    CUstream s1, s2;
    CUevent e;
    CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    float a1 = 2.5f, a2 = -0.5f;
    unsigned n = N;
    void *p1[] = {&x, &y, &a1, &n}, *p2[] = {&x, &y, &a2, &n};
    CK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, s1, p1, NULL));
    CK(cuEventRecord(e, s1));
    CK(cuStreamWaitEvent(s2, e, 0));
    CK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, s2, p2, NULL));
    CK(cuMemcpyDtoHAsync(out, y, sizeof out, s2));
    CK(cuStreamSynchronize(s2));

    for (int i = 0; i < N; i++) { /* exact: fma of values with few mantissa bits */
        float want = 1.0f / (float)(i + 1);
        want = fmaf(2.5f, hx[i], want);
        want = fmaf(-0.5f, hx[i], want);
        if (out[i] != want) {
            fprintf(stderr, "y[%d] = %a, the CPU computes %a\n", i, out[i], want);
            return 1;
        }
    }
    const unsigned *w = (const unsigned *)out;
    unsigned long long sum = 0;
    for (int i = 0; i < N; i++)
        sum = sum * 31 + w[i];
    printf("y: %08x %08x ... sum %016llx\n", w[0], w[N - 1], sum);

    CK(cuEventDestroy(e));
    CK(cuStreamDestroy(s1));
    CK(cuStreamDestroy(s2));
    CK(cuMemFree(x));
    CK(cuMemFree(y));
    CK(cuModuleUnload(mod));
    CK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
