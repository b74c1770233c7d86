/*
 * tests/test_cuda.c — the CUDA path without a GPU: the shim's exported symbols, its
 * cuGetProcAddress dispatch, capture of Driver-API programs against the test-only fake driver
 * (tests/cuda/fake_cuda.c), and replay of those traces against the fake at another device base
 * address (every pointer relocated) with outputs compared bit for bit; a racy fake kernel must
 * make the comparison fail. Nothing here proves anything about a real GPU (README "CUDA").
 *
 * Needs REPRISE_BUILD (make check sets it). The comparison with NVIDIA's stub library runs when
 * REPRISE_CUDA_STUB names one, and is skipped with a message otherwise.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "format/sbt.h"
#include "format/sbt_cuda.h"
#include "replay/replay.h"
#include "replay/replay_int.h"
#include "tests/cuda/fake_cuda.h"

/* The replay engine is linked only when the Makefile asks for the CUDA backend (once
 * replay/replay_engine.c and replay/replay_vk.c exist); without it the replay tests skip. */
#pragma weak replay_run
#pragma weak replay_result_free
#pragma weak replay_errmsg

static void need_replay(void)
{
    if (!replay_run || !&replay__cuda_backend)
        cr_skip_test("the replay engine is not linked into this test (replay/replay_engine.c "
                     "or replay/replay_vk.c missing): CUDA replay not tested");
}

static char build[1024], shim[1200], shim_dir[1200], fake[1200];

static void paths(void)
{
    const char *b = getenv("REPRISE_BUILD");
    if (!b || !*b)
        cr_skip_test("REPRISE_BUILD is not set (run through make check)");
    snprintf(build, sizeof build, "%s", b);
    snprintf(shim, sizeof shim, "%s/libreprise_cuda.so", b);
    snprintf(shim_dir, sizeof shim_dir, "%s/cuda", b);
    snprintf(fake, sizeof fake, "%s/tests/cuda/fake/libcuda.so.1", b);
}

/* Sorted defined dynamic symbols starting with "cu" of a library, one per line. */
static char *symbols(const char *lib)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd,
             "nm -D --defined-only '%s' | awk '$3 ~ /^cu/ {print $3}' | LC_ALL=C sort", lib);
    FILE *f = popen(cmd, "r");
    cr_assert(f != NULL);
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    size_t k;
    while ((k = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap)
            s = realloc(s, cap *= 2);
    }
    s[n] = 0;
    pclose(f);
    return s;
}

static char *claimed(void)
{
    static const char *const names[] = {
#define X(n) #n,
#include "capture/cap_cuda_exports.h"
#undef X
    };
    size_t n = sizeof names / sizeof names[0], len = 0;
    const char **sorted = malloc(n * sizeof *sorted);
    memcpy(sorted, names, n * sizeof *sorted);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(sorted[j - 1], sorted[j]) > 0; j--) {
            const char *t = sorted[j];
            sorted[j] = sorted[j - 1], sorted[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++)
        len += strlen(sorted[i]) + 1;
    char *s = malloc(len + 1), *p = s;
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s\n", sorted[i]);
    *p = 0;
    free(sorted);
    return s;
}

/* ========================================================================================== */
/* Exported symbols                                                                           */
/* ========================================================================================== */

/* Traces go to a per-process temporary directory, removed when the test process exits. */
static char tmp_dir[64];
static void rm_tmp_dir(void)
{
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
}
static const char *tpath(const char *name)
{
    static char p[4][160];
    static int k;
    if (!tmp_dir[0]) {
        strcpy(tmp_dir, "/tmp/reprise-cuda-XXXXXX");
        cr_assert(mkdtemp(tmp_dir) != NULL);
        atexit(rm_tmp_dir);
    }
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", tmp_dir, name);
    return p[k];
}

Test(shim, exports_the_claimed_list)
{
    paths();
    char *got = symbols(shim), *want = claimed();
    cr_assert(eq(str, got, want), "the shim's cu* exports differ from capture/cap_cuda_exports.h");
    free(got);
    free(want);
}

