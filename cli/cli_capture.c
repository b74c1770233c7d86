/*
 * cli/cli_capture.c — `reprise capture`: runs a program with the Vulkan capture layer enabled
 * through the loader's environment, waits for it, and reports what was captured.
 *
 * The layer manifest is looked for beside the reprise binary (the build tree: $(BUILD) holds
 * both) and then in <prefix>/share/vulkan/explicit_layer.d (an installed bin/reprise), found
 * from /proc/self/exe. The child gets VK_ADD_LAYER_PATH (the manifest directory, in front of
 * what was there), VK_INSTANCE_LAYERS and VK_LOADER_LAYERS_ENABLE (older and newer loaders),
 * REPRISE_TRACE, REPRISE_TIMING / REPRISE_DIGESTS for the options, and REPRISE_STATS_FILE, a
 * temporary file where the layer writes its counts when it closes the trace.
 *
 * One trace per process: the child is the capture's root (REPRISE_ROOT_PID) and writes TRACE;
 * every process it starts that uses the GPU writes TRACE-stem.PID.sbt, and each appends a line
 * to the manifest TRACE-stem.procs (capture/cap.h), which this command starts empty and reads
 * at the end to report every trace.
 *
 * Exit status: the child's own (so `reprise capture -- prog` can stand in for `prog` in a
 * script); 128 + signal number if it was killed; 3 if it succeeded but a trace it left is
 * incomplete or unreadable; 4 if the layer is not found, the program cannot be started, or the
 * CUDA shim or driver is missing (--api cuda); 2 on usage errors. The capture summary goes to
 * stderr, so the program's stdout is unchanged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/cap.h"
#include "cli/cli_int.h"
#include "format/sbt.h"

static const char capture_help[] =
    "usage: reprise capture [--api vulkan|cuda|auto] [-o TRACE] [--timing] [--digests]\n"
    "                       -- PROGRAM [ARGS...]\n\n"
    "Runs PROGRAM with the capture layer and writes its GPU command stream to TRACE.\n"
    "The program's output and exit status are its own; a summary goes to stderr.\n\n"
    "One trace per process: PROGRAM's is TRACE; every process it starts (a wrapper's child, a\n"
    "fork, a worker) that uses the GPU writes TRACE-stem.PID.sbt beside it, never TRACE, and\n"
    "TRACE-stem.procs lists them all (pid, parent, start time, trace, command line); `reprise\n"
    "info TRACE` shows it. Processes PROGRAM leaves running are waited for (at most\n"
    "REPRISE_CAPTURE_WAIT seconds, default 30) so that their traces are finished. The summary\n"
    "reports every trace.\n\n"
    "Jobs: every trace records its rank, world size, host and job (REPRISE_JOB, else the\n"
    "launcher's job id, else one this command makes); `reprise info|export|check TRACE.procs`\n"
    "take the whole capture. Capture a launcher from outside (reprise capture -o job.sbt --\n"
    "mpirun -np 4 PROGRAM), or let each rank capture itself with %r in TRACE, replaced by its\n"
    "rank (mpirun -np 4 reprise capture -o job.%r.sbt -- PROGRAM: job.0.sbt, ...; the job is\n"
    "then the directory of those traces).\n\n"
    "  -o, --output TRACE  trace to write (default: PROGRAM's name + .sbt)\n"
    "  --api API           vulkan (default), cuda (shim in front of libcuda.so.1), auto (= vulkan)\n"
    "  --timing            timestamp queries around dispatches (device durations)\n"
    "  --digests           digest each dispatch's outputs (waits after every submission:\n"
    "                      perturbs timing)\n\n"
    "Exit status: the program's; 128+N if killed by signal N; 3 when the program succeeded\n"
    "but a trace it left is incomplete or cannot be read; 4 when the layer or the program\n"
    "cannot be found; 2 on usage errors.\n";

/* The launchers (capture/cap.h, CAP_LAUNCHERS): the rank the first of them gives (a decimal
 * number below 2^31), NULL when none does; whether one gives a job id (the capture libraries
 * then make REPRISE_JOB of it). */
struct launcher_vars {
    const char *rank, *job;
};
#define LAUNCHER_VARS(from, rank, size, local, job) {rank, job},
static const struct launcher_vars launcher_vars[] = {CAP_LAUNCHERS(LAUNCHER_VARS)};

static const char *launcher_rank(void)
{
    for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++) {
        const char *v = getenv(launcher_vars[i].rank);
        size_t n = v ? strspn(v, "0123456789") : 0;
        if (v && n && !v[n] && n <= 10 && strtoull(v, NULL, 10) < (1ull << 31))
            return v;
    }
    return NULL;
}

