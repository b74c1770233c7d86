/*
 * format/sbt_cuda.h — the CUDA typed payloads of a trace: what the CUDA shim (capture/) writes
 * into `struct sbt_ext` rows and op payloads so that the CUDA replay backend (replay/) can
 * re-execute a captured Driver-API stream. Both sides use this one description.
 *
 * Encoding: the record codec of format/sbt_vk.h (call | n_arg | args | n_bytes | bytes), with
 * the calls below; encode and decode with sbt_payload_enc_* / sbt_payload_dec_*. Readers skip calls
 * they do not know and ignore arguments past the ones they know, so layouts only grow at the end.
 *
 * Resources. A trace resource is one device allocation (cuMemAlloc, cuMemAllocAsync, a pool,
 * pitch allocation or VMM mapping: enum sbt_cuda_alloc_origin) or one module or library global
 * (cuModuleGetGlobal, cuLibraryGetGlobal); its id is the ALLOC op's resource. Accesses name
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
 *     COPY        COPY                              (accesses; H2D: op.blob = the bytes;
 *                                                    H2H: no accesses, nothing for the device)
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
#include "format/sbt_payload.h"

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
    X(EVENT, 23) /* event id (the op's obj), CUevent flags, record/wait flags */                 \
    /* CUfunction_attribute, value (a C int, as a 64-bit two's complement word): a function      \
       attribute the program set (cuFuncSetAttribute, cuKernelSetAttribute) and that is in       \
       force at this launch; one record per attribute, after the LAUNCH record */                \
    X(FUNC_ATTR, 24)

enum sbt_cuda_call {
#define SBT_CUDA__ENUM(name, val) SBT_CUDA_##name = val,
    SBT_CUDA_CALL_MAP(SBT_CUDA__ENUM)
#undef SBT_CUDA__ENUM
};

/* The Driver API calls a trace names (CALL's api). Values are stable: append only. */
#define SBT_CUDA_API_MAP(X)            \
    X(cuMemAlloc_v2, 1)                \
    X(cuMemFree_v2, 2)                 \
    X(cuMemAllocAsync, 3)              \
    X(cuMemFreeAsync, 4)               \
    X(cuMemcpy, 5)                     \
    X(cuMemcpyHtoD_v2, 6)              \
    X(cuMemcpyDtoH_v2, 7)              \
    X(cuMemcpyDtoD_v2, 8)              \
    X(cuMemcpyAsync, 9)                \
    X(cuMemcpyHtoDAsync_v2, 10)        \
    X(cuMemcpyDtoHAsync_v2, 11)        \
    X(cuMemcpyDtoDAsync_v2, 12)        \
    X(cuMemsetD8_v2, 13)               \
    X(cuMemsetD16_v2, 14)              \
    X(cuMemsetD32_v2, 15)              \
    X(cuMemsetD8Async, 16)             \
    X(cuMemsetD16Async, 17)            \
    X(cuMemsetD32Async, 18)            \
    X(cuStreamCreate, 19)              \
    X(cuStreamCreateWithPriority, 20)  \
    X(cuStreamDestroy_v2, 21)          \
    X(cuStreamSynchronize, 22)         \
    X(cuStreamQuery, 23)               \
    X(cuStreamWaitEvent, 24)           \
    X(cuEventCreate, 25)               \
    X(cuEventDestroy_v2, 26)           \
    X(cuEventRecord, 27)               \
    X(cuEventRecordWithFlags, 28)      \
    X(cuEventSynchronize, 29)          \
    X(cuEventQuery, 30)                \
    X(cuCtxSynchronize, 31)            \
    X(cuCtxSynchronize_v2, 32)         \
    X(cuLaunchKernel, 33)              \
    X(cuLaunchKernelEx, 34)            \
    X(cuLaunchCooperativeKernel, 35)   \
    X(cuModuleLoad, 36)                \
    X(cuModuleLoadData, 37)            \
    X(cuModuleLoadDataEx, 38)          \
    X(cuModuleLoadFatBinary, 39)       \
    X(cuLibraryLoadData, 40)           \
    X(cuLibraryLoadFromFile, 41)       \
    X(cuModuleGetGlobal_v2, 42)        \
    X(cuMemAllocFromPoolAsync, 43)     \
    X(cuMemAllocPitch_v2, 44)          \
    X(cuMemMap, 45)                    \
    X(cuMemUnmap, 46)                  \
    X(cuLibraryGetGlobal, 47)          \
    X(cuStreamDestroy, 48)             \
    X(cuEventDestroy, 49)              \
    X(cuFuncSetAttribute, 50)          \
    X(cuKernelSetAttribute, 51)        \
    X(cuStreamBeginCapture_v2, 52)     \
    X(cuStreamEndCapture, 53)          \
    X(cuGraphInstantiateWithFlags, 54) \
    X(cuGraphLaunch, 55)               \
    X(cuGraphDestroy, 56)              \
    X(cuGraphExecDestroy, 57)

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
    SBT_CUDA_ALLOC_GLOBAL = 2, /* cuModuleGetGlobal / cuLibraryGetGlobal: (program, name) */
    SBT_CUDA_ALLOC_POOL = 3,   /* cuMemAllocFromPoolAsync */
    SBT_CUDA_ALLOC_PITCH = 4,  /* cuMemAllocPitch: size = pitch x height */
    SBT_CUDA_ALLOC_VMM = 5,    /* cuMemMap of a cuMemCreate allocation, until cuMemUnmap */
};

