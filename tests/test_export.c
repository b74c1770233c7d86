/*
 * tests/test_export.c — the exporters (format/sbt_export.h): every Perfetto file written here is
 * decoded packet by packet with the protobuf-c code generated from format/perfetto_trace.proto
 * and checked against the import rules trace_processor enforces
 * (../shared/research/perfetto.md section 4): sequence ids, the cleared flag before interned
 * data, tracks declared before use, balanced slices per track, timestamps that never go back
 * on a sequence, interned ids defined before use, counters declared earlier, no packed repeated
 * fields, flows with one start and one end. JSON output goes through a strict parser written
 * here. Golden files in tests/data/export/ pin the bytes (REPRISE_UPDATE_GOLDEN=1 rewrites them).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/perfetto_trace.pb-c.h"
#include "format/sbt.h"
#include "format/sbt_export.h"

/* ========================================================================================== */
/* The fixture trace                                                                          */
/* ========================================================================================== */

#define T0 1000000ull /* the trace does not start at 0: export re-bases to the trace start */

/* Names a viewer must survive: quotes, backslashes, control characters, invalid UTF-8. */
static const char weird_kernel[] = "k\"q\\b\x01\x1f\xff end";
static const char weird_kernel_utf8[] = "k\"q\\b\x01\x1f\xef\xbf\xbd end";
static const char weird_marker[] = "mark \"x\"\t\n";

static char trace_path[64];

static uint32_t intern(sbt_writer *w, const char *s)
{
    uint32_t id;
    cr_assert(eq(int, sbt_writer_intern(w, s, &id), 0), "%s", sbt_errmsg());
    return id;
}

struct fx_op {
    uint32_t kind, subkind, thread, stream, kernel, name;
    uint64_t hb, he, db, de; /* db = de = 0: no device time */
    uint64_t bytes, resource, obj, value;
    uint32_t flags;
    struct sbt_access acc[2];
    uint32_t n_acc;
};

static void make_trace(void)
{
    strcpy(trace_path, "/tmp/test_export_XXXXXX");
    int fd = mkstemp(trace_path);
    cr_assert(fd >= 0);
    close(fd);
    sbt_writer *w;
    cr_assert(eq(int, sbt_writer_open(trace_path, NULL, &w), 0), "%s", sbt_errmsg());
    sbt_writer_meta(w, "host", "testhost");
    uint32_t d1, d2, s1, s2, s3, s4, k1, k2, k3;
    struct sbt_device dev = {.api = SBT_API_CUDA, .name = intern(w, "GPU \"A\"")};
    cr_assert(eq(int, sbt_writer_add_device(w, &dev, &d1), 0), "%s", sbt_errmsg());
    dev = (struct sbt_device){.api = SBT_API_VULKAN, .name = intern(w, "lavapipe")};
    cr_assert(eq(int, sbt_writer_add_device(w, &dev, &d2), 0), "%s", sbt_errmsg());
    struct sbt_stream st = {.device = d1, .kind = SBT_STREAM_CUDA, .name = intern(w, "compute")};
    sbt_writer_add_stream(w, &st, &s1);
    st = (struct sbt_stream){.device = d1, .kind = SBT_STREAM_CUDA};
    sbt_writer_add_stream(w, &st, &s2);
    st = (struct sbt_stream){.device = d2, .kind = SBT_STREAM_QUEUE, .name = intern(w, "queue 0")};
    sbt_writer_add_stream(w, &st, &s3);
    st = (struct sbt_stream){
        .device = d1, .kind = SBT_STREAM_HOST_THREAD, .name = intern(w, "main thread")};
    sbt_writer_add_stream(w, &st, &s4);
    char longname[301];
    memset(longname, 'L', 300);
    longname[300] = 0;
    struct sbt_kernel k = {.name = intern(w, "gemm")};
    sbt_writer_add_kernel(w, &k, &k1);
    k = (struct sbt_kernel){.name = intern(w, weird_kernel)};
    sbt_writer_add_kernel(w, &k, &k2);
    k = (struct sbt_kernel){.name = intern(w, longname)};
    sbt_writer_add_kernel(w, &k, &k3);
    uint32_t n_marker = intern(w, weird_marker), n_alloc = intern(w, "cuMemAlloc");

    const uint32_t B = SBT_OPF_BYTES, R = SBT_OPF_RESOURCE, O = SBT_OPF_OBJ;
    /* rows leave trailing fields out: they are zero */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
    // clang-format off
    const struct fx_op ops[] = {
        {SBT_OP_ALLOC, SBT_RES_DEVICE, 1, s4, 0, n_alloc, 1000, 1500, 0, 0, 4096, 1, 1, 0, B | R | O},
        {SBT_OP_ALLOC, SBT_RES_DEVICE, 1, s4, 0, n_alloc, 1600, 1900, 0, 0, 1 << 20, 2, 1, 0, B | R | O},
        {SBT_OP_COPY, SBT_COPY_H2D, 1, s1, 0, 0, 2000, 2200, 2500, 3500, 4096, 0, 0, 0, B,
         {{1, 0, 4096, SBT_ACCESS_WRITE}}, 1},
        {SBT_OP_KERNEL, 0, 1, s1, k1, 0, 2300, 2400, 3600, 9000, 0, 0, 0, 0, SBT_OPF_DIGEST,
         {{1, 0, 4096, SBT_ACCESS_READ}, {2, 0, 8192, SBT_ACCESS_WRITE}}, 2},
        /* overlaps the kernel above on the same stream: a second lane */
        {SBT_OP_KERNEL, 0, 2, s1, k2, 0, 2500, 2600, 4000, 5000},
        {SBT_OP_EVENT_RECORD, 0, 1, s1, 0, 0, 2700, 2710, 9000, 9000, 0, 0, 7, 0, O},
        {SBT_OP_EVENT_WAIT, 0, 2, s2, 0, 0, 2800, 2810, 9001, 9001, 0, 0, 7, 0, O},
        {SBT_OP_EVENT_WAIT, 0, 1, s3, 0, 0, 2900, 2910, 9100, 9100, 0, 0, 7, 0, O},
        {SBT_OP_KERNEL, 0, 2, s2, k1, 0, 3000, 3100, 9002, 12000},
        /* starts when the kernel before it ends: END must precede BEGIN */
        {SBT_OP_FILL, 0, 1, s2, 0, 0, 3200, 3300, 12000, 13000, 1 << 20, 0, 0, 0xdeadbeef, B | O},
        {SBT_OP_MARKER, 0, 2, s4, 0, n_marker, 3400, 3400},
        /* a dispatch with no API call and no device time: drawn at host times */
        {SBT_OP_KERNEL, 0, 0, s3, k3, 0, 3500, 3600},
        {SBT_OP_SIGNAL, SBT_SYNC_TIMELINE_SEMAPHORE, 1, s3, 0, 0, 3700, 3800, 13000, 13000, 0, 0,
         5, 3, O},
        {SBT_OP_WAIT, SBT_SYNC_TIMELINE_SEMAPHORE, 2, s1, 0, 0, 3900, 4000, 13500, 13500, 0, 0, 5,
         3, O},
        {SBT_OP_COPY, SBT_COPY_D2H, 2, s1, 0, 0, 13000, 13100, 14000, 16000, 1 << 20, 0, 0, 0, B,
         {{2, 0, 1 << 20, SBT_ACCESS_READ}}, 1},
        /* device time before the call (clock skew): no arrow, still drawn */
        {SBT_OP_KERNEL, 0, 1, s2, k1, 0, 17000, 17100, 16500, 16800},
        {SBT_OP_STREAM_SYNC, 0, 1, s4, 0, 0, 17200, 18000, 0, 0, 0, 0, s1, 0, O},
        {SBT_OP_FREE, 0, 2, s4, 0, 0, 18100, 18200, 0, 0, 4096, 1, 0, 0, B | R},
        {SBT_OP_FREE, 0, 1, s4, 0, 0, 18210, 18220, 0, 0, 0, 99, 0, 0, R},
        {SBT_OP_DEVICE_SYNC, 0, 1, s4, 0, 0, 18300, 18400, 0, 0, 0, 0, 1, 0, O},
        {SBT_OP_EVENT_WAIT, 0, 1, s2, 0, 0, 18410, 18420, 18500, 18500, 0, 0, 42, 0, O},
        /* no thread, on a host-thread stream: the API call goes to that stream's track */
        {SBT_OP_HOST_READ, 0, 0, s4, 0, 0, 18500, 18600, 0, 0, 0, 0, 0, 0, SBT_OPF_DIGEST,
         {{2, 0, 1 << 20, SBT_ACCESS_READ}}, 1},
    };
    // clang-format on
#pragma GCC diagnostic pop
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        const struct fx_op *f = &ops[i];
        struct sbt_op op = {.kind = f->kind,
                            .subkind = f->subkind,
                            .thread = f->thread,
                            .stream = f->stream,
                            .name = f->name,
                            .host_begin = T0 + f->hb,
                            .host_end = T0 + f->he,
                            .bytes = f->bytes,
                            .resource = f->resource,
                            .obj = f->obj,
                            .value = f->value,
                            .flags = f->flags,
                            .n_access = f->n_acc,
                            .access = f->acc};
        if (f->db || f->de) {
            op.flags |= SBT_OPF_DEV_TIME;
            op.dev_begin = T0 + f->db, op.dev_end = T0 + f->de;
        }
        if (f->kernel) {
            op.flags |= SBT_OPF_KERNEL | SBT_OPF_GEOM;
            op.kernel = f->kernel;
            op.grid[0] = 64, op.grid[1] = op.grid[2] = 1;
            op.block[0] = 256, op.block[1] = op.block[2] = 1;
            op.shmem = f->kernel == k1 ? 1024 : 0;
        }
        if (op.flags & SBT_OPF_DIGEST)
            op.digest = sbt_hash_bytes(&i, sizeof i);
        cr_assert(eq(int, sbt_writer_add_op(w, &op, NULL), 0), "op %zu: %s", i, sbt_errmsg());
    }
    cr_assert(eq(int, sbt_writer_close(w), 0), "%s", sbt_errmsg());
}

