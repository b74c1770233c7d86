/*
 * replay/replay_trim.c — `reprise trim`: a self-contained trace of a range, for a bug report.
 *
 * What it keeps, in seq order with the source's seq numbers (the writer leaves gaps):
 *   - the tables (devices, streams, programs, kernels, metadata); program images only of the
 *     kernels that kept ops launch (every image for CUDA, whose globals live in modules);
 *   - the ops that create and destroy what later ops name, those the trace's backend needs
 *     (replay__is_state), up to the range's end, as every range replay runs them;
 *   - the ops of the slice that must stay ops: the EVENT_RECORD / SIGNAL the range waits for,
 *     and ops between the range's first and last that the range needs (a time range or a
 *     stream filter leaves some out);
 *   - an initial STATE at the range's first op: exactly the chunks holding bytes the range
 *     reads (the scheduler's slice with the range start as floor, kernel outputs included),
 *     read on a device after the engine replayed what comes before (restoring the latest
 *     snapshot and running the slice after it, or running the whole slice);
 *   - the range's ops.
 * Without a device: with a snapshot at or before the range, the snapshot's chunks the rest
 * reads become the initial STATE at the snapshot's op and the slice after it stays as ops;
 * without one, the whole slice stays as ops and there is no STATE. The result says which.
 *
 * A trace with a STATE carries SBT_FEATURE_INITIAL_STATE, so a reader that does not know
 * initial states refuses it instead of replaying from zeroed memory.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replay/replay_int.h"

#define DEFAULT_CHUNK 4096u

enum { K_NONE, K_RANGE, K_STATE, K_SLICE };

struct trim {
    sbt_reader *r;
    const struct replay_backend *bk; /* whose state ops are kept (NULL: all) */
    sbt_writer *w;
    const struct sbt_range *range;
    const uint64_t *seqs; /* slice ops kept, increasing */
    uint64_t n_seqs, i_seq;
    uint64_t hi; /* range_last + 1 */
    struct replay__strmap sm;
    uint8_t *kused; /* by kernel id: launched by a kept op */
    uint32_t n_kernels;
    struct replay_trim_result *res;
};

static int keep(struct trim *t, const struct sbt_op *op)
{
    while (t->i_seq < t->n_seqs && t->seqs[t->i_seq] < op->seq)
        t->i_seq++;
    if (sched_range_contains(t->range, op))
        return K_RANGE;
    if (t->i_seq < t->n_seqs && t->seqs[t->i_seq] == op->seq)
        return K_SLICE;
    return replay__is_state(t->bk, op) ? K_STATE : K_NONE;
}

/* Walks the ops in [lo, hi); with w NULL only notes the kernels kept ops launch. */
static int pass(struct trim *t, uint64_t lo, uint64_t hi, int write)
{
    if (lo >= hi)
        return 0;
    struct sbt_range rg = {.has_seq = 1, .seq_begin = lo, .seq_end = hi};
    sbt_cursor *c;
    const struct sbt_op *sop;
    int st = sbt_cursor_open(t->r, &rg, &c);
    if (st < 0)
        return replay__fail(st, "%s", sbt_errmsg());
    t->i_seq = 0;
    while ((st = sbt_cursor_next(c, &sop)) == 1) {
        int k = keep(t, sop);
        if (k == K_NONE)
            continue;
        if (!write) {
            if ((sop->flags & SBT_OPF_KERNEL) && sop->kernel && sop->kernel <= t->n_kernels)
                t->kused[sop->kernel] = 1;
            continue;
        }
        struct sbt_op op = *sop;
        if ((st = replay__str_of(t->w, t->r, &t->sm, sop->name, &op.name)) < 0)
            break;
        if ((op.flags & SBT_OPF_ERROR) &&
            (st = replay__str_of(t->w, t->r, &t->sm, sop->error, &op.error)) < 0)
            break;
        if (op.flags & SBT_OPF_BLOB) {
            void *data;
            size_t len;
            if ((st = sbt_reader_blob(t->r, &sop->blob, &data, &len)) < 0)
                break;
            st = sbt_writer_blob(t->w, data, len, &op.blob);
            free(data);
            if (st < 0)
                break;
        }
        if ((st = sbt_writer_set_next_seq(t->w, sop->seq)) < 0 ||
            (st = sbt_writer_add_op(t->w, &op, NULL)) < 0)
            break;
        t->res->ops++;
        t->res->range_ops += k == K_RANGE;
        t->res->state_ops += k == K_STATE;
        t->res->slice_ops += k == K_SLICE;
    }
    sbt_cursor_close(c);
    return st < 0 ? replay__fail(st, "%s", sbt_errmsg()) : 0;
}

