/*
 * checker/chk_util.c — the checker's plumbing: error messages, allocation, the 2-bit per-op
 * status map, the per-name timing accumulators (reservoirs) and their report rows, op names,
 * findings and collected events.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

static _Thread_local char errbuf[512];

const char *chk_errmsg(void)
{
    return errbuf;
}

int chk__fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return status;
}

int chk__fail_sbt(int status)
{
    return chk__fail(status, "%s", sbt_errmsg());
}

void *chk__malloc(size_t n)
{
    return malloc(n ? n : 1);
}

void *chk__calloc(size_t n, size_t sz)
{
    return calloc(n ? n : 1, sz ? sz : 1);
}

void *chk__realloc(void *p, size_t n)
{
    return realloc(p, n ? n : 1);
}

char *chk__strdup(const char *s)
{
    size_t n = strlen(s ? s : "") + 1;
    char *d = chk__malloc(n);
    if (d)
        memcpy(d, s ? s : "", n);
    return d;
}

int chk__grow(void **arr, uint32_t *cap, uint32_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    uint64_t nc = *cap ? (uint64_t)*cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    if (nc > UINT32_MAX)
        return chk__fail(SBT_ELIMIT, "array of %u elements is too large", need);
    void *p = chk__realloc(*arr, (size_t)nc * sz);
    if (!p)
        return chk__fail(SBT_ENOMEM, "out of memory growing an array to %" PRIu64 " elements", nc);
    *arr = p;
    *cap = (uint32_t)nc;
    return 0;
}

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

const char *chk_time_verdict_name(uint32_t v)
{
    static const char *const n[] = {"same",       "slower",      "faster",
                                    "regression", "improvement", "no-data"};
    return v < 6 ? n[v] : "?";
}

/* ========================================================================================== */
/* Status map                                                                                 */
/* ========================================================================================== */

int chk__status_init(struct chk_status *s, uint64_t base, uint64_t end)
{
    memset(s, 0, sizeof *s);
    s->base = base;
    s->n = end > base ? end - base : 0;
    s->last_mismatch = UINT64_MAX;
    if (s->n > (uint64_t)SIZE_MAX / 2)
        return chk__fail(SBT_ELIMIT, "%" PRIu64 " ops: too many for the status map", s->n);
    s->bits = chk__calloc((size_t)(s->n / 4 + 1), 1);
    if (!s->bits)
        return chk__fail(SBT_ENOMEM, "out of memory for the status of %" PRIu64 " ops", s->n);
    return 0;
}

void chk__status_set(struct chk_status *s, uint64_t seq, uint32_t v)
{
    if (seq < s->base || seq - s->base >= s->n)
        return;
    uint64_t i = seq - s->base;
    uint8_t *b = &s->bits[i / 4];
    unsigned sh = (unsigned)(i % 4) * 2;
    uint32_t old = (*b >> sh) & 3;
    if (old == CHK_ST_MISMATCH)
        return; /* a mismatch is never downgraded by a later comparison of the same op */
    *b = (uint8_t)((*b & ~(3u << sh)) | (v << sh));
    if (v == CHK_ST_MISMATCH) {
        s->n_mismatch++;
        if (s->last_mismatch == UINT64_MAX || seq > s->last_mismatch)
            s->last_mismatch = seq;
    }
}

uint32_t chk__status_get(const struct chk_status *s, uint64_t seq)
{
    if (!s->bits || seq < s->base || seq - s->base >= s->n)
        return CHK_ST_UNKNOWN;
    uint64_t i = seq - s->base;
    return (s->bits[i / 4] >> ((i % 4) * 2)) & 3;
}

void chk__status_free(struct chk_status *s)
{
    free(s->bits);
    s->bits = NULL;
}

/* ========================================================================================== */
/* Names                                                                                      */
/* ========================================================================================== */

const char *chk__op_name(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap)
{
    const char *s = NULL, *prog = NULL;
    if (op->kind == SBT_OP_KERNEL && (op->flags & SBT_OPF_KERNEL)) {
        const struct sbt_kernel *k = sbt_reader_kernel(r, op->kernel);
        if (k && k->name)
            s = sbt_reader_string(r, k->name);
        /* programs are named by content (spirv:<hash>, cubin:<hash>) or file: with it, two
         * shaders whose entry points are both "main" are two names */
        const struct sbt_program *p = k ? sbt_reader_program(r, k->program) : NULL;
        prog = p ? sbt_reader_string(r, p->name) : NULL;
    }
    if ((!s || !*s) && op->name)
        s = sbt_reader_string(r, op->name);
    if (!s || !*s)
        s = sbt_op_kind_name(op->kind);
    if (prog && *prog)
        snprintf(buf, cap, "%s [%s]", s ? s : "?", prog);
    else
        snprintf(buf, cap, "%s", s ? s : "?");
    return buf;
}

