/*
 * tests/vk/layer_noncoherent.c — VK_LAYER_REPRISE_noncoherent, a test-only Vulkan layer that
 * makes lavapipe's host-visible memory non-coherent, as a discrete GPU's HOST_VISIBLE memory
 * without HOST_COHERENT is, so that the capture and replay of programs that flush and
 * invalidate their mappings run end to end in CI (lavapipe's host-visible types are all
 * coherent). It sits below the capture layer (`reprise capture` puts the capture layer first).
 *
 * How: every host-visible memory type is reported without HOST_COHERENT, and
 * nonCoherentAtomSize is reported as at least ATOM. A mapping hands the program a separate host
 * copy of the allocation, kept from its first map to its free (an unmap keeps it, as a CPU cache
 * keeps its lines): bytes are filled from the driver's memory the first time a map covers them,
 * and after that host writes reach the driver's memory only at vkFlushMappedMemoryRanges, and
 * device output reaches the copy only at vkInvalidateMappedMemoryRanges (a map makes nothing
 * visible): a flush writes back the atoms of its ranges the host changed since the copy last
 * matched the driver's memory (dirty atoms, as a cache writes back dirty lines; a host write of
 * the value a byte held is not seen), an invalidate copies its ranges' atoms in from the
 * driver's memory (a host write there not flushed first is lost: the spec
 * leaves those bytes undefined). Unmapping writes nothing back. A range that breaks the rules
 * of VkMappedMemoryRange (offset not a multiple of nonCoherentAtomSize, size not one and not
 * to the end of the allocation, outside the mapping, memory not mapped) is a bug of whoever
 * made it: the layer names it on stderr and aborts.
 *
 * Not covered: memory imported from host pages (VK_EXT_external_memory_host) is mapped as the
 * driver maps it (the program writes those pages directly). One instance and one device at a
 * time (a test layer); mappings are looked up under a mutex, any thread may use them.
 * Reference: Vulkan-Loader docs/LoaderLayerInterface.md; Vulkan spec, "Host Access to Device
 * Memory Objects" (vkFlushMappedMemoryRanges, vkInvalidateMappedMemoryRanges).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "tests/vk/layer_common.h"

#define ATOM    256u /* the nonCoherentAtomSize reported, at least */
#define PG      4096u
#define MAX_MEM 1024

static PFN_vkGetPhysicalDeviceMemoryProperties next_memprops;
static PFN_vkGetPhysicalDeviceMemoryProperties2 next_memprops2;
static PFN_vkGetPhysicalDeviceProperties next_props;
static PFN_vkGetPhysicalDeviceProperties2 next_props2;
static PFN_vkAllocateMemory next_alloc;
static PFN_vkFreeMemory next_free;
static PFN_vkMapMemory next_map;
static PFN_vkUnmapMemory next_unmap;
#ifdef VK_KHR_map_memory2
static PFN_vkMapMemory2KHR next_map2;
static PFN_vkUnmapMemory2KHR next_unmap2;
#endif
static PFN_vkFlushMappedMemoryRanges next_flush;
static PFN_vkInvalidateMappedMemoryRanges next_invalidate;
static uint64_t atom = ATOM;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct mem {
    VkDeviceMemory mem;
    uint64_t size;
    int imported;
    /* the host copy, of the whole allocation (index: allocation offset), from the first map to
     * the free: an unmap keeps it, as a CPU cache keeps its lines */
    uint8_t *host;
    uint8_t *clean;  /* what the host copy held when it last matched the driver's memory */
    uint64_t fa, fb; /* the bytes the host copy was ever filled with (from the driver's) */
    size_t host_len;
    /* while mapped: [off, off + len) of the allocation, at the driver's pointer real */
    int mapped;
    uint64_t off, len;
    uint8_t *real;
} mems[MAX_MEM];

static struct mem *find(VkDeviceMemory m)
{
    for (int i = 0; m && i < MAX_MEM; i++)
        if (mems[i].mem == m)
            return &mems[i];
    return NULL;
}