static int launcher_has_job(void)
{
    for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++)
        if (launcher_vars[i].job && getenv(launcher_vars[i].job) && *getenv(launcher_vars[i].job))
            return 1;
    return 0;
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Directory holding the layer manifest, into dir[len]. 0 found, -1 not. */
static int find_layer_dir(char *dir, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", exe, CAP_VK_LAYER_MANIFEST);
    if (is_file(path)) {
        snprintf(dir, len, "%s", exe);
        return 0;
    }
    snprintf(path, sizeof path, "%s/../share/vulkan/explicit_layer.d/%s", exe,
             CAP_VK_LAYER_MANIFEST);
    if (is_file(path)) {
        snprintf(dir, len, "%.3900s/../share/vulkan/explicit_layer.d", exe);
        return 0;
    }
    return -1;
}

static void prepend_env(const char *name, const char *val, char sep)
{
    const char *old = getenv(name);
    if (!old || !*old) {
        setenv(name, val, 1);
        return;
    }
    size_t n = strlen(val) + strlen(old) + 2;
    char *s = malloc(n);
    if (!s)
        return;
    snprintf(s, n, "%s%c%s", val, sep, old);
    setenv(name, s, 1);
    free(s);
}

/* The unmodelled calls of the trace just written, and whether it is complete, from the trace
 * itself (the layer's own summary does not know the op positions). 0 when it cannot be read;
 * *complete says whether it is. */
static int report_trace(const char *trace, char *ops, size_t ops_cap, char *out, size_t cap,
                        int *complete)
{
    sbt_reader *r = NULL;
    *complete = 0;
    if (sbt_reader_open(trace, NULL, &r) < 0)
        return 0;
    *complete = sbt_reader_info(r)->complete;
    if (!strcmp(ops, "?")) /* the layer did not finish: what the trace holds */
        snprintf(ops, ops_cap, "%" PRIu64, sbt_reader_info(r)->n_ops);
    size_t n = 0;
#define PUT(...)                                                                          \
    do {                                                                                  \
        int k_ = snprintf(out + (n < cap ? n : cap), n < cap ? cap - n : 0, __VA_ARGS__); \
        n += k_ > 0 ? (size_t)k_ : 0;                                                     \
    } while (0)
    uint32_t nu = 0;
    const struct sbt_unsupported *u = sbt_reader_unsupported(r, &nu);
    PUT("; unmodelled: %s", nu ? "" : "none");
    for (uint32_t i = 0; i < nu; i++) {
        PUT("%s%s x%" PRIu64, i ? ", " : "", sbt_reader_string(r, u[i].what), u[i].count);
        if (u[i].flags & SBT_UNMODELLED_AFFECTS) {
            PUT(" (affects replay");
            if (u[i].first_seq != SBT_SEQ_NONE)
                PUT(", first at op %" PRIu64, u[i].first_seq);
            PUT(")");
        }
    }
    if (sbt_reader_info(r)->complete) {
        PUT("; complete");
    } else {
        char why[1024];
        sbt_reader_incomplete_why(r, why, sizeof why);
        PUT("; INCOMPLETE%s%s", *why ? ": " : "", why);
    }
#undef PUT
    sbt_reader_close(r);
    return 1;
}

/* The root's trace, from the layer's summary and the trace. 1 when it is complete. */
static int report(const char *stats, const char *trace)
{
    FILE *f = fopen(stats, "r");
    char line[512], ops[64] = "?", calls[64] = "?", unsup[64] = "0", incomplete[400] = "";
    int summary = 0; /* the root closed its trace and said so */
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "trace=", 6))
            summary = 1;
        else if (!strncmp(line, "ops=", 4))
            snprintf(ops, sizeof ops, "%.60s", line + 4);
        else if (!strncmp(line, "calls=", 6))
            snprintf(calls, sizeof calls, "%.60s", line + 6);
        else if (!strncmp(line, "unsupported=", 12))
            snprintf(unsup, sizeof unsup, "%.60s", line + 12);
        else if (!strncmp(line, "incomplete=", 11))
            snprintf(incomplete, sizeof incomplete, "%.390s", line + 11);
    }
    if (f)
        fclose(f);
    char from_trace[4096];
    int complete;
    if (!summary && access(trace, F_OK) != 0)
        return -1; /* no trace of the root: it did not use the GPU */
    if (report_trace(trace, ops, sizeof ops, from_trace, sizeof from_trace, &complete)) {
        fprintf(stderr, "reprise capture: %s: %s ops captured from %s API calls%s\n", trace, ops,
                calls, from_trace);
        return complete;
    }
    fprintf(stderr,
            "reprise capture: %s: %s ops captured from %s API calls, %s unsupported%s%s; "
            "UNREADABLE\n",
            trace, ops, calls, unsup, incomplete[0] ? "; INCOMPLETE: " : "", incomplete);
    return 0;
}

