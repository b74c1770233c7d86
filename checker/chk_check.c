/*
 * checker/chk_check.c — `check`: the capture and N replay results read in lockstep by seq (one
 * cursor each, so memory does not grow with the trace), every op classified, every device op
 * counted as compared or listed as unverified, timings gathered per group and run; the
 * baseline results read once each before; then the timing tests (chk_util.c) and the
 * first-divergence pass (chk_roots.c) over the ops that mismatched.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Reads one reference run (a baseline result) into the groups' reference reservoirs. */
static int read_reference(struct chk_timing *tm, sbt_reader *r, const struct sbt_range *rr)
{
    sbt_cursor *c;
    int st = sbt_cursor_open(r, rr, &c);
    if (st < 0)
        return chk__fail_sbt(st);
    const struct sbt_op *op;
    char gb[160];
    while ((st = sbt_cursor_next(c, &op)) == 1) {
        uint64_t ns;
        const char *g;
        struct chk_tgroup *tg;
        if (!chk__op_dur(op, &ns) || !(g = chk_group_name(r, op, gb, sizeof gb)))
            continue;
        if ((st = chk__timing_group(tm, g, &tg)) ||
            (st = chk__samples_add(&tg->ref, (double)ns, &tm->rng)))
            break;
    }
    sbt_cursor_close(c);
    if (st < 0)
        return st == SBT_ENOMEM || st == SBT_ELIMIT ? st : chk__fail_sbt(st);
    return chk__timing_ref_done(tm);
}

/* Median share of their wall time the results' threads waited for a CPU; NAN if none says. */
static double cpu_wait_share(sbt_reader *const *r, uint32_t n)
{
    double v[1024];
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && k < 1024; i++) {
        const char *w = sbt_reader_meta_get(r[i], "replay.cpu_wait_ns");
        const char *t = sbt_reader_meta_get(r[i], "replay.wall_ns");
        double wv = w ? strtod(w, NULL) : 0, tv = t ? strtod(t, NULL) : 0;
        if (w && tv > 0)
            v[k++] = wv / tv;
    }
    if (!k)
        return NAN;
    struct chk_summary s;
    return chk_summarize(v, k, 0.95, &s) == 0 ? s.median : NAN;
}

/* The regimes of the runs and the baseline must be one (the first run's, else the first
 * baseline result's); a difference fails or, when allowed, is noted. */
static int check_regimes(struct chk_report *rep, sbt_reader *const *runs, uint32_t n_runs,
                         sbt_reader *const *base, uint32_t n_base, const char *const *base_names,
                         int allow)
{
    sbt_reader *first = n_runs ? runs[0] : base[0];
    const char *first_name = n_runs ? rep->run_names[0] : base_names ? base_names[0] : "baseline 1";
    chk_regime(first, rep->regime, sizeof rep->regime);
    size_t pos = 0;
    for (uint32_t i = 0; i < n_runs + n_base; i++) {
        sbt_reader *r = i < n_runs ? runs[i] : base[i - n_runs];
        char why[300], nb[32];
        if (r == first || chk_regime_same(first, r, why, sizeof why))
            continue;
        const char *name = i < n_runs ? rep->run_names[i] : NULL;
        if (!name) {
            snprintf(nb, sizeof nb, "baseline %u", i - n_runs + 1);
            name = base_names && base_names[i - n_runs] ? base_names[i - n_runs] : nb;
        }
        if (!allow)
            return chk__fail(
                SBT_EINVAL,
                "timing regimes differ: %s vs %s: %s. Timings compare only within one regime "
                "(verify level, timing mode, device, driver, its settings): make the baseline "
                "the way the runs are made (reprise check TRACE --runs N --keep DIR), or "
                "--allow-regime-change",
                first_name, name, why);
        if (pos + 1 < sizeof rep->regime_note) {
            int n = snprintf(rep->regime_note + pos, sizeof rep->regime_note - pos, "%s%s: %s",
                             pos ? "; " : "", name, why);
            pos = n > 0 ? pos + (size_t)n : pos;
        }
    }
    return 0;
}

