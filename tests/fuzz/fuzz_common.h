/*
 * tests/fuzz/fuzz_common.h — the fuzz targets' shared helper: the reader API takes paths, so
 * each input is written to a per-process temporary file first.
 */
#ifndef REPRISE_FUZZ_COMMON_H
#define REPRISE_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *fuzz_path(const char *tag)
{
    static char p[96];
    snprintf(p, sizeof p, "/tmp/reprise-fuzz-%s-%d", tag, (int)getpid());
    return p;
}

static int fuzz_write(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(data, 1, size, f);
    fclose(f);
    return n == size ? 0 : -1;
}

#endif
