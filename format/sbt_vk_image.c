/*
 * format/sbt_vk_image.c — the packed layout of Vulkan images (format/sbt_vk.h, FORMAT.md
 * "Images"): the one definition of where each texel block of an image lies in the trace's
 * bytes of that image, shared by the capture layer (accesses of copies and descriptors, host
 * writes to linear images) and the replay backend (read-backs and uploads through
 * buffer<->image copies).
 *
 * Every value may come from a trace: descriptions are checked (sbt_vk_image_check) before any
 * size is computed, and sizes stay below SBT_VK_IMAGE_MAX_BYTES, so no product here overflows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "format/sbt_int.h"
#include "format/sbt_vk.h"

#define ASPECT_COLOR   0x1u
#define ASPECT_DEPTH   0x2u
#define ASPECT_STENCIL 0x4u
#define ASPECT_PLANE0  0x10u
#define ASPECT_PLANES  0x70u

const struct sbt_vk_format *sbt_vk_format(uint32_t format)
{
    uint32_t lo = 0, hi = sbt_vk_n_formats;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sbt_vk_formats[mid].format < format)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sbt_vk_n_formats && sbt_vk_formats[lo].format == format ? &sbt_vk_formats[lo]
                                                                        : NULL;
}

uint32_t sbt_vk_format_aspects(uint32_t format)
{
    const struct sbt_vk_format *f = sbt_vk_format(format);
    if (!f)
        return 0;
    if (f->depth_bytes || f->stencil_bytes)
        return (f->depth_bytes ? ASPECT_DEPTH : 0) | (f->stencil_bytes ? ASPECT_STENCIL : 0);
    if (f->n_planes)
        return (ASPECT_PLANE0 << f->n_planes) - ASPECT_PLANE0;
    return ASPECT_COLOR;
}

static uint32_t level(uint32_t e, uint32_t mip)
{
    e >>= mip;
    return e ? e : 1;
}

static uint32_t div_up(uint32_t a, uint32_t b)
{
    return a / b + (a % b != 0);
}

static uint64_t div_up64(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* The subresource of an image whose description is known to be sane (no checks). */
static void subres(const struct sbt_vk_image *im, const struct sbt_vk_format *f, uint32_t aspect,
                   uint32_t mip, struct sbt_vk_subres *s)
{
    uint32_t bytes = f->block_bytes, blk[3] = {f->block[0], f->block[1], f->block[2]};
    uint32_t ext[3] = {level(im->extent[0], mip), level(im->extent[1], mip),
                       level(im->extent[2], mip)};
    if (aspect == ASPECT_DEPTH || aspect == ASPECT_STENCIL) {
        bytes = aspect == ASPECT_DEPTH ? f->depth_bytes : f->stencil_bytes;
        blk[0] = blk[1] = blk[2] = 1;
    } else if (aspect & ASPECT_PLANES) {
        uint32_t p = aspect == ASPECT_PLANE0 ? 0 : aspect == ASPECT_PLANE0 << 1 ? 1 : 2;
        bytes = f->plane_bytes[p];
        blk[0] = blk[1] = blk[2] = 1;
        ext[0] = f->plane_wdiv[p] > 1 ? ext[0] / f->plane_wdiv[p] : ext[0];
        ext[1] = f->plane_hdiv[p] > 1 ? ext[1] / f->plane_hdiv[p] : ext[1];
        ext[0] = ext[0] ? ext[0] : 1;
        ext[1] = ext[1] ? ext[1] : 1;
    }
    for (int i = 0; i < 3; i++) {
        s->extent[i] = ext[i];
        s->block[i] = blk[i] ? blk[i] : 1;
        s->blocks[i] = div_up(ext[i], s->block[i]);
    }
    s->block_bytes = bytes;
    s->row_bytes = (uint64_t)s->blocks[0] * bytes;
    s->slice_bytes = s->row_bytes * s->blocks[1];
    s->layer_bytes = s->slice_bytes * s->blocks[2];
}

