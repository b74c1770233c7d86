/*
 * capture/vk/cap_vk_int.h — what the files of the Vulkan capture layer share: dispatch tables,
 * the shadow of the Vulkan objects the layer tracks, the event queue to the writer thread, the
 * count of unmodelled calls. Only capture/vk/cap_vk_*.c (and the generated cap_vk_gen.c) include
 * this; the per-command parts (ids, next-function tables, the wrappers' prototypes) come from
 * the registry through $(BUILD)/gen/capture/vk/cap_vk_gen.h (capture/vk/cap_vk_gen.py).
 *
 * Files: cap_vk_instance.c (loader interface, instances, devices, queues, name lookup, shadow
 * objects), cap_vk_memory.c, cap_vk_images.c (images, views, samplers), cap_vk_address.c
 * (buffer device addresses), cap_vk_descriptors.c, cap_vk_pipelines.c, cap_vk_commands.c,
 * cap_vk_sync.c (the recorded calls by concern), cap_vk_submit.c (recordings expanded into ops
 * at submit), cap_vk_mapped.c (host writes into mapped memory and device output read back;
 * cap_vk_track.c finds the pages the host wrote),
 * cap_vk_unmodelled.c and cap_vk_tramp.c (what is passed through unrecorded), cap_vk_timing.c,
 * cap_vk_spirv.c, cap_vk_writer.c.
 *
 * Threads. A Vulkan call runs on the program's thread. vkCmd* calls only append to their
 * command buffer's own record buffer (the program synchronises command buffers, so no lock).
 * Every other tracked call takes cap.mu briefly to update the shadow objects, builds finished
 * ops (struct cap_ev) and appends them to its thread's buffer with a number from one global
 * atomic sequence. Mapped memory has a lock per allocation (struct cap_mem.mu, after cap.mu);
 * vkQueueSubmit holds only its queue's lock (struct cap_queue.mu) across the driver. The writer
 * thread (cap_vk_writer.c) drains the thread buffers, puts events back into sequence order and
 * is the only thread that touches the sbt_writer.
 */
#ifndef REPRISE_CAP_VK_INT_H
#define REPRISE_CAP_VK_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "capture/cap.h"
#include "capture/vk/cap_vk_gen.h"
#include "capture/vk/cap_vk_spirv.h"
#include "format/sbt.h"
#include "format/sbt_iset.h"
#include "format/sbt_map.h"
#include "format/sbt_vk.h"

#define CAP_EXPORT __attribute__((visibility("default")))
#define CAP_PAGE   4096u

/* ========================================================================================== */
/* Dispatch tables                                                                            */
/* ========================================================================================== */

/* The next layer's functions of every command of the registry at each dispatch level
 * (struct cap_inst_fns, struct cap_dev_fns), the command ids and the command table come from
 * vk.xml at build time: capture/vk/cap_vk_gen.py writes $(BUILD)/gen/capture/vk/cap_vk_gen.h. */

