/*
 * checker/chk_int.h — what the checker's files share: errors, the per-op status map that the
 * comparison fills and the first-divergence pass reads, string maps, the timing accumulators
 * (per group, per run), identities, collected Perfetto events. Only checker/ includes this.
 */
#ifndef REPRISE_CHK_INT_H
#define REPRISE_CHK_INT_H

#include <stdint.h>
#include <stdlib.h>

#include "checker/chk.h"

int chk__fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int chk__fail_sbt(int status); /* passes sbt_errmsg() on */

/* ---- per-op status over reference seqs: 2 bits an op ----------------------------------- */
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
 * findings (is_root), counts them and fills rep->first. */
int chk__roots(sbt_reader *ref, const struct chk_status *st, struct chk_report *rep);

/* ---- a string -> index map (open addressing; strings owned) ------------------------------ */
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

/* ---- timing: per group, per run, the launches' durations --------------------------------- */
#define CHK_RESERVOIR 4096 /* samples kept per (group, run): enough for a median */
struct chk_samples {
    double *v;
    uint32_t n, cap;
    uint64_t seen;
};
int chk__samples_add(struct chk_samples *s, double v, uint64_t *rng);
/* The q-quantile (type 7) of the samples: sorts them; NAN when empty. */
double chk__samples_quantile(struct chk_samples *s, double q);

struct chk_tgroup {
    struct chk_samples *run; /* [n_runs]: this check's runs */
    struct chk_samples ref;  /* the reference run being read */
    double *ref_med;         /* per reference run with launches: its median */
    uint32_t n_ref_med, cap_ref_med;
    uint64_t n_ref; /* reference launches */
};
struct chk_timing {
    struct chk_strmap names;
    struct chk_tgroup *g;
    uint32_t cap;
    uint32_t n_runs;
    uint64_t rng;
    double q; /* the per-run statistic: this quantile of a run's launches (0.5 = median) */
};
/* The group of name (created with n_runs reservoirs). */
int chk__timing_group(struct chk_timing *t, const char *name, struct chk_tgroup **out);
/* Ends one reference run: each group's reference launches become one value (quantile q). */
int chk__timing_ref_done(struct chk_timing *t);
void chk__timing_free(struct chk_timing *t);
/* Fills rep->kernels (tests, Holm adjustment, verdicts) from the accumulators; tested = 0 for
 * diff (one run a side: shown, not tested). */
int chk__timing_report(struct chk_timing *t, struct chk_report *rep, int tested);

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

/* Copies the completeness of r (named by label) into the report: sets rep->incomplete and
 * appends "label: why" to rep->incomplete_why. */
void chk__note_complete(struct chk_report *rep, const sbt_reader *r, const char *label);

/* ---- findings ----------------------------------------------------------------------------- */
struct chk_finding *chk__finding_add(struct chk_report *rep, uint32_t max, uint32_t cls);
/* Counts an unverified device op and lists it (up to max). */
int chk__unverified_add(struct chk_report *rep, uint32_t max, const sbt_reader *r,
                        const struct sbt_op *op, uint32_t why);
int chk__report_alloc(struct chk_report **out, const struct chk_opts *o, uint32_t mode,
                      uint32_t n_runs);

/* ---- events kept for the Perfetto diff ---------------------------------------------------- */
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

/* Options read with their size check (libbpf's OPTS_GET). */
#define CHK_OPT(o, field, def)                                                             \
    ((o) && (o)->sz >= offsetof(struct chk_opts, field) + sizeof((o)->field) && (o)->field \
         ? (o)->field                                                                      \
         : (def))

void *chk__malloc(size_t n);
void *chk__calloc(size_t n, size_t sz);
void *chk__realloc(void *p, size_t n);
char *chk__strdup(const char *s);
/* Grows *arr to hold at least need elements of size sz. */
int chk__grow(void **arr, uint32_t *cap, uint32_t need, size_t sz);

#endif /* REPRISE_CHK_INT_H */
