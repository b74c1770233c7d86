/*
 * tests/test_cuda.c — the CUDA path without a GPU: the shim's exported symbols, its
 * cuGetProcAddress dispatch, capture of Driver-API programs against the test-only fake driver
 * (tests/cuda/fake_cuda.c), and replay of those traces against the fake at another device base
 * address (every pointer relocated) with outputs compared bit for bit; a racy fake kernel must
 * make the comparison fail; programs that are killed or crash keep what they did. Nothing here
 * proves anything about a real GPU (README "CUDA").
 *
 * Needs REPRISE_BUILD (make check sets it). The comparison with NVIDIA's stub library runs when
 * REPRISE_CUDA_STUB names one, and is skipped with a message otherwise.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "format/sbt.h"
#include "format/sbt_align.h"
#include "format/sbt_cuda.h"
#include "replay/replay.h"
#include "replay/replay_int.h"
#include "scheduler/sched.h"
#include "tests/cuda/fake_cuda.h"
#include "tests/tproc.h"

/* The replay engine is linked only when the Makefile asks for the CUDA backend (once
 * replay/replay_engine.c and replay/vk/replay_vk.c exist); without it the replay tests skip. */
#pragma weak replay_run
#pragma weak replay_result_free
#pragma weak replay_errmsg

static void need_replay(void)
{
    if (!replay_run || !&replay__cuda_backend)
        cr_skip_test("the replay engine is not linked into this test (replay/replay_engine.c "
                     "or replay/vk/replay_vk.c missing): CUDA replay not tested");
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
#include "capture/cuda/cap_cuda_exports.h"
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
    cr_assert(eq(str, got, want),
              "the shim's cu* exports differ from capture/cuda/cap_cuda_exports.h");
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

/* Runs a shell command. Returns its wait status; *out: its stdout (malloc'd). */
static int shell_out(const char *cmd, char **out)
{
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
    return shell_out(cmd, out);
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
        struct sbt_payload_dec d;
        struct sbt_payload_rec rec;
        sbt_payload_dec_init(&d, op->payload.data, op->payload.len);
        while (sbt_payload_dec_next(&d, &rec) == 1) {
            *n_ptr += rec.call == SBT_CUDA_PTR;
            *n_pt_launch += rec.call == SBT_CUDA_CALL && sbt_payload_arg(&rec, 1) == 1;
        }
        sbt_payload_dec_free(&d);
    }
    sbt_cursor_close(c);
}

static void race_print(void *ctx, const struct sched_race *f)
{
    (void)ctx;
    fprintf(stderr, "  race: %s\n", f->msg);
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
    /* the program synchronises what it shares between its streams (events, stream and
     * context syncs, synchronous copies, the legacy stream): no possible race (issue 22) */
    struct sched_race_stats rs;
    cr_assert(eq(int, sched_races_run(r, NULL, race_print, NULL, &rs), 0), "%s", sched_errmsg());
    cr_expect(rs.declared);
    cr_expect(eq(u64, rs.n_findings, 0), "%s: possible races", prog);
    sbt_reader_close(r);
    free(plain);
    free(cap);
}

Test(capture, driver_api_program)
{
    paths();
    capture_and_check("prog_saxpy", tpath("cuda_saxpy.sbt"), 0);
}

/* The CUDA shim records the process's identity in its job and its clock pairs as the Vulkan
 * layer does (capture/common/cap_env.c): torchrun's variables here, the job id given. Before:
 * no job.* and no clock.sync.* keys. */
Test(capture, rank_job_and_clock_pairs)
{
    paths();
    const char *trace = tpath("cuda_rank.sbt");
    char *out;
    cr_assert(eq(int,
                 run_prog("prog_saxpy", "", trace,
                          "env -u REPRISE_RANK -u OMPI_COMM_WORLD_RANK RANK=3 WORLD_SIZE=4 "
                          "LOCAL_RANK=1 REPRISE_JOB=train-42",
                          &out),
                 0));
    free(out);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace, NULL, &r), 0), "%s", sbt_errmsg());
    cr_expect(eq(str, (char *)sbt_reader_meta_get(r, "job.rank"), "3"));
    cr_expect(eq(str, (char *)sbt_reader_meta_get(r, "job.world_size"), "4"));
    cr_expect(eq(str, (char *)sbt_reader_meta_get(r, "job.local_rank"), "1"));
    cr_expect(eq(str, (char *)sbt_reader_meta_get(r, "job.rank_from"), "torchrun"));
    cr_expect(eq(str, (char *)sbt_reader_meta_get(r, "job.id"), "train-42"));
    const char *first = sbt_reader_meta_get(r, "clock.sync.0");
    cr_assert(first != NULL);
    cr_expect(strstr(first, " start") != NULL, "%s", first);
    struct sbt_clock_fit f;
    cr_assert(eq(int, sbt_clock_fit_trace(r, &f), 0), "%s", sbt_errmsg());
    cr_expect(eq(u32, f.source, SBT_CLOCK_PAIRS));
    cr_expect(f.n_pairs >= 2, "start and end: %u pairs", f.n_pairs);
    sbt_reader_close(r);
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
    /* the legacy stream's fills and device copies complete late, as CUDA allows: a replay
     * that moves work off the stream it was captured on reads stale bytes */
    setenv("FAKE_CUDA_LATE", "1", 1);
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

/* A replay of trace with perturbation p (fake driver, as replay_trace), per-op verification;
 * the digests of its HOST_READ ops into dig[n] (in seq order). */
static int perturbed_reads(const char *trace, struct replay_perturb p, struct replay_result *res,
                           sbt_hash *dig, uint32_t *n, uint32_t max)
{
    need_replay();
    setenv("REPRISE_CUDA_DRIVER", fake, 1);
    setenv("FAKE_CUDA_BASE", "7d0000000000", 1);
    setenv("FAKE_CUDA_LATE", "1", 1);
    char out[4200];
    snprintf(out, sizeof out, "%s.perturbed.sbt", trace);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace, NULL, &r), 0), "%s", sbt_errmsg());
    int st = replay_run(r,
                        &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP, .out_path = out, .perturb = p,
                                     .backend_impl = &replay__cuda_backend),
                        res);
    sbt_reader_close(r);
    *n = 0;
    if (st < 0)
        return st;
    cr_assert(eq(int, sbt_reader_open(out, NULL, &r), 0), "%s", sbt_errmsg());
    sbt_cursor *cu;
    const struct sbt_op *op;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &cu), 0));
    while (sbt_cursor_next(cu, &op) == 1)
        if (op->kind == SBT_OP_HOST_READ && (op->flags & SBT_OPF_DIGEST) && *n < max)
            dig[(*n)++] = op->digest;
    sbt_cursor_close(cu);
    sbt_reader_close(r);
    return st;
}

/* poison on the fake driver: prog_saxpy uninit (saxpy into a y it never wrote) reads back
 * other bytes than the capture under poison:S, the same ones for the same seed; init (y
 * uploaded first) reads back the capture's under poison, and so does the default run under
 * order:S, which moves ops across its two streams and host threads within stream and event
 * order. The default run itself reads 64 bytes nothing wrote (its second saxpy reads z[0..16),
 * which iota left alone): poison names that kernel. */
