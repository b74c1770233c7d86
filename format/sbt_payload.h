/*
 * format/sbt_payload.h — the record codec every API payload is written in (the Vulkan payloads of
 * format/sbt_vk.h, the CUDA payloads of format/sbt_cuda.h): a payload is a sequence of records,
 * each a call number, 64-bit arguments and bytes, all varints but the bytes. A record grows
 * only at its end; a reader takes a missing argument as 0 and skips a call it does not know.
 */
#ifndef REPRISE_SBT_PAYLOAD_H
#define REPRISE_SBT_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "format/sbt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One decoded record. arg and bytes point into the decoder / source buffer. */
struct sbt_payload_rec {
    uint32_t call;
    uint32_t n_arg;
    const uint64_t *arg;
    uint32_t n_bytes;
    const uint8_t *bytes;
};
/* The i-th argument, or 0 past the end (older captures wrote fewer). */
static inline uint64_t sbt_payload_arg(const struct sbt_payload_rec *r, uint32_t i)
{
    return i < r->n_arg ? r->arg[i] : 0;
}

/* ---- encoder --------------------------------------------------------------------------------- */

/* A growable buffer of records. Zero-initialise it ({0}); errors are sticky: after an
 * allocation failure every call does nothing and sbt_payload_enc_status() returns SBT_ENOMEM. */
struct sbt_payload_enc {
    uint8_t *buf;
    size_t len, cap;
    uint64_t *args; /* arguments of the record being built */
    size_t n_args, cap_args;
    uint32_t call; /* record being built, 0 = none */
    int status;
};
/* Starts a record; add arguments with sbt_payload_enc_arg, finish with sbt_payload_enc_end. */
void sbt_payload_enc_begin(struct sbt_payload_enc *e, uint32_t call);
void sbt_payload_enc_arg(struct sbt_payload_enc *e, uint64_t v);
void sbt_payload_enc_end(struct sbt_payload_enc *e, const void *bytes, size_t n_bytes);
/* A whole record in one call. */
void sbt_payload_put(struct sbt_payload_enc *e, uint32_t call, const uint64_t *arg, size_t n_arg,
                     const void *bytes, size_t n_bytes);
/* Appends raw bytes (the recording magic). */
void sbt_payload_enc_raw(struct sbt_payload_enc *e, const void *bytes, size_t n);
int sbt_payload_enc_status(const struct sbt_payload_enc *e);
/* Forgets the contents, keeps the memory. */
void sbt_payload_enc_reset(struct sbt_payload_enc *e);
/* Frees the buffers; the struct may be reused after. */
void sbt_payload_enc_free(struct sbt_payload_enc *e);

/* ---- decoder --------------------------------------------------------------------------------- */

struct sbt_payload_dec {
    const uint8_t *buf;
    size_t len, pos;
    uint64_t *args;
    size_t cap_args;
};
/* Borrows buf (must outlive the decoder's records). */
void sbt_payload_dec_init(struct sbt_payload_dec *d, const void *buf, size_t len);
/* 1 with *out set (valid until the next call), 0 at the end, SBT_ECORRUPT / SBT_ENOMEM with
 * a message naming the offset. */
int sbt_payload_dec_next(struct sbt_payload_dec *d, struct sbt_payload_rec *out);
void sbt_payload_dec_free(struct sbt_payload_dec *d);
/* Finds the first record of a call in a payload: 1 found (*out valid while d lives), 0 not,
 * < 0 corrupt. Initialises d; call sbt_payload_dec_free(d) after. */
int sbt_payload_find(struct sbt_payload_dec *d, const void *buf, size_t len, uint32_t call,
                     struct sbt_payload_rec *out);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SBT_PAYLOAD_H */
