/*
 * tests/cuda/ck.h — what the Driver-API test programs (tests/cuda/prog_*.c) share: CK(call)
 * exits with status 1, naming the call, its place and its CUresult, when a call fails.
 */
#ifndef TESTS_CUDA_CK_H
#define TESTS_CUDA_CK_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(call)                                                                           \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)r_); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#endif
