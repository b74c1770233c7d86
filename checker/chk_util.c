/*
 * checker/chk_util.c — the checker's plumbing: error messages, allocation, the 2-bit per-op
 * status map, string maps, op names, keys, identities and timing groups, regimes, the timing
 * accumulators (per group and run) and their tests, findings, unverified ops and collected
 * events.
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
/* String map                                                                                 */
/* ========================================================================================== */

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

int chk__strmap_find(struct chk_strmap *m, const char *name, uint32_t *idx, int *added)
{
    if (added)
        *added = 0;
    if (m->n * 2 >= m->n_slot) {
        uint32_t ns = m->n_slot ? m->n_slot * 2 : 64;
        uint32_t *slot = chk__calloc(ns, sizeof *slot);
        if (!slot)
            return chk__fail(SBT_ENOMEM, "out of memory for a name table");
        for (uint32_t i = 0; i < m->n; i++) {
            uint32_t h = (uint32_t)hash_name(m->names[i]) & (ns - 1);
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
        if (!strcmp(m->names[m->slot[h] - 1], name)) {
            *idx = m->slot[h] - 1;
            return 0;
        }
        h = (h + 1) & (m->n_slot - 1);
    }
    int st = chk__grow((void **)&m->names, &m->cap, m->n + 1, sizeof *m->names);
    if (st)
        return st;
    if (!(m->names[m->n] = chk__strdup(name)))
        return chk__fail(SBT_ENOMEM, "out of memory for a name table");
    m->slot[h] = m->n + 1;
    *idx = m->n++;
    if (added)
        *added = 1;
    return 0;
}

uint32_t chk__strmap_get(const struct chk_strmap *m, const char *name)
{
    if (!m->n_slot)
        return UINT32_MAX;
    uint32_t h = (uint32_t)hash_name(name) & (m->n_slot - 1);
    while (m->slot[h]) {
        if (!strcmp(m->names[m->slot[h] - 1], name))
            return m->slot[h] - 1;
        h = (h + 1) & (m->n_slot - 1);
    }
    return UINT32_MAX;
}

void chk__strmap_free(struct chk_strmap *m)
{
    for (uint32_t i = 0; i < m->n; i++)
        free(m->names[i]);
    free(m->names);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

/* ========================================================================================== */
/* Names, keys, identities, groups                                                            */
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

static const char *const copy_dir[] = {"", "h2d", "d2h", "d2d", "h2h"};

/* The kernel's entry point and program names, or NULL / "" when the trace has none. */
static void kernel_names(const sbt_reader *r, const struct sbt_op *op, const char **entry,
                         const char **prog)
{
    *entry = *prog = NULL;
    if (op->kind != SBT_OP_KERNEL || !(op->flags & SBT_OPF_KERNEL))
        return;
    const struct sbt_kernel *k = sbt_reader_kernel(r, op->kernel);
    if (!k)
        return;
    *entry = sbt_reader_string(r, k->name);
    const struct sbt_program *p = sbt_reader_program(r, k->program);
    *prog = p ? sbt_reader_string(r, p->name) : NULL;
}

static uint64_t op_bytes(const struct sbt_op *op)
{
    if (op->flags & SBT_OPF_BYTES)
        return op->bytes;
    uint64_t n = 0;
    for (uint32_t i = 0; i < op->n_access; i++)
        n += op->access[i].len;
    return n;
}

/* appends s to buf at *pos, %XX-encoding what identities keep out */
static void put_enc(char *buf, size_t cap, size_t *pos, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; s && *s && *pos + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("._:+-", c)) {
            buf[(*pos)++] = (char)c;
        } else {
            buf[(*pos)++] = '%';
            buf[(*pos)++] = hex[c >> 4];
            buf[(*pos)++] = hex[c & 15];
        }
    }
    buf[*pos < cap ? *pos : cap - 1] = 0;
}

