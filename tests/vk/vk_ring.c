/*
 * tests/vk/vk_ring.c — host writes next to device output that is still being written: the
 * upload-ring pattern of issue 14. One persistently mapped, coherent buffer of four regions of
 * R bytes (R = 1 KiB by default: the whole ring is one page).
 *
 *   vk_ring ring   region 0 is the output of every dispatch, regions 1..3 its input in turn;
 *                  while a dispatch runs, the host fills the next one's input in another
 *                  region (of the same page when R < 4 KiB), then waits for the fence, reads
 *                  the output back and submits the next.
 *   vk_ring chain  dispatch i reads region i%4 and writes region (i+1)%4; after each wait the
 *                  host changes four words of what the device just wrote, which the next
 *                  dispatch reads: host writes into device output, byte for byte.
 *
 * Options: --size R (bytes per region, a multiple of 1 KiB), --rounds N (32), --threads T
 * (the host's writes of a round split over T threads), --flush (vkFlushMappedMemoryRanges
 * after the host's writes), --wide (the output binding is the whole buffer: the dispatch
 * may write every byte, writes only its region), --import (the memory is the program's own
 * pages, VK_EXT_external_memory_host; --import-twice: a second allocation imports the same
 * pages), --map2 (vkMapMemory2KHR), --own-segv early|late (the
 * program takes SIGSEGV for faults of its own, as JITs do: a page it write-protects and writes
 * every round; its handler, installed before or after the Vulkan device, passes other faults
 * on to the handler it replaced), --remap (vkUnmapMemory while each dispatch runs, vkMapMemory
 * again after the wait: its output is final while nothing is mapped), --sem binary|timeline|host
 * (each dispatch's submission waits on a semaphore: a binary one an empty submission just before
 * it signals, a timeline value one signals, or a timeline value the host signals with
 * vkSignalSemaphore after it has filled the next input: semaphore-chained submissions),
 * --signals N (each dispatch signals a timeline value, N empty submissions after it signal the
 * next N values, and the host waits for the dispatch's value with vkWaitSemaphores instead of
 * the fence: the wait names a signal N signals back), --noncoherent (the memory need not be
 * HOST_COHERENT, and the program does what non-coherent memory asks: it flushes what it wrote
 * before the device reads it, and invalidates the output after the wait, before it reads it;
 * ranges aligned to nonCoherentAtomSize; implies --flush), --noncoherent-wrong (the same without
 * the invalidate: it reads stale output where memory really is non-coherent),
 * --noncoherent-noflush (the same without the flushes: the device reads stale input). Prints a
 * checksum of every read-back (and the faults its own handler saw), so runs with and without
 * capture compare; exits 4 when the device lacks what an option needs.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/vk/vkt.h"

static struct {
    int chain, flush, wide, import, map2, remap, own_segv; /* own_segv: 1 early, 2 late */
    int import_twice, noncoherent; /* noncoherent: 1, 2 without invalidating, 3 flushing nothing */
    int sem; /* 1 binary, 2 timeline signalled by a submission, 3 timeline signalled by the host */
    uint32_t signals;
    uint32_t size, rounds, threads;
} opt = {.size = 1024, .rounds = 32, .threads = 1};

static struct vkt v;
static uint8_t *ring; /* the mapping */
static VkDeviceMemory mem;
static VkDeviceSize atom = 1, mem_size; /* --noncoherent: nonCoherentAtomSize, the allocation's */
static pthread_barrier_t go, done;
static uint32_t fill_region, fill_round; /* what the threads fill in this round */
static int stop;

/* The program's own faults: a page it write-protects and writes to, as a JIT's guard pages. */
static uint8_t *own_page;
static volatile sig_atomic_t own_faults;
static struct sigaction own_prev;

static void own_segv(int sig, siginfo_t *si, void *uc)
{
    uint8_t *a = si->si_addr;
    if (own_page && a >= own_page && a < own_page + 4096) {
        own_faults++;
        mprotect(own_page, 4096, PROT_READ | PROT_WRITE);
        return;
    }
    /* not ours: to the handler this one replaced, as V8 and the JVM do */
    if (own_prev.sa_flags & SA_SIGINFO) {
        own_prev.sa_sigaction(sig, si, uc);
    } else if (own_prev.sa_handler == SIG_DFL || own_prev.sa_handler == SIG_IGN) {
        signal(sig, SIG_DFL); /* the fault repeats and ends the process */
    } else {
        own_prev.sa_handler(sig);
    }
}