Test(replay, poison_and_order_on_the_fake_driver)
{
    paths();
    char *out;
    const char *un = tpath("cuda_uninit.sbt"), *in = tpath("cuda_init.sbt");
    const char *sx = tpath("cuda_saxpy.sbt");
    cr_assert(eq(int, run_prog("prog_saxpy", "uninit", un, NULL, &out), 0));
    free(out);
    cr_assert(eq(int, run_prog("prog_saxpy", "init", in, NULL, &out), 0));
    free(out);
    cr_assert(eq(int, run_prog("prog_saxpy", "", sx, NULL, &out), 0));
    free(out);
    struct replay_result res;
    sbt_hash a[64], b[64];
    uint32_t na, nb;
    /* plain: the fake driver's fresh memory is zeros, as at capture */
    cr_assert(eq(int, perturbed_reads(un, (struct replay_perturb){0}, &res, a, &na, 64), 0), "%s",
              replay_errmsg());
    cr_expect(eq(u64, res.n_mismatch, 0), "the plain replay of uninit matches the capture");
    replay_result_free(&res);
    struct replay_perturb pz = {REPLAY_PERTURB_POISON, 9};
    cr_assert(eq(int, perturbed_reads(un, pz, &res, a, &na, 64), 0), "%s", replay_errmsg());
    cr_expect(gt(u64, res.n_mismatch, 0), "poison:9 changes what uninit reads back");
    cr_expect(strstr(res.perturb_what, "poisoned 2 allocations") != NULL, "%s", res.perturb_what);
    replay_result_free(&res);
    cr_assert(eq(int, perturbed_reads(un, pz, &res, b, &nb, 64), 0), "%s", replay_errmsg());
    replay_result_free(&res);
    cr_expect(eq(u32, na, nb));
    cr_expect(na > 0);
    for (uint32_t i = 0; i < na && i < nb; i++)
        cr_expect(sbt_hash_eq(a[i], b[i]), "read %u: poison:9 reproduces", i);
    struct {
        const char *trace;
        struct replay_perturb p;
        int differs;
    } c[] = {{in, {REPLAY_PERTURB_POISON, 9}, 0},
             {sx, {REPLAY_PERTURB_ORDER, 2}, 0},
             {sx, {REPLAY_PERTURB_POISON, 9}, 1}};
    for (int k = 0; k < 3; k++) {
        cr_assert(eq(int, perturbed_reads(c[k].trace, c[k].p, &res, a, &na, 64), 0), "%s",
                  replay_errmsg());
        cr_expect(eq(u64, res.n_errors, 0), "%s", res.first_error_msg);
        cr_expect(gt(u64, res.n_compared, 0));
        if (c[k].differs)
            cr_expect(gt(u64, res.n_mismatch, 0), "case %d: %s exposes the read", k, res.perturb);
        else
            cr_expect(eq(u64, res.n_mismatch, 0), "case %d: %s: the capture's bytes", k,
                      res.perturb);
        if (c[k].p.kind == REPLAY_PERTURB_ORDER)
            cr_expect(strtoull(res.perturb_what, NULL, 10) > 0, "order moved ops: %s",
                      res.perturb_what);
        replay_result_free(&res);
    }
    /* split and threads are Vulkan's: refused by name */
    cr_expect(
        eq(int,
           perturbed_reads(in, (struct replay_perturb){REPLAY_PERTURB_SPLIT, 1}, &res, a, &na, 64),
           REPLAY_EUNSUPPORTED));
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

/* ========================================================================================== */
/* On a real GPU                                                                              */
/* ========================================================================================== */

/* 1 when this machine has a CUDA driver of its own (not our fake or shim) with a device; else 0
 * and why. */
static int real_cuda(char *why, size_t n)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, n,
                 "no CUDA driver here (%s): the CUDA path is tested on the fake driver only",
                 dlerror());
        return 0;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(h, "cuDeviceGetCount");
    Dl_info info;
    if (!init || !count || !dladdr((void *)init, &info) || !info.dli_fname ||
        strstr(info.dli_fname, build)) {
        snprintf(why, n, "the libcuda.so.1 found here is not a CUDA driver of this machine");
        return 0;
    }
    int devices = 0;
    CUresult r = init(0);
    if (r == CUDA_SUCCESS)
        r = count(&devices);
    if (r != CUDA_SUCCESS || devices == 0) {
        snprintf(why, n, "the CUDA driver %s has no device (error %d, %d devices)", info.dli_fname,
                 (int)r, devices);
        return 0;
    }
    return 1;
}

/* The CUDA path end to end on the machine's own GPU: tests/cuda/prog_ptx (a PTX saxpy the
 * driver compiles, two streams and an event) runs alone and under `reprise capture --api cuda`
 * with the same output and a complete trace; a full replay at --verify op reproduces its
 * read-back, and `check --runs 2` passes. Skipped where there is no GPU (CI, the build VM). */
Test(gpu, ptx_program_captures_replays_and_checks, .timeout = 600)
{
    paths();
    char why[1400];
    if (!real_cuda(why, sizeof why))
        cr_skip_test("%s", why);
    const char *bin = getenv("REPRISE_BIN");
    cr_assert(bin != NULL, "REPRISE_BIN is not set (run through make check)");
    const char *trace = tpath("gpu_ptx.sbt");
    char cmd[4096], *plain, *cap, *out;
    snprintf(cmd, sizeof cmd, "'%s/tests/cuda/prog_ptx'", build);
    cr_assert(eq(int, shell_out(cmd, &plain), 0), "prog_ptx failed on this GPU");
    snprintf(cmd, sizeof cmd, "'%s' capture --api cuda -o '%s' -- '%s/tests/cuda/prog_ptx'", bin,
             trace, build);
    cr_assert(eq(int, shell_out(cmd, &cap), 0), "prog_ptx failed under capture");
    cr_assert(eq(str, plain, cap), "capture changed the program's output");
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace, NULL, &r), 0), "%s", sbt_errmsg());
    cr_assert(sbt_reader_info(r)->complete, "trace incomplete");
    sbt_reader_close(r);
    snprintf(cmd, sizeof cmd, "'%s' replay '%s' --mode full --verify op 2>&1", bin, trace);
    int rc = shell_out(cmd, &out);
    cr_assert(eq(int, rc, 0), "replay: %s", out);
    const char *v = strstr(out, "digests, ");
    cr_assert(v && strtol(v + 9, NULL, 10) >= 1, "no read-back compared with the capture: %s", out);
    cr_assert(strstr(out, ", 0 differ") != NULL, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' check '%s' --runs 2 2>&1", bin, trace);
    rc = shell_out(cmd, &out);
    cr_assert(eq(int, rc, 0), "check: %s", out);
    free(out);
    free(plain);
    free(cap);
}

/* ========================================================================================== */
/* Every export classified                                                                    */
/* ========================================================================================== */

struct class_row {
    const char *name, *cls, *why;
};

static const struct class_row class_rows[] = {
#define C(n, c, w) {#n, #c, w},
#include "capture/cuda/cap_cuda_class.h"
#undef C
};

static const char *const export_names[] = {
#define X(n) #n,
#include "capture/cuda/cap_cuda_exports.h"
#undef X
};

Test(shim, every_export_has_exactly_one_class_with_a_reason)
{
    size_t n = sizeof export_names / sizeof export_names[0];
    cr_assert(eq(sz, sizeof class_rows / sizeof class_rows[0], n));
    for (size_t i = 0; i < n; i++) {
        const struct class_row *c = &class_rows[i];
        cr_assert(eq(str, (char *)c->name, (char *)export_names[i]),
                  "capture/cuda/cap_cuda_class.h row %zu: %s, export %s (same order)", i, c->name,
                  export_names[i]);
        int known = !strcmp(c->cls, "RECORDED") || !strcmp(c->cls, "QUERY") ||
                    !strcmp(c->cls, "HARMLESS") || !strcmp(c->cls, "AFFECTS");
        cr_assert(known, "%s: class %s", c->name, c->cls);
        if (!strcmp(c->cls, "HARMLESS") || !strcmp(c->cls, "AFFECTS"))
            cr_assert(strlen(c->why) > 10, "%s is %s without a reason", c->name, c->cls);
    }
}

/* RECORDED is exactly what cap_cuda_shim.c wraps: a strong definition in the shim (the
 * trampolines are weak). */
Test(shim, recorded_exports_are_the_wrapped_ones)
{
    paths();
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' | awk '$3 ~ /^cu/ {print $3, $2}'", shim);
    FILE *f = popen(cmd, "r");
    cr_assert(f != NULL);
    char name[128], type[8];
    size_t seen = 0, n = sizeof class_rows / sizeof class_rows[0];
    while (fscanf(f, "%127s %7s", name, type) == 2) {
        size_t i = 0;
        while (i < n && strcmp(class_rows[i].name, name))
            i++;
        cr_assert(lt(sz, i, n), "%s is exported but not classified", name);
        int wrapped = !strcmp(type, "T");
        cr_assert(eq(int, wrapped, !strcmp(class_rows[i].cls, "RECORDED")),
                  "%s is %s but the shim %s it", name, class_rows[i].cls,
                  wrapped ? "wraps" : "does not wrap");
        seen++;
    }
    pclose(f);
    cr_assert(eq(sz, seen, n));
}

