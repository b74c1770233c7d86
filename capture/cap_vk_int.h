/*
 * capture/cap_vk_int.h — what the files of the Vulkan capture layer share: dispatch tables,
 * the shadow of the Vulkan objects the layer tracks, the event queue to the writer thread.
 * Only capture/cap_vk_*.c include this.
 *
 * Threads. A Vulkan call runs on the program's thread. vkCmd* calls only append to their
 * command buffer's own record buffer (the program synchronises command buffers, so no lock).
 * Every other tracked call takes cap.mu briefly to update the shadow objects, builds finished
 * ops (struct cap_ev) and appends them to its thread's buffer with a number from one global
 * atomic sequence. The writer thread (cap_vk_writer.c) drains the thread buffers, puts events
 * back into sequence order and is the only thread that touches the sbt_writer.
 */
#ifndef REPRISE_CAP_VK_INT_H
#define REPRISE_CAP_VK_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "capture/cap.h"
#include "format/sbt.h"
#include "format/sbt_vk.h"

#define CAP_EXPORT __attribute__((visibility("default")))
#define CAP_PAGE   4096u

/* ========================================================================================== */
/* Dispatch tables                                                                            */
/* ========================================================================================== */

/* Device functions the layer calls down (vk<name>; KHR/EXT alias tried when NULL). */
/* clang-format off */
#define CAP_DEVICE_FNS(X)                                                                                 \
    X(DestroyDevice)                                                                                      \
    X(GetDeviceQueue) X(GetDeviceQueue2) X(AllocateMemory) X(FreeMemory) X(MapMemory) X(                  \
        UnmapMemory) X(FlushMappedMemoryRanges) X(InvalidateMappedMemoryRanges) X(CreateBuffer)           \
        X(DestroyBuffer) X(BindBufferMemory) X(BindBufferMemory2) X(GetBufferMemoryRequirements) X(       \
            CreateBufferView) X(DestroyBufferView) X(CreateShaderModule) X(DestroyShaderModule)           \
            X(CreateDescriptorSetLayout) X(DestroyDescriptorSetLayout) X(CreatePipelineLayout) X(         \
                DestroyPipelineLayout) X(CreateComputePipelines) X(DestroyPipeline)                       \
                X(CreateDescriptorPool) X(DestroyDescriptorPool) X(ResetDescriptorPool) X(                \
                    AllocateDescriptorSets) X(FreeDescriptorSets) X(UpdateDescriptorSets)                 \
                    X(CreateDescriptorUpdateTemplate) X(DestroyDescriptorUpdateTemplate) X(               \
                        UpdateDescriptorSetWithTemplate) X(CreateCommandPool) X(DestroyCommandPool)       \
                        X(ResetCommandPool) X(AllocateCommandBuffers) X(FreeCommandBuffers) X(            \
                            BeginCommandBuffer) X(EndCommandBuffer) X(ResetCommandBuffer)                 \
                            X(CmdBindPipeline) X(CmdBindDescriptorSets) X(CmdPushConstants) X(            \
                                CmdDispatch) X(CmdDispatchBase) X(CmdDispatchIndirect)                    \
                                X(CmdCopyBuffer) X(CmdCopyBuffer2) X(CmdFillBuffer) X(                    \
                                    CmdUpdateBuffer) X(CmdPipelineBarrier) X(CmdPipelineBarrier2)         \
                                    X(CmdSetEvent) X(CmdResetEvent) X(CmdWaitEvents) X(                   \
                                        CmdSetEvent2) X(CmdResetEvent2) X(CmdWaitEvents2)                 \
                                        X(CmdWriteTimestamp) X(CmdWriteTimestamp2) X(                     \
                                            CmdResetQueryPool) X(CmdExecuteCommands) X(QueueSubmit)       \
                                            X(QueueSubmit2) X(QueueWaitIdle) X(DeviceWaitIdle) X(         \
                                                CreateFence) X(DestroyFence) X(ResetFences)               \
                                                X(GetFenceStatus) X(WaitForFences) X(                     \
                                                    CreateSemaphore) X(DestroySemaphore)                  \
                                                    X(SignalSemaphore) X(WaitSemaphores) X(               \
                                                        GetSemaphoreCounterValue) X(CreateEvent)          \
                                                        X(DestroyEvent) X(SetEvent) X(ResetEvent) X(      \
                                                            CreateQueryPool) X(DestroyQueryPool)          \
                                                            X(GetQueryPoolResults) X(CmdDraw) X(          \
                                                                CmdDrawIndexed) X(CmdBeginRenderPass)     \
                                                                X(CmdCopyBufferToImage) X(                \
                                                                    CmdCopyImageToBuffer) X(CmdCopyImage) \
                                                                    X(CmdClearColorImage) X(              \
                                                                        CreateImage)                      \
                                                                        X(BindImageMemory) X(             \
                                                                            CreateGraphicsPipelines)      \
                                                                            X(QueueBindSparse) X(         \
                                                                                GetBufferDeviceAddress)
/* clang-format on */

struct cap_dev_fns {
#define CAP__FN(n) PFN_vk##n n;
    CAP_DEVICE_FNS(CAP__FN)
#undef CAP__FN
};

struct cap_inst {
    void *key; /* the loader's dispatch pointer: *(void **)instance */
    VkInstance handle;
    PFN_vkGetInstanceProcAddr gipa;
    PFN_vkDestroyInstance DestroyInstance;
    PFN_vkCreateDevice CreateDevice;
    PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties;
    PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties;
    PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2;
    PFN_vkGetPhysicalDeviceMemoryProperties GetPhysicalDeviceMemoryProperties;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties;
    uint32_t api_version;
    int dead;
    struct cap_inst *retired_next; /* destroyed instances, freed only at unload */
};

