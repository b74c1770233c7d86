/*
 * checker/chk.h — determinism and regression gates over SBT traces: compare a capture with the
 * results of N replays (`reprise check`), or two captures/replays with each other (`reprise
 * diff`); classify every difference, name the first divergence, say how much was verified and
 * what a pass means, gate timings on replays of the same regime with the error rate controlled
 * over the whole gate, keep per-device expectation files, and write reports (text, JSON, JUnit
 * XML) and a Perfetto diff trace.
 *
 * Everything works on .sbt files: a replay writes its results as an SBT trace with the same ops
 * and the same seq numbers as the capture (device times, output digests, errors) and records
 * its regime in metadata (replay.verify, replay.timing, replay.device, replay.driver,
 * replay.env), so the checker needs no device and is tested with synthetic traces.
 *
 * Op identity
 *   An op's key is (stream, what, geometry): what = program name and entry point for a kernel
 *   (the program is named by content, spirv:<hash>), the op kind (and copy direction) otherwise;
 *   geometry = grid, block and shared memory for a kernel, the byte count otherwise. Its
 *   identity adds the occurrence: how many ops of the same key came before it on its stream,
 *   counted from the trace's first op whatever range is checked.
 *   Written as text, "s<stream>/<key>#<occurrence>" (chk_op_key gives the key):
 *       s1/spirv:9f3a...:main/g64x1x1.b64x1x1#17      s2/copy-d2h/n4096#0
 *   Inserting or removing ops of another key leaves every identity as it was; an inserted op of
 *   the same key shifts the occurrences after it on that stream only.
 *
 * Alignment
 *   check: by seq. The capture (the "reference") and each run hold the same ops under the same
 *     seq numbers; a capture op absent from a run is MISSING, a run op whose seq the capture
 *     does not hold (or whose kind differs) is EXTRA.
 *   diff: per stream (by stream id), a shortest edit script (Myers' O(ND) diff) over op keys
 *     (the key above, names compared by content, not by string id), computed on windows of W
 *     ops of each side (opts.window, default 256). Two ops align when their keys are equal and
 *     their output digests, where both sides have one, are equal too: a launch duplicated next
 *     to an identical one is placed where its outputs say, and shifts nothing after it. A
 *     deletion and an insertion of the same key between two aligned ops pair up again as one
 *     aligned op whose outputs differ. Matching heads are taken at once; where they differ, the
 *     script of the window is computed and its first half committed (all of it when both sides
 *     of the stream have ended), so every decision sees W/2 ops of context on each side.
 *     Deleted A ops are MISSING in B, inserted B ops EXTRA. Memory is O(streams x W) plus the
 *     script's rounds, (edit distance)^2 x 4 bytes, at most 16 MiB (beyond an edit distance of
 *     2048 in one window the window is reported as deleted and inserted); a stream that runs
 *     more than 64 x W ops ahead of the other side has its oldest ops reported as missing (or
 *     extra).
 *
 * Classes of findings (per op)
 *   NONDETERMINISTIC  runs disagree among themselves (digests of two runs differ)
 *   DIVERGENT         runs agree, the reference differs (capture digest or expected digest)
 *   MISSING, EXTRA    see alignment
 *   REPLAY_ERROR      a run (diff: either side) recorded an error at the op (SBT_OPF_ERROR)
 *   TIMING            a kernel group slower than the reference (see Timing)
 *   RACE, ORDER_DEPENDENCE, UNINIT_READ   a perturbed run differs (see Perturbed runs)
 *
 * Perturbed runs (check). A result whose metadata has replay.perturb (replay --perturb
 * KIND:SEED, replay/replay.h) is a perturbed run; the others are plain. The plain runs are
 * compared as above (a divergence among them stays NONDETERMINISTIC, one from the reference
 * DIVERGENT). Then each perturbed run's digest is compared with the plain runs' (where they
 * agree; with the reference's when no plain run has the op), bitwise: an op no plain finding
 * names whose outputs a perturbed run changed is a finding of the class its replay recorded
 * (replay.perturb_class: race, order-dependence, uninitialised-read), naming the run, its
 * kind and seed (finding.perturb) and what it changed; opts.confirm may name the static
 * finding it confirms (finding.confirms). Perturbed runs take no part in timings, regimes, the
 * expectations written, nor the pass bound's N; a perturbed finding is a mismatch like any
 * other for the first divergence.
 *
 * Coverage: what a pass means
 *   Device ops are those whose outputs a replay can digest: kernels, copies, fills and host
 *   reads (plus any op that carries a digest). An op is compared when its digest was compared
 *   with the reference's (capture or expectation) or across at least two runs; every other
 *   device op is *unverified* and listed with its reason (no digest anywhere, digest on one
 *   side only, labelled skip, known-flaky and varied), never counted as passing.
 *
 * The verdict: a pass needs positive evidence (one rule, chk_verdict.c, for check and diff).
 *   Findings fail the gate (CHK_GATE_FAIL). Without findings, a gate is NOT VERIFIED
 *   (CHK_GATE_NOT_VERIFIED: rep->not_verified, the reason in rep->fail_reason, rep->failed set
 *   too, so it fails) when it compared no device op, when it compared less than it was asked
 *   to (a result none of whose outputs was compared), or when the reference it was given does
 *   not apply (expectations with no section for the replay device, or none of whose entries
 *   matched an op checked). Only the rest passes. A pass over N runs is evidence,
 *   not proof: the report gives the bound it supports, 1 - (1 - C)^(1/N) (about 3/N at 95%):
 *   with no difference in N runs, the probability that a given op differs in one run is below
 *   it at confidence C.
 *
 * First divergence. After the comparison, the reference trace is walked again in dependency
 * order (scheduler/sched.h delivers ops topologically) with a taint set of byte ranges per
 * resource. A kernel's writes are may-writes (it can leave part of its bound range untouched);
 * copies, fills and host writes overwrite their whole ranges. Per op:
 *   - it is tainted when it reads a tainted byte, or (a kernel) when its write ranges hold
 *     tainted bytes it may not have overwritten: its digest covers those bytes too;
 *   - mismatched (any class but TIMING/EXTRA) or known-flaky: taints its write ranges;
 *   - matched its reference: clears its write ranges (the digest covered every byte of them);
 *   - unverified (or only agreed across runs, which says nothing about a difference from the
 *     capture that came in through its inputs): taints its write ranges when tainted; else a
 *     copy/fill/host write clears them, a kernel leaves them as they were (a may-write never
 *     clears taint it may not have overwritten).
 * A mismatched op that is not tainted is a root cause; the first root in dependency order is
 * the first divergence. An op that mismatched only because of tainted bytes it read or left in
 * place is downstream (is_root = 0). Range-based, so it sees same-stream producers that the
 * scheduler's edge list leaves out as implied by stream order.
 *
 * Tolerances. Bitwise by default. With ulp:K, abs:E or rel:E, a digest mismatch is re-examined
 * on the bytes when both sides' bytes can be had: an op's blob when it is a HOST_READ (the bytes
 * read back), else the file "<seq>.bin" (seq in decimal) in the dump directory of that trace:
 * the name `reprise replay --dump DIR` gives each op's outputs (first run only) and `reprise
 * check --runs N --tolerance ...` asks each of its replays for. check compares every two
 * distinct outputs of the runs (a tolerance is not transitive, so no run may be left out or the
 * verdict would depend on their order), then each with the reference, whose bytes are the
 * capture's or those of a run whose digest is the reference's. Elements are compared by type:
 * the trace's metadata "elem_type.<kernel name>" or "elem_type" (one of f32, f16, bf16, f64,
 * i32, u32), else opts.elem_type (default f32). ULP distances are exact integers
 * (chk_ulp_distance): floats are mapped to their position on the ordered line of the format,
 * so adjacent values differ by 1, +0 and -0 by 0, the largest finite value and infinity by 1;
 * two NaNs are at distance 0 whatever their payloads, a NaN and a number at UINT64_MAX. The
 * largest difference is reported (in ULPs for ulp:K, else absolute or relative). Without bytes
 * the op stays a mismatch with a note that its bytes were unavailable.
 *
 * Timing (check). Durations are device times (SBT_OPF_DEV_TIME) of ops that are not
 * SBT_OPF_UNTIMED, grouped by (program, entry point, geometry) for kernels and by (kind,
 * direction, power-of-two size class) for copies and fills (chk_group_name). The unit of
 * evidence is the run: each run contributes one value per group, the median of that group's
 * launches in it (launches within a run share its conditions and are not independent).
 * opts.timing_quantile takes another quantile: a low one (0.1) follows the launches other load
 * left alone, as interference only ever adds time, at the price of missing a slowdown of a
 * minority of launches. The reference is:
 *   - a baseline: N replay results of the same workload (a stored set, e.g. the last good CI
 *     run's), their regime (verify level, timing mode, device, driver, driver settings from the
 *     environment such as LP_NUM_THREADS) equal to the runs' —
 *     else chk_check refuses, naming the difference, unless opts.allow_regime_change;
 *   - the capture's timings, only when asked (opts.timing_ref = CHK_TREF_CAPTURE): one run, in
 *     another regime (the program under the capture layer);
 *   - none: timings are summarised, not gated.
 * Per group, with m = the minimum effect (opts.timing_threshold): a one-sided Mann-Whitney U
 * test of "the group is at most m slower", i.e. of the per-run medians divided by 1 + m
 * against the reference's (exact, ties included, up to 60 values; normal approximation
 * beyond); the effect as the Hodges-Lehmann estimate of the ratio (median of all
 * run/reference ratios) - 1 with its distribution-free confidence interval; p-values adjusted
 * by Holm's step-down method over every group tested in the gate. A group is a REGRESSION when
 * its adjusted p < 1 - confidence (and its effect exceeds m). So the probability that a gate
 * fails a change under which no group got slower by more than m is at most 1 - confidence,
 * whatever the dependence between groups (they share the machine's noise): Holm controls that
 * family-wise error rate, which is the question a CI gate asks ("is any group slower?");
 * Benjamini-Hochberg's false discovery rate would name more groups when several regress at
 * once but does not change that verdict, and needs independence or positive dependence.
 * Testing against m rather than against no change is what makes the minimum effect a
 * guarantee: significance alone flags differences too small to matter once enough runs are
 * kept, and a point estimate just above m is a coin flip. Improvements are tested the same way
 * (at least m faster) and never fail the gate. `check` confirms a regression with a second batch
 * of replays before failing (chk_confirm_timing).
 *   The gate's verdict (rep->timing_gate) is PASSED or FAILED only when it could have failed:
 *   with n runs against r reference runs no p-value falls below 1 / C(n + r, n) (3 against 3:
 *   0.05), and Holm multiplies the smallest by the number of groups tested, so when that
 *   product is not below 1 - confidence no group can regress whatever the runs show. Such a
 *   gate is NOT_GATED, as is one with no reference, with the gate off, or with no group timed
 *   on both sides; rep->timing_why says which, with the runs this reference needs
 *   (rep->runs_needed, chk_timing_runs_needed), and the reports never call it a pass (JUnit:
 *   a skipped timing testcase). opts.require_timing makes NOT_GATED a failure (the reason
 *   goes into rep->fail_reason). Copies and fills are grouped by direction and power-of-two
 *   size class, so that the family of tests does not grow with every distinct size.
 *   Blame. A slow op makes the op after it on its queue look slow too: the begin timestamp of
 *   the next op (TOP_OF_PIPE) is written while the slow one still drains, so the next op's
 *   interval holds that tail. Each launch's time after the op before it on its stream (in the
 *   same run) ended, end - max(begin, that op's end), is kept beside its duration and tested
 *   the same way (unadjusted: doubt keeps a regression). A REGRESSION becomes DOWNSTREAM of a
 *   group P (named in downstream_of, not counted in count[CHK_TIMING]) when that time did not
 *   regress significantly, some of its launches followed a launch of P and began before it
 *   ended, P's slowdown in ns is at least its own, and P is a regression in its own right (or
 *   downstream of one). What nothing accounts for stays a regression, groups that would only
 *   account for each other included, so blame changes which groups a failed gate names, never
 *   whether it fails. Where the timestamps show no overlap, nothing is explained away.
 *   diff has one run per side: per-group medians and effects are shown, never tested (and its
 *   timing verdict is NOT_GATED).
 *
 * Expectations file (text, one record a line; '#' starts a comment):
 *     reprise-expect 2
 *     device <device name as the run's trace names it, or *>
 *     op <identity> <32 hex digits | -> <ok|flaky|skip> <seq | -> [<op name>]
 *   Per device section, the ops with their expected output digest, keyed by identity (above),
 *   so they survive a re-capture that inserts or removes ops; seq and name are for people. ok:
 *   the runs must produce this digest; flaky: known to vary (set by --update-expect when the
 *   op's digest varied across the N runs), not checked; skip: ignored (hand-written, kept by
 *   updates). The identity "@<seq>" keys an op by seq. Version 1 files ("reprise-expect 1",
 *   lines "op <seq> <digest|-> <label> [<name>]") are still read, keyed by seq; an update
 *   writes version 2. In device and op names, %XX is the byte XX: what a line cannot hold as
 *   it is (control characters, '%', '#', a blank at either end) is written so, and a saved file
 *   loads back to what was saved; an identity that is no single word is refused
 *   (chk_expect_set: SBT_EINVAL). A check uses the section of the device the runs ran on
 *   (their replay.device; a result without it: its device 1; no runs: the capture's device 1),
 *   else "device *"; where the file has neither, the check is not verified.
 *
 * Completeness. A report says whether any trace it read was incomplete (sbt_info.complete = 0:
 * unmodelled calls that affect replay, a capture that stopped recording, a writer that did not
 * finish): rep->incomplete and rep->incomplete_why; every report form repeats it. Refusing such
 * traces is the caller's decision (the CLI exits 3 without --allow-incomplete).
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
#define CHK_CLASS_MAP(X)                                                                     \
    X(NONDETERMINISTIC, "nondeterministic", "runs disagree among themselves")                \
    X(DIVERGENT, "divergent", "runs agree, the reference (capture or expectation) differs")  \
    X(MISSING, "missing", "op of the reference absent from a run")                           \
    X(EXTRA, "extra", "op of a run absent from the reference")                               \
    X(REPLAY_ERROR, "replay-error", "a run reported an error at the op")                     \
    X(TIMING, "timing-regression", "kernel group slower than the reference, significantly")  \
    X(RACE, "race", "a perturbed order (order, declared) changed outputs the runs agree on") \
    X(ORDER_DEPENDENCE, "order-dependence",                                                  \
      "a perturbed workgroup order or thread count (split, threads) changed outputs")        \
    X(UNINIT_READ, "uninitialised-read",                                                     \
      "outputs changed with fresh memory poisoned: a read of bytes nothing wrote")

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
    double eps;    /* ABS, REL: the bound; ULP: K as a double (for display) */
    uint64_t ulps; /* ULP: K, exact */
};
/* "bitwise", "ulp:K" (K a whole number up to 2^64 - 1), "abs:E", "rel:E". SBT_EINVAL with a
 * message otherwise. */
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
size_t chk_elem_size(uint32_t e); /* bytes; 0 if unknown */

