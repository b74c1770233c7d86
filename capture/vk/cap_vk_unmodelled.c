/*
 * capture/vk/cap_vk_unmodelled.c — the calls the layer passes through without recording them,
 * counted by name, and what makes a trace that has them say so.
 *
 * Which Vulkan commands are unmodelled, and which of those can change what the device
 * computes or what a replay needs ("affecting"), is decided at build time from the registry
 * and capture/vk/cap_vk_classes.txt (capture/vk/cap_vk_gen.py); their generated wrappers count into
 * cap_unmod_calls[command id] with one relaxed atomic add. The ids after the commands are made
 * at run time for what the registry cannot name: cases that a recorded command could not
 * record, names it does not know, commands it cannot type (cap_vk_tramp.c).
 *
 * Position. The first time an affecting call happens, a MARKER op with the UNSUPPORTED mark
 * named after it goes where it happened (the calling thread's stream, or for a vkCmd* the
 * queue that runs it: cap_vk_submit.c); the writer tells us the seq it got (cap_unmod_seen),
 * and the END record names the call with its count and that seq. A trace cut short still
 * shows where it stopped being replayable.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/vk/cap_vk_int.h"

atomic_uint_fast64_t cap_unmod_calls[CAP_UNMOD_MAX];

/* The ids after the registry's commands. The last one is the catch-all of a full table. */
struct unmod_dyn {
    const char *what;
    uint32_t flags;
    int owned; /* what was copied here */
};
static struct unmod_dyn dyn[CAP_UNMOD_DYN];
static uint32_t n_dyn;
static pthread_mutex_t dyn_mu = PTHREAD_MUTEX_INITIALIZER;

static atomic_int marked[CAP_UNMOD_MAX];  /* the first marker of the id was made */
static uint64_t first_seq[CAP_UNMOD_MAX]; /* seq + 1 of that marker (writer thread), 0 = none */

static uint32_t id_flags(uint32_t id)
{
    if (id < CAP_VK_N_CMDS)
        return cap_vk_cmds[id].cls == CAP_VK_AFFECTING ? SBT_UNMODELLED_AFFECTS : 0;
    return dyn[id - CAP_VK_N_CMDS].flags;
}

const char *cap_unmod_name(uint32_t id)
{
    if (id < CAP_VK_N_CMDS)
        return cap_vk_cmds[id].name;
    return id < CAP_UNMOD_MAX ? dyn[id - CAP_VK_N_CMDS].what : "?";
}

uint32_t cap_unmod_id(const char *what, uint32_t flags, int copy)
{
    pthread_mutex_lock(&dyn_mu);
    uint32_t i = 0;
    while (i < n_dyn && dyn[i].what != what && strcmp(dyn[i].what, what))
        i++;
    if (i == n_dyn && n_dyn < CAP_UNMOD_DYN - 1) {
        char *c = copy ? strdup(what) : NULL;
        if (!copy || c) {
            dyn[i] = (struct unmod_dyn){copy ? c : what, flags, copy};
            n_dyn++;
        }
    }
    if (i == n_dyn) { /* full, or out of memory */
        i = CAP_UNMOD_DYN - 1;
        dyn[i] = (struct unmod_dyn){"other unmodelled calls (the capture's table of them is "
                                    "full)",
                                    SBT_UNMODELLED_AFFECTS, 0};
    }
    dyn[i].flags |= flags;
    pthread_mutex_unlock(&dyn_mu);
    return CAP_VK_N_CMDS + i;
}

struct cap_ev *cap_unmod_marker(struct cap_dev *d, uint32_t id, uint64_t t)
{
    const char *name = cap_unmod_name(id);
    struct sbt_payload_enc enc = {0};
    sbt_payload_put(&enc, SBT_VK_CMD_UNSUPPORTED, NULL, 0, name, strlen(name));
    struct cap_ev *e = sbt_payload_enc_status(&enc) ? NULL : cap_ev_new_op(0, enc.len);
    if (e) {
        memcpy(e->payload, enc.buf, enc.len);
        e->dev_id = d ? d->id : 0;
        e->name = name;
        e->op.kind = SBT_OP_MARKER;
        e->op.host_begin = e->op.host_end = t;
        e->op.flags = SBT_OPF_UNSUPPORTED;
        e->unmod = id + 1;
    }
    sbt_payload_enc_free(&enc);
    return e;
}