/* Waits for the processes the program started that outlived it (reparented to us, the
 * subreaper), at most REPRISE_CAPTURE_WAIT seconds (default 30): their traces are written
 * when they exit. Those still running after that are reported as such. */
static void wait_descendants(void)
{
    const char *e = getenv("REPRISE_CAPTURE_WAIT");
    uint64_t limit_ms = (uint64_t)(e && *e ? atof(e) * 1000 : 30000), waited = 0;
    int said = 0;
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0)
            continue;
        if (p < 0 && errno == EINTR)
            continue;
        if (p < 0 || waited >= limit_ms)
            break; /* none left (ECHILD), or we waited long enough */
        if (!said++)
            fprintf(stderr,
                    "reprise capture: waiting for processes the program started, which "
                    "still run (at most %gs; REPRISE_CAPTURE_WAIT)\n",
                    (double)limit_ms / 1000);
        nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
        waited += 20;
    }
}

/* Every trace of the capture: the root's (trace, as given; abs_trace as the processes got it),
 * from the layer's summary, then each other process's the manifest lists. Returns how many are
 * incomplete or unreadable. */
struct report_ctx {
    const char *abs_trace;
    int bad, n;
};

/* A process of the manifest other than the root: its trace. */
static void report_proc(void *ctx, const struct cli_proc *p)
{
    struct report_ctx *c = ctx;
    c->n++;
    if (!strcmp(p->trace, c->abs_trace))
        return; /* the root's, reported from the layer's summary */
    char ops[64] = "?", from_trace[4096];
    int complete;
    if (report_trace(p->trace, ops, sizeof ops, from_trace, sizeof from_trace, &complete)) {
        fprintf(stderr, "reprise capture: %s (pid %s, parent %s: %.200s): %s ops%s\n", p->trace,
                p->pid, p->ppid, p->cmd, ops, from_trace);
        c->bad += !complete;
    } else {
        fprintf(stderr,
                "reprise capture: %s (pid %s, parent %s: %.200s): UNREADABLE (the process died "
                "before writing any of it?)\n",
                p->trace, p->pid, p->ppid, p->cmd);
        c->bad++;
    }
    if (kill((pid_t)atol(p->pid), 0) == 0)
        fprintf(stderr,
                "reprise capture: pid %s still runs after the program ended: its trace is not "
                "finished\n",
                p->pid);
}

static int report_all(const char *stats, const char *trace, const char *abs_trace,
                      const char *manifest)
{
    struct report_ctx c = {abs_trace, 0, 0};
    int root = report(stats, trace);
    if (root == 0)
        c.bad++;
    cli_manifest_read(manifest, report_proc, &c);
    int n = c.n;
    if (root < 0 && !n)
        fprintf(stderr, "reprise capture: no process used the GPU: no trace written (%s)\n", trace);
    else if (root < 0)
        fprintf(stderr,
                "reprise capture: %s: not written: the program itself did not use the GPU; %d "
                "process%s it started did, one trace each (%s)\n",
                trace, n, n == 1 ? "" : "es", manifest);
    else if (n > 1)
        fprintf(stderr, "reprise capture: %d processes used the GPU, one trace each (%s)\n", n,
                manifest);
    return c.bad;
}