/* Exact distance in ULPs between two elements of type elem (read from unaligned memory):
 * floats by their position on the ordered line of the format (+0 and -0 at distance 0; two
 * NaNs at 0 whatever their payloads; a NaN and a number at UINT64_MAX), integers by |a - b|. */
uint64_t chk_ulp_distance(const void *a, const void *b, uint32_t elem);

/* Compares two byte strings element by element. *within: 1 if every element is within tol (and
 * the lengths are equal), *max_diff: the largest difference (ULPs, absolute or relative as tol
 * says; for BITWISE the number of differing bytes). Mismatched lengths are not an error:
 * *within = 0 and *max_diff = INFINITY. Trailing bytes that make no whole element compare
 * bitwise. */
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
 * statistic of x (pairs x > y, ties count 1/2). Exact (the permutation distribution of the
 * midrank sum, ties included) when nx + ny <= 60, else the normal approximation with tie and
 * continuity correction. 1 when a side is empty. */
double chk_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, double *u);
/* The smallest p-value chk_mann_whitney can return for these sizes: 1 / C(nx + ny, nx). */
double chk_mann_whitney_min_p(size_t nx, size_t ny);
/* Hodges-Lehmann estimate of the ratio x / y (positive values): the median of the nx * ny
 * ratios x_i / y_j, and its distribution-free confidence interval from the order statistics of
 * those ratios at the ranks the Mann-Whitney null distribution gives (Bauer 1972); *level is
 * the achieved coverage (the widest interval, min..max, when the asked level cannot be
 * reached). SBT_EINVAL for an empty side or confidence outside (0, 1). */