int sbt_vk_image_check(const struct sbt_vk_image *im, uint64_t *size)
{
    const struct sbt_vk_format *f = sbt_vk_format(im->format);
    if (!f || (!f->block_bytes && !f->n_planes))
        return sbt__fail(SBT_ECORRUPT,
                         "image format %u is not one this build's Vulkan registry describes",
                         im->format);
    if (im->type > 2)
        return sbt__fail(SBT_ECORRUPT, "image type %u (0 1D, 1 2D, 2 3D)", im->type);
    uint32_t biggest = 0;
    for (int i = 0; i < 3; i++) {
        if (!im->extent[i] || im->extent[i] > SBT_VK_IMAGE_MAX_EXTENT)
            return sbt__fail(SBT_ECORRUPT, "image extent %ux%ux%u (each 1..%u)", im->extent[0],
                             im->extent[1], im->extent[2], SBT_VK_IMAGE_MAX_EXTENT);
        biggest = im->extent[i] > biggest ? im->extent[i] : biggest;
    }
    if ((im->type == 0 && (im->extent[1] != 1 || im->extent[2] != 1)) ||
        (im->type == 1 && im->extent[2] != 1) || (im->type == 2 && im->layers != 1))
        return sbt__fail(SBT_ECORRUPT, "a %uD image of extent %ux%ux%u with %u layers",
                         im->type + 1, im->extent[0], im->extent[1], im->extent[2], im->layers);
    uint32_t max_mips = 1;
    while (max_mips < 32 && (biggest >> max_mips))
        max_mips++;
    if (!im->layers || im->layers > SBT_VK_IMAGE_MAX_LAYERS || !im->mips || im->mips > max_mips)
        return sbt__fail(SBT_ECORRUPT,
                         "image of extent %ux%ux%u with %u levels (1..%u) and %u layers (1..%u)",
                         im->extent[0], im->extent[1], im->extent[2], im->mips, max_mips,
                         im->layers, SBT_VK_IMAGE_MAX_LAYERS);
    /* each level: at most 2^60 bytes (blocks <= 2^20 per axis, 255 bytes, 2^16 layers) */
    uint64_t total = 0;
    uint32_t aspects = sbt_vk_format_aspects(im->format);
    for (uint32_t a = 1; a <= ASPECT_PLANES; a <<= 1) {
        if (!(aspects & a))
            continue;
        for (uint32_t m = 0; m < im->mips; m++) {
            struct sbt_vk_subres s;
            subres(im, f, a, m, &s);
            uint64_t n = s.layer_bytes;
            if (n > SBT_VK_IMAGE_MAX_BYTES / im->layers ||
                total > SBT_VK_IMAGE_MAX_BYTES - n * im->layers)
                return sbt__fail(SBT_ECORRUPT,
                                 "image of extent %ux%ux%u, %u levels, %u layers: more than "
                                 "2^50 bytes",
                                 im->extent[0], im->extent[1], im->extent[2], im->mips, im->layers);
            total += n * im->layers;
        }
    }
    if (size)
        *size = total;
    return 0;
}

int sbt_vk_image_subres(const struct sbt_vk_image *im, uint32_t aspect, uint32_t mip,
                        struct sbt_vk_subres *out)
{
    const struct sbt_vk_format *f = sbt_vk_format(im->format);
    uint32_t aspects = sbt_vk_format_aspects(im->format);
    if (!f || !aspect || (aspect & (aspect - 1)) || !(aspects & aspect) || mip >= im->mips)
        return sbt__fail(SBT_ECORRUPT,
                         "aspect 0x%x, level %u of an image of format %u with aspects 0x%x and "
                         "%u levels",
                         aspect, mip, im->format, aspects, im->mips);
    uint64_t off = 0;
    for (uint32_t a = 1; a <= ASPECT_PLANES; a <<= 1) {
        if (!(aspects & a))
            continue;
        for (uint32_t m = 0; m < im->mips; m++) {
            subres(im, f, a, m, out);
            if (a == aspect && m == mip) {
                out->offset = off;
                return 0;
            }
            off += out->layer_bytes * im->layers;
        }
    }
    return sbt__fail(SBT_ECORRUPT, "aspect 0x%x not found", aspect); /* not reached */
}

