/*
 * capture/cuda/cap_cuda_tramp.c — one exported trampoline per symbol of the CUDA driver stub
 * (capture/cuda/cap_cuda_exports.h), so that the shim can stand in for libcuda.so.1: a program or
 * a runtime that binds or dlsym()s any driver symbol finds it here. A trampoline counts the
 * call and jumps to the real driver's function with the caller's registers untouched, so it
 * works for every signature. Trampolines are weak: a wrapper in cap_cuda_shim.c with the same
 * name replaces its trampoline at link time.
 *
 * The first call of each symbol takes a slow path: every argument register is saved,
 * cap_cuda_first_call(index) runs (it notes where the call first happened and, for a call that
 * affects replay, writes a MARKER op there: capture/cuda/cap_cuda_class.h), the registers are
 * restored and the call goes on. Exactly one caller sees the count go from 0 to 1.
 *
 * The trampolines are assembler labels only, never declared to C, so they cannot clash with
 * cuda.h's prototypes.
 *
 * After the exports come CAP_CUDA_UNKNOWN_SLOTS trampolines of the same code that are not
 * exported: cuGetProcAddress hands one out for an answer that is none of the driver's exports
 * (cap_cuda_shim.c), so that the shim knows whether it is ever called. They lie one every
 * UNKNOWN_STRIDE bytes from cap_cuda_unknown_tramps (.org pads each to it, and fails the build
 * if one outgrew it).
 */
#include <stdint.h>

#include "capture/cuda/cap_cuda_int.h"

void *cap_cuda_next[CAP_CUDA_SLOTS];
void *cap_cuda_real[CAP_SYM__COUNT];
uint64_t cap_cuda_calls[CAP_CUDA_SLOTS];
void *cap_cuda_self[CAP_SYM__COUNT];

const char *const cap_cuda_names[CAP_SYM__COUNT] = {
#define X(n) #n,
#include "capture/cuda/cap_cuda_exports.h"
#undef X
};

/* Every export has exactly one class: a missing one fails the count, a name that is not an
 * export fails to compile (CAP_SYM_<name>), a duplicate warns (-Woverride-init). */
const uint8_t cap_cuda_class[CAP_SYM__COUNT] = {
#define C(n, cls, why) [CAP_SYM_##n] = CAP_CLASS_##cls,
#include "capture/cuda/cap_cuda_class.h"
#undef C
};
_Static_assert(
    0
#define C(n, cls, why) +1
#include "capture/cuda/cap_cuda_class.h"
#undef C
        == CAP_SYM__COUNT,
    "capture/cuda/cap_cuda_class.h must classify every export of capture/cuda/cap_cuda_exports.h");

/* Trampoline i uses slot i of the tables: the assembler symbol cap_cuda_tidx counts the
 * trampolines in the same order as the enum. cap_cuda_next and cap_cuda_calls are hidden, so
 * the references are PC-relative. Scratch registers: only those no argument is passed in
 * (x86-64: r10, r11; aarch64: x9, x16, x17). */
__asm__(".set cap_cuda_tidx, 0");
#if defined(__x86_64__)
/* The slow path: r11 = symbol index; the stack is as at the trampoline's entry. Saves the six
 * integer argument registers, rax (vector count of variadic calls), and xmm0-7; keeps the
 * stack 16-byte aligned at the call. */
__asm__(".text\n.p2align 4\n.type cap_cuda_tramp_first,@function\ncap_cuda_tramp_first:\n"
        "\tpushq %rdi\n\tpushq %rsi\n\tpushq %rdx\n\tpushq %rcx\n"
        "\tpushq %r8\n\tpushq %r9\n\tpushq %rax\n\tpushq %r11\n"
        "\tsubq $136, %rsp\n"
        "\tmovdqu %xmm0, 0(%rsp)\n\tmovdqu %xmm1, 16(%rsp)\n"
        "\tmovdqu %xmm2, 32(%rsp)\n\tmovdqu %xmm3, 48(%rsp)\n"
        "\tmovdqu %xmm4, 64(%rsp)\n\tmovdqu %xmm5, 80(%rsp)\n"
        "\tmovdqu %xmm6, 96(%rsp)\n\tmovdqu %xmm7, 112(%rsp)\n"
        "\tmovl %r11d, %edi\n"
        "\tcall cap_cuda_first_call@PLT\n"
        "\tmovdqu 0(%rsp), %xmm0\n\tmovdqu 16(%rsp), %xmm1\n"
        "\tmovdqu 32(%rsp), %xmm2\n\tmovdqu 48(%rsp), %xmm3\n"
        "\tmovdqu 64(%rsp), %xmm4\n\tmovdqu 80(%rsp), %xmm5\n"
        "\tmovdqu 96(%rsp), %xmm6\n\tmovdqu 112(%rsp), %xmm7\n"
        "\taddq $136, %rsp\n"
        "\tpopq %r11\n\tpopq %rax\n\tpopq %r9\n\tpopq %r8\n"
        "\tpopq %rcx\n\tpopq %rdx\n\tpopq %rsi\n\tpopq %rdi\n"
        "\tleaq cap_cuda_next(%rip), %r10\n"
        "\tjmp *(%r10,%r11,8)\n"
        ".size cap_cuda_tramp_first,.-cap_cuda_tramp_first\n");