struct cap_inst {
    void *key; /* the loader's dispatch pointer: *(void **)instance */
    VkInstance handle;
    PFN_vkGetInstanceProcAddr gipa;
    struct cap_inst_fns fn;
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
    int cpu;                   /* VK_PHYSICAL_DEVICE_TYPE_CPU (lavapipe): its device writes are
                                * the CPU's, into the same pages the program writes */
    VkCommandPool ts_pool[16]; /* --timing/--digests helpers, per queue family */
    /* --timing: VK_EXT_calibrated_timestamps enabled by the layer (NULL = not available: device
     * times are aligned to the submit instead, see cap_vk_timing.c) */
    PFN_vkGetCalibratedTimestampsEXT GetCalibratedTimestampsEXT;
    uint64_t calib_at;                /* cap_now() of the last calibration, 0 = none yet */
    uint64_t calib_ticks, calib_host; /* a (device ticks, ns since the trace epoch) pair */
    int addr_replay; /* bufferDeviceAddressCaptureReplay is on (cap_vk_address.c) */
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
    CAP_T_IMAGE,
    CAP_T_IVIEW,
    CAP_T_SAMPLER,
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
struct cap_dev_write {
    uint64_t off, len;
    uint64_t queue;  /* capture id of the queue */
    uint64_t serial; /* submission serial on that queue (the last of those merged here) */
    uint64_t first;  /* the first serial merged here */
};

/* A VkDeviceMemory allocation. Host-visible ones carry what the layer knows of their bytes
 * (cap_vk_mapped.c): the mapping, its write tracking and byte shadow, and the device writes
 * not yet seen finished or not yet read back. */
struct cap_mem {
    struct cap_obj o;
    atomic_int ref;     /* one for cap.mems, one per user holding it without cap.mu */
    pthread_mutex_t mu; /* everything below; taken after cap.mu, never before it */
    uint64_t size;
    uint32_t type_index, props;
    int imported;               /* VK_EXT_external_memory_host: the program's own pages, "mapped"
                                 * at offset 0 from allocation to free */
    int mapped;                 /* a vkMapMemory is in effect (or imported) */
    void *import_ptr;           /* the program's pages it imports (0: none), until the free */
    uint8_t *map_base;          /* the program's address of allocation offset 0 while mapped */
    uint8_t *dev_base;          /* the driver's (where device writes land): map_base unless the
                                 * program writes a copy (struct cap_track.copy) */
    uint64_t map_off, map_len;  /* the mapped range, bytes */
    struct cap_track *tr;       /* how host writes are found in the mapping (cap_vk_mapped.c) */
    struct cap_dev_write *pend; /* device writes of submissions not yet seen complete */
    uint32_t n_pend, cap_pend;
    /* 1 while a thread reads back finished device writes (mem_complete): a wait in another
     * thread that finds nothing pending must still wait for that read-back to end */
    uint32_t completing;
    struct cap_dev_write *done; /* finished device writes not yet read back (memory was unmapped) */
    uint32_t n_done, cap_done;
    struct sbt_iset devb;   /* every byte range device work ever wrote: host-write runs are
                             * never joined across them */
    struct cap_image **img; /* images bound to it (cap_vk_images.c) */
    uint32_t n_img, cap_img;
    uint64_t seen_a, seen_b; /* bytes whose contents when first mapped are in the trace */
};

/* Host-visible memory without HOST_COHERENT (a discrete GPU's, often): host writes reach the
 * device at vkFlushMappedMemoryRanges, device output reaches the mapping at
 * vkInvalidateMappedMemoryRanges (cap_vk_mapped.c, "Non-coherent memory"). */
static inline int cap_mem_noncoherent(const struct cap_mem *m)
{
    return (m->props & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
           !(m->props & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
}

struct cap_buf {
    struct cap_obj o;
    uint64_t size;
    uint64_t usage;      /* VkBufferUsageFlags (or VkBufferUsageFlags2) */
    struct cap_mem *mem; /* NULL until bound */
    uint64_t mem_off;
    uint64_t addr; /* device address the program was given (0 = none yet) */
};

struct cap_bview {
    struct cap_obj o;
    struct cap_buf *buf;
    uint64_t offset, range;
};

/* An image: a trace resource of its own (its capture id), its bytes in the packed layout of
 * format/sbt_vk.h. A linear one bound to host-visible memory keeps where each subresource lies
 * there (vkGetImageSubresourceLayout), so host writes and reads through a mapping become
 * accesses to its packed bytes (cap_vk_images.c). */
struct cap_img_lay { /* one (aspect, mip level): layer 0 and the pitches */
    uint64_t offset, row_pitch, array_pitch, depth_pitch;
};
struct cap_image {
    struct cap_obj o;
    struct sbt_vk_image desc;
    uint64_t packed_size; /* 0: the format is not in the registry (no accesses) */
    uint32_t tiling;
    struct cap_mem *mem; /* NULL until bound */
    uint64_t mem_off, mem_size;
    struct cap_img_lay *lay; /* linear in host-visible memory: per aspect and level, in packed
                                order; NULL otherwise */
    uint32_t n_lay;
};

struct cap_iview {
    struct cap_obj o;
    uint64_t image; /* handle */
    uint32_t view_type, aspect, base_mip, n_mips, base_layer, n_layers;
};

struct cap_sampler {
    struct cap_obj o;
};

struct cap_module {
    struct cap_obj o;
    struct cap_refl refl;
    char label[24]; /* "spirv:" + 8 hex digits of the code's hash: the same shader, the same
                     * name in every trace */
};

struct cap_dsl_binding {
    uint32_t binding, type, count, stages, flags;
    uint32_t base;      /* first slot of this binding in a set */
    uint32_t immutable; /* its samplers are the layout's (pImmutableSamplers) */
};
struct cap_dsl {
    struct cap_obj o;
    struct cap_dsl_binding *b; /* sorted by binding */
    uint32_t n_b, n_slots, flags;
    uint64_t *imm; /* per slot: the immutable sampler's handle (0 = none); NULL when none */
};

#define CAP_MAX_SETS 32u
struct cap_playout {
    struct cap_obj o;
    uint32_t n_sets;
    uint64_t set_layout[CAP_MAX_SETS]; /* handles */
    struct sbt_payload_enc rec; /* PIPELINE_LAYOUT + SET_LAYOUT/SET_BINDING of its sets: kernel rows
                                 * repeat them */
};

struct cap_pipeline {
    struct cap_obj o;
    uint64_t layout_handle;
    uint32_t local[3];
    struct cap_refl_binding *acc; /* copy of the module's reflection */
    uint32_t n_acc;
    int refl_ok;
    uint32_t addresses; /* the module's cap_refl.addresses */
};

/* One descriptor of a set: a buffer range, a buffer view, or an image view (view_handle) with
 * a sampler and layout. */
struct cap_slot {
    uint32_t type;
    uint64_t buf_handle, offset, range, view_handle;
    uint64_t sampler; /* capture id of a sampler (immutable ones from the layout) */
    uint32_t layout;  /* VkImageLayout of an image descriptor */
    uint64_t imm;     /* the layout's immutable sampler for this slot (0: none) */
};
/* A descriptor set, or the push descriptors of one set number of a command buffer being
 * expanded (cap_vk_submit.c; then o is unused). */
struct cap_dset {
    struct cap_obj o;
    uint64_t pool_handle;
    uint64_t layout_id;        /* capture id of its set layout */
    struct cap_dsl_binding *b; /* copy of the layout's bindings (a variable count applied) */
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
    uint32_t type;       /* VkDescriptorUpdateTemplateType */
    uint32_t bind_point; /* push descriptor templates: VkPipelineBindPoint */
};

/* Fences, semaphores, events. Signals remember which submission signals what value, so a
 * host wait that returns tells which submissions finished. */
struct cap_sig {
    uint64_t value, queue, serial;
};
struct cap_sync {
    struct cap_obj o;
    uint32_t kind; /* enum sbt_sync_kind */
    /* Its signals by submitted work, oldest first (cap.mu): all of them since the host last
     * reset it, but for those of a semaphore or fence that the host has seen finish (dropped
     * as the list grows; the last is kept). n_total counts every signal ever recorded. */
    struct cap_sig *sig;
    uint32_t n_sig, cap_sig, n_total;
    /* what a status query last told the host (cap.mu): a poll that learns nothing new (the
     * same fence signal, the same counter value) records nothing, so that a trace does not
     * grow with the number of polls */
    uint32_t polled_n_sig; /* n_total then */
    uint64_t polled_value;
};

struct cap_queue {
    struct cap_obj o;
    uint32_t family, index;
    uint64_t serial;    /* last submission serial (cap.mu) */
    pthread_mutex_t mu; /* held across the driver's vkQueueSubmit: the trace has this queue's
                         * submissions in the driver's order (the program synchronises a queue,
                         * so it is never contended by a valid program) */
    /* The last submission seen finished (cap.mu); whether the one being built writes mapped
     * memory, and (q->mu held) whether one that does was left running on a CPU device because
     * it could not be waited for then (cap_vk_sync.c: "CPU devices") */
    uint64_t done_serial;
    int writes_mapped, stalled;
    /* q->mu held. On a CPU device, the ops of submissions that cannot start before the host
     * does what they wait for, in submission order: numbered and emitted when it has
     * (cap_cpu_drain), so that the trace has them after the host's writes and signal that
     * came before they ran, as they ran. */
    struct cap_ev **deferred;
    uint32_t n_deferred, cap_deferred;
    /* What its submissions after done_serial waited for (cap.mu): once one of them is known
     * finished, so is what it waited for (cap_vk_submit.c, "Waits"). Sorted by serial. */
    struct cap_qwait *waits;
    size_t n_waits, cap_waits;
};
/* A wait of submission serial: a binary semaphore's, resolved at submission to the signalling
 * (queue, at_serial); a timeline semaphore's, (sem, id, value), resolved when the waiting
 * submission is known finished (its signal may be submitted after the wait); an event's
 * (vkCmdWaitEvents: sem, id are the event's); or one on a semaphore nothing the layer saw
 * signals (an import, a swapchain's). */
enum cap_qwait_kind { CAP_QW_BINARY, CAP_QW_TIMELINE, CAP_QW_EVENT, CAP_QW_UNKNOWN };
struct cap_qwait {
    uint64_t serial;
    uint32_t kind;               /* enum cap_qwait_kind */
    uint64_t queue, at_serial;   /* binary: the submission that signalled it */
    uint64_t sem, sem_id, value; /* timeline, event: the handle and capture id, the value waited */
};

struct cap_cmdbuf {
    struct cap_obj o;
    uint64_t pool_handle;
    uint32_t level;
    uint32_t usage;
    struct sbt_payload_enc raw; /* CMD_* records with raw Vulkan handles, as recorded */
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
    uint32_t unmod; /* OP: an UNSUPPORTED marker of unmodelled id unmod - 1 (0 = none) */
};

/* ========================================================================================== */
/* Global state                                                                               */
/* ========================================================================================== */

#define CAP_MAX_BLOCKED 16u
struct cap_global {
    atomic_int on;     /* recording */
    atomic_int failed; /* an internal failure stopped recording */
    atomic_uint_fast64_t seq;
    atomic_uint_fast64_t next_id;
    atomic_uint_fast64_t n_calls;      /* Vulkan calls seen (for bytes per call) */
    atomic_uint_fast32_t gen;          /* command buffer generation (TLS cache) */
    pthread_mutex_t mu;                /* objects and memory shadow */
    struct sbt_map objs[CAP_T__COUNT]; /* per enum cap_type: handle -> struct cap_obj * */
    struct cap_mem **mems;             /* live allocations */
    uint32_t n_mems, cap_mems;
    int timing, digests;
    int cpu_wait; /* CAP_ENV_CPU_WAIT: wait for a CPU device's submissions writing mappings */
    atomic_uint_fast64_t n_cpu_waits;
    /* CPU devices: queues whose submissions from serial `from` on cannot have started (they
     * wait for what the host has yet to do): their may-write bytes are the host's until then.
     * Written under the queue's mu and cap.mu, read without a lock (cap_vk_mapped.c). */
    struct {
        atomic_uint_fast64_t queue, from;
    } blocked[CAP_MAX_BLOCKED];
    struct sbt_map cmd_pools;  /* VkCommandPool -> queue family + 1 (for --timing) */
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
/* A sequence number taken now for a batch queued later with cap_emit_seq (e NULL: nothing to
 * write, the number is given back). Until it is queued, the writer holds later batches back:
 * take it right before the driver call whose ops it numbers. */
uint64_t cap_seq_take(void);
void cap_emit_seq(struct cap_ev *e, uint64_t seq);
/* Wakes the writer now (after waits, so HOST_READ ops do not linger). */
void cap_kick(void);

/* ========================================================================================== */
/* The intercepted calls                                                                      */
/* ========================================================================================== */

/* Recording is on; one more Vulkan call seen; a handle as a 64-bit key. */
#define CAP_ON()    atomic_load_explicit(&cap.on, memory_order_relaxed)
#define CAP_COUNT() atomic_fetch_add_explicit(&cap.n_calls, 1, memory_order_relaxed)
#define CAP_H(x)    ((uint64_t)(uintptr_t)(x))

/* VK_ERROR_DEVICE_LOST from the driver: the trace is written out at once (cap_flush_now of
 * cap_int.h, the reason in capture.flush_reason), since a program whose device is lost rarely
 * exits cleanly. Every wrapper passes the results of its calls through this. */
void cap_device_lost(const char *call);
static inline VkResult cap_vk_result(VkResult r, const char *call)
{
    if (__builtin_expect(r == VK_ERROR_DEVICE_LOST, 0))
        cap_device_lost(call);
    return r;
}

/* ---- cap_vk_unmodelled.c ---------------------------------------------------------------- */
/* Calls the layer passes through without recording them ("unmodelled"), counted by name
 * without a lock. Ids 0 .. CAP_VK_N_CMDS - 1 are the registry's commands (their class says
 * whether they can affect replay); the ids after them name what the registry does not cover:
 * cases a recorded command could not record ("vkCmdCopyImage2 (a structure the capture does
 * not record)"), names the registry does not know and commands the build
 * cannot type (passed on by the trampolines of cap_vk_tramp.c). The first time an affecting
 * one happens, a MARKER op with the UNSUPPORTED mark and its name goes where it happened;
 * at close the END record names each with its count and that op (FORMAT.md section 5). */
#define CAP_UNMOD_DYN 512u /* ids after the registry's commands */
#define CAP_UNMOD_MAX (CAP_VK_N_CMDS + CAP_UNMOD_DYN)
extern atomic_uint_fast64_t cap_unmod_calls[CAP_UNMOD_MAX];
/* The id of what (a string that outlives the layer, or copied when copy is set), made on
 * first use with flags (SBT_UNMODELLED_AFFECTS or 0). A full table gives one catch-all id
 * that affects replay. */
uint32_t cap_unmod_id(const char *what, uint32_t flags, int copy);
/* One occurrence of what; the first of an affecting one puts its marker on d's stream of the
 * calling thread (d NULL: a stream of no device). */
void cap_unmodelled(struct cap_dev *d, const char *what, uint32_t flags);
/* Each structure of a pNext chain the layer does not know (its sType not among known[n]) is
 * one affecting occurrence of "CALL (VkStructureName)": what it asks of the driver is neither
 * recorded nor replayed, so the trace is incomplete, naming it. */
void cap_chain_check(struct cap_dev *d, const char *call, const void *pnext, const uint32_t *known,
                     size_t n);
/* The first call of affecting id happened (once per id; later calls return at once). */
void cap_unmod_first(uint32_t id, struct cap_dev *d);
/* The MARKER op of id for a chain the caller builds (on d's host stream of this thread; set
 * queue_id to put it on a queue); NULL when out of memory. */
struct cap_ev *cap_unmod_marker(struct cap_dev *d, uint32_t id, uint64_t t);
const char *cap_unmod_name(uint32_t id);
/* The writer wrote the first marker of id as op seq. Writer thread only. */
void cap_unmod_seen(uint32_t id, uint64_t seq);
/* At close: the unmodelled calls into the END record (sbt_writer_unsupported) and into the
 * stats file f (may be NULL) as "unmodelled.NAME=COUNT"; returns the number of calls. */
uint64_t cap_unmod_write(sbt_writer *w, FILE *f);
/* Calls that went through the generated wrappers and trampolines (for capture.vulkan_calls). */
uint64_t cap_unmod_total_calls(void);
void cap_unmod_free_all(void);

/* The generated pass-through wrappers count with these. */
static inline void cap_vk_count(uint32_t id)
{
    atomic_fetch_add_explicit(&cap_unmod_calls[id], 1, memory_order_relaxed);
}
static inline void cap_vk_count_affecting(uint32_t id, struct cap_dev *d)
{
    if (__builtin_expect(
            atomic_fetch_add_explicit(&cap_unmod_calls[id], 1, memory_order_relaxed) == 0, 0))
        cap_unmod_first(id, d);
}

/* ---- cap_vk_tramp.c --------------------------------------------------------------------- */
/* A function that counts each call under unmodelled id and jumps to next with every argument
 * as it was (any signature), for a command the layer has no typed wrapper for; owner is the
 * dispatch key of the device or instance it was resolved for. The same (owner, id) gets the
 * same trampoline. NULL where there are none (an architecture other than x86-64, or all
 * CAP_TRAMP_SLOTS used). */
PFN_vkVoidFunction cap_tramp_get(void *owner, uint32_t id, PFN_vkVoidFunction next);
/* Calls of id counted by its trampolines. */
uint64_t cap_tramp_calls(uint32_t id);

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
                         const struct sbt_payload_enc *enc, uint64_t t0);
/* One MARKER op (a state change) with the records in enc, which it frees. */
void cap_emit_marker(struct cap_dev *d, const char *name, struct sbt_payload_enc *enc, uint64_t t0);
/* A MARKER op with one DESTROY record. */
void cap_emit_destroy(struct cap_dev *d, const char *name, uint32_t vk_type, uint64_t id,
                      uint64_t t0);
/* The destruction of an object whose record owns nothing but itself (buffers, views, samplers,
 * sync objects): forgotten, and a DESTROY marker emitted when the layer knew it. */
void cap_destroy_plain(struct cap_dev *d, uint64_t h, uint32_t t, uint32_t vk_type,
                       const char *name);

/* ---- cap_vk_address.c ------------------------------------------------------------------- */
/* Buffer device addresses (the file says how they replay). Device creation: when the program
 * enables bufferDeviceAddress and phys offers capture-replay, ci->pNext is made a copy that
 * turns it on too; *on says whether capture-replay is on. Returns memory to free after
 * vkCreateDevice (NULL: none). */
void *cap_addr_device_info(struct cap_inst *in, VkPhysicalDevice phys, VkDeviceCreateInfo *ci,
                           int *on);
/* vkAllocateMemory with DEVICE_ADDRESS on such a device: ai->pNext made a copy that adds
 * DEVICE_ADDRESS_CAPTURE_REPLAY. Returns memory to free after the call (NULL: none). */
void *cap_addr_alloc_info(struct cap_dev *d, VkMemoryAllocateInfo *ai);
/* The opaque capture address of allocation m made with ai (0: none). */
uint64_t cap_addr_memory_opaque(struct cap_dev *d, const VkMemoryAllocateInfo *ai,
                                VkDeviceMemory m);
/* A buffer's usage (maintenance5's VkBufferUsageFlags2CreateInfo replaces ci->usage). */
uint64_t cap_addr_buffer_usage(const VkBufferCreateInfo *ci);
/* vkCreateBuffer with SHADER_DEVICE_ADDRESS on such a device: the capture-replay flag added to
 * ci->flags; 1 if it was. */
int cap_addr_buffer_info(struct cap_dev *d, VkBufferCreateInfo *ci);
/* The opaque capture address of buffer b made with ci (0: none). */
uint64_t cap_addr_buffer_opaque(struct cap_dev *d, const VkBufferCreateInfo *ci, VkBuffer b);

/* ---- cap_vk_commands.c ------------------------------------------------------------------ */
/* An unrecorded vkCmd* (generated wrappers): counted, and a CMD_UNSUPPORTED record in the
 * command buffer's recording, so the marker goes where a submission carrying it runs. */
void cap_vk_count_cmd(VkCommandBuffer h, uint32_t id);

/* ---- cap_vk_descriptors.c --------------------------------------------------------------- */
/* The SET_LAYOUT and SET_BINDING records of l (pipeline layouts repeat them). */
void cap_enc_set_layout(struct sbt_payload_enc *enc, const struct cap_dsl *l);
/* Descriptor writes. A write is recorded as "binding, array element, VkDescriptorType, n" and n
 * tuples of CAP_DESC_TUPLE arguments (format/sbt_vk.h WRITE_SET after its set id; CMD_PUSH_SET),
 * with the program's handles until cap_write_ids makes them capture ids. Set updates and push
 * descriptors share these, so a descriptor type the capture learns to record is recorded on
 * every path. */
#define CAP_DESC_TUPLE 4u
/* 1 when descriptors of type t are recorded; else why not, for the unmodelled name. */
int cap_desc_recorded(uint32_t t);
const char *cap_desc_why(uint32_t t);
/* Appends the arguments of w (a record being built in enc; handles). No lock needed. */
void cap_enc_write(struct sbt_payload_enc *enc, const VkWriteDescriptorSet *w);
/* The write at a[0..n) (handles) into the slots of s; returns its number of arguments, 0 if it
 * is malformed. */
uint32_t cap_dset_apply(struct cap_dset *s, const uint64_t *a, uint32_t n);
/* The handles of the write at a[0..n) made capture ids (VK_WHOLE_SIZE ranges resolved); returns
 * its number of arguments, 0 if malformed. cap.mu held. */
uint32_t cap_write_ids(uint64_t *a, uint32_t n);
/* s (its o, pool_handle untouched) shaped like set layout l, every slot empty; var is the
 * variable descriptor count of l's variable-count binding. The layout's immutable samplers are
 * in place in a set (a set starts with them), and in push descriptors (push) only once a write
 * names their binding: push descriptors start undefined, immutable samplers too (a dispatch
 * that uses one never pushed then lacks it, as the specification says, and replay says so;
 * NVIDIA's driver computes with something else, lavapipe with the immutable sampler). 0, or -1
 * (out of memory: recording stops). */
int cap_dset_shape(struct cap_dset *s, const struct cap_dsl *l, uint32_t var, int push);
void cap_dset_release(struct cap_dset *s);
/* The VkWriteDescriptorSet structures (dstSet unset) a template update with data amounts to,
 * handed to fn one by one. cap.mu held (t is a shadow). */
void cap_templ_writes(const struct cap_templ *t, const void *data,
                      void (*fn)(void *ctx, const VkWriteDescriptorSet *w), void *ctx);

/* ---- cap_vk_images.c -------------------------------------------------------------------- */
/* With cap.mu held, but for cap_img_split and cap_img_host_op, which want the memory's m->mu
 * (the images bound to a memory and their layouts change under both). */
/* Image types of descriptors: sampler, combined image sampler, sampled and storage image. */
int cap_is_image_desc(uint32_t type);
/* The packed ranges of image im that view v covers, as accesses: fn(ctx, offset, length) for
 * each. */
void cap_img_view_ranges(const struct cap_image *im, const struct cap_iview *v,
                         void (*fn)(void *ctx, uint64_t off, uint64_t len), void *ctx);
/* [a, b) of m split at the images bound there: fn_mem(ctx, x, y) for the parts on none,
 * fn_img(ctx, image, x, y) for the parts on one (memory offsets), in order. */
void cap_img_split(struct cap_mem *m, uint64_t a, uint64_t b,
                   void (*fn_mem)(void *ctx, uint64_t x, uint64_t y),
                   void (*fn_img)(void *ctx, struct cap_image *im, uint64_t x, uint64_t y),
                   void *ctx);
/* A HOST_WRITE (the bytes) or HOST_READ (their digest) op of the packed rows of linear image
 * im that [x, y) of its memory holds, read at base (the address of memory offset 0: the
 * program's view for writes, the driver's mapping for reads), or NULL when it holds none (or im
 * is not linear: the host cannot address optimal tiling). Its memory must be mapped there. */
struct cap_ev *cap_img_host_op(struct cap_image *im, uint32_t kind, uint64_t x, uint64_t y,
                               const uint8_t *base, uint64_t now);
/* Does a buffer or image bound at [off, off+size) of m overlap an image bound there? Counts the
 * aliasing as unmodelled (affects replay) when so. */
void cap_img_check_alias(struct cap_dev *d, struct cap_mem *m, uint64_t off, uint64_t size,
                         const struct cap_image *self, const char *what);
/* m is being freed: its images lose their memory. */
void cap_img_mem_freed(struct cap_mem *m);

/* ---- cap_vk_mapped.c (and cap_vk_track.c) ---------------------------------------------- */
/* Host-visible memory as the host sees it: host writes into mappings found exactly and
 * cheaply, device output read back (the file's header says how). m->mu is taken after
 * cap.mu, never before it; the functions that take an allocation want m->mu held unless said
 * otherwise, and emit their ops themselves. */
enum cap_track_mode { CAP_TRACK_NONE, CAP_TRACK_UFFD, CAP_TRACK_PROTECT, CAP_TRACK_SCAN };
/* At init (before the signal handlers are installed): the tracking this process can use. */
void cap_mapped_init(void);
/* The tracking chosen and why (at_close 0), or what the mappings used (at_close 1), for the
 * trace's metadata; returns the length written. */
size_t cap_mapped_describe(char *buf, size_t len, int at_close);
/* cap.mu held: a new allocation (one reference, held by cap.mems), or NULL (recording off). */
struct cap_mem *cap_mem_new(struct cap_dev *dev, uint64_t handle, uint64_t size,
                            uint32_t type_index);
/* cap.mu held, after cap_obj_del: out of cap.mems; freed when the last reference goes. */
void cap_mem_release(struct cap_mem *m);
/* The allocation of handle with a reference (takes cap.mu), or NULL. */
struct cap_mem *cap_mem_get(uint64_t handle);
void cap_mem_unref(struct cap_mem *m);
/* cap.mu held: the allocation with capture id, or NULL. */
struct cap_mem *cap_mem_by_id(uint64_t id);
/* The driver mapped [off, off+len) at *pp (placed: at an address the program chose): host
 * writes are found there from now on. The program may be handed a copy instead (memory the
 * CPU reads slowly, non-coherent memory): *pp is replaced. Device writes finished while
 * unmapped become HOST_READ ops (non-coherent memory: at the program's next invalidate). */
void cap_mem_map(struct cap_mem *m, uint64_t off, uint64_t len, void **pp, int placed,
                 uint64_t now);
/* VK_EXT_external_memory_host: the allocation is the program's pages at ptr. Their contents
 * now become one HOST_WRITE, and host writes are found there as in a mapping until the free
 * (cap_mem_unmap). */
void cap_mem_import(struct cap_mem *m, void *ptr, uint64_t now);
/* Before the driver unmaps: the last host writes published, the tracking undone. */
void cap_mem_unmap(struct cap_mem *m, uint64_t now);
/* Host writes in [off, off+len) of m (whole pages of the mapping) as HOST_WRITE ops. */
void cap_mem_publish(struct cap_mem *m, uint64_t off, uint64_t len, uint64_t now);
/* The same for every mapped allocation of dev (NULL: all) but non-coherent ones (theirs reach
 * the device at a flush only). Takes cap.mu, then each m->mu. */
void cap_publish_all(struct cap_dev *dev, uint64_t now);
/* The driver invalidated [off, off+len) of non-coherent m's mapping (VK_WHOLE_SIZE: to its
 * end): the finished device writes there become HOST_READ ops and the program's view. m->mu
 * held. */
void cap_mem_invalidate(struct cap_mem *m, uint64_t off, uint64_t len, uint64_t now);
/* Device work of submission (queue, serial) may write [off, off+len) of m: remembered until a
 * wait says it finished. Takes m->mu (cap.mu may be held). Returns 1 when m is mapped (the
 * write lands where the program reads and writes), else 0. */
int cap_mem_pend(struct cap_mem *m, uint64_t off, uint64_t len, uint64_t queue, uint64_t serial);
/* Does unfinished device work write somewhere in [a, b) of m? */
int cap_mem_pending(const struct cap_mem *m, uint64_t a, uint64_t b);
/* len bytes at offset off of the program's view, when mapped and no unfinished device work
 * writes them (the host's last writes were published): 1 and *out filled, else 0. */
int cap_mem_read_args(struct cap_mem *m, uint64_t off, void *out, size_t len);
/* Adds [off, off+len) of m as the device left it to h, mapping it for the moment if the
 * program has not (--digests, after the queue went idle). */
void cap_mem_digest(struct cap_mem *m, uint64_t off, uint64_t len, sbt_hasher *h);
/* The host saw submissions of queue (0: every queue of dev) up to serial finish: HOST_READ ops
 * for what they wrote. cap.mu must not be held. */
void cap_complete(struct cap_dev *dev, uint64_t queue, uint64_t serial, uint64_t now);
/* On a CPU device, queue's submissions from serial from on wait for the host (cap_vk_sync.c,
 * "CPU devices"): the mapped pages they may wholly write are the host's until they start,
 * compared at each publish instead of left to the device. cap.mu must not be held. */
void cap_mem_host_owned(struct cap_dev *dev, uint64_t queue, uint64_t from);
/* Before the driver destroys dev: the mappings it still has published and untracked (their
 * pages go away with it). */
void cap_mapped_device_gone(struct cap_dev *dev);
/* At shutdown, before the trace closes: last host writes published, every page writable. */
void cap_mapped_shutdown(void);

/* ---- cap_vk_submit.c -------------------------------------------------------------------- */
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
/* Builds the SUBMIT batch (SUBMIT, waits, command ops, signals, fence) and records its device
 * writes as pending and its signals, before the driver sees it (the host writes it can read
 * were published just before: cap_publish_all). cap.mu and q->mu held. NULL when recording
 * failed. If the driver then refuses the submission, cap_submit_abandon undoes it. version: 1
 * for vkQueueSubmit, 2 for vkQueueSubmit2. */
struct cap_ev *cap_submit_build(struct cap_dev *dev, struct cap_queue *q,
                                const struct cap_submit_batch *b, uint32_t n, VkFence fence,
                                int version, uint64_t t0, uint64_t t1);
/* cap.mu held: the driver refused the submission chain was built for (batches b as given to
 * cap_submit_build): its signals forgotten, its timing dropped; chain is freed. */
void cap_submit_abandon(struct cap_dev *dev, struct cap_queue *q, const struct cap_submit_batch *b,
                        uint32_t n, VkFence fence, struct cap_ev *chain);
/* What a wait that returned tells: the submissions (queue, serial) the host now knows finished
 * (the latest per queue). cap.mu held to find them, not to complete them. */
#define CAP_REACHED_MAX 64u
struct cap_reached {
    uint32_t n;
    int overflow; /* more queues than that: the rest are not seen finished (loud) */
    struct {
        uint64_t queue, serial;
    } v[CAP_REACHED_MAX];
};
void cap_sync_reached(struct cap_sync *s, uint64_t value, struct cap_reached *r);
/* Frees what a sync object owns besides itself (its signals). */
void cap_sync_free(struct cap_sync *s);
/* cap.mu held. Notes what submission serial of q waits for beyond its semaphores (the events
 * its command buffers wait for: EVENT_WAIT ops of chain) and which events they set
 * (EVENT_RECORD ops): a device-set event the host sees set tells that the setting work ran. */
void cap_submit_events(struct cap_queue *q, uint64_t serial, const struct cap_ev *chain);
/* cap.mu held. 1 when everything q's unfinished submissions wait for has been signalled, or
 * will be by work that itself waits for nothing the host has yet to do: then the host can
 * wait for q without waiting for itself. 0 when one of them waits for what is not signalled
 * and nothing submitted will signal (a value the host has yet to signal, an event it has yet
 * to set): *blocked_from is then its serial, and neither it nor what follows it on q can have
 * started. -1 when that is not known (a semaphore signalled by what the layer did not see). */
int cap_queue_can_drain(struct cap_dev *dev, struct cap_queue *q, uint64_t *blocked_from);
/* The first serial of queue (capture id) that cannot have started, or 0 (lock-free). */
uint64_t cap_blocked_from(uint64_t queue);
/* cap_vk_sync.c. On a CPU device, after the host let device work run (a signal, a set event, a
 * submission): waits for each queue holding work that writes mapped memory and that could not
 * be waited for at its submission, once nothing it waits for is the host's to do any more, and
 * completes it, before the host can write again. No lock held. */
void cap_cpu_drain(struct cap_dev *d);
/* Emits q's deferred submissions (above) now: the host learned that they finished, or the
 * device goes. No lock held. */
void cap_queue_flush_deferred(struct cap_queue *q);
/* Completes what r names and what it waited for through semaphores, transitively (r grows;
 * cap.mu not held). */
void cap_reached_complete(struct cap_dev *dev, struct cap_reached *r, uint64_t now);
/* Forgets the cached ops of cb (re-recorded, reset or freed). */
void cap_cmdbuf_drop_ops(struct cap_cmdbuf *cb);
/* --digests: after the queue went idle, the output digest of each dispatch in chain. */
void cap_digest_ops(struct cap_ev *chain);

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
/* cap.mu held. t's submission never reached the driver: forgotten (its batch frees it). */
void cap_timing_forget(struct cap_timing *t);
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

#endif /* REPRISE_CAP_VK_INT_H */
