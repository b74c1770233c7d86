/*
 * format/sbt.h — the SBT trace file: the API-neutral trace model, a streaming writer, a
 * reader that seeks by op sequence and by time, and the small encoding helpers the other
 * modules share (varints, hashes, status codes).
 *
 * The byte layout is specified in FORMAT.md at the top of the repository; this header says how
 * to use the library. DESIGN.md explains the model (devices, streams, programs, kernels, ops
 * with resource accesses, blobs, digests).
 *
 * Conventions
 *   - Functions return 0 (SBT_OK) or a positive count on success and a negative SBT_E* status
 *     on failure. After a failure, sbt_errmsg() returns a one-line message that names what
 *     and where (file offset, chunk, op sequence). The message lives in thread-local storage
 *     and is valid until the next failing call on the same thread.
 *   - On failure an out-parameter handle is set to NULL and nothing leaks.
 *   - Ids of strings, devices, streams, programs and kernels are dense, start at 1 and are
 *     assigned by the writer; 0 means "none".
 *   - Times are nanoseconds on the capture host's clock, counted from the trace epoch (the
 *     "clock.epoch_*" metadata says what the epoch is). "Relative to trace start" in the CLI
 *     means relative to sbt_info.t_min.
 *   - A writer or reader handle is used by one thread at a time. Separate handles are
 *     independent.
 */
#ifndef REPRISE_SBT_H
#define REPRISE_SBT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================================== */
/* Status codes                                                                               */
/* ========================================================================================== */

#define SBT_STATUS_MAP(X)                                        \
    X(OK, 0, "success")                                          \
    X(EINVAL, -1, "invalid argument")                            \
    X(ECORRUPT, -2, "corrupt trace")                             \
    X(ENOMEM, -3, "out of memory")                               \
    X(EIO, -4, "I/O error")                                      \
    X(EVERSION, -5, "unsupported format version or feature")     \
    X(EFOREIGN, -6, "not a reprise trace (another tool's file)") \
    X(ENOTFOUND, -7, "not found")                                \
    X(ELIMIT, -8, "a limit was exceeded")

enum sbt_status {
#define SBT__ENUM(name, val, msg) SBT_##name = val,
    SBT_STATUS_MAP(SBT__ENUM)
#undef SBT__ENUM
};

/* Static description of a status ("corrupt trace"). Never NULL. */
const char *sbt_strerror(int status);
/* Message of the last failure on this thread, naming what and where. Never NULL. */
const char *sbt_errmsg(void);

/* Allocation hook for tests (fail the N-th malloc). NULL restores the C library's. */
struct sbt_alloc_hooks {
    void *(*malloc_fn)(size_t);
    void *(*realloc_fn)(void *, size_t);
    void (*free_fn)(void *);
};
void sbt_set_alloc_hooks(const struct sbt_alloc_hooks *hooks);

/* ========================================================================================== */
/* Encoding helpers shared by every module                                                    */
/* ========================================================================================== */

/* Unsigned LEB128. Encode writes at most 10 bytes at out and returns how many. */
size_t sbt_varint_encode(uint64_t v, uint8_t *out);
/* Decodes one varint from buf[*pos..len), advancing *pos. SBT_ECORRUPT when it runs past len
 * or is longer than 10 bytes / overflows 64 bits. */
