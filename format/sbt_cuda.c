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
#include "format/sbt_int.h"

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

/* The image parsers read at most lim bytes from p: MAX_IMAGE at capture (the driver was given
 * the pointer, so the bytes are there), the blob's length at replay. */

/* Concatenated fatbin headers: each is followed by its payload; the chain ends at the first
 * word that is not the magic. */
static size_t fatbin_size(const uint8_t *p, uint64_t lim)
{
    uint64_t n = 0;
    while (n + 16 <= lim && rd32(p + n) == FATBIN_MAGIC) {
        uint64_t step = (uint64_t)rd16(p + n + 6) + rd64(p + n + 8);
        if (step < 16 || step > lim - n)
            return 0;
        n += step;
    }
    return (size_t)n;
}

/* 64-bit little-endian ELF: the furthest of the section header table, the program header
 * table and the sections' file extents. */
static size_t elf_size(const uint8_t *p, uint64_t lim)
{
    if (lim < 64 || p[4] != 2 || p[5] != 1) /* ELFCLASS64, ELFDATA2LSB */
        return 0;
    uint64_t phoff = rd64(p + 0x20), shoff = rd64(p + 0x28);
    uint16_t phentsize = rd16(p + 0x36), phnum = rd16(p + 0x38);
    uint16_t shentsize = rd16(p + 0x3a), shnum = rd16(p + 0x3c);
    if (shoff > lim || phoff > lim)
        return 0;
    uint64_t end = 64;
    if (phoff + (uint64_t)phentsize * phnum > end)
        end = phoff + (uint64_t)phentsize * phnum;
    if (shoff + (uint64_t)shentsize * shnum > end)
        end = shoff + (uint64_t)shentsize * shnum;
    if (end > lim)
        return 0;
    for (uint16_t i = 0; shentsize >= 0x28 && i < shnum; i++) {
        const uint8_t *sh = p + shoff + (uint64_t)i * shentsize;
        uint32_t type = rd32(sh + 4);
        uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
        if (type != 8 /* SHT_NOBITS */ && off <= lim && size <= lim - off && off + size > end)
            end = off + size;
    }
    return (size_t)end;
}

/* p is not a __fatBinC_Wrapper_t. */
static size_t image_size(const uint8_t *p, uint64_t lim, uint32_t *kind)
{
    if (lim >= 4 && rd32(p) == FATBIN_MAGIC) {
        *kind = SBT_PROGRAM_FATBIN;
        return fatbin_size(p, lim);
    }
    if (lim >= 4 && !memcmp(p, "\177ELF", 4)) {
        *kind = SBT_PROGRAM_CUBIN;
        return elf_size(p, lim);
    }
    size_t n = strnlen((const char *)p, (size_t)lim);
    *kind = n >= 8 && !strncmp((const char *)p, "FAKECUDA", 8) ? SBT_PROGRAM_HOST : SBT_PROGRAM_PTX;
    return n < lim ? n + 1 : 0;
}

size_t sbt_cuda_image_size(const void **image, uint32_t *kind)
{
    const uint8_t *p = *image;
    *kind = 0;
    if (!p)
        return 0;
    if (rd32(p) == FATBINC_MAGIC) {
        if (rd32(p + 4) != 1) /* version 2 (RDC) points at a list of prelinked fatbins */
            return 0;
        const uint8_t *data;
        memcpy(&data, p + 8, sizeof data);
        if (!data)
            return 0;
        *image = data;
        *kind = SBT_PROGRAM_FATBIN;
        return fatbin_size(data, MAX_IMAGE);
    }
    return image_size(p, MAX_IMAGE, kind);
}

size_t sbt_cuda_image_size_in(const void *image, size_t len, uint32_t *kind)
{
    const uint8_t *p = image;
    *kind = 0;
    if (!p || (len >= 4 && rd32(p) == FATBINC_MAGIC)) /* a wrapper holds a pointer */
        return 0;
    return image_size(p, len, kind);
}

/* ========================================================================================== */
/* Text dump                                                                                  */
/* ========================================================================================== */

