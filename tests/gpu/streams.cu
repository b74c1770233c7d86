/*
 * tests/gpu/streams.cu — a CUDA C++ program for scripts/gpu-check.sh, built on the GPU machine
 * with nvcc (the runtime API, so every driver call goes through libcudart's cuGetProcAddress):
 * pinned host memory, three streams ordered by events, async copies both ways, two kernels, and
 * a CUDA graph captured from a stream and launched twice. Every result is checked against the
 * CPU (exit 1 when one differs) and printed as a checksum, so that a run under capture can be
 * compared with a plain run byte for byte.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x)                                                                            \
    do {                                                                                 \
        cudaError_t e_ = (x);                                                            \
        if (e_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

enum { N = 1 << 16, BLOCK = 256 };

__global__ void axpb(float *y, const float *x, float a, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + b;
}

/* integer sums per block: exact whatever the order, so the result is deterministic */
__global__ void block_sums(unsigned *out, const unsigned *in, int n)
{
    __shared__ unsigned s[BLOCK];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0u;
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = s[0];
}

__global__ void add_one(unsigned *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] += 1u;
}

static unsigned long long fnv(const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

int main(void)
{
    const int blocks = N / BLOCK;
    float *hx, *hy;
    unsigned *hu, *hs;
    CK(cudaMallocHost(&hx, N * sizeof(float)));
    CK(cudaMallocHost(&hy, N * sizeof(float)));
    CK(cudaMallocHost(&hu, N * sizeof(unsigned)));
    CK(cudaMallocHost(&hs, blocks * sizeof(unsigned)));
    for (int i = 0; i < N; i++) {
        hx[i] = (float)(i % 1000) * 0.5f;
        hu[i] = (unsigned)(i * 2654435761u) >> 8;
    }
    float *dx, *dy;
    unsigned *du, *ds;
    CK(cudaMalloc(&dx, N * sizeof(float)));
    CK(cudaMalloc(&dy, N * sizeof(float)));
    CK(cudaMalloc(&du, N * sizeof(unsigned)));
    CK(cudaMalloc(&ds, blocks * sizeof(unsigned)));

    cudaStream_t s[3];
    cudaEvent_t up, done;
    for (int i = 0; i < 3; i++)
        CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&up, cudaEventDisableTiming));
    CK(cudaEventCreate(&done));

    /* stream 0 uploads; stream 1 waits for the upload, computes y; stream 2 sums u meanwhile */
    CK(cudaMemcpyAsync(dx, hx, N * sizeof(float), cudaMemcpyHostToDevice, s[0]));
    CK(cudaEventRecord(up, s[0]));
    CK(cudaMemcpyAsync(du, hu, N * sizeof(unsigned), cudaMemcpyHostToDevice, s[2]));
    block_sums<<<blocks, BLOCK, 0, s[2]>>>(ds, du, N);
    CK(cudaStreamWaitEvent(s[1], up, 0));
    axpb<<<blocks, BLOCK, 0, s[1]>>>(dy, dx, 3.0f, -1.0f, N);
    CK(cudaMemcpyAsync(hy, dy, N * sizeof(float), cudaMemcpyDeviceToHost, s[1]));
    CK(cudaMemcpyAsync(hs, ds, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost, s[2]));
    CK(cudaEventRecord(done, s[1]));
    CK(cudaEventSynchronize(done));
    CK(cudaStreamSynchronize(s[2]));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += hy[i] != 3.0f * hx[i] - 1.0f;
    for (int b = 0; b < blocks; b++) {
        unsigned want = 0;
        for (int i = 0; i < BLOCK; i++)
            want += hu[b * BLOCK + i];
        bad += hs[b] != want;
    }
    printf("streams: y %016llx sums %016llx\n", fnv(hy, N * sizeof(float)),
           fnv(hs, blocks * sizeof(unsigned)));

    /* a graph captured from stream 0: add one to u, sum it, copy the sums back; launched twice */
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
    add_one<<<blocks, BLOCK, 0, s[0]>>>(du, N);
    block_sums<<<blocks, BLOCK, 0, s[0]>>>(ds, du, N);
    CK(cudaMemcpyAsync(hs, ds, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost, s[0]));
    CK(cudaStreamEndCapture(s[0], &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    for (int launch = 1; launch <= 2; launch++) {
        CK(cudaGraphLaunch(ge, s[0]));
        CK(cudaStreamSynchronize(s[0]));
        for (int b = 0; b < blocks; b++) {
            unsigned want = 0;
            for (int i = 0; i < BLOCK; i++)
                want += hu[b * BLOCK + i] + (unsigned)launch;
            bad += hs[b] != want;
        }
        printf("graph launch %d: sums %016llx\n", launch, fnv(hs, blocks * sizeof(unsigned)));
    }
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    for (int i = 0; i < 3; i++)
        CK(cudaStreamDestroy(s[i]));
    CK(cudaEventDestroy(up));
    CK(cudaEventDestroy(done));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaFree(du));
    CK(cudaFree(ds));
    CK(cudaFreeHost(hx));
    CK(cudaFreeHost(hy));
    CK(cudaFreeHost(hu));
    CK(cudaFreeHost(hs));
    if (bad) {
        fprintf(stderr, "streams: %d results differ from the CPU's\n", bad);
        return 1;
    }
    printf("streams: all results equal the CPU's\n");
    return 0;
}