/* Bytes of a module image passed to cuModuleLoadData / cuLibraryLoadData, which carry no
 * length: a __fatBinC_Wrapper_t (magic 0x466243B1, version 1; the fatbin it points to is
 * returned through *image), a fatbin (0xBA55ED50 headers, concatenated), an ELF cubin (to the
 * end of its section and program header tables and sections), or NUL-terminated text (PTX,
 * the fake driver's images; the NUL is counted). *image may be moved to the bytes to store.
 * Returns the length, or 0 when the image is not recognised (a version-2 RDC wrapper). *kind
 * receives an enum sbt_program_kind. The caller must trust the pointer: the driver reads it. */
size_t sbt_cuda_image_size(const void **image, uint32_t *kind);
/* The same rules for an image read from a file (a program blob), before it is handed to a
 * driver that takes no length: every read stays inside [image, image + len), and a
 * __fatBinC_Wrapper_t (it holds a pointer) is refused. Returns the image's own length, which is
 * <= len, or 0 when image is not a complete image. */
size_t sbt_cuda_image_size_in(const void *image, size_t len, uint32_t *kind);

/* Writes a CUDA payload as text, one record per line, for `reprise view` and tests. */
int sbt_cuda_dump(const void *buf, size_t len, void (*line)(void *ctx, const char *s), void *ctx);

/* ========================================================================================== */
/* Decoding for replay: every value from the file checked before it can reach a driver          */
/* ========================================================================================== */

/* Kernel parameters a launch may carry (the driver's limit since CUDA 12.1 on Volta and later;
 * older devices take 4 KiB, which the driver itself refuses cleanly). */
#define SBT_CUDA_MAX_PARAM_BYTES 32764u
#define SBT_CUDA_MAX_PARAMS      4096u
#define SBT_CUDA_MAX_EVENT       (1u << 24) /* event ids are dense from 1 */

/* A kernel row's parameter layout (its KERNEL ext). */
struct sbt_cuda_layout {
    int known;            /* the capture knew the layout (cuFuncGetParamInfo) */
    uint32_t n_params;    /* <= SBT_CUDA_MAX_PARAMS */
    uint32_t *off, *size; /* bytes, off[i] + size[i] <= SBT_CUDA_MAX_PARAM_BYTES; owned */
    uint64_t param_bytes; /* max of off + size */
};
/* Decodes and checks a kernel row's ext (any kind but SBT_CUDA_EXT_KERNEL: an unknown layout).
 * 0 with *out set (free with sbt_cuda_layout_free), or SBT_ECORRUPT / SBT_ENOMEM with a
 * message and *out empty. */
