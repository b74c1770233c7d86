/*
 * format/sbt_vk.c — the Vulkan payloads' call names, their text dump, and the features
 * structures (format/sbt_vk.h); the records themselves are format/sbt_payload.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sbt_int.h"
#include "format/sbt_vk.h"

const char *sbt_vk_call_name(uint32_t call)
{
    switch (call) {
#define SBT_VK__NAME(name, val) \
    case val:                   \
        return #name;
        SBT_VK_CALL_MAP(SBT_VK__NAME)
#undef SBT_VK__NAME
    default:
        return NULL;
    }
}

/* ========================================================================================== */
/* Encoder                                                                                    */
/* ========================================================================================== */

int sbt_vk_dump(const void *buf, size_t len, void (*line)(void *ctx, const char *s), void *ctx)
{
    struct sbt_payload_dec d;
    struct sbt_payload_rec r;
    const uint8_t *p = buf;
    if (len >= SBT_VK_RECORDING_MAGIC_LEN &&
        !memcmp(p, SBT_VK_RECORDING_MAGIC, SBT_VK_RECORDING_MAGIC_LEN)) {
        p += SBT_VK_RECORDING_MAGIC_LEN;
        len -= SBT_VK_RECORDING_MAGIC_LEN;
        line(ctx, "recording");
    }
    sbt_payload_dec_init(&d, p, len);
    char s[512];
    int st;
    while ((st = sbt_payload_dec_next(&d, &r)) == 1) {
        const char *name = sbt_vk_call_name(r.call);
        int n = name ? snprintf(s, sizeof s, "%s", name) : snprintf(s, sizeof s, "call%u", r.call);
        for (uint32_t i = 0; i < r.n_arg && n > 0 && (size_t)n < sizeof s - 24; i++)
            n += snprintf(s + n, sizeof s - (size_t)n, " %" PRIu64, r.arg[i]);
        if (r.n_bytes && n > 0 && (size_t)n < sizeof s - 40)
            snprintf(s + n, sizeof s - (size_t)n, " [%u bytes]", r.n_bytes);
        line(ctx, s);
    }
    sbt_payload_dec_free(&d);
    return st < 0 ? st : 0;
}

const struct sbt_vk_feature_caps *sbt_vk_feature_caps_of(const char *feature)
{
    uint32_t lo = 0, hi = sbt_vk_n_feature_caps;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sbt_vk_feature_caps[mid].feature, feature);
        if (!c)
            return &sbt_vk_feature_caps[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct sbt_vk_feature_struct *sbt_vk_feature_struct(uint32_t stype)
{
    uint32_t lo = 0, hi = sbt_vk_n_feature_structs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sbt_vk_feature_structs[mid].stype < stype)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sbt_vk_n_feature_structs && sbt_vk_feature_structs[lo].stype == stype
               ? &sbt_vk_feature_structs[lo]
               : NULL;
}