static void drop_trace(void)
{
    unlink(trace_path);
}

/* Exports the fixture into a malloc'd buffer. */
static void export_mem(int format, const struct sbt_export_opts *o, uint8_t **buf, size_t *len,
                       struct sbt_export_stats *stats)
{
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace_path, NULL, &r), 0), "%s", sbt_errmsg());
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    cr_assert(f != NULL);
    struct sbt_export_stats s;
    int st = sbt_export_file(r, f, format, o, stats ? stats : &s);
    cr_assert(eq(int, st, 0), "%s", sbt_errmsg());
    fclose(f);
    sbt_reader_close(r);
    *buf = (uint8_t *)p, *len = n;
}

/* ========================================================================================== */
/* A checker of trace_processor's import rules, on protobuf-c's decoding                      */
/* ========================================================================================== */

struct pf_summary {
    uint32_t packets, tracks, counter_tracks, sequences;
    uint32_t slices, instants, counter_values, flows, lanes_max_seen;
    uint32_t names_seen;
    int weird_name_seen, long_name_seen;
    uint32_t processes; /* process descriptors */
};

#define MAX_T   256
#define MAX_S   256
#define MAX_EV  4096
#define MAX_IID 512

struct ck_track {
    uint64_t uuid, parent;
    int counter, thread, process;
    uint32_t decl_packet;
};

struct ck_seq {
    int valid, has_ts;
    uint64_t last_ts, def_track;
    char *iid[4][MAX_IID]; /* kinds: names, categories, arg names, values */
};

struct ck_ev {
    uint64_t ts;
    uint32_t packet, track, type;
};

struct ck_flow {
    uint64_t id, ts;
    uint32_t packet;
    int term;
};

struct checker {
    int errors;
    struct ck_track t[MAX_T];
    uint32_t nt;
    struct ck_seq s[MAX_S];
    struct ck_ev ev[MAX_EV];
    uint32_t nev;
    struct ck_flow fl[MAX_EV];
    uint32_t nfl;
    struct pf_summary sum;
};

#define CK(c, cond, ...)                   \
    do {                                   \
        if (!(cond)) {                     \
            if ((c)->errors++ < 20)        \
                cr_log_error(__VA_ARGS__); \
        }                                  \
    } while (0)

static struct ck_track *ck_find(struct checker *c, uint64_t uuid)
{
    for (uint32_t i = 0; i < c->nt; i++)
        if (c->t[i].uuid == uuid)
            return &c->t[i];
    return NULL;
}

/* Unknown fields anywhere in the message tree (field numbers our proto does not know). */
static size_t unknown_fields(const ProtobufCMessage *m)
{
    size_t n = m->n_unknown_fields;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const char *base = (const char *)m;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t cnt = *(const size_t *)(base + f->quantifier_offset);
            ProtobufCMessage *const *arr = *(ProtobufCMessage *const *const *)(base + f->offset);
            for (size_t k = 0; k < cnt; k++)
                n += unknown_fields(arr[k]);
        } else {
            if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
                *(const uint32_t *)(base + f->quantifier_offset) != f->id)
                continue;
            const ProtobufCMessage *sub = *(ProtobufCMessage *const *)(base + f->offset);
            if (sub)
                n += unknown_fields(sub);
        }
    }
    return n;
}

/* Raw scan: a TrackEvent repeated scalar written length-delimited would be a packed run. */
static int packed_fields(const uint8_t *p, size_t len)
{
    size_t pos = 0;
    while (pos < len) {
        uint64_t key, v;
        if (sbt_varint_decode(p, len, &pos, &key) < 0)
            return -1;
        uint32_t field = (uint32_t)(key >> 3), wt = key & 7;
        if (wt == 0) {
            if (sbt_varint_decode(p, len, &pos, &v) < 0)
                return -1;
        } else if (wt == 1) {
            pos += 8;
        } else if (wt == 5) {
            pos += 4;
        } else if (wt == 2) {
            if (sbt_varint_decode(p, len, &pos, &v) < 0 || v > len - pos)
                return -1;
            if (field == 11) { /* TracePacket.track_event: look inside */
                size_t q = pos, end = pos + v;
                while (q < end) {
                    uint64_t k2, v2;
                    if (sbt_varint_decode(p, end, &q, &k2) < 0)
                        return -1;
                    uint32_t f2 = (uint32_t)(k2 >> 3), w2 = k2 & 7;
                    if (w2 == 2 && (f2 == 3 || f2 == 12 || f2 == 31 || f2 == 45 || f2 == 46 ||
                                    f2 == 47 || f2 == 48))
                        return 1;
                    if (w2 == 0 && sbt_varint_decode(p, end, &q, &v2) < 0)
                        return -1;
                    if (w2 == 1)
                        q += 8;
                    if (w2 == 5)
                        q += 4;
                    if (w2 == 2) {
                        if (sbt_varint_decode(p, end, &q, &v2) < 0)
                            return -1;
                        q += v2;
                    }
                }
            }
            pos += v;
        } else {
            return -1;
        }
    }
    return 0;
}

