/*
 * checker/chk_expect.c — expectation files: per device, the expected output digest of each op
 * with a label (ok, flaky, skip), keyed by the op's identity (chk.h: stream, program and entry
 * point, geometry, occurrence) so that a re-capture with inserted or removed ops keeps them
 * attached to the right ops. Version 1 files keyed ops by seq; they are still read (entries
 * keyed by seq, written back as "@<seq>"). Line-based so that a diff of two versions in review
 * shows which ops changed.
 *
 * A file must read back as it was written (save, load, save gives the same bytes; the fuzz
 * target tests/fuzz/fuzz_expect.c holds that): device names and op names are free text, so
 * what a line cannot hold as it is (control characters such as a carriage return, '%', '#',
 * which starts a comment after a blank, and blanks at either end) is written %XX and read back;
 * identities are single words, and one that is not is refused rather than written.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

struct exp_op {
    char *id; /* identity, NULL = keyed by seq */
    uint64_t seq;
    uint32_t label;
    sbt_hash digest;
    char *name;
    int used; /* found by chk_expect_get */
};

/* A seq-keyed entry in the index by seq: its seq beside its index into ops, so that sorting
 * the index needs nothing but the index (an entry's seq never changes: it is how it is found). */
struct seq_op {
    uint64_t seq;
    uint32_t op; /* index into exp_dev.ops */
};

struct exp_dev {
    char *device;
    struct exp_op *ops;
    uint32_t n, cap;
    struct chk_strmap ids; /* identity -> index into id_op */
    uint32_t *id_op;
    uint32_t cap_id_op;
    struct seq_op *by_seq; /* the seq-keyed entries, sorted by seq when by_seq_sorted */
    uint32_t n_by_seq, cap_by_seq;
    int by_seq_sorted;
};

struct chk_expect {
    struct exp_dev *dev;
    uint32_t n, cap;
};

static const char *const label_names[] = {"ok", "flaky", "skip"};

#define EXP_MAX_ID     1023 /* bytes of an identity (the loader reads it with %1023s) */
#define EXP_MAX_DEVICE 1000 /* bytes of a device name: escaped, 3000 of a 4095-byte line */
#define EXP_MAX_NAME   255  /* bytes of an op name kept (for people: longer ones are cut) */

/* ========================================================================================== */
/* Free text in a line: %XX escapes                                                           */
/* ========================================================================================== */

/* 1 for a byte of free text (a device or op name) that a line does not hold as it is */
static int needs_escape(const char *s, size_t i, size_t n)
{
    unsigned char c = (unsigned char)s[i];
    return c < 0x20 || c == 0x7f || c == '%' || c == '#' || (c == ' ' && (i == 0 || i + 1 == n));
}

static void put_text(FILE *f, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
        if (needs_escape(s, i, n))
            fprintf(f, "%%%02X", (unsigned char)s[i]);
        else
            fputc(s[i], f);
}

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Decodes %XX in place; a '%' that starts no escape (or %00) stays as it is, so that the
 * text it gives is written back the same (as %25). */
static void unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        int hi = r[0] == '%' && r[1] ? hexval((unsigned char)r[1]) : -1;
        int lo = hi >= 0 && r[2] ? hexval((unsigned char)r[2]) : -1;
        if (lo >= 0 && (hi | lo)) {
            *w++ = (char)(hi << 4 | lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
}

/* An identity is one word of a line: no blank (what %s stops at), not a comment, not "@"
 * without a seq, and short enough to be read back. 0, or SBT_EINVAL saying why. */
static int id_check(const char *id)
{
    if (!*id)
        return chk__fail(SBT_EINVAL, "expectation identity: empty");
    if (strlen(id) > EXP_MAX_ID)
        return chk__fail(SBT_EINVAL, "expectation identity '%.60s...': longer than %d bytes", id,
                         EXP_MAX_ID);
    for (const char *p = id; *p; p++)
        if (isspace((unsigned char)*p))
            return chk__fail(SBT_EINVAL,
                             "expectation identity '%.60s': holds a blank (byte 0x%02x), which "
                             "an expectations line cannot hold in one",
                             id, (unsigned char)*p);
    if (id[0] == '#')
        return chk__fail(SBT_EINVAL, "expectation identity '%.60s': starts with '#' (a comment)",
                         id);
    return 0;
}

int chk_expect_create(chk_expect **out)
{
    *out = chk__calloc(1, sizeof **out);
    return *out ? 0 : chk__fail(SBT_ENOMEM, "out of memory for expectations");
}

static void dev_clear(struct exp_dev *d)
{
    for (uint32_t k = 0; k < d->n; k++) {
        free(d->ops[k].name);
        free(d->ops[k].id);
    }
    free(d->ops);
    chk__strmap_free(&d->ids);
    free(d->id_op);
    free(d->by_seq);
    d->ops = NULL, d->n = d->cap = 0;
    d->id_op = NULL, d->cap_id_op = 0;
    d->by_seq = NULL, d->n_by_seq = d->cap_by_seq = 0;
    d->by_seq_sorted = 1;
}

void chk_expect_free(chk_expect *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < e->n; i++) {
        dev_clear(&e->dev[i]);
        free(e->dev[i].device);
    }
    free(e->dev);
    free(e);
}

