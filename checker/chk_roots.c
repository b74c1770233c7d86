/*
 * checker/chk_roots.c — the first divergence: the reference trace walked in dependency order
 * (the scheduler's topological delivery) with a set of tainted byte ranges per resource. The
 * rules (chk.h) treat a kernel's writes as may-writes: what it left in its ranges can be what
 * made its digest differ, and an unverified kernel never clears taint.
 *
 * A second set of ranges holds the bytes whose value no comparison vouched for: written by ops
 * whose outputs were not compared (a capture without --digests digests only what the program
 * read back), with the earliest such writer. A mismatching op that read some of them is the
 * first divergence observed but not a located root: the report says the root lies between that
 * writer and the op, instead of claiming that its inputs matched.
 *
 * Why ranges and not the scheduler's RAW edges: the graph leaves out hazards between ops of the
 * same stream (stream order implies them), but a root cause is about data: "did any byte this op
 * read come from a mismatched op?". The ranges answer that for every producer, same stream or
 * not, and cost memory only for tainted bytes. Tainted ranges are exact (not page-rounded).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"
#include "format/sbt_iset.h"
#include "format/sbt_map.h"
#include "scheduler/sched.h"

struct seq_idx {
    uint64_t seq;
    uint32_t idx;
};

/* Bytes of one resource that no comparison vouched for, and the earliest op that wrote them. */
struct unk {
    struct sbt_iset set;
    uint64_t first;
};

struct roots {
    const struct chk_status *st;
    struct chk_report *rep;
    sbt_reader *r;
    struct sbt_map sets;    /* resource -> its tainted ranges (struct sbt_iset *) */
    struct sbt_map unks;    /* resource -> struct unk * */
    struct seq_idx *by_seq; /* listed findings sorted by seq (EXTRA left out) */
    uint32_t n_by_seq;
    int err;
};

/* The tainted ranges of res (created when create), or NULL (R->err set when out of memory). */
static struct sbt_iset *set_get(struct roots *R, uint64_t res, int create)
{
    struct sbt_iset *s = sbt_map_getp(&R->sets, res);
    if (s || !create)
        return s;
    if (!(s = chk__calloc(1, sizeof *s)) || sbt_map_putp(&R->sets, res, s)) {
        free(s);
        R->err = chk__fail(SBT_ENOMEM, "out of memory for tainted ranges");
        return NULL;
    }
    return s;
}

/* The unvouched bytes of res (created when create), or NULL (R->err set when out of memory). */
static struct unk *unk_get(struct roots *R, uint64_t res, int create)
{
    struct unk *u = sbt_map_getp(&R->unks, res);
    if (u || !create)
        return u;
    if (!(u = chk__calloc(1, sizeof *u)) || sbt_map_putp(&R->unks, res, u)) {
        free(u);
        R->err = chk__fail(SBT_ENOMEM, "out of memory for unverified ranges");
        return NULL;
    }
    u->first = UINT64_MAX;
    return u;
}

/* index into by_seq of the first listed finding of seq, or n_by_seq */
static uint32_t finding_of(struct roots *R, uint64_t seq)
{
    uint32_t a = 0, b = R->n_by_seq;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (R->by_seq[m].seq < seq)
            a = m + 1;
        else
            b = m;
    }
    return a < R->n_by_seq && R->by_seq[a].seq == seq ? a : R->n_by_seq;
}

