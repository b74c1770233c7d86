/*
 * capture/vk/cap_vk_spirv.c — the little SPIR-V reading the capture needs: which (set, binding)
 * variables a module declares and whether the shader may read or write them (NonWritable /
 * NonReadable decorations, on the variable or on every member of its block), and each entry
 * point's local size (LocalSize / LocalSizeId execution modes, the WorkgroupSize built-in,
 * specialization constants). Accesses then say READ for a `readonly buffer` instead of the
 * conservative RW, which keeps dependency graphs and digests exact. And whether the shader uses
 * buffer device addresses (PhysicalStorageBuffer pointers), and if so whether it may write
 * through them: a store (cooperative-matrix stores too), atomic or memory copy through a
 * pointer that is, or may be, one. A
 * dispatch of such a shader gets accesses to every buffer with an address (cap_vk_submit.c).
 *
 * Reference: SPIR-V Specification 1.6, sections 2.3 (physical layout) and 3 (enumerants).
 * Anything unexpected (bad magic, truncated instruction, ids past the bound) makes the
 * reflection "not ok" and the caller falls back to what the descriptor types say.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_spirv.h"
#include "format/sbt.h"

enum {
    OP_CAPABILITY = 17,
    OP_ENTRY_POINT = 15,
    OP_EXECUTION_MODE = 16,
    OP_TYPE_IMAGE = 25,
    OP_TYPE_ARRAY = 28,
    OP_TYPE_RUNTIME_ARRAY = 29,
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_CONSTANT = 43,
    OP_CONSTANT_COMPOSITE = 44,
    OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_COMPOSITE = 51,
    OP_VARIABLE = 59,
    OP_DECORATE = 71,
    OP_MEMBER_DECORATE = 72,
    OP_EXECUTION_MODE_ID = 331,
    OP_STORE = 62,
    OP_COPY_MEMORY = 63,
    OP_COPY_MEMORY_SIZED = 64,
    OP_ATOMIC_LOAD = 227,
    OP_ATOMIC_STORE = 228,
    OP_ATOMIC_FIRST = 229, /* OpAtomicExchange .. OpAtomicXor: pointer, scope, semantics */
    OP_ATOMIC_LAST = 242,
    OP_ATOMIC_FLAG_TEST_AND_SET = 318,
    OP_ATOMIC_FLAG_CLEAR = 319,
    OP_ATOMIC_FMIN_EXT = 5614,
    OP_ATOMIC_FMAX_EXT = 5615,
    OP_ATOMIC_FADD_EXT = 6035,
    OP_COOPMAT_STORE_KHR = 4458, /* SPV_KHR_cooperative_matrix: pointer, object, layout, ... */
    OP_COOPMAT_STORE_NV = 5360,  /* SPV_NV_cooperative_matrix: pointer, object, stride, major */
    /* SPV_NV_cooperative_vector: pointer, offset, ... (a store, or an atomic accumulation of a
     * matrix or vector into memory) */
    OP_COOPVEC_OUTER_PRODUCT_ACCUMULATE_NV = 5290,
    OP_COOPVEC_REDUCE_SUM_ACCUMULATE_NV = 5291,
    OP_COOPVEC_STORE_NV = 5303,
    CAP_PHYSICAL_STORAGE_BUFFER = 5347,
    SC_PHYSICAL_STORAGE_BUFFER = 5349,
    DEC_SPEC_ID = 1,
    DEC_BUFFER_BLOCK = 3,
    DEC_BUILTIN = 11,
    DEC_NON_WRITABLE = 24,
    DEC_NON_READABLE = 25,
    DEC_BINDING = 33,
    DEC_DESCRIPTOR_SET = 34,
    BUILTIN_WORKGROUP_SIZE = 25,
    MODE_LOCAL_SIZE = 17,
    MODE_LOCAL_SIZE_ID = 38,
    SC_UNIFORM_CONSTANT = 0,
    SC_UNIFORM = 2,
    SC_STORAGE_BUFFER = 12,
    MAX_BOUND = 1u << 22,
};

enum { F_SET = 1, F_BINDING = 2, F_NW = 4, F_NR = 8, F_BLOCKBUF = 16, F_WGSIZE = 32, F_SPEC = 64 };
/* what a result id is, for device-address writes: a pointer into physical storage buffers,
 * another pointer, or neither / not known */
enum { P_NONE, P_OTHER, P_PSB };

struct sid {
    uint16_t op;
    uint8_t flags;
    uint32_t a, b, c; /* operands by opcode: pointer (storage, pointee), array (elem, len),
                         variable (type, storage), constant (value), image (sampled) */
    uint32_t set, binding, spec_id;
    uint32_t n_members, n_nw, n_nr;
    uint32_t comp[3]; /* composite constituents */
};

