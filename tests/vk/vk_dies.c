/*
 * tests/vk/vk_dies.c — a program that does not end well, for the capture tests of what a
 * trace keeps when its process dies: it submits one dispatch at a time, waits for it and
 * prints "submit K done" (flushed) after each, then:
 *
 *   vk_dies slow N           sleeps 300 ms between submissions; exits 0 after N (the test
 *                            kills it with SIGKILL long before)
 *   vk_dies segv N [early|late]   writes through a null pointer after N submissions; with
 *                            "early" it installs a SIGSEGV handler before Vulkan starts (the
 *                            capture layer finds it and chains to it), with "late" after the
 *                            device exists (the layer puts its own back on top at a wait); the
 * handler prints "handler ran", restores the default and returns, so the fault repeats and ends the
 * process vk_dies abort N          calls abort() after N submissions
 *   vk_dies busy N           after N submissions, starts a thread that writes the pages of a
 *                            1 MiB mapping one a millisecond, and exits (0) while it writes, with
 *                            the device still open: a capture stops tracking the mapping at
 *                            exit under its writes
 *   vk_dies gc N [again]     lives well: between submissions it takes 200 write faults on a
 *                            page it keeps read-only and handles each (its handler makes the
 *                            page writable, as a garbage collector's write barrier does), then
 *                            exits 0 ("faults handled 200N"); with "again" it installs its
 *                            handler again before each submission (a runtime entering a
 *                            phase), a handler that hands no fault on: one not its own is
 *                            fatal; it fills the input every other round only (so that a
 *                            capture write-protecting it again takes a fault each time)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tests/vk/vkt.h"

#define N_ELEMS 1024u

static void on_segv(int sig)
{
    static const char msg[] = "handler ran\n";
    ssize_t r = write(1, msg, sizeof msg - 1);
    (void)r;
    signal(sig, SIG_DFL); /* returning runs the faulting store again, now fatally */
}

/* A store through a null pointer, kept by the compiler (volatile) and not turned into an exit
 * by UBSan in `make asan` (the program must die of the signal, as it does in a normal build). */
__attribute__((noinline, no_sanitize("undefined"))) static void write_null(void)
{
    volatile int *volatile null = NULL;
    *null = 1;
}

/* busy: the mapping its thread writes until the process ends */
static volatile uint32_t *busy_map;

static void *busy_writer(void *arg)
{
    (void)arg;
    for (uint32_t k = 1;; k++) { /* a page a millisecond: pages it never wrote until then */
        busy_map[(k % 256) * 1024] = k;
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    }
    return NULL;
}

/* gc: a write barrier's page and the faults its handler took */
static char *gc_page;
static volatile sig_atomic_t gc_faults;

static void on_gc_fault(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (si->si_addr < (void *)gc_page || si->si_addr >= (void *)(gc_page + 4096)) {
        signal(sig, SIG_DFL); /* not ours: the fault repeats, fatally */
        return;
    }
    gc_faults++;
    mprotect(gc_page, 4096, PROT_READ | PROT_WRITE);
}

static int gc_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_gc_fault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGSEGV, &sa, NULL);
}

static void gc_round(void)
{
    for (int i = 0; i < 200; i++) {
        mprotect(gc_page, 4096, PROT_READ);
        ((volatile char *)gc_page)[i] = (char)i; /* faults; the handler lets it through */
    }
}

