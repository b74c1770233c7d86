/*
 * format/sbt_align.h — putting the traces of several processes (and machines) on one time
 * axis: the clock pairs a capture records (FORMAT.md 3.5, metadata clock.sync.N) are fitted by
 * least squares to a line from the trace's own times to realtime, with a stated error bound
 * (FORMAT.md 3.6). Used by the CLI's job commands (info, export, analyze).
 *
 * Times: a trace's op times are ns since its epoch (metadata clock.epoch_monotonic_ns, on
 * CLOCK_MONOTONIC); realtime is CLOCK_REALTIME in ns since 1970. Large values are carried as a
 * uint64 base plus a double offset from it, so no precision is lost to doubles.
 *
 * Errors follow sbt.h: 0 on success, a negative SBT_E* status with sbt_errmsg() on failure.
 */
#ifndef REPRISE_SBT_ALIGN_H
#define REPRISE_SBT_ALIGN_H

#include <stdint.h>

#include "format/sbt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One pair of readings of a trace's monotonic clock and of realtime taken at one instant. */
struct sbt_clock_pair {
    uint64_t mono_ns; /* CLOCK_MONOTONIC (the clock of clock.epoch_monotonic_ns) */
    uint64_t real_ns; /* CLOCK_REALTIME, ns since 1970 */
    uint64_t err_ns;  /* the readings are at most this far apart in time; 0 = unknown */
};

/* Where a fit comes from. */
enum sbt_clock_source {
    SBT_CLOCK_NONE = 0,    /* the trace records no realtime: not alignable */
    SBT_CLOCK_EPOCH = 1,   /* only the epoch pair (traces before clock.sync): drift assumed */
    SBT_CLOCK_PAIRS = 2,   /* least squares over clock.sync pairs */
    SBT_CLOCK_ANCHORS = 3, /* least squares over points shared with another trace (its caller
                              builds the pairs: this trace's monotonic time of each point, the
                              other trace's realtime of it; FORMAT.md 3.6) */
};

/* The drift a fit of one pair assumes: at most this many ns per s (500 ppm, the most that
 * Linux's NTP discipline slews a clock by). */
#define SBT_CLOCK_MAX_DRIFT_PPM 500.0

/* A trace's time axis mapped to realtime: real(t) = real_base + a + b * (t - t_base), for an op
 * time t (ns since the trace's epoch), good to within err_ns + drift_err_ppm * |t - t_base|
 * ns / 1e6 (drift_err_ppm is 0 for fits of two or more pairs: their error is the residual). */
struct sbt_clock_fit {
    uint32_t source;  /* enum sbt_clock_source */
    uint32_t n_pairs; /* pairs fitted */
    uint64_t t_base;  /* op time (ns since the epoch) of the first pair */
    uint64_t real_base;
    double a;             /* ns */
    double b;             /* realtime ns per trace ns: 1 + drift */
    double err_ns;        /* largest residual + largest pair error */
    double drift_err_ppm; /* assumed drift bound (one pair), 0 otherwise */
};

/* The trace's clock pairs (clock.sync.N in order of N; without any, the epoch pair) into *out
 * (malloc'd, the caller frees; NULL when none) and *n. Bad pair values: SBT_ECORRUPT naming the
 * key. */
int sbt_clock_pairs(const sbt_reader *r, struct sbt_clock_pair **out, uint32_t *n);
/* Fits pairs of a trace whose epoch is epoch_ns (CLOCK_MONOTONIC at op time 0). n == 0 gives
 * source NONE. A pair before the epoch or two pairs with the same MONO and different REAL:
 * SBT_EINVAL. */
int sbt_clock_fit_pairs(const struct sbt_clock_pair *p, uint32_t n, uint64_t epoch_ns,
                        struct sbt_clock_fit *out);
/* sbt_clock_pairs then sbt_clock_fit_pairs with the trace's epoch. A trace without
 * clock.epoch_monotonic_ns gives source NONE (and 0). */
int sbt_clock_fit_trace(const sbt_reader *r, struct sbt_clock_fit *out);

/* Realtime of op time t: real_base + *off_ns (so the result keeps ns precision). */
void sbt_clock_map(const struct sbt_clock_fit *f, uint64_t t, double *off_ns);
/* The error bound of the mapped time of t (ns). */
double sbt_clock_bound(const struct sbt_clock_fit *f, uint64_t t);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SBT_ALIGN_H */