static uint32_t const_value(const struct sid *ids, uint32_t bound, uint32_t id, uint32_t *spec)
{
    *spec = UINT32_MAX;
    if (id >= bound)
        return 0;
    if (ids[id].flags & F_SPEC)
        *spec = ids[id].spec_id;
    return ids[id].a;
}

/* What a shader that uses PhysicalStorageBuffer pointers may do through them: READ, or RW when
 * it stores, copies or applies an atomic through a pointer that is one or whose kind is not
 * known. A value's kind comes from its result type: every instruction whose first operand is a
 * pointer type declares a result of that type (others that happen to name a pointer type there
 * only make the answer more conservative). */
static uint32_t address_access(const uint32_t *code, size_t n_words, const struct sid *ids,
                               uint32_t bound)
{
    uint8_t *kind = calloc(bound, 1);
    if (!kind)
        return SBT_ACCESS_RW;
    for (size_t i = 5; i < n_words;) {
        uint32_t wc = code[i] >> 16;
        const uint32_t *w = code + i;
        if (wc >= 3 && w[1] < bound && ids[w[1]].op == OP_TYPE_POINTER && w[2] < bound)
            kind[w[2]] = ids[w[1]].a == SC_PHYSICAL_STORAGE_BUFFER ? P_PSB : P_OTHER;
        i += wc ? wc : 1;
    }
    uint32_t mode = SBT_ACCESS_READ;
    for (size_t i = 5; i < n_words && mode != SBT_ACCESS_RW;) {
        uint32_t wc = code[i] >> 16, op = code[i] & 0xffff;
        const uint32_t *w = code + i;
        uint32_t ptr = UINT32_MAX; /* the pointer written through */
        if ((op == OP_STORE || op == OP_COPY_MEMORY || op == OP_COPY_MEMORY_SIZED ||
             op == OP_ATOMIC_STORE || op == OP_ATOMIC_FLAG_CLEAR || op == OP_COOPMAT_STORE_KHR ||
             op == OP_COOPMAT_STORE_NV || op == OP_COOPVEC_STORE_NV ||
             op == OP_COOPVEC_OUTER_PRODUCT_ACCUMULATE_NV ||
             op == OP_COOPVEC_REDUCE_SUM_ACCUMULATE_NV) &&
            wc >= 2)
            ptr = w[1];
        else if (((op >= OP_ATOMIC_FIRST && op <= OP_ATOMIC_LAST) ||
                  op == OP_ATOMIC_FLAG_TEST_AND_SET || op == OP_ATOMIC_FMIN_EXT ||
                  op == OP_ATOMIC_FMAX_EXT || op == OP_ATOMIC_FADD_EXT) &&
                 wc >= 4)
            ptr = w[3];
        if (ptr != UINT32_MAX && (ptr >= bound || kind[ptr] != P_OTHER))
            mode = SBT_ACCESS_RW;
        i += wc ? wc : 1;
    }
    free(kind);
    return mode;
}

