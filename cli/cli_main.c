/*
 * cli/cli_main.c — the `reprise` binary: the command table, global --help/--version, and the
 * helpers every command shares (exit codes, time and range parsing, opening traces).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/cap.h"
#include "cli/cli_int.h"
#include "replay/replay.h"

#define REPRISE_VERSION "0.1.0"

/* One line per command; keep in the order `reprise --help` shows them. */
static const struct cli_cmd cmds[] = {
    {"capture", cli_capture, "run a program and capture its GPU command stream (Vulkan layer)"},
    {"info", cli_info, "summary: devices, streams, counts, size, completeness"},
    {"view", cli_view, "list ops, or a kernel table with --stats"},
    {"analyze", cli_analyze, "kernel table, critical path, utilisation, concurrency"},
    {"replay", cli_replay, "replay a trace or a range: dry-run (validate, slice, predict) or full"},
    {"check", cli_check, "gate: replays agree with each other and the capture (outputs, timing)"},
    {"diff", cli_diff, "align two runs op by op: output, timing, missing/extra ops; Perfetto diff"},
    {"validate", cli_validate, "integrity check and recovery report"},
    {"gen", cli_gen, "write a synthetic trace (tests, benchmarks)"},
    {"import", cli_import, "convert a TraceSmith .sbt file into a reprise trace"},
    {"export", cli_export, "write a trace as Perfetto protobuf, Chrome JSON or DOT"},
    {"trim", cli_trim, "cut a self-contained trace of a range (initial contents + its ops)"},
    {"devices", cli_devices, "Vulkan and CUDA devices visible here (for replay --device N)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: reprise COMMAND [ARGS...]\n\n"
               "reprise captures GPU command streams, replays them and checks that the\n"
               "replays agree. Commands:\n\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(f, "\n'reprise COMMAND --help' describes one command.\n"
               "Exit codes: 0 ok, 1 check failed, 2 usage error, 3 bad input (corrupt or\n"
               "unsupported trace), 4 environment (no device or driver), 5 internal error.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("reprise %s (SBT format version 2)\n", REPRISE_VERSION);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "reprise: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_USAGE;
}

/* ========================================================================================== */
/* Messages and exit codes                                                                    */
/* ========================================================================================== */

void cli_err(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "reprise: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "reprise: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\ntry 'reprise %s --help'\n", cmd);
    va_end(ap);
    return CLI_USAGE;
}

int cli_exit_for(int st)
{
    switch (st) {
    case SBT_OK:
        return CLI_OK;
    case SBT_EINVAL:
        return CLI_USAGE;
    case SBT_ENOMEM:
        return CLI_INTERNAL;
    default: /* corrupt, I/O, version, foreign, not found, limit: the input is the problem */
        return CLI_BADINPUT;
    }
}

int cli_replay_exit_for(int st)
{
    switch (st) {
    case REPLAY_ENODEV:
    case REPLAY_EDEVICE:
        return CLI_ENV;
    case REPLAY_EDIFFERS: /* what would be stored comes from a replay that went wrong */
        return CLI_FAIL;
    case REPLAY_EUNSUPPORTED:
    case REPLAY_EINCOMPLETE:
    case REPLAY_EGRAPH:
    case SBT_EINVAL: /* the options were checked: what is left is the trace's (a range past it) */
        return CLI_BADINPUT;
    default:
        return cli_exit_for(st);
    }
}

int cli_verdict_exit(int verdict, int verify_none)
{
    switch ((enum replay_verdict)verdict) {
    case REPLAY_VERDICT_VERIFIED:
        return CLI_OK;
    case REPLAY_VERDICT_NOT_VERIFIED: /* no evidence: a failure, unless none was asked for */
        return verify_none ? CLI_OK : CLI_FAIL;
    case REPLAY_VERDICT_DIFFERS:
    case REPLAY_VERDICT_DEVICE_FAILED: /* the driver under test failing fails the gate */
        return CLI_FAIL;
    case REPLAY_VERDICT_ENVIRONMENT:
        return CLI_ENV;
    case REPLAY_VERDICT_BAD_TRACE:
        return CLI_BADINPUT;
    }
    return CLI_INTERNAL;
}

void cli_manifest_path(const char *trace, char *out, size_t cap)
{
    size_t n = strlen(trace);
    if (n > 4 && !strcmp(trace + n - 4, ".sbt"))
        n -= 4;
    snprintf(out, cap, "%.*s%s", (int)n, trace, CAP_MANIFEST_SUFFIX);
}

int cli_manifest_read(const char *path, void (*fn)(void *ctx, const struct cli_proc *p), void *ctx)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char *save = NULL;
        struct cli_proc p;
        p.pid = strtok_r(line, "\t", &save);
        p.ppid = strtok_r(NULL, "\t", &save);
        p.start = strtok_r(NULL, "\t", &save);
        p.trace = strtok_r(NULL, "\t\n", &save);
        p.cmd = strtok_r(NULL, "\n", &save);
        if (!p.pid || !p.ppid || !p.start || !p.trace)
            continue;
        if (!p.cmd)
            p.cmd = "";
        n++;
        fn(ctx, &p);
    }
    fclose(f);
    return n;
}