static struct exp_dev *dev_find(const chk_expect *e, const char *device)
{
    for (uint32_t i = 0; i < e->n; i++)
        if (!strcmp(e->dev[i].device, device))
            return &e->dev[i];
    return NULL;
}

static int dev_get(chk_expect *e, const char *device, struct exp_dev **out)
{
    if ((*out = dev_find(e, device)))
        return 0;
    if (strlen(device) > EXP_MAX_DEVICE)
        return chk__fail(SBT_EINVAL, "expectations: device name '%.60s...' longer than %d bytes",
                         device, EXP_MAX_DEVICE);
    int st = chk__grow((void **)&e->dev, &e->cap, e->n + 1, sizeof *e->dev);
    if (st)
        return st;
    struct exp_dev *d = &e->dev[e->n];
    memset(d, 0, sizeof *d);
    d->by_seq_sorted = 1;
    if (!(d->device = chk__strdup(device)))
        return chk__fail(SBT_ENOMEM, "out of memory for expectations");
    e->n++;
    *out = d;
    return 0;
}

static int cmp_by_seq(const void *a, const void *b)
{
    uint64_t x = ((const struct seq_op *)a)->seq, y = ((const struct seq_op *)b)->seq;
    return x < y ? -1 : x > y;
}

static struct exp_op *seq_find(struct exp_dev *d, uint64_t seq)
{
    if (!d->by_seq_sorted) {
        if (d->n_by_seq)
            qsort(d->by_seq, d->n_by_seq, sizeof *d->by_seq, cmp_by_seq);
        d->by_seq_sorted = 1;
    }
    uint32_t a = 0, b = d->n_by_seq;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (d->by_seq[m].seq < seq)
            a = m + 1;
        else
            b = m;
    }
    return a < d->n_by_seq && d->by_seq[a].seq == seq ? &d->ops[d->by_seq[a].op] : NULL;
}

/* "@<seq>" keys an op by seq */
static int id_is_seq(const char *id, uint64_t *seq)
{
    if (!id || id[0] != '@' || !id[1])
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(id + 1, &end, 10);
    if (*end || errno || !(id[1] >= '0' && id[1] <= '9'))
        return 0;
    *seq = v;
    return 1;
}

static struct exp_op *id_find(struct exp_dev *d, const char *id)
{
    uint32_t i = chk__strmap_get(&d->ids, id);
    return i == UINT32_MAX ? NULL : &d->ops[d->id_op[i]];
}

int chk_expect_set(chk_expect *e, const char *device, const char *id, uint64_t seq, uint32_t label,
                   const sbt_hash *digest, const char *name)
{
    if (label > CHK_LABEL_SKIP)
        return chk__fail(SBT_EINVAL, "expectation label %u unknown", label);
    int st = id ? id_check(id) : 0;
    if (st)
        return st;
    uint64_t s2;
    if (id_is_seq(id, &s2))
        id = NULL, seq = s2;
    else if (id && id[0] == '@')
        return chk__fail(SBT_EINVAL, "expectation identity '%.60s': @ needs a seq number", id);
    struct exp_dev *d;
    if ((st = dev_get(e, device && *device ? device : "*", &d)))
        return st;
    struct exp_op *o = id ? id_find(d, id) : seq_find(d, seq);
    if (!o) {
        if ((st = chk__grow((void **)&d->ops, &d->cap, d->n + 1, sizeof *d->ops)))
            return st;
        uint32_t k = d->n;
        o = &d->ops[k];
        memset(o, 0, sizeof *o);
        if (id) {
            uint32_t idx;
            int added;
            if (!(o->id = chk__strdup(id)))
                return chk__fail(SBT_ENOMEM, "out of memory for expectations");
            if ((st = chk__strmap_find(&d->ids, id, &idx, &added)) ||
                (st = chk__grow((void **)&d->id_op, &d->cap_id_op, idx + 1, sizeof *d->id_op))) {
                free(o->id);
                return st;
            }
            d->id_op[idx] = k;
        } else {
            if ((st = chk__grow((void **)&d->by_seq, &d->cap_by_seq, d->n_by_seq + 1,
                                sizeof *d->by_seq)))
                return st;
            /* appending in seq order (as check does) keeps the index sorted */
            if (d->n_by_seq && d->by_seq[d->n_by_seq - 1].seq > seq)
                d->by_seq_sorted = 0;
            d->by_seq[d->n_by_seq++] = (struct seq_op){.seq = seq, .op = k};
        }
        d->n++;
    }
    o->seq = seq;
    o->label = label;
    o->digest = digest ? *digest : (sbt_hash){0, 0};
    if (name) {
        /* for people: kept up to EXP_MAX_NAME bytes (what is kept is what is read back) */
        size_t len = strlen(name);
        len = len > EXP_MAX_NAME ? EXP_MAX_NAME : len;
        char *n = chk__malloc(len + 1);
        if (!n)
            return chk__fail(SBT_ENOMEM, "out of memory for expectations");
        memcpy(n, name, len);
        n[len] = 0;
        free(o->name);
        o->name = n;
    }
    return 0;
}

