/* tests/cuda/prog_ptds.c — prog_saxpy built with the per-thread default stream: every call
 * binds to its _ptds / _ptsz variant, so the shim and replay must keep the variant. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include "tests/cuda/prog_saxpy.c"
