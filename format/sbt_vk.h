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
 * Where each payload goes (capture/vk/cap_vk_*.c write them, replay reads them):
 *   device row ext        kind SBT_VK_EXT_DEVICE:   DEVICE, MEMORY_TYPE*, MEMORY_HEAP*,
 *                                                   QUEUE_FAMILY*, QUEUE_CREATE*, EXTENSION*,
 *                                                   FEATURES*, DEVICE_CHAIN*, ADDRESS_REPLAY
 *   program row ext       kind SBT_VK_EXT_MODULE:   MODULE, MODULE_BINDING*, ENTRY_POINT*
 *   kernel row ext        kind SBT_VK_EXT_PIPELINE: PIPELINE, SPEC_ENTRY*, PIPELINE_ROBUSTNESS*,
 * PIPELINE_LAYOUT, SET_LAYOUT* (+ SET_BINDING* after each) op payloads           kind
 * SBT_VK_PAYLOAD:      one of the op records below command-buffer blobs  (op SUBMIT references)
 * SBT_VK_RECORDING magic + CMD_* records
 *
 * Ops the layer writes (op kind: payload call):
 *   ALLOC      MEMORY; CREATE_IMAGE       FREE       DESTROY (type MEMORY; IMAGE)
 *   MARKER     CREATE_BUFFER, BIND_BUFFER, CREATE_BUFFER_VIEW, BIND_IMAGE, CREATE_IMAGE_VIEW,
 *              CREATE_SAMPLER, SET_LAYOUT (+SET_BINDING*), PIPELINE_LAYOUT, ALLOC_SET,
 *              WRITE_SET*, COPY_SET*, CREATE_SYNC, RESET_SYNC, DESTROY, BUFFER_ADDRESS — API
 *              state changes with no device effect, in API order. The op name is the Vulkan
 *              command ("vkCreateBuffer").
 *   SUBMIT     SUBMIT, then per batch BATCH, WAIT_SEM*, CMDBUF*, SIGNAL_SEM*
 *   KERNEL     DISPATCH (+ BINDING*, IMAGE_BINDING*): self-contained (pipeline, resolved
 *              descriptors, push constants), so one dispatch can be replayed on its own.
 *              Descriptors bound in sets (dynamic offsets applied), pushed, or written through
 *              templates all end up as BINDING (buffers) and IMAGE_BINDING (images, samplers)
 *              records. A shader that dereferences device addresses has, besides its bindings'
 *              accesses, one to every buffer with an address (MODULE says so)
 *   COPY       COPY_BUFFER / UPDATE_BUFFER (op.blob = the update bytes) / COPY_BUFFER_TO_IMAGE /
 *              COPY_IMAGE_TO_BUFFER / COPY_IMAGE / BLIT_IMAGE
 *   FILL       FILL_BUFFER / CLEAR_IMAGE
 *   HOST_WRITE / HOST_READ / SIGNAL / WAIT / EVENT_* / *_SYNC: no payload needed, or a
 *              SYNC_INFO record for queue-side waits (stage mask)
 *
 * Images. A VkImage is a trace resource of its own: its capture id, made by an ALLOC op
 * (CREATE_IMAGE) and ended by a FREE op. Its bytes are defined in the packed layout below
 * (sbt_vk_image_subres), not the driver's tiling: accesses, HOST_WRITE blobs, HOST_READ and
 * output digests of an image are in packed offsets, so they compare across drivers. The
 * memory an image is bound to (BIND_IMAGE) holds it in the driver's own layout; a host write
 * into the mapping of a linear image becomes a HOST_WRITE of the image's packed bytes.
 */
#ifndef REPRISE_SBT_VK_H
#define REPRISE_SBT_VK_H

#include <stddef.h>
#include <stdint.h>

