/*
 * checker/chk_diff.c — `diff A B`: two captures or replays aligned op by op, per stream, with a
 * bounded look-ahead window (the rule is stated in chk.h), then compared like check compares a
 * capture with one run.
 *
 * Both traces are read once, in seq order, alternately one op from each side; ops wait in a
 * per-stream queue until the other side's ops of that stream arrive. Equal keys at the heads
 * match at once; otherwise the step waits until both queues hold W ops (or the side ended) and
 * picks the nearest anchor. Keys compare names by content through a per-trace cache of string
 * hashes, so the two files' string ids need not agree.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

struct q {
    struct sbt_op *op; /* copies without accesses or payload */
    uint64_t *key;
    uint32_t head, n, cap;
};

struct side {
    sbt_reader *r;
    sbt_cursor *c;
    int eof;
    uint64_t *str_hash; /* per string id, 0 = not computed */
    uint32_t n_str;
    struct q *q; /* per stream id */
    uint64_t t0;
};

struct diff {
    struct side s[2];
    uint32_t n_streams;
    uint32_t window;
    struct chk_report *rep;
    struct chk_status status;
    struct chk_kmap km;
    uint32_t max_f;
    int collect;
    double thr;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

static uint64_t str_hash(struct side *s, uint32_t id)
{
    if (!id || id >= s->n_str)
        return 0;
    if (!s->str_hash[id]) {
        const char *p = sbt_reader_string(s->r, id);
        sbt_hash h = sbt_hash_bytes(p ? p : "", p ? strlen(p) : 0);
        s->str_hash[id] = h.lo | 1;
    }
    return s->str_hash[id];
}

static uint64_t op_key(struct side *s, const struct sbt_op *op)
{
    uint64_t h = mix(op->kind, op->subkind);
    h = mix(h, str_hash(s, op->name));
    if (op->flags & SBT_OPF_KERNEL) {
        const struct sbt_kernel *k = sbt_reader_kernel(s->r, op->kernel);
        h = mix(h, k ? str_hash(s, k->name) : 0);
    }
    if (op->flags & SBT_OPF_GEOM)
        for (int i = 0; i < 3; i++)
            h = mix(mix(h, op->grid[i]), op->block[i]);
    h = mix(h, op->shmem);
    if (op->flags & SBT_OPF_BYTES)
        h = mix(h, op->bytes);
    return h;
}

static int q_push(struct q *q, const struct sbt_op *op, uint64_t key)
{
    if (q->head + q->n == q->cap) {
        if (q->head > q->cap / 2) {
            memmove(q->op, q->op + q->head, q->n * sizeof *q->op);
            memmove(q->key, q->key + q->head, q->n * sizeof *q->key);
            q->head = 0;
        } else {
            uint32_t nc = q->cap ? q->cap * 2 : 64;
            struct sbt_op *o = chk__realloc(q->op, nc * sizeof *o);
            if (!o)
                return chk__fail(SBT_ENOMEM, "out of memory for the alignment window");
            q->op = o;
            uint64_t *k = chk__realloc(q->key, nc * sizeof *k);
            if (!k)
                return chk__fail(SBT_ENOMEM, "out of memory for the alignment window");
            q->key = k;
            q->cap = nc;
        }
    }
    struct sbt_op *d = &q->op[q->head + q->n];
    *d = *op;
    d->access = NULL;
    d->n_access = 0;
    d->payload = (struct sbt_ext){0, 0, NULL};
    q->key[q->head + q->n] = key;
    q->n++;
    return 0;
}

static void interval(const struct sbt_op *op, uint64_t t0, uint64_t *ts, uint64_t *dur)
{
    uint64_t b = op->host_begin, e = op->host_end;
    if (op->flags & SBT_OPF_DEV_TIME)
        b = op->dev_begin, e = op->dev_end;
    *ts = b >= t0 ? b - t0 : 0;
    *dur = e > b ? e - b : 0;
}

static int emit_missing(struct diff *D, const struct sbt_op *a)
{
    struct chk_finding *f = chk__finding_add(D->rep, D->max_f, CHK_MISSING);
    char nb[160];
    chk__op_name(D->s[0].r, a, nb, sizeof nb);
    if (f) {
        f->seq = a->seq, f->op_kind = a->kind, f->stream = a->stream, f->run = 1;
        snprintf(f->name, sizeof f->name, "%.79s", nb);
        snprintf(f->note, sizeof f->note, "in %s, not in %s", D->rep->ref_name,
                 D->rep->run_names[0]);
    }
    chk__status_set(&D->status, a->seq, CHK_ST_MISMATCH);
    if (!D->collect)
        return 0;
    struct chk_event e = {.seq = a->seq,
                          .seq_run = UINT64_MAX,
                          .verdict = CHK_V_MISSING,
                          .stream = a->stream,
                          .ref_ts = UINT64_MAX,
                          .d_ref = a->digest};
    interval(a, D->s[0].t0, &e.ts, &e.dur);
    return chk__event_add(D->rep, &e, nb);
}

static int emit_extra(struct diff *D, const struct sbt_op *b)
{
    struct chk_finding *f = chk__finding_add(D->rep, D->max_f, CHK_EXTRA);
    char nb[160];
    chk__op_name(D->s[1].r, b, nb, sizeof nb);
    if (f) {
        f->seq = b->seq, f->seq_run = b->seq, f->op_kind = b->kind, f->stream = b->stream;
        f->run = 1;
        snprintf(f->name, sizeof f->name, "%.79s", nb);
        snprintf(f->note, sizeof f->note, "in %s, not in %s", D->rep->run_names[0],
                 D->rep->ref_name);
    }
    if (!D->collect)
        return 0;
    struct chk_event e = {.seq = UINT64_MAX,
                          .seq_run = b->seq,
                          .verdict = CHK_V_EXTRA,
                          .stream = b->stream,
                          .ref_ts = UINT64_MAX,
                          .d_run = b->digest};
    interval(b, D->s[1].t0, &e.ts, &e.dur);
    return chk__event_add(D->rep, &e, nb);
}

static int emit_match(struct diff *D, const struct sbt_op *a, const struct sbt_op *b)
{
    struct chk_report *rep = D->rep;
    char nb[160], gb[160];
    chk__op_name(D->s[0].r, a, nb, sizeof nb);
    int mism = 0;
    if (b->flags & SBT_OPF_ERROR) {
        struct chk_finding *f = chk__finding_add(rep, D->max_f, CHK_REPLAY_ERROR);
        if (f) {
            f->seq = a->seq, f->seq_run = b->seq, f->op_kind = a->kind, f->stream = a->stream;
            f->run = 1;
            snprintf(f->name, sizeof f->name, "%.79s", nb);
            const char *m = sbt_reader_string(D->s[1].r, b->error);
            snprintf(f->note, sizeof f->note, "%s", m && *m ? m : "error");
        }
        mism = 1;
    }
    int da = (a->flags & SBT_OPF_DIGEST) != 0, db = (b->flags & SBT_OPF_DIGEST) != 0;
    if (da && db) {
        rep->n_verified++;
        if (sbt_hash_eq(a->digest, b->digest)) {
            rep->n_matched++;
        } else {
            struct chk_finding *f = chk__finding_add(rep, D->max_f, CHK_DIVERGENT);
            if (f) {
                f->seq = a->seq, f->seq_run = b->seq, f->op_kind = a->kind, f->stream = a->stream;
                f->run = 1, f->has_ref = 1, f->ref_digest = a->digest, f->got_digest = b->digest;
                snprintf(f->name, sizeof f->name, "%.79s", nb);
                snprintf(f->note, sizeof f->note, "output digests differ (%s op %" PRIu64 ")",
                         rep->run_names[0], b->seq);
            }
            mism = 1;
        }
    } else if (da || db) {
        rep->n_unverified++;
    }
    chk__status_set(&D->status, a->seq,
                    mism       ? CHK_ST_MISMATCH
                    : da && db ? CHK_ST_MATCHED
                               : CHK_ST_UNKNOWN);
    uint64_t ta = 0, tb = 0;
    int ha = chk__op_dur(a, &ta), hb = chk__op_dur(b, &tb);
    const char *g = chk__group_name(D->s[0].r, a, gb, sizeof gb);
    if (g && (ha || hb)) {
        uint32_t k;
        int st;
        if ((st = chk__kmap_find(&D->km, g, &k)) ||
            (ha && (st = chk__samples_add(&D->km.k[k].ref, (double)ta, &D->km.rng))) ||
            (hb && (st = chk__samples_add(&D->km.k[k].run, (double)tb, &D->km.rng))))
            return st;
    }
    rep->n_timed += ha && hb;
    if (!D->collect)
        return 0;
    struct chk_event e = {.seq = a->seq,
                          .seq_run = b->seq,
                          .stream = b->stream,
                          .d_ref = a->digest,
                          .d_run = b->digest};
    interval(a, D->s[0].t0, &e.ref_ts, &e.ref_dur);
    interval(b, D->s[1].t0, &e.ts, &e.dur);
    if (mism)
        e.verdict = CHK_V_MISMATCH;
    else if (ha && hb && D->thr >= 0 && (double)tb > (double)ta * (1 + D->thr))
        e.verdict = CHK_V_SLOWER;
    else if (ha && hb && D->thr >= 0 && (double)tb < (double)ta * (1 - D->thr))
        e.verdict = CHK_V_FASTER;
    return chk__event_add(rep, &e, nb);
}

/* Aligns what stream s has queued; final: both sides ended. */
static int process(struct diff *D, uint32_t s, int final)
{
    struct q *qa = &D->s[0].q[s], *qb = &D->s[1].q[s];
    uint32_t W = D->window;
    int st;
    for (;;) {
        if (!qa->n || !qb->n)
            break;
        struct sbt_op *a = &qa->op[qa->head], *b = &qb->op[qb->head];
        if (qa->key[qa->head] == qb->key[qb->head]) {
            if ((st = emit_match(D, a, b)))
                return st;
            qa->head++, qa->n--, qb->head++, qb->n--;
            continue;
        }
        int full_a = qa->n >= W || D->s[0].eof, full_b = qb->n >= W || D->s[1].eof;
        if (!final && !(full_a && full_b))
            break;
        /* nearest anchor: smallest i + j with A[i] == B[j] inside the window */
        uint32_t na = qa->n < W ? qa->n : W, nb = qb->n < W ? qb->n : W;
        uint32_t bi = UINT32_MAX, bj = 0;
        for (uint32_t d = 1; d < na + nb - 1 && bi == UINT32_MAX; d++)
            for (uint32_t i = 0; i <= d && i < na; i++) {
                uint32_t j = d - i;
                if (j < nb && qa->key[qa->head + i] == qb->key[qb->head + j]) {
                    bi = i, bj = j;
                    break;
                }
            }
        if (bi == UINT32_MAX)
            bi = 1, bj = 1; /* no anchor: A[0] missing, B[0] extra */
        for (uint32_t i = 0; i < bi; i++)
            if ((st = emit_missing(D, &qa->op[qa->head++])))
                return st;
        qa->n -= bi;
        for (uint32_t j = 0; j < bj; j++)
            if ((st = emit_extra(D, &qb->op[qb->head++])))
                return st;
        qb->n -= bj;
    }
    /* one side ran far ahead, or everything ended: the rest cannot match */
    for (int k = 0; k < 2; k++) {
        struct q *q = &D->s[k].q[s], *other = &D->s[!k].q[s];
        while (q->n && !other->n && (final || D->s[!k].eof || q->n > 64 * W)) {
            if ((st = k == 0 ? emit_missing(D, &q->op[q->head]) : emit_extra(D, &q->op[q->head])))
                return st;
            q->head++, q->n--;
        }
    }
    return 0;
}

int chk_diff(sbt_reader *a, sbt_reader *b, const struct chk_opts *o, struct chk_report **out)
{
    *out = NULL;
    if (!a || !b)
        return chk__fail(SBT_EINVAL, "diff: two traces are required");
    struct diff D = {.window = CHK_OPT(o, window, 64u)};
    if (D.window < 2)
        D.window = 2;
    int st = chk__report_alloc(&D.rep, o, CHK_MODE_DIFF, 1);
    if (st)
        return st;
    struct chk_report *rep = D.rep;
    D.max_f = CHK_OPT(o, max_findings, 1000u);
    D.collect = CHK_OPT(o, collect_events, 0);
    D.thr = rep->threshold;
    D.km.rng = 0x5eed;
    void (*progress)(void *, uint64_t, uint64_t) = CHK_OPT(o, progress, NULL);
    void *pctx = CHK_OPT(o, progress_ctx, (void *)NULL);
    const struct sbt_range *range = CHK_OPT(o, range, (const struct sbt_range *)NULL);
    D.s[0].r = a, D.s[1].r = b;
    uint32_t ns0, ns1;
    sbt_reader_streams(a, &ns0);
    sbt_reader_streams(b, &ns1);
    D.n_streams = (ns0 > ns1 ? ns0 : ns1) + 1;
    const struct sbt_info *ia = sbt_reader_info(a);
    if ((st = chk__status_init(&D.status, ia->seq_first, ia->seq_end)))
        goto done;
    for (int k = 0; k < 2; k++) {
        struct side *s = &D.s[k];
        s->t0 = sbt_reader_info(s->r)->t_min;
        s->n_str = sbt_reader_n_strings(s->r) + 1;
        s->str_hash = chk__calloc(s->n_str, sizeof *s->str_hash);
        s->q = chk__calloc(D.n_streams, sizeof *s->q);
        if (!s->str_hash || !s->q) {
            st = chk__fail(SBT_ENOMEM, "out of memory");
            goto done;
        }
        /* the range applies to both sides (ops by seq, time relative to each trace) */
        struct sbt_range rr, *rp = NULL;
        if (range) {
            rr = *range;
            if (rr.has_time && k == 1) {
                uint64_t t0a = ia->t_min;
                rr.t_begin = rr.t_begin - t0a + s->t0;
                rr.t_end = rr.t_end == UINT64_MAX ? UINT64_MAX : rr.t_end - t0a + s->t0;
            }
            rp = &rr;
        }
        if ((st = sbt_cursor_open(s->r, rp, &s->c)) < 0) {
            st = chk__fail_sbt(st);
            goto done;
        }
    }
    rep->device = chk__strdup("*");
    rep->priv->ref_t0 = D.s[0].t0;
    rep->priv->run_t0 = D.s[1].t0;
    uint64_t done_ops = 0, total = ia->n_ops + sbt_reader_info(b)->n_ops;
    while (!D.s[0].eof || !D.s[1].eof) {
        for (int k = 0; k < 2; k++) {
            struct side *s = &D.s[k];
            if (s->eof)
                continue;
            const struct sbt_op *op;
            int r = sbt_cursor_next(s->c, &op);
            if (r < 0) {
                st = chk__fail_sbt(r);
                goto done;
            }
            if (r == 0) {
                s->eof = 1;
                for (uint32_t i = 0; i < D.n_streams; i++)
                    if ((st = process(&D, i, 0)))
                        goto done;
                continue;
            }
            if (k == 0)
                rep->n_ref_ops++;
            uint32_t sid = op->stream < D.n_streams ? op->stream : 0;
            if ((st = q_push(&s->q[sid], op, op_key(s, op))) || (st = process(&D, sid, 0)))
                goto done;
            if (progress && (++done_ops & 0xffff) == 0)
                progress(pctx, done_ops, total);
        }
    }
    for (uint32_t i = 0; i < D.n_streams; i++)
        if ((st = process(&D, i, 1)))
            goto done;
    if ((st = chk__kmap_report(&D.km, rep)) || (st = chk__roots(a, &D.status, rep)))
        goto done;
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        rep->failed |= rep->count[c] != 0;
done:
    for (int k = 0; k < 2; k++) {
        sbt_cursor_close(D.s[k].c);
        free(D.s[k].str_hash);
        if (D.s[k].q)
            for (uint32_t i = 0; i < D.n_streams; i++) {
                free(D.s[k].q[i].op);
                free(D.s[k].q[i].key);
            }
        free(D.s[k].q);
    }
    chk__kmap_free(&D.km);
    chk__status_free(&D.status);
    if (st < 0) {
        chk_report_free(rep);
        return st;
    }
    *out = rep;
    return 0;
}
