/*
 * capture/common/cap_env.c — how a capture is configured from the environment (flags, the
 * trace's path, writer options) and the metadata every trace records about the captured
 * process. Shared by the Vulkan layer and the CUDA shim (capture/common/cap_int.h); stateless.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capture/cap.h"
#include "capture/common/cap_int.h"

static uint64_t test_shift(void);
static int launcher_job(char *out, size_t cap);

int cap__env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* Whether this process made itself the root (REPRISE_ROOT_PID was unset): it then starts the
 * manifest anew. */
static int self_rooted;

int cap__is_root(void)
{
    const char *r = getenv(CAP_ENV_ROOT_PID);
    return !r || !*r || atol(r) == (long)getpid();
}

/* REPRISE_TRACE with "%p" expanded into out[cap]; 0, or -1 when it is unset. */
static int expand(char *out, size_t cap, const char *pid)
{
    const char *t = getenv(CAP_ENV_TRACE);
    if (!t || !*t)
        return -1;
    size_t o = 0;
    for (const char *p = t; *p && o + 24 < cap; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(out + o, cap - o, "%s", pid);
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
    return 0;
}

/* The stem of path (without a trailing ".sbt") into out[cap]. */
static void stem_of(const char *path, char *out, size_t cap)
{
    size_t n = strlen(path);
    if (n > 4 && !strcmp(path + n - 4, ".sbt"))
        n -= 4;
    snprintf(out, cap, "%.*s", (int)n, path);
}

/* The job id when REPRISE_JOB is unset: the same in every process of one capture without
 * any process passing it on, because it is made of what they all see alike: the host, the
 * root's pid and the root's start time (clock ticks since boot, /proc/ROOT/stat field 22), so
 * a pid reused later gives another id. Where /proc says nothing, the realtime clock in ns. */
static void job_default(char *out, size_t cap)
{
    char host[256] = "", path[64], buf[1024];
    const char *root = getenv(CAP_ENV_ROOT_PID);
    long rpid = root && *root ? atol(root) : (long)getpid();
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = 0;
    unsigned long long start = 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", rpid);
    FILE *f = fopen(path, "r");
    if (f) {
        size_t m = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[m] = 0;
        const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
        for (int field = 2; p && *p && field < 22; p++)
            if (*p == ' ')
                field++;
        if (p)
            start = strtoull(p, NULL, 10);
    }
    if (!start) {
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        start = (unsigned long long)rt.tv_sec * 1000000000ull + (unsigned long long)rt.tv_nsec;
    }
    snprintf(out, cap, "%s-%ld-%llx", host, rpid, start);
}

void cap__trace_path(char *out, size_t cap)
{
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (!getenv(CAP_ENV_ROOT_PID) || !*getenv(CAP_ENV_ROOT_PID)) {
        setenv(CAP_ENV_ROOT_PID, pid, 1); /* the processes it starts are not the root */
        self_rooted = 1;
    }
    if (!getenv(CAP_ENV_JOB) || !*getenv(CAP_ENV_JOB)) {
        char job[400];
        if (!launcher_job(job, sizeof job))
            job_default(job, sizeof job);
        setenv(CAP_ENV_JOB, job, 1); /* inherited by the processes this one starts */
    }
    if (expand(out, cap, pid) < 0) {
        snprintf(out, cap, "reprise-%s.sbt", pid);
        fprintf(stderr, "reprise capture: %s is not set; writing %s\n", CAP_ENV_TRACE, out);
        return;
    }
    if (cap__is_root() || strstr(getenv(CAP_ENV_TRACE), "%p"))
        return;
    char stem[PATH_MAX];
    stem_of(out, stem, sizeof stem);
    snprintf(out, cap, "%.*s.%s.sbt", (int)(cap > 40 ? cap - 40 : 0), stem, pid);
}

void cap__manifest_add(const char *path)
{
    char root[PATH_MAX], stem[PATH_MAX], man[PATH_MAX + 16];
    char pid[24];
    snprintf(pid, sizeof pid, "%s", getenv(CAP_ENV_ROOT_PID) ? getenv(CAP_ENV_ROOT_PID) : "");
    if (expand(root, sizeof root, pid) < 0)
        return; /* no REPRISE_TRACE: a trace of its own, no capture to list it in */
    stem_of(root, stem, sizeof stem);
    snprintf(man, sizeof man, "%s%s", stem, CAP_MANIFEST_SUFFIX);
    int fd =
        open(man, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | (self_rooted ? O_TRUNC : 0), 0644);
    if (fd < 0)
        return;
    char cmd[1024] = "";
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (f) {
        size_t m = fread(cmd, 1, sizeof cmd - 1, f);
        fclose(f);
        for (size_t i = 0; i < m; i++)
            if (!cmd[i] || cmd[i] == '\t' || cmd[i] == '\n')
                cmd[i] = ' ';
        cmd[m] = 0;
        while (m && cmd[m - 1] == ' ')
            cmd[--m] = 0;
    }
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    char line[4096];
    int n =
        snprintf(line, sizeof line, "%d\t%d\t%" PRIu64 "\t%s\t%s\n", (int)getpid(), (int)getppid(),
                 (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec, path, cmd);
    if (n > (int)sizeof line - 1) { /* one write, one whole line */
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
    close(fd);
}

struct sbt_writer_opts cap__writer_opts(void)
{
    struct sbt_writer_opts o = SBT_WRITER_OPTS();
    const char *z = getenv(CAP_ENV_ZSTD);
    if (z && *z)
        o.zstd_level = atoi(z) > 0 ? atoi(z) : -1;
    return o;
}

/* ==========================================================================================
 * Identity in a job: rank, world size and local rank from the first launcher whose variables
 * are set (REPRISE_RANK before the launchers, so a user can override them), and the job id.
 * ========================================================================================== */

struct launcher {
    const char *from; /* recorded as job.rank_from */
    const char *rank, *size, *local, *job;
};
#define CAP_LAUNCHER_ROW(from, rank, size, local, job) {from, rank, size, local, job},
static const struct launcher launchers[] = {CAP_LAUNCHERS(CAP_LAUNCHER_ROW)};

/* The variable's value when it is a decimal number below 2^31, else NULL. */
static const char *env_num(const char *name)
{
    const char *v = name ? getenv(name) : NULL;
    if (!v || !*v || strlen(v) > 10)
        return NULL;
    for (const char *p = v; *p; p++)
        if (*p < '0' || *p > '9')
            return NULL;
    return strtoull(v, NULL, 10) < (1ull << 31) ? v : NULL;
}

/* "openmpi-2125594625": the first launcher's job id that is set, into out. 1 if one was. */
static int launcher_job(char *out, size_t cap)
{
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        const char *v = launchers[i].job ? getenv(launchers[i].job) : NULL;
        if (v && *v) {
            snprintf(out, cap, "%s-%.300s", launchers[i].from, v);
            return 1;
        }
    }
    return 0;
}

static int meta_identity(sbt_writer *w)
{
    int st = 0;
    const char *job = getenv(CAP_ENV_JOB);
    if (job && *job)
        st = sbt_writer_meta(w, "job.id", job);
    for (size_t i = 0; !st && i < sizeof launchers / sizeof launchers[0]; i++) {
        const struct launcher *l = &launchers[i];
        const char *rank = env_num(l->rank);
        if (!rank) {
            if (getenv(l->rank) && *getenv(l->rank)) /* set, but not a rank: say so, go on */
                st = sbt_writer_meta(w, "job.rank_ignored", l->rank);
            continue;
        }
        st = sbt_writer_meta(w, "job.rank", rank);
        if (!st)
            st = sbt_writer_meta(w, "job.rank_from", l->from);
        if (!st && env_num(l->size))
            st = sbt_writer_meta(w, "job.world_size", env_num(l->size));
        if (!st && env_num(l->local))
            st = sbt_writer_meta(w, "job.local_rank", env_num(l->local));
        break;
    }
    return st;
}

int cap__meta_process(sbt_writer *w, const char *api, const char *tool, uint64_t epoch_ns)
{
    char buf[4096];
    int st = sbt_writer_meta(w, "capture.api", api);
    if (!st)
        st = sbt_writer_meta(w, "capture.tool", tool);
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (!st && n > 0) {
        buf[n] = 0;
        st = sbt_writer_meta(w, "program", buf);
    }
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (f) {
        size_t m = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i + 1 < m; i++)
            if (!buf[i])
                buf[i] = ' ';
        buf[m] = 0;
        if (!st)
            st = sbt_writer_meta(w, "argv", buf);
    }
    if (!st) {
        char v[64];
        snprintf(v, sizeof v, "%d", (int)getpid());
        st = sbt_writer_meta(w, "capture.pid", v);
        snprintf(v, sizeof v, "%d", (int)getppid());
        if (!st)
            st = sbt_writer_meta(w, "capture.ppid", v);
        const char *root = getenv(CAP_ENV_ROOT_PID);
        if (!st)
            st = sbt_writer_meta(w, "capture.root_pid", root ? root : v);
    }
    if (!st)
        st = meta_identity(w);
    if (!st && gethostname(buf, sizeof buf) == 0) {
        buf[sizeof buf - 1] = 0;
        st = sbt_writer_meta(w, "host", buf);
    }
    if (!st)
        st = sbt_writer_meta(w, "clock.domain", "CLOCK_MONOTONIC");
    snprintf(buf, sizeof buf, "%" PRIu64, epoch_ns + test_shift());
    if (!st)
        st = sbt_writer_meta(w, "clock.epoch_monotonic_ns", buf);
    struct timespec rt, mt;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mt);
    /* the realtime instant of the epoch: now, less the monotonic time since the epoch */
    uint64_t now_rt = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    uint64_t now_mt = (uint64_t)mt.tv_sec * 1000000000u + (uint64_t)mt.tv_nsec;
    snprintf(buf, sizeof buf, "%" PRIu64, now_rt - (now_mt > epoch_ns ? now_mt - epoch_ns : 0));
    if (!st)
        st = sbt_writer_meta(w, "clock.epoch_realtime_ns", buf);
    if (!st)
        st = cap__clock_pair(w, "start", 0);
    return st;
}

