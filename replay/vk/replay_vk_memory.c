/*
 * replay/vk/replay_vk_memory.c — the Vulkan backend: host-side ops: allocations (memory types
 * mapped by property flags, zero-filled), host writes and reads through mappings (an image's packed
 * bytes through replay_vk_image.c), and the API state markers (buffers, views, layouts; images
 * in replay_vk_image.c) in API order, through one table of the records the backend acts on
 * (marker_recs), which also says which markers a range replay must run (vkr_state_op).
 *
 * Placement. A buffer is bound where the capture bound it, at the same offset of the replay
 * allocation standing for the captured one, so the trace's (memory, offset) accesses address
 * it directly. Where this device cannot (the offset is not a multiple of its alignment for the
 * buffer, or the allocation's memory type is not one the buffer accepts here), the buffer is
 * relocated: it gets memory of its own, with what the allocation held in its range copied in,
 * and every later host or device access to that range of the allocation goes there instead
 * (mem_pieces). A relocated buffer may not alias another buffer: that is refused, naming both.
 * REPRISE_VK_RELOCATE=1 relocates every buffer (tests).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "format/sbt_vk.h"
#include "replay/vk/replay_vk_int.h"

/* ---- host-side ops ------------------------------------------------------------------------ */

int vkr_mem_alloc(struct vkbe *b, const struct sbt_op *op)
{
    struct sbt_payload_dec dec;
    struct sbt_payload_rec r;
    int f = sbt_payload_find(&dec, op->payload.data, op->payload.len, SBT_VK_CREATE_IMAGE, &r);
    if (f == 1) { /* an image: a resource of its own */
        f = vkr_image_create(b, &r);
        sbt_payload_dec_free(&dec);
        return f;
    }
    sbt_payload_dec_free(&dec);
    f = sbt_payload_find(&dec, op->payload.data, op->payload.len, SBT_VK_MEMORY, &r);
    uint64_t id = op->resource, size = op->bytes, opaque = 0;
    uint32_t flags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, aflags = 0;
    if (f == 1) {
        id = sbt_payload_arg(&r, 0);
        size = sbt_payload_arg(&r, 1);
        flags = (uint32_t)sbt_payload_arg(&r, 3);
        aflags = (uint32_t)sbt_payload_arg(&r, 4) & VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
        opaque = b->addr_replay && aflags ? sbt_payload_arg(&r, 7) : 0;
    }
    sbt_payload_dec_free(&dec);
    if (f < 0)
        return replay__fail(SBT_ECORRUPT, "%s", sbt_errmsg());
    if (!id || !size)
        return replay__fail(SBT_ECORRUPT, "allocation %" PRIu64 " of %" PRIu64 " bytes", id, size);
    if (sbt_map_getp(&b->mems, id))
        return replay__fail(SBT_ECORRUPT, "memory %" PRIu64 " is allocated twice", id);
    struct mem *m = calloc(1, sizeof *m);
    if (!m)
        return replay__fail(SBT_ENOMEM, "out of memory");
    m->size = size;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size ? size : 4,
        .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = b->n_families > 1 ? VK_SHARING_MODE_CONCURRENT : VK_SHARING_MODE_EXCLUSIVE,
        .queueFamilyIndexCount = b->n_families > 1 ? b->n_families : 0,
        .pQueueFamilyIndices = b->families};
    VkResult vr = vkCreateBuffer(b->dev, &bci, NULL, &m->whole);
    if (vr != VK_SUCCESS) {
        free(m);
        return VKFAIL(vr, "vkCreateBuffer");
    }
    VkMemoryRequirements mr;
    vkGetBufferMemoryRequirements(b->dev, m->whole, &mr);
    /* keep host visibility (host writes and reads go through a mapping); prefer the rest */
    uint32_t need = flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    uint32_t prefer =
        flags & (VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                 VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    uint32_t t = vkr_find_type(b, mr.memoryTypeBits & b->whole_type_bits, need, prefer);
    if (t == UINT32_MAX)
        t = vkr_find_type(b, mr.memoryTypeBits, need, prefer);
    if (t == UINT32_MAX) {
        vkDestroyBuffer(b->dev, m->whole, NULL);
        free(m);
        return replay__fail(REPLAY_EUNSUPPORTED,
                            "memory %" PRIu64 ": no memory type with flags 0x%x on this device", id,
                            need);
    }
    uint32_t heap = b->memp.memoryTypes[t].heapIndex;
    if (size > b->memp.memoryHeaps[heap].size) {
        vkDestroyBuffer(b->dev, m->whole, NULL);
        free(m);
        return replay__fail(REPLAY_ENODEV,
                            "memory %" PRIu64 ": %" PRIu64
                            " bytes, more than this device's heap %u "
                            "(%" PRIu64 " bytes)",
                            id, size, heap, (uint64_t)b->memp.memoryHeaps[heap].size);
    }
    m->type = t;
    m->flags = flags;
    uint32_t tf = b->memp.memoryTypes[t].propertyFlags;
    m->host_visible = (tf & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0;
    m->coherent = (tf & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    /* memory for buffers with device addresses keeps DEVICE_ADDRESS; at its captured address
     * (capture-replay) it must be allocated as captured, at the captured size */
    if (opaque && mr.size > size) {
        vkDestroyBuffer(b->dev, m->whole, NULL);
        free(m);
        return replay__fail(REPLAY_ENODEV,
                            "memory %" PRIu64 ": at its captured address it must keep its %" PRIu64
                            " bytes, but a buffer over it needs %" PRIu64 " here",
                            id, size, (uint64_t)mr.size);
    }
    VkMemoryOpaqueCaptureAddressAllocateInfo oa = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_OPAQUE_CAPTURE_ADDRESS_ALLOCATE_INFO,
        .opaqueCaptureAddress = opaque};
    VkMemoryAllocateFlagsInfo fi = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
        .pNext = opaque ? &oa : NULL,
        .flags = aflags | (opaque ? VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT : 0)};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .pNext = aflags ? &fi : NULL,
                               .allocationSize = mr.size > size ? mr.size : size,
                               .memoryTypeIndex = t};
    vr = vkAllocateMemory(b->dev, &ai, NULL, &m->mem);
    if (vr == VK_SUCCESS)
        vr = vkBindBufferMemory(b->dev, m->whole, m->mem, 0);
    if (vr == VK_SUCCESS && m->host_visible)
        vr = vkMapMemory(b->dev, m->mem, 0, VK_WHOLE_SIZE, 0, (void **)&m->map);
    if (vr != VK_SUCCESS) {
        if (m->mem)
            vkFreeMemory(b->dev, m->mem, NULL);
        vkDestroyBuffer(b->dev, m->whole, NULL);
        free(m);
        return replay__fail(REPLAY_EDEVICE,
                            "memory %" PRIu64 ": %" PRIu64
                            " bytes: allocation failed (VkResult %d)",
                            id, size, (int)vr);
    }
    /* the capture's page shadow starts at zero: so must the replay's memory (but for poison,
     * which fills it with a pattern a correct program overwrites before it reads) */
    uint32_t word = 0;
    if (b->perturb.kind == REPLAY_PERTURB_POISON && sbt_map_get(&b->host_mems, id)) {
        /* memory the program maps keeps its zeros (host_memories says why) */
        if (b->ps)
            b->ps->zeroed_allocs++;
    } else if (b->perturb.kind == REPLAY_PERTURB_POISON) {
        word = replay_perturb_poison_word(b->perturb.seed);
        if (b->ps) {
            b->ps->poisoned_allocs++;
            b->ps->poisoned_bytes += size;
        }
    }
    if (m->map) {
        if (word) {
            uint64_t i = 0;
            for (; i + 4 <= size; i += 4)
                memcpy(m->map + i, &word, 4);
            memcpy(m->map + i, &word, size - i);
        } else {
            memset(m->map, 0, size);
        }
        if (!m->coherent) {
            VkMappedMemoryRange rg = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                      .memory = m->mem,
                                      .size = VK_WHOLE_SIZE};
            vkFlushMappedMemoryRanges(b->dev, 1, &rg);
        }
    } else if (size >= 4) {
        VkCommandBuffer cb;
        int st = vkr_oneshot_begin(b, &cb);
        if (st < 0)
            return st;
        vkCmdFillBuffer(cb, m->whole, 0, VK_WHOLE_SIZE, word);
        if ((st = vkr_oneshot_end(b, cb)) < 0)
            return st;
    }
    if (sbt_map_putp(&b->mems, id, m) < 0)
        return replay__fail(SBT_ENOMEM, "out of memory");
    return 0;
}