Test(shim, exports_what_the_stub_exports)
{
    paths();
    const char *stub = getenv("REPRISE_CUDA_STUB");
    if (!stub || !*stub || access(stub, R_OK) != 0)
        cr_skip_test("no CUDA stub libcuda.so here (REPRISE_CUDA_STUB unset): the shim's exports "
                     "were compared with the committed list only");
    char *got = symbols(shim), *want = symbols(stub);
    cr_assert(eq(str, got, want), "the shim's exports differ from %s", stub);
    free(got);
    free(want);
}

Test(shim, fake_exports_the_stub_symbols_too)
{
    paths();
    char *got = symbols(fake), *want = claimed();
    cr_assert(eq(str, got, want));
    free(got);
    free(want);
}

/* ========================================================================================== */
/* cuGetProcAddress dispatch                                                                  */
/* ========================================================================================== */

struct gpa_req {
    const char *name;
    int ver;
    unsigned flags;
    const char *variant; /* what the driver returns (fake, after cudaTypedefs.h), or NULL */
};

/* cudart 13's requests (research/cuda.md appendix A). */
static const struct gpa_req reqs[] = {
    {"cuInit", 2000, 0, "cuInit"},
    {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
    {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
    {"cuGetExportTable", 3000, 0, "cuGetExportTable"},
    {"cuDriverGetVersion", 2020, 0, "cuDriverGetVersion"},
    {"cuDeviceGet", 2000, 0, "cuDeviceGet"},
    {"cuDeviceGetCount", 2000, 0, "cuDeviceGetCount"},
    {"cuDeviceTotalMem", 3020, 0, "cuDeviceTotalMem_v2"},
    {"cuDeviceGetUuid", 9020, 0, "cuDeviceGetUuid"},
    {"cuDevicePrimaryCtxRetain", 7000, 0, "cuDevicePrimaryCtxRetain"},
    {"cuDevicePrimaryCtxRelease", 7000, 0, "cuDevicePrimaryCtxRelease"},
    {"cuDevicePrimaryCtxSetFlags", 11000, 0, "cuDevicePrimaryCtxSetFlags_v2"},
    {"cuCtxCreate", 3020, 0, "cuCtxCreate_v2"},
    {"cuCtxGetDevice", 2000, 0, "cuCtxGetDevice"},
    {"cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"},
    {"cuCtxSynchronize", 2000, 0, "cuCtxSynchronize"},
    {"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"},
    {"cuCtxSetCurrent", 4000, 0, "cuCtxSetCurrent"},
    {"cuModuleLoad", 2000, 0, "cuModuleLoad"},
    {"cuModuleLoadData", 2000, 0, "cuModuleLoadData"},
    {"cuModuleLoadFatBinary", 2000, 0, "cuModuleLoadFatBinary"},
    {"cuModuleGetFunction", 2000, 0, "cuModuleGetFunction"},
    {"cuModuleGetGlobal", 3020, 0, "cuModuleGetGlobal_v2"},
    {"cuLibraryLoadData", 12000, 0, "cuLibraryLoadData"},
    {"cuLibraryLoadFromFile", 12000, 0, "cuLibraryLoadFromFile"},
    {"cuLibraryGetKernel", 12000, 0, "cuLibraryGetKernel"},
    {"cuLibraryGetModule", 12000, 0, "cuLibraryGetModule"},
    {"cuKernelGetFunction", 12000, 0, "cuKernelGetFunction"},
    {"cuFuncGetParamInfo", 12040, 0, "cuFuncGetParamInfo"},
    {"cuKernelGetParamInfo", 12040, 0, "cuKernelGetParamInfo"},
    {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2"},
    {"cuMemFree", 3020, 0, "cuMemFree_v2"},
    {"cuMemAllocAsync", 11020, 0, "cuMemAllocAsync"},
    {"cuMemAllocAsync", 11020, 2, "cuMemAllocAsync_ptsz"},
    {"cuMemFreeAsync", 11020, 0, "cuMemFreeAsync"},
    {"cuMemFreeAsync", 11020, 2, "cuMemFreeAsync_ptsz"},
    {"cuMemAllocFromPoolAsync", 11020, 2, "cuMemAllocFromPoolAsync_ptsz"},
    {"cuMemAdvise", 8000, 0, "cuMemAdvise"},
    {"cuMemAdvise", 12020, 0, "cuMemAdvise_v2"},
    {"cuMemPrefetchAsync", 8000, 2, "cuMemPrefetchAsync_ptsz"},
    {"cuMemPrefetchAsync", 12020, 2, "cuMemPrefetchAsync_v2_ptsz"},
    {"cuMemcpy", 4000, 0, "cuMemcpy"},
    {"cuMemcpy", 7000, 2, "cuMemcpy_ptds"},
    {"cuMemcpyAsync", 4000, 0, "cuMemcpyAsync"},
    {"cuMemcpyAsync", 7000, 2, "cuMemcpyAsync_ptsz"},
    {"cuMemcpyHtoD", 3020, 0, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 7000, 2, "cuMemcpyHtoD_v2_ptds"},
    {"cuMemcpyDtoH", 3020, 0, "cuMemcpyDtoH_v2"},
    {"cuMemcpyDtoH", 7000, 2, "cuMemcpyDtoH_v2_ptds"},
    {"cuMemcpyDtoD", 3020, 0, "cuMemcpyDtoD_v2"},
    {"cuMemcpyDtoD", 7000, 2, "cuMemcpyDtoD_v2_ptds"},
    {"cuMemcpyHtoDAsync", 3020, 0, "cuMemcpyHtoDAsync_v2"},
    {"cuMemcpyHtoDAsync", 7000, 2, "cuMemcpyHtoDAsync_v2_ptsz"},
    {"cuMemcpyDtoHAsync", 3020, 0, "cuMemcpyDtoHAsync_v2"},
    {"cuMemcpyDtoHAsync", 7000, 2, "cuMemcpyDtoHAsync_v2_ptsz"},
    {"cuMemcpyDtoDAsync", 3020, 0, "cuMemcpyDtoDAsync_v2"},
    {"cuMemcpyDtoDAsync", 7000, 2, "cuMemcpyDtoDAsync_v2_ptsz"},
    {"cuMemcpyBatchAsync", 12080, 0, "cuMemcpyBatchAsync"},
    {"cuMemcpyBatchAsync", 13000, 2, "cuMemcpyBatchAsync_v2_ptsz"},
    {"cuMemcpy3DBatchAsync", 13000, 0, "cuMemcpy3DBatchAsync_v2"},
    {"cuMemsetD8", 3020, 0, "cuMemsetD8_v2"},
    {"cuMemsetD8", 7000, 2, "cuMemsetD8_v2_ptds"},
    {"cuMemsetD8Async", 3020, 0, "cuMemsetD8Async"},
    {"cuMemsetD8Async", 7000, 2, "cuMemsetD8Async_ptsz"},
    {"cuStreamCreate", 2000, 0, "cuStreamCreate"},
    {"cuStreamCreateWithPriority", 5050, 0, "cuStreamCreateWithPriority"},
    {"cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2"},
    {"cuStreamSynchronize", 2000, 0, "cuStreamSynchronize"},
    {"cuStreamSynchronize", 7000, 2, "cuStreamSynchronize_ptsz"},
    {"cuStreamQuery", 2000, 0, "cuStreamQuery"},
    {"cuStreamQuery", 7000, 2, "cuStreamQuery_ptsz"},
    {"cuStreamWaitEvent", 3020, 0, "cuStreamWaitEvent"},
    {"cuStreamWaitEvent", 7000, 2, "cuStreamWaitEvent_ptsz"},
    {"cuStreamAddCallback", 7000, 2, "cuStreamAddCallback_ptsz"},
    {"cuLaunchHostFunc", 10000, 2, "cuLaunchHostFunc_ptsz"},
    {"cuStreamBeginCapture", 10010, 2, "cuStreamBeginCapture_v2_ptsz"},
    {"cuStreamEndCapture", 10000, 2, "cuStreamEndCapture_ptsz"},
    {"cuStreamIsCapturing", 10000, 0, "cuStreamIsCapturing"},
    {"cuStreamGetCaptureInfo", 12030, 2, "cuStreamGetCaptureInfo_v3_ptsz"},
    {"cuEventCreate", 2000, 0, "cuEventCreate"},
    {"cuEventDestroy", 4000, 0, "cuEventDestroy_v2"},
    {"cuEventRecord", 2000, 0, "cuEventRecord"},
    {"cuEventRecord", 7000, 2, "cuEventRecord_ptsz"},
    {"cuEventRecordWithFlags", 11010, 0, "cuEventRecordWithFlags"},
    {"cuEventRecordWithFlags", 11010, 2, "cuEventRecordWithFlags_ptsz"},
    {"cuEventQuery", 2000, 0, "cuEventQuery"},
    {"cuEventSynchronize", 2000, 0, "cuEventSynchronize"},
    {"cuEventElapsedTime", 2000, 0, "cuEventElapsedTime"},
    {"cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2"},
    {"cuLaunchKernel", 4000, 0, "cuLaunchKernel"},
    {"cuLaunchKernel", 7000, 2, "cuLaunchKernel_ptsz"},
    {"cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx"},
    {"cuLaunchKernelEx", 11060, 2, "cuLaunchKernelEx_ptsz"},
    {"cuLaunchCooperativeKernel", 9000, 0, "cuLaunchCooperativeKernel"},
    {"cuLaunchCooperativeKernel", 9000, 2, "cuLaunchCooperativeKernel_ptsz"},
    {"cuGraphLaunch", 10000, 2, "cuGraphLaunch_ptsz"},
    {"cuGraphUpload", 11010, 2, "cuGraphUpload_ptsz"},
    {"cuIpcOpenMemHandle", 11000, 0, "cuIpcOpenMemHandle_v2"},
    {"cuProfilerStart", 4000, 0, "cuProfilerStart"},
    {"cuPointerGetAttributes", 7000, 0, "cuPointerGetAttributes"},
    {"cuMemAlloc", 1000, 0, NULL},          /* older than any ABI: VERSION_NOT_SUFFICIENT */
    {"cuNoSuchEntryPoint", 12000, 0, NULL}, /* SYMBOL_NOT_FOUND */
    {"", 0, 0, NULL},                       /* cudart's first, empty probe */
};

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

Test(shim, get_proc_address_returns_the_wrapper_of_the_variant_the_driver_returned)
{
    paths();
    setenv("REPRISE_CUDA_DRIVER", fake, 1);
    void *s = dlopen(shim, RTLD_NOW | RTLD_LOCAL);
    cr_assert(s != NULL, "%s", dlerror());
    void *f = dlopen(fake, RTLD_NOW | RTLD_NOLOAD);
    cr_assert(f != NULL, "the shim did not load the fake driver");
    gpa_fn shim_gpa = (gpa_fn)dlsym(s, "cuGetProcAddress_v2");
    gpa_fn fake_gpa = (gpa_fn)dlsym(f, "cuGetProcAddress_v2");
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        const struct gpa_req *q = &reqs[i];
        void *got = NULL, *real = NULL;
        CUdriverProcAddressQueryResult sg = 99, sr = 98;
        CUresult rg = shim_gpa(q->name, &got, q->ver, q->flags, &sg);
        CUresult rr = fake_gpa(q->name, &real, q->ver, q->flags, &sr);
        cr_assert(eq(int, rg, rr), "%s@%d/%u: result", q->name, q->ver, q->flags);
        cr_assert(eq(int, sg, sr), "%s@%d/%u: status", q->name, q->ver, q->flags);
        if (!q->variant) {
            cr_assert(got == NULL && real == NULL, "%s@%d/%u", q->name, q->ver, q->flags);
            continue;
        }
        cr_assert(real == dlsym(f, q->variant), "%s@%d/%u: the fake returned another variant",
                  q->name, q->ver, q->flags);
        cr_assert(got == dlsym(s, q->variant) && got != NULL,
                  "%s@%d/%u: the shim did not return its own %s", q->name, q->ver, q->flags,
                  q->variant);
    }
    /* cuGetExportTable passes the driver's table through untouched */
    CUresult (*get_table)(const void **, const CUuuid *) =
        (CUresult(*)(const void **, const CUuuid *))dlsym(s, "cuGetExportTable");
    CUresult (*fake_table)(const void **, const CUuuid *) =
        (CUresult(*)(const void **, const CUuuid *))dlsym(f, "cuGetExportTable");
    CUuuid id;
    memset(&id, 0x42, sizeof id);
    const void *t1 = NULL, *t2 = NULL;
    cr_assert(eq(int, get_table(&t1, &id), CUDA_SUCCESS));
    cr_assert(eq(int, fake_table(&t2, &id), CUDA_SUCCESS));
    cr_assert(t1 == t2 && t1 != NULL, "cuGetExportTable did not pass the table through");
}

/* ========================================================================================== */
/* Capture under the fake driver                                                              */
/* ========================================================================================== */

/* Runs prog (in build/tests/cuda) with args; capture != NULL puts the shim in front and writes
 * that trace. Returns the exit status; *out: stdout (malloc'd). */
static int run_prog(const char *prog, const char *args, const char *capture, const char *extra_env,
                    char **out)
{
    char cmd[4096];
    if (capture)
        snprintf(cmd, sizeof cmd,
                 "%s REPRISE_TRACE='%s' REPRISE_CUDA_DRIVER='%s' LD_LIBRARY_PATH='%s' "
                 "'%s/tests/cuda/%s' %s",
                 extra_env ? extra_env : "", capture, fake, shim_dir, build, prog, args);
    else
        snprintf(cmd, sizeof cmd, "%s LD_LIBRARY_PATH='%s/tests/cuda/fake' '%s/tests/cuda/%s' %s",
                 extra_env ? extra_env : "", build, build, prog, args);
    FILE *f = popen(cmd, "r");
    cr_assert(f != NULL);
    size_t cap = 1 << 16, n = 0, k;
    char *s = malloc(cap);
    while ((k = fread(s + n, 1, cap - n - 1, f)) > 0)
        n += k;
    s[n] = 0;
    *out = s;
    return pclose(f);
}

static void count_ops(sbt_reader *r, uint64_t *by_kind, uint64_t *n_ptr, uint64_t *n_pt_launch)
{
    sbt_cursor *c;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &c), 0));
    const struct sbt_op *op;
    *n_ptr = *n_pt_launch = 0;
    while (sbt_cursor_next(c, &op) == 1) {
        by_kind[op->kind]++;
        if (op->kind != SBT_OP_KERNEL || op->payload.kind != SBT_CUDA_PAYLOAD)
            continue;
        struct sbt_vk_dec d;
        struct sbt_vk_rec rec;
        sbt_vk_dec_init(&d, op->payload.data, op->payload.len);
        while (sbt_vk_dec_next(&d, &rec) == 1) {
            *n_ptr += rec.call == SBT_CUDA_PTR;
            *n_pt_launch += rec.call == SBT_CUDA_CALL && sbt_vk_arg(&rec, 1) == 1;
        }
        sbt_vk_dec_free(&d);
    }
    sbt_cursor_close(c);
}

