/*
 * format/sbt_perfetto.c — the Perfetto protobuf backend of the export emitter: turns checked
 * tracks and events (format/sbt_export.c) into TracePackets, each framed as field 1 of
 * perfetto.protos.Trace (0x0A, varint length, packet), so the file is a valid Trace however
 * it is cut into writes and nothing is held but the packet being written.
 *
 * Rare packets (track descriptors, the first packet of a sequence) are packed by protobuf-c
 * from format/perfetto_trace.proto. Event packets (several per op) are encoded here directly,
 * because protobuf-c's reflective packer would cost more than the whole reader per op: fields
 * in ascending field-number order, as protobuf-c packs them, nested lengths fixed up after
 * the fact, repeated fields never packed. tests/test_export.c unpacks every packet with
 * protobuf-c and re-packs it to prove both encoders agree byte for byte.
 *
 * Sequences (../shared/research/perfetto.md 4.1, 4.2): each track gets its own packet sequence
 * at its first event. That packet sets SEQ_INCREMENTAL_STATE_CLEARED and TracePacketDefaults
 * naming the track, so no event carries a track uuid; every event packet sets
 * SEQ_NEEDS_INCREMENTAL_STATE and defines, in InternedData, the iids it is the first on its
 * sequence to use.
 */
#include <string.h>

#include "format/perfetto_trace.pb-c.h"
#include "format/sbt.h"
#include "format/sbt_export_int.h"
#include "format/sbt_int.h"

enum {
    SEQ_CLEARED = 1, /* TracePacket.SEQ_INCREMENTAL_STATE_CLEARED */
    SEQ_NEEDS = 2,   /* TracePacket.SEQ_NEEDS_INCREMENTAL_STATE */
};

/* ---- wire encoding ------------------------------------------------------------------------ */

static inline uint8_t *pb_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80)
        v >>= 7, n++;
    return n;
}

static inline uint8_t *pb_tag(uint8_t *p, uint32_t field, uint32_t wire_type)
{
    return pb_varint(p, (uint64_t)field << 3 | wire_type);
}

static inline uint8_t *pb_uint(uint8_t *p, uint32_t field, uint64_t v)
{
    return pb_varint(pb_tag(p, field, 0), v);
}

static inline uint8_t *pb_fixed64(uint8_t *p, uint32_t field, uint64_t v)
{
    p = pb_tag(p, field, 1);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 8);
    return p + 8;
#else
    for (int i = 0; i < 8; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
#endif
}

/* A string from the caller: written as valid UTF-8. */
static uint8_t *pb_str(uint8_t *p, uint32_t field, const char *s)
{
    size_t len = strlen(s);
    p = pb_varint(pb_tag(p, field, 2), sbt__x_utf8_len(s, len));
    return sbt__x_utf8_copy(p, s, len);
}

/* A string already made valid (interned copies). */
static uint8_t *pb_raw(uint8_t *p, uint32_t field, const char *s)
{
    size_t len = strlen(s);
    p = pb_varint(pb_tag(p, field, 2), len);
    memcpy(p, s, len);
    return p + len;
}

/* Nested message: open reserves one length byte; close writes the length, moving the body
 * when the length needs more bytes (bodies of 128 bytes or more: rare). */
static inline uint8_t *pb_open(uint8_t *p, uint32_t field)
{
    return pb_tag(p, field, 2) + 1;
}

static inline uint8_t *pb_close(uint8_t *body, uint8_t *end)
{
    size_t n = (size_t)(end - body);
    if (n < 0x80) {
        body[-1] = (uint8_t)n;
        return end;
    }
    size_t extra = varint_len(n) - 1;
    memmove(body + extra, body, n);
    pb_varint(body - 1, n);
    return end + extra;
}

/* Bytes an encoded string of len input bytes may take, tag and length included. */
static inline size_t str_bound(size_t len)
{
    return 3 * len + 16;
}

/* Packs a protobuf-c packet into the output as one Trace.packet. */
static int pack_packet(sbt_export_emitter *em, const Perfetto__Protos__TracePacket *pk)
{
    size_t n = perfetto__protos__trace_packet__get_packed_size(pk);
    int st = sbt__x_reserve(em, n + 16);
    if (st < 0)
        return st;
    uint8_t *p = em->buf + em->len;
    *p++ = 0x0a; /* Trace.packet, length-delimited */
    p = pb_varint(p, n);
    p += perfetto__protos__trace_packet__pack(pk, p);
    em->len = (size_t)(p - em->buf);
    return 0;
}