/* ---- placement ----------------------------------------------------------------------------- */

/* The pieces of [off, off+len) of m: each piece lies either in m's own memory (x == NULL, at
 * the same offset) or in the memory of relocated buffer x (at offset - x->mem_off). */
typedef int (*piece_fn)(void *ctx, struct buf *x, uint64_t off, uint64_t len, uint64_t pos);

static int mem_pieces(const struct mem *m, uint64_t off, uint64_t len, piece_fn fn, void *ctx)
{
    uint64_t end = off + len, pos = 0;
    for (uint32_t i = 0; i < m->n_reloc && off < end; i++) {
        struct buf *x = m->reloc[i];
        uint64_t xe = x->mem_off + x->size;
        if (xe <= off)
            continue;
        if (x->mem_off >= end)
            break;
        int st;
        if (x->mem_off > off) {
            if ((st = fn(ctx, NULL, off, x->mem_off - off, pos)) < 0)
                return st;
            pos += x->mem_off - off;
            off = x->mem_off;
        }
        uint64_t n = (xe < end ? xe : end) - off;
        if ((st = fn(ctx, x, off, n, pos)) < 0)
            return st;
        pos += n;
        off += n;
    }
    return off < end ? fn(ctx, NULL, off, end - off, pos) : 0;
}

struct host_io {
    struct vkbe *b;
    struct mem *m;
    uint8_t *bytes;
    int write;
};

