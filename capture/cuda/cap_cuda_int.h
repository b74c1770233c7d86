/*
 * capture/cuda/cap_cuda_int.h — what the files of the CUDA shim (libreprise_cuda.so) share: the
 * symbol table of the real driver, the pass-through trampolines, and the recorder that the
 * wrappers call. Only capture/cuda/cap_cuda_*.c include this.
 *
 *   cap_cuda_tramp.c  one exported trampoline per stub symbol (weak; a wrapper overrides it),
 *                     the "next" pointer per symbol, call counters of unwrapped symbols, and
 *                     the class of each symbol (capture/cuda/cap_cuda_class.h)
 *   cap_cuda_shim.c   loading the real driver, cuGetProcAddress dispatch, the wrappers
 *   cap_cuda_rec.c    the trace: devices, streams, events, modules, kernels, allocations
 *                     (interval map), launches with pointer detection, copies, syncs, timing
 *
 * Threads: every recorder entry point takes one mutex (cap_cuda_lock); wrappers of calls that
 * only enqueue work hold it across the real call so that the trace's order is the order the
 * driver saw, and never hold it across a call that can block on other threads' work: host
 * waits (cuStreamSynchronize and the like) run without it, and a synchronous copy or fill
 * first waits without it for what it would wait for (cap_cuda_prewait).
 */
#ifndef REPRISE_CAP_CUDA_INT_H
#define REPRISE_CAP_CUDA_INT_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stdint.h>

#include "format/sbt.h"
#include "format/sbt_cuda.h"

/* ========================================================================================== */
/* Symbols (cap_cuda_tramp.c)                                                                 */
/* ========================================================================================== */

enum cap_cuda_sym {
#define X(n) CAP_SYM_##n,
#include "capture/cuda/cap_cuda_exports.h"
#undef X
    CAP_SYM__COUNT
};

/* Trampolines beyond the exports, for the entry points cuGetProcAddress returns that are none
 * of the driver's exports (a runtime resolves its whole table at start, graphics interop
 * included, and calls few): slot CAP_SYM__COUNT + k forwards to what the driver returned for
 * the k-th such name, and its first call is what makes the trace incomplete. */
#define CAP_CUDA_UNKNOWN_SLOTS 256
#define CAP_CUDA_SLOTS         (CAP_SYM__COUNT + CAP_CUDA_UNKNOWN_SLOTS)

/* Where each trampoline goes next: for an export, the real driver's function or a stub that
 * returns CUDA_ERROR_NO_DEVICE (no driver) / CUDA_ERROR_NOT_SUPPORTED (symbol missing); for an
 * unknown slot, the driver's answer it stands for. */
extern void *cap_cuda_next[CAP_CUDA_SLOTS];
/* The real driver's address of each symbol (NULL if it lacks it): cuGetProcAddress dispatch. */
extern void *cap_cuda_real[CAP_SYM__COUNT];
/* The shim's own exported function of each symbol (its wrapper or its trampoline), looked
 * up in the shim itself at load time. */
extern void *cap_cuda_self[CAP_SYM__COUNT];
extern const char *const cap_cuda_names[CAP_SYM__COUNT];
/* Calls that went through a trampoline (unwrapped symbols and unknown slots), per slot. */
extern uint64_t cap_cuda_calls[CAP_CUDA_SLOTS];
/* The unknown slot's trampoline k (0 <= k < CAP_CUDA_UNKNOWN_SLOTS). */
void *cap_cuda_unknown_tramp(int k);

/* What the shim does with each export (capture/cuda/cap_cuda_class.h explains the classes). */
enum cap_cuda_class {
    CAP_CLASS_NONE = 0, /* never in the table: an export without a class is a build error */
    CAP_CLASS_RECORDED,
    CAP_CLASS_QUERY,
    CAP_CLASS_HARMLESS,
    CAP_CLASS_AFFECTS,
};
extern const uint8_t cap_cuda_class[CAP_SYM__COUNT];
/* Called by a trampoline, with the caller's arguments saved, the first time its slot is
 * called (exactly once per slot): an export's index, or CAP_SYM__COUNT + k for unknown slot k. */
void cap_cuda_first_call(int sym);

/* The next function of a wrapped symbol, typed as the symbol. */
#define CAP_NEXT(name) ((__typeof__(&name))cap_cuda_next[CAP_SYM_##name])