int chk_check(sbt_reader *cap, sbt_reader *const *runs, uint32_t n_runs, sbt_reader *const *base,
              uint32_t n_base, const struct chk_opts *o, struct chk_report **out)
{
    *out = NULL;
    if (!cap || (n_runs && !runs) || (n_base && !base))
        return chk__fail(SBT_EINVAL, "check: a capture and the result traces are required");
    if (n_runs > 1024)
        return chk__fail(SBT_ELIMIT, "check: %u result traces > 1024", n_runs);
    uint32_t tref = CHK_OPT(o, timing_ref, (uint32_t)CHK_TREF_AUTO);
    if (tref == CHK_TREF_AUTO)
        tref = n_base ? CHK_TREF_BASELINE : CHK_TREF_NONE;
    if (tref > CHK_TREF_BASELINE)
        return chk__fail(SBT_EINVAL, "check: timing reference %u unknown", tref);
    if (tref == CHK_TREF_BASELINE && !n_base)
        return chk__fail(SBT_EINVAL,
                         "check: the timing reference is a baseline, and none is given");
    if (tref != CHK_TREF_BASELINE && n_base)
        return chk__fail(SBT_EINVAL,
                         "check: %u baseline results given, but the timing reference "
                         "is %s",
                         n_base, tref == CHK_TREF_CAPTURE ? "the capture" : "none");
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
    const char *const *base_names = CHK_OPT(o, base_names, (const char *const *)NULL);
    int collect = CHK_OPT(o, collect_events, 0);
    int allow_regime = CHK_OPT(o, allow_regime_change, 0);
    void (*progress)(void *, uint64_t, uint64_t) = CHK_OPT(o, progress, NULL);
    void *pctx = CHK_OPT(o, progress_ctx, (void *)NULL);
    double thr = rep->threshold;
    rep->timing_ref = tref;
    rep->n_ref_runs = tref == CHK_TREF_BASELINE ? n_base : tref == CHK_TREF_CAPTURE ? 1 : 0;

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
    /* completeness of everything read */
    chk__note_complete(rep, cap, rep->ref_name);
    for (uint32_t i = 0; i < n_runs; i++)
        chk__note_complete(rep, runs[i], rep->run_names[i]);
    for (uint32_t i = 0; i < n_base; i++) {
        char nb[32];
        snprintf(nb, sizeof nb, "baseline %u", i + 1);
        chk__note_complete(rep, base[i], base_names && base_names[i] ? base_names[i] : nb);
    }
    /* the regime of the timings, and how busy the machine was */
    rep->cpu_wait = cpu_wait_share(runs, n_runs);
    rep->ref_cpu_wait = cpu_wait_share(base, n_base);
    if (n_runs)
        chk_regime(runs[0], rep->regime, sizeof rep->regime);
    if (tref == CHK_TREF_BASELINE && thr >= 0 &&
        (st = check_regimes(rep, runs, n_runs, base, n_base, base_names, allow_regime)) < 0) {
        chk_report_free(rep);
        return st;
    }

    const struct sbt_info *ci = sbt_reader_info(cap);
    uint64_t lo = ci->seq_first, hi = ci->seq_end;
    if (range && (st = sched_range_bounds(cap, range, &lo, &hi)) < 0) {
        chk_report_free(rep);
        return chk__fail(st, "check: %s", sched_errmsg());
    }
    struct chk_status status;
    struct chk_timing tm = {.n_runs = n_runs, .rng = 0x5eed, .q = rep->timing_quantile};
    struct chk_idgen idg = {0};
    struct runcur *rc = chk__calloc(n_runs + 1, sizeof *rc);
    sbt_cursor *cc = NULL;
    uint64_t *dig_dur = chk__calloc(n_runs + 1, sizeof *dig_dur);
    uint8_t *run_used = chk__calloc(n_runs + 1, 1);
    int ref_compared = 0;
    if ((st = chk__status_init(&status, lo, hi)))
        goto done;
    if (!rc || !dig_dur || !run_used) {
        st = chk__fail(SBT_ENOMEM, "out of memory");
        goto done;
    }
    /* the baseline: each result is one reference run of every group it has (by seq in the
     * range when there is one) */
    struct sbt_range br = {.has_seq = 1, .seq_begin = lo, .seq_end = hi};
    for (uint32_t i = 0; tref == CHK_TREF_BASELINE && i < n_base; i++)
        if ((st = read_reference(&tm, base[i], range ? &br : NULL)) < 0)
            goto done;
    /* runs read [lo, hi) plus what lies beyond the capture (extra ops) */
    struct sbt_range rr = {.has_seq = 1, .seq_begin = lo, .seq_end = UINT64_MAX};
    if (hi < ci->seq_end)
        rr.seq_end = hi;
    for (uint32_t i = 0; i < n_runs; i++) {
        if ((st = sbt_cursor_open(runs[i], &rr, &rc[i].c)) < 0) {
            st = chk__fail_sbt(st);
            goto done;
        }
        if ((st = rc_next(&rc[i])))
            goto done;
    }
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
    char name[160], gbuf[160], idbuf[512];
    uint64_t done_ops = 0, total = hi - lo;
    while ((st = sbt_cursor_next(cc, &op)) == 1) {
        rep->n_ref_ops++;
        if (progress && (++done_ops & 0xffff) == 0)
            progress(pctx, done_ops, total);
        /* bring every run to this seq; ops before it not selected by the range are skipped,
         * ops outside the capture's seq span are extra */
        for (uint32_t i = 0; i < n_runs; i++) {
            while (rc[i].op && rc[i].op->seq < op->seq) {
                if (rc[i].op->seq < ci->seq_first) {
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
        const char *id = NULL;
        if (expect || upd) {
            if ((st = chk__identity_next(&idg, cap, op, idbuf, sizeof idbuf)) < 0)
                goto done;
            id = idbuf;
        }
        uint32_t label = CHK_LABEL_OK;
        sbt_hash exp_d = {0, 0};
        int has_exp =
            expect && chk_expect_get(expect, rep->device, id, op->seq, &label, &exp_d) == 1;
        uint32_t opst = CHK_ST_UNKNOWN;

        /* missing, kind changes, errors */
        uint32_t n_missing = 0, first_missing = 0, n_err = 0, n_have = 0;
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
            n_have += rop[i] != NULL;
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
            if (!n_err++) {
                struct chk_finding *f = chk__finding_add(rep, max_f, CHK_REPLAY_ERROR);
                fill_finding(f, cap, op);
                if (f) {
                    f->run = i + 1;
                    const char *m = sbt_reader_string(runs[i], rop[i]->error);
                    snprintf(f->note, sizeof f->note, "%s", m && *m ? m : "error");
                }
            }
            opst = CHK_ST_MISMATCH;
        }

        /* outputs */
        int compared = 0, unv = -1;
        int first = -1, varied = -1, n_d = 0;
        for (uint32_t i = 0; i < n_runs; i++) {
            if (!rop[i] || !(rop[i]->flags & SBT_OPF_DIGEST) || (rop[i]->flags & SBT_OPF_ERROR))
                continue;
            n_d++;
            if (first < 0)
                first = (int)i;
            else if (varied < 0 && !sbt_hash_eq(rop[i]->digest, rop[first]->digest))
                varied = (int)i;
        }
        int cap_d = (op->flags & SBT_OPF_DIGEST) != 0;
        if (has_exp && label == CHK_LABEL_SKIP) {
            rep->n_skipped++;
            unv = CHK_UNV_SKIPPED;
        } else {
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
                    unv = CHK_UNV_FLAKY;
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
                    compared = 1;
                }
            }
            if (varied < 0 && first >= 0 && has_ref) {
                compared = 1;
                ref_compared = 1;
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
            } else if (varied < 0 && first >= 0 && n_d >= 2) {
                /* no reference: agreement across runs is all there is to check. It counts as
                 * compared and matched, but for the first divergence the op stays unknown
                 * (passes its input taint on): runs that agree say nothing about a difference
                 * from the capture that came in through its inputs (a copy of a changed
                 * upload, say). */
                compared = 1;
                rep->n_matched++;
            }
            /* expectations out: what these runs say about the op */
            if (upd && (first >= 0 || (n_runs == 0 && cap_d))) {
                /* flaky: the digest varied across these runs (established by repetition) */
                int flaky = varied >= 0 || opst == CHK_ST_FLAKY;
                sbt_hash d = first >= 0 ? rop[first]->digest : op->digest;
                if ((st = chk_expect_set(upd, rep->device, id, op->seq,
                                         flaky ? CHK_LABEL_FLAKY : CHK_LABEL_OK, flaky ? NULL : &d,
                                         NAME())) < 0)
                    goto done;
            }
        }
        if (upd && has_exp && label == CHK_LABEL_SKIP &&
            (st = chk_expect_set(upd, rep->device, id, op->seq, CHK_LABEL_SKIP, NULL, NAME())) < 0)
            goto done;
        chk__status_set(&status, op->seq, opst);
        /* coverage: compared, or listed as unverified with the reason */
        if (compared) {
            rep->n_verified++;
            for (uint32_t i = 0; i < n_runs; i++)
                if (rop[i] && (rop[i]->flags & SBT_OPF_DIGEST) && !(rop[i]->flags & SBT_OPF_ERROR))
                    run_used[i] = 1;
        }
        if (chk__is_device_op(op) || n_d) {
            rep->n_device_ops++;
            if (!compared) {
                if (unv < 0)
                    unv = n_have && n_err == n_have                            ? CHK_UNV_ERROR
                          : n_d || cap_d || (has_exp && label == CHK_LABEL_OK) ? CHK_UNV_ONE_SIDE
                                                                               : CHK_UNV_NO_DIGEST;
                if ((st = chk__unverified_add(rep, max_f, cap, op, (uint32_t)unv)))
                    goto done;
            }
        }

        /* timing: each run's launches into its own reservoir of the op's group */
        uint64_t ref_ns = 0;
        int has_ref_t = tref == CHK_TREF_CAPTURE && chk__op_dur(op, &ref_ns);
        uint32_t n_t = 0;
        for (uint32_t i = 0; i < n_runs; i++)
            if (rop[i] && chk__op_dur(rop[i], &dig_dur[i]))
                n_t++;
            else
                dig_dur[i] = UINT64_MAX;
        const char *g = has_ref_t || n_t ? chk_group_name(cap, op, gbuf, sizeof gbuf) : NULL;
        if (g) {
            struct chk_tgroup *tg;
            if ((st = chk__timing_group(&tm, g, &tg)) ||
                (has_ref_t && (st = chk__samples_add(&tg->ref, (double)ref_ns, &tm.rng))))
                goto done;
            for (uint32_t i = 0; i < n_runs; i++)
                if (dig_dur[i] != UINT64_MAX &&
                    (st = chk__samples_add(&tg->run[i], (double)dig_dur[i], &tm.rng)))
                    goto done;
        }
        rep->n_timed += n_t != 0;

        /* events for the Perfetto diff: the capture against the first run; per-op slower and
         * faster only when the capture is the timing reference */
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
                int timed = ta && tb && thr >= 0 && tref == CHK_TREF_CAPTURE;
                if (opst == CHK_ST_MISMATCH)
                    e.verdict = CHK_V_MISMATCH;
                else if (timed && (double)b > (double)a * (1 + thr))
                    e.verdict = CHK_V_SLOWER;
                else if (timed && (double)b < (double)a * (1 - thr))
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
    if (tref == CHK_TREF_CAPTURE && (st = chk__timing_ref_done(&tm)))
        goto done;
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
    if ((st = chk__timing_report(&tm, rep, tref != CHK_TREF_NONE)) ||
        (st = chk__roots(cap, &status, rep)))
        goto done;
    /* what a pass means: with a reference, each run is a trial; across runs only, the first
     * run is the yardstick of the others */
    uint32_t n_used = 0;
    for (uint32_t i = 0; i < n_runs; i++)
        n_used += run_used[i];
    rep->n_compared_runs = ref_compared ? n_used : n_used ? n_used - 1 : 0;
    rep->pass_bound = chk_no_difference_bound(rep->n_compared_runs, rep->confidence);
    if (expect)
        rep->n_expect_unused = chk_expect_unused(expect, rep->device);
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        rep->failed |= rep->count[c] != 0;
    if (!rep->n_verified) {
        rep->failed = 1;
        if (!rep->n_device_ops)
            snprintf(rep->fail_reason, sizeof rep->fail_reason,
                     "nothing was verified: the %s holds no device op", range ? "range" : "trace");
        else if (!n_runs)
            snprintf(rep->fail_reason, sizeof rep->fail_reason,
                     "nothing was verified: no replay results to compare (%" PRIu64 " device ops)",
                     rep->n_device_ops);
        else
            snprintf(rep->fail_reason, sizeof rep->fail_reason,
                     "nothing was verified: none of %" PRIu64
                     " device ops has digests to compare (replay with --verify op, or capture "
                     "with --digests)",
                     rep->n_device_ops);
    }
    st = 0;
done:
    if (rc)
        for (uint32_t i = 0; i < n_runs; i++)
            sbt_cursor_close(rc[i].c);
    sbt_cursor_close(cc);
    free(rc);
    free(dig_dur);
    free(run_used);
    chk__timing_free(&tm);
    chk__idgen_free(&idg);
    chk__status_free(&status);
    if (st < 0) {
        chk_report_free(rep);
        return st;
    }
    *out = rep;
    return 0;
}
