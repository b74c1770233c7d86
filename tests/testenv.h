/*
 * tests/testenv.h — what the tests need from outside the build, set up by the project's own
 * scripts (idempotent; `make test` has already run them through scripts/deps.sh): a second
 * Vulkan driver (Mesa 25's lavapipe, scripts/mesa25.sh) and Dawn (scripts/webgpu.sh).
 * Each returns a string to use, or NULL after writing why into why[n] (for cr_skip_test).
 * Needs REPRISE_SRC (set by `make check`).
 */
#ifndef REPRISE_TESTENV_H
#define REPRISE_TESTENV_H

#include <stddef.h>

/* ". /path/build/mesa25/env; " — a shell prefix that runs what follows on Mesa 25. */
const char *tenv_mesa25(char *why, size_t n);
/* "REPRISE_WEBGPU=/path/build/webgpu " — the environment the tests/webgpu programs need (node
 * found, Dawn installed). */
const char *tenv_webgpu(char *why, size_t n);
/* The source tree (REPRISE_SRC, else "."). */
const char *tenv_src(void);
/* "REPRISE_LLAMA=... GGML_VK_VISIBLE_DEVICES=0 MESA_SHADER_CACHE_DIR=... " — what
 * tests/llama/llama.mjs needs (run it with $REPRISE_LLAMA/bin/node on $REPRISE_LLAMA/tiny.gguf),
 * installing node-llama-cpp and making the model first (scripts/llama.sh); NULL with the reason
 * in why when that cannot be had. */
const char *tenv_llama(char *why, size_t n);
/* 1 when the Vulkan registry the build used (REPRISE_VK_XML) defines command (a canonical
 * name, "vkCmdPushDescriptorSet": the 1.4 core names), 0 when not. Without REPRISE_VK_XML, 1:
 * the build's default registry (Debian 13's 1.4.309) is assumed. The capture layer
 * records a command only when its build's registry has it: a fallback build on an older
 * registry leaves it unmodelled. */
int tenv_vk_registry_has(const char *command);

#endif
