/*
 * format/sbt_vk.h — the Vulkan typed payloads of a trace: what the capture layer (capture/)
 * writes into `struct sbt_ext` rows and op payloads so that replay (replay/) can re-execute a
 * captured compute stream bit for bit. Both sides use this one codec so they cannot drift.
 *
 * Encoding. A Vulkan payload (an ext of kind SBT_VK_EXT_* or an op payload of kind
 * SBT_VK_PAYLOAD) is a sequence of records:
 *
 *     | field   | size   | meaning                                        |
 *     | call    | varint | enum sbt_vk_call: what the record describes    |
 *     | n_arg   | varint | number of integer arguments (<= 1 << 20)       |
 *     | arg[i]  | varint | n_arg unsigned 64-bit arguments                |
 *     | n_bytes | varint | length of the byte argument (<= 1 << 26)       |
 *     | bytes   | n_bytes| push constants, specialization data, names     |
 *
 * The argument layout of each call is documented at its enum value below; arrays are a count
 * followed by fixed-size tuples. A reader skips calls it does not know and ignores arguments
 * past those it knows (a newer capture may append some), so the layout may only grow at the
 * end. Object references are capture ids: 64-bit numbers the layer assigns to every Vulkan
 * object it tracks (one id space for all object types, never reused in a trace, 0 = none).
 * Device memory allocations are the trace's resources: a VkDeviceMemory's capture id is the
 * resource id of its ALLOC op, and accesses name (memory, offset in memory, length) — a
 * buffer range [a, a+n) of a buffer bound at memory offset M is (memory, M + a, n).
 *
 * Where each payload goes (capture/cap_vk_*.c write them, replay reads them):
 *   device row ext        kind SBT_VK_EXT_DEVICE:   DEVICE, MEMORY_TYPE*, MEMORY_HEAP*,
 *                                                   QUEUE_FAMILY*, QUEUE_CREATE*, EXTENSION*,
 *                                                   FEATURES*, DEVICE_CHAIN*, ADDRESS_REPLAY
 *   program row ext       kind SBT_VK_EXT_MODULE:   MODULE, MODULE_BINDING*, ENTRY_POINT*
 *   kernel row ext        kind SBT_VK_EXT_PIPELINE: PIPELINE, SPEC_ENTRY*, PIPELINE_LAYOUT,
 *                                                   SET_LAYOUT* (+ SET_BINDING* after each)
 *   op payloads           kind SBT_VK_PAYLOAD:      one of the op records below
 *   command-buffer blobs  (op SUBMIT references)    SBT_VK_RECORDING magic + CMD_* records
 *
 * Ops the layer writes (op kind: payload call):
 *   ALLOC      MEMORY                FREE            DESTROY (type MEMORY)
 *   MARKER     CREATE_BUFFER, BIND_BUFFER, CREATE_BUFFER_VIEW, SET_LAYOUT (+SET_BINDING*),
 *              PIPELINE_LAYOUT, ALLOC_SET, WRITE_SET*, COPY_SET*, CREATE_SYNC, RESET_SYNC,
 *              DESTROY, BUFFER_ADDRESS — API state changes with no device effect, in API
 *              order. The op name is the Vulkan command ("vkCreateBuffer").
 *   SUBMIT     SUBMIT, then per batch BATCH, WAIT_SEM*, CMDBUF*, SIGNAL_SEM*
 *   KERNEL     DISPATCH (+ BINDING*): self-contained (pipeline, resolved descriptors, push
 *              constants), so one dispatch can be replayed on its own. Descriptors bound in
 *              sets (dynamic offsets applied), pushed, or written through templates all end up
 *              as BINDING records. A shader that dereferences device addresses has, besides its
 *              bindings' accesses, one to every buffer with an address (MODULE says so)
 *   COPY       COPY_BUFFER / UPDATE_BUFFER (op.blob = the update bytes)   FILL   FILL_BUFFER
 *   HOST_WRITE / HOST_READ / SIGNAL / WAIT / EVENT_* / *_SYNC: no payload needed, or a
 *              SYNC_INFO record for queue-side waits (stage mask)
 */
#ifndef REPRISE_SBT_VK_H
#define REPRISE_SBT_VK_H

#include <stddef.h>
#include <stdint.h>