static void capture_and_check(const char *prog, const char *trace, int per_thread)
{
    char *plain, *cap;
    cr_assert(eq(int, run_prog(prog, "", NULL, NULL, &plain), 0), "%s failed on the fake", prog);
    cr_assert(eq(int, run_prog(prog, "", trace, NULL, &cap), 0), "%s failed under capture", prog);
    cr_assert(eq(str, plain, cap), "capture changed the program's output");
    cr_assert(strstr(plain, "y: ") != NULL);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace, NULL, &r), 0), "%s", sbt_errmsg());
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(in->complete, "trace incomplete");
    uint64_t k[SBT_OP__COUNT] = {0}, n_ptr, n_pt;
    count_ops(r, k, &n_ptr, &n_pt);
    cr_assert(eq(u64, k[SBT_OP_KERNEL], 6));    /* 3 + Ex + one per worker thread */
    cr_assert(eq(u64, k[SBT_OP_HOST_READ], 5)); /* 3 sync + 2 async resolved at syncs */
    cr_assert(eq(u64, k[SBT_OP_ALLOC], 5));
    cr_assert(eq(u64, k[SBT_OP_FREE], 5));
    cr_assert(eq(u64, k[SBT_OP_FILL], 1));
    cr_assert(eq(u64, k[SBT_OP_EVENT_RECORD], 2));
    cr_assert(ge(u64, k[SBT_OP_COPY], 8));
    cr_assert(ge(u64, n_ptr, 7), "device pointers found in parameters: %llu",
              (unsigned long long)n_ptr);
    if (per_thread)
        cr_assert(eq(u64, n_pt, 6), "launches through _ptsz: %llu", (unsigned long long)n_pt);
    else
        cr_assert(eq(u64, n_pt, 0));
    uint32_t np, nk;
    const struct sbt_program *p = sbt_reader_programs(r, &np);
    sbt_reader_kernels(r, &nk);
    cr_assert(eq(u32, np, 1));
    cr_assert(eq(u32, nk, 3));
    void *img;
    size_t len;
    cr_assert(eq(int, sbt_reader_blob(r, &p[0].blob, &img, &len), 0));
    cr_assert(eq(str, (char *)img, FAKE_IMAGE));
    free(img);
    sbt_reader_close(r);
    free(plain);
    free(cap);
}

