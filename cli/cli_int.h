/*
 * cli/cli_int.h — what the cli_*.c command files share: exit codes, the command table,
 * argument helpers (times with units, ranges), and opening a trace with a message that
 * names the problem and the fix. Only cli/ includes this.
 */
#ifndef REPRISE_CLI_INT_H
#define REPRISE_CLI_INT_H

#include <stdint.h>
#include <stdio.h>

#include "format/sbt.h"
#include "scheduler/sched.h"

/* Exit codes: part of the interface (README "Exit codes"). */
enum cli_exit {
    CLI_OK = 0,       /* success */
    CLI_FAIL = 1,     /* a check failed: differences, nondeterminism, regression */
    CLI_USAGE = 2,    /* bad command line */
    CLI_BADINPUT = 3, /* corrupt, unsupported or foreign trace; unreadable file */
    CLI_ENV = 4,      /* environment: no device, missing driver or package */
    CLI_INTERNAL = 5, /* a bug or resource exhaustion in reprise */
};

/* One subcommand. run() gets argv[0] = the command name; returns an exit code. */
struct cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary; /* one line for `reprise --help` */
};

/* Command entry points (cli_<name>.c). */
/* Static race findings (scheduler sched_races_run) for dry-run and analyze: the first
 * CLI_RACES_KEEP findings with their messages, and the counts. */
#define CLI_RACES_KEEP 100
struct cli_races {
    struct sched_race_stats st;
    struct sched_race v[CLI_RACES_KEEP];
    uint32_t n;
    int oom;
};
int cli_races_collect(sbt_reader *r, struct cli_races *out); /* 0 or < 0 (sched_errmsg) */
void cli_races_free(struct cli_races *c);
/* "races       N possible (...)" and the first max findings (0 = all kept) as warnings. */
void cli_races_print(FILE *tx, const struct cli_races *c, uint32_t max);
void cli_races_json(FILE *f, const struct cli_races *c); /* {"declared":..,"count":..,..} */

