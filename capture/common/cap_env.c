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

void cap__trace_path(char *out, size_t cap)
{
    const char *t = getenv(CAP_ENV_TRACE);
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (!t || !*t) {
        snprintf(out, cap, "reprise-%s.sbt", pid);
        fprintf(stderr, "reprise capture: %s is not set; writing %s\n", CAP_ENV_TRACE, out);
        return;
    }
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
