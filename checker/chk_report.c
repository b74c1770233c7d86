/*
 * checker/chk_report.c — the report in three forms: a short text summary for a CI log, one JSON
 * object, and JUnit XML (a testcase per trace and per class of findings) for CI systems.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

static const char *fmt_ns(double ns, char *b, size_t n)
{
    if (isnan(ns))
        snprintf(b, n, "-");
    else if (ns < 1e3)
        snprintf(b, n, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(b, n, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(b, n, "%.2f ms", ns / 1e6);
    else
        snprintf(b, n, "%.3f s", ns / 1e9);
    return b;
}

static const char *tol_str(const struct chk_tolerance *t, char *b, size_t n)
{
    static const char *const k[] = {"bitwise", "ulp", "abs", "rel"};
    if (t->kind == CHK_TOL_BITWISE)
        snprintf(b, n, "bitwise");
    else
        snprintf(b, n, "%s:%g", k[t->kind & 3], t->eps);
    return b;
}

static void finding_line(FILE *f, const struct chk_finding *x)
{
    char h1[33], h2[33];
    fprintf(f, "op %" PRIu64 " %s \"%s\" (stream %u): %s", x->seq, sbt_op_kind_name(x->op_kind),
            x->name, x->stream, chk_class_name(x->cls));
    if (x->has_ref)
        fprintf(f, " [%.8s vs %.8s]", sbt_hash_hex(x->ref_digest, h1),
                sbt_hash_hex(x->got_digest, h2));
    if (x->note[0])
        fprintf(f, " - %s", x->note);
    if (x->bytes_compared)
        fprintf(f, " (largest difference %g)", x->max_diff);
    fputc('\n', f);
}

int chk_report_text(const struct chk_report *rep, FILE *f, uint32_t max_lines)
{
    char tb[32], b1[32], b2[32];
    if (rep->mode == CHK_MODE_DIFF)
        fprintf(f, "reprise diff: %s  %s vs %s (%" PRIu64 " ops)\n", rep->failed ? "FAIL" : "PASS",
                rep->ref_name, rep->n_runs ? rep->run_names[0] : "?", rep->n_ref_ops);
    else
        fprintf(f, "reprise check: %s  %s vs %u run%s (%" PRIu64 " ops)\n",
                rep->failed ? "FAIL" : "PASS", rep->ref_name, rep->n_runs,
                rep->n_runs == 1 ? "" : "s", rep->n_ref_ops);
    if (rep->mode == CHK_MODE_CHECK) {
        fprintf(f, "  runs:");
        for (uint32_t i = 0; i < rep->n_runs; i++)
            fprintf(f, " %s", rep->run_names[i]);
        fprintf(f, "%s\n", rep->n_runs ? "" : " none (capture digests only)");
    }
    fprintf(f, "  outputs (%s): %" PRIu64 " verified, %" PRIu64 " matched, %" PRIu64 " unverified",
            tol_str(&rep->tol, tb, sizeof tb), rep->n_verified, rep->n_matched, rep->n_unverified);
    if (rep->n_tolerated)
        fprintf(f, ", %" PRIu64 " within tolerance (largest difference %g)", rep->n_tolerated,
                rep->max_diff);
    if (rep->n_flaky)
        fprintf(f, ", %" PRIu64 " known-flaky varied", rep->n_flaky);
    if (rep->n_skipped)
        fprintf(f, ", %" PRIu64 " skipped", rep->n_skipped);
    fputc('\n', f);
    fprintf(f, "  findings:");
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        fprintf(f, " %s %" PRIu64 "%s", chk_class_name(c), rep->count[c],
                c + 1 < CHK__NCLASS ? "," : "\n");
    if (rep->n_bytes_unavailable)
        fprintf(f,
                "  note: %" PRIu64 " mismatches could not be compared under the tolerance: "
                "their bytes were unavailable (replay --dump DIR, then --dump-dirs)\n",
                rep->n_bytes_unavailable);
    if (rep->has_first) {
        const struct chk_finding *x = &rep->first;
        char h1[33], h2[33];
        fprintf(f, "  first divergence: op %" PRIu64 " %s \"%s\" (stream %u): %s", x->seq,
                sbt_op_kind_name(x->op_kind), x->name, x->stream, chk_class_name(x->cls));
        if (x->has_ref)
            fprintf(f, " [%.8s vs %.8s]", sbt_hash_hex(x->ref_digest, h1),
                    sbt_hash_hex(x->got_digest, h2));
        if (x->note[0])
            fprintf(f, " - %s", x->note);
        fprintf(f, "; its inputs matched (%" PRIu64 " root cause%s in all)\n", rep->n_roots,
                rep->n_roots == 1 ? "" : "s");
    }
    uint32_t shown = 0;
    for (uint32_t i = 0; i < rep->n_findings && shown < max_lines; i++) {
        const struct chk_finding *x = &rep->findings[i];
        if (rep->has_first && x->seq == rep->first.seq && x->cls == rep->first.cls)
            continue;
        fprintf(f, "    %s", x->is_root ? "root " : "     ");
        finding_line(f, x);
        shown++;
    }
    uint64_t total = 0;
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        if (c != CHK_TIMING)
            total += rep->count[c];
    if (total > shown + (rep->has_first ? 1 : 0))
        fprintf(f, "    ... %" PRIu64 " more (--json lists up to max_findings)\n",
                total - shown - (rep->has_first ? 1 : 0));
    uint32_t n_reg = 0;
    for (uint32_t i = 0; i < rep->n_kernels; i++)
        n_reg += rep->kernels[i].verdict == CHK_TIME_REGRESSION;
    if (rep->threshold >= 0)
        fprintf(f,
                "  timing: %u kernels, %u regressions, %" PRIu64 " op regressions (threshold "
                "%.1f%%, confidence %.2f; kernels: Mann-Whitney U, ops: sign test)\n",
                rep->n_kernels, n_reg, rep->count[CHK_TIMING] - n_reg, rep->threshold * 100,
                rep->confidence);
    for (uint32_t i = 0; i < rep->n_kernels && i < 5; i++) {
        const struct chk_timing_row *k = &rep->kernels[i];
        if (k->verdict == CHK_TIME_NO_DATA)
            continue;
        fprintf(f, "    %-11s %-28.28s %s -> %s (%+.1f%%, CI %s..%s @%.0f%%, p=%.3g)\n",
                chk_time_verdict_name(k->verdict), k->name, fmt_ns(k->ref_median, b1, sizeof b1),
                fmt_ns(k->run.median, b2, sizeof b2), k->rel_diff * 100,
                fmt_ns(k->run.ci_lo, tb, sizeof tb), fmt_ns(k->run.ci_hi, tb + 16, 16),
                k->run.ci_level * 100, k->p_value);
    }
    for (uint32_t i = 0; i < rep->n_ops && i < 3; i++)
        fprintf(f, "    op %" PRIu64 " \"%s\": %s -> %s (%+.1f%%, sign test p=%.3g)\n",
                rep->ops[i].seq, rep->ops[i].name, fmt_ns(rep->ops[i].ref_ns, b1, sizeof b1),
                fmt_ns(rep->ops[i].run.median, b2, sizeof b2), rep->ops[i].rel_diff * 100,
                rep->ops[i].p_value);
    return ferror(f) ? chk__fail(SBT_EIO, "write error") : 0;
}

/* ========================================================================================== */
/* JSON                                                                                       */
/* ========================================================================================== */