/* ---- tracks ------------------------------------------------------------------------------- */

/* protobuf-c wants NUL-terminated strings: valid UTF-8 copies of the caller's. */
static char *utf8_dup(const char *s)
{
    if (!s)
        return NULL;
    size_t len = strlen(s);
    char *d = sbt__malloc(sbt__x_utf8_len(s, len) + 1);
    if (d)
        *sbt__x_utf8_copy((uint8_t *)d, s, len) = 0;
    return d;
}

int sbt__pf_track(sbt_export_emitter *em, struct sbt__xtrack *t, const struct sbt_export_track *d)
{
    Perfetto__Protos__TracePacket pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
    Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
    Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
    char *name = utf8_dup(d->name), *desc = utf8_dup(d->description);
    if ((d->name && !name) || (d->description && !desc)) {
        sbt__free(name), sbt__free(desc);
        return sbt__fail(SBT_ENOMEM, "export: no memory for a track name");
    }
    pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
    pk.track_descriptor = &td;
    td.has_uuid = 1, td.uuid = d->uuid;
    td.description = desc;
    switch (d->kind) {
    case SBT_EXPORT_TRACK_PROCESS:
        pd.has_pid = 1, pd.pid = d->pid;
        pd.process_name = name;
        td.process = &pd;
        break;
    case SBT_EXPORT_TRACK_THREAD:
        thd.has_pid = 1, thd.pid = d->pid;
        thd.has_tid = 1, thd.tid = d->tid;
        thd.thread_name = name;
        td.thread = &thd;
        break;
    case SBT_EXPORT_TRACK_COUNTER:
        if (d->unit)
            cd.has_unit = 1, cd.unit = (Perfetto__Protos__CounterDescriptor__Unit)d->unit;
        td.counter = &cd;
        /* fall through */
    default:
        td.name = name;
        if (t->parent)
            td.has_parent_uuid = 1, td.parent_uuid = em->tracks[t->parent - 1].uuid;
        if (d->separate) {
            td.has_sibling_merge_behavior = 1;
            td.sibling_merge_behavior =
                PERFETTO__PROTOS__TRACK_DESCRIPTOR__SIBLING_MERGE_BEHAVIOR__SIBLING_MERGE_BEHAVIOR_NONE;
        }
        break;
    }
    if (d->rank)
        td.has_sibling_order_rank = 1, td.sibling_order_rank = d->rank;
    int st = pack_packet(em, &pk);
    sbt__free(name), sbt__free(desc);
    return st;
}

/* ---- events ------------------------------------------------------------------------------- */

/* The first packet of a track's sequence: clears incremental state, names the track. */
static int start_sequence(sbt_export_emitter *em, struct sbt__xtrack *t, uint64_t ts)
{
    Perfetto__Protos__TracePacket pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    Perfetto__Protos__TracePacketDefaults d = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
    Perfetto__Protos__TrackEventDefaults ted = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
    t->seq = ++em->n_seq;
    pk.has_timestamp = 1, pk.timestamp = ts;
    pk.has_trusted_packet_sequence_id = 1, pk.trusted_packet_sequence_id = t->seq;
    pk.has_sequence_flags = 1, pk.sequence_flags = SEQ_CLEARED | SEQ_NEEDS;
    pk.has_first_packet_on_sequence = 1, pk.first_packet_on_sequence = 1;
    ted.has_track_uuid = 1, ted.track_uuid = t->uuid;
    d.track_event_defaults = &ted;
    pk.trace_packet_defaults = &d;
    return pack_packet(em, &pk);
}

struct def {
    uint8_t kind;
    uint32_t iid;
};

/* InternedData field of each kind, in field-number order of the kinds below */
static const uint32_t intern_field[SBT__XI__COUNT] = {
    [SBT__XI_CAT] = 1, [SBT__XI_NAME] = 2, [SBT__XI_ARG] = 3, [SBT__XI_VALUE] = 29};
static const uint8_t intern_order[SBT__XI__COUNT] = {SBT__XI_CAT, SBT__XI_NAME, SBT__XI_ARG,
                                                     SBT__XI_VALUE};

/* iid of a string on t's sequence: id if the caller interned it, else s interned now (0: the
 * table is full, write s inline). A definition is noted when the iid is new on the sequence. */
