/*
 * replay/replay_sidecar.c — the sidecar of snapshots as a file: its default name beside the
 * trace, its creation with the metadata that ties it to one trace, its close (or removal, so
 * that no half sidecar is left for a later range replay to trust), and its opening with the
 * checks that it belongs to the trace and is whole. What goes into it is replay_snap_take.c's.
 *
 * A sidecar is an .sbt of STATE records (FORMAT.md 5a, "snapshots") with this metadata:
 *   snapshot.of           the trace's fingerprint (sbt_reader_fingerprint) in hex
 *   snapshot.trace        the trace's path as given (opts.source_path), "" when unknown
 *   snapshot.chunk_bytes  bytes per hashed chunk (opts.snapshot_chunk, 64 KiB by default)
 *   snapshot.device, snapshot.driver  what computed the bytes (written at close)
 *   snapshot.verified     the verdict of the replay that took them ("verified: 5 output(s)
 *                         compared with the capture, ..."); written at close, and only when
 *                         that replay verified: one that did not leaves no sidecar
 * A sidecar whose snapshot.of is not the trace's fingerprint is refused, naming both; one
 * without snapshot.verified (of unknown provenance: an older reprise) is refused too.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay/replay_int.h"

int replay__sidecar_create(const char *path, sbt_reader *r, const char *source_path, uint32_t chunk,
                           sbt_writer **out)
{
    *out = NULL;
    sbt_writer *w;
    int st = sbt_writer_open(path, NULL, &w);
    if (st < 0)
        return replay__fail(st, "--snapshots: %s", sbt_errmsg());
    char hex[33], num[32];
    sbt_hash fp = sbt_reader_fingerprint(r);
    snprintf(num, sizeof num, "%u", chunk);
    if ((st = sbt_writer_meta(w, "generator", "reprise replay --snapshot")) ||
        (st = sbt_writer_meta(w, "snapshot.of", sbt_hash_hex(fp, hex))) ||
        (st = sbt_writer_meta(w, "snapshot.trace", source_path ? source_path : "")) ||
        (st = sbt_writer_meta(w, "snapshot.chunk_bytes", num))) {
        st = replay__fail(st, "%s: %s", path, sbt_errmsg());
        replay__sidecar_close(w, path, 0);
        return st;
    }
    *out = w;
    return 0;
}

int replay__sidecar_close(sbt_writer *w, const char *path, int ok)
{
    int st = 0;
    if (ok) {
        st = sbt_writer_close(w);
        if (st < 0)
            st = replay__fail(st, "%s: %s", path, sbt_errmsg());
    } else {
        sbt_writer_abandon(w);
    }
    if (!ok || st < 0)
        unlink(path); /* no half sidecar that a later range replay would trust */
    return st;
}

char *replay_snapshots_path(const char *trace_path)
{
    if (!trace_path)
        return NULL;
    size_t n = strlen(trace_path);
    if (n > 4 && !strcmp(trace_path + n - 4, ".sbt"))
        n -= 4;
    char *p = malloc(n + 10);
    if (p)
        snprintf(p, n + 10, "%.*s.snap.sbt", (int)n, trace_path);
    return p;
}

int replay_snapshots_open(sbt_reader *r, const char *path, sbt_reader **out)
{
    *out = NULL;
    sbt_reader *s;
    int st = sbt_reader_open(path, NULL, &s);
    if (st < 0)
        return replay__fail(st, "snapshots: %s", sbt_errmsg());
    const char *of = sbt_reader_meta_get(s, "snapshot.of");
    char hex[33];
    sbt_hash_hex(sbt_reader_fingerprint(r), hex);
    if (!of) {
        sbt_reader_close(s);
        return replay__fail(SBT_ECORRUPT,
                            "%s: not a sidecar of snapshots (no snapshot.of metadata)", path);
    }
    if (strcmp(of, hex)) {
        const char *tr = sbt_reader_meta_get(s, "snapshot.trace");
        st = replay__fail(SBT_ECORRUPT,
                          "%s: snapshots of another trace (%s, fingerprint %s; this trace's is "
                          "%s): make them again with replay --snapshot-every, or pass "
                          "--no-snapshots",
                          path, tr && *tr ? tr : "unnamed", of, hex);
        sbt_reader_close(s);
        return st;
    }
    if (!sbt_reader_meta_get(s, "snapshot.verified")) {
        sbt_reader_close(s);
        return replay__fail(SBT_ECORRUPT,
                            "%s: snapshots of unknown provenance (no record of the device, driver "
                            "and verification of the replay that took them: an older reprise "
                            "wrote them): make them again with replay --snapshot-every, or pass "
                            "--no-snapshots",
                            path);
    }
    if (sbt_reader_info(s)->lost_bytes) {
        uint64_t at = sbt_reader_info(s)->lost_offset;
        sbt_reader_close(s);
        return replay__fail(SBT_ECORRUPT,
                            "%s: damaged at offset %" PRIu64 " (reprise validate says more)", path,
                            at);
    }
    *out = s;
    return 0;
}

const char *replay__provenance(sbt_reader *src, char *buf, size_t n)
{
    const char *pre = sbt_reader_meta_get(src, "snapshot.of") ? "snapshot." : "trim.";
    char k[3][32];
    snprintf(k[0], sizeof k[0], "%sdevice", pre);
    snprintf(k[1], sizeof k[1], "%sdriver", pre);
    snprintf(k[2], sizeof k[2], "%sverified", pre);
    const char *dev = sbt_reader_meta_get(src, k[0]), *drv = sbt_reader_meta_get(src, k[1]);
    const char *ver = sbt_reader_meta_get(src, k[2]);
    snprintf(buf, n, "%s: device %s, driver %s; that replay: %s",
             *pre == 's' ? "snapshot" : "initial contents of a trimmed trace",
             dev && *dev ? dev : "unknown", drv && *drv ? drv : "unknown",
             ver && *ver ? ver : "unknown");
    return buf;
}