int chk_expect_get(const chk_expect *e, const char *device, const char *id, uint64_t seq,
                   uint32_t *label, sbt_hash *digest)
{
    struct exp_dev *d = dev_find(e, device && *device ? device : "*");
    if (!d)
        d = dev_find(e, "*");
    if (!d)
        return 0;
    struct exp_op *o = id ? id_find(d, id) : NULL;
    if (!o)
        o = seq_find(d, seq);
    if (!o)
        return 0;
    o->used = 1; /* bookkeeping of the lookups, not a visible change of the set */
    *label = o->label;
    *digest = o->digest;
    return 1;
}

uint64_t chk_expect_count(const chk_expect *e, const char *device)
{
    struct exp_dev *d = dev_find(e, device && *device ? device : "*");
    return d ? d->n : 0;
}

uint64_t chk_expect_unused(const chk_expect *e, const char *device)
{
    struct exp_dev *d = dev_find(e, device && *device ? device : "*");
    if (!d)
        d = dev_find(e, "*");
    uint64_t n = 0;
    for (uint32_t k = 0; d && k < d->n; k++)
        n += !d->ops[k].used;
    return n;
}

static int parse_hex(const char *s, sbt_hash *h)
{
    if (strlen(s) != 32)
        return -1;
    uint64_t v[2] = {0, 0};
    for (int i = 0; i < 32; i++) {
        int c = tolower((unsigned char)s[i]);
        int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (x < 0)
            return -1;
        v[i / 16] = v[i / 16] << 4 | (uint64_t)x;
    }
    /* sbt_hash_hex prints hi then lo */
    h->hi = v[0];
    h->lo = v[1];
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

int chk_expect_load(const char *path, chk_expect **out)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f)
        return chk__fail(SBT_EIO, "%s: %s", path, strerror(errno));
    chk_expect *e;
    int st = chk_expect_create(&e);
    if (st) {
        fclose(f);
        return st;
    }
    char line[4096];
    char device[4096] = "*";
    uint64_t ln = 0;
    int version = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (!strchr(line, '\n') && !feof(f)) {
            st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": line longer than %zu bytes", path, ln,
                           sizeof line - 1);
            goto fail;
        }
        char *hash = strchr(line, '#');
        /* '#' starts a comment at the start of a line or after a blank; identities hold '#'
         * after a non-blank */
        while (hash && hash != line && hash[-1] != ' ' && hash[-1] != '\t')
            hash = strchr(hash + 1, '#');
        if (hash)
            *hash = 0;
        char *s = trim(line);
        if (!*s)
            continue;
        if (!version) {
            if (!strcmp(s, "reprise-expect 1") || !strcmp(s, "reprise-expect 2")) {
                version = s[15] - '0';
                continue;
            }
            st = chk__fail(SBT_ECORRUPT,
                           "%s:%" PRIu64 ": expected the header 'reprise-expect 2' (or 1), got "
                           "'%.40s'",
                           path, ln, s);
            goto fail;
        }
        if (!strncmp(s, "device ", 7)) {
            snprintf(device, sizeof device, "%s", trim(s + 7));
            unescape(device);
            if (strlen(device) > EXP_MAX_DEVICE) {
                st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": device name longer than %d bytes",
                               path, ln, EXP_MAX_DEVICE);
                goto fail;
            }
            struct exp_dev *d;
            if ((st = dev_get(e, device, &d)))
                goto fail;
            continue;
        }
        if (strncmp(s, "op ", 3)) {
            st = chk__fail(SBT_ECORRUPT,
                           "%s:%" PRIu64 ": expected 'device NAME' or 'op %s DIGEST|- "
                           "ok|flaky|skip%s', got '%.40s'",
                           path, ln, version == 1 ? "SEQ" : "IDENTITY",
                           version == 1 ? " [NAME]" : " SEQ|- [NAME]", s);
            goto fail;
        }
        char key[1024], dig[64], lab[16], sq[32] = "-";
        int used = 0, got;
        if (version == 1)
            got = sscanf(s + 3, "%1023s %63s %15s %n", key, dig, lab, &used) + 1;
        else
            got = sscanf(s + 3, "%1023s %63s %15s %31s %n", key, dig, lab, sq, &used);
        if (got < 4) {
            st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": expected 'op %s DIGEST|- LABEL%s'", path,
                           ln, version == 1 ? "SEQ" : "IDENTITY",
                           version == 1 ? " [NAME]" : " SEQ|- [NAME]");
            goto fail;
        }
        uint64_t seq = UINT64_MAX;
        const char *id = key;
        char *end;
        if (version == 1) {
            errno = 0;
            seq = strtoull(key, &end, 10);
            if (*end || errno || !(key[0] >= '0' && key[0] <= '9')) {
                st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": op '%.40s': expected a seq number",
                               path, ln, key);
                goto fail;
            }
            id = NULL;
        } else if (strcmp(sq, "-")) {
            errno = 0;
            seq = strtoull(sq, &end, 10);
            if (*end || errno || !(sq[0] >= '0' && sq[0] <= '9')) {
                st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": seq '%.31s': expected a number or -",
                               path, ln, sq);
                goto fail;
            }
        }
        if (id && key[0] == '@' && !id_is_seq(key, &seq)) {
            st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": identity '%.40s': @ needs a seq number",
                           path, ln, key);
            goto fail;
        }
        uint32_t label = 3;
        for (uint32_t i = 0; i < 3; i++)
            if (!strcmp(lab, label_names[i]))
                label = i;
        if (label == 3) {
            st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": label '%s': expected ok, flaky or skip",
                           path, ln, lab);
            goto fail;
        }
        sbt_hash h = {0, 0};
        if (strcmp(dig, "-") && parse_hex(dig, &h)) {
            st = chk__fail(SBT_ECORRUPT,
                           "%s:%" PRIu64 ": digest '%.40s': expected 32 hex digits or -", path, ln,
                           dig);
            goto fail;
        }
        if (label == CHK_LABEL_OK && !strcmp(dig, "-")) {
            st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": op %s: label ok needs a digest", path, ln,
                           key);
            goto fail;
        }
        char *name = used ? trim(s + 3 + used) : "";
        unescape(name);
        if (id && id_check(id)) {
            char why[512];
            snprintf(why, sizeof why, "%s", chk_errmsg());
            st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": %s", path, ln, why);
            goto fail;
        }
        if ((st = chk_expect_set(e, device, id, seq, label, &h, *name ? name : NULL)))
            goto fail;
    }
    if (ferror(f)) {
        st = chk__fail(SBT_EIO, "%s: read error", path);
        goto fail;
    }
    if (!version) {
        st = chk__fail(SBT_ECORRUPT, "%s: empty; expected the header 'reprise-expect 2'", path);
        goto fail;
    }
    fclose(f);
    *out = e;
    return 0;