static void ck_define(struct checker *c, uint32_t pk, struct ck_seq *s, int kind, uint64_t iid,
                      const char *str, size_t len)
{
    CK(c, iid > 0 && iid < MAX_IID, "packet %u: interned id %" PRIu64 " out of range", pk, iid);
    if (!iid || iid >= MAX_IID)
        return;
    char *copy = strndup(str, len);
    if (s->iid[kind][iid]) {
        CK(c, !strcmp(s->iid[kind][iid], copy), "packet %u: iid %" PRIu64 " redefined", pk, iid);
        free(copy);
        return;
    }
    s->iid[kind][iid] = copy;
}

static void ck_use(struct checker *c, uint32_t pk, struct ck_seq *s, int kind, uint64_t iid)
{
    CK(c, iid > 0 && iid < MAX_IID && s->iid[kind][iid],
       "packet %u: interned id %" PRIu64 " (kind %d) used but not defined on its sequence", pk, iid,
       kind);
}

static const char *ck_name(struct ck_seq *s, uint64_t iid)
{
    return iid < MAX_IID ? s->iid[0][iid] : NULL;
}

static void ck_packet(struct checker *c, const uint8_t *raw, size_t len, uint32_t pk)
{
    Perfetto__Protos__TracePacket *p = perfetto__protos__trace_packet__unpack(NULL, len, raw);
    CK(c, p != NULL, "packet %u: does not decode", pk);
    if (!p)
        return;
    CK(c, unknown_fields(&p->base) == 0, "packet %u: fields unknown to the schema", pk);
    /* canonical: protobuf-c packs it back to the same bytes (field order, no packing) */
    size_t n2 = perfetto__protos__trace_packet__get_packed_size(p);
    uint8_t *again = malloc(n2 ? n2 : 1);
    perfetto__protos__trace_packet__pack(p, again);
    CK(c, n2 == len && !memcmp(again, raw, len), "packet %u: not canonical (%zu vs %zu bytes)", pk,
       n2, len);
    free(again);
    CK(c, packed_fields(raw, len) == 0, "packet %u: packed repeated field in TrackEvent", pk);

    uint32_t sid = p->has_trusted_packet_sequence_id ? p->trusted_packet_sequence_id : 0;
    uint32_t flags = p->has_sequence_flags ? p->sequence_flags : 0;
    int is_te = p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
    CK(c, sid || (!is_te && !p->interned_data && !flags && !p->trace_packet_defaults),
       "packet %u: needs a trusted_packet_sequence_id", pk);
    CK(c, sid < MAX_S, "packet %u: sequence id %u too large for the test", pk, sid);
    CK(c, !p->has_timestamp_clock_id, "packet %u: timestamp_clock_id set", pk);
    struct ck_seq *s = sid && sid < MAX_S ? &c->s[sid] : NULL;
    if (s && (flags & 1)) {
        if (!s->valid)
            c->sum.sequences++;
        s->valid = 1;
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < MAX_IID; i++)
                free(s->iid[k][i]), s->iid[k][i] = NULL;
        s->def_track = 0;
    }
    if (s && (p->interned_data || (flags & 2)))
        CK(c, s->valid, "packet %u: interned data or NEEDS_INCREMENTAL_STATE before CLEARED", pk);
    if (s && p->trace_packet_defaults) {
        CK(c, s->valid, "packet %u: defaults before CLEARED", pk);
        Perfetto__Protos__TrackEventDefaults *ted = p->trace_packet_defaults->track_event_defaults;
        s->def_track = ted && ted->has_track_uuid ? ted->track_uuid : 0;
    }
    if (s && p->interned_data) {
        Perfetto__Protos__InternedData *d = p->interned_data;
        for (size_t i = 0; i < d->n_event_names; i++)
            ck_define(c, pk, s, 0, d->event_names[i]->iid, d->event_names[i]->name,
                      strlen(d->event_names[i]->name));
        for (size_t i = 0; i < d->n_event_categories; i++)
            ck_define(c, pk, s, 1, d->event_categories[i]->iid, d->event_categories[i]->name,
                      strlen(d->event_categories[i]->name));
        for (size_t i = 0; i < d->n_debug_annotation_names; i++)
            ck_define(c, pk, s, 2, d->debug_annotation_names[i]->iid,
                      d->debug_annotation_names[i]->name,
                      strlen(d->debug_annotation_names[i]->name));
        for (size_t i = 0; i < d->n_debug_annotation_string_values; i++)
            ck_define(c, pk, s, 3, d->debug_annotation_string_values[i]->iid,
                      (const char *)d->debug_annotation_string_values[i]->str.data,
                      d->debug_annotation_string_values[i]->str.len);
    }
    if (p->has_timestamp && s) {
        CK(c, !s->has_ts || p->timestamp >= s->last_ts,
           "packet %u: timestamp %" PRIu64 " goes back on sequence %u (previous %" PRIu64 ")", pk,
           p->timestamp, sid, s->last_ts);
        s->has_ts = 1;
        s->last_ts = p->timestamp > s->last_ts ? p->timestamp : s->last_ts;
    }
    if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR) {
        Perfetto__Protos__TrackDescriptor *d = p->track_descriptor;
        CK(c, d->has_uuid && d->uuid, "packet %u: descriptor without uuid", pk);
        CK(c, !ck_find(c, d->uuid), "packet %u: track %" PRIu64 " declared twice", pk, d->uuid);
        CK(c, !d->has_parent_uuid || ck_find(c, d->parent_uuid),
           "packet %u: parent declared after the child", pk);
        CK(c, !d->thread || (d->thread->has_pid && d->thread->has_tid), "packet %u: thread", pk);
        CK(c, !d->process || d->process->has_pid, "packet %u: process without pid", pk);
        CK(c, c->nt < MAX_T, "too many tracks");
        if (c->nt < MAX_T)
            c->t[c->nt++] =
                (struct ck_track){d->uuid,           d->parent_uuid,     d->counter != NULL,
                                  d->thread != NULL, d->process != NULL, pk};
        c->sum.tracks++;
        c->sum.counter_tracks += d->counter != NULL;
        c->sum.processes += d->process != NULL;
        if (d->name && !strcmp(d->name, "stream 1: compute"))
            c->sum.lanes_max_seen++;
    }
    if (is_te && s) {
        Perfetto__Protos__TrackEvent *te = p->track_event;
        CK(c, p->has_timestamp, "packet %u: track event without timestamp", pk);
        CK(c, te->has_type, "packet %u: track event without type", pk);
        uint64_t uuid = te->has_track_uuid ? te->track_uuid : s->def_track;
        struct ck_track *t = ck_find(c, uuid);
        CK(c, t != NULL, "packet %u: event on track %" PRIu64 " not declared before", pk, uuid);
        int uses_iids = te->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID ||
                        te->n_category_iids || !te->has_track_uuid;
        if (te->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID) {
            ck_use(c, pk, s, 0, te->name_iid);
            const char *nm = ck_name(s, te->name_iid);
            c->sum.names_seen++;
            if (nm && !strcmp(nm, weird_kernel_utf8))
                c->sum.weird_name_seen = 1;
            if (nm && strlen(nm) == 300)
                c->sum.long_name_seen = 1;
        }
        for (size_t i = 0; i < te->n_category_iids; i++)
            ck_use(c, pk, s, 1, te->category_iids[i]);
        for (size_t i = 0; i < te->n_debug_annotations; i++) {
            Perfetto__Protos__DebugAnnotation *a = te->debug_annotations[i];
            if (a->name_field_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID)
                ck_use(c, pk, s, 2, a->name_iid), uses_iids = 1;
            else
                CK(c, a->name_field_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME,
                   "packet %u: annotation without a name", pk);
            if (a->value_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID)
                ck_use(c, pk, s, 3, a->string_value_iid), uses_iids = 1;
        }
        CK(c, !uses_iids || (flags & 2), "packet %u: uses incremental state without NEEDS", pk);
        if (t && te->has_type) {
            if (te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER) {
                CK(c, t->counter, "packet %u: counter value on a slice track", pk);
                CK(c,
                   te->counter_value_field_case !=
                       PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD__NOT_SET,
                   "packet %u: counter without value", pk);
                c->sum.counter_values++;
            } else {
                CK(c, !t->counter, "packet %u: slice on a counter track", pk);
                CK(c, c->nev < MAX_EV, "too many events");
                if (c->nev < MAX_EV)
                    c->ev[c->nev++] =
                        (struct ck_ev){p->timestamp, pk, (uint32_t)(t - c->t), te->type};
                c->sum.instants += te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
                c->sum.slices += te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
                CK(c,
                   te->type != PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END ||
                       (te->name_field_case == 0 && !te->n_category_iids &&
                        !te->n_debug_annotations),
                   "packet %u: END carries a name, category or args", pk);
            }
        }
        for (size_t i = 0; i < te->n_flow_ids; i++)
            if (c->nfl < MAX_EV)
                c->fl[c->nfl++] = (struct ck_flow){te->flow_ids[i], p->timestamp, pk, 0};
        for (size_t i = 0; i < te->n_terminating_flow_ids; i++)
            if (c->nfl < MAX_EV)
                c->fl[c->nfl++] =
                    (struct ck_flow){te->terminating_flow_ids[i], p->timestamp, pk, 1};
    }
    perfetto__protos__trace_packet__free_unpacked(p, NULL);
}

