/*
 * checker/chk.h — determinism and regression gates over SBT traces: compare a capture with the
 * results of N replays (`reprise check`), or two captures/replays with each other (`reprise
 * diff`); classify every difference, name the first divergence, compute timing statistics with
 * significance tests, keep per-device expectation files, and write reports (text, JSON, JUnit
 * XML) and a Perfetto diff trace.
 *
 * Everything works on .sbt files: a replay writes its results as an SBT trace with the same ops
 * and the same seq numbers as the capture (device times, output digests, errors), so the checker
 * needs no device and is tested with synthetic traces.
 *
 * Alignment
 *   check: by seq. The capture (the "reference") and each run hold the same ops under the same
 *     seq numbers; a capture op absent from a run is MISSING, a run op whose seq the capture
 *     does not hold (or whose kind differs) is EXTRA.
 *   diff: per stream (by stream id), a bounded-window diff over op keys. The key of an op is a
 *     hash of (kind, subkind, name, kernel name, grid, block, shared memory, bytes); names are
 *     compared by content, not by string id. Equal heads match. Otherwise, with up to W ops of
 *     each side buffered (opts.window, default 64), the pair (i, j) with A[i] = B[j] and the
 *     smallest i + j wins (ties: smaller i), the A ops before it are MISSING in B and the B ops
 *     before it EXTRA; with no such pair in the window, A[0] is MISSING and B[0] EXTRA. Memory is
 *     O(streams x W); a stream that runs ahead of the other side by more than 64 x W ops has its
 *     oldest ops reported as missing.
 *
 * Classes of findings (per op)
 *   NONDETERMINISTIC  runs disagree among themselves (digests of two runs differ)
 *   DIVERGENT         runs agree, the reference differs (capture digest or expected digest)
 *   MISSING, EXTRA    see alignment
 *   REPLAY_ERROR      a run recorded an error at the op (SBT_OPF_ERROR)
 *   TIMING            a timing regression (below)
 * Ops without a digest on one side are "unverified", not failures. With an expectations file,
 * ops labelled skip are ignored and known-flaky ops may vary.
 *
 * First divergence. After the comparison, the reference trace is walked again in dependency
 * order (scheduler/sched.h delivers ops topologically) with a taint set of byte ranges per
 * resource: an op's inputs are tainted when it reads a tainted byte; a mismatched op (any class
 * but TIMING/EXTRA) taints what it writes, an op that matched its reference clears what it
 * writes, an unverified op passes its input taint on to what it writes, and so does an op with
 * no reference digest whose runs agree (agreement among runs cannot clear a difference from the
 * capture that came in through its inputs). A mismatched op whose inputs are untainted is a
 * root cause; the first root in dependency order is the first divergence. Downstream mismatches
 * keep is_root = 0. (Range-based, so it sees same-stream producers that the scheduler's edge
 * list leaves out as implied by stream order.)
 *
 * Tolerances. Bitwise by default. With ulp:K, abs:E or rel:E, a digest mismatch is re-examined
 * on the bytes when both sides' bytes can be had: an op's blob when it is a HOST_READ (the bytes
 * read back), else the file "<seq>.bin" (seq in decimal) in the dump directory of that trace:
 * the name `reprise replay --dump DIR` gives each op's outputs (first run only) and `reprise
 * check --runs N --tolerance ...` asks each of its replays for. Elements are
 * compared by type: the trace's metadata "elem_type.<kernel name>" or "elem_type" (one of f32,
 * f16, bf16, f64, i32, u32), else opts.elem_type (default f32). The largest difference is
 * reported (in ULPs for ulp:K, else absolute or relative). Without bytes the op stays a
 * mismatch with a note that its bytes were unavailable.
 *
 * Timing. Durations are device times (SBT_OPF_DEV_TIME) of ops that are not SBT_OPF_UNTIMED.
 *   Per kernel name (non-kernel timed ops as "[copy h2d]", "[fill]", ...): all launches of the
 *   reference vs all launches of all runs (each side a reservoir of at most 65536 samples, fixed
 *   seed). Median, IQR, MAD and a distribution-free confidence interval of the run median from
 *   order statistics (binomial; the achieved coverage is reported, as it is discrete and with
 *   few samples below the asked level). A REGRESSION when the run median exceeds the reference
 *   median by more than the threshold AND the one-sided Mann-Whitney U test (runs slower than
 *   reference) has p < 1 - confidence (exact distribution without ties when C(n+m, n) < 2^63,
 *   else the normal approximation with tie and continuity correction).
 *   Per op (check): median and order-statistic CI over the runs; a regression when the run
 *   median exceeds reference x (1 + threshold) AND the one-sided exact sign test of "run >
 *   reference x (1 + threshold)" has p < 1 - confidence (so at least 5 runs at 0.95).
 *   diff has one sample per op: per-op deltas are reported, only kernels are tested.
 *
 * Expectations file (text, one record a line; '#' starts a comment):
 *     reprise-expect 1
 *     device <device name as the run's trace names it, or *>
 *     op <seq> <32 hex digits | -> <ok|flaky|skip> [<op name>]
 *   Per device section, the ops of the trace with their expected output digest. ok: the runs
 *   must produce this digest; flaky: known to vary (set by --update-expect when the digest of
 *   the op varied across the N runs), not checked; skip: ignored (hand-written, kept by
 *   updates). A check uses the section of the first run's device 1 (the capture's when there
 *   are no runs), else "device *".
 *
 * Conventions as format/sbt.h: 0 or a count on success, a negative SBT_E* status on failure
 * with a message in chk_errmsg(); out-handles NULL on failure; nothing leaks. Readers are
 * borrowed and used from the calling thread only.
 */
