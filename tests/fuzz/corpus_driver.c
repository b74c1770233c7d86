/*
 * tests/fuzz/corpus_driver.c — a main() for the fuzz targets, so `make check` replays their
 * corpora and the golden files under plain gcc (and ASan in `make asan`) without libFuzzer.
 * Arguments are files or directories (read one level deep).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "corpus: cannot open %s\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (!b || (n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n)) {
        fclose(f);
        free(b);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(b, (size_t)n);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    int n = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0)
            continue; /* a corpus directory that does not exist yet */
        if (!S_ISDIR(st.st_mode)) {
            bad += run_file(argv[i]);
            n++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
                bad += run_file(p);
                n++;
            }
        }
        if (d)
            closedir(d);
    }
    printf("corpus: %d inputs replayed, %d unreadable\n", n, bad);
    return bad ? 1 : 0;
}