/* ========================================================================================== */
/* Memory of every kind: classified before it is touched                                      */
/* ========================================================================================== */

/* Criterion copies parameters into the test process by value: strings are arrays, not
 * pointers. */
struct memkind_case {
    char mode[16];
    int complete;  /* the trace must be complete, and replay must match it bit for bit */
    char what[96]; /* incomplete: an affecting entry whose name contains this */
};

ParameterizedTestParameters(capture, memory_kinds)
{
    static struct memkind_case cases[] = {
        {"pool", 1, ""},
        {"pitch", 1, ""},
        {"vmm", 1, ""},
        {"pinned", 1, ""},
        {"devhost", 1, ""},
        {"libglobal", 1, ""},
        {"enumerate", 1, ""},
        {"vmm_alias", 0, "mapped elsewhere too"},
        {"vmm_adjacent", 0, "next to another mapping"},
        {"ipc", 0, "copy from device memory the capture did not see allocated"},
        {"ipc", 0, "cuIpcOpenMemHandle_v2"},
        {"managed", 0, "copy from managed memory"},
        {"managed", 0, "launch with a parameter pointing into managed memory"},
        {"managed", 0, "cuMemAllocManaged"},
        {"zerocopy", 0, "launch with a parameter pointing into pinned host memory"},
        {"unmodelled", 0, "cuCtxSetLimit"},
        {"gpa", 0, "cuGetProcAddress(cuMemsetD32): unidentified entry point"},
        {"gpa_unused", 1, ""},
        {"funcattr", 1, ""},
        {"graph", 1, ""},
        {"stream_fill", 1, ""},
        {"reload", 1, ""}, // a function handle reused after its module was unloaded
        {"xsync", 1, ""},  // copies known finished through another stream, the legacy one
        {"graph_node", 0, "cuGraphAddEmptyNode"},
        {"graph_node", 0, "cuGraphLaunch of a graph not made by stream capture"},
    };
    return cr_make_param_array(struct memkind_case, cases, sizeof cases / sizeof cases[0]);
}

/* The op at seq, copied (NULL if the trace has none). */
static int op_at(sbt_reader *r, uint64_t seq, struct sbt_op *out, char *name, size_t cap)
{
    struct sbt_range rg = {.has_seq = 1, .seq_begin = seq, .seq_end = seq + 1};
    sbt_cursor *c;
    const struct sbt_op *op;
    int found = 0;
    cr_assert(eq(int, sbt_cursor_open(r, &rg, &c), 0));
    if (sbt_cursor_next(c, &op) == 1) {
        *out = *op;
        snprintf(name, cap, "%s", sbt_reader_string(r, op->name));
        found = 1;
    }
    sbt_cursor_close(c);
    return found;
}

ParameterizedTest(struct memkind_case *c, capture, memory_kinds)
{
    paths();
    char trace[64], *plain, *cap;
    snprintf(trace, sizeof trace, "memkinds_%s.sbt", c->mode);
    const char *path = tpath(trace);
    const char *env = "FAKE_CUDA_GPA_INTERNAL=cuMemsetD32";
    cr_assert(eq(int, run_prog("prog_memkinds", c->mode, NULL, env, &plain), 0),
              "prog_memkinds %s failed on the fake", c->mode);
    cr_assert(eq(int, run_prog("prog_memkinds", c->mode, path, env, &cap), 0),
              "prog_memkinds %s failed (or crashed) under capture", c->mode);
    cr_assert(eq(str, plain, cap), "capture changed what %s printed", c->mode);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), 0), "%s", sbt_errmsg());
    char why[1024];
    sbt_reader_incomplete_why(r, why, sizeof why);
    cr_assert(eq(int, sbt_reader_info(r)->complete, c->complete), "%s: %s", c->mode, why);
    if (c->complete) {
        sbt_reader_close(r);
        struct replay_result res;
        cr_assert(eq(int, replay_trace(path, 2, &res), 0), "%s", replay_errmsg());
        cr_assert(eq(u64, res.n_errors, 0), "op %llu: %s", (unsigned long long)res.first_error,
                  res.first_error_msg);
        cr_assert(gt(u64, res.n_compared, 0));
        cr_assert(eq(u64, res.n_mismatch + res.n_run_mismatch, 0), "first mismatch at op %llu",
                  (unsigned long long)res.first_mismatch);
        replay_result_free(&res);
    } else {
        uint32_t n;
        const struct sbt_unsupported *u = sbt_reader_unsupported(r, &n);
        uint32_t i = 0;
        while (i < n && !strstr(sbt_reader_string(r, u[i].what), c->what))
            i++;
        cr_assert(lt(u32, i, n), "%s: no unmodelled entry naming \"%s\" (%s)", c->mode, c->what,
                  why);
        cr_assert(u[i].flags & SBT_UNMODELLED_AFFECTS);
        cr_assert(ne(u64, u[i].first_seq, SBT_SEQ_NONE), "%s: where did it happen?", c->what);
        /* the first op there is marked: the unsupported op itself or a MARKER named after the
         * call (an unsupported mapping names the ALLOC it made) */
        struct sbt_op op;
        char name[256];
        cr_assert(op_at(r, u[i].first_seq, &op, name, sizeof name), "%s: op %llu", c->what,
                  (unsigned long long)u[i].first_seq);
        if (op.kind == SBT_OP_MARKER)
            cr_assert(eq(str, name, (char *)sbt_reader_string(r, u[i].what)));
        int marked = (op.flags & SBT_OPF_UNSUPPORTED) || op.kind == SBT_OP_ALLOC;
        cr_assert(marked, "%s: op %llu (%s) is not marked", c->what,
                  (unsigned long long)u[i].first_seq, name);
        sbt_reader_close(r);
    }
    free(plain);
    free(cap);
}

/* The marker sits where the call happened: between the launch before and the one after. */
Test(capture, unmodelled_call_is_marked_where_it_happened)
{
    paths();
    const char *path = tpath("unmodelled_where.sbt");
    char *out;
    cr_assert(eq(int, run_prog("prog_memkinds", "unmodelled", path, NULL, &out), 0));
    free(out);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), 0), "%s", sbt_errmsg());
    sbt_cursor *cu;
    const struct sbt_op *op;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &cu), 0));
    char kinds[64] = "";
    while (sbt_cursor_next(cu, &op) == 1 && strlen(kinds) < sizeof kinds - 2)
        if (op->kind == SBT_OP_KERNEL || op->kind == SBT_OP_MARKER)
            strcat(kinds, op->kind == SBT_OP_KERNEL ? "K" : "M");
    sbt_cursor_close(cu);
    cr_assert(eq(str, kinds, "KMK"));
    sbt_reader_close(r);
}

/* A synchronous copy that waits for a stream blocked on a memory value, which another thread
 * releases through the driver (issue 21): the shim must not hold its lock across the copy, or
 * the releasing thread's call waits for the lock and the program never ends; nor may it wait
 * where the program does not (a synchronous memset and device copy behind the wait, released
 * by the same thread after them). The program runs under a timeout (killed: status 137); the
 * trace is incomplete, naming the wait. */