int cli_capture(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_view(int argc, char **argv);
int cli_validate(int argc, char **argv);
int cli_gen(int argc, char **argv);
int cli_import(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_replay(int argc, char **argv);
int cli_analyze(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_diff(int argc, char **argv);
int cli_devices(int argc, char **argv);
int cli_trim(int argc, char **argv);

/* check and diff: writes the --json, --junit and --perfetto outputs (NULL = not asked). */
struct chk_report;
int cli_check_outputs(const char *cmd, const struct chk_report *rep, const char *json,
                      const char *junit, const char *pf, sbt_reader *ref, sbt_reader *run);

/* cli_capture_cuda.c: sets this process's environment so that a program started from it runs
 * with the CUDA shim in front of libcuda.so.1 (LD_LIBRARY_PATH, REPRISE_CUDA_DRIVER) and, when
 * given, REPRISE_TRACE / REPRISE_TIMING. CLI_OK, or CLI_ENV after a message (no shim, no
 * driver). */
int cli_capture_cuda_env(const char *cmd, const char *trace, int timing);

/* "reprise: <cmd>: message" on stderr. */
void cli_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints a usage error plus "try 'reprise CMD --help'"; returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Maps an SBT status to an exit code (bad data -> 3, memory -> 5, ...). */
int cli_exit_for(int sbt_status);
/* The same for what the replay engine returns (replay, check's replays, trim): the device or
 * a limit -> 4; unsupported, incomplete, graph errors, a range or value the trace cannot take
 * -> 3; memory -> 5. */
int cli_replay_exit_for(int replay_status);
/* The exit code of a replay's verdict (enum replay_verdict), the one mapping every command
 * uses: verified 0; not verified 1 (0 where verification was turned off and the output says
 * so); differs 1; the device or driver failed during the replay 1 (the driver under test
 * failing is a failed gate); a device that lacks what an op needs 4; not replayable 3. */
int cli_verdict_exit(int verdict, int verify_none);
/* One line of a capture's manifest (capture/cap.h, CAP_MANIFEST_SUFFIX). */
struct cli_proc {
    const char *pid, *ppid, *start, *trace, *cmd; /* cmd may be "" */
};
/* The manifest of the capture whose root trace is trace: STEM.procs, into out[cap]. */
void cli_manifest_path(const char *trace, char *out, size_t cap);
/* Reads the manifest at path, calling fn for each well-formed line. Returns the number of
 * lines, or -1 when it cannot be opened. */
int cli_manifest_read(const char *path, void (*fn)(void *ctx, const struct cli_proc *p), void *ctx);
/* ==========================================================================================
 * Jobs (cli_job.c): the traces of the processes of one job, given as the capture's manifest
 * (STEM.procs: the traces it lists) or a directory (every *.sbt in it but snapshot sidecars,
 * *.snap.sbt: traces gathered from several machines). Each trace is opened once to read its
 * identity (FORMAT.md 3.5) and clock fit, then closed: a job holds no reader.
 * ========================================================================================== */
#include "format/sbt_align.h"

struct cli_job_proc {
    char *trace;                  /* path (resolved beside the manifest when need be) */
    int64_t rank;                 /* job.rank, -1 when the trace has none */
    int64_t world, local_rank;    /* -1 when not recorded */
    char label[48];               /* "rank 3", or "pid 1234" without a rank */
    char title[160];              /* "rank 3 (pid 1234 on host)": its process in an export */
    char *host, *pid, *ppid, *id; /* metadata ("" when absent); id = job.id */
    char *argv;
    uint64_t n_ops, t_min, t_max; /* op times: ns since the trace's epoch */
    struct sbt_clock_fit fit;
    uint64_t epoch_mono;    /* clock.epoch_monotonic_ns, 0 when absent */
    uint32_t n_anchors;     /* shared points its fit uses (fit.source SBT_CLOCK_ANCHORS), else 0 */
    double anchor_shift_ns; /* how far the anchors moved its start from where its clock pairs
                               put it (the realtime clocks' disagreement) */
    double start_ns;        /* realtime of t_min relative to the job's origin */
    double bound_ns;        /* error bound of its times on the job's axis (at t_min and t_max) */
};
struct cli_job {
    char *index; /* what was given */
    uint32_t n;
    struct cli_job_proc *p; /* sorted: by rank, then processes without one by pid */
    uint64_t origin_real;   /* realtime (ns since 1970) of the job's time 0: its first op */
    int unaligned;          /* processes whose trace has no realtime (placed at 0) */
    uint32_t n_ids;         /* distinct job ids among the traces (1 for a sound job) */
    int dup_ranks;          /* two traces claim one rank */
};
/* 1 when path names a job (a directory, or a file ending in .procs), else 0. */
int cli_job_is(const char *path);
/* Reads the job at path. CLI_OK with *out, or an exit code after a message: 3 when the index or
 * a trace it names cannot be read, or the job has no trace. Warns (stderr) about traces of
 * several job ids and ranks claimed twice. */
int cli_job_open(const char *cmd, const char *path, struct cli_job **out);
void cli_job_free(struct cli_job *j);
/* The export options that put process i of j on the job's time axis: ts_offset and ts_drift
 * (and run, label and pid: a process per rank). */
/* Where process p's output goes when the job's is v: a directory (is_dir) DIR/rank-K, a file
 * F.ext F.rank-K.ext (pid-P for a process without a rank). malloc'd; NULL without memory. */
char *cli_job_out_path(const char *v, int is_dir, const struct cli_job_proc *p);
struct sbt_export_opts;
void cli_job_export_opts(const struct cli_job *j, uint32_t i, struct sbt_export_opts *o);

/* Opens a trace, printing what went wrong (and what to do: `reprise import` for TraceSmith
 * files) on failure. Returns CLI_OK with *out set, or an exit code. A trace without footer
 * prints a one-line note on stderr saying what the scan recovered. */
int cli_open_trace(const char *cmd, const char *path, sbt_reader **out);

/* The sidecar of snapshots for a range replay or trim of the trace at trace_path (opened as
 * r): the file named (file != NULL), else TRACE-stem.snap.sbt when it exists; none when
 * `none`. CLI_OK with *out (NULL: no sidecar) and *used (the path, malloc'd, or NULL), or an
 * exit code after a message (3: unreadable, damaged, or of another trace). */
int cli_open_snapshots(const char *cmd, const char *trace_path, sbt_reader *r, const char *file,
                       int none, sbt_reader **out, char **used);

/* Parses "12", "12ns", "3.5us", "10ms", "2s" into ns. 0 ok, -1 bad. */
int cli_parse_time(const char *s, uint64_t *ns);
/* Parses an unsigned integer with optional k/M/G suffix (decimal). 0 ok, -1 bad. */
int cli_parse_u64(const char *s, uint64_t *v);

/* --timing-threshold P% ("10%", "10", or "off" = -1) into a fraction (0 becomes 1e-12:
 * any slowdown counts); --confidence C in (0, 1). 0, or -1 after printing a usage error. */
int cli_parse_threshold(const char *cmd, const char *arg, double *out);
int cli_parse_confidence(const char *cmd, const char *arg, double *out);

/* Range options shared by view, analyze, replay, export, check. */
struct cli_range {
    int has_time, has_ops;
    uint64_t t0, t1;   /* relative to trace start, ns; t1 = UINT64_MAX if open */
    uint64_t op0, op1; /* [op0, op1) by sequence; op1 = UINT64_MAX if open */
    uint32_t stream;   /* 0 = all */
};
/* --time-range A:B (either side may be empty), --ops A:B (inclusive A, exclusive B),
 * --stream S. Returns 0, or -1 after printing a usage error. */
int cli_range_time(const char *cmd, const char *arg, struct cli_range *cr);
int cli_range_ops(const char *cmd, const char *arg, struct cli_range *cr);
int cli_range_stream(const char *cmd, const char *arg, struct cli_range *cr);
/* Turns the relative range into an sbt_range for this trace. */
void cli_range_resolve(const struct cli_range *cr, const sbt_reader *r, struct sbt_range *out);

/* s as a JSON string (quoted, escaped) on f; NULL as "". */
void cli_json_str(FILE *f, const char *s);
/* Whether a report goes to standard output ('-' as --json or --junit): the text summary then
 * goes to stderr, so that stdout holds the report alone. */
int cli_report_stdout(const char *json, const char *junit);
/* Formats ns as a short human string ("12.3 ms") into buf; returns buf. */
char *cli_fmt_ns(double ns, char *buf, size_t len);
/* Formats a byte count ("1.5 MiB") into buf; returns buf. */
char *cli_fmt_bytes(double bytes, char *buf, size_t len);

/* Progress on a terminal (stderr is a tty), quiet otherwise. done/total in any unit. */
void cli_progress(const char *what, uint64_t done, uint64_t total);
void cli_progress_end(void);

#endif /* REPRISE_CLI_INT_H */
