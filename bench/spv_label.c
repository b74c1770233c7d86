/*
 * bench/spv_label.c — the name the Vulkan capture layer gives a SPIR-V program
 * ("spirv:" + the top 8 hex digits of the code's XXH3-128, capture/vk/cap_vk_layer.c), so that a
 * benchmark can tell which timing group of a check report is which shader.
 *
 *   spv_label FILE.spv     prints e.g. spirv:b0639f5e
 */
#include <stdio.h>
#include <stdlib.h>

#include "format/sbt.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: spv_label FILE.spv\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 3;
    }
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    int bad = ferror(f) || !feof(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: unreadable or larger than 1 MiB\n", argv[1]);
        return 3;
    }
    sbt_hash h = sbt_hash_bytes(buf, n);
    printf("spirv:%08llx\n", (unsigned long long)(h.hi >> 32));
    return 0;
}