static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\u%04x", *p); /* bytes as Latin-1 code points: always valid JSON */
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void jnum(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
}

static void jfinding(FILE *f, const struct chk_finding *x)
{
    char h[33];
    fprintf(f, "{\"class\":\"%s\",\"seq\":%" PRIu64, chk_class_name(x->cls), x->seq);
    if (x->seq_run != UINT64_MAX)
        fprintf(f, ",\"seq_run\":%" PRIu64, x->seq_run);
    fprintf(f, ",\"run\":%u,\"kind\":\"%s\",\"stream\":%u,\"name\":", x->run,
            sbt_op_kind_name(x->op_kind), x->stream);
    jstr(f, x->name);
    if (x->has_ref) {
        fprintf(f, ",\"ref_digest\":\"%s\"", sbt_hash_hex(x->ref_digest, h));
        fprintf(f, ",\"got_digest\":\"%s\"", sbt_hash_hex(x->got_digest, h));
    }
    fprintf(f, ",\"root\":%s", x->is_root ? "true" : "false");
    if (x->bytes_compared) {
        fputs(",\"max_diff\":", f);
        jnum(f, x->max_diff);
    }
    fputs(",\"note\":", f);
    jstr(f, x->note);
    fputc('}', f);
}

static void jsummary(FILE *f, const struct chk_summary *s)
{
    fprintf(f, "{\"n\":%zu,\"median\":", s->n);
    jnum(f, s->median);
    fputs(",\"iqr\":", f);
    jnum(f, s->iqr);
    fputs(",\"mad\":", f);
    jnum(f, s->mad);
    fputs(",\"ci\":[", f);
    jnum(f, s->ci_lo);
    fputc(',', f);
    jnum(f, s->ci_hi);
    fputs("],\"ci_level\":", f);
    jnum(f, s->ci_level);
    fputc('}', f);
}

