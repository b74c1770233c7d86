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

void cap__trace_path(char *out, size_t cap)
{
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (!getenv(CAP_ENV_ROOT_PID) || !*getenv(CAP_ENV_ROOT_PID)) {
        setenv(CAP_ENV_ROOT_PID, pid, 1); /* the processes it starts are not the root */
        self_rooted = 1;
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
    if (!st && gethostname(buf, sizeof buf) == 0) {
        buf[sizeof buf - 1] = 0;
        st = sbt_writer_meta(w, "host", buf);
    }
    if (!st)
        st = sbt_writer_meta(w, "clock.domain", "CLOCK_MONOTONIC");
    snprintf(buf, sizeof buf, "%" PRIu64, epoch_ns);
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
    return st;
}