void cap_spirv_reflect(const uint32_t *code, size_t n_words, struct cap_refl *refl)
{
    memset(refl, 0, sizeof *refl);
    if (!code || n_words < 5 || code[0] != 0x07230203u || code[3] == 0 || code[3] > MAX_BOUND)
        return;
    uint32_t bound = code[3];
    struct sid *ids = calloc(bound, sizeof *ids);
    uint32_t *entry_fn = NULL;
    if (!ids)
        return;
    uint32_t n_entry = 0, cap_entry = 0, wg_id = 0;
    int ok = 1, psb = 0;
    /* pass: collect ids, entry points, decorations */
    for (size_t i = 5; i < n_words && ok;) {
        uint32_t wc = code[i] >> 16, op = code[i] & 0xffff;
        if (wc == 0 || i + wc > n_words) {
            ok = 0;
            break;
        }
        const uint32_t *w = code + i;
#define ID_OK(x) ((x) < bound)
        switch (op) {
        case OP_CAPABILITY:
            if (wc >= 2 && w[1] == CAP_PHYSICAL_STORAGE_BUFFER)
                psb = 1;
            break;
        case OP_ENTRY_POINT: {
            if (wc < 4)
                break;
            if (n_entry == cap_entry) {
                cap_entry = cap_entry ? cap_entry * 2 : 4;
                struct cap_refl_entry *e = realloc(refl->e, cap_entry * sizeof *e);
                uint32_t *f = realloc(entry_fn, cap_entry * sizeof *f);
                if (e)
                    refl->e = e;
                if (f)
                    entry_fn = f;
                if (!e || !f) {
                    ok = 0;
                    break;
                }
            }
            struct cap_refl_entry *e = &refl->e[n_entry];
            memset(e, 0, sizeof *e);
            size_t max = (wc - 3) * 4;
            const char *s = (const char *)(w + 3);
            size_t len = strnlen(s, max);
            if (len >= sizeof e->name)
                len = sizeof e->name - 1;
            memcpy(e->name, s, len);
            e->local[0] = e->local[1] = e->local[2] = 1;
            e->spec_id[0] = e->spec_id[1] = e->spec_id[2] = UINT32_MAX;
            entry_fn[n_entry++] = w[2];
            break;
        }
        case OP_TYPE_IMAGE:
            if (wc >= 9 && ID_OK(w[1]))
                ids[w[1]].op = (uint16_t)op, ids[w[1]].a = w[7];
            break;
        case OP_TYPE_ARRAY:
            if (wc >= 4 && ID_OK(w[1]))
                ids[w[1]].op = (uint16_t)op, ids[w[1]].a = w[2], ids[w[1]].b = w[3];
            break;
        case OP_TYPE_RUNTIME_ARRAY:
            if (wc >= 3 && ID_OK(w[1]))
                ids[w[1]].op = (uint16_t)op, ids[w[1]].a = w[2];
            break;
        case OP_TYPE_STRUCT:
            if (wc >= 2 && ID_OK(w[1]))
                ids[w[1]].op = (uint16_t)op, ids[w[1]].n_members = wc - 2;
            break;
        case OP_TYPE_POINTER:
            if (wc >= 4 && ID_OK(w[1]))
                ids[w[1]].op = (uint16_t)op, ids[w[1]].a = w[2], ids[w[1]].b = w[3];
            psb |= wc >= 4 && w[2] == SC_PHYSICAL_STORAGE_BUFFER;
            break;
        case OP_CONSTANT:
        case OP_SPEC_CONSTANT:
            if (wc >= 4 && ID_OK(w[2]))
                ids[w[2]].op = (uint16_t)op, ids[w[2]].a = w[3];
            break;
        case OP_CONSTANT_COMPOSITE:
        case OP_SPEC_CONSTANT_COMPOSITE:
            if (wc >= 6 && ID_OK(w[2])) {
                ids[w[2]].op = (uint16_t)op;
                for (int k = 0; k < 3; k++)
                    ids[w[2]].comp[k] = w[3 + k];
            }
            break;
        case OP_VARIABLE:
            if (wc >= 4 && ID_OK(w[2]))
                ids[w[2]].op = (uint16_t)op, ids[w[2]].a = w[1], ids[w[2]].b = w[3];
            break;
        case OP_DECORATE:
            if (wc < 3 || !ID_OK(w[1]))
                break;
            switch (w[2]) {
            case DEC_DESCRIPTOR_SET:
                if (wc >= 4)
                    ids[w[1]].flags |= F_SET, ids[w[1]].set = w[3];
                break;
            case DEC_BINDING:
                if (wc >= 4)
                    ids[w[1]].flags |= F_BINDING, ids[w[1]].binding = w[3];
                break;
            case DEC_NON_WRITABLE:
                ids[w[1]].flags |= F_NW;
                break;
            case DEC_NON_READABLE:
                ids[w[1]].flags |= F_NR;
                break;
            case DEC_BUFFER_BLOCK:
                ids[w[1]].flags |= F_BLOCKBUF;
                break;
            case DEC_SPEC_ID:
                if (wc >= 4)
                    ids[w[1]].flags |= F_SPEC, ids[w[1]].spec_id = w[3];
                break;
            case DEC_BUILTIN:
                if (wc >= 4 && w[3] == BUILTIN_WORKGROUP_SIZE)
                    ids[w[1]].flags |= F_WGSIZE, wg_id = w[1];
                break;
            }
            break;
        case OP_MEMBER_DECORATE:
            if (wc >= 4 && ID_OK(w[1])) {
                if (w[3] == DEC_NON_WRITABLE)
                    ids[w[1]].n_nw++;
                else if (w[3] == DEC_NON_READABLE)
                    ids[w[1]].n_nr++;
            }
            break;
        }
        i += wc;
    }
    /* execution modes need the entry points: second pass */
    for (size_t i = 5; i < n_words && ok;) {
        uint32_t wc = code[i] >> 16, op = code[i] & 0xffff;
        const uint32_t *w = code + i;
        if ((op == OP_EXECUTION_MODE || op == OP_EXECUTION_MODE_ID) && wc >= 6) {
            for (uint32_t k = 0; k < n_entry; k++) {
                if (entry_fn[k] != w[1])
                    continue;
                struct cap_refl_entry *e = &refl->e[k];
                for (int d = 0; d < 3; d++) {
                    if (w[2] == MODE_LOCAL_SIZE)
                        e->local[d] = w[3 + d];
                    else if (w[2] == MODE_LOCAL_SIZE_ID)
                        e->local[d] = const_value(ids, bound, w[3 + d], &e->spec_id[d]);
                }
            }
        }
        i += wc;
    }
    refl->n_e = n_entry;
    if (psb && ok)
        refl->addresses = address_access(code, n_words, ids, bound);
    if (wg_id && ids[wg_id].op) {
        refl->has_wgsize = 1;
        for (int d = 0; d < 3; d++)
            refl->wg[d] = const_value(ids, bound, ids[wg_id].comp[d], &refl->wg_spec[d]);
    }
    /* descriptor variables */
    for (uint32_t v = 0; v < bound && ok; v++) {
        if (ids[v].op != OP_VARIABLE || !(ids[v].flags & F_SET) || !(ids[v].flags & F_BINDING))
            continue;
        uint32_t storage = ids[v].b, t = ids[v].a, array = 1;
        if (ID_OK(t) && ids[t].op == OP_TYPE_POINTER)
            t = ids[t].b;
        for (int depth = 0; depth < 4 && ID_OK(t); depth++) {
            if (ids[t].op == OP_TYPE_ARRAY) {
                uint32_t spec;
                array *= const_value(ids, bound, ids[t].b, &spec);
                t = ids[t].a;
            } else if (ids[t].op == OP_TYPE_RUNTIME_ARRAY) {
                array = 0;
                t = ids[t].a;
            } else {
                break;
            }
        }
        int nw = ids[v].flags & F_NW, nr = ids[v].flags & F_NR;
        uint32_t access = SBT_ACCESS_RW;
        if (ID_OK(t) && ids[t].op == OP_TYPE_STRUCT && ids[t].n_members) {
            nw = nw || ids[t].n_nw >= ids[t].n_members;
            nr = nr || ids[t].n_nr >= ids[t].n_members;
            if (storage == SC_UNIFORM && !(ids[t].flags & F_BLOCKBUF))
                nw = 1; /* a uniform block */
        } else if (ID_OK(t) && ids[t].op == OP_TYPE_IMAGE) {
            if (ids[t].a != 2)
                nw = 1; /* sampled image / uniform texel buffer */
        } else if (storage == SC_UNIFORM_CONSTANT) {
            nw = 1; /* samplers and the like */
        }
        if (nw)
            access = SBT_ACCESS_READ;
        else if (nr)
            access = SBT_ACCESS_WRITE;
        struct cap_refl_binding *nb = realloc(refl->b, (refl->n_b + 1) * sizeof *nb);
        if (!nb) {
            ok = 0;
            break;
        }
        refl->b = nb;
        refl->b[refl->n_b++] =
            (struct cap_refl_binding){ids[v].set, ids[v].binding, access, storage, array};
    }
#undef ID_OK
    free(ids);
    free(entry_fn);
    refl->ok = ok;
    if (!ok) {
        free(refl->b);
        refl->b = NULL;
        refl->n_b = 0;
    }
}