#ifndef REPRISE_CHK_H
#define REPRISE_CHK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format/sbt.h"
#include "format/sbt_export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Message of the last failure on this thread. Never NULL. */
const char *chk_errmsg(void);

/* X(name, short name, description) */
#define CHK_CLASS_MAP(X)                                                                    \
    X(NONDETERMINISTIC, "nondeterministic", "runs disagree among themselves")               \
    X(DIVERGENT, "divergent", "runs agree, the reference (capture or expectation) differs") \
    X(MISSING, "missing", "op of the reference absent from a run")                          \
    X(EXTRA, "extra", "op of a run absent from the reference")                              \
    X(REPLAY_ERROR, "replay-error", "a run reported an error at the op")                    \
    X(TIMING, "timing-regression", "slower than the reference beyond the threshold, significantly")

enum chk_class {
#define CHK__CLASS_ENUM(name, s, d) CHK_##name,
    CHK_CLASS_MAP(CHK__CLASS_ENUM)
#undef CHK__CLASS_ENUM
        CHK__NCLASS
};
const char *chk_class_name(uint32_t cls); /* "nondeterministic"; "?" if unknown */
const char *chk_class_desc(uint32_t cls);

/* ========================================================================================== */
/* Tolerances and element types                                                               */
/* ========================================================================================== */

enum chk_tol_kind { CHK_TOL_BITWISE = 0, CHK_TOL_ULP = 1, CHK_TOL_ABS = 2, CHK_TOL_REL = 3 };
struct chk_tolerance {
    uint32_t kind; /* enum chk_tol_kind */
    double eps;    /* ABS, REL: the bound; ULP: K */
};
/* "bitwise", "ulp:K", "abs:E", "rel:E". SBT_EINVAL with a message otherwise. */
int chk_tolerance_parse(const char *s, struct chk_tolerance *out);

enum chk_elem {
    CHK_ELEM_F32 = 0,
    CHK_ELEM_F16 = 1,
    CHK_ELEM_BF16 = 2,
    CHK_ELEM_F64 = 3,
    CHK_ELEM_I32 = 4,
    CHK_ELEM_U32 = 5,
};
int chk_elem_parse(const char *s, uint32_t *out); /* "f32" ... SBT_EINVAL otherwise */
const char *chk_elem_name(uint32_t e);

/* Compares two byte strings element by element. *within: 1 if every element is within tol (and
 * the lengths are equal), *max_diff: the largest difference (ULPs, absolute or relative as tol
 * says; for BITWISE the number of differing bytes). SBT_EINVAL for mismatched lengths is not an
 * error: *within = 0 and *max_diff = INFINITY. */
int chk_compare_bytes(const void *a, const void *b, size_t len_a, size_t len_b, uint32_t elem,
                      const struct chk_tolerance *tol, int *within, double *max_diff);

/* ========================================================================================== */
/* Statistics                                                                                 */
/* ========================================================================================== */

struct chk_summary {
    size_t n;
    double median, q1, q3, iqr; /* quartiles: linear interpolation (type 7) */
    double mad;                 /* median absolute deviation (unscaled) */
    double ci_lo, ci_hi;        /* order-statistic CI of the median */
    double ci_level;            /* its achieved coverage (<= asked when n is small) */
};
/* Sorts x in place and summarises it. confidence in (0, 1). n = 0 gives zeros. */
int chk_summarize(double *x, size_t n, double confidence, struct chk_summary *out);
/* One-sided Mann-Whitney U test that x tends to be larger than y: returns the p-value, *u the U
 * statistic of x (pairs x > y, ties count 1/2). Exact without ties when C(n+m, n) < 2^63. */
