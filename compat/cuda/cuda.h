/*
 * compat/cuda/cuda.h — a minimal declaration header for the CUDA Driver API: only the types,
 * constants and entry points that reprise's CUDA shim, replay backend, fake driver and test
 * programs use, so that the CUDA parts build where no CUDA toolkit is installed (a fresh Debian
 * 12: its nvidia-cuda-dev is in non-free and 11.x). The Makefile uses it only when
 * $(CUDA_HOME)/include/cuda.h is absent; with a toolkit present the real header is used and the
 * compiler checks every wrapper against NVIDIA's prototypes.
 *
 * Written for reprise from the ABI facts in research/cuda.md (CUDA 13.0, x86-64/aarch64 LP64):
 * handles are pointers to opaque structs, CUdeviceptr is 64-bit, enums are int-sized, a
 * CUlaunchAttribute is an 8-byte id slot plus a 64-byte value union. No NVIDIA header text.
 *
 * Naming follows cuda.h: with __CUDA_API_VERSION_INTERNAL defined (the shim and the fake, which
 * define every exported variant), each exact exported name is declared and no renaming macro is
 * active. Otherwise the public names map to the current ABI variants (cuMemAlloc ->
 * cuMemAlloc_v2, and to _ptds/_ptsz under CUDA_API_PER_THREAD_DEFAULT_STREAM) as in cuda.h.
 */
#ifndef REPRISE_COMPAT_CUDA_H
#define REPRISE_COMPAT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUDA_VERSION 13000
#define CUDAAPI

typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;

typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef unsigned int CUdeviceptr_v1;
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;

typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUctxCreateParams_st CUctxCreateParams; /* only passed through, by pointer */
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef unsigned long long CUmemGenericAllocationHandle;

typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_FILE_NOT_FOUND = 301,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_UNKNOWN = 999
} CUresult;

typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
} CUdevice_attribute;

/* ---- memory: pointer attributes, pools, virtual memory, IPC, host memory ------------------- */

typedef enum CUmemorytype_enum {
    CU_MEMORYTYPE_HOST = 1,
    CU_MEMORYTYPE_DEVICE = 2,
    CU_MEMORYTYPE_ARRAY = 3,
    CU_MEMORYTYPE_UNIFIED = 4
} CUmemorytype;

typedef enum CUpointer_attribute_enum {
    CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2, /* unsigned int (CUmemorytype) */
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
    CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
    CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11, /* CUdeviceptr */
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,       /* size_t */
    CU_POINTER_ATTRIBUTE_MAPPED = 13
} CUpointer_attribute;

typedef enum CUmemAttach_flags_enum {
    CU_MEM_ATTACH_GLOBAL = 1,
    CU_MEM_ATTACH_HOST = 2
} CUmemAttach_flags;
#define CU_MEMHOSTALLOC_PORTABLE     0x01
#define CU_MEMHOSTALLOC_DEVICEMAP    0x02
#define CU_MEMHOSTREGISTER_PORTABLE  0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02

typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0,
    CU_MEM_LOCATION_TYPE_DEVICE = 1
} CUmemLocationType;
typedef enum CUmemAllocationType_enum {
    CU_MEM_ALLOCATION_TYPE_INVALID = 0,
    CU_MEM_ALLOCATION_TYPE_PINNED = 1
} CUmemAllocationType;
typedef enum CUmemAllocationHandleType_enum {
    CU_MEM_HANDLE_TYPE_NONE = 0
} CUmemAllocationHandleType;
typedef enum CUmemAccess_flags_enum {
    CU_MEM_ACCESS_FLAGS_PROT_NONE = 0,
    CU_MEM_ACCESS_FLAGS_PROT_READ = 1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
} CUmemAccess_flags;
typedef enum CUmemAllocationGranularity_flags_enum {
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1
} CUmemAllocationGranularity_flags;

