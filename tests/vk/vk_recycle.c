/*
 * tests/vk/vk_recycle.c — host writes into memory a driver recycles: each round allocates
 * fresh host-visible buffers, writes the same bytes as the round before but for one word, copies
 * them on the device, reads the copy back and frees everything. lavapipe hands a new allocation
 * the memory the last one freed, bytes and all, so most of what the host writes is what the
 * mapping already held: the trace (whose memory starts zeroed) must still say what they are.
 * Buffers of 288 bytes (parts of pages only) and of three pages and 288 bytes (whole pages
 * too). Prints a checksum of every read-back.
 */
#include <inttypes.h>
#include <stdio.h>

#include "tests/vk/vkt.h"

int main(int argc, char **argv)
{
    (void)argc;
    struct vkt v;
    vkt_init(&v, argv[0], 1);
    static const VkDeviceSize sizes[] = {288, 3 * 4096 + 288};
    uint64_t sum = 0;
    for (uint32_t round = 0; round < 8; round++) {
        for (uint32_t s = 0; s < 2; s++) {
            struct vkt_buf src, dst;
            vkt_buffer(&v, sizes[s], 1, &src);
            vkt_buffer(&v, sizes[s], 1, &dst);
            uint32_t *p = src.map, n = (uint32_t)(sizes[s] / 4);
            for (uint32_t i = 0; i < n; i++)
                p[i] = i * 2654435761u ^ 0x5bd1e995u;
            p[n / 2] = round;
            VkCommandBuffer cb = vkt_cmdbuf(&v);
            vkt_begin(cb);
            vkCmdCopyBuffer(cb, src.buf, dst.buf, 1, &(VkBufferCopy){0, 0, sizes[s]});
            vkt_submit_wait(&v, cb);
            vkFreeCommandBuffers(v.dev, v.pool, 1, &cb);
            sum = vkt_sum(sum, dst.map, sizes[s]);
            vkt_buffer_free(&v, &src);
            vkt_buffer_free(&v, &dst);
        }
    }
    printf("recycle %016" PRIx64 "\n", sum);
    vkt_done(&v);
    return 0;
}