static inline uint32_t use_iid(sbt_export_emitter *em, struct sbt__xtrack *t, int kind, uint32_t id,
                               const char *s, struct def *defs, uint32_t *nd)
{
    uint32_t iid = id ? id : s ? sbt__x_intern(em, kind, s) : 0;
    if (!iid)
        return 0;
    uint32_t w = iid / 64;
    uint64_t bit = 1ull << (iid % 64);
    if (w < t->n_defined[kind] && (t->defined[kind][w] & bit))
        return iid; /* the common case: already defined on this sequence */
    if (!sbt__x_define(em, t, kind, iid))
        defs[(*nd)++] = (struct def){(uint8_t)kind, iid};
    return iid;
}

#define MAX_ARGS 64u

static int encode_event(sbt_export_emitter *em, struct sbt__xtrack *t, int type, uint64_t ts,
                        const struct sbt_export_event *ev, int is_double, int64_t iv, double dv)
{
    uint32_t n_args = ev->n_args < MAX_ARGS ? ev->n_args : MAX_ARGS;
    struct def defs[2 + 2 * MAX_ARGS];
    uint32_t nd = 0, arg_iid[MAX_ARGS], val_iid[MAX_ARGS];
    /* room: fixed fields, flows, and the strings written inline or defined here */
    size_t bound = 96 + 12 * ((size_t)ev->n_flow_in + ev->n_flow_out) + 48 * (size_t)n_args;
    uint32_t name_iid = use_iid(em, t, SBT__XI_NAME, ev->name_id, ev->name, defs, &nd);
    uint32_t cat_iid = use_iid(em, t, SBT__XI_CAT, ev->category_id, ev->category, defs, &nd);
    if (!name_iid && ev->name)
        bound += str_bound(strlen(ev->name));
    if (!cat_iid && ev->category)
        bound += str_bound(strlen(ev->category));
    for (uint32_t i = 0; i < n_args; i++) {
        const struct sbt_export_arg *a = &ev->args[i];
        const char *an = a->name ? a->name : "";
        arg_iid[i] = use_iid(em, t, SBT__XI_ARG, a->name_id, an, defs, &nd);
        if (!arg_iid[i])
            bound += str_bound(strlen(an));
        val_iid[i] = 0;
        if (a->type == SBT_EXPORT_ARG_VALUE_ID) {
            val_iid[i] = use_iid(em, t, SBT__XI_VALUE, a->v.id, NULL, defs, &nd);
        } else if (a->type == SBT_EXPORT_ARG_STR || a->type == SBT_EXPORT_ARG_ISTR) {
            const char *s = a->v.s ? a->v.s : "";
            if (a->type == SBT_EXPORT_ARG_ISTR)
                val_iid[i] = use_iid(em, t, SBT__XI_VALUE, 0, s, defs, &nd);
            if (!val_iid[i])
                bound += str_bound(strlen(s));
        }
    }
    for (uint32_t i = 0; i < nd; i++)
        bound += 16 + 4 + em->intern[defs[i].kind].len_by_iid[defs[i].iid - 1];
    if (em->failed)
        return em->failed;
    int st = sbt__x_reserve(em, bound);
    if (st < 0)
        return st;

    uint8_t *p = em->buf + em->len;
    uint8_t *pkt = pb_open(p, 1); /* Trace.packet */
    p = pb_uint(pkt, 8, ts);      /* TracePacket.timestamp */
    p = pb_uint(p, 10, t->seq);   /* trusted_packet_sequence_id */
    uint8_t *te = pb_open(p, 11); /* track_event */
    p = te;
    if (cat_iid)
        p = pb_uint(p, 3, cat_iid); /* category_iids, one value per occurrence */
    for (uint32_t i = 0; i < n_args; i++) {
        const struct sbt_export_arg *a = &ev->args[i];
        uint8_t *da = pb_open(p, 4); /* debug_annotations */
        p = da;
        if (arg_iid[i])
            p = pb_uint(p, 1, arg_iid[i]); /* name_iid */
        switch (a->type) {
        case SBT_EXPORT_ARG_BOOL:
            p = pb_uint(p, 2, a->v.u != 0);
            break;
        case SBT_EXPORT_ARG_INT:
            p = pb_uint(p, 4, (uint64_t)a->v.i);
            break;
        case SBT_EXPORT_ARG_DOUBLE: {
            uint64_t bits;
            memcpy(&bits, &a->v.d, sizeof bits);
            p = pb_fixed64(p, 5, bits);
            break;
        }
        case SBT_EXPORT_ARG_STR:
        case SBT_EXPORT_ARG_ISTR:
        case SBT_EXPORT_ARG_VALUE_ID:
            if (!val_iid[i])
                p = pb_str(p, 6, a->v.s ? a->v.s : "");
            break;
        case SBT_EXPORT_ARG_HEX:
            p = pb_uint(p, 7, a->v.u);
            break;
        default:
            p = pb_uint(p, 3, a->v.u);
            break;
        }
        if (!arg_iid[i])
            p = pb_str(p, 10, a->name ? a->name : ""); /* name */
        if (val_iid[i])
            p = pb_uint(p, 17, val_iid[i]); /* string_value_iid */
        p = pb_close(da, p);
    }
    p = pb_uint(p, 9, (uint64_t)type);
    if (name_iid)
        p = pb_uint(p, 10, name_iid);
    if (ev->category && !cat_iid)
        p = pb_str(p, 22, ev->category); /* categories: the table was full */
    if (ev->name && !name_iid)
        p = pb_str(p, 23, ev->name); /* name */
    if (type == SBT__XEV_COUNTER) {
        if (is_double) {
            uint64_t bits;
            memcpy(&bits, &dv, sizeof bits);
            p = pb_fixed64(p, 44, bits); /* double_counter_value */
        } else {
            p = pb_uint(p, 30, (uint64_t)iv); /* counter_value */
        }
    }
    for (uint32_t i = 0; i < ev->n_flow_out; i++)
        p = pb_fixed64(p, 47, ev->flow_out[i]); /* flow_ids, unpacked */
    for (uint32_t i = 0; i < ev->n_flow_in; i++)
        p = pb_fixed64(p, 48, ev->flow_in[i]); /* terminating_flow_ids, unpacked */
    if (ev->correlation_id)
        p = pb_uint(p, 52, ev->correlation_id);
    p = pb_close(te, p);
    if (nd) {
        uint8_t *id = pb_open(p, 12); /* interned_data */
        p = id;
        for (int k = 0; k < SBT__XI__COUNT; k++) {
            int kind = intern_order[k];
            for (uint32_t i = 0; i < nd; i++) {
                if (defs[i].kind != kind)
                    continue;
                uint8_t *e = pb_open(p, intern_field[kind]);
                p = pb_uint(e, 1, defs[i].iid);
                p = pb_raw(p, 2, em->intern[kind].by_iid[defs[i].iid - 1]);
                p = pb_close(e, p);
            }
        }
        p = pb_close(id, p);
    }
    p = pb_uint(p, 13, SEQ_NEEDS); /* sequence_flags */
    p = pb_close(pkt, p);
    em->len = (size_t)(p - em->buf);
    return 0;
}

