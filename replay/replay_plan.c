/*
 * replay/replay_plan.c — what a range replay runs before its range, decided without a device:
 * the state ops every range replay runs whatever the slice says (replay_op_is_state, and of
 * those the ones the backend needs: replay__is_state), and the plan (replay_plan, and
 * replay__plan for the engine and trim): the latest snapshot of the sidecar at or before the
 * range's first op, the scheduler's slice with that snapshot as its floor, the bytes restoring
 * it writes (replay_snap_restore.c checks the sidecar holds them), and, for comparison, the
 * slice from the trace start.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "replay/replay_int.h"

int replay_op_is_state(const struct sbt_op *op)
{
    switch (op->kind) {
    case SBT_OP_ALLOC:
    case SBT_OP_FREE:
    case SBT_OP_STREAM_CREATE:
    case SBT_OP_STREAM_DESTROY:
        return 1;
    case SBT_OP_MARKER:
        return !(op->flags & SBT_OPF_UNSUPPORTED);
    default:
        return 0;
    }
}

int replay__is_state(const struct replay_backend *bk, const struct sbt_op *op)
{
    return replay_op_is_state(op) && (!bk || !bk->state_op || bk->state_op(op));
}

int replay__plan(sbt_reader *r, const struct sbt_range *range, sbt_reader *snaps, int full,
                 struct replay_plan *plan, struct sched_slice *slice, int64_t *snap_i)
{
    memset(plan, 0, sizeof *plan);
    memset(slice, 0, sizeof *slice);
    plan->range_first = plan->range_last = plan->snapshot_seq = UINT64_MAX;
    *snap_i = -1;
    sbt_cursor *c;
    const struct sbt_op *op;
    int st = sbt_cursor_open(r, range, &c);
    if (st < 0)
        return replay__fail(st, "%s", sbt_errmsg());
    st = sbt_cursor_next(c, &op);
    uint64_t first = st == 1 ? op->seq : UINT64_MAX;
    sbt_cursor_close(c);
    if (st < 0)
        return replay__fail(st, "%s", sbt_errmsg());
    uint64_t floor = 0;
    if (!snaps) {
        snprintf(plan->why, sizeof plan->why, "no sidecar of snapshots");
    } else {
        plan->n_snapshots = sbt_reader_info(snaps)->n_states;
        int64_t i = first == UINT64_MAX ? -1 : sbt_reader_state_find(snaps, first);
        if (i < 0) {
            uint64_t s0 = 0;
            if (plan->n_snapshots)
                sbt_reader_state_at(snaps, 0, &s0, NULL);
            if (plan->n_snapshots)
                snprintf(plan->why, sizeof plan->why,
                         "no snapshot at or before op %" PRIu64 " (the first is at op %" PRIu64 ")",
                         first, s0);
            else
                snprintf(plan->why, sizeof plan->why, "%s holds no snapshot",
                         replay__path_of(snaps));
        } else {
            *snap_i = i;
            sbt_reader_state_at(snaps, (uint64_t)i, &plan->snapshot_seq, &plan->snapshot_time);
            floor = plan->snapshot_seq;
            plan->use_snapshot = 1;
        }
    }
    st = sched_slice_compute(
        r, range, &SCHED_SLICE_OPTS(.collect = 1, .floor = floor, .range_outputs = 1), slice);
    if (st < 0)
        return replay__fail(st, "%s", sched_errmsg());
    plan->range_first = slice->range_first;
    plan->range_last = slice->range_last;
    plan->range_ops = slice->range_ops;
    plan->slice_ops = slice->slice_ops;
    plan->slice_upload_bytes = slice->slice_upload_bytes;
    plan->before_ops = slice->before_ops;
    plan->full_slice_ops = slice->slice_ops;
    plan->full_slice_upload_bytes = slice->slice_upload_bytes;
    if (plan->use_snapshot && (st = replay__snap_cover(snaps, *snap_i, slice, plan)) < 0) {
        sched_slice_free(slice);
        return st;
    }
    if (plan->use_snapshot && full) {
        struct sched_slice all;
        st = sched_slice_compute(r, range, &SCHED_SLICE_OPTS(.range_outputs = 1), &all);
        if (st < 0) {
            sched_slice_free(slice);
            return replay__fail(st, "%s", sched_errmsg());
        }
        plan->full_slice_ops = all.slice_ops;
        plan->full_slice_upload_bytes = all.slice_upload_bytes;
        sched_slice_free(&all);
    }
    return 0;
}

int replay_plan(sbt_reader *r, const struct sbt_range *range, sbt_reader *snapshots,
                struct replay_plan *out)
{
    struct sched_slice sl;
    int64_t i;
    if (!r || !range || !out)
        return replay__fail(SBT_EINVAL, "replay_plan: missing trace, range or result");
    int st = replay__plan(r, range, snapshots, 1, out, &sl, &i);
    if (st == 0)
        sched_slice_free(&sl);
    return st;
}
