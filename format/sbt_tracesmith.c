/*
 * format/sbt_tracesmith.c — recognising and importing TraceSmith SBT files.
 *
 * TraceSmith (github.com/chenxingqiang/TraceSmith, format 0.1) uses the same .sbt extension
 * with an unrelated layout: a 72-byte header of absolute section offsets, then unframed
 * sections (metadata, device info, events, string table). The layout is summarised in
 * shared/research/tracesmith.md. Its files carry no checksum, so every read here is bounded
 * and every count is checked against the bytes left.
 *
 * Mapping: KernelLaunch + KernelComplete with the same correlation id become one KERNEL op
 * (host time from the launch, device time from the completion, geometry from the launch),
 * emitted when the completion arrives; launches that never complete are emitted at the end
 * with host times only. Memcpy/Memset become COPY/FILL, syncs STREAM_SYNC/DEVICE_SYNC, event
 * record/sync EVENT_RECORD/EVENT_WAIT keyed by correlation id, MemAlloc/MemFree ALLOC/FREE
 * keyed by address, markers and ranges MARKER. Anything else is counted as unsupported.
 * TraceSmith does not store thread ids, resource accesses or data, so imported traces have
 * none: they support info, view, analysis and export, not full replay.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/sbt_int.h"

#define TS_HEADER_LEN 72

enum ts_type {
    TS_KERNEL_LAUNCH = 1,
    TS_KERNEL_COMPLETE = 2,
    TS_H2D = 3,
    TS_D2H = 4,
    TS_D2D = 5,
    TS_MEMSET = 6,
    TS_STREAM_SYNC = 7,
    TS_DEVICE_SYNC = 8,
    TS_EVENT_RECORD = 9,
    TS_EVENT_SYNC = 10,
    TS_STREAM_CREATE = 11,
    TS_STREAM_DESTROY = 12,
    TS_MEM_ALLOC = 15,
    TS_MEM_FREE = 16,
    TS_MARKER = 17,
    TS_RANGE_START = 18,
    TS_RANGE_END = 19,
};

struct ts_event {
    uint32_t type, flags;
    uint64_t ts, dur, device, stream, corr, name;
    uint64_t k[8]; /* grid xyz, block xyz, shared mem, registers */
    uint64_t m[3]; /* src, dst, size */
};

struct pending {   /* a launch waiting for its completion */
    uint64_t corr; /* 0 = empty slot; corr + 1 stored */
    struct ts_event ev;
};

struct imp {
    const uint8_t *p;
    size_t len;
    sbt_writer *w;
    uint32_t *str; /* TraceSmith string index -> our string id */
    uint64_t n_str;
    uint64_t base; /* first timestamp: becomes time 0 */
    struct {
        uint64_t dev, stream;
        uint32_t id;
    } * streams;
    uint32_t n_streams, cap_streams;
    uint64_t *devs; /* TraceSmith device id by our index */
    uint32_t n_devs, cap_devs;
    uint32_t *dev_id;
    struct pending *pend;
    size_t pend_cap, pend_n;
    uint64_t n_ops;
};

static int ts_fail(size_t off, const char *what)
{
    return sbt__fail(SBT_ECORRUPT, "TraceSmith file offset %zu: %s", off, what);
}

static int ts_varint(const struct imp *m, size_t *pos, uint64_t *v)
{
    size_t at = *pos;
    if (sbt_varint_decode(m->p, m->len, pos, v))
        return ts_fail(at, "bad or truncated varint");
    return SBT_OK;
}

static int ts_string(const struct imp *m, size_t *pos, const uint8_t **s, uint64_t *len)
{
    int st = ts_varint(m, pos, len);
    if (st)
        return st;
    if (*len > m->len - *pos)
        return ts_fail(*pos, "string runs past end of file");
    *s = m->p + *pos;
    *pos += (size_t)*len;
    return SBT_OK;
}

int sbt_is_tracesmith(const char *path)
{
    uint8_t b[4];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sbt__fail(SBT_EIO, "cannot open %s", path);
    ssize_t n = read(fd, b, 4);
    close(fd);
    return n == 4 && !memcmp(b, SBT_TRACESMITH_MAGIC, 4);
}

