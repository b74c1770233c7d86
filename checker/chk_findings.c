/*
 * checker/chk_findings.c — what the comparisons (check, diff) record in the report as they
 * walk the traces: findings and unverified ops (every one counted, listed up to max_findings),
 * the names of their classes and reasons, the completeness of the traces read, and the per-op
 * events kept for the Perfetto diff (chk_perfetto.c writes them).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

/* ========================================================================================== */
/* Findings and unverified ops                                                                */
/* ========================================================================================== */

static const char *const class_names[] = {
#define CHK__CLASS_NAME(name, s, d) s,
    CHK_CLASS_MAP(CHK__CLASS_NAME)
#undef CHK__CLASS_NAME
};
static const char *const class_descs[] = {
#define CHK__CLASS_DESC(name, s, d) d,
    CHK_CLASS_MAP(CHK__CLASS_DESC)
#undef CHK__CLASS_DESC
};

const char *chk_class_name(uint32_t cls)
{
    return cls < CHK__NCLASS ? class_names[cls] : "?";
}

const char *chk_class_desc(uint32_t cls)
{
    return cls < CHK__NCLASS ? class_descs[cls] : "?";
}

const char *chk_unverified_name(uint32_t why)
{
    static const char *const n[] = {"no-digest", "one-side", "skipped", "flaky", "error"};
    return why < 5 ? n[why] : "?";
}

struct chk_finding *chk__finding_add(struct chk_report *rep, uint32_t max, uint32_t cls)
{
    rep->count[cls]++;
    if (rep->n_findings >= max || chk__grow((void **)&rep->findings, &rep->priv->cap_findings,
                                            rep->n_findings + 1, sizeof *rep->findings))
        return NULL; /* counted, not listed */
    struct chk_finding *f = &rep->findings[rep->n_findings++];
    memset(f, 0, sizeof *f);
    f->cls = cls;
    f->seq_run = UINT64_MAX;
    return f;
}

void chk__finding_op(struct chk_finding *f, const sbt_reader *r, const struct sbt_op *op)
{
    if (!f)
        return;
    f->seq = op->seq;
    f->op_kind = op->kind;
    f->stream = op->stream;
    chk__op_name(r, op, f->name, sizeof f->name);
}

int chk__unverified_add(struct chk_report *rep, uint32_t max, const sbt_reader *r,
                        const struct sbt_op *op, uint32_t why)
{
    rep->n_unverified++;
    if (why < sizeof rep->n_unverified_why / sizeof rep->n_unverified_why[0])
        rep->n_unverified_why[why]++;
    if (rep->n_unverified_listed >= max)
        return 0; /* counted, not listed */
    int st = chk__grow((void **)&rep->unverified, &rep->priv->cap_unverified,
                       rep->n_unverified_listed + 1, sizeof *rep->unverified);
    if (st)
        return st;
    struct chk_unverified *u = &rep->unverified[rep->n_unverified_listed++];
    memset(u, 0, sizeof *u);
    u->seq = op->seq;
    u->op_kind = op->kind;
    u->stream = op->stream;
    u->why = why;
    chk__op_name(r, op, u->name, sizeof u->name);
    return 0;
}

void chk__note_complete(struct chk_report *rep, const sbt_reader *r, const char *label)
{
    if (sbt_reader_info(r)->complete)
        return;
    char why[400];
    sbt_reader_incomplete_why(r, why, sizeof why);
    size_t n = strlen(rep->incomplete_why);
    snprintf(rep->incomplete_why + n, sizeof rep->incomplete_why - n, "%s%s: %s",
             rep->incomplete ? "; " : "", label, why);
    rep->incomplete = 1;
}

/* ========================================================================================== */
/* Events for the Perfetto diff                                                               */
/* ========================================================================================== */

void chk__op_interval(const struct sbt_op *op, uint64_t t0, uint64_t *ts, uint64_t *dur)
{
    uint64_t b = op->host_begin, e = op->host_end;
    if (op->flags & SBT_OPF_DEV_TIME)
        b = op->dev_begin, e = op->dev_end;
    *ts = b >= t0 ? b - t0 : 0;
    *dur = e > b ? e - b : 0;
}

int chk__event_add(struct chk_report *rep, const struct chk_event *e, const char *name)
{
    struct chk_priv *p = rep->priv;
    if (p->n_ev >= p->max_ev) {
        p->n_ev_dropped++;
        return 0;
    }
    if (p->n_ev == p->cap_ev) {
        uint64_t nc = p->cap_ev ? p->cap_ev * 2 : 1024;
        void *np = chk__realloc(p->ev, (size_t)nc * sizeof *p->ev);
        if (!np)
            return chk__fail(SBT_ENOMEM, "out of memory for %" PRIu64 " diff events", nc);
        p->ev = np;
        p->cap_ev = nc;
    }
    struct chk_event *d = &p->ev[p->n_ev++];
    *d = *e;
    /* names: a small table, the last one reused when equal (ops repeat kernels in runs) */
    uint32_t i = p->n_names;
    for (uint32_t k = 0; k < p->n_names && k < 64; k++)
        if (!strcmp(p->names[p->n_names - 1 - k], name)) {
            i = p->n_names - 1 - k;
            break;
        }
    if (i == p->n_names) {
        int st = chk__grow((void **)&p->names, &p->cap_names, p->n_names + 1, sizeof *p->names);
        if (st)
            return st;
        if (!(p->names[p->n_names] = chk__strdup(name)))
            return chk__fail(SBT_ENOMEM, "out of memory for diff event names");
        p->n_names++;
    }
    d->name = i;
    return 0;
}