/* Tables and metadata of the source; images only where needed. */
static int tables(struct trim *t, const char *source, const char *mode)
{
    sbt_reader *r = t->r;
    sbt_writer *w = t->w;
    uint32_t n, id;
    int st = 0;
#define TRY(x)                                           \
    do {                                                 \
        if ((st = (x)) < 0)                              \
            return replay__fail(st, "%s", sbt_errmsg()); \
    } while (0)
    const struct sbt_device *dv = sbt_reader_devices(r, &n);
    int cuda = n && dv[0].api == SBT_API_CUDA;
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_device d = dv[i];
        TRY(replay__str_of(w, r, &t->sm, dv[i].name, &d.name));
        TRY(replay__str_of(w, r, &t->sm, dv[i].host, &d.host));
        TRY(sbt_writer_add_device(w, &d, &id));
    }
    const struct sbt_stream *sv = sbt_reader_streams(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_stream s = sv[i];
        TRY(replay__str_of(w, r, &t->sm, sv[i].name, &s.name));
        TRY(sbt_writer_add_stream(w, &s, &id));
    }
    uint32_t nk;
    const struct sbt_kernel *kv = sbt_reader_kernels(r, &nk);
    const struct sbt_program *pv = sbt_reader_programs(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct sbt_program p = pv[i];
        TRY(replay__str_of(w, r, &t->sm, pv[i].name, &p.name));
        int used = cuda;
        for (uint32_t k = 0; k < nk && !used; k++)
            used = kv[k].program == i + 1 && t->kused[k + 1];
        if (used && !sbt_hash_is_zero(p.blob)) {
            void *data;
            size_t len;
            TRY(sbt_reader_blob(r, &p.blob, &data, &len));
            st = sbt_writer_blob(w, data, len, &p.blob);
            free(data);
            TRY(st);
        } else {
            p.blob = (sbt_hash){0, 0}; /* not stored: no kept op launches its kernels */
        }
        TRY(sbt_writer_add_program(w, &p, &id));
    }
    for (uint32_t i = 0; i < nk; i++) {
        struct sbt_kernel k = kv[i];
        TRY(replay__str_of(w, r, &t->sm, kv[i].name, &k.name));
        TRY(sbt_writer_add_kernel(w, &k, &id));
    }
    const struct sbt_meta *mv = sbt_reader_meta(r, &n);
    for (uint32_t i = 0; i < n; i++) {
        const char *k = sbt_reader_string(r, mv[i].key), *v = sbt_reader_string(r, mv[i].value);
        if (k && strncmp(k, "trim.", 5))
            TRY(sbt_writer_meta(w, k, v ? v : ""));
    }
    char buf[64], hex[33];
    TRY(sbt_writer_meta(w, "trim.of", source ? source : ""));
    TRY(sbt_writer_meta(w, "trim.of_fingerprint", sbt_hash_hex(sbt_reader_fingerprint(r), hex)));
    snprintf(buf, sizeof buf, "%" PRIu64 ":%" PRIu64, t->res->range_first, t->res->range_last + 1);
    TRY(sbt_writer_meta(w, "trim.range_seq", buf));
    TRY(sbt_writer_meta(w, "trim.mode", mode));
    /* completeness: what the source lacked, this lacks too */
    const struct sbt_info *in = sbt_reader_info(r);
    const struct sbt_unsupported *uv = sbt_reader_unsupported(r, &n);
    for (uint32_t i = 0; i < n; i++)
        TRY(sbt_writer_unsupported(w, sbt_reader_string(r, uv[i].what), uv[i].count,
                                   uv[i].first_seq, uv[i].flags));
    if (!in->writer_finished)
        TRY(sbt_writer_mark_incomplete(w, "the source trace was cut short"));
    else if (in->incomplete_reason)
        TRY(sbt_writer_mark_incomplete(w, sbt_reader_string(r, in->incomplete_reason)));