#include "format/sbt.h"
#include "format/sbt_payload.h"

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
    /* binding, VkDescriptorType, descriptorCount, stageFlags, binding flags, n immutable          \
       samplers (0, or descriptorCount for a sampler or combined binding that has them), their     \
       sampler ids */                                                                              \
    X(SET_BINDING, 36)                                                                             \
    /* VkPipelineRobustnessCreateInfo chained to the pipeline (where 0) or its stage (1): where,   \
       storageBuffers, uniformBuffers, vertexInputs, images (the VkPipelineRobustness*Behavior     \
       values). Replay chains it the same way (format 2, this record since reprise 0.1) */         \
    X(PIPELINE_ROBUSTNESS, 37)                                                                     \
    /* ---- state ops (MARKER / ALLOC) -------------------------------------------------------- */ \
    /* memory id, allocationSize, memoryTypeIndex, VkMemoryPropertyFlags of that type,             \
       VkMemoryAllocateFlags (as the program gave them), dedicated buffer id (0 = none), device    \
       id, opaque capture address (0 = none; see ADDRESS_REPLAY), dedicated image id (0 = none) */ \
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
    /* set id, binding, array element, VkDescriptorType, n, then n tuples of 4: buffers and        \
       texel buffers (buffer id, offset, range, buffer view id); samplers, sampled, storage and    \
       combined images (image view id, sampler id, VkImageLayout, 0); an update template is        \
       recorded as the writes it amounts to. Inline uniform blocks and acceleration structures     \
       are not captured (counted unmodelled) */                                                    \
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
       src access, dst stages, dst access, src family, dst family, buffer id, offset, size)...,    \
       n image barriers, (src stages, src access, dst stages, dst access, old layout, new layout,  \
       src family, dst family, image id, aspectMask, baseMipLevel, levelCount, baseArrayLayer,     \
       layerCount)... (older captures end after the buffer barriers) */                            \
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
    X(CMD_PUSH_SET, 114)                                                                           \
    /* ---- images (FORMAT.md "Images"): state ops ------------------------------------------- */  \
    /* image id, VkImageCreateFlags, VkImageType, VkFormat, width, height, depth, mipLevels,       \
       arrayLayers, samples, tiling, usage, sharingMode, initialLayout, packed size in bytes,      \
       device id, n queue families, families..., n view formats (VkImageFormatListCreateInfo),     \
       formats..., stencil usage (VkImageStencilUsageCreateInfo, 0 = none). On the image's ALLOC   \
       op (resource = image id, bytes = packed size). */                                           \
    X(CREATE_IMAGE, 128)                                                                           \
    /* image id, memory id, memoryOffset, memory requirements: size, alignment, memoryTypeBits */  \
    X(BIND_IMAGE, 129)                                                                             \
    /* view id, image id, flags, VkImageViewType, VkFormat, swizzle r, g, b, a, aspectMask,        \
       baseMipLevel, levelCount, baseArrayLayer, layerCount (counts resolved, never                \
       VK_REMAINING_*), usage (VkImageViewUsageCreateInfo, 0 = the image's) */                     \
    X(CREATE_IMAGE_VIEW, 130)                                                                      \
    /* sampler id, flags, magFilter, minFilter, mipmapMode, addressModeU, V, W, mipLodBias (float  \
       bits), anisotropyEnable, maxAnisotropy (float bits), compareEnable, compareOp, minLod,      \
       maxLod (float bits), borderColor, unnormalizedCoordinates, reductionMode                    \
       (VkSamplerReductionModeCreateInfo, 0 = weighted average), custom border color format,       \
       its 4 words (VkSamplerCustomBorderColorCreateInfoEXT; 0 = none) */                          \
    X(CREATE_SAMPLER, 131)                                                                         \
    /* ---- images: per-op payloads ---------------------------------------------------------- */  \
    /* a dispatch's image or sampler descriptor: set, binding, array element, VkDescriptorType,    \
       image view id (0: a sampler), image id, sampler id (0: none), VkImageLayout, access mode    \
       (0 for a sampler alone: it touches no bytes) */                                             \
    X(IMAGE_BINDING, 136)                                                                          \
    /* buffer id, image id, image layout, n regions, n x 13 (bufferOffset, bufferRowLength,        \
       bufferImageHeight, aspectMask, mipLevel, baseArrayLayer, layerCount, x, y, z, width,        \
       height, depth), cmdbuf, index */                                                            \
    X(COPY_BUFFER_TO_IMAGE, 137)                                                                   \
    /* image id, image layout, buffer id, n regions, n x 13 as above, cmdbuf, index */             \
    X(COPY_IMAGE_TO_BUFFER, 138)                                                                   \
    /* src image, src layout, dst image, dst layout, n regions, n x 17 (src aspectMask, mipLevel,  \
       baseArrayLayer, layerCount, x, y, z, dst aspectMask, mipLevel, baseArrayLayer, layerCount,  \
       x, y, z, width, height, depth), cmdbuf, index */                                            \
    X(COPY_IMAGE, 139)                                                                             \
    /* src image, src layout, dst image, dst layout, VkFilter, n regions, n x 20 (src aspectMask,  \
       mipLevel, baseArrayLayer, layerCount, x0, y0, z0, x1, y1, z1, dst the same 10),             \
       cmdbuf, index */                                                                            \
    X(BLIT_IMAGE, 140)                                                                             \
    /* image id, image layout, kind (0 vkCmdClearColorImage, 1 vkCmdClearDepthStencilImage),       \
       value words 0..3 (color: the VkClearColorValue's 4 words; depth/stencil: the depth's float  \
       bits, the stencil, 0, 0), n ranges, n x 5 (aspectMask, baseMipLevel, levelCount,            \
       baseArrayLayer, layerCount; counts resolved), cmdbuf, index */                              \
    X(CLEAR_IMAGE, 141)                                                                            \
    /* ---- images: command-buffer recordings (the per-op layouts without cmdbuf, index) ------ */ \
    X(CMD_COPY_BUFFER_TO_IMAGE, 144)                                                               \
    X(CMD_COPY_IMAGE_TO_BUFFER, 145)                                                               \
    X(CMD_COPY_IMAGE, 146)                                                                         \
    X(CMD_BLIT_IMAGE, 147)                                                                         \
    X(CMD_CLEAR_IMAGE, 148) /* counts may be VK_REMAINING_* as recorded */

