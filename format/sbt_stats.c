/*
 * format/sbt_stats.c — per-kind counts and the kernel table over a range of ops, in one pass
 * with memory proportional to the number of distinct kernels and names.
 */
#include <stdlib.h>
#include <string.h>

#include "format/sbt_int.h"

uint64_t sbt_op_duration(const struct sbt_op *op)
{
    if (op->flags & SBT_OPF_DEV_TIME)
        return op->dev_end - op->dev_begin;
    return op->host_end - op->host_begin;
}

static int cmp_total(const void *a, const void *b)
{
    const struct sbt_kstat *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

int sbt_stats_compute(sbt_reader *r, const struct sbt_range *range, struct sbt_stats **out)
{
    *out = NULL;
    struct sbt_stats *s = sbt__calloc(1, sizeof *s);
    /* launches group by kernel when the trace names one (two pipelines dispatched by the same
     * API call are two rows), else by op name; slot: name ids, then kernel ids */
    uint32_t n_names = sbt_reader_n_strings(r) + 1, n_kern;
    sbt_reader_kernels(r, &n_kern);
    int32_t *slot = sbt__malloc((n_names + n_kern + 1) * sizeof *slot);
    sbt_cursor *c = NULL;
    int st;
    if (!s || !slot) {
        st = sbt__fail(SBT_ENOMEM, "out of memory for statistics");
        goto fail;
    }
    memset(slot, 0xff, (n_names + n_kern + 1) * sizeof *slot);
    if ((st = sbt_cursor_open(r, range, &c)))
        goto fail;
    uint32_t cap = 0;
    const struct sbt_op *op;
    s->t_min = UINT64_MAX;
    while ((st = sbt_cursor_next(c, &op)) == 1) {
        uint64_t b, e;
        s->n_ops++;
        s->by_kind[op->kind < SBT_OP__COUNT ? op->kind : 0]++;
        sbt_op_span(op, &b, &e);
        if (b < s->t_min)
            s->t_min = b;
        if (e > s->t_max)
            s->t_max = e;
        if (op->kind == SBT_OP_COPY && op->subkind < 5)
            s->copy_bytes[op->subkind] += op->bytes;
        if (op->kind == SBT_OP_FILL)
            s->fill_bytes += op->bytes;
        if (op->kind != SBT_OP_KERNEL || op->name >= n_names)
            continue;
        int by_kernel = (op->flags & SBT_OPF_KERNEL) && op->kernel >= 1 && op->kernel <= n_kern;
        int32_t *sl = by_kernel ? &slot[n_names + op->kernel] : &slot[op->name];
        uint64_t d = sbt_op_duration(op);
        struct sbt_kstat *k;
        if (*sl < 0) {
            if (s->n_kernels == cap) {
                cap = cap ? cap * 2 : 64;
                struct sbt_kstat *nk = sbt__realloc(s->kernels, cap * sizeof *nk);
                if (!nk) {
                    st = sbt__fail(SBT_ENOMEM, "out of memory for the kernel table");
                    goto fail;
                }
                s->kernels = nk;
            }
            *sl = (int32_t)s->n_kernels;
            k = &s->kernels[s->n_kernels++];
            memset(k, 0, sizeof *k);
            k->name = by_kernel ? sbt_reader_kernel(r, op->kernel)->name : op->name;
            k->kernel = by_kernel ? op->kernel : 0;
            k->min_ns = UINT64_MAX;
            memcpy(k->grid, op->grid, sizeof k->grid);
            memcpy(k->block, op->block, sizeof k->block);
        }
        k = &s->kernels[*sl];
        k->count++;
        k->total_ns += d;
        if (d < k->min_ns)
            k->min_ns = d;
        if (d > k->max_ns)
            k->max_ns = d;
        if (memcmp(k->grid, op->grid, sizeof k->grid) ||
            memcmp(k->block, op->block, sizeof k->block))
            k->geom_varies = 1;
    }
    if (st < 0)
        goto fail;
    if (!s->n_ops)
        s->t_min = 0;
    if (s->n_kernels)
        qsort(s->kernels, s->n_kernels, sizeof *s->kernels, cmp_total);
    sbt_cursor_close(c);
    sbt__free(slot);
    *out = s;
    return SBT_OK;
fail:
    sbt_cursor_close(c);
    sbt__free(slot);
    sbt_stats_free(s);
    return st;
}

void sbt_stats_free(struct sbt_stats *s)
{
    if (!s)
        return;
    sbt__free(s->kernels);
    sbt__free(s);
}