typedef struct CUmemLocation_st {
    CUmemLocationType type;
    int id;
} CUmemLocation;
typedef struct CUmemAllocationProp_st {
    CUmemAllocationType type;
    CUmemAllocationHandleType requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;
typedef struct CUmemAccessDesc_st {
    CUmemLocation location;
    CUmemAccess_flags flags;
} CUmemAccessDesc;
typedef struct CUmemPoolProps_st {
    CUmemAllocationType allocType;
    CUmemAllocationHandleType handleTypes;
    CUmemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps;

#define CU_IPC_HANDLE_SIZE 64
typedef struct CUipcMemHandle_st {
    char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle;
typedef enum CUipcMem_flags_enum { CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1 } CUipcMem_flags;

typedef enum CUfunction_attribute_enum {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
} CUfunction_attribute;

typedef enum CUjit_option_enum { CU_JIT_MAX_REGISTERS = 0 } CUjit_option;
typedef enum CUlibraryOption_enum {
    CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0,
    CU_LIBRARY_BINARY_IS_PRESERVED = 1
} CUlibraryOption;

typedef enum CUdriverProcAddress_flags_enum {
    CU_GET_PROC_ADDRESS_DEFAULT = 0,
    CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0,
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1
} CUdriverProcAddress_flags;

typedef enum CUdriverProcAddressQueryResult_enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

#define CU_STREAM_LEGACY        ((CUstream)0x1)
#define CU_STREAM_PER_THREAD    ((CUstream)0x2)
#define CU_STREAM_DEFAULT       0x0
#define CU_STREAM_NON_BLOCKING  0x1
#define CU_EVENT_DEFAULT        0x0
#define CU_EVENT_BLOCKING_SYNC  0x1
#define CU_EVENT_DISABLE_TIMING 0x2

#define CU_LAUNCH_PARAM_END_AS_INT            0x00
#define CU_LAUNCH_PARAM_END                   ((void *)CU_LAUNCH_PARAM_END_AS_INT)
#define CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT 0x01
#define CU_LAUNCH_PARAM_BUFFER_POINTER        ((void *)CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT)
#define CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT    0x02
#define CU_LAUNCH_PARAM_BUFFER_SIZE           ((void *)CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT)

typedef enum CUlaunchAttributeID_enum {
    CU_LAUNCH_ATTRIBUTE_IGNORE = 0,
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
    CU_LAUNCH_ATTRIBUTE_PRIORITY = 8
} CUlaunchAttributeID;

/* 64 bytes; reprise copies the value bytes and never interprets more than the ints below. */
typedef union CUlaunchAttributeValue_union {
    char pad[64];
    int cooperative;
    int priority;
    struct {
        unsigned int x, y, z;
    } clusterDim;
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
    CUlaunchAttributeID id;
    char pad[8 - sizeof(CUlaunchAttributeID)];
    CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;

/* ---- entry points: exact exported names ----------------------------------------------------- */

CUresult cuInit(unsigned int Flags);
CUresult cuDriverGetVersion(int *driverVersion);
CUresult cuGetErrorString(CUresult error, const char **pStr);
CUresult cuGetErrorName(CUresult error, const char **pStr);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus);
CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId);

CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                        CUdevice dev);
CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetCurrent(CUcontext *pctx);
CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuCtxSynchronize(void);
CUresult cuCtxSynchronize_v2(CUcontext ctx);

CUresult cuModuleLoad(CUmodule *module, const char *fname);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues);
CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin);
CUresult cuModuleUnload(CUmodule hmod);
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name);
CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                           void **jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions);
CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions,
                               CUlibraryOption *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions);
CUresult cuLibraryUnload(CUlibrary library);
CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name);
CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library);
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel);
CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                            size_t *paramSize);
CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                              size_t *paramSize);

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);

#define REPRISE__CUDA_COPY_DECLS(sfx, asfx)                                                        \
    CUresult cuMemcpy##sfx(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);                    \
    CUresult cuMemcpyHtoD_v2##sfx(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);   \
    CUresult cuMemcpyDtoH_v2##sfx(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);         \
    CUresult cuMemcpyDtoD_v2##sfx(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount); \
    CUresult cuMemsetD8_v2##sfx(CUdeviceptr dstDevice, unsigned char uc, size_t N);                \
    CUresult cuMemsetD16_v2##sfx(CUdeviceptr dstDevice, unsigned short us, size_t N);              \
    CUresult cuMemsetD32_v2##sfx(CUdeviceptr dstDevice, unsigned int ui, size_t N);                \
    CUresult cuMemcpyAsync##asfx(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,               \
                                 CUstream hStream);                                                \
    CUresult cuMemcpyHtoDAsync_v2##asfx(CUdeviceptr dstDevice, const void *srcHost,                \
                                        size_t ByteCount, CUstream hStream);                       \
    CUresult cuMemcpyDtoHAsync_v2##asfx(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,    \
                                        CUstream hStream);                                         \
    CUresult cuMemcpyDtoDAsync_v2##asfx(CUdeviceptr dstDevice, CUdeviceptr srcDevice,              \
                                        size_t ByteCount, CUstream hStream);                       \
    CUresult cuMemsetD8Async##asfx(CUdeviceptr dstDevice, unsigned char uc, size_t N,              \
                                   CUstream hStream);                                              \
    CUresult cuMemsetD16Async##asfx(CUdeviceptr dstDevice, unsigned short us, size_t N,            \
                                    CUstream hStream);                                             \
    CUresult cuMemsetD32Async##asfx(CUdeviceptr dstDevice, unsigned int ui, size_t N,              \
                                    CUstream hStream);                                             \
    CUresult cuStreamSynchronize##asfx(CUstream hStream);                                          \
    CUresult cuStreamQuery##asfx(CUstream hStream);                                                \
    CUresult cuStreamWaitEvent##asfx(CUstream hStream, CUevent hEvent, unsigned int Flags);        \
    CUresult cuEventRecord##asfx(CUevent hEvent, CUstream hStream);                                \
    CUresult cuEventRecordWithFlags##asfx(CUevent hEvent, CUstream hStream, unsigned int flags);   \
    CUresult cuLaunchKernel##asfx(                                                                 \
        CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);         \
    CUresult cuLaunchKernelEx##asfx(const CUlaunchConfig *config, CUfunction f,                    \
                                    void **kernelParams, void **extra);                            \
    CUresult cuLaunchCooperativeKernel##asfx(                                                      \
        CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams);