struct cap_dev {
    void *key; /* *(void **)device, shared by its queues and command buffers */
    VkDevice handle;
    VkPhysicalDevice phys;
    struct cap_inst *inst;
    PFN_vkGetDeviceProcAddr gdpa;
    struct cap_dev_fns fn;
    uint64_t id; /* capture id */
    VkPhysicalDeviceMemoryProperties mem_props;
    VkQueueFamilyProperties qfam[16];
    uint32_t n_qfam;
    double ts_period_ns;
    uint64_t nc_atom;          /* nonCoherentAtomSize */
    VkCommandPool ts_pool[16]; /* --timing/--digests helpers, per queue family */
    /* --timing: VK_EXT_calibrated_timestamps enabled by the layer (NULL = not available: device
     * times are aligned to the submit instead, see cap_vk_timing.c) */
    PFN_vkGetCalibratedTimestampsEXT GetCalibratedTimestampsEXT;
    uint64_t calib_at;                /* cap_now() of the last calibration, 0 = none yet */
    uint64_t calib_ticks, calib_host; /* a (device ticks, ns since the trace epoch) pair */
    int dead;
    struct cap_dev *retired_next; /* destroyed devices, freed only at unload */
};

/* Live instances and devices (cap_vk_instance.c), found by the loader's dispatch pointer that
 * every dispatchable handle starts with (a physical device shares its instance's, a queue or
 * command buffer its device's). Slots are published with release stores. */
#define CAP_MAX_INST 16
#define CAP_MAX_DEV  32
extern struct cap_inst *cap_insts[CAP_MAX_INST];
extern struct cap_dev *cap_devs[CAP_MAX_DEV];

static inline void *cap_dkey(const void *dispatchable)
{
    return *(void *const *)dispatchable;
}

static inline struct cap_inst *cap_inst_of(const void *h)
{
    void *k = cap_dkey(h);
    for (int i = 0; i < CAP_MAX_INST; i++) {
        struct cap_inst *p = __atomic_load_n(&cap_insts[i], __ATOMIC_ACQUIRE);
        if (p && p->key == k)
            return p;
    }
    return NULL;
}

static inline struct cap_dev *cap_dev_of(const void *h)
{
    void *k = cap_dkey(h);
    for (int i = 0; i < CAP_MAX_DEV; i++) {
        struct cap_dev *p = __atomic_load_n(&cap_devs[i], __ATOMIC_ACQUIRE);
        if (p && p->key == k)
            return p;
    }
    return NULL;
}

/* ========================================================================================== */
/* Shadow objects                                                                             */
/* ========================================================================================== */

/* Tracked object types: one handle map each. */
enum cap_type {
    CAP_T_MEM,
    CAP_T_BUF,
    CAP_T_BVIEW,
    CAP_T_MODULE,
    CAP_T_DSL,
    CAP_T_PLAYOUT,
    CAP_T_PIPELINE,
    CAP_T_DSET,
    CAP_T_TEMPL,
    CAP_T_FENCE,
    CAP_T_SEM,
    CAP_T_EVENT,
    CAP_T_QUEUE,
    CAP_T_CMDBUF,
    CAP_T_QPOOL,
    CAP_T__COUNT
};

/* Every tracked object starts with this; cap.objs maps (handle, type) to it. */
struct cap_obj {
    uint64_t handle;
    uint32_t type; /* VkObjectType */
    uint64_t id;   /* capture id */
    struct cap_dev *dev;
};

/* A byte interval of a memory allocation written by device work of a submission not yet seen
 * complete by the host: (queue, serial) names the submission. */
struct cap_ivl {
    uint64_t off, len;
    uint64_t queue;  /* capture id of the queue */
    uint64_t serial; /* submission serial on that queue */
};

struct cap_mem {
    struct cap_obj o;
    uint64_t size;
    uint32_t type_index, props;
    uint8_t *map_base;         /* host address of offset 0 of the allocation while mapped */
    uint64_t map_off, map_len; /* the mapped range, bytes */
    int mapped;
    uint64_t n_pages;
    sbt_hash *page;       /* shadow: hash of each 4 KiB page as last seen (zero page at start) */
    struct cap_ivl *pend; /* device writes of submissions not yet seen complete */
    uint32_t n_pend, cap_pend;
    struct cap_ivl *done; /* finished device writes not yet read back (memory was unmapped) */
    uint32_t n_done, cap_done;
};

struct cap_buf {
    struct cap_obj o;
    uint64_t size;
    uint32_t usage;
    struct cap_mem *mem; /* NULL until bound */
    uint64_t mem_off;
};

struct cap_bview {
    struct cap_obj o;
    struct cap_buf *buf;
    uint64_t offset, range;
};

/* A descriptor variable of a shader module, from the SPIR-V decorations. */
struct cap_refl_binding {
    uint32_t set, binding, access, storage, array;
};
struct cap_refl_entry {
    char name[64];
    uint32_t local[3];
    uint32_t spec_id[3]; /* UINT32_MAX = literal */
};
struct cap_refl {
    int ok;
    struct cap_refl_binding *b;
    uint32_t n_b;
    struct cap_refl_entry *e;
    uint32_t n_e;
    /* WorkgroupSize built-in: constants (with spec ids) */
    int has_wgsize;
    uint32_t wg[3], wg_spec[3];
};

struct cap_module {
    struct cap_obj o;
    struct cap_refl refl;
    char label[24]; /* "spirv:" + 8 hex digits of the code's hash: the same shader, the same
                     * name in every trace */
};

struct cap_dsl_binding {
    uint32_t binding, type, count, stages, flags;
    uint32_t base; /* first slot of this binding in a set */
};
struct cap_dsl {
    struct cap_obj o;
    struct cap_dsl_binding *b; /* sorted by binding */
    uint32_t n_b, n_slots, flags;
};