enum sbt_vk_call {
#define SBT_VK__ENUM(name, val) SBT_VK_##name = val,
    SBT_VK_CALL_MAP(SBT_VK__ENUM)
#undef SBT_VK__ENUM
};

/* "DISPATCH" for SBT_VK_DISPATCH; NULL for an unknown call. */
const char *sbt_vk_call_name(uint32_t call);

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

/* A device feature SPIR-V capabilities need (generated from vk.xml's <spirvcapabilities> and the
 * SPIR-V grammar): a shader declaring one of caps needs it (or an alternative the registry
 * lists); unknown: a capability needing it has no number in the grammar the build used (or
 * there was none), so whether a shader needs it cannot be told. */
struct sbt_vk_feature_caps {
    const char *feature; /* the member's name, the same in every features structure with it */
    uint32_t n;
    const uint32_t *caps; /* SPIR-V capability numbers, ascending */
    int unknown;
};
extern const struct sbt_vk_feature_caps sbt_vk_feature_caps[]; /* sorted by feature */
extern const uint32_t sbt_vk_n_feature_caps;
extern const char sbt_vk_spirv_grammar[]; /* "1.6 rev 4", or "" when built without one */
/* The capabilities that need feature, or NULL when none does (vk.xml ties it to none). */
const struct sbt_vk_feature_caps *sbt_vk_feature_caps_of(const char *feature);

/* ---- Images: formats and the packed layout (format/sbt_vk_image.c) ---------------------------
 * An image's bytes, as the trace defines them (FORMAT.md "Images"), are its subresources one
 * after the other: for each aspect of its format in VkImageAspectFlagBits order (color; or
 * depth, then stencil; or planes 0, 1, 2), for each mip level from 0, for each array layer from
 * 0, the level's slices (depth) from z = 0, each its rows of texel blocks from y = 0, each row
 * its blocks from x = 0, tightly packed: a block takes the bytes a buffer<->image copy gives it
 * (vkCmdCopyImageToBuffer with bufferRowLength = bufferImageHeight = 0). This is what a copy
 * into a tightly packed buffer of each subresource in turn gives on any driver, whatever the
 * image's tiling, so accesses, digests and dumps of images compare across drivers. */

/* A format as the registry describes it (format/gen_vk_formats.py). */
struct sbt_vk_format {
    uint32_t format;       /* VkFormat value */
    const char *name;      /* without VK_FORMAT_: "R8G8B8A8_UNORM" */
    uint8_t block_bytes;   /* bytes of one texel block (the whole texel of depth/stencil) */
    uint8_t block[3];      /* texel block extent (1, 1, 1 unless block-compressed or 422) */
    uint8_t depth_bytes;   /* packed bytes per texel of the depth aspect, 0 = none */
    uint8_t stencil_bytes; /* the same for stencil */
    uint8_t n_planes;      /* 2 or 3 for multi-planar formats, else 0 */
    uint8_t plane_bytes[3], plane_wdiv[3], plane_hdiv[3]; /* per plane: bytes per texel, divisors */
};
extern const struct sbt_vk_format sbt_vk_formats[]; /* sorted by format */
extern const uint32_t sbt_vk_n_formats;
/* The format's entry, or NULL when the registry has none (VK_FORMAT_UNDEFINED included). */
const struct sbt_vk_format *sbt_vk_format(uint32_t format);
/* The aspects of a format, as VkImageAspectFlags (color; depth and/or stencil; planes); 0 for
 * a format the registry does not describe. */