int chk_ratio_estimate(const double *x, size_t nx, const double *y, size_t ny, double confidence,
                       double *ratio, double *lo, double *hi, double *level);
/* Holm's step-down adjustment of n p-values: adj[i] = max over the j-th smallest p at or below
 * p[i] of min(1, (n - j) p_(j)) (j from 0). p and adj may be the same array. */
int chk_holm(const double *p, size_t n, double *adj);
/* With no difference seen in n independent runs, the upper confidence bound of the per-run
 * probability of a difference: 1 - (1 - confidence)^(1/n) (Clopper-Pearson; ~3/n at 0.95).
 * 1 when n = 0. */
double chk_no_difference_bound(uint64_t n, double confidence);

/* ========================================================================================== */
/* Op identity and timing groups                                                              */
/* ========================================================================================== */

/* The key of an op without stream and occurrence: "spirv:9f3a...:main/g64x1x1.b64x1x1",
 * "copy-d2h/n4096". Characters outside [A-Za-z0-9._:+-] in names are %XX-encoded. Returns buf
 * (truncated to cap). */
const char *chk_op_key(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap);
/* The identities ("s<stream>/<key>#<occurrence>") of the ops with seqs seqs[0..n) (increasing),
 * in one pass over the trace from its first op to the last of them: identity i goes to
 * out + i * stride (truncated to stride bytes); "" for a seq the trace does not hold. */