/* Bytes [at, at + len) of mem (of which size bytes are known to exist) as a range of whole
 * nonCoherentAtomSize atoms, to the end of the memory where the last atom would pass size. */
static VkMappedMemoryRange atoms(const struct vkbe *b, VkDeviceMemory mem, uint64_t size,
                                 uint64_t at, uint64_t len)
{
    uint64_t atom = b->props.limits.nonCoherentAtomSize ? b->props.limits.nonCoherentAtomSize : 1;
    uint64_t a = at / atom * atom, e = (at + len + atom - 1) / atom * atom;
    return (VkMappedMemoryRange){.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                 .memory = mem,
                                 .offset = a,
                                 .size = e >= size ? VK_WHOLE_SIZE : e - a};
}

/* Non-coherent memory: bytes [at, at + len) of the mapping written, and flushed. The atoms
 * they share with other bytes are invalidated first: a flush writes whole atoms back, and
 * what the mapping holds of the rest of them may predate device writes there. */
static void write_noncoherent(struct vkbe *b, VkDeviceMemory mem, uint64_t size, uint8_t *map,
                              uint64_t at, const uint8_t *src, uint64_t len)
{
    if (!len)
        return;
    uint64_t atom = b->props.limits.nonCoherentAtomSize ? b->props.limits.nonCoherentAtomSize : 1;
    VkMappedMemoryRange part[2];
    uint32_t n = 0;
    if (at % atom)
        part[n++] = atoms(b, mem, size, at, 1);
    uint64_t end = at + len;
    if (end % atom && end < size && (!n || end / atom != at / atom))
        part[n++] = atoms(b, mem, size, end, 1);
    if (n)
        vkInvalidateMappedMemoryRanges(b->dev, n, part);
    memcpy(map + at, src, len);
    VkMappedMemoryRange rg = atoms(b, mem, size, at, len);
    vkFlushMappedMemoryRanges(b->dev, 1, &rg);
}

static int host_piece(void *ctx, struct buf *x, uint64_t off, uint64_t len, uint64_t pos)
{
    struct host_io *io = ctx;
    struct vkbe *b = io->b;
    uint8_t *map = x ? x->own_map : io->m->map;
    uint64_t at = x ? off - x->mem_off : off;
    VkDeviceMemory mem = x ? x->own : io->m->mem;
    uint64_t size = x ? x->size : io->m->size;
    int coherent = x ? x->own_coherent : io->m->coherent;
    if (map) {
        if (io->write && coherent) {
            memcpy(map + at, io->bytes + pos, len);
        } else if (io->write) {
            write_noncoherent(b, mem, size, map, at, io->bytes + pos, len);
        } else {
            VkMappedMemoryRange rg = atoms(b, mem, size, at, len);
            if (!coherent && len)
                vkInvalidateMappedMemoryRanges(b->dev, 1, &rg);
            memcpy(io->bytes + pos, map + at, len);
        }
        return 0;
    }
    /* device-local: through staging and a one-shot copy */
    struct staging *s = vkr_staging_get(b, len ? len : 1);
    if (!s)
        return replay__fail(REPLAY_EDEVICE, "no staging memory for %" PRIu64 " bytes", len);
    VkBuffer dev_buf = x ? x->buf : io->m->whole;
    VkCommandBuffer cb;
    int st = vkr_oneshot_begin(b, &cb);
    if (st == 0) {
        if (io->write)
            memcpy(s->map, io->bytes + pos, len);
        if (io->write && !s->coherent) {
            VkMappedMemoryRange sr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                      .memory = s->mem,
                                      .size = VK_WHOLE_SIZE};
            vkFlushMappedMemoryRanges(b->dev, 1, &sr);
        }
        VkBufferCopy c = {io->write ? 0 : at, io->write ? at : 0, len};
        if (len)
            vkCmdCopyBuffer(cb, io->write ? s->buf : dev_buf, io->write ? dev_buf : s->buf, 1, &c);
        st = vkr_oneshot_end(b, cb);
    }
    if (st == 0 && !io->write) {
        if (!s->coherent) {
            VkMappedMemoryRange sr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                      .memory = s->mem,
                                      .size = VK_WHOLE_SIZE};
            vkInvalidateMappedMemoryRanges(b->dev, 1, &sr);
        }
        memcpy(io->bytes + pos, s->map, len);
    }
    s->next = b->free_staging;
    b->free_staging = s;
    return st;
}

int vkr_mem_read(struct vkbe *b, struct mem *m, uint64_t off, void *dst, uint64_t len)
{
    struct host_io io = {b, m, dst, 0};
    return mem_pieces(m, off, len, host_piece, &io);
}

int vkr_mem_write(struct vkbe *b, struct mem *m, uint64_t off, const void *src, uint64_t len)
{
    struct host_io io = {b, m, (uint8_t *)src, 1};
    return mem_pieces(m, off, len, host_piece, &io);
}