const char *chk__group_name(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap)
{
    static const char *const copy[] = {"[copy]", "[copy h2d]", "[copy d2h]", "[copy d2d]",
                                       "[copy h2h]"};
    switch (op->kind) {
    case SBT_OP_KERNEL:
        return chk__op_name(r, op, buf, cap);
    case SBT_OP_COPY:
        snprintf(buf, cap, "%s", copy[op->subkind < 5 ? op->subkind : 0]);
        return buf;
    case SBT_OP_FILL:
        snprintf(buf, cap, "[fill]");
        return buf;
    default:
        return NULL;
    }
}

int chk__op_dur(const struct sbt_op *op, uint64_t *ns)
{
    if (!(op->flags & SBT_OPF_DEV_TIME) || (op->flags & SBT_OPF_UNTIMED) ||
        op->dev_end < op->dev_begin)
        return 0;
    *ns = op->dev_end - op->dev_begin;
    return 1;
}

/* ========================================================================================== */
/* Timing accumulators                                                                        */
/* ========================================================================================== */

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

int chk__kmap_find(struct chk_kmap *m, const char *name, uint32_t *idx)
{
    if (m->n * 2 >= m->n_slot) {
        uint32_t ns = m->n_slot ? m->n_slot * 2 : 64;
        uint32_t *slot = chk__calloc(ns, sizeof *slot);
        if (!slot)
            return chk__fail(SBT_ENOMEM, "out of memory for the kernel table");
        for (uint32_t i = 0; i < m->n; i++) {
            uint32_t h = (uint32_t)hash_name(m->k[i].name) & (ns - 1);
            while (slot[h])
                h = (h + 1) & (ns - 1);
            slot[h] = i + 1;
        }
        free(m->slot);
        m->slot = slot;
        m->n_slot = ns;
    }
    uint32_t h = (uint32_t)hash_name(name) & (m->n_slot - 1);
    while (m->slot[h]) {
        if (!strcmp(m->k[m->slot[h] - 1].name, name)) {
            *idx = m->slot[h] - 1;
            return 0;
        }
        h = (h + 1) & (m->n_slot - 1);
    }
    int st = chk__grow((void **)&m->k, &m->cap, m->n + 1, sizeof *m->k);
    if (st)
        return st;
    memset(&m->k[m->n], 0, sizeof m->k[m->n]);
    if (!(m->k[m->n].name = chk__strdup(name)))
        return chk__fail(SBT_ENOMEM, "out of memory for the kernel table");
    m->slot[h] = m->n + 1;
    *idx = m->n++;
    return 0;
}

int chk__samples_add(struct chk_samples *s, double v, uint64_t *rng)
{
    s->seen++;
    if (s->n < CHK_RESERVOIR) {
        if (s->n == s->cap) {
            int st = chk__grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v);
            if (st)
                return st;
        }
        s->v[s->n++] = v;
        return 0;
    }
    /* reservoir (Vitter's algorithm R) with a fixed seed: output stays reproducible */
    uint64_t j = xorshift(rng) % s->seen;
    if (j < CHK_RESERVOIR)
        s->v[j] = v;
    return 0;
}