int chk_op_identities(sbt_reader *r, const uint64_t *seqs, uint64_t n, char *out, size_t stride);
/* The timing group of an op as people read it: "main [spirv:9f3a...] 64x1x1/64x1x1",
 * "[copy h2d] 4 KiB..<8 KiB", "[fill] 256 B..<512 B" (copies and fills by direction and
 * power-of-two size class [2^k, 2^(k+1)); "0 B" for none); NULL for kinds that are not timed
 * (buf untouched). */
const char *chk_group_name(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap);

/* ========================================================================================== */
/* Expectations                                                                               */
/* ========================================================================================== */

enum chk_label { CHK_LABEL_OK = 0, CHK_LABEL_FLAKY = 1, CHK_LABEL_SKIP = 2 };
typedef struct chk_expect chk_expect;
/* An empty set (for --update-expect on a file that does not exist yet). */
int chk_expect_create(chk_expect **out);
/* Reads a file (version 1 or 2); SBT_ECORRUPT naming the line for bad content, SBT_EIO if
 * unreadable. */
int chk_expect_load(const char *path, chk_expect **out);
/* Writes every section (version 2), devices sorted, ops by seq. */
int chk_expect_save(const chk_expect *e, const char *path);
void chk_expect_free(chk_expect *e); /* NULL accepted */
/* Sets one op of a device section (creating it), keyed by identity id
 * ("s<stream>/<key>#<occurrence>"), or by seq when id is NULL or "@<seq>"; seq is kept for people
 * either way. name may be NULL. */