#include "format/sbt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of struct sbt_ext / op payloads (format kinds are < 0x100). */
enum sbt_vk_kind {
    SBT_VK_EXT_DEVICE = 0x1001,   /* struct sbt_device.ext */
    SBT_VK_EXT_MODULE = 0x1002,   /* struct sbt_program.ext */
    SBT_VK_EXT_PIPELINE = 0x1003, /* struct sbt_kernel.ext */
    SBT_VK_EXT_QUEUE = 0x1004,    /* struct sbt_stream.ext: QUEUE */
    SBT_VK_PAYLOAD = 0x1010,      /* struct sbt_op.payload */
};

/* First 8 bytes of a command-buffer recording blob; CMD_* records follow. */
#define SBT_VK_RECORDING_MAGIC     "RPVKCMD1"
#define SBT_VK_RECORDING_MAGIC_LEN 8

/* Object types for DESTROY and the obj_type arguments: the VkObjectType values. */

/* Record calls. "id" = capture id. Arrays: count, then tuples. */
#define SBT_VK_CALL_MAP(X)                                                                         \
    /* ---- device ext ---------------------------------------------------------------------- */   \
    /* api_version, driver_version, vendor_id, device_id, device_type, timestamp_valid_bits,       \
       max_compute_shared_memory, max_push_constants, min_storage_buffer_offset_alignment,         \
       non_coherent_atom_size, device id; bytes: deviceName */                                     \
    X(DEVICE, 1)                                                                                   \
    X(MEMORY_TYPE, 2)  /* index, VkMemoryPropertyFlags, heap index */                              \
    X(MEMORY_HEAP, 3)  /* index, size, VkMemoryHeapFlags */                                        \
    X(QUEUE_FAMILY, 4) /* index, VkQueueFlags, queueCount, timestampValidBits */                   \
    X(QUEUE_CREATE, 5) /* family, count, VkDeviceQueueCreateFlags (what the app created) */        \
    X(EXTENSION, 6)    /* bytes: an enabled device extension name */                               \
    /* FEATURES: sType of the features struct (0 = VkPhysicalDeviceFeatures), count of VkBool32    \
       fields, then one argument per field (0/1) in declaration order */                           \
    X(FEATURES, 7)                                                                                 \
    X(QUEUE, 8) /* queue id, family, index, device id */                                           \
    /* DEVICE_CHAIN: sType of a structure in VkDeviceCreateInfo's pNext chain that is not a        \
       features structure (replay does not rebuild it; the capture counts it as unmodelled) */     \
    X(DEVICE_CHAIN, 9)                                                                             \
    /* ADDRESS_REPLAY: 1 = bufferDeviceAddressCaptureReplay was on (the layer turns it on where    \
       the program enables bufferDeviceAddress and the device offers it): buffers and memory       \
       with device addresses carry opaque capture addresses (CREATE_BUFFER, MEMORY) */             \
    X(ADDRESS_REPLAY, 10)                                                                          \
    /* ---- program ext: SPIR-V reflection ------------------------------------------------- */    \
    /* module id, VkShaderModuleCreateFlags, code bytes, reflection ok (0/1), device addresses:    \
       the enum sbt_access_mode the shader may apply through PhysicalStorageBuffer pointers (0 =   \
       none; missing in older traces: 0) */                                                        \
    X(MODULE, 16)                                                                                  \
    /* set, binding, access (enum sbt_access_mode the shader allows: NonWritable -> READ,          \
       NonReadable -> WRITE, else RW), storage class (SPIR-V), array size (0 = runtime) */         \
    X(MODULE_BINDING, 17)                                                                          \
    /* local size x, y, z (literal or default), spec id x, y, z (UINT32_MAX = none);               \
       bytes: entry point name */                                                                  \
    X(ENTRY_POINT, 18)                                                                             \
    /* ---- kernel ext: compute pipeline ---------------------------------------------------- */   \
    /* pipeline id, VkPipelineCreateFlags, module id, layout id, shader stage (the                 \
       VkShaderStageFlagBits), resolved local size x, y, z, required subgroup size (0 = none),     \
       pipeline cache id (0: not recorded, replay uses none), VkPipelineShaderStageCreateFlags,    \
       VkPipelineCreateFlags2 and whether a VkPipelineCreateFlags2CreateInfo gave them (1: they    \
       replace the VkPipelineCreateFlags); bytes: specialization data. The module may have been    \
       chained into the stage (maintenance5): it has its program row all the same */               \
    X(PIPELINE, 32)                                                                                \
    X(SPEC_ENTRY, 33) /* constantID, offset, size (into PIPELINE's bytes) */                       \
    /* layout id, flags, n sets, set layout ids..., n push ranges, (stages, offset, size)... */    \
    X(PIPELINE_LAYOUT, 34)                                                                         \
    X(SET_LAYOUT, 35) /* set layout id, flags, n bindings (SET_BINDING records follow) */          \
    /* binding, VkDescriptorType, descriptorCount, stageFlags, binding flags */                    \
    X(SET_BINDING, 36)                                                                             \
    /* ---- state ops (MARKER / ALLOC) -------------------------------------------------------- */ \
    /* memory id, allocationSize, memoryTypeIndex, VkMemoryPropertyFlags of that type,             \
       VkMemoryAllocateFlags (as the program gave them), dedicated buffer id (0 = none), device    \
       id, opaque capture address (0 = none; see ADDRESS_REPLAY) */                                \
    X(MEMORY, 48)                                                                                  \
    /* buffer id, size, usage (VkBufferUsageFlags2 when the program gave those), flags (as the     \
       program gave them), sharingMode, n queue families, families..., device id, opaque capture   \
       address (0 = none; see ADDRESS_REPLAY) */                                                   \
    X(CREATE_BUFFER, 49)                                                                           \
    /* buffer id, memory id, memoryOffset, buffer size, memory requirements alignment */           \
    X(BIND_BUFFER, 50)                                                                             \
    X(CREATE_BUFFER_VIEW, 51) /* view id, buffer id, VkFormat, offset, range, flags */             \
    /* set id, set layout id, pool id, variable descriptor count */                                \
    X(ALLOC_SET, 52)                                                                               \
    /* set id, binding, array element, VkDescriptorType, n, then n x (buffer id, offset,           \
       range, buffer view id); an update template is recorded as the writes it amounts to.         \
       Images and samplers are not captured (counted unsupported) */                               \
    X(WRITE_SET, 53)                                                                               \
    /* src set, src binding, src element, dst set, dst binding, dst element, count */              \
    X(COPY_SET, 54)                                                                                \
    /* id, obj type (VkObjectType FENCE/SEMAPHORE/EVENT), flags, semaphore type (0 binary,         \
       1 timeline), initial value */                                                               \
    X(CREATE_SYNC, 55)                                                                             \
    X(RESET_SYNC, 56) /* obj type, n, ids... (vkResetFences, vkResetEvent) */                      \
    X(DESTROY, 57)    /* VkObjectType, id */                                                       \
    /* buffer id, device address vkGetBufferDeviceAddress gave the program (written the first      \
       time, and again if it changes) */                                                           \
    X(BUFFER_ADDRESS, 58)                                                                          \
    /* ---- submission ------------------------------------------------------------------------ */ \
    /* queue id, n batches, fence id (0 = none), 2 if vkQueueSubmit2 else 1 */                     \
    X(SUBMIT, 64)                                                                                  \
    X(BATCH, 65)      /* n waits, n command buffers, n signals, flags */                           \
    X(WAIT_SEM, 66)   /* semaphore id, value, stage mask (64-bit) */                               \
    X(SIGNAL_SEM, 67) /* semaphore id, value, stage mask */                                        \
    /* command buffer id, recording hash lo, hi (the blob with its CMD_* records), n ops it        \
       produced in this submission */                                                              \
    X(CMDBUF, 68)                                                                                  \
    X(SYNC_INFO, 69) /* stage mask; on queue-side WAIT / SIGNAL ops */                             \
    /* ---- per-op payloads (self-contained) ---------------------------------------------------   \
     */                                                                                            \
    /* pipeline id, layout id, base x, y, z, groups x, y, z, indirect buffer id (0 = direct),      \
       indirect offset, command buffer id, command index in its recording; bytes: the push         \
       constant block as set when the dispatch was recorded (offset 0 .. highest byte set).        \
       Indirect dispatches append: groups known (1 = read at submit from host-visible memory       \
       no unfinished device work writes; 0 = not known at capture: written by the device, or       \
       not mapped), groups x, y, z read (the op's grid too). Replay reads the indirect buffer      \
       it rebuilt either way; the counts are for view/analyze and for checking. */                 \
    X(DISPATCH, 80)                                                                                \
    /* set, binding, array element, VkDescriptorType, buffer id, memory id, offset in buffer       \
       (dynamic offset applied), range (resolved, never VK_WHOLE_SIZE), access mode */             \
    X(BINDING, 81)                                                                                 \
    /* src buffer, dst buffer, n regions, (src offset, dst offset, size)..., cmdbuf, index */      \
    X(COPY_BUFFER, 82)                                                                             \
    X(FILL_BUFFER, 83)   /* dst buffer, offset, size (resolved), data, cmdbuf, index */            \
    X(UPDATE_BUFFER, 84) /* dst buffer, offset, size, cmdbuf, index; bytes: the data */            \
    /* ---- command-buffer recordings (blob after SBT_VK_RECORDING_MAGIC) ------------------- */   \
    X(CMD_BEGIN, 96)         /* cmdbuf id, level (0 primary), usage flags */                       \
    X(CMD_BIND_PIPELINE, 97) /* bind point, pipeline id */                                         \
    /* bind point, layout id, first set, n sets, set ids..., n dynamic offsets, offsets... */      \
    X(CMD_BIND_SETS, 98)                                                                           \
    X(CMD_PUSH_CONSTANTS, 99)     /* layout id, stage flags, offset; bytes: values */              \
    X(CMD_DISPATCH, 100)          /* base x, y, z, groups x, y, z */                               \
    X(CMD_DISPATCH_INDIRECT, 101) /* buffer id, offset */                                          \
    X(CMD_COPY_BUFFER, 102)       /* src, dst, n regions, (src offset, dst offset, size)... */     \
    X(CMD_FILL_BUFFER, 103)       /* dst, offset, size (may be VK_WHOLE_SIZE), data */             \
    X(CMD_UPDATE_BUFFER, 104)     /* dst, offset, size; bytes: data */                             \
    /* src stages, dst stages (64-bit, v2 form), dependency flags, n memory barriers,              \
       (src stages, src access, dst stages, dst access)..., n buffer barriers, (src stages,        \
       src access, dst stages, dst access, src family, dst family, buffer id, offset, size)...     \
       ; image barriers are dropped (counted unsupported) */                                       \
    X(CMD_BARRIER, 105)                                                                            \
    X(CMD_SET_EVENT, 106)   /* event id, stage mask */                                             \
    X(CMD_RESET_EVENT, 107) /* event id, stage mask */                                             \
    /* n events, event ids..., then the CMD_BARRIER argument layout */                             \
    X(CMD_WAIT_EVENTS, 108)                                                                        \
    X(CMD_WRITE_TIMESTAMP, 109) /* stage, query pool id, query */                                  \
    X(CMD_RESET_QUERIES, 110)   /* query pool id, first, count */                                  \
    X(CMD_EXECUTE, 111)         /* n, secondary command buffer ids... */                           \
    X(CMD_UNSUPPORTED, 112)     /* bytes: the Vulkan command name */                               \
    X(CMD_END, 113)             /* number of records before it */                                  \
    /* push descriptors (vkCmdPushDescriptorSet*, plain or through a template, and the             \
       maintenance6 forms): bind point, layout id, set number, then writes to the end of the       \
       arguments, each in the layout of WRITE_SET after its set id (binding, array element,        \
       type, n, n tuples); they update the command buffer's push set for that set number */        \
    X(CMD_PUSH_SET, 114)