static int node(void *ctx, struct sched_node *n)
{
    struct roots *R = ctx;
    const struct sbt_op *op = n->op;
    uint32_t st = chk__status_get(R->st, op->seq);
    /* a kernel's writes are may-writes: bytes of its ranges it did not write keep what they
     * held, and its digest covers them too */
    int may = op->kind == SBT_OP_KERNEL;
    int in = 0, in_w = 0;
    uint64_t unk_first = UINT64_MAX; /* the earliest writer of unvouched bytes it read */
    for (uint32_t i = 0; i < op->n_access; i++) {
        const struct sbt_access *a = &op->access[i];
        if (!a->len)
            continue;
        int rd = (a->mode & SBT_ACCESS_READ) != 0, wr = may && (a->mode & SBT_ACCESS_WRITE);
        if (!rd && !wr)
            continue;
        struct unk *u = unk_get(R, a->resource, 0);
        if (u && u->first < unk_first && sbt_iset_overlaps(&u->set, a->offset, a->offset + a->len))
            unk_first = u->first;
        if (in)
            continue;
        struct sbt_iset *s = set_get(R, a->resource, 0);
        if (!s || !sbt_iset_overlaps(s, a->offset, a->offset + a->len))
            continue;
        if (rd)
            in = 1;
        else
            in_w = 1;
    }
    /* what it does to the taint of its write ranges: 1 taint, -1 clear, 0 leave.
     * Known-flaky ops vary as expected: they taint and are no roots. */
    int out = st == CHK_ST_MISMATCH || st == CHK_ST_FLAKY ? 1
              : st == CHK_ST_MATCHED                      ? -1
              : in                                        ? 1
              : may                                       ? 0
                                                          : -1;
    if (st == CHK_ST_MISMATCH && !in && !in_w) {
        struct chk_report *rep = R->rep;
        rep->n_roots++;
        /* every listed finding of this op is a root */
        uint32_t k0 = finding_of(R, op->seq);
        struct chk_finding *f = NULL;
        for (uint32_t k = k0; k < R->n_by_seq && R->by_seq[k].seq == op->seq; k++) {
            struct chk_finding *g = &rep->findings[R->by_seq[k].idx];
            if (g->cls == CHK_TIMING)
                continue;
            g->is_root = 1;
            if (!f)
                f = g;
        }
        if (!rep->has_first) {
            rep->has_first = 1;
            if (f) {
                rep->first = *f;
            } else {
                memset(&rep->first, 0, sizeof rep->first);
                rep->first.cls = CHK_DIVERGENT;
                rep->first.seq = op->seq;
                rep->first.seq_run = UINT64_MAX;
                rep->first.op_kind = op->kind;
                rep->first.stream = op->stream;
                chk__op_name(R->r, op, rep->first.name, sizeof rep->first.name);
                snprintf(rep->first.note, sizeof rep->first.note,
                         "not in the listed findings (raise max_findings for details)");
            }
            rep->first.is_root = 1;
            /* what it read was never compared: the root may lie before it */
            rep->first_after = unk_first;
        }
    }
    /* what it does to the unvouched bytes: compared outputs vouch for theirs; outputs not
     * compared are unvouched from this op on (or from the writer of what it read) */
    int vouched = st == CHK_ST_MATCHED || st == CHK_ST_MISMATCH || st == CHK_ST_FLAKY;
    uint64_t from = op->seq < unk_first ? op->seq : unk_first;
    for (uint32_t i = 0; i < op->n_access; i++) {
        const struct sbt_access *a = &op->access[i];
        if (!(a->mode & SBT_ACCESS_WRITE) || !a->len)
            continue;
        struct unk *u = unk_get(R, a->resource, !vouched);
        if (R->err)
            return R->err;
        if (!u)
            continue;
        int e = vouched ? sbt_iset_sub(&u->set, a->offset, a->offset + a->len)
                        : sbt_iset_add(&u->set, a->offset, a->offset + a->len);
        if (e)
            return chk__fail_sbt(e);
        if (!vouched && from < u->first)
            u->first = from;
    }
    for (uint32_t i = 0; i < op->n_access; i++) {
        const struct sbt_access *a = &op->access[i];
        if (!(a->mode & SBT_ACCESS_WRITE) || !a->len)
            continue;
        if (!out)
            break;
        struct sbt_iset *s = set_get(R, a->resource, out > 0);
        if (R->err)
            return R->err;
        if (!s)
            continue;
        int e = out > 0 ? sbt_iset_add(s, a->offset, a->offset + a->len)
                        : sbt_iset_sub(s, a->offset, a->offset + a->len);
        if (e)
            return chk__fail_sbt(e);
    }
    return 0;
}

static int cmp_by_seq(const void *a, const void *b)
{
    const struct seq_idx *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int chk__roots(sbt_reader *ref, const struct chk_status *st, struct chk_report *rep)
{
    if (!st->n_mismatch)
        return 0;
    struct roots R = {.st = st, .rep = rep, .r = ref};
    rep->first_after = UINT64_MAX;
    R.by_seq = chk__calloc(rep->n_findings + 1, sizeof *R.by_seq);
    if (!R.by_seq)
        return chk__fail(SBT_ENOMEM, "out of memory for the first-divergence pass");
    for (uint32_t i = 0; i < rep->n_findings; i++)
        if (rep->findings[i].cls != CHK_EXTRA)
            R.by_seq[R.n_by_seq++] = (struct seq_idx){rep->findings[i].seq, i};
    qsort(R.by_seq, R.n_by_seq, sizeof *R.by_seq, cmp_by_seq);
    struct sched_visitor v = {.node = node, .ctx = &R};
    int rc = sched_graph_run(ref, st->last_mismatch + 1, NULL, &v, NULL);
    if (rc < 0 && !R.err)
        rc = chk__fail(rc, "first divergence: %s", sched_errmsg());
    struct sbt_iset *s;
    for (uint64_t pos = 0; (s = sbt_map_nextp(&R.sets, &pos));) {
        sbt_iset_free(s);
        free(s);
    }
    sbt_map_free(&R.sets);
    struct unk *u;
    for (uint64_t pos = 0; (u = sbt_map_nextp(&R.unks, &pos));) {
        sbt_iset_free(&u->set);
        free(u);
    }
    sbt_map_free(&R.unks);
    free(R.by_seq);
    return rc < 0 ? rc : 0;
}
