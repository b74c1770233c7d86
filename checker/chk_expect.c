/*
 * checker/chk_expect.c — expectation files: per device, the expected output digest of each op
 * with a label (ok, flaky, skip). The format is in chk.h; it is line-based so that a diff of two
 * versions in review shows which ops changed.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

struct exp_op {
    uint64_t seq;
    uint32_t label;
    sbt_hash digest;
    char *name;
};

struct exp_dev {
    char *device;
    struct exp_op *ops;
    uint32_t n, cap;
    int sorted;
};

struct chk_expect {
    struct exp_dev *dev;
    uint32_t n, cap;
};

static const char *const label_names[] = {"ok", "flaky", "skip"};

int chk_expect_create(chk_expect **out)
{
    *out = chk__calloc(1, sizeof **out);
    return *out ? 0 : chk__fail(SBT_ENOMEM, "out of memory for expectations");
}

void chk_expect_free(chk_expect *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < e->n; i++) {
        for (uint32_t k = 0; k < e->dev[i].n; k++)
            free(e->dev[i].ops[k].name);
        free(e->dev[i].ops);
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
    int st = chk__grow((void **)&e->dev, &e->cap, e->n + 1, sizeof *e->dev);
    if (st)
        return st;
    struct exp_dev *d = &e->dev[e->n];
    memset(d, 0, sizeof *d);
    d->sorted = 1;
    if (!(d->device = chk__strdup(device)))
        return chk__fail(SBT_ENOMEM, "out of memory for expectations");
    e->n++;
    *out = d;
    return 0;
}

static int cmp_op(const void *a, const void *b)
{
    const struct exp_op *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static struct exp_op *op_find(struct exp_dev *d, uint64_t seq)
{
    if (!d->sorted) {
        qsort(d->ops, d->n, sizeof *d->ops, cmp_op);
        d->sorted = 1;
    }
    uint32_t a = 0, b = d->n;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (d->ops[m].seq < seq)
            a = m + 1;
        else
            b = m;
    }
    return a < d->n && d->ops[a].seq == seq ? &d->ops[a] : NULL;
}

int chk_expect_set(chk_expect *e, const char *device, uint64_t seq, uint32_t label,
                   const sbt_hash *digest, const char *name)
{
    if (label > CHK_LABEL_SKIP)
        return chk__fail(SBT_EINVAL, "expectation label %u unknown", label);
    struct exp_dev *d;
    int st = dev_get(e, device && *device ? device : "*", &d);
    if (st)
        return st;
    /* appending in seq order (as check does) keeps the section sorted without searching */
    struct exp_op *o = d->n && d->ops[d->n - 1].seq < seq ? NULL : op_find(d, seq);
    if (!o) {
        if ((st = chk__grow((void **)&d->ops, &d->cap, d->n + 1, sizeof *d->ops)))
            return st;
        o = &d->ops[d->n++];
        memset(o, 0, sizeof *o);
        if (d->n > 1 && d->ops[d->n - 2].seq > seq)
            d->sorted = 0;
        o->seq = seq;
    }
    o->label = label;
    o->digest = digest ? *digest : (sbt_hash){0, 0};
    if (name) {
        char *n = chk__strdup(name);
        if (!n)
            return chk__fail(SBT_ENOMEM, "out of memory for expectations");
        /* names are one word-free field at the end of the line: no newlines */
        for (char *p = n; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
        free(o->name);
        o->name = n;
    }
    return 0;
}

int chk_expect_get(const chk_expect *e, const char *device, uint64_t seq, uint32_t *label,
                   sbt_hash *digest)
{
    struct exp_dev *d = dev_find(e, device && *device ? device : "*");
    if (!d)
        d = dev_find(e, "*");
    struct exp_op *o = d ? op_find(d, seq) : NULL;
    if (!o)
        return 0;
    *label = o->label;
    *digest = o->digest;
    return 1;
}