int sbt_vk_image_box_runs(const struct sbt_vk_image *im, const struct sbt_vk_box *b,
                          void (*fn)(void *ctx, uint64_t off, uint64_t len), void *ctx,
                          uint64_t *n_runs, uint64_t *lo, uint64_t *hi)
{
    struct sbt_vk_subres s;
    if (n_runs)
        *n_runs = 0;
    if (lo)
        *lo = 0;
    if (hi)
        *hi = 0;
    int st = sbt_vk_image_subres(im, b->aspect, b->mip, &s);
    if (st < 0)
        return st;
    if ((uint64_t)b->layer + b->n_layers > im->layers)
        return sbt__fail(SBT_ECORRUPT, "layers %u..%u of an image with %u layers", b->layer,
                         b->layer + b->n_layers, im->layers);
    uint32_t bo[3], be[3];
    static const char axis[] = "xyz";
    for (int i = 0; i < 3; i++) {
        uint64_t end = (uint64_t)b->off[i] + b->ext[i];
        if (end > s.extent[i])
            return sbt__fail(SBT_ECORRUPT,
                             "box [%u, %" PRIu64 ") on %c past level %u's extent %u (aspect "
                             "0x%x)",
                             b->off[i], end, axis[i], b->mip, s.extent[i], b->aspect);
        if (b->off[i] % s.block[i] || (b->ext[i] % s.block[i] && end != s.extent[i]))
            return sbt__fail(SBT_ECORRUPT,
                             "box [%u, %" PRIu64 ") on %c is not aligned to the %u-texel blocks "
                             "of its format",
                             b->off[i], end, axis[i], s.block[i]);
        bo[i] = b->off[i] / s.block[i];
        be[i] = div_up((uint32_t)end, s.block[i]);
    }
    if (!b->n_layers || bo[0] == be[0] || bo[1] == be[1] || bo[2] == be[2])
        return 0;
    int full_w = bo[0] == 0 && be[0] == s.blocks[0];
    int full_h = full_w && bo[1] == 0 && be[1] == s.blocks[1];
    int full_d = full_h && bo[2] == 0 && be[2] == s.blocks[2];
    uint64_t nl = b->n_layers, nz = be[2] - bo[2], ny = be[1] - bo[1];
    uint64_t n = full_d ? 1 : full_h ? nl : full_w ? nl * nz : nl * nz * ny;
    uint64_t first = s.offset + b->layer * s.layer_bytes + bo[2] * s.slice_bytes +
                     bo[1] * s.row_bytes + (uint64_t)bo[0] * s.block_bytes;
    uint64_t last_row = s.offset + (b->layer + nl - 1) * s.layer_bytes +
                        (be[2] - 1) * s.slice_bytes + (be[1] - 1) * s.row_bytes;
    if (n_runs)
        *n_runs = n;
    if (lo)
        *lo = first;
    if (hi)
        *hi = last_row + (uint64_t)be[0] * s.block_bytes;
    if (!fn)
        return 0;
    uint64_t run = (uint64_t)(be[0] - bo[0]) * s.block_bytes;
    if (full_d) {
        fn(ctx, first, nl * s.layer_bytes);
        return 0;
    }
    for (uint64_t l = 0; l < nl; l++) {
        uint64_t lbase = s.offset + (b->layer + l) * s.layer_bytes;
        if (full_h) {
            fn(ctx, lbase, s.layer_bytes);
            continue;
        }
        for (uint64_t z = bo[2]; z < be[2]; z++) {
            uint64_t zbase = lbase + z * s.slice_bytes;
            if (full_w) {
                fn(ctx, zbase + bo[1] * s.row_bytes, ny * s.row_bytes);
                continue;
            }
            for (uint64_t y = bo[1]; y < be[1]; y++)
                fn(ctx, zbase + y * s.row_bytes + (uint64_t)bo[0] * s.block_bytes, run);
        }
    }
    return 0;
}