int cli_open_trace(const char *cmd, const char *path, sbt_reader **out)
{
    int st = sbt_reader_open(path, NULL, out);
    if (st < 0) {
        cli_err(cmd, "%s", sbt_errmsg());
        if (st == SBT_EFOREIGN && sbt_is_tracesmith(path) == 1)
            fprintf(stderr, "reprise: %s: convert it first: reprise import %s -o converted.sbt\n",
                    cmd, path);
        return cli_exit_for(st);
    }
    const struct sbt_info *in = sbt_reader_info(*out);
    if (!in->has_footer)
        fprintf(stderr,
                "reprise: %s: note: %s has no footer index (the writer did not finish); "
                "recovered %" PRIu64 " ops in %" PRIu64 " chunks by scanning%s\n",
                cmd, path, in->n_ops, in->n_chunks,
                in->lost_bytes ? "; a torn or corrupt tail was dropped (see reprise validate)"
                               : "");
    return CLI_OK;
}

int cli_open_snapshots(const char *cmd, const char *trace_path, sbt_reader *r, const char *file,
                       int none, sbt_reader **out, char **used)
{
    *out = NULL;
    *used = NULL;
    if (none)
        return CLI_OK;
    char *path = file ? strdup(file) : replay_snapshots_path(trace_path);
    if (!path) {
        cli_err(cmd, "out of memory");
        return CLI_INTERNAL;
    }
    if (!file && access(path, F_OK) != 0) { /* no default sidecar: the slice as before */
        free(path);
        return CLI_OK;
    }
    int st = replay_snapshots_open(r, path, out);
    if (st < 0) {
        cli_err(cmd, "%s", replay_errmsg());
        free(path);
        return cli_exit_for(st == SBT_EINVAL ? SBT_ECORRUPT : st);
    }
    *used = path;
    return CLI_OK;
}

/* ========================================================================================== */
/* Parsing                                                                                    */
/* ========================================================================================== */

int cli_parse_time(const char *s, uint64_t *ns)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0 || !isfinite(v))
        return -1;
    double mul;
    if (!*end || !strcmp(end, "ns"))
        mul = 1;
    else if (!strcmp(end, "us"))
        mul = 1e3;
    else if (!strcmp(end, "ms"))
        mul = 1e6;
    else if (!strcmp(end, "s"))
        mul = 1e9;
    else
        return -1;
    double r = v * mul;
    if (r >= 1.8e19)
        return -1;
    *ns = (uint64_t)llround(r);
    return 0;
}

int cli_parse_u64(const char *s, uint64_t *v)
{
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    uint64_t mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1000, end++;
    else if (*end == 'M')
        mul = 1000000, end++;
    else if (*end == 'G')
        mul = 1000000000, end++;
    if (*end || (mul > 1 && x > UINT64_MAX / mul))
        return -1;
    *v = (uint64_t)x * mul;
    return 0;
}

int cli_parse_threshold(const char *cmd, const char *arg, double *out)
{
    if (!strcmp(arg, "off")) {
        *out = -1;
        return 0;
    }
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || (*end && strcmp(end, "%")) || !(v >= 0) || v > 1e6) {
        cli_usage(cmd, "--timing-threshold '%s': expected a percentage like 10%% or 'off'", arg);
        return -1;
    }
    *out = v > 0 ? v / 100 : 1e-12;
    return 0;
}

