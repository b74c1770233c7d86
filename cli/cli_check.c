/*
 * cli/cli_check.c — `reprise check`: the determinism and regression gate. Compares a capture
 * with replay results (checker/chk.h) and exits 0 (pass), 1 (fail), 3 (bad input) or 4 (no
 * device). The results are either given (--results: files a replay wrote, here or on another
 * machine) or made here: N replays through replay_run (replay/replay.h) with per-op verification,
 * each into its own result file in a directory that is kept and named (--keep DIR, else a new one
 * in $TMPDIR or /tmp), since diff, export and a second check read them next. Incomplete traces are
 * refused (exit 3) unless --allow-incomplete; the baseline (--baseline: result files or directories
 * of them) is the timing reference.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checker/chk.h"
#include "cli/cli_int.h"
#include "replay/replay.h"

static const char check_help[] =
    "usage: reprise check TRACE [--runs N] [--keep DIR] [options]\n"
    "       reprise check TRACE --results R1.sbt [R2.sbt ...] [options]\n"
    "       reprise check JOB [--parallel N] [--runs N] [--keep DIR] [options]\n\n"
    "Checks that replays of TRACE agree with each other and with the capture (every device op's\n"
    "output digest) and, against a baseline of earlier replays, that no kernel got slower.\n"
    "Exit 0 pass; 1 fail or not verified, and a device or driver that fails while the gate\n"
    "replays (device lost, a failing call, a pipeline it does not compile: a replay-error\n"
    "finding in every report, the failure named first); 2 usage; 3 bad input (incomplete\n"
    "trace, graph errors, regimes that differ); 4 no device or driver to start with; 5\n"
    "internal error.\n\n"
    "  --runs N              replays to run here, each with per-op verification\n"
    "                        (replay --verify op) into DIR/runK.sbt; with a tolerance other\n"
    "                        than bitwise, each also dumps its outputs into DIR/runK.dump.\n"
    "                        Default 3; against a --baseline, the fewest runs with which its\n"
    "                        timing gate can fail (see Timing), up to as many as the\n"
    "                        baseline has results (at most 32)\n"
    "  --keep DIR            directory for those results (created if need be; kept). Default:\n"
    "                        a new reprise-check-XXXXXX in $TMPDIR or /tmp, also kept and named\n"
    "                        on stderr\n"
    "  --results R...        replay result traces (reprise replay -o R.sbt) instead of running\n"
    "                        replays; every argument up to the next option. Aligned with TRACE\n"
    "                        by op seq.\n"
    "  --baseline B...       timing reference: replay results of the same workload in the same\n"
    "                        regime (e.g. the last good run's DIR); files, or directories whose\n"
    "                        *.sbt files are taken; every argument up to the next option\n"
    "  --timing-reference R  baseline (default when --baseline is given), none (default\n"
    "                        otherwise: timings summarised, not gated), or capture (the\n"
    "                        capture's own timings: another regime, one run)\n"
    "  --allow-regime-change compare timings although the regimes (verify level, timing mode,\n"
    "                        device, driver, LP_NUM_THREADS... recorded by replay) differ;\n"
    "                        refused otherwise\n"
    "  --timing-threshold P% minimum effect: a kernel group regresses only when the runs show,\n"
    "                        significantly, that it is slower by more than this (default 10%);\n"
    "                        'off': no timing gate\n"
    "  --require-timing      a timing verdict that is not gated (no baseline, too few runs or\n"
    "                        reference runs to reach significance) fails the check (exit 1);\n"
    "                        by default it is reported as not gated, and a JUnit skip\n"
    "  --no-confirm          fail on timing regressions at once; by default, regressions found\n"
    "                        in replays made here are tested again on these runs plus as many\n"
    "                        fresh ones (DIR/confirmK.sbt), and only those found again fail\n"
    "  --timing-quantile Q   each run's value per group: this quantile of its launches\n"
    "                        (default 0.5, the median). 0.1 follows the launches other load\n"
    "                        left alone (on a shared machine), and misses a slowdown of a\n"
    "                        minority of launches\n"
    "  --confidence C        of the tests and intervals (default 0.95): at most 1 - C chance\n"
    "                        that the gate names any group slower when none is\n"
    "  --allow-incomplete    check a trace that is incomplete (unmodelled calls, a capture that\n"
    "                        stopped) or whose graph has errors; every report says so.\n"
    "                        Without it such traces are refused (exit 3), naming what lacks\n"
    "  --tolerance T         bitwise (default), ulp:K, abs:E or rel:E. A digest mismatch is\n"
    "                        re-compared element by element when both sides' bytes exist\n"
    "                        (HOST_READ blobs, or --dump-dirs); else it stays a mismatch.\n"
    "                        ULPs are exact integer distances (+0 = -0; NaN = NaN)\n"
    "  --elem-type T         f32 (default), f16, bf16, f64, i32, u32, when the trace's metadata\n"
    "                        (elem_type, elem_type.<kernel>) does not say\n"
    "  --dump-dirs D...      with --results: one replay --dump directory per result (the\n"
    "                        files <seq>.bin replay writes), for --tolerance\n"
    "  --time-range A:B      compare the ops overlapping [A, B) (relative to the trace start)\n"
    "  --ops A:B             compare ops with seq in [A, B)\n"
    "  --expect FILE         expected digests per device and op identity, labels ok|flaky|skip;\n"
    "                        the section of the device the runs ran on (or 'device *') applies,\n"
    "                        and a file without one leaves the check not verified\n"
    "  --update-expect       write FILE from these runs (ops whose digest varied: flaky) into\n"
    "                        the section of their device; with a range, only the range's\n"
    "                        entries change. Not when a run had a replay error (exit 1, FILE\n"
    "                        unchanged)\n"
    "  --json F, --junit F   reports for CI systems ('-' = stdout, the summary then on stderr)\n"
    "  --perfetto F          a diff trace of the capture vs the first result\n"
    "  --max-findings N      findings and unverified ops listed (default 1000; all counted)\n"
    "  --perturb [KINDS]     after the plain runs, one perturbed replay per KIND[:SEED] of the\n"
    "                        comma-separated list (default: poison,split,threads,order,declared\n"
    "                        for a Vulkan trace, poison,order,declared for CUDA; seed 1), each into\n"
    "                        DIR/perturb-KIND-SEED.sbt and named by kind and seed in every\n"
    "                        report (`reprise replay --perturb KIND:SEED` reproduces it; see\n"
    "                        its --help for the kinds). An op whose outputs only a perturbed\n"
    "                        run changes is a finding of its own class: race (order, declared),\n"
    "                        order-dependence (split, threads: e.g. float atomics whose sum\n"
    "                        depends on workgroup order), uninitialised-read (poison: a value\n"
    "                        computed from memory nothing wrote). A kind the device cannot\n"
    "                        apply is skipped when defaulted, refused (exit 3/4) when named.\n"
    "                        Perturbed runs are compared bitwise and take no part in timing\n"
    "  -q, --quiet           no summary\n\n"
    "JOB (the capture's manifest TRACE-stem.procs, or a directory of traces; see reprise info):\n"
    "each process's trace is checked by `reprise check TRACE` with the same options, in rank\n"
    "order, N at a time (--parallel N, default 1); each one's output is kept in its log and\n"
    "printed after it. The job passes only when every rank passes; the exit code is the\n"
    "highest of the ranks' (1 fail, 3 bad input, 4 no device, 5 internal), and the summary\n"
    "names every rank that did not pass with its trace. --keep DIR gives rank K DIR/rank-K\n"
    "(logs in DIR; a process without a rank: pid-P); --json/--junit/--perfetto F give rank K\n"
    "F-stem.rank-K.ext, and F itself the job's report (JSON: the verdict, then per rank its\n"
    "trace, exit code, log and report; JUnit: a test case per rank, failures naming it).\n"
    "--results, --baseline, --dump-dirs and --expect name files of one trace and are refused\n"
    "for a job.\n\n"
    "Static races: the pairs of ops whose accesses conflict that nothing the program declared\n"
    "orders (as `reprise analyze` lists them) are counted and listed in every report; they\n"
    "fail nothing, and a perturbed finding on one of their ops names the race it confirms.\n\n"
    "Outputs. Classes: nondeterministic (results disagree), divergent (results agree, the\n"
    "capture or the expectation differs), missing / extra op, replay-error. Under a tolerance\n"
    "every result's outputs are compared with every other's and with the capture's, so the\n"
    "verdict does not depend on their order. Device ops with no digest to compare are listed\n"
    "as unverified, not passed. A pass needs evidence: a check that compared no device op,\n"
    "that compared none of some result's outputs, or whose expectations do not apply (no\n"
    "section for the device the runs ran on, or none of its entries met an op checked) is NOT\n"
    "VERIFIED, with the reason in every report, and fails (exit 1).\n"
    "A pass over N runs bounds the chance that an op differs in a run below 1 - (1 - C)^(1/N)\n"
    "(about 3/N). The first divergence is the earliest op, in dependency order, whose outputs\n"
    "mismatch while no byte it read (or, for a kernel, left in place) came from a mismatch.\n\n"
    "Timing. Kernels are grouped by (program, entry point, geometry), copies and fills by\n"
    "direction and power-of-two size class (4 KiB..<8 KiB). Each run gives one value per\n"
    "group, the median of its launches: runs, not launches, are the samples. Per group, a\n"
    "one-sided Mann-Whitney U test that the runs are slower than the reference runs by more\n"
    "than the threshold, p-values adjusted by Holm's method over all groups of the gate: a\n"
    "change that slows no group by more than the threshold fails the gate with probability at\n"
    "most 1 - C. A regression is confirmed on these runs plus as many fresh ones before it\n"
    "fails the gate (--no-confirm). Each group's effect (Hodges-Lehmann ratio) comes with its\n"
    "confidence interval. The timing verdict is passed or failed only when the runs and the\n"
    "reference could reach significance; otherwise it is NOT GATED (text, JSON gate, a JUnit\n"
    "skip), saying why and how many runs this reference needs. A group slower only because\n"
    "the op before it on its queue regressed (its time after that op ended did not change, and\n"
    "its begin timestamps fell inside that op) is named downstream of it, not counted. The\n"
    "report says how long the runs waited for a CPU.\n";

static FILE *open_out(const char *path)
{
    return !strcmp(path, "-") ? stdout : fopen(path, "w");
}

static int close_out(FILE *f)
{
    if (f == stdout)
        return fflush(f);
    return fclose(f);
}

static void progress(void *ctx, uint64_t done, uint64_t total)
{
    cli_progress((const char *)ctx, done, total);
}

int cli_check_outputs(const char *cmd, const struct chk_report *rep, const char *json,
                      const char *junit, const char *pf, sbt_reader *ref, sbt_reader *run)
{
    const char *paths[3] = {json, junit, pf};
    for (int k = 0; k < 3; k++) {
        if (!paths[k])
            continue;
        FILE *f = k == 2 ? fopen(paths[k], "wb") : open_out(paths[k]);
        if (!f) {
            cli_err(cmd, "cannot write %s", paths[k]);
            return CLI_BADINPUT;
        }
        int st = k == 0   ? chk_report_json(rep, f)
                 : k == 1 ? chk_report_junit(rep, f)
                          : chk_perfetto_write(rep, ref, run, f, NULL);
        if (close_out(f) && !st)
            st = SBT_EIO;
        if (st < 0) {
            cli_err(cmd, "%s: %s", paths[k], chk_errmsg());
            return st == SBT_ENOMEM ? CLI_INTERNAL : CLI_BADINPUT;
        }
        if (k == 2)
            fprintf(stderr,
                    "reprise: %s: Perfetto diff written to %s (open it in "
                    "https://ui.perfetto.dev)\n",
                    cmd, paths[k]);
    }
    return CLI_OK;
}

#define MAX_RESULTS 256

static int is_sbt(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 4 && !strcmp(d->d_name + n - 4, ".sbt");
}

/* Files as given; a directory stands for its *.sbt files in name order. *out: malloc'd paths
 * (freed by the caller, also on failure up to *n). */
