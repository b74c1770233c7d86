/*
 * checker/chk_diff.c — `diff A B`: two captures or replays aligned op by op, per stream, by a
 * windowed shortest edit script (the rule is stated in chk.h), then compared like check
 * compares a capture with one run.
 *
 * Both traces are read once, in seq order, alternately one op from each side; ops wait in a
 * per-stream queue until the other side's ops of that stream arrive. Equal keys at the heads
 * match at once (a common prefix belongs to some shortest edit script). Otherwise the step
 * waits until both queues hold W ops (or the side ended), computes Myers' O(ND) greedy
 * shortest edit script of the two windows (E. Myers, "An O(ND) difference algorithm and its
 * variations", Algorithmica 1, 1986: forward pass saving each round's furthest-reaching
 * diagonals, then the path traced back) and commits its first half, where every decision has
 * seen at least W/2 ops of context. Keys hash (kind, direction, names by content, geometry,
 * bytes): a per-trace cache of string hashes means the two files' string ids need not agree.
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
    struct chk_timing tm;
    /* Myers: saved rounds (V of round d at vsave + d * d, k in [-d, d]) and the script */
    int32_t *vsave, *v;
    uint8_t *script;
    uint32_t cap_v, cap_vsave, cap_script;
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
        const struct sbt_program *p = k ? sbt_reader_program(s->r, k->program) : NULL;
        h = mix(h, k ? str_hash(s, k->name) : 0);
        h = mix(h, p ? str_hash(s, p->name) : 0);
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
    chk__op_interval(a, D->s[0].t0, &e.ts, &e.dur);
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
    chk__op_interval(b, D->s[1].t0, &e.ts, &e.dur);
    return chk__event_add(D->rep, &e, nb);
}

static int emit_match(struct diff *D, const struct sbt_op *a, const struct sbt_op *b)
{
    struct chk_report *rep = D->rep;
    char nb[160], gb[160];
    chk__op_name(D->s[0].r, a, nb, sizeof nb);
    int mism = 0;
    /* an error on either side: A is the reference, but a replay result as much as B */
    for (int k = 0; k < 2; k++) {
        const struct sbt_op *x = k ? b : a;
        if (!(x->flags & SBT_OPF_ERROR))
            continue;
        struct chk_finding *f = chk__finding_add(rep, D->max_f, CHK_REPLAY_ERROR);
        if (f) {
            f->seq = a->seq, f->seq_run = b->seq, f->op_kind = a->kind, f->stream = a->stream;
            f->run = 1;
            snprintf(f->name, sizeof f->name, "%.79s", nb);
            const char *m = sbt_reader_string(D->s[k].r, x->error);
            snprintf(f->note, sizeof f->note, "%s (in %s)", m && *m ? m : "error",
                     k ? rep->run_names[0] : rep->ref_name);
        }
        mism = 1;
    }
    int da = (a->flags & SBT_OPF_DIGEST) != 0, db = (b->flags & SBT_OPF_DIGEST) != 0;
    if (chk__is_device_op(a) || db) {
        rep->n_device_ops++;
        int err = ((a->flags | b->flags) & SBT_OPF_ERROR) != 0;
        if (!(da && db)) {
            uint32_t why = err ? CHK_UNV_ERROR : da || db ? CHK_UNV_ONE_SIDE : CHK_UNV_NO_DIGEST;
            int st = chk__unverified_add(rep, D->max_f, D->s[0].r, a, why);
            if (st)
                return st;
        }
    }
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
    }
    chk__status_set(&D->status, a->seq,
                    mism       ? CHK_ST_MISMATCH
                    : da && db ? CHK_ST_MATCHED
                               : CHK_ST_UNKNOWN);
    uint64_t ta = 0, tb = 0;
    int ha = chk__op_dur(a, &ta), hb = chk__op_dur(b, &tb);
    const char *g = ha || hb ? chk_group_name(D->s[0].r, a, gb, sizeof gb) : NULL;
    if (g) {
        struct chk_tgroup *tg;
        int st;
        if ((st = chk__timing_group(&D->tm, g, &tg)) ||
            (ha && (st = chk__samples_add(&tg->ref, (double)ta, &D->tm.rng))) ||
            (hb && (st = chk__samples_add(&tg->run[0], (double)tb, &D->tm.rng))))
            return st;
    }
    rep->n_timed += ha || hb;
    if (!D->collect)
        return 0;
    struct chk_event e = {.seq = a->seq,
                          .seq_run = b->seq,
                          .stream = b->stream,
                          .d_ref = a->digest,
                          .d_run = b->digest};
    chk__op_interval(a, D->s[0].t0, &e.ref_ts, &e.ref_dur);
    chk__op_interval(b, D->s[1].t0, &e.ts, &e.dur);
    if (mism)
        e.verdict = CHK_V_MISMATCH;
    else if (ha && hb && D->thr >= 0 && (double)tb > (double)ta * (1 + D->thr))
        e.verdict = CHK_V_SLOWER;
    else if (ha && hb && D->thr >= 0 && (double)tb < (double)ta * (1 - D->thr))
        e.verdict = CHK_V_FASTER;
    return chk__event_add(rep, &e, nb);
}

