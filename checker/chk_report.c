/*
 * checker/chk_report.c — the report: its allocation (names, tolerance and gate settings from
 * the options) and release, and the three forms it is written in: a short text summary for a
 * CI log, one JSON object, and JUnit XML (a testcase per trace and per class of findings) for
 * CI systems. What the comparisons record in it is in chk_findings.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

int chk__report_alloc(struct chk_report **out, const struct chk_opts *o, uint32_t mode,
                      uint32_t n_runs)
{
    *out = NULL;
    struct chk_report *rep = chk__calloc(1, sizeof *rep);
    if (!rep)
        return chk__fail(SBT_ENOMEM, "out of memory for the report");
    rep->mode = mode;
    rep->n_runs = n_runs;
    rep->priv = chk__calloc(1, sizeof *rep->priv);
    rep->run_names = chk__calloc(n_runs + 1, sizeof *rep->run_names);
    const char *ref = CHK_OPT(o, ref_name, (const char *)NULL);
    rep->ref_name = chk__strdup(ref ? ref : "reference");
    if (!rep->priv || !rep->run_names || !rep->ref_name) {
        chk_report_free(rep);
        return chk__fail(SBT_ENOMEM, "out of memory for the report");
    }
    const char *const *names = CHK_OPT(o, run_names, (const char *const *)NULL);
    for (uint32_t i = 0; i < n_runs; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "run %u", i + 1);
        rep->run_names[i] = chk__strdup(names && names[i] ? names[i] : buf);
        if (!rep->run_names[i]) {
            chk_report_free(rep);
            return chk__fail(SBT_ENOMEM, "out of memory for the report");
        }
    }
    if (o && o->sz >= offsetof(struct chk_opts, tol) + sizeof o->tol)
        rep->tol = o->tol;
    rep->cpu_wait = rep->ref_cpu_wait = NAN;
    rep->timing_quantile = CHK_OPT(o, timing_quantile, 0.5);
    rep->threshold = CHK_OPT(o, timing_threshold, 0.10);
    rep->confidence = CHK_OPT(o, confidence, 0.95);
    rep->timing_required = CHK_OPT(o, require_timing, 0);
    rep->priv->max_ev = CHK_OPT(o, max_events, (uint64_t)2000000);
    *out = rep;
    return 0;
}

void chk_report_free(struct chk_report *rep)
{
    if (!rep)
        return;
    free(rep->ref_name);
    if (rep->run_names)
        for (uint32_t i = 0; i < rep->n_runs; i++)
            free(rep->run_names[i]);
    free(rep->run_names);
    for (uint32_t i = 0; rep->run_perturb && i < rep->n_runs; i++)
        free(rep->run_perturb[i]);
    for (uint32_t i = 0; rep->run_perturb_what && i < rep->n_runs; i++)
        free(rep->run_perturb_what[i]);
    free(rep->run_perturb);
    free(rep->run_perturb_what);
    free(rep->device);
    free(rep->findings);
    free(rep->races);
    free(rep->unverified);
    free(rep->kernels);
    if (rep->priv) {
        free(rep->priv->ev);
        for (uint32_t i = 0; i < rep->priv->n_names; i++)
            free(rep->priv->names[i]);
        free(rep->priv->names);
        free(rep->priv);
    }
    free(rep);
}

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
    if (x->perturb[0] && x->perturb_what[0])
        fprintf(f, "; that run %s", x->perturb_what);
    if (x->confirms[0])
        fprintf(f, "; confirms %s", x->confirms);
    fputc('\n', f);
}

/* The gate's verdict as the text and Perfetto forms name it */
static const char *gate_word(const struct chk_report *rep)
{
    static const char *const w[] = {"PASS", "FAIL", "NOT VERIFIED"};
    uint32_t g = chk_report_gate(rep);
    return g < 3 ? w[g] : "?";
}

static const char *tref_name(uint32_t t)
{
    return t == CHK_TREF_BASELINE ? "baseline" : t == CHK_TREF_CAPTURE ? "capture" : "none";
}

/* "+12.3%" or "-" */
static const char *fmt_pct(double v, char *b, size_t n)
{
    if (isnan(v))
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%+.1f%%", v * 100);
    return b;
}

