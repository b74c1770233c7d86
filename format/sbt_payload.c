/*
 * format/sbt_payload.c — the record codec of every API payload (format/sbt_payload.h).
 *
 * A record is call, n_arg, args, n_bytes, bytes, all varints but the bytes. Generic records
 * instead of one C struct per payload keep the capture and replay sides on one small codec
 * and let either side grow a record at its end without a format change.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sbt_int.h"
#include "format/sbt_payload.h"

#define MAX_ARGS  (1u << 20)
#define MAX_BYTES (1u << 26)

static int enc_reserve(struct sbt_payload_enc *e, size_t extra)
{
    if (e->status)
        return e->status;
    if (e->cap - e->len >= extra)
        return 0;
    size_t cap = e->cap ? e->cap : 256;
    while (cap - e->len < extra)
        cap *= 2;
    uint8_t *p = sbt__realloc(e->buf, cap);
    if (!p)
        return e->status = sbt__fail(SBT_ENOMEM, "out of memory growing a payload to %zu", cap);
    e->buf = p;
    e->cap = cap;
    return 0;
}

static void enc_varint(struct sbt_payload_enc *e, uint64_t v)
{
    if (enc_reserve(e, 10))
        return;
    e->len += sbt_varint_encode(v, e->buf + e->len);
}

void sbt_payload_enc_raw(struct sbt_payload_enc *e, const void *bytes, size_t n)
{
    if (!n || enc_reserve(e, n))
        return;
    memcpy(e->buf + e->len, bytes, n);
    e->len += n;
}

void sbt_payload_put(struct sbt_payload_enc *e, uint32_t call, const uint64_t *arg, size_t n_arg,
                     const void *bytes, size_t n_bytes)
{
    if (e->status)
        return;
    if (n_arg > MAX_ARGS || n_bytes > MAX_BYTES) {
        e->status = sbt__fail(SBT_ELIMIT, "payload record %u: %zu args / %zu bytes > %u / %u", call,
                              n_arg, n_bytes, MAX_ARGS, MAX_BYTES);
        return;
    }
    enc_varint(e, call);
    enc_varint(e, n_arg);
    for (size_t i = 0; i < n_arg; i++)
        enc_varint(e, arg[i]);
    enc_varint(e, n_bytes);
    sbt_payload_enc_raw(e, bytes, n_bytes);
}

void sbt_payload_enc_begin(struct sbt_payload_enc *e, uint32_t call)
{
    e->call = call;
    e->n_args = 0;
}

void sbt_payload_enc_arg(struct sbt_payload_enc *e, uint64_t v)
{
    if (e->status)
        return;
    if (e->n_args == e->cap_args) {
        size_t cap = e->cap_args ? e->cap_args * 2 : 32;
        uint64_t *a = sbt__realloc(e->args, cap * sizeof *a);
        if (!a) {
            e->status = sbt__fail(SBT_ENOMEM, "out of memory for %zu payload arguments", cap);
            return;
        }
        e->args = a;
        e->cap_args = cap;
    }
    e->args[e->n_args++] = v;
}

void sbt_payload_enc_end(struct sbt_payload_enc *e, const void *bytes, size_t n_bytes)
{
    sbt_payload_put(e, e->call, e->args, e->n_args, bytes, n_bytes);
    e->call = 0;
    e->n_args = 0;
}

int sbt_payload_enc_status(const struct sbt_payload_enc *e)
{
    return e->status;
}

void sbt_payload_enc_reset(struct sbt_payload_enc *e)
{
    e->len = 0;
    e->n_args = 0;
    e->call = 0;
    e->status = 0;
}

void sbt_payload_enc_free(struct sbt_payload_enc *e)
{
    sbt__free(e->buf);
    sbt__free(e->args);
    memset(e, 0, sizeof *e);
}

/* ========================================================================================== */
/* Decoder                                                                                    */
/* ========================================================================================== */

void sbt_payload_dec_init(struct sbt_payload_dec *d, const void *buf, size_t len)
{
    memset(d, 0, sizeof *d);
    d->buf = buf;
    d->len = buf ? len : 0;
}

void sbt_payload_dec_free(struct sbt_payload_dec *d)
{
    sbt__free(d->args);
    d->args = NULL;
    d->cap_args = 0;
}

int sbt_payload_dec_next(struct sbt_payload_dec *d, struct sbt_payload_rec *out)
{
    if (d->pos >= d->len)
        return 0;
    size_t at = d->pos;
    uint64_t call, n_arg, n_bytes;
    int st;
    if ((st = sbt_varint_decode(d->buf, d->len, &d->pos, &call)) < 0 ||
        (st = sbt_varint_decode(d->buf, d->len, &d->pos, &n_arg)) < 0)
        return sbt__fail(SBT_ECORRUPT, "Vulkan payload offset %zu: truncated record header", at);
    if (call > UINT32_MAX || n_arg > MAX_ARGS)
        return sbt__fail(SBT_ECORRUPT,
                         "Vulkan payload offset %zu: call %" PRIu64 " with %" PRIu64
                         " arguments (max %u)",
                         at, call, n_arg, MAX_ARGS);
    if (n_arg > d->len - d->pos) /* each argument takes at least one byte */
        return sbt__fail(SBT_ECORRUPT,
                         "Vulkan payload offset %zu: %" PRIu64 " arguments in %zu bytes", at, n_arg,
                         d->len - d->pos);
    if (n_arg > d->cap_args) {
        size_t cap = n_arg < 32 ? 32 : (size_t)n_arg;
        uint64_t *a = sbt__realloc(d->args, cap * sizeof *a);
        if (!a)
            return sbt__fail(SBT_ENOMEM, "out of memory for %zu payload arguments", cap);
        d->args = a;
        d->cap_args = cap;
    }
    for (uint64_t i = 0; i < n_arg; i++)
        if (sbt_varint_decode(d->buf, d->len, &d->pos, &d->args[i]) < 0)
            return sbt__fail(SBT_ECORRUPT,
                             "Vulkan payload offset %zu: record %" PRIu64 " argument %" PRIu64
                             " truncated",
                             at, call, i);
    if (sbt_varint_decode(d->buf, d->len, &d->pos, &n_bytes) < 0)
        return sbt__fail(SBT_ECORRUPT, "Vulkan payload offset %zu: truncated byte length", at);
    if (n_bytes > MAX_BYTES || n_bytes > d->len - d->pos)
        return sbt__fail(SBT_ECORRUPT, "Vulkan payload offset %zu: %" PRIu64 " bytes but %zu left",
                         at, n_bytes, d->len - d->pos);
    out->call = (uint32_t)call;
    out->n_arg = (uint32_t)n_arg;
    out->arg = d->args;
    out->n_bytes = (uint32_t)n_bytes;
    out->bytes = d->buf + d->pos;
    d->pos += n_bytes;
    return 1;
}

int sbt_payload_find(struct sbt_payload_dec *d, const void *buf, size_t len, uint32_t call,
                     struct sbt_payload_rec *out)
{
    sbt_payload_dec_init(d, buf, len);
    int st;
    while ((st = sbt_payload_dec_next(d, out)) == 1)
        if (out->call == call)
            return 1;
    return st;
}