static int ev_cmp(const void *a, const void *b)
{
    const struct ck_ev *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->packet < y->packet ? -1 : x->packet > y->packet;
}

static int fl_cmp(const void *a, const void *b)
{
    const struct ck_flow *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->packet < y->packet ? -1 : x->packet > y->packet;
}

/* Checks a whole file; returns the number of problems (each logged). */
static int check_pftrace(const uint8_t *buf, size_t len, struct pf_summary *sum)
{
    struct checker *c = calloc(1, sizeof *c);
    cr_assert(c != NULL);
    size_t pos = 0;
    uint32_t pk = 0;
    CK(c, len > 0, "empty file");
    while (pos < len) {
        uint64_t n;
        CK(c, buf[pos] == 0x0a, "offset %zu: not a Trace.packet field", pos);
        if (buf[pos] != 0x0a)
            break;
        pos++;
        if (sbt_varint_decode(buf, len, &pos, &n) < 0 || n > len - pos) {
            CK(c, 0, "offset %zu: truncated packet", pos);
            break;
        }
        ck_packet(c, buf + pos, (size_t)n, pk++);
        pos += n;
    }
    c->sum.packets = pk;
    /* per track: replay BEGIN/END with a stack in (ts, file order) */
    qsort(c->ev, c->nev, sizeof *c->ev, ev_cmp);
    for (uint32_t i = 0; i < c->nev;) {
        uint32_t j = i, depth = 0;
        for (; j < c->nev && c->ev[j].track == c->ev[i].track; j++) {
            if (c->ev[j].type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN)
                depth++;
            else if (c->ev[j].type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END) {
                CK(c, depth > 0, "packet %u: END without an open slice", c->ev[j].packet);
                depth -= depth > 0;
            }
        }
        CK(c, depth == 0, "track %" PRIu64 ": %u slices never end", c->t[c->ev[i].track].uuid,
           depth);
        i = j;
    }
    /* flows: each id starts once and ends once, not before it starts */
    qsort(c->fl, c->nfl, sizeof *c->fl, fl_cmp);
    for (uint32_t i = 0; i < c->nfl;) {
        uint32_t j = i;
        while (j < c->nfl && c->fl[j].id == c->fl[i].id)
            j++;
        CK(c, j - i == 2 && !c->fl[i].term && c->fl[i + 1].term && c->fl[i].ts <= c->fl[i + 1].ts,
           "flow %" PRIu64 ": %u events, not one start then one end in time", c->fl[i].id, j - i);
        CK(c, c->fl[i].id != 0, "flow id 0");
        c->sum.flows++;
        i = j;
    }
    for (int s = 0; s < MAX_S; s++)
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < MAX_IID; i++)
                free(c->s[s].iid[k][i]);
    if (sum)
        *sum = c->sum;
    int errors = c->errors;
    free(c);
    return errors;
}

/* ========================================================================================== */
/* A strict JSON parser (RFC 8259), collecting decoded strings                                 */
/* ========================================================================================== */

struct jp {
    const uint8_t *p, *end;
    int depth;
    const char *want; /* a decoded string to look for */
    int found;
    int bad_ts; /* "ts"/"dur" values not in the "%u.%03u" form */
    char key[64];
};

static void ws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
        j->p++;
}

static int hexv(uint8_t c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static uint8_t *put_cp(uint8_t *o, uint32_t cp)
{
    if (cp < 0x80)
        *o++ = (uint8_t)cp;
    else if (cp < 0x800)
        *o++ = (uint8_t)(0xc0 | cp >> 6), *o++ = (uint8_t)(0x80 | (cp & 63));
    else if (cp < 0x10000)
        *o++ = (uint8_t)(0xe0 | cp >> 12), *o++ = (uint8_t)(0x80 | (cp >> 6 & 63)),
        *o++ = (uint8_t)(0x80 | (cp & 63));
    else
        *o++ = (uint8_t)(0xf0 | cp >> 18), *o++ = (uint8_t)(0x80 | (cp >> 12 & 63)),
        *o++ = (uint8_t)(0x80 | (cp >> 6 & 63)), *o++ = (uint8_t)(0x80 | (cp & 63));
    return o;
}

/* Parses a string into out (UTF-8, NUL-terminated, truncated at cap). */
static int jstring(struct jp *j, char *out, size_t cap)
{
    uint8_t tmp[4096], *o = tmp;
    if (j->p >= j->end || *j->p != '"')
        return -1;
    j->p++;
    while (j->p < j->end && *j->p != '"') {
        uint8_t c = *j->p;
        if (c < 0x20)
            return -1; /* raw control character */
        if (o > tmp + sizeof tmp - 8)
            return -1;
        if (c == '\\') {
            if (j->end - j->p < 2)
                return -1;
            uint8_t e = j->p[1];
            j->p += 2;
            const char *simple = strchr("\"\\/bfnrt", e);
            if (e && simple) {
                static const char map[] = "\"\\/\b\f\n\r\t";
                *o++ = (uint8_t)map[simple - "\"\\/bfnrt"];
            } else if (e == 'u') {
                if (j->end - j->p < 4)
                    return -1;
                uint32_t cp = 0;
                for (int i = 0; i < 4; i++) {
                    int h = hexv(j->p[i]);
                    if (h < 0)
                        return -1;
                    cp = cp << 4 | (uint32_t)h;
                }
                j->p += 4;
                if (cp >= 0xd800 && cp <= 0xdfff)
                    return -1; /* we never write surrogates */
                o = put_cp(o, cp);
            } else {
                return -1;
            }
        } else if (c < 0x80) {
            *o++ = c, j->p++;
        } else { /* multi-byte UTF-8: must be valid */
            int n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
            if (!n || j->end - j->p < n)
                return -1;
            uint32_t cp = c & (0x7f >> n);
            for (int i = 1; i < n; i++) {
                if ((j->p[i] & 0xc0) != 0x80)
                    return -1;
                cp = cp << 6 | (j->p[i] & 63);
            }
            if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
                (cp >= 0xd800 && cp <= 0xdfff))
                return -1;
            memcpy(o, j->p, (size_t)n);
            o += n, j->p += n;
        }
    }
    if (j->p >= j->end)
        return -1;
    j->p++;
    *o = 0;
    if (j->want && !strcmp((char *)tmp, j->want))
        j->found = 1;
    if (out) {
        size_t n = strlen((char *)tmp);
        n = n < cap - 1 ? n : cap - 1;
        memcpy(out, tmp, n);
        out[n] = 0;
    }
    return 0;
}

