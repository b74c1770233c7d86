/*
 * format/sbt_cuda.c — names of the CUDA payload records and API ids, the image-size rules for
 * cuModuleLoadData-style calls (which pass no length), and a text dump of a payload.
 *
 * Image layouts: fatbinary_section.h of the CUDA toolkit (__fatBinC_Wrapper_t) and the fatbin
 * header {u32 magic 0xBA55ED50, u16 version, u16 header size, u64 payload size}, as summarised
 * in research/cuda.md section 2.1 (Foundry's compute_fatbin_size walks the same chain).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "format/sbt_cuda.h"

const char *sbt_cuda_api_name(uint32_t api)
{
    switch (api) {
#define SBT_CUDA__NAME(name, val) \
    case val:                     \
        return #name;
        SBT_CUDA_API_MAP(SBT_CUDA__NAME)
#undef SBT_CUDA__NAME
    default:
        return NULL;
    }
}

const char *sbt_cuda_call_name(uint32_t call)
{
    switch (call) {
#define SBT_CUDA__NAME(name, val) \
    case val:                     \
        return #name;
        SBT_CUDA_CALL_MAP(SBT_CUDA__NAME)
#undef SBT_CUDA__NAME
    default:
        return NULL;
    }
}

/* ========================================================================================== */
/* Image sizes                                                                                */
/* ========================================================================================== */

#define FATBINC_MAGIC 0x466243B1u
#define FATBIN_MAGIC  0xBA55ED50u
#define MAX_IMAGE     (1ull << 32) /* larger "sizes" mean we misread the header */

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* Concatenated fatbin headers: each is followed by its payload; the chain ends at the first
 * word that is not the magic. */
static size_t fatbin_size(const uint8_t *p)
{
    size_t n = 0;
    while (rd32(p + n) == FATBIN_MAGIC) {
        uint64_t step = (uint64_t)rd16(p + n + 6) + rd64(p + n + 8);
        if (step < 16 || n + step > MAX_IMAGE)
            return 0;
        n += step;
    }
    return n;
}

/* 64-bit little-endian ELF: the furthest of the section header table, the program header
 * table and the sections' file extents. */
static size_t elf_size(const uint8_t *p)
{
    if (p[4] != 2 || p[5] != 1) /* ELFCLASS64, ELFDATA2LSB */
        return 0;
    uint64_t phoff = rd64(p + 0x20), shoff = rd64(p + 0x28);
    uint16_t phentsize = rd16(p + 0x36), phnum = rd16(p + 0x38);
    uint16_t shentsize = rd16(p + 0x3a), shnum = rd16(p + 0x3c);
    if (shoff > MAX_IMAGE || phoff > MAX_IMAGE)
        return 0;
    uint64_t end = 64;
    if (phoff + (uint64_t)phentsize * phnum > end)
        end = phoff + (uint64_t)phentsize * phnum;
    if (shoff + (uint64_t)shentsize * shnum > end)
        end = shoff + (uint64_t)shentsize * shnum;
    for (uint16_t i = 0; shentsize >= 0x28 && i < shnum; i++) {
        const uint8_t *sh = p + shoff + (uint64_t)i * shentsize;
        uint32_t type = rd32(sh + 4);
        uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
        if (type != 8 /* SHT_NOBITS */ && off + size > end && off + size <= MAX_IMAGE)
            end = off + size;
    }
    return end <= MAX_IMAGE ? (size_t)end : 0;
}

size_t sbt_cuda_image_size(const void **image, uint32_t *kind)
{
    const uint8_t *p = *image;
    *kind = 0;
    if (!p)
        return 0;
    uint32_t magic = rd32(p);
    if (magic == FATBINC_MAGIC) {
        if (rd32(p + 4) != 1) /* version 2 (RDC) points at a list of prelinked fatbins */
            return 0;
        const uint8_t *data;
        memcpy(&data, p + 8, sizeof data);
        if (!data)
            return 0;
        *image = data;
        *kind = SBT_PROGRAM_FATBIN;
        return fatbin_size(data);
    }
    if (magic == FATBIN_MAGIC) {
        *kind = SBT_PROGRAM_FATBIN;
        return fatbin_size(p);
    }
    if (!memcmp(p, "\177ELF", 4)) {
        *kind = SBT_PROGRAM_CUBIN;
        return elf_size(p);
    }
    size_t n = strnlen((const char *)p, (size_t)MAX_IMAGE);
    *kind = !strncmp((const char *)p, "FAKECUDA", 8) ? SBT_PROGRAM_HOST : SBT_PROGRAM_PTX;
    return n + 1;
}

/* ========================================================================================== */
/* Text dump                                                                                  */
/* ========================================================================================== */

int sbt_cuda_dump(const void *buf, size_t len, void (*line)(void *ctx, const char *s), void *ctx)
{
    struct sbt_vk_dec d;
    struct sbt_vk_rec r;
    sbt_vk_dec_init(&d, buf, len);
    char s[512];
    int st;
    while ((st = sbt_vk_dec_next(&d, &r)) == 1) {
        const char *name = sbt_cuda_call_name(r.call);
        int n = name ? snprintf(s, sizeof s, "%s", name) : snprintf(s, sizeof s, "call%u", r.call);
        if (r.call == SBT_CUDA_CALL && r.n_arg > 0 && sbt_cuda_api_name((uint32_t)r.arg[0]))
            n +=
                snprintf(s + n, sizeof s - (size_t)n, " %s", sbt_cuda_api_name((uint32_t)r.arg[0]));
        for (uint32_t i = 0; i < r.n_arg && n > 0 && (size_t)n < sizeof s - 24; i++)
            n += snprintf(s + n, sizeof s - (size_t)n, " %" PRIu64, r.arg[i]);
        if (r.n_bytes && n > 0 && (size_t)n < sizeof s - 40)
            snprintf(s + n, sizeof s - (size_t)n, " [%u bytes]", r.n_bytes);
        line(ctx, s);
    }
    sbt_vk_dec_free(&d);
    return st < 0 ? st : 0;
}
