/*
 * replay/replay_verdict.c — what a replay proved, by the rule every verdict of reprise follows:
 * no positive evidence, no pass. A replay is "verified" only when outputs were compared (with
 * the capture's digests, or between runs) and all were equal, with no error; one that ran
 * without error but compared nothing is "not verified", never a pass. The CLI maps the
 * verdict to an exit code in one place (cli_verdict_exit); the checker builds its own verdicts
 * (check, diff) on the same rule.
 */
#include <inttypes.h>
#include <stdio.h>

#include "replay/replay_int.h"

const char *replay_verdict_name(enum replay_verdict v)
{
    static const char *const names[] = {"verified",      "not verified", "differs",
                                        "device failed", "environment",  "not replayable"};
    return (unsigned)v < sizeof names / sizeof names[0] ? names[v] : "?";
}

enum replay_verdict replay_verdict(const struct replay_result *r, uint32_t verify, char *why,
                                   size_t n)
{
    if (r->device_failed[0] || (r->n_errors && r->first_error_status == REPLAY_EDEVICE)) {
        snprintf(why, n, "the device or driver failed during the replay: %s",
                 r->device_failed[0] ? r->device_failed : r->first_error_msg);
        return REPLAY_VERDICT_DEVICE_FAILED;
    }
    if (r->n_errors) {
        snprintf(why, n, "%" PRIu64 " op(s) could not be replayed; first: %s", r->n_errors,
                 r->first_error_msg);
        return r->first_error_status == REPLAY_ENODEV ? REPLAY_VERDICT_ENVIRONMENT
                                                      : REPLAY_VERDICT_BAD_TRACE;
    }
    if (r->n_mismatch || r->n_run_mismatch) {
        if (r->n_mismatch)
            snprintf(why, n,
                     "%" PRIu64 " output(s) differ from the capture (first at op %" PRIu64 ")",
                     r->n_mismatch, r->first_mismatch);
        else
            snprintf(why, n, "%" PRIu64 " op(s) differ between runs (first at op %" PRIu64 ")",
                     r->n_run_mismatch, r->first_run_mismatch);
        return REPLAY_VERDICT_DIFFERS;
    }
    if (verify == REPLAY_VERIFY_NONE) {
        snprintf(why, n, "nothing compared: --verify none");
        return REPLAY_VERDICT_NOT_VERIFIED;
    }
    if (!r->n_compared && !r->n_run_compared) {
        snprintf(why, n,
                 "nothing compared: %" PRIu64 " output digest(s) computed, none with a captured "
                 "one to compare with%s (capture with --digests, or replay a range that holds "
                 "a read-back)",
                 r->n_digests, r->runs > 1 ? " and none between runs" : "");
        return REPLAY_VERDICT_NOT_VERIFIED;
    }
    snprintf(why, n,
             "%" PRIu64 " output(s) compared with the capture, %" PRIu64 " between runs: all equal",
             r->n_compared, r->n_run_compared);
    return REPLAY_VERDICT_VERIFIED;
}