static int jnumber(struct jp *j)
{
    const uint8_t *s = j->p;
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9')
        return -1;
    if (*j->p == '0')
        j->p++;
    else
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    int frac = -1;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        frac = 0;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++, frac++;
        if (!frac)
            return -1;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return -1;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    if ((!strcmp(j->key, "ts") || !strcmp(j->key, "dur")) && (frac != 3 || *s == '-'))
        j->bad_ts++;
    return 0;
}

static int jvalue(struct jp *j);

static int jlit(struct jp *j, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n))
        return -1;
    j->p += n;
    return 0;
}

static int jvalue(struct jp *j)
{
    ws(j);
    if (j->p >= j->end || ++j->depth > 64)
        return -1;
    int st = 0;
    uint8_t c = *j->p;
    if (c == '{' || c == '[') {
        j->p++;
        ws(j);
        char close = c == '{' ? '}' : ']';
        if (j->p < j->end && *j->p == close) {
            j->p++;
        } else {
            for (;;) {
                ws(j);
                if (c == '{') {
                    char key[64];
                    if (jstring(j, key, sizeof key) < 0)
                        return -1;
                    ws(j);
                    if (j->p >= j->end || *j->p++ != ':')
                        return -1;
                    strcpy(j->key, key);
                }
                if (jvalue(j) < 0)
                    return -1;
                j->key[0] = 0;
                ws(j);
                if (j->p < j->end && *j->p == ',') {
                    j->p++;
                    continue;
                }
                if (j->p < j->end && *j->p == close) {
                    j->p++;
                    break;
                }
                return -1;
            }
        }
    } else if (c == '"') {
        st = jstring(j, NULL, 0);
    } else if (c == 't') {
        st = jlit(j, "true");
    } else if (c == 'f') {
        st = jlit(j, "false");
    } else if (c == 'n') {
        st = jlit(j, "null");
    } else {
        st = jnumber(j);
    }
    j->depth--;
    return st;
}

/* 0 if buf is exactly one valid JSON value (surrounded by whitespace). */
static int json_parse(const uint8_t *buf, size_t len, const char *want, int *found, int *bad_ts)
{
    struct jp j = {.p = buf, .end = buf + len, .want = want};
    int st = jvalue(&j);
    ws(&j);
    if (found)
        *found = j.found;
    if (bad_ts)
        *bad_ts = j.bad_ts;
    return st < 0 || j.p != j.end ? -1 : 0;
}

/* ========================================================================================== */
/* Tests                                                                                      */
/* ========================================================================================== */

TestSuite(perfetto, .init = make_trace, .fini = drop_trace);

Test(perfetto, decodes_and_follows_import_rules)
{
    uint8_t *buf;
    size_t len;
    struct sbt_export_stats st;
    export_mem(SBT_EXPORT_PERFETTO, NULL, &buf, &len, &st);
    struct pf_summary s;
    cr_assert(eq(int, check_pftrace(buf, len, &s), 0));
    cr_expect(eq(u64, st.n_ops, 22));
    cr_expect(eq(u32, s.slices, (uint32_t)st.n_slices));
    cr_expect(eq(u32, s.instants, (uint32_t)st.n_instants));
    cr_expect(eq(u32, s.flows, (uint32_t)st.n_flows));
    cr_expect(eq(u32, s.counter_values, (uint32_t)st.n_counter_samples));
    /* launches with a thread and device time after the call: 4 kernels/copies/fills... */
    cr_expect(st.n_flows >= 6, "flows: %" PRIu64, st.n_flows);
    cr_expect(eq(u32, st.max_lanes, 2), "the overlapping kernels need a second lane");
    cr_expect(eq(u32, s.lanes_max_seen, 2), "both lanes are named after the stream");
    cr_expect(eq(u64, st.n_waits_unlinked, 1), "the wait on event 42 has no record");
    cr_expect(eq(u64, st.n_frees_unknown, 1), "the free of resource 99");
    cr_expect(s.weird_name_seen, "the kernel name with control bytes, as valid UTF-8");
    cr_expect(s.long_name_seen, "the 300-byte kernel name");
    cr_expect(eq(u32, s.counter_tracks, 2), "memory allocated and bytes in flight");
    free(buf);
}

Test(perfetto, deterministic)
{
    uint8_t *a, *b;
    size_t na, nb;
    export_mem(SBT_EXPORT_PERFETTO, NULL, &a, &na, NULL);
    export_mem(SBT_EXPORT_PERFETTO, NULL, &b, &nb, NULL);
    cr_assert(eq(sz, na, nb));
    cr_assert(memcmp(a, b, na) == 0, "two exports of one trace differ");
    free(a), free(b);
}

static void golden(const char *path, const uint8_t *buf, size_t len)
{
    if (getenv("REPRISE_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        cr_assert(f != NULL, "cannot write %s", path);
        cr_assert(eq(sz, fwrite(buf, 1, len, f), len));
        fclose(f);
    }
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL, "%s missing: run with REPRISE_UPDATE_GOLDEN=1 to create it", path);
    uint8_t *want = malloc(len + 1);
    size_t n = fread(want, 1, len + 1, f);
    fclose(f);
    size_t i = 0;
    while (i < n && i < len && want[i] == buf[i])
        i++;
    cr_expect(n == len && i == len,
              "%s: export differs from the golden file at byte %zu (%zu vs %zu bytes); if the "
              "change is intended, REPRISE_UPDATE_GOLDEN=1 rewrites it",
              path, i, len, n);
    free(want);
}

Test(perfetto, golden)
{
    uint8_t *buf;
    size_t len;
    export_mem(SBT_EXPORT_PERFETTO, NULL, &buf, &len, NULL);
    golden("tests/data/export/small.pftrace", buf, len);
    free(buf);
}