static void waitvalue_run(const char *prog, int legacy, int timing)
{
    paths();
    char trace[64];
    snprintf(trace, sizeof trace, "%s_waitvalue%d.sbt", prog, timing);
    const char *path = tpath(trace);
    const char *kill20 = "timeout -s KILL 20 env";
    /* with device timing, the first launch also makes the capture wait for a reference event */
    const char *cap_env = timing ? "timeout -s KILL 20 env REPRISE_TIMING=1" : kill20;
    char *plain, *cap;
    cr_assert(eq(int, run_prog(prog, "waitvalue", NULL, kill20, &plain), 0),
              "%s waitvalue failed (or hung) on the fake", prog);
    /* the copies saw the kernels behind the waits (prog_memkinds_ptds runs the last round) */
    cr_assert(strstr(plain, "released on the default stream: 00000fa0") != NULL, "%s", plain);
    if (legacy)
        cr_assert(strstr(plain, "released by cuStreamWriteValue32: 000003e8") &&
                      strstr(plain, "released by a memset: 000007d0") &&
                      strstr(plain, "released after a memset and a device copy: 00000bb8"),
                  "%s", plain);
    int st = run_prog(prog, "waitvalue", path, cap_env, &cap);
    int killed = (WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGKILL) ||
                 (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    cr_assert(eq(int, st, 0), "%s waitvalue under capture: %s (wait status %d)", prog,
              killed ? "killed after 20 s: deadlocked" : "failed", st);
    cr_assert(eq(str, plain, cap), "capture changed what %s waitvalue printed", prog);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_reader_info(r)->complete, 0), "the trace says complete");
    uint32_t n;
    const struct sbt_unsupported *u = sbt_reader_unsupported(r, &n);
    uint32_t i = 0;
    while (i < n && !strstr(sbt_reader_string(r, u[i].what), "cuStreamWaitValue32"))
        i++;
    cr_assert(lt(u32, i, n), "no unmodelled entry naming cuStreamWaitValue32");
    cr_assert(u[i].flags & SBT_UNMODELLED_AFFECTS);
    uint64_t k[SBT_OP__COUNT] = {0}, n_ptr, n_pt;
    count_ops(r, k, &n_ptr, &n_pt);
    cr_assert(eq(u64, k[SBT_OP_KERNEL], legacy ? 4 : 1));
    cr_assert(eq(u64, k[SBT_OP_HOST_READ], legacy ? 4 : 1)); /* each copy's, read after it */
    cr_assert(eq(u64, n_pt, legacy ? 0 : 1));                /* launches through _ptsz */
    sbt_reader_close(r);
    free(plain);
    free(cap);
}

Test(capture, copy_waiting_for_a_value_another_thread_writes_does_not_deadlock, .timeout = 120)
{
    waitvalue_run("prog_memkinds", 1, 0);
}

Test(capture, copy_waiting_for_a_value_does_not_deadlock_with_device_timing, .timeout = 120)
{
    waitvalue_run("prog_memkinds", 1, 1);
}

Test(capture, per_thread_copy_waiting_for_a_value_does_not_deadlock, .timeout = 120)
{
    waitvalue_run("prog_memkinds_ptds", 0, 0);
}

/* A host sync covers the work issued before it, not what another thread issues while it
 * waits: an async device-to-host copy queued (behind a second wait) during a
 * cuStreamSynchronize is read when the host learns it finished, at the next sync, so the
 * HOST_READ holds the copied bytes (an iota from 700), not the buffer's earlier 0x11 bytes. */
Test(capture, sync_covers_only_what_was_issued_before_it, .timeout = 120)
{
    paths();
    const char *path = tpath("syncwindow.sbt");
    const char *kill20 = "timeout -s KILL 20 env";
    char *plain, *cap;
    cr_assert(eq(int, run_prog("prog_memkinds", "syncwindow", NULL, kill20, &plain), 0));
    cr_assert(strstr(plain, "read after the second sync: 000002bc") != NULL, "%s", plain);
    cr_assert(eq(int, run_prog("prog_memkinds", "syncwindow", path, kill20, &cap), 0));
    cr_assert(eq(str, plain, cap));
    static unsigned want[1024];
    for (unsigned i = 0; i < 1024; i++)
        want[i] = 700 + i;
    sbt_hash digest = sbt_hash_bytes(want, sizeof want);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(path, NULL, &r), 0), "%s", sbt_errmsg());
    sbt_cursor *cu;
    const struct sbt_op *op;
    cr_assert(eq(int, sbt_cursor_open(r, NULL, &cu), 0));
    int reads = 0, right = 0;
    while (sbt_cursor_next(cu, &op) == 1)
        if (op->kind == SBT_OP_HOST_READ) {
            reads++;
            right += sbt_hash_eq(op->digest, digest);
        }
    sbt_cursor_close(cu);
    sbt_reader_close(r);
    cr_assert(eq(int, reads, 1));
    cr_assert(eq(int, right, 1), "the copy's bytes were read before it ran");
    free(plain);
    free(cap);
}

/* ========================================================================================== */
/* Replay decoding: every value from the file is checked (no device)                          */
/* ========================================================================================== */

static int view_res(void *ctx, uint64_t id, uint64_t *size)
{
    (void)ctx;
    static const uint64_t sizes[] = {0, 4096, 16};
    if (id == 0 || id > 2)
        return 0;
    *size = sizes[id];
    return 1;
}

static uint32_t saxpy_off[4] = {0, 8, 16, 24}, saxpy_size[4] = {4, 8, 8, 4};
static const struct sbt_cuda_layout view_kernels[2] = {
    {1, 4, saxpy_off, saxpy_size, 28}, /* kernel 1: saxpy's layout */
    {0, 0, NULL, NULL, 0},             /* kernel 2: layout unknown */
};
static const struct sbt_cuda_view view = {
    view_kernels,
    2,
    1,
    3,
    view_res,
    NULL,
    /* a device smaller than CUDA allows in block x */
    {{0x7fffffff, 65535, 65535}, {512, 1024, 64}, 1024, 48 << 10, 1 << 30},
};

/* An op to decode; payload records are (call, args, bytes) rows. */
struct dec_rec {
    uint32_t call;
    uint64_t arg[4];
    uint32_t n_arg, n_bytes;
};

struct dec_case {
    uint32_t kind, subkind, flags, kernel, grid, block, shmem;
    uint64_t bytes, resource, obj;
    struct sbt_access acc[2];
    uint32_t n_acc;
    struct dec_rec rec[3];
    int status;
    char msg[64];
};

#define LAUNCH_OK(len)                    \
    {                                     \
        SBT_CUDA_LAUNCH, {0, len}, 2, len \
    }
#define KOP(...) SBT_OP_KERNEL, 0, SBT_OPF_KERNEL | SBT_OPF_PAYLOAD, __VA_ARGS__
#define RW1      {{1, 0, 4096, SBT_ACCESS_RW}}, 1

