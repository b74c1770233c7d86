/*
 * tests/lsan/leak_lib.c — a library that leaks on purpose, for the test of the leak attribution
 * (tests/test_capture.c, capture/leak_attribution): loaded from the build directory it stands
 * for a library of ours, copied elsewhere for one of the driver stack's.
 */
#include <stdlib.h>
#include <string.h>

void *lsan_test_leak(size_t n);

/* volatile: the compiler may not drop the allocation as unused */
void *volatile lsan_test_sink;

void *lsan_test_leak(size_t n)
{
    char *p = malloc(n);
    if (p)
        memset(p, 0x5a, n);
    lsan_test_sink = p;
    lsan_test_sink = NULL; /* the only pointer is dropped: a direct leak */
    return NULL;
}