double chk_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, double *u);
/* One-sided exact sign test: P(Binomial(n, 1/2) >= k). */
double chk_sign_test(uint64_t k, uint64_t n);

/* ========================================================================================== */
/* Expectations                                                                               */
/* ========================================================================================== */

enum chk_label { CHK_LABEL_OK = 0, CHK_LABEL_FLAKY = 1, CHK_LABEL_SKIP = 2 };
typedef struct chk_expect chk_expect;
/* An empty set (for --update-expect on a file that does not exist yet). */
int chk_expect_create(chk_expect **out);
/* Reads a file; SBT_ECORRUPT naming the line for bad content, SBT_EIO if unreadable. */
int chk_expect_load(const char *path, chk_expect **out);
/* Writes every section, devices and ops sorted. */
int chk_expect_save(const chk_expect *e, const char *path);
void chk_expect_free(chk_expect *e); /* NULL accepted */
/* Sets one op of a device section (creating it); name may be NULL. */
int chk_expect_set(chk_expect *e, const char *device, uint64_t seq, uint32_t label,
                   const sbt_hash *digest, const char *name);
/* 1 and (*label, *digest) if the section of device (or "*") has op seq; 0 if not. */
int chk_expect_get(const chk_expect *e, const char *device, uint64_t seq, uint32_t *label,
                   sbt_hash *digest);
uint64_t chk_expect_count(const chk_expect *e, const char *device); /* ops in the section */
/* Moves src's section of device into dst, replacing dst's (other sections of dst stay). */
int chk_expect_replace(chk_expect *dst, chk_expect *src, const char *device);

/* ========================================================================================== */
/* Check and diff                                                                             */
/* ========================================================================================== */

struct chk_opts {
    size_t sz;                     /* = sizeof(struct chk_opts); set by CHK_OPTS() */
    const struct sbt_range *range; /* reference ops to compare; NULL = all */
    struct chk_tolerance tol;      /* zero = bitwise */
    uint32_t elem_type;            /* enum chk_elem when the trace says none; 0 = f32 */
    double timing_threshold;       /* fraction (0.1 = 10%); 0 = 0.10; < 0 = no timing gate */
    double confidence;             /* 0 = 0.95 */
    const char *ref_dump;          /* dump directory of the reference, NULL = none */
    const char *const *run_dumps;  /* per run, NULL entries or NULL array = none */
    const chk_expect *expect;      /* expectations to check against; NULL = none */
    chk_expect *expect_update;     /* filled with this check's digests (--update-expect) */
    uint32_t max_findings;         /* findings listed in the report; 0 = 1000 (all counted) */
    uint32_t window;               /* diff: alignment window per stream; 0 = 64 */
    int collect_events;            /* keep per-op verdicts for chk_perfetto_write */
    uint64_t max_events;           /* events kept for the Perfetto diff; 0 = 2M */
    const char *ref_name;          /* labels used in reports; NULL = "reference" */
    const char *const *run_names;  /* per run; NULL = "run N" */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
};
#define CHK_OPTS(...) ((struct chk_opts){.sz = sizeof(struct chk_opts), __VA_ARGS__})

struct chk_finding {
    uint32_t cls;     /* enum chk_class */
    uint64_t seq;     /* reference seq; for EXTRA the run's seq */
    uint64_t seq_run; /* the run's seq (diff: the aligned op) or UINT64_MAX */
    uint32_t run;     /* 1-based run it was seen in (NONDETERMINISTIC: the first that differs) */
    uint32_t op_kind; /* enum sbt_op_kind */
    uint32_t stream;  /* stream id in the reference */
    char name[80];    /* kernel or op name */
    int has_ref;      /* ref_digest holds the reference's (or expected) digest */
    sbt_hash ref_digest, got_digest;
    int is_root;        /* inputs untainted, outputs mismatched: a root cause */
    int bytes_compared; /* the bytes were compared under the tolerance */
    double max_diff;    /* largest element difference found (bytes_compared) */
    char note[120];     /* error message, "bytes unavailable", ... */
};