int chk_expect_set(chk_expect *e, const char *device, const char *id, uint64_t seq, uint32_t label,
                   const sbt_hash *digest, const char *name);
/* 1 and (*label, *digest) if the section of device (or "*") has the op: by identity, else an
 * entry keyed by seq; 0 if not. Marks the entry used. */
int chk_expect_get(const chk_expect *e, const char *device, const char *id, uint64_t seq,
                   uint32_t *label, sbt_hash *digest);
uint64_t chk_expect_count(const chk_expect *e, const char *device); /* ops in the section */
/* Entries of the section that no chk_expect_get found (ops the trace no longer has). */
uint64_t chk_expect_unused(const chk_expect *e, const char *device);
/* Moves src's section of device into dst, replacing dst's (other sections of dst stay). */
int chk_expect_replace(chk_expect *dst, chk_expect *src, const char *device);
/* As chk_expect_replace, but dst's entries of that section that no chk_expect_get found (ops
 * outside the range a check read) are kept, where src has none of the same key: an update of
 * a range changes the range's entries only. */
int chk_expect_merge(chk_expect *dst, chk_expect *src, const char *device);
/* 1 if a section applies to device (its own, else "*"), with its entries in *n; 0 if none
 * does, naming the sections the set has in why (may be NULL). */
int chk_expect_section(const chk_expect *e, const char *device, uint64_t *n, char *why, size_t cap);

/* ========================================================================================== */
/* Check and diff                                                                             */
/* ========================================================================================== */

enum chk_timing_ref {
    CHK_TREF_AUTO = 0,     /* the baseline results when there are any, else none */
    CHK_TREF_NONE = 1,     /* timings summarised, not compared */
    CHK_TREF_CAPTURE = 2,  /* the capture's own timings (another regime: asked explicitly) */
    CHK_TREF_BASELINE = 3, /* the baseline results (what AUTO means when there are some) */
};

struct chk_finding; /* below */

struct chk_opts {
    size_t sz;                     /* = sizeof(struct chk_opts); set by CHK_OPTS() */
    const struct sbt_range *range; /* reference ops to compare; NULL = all */
    struct chk_tolerance tol;      /* zero = bitwise */
    uint32_t elem_type;            /* enum chk_elem when the trace says none; 0 = f32 */
    double timing_threshold;       /* minimum effect, a fraction (0.1 = 10%); 0 = 0.10; < 0 =
                                    * no timing gate */
    double confidence;             /* 0 = 0.95 */
    const char *ref_dump;          /* dump directory of the reference, NULL = none */
    const char *const *run_dumps;  /* per run, NULL entries or NULL array = none */
    const chk_expect *expect;      /* expectations to check against; NULL = none */
    chk_expect *expect_update;     /* filled with this check's digests (--update-expect) */
    uint32_t max_findings;         /* findings (and unverified ops) listed; 0 = 1000 */
    uint32_t window;               /* diff: alignment window per stream; 0 = 256 */
    int collect_events;            /* keep per-op verdicts for chk_perfetto_write */
    uint64_t max_events;           /* events kept for the Perfetto diff; 0 = 2M */
    const char *ref_name;          /* labels used in reports; NULL = "reference" */
    const char *const *run_names;  /* per run; NULL = "run N" */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    uint32_t timing_ref;           /* enum chk_timing_ref */
    int allow_regime_change;       /* compare timings of results whose regimes differ */
    const char *const *base_names; /* per baseline result, for reports; NULL = "baseline N" */
    double timing_quantile;        /* each run's value per group: this quantile of its launches;
                                    * 0 = 0.5 (the median) */
    int require_timing; /* a timing verdict that is not gated fails the check (see Timing) */
    /* Perturbed findings (see Perturbed runs): called once per RACE / ORDER_DEPENDENCE /
     * UNINIT_READ finding listed, to name the static finding it confirms into out[cap] (a
     * sentence such as "static finding 3: ops 12 and 14 on buffer 5 [0, 4096), no barrier");
     * return 1 when it wrote one, 0 when none matches. NULL: none is looked for. The static
     * findings come from the scheduler's declared-order pass (issue 22's static half). */
    int (*confirm)(void *ctx, const struct chk_finding *f, char *out, size_t cap);
    void *confirm_ctx;
    /* Run the scheduler's race analysis over the capture (sched_races_run: pairs of ops whose
     * accesses conflict and that nothing the program declared orders): the report counts and
     * lists them (never failing by themselves), and, when confirm is NULL, a perturbed finding
     * on either op of one names it as the static finding it confirms. */
    int static_races;
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
    int is_root;        /* untainted, outputs mismatched: a root cause */
    int bytes_compared; /* the bytes were compared under the tolerance */
    double max_diff;    /* largest element difference found (bytes_compared) */
    char note[120];     /* error message, "bytes unavailable", ... */
    /* RACE, ORDER_DEPENDENCE, UNINIT_READ: the perturbation of the run that exposed it
     * ("split:1") and what that run changed (its replay.perturb_what) */
    char perturb[48];
    char perturb_what[200];
    /* the static finding this one confirms (opts.confirm), "" when none is known */
    char confirms[200];
};