Test(perfetto, group_by_thread)
{
    uint8_t *buf;
    size_t len;
    struct sbt_export_opts o = SBT_EXPORT_OPTS(.group_by = SBT_EXPORT_GROUP_THREAD);
    export_mem(SBT_EXPORT_PERFETTO, &o, &buf, &len, NULL);
    cr_assert(eq(int, check_pftrace(buf, len, NULL), 0));
    golden("tests/data/export/small-by-thread.pftrace", buf, len);
    free(buf);
}

/* The processes of a job on one timeline (`reprise export JOB`): several traces on one emitter,
 * runs past 99 (the 100th rank and up), each trace one process (opts.pid) named by its rank,
 * with its own offset and clock drift. The import rules hold (flow ids of every run distinct,
 * timestamps in order per track).
 * Before: run 100 was refused ("run 100 > 99"), and runs 100 apart shared flow ids. */
Test(perfetto, job_of_many_traces_on_one_emitter)
{
    static const uint32_t runs[] = {0, 100, 200, SBT_EXPORT_MAX_RUN};
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace_path, NULL, &r), 0), "%s", sbt_errmsg());
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    sbt_export_emitter *em;
    cr_assert(eq(int, sbt_export_emitter_open(f, SBT_EXPORT_PERFETTO, NULL, &em), 0));
    struct sbt_export_stats st[4];
    for (int i = 0; i < 4; i++) {
        char label[16];
        snprintf(label, sizeof label, "rank %d", i);
        struct sbt_export_opts o =
            SBT_EXPORT_OPTS(.run = runs[i], .pid = i + 1, .label = label, .ts_offset = 1000 * i,
                            .ts_drift = i == 3 ? 0.25 : 0);
        cr_assert(eq(int, sbt_export_trace(em, r, &o, &st[i]), 0), "run %u: %s", runs[i],
                  sbt_errmsg());
    }
    struct sbt_export_opts bad = SBT_EXPORT_OPTS(.run = SBT_EXPORT_MAX_RUN + 1);
    cr_expect(eq(int, sbt_export_trace(em, r, &bad, NULL), SBT_EINVAL));
    cr_expect(strstr(sbt_errmsg(), "run 3556 > 3555") != NULL, "%s", sbt_errmsg());
    bad = SBT_EXPORT_OPTS(.pid = 9, .group_by = SBT_EXPORT_GROUP_THREAD);
    cr_expect(eq(int, sbt_export_trace(em, r, &bad, NULL), SBT_EINVAL));
    cr_assert(eq(int, sbt_export_emitter_close(em), 0));
    fclose(f);
    sbt_reader_close(r);
    struct pf_summary s;
    cr_assert(eq(int, check_pftrace((uint8_t *)p, n, &s), 0));
    cr_expect(eq(u32, s.processes, 4), "one process per trace: %u", s.processes);
    cr_expect(st[0].n_flows > 0);
    cr_expect(eq(u32, s.flows, (uint32_t)(4 * st[0].n_flows)), "every run's flows, distinct");
    free(p);
    for (uint32_t a = 0; a < 4; a++)
        for (uint32_t b = 0; b < a; b++)
            cr_expect(sbt_export_flow_id(runs[a], 1, 5) != sbt_export_flow_id(runs[b], 1, 5));
    cr_expect(sbt_export_flow_id(SBT_EXPORT_MAX_RUN, 3, (1ull << 37) - 1) < (1ull << 53));
    cr_expect(sbt_export_flow_id(100, 0, 0) > sbt_export_flow_id(99, 3, (1ull << 44) - 1),
              "runs from 100 lie above those of runs below 100");
}

Test(perfetto, no_args)
{
    uint8_t *a, *b;
    size_t na, nb;
    struct sbt_export_opts o = SBT_EXPORT_OPTS(.no_args = 1);
    export_mem(SBT_EXPORT_PERFETTO, NULL, &a, &na, NULL);
    export_mem(SBT_EXPORT_PERFETTO, &o, &b, &nb, NULL);
    cr_assert(eq(int, check_pftrace(b, nb, NULL), 0));
    cr_expect(nb < na, "no_args: %zu bytes, with args %zu", nb, na);
    free(a), free(b);
}

struct range_case {
    int has_seq, has_time;
    uint64_t a, b; /* seq or ns relative to the trace start */
    uint64_t n_ops;
};

ParameterizedTestParameters(perfetto, ranges)
{
    static struct range_case cases[] = {
        {1, 0, 0, 5, 5},         // first ops only
        {1, 0, 5, 8, 3},         // a record and its two waits
        {1, 0, 6, 22, 16},       // waits without their record
        {0, 1, 0, 1000, 2},      // the two allocations
        {0, 1, 16000, 17000, 2}, // ops overlapping a window
        {1, 0, 100, 200, 0},     // nothing selected
    };
    return cr_make_param_array(struct range_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct range_case *rc, perfetto, ranges)
{
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace_path, NULL, &r), 0), "%s", sbt_errmsg());
    uint64_t t_min = sbt_reader_info(r)->t_min;
    sbt_reader_close(r);
    struct sbt_range range = {.has_seq = rc->has_seq,
                              .seq_begin = rc->a,
                              .seq_end = rc->b,
                              .has_time = rc->has_time,
                              .t_begin = t_min + rc->a,
                              .t_end = t_min + rc->b};
    struct sbt_export_opts o = SBT_EXPORT_OPTS(.range = &range);
    uint8_t *buf;
    size_t len;
    struct sbt_export_stats st;
    export_mem(SBT_EXPORT_PERFETTO, &o, &buf, &len, &st);
    cr_expect(eq(u64, st.n_ops, rc->n_ops));
    if (rc->n_ops)
        cr_assert(eq(int, check_pftrace(buf, len, NULL), 0));
    else
        cr_assert(eq(sz, len, 0), "an empty range writes an empty (valid) trace");
    free(buf);
}

Test(perfetto, estimate)
{
    sbt_reader *r;
    cr_assert(eq(int, sbt_reader_open(trace_path, NULL, &r), 0), "%s", sbt_errmsg());
    struct sbt_range none = {.has_seq = 1, .seq_begin = 1000, .seq_end = 2000};
    cr_expect(gt(u64, sbt_export_estimate_bytes(r, NULL, SBT_EXPORT_PERFETTO), 0));
    cr_expect(gt(u64, sbt_export_estimate_bytes(r, NULL, SBT_EXPORT_JSON),
                 sbt_export_estimate_bytes(r, NULL, SBT_EXPORT_PERFETTO)));
    cr_expect(eq(u64, sbt_export_estimate_bytes(r, &none, SBT_EXPORT_PERFETTO), 0));
    sbt_reader_close(r);
}

TestSuite(json, .init = make_trace, .fini = drop_trace);

static int contains(const uint8_t *buf, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= len; i++)
        if (!memcmp(buf + i, s, n))
            return 1;
    return 0;
}