enum sbt_vk_call {
#define SBT_VK__ENUM(name, val) SBT_VK_##name = val,
    SBT_VK_CALL_MAP(SBT_VK__ENUM)
#undef SBT_VK__ENUM
};

/* "DISPATCH" for SBT_VK_DISPATCH; NULL for an unknown call. */
const char *sbt_vk_call_name(uint32_t call);

/* One decoded record. arg and bytes point into the decoder / source buffer. */
struct sbt_vk_rec {
    uint32_t call;
    uint32_t n_arg;
    const uint64_t *arg;
    uint32_t n_bytes;
    const uint8_t *bytes;
};
/* The i-th argument, or 0 past the end (older captures wrote fewer). */
static inline uint64_t sbt_vk_arg(const struct sbt_vk_rec *r, uint32_t i)
{
    return i < r->n_arg ? r->arg[i] : 0;
}

/* ---- encoder --------------------------------------------------------------------------------- */

/* A growable buffer of records. Zero-initialise it ({0}); errors are sticky: after an
 * allocation failure every call does nothing and sbt_vk_enc_status() returns SBT_ENOMEM. */
struct sbt_vk_enc {
    uint8_t *buf;
    size_t len, cap;
    uint64_t *args; /* arguments of the record being built */
    size_t n_args, cap_args;
    uint32_t call; /* record being built, 0 = none */
    int status;
};
/* Starts a record; add arguments with sbt_vk_enc_arg, finish with sbt_vk_enc_end. */
void sbt_vk_enc_begin(struct sbt_vk_enc *e, uint32_t call);
void sbt_vk_enc_arg(struct sbt_vk_enc *e, uint64_t v);
void sbt_vk_enc_end(struct sbt_vk_enc *e, const void *bytes, size_t n_bytes);
/* A whole record in one call. */
void sbt_vk_enc_rec(struct sbt_vk_enc *e, uint32_t call, const uint64_t *arg, size_t n_arg,
                    const void *bytes, size_t n_bytes);