Test(capture, driver_api_program)
{
    paths();
    capture_and_check("prog_saxpy", tpath("cuda_saxpy.sbt"), 0);
}

Test(capture, per_thread_default_stream_program)
{
    paths();
    capture_and_check("prog_ptds", tpath("cuda_ptds.sbt"), 1);
}

/* ========================================================================================== */
/* Replay against the fake driver at another base address                                    */
/* ========================================================================================== */

static int replay_trace(const char *trace, uint32_t runs, struct replay_result *res)
{
    need_replay();
    setenv("REPRISE_CUDA_DRIVER", fake, 1);
    setenv("FAKE_CUDA_BASE", "7d0000000000", 1); /* the capture used 7e0000000000 */
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace, NULL, &r), 0), "%s", sbt_errmsg());
    int st = replay_run(r,
                        &REPLAY_OPTS(.verify = REPLAY_VERIFY_END, .runs = runs,
                                     .backend_impl = &replay__cuda_backend),
                        res);
    sbt_reader_close(r);
    return st;
}

static void replay_matches(const char *prog, const char *trace)
{
    char *out;
    cr_assert(eq(int, run_prog(prog, "", trace, NULL, &out), 0));
    free(out);
    struct replay_result res;
    int st = replay_trace(trace, 2, &res);
    cr_assert(eq(int, st, 0), "%s", replay_errmsg());
    cr_assert(eq(u64, res.n_errors, 0), "first error at op %llu: %s",
              (unsigned long long)res.first_error, res.first_error_msg);
    cr_assert(eq(u64, res.n_compared, 10), "HOST_READ digests compared over 2 runs");
    cr_assert(eq(u64, res.n_mismatch, 0), "first mismatch at op %llu",
              (unsigned long long)res.first_mismatch);
    cr_assert(eq(u64, res.n_run_mismatch, 0));
    replay_result_free(&res);
}

