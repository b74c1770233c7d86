/*
 * tests/fuzz/fuzz_cuda_payload.c — the CUDA replay decoder (sbt_cuda_op_decode and
 * sbt_cuda_layout_decode, format/sbt_cuda.h) on arbitrary ops, with no device: any outcome is
 * fine but a crash, a leak, a failure without a message, or a success that breaks what the
 * replay backend relies on (every parameter, relocation, copy and fill range inside its
 * buffer or resource, geometry inside the limits). The payload bytes also go through
 * sbt_cuda_image_size_in (a program image must end inside its blob).
 *
 * Input: a 24-byte header (little-endian) | n_access x 6 bytes | a kernel layout ext |
 * the op's payload:
 *   kind u8, subkind u8, flags u8 (bit 0 KERNEL, 1 BLOB, 2 PAYLOAD), kernel u8, grid x u16,
 *   block x u16, shmem u32, bytes u32, resource u8, obj u8, n_access u8 (<= 3), stream u8,
 *   ext_len u16, pad u16
 *   access: resource u8, offset u16, len u16, mode u8
 * Kernel 1 has the fuzzed layout, kernel 2 saxpy's, kernel 3 none. Resources 1 (4096 bytes)
 * and 2 (16 bytes) are live. Seeds: tests/fuzz/seeds/cuda_payload (one per op kind).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/sbt.h"
#include "format/sbt_cuda.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int live(void *ctx, uint64_t id, uint64_t *size)
{
    (void)ctx;
    if (id == 1)
        *size = 4096;
    else if (id == 2)
        *size = 16;
    return id == 1 || id == 2;
}

static uint32_t rd(const uint8_t *p, int n)
{
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void need(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 24)
        return 0;
    struct sbt_op op;
    memset(&op, 0, sizeof op);
    op.kind = data[0] % SBT_OP__COUNT;
    op.subkind = data[1] % 6;
    op.flags = (data[2] & 1 ? SBT_OPF_KERNEL : 0) | (data[2] & 2 ? SBT_OPF_BLOB : 0) |
               (data[2] & 4 ? SBT_OPF_PAYLOAD : 0);
    op.kernel = data[3];
    op.grid[0] = rd(data + 4, 2), op.grid[1] = op.grid[2] = 1;
    op.block[0] = rd(data + 6, 2), op.block[1] = op.block[2] = 1;
    op.shmem = rd(data + 8, 4);
    op.bytes = rd(data + 12, 4);
    op.resource = data[16];
    op.obj = data[17];
    op.n_access = data[18] % 4;
    op.stream = data[19];
    size_t ext_len = rd(data + 20, 2), pos = 24;
    struct sbt_access acc[3];
    for (uint32_t i = 0; i < op.n_access; i++, pos += 6) {
        if (pos + 6 > size)
            return 0;
        acc[i] = (struct sbt_access){data[pos], rd(data + pos + 1, 2), rd(data + pos + 3, 2),
                                     data[pos + 5]};
    }
    op.access = acc;
    if (ext_len > size - pos)
        return 0;
    struct sbt_kernel row = {1, 1, 1, {SBT_CUDA_EXT_KERNEL, (uint32_t)ext_len, data + pos}};
    pos += ext_len;
    op.payload = (struct sbt_ext){SBT_CUDA_PAYLOAD, (uint32_t)(size - pos), data + pos};

    static uint32_t saxpy_off[4] = {0, 8, 16, 24}, saxpy_size[4] = {4, 8, 8, 4};
    struct sbt_cuda_layout layouts[3] = {{0}, {1, 4, saxpy_off, saxpy_size, 28}, {0}};
    int st = sbt_cuda_layout_decode(&row, &layouts[0]);
    need(st == 0 || (st < 0 && strcmp(sbt_errmsg(), "no error")));
    for (uint32_t i = 0; layouts[0].known && i < layouts[0].n_params; i++)
        need(layouts[0].off[i] + (uint64_t)layouts[0].size[i] <= SBT_CUDA_MAX_PARAM_BYTES);
    struct sbt_cuda_view v = {
        layouts,
        3,
        2,
        4,
        live,
        NULL,
        {{0x7fffffff, 65535, 65535}, {1024, 1024, 64}, 1024, 48 << 10, 1 << 30}};
    struct sbt_cuda_op o;
    st = sbt_cuda_op_decode(&v, &op, &o);
    if (st < 0) {
        need(strcmp(sbt_errmsg(), "no error") != 0);
    } else {
        /* what replay_cuda.c relies on after a successful decode */
        need(op.stream >= 1 && op.stream <= 4);
        for (uint32_t i = 0; i < op.n_access; i++) {
            uint64_t rs = 0;
            need(live(NULL, acc[i].resource, &rs) && acc[i].offset + acc[i].len <= rs);
        }
        if (op.kind == SBT_OP_KERNEL) {
            need(op.kernel >= 1 && op.kernel <= 3 && o.param_len <= SBT_CUDA_MAX_PARAM_BYTES);
            const struct sbt_cuda_layout *l = &layouts[op.kernel - 1];
            need(op.grid[0] >= 1 && op.block[0] >= 1 && op.block[0] <= 1024);
            for (uint32_t i = 0; o.form == 0 && i < l->n_params; i++)
                need(l->off[i] + (uint64_t)l->size[i] <= o.param_len);
            for (uint32_t i = 0; i < o.n_relocs; i++) {
                uint64_t rs = 0;
                need(o.relocs[i].off + 8 <= o.param_len);
                need(live(NULL, o.relocs[i].resource, &rs) && o.relocs[i].res_off < rs);
                memset(o.params + o.relocs[i].off, 0xab, 8); /* as the relocation does */
            }
        }
        if (op.kind == SBT_OP_FILL)
            need(o.dst && o.count * o.elem == o.dst->len && o.elem >= 1 && o.elem <= 4);
        if (op.kind == SBT_OP_COPY && o.dst && o.src)
            need(o.dst->len == o.src->len);
        if (op.kind == SBT_OP_ALLOC)
            need(o.size >= 1 && strlen(o.name) < sizeof o.name);
    }
    sbt_cuda_op_free(&o);
    sbt_cuda_layout_free(&layouts[0]);
    /* the payload bytes as a program image (replay's check before cuModuleLoadData) */
    uint32_t kind;
    need(sbt_cuda_image_size_in(data + pos, size - pos, &kind) <= size - pos);
    return 0;
}