/* Adds a device row named name for TraceSmith device tsdev, and remembers the pair. */
static int new_device(struct imp *m, uint64_t tsdev, const char *name, uint32_t *id)
{
    struct sbt_device d = {.api = SBT_API_TRACESMITH};
    int st = sbt_writer_intern(m->w, name, &d.name);
    if (st || (st = sbt_writer_add_device(m->w, &d, id)))
        return st;
    if (m->n_devs == m->cap_devs) {
        uint32_t cap = m->cap_devs ? m->cap_devs * 2 : 8;
        uint64_t *a = sbt__realloc(m->devs, cap * sizeof *a);
        if (a)
            m->devs = a;
        uint32_t *b = sbt__realloc(m->dev_id, cap * sizeof *b);
        if (b)
            m->dev_id = b;
        if (!a || !b)
            return sbt__fail(SBT_ENOMEM, "out of memory");
        m->cap_devs = cap;
    }
    m->devs[m->n_devs] = tsdev;
    m->dev_id[m->n_devs++] = *id;
    return SBT_OK;
}

static int device_of(struct imp *m, uint64_t tsdev, uint32_t *id)
{
    for (uint32_t i = 0; i < m->n_devs; i++)
        if (m->devs[i] == tsdev) {
            *id = m->dev_id[i];
            return SBT_OK;
        }
    char name[64];
    snprintf(name, sizeof name, "TraceSmith device %" PRIu64, tsdev);
    return new_device(m, tsdev, name, id);
}

static int stream_of(struct imp *m, uint64_t dev, uint64_t stream, uint32_t *id)
{
    for (uint32_t i = 0; i < m->n_streams; i++)
        if (m->streams[i].dev == dev && m->streams[i].stream == stream) {
            *id = m->streams[i].id;
            return SBT_OK;
        }
    uint32_t did;
    int st = device_of(m, dev, &did);
    if (st)
        return st;
    char name[64];
    snprintf(name, sizeof name, "device %" PRIu64 " stream %" PRIu64, dev, stream);
    struct sbt_stream s = {.device = did, .kind = SBT_STREAM_CUDA, .handle = stream};
    if ((st = sbt_writer_intern(m->w, name, &s.name)) || (st = sbt_writer_add_stream(m->w, &s, id)))
        return st;
    if (m->n_streams == m->cap_streams) {
        m->cap_streams = m->cap_streams ? m->cap_streams * 2 : 16;
        void *a = sbt__realloc(m->streams, m->cap_streams * sizeof *m->streams);
        if (!a)
            return sbt__fail(SBT_ENOMEM, "out of memory");
        m->streams = a;
    }
    m->streams[m->n_streams].dev = dev;
    m->streams[m->n_streams].stream = stream;
    m->streams[m->n_streams++].id = *id;
    return SBT_OK;
}

static uint64_t rebase(const struct imp *m, uint64_t t)
{
    return t >= m->base ? t - m->base : 0;
}

