/*
 * replay/vk/replay_vk_int.h — what the files of the Vulkan replay backend share: its state (device,
 * queues, batches, objects by capture id) and the functions one file calls in another. Only
 * replay/vk/replay_vk*.c include this. replay_vk.c says how the backend works as a whole.
 *
 *   replay_vk.c           the backend interface: exec dispatch, read, reset, close
 *   replay_vk_device.c    instance, device choice, device creation (queues, extensions, features)
 *   replay_vk_queue.c     batches and their submission, completion, timestamps, staging, drain
 *   replay_vk_pipeline.c  set layouts, pipeline layouts, compute pipelines (prepare)
 *   replay_vk_cmd.c       device ops recorded into batches: dependencies, dispatches, transfers,
 *                         read-backs
 *   replay_vk_memory.c    host-side ops: allocations, host writes and reads, API state markers
 *                         (buffers, views, layouts)
 *   replay_vk_image.c     images, image views, samplers; image copies, blits, clears; an image's
 *                         packed bytes read and written through buffer<->image copies
 */
#ifndef REPRISE_REPLAY_VK_INT_H
#define REPRISE_REPLAY_VK_INT_H

#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "format/sbt_map.h"
#include "format/sbt_vk.h"
#include "replay/replay_int.h"

#define MAX_QUEUES    16
#define QUERIES       1024 /* timestamps per batch (2 per timed op) */
#define STAGING_CHUNK (4u << 20)
#define MAX_SETS      8
#define FF_CHUNK      1024 /* untimed ops per submission: overlaps recording and execution */

/* What the checks of replay_vk_check.c compare with: the replay device's limits. */
struct vkr_limits {
    uint32_t max_push_constants;
    uint32_t max_group_count[3], max_group_size[3], max_invocations;
    uint64_t max_storage_range, max_uniform_range;
    uint64_t storage_align, uniform_align, texel_align;
    uint32_t max_texel_elements;
    uint32_t max_bound_sets;
    uint32_t min_subgroup, max_subgroup; /* required subgroup sizes it accepts; 0, 0 = none */
    uint32_t subgroup_size;              /* the default (VkPhysicalDeviceSubgroupProperties) */
};

/* ========================================================================================== */
/* State                                                                                      */
/* ========================================================================================== */

/* A captured allocation. Its bytes live in `mem` at their captured offsets, except the ranges
 * of buffers this device could not bind there (alignment, memory type): those buffers have
 * memory of their own and `reloc` sends their range there (replay_vk_memory.c). */
struct mem {
    VkDeviceMemory mem;
    VkBuffer whole; /* over the whole allocation: zero-fill, read-back */
    uint64_t size;
    uint32_t type;
    uint32_t flags; /* the captured memory type's VkMemoryPropertyFlags */
    int host_visible, coherent;
    uint8_t *map;
    struct buf **bound; /* buffers bound to it (destroyed ones included until freed) */
    uint32_t n_bound, cap_bound;
    struct buf **reloc; /* relocated buffers among them, sorted by mem_off, disjoint */
    uint32_t n_reloc, cap_reloc;
};

struct buf {
    VkBuffer buf;
    uint64_t size;
    uint64_t usage;   /* as captured */
    struct mem *mem;  /* bound memory (NULL: none, or it was freed) */
    uint64_t mem_off; /* where the capture bound it */
    uint64_t id;
    VkDeviceMemory own; /* relocated: its own memory (the buffer at offset 0), else NULL */
    uint8_t *own_map;
    int own_coherent;
};

struct bview {
    VkBufferView view;
    uint64_t buf, offset, range;
};

/* A captured image: memory of its own (bound at BIND_IMAGE), always in the general layout, so
 * the captured layout transitions need no replay and any op may use it as recorded. Its bytes,
 * as the trace defines them, are the packed layout of format/sbt_vk.h, read and written through
 * buffer<->image copies whatever the tiling (transfer usage is added where the format allows). */