/* Why a device op was not compared. */
enum chk_unverified_why {
    CHK_UNV_NO_DIGEST = 0, /* no side digested its outputs */
    CHK_UNV_ONE_SIDE = 1,  /* a digest on one side only (one run, or only the reference) */
    CHK_UNV_SKIPPED = 2,   /* labelled skip in the expectations */
    CHK_UNV_FLAKY = 3,     /* known-flaky and varied */
    CHK_UNV_ERROR = 4,     /* the runs that had it reported errors */
};
const char *chk_unverified_name(uint32_t why); /* "no-digest", ... */

struct chk_unverified {
    uint64_t seq;
    uint32_t op_kind, stream, why;
    char name[80];
};

enum chk_time_verdict {
    CHK_TIME_SAME = 0,
    CHK_TIME_SLOWER = 1,      /* effect above the threshold, not significant (or not tested) */
    CHK_TIME_FASTER = 2,      /* effect below -threshold, not significant (or not tested) */
    CHK_TIME_REGRESSION = 3,  /* above the threshold and significant: fails the gate */
    CHK_TIME_IMPROVEMENT = 4, /* below -threshold and significant */
    CHK_TIME_NO_DATA = 5,     /* one side has no timed samples */
    CHK_TIME_DOWNSTREAM = 6,  /* a regression in its own right, except that the ops before it
                               * on its stream regressed and its time after they ended did not
                               * (see Timing, "Blame"): named, not counted, fails nothing */
};
const char *chk_time_verdict_name(uint32_t v); /* "same", ..., "downstream" */

/* The timing gate's verdict as a whole. Zero is NOT_GATED: a report says it tested timings
 * only when it could have failed them. */
enum chk_timing_gate {
    CHK_TGATE_NOT_GATED = 0, /* no verdict: rep->timing_why says why (no reference, gate off,
                              * nothing timed on both sides, or too few runs to reach
                              * significance); a failure under opts.require_timing */
    CHK_TGATE_PASSED = 1,    /* tested with the power to fail, and no group regressed */
    CHK_TGATE_FAILED = 2,    /* a group regressed */
};
const char *chk_timing_gate_name(uint32_t g); /* "not-gated", "passed", "failed" */

struct chk_timing_row {
    char name[160];         /* the group (chk_group_name) */
    uint32_t n_ref_runs;    /* reference runs with launches of the group */
    uint32_t n_runs;        /* runs with launches of the group */
    uint64_t n_ref, n_run;  /* launches, over all those runs */
    double ref_median;      /* ns: median over reference runs of their per-run medians */
    struct chk_summary run; /* ns: over the runs' per-run medians (CI of their median) */
    double effect;          /* Hodges-Lehmann ratio - 1 (0.25 = 25% slower); NAN untested */
    double effect_lo, effect_hi, effect_level; /* its CI and achieved coverage */
    double p_value; /* of "at most threshold slower", one-sided, raw; 1 untested */
    double p_adj;   /* Holm-adjusted over the gate's tests */
    double p_faster, p_faster_adj;
    uint32_t verdict; /* enum chk_time_verdict */
    int confirmed;    /* a regression tested again on a fresh batch of runs
                       * (chk_confirm_timing): 1 it regressed there too, 0 it did not and was
                       * downgraded to SLOWER, -1 not tested again */
    /* Blame. Each launch's time after the previous timed op on its stream (in the same run)
     * ended: end - max(begin, that op's end), the part of the measured interval that no
     * earlier op of the queue can account for */
    double excl_effect;      /* that time's Hodges-Lehmann ratio - 1; NAN untested */
    double p_excl;           /* its test "at most threshold slower", raw; 1 untested */
    uint64_t n_overlap;      /* launches in the runs that began before their predecessor ended */
    char downstream_of[160]; /* DOWNSTREAM: the group before it that regressed */
};

enum chk_mode { CHK_MODE_CHECK = 1, CHK_MODE_DIFF = 2 };