/* Emits one op for event e (and for its launch l when e is a kernel completion). */
static int emit(struct imp *m, const struct ts_event *e, const struct ts_event *launch)
{
    struct sbt_op op;
    memset(&op, 0, sizeof op);
    int st = stream_of(m, e->device, e->stream, &op.stream);
    if (st)
        return st;
    op.name = e->name < m->n_str ? m->str[e->name] : 0;
    op.host_begin = rebase(m, e->ts);
    op.host_end = op.host_begin + e->dur;
    const struct ts_event *geo = launch ? launch : e;
    switch (e->type) {
    case TS_KERNEL_LAUNCH:
    case TS_KERNEL_COMPLETE:
        op.kind = SBT_OP_KERNEL;
        if (launch) {
            op.host_begin = rebase(m, launch->ts);
            op.host_end = op.host_begin + launch->dur;
            op.flags |= SBT_OPF_DEV_TIME;
            op.dev_begin = rebase(m, e->ts);
            op.dev_end = op.dev_begin + e->dur;
        }
        if (geo->flags & 0x02) {
            op.flags |= SBT_OPF_GEOM;
            for (int i = 0; i < 3; i++) {
                op.grid[i] = (uint32_t)geo->k[i];
                op.block[i] = (uint32_t)geo->k[3 + i];
            }
            op.shmem = (uint32_t)geo->k[6];
        }
        break;
    case TS_H2D:
    case TS_D2H:
    case TS_D2D:
        op.kind = SBT_OP_COPY;
        op.subkind = e->type == TS_H2D   ? SBT_COPY_H2D
                     : e->type == TS_D2H ? SBT_COPY_D2H
                                         : SBT_COPY_D2D;
        op.flags |= SBT_OPF_BYTES | SBT_OPF_DEV_TIME;
        op.bytes = e->m[2];
        op.dev_begin = op.host_begin; /* CUPTI activity records are device times */
        op.dev_end = op.host_end;
        break;
    case TS_MEMSET:
        op.kind = SBT_OP_FILL;
        op.flags |= SBT_OPF_BYTES;
        op.bytes = e->m[2];
        break;
    case TS_STREAM_SYNC:
        op.kind = SBT_OP_STREAM_SYNC;
        op.flags |= SBT_OPF_OBJ;
        op.obj = op.stream;
        break;
    case TS_DEVICE_SYNC: {
        uint32_t d;
        if ((st = device_of(m, e->device, &d)))
            return st;
        op.kind = SBT_OP_DEVICE_SYNC;
        op.flags |= SBT_OPF_OBJ;
        op.obj = d;
        break;
    }
    case TS_EVENT_RECORD:
    case TS_EVENT_SYNC:
        op.kind = e->type == TS_EVENT_RECORD ? SBT_OP_EVENT_RECORD : SBT_OP_EVENT_WAIT;
        op.flags |= SBT_OPF_OBJ;
        op.obj = e->corr;
        break;
    case TS_STREAM_CREATE:
    case TS_STREAM_DESTROY:
        op.kind = e->type == TS_STREAM_CREATE ? SBT_OP_STREAM_CREATE : SBT_OP_STREAM_DESTROY;
        op.flags |= SBT_OPF_OBJ;
        op.obj = op.stream;
        break;
    case TS_MEM_ALLOC:
    case TS_MEM_FREE:
        op.kind = e->type == TS_MEM_ALLOC ? SBT_OP_ALLOC : SBT_OP_FREE;
        op.flags |= SBT_OPF_RESOURCE | SBT_OPF_BYTES;
        op.resource = e->type == TS_MEM_ALLOC ? e->m[1] : (e->m[0] ? e->m[0] : e->m[1]);
        op.bytes = e->m[2];
        if (!op.resource) /* no address recorded: a unique stand-in */
            op.resource = (1ull << 60) + m->n_ops;
        op.resource &= (1ull << 61) - 1;
        break;
    default:
        op.kind = SBT_OP_MARKER;
        break;
    }
    m->n_ops++;
    return sbt_writer_add_op(m->w, &op, NULL);
}

static struct pending *pend_slot(struct imp *m, uint64_t corr)
{
    size_t j = (corr * 0x9E3779B97F4A7C15ull) & (m->pend_cap - 1);
    while (m->pend[j].corr && m->pend[j].corr != corr + 1)
        j = (j + 1) & (m->pend_cap - 1);
    return &m->pend[j];
}

static int pend_grow(struct imp *m)
{
    size_t cap = m->pend_cap ? m->pend_cap * 2 : 256;
    struct pending *old = m->pend;
    size_t old_cap = m->pend_cap;
    m->pend = sbt__calloc(cap, sizeof *m->pend);
    if (!m->pend) {
        m->pend = old;
        return sbt__fail(SBT_ENOMEM, "out of memory for pending launches");
    }
    m->pend_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].corr)
            *pend_slot(m, old[i].corr - 1) = old[i];
    sbt__free(old);
    return SBT_OK;
}

/* Deletion with backward shift keeps linear probing correct. */
static void pend_del(struct imp *m, struct pending *p)
{
    size_t i = (size_t)(p - m->pend), mask = m->pend_cap - 1;
    size_t j = i;
    m->pend[i].corr = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->pend[j].corr)
            break;
        size_t home = ((m->pend[j].corr - 1) * 0x9E3779B97F4A7C15ull) & mask;
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            m->pend[i] = m->pend[j];
            m->pend[j].corr = 0;
            i = j;
        }
    }
    m->pend_n--;
}