struct copy_out {
    VkCommandBuffer cb;
    const struct mem *m;
    VkBuffer dst;
    uint64_t dst_off;
};

static int copy_piece(void *ctx, struct buf *x, uint64_t off, uint64_t len, uint64_t pos)
{
    struct copy_out *c = ctx;
    VkBufferCopy r = {x ? off - x->mem_off : off, c->dst_off + pos, len};
    if (len)
        vkCmdCopyBuffer(c->cb, x ? x->buf : c->m->whole, c->dst, 1, &r);
    return 0;
}

void vkr_mem_copy_out(VkCommandBuffer cb, const struct mem *m, uint64_t off, uint64_t len,
                      VkBuffer dst, uint64_t dst_off)
{
    struct copy_out c = {cb, m, dst, dst_off};
    mem_pieces(m, off, len, copy_piece, &c);
}

static int ptr_push(struct buf ***v, uint32_t *n, uint32_t *cap, struct buf *x)
{
    if (grow((void **)v, cap, *n + 1, sizeof **v) < 0)
        return SBT_ENOMEM;
    (*v)[(*n)++] = x;
    return 0;
}

static void ptr_remove(struct buf **v, uint32_t *n, const struct buf *x)
{
    for (uint32_t i = 0; i < *n; i++)
        if (v[i] == x) {
            memmove(v + i, v + i + 1, (*n - i - 1) * sizeof *v);
            (*n)--;
            return;
        }
}

static int overlaps(const struct buf *a, uint64_t off, uint64_t size)
{
    return a->mem_off < off + size && off < a->mem_off + a->size;
}

/* Gives x memory of its own holding what m held in [off, off+size), and sends that range of m
 * there from now on. */