static int expand_results(const char *cmd, const char *opt, const char *const *args,
                          uint32_t n_args, char **out, uint32_t max, uint32_t *n)
{
    *n = 0;
    for (uint32_t i = 0; i < n_args; i++) {
        struct stat sb;
        if (stat(args[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            struct dirent **ents = NULL;
            int k = scandir(args[i], &ents, is_sbt, alphasort);
            if (k < 0) {
                cli_err(cmd, "%s %s: cannot list it: %s", opt, args[i], strerror(errno));
                return CLI_BADINPUT;
            }
            if (k == 0) {
                free(ents);
                cli_err(cmd, "%s %s: the directory holds no .sbt file", opt, args[i]);
                return CLI_BADINPUT;
            }
            int rc = CLI_OK;
            for (int j = 0; j < k; j++) {
                if (rc == CLI_OK && *n >= max) {
                    cli_err(cmd, "%s: more than %u results", opt, max);
                    rc = CLI_USAGE;
                }
                if (rc == CLI_OK) {
                    size_t len = strlen(args[i]) + strlen(ents[j]->d_name) + 2;
                    if (!(out[*n] = malloc(len)))
                        rc = CLI_INTERNAL;
                    else
                        snprintf(out[(*n)++], len, "%s/%s", args[i], ents[j]->d_name);
                }
                free(ents[j]);
            }
            free(ents);
            if (rc != CLI_OK)
                return rc;
            continue;
        }
        if (*n >= max) {
            cli_err(cmd, "%s: more than %u results", opt, max);
            return CLI_USAGE;
        }
        if (!(out[*n] = strdup(args[i])))
            return CLI_INTERNAL;
        (*n)++;
    }
    return CLI_OK;
}

/* n replays of cap with per-op verification, each into DIR/<stem>K.sbt (and, with dumps, its
 * outputs into DIR/<stem>K.dump); paths[k], dump_paths[k] receive the names. */
static int run_batch(sbt_reader *cap, const char *path, const struct cli_range *cr, const char *dir,
                     const char *stem, uint32_t n, int dumps, int allow, char (*paths)[4200],
                     char (*dump_paths)[4200])
{
    struct sbt_range rrange;
    cli_range_resolve(cr, cap, &rrange);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(paths[i], 4200, "%s/%s%u.sbt", dir, stem, i + 1);
        snprintf(dump_paths[i], 4200, "%s/%s%u.dump", dir, stem, i + 1);
        struct replay_result res;
        int st = replay_run(
            cap,
            &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP, .runs = 1, .allow_incomplete = allow,
                         .range = cr->has_time || cr->has_ops || cr->stream ? &rrange : NULL,
                         .out_path = paths[i], .dump_dir = dumps ? dump_paths[i] : NULL,
                         .source_path = path),
            &res);
        replay_result_free(&res);
        if (st < 0) {
            cli_err("check", "replay %u of %u (%s): %s", i + 1, n, paths[i], replay_errmsg());
            return cli_replay_exit_for(st);
        }
    }
    return CLI_OK;
}