static void timing_text(const struct chk_report *rep, FILE *f)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32], qname[32];
    if (rep->timing_quantile == 0.5)
        snprintf(qname, sizeof qname, "medians");
    else
        snprintf(qname, sizeof qname, "%g-quantiles", rep->timing_quantile);
    uint32_t n_reg = (uint32_t)rep->count[CHK_TIMING];
    if (rep->mode == CHK_MODE_DIFF) {
        if (rep->n_kernels)
            fprintf(f,
                    "  timing: %u groups, one run a side: effects shown, not tested (check "
                    "--baseline tests them over runs)\n",
                    rep->n_kernels);
    } else if (rep->timing_ref == CHK_TREF_NONE) {
        fprintf(f, "  timing: NOT GATED - %s%s\n", rep->timing_why,
                rep->n_kernels ? "; medians over the runs' per-run values:" : "");
    } else {
        if (rep->timing_gate == CHK_TGATE_NOT_GATED)
            fprintf(f, "  timing: NOT GATED - %s\n", rep->timing_why);
        else
            fprintf(f, "  timing: %s - %s\n",
                    rep->timing_gate == CHK_TGATE_FAILED ? "FAILED" : "passed", rep->timing_why);
        fprintf(f, "    reference = %s (%u run%s)",
                rep->timing_ref == CHK_TREF_CAPTURE ? "the capture's timings" : "baseline results",
                rep->n_ref_runs, rep->n_ref_runs == 1 ? "" : "s");
        if (rep->regime[0])
            fprintf(f, ", regime %s", rep->regime);
        fputc('\n', f);
        if (rep->regime_note[0])
            fprintf(f, "    regimes differ (compared anyway, --allow-regime-change): %s\n",
                    rep->regime_note);
        if (!isnan(rep->cpu_wait)) {
            if (isnan(rep->ref_cpu_wait))
                snprintf(b1, sizeof b1, "not recorded");
            else
                snprintf(b1, sizeof b1, "%.0f%%", rep->ref_cpu_wait * 100);
            fprintf(f,
                    "    machine load: the runs' threads waited for a CPU %.0f%% of their wall "
                    "time (median; the reference's: %s)\n",
                    rep->cpu_wait * 100, b1);
            if (!isnan(rep->ref_cpu_wait) && rep->cpu_wait > rep->ref_cpu_wait + 0.2)
                fprintf(f, "    WARNING: the machine was busier than for the reference: a "
                           "slowdown here may be the machine's, not the workload's\n");
        }
        if (rep->threshold >= 0 && rep->n_tests)
            fprintf(
                f,
                "    %u group%s tested: slower by more than %.1f%%? (one-sided Mann-Whitney U on "
                "per-run %s, Holm over the tests at %.2f): %u regression%s",
                rep->n_tests, rep->n_tests == 1 ? "" : "s", rep->threshold * 100, qname,
                1 - rep->confidence, n_reg, n_reg == 1 ? "" : "s");
        if (rep->threshold >= 0 && rep->n_tests && rep->n_downstream)
            fprintf(f, ", %u downstream of one (not counted)", rep->n_downstream);
        if (rep->threshold >= 0 && rep->n_tests)
            fputc('\n', f);
        if (rep->n_confirm_runs) {
            uint32_t n_conf = 0, n_not = 0;
            for (uint32_t i = 0; i < rep->n_kernels; i++)
                n_conf += rep->kernels[i].confirmed == 1, n_not += rep->kernels[i].confirmed == 0;
            fprintf(f,
                    "    confirmation: the regression%s tested again on %u runs (these and as "
                    "many fresh ones): %u confirmed, %u not (shown as slower: the slowdown did "
                    "not persist)\n",
                    n_conf + n_not == 1 ? "" : "s", rep->n_confirm_runs, n_conf, n_not);
        }
    }
    for (uint32_t i = 0, shown = 0; i < rep->n_kernels && shown < 6; i++) {
        const struct chk_timing_row *k = &rep->kernels[i];
        if (k->verdict == CHK_TIME_NO_DATA && rep->timing_ref != CHK_TREF_NONE)
            continue;
        shown++;
        if (rep->timing_ref == CHK_TREF_NONE && rep->mode == CHK_MODE_CHECK) {
            fprintf(f, "    %-44.44s %s (%u runs, CI %s..%s @%.0f%%)\n", k->name,
                    fmt_ns(k->run.median, b1, sizeof b1), k->n_runs,
                    fmt_ns(k->run.ci_lo, b2, sizeof b2), fmt_ns(k->run.ci_hi, b3, sizeof b3),
                    k->run.ci_level * 100);
            continue;
        }
        fprintf(f, "    %-11s %-44.44s %s -> %s (%s", chk_time_verdict_name(k->verdict), k->name,
                fmt_ns(k->ref_median, b1, sizeof b1), fmt_ns(k->run.median, b2, sizeof b2),
                fmt_pct(k->effect, b3, sizeof b3));
        if (rep->mode == CHK_MODE_CHECK && k->effect_level > 0)
            fprintf(f, ", CI %s..%s @%.0f%%", fmt_pct(k->effect_lo, b4, sizeof b4),
                    fmt_pct(k->effect_hi, b5, sizeof b5), k->effect_level * 100);
        if (rep->mode == CHK_MODE_CHECK && rep->n_tests)
            fprintf(f, ", p_adj=%.3g", k->p_adj);
        fputs(")\n", f);
        if (k->verdict == CHK_TIME_DOWNSTREAM)
            fprintf(f,
                    "                downstream of %s: its time after the op before it on the "
                    "queue ended changed %s\n",
                    k->downstream_of, fmt_pct(k->excl_effect, b4, sizeof b4));
    }
}