REPRISE__CUDA_COPY_DECLS(, )
REPRISE__CUDA_COPY_DECLS(_ptds, _ptsz)
#undef REPRISE__CUDA_COPY_DECLS

typedef enum CUstreamWaitValue_flags_enum {
    CU_STREAM_WAIT_VALUE_GEQ = 0x0,
    CU_STREAM_WAIT_VALUE_EQ = 0x1,
    CU_STREAM_WAIT_VALUE_AND = 0x2,
    CU_STREAM_WAIT_VALUE_NOR = 0x3,
    CU_STREAM_WAIT_VALUE_FLUSH = 1 << 30
} CUstreamWaitValue_flags;
typedef enum CUstreamWriteValue_flags_enum {
    CU_STREAM_WRITE_VALUE_DEFAULT = 0x0,
    CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER = 0x1
} CUstreamWriteValue_flags;
#define REPRISE__CUDA_VALUE_DECLS(v, sfx)                                                      \
    CUresult cuStreamWaitValue32##v##sfx(CUstream stream, CUdeviceptr addr, cuuint32_t value,  \
                                         unsigned int flags);                                  \
    CUresult cuStreamWaitValue64##v##sfx(CUstream stream, CUdeviceptr addr, cuuint64_t value,  \
                                         unsigned int flags);                                  \
    CUresult cuStreamWriteValue32##v##sfx(CUstream stream, CUdeviceptr addr, cuuint32_t value, \
                                          unsigned int flags);                                 \
    CUresult cuStreamWriteValue64##v##sfx(CUstream stream, CUdeviceptr addr, cuuint64_t value, \
                                          unsigned int flags);
REPRISE__CUDA_VALUE_DECLS(, )
REPRISE__CUDA_VALUE_DECLS(, _ptsz)
REPRISE__CUDA_VALUE_DECLS(_v2, )
REPRISE__CUDA_VALUE_DECLS(_v2, _ptsz)
#undef REPRISE__CUDA_VALUE_DECLS

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags);
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority);
CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags);
CUresult cuEventDestroy_v2(CUevent hEvent);
CUresult cuEventSynchronize(CUevent hEvent);
CUresult cuEventQuery(CUevent hEvent);
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd);

CUresult cuStreamDestroy(CUstream hStream);
CUresult cuEventDestroy(CUevent hEvent);
CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value);
CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev);
typedef enum CUlimit_enum { CU_LIMIT_STACK_SIZE = 0 } CUlimit;
CUresult cuCtxSetLimit(CUlimit limit, size_t value);
CUresult cuFuncGetName(const char **name, CUfunction hfunc);
CUresult cuKernelGetName(const char **name, CUkernel hfunc);
CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod);
CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions, CUmodule mod);
CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib);
CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib);
CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name);

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                void **data, CUdeviceptr ptr);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
CUresult cuMemFreeHost(void *p);
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev);
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps);
CUresult cuMemPoolDestroy(CUmemoryPool pool);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream);
CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option);
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags);
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr);
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr);

/* Stream capture and graphs (what the shim wraps and the fake driver implements) */
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef enum CUstreamCaptureMode_enum {
    CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;
typedef enum CUgraphInstantiateResult_enum {
    CUDA_GRAPH_INSTANTIATE_SUCCESS = 0
} CUgraphInstantiateResult;
typedef struct CUDA_GRAPH_INSTANTIATE_PARAMS_st {
    uint64_t flags;
    CUstream hUploadStream;
    CUgraphNode hErrNode_out;
    CUgraphInstantiateResult result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;
CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuStreamBeginCapture_ptsz(CUstream hStream);
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);
CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags);
CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                             const CUgraphNode *dependencies, size_t numDependencies);
CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                            char *logBuffer, size_t bufferSize);
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                               char *logBuffer, size_t bufferSize);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags);
CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphDestroy(CUgraph hGraph);
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec);

