/*
 * capture/cap_cuda_tramp.c — one exported trampoline per symbol of the CUDA driver stub
 * (capture/cap_cuda_exports.h), so that the shim can stand in for libcuda.so.1: a program or
 * a runtime that binds or dlsym()s any driver symbol finds it here. A trampoline counts the
 * call and jumps to the real driver's function with the caller's registers untouched, so it
 * works for every signature. Trampolines are weak: a wrapper in cap_cuda_shim.c with the same
 * name replaces its trampoline at link time.
 *
 * The trampolines are assembler labels only, never declared to C, so they cannot clash with
 * cuda.h's prototypes.
 */
#include <stdint.h>

#include "capture/cap_cuda_int.h"

void *cap_cuda_next[CAP_SYM__COUNT];
void *cap_cuda_real[CAP_SYM__COUNT];
uint64_t cap_cuda_calls[CAP_SYM__COUNT];
void *cap_cuda_self[CAP_SYM__COUNT];

const char *const cap_cuda_names[CAP_SYM__COUNT] = {
#define X(n) #n,
#include "capture/cap_cuda_exports.h"
#undef X
};

/* Trampoline i uses slot i of the tables: the assembler symbol cap_cuda_tidx counts the
 * trampolines in the same order as the enum. cap_cuda_next and cap_cuda_calls are hidden, so
 * the references are PC-relative. */
__asm__(".set cap_cuda_tidx, 0");
#if defined(__x86_64__)
#define TRAMP(n)                                                                          \
    __asm__(".text\n.globl " #n "\n.weak " #n "\n.type " #n ",@function\n.p2align 4\n" #n \
            ":\n\tlock incq cap_cuda_calls+8*cap_cuda_tidx(%rip)\n"                       \
            "\tjmp *cap_cuda_next+8*cap_cuda_tidx(%rip)\n.size " #n ",.-" #n "\n"         \
            ".set cap_cuda_tidx, cap_cuda_tidx+1\n");
#elif defined(__aarch64__)
#define TRAMP(n)                                                                          \
    __asm__(".text\n.globl " #n "\n.weak " #n "\n.type " #n ",%function\n.p2align 4\n" #n \
            ":\n\tadrp x16, cap_cuda_next+8*cap_cuda_tidx\n"                              \
            "\tldr x16, [x16, #:lo12:cap_cuda_next+8*cap_cuda_tidx]\n"                    \
            "\tbr x16\n.size " #n ",.-" #n "\n.set cap_cuda_tidx, cap_cuda_tidx+1\n");
#else
#error "cap_cuda_tramp.c: trampolines exist for x86-64 and aarch64 only"
#endif
#define X(n) TRAMP(n)
#include "capture/cap_cuda_exports.h"
#undef X