uint32_t sbt_vk_format_aspects(uint32_t format);

/* What an image's packed layout depends on (CREATE_IMAGE's arguments). */
struct sbt_vk_image {
    uint32_t format;    /* VkFormat */
    uint32_t type;      /* VkImageType: 0 1D, 1 2D, 2 3D */
    uint32_t extent[3]; /* width, height, depth in texels */
    uint32_t mips, layers;
};

/* One (aspect, mip level) of an image in the packed layout: n layers of layer_bytes each,
 * from offset on. */
struct sbt_vk_subres {
    uint64_t offset;      /* packed offset of its layer 0 */
    uint64_t row_bytes;   /* one row of texel blocks */
    uint64_t slice_bytes; /* one slice (rows of one z) */
    uint64_t layer_bytes; /* one layer (its slices) */
    uint32_t extent[3];   /* the level's extent in texels (a plane's: divided) */
    uint32_t blocks[3];   /* the same in texel blocks (rounded up) */
    uint32_t block[3];    /* texel block extent */
    uint32_t block_bytes; /* bytes of one block in this aspect */
};

/* Limits of what a trace may describe (larger: SBT_ECORRUPT): extent per axis, layers, levels. */
#define SBT_VK_IMAGE_MAX_EXTENT (1u << 20)
#define SBT_VK_IMAGE_MAX_LAYERS (1u << 16)
#define SBT_VK_IMAGE_MAX_MIPS   32u
#define SBT_VK_IMAGE_MAX_BYTES  (1ull << 50)

/* Checks an image description (a format of the registry, extents >= 1 and consistent with its
 * type, levels no more than the extent allows, the limits above) and sets *size to its packed
 * size in bytes. 0, or SBT_ECORRUPT with a message. */
int sbt_vk_image_check(const struct sbt_vk_image *im, uint64_t *size);
/* The subresource (aspect: one bit of the format's aspects; mip < im->mips) of a checked image:
 * 0, or SBT_ECORRUPT naming what is not the image's. */
int sbt_vk_image_subres(const struct sbt_vk_image *im, uint32_t aspect, uint32_t mip,
                        struct sbt_vk_subres *out);

/* A box of an image: one aspect and mip level, layers [layer, layer + n_layers), texels
 * [off, off + ext) on each axis (a 3D image's z; 1D and 2D images have z = 0, depth 1). */
struct sbt_vk_box {
    uint32_t aspect, mip, layer, n_layers;
    uint32_t off[3], ext[3];
};
/* Checks that box b lies in checked image im (block-aligned: an offset a multiple of the
 * block, an extent too unless it reaches the level's edge). Then counts the runs of packed
 * bytes it covers, in increasing order and merged where adjacent: *n_runs, with the covering
 * range [*lo, *hi) (both when not NULL); and when fn is not NULL calls fn(ctx, offset, length)
 * for each. 0, or SBT_ECORRUPT with a message naming the box. An empty box has 0 runs. */
int sbt_vk_image_box_runs(const struct sbt_vk_image *im, const struct sbt_vk_box *b,
                          void (*fn)(void *ctx, uint64_t off, uint64_t len), void *ctx,
                          uint64_t *n_runs, uint64_t *lo, uint64_t *hi);
/* The boxes that cover packed bytes [off, off + len) of checked image im with whole rows of
 * texel blocks: fn(ctx, box, packed offset, packed length) for each, in increasing order;
 * each box's bytes are contiguous in the packed layout (a buffer<->image copy of it with
 * bufferRowLength = bufferImageHeight = 0 gives them). Returns 0, fn's first nonzero return,
 * or SBT_ECORRUPT when the range ends past the image's packed size. */
int sbt_vk_image_cover(const struct sbt_vk_image *im, uint64_t off, uint64_t len,
                       int (*fn)(void *ctx, const struct sbt_vk_box *b, uint64_t off, uint64_t len),
                       void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SBT_VK_H */