fail:
    fclose(f);
    chk_expect_free(e);
    return st;
}

static int cmp_dev(const void *a, const void *b)
{
    return strcmp(((const struct exp_dev *)a)->device, ((const struct exp_dev *)b)->device);
}

static int cmp_op_ptr(const void *a, const void *b)
{
    const struct exp_op *x = *(const struct exp_op *const *)a,
                        *y = *(const struct exp_op *const *)b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->id ? x->id : "", y->id ? y->id : "");
}

int chk_expect_save(const chk_expect *ce, const char *path)
{
    chk_expect *e = (chk_expect *)ce; /* sorting sections is not a visible change */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return chk__fail(SBT_EIO, "%s: %s", tmp, strerror(errno));
    if (e->n) /* (an empty set has no array: qsort must not see NULL) */
        qsort(e->dev, e->n, sizeof *e->dev, cmp_dev);
    fprintf(f,
            "reprise-expect 2\n"
            "# Expected output digests per device and op (reprise check --expect).\n"
            "# op IDENTITY DIGEST|- ok|flaky|skip SEQ|- [NAME]: ok = must match; flaky = varied\n"
            "# across repeated runs, not checked; skip = ignored (kept by --update-expect).\n"
            "# IDENTITY = s<stream>/<program:entry or kind>/<geometry or bytes>#<occurrence on\n"
            "# the stream>, or @<seq>; SEQ and NAME are informational. In device and op names,\n"
            "# %%XX is the byte XX (control characters, '%%', '#', blanks at either end).\n");
    for (uint32_t i = 0; i < e->n; i++) {
        struct exp_dev *d = &e->dev[i];
        struct exp_op **ord = chk__calloc(d->n + 1, sizeof *ord);
        if (!ord) {
            fclose(f);
            remove(tmp);
            return chk__fail(SBT_ENOMEM, "out of memory writing %s", path);
        }
        for (uint32_t k = 0; k < d->n; k++)
            ord[k] = &d->ops[k];
        qsort(ord, d->n, sizeof *ord, cmp_op_ptr);
        fputs("\ndevice ", f);
        put_text(f, d->device);
        fputc('\n', f);
        for (uint32_t k = 0; k < d->n; k++) {
            char hex[33];
            const struct exp_op *o = ord[k];
            if (o->id)
                fprintf(f, "op %s", o->id);
            else
                fprintf(f, "op @%" PRIu64, o->seq);
            fprintf(f, " %s %s", o->label == CHK_LABEL_OK ? sbt_hash_hex(o->digest, hex) : "-",
                    label_names[o->label]);
            if (o->seq != UINT64_MAX)
                fprintf(f, " %" PRIu64, o->seq);
            else
                fputs(" -", f);
            if (o->name && *o->name) {
                fputc(' ', f);
                put_text(f, o->name);
            }
            fputc('\n', f);
        }
        free(ord);
    }
    int bad = ferror(f);
    if (fclose(f) || bad) {
        remove(tmp);
        return chk__fail(SBT_EIO, "%s: write error", tmp);
    }
    if (rename(tmp, path)) {
        int err = errno;
        remove(tmp);
        return chk__fail(SBT_EIO, "%s: %s", path, strerror(err));
    }
    return 0;
}

