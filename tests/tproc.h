/*
 * tests/tproc.h — running a program from a test the way a user would, and killing it: the
 * capture tests start a program with extra environment, read its output line by line while it
 * runs, kill it at a chosen moment, and compare how it ended with a run without capture.
 */
#ifndef REPRISE_TESTS_TPROC_H
#define REPRISE_TESTS_TPROC_H

#include <stddef.h>
#include <sys/types.h>

struct tproc {
    pid_t pid;
    int out;          /* read end of the program's stdout */
    char text[16384]; /* what it printed so far (NUL-terminated, truncated if longer) */
    size_t len;
};

/* Starts argv[0] (a path) with argv, its stdout into p->text, stderr inherited, and env (NULL
 * or a NULL-terminated list of "NAME=VALUE") added to the environment. Returns 0 or -1. */
int tproc_start(struct tproc *p, char *const argv[], char *const env[]);
/* Reads the program's output until `what` has appeared n times in it or the output ends.
 * Returns how many times it appeared. */
int tproc_wait_for(struct tproc *p, const char *what, int n);
/* Reads the rest of the output, waits for the program, returns its wait status. */
int tproc_finish(struct tproc *p);
/* "ASAN_OPTIONS=<the current ones>:handle_segv=0:handle_sigbus=0" into buf, for programs that
 * are meant to die of a fault: in an ASan build (make asan) the sanitizer would otherwise report
 * the fault as an error and exit instead of dying of it. Harmless in other builds. */
char *tproc_env_fault_kills(char *buf, size_t n);

#endif