static int relocate(struct vkbe *b, struct buf *x, struct mem *m, uint64_t off,
                    const VkMemoryRequirements *mr)
{
    for (uint32_t i = 0; i < m->n_bound; i++)
        if (m->bound[i] != x && overlaps(m->bound[i], off, x->size))
            return replay__fail(REPLAY_ENODEV,
                                "buffer %" PRIu64 " cannot stay at offset %" PRIu64
                                " of its memory on this device (alignment or memory type), but "
                                "it aliases buffer %" PRIu64 " there: aliased buffers cannot be "
                                "relocated",
                                x->id, off, m->bound[i]->id);
    uint32_t need = m->flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    uint32_t t = vkr_find_type(b, mr->memoryTypeBits, need,
                               m->flags & (VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                           VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                           VK_MEMORY_PROPERTY_HOST_CACHED_BIT));
    if (t == UINT32_MAX)
        return replay__fail(REPLAY_ENODEV,
                            "buffer %" PRIu64 ": no memory type among 0x%x with the flags 0x%x of "
                            "its captured memory",
                            x->id, mr->memoryTypeBits, need);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = mr->size,
                               .memoryTypeIndex = t};
    VkResult vr = vkAllocateMemory(b->dev, &ai, NULL, &x->own);
    if (vr == VK_SUCCESS)
        vr = vkBindBufferMemory(b->dev, x->buf, x->own, 0);
    uint32_t tf = b->memp.memoryTypes[t].propertyFlags;
    if (vr == VK_SUCCESS && (tf & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
        vr = vkMapMemory(b->dev, x->own, 0, VK_WHOLE_SIZE, 0, (void **)&x->own_map);
    if (vr != VK_SUCCESS) {
        if (x->own)
            vkFreeMemory(b->dev, x->own, NULL);
        x->own = VK_NULL_HANDLE;
        return VKFAIL(vr, "allocating memory for a relocated buffer");
    }
    x->own_coherent = (tf & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    /* what the allocation held there so far (zeros, host writes) moves with the buffer */
    VkCommandBuffer cb;
    int st = vkr_oneshot_begin(b, &cb);
    if (st < 0)
        return st;
    VkBufferCopy c = {off, 0, x->size};
    vkCmdCopyBuffer(cb, m->whole, x->buf, 1, &c);
    if ((st = vkr_oneshot_end(b, cb)) < 0)
        return st;
    uint32_t i = 0;
    while (i < m->n_reloc && m->reloc[i]->mem_off < off)
        i++;
    x->mem_off = off;
    if (ptr_push(&m->reloc, &m->n_reloc, &m->cap_reloc, x) < 0)
        return replay__fail(SBT_ENOMEM, "out of memory");
    memmove(m->reloc + i + 1, m->reloc + i, (m->n_reloc - 1 - i) * sizeof *m->reloc);
    m->reloc[i] = x;
    return 0;
}

/* vkBindBufferMemory of buffer x to m at off: in place when this device allows it, else
 * relocated (see the file's comment). */
static int bind_buffer(struct vkbe *b, struct buf *x, struct mem *m, uint64_t off)
{
    if (x->mem)
        return replay__fail(SBT_ECORRUPT, "buffer %" PRIu64 " is bound twice", x->id);
    if (off > m->size || x->size > m->size - off)
        return replay__fail(SBT_ECORRUPT,
                            "buffer %" PRIu64 " of %" PRIu64 " bytes bound at offset %" PRIu64
                            " of a %" PRIu64 "-byte allocation",
                            x->id, x->size, off, m->size);
    VkMemoryRequirements mr;
    vkGetBufferMemoryRequirements(b->dev, x->buf, &mr);
    const char *force = getenv("REPRISE_VK_RELOCATE");
    /* a buffer with a device address stays where the capture bound it (its address) */
    int addressed = b->addr_replay && (x->usage & VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT);
    int in_place = (mr.memoryTypeBits & (1u << m->type)) && off % mr.alignment == 0 &&
                   mr.size <= m->size - off && (addressed || !(force && *force == '1'));
    if (!in_place && addressed)
        return replay__fail(REPLAY_ENODEV,
                            "buffer %" PRIu64 " has a device address, so it must stay at offset "
                            "%" PRIu64 " of its memory, and this device cannot bind it there "
                            "(alignment %" PRIu64 ", memory types 0x%x)",
                            x->id, off, (uint64_t)mr.alignment, mr.memoryTypeBits);
    /* a buffer in place may not overlap one relocated out of this range */
    for (uint32_t i = 0; in_place && i < m->n_reloc; i++)
        if (overlaps(m->reloc[i], off, x->size))
            return replay__fail(REPLAY_ENODEV,
                                "buffer %" PRIu64 " aliases buffer %" PRIu64
                                ", which this device needed placed apart: aliased buffers "
                                "cannot be relocated",
                                x->id, m->reloc[i]->id);
    int st;
    if (in_place) {
        VkResult vr = vkBindBufferMemory(b->dev, x->buf, m->mem, off);
        if (vr != VK_SUCCESS)
            return VKFAIL(vr, "vkBindBufferMemory");
        x->mem_off = off;
    } else if ((st = relocate(b, x, m, off, &mr)) < 0) {
        return st;
    }
    if (ptr_push(&m->bound, &m->n_bound, &m->cap_bound, x) < 0)
        return replay__fail(SBT_ENOMEM, "out of memory");
    x->mem = m;
    return 0;
}

void vkr_buf_destroy(struct vkbe *b, struct buf *x)
{
    if (x->mem) {
        ptr_remove(x->mem->bound, &x->mem->n_bound, x);
        ptr_remove(x->mem->reloc, &x->mem->n_reloc, x);
    }
    vkDestroyBuffer(b->dev, x->buf, NULL);
    if (x->own)
        vkFreeMemory(b->dev, x->own, NULL);
    free(x);
}

void vkr_mem_destroy(struct vkbe *b, struct mem *m)
{
    for (uint32_t i = 0; i < m->n_bound; i++)
        m->bound[i]->mem = NULL; /* using them now is an error (buf_of says so) */
    free(m->bound);
    free(m->reloc);
    vkDestroyBuffer(b->dev, m->whole, NULL);
    vkFreeMemory(b->dev, m->mem, NULL);
    free(m);
}

int vkr_host_write(struct vkbe *b, const struct sbt_op *op)
{
    if (!(op->flags & SBT_OPF_BLOB))
        return replay__fail(SBT_EINVAL, "host write without its data blob");
    void *data = NULL;
    size_t len = 0;
    int st = sbt_reader_blob(b->r, &op->blob, &data, &len);
    if (st < 0)
        return replay__fail(st, "%s", sbt_errmsg());
    size_t pos = 0;
    for (uint32_t i = 0; i < op->n_access && st == 0; i++) {
        const struct sbt_access *a = &op->access[i];
        if (!(a->mode & SBT_ACCESS_WRITE))
            continue;
        struct img *im = sbt_map_getp(&b->imgs, a->resource);
        if (im) { /* the packed bytes of an image (a linear one the host wrote) */
            if (!im->mem || a->offset > im->packed_size || a->len > im->packed_size - a->offset ||
                a->len > len - pos) {
                free(data);
                return replay__fail(
                    SBT_EINVAL, "host write to image %" PRIu64 " [%" PRIu64 ", +%" PRIu64 "): %s",
                    a->resource, a->offset, a->len,
                    !im->mem             ? "no memory bound"
                    : a->len > len - pos ? "blob shorter than the write"
                                         : "out of bounds");
            }
            st = vkr_img_write(b, im, a->offset, (uint8_t *)data + pos, a->len);
            pos += a->len;
            continue;
        }
        struct mem *m = sbt_map_getp(&b->mems, a->resource);
        if (!m || !m->map || a->offset > m->size || a->len > m->size - a->offset ||
            a->len > len - pos) {
            free(data);
            return replay__fail(SBT_EINVAL,
                                "host write to memory %" PRIu64 " [%" PRIu64 ", +%" PRIu64 "): %s",
                                a->resource, a->offset, a->len,
                                !m                   ? "no such memory"
                                : !m->map            ? "not host-visible here"
                                : a->len > len - pos ? "blob shorter than the write"
                                                     : "out of bounds");
        }
        st = vkr_mem_write(b, m, a->offset, (uint8_t *)data + pos, a->len);
        pos += a->len;
    }
    free(data);
    return st;
}

int vkr_host_read(struct vkbe *b, const struct replay_x *rx)
{
    const struct sbt_op *op = rx->node->op;
    uint32_t na = (rx->flags & REPLAY_X_READ) ? op->n_access : 0;
    const void **bytes = na ? calloc(na, sizeof *bytes) : NULL;
    uint64_t *len = na ? calloc(na, sizeof *len) : NULL;
    uint8_t **tmp = na ? calloc(na, sizeof *tmp) : NULL;
    int st = 0;
    if (na && (!bytes || !len || !tmp))
        st = replay__fail(SBT_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < na && st == 0; i++) {
        const struct sbt_access *a = &op->access[i];
        if (!(a->mode & SBT_ACCESS_READ))
            continue;
        struct img *im = sbt_map_getp(&b->imgs, a->resource);
        if (im) {
            if (!im->mem || a->offset > im->packed_size || a->len > im->packed_size - a->offset) {
                st = replay__fail(SBT_EINVAL,
                                  "op %" PRIu64 ": host read of image %" PRIu64 " [%" PRIu64
                                  ", +%" PRIu64 ") %s",
                                  op->seq, a->resource, a->offset, a->len,
                                  im->mem ? "outside its packed bytes" : "without memory");
                break;
            }
            tmp[i] = malloc(a->len ? a->len : 1);
            if (!tmp[i]) {
                st = replay__fail(SBT_ENOMEM, "out of memory");
                break;
            }
            if ((st = vkr_img_read(b, im, a->offset, tmp[i], a->len)) < 0)
                break;
            bytes[i] = tmp[i];
            len[i] = a->len;
            continue;
        }
        struct mem *m = sbt_map_getp(&b->mems, a->resource);
        if (!m) {
            st = replay__fail(SBT_EINVAL, "host read of memory %" PRIu64 ": no such memory",
                              a->resource);
            break;
        }
        if ((st = vkr_check_access(a, m->size, op->seq)) < 0)
            break;
        if (m->map && !m->n_reloc) {
            if (!m->coherent && a->len) {
                VkMappedMemoryRange rg = atoms(b, m->mem, m->size, a->offset, a->len);
                vkInvalidateMappedMemoryRanges(b->dev, 1, &rg);
            }
            bytes[i] = m->map + a->offset;
        } else {
            tmp[i] = malloc(a->len ? a->len : 1);
            if (!tmp[i]) {
                st = replay__fail(SBT_ENOMEM, "out of memory");
                break;
            }
            if ((st = vkr_mem_read(b, m, a->offset, tmp[i], a->len)) < 0)
                break;
            bytes[i] = tmp[i];
        }
        len[i] = a->len;
    }
    if (st == 0) {
        struct replay_done d = {.slot = rx->slot, .n_access = na, .bytes = bytes, .len = len};
        b->cb.done(b->cb.eng, &d);
    }
    for (uint32_t i = 0; tmp && i < na; i++)
        free(tmp[i]);
    free(tmp);
    free(bytes);
    free(len);
    return st;
}

/* ---- API state markers ------------------------------------------------------------------ */

/* The records below are what a MARKER op carries for API state this backend keeps: each takes
 * the record r, with dec positioned after it (SET_LAYOUT reads its SET_BINDING records from
 * it), and returns 0 or an op error. */

static int buffer_create(struct vkbe *b, const struct sbt_payload_rec *r,
                         struct sbt_payload_dec *dec)
{
    (void)dec;
    uint64_t id = sbt_payload_arg(r, 0);
    int st = vkr_check_buffer(r);
    if (st < 0)
        return st;
    if (sbt_map_getp(&b->bufs, id))
        return replay__fail(SBT_ECORRUPT, "buffer %" PRIu64 " is created twice", id);
    struct buf *x = calloc(1, sizeof *x);
    if (!x)
        return replay__fail(SBT_ENOMEM, "out of memory");
    x->id = id;
    x->size = sbt_payload_arg(r, 1);
    x->usage = sbt_payload_arg(r, 2);
    /* at its captured address (capture-replay) when it has one: the opaque capture
     * address follows the queue families and the device id */
    uint64_t nf = sbt_payload_arg(r, 5);
    uint64_t opaque = b->addr_replay && nf < r->n_arg ? sbt_payload_arg(r, 7 + (uint32_t)nf) : 0;
    VkBufferOpaqueCaptureAddressCreateInfo oa = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_OPAQUE_CAPTURE_ADDRESS_CREATE_INFO,
        .opaqueCaptureAddress = opaque};
    VkBufferCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .pNext = opaque ? &oa : NULL,
        .size = x->size,
        .usage = (VkBufferUsageFlags)sbt_payload_arg(r, 2) | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .flags = ((VkBufferCreateFlags)sbt_payload_arg(r, 3) &
                  ~(uint32_t)(VK_BUFFER_CREATE_SPARSE_BINDING_BIT |
                              VK_BUFFER_CREATE_SPARSE_RESIDENCY_BIT |
                              VK_BUFFER_CREATE_SPARSE_ALIASED_BIT |
                              VK_BUFFER_CREATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT)) |
                 (opaque ? VK_BUFFER_CREATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT : 0),
        .sharingMode = b->n_families > 1 ? VK_SHARING_MODE_CONCURRENT : VK_SHARING_MODE_EXCLUSIVE,
        .queueFamilyIndexCount = b->n_families > 1 ? b->n_families : 0,
        .pQueueFamilyIndices = b->families};
    VkResult vr = vkCreateBuffer(b->dev, &ci, NULL, &x->buf);
    if (vr != VK_SUCCESS) {
        free(x);
        return VKFAIL(vr, "vkCreateBuffer");
    }
    if (sbt_map_putp(&b->bufs, id, x) < 0) {
        vkDestroyBuffer(b->dev, x->buf, NULL);
        free(x);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    return 0;
}

static int buffer_bind(struct vkbe *b, const struct sbt_payload_rec *r, struct sbt_payload_dec *dec)
{
    (void)dec;
    struct buf *x = sbt_map_getp(&b->bufs, sbt_payload_arg(r, 0));
    struct mem *m = sbt_map_getp(&b->mems, sbt_payload_arg(r, 1));
    if (!x || !m)
        return replay__fail(SBT_EINVAL,
                            "vkBindBufferMemory: buffer %" PRIu64 " or memory %" PRIu64
                            " does not exist",
                            sbt_payload_arg(r, 0), sbt_payload_arg(r, 1));
    return bind_buffer(b, x, m, sbt_payload_arg(r, 2));
}

static int buffer_view_make(struct vkbe *b, const struct sbt_payload_rec *r,
                            struct sbt_payload_dec *dec)
{
    (void)dec;
    int st;
    struct buf *x = sbt_map_getp(&b->bufs, sbt_payload_arg(r, 1));
    if (x && (st = vkr_check_view(&b->lim, r, x->size)) < 0)
        return st;
    if (sbt_map_getp(&b->views, sbt_payload_arg(r, 0)))
        return replay__fail(SBT_ECORRUPT, "buffer view %" PRIu64 " is created twice",
                            sbt_payload_arg(r, 0));
    struct bview *v = x ? calloc(1, sizeof *v) : NULL;
    if (!v)
        return x ? replay__fail(SBT_ENOMEM, "out of memory")
                 : replay__fail(SBT_EINVAL, "buffer view of a missing buffer");
    v->buf = x->id;
    v->offset = sbt_payload_arg(r, 3);
    v->range = sbt_payload_arg(r, 4);
    VkBufferViewCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                                 .buffer = x->buf,
                                 .format = (VkFormat)sbt_payload_arg(r, 2),
                                 .offset = v->offset,
                                 .range = v->range};
    if (vkCreateBufferView(b->dev, &ci, NULL, &v->view) != VK_SUCCESS ||
        sbt_map_putp(&b->views, sbt_payload_arg(r, 0), v) < 0) {
        free(v);
        return replay__fail(REPLAY_EUNSUPPORTED, "vkCreateBufferView failed");
    }
    return 0;
}