/* Whole rows [r0, r1) of subresource s (rows numbered over layers, slices and rows) as boxes. */
static int cover_rows(const struct sbt_vk_subres *s, uint32_t aspect, uint32_t mip, uint64_t r0,
                      uint64_t r1,
                      int (*fn)(void *ctx, const struct sbt_vk_box *b, uint64_t off, uint64_t len),
                      void *ctx)
{
    uint64_t rps = s->blocks[1], rpl = rps * s->blocks[2];
    while (r0 < r1) {
        uint64_t layer = r0 / rpl, in = r0 % rpl, n;
        struct sbt_vk_box b = {.aspect = aspect,
                               .mip = mip,
                               .layer = (uint32_t)layer,
                               .n_layers = 1,
                               .ext = {s->extent[0], s->extent[1], s->extent[2]}};
        if (in == 0 && r1 - r0 >= rpl) { /* whole layers */
            n = (r1 - r0) / rpl * rpl;
            b.n_layers = (uint32_t)((r1 - r0) / rpl);
        } else {
            uint64_t z = in / rps, y = in % rps;
            b.off[2] = (uint32_t)(z * s->block[2]);
            if (y == 0 && r1 - r0 >= rps) { /* whole slices */
                uint64_t nz = (r1 - r0) / rps;
                if (nz > s->blocks[2] - z)
                    nz = s->blocks[2] - z;
                n = nz * rps;
                uint64_t z1 = (z + nz) * s->block[2];
                b.ext[2] = (uint32_t)((z1 < s->extent[2] ? z1 : s->extent[2]) - b.off[2]);
            } else { /* rows of one slice */
                uint64_t ny = r1 - r0 < rps - y ? r1 - r0 : rps - y;
                n = ny;
                uint64_t z1 = (z + 1) * s->block[2], y1 = (y + ny) * s->block[1];
                b.ext[2] = (uint32_t)((z1 < s->extent[2] ? z1 : s->extent[2]) - b.off[2]);
                b.off[1] = (uint32_t)(y * s->block[1]);
                b.ext[1] = (uint32_t)((y1 < s->extent[1] ? y1 : s->extent[1]) - b.off[1]);
            }
        }
        int st = fn(ctx, &b, s->offset + r0 * s->row_bytes, n * s->row_bytes);
        if (st)
            return st;
        r0 += n;
    }
    return 0;
}

int sbt_vk_image_cover(const struct sbt_vk_image *im, uint64_t off, uint64_t len,
                       int (*fn)(void *ctx, const struct sbt_vk_box *b, uint64_t off, uint64_t len),
                       void *ctx)
{
    uint64_t size = 0;
    int st = sbt_vk_image_check(im, &size);
    if (st < 0)
        return st;
    if (off > size || len > size - off)
        return sbt__fail(SBT_ECORRUPT,
                         "bytes [%" PRIu64 ", +%" PRIu64 ") of an image of %" PRIu64
                         " packed bytes",
                         off, len, size);
    uint64_t end = off + len;
    const struct sbt_vk_format *f = sbt_vk_format(im->format);
    uint32_t aspects = sbt_vk_format_aspects(im->format);
    uint64_t at = 0;
    for (uint32_t a = 1; a <= ASPECT_PLANES && at < end; a <<= 1) {
        if (!(aspects & a))
            continue;
        for (uint32_t m = 0; m < im->mips && at < end; m++) {
            struct sbt_vk_subres s;
            subres(im, f, a, m, &s);
            s.offset = at;
            uint64_t sz = s.layer_bytes * im->layers;
            if (off < at + sz && at < end && s.row_bytes) {
                uint64_t x = (off > at ? off : at) - at, y = (end < at + sz ? end : at + sz) - at;
                if ((st = cover_rows(&s, a, m, x / s.row_bytes, div_up64(y, s.row_bytes), fn, ctx)))
                    return st;
            }
            at += sz;
        }
    }
    return 0;
}
