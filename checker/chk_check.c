/*
 * checker/chk_check.c — `check`: the capture and N replay results read in lockstep by seq (one
 * cursor each, so memory does not grow with the trace), every op classified, timings gathered;
 * then the first-divergence pass (chk_roots.c) over the ops that mismatched.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"
#include "scheduler/sched.h"

struct runcur {
    sbt_cursor *c;
    const struct sbt_op *op; /* current op, NULL at the end */
    int st;
};

static int rc_next(struct runcur *rc)
{
    int st = sbt_cursor_next(rc->c, &rc->op);
    if (st < 0)
        return chk__fail_sbt(st);
    if (st == 0)
        rc->op = NULL;
    return 0;
}

/* Bytes an op wrote: the blob of a HOST_READ (what the program read back), or a dump file. */
static int get_bytes(sbt_reader *r, const struct sbt_op *op, const char *dump, void **data,
                     size_t *len)
{
    *data = NULL;
    *len = 0;
    if (op->kind == SBT_OP_HOST_READ && (op->flags & SBT_OPF_BLOB) && r &&
        sbt_reader_blob(r, &op->blob, data, len) == 0)
        return 1;
    if (!dump)
        return 0;
    /* the name replay's --dump writes (replay/replay_engine.c) */
    char path[4096];
    snprintf(path, sizeof path, "%s/%" PRIu64 ".bin", dump, op->seq);
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = chk__malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        uint8_t *nb = chk__realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return 0;
    }
    *data = buf;
    *len = n;
    return 1;
}

static uint32_t elem_of(sbt_reader *r, const struct sbt_op *op, uint32_t def)
{
    char name[160], key[200];
    chk__op_name(r, op, name, sizeof name);
    snprintf(key, sizeof key, "elem_type.%s", name);
    const char *v = sbt_reader_meta_get(r, key);
    if (!v)
        v = sbt_reader_meta_get(r, "elem_type");
    uint32_t e;
    if (v && chk_elem_parse(v, &e) == 0)
        return e;
    return def;
}

/* Compares the bytes of two ops under the tolerance: 1 within, 0 not, -1 bytes unavailable. */
static int tolerate(sbt_reader *ra, const struct sbt_op *a, const char *da, sbt_reader *rb,
                    const struct sbt_op *b, const char *db, uint32_t elem,
                    const struct chk_tolerance *tol, double *max_diff)
{
    void *x = NULL, *y = NULL;
    size_t nx, ny;
    int res = -1;
    if (get_bytes(ra, a, da, &x, &nx) && get_bytes(rb, b, db, &y, &ny)) {
        int within;
        chk_compare_bytes(x, y, nx, ny, elem, tol, &within, max_diff);
        res = within;
    }
    free(x);
    free(y);
    return res;
}

static void fill_finding(struct chk_finding *f, sbt_reader *r, const struct sbt_op *op)
{
    if (!f)
        return;
    f->seq = op->seq;
    f->op_kind = op->kind;
    f->stream = op->stream;
    chk__op_name(r, op, f->name, sizeof f->name);
}

static void op_interval(const struct sbt_op *op, uint64_t t0, uint64_t *ts, uint64_t *dur)
{
    uint64_t b = op->host_begin, e = op->host_end;
    if (op->flags & SBT_OPF_DEV_TIME)
        b = op->dev_begin, e = op->dev_end;
    *ts = b >= t0 ? b - t0 : 0;
    *dur = e > b ? e - b : 0;
}

static int cmp_optime(const void *a, const void *b)
{
    const struct chk_op_timing *x = a, *y = b;
    return x->rel_diff > y->rel_diff ? -1 : x->rel_diff < y->rel_diff;
}

#define MAX_OP_ROWS 20