/* At its captured address, the buffer must be given the captured address. */
static int buffer_address(struct vkbe *b, const struct sbt_payload_rec *r,
                          struct sbt_payload_dec *dec)
{
    (void)dec;
    struct buf *x = sbt_map_getp(&b->bufs, sbt_payload_arg(r, 0));
    if (!x || !b->addr_replay)
        return 0;
    VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                    .buffer = x->buf};
    uint64_t a = vkGetBufferDeviceAddress(b->dev, &ai);
    if (a != sbt_payload_arg(r, 1))
        return replay__fail(REPLAY_ENODEV,
                            "buffer %" PRIu64 " has device address 0x%" PRIx64 " here, 0x%" PRIx64
                            " in the capture: this device did not honour its opaque capture "
                            "address",
                            x->id, a, sbt_payload_arg(r, 1));
    return 0;
}

static int set_layout(struct vkbe *b, const struct sbt_payload_rec *r, struct sbt_payload_dec *dec)
{
    int st = 0;
    vkr_make_setlayout(b, r, dec, &st);
    return st;
}

static int pipeline_layout(struct vkbe *b, const struct sbt_payload_rec *r,
                           struct sbt_payload_dec *dec)
{
    (void)dec;
    int st = 0;
    vkr_make_playout(b, r, &st);
    return st;
}