struct img {
    VkImage image;
    VkDeviceMemory mem; /* VK_NULL_HANDLE until bound */
    uint64_t id;
    struct sbt_vk_image desc;
    uint64_t packed_size;
    uint32_t aspects; /* of its format */
    uint32_t flags;   /* VkImageCreateFlags as created */
    int linear;       /* VK_IMAGE_TILING_LINEAR */
    int transfer;     /* has TRANSFER_SRC and TRANSFER_DST usage: its bytes can be copied */
};

struct iview {
    VkImageView view;
    uint64_t image;
};

/* A set layout as replay made it: the captured bindings with their binding flags, the layout
 * flags replay keeps (update-after-bind pools; push-descriptor layouts become ordinary ones,
 * since replay allocates a set per dispatch). */
struct setlayout {
    VkDescriptorSetLayout dsl;
    uint32_t n_b;
    uint32_t *binding, *type, *count, *flags; /* flags: VkDescriptorBindingFlags */
    int uab;     /* made with UPDATE_AFTER_BIND_POOL: its sets come from such pools */
    int32_t var; /* index of the variable-count binding, -1 = none */
};

struct playout {
    VkPipelineLayout pl;
    uint32_t n_sets;
    uint64_t sets[MAX_SETS];
    uint32_t n_push;
    uint32_t push_stage[32], push_off[32], push_size[32];
};

struct pipe {
    VkPipeline pipe;
    uint64_t layout;
    char *error; /* why it could not be created */
    /* the descriptors its shader declares, as set << 32 | binding, from the module's SPIR-V
     * reflection (MODULE_BINDING records): a dispatch must write each one, or the driver
     * reads an unwritten descriptor. used_all: no reflection, so every binding of the
     * layout must be written. */
    uint64_t *used;
    uint32_t n_used;
    int used_all;
    int reads_numwg; /* its module declares the NumWorkgroups built-in (split leaves it whole) */
};

/* Staging memory for read-backs (host-visible, mapped). */
struct staging {
    VkBuffer buf;
    VkDeviceMemory mem;
    uint8_t *map;
    uint64_t size, used;
    int coherent;
    struct staging *next;
};

/* A read-back request: access i of an op lands at staging offset. */
struct rb {
    uint32_t acc;
    struct staging *st;
    uint64_t off, len;
};

struct bop { /* an op in a batch, reported when the batch completes */
    uint64_t slot;
    int32_t q0;         /* first timestamp query, -1 = none */
    uint32_t n_access;  /* for read-backs */
    uint32_t rb0, n_rb; /* into batch.rbs */
};

/* A descriptor pool; uab: made with UPDATE_AFTER_BIND (for such set layouts). */
struct dpool {
    VkDescriptorPool pool;
    int uab;
};

struct batch {
    VkCommandBuffer cb;
    VkQueryPool qp;
    uint32_t n_queries;
    uint64_t value; /* timeline value it signals */
    struct bop *ops;
    uint32_t n_ops, cap_ops;
    struct rb *rbs;
    uint32_t n_rb, cap_rb;
    struct staging *staging; /* chunks it owns */
    struct dpool *pools;
    uint32_t n_pools, cap_pools;
    VkSemaphore *wait_sem;
    uint64_t *wait_val;
    uint32_t n_wait, cap_wait;
    /* accesses since the last barrier (hazard check), with the seq of the op of each */
    struct sbt_access *acc;
    uint64_t *acc_seq;
    uint32_t n_acc, cap_acc, cap_acc_seq;
    int has_cmds;
    int had_base;          /* a dispatch with a nonzero base was recorded (see rec_dispatch) */
    VkPipeline bound_pipe; /* last compute pipeline bound in cb (VK_NULL_HANDLE = none) */
    struct batch *next;    /* in flight list / free list */
};

struct rq { /* a replay queue for one trace stream */
    VkQueue q;
    uint32_t family;
    int ts; /* timestamps supported */
    VkCommandPool pool;
    VkSemaphore timeline;
    uint64_t value;      /* last value submitted */
    uint64_t done_value; /* last value retired */
    struct batch *open;  /* being recorded, or NULL */
    struct batch *flight, **flight_tail;
};