#define CAP_MAX_SETS 32u
struct cap_playout {
    struct cap_obj o;
    uint32_t n_sets;
    uint64_t set_layout[CAP_MAX_SETS]; /* handles */
    struct sbt_vk_enc rec; /* PIPELINE_LAYOUT + SET_LAYOUT/SET_BINDING of its sets: kernel rows
                            * repeat them */
};

struct cap_pipeline {
    struct cap_obj o;
    uint64_t layout_handle;
    uint32_t local[3];
    struct cap_refl_binding *acc; /* copy of the module's reflection */
    uint32_t n_acc;
    int refl_ok;
};

struct cap_slot {
    uint32_t type;
    uint64_t buf_handle, offset, range, view_handle;
};
struct cap_dset {
    struct cap_obj o;
    uint64_t pool_handle;
    struct cap_dsl_binding *b; /* copy of the layout's bindings */
    uint32_t n_b, n_slots;
    struct cap_slot *slot;
};

struct cap_templ_entry {
    uint32_t binding, elem, count, type;
    size_t offset, stride;
};
struct cap_templ {
    struct cap_obj o;
    struct cap_templ_entry *e;
    uint32_t n_e;
    uint32_t type; /* VkDescriptorUpdateTemplateType */
};

/* Fences, semaphores, events. Signals remember which submission signals what value, so a
 * host wait that returns tells which submissions finished. */
#define CAP_SIG_RING 64u
struct cap_sig {
    uint64_t value, queue, serial;
};
struct cap_sync {
    struct cap_obj o;
    uint32_t kind; /* enum sbt_sync_kind */
    struct cap_sig sig[CAP_SIG_RING];
    uint32_t n_sig; /* total signals recorded (ring index = n % CAP_SIG_RING) */
};

struct cap_queue {
    struct cap_obj o;
    uint32_t family, index;
    uint64_t serial; /* last submission serial */
};

struct cap_cmdbuf {
    struct cap_obj o;
    uint64_t pool_handle;
    uint32_t level;
    uint32_t usage;
    struct sbt_vk_enc raw; /* CMD_* records with raw Vulkan handles, as recorded */
    uint32_t n_cmds;
    struct cap_blob *rec; /* the recording with capture ids, built at its first submit */
    /* The ops its last expansion made, packed (cap_ev_new_op blocks, each after a size_t of
     * its length): a resubmission copies them instead of walking the recording again while
     * cap.shadow_gen is ops_gen. NULL when the recording cannot be cached (timing, indirect
     * dispatches, secondaries, inline data). cap.mu held. */
    uint8_t *ops;
    size_t ops_len;
    uint64_t ops_gen;
    int recording; /* between begin and end */
    /* --timing: a TOP_OF_PIPE / BOTTOM_OF_PIPE timestamp pair around each dispatch, copy, fill
     * and update of the recording: pair i is queries 2i, 2i+1 of the run of pools, and
     * ts_at[i] the index of its command in the recording. Pools are kept across recordings. */
    uint32_t family;      /* queue family of its command pool */
    uint32_t ts_bits;     /* timestampValidBits of that family, 0 = no timing */
    VkQueryPool *ts_pool; /* CAP_TS_POOL_QUERIES queries each */
    uint32_t n_ts_pool;
    uint32_t *ts_at;
    uint32_t n_ts, cap_ts;
};
#define CAP_TS_POOL_QUERIES 256u

/* The shadow of (handle, enum cap_type), or NULL. cap.mu held. */
void *cap_obj_find(uint64_t handle, uint32_t t);

/* ========================================================================================== */
/* Events to the writer thread                                                                */
/* ========================================================================================== */

/* A refcounted immutable byte string (command-buffer recordings). */
struct cap_blob {
    atomic_int ref;
    int stored; /* writer thread only */
    sbt_hash hash;
    size_t len;
    uint8_t data[];
};
struct cap_blob *cap_blob_new(const void *data, size_t len);
void cap_blob_unref(struct cap_blob *b);

enum cap_ev_type {
    CAP_EV_OP = 1,
    CAP_EV_DEVICE,
    CAP_EV_QUEUE,
    CAP_EV_PROGRAM,
    CAP_EV_KERNEL,
    CAP_EV_META,
};

/* Device timing of the ops of one submission, filled when the host sees it complete. The
 * batch it hangs on is held back by the writer until ready (release store / acquire load). */
struct cap_timing {
    atomic_int ready;
    uint32_t n, cap_n;
    struct cap_ev **ops; /* ops whose dev times come from the queries */
    uint32_t *query;     /* first query index of each (begin; end = query + 1) */
    VkQueryPool *pool;
    struct cap_dev *dev;
    uint64_t queue, serial; /* the submission */
    uint64_t t_submit;      /* host time of the vkQueueSubmit call, ns since the epoch */
    uint64_t mask;          /* timestampValidBits as a mask */
};

struct cap_ev {
    struct cap_ev *next; /* the next event of the same batch (same seq, in order) */
    uint64_t seq;
    uint32_t type, thread;
    uint64_t dev_id;    /* capture id of the device */
    uint64_t queue_id;  /* OP: capture id of the queue it runs on; 0 = the host thread */
    uint64_t kernel_id; /* OP: capture id of the pipeline; KERNEL: the pipeline */
    uint64_t obj_queue; /* OP STREAM_SYNC: capture id of the queue waited for */
    const char *name;   /* static string: op name / meta key */
    struct sbt_op op;
    struct sbt_access *acc; /* owned */
    uint8_t *payload;       /* owned; its kind is SBT_VK_PAYLOAD (ext kinds for rows) */
    size_t payload_len;
    uint8_t *data; /* owned bytes to store as a blob (op.blob / program image) */
    size_t data_len;
    int data_pooled;        /* data is a run buffer (cap_run_alloc), not malloc'd */
    int packed;             /* acc and payload lie in the event's own allocation (cap_ev_new_op) */
    struct cap_blob **recs; /* recordings to store (refs held), SUBMIT */
    uint32_t n_recs;
    struct cap_timing *timing; /* head of a batch only */
    /* table rows */
    struct sbt_device dev;
    struct sbt_stream stream;
    uint64_t prog_id; /* KERNEL: capture id of its module */
    char *str;        /* owned: device name / entry name / meta value */
    uint32_t ext_kind;
};

