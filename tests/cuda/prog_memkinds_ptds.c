/* tests/cuda/prog_memkinds_ptds.c — prog_memkinds built with the per-thread default stream:
 * synchronous copies bind to their _ptds variants, waits and launches to _ptsz (the waitvalue
 * mode's last round waits on this thread's default stream). */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include "tests/cuda/prog_memkinds.c"