int sbt_cuda_layout_decode(const struct sbt_kernel *k, struct sbt_cuda_layout *out);
void sbt_cuda_layout_free(struct sbt_cuda_layout *l);

/* What a replaying device allows; 0 = not known (only CUDA's own maxima are checked). */
struct sbt_cuda_limits {
    uint32_t max_grid[3], max_block[3], max_threads; /* per launch, per block */
    uint32_t max_shmem;                              /* dynamic shared memory per block */
    uint64_t max_alloc;                              /* bytes of device memory */
};

/* What an op is checked against: the trace's tables and the replay's live resources. */
struct sbt_cuda_view {
    const struct sbt_cuda_layout *kernels; /* by kernel id - 1 */
    uint32_t n_kernels, n_programs, n_streams;
    /* 1 with *size (bytes) when resource id is live in the replay, 0 when it is not. */
    int (*resource)(void *ctx, uint64_t id, uint64_t *size);
    void *ctx;
    struct sbt_cuda_limits lim;
};

/* A device address to write into a launch's parameters: the replay address of (resource,
 * res_off) at byte off of the parameter buffer. */
struct sbt_cuda_reloc {
    uint64_t off, resource, res_off;
};

/* Function or launch attributes one launch may carry: more is a corrupt trace. */
#define SBT_CUDA_MAX_ATTRS 16u

/* An op as replay executes it. Access pointers point into the op; the rest is owned. */
struct sbt_cuda_op {
    uint32_t api; /* CALL: enum sbt_cuda_api (0 without a CALL record) */
    int pt;       /* CALL: the _ptsz / _ptds variant */
    /* ALLOC: origin, bytes to allocate (>= 1), program and global name (origin GLOBAL) */
    uint32_t origin, program;
    uint64_t size;
    char name[256];
    /* COPY: the written and read ranges (NULL where the direction has none); FILL: dst */
    const struct sbt_access *dst, *src;
    /* FILL: element size (1, 2, 4) and count; count * elem = dst->len */
    uint32_t elem;
    uint64_t count;
    /* KERNEL: form (0 kernelParams at the layout's offsets, 1 an extra buffer), the packed
     * parameters (param_len bytes, each parameter of the layout inside them) and the
     * relocations, each an 8-byte word inside them pointing inside a live resource */
    uint32_t form;
    uint8_t *params;
    uint64_t param_len;
    struct sbt_cuda_reloc *relocs;
    uint32_t n_relocs;
    /* KERNEL: the function attributes to set before the launch (FUNC_ATTR) and the launch
     * attributes to launch with (LAUNCH_ATTR: id, then the 64-byte CUlaunchAttributeValue) */
    struct {
        uint32_t id;
        int32_t value;
    } fattr[SBT_CUDA_MAX_ATTRS];
    uint32_t n_fattr;
    struct {
        uint32_t id;
        uint8_t value[64];
    } lattr[SBT_CUDA_MAX_ATTRS];
    uint32_t n_lattr;
};

/* Decodes op (a CUDA op: its fields, accesses and SBT_CUDA_PAYLOAD) and checks every value
 * replay will hand to a driver against v: stream, event, kernel and program ids; every access
 * inside a live resource; copy and fill ranges, element sizes and counts; launch geometry and
 * shared memory against the limits; the parameter buffer against the kernel's layout and
 * SBT_CUDA_MAX_PARAM_BYTES; every relocation inside the buffer and inside its resource;
 * allocation sizes; name lengths. Needs no device. 0 with *out set (free with
 * sbt_cuda_op_free), or SBT_ECORRUPT (inconsistent values, or past CUDA's own maxima),
 * SBT_EINVAL (a reference to something not live: a resource, a kernel), SBT_ELIMIT (within
 * CUDA's maxima but past this device's limits: the trace is fine, the device cannot run it),
 * SBT_ENOMEM, with a message; *out is then empty. */
int sbt_cuda_op_decode(const struct sbt_cuda_view *v, const struct sbt_op *op,
                       struct sbt_cuda_op *out);
void sbt_cuda_op_free(struct sbt_cuda_op *o);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SBT_CUDA_H */
