/*
 * checker/chk_int.h — what the checker's files share: errors, the per-op status map that the
 * comparison fills and the first-divergence pass reads, the timing accumulators, collected
 * Perfetto events. Only checker/ includes this.
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

/* ---- timing accumulators ---------------------------------------------------------------- */
#define CHK_RESERVOIR 65536
struct chk_samples {
    double *v;
    uint32_t n, cap;
    uint64_t seen;
};
struct chk_kacc {
    char *name;
    struct chk_samples ref, run;
};
struct chk_kmap {
    struct chk_kacc *k;
    uint32_t n, cap;
    /* open-addressing name hash -> index + 1 */
    uint32_t *slot;
    uint32_t n_slot;
    uint64_t rng;
};
int chk__kmap_find(struct chk_kmap *m, const char *name, uint32_t *idx);
int chk__samples_add(struct chk_samples *s, double v, uint64_t *rng);
void chk__kmap_free(struct chk_kmap *m);
/* Fills rep->kernels from the accumulators. */
int chk__kmap_report(struct chk_kmap *m, struct chk_report *rep);

/* Name of an op's timing group: kernel name, or "[copy h2d]" etc. NULL: not a timed kind. */
const char *chk__group_name(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap);
/* Kernel name or op name or kind name into buf. */
const char *chk__op_name(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap);
/* 1 and *ns if the op has a usable device duration. */
int chk__op_dur(const struct sbt_op *op, uint64_t *ns);

/* ---- findings ----------------------------------------------------------------------------- */
struct chk_finding *chk__finding_add(struct chk_report *rep, uint32_t max, uint32_t cls);
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
    uint32_t cap_findings;
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