struct vkbe {
    sbt_reader *r;
    struct replay_bk_cb cb;
    uint32_t verify;
    /* a perturbed run (replay.h): poison fills new memory, split cuts dispatches; what they
     * changed is counted into *ps */
    struct replay_perturb perturb;
    struct replay__pstats *ps;
    struct sbt_map host_mems; /* poison: memory ids the host writes or reads (mapped) */
    VkInstance inst;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkPhysicalDeviceProperties props;
    struct vkr_limits lim;
    VkPhysicalDeviceMemoryProperties memp;
    uint32_t n_fam;
    VkQueueFamilyProperties fam[32];
    uint32_t whole_type_bits; /* memory types a generic buffer accepts */
    /* buffer device addresses: the capture had bufferDeviceAddressCaptureReplay on (the trace
     * holds opaque capture addresses), and this device has it on (buffers and memory are made at
     * their captured addresses) */
    int addr_capture, addr_replay;
    /* the trace's pipelines chain VkPipelineRobustnessCreateInfo asking only for the default
     * or no robustness, and this device lacks VK_EXT_pipeline_robustness: not chained */
    int no_robustness;
    double ts_period;  /* ns per tick */
    int64_t ts_offset; /* host ns = ticks * period + offset */
    uint64_t ts_mask;
    /* streams: trace stream id -> replay queue index; queues */
    uint32_t n_streams;
    int32_t *stream_q; /* [n_streams + 1], -1 = host */
    struct rq q[MAX_QUEUES];
    uint32_t n_q;
    uint32_t families[MAX_QUEUES], n_families; /* distinct families in use */
    /* where each executed op went: slot -> queue + 1 (0 = host, complete), timeline value;
     * grown as slots come (the engine numbers the ops it executes from 1) */
    uint8_t *slot_q;
    uint64_t *slot_val;
    uint64_t n_slots;
    /* objects by capture id */
    struct sbt_map mems, bufs, views, setlayouts, playouts, pipes, modules;
    struct sbt_map imgs, iviews, samplers; /* struct img, struct iview, VkSampler (malloc'd) */
    struct buf **dead_bufs;                /* destroyed by the trace; freed at drain */
    uint32_t n_dead, cap_dead;
    struct img **dead_imgs; /* the same for images, views and samplers */
    uint32_t n_dead_imgs, cap_dead_imgs;
    struct iview **dead_iviews;
    uint32_t n_dead_iviews, cap_dead_iviews;
    VkSampler *dead_samplers;
    uint32_t n_dead_samplers, cap_dead_samplers;
    struct staging *free_staging;
    struct dpool *free_pools;
    uint32_t n_free_pools, cap_free_pools;
    /* rec_dispatch's scratch arrays, grown as needed */
    struct vkr_scratch {
        VkWriteDescriptorSet *w;
        VkDescriptorBufferInfo *bi;
        VkBufferView *bv;
        VkDescriptorImageInfo *ii; /* image and sampler descriptors */
        uint64_t *written;         /* set << 32 | binding of each write */
        uint32_t *dyn;
        uint32_t cap_w, cap_dyn;
    } scr;
    /* one-shot submissions (zero-fill) */
    VkCommandPool os_pool;
    VkFence os_fence;
};

/* Every Vulkan failure while executing is the device's (lost, out of memory): the run stops. */
#define VKFAIL(r, what) replay__fail(REPLAY_EDEVICE, "%s failed: VkResult %d", what, (int)(r))

static inline int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, (size_t)c * elem);
    if (!n)
        return replay__fail(SBT_ENOMEM, "out of memory");
    *p = n;
    *cap = c;
    return 0;
}

static inline int vkr_is_texel(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER ||
           t == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
}

/* Sampler and image descriptors (IMAGE_BINDING records). */
static inline int vkr_is_image(uint32_t t)
{
    return t == VK_DESCRIPTOR_TYPE_SAMPLER || t == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER ||
           t == VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE || t == VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
}

/* ---- replay_vk_check.c ------------------------------------------------------------------ */
/* Each returns 0, or a status with a message naming the value and what it exceeds:
 * SBT_ECORRUPT when the trace cannot be right, REPLAY_ENODEV when this device's limit is the
 * obstacle, REPLAY_EUNSUPPORTED for what replay does not do. No Vulkan calls (fuzzed). */