/* Buffers, image views and samplers; other objects are replay's own (see marker_recs). */
static int destroy(struct vkbe *b, const struct sbt_payload_rec *r, struct sbt_payload_dec *dec)
{
    (void)dec;
    uint64_t id = sbt_payload_arg(r, 1);
    switch (sbt_payload_arg(r, 0)) {
    case VK_OBJECT_TYPE_BUFFER:
        break;
    case VK_OBJECT_TYPE_IMAGE_VIEW:
        return vkr_iview_free(b, id);
    case VK_OBJECT_TYPE_SAMPLER:
        return vkr_sampler_free(b, id);
    default:
        return 0;
    }
    struct buf *x = sbt_map_getp(&b->bufs, id);
    if (!x)
        return 0;
    sbt_map_del(&b->bufs, id);
    /* ops using it may still be queued: destroy at the next drain */
    if (grow((void **)&b->dead_bufs, &b->cap_dead, b->n_dead + 1, sizeof *b->dead_bufs) < 0)
        return SBT_ENOMEM;
    b->dead_bufs[b->n_dead++] = x;
    return 0;
}

/* The one list of the API state records this backend acts on: vkr_marker applies a record
 * through its entry and ignores records without one, and vkr_state_op keeps for a range
 * replay exactly the markers holding a record with one, so the two cannot disagree. Records
 * without an entry (descriptor sets, sync objects) are rebuilt per op from the ops' own
 * payloads, so a range replay may skip the markers that hold only those. */
