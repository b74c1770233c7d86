/*
 * capture/vk/cap_vk_spirv.h — the SPIR-V reflection the Vulkan layer needs (cap_vk_spirv.c):
 * descriptor variables and how the shader may access them, entry points' local sizes, and
 * whether it reads or writes through buffer device addresses. Self-contained (no layer
 * state), so the tests and a fuzz target (tests/fuzz/fuzz_cap_spirv.c) link it alone.
 */
#ifndef REPRISE_CAP_VK_SPIRV_H
#define REPRISE_CAP_VK_SPIRV_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

/* A descriptor variable of a shader module, from the SPIR-V decorations. */
struct cap_refl_binding {
    uint32_t set, binding, access, storage, array;
};
struct cap_refl_entry {
    char name[64];
    uint32_t local[3];
    uint32_t spec_id[3]; /* UINT32_MAX = literal */
};
struct cap_refl {
    int ok;
    struct cap_refl_binding *b;
    uint32_t n_b;
    struct cap_refl_entry *e;
    uint32_t n_e;
    /* WorkgroupSize built-in: constants (with spec ids) */
    int has_wgsize;
    uint32_t wg[3], wg_spec[3];
    /* buffer device addresses: the enum sbt_access_mode the shader may apply through
     * PhysicalStorageBuffer pointers (0: it has none) */
    uint32_t addresses;
};

/* Parses the decorations of a SPIR-V module. refl->ok = 0 if it could not (then accesses fall
 * back to the descriptor types). Never fails the caller. */
void cap_spirv_reflect(const uint32_t *code, size_t n_words, struct cap_refl *refl);
void cap_refl_free(struct cap_refl *refl);
/* Local size of an entry point after specialization. */
void cap_spirv_local_size(const struct cap_refl *refl, const char *entry,
                          const VkSpecializationInfo *spec, uint32_t out[3]);

#endif /* REPRISE_CAP_VK_SPIRV_H */