/* Index of an exported name, or -1. */
int cap_cuda_sym_find(const char *name);
/* cuGetProcAddress: the shim's function for the variant whose real address is real, or real
 * itself when it is not one of the driver's exported symbols (counted, see cap_cuda_rec). The
 * request (version, flags) and the answer are logged where CAP_ENV_PROCLOG asks for it. */
void *cap_cuda_dispatch(const char *symbol, void *real, int version, unsigned long long flags);
/* 1 when the real driver was loaded. */
int cap_cuda_have_driver(void);
const char *cap_cuda_driver_path(void);

/* ========================================================================================== */
/* Recorder (cap_cuda_rec.c)                                                                  */
/* ========================================================================================== */

/* Thread-local nesting guard: returns 1 if this call should be recorded (recording is on and
 * this thread is not already inside a wrapper: a driver that calls its own exported entry
 * points must not be recorded twice or deadlock). Pair with cap_cuda_leave(). */
int cap_cuda_enter(void);
void cap_cuda_leave(void);
void cap_cuda_lock(void);
void cap_cuda_unlock(void);
uint64_t cap_cuda_now(void);

/* Opens the trace if needed (first cuInit). */
void cap_cuda_rec_start(void);
/* Logs once on stderr, marks the trace incomplete, stops recording. */
void cap_cuda_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Counts something the capture could not record, by kind, in the completeness record. With
 * affects, the trace is incomplete and the entry names the next op (the op being recorded,
 * which the caller marks SBT_OPF_UNSUPPORTED, or the first op after). Lock held or not. */
void cap_cuda_unsupported(const char *what, int affects);
/* A cuGetProcAddress answer the shim could not identify: the program may call that entry
 * point without the shim seeing it. */
void cap_cuda_unidentified(const char *symbol);
/* The name unknown slot k stands for (cap_cuda_shim.c), or NULL. */
const char *cap_cuda_unknown_name(int k);

/* Calls below are made with the lock held, after a successful real call, unless said. */
struct cap_cuda_call {
    uint32_t api; /* enum sbt_cuda_api */
    int pt;       /* the _ptsz/_ptds variant */
    CUstream stream;
    uint64_t t0, t1; /* host ns around the real call */
    uint64_t before; /* host waits: 1 + the ordinal of the last op issued before the call
                      * (cap_cuda_ord), 0: not taken */
};

void cap_cuda_rec_device(CUdevice dev);
void cap_cuda_rec_module(CUmodule mod, const void *image, const char *file, uint32_t api);
void cap_cuda_rec_library(CUlibrary lib, const void *image, const char *file, uint32_t api);
void cap_cuda_rec_library_module(CUlibrary lib, CUmodule mod);
void cap_cuda_rec_function(CUfunction f, CUmodule mod, const char *name);
/* A module (is_library 0) or library was unloaded: its functions and kernels are forgotten, so
 * that a handle the driver reuses is recorded as the function it then names. */
void cap_cuda_rec_unload(uint64_t h, int is_library);
void cap_cuda_rec_kernel(CUkernel k, CUlibrary lib, const char *name);
void cap_cuda_rec_kernel_function(CUfunction f, CUkernel k);
/* Stream capture (lock held): c's stream begins capturing into a new graph recording; ends
 * (with graph, its handle, or NULL when the capture failed); a graph instantiated; destroyed
 * (either may be NULL); an exec launched on c's stream: the recording's ops are emitted there
 * (or an unmodelled call when the graph was not made by stream capture). */
void cap_cuda_rec_capture_begin(const struct cap_cuda_call *c);
void cap_cuda_rec_capture_end(const struct cap_cuda_call *c, CUgraph graph);
void cap_cuda_rec_graph_instantiate(CUgraphExec exec, CUgraph graph);
void cap_cuda_rec_graph_destroy(CUgraph graph, CUgraphExec exec);
void cap_cuda_rec_graph_launch(const struct cap_cuda_call *c, CUgraphExec exec);
/* cuFuncSetAttribute / cuKernelSetAttribute succeeded on the function or kernel h: the
 * attribute goes with its launches from now on (FUNC_ATTR). */