void vkr_limits_from(struct vkr_limits *l, const VkPhysicalDeviceLimits *d, uint32_t min_subgroup,
                     uint32_t max_subgroup, uint32_t subgroup_size);
/* A FEATURES record: *t its structure in the registry's table (NULL if none). */
int vkr_check_features(const struct sbt_payload_rec *r, const struct sbt_vk_feature_struct **t);
int vkr_check_dispatch(const struct vkr_limits *l, const struct sbt_payload_rec *d);
int vkr_check_indirect(uint64_t offset, uint64_t buf_size);
int vkr_check_binding(const struct vkr_limits *l, const struct sbt_payload_rec *r,
                      uint64_t buf_size);
/* *n_regions: how many regions the record holds (checked against its arguments). */
int vkr_check_copy(const struct sbt_payload_rec *r, uint64_t src_size, uint64_t dst_size,
                   uint32_t *n_regions);
int vkr_check_fill(const struct sbt_payload_rec *r, uint64_t buf_size);
int vkr_check_update(const struct sbt_payload_rec *r, uint64_t data_len, uint64_t buf_size);
int vkr_check_set_layout(const struct sbt_payload_rec *r);
/* A SET_BINDING record of a layout with the SET_LAYOUT flags layout_flags. */
int vkr_check_set_binding(const struct sbt_payload_rec *r, uint64_t layout_flags);
int vkr_check_playout(const struct vkr_limits *l, const struct sbt_payload_rec *r,
                      uint32_t max_sets);
/* A PIPELINE record; *flags: the VkPipelineCreateFlags replay creates it with (those of the
 * capture that change what it computes; the rest only ask for caching, statistics or
 * derivatives). */
int vkr_check_pipeline(const struct vkr_limits *l, const struct sbt_payload_rec *p,
                       uint32_t *flags);
int vkr_check_spec_entry(const struct sbt_payload_rec *r, uint32_t data_len);
int vkr_check_spirv(const void *code, size_t len);
/* 1 if the SPIR-V module (checked by vkr_check_spirv) decorates something BuiltIn
 * NumWorkgroups, 0 if not, -1 if its instruction stream is malformed (word count 0 or past
 * the end): then nobody can tell, and callers treat it as reading it. */
int vkr_spirv_reads_numwg(const void *code, size_t len);
/* Calls fn(ctx, capability) for each OpCapability of the module (checked by vkr_check_spirv).
 * 0, or -1 if its instruction stream is malformed (then nobody can tell which it declares). */
int vkr_spirv_capabilities(const void *code, size_t len, void (*fn)(void *ctx, uint32_t cap),
                           void *ctx);
int vkr_check_buffer(const struct sbt_payload_rec *r);
int vkr_check_view(const struct vkr_limits *l, const struct sbt_payload_rec *r, uint64_t buf_size);
int vkr_check_access(const struct sbt_access *a, uint64_t mem_size, uint64_t seq);
/* CREATE_IMAGE: *desc and *size (its packed size, which must be the record's) on success. */
int vkr_check_image(const struct sbt_payload_rec *r, struct sbt_vk_image *desc, uint64_t *size);
/* CREATE_IMAGE_VIEW of an image described by im (with its create flags). */
int vkr_check_image_view(const struct sbt_payload_rec *r, const struct sbt_vk_image *im,
                         uint32_t im_flags);
/* CREATE_SAMPLER against the device's sampler limits (max_anisotropy 0: no anisotropy). */
int vkr_check_sampler(const struct sbt_payload_rec *r, float max_anisotropy);
/* The float whose bits are the low 32 of a record argument. */
float vkr_float_of(uint64_t v);
/* IMAGE_BINDING (the objects it names are looked up by the caller). */
int vkr_check_image_binding(const struct sbt_payload_rec *r);
/* The device-op payloads of images: region counts against the arguments, every region inside
 * its image(s) and buffer (sizes), aligned as Vulkan requires. *n_regions on success. */
int vkr_check_buf_img_copy(const struct sbt_payload_rec *r, uint64_t buf_size,
                           const struct sbt_vk_image *im, uint32_t *n_regions);