#undef TRY
    return 0;
}

/* The snapshot's chunks that hold the needed bytes, as a STATE at the snapshot's op. */
static int state_from_snapshot(struct trim *t, sbt_reader *snaps, int64_t snap_i,
                               const struct sched_slice *sl)
{
    struct sbt_state *st;
    int r = sbt_reader_state(snaps, (uint64_t)snap_i, &st);
    if (r < 0)
        return replay__fail(r, "%s: %s", sbt_reader_path(snaps), sbt_errmsg());
    uint64_t total = 0;
    for (uint32_t i = 0; i < st->n_alloc; i++)
        total += st->alloc[i].n_present;
    struct sbt_state_alloc *al = calloc(st->n_alloc ? st->n_alloc : 1, sizeof *al);
    uint64_t *idx = malloc((total ? total : 1) * sizeof *idx);
    sbt_hash *hs = malloc((total ? total : 1) * sizeof *hs);
    uint32_t na = 0;
    uint64_t ni = 0, k = 0;
    if (!al || !idx || !hs)
        r = replay__fail(SBT_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < st->n_alloc && r == 0; i++) {
        const struct sbt_state_alloc *a = &st->alloc[i];
        uint64_t first = ni;
        while (k < sl->n_needs && sl->needs[k].resource < a->resource)
            k++;
        for (uint64_t j = 0; j < a->n_present && r == 0; j++) {
            uint64_t b = a->index[j] * a->chunk_bytes, e = b + a->chunk_bytes;
            int hit = 0;
            for (uint64_t q = k; q < sl->n_needs && sl->needs[q].resource == a->resource && !hit;
                 q++)
                hit = sl->needs[q].offset < e && b < sl->needs[q].offset + sl->needs[q].len;
            if (!hit)
                continue;
            void *data;
            size_t len;
            if ((r = sbt_reader_blob(snaps, &a->hash[j], &data, &len)) < 0) {
                r = replay__fail(r, "%s: %s", sbt_reader_path(snaps), sbt_errmsg());
                break;
            }
            r = sbt_writer_blob(t->w, data, len, &hs[ni]);
            free(data);
            if (r < 0) {
                r = replay__fail(r, "%s", sbt_errmsg());
                break;
            }
            idx[ni++] = a->index[j];
            t->res->state_bytes += len;
            t->res->state_chunks++;
        }
        if (ni > first)
            al[na++] = (struct sbt_state_alloc){a->resource, a->size,     a->chunk_bytes,
                                                ni - first,  idx + first, hs + first};
    }
    if (r == 0) {
        struct sbt_state out = {.seq = st->seq, .time = st->time, .n_alloc = na, .alloc = al};
        if ((r = sbt_writer_add_state(t->w, &out)) < 0)
            r = replay__fail(r, "%s", sbt_errmsg());
        t->res->state_seq = st->seq;
    }
    free(al);
    free(idx);
    free(hs);
    sbt_state_free(st);
    return r;
}