int chk_expect_replace(chk_expect *dst, chk_expect *src, const char *device)
{
    const char *dn = device && *device ? device : "*";
    struct exp_dev *s = dev_find(src, dn);
    if (!s)
        return 0;
    struct exp_dev *d;
    int st = dev_get(dst, dn, &d);
    if (st)
        return st;
    dev_clear(d);
    char *dname = d->device, *sname = s->device;
    *d = *s;
    d->device = dname;
    memset(s, 0, sizeof *s); /* src keeps an empty section */
    s->by_seq_sorted = 1;
    s->device = sname;
    return 0;
}

int chk_expect_merge(chk_expect *dst, chk_expect *src, const char *device)
{
    const char *dn = device && *device ? device : "*";
    struct exp_dev *d = dev_find(dst, dn), *s = dev_find(src, dn);
    int st;
    if (!s && (st = dev_get(src, dn, &s)))
        return st;
    /* dst's entries that no lookup found (ops outside what was checked) join src's section,
     * where src has no entry of their own key */
    for (uint32_t k = 0; d && k < d->n; k++) {
        const struct exp_op *o = &d->ops[k];
        if (o->used || (o->id ? id_find(s, o->id) : seq_find(s, o->seq)))
            continue;
        if ((st = chk_expect_set(src, dn, o->id, o->seq, o->label, &o->digest, o->name)))
            return st;
    }
    return chk_expect_replace(dst, src, dn);
}

int chk_expect_section(const chk_expect *e, const char *device, uint64_t *n, char *why, size_t cap)
{
    const struct exp_dev *d = dev_find(e, device && *device ? device : "*");
    if (!d)
        d = dev_find(e, "*");
    if (d) {
        if (n)
            *n = d->n;
        return 1;
    }
    if (n)
        *n = 0;
    size_t pos = 0;
    if (why && cap) {
        why[0] = 0;
        chk__putf(why, cap, &pos, "the expectations have no section for device '%s' (theirs: ",
                  device && *device ? device : "*");
        for (uint32_t i = 0; i < e->n; i++)
            chk__putf(why, cap, &pos, "%s'%s'", i ? ", " : "", e->dev[i].device);
        chk__putf(why, cap, &pos, "%s)", e->n ? "" : "none");
    }
    return 0;
}