void cap_unmod_first(uint32_t id, struct cap_dev *d)
{
    if (!(id_flags(id) & SBT_UNMODELLED_AFFECTS) || atomic_exchange(&marked[id], 1))
        return;
    if (CAP_ON())
        cap_emit(cap_unmod_marker(d, id, cap_now()));
}

void cap_unmodelled(struct cap_dev *d, const char *what, uint32_t flags)
{
    cap_vk_count_affecting(cap_unmod_id(what, flags, 0), d);
}

void cap_chain_check(struct cap_dev *d, const char *call, const void *pnext, const uint32_t *known,
                     size_t n)
{
    for (const VkBaseInStructure *s = pnext; s; s = s->pNext) {
        size_t i = 0;
        while (i < n && known[i] != (uint32_t)s->sType)
            i++;
        if (i < n)
            continue;
        const char *name = cap_vk_stype_name((uint32_t)s->sType);
        char what[192];
        if (name)
            snprintf(what, sizeof what, "%s (%s)", call, name);
        else
            snprintf(what, sizeof what, "%s (pNext structure %u)", call, (unsigned)s->sType);
        cap_vk_count_affecting(cap_unmod_id(what, SBT_UNMODELLED_AFFECTS, 1), d);
    }
}

void cap_unmod_seen(uint32_t id, uint64_t seq)
{
    if (id < CAP_UNMOD_MAX && !first_seq[id])
        first_seq[id] = seq + 1;
}

static uint64_t calls_of(uint32_t id)
{
    return atomic_load_explicit(&cap_unmod_calls[id], memory_order_relaxed) + cap_tramp_calls(id);
}

uint64_t cap_unmod_total_calls(void)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < CAP_VK_N_CMDS; i++)
        n += calls_of(i);
    /* trampolines of names the registry does not know count calls too; the other ids after
     * the commands count cases inside calls already counted */
    for (uint32_t i = CAP_VK_N_CMDS; i < CAP_UNMOD_MAX; i++)
        n += cap_tramp_calls(i);
    return n;
}

uint64_t cap_unmod_write(sbt_writer *w, FILE *f)
{
    uint64_t total = 0;
    pthread_mutex_lock(&dyn_mu);
    for (uint32_t id = 0; id < CAP_UNMOD_MAX; id++) {
        if (id < CAP_VK_N_CMDS &&
            (cap_vk_cmds[id].cls == CAP_VK_RECORDED || cap_vk_cmds[id].cls == CAP_VK_QUERY))
            continue;
        if (id >= CAP_VK_N_CMDS && !dyn[id - CAP_VK_N_CMDS].what)
            continue;
        uint64_t n = calls_of(id);
        if (!n)
            continue;
        total += n;
        uint32_t flags = id_flags(id);
        if (w)
            sbt_writer_unsupported(w, cap_unmod_name(id), n,
                                   first_seq[id] ? first_seq[id] - 1 : SBT_SEQ_NONE, flags);
        if (f)
            fprintf(f, "unmodelled.%s=%" PRIu64 "%s\n", cap_unmod_name(id), n,
                    flags & SBT_UNMODELLED_AFFECTS ? " affects" : "");
    }
    pthread_mutex_unlock(&dyn_mu);
    return total;
}

void cap_unmod_free_all(void)
{
    pthread_mutex_lock(&dyn_mu);
    for (uint32_t i = 0; i < CAP_UNMOD_DYN; i++) {
        if (dyn[i].owned)
            free((char *)dyn[i].what);
        dyn[i].what = NULL;
        dyn[i].owned = 0;
    }
    n_dyn = 0;
    pthread_mutex_unlock(&dyn_mu);
}
