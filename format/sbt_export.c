/*
 * format/sbt_export.c — the export emitter core (tracks, checks, interning, held counter
 * changes, output buffer) and the layout of one SBT trace on it (sbt_export_trace).
 *
 * Backends: sbt_perfetto.c (protobuf) and sbt_json.c (Chrome JSON) turn checked events into
 * bytes. Layout rules and the Perfetto import rules they honour are in sbt_export.h and
 * ../shared/research/perfetto.md (sections 4 and 5.1).
 *
 * Streaming: ops come from a cursor in seq order. Each op passes through a look-ahead ring of
 * flow_window ops before it is written, so that an event record (or signal) knows which waits
 * it released when its instant is written; that is the only reason to hold ops. Slices are
 * written whole when their op is processed, one track per lane: a stream's work goes to the
 * first lane whose last slice ended at or before the new one starts, so timestamps never
 * decrease on a track and slices never partially overlap. Counter changes (allocations, bytes
 * in flight) arrive out of time order; the emitter holds them until the chunk index proves no
 * earlier op can follow (the smallest t_min of the chunks not yet read).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "format/sbt.h"
#include "format/sbt_export.h"
#include "format/sbt_export_int.h"
#include "format/sbt_int.h"
#include "format/sbt_map.h"

#define OUTBUF_BYTES     (256u << 10)
#define DEFAULT_INTERNED 65536u
#define DEFAULT_PENDING  (1u << 20)
#define DEFAULT_WINDOW   4096u
#define MAX_ACCESS_KEPT  16u /* accesses listed in an op's "resources" annotation */
#define MAX_WAITERS      8u  /* arrows from one record/signal */
#define MAX_LANES        256u

/* ========================================================================================== */
/* Small helpers                                                                              */
/* ========================================================================================== */

/* splitmix64's finalizer (the map's hash): a bijection, so distinct inputs never collide */
#define mix64 sbt_map_hash

uint64_t sbt_export_uuid(uint32_t run, uint32_t kind, uint64_t a, uint64_t b)
{
    uint64_t h = mix64(0x7265707269736500ull ^ run); /* "reprise" */
    h = mix64(h ^ kind);
    h = mix64(h ^ a);
    h = mix64(h ^ b);
    return h ? h : 1;
}

uint64_t sbt_export_flow_id(uint32_t run, uint32_t kind, uint64_t a)
{
    /* runs 0..99: (run + 1) in bits 46..52, kind in 44..45, a below: < 2^53 and never 0.
     * Runs 100 and up (the processes of a job) take the space above: from 101 << 46 in steps
     * of 2^39 (kind in 37..38, a below), up to run 3555, still < 2^53 */
    if (run < 100)
        return ((uint64_t)(run + 1) << 46) | ((uint64_t)(kind & 3) << 44) |
               (a & ((1ull << 44) - 1));
    return (101ull << 46) + ((uint64_t)(run - 100) << 39) + ((uint64_t)(kind & 3) << 37) +
           (a & ((1ull << 37) - 1));
}

static uint64_t hash_str(const char *s, size_t len)
{
    return XXH3_64bits(s, len);
}

/* ---- UTF-8: names come from traces and may hold any bytes; both formats need valid UTF-8 -- */

/* Length of the valid UTF-8 sequence at s[0..len), 0 if invalid. */
size_t sbt__x_utf8_seq(const uint8_t *s, size_t len)
{
    uint8_t c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if (n > len)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

size_t sbt__x_utf8_len(const char *s, size_t len)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t out = 0;
    for (size_t i = 0; i < len;) {
        if (p[i] < 0x80) {
            i++, out++;
            continue;
        }
        size_t n = sbt__x_utf8_seq(p + i, len - i);
        out += n ? n : 3;
        i += n ? n : 1;
    }
    return out;
}

uint8_t *sbt__x_utf8_copy(uint8_t *out, const char *s, size_t len)
{
    const uint8_t *p = (const uint8_t *)s;
    for (size_t i = 0; i < len;) {
        if (p[i] < 0x80) {
            *out++ = p[i++];
            continue;
        }
        size_t n = sbt__x_utf8_seq(p + i, len - i);
        if (n) {
            memcpy(out, p + i, n);
            out += n, i += n;
        } else { /* U+FFFD REPLACEMENT CHARACTER */
            *out++ = 0xef, *out++ = 0xbf, *out++ = 0xbd;
            i++;
        }
    }
    return out;
}

/* ========================================================================================== */
/* Emitter core                                                                               */
/* ========================================================================================== */

int sbt__x_flush(sbt_export_emitter *em)
{
    if (em->failed)
        return em->failed;
    if (em->len && fwrite(em->buf, 1, em->len, em->f) != em->len) {
        em->failed = SBT_EIO;
        return sbt__fail(SBT_EIO, "export: write failed after %" PRIu64 " bytes", em->flushed);
    }
    em->flushed += em->len;
    em->len = 0;
    return 0;
}

int sbt__x_reserve(sbt_export_emitter *em, size_t n)
{
    if (em->cap - em->len >= n)
        return 0;
    int st = sbt__x_flush(em);
    if (st < 0)
        return st;
    if (em->cap >= n)
        return 0;
    uint8_t *b = sbt__realloc(em->buf, n);
    if (!b)
        return sbt__fail(SBT_ENOMEM, "export: no memory for a %zu-byte event", n);
    em->buf = b, em->cap = n;
    return 0;
}

uint32_t sbt__x_intern(sbt_export_emitter *em, int kind, const char *s)
{
    struct sbt__xintern *in = &em->intern[kind];
    size_t len = strlen(s);
    uint64_t h = hash_str(s, len);
    if (in->cap) {
        for (uint32_t i = (uint32_t)h & (in->cap - 1);; i = (i + 1) & (in->cap - 1)) {
            struct sbt__xintern_slot *sl = &in->slots[i];
            if (!sl->iid)
                break;
            if (sl->hash == h && sl->len == len && !memcmp(sl->str, s, len))
                return sl->iid;
        }
    }
    if (in->n >= em->max_interned)
        return 0;
    if ((in->n + 1) * 2 > in->cap) { /* grow: load factor <= 1/2 */
        uint32_t ncap = in->cap ? in->cap * 2 : 256;
        struct sbt__xintern_slot *ns = sbt__calloc(ncap, sizeof *ns);
        char **nb = sbt__realloc(in->by_iid, (size_t)ncap / 2 * sizeof *nb);
        if (nb)
            in->by_iid = nb;
        uint32_t *nl = sbt__realloc(in->len_by_iid, (size_t)ncap / 2 * sizeof *nl);
        if (nl)
            in->len_by_iid = nl;
        if (!ns || !nb || !nl) {
            sbt__free(ns);
            return 0;
        }
        for (uint32_t i = 0; i < in->cap; i++) {
            if (!in->slots[i].iid)
                continue;
            uint32_t j = (uint32_t)in->slots[i].hash & (ncap - 1);
            while (ns[j].iid)
                j = (j + 1) & (ncap - 1);
            ns[j] = in->slots[i];
        }
        sbt__free(in->slots);
        in->slots = ns, in->cap = ncap;
    }
    size_t olen = sbt__x_utf8_len(s, len);
    char *copy = sbt__malloc(olen + 1);
    if (!copy)
        return 0;
    *sbt__x_utf8_copy((uint8_t *)copy, s, len) = 0;
    uint32_t i = (uint32_t)h & (in->cap - 1);
    while (in->slots[i].iid)
        i = (i + 1) & (in->cap - 1);
    in->slots[i] =
        (struct sbt__xintern_slot){.hash = h, .iid = in->n + 1, .len = (uint32_t)len, .str = copy};
    /* str above is the sanitized copy; lookups compare raw input, so keep them equal: */
    if (olen != len || memcmp(copy, s, len)) {
        /* the raw bytes were not valid UTF-8: store the raw bytes for matching instead, and
         * the sanitized copy by iid for output */
        char *raw = sbt__malloc(len + 1);
        if (!raw) {
            sbt__free(copy);
            in->slots[i].iid = 0;
            return 0;
        }
        memcpy(raw, s, len + 1);
        in->slots[i].str = raw;
    }
    in->by_iid[in->n] = copy;
    in->len_by_iid[in->n] = (uint32_t)olen;
    return ++in->n;
}

