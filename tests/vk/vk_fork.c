/*
 * tests/vk/vk_fork.c — a program that forks its workers, as an inference server or a test
 * runner does: the parent starts N workers (fork, no exec) before it touches Vulkan, each
 * worker labels itself with REPRISE_RANK / REPRISE_WORLD_SIZE (what such a program would set
 * for the capture to pick up) and runs a small deterministic compute job (scale.comp over a
 * buffer, ITERS dispatches, each waited for), and the parent waits for them all. Used by the
 * job tests of tests/test_capture.c and tests/test_cli.c.
 *
 * Usage: vk_fork [WORKERS [ITERS]] (defaults 2 and 4). Test only: VK_FORK_SHIFT="RANK:NS"
 * makes worker RANK's capture record its clock NS ahead (REPRISE_TEST_CLOCK_SHIFT_NS), as if
 * it ran on another machine. Prints one checksum line per worker; exits 0 when every worker
 * did, else the first failing worker's status.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/vk/vkt.h"

#define N 4096u

static int worker(const char *argv0, uint32_t rank, uint32_t iters)
{
    struct vkt v;
    vkt_init(&v, argv0, 1);
    struct vkt_buf a, b;
    vkt_buffer(&v, N * 4, 1, &a);
    vkt_buffer(&v, N * 4, 1, &b);
    uint32_t *pa = a.map;
    for (uint32_t i = 0; i < N; i++)
        pa[i] = i * 2654435761u + rank;
    VkDescriptorType t2[] = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    struct vkt_pipe ps;
    uint32_t k = 5;
    vkt_pipeline(&v, "scale", 2, t2, 8, &k, &ps);
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 2,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &size};
    VkDescriptorPool pool;
    VKT_CHECK(vkCreateDescriptorPool(v.dev, &dpci, NULL, &pool));
    VkDescriptorSetLayout layouts[] = {ps.dsl, ps.dsl};
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = pool,
                                        .descriptorSetCount = 2,
                                        .pSetLayouts = layouts};
    VkDescriptorSet sets[2];
    VKT_CHECK(vkAllocateDescriptorSets(v.dev, &dsai, sets));
    /* set 0: a -> b, set 1: b -> a (ping-pong) */
    VkDescriptorBufferInfo bi[2][2] = {{{a.buf, 0, VK_WHOLE_SIZE}, {b.buf, 0, VK_WHOLE_SIZE}},
                                       {{b.buf, 0, VK_WHOLE_SIZE}, {a.buf, 0, VK_WHOLE_SIZE}}};
    VkWriteDescriptorSet w[2];
    for (uint32_t i = 0; i < 2; i++)
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = sets[i],
                                      .dstBinding = 0,
                                      .descriptorCount = 2,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = bi[i]};
    vkUpdateDescriptorSets(v.dev, 2, w, 0, NULL);
    for (uint32_t it = 0; it < iters; it++) {
        VkCommandBuffer cb = vkt_cmdbuf(&v);
        vkt_begin(cb);
        uint32_t pc[2] = {it + rank, N};
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ps.pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ps.layout, 0, 1, &sets[it & 1],
                                0, NULL);
        vkCmdPushConstants(cb, ps.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
        vkCmdDispatch(cb, N / 64, 1, 1);
        vkt_submit_wait(&v, cb);
    }
    const struct vkt_buf *last = iters & 1 ? &b : &a;
    printf("worker %u checksum %016" PRIx64 "\n", rank, vkt_sum(0, last->map, N * 4));
    fflush(stdout);
    vkDestroyDescriptorPool(v.dev, pool, NULL);
    vkt_pipeline_free(&v, &ps);
    vkt_buffer_free(&v, &a);
    vkt_buffer_free(&v, &b);
    vkt_done(&v);
    return 0;
}

int main(int argc, char **argv)
{
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 2;
    uint32_t iters = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 4;
    if (!n || n > 64 || !iters) {
        fprintf(stderr, "usage: vk_fork [WORKERS (1..64) [ITERS]]\n");
        return 2;
    }
    const char *shift = getenv("VK_FORK_SHIFT");
    pid_t pids[64];
    fflush(stdout);
    for (uint32_t r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] < 0) {
            perror("vk_fork: fork");
            return 1;
        }
        if (pids[r] == 0) {
            char v[32];
            snprintf(v, sizeof v, "%u", r);
            setenv("REPRISE_RANK", v, 1);
            snprintf(v, sizeof v, "%u", n);
            setenv("REPRISE_WORLD_SIZE", v, 1);
            if (shift && strtoul(shift, NULL, 10) == r && strchr(shift, ':'))
                setenv("REPRISE_TEST_CLOCK_SHIFT_NS", strchr(shift, ':') + 1, 1);
            exit(worker(argv[0], r, iters)); /* exit: the capture closes its trace at exit */
        }
    }
    int rc = 0;
    for (uint32_t r = 0; r < n; r++) {
        int st;
        if (waitpid(pids[r], &st, 0) < 0)
            st = 1 << 8;
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (code && !rc)
            rc = code;
    }
    return rc;
}
