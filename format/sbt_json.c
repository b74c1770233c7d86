/*
 * format/sbt_json.c — the Chrome JSON backend of the export emitter: the legacy trace-event
 * format ({"traceEvents":[...]}) that chrome://tracing, Perfetto and most profilers read.
 * A fallback: it cannot nest tracks or describe them, and its flows are weaker than
 * Perfetto's (../shared/research/perfetto.md section 6).
 *
 * Mapping: a process track is a pid; a thread track a (pid, tid); a slice track (a stream
 * lane) a synthetic tid in its process named by a thread_name record; a counter track a "C"
 * event series named after the track. Whole slices are "X" events, begin/end "B"/"E",
 * instants "i" (thread scope), flows "s"/"f" bound to the enclosing slice ("bp":"e").
 *
 * Times are microseconds with exactly three decimals, so nanoseconds survive ("ts":1.234 is
 * 1234 ns). Strings are escaped for strict parsers: quote and backslash escaped, control
 * characters as \u00XX, bytes that are not UTF-8 as \ufffd. One event per line.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format/sbt.h"
#include "format/sbt_export_int.h"
#include "format/sbt_int.h"

#define JSON_TID_BASE 0x40000000 /* tids of slice tracks: clear of real thread ids */

static uint8_t *put(uint8_t *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = (uint8_t)tmp[--n];
    return p;
}

static uint8_t *put_i64(uint8_t *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

/* ns as microseconds with three decimals */
static uint8_t *put_us(uint8_t *p, uint64_t ns)
{
    p = put_u64(p, ns / 1000);
    unsigned f = (unsigned)(ns % 1000);
    *p++ = '.';
    *p++ = (uint8_t)('0' + f / 100);
    *p++ = (uint8_t)('0' + f / 10 % 10);
    *p++ = (uint8_t)('0' + f % 10);
    return p;
}

static uint8_t *put_double(uint8_t *p, double d)
{
    if (!isfinite(d))
        return put(p, "null"); /* JSON has no NaN or infinity */
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.17g", d);
    memcpy(p, tmp, (size_t)n);
    return p + n;
}

/* Bytes a JSON string of len input bytes may take, quotes included. */
static size_t jstr_bound(size_t len)
{
    return 6 * len + 2;
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    *p++ = '"';
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        uint8_t c = (uint8_t)s[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            *p++ = c, i++;
        } else if (c == '"' || c == '\\') {
            *p++ = '\\', *p++ = c, i++;
        } else if (c < 0x20) {
            *p++ = '\\', *p++ = 'u', *p++ = '0', *p++ = '0';
            *p++ = (uint8_t)hex[c >> 4], *p++ = (uint8_t)hex[c & 15];
            i++;
        } else {
            size_t n = sbt__x_utf8_seq((const uint8_t *)s + i, len - i);
            if (n) {
                memcpy(p, s + i, n);
                p += n, i += n;
            } else {
                p = put(p, "\\ufffd");
                i++;
            }
        }
    }
    *p++ = '"';
    return p;
}