uint64_t chk_expect_count(const chk_expect *e, const char *device)
{
    struct exp_dev *d = dev_find(e, device && *device ? device : "*");
    return d ? d->n : 0;
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
    char device[1024] = "*";
    uint64_t ln = 0;
    int seen_header = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (!strchr(line, '\n') && !feof(f)) {
            st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": line longer than %zu bytes", path, ln,
                           sizeof line - 1);
            goto fail;
        }
        char *hash = strchr(line, '#');
        if (hash && (hash == line || hash[-1] == ' ' || hash[-1] == '\t'))
            *hash = 0;
        char *s = trim(line);
        if (!*s)
            continue;
        if (!seen_header) {
            if (strcmp(s, "reprise-expect 1")) {
                st =
                    chk__fail(SBT_ECORRUPT,
                              "%s:%" PRIu64 ": expected the header 'reprise-expect 1', got '%.40s'",
                              path, ln, s);
                goto fail;
            }
            seen_header = 1;
            continue;
        }
        if (!strncmp(s, "device ", 7)) {
            snprintf(device, sizeof device, "%s", trim(s + 7));
            struct exp_dev *d;
            if ((st = dev_get(e, device, &d)))
                goto fail;
            continue;
        }
        if (strncmp(s, "op ", 3)) {
            st = chk__fail(SBT_ECORRUPT,
                           "%s:%" PRIu64 ": expected 'device NAME' or 'op SEQ "
                           "DIGEST|- ok|flaky|skip [NAME]', got '%.40s'",
                           path, ln, s);
            goto fail;
        }
        char dig[64], lab[16];
        unsigned long long seq;
        int used = 0;
        if (sscanf(s + 3, "%llu %63s %15s %n", &seq, dig, lab, &used) < 3) {
            st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": expected 'op SEQ DIGEST|- LABEL [NAME]'",
                           path, ln);
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
            st = chk__fail(SBT_ECORRUPT, "%s:%" PRIu64 ": op %llu: label ok needs a digest", path,
                           ln, seq);
            goto fail;
        }
        const char *name = used ? trim(s + 3 + used) : "";
        if ((st = chk_expect_set(e, device, seq, label, &h, *name ? name : NULL)))
            goto fail;
    }
    if (ferror(f)) {
        st = chk__fail(SBT_EIO, "%s: read error", path);
        goto fail;
    }
    if (!seen_header) {
        st = chk__fail(SBT_ECORRUPT, "%s: empty; expected the header 'reprise-expect 1'", path);
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

int chk_expect_save(const chk_expect *ce, const char *path)
{
    chk_expect *e = (chk_expect *)ce; /* sorting sections is not a visible change */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return chk__fail(SBT_EIO, "%s: %s", tmp, strerror(errno));
    qsort(e->dev, e->n, sizeof *e->dev, cmp_dev);
    fprintf(f, "reprise-expect 1\n"
               "# Expected output digests per device and op (reprise check --expect).\n"
               "# op SEQ DIGEST|- ok|flaky|skip [NAME]: ok = must match; flaky = varied across\n"
               "# repeated runs, not checked; skip = ignored (kept by --update-expect).\n");
    for (uint32_t i = 0; i < e->n; i++) {
        struct exp_dev *d = &e->dev[i];
        if (!d->sorted) {
            qsort(d->ops, d->n, sizeof *d->ops, cmp_op);
            d->sorted = 1;
        }
        fprintf(f, "\ndevice %s\n", d->device);
        for (uint32_t k = 0; k < d->n; k++) {
            char hex[33];
            const struct exp_op *o = &d->ops[k];
            fprintf(f, "op %" PRIu64 " %s %s%s%s\n", o->seq,
                    o->label == CHK_LABEL_OK ? sbt_hash_hex(o->digest, hex) : "-",
                    label_names[o->label], o->name ? " " : "", o->name ? o->name : "");
        }
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
    for (uint32_t k = 0; k < d->n; k++)
        free(d->ops[k].name);
    free(d->ops);
    d->ops = s->ops, d->n = s->n, d->cap = s->cap, d->sorted = s->sorted;
    s->ops = NULL, s->n = s->cap = 0;
    return 0;
}
