/*
 * cli/cli_capture_cuda.c — the CUDA half of `reprise capture`: arranges the environment of the
 * program to capture so that the CUDA shim stands in for libcuda.so.1 (capture/cuda/cap_cuda_shim.c
 * explains why a replacement directory on LD_LIBRARY_PATH rather than LD_PRELOAD). cli_capture.c
 * (the command) calls cli_capture_cuda_env() before it starts the program when --api is cuda
 * (or auto), then execs the program as it does for Vulkan.
 *
 * What it sets: LD_LIBRARY_PATH = <shim dir>:$LD_LIBRARY_PATH, where the shim dir holds a
 * libcuda.so.1 that is the shim (build tree: <dir of reprise>/cuda; installed:
 * <prefix>/lib/reprise/cuda; $REPRISE_CUDA_SHIM_DIR overrides); REPRISE_CUDA_DRIVER = the real
 * driver (kept if already set, else the first libcuda.so.1 of `ldconfig -p` that is not the
 * shim); REPRISE_TRACE, REPRISE_TIMING as the capture layer expects them (capture/cap.h).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/cap.h"
#include "cli/cli_int.h"

/* Directory holding the shim as libcuda.so.1, or "" if none is found. */
static void shim_dir(char *out, size_t cap)
{
    const char *env = getenv("REPRISE_CUDA_SHIM_DIR");
    char exe[PATH_MAX], cand[PATH_MAX + 64];
    out[0] = 0;
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = 0;
    static const char *const rel[] = {"/cuda", "/../lib/reprise/cuda"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(cand, sizeof cand, "%.4000s%s/libcuda.so.1", exe, rel[i]);
        if (access(cand, R_OK) == 0) {
            snprintf(out, cap, "%.4000s%s", exe, rel[i]);
            return;
        }
    }
}

/* The real driver from the loader cache, skipping anything under the shim directory. */
static void real_driver(const char *shim, char *out, size_t cap)
{
    out[0] = 0;
    FILE *f = popen("ldconfig -p 2>/dev/null", "r");
    if (!f)
        return;
    char line[PATH_MAX + 128];
    while (fgets(line, sizeof line, f)) {
        char *arrow = strstr(line, "=> ");
        if (!strstr(line, "libcuda.so.1 ") || !arrow)
            continue;
        char *path = arrow + 3;
        path[strcspn(path, "\n")] = 0;
        if (*shim && !strncmp(path, shim, strlen(shim)))
            continue;
        snprintf(out, cap, "%s", path);
        break;
    }
    pclose(f);
}

int cli_capture_cuda_env(const char *cmd, const char *trace, int timing)
{
    char dir[PATH_MAX], drv[PATH_MAX];
    shim_dir(dir, sizeof dir);
    if (!dir[0]) {
        cli_err(cmd, "the CUDA shim (cuda/libcuda.so.1 beside reprise, or lib/reprise/cuda) is "
                     "not installed; set REPRISE_CUDA_SHIM_DIR");
        return CLI_ENV;
    }
    const char *have = getenv("REPRISE_CUDA_DRIVER");
    if (!have || !*have) {
        real_driver(dir, drv, sizeof drv);
        if (!drv[0]) {
            cli_err(cmd, "no CUDA driver (libcuda.so.1) found by ldconfig; set "
                         "REPRISE_CUDA_DRIVER to its path");
            return CLI_ENV;
        }
        setenv("REPRISE_CUDA_DRIVER", drv, 1);
    }
    const char *old = getenv("LD_LIBRARY_PATH");
    size_t len = strlen(dir) + (old ? strlen(old) : 0) + 2;
    char *path = malloc(len);
    if (!path)
        return CLI_INTERNAL;
    snprintf(path, len, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_LIBRARY_PATH", path, 1);
    free(path);
    if (trace)
        setenv(CAP_ENV_TRACE, trace, 1);
    if (timing)
        setenv(CAP_ENV_TIMING, "1", 1);
    return CLI_OK;
}