static void own_install(void)
{
    own_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (own_page == MAP_FAILED)
        exit(1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = own_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &own_prev);
}

static void own_fault(uint32_t k)
{
    if (!own_page)
        return;
    mprotect(own_page, 4096, PROT_READ);
    ((volatile uint8_t *)own_page)[k % 4096] = (uint8_t)k; /* faults: the handler opens it */
}

static uint32_t word(uint32_t round, uint32_t i)
{
    return (i + round * 0x9e3779b9u) * 2246822519u ^ 0x5bd1e995u;
}

/* Thread t's share of region r's input for round k. */
static void fill_part(uint32_t t, uint32_t r, uint32_t k)
{
    uint32_t n = opt.size / 4, per = (n + opt.threads - 1) / opt.threads;
    uint32_t *p = (uint32_t *)(ring + (size_t)r * opt.size);
    for (uint32_t i = t * per; i < n && i < (t + 1) * per; i++)
        p[i] = word(k, i);
}

static void *filler(void *arg)
{
    uint32_t t = (uint32_t)(uintptr_t)arg;
    for (;;) {
        pthread_barrier_wait(&go);
        if (stop)
            return NULL;
        fill_part(t, fill_region, fill_round);
        pthread_barrier_wait(&done);
    }
}

/* The host's writes of round k into region r, by every thread (thread 0 is this one). */
static void fill(uint32_t r, uint32_t k)
{
    fill_region = r;
    fill_round = k;
    if (opt.threads > 1)
        pthread_barrier_wait(&go);
    fill_part(0, r, k);
    if (opt.threads > 1)
        pthread_barrier_wait(&done);
}

/* Bytes [off, off + len) of the memory as a range of whole atoms (to the end of the memory
 * where the last atom would pass it). */
static VkMappedMemoryRange atoms(VkDeviceSize off, VkDeviceSize len)
{
    VkDeviceSize a = off / atom * atom, b = (off + len + atom - 1) / atom * atom;
    return (VkMappedMemoryRange){.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                 .memory = mem,
                                 .offset = a,
                                 .size = b < mem_size ? b - a : mem_size - a};
}

static void flush(uint32_t r, uint32_t len)
{
    if (!opt.flush)
        return;
    VkMappedMemoryRange mr = atoms((VkDeviceSize)r * opt.size, len);
    VKT_CHECK(vkFlushMappedMemoryRanges(v.dev, 1, &mr));
}