int chk_report_text(const struct chk_report *rep, FILE *f, uint32_t max_lines)
{
    char tb[32];
    if (rep->mode == CHK_MODE_DIFF)
        fprintf(f, "reprise diff: %s  %s vs %s (%" PRIu64 " ops)\n", gate_word(rep), rep->ref_name,
                rep->n_runs ? rep->run_names[0] : "?", rep->n_ref_ops);
    else
        fprintf(f, "reprise check: %s  %s vs %u run%s (%" PRIu64 " ops)\n", gate_word(rep),
                rep->ref_name, rep->n_runs, rep->n_runs == 1 ? "" : "s", rep->n_ref_ops);
    if (rep->incomplete)
        fprintf(f, "  INCOMPLETE TRACE, compared anyway: %s\n", rep->incomplete_why);
    if (rep->fail_reason[0])
        fprintf(f, "  FAIL: %s\n", rep->fail_reason);
    if (rep->mode == CHK_MODE_CHECK) {
        fprintf(f, "  runs:");
        for (uint32_t i = 0; i < rep->n_runs; i++)
            if (!rep->run_perturb || !rep->run_perturb[i][0])
                fprintf(f, " %s", rep->run_names[i]);
        fprintf(f, "%s\n", rep->n_runs ? "" : " none (capture digests only)");
        for (uint32_t i = 0; rep->n_perturbed && i < rep->n_runs; i++)
            if (rep->run_perturb[i][0])
                fprintf(f, "  perturbed run %s: %s: %s\n", rep->run_names[i], rep->run_perturb[i],
                        rep->run_perturb_what[i]);
    }
    if (rep->races_run && !rep->races_declared)
        fprintf(f, "  static races: not analysed: %s\n", rep->races_why_not);
    else if (rep->races_run)
        fprintf(f,
                "  static races: %" PRIu64 " possible (%" PRIu64
                " missing an execution dependency, "
                "%" PRIu64 " only a memory dependency) that nothing the program declared orders; "
                "%" PRIu64 " confirmed by a perturbed run (check --perturb); unconfirmed ones "
                "fail nothing\n",
                rep->n_races, rep->n_races_exec, rep->n_races_memory, rep->n_races_confirmed);
    for (uint32_t i = 0; rep->races_run && i < rep->n_races_listed && i < 5; i++)
        fprintf(f, "    %s%s\n", rep->races[i].confirmed ? "CONFIRMED " : "", rep->races[i].msg);
    fprintf(f, "  outputs (%s): %" PRIu64 " of %" PRIu64 " device ops compared, %" PRIu64 " agreed",
            tol_str(&rep->tol, tb, sizeof tb), rep->n_verified, rep->n_device_ops, rep->n_matched);
    if (rep->n_tolerated)
        fprintf(f, ", %" PRIu64 " within tolerance (largest difference %g)", rep->n_tolerated,
                rep->max_diff);
    fputc('\n', f);
    if (rep->n_unverified) {
        fprintf(f, "  unverified: %" PRIu64 " device op%s not compared (", rep->n_unverified,
                rep->n_unverified == 1 ? "" : "s");
        for (uint32_t w = 0, k = 0; w < 5; w++)
            if (rep->n_unverified_why[w])
                fprintf(f, "%s%s %" PRIu64, k++ ? ", " : "", chk_unverified_name(w),
                        rep->n_unverified_why[w]);
        fprintf(f, ")%s\n", rep->n_unverified > 3 ? "; --json lists them" : "");
        for (uint32_t i = 0; i < rep->n_unverified_listed && i < 3; i++)
            fprintf(f, "    op %" PRIu64 " %s \"%s\" (stream %u): %s\n", rep->unverified[i].seq,
                    sbt_op_kind_name(rep->unverified[i].op_kind), rep->unverified[i].name,
                    rep->unverified[i].stream, chk_unverified_name(rep->unverified[i].why));
    }
    if (rep->n_expect_unused)
        fprintf(f, "  expectations: %" PRIu64 " entries matched no op of this trace\n",
                rep->n_expect_unused);
    uint64_t n_out = 0; /* output findings: with any, "no difference" is not what happened */
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        n_out += c != CHK_TIMING ? rep->count[c] : 0;
    if (rep->n_verified && rep->mode == CHK_MODE_CHECK && !n_out && !rep->not_verified)
        fprintf(f,
                "  a pass means: no output differed in %u run%s; so at %.0f%% confidence an op "
                "differs in a given run with probability below %.3g (about 3/N)\n",
                rep->n_compared_runs, rep->n_compared_runs == 1 ? "" : "s", rep->confidence * 100,
                rep->pass_bound);
    fprintf(f, "  findings:");
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        fprintf(f, " %s %" PRIu64 "%s", chk_class_name(c), rep->count[c],
                c + 1 < CHK__NCLASS ? "," : "\n");
    if (rep->n_flaky || rep->n_skipped)
        fprintf(f, "  expectations: %" PRIu64 " known-flaky ops varied, %" PRIu64 " skipped\n",
                rep->n_flaky, rep->n_skipped);
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
        if (x->confirms[0])
            fprintf(f, "; confirms %s", x->confirms);
        if (rep->first_after != UINT64_MAX)
            fprintf(f,
                    "; NOT LOCATED: what it read came from ops whose outputs were not compared, "
                    "so the root lies between op %" PRIu64 " and op %" PRIu64
                    " (capture with --digests, or diff against a replay on the reference driver "
                    "made with --verify op) (%" PRIu64 " divergence%s with no divergent input)\n",
                    rep->first_after, x->seq, rep->n_roots, rep->n_roots == 1 ? "" : "s");
        else
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
    timing_text(rep, f);
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
    if (x->perturb[0]) { /* a perturbed finding: the run's kind:seed, what it changed */
        fputs(",\"perturb\":", f);
        jstr(f, x->perturb);
        fputs(",\"perturb_what\":", f);
        jstr(f, x->perturb_what);
        fputs(",\"confirms\":", f);
        if (x->confirms[0])
            jstr(f, x->confirms);
        else
            fputs("null", f);
    }
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
    fprintf(f, "{\"mode\":\"%s\",\"result\":\"%s\",\"verdict\":\"%s\",\"reference\":",
            rep->mode == CHK_MODE_DIFF ? "diff" : "check", rep->failed ? "fail" : "pass",
            chk_gate_name(chk_report_gate(rep)));
    jstr(f, rep->ref_name);
    fputs(",\"fail_reason\":", f);
    jstr(f, rep->fail_reason);
    fprintf(f, ",\"complete\":%s,\"incomplete_reason\":", rep->incomplete ? "false" : "true");
    jstr(f, rep->incomplete_why);
    fputs(",\"runs\":[", f);
    for (uint32_t i = 0; i < rep->n_runs; i++) {
        fputs(i ? "," : "", f);
        jstr(f, rep->run_names[i]);
    }
    fputs("],\"perturbed_runs\":[", f);
    for (uint32_t i = 0, k = 0; rep->n_perturbed && i < rep->n_runs; i++) {
        if (!rep->run_perturb[i][0])
            continue;
        fputs(k++ ? ",{\"run\":" : "{\"run\":", f);
        jstr(f, rep->run_names[i]);
        fputs(",\"perturb\":", f);
        jstr(f, rep->run_perturb[i]);
        fputs(",\"what\":", f);
        jstr(f, rep->run_perturb_what[i]);
        fputc('}', f);
    }
    fputs("],\"static_races\":", f);
    if (!rep->races_run) {
        fputs("null", f);
    } else {
        fprintf(f, "{\"declared\":%s,\"why_not\":", rep->races_declared ? "true" : "false");
        jstr(f, rep->races_why_not);
        fprintf(f,
                ",\"count\":%" PRIu64 ",\"execution\":%" PRIu64 ",\"memory\":%" PRIu64
                ",\"confirmed\":%" PRIu64 ",\"listed\":[",
                rep->n_races, rep->n_races_exec, rep->n_races_memory, rep->n_races_confirmed);
        /* the first 20 and every confirmed one (the rest are counted) */
        for (uint32_t i = 0, k = 0; i < rep->n_races_listed; i++) {
            const struct chk_race_note *r = &rep->races[i];
            if (i >= 20 && !r->confirmed)
                continue;
            fprintf(f,
                    "%s{\"first\":%" PRIu64 ",\"second\":%" PRIu64 ",\"resource\":%" PRIu64
                    ",\"lo\":%" PRIu64 ",\"hi\":%" PRIu64 ",\"missing\":\"%s\","
                    "\"confirmed\":%s,\"msg\":",
                    k++ ? "," : "", r->first, r->second, r->resource, r->lo, r->hi,
                    r->missing == 2 ? "memory" : "execution", r->confirmed ? "true" : "false");
            jstr(f, r->msg);
            fputc('}', f);
        }
        fputs("]}", f);
    }
    fputs(",\"device\":", f);
    jstr(f, rep->device ? rep->device : "");
    fprintf(f, ",\"tolerance\":\"%s\",\"timing_threshold\":", tol_str(&rep->tol, tb, sizeof tb));
    jnum(f, rep->threshold);
    fputs(",\"confidence\":", f);
    jnum(f, rep->confidence);
    fprintf(f,
            ",\"ops\":%" PRIu64 ",\"device_ops\":%" PRIu64 ",\"verified\":%" PRIu64
            ",\"matched\":%" PRIu64 ",\"unverified\":%" PRIu64 ",\"tolerated\":%" PRIu64
            ",\"bytes_unavailable\":%" PRIu64 ",\"flaky\":%" PRIu64 ",\"skipped\":%" PRIu64
            ",\"timed\":%" PRIu64 ",\"expectations_unused\":%" PRIu64 ",\"max_diff\":",
            rep->n_ref_ops, rep->n_device_ops, rep->n_verified, rep->n_matched, rep->n_unverified,
            rep->n_tolerated, rep->n_bytes_unavailable, rep->n_flaky, rep->n_skipped, rep->n_timed,
            rep->n_expect_unused);
    jnum(f, rep->max_diff);
    uint64_t n_out = 0;
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        n_out += c != CHK_TIMING ? rep->count[c] : 0;
    fprintf(f, ",\"pass_means\":{\"holds\":%s,\"runs_compared\":%u,\"bound\":",
            rep->n_verified && !n_out && !rep->not_verified ? "true" : "false",
            rep->n_compared_runs);
    jnum(f, rep->pass_bound);
    fputs(",\"confidence\":", f);
    jnum(f, rep->confidence);
    fputs(",\"statement\":\"when holds: with no difference in runs_compared runs, the probability "
          "that an op differs in a given run is below bound at this confidence\"}",
          f);
    fputs(",\"unverified_by_reason\":{", f);
    for (uint32_t w = 0; w < 5; w++)
        fprintf(f, "%s\"%s\":%" PRIu64, w ? "," : "", chk_unverified_name(w),
                rep->n_unverified_why[w]);
    fputs("},\"counts\":{", f);
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        fprintf(f, "%s\"%s\":%" PRIu64, c ? "," : "", chk_class_name(c), rep->count[c]);
    fprintf(f, "},\"roots\":%" PRIu64 ",\"first_divergence\":", rep->n_roots);
    if (rep->has_first)
        jfinding(f, &rep->first);
    else
        fputs("null", f);
    /* where the root lies when the first divergence is not located: [after, first] */
    if (rep->has_first && rep->first_after != UINT64_MAX)
        fprintf(f, ",\"first_divergence_located\":false,\"root_between\":[%" PRIu64 ",%" PRIu64 "]",
                rep->first_after, rep->first.seq);
    else if (rep->has_first)
        fputs(",\"first_divergence_located\":true", f);
    fputs(",\"findings\":[", f);
    for (uint32_t i = 0; i < rep->n_findings; i++) {
        fputs(i ? "," : "", f);
        jfinding(f, &rep->findings[i]);
    }
    fputs("],\"unverified_ops\":[", f);
    for (uint32_t i = 0; i < rep->n_unverified_listed; i++) {
        const struct chk_unverified *u = &rep->unverified[i];
        fprintf(f, "%s{\"seq\":%" PRIu64 ",\"kind\":\"%s\",\"stream\":%u,\"why\":\"%s\",\"name\":",
                i ? "," : "", u->seq, sbt_op_kind_name(u->op_kind), u->stream,
                chk_unverified_name(u->why));
        jstr(f, u->name);
        fputc('}', f);
    }
    fprintf(f, "],\"timing\":{\"reference\":\"%s\",\"reference_runs\":%u,\"regime\":",
            tref_name(rep->timing_ref), rep->n_ref_runs);
    jstr(f, rep->regime);
    fputs(",\"regime_differences\":", f);
    jstr(f, rep->regime_note);
    fprintf(f,
            ",\"unit\":\"run (per-run quantile of a group's launches)\",\"quantile\":%g,"
            "\"test\":\"%s\",\"correction\":\"holm\",\"tests\":%u,\"alpha\":",
            rep->timing_quantile,
            rep->mode == CHK_MODE_DIFF
                ? "none (one run a side)"
                : "mann-whitney-u one-sided of runs / (1 + min_effect) vs reference runs, exact "
                  "up to 60 runs",
            rep->n_tests);
    jnum(f, 1 - rep->confidence);
    fputs(",\"min_effect\":", f);
    jnum(f, rep->threshold);
    fputs(",\"min_attainable_p\":", f);
    jnum(f, rep->min_p);
    fputs(",\"cpu_wait_share\":", f);
    jnum(f, rep->cpu_wait);
    fputs(",\"reference_cpu_wait_share\":", f);
    jnum(f, rep->ref_cpu_wait);
    fprintf(f, ",\"confirmation_runs\":%u", rep->n_confirm_runs);
    fprintf(f, ",\"can_detect\":%s",
            rep->n_tests && rep->threshold >= 0 && rep->min_p < (1 - rep->confidence) / rep->n_tests
                ? "true"
                : "false");
    fprintf(f, ",\"gate\":\"%s\",\"gate_reason\":", chk_timing_gate_name(rep->timing_gate));
    jstr(f, rep->timing_why);
    fprintf(f, ",\"required\":%s,\"runs_needed\":%u,\"downstream\":%u}",
            rep->timing_required ? "true" : "false", rep->runs_needed, rep->n_downstream);
    fputs(",\"kernels\":[", f);
    for (uint32_t i = 0; i < rep->n_kernels; i++) {
        const struct chk_timing_row *k = &rep->kernels[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        jstr(f, k->name);
        fprintf(f,
                ",\"verdict\":\"%s\",\"ref_runs\":%u,\"runs\":%u,\"n_ref\":%" PRIu64
                ",\"n_run\":%" PRIu64 ",\"ref_median_ns\":",
                chk_time_verdict_name(k->verdict), k->n_ref_runs, k->n_runs, k->n_ref, k->n_run);
        jnum(f, k->ref_median);
        fputs(",\"run_ns\":", f);
        jsummary(f, &k->run);
        fputs(",\"effect\":", f);
        jnum(f, k->effect);
        fputs(",\"effect_ci\":[", f);
        jnum(f, k->effect_lo);
        fputc(',', f);
        jnum(f, k->effect_hi);
        fputs("],\"effect_ci_level\":", f);
        jnum(f, k->effect_level);
        fputs(",\"p_slower\":", f);
        jnum(f, k->p_value);
        fputs(",\"p_slower_adj\":", f);
        jnum(f, k->p_adj);
        fputs(",\"p_faster\":", f);
        jnum(f, k->p_faster);
        fputs(",\"p_faster_adj\":", f);
        jnum(f, k->p_faster_adj);
        fputs(",\"excl_effect\":", f);
        jnum(f, k->excl_effect);
        fputs(",\"p_excl\":", f);
        jnum(f, k->p_excl);
        fprintf(f, ",\"overlapped\":%" PRIu64 ",\"downstream_of\":", k->n_overlap);
        if (k->verdict == CHK_TIME_DOWNSTREAM)
            jstr(f, k->downstream_of);
        else
            fputs("null", f);
        fprintf(f, ",\"confirmed\":%s}",
                k->confirmed < 0 ? "null"
                : k->confirmed   ? "true"
                                 : "false");
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
    /* coverage fails where the gate has no evidence for a pass (chk_verdict.c) */
    int cov_fail = rep->n_verified == 0 || rep->not_verified,
        cov_skip = !cov_fail && rep->n_unverified;
    uint32_t n_cases = 1 + rep->n_runs + CHK__NCLASS + 1 + (rep->incomplete ? 1 : 0), n_fail = 0;
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        n_fail += rep->count[c] != 0;
    n_fail += (rep->failed ? 1 : 0) + cov_fail;
    uint32_t n_skip = (uint32_t)cov_skip + (rep->incomplete ? 1 : 0);
    /* the timing testcase: a verdict only when the gate could fail, else skipped (or failed,
     * when timing is required) with the reason */
    int time_ng = rep->timing_gate == CHK_TGATE_NOT_GATED && !rep->count[CHK_TIMING];
    n_fail += time_ng && rep->timing_required;
    n_skip += time_ng && !rep->timing_required;
    const char *suite = rep->mode == CHK_MODE_DIFF ? "reprise.diff" : "reprise.check";
    char line[700];
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    fprintf(f,
            "  <testsuite name=\"%s\" tests=\"%u\" failures=\"%u\" errors=\"0\" skipped=\"%u\">\n",
            suite, n_cases, n_fail, n_skip);
    /* what the verdict rests on, for whoever reads the XML */
    fputs("    <properties>\n", f);
    struct {
        const char *k;
        char v[640];
    } props[10];
    uint32_t np = 0;
    snprintf(props[np].v, sizeof props[np].v, "%s", rep->incomplete ? "no" : "yes");
    props[np++].k = "trace.complete";
    if (rep->incomplete) {
        snprintf(props[np].v, sizeof props[np].v, "%s", rep->incomplete_why);
        props[np++].k = "trace.incomplete_reason";
    }
    snprintf(props[np].v, sizeof props[np].v, "%" PRIu64 " of %" PRIu64, rep->n_verified,
             rep->n_device_ops);
    props[np++].k = "outputs.compared";
    snprintf(props[np].v, sizeof props[np].v, "%" PRIu64, rep->n_unverified);
    props[np++].k = "outputs.unverified";
    snprintf(props[np].v, sizeof props[np].v,
             "%u runs: per-run difference probability < %.3g at %.2f", rep->n_compared_runs,
             rep->pass_bound, rep->confidence);
    props[np++].k = "pass.means";
    snprintf(props[np].v, sizeof props[np].v, "%s (%u runs), %u tests, holm, min effect %g",
             tref_name(rep->timing_ref), rep->n_ref_runs, rep->n_tests, rep->threshold);
    props[np++].k = "timing.reference";
    snprintf(props[np].v, sizeof props[np].v, "%s: %s", chk_timing_gate_name(rep->timing_gate),
             rep->timing_why);
    props[np++].k = "timing.gate";
    for (uint32_t i = 0; i < np; i++) {
        fprintf(f, "      <property name=\"%s\" value=\"", props[i].k);
        xstr(f, props[i].v);
        fputs("\"/>\n", f);
    }
    fputs("    </properties>\n", f);
    /* the reference trace: fails when anything failed */
    fprintf(f, "    <testcase classname=\"%s\" name=\"", suite);
    xstr(f, rep->ref_name);
    fputs("\">", f);
    if (rep->failed) {
        fputs("\n      <failure message=\"", f);
        char msg[400];
        /* not verified: the reason says so; else what failed */
        int nv = chk_report_gate(rep) == CHK_GATE_NOT_VERIFIED;
        msg[0] = 0;
        int n = nv ? 0 : snprintf(msg, sizeof msg, "gate failed:");
        for (uint32_t c = 0; c < CHK__NCLASS && n < (int)sizeof msg; c++)
            if (rep->count[c])
                n += snprintf(msg + n, sizeof msg - (size_t)n, " %s %" PRIu64, chk_class_name(c),
                              rep->count[c]);
        if (rep->fail_reason[0] && n < (int)sizeof msg)
            snprintf(msg + n, sizeof msg - (size_t)n, "%s%s", n ? " " : "", rep->fail_reason);
        xstr(f, msg);
        fputs("\">", f);
        if (rep->has_first) {
            int n2 =
                snprintf(line, sizeof line, "first divergence: op %" PRIu64 " %s \"%s\": %s %s",
                         rep->first.seq, sbt_op_kind_name(rep->first.op_kind), rep->first.name,
                         chk_class_name(rep->first.cls), rep->first.note);
            if (rep->first_after != UINT64_MAX && n2 > 0 && n2 < (int)sizeof line)
                snprintf(line + n2, sizeof line - (size_t)n2,
                         "; not located: the root lies between op %" PRIu64 " and op %" PRIu64,
                         rep->first_after, rep->first.seq);
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
        if (c == CHK_TIMING && time_ng) {
            fputs(rep->timing_required
                      ? ">\n      <failure message=\"timing not gated (--require-timing): "
                      : ">\n      <skipped message=\"timing not gated: ",
                  f);
            xstr(f, rep->timing_why);
            fputs("\"/>\n    </testcase>\n", f);
            continue;
        }
        if (!rep->count[c]) {
            fputs("/>\n", f);
            continue;
        }
        fprintf(f, ">\n      <failure message=\"%" PRIu64 " %s: ", rep->count[c],
                c == CHK_TIMING ? "groups" : "ops");
        xstr(f, chk_class_desc(c));
        fputs("\">", f);
        uint32_t shown = 0;
        for (uint32_t k = 0; k < rep->n_findings && shown < 50; k++) {
            const struct chk_finding *x = &rep->findings[k];
            if (x->cls != c)
                continue;
            snprintf(line, sizeof line, "%sop %" PRIu64 " %s \"%s\" stream %u%s%s%s%.200s\n",
                     x->is_root ? "[root] " : "", x->seq, sbt_op_kind_name(x->op_kind), x->name,
                     x->stream, x->note[0] ? ": " : "", x->note,
                     x->confirms[0] ? "; confirms " : "", x->confirms);
            xstr(f, line);
            shown++;
        }
        if (c == CHK_TIMING)
            for (uint32_t k = 0; k < rep->n_kernels; k++) {
                const struct chk_timing_row *x = &rep->kernels[k];
                if (x->verdict != CHK_TIME_REGRESSION && x->verdict != CHK_TIME_DOWNSTREAM)
                    continue;
                int n = snprintf(line, sizeof line,
                                 "\"%s\": %+.1f%% (CI %+.1f%%..%+.1f%%), p_adj=%.3g over %u runs "
                                 "vs %u",
                                 x->name, x->effect * 100, x->effect_lo * 100, x->effect_hi * 100,
                                 x->p_adj, x->n_runs, x->n_ref_runs);
                if (x->verdict == CHK_TIME_DOWNSTREAM && n >= 0 && n < (int)sizeof line)
                    snprintf(line + n, sizeof line - (size_t)n,
                             "; downstream of \"%s\" (its time after that op ended: %+.1f%%): "
                             "not counted",
                             x->downstream_of, x->excl_effect * 100);
                xstr(f, line);
                fputc('\n', f);
            }
        fputs("</failure>\n    </testcase>\n", f);
    }
    /* coverage: failed when nothing was compared; skipped (listing them) when ops were left
     * unverified, which is not a pass for those ops */
    fprintf(f, "    <testcase classname=\"%s\" name=\"coverage\">", suite);
    snprintf(line, sizeof line,
             "%" PRIu64 " of %" PRIu64 " device ops compared, %" PRIu64 " unverified",
             rep->n_verified, rep->n_device_ops, rep->n_unverified);
    if (cov_fail) {
        fputs("\n      <failure message=\"", f);
        xstr(f, rep->fail_reason[0] ? rep->fail_reason : line);
        fputs("\"/>\n    ", f);
    } else if (cov_skip) {
        fputs("\n      <skipped message=\"", f);
        xstr(f, line);
        fputs("\"/>\n      <system-out>", f);
        for (uint32_t i = 0; i < rep->n_unverified_listed && i < 200; i++) {
            const struct chk_unverified *u = &rep->unverified[i];
            snprintf(line, sizeof line, "unverified: op %" PRIu64 " %s \"%s\" stream %u: %s\n",
                     u->seq, sbt_op_kind_name(u->op_kind), u->name, u->stream,
                     chk_unverified_name(u->why));
            xstr(f, line);
        }
        fputs("</system-out>\n    ", f);
    }
    fputs("</testcase>\n", f);
    if (rep->incomplete) {
        fprintf(f, "    <testcase classname=\"%s\" name=\"trace completeness\">\n", suite);
        fputs("      <skipped message=\"", f);
        snprintf(line, sizeof line, "trace incomplete, compared anyway: %s", rep->incomplete_why);
        xstr(f, line);
        fputs("\"/>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    return ferror(f) ? chk__fail(SBT_EIO, "write error") : 0;
}