int cli_capture(int argc, char **argv)
{
    static const struct option lo[] = {
        {"output", required_argument, 0, 'o'}, {"api", required_argument, 0, 'a'},
        {"timing", no_argument, 0, 't'},       {"digests", no_argument, 0, 'd'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *out = NULL, *api = "vulkan";
    int timing = 0, digests = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'a':
            api = optarg;
            break;
        case 't':
            timing = 1;
            break;
        case 'd':
            digests = 1;
            break;
        case 'h':
            fputs(capture_help, stdout);
            return CLI_OK;
        default:
            return cli_usage("capture", "unknown option");
        }
    }
    if (strcmp(api, "vulkan") && strcmp(api, "cuda") && strcmp(api, "auto"))
        return cli_usage("capture", "--api '%s': expected vulkan, cuda or auto", api);
    int cuda = !strcmp(api, "cuda"); /* the CUDA shim: cli_capture_cuda.c */
    if (optind >= argc)
        return cli_usage("capture", "no program given (reprise capture [OPTIONS] -- PROGRAM)");
    char **prog = argv + optind;
    char def_out[PATH_MAX], ranked[PATH_MAX];
    if (!out) {
        const char *base = strrchr(prog[0], '/');
        snprintf(def_out, sizeof def_out, "%s.sbt", base ? base + 1 : prog[0]);
        out = def_out;
    }
    const char *pr = strstr(out, "%r");
    if (pr) { /* each rank of a launcher capturing itself: TRACE.%r.sbt */
        const char *rank = launcher_rank();
        if (!rank)
            return cli_usage("capture",
                             "-o %s: %%r is the rank, and no launcher variable gives one here "
                             "(REPRISE_RANK, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, "
                             "SLURM_PROCID)",
                             out);
        snprintf(ranked, sizeof ranked, "%.*s%s%s", (int)(pr - out), out, rank, pr + 2);
        out = ranked;
    }
    char dir[PATH_MAX];
    if (cuda) {
        int rc = cli_capture_cuda_env("capture", NULL, 0);
        if (rc != CLI_OK)
            return rc;
    } else if (find_layer_dir(dir, sizeof dir)) {
        cli_err("capture",
                "layer manifest %s not found beside the reprise binary nor in "
                "../share/vulkan/explicit_layer.d (run 'make' or 'make install')",
                CAP_VK_LAYER_MANIFEST);
        return CLI_ENV;
    }
    char stats[] = "/tmp/reprise-capture-XXXXXX";
    int fd = mkstemp(stats);
    if (fd < 0) {
        cli_err("capture", "cannot create a temporary file: %s", strerror(errno));
        return CLI_ENV;
    }
    close(fd);
    char abs_out[PATH_MAX];
    if (out[0] != '/' && getcwd(abs_out, sizeof abs_out) &&
        strlen(abs_out) + strlen(out) + 2 < sizeof abs_out) {
        strcat(abs_out, "/");
        strcat(abs_out, out);
    } else {
        snprintf(abs_out, sizeof abs_out, "%s", out);
    }
    char manifest[PATH_MAX + 16];
    cli_manifest_path(abs_out, manifest, sizeof manifest);
    unlink(manifest); /* this capture's processes start it */
    unlink(abs_out);  /* no earlier capture's trace reported as this one's */
    /* processes the program starts and leaves running become ours when it exits: they are
     * waited for (their traces close when they exit) */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t pid = fork();
    if (pid < 0) {
        cli_err("capture", "fork: %s", strerror(errno));
        unlink(stats);
        return CLI_ENV;
    }
    if (pid == 0) {
        char me[24];
        snprintf(me, sizeof me, "%d", (int)getpid());
        setenv(CAP_ENV_ROOT_PID, me, 1); /* exec keeps the pid: the program is the root */
        if ((!getenv(CAP_ENV_JOB) || !*getenv(CAP_ENV_JOB)) && !launcher_has_job()) {
            /* one id for every process of this capture, even those started after the root
             * exited (capture/cap.h): host, the root's pid, and the realtime of now */
            char host[256] = "host", job[400];
            struct timespec rt;
            gethostname(host, sizeof host);
            host[sizeof host - 1] = 0;
            clock_gettime(CLOCK_REALTIME, &rt);
            snprintf(job, sizeof job, "%s-%s-%llx", host, me,
                     (unsigned long long)rt.tv_sec * 1000000000ull +
                         (unsigned long long)rt.tv_nsec);
            setenv(CAP_ENV_JOB, job, 1);
        }
        if (!cuda) {
            prepend_env("VK_ADD_LAYER_PATH", dir, ':');
            prepend_env("VK_INSTANCE_LAYERS", CAP_VK_LAYER_NAME, ':');
            prepend_env("VK_LOADER_LAYERS_ENABLE", CAP_VK_LAYER_NAME, ',');
        }
        setenv(CAP_ENV_TRACE, abs_out, 1);
        setenv(CAP_ENV_STATS, stats, 1);
        setenv(CAP_ENV_TIMING, timing ? "1" : "0", 1);
        setenv(CAP_ENV_DIGESTS, digests ? "1" : "0", 1);
        execvp(prog[0], prog);
        fprintf(stderr, "reprise: capture: cannot run %s: %s\n", prog[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        unlink(stats);
        return CLI_ENV;
    }
    wait_descendants();
    int bad = report_all(stats, out, abs_out, manifest);
    unlink(stats);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    if (WEXITSTATUS(status) == 0 && bad) {
        cli_err("capture", "%d trace%s incomplete or unreadable (above)", bad,
                bad == 1 ? " is" : "s are");
        return CLI_BADINPUT;
    }
    return WEXITSTATUS(status);
}