void cap_cuda_rec_func_attr(uint64_t h, int attrib, int value);
/* A module (mod) or library (lib) global: one of the two is NULL. */
void cap_cuda_rec_global(CUdeviceptr p, size_t size, CUmodule mod, CUlibrary lib, const char *name);
/* origin: enum sbt_cuda_alloc_origin (MEM, POOL, PITCH). */
void cap_cuda_rec_alloc(const struct cap_cuda_call *c, CUdeviceptr p, size_t size, uint32_t origin);
void cap_cuda_rec_free(const struct cap_cuda_call *c, CUdeviceptr p);
/* Virtual memory management: a mapping of [p, p+size) to physical allocation h is a resource
 * (origin VMM) until cuMemUnmap; two live mappings of one allocation, or adjacent mappings,
 * mark the trace incomplete (replay gives each mapping memory of its own). */
void cap_cuda_rec_map(const struct cap_cuda_call *c, CUdeviceptr p, size_t size,
                      CUmemGenericAllocationHandle h);
void cap_cuda_rec_unmap(const struct cap_cuda_call *c, CUdeviceptr p, size_t size);
/* A copy of n bytes. Every side is classified before anything is read: an allocation the
 * capture tracks, host memory (pageable, pinned or registered: read on the host), or memory it
 * cannot record (managed, untracked device memory, a range spanning allocations) which makes
 * the op unsupported. dst_host / src_host: the side the entry point declares a host pointer
 * (NULL: a device address, or unified addressing for cuMemcpy[Async]). */
void cap_cuda_rec_copy(const struct cap_cuda_call *c, CUdeviceptr dst, CUdeviceptr src,
                       const void *src_host, void *dst_host, size_t n, int is_async);
void cap_cuda_rec_fill(const struct cap_cuda_call *c, CUdeviceptr dst, uint32_t elem,
                       uint32_t value, size_t n);
void cap_cuda_rec_stream_create(const struct cap_cuda_call *c, CUstream s, unsigned flags,
                                int priority);
void cap_cuda_rec_stream_destroy(const struct cap_cuda_call *c, CUstream s);
void cap_cuda_rec_event_create(const struct cap_cuda_call *c, CUevent e, unsigned flags);
void cap_cuda_rec_event_destroy(const struct cap_cuda_call *c, CUevent e);
void cap_cuda_rec_event_record(const struct cap_cuda_call *c, CUevent e, unsigned flags);
void cap_cuda_rec_stream_wait(const struct cap_cuda_call *c, CUevent e, unsigned flags);
/* Host-side completion: stream sync (e = NULL, c->stream), event sync (e), context sync
 * (e = NULL, is_ctx). Called without the lock, after the real call returned success. What the
 * wait covers is the work issued before the call (c->before), not what other threads issued
 * while it waited. */
void cap_cuda_rec_sync(const struct cap_cuda_call *c, CUevent e, int is_ctx);
/* 1 + the ordinal of the last op recorded so far (without the lock). */
uint64_t cap_cuda_ord(void);

/* Synchronous copies and fills that make the host wait: the wait done before the lock is taken
 * (cap_cuda_rec.c explains). What the call is: */
enum cap_cuda_prewait {
    CAP_PREWAIT_HOST, /* cuMemcpyDtoH / cuMemcpyHtoD, dst: the host side; waits unless the
                       * "host" pointer is device memory */
    CAP_PREWAIT_ANY,  /* cuMemcpy: waits when a side is host memory (by the addresses) */
    CAP_PREWAIT_FILL, /* cuMemsetD*: waits when the target is pinned host or managed memory */
};
/* Without the lock: waits for the work a synchronous call of variant pt (the per-thread
 * stream, else the legacy stream) would wait for before it runs, never for more. */
void cap_cuda_prewait(int pt, int kind, uint64_t dst, uint64_t src);

/* A launch: captured before the real call (parameters may change after), finished after. */
struct cap_cuda_launch {
    CUfunction f;
    unsigned grid[3], block[3], shmem;
    void **params, **extra;
    const CUlaunchAttribute *attrs;
    unsigned n_attrs;
    int cooperative;
};
/* Records a launch and issues it through issue(ctx) (the real call), with timing events
 * around it when timing is on. Returns issue's result. */
CUresult cap_cuda_rec_launch(const struct cap_cuda_call *c, const struct cap_cuda_launch *l,
                             CUresult (*issue)(void *ctx), void *ctx);

#endif /* REPRISE_CAP_CUDA_INT_H */
