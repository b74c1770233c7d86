/*
 * tests/fuzz/fuzz_vk_spirv.c — the SPIR-V the Vulkan replay backend reads itself before a
 * driver sees it, on arbitrary bytes: the module check (replay/vk/replay_vk_check.c,
 * vkr_check_spirv) and, for a module that passes it, the scan for a NumWorkgroups built-in that
 * the split perturbation makes (vkr_spirv_reads_numwg) and the capabilities it declares (which
 * features the device needs: vkr_spirv_capabilities). Any answer, never a crash or a read past
 * the input; a failing check must say why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay/vk/replay_vk_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count_cap(void *ctx, uint32_t cap)
{
    (void)cap;
    ++*(uint32_t *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1 << 20))
        return 0;
    /* a copy of exactly size bytes: a read past it is caught by the sanitizers */
    uint8_t *code = malloc(size ? size : 1);
    if (!code)
        return 0;
    memcpy(code, data, size);
    if (vkr_check_spirv(code, size) < 0) {
        if (!*replay_errmsg())
            abort();
    } else {
        int r = vkr_spirv_reads_numwg(code, size);
        if (r < -1 || r > 1)
            abort();
        uint32_t n = 0;
        r = vkr_spirv_capabilities(code, size, count_cap, &n);
        if (r < -1 || r > 0 || n > size / 8) /* each OpCapability takes 2 words */
            abort();
    }
    free(code);
    return 0;
}