/* One attempt: mode DEVICE, SNAPSHOT or SLICE. > 0: no device (fall back). */
static int attempt(sbt_reader *r, const struct sbt_range *range, sbt_reader *snaps,
                   const char *out_path, const struct replay_trim_opts *o, uint32_t mode,
                   struct replay_trim_result *res)
{
    struct replay_plan plan;
    struct sched_slice sl = {0}, tsl = {0};
    int64_t snap_i = -1;
    struct trim t = {.r = r, .range = range, .res = res};
    uint32_t nd;
    const struct sbt_device *dv = sbt_reader_devices(r, &nd);
    t.bk = o->backend_impl ? o->backend_impl
           : o->backend    ? replay__backend_by_name(o->backend)
           : nd            ? replay__backend_for_api(dv[0].api)
                           : NULL;
    int st =
        replay__plan(r, range, mode == REPLAY_TRIM_SLICE ? NULL : snaps, 0, &plan, &sl, &snap_i);
    if (st < 0)
        return st;
    if (sl.range_first == SCHED_NONE) {
        sched_slice_free(&sl);
        return replay__fail(SBT_EINVAL, "the range selects no op");
    }
    res->range_first = sl.range_first;
    res->range_last = sl.range_last;
    t.hi = sl.range_last + 1;
    uint64_t split = UINT64_MAX; /* where the STATE goes */
    if (mode == REPLAY_TRIM_DEVICE) {
        /* what stays an op: the slice with the range start as floor */
        st = sched_slice_compute(
            r, range, &SCHED_SLICE_OPTS(.collect = 1, .floor = sl.range_first, .range_outputs = 1),
            &tsl);
        if (st < 0) {
            st = replay__fail(st, "%s", sched_errmsg());
            goto out;
        }
        t.seqs = tsl.seqs, t.n_seqs = tsl.n_seqs;
        split = sl.range_first;
    } else {
        t.seqs = sl.seqs, t.n_seqs = sl.n_seqs;
        if (mode == REPLAY_TRIM_SNAPSHOT)
            split = plan.snapshot_seq;
    }
    sbt_reader_kernels(r, &t.n_kernels);
    t.kused = calloc(t.n_kernels + 1, 1);
    t.sm.n = sbt_reader_n_strings(r) + 1;
    t.sm.v = calloc(t.sm.n, sizeof *t.sm.v);
    if (!t.kused || !t.sm.v) {
        st = replay__fail(SBT_ENOMEM, "out of memory");
        goto out;
    }
    const struct sbt_info *in = sbt_reader_info(r);
    if ((st = pass(&t, in->seq_first, t.hi, 0)) < 0)
        goto out;
    uint32_t feat = split != UINT64_MAX ? SBT_FEATURE_INITIAL_STATE : 0;
    if ((st = sbt_writer_open(out_path, &SBT_WRITER_OPTS(.required_features = feat), &t.w)) < 0) {
        st = replay__fail(st, "%s", sbt_errmsg());
        goto out;
    }
    static const char *const names[] = {"", "device", "snapshot", "slice"};
    if ((st = tables(&t, o->source_path, names[mode])) < 0)
        goto out;
    res->state_seq = UINT64_MAX;
    if ((st = pass(&t, in->seq_first, split < t.hi ? split : t.hi, 1)) < 0)
        goto out;
    if (mode == REPLAY_TRIM_DEVICE) {
        struct replay_result rr;
        st = replay_run(
            r,
            &REPLAY_OPTS(.backend = o->backend, .device = o->device,
                         .backend_impl = o->backend_impl, .range = range,
                         .verify = REPLAY_VERIFY_END, .timing = REPLAY_TIMING_NONE,
                         .snapshots = snaps,
                         .snapshot_chunk = o->chunk_bytes ? o->chunk_bytes : DEFAULT_CHUNK,
                         .state_out = t.w),
            &rr);
        char why[1200];
        enum replay_verdict v = st == 0 ? replay_verdict(&rr, REPLAY_VERIFY_END, why, sizeof why)
                                        : REPLAY_VERDICT_VERIFIED;
        if (st == 0 && (v == REPLAY_VERDICT_DIFFERS || v == REPLAY_VERDICT_DEVICE_FAILED))
            st = replay__fail(REPLAY_EDIFFERS,
                              "the contents the range reads would come from a replay that went "
                              "wrong (%s on %s): nothing written",
                              why, rr.device);
        else if (st == 0 && rr.n_errors)
            st = replay__fail(rr.first_error_status ? rr.first_error_status : SBT_ECORRUPT,
                              "replaying what comes before the range failed: %s",
                              rr.first_error_msg);
        if (st == 0) { /* where the contents come from, for whoever replays the trimmed trace */
            snprintf(res->device, sizeof res->device, "%s", rr.device);
            snprintf(res->verified, sizeof res->verified, "%s: %.600s", replay_verdict_name(v),
                     why);
            res->state_seq = split;
            res->state_bytes = rr.state_bytes;
            res->state_chunks = rr.state_chunks;
            if (sbt_writer_meta(t.w, "trim.device", rr.device) < 0 ||
                sbt_writer_meta(t.w, "trim.driver", rr.driver) < 0 ||
                sbt_writer_meta(t.w, "trim.verified", res->verified) < 0 ||
                (rr.restore_seq != UINT64_MAX &&
                 sbt_writer_meta(t.w, "trim.restored_from", rr.restore_from) < 0))
                st = replay__fail(SBT_EIO, "%s: %s", out_path, sbt_errmsg());
        }
        replay_result_free(&rr);
        if (st == REPLAY_ENODEV) {
            snprintf(res->why, sizeof res->why, "%s", replay_errmsg());
            st = 1;
        }
        if (st)
            goto out;
    } else if (mode == REPLAY_TRIM_SNAPSHOT) {
        if ((st = state_from_snapshot(&t, snaps, snap_i, &sl)) < 0)
            goto out;
        static const char *const keys[][2] = {{"snapshot.device", "trim.device"},
                                              {"snapshot.driver", "trim.driver"},
                                              {"snapshot.verified", "trim.verified"}};
        for (int i = 0; i < 3; i++) {
            const char *val = sbt_reader_meta_get(snaps, keys[i][0]);
            if (sbt_writer_meta(t.w, keys[i][1], val ? val : "") < 0) {
                st = replay__fail(SBT_EIO, "%s: %s", out_path, sbt_errmsg());
                goto out;
            }
        }
        const char *val = sbt_reader_meta_get(snaps, "snapshot.verified");
        snprintf(res->verified, sizeof res->verified, "%s (the replay that took the snapshot)",
                 val ? val : "unknown");
    }
    if ((st = pass(&t, split < t.hi ? split : t.hi, t.hi, 1)) < 0)
        goto out;
    st = sbt_writer_close(t.w);
    t.w = NULL;
    if (st < 0) {
        st = replay__fail(st, "%s: %s", out_path, sbt_errmsg());
        goto out;
    }
    struct stat sb;
    if (stat(out_path, &sb) == 0)
        res->bytes = (uint64_t)sb.st_size;
    res->mode = mode;
out:
    if (t.w) {
        sbt_writer_abandon(t.w);
        unlink(out_path);
    }
    free(t.kused);
    free(t.sm.v);
    sched_slice_free(&sl);
    sched_slice_free(&tsl);
    return st;
}

