/*
 * bench/bench_format.c — throughput, size, seek latency and memory of the SBT format.
 *
 *   bench_format write SRC.sbt OUT.sbt N   write N ops (cycling SRC's ops, time-shifted):
 *                                          writer only, the ops are decoded beforehand;
 *                                          BENCH_ZSTD_LEVEL=L sets the zstd level (-1: none)
 *   bench_format read TRACE                iterate every op with a cursor
 *   bench_format seek TRACE K              K random seeks by seq and K by time: open a cursor
 *                                          and fetch the first op; median and p99 latency
 *   bench_format bulk TRACE [cursor]       every op into arrays of seq, kind, stream, kernel,
 *                                          host and device begin/end (the Python API's
 *                                          DataFrame) with sbt_cursor_read; "cursor": the same
 *                                          arrays filled op by op from sbt_cursor_next
 * Each prints one line of figures and its peak RSS (getrusage). Results: bench/RESULTS.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "format/sbt.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

static int die(const char *what)
{
    fprintf(stderr, "bench_format: %s: %s\n", what, sbt_errmsg());
    return 1;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Copies up to max ops of src (with their accesses) into memory. */
static struct sbt_op *load(sbt_reader *r, size_t max, size_t *n_out, struct sbt_access **acc_out)
{
    size_t n = 0, n_acc = 0, cap_acc = max * 4;
    struct sbt_op *ops = malloc(max * sizeof *ops);
    struct sbt_access *acc = malloc(cap_acc * sizeof *acc);
    sbt_cursor *c;
    const struct sbt_op *op;
    if (!ops || !acc || sbt_cursor_open(r, NULL, &c))
        return NULL;
    while (n < max && sbt_cursor_next(c, &op) == 1) {
        if (n_acc + op->n_access > cap_acc || op->payload.len)
            break;
        ops[n] = *op;
        memcpy(acc + n_acc, op->access, op->n_access * sizeof *acc);
        ops[n].access = (const struct sbt_access *)(uintptr_t)n_acc;
        n_acc += op->n_access;
        n++;
    }
    sbt_cursor_close(c);
    for (size_t i = 0; i < n; i++)
        ops[i].access = acc + (uintptr_t)ops[i].access;
    *n_out = n;
    *acc_out = acc;
    return ops;
}

static int bench_write(const char *src, const char *out, uint64_t n)
{
    sbt_reader *r;
    if (sbt_reader_open(src, NULL, &r))
        return die(src);
    size_t n_src;
    struct sbt_access *acc;
    const char *so = getenv("BENCH_SRC_OPS"); /* ops cycled through: small keeps them in cache */
    struct sbt_op *ops = load(r, so ? strtoul(so, NULL, 10) : 1000000, &n_src, &acc);
    if (!ops || !n_src)
        return die("load");
    const struct sbt_info *in = sbt_reader_info(r);
    uint64_t span = in->t_max - in->t_min + 1000;
    sbt_writer *w;
    const char *lv = getenv("BENCH_ZSTD_LEVEL");
    const char *th = getenv("BENCH_THREADS");
    struct sbt_writer_opts wo =
        SBT_WRITER_OPTS(.zstd_level = lv ? atoi(lv) : 0, .threads = th ? (uint32_t)atoi(th) : 1);
    if (sbt_writer_open(out, &wo, &w))
        return die(out);
    /* the same tables as the source, so names, streams and kernels resolve */
    uint32_t id, n_tab;
    for (uint32_t s = 1; s <= sbt_reader_n_strings(r); s++)
        if (sbt_writer_intern(w, sbt_reader_string(r, s), &id))
            return die("intern");
    const struct sbt_device *d = sbt_reader_devices(r, &n_tab);
    for (uint32_t i = 0; i < n_tab; i++)
        sbt_writer_add_device(w, &d[i], &id);
    const struct sbt_stream *s = sbt_reader_streams(r, &n_tab);
    for (uint32_t i = 0; i < n_tab; i++)
        sbt_writer_add_stream(w, &s[i], &id);
    const struct sbt_program *p = sbt_reader_programs(r, &n_tab);
    for (uint32_t i = 0; i < n_tab; i++) {
        struct sbt_program q = p[i];
        q.blob = (sbt_hash){0, 0};
        sbt_writer_add_program(w, &q, &id);
    }
    const struct sbt_kernel *k = sbt_reader_kernels(r, &n_tab);
    for (uint32_t i = 0; i < n_tab; i++)
        sbt_writer_add_kernel(w, &k[i], &id);
    for (size_t i = 0; i < n_src; i++)
        ops[i].flags &= ~(uint32_t)SBT_OPF_BLOB; /* blobs are not the subject here */
    double t0 = now();
    for (uint64_t i = 0; i < n; i++) {
        struct sbt_op op = ops[i % n_src];
        uint64_t shift = (i / n_src) * span;
        op.host_begin += shift, op.host_end += shift;
        op.dev_begin += shift, op.dev_end += shift;
        if (sbt_writer_add_op(w, &op, NULL))
            return die("add_op");
    }
    if (sbt_writer_close(w))
        return die("close");
    double t = now() - t0;
    sbt_reader_close(r);
    sbt_reader *o;
    if (sbt_reader_open(out, NULL, &o))
        return die(out);
    printf("write: %" PRIu64 " ops in %.3f s = %.2f M ops/s, %.2f bytes/op, peak RSS %ld MB\n", n,
           t, (double)n / t / 1e6, (double)sbt_reader_info(o)->file_bytes / (double)n, rss_mb());
    sbt_reader_close(o);
    free(ops);
    free(acc);
    return 0;
}