/* Appends raw bytes (the recording magic). */
void sbt_vk_enc_raw(struct sbt_vk_enc *e, const void *bytes, size_t n);
int sbt_vk_enc_status(const struct sbt_vk_enc *e);
/* Forgets the contents, keeps the memory. */
void sbt_vk_enc_reset(struct sbt_vk_enc *e);
/* Frees the buffers; the struct may be reused after. */
void sbt_vk_enc_free(struct sbt_vk_enc *e);

/* ---- decoder --------------------------------------------------------------------------------- */

struct sbt_vk_dec {
    const uint8_t *buf;
    size_t len, pos;
    uint64_t *args;
    size_t cap_args;
};
/* Borrows buf (must outlive the decoder's records). */
void sbt_vk_dec_init(struct sbt_vk_dec *d, const void *buf, size_t len);
/* 1 with *out set (valid until the next call), 0 at the end, SBT_ECORRUPT / SBT_ENOMEM with
 * a message naming the offset. */
int sbt_vk_dec_next(struct sbt_vk_dec *d, struct sbt_vk_rec *out);
void sbt_vk_dec_free(struct sbt_vk_dec *d);
/* Finds the first record of a call in a payload: 1 found (*out valid while d lives), 0 not,
 * < 0 corrupt. Initialises d; call sbt_vk_dec_free(d) after. */