#define TRAMP_BODY                                              \
    "\tmovl $1, %r11d\n"                                        \
    "\tlock xaddq %r11, cap_cuda_calls+8*cap_cuda_tidx(%rip)\n" \
    "\ttestq %r11, %r11\n\tjz 1f\n"                             \
    "\tjmp *cap_cuda_next+8*cap_cuda_tidx(%rip)\n"              \
    "1:\tmovl $cap_cuda_tidx, %r11d\n\tjmp cap_cuda_tramp_first\n"
#elif defined(__aarch64__)
/* The slow path: x17 = symbol index. Saves x0-x8 (x8: indirect result), q0-q7, fp and lr.
 * Not run on aarch64 hardware yet (README "CUDA"). */
__asm__(".text\n.p2align 4\n.type cap_cuda_tramp_first,%function\ncap_cuda_tramp_first:\n"
        "\tstp x29, x30, [sp, #-224]!\n\tmov x29, sp\n"
        "\tstp x0, x1, [sp, #16]\n\tstp x2, x3, [sp, #32]\n"
        "\tstp x4, x5, [sp, #48]\n\tstp x6, x7, [sp, #64]\n\tstp x8, x17, [sp, #80]\n"
        "\tstp q0, q1, [sp, #96]\n\tstp q2, q3, [sp, #128]\n"
        "\tstp q4, q5, [sp, #160]\n\tstp q6, q7, [sp, #192]\n"
        "\tmov w0, w17\n\tbl cap_cuda_first_call\n"
        "\tldp q6, q7, [sp, #192]\n\tldp q4, q5, [sp, #160]\n"
        "\tldp q2, q3, [sp, #128]\n\tldp q0, q1, [sp, #96]\n"
        "\tldp x8, x17, [sp, #80]\n\tldp x6, x7, [sp, #64]\n"
        "\tldp x4, x5, [sp, #48]\n\tldp x2, x3, [sp, #32]\n\tldp x0, x1, [sp, #16]\n"
        "\tldp x29, x30, [sp], #224\n"
        "\tadrp x16, cap_cuda_next\n\tadd x16, x16, :lo12:cap_cuda_next\n"
        "\tldr x16, [x16, x17, lsl #3]\n\tbr x16\n"
        ".size cap_cuda_tramp_first,.-cap_cuda_tramp_first\n");
#define TRAMP_BODY                                             \
    "\tadrp x16, cap_cuda_calls+8*cap_cuda_tidx\n"             \
    "\tadd x16, x16, :lo12:cap_cuda_calls+8*cap_cuda_tidx\n"   \
    "1:\tldxr x17, [x16]\n\tadd x17, x17, #1\n"                \
    "\tstxr w9, x17, [x16]\n\tcbnz w9, 1b\n"                   \
    "\tcmp x17, #1\n\tb.eq 2f\n"                               \
    "\tadrp x16, cap_cuda_next+8*cap_cuda_tidx\n"              \
    "\tldr x16, [x16, #:lo12:cap_cuda_next+8*cap_cuda_tidx]\n" \
    "\tbr x16\n"                                               \
    "2:\tmov x17, #cap_cuda_tidx\n\tb cap_cuda_tramp_first\n"
#else
#error "cap_cuda_tramp.c: trampolines exist for x86-64 and aarch64 only"
#endif
/* An exported trampoline (weak: a wrapper of the same name wins) */
#define TRAMP(n)                                                                          \
    __asm__(".text\n.globl " #n "\n.weak " #n "\n.type " #n ",%function\n.p2align 4\n" #n \
            ":\n" TRAMP_BODY "\n.size " #n ",.-" #n "\n.set cap_cuda_tidx, cap_cuda_tidx+1\n");
#define X(n) TRAMP(n)
#include "capture/cuda/cap_cuda_exports.h"
#undef X

/* The unknown slots: the same code, one every UNKNOWN_STRIDE bytes, none exported */
#define UNKNOWN_STRIDE 64
#define STR_(x)        #x
#define STR(x)         STR_(x)
__asm__(
    ".text\n.p2align 6\n.type cap_cuda_unknown_tramps,%function\ncap_cuda_unknown_tramps:\n"
    ".rept " STR(
        CAP_CUDA_UNKNOWN_SLOTS) "\n"
                                "3:\n" TRAMP_BODY "\n.org 3b + " STR(
                                    UNKNOWN_STRIDE) ", 0xcc\n"
                                                    ".set cap_cuda_tidx, cap_cuda_tidx+1\n.endr\n"
                                                    ".size cap_cuda_unknown_tramps,.-cap_cuda_unknown_tramps\n");
extern const char cap_cuda_unknown_tramps[];

void *cap_cuda_unknown_tramp(int k)
{
    if (k < 0 || k >= CAP_CUDA_UNKNOWN_SLOTS)
        return NULL;
    return (void *)(cap_cuda_unknown_tramps + (size_t)k * UNKNOWN_STRIDE);
}