int sbt_cuda_dump(const void *buf, size_t len, void (*line)(void *ctx, const char *s), void *ctx)
{
    struct sbt_payload_dec d;
    struct sbt_payload_rec r;
    sbt_payload_dec_init(&d, buf, len);
    char s[512];
    int st;
    while ((st = sbt_payload_dec_next(&d, &r)) == 1) {
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
    sbt_payload_dec_free(&d);
    return st < 0 ? st : 0;
}

/* ========================================================================================== */
/* Decoding for replay                                                                        */
/* ========================================================================================== */

void sbt_cuda_layout_free(struct sbt_cuda_layout *l)
{
    if (!l)
        return;
    sbt__free(l->off);
    sbt__free(l->size);
    memset(l, 0, sizeof *l);
}

int sbt_cuda_layout_decode(const struct sbt_kernel *k, struct sbt_cuda_layout *out)
{
    memset(out, 0, sizeof *out);
    if (k->ext.kind != SBT_CUDA_EXT_KERNEL)
        return 0;
    struct sbt_payload_dec d;
    struct sbt_payload_rec rec;
    int st = sbt_payload_find(&d, k->ext.data, k->ext.len, SBT_CUDA_KERNEL, &rec);
    if (st <= 0 || !sbt_payload_arg(&rec, 1)) {
        sbt_payload_dec_free(&d);
        return st < 0 ? sbt__fail(st, "kernel %u: parameter layout: %s", k->id, sbt_errmsg()) : 0;
    }
    uint64_t n = sbt_payload_arg(&rec, 2);
    if (n > SBT_CUDA_MAX_PARAMS || 3 + 2 * n > rec.n_arg) {
        sbt_payload_dec_free(&d);
        return sbt__fail(SBT_ECORRUPT, "kernel %u: %llu parameters in a layout of %u values", k->id,
                         (unsigned long long)n, rec.n_arg);
    }
    out->off = sbt__calloc(n + 1, sizeof *out->off);
    out->size = sbt__calloc(n + 1, sizeof *out->size);
    if (!out->off || !out->size) {
        sbt_payload_dec_free(&d);
        sbt_cuda_layout_free(out);
        return sbt__fail(SBT_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t off = rec.arg[3 + 2 * i], size = rec.arg[4 + 2 * i];
        if (off > SBT_CUDA_MAX_PARAM_BYTES || size > SBT_CUDA_MAX_PARAM_BYTES - off) {
            sbt_payload_dec_free(&d);
            sbt_cuda_layout_free(out);
            return sbt__fail(SBT_ECORRUPT,
                             "kernel %u: parameter %u at %llu+%llu past the %u parameter bytes",
                             k->id, i, (unsigned long long)off, (unsigned long long)size,
                             SBT_CUDA_MAX_PARAM_BYTES);
        }
        out->off[i] = (uint32_t)off;
        out->size[i] = (uint32_t)size;
        if (off + size > out->param_bytes)
            out->param_bytes = off + size;
    }
    out->n_params = (uint32_t)n;
    out->known = 1;
    sbt_payload_dec_free(&d);
    return 0;
}

void sbt_cuda_op_free(struct sbt_cuda_op *o)
{
    if (!o)
        return;
    sbt__free(o->params);
    sbt__free(o->relocs);
    memset(o, 0, sizeof *o);
}

/* The access of a copy or fill with mode m; NULL if none. Two of one mode: corrupt. */
static int access_of(const struct sbt_op *op, uint32_t m, const struct sbt_access **out)
{
    *out = NULL;
    for (uint32_t i = 0; i < op->n_access; i++)
        if (op->access[i].mode == m) {
            if (*out)
                return sbt__fail(SBT_ECORRUPT, "%s with two %s ranges", sbt_op_kind_name(op->kind),
                                 m == SBT_ACCESS_READ ? "read" : "written");
            *out = &op->access[i];
        }
    return 0;
}

static int check_stream(const struct sbt_cuda_view *v, uint64_t id, const char *what)
{
    if (id == 0 || id > v->n_streams)
        return sbt__fail(SBT_ECORRUPT, "%s %llu: the trace has %u streams", what,
                         (unsigned long long)id, v->n_streams);
    return 0;
}

/* Values past CUDA's own maxima are corrupt (SBT_ECORRUPT); values within them but past what
 * this device allows are SBT_ELIMIT (the trace is fine, the device cannot run it). */
static int check_geometry(const struct sbt_cuda_view *v, const struct sbt_op *op)
{
    static const uint32_t cuda_grid[3] = {0x7fffffffu, 65535, 65535},
                          cuda_block[3] = {1024, 1024, 64};
    uint64_t threads = 1;
    for (int i = 0; i < 3; i++) {
        if (op->grid[i] == 0 || op->grid[i] > cuda_grid[i])
            return sbt__fail(SBT_ECORRUPT, "grid dimension %c = %u outside 1..%u", "xyz"[i],
                             op -> grid[i], cuda_grid[i]);
        if (op->block[i] == 0 || op->block[i] > cuda_block[i])
            return sbt__fail(SBT_ECORRUPT, "block dimension %c = %u outside 1..%u", "xyz"[i],
                             op -> block[i], cuda_block[i]);
        if (v->lim.max_grid[i] && op->grid[i] > v->lim.max_grid[i])
            return sbt__fail(SBT_ELIMIT, "grid dimension %c = %u > the device's %u", "xyz"[i],
                             op -> grid[i], v -> lim.max_grid[i]);
        if (v->lim.max_block[i] && op->block[i] > v->lim.max_block[i])
            return sbt__fail(SBT_ELIMIT, "block dimension %c = %u > the device's %u", "xyz"[i],
                             op -> block[i], v -> lim.max_block[i]);
        threads *= op->block[i];
    }
    if (threads > 1024)
        return sbt__fail(SBT_ECORRUPT, "%llu threads per block > 1024",
                         (unsigned long long)threads);
    if (v->lim.max_threads && threads > v->lim.max_threads)
        return sbt__fail(SBT_ELIMIT, "%llu threads per block > the device's %u",
                         (unsigned long long)threads, v->lim.max_threads);
    if (v->lim.max_shmem && op->shmem > v->lim.max_shmem)
        return sbt__fail(SBT_ELIMIT, "%u bytes of dynamic shared memory > the device's %u",
                         op->shmem, v->lim.max_shmem);
    return 0;
}

/* LAUNCH and PTR records of a kernel op. */
static int decode_launch(const struct sbt_cuda_view *v, const struct sbt_op *op,
                         struct sbt_cuda_op *o)
{
    if (!(op->flags & SBT_OPF_KERNEL) || op->kernel == 0 || op->kernel > v->n_kernels)
        return sbt__fail(SBT_EINVAL, "launch of kernel %u: the trace has %u kernels", op->kernel,
                         v->n_kernels);
    int st = check_geometry(v, op);
    if (st)
        return st;
    const struct sbt_cuda_layout *k = &v->kernels[op->kernel - 1];
    struct sbt_payload_dec d;
    struct sbt_payload_rec rec;
    uint32_t cap = 0;
    int have = 0;
    sbt_payload_dec_init(&d, op->payload.data, op->payload.len);
    while (!st && (st = sbt_payload_dec_next(&d, &rec)) == 1) {
        st = 0;
        if (rec.call == SBT_CUDA_LAUNCH) {
            uint64_t form = sbt_payload_arg(&rec, 0), len = sbt_payload_arg(&rec, 1);
            if (have)
                st = sbt__fail(SBT_ECORRUPT, "launch with two LAUNCH records");
            else if (form > 1)
                st =
                    sbt__fail(SBT_ECORRUPT, "launch parameter form %llu", (unsigned long long)form);
            else if (len != rec.n_bytes)
                st = sbt__fail(SBT_ECORRUPT, "launch parameters: %u of %llu bytes captured",
                               rec.n_bytes, (unsigned long long)len);
            else if (len > SBT_CUDA_MAX_PARAM_BYTES)
                st = sbt__fail(SBT_ECORRUPT, "%llu parameter bytes > %u", (unsigned long long)len,
                               SBT_CUDA_MAX_PARAM_BYTES);
            else if (form == 0 && !k->known)
                st = sbt__fail(SBT_ECORRUPT, "kernel %u has no parameter layout", op->kernel);
            else if (form == 0 && k->param_bytes > len)
                st = sbt__fail(
                    SBT_ECORRUPT, "kernel %u's parameters end at byte %llu of %llu captured",
                    op->kernel, (unsigned long long)k->param_bytes, (unsigned long long)len);
            else if (!(o->params = sbt__calloc(1, len + 8)))
                st = sbt__fail(SBT_ENOMEM, "out of memory");
            if (st)
                break;
            memcpy(o->params, rec.bytes, len);
            o->form = (uint32_t)form;
            o->param_len = len;
            have = 1;
        } else if (rec.call == SBT_CUDA_PTR) {
            struct sbt_cuda_reloc r = {sbt_payload_arg(&rec, 0), sbt_payload_arg(&rec, 1),
                                       sbt_payload_arg(&rec, 2)};
            uint64_t size = 0;
            if (!have)
                st = sbt__fail(SBT_ECORRUPT, "pointer record before the LAUNCH record");
            else if (r.off > o->param_len || o->param_len - r.off < 8)
                st = sbt__fail(SBT_ECORRUPT, "pointer at byte %llu past the %llu parameter bytes",
                               (unsigned long long)r.off, (unsigned long long)o->param_len);
            else if (!v->resource(v->ctx, r.resource, &size))
                st = sbt__fail(SBT_EINVAL, "pointer into resource %llu, which is not allocated",
                               (unsigned long long)r.resource);
            else if (r.res_off >= size)
                st = sbt__fail(SBT_ECORRUPT, "pointer at offset %llu of resource %llu (%llu bytes)",
                               (unsigned long long)r.res_off, (unsigned long long)r.resource,
                               (unsigned long long)size);
            else if (o->n_relocs == cap) {
                uint32_t c2 = cap ? cap * 2 : 8;
                struct sbt_cuda_reloc *n = sbt__realloc(o->relocs, c2 * sizeof *n);
                if (!n)
                    st = sbt__fail(SBT_ENOMEM, "out of memory");
                else
                    o->relocs = n, cap = c2;
            }
            if (!st)
                o->relocs[o->n_relocs++] = r;
        } else if (rec.call == SBT_CUDA_FUNC_ATTR) {
            /* the settable CUfunction_attribute values are small; an int's range */
            uint64_t id = sbt_payload_arg(&rec, 0), val = sbt_payload_arg(&rec, 1);
            int64_t sv = (int64_t)val;
            if (id > 63)
                st = sbt__fail(SBT_ECORRUPT, "function attribute %llu", (unsigned long long)id);
            else if (sv < INT32_MIN || sv > INT32_MAX)
                st = sbt__fail(SBT_ECORRUPT, "function attribute %llu: value %lld is not an int",
                               (unsigned long long)id, (long long)sv);
            else if (o->n_fattr == SBT_CUDA_MAX_ATTRS)
                st = sbt__fail(SBT_ECORRUPT, "more than %u function attributes at one launch",
                               SBT_CUDA_MAX_ATTRS);
            else {
                o->fattr[o->n_fattr].id = (uint32_t)id;
                o->fattr[o->n_fattr++].value = (int32_t)sv;
            }
        } else if (rec.call == SBT_CUDA_LAUNCH_ATTR) {
            uint64_t id = sbt_payload_arg(&rec, 0);
            if (id == 0 || id > 63)
                st = sbt__fail(SBT_ECORRUPT, "launch attribute %llu", (unsigned long long)id);
            else if (rec.n_bytes != sizeof o->lattr[0].value)
                st = sbt__fail(SBT_ECORRUPT, "launch attribute %llu: %u value bytes, not %zu",
                               (unsigned long long)id, rec.n_bytes, sizeof o->lattr[0].value);
            else if (o->n_lattr == SBT_CUDA_MAX_ATTRS)
                st = sbt__fail(SBT_ECORRUPT, "more than %u launch attributes at one launch",
                               SBT_CUDA_MAX_ATTRS);
            else {
                o->lattr[o->n_lattr].id = (uint32_t)id;
                memcpy(o->lattr[o->n_lattr++].value, rec.bytes, rec.n_bytes);
            }
        }
    }
    sbt_payload_dec_free(&d);
    if (st < 0)
        return st;
    return have ? 0 : sbt__fail(SBT_ECORRUPT, "launch without a LAUNCH record");
}

static int decode_kind(const struct sbt_cuda_view *v, const struct sbt_op *op,
                       struct sbt_cuda_op *o)
{
    struct sbt_payload_dec d;
    struct sbt_payload_rec rec;
    int st;
    switch (op->kind) {
    case SBT_OP_ALLOC: {
        if ((st = sbt_payload_find(&d, op->payload.data, op->payload.len, SBT_CUDA_ALLOC, &rec)) !=
            1) {
            sbt_payload_dec_free(&d);
            return st < 0 ? st : sbt__fail(SBT_ECORRUPT, "allocation without an ALLOC record");
        }
        uint64_t origin = sbt_payload_arg(&rec, 0), prog = sbt_payload_arg(&rec, 3);
        uint32_t n = rec.n_bytes;
        if (n < sizeof o->name && !memchr(rec.bytes, 0, n)) {
            memcpy(o->name, rec.bytes, n);
            o->name[n] = 0;
        }
        sbt_payload_dec_free(&d);
        uint64_t size;
        if (origin < SBT_CUDA_ALLOC_MEM || origin > SBT_CUDA_ALLOC_VMM)
            return sbt__fail(SBT_ECORRUPT, "allocation of origin %llu", (unsigned long long)origin);
        if (!op->resource || v->resource(v->ctx, op->resource, &size))
            return sbt__fail(SBT_ECORRUPT, "allocation of resource %llu, which is %s",
                             (unsigned long long)op->resource, op->resource ? "live" : "no id");
        if (v->lim.max_alloc && op->bytes > v->lim.max_alloc)
            return sbt__fail(SBT_ELIMIT, "allocation of %llu bytes > the device's %llu",
                             (unsigned long long)op->bytes, (unsigned long long)v->lim.max_alloc);
        o->origin = (uint32_t)origin;
        o->size = op->bytes ? op->bytes : 1;
        if (origin == SBT_CUDA_ALLOC_GLOBAL) {
            if (prog == 0 || prog > v->n_programs)
                return sbt__fail(SBT_EINVAL, "global of program %llu: the trace has %u",
                                 (unsigned long long)prog, v->n_programs);
            if (!o->name[0])
                return sbt__fail(SBT_ECORRUPT, "global without a usable name (%u bytes)", n);
            o->program = (uint32_t)prog;
        }
        return 0;
    }
    case SBT_OP_FREE: {
        uint64_t size;
        if (!v->resource(v->ctx, op->resource, &size))
            return sbt__fail(SBT_EINVAL, "free of resource %llu, which is not allocated",
                             (unsigned long long)op->resource);
        return 0;
    }
    case SBT_OP_COPY: {
        if ((st = access_of(op, SBT_ACCESS_WRITE, &o->dst)) ||
            (st = access_of(op, SBT_ACCESS_READ, &o->src)))
            return st;
        int want_dst = op->subkind == SBT_COPY_H2D || op->subkind == SBT_COPY_D2D;
        int want_src = op->subkind == SBT_COPY_D2H || op->subkind == SBT_COPY_D2D;
        if (op->subkind < SBT_COPY_H2D || op->subkind > SBT_COPY_H2H)
            return sbt__fail(SBT_ECORRUPT, "copy direction %u", op->subkind);
        if (!!o->dst != want_dst || !!o->src != want_src ||
            op->n_access != (uint32_t)(want_dst + want_src))
            return sbt__fail(SBT_ECORRUPT, "copy direction %u with %u ranges", op->subkind,
                             op->n_access);
        if (o->dst && o->src && o->dst->len != o->src->len)
            return sbt__fail(SBT_ECORRUPT, "copy of %llu bytes into %llu",
                             (unsigned long long)o->src->len, (unsigned long long)o->dst->len);
        if (op->subkind == SBT_COPY_H2D && !(op->flags & SBT_OPF_BLOB))
            return sbt__fail(SBT_ECORRUPT, "host-to-device copy without its data");
        return 0;
    }
    case SBT_OP_FILL: {
        if ((st = access_of(op, SBT_ACCESS_WRITE, &o->dst)))
            return st;
        if (!o->dst || op->n_access != 1)
            return sbt__fail(SBT_ECORRUPT, "fill with %u ranges", op->n_access);
        uint64_t elem = 1;
        if ((st = sbt_payload_find(&d, op->payload.data, op->payload.len, SBT_CUDA_FILL, &rec)) ==
            1)
            elem = sbt_payload_arg(&rec, 1);
        sbt_payload_dec_free(&d);
        if (st < 0)
            return st;
        if (elem != 1 && elem != 2 && elem != 4)
            return sbt__fail(SBT_ECORRUPT, "fill of %llu-byte elements", (unsigned long long)elem);
        if (o->dst->len % elem)
            return sbt__fail(SBT_ECORRUPT, "fill of %llu bytes in %llu-byte elements",
                             (unsigned long long)o->dst->len, (unsigned long long)elem);
        o->elem = (uint32_t)elem;
        o->count = o->dst->len / elem;
        return 0;
    }
    case SBT_OP_KERNEL:
        return decode_launch(v, op, o);
    case SBT_OP_EVENT_RECORD:
    case SBT_OP_EVENT_WAIT:
        if (op->obj == 0 || op->obj > SBT_CUDA_MAX_EVENT)
            return sbt__fail(SBT_ECORRUPT, "event id %llu outside 1..%u",
                             (unsigned long long)op->obj, SBT_CUDA_MAX_EVENT);
        return 0;
    case SBT_OP_STREAM_SYNC:
    case SBT_OP_STREAM_CREATE:
    case SBT_OP_STREAM_DESTROY:
        return check_stream(v, op->obj, "stream");
    default:
        return 0;
    }
}

int sbt_cuda_op_decode(const struct sbt_cuda_view *v, const struct sbt_op *op,
                       struct sbt_cuda_op *out)
{
    memset(out, 0, sizeof *out);
    if ((op->flags & SBT_OPF_PAYLOAD) && op->payload.kind != SBT_CUDA_PAYLOAD)
        return sbt__fail(SBT_ECORRUPT, "payload of kind 0x%x in a CUDA op", op->payload.kind);
    struct sbt_op o = *op;
    if (!(op->flags & SBT_OPF_PAYLOAD))
        o.payload = (struct sbt_ext){0, 0, NULL};
    int st = check_stream(v, o.stream, "op on stream");
    if (st)
        return st;
    /* every range the op names lies in a live resource: report() and the copies use them */
    for (uint32_t i = 0; i < o.n_access; i++) {
        const struct sbt_access *a = &o.access[i];
        uint64_t size;
        if (a->mode < SBT_ACCESS_READ || a->mode > SBT_ACCESS_RW)
            return sbt__fail(SBT_ECORRUPT, "access %u of mode %u", i, a->mode);
        if (!v->resource(v->ctx, a->resource, &size))
            return sbt__fail(SBT_EINVAL, "access %u to resource %llu, which is not allocated", i,
                             (unsigned long long)a->resource);
        if (a->offset > size || a->len > size - a->offset)
            return sbt__fail(SBT_ECORRUPT,
                             "access %u: range %llu+%llu outside resource %llu "
                             "(%llu bytes)",
                             i, (unsigned long long)a->offset, (unsigned long long)a->len,
                             (unsigned long long)a->resource, (unsigned long long)size);
    }
    struct sbt_payload_dec d;
    struct sbt_payload_rec rec;
    if ((st = sbt_payload_find(&d, o.payload.data, o.payload.len, SBT_CUDA_CALL, &rec)) == 1) {
        out->api = (uint32_t)sbt_payload_arg(&rec, 0);
        out->pt = sbt_payload_arg(&rec, 1) != 0;
    }
    sbt_payload_dec_free(&d);
    if (st < 0)
        return st;
    if ((st = decode_kind(v, &o, out)) < 0)
        sbt_cuda_op_free(out);
    return st < 0 ? st : 0;
}