enum chk_time_verdict {
    CHK_TIME_SAME = 0,
    CHK_TIME_SLOWER = 1,      /* above the threshold, not significant */
    CHK_TIME_FASTER = 2,      /* below -threshold */
    CHK_TIME_REGRESSION = 3,  /* above the threshold and significant: fails the gate */
    CHK_TIME_IMPROVEMENT = 4, /* below -threshold and significant */
    CHK_TIME_NO_DATA = 5,     /* one side has no timed samples */
};
const char *chk_time_verdict_name(uint32_t v);

struct chk_timing_row {
    char name[96];
    uint64_t n_ref, n_run;  /* samples (after the reservoir cap) */
    double ref_median;      /* ns */
    struct chk_summary run; /* ns, over all launches of all runs */
    double rel_diff;        /* run median / ref median - 1 */
    double p_value;         /* Mann-Whitney, one-sided (slower); 1 if not computed */
    double p_faster;        /* the other side */
    uint32_t verdict;       /* enum chk_time_verdict */
};

struct chk_op_timing {
    uint64_t seq;
    char name[80];
    double ref_ns;
    struct chk_summary run; /* over the runs */
    double rel_diff, p_value;
};

enum chk_mode { CHK_MODE_CHECK = 1, CHK_MODE_DIFF = 2 };

struct chk_report {
    uint32_t mode; /* enum chk_mode */
    char *ref_name;
    char **run_names;
    uint32_t n_runs;
    char *device; /* device name the expectations were taken for */
    struct chk_tolerance tol;
    double threshold, confidence;
    /* counts */
    uint64_t n_ref_ops;    /* reference ops in range */
    uint64_t n_verified;   /* ops whose digest was compared (with the reference or across runs) */
    uint64_t n_matched;    /* ... and agreed */
    uint64_t n_unverified; /* ops with a digest on one side only */
    uint64_t n_tolerated;  /* digest mismatches within the tolerance */
    uint64_t n_bytes_unavailable;
    uint64_t n_flaky;   /* known-flaky ops that varied */
    uint64_t n_skipped; /* ops labelled skip */
    uint64_t n_timed;   /* ops with timings on both sides */
    uint64_t count[CHK__NCLASS];
    double max_diff; /* largest element difference over tolerated ops */
    /* findings, in reference seq order (EXTRA by run seq); at most max_findings */
    struct chk_finding *findings;
    uint32_t n_findings;
    uint64_t n_roots;         /* root causes (all of them) */
    int has_first;            /* first divergence found */
    struct chk_finding first; /* the first root in dependency order */
    /* timing */
    struct chk_timing_row *kernels; /* by name; regressions first, then by |rel_diff| */
    uint32_t n_kernels;
    struct chk_op_timing *ops; /* per-op regressions, largest first (at most 20) */
    uint32_t n_ops;
    int failed;            /* the gate's verdict */
    struct chk_priv *priv; /* internal: collected events */
};

/* Compares reference ops (capture) with n_runs result traces, aligned by seq. baseline (may be
 * NULL) replaces the capture as the timing reference (aligned by seq too). *out: owned report. */
int chk_check(sbt_reader *capture, sbt_reader *const *runs, uint32_t n_runs, sbt_reader *baseline,
              const struct chk_opts *opts, struct chk_report **out);
/* Aligns b with a (see the rule above) and compares them; a is the reference. */
int chk_diff(sbt_reader *a, sbt_reader *b, const struct chk_opts *opts, struct chk_report **out);
void chk_report_free(struct chk_report *rep); /* NULL accepted */

/* A short human summary that fits a CI log (about 10 lines plus up to max_lines findings). */
int chk_report_text(const struct chk_report *rep, FILE *f, uint32_t max_lines);
/* One JSON object. */
int chk_report_json(const struct chk_report *rep, FILE *f);
/* JUnit XML: a testsuite with a testcase per trace (each run, and the reference) and one per
 * class of findings, failed when that class has findings. */
int chk_report_junit(const struct chk_report *rep, FILE *f);

/* The Perfetto diff (requires opts.collect_events): reference as run 0 ("baseline"), run as run
 * 1 ("candidate"), both re-based to start at 1 ms; a "diff" process with a track per verdict
 * (slower, faster, output mismatch, missing, extra), counters of delta duration and cumulative
 * drift, a "divergences" track with an instant at the first divergence (details in its args),
 * and a "baseline (matched)" track whose slices cover the baseline op of each verdict, linked by
 * a flow and a shared correlation id to the verdict slice. for check, run is the first run. */
int chk_perfetto_write(const struct chk_report *rep, sbt_reader *ref, sbt_reader *run, FILE *f,
                       struct sbt_export_stats *stats);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_CHK_H */
