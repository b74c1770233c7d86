/*
 * tests/cuda/prog_dies.c — a Driver-API program that does not end well, for the capture tests
 * of what a trace keeps when its process dies (as tests/vk/vk_dies.c for Vulkan). Each round
 * copies its input in, launches saxpy, copies the result out (a synchronous copy: the round is
 * finished) and prints "launch K done" (flushed):
 *
 *   prog_dies slow N               sleeps 300 ms between rounds; exits 0 after N (the test
 *                                  kills it with SIGKILL long before)
 *   prog_dies segv N [early]       writes through a null pointer after N rounds; "early"
 *                                  installs a SIGSEGV handler before cuInit (the shim chains
 *                                  to it) that prints "handler ran", restores the default and
 *                                  returns, so the fault repeats and ends the process
 *   prog_dies abort N              calls abort() after N rounds
 *   prog_dies fork N               after the first round a forked child returns from main (its
 *                                  atexit handlers run); the parent goes on and exits 0
 */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/cuda/ck.h"
#include "tests/cuda/fake_cuda.h"

#define N 256

static void on_segv(int sig)
{
    static const char msg[] = "handler ran\n";
    ssize_t r = write(1, msg, sizeof msg - 1);
    (void)r;
    signal(sig, SIG_DFL); /* returning runs the faulting store again, now fatally */
}

/* A store through a null pointer, kept by the compiler (volatile) and not turned into an exit
 * by UBSan in `make asan` (the program must die of the signal, as it does in a normal build). */
__attribute__((noinline, no_sanitize("undefined"))) static void write_null(void)
{
    volatile int *volatile null = NULL;
    *null = 1;
}

static void install_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
}

static void pause_ms(long ms)
{
    nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: prog_dies slow|segv|abort|fork N [early]\n");
        return 2;
    }
    const char *mode = argv[1], *when = argc > 3 ? argv[3] : "";
    int n = atoi(argv[2]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(when, "early"))
        install_handler();
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, FAKE_IMAGE));
    CK(cuModuleGetFunction(&f, mod, "saxpy"));
    CUdeviceptr x, y;
    CK(cuMemAlloc(&x, N * 4));
    CK(cuMemAlloc(&y, N * 4));
    static float hx[N], hy[N];
    unsigned long long sum = 0;
    for (int k = 1; k <= n; k++) {
        for (int i = 0; i < N; i++)
            hx[i] = (float)(i + k), hy[i] = 1.0f;
        CK(cuMemcpyHtoD(x, hx, sizeof hx));
        CK(cuMemcpyHtoD(y, hy, sizeof hy));
        float a = 0.5f * (float)k;
        unsigned cnt = N;
        void *params[] = {&a, &x, &y, &cnt};
        CK(cuLaunchKernel(f, N / 64, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
        CK(cuMemcpyDtoH(hy, y, sizeof hy));
        for (int i = 0; i < N; i++)
            sum = sum * 31 + (unsigned long long)hy[i];
        printf("launch %d done\n", k);
        if (k == 1 && !strcmp(mode, "fork")) {
            pid_t pid = fork();
            if (pid == 0)
                return 0;
            waitpid(pid, NULL, 0);
        }
        if (!strcmp(mode, "slow"))
            pause_ms(300);
    }
    if (!strcmp(mode, "segv"))
        write_null();
    if (!strcmp(mode, "abort"))
        abort();
    printf("prog_dies sum %016llx\n", sum);
    CK(cuMemFree(x));
    CK(cuMemFree(y));
    CK(cuModuleUnload(mod));
    CK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