#define MYERS_MAX_D 2048 /* saved rounds up to (2049)^2 x 4 bytes = 16 MiB */

/* Myers' greedy forward pass over a[0..n) and b[0..m), then the path traced back: the
 * shortest edit script into D->script ('M' match, 'D' a[x] deleted, 'I' b[y] inserted), in
 * order; its length into *len. */
/* Ops align when their keys are equal and their digests do not say otherwise: with digests on
 * both sides, equal digests too. That places a duplicated launch (same key as its neighbour)
 * where its outputs say it is, instead of shifting every later op of that key by one; a
 * genuine output difference becomes a deletion next to an insertion of the same key, which
 * the commit pairs back into one mismatched match. */
static int same_op(const struct q *qa, uint32_t i, const struct q *qb, uint32_t j)
{
    const struct sbt_op *a = &qa->op[qa->head + i], *b = &qb->op[qb->head + j];
    if (qa->key[qa->head + i] != qb->key[qb->head + j])
        return 0;
    return !(a->flags & SBT_OPF_DIGEST) || !(b->flags & SBT_OPF_DIGEST) ||
           sbt_hash_eq(a->digest, b->digest);
}

static int myers(struct diff *D, const struct q *qa, uint32_t n, const struct q *qb, uint32_t m,
                 uint32_t *len)
{
    uint32_t max = n + m;
    int st;
    if ((st = chk__grow((void **)&D->v, &D->cap_v, 2 * max + 3, sizeof *D->v)) ||
        (st = chk__grow((void **)&D->script, &D->cap_script, max + 1, 1)))
        return st;
    int32_t *v = D->v + max + 1; /* v[k], k in [-max - 1, max + 1] */
    v[1] = 0;
    int32_t N = (int32_t)n, M = (int32_t)m, dend = -1;
    for (int32_t d = 0; d <= (int32_t)max && dend < 0; d++) {
        for (int32_t k = -d; k <= d; k += 2) {
            int32_t x = k == -d || (k != d && v[k - 1] < v[k + 1]) ? v[k + 1] : v[k - 1] + 1;
            int32_t y = x - k;
            while (x < N && y < M && same_op(qa, (uint32_t)x, qb, (uint32_t)y))
                x++, y++;
            v[k] = x;
            if (x >= N && y >= M)
                dend = d;
        }
        /* V of round d keeps diagonals k in [-d, d]: (d + 1)^2 values up to round d, grown as
         * rounds come, so memory follows the edit distance, not the window */
        uint64_t need = (uint64_t)(d + 1) * (uint64_t)(d + 1);
        if (d > MYERS_MAX_D) { /* no alignment worth the memory: all deleted, all inserted */
            memset(D->script, 'D', n);
            memset(D->script + n, 'I', m);
            *len = max;
            return 0;
        }
        if ((st = chk__grow((void **)&D->vsave, &D->cap_vsave, (uint32_t)need, sizeof *D->vsave)))
            return st;
        memcpy(D->vsave + (size_t)d * (size_t)d, v - d, (size_t)(2 * d + 1) * sizeof *v);
    }
    /* back from (n, m): each round contributes one edit and the snake after it */
    uint32_t pos = max + 1; /* written backwards from the end */
    int32_t x = N, y = M;
    for (int32_t d = dend; d > 0; d--) {
        const int32_t *pv = D->vsave + (size_t)(d - 1) * (size_t)(d - 1) + (d - 1); /* pv[k] */
        int32_t k = x - y;
        int down = k == -d || (k != d && pv[k - 1] < pv[k + 1]);
        int32_t pk = down ? k + 1 : k - 1;
        int32_t px = pv[pk], py = px - pk;
        int32_t mx = down ? px : px + 1; /* where the snake of round d starts */
        while (x > mx)
            D->script[--pos] = 'M', x--, y--;
        D->script[--pos] = down ? 'I' : 'D';
        x = px, y = py;
    }
    while (x > 0)
        D->script[--pos] = 'M', x--;
    *len = max + 1 - pos;
    memmove(D->script, D->script + pos, *len);
    return 0;
}

/* Emits a run of deletions (A ops [0, nd) of the queue) and insertions (B ops [0, ni)) that
 * lie between two matches: those of equal keys pair up in order as matches (their outputs
 * differ: a mismatch), the rest are missing and extra. */