int chk_report_json(const struct chk_report *rep, FILE *f)
{
    char tb[32];
    fprintf(f, "{\"mode\":\"%s\",\"result\":\"%s\",\"reference\":",
            rep->mode == CHK_MODE_DIFF ? "diff" : "check", rep->failed ? "fail" : "pass");
    jstr(f, rep->ref_name);
    fputs(",\"runs\":[", f);
    for (uint32_t i = 0; i < rep->n_runs; i++) {
        fputs(i ? "," : "", f);
        jstr(f, rep->run_names[i]);
    }
    fputs("],\"device\":", f);
    jstr(f, rep->device ? rep->device : "");
    fprintf(f, ",\"tolerance\":\"%s\",\"timing_threshold\":", tol_str(&rep->tol, tb, sizeof tb));
    jnum(f, rep->threshold);
    fputs(",\"confidence\":", f);
    jnum(f, rep->confidence);
    fprintf(f,
            ",\"ops\":%" PRIu64 ",\"verified\":%" PRIu64 ",\"matched\":%" PRIu64
            ",\"unverified\":%" PRIu64 ",\"tolerated\":%" PRIu64 ",\"bytes_unavailable\":%" PRIu64
            ",\"flaky\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"timed\":%" PRIu64 ",\"max_diff\":",
            rep->n_ref_ops, rep->n_verified, rep->n_matched, rep->n_unverified, rep->n_tolerated,
            rep->n_bytes_unavailable, rep->n_flaky, rep->n_skipped, rep->n_timed);
    jnum(f, rep->max_diff);
    fputs(",\"counts\":{", f);
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        fprintf(f, "%s\"%s\":%" PRIu64, c ? "," : "", chk_class_name(c), rep->count[c]);
    fprintf(f, "},\"roots\":%" PRIu64 ",\"first_divergence\":", rep->n_roots);
    if (rep->has_first)
        jfinding(f, &rep->first);
    else
        fputs("null", f);
    fputs(",\"findings\":[", f);
    for (uint32_t i = 0; i < rep->n_findings; i++) {
        fputs(i ? "," : "", f);
        jfinding(f, &rep->findings[i]);
    }
    fputs("],\"kernels\":[", f);
    for (uint32_t i = 0; i < rep->n_kernels; i++) {
        const struct chk_timing_row *k = &rep->kernels[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        jstr(f, k->name);
        fprintf(
            f, ",\"verdict\":\"%s\",\"n_ref\":%" PRIu64 ",\"n_run\":%" PRIu64 ",\"ref_median_ns\":",
            chk_time_verdict_name(k->verdict), k->n_ref, k->n_run);
        jnum(f, k->ref_median);
        fputs(",\"run_ns\":", f);
        jsummary(f, &k->run);
        fputs(",\"rel_diff\":", f);
        jnum(f, k->rel_diff);
        fputs(",\"p_slower\":", f);
        jnum(f, k->p_value);
        fputs(",\"p_faster\":", f);
        jnum(f, k->p_faster);
        fputs(",\"test\":\"mann-whitney-u one-sided\"}", f);
    }
    fputs("],\"op_regressions\":[", f);
    for (uint32_t i = 0; i < rep->n_ops; i++) {
        const struct chk_op_timing *o = &rep->ops[i];
        fprintf(f, "%s{\"seq\":%" PRIu64 ",\"name\":", i ? "," : "", o->seq);
        jstr(f, o->name);
        fputs(",\"ref_ns\":", f);
        jnum(f, o->ref_ns);
        fputs(",\"run_ns\":", f);
        jsummary(f, &o->run);
        fputs(",\"rel_diff\":", f);
        jnum(f, o->rel_diff);
        fputs(",\"p_value\":", f);
        jnum(f, o->p_value);
        fputs(",\"test\":\"sign test one-sided\"}", f);
    }
    fputs("]}\n", f);
    return ferror(f) ? chk__fail(SBT_EIO, "write error") : 0;
}

/* ========================================================================================== */
/* JUnit XML                                                                                  */
/* ========================================================================================== */

/* XML 1.0 text: escapes markup, drops control characters XML cannot carry. */
static void xstr(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&apos;", f);
            break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t')
                fputc('?', f);
            else if (*p >= 0x80)
                fputc('?', f); /* may not be UTF-8: keep the file well-formed */
            else
                fputc(*p, f);
        }
    }
}