/* ---- --perturb -------------------------------------------------------------------------- */

/* Perturbed runs one check makes at most. */
#define MAX_PERTURB 32

/* "poison,split:7,...": each KIND[:SEED] into out[*n] (out NULL: only checks). 0, or < 0
 * after a usage message (when out is given). */
static int parse_perturb(const char *list, struct replay_perturb *out, uint32_t *n)
{
    char buf[1024];
    if (strlen(list) >= sizeof buf)
        return out ? cli_usage("check", "--perturb: list longer than %zu bytes", sizeof buf - 1)
                   : -1;
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    uint32_t k = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), k++) {
        struct replay_perturb p;
        if (replay_perturb_parse(t, &p) < 0)
            return out ? cli_usage("check", "--perturb: %s", replay_errmsg()) : -1;
        if (!out)
            continue;
        if (*n >= MAX_PERTURB)
            return cli_usage("check", "--perturb: more than %d perturbed runs", MAX_PERTURB);
        out[(*n)++] = p;
    }
    return k ? 0 : out ? cli_usage("check", "--perturb: an empty list") : -1;
}

/* --perturb without a list: every kind the trace's API has, seed 1. */
static int default_perturb(sbt_reader *cap, struct replay_perturb *out, uint32_t *n)
{
    uint32_t nd = 0;
    const struct sbt_device *d = sbt_reader_devices(cap, &nd);
    static const uint32_t vk[] = {REPLAY_PERTURB_POISON, REPLAY_PERTURB_SPLIT,
                                  REPLAY_PERTURB_THREADS, REPLAY_PERTURB_ORDER,
                                  REPLAY_PERTURB_DECLARED};
    static const uint32_t cuda[] = {REPLAY_PERTURB_POISON, REPLAY_PERTURB_ORDER,
                                    REPLAY_PERTURB_DECLARED};
    int is_cuda = nd && d[0].api == SBT_API_CUDA;
    const uint32_t *k = is_cuda ? cuda : vk;
    /* declared needs the program's own order in the trace: Vulkan and CUDA captures */
    int declared = nd && (d[0].api == SBT_API_VULKAN || d[0].api == SBT_API_CUDA);
    uint32_t nk = (is_cuda ? 3 : 5) - !declared;
    for (uint32_t i = 0; i < nk; i++)
        out[(*n)++] = (struct replay_perturb){.kind = k[i], .seed = 1};
    return CLI_OK;
}

/* One perturbed replay of cap with per-op verification into DIR/perturb-KIND-SEED.sbt (path).
 * *done = 1 when it ran. A kind this device or backend cannot apply (REPLAY_EUNSUPPORTED) is
 * refused when it was named (named), else skipped with a note. */
static int run_perturbed(sbt_reader *cap, const char *trace, const struct cli_range *cr,
                         const char *dir, const struct replay_perturb *p, int named, int allow,
                         int quiet, char *path, int *done)
{
    *done = 0;
    if (cr->has_time || cr->has_ops || cr->stream) {
        cli_err("check", "--perturb replays the whole trace: drop --time-range, --ops");
        return CLI_USAGE;
    }
    snprintf(path, 4200, "%s/perturb-%s-%" PRIu64 ".sbt", dir, replay_perturb_name(p->kind),
             p->seed);
    struct replay_result res;
    int st =
        replay_run(cap,
                   &REPLAY_OPTS(.verify = REPLAY_VERIFY_OP, .runs = 1, .allow_incomplete = allow,
                                .out_path = path, .source_path = trace, .perturb = *p),
                   &res);
    replay_result_free(&res);
    if (st == REPLAY_EUNSUPPORTED && !named) {
        if (!quiet)
            fprintf(stderr, "reprise: check: perturbation %s:%" PRIu64 " skipped: %s\n",
                    replay_perturb_name(p->kind), p->seed, replay_errmsg());
        return CLI_OK;
    }
    if (st < 0) {
        cli_err("check", "perturbed replay %s:%" PRIu64 " (%s): %s", replay_perturb_name(p->kind),
                p->seed, path, replay_errmsg());
        return cli_replay_exit_for(st);
    }
    *done = 1;
    return CLI_OK;
}

/* The most replays `check` runs by itself to give a timing gate power (--runs sets more). */
#define AUTO_RUNS_MAX 32

/* --runs not given, against a baseline: the fewest runs with which its timing gate can fail
 * (chk_timing_runs_needed over the groups the first baseline result times), at least 3, and
 * no more than the baseline has results (nor AUTO_RUNS_MAX). A baseline is the weaker side of
 * the comparison: made in one sitting, it holds the machine as it was then, and more runs
 * against a few results find how the machine has drifted since (bench/RESULTS.md, "Timing
 * gate": 6 runs against 3 results failed 3 of 20 unchanged gates). When that is not enough,
 * 3, and the report says the gate is not gated and what it needs. */