int sbt__x_define(sbt_export_emitter *em, struct sbt__xtrack *t, int kind, uint32_t iid)
{
    uint32_t w = iid / 64;
    if (w >= t->n_defined[kind]) {
        uint32_t n = t->n_defined[kind] ? t->n_defined[kind] : 4;
        while (n <= w)
            n *= 2;
        uint64_t *d = sbt__realloc(t->defined[kind], n * sizeof *d);
        if (!d) {
            em->failed = SBT_ENOMEM;
            return 1; /* the caller's event is dropped by the sticky failure */
        }
        memset(d + t->n_defined[kind], 0, (n - t->n_defined[kind]) * sizeof *d);
        t->defined[kind] = d, t->n_defined[kind] = n;
    }
    uint64_t bit = 1ull << (iid % 64);
    if (t->defined[kind][w] & bit)
        return 1;
    t->defined[kind][w] |= bit;
    return 0;
}

static struct sbt__xtrack *track_find(sbt_export_emitter *em, uint64_t uuid)
{
    /* a direct-mapped cache in front of the hash table: layouts alternate among few tracks */
    uint32_t c = (uint32_t)(uuid ^ uuid >> 29) & (SBT__XCACHE - 1);
    uint32_t v = em->cache[c];
    if (v && em->tracks[v - 1].uuid == uuid)
        return &em->tracks[v - 1];
    const uint64_t *ix = sbt_map_get(&em->map, uuid);
    if (!ix)
        return NULL;
    em->cache[c] = (uint32_t)*ix;
    return &em->tracks[*ix - 1];
}

static int track_add(sbt_export_emitter *em, uint64_t uuid, struct sbt__xtrack **out)
{
    if (em->n_tracks == em->cap_tracks) {
        uint32_t n = em->cap_tracks ? em->cap_tracks * 2 : 64;
        struct sbt__xtrack *t = sbt__realloc(em->tracks, n * sizeof *t);
        if (!t)
            return sbt__fail(SBT_ENOMEM, "export: no memory for %u tracks", n);
        em->tracks = t, em->cap_tracks = n;
    }
    uint64_t *ix = sbt_map_put(&em->map, uuid, NULL);
    if (!ix)
        return SBT_ENOMEM;
    *ix = em->n_tracks + 1;
    struct sbt__xtrack *t = &em->tracks[em->n_tracks++];
    memset(t, 0, sizeof *t);
    t->uuid = uuid;
    *out = t;
    return 0;
}

int sbt_export_emitter_open(FILE *f, int format, const struct sbt_export_emitter_opts *opts,
                            sbt_export_emitter **out)
{
    *out = NULL;
    if (!f || (format != SBT_EXPORT_PERFETTO && format != SBT_EXPORT_JSON))
        return sbt__fail(SBT_EINVAL, "export: %s", !f ? "no output file" : "unknown format");
    sbt_export_emitter *em = sbt__calloc(1, sizeof *em);
    if (!em || !(em->buf = sbt__malloc(OUTBUF_BYTES))) {
        sbt__free(em);
        return sbt__fail(SBT_ENOMEM, "export: no memory for the emitter");
    }
    em->f = f;
    em->format = format;
    em->cap = OUTBUF_BYTES;
    em->max_interned = DEFAULT_INTERNED;
    em->max_pending = DEFAULT_PENDING;
#define OPT_SET(o, field)                                                                      \
    ((o) && (o)->sz >= offsetof(struct sbt_export_emitter_opts, field) + sizeof((o)->field) && \
     (o)->field)
    if (OPT_SET(opts, max_interned))
        em->max_interned = opts->max_interned;
    if (OPT_SET(opts, max_pending))
        em->max_pending = opts->max_pending;
#undef OPT_SET
    em->json_first = 1;
    if (format == SBT_EXPORT_JSON) {
        int st = sbt__json_begin(em);
        if (st < 0) {
            sbt__free(em->buf);
            sbt__free(em);
            return st;
        }
    }
    *out = em;
    return 0;
}

uint64_t sbt_export_emitter_bytes(const sbt_export_emitter *em)
{
    return em ? em->flushed + em->len : 0;
}

uint64_t sbt_export_late(const sbt_export_emitter *em)
{
    return em ? em->late : 0;
}

static int pending_drain(sbt_export_emitter *em, uint64_t before, int all);

int sbt_export_emitter_close(sbt_export_emitter *em)
{
    if (!em)
        return 0;
    int st = pending_drain(em, 0, 1);
    if (st >= 0 && em->format == SBT_EXPORT_JSON)
        st = sbt__json_finish(em);
    if (st >= 0)
        st = sbt__x_flush(em);
    if (st >= 0 && fflush(em->f) != 0)
        st = sbt__fail(SBT_EIO, "export: write failed at the end of the file");
    if (em->failed && st >= 0)
        st = em->failed;
    for (uint32_t i = 0; i < em->n_tracks; i++) {
        sbt__free(em->tracks[i].name);
        for (int k = 0; k < SBT__XI__COUNT; k++)
            sbt__free(em->tracks[i].defined[k]);
    }
    for (int k = 0; k < SBT__XI__COUNT; k++) {
        struct sbt__xintern *in = &em->intern[k];
        for (uint32_t i = 0; i < in->cap; i++)
            if (in->slots[i].iid && in->slots[i].str != in->by_iid[in->slots[i].iid - 1])
                sbt__free(in->slots[i].str);
        for (uint32_t i = 0; i < in->n; i++)
            sbt__free(in->by_iid[i]);
        sbt__free(in->slots);
        sbt__free(in->by_iid);
        sbt__free(in->len_by_iid);
    }
    sbt__free(em->tracks);
    sbt_map_free(&em->map);
    sbt__free(em->heap);
    sbt__free(em->buf);
    sbt__free(em);
    return st;
}

uint32_t sbt_export_intern(sbt_export_emitter *em, int what, const char *s)
{
    if (!em || em->failed || what < 0 || what >= SBT__XI__COUNT || !s)
        return 0;
    return sbt__x_intern(em, what, s);
}

const char *sbt__x_string(const sbt_export_emitter *em, int kind, uint32_t id, const char *s)
{
    return id ? em->intern[kind].by_iid[id - 1] : s;
}

size_t sbt__x_strlen(const sbt_export_emitter *em, int kind, uint32_t id, const char *s)
{
    return id ? em->intern[kind].len_by_iid[id - 1] : s ? strlen(s) : 0;
}

/* Ids given by the caller must come from sbt_export_intern. */
static int check_ids(const sbt_export_emitter *em, const struct sbt_export_event *ev)
{
    const char *bad = NULL;
    uint32_t id = 0;
    if (ev->name_id > em->intern[SBT__XI_NAME].n)
        bad = "name_id", id = ev->name_id;
    else if (ev->category_id > em->intern[SBT__XI_CAT].n)
        bad = "category_id", id = ev->category_id;
    for (uint32_t i = 0; !bad && i < ev->n_args; i++) {
        const struct sbt_export_arg *a = &ev->args[i];
        if (a->name_id > em->intern[SBT__XI_ARG].n)
            bad = "arg name_id", id = a->name_id;
        else if (a->type == SBT_EXPORT_ARG_VALUE_ID &&
                 (!a->v.id || a->v.id > em->intern[SBT__XI_VALUE].n))
            bad = "arg value id", id = a->v.id;
    }
    if (bad)
        return sbt__fail(SBT_EINVAL, "export: %s %u was not returned by sbt_export_intern", bad,
                         id);
    return 0;
}

static const char *track_label(const struct sbt__xtrack *t)
{
    return t->name && *t->name ? t->name : "(unnamed)";
}

