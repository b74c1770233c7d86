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
 * Exit status: the child's own (so `reprise capture -- prog` can stand in for `prog` in a
 * script); 128 + signal number if it was killed; 4 if the layer is not found, the program
 * cannot be started, or the CUDA shim or driver is missing (--api cuda); 2 on usage errors. The
 * capture summary goes to stderr, so the program's stdout is unchanged.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/cap.h"
#include "cli/cli_int.h"
#include "format/sbt.h"

static const char capture_help[] =
    "usage: reprise capture [--api vulkan|cuda|auto] [-o TRACE] [--timing] [--digests]\n"
    "                       -- PROGRAM [ARGS...]\n\n"
    "Runs PROGRAM with the capture layer and writes its GPU command stream to TRACE.\n"
    "The program's output and exit status are its own; a summary goes to stderr.\n\n"
    "  -o, --output TRACE  trace to write (default: PROGRAM's name + .sbt)\n"
    "  --api API           vulkan (default), cuda (shim in front of libcuda.so.1), auto (= vulkan)\n"
    "  --timing            timestamp queries around dispatches (device durations)\n"
    "  --digests           digest each dispatch's outputs (waits after every submission:\n"
    "                      perturbs timing)\n\n"
    "Exit status: the program's; 128+N if killed by signal N; 4 when the layer or the\n"
    "program cannot be found; 2 on usage errors.\n";

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
 * itself (the layer's own summary does not know the op positions). 0 when it cannot be read. */
static int report_trace(const char *trace, char *ops, size_t ops_cap, char *out, size_t cap)
{
    sbt_reader *r = NULL;
    if (sbt_reader_open(trace, NULL, &r) < 0)
        return 0;
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

static void report(const char *stats, const char *trace)
{
    FILE *f = fopen(stats, "r");
    if (!f) {
        fprintf(stderr,
                "reprise capture: the layer wrote no summary (did the program use Vulkan?); "
                "%s may be missing\n",
                trace);
        return;
    }
    char line[512], ops[64] = "?", calls[64] = "?", unsup[64] = "0", incomplete[400] = "";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "ops=", 4))
            snprintf(ops, sizeof ops, "%.60s", line + 4);
        else if (!strncmp(line, "calls=", 6))
            snprintf(calls, sizeof calls, "%.60s", line + 6);
        else if (!strncmp(line, "unsupported=", 12))
            snprintf(unsup, sizeof unsup, "%.60s", line + 12);
        else if (!strncmp(line, "incomplete=", 11))
            snprintf(incomplete, sizeof incomplete, "%.390s", line + 11);
    }
    fclose(f);
    char from_trace[4096];
    if (report_trace(trace, ops, sizeof ops, from_trace, sizeof from_trace)) {
        fprintf(stderr, "reprise capture: %s: %s ops captured from %s API calls%s\n", trace, ops,
                calls, from_trace);
        return;
    }
    fprintf(stderr, "reprise capture: %s: %s ops captured from %s API calls, %s unsupported%s%s\n",
            trace, ops, calls, unsup, incomplete[0] ? "; INCOMPLETE: " : "", incomplete);
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
    char def_out[PATH_MAX];
    if (!out) {
        const char *base = strrchr(prog[0], '/');
        snprintf(def_out, sizeof def_out, "%s.sbt", base ? base + 1 : prog[0]);
        out = def_out;
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
    pid_t pid = fork();
    if (pid < 0) {
        cli_err("capture", "fork: %s", strerror(errno));
        unlink(stats);
        return CLI_ENV;
    }
    if (pid == 0) {
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
    report(stats, out);
    unlink(stats);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
