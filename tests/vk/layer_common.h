/*
 * tests/vk/layer_common.h — what every test-only Vulkan layer (tests/vk/layer_<name>.c, each
 * built alone as VK_LAYER_REPRISE_<name>) does the same way: taking its link out of the
 * loader's chain at vkCreateInstance and vkCreateDevice, handing out its own functions through
 * vkGetInstanceProcAddr / vkGetDeviceProcAddr, and the loader's interface negotiation. Each
 * layer includes it once and defines own(): what it hands out itself. One instance and one
 * device at a time. Reference: Vulkan-Loader docs/LoaderLayerInterface.md.
 */
#ifndef REPRISE_TESTS_VK_LAYER_COMMON_H
#define REPRISE_TESTS_VK_LAYER_COMMON_H

#include <string.h>
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#define EXPORT __attribute__((visibility("default")))

static PFN_vkGetInstanceProcAddr next_gipa;
static PFN_vkGetDeviceProcAddr next_gdpa;
static VkInstance instance; /* the one the layer made last */

/* The layer's own function for name, NULL if it has none; *wraps: it wraps a device command of
 * that name, so it is handed out only where the next layer or the driver has the command. */
static PFN_vkVoidFunction own(const char *name, int *wraps);

/* The next vkCreateInstance, our link taken out of ci's chain (next_gipa set); NULL when the
 * chain has no link for us. */
static PFN_vkCreateInstance layer_next_create_instance(const VkInstanceCreateInfo *ci)
{
    VkLayerInstanceCreateInfo *chain = (VkLayerInstanceCreateInfo *)ci->pNext;
    while (chain && !(chain->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
                      chain->function == VK_LAYER_LINK_INFO))
        chain = (VkLayerInstanceCreateInfo *)chain->pNext;
    if (!chain || !chain->u.pLayerInfo)
        return NULL;
    next_gipa = chain->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    chain->u.pLayerInfo = chain->u.pLayerInfo->pNext;
    return (PFN_vkCreateInstance)next_gipa(NULL, "vkCreateInstance");
}

/* The next vkCreateDevice, our link taken out of ci's chain (next_gdpa set); NULL when the
 * chain has no link for us. */
static PFN_vkCreateDevice layer_next_create_device(const VkDeviceCreateInfo *ci)
{
    VkLayerDeviceCreateInfo *chain = (VkLayerDeviceCreateInfo *)ci->pNext;
    while (chain && !(chain->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
                      chain->function == VK_LAYER_LINK_INFO))
        chain = (VkLayerDeviceCreateInfo *)chain->pNext;
    if (!chain || !chain->u.pLayerInfo)
        return NULL;
    PFN_vkGetInstanceProcAddr gipa = chain->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    next_gdpa = chain->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    chain->u.pLayerInfo = chain->u.pLayerInfo->pNext;
    return (PFN_vkCreateDevice)gipa(instance, "vkCreateDevice");
}

/* Own functions are handed out as static ones: an exported vkGetDeviceProcAddr referred to
 * from inside the library could bind to the loader's symbol of that name. */
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL layer_GetInstanceProcAddr(VkInstance inst,
                                                                          const char *name);

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL layer_GetDeviceProcAddr(VkDevice dev,
                                                                        const char *name)
{
    if (!strcmp(name, "vkGetDeviceProcAddr"))
        return (PFN_vkVoidFunction)layer_GetDeviceProcAddr;
    int wraps = 0;
    PFN_vkVoidFunction f = own(name, &wraps);
    if (f && !wraps)
        return f;
    PFN_vkVoidFunction next = next_gdpa ? next_gdpa(dev, name) : NULL;
    return f && next ? f : next; /* a wrapped command the driver lacks stays absent */
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL layer_GetInstanceProcAddr(VkInstance inst,
                                                                          const char *name)
{
    if (!strcmp(name, "vkGetInstanceProcAddr"))
        return (PFN_vkVoidFunction)layer_GetInstanceProcAddr;
    if (!strcmp(name, "vkGetDeviceProcAddr"))
        return (PFN_vkVoidFunction)layer_GetDeviceProcAddr;
    int wraps = 0;
    PFN_vkVoidFunction f = own(name, &wraps);
    if (f)
        return f;
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
    v->pfnGetInstanceProcAddr = layer_GetInstanceProcAddr;
    v->pfnGetDeviceProcAddr = layer_GetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}

#endif /* REPRISE_TESTS_VK_LAYER_COMMON_H */