/* ---- public names -> current ABI variants (as cuda.h maps them) ---------------------------- */
#ifndef __CUDA_API_VERSION_INTERNAL
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define REPRISE__PTDS(api) api##_ptds
#define REPRISE__PTSZ(api) api##_ptsz
#else
#define REPRISE__PTDS(api) api
#define REPRISE__PTSZ(api) api
#endif
#define cuGetProcAddress             cuGetProcAddress_v2
#define cuDeviceTotalMem             cuDeviceTotalMem_v2
#define cuDevicePrimaryCtxRelease    cuDevicePrimaryCtxRelease_v2
#define cuCtxCreate                  cuCtxCreate_v4
#define cuCtxDestroy                 cuCtxDestroy_v2
#define cuModuleGetGlobal            cuModuleGetGlobal_v2
#define cuMemAlloc                   cuMemAlloc_v2
#define cuMemFree                    cuMemFree_v2
#define cuMemAllocPitch              cuMemAllocPitch_v2
#define cuMemAllocHost               cuMemAllocHost_v2
#define cuMemHostRegister            cuMemHostRegister_v2
#define cuMemHostGetDevicePointer    cuMemHostGetDevicePointer_v2
#define cuIpcOpenMemHandle           cuIpcOpenMemHandle_v2
#define cuMemAllocFromPoolAsync      REPRISE__PTSZ(cuMemAllocFromPoolAsync)
#define cuStreamDestroy              cuStreamDestroy_v2
#define cuEventDestroy               cuEventDestroy_v2
#define cuEventElapsedTime           cuEventElapsedTime_v2
#define cuMemcpy                     REPRISE__PTDS(cuMemcpy)
#define cuMemcpyHtoD                 REPRISE__PTDS(cuMemcpyHtoD_v2)
#define cuMemcpyDtoH                 REPRISE__PTDS(cuMemcpyDtoH_v2)
#define cuMemcpyDtoD                 REPRISE__PTDS(cuMemcpyDtoD_v2)
#define cuMemsetD8                   REPRISE__PTDS(cuMemsetD8_v2)
#define cuMemsetD16                  REPRISE__PTDS(cuMemsetD16_v2)
#define cuMemsetD32                  REPRISE__PTDS(cuMemsetD32_v2)
#define cuMemcpyAsync                REPRISE__PTSZ(cuMemcpyAsync)
#define cuMemcpyHtoDAsync            REPRISE__PTSZ(cuMemcpyHtoDAsync_v2)
#define cuMemcpyDtoHAsync            REPRISE__PTSZ(cuMemcpyDtoHAsync_v2)
#define cuMemcpyDtoDAsync            REPRISE__PTSZ(cuMemcpyDtoDAsync_v2)
#define cuMemsetD8Async              REPRISE__PTSZ(cuMemsetD8Async)
#define cuMemsetD16Async             REPRISE__PTSZ(cuMemsetD16Async)
#define cuMemsetD32Async             REPRISE__PTSZ(cuMemsetD32Async)
#define cuMemAllocAsync              REPRISE__PTSZ(cuMemAllocAsync)
#define cuMemFreeAsync               REPRISE__PTSZ(cuMemFreeAsync)
#define cuStreamSynchronize          REPRISE__PTSZ(cuStreamSynchronize)
#define cuStreamQuery                REPRISE__PTSZ(cuStreamQuery)
#define cuStreamWaitEvent            REPRISE__PTSZ(cuStreamWaitEvent)
#define cuEventRecord                REPRISE__PTSZ(cuEventRecord)
#define cuEventRecordWithFlags       REPRISE__PTSZ(cuEventRecordWithFlags)
#define cuStreamWaitValue32          REPRISE__PTSZ(cuStreamWaitValue32_v2)
#define cuStreamWaitValue64          REPRISE__PTSZ(cuStreamWaitValue64_v2)
#define cuStreamWriteValue32         REPRISE__PTSZ(cuStreamWriteValue32_v2)
#define cuStreamWriteValue64         REPRISE__PTSZ(cuStreamWriteValue64_v2)
#define cuLaunchKernel               REPRISE__PTSZ(cuLaunchKernel)
#define cuLaunchKernelEx             REPRISE__PTSZ(cuLaunchKernelEx)
#define cuLaunchCooperativeKernel    REPRISE__PTSZ(cuLaunchCooperativeKernel)
#define cuStreamBeginCapture         REPRISE__PTSZ(cuStreamBeginCapture_v2)
#define cuStreamEndCapture           REPRISE__PTSZ(cuStreamEndCapture)
#define cuGraphInstantiate           cuGraphInstantiateWithFlags
#define cuGraphInstantiateWithParams REPRISE__PTSZ(cuGraphInstantiateWithParams)
#define cuGraphLaunch                REPRISE__PTSZ(cuGraphLaunch)
#endif

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_COMPAT_CUDA_H */