void cap_refl_free(struct cap_refl *refl)
{
    free(refl->b);
    free(refl->e);
    memset(refl, 0, sizeof *refl);
}

static uint32_t spec_u32(const VkSpecializationInfo *spec, uint32_t id, uint32_t dflt)
{
    if (!spec || id == UINT32_MAX || !spec->pMapEntries || !spec->pData)
        return dflt;
    for (uint32_t i = 0; i < spec->mapEntryCount; i++) {
        const VkSpecializationMapEntry *m = &spec->pMapEntries[i];
        if (m->constantID == id && m->size >= 4 && m->offset + 4 <= spec->dataSize) {
            uint32_t v;
            memcpy(&v, (const uint8_t *)spec->pData + m->offset, 4);
            return v;
        }
    }
    return dflt;
}

void cap_spirv_local_size(const struct cap_refl *refl, const char *entry,
                          const VkSpecializationInfo *spec, uint32_t out[3])
{
    out[0] = out[1] = out[2] = 0;
    if (refl->has_wgsize) {
        for (int d = 0; d < 3; d++)
            out[d] = spec_u32(spec, refl->wg_spec[d], refl->wg[d]);
        return;
    }
    for (uint32_t i = 0; i < refl->n_e; i++) {
        if (strcmp(refl->e[i].name, entry))
            continue;
        for (int d = 0; d < 3; d++)
            out[d] = spec_u32(spec, refl->e[i].spec_id[d], refl->e[i].local[d]);
        return;
    }
}
