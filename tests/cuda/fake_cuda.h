/*
 * tests/cuda/fake_cuda.h — what the test programs and the fake driver (fake_cuda.c) agree on.
 * Test only: nothing here is installed.
 *
 * A fake module image is NUL-terminated text: the line "FAKECUDA 1", then one kernel name per
 * line. cuModuleLoadData / cuLibraryLoadData accept it; cuModuleGetFunction / cuLibraryGetKernel
 * find a name listed in the image that the fake also implements (a host function, below).
 *
 * Environment of the fake driver:
 *   FAKE_CUDA_BASE   device address base (hex, default 0x7e0000000000): replay runs with
 *                    another base so that every device address must be relocated
 *   FAKE_CUDA_HEAP   bytes of device addresses and memory (default 64 MiB)
 *   FAKE_CUDA_GPA_INTERNAL=cuMemsetD32   cuGetProcAddress("cuMemsetD32") returns a function that
 *                    is not an exported symbol (what the shim cannot identify)
 *   FAKE_CUDA_LATE=1 fills and device copies on the legacy stream complete late (fake_cuda.c)
 *   FAKE_CUDA_LIE    lies told on purpose, comma-separated, so that tests can show that every
 *                    verdict fails when the driver under test misbehaves:
 *                      partial:KERNEL[/RUN]  launches of KERNEL handle half their elements (the
 *                                            rest of what they may write keeps its old bytes)
 *                      wrong:KERNEL[/RUN]    ... flip bit 30 of their output's first word (of
 *                                            their last device-pointer parameter): far off
 *                      nudge:KERNEL[/RUN]    ... flip bit 0 of it: one ulp of a float
 *                      lost:KERNEL[/RUN]     the first such launch fails CUDA_ERROR_LAUNCH_FAILED
 *                                            and the context stays failed: every later launch,
 *                                            synchronisation, read-back and module load fails
 *                      late                  as FAKE_CUDA_LATE=1
 *                      name:NAME             cuDeviceGetName says NAME (another device)
 *                    RUN K limits a lie to run K: runs are counted by the loads of the first
 *                    module image in the process (a replay loads its modules once per run; the
 *                    capture is run 1 of its process). Direct launches only (not graph nodes).
 * Device addresses are reserved PROT_NONE in the process: like GPU memory, device memory cannot
 * be read or written by host code (the program's or the capture shim's); a host access crashes.
 * The fake itself reaches the bytes through a second mapping. Kernels and copies check that
 * every device range lies in live device-accessible memory and fail with
 * CUDA_ERROR_ILLEGAL_ADDRESS / CUDA_ERROR_INVALID_VALUE otherwise (a missed relocation is a clean
 * error). The kinds of memory a real driver has exist with their pointer attributes
 * (cuPointerGetAttribute[s]: memory type, managed, context, range start and size): cuMemAlloc,
 * async and pool allocations, pitch allocations (rows padded to 512 bytes), VMM
 * (cuMemAddressReserve, cuMemCreate, cuMemMap with aliasing, 64 KiB granularity), IPC handles
 * (the same bytes at other addresses), managed memory (host-accessible), pinned and registered
 * host memory (device-accessible at the same address). Streams execute each op when it is
 * enqueued, in order, except behind a cuStreamWaitValue32/64 whose value is not there yet: that
 * stream's later work, and work the CUDA stream rules order after it (the legacy stream after a
 * blocking stream's earlier work, and the reverse; cuStreamWaitEvent), is deferred until the
 * value is written (cuStreamWriteValue32/64, a copy, fill or kernel, or the host), and the host
 * waits for it where a driver makes it wait (stream, event and context syncs, synchronous copies
 * with a host side). fake_cuda.c, "waits on memory values", has the details.
 */
#ifndef REPRISE_TESTS_FAKE_CUDA_H
#define REPRISE_TESTS_FAKE_CUDA_H

/* Kernels (parameters in order, with their sizes and offsets in the packed buffer):
 *   saxpy        float a @0, const float *x @8, float *y @16, unsigned n @24: y = a*x + y
 *   iota         unsigned *out @0, unsigned n @8, unsigned start @12: out[i] = start + i
 *   scale_struct struct fake_span {float *p; unsigned n; float s;} @0 (16 bytes): p[i] *= s
 *   racy_sum     const float *x @0, float *out @8, unsigned n @16: four host threads add x
 *                into *out without any ordering or atomicity: the result varies run to run
 * Elements handled: min(n, grid.x * block.x). */
#define FAKE_IMAGE "FAKECUDA 1\nsaxpy\niota\nscale_struct\nracy_sum\n"
/* A line "@name bytes" declares a global of that size in device memory, zeroed at load
 * (cuModuleGetGlobal, cuLibraryGetGlobal). */
#define FAKE_IMAGE_GLOBALS "FAKECUDA 1\niota\n@table 4096\n"

struct fake_span {
    float *p;
    unsigned n;
    float s;
};

#endif
