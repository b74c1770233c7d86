/*
 * tests/vk/layer_fakecmd.c — VK_LAYER_REPRISE_fakecmd, a test-only Vulkan layer that adds one
 * device command no registry has, vkReprisetestSumREPRISE, and passes everything else on. Put
 * below the capture layer it stands for a driver newer than the vk.xml the capture layer was
 * built from: the capture layer must hand the name out through a counting trampoline that
 * keeps every argument (tests/test_capture.c, tests/vk/vk_unmodelled.c "unknown").
 *
 * With REPRISE_FAKECMD_LOSE_WAIT=N in the environment, the Nth vkWaitForFences waits and then
 * returns VK_ERROR_DEVICE_LOST, as a hung GPU would (the capture layer must write its trace out
 * at once).
 *
 * One instance and one device at a time (a test layer); no allocation.
 * Reference: Vulkan-Loader docs/LoaderLayerInterface.md.
 */
#include <stdlib.h>
#include <string.h>
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "tests/vk/layer_common.h"

static PFN_vkDestroyDevice next_destroy_device;
static PFN_vkWaitForFences next_wait;
static unsigned n_waits;

/* Every argument class of the x86-64 and AArch64 calling conventions: integers in registers
 * and (the 7th and later) on the stack, floats and doubles in vector registers. */
static VKAPI_ATTR uint64_t VKAPI_CALL fake_Sum(VkDevice dev, uint64_t a, uint32_t b, double c,
                                               uint64_t d, float e, uint64_t f, uint64_t g,
                                               double h, uint32_t i)
{
    (void)dev;
    return a + b + (uint64_t)(c * 1000) + d + (uint64_t)(e * 1000) + f + g + (uint64_t)(h * 1000) +
           i;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateInstance(const VkInstanceCreateInfo *ci,
                                                          const VkAllocationCallbacks *alloc,
                                                          VkInstance *out)
{
    PFN_vkCreateInstance next = layer_next_create_instance(ci);
    VkResult r = next ? next(ci, alloc, out) : VK_ERROR_INITIALIZATION_FAILED;
    if (r == VK_SUCCESS)
        instance = *out;
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_CreateDevice(VkPhysicalDevice phys,
                                                        const VkDeviceCreateInfo *ci,
                                                        const VkAllocationCallbacks *alloc,
                                                        VkDevice *out)
{
    PFN_vkCreateDevice next = layer_next_create_device(ci);
    VkResult r = next ? next(phys, ci, alloc, out) : VK_ERROR_INITIALIZATION_FAILED;
    if (r == VK_SUCCESS) {
        next_destroy_device = (PFN_vkDestroyDevice)next_gdpa(*out, "vkDestroyDevice");
        next_wait = (PFN_vkWaitForFences)next_gdpa(*out, "vkWaitForFences");
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_WaitForFences(VkDevice dev, uint32_t n, const VkFence *f,
                                                         VkBool32 all, uint64_t timeout)
{
    VkResult r = next_wait(dev, n, f, all, timeout);
    const char *lose = getenv("REPRISE_FAKECMD_LOSE_WAIT");
    if (lose && ++n_waits == strtoul(lose, NULL, 10))
        return VK_ERROR_DEVICE_LOST;
    return r;
}

static VKAPI_ATTR void VKAPI_CALL fake_DestroyDevice(VkDevice dev,
                                                     const VkAllocationCallbacks *alloc)
{
    if (next_destroy_device)
        next_destroy_device(dev, alloc);
}

/* The layer's own functions (tests/vk/layer_common.h): the command only it has, and the ones it
 * wraps (the lavapipe under it has them all). */
static PFN_vkVoidFunction own(const char *name, int *wraps)
{
    static const struct {
        const char *name;
        PFN_vkVoidFunction fn;
    } t[] = {
        {"vkCreateInstance", (PFN_vkVoidFunction)fake_CreateInstance},
        {"vkCreateDevice", (PFN_vkVoidFunction)fake_CreateDevice},
        {"vkDestroyDevice", (PFN_vkVoidFunction)fake_DestroyDevice},
        {"vkWaitForFences", (PFN_vkVoidFunction)fake_WaitForFences},
        {"vkReprisetestSumREPRISE", (PFN_vkVoidFunction)fake_Sum},
    };
    *wraps = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(name, t[i].name))
            return t[i].fn;
    return NULL;
}
