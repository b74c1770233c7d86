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

#define EXPORT __attribute__((visibility("default")))

static PFN_vkGetInstanceProcAddr next_gipa;
static VkInstance instance;
static PFN_vkGetDeviceProcAddr next_gdpa;
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
    VkLayerInstanceCreateInfo *chain = (VkLayerInstanceCreateInfo *)ci->pNext;
    while (chain && !(chain->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
                      chain->function == VK_LAYER_LINK_INFO))
        chain = (VkLayerInstanceCreateInfo *)chain->pNext;
    if (!chain || !chain->u.pLayerInfo)
        return VK_ERROR_INITIALIZATION_FAILED;
    next_gipa = chain->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    chain->u.pLayerInfo = chain->u.pLayerInfo->pNext;
    PFN_vkCreateInstance next = (PFN_vkCreateInstance)next_gipa(NULL, "vkCreateInstance");
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
    VkLayerDeviceCreateInfo *chain = (VkLayerDeviceCreateInfo *)ci->pNext;
    while (chain && !(chain->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
                      chain->function == VK_LAYER_LINK_INFO))
        chain = (VkLayerDeviceCreateInfo *)chain->pNext;
    if (!chain || !chain->u.pLayerInfo)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = chain->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    next_gdpa = chain->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    chain->u.pLayerInfo = chain->u.pLayerInfo->pNext;
    PFN_vkCreateDevice next = (PFN_vkCreateDevice)gipa(instance, "vkCreateDevice");
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

/* Own functions are handed out as static ones: an exported vkGetDeviceProcAddr referred to
 * from inside the library could bind to the loader's symbol of that name. */
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fake_GetDeviceProcAddr(VkDevice dev,
                                                                       const char *name)
{
    if (!strcmp(name, "vkReprisetestSumREPRISE"))
        return (PFN_vkVoidFunction)fake_Sum;
    if (!strcmp(name, "vkGetDeviceProcAddr"))
        return (PFN_vkVoidFunction)fake_GetDeviceProcAddr;
    if (!strcmp(name, "vkDestroyDevice"))
        return (PFN_vkVoidFunction)fake_DestroyDevice;
    if (!strcmp(name, "vkWaitForFences"))
        return (PFN_vkVoidFunction)fake_WaitForFences;
    return next_gdpa ? next_gdpa(dev, name) : NULL;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fake_GetInstanceProcAddr(VkInstance inst,
                                                                         const char *name)
{
    if (!strcmp(name, "vkGetInstanceProcAddr"))
        return (PFN_vkVoidFunction)fake_GetInstanceProcAddr;
    if (!strcmp(name, "vkCreateInstance"))
        return (PFN_vkVoidFunction)fake_CreateInstance;
    if (!strcmp(name, "vkCreateDevice"))
        return (PFN_vkVoidFunction)fake_CreateDevice;
    if (!strcmp(name, "vkGetDeviceProcAddr"))
        return (PFN_vkVoidFunction)fake_GetDeviceProcAddr;
    if (!strcmp(name, "vkDestroyDevice"))
        return (PFN_vkVoidFunction)fake_DestroyDevice;
    if (!strcmp(name, "vkWaitForFences"))
        return (PFN_vkVoidFunction)fake_WaitForFences;
    if (!strcmp(name, "vkReprisetestSumREPRISE"))
        return (PFN_vkVoidFunction)fake_Sum;
    return next_gipa ? next_gipa(inst, name) : NULL;
}

EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v);
EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v)
{
    if (!v || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT || v->loaderLayerInterfaceVersion < 2)
        return VK_ERROR_INITIALIZATION_FAILED;
    v->loaderLayerInterfaceVersion = 2;
    v->pfnGetInstanceProcAddr = fake_GetInstanceProcAddr;
    v->pfnGetDeviceProcAddr = fake_GetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