static int auto_runs(sbt_reader *cap, sbt_reader *const *base, uint32_t n_base,
                     const struct cli_range *cr, double confidence, int quiet, uint64_t *runs)
{
    struct sbt_range range;
    cli_range_resolve(cr, cap, &range);
    uint32_t n_groups = 0;
    if (chk_timing_groups(cap, base[0], cr->has_time || cr->has_ops || cr->stream ? &range : NULL,
                          &n_groups) < 0) {
        cli_err("check", "--baseline: %s", chk_errmsg());
        return CLI_BADINPUT;
    }
    uint32_t need = chk_timing_runs_needed(n_base, n_groups, confidence > 0 ? confidence : 0.95);
    uint32_t most = n_base < AUTO_RUNS_MAX ? n_base : AUTO_RUNS_MAX;
    if (!n_groups || (need && need <= *runs))
        return CLI_OK;
    if (need && need <= most) {
        *runs = need;
        if (!quiet)
            fprintf(stderr,
                    "reprise: check: %u replays, the fewest with which a timing gate of %u "
                    "group%s against %u baseline result%s can fail (--runs N sets another "
                    "number)\n",
                    need, n_groups, n_groups == 1 ? "" : "s", n_base, n_base == 1 ? "" : "s");
        return CLI_OK;
    }
    if (!quiet) {
        char nb[32];
        snprintf(nb, sizeof nb, need ? "%u" : "more than %u", need ? need : CHK_RUNS_NEEDED_MAX);
        fprintf(stderr,
                "reprise: check: a timing gate of %u group%s against %u baseline result%s needs "
                "%s replays, and check runs by itself no more than the baseline has results "
                "(at most %d): running %" PRIu64 ", so timing will not be gated. Keep more "
                "baseline results (10 or more), or --runs N\n",
                n_groups, n_groups == 1 ? "" : "s", n_base, n_base == 1 ? "" : "s", nb,
                AUTO_RUNS_MAX, *runs);
    }
    return CLI_OK;
}

/* ==========================================================================================
 * A job: `reprise check TRACE` per process, as child processes of this one (the code that
 * checks a trace is the same, and a rank that crashes its replay takes only its own check).
 * ========================================================================================== */

struct job_child {
    pid_t pid;
    int code; /* exit code, -1 while running */
    char log[4400];
};

/* Starts `reprise check` on process k of the job: argv as given (getopt left the options in
 * argv[1..optind-1] and the job at argv[optind]), with the job replaced by the trace and the
 * per-rank outputs (pointers into argv: outs) renamed. */
static int job_spawn(int argc, char **argv, const char *const outs[5], const struct cli_job_proc *p,
                     struct job_child *ch)
{
    static const char *const opt_names[4] = {"--keep=", "--json=", "--junit=", "--perfetto="};
    char **cv = calloc((size_t)argc + 2, sizeof *cv);
    char **own = calloc((size_t)argc + 2, sizeof *own);
    if (!cv || !own) {
        free(cv);
        free(own);
        return -1;
    }
    int n = 0;
    cv[n++] = "reprise";
    cv[n++] = "check";
    for (int i = 1; i < optind; i++) {
        const char *par = outs[4]; /* --parallel's value: the job's, not the trace's */
        if (par && i + 1 < optind && argv[i + 1] == par) {
            i++;
            continue;
        }
        if (par && par > argv[i] && par <= argv[i] + strlen(argv[i]))
            continue;
        cv[n] = argv[i];
        for (int o = 0; o < 4; o++) {
            const char *v = outs[o];
            size_t len = strlen(argv[i]);
            if (!v || v < argv[i] || v > argv[i] + len)
                continue;
            char *rp = cli_job_out_path(v, o == 0, p);
            if (rp && v != argv[i]) { /* --opt=VALUE */
                char *t = malloc(strlen(rp) + 16);
                if (t)
                    snprintf(t, strlen(rp) + 16, "%s%s", opt_names[o], rp);
                free(rp);
                rp = t;
            }
            if (rp)
                cv[n] = own[n] = rp;
        }
        n++;
    }
    cv[n++] = p->trace;
    cv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(ch->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv("/proc/self/exe", cv);
        fprintf(stderr, "reprise: check: cannot run /proc/self/exe: %s\n", strerror(errno));
        _exit(CLI_INTERNAL);
    }
    for (int i = 0; i < n; i++)
        free(own[i]);
    free(own);
    free(cv);
    if (pid < 0)
        return -1;
    ch->pid = pid;
    ch->code = -1;
    return 0;
}

static const char *exit_word(int code)
{
    switch (code) {
    case CLI_OK:
        return "pass";
    case CLI_FAIL:
        return "FAIL";
    case CLI_USAGE:
        return "usage error";
    case CLI_BADINPUT:
        return "bad input";
    case CLI_ENV:
        return "no device";
    default:
        return "internal error";
    }
}

/* s as XML attribute text on f. */
static void put_xml(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '<' || c == '>' || c == '&' || c == '"' || c < 0x20)
            fprintf(f, "&#%u;", c);
        else
            fputc(c, f);
    }
}

/* The job's own reports at json and junit (NULL: not asked): a verdict per rank with its
 * trace, exit code, log and report files. 0, or -1 after a message when one cannot be
 * written. */