static const struct marker_rec {
    uint32_t call; /* SBT_VK_* */
    int (*apply)(struct vkbe *b, const struct sbt_payload_rec *r, struct sbt_payload_dec *dec);
} marker_recs[] = {
    {SBT_VK_CREATE_BUFFER, buffer_create},
    {SBT_VK_BIND_BUFFER, buffer_bind},
    {SBT_VK_CREATE_BUFFER_VIEW, buffer_view_make},
    {SBT_VK_BUFFER_ADDRESS, buffer_address},
    {SBT_VK_SET_LAYOUT, set_layout},
    {SBT_VK_PIPELINE_LAYOUT, pipeline_layout},
    {SBT_VK_BIND_IMAGE, vkr_image_bind},
    {SBT_VK_CREATE_IMAGE_VIEW, vkr_image_view_make},
    {SBT_VK_CREATE_SAMPLER, vkr_sampler_make},
    {SBT_VK_DESTROY, destroy},
};

static const struct marker_rec *marker_rec_of(uint32_t call)
{
    for (size_t i = 0; i < sizeof marker_recs / sizeof marker_recs[0]; i++)
        if (marker_recs[i].call == call)
            return &marker_recs[i];
    return NULL;
}

int vkr_state_op(const struct sbt_op *op)
{
    if (op->kind != SBT_OP_MARKER)
        return 1; /* allocations, frees */
    if (op->payload.kind != SBT_VK_PAYLOAD)
        return 0; /* a user marker */
    struct sbt_payload_dec dec;
    struct sbt_payload_rec r;
    int k, keep = 0;
    sbt_payload_dec_init(&dec, op->payload.data, op->payload.len);
    while (!keep && (k = sbt_payload_dec_next(&dec, &r)) == 1)
        keep = marker_rec_of(r.call) != NULL;
    if (k < 0)
        keep = 1; /* undecodable: let the marker report it where it runs */
    sbt_payload_dec_free(&dec);
    return keep;
}

int vkr_marker(struct vkbe *b, const struct sbt_op *op)
{
    if (op->flags & SBT_OPF_UNSUPPORTED) {
        struct sbt_payload_dec dec;
        struct sbt_payload_rec r;
        char name[128] = "an unrecorded command";
        if (sbt_payload_find(&dec, op->payload.data, op->payload.len, SBT_VK_CMD_UNSUPPORTED, &r) ==
                1 &&
            r.n_bytes)
            snprintf(name, sizeof name, "%.*s", (int)r.n_bytes, (const char *)r.bytes);
        sbt_payload_dec_free(&dec);
        return replay__fail(REPLAY_EUNSUPPORTED, "%s is not supported", name);
    }
    if (op->payload.kind != SBT_VK_PAYLOAD)
        return 0; /* a user marker */
    struct sbt_payload_dec dec;
    struct sbt_payload_rec r;
    sbt_payload_dec_init(&dec, op->payload.data, op->payload.len);
    int st = 0, k;
    while (st == 0 && (k = sbt_payload_dec_next(&dec, &r)) == 1) {
        const struct marker_rec *m = marker_rec_of(r.call);
        if (m)
            st = m->apply(b, &r, &dec);
    }
    if (st == 0 && k < 0)
        st = replay__fail(SBT_ECORRUPT, "%s", sbt_errmsg());
    sbt_payload_dec_free(&dec);
    return st;
}

struct buf *vkr_buf_of(struct vkbe *b, uint64_t id, int *st, const char *what)
{
    struct buf *x = sbt_map_getp(&b->bufs, id);
    if (!x)
        *st = replay__fail(SBT_EINVAL,
                           "%s: buffer %" PRIu64 " does not exist here (never "
                           "created, or destroyed)",
                           what, id);
    else if (!x->mem)
        *st = replay__fail(SBT_EINVAL, "%s: buffer %" PRIu64 " has no memory bound", what, id);
    return x && x->mem ? x : NULL;
}