int vkr_check_img_copy(const struct sbt_payload_rec *r, const struct sbt_vk_image *src,
                       const struct sbt_vk_image *dst, uint32_t *n_regions);
int vkr_check_blit(const struct sbt_payload_rec *r, const struct sbt_vk_image *src,
                   const struct sbt_vk_image *dst, uint32_t *n_regions);
int vkr_check_clear(const struct sbt_payload_rec *r, const struct sbt_vk_image *im,
                    uint32_t *n_ranges);

/* ---- replay_vk_device.c ----------------------------------------------------------------- */
int vkr_devices(struct replay_device_info *out, uint32_t max);
int vkr_open(sbt_reader *r, const struct replay_bk_opts *o, const struct replay_bk_cb *cb,
             struct replay_device_info *info, void **be);

/* ---- replay_vk_queue.c ------------------------------------------------------------------ */
/* A command buffer submitted alone on queue 0, waited for (zero-fills, reads). */
int vkr_oneshot_begin(struct vkbe *b, VkCommandBuffer *cb);
int vkr_oneshot_end(struct vkbe *b, VkCommandBuffer cb);
/* Maps device ticks to the host clock (b->ts_offset) with one timestamp. */
int vkr_timestamp_calibrate(struct vkbe *b, struct rq *q);
/* The memory type among bits with all of need and the most of prefer; UINT32_MAX if none. */
uint32_t vkr_find_type(const struct vkbe *b, uint32_t bits, uint32_t need, uint32_t prefer);
struct staging *vkr_staging_get(struct vkbe *b, uint64_t need);
void vkr_staging_destroy(struct vkbe *b, struct staging *s);
/* Opens a batch on q if none is open. */
int vkr_batch_open(struct vkbe *b, struct rq *q);
int vkr_batch_add_wait(struct batch *x, VkSemaphore s, uint64_t v);
/* Submits q's open batch. */
int vkr_flush(struct vkbe *b, struct rq *q);
/* Waits until queue q reached value v (flushing first if v is the open batch) and retires. */
int vkr_wait_value(struct vkbe *b, struct rq *q, uint64_t v);
/* Retires what has completed without waiting. */
void vkr_poll_done(struct vkbe *b, struct rq *q);
void vkr_dead_bufs_free(struct vkbe *b);
int vkr_drain(void *be);

/* ---- replay_vk_pipeline.c --------------------------------------------------------------- */
/* A SET_LAYOUT record sl with its SET_BINDING records following in dec. */
struct setlayout *vkr_make_setlayout(struct vkbe *b, const struct sbt_payload_rec *sl,
                                     struct sbt_payload_dec *dec, int *st);
struct playout *vkr_make_playout(struct vkbe *b, const struct sbt_payload_rec *r, int *st);
int vkr_prepare(void *be);

/* ---- replay_vk_cmd.c -------------------------------------------------------------------- */
/* A full memory barrier in cb. */
void vkr_barrier(VkCommandBuffer cb);
/* Makes the host wait for every executed predecessor of n. */
int vkr_host_wait_deps(struct vkbe *b, const struct sched_node *n);
/* A dispatch, copy, fill or update on trace queue qi (-1: a host stream, unsupported). */
int vkr_exec_device(struct vkbe *b, const struct replay_x *rx, int32_t qi);
/* Queue-side ops without commands: ordered through their edges, done with their batch. */
int vkr_exec_queue_mark(struct vkbe *b, const struct replay_x *rx, int32_t qi);

/* ---- replay_vk_cmd.c: slots -------------------------------------------------------------- */
/* Records that slot's op went to queue q (index + 1) in the batch signalling value. */
int vkr_slot_set(struct vkbe *b, uint64_t slot, uint8_t q, uint64_t value);

/* ---- replay_vk_memory.c ----------------------------------------------------------------- */
int vkr_mem_alloc(struct vkbe *b, const struct sbt_op *op);
void vkr_mem_destroy(struct vkbe *b, struct mem *m);
void vkr_buf_destroy(struct vkbe *b, struct buf *x);
/* Bytes [off, off+len) of captured memory m (checked by the caller), wherever they live:
 * read or written by the host (through mappings, or a one-shot copy through staging), or
 * copied by commands in cb into dst at dst_off. */
