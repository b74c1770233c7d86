/*
 * tests/fuzz/fuzz_vk_payload.c — what the Vulkan replay backend does with a trace's payloads
 * before anything reaches a driver, on arbitrary bytes and without a device: the records are
 * decoded (format/sbt_vk.c) and each one the backend would act on goes through its check
 * (replay/vk/replay_vk_check.c) against fixed device limits and object sizes taken from the
 * input. Any status, never a crash, a leak or undefined behaviour; a failing check must say why.
 *
 * Input: 16 bytes of sizes (two buffer sizes, little-endian u64), then one payload. Image
 * records are checked against the images the payload's CREATE_IMAGE records described (the
 * last two that passed their check; a fixed 2D array before any), and every image's packed
 * layout is walked for a range taken from the sizes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay/vk/replay_vk_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect_message(int st)
{
    if (st < 0 && !*replay_errmsg())
        abort();
}

static int count_box(void *ctx, const struct sbt_vk_box *b, uint64_t off, uint64_t len)
{
    (void)b;
    (void)off;
    (void)len;
    ++*(uint64_t *)ctx;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 16 || size > (1 << 20))
        return 0;
    uint64_t sz[2];
    memcpy(sz, data, sizeof sz);
    /* lavapipe 22.3's limits, roughly: any fixed set exercises every comparison */
    VkPhysicalDeviceLimits dl = {.maxPushConstantsSize = 256,
                                 .maxComputeWorkGroupCount = {65535, 65535, 65535},
                                 .maxComputeWorkGroupSize = {1024, 1024, 1024},
                                 .maxComputeWorkGroupInvocations = 1024,
                                 .maxComputeSharedMemorySize = 32768,
                                 .maxStorageBufferRange = UINT32_MAX,
                                 .maxUniformBufferRange = 65536,
                                 .minStorageBufferOffsetAlignment = 16,
                                 .minUniformBufferOffsetAlignment = 16,
                                 .minTexelBufferOffsetAlignment = 16,
                                 .maxTexelBufferElements = 1u << 27,
                                 .maxBoundDescriptorSets = 8};
    struct vkr_limits lim;
    vkr_limits_from(&lim, &dl, 4, 64, 32);
    struct sbt_payload_dec dec;
    struct sbt_payload_rec r;
    const struct sbt_vk_feature_struct *t;
    sbt_payload_dec_init(&dec, data + 16, size - 16);
    int k;
    uint32_t n;
    uint64_t layout_flags = 0; /* of the last SET_LAYOUT record */
    struct sbt_vk_image im[2] = {{37, 1, {32, 24, 1}, 3, 2}, {131, 1, {20, 12, 1}, 2, 1}};
    uint64_t im_size, boxes = 0;
    while ((k = sbt_payload_dec_next(&dec, &r)) == 1) {
        switch (r.call) {
        case SBT_VK_CREATE_IMAGE: {
            struct sbt_vk_image d;
            int st = vkr_check_image(&r, &d, &im_size);
            expect_message(st);
            if (st == 0) {
                im[1] = im[0];
                im[0] = d;
                if (sbt_vk_image_cover(&d, sz[0] % (im_size + 1), sz[1], count_box, &boxes) < 0 &&
                    !*sbt_errmsg())
                    abort();
            }
            break;
        }
        case SBT_VK_CREATE_IMAGE_VIEW:
            expect_message(vkr_check_image_view(&r, &im[0], (uint32_t)sz[1]));
            break;
        case SBT_VK_CREATE_SAMPLER:
            expect_message(vkr_check_sampler(&r, 16.0f));
            break;
        case SBT_VK_IMAGE_BINDING:
            expect_message(vkr_check_image_binding(&r));
            break;
        case SBT_VK_COPY_BUFFER_TO_IMAGE:
        case SBT_VK_COPY_IMAGE_TO_BUFFER:
            expect_message(vkr_check_buf_img_copy(&r, sz[0], &im[0], &n));
            break;
        case SBT_VK_COPY_IMAGE:
            expect_message(vkr_check_img_copy(&r, &im[1], &im[0], &n));
            break;
        case SBT_VK_BLIT_IMAGE:
            expect_message(vkr_check_blit(&r, &im[1], &im[0], &n));
            break;
        case SBT_VK_CLEAR_IMAGE:
            expect_message(vkr_check_clear(&r, &im[0], &n));
            break;
        case SBT_VK_FEATURES:
            expect_message(vkr_check_features(&r, &t));
            break;
        case SBT_VK_DISPATCH:
            expect_message(vkr_check_dispatch(&lim, &r));
            expect_message(vkr_check_indirect(sbt_payload_arg(&r, 9), sz[0]));
            break;
        case SBT_VK_BINDING:
            expect_message(vkr_check_binding(&lim, &r, sz[0]));
            break;
        case SBT_VK_COPY_BUFFER:
            expect_message(vkr_check_copy(&r, sz[0], sz[1], &n));
            break;
        case SBT_VK_FILL_BUFFER:
            expect_message(vkr_check_fill(&r, sz[0]));
            break;
        case SBT_VK_UPDATE_BUFFER:
            expect_message(vkr_check_update(&r, r.n_bytes, sz[0]));
            break;
        case SBT_VK_SET_LAYOUT:
            expect_message(vkr_check_set_layout(&r));
            layout_flags = sbt_payload_arg(&r, 1);
            break;
        case SBT_VK_SET_BINDING:
            expect_message(vkr_check_set_binding(&r, layout_flags));
            break;
        case SBT_VK_PIPELINE_LAYOUT:
            expect_message(vkr_check_playout(&lim, &r, MAX_SETS));
            break;
        case SBT_VK_PIPELINE:
            expect_message(vkr_check_pipeline(&lim, &r, &n));
            expect_message(vkr_check_spirv(r.bytes, r.n_bytes));
            break;
        case SBT_VK_SPEC_ENTRY:
            expect_message(vkr_check_spec_entry(&r, (uint32_t)sz[1]));
            break;
        case SBT_VK_CREATE_BUFFER:
            expect_message(vkr_check_buffer(&r));
            break;
        case SBT_VK_CREATE_BUFFER_VIEW:
            expect_message(vkr_check_view(&lim, &r, sz[0]));
            break;
        default:
            break;
        }
    }
    if (k < 0 && !*sbt_errmsg())
        abort();
    sbt_payload_dec_free(&dec);
    return 0;
}