/* TYPE_SLICE_END: half of all packets, and always the same few fields. */
static int encode_end(sbt_export_emitter *em, struct sbt__xtrack *t, uint64_t ts)
{
    int st = sbt__x_reserve(em, 48);
    if (st < 0)
        return st;
    uint8_t *p = em->buf + em->len;
    uint8_t *pkt = pb_open(p, 1);
    p = pb_uint(pkt, 8, ts);
    p = pb_uint(p, 10, t->seq);
    *p++ = 11 << 3 | 2; /* track_event, 2 bytes: type = TYPE_SLICE_END */
    *p++ = 2;
    *p++ = 9 << 3;
    *p++ = SBT__XEV_END;
    p = pb_uint(p, 13, SEQ_NEEDS);
    p = pb_close(pkt, p);
    em->len = (size_t)(p - em->buf);
    return 0;
}

int sbt__pf_event(sbt_export_emitter *em, struct sbt__xtrack *t, int type, uint64_t ts,
                  uint64_t dur, const struct sbt_export_event *ev, int is_double, int64_t iv,
                  double dv)
{
    int st;
    if (!t->seq && (st = start_sequence(em, t, ts)) < 0)
        return st;
    if (type == SBT__XEV_COMPLETE) {
        if ((st = encode_event(em, t, SBT__XEV_BEGIN, ts, ev, 0, 0, 0)) < 0)
            return st;
        return encode_end(em, t, ts + dur);
    }
    if (type == SBT__XEV_END)
        return encode_end(em, t, ts);
    return encode_event(em, t, type, ts, ev, is_double, iv, dv);
}