static int read_event(struct imp *m, size_t *pos, uint64_t *prev_ts, struct ts_event *e)
{
    int st;
    uint64_t delta;
    if (*pos + 2 > m->len)
        return ts_fail(*pos, "event record runs past end of file");
    memset(e, 0, sizeof *e);
    e->type = m->p[(*pos)++];
    e->flags = m->p[(*pos)++];
    if ((st = ts_varint(m, pos, &delta)))
        return st;
    e->ts = *prev_ts + delta;
    *prev_ts = e->ts;
    if ((e->flags & 0x01) && (st = ts_varint(m, pos, &e->dur)))
        return st;
    if ((st = ts_varint(m, pos, &e->device)) || (st = ts_varint(m, pos, &e->stream)) ||
        (st = ts_varint(m, pos, &e->corr)) || (st = ts_varint(m, pos, &e->name)))
        return st;
    if (e->flags & 0x02)
        for (int i = 0; i < 8; i++)
            if ((st = ts_varint(m, pos, &e->k[i])))
                return st;
    if (e->flags & 0x04)
        for (int i = 0; i < 3; i++)
            if ((st = ts_varint(m, pos, &e->m[i])))
                return st;
    if (e->flags & 0x08) { /* call stack: thread id, frames; not imported */
        uint64_t tid, n, x;
        if ((st = ts_varint(m, pos, &tid)) || (st = ts_varint(m, pos, &n)))
            return st;
        if (n > m->len - *pos)
            return ts_fail(*pos, "call stack frame count exceeds the file");
        for (uint64_t i = 0; i < n * 4; i++)
            if ((st = ts_varint(m, pos, &x)))
                return st;
    }
    if (e->flags & 0xf0)
        return ts_fail(*pos, "event flags have unknown bits");
    return SBT_OK;
}

static int import(struct imp *m, uint64_t *n_ops)
{
    const uint8_t *h = m->p;
    int st;
    if (m->len < TS_HEADER_LEN)
        return ts_fail(m->len, "file shorter than the 72-byte TraceSmith header");
    uint64_t meta_off = sbt__le64(h + 16), str_off = sbt__le64(h + 24), dev_off = sbt__le64(h + 32),
             ev_off = sbt__le64(h + 40), count = sbt__le64(h + 56);
    char ver[32];
    snprintf(ver, sizeof ver, "%u.%u", h[4] | h[5] << 8, h[6] | h[7] << 8);
    if ((st = sbt_writer_meta(m->w, "imported.from", "TraceSmith SBT")) ||
        (st = sbt_writer_meta(m->w, "imported.format", ver)))
        return st;
    /* strings first: events refer to them by index */
    if (str_off) {
        size_t pos = (size_t)str_off;
        uint64_t n;
        if (str_off >= m->len || m->p[pos] != 2)
            return ts_fail((size_t)str_off, "string table section id is not 2");
        pos++;
        if ((st = ts_varint(m, &pos, &n)))
            return st;
        if (n > m->len - pos)
            return ts_fail(pos, "string count exceeds the file");
        m->str = sbt__calloc(n ? n : 1, sizeof *m->str);
        if (!m->str)
            return sbt__fail(SBT_ENOMEM, "out of memory for %" PRIu64 " strings", n);
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *s;
            uint64_t len;
            if ((st = ts_string(m, &pos, &s, &len)) ||
                (st = sbt_writer_intern_len(m->w, (const char *)s, (size_t)len, &m->str[i])))
                return st;
        }
        m->n_str = n;
    }
    if (meta_off) {
        size_t pos = (size_t)meta_off;
        static const char *keys[] = {"application", "argv", "start", "end", "host", "pid"};
        if (meta_off >= m->len || m->p[pos] != 1)
            return ts_fail((size_t)meta_off, "metadata section id is not 1");
        pos++;
        for (int i = 0; i < 6; i++) {
            char buf[4096];
            if (i == 0 || i == 1 || i == 4) {
                const uint8_t *s;
                uint64_t len;
                if ((st = ts_string(m, &pos, &s, &len)))
                    return st;
                snprintf(buf, sizeof buf, "%.*s", (int)(len < 4000 ? len : 4000), (const char *)s);
            } else {
                uint64_t v;
                if ((st = ts_varint(m, &pos, &v)))
                    return st;
                snprintf(buf, sizeof buf, "%" PRIu64, v);
            }
            char key[48];
            snprintf(key, sizeof key, "tracesmith.%s", keys[i]);
            if ((st = sbt_writer_meta(m->w, key, buf)))
                return st;
        }
    }
    if (dev_off) { /* names of devices, in the order they are listed */
        size_t pos = (size_t)dev_off;
        uint64_t n;
        if (dev_off >= m->len || m->p[pos] != 3)
            return ts_fail((size_t)dev_off, "device info section id is not 3");
        pos++;
        if ((st = ts_varint(m, &pos, &n)))
            return st;
        if (n > 1024)
            return ts_fail(pos, "more than 1024 devices");
        for (uint64_t i = 0; i < n; i++) {
            uint64_t id, v[9], nl, vl;
            const uint8_t *name, *vendor;
            if ((st = ts_varint(m, &pos, &id)) || (st = ts_string(m, &pos, &name, &nl)) ||
                (st = ts_string(m, &pos, &vendor, &vl)))
                return st;
            for (int k = 0; k < 9; k++)
                if ((st = ts_varint(m, &pos, &v[k])))
                    return st;
            char nm[300];
            snprintf(nm, sizeof nm, "%.*s", (int)(nl < 256 ? nl : 256), (const char *)name);
            uint32_t did;
            if ((st = new_device(m, id, nm, &did)))
                return st;
        }
    }
    if (!ev_off || !count) {
        *n_ops = 0;
        return SBT_OK;
    }
    size_t pos = (size_t)ev_off;
    if (ev_off >= m->len || m->p[pos] != 4)
        return ts_fail((size_t)ev_off, "events section id is not 4");
    pos++;
    uint64_t prev;
    if ((st = ts_varint(m, &pos, &m->base)))
        return st;
    prev = m->base;
    if (count > m->len - pos)
        return ts_fail(56, "event count exceeds what the file can hold");
    if ((st = pend_grow(m)))
        return st;
    struct ts_event e;
    for (uint64_t i = 0; i < count; i++) {
        size_t at = pos;
        if ((st = read_event(m, &pos, &prev, &e)))
            return st;
        if (e.type == TS_KERNEL_LAUNCH) {
            if ((m->pend_n + 1) * 2 > m->pend_cap && (st = pend_grow(m)))
                return st;
            struct pending *p = pend_slot(m, e.corr);
            if (p->corr) /* a second launch with the same id: flush the first */
                st = emit(m, &p->ev, NULL);
            else
                m->pend_n++;
            p->corr = e.corr + 1;
            p->ev = e;
        } else if (e.type == TS_KERNEL_COMPLETE) {
            struct pending *p = pend_slot(m, e.corr);
            if (p->corr) {
                struct ts_event launch = p->ev;
                pend_del(m, p);
                st = emit(m, &e, &launch);
            } else {
                st = emit(m, &e, NULL);
            }
        } else if ((e.type >= TS_H2D && e.type <= TS_STREAM_DESTROY) || e.type == TS_MEM_ALLOC ||
                   e.type == TS_MEM_FREE || (e.type >= TS_MARKER && e.type <= TS_RANGE_END)) {
            st = emit(m, &e, NULL);
        } else {
            char what[48];
            snprintf(what, sizeof what, "tracesmith event type %u", e.type);
            st = sbt_writer_unsupported(m->w, what, 1, SBT_SEQ_NONE, 0);
        }
        if (st)
            return st < 0 && st != SBT_ENOMEM && st != SBT_EIO
                       ? sbt__fail(SBT_ECORRUPT, "TraceSmith event %" PRIu64 " at offset %zu: %s",
                                   i, at, sbt_errmsg())
                       : st;
    }
    for (size_t i = 0; i < m->pend_cap; i++) /* launches that never completed */
        if (m->pend[i].corr && (st = emit(m, &m->pend[i].ev, NULL)))
            return st;
    *n_ops = m->n_ops;
    return SBT_OK;
}