/* Keeps the MAX_OP_ROWS largest per-op regressions. */
static int op_row_add(struct chk_report *rep, const struct chk_op_timing *row)
{
    if (!rep->ops && !(rep->ops = chk__calloc(MAX_OP_ROWS, sizeof *rep->ops)))
        return chk__fail(SBT_ENOMEM, "out of memory for op timings");
    if (rep->n_ops < MAX_OP_ROWS) {
        rep->ops[rep->n_ops++] = *row;
    } else {
        uint32_t min = 0;
        for (uint32_t i = 1; i < rep->n_ops; i++)
            if (rep->ops[i].rel_diff < rep->ops[min].rel_diff)
                min = i;
        if (row->rel_diff > rep->ops[min].rel_diff)
            rep->ops[min] = *row;
    }
    return 0;
}

int chk_check(sbt_reader *cap, sbt_reader *const *runs, uint32_t n_runs, sbt_reader *baseline,
              const struct chk_opts *o, struct chk_report **out)
{
    *out = NULL;
    if (!cap || (n_runs && !runs))
        return chk__fail(SBT_EINVAL, "check: a capture and the result traces are required");
    if (n_runs > 1024)
        return chk__fail(SBT_ELIMIT, "check: %u result traces > 1024", n_runs);
    struct chk_report *rep;
    int st = chk__report_alloc(&rep, o, CHK_MODE_CHECK, n_runs);
    if (st)
        return st;
    const struct sbt_range *range = CHK_OPT(o, range, (const struct sbt_range *)NULL);
    uint32_t max_f = CHK_OPT(o, max_findings, 1000u);
    uint32_t def_elem = CHK_OPT(o, elem_type, 0u);
    const chk_expect *expect = CHK_OPT(o, expect, (const chk_expect *)NULL);
    chk_expect *upd = CHK_OPT(o, expect_update, (chk_expect *)NULL);
    const char *ref_dump = CHK_OPT(o, ref_dump, (const char *)NULL);
    const char *const *run_dumps = CHK_OPT(o, run_dumps, (const char *const *)NULL);
    int collect = CHK_OPT(o, collect_events, 0);
    void (*progress)(void *, uint64_t, uint64_t) = CHK_OPT(o, progress, NULL);
    void *pctx = CHK_OPT(o, progress_ctx, (void *)NULL);
    double thr = rep->threshold, alpha = 1 - rep->confidence;

    /* device of the expectations: the first run's device 1, else the capture's */
    {
        sbt_reader *dr = n_runs ? runs[0] : cap;
        const struct sbt_device *d = sbt_reader_device(dr, 1);
        const char *dn = d ? sbt_reader_string(dr, d->name) : NULL;
        if (!(rep->device = chk__strdup(dn && *dn ? dn : "*"))) {
            chk_report_free(rep);
            return chk__fail(SBT_ENOMEM, "out of memory");
        }
    }

    const struct sbt_info *ci = sbt_reader_info(cap);
    uint64_t lo = ci->seq_first, hi = ci->seq_end;
    if (range && (st = sched_range_bounds(cap, range, &lo, &hi)) < 0) {
        chk_report_free(rep);
        return chk__fail(st, "check: %s", sched_errmsg());
    }
    struct chk_status status;
    struct chk_kmap km = {.rng = 0x5eed};
    struct runcur *rc = chk__calloc(n_runs + 2, sizeof *rc);
    sbt_cursor *cc = NULL;
    uint64_t *dig_dur = chk__calloc(n_runs + 1, sizeof *dig_dur);
    double *samples = chk__calloc(n_runs + 1, sizeof *samples);
    if ((st = chk__status_init(&status, lo, hi)))
        goto done;
    if (!rc || !dig_dur || !samples) {
        st = chk__fail(SBT_ENOMEM, "out of memory");
        goto done;
    }
    /* runs read [lo, hi) plus what lies beyond the capture (extra ops) */
    struct sbt_range rr = {.has_seq = 1, .seq_begin = lo, .seq_end = UINT64_MAX};
    if (hi < ci->seq_end)
        rr.seq_end = hi;
    for (uint32_t i = 0; i < n_runs + (baseline != NULL); i++) {
        sbt_reader *r = i < n_runs ? runs[i] : baseline;
        if ((st = sbt_cursor_open(r, &rr, &rc[i].c)) < 0) {
            st = chk__fail_sbt(st);
            goto done;
        }
        if ((st = rc_next(&rc[i])))
            goto done;
    }
    struct runcur *bc = baseline ? &rc[n_runs] : NULL;
    if ((st = sbt_cursor_open(cap, range, &cc)) < 0) {
        st = chk__fail_sbt(st);
        goto done;
    }
    if (collect) {
        rep->priv->ref_t0 = ci->t_min;
        rep->priv->run_t0 = n_runs ? sbt_reader_info(runs[0])->t_min : ci->t_min;
    }

    const struct sbt_op *op;
    const struct sbt_op *rop[1024 + 1];
    char name[160], gbuf[160];
    uint64_t done_ops = 0, total = hi - lo;
    while ((st = sbt_cursor_next(cc, &op)) == 1) {
        rep->n_ref_ops++;
        if (progress && (++done_ops & 0xffff) == 0)
            progress(pctx, done_ops, total);
        /* bring every run to this seq; ops before it not selected by the range are skipped,
         * ops outside the capture's seq span are extra */
        for (uint32_t i = 0; i < n_runs + (bc != NULL); i++) {
            while (rc[i].op && rc[i].op->seq < op->seq) {
                if (i < n_runs && rc[i].op->seq < ci->seq_first) {
                    struct chk_finding *f = chk__finding_add(rep, max_f, CHK_EXTRA);
                    fill_finding(f, runs[i], rc[i].op);
                    if (f)
                        f->run = i + 1, f->seq_run = rc[i].op->seq;
                }
                if ((st = rc_next(&rc[i])))
                    goto done;
            }
            rop[i] = rc[i].op && rc[i].op->seq == op->seq ? rc[i].op : NULL;
        }
        name[0] = 0;
#define NAME() (name[0] ? name : chk__op_name(cap, op, name, sizeof name))
        uint32_t label = CHK_LABEL_OK;
        sbt_hash exp_d = {0, 0};
        int has_exp = expect && chk_expect_get(expect, rep->device, op->seq, &label, &exp_d) == 1;
        uint32_t opst = CHK_ST_UNKNOWN;

        /* missing, kind changes, errors */
        uint32_t n_missing = 0, first_missing = 0;
        for (uint32_t i = 0; i < n_runs; i++) {
            if (rop[i] && rop[i]->kind != op->kind) {
                struct chk_finding *f = chk__finding_add(rep, max_f, CHK_EXTRA);
                fill_finding(f, runs[i], rop[i]);
                if (f) {
                    f->run = i + 1, f->seq_run = rop[i]->seq;
                    snprintf(f->note, sizeof f->note, "a %s where the capture has a %s",
                             sbt_op_kind_name(rop[i]->kind), sbt_op_kind_name(op->kind));
                }
                rop[i] = NULL;
            }
            if (!rop[i] && !n_missing++)
                first_missing = i;
        }
        if (n_missing) {
            struct chk_finding *f = chk__finding_add(rep, max_f, CHK_MISSING);
            fill_finding(f, cap, op);
            if (f) {
                f->run = first_missing + 1;
                snprintf(f->note, sizeof f->note, "absent from %u of %u runs (first: %s)",
                         n_missing, n_runs, rep->run_names[first_missing]);
            }
            opst = CHK_ST_MISMATCH;
        }
        for (uint32_t i = 0; i < n_runs; i++) {
            if (!rop[i] || !(rop[i]->flags & SBT_OPF_ERROR))
                continue;
            struct chk_finding *f = chk__finding_add(rep, max_f, CHK_REPLAY_ERROR);
            fill_finding(f, cap, op);
            if (f) {
                f->run = i + 1;
                const char *m = sbt_reader_string(runs[i], rop[i]->error);
                snprintf(f->note, sizeof f->note, "%s", m && *m ? m : "error");
            }
            opst = CHK_ST_MISMATCH;
            break;
        }

        /* outputs */
        if (has_exp && label == CHK_LABEL_SKIP) {
            rep->n_skipped++;
        } else {
            int first = -1, varied = -1;
            for (uint32_t i = 0; i < n_runs; i++) {
                if (!rop[i] || !(rop[i]->flags & SBT_OPF_DIGEST) || (rop[i]->flags & SBT_OPF_ERROR))
                    continue;
                if (first < 0)
                    first = (int)i;
                else if (varied < 0 && !sbt_hash_eq(rop[i]->digest, rop[first]->digest))
                    varied = (int)i;
            }
            int cap_d = (op->flags & SBT_OPF_DIGEST) != 0;
            int has_ref = (has_exp && label == CHK_LABEL_OK) || cap_d;
            sbt_hash ref = has_exp && label == CHK_LABEL_OK ? exp_d : op->digest;
            const char *ref_what = has_exp && label == CHK_LABEL_OK ? "expected" : "capture";
            uint32_t elem = def_elem;
            int elem_known = 0;
            if (varied >= 0) {
                const struct sbt_op *a = rop[first], *b = rop[varied];
                double md = 0;
                int tol = -1;
                if (rep->tol.kind != CHK_TOL_BITWISE) {
                    elem = elem_of(cap, op, def_elem), elem_known = 1;
                    tol =
                        tolerate(runs[first], a, run_dumps ? run_dumps[first] : NULL, runs[varied],
                                 b, run_dumps ? run_dumps[varied] : NULL, elem, &rep->tol, &md);
                }
                if (tol == 1) {
                    rep->n_tolerated++;
                    rep->max_diff = md > rep->max_diff ? md : rep->max_diff;
                    varied = -1; /* agree within the tolerance: compare with the reference */
                } else if (has_exp && label == CHK_LABEL_FLAKY) {
                    rep->n_flaky++;
                    if (opst == CHK_ST_UNKNOWN)
                        opst = CHK_ST_FLAKY;
                } else {
                    struct chk_finding *f = chk__finding_add(rep, max_f, CHK_NONDETERMINISTIC);
                    fill_finding(f, cap, op);
                    if (f) {
                        f->run = (uint32_t)varied + 1;
                        f->has_ref = 1;
                        f->ref_digest = a->digest;
                        f->got_digest = b->digest;
                        f->bytes_compared = tol == 0;
                        f->max_diff = md;
                        snprintf(f->note, sizeof f->note, "%s and %s differ%s",
                                 rep->run_names[first], rep->run_names[varied],
                                 tol < 0 && rep->tol.kind != CHK_TOL_BITWISE
                                     ? "; bytes unavailable for the tolerance"
                                     : "");
                    }
                    if (tol < 0 && rep->tol.kind != CHK_TOL_BITWISE)
                        rep->n_bytes_unavailable++;
                    opst = CHK_ST_MISMATCH;
                }
                rep->n_verified++;
            }
            if (varied < 0 && first >= 0 && has_ref) {
                rep->n_verified++;
                const struct sbt_op *a = rop[first];
                if (sbt_hash_eq(a->digest, ref)) {
                    rep->n_matched++;
                    if (opst == CHK_ST_UNKNOWN)
                        opst = CHK_ST_MATCHED;
                } else {
                    double md = 0;
                    int tol = -1;
                    if (rep->tol.kind != CHK_TOL_BITWISE && !strcmp(ref_what, "capture")) {
                        if (!elem_known)
                            elem = elem_of(cap, op, def_elem);
                        tol = tolerate(cap, op, ref_dump, runs[first], a,
                                       run_dumps ? run_dumps[first] : NULL, elem, &rep->tol, &md);
                    }
                    if (tol == 1) {
                        rep->n_tolerated++;
                        rep->n_matched++;
                        rep->max_diff = md > rep->max_diff ? md : rep->max_diff;
                        if (opst == CHK_ST_UNKNOWN)
                            opst = CHK_ST_MATCHED;
                    } else {
                        struct chk_finding *f = chk__finding_add(rep, max_f, CHK_DIVERGENT);
                        fill_finding(f, cap, op);
                        if (f) {
                            f->run = (uint32_t)first + 1;
                            f->has_ref = 1;
                            f->ref_digest = ref;
                            f->got_digest = a->digest;
                            f->bytes_compared = tol == 0;
                            f->max_diff = md;
                            snprintf(f->note, sizeof f->note, "%s digest differs from the %s%s",
                                     n_runs > 1 ? "the runs agree; their" : "the run's", ref_what,
                                     tol < 0 && rep->tol.kind != CHK_TOL_BITWISE
                                         ? "; bytes unavailable for the tolerance"
                                         : "");
                        }
                        if (tol < 0 && rep->tol.kind != CHK_TOL_BITWISE)
                            rep->n_bytes_unavailable++;
                        opst = CHK_ST_MISMATCH;
                    }
                }
            } else if (varied < 0 && first >= 0) {
                /* no reference: agreement across runs is all there is to check. It counts as
                 * matched, but for the first divergence the op stays unknown (passes its input
                 * taint on): runs that agree say nothing about a difference from the capture
                 * that came in through its inputs (a copy of a changed upload, say). */
                int n_d = 0;
                for (uint32_t i = 0; i < n_runs; i++)
                    n_d += rop[i] && (rop[i]->flags & SBT_OPF_DIGEST) != 0;
                if (n_d >= 2) {
                    rep->n_verified++;
                    rep->n_matched++;
                } else {
                    rep->n_unverified++;
                }
            } else if (first < 0 && (cap_d || has_exp)) {
                rep->n_unverified++;
            }
            /* expectations out: what these runs say about the op */
            if (upd && (first >= 0 || (n_runs == 0 && cap_d))) {
                /* flaky: the digest varied across these runs (established by repetition) */
                int flaky = varied >= 0 || opst == CHK_ST_FLAKY;
                sbt_hash d = first >= 0 ? rop[first]->digest : op->digest;
                if ((st = chk_expect_set(upd, rep->device, op->seq,
                                         flaky ? CHK_LABEL_FLAKY : CHK_LABEL_OK, flaky ? NULL : &d,
                                         NAME())) < 0)
                    goto done;
            }
        }
        if (upd && has_exp && label == CHK_LABEL_SKIP &&
            (st = chk_expect_set(upd, rep->device, op->seq, CHK_LABEL_SKIP, NULL, NAME())) < 0)
            goto done;
        chk__status_set(&status, op->seq, opst);

        /* timing */
        const struct sbt_op *tref = bc ? rop[n_runs] : op;
        uint64_t ref_ns = 0;
        int has_ref_t = tref && chk__op_dur(tref, &ref_ns);
        uint32_t n_t = 0;
        for (uint32_t i = 0; i < n_runs; i++)
            if (rop[i] && chk__op_dur(rop[i], &dig_dur[n_t]))
                samples[n_t] = (double)dig_dur[n_t], n_t++;
        const char *g = chk__group_name(cap, op, gbuf, sizeof gbuf);
        if (g && (has_ref_t || n_t)) {
            uint32_t k;
            if ((st = chk__kmap_find(&km, g, &k)) ||
                (has_ref_t && (st = chk__samples_add(&km.k[k].ref, (double)ref_ns, &km.rng))))
                goto done;
            for (uint32_t i = 0; i < n_t; i++)
                if ((st = chk__samples_add(&km.k[k].run, samples[i], &km.rng)))
                    goto done;
        }
        if (has_ref_t && n_t) {
            rep->n_timed++;
            double lim = (double)ref_ns * (1 + (thr > 0 ? thr : 0));
            uint32_t above = 0;
            for (uint32_t i = 0; i < n_t; i++)
                above += samples[i] > lim;
            if (thr >= 0 && above * 2 > n_t) {
                struct chk_op_timing row = {.seq = op->seq, .ref_ns = (double)ref_ns};
                if ((st = chk_summarize(samples, n_t, rep->confidence, &row.run)))
                    goto done;
                row.rel_diff = ref_ns ? row.run.median / (double)ref_ns - 1 : INFINITY;
                row.p_value = chk_sign_test(above, n_t);
                if (row.run.median > lim && row.p_value < alpha) {
                    snprintf(row.name, sizeof row.name, "%.79s", NAME()); /* name[80]: cut */
                    rep->count[CHK_TIMING]++;
                    if ((st = op_row_add(rep, &row)))
                        goto done;
                }
            }
        }

        /* events for the Perfetto diff: the capture against the first run */
        if (collect && n_runs) {
            struct chk_event e = {.seq = op->seq, .seq_run = UINT64_MAX, .stream = op->stream};
            op_interval(op, rep->priv->ref_t0, &e.ref_ts, &e.ref_dur);
            e.d_ref = op->digest;
            if (!rop[0]) {
                e.verdict = CHK_V_MISSING;
                e.ts = e.ref_ts, e.dur = e.ref_dur;
                e.ref_ts = UINT64_MAX;
            } else {
                e.seq_run = rop[0]->seq;
                op_interval(rop[0], rep->priv->run_t0, &e.ts, &e.dur);
                e.d_run = rop[0]->digest;
                uint64_t a, b;
                int ta = chk__op_dur(op, &a), tb = chk__op_dur(rop[0], &b);
                if (opst == CHK_ST_MISMATCH)
                    e.verdict = CHK_V_MISMATCH;
                else if (ta && tb && thr >= 0 && (double)b > (double)a * (1 + thr))
                    e.verdict = CHK_V_SLOWER;
                else if (ta && tb && thr >= 0 && (double)b < (double)a * (1 - thr))
                    e.verdict = CHK_V_FASTER;
            }
            if ((st = chk__event_add(rep, &e, NAME())))
                goto done;
        }
#undef NAME
    }
    if (st < 0) {
        st = chk__fail_sbt(st);
        goto done;
    }
    /* what the runs hold beyond the capture */
    for (uint32_t i = 0; i < n_runs; i++) {
        for (; rc[i].op; st = rc_next(&rc[i])) {
            if (st)
                goto done;
            if (rc[i].op->seq < ci->seq_end)
                continue;
            struct chk_finding *f = chk__finding_add(rep, max_f, CHK_EXTRA);
            fill_finding(f, runs[i], rc[i].op);
            if (f) {
                f->run = i + 1, f->seq_run = rc[i].op->seq;
                snprintf(f->note, sizeof f->note, "beyond the capture's last op %" PRIu64,
                         ci->seq_end ? ci->seq_end - 1 : 0);
            }
            if (collect && i == 0) {
                struct chk_event e = {.seq = UINT64_MAX,
                                      .seq_run = rc[i].op->seq,
                                      .verdict = CHK_V_EXTRA,
                                      .ref_ts = UINT64_MAX,
                                      .stream = rc[i].op->stream};
                op_interval(rc[i].op, rep->priv->run_t0, &e.ts, &e.dur);
                char nb[160];
                if ((st = chk__event_add(rep, &e, chk__op_name(runs[i], rc[i].op, nb, sizeof nb))))
                    goto done;
            }
        }
        if (st)
            goto done;
    }
    if (progress)
        progress(pctx, total, total);
    if ((st = chk__kmap_report(&km, rep)) || (st = chk__roots(cap, &status, rep)))
        goto done;
    if (rep->n_ops > 1)
        qsort(rep->ops, rep->n_ops, sizeof *rep->ops, cmp_optime);
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        rep->failed |= rep->count[c] != 0;
    st = 0;
done:
    if (rc)
        for (uint32_t i = 0; i < n_runs + 1; i++)
            sbt_cursor_close(rc[i].c);
    sbt_cursor_close(cc);
    free(rc);
    free(dig_dur);
    free(samples);
    chk__kmap_free(&km);
    chk__status_free(&status);
    if (st < 0) {
        chk_report_free(rep);
        return st;
    }
    *out = rep;
    return 0;
}