Test(replay, relocated_bit_for_bit)
{
    paths();
    replay_matches("prog_saxpy", tpath("cuda_replay.sbt"));
}

Test(replay, per_thread_variants_relocated_bit_for_bit)
{
    paths();
    replay_matches("prog_ptds", tpath("cuda_replay_ptds.sbt"));
}

Test(replay, racy_kernel_is_caught)
{
    paths();
    char *out;
    const char *racy = tpath("cuda_racy.sbt");
    cr_assert(eq(int, run_prog("prog_saxpy", "racy", racy, NULL, &out), 0));
    free(out);
    struct replay_result res;
    cr_assert(eq(int, replay_trace(racy, 4, &res), 0), "%s", replay_errmsg());
    cr_assert(eq(u64, res.n_errors, 0), "%s", res.first_error_msg);
    cr_assert(gt(u64, res.n_mismatch + res.n_run_mismatch, 0),
              "four replays of a racy kernel all matched the capture and each other");
    replay_result_free(&res);
}

Test(replay, missing_driver_is_an_environment_error)
{
    need_replay();
    setenv("REPRISE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    struct replay_device_info d[4];
    int st = replay__cuda_backend.devices(d, 4);
    cr_assert(eq(int, st, REPLAY_ENODEV));
    cr_assert(strstr(replay_errmsg(), "CUDA driver not available") != NULL, "%s", replay_errmsg());
}

Test(replay, devices_lists_the_fake)
{
    paths();
    need_replay();
    setenv("REPRISE_CUDA_DRIVER", fake, 1);
    struct replay_device_info d[4];
    int n = replay__cuda_backend.devices(d, 4);
    cr_assert(eq(int, n, 1), "%s", replay_errmsg());
    cr_assert(eq(str, d[0].name, "reprise fake CUDA device"));
    cr_assert(eq(u32, d[0].api, SBT_API_CUDA));
}