ParameterizedTestParameters(decode, op)
{
    static struct dec_case cases[] = {
        {KOP(1, 4, 256, 0), 0, 0, 0, RW1, {LAUNCH_OK(32), {SBT_CUDA_PTR, {8, 1, 64}, 3, 0}}, 0, ""},
        {KOP(1, 4, 256, 0),
         0,
         0,
         0,
         RW1,
         {LAUNCH_OK(32), {SBT_CUDA_PTR, {28, 1, 0}, 3, 0}},
         SBT_ECORRUPT,
         "pointer at byte 28 past the 32 parameter bytes"}, // relocation past buffer
        {KOP(1, 4, 256, 0),
         0,
         0,
         0,
         RW1,
         {LAUNCH_OK(32), {SBT_CUDA_PTR, {8, 9, 0}, 3, 0}},
         SBT_EINVAL,
         "resource 9, which is not allocated"}, // relocation into nothing
        {KOP(1, 4, 256, 0),
         0,
         0,
         0,
         RW1,
         {LAUNCH_OK(32), {SBT_CUDA_PTR, {8, 2, 16}, 3, 0}},
         SBT_ECORRUPT,
         "offset 16 of resource 2 (16 bytes)"}, // relocation past the allocation
        {KOP(1, 4, 256, 0),
         0,
         0,
         0,
         RW1,
         {LAUNCH_OK(16)},
         SBT_ECORRUPT,
         "parameters end at byte 28 of 16"}, // buffer shorter than the layout
        {KOP(1, 4, 256, 0),
         0,
         0,
         0,
         RW1,
         {{SBT_CUDA_LAUNCH, {0, 64}, 2, 32}},
         SBT_ECORRUPT,
         "32 of 64 bytes captured"},
        {KOP(1, 4, 256, 0),
         0,
         0,
         0,
         RW1,
         {LAUNCH_OK(40000)},
         SBT_ECORRUPT,
         "40000 parameter bytes"},
        {KOP(1, 4, 256, 0),
         0,
         0,
         0,
         RW1,
         {{SBT_CUDA_LAUNCH, {2, 32}, 2, 32}},
         SBT_ECORRUPT,
         "parameter form 2"},
        {KOP(3, 4, 256, 0), 0, 0, 0, RW1, {LAUNCH_OK(32)}, SBT_EINVAL, "kernel 3: the trace has 2"},
        {KOP(2, 4, 256, 0), 0, 0, 0, RW1, {LAUNCH_OK(32)}, SBT_ECORRUPT, "no parameter layout"},
        {KOP(2, 4, 256, 0), 0, 0, 0, RW1, {{SBT_CUDA_LAUNCH, {1, 32}, 2, 32}}, 0, ""}, // extra
        {KOP(1, 0, 256, 0), 0, 0, 0, RW1, {LAUNCH_OK(32)}, SBT_ECORRUPT, "grid dimension x = 0"},
        {KOP(1, 4, 2048, 0),
         0,
         0,
         0,
         RW1,
         {LAUNCH_OK(32)},
         SBT_ECORRUPT,
         "block dimension x = 2048"},
        {KOP(1, 4, 1000, 0),
         0,
         0,
         0,
         RW1,
         {LAUNCH_OK(32)},
         SBT_ELIMIT,
         "block dimension x = 1000 > the device's 512"}, // fine for CUDA, not for this device
        {KOP(1, 4, 256, 1 << 20), 0, 0, 0, RW1, {LAUNCH_OK(32)}, SBT_ELIMIT, "shared memory"},
        {KOP(1, 4, 256, 0),
         0,
         0,
         0,
         RW1,
         {{SBT_CUDA_CALL, {33, 0, 0, 0}, 4, 0}},
         SBT_ECORRUPT,
         "without a LAUNCH record"},
        {KOP(1, 4, 256, 0),
         0,
         0,
         0,
         {{1, 4000, 200, SBT_ACCESS_RW}},
         1,
         {LAUNCH_OK(32)},
         SBT_ECORRUPT,
         "range 4000+200 outside resource 1"}, // an access past the end
        {SBT_OP_FILL,
         0,
         SBT_OPF_PAYLOAD,
         0,
         1,
         1,
         0,
         4096,
         0,
         0,
         {{1, 0, 4096, SBT_ACCESS_WRITE}},
         1,
         {{SBT_CUDA_FILL, {0, 4, 7, 1024}, 4, 0}},
         0,
         ""},
        {SBT_OP_FILL,
         0,
         SBT_OPF_PAYLOAD,
         0,
         1,
         1,
         0,
         1 << 20,
         0,
         0,
         {{1, 0, 1 << 20, SBT_ACCESS_WRITE}},
         1,
         {{SBT_CUDA_FILL, {0, 4, 7, 1 << 18}, 4, 0}},
         SBT_ECORRUPT,
         "outside resource 1"}, // a fill past the allocation
        {SBT_OP_FILL,
         0,
         SBT_OPF_PAYLOAD,
         0,
         1,
         1,
         0,
         6,
         0,
         0,
         {{2, 0, 6, SBT_ACCESS_WRITE}},
         1,
         {{SBT_CUDA_FILL, {0, 4, 7, 1}, 4, 0}},
         SBT_ECORRUPT,
         "6 bytes in 4-byte elements"},
        {SBT_OP_FILL,
         0,
         SBT_OPF_PAYLOAD,
         0,
         1,
         1,
         0,
         6,
         0,
         0,
         {{2, 0, 6, SBT_ACCESS_WRITE}},
         1,
         {{SBT_CUDA_FILL, {0, 3, 7, 2}, 4, 0}},
         SBT_ECORRUPT,
         "3-byte elements"},
        {SBT_OP_COPY,
         SBT_COPY_H2D,
         0,
         0,
         1,
         1,
         0,
         16,
         0,
         0,
         {{2, 0, 16, SBT_ACCESS_WRITE}},
         1,
         {{0}},
         SBT_ECORRUPT,
         "without its data"},
        {SBT_OP_COPY,
         SBT_COPY_D2D,
         0,
         0,
         1,
         1,
         0,
         16,
         0,
         0,
         {{2, 0, 16, SBT_ACCESS_WRITE}, {1, 0, 32, SBT_ACCESS_READ}},
         2,
         {{0}},
         SBT_ECORRUPT,
         "copy of 32 bytes into 16"},
        {SBT_OP_COPY,
         SBT_COPY_D2H,
         0,
         0,
         1,
         1,
         0,
         16,
         0,
         0,
         {{2, 0, 16, SBT_ACCESS_WRITE}},
         1,
         {{0}},
         SBT_ECORRUPT,
         "copy direction 2 with 1 ranges"},
        {SBT_OP_COPY, 9, 0, 0, 1, 1, 0, 16, 0, 0, {{0}}, 0, {{0}}, SBT_ECORRUPT, "direction 9"},
        {SBT_OP_COPY, SBT_COPY_H2H, 0, 0, 1, 1, 0, 16, 0, 0, {{0}}, 0, {{0}}, 0, ""},
        {SBT_OP_ALLOC,
         0,
         SBT_OPF_PAYLOAD,
         0,
         1,
         1,
         0,
         64,
         3,
         0,
         {{0}},
         0,
         {{SBT_CUDA_ALLOC, {SBT_CUDA_ALLOC_PITCH, 0, 64, 0}, 4, 0}},
         0,
         ""},
        {SBT_OP_ALLOC,
         0,
         SBT_OPF_PAYLOAD,
         0,
         1,
         1,
         0,
         64,
         1,
         0,
         {{0}},
         0,
         {{SBT_CUDA_ALLOC, {SBT_CUDA_ALLOC_MEM, 0, 64, 0}, 4, 0}},
         SBT_ECORRUPT,
         "resource 1, which is live"},
        {SBT_OP_ALLOC,
         0,
         SBT_OPF_PAYLOAD,
         0,
         1,
         1,
         0,
         64,
         3,
         0,
         {{0}},
         0,
         {{SBT_CUDA_ALLOC, {9, 0, 64, 0}, 4, 0}},
         SBT_ECORRUPT,
         "origin 9"},
        {SBT_OP_ALLOC,
         0,
         SBT_OPF_PAYLOAD,
         0,
         1,
         1,
         0,
         1ull << 40,
         3,
         0,
         {{0}},
         0,
         {{SBT_CUDA_ALLOC, {SBT_CUDA_ALLOC_MEM, 0, 0, 0}, 4, 0}},
         SBT_ELIMIT,
         "1099511627776"},
        {SBT_OP_ALLOC,
         0,
         SBT_OPF_PAYLOAD,
         0,
         1,
         1,
         0,
         64,
         3,
         0,
         {{0}},
         0,
         {{SBT_CUDA_ALLOC, {SBT_CUDA_ALLOC_GLOBAL, 0, 64, 5}, 4, 0}},
         SBT_EINVAL,
         "global of program 5"},
        {SBT_OP_ALLOC,
         0,
         SBT_OPF_PAYLOAD,
         0,
         1,
         1,
         0,
         64,
         3,
         0,
         {{0}},
         0,
         {{SBT_CUDA_ALLOC, {SBT_CUDA_ALLOC_GLOBAL, 0, 64, 1}, 4, 0}},
         SBT_ECORRUPT,
         "global without a usable name"},
        {SBT_OP_FREE, 0, 0, 0, 1, 1, 0, 0, 7, 0, {{0}}, 0, {{0}}, SBT_EINVAL, "resource 7"},
        {SBT_OP_EVENT_RECORD,
         0,
         0,
         0,
         1,
         1,
         0,
         0,
         0,
         0,
         {{0}},
         0,
         {{0}},
         SBT_ECORRUPT,
         "event id 0"},
        {SBT_OP_EVENT_WAIT,
         0,
         0,
         0,
         1,
         1,
         0,
         0,
         0,
         1ull << 40,
         {{0}},
         0,
         {{0}},
         SBT_ECORRUPT,
         "event id 1099511627776"},
        {SBT_OP_STREAM_SYNC,
         0,
         0,
         0,
         1,
         1,
         0,
         0,
         0,
         99,
         {{0}},
         0,
         {{0}},
         SBT_ECORRUPT,
         "stream 99: the trace has 3 streams"},
        {SBT_OP_DEVICE_SYNC,
         0,
         0,
         0,
         1,
         1,
         0,
         0,
         0,
         0,
         {{2, 0, 4, 0}},
         1,
         {{0}},
         SBT_ECORRUPT,
         "access 0 of mode 0"},
    };
    return cr_make_param_array(struct dec_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct dec_case *c, decode, op)
{
    struct sbt_payload_enc e = {0};
    for (int i = 0; i < 3 && c->rec[i].call; i++) {
        uint8_t *bytes = calloc(1, c->rec[i].n_bytes + 1);
        sbt_payload_put(&e, c->rec[i].call, c->rec[i].arg, c->rec[i].n_arg, bytes,
                        c->rec[i].n_bytes);
        free(bytes);
    }
    struct sbt_op op;
    memset(&op, 0, sizeof op);
    op.kind = c->kind;
    op.subkind = c->subkind;
    op.flags = c->flags | (e.len ? SBT_OPF_PAYLOAD : 0);
    op.stream = 1;
    op.kernel = c->kernel;
    op.grid[0] = c->grid, op.grid[1] = op.grid[2] = 1;
    op.block[0] = c->block, op.block[1] = op.block[2] = 1;
    op.shmem = c->shmem;
    op.bytes = c->bytes;
    op.resource = c->resource;
    op.obj = c->obj;
    op.n_access = c->n_acc;
    op.access = c->acc;
    op.payload = (struct sbt_ext){SBT_CUDA_PAYLOAD, (uint32_t)e.len, e.buf};
    struct sbt_cuda_op o;
    int st = sbt_cuda_op_decode(&view, &op, &o);
    cr_assert(eq(int, st, c->status), "%s", sbt_errmsg());
    if (st < 0)
        cr_assert(strstr(sbt_errmsg(), c->msg) != NULL, "message: %s", sbt_errmsg());
    else if (c->kind == SBT_OP_KERNEL && c->rec[1].call == SBT_CUDA_PTR)
        cr_assert(eq(u32, o.n_relocs, 1));
    else if (c->kind == SBT_OP_FILL)
        cr_assert(eq(u64, o.count * o.elem, c->acc[0].len));
    sbt_cuda_op_free(&o);
    sbt_payload_enc_free(&e);
}

Test(decode, layout_past_the_parameter_limit)
{
    struct sbt_payload_enc e = {0};
    uint64_t a[5] = {0, 1, 1, 32760, 8};
    sbt_payload_put(&e, SBT_CUDA_KERNEL, a, 5, NULL, 0);
    struct sbt_kernel k = {7, 1, 1, {SBT_CUDA_EXT_KERNEL, (uint32_t)e.len, e.buf}};
    struct sbt_cuda_layout l;
    cr_assert(eq(int, sbt_cuda_layout_decode(&k, &l), SBT_ECORRUPT));
    cr_assert(strstr(sbt_errmsg(), "kernel 7: parameter 0 at 32760+8") != NULL, "%s", sbt_errmsg());
    uint64_t b[3] = {0, 1, 5000};
    sbt_payload_enc_reset(&e);
    sbt_payload_put(&e, SBT_CUDA_KERNEL, b, 3, NULL, 0);
    k.ext = (struct sbt_ext){SBT_CUDA_EXT_KERNEL, (uint32_t)e.len, e.buf};
    cr_assert(eq(int, sbt_cuda_layout_decode(&k, &l), SBT_ECORRUPT));
    cr_assert(strstr(sbt_errmsg(), "5000 parameters") != NULL, "%s", sbt_errmsg());
    sbt_payload_enc_free(&e);
}

/* A crafted trace through the whole replay against the fake: an op error naming the op. */
Test(replay, crafted_pointer_past_the_parameters_is_an_op_error)
{
    paths();
    need_replay();
    const char *path = tpath("crafted.sbt");
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(path, NULL, &w), 0), "%s", sbt_errmsg());
    uint32_t dev, host, strm, prog, kern, name;
    struct sbt_device d = {0};
    d.api = SBT_API_CUDA;
    cr_assert(eq(int, sbt_writer_add_device(w, &d, &dev), 0));
    struct sbt_stream s = {0};
    s.device = dev;
    s.kind = SBT_STREAM_HOST_THREAD;
    cr_assert(eq(int, sbt_writer_add_stream(w, &s, &host), 0));
    struct sbt_payload_enc e = {0};
    uint64_t sa[5] = {SBT_CUDA_STREAM_LEGACY, 0, 0, 0, 1};
    sbt_payload_put(&e, SBT_CUDA_STREAM, sa, 5, NULL, 0);
    s.kind = SBT_STREAM_CUDA;
    s.ext = (struct sbt_ext){SBT_CUDA_EXT_STREAM, (uint32_t)e.len, e.buf};
    cr_assert(eq(int, sbt_writer_add_stream(w, &s, &strm), 0));
    struct sbt_program p = {0};
    p.kind = SBT_PROGRAM_HOST;
    cr_assert(eq(int, sbt_writer_blob(w, FAKE_IMAGE, sizeof FAKE_IMAGE, &p.blob), 0));
    cr_assert(eq(int, sbt_writer_add_program(w, &p, &prog), 0));
    sbt_payload_enc_reset(&e);
    uint64_t ka[11] = {0, 1, 4, 0, 4, 8, 8, 16, 8, 24, 4};
    sbt_payload_put(&e, SBT_CUDA_KERNEL, ka, 11, NULL, 0);
    struct sbt_kernel k = {0};
    k.program = prog;
    cr_assert(eq(int, sbt_writer_intern(w, "saxpy", &name), 0));
    k.name = name;
    k.ext = (struct sbt_ext){SBT_CUDA_EXT_KERNEL, (uint32_t)e.len, e.buf};
    cr_assert(eq(int, sbt_writer_add_kernel(w, &k, &kern), 0));
    struct sbt_op op;
    memset(&op, 0, sizeof op); /* an allocation of 4 KiB */
    op.kind = SBT_OP_ALLOC;
    op.stream = host;
    op.flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES | SBT_OPF_PAYLOAD;
    op.resource = 1;
    op.bytes = 4096;
    sbt_payload_enc_reset(&e);
    uint64_t aa[4] = {SBT_CUDA_ALLOC_MEM, 0, 4096, 0};
    sbt_payload_put(&e, SBT_CUDA_ALLOC, aa, 4, NULL, 0);
    op.payload = (struct sbt_ext){SBT_CUDA_PAYLOAD, (uint32_t)e.len, e.buf};
    cr_assert(eq(int, sbt_writer_add_op(w, &op, NULL), 0));
    memset(&op, 0, sizeof op); /* a launch whose pointer lies past its 32 parameter bytes */
    op.kind = SBT_OP_KERNEL;
    op.stream = strm;
    op.flags = SBT_OPF_KERNEL | SBT_OPF_GEOM | SBT_OPF_PAYLOAD;
    op.kernel = kern;
    op.grid[0] = op.grid[1] = op.grid[2] = op.block[1] = op.block[2] = 1;
    op.block[0] = 256;
    struct sbt_access acc = {1, 0, 4096, SBT_ACCESS_RW};
    op.n_access = 1;
    op.access = &acc;
    sbt_payload_enc_reset(&e);
    uint8_t params[32] = {0};
    uint64_t la[2] = {0, 32}, pa[4] = {30, 1, 0, 0};
    sbt_payload_put(&e, SBT_CUDA_LAUNCH, la, 2, params, 32);
    sbt_payload_put(&e, SBT_CUDA_PTR, pa, 4, NULL, 0);
    op.payload = (struct sbt_ext){SBT_CUDA_PAYLOAD, (uint32_t)e.len, e.buf};
    cr_assert(eq(int, sbt_writer_add_op(w, &op, NULL), 0));
    cr_assert(eq(int, sbt_writer_close(w), 0), "%s", sbt_errmsg());
    sbt_payload_enc_free(&e);
    struct replay_result res;
    cr_assert(eq(int, replay_trace(path, 1, &res), 0), "%s", replay_errmsg());
    cr_assert(eq(u64, res.n_errors, 1));
    cr_assert(eq(u64, res.first_error, 1));
    cr_assert(strstr(res.first_error_msg, "pointer at byte 30 past the 32 parameter bytes") != NULL,
              "%s", res.first_error_msg);
    replay_result_free(&res);
}

