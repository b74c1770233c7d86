/*
 * checker/chk_int.h — what the checker's files share: errors and buffers, the per-op status map
 * that the comparison fills and the first-divergence pass reads, string maps, the timing
 * accumulators (per group, per run), identities, findings, collected Perfetto events. Each
 * section names the file that defines it. Only checker/ includes this.
 */
#ifndef REPRISE_CHK_INT_H
#define REPRISE_CHK_INT_H

#include <stdint.h>
#include <stdlib.h>

#include "checker/chk.h"

/* ---- errors and buffers (chk_alloc.c) ---------------------------------------------------- */
int chk__fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int chk__fail_sbt(int status); /* passes sbt_errmsg() on */

void *chk__malloc(size_t n);
void *chk__calloc(size_t n, size_t sz);
void *chk__realloc(void *p, size_t n);
char *chk__strdup(const char *s);
/* Grows *arr to hold at least need elements of size sz. */
int chk__grow(void **arr, uint32_t *cap, uint32_t need, size_t sz);
/* Appends printf-style text to buf at *pos (cap bytes in all): truncated, never overrun, and
 * buf stays terminated; *pos stops at cap - 1. */
void chk__putf(char *buf, size_t cap, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- per-op status over reference seqs: 2 bits an op (chk_status.c) ---------------------- */
enum { CHK_ST_UNKNOWN = 0, CHK_ST_MATCHED = 1, CHK_ST_MISMATCH = 2, CHK_ST_FLAKY = 3 };
struct chk_status {
    uint8_t *bits;
    uint64_t base, n; /* seqs [base, base + n) */
    uint64_t n_mismatch, last_mismatch;
};
int chk__status_init(struct chk_status *s, uint64_t base, uint64_t end);
void chk__status_set(struct chk_status *s, uint64_t seq, uint32_t v);
uint32_t chk__status_get(const struct chk_status *s, uint64_t seq);
void chk__status_free(struct chk_status *s);

/* Walks ref in dependency order up to the last mismatch and marks the roots of the report's
 * findings (is_root), counts them and fills rep->first (chk_roots.c). */
int chk__roots(sbt_reader *ref, const struct chk_status *st, struct chk_report *rep);

/* ---- a string -> index map (open addressing; strings owned) (chk_strmap.c) --------------- */
struct chk_strmap {
    char **names;
    uint32_t n, cap;
    uint32_t *slot; /* index + 1 */
    uint32_t n_slot;
};
/* *idx of name, added when new (*added = 1). */
int chk__strmap_find(struct chk_strmap *m, const char *name, uint32_t *idx, int *added);
/* Index of name, or UINT32_MAX; never adds. */
uint32_t chk__strmap_get(const struct chk_strmap *m, const char *name);
void chk__strmap_free(struct chk_strmap *m);

/* ---- timing: per group, per run, the launches' durations (chk_timing.c) ------------------ */
#define CHK_RESERVOIR 4096 /* samples kept per (group, run): enough for a median */
struct chk_samples {
    double *v;
    uint32_t n, cap;
    uint64_t seen;
};
int chk__samples_add(struct chk_samples *s, double v, uint64_t *rng);
/* The q-quantile (type 7) of the samples: sorts them; NAN when empty. */
double chk__samples_quantile(struct chk_samples *s, double q);

/* Blame (chk.h "Timing"): a group that launches of this group followed on their stream. */
struct chk_tpred {
    uint32_t group;        /* its index */
    uint64_t n, n_overlap; /* launches in the runs after it; of those, begun before it ended */
};
struct chk_tgroup {
    struct chk_samples *run;  /* [n_runs]: this check's runs */
    struct chk_samples *excl; /* [n_runs]: the same launches' time after their predecessor */
    struct chk_samples ref;   /* the reference run being read */
    struct chk_samples ref_excl;
    double *ref_med; /* per reference run with launches: its median */
    double *ref_excl_med;
    uint32_t n_ref_med, cap_ref_med, cap_ref_excl;
    uint64_t n_ref; /* reference launches */
    struct chk_tpred *pred;
    uint32_t n_pred, cap_pred;
};
/* Per run and stream, the timed op that ends last so far: what the next launch may overlap. */
struct chk_tlast {
    uint64_t end;   /* ns, its device end */
    uint32_t group; /* its group + 1; 0: none yet */
};
struct chk_timing {
    struct chk_strmap names;
    struct chk_tgroup *g;
    uint32_t cap;
    uint32_t n_runs;
    uint64_t rng, rng_excl;
    double q; /* the per-run statistic: this quantile of a run's launches (0.5 = median) */
    struct chk_tlast **last; /* [n_runs + 1][stream id]: the runs', then the reference's */
    uint32_t *n_last;        /* [n_runs + 1]: stream ids each holds */
};
/* The group of name (created with n_runs reservoirs). */
int chk__timing_group(struct chk_timing *t, const char *name, struct chk_tgroup **out);
/* One launch of op (device times dev_begin..dev_end, duration ns) of group g (from
 * chk__timing_group, not grown since) in run (0-based), or, run == t->n_runs, in the
 * reference run being read; launches of a run come in seq order. Keeps its duration, its time
 * after the op before it on its stream ended, and which group that op was. */
int chk__timing_add(struct chk_timing *t, struct chk_tgroup *g, uint32_t run,
                    const struct sbt_op *op, uint64_t ns);
/* Ends one reference run: each group's reference launches become one value (quantile q). */
int chk__timing_ref_done(struct chk_timing *t);
void chk__timing_free(struct chk_timing *t);
/* Fills rep->kernels (tests, Holm adjustment, verdicts) from the accumulators; tested = 0 for
 * diff (one run a side: shown, not tested). */
int chk__timing_report(struct chk_timing *t, struct chk_report *rep, int tested);

/* ---- names, identities, which ops count (chk_identity.c) --------------------------------- */
/* Kernel name [program] or op name or kind name into buf. */
const char *chk__op_name(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap);
/* 1 and *ns if the op has a usable device duration. */
int chk__op_dur(const struct sbt_op *op, uint64_t *ns);
/* 1 for the ops whose outputs a replay digests: kernels, copies, fills, host reads. */
int chk__is_device_op(const struct sbt_op *op);

/* Per-stream occurrence counters for identities: the identity of op (next occurrence of its
 * key on its stream) into buf. */
struct chk_idgen {
    struct chk_strmap keys;
    uint64_t *count;
    uint32_t cap;
};
int chk__identity_next(struct chk_idgen *g, const sbt_reader *r, const struct sbt_op *op, char *buf,
                       size_t cap);
void chk__idgen_free(struct chk_idgen *g);

/* ---- the report (chk_report.c) ----------------------------------------------------------- */
int chk__report_alloc(struct chk_report **out, const struct chk_opts *o, uint32_t mode,
                      uint32_t n_runs);

/* ---- the verdict: no pass without positive evidence (chk_verdict.c) ---------------------- */
/* What a gate compared, as check and diff count it, for the one rule that turns it into a
 * verdict. */
struct chk_evidence {
    int is_range;           /* the ops in scope are a range (for the reasons) */
    uint64_t n_device_ops;  /* device ops in scope */
    uint64_t n_compared;    /* ... whose outputs were compared (with a reference or across runs) */
    uint32_t n_runs;        /* results compared with the reference (check: the runs; diff: B) */
    uint32_t n_runs_used;   /* ... of which had some output compared */
    const char *run_unused; /* the first of those that had none, for the reason */
    const char *no_reference; /* a reference asked for that does not apply: why; NULL if none */
    const char *how_to;       /* what would give digests to compare, for the reason */
    /* "RESULT: run K: why" of the first result whose device or driver failed during the
     * replay (its replay.device_failed), NULL if none: the reason a gate gives first */
    const char *device_failed;
};
/* Sets rep->failed, rep->not_verified and rep->fail_reason (where it has none yet) from the
 * findings counted in rep and the evidence: findings fail; without them, nothing compared,
 * less compared than asked, or a reference that does not apply is NOT VERIFIED, which fails
 * too; the rest passes. */
void chk__verdict(struct chk_report *rep, const struct chk_evidence *ev);

/* ---- findings (chk_findings.c) ----------------------------------------------------------- */
struct chk_finding *chk__finding_add(struct chk_report *rep, uint32_t max, uint32_t cls);
/* Counts an unverified device op and lists it (up to max). */
int chk__unverified_add(struct chk_report *rep, uint32_t max, const sbt_reader *r,
                        const struct sbt_op *op, uint32_t why);
/* Fills a listed finding's seq, kind, stream and name from op (of r); f may be NULL. */
void chk__finding_op(struct chk_finding *f, const sbt_reader *r, const struct sbt_op *op);
/* Copies the completeness of r (named by label) into the report: sets rep->incomplete and
 * appends "label: why" to rep->incomplete_why. */
void chk__note_complete(struct chk_report *rep, const sbt_reader *r, const char *label);

/* ---- check: the walk (chk_check.c) and one op's outputs (chk_check_outputs.c) ------------- */
/* The bytes an op wrote, read once an op for the tolerance (a HOST_READ's blob, a dump file). */
struct chk_bytes {
    void *p;
    size_t n;
    int state; /* 0 not read yet, 1 read, -1 unavailable */
};
#define CHK_MAX_RUNS 1024 /* result traces one check compares */
struct chk_runcur;        /* a cursor on a result trace, with its current op (chk_check.c) */
/* One check: its inputs (borrowed), its options (each read once, by check_opts; those the
 * report keeps are in the report), its report and the state of the walk. */
struct chk_check_ctx {
    sbt_reader *cap;
    sbt_reader *const *runs, *const *base;
    uint32_t n_runs, n_base;
    /* options */
    const struct sbt_range *range; /* reference ops to compare; NULL = all */
    uint32_t tref;                 /* enum chk_timing_ref, never AUTO */
    uint32_t max_f;                /* findings and unverified ops listed */
    uint32_t def_elem;             /* enum chk_elem where the trace names none */
    const chk_expect *expect;
    chk_expect *upd;
    const char *ref_dump;
    const char *const *run_dumps, *const *base_names;
    int collect, allow_regime;
    void (*progress)(void *, uint64_t, uint64_t);
    void *pctx;
    double thr; /* the minimum effect; < 0: no timing gate */
    /* the walk */
    struct chk_report *rep;
    const struct sbt_info *ci; /* the capture's */
    uint64_t lo, hi;           /* reference seqs compared: [lo, hi) */
    struct chk_status status;
    struct chk_timing tm;
    struct chk_idgen idg;
    sbt_cursor *cc;                         /* on the capture */
    struct chk_runcur *rc;                  /* [n_runs] */
    const struct sbt_op *rop[CHK_MAX_RUNS]; /* per run, its op of the current seq; NULL: none */
    uint64_t *dur;                          /* [n_runs] per op: device time, ns; UINT64_MAX none */
    uint8_t *run_used;                      /* [n_runs]: the run's digests were compared */
    int ref_compared;                       /* some digest was compared with a reference */
    int *cls;                  /* [n_runs] per op: a run of each distinct digest, in run order */
    struct chk_bytes *bytes;   /* [n_runs + 1] per op: their outputs' bytes, the reference's last */
    sbt_cursor *idc;           /* on the whole capture, for identities when a range is read */
    const struct sbt_op *idop; /* its current op, NULL at the end */
    uint64_t n_exp_hits;       /* ops checked that an expectation applied to */
    char no_ref[400];          /* the expectations do not apply: why */
    char name[160], gbuf[160], idbuf[512]; /* the current op's name, group, identity */
    /* perturbed runs: per run the finding class its divergences are (replay.perturb_class),
     * -1 for a plain run; n_pert of them */
    int32_t pcls[CHK_MAX_RUNS];
    uint32_t n_pert;
    int (*confirm)(void *ctx, const struct chk_finding *f, char *out, size_t cap);
    void *confirm_ctx;
};

/* What the walk learns about the current reference op. */
struct chk_check_op {
    const struct sbt_op *op;
    const char *id; /* its identity, when expectations are read or written; else NULL */
    int has_exp;    /* the expectations have it: label, exp_d */
    uint32_t label; /* enum chk_label */
    sbt_hash exp_d;
    uint32_t opst;   /* CHK_ST_*: what the first-divergence pass reads */
    uint32_t n_have; /* runs that have it */
    uint32_t n_err;  /* ... and reported an error at it */
    int n_d;         /* runs with a digest (and no error) */
    int first;       /* the first of them, -1 none */
    int varied;      /* a run whose outputs differ from an earlier run's beyond the tolerance
                      * (NONDETERMINISTIC or known-flaky), -1 none */
    uint32_t n_cls;  /* distinct digests among the runs (c->cls) */
    int tolerated;   /* some digests differed, within the tolerance */
    int cap_d;       /* the capture has a digest */
    int compared;    /* its digests were compared (with the reference or across runs) */
    int unv;         /* enum chk_unverified_why when it was not compared; -1 not known yet */
    uint32_t elem;   /* element type for the tolerance (op_elem), when elem_known */
    int elem_known;
};

/* The op's name for people (chk__op_name), made once an op. */
const char *chk__check_op_name(struct chk_check_ctx *c, const struct sbt_op *op);
/* The op's identity, when expectations are read or written, and its expectation. */
int chk__check_expectation(struct chk_check_ctx *c, struct chk_check_op *o);
/* The runs' digests compared among themselves and with the reference, under the tolerance:
 * findings, counters, o->compared or o->unv, o->opst. */
void chk__check_outputs(struct chk_check_ctx *c, struct chk_check_op *o);
/* --update-expect: what these runs say about the op into c->upd. */
int chk__check_expect_update(struct chk_check_ctx *c, const struct chk_check_op *o);

/* ---- events kept for the Perfetto diff (chk_findings.c; chk_perfetto.c writes them) ------ */
enum chk_verdict {
    CHK_V_SAME = 0,
    CHK_V_SLOWER = 1,
    CHK_V_FASTER = 2,
    CHK_V_MISMATCH = 3,
    CHK_V_MISSING = 4,
    CHK_V_EXTRA = 5,
};
struct chk_event {
    uint64_t ts, dur;         /* rebased ns on the run (candidate); MISSING: the reference's */
    uint64_t ref_ts, ref_dur; /* rebased ns on the reference; UINT64_MAX if none */
    uint64_t seq, seq_run;
    uint32_t verdict, stream;
    uint32_t name; /* index into priv->names */
    sbt_hash d_ref, d_run;
};
struct chk_priv {
    struct chk_event *ev;
    uint64_t n_ev, cap_ev, max_ev, n_ev_dropped;
    char **names;
    uint32_t n_names, cap_names;
    uint64_t ref_t0, run_t0; /* trace starts (sbt_info.t_min) */
    uint32_t cap_findings, cap_unverified;
};
int chk__event_add(struct chk_report *rep, const struct chk_event *e, const char *name);
/* The op's interval for an event: device times when it has them, else host times; ts rebased
 * to t0 (0 when before it), dur 0 when the interval is empty. */
void chk__op_interval(const struct sbt_op *op, uint64_t t0, uint64_t *ts, uint64_t *dur);

/* Options read with their size check (libbpf's OPTS_GET). */
#define CHK_OPT(o, field, def)                                                             \
    ((o) && (o)->sz >= offsetof(struct chk_opts, field) + sizeof((o)->field) && (o)->field \
         ? (o)->field                                                                      \
         : (def))

#endif /* REPRISE_CHK_INT_H */