Test(json, strict_parser_accepts_it)
{
    uint8_t *buf;
    size_t len;
    export_mem(SBT_EXPORT_JSON, NULL, &buf, &len, NULL);
    int found = 0, bad_ts = 0;
    cr_assert(eq(int, json_parse(buf, len, weird_kernel_utf8, &found, &bad_ts), 0),
              "not valid JSON");
    cr_expect(found, "the kernel name with quotes, backslashes and control bytes decodes back");
    cr_expect(eq(int, bad_ts, 0), "ts and dur are microseconds with exactly three decimals");
    cr_expect(json_parse(buf, len, "mark \"x\"\t\n", &found, NULL) == 0 && found,
              "the marker name with quotes and control characters decodes back");
    /* ns precision: the first kernel ends 3600 + 5400 ns after T0, T0 + 1000 is the start */
    cr_expect(contains(buf, len, "\"ts\":2.600,"), "device start 2600 ns -> 2.600 us");
    cr_expect(contains(buf, len, "\"dur\":5.400,"), "duration 5400 ns -> 5.400 us");
    golden("tests/data/export/small.json", buf, len);
    free(buf);
}

struct bad_json {
    char text[24];
};

ParameterizedTestParameters(json, parser_rejects)
{
    static struct bad_json cases[] = {
        {"{\"a\":1,}"},          // trailing comma
        {"{\"a\":\"\x01\"}"},    // raw control character
        {"{\"a\":\"\\x\"}"},     // bad escape
        {"{\"a\":\"\xff\"}"},    // invalid UTF-8
        {"{\"a\":01}"},          // leading zero
        {"[1 2]"},               // missing comma
        {"{\"a\":1} x"},         // trailing garbage
        {"{\"a\":\"\\ud800\"}"}, // lone surrogate
    };
    return cr_make_param_array(struct bad_json, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad_json *c, json, parser_rejects)
{
    cr_expect(eq(int, json_parse((const uint8_t *)c->text, strlen(c->text), NULL, NULL, NULL), -1),
              "accepted: %s", c->text);
}

/* ---- the emitter on its own ---------------------------------------------------------------- */

static sbt_export_emitter *em_open(int format, char **p, size_t *n, FILE **f,
                                   const struct sbt_export_emitter_opts *o)
{
    FILE *mf = open_memstream(p, n);
    cr_assert(mf != NULL);
    *f = mf;
    sbt_export_emitter *em;
    cr_assert(eq(int, sbt_export_emitter_open(*f, format, o, &em), 0), "%s", sbt_errmsg());
    return em;
}

static void declare_basic(sbt_export_emitter *em)
{
    struct sbt_export_track p = {
        .uuid = 10, .kind = SBT_EXPORT_TRACK_PROCESS, .pid = 1, .name = "proc"};
    struct sbt_export_track t = {
        .uuid = 11, .parent = 10, .kind = SBT_EXPORT_TRACK_SLICES, .name = "slices"};
    struct sbt_export_track c = {.uuid = 12,
                                 .parent = 10,
                                 .kind = SBT_EXPORT_TRACK_COUNTER,
                                 .name = "count",
                                 .unit = SBT_EXPORT_UNIT_COUNT};
    cr_assert(eq(int, sbt_export_track(em, &p), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_export_track(em, &t), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_export_track(em, &c), 0), "%s", sbt_errmsg());
}

/* Parameters are copied into a re-executed process: no pointers in them. */
struct misuse_case {
    int what;
    char msg[40]; /* part of the message */
};

ParameterizedTestParameters(emitter, misuse)
{
    static struct misuse_case cases[] = {
        {0, "not declared"},          // event on an unknown track
        {1, "before the previous"},   // time going back on a track
        {2, "without an open slice"}, // end without begin
        {3, "declared twice"},        // one uuid, two tracks
        {4, "on a slice track"},      // counter value on a slice track
        {5, "on a counter track"},    // slice on a counter track
        {6, "sbt_export_intern"},     // made-up interned id
        {7, "is not declared"},       // parent never declared
        {8, "uuid is 0"},             // uuid 0
        {9, "pid 0 must be >= 1"},    // process without pid
        {10, "not a counter track"},  // counter_add on a slice track
    };
    return cr_make_param_array(struct misuse_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct misuse_case *mc, emitter, misuse)
{
    char *p;
    size_t n;
    FILE *f;
    sbt_export_emitter *em = em_open(SBT_EXPORT_PERFETTO, &p, &n, &f, NULL);
    declare_basic(em);
    struct sbt_export_event ev = {.name = "x"};
    struct sbt_export_track bad = {.uuid = 11, .kind = SBT_EXPORT_TRACK_SLICES};
    int st = 0;
    switch (mc->what) {
    case 0:
        st = sbt_export_slice(em, 99, 0, 1, &ev);
        break;
    case 1:
        cr_assert(eq(int, sbt_export_slice(em, 11, 100, 10, &ev), 0));
        st = sbt_export_instant(em, 11, 50, &ev);
        break;
    case 2:
        st = sbt_export_slice_end(em, 11, 5);
        break;
    case 3:
        st = sbt_export_track(em, &bad);
        break;
    case 4:
        st = sbt_export_counter(em, 11, 5, 1);
        break;
    case 5:
        st = sbt_export_instant(em, 12, 5, &ev);
        break;
    case 6:
        ev.name_id = 1000;
        st = sbt_export_instant(em, 11, 5, &ev);
        break;
    case 7:
        bad = (struct sbt_export_track){.uuid = 20, .parent = 77, .kind = SBT_EXPORT_TRACK_SLICES};
        st = sbt_export_track(em, &bad);
        break;
    case 8:
        bad = (struct sbt_export_track){.uuid = 0, .kind = SBT_EXPORT_TRACK_SLICES};
        st = sbt_export_track(em, &bad);
        break;
    case 9:
        bad = (struct sbt_export_track){.uuid = 30, .kind = SBT_EXPORT_TRACK_PROCESS};
        st = sbt_export_track(em, &bad);
        break;
    case 10:
        st = sbt_export_counter_add(em, 11, 5, 1);
        break;
    }
    cr_expect(eq(int, st, SBT_EINVAL), "status %d: %s", st, sbt_errmsg());
    cr_expect(strstr(sbt_errmsg(), mc->msg) != NULL, "message '%s' lacks '%s'", sbt_errmsg(),
              mc->msg);
    sbt_export_emitter_close(em);
    fclose(f);
    free(p);
}

Test(emitter, nested_slices_instants_counters)
{
    char *p;
    size_t n;
    FILE *f;
    sbt_export_emitter *em = em_open(SBT_EXPORT_PERFETTO, &p, &n, &f, NULL);
    declare_basic(em);
    struct sbt_export_arg args[] = {
        {.name = "i", .type = SBT_EXPORT_ARG_INT, .v.i = -5},
        {.name = "d", .type = SBT_EXPORT_ARG_DOUBLE, .v.d = 1.5},
        {.name = "h", .type = SBT_EXPORT_ARG_HEX, .v.u = 0xdead},
        {.name = "b", .type = SBT_EXPORT_ARG_BOOL, .v.u = 1},
        {.name = "s", .type = SBT_EXPORT_ARG_STR, .v.s = "text"},
    };
    uint64_t flow = sbt_export_flow_id(0, 1, 5);
    struct sbt_export_event outer = {.name = "outer",
                                     .category = "c",
                                     .args = args,
                                     .n_args = 5,
                                     .flow_out = &flow,
                                     .n_flow_out = 1,
                                     .correlation_id = 77};
    struct sbt_export_event inner = {.name = "inner", .flow_in = &flow, .n_flow_in = 1};
    cr_assert(eq(int, sbt_export_slice_begin(em, 11, 100, &outer), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_export_slice(em, 11, 110, 10, &inner), 0), "%s", sbt_errmsg());
    struct sbt_export_event plain = {.name = "tick"};
    cr_assert(eq(int, sbt_export_instant(em, 11, 120, &plain), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_export_slice_end(em, 11, 130), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_export_counter(em, 12, 100, 3), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_export_counter_double(em, 12, 200, 2.5), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_export_emitter_close(em), 0), "%s", sbt_errmsg());
    fclose(f);
    struct pf_summary s;
    cr_assert(eq(int, check_pftrace((uint8_t *)p, n, &s), 0));
    cr_expect(eq(u32, s.slices, 2));
    cr_expect(eq(u32, s.instants, 1));
    cr_expect(eq(u32, s.flows, 1));
    cr_expect(eq(u32, s.counter_values, 2));
    free(p);
}

Test(emitter, counter_add_reorders)
{
    char *p;
    size_t n;
    FILE *f;
    sbt_export_emitter *em = em_open(SBT_EXPORT_PERFETTO, &p, &n, &f, NULL);
    declare_basic(em);
    /* changes out of order; two at one time make one sample */
    cr_assert(eq(int, sbt_export_counter_add(em, 12, 300, -4), 0));
    cr_assert(eq(int, sbt_export_counter_add(em, 12, 100, 5), 0));
    cr_assert(eq(int, sbt_export_counter_add(em, 12, 200, 2), 0));
    cr_assert(eq(int, sbt_export_counter_add(em, 12, 200, 1), 0));
    cr_assert(eq(int, sbt_export_advance(em, 250), 0));             /* writes 100 and 200 */
    cr_assert(eq(int, sbt_export_counter_add(em, 12, 150, 10), 0)); /* late: at 200 */
    cr_assert(eq(int, sbt_export_emitter_close(em), 0), "%s", sbt_errmsg());
    fclose(f);
    cr_assert(eq(int, check_pftrace((uint8_t *)p, n, NULL), 0));
    /* decode the samples: (100, 5) (200, 8) (200, 18) (300, 14) */
    uint64_t want_ts[] = {100, 200, 200, 300};
    int64_t want_v[] = {5, 8, 18, 14};
    size_t pos = 0, k = 0;
    while (pos < n) {
        uint64_t len;
        pos++;
        cr_assert(eq(int, sbt_varint_decode((uint8_t *)p, n, &pos, &len), 0));
        Perfetto__Protos__TracePacket *pk =
            perfetto__protos__trace_packet__unpack(NULL, len, (uint8_t *)p + pos);
        pos += len;
        if (pk->track_event &&
            pk->track_event->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER) {
            cr_assert(lt(sz, k, 4));
            cr_expect(eq(u64, pk->timestamp, want_ts[k]));
            cr_expect(eq(i64, pk->track_event->counter_value, want_v[k]));
            k++;
        }
        perfetto__protos__trace_packet__free_unpacked(pk, NULL);
    }
    cr_expect(eq(sz, k, 4));
    free(p);
}

Test(emitter, interning_table_full)
{
    char *p;
    size_t n;
    FILE *f;
    struct sbt_export_emitter_opts o = SBT_EXPORT_EMITTER_OPTS(.max_interned = 2);
    sbt_export_emitter *em = em_open(SBT_EXPORT_PERFETTO, &p, &n, &f, &o);
    declare_basic(em);
    char name[32];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "name %d", i % 5);
        struct sbt_export_arg a = {.name = name, .type = SBT_EXPORT_ARG_ISTR, .v.s = name};
        struct sbt_export_event ev = {.name = name, .category = name, .args = &a, .n_args = 1};
        cr_assert(eq(int, sbt_export_instant(em, 11, (uint64_t)i, &ev), 0), "%s", sbt_errmsg());
    }
    cr_expect(eq(u32, sbt_export_intern(em, SBT_EXPORT_STR_NAME, "another"), 0));
    cr_assert(eq(int, sbt_export_emitter_close(em), 0), "%s", sbt_errmsg());
    fclose(f);
    cr_assert(eq(int, check_pftrace((uint8_t *)p, n, NULL), 0));
    free(p);
}

