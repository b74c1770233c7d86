/*
 * capture/vk/cap_vk_tramp.c — counting trampolines for Vulkan commands the layer cannot wrap with
 * a typed function: names the registry it was built from does not know (a driver, a layer
 * below or a program newer than the build's vk.xml), and platform commands whose headers the
 * build does not have (win32, android, ...). vkGetDeviceProcAddr / vkGetInstanceProcAddr
 * answer such a name with a trampoline instead of the next layer's function, so that its
 * calls are counted and, for an affecting one, the trace is marked incomplete where it was
 * first called: no name becomes a silent gap.
 *
 * A trampoline keeps every argument register and the stack as the caller left them and
 * tail-jumps to the next function, so it works for any signature (the idea of
 * capture/cuda/cap_cuda_tramp.c). Slot i is `movl $i, %r11d; jmp common` (16 bytes apart); the
 * common part adds one to the slot's count and jumps through the slot's next pointer, using
 * only r10 and r11, which the x86-64 System V ABI leaves to the callee and never uses for
 * arguments. The first call of a slot whose first call matters takes a slower path that saves
 * the argument registers (rdi, rsi, rdx, rcx, r8, r9, rax for varargs, xmm0-7), calls
 * cap_vk_tramp_first in C with an aligned stack, and restores them before the jump.
 *
 * Other architectures have no trampolines: cap_tramp_get returns NULL and the layer hands out
 * the next function itself, after marking the name as an unmodelled call at resolution time
 * (cap_vk_instance.c): loud, but its calls are not counted.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

#define CAP_TRAMP_SLOTS 4096 /* must match the .rept count below */

/* Read and written by the trampolines: hidden (the layer is built with -fvisibility=hidden),
 * so the references are PC-relative. */
uint64_t cap_vk_tcalls[CAP_TRAMP_SLOTS];
void *cap_vk_tnext[CAP_TRAMP_SLOTS];
uint8_t cap_vk_tseen[CAP_TRAMP_SLOTS]; /* 0: the next call takes the first-call path */
void cap_vk_tramp_first(uint32_t slot);

static struct {
    void *owner;
    uint32_t id;
} slot_of[CAP_TRAMP_SLOTS];
static uint32_t n_slots;
static pthread_mutex_t slot_mu = PTHREAD_MUTEX_INITIALIZER;

#if defined(__x86_64__)
#define HAVE_TRAMPOLINES 1
extern const char cap_vk_tramp_base[];
/* clang-format off */
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl cap_vk_tramp_base\n"
    ".hidden cap_vk_tramp_base\n"
    ".type cap_vk_tramp_base,@function\n"
    "cap_vk_tramp_base:\n"
    ".set cap_vk_ti, 0\n"
    ".rept 4096\n"
    "    .p2align 4\n"
    "    endbr64\n"
    "    movl $cap_vk_ti, %r11d\n"
    "    jmp cap_vk_tramp_common\n"
    "    .set cap_vk_ti, cap_vk_ti + 1\n"
    ".endr\n"
    ".size cap_vk_tramp_base, .-cap_vk_tramp_base\n"
    ".p2align 4\n"
    ".type cap_vk_tramp_common,@function\n"
    "cap_vk_tramp_common:\n"
    "    leaq cap_vk_tcalls(%rip), %r10\n"
    "    lock incq (%r10,%r11,8)\n"
    "    leaq cap_vk_tseen(%rip), %r10\n"
    "    cmpb $0, (%r10,%r11,1)\n"
    "    je 2f\n"
    "1:  leaq cap_vk_tnext(%rip), %r10\n"
    "    jmp *(%r10,%r11,8)\n"
    "2:  pushq %rbp\n"
    "    movq %rsp, %rbp\n"
    "    subq $192, %rsp\n"
    "    movq %rdi, 0(%rsp)\n"
    "    movq %rsi, 8(%rsp)\n"
    "    movq %rdx, 16(%rsp)\n"
    "    movq %rcx, 24(%rsp)\n"
    "    movq %r8, 32(%rsp)\n"
    "    movq %r9, 40(%rsp)\n"
    "    movq %rax, 48(%rsp)\n"
    "    movq %r11, 56(%rsp)\n"
    "    movdqu %xmm0, 64(%rsp)\n"
    "    movdqu %xmm1, 80(%rsp)\n"
    "    movdqu %xmm2, 96(%rsp)\n"
    "    movdqu %xmm3, 112(%rsp)\n"
    "    movdqu %xmm4, 128(%rsp)\n"
    "    movdqu %xmm5, 144(%rsp)\n"
    "    movdqu %xmm6, 160(%rsp)\n"
    "    movdqu %xmm7, 176(%rsp)\n"
    "    movl %r11d, %edi\n"
    "    call cap_vk_tramp_first\n"
    "    movdqu 176(%rsp), %xmm7\n"
    "    movdqu 160(%rsp), %xmm6\n"
    "    movdqu 144(%rsp), %xmm5\n"
    "    movdqu 128(%rsp), %xmm4\n"
    "    movdqu 112(%rsp), %xmm3\n"
    "    movdqu 96(%rsp), %xmm2\n"
    "    movdqu 80(%rsp), %xmm1\n"
    "    movdqu 64(%rsp), %xmm0\n"
    "    movq 56(%rsp), %r11\n"
    "    movq 48(%rsp), %rax\n"
    "    movq 40(%rsp), %r9\n"
    "    movq 32(%rsp), %r8\n"
    "    movq 24(%rsp), %rcx\n"
    "    movq 16(%rsp), %rdx\n"
    "    movq 8(%rsp), %rsi\n"
    "    movq 0(%rsp), %rdi\n"
    "    movq %rbp, %rsp\n"
    "    popq %rbp\n"
    "    jmp 1b\n"
    ".size cap_vk_tramp_common, .-cap_vk_tramp_common\n");