int vkr_mem_read(struct vkbe *b, struct mem *m, uint64_t off, void *dst, uint64_t len);
int vkr_mem_write(struct vkbe *b, struct mem *m, uint64_t off, const void *src, uint64_t len);
/* Buffer id with memory bound, or NULL with *st set to an op error naming what needed it. */
struct buf *vkr_buf_of(struct vkbe *b, uint64_t id, int *st, const char *what);
void vkr_mem_copy_out(VkCommandBuffer cb, const struct mem *m, uint64_t off, uint64_t len,
                      VkBuffer dst, uint64_t dst_off);
int vkr_host_write(struct vkbe *b, const struct sbt_op *op);
int vkr_host_read(struct vkbe *b, const struct replay_x *rx);
/* Backend state_op(): the markers holding a record vkr_marker acts on (its table, marker_recs:
 * buffers, views, layouts, samplers, destroys). */
int vkr_state_op(const struct sbt_op *op);
/* A MARKER op: API state changes (buffers, views, layouts) applied in API order. */
int vkr_marker(struct vkbe *b, const struct sbt_op *op);

/* ---- replay_vk_image.c ------------------------------------------------------------------ */
/* ALLOC op of an image (its CREATE_IMAGE record r). */
int vkr_image_create(struct vkbe *b, const struct sbt_payload_rec *r);
/* MARKER records BIND_IMAGE, CREATE_IMAGE_VIEW and CREATE_SAMPLER, as entries of vkr_marker's
 * table (dec unused): 0 or an op error. */
int vkr_image_bind(struct vkbe *b, const struct sbt_payload_rec *r, struct sbt_payload_dec *dec);
int vkr_image_view_make(struct vkbe *b, const struct sbt_payload_rec *r,
                        struct sbt_payload_dec *dec);
int vkr_sampler_make(struct vkbe *b, const struct sbt_payload_rec *r, struct sbt_payload_dec *dec);
/* DESTROY of image view / sampler id (none: nothing to do): destroyed at the next drain (ops
 * using it may be queued). */
int vkr_iview_free(struct vkbe *b, uint64_t id);
int vkr_sampler_free(struct vkbe *b, uint64_t id);
/* FREE of an image: destroyed at the next drain (ops using it may be queued). */
void vkr_image_free(struct vkbe *b, struct img *im);
void vkr_image_destroy(struct vkbe *b, struct img *im);
void vkr_dead_images_free(struct vkbe *b);
/* Everything of images at reset. */
void vkr_images_reset(struct vkbe *b);
/* Packed bytes [off, off+len) of im (checked by the caller), read or written by the host
 * through staging and one-shot copies. */
int vkr_img_read(struct vkbe *b, struct img *im, uint64_t off, void *dst, uint64_t len);
int vkr_img_write(struct vkbe *b, struct img *im, uint64_t off, const void *src, uint64_t len);
/* Staging bytes vkr_img_copy_out needs for [off, off+len) of im. */
uint64_t vkr_img_copy_need(const struct img *im, uint64_t off, uint64_t len);
/* Records into cb copies of packed bytes [off, off+len) of im into staging s from s->used on
 * (advanced); *at: where byte off lands. */
int vkr_img_copy_out(struct vkbe *b, VkCommandBuffer cb, struct img *im, uint64_t off, uint64_t len,
                     struct staging *s, uint64_t *at);
/* A COPY or FILL op's image payload (COPY_BUFFER_TO_IMAGE, COPY_IMAGE_TO_BUFFER, COPY_IMAGE,
 * BLIT_IMAGE, CLEAR_IMAGE) recorded into cb. */
int vkr_rec_image_op(struct vkbe *b, VkCommandBuffer cb, const struct sbt_payload_rec *d);
/* An IMAGE_BINDING of a dispatch as a descriptor image info. */
int vkr_image_binding(struct vkbe *b, const struct sbt_payload_rec *r, VkDescriptorImageInfo *out);

#endif /* REPRISE_REPLAY_VK_INT_H */