Test(emitter, json_counters_and_flows)
{
    char *p;
    size_t n;
    FILE *f;
    sbt_export_emitter *em = em_open(SBT_EXPORT_JSON, &p, &n, &f, NULL);
    declare_basic(em);
    uint64_t flow = sbt_export_flow_id(3, 2, 9);
    struct sbt_export_arg a = {.name = "nan", .type = SBT_EXPORT_ARG_DOUBLE, .v.d = NAN};
    struct sbt_export_event ev = {
        .name = "a", .flow_out = &flow, .n_flow_out = 1, .args = &a, .n_args = 1};
    cr_assert(eq(int, sbt_export_slice_begin(em, 11, 1001, &ev), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_export_slice_end(em, 11, 2002), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_export_counter_add(em, 12, 5, 7), 0), "%s", sbt_errmsg());
    cr_assert(eq(int, sbt_export_emitter_close(em), 0), "%s", sbt_errmsg());
    fclose(f);
    cr_assert(eq(int, json_parse((uint8_t *)p, n, NULL, NULL, NULL), 0), "%.*s", (int)n, p);
    cr_expect(strstr(p, "\"ts\":1.001,") && strstr(p, "\"ts\":2.002,"), "%s", p);
    cr_expect(strstr(p, "\"nan\":null") != NULL, "NaN is not JSON: %s", p);
    cr_expect(flow < (1ull << 53), "flow ids stay exact in JSON readers");
    free(p);
}

/* ---- the command ---------------------------------------------------------------------------- */

static int run(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TestSuite(cli, .init = make_trace, .fini = drop_trace);

Test(cli, export_command)
{
    const char *bin = getenv("REPRISE_BIN");
    if (!bin || access(bin, X_OK))
        cr_skip_test("REPRISE_BIN not set (run through make check)");
    char cmd[512], out[80];
    /* trace_path has no .sbt extension: the default output appends one */
    snprintf(cmd, sizeof cmd, "%s export %s -f perfetto -q", bin, trace_path);
    cr_expect(eq(int, run(cmd), 0));
    snprintf(out, sizeof out, "%s.pftrace", trace_path);
    cr_expect(eq(int, access(out, R_OK), 0), "default output name %s", out);
    unlink(out);
    snprintf(cmd, sizeof cmd, "%s export %s -f json -o - -q --ops 0:5 > /dev/null", bin,
             trace_path);
    cr_expect(eq(int, run(cmd), 0));
    snprintf(cmd, sizeof cmd, "%s export %s -f dot -o - -q --ops 0:10 | grep -q '^digraph'", bin,
             trace_path);
    cr_expect(eq(int, run(cmd), 0), "DOT of a range, from the scheduler");
    snprintf(cmd, sizeof cmd, "%s export %s -f svg 2>/dev/null", bin, trace_path);
    cr_expect(eq(int, run(cmd), 2), "unknown format: usage error");
    snprintf(cmd, sizeof cmd, "%s export %s -f perfetto --group-by disk 2>/dev/null", bin,
             trace_path);
    cr_expect(eq(int, run(cmd), 2), "unknown grouping: usage error");
    snprintf(cmd, sizeof cmd, "%s export /nonexistent.sbt -f json 2>/dev/null", bin);
    cr_expect(eq(int, run(cmd), 3), "missing input: bad input");
    snprintf(cmd, sizeof cmd, "%s export --help > /dev/null", bin);
    cr_expect(eq(int, run(cmd), 0));
}