/* --noncoherent: what the device wrote into region r, into the host's view */
static void invalidate(uint32_t r)
{
    if (opt.noncoherent != 1 && opt.noncoherent != 3)
        return;
    VkMappedMemoryRange mr = atoms((VkDeviceSize)r * opt.size, opt.size);
    VKT_CHECK(vkInvalidateMappedMemoryRanges(v.dev, 1, &mr));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "ring") && strcmp(mode, "chain")) {
        fprintf(stderr, "usage: vk_ring ring|chain [--size R] [--rounds N] [--threads T] "
                        "[--flush] [--noncoherent] [--wide] [--import] [--map2]\n");
        return 2;
    }
    opt.chain = !strcmp(mode, "chain");
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc)
            opt.size = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            opt.rounds = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            opt.threads = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--flush"))
            opt.flush = 1;
        else if (!strcmp(argv[i], "--noncoherent"))
            opt.noncoherent = opt.flush = 1;
        else if (!strcmp(argv[i], "--noncoherent-wrong"))
            opt.noncoherent = 2, opt.flush = 1;
        else if (!strcmp(argv[i], "--noncoherent-noflush"))
            opt.noncoherent = 3;
        else if (!strcmp(argv[i], "--wide"))
            opt.wide = 1;
        else if (!strcmp(argv[i], "--import"))
            opt.import = 1;
        else if (!strcmp(argv[i], "--import-twice"))
            opt.import = opt.import_twice = 1;
        else if (!strcmp(argv[i], "--map2"))
            opt.map2 = 1;
        else if (!strcmp(argv[i], "--remap"))
            opt.remap = 1;
        else if (!strcmp(argv[i], "--own-segv") && i + 1 < argc)
            opt.own_segv = !strcmp(argv[++i], "late") ? 2 : 1;
        else if (!strcmp(argv[i], "--signals") && i + 1 < argc)
            opt.signals = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sem") && i + 1 < argc) {
            i++;
            opt.sem = !strcmp(argv[i], "binary")     ? 1
                      : !strcmp(argv[i], "timeline") ? 2
                      : !strcmp(argv[i], "host")     ? 3
                                                     : -1;
            if (opt.sem < 0) {
                fprintf(stderr, "vk_ring: --sem binary|timeline|host\n");
                return 2;
            }
        } else {
            fprintf(stderr, "vk_ring: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (opt.size < 1024 || opt.size % 1024 || opt.threads < 1 || opt.threads > 16 ||
        (opt.remap && (opt.import || opt.map2)) || (opt.signals && opt.sem)) {
        fprintf(stderr, "vk_ring: --size is a multiple of 1024, --threads 1..16; --remap goes "
                        "with vkMapMemory only; --signals goes without --sem\n");
        return 2;
    }
    const char *ext[2];
    uint32_t n_ext = 0;
    if (opt.import)
        ext[n_ext++] = "VK_EXT_external_memory_host";
    if (opt.map2)
        ext[n_ext++] = "VK_KHR_map_memory2";
    struct vkt_opts vo = {.extensions = ext, .n_extensions = n_ext};
    vkt_clean_structs = 1;
    if (opt.own_segv == 1)
        own_install();
    vkt_init_opts(&v, argv[0], 1, &vo);
    if (opt.own_segv == 2)
        own_install();
    VkDescriptorType types[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    struct vkt_pipe p;
    vkt_pipeline(&v, "bench", 2, types, 8, NULL, &p);

    VkDeviceSize bytes = 4 * (VkDeviceSize)opt.size;
    VkExternalMemoryBufferCreateInfo ebci = {
        .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
        .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .pNext = opt.import ? &ebci : NULL,
                              .size = bytes,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    VkBuffer buf;
    VKT_CHECK(vkCreateBuffer(v.dev, &bci, NULL, &buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(v.dev, buf, &req);
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size};
    VkImportMemoryHostPointerInfoEXT imp = {
        .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT};
    uint32_t bits = req.memoryTypeBits;
    if (opt.import) {
        mai.allocationSize = (req.size + 65535) & ~(VkDeviceSize)65535;
        imp.pHostPointer = aligned_alloc(65536, mai.allocationSize);
        if (!imp.pHostPointer)
            return 1;
        memset(imp.pHostPointer, 0, mai.allocationSize);
        PFN_vkGetMemoryHostPointerPropertiesEXT props =
            vkt_dev_fn(&v, "vkGetMemoryHostPointerPropertiesEXT");
        VkMemoryHostPointerPropertiesEXT hp = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
        VKT_CHECK(props(v.dev, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                        imp.pHostPointer, &hp));
        bits &= hp.memoryTypeBits;
        mai.pNext = &imp;
    }
    mai.memoryTypeIndex =
        vkt_mem_type(&v, bits,
                     VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                         (opt.noncoherent ? 0 : VK_MEMORY_PROPERTY_HOST_COHERENT_BIT));
    mem_size = mai.allocationSize;
    if (opt.noncoherent) {
        VkPhysicalDeviceProperties pr;
        vkGetPhysicalDeviceProperties(v.phys, &pr);
        atom = pr.limits.nonCoherentAtomSize ? pr.limits.nonCoherentAtomSize : 1;
    }
    VKT_CHECK(vkAllocateMemory(v.dev, &mai, NULL, &mem));
    VKT_CHECK(vkBindBufferMemory(v.dev, buf, mem, 0));
    VkDeviceMemory twin = VK_NULL_HANDLE; /* --import-twice: the same pages, again */
    if (opt.import_twice)
        VKT_CHECK(vkAllocateMemory(v.dev, &mai, NULL, &twin));
    if (opt.import) {
        ring = imp.pHostPointer; /* written through the program's own pointer */
    } else if (opt.map2) {
#ifdef VK_KHR_map_memory2
        PFN_vkMapMemory2KHR map2 = vkt_dev_fn(&v, "vkMapMemory2KHR");
        VkMemoryMapInfoKHR mi = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_MAP_INFO_KHR, .memory = mem, .size = VK_WHOLE_SIZE};
        void *ptr = NULL;
        VKT_CHECK(map2(v.dev, &mi, &ptr));
        ring = ptr;
#else
        fprintf(stderr, "vk_ring: built with Vulkan headers older than VK_KHR_map_memory2\n");
        return 4;
#endif
    } else {
        void *ptr = NULL;
        VKT_CHECK(vkMapMemory(v.dev, mem, 0, VK_WHOLE_SIZE, 0, &ptr));
        ring = ptr;
    }

    /* one descriptor set per (input region, output region) */
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 32};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 16,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &ps};
    VkDescriptorPool pool;
    VKT_CHECK(vkCreateDescriptorPool(v.dev, &dpci, NULL, &pool));
    VkDescriptorSet set[4][4];
    for (uint32_t in = 0; in < 4; in++)
        for (uint32_t out = 0; out < 4; out++) {
            VkDescriptorSetAllocateInfo dsai = {.sType =
                                                    VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                                .descriptorPool = pool,
                                                .descriptorSetCount = 1,
                                                .pSetLayouts = &p.dsl};
            if (in == out || (!opt.chain && out != 0) || (opt.chain && out != (in + 1) % 4))
                continue;
            VKT_CHECK(vkAllocateDescriptorSets(v.dev, &dsai, &set[in][out]));
            VkDescriptorBufferInfo bi[] = {{buf, (VkDeviceSize)in * opt.size, opt.size},
                                           {buf, opt.wide ? 0 : (VkDeviceSize)out * opt.size,
                                            opt.wide ? VK_WHOLE_SIZE : opt.size}};
            VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set[in][out],
                                      .descriptorCount = 2,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = bi};
            vkUpdateDescriptorSets(v.dev, 1, &w, 0, NULL);
        }
    VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = v.family};
    VkCommandPool cpool;
    VKT_CHECK(vkCreateCommandPool(v.dev, &cpci, NULL, &cpool));
    VkCommandBufferAllocateInfo cbai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                        .commandPool = cpool,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                        .commandBufferCount = 1};
    VkCommandBuffer cb;
    VKT_CHECK(vkAllocateCommandBuffers(v.dev, &cbai, &cb));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    VKT_CHECK(vkCreateFence(v.dev, &fci, NULL, &fence));
    VkSemaphoreTypeCreateInfo stci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                 .pNext = opt.sem >= 2 ? &stci : NULL};
    VkSemaphore sem = VK_NULL_HANDLE;
    if (opt.sem || opt.signals) {
        sci.pNext = opt.sem != 1 ? &stci : NULL;
        VKT_CHECK(vkCreateSemaphore(v.dev, &sci, NULL, &sem));
    }

    pthread_t th[16];
    if (opt.threads > 1) {
        pthread_barrier_init(&go, NULL, opt.threads);
        pthread_barrier_init(&done, NULL, opt.threads);
        for (uint32_t t = 1; t < opt.threads; t++)
            pthread_create(&th[t], NULL, filler, (void *)(uintptr_t)t);
    }

    uint32_t n = opt.size / 4;
    uint64_t h = 0;
    fill(opt.chain ? 0 : 1, 0);
    flush(opt.chain ? 0 : 1, opt.size);
    for (uint32_t k = 0; k < opt.rounds; k++) {
        uint32_t in = opt.chain ? k % 4 : 1 + k % 3, out = opt.chain ? (k + 1) % 4 : 0;
        VkCommandBufferBeginInfo bb = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        VKT_CHECK(vkBeginCommandBuffer(cb, &bb));
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set[in][out],
                                0, NULL);
        uint32_t pc[2] = {k, n};
        vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
        vkCmdDispatch(cb, (n + 63) / 64, 1, 1);
        VKT_CHECK(vkEndCommandBuffer(cb));
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &cb};
        /* --sem: the dispatch waits for value k + 1 (or the binary signal) */
        uint64_t value = k + 1;
        VkPipelineStageFlags stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
        VkTimelineSemaphoreSubmitInfo tsi = {.sType =
                                                 VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                             .waitSemaphoreValueCount = 1,
                                             .pWaitSemaphoreValues = &value};
        if (opt.sem) {
            si.waitSemaphoreCount = 1;
            si.pWaitSemaphores = &sem;
            si.pWaitDstStageMask = &stage;
            si.pNext = opt.sem >= 2 ? &tsi : NULL;
        }
        if (opt.sem == 1 || opt.sem == 2) { /* an empty submission signals it first */
            VkTimelineSemaphoreSubmitInfo ssi = {
                .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                .signalSemaphoreValueCount = 1,
                .pSignalSemaphoreValues = &value};
            VkSubmitInfo sig = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                .pNext = opt.sem == 2 ? &ssi : NULL,
                                .signalSemaphoreCount = 1,
                                .pSignalSemaphores = &sem};
            VKT_CHECK(vkQueueSubmit(v.queue[0], 1, &sig, VK_NULL_HANDLE));
        }
        uint64_t sig_value = (uint64_t)k * (opt.signals + 1) + 1;
        VkTimelineSemaphoreSubmitInfo ssi1 = {.sType =
                                                  VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                              .signalSemaphoreValueCount = 1,
                                              .pSignalSemaphoreValues = &sig_value};
        if (opt.signals) {
            si.pNext = &ssi1;
            si.signalSemaphoreCount = 1;
            si.pSignalSemaphores = &sem;
        }
        VKT_CHECK(vkQueueSubmit(v.queue[0], 1, &si, opt.signals ? VK_NULL_HANDLE : fence));
        for (uint32_t j = 1; j <= opt.signals; j++) { /* later values, by empty submissions */
            uint64_t later = sig_value + j;
            VkTimelineSemaphoreSubmitInfo lsi = {
                .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                .signalSemaphoreValueCount = 1,
                .pSignalSemaphoreValues = &later};
            VkSubmitInfo e = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                              .pNext = &lsi,
                              .signalSemaphoreCount = 1,
                              .pSignalSemaphores = &sem};
            VKT_CHECK(vkQueueSubmit(v.queue[0], 1, &e, VK_NULL_HANDLE));
        }
        own_fault(k);
        if (!opt.chain) {
            /* the next input, while this dispatch still writes its output next to it (with
             * --sem host: before the host lets it start) */
            uint32_t next = 1 + (k + 1) % 3;
            fill(next, k + 1);
            flush(next, opt.size);
        }
        if (opt.sem == 3) {
            VkSemaphoreSignalInfo ssi = {
                .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = sem, .value = value};
            VKT_CHECK(vkSignalSemaphore(v.dev, &ssi));
        }
        if (opt.remap)
            vkUnmapMemory(v.dev, mem);
        if (opt.signals) { /* the dispatch's own value, not the later ones */
            VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                      .semaphoreCount = 1,
                                      .pSemaphores = &sem,
                                      .pValues = &sig_value};
            VKT_CHECK(vkWaitSemaphores(v.dev, &wi, UINT64_MAX));
        } else {
            VKT_CHECK(vkWaitForFences(v.dev, 1, &fence, VK_TRUE, UINT64_MAX));
            VKT_CHECK(vkResetFences(v.dev, 1, &fence));
        }
        if (opt.remap) {
            void *ptr = NULL;
            VKT_CHECK(vkMapMemory(v.dev, mem, 0, VK_WHOLE_SIZE, 0, &ptr));
            ring = ptr;
        }
        invalidate(out);
        h = vkt_sum(h, ring + (size_t)out * opt.size, opt.size);
        if (opt.chain) {
            /* four words of what the device wrote, changed by the host, read by the next */
            uint32_t *o = (uint32_t *)(ring + (size_t)out * opt.size);
            for (uint32_t j = 0; j < 4; j++)
                o[(k * 37 + j * (n / 4)) % n] = ~o[(k * 37 + j * (n / 4)) % n];
            flush(out, opt.size);
        }
    }
    printf("vk_ring %s checksum %016" PRIx64 "\n", mode, h);
    if (opt.own_segv)
        printf("vk_ring own faults %d\n", (int)own_faults);

    if (opt.threads > 1) {
        stop = 1;
        pthread_barrier_wait(&go);
        for (uint32_t t = 1; t < opt.threads; t++)
            pthread_join(th[t], NULL);
    }
    /* nothing submitted may still use what is destroyed below (lavapipe's queue thread still
     * signals the timeline semaphore after a host wait for its value returned) */
    VKT_CHECK(vkDeviceWaitIdle(v.dev));
    if (!opt.import) {
        if (opt.map2) {
#ifdef VK_KHR_map_memory2
            PFN_vkUnmapMemory2KHR unmap2 = vkt_dev_fn(&v, "vkUnmapMemory2KHR");
            VkMemoryUnmapInfoKHR ui = {.sType = VK_STRUCTURE_TYPE_MEMORY_UNMAP_INFO_KHR,
                                       .memory = mem};
            VKT_CHECK(unmap2(v.dev, &ui));
#endif
        } else {
            vkUnmapMemory(v.dev, mem);
        }
    }
    vkDestroyFence(v.dev, fence, NULL);
    if (sem)
        vkDestroySemaphore(v.dev, sem, NULL);
    vkDestroyCommandPool(v.dev, cpool, NULL);
    vkDestroyDescriptorPool(v.dev, pool, NULL);
    vkDestroyBuffer(v.dev, buf, NULL);
    vkFreeMemory(v.dev, mem, NULL);
    if (twin)
        vkFreeMemory(v.dev, twin, NULL);
    if (opt.import)
        free(imp.pHostPointer);
    vkt_pipeline_free(&v, &p);
    vkt_done(&v);
    return 0;
}
