/*
 * tests/data/format/mkgolden.c — writes the golden files of tests/data/format once; they are
 * committed, so a format change that breaks old files shows up as a failing test, not a new
 * golden. Rebuild them only when the format version changes: `make golden`. Files of earlier
 * versions stay as they were written (good/v1-*.sbt: version 1), since a reader must keep
 * reading them.
 *
 * good/ must read; bad/NAME.sbt must fail with the text in bad/NAME.sbt.expect.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sbt_int.h"

static void die(const char *what)
{
    fprintf(stderr, "mkgolden: %s: %s\n", what, sbt_errmsg());
    exit(1);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len + 64);
    if (!b || fread(b, 1, *len, f) != *len)
        die(path);
    fclose(f);
    return b;
}

static void spit(const char *dir, const char *name, const void *b, size_t len, const char *expect)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(b, 1, len, f) != len)
        die(p);
    fclose(f);
    if (expect) {
        snprintf(p, sizeof p, "%s/%s.expect", dir, name);
        f = fopen(p, "w");
        if (!f)
            die(p);
        fprintf(f, "%s\n", expect);
        fclose(f);
    }
}

static void fix_header_crc(uint8_t *b)
{
    sbt__put_le32(b + 28, sbt_crc32c(0, b, 28));
}

/* Rewrites the chunk at off with a new raw payload (uncompressed), fixing its CRCs. */
static size_t replace_chunk(uint8_t *b, size_t len, size_t off, const uint8_t *raw, size_t raw_len,
                            uint8_t **out)
{
    struct sbt__chunk_hdr h;
    if (sbt__chunk_hdr_decode(b + off, off, &h))
        die("chunk");
    size_t old_end = off + SBT_CHUNK_HEADER_LEN + h.stored_len;
    h.codec = SBT_CODEC_NONE;
    h.stored_len = h.raw_len = (uint32_t)raw_len;
    h.payload_crc = sbt_crc32c(0, raw, raw_len);
    size_t n = off + SBT_CHUNK_HEADER_LEN + raw_len;
    uint8_t *o = malloc(n);
    memcpy(o, b, off);
    sbt__chunk_hdr_encode(&h, o + off);
    memcpy(o + off + SBT_CHUNK_HEADER_LEN, raw, raw_len);
    (void)old_end;
    (void)len;
    *out = o;
    return n; /* the rest (and the footer) is dropped: the reader scans */
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/data/format";
    char good[200], bad[200], tmp[] = "/tmp/mkgolden.sbt";
    snprintf(good, sizeof good, "%s/good", dir);
    snprintf(bad, sizeof bad, "%s/bad", dir);
    size_t len;
    uint8_t *b;

    /* good: a small synthetic trace, and the same cut inside its last ops chunk */
    struct sbt_gen_opts go = SBT_GEN_OPTS(.n_ops = 600, .seed = 7, .digests = 1);
    struct sbt_writer_opts wo = SBT_WRITER_OPTS(.chunk_ops = 128);
    if (sbt_gen_write(tmp, &go, &wo, NULL))
        die("gen");
    b = slurp(tmp, &len);
    spit(good, "gen-600.sbt", b, len, NULL);
    sbt_reader *r;
    if (sbt_reader_open(tmp, NULL, &r))
        die("open");
    uint64_t n;
    const struct sbt_chunk_info *ci = sbt_reader_chunks(r, &n);
    size_t last_ops = 0, first_ops = 0;
    for (uint64_t k = 0; k < n; k++)
        if (ci[k].content & SBT_CHUNK_OPS) {
            if (!first_ops)
                first_ops = (size_t)ci[k].offset;
            last_ops = (size_t)ci[k].offset;
        }
    sbt_reader_close(r);
    spit(good, "torn-tail.sbt", b, last_ops + 100, NULL);

    /* bad: each names what is wrong and where */
    spit(bad, "empty.sbt", b, 0, "not an SBT trace: offset 0: bad magic");
    spit(bad, "truncated-header.sbt", b, 20, "file header truncated");
    static const uint8_t png[] = "\x89PNG\r\n\x1a\n0000000000000000000000000000";
    spit(bad, "png.sbt", png, sizeof png - 1, "not an SBT trace: offset 0: bad magic");
    b[9] ^= 1;
    spit(bad, "header-crc.sbt", b, len, "offset 28: file header CRC mismatch");
    b[9] ^= 1;
    b[10] = 3;
    fix_header_crc(b);
    spit(bad, "newer-reader.sbt", b, len, "needs a reader of version 3");
    b[10] = 1;
    b[12] = 0x80;
    fix_header_crc(b);
    spit(bad, "required-feature.sbt", b, len, "requires format features 0x80");
    b[12] = 0;
    fix_header_crc(b);
    b[first_ops + SBT_CHUNK_HEADER_LEN + 40] ^= 0x55;
    spit(bad, "payload-crc.sbt", b, len, "payload CRC mismatch");
    b[first_ops + SBT_CHUNK_HEADER_LEN + 40] ^= 0x55;
    b[first_ops + 3] ^= 0x01; /* chunk magic: the footer index points at garbage */
    spit(bad, "chunk-magic.sbt", b, len, "no chunk here");
    b[first_ops + 3] ^= 0x01;

    /* an ops chunk whose only record has an unknown, mandatory type */
    static const uint8_t rec[] = {50, 3, 1, 2, 3};
    uint8_t *o;
    size_t olen = replace_chunk(b, len, first_ops, rec, sizeof rec, &o);
    spit(bad, "unknown-record.sbt", o, olen, "record type 50 is unknown and not skippable");
    free(o);
    /* an OPS record that lies about its column lengths */
    static const uint8_t ops[] = {SBT_REC_OPS, 24, 1, 0, SBT_N_COLS, 100, 0, 0, 0, 0, 0, 0, 0,
                                  0,           0,  0, 0, 0,          0,   0, 0, 0, 0, 0, 1, 1};
    olen = replace_chunk(b, len, first_ops, ops, sizeof ops, &o);
    spit(bad, "column-length.sbt", o, olen, "length 100 > record");
    free(o);

    /* TraceSmith files are recognised and named */
    static const uint8_t ts[] = {0x53, 0x42, 0x54, 0x00, 0x00, 0x00, 0x01, 0x00,
                                 0x03, 0,    0,    0,    0x48, 0,    0,    0};
    spit(bad, "tracesmith.sbt", ts, sizeof ts, "is a TraceSmith SBT file");
    free(b);

    /* version 2: a trimmed trace (ops that keep their source's seq numbers, with gaps, and an
     * initial STATE), and the same with its STATE record's resources out of order */
    sbt_writer *w;
    if (sbt_writer_open(
            tmp, &SBT_WRITER_OPTS(.chunk_ops = 4, .required_features = SBT_FEATURE_INITIAL_STATE),
            &w))
        die("open");
    uint32_t dev, strm, name;
    struct sbt_device d = {.api = SBT_API_SYNTH};
    struct sbt_stream st = {.kind = SBT_STREAM_QUEUE};
    sbt_hash h[2];
    if (sbt_writer_add_device(w, &d, &dev) || (st.device = dev, 0) ||
        sbt_writer_add_stream(w, &st, &strm) || sbt_writer_intern(w, "kernel", &name) ||
        sbt_writer_blob(w, "0123", 4, &h[0]) || sbt_writer_blob(w, "45", 2, &h[1]))
        die("tables");
    for (uint64_t i = 0; i < 12; i++) {
        struct sbt_access a = {i < 2 ? 7 + i : 7, 0, 6, SBT_ACCESS_RW};
        struct sbt_op op = {.kind = i < 2 ? SBT_OP_ALLOC : SBT_OP_KERNEL,
                            .flags = i < 2 ? SBT_OPF_RESOURCE | SBT_OPF_BYTES : 0,
                            .stream = strm,
                            .name = name,
                            .host_begin = 100 * i,
                            .host_end = 100 * i + 50,
                            .resource = 7 + i,
                            .bytes = 6,
                            .n_access = i < 2 ? 0 : 1,
                            .access = &a};
        if (i == 2) {
            uint64_t idx[2] = {0, 1};
            struct sbt_state_alloc al[2] = {{7, 6, 4, 2, idx, h}, {8, 6, 4, 1, idx + 1, h + 1}};
            struct sbt_state s = {.seq = 500, .time = 200, .n_alloc = 2, .alloc = al};
            if (sbt_writer_set_next_seq(w, 500) || sbt_writer_add_state(w, &s))
                die("state");
        }
        if (sbt_writer_add_op(w, &op, NULL))
            die("op");
    }
    if (sbt_writer_close(w))
        die("close");
    b = slurp(tmp, &len);
    spit(good, "trimmed-state.sbt", b, len, NULL);
    if (sbt_reader_open(tmp, NULL, &r))
        die("open");
    ci = sbt_reader_chunks(r, &n);
    size_t state_off = 0;
    for (uint64_t k = 0; k < n; k++)
        if (ci[k].content & SBT_CHUNK_STATE)
            state_off = (size_t)ci[k].offset;
    sbt_reader_close(r);
    /* the record: type 12, length, seq 500 (2 bytes), time 200 (2), flags, n_alloc, resource 7 */
    uint8_t *srec = b + state_off + SBT_CHUNK_HEADER_LEN;
    if (srec[0] != SBT_REC_STATE || srec[8] != 7)
        die("state record layout");
    srec[8] = 9; /* 9, then 8 */
    struct sbt__chunk_hdr hd;
    if (sbt__chunk_hdr_decode(b + state_off, state_off, &hd))
        die("state chunk");
    hd.payload_crc = sbt_crc32c(0, srec, hd.stored_len);
    sbt__chunk_hdr_encode(&hd, b + state_off);
    spit(bad, "state-unsorted.sbt", b, len, "state at op 500: resource 8 after resource 9");
    free(b);
    remove(tmp);
    return 0;
}
