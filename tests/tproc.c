/*
 * tests/tproc.c — see tests/tproc.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tproc.h"

int tproc_start(struct tproc *p, char *const argv[], char *const env[])
{
    int fd[2];
    memset(p, 0, sizeof *p);
    p->out = -1;
    if (pipe(fd) != 0)
        return -1;
    p->pid = fork();
    if (p->pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (p->pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        for (size_t i = 0; env && env[i]; i++)
            putenv(env[i]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    p->out = fd[0];
    return 0;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *q = s; (q = strstr(q, what)) != NULL; q += strlen(what))
        n++;
    return n;
}

/* Reads what is there (blocking for some); 0 at the end of the output. */
static int read_some(struct tproc *p)
{
    char buf[4096];
    ssize_t k;
    do
        k = read(p->out, buf, sizeof buf);
    while (k < 0 && errno == EINTR);
    if (k <= 0)
        return 0;
    size_t room = sizeof p->text - 1 - p->len;
    size_t m = (size_t)k < room ? (size_t)k : room;
    memcpy(p->text + p->len, buf, m);
    p->len += m;
    p->text[p->len] = 0;
    return 1;
}

int tproc_wait_for(struct tproc *p, const char *what, int n)
{
    int seen;
    while ((seen = count(p->text, what)) < n && read_some(p))
        ;
    return seen;
}

int tproc_finish(struct tproc *p)
{
    while (p->out >= 0 && read_some(p))
        ;
    if (p->out >= 0)
        close(p->out);
    p->out = -1;
    int st = 0;
    while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
        ;
    return st;
}

char *tproc_env_fault_kills(char *buf, size_t n)
{
    const char *cur = getenv("ASAN_OPTIONS");
    snprintf(buf, n, "ASAN_OPTIONS=%s%shandle_segv=0:handle_sigbus=0", cur ? cur : "",
             cur && *cur ? ":" : "");
    return buf;
}
