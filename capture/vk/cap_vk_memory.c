/*
 * capture/vk/cap_vk_memory.c — device memory (allocation, mapping, flushes), buffers, their
 * binding and buffer views: the resources of the trace. A VkDeviceMemory allocation is an ALLOC
 * op; buffers, binds and views are MARKER ops whose payload records (format/sbt_vk.h) replay
 * recreates them from. Host writes through mappings are found by cap_vk_mapped.c, which the
 * mapping calls (vkMapMemory, vkMapMemory2, and the program's own pages imported as device memory
 * with VK_EXT_external_memory_host) start and unmap, flush and free publish (non-coherent
 * memory: the flush only), and an invalidate reads back non-coherent memory's device output. Memory
 * another process or API fills (imported or exported handles) is unmodelled: its generated wrappers
 * count it and mark the trace incomplete (capture/vk/cap_vk_classes.txt). Images are
 * cap_vk_images.c's. Buffers and allocations with device addresses get their capture-replay flags
 * and opaque addresses from cap_vk_address.c.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

/* ========================================================================================== */
/* Memory and buffers                                                                         */
/* ========================================================================================== */

/* Whether another live allocation imports host pages that [p, p + m->size) overlaps
 * (cap.mu). */
static int imports_overlap(const struct cap_mem *m, const void *p)
{
    uintptr_t a = (uintptr_t)p, b = a + m->size;
    for (uint32_t i = 0; i < cap.n_mems; i++) {
        const struct cap_mem *o = cap.mems[i];
        if (o == m || !o->import_ptr)
            continue;
        uintptr_t x = (uintptr_t)o->import_ptr, y = x + o->size;
        if (a < y && x < b)
            return 1;
    }
    return 0;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_AllocateMemory(VkDevice device, const VkMemoryAllocateInfo *ai,
                                                  const VkAllocationCallbacks *alloc,
                                                  VkDeviceMemory *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkMemoryAllocateInfo ai2 = *ai; /* with device addresses: capture-replay (cap_vk_address.c) */
    void *addr_mem = CAP_ON() ? cap_addr_alloc_info(d, &ai2) : NULL;
    VkResult r = cap_vk_result(d->fn.AllocateMemory(device, &ai2, alloc, out), "vkAllocateMemory");
    uint64_t opaque = r == VK_SUCCESS ? cap_addr_memory_opaque(d, &ai2, *out) : 0;
    free(addr_mem);
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    uint32_t flags = 0;
    uint64_t dedicated = 0, dedicated_img = 0;
    int foreign = 0;
    void *host_ptr = NULL;
    for (const VkBaseInStructure *s = ai->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO)
            flags = ((const VkMemoryAllocateFlagsInfo *)s)->flags;
        else if (s->sType == VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO) {
            dedicated = CAP_H(((const VkMemoryDedicatedAllocateInfo *)s)->buffer);
            dedicated_img = CAP_H(((const VkMemoryDedicatedAllocateInfo *)s)->image);
        } else if (s->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT) {
            host_ptr = ((const VkImportMemoryHostPointerInfoEXT *)s)->pHostPointer;
        } else if (s->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR ||
                   s->sType == VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO)
            foreign = 1;
    }
    if (foreign) /* contents another API or process writes: not in the trace */
        cap_unmodelled(d, "vkAllocateMemory (external memory)", SBT_UNMODELLED_AFFECTS);
    static const uint32_t known[] = {
        VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,          /* recorded */
        VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,      /* recorded */
        VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT, /* the host's pages: tracked */
        VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,           /* external: counted above */
        VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,         /* external: counted above */
        VK_STRUCTURE_TYPE_MEMORY_PRIORITY_ALLOCATE_INFO_EXT,   /* a residency hint (ggml-vulkan) */
    };
    cap_chain_check(d, "vkAllocateMemory", ai->pNext, known, sizeof known / sizeof known[0]);
    pthread_mutex_lock(&cap.mu);
    struct cap_mem *m = cap_mem_new(d, CAP_H(*out), ai->allocationSize, ai->memoryTypeIndex);
    if (m) {
        struct cap_buf *db = cap_obj_find(dedicated, CAP_T_BUF);
        struct cap_image *di = cap_obj_find(dedicated_img, CAP_T_IMAGE);
        struct sbt_payload_enc enc = {0};
        sbt_payload_put(&enc, SBT_VK_MEMORY,
                        (uint64_t[]){m->o.id, m->size, m->type_index, m->props, flags,
                                     db ? db->o.id : 0, d->id, opaque, di ? di->o.id : 0},
                        9, NULL, 0);
        struct cap_ev *e = cap_op_ev(d, SBT_OP_ALLOC, "vkAllocateMemory", &enc, t0);
        if (e) {
            e->op.resource = m->o.id;
            e->op.bytes = m->size;
            e->op.subkind = SBT_RES_DEVICE;
            e->op.flags = SBT_OPF_RESOURCE | SBT_OPF_BYTES;
            if (foreign)
                e->op.flags |= SBT_OPF_UNSUPPORTED;
        }
        cap_emit(e);
        sbt_payload_enc_free(&enc);
        if (host_ptr && imports_overlap(m, host_ptr)) {
            /* two allocations on the same pages: what the device writes through one, the
             * other holds too, which replay's separate allocations cannot do; and the page
             * tracking (one owner per page) would see the host's writes for one of them */
            cap_unmodelled(d, "vkAllocateMemory (host pages another allocation imports too)",
                           SBT_UNMODELLED_AFFECTS);
            host_ptr = NULL;
        }
        if (host_ptr) {
            /* the program's own pages: what they hold now is its input (one HOST_WRITE), and
             * what it writes there from now on is found as in a mapping, until the free */
            m->import_ptr = host_ptr;
            atomic_fetch_add(&m->ref, 1);
            pthread_mutex_unlock(&cap.mu);
            pthread_mutex_lock(&m->mu);
            m->imported = 1;
            cap_mem_import(m, host_ptr, cap_now());
            pthread_mutex_unlock(&m->mu);
            cap_mem_unref(m);
            return r;
        }
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_FreeMemory(VkDevice device, VkDeviceMemory mem,
                                          const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    if (mem) { /* also once recording stopped: a mapping must not stay tracked */
        pthread_mutex_lock(&cap.mu);
        struct cap_mem *m = cap_obj_del(CAP_H(mem), CAP_T_MEM);
        if (m) {
            /* freeing a mapped allocation unmaps it: its last host writes count */
            pthread_mutex_lock(&m->mu);
            cap_mem_unmap(m, t0);
            pthread_mutex_unlock(&m->mu);
            struct cap_ev *e = cap_op_ev(d, SBT_OP_FREE, "vkFreeMemory", NULL, t0);
            if (e) {
                e->op.resource = m->o.id;
                e->op.flags = SBT_OPF_RESOURCE;
            }
            cap_emit(e);
            cap_img_mem_freed(m);
            cap_mem_release(m);
        }
        pthread_mutex_unlock(&cap.mu);
    }
    d->fn.FreeMemory(device, mem, alloc);
}

/* The driver mapped mem: host writes are found there from now on (*pp may be replaced by the
 * program's copy of memory the CPU reads slowly). */
static void mapped(VkDeviceMemory mem, VkDeviceSize off, VkDeviceSize size, void **pp, int placed)
{
    uint64_t t0 = cap_now();
    struct cap_mem *m = cap_mem_get(CAP_H(mem));
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (!m->imported) /* imported pages are tracked from allocation to free */
        cap_mem_map(m, off, size, pp, placed, t0);
    pthread_mutex_unlock(&m->mu);
    cap_mem_unref(m);
}

/* Before the driver unmaps mem: its last host writes. */
static void unmapping(VkDeviceMemory mem)
{
    uint64_t t0 = cap_now();
    struct cap_mem *m = cap_mem_get(CAP_H(mem));
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (m->imported)
        cap_mem_publish(m, 0, m->size, t0);
    else
        cap_mem_unmap(m, t0);
    pthread_mutex_unlock(&m->mu);
    cap_mem_unref(m);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_MapMemory(VkDevice device, VkDeviceMemory mem, VkDeviceSize off,
                                             VkDeviceSize size, VkMemoryMapFlags flags, void **pp)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    VkResult r = cap_vk_result(d->fn.MapMemory(device, mem, off, size, flags, pp), "vkMapMemory");
    if (r == VK_SUCCESS && CAP_ON())
        mapped(mem, off, size, pp, 0);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_UnmapMemory(VkDevice device, VkDeviceMemory mem)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    unmapping(mem); /* also once recording stopped: a mapping must not stay tracked */
    d->fn.UnmapMemory(device, mem);
}

#ifdef VK_VERSION_1_4
/* vkMapMemory2 (VK_KHR_map_memory2, core in 1.4), placed mappings (VK_EXT_map_memory_placed)
 * included: the program chose the address, so it gets no copy there. */
VKAPI_ATTR VkResult VKAPI_CALL cap_MapMemory2(VkDevice device, const VkMemoryMapInfo *mi, void **pp)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    VkResult r = cap_vk_result(d->fn.MapMemory2(device, mi, pp), "vkMapMemory2");
    if (r == VK_SUCCESS && CAP_ON())
        mapped(mi->memory, mi->offset, mi->size, pp,
               (mi->flags & VK_MEMORY_MAP_PLACED_BIT_EXT) != 0);
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_UnmapMemory2(VkDevice device, const VkMemoryUnmapInfo *ui)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    unmapping(ui->memory); /* also once recording stopped */
    return cap_vk_result(d->fn.UnmapMemory2(device, ui), "vkUnmapMemory2");
}
#endif

/* fn(m, offset, size, t) for the allocation of each range, its mutex held. */
static void each_range(uint32_t n, const VkMappedMemoryRange *rg, uint64_t t,
                       void (*fn)(struct cap_mem *m, uint64_t off, uint64_t size, uint64_t t))
{
    for (uint32_t i = 0; i < n; i++) {
        struct cap_mem *m = cap_mem_get(CAP_H(rg[i].memory));
        if (!m)
            continue;
        pthread_mutex_lock(&m->mu);
        fn(m, rg[i].offset, rg[i].size, t);
        pthread_mutex_unlock(&m->mu);
        cap_mem_unref(m);
    }
}

static void flush_range(struct cap_mem *m, uint64_t off, uint64_t size, uint64_t t)
{
    if (m->mapped && off <= m->size)
        cap_mem_publish(m, off, size == VK_WHOLE_SIZE ? m->size - off : size, t);
}

/* The host writes of the flushed ranges' pages (for non-coherent memory, the only point they
 * reach the device), written through to a copy mapping's driver pages before the driver
 * flushes them. */
VKAPI_ATTR VkResult VKAPI_CALL cap_FlushMappedMemoryRanges(VkDevice device, uint32_t n,
                                                           const VkMappedMemoryRange *rg)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    if (CAP_ON())
        each_range(n, rg, cap_now(), flush_range);
    return cap_vk_result(d->fn.FlushMappedMemoryRanges(device, n, rg), "vkFlushMappedMemoryRanges");
}