static int job_reports(const struct cli_job *j, const struct job_child *ch, int worst,
                       const char *json, const char *junit)
{
    int bad = 0;
    const char *id = *j->p[0].id ? j->p[0].id : j->index;
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            cli_err("check", "--json %s: %s", json, strerror(errno));
            return -1;
        }
        fprintf(f, "{\"job\":");
        cli_json_str(f, id);
        fprintf(f, ",\"index\":");
        cli_json_str(f, j->index);
        fprintf(f, ",\"verdict\":\"%s\",\"exit\":%d,\"processes\":[",
                worst == CLI_OK ? "pass" : "fail", worst);
        for (uint32_t k = 0; k < j->n; k++) {
            const struct cli_job_proc *p = &j->p[k];
            char *rp = cli_job_out_path(json, 0, p);
            fprintf(f, "%s{\"rank\":%" PRId64 ",\"label\":", k ? "," : "", p->rank);
            cli_json_str(f, p->label);
            fprintf(f, ",\"host\":");
            cli_json_str(f, p->host);
            fprintf(f, ",\"pid\":");
            cli_json_str(f, p->pid);
            fprintf(f, ",\"trace\":");
            cli_json_str(f, p->trace);
            fprintf(f, ",\"exit\":%d,\"verdict\":", ch[k].code);
            cli_json_str(f, exit_word(ch[k].code));
            fprintf(f, ",\"log\":");
            cli_json_str(f, ch[k].log);
            fprintf(f, ",\"report\":");
            cli_json_str(f, rp ? rp : "");
            fprintf(f, "}");
            free(rp);
        }
        fprintf(f, "]}\n");
        if (ferror(f) | (fclose(f) != 0)) {
            cli_err("check", "--json %s: write failed", json);
            bad = -1;
        }
    }
    if (junit) {
        FILE *f = fopen(junit, "w");
        if (!f) {
            cli_err("check", "--junit %s: %s", junit, strerror(errno));
            return -1;
        }
        uint32_t n_fail = 0;
        for (uint32_t k = 0; k < j->n; k++)
            n_fail += ch[k].code != CLI_OK;
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
                   "<testsuite name=\"reprise check job ");
        put_xml(f, id);
        fprintf(f, "\" tests=\"%u\" failures=\"%u\">\n", j->n, n_fail);
        for (uint32_t k = 0; k < j->n; k++) {
            const struct cli_job_proc *p = &j->p[k];
            fprintf(f, "  <testcase classname=\"job\" name=\"");
            put_xml(f, p->label);
            fprintf(f, "\"");
            if (ch[k].code == CLI_OK) {
                fprintf(f, "/>\n");
                continue;
            }
            fprintf(f, ">\n    <failure message=\"%s: ", exit_word(ch[k].code));
            put_xml(f, p->label);
            fprintf(f, " (exit %d): ", ch[k].code);
            put_xml(f, p->trace);
            fprintf(f, "; log ");
            put_xml(f, ch[k].log);
            fprintf(f, "\"/>\n  </testcase>\n");
        }
        fprintf(f, "</testsuite>\n</testsuites>\n");
        if (ferror(f) | (fclose(f) != 0)) {
            cli_err("check", "--junit %s: write failed", junit);
            bad = -1;
        }
    }
    return bad;
}

static int check_job(int argc, char **argv, const char *const outs[5], uint32_t parallel, int quiet)
{
    const char *index = argv[optind];
    struct cli_job *j;
    int ex = cli_job_open("check", index, &j);
    if (ex != CLI_OK)
        return ex;
    char logdir[4200];
    if (outs[0]) {
        if (mkdir(outs[0], 0755) != 0 && errno != EEXIST) {
            cli_err("check", "cannot create %s: %s", outs[0], strerror(errno));
            cli_job_free(j);
            return CLI_BADINPUT;
        }
        snprintf(logdir, sizeof logdir, "%s", outs[0]);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(logdir, sizeof logdir, "%s/reprise-check-job-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(logdir)) {
            cli_err("check", "cannot create a directory for the logs: %s", strerror(errno));
            cli_job_free(j);
            return CLI_INTERNAL;
        }
    }
    struct job_child *ch = calloc(j->n, sizeof *ch);
    if (!ch) {
        cli_job_free(j);
        return CLI_INTERNAL;
    }
    if (!quiet)
        fprintf(stderr, "reprise: check: job %s: %u processes, %u at a time; logs in %s\n",
                *j->p[0].id ? j->p[0].id : index, j->n, parallel, logdir);
    uint32_t next = 0, running = 0, printed = 0;
    int worst = CLI_OK;
    while (printed < j->n) {
        while (next < j->n && running < parallel) {
            struct job_child *c = &ch[next];
            char *lp = cli_job_out_path(logdir, 1, &j->p[next]);
            snprintf(c->log, sizeof c->log, "%s.log", lp ? lp : logdir);
            free(lp);
            if (job_spawn(argc, argv, outs, &j->p[next], c) < 0) {
                cli_err("check", "cannot start the check of %s: %s", j->p[next].trace,
                        strerror(errno));
                c->code = CLI_INTERNAL;
            } else {
                running++;
            }
            next++;
        }
        if (running) {
            int wst;
            pid_t pid = wait(&wst);
            for (uint32_t k = 0; pid > 0 && k < next; k++)
                if (ch[k].pid == pid && ch[k].code < 0) {
                    ch[k].code = WIFEXITED(wst) ? WEXITSTATUS(wst) : CLI_INTERNAL;
                    running--;
                }
        }
        /* print finished checks in rank order */
        while (printed < next && ch[printed].code >= 0) {
            struct job_child *c = &ch[printed];
            const struct cli_job_proc *p = &j->p[printed];
            printf("== %s (pid %s on %s): %s: %s\n", p->label, p->pid, p->host, p->trace,
                   exit_word(c->code));
            FILE *f = fopen(c->log, "r");
            char line[4096];
            while (f && fgets(line, sizeof line, f))
                fputs(line, stdout);
            if (f)
                fclose(f);
            if (c->code > worst)
                worst = c->code;
            printed++;
        }
    }
    uint32_t n_bad = 0;
    for (uint32_t k = 0; k < j->n; k++)
        n_bad += ch[k].code != CLI_OK;
    printf("job %s: %s: %u of %u processes passed\n", *j->p[0].id ? j->p[0].id : index,
           worst == CLI_OK ? "PASS" : "FAIL", j->n - n_bad, j->n);
    for (uint32_t k = 0; k < j->n; k++)
        if (ch[k].code != CLI_OK)
            printf("  %s: %s (exit %d): %s (log %s)\n", j->p[k].label, exit_word(ch[k].code),
                   ch[k].code, j->p[k].trace, ch[k].log);
    if (job_reports(j, ch, worst, outs[1], outs[2]) != 0 && worst < CLI_BADINPUT)
        worst = CLI_BADINPUT;
    free(ch);
    cli_job_free(j);
    return worst;
}