static int emit_block(struct diff *D, struct q *qa, uint32_t nd, struct q *qb, uint32_t ni)
{
    int st;
    while (nd || ni) {
        /* the first deletion whose key some later insertion has */
        uint32_t j = 0;
        while (nd && j < ni && qb->key[qb->head + j] != qa->key[qa->head])
            j++;
        if (!nd || j == ni) {
            if (nd) { /* no partner: missing */
                if ((st = emit_missing(D, &qa->op[qa->head])))
                    return st;
                qa->head++, qa->n--, nd--;
                continue;
            }
            j = ni; /* no deletions left: the insertions are extra */
        }
        for (uint32_t k = 0; k < j; k++, ni--) {
            if ((st = emit_extra(D, &qb->op[qb->head])))
                return st;
            qb->head++, qb->n--;
        }
        if (nd && ni) {
            if ((st = emit_match(D, &qa->op[qa->head], &qb->op[qb->head])))
                return st;
            qa->head++, qa->n--, nd--;
            qb->head++, qb->n--, ni--;
        }
    }
    return 0;
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
        if (same_op(qa, 0, qb, 0)) {
            if ((st = emit_match(D, &qa->op[qa->head], &qb->op[qb->head])))
                return st;
            qa->head++, qa->n--, qb->head++, qb->n--;
            continue;
        }
        int end_a = final || D->s[0].eof, end_b = final || D->s[1].eof;
        if (!(qa->n >= W || end_a) || !(qb->n >= W || end_b))
            break; /* wait for a full window of context on both sides */
        uint32_t na = qa->n < W ? qa->n : W, nb = qb->n < W ? qb->n : W;
        uint32_t len;
        if ((st = myers(D, qa, na, qb, nb, &len)))
            return st;
        /* the whole script when it reaches both queues' ends and nothing more can come;
         * else its first half (at least one step; a run of edits is taken whole) */
        int all = end_a && end_b && na == qa->n && nb == qb->n;
        uint32_t ia = 0, ib = 0, t = 0;
        while (t < len && (all || !t || ia + ib < (na + nb) / 2)) {
            if (D->script[t] == 'M') {
                if ((st = emit_match(D, &qa->op[qa->head], &qb->op[qb->head])))
                    return st;
                qa->head++, qa->n--, qb->head++, qb->n--;
                ia++, ib++, t++;
                continue;
            }
            uint32_t nd = 0, ni = 0;
            for (; t < len && D->script[t] != 'M'; t++) {
                if (D->script[t] == 'D')
                    nd++;
                else
                    ni++;
            }
            if ((st = emit_block(D, qa, nd, qb, ni)))
                return st;
            ia += nd, ib += ni;
        }
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
    struct diff D = {.window = CHK_OPT(o, window, 256u)};
    if (D.window < 2)
        D.window = 2;
    int st = chk__report_alloc(&D.rep, o, CHK_MODE_DIFF, 1);
    if (st)
        return st;
    struct chk_report *rep = D.rep;
    D.max_f = CHK_OPT(o, max_findings, 1000u);
    D.collect = CHK_OPT(o, collect_events, 0);
    D.thr = rep->threshold;
    D.tm.rng = 0x5eed;
    D.tm.n_runs = 1;
    D.tm.q = rep->timing_quantile;
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
    chk__note_complete(rep, a, rep->ref_name);
    chk__note_complete(rep, b, rep->run_names[0]);
    chk_regime(b, rep->regime, sizeof rep->regime);
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
    if ((st = chk__timing_ref_done(&D.tm)) || (st = chk__timing_report(&D.tm, rep, 0)) ||
        (st = chk__roots(a, &D.status, rep)))
        goto done;
    rep->timing_ref = CHK_TREF_BASELINE; /* A is B's reference: one run a side, not tested */
    rep->n_ref_runs = 1;
    rep->n_compared_runs = rep->n_verified ? 1 : 0;
    rep->pass_bound = chk_no_difference_bound(rep->n_compared_runs, rep->confidence);
    char failed[300] = "";
    for (int side = 0; side < 2 && !failed[0]; side++) {
        const char *v = sbt_reader_meta_get(side ? b : a, "replay.device_failed");
        if (v && *v)
            snprintf(failed, sizeof failed, "%.100s: %.190s",
                     side ? rep->run_names[0] : rep->ref_name, v);
    }
    struct chk_evidence ev = {.is_range = range != NULL,
                              .n_device_ops = rep->n_device_ops,
                              .n_compared = rep->n_verified,
                              .n_runs = 1,
                              .n_runs_used = rep->n_verified != 0,
                              .run_unused = rep->run_names[0],
                              .how_to = "each side needs them: capture with --digests, replay "
                                        "with --verify op",
                              .device_failed = failed[0] ? failed : NULL};
    chk__verdict(rep, &ev);
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
    chk__timing_free(&D.tm);
    free(D.vsave);
    free(D.v);
    free(D.script);
    chk__status_free(&D.status);
    if (st < 0) {
        chk_report_free(rep);
        return st;
    }
    *out = rep;
    return 0;
}
