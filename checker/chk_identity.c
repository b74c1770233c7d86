/*
 * checker/chk_identity.c — what an op is called and which ops count: its name for people, its
 * key and identity (chk.h "Op identity": stream, program and entry point or kind, geometry or
 * bytes, occurrence), its timing group (chk_group_name: copies and fills by power-of-two size
 * class), and whether it is a device op (its outputs can be digested) with a usable device
 * time.
 *
 * Keys name programs by content (spirv:<hash>) and %XX-encode what identities keep out, so an
 * identity is one word of an expectations line and survives a re-capture.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

const char *chk__op_name(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap)
{
    const char *s = NULL, *prog = NULL;
    if (op->kind == SBT_OP_KERNEL && (op->flags & SBT_OPF_KERNEL)) {
        const struct sbt_kernel *k = sbt_reader_kernel(r, op->kernel);
        if (k && k->name)
            s = sbt_reader_string(r, k->name);
        /* programs are named by content (spirv:<hash>, cubin:<hash>) or file: with it, two
         * shaders whose entry points are both "main" are two names */
        const struct sbt_program *p = k ? sbt_reader_program(r, k->program) : NULL;
        prog = p ? sbt_reader_string(r, p->name) : NULL;
    }
    if ((!s || !*s) && op->name)
        s = sbt_reader_string(r, op->name);
    if (!s || !*s)
        s = sbt_op_kind_name(op->kind);
    if (prog && *prog)
        snprintf(buf, cap, "%s [%s]", s ? s : "?", prog);
    else
        snprintf(buf, cap, "%s", s ? s : "?");
    return buf;
}

static const char *const copy_dir[] = {"", "h2d", "d2h", "d2d", "h2h"};

/* The kernel's entry point and program names, or NULL / "" when the trace has none. */
static void kernel_names(const sbt_reader *r, const struct sbt_op *op, const char **entry,
                         const char **prog)
{
    *entry = *prog = NULL;
    if (op->kind != SBT_OP_KERNEL || !(op->flags & SBT_OPF_KERNEL))
        return;
    const struct sbt_kernel *k = sbt_reader_kernel(r, op->kernel);
    if (!k)
        return;
    *entry = sbt_reader_string(r, k->name);
    const struct sbt_program *p = sbt_reader_program(r, k->program);
    *prog = p ? sbt_reader_string(r, p->name) : NULL;
}

static uint64_t op_bytes(const struct sbt_op *op)
{
    if (op->flags & SBT_OPF_BYTES)
        return op->bytes;
    uint64_t n = 0;
    for (uint32_t i = 0; i < op->n_access; i++)
        n += op->access[i].len;
    return n;
}

/* appends s to buf at *pos, %XX-encoding what identities keep out */
static void put_enc(char *buf, size_t cap, size_t *pos, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; s && *s && *pos + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("._:+-", c)) {
            buf[(*pos)++] = (char)c;
        } else {
            buf[(*pos)++] = '%';
            buf[(*pos)++] = hex[c >> 4];
            buf[(*pos)++] = hex[c & 15];
        }
    }
    buf[*pos < cap ? *pos : cap - 1] = 0;
}

const char *chk_op_key(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap)
{
    size_t pos = 0;
    if (!cap)
        return buf;
    buf[0] = 0;
    const char *entry, *prog;
    kernel_names(r, op, &entry, &prog);
    if (op->kind == SBT_OP_KERNEL) {
        put_enc(buf, cap, &pos, prog && *prog ? prog : "?");
        chk__putf(buf, cap, &pos, ":");
        if (entry && *entry) {
            put_enc(buf, cap, &pos, entry);
        } else {
            const char *n = sbt_reader_string(r, op->name);
            put_enc(buf, cap, &pos, n && *n ? n : "?");
        }
        chk__putf(buf, cap, &pos, "/g%ux%ux%u.b%ux%ux%u", op->grid[0], op->grid[1], op->grid[2],
                  op->block[0], op->block[1], op->block[2]);
        if (op->shmem)
            chk__putf(buf, cap, &pos, ".s%u", op->shmem);
        return buf;
    }
    put_enc(buf, cap, &pos, sbt_op_kind_name(op->kind));
    if (op->kind == SBT_OP_COPY && op->subkind < 5 && op->subkind)
        chk__putf(buf, cap, &pos, "-%s", copy_dir[op->subkind]);
    chk__putf(buf, cap, &pos, "/n%" PRIu64, op_bytes(op));
    return buf;
}

/* The power-of-two size class [2^k, 2^(k+1)) of n bytes as "4 KiB..<8 KiB" ("0 B" for 0): copies
 * and fills are timed by class, so that the gate's family of tests (Holm) does not grow with
 * every distinct size a program copies. */
static const char *size_class(uint64_t n, char *buf, size_t cap)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (!n) {
        snprintf(buf, cap, "0 B");
        return buf;
    }
    unsigned k = 0;
    while (k < 63 && n >> (k + 1))
        k++;
    snprintf(buf, cap, "%u %s..<%u %s", 1u << (k % 10), unit[k / 10], 1u << ((k + 1) % 10),
             unit[(k + 1) / 10]);
    return buf;
}