int sbt_vk_find(struct sbt_vk_dec *d, const void *buf, size_t len, uint32_t call,
                struct sbt_vk_rec *out);

/* Writes the records of a payload as text, one per line ("DISPATCH 3 2 0 0 0 ..."), for
 * `reprise view` and tests. Returns 0 or a status. */
int sbt_vk_dump(const void *buf, size_t len, void (*line)(void *ctx, const char *s), void *ctx);

/* ---- Features structures (generated from the Vulkan registry, vk.xml) ---------------------
 * Every structure that extends VkPhysicalDeviceFeatures2 and VkDeviceCreateInfo holds sType,
 * pNext and then only VkBool32 members; VkPhysicalDeviceFeatures2 holds one
 * VkPhysicalDeviceFeatures, itself 55 VkBool32. So any of them is, in memory,
 * { VkStructureType sType; void *pNext; VkBool32 member[n]; } and the capture records a device's
 * features as FEATURES(sType, n, member values) whatever structures the program chained, and
 * replay rebuilds the chain from the table, allocating each structure at the registry's size.
 * stype 0 stands for VkPhysicalDeviceFeatures itself (VkDeviceCreateInfo.pEnabledFeatures). */
struct sbt_vk_feature_struct {
    uint32_t stype;            /* VkStructureType value; 0 = VkPhysicalDeviceFeatures */
    const char *name;          /* "VkPhysicalDeviceShaderFloat16Int8Features" */
    uint32_t n;                /* VkBool32 members after sType and pNext */
    const char *const *fields; /* their names, in declaration order */
};
extern const struct sbt_vk_feature_struct sbt_vk_feature_structs[]; /* sorted by stype */
extern const uint32_t sbt_vk_n_feature_structs;
extern const char sbt_vk_registry_version[]; /* VK_HEADER_VERSION of the vk.xml used */
/* The features structure of a VkStructureType, or NULL if the registry has none. */
const struct sbt_vk_feature_struct *sbt_vk_feature_struct(uint32_t stype);
#define SBT_VK_STYPE_FEATURES2 1000059000u /* VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2 */

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SBT_VK_H */