/* cuModuleLoadData takes no length: replay hands it only images that end inside their blob. */
Test(decode, program_images_must_end_inside_their_blob)
{
    uint8_t fb[64] = {0};
    uint32_t magic = 0xBA55ED50u, kind;
    uint16_t hdr = 16;
    uint64_t payload = 48;
    memcpy(fb, &magic, 4), memcpy(fb + 6, &hdr, 2), memcpy(fb + 8, &payload, 8);
    cr_assert(eq(sz, sbt_cuda_image_size_in(fb, sizeof fb, &kind), 64));
    cr_assert(eq(u32, kind, SBT_PROGRAM_FATBIN));
    cr_assert(eq(sz, sbt_cuda_image_size_in(fb, 40, &kind), 0)); /* the header claims 64 */
    uint8_t elf[64] = {0x7f, 'E', 'L', 'F', 2, 1};
    uint64_t shoff = 4096;
    uint16_t shentsize = 64, shnum = 2;
    memcpy(elf + 0x28, &shoff, 8), memcpy(elf + 0x3a, &shentsize, 2), memcpy(elf + 0x3c, &shnum, 2);
    cr_assert(eq(sz, sbt_cuda_image_size_in(elf, sizeof elf, &kind), 0)); /* sections past it */
    cr_assert(
        eq(sz, sbt_cuda_image_size_in(FAKE_IMAGE, sizeof FAKE_IMAGE, &kind), sizeof FAKE_IMAGE));
    cr_assert(eq(sz, sbt_cuda_image_size_in(FAKE_IMAGE, sizeof FAKE_IMAGE - 1, &kind), 0));
    uint8_t wrapper[16] = {0xB1, 0x43, 0x62, 0x46, 1}; /* __fatBinC_Wrapper_t: holds a pointer */
    cr_assert(eq(sz, sbt_cuda_image_size_in(wrapper, sizeof wrapper, &kind), 0));
}

