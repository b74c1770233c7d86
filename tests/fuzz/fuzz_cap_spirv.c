/*
 * tests/fuzz/fuzz_cap_spirv.c — the Vulkan layer's SPIR-V reflection (capture/vk/cap_vk_spirv.c) on
 * arbitrary words: a shader module comes from the program the layer observes, so any input
 * must give a reflection (ok or not), never a crash, a read past the words or a leak. What it
 * says must hold together: access modes that are READ, WRITE or RW (or 0: no addresses),
 * entry names terminated within their field; each entry's local size is then computed with
 * and without a specialization.
 *
 * Input: the module's words (little-endian), up to 256 KiB.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_spirv.h"
#include "format/sbt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (256u << 10))
        return 0;
    size_t n = size / 4;
    uint32_t *code = malloc(n ? n * 4 : 4);
    if (!code)
        return 0;
    memcpy(code, data, n * 4);
    struct cap_refl refl;
    cap_spirv_reflect(code, n, &refl);
    if (refl.addresses > SBT_ACCESS_RW)
        abort();
    for (uint32_t i = 0; i < refl.n_b; i++)
        if (refl.b[i].access > SBT_ACCESS_RW)
            abort();
    for (uint32_t i = 0; i < refl.n_e; i++) {
        if (!memchr(refl.e[i].name, 0, sizeof refl.e[i].name))
            abort(); /* names are terminated */
        uint32_t local[3];
        uint32_t spec_data[2] = {0, 7};
        VkSpecializationMapEntry me = {refl.e[i].spec_id[0], 4, 4};
        VkSpecializationInfo si = {1, &me, sizeof spec_data, spec_data};
        cap_spirv_local_size(&refl, refl.e[i].name, &si, local);
        cap_spirv_local_size(&refl, refl.e[i].name, NULL, local);
    }
    cap_refl_free(&refl);
    free(code);
    return 0;
}