const char *chk_group_name(const sbt_reader *r, const struct sbt_op *op, char *buf, size_t cap)
{
    char sz[40];
    switch (op->kind) {
    case SBT_OP_KERNEL: {
        const char *entry, *prog;
        kernel_names(r, op, &entry, &prog);
        if (!entry || !*entry) {
            const char *n = sbt_reader_string(r, op->name);
            entry = n && *n ? n : "kernel";
        }
        int n = snprintf(buf, cap, "%s", entry);
        if (prog && *prog && n >= 0 && (size_t)n < cap)
            n += snprintf(buf + n, cap - (size_t)n, " [%s]", prog);
        if (n >= 0 && (size_t)n < cap)
            n += snprintf(buf + n, cap - (size_t)n, " %ux%ux%u/%ux%ux%u", op->grid[0], op->grid[1],
                          op->grid[2], op->block[0], op->block[1], op->block[2]);
        if (op->shmem && n >= 0 && (size_t)n < cap)
            snprintf(buf + n, cap - (size_t)n, " smem %u", op->shmem);
        return buf;
    }
    case SBT_OP_COPY:
        snprintf(buf, cap, "[copy%s%s] %s", op->subkind && op->subkind < 5 ? " " : "",
                 op->subkind < 5 ? copy_dir[op->subkind] : "",
                 size_class(op_bytes(op), sz, sizeof sz));
        return buf;
    case SBT_OP_FILL:
        snprintf(buf, cap, "[fill] %s", size_class(op_bytes(op), sz, sizeof sz));
        return buf;
    default:
        return NULL;
    }
}

int chk__op_dur(const struct sbt_op *op, uint64_t *ns)
{
    if (!(op->flags & SBT_OPF_DEV_TIME) || (op->flags & SBT_OPF_UNTIMED) ||
        op->dev_end < op->dev_begin)
        return 0;
    *ns = op->dev_end - op->dev_begin;
    return 1;
}

int chk__is_device_op(const struct sbt_op *op)
{
    return op->kind == SBT_OP_KERNEL || op->kind == SBT_OP_COPY || op->kind == SBT_OP_FILL ||
           op->kind == SBT_OP_HOST_READ || (op->flags & SBT_OPF_DIGEST);
}

int chk__identity_next(struct chk_idgen *g, const sbt_reader *r, const struct sbt_op *op, char *buf,
                       size_t cap)
{
    char key[420];
    char k[400];
    snprintf(key, sizeof key, "s%u/%s", op->stream, chk_op_key(r, op, k, sizeof k));
    uint32_t idx;
    int added, st = chk__strmap_find(&g->keys, key, &idx, &added);
    if (st)
        return st;
    if (added) {
        if ((st = chk__grow((void **)&g->count, &g->cap, idx + 1, sizeof *g->count)))
            return st;
        g->count[idx] = 0;
    }
    snprintf(buf, cap, "%s#%" PRIu64, key, g->count[idx]++);
    return 0;
}

void chk__idgen_free(struct chk_idgen *g)
{
    chk__strmap_free(&g->keys);
    free(g->count);
    memset(g, 0, sizeof *g);
}

int chk_op_identities(sbt_reader *r, const uint64_t *seqs, uint64_t n, char *out, size_t stride)
{
    if (!r || (n && (!seqs || !out || stride < 2)))
        return chk__fail(SBT_EINVAL, "chk_op_identities: bad arguments");
    for (uint64_t i = 0; i < n; i++) {
        out[i * stride] = 0;
        if (i && seqs[i] <= seqs[i - 1])
            return chk__fail(
                SBT_EINVAL, "chk_op_identities: seqs must increase (%" PRIu64 " after %" PRIu64 ")",
                seqs[i], seqs[i - 1]);
    }
    if (!n)
        return 0;
    struct sbt_range rg = {.has_seq = 1, .seq_begin = 0, .seq_end = seqs[n - 1] + 1};
    sbt_cursor *c;
    int st = sbt_cursor_open(r, &rg, &c);
    if (st)
        return chk__fail_sbt(st);
    struct chk_idgen g = {0};
    const struct sbt_op *op;
    uint64_t k = 0;
    char buf[512];
    int idst = 0;
    while (k < n && (st = sbt_cursor_next(c, &op)) == 1) {
        if ((idst = chk__identity_next(&g, r, op, buf, sizeof buf)))
            break;
        while (k < n && seqs[k] < op->seq)
            k++; /* not in the trace: stays "" */
        if (k < n && seqs[k] == op->seq)
            snprintf(out + k++ * stride, stride, "%s", buf);
    }
    if (idst)
        st = idst; /* its message is set */
    else if (st < 0)
        st = chk__fail_sbt(st);
    sbt_cursor_close(c);
    chk__idgen_free(&g);
    return st < 0 ? st : 0;
}
