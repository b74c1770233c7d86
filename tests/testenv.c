/*
 * tests/testenv.c — see testenv.h. The scripts are run once per process; a failure is
 * remembered with its reason.
 */
#include "tests/testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

const char *tenv_src(void)
{
    const char *s = getenv("REPRISE_SRC");
    return s && *s ? s : ".";
}

/* Runs scripts/<script> <src>/build/<dir> once; 0 or its exit status. */
static int fetch(const char *script, const char *dir, int *done, int *status)
{
    if (!*done) {
        char cmd[4096];
        /* under a lock: tests run in parallel, and a fetch must not rewrite what another
         * test's process is loading */
        snprintf(cmd, sizeof cmd,
                 "mkdir -p '%s/build' && flock '%s/build/.fetch.lock' '%s/scripts/%s' "
                 "'%s/build/%s' >/dev/null 2>&1",
                 tenv_src(), tenv_src(), tenv_src(), script, tenv_src(), dir);
        int st = system(cmd);
        *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        *done = 1;
    }
    return *status;
}

const char *tenv_mesa25(char *why, size_t n)
{
    static int done, status;
    static char prefix[4200];
    if (fetch("mesa25.sh", "mesa25", &done, &status)) {
        snprintf(why, n,
                 "Mesa 25's lavapipe could not be had: scripts/mesa25.sh exited %d (it needs "
                 "Debian's bookworm-backports mirror)",
                 status);
        return NULL;
    }
    snprintf(prefix, sizeof prefix, ". '%s/build/mesa25/env'; ", tenv_src());
    return prefix;
}

const char *tenv_webgpu(char *why, size_t n)
{
    static int done, status;
    static char env[4200];
    if (system("command -v node >/dev/null 2>&1")) {
        snprintf(why, n, "node not found (apt-get install nodejs npm): Dawn cannot run");
        return NULL;
    }
    if (fetch("webgpu.sh", "webgpu", &done, &status)) {
        snprintf(why, n,
                 "Dawn could not be installed: scripts/webgpu.sh exited %d (it needs npm's "
                 "registry)",
                 status);
        return NULL;
    }
    snprintf(env, sizeof env, "REPRISE_WEBGPU='%s/build/webgpu' ", tenv_src());
    return env;
}

const char *tenv_llama(char *why, size_t n)
{
    static int done, status;
    static char env[4200];
    if (system("command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1")) {
        snprintf(why, n,
                 "node or npm not found (apt-get install nodejs npm): llama.cpp cannot run");
        return NULL;
    }
    if (fetch("llama.sh", "llama", &done, &status)) {
        snprintf(why, n,
                 "node-llama-cpp could not be installed: scripts/llama.sh exited %d (it needs "
                 "npm's registry)",
                 status);
        return NULL;
    }
    /* ggml-vulkan leaves CPU devices out unless told; Mesa's shader cache in the build tree
     * pays lavapipe's compile of ggml's pipelines once (minutes on a cold cache) */
    snprintf(env, sizeof env,
             "REPRISE_LLAMA='%s/build/llama' GGML_VK_VISIBLE_DEVICES=0 "
             "MESA_SHADER_CACHE_DIR='%s/build/llama/shader-cache' ",
             tenv_src(), tenv_src());
    return env;
}

int tenv_vk_registry_has(const char *command)
{
    const char *xml = getenv("REPRISE_VK_XML");
    if (!xml)
        return 1;
    FILE *f = fopen(xml, "r");
    if (!f)
        return 0;
    char want[256], line[4096];
    snprintf(want, sizeof want, "<name>%s</name>", command);
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, want) != NULL;
    fclose(f);
    return found;
}