int cli_check(int argc, char **argv)
{
    static const struct option lo[] = {{"results", required_argument, 0, 'R'},
                                       {"runs", required_argument, 0, 'n'},
                                       {"tolerance", required_argument, 0, 't'},
                                       {"elem-type", required_argument, 0, 'e'},
                                       {"dump-dirs", required_argument, 0, 'D'},
                                       {"timing-threshold", required_argument, 0, 'P'},
                                       {"confidence", required_argument, 0, 'C'},
                                       {"baseline", required_argument, 0, 'B'},
                                       {"time-range", required_argument, 0, 'T'},
                                       {"ops", required_argument, 0, 'O'},
                                       {"expect", required_argument, 0, 'E'},
                                       {"update-expect", no_argument, 0, 'U'},
                                       {"json", required_argument, 0, 'j'},
                                       {"junit", required_argument, 0, 'J'},
                                       {"perfetto", required_argument, 0, 'p'},
                                       {"max-findings", required_argument, 0, 'M'},
                                       {"keep", required_argument, 0, 'K'},
                                       {"allow-incomplete", no_argument, 0, 'I'},
                                       {"timing-reference", required_argument, 0, 'r'},
                                       {"allow-regime-change", no_argument, 0, 'G'},
                                       {"timing-quantile", required_argument, 0, 'Q'},
                                       {"no-confirm", no_argument, 0, 'N'},
                                       {"require-timing", no_argument, 0, 'W'},
                                       {"perturb", optional_argument, 0, 'X'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"parallel", required_argument, 0, 'Y'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    uint64_t parallel = 0;
    const char *par_arg = NULL;
    const char *results[MAX_RESULTS], *dumps[MAX_RESULTS], *base_args[MAX_RESULTS];
    uint32_t n_results = 0, n_dumps = 0, n_base_args = 0;
    const char *expect_path = NULL, *json = NULL, *junit = NULL, *pf = NULL;
    const char *keep = NULL;
    int update = 0, quiet = 0, c, runs_given = 0, allow_incomplete = 0, tref_given = 0;
    int confirm = 1;
    uint64_t runs = 3, max_f = 0;
    struct cli_range cr = {0};
    struct chk_opts o =
        CHK_OPTS(.progress = progress, .progress_ctx = (void *)"check", .static_races = 1);
    struct replay_perturb pert[MAX_PERTURB];
    uint32_t n_pert = 0;
    int pert_asked = 0; /* --perturb given: 1 with the default kinds, 2 with named ones */
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
        switch (c) {
        case 'R':
        case 'D':
        case 'B': {
            /* every following non-option argument belongs to the list */
            const char **list = c == 'R' ? results : c == 'D' ? dumps : base_args;
            uint32_t *n = c == 'R' ? &n_results : c == 'D' ? &n_dumps : &n_base_args;
            list[(*n)++] = optarg;
            while (optind < argc && argv[optind][0] != '-' && *n < MAX_RESULTS)
                list[(*n)++] = argv[optind++];
            break;
        }
        case 'n':
            if (cli_parse_u64(optarg, &runs) || runs < 1 || runs > MAX_RESULTS)
                return cli_usage("check", "--runs '%s': expected 1..%d", optarg, MAX_RESULTS);
            runs_given = 1;
            break;
        case 't':
            if (chk_tolerance_parse(optarg, &o.tol))
                return cli_usage("check", "%s", chk_errmsg());
            break;
        case 'e':
            if (chk_elem_parse(optarg, &o.elem_type))
                return cli_usage("check", "%s", chk_errmsg());
            break;
        case 'P':
            if (cli_parse_threshold("check", optarg, &o.timing_threshold))
                return CLI_USAGE;
            break;
        case 'C':
            if (cli_parse_confidence("check", optarg, &o.confidence))
                return CLI_USAGE;
            break;
        case 'I':
            allow_incomplete = 1;
            break;
        case 'N':
            confirm = 0;
            break;
        case 'W':
            o.require_timing = 1;
            break;
        case 'G':
            o.allow_regime_change = 1;
            break;
        case 'Q': {
            char *end = NULL;
            o.timing_quantile = strtod(optarg, &end);
            if (end == optarg || *end || !(o.timing_quantile > 0 && o.timing_quantile < 1))
                return cli_usage("check", "--timing-quantile '%s': expected a number in (0, 1)",
                                 optarg);
            break;
        }
        case 'r':
            if (!strcmp(optarg, "baseline"))
                o.timing_ref = CHK_TREF_BASELINE;
            else if (!strcmp(optarg, "capture"))
                o.timing_ref = CHK_TREF_CAPTURE;
            else if (!strcmp(optarg, "none"))
                o.timing_ref = CHK_TREF_NONE;
            else
                return cli_usage("check",
                                 "--timing-reference '%s': expected baseline, capture or "
                                 "none",
                                 optarg);
            tref_given = 1;
            break;
        case 'T':
            if (cli_range_time("check", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'O':
            if (cli_range_ops("check", optarg, &cr))
                return CLI_USAGE;
            break;
        case 'E':
            expect_path = optarg;
            break;
        case 'U':
            update = 1;
            break;
        case 'j':
            json = optarg;
            break;
        case 'J':
            junit = optarg;
            break;
        case 'p':
            pf = optarg;
            break;
        case 'M':
            if (cli_parse_u64(optarg, &max_f) || max_f > 10000000)
                return cli_usage("check", "--max-findings '%s': expected 0..10M", optarg);
            break;
        case 'K':
            keep = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'Y':
            par_arg = optarg;
            if (cli_parse_u64(optarg, &parallel) || !parallel || parallel > 256)
                return cli_usage("check", "--parallel '%s': expected 1..256", optarg);
            break;
        case 'X': {
            /* --perturb=KINDS, --perturb KINDS (the next argument when it is a list of
             * kinds), or --perturb alone (the defaults for the trace's API) */
            const char *list = optarg;
            if (!list && optind < argc && argv[optind][0] != '-' &&
                parse_perturb(argv[optind], NULL, NULL) == 0)
                list = argv[optind++];
            pert_asked = 1;
            if (list) {
                if (parse_perturb(list, pert + n_pert, &n_pert) != 0)
                    return CLI_USAGE;
                pert_asked = 2;
            }
            break;
        }
        case 'h':
            fputs(check_help, stdout);
            return CLI_OK;
        default:
            return cli_usage("check", "unknown option");
        }
    }
    if (optind != argc - 1)
        return cli_usage("check", "expected one TRACE (the capture)");
    if (cli_job_is(argv[optind])) {
        if (n_results || n_base_args || n_dumps || expect_path)
            return cli_usage("check",
                             "%s is a job: --results, --baseline, --dump-dirs and "
                             "--expect name files of one trace",
                             argv[optind]);
        const char *outs[5] = {keep, json, junit, pf, par_arg};
        for (int i = 1; i < 4; i++)
            if (outs[i] && !strcmp(outs[i], "-"))
                return cli_usage("check",
                                 "%s is a job: reports go to one file per rank, not "
                                 "'-'",
                                 argv[optind]);
        return check_job(argc, argv, outs, parallel ? (uint32_t)parallel : 1, quiet);
    }
    if (parallel)
        return cli_usage("check", "--parallel is for a job (a manifest or a directory)");
    if (update && !expect_path)
        return cli_usage("check", "--update-expect needs --expect FILE");
    if (n_dumps && n_dumps != n_results)
        return cli_usage("check", "--dump-dirs: %u directories for %u results", n_dumps, n_results);
    if (n_results && (runs_given || keep))
        return cli_usage("check", "--results replaces --runs and --keep (replays run here)");
    if (n_results && pert_asked)
        return cli_usage("check", "--perturb replays here; with --results, pass the perturbed "
                                  "results (reprise replay --perturb KIND:SEED -o R.sbt) among "
                                  "them");
    if (pert_asked && o.tol.kind != CHK_TOL_BITWISE)
        return cli_usage("check", "--perturb compares perturbed runs bitwise; a --tolerance "
                                  "other than bitwise is not supported with it");
    if (keep && strlen(keep) > 4000)
        return cli_usage("check", "--keep: path longer than 4000 bytes");
    if (o.require_timing && o.timing_threshold < 0)
        return cli_usage("check", "--require-timing asks for a timing verdict, and "
                                  "--timing-threshold off turns the timing gate off");
    if (tref_given && o.timing_ref == CHK_TREF_BASELINE && !n_base_args)
        return cli_usage("check", "--timing-reference baseline needs --baseline RESULTS");
    if (tref_given && o.timing_ref != CHK_TREF_BASELINE && n_base_args)
        return cli_usage("check",
                         "--baseline is the timing reference; --timing-reference %s "
                         "contradicts it",
                         o.timing_ref == CHK_TREF_CAPTURE ? "capture" : "none");
    const char *path = argv[optind];
    sbt_reader *cap = NULL, *base[MAX_RESULTS] = {0}, *rs[MAX_RESULTS] = {0};
    chk_expect *exp = NULL, *upd = NULL;
    struct chk_report *rep = NULL;
    static char run_paths[MAX_RESULTS][4200], dump_paths[MAX_RESULTS][4200];
    static char conf_paths[MAX_RESULTS][4200], conf_dumps[MAX_RESULTS][4200];
    static char pert_paths[MAX_PERTURB][4200];
    char run_dir[4100] = "";
    sbt_reader *conf[MAX_RESULTS] = {0};
    uint32_t n_conf = 0;
    struct chk_report *rep2 = NULL;
    static char *base_paths[MAX_RESULTS];
    uint32_t n_base = 0;
    int rc = expand_results("check", "--baseline", base_args, n_base_args, base_paths, MAX_RESULTS,
                            &n_base);
    if (rc != CLI_OK) {
        for (uint32_t i = 0; i < n_base; i++)
            free(base_paths[i]);
        return rc;
    }
    rc = cli_open_trace("check", path, &cap);
    if (rc == CLI_OK && !sbt_reader_info(cap)->complete && !allow_incomplete) {
        char why[600];
        sbt_reader_incomplete_why(cap, why, sizeof why);
        cli_err("check",
                "%s: the trace is incomplete: %s. Its replays cannot be trusted to compute what "
                "the program did; --allow-incomplete checks it anyway (the reports say so)",
                path, why);
        rc = CLI_BADINPUT;
    }
    /* the baseline first: a regime the replays here cannot match is refused before them */
    for (uint32_t i = 0; rc == CLI_OK && i < n_base; i++) {
        rc = cli_open_trace("check", base_paths[i], &base[i]);
        if (rc == CLI_OK && !sbt_reader_info(base[i])->complete && !allow_incomplete) {
            char why[600];
            sbt_reader_incomplete_why(base[i], why, sizeof why);
            cli_err("check",
                    "%s: the result is incomplete: %s (--allow-incomplete checks it "
                    "anyway)",
                    base_paths[i], why);
            rc = CLI_BADINPUT;
        }
    }
    if (rc == CLI_OK && n_base && !n_results && !o.allow_regime_change && o.timing_threshold >= 0) {
        char env[256];
        const char *want[][2] = {{"replay.verify", "op"},
                                 {"replay.timing", "op"},
                                 {"replay.env", replay_env_settings(env, sizeof env)}};
        for (uint32_t i = 0; rc == CLI_OK && i < n_base; i++)
            for (uint32_t k = 0; rc == CLI_OK && k < 3; k++) {
                const char *v = sbt_reader_meta_get(base[i], want[k][0]);
                if (v && !strcmp(v, want[k][1]))
                    continue;
                cli_err("check",
                        "timing regimes differ: the replays here would run with %s '%s', the "
                        "baseline %s has '%s'. Timings compare only within one regime; make the "
                        "baseline with `reprise check TRACE --runs N --keep DIR` in the same "
                        "environment, or --allow-regime-change",
                        want[k][0] + 7, want[k][1], base_paths[i], v ? v : "?");
                rc = CLI_BADINPUT;
            }
    }
    if (rc == CLI_OK && !n_results && !runs_given && n_base && o.timing_threshold >= 0 &&
        o.timing_ref != CHK_TREF_NONE && o.timing_ref != CHK_TREF_CAPTURE)
        rc = auto_runs(cap, base, n_base, &cr, o.confidence, quiet, &runs);
    if (rc == CLI_OK && !n_results) {
        /* N replays with per-op verification, each into its own result file (kept: they are
         * what diff and export read next). A tolerance compares bytes, so then each run also
         * dumps what it wrote, under the names the checker looks for (<seq>.bin). */
        char dir[4100];
        const char *tmp = getenv("TMPDIR");
        if (keep) {
            snprintf(dir, sizeof dir, "%s", keep);
            if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
                cli_err("check", "--keep %s: cannot create it: %s", dir, strerror(errno));
                rc = CLI_ENV;
                goto done;
            }
        } else {
            snprintf(dir, sizeof dir, "%s/reprise-check-XXXXXX", tmp && *tmp ? tmp : "/tmp");
            if (!mkdtemp(dir)) {
                cli_err("check", "cannot create a directory for the results: %s: %s", dir,
                        strerror(errno));
                rc = CLI_ENV;
                goto done;
            }
        }
        int dumps_wanted = o.tol.kind != CHK_TOL_BITWISE;
        snprintf(run_dir, sizeof run_dir, "%s", dir);
        if ((rc = run_batch(cap, path, &cr, run_dir, "run", (uint32_t)runs, dumps_wanted,
                            allow_incomplete, run_paths, dump_paths)) != CLI_OK)
            goto done;
        for (uint64_t i = 0; i < runs; i++) {
            results[n_results] = run_paths[i];
            dumps[n_results++] = dump_paths[i];
        }
        n_dumps = dumps_wanted ? n_results : 0;
        if (!quiet)
            fprintf(stderr, "reprise: check: %" PRIu64 " replay results kept in %s (run*.sbt%s)\n",
                    runs, dir, dumps_wanted ? ", their outputs in run*.dump" : "");
        if (pert_asked == 1 && (rc = default_perturb(cap, pert, &n_pert)) != CLI_OK)
            goto done;
        for (uint32_t k = 0; k < n_pert && n_results < MAX_RESULTS; k++) {
            int done_k = 0;
            if ((rc = run_perturbed(cap, path, &cr, run_dir, &pert[k], pert_asked == 2,
                                    allow_incomplete, quiet, pert_paths[k], &done_k)) != CLI_OK)
                goto done;
            if (done_k)
                results[n_results++] = pert_paths[k];
        }
    }
    for (uint32_t i = 0; rc == CLI_OK && i < n_results; i++) {
        rc = cli_open_trace("check", results[i], &rs[i]);
        if (rc == CLI_OK && !sbt_reader_info(rs[i])->complete && !allow_incomplete) {
            char why[600];
            sbt_reader_incomplete_why(rs[i], why, sizeof why);
            cli_err("check",
                    "%s: the result is incomplete: %s (--allow-incomplete checks it "
                    "anyway)",
                    results[i], why);
            rc = CLI_BADINPUT;
        }
    }
    if (rc != CLI_OK)
        goto done;
    if (expect_path) {
        FILE *probe = fopen(expect_path, "r");
        int st = probe || !update ? chk_expect_load(expect_path, &exp) : chk_expect_create(&exp);
        if (probe)
            fclose(probe);
        if (st < 0) {
            cli_err("check", "%s", chk_errmsg());
            rc = CLI_BADINPUT;
            goto done;
        }
        if (update && chk_expect_create(&upd) < 0) {
            rc = CLI_INTERNAL;
            goto done;
        }
    }
    struct sbt_range range;
    cli_range_resolve(&cr, cap, &range);
    o.range = cr.has_time || cr.has_ops || cr.stream ? &range : NULL;
    o.ref_name = path;
    o.run_names = results;
    o.base_names = (const char *const *)base_paths;
    o.run_dumps = n_dumps ? dumps : NULL;
    o.expect = exp;
    o.expect_update = upd;
    o.max_findings = (uint32_t)max_f;
    o.collect_events = pf != NULL;
    int st = chk_check(cap, rs, n_results, base, n_base, &o, &rep);
    cli_progress_end();
    if (st < 0) {
        cli_err("check", "%s", chk_errmsg());
        rc = st == SBT_ENOMEM ? CLI_INTERNAL : CLI_BADINPUT;
        goto done;
    }
    /* timing regressions from replays made here are confirmed on a fresh batch before they
     * fail the gate (chk_confirm_timing says why) */
    if (rep->count[CHK_TIMING] && run_dir[0] && confirm) {
        if (!quiet)
            fprintf(stderr,
                    "reprise: check: %" PRIu64 " timing regression%s: confirming on %" PRIu64
                    " more replays (%s/confirm*.sbt)\n",
                    rep->count[CHK_TIMING], rep->count[CHK_TIMING] == 1 ? "" : "s", runs, run_dir);
        if ((rc = run_batch(cap, path, &cr, run_dir, "confirm", (uint32_t)runs, 0, allow_incomplete,
                            conf_paths, conf_dumps)) != CLI_OK)
            goto done;
        /* the first batch and the fresh one, tested together: a slowdown that persists is
         * found with more power, one that hit only the first batch is diluted by the second */
        const char *conf_names[2 * MAX_RESULTS];
        sbt_reader *both[2 * MAX_RESULTS];
        for (uint32_t i = 0; i < n_results; i++)
            both[i] = rs[i], conf_names[i] = results[i];
        for (; rc == CLI_OK && n_conf < runs; n_conf++) {
            conf_names[n_results + n_conf] = conf_paths[n_conf];
            rc = cli_open_trace("check", conf_paths[n_conf], &conf[n_conf]);
            both[n_results + n_conf] = conf[n_conf];
        }
        if (rc != CLI_OK)
            goto done;
        struct chk_opts o2 = o;
        o2.run_names = conf_names;
        o2.run_dumps = NULL;
        o2.tol = (struct chk_tolerance){0};
        o2.expect = NULL;
        o2.expect_update = NULL;
        o2.collect_events = 0;
        o2.progress = NULL;
        if ((st = chk_check(cap, both, n_results + n_conf, base, n_base, &o2, &rep2)) < 0 ||
            (st = chk_confirm_timing(rep, rep2)) < 0) {
            cli_err("check", "confirmation: %s", chk_errmsg());
            rc = st == SBT_ENOMEM ? CLI_INTERNAL : CLI_BADINPUT;
            goto done;
        }
    }
    if (!quiet) /* with --json - (or --junit -) the report owns stdout: the text goes to stderr */
        chk_report_text(rep, cli_report_stdout(json, junit) ? stderr : stdout, 10);
    if ((rc = cli_check_outputs("check", rep, json, junit, pf, cap, rs[0])) != CLI_OK)
        goto done;
    if (upd && rep->count[CHK_REPLAY_ERROR]) {
        /* expectations from runs that did not run every op would be a reference of unknown
         * worth: not written */
        cli_err("check",
                "%s not updated: %" PRIu64 " replay error(s) in these runs (%s); expectations are "
                "written only from runs that replayed every op",
                expect_path, rep->count[CHK_REPLAY_ERROR],
                rep->fail_reason[0] ? rep->fail_reason : "see the findings");
        rc = CLI_FAIL;
        goto done;
    }
    if (upd) {
        /* this device's section is replaced (on a range: its entries of the range only, the
         * others kept); other devices' sections are kept */
        int ranged = cr.has_time || cr.has_ops || cr.stream;
        if (!exp)
            st = 0;
        else if (ranged)
            st = chk_expect_merge(exp, upd, rep->device);
        else
            st = chk_expect_replace(exp, upd, rep->device);
        if (st == 0)
            st = chk_expect_save(exp ? exp : upd, expect_path);
        if (st < 0) {
            cli_err("check", "%s", chk_errmsg());
            rc = CLI_BADINPUT;
            goto done;
        }
        if (!quiet)
            printf("  expectations: %" PRIu64 " ops of device '%s' written to %s%s\n",
                   chk_expect_count(exp ? exp : upd, rep->device), rep->device, expect_path,
                   ranged ? " (the range's entries updated, the others kept)" : "");
    }
    rc = rep->failed && !update ? CLI_FAIL : CLI_OK;
done:
    chk_report_free(rep);
    chk_report_free(rep2);
    for (uint32_t i = 0; i < n_conf; i++)
        sbt_reader_close(conf[i]);
    chk_expect_free(exp);
    chk_expect_free(upd);
    sbt_reader_close(cap);
    for (uint32_t i = 0; i < n_base; i++) {
        sbt_reader_close(base[i]);
        free(base_paths[i]);
        base_paths[i] = NULL;
    }
    for (uint32_t i = 0; i < n_results; i++)
        sbt_reader_close(rs[i]);
    return rc;
}
