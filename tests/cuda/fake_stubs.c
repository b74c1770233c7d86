/*
 * tests/cuda/fake_stubs.c — the fake driver exports every symbol of the CUDA 13.0 stub, like a
 * real libcuda.so.1: the ones fake_cuda.c does not implement are weak stubs here that return
 * CUDA_ERROR_NOT_SUPPORTED (801) whatever their signature. Test only.
 */
#if defined(__x86_64__)
#define STUB(n)                                                               \
    __asm__(".text\n.globl " #n "\n.weak " #n "\n.type " #n ",@function\n" #n \
            ":\n\tmovl $801, %eax\n\tret\n.size " #n ",.-" #n "\n");
#elif defined(__aarch64__)
#define STUB(n)                                                               \
    __asm__(".text\n.globl " #n "\n.weak " #n "\n.type " #n ",%function\n" #n \
            ":\n\tmov w0, #801\n\tret\n.size " #n ",.-" #n "\n");
#else
#error "fake_stubs.c: x86-64 and aarch64 only"
#endif
#define X(n) STUB(n)
#include "capture/cuda/cap_cuda_exports.h"
#undef X

/* ISO C forbids an empty translation unit. */
int fake_cuda_n_stubs(void);
int fake_cuda_n_stubs(void)
{
    return 0
#define X(n) +1
#include "capture/cuda/cap_cuda_exports.h"
#undef X
        ;
}