int sbt_export_track(sbt_export_emitter *em, const struct sbt_export_track *d)
{
    if (em->failed)
        return em->failed;
    if (!d || !d->uuid || d->kind < SBT_EXPORT_TRACK_PROCESS || d->kind > SBT_EXPORT_TRACK_COUNTER)
        return sbt__fail(SBT_EINVAL, "export: track %s",
                         !d         ? "missing"
                         : !d->uuid ? "uuid is 0"
                                    : "kind unknown");
    if (track_find(em, d->uuid))
        return sbt__fail(SBT_EINVAL, "export: track uuid %#" PRIx64 " ('%s') declared twice",
                         d->uuid, d->name ? d->name : "");
    if ((d->kind == SBT_EXPORT_TRACK_PROCESS || d->kind == SBT_EXPORT_TRACK_THREAD) && d->pid <= 0)
        return sbt__fail(SBT_EINVAL, "export: track '%s': pid %d must be >= 1",
                         d->name ? d->name : "", d->pid);
    uint32_t parent = 0;
    int32_t pid = d->pid;
    if (d->kind == SBT_EXPORT_TRACK_SLICES || d->kind == SBT_EXPORT_TRACK_COUNTER) {
        if (d->parent) {
            struct sbt__xtrack *p = track_find(em, d->parent);
            if (!p || p->kind == SBT_EXPORT_TRACK_THREAD || p->kind == SBT_EXPORT_TRACK_COUNTER)
                return sbt__fail(SBT_EINVAL, "export: track '%s': parent %#" PRIx64 " %s",
                                 d->name ? d->name : "", d->parent,
                                 !p ? "is not declared" : "is a thread or counter track");
            parent = (uint32_t)(p - em->tracks) + 1;
            pid = p->pid;
        } else {
            pid = 0;
        }
    }
    struct sbt__xtrack *t = NULL;
    int st = track_add(em, d->uuid, &t);
    if (st < 0)
        return st;
    t->kind = d->kind;
    t->parent = parent;
    t->pid = pid;
    t->tid = d->tid;
    if (d->name && (t->name = sbt__malloc(strlen(d->name) + 1)))
        strcpy(t->name, d->name);
    if (d->name && !t->name) {
        em->n_tracks--; /* the map entry stays but points past n_tracks: rebuilt on next add */
        em->failed = SBT_ENOMEM;
        return sbt__fail(SBT_ENOMEM, "export: no memory for a track name");
    }
    return em->format == SBT_EXPORT_PERFETTO ? sbt__pf_track(em, t, d) : sbt__json_track(em, t, d);
}

/* Checks one event against its track and hands it to the backend. */
static int emit(sbt_export_emitter *em, uint64_t uuid, int type, uint64_t ts, uint64_t dur,
                const struct sbt_export_event *ev, int is_double, int64_t iv, double dv)
{
    if (em->failed)
        return em->failed;
    struct sbt__xtrack *t = track_find(em, uuid);
    if (!t)
        return sbt__fail(SBT_EINVAL, "export: event on track %#" PRIx64 " that was not declared",
                         uuid);
    if ((type == SBT__XEV_COUNTER) != (t->kind == SBT_EXPORT_TRACK_COUNTER))
        return sbt__fail(SBT_EINVAL, "export: track '%s': %s", track_label(t),
                         type == SBT__XEV_COUNTER ? "counter value on a slice track"
                                                  : "slice or instant on a counter track");
    if (t->has_ts && ts < t->last_ts)
        return sbt__fail(SBT_EINVAL,
                         "export: track '%s': event at %" PRIu64 " ns is before the previous "
                         "one at %" PRIu64 " ns (timestamps must not decrease on a track)",
                         track_label(t), ts, t->last_ts);
    if (ts >= 1ull << 63 || (type == SBT__XEV_COMPLETE && dur >= (1ull << 63) - ts))
        return sbt__fail(SBT_EINVAL,
                         "export: track '%s': time %" PRIu64 " ns (+%" PRIu64 ") out of range",
                         track_label(t), ts, dur);
    if (type == SBT__XEV_END && !t->depth)
        return sbt__fail(SBT_EINVAL,
                         "export: track '%s': slice end at %" PRIu64 " ns without an open slice",
                         track_label(t), ts);
    int st = check_ids(em, ev);
    if (st < 0)
        return st;
    st = em->format == SBT_EXPORT_PERFETTO
             ? sbt__pf_event(em, t, type, ts, dur, ev, is_double, iv, dv)
             : sbt__json_event(em, t, type, ts, dur, ev, is_double, iv, dv);
    if (st < 0)
        return st;
    t->has_ts = 1;
    t->last_ts = type == SBT__XEV_COMPLETE ? ts + dur : ts;
    if (type == SBT__XEV_BEGIN)
        t->depth++;
    else if (type == SBT__XEV_END)
        t->depth--;
    return 0;
}

static const struct sbt_export_event no_event;

int sbt_export_slice_begin(sbt_export_emitter *em, uint64_t track, uint64_t ts,
                           const struct sbt_export_event *ev)
{
    return emit(em, track, SBT__XEV_BEGIN, ts, 0, ev ? ev : &no_event, 0, 0, 0);
}

int sbt_export_slice_end(sbt_export_emitter *em, uint64_t track, uint64_t ts)
{
    return emit(em, track, SBT__XEV_END, ts, 0, &no_event, 0, 0, 0);
}

int sbt_export_slice(sbt_export_emitter *em, uint64_t track, uint64_t ts, uint64_t dur,
                     const struct sbt_export_event *ev)
{
    return emit(em, track, SBT__XEV_COMPLETE, ts, dur, ev ? ev : &no_event, 0, 0, 0);
}

int sbt_export_instant(sbt_export_emitter *em, uint64_t track, uint64_t ts,
                       const struct sbt_export_event *ev)
{
    return emit(em, track, SBT__XEV_INSTANT, ts, 0, ev ? ev : &no_event, 0, 0, 0);
}

int sbt_export_counter(sbt_export_emitter *em, uint64_t track, uint64_t ts, int64_t value)
{
    return emit(em, track, SBT__XEV_COUNTER, ts, 0, &no_event, 0, value, 0);
}

int sbt_export_counter_double(sbt_export_emitter *em, uint64_t track, uint64_t ts, double value)
{
    return emit(em, track, SBT__XEV_COUNTER, ts, 0, &no_event, 1, 0, value);
}

/* ---- held counter changes: a binary heap ordered by (ts, track, order) --------------------- */

static int pend_less(const struct sbt__xpending *a, const struct sbt__xpending *b)
{
    if (a->ts != b->ts)
        return a->ts < b->ts;
    if (a->track != b->track)
        return a->track < b->track;
    return a->order < b->order;
}