static int bench_read(const char *path)
{
    double t0 = now();
    sbt_reader *r;
    if (sbt_reader_open(path, NULL, &r))
        return die(path);
    double t_open = now() - t0;
    sbt_cursor *c;
    const struct sbt_op *op;
    uint64_t n = 0, sum = 0;
    if (sbt_cursor_open(r, NULL, &c))
        return die("cursor");
    int st;
    while ((st = sbt_cursor_next(c, &op)) == 1) {
        n++;
        sum += op->host_begin + op->n_access;
    }
    if (st < 0)
        return die("next");
    double t = now() - t0;
    printf("read: %" PRIu64 " ops in %.3f s (open %.1f ms) = %.2f M ops/s, peak RSS %ld MB "
           "(checksum %" PRIu64 ")\n",
           n, t, t_open * 1e3, (double)n / t / 1e6, rss_mb(), sum % 1000);
    sbt_cursor_close(c);
    sbt_reader_close(r);
    return 0;
}

static int bench_seek(const char *path, int k)
{
    double t0 = now();
    sbt_reader *r;
    if (sbt_reader_open(path, NULL, &r))
        return die(path);
    double t_open = now() - t0;
    const struct sbt_info *in = sbt_reader_info(r);
    double *lat = malloc((size_t)k * sizeof *lat);
    uint64_t x = 88172645463325252ull;
    for (int kind = 0; kind < 2; kind++) {
        for (int i = 0; i < k; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            struct sbt_range rg = {0};
            if (kind == 0) {
                rg.has_seq = 1;
                rg.seq_begin = in->seq_first + x % (in->seq_end - in->seq_first);
                rg.seq_end = UINT64_MAX;
            } else {
                rg.has_time = 1;
                rg.t_begin = in->t_min + x % (in->t_max - in->t_min);
                rg.t_end = UINT64_MAX;
            }
            double s = now();
            sbt_cursor *c;
            const struct sbt_op *op;
            if (sbt_cursor_open(r, &rg, &c) || sbt_cursor_next(c, &op) != 1)
                return die("seek");
            lat[i] = now() - s;
            sbt_cursor_close(c);
        }
        qsort(lat, (size_t)k, sizeof *lat, cmp_d);
        printf("seek by %s: %d seeks, median %.3f ms, p99 %.3f ms, max %.3f ms (open %.1f ms)\n",
               kind ? "time" : "op", k, lat[k / 2] * 1e3, lat[k * 99 / 100] * 1e3, lat[k - 1] * 1e3,
               t_open * 1e3);
    }
    printf("seek: peak RSS %ld MB\n", rss_mb());
    free(lat);
    sbt_reader_close(r);
    return 0;
}

