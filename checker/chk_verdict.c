/*
 * checker/chk_verdict.c — the one rule every gate's verdict follows, check and diff alike: a
 * pass needs positive evidence. A difference found fails. Without one, "nothing was compared",
 * "less was compared than asked" (a result none of whose outputs was compared) and "the
 * reference given does not apply" (expectations of another device) are NOT VERIFIED, never a
 * pass: the gate fails (exit 1) and every report form gives the reason. Only the rest passes.
 *
 * The commands count what they compared (struct chk_evidence, chk_int.h); the rule is here so
 * that no command can pass on less.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "checker/chk_int.h"

static uint64_t n_findings(const struct chk_report *rep)
{
    uint64_t n = 0;
    for (uint32_t c = 0; c < CHK__NCLASS; c++)
        n += rep->count[c];
    return n;
}

void chk__verdict(struct chk_report *rep, const struct chk_evidence *ev)
{
    char why[sizeof rep->fail_reason] = "";
    const char *scope = ev->is_range ? "range" : "trace";
    if (ev->device_failed) { /* the driver under test failing: a failure, said first */
        size_t n = strlen(rep->fail_reason);
        char tmp[sizeof rep->fail_reason + 400];
        snprintf(tmp, sizeof tmp, "the device or driver failed during a replay: %.300s%s%s",
                 ev->device_failed, n ? "; " : "", rep->fail_reason);
        snprintf(rep->fail_reason, sizeof rep->fail_reason, "%.*s",
                 (int)sizeof rep->fail_reason - 1, tmp);
    }
    if (!ev->n_device_ops)
        snprintf(why, sizeof why, "nothing was verified: the %s holds no device op", scope);
    else if (!ev->n_runs)
        snprintf(why, sizeof why,
                 "nothing was verified: no replay results to compare (%" PRIu64 " device ops)",
                 ev->n_device_ops);
    else if (!ev->n_compared)
        snprintf(why, sizeof why,
                 "nothing was verified: none of %" PRIu64
                 " device ops has digests to compare%s%s%s",
                 ev->n_device_ops, ev->how_to ? " (" : "", ev->how_to ? ev->how_to : "",
                 ev->how_to ? ")" : "");
    else if (ev->no_reference)
        snprintf(why, sizeof why, "not verified: %s", ev->no_reference);
    else if (ev->n_runs_used < ev->n_runs)
        snprintf(why, sizeof why,
                 "not verified: %u of %u results had no output compared (first: %s)",
                 ev->n_runs - ev->n_runs_used, ev->n_runs, ev->run_unused ? ev->run_unused : "?");
    rep->not_verified = why[0] != 0;
    if (rep->not_verified) { /* after a reason already given, if any */
        size_t n = strlen(rep->fail_reason);
        snprintf(rep->fail_reason + n, sizeof rep->fail_reason - n, "%s%s", n ? "; " : "", why);
    }
    rep->failed = rep->not_verified || rep->fail_reason[0] || n_findings(rep) != 0;
}

uint32_t chk_report_gate(const struct chk_report *rep)
{
    if (n_findings(rep))
        return CHK_GATE_FAIL;
    if (rep->not_verified)
        return CHK_GATE_NOT_VERIFIED;
    return rep->failed ? CHK_GATE_FAIL : CHK_GATE_PASS;
}

const char *chk_gate_name(uint32_t g)
{
    static const char *const n[] = {"pass", "fail", "not-verified"};
    return g < 3 ? n[g] : "?";
}
