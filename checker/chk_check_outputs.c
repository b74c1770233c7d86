/*
 * checker/chk_check_outputs.c — `check`, one op's outputs (the walk in chk_check.c calls these
 * for each reference op): its identity (counted from the trace's first op, also on a range) and
 * expectation; the runs' digests compared among themselves (under a tolerance, every two
 * distinct ones), then each with the reference (the expected digest, else the capture's); a digest
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

/* With a range, identities still count from the trace's first op: the ops of the whole capture
 * before op (c->idc, opened by the walk) are counted first, the op's own place is passed. */
static int identity_catch_up(struct chk_check_ctx *c, uint64_t seq)
{
    int st;
    while (c->idop && c->idop->seq <= seq) {
        if (c->idop->seq < seq &&
            (st = chk__identity_next(&c->idg, c->cap, c->idop, c->idbuf, sizeof c->idbuf)) < 0)
            return st;
        if ((st = sbt_cursor_next(c->idc, &c->idop)) < 0)
            return chk__fail_sbt(st);
        if (st == 0)
            c->idop = NULL;
    }
    return 0;
}

/* The op's identity, when expectations are read or written, and its expectation. */
int chk__check_expectation(struct chk_check_ctx *c, struct chk_check_op *o)
{
    if (c->expect || c->upd) {
        int st = c->idc ? identity_catch_up(c, o->op->seq) : 0;
        if (st < 0 ||
            (st = chk__identity_next(&c->idg, c->cap, o->op, c->idbuf, sizeof c->idbuf)) < 0)
            return st;
        o->id = c->idbuf;
    }
    o->has_exp = c->expect && chk_expect_get(c->expect, c->rep->device, o->id, o->op->seq,
                                             &o->label, &o->exp_d) == 1;
    c->n_exp_hits += o->has_exp != 0;
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

static const char *run_dump(const struct chk_check_ctx *c, int run)
{
    return c->run_dumps ? c->run_dumps[run] : NULL;
}

/* ========================================================================================== */
/* Bytes for the tolerance: a slot per distinct digest of the runs, and one for the capture     */
/* ========================================================================================== */

/* Bytes kept at once for one op; beyond it the slots not in use are read again when needed. */
#define CHK_BYTES_KEEP ((size_t)256 << 20)

/* The bytes of slot k: the outputs of the run c->cls[k], or (k == n_runs) the capture's. Read
 * once; other slots but keep are let go when the op's bytes outgrow CHK_BYTES_KEEP. */
static const struct chk_bytes *slot_bytes(struct chk_check_ctx *c, struct chk_check_op *o,
                                          uint32_t k, uint32_t keep)
{
    struct chk_bytes *b = &c->bytes[k];
    if (b->state)
        return b;
    int run = k == c->n_runs ? -1 : c->cls[k];
    int got = run < 0 ? get_bytes(c->cap, o->op, c->ref_dump, &b->p, &b->n)
                      : get_bytes(c->runs[run], c->rop[run], run_dump(c, run), &b->p, &b->n);
    b->state = got ? 1 : -1;
    size_t total = 0;
    for (uint32_t i = 0; i <= c->n_runs; i++)
        total += c->bytes[i].state > 0 ? c->bytes[i].n : 0;
    for (uint32_t i = 0; total > CHK_BYTES_KEEP && i <= c->n_runs; i++)
        if (i != k && i != keep && c->bytes[i].state > 0) {
            total -= c->bytes[i].n;
            free(c->bytes[i].p);
            c->bytes[i] = (struct chk_bytes){0};
        }
    return b;
}

static void slots_free(struct chk_check_ctx *c)
{
    for (uint32_t i = 0; i <= c->n_runs; i++) {
        free(c->bytes[i].p);
        c->bytes[i] = (struct chk_bytes){0};
    }
}

/* Compares the bytes of two slots under the tolerance: 1 within, 0 not, -1 bytes unavailable. */
static int tolerate(struct chk_check_ctx *c, struct chk_check_op *o, uint32_t a, uint32_t b,
                    double *max_diff)
{
    const struct chk_bytes *x = slot_bytes(c, o, a, b), *y = slot_bytes(c, o, b, a);
    *max_diff = 0;
    if (x->state < 0 || y->state < 0)
        return -1;
    int within = 0;
    chk_compare_bytes(x->p, y->p, x->n, y->n, op_elem(c, o), &c->rep->tol, &within, max_diff);
    return within;
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

/* The runs' digests are not all one (o->n_cls > 1). Under a tolerance every two distinct
 * outputs are compared, so that no run escapes the comparison whatever the order of the runs
 * (a tolerance is not transitive: each within it of the first run says nothing of two of them);
 * all within it, the runs agree after all (varied stays -1, the reference decides). Else a
 * known-flaky op stays unverified, any other is NONDETERMINISTIC, named by the first pair
 * that differs. */
static void runs_disagree(struct chk_check_ctx *c, struct chk_check_op *o)
{
    struct chk_report *rep = c->rep;
    uint32_t a = 0, b = 1;
    double md = 0;
    int tol = -1;
    if (rep->tol.kind != CHK_TOL_BITWISE) {
        tol = 1;
        for (a = 0; tol == 1 && a + 1 < o->n_cls; a++)
            for (b = a + 1; b < o->n_cls; b++) {
                tol = tolerate(c, o, a, b, &md);
                if (tol != 1)
                    break;
                rep->max_diff = md > rep->max_diff ? md : rep->max_diff;
            }
        a -= tol != 1; /* the loop stepped past the pair that differed */
    }
    if (tol == 1) {
        o->tolerated = 1;
        return; /* agree within the tolerance: compare with the reference */
    }
    int ra = c->cls[a], rb = c->cls[b];
    o->varied = rb;
    if (o->has_exp && o->label == CHK_LABEL_FLAKY) {
        rep->n_flaky++;
        o->unv = CHK_UNV_FLAKY;
        if (o->opst == CHK_ST_UNKNOWN)
            o->opst = CHK_ST_FLAKY;
        return;
    }
    char note[sizeof((struct chk_finding *)0)->note];
    snprintf(note, sizeof note, "%s and %s differ", rep->run_names[ra], rep->run_names[rb]);
    output_finding(c, o, CHK_NONDETERMINISTIC, (uint32_t)rb + 1, c->rop[ra]->digest,
                   c->rop[rb]->digest, tol, md, note);
    o->opst = CHK_ST_MISMATCH;
    o->compared = 1;
}

/* The runs agree: every distinct output of theirs against the reference, the expected digest
 * (expected) or else the capture's; the first that differs (beyond the tolerance) is
 * DIVERGENT. The reference's bytes for the tolerance: those of a run whose digest is the
 * reference's (the same bytes), else the capture's own (an expected digest has none). */
static void against_reference(struct chk_check_ctx *c, struct chk_check_op *o, int expected)
{
    struct chk_report *rep = c->rep;
    const struct sbt_op *op = o->op;
    sbt_hash ref = expected ? o->exp_d : op->digest;
    o->compared = 1;
    c->ref_compared = 1;
    uint32_t ref_slot = c->n_runs;
    for (uint32_t k = 0; k < o->n_cls && ref_slot == c->n_runs; k++)
        if (sbt_hash_eq(c->rop[c->cls[k]]->digest, ref))
            ref_slot = k;
    for (uint32_t k = 0; k < o->n_cls; k++) {
        const struct sbt_op *a = c->rop[c->cls[k]];
        if (sbt_hash_eq(a->digest, ref))
            continue;
        double md = 0;
        int tol = -1;
        if (rep->tol.kind != CHK_TOL_BITWISE && (!expected || ref_slot < c->n_runs))
            tol = tolerate(c, o, ref_slot, k, &md);
        if (tol == 1) {
            o->tolerated = 1;
            rep->max_diff = md > rep->max_diff ? md : rep->max_diff;
            continue;
        }
        char note[sizeof((struct chk_finding *)0)->note];
        if (o->n_cls > 1)
            snprintf(note, sizeof note,
                     "the runs agree within the tolerance; %s's digest differs from the %s",
                     rep->run_names[c->cls[k]], expected ? "expected" : "capture");
        else
            snprintf(note, sizeof note, "%s digest differs from the %s",
                     c->n_runs > 1 ? "the runs agree; their" : "the run's",
                     expected ? "expected" : "capture");
        output_finding(c, o, CHK_DIVERGENT, (uint32_t)c->cls[k] + 1, ref, a->digest, tol, md, note);
        o->opst = CHK_ST_MISMATCH;
        return;
    }
    rep->n_matched++;
    if (o->opst == CHK_ST_UNKNOWN)
        o->opst = CHK_ST_MATCHED;
}

/* The perturbed runs against what the plain runs agree on (their digest; the reference's where
 * no plain run has one), bitwise: the first that differs is a finding of its run's class, at
 * an op no plain finding names. */
static void perturbed(struct chk_check_ctx *c, struct chk_check_op *o)
{
    struct chk_report *rep = c->rep;
    if (o->unv == CHK_UNV_SKIPPED || o->varied >= 0 || o->opst == CHK_ST_MISMATCH)
        return;
    sbt_hash want;
    if (o->first >= 0)
        want = c->rop[o->first]->digest;
    else if (o->cap_d)
        want = o->op->digest;
    else
        return;
    for (uint32_t i = 0; i < c->n_runs; i++) {
        const struct sbt_op *r = c->rop[i];
        if (c->pcls[i] < 0 || !r || !(r->flags & SBT_OPF_DIGEST) || (r->flags & SBT_OPF_ERROR))
            continue;
        o->compared = 1;
        if (sbt_hash_eq(r->digest, want))
            continue;
        char note[sizeof((struct chk_finding *)0)->note];
        snprintf(note, sizeof note, "%s (%s) differs from %s", rep->run_names[i],
                 rep->run_perturb[i], o->first >= 0 ? "the plain runs" : "the capture");
        struct chk_finding *f = chk__finding_add(rep, c->max_f, (uint32_t)c->pcls[i]);
        chk__finding_op(f, c->cap, o->op);
        if (f) {
            f->run = i + 1;
            f->has_ref = 1;
            f->ref_digest = want;
            f->got_digest = r->digest;
            snprintf(f->note, sizeof f->note, "%s", note);
            snprintf(f->perturb, sizeof f->perturb, "%s", rep->run_perturb[i]);
            snprintf(f->perturb_what, sizeof f->perturb_what, "%s", rep->run_perturb_what[i]);
            if (c->confirm && c->confirm(c->confirm_ctx, f, f->confirms, sizeof f->confirms) != 1)
                f->confirms[0] = 0;
        }
        o->opst = CHK_ST_MISMATCH;
        return;
    }
}

/* The outputs: the runs' digests compared among themselves, then with the reference (the
 * expected digest where the expectations say ok, else the capture's), under the tolerance
 * where the bytes can be had. Every run takes part, so the verdict does not depend on their
 * order. Sets o->compared, or o->unv for an op left unverified on purpose (skip, flaky). */
void chk__check_outputs(struct chk_check_ctx *c, struct chk_check_op *o)
{
    for (uint32_t i = 0; i < c->n_runs; i++) {
        const struct sbt_op *r = c->rop[i];
        if (!r || !(r->flags & SBT_OPF_DIGEST) || (r->flags & SBT_OPF_ERROR) || c->pcls[i] >= 0)
            continue;
        o->n_d++;
        if (o->first < 0)
            o->first = (int)i;
        /* distinct digests: bitwise, two already make the op nondeterministic */
        uint32_t k = 0;
        while (k < o->n_cls && !sbt_hash_eq(r->digest, c->rop[c->cls[k]]->digest))
            k++;
        if (k == o->n_cls && (o->n_cls < 2 || c->rep->tol.kind != CHK_TOL_BITWISE))
            c->cls[o->n_cls++] = (int)i;
    }
    o->cap_d = (o->op->flags & SBT_OPF_DIGEST) != 0;
    if (o->has_exp && o->label == CHK_LABEL_SKIP) {
        c->rep->n_skipped++;
        o->unv = CHK_UNV_SKIPPED;
        return;
    }
    int expected = o->has_exp && o->label == CHK_LABEL_OK;
    if (o->n_cls > 1)
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
    if (c->n_pert)
        perturbed(c, o);
    c->rep->n_tolerated += o->tolerated != 0;
    slots_free(c);
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
        /* a digest that varied is no digest to expect, within a tolerance or not */
        int flaky = o->n_cls > 1 || o->opst == CHK_ST_FLAKY;
        sbt_hash d = o->first >= 0 ? c->rop[o->first]->digest : op->digest;
        st = chk_expect_set(c->upd, c->rep->device, o->id, op->seq,
                            flaky ? CHK_LABEL_FLAKY : CHK_LABEL_OK, flaky ? NULL : &d,
                            chk__check_op_name(c, op));
    }
    return st < 0 ? st : 0;
}