/* A static race finding as the report keeps it (see chk_opts.static_races). */
struct chk_race_note {
    uint64_t first, second; /* seqs */
    uint64_t resource, lo, hi;
    uint32_t missing; /* enum sched_race_missing: 1 execution, 2 memory only */
    int confirmed;    /* a perturbed finding on one of its ops confirms it */
    char msg[240];
};

struct chk_report {
    uint32_t mode; /* enum chk_mode */
    char *ref_name;
    char **run_names;
    uint32_t n_runs;
    char *device; /* device name the expectations were taken for */
    struct chk_tolerance tol;
    double threshold, confidence;
    /* completeness of the traces read */
    int incomplete;
    char incomplete_why[600];
    /* coverage */
    uint64_t n_ref_ops;           /* reference ops in range */
    uint64_t n_device_ops;        /* device ops in range (see Coverage) */
    uint64_t n_verified;          /* device ops compared (with the reference or across runs) */
    uint64_t n_matched;           /* ... and agreed */
    uint64_t n_unverified;        /* device ops not compared: listed in unverified[] */
    uint64_t n_unverified_why[5]; /* by enum chk_unverified_why */
    uint64_t n_tolerated;         /* ops whose digests differed, within the tolerance */
    uint64_t n_bytes_unavailable;
    uint64_t n_flaky;         /* known-flaky ops that varied */
    uint64_t n_skipped;       /* ops labelled skip */
    uint64_t n_timed;         /* ops with a device time in some run */
    uint64_t n_expect_unused; /* expectations that matched no op of the trace */
    uint32_t n_compared_runs; /* runs whose digests were compared: the N of the bound */
    double pass_bound;        /* chk_no_difference_bound(n_compared_runs, confidence) */
    uint64_t count[CHK__NCLASS];
    double max_diff; /* largest element difference over tolerated ops */
    /* perturbed runs (check): per run, its replay.perturb ("" for a plain run) and what it
     * changed (replay.perturb_what); n_perturbed of them */
    char **run_perturb, **run_perturb_what;
    uint32_t n_perturbed;
    /* findings, in reference seq order (EXTRA by run seq); at most max_findings */
    struct chk_finding *findings;
    uint32_t n_findings;
    struct chk_unverified *unverified; /* at most max_findings, in seq order */
    uint32_t n_unverified_listed;
    uint64_t n_roots;         /* root causes (all of them) */
    int has_first;            /* first divergence found */
    struct chk_finding first; /* the first root in dependency order */
    /* UINT64_MAX: the first divergence is located (every byte it read was compared and
     * matched); else what it read came from ops whose outputs were not compared, the earliest
     * of them this op: the root lies between it and first.seq */
    uint64_t first_after;
    /* timing */
    uint32_t timing_ref;   /* what the reference was: enum chk_timing_ref (never AUTO) */
    uint32_t n_ref_runs;   /* reference runs (baseline results; 1 for the capture) */
    char regime[400];      /* the runs' regime, as "verify=op timing=op device=... driver=..." */
    char regime_note[400]; /* regimes that differ but were compared (allow_regime_change) */
    /* other load on the machine: median over the runs (over the baseline) of the share of a
     * run's wall time its threads waited for a CPU (replay.cpu_wait_ns / replay.wall_ns);
     * NAN when the results do not say */
    double cpu_wait, ref_cpu_wait;
    struct chk_timing_row *kernels; /* regressions first, then by |effect| */
    uint32_t n_kernels;
    uint32_t n_tests;        /* groups tested: the family of the Holm adjustment */
    uint32_t n_confirm_runs; /* runs of the timing confirmation batch (0: none) */
    double timing_quantile;  /* the per-run statistic (0.5: each run's median launch) */
    double min_p;            /* smallest attainable p-value with these run counts (1 if none) */
    uint32_t timing_gate;    /* enum chk_timing_gate */
    char timing_why[320];    /* NOT_GATED: why, for people; else what was gated */
    uint32_t runs_needed;    /* runs against this reference that give the gate power
                              * (chk_timing_runs_needed); 0 when no number of runs would */
    int timing_required;     /* opts.require_timing: NOT_GATED fails the check */
    uint32_t n_downstream;   /* groups reported DOWNSTREAM (not in count[CHK_TIMING]) */
    int failed;              /* the gate's verdict */
    char fail_reason[600];   /* a failure that is no finding ("no device op ... compared") */
    int not_verified;        /* no positive evidence for a pass (fail_reason says what
                              * lacks; failed is set too): see chk_report_gate */
    struct chk_priv *priv;   /* internal: collected events */
    /* static races (opts.static_races): whether the analysis ran and the trace declares its
     * order (else why not), the counts, the first max_findings of them */
    int races_run, races_declared;
    char races_why_not[160];
    uint64_t n_races, n_races_exec, n_races_memory, n_races_confirmed;
    struct chk_race_note *races;
    uint32_t n_races_listed;
};