int sbt__json_begin(sbt_export_emitter *em)
{
    static const char head[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    int st = sbt__x_reserve(em, sizeof head);
    if (st < 0)
        return st;
    memcpy(em->buf + em->len, head, sizeof head - 1);
    em->len += sizeof head - 1;
    return 0;
}

int sbt__json_finish(sbt_export_emitter *em)
{
    static const char tail[] = "\n]}\n";
    int st = sbt__x_reserve(em, sizeof tail);
    if (st < 0)
        return st;
    memcpy(em->buf + em->len, tail, sizeof tail - 1);
    em->len += sizeof tail - 1;
    return 0;
}

/* Starts one event object: the separator from the previous one. */
static uint8_t *open_obj(sbt_export_emitter *em, uint8_t *p)
{
    if (!em->json_first)
        p = put(p, ",\n");
    em->json_first = 0;
    return put(p, "{");
}

static uint8_t *put_meta(sbt_export_emitter *em, uint8_t *p, const char *what, int32_t pid,
                         int64_t tid, const char *name, int32_t sort)
{
    p = open_obj(em, p);
    p = put(p, "\"ph\":\"M\",\"pid\":");
    p = put_i64(p, pid);
    p = put(p, ",\"tid\":");
    p = put_i64(p, tid);
    p = put(p, ",\"name\":\"");
    p = put(p, what);
    if (name) {
        p = put(p, "_name\",\"args\":{\"name\":");
        p = put_str(p, name);
    } else {
        p = put(p, "_sort_index\",\"args\":{\"sort_index\":");
        p = put_i64(p, sort);
    }
    return put(p, "}}");
}

int sbt__json_track(sbt_export_emitter *em, struct sbt__xtrack *t, const struct sbt_export_track *d)
{
    const char *name = d->name ? d->name : "";
    int st = sbt__x_reserve(em, 2 * jstr_bound(strlen(name)) + 512);
    if (st < 0)
        return st;
    uint8_t *p = em->buf + em->len;
    switch (d->kind) {
    case SBT_EXPORT_TRACK_PROCESS:
        t->tid = 0;
        p = put_meta(em, p, "process", t->pid, 0, name, 0);
        if (d->rank)
            p = put_meta(em, p, "process", t->pid, 0, NULL, d->rank);
        break;
    case SBT_EXPORT_TRACK_THREAD:
    case SBT_EXPORT_TRACK_SLICES:
        if (d->kind == SBT_EXPORT_TRACK_SLICES)
            t->tid = JSON_TID_BASE + (int64_t)(t - em->tracks);
        p = put_meta(em, p, "thread", t->pid, t->tid, name, 0);
        if (d->rank)
            p = put_meta(em, p, "thread", t->pid, t->tid, NULL, d->rank);
        break;
    default: /* counters are named on each sample */
        break;
    }
    em->len = (size_t)(p - em->buf);
    return 0;
}

static uint8_t *put_where(uint8_t *p, const struct sbt__xtrack *t, uint64_t ts)
{
    p = put(p, ",\"ts\":");
    p = put_us(p, ts);
    p = put(p, ",\"pid\":");
    p = put_i64(p, t->pid);
    p = put(p, ",\"tid\":");
    return put_i64(p, t->tid);
}

static uint8_t *put_args(const sbt_export_emitter *em, uint8_t *p,
                         const struct sbt_export_event *ev)
{
    p = put(p, ",\"args\":{");
    for (uint32_t i = 0; i < ev->n_args; i++) {
        const struct sbt_export_arg *a = &ev->args[i];
        const char *an = sbt__x_string(em, SBT__XI_ARG, a->name_id, a->name);
        if (i)
            *p++ = ',';
        p = put_str(p, an ? an : "");
        *p++ = ':';
        switch (a->type) {
        case SBT_EXPORT_ARG_INT:
            p = put_i64(p, a->v.i);
            break;
        case SBT_EXPORT_ARG_DOUBLE:
            p = put_double(p, a->v.d);
            break;
        case SBT_EXPORT_ARG_BOOL:
            p = put(p, a->v.u ? "true" : "false");
            break;
        case SBT_EXPORT_ARG_STR:
        case SBT_EXPORT_ARG_ISTR:
            p = put_str(p, a->v.s ? a->v.s : "");
            break;
        case SBT_EXPORT_ARG_VALUE_ID:
            p = put_str(p, sbt__x_string(em, SBT__XI_VALUE, a->v.id, NULL));
            break;
        case SBT_EXPORT_ARG_HEX: {
            char tmp[24];
            snprintf(tmp, sizeof tmp, "\"0x%" PRIx64 "\"", a->v.u);
            p = put(p, tmp);
            break;
        }
        default:
            p = put_u64(p, a->v.u);
            break;
        }
    }
    if (ev->correlation_id) {
        p = put(p, ev->n_args ? ",\"correlation_id\":" : "\"correlation_id\":");
        p = put_u64(p, ev->correlation_id);
    }
    return put(p, "}");
}

int sbt__json_event(sbt_export_emitter *em, struct sbt__xtrack *t, int type, uint64_t ts,
                    uint64_t dur, const struct sbt_export_event *ev, int is_double, int64_t iv,
                    double dv)
{
    const char *name = sbt__x_string(em, SBT__XI_NAME, ev->name_id, ev->name);
    const char *cat = sbt__x_string(em, SBT__XI_CAT, ev->category_id, ev->category);
    size_t bound = 256 + 160 * ((size_t)ev->n_flow_in + ev->n_flow_out);
    if (name)
        bound += jstr_bound(strlen(name));
    if (cat)
        bound += jstr_bound(strlen(cat));
    if (type == SBT__XEV_COUNTER && t->name)
        bound += jstr_bound(strlen(t->name));
    for (uint32_t i = 0; i < ev->n_args; i++) {
        const struct sbt_export_arg *a = &ev->args[i];
        const char *an = sbt__x_string(em, SBT__XI_ARG, a->name_id, a->name);
        bound += jstr_bound(an ? strlen(an) : 0) + 48;
        if (a->type == SBT_EXPORT_ARG_VALUE_ID)
            bound += jstr_bound(strlen(sbt__x_string(em, SBT__XI_VALUE, a->v.id, NULL)));
        else if ((a->type == SBT_EXPORT_ARG_STR || a->type == SBT_EXPORT_ARG_ISTR) && a->v.s)
            bound += jstr_bound(strlen(a->v.s));
    }
    int st = sbt__x_reserve(em, bound);
    if (st < 0)
        return st;
    uint8_t *p = open_obj(em, em->buf + em->len);
    if (type == SBT__XEV_COUNTER) {
        p = put(p, "\"ph\":\"C\",\"name\":");
        p = put_str(p, t->name ? t->name : "");
        p = put(p, ",\"ts\":");
        p = put_us(p, ts);
        p = put(p, ",\"pid\":");
        p = put_i64(p, t->pid);
        p = put(p, ",\"args\":{\"value\":");
        p = is_double ? put_double(p, dv) : put_i64(p, iv);
        p = put(p, "}}");
        em->len = (size_t)(p - em->buf);
        return 0;
    }
    static const char *ph[] = {
        [SBT__XEV_BEGIN] = "B", [SBT__XEV_END] = "E", [SBT__XEV_INSTANT] = "i"};
    p = put(p, "\"ph\":\"");
    p = put(p, type == SBT__XEV_COMPLETE ? "X" : ph[type]);
    *p++ = '"';
    if (type != SBT__XEV_END) {
        p = put(p, ",\"name\":");
        p = put_str(p, name ? name : "");
        if (cat) {
            p = put(p, ",\"cat\":");
            p = put_str(p, cat);
        }
    }
    p = put_where(p, t, ts);
    if (type == SBT__XEV_COMPLETE) {
        p = put(p, ",\"dur\":");
        p = put_us(p, dur);
    }
    if (type == SBT__XEV_INSTANT)
        p = put(p, ",\"s\":\"t\"");
    if (type != SBT__XEV_END && (ev->n_args || ev->correlation_id))
        p = put_args(em, p, ev);
    *p++ = '}';
    /* flows bind to the slice that encloses them on this thread at ts: the one just written */
    for (int dir = 0; dir < 2; dir++) {
        uint32_t n = dir ? ev->n_flow_in : ev->n_flow_out;
        const uint64_t *ids = dir ? ev->flow_in : ev->flow_out;
        for (uint32_t i = 0; i < n; i++) {
            p = open_obj(em, p);
            p = put(p, dir ? "\"ph\":\"f\",\"bp\":\"e\"" : "\"ph\":\"s\"");
            p = put(p, ",\"name\":\"flow\",\"cat\":\"flow\",\"id\":");
            p = put_u64(p, ids[i]);
            p = put_where(p, t, ts);
            *p++ = '}';
        }
    }
    em->len = (size_t)(p - em->buf);
    return 0;
}