VKAPI_ATTR VkResult VKAPI_CALL cap_InvalidateMappedMemoryRanges(VkDevice device, uint32_t n,
                                                                const VkMappedMemoryRange *rg)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    /* coherent memory: device output reaches the layer's view when a wait says it is final
     * (cap_complete); non-coherent memory: here, once the driver made it visible */
    VkResult r = cap_vk_result(d->fn.InvalidateMappedMemoryRanges(device, n, rg),
                               "vkInvalidateMappedMemoryRanges");
    if (r == VK_SUCCESS && CAP_ON())
        each_range(n, rg, cap_now(), cap_mem_invalidate);
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateBuffer(VkDevice device, const VkBufferCreateInfo *ci,
                                                const VkAllocationCallbacks *alloc, VkBuffer *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkBufferCreateInfo ci2 = *ci; /* with a device address: capture-replay (cap_vk_address.c) */
    if (CAP_ON())
        cap_addr_buffer_info(d, &ci2);
    VkResult r = cap_vk_result(d->fn.CreateBuffer(device, &ci2, alloc, out), "vkCreateBuffer");
    uint64_t opaque = r == VK_SUCCESS ? cap_addr_buffer_opaque(d, &ci2, *out) : 0;
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    static const uint32_t known[] = {
#ifdef VK_KHR_maintenance5
        VK_STRUCTURE_TYPE_BUFFER_USAGE_FLAGS_2_CREATE_INFO_KHR, /* recorded (the usage) */
#endif
        /* the handle types the memory may be imported from or exported to: what it holds is
         * the allocation's matter (vkAllocateMemory) */
        VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
        VK_STRUCTURE_TYPE_DEDICATED_ALLOCATION_BUFFER_CREATE_INFO_NV, /* a hint */
    };
    cap_chain_check(d, "vkCreateBuffer", ci->pNext, known, sizeof known / sizeof known[0]);
    pthread_mutex_lock(&cap.mu);
    struct cap_buf *b = cap_obj_new(sizeof *b, CAP_T_BUF, VK_OBJECT_TYPE_BUFFER, CAP_H(*out), d);
    if (b) {
        b->size = ci->size;
        b->usage = cap_addr_buffer_usage(ci);
        struct sbt_payload_enc enc = {0};
        sbt_payload_enc_begin(&enc, SBT_VK_CREATE_BUFFER);
        sbt_payload_enc_arg(&enc, b->o.id);
        sbt_payload_enc_arg(&enc, ci->size);
        sbt_payload_enc_arg(&enc, b->usage);
        sbt_payload_enc_arg(&enc, ci->flags);
        sbt_payload_enc_arg(&enc, ci->sharingMode);
        uint32_t nf = ci->sharingMode == VK_SHARING_MODE_CONCURRENT && ci->pQueueFamilyIndices
                          ? ci->queueFamilyIndexCount
                          : 0;
        sbt_payload_enc_arg(&enc, nf);
        for (uint32_t i = 0; i < nf; i++)
            sbt_payload_enc_arg(&enc, ci->pQueueFamilyIndices[i]);
        sbt_payload_enc_arg(&enc, d->id);
        sbt_payload_enc_arg(&enc, opaque);
        sbt_payload_enc_end(&enc, NULL, 0);
        cap_emit_marker(d, "vkCreateBuffer", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyBuffer(VkDevice device, VkBuffer buf,
                                             const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    cap_destroy_plain(d, CAP_H(buf), CAP_T_BUF, VK_OBJECT_TYPE_BUFFER, "vkDestroyBuffer");
    d->fn.DestroyBuffer(device, buf, alloc);
}

static void bind_buffer(struct cap_dev *d, VkBuffer buf, VkDeviceMemory mem, uint64_t off,
                        uint64_t t0)
{
    struct cap_buf *b = cap_obj_find(CAP_H(buf), CAP_T_BUF);
    struct cap_mem *m = cap_obj_find(CAP_H(mem), CAP_T_MEM);
    if (!b || !m)
        return;
    b->mem = m;
    b->mem_off = off;
    cap.shadow_gen++;
    if (m->n_img)
        cap_img_check_alias(d, m, off, b->size, NULL,
                            "vkBindBufferMemory (buffer aliasing an image)");
    VkMemoryRequirements req = {0};
    if (d->fn.GetBufferMemoryRequirements)
        d->fn.GetBufferMemoryRequirements(d->handle, buf, &req);
    struct sbt_payload_enc enc = {0};
    sbt_payload_put(&enc, SBT_VK_BIND_BUFFER,
                    (uint64_t[]){b->o.id, m->o.id, off, b->size, req.alignment}, 5, NULL, 0);
    cap_emit_marker(d, "vkBindBufferMemory", &enc, t0);
}

VKAPI_ATTR VkResult VKAPI_CALL cap_BindBufferMemory(VkDevice device, VkBuffer buf,
                                                    VkDeviceMemory mem, VkDeviceSize off)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.BindBufferMemory(device, buf, mem, off), "vkBindBufferMemory");
    if (r == VK_SUCCESS && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        bind_buffer(d, buf, mem, off, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_BindBufferMemory2(VkDevice device, uint32_t n,
                                                     const VkBindBufferMemoryInfo *bi)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r = cap_vk_result(d->fn.BindBufferMemory2(device, n, bi), "vkBindBufferMemory2");
    if (r == VK_SUCCESS && CAP_ON()) {
        pthread_mutex_lock(&cap.mu);
        for (uint32_t i = 0; i < n; i++)
            bind_buffer(d, bi[i].buffer, bi[i].memory, bi[i].memoryOffset, t0);
        pthread_mutex_unlock(&cap.mu);
    }
    return r;
}

VKAPI_ATTR VkResult VKAPI_CALL cap_CreateBufferView(VkDevice device,
                                                    const VkBufferViewCreateInfo *ci,
                                                    const VkAllocationCallbacks *alloc,
                                                    VkBufferView *out)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    uint64_t t0 = cap_now();
    VkResult r =
        cap_vk_result(d->fn.CreateBufferView(device, ci, alloc, out), "vkCreateBufferView");
    if (r != VK_SUCCESS || !CAP_ON())
        return r;
    pthread_mutex_lock(&cap.mu);
    struct cap_buf *b = cap_obj_find(CAP_H(ci->buffer), CAP_T_BUF);
    struct cap_bview *v =
        b ? cap_obj_new(sizeof *v, CAP_T_BVIEW, VK_OBJECT_TYPE_BUFFER_VIEW, CAP_H(*out), d) : NULL;
    if (v) {
        v->buf = b;
        v->offset = ci->offset;
        v->range = ci->range == VK_WHOLE_SIZE ? b->size - ci->offset : ci->range;
        struct sbt_payload_enc enc = {0};
        sbt_payload_put(&enc, SBT_VK_CREATE_BUFFER_VIEW,
                        (uint64_t[]){v->o.id, b->o.id, ci->format, ci->offset, v->range, ci->flags},
                        6, NULL, 0);
        cap_emit_marker(d, "vkCreateBufferView", &enc, t0);
    }
    pthread_mutex_unlock(&cap.mu);
    return r;
}

VKAPI_ATTR void VKAPI_CALL cap_DestroyBufferView(VkDevice device, VkBufferView view,
                                                 const VkAllocationCallbacks *alloc)
{
    struct cap_dev *d = cap_dev_of(device);
    CAP_COUNT();
    cap_destroy_plain(d, CAP_H(view), CAP_T_BVIEW, VK_OBJECT_TYPE_BUFFER_VIEW,
                      "vkDestroyBufferView");
    d->fn.DestroyBufferView(device, view, alloc);
}
