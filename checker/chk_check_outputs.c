/*
 * checker/chk_check_outputs.c — `check`, one op's outputs (the walk in chk_check.c calls these
 * for each reference op): its identity and expectation; the runs' digests compared among
 * themselves, then with the reference (the expected digest, else the capture's); a digest
 * mismatch compared again on the bytes under the tolerance, where both sides' bytes can be had
 * (a HOST_READ's blob, or the file a replay's --dump wrote); and what these runs say back into
 * the expectations (--update-expect). Classifies NONDETERMINISTIC and DIVERGENT and sets what
 * the walk's coverage and first-divergence status read (struct chk_check_op).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker/chk_int.h"

/* The op's identity, when expectations are read or written, and its expectation. */
int chk__check_expectation(struct chk_check_ctx *c, struct chk_check_op *o)
{
    if (c->expect || c->upd) {
        int st = chk__identity_next(&c->idg, c->cap, o->op, c->idbuf, sizeof c->idbuf);
        if (st < 0)
            return st;
        o->id = c->idbuf;
    }
    o->has_exp = c->expect && chk_expect_get(c->expect, c->rep->device, o->id, o->op->seq,
                                             &o->label, &o->exp_d) == 1;
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

/* The element type of the op's outputs: the capture's metadata for its kernel, for the trace,
 * else the option's. Looked up once an op, when a tolerance needs it. */
static uint32_t op_elem(struct chk_check_ctx *c, struct chk_check_op *o)
{
    if (o->elem_known)
        return o->elem;
    char name[160], key[200];
    chk__op_name(c->cap, o->op, name, sizeof name);
    snprintf(key, sizeof key, "elem_type.%s", name);
    const char *v = sbt_reader_meta_get(c->cap, key);
    if (!v)
        v = sbt_reader_meta_get(c->cap, "elem_type");
    uint32_t e;
    o->elem = v && chk_elem_parse(v, &e) == 0 ? e : c->def_elem;
    o->elem_known = 1;
    return o->elem;
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

static const char *run_dump(const struct chk_check_ctx *c, int run)
{
    return c->run_dumps ? c->run_dumps[run] : NULL;
}

/* A NONDETERMINISTIC or DIVERGENT finding at the op, seen in run (1-based): the two digests,
 * what the bytes said (tol from tolerate: 0 not within, -1 unavailable), note, and whether the
 * tolerance went without bytes. */
static void output_finding(struct chk_check_ctx *c, const struct chk_check_op *o, uint32_t cls,
                           uint32_t run, sbt_hash ref, sbt_hash got, int tol, double md,
                           const char *note)
{
    struct chk_report *rep = c->rep;
    int unavailable = tol < 0 && rep->tol.kind != CHK_TOL_BITWISE;
    struct chk_finding *f = chk__finding_add(rep, c->max_f, cls);
    chk__finding_op(f, c->cap, o->op);
    if (f) {
        f->run = run;
        f->has_ref = 1;
        f->ref_digest = ref;
        f->got_digest = got;
        f->bytes_compared = tol == 0;
        f->max_diff = md;
        snprintf(f->note, sizeof f->note, "%s%s", note,
                 unavailable ? "; bytes unavailable for the tolerance" : "");
    }
    if (unavailable)
        rep->n_bytes_unavailable++;
}

/* Two runs' digests differ (first and varied). Within the tolerance they agree after all
 * (varied is reset and the reference decides); a known-flaky op stays unverified; else the op
 * is NONDETERMINISTIC. */
static void runs_disagree(struct chk_check_ctx *c, struct chk_check_op *o)
{
    struct chk_report *rep = c->rep;
    int a = o->first, b = o->varied;
    double md = 0;
    int tol = -1;
    if (rep->tol.kind != CHK_TOL_BITWISE)
        tol = tolerate(c->runs[a], c->rop[a], run_dump(c, a), c->runs[b], c->rop[b], run_dump(c, b),
                       op_elem(c, o), &rep->tol, &md);
    if (tol == 1) {
        rep->n_tolerated++;
        rep->max_diff = md > rep->max_diff ? md : rep->max_diff;
        o->varied = -1; /* agree within the tolerance: compare with the reference */
    } else if (o->has_exp && o->label == CHK_LABEL_FLAKY) {
        rep->n_flaky++;
        o->unv = CHK_UNV_FLAKY;
        if (o->opst == CHK_ST_UNKNOWN)
            o->opst = CHK_ST_FLAKY;
    } else {
        char note[sizeof((struct chk_finding *)0)->note];
        snprintf(note, sizeof note, "%s and %s differ", rep->run_names[a], rep->run_names[b]);
        output_finding(c, o, CHK_NONDETERMINISTIC, (uint32_t)b + 1, c->rop[a]->digest,
                       c->rop[b]->digest, tol, md, note);
        o->opst = CHK_ST_MISMATCH;
        o->compared = 1;
    }
}

/* The runs agree: the first run's digest against the reference, the expected digest (expected)
 * or else the capture's. Only the capture has bytes for the tolerance. */
static void against_reference(struct chk_check_ctx *c, struct chk_check_op *o, int expected)
{
    struct chk_report *rep = c->rep;
    const struct sbt_op *op = o->op, *a = c->rop[o->first];
    sbt_hash ref = expected ? o->exp_d : op->digest;
    o->compared = 1;
    c->ref_compared = 1;
    if (sbt_hash_eq(a->digest, ref)) {
        rep->n_matched++;
        if (o->opst == CHK_ST_UNKNOWN)
            o->opst = CHK_ST_MATCHED;
        return;
    }
    double md = 0;
    int tol = -1;
    if (rep->tol.kind != CHK_TOL_BITWISE && !expected)
        tol = tolerate(c->cap, op, c->ref_dump, c->runs[o->first], a, run_dump(c, o->first),
                       op_elem(c, o), &rep->tol, &md);
    if (tol == 1) {
        rep->n_tolerated++;
        rep->n_matched++;
        rep->max_diff = md > rep->max_diff ? md : rep->max_diff;
        if (o->opst == CHK_ST_UNKNOWN)
            o->opst = CHK_ST_MATCHED;
        return;
    }
    char note[sizeof((struct chk_finding *)0)->note];
    snprintf(note, sizeof note, "%s digest differs from the %s",
             c->n_runs > 1 ? "the runs agree; their" : "the run's",
             expected ? "expected" : "capture");
    output_finding(c, o, CHK_DIVERGENT, (uint32_t)o->first + 1, ref, a->digest, tol, md, note);
    o->opst = CHK_ST_MISMATCH;
}

/* The outputs: the runs' digests compared among themselves, then with the reference (the
 * expected digest where the expectations say ok, else the capture's), under the tolerance
 * where the bytes can be had. Sets o->compared, or o->unv for an op left unverified on
 * purpose (skip, flaky). */
void chk__check_outputs(struct chk_check_ctx *c, struct chk_check_op *o)
{
    for (uint32_t i = 0; i < c->n_runs; i++) {
        const struct sbt_op *r = c->rop[i];
        if (!r || !(r->flags & SBT_OPF_DIGEST) || (r->flags & SBT_OPF_ERROR))
            continue;
        o->n_d++;
        if (o->first < 0)
            o->first = (int)i;
        else if (o->varied < 0 && !sbt_hash_eq(r->digest, c->rop[o->first]->digest))
            o->varied = (int)i;
    }
    o->cap_d = (o->op->flags & SBT_OPF_DIGEST) != 0;
    if (o->has_exp && o->label == CHK_LABEL_SKIP) {
        c->rep->n_skipped++;
        o->unv = CHK_UNV_SKIPPED;
        return;
    }
    int expected = o->has_exp && o->label == CHK_LABEL_OK;
    if (o->varied >= 0)
        runs_disagree(c, o);
    if (o->varied < 0 && o->first >= 0 && (expected || o->cap_d)) {
        against_reference(c, o, expected);
    } else if (o->varied < 0 && o->first >= 0 && o->n_d >= 2) {
        /* no reference: agreement across runs is all there is to check. It counts as
         * compared and matched, but for the first divergence the op stays unknown (passes
         * its input taint on): runs that agree say nothing about a difference from the
         * capture that came in through its inputs (a copy of a changed upload, say). */
        o->compared = 1;
        c->rep->n_matched++;
    }
}

/* Expectations out (--update-expect): what these runs say about the op. ok with their digest;
 * flaky when the digest varied across them (established by repetition); skip stays skip. */
int chk__check_expect_update(struct chk_check_ctx *c, const struct chk_check_op *o)
{
    const struct sbt_op *op = o->op;
    int st = 0;
    if (!c->upd)
        return 0;
    if (o->has_exp && o->label == CHK_LABEL_SKIP) {
        st = chk_expect_set(c->upd, c->rep->device, o->id, op->seq, CHK_LABEL_SKIP, NULL,
                            chk__check_op_name(c, op));
    } else if (o->first >= 0 || (c->n_runs == 0 && o->cap_d)) {
        int flaky = o->varied >= 0 || o->opst == CHK_ST_FLAKY;
        sbt_hash d = o->first >= 0 ? c->rop[o->first]->digest : op->digest;
        st = chk_expect_set(c->upd, c->rep->device, o->id, op->seq,
                            flaky ? CHK_LABEL_FLAKY : CHK_LABEL_OK, flaky ? NULL : &d,
                            chk__check_op_name(c, op));
    }
    return st < 0 ? st : 0;
}