/* clang-format on */
#else
#define HAVE_TRAMPOLINES 0
#endif

/* The first call through slot (from the trampoline, argument registers saved): the marker of
 * an affecting id, on the device the slot was resolved for (none for an instance's). */
__attribute__((used)) void cap_vk_tramp_first(uint32_t slot)
{
    if (slot >= CAP_TRAMP_SLOTS)
        return;
    __atomic_store_n(&cap_vk_tseen[slot], 1, __ATOMIC_RELAXED);
    void *owner = slot_of[slot].owner;
    struct cap_dev *d = NULL;
    for (int i = 0; i < CAP_MAX_DEV && !d; i++) {
        struct cap_dev *p = __atomic_load_n(&cap_devs[i], __ATOMIC_ACQUIRE);
        if (p && p->key == owner)
            d = p;
    }
    cap_unmod_first(slot_of[slot].id, d);
}

PFN_vkVoidFunction cap_tramp_get(void *owner, uint32_t id, PFN_vkVoidFunction next)
{
    if (!HAVE_TRAMPOLINES || !next)
        return NULL;
    PFN_vkVoidFunction fn = NULL;
    pthread_mutex_lock(&slot_mu);
    uint32_t i = 0;
    while (i < n_slots && !(slot_of[i].owner == owner && slot_of[i].id == id))
        i++;
    if (i == n_slots && n_slots < CAP_TRAMP_SLOTS) {
        slot_of[i].owner = owner;
        slot_of[i].id = id;
        cap_vk_tnext[i] = (void *)next;
        /* only an affecting id needs its first call seen */
        cap_vk_tseen[i] = id < CAP_VK_N_CMDS && cap_vk_cmds[id].cls != CAP_VK_AFFECTING ? 1 : 0;
        n_slots++;
    }
#if HAVE_TRAMPOLINES
    if (i < n_slots) {
        __atomic_store_n(&cap_vk_tnext[i], (void *)next, __ATOMIC_RELEASE);
        fn = (PFN_vkVoidFunction)(uintptr_t)(cap_vk_tramp_base + 16 * (size_t)i);
    }
#endif
    pthread_mutex_unlock(&slot_mu);
    return fn;
}

uint64_t cap_tramp_calls(uint32_t id)
{
    uint64_t n = 0;
    pthread_mutex_lock(&slot_mu);
    for (uint32_t i = 0; i < n_slots; i++)
        if (slot_of[i].id == id)
            n += __atomic_load_n(&cap_vk_tcalls[i], __ATOMIC_RELAXED);
    pthread_mutex_unlock(&slot_mu);
    return n;
}