/* Compares reference ops (capture) with n_runs result traces, aligned by seq, and gates the
 * runs' timings on the baseline results (n_base, may be 0) per opts.timing_ref. SBT_EINVAL
 * naming the difference when the runs' or the baseline's regimes differ and
 * opts.allow_regime_change is 0. *out: owned report. */
int chk_check(sbt_reader *capture, sbt_reader *const *runs, uint32_t n_runs,
              sbt_reader *const *baseline, uint32_t n_base, const struct chk_opts *opts,
              struct chk_report **out);
/* Confirmation of timing regressions. A machine shared with other work can slow every run of
 * one gate at once (interference that outlasts a batch of runs), and no statistic over those
 * runs tells that from a regression. So a gate that found regressions can test again (the
 * report `again`, same reference and options): `check` replays a fresh batch and tests the
 * first batch and the fresh one together, so that a slowdown that persists is found with more
 * power and one that hit only the first batch is diluted. A group stays a REGRESSION only if
 * it is one in `again` too, else it becomes SLOWER with confirmed = 0; rep->failed is
 * recomputed. The error rate stays at most 1 - confidence (`again` must reject on its own). */
int chk_confirm_timing(struct chk_report *rep, const struct chk_report *again);
/* The runs a timing gate needs against n_ref reference runs and n_tests groups at this
 * confidence: the fewest n for which the gate can still fail a group when one of its n runs
 * is out of order with one reference run (one-sided exact U test: p = 2 / C(n + n_ref, n),
 * times n_tests for Holm, below 1 - confidence). 0 when n_ref or n_tests is 0 or more than
 * CHK_RUNS_NEEDED_MAX runs would be needed. */
#define CHK_RUNS_NEEDED_MAX 1024
uint32_t chk_timing_runs_needed(uint32_t n_ref, uint32_t n_tests, double confidence);
/* The timing groups of a replay result (ops with a device time; with a range, those in the
 * seq bounds the range has in capture, as chk_check reads a baseline): *n, for planning how
 * many runs a gate against such results needs. */
int chk_timing_groups(sbt_reader *capture, sbt_reader *result, const struct sbt_range *range,
                      uint32_t *n);

/* Aligns b with a (see the rule above) and compares them; a is the reference. */
int chk_diff(sbt_reader *a, sbt_reader *b, const struct chk_opts *opts, struct chk_report **out);
void chk_report_free(struct chk_report *rep); /* NULL accepted */

/* The gate's verdict as the reports name it: FAIL when it found differences (or failed for
 * another reason in rep->fail_reason), NOT_VERIFIED when it found none but lacks the evidence
 * for a pass (rep->not_verified), else PASS. Both of the first fail (exit 1). */
enum chk_gate { CHK_GATE_PASS = 0, CHK_GATE_FAIL = 1, CHK_GATE_NOT_VERIFIED = 2 };
uint32_t chk_report_gate(const struct chk_report *rep);
const char *chk_gate_name(uint32_t g); /* "pass", "fail", "not-verified" */

/* The regime of a replay result as text ("verify=op timing=op device=... driver=... env=...";
 * keys the trace does not have read "?"). 1 if a and b have the same regime, else 0 with the keys
 * that differ and both values in why (may be NULL). */
const char *chk_regime(const sbt_reader *r, char *buf, size_t cap);
int chk_regime_same(const sbt_reader *a, const sbt_reader *b, char *why, size_t cap);

/* A short human summary that fits a CI log (about 12 lines plus up to max_lines findings). */
int chk_report_text(const struct chk_report *rep, FILE *f, uint32_t max_lines);
/* One JSON object. */
int chk_report_json(const struct chk_report *rep, FILE *f);
/* JUnit XML: a testcase per trace (each run, and the reference), one per class of findings
 * (failed when that class has findings), one for coverage (failed when nothing was compared;
 * skipped, listing them, when ops were left unverified) and, for an incomplete trace, one
 * skipped testcase saying so. */
int chk_report_junit(const struct chk_report *rep, FILE *f);

/* The Perfetto diff (requires opts.collect_events): reference as run 0 ("baseline"), run as run
 * 1 ("candidate"), both re-based to start at 1 ms; a "diff" process (named INCOMPLETE when a
 * trace was) with a track per verdict (slower, faster, output mismatch, missing, extra),
 * counters of delta duration and cumulative drift, a "divergences" track with an instant for
 * the gate's verdict (coverage, bound, completeness in its args) and one at the first
 * divergence, and a "baseline (matched)" track whose slices cover the baseline op of each
 * verdict, linked by a flow and a shared correlation id to the verdict slice. For check, run is
 * the first run. */
int chk_perfetto_write(const struct chk_report *rep, sbt_reader *ref, sbt_reader *run, FILE *f,
                       struct sbt_export_stats *stats);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_CHK_H */