static void heap_pop(sbt_export_emitter *em, struct sbt__xpending *top)
{
    struct sbt__xpending *h = em->heap;
    *top = h[0];
    struct sbt__xpending last = h[--em->n_heap];
    uint32_t i = 0, n = em->n_heap;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && pend_less(&h[c + 1], &h[c]))
            c++;
        if (!pend_less(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (n)
        h[i] = last;
}

/* Writes held changes with ts < before (all of them if all). Changes at one (ts, track) make
 * one sample. */
static int pending_drain(sbt_export_emitter *em, uint64_t before, int all)
{
    while (em->n_heap && (all || em->heap[0].ts < before || em->n_heap > em->max_pending)) {
        struct sbt__xpending p;
        heap_pop(em, &p);
        struct sbt__xtrack *t = &em->tracks[p.track];
        t->value += p.delta;
        if (em->n_heap && em->heap[0].ts == p.ts && em->heap[0].track == p.track)
            continue;
        uint64_t ts = p.ts;
        if (t->has_ts && ts < t->last_ts) {
            ts = t->last_ts;
            em->late++;
        }
        int st = emit(em, t->uuid, SBT__XEV_COUNTER, ts, 0, &no_event, 0, t->value, 0);
        if (st < 0)
            return st;
        em->n_samples++;
    }
    return 0;
}

int sbt_export_counter_add(sbt_export_emitter *em, uint64_t track, uint64_t ts, int64_t delta)
{
    if (em->failed)
        return em->failed;
    struct sbt__xtrack *t = track_find(em, track);
    if (!t || t->kind != SBT_EXPORT_TRACK_COUNTER)
        return sbt__fail(SBT_EINVAL, "export: counter change on track %#" PRIx64 " %s", track,
                         !t ? "that was not declared" : "which is not a counter track");
    if (em->n_heap == em->cap_heap) {
        uint32_t n = em->cap_heap ? em->cap_heap * 2 : 1024;
        struct sbt__xpending *h = sbt__realloc(em->heap, n * sizeof *h);
        if (!h)
            return sbt__fail(SBT_ENOMEM, "export: no memory for %u counter changes", n);
        em->heap = h, em->cap_heap = n;
    }
    struct sbt__xpending p = {
        .ts = ts, .track = (uint32_t)(t - em->tracks), .order = em->order++, .delta = delta};
    uint32_t i = em->n_heap++;
    while (i && pend_less(&p, &em->heap[(i - 1) / 2])) {
        em->heap[i] = em->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    em->heap[i] = p;
    if (em->n_heap > em->max_pending)
        return pending_drain(em, 0, 0);
    return 0;
}

int sbt_export_advance(sbt_export_emitter *em, uint64_t ts)
{
    if (em->failed)
        return em->failed;
    if (!em->n_heap || em->heap[0].ts >= ts)
        return 0;
    return pending_drain(em, ts, 0);
}

/* ========================================================================================== */
/* Layout of one trace                                                                        */
/* ========================================================================================== */

/* uuid kinds (sbt_export_uuid's kind argument) */
enum {
    UK_HOST = 1,     /* host process */
    UK_DEVICE = 2,   /* device process: a = device */
    UK_THREAD = 3,   /* API-call lanes: a = lane-group key, b = lane */
    UK_STREAM = 4,   /* stream lanes: a = lane-group key, b = lane */
    UK_MEM = 5,      /* memory allocated: a = device */
    UK_INFLIGHT = 6, /* bytes in flight: a = device */
    UK_TGROUP = 7,   /* --group-by thread: process of thread a */
};
/* flow kinds */
enum { FK_LAUNCH = 0, FK_SYNC = 1 };

/* The u64 -> u64 maps below are the project's (format/sbt_map.h). */
static int map_put(struct sbt_map *m, uint64_t key, uint64_t val)
{
    uint64_t *v = sbt_map_put(m, key, NULL);
    if (!v)
        return SBT_ENOMEM;
    *v = val;
    return 0;
}

/* One stream or host thread: the lanes its work spreads over. Lane 0 is the base track. */
struct lanes {
    uint64_t key;
    uint32_t n;
    uint64_t end[MAX_LANES];  /* output ns at which the lane's last event ended */
    uint64_t uuid[MAX_LANES]; /* 0 until declared */
    uint64_t parent;          /* process (or group) uuid */
    int is_api;               /* API calls of a host thread */
    int is_thread;            /* lane 0 is a thread track (a tid was free for it) */
    int32_t pid;
    int64_t tid;
    int32_t rank;
    char name[128];
};

/* An op held in the look-ahead ring. */
struct slot {
    struct sbt_op op;
    struct sbt_access acc[MAX_ACCESS_KEPT];
    uint64_t pos;       /* position in the cursor's order */
    uint64_t flow_in;   /* a wait: arrow from its record/signal, 0 = none */
    uint32_t n_waiters; /* a record/signal: arrows to the waits it released */
    uint64_t waiters[MAX_WAITERS];
};

struct layout {
    sbt_export_emitter *em;
    sbt_reader *r;
    struct sbt_export_opts o;
    struct sbt_export_stats *stats;
    uint64_t t_origin;

    struct lanes **lanes; /* by index; lane_idx maps key -> index */
    uint32_t n_lanes, cap_lanes;
    struct sbt_map lane_idx;
    struct sbt_map procs;     /* declared process-level uuids (value unused) */
    struct sbt_map resources; /* resource id -> device << 48 | size (live allocations) */
    struct sbt_map records;   /* event/semaphore object -> ring position of its latest record */
    struct sbt_map names;     /* string id or static name -> event-name id */
    struct sbt_map dims;      /* packed x,y,z -> interned "XxYxZ" id */
    uint32_t arg_id[16], cat_id[8];
    uint32_t *sid_name; /* string id -> event-name id, for string ids < n_sid */
    uint32_t n_sid;

    struct slot *ring;
    uint32_t ring_cap;
    uint64_t front, back; /* positions: [front, back) are held */

    /* watermark: suffix minimum of op-chunk t_min, by chunk seq_first */
    uint64_t *chunk_seq, *chunk_min;
    uint64_t n_chunks, chunk_at;

    char scratch[512];
};

static uint64_t out_ts(const struct layout *L, uint64_t t)
{
    uint64_t rel = t > L->t_origin ? t - L->t_origin : 0;
    if (L->o.ts_drift != 0) /* rel * (1 + drift): monotonic in rel since drift > -1 */
        rel += (uint64_t)llround((double)rel * L->o.ts_drift);
    int64_t v = (int64_t)rel + L->o.ts_offset;
    return v > 0 ? (uint64_t)v : 0;
}

static const char *str(const struct layout *L, uint32_t id)
{
    const char *s = id ? sbt_reader_string(L->r, id) : NULL;
    return s ? s : "";
}

static int32_t pid_of(const struct layout *L, uint32_t what)
{
    if (L->o.pid)
        return L->o.pid;                           /* one process for the whole trace */
    return (int32_t)(L->o.run * 10000 + 1 + what); /* host = 1, device d = 1 + d */
}

/* opts.pid: the one process of the trace, named by the label. 1 when it stands for the host
 * or device process asked for (*uuid set), 0 when there is no such mode, < 0 on error. */
static int proc_single(struct layout *L, uint64_t *uuid)
{
    if (!L->o.pid)
        return 0;
    *uuid = sbt_export_uuid(L->o.run, UK_HOST, 0, 0);
    if (sbt_map_get(&L->procs, *uuid))
        return 1;
    struct sbt_export_track t = {.uuid = *uuid,
                                 .kind = SBT_EXPORT_TRACK_PROCESS,
                                 .name = L->o.label ? L->o.label : "trace",
                                 .pid = L->o.pid,
                                 .rank = L->o.pid};
    int st = sbt_export_track(L->em, &t);
    if (st >= 0)
        st = map_put(&L->procs, *uuid, 1);
    L->stats->n_tracks += st >= 0;
    return st < 0 ? st : 1;
}

static int proc_host(struct layout *L, uint64_t *uuid)
{
    int one = proc_single(L, uuid);
    if (one)
        return one < 0 ? one : 0;
    *uuid = sbt_export_uuid(L->o.run, UK_HOST, 0, 0);
    if (sbt_map_get(&L->procs, *uuid))
        return 0;
    const char *host = sbt_reader_meta_get(L->r, "host");
    snprintf(L->scratch, sizeof L->scratch, "%s%shost%s%s", L->o.label ? L->o.label : "",
             L->o.label ? ": " : "", host && *host ? " " : "", host ? host : "");
    struct sbt_export_track t = {.uuid = *uuid,
                                 .kind = SBT_EXPORT_TRACK_PROCESS,
                                 .name = L->scratch,
                                 .pid = pid_of(L, 0),
                                 .rank = 1};
    int st = sbt_export_track(L->em, &t);
    if (st >= 0)
        st = map_put(&L->procs, *uuid, 1);
    L->stats->n_tracks += st >= 0;
    return st;
}

static int proc_device(struct layout *L, uint32_t dev, uint64_t *uuid)
{
    int one = proc_single(L, uuid);
    if (one)
        return one < 0 ? one : 0;
    *uuid = sbt_export_uuid(L->o.run, UK_DEVICE, dev, 0);
    if (sbt_map_get(&L->procs, *uuid))
        return 0;
    const struct sbt_device *d = sbt_reader_device(L->r, dev);
    const char *name = d ? str(L, d->name) : "";
    snprintf(L->scratch, sizeof L->scratch, "%s%sGPU %u%s%s (%s)", L->o.label ? L->o.label : "",
             L->o.label ? ": " : "", dev, *name ? ": " : "", name,
             d ? sbt_api_name(d->api) : "unknown device");
    struct sbt_export_track t = {.uuid = *uuid,
                                 .kind = SBT_EXPORT_TRACK_PROCESS,
                                 .name = L->scratch,
                                 .pid = pid_of(L, dev),
                                 .rank = 1 + (int32_t)dev};
    int st = sbt_export_track(L->em, &t);
    if (st >= 0)
        st = map_put(&L->procs, *uuid, 1);
    L->stats->n_tracks += st >= 0;
    return st;
}

/* --group-by thread: a process per host thread (thread 0 = work no host thread launched). */
static int proc_thread(struct layout *L, uint64_t thread, uint64_t *uuid)
{
    *uuid = sbt_export_uuid(L->o.run, UK_TGROUP, thread, 0);
    if (sbt_map_get(&L->procs, *uuid))
        return 0;
    if (thread)
        snprintf(L->scratch, sizeof L->scratch, "%s%sthread %" PRIu64, L->o.label ? L->o.label : "",
                 L->o.label ? ": " : "", thread);
    else
        snprintf(L->scratch, sizeof L->scratch, "%s%sGPU work without a host thread",
                 L->o.label ? L->o.label : "", L->o.label ? ": " : "");
    struct sbt_export_track t = {.uuid = *uuid,
                                 .kind = SBT_EXPORT_TRACK_PROCESS,
                                 .name = L->scratch,
                                 .pid = (int32_t)(L->o.run * 10000 + 5000 + (thread % 4000)),
                                 .rank = 1 + (int32_t)(thread % 4000)};
    int st = sbt_export_track(L->em, &t);
    if (st >= 0)
        st = map_put(&L->procs, *uuid, 1);
    L->stats->n_tracks += st >= 0;
    return st;
}

static int counter_track(struct layout *L, uint32_t kind, uint32_t dev, uint64_t *uuid)
{
    *uuid = sbt_export_uuid(L->o.run, kind, dev, 0);
    if (sbt_map_get(&L->procs, *uuid))
        return 0;
    uint64_t parent;
    int st = proc_device(L, dev, &parent);
    if (st < 0)
        return st;
    int ranged = L->o.range && (L->o.range->has_seq || L->o.range->has_time || L->o.range->stream);
    struct sbt_export_track t = {
        .uuid = *uuid,
        .parent = parent,
        .kind = SBT_EXPORT_TRACK_COUNTER,
        .unit = SBT_EXPORT_UNIT_BYTES,
        .rank = kind == UK_MEM ? 1000000 : 1000001,
        .name = kind == UK_MEM ? "memory allocated" : "bytes in flight",
        .description = kind == UK_MEM
                           ? (ranged ? "Bytes allocated on this device, counted from the start "
                                       "of the exported range (earlier allocations are not "
                                       "included)"
                                     : "Bytes allocated on this device (ALLOC minus FREE)")
                           : "Bytes of copies executing on this device"};
    st = sbt_export_track(L->em, &t);
    if (st >= 0)
        st = map_put(&L->procs, *uuid, 1);
    L->stats->n_tracks += st >= 0;
    return st;
}

static int lanes_get(struct layout *L, uint64_t key, struct lanes **out)
{
    uint64_t *v = sbt_map_get(&L->lane_idx, key);
    if (v) {
        *out = L->lanes[*v];
        return 1;
    }
    if (L->n_lanes == L->cap_lanes) {
        uint32_t n = L->cap_lanes ? L->cap_lanes * 2 : 16;
        struct lanes **a = sbt__realloc(L->lanes, n * sizeof *a);
        if (!a)
            return sbt__fail(SBT_ENOMEM, "export: no memory for %u tracks", n);
        L->lanes = a, L->cap_lanes = n;
    }
    struct lanes *g = sbt__calloc(1, sizeof *g);
    if (!g)
        return sbt__fail(SBT_ENOMEM, "export: no memory for a track");
    int st = map_put(&L->lane_idx, key, L->n_lanes);
    if (st < 0) {
        sbt__free(g);
        return st;
    }
    L->lanes[L->n_lanes++] = g;
    g->key = key;
    *out = g;
    return 0; /* new: the caller fills it in */
}

/* The API-call track of an op: its host thread, else the host-thread stream it runs on. */
static int api_lanes(struct layout *L, const struct sbt_op *op, const struct sbt_stream *s,
                     struct lanes **out)
{
    *out = NULL;
    uint64_t key;
    if (op->thread)
        key = op->thread;
    else if (s && s->kind == SBT_STREAM_HOST_THREAD)
        key = 1ull << 32 | s->id;
    else
        return 0;
    struct lanes *g;
    int st = lanes_get(L, key, &g);
    if (st < 0)
        return st;
    if (!st) {
        if (L->o.group_by == SBT_EXPORT_GROUP_THREAD) {
            st = proc_thread(L, op->thread ? op->thread : key, &g->parent);
            g->pid = (int32_t)(L->o.run * 10000 + 5000 + ((op->thread ? op->thread : key) % 4000));
        } else {
            st = proc_host(L, &g->parent);
            g->pid = pid_of(L, 0);
        }
        if (st < 0)
            return st;
        /* tids: pid * 1000 + thread; threads numbered 500 and up (or streams, when calls
         * come from host-thread streams) show as plain tracks instead of colliding */
        uint64_t num = key & 0xffffffffu;
        g->is_api = 1;
        g->is_thread = num < 500;
        g->tid = (int64_t)g->pid * 1000 + (int64_t)(key >> 32 ? 500 + num % 500 : num);
        g->rank = (int32_t)(num % 100000) + (key >> 32 ? 100000 : 0);
        if (op->thread)
            snprintf(g->name, sizeof g->name, "thread %u API calls", op->thread);
        else
            snprintf(g->name, sizeof g->name, "%s (stream %u) API calls",
                     s->name ? str(L, s->name) : "host thread", s->id);
    }
    *out = g;
    return 0;
}

static const char *stream_kind_name(uint32_t kind)
{
    return kind == SBT_STREAM_QUEUE ? "queue" : kind == SBT_STREAM_CUDA ? "stream" : "host";
}

/* The track of the device-side work of an op on stream s. */
static int stream_lanes(struct layout *L, const struct sbt_op *op, const struct sbt_stream *s,
                        struct lanes **out)
{
    int by_thread = L->o.group_by == SBT_EXPORT_GROUP_THREAD;
    uint64_t key = 2ull << 60 | (by_thread ? (uint64_t)op->thread << 32 : 0) | s->id;
    struct lanes *g;
    int st = lanes_get(L, key, &g);
    if (st < 0)
        return st;
    if (!st) {
        const char *name = str(L, s->name);
        if (by_thread) {
            st = proc_thread(L, op->thread, &g->parent);
            snprintf(g->name, sizeof g->name, "GPU %u %s %u%s%s", s->device,
                     stream_kind_name(s->kind), s->id, *name ? ": " : "", name);
        } else {
            st = proc_device(L, s->device, &g->parent);
            snprintf(g->name, sizeof g->name, "%s %u%s%s", stream_kind_name(s->kind), s->id,
                     *name ? ": " : "", name);
        }
        if (st < 0)
            return st;
        g->rank = (int32_t)s->id;
    }
    *out = g;
    return 0;
}

/* Picks the first lane free at [*b, *e) (declaring it on first use) and marks it busy to *e.
 * When every one of MAX_LANES lanes is busy, the event moves to the lane that frees first and
 * starts when it frees (counted in stats->n_clamped). */
static int lane_pick(struct layout *L, struct lanes *g, uint64_t *b, uint64_t *e, uint64_t *uuid)
{
    uint32_t k = 0;
    while (k < g->n && g->end[k] > *b)
        k++;
    if (k == MAX_LANES) {
        k = 0;
        for (uint32_t i = 1; i < g->n; i++)
            if (g->end[i] < g->end[k])
                k = i;
        uint64_t dur = *e - *b;
        *b = g->end[k];
        *e = *b + dur;
        L->stats->n_clamped++;
    }
    if (k == g->n) {
        int thread_track = g->is_thread && k == 0;
        uint64_t u = sbt_export_uuid(L->o.run, g->is_api ? UK_THREAD : UK_STREAM, g->key, k);
        struct sbt_export_track t = {.uuid = u,
                                     .parent = g->parent,
                                     .name = g->name,
                                     .rank = g->rank,
                                     .kind = thread_track ? SBT_EXPORT_TRACK_THREAD
                                                          : SBT_EXPORT_TRACK_SLICES,
                                     .pid = g->pid,
                                     .tid = g->tid};
        if (k > 0 && g->is_api)
            t.description = "API calls that overlap those on the thread track (a lane)";
        int st = sbt_export_track(L->em, &t);
        if (st < 0)
            return st;
        g->uuid[k] = u;
        g->end[k] = 0;
        g->n++;
        L->stats->n_tracks++;
        if (g->n > L->stats->max_lanes)
            L->stats->max_lanes = g->n;
    }
    g->end[k] = *e;
    *uuid = g->uuid[k];
    return 0;
}

static const char *copy_name(uint32_t dir)
{
    switch (dir) {
    case SBT_COPY_H2D:
        return "copy H2D";
    case SBT_COPY_D2H:
        return "copy D2H";
    case SBT_COPY_D2D:
        return "copy D2D";
    case SBT_COPY_H2H:
        return "copy H2H";
    default:
        return "copy";
    }
}

static const char *api_default_name(const struct sbt_op *op)
{
    switch (op->kind) {
    case SBT_OP_KERNEL:
        return "launch";
    case SBT_OP_COPY:
        return copy_name(op->subkind);
    case SBT_OP_HOST_WRITE:
        return "host write";
    case SBT_OP_EVENT_RECORD:
        return "event record";
    case SBT_OP_EVENT_WAIT:
        return "event wait";
    case SBT_OP_STREAM_SYNC:
        return "stream sync";
    case SBT_OP_DEVICE_SYNC:
        return "device sync";
    case SBT_OP_HOST_READ:
        return "host read";
    case SBT_OP_STREAM_CREATE:
        return "stream create";
    case SBT_OP_STREAM_DESTROY:
        return "stream destroy";
    default:
        return sbt_op_kind_name(op->kind);
    }
}

/* Does the op show on its stream's track? 1 slice, 2 instant, 0 no. */
static int device_part(const struct sbt_op *op, const struct sbt_stream *s)
{
    if (!s || (s->kind != SBT_STREAM_QUEUE && s->kind != SBT_STREAM_CUDA))
        return 0;
    switch (op->kind) {
    case SBT_OP_KERNEL:
    case SBT_OP_COPY:
    case SBT_OP_FILL:
        return 1;
    case SBT_OP_EVENT_RECORD:
    case SBT_OP_EVENT_WAIT:
    case SBT_OP_SIGNAL:
    case SBT_OP_WAIT:
    case SBT_OP_SUBMIT:
        return 2;
    case SBT_OP_MARKER:
        return op->thread ? 0 : 2;
    default:
        return 0;
    }
}

static int is_record(uint32_t kind)
{
    return kind == SBT_OP_EVENT_RECORD || kind == SBT_OP_SIGNAL;
}

static int is_wait(uint32_t kind)
{
    return kind == SBT_OP_EVENT_WAIT || kind == SBT_OP_WAIT;
}

/* Key of the synchronisation object an op records or waits on. */
static uint64_t sync_key(const struct sbt_op *op)
{
    int sem = op->kind == SBT_OP_SIGNAL || op->kind == SBT_OP_WAIT;
    return mix64((uint64_t)sem << 63 ^ op->obj);
}

/* ---- strings: interned once per trace, by id ---------------------------------------------- */

static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* Event-name id for a key (sbt string id, or a static string's address). */
static uint32_t name_id(struct layout *L, uint64_t key, const char *s)
{
    uint64_t *v = sbt_map_get(&L->names, key);
    if (v)
        return (uint32_t)*v;
    uint32_t id = sbt_export_intern(L->em, SBT_EXPORT_STR_NAME, s);
    if (id && map_put(&L->names, key, id) < 0)
        return 0;
    return id;
}

static uint32_t name_of_string(struct layout *L, uint32_t sid, const char **s)
{
    *s = str(L, sid);
    if (sid < L->n_sid) { /* small string tables: an array instead of the hash map */
        if (!L->sid_name[sid])
            L->sid_name[sid] = sbt_export_intern(L->em, SBT_EXPORT_STR_NAME, *s);
        return L->sid_name[sid];
    }
    return name_id(L, 1ull << 62 | sid, *s);
}

static uint32_t name_of_static(struct layout *L, const char *s)
{
    return name_id(L, 2ull << 62 | ((uintptr_t)s & ((1ull << 62) - 1)), s);
}

/* "128x1x1" as an interned value id (0: use buf, which holds the string). */
static uint32_t dims_id(struct layout *L, const uint32_t d[3], char *buf)
{
    int small = d[0] < 1u << 21 && d[1] < 1u << 21 && d[2] < 1u << 21;
    uint64_t key = (uint64_t)d[0] | (uint64_t)d[1] << 21 | (uint64_t)d[2] << 42;
    uint64_t *v = small ? sbt_map_get(&L->dims, key) : NULL;
    if (v)
        return (uint32_t)*v;
    char *p = put_u64(buf, d[0]);
    *p++ = 'x';
    p = put_u64(p, d[1]);
    *p++ = 'x';
    *put_u64(p, d[2]) = 0;
    uint32_t id = small ? sbt_export_intern(L->em, SBT_EXPORT_STR_VALUE, buf) : 0;
    if (id && map_put(&L->dims, key, id) < 0)
        return 0;
    return id;
}

/* "r 3,5 w 7": resource ids an op reads and writes (interned: they repeat in loops). */
static const char *resource_list(struct layout *L, const struct slot *sl, uint32_t n_total)
{
    char *p = L->scratch, *end = L->scratch + sizeof L->scratch - 48;
    uint32_t n = n_total < MAX_ACCESS_KEPT ? n_total : MAX_ACCESS_KEPT;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t want = pass == 0 ? SBT_ACCESS_READ : SBT_ACCESS_WRITE;
        int first = 1;
        for (uint32_t i = 0; i < n && p < end; i++) {
            if (!(sl->acc[i].mode & want))
                continue;
            if (first) {
                if (p != L->scratch)
                    *p++ = ' ';
                *p++ = pass ? 'w' : 'r';
                *p++ = ' ';
            } else {
                *p++ = ',';
            }
            p = put_u64(p, sl->acc[i].resource);
            first = 0;
        }
    }
    if (n_total > n) {
        memcpy(p, " (+", 3);
        p = put_u64(p + 3, n_total - n);
        memcpy(p, " more)", 6);
        p += 6;
    }
    *p = 0;
    return L->scratch;
}

/* arg names and categories, interned when the layout starts */
enum {
    A_SEQ,
    A_GRID,
    A_BLOCK,
    A_SHMEM,
    A_BYTES,
    A_RESOURCE,
    A_OBJECT,
    A_VALUE,
    A_RESOURCES,
    A_DIGEST,
    A_ERROR,
    A_UNSUPPORTED,
    A__COUNT
};
static const char *const arg_names[A__COUNT] = {"seq",       "grid",     "block",  "shmem",
                                                "bytes",     "resource", "object", "value",
                                                "resources", "digest",   "error",  "unsupported"};
enum { C_API, C_KERNEL, C_MEMORY, C_ALLOC, C_MARKER, C_SYNC, C__COUNT };
static const char *const cat_names[C__COUNT] = {"api",   "kernel", "memory",
                                                "alloc", "marker", "sync"};

static int category(uint32_t kind)
{
    switch (kind) {
    case SBT_OP_KERNEL:
        return C_KERNEL;
    case SBT_OP_COPY:
    case SBT_OP_FILL:
    case SBT_OP_HOST_WRITE:
    case SBT_OP_HOST_READ:
        return C_MEMORY;
    case SBT_OP_ALLOC:
    case SBT_OP_FREE:
        return C_ALLOC;
    case SBT_OP_MARKER:
        return C_MARKER;
    default:
        return C_SYNC;
    }
}

static struct sbt_export_arg arg_u(const struct layout *L, int a, uint32_t type, uint64_t u)
{
    return (struct sbt_export_arg){
        .name = arg_names[a], .name_id = L->arg_id[a], .type = type, .v.u = u};
}

static struct sbt_export_arg arg_s(const struct layout *L, int a, uint32_t type, const char *s)
{
    return (struct sbt_export_arg){
        .name = arg_names[a], .name_id = L->arg_id[a], .type = type, .v.s = s};
}

static struct sbt_export_arg arg_dims(struct layout *L, int a, const uint32_t d[3], char *buf)
{
    uint32_t id = dims_id(L, d, buf);
    struct sbt_export_arg r = arg_s(L, a, SBT_EXPORT_ARG_ISTR, buf);
    if (id)
        r.type = SBT_EXPORT_ARG_VALUE_ID, r.v.id = id;
    return r;
}

static int do_op(struct layout *L, struct slot *sl)
{
    const struct sbt_op *op = &sl->op;
    sbt_export_emitter *em = L->em;
    const struct sbt_stream *s = op->stream ? sbt_reader_stream(L->r, op->stream) : NULL;
    uint64_t hb = out_ts(L, op->host_begin);
    uint64_t he = op->host_end > op->host_begin ? out_ts(L, op->host_end) : hb;
    int has_dev = (op->flags & SBT_OPF_DEV_TIME) != 0;
    uint64_t db = has_dev ? out_ts(L, op->dev_begin) : hb;
    uint64_t de = has_dev ? (op->dev_end > op->dev_begin ? out_ts(L, op->dev_end) : db) : he;
    int dev = device_part(op, s);
    int st;

    struct lanes *api;
    if ((st = api_lanes(L, op, s, &api)) < 0)
        return st;

    /* args of the device-side event (or of the API call when there is none) */
    struct sbt_export_arg args[A__COUNT];
    uint32_t n = 0;
    char geom[2][48], digest[33];
    args[n++] = arg_u(L, A_SEQ, SBT_EXPORT_ARG_UINT, op->seq);
    if (!L->o.no_args) {
        if ((op->flags & SBT_OPF_GEOM) && op->kind == SBT_OP_KERNEL) {
            args[n++] = arg_dims(L, A_GRID, op->grid, geom[0]);
            args[n++] = arg_dims(L, A_BLOCK, op->block, geom[1]);
            if (op->shmem)
                args[n++] = arg_u(L, A_SHMEM, SBT_EXPORT_ARG_UINT, op->shmem);
        }
        if (op->flags & SBT_OPF_BYTES)
            args[n++] = arg_u(L, A_BYTES, SBT_EXPORT_ARG_UINT, op->bytes);
        if (op->flags & SBT_OPF_RESOURCE)
            args[n++] = arg_u(L, A_RESOURCE, SBT_EXPORT_ARG_UINT, op->resource);
        if (op->flags & SBT_OPF_OBJ) {
            args[n++] = arg_u(L, A_OBJECT, SBT_EXPORT_ARG_UINT, op->obj);
            if (op->value || op->kind == SBT_OP_FILL)
                args[n++] = arg_u(
                    L, A_VALUE, op->kind == SBT_OP_FILL ? SBT_EXPORT_ARG_HEX : SBT_EXPORT_ARG_UINT,
                    op->value);
        }
        if (op->n_access)
            args[n++] =
                arg_s(L, A_RESOURCES, SBT_EXPORT_ARG_STR, resource_list(L, sl, op->n_access));
        if ((op->flags & SBT_OPF_DIGEST) && !sbt_hash_is_zero(op->digest))
            args[n++] = arg_s(L, A_DIGEST, SBT_EXPORT_ARG_STR, sbt_hash_hex(op->digest, digest));
        if ((op->flags & SBT_OPF_ERROR) && op->error)
            args[n++] = arg_s(L, A_ERROR, SBT_EXPORT_ARG_ISTR, str(L, op->error));
        if (op->flags & SBT_OPF_UNSUPPORTED)
            args[n++] = arg_u(L, A_UNSUPPORTED, SBT_EXPORT_ARG_BOOL, 1);
    }

    uint64_t launch = sbt_export_flow_id(L->o.run, FK_LAUNCH, op->seq);
    /* an arrow's direction is read from its ends' times: none from a call to work that
     * (by a skewed clock) started before it */
    int link = api && dev == 1 && db >= hb;

    /* the API call on its host thread */
    if (api) {
        uint64_t track;
        if ((st = lane_pick(L, api, &hb, &he, &track)) < 0)
            return st;
        struct sbt_export_event ev = {.category = cat_names[C_API],
                                      .category_id = L->cat_id[C_API]};
        if (op->name)
            ev.name_id = name_of_string(L, op->name, &ev.name);
        else
            ev.name_id = name_of_static(L, ev.name = api_default_name(op));
        if (link)
            ev.flow_out = &launch, ev.n_flow_out = 1;
        else
            ev.args = args, ev.n_args = n;
        if (op->kind == SBT_OP_MARKER && !dev) {
            if ((st = sbt_export_instant(em, track, hb, &ev)) < 0)
                return st;
            L->stats->n_instants++;
        } else {
            if ((st = sbt_export_slice(em, track, hb, he - hb, &ev)) < 0)
                return st;
            L->stats->n_slices++;
        }
    }

    /* the work on its stream */
    if (dev) {
        struct lanes *g;
        uint64_t track;
        if ((st = stream_lanes(L, op, s, &g)) < 0 || (st = lane_pick(L, g, &db, &de, &track)) < 0)
            return st;
        int c = category(op->kind);
        struct sbt_export_event ev = {
            .category = cat_names[c], .category_id = L->cat_id[c], .args = args, .n_args = n};
        const struct sbt_kernel *k = op->kind == SBT_OP_KERNEL && (op->flags & SBT_OPF_KERNEL)
                                         ? sbt_reader_kernel(L->r, op->kernel)
                                         : NULL;
        if (k && k->name)
            ev.name_id = name_of_string(L, k->name, &ev.name);
        else if (op->name && (op->kind == SBT_OP_KERNEL || op->kind == SBT_OP_MARKER))
            ev.name_id = name_of_string(L, op->name, &ev.name);
        else
            ev.name_id = name_of_static(
                L, ev.name = op->kind == SBT_OP_KERNEL ? "kernel" : api_default_name(op));
        if (link)
            ev.flow_in = &launch, ev.n_flow_in = 1;
        if (is_record(op->kind) && sl->n_waiters)
            ev.flow_out = sl->waiters, ev.n_flow_out = sl->n_waiters;
        if (is_wait(op->kind) && sl->flow_in)
            ev.flow_in = &sl->flow_in, ev.n_flow_in = 1;
        if (dev == 1) {
            st = sbt_export_slice(em, track, db, de - db, &ev);
            L->stats->n_slices++;
        } else {
            st = sbt_export_instant(em, track, db, &ev);
            L->stats->n_instants++;
        }
        if (st < 0)
            return st;
        L->stats->n_flows += link + (is_record(op->kind) ? sl->n_waiters : 0);
    }

    /* counters: memory allocated, bytes in flight */
    if (op->kind == SBT_OP_ALLOC && (op->flags & SBT_OPF_RESOURCE)) {
        /* the device the memory lives on: obj when it names one (as `reprise gen` writes),
         * else the device of the stream the call was made on */
        uint32_t n_dev, devid = s ? s->device : 0;
        sbt_reader_devices(L->r, &n_dev);
        if ((op->flags & SBT_OPF_OBJ) && op->obj >= 1 && op->obj <= n_dev)
            devid = (uint32_t)op->obj;
        uint64_t sz = op->flags & SBT_OPF_BYTES ? op->bytes : 0, u;
        if (sz >= 1ull << 48)
            sz = (1ull << 48) - 1;
        if (devid && sz) {
            if ((st = counter_track(L, UK_MEM, devid, &u)) < 0 ||
                (st = map_put(&L->resources, op->resource, (uint64_t)devid << 48 | sz)) < 0 ||
                (st = sbt_export_counter_add(em, u, has_dev ? de : he, (int64_t)sz)) < 0)
                return st;
        }
    } else if (op->kind == SBT_OP_FREE && (op->flags & SBT_OPF_RESOURCE)) {
        uint64_t *v = sbt_map_get(&L->resources, op->resource), u;
        if (!v) {
            L->stats->n_frees_unknown++;
        } else {
            uint32_t devid = (uint32_t)(*v >> 48);
            int64_t sz = (int64_t)(*v & ((1ull << 48) - 1));
            sbt_map_del(&L->resources, op->resource);
            if ((st = counter_track(L, UK_MEM, devid, &u)) < 0 ||
                (st = sbt_export_counter_add(em, u, has_dev ? db : hb, -sz)) < 0)
                return st;
        }
    } else if (op->kind == SBT_OP_COPY && dev == 1 && (op->flags & SBT_OPF_BYTES) && op->bytes) {
        uint64_t u;
        int64_t b = op->bytes >= 1ull << 62 ? INT64_C(1) << 62 : (int64_t)op->bytes;
        if ((st = counter_track(L, UK_INFLIGHT, s->device, &u)) < 0 ||
            (st = sbt_export_counter_add(em, u, db, b)) < 0 ||
            (st = sbt_export_counter_add(em, u, de, -b)) < 0)
            return st;
    }
    return 0;
}

/* ---- look-ahead ring ---------------------------------------------------------------------- */

/* When a record/wait instant is drawn (as do_op places it). */
static uint64_t sync_time(const struct sbt_op *op)
{
    return op->flags & SBT_OPF_DEV_TIME ? op->dev_begin : op->host_begin;
}

static int ring_push(struct layout *L, const struct sbt_op *op)
{
    struct slot *sl = &L->ring[L->back % L->ring_cap];
    sl->op = *op;
    uint32_t na = op->n_access < MAX_ACCESS_KEPT ? op->n_access : MAX_ACCESS_KEPT;
    if (na)
        memcpy(sl->acc, op->access, na * sizeof *sl->acc);
    sl->op.access = sl->acc;
    sl->op.payload = (struct sbt_ext){0};
    sl->pos = L->back;
    sl->flow_in = 0;
    sl->n_waiters = 0;
    if ((op->flags & SBT_OPF_OBJ) && (is_record(op->kind) || is_wait(op->kind))) {
        const struct sbt_stream *s = op->stream ? sbt_reader_stream(L->r, op->stream) : NULL;
        if (device_part(op, s) == 2) {
            uint64_t key = sync_key(op);
            if (is_record(op->kind)) {
                int st = map_put(&L->records, key, L->back);
                if (st < 0)
                    return st;
            } else {
                uint64_t *rec = sbt_map_get(&L->records, key);
                struct slot *rs = rec && *rec >= L->front ? &L->ring[*rec % L->ring_cap] : NULL;
                if (rs && rs->n_waiters < MAX_WAITERS && sync_time(op) >= sync_time(&rs->op)) {
                    sl->flow_in = sbt_export_flow_id(L->o.run, FK_SYNC, op->seq);
                    rs->waiters[rs->n_waiters++] = sl->flow_in;
                } else {
                    L->stats->n_waits_unlinked++;
                }
            }
        }
    }
    L->back++;
    return 0;
}

static int ring_pop(struct layout *L)
{
    struct slot *sl = &L->ring[L->front % L->ring_cap];
    const struct sbt_op *op = &sl->op;
    /* the watermark: no op not yet processed starts before the smallest t_min of the chunks
     * from this op's on */
    while (L->chunk_at + 1 < L->n_chunks && L->chunk_seq[L->chunk_at + 1] <= op->seq)
        L->chunk_at++;
    int st = do_op(L, sl);
    if (st >= 0 && L->n_chunks)
        st = sbt_export_advance(L->em, out_ts(L, L->chunk_min[L->chunk_at]));
    if (st >= 0 && (op->flags & SBT_OPF_OBJ) && is_record(op->kind)) {
        uint64_t key = sync_key(op), *rec = sbt_map_get(&L->records, key);
        if (rec && *rec == L->front)
            sbt_map_del(&L->records, key); /* no later wait can link to it now */
    }
    L->front++;
    return st;
}

static int watermark_init(struct layout *L)
{
    uint64_t n;
    const struct sbt_chunk_info *c = sbt_reader_chunks(L->r, &n);
    uint64_t k = 0;
    for (uint64_t i = 0; i < n; i++)
        k += (c[i].content & SBT_CHUNK_OPS) && c[i].n_ops;
    if (!k)
        return 0;
    L->chunk_seq = sbt__malloc(k * sizeof *L->chunk_seq);
    L->chunk_min = sbt__malloc(k * sizeof *L->chunk_min);
    if (!L->chunk_seq || !L->chunk_min)
        return sbt__fail(SBT_ENOMEM, "export: no memory for the index of %" PRIu64 " chunks", k);
    uint64_t j = 0;
    for (uint64_t i = 0; i < n; i++)
        if ((c[i].content & SBT_CHUNK_OPS) && c[i].n_ops)
            L->chunk_seq[j] = c[i].seq_first, L->chunk_min[j++] = c[i].t_min;
    for (uint64_t i = k - 1; i-- > 0;) /* suffix minimum */
        if (L->chunk_min[i + 1] < L->chunk_min[i])
            L->chunk_min[i] = L->chunk_min[i + 1];
    L->n_chunks = k;
    return 0;
}

int sbt_export_trace(sbt_export_emitter *em, sbt_reader *r, const struct sbt_export_opts *opts,
                     struct sbt_export_stats *stats)
{
    struct sbt_export_stats dummy;
    if (!stats)
        stats = &dummy;
    memset(stats, 0, sizeof *stats);
    if (!em || !r)
        return sbt__fail(SBT_EINVAL, "export: no %s", !em ? "emitter" : "reader");
    struct layout L = {.em = em, .r = r, .stats = stats};
    uint64_t samples0 = em->n_samples, late0 = em->late;
    if (opts)
        memcpy(&L.o, opts, opts->sz < sizeof L.o ? opts->sz : sizeof L.o);
    L.o.sz = sizeof L.o;
    if (L.o.run > SBT_EXPORT_MAX_RUN)
        return sbt__fail(SBT_EINVAL, "export: run %u > %u", L.o.run, SBT_EXPORT_MAX_RUN);
    if (L.o.pid < 0 || (L.o.pid && L.o.group_by != SBT_EXPORT_GROUP_DEVICE))
        return sbt__fail(SBT_EINVAL,
                         "export: pid %d (one process per trace needs pid > 0 and "
                         "the device,stream grouping)",
                         (int)L.o.pid);
    if (!(L.o.ts_drift > -0.5 && L.o.ts_drift < 0.5))
        return sbt__fail(SBT_EINVAL, "export: clock drift %g out of (-0.5, 0.5)", L.o.ts_drift);
    if (L.o.group_by > SBT_EXPORT_GROUP_THREAD)
        return sbt__fail(SBT_EINVAL, "export: unknown grouping %u", L.o.group_by);
    L.ring_cap = L.o.flow_window ? L.o.flow_window : DEFAULT_WINDOW;
    const struct sbt_info *info = sbt_reader_info(r);
    L.t_origin = info->t_min;
    uint64_t total = info->n_ops;
    if (L.o.range && L.o.range->has_seq && L.o.range->seq_end > L.o.range->seq_begin &&
        L.o.range->seq_end - L.o.range->seq_begin < total)
        total = L.o.range->seq_end - L.o.range->seq_begin;

    for (int i = 0; i < A__COUNT; i++)
        L.arg_id[i] = sbt_export_intern(em, SBT_EXPORT_STR_ARG, arg_names[i]);
    for (int i = 0; i < C__COUNT; i++)
        L.cat_id[i] = sbt_export_intern(em, SBT_EXPORT_STR_CATEGORY, cat_names[i]);
    uint32_t n_strings = sbt_reader_n_strings(r);
    if (n_strings < (1u << 22) && (L.sid_name = sbt__calloc((size_t)n_strings + 1, 4)))
        L.n_sid = n_strings + 1;
    sbt_cursor *cur = NULL;
    int st = watermark_init(&L);
    if (st >= 0 && !(L.ring = sbt__malloc((size_t)L.ring_cap * sizeof *L.ring)))
        st = sbt__fail(SBT_ENOMEM, "export: no memory for a window of %u ops", L.ring_cap);
    if (st >= 0)
        st = sbt_cursor_open(r, L.o.range, &cur);
    while (st >= 0) {
        const struct sbt_op *op;
        int got = sbt_cursor_next(cur, &op);
        if (got < 0)
            st = got;
        if (got <= 0)
            break;
        stats->n_ops++;
        if (L.back - L.front == L.ring_cap && (st = ring_pop(&L)) < 0)
            break;
        st = ring_push(&L, op);
        if (L.o.progress && !(stats->n_ops & 0xffff))
            L.o.progress(L.o.progress_ctx, stats->n_ops, total);
    }
    while (st >= 0 && L.front < L.back)
        st = ring_pop(&L);
    if (st >= 0)
        st = pending_drain(em, 0, 1);
    if (L.o.progress && st >= 0)
        L.o.progress(L.o.progress_ctx, stats->n_ops, total);
    stats->n_counter_samples = em->n_samples - samples0;
    stats->n_late = em->late - late0;
    sbt_cursor_close(cur);
    for (uint32_t i = 0; i < L.n_lanes; i++)
        sbt__free(L.lanes[i]);
    sbt__free(L.lanes);
    sbt_map_free(&L.lane_idx);
    sbt_map_free(&L.procs);
    sbt_map_free(&L.resources);
    sbt_map_free(&L.records);
    sbt_map_free(&L.names);
    sbt__free(L.sid_name);
    sbt_map_free(&L.dims);
    sbt__free(L.ring);
    sbt__free(L.chunk_seq);
    sbt__free(L.chunk_min);
    return st < 0 ? st : 0;
}

int sbt_export_file(sbt_reader *r, FILE *f, int format, const struct sbt_export_opts *opts,
                    struct sbt_export_stats *stats)
{
    sbt_export_emitter *em;
    int st = sbt_export_emitter_open(f, format, NULL, &em);
    if (st < 0)
        return st;
    st = sbt_export_trace(em, r, opts, stats);
    int st2 = sbt_export_emitter_close(em);
    return st < 0 ? st : st2;
}

uint64_t sbt_export_estimate_bytes(const sbt_reader *r, const struct sbt_range *range, int format)
{
    uint64_t n;
    const struct sbt_chunk_info *c = sbt_reader_chunks(r, &n);
    uint64_t ops = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (!(c[i].content & SBT_CHUNK_OPS) || !c[i].n_ops)
            continue;
        uint64_t lo = c[i].seq_first, hi = lo + c[i].n_ops, k = c[i].n_ops;
        if (range && range->has_time && (c[i].t_max < range->t_begin || c[i].t_min >= range->t_end))
            continue;
        if (range && range->has_seq) {
            uint64_t a = lo > range->seq_begin ? lo : range->seq_begin;
            uint64_t b = hi < range->seq_end ? hi : range->seq_end;
            k = b > a ? b - a : 0;
        }
        ops += k;
    }
    /* measured on `reprise gen` traces (bench/RESULTS.md "Export"): about 140 and 560 */
    return ops * (format == SBT_EXPORT_JSON ? 560 : 140);
}
