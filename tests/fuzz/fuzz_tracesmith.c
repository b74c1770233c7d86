/*
 * tests/fuzz/fuzz_tracesmith.c — the TraceSmith importer on arbitrary bytes (with the
 * TraceSmith magic forced on, so the parser itself is exercised): any status, never a crash,
 * and what it writes must read back.
 */
#include <stdint.h>
#include <string.h>

#include "format/sbt.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1 << 20))
        return 0;
    uint8_t *b = malloc(size + 4);
    if (!b)
        return 0;
    memcpy(b, "SBT\0", 4);
    memcpy(b + 4, data, size);
    char in[96], out[96];
    snprintf(in, sizeof in, "%s", fuzz_path("ts-in"));
    snprintf(out, sizeof out, "%s", fuzz_path("ts-out"));
    if (fuzz_write(in, b, size + 4) == 0) {
        uint64_t n;
        int st = sbt_import_tracesmith(in, out, NULL, &n);
        if (st < 0 && !strcmp(sbt_errmsg(), "no error"))
            abort();
        if (st == 0) {
            sbt_reader *r;
            if (sbt_reader_open(out, NULL, &r) != 0 || sbt_reader_info(r)->n_ops != n)
                abort();
            if (sbt_reader_validate(r, NULL, NULL) != 0)
                abort();
            sbt_reader_close(r);
        }
        unlink(out);
    }
    unlink(in);
    free(b);
    return 0;
}