int replay_trim(sbt_reader *r, const struct sbt_range *range, sbt_reader *snapshots,
                const char *out_path, const struct replay_trim_opts *opts,
                struct replay_trim_result *res)
{
    memset(res, 0, sizeof *res);
    res->state_seq = UINT64_MAX;
    if (!r || !range || !out_path || !opts)
        return replay__fail(SBT_EINVAL, "replay_trim: missing trace, range, output or options");
    struct replay_trim_opts o = {0};
    memcpy(&o, opts, opts->sz < sizeof o ? opts->sz : sizeof o);
    char why[512] = "";
    uint32_t nd;
    const struct sbt_device *dv = sbt_reader_devices(r, &nd);
    if (!o.no_device && !o.backend_impl && !o.backend &&
        (!nd || !replay__backend_for_api(dv[0].api))) {
        o.no_device = 1; /* a synthetic or imported trace: nothing to replay it on */
        snprintf(why, sizeof why, "a %s trace has no device to replay on",
                 sbt_api_name(nd ? dv[0].api : SBT_API_NONE));
    }
    if (!o.no_device) {
        int st = attempt(r, range, snapshots, out_path, &o, REPLAY_TRIM_DEVICE, res);
        if (st <= 0)
            return st;
        snprintf(why, sizeof why, "%s", res->why);
    } else if (!why[0]) {
        snprintf(why, sizeof why, "--no-device");
    }
    struct replay_plan plan;
    struct sched_slice sl;
    int64_t si;
    int st = replay__plan(r, range, snapshots, 0, &plan, &sl, &si);
    if (st < 0)
        return st;
    sched_slice_free(&sl);
    uint32_t mode = plan.use_snapshot ? REPLAY_TRIM_SNAPSHOT : REPLAY_TRIM_SLICE;
    memset(res, 0, sizeof *res);
    st = attempt(r, range, snapshots, out_path, &o, mode, res);
    snprintf(res->why, sizeof res->why, "%s", why);
    return st;
}
