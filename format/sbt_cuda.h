/*
 * format/sbt_cuda.h — the CUDA typed payloads of a trace: what the CUDA shim (capture/) writes
 * into `struct sbt_ext` rows and op payloads so that the CUDA replay backend (replay/) can
 * re-execute a captured Driver-API stream. Both sides use this one description.
 *
 * Encoding: the record codec of format/sbt_vk.h (call | n_arg | args | n_bytes | bytes), with
 * the calls below; encode and decode with sbt_vk_enc_* / sbt_vk_dec_*. Readers skip calls they
 * do not know and ignore arguments past the ones they know, so layouts only grow at the end.
 *
 * Resources. A trace resource is one device allocation (cuMemAlloc, cuMemAllocAsync) or one
 * module global (cuModuleGetGlobal); its id is the ALLOC op's resource. Accesses name
 * (resource, offset in it, length). Device addresses in kernel parameters are recorded as
 * (byte offset in the packed parameter buffer, resource, offset in resource), so replay can
 * write the replay-time address of the same byte there (relocation).
 *
 * Where each payload goes:
 *   device row ext   kind SBT_CUDA_EXT_DEVICE:  DEVICE
 *   stream row ext   kind SBT_CUDA_EXT_STREAM:  STREAM
 *   program row ext  kind SBT_CUDA_EXT_MODULE:  MODULE (the image is the row's blob)
 *   kernel row ext   kind SBT_CUDA_EXT_KERNEL:  KERNEL (parameter layout)
 *   op payloads      kind SBT_CUDA_PAYLOAD:     CALL first, then per op kind:
 *     KERNEL      LAUNCH, LAUNCH_ATTR*, PTR*        (op.kernel, grid, block, shmem)
 *     COPY        COPY                              (accesses; H2D: op.blob = the bytes)
 *     FILL        FILL                              (op.value = pattern, op.bytes = bytes)
 *     ALLOC       ALLOC                             FREE: ALLOC of the freed range
 *     MARKER      EVENT (cuEventCreate/Destroy)     EVENT_RECORD / EVENT_WAIT: EVENT
 *     STREAM_SYNC / DEVICE_SYNC / HOST_READ / STREAM_CREATE / STREAM_DESTROY: CALL only
 */
#ifndef REPRISE_SBT_CUDA_H
#define REPRISE_SBT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "format/sbt.h"
#include "format/sbt_vk.h"