/* ========================================================================================== */
/* Global state                                                                               */
/* ========================================================================================== */

struct cap_map_ent {
    uint64_t key;
    void *val;
};
struct cap_map {
    struct cap_map_ent *e;
    size_t n, cap; /* cap is a power of two; key 0 = empty, key 1 = deleted */
};
void *cap_map_get(const struct cap_map *m, uint64_t key);
int cap_map_put(struct cap_map *m, uint64_t key, void *val);
void *cap_map_del(struct cap_map *m, uint64_t key);
void cap_map_free(struct cap_map *m);

struct cap_global {
    atomic_int on;     /* recording */
    atomic_int failed; /* an internal failure stopped recording */
    atomic_uint_fast64_t seq;
    atomic_uint_fast64_t next_id;
    atomic_uint_fast64_t n_calls;      /* Vulkan calls seen (for bytes per call) */
    atomic_uint_fast32_t gen;          /* command buffer generation (TLS cache) */
    pthread_mutex_t mu;                /* objects and memory shadow */
    struct cap_map objs[CAP_T__COUNT]; /* per enum cap_type: handle -> struct cap_obj * */
    struct cap_mem **mems;             /* live allocations */
    uint32_t n_mems, cap_mems;
    int timing, digests;
    struct cap_map cmd_pools;  /* VkCommandPool -> queue family + 1 (for --timing) */
    struct cap_timing **tpend; /* --timing: submissions whose device times are not read yet */
    uint32_t n_tpend, cap_tpend;
    atomic_uint_fast64_t n_timed, n_untimed; /* ops with / without device times */
    uint64_t epoch_ns; /* CLOCK_MONOTONIC at open; op times are relative to it */
    /* cap.mu held: bumped whenever a shadow that expanding a recording reads changes (objects
     * made or destroyed, buffers bound, descriptors written). Cached ops of a command buffer
     * (struct cap_cmdbuf.ops) are valid while it has not moved. */
    uint64_t shadow_gen;
};
extern struct cap_global cap;

/* ---- cap_vk_writer.c -------------------------------------------------------------------- */
void cap_init_once(void); /* reads the environment, opens the trace, starts the writer */
void cap_shutdown(void);  /* drains the writer and closes the trace (idempotent) */
/* Logs once, marks the trace incomplete with the reason, stops recording. */
void cap_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Counts a call passed through unrecorded. */
void cap_unsupported(const char *name);
uint64_t cap_now(void); /* ns since the trace epoch */
uint32_t cap_thread(void);
uint64_t cap_new_id(void);
struct cap_ev *cap_ev_new(uint32_t type);
/* An OP event with room for n_acc accesses and payload_len payload bytes in the same
 * allocation (e->acc and e->payload point there, NULL when 0; the caller fills them). The
 * block is cap_ev_op_bytes(n_acc, payload_len) long and position-independent but for those
 * two pointers, so it can be copied (cap_ev_op_fix). */
struct cap_ev *cap_ev_new_op(uint32_t n_acc, size_t payload_len);
size_t cap_ev_op_bytes(uint32_t n_acc, size_t payload_len);
void cap_ev_op_fix(struct cap_ev *e);
/* Buffers of CAP_RUN_MAX bytes for host-write runs, recycled (a few are kept) so that large
 * uploads do not page-fault fresh memory every time. NULL when out of memory. */
#define CAP_RUN_MAX (1u << 20) /* bytes per HOST_WRITE op: keeps blobs deduplicable */
uint8_t *cap_run_alloc(void);
void cap_run_free(uint8_t *p);
void cap_ev_free_chain(struct cap_ev *e);
/* Queues a batch (e and its next chain) under one sequence number. */
void cap_emit(struct cap_ev *e);
/* Wakes the writer now (after waits, so HOST_READ ops do not linger). */
void cap_kick(void);

/* ========================================================================================== */
/* The intercepted calls                                                                      */
/* ========================================================================================== */

/* Recording is on; one more Vulkan call seen; a handle as a 64-bit key. */
#define CAP_ON()    atomic_load_explicit(&cap.on, memory_order_relaxed)
#define CAP_COUNT() atomic_fetch_add_explicit(&cap.n_calls, 1, memory_order_relaxed)
#define CAP_H(x)    ((uint64_t)(uintptr_t)(x))

/* ---- cap_vk_instance.c ------------------------------------------------------------------ */
/* At unload or exit, after cap_shutdown(): frees the instance and device structs (live and
 * retired) and every shadow object, without calling Vulkan. No Vulkan call may reach the
 * layer afterwards. */
void cap_layer_free_all(void);
/* Allocates a shadow of sz bytes (a struct starting with struct cap_obj) and registers it
 * under (handle, t). cap.mu held. NULL (and recording off) on failure. */
void *cap_obj_new(size_t sz, uint32_t t, uint32_t vk_type, uint64_t handle, struct cap_dev *d);
/* Takes the shadow of (handle, t) out of its map and returns it (the caller frees it). */
void *cap_obj_del(uint64_t handle, uint32_t t);
/* A host-stream op of d with a payload built in enc (copied); NULL when out of memory. */
struct cap_ev *cap_op_ev(struct cap_dev *d, uint32_t kind, const char *name,
                         const struct sbt_vk_enc *enc, uint64_t t0);
