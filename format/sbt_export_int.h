/*
 * format/sbt_export_int.h — internals of the exporters (format/sbt_export.c: emitter core and
 * trace layout; sbt_perfetto.c: protobuf backend; sbt_json.c: JSON backend). Kept apart from
 * sbt_int.h so that the reader/writer internals and the exporters change independently; only
 * these three files include it.
 *
 * The core validates every call (track known, timestamps in order, slices balanced), keeps the
 * track table, the interned strings and the held counter changes, and owns the output buffer;
 * a backend turns one checked event into bytes.
 */
#ifndef REPRISE_SBT_EXPORT_INT_H
#define REPRISE_SBT_EXPORT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format/sbt.h"
#include "format/sbt_export.h"
#include "format/sbt_map.h"

#define SBT__XCACHE 64

/* Kinds of interned strings; each is its own iid space in Perfetto's InternedData. */
enum sbt__xi_kind {
    SBT__XI_NAME = 0,  /* InternedData.event_names */
    SBT__XI_CAT = 1,   /* InternedData.event_categories */
    SBT__XI_ARG = 2,   /* InternedData.debug_annotation_names */
    SBT__XI_VALUE = 3, /* InternedData.debug_annotation_string_values */
    SBT__XI__COUNT
};

/* Event types, numbered as perfetto.protos.TrackEvent.Type. */
enum sbt__xev_type {
    SBT__XEV_BEGIN = 1,
    SBT__XEV_END = 2,
    SBT__XEV_INSTANT = 3,
    SBT__XEV_COUNTER = 4,
    SBT__XEV_COMPLETE = 100, /* begin + end at once (JSON "X") */
};

struct sbt__xtrack {
    uint64_t uuid;
    uint32_t kind;   /* enum sbt_export_track_kind */
    uint32_t parent; /* index + 1 of the parent track, 0 = none */
    uint32_t seq;    /* Perfetto: packet sequence id, 0 until the first event */
    uint32_t depth;  /* open slices (begin without end) */
    uint64_t last_ts;
    int has_ts;
    int32_t pid;   /* the process this track shows in (JSON) */
    int64_t tid;   /* JSON row of a thread or slice track */
    char *name;    /* JSON: counter tracks are named on every sample */
    int64_t value; /* running value of counter_add() changes */
    /* Perfetto: iids defined on this track's sequence, a bitset per kind, grown on demand */
    uint64_t *defined[SBT__XI__COUNT];
    uint32_t n_defined[SBT__XI__COUNT]; /* words */
};

struct sbt__xintern_slot {
    uint64_t hash;
    uint32_t iid; /* 0 = empty */
    uint32_t len;
    char *str; /* valid UTF-8 copy */
};

struct sbt__xintern {
    struct sbt__xintern_slot *slots;
    uint32_t cap, n;      /* open addressing, cap a power of two */
    char **by_iid;        /* string of iid i at [i - 1] */
    uint32_t *len_by_iid; /* its length */
};

struct sbt__xpending {
    uint64_t ts;
    uint32_t track; /* index */
    uint32_t pad;
    uint64_t order; /* insertion number: ties stay in call order */
    int64_t delta;
};

struct sbt_export_emitter {
    FILE *f;
    int format;
    int failed; /* sticky status of the first write error */
    uint8_t *buf;
    size_t len, cap;
    uint64_t flushed; /* bytes handed to fwrite */

    struct sbt__xtrack *tracks;
    uint32_t n_tracks, cap_tracks;
    struct sbt_map map; /* uuid -> index + 1 */
    uint32_t cache[64]; /* uuid -> index + 1 of recent lookups (SBT__XCACHE entries) */

    uint32_t n_seq;
    uint32_t max_interned;
    struct sbt__xintern intern[SBT__XI__COUNT];

    struct sbt__xpending *heap;
    uint32_t n_heap, cap_heap, max_pending;
    uint64_t order, late;
    uint64_t n_samples; /* counter samples written from held changes */

    int json_first; /* no event written yet */
};

/* Core services for the backends. */
int sbt__x_reserve(sbt_export_emitter *em, size_t n); /* room for n more bytes in buf */
int sbt__x_flush(sbt_export_emitter *em);
/* iid of s in kind (adding it), 0 when the table is full (write s inline then). */
uint32_t sbt__x_intern(sbt_export_emitter *em, int kind, const char *s);
/* The string of an event field: id's interned copy when id > 0, else s. */
const char *sbt__x_string(const sbt_export_emitter *em, int kind, uint32_t id, const char *s);
/* Its length in bytes (0 for NULL). */
size_t sbt__x_strlen(const sbt_export_emitter *em, int kind, uint32_t id, const char *s);
/* 1 if iid is already defined on the track's sequence; else marks it and returns 0. */
int sbt__x_define(sbt_export_emitter *em, struct sbt__xtrack *t, int kind, uint32_t iid);
/* Length of the valid UTF-8 sequence at s[0..len) (1 to 4), 0 if s[0] starts none. */
size_t sbt__x_utf8_seq(const uint8_t *s, size_t len);
/* Length of s as written: invalid UTF-8 bytes become U+FFFD (3 bytes). */
size_t sbt__x_utf8_len(const char *s, size_t len);
/* Copies s into out as valid UTF-8 (sbt__x_utf8_len bytes); returns the end. */
uint8_t *sbt__x_utf8_copy(uint8_t *out, const char *s, size_t len);

/* Backends: declare a track, write one event. */
int sbt__pf_track(sbt_export_emitter *em, struct sbt__xtrack *t, const struct sbt_export_track *d);
int sbt__pf_event(sbt_export_emitter *em, struct sbt__xtrack *t, int type, uint64_t ts,
                  uint64_t dur, const struct sbt_export_event *ev, int is_double, int64_t iv,
                  double dv);
int sbt__json_begin(sbt_export_emitter *em);
int sbt__json_finish(sbt_export_emitter *em);
int sbt__json_track(sbt_export_emitter *em, struct sbt__xtrack *t,
                    const struct sbt_export_track *d);
int sbt__json_event(sbt_export_emitter *em, struct sbt__xtrack *t, int type, uint64_t ts,
                    uint64_t dur, const struct sbt_export_event *ev, int is_double, int64_t iv,
                    double dv);

#endif /* REPRISE_SBT_EXPORT_INT_H */
