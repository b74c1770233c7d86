/*
 * scheduler/sched_dot.c — the dependency graph of a range as Graphviz DOT, for
 * `reprise export -f dot`. A graph visitor collects the range's nodes and the edges between
 * them (at most max_nodes, so memory stays small), then prints one cluster per stream and the
 * edges labelled with their reason. Late edges (wait before signal) are drawn dashed, broken ones
 * (cycles, waits never satisfied) red.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

struct dnode {
    uint64_t seq;
    uint32_t stream, kind, name;
};

struct dedge {
    uint64_t from, to;
    uint32_t reason, flags;
};

struct dot {
    const struct sbt_range *range;
    struct sbt_map in; /* seqs of the range's nodes */
    struct dnode *n;
    struct dedge *e;
    uint64_t n_n, cap_n, n_e, cap_e, n_outside;
};

static int dot_node(void *ctx, struct sched_node *node)
{
    struct dot *d = ctx;
    const struct sbt_op *op = node->op;
    if (!sched_range_contains(d->range, op))
        return 0;
    int st;
    if ((st = sched__grow64((void **)&d->n, sizeof *d->n, &d->cap_n, d->n_n + 1)))
        return st;
    d->n[d->n_n++] = (struct dnode){op->seq, op->stream, op->kind, op->name};
    if (!sbt_map_put(&d->in, op->seq, NULL))
        return sched__fail(SBT_ENOMEM, "out of memory writing DOT");
    for (uint32_t i = 0; i < node->n_in; i++) {
        const struct sched_edge *e = &node->in[i];
        if (!sbt_map_get(&d->in, e->from)) {
            d->n_outside++;
            continue;
        }
        if ((st = sched__grow64((void **)&d->e, sizeof *d->e, &d->cap_e, d->n_e + 1)))
            return st;
        d->e[d->n_e++] = (struct dedge){e->from, op->seq, e->reason, e->flags};
    }
    return 0;
}

static int cmp_dnode(const void *a, const void *b)
{
    const struct dnode *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void dot_str(FILE *f, const char *s, size_t max)
{
    size_t n = 0;
    for (; s && *s && n < max; s++, n++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    if (s && *s)
        fputs("...", f);
}

int sched_dot_write(sbt_reader *r, const struct sbt_range *range, uint64_t max_nodes, FILE *out)
{
    if (!max_nodes)
        max_nodes = 20000;
    /* count first, so that a refusal writes nothing */
    uint64_t lo, hi, count = 0;
    sched_range_bounds(r, range, &lo, &hi);
    sbt_cursor *c = NULL;
    struct sbt_range cr = {.has_seq = 1, .seq_begin = lo, .seq_end = hi};
    int st = sbt_cursor_open(r, &cr, &c);
    if (st < 0)
        return sched__fail_sbt(st);
    const struct sbt_op *op;
    int rc = 0;
    while (count <= max_nodes && (rc = sbt_cursor_next(c, &op)) > 0)
        count += sched_range_contains(range, op);
    sbt_cursor_close(c);
    if (rc < 0)
        return sched__fail_sbt(rc);
    if (count > max_nodes)
        return sched__fail(SBT_ELIMIT,
                           "the range has more than %" PRIu64 " ops, too many to draw; choose a "
                           "smaller one with --ops A:B, --time-range A:B or --stream S",
                           max_nodes);

    struct dot d = {.range = range};
    struct sched_visitor v = {.node = dot_node, .ctx = &d};
    st = sched_graph_run(r, hi, NULL, &v, NULL);
    if (st < 0)
        goto out;
    st = 0;
    qsort(d.n, (size_t)d.n_n, sizeof *d.n, cmp_dnode);
    fprintf(out, "digraph reprise {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n"
                 "  edge [fontsize=9];\n");
    if (d.n_outside)
        fprintf(out, "  // %" PRIu64 " edges from ops outside the range are not drawn\n",
                d.n_outside);
    for (uint64_t i = 0; i < d.n_n; i++) {
        if (i == 0 || d.n[i].stream != d.n[i - 1].stream) {
            if (i)
                fprintf(out, "  }\n");
            const struct sbt_stream *s = sbt_reader_stream(r, d.n[i].stream);
            fprintf(out, "  subgraph cluster_s%u {\n    label=\"stream %u", d.n[i].stream,
                    d.n[i].stream);
            if (s && s->name) {
                fputs(": ", out);
                dot_str(out, sbt_reader_string(r, s->name), 60);
            }
            fprintf(out, "\";\n");
        }
        fprintf(out, "    n%" PRIu64 " [label=\"%" PRIu64 " %s", d.n[i].seq, d.n[i].seq,
                sbt_op_kind_name(d.n[i].kind));
        if (d.n[i].name) {
            fputs("\\n", out);
            dot_str(out, sbt_reader_string(r, d.n[i].name), 40);
        }
        fprintf(out, "\"];\n");
    }
    if (d.n_n)
        fprintf(out, "  }\n");
    for (uint64_t i = 0; i < d.n_e; i++) {
        const struct dedge *e = &d.e[i];
        fprintf(out, "  n%" PRIu64 " -> n%" PRIu64 " [label=\"%s\"%s%s];\n", e->from, e->to,
                sched_dep_name(e->reason), e->flags & SCHED_EDGE_LATE ? ", style=dashed" : "",
                e->flags & SCHED_EDGE_BROKEN ? ", color=red" : "");
    }
    fprintf(out, "}\n");
    if (ferror(out))
        st = sched__fail(SBT_EIO, "writing DOT failed");
out:
    sbt_map_free(&d.in);
    sched__free(d.n);
    sched__free(d.e);
    return st;
}