int chk_report_junit(const struct chk_report *rep, FILE *f)
{
    uint32_t n_cases = 1 + rep->n_runs + CHK__NCLASS, n_fail = 0;
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        n_fail += rep->count[c] != 0;
    const char *suite = rep->mode == CHK_MODE_DIFF ? "reprise.diff" : "reprise.check";
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    fprintf(f, "  <testsuite name=\"%s\" tests=\"%u\" failures=\"%u\" errors=\"0\">\n", suite,
            n_cases, n_fail + (rep->failed ? 1 : 0));
    /* the reference trace: fails when anything failed */
    fprintf(f, "    <testcase classname=\"%s\" name=\"", suite);
    xstr(f, rep->ref_name);
    fputs("\">", f);
    if (rep->failed) {
        fputs("\n      <failure message=\"", f);
        char msg[256];
        int n = snprintf(msg, sizeof msg, "gate failed:");
        for (uint32_t c = 0; c < CHK__NCLASS && n < (int)sizeof msg; c++)
            if (rep->count[c])
                n += snprintf(msg + n, sizeof msg - (size_t)n, " %s %" PRIu64, chk_class_name(c),
                              rep->count[c]);
        xstr(f, msg);
        fputs("\">", f);
        if (rep->has_first) {
            char line[512];
            snprintf(line, sizeof line, "first divergence: op %" PRIu64 " %s \"%s\": %s %s",
                     rep->first.seq, sbt_op_kind_name(rep->first.op_kind), rep->first.name,
                     chk_class_name(rep->first.cls), rep->first.note);
            xstr(f, line);
        }
        fputs("</failure>\n    ", f);
    }
    fputs("</testcase>\n", f);
    for (uint32_t i = 0; i < rep->n_runs; i++) {
        fprintf(f, "    <testcase classname=\"%s.runs\" name=\"", suite);
        xstr(f, rep->run_names[i]);
        uint64_t bad = 0;
        for (uint32_t k = 0; k < rep->n_findings; k++)
            bad += rep->findings[k].run == i + 1 && rep->findings[k].cls != CHK_NONDETERMINISTIC;
        if (bad) {
            fprintf(f,
                    "\">\n      <failure message=\"%" PRIu64 " listed findings in this run\"/>\n"
                    "    </testcase>\n",
                    bad);
        } else {
            fputs("\"/>\n", f);
        }
    }
    for (uint32_t c = 0; c < CHK__NCLASS; c++) {
        fprintf(f, "    <testcase classname=\"%s.ops\" name=\"%s\"", suite, chk_class_name(c));
        if (!rep->count[c]) {
            fputs("/>\n", f);
            continue;
        }
        fprintf(f, ">\n      <failure message=\"%" PRIu64 " ops: ", rep->count[c]);
        xstr(f, chk_class_desc(c));
        fputs("\">", f);
        uint32_t shown = 0;
        for (uint32_t k = 0; k < rep->n_findings && shown < 50; k++) {
            const struct chk_finding *x = &rep->findings[k];
            if (x->cls != c)
                continue;
            char line[400];
            snprintf(line, sizeof line, "%sop %" PRIu64 " %s \"%s\" stream %u%s%s\n",
                     x->is_root ? "[root] " : "", x->seq, sbt_op_kind_name(x->op_kind), x->name,
                     x->stream, x->note[0] ? ": " : "", x->note);
            xstr(f, line);
            shown++;
        }
        if (c == CHK_TIMING)
            for (uint32_t k = 0; k < rep->n_kernels; k++)
                if (rep->kernels[k].verdict == CHK_TIME_REGRESSION) {
                    char line[300];
                    snprintf(line, sizeof line, "kernel \"%s\": %+.1f%% (p=%.3g)\n",
                             rep->kernels[k].name, rep->kernels[k].rel_diff * 100,
                             rep->kernels[k].p_value);
                    xstr(f, line);
                }
        fputs("</failure>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    return ferror(f) ? chk__fail(SBT_EIO, "write error") : 0;
}