static void put_fmt(char *buf, size_t cap, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put_fmt(char *buf, size_t cap, size_t *pos, const char *fmt, ...)
{
    if (*pos >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *pos, cap - *pos, fmt, ap);
    va_end(ap);
    if (n > 0)
        *pos = *pos + (size_t)n < cap ? *pos + (size_t)n : cap - 1;
}

const char *chk_op_key(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap)
{
    size_t pos = 0;
    if (!cap)
        return buf;
    buf[0] = 0;
    const char *entry, *prog;
    kernel_names(r, op, &entry, &prog);
    if (op->kind == SBT_OP_KERNEL) {
        put_enc(buf, cap, &pos, prog && *prog ? prog : "?");
        put_fmt(buf, cap, &pos, ":");
        if (entry && *entry) {
            put_enc(buf, cap, &pos, entry);
        } else {
            const char *n = sbt_reader_string(r, op->name);
            put_enc(buf, cap, &pos, n && *n ? n : "?");
        }
        put_fmt(buf, cap, &pos, "/g%ux%ux%u.b%ux%ux%u", op->grid[0], op->grid[1], op->grid[2],
                op->block[0], op->block[1], op->block[2]);
        if (op->shmem)
            put_fmt(buf, cap, &pos, ".s%u", op->shmem);
        return buf;
    }
    put_enc(buf, cap, &pos, sbt_op_kind_name(op->kind));
    if (op->kind == SBT_OP_COPY && op->subkind < 5 && op->subkind)
        put_fmt(buf, cap, &pos, "-%s", copy_dir[op->subkind]);
    put_fmt(buf, cap, &pos, "/n%" PRIu64, op_bytes(op));
    return buf;
}

const char *chk_group_name(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap)
{
    switch (op->kind) {
    case SBT_OP_KERNEL: {
        const char *entry, *prog;
        kernel_names(r, op, &entry, &prog);
        if (!entry || !*entry) {
            const char *n = sbt_reader_string(r, op->name);
            entry = n && *n ? n : "kernel";
        }
        int n = snprintf(buf, cap, "%s", entry);
        if (prog && *prog && n >= 0 && (size_t)n < cap)
            n += snprintf(buf + n, cap - (size_t)n, " [%s]", prog);
        if (n >= 0 && (size_t)n < cap)
            n += snprintf(buf + n, cap - (size_t)n, " %ux%ux%u/%ux%ux%u", op->grid[0], op->grid[1],
                          op->grid[2], op->block[0], op->block[1], op->block[2]);
        if (op->shmem && n >= 0 && (size_t)n < cap)
            snprintf(buf + n, cap - (size_t)n, " smem %u", op->shmem);
        return buf;
    }
    case SBT_OP_COPY:
        snprintf(buf, cap, "[copy%s%s] %" PRIu64 " B", op->subkind && op->subkind < 5 ? " " : "",
                 op->subkind < 5 ? copy_dir[op->subkind] : "", op_bytes(op));
        return buf;
    case SBT_OP_FILL:
        snprintf(buf, cap, "[fill] %" PRIu64 " B", op_bytes(op));
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

int chk__is_device_op(const struct sbt_op *op)
{
    return op->kind == SBT_OP_KERNEL || op->kind == SBT_OP_COPY || op->kind == SBT_OP_FILL ||
           op->kind == SBT_OP_HOST_READ || (op->flags & SBT_OPF_DIGEST);
}

int chk__identity_next(struct chk_idgen *g, const sbt_reader *r, const struct sbt_op *op, char *buf,
                       size_t cap)
{
    char key[420];
    char k[400];
    snprintf(key, sizeof key, "s%u/%s", op->stream, chk_op_key(r, op, k, sizeof k));
    uint32_t idx;
    int added, st = chk__strmap_find(&g->keys, key, &idx, &added);
    if (st)
        return st;
    if (added) {
        if ((st = chk__grow((void **)&g->count, &g->cap, idx + 1, sizeof *g->count)))
            return st;
        g->count[idx] = 0;
    }
    snprintf(buf, cap, "%s#%" PRIu64, key, g->count[idx]++);
    return 0;
}

void chk__idgen_free(struct chk_idgen *g)
{
    chk__strmap_free(&g->keys);
    free(g->count);
    memset(g, 0, sizeof *g);
}

/* ========================================================================================== */
/* Regimes                                                                                    */
/* ========================================================================================== */

static const char *const regime_keys[][2] = {{"verify", "replay.verify"},
                                             {"timing", "replay.timing"},
                                             {"device", "replay.device"},
                                             {"driver", "replay.driver"},
                                             {"env", "replay.env"}};
#define N_REGIME (sizeof regime_keys / sizeof regime_keys[0])

static const char *regime_val(const sbt_reader *r, uint32_t i)
{
    const char *v = sbt_reader_meta_get(r, regime_keys[i][1]);
    return v && *v ? v : "?";
}

const char *chk_regime(const sbt_reader *r, char *buf, size_t cap)
{
    size_t pos = 0;
    if (!cap)
        return buf;
    buf[0] = 0;
    for (uint32_t i = 0; i < N_REGIME; i++) {
        const char *v = regime_val(r, i);
        put_fmt(buf, cap, &pos, strchr(v, ' ') ? "%s%s='%s'" : "%s%s=%s", i ? " " : "",
                regime_keys[i][0], v);
    }
    return buf;
}

int chk_regime_same(const sbt_reader *a, const sbt_reader *b, char *why, size_t cap)
{
    size_t pos = 0;
    int same = 1;
    if (why && cap)
        why[0] = 0;
    for (uint32_t i = 0; i < N_REGIME; i++) {
        const char *x = regime_val(a, i), *y = regime_val(b, i);
        if (!strcmp(x, y))
            continue;
        if (why && cap)
            put_fmt(why, cap, &pos, "%s%s '%s' vs '%s'", same ? "" : ", ", regime_keys[i][0], x, y);
        same = 0;
    }
    return same;
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

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double chk__samples_quantile(struct chk_samples *s, double q)
{
    if (!s->n)
        return NAN;
    qsort(s->v, s->n, sizeof *s->v, cmp_dbl);
    double h = (double)(s->n - 1) * q;
    uint32_t lo = (uint32_t)floor(h), hi = lo + 1 < s->n ? lo + 1 : lo;
    return s->v[lo] + (h - (double)lo) * (s->v[hi] - s->v[lo]);
}

int chk__timing_group(struct chk_timing *t, const char *name, struct chk_tgroup **out)
{
    uint32_t idx;
    int added, st = chk__strmap_find(&t->names, name, &idx, &added);
    if (st)
        return st;
    if (added) {
        if ((st = chk__grow((void **)&t->g, &t->cap, idx + 1, sizeof *t->g)))
            return st;
        struct chk_tgroup *g = &t->g[idx];
        memset(g, 0, sizeof *g);
        if (!(g->run = chk__calloc(t->n_runs + 1, sizeof *g->run)))
            return chk__fail(SBT_ENOMEM, "out of memory for the timing of '%s'", name);
    }
    *out = &t->g[idx];
    return 0;
}

int chk__timing_ref_done(struct chk_timing *t)
{
    for (uint32_t i = 0; i < t->names.n; i++) {
        struct chk_tgroup *g = &t->g[i];
        if (!g->ref.n)
            continue;
        int st =
            chk__grow((void **)&g->ref_med, &g->cap_ref_med, g->n_ref_med + 1, sizeof *g->ref_med);
        if (st)
            return st;
        g->ref_med[g->n_ref_med++] = chk__samples_quantile(&g->ref, t->q > 0 ? t->q : 0.5);
        g->n_ref += g->ref.seen;
        g->ref.n = 0;
        g->ref.seen = 0;
    }
    return 0;
}

void chk__timing_free(struct chk_timing *t)
{
    for (uint32_t i = 0; i < t->names.n; i++) {
        struct chk_tgroup *g = &t->g[i];
        if (g->run)
            for (uint32_t r = 0; r < t->n_runs; r++)
                free(g->run[r].v);
        free(g->run);
        free(g->ref.v);
        free(g->ref_med);
    }
    free(t->g);
    chk__strmap_free(&t->names);
    memset(t, 0, sizeof *t);
}

static int cmp_row(const void *a, const void *b)
{
    const struct chk_timing_row *x = a, *y = b;
    int rx = x->verdict == CHK_TIME_REGRESSION, ry = y->verdict == CHK_TIME_REGRESSION;
    if (rx != ry)
        return ry - rx;
    double dx = fabs(x->effect), dy = fabs(y->effect);
    if (isnan(dx))
        dx = -1;
    if (isnan(dy))
        dy = -1;
    if (dx != dy)
        return dx > dy ? -1 : 1;
    return strcmp(x->name, y->name);
}

int chk__timing_report(struct chk_timing *t, struct chk_report *rep, int tested)
{
    rep->min_p = 1;
    if (!t->names.n)
        return 0;
    uint32_t n = t->names.n;
    rep->kernels = chk__calloc(n, sizeof *rep->kernels);
    double *x = chk__calloc(t->n_runs + 1, sizeof *x), *xs = chk__calloc(t->n_runs + 1, sizeof *xs);
    double *ps = chk__calloc(2 * (size_t)n, sizeof *ps);
    uint32_t *tidx = chk__calloc(n, sizeof *tidx);
    int st = 0;
    if (!rep->kernels || !x || !xs || !ps || !tidx) {
        st = chk__fail(SBT_ENOMEM, "out of memory for the kernel table");
        goto out;
    }
    double thr = rep->threshold, alpha = 1 - rep->confidence;
    tested = tested && thr >= 0;
    uint32_t n_t = 0;
    size_t max_nx = 0, max_ny = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct chk_tgroup *g = &t->g[i];
        struct chk_timing_row *row = &rep->kernels[rep->n_kernels++];
        snprintf(row->name, sizeof row->name, "%s", t->names.names[i]);
        size_t nx = 0;
        for (uint32_t r = 0; r < t->n_runs; r++) {
            row->n_run += g->run[r].seen;
            if (g->run[r].n)
                x[nx++] = chk__samples_quantile(&g->run[r], t->q > 0 ? t->q : 0.5);
        }
        row->n_runs = (uint32_t)nx;
        row->n_ref_runs = g->n_ref_med;
        row->n_ref = g->n_ref;
        row->p_value = row->p_adj = row->p_faster = row->p_faster_adj = 1;
        row->confirmed = -1;
        row->effect = row->effect_lo = row->effect_hi = NAN;
        row->ref_median = NAN;
        if (g->n_ref_med) {
            double *rm = chk__malloc(g->n_ref_med * sizeof *rm);
            if (!rm) {
                st = chk__fail(SBT_ENOMEM, "out of memory for the kernel table");
                goto out;
            }
            memcpy(rm, g->ref_med, g->n_ref_med * sizeof *rm);
            qsort(rm, g->n_ref_med, sizeof *rm, cmp_dbl);
            uint32_t m = g->n_ref_med;
            row->ref_median = m & 1 ? rm[m / 2] : (rm[m / 2 - 1] + rm[m / 2]) / 2;
            free(rm);
        }
        if (nx && g->n_ref_med) {
            double ratio, lo, hi, level;
            if ((st = chk_ratio_estimate(x, nx, g->ref_med, g->n_ref_med, rep->confidence, &ratio,
                                         &lo, &hi, &level)))
                goto out;
            row->effect = ratio - 1, row->effect_lo = lo - 1, row->effect_hi = hi - 1;
            row->effect_level = level;
            if (tested) {
                /* H0 "at most thr slower": the runs scaled down by 1 + thr against the
                 * reference; and "at most thr faster" the other way round */
                for (size_t q = 0; q < nx; q++)
                    xs[q] = x[q] / (1 + thr);
                row->p_value = chk_mann_whitney(xs, nx, g->ref_med, g->n_ref_med, NULL);
                for (size_t q = 0; q < nx; q++)
                    xs[q] = x[q] * (1 + thr);
                row->p_faster = chk_mann_whitney(g->ref_med, g->n_ref_med, xs, nx, NULL);
                ps[n_t] = row->p_value;
                ps[n + n_t] = row->p_faster;
                tidx[n_t++] = i;
                max_nx = nx > max_nx ? nx : max_nx;
                max_ny = g->n_ref_med > max_ny ? g->n_ref_med : max_ny;
            }
        }
        /* summarize last: it sorts x */
        if ((st = chk_summarize(x, nx, rep->confidence, &row->run)))
            goto out;
    }
    if ((st = chk_holm(ps, n_t, ps)) || (st = chk_holm(ps + n, n_t, ps + n)))
        goto out;
    for (uint32_t k = 0; k < n_t; k++) {
        rep->kernels[tidx[k]].p_adj = ps[k];
        rep->kernels[tidx[k]].p_faster_adj = ps[n + k];
    }
    rep->n_tests = n_t;
    rep->min_p = n_t ? chk_mann_whitney_min_p(max_nx, max_ny) : 1;
    for (uint32_t i = 0; i < rep->n_kernels; i++) {
        struct chk_timing_row *row = &rep->kernels[i];
        if (!row->n_runs || !row->n_ref_runs) {
            row->verdict = CHK_TIME_NO_DATA;
        } else if (thr < 0) {
            row->verdict = CHK_TIME_SAME;
        } else if (row->effect > thr) {
            row->verdict = tested && row->p_adj < alpha ? CHK_TIME_REGRESSION : CHK_TIME_SLOWER;
        } else if (row->effect < -thr) {
            row->verdict =
                tested && row->p_faster_adj < alpha ? CHK_TIME_IMPROVEMENT : CHK_TIME_FASTER;
        } else {
            row->verdict = CHK_TIME_SAME;
        }
        if (row->verdict == CHK_TIME_REGRESSION)
            rep->count[CHK_TIMING]++;
    }
    qsort(rep->kernels, rep->n_kernels, sizeof *rep->kernels, cmp_row);
out:
    free(x);
    free(xs);
    free(ps);
    free(tidx);
    return st;
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

int chk_confirm_timing(struct chk_report *rep, const struct chk_report *again)
{
    if (!rep || !again)
        return chk__fail(SBT_EINVAL, "confirm: two reports are required");
    rep->n_confirm_runs = again->n_runs;
    for (uint32_t i = 0; i < rep->n_kernels; i++) {
        struct chk_timing_row *k = &rep->kernels[i];
        if (k->verdict != CHK_TIME_REGRESSION)
            continue;
        int twice = 0;
        for (uint32_t j = 0; j < again->n_kernels && !twice; j++)
            twice = again->kernels[j].verdict == CHK_TIME_REGRESSION &&
                    !strcmp(again->kernels[j].name, k->name);
        k->confirmed = twice;
        if (!twice) {
            k->verdict = CHK_TIME_SLOWER;
            rep->count[CHK_TIMING]--;
        }
    }
    rep->failed = rep->fail_reason[0] != 0;
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        rep->failed |= rep->count[c] != 0;
    return 0;
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

const char *chk_unverified_name(uint32_t why)
{
    static const char *const n[] = {"no-digest", "one-side", "skipped", "flaky", "error"};
    return why < 5 ? n[why] : "?";
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
    rep->cpu_wait = rep->ref_cpu_wait = NAN;
    rep->timing_quantile = CHK_OPT(o, timing_quantile, 0.5);
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
    free(rep->unverified);
    free(rep->kernels);
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