static void noncoherent(VkPhysicalDeviceMemoryProperties *p)
{
    for (uint32_t i = 0; i < p->memoryTypeCount; i++)
        if (p->memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
            p->memoryTypes[i].propertyFlags &=
                ~(VkMemoryPropertyFlags)VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
}

static VKAPI_ATTR void VKAPI_CALL
fake_GetPhysicalDeviceMemoryProperties(VkPhysicalDevice p, VkPhysicalDeviceMemoryProperties *props)
{
    next_memprops(p, props);
    noncoherent(props);
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPhysicalDeviceMemoryProperties2(
    VkPhysicalDevice p, VkPhysicalDeviceMemoryProperties2 *props)
{
    next_memprops2(p, props);
    noncoherent(&props->memoryProperties);
}

static void limits(VkPhysicalDeviceLimits *l)
{
    if (l->nonCoherentAtomSize < ATOM)
        l->nonCoherentAtomSize = ATOM;
    atom = l->nonCoherentAtomSize;
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPhysicalDeviceProperties(VkPhysicalDevice p,
                                                                   VkPhysicalDeviceProperties *pr)
{
    next_props(p, pr);
    limits(&pr->limits);
}

static VKAPI_ATTR void VKAPI_CALL fake_GetPhysicalDeviceProperties2(VkPhysicalDevice p,
                                                                    VkPhysicalDeviceProperties2 *pr)
{
    next_props2(p, pr);
    limits(&pr->properties.limits);
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateInstance(const VkInstanceCreateInfo *ci,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkInstance *out)
{
    PFN_vkCreateInstance next = layer_next_create_instance(ci);
    VkResult r = next ? next(ci, alloc, out) : VK_ERROR_INITIALIZATION_FAILED;
    if (r != VK_SUCCESS)
        return r;
    instance = *out;
    next_memprops = (PFN_vkGetPhysicalDeviceMemoryProperties)next_gipa(
        *out, "vkGetPhysicalDeviceMemoryProperties");
    next_memprops2 = (PFN_vkGetPhysicalDeviceMemoryProperties2)next_gipa(
        *out, "vkGetPhysicalDeviceMemoryProperties2");
    if (!next_memprops2)
        next_memprops2 = (PFN_vkGetPhysicalDeviceMemoryProperties2)next_gipa(
            *out, "vkGetPhysicalDeviceMemoryProperties2KHR");
    next_props =
        (PFN_vkGetPhysicalDeviceProperties)next_gipa(*out, "vkGetPhysicalDeviceProperties");
    next_props2 =
        (PFN_vkGetPhysicalDeviceProperties2)next_gipa(*out, "vkGetPhysicalDeviceProperties2");
    if (!next_props2)
        next_props2 = (PFN_vkGetPhysicalDeviceProperties2)next_gipa(
            *out, "vkGetPhysicalDeviceProperties2KHR");
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateDevice(VkPhysicalDevice phys,
                                                        const VkDeviceCreateInfo *ci,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkDevice *out)
{
    PFN_vkCreateDevice next = layer_next_create_device(ci);
    VkResult r = next ? next(phys, ci, alloc, out) : VK_ERROR_INITIALIZATION_FAILED;
    if (r != VK_SUCCESS)
        return r;
    VkPhysicalDeviceProperties pr;
    fake_GetPhysicalDeviceProperties(phys, &pr); /* the atom size, as reported */
    next_alloc = (PFN_vkAllocateMemory)next_gdpa(*out, "vkAllocateMemory");
    next_free = (PFN_vkFreeMemory)next_gdpa(*out, "vkFreeMemory");
    next_map = (PFN_vkMapMemory)next_gdpa(*out, "vkMapMemory");
    next_unmap = (PFN_vkUnmapMemory)next_gdpa(*out, "vkUnmapMemory");
#ifdef VK_KHR_map_memory2
    next_map2 = (PFN_vkMapMemory2KHR)next_gdpa(*out, "vkMapMemory2KHR");
    if (!next_map2)
        next_map2 = (PFN_vkMapMemory2KHR)next_gdpa(*out, "vkMapMemory2");
    next_unmap2 = (PFN_vkUnmapMemory2KHR)next_gdpa(*out, "vkUnmapMemory2KHR");
    if (!next_unmap2)
        next_unmap2 = (PFN_vkUnmapMemory2KHR)next_gdpa(*out, "vkUnmapMemory2");
#endif
    next_flush = (PFN_vkFlushMappedMemoryRanges)next_gdpa(*out, "vkFlushMappedMemoryRanges");
    next_invalidate =
        (PFN_vkInvalidateMappedMemoryRanges)next_gdpa(*out, "vkInvalidateMappedMemoryRanges");
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_AllocateMemory(VkDevice dev,
                                                          const VkMemoryAllocateInfo *ai,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkDeviceMemory *out)
{
    VkResult r = next_alloc(dev, ai, alloc, out);
    if (r != VK_SUCCESS)
        return r;
    int imported = 0;
    for (const VkBaseInStructure *s = ai->pNext; s; s = s->pNext)
        imported |= s->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
    pthread_mutex_lock(&mu);
    struct mem *m = NULL;
    for (int i = 0; i < MAX_MEM && !m; i++)
        if (!mems[i].mem)
            m = &mems[i];
    if (m) {
        memset(m, 0, sizeof *m);
        m->mem = *out;
        m->size = ai->allocationSize;
        m->imported = imported;
    }
    pthread_mutex_unlock(&mu);
    if (!m) {
        fprintf(stderr, "VK_LAYER_REPRISE_noncoherent: more than %d allocations\n", MAX_MEM);
        abort();
    }
    return r;
}

/* The allocation goes: its host copy too. mu held. */
static void drop(struct mem *m)
{
    if (m->host)
        munmap(m->host, m->host_len);
    free(m->clean);
    memset(m, 0, sizeof *m);
}

static VKAPI_ATTR void VKAPI_CALL fake_FreeMemory(VkDevice dev, VkDeviceMemory mem,
                                                  const VkAllocationCallbacks *alloc)
{
    pthread_mutex_lock(&mu);
    struct mem *m = find(mem);
    if (m)
        drop(m);
    pthread_mutex_unlock(&mu);
    next_free(dev, mem, alloc);
}

/* Bytes [a, b) of the host copy filled from the driver's mapping (as a cold cache reads
 * memory), but for those filled before. mu held, m mapped over [a, b). */
static void fill(struct mem *m, uint64_t a, uint64_t b)
{
    for (uint64_t x = a; x < b;) {
        uint64_t y = b;
        if (m->fa < m->fb && x >= m->fa && x < m->fb) { /* filled before */
            x = m->fb;
            continue;
        }
        if (m->fa < m->fb && x < m->fa && y > m->fa)
            y = m->fa;
        memcpy(m->host + x, m->real + (x - m->off), y - x);
        memcpy(m->clean + x, m->real + (x - m->off), y - x);
        x = y;
    }
    if (m->fa >= m->fb) {
        m->fa = a;
        m->fb = b;
    } else if (b >= m->fa && a <= m->fb) {
        m->fa = a < m->fa ? a : m->fa;
        m->fb = b > m->fb ? b : m->fb;
    } else { /* apart: the bytes between, from the driver's memory, as they are now */
        uint64_t ga = b < m->fa ? b : m->fb, gb = b < m->fa ? m->fa : a;
        if (ga >= m->off && gb <= m->off + m->len) {
            memcpy(m->host + ga, m->real + (ga - m->off), gb - ga);
            memcpy(m->clean + ga, m->real + (ga - m->off), gb - ga);
        } else { /* not mapped now: as never written (zeros) */
            memset(m->host + ga, 0, gb - ga);
            memset(m->clean + ga, 0, gb - ga);
        }
        m->fa = a < m->fa ? a : m->fa;
        m->fb = b > m->fb ? b : m->fb;
    }
}

/* The driver mapped [off, off + size) of mem at *pp: the program gets the host copy there. */
static VkResult mapped(VkDeviceMemory mem, VkDeviceSize off, VkDeviceSize size, void **pp)
{
    pthread_mutex_lock(&mu);
    struct mem *m = find(mem);
    VkResult r = VK_SUCCESS;
    if (m && !m->imported && *pp) {
        if (!m->host) {
            size_t n = (m->size + PG - 1) & ~(size_t)(PG - 1);
            void *h =
                mmap(NULL, n ? n : PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            m->clean = malloc(m->size ? m->size : 1);
            if (h == MAP_FAILED || !m->clean) {
                if (h != MAP_FAILED)
                    munmap(h, n ? n : PG);
                free(m->clean);
                m->clean = NULL;
                pthread_mutex_unlock(&mu);
                return VK_ERROR_OUT_OF_HOST_MEMORY;
            }
            m->host = h;
            m->host_len = n ? n : PG;
        }
        m->mapped = 1;
        m->off = off;
        m->len = size == VK_WHOLE_SIZE ? m->size - off : size;
        m->real = *pp;
        fill(m, off, off + m->len);
        *pp = m->host + off;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_MapMemory(VkDevice dev, VkDeviceMemory mem,
                                                     VkDeviceSize off, VkDeviceSize size,
                                                     VkMemoryMapFlags flags, void **pp)
{
    VkResult r = next_map(dev, mem, off, size, flags, pp);
    if (r == VK_SUCCESS && (r = mapped(mem, off, size, pp)) != VK_SUCCESS)
        next_unmap(dev, mem);
    return r;
}

static void unmapping(VkDeviceMemory mem)
{
    pthread_mutex_lock(&mu);
    struct mem *m = find(mem);
    if (m) { /* nothing written back; the host copy stays */
        m->mapped = 0;
        m->real = NULL;
    }
    pthread_mutex_unlock(&mu);
}

static VKAPI_ATTR void VKAPI_CALL fake_UnmapMemory(VkDevice dev, VkDeviceMemory mem)
{
    unmapping(mem);
    next_unmap(dev, mem);
}

#ifdef VK_KHR_map_memory2
static VKAPI_ATTR VkResult VKAPI_CALL fake_MapMemory2(VkDevice dev, const VkMemoryMapInfoKHR *mi,
                                                      void **pp)
{
#ifdef VK_EXT_map_memory_placed
    if (mi->flags & VK_MEMORY_MAP_PLACED_BIT_EXT) {
        fprintf(stderr, "VK_LAYER_REPRISE_noncoherent: placed mappings are not supported\n");
        abort();
    }
#endif
    VkResult r = next_map2(dev, mi, pp);
    if (r == VK_SUCCESS && (r = mapped(mi->memory, mi->offset, mi->size, pp)) != VK_SUCCESS) {
        VkMemoryUnmapInfoKHR ui = {.sType = VK_STRUCTURE_TYPE_MEMORY_UNMAP_INFO_KHR,
                                   .memory = mi->memory};
        next_unmap2(dev, &ui);
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_UnmapMemory2(VkDevice dev,
                                                        const VkMemoryUnmapInfoKHR *ui)
{
    unmapping(ui->memory);
    return next_unmap2(dev, ui);
}
#endif

/* The allocation bytes [*a, *b) range rg covers; aborts on a bad range. */
static struct mem *range(const char *what, const VkMappedMemoryRange *rg, uint64_t *a, uint64_t *b)
{
    struct mem *m = find(rg->memory);
    const char *bad = NULL;
    if (!m)
        bad = "memory not allocated through this layer";
    else if (!m->imported && !m->mapped)
        bad = "memory not mapped (VUID-VkMappedMemoryRange-memory-00684)";
    else if (rg->offset % atom)
        bad =
            "offset not a multiple of nonCoherentAtomSize (VUID-VkMappedMemoryRange-offset-00687)";
    else if (rg->size != VK_WHOLE_SIZE && rg->size % atom && rg->offset + rg->size != m->size)
        bad = "size not a multiple of nonCoherentAtomSize and not to the end of the memory "
              "(VUID-VkMappedMemoryRange-size-01390)";
    else if (!m->imported && (rg->offset < m->off || (rg->size != VK_WHOLE_SIZE &&
                                                      rg->offset + rg->size > m->off + m->len)))
        bad = "range outside the mapping (VUID-VkMappedMemoryRange-size-00685)";
    if (bad) {
        fprintf(stderr, "VK_LAYER_REPRISE_noncoherent: %s: offset %llu size %llu (atom %llu): %s\n",
                what, (unsigned long long)rg->offset, (unsigned long long)rg->size,
                (unsigned long long)atom, bad);
        abort();
    }
    if (m->imported)
        return NULL;
    *a = rg->offset;
    *b = rg->size == VK_WHOLE_SIZE ? m->off + m->len : rg->offset + rg->size;
    if (*b > m->off + m->len)
        *b = m->off + m->len;
    return m;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_FlushMappedMemoryRanges(VkDevice dev, uint32_t n,
                                                                   const VkMappedMemoryRange *rg)
{
    pthread_mutex_lock(&mu);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = 0, b = 0;
        struct mem *m = range("vkFlushMappedMemoryRanges", &rg[i], &a, &b);
        for (uint64_t x = a; m && x < b;) { /* the dirty atoms, whole */
            uint64_t y = (x / atom + 1) * atom < b ? (x / atom + 1) * atom : b;
            if (memcmp(m->host + x, m->clean + x, y - x)) {
                memcpy(m->real + (x - m->off), m->host + x, y - x);
                memcpy(m->clean + x, m->host + x, y - x);
            }
            x = y;
        }
    }
    pthread_mutex_unlock(&mu);
    return next_flush(dev, n, rg);
}

static VKAPI_ATTR VkResult VKAPI_CALL
fake_InvalidateMappedMemoryRanges(VkDevice dev, uint32_t n, const VkMappedMemoryRange *rg)
{
    VkResult r = next_invalidate(dev, n, rg);
    pthread_mutex_lock(&mu);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = 0, b = 0;
        struct mem *m = range("vkInvalidateMappedMemoryRanges", &rg[i], &a, &b);
        if (m && a < b) {
            memcpy(m->host + a, m->real + (a - m->off), b - a);
            memcpy(m->clean + a, m->real + (a - m->off), b - a);
        }
    }
    pthread_mutex_unlock(&mu);
    return r;
}

/* The layer's own functions (tests/vk/layer_common.h); none wraps a command the driver may lack. */
static PFN_vkVoidFunction own(const char *name, int *wraps)
{
    *wraps = 0;
    static const struct {
        const char *name;
        PFN_vkVoidFunction fn;
    } t[] = {
        {"vkCreateInstance", (PFN_vkVoidFunction)fake_CreateInstance},
        {"vkCreateDevice", (PFN_vkVoidFunction)fake_CreateDevice},
        {"vkGetPhysicalDeviceMemoryProperties",
         (PFN_vkVoidFunction)fake_GetPhysicalDeviceMemoryProperties},
        {"vkGetPhysicalDeviceMemoryProperties2",
         (PFN_vkVoidFunction)fake_GetPhysicalDeviceMemoryProperties2},
        {"vkGetPhysicalDeviceMemoryProperties2KHR",
         (PFN_vkVoidFunction)fake_GetPhysicalDeviceMemoryProperties2},
        {"vkGetPhysicalDeviceProperties", (PFN_vkVoidFunction)fake_GetPhysicalDeviceProperties},
        {"vkGetPhysicalDeviceProperties2", (PFN_vkVoidFunction)fake_GetPhysicalDeviceProperties2},
        {"vkGetPhysicalDeviceProperties2KHR",
         (PFN_vkVoidFunction)fake_GetPhysicalDeviceProperties2},
        {"vkAllocateMemory", (PFN_vkVoidFunction)fake_AllocateMemory},
        {"vkFreeMemory", (PFN_vkVoidFunction)fake_FreeMemory},
        {"vkMapMemory", (PFN_vkVoidFunction)fake_MapMemory},
        {"vkUnmapMemory", (PFN_vkVoidFunction)fake_UnmapMemory},
#ifdef VK_KHR_map_memory2
        {"vkMapMemory2", (PFN_vkVoidFunction)fake_MapMemory2},
        {"vkMapMemory2KHR", (PFN_vkVoidFunction)fake_MapMemory2},
        {"vkUnmapMemory2", (PFN_vkVoidFunction)fake_UnmapMemory2},
        {"vkUnmapMemory2KHR", (PFN_vkVoidFunction)fake_UnmapMemory2},
#endif
        {"vkFlushMappedMemoryRanges", (PFN_vkVoidFunction)fake_FlushMappedMemoryRanges},
        {"vkInvalidateMappedMemoryRanges", (PFN_vkVoidFunction)fake_InvalidateMappedMemoryRanges},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(name, t[i].name))
            return t[i].fn;
    return NULL;
}