int sbt_varint_decode(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out);
static inline uint64_t sbt_zigzag_encode(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t sbt_zigzag_decode(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* CRC-32C (Castagnoli), as used by every chunk. crc is the previous value (0 to start). */
uint32_t sbt_crc32c(uint32_t crc, const void *buf, size_t len);

/* Content hash of a byte string (XXH3-128): blob addresses and output digests. */
typedef struct sbt_hash {
    uint64_t lo, hi;
} sbt_hash;
sbt_hash sbt_hash_bytes(const void *buf, size_t len);
/* Incremental form, for digests over several byte ranges. */
typedef struct sbt_hasher sbt_hasher;
int sbt_hasher_create(sbt_hasher **out);
void sbt_hasher_reset(sbt_hasher *h);
void sbt_hasher_update(sbt_hasher *h, const void *buf, size_t len);
sbt_hash sbt_hasher_digest(const sbt_hasher *h);
void sbt_hasher_destroy(sbt_hasher *h);
static inline int sbt_hash_eq(sbt_hash a, sbt_hash b)
{
    return a.lo == b.lo && a.hi == b.hi;
}
static inline int sbt_hash_is_zero(sbt_hash a)
{
    return (a.lo | a.hi) == 0;
}
/* 32 lowercase hex digits plus NUL into out[33]; returns out. */
char *sbt_hash_hex(sbt_hash h, char out[33]);

/* ========================================================================================== */
/* The trace model                                                                            */
/* ========================================================================================== */

enum sbt_api {
    SBT_API_NONE = 0,
    SBT_API_VULKAN = 1,
    SBT_API_CUDA = 2,
    SBT_API_SYNTH = 3,      /* `reprise gen`: no device behind it, dry-run only */
    SBT_API_TRACESMITH = 4, /* imported from a TraceSmith file: timings only */
};
const char *sbt_api_name(uint32_t api);

/* Trailing API-specific bytes that a table row or op may carry ("typed payload"). The kind
 * says how to read them; kinds below 0x100 are reserved for the format itself. */
struct sbt_ext {
    uint32_t kind;
    uint32_t len;
    const void *data;
};

struct sbt_device {
    uint32_t id;                  /* assigned by the writer */
    uint32_t api;                 /* enum sbt_api */
    uint32_t name;                /* string id */
    uint32_t vendor_id;           /* PCI vendor id, 0 if unknown */
    uint32_t device_id;           /* PCI device id, 0 if unknown */
    uint8_t uuid[16];             /* VkPhysicalDeviceIDProperties.deviceUUID / CUuuid */
    uint32_t driver_version;      /* as the API reports it */
    uint32_t api_version;         /* Vulkan apiVersion, CUDA driver version */
    uint64_t timestamp_period_fs; /* femtoseconds per device timestamp tick, 0 if unknown */
    uint32_t host;                /* string id: capture host name */
    struct sbt_ext ext;           /* e.g. Vulkan memory types and queue families */
};

enum sbt_stream_kind {
    SBT_STREAM_QUEUE = 1,       /* a Vulkan queue: submissions in order */
    SBT_STREAM_CUDA = 2,        /* a CUDA stream (the legacy NULL stream included) */
    SBT_STREAM_HOST_THREAD = 3, /* API calls of one host thread on a device */
};

struct sbt_stream {
    uint32_t id;     /* assigned by the writer */
    uint32_t device; /* device id */
    uint32_t kind;   /* enum sbt_stream_kind */
    uint32_t name;   /* string id, 0 for none */
    uint64_t handle; /* the captured API handle value, for messages */
    uint32_t family; /* Vulkan queue family / CUDA stream flags */
    uint32_t index;  /* Vulkan queue index / CUDA stream priority (zigzag) */
    struct sbt_ext ext;
};

enum sbt_program_kind {
    SBT_PROGRAM_SPIRV = 1,
    SBT_PROGRAM_CUBIN = 2,
    SBT_PROGRAM_PTX = 3,
    SBT_PROGRAM_FATBIN = 4,
    SBT_PROGRAM_HOST = 5, /* functions of a test-only fake driver, found by name */
};

struct sbt_program {
    uint32_t id;     /* assigned by the writer */
    uint32_t device; /* device id, 0 if loaded for all */
    uint32_t kind;   /* enum sbt_program_kind */
    uint32_t name;   /* string id */
    sbt_hash blob;   /* the image bytes (a blob in this trace), zero if not stored */
    struct sbt_ext ext;
};

struct sbt_kernel {
    uint32_t id;        /* assigned by the writer */
    uint32_t program;   /* program id, 0 if unknown */
    uint32_t name;      /* string id: entry point / mangled name */
    struct sbt_ext ext; /* parameter layout, pipeline layout, ... */
};

enum sbt_op_kind {
    SBT_OP_KERNEL = 1,         /* kernel launch / dispatch: kernel, geometry, accesses */
    SBT_OP_COPY = 2,           /* subkind enum sbt_copy_dir; bytes; accesses */
    SBT_OP_FILL = 3,           /* bytes; value = fill pattern; accesses (write) */
    SBT_OP_HOST_WRITE = 4,     /* host wrote mapped memory: blob = the data; accesses (write) */
    SBT_OP_ALLOC = 5,          /* resource, bytes = size, subkind enum sbt_res_kind, obj = device */
    SBT_OP_FREE = 6,           /* resource */
    SBT_OP_EVENT_RECORD = 7,   /* obj = event id: completes when earlier work on stream does */
    SBT_OP_EVENT_WAIT = 8,     /* obj = event id: stream waits for the latest record before it */
    SBT_OP_SIGNAL = 9,         /* obj = fence/semaphore id, value = timeline value; subkind sync */
    SBT_OP_WAIT = 10,          /* obj = fence/semaphore id, value = timeline value; subkind sync */
    SBT_OP_STREAM_SYNC = 11,   /* stream (a host thread) blocks until stream obj drains */
    SBT_OP_DEVICE_SYNC = 12,   /* stream (a host thread) blocks until device obj drains */
    SBT_OP_SUBMIT = 13,        /* a queue submission; value = number of ops it carries */
    SBT_OP_MARKER = 14,        /* user annotation: name */
    SBT_OP_HOST_READ = 15,     /* host read back results: accesses (read), digest of them */
    SBT_OP_STREAM_CREATE = 16, /* obj = stream id created */
    SBT_OP_STREAM_DESTROY = 17, /* obj = stream id destroyed */
    SBT_OP__COUNT
};
const char *sbt_op_kind_name(uint32_t kind);

enum sbt_copy_dir { SBT_COPY_H2D = 1, SBT_COPY_D2H = 2, SBT_COPY_D2D = 3, SBT_COPY_H2H = 4 };
enum sbt_sync_kind {
    SBT_SYNC_FENCE = 1,
    SBT_SYNC_BINARY_SEMAPHORE = 2,
    SBT_SYNC_TIMELINE_SEMAPHORE = 3,
    SBT_SYNC_EVENT = 4, /* a VkEvent set/wait */
};
enum sbt_res_kind { SBT_RES_DEVICE = 1, SBT_RES_HOST_PINNED = 2, SBT_RES_MANAGED = 3 };

enum sbt_access_mode { SBT_ACCESS_READ = 1, SBT_ACCESS_WRITE = 2, SBT_ACCESS_RW = 3 };

/* One byte range of one resource that an op reads or writes. A kernel's write is a may-write
 * (it can leave part of the range untouched); other ops write their whole write ranges. */
struct sbt_access {
    uint64_t resource; /* resource id (the ALLOC op's resource) */
    uint64_t offset;   /* bytes from the start of the resource */
    uint64_t len;      /* bytes */
    uint32_t mode;     /* enum sbt_access_mode */
};

/* Which optional fields of an op are meaningful. */
enum sbt_op_flags {
    SBT_OPF_DEV_TIME = 1u << 0, /* dev_begin/dev_end */
    SBT_OPF_KERNEL = 1u << 1,   /* kernel */
    SBT_OPF_GEOM = 1u << 2,     /* grid, block, shmem */
    SBT_OPF_BYTES = 1u << 3,    /* bytes */
    SBT_OPF_RESOURCE = 1u << 4, /* resource */
    SBT_OPF_OBJ = 1u << 5,      /* obj, value */
    SBT_OPF_BLOB = 1u << 6,     /* blob */
    SBT_OPF_DIGEST = 1u << 7,   /* digest */
    SBT_OPF_ERROR = 1u << 8,    /* error */
    SBT_OPF_PAYLOAD = 1u << 9,  /* payload */
    /* Marks, not fields: */
    SBT_OPF_UNSUPPORTED = 1u << 16, /* the capture could not record this op fully */
    SBT_OPF_UNTIMED = 1u << 17,     /* replay: executed as fast-forward, times meaningless */
    SBT_OPF__FIELDS = 0x3ffu,
    SBT_OPF__KNOWN = 0x303ffu,
};

struct sbt_op {
    uint64_t seq;        /* global capture order; assigned by the writer, from 0 */
    uint32_t kind;       /* enum sbt_op_kind */
    uint32_t subkind;    /* per kind, see enum sbt_op_kind */
    uint32_t flags;      /* enum sbt_op_flags */
    uint32_t stream;     /* stream id where it executes */
    uint32_t thread;     /* host thread that issued it (small dense number, 1..), 0 if none;
                          * ops on a HOST_THREAD stream carry that stream's thread */
    uint32_t name;       /* string id, 0 for none */
    uint64_t host_begin; /* ns: the API call, on the host clock */
    uint64_t host_end;   /* ns, >= host_begin */
    uint64_t dev_begin;  /* ns: execution on the device, mapped to the host clock */
    uint64_t dev_end;    /* ns, >= dev_begin */
    uint32_t kernel;     /* kernel id */
    uint32_t grid[3];    /* work groups / blocks */
    uint32_t block[3];   /* local size / threads per block */
    uint32_t shmem;      /* bytes of dynamic shared memory */
    uint64_t bytes;      /* copy/fill/alloc size */
    uint64_t resource;   /* ALLOC/FREE: the resource id (capture-assigned, > 0) */
    uint64_t obj;        /* event / fence / semaphore / stream / device id */
    uint64_t value;      /* timeline value, fill pattern, submission size */
    sbt_hash blob;       /* input bytes stored in the trace (H2D data, host writes, args) */
    sbt_hash digest;     /* digest of the bytes the op wrote, in access order */
    uint32_t error;      /* string id: replay error at this op */
    uint32_t n_access;
    const struct sbt_access *access;
    struct sbt_ext payload; /* API-specific */
};

/* ========================================================================================== */
/* Writer                                                                                     */
/* ========================================================================================== */

typedef struct sbt_writer sbt_writer;

struct sbt_writer_opts {
    size_t sz;                  /* = sizeof(struct sbt_writer_opts); set by SBT_WRITER_OPTS() */
    uint32_t chunk_ops;         /* ops per chunk before it is cut; 0 = 8192 */
    uint32_t chunk_bytes;       /* raw bytes per chunk before it is cut; 0 = 1 MiB */
    int zstd_level;             /* 0 = default (3); < 0 = store chunks uncompressed */
    uint32_t sync_every;        /* fsync after this many chunks; 0 = only at close */
    uint32_t threads;           /* 0: compress and write on the calling thread; 1: on a background
                                 * thread, the caller only encodes (an I/O failure then surfaces at
                                 * a later call or at close) */
    uint32_t required_features; /* enum sbt_feature bits written into the file header: readers
                                   that do not know one refuse the file */
};
#define SBT_WRITER_OPTS(...) \
    ((struct sbt_writer_opts){.sz = sizeof(struct sbt_writer_opts), __VA_ARGS__})

/* Creates path (truncating it) and writes the file header. opts may be NULL. */
int sbt_writer_open(const char *path, const struct sbt_writer_opts *opts, sbt_writer **out);
/* Interns a string; *id receives its id (>= 1). The empty string is id 0. */
int sbt_writer_intern(sbt_writer *w, const char *s, uint32_t *id);
int sbt_writer_intern_len(sbt_writer *w, const char *s, size_t len, uint32_t *id);
/* Table rows. The id field of the argument is ignored; *id receives the assigned id. The
 * ext bytes are copied. */
int sbt_writer_add_device(sbt_writer *w, const struct sbt_device *d, uint32_t *id);
int sbt_writer_add_stream(sbt_writer *w, const struct sbt_stream *s, uint32_t *id);
int sbt_writer_add_program(sbt_writer *w, const struct sbt_program *p, uint32_t *id);
int sbt_writer_add_kernel(sbt_writer *w, const struct sbt_kernel *k, uint32_t *id);
/* Free-form metadata ("program", "argv", "host", "clock.domain", ...). Later keys repeat. */
int sbt_writer_meta(sbt_writer *w, const char *key, const char *value);
/* Stores bytes once per content (deduplicated by hash); *hash receives their address. */
int sbt_writer_blob(sbt_writer *w, const void *data, size_t len, sbt_hash *hash);
/* 1 if the writer holds a blob with this hash already (sbt_writer_blob would not store it). */
int sbt_writer_has_blob(const sbt_writer *w, const sbt_hash *hash);
/* The next op gets sequence number seq instead of the one after the last op's: a trimmed trace
 * keeps the numbers of the trace it was cut from, with gaps (FORMAT.md section 4). seq must not
 * be smaller than the next one (SBT_EINVAL). Cuts the current chunk when it skips. */
int sbt_writer_set_next_seq(sbt_writer *w, uint64_t seq);
/* Appends an op; op->seq is ignored and assigned (returned in *seq if seq is non-NULL).
 * Strings, streams and kernels it names must have been added. The writer copies what it
 * needs before returning. */
int sbt_writer_add_op(sbt_writer *w, const struct sbt_op *op, uint64_t *seq);
/* Writes a STATE record (the contents of allocations at a point; see "States" below) in a chunk
 * of its own. The blobs it names must have been written with sbt_writer_blob; states must come
 * in increasing seq order. SBT_EINVAL for unsorted resources, a missing blob or chunk indices
 * out of range. */
struct sbt_state;
int sbt_writer_add_state(sbt_writer *w, const struct sbt_state *s);
/* Completeness: `count` calls named `what` that the capture passed through unrecorded
 * ("unmodelled"). first_seq: the seq of the first op written at or after the first such call
 * (SBT_SEQ_NONE: unknown); flags: enum sbt_unmodelled_flags. Calls of the same name add up:
 * counts are summed, the earliest first_seq and the union of the flags kept. A call with
 * SBT_UNMODELLED_AFFECTS makes the trace incomplete (sbt_info.complete = 0). */
int sbt_writer_unsupported(sbt_writer *w, const char *what, uint64_t count, uint64_t first_seq,
                           uint32_t flags);
/* Marks the trace incomplete (the capture stopped recording); the first reason is kept. */
int sbt_writer_mark_incomplete(sbt_writer *w, const char *reason);
/* Cuts the current chunk and writes it out, so a crash after this loses nothing before. */
int sbt_writer_flush(sbt_writer *w);
/* Flushes, writes the completeness record and the footer index, closes the file. Frees w
 * whatever the status. NULL is accepted. */
int sbt_writer_close(sbt_writer *w);
/* Frees w without writing a footer (the file stays readable by scanning). NULL accepted. */
void sbt_writer_abandon(sbt_writer *w);

/* ========================================================================================== */
/* Reader                                                                                     */
/* ========================================================================================== */

typedef struct sbt_reader sbt_reader;

struct sbt_open_opts {
    size_t sz;                /* = sizeof(struct sbt_open_opts); set by SBT_OPEN_OPTS() */
    uint32_t max_chunk_bytes; /* largest chunk accepted (stored or raw); 0 = 1 GiB */
    int force_scan;           /* ignore the footer and rebuild the index by scanning */
};
#define SBT_OPEN_OPTS(...) ((struct sbt_open_opts){.sz = sizeof(struct sbt_open_opts), __VA_ARGS__})

#define SBT_SEQ_NONE UINT64_MAX

enum sbt_unmodelled_flags {
    /* The call can change what the device computes or what a replay needs (a vkCmd* that was
     * not recorded, an object replay would need, a mapping or address path not tracked): a
     * replay of the trace cannot be trusted, so the trace is incomplete. Without it the call
     * is only counted (a query, a presentation call that leaves compute untouched). */
    SBT_UNMODELLED_AFFECTS = 1u << 0,
};

struct sbt_unsupported {
    uint32_t what; /* string id: the call's name */
    uint64_t count;
    uint64_t first_seq; /* first op at or after the first call; SBT_SEQ_NONE = unknown */
    uint32_t flags;     /* enum sbt_unmodelled_flags */
};

struct sbt_meta {
    uint32_t key, value; /* string ids */
};

struct sbt_info {
    uint32_t writer_version;
    uint32_t min_reader_version;
    uint64_t file_bytes;
    uint64_t n_chunks;
    uint64_t n_ops;
    uint64_t seq_first, seq_end;  /* ops hold seq in [seq_first, seq_end) */
    uint64_t t_min, t_max;        /* ns, over every time of every op; 0,0 if no ops */
    uint64_t n_blobs, blob_bytes; /* distinct blobs and their raw bytes */
    uint64_t raw_bytes;           /* chunk payload bytes before compression */
    int has_footer;               /* 0: the index was rebuilt by scanning */
    int writer_finished;          /* the writer closed the file (completeness record seen) */
    int complete;                 /* finished, not marked incomplete, and no unmodelled call
                                   * with SBT_UNMODELLED_AFFECTS */
    uint32_t incomplete_reason;   /* string id, 0 if none */
    uint64_t lost_offset;         /* scanning stopped here (torn/corrupt tail); 0 if none */
    uint64_t lost_bytes;          /* bytes after lost_offset that could not be read */
    uint32_t required_features;   /* enum sbt_feature bits of the file header */
    uint64_t n_states;            /* STATE records (sbt_reader_state) */
};

/* Opens a trace for reading. Reads the footer index (or scans when there is none) and the
 * tables; op chunks are read on demand. SBT_EFOREIGN with a message naming the tool for
 * TraceSmith files; SBT_EVERSION for files needing a newer reader. */
int sbt_reader_open(const char *path, const struct sbt_open_opts *opts, sbt_reader **out);
void sbt_reader_close(sbt_reader *r);
const struct sbt_info *sbt_reader_info(const sbt_reader *r);
/* The path the reader was opened with (for messages). */
const char *sbt_reader_path(const sbt_reader *r);
/* "" for id 0; NULL for an id that is not defined. */
const char *sbt_reader_string(const sbt_reader *r, uint32_t id);
uint32_t sbt_reader_n_strings(const sbt_reader *r); /* valid ids are 1..n */
/* Tables: arrays indexed by id - 1. */
const struct sbt_device *sbt_reader_devices(const sbt_reader *r, uint32_t *n);
const struct sbt_stream *sbt_reader_streams(const sbt_reader *r, uint32_t *n);
const struct sbt_program *sbt_reader_programs(const sbt_reader *r, uint32_t *n);
const struct sbt_kernel *sbt_reader_kernels(const sbt_reader *r, uint32_t *n);
const struct sbt_meta *sbt_reader_meta(const sbt_reader *r, uint32_t *n);
const struct sbt_unsupported *sbt_reader_unsupported(const sbt_reader *r, uint32_t *n);
/* Why the trace is not complete, on one line for a user ("" when info->complete): the writer
 * did not finish, the capture's own reason, and each unmodelled call that affects replay with
 * its count and first op. Returns the length the whole text needs (as snprintf). */
size_t sbt_reader_incomplete_why(const sbt_reader *r, char *buf, size_t cap);
/* The value of the last metadata entry with this key, or NULL. */
const char *sbt_reader_meta_get(const sbt_reader *r, const char *key);
/* Convenience lookups by id; NULL when out of range. */
const struct sbt_device *sbt_reader_device(const sbt_reader *r, uint32_t id);
const struct sbt_stream *sbt_reader_stream(const sbt_reader *r, uint32_t id);
const struct sbt_kernel *sbt_reader_kernel(const sbt_reader *r, uint32_t id);
const struct sbt_program *sbt_reader_program(const sbt_reader *r, uint32_t id);

/* Fetches a blob's bytes into a malloc'd buffer that the caller frees with free(). The bytes
 * are checked against their hash. SBT_ENOTFOUND if the trace has no such blob. */
int sbt_reader_blob(sbt_reader *r, const sbt_hash *hash, void **data, size_t *len);
/* 1 if the trace holds the blob, 0 if not. */
int sbt_reader_has_blob(const sbt_reader *r, const sbt_hash *hash);

/* What to iterate. Zero fields mean "no limit"; set_* say which limits apply. */
struct sbt_range {
    int has_seq;
    uint64_t seq_begin, seq_end; /* [begin, end) */
    int has_time;
    uint64_t t_begin, t_end; /* absolute ns, [begin, end): ops whose span overlaps */
    uint32_t stream;         /* 0 = all streams */
};

/* The span of an op used for time selection and chunk time ranges: from the earliest to the
 * latest of its host and (if present) device times. */
void sbt_op_span(const struct sbt_op *op, uint64_t *begin, uint64_t *end);

typedef struct sbt_cursor sbt_cursor;
/* Opens an iterator over the ops in range (NULL = all), in seq order. Seeks with the chunk
 * index: O(log chunks) to the first chunk that can hold a selected op. */
int sbt_cursor_open(sbt_reader *r, const struct sbt_range *range, sbt_cursor **out);
/* 1 and *op set (valid until the next call on this cursor); 0 at the end; < 0 on error, with
 * the message naming the chunk offset and op. */
int sbt_cursor_next(sbt_cursor *c, const struct sbt_op **op);
void sbt_cursor_close(sbt_cursor *c);

/* Columnar bulk reads: the ops of a cursor's range decoded into caller-provided arrays, one
 * array per field, without an sbt_op per op. Set the arrays of the fields you want and leave
 * the others NULL: a field not asked for is not decoded, and neither is a column that no asked
 * field needs (so a bulk read checks less of a damaged chunk than sbt_cursor_next does:
 * sbt_reader_validate checks everything). Each non-NULL array holds at least cap rows (grid,
 * block, blob and digest hold several values per row). A field an op lacks (its flags say
 * which it has) reads 0; so do dev_begin/dev_end without SBT_OPF_DEV_TIME. Access lists and
 * payloads are not columns: n_access counts an op's accesses, sbt_cursor_next gives them. */
struct sbt_columns {
    size_t sz; /* = sizeof(struct sbt_columns); set by SBT_COLUMNS() */
    uint64_t *seq;
    uint8_t *kind;    /* enum sbt_op_kind */
    uint8_t *subkind; /* per kind */
    uint32_t *flags;  /* enum sbt_op_flags */
    uint32_t *stream;
    uint32_t *thread;
    uint32_t *name; /* string id */
    uint64_t *host_begin, *host_end;
    uint64_t *dev_begin, *dev_end;
    uint32_t *kernel;
    uint32_t *grid;  /* 3 per row: x, y, z */
    uint32_t *block; /* 3 per row */
    uint32_t *shmem;
    uint64_t *bytes;
    uint64_t *resource;
    uint64_t *obj;
    uint64_t *value;
    uint64_t *blob;   /* 2 per row: the hash's lo, hi */
    uint64_t *digest; /* 2 per row */
    uint32_t *error;  /* string id */
    uint32_t *n_access;
};
#define SBT_COLUMNS(...) ((struct sbt_columns){.sz = sizeof(struct sbt_columns), __VA_ARGS__})

/* Reads up to cap of the cursor's next ops into rows 0.. of the arrays of cols; *n receives
 * how many (0 at the end of the range). A chunk whose ops are all in the seq and time range
 * and fit goes from its columns straight into the arrays (with a stream range, the rows of
 * other streams are then dropped); the ops of a chunk at a range's edge, or of a chunk that
 * does not fit in what is left of cap, go one by one (what is left of a chunk stays in the
 * cursor for the next call). sbt_cursor_next and sbt_cursor_read may
 * be mixed on one cursor. Errors as sbt_cursor_next's (the message names the chunk offset and
 * the op); after one, the cursor returns it again. */
int sbt_cursor_read(sbt_cursor *c, const struct sbt_columns *cols, uint64_t cap, uint64_t *n);
/* An upper bound on the ops the cursor has left to give, from the chunk index (no decoding):
 * exact for a range of seq only (or no range) on a trace whose index is sound; a time or
 * stream range can select fewer. Size the arrays of sbt_cursor_read with it. */
uint64_t sbt_cursor_bound(const sbt_cursor *c);

/* An identity of the file: XXH3-128 over its header fields and its chunk index (offsets,
 * lengths, content, seq and time ranges). Two captures practically never share it; rewriting a
 * file changes it. Sidecars of snapshots and trimmed traces record the fingerprint of the trace
 * they come from. */
sbt_hash sbt_reader_fingerprint(const sbt_reader *r);

/* ========================================================================================== */
/* States: the contents of allocations at a point (FORMAT.md section 5a)                      */
/* ========================================================================================== */

/* Header feature bits (sbt_writer_opts.required_features, sbt_info.required_features). */
enum sbt_feature {
    /* The file's STATE records are initial contents: a replay must write them into the
     * allocations when it reaches their seq (a trimmed trace). Without it, STATE records are
     * snapshots a replay may use to skip work (a sidecar of a replay). */
    SBT_FEATURE_INITIAL_STATE = 1u << 0,
    SBT_FEATURE__KNOWN = 1u << 0,
};

/* One allocation in a state: its bytes in chunks of chunk_bytes (the last may be shorter), each
 * stored as a blob. Chunks not present were not stored (a partial state: bytes nothing reads). */
struct sbt_state_alloc {
    uint64_t resource;     /* the ALLOC op's resource id */
    uint64_t size;         /* bytes of the allocation */
    uint32_t chunk_bytes;  /* >= 1 */
    uint64_t n_present;    /* chunks stored */
    const uint64_t *index; /* [n_present] their indices, increasing */
    const sbt_hash *hash;  /* [n_present] the blob of each: exactly the chunk's bytes */
};

struct sbt_state {
    uint64_t seq;  /* the contents when every op with a smaller seq had run and no other */
    uint64_t time; /* ns on the trace clock: the begin of op seq (for --time-range ranges) */
    uint32_t n_alloc;
    const struct sbt_state_alloc *alloc; /* [n_alloc] sorted by resource, no repeats */
};

/* States of the file, in file order (increasing seq). *seq, *time of state i without decoding
 * it (from the chunk index); SBT_EINVAL if i >= n_states. */
int sbt_reader_state_at(const sbt_reader *r, uint64_t i, uint64_t *seq, uint64_t *time);
/* The index of the last state with seq <= seq, or -1 if there is none. */
int64_t sbt_reader_state_find(const sbt_reader *r, uint64_t seq);
/* Decodes state i into a malloc'd *out (free with sbt_state_free). SBT_ECORRUPT with a message
 * naming the chunk offset and the allocation when the record is malformed. */
int sbt_reader_state(sbt_reader *r, uint64_t i, struct sbt_state **out);
void sbt_state_free(struct sbt_state *s); /* NULL accepted */

/* Index entry of one chunk, for validate and benchmarks. */
struct sbt_chunk_info {
    uint64_t offset;     /* file offset of the chunk header */
    uint32_t stored_len; /* payload bytes in the file */
    uint32_t raw_len;    /* payload bytes decompressed */
    uint32_t codec;      /* 0 none, 1 zstd */
    uint32_t content;    /* SBT_CHUNK_* bits */
    uint64_t seq_first;
    uint32_t n_ops;
    uint64_t t_min, t_max;
};
enum sbt_chunk_content {
    SBT_CHUNK_OPS = 1u << 0,
    SBT_CHUNK_DICT = 1u << 1,
    SBT_CHUNK_BLOBS = 1u << 2,
    SBT_CHUNK_INDEX = 1u << 3,
    SBT_CHUNK_END = 1u << 4,   /* completeness record: the writer finished */
    SBT_CHUNK_STATE = 1u << 5, /* one STATE record: seq_first = its seq, t_min = t_max = its time */
};
const struct sbt_chunk_info *sbt_reader_chunks(const sbt_reader *r, uint64_t *n);

/* Integrity check: re-reads and decodes every chunk, checks every CRC, hash and reference
 * (strings, streams, kernels, programs, blobs), and that seq numbers run without gaps.
 * Calls report(ctx, severity, message) per finding (severity 0 = note, 1 = problem).
 * Returns the number of problems (>= 0), or < 0 if it could not run. */
typedef void (*sbt_report_fn)(void *ctx, int severity, const char *msg);
int sbt_reader_validate(sbt_reader *r, sbt_report_fn report, void *ctx);

/* ========================================================================================== */
/* Statistics over a range (view --stats, analyze, check)                                     */
/* ========================================================================================== */

/* Duration of an op as statistics count it: device time when measured, else host time. */
uint64_t sbt_op_duration(const struct sbt_op *op);

struct sbt_kstat {
    uint32_t name;   /* string id: the kernel's name, else the op's */
    uint32_t kernel; /* kernel id the row groups; 0 when grouped by op name */
    uint64_t count;
    uint64_t total_ns, min_ns, max_ns;
    uint32_t grid[3], block[3]; /* of the first launch */
    int geom_varies;            /* later launches used another geometry */
};

struct sbt_stats {
    uint64_t n_ops;
    uint64_t by_kind[SBT_OP__COUNT];
    uint64_t copy_bytes[5]; /* by enum sbt_copy_dir */
    uint64_t fill_bytes;
    uint64_t t_min, t_max;     /* over the selected ops; 0,0 if none */
    struct sbt_kstat *kernels; /* sorted by total_ns, largest first */
    uint32_t n_kernels;
};
/* One pass over the ops in range (NULL = all). *out is freed with sbt_stats_free. */
int sbt_stats_compute(sbt_reader *r, const struct sbt_range *range, struct sbt_stats **out);
void sbt_stats_free(struct sbt_stats *s);

/* ========================================================================================== */
/* Synthetic traces (`reprise gen`)                                                           */
/* ========================================================================================== */

/* A deterministic, realistic mix: kernels from a set of names with launch geometry, copies in
 * every direction with deduplicated upload blobs, fills, allocations and frees, event record on
 * one stream and wait on another (also across devices), stream and device syncs, markers, and
 * resource accesses that create true read/write dependencies. Device times follow stream
 * order and the waits, so the trace is consistent with its own dependency graph. Memory is
 * bounded whatever n_ops. The same options always give the same bytes. */
struct sbt_gen_opts {
    size_t sz;                   /* = sizeof(struct sbt_gen_opts); set by SBT_GEN_OPTS() */
    uint64_t n_ops;              /* 0 = 10000 */
    uint64_t seed;               /* any value; 0 is a seed like the others */
    uint32_t n_devices;          /* 0 = 2 */
    uint32_t streams_per_device; /* 0 = 4 */
    uint32_t n_threads;          /* host threads, 0 = 2 */
    int digests;                 /* give writes an output digest (as --digests would) */
};
#define SBT_GEN_OPTS(...) ((struct sbt_gen_opts){.sz = sizeof(struct sbt_gen_opts), __VA_ARGS__})
/* Writes a synthetic trace to path. wopts may be NULL. progress (may be NULL) is called now and
 * then with ops written so far. */
int sbt_gen_write(const char *path, const struct sbt_gen_opts *opts,
                  const struct sbt_writer_opts *wopts,
                  void (*progress)(uint64_t done, uint64_t total));

/* ========================================================================================== */
/* Foreign files                                                                              */
/* ========================================================================================== */

/* 1 if the file at path begins like a TraceSmith SBT file, 0 if not, < 0 on I/O error. */
int sbt_is_tracesmith(const char *path);
/* Converts a TraceSmith SBT file into a reprise trace. *n_ops receives the ops written. */
int sbt_import_tracesmith(const char *in_path, const char *out_path,
                          const struct sbt_writer_opts *opts, uint64_t *n_ops);

#ifdef __cplusplus
}
#endif
#endif /* REPRISE_SBT_H */