/* ========================================================================================== */
/* Snapshots on the fake driver: the CUDA backend's write() restores them                     */
/* ========================================================================================== */

struct digests {
    uint64_t n;
    sbt_hash dig[4096];
    uint8_t has[4096];
};

static void keep_digest(void *ctx, const struct replay_op *op)
{
    struct digests *d = ctx;
    if (op->seq < 4096 && op->has_digest) {
        d->dig[op->seq] = op->digest;
        d->has[op->seq] = 1;
        d->n++;
    }
}

Test(replay, range_from_a_snapshot_and_trim)
{
    paths();
    need_replay();
    const char *trace = tpath("cuda_snap.sbt"), *snaps = tpath("cuda_snap.snap.sbt");
    char *out;
    cr_assert(eq(int, run_prog("prog_saxpy", "", trace, NULL, &out), 0));
    free(out);
    setenv("REPRISE_CUDA_DRIVER", fake, 1);
    setenv("FAKE_CUDA_BASE", "7d0000000000", 1);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace, NULL, &r), 0), "%s", sbt_errmsg());
    uint64_t n = sbt_reader_info(r)->seq_end;
    cr_assert(n < 4096);
    static struct digests full, part, alone;
    memset(&full, 0, sizeof full);
    struct replay_result res;
    cr_assert(
        eq(int,
           replay_run(r,
                      &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP,
                                   .backend_impl = &replay__cuda_backend, .snapshot_every_ops = 2,
                                   .snapshot_out = snaps, .on_op = keep_digest, .ctx = &full),
                      &res),
           0),
        "%s", replay_errmsg());
    cr_assert(eq(u64, res.n_mismatch, 0));
    cr_assert(gt(u64, res.n_snapshots, 2));
    replay_result_free(&res);
    sbt_reader *sc;
    cr_assert(eq(int, replay_snapshots_open(r, snaps, &sc), 0), "%s", replay_errmsg());
    /* the second half, from the latest snapshot before it */
    struct sbt_range rg = {.has_seq = 1, .seq_begin = n / 2, .seq_end = n};
    memset(&part, 0, sizeof part);
    cr_assert(eq(int,
                 replay_run(r,
                            &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP,
                                         .backend_impl = &replay__cuda_backend, .range = &rg,
                                         .snapshots = sc, .on_op = keep_digest, .ctx = &part),
                            &res),
                 0),
              "%s", replay_errmsg());
    cr_assert(eq(u64, res.n_errors, 0), "%s", res.first_error_msg);
    cr_assert(res.restore_seq != UINT64_MAX && res.restore_seq <= n / 2, "restored at %llu",
              (unsigned long long)res.restore_seq);
    cr_assert(gt(u64, res.restore_bytes, 0));
    cr_assert(gt(u64, res.n_compared, 0), "the capture's read-backs in the range");
    cr_assert(eq(u64, res.n_mismatch, 0), "first mismatch at op %llu",
              (unsigned long long)res.first_mismatch);
    uint64_t compared = 0;
    for (uint64_t q = n / 2; q < n; q++)
        if (full.has[q]) {
            cr_assert(part.has[q] && sbt_hash_eq(part.dig[q], full.dig[q]),
                      "op %llu differs from the full replay", (unsigned long long)q);
            compared++;
        }
    cr_assert(gt(u64, compared, 0));
    replay_result_free(&res);
    /* trim on the fake device; the trimmed trace replays on its own */
    struct replay_trim_result tr;
    cr_assert(eq(int,
                 replay_trim(r, &rg, sc, tpath("cuda_small.sbt"),
                             &REPLAY_TRIM_OPTS(.backend_impl = &replay__cuda_backend), &tr),
                 0),
              "%s", replay_errmsg());
    cr_assert(eq(u32, tr.mode, REPLAY_TRIM_DEVICE));
    sbt_reader *t;
    cr_assert(eq(int, sbt_reader_open(tpath("cuda_small.sbt"), NULL, &t), 0), "%s", sbt_errmsg());
    memset(&alone, 0, sizeof alone);
    cr_assert(eq(int,
                 replay_run(t,
                            &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP,
                                         .backend_impl = &replay__cuda_backend,
                                         .on_op = keep_digest, .ctx = &alone),
                            &res),
                 0),
              "%s", replay_errmsg());
    cr_assert(eq(u64, res.n_errors, 0), "%s", res.first_error_msg);
    cr_assert(eq(u64, res.n_mismatch, 0));
    for (uint64_t q = n / 2; q < n; q++)
        if (full.has[q])
            cr_assert(alone.has[q] && sbt_hash_eq(alone.dig[q], full.dig[q]),
                      "op %llu of the trimmed trace differs", (unsigned long long)q);
    replay_result_free(&res);
    sbt_reader_close(t);
    sbt_reader_close(sc);
    sbt_reader_close(r);
}

/* ========================================================================================== */
/* A program that dies keeps what it did (tests/cuda/prog_dies.c)                             */
/* ========================================================================================== */

/* Runs prog_dies with args (NULL-terminated) on the fake driver, through the shim when trace is
 * not NULL. With kill_after: SIGKILL one second after that many rounds finished. Returns the
 * wait status; *out: its stdout. */