/* Reads every op of path into the arrays of o (cap rows) by sbt_cursor_read or op by op. */
static int fill(sbt_reader *r, const struct sbt_columns *o, uint64_t cap, int by_cursor,
                uint64_t *n)
{
    sbt_cursor *c;
    if (sbt_cursor_open(r, NULL, &c))
        return die("cursor");
    *n = 0;
    if (by_cursor) {
        const struct sbt_op *op;
        int st;
        uint64_t i = 0;
        while (i < cap && (st = sbt_cursor_next(c, &op)) == 1) {
            o->seq[i] = op->seq, o->kind[i] = (uint8_t)op->kind, o->stream[i] = op->stream;
            o->kernel[i] = op->kernel, o->host_begin[i] = op->host_begin;
            o->host_end[i] = op->host_end, o->dev_begin[i] = op->dev_begin;
            o->dev_end[i++] = op->dev_end;
        }
        if (st < 0)
            return die("next");
        *n = i;
    } else if (sbt_cursor_read(c, o, cap, n)) {
        return die("read");
    }
    sbt_cursor_close(c);
    return 0;
}

/* The first pass writes into fresh memory (page faults: on a VM they can cost as much as the
 * decoding); the second into the same arrays, which isolates the decoding. */
static int bench_bulk(const char *path, int by_cursor)
{
    double t0 = now();
    sbt_reader *r;
    if (sbt_reader_open(path, NULL, &r))
        return die(path);
    uint64_t cap = sbt_reader_info(r)->n_ops, n = 0;
    struct sbt_columns o = SBT_COLUMNS(.seq = malloc(cap * 8), .kind = malloc(cap),
                                       .stream = malloc(cap * 4), .kernel = malloc(cap * 4),
                                       .host_begin = malloc(cap * 8), .host_end = malloc(cap * 8),
                                       .dev_begin = malloc(cap * 8), .dev_end = malloc(cap * 8));
    if (!o.seq || !o.kind || !o.stream || !o.kernel || !o.host_begin || !o.host_end ||
        !o.dev_begin || !o.dev_end)
        return die("out of memory for the arrays");
    if (fill(r, &o, cap, by_cursor, &n))
        return 1;
    double t1 = now();
    if (fill(r, &o, cap, by_cursor, &n))
        return 1;
    double t2 = now();
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += o.dev_end[i] - o.host_begin[i] + o.kernel[i] + o.stream[i] + o.kind[i];
    printf("%s: %" PRIu64 " ops into 8 arrays (%.0f MB): fresh arrays %.3f s = %.2f M ops/s, "
           "again into the same arrays %.3f s = %.2f M ops/s, peak RSS %ld MB (checksum %" PRIu64
           ")\n",
           by_cursor ? "arrays by sbt_cursor_next" : "arrays by sbt_cursor_read", n,
           (double)cap * 49 / 1e6, t1 - t0, (double)n / (t1 - t0) / 1e6, t2 - t1,
           (double)n / (t2 - t1) / 1e6, rss_mb(), sum % 1000);
    free(o.seq), free(o.kind), free(o.stream), free(o.kernel), free(o.host_begin);
    free(o.host_end), free(o.dev_begin), free(o.dev_end);
    sbt_reader_close(r);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "write"))
        return bench_write(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    if (argc == 3 && !strcmp(argv[1], "read"))
        return bench_read(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "seek"))
        return bench_seek(argv[2], atoi(argv[3]));
    if ((argc == 3 || (argc == 4 && !strcmp(argv[3], "cursor"))) && !strcmp(argv[1], "bulk"))
        return bench_bulk(argv[2], argc == 4);
    fprintf(stderr, "usage: bench_format write SRC OUT N | read TRACE | seek TRACE K | bulk TRACE "
                    "[cursor]\n");
    return 2;
}