static void install_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: vk_dies slow|segv|abort|busy|gc N [early|late|again]\n");
        return 2;
    }
    const char *mode = argv[1], *when = argc > 3 ? argv[3] : "";
    int n = atoi(argv[2]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(when, "early"))
        install_handler();
    if (!strcmp(mode, "gc")) {
        gc_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (gc_page == MAP_FAILED || gc_install() != 0)
            return 1;
    }
    struct vkt v;
    vkt_init(&v, argv[0], 1);
    if (!strcmp(when, "late")) {
        install_handler();
        /* the layer looks for handlers installed after it at most every 10 ms: 50 ms on, the
         * first wait below is sure to look (if the layer has not already) */
        nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
    }
    VkDescriptorType types[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    struct vkt_pipe ps;
    vkt_pipeline(&v, "scale", 2, types, 8, NULL, &ps);
    struct vkt_buf in, out, big;
    vkt_buffer(&v, N_ELEMS * 4, 1, &in);
    vkt_buffer(&v, N_ELEMS * 4, 1, &out);
    if (!strcmp(mode, "busy")) {
        vkt_buffer(&v, 1u << 20, 1, &big);
        memset(big.map, 0, 1u << 20);
    }
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 1,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &size};
    VkDescriptorPool pool;
    VKT_CHECK(vkCreateDescriptorPool(v.dev, &dpci, NULL, &pool));
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = pool,
                                        .descriptorSetCount = 1,
                                        .pSetLayouts = &ps.dsl};
    VkDescriptorSet set;
    VKT_CHECK(vkAllocateDescriptorSets(v.dev, &dsai, &set));
    VkDescriptorBufferInfo bi[] = {{in.buf, 0, VK_WHOLE_SIZE}, {out.buf, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = set,
                              .descriptorCount = 2,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = bi};
    vkUpdateDescriptorSets(v.dev, 1, &w, 0, NULL);
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
    uint64_t h = 0;
    for (int k = 1; k <= n; k++) {
        uint32_t *p = in.map;
        for (uint32_t i = 0; i < N_ELEMS && (k % 2 || strcmp(when, "again")); i++)
            p[i] = i + (uint32_t)k * 7919u;
        VkCommandBufferBeginInfo bb = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        VKT_CHECK(vkBeginCommandBuffer(cb, &bb));
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ps.pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ps.layout, 0, 1, &set, 0, NULL);
        uint32_t pc[2] = {(uint32_t)k, N_ELEMS};
        vkCmdPushConstants(cb, ps.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, pc);
        vkCmdDispatch(cb, N_ELEMS / 64, 1, 1);
        VKT_CHECK(vkEndCommandBuffer(cb));
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &cb};
        if (!strcmp(mode, "gc") && !strcmp(when, "again") && gc_install() != 0)
            return 1;
        VKT_CHECK(vkQueueSubmit(v.queue[0], 1, &si, fence));
        VKT_CHECK(vkWaitForFences(v.dev, 1, &fence, VK_TRUE, UINT64_MAX));
        VKT_CHECK(vkResetFences(v.dev, 1, &fence));
        h = vkt_sum(h, out.map, N_ELEMS * 4);
        printf("submit %d done\n", k);
        if (!strcmp(mode, "slow"))
            nanosleep(&(struct timespec){0, 300 * 1000000L}, NULL);
        if (!strcmp(mode, "gc"))
            gc_round();
    }
    if (!strcmp(mode, "gc"))
        printf("faults handled %d\n", (int)gc_faults);
    if (!strcmp(mode, "segv"))
        write_null();
    if (!strcmp(mode, "abort"))
        abort();
    if (!strcmp(mode, "busy")) {
        busy_map = big.map;
        pthread_t th;
        if (pthread_create(&th, NULL, busy_writer, NULL) != 0)
            return 1;
        nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
        printf("vk_dies checksum %016llx, exits while a thread writes\n", (unsigned long long)h);
        exit(0);
    }
    printf("vk_dies checksum %016llx\n", (unsigned long long)h);
    vkDestroyFence(v.dev, fence, NULL);
    vkDestroyCommandPool(v.dev, cpool, NULL);
    vkDestroyDescriptorPool(v.dev, pool, NULL);
    vkt_buffer_free(&v, &in);
    vkt_buffer_free(&v, &out);
    vkt_pipeline_free(&v, &ps);
    vkt_done(&v);
    return 0;
}