static int run_dies(const char *const *args, const char *trace, int kill_after, char *out,
                    size_t n_out)
{
    char prog[1300], lib[1300], drv[1300], tenv[1300], asan[1300];
    snprintf(prog, sizeof prog, "%s/tests/cuda/prog_dies", build);
    if (trace)
        snprintf(lib, sizeof lib, "LD_LIBRARY_PATH=%s", shim_dir);
    else
        snprintf(lib, sizeof lib, "LD_LIBRARY_PATH=%s/tests/cuda/fake", build);
    snprintf(drv, sizeof drv, "REPRISE_CUDA_DRIVER=%s", fake);
    snprintf(tenv, sizeof tenv, "REPRISE_TRACE=%s", trace ? trace : "");
    char *argv[8] = {prog};
    for (int i = 0; args[i] && i < 6; i++)
        argv[i + 1] = (char *)args[i];
    tproc_env_fault_kills(asan, sizeof asan);
    if (!strcmp(args[0], "fork")) {
        /* make asan: a child forked while the parent's pump thread held ASan's allocator lock
         * inherits it held, and LeakSanitizer's check at the child's exit waits for it for
         * ever (gcc 12's libasan takes no such lock around fork): no leak check there */
        size_t l = strlen(asan);
        snprintf(asan + l, sizeof asan - l, ":detect_leaks=0");
    }
    char *env[] = {lib, drv, tenv, asan, NULL};
    struct tproc p;
    cr_assert(eq(int, tproc_start(&p, argv, env), 0));
    if (kill_after) {
        cr_assert(eq(int, tproc_wait_for(&p, "done\n", kill_after), kill_after), "%s", p.text);
        sleep(1);
        kill(p.pid, SIGKILL);
    }
    int st = tproc_finish(&p);
    snprintf(out, n_out, "%s", p.text);
    return st;
}

/* The trace of a program that died: read by scanning, the writer did not finish, and at least
 * `launches` launches, each with its H2D copies and its read-back. */
static void check_died(const char *trace, uint64_t launches, const char *flush_reason)
{
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace, NULL, &r), 0), "%s", sbt_errmsg());
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(in->writer_finished == 0 && in->has_footer == 0);
    char why[512];
    sbt_reader_incomplete_why(r, why, sizeof why);
    cr_assert(strstr(why, "the writer did not finish") != NULL, "%s", why);
    uint64_t k[SBT_OP__COUNT] = {0}, n_ptr, n_pt;
    count_ops(r, k, &n_ptr, &n_pt);
    cr_assert(ge(u64, k[SBT_OP_KERNEL], launches));
    cr_assert(ge(u64, k[SBT_OP_HOST_READ], launches));
    cr_assert(ge(u64, k[SBT_OP_COPY], 3 * launches));
    const char *reason = sbt_reader_meta_get(r, "capture.flush_reason");
    if (flush_reason)
        cr_assert(reason && strstr(reason, flush_reason), "capture.flush_reason: %s",
                  reason ? reason : "(none)");
    cr_assert(eq(int, sbt_reader_validate(r, NULL, NULL), 0));
    sbt_reader_close(r);
}

/* kill -9 one second after the 9th of rounds that come every 300 ms: every op issued at least
 * a second before the kill is in the trace */
Test(capture, sigkill_keeps_every_op_issued_a_second_before)
{
    paths();
    const char *trace = tpath("cuda_killed.sbt");
    const char *args[] = {"slow", "40", NULL};
    char out[16384];
    int st = run_dies(args, trace, 9, out, sizeof out);
    cr_assert(eq(int, WIFSIGNALED(st) ? WTERMSIG(st) : 0, SIGKILL), "status %#x", st);
    check_died(trace, 9, NULL);
}

/* A crash after 3 rounds: the trace holds them, the program's own handler still runs, and the
 * wait status is the one it has without the capture. */
static void crash(const char *mode, const char *when, const char *reason)
{
    paths();
    const char *trace = tpath("cuda_crash.sbt");
    const char *args[] = {mode, "3", when, NULL};
    char plain[16384], cap[16384];
    int st_plain = run_dies(args, NULL, 0, plain, sizeof plain);
    int st_cap = run_dies(args, trace, 0, cap, sizeof cap);
    cr_assert(st_plain != 0, "%s did not die", mode);
    cr_assert(eq(int, st_cap, st_plain), "wait status under capture vs without");
    cr_assert(eq(str, cap, plain), "capture changed the program's output");
    cr_assert(strstr(plain, "launch 3 done") != NULL, "%s", plain);
    if (when)
        cr_assert(strstr(cap, "handler ran") != NULL, "the program's handler did not run");
    check_died(trace, 3, reason);
}

Test(capture, segv_keeps_the_ops_before_it)
{
    crash("segv", NULL, "SIGSEGV");
}

Test(capture, segv_chains_to_the_programs_handler)
{
    crash("segv", "early", "SIGSEGV");
}

Test(capture, abort_keeps_the_ops_before_it)
{
    crash("abort", NULL, "SIGABRT");
}

/* One trace per process under `reprise capture --api cuda`: two programs a wrapper runs one
 * after the other each write their own complete trace (before, the second truncated the
 * first's, and capture said "complete"). */
Test(capture, each_process_writes_its_own_trace)
{
    paths();
    const char *bin = getenv("REPRISE_BIN");
    if (!bin || !*bin)
        cr_skip_test("REPRISE_BIN is not set (run through make check)");
    char cmd[4096], *out;
    snprintf(cmd, sizeof cmd,
             "cd '%s' && REPRISE_CUDA_DRIVER='%s' '%s' capture --api cuda -o w.sbt -- sh -c "
             "'%s/tests/cuda/prog_saxpy >/dev/null; %s/tests/cuda/prog_saxpy >/dev/null' 2>&1",
             tpath(""), fake, bin, build, build);
    cr_assert(eq(int, shell_out(cmd, &out), 0), "%s", out);
    cr_assert(strstr(out, "w.sbt: not written: the program itself did not use the GPU; 2 "
                          "processes it started did") != NULL,
              "%s", out);
    char man[1200], line[4096];
    snprintf(man, sizeof man, "%s/w.procs", tpath(""));
    FILE *f = fopen(man, "r");
    cr_assert(f != NULL, "no manifest %s", man);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char *save = NULL;
        for (int k = 0; k < 3; k++)
            strtok_r(k ? NULL : line, "\t", &save);
        const char *tr = strtok_r(NULL, "\t", &save);
        cr_assert(tr != NULL);
        sbt_reader *r;
        cr_assert(eq(int, sbt_reader_open(tr, NULL, &r), 0), "%s: %s", tr, sbt_errmsg());
        cr_expect(sbt_reader_info(r)->complete, "%s", tr);
        cr_expect(eq(u64, sbt_reader_info(r)->n_ops, 46), "%s holds another process's ops", tr);
        sbt_reader_close(r);
        n++;
    }
    fclose(f);
    cr_expect(eq(int, n, 2));
    free(out);
}

/* A forked child shares the trace's file but not the capture: when it exits, the parent's trace
 * stays whole (the child once wrote its copy of the writer's state into it) */
Test(capture, forked_child_leaves_the_trace_alone)
{
    paths();
    const char *trace = tpath("cuda_fork.sbt");
    const char *args[] = {"fork", "3", NULL};
    char out[16384];
    cr_assert(eq(int, run_dies(args, trace, 0, out, sizeof out), 0), "%s", out);
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace, NULL, &r), 0), "%s", sbt_errmsg());
    const struct sbt_info *in = sbt_reader_info(r);
    cr_assert(in->complete != 0 && in->has_footer != 0);
    uint64_t k[SBT_OP__COUNT] = {0}, n_ptr, n_pt;
    count_ops(r, k, &n_ptr, &n_pt);
    cr_assert(eq(u64, k[SBT_OP_KERNEL], 3));
    cr_assert(eq(int, sbt_reader_validate(r, NULL, NULL), 0));
    sbt_reader_close(r);
}