/* One MARKER op (a state change) with the records in enc, which it frees. */
void cap_emit_marker(struct cap_dev *d, const char *name, struct sbt_vk_enc *enc, uint64_t t0);
/* A MARKER op with one DESTROY record. */
void cap_emit_destroy(struct cap_dev *d, const char *name, uint32_t vk_type, uint64_t id,
                      uint64_t t0);

/* ---- cap_vk_descriptors.c --------------------------------------------------------------- */
/* The SET_LAYOUT and SET_BINDING records of l (pipeline layouts repeat them). */
void cap_enc_set_layout(struct sbt_vk_enc *enc, const struct cap_dsl *l);

/* ---- the wrappers, one per intercepted command, by file --------------------------------- */
/* cap_vk_instance.c */
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateInstance(const VkInstanceCreateInfo *ci,
                                                  const VkAllocationCallbacks *alloc,
                                                  VkInstance *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyInstance(VkInstance instance,
                                               const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateDevice(VkPhysicalDevice phys, const VkDeviceCreateInfo *ci,
                                                const VkAllocationCallbacks *alloc, VkDevice *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyDevice(VkDevice device, const VkAllocationCallbacks *alloc);
VKAPI_ATTR void VKAPI_CALL cap_GetDeviceQueue(VkDevice device, uint32_t family, uint32_t index,
                                              VkQueue *q);
VKAPI_ATTR void VKAPI_CALL cap_GetDeviceQueue2(VkDevice device, const VkDeviceQueueInfo2 *info,
                                               VkQueue *q);
/* cap_vk_memory.c */
VKAPI_ATTR VkResult VKAPI_CALL cap_AllocateMemory(VkDevice device, const VkMemoryAllocateInfo *ai,
                                                  const VkAllocationCallbacks *alloc,
                                                  VkDeviceMemory *out);
VKAPI_ATTR void VKAPI_CALL cap_FreeMemory(VkDevice device, VkDeviceMemory mem,
                                          const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_MapMemory(VkDevice device, VkDeviceMemory mem, VkDeviceSize off,
                                             VkDeviceSize size, VkMemoryMapFlags flags, void **pp);
VKAPI_ATTR void VKAPI_CALL cap_UnmapMemory(VkDevice device, VkDeviceMemory mem);
VKAPI_ATTR VkResult VKAPI_CALL cap_FlushMappedMemoryRanges(VkDevice device, uint32_t n,
                                                           const VkMappedMemoryRange *rg);
VKAPI_ATTR VkResult VKAPI_CALL cap_InvalidateMappedMemoryRanges(VkDevice device, uint32_t n,
                                                                const VkMappedMemoryRange *rg);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateBuffer(VkDevice device, const VkBufferCreateInfo *ci,
                                                const VkAllocationCallbacks *alloc, VkBuffer *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyBuffer(VkDevice device, VkBuffer buf,
                                             const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_BindBufferMemory(VkDevice device, VkBuffer buf,
                                                    VkDeviceMemory mem, VkDeviceSize off);
VKAPI_ATTR VkResult VKAPI_CALL cap_BindBufferMemory2(VkDevice device, uint32_t n,
                                                     const VkBindBufferMemoryInfo *bi);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateBufferView(VkDevice device,
                                                    const VkBufferViewCreateInfo *ci,
                                                    const VkAllocationCallbacks *alloc,
                                                    VkBufferView *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyBufferView(VkDevice device, VkBufferView view,
                                                 const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateImage(VkDevice device, const VkImageCreateInfo *ci,
                                               const VkAllocationCallbacks *alloc, VkImage *out);
VKAPI_ATTR VkResult VKAPI_CALL cap_BindImageMemory(VkDevice device, VkImage i, VkDeviceMemory m,
                                                   VkDeviceSize o);
VKAPI_ATTR VkDeviceAddress VKAPI_CALL
cap_GetBufferDeviceAddress(VkDevice device, const VkBufferDeviceAddressInfo *info);
/* cap_vk_descriptors.c */
VKAPI_ATTR VkResult VKAPI_CALL
cap_CreateDescriptorSetLayout(VkDevice device, const VkDescriptorSetLayoutCreateInfo *ci,
                              const VkAllocationCallbacks *alloc, VkDescriptorSetLayout *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyDescriptorSetLayout(VkDevice device, VkDescriptorSetLayout h,
                                                          const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateDescriptorPool(VkDevice device,
                                                        const VkDescriptorPoolCreateInfo *ci,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkDescriptorPool *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyDescriptorPool(VkDevice device, VkDescriptorPool h,
                                                     const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_ResetDescriptorPool(VkDevice device, VkDescriptorPool h,
                                                       VkDescriptorPoolResetFlags f);
VKAPI_ATTR VkResult VKAPI_CALL cap_AllocateDescriptorSets(VkDevice device,
                                                          const VkDescriptorSetAllocateInfo *ai,
                                                          VkDescriptorSet *out);
VKAPI_ATTR VkResult VKAPI_CALL cap_FreeDescriptorSets(VkDevice device, VkDescriptorPool pool,
                                                      uint32_t n, const VkDescriptorSet *s);
VKAPI_ATTR void VKAPI_CALL cap_UpdateDescriptorSets(VkDevice device, uint32_t nw,
                                                    const VkWriteDescriptorSet *w, uint32_t nc,
                                                    const VkCopyDescriptorSet *c);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateDescriptorUpdateTemplate(
    VkDevice device, const VkDescriptorUpdateTemplateCreateInfo *ci,
    const VkAllocationCallbacks *alloc, VkDescriptorUpdateTemplate *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyDescriptorUpdateTemplate(VkDevice device,
                                                               VkDescriptorUpdateTemplate h,
                                                               const VkAllocationCallbacks *alloc);
VKAPI_ATTR void VKAPI_CALL cap_UpdateDescriptorSetWithTemplate(VkDevice device, VkDescriptorSet set,
                                                               VkDescriptorUpdateTemplate h,
                                                               const void *data);
/* cap_vk_pipelines.c */
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateShaderModule(VkDevice device,
                                                      const VkShaderModuleCreateInfo *ci,
                                                      const VkAllocationCallbacks *alloc,
                                                      VkShaderModule *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyShaderModule(VkDevice device, VkShaderModule mod,
                                                   const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreatePipelineLayout(VkDevice device,
                                                        const VkPipelineLayoutCreateInfo *ci,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkPipelineLayout *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyPipelineLayout(VkDevice device, VkPipelineLayout h,
                                                     const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateComputePipelines(VkDevice device, VkPipelineCache cache,
                                                          uint32_t n,
                                                          const VkComputePipelineCreateInfo *ci,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkPipeline *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyPipeline(VkDevice device, VkPipeline h,
                                               const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateGraphicsPipelines(VkDevice device, VkPipelineCache c,
                                                           uint32_t n,
                                                           const VkGraphicsPipelineCreateInfo *ci,
                                                           const VkAllocationCallbacks *alloc,
                                                           VkPipeline *out);
/* cap_vk_commands.c */
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateCommandPool(VkDevice device,
                                                     const VkCommandPoolCreateInfo *ci,
                                                     const VkAllocationCallbacks *alloc,
                                                     VkCommandPool *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyCommandPool(VkDevice device, VkCommandPool pool,
                                                  const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_ResetCommandPool(VkDevice device, VkCommandPool pool,
                                                    VkCommandPoolResetFlags f);
VKAPI_ATTR VkResult VKAPI_CALL cap_AllocateCommandBuffers(VkDevice device,
                                                          const VkCommandBufferAllocateInfo *ai,
                                                          VkCommandBuffer *out);
VKAPI_ATTR void VKAPI_CALL cap_FreeCommandBuffers(VkDevice device, VkCommandPool pool, uint32_t n,
                                                  const VkCommandBuffer *cbs);
VKAPI_ATTR VkResult VKAPI_CALL cap_BeginCommandBuffer(VkCommandBuffer h,
                                                      const VkCommandBufferBeginInfo *bi);
VKAPI_ATTR VkResult VKAPI_CALL cap_EndCommandBuffer(VkCommandBuffer h);
VKAPI_ATTR VkResult VKAPI_CALL cap_ResetCommandBuffer(VkCommandBuffer h,
                                                      VkCommandBufferResetFlags f);
VKAPI_ATTR void VKAPI_CALL cap_CmdBindPipeline(VkCommandBuffer h, VkPipelineBindPoint bp,
                                               VkPipeline p);
VKAPI_ATTR void VKAPI_CALL cap_CmdBindDescriptorSets(VkCommandBuffer h, VkPipelineBindPoint bp,
                                                     VkPipelineLayout layout, uint32_t first,
                                                     uint32_t n, const VkDescriptorSet *sets,
                                                     uint32_t n_dyn, const uint32_t *dyn);
VKAPI_ATTR void VKAPI_CALL cap_CmdPushConstants(VkCommandBuffer h, VkPipelineLayout layout,
                                                VkShaderStageFlags stages, uint32_t off,
                                                uint32_t size, const void *values);
VKAPI_ATTR void VKAPI_CALL cap_CmdDispatch(VkCommandBuffer h, uint32_t x, uint32_t y, uint32_t z);
VKAPI_ATTR void VKAPI_CALL cap_CmdDispatchBase(VkCommandBuffer h, uint32_t bx, uint32_t by,
                                               uint32_t bz, uint32_t x, uint32_t y, uint32_t z);
VKAPI_ATTR void VKAPI_CALL cap_CmdDispatchIndirect(VkCommandBuffer h, VkBuffer b, VkDeviceSize off);
VKAPI_ATTR void VKAPI_CALL cap_CmdCopyBuffer(VkCommandBuffer h, VkBuffer src, VkBuffer dst,
                                             uint32_t n, const VkBufferCopy *r);
VKAPI_ATTR void VKAPI_CALL cap_CmdCopyBuffer2(VkCommandBuffer h, const VkCopyBufferInfo2 *ci);
VKAPI_ATTR void VKAPI_CALL cap_CmdFillBuffer(VkCommandBuffer h, VkBuffer dst, VkDeviceSize off,
                                             VkDeviceSize size, uint32_t data);
VKAPI_ATTR void VKAPI_CALL cap_CmdUpdateBuffer(VkCommandBuffer h, VkBuffer dst, VkDeviceSize off,
                                               VkDeviceSize size, const void *data);
VKAPI_ATTR void VKAPI_CALL cap_CmdPipelineBarrier(VkCommandBuffer h, VkPipelineStageFlags src,
                                                  VkPipelineStageFlags dst, VkDependencyFlags f,
                                                  uint32_t nm, const VkMemoryBarrier *m,
                                                  uint32_t nb, const VkBufferMemoryBarrier *b,
                                                  uint32_t ni, const VkImageMemoryBarrier *im);
VKAPI_ATTR void VKAPI_CALL cap_CmdPipelineBarrier2(VkCommandBuffer h, const VkDependencyInfo *di);
VKAPI_ATTR void VKAPI_CALL cap_CmdSetEvent(VkCommandBuffer h, VkEvent ev, VkPipelineStageFlags st);
VKAPI_ATTR void VKAPI_CALL cap_CmdSetEvent2(VkCommandBuffer h, VkEvent ev,
                                            const VkDependencyInfo *di);
VKAPI_ATTR void VKAPI_CALL cap_CmdResetEvent(VkCommandBuffer h, VkEvent ev,
                                             VkPipelineStageFlags st);
VKAPI_ATTR void VKAPI_CALL cap_CmdResetEvent2(VkCommandBuffer h, VkEvent ev,
                                              VkPipelineStageFlags2 st);
VKAPI_ATTR void VKAPI_CALL cap_CmdWaitEvents(VkCommandBuffer h, uint32_t n, const VkEvent *evs,
                                             VkPipelineStageFlags src, VkPipelineStageFlags dst,
                                             uint32_t nm, const VkMemoryBarrier *m, uint32_t nb,
                                             const VkBufferMemoryBarrier *b, uint32_t ni,
                                             const VkImageMemoryBarrier *im);
VKAPI_ATTR void VKAPI_CALL cap_CmdWaitEvents2(VkCommandBuffer h, uint32_t n, const VkEvent *evs,
                                              const VkDependencyInfo *di);
VKAPI_ATTR void VKAPI_CALL cap_CmdWriteTimestamp(VkCommandBuffer h, VkPipelineStageFlagBits st,
                                                 VkQueryPool qp, uint32_t q);
VKAPI_ATTR void VKAPI_CALL cap_CmdWriteTimestamp2(VkCommandBuffer h, VkPipelineStageFlags2 st,
                                                  VkQueryPool qp, uint32_t q);
VKAPI_ATTR void VKAPI_CALL cap_CmdResetQueryPool(VkCommandBuffer h, VkQueryPool qp, uint32_t first,
                                                 uint32_t n);
VKAPI_ATTR void VKAPI_CALL cap_CmdExecuteCommands(VkCommandBuffer h, uint32_t n,
                                                  const VkCommandBuffer *cbs);
VKAPI_ATTR void VKAPI_CALL cap_CmdDraw(VkCommandBuffer h, uint32_t a, uint32_t b, uint32_t c,
                                       uint32_t e);
VKAPI_ATTR void VKAPI_CALL cap_CmdDrawIndexed(VkCommandBuffer h, uint32_t a, uint32_t b, uint32_t c,
                                              int32_t o, uint32_t e);
VKAPI_ATTR void VKAPI_CALL cap_CmdBeginRenderPass(VkCommandBuffer h,
                                                  const VkRenderPassBeginInfo *bi,
                                                  VkSubpassContents c);
VKAPI_ATTR void VKAPI_CALL cap_CmdCopyBufferToImage(VkCommandBuffer h, VkBuffer b, VkImage i,
                                                    VkImageLayout l, uint32_t n,
                                                    const VkBufferImageCopy *r);
VKAPI_ATTR void VKAPI_CALL cap_CmdCopyImageToBuffer(VkCommandBuffer h, VkImage i, VkImageLayout l,
                                                    VkBuffer b, uint32_t n,
                                                    const VkBufferImageCopy *r);
VKAPI_ATTR void VKAPI_CALL cap_CmdCopyImage(VkCommandBuffer h, VkImage s, VkImageLayout sl,
                                            VkImage t, VkImageLayout tl, uint32_t n,
                                            const VkImageCopy *r);
VKAPI_ATTR void VKAPI_CALL cap_CmdClearColorImage(VkCommandBuffer h, VkImage i, VkImageLayout l,
                                                  const VkClearColorValue *c, uint32_t n,
                                                  const VkImageSubresourceRange *r);
/* cap_vk_sync.c */
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateFence(VkDevice device, const VkFenceCreateInfo *ci,
                                               const VkAllocationCallbacks *alloc, VkFence *out);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateSemaphore(VkDevice device, const VkSemaphoreCreateInfo *ci,
                                                   const VkAllocationCallbacks *alloc,
                                                   VkSemaphore *out);
VKAPI_ATTR VkResult VKAPI_CALL cap_CreateEvent(VkDevice device, const VkEventCreateInfo *ci,
                                               const VkAllocationCallbacks *alloc, VkEvent *out);
VKAPI_ATTR void VKAPI_CALL cap_DestroyFence(VkDevice device, VkFence f,
                                            const VkAllocationCallbacks *alloc);
VKAPI_ATTR void VKAPI_CALL cap_DestroySemaphore(VkDevice device, VkSemaphore s,
                                                const VkAllocationCallbacks *alloc);
VKAPI_ATTR void VKAPI_CALL cap_DestroyEvent(VkDevice device, VkEvent e,
                                            const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL cap_ResetFences(VkDevice device, uint32_t n, const VkFence *f);
VKAPI_ATTR VkResult VKAPI_CALL cap_WaitForFences(VkDevice device, uint32_t n, const VkFence *f,
                                                 VkBool32 all, uint64_t timeout);
VKAPI_ATTR VkResult VKAPI_CALL cap_GetFenceStatus(VkDevice device, VkFence f);
VKAPI_ATTR VkResult VKAPI_CALL cap_WaitSemaphores(VkDevice device, const VkSemaphoreWaitInfo *wi,
                                                  uint64_t timeout);
VKAPI_ATTR VkResult VKAPI_CALL cap_GetSemaphoreCounterValue(VkDevice device, VkSemaphore sem,
                                                            uint64_t *value);
VKAPI_ATTR VkResult VKAPI_CALL cap_SignalSemaphore(VkDevice device,
                                                   const VkSemaphoreSignalInfo *si);
VKAPI_ATTR VkResult VKAPI_CALL cap_SetEvent(VkDevice device, VkEvent ev);
VKAPI_ATTR VkResult VKAPI_CALL cap_ResetEvent(VkDevice device, VkEvent ev);
VKAPI_ATTR VkResult VKAPI_CALL cap_QueueSubmit(VkQueue queue, uint32_t n, const VkSubmitInfo *si,
                                               VkFence fence);
VKAPI_ATTR VkResult VKAPI_CALL cap_QueueSubmit2(VkQueue queue, uint32_t n, const VkSubmitInfo2 *si,
                                                VkFence fence);
VKAPI_ATTR VkResult VKAPI_CALL cap_QueueWaitIdle(VkQueue queue);
VKAPI_ATTR VkResult VKAPI_CALL cap_DeviceWaitIdle(VkDevice device);
VKAPI_ATTR VkResult VKAPI_CALL cap_QueueBindSparse(VkQueue q, uint32_t n,
                                                   const VkBindSparseInfo *bi, VkFence f);

/* ---- cap_vk_submit.c -------------------------------------------------------------------- */
/* All with cap.mu held. */
struct cap_mem *cap_mem_new(struct cap_dev *dev, uint64_t handle, uint64_t size,
                            uint32_t type_index);
void cap_mem_free(struct cap_mem *m);
/* Host writes since the shadow in [off, off+len) of m, clipped to the mapping: HOST_WRITE
 * ops appended to the chain at *tail. */
void cap_mem_scan(struct cap_mem *m, uint64_t off, uint64_t len, struct cap_ev ***tail,
                  uint64_t now);
/* All mapped allocations of dev (NULL = every device). */
void cap_mem_scan_all(struct cap_dev *dev, struct cap_ev ***tail, uint64_t now);
/* vkMapMemory: finished device writes become HOST_READ ops. */
void cap_mem_mapped(struct cap_mem *m, struct cap_ev ***tail, uint64_t now);
/* Submission of n batches on q, from the v1 or v2 submit infos. */
struct cap_submit_batch {
    uint32_t n_wait, n_cb, n_signal;
    const VkSemaphore *wait;
    const uint64_t *wait_value; /* NULL: binary */
    const uint64_t *wait_stage;
    const VkCommandBuffer *cb;
    const VkSemaphore *signal;
    const uint64_t *signal_value;
    const uint64_t *signal_stage;
};
/* Builds the SUBMIT batch (host writes, SUBMIT, waits, command ops, signals, fence) and
 * records the device writes as pending. pre: the HOST_WRITE ops of the scan made before the
 * driver's vkQueueSubmit (after it, the device may already be writing mapped memory); the
 * batch takes them over, also on failure. NULL when recording failed. */
struct cap_ev *cap_submit_build(struct cap_dev *dev, struct cap_queue *q,
                                const struct cap_submit_batch *b, uint32_t n, VkFence fence, int v2,
                                uint64_t t0, uint64_t t1, struct cap_ev *pre);
/* The host saw submissions on queue (0 = every queue of dev) up to serial finish. Appends
 * HOST_READ ops to *tail. */
void cap_complete(struct cap_dev *dev, uint64_t queue, uint64_t serial, struct cap_ev ***tail,
                  uint64_t now);
void cap_sync_reached(struct cap_dev *dev, struct cap_sync *s, uint64_t value,
                      struct cap_ev ***tail, uint64_t now);
/* Forgets the cached ops of cb (re-recorded, reset or freed). */
void cap_cmdbuf_drop_ops(struct cap_cmdbuf *cb);
/* --digests: after the queue went idle, the output digest of each dispatch in chain. */
void cap_digest_ops(struct cap_ev *chain);
/* At unload (cap_layer_free_all, cap.mu held): frees this file's own state. */
void cap_submit_free_all(void);

/* ---- cap_vk_timing.c -------------------------------------------------------------------- */
/* Record time (the program's thread, no lock): the timestamp before a timed command of cb
 * (returns its query pair, or UINT32_MAX when untimed) and the one after it. */
uint32_t cap_ts_before(struct cap_cmdbuf *cb, VkCommandBuffer h);
void cap_ts_after(struct cap_cmdbuf *cb, VkCommandBuffer h, uint32_t pair);
/* cb's timestamp pair for the command at record index, or UINT32_MAX. */
uint32_t cap_ts_pair(const struct cap_cmdbuf *cb, uint32_t index);
/* Destroys cb's query pools (after cap_timing_settle_cb). cap.mu held. */
void cap_ts_free(struct cap_cmdbuf *cb);
/* cap.mu held. Adds op e (timestamp pair of cb) to *t, creating it. */
void cap_timing_add(struct cap_timing **t, struct cap_ev *e, const struct cap_cmdbuf *cb,
                    uint32_t pair);
/* cap.mu held. Hangs t on the batch head and remembers it until its submission completes. */
void cap_timing_submit(struct cap_timing *t, struct cap_ev *head, struct cap_dev *dev,
                       struct cap_queue *q, uint64_t serial, uint64_t t_submit);
/* cap.mu held. The host saw submissions on queue (0 = all of dev) up to serial finish. */
void cap_timing_complete(struct cap_dev *dev, uint64_t queue, uint64_t serial);
/* cap.mu held. cb is about to be re-recorded, reset, freed or submitted again: pending
 * submissions reading its pools are resolved now with what is available. */
void cap_timing_settle_cb(const struct cap_cmdbuf *cb);
/* Writer, at the end or in an urgent flush, cap.mu held: forgets the pending list and marks
 * its batches ready, so that they are written without device times. */
void cap_timing_drop_all(void);
/* Device creation under --timing: the extension to add to the app's list (or NULL), and
 * loading its entry point afterwards. */
const char *cap_timing_ext(struct cap_inst *in, VkPhysicalDevice phys);
void cap_timing_device(struct cap_dev *d, int ext_enabled);

/* ---- cap_vk_spirv.c --------------------------------------------------------------------- */
/* Parses the decorations of a SPIR-V module. refl->ok = 0 if it could not (then accesses fall
 * back to the descriptor types). Never fails the caller. */
void cap_spirv_reflect(const uint32_t *code, size_t n_words, struct cap_refl *refl);
void cap_refl_free(struct cap_refl *refl);
/* Local size of an entry point after specialization. */
void cap_spirv_local_size(const struct cap_refl *refl, const char *entry,
                          const VkSpecializationInfo *spec, uint32_t out[3]);

#endif /* REPRISE_CAP_VK_INT_H */
