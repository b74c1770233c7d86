/*
 * tests/fuzz/fuzz_expect.c — the expectation file parser (chk_expect_load, checker/chk.h) on
 * arbitrary text: any outcome is fine but a crash, a leak, a failure without a message, or a
 * file it accepts whose saved form it then refuses or saves differently (load, save, load,
 * save must give the same bytes twice). Lookups run on what it accepted. Input: the file's
 * bytes. Seeds: tests/fuzz/seeds/expect (version 1 and 2 files, escapes, @seq keys, labels,
 * carriage returns and '#' in device and op names: cr.txt, which the format before %XX escapes
 * saved as "a #b" and read back as "a").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checker/chk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void cleanup(void)
{
    static const char *const names[] = {"in.txt", "a.txt", "b.txt", "a.txt.tmp", "b.txt.tmp"};
    char p[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* A file of this process's own directory, removed at exit. */
static const char *path(const char *name)
{
    static char p[3][128];
    static int k;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/reprise-fuzz-expect-XXXXXX");
        if (!mkdtemp(dir))
            abort();
        atexit(cleanup);
    }
    k = (k + 1) % 3;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        abort();
    char *b = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n + 4096 > cap) {
            cap = cap * 2 + 4096;
            b = realloc(b, cap);
            if (!b)
                abort();
        }
        size_t k = fread(b + *n, 1, cap - *n, f);
        *n += k;
        if (!k)
            break;
    }
    fclose(f);
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path("in.txt"), "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
        abort();
    chk_expect *e = NULL;
    int st = chk_expect_load(path("in.txt"), &e);
    if (st < 0) {
        if (e || !*chk_errmsg())
            abort(); /* a failure leaves nothing and says why */
        return 0;
    }
    uint32_t label;
    sbt_hash d;
    chk_expect_get(e, "lavapipe", "s1/k#0", 0, &label, &d);
    chk_expect_get(e, "*", NULL, 3, &label, &d);
    chk_expect_count(e, "lavapipe");
    chk_expect_unused(e, "lavapipe");
    /* what it accepted, it writes in a form it reads back to the same form */
    if (chk_expect_save(e, path("a.txt")) < 0)
        abort();
    chk_expect_free(e);
    if (chk_expect_load(path("a.txt"), &e) < 0 || chk_expect_save(e, path("b.txt")) < 0)
        abort();
    chk_expect_free(e);
    size_t na, nb;
    char *a = slurp(path("a.txt"), &na), *b = slurp(path("b.txt"), &nb);
    if (na != nb || memcmp(a, b, na))
        abort();
    free(a);
    free(b);
    return 0;
}