int cli_parse_confidence(const char *cmd, const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || *end || !(v > 0 && v < 1)) {
        cli_usage(cmd, "--confidence '%s': expected a value in (0, 1) like 0.95", arg);
        return -1;
    }
    *out = v;
    return 0;
}

/* Splits "A:B" at the colon; either side may be empty. */
static int split_range(const char *arg, char *a, char *b, size_t cap)
{
    const char *colon = strchr(arg, ':');
    if (!colon || (size_t)(colon - arg) >= cap || strlen(colon + 1) >= cap)
        return -1;
    memcpy(a, arg, (size_t)(colon - arg));
    a[colon - arg] = 0;
    strcpy(b, colon + 1);
    return 0;
}

int cli_range_time(const char *cmd, const char *arg, struct cli_range *cr)
{
    char a[64], b[64];
    uint64_t t0 = 0, t1 = UINT64_MAX;
    if (split_range(arg, a, b, sizeof a) || (*a && cli_parse_time(a, &t0)) ||
        (*b && cli_parse_time(b, &t1)) || t1 <= t0) {
        cli_usage(cmd, "--time-range '%s': expected A:B with A < B, times like 5ms, 1.5s, 200us",
                  arg);
        return -1;
    }
    cr->has_time = 1, cr->t0 = t0, cr->t1 = t1;
    return 0;
}

int cli_range_ops(const char *cmd, const char *arg, struct cli_range *cr)
{
    char a[64], b[64];
    uint64_t o0 = 0, o1 = UINT64_MAX;
    if (split_range(arg, a, b, sizeof a) || (*a && cli_parse_u64(a, &o0)) ||
        (*b && cli_parse_u64(b, &o1)) || o1 <= o0) {
        cli_usage(cmd, "--ops '%s': expected A:B with A < B (op sequence numbers, B excluded)",
                  arg);
        return -1;
    }
    cr->has_ops = 1, cr->op0 = o0, cr->op1 = o1;
    return 0;
}

int cli_range_stream(const char *cmd, const char *arg, struct cli_range *cr)
{
    uint64_t s;
    if (cli_parse_u64(arg, &s) || s == 0 || s > UINT32_MAX) {
        cli_usage(cmd, "--stream '%s': expected a stream id (reprise info lists them)", arg);
        return -1;
    }
    cr->stream = (uint32_t)s;
    return 0;
}

void cli_range_resolve(const struct cli_range *cr, const sbt_reader *r, struct sbt_range *out)
{
    memset(out, 0, sizeof *out);
    const struct sbt_info *in = sbt_reader_info(r);
    if (cr->has_time) {
        out->has_time = 1;
        out->t_begin = in->t_min + cr->t0;
        out->t_end = cr->t1 == UINT64_MAX || cr->t1 > UINT64_MAX - in->t_min ? UINT64_MAX
                                                                             : in->t_min + cr->t1;
    }
    if (cr->has_ops) {
        out->has_seq = 1;
        out->seq_begin = cr->op0;
        out->seq_end = cr->op1;
    }
    out->stream = cr->stream;
}

/* ========================================================================================== */
/* Formatting and progress                                                                    */
/* ========================================================================================== */

int cli_report_stdout(const char *json, const char *junit)
{
    return (json && !strcmp(json, "-")) || (junit && !strcmp(junit, "-"));
}

void cli_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

char *cli_fmt_ns(double ns, char *buf, size_t len)
{
    if (ns < 1e3)
        snprintf(buf, len, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, len, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, len, "%.3f s", ns / 1e9);
    return buf;
}

char *cli_fmt_bytes(double b, char *buf, size_t len)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4)
        b /= 1024, u++;
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

static int progress_shown;

void cli_progress(const char *what, uint64_t done, uint64_t total)
{
    static int tty = -1;
    if (tty < 0)
        tty = isatty(2);
    if (!tty || !total)
        return;
    fprintf(stderr, "\r%s: %3d%%", what, (int)(100.0 * (double)done / (double)total));
    progress_shown = 1;
}

void cli_progress_end(void)
{
    if (progress_shown)
        fprintf(stderr, "\r\033[K");
    progress_shown = 0;
}