/* ==========================================================================================
 * Clock pairs (FORMAT.md 3.5): clock.sync.N = "MONO REAL ERR WHY". MONO is read on both sides
 * of the CLOCK_REALTIME read and the pair takes their midpoint; ERR is half the distance
 * between them (the pair is exact within ERR), at least 1.
 * ========================================================================================== */

/* REPRISE_TEST_CLOCK_SHIFT_NS (test only, cap.h): added to every CLOCK_MONOTONIC value the
 * trace records about its clock (the epoch and the pairs), so that the trace reads as if taken
 * on a machine whose monotonic clock is that far ahead. Op times count from the epoch and do
 * not move. */
static uint64_t test_shift(void)
{
    const char *v = getenv(CAP_ENV_TEST_CLOCK_SHIFT);
    return v && *v ? (uint64_t)strtoull(v, NULL, 10) : 0;
}

static uint32_t n_pairs;       /* pairs written so far by this process */
static uint64_t last_pair_ms;  /* cap__mono_ms() of the last one */
static uint64_t last_pair_ops; /* ops written when it was taken */

int cap__clock_pair(sbt_writer *w, const char *why, uint64_t n_ops)
{
    if (!w)
        return 0;
    int flush = !strcmp(why, "flush");
    uint64_t now_ms = cap__mono_ms();
    if (flush && n_pairs && (now_ms - last_pair_ms < CAP_CLOCK_PAIR_MS || n_ops == last_pair_ops))
        return 0; /* one a second, and none while the program records nothing */
    struct timespec a, r, b;
    uint64_t best_err = UINT64_MAX, mono = 0, real = 0;
    for (int i = 0; i < 3; i++) { /* the tightest of three brackets: a preemption widens one */
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_REALTIME, &r);
        clock_gettime(CLOCK_MONOTONIC, &b);
        uint64_t ma = (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec;
        uint64_t mb = (uint64_t)b.tv_sec * 1000000000u + (uint64_t)b.tv_nsec;
        uint64_t err = (mb - ma) / 2 + 1;
        if (err < best_err) {
            best_err = err;
            mono = ma + (mb - ma) / 2;
            real = (uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec;
        }
    }
    char key[48], val[128];
    snprintf(key, sizeof key, "clock.sync.%" PRIu32, n_pairs);
    snprintf(val, sizeof val, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %s", mono + test_shift(), real,
             best_err, why);
    n_pairs++;
    last_pair_ms = now_ms;
    last_pair_ops = n_ops;
    return sbt_writer_meta(w, key, val);
}