int sbt_import_tracesmith(const char *in_path, const char *out_path,
                          const struct sbt_writer_opts *opts, uint64_t *n_ops)
{
    *n_ops = 0;
    int fd = open(in_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sbt__fail(SBT_EIO, "cannot open %s", in_path);
    struct stat sb;
    if (fstat(fd, &sb) < 0 || sb.st_size < 4) {
        close(fd);
        return sbt__fail(SBT_ECORRUPT, "%s: too short to be a TraceSmith file", in_path);
    }
    struct imp m;
    memset(&m, 0, sizeof m);
    m.len = (size_t)sb.st_size;
    void *map = mmap(NULL, m.len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return sbt__fail(SBT_EIO, "%s: cannot map %zu bytes", in_path, m.len);
    m.p = map;
    int st;
    if (memcmp(m.p, SBT_TRACESMITH_MAGIC, 4))
        st = sbt__fail(SBT_EINVAL, "%s is not a TraceSmith SBT file (no 'SBT\\0' magic)", in_path);
    else if (!(st = sbt_writer_open(out_path, opts, &m.w)))
        st = import(&m, n_ops);
    if (m.w) {
        if (st)
            sbt_writer_abandon(m.w), unlink(out_path);
        else
            st = sbt_writer_close(m.w);
    }
    munmap(map, m.len);
    sbt__free(m.str);
    sbt__free(m.streams);
    sbt__free(m.devs);
    sbt__free(m.dev_id);
    sbt__free(m.pend);
    return st;
}