#ifdef __cplusplus
extern "C" {
#endif

enum sbt_cuda_kind {
    SBT_CUDA_EXT_DEVICE = 0x2001, /* struct sbt_device.ext */
    SBT_CUDA_EXT_MODULE = 0x2002, /* struct sbt_program.ext */
    SBT_CUDA_EXT_KERNEL = 0x2003, /* struct sbt_kernel.ext */
    SBT_CUDA_EXT_STREAM = 0x2004, /* struct sbt_stream.ext */
    SBT_CUDA_PAYLOAD = 0x2010,    /* struct sbt_op.payload */
};

#define SBT_CUDA_CALL_MAP(X)                                                                     \
    /* ordinal, compute capability major, minor, multiprocessors, total memory bytes,            \
       driver version; bytes: device name */                                                     \
    X(DEVICE, 1)                                                                                 \
    /* origin (enum sbt_cuda_stream_origin), CUstream flags, priority (zigzag), captured handle, \
       host thread (dense number; per-thread default streams) */                                 \
    X(STREAM, 2)                                                                                 \
    /* loader (enum sbt_cuda_api of the load call), image bytes, program kind; bytes: the file   \
       name for cuModuleLoad / cuLibraryLoadFromFile */                                          \
    X(MODULE, 3)                                                                                 \
    /* handle kind (0 CUfunction from a module, 1 CUkernel from a library), layout known (0/1),  \
       n params, (offset, size)... in bytes in the packed parameter buffer */                    \
    X(KERNEL, 4)                                                                                 \
    /* api (enum sbt_cuda_api: the exact entry point), per-thread variant (0 legacy, 1 _ptsz or  \
       _ptds), captured CUstream handle value, CUresult the call returned */                     \
    X(CALL, 16)                                                                                  \
    /* form (0 kernelParams, 1 extra buffer), parameter bytes; bytes: the packed parameters      \
       laid out at the KERNEL row's offsets (form 1: the extra buffer as given) */               \
    X(LAUNCH, 17)                                                                                \
    X(LAUNCH_ATTR, 18) /* CUlaunchAttributeID; bytes: the 64-byte value */                       \
    /* byte offset in the parameter buffer, resource id, offset in the resource, the captured    \
       64-bit value: a device address found in the parameters */                                 \
    X(PTR, 19)                                                                                   \
    /* captured dst address, captured src address, bytes (host addresses are recorded as 0) */   \
    X(COPY, 20)                                                                                  \
    X(FILL, 21) /* captured dst address, element size (1, 2, 4), value, element count */         \
    /* origin (enum sbt_cuda_alloc_origin), captured address, size, program id (globals);        \
       bytes: the global's name */                                                               \
    X(ALLOC, 22)                                                                                 \
    X(EVENT, 23) /* event id (the op's obj), CUevent flags, record/wait flags */

enum sbt_cuda_call {
#define SBT_CUDA__ENUM(name, val) SBT_CUDA_##name = val,
    SBT_CUDA_CALL_MAP(SBT_CUDA__ENUM)
#undef SBT_CUDA__ENUM
};

/* The Driver API calls a trace names (CALL's api). Values are stable: append only. */
#define SBT_CUDA_API_MAP(X)           \
    X(cuMemAlloc_v2, 1)               \
    X(cuMemFree_v2, 2)                \
    X(cuMemAllocAsync, 3)             \
    X(cuMemFreeAsync, 4)              \
    X(cuMemcpy, 5)                    \
    X(cuMemcpyHtoD_v2, 6)             \
    X(cuMemcpyDtoH_v2, 7)             \
    X(cuMemcpyDtoD_v2, 8)             \
    X(cuMemcpyAsync, 9)               \
    X(cuMemcpyHtoDAsync_v2, 10)       \
    X(cuMemcpyDtoHAsync_v2, 11)       \
    X(cuMemcpyDtoDAsync_v2, 12)       \
    X(cuMemsetD8_v2, 13)              \
    X(cuMemsetD16_v2, 14)             \
    X(cuMemsetD32_v2, 15)             \
    X(cuMemsetD8Async, 16)            \
    X(cuMemsetD16Async, 17)           \
    X(cuMemsetD32Async, 18)           \
    X(cuStreamCreate, 19)             \
    X(cuStreamCreateWithPriority, 20) \
    X(cuStreamDestroy_v2, 21)         \
    X(cuStreamSynchronize, 22)        \
    X(cuStreamQuery, 23)              \
    X(cuStreamWaitEvent, 24)          \
    X(cuEventCreate, 25)              \
    X(cuEventDestroy_v2, 26)          \
    X(cuEventRecord, 27)              \
    X(cuEventRecordWithFlags, 28)     \
    X(cuEventSynchronize, 29)         \
    X(cuEventQuery, 30)               \
    X(cuCtxSynchronize, 31)           \
    X(cuCtxSynchronize_v2, 32)        \
    X(cuLaunchKernel, 33)             \
    X(cuLaunchKernelEx, 34)           \
    X(cuLaunchCooperativeKernel, 35)  \
    X(cuModuleLoad, 36)               \
    X(cuModuleLoadData, 37)           \
    X(cuModuleLoadDataEx, 38)         \
    X(cuModuleLoadFatBinary, 39)      \
    X(cuLibraryLoadData, 40)          \
    X(cuLibraryLoadFromFile, 41)      \
    X(cuModuleGetGlobal_v2, 42)

enum sbt_cuda_api {
#define SBT_CUDA__API(name, val) SBT_CUDA_API_##name = val,
    SBT_CUDA_API_MAP(SBT_CUDA__API)
#undef SBT_CUDA__API
};

/* "cuLaunchKernel" for SBT_CUDA_API_cuLaunchKernel; NULL if unknown. */
const char *sbt_cuda_api_name(uint32_t api);
/* "LAUNCH" for SBT_CUDA_LAUNCH; NULL if unknown. */
const char *sbt_cuda_call_name(uint32_t call);

enum sbt_cuda_stream_origin {
    SBT_CUDA_STREAM_LEGACY = 1,     /* the NULL / CU_STREAM_LEGACY stream of a context */
    SBT_CUDA_STREAM_PER_THREAD = 2, /* a host thread's per-thread default stream */
    SBT_CUDA_STREAM_CREATED = 3,    /* cuStreamCreate[WithPriority] */
};

enum sbt_cuda_alloc_origin {
    SBT_CUDA_ALLOC_MEM = 1,    /* cuMemAlloc / cuMemAllocAsync */
    SBT_CUDA_ALLOC_GLOBAL = 2, /* cuModuleGetGlobal: (program, name) */
};

/* Bytes of a module image passed to cuModuleLoadData / cuLibraryLoadData, which carry no
 * length: a __fatBinC_Wrapper_t (magic 0x466243B1, version 1; the fatbin it points to is
 * returned through *image), a fatbin (0xBA55ED50 headers, concatenated), an ELF cubin (to the
 * end of its section and program header tables and sections), or NUL-terminated text (PTX,
 * the fake driver's images; the NUL is counted). *image may be moved to the bytes to store.
 * Returns the length, or 0 when the image is not recognised (a version-2 RDC wrapper). *kind
 * receives an enum sbt_program_kind. The caller must trust the pointer: the driver reads it. */
size_t sbt_cuda_image_size(const void **image, uint32_t *kind);

/* Writes a CUDA payload as text, one record per line, for `reprise view` and tests. */
int sbt_cuda_dump(const void *buf, size_t len, void (*line)(void *ctx, const char *s), void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SBT_CUDA_H */
