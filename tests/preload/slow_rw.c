/*
 * tests/preload/slow_rw.c — an LD_PRELOAD library for the capture tests: mprotect() making
 * REPRISE_TEST_SLOW_RW_BYTES or more bytes writable sleeps 100 ms first. The capture layer
 * makes a whole mapping writable when it stops tracking it (at exit, unmap, or the device's
 * end), and single pages or short runs when it takes a write fault: with this library, the
 * first is slow enough for another thread of the program to write the mapping meanwhile,
 * every time (test_capture.c, capture::a_thread_writing_while_tracking_ends). Built without
 * sanitizers (a preloaded library runs in every process of the test).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

int mprotect(void *addr, size_t len, int prot)
{
    static int (*real)(void *, size_t, int);
    static long min = -1;
    if (!real)
        real = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "mprotect");
    if (min < 0) {
        const char *e = getenv("REPRISE_TEST_SLOW_RW_BYTES");
        min = e ? atol(e) : 0;
    }
    if ((prot & PROT_WRITE) && min > 0 && len >= (size_t)min)
        nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
    return real(addr, len, prot);
}