void chk__kmap_free(struct chk_kmap *m)
{
    for (uint32_t i = 0; i < m->n; i++) {
        free(m->k[i].name);
        free(m->k[i].ref.v);
        free(m->k[i].run.v);
    }
    free(m->k);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

static int cmp_row(const void *a, const void *b)
{
    const struct chk_timing_row *x = a, *y = b;
    int rx = x->verdict == CHK_TIME_REGRESSION, ry = y->verdict == CHK_TIME_REGRESSION;
    if (rx != ry)
        return ry - rx;
    double dx = fabs(x->rel_diff), dy = fabs(y->rel_diff);
    if (isnan(dx))
        dx = -1;
    if (isnan(dy))
        dy = -1;
    if (dx != dy)
        return dx > dy ? -1 : 1;
    return strcmp(x->name, y->name);
}

int chk__kmap_report(struct chk_kmap *m, struct chk_report *rep)
{
    if (!m->n)
        return 0;
    rep->kernels = chk__calloc(m->n, sizeof *rep->kernels);
    if (!rep->kernels)
        return chk__fail(SBT_ENOMEM, "out of memory for the kernel table");
    double thr = rep->threshold, alpha = 1 - rep->confidence;
    for (uint32_t i = 0; i < m->n; i++) {
        struct chk_kacc *k = &m->k[i];
        struct chk_timing_row *row = &rep->kernels[rep->n_kernels++];
        snprintf(row->name, sizeof row->name, "%s", k->name);
        row->n_ref = k->ref.n;
        row->n_run = k->run.n;
        row->p_value = row->p_faster = 1;
        row->rel_diff = NAN;
        struct chk_summary rs;
        int st;
        if ((st = chk_summarize(k->ref.v, k->ref.n, rep->confidence, &rs)) ||
            (st = chk_summarize(k->run.v, k->run.n, rep->confidence, &row->run)))
            return st;
        row->ref_median = rs.median;
        if (!k->ref.n || !k->run.n) {
            row->verdict = CHK_TIME_NO_DATA;
            continue;
        }
        row->rel_diff =
            rs.median > 0 ? row->run.median / rs.median - 1 : (row->run.median > 0 ? INFINITY : 0);
        row->p_value = chk_mann_whitney(k->run.v, k->run.n, k->ref.v, k->ref.n, NULL);
        row->p_faster = chk_mann_whitney(k->ref.v, k->ref.n, k->run.v, k->run.n, NULL);
        if (thr < 0)
            row->verdict = CHK_TIME_SAME;
        else if (row->rel_diff > thr)
            row->verdict = row->p_value < alpha ? CHK_TIME_REGRESSION : CHK_TIME_SLOWER;
        else if (row->rel_diff < -thr)
            row->verdict = row->p_faster < alpha ? CHK_TIME_IMPROVEMENT : CHK_TIME_FASTER;
        else
            row->verdict = CHK_TIME_SAME;
        if (row->verdict == CHK_TIME_REGRESSION)
            rep->count[CHK_TIMING]++;
    }
    qsort(rep->kernels, rep->n_kernels, sizeof *rep->kernels, cmp_row);
    return 0;
}

/* ========================================================================================== */
/* Reports, findings, events                                                                  */
/* ========================================================================================== */

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

int chk__report_alloc(struct chk_report **out, const struct chk_opts *o, uint32_t mode,
                      uint32_t n_runs)
{
    *out = NULL;
    struct chk_report *rep = chk__calloc(1, sizeof *rep);
    if (!rep)
        return chk__fail(SBT_ENOMEM, "out of memory for the report");
    rep->mode = mode;
    rep->n_runs = n_runs;
    rep->priv = chk__calloc(1, sizeof *rep->priv);
    rep->run_names = chk__calloc(n_runs + 1, sizeof *rep->run_names);
    const char *ref = CHK_OPT(o, ref_name, (const char *)NULL);
    rep->ref_name = chk__strdup(ref ? ref : "reference");
    if (!rep->priv || !rep->run_names || !rep->ref_name) {
        chk_report_free(rep);
        return chk__fail(SBT_ENOMEM, "out of memory for the report");
    }
    const char *const *names = CHK_OPT(o, run_names, (const char *const *)NULL);
    for (uint32_t i = 0; i < n_runs; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "run %u", i + 1);
        rep->run_names[i] = chk__strdup(names && names[i] ? names[i] : buf);
        if (!rep->run_names[i]) {
            chk_report_free(rep);
            return chk__fail(SBT_ENOMEM, "out of memory for the report");
        }
    }
    if (o && o->sz >= offsetof(struct chk_opts, tol) + sizeof o->tol)
        rep->tol = o->tol;
    rep->threshold = CHK_OPT(o, timing_threshold, 0.10);
    rep->confidence = CHK_OPT(o, confidence, 0.95);
    rep->priv->max_ev = CHK_OPT(o, max_events, (uint64_t)2000000);
    *out = rep;
    return 0;
}

void chk_report_free(struct chk_report *rep)
{
    if (!rep)
        return;
    free(rep->ref_name);
    if (rep->run_names)
        for (uint32_t i = 0; i < rep->n_runs; i++)
            free(rep->run_names[i]);
    free(rep->run_names);
    free(rep->device);
    free(rep->findings);
    free(rep->kernels);
    free(rep->ops);
    if (rep->priv) {
        free(rep->priv->ev);
        for (uint32_t i = 0; i < rep->priv->n_names; i++)
            free(rep->priv->names[i]);
        free(rep->priv->names);
        free(rep->priv);
    }
    free(rep);
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
