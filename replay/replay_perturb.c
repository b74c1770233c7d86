/*
 * replay/replay_perturb.c — perturbed replays (replay.h, "Perturbed replays"): the kinds, their
 * names and seeds, the generator every seeded choice draws from, and the order perturbation's
 * window (the one kind the engine applies itself; poison and split are the backends', threads
 * the engine's at device open).
 *
 * Order. The scheduler delivers nodes in one topological order (seq order but for waits held
 * back). Any other topological order is one the program's synchronisation (as the graph
 * models it) allows, so a correct program computes the same outputs in it. The window holds up
 * to W delivered nodes and hands on, each time it is full, one drawn at random among those
 * whose predecessors were all handed on: the node delivered first always is (its predecessors
 * came before it and have left the window), so the window never stalls. Nodes whose edges the
 * graph leaves out as implied (hazards within a stream, which stream order implies) keep their
 * order through the stream edges. Memory: W copied nodes plus 8 bytes per op (token -> val).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay_int.h"

static const char *const kind_names[] = {"none", "poison", "split", "threads", "order", "declared"};
static const char *const kind_classes[] = {
    "", "uninitialised-read", "order-dependence", "order-dependence", "race", "race"};
#define N_KINDS (sizeof kind_names / sizeof kind_names[0])

const char *replay_perturb_name(uint32_t kind)
{
    return kind < N_KINDS ? kind_names[kind] : "?";
}

const char *replay_perturb_class(uint32_t kind)
{
    return kind < N_KINDS ? kind_classes[kind] : "";
}

int replay_perturb_parse(const char *s, struct replay_perturb *out)
{
    *out = (struct replay_perturb){0};
    if (!s)
        return replay__fail(SBT_EINVAL, "perturbation: none given");
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);
    for (uint32_t k = 1; k < N_KINDS; k++) {
        if (strlen(kind_names[k]) != n || strncmp(s, kind_names[k], n))
            continue;
        uint64_t seed = 1;
        if (colon) {
            char *end = NULL;
            const char *v = colon + 1;
            if (*v < '0' || *v > '9')
                return replay__fail(SBT_EINVAL, "perturbation '%s': the seed is no number", s);
            seed = strtoull(v, &end, 10);
            if (*end)
                return replay__fail(SBT_EINVAL, "perturbation '%s': the seed is no number", s);
        }
        out->kind = k;
        out->seed = seed;
        return 0;
    }
    return replay__fail(SBT_EINVAL,
                        "perturbation '%s': expected KIND[:SEED], KIND one of poison, split, "
                        "threads, order, declared",
                        s);
}

uint64_t replay__rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint32_t replay_perturb_poison_word(uint64_t seed)
{
    /* a signalling NaN as f32 (exponent all ones, quiet bit clear, payload from the seed, never
     * zero): arithmetic on it gives a quiet NaN, so a value computed from unwritten bytes shows;
     * as an integer it is above 2^31, far from the counts and indices programs store */
    uint64_t st = seed ^ 0x706f69736f6eull; /* "poison" */
    uint32_t payload = (uint32_t)replay__rand(&st) & 0x3fffffu;
    return 0x7f800000u | payload | 1u;
}

/* ========================================================================================== */
/* The order window                                                                           */
/* ========================================================================================== */

struct rnode {
    uint64_t token;
    struct sbt_op op;
    struct sbt_access *acc;
    void *payload;
    struct sched_edge *in;
    uint32_t n_in;
};

struct replay__reorder {
    uint64_t rng;
    uint32_t window;
    int (*emit)(void *ctx, struct sched_node *n);
    void *ctx;
    struct rnode *w; /* held, in delivery order */
    uint32_t n_w;
    uint64_t *val; /* token - 1 -> the val emit gave it; UINT64_MAX: not handed on yet */
    uint64_t n_tok, cap_tok;
    uint64_t next_out; /* lowest token not handed on (for moved) */
    uint64_t moved;
};

int replay__reorder_create(uint64_t seed, uint32_t window,
                           int (*emit)(void *ctx, struct sched_node *n), void *ctx,
                           struct replay__reorder **out)
{
    *out = NULL;
    struct replay__reorder *ro = calloc(1, sizeof *ro);
    if (!ro || !(ro->w = calloc(window ? window : 1, sizeof *ro->w))) {
        free(ro);
        return replay__fail(SBT_ENOMEM, "out of memory");
    }
    ro->rng = seed ^ 0x6f72646572ull; /* "order" */
    ro->window = window ? window : 1;
    ro->emit = emit;
    ro->ctx = ctx;
    *out = ro;
    return 0;
}

static void rnode_free(struct rnode *x)
{
    free(x->acc);
    free(x->payload);
    free(x->in);
    memset(x, 0, sizeof *x);
}

static int ready(const struct replay__reorder *ro, const struct rnode *x)
{
    for (uint32_t i = 0; i < x->n_in; i++) {
        uint64_t t = x->in[i].from_val;
        if (t && t <= ro->n_tok && ro->val[t - 1] == UINT64_MAX)
            return 0;
    }
    return 1;
}

/* Hands on held node i: its edges carry their predecessors' vals again. */
static int hand_on(struct replay__reorder *ro, uint32_t i)
{
    struct rnode x = ro->w[i];
    memmove(&ro->w[i], &ro->w[i + 1], (ro->n_w - i - 1) * sizeof *ro->w);
    ro->n_w--;
    for (uint32_t k = 0; k < x.n_in; k++) {
        uint64_t t = x.in[k].from_val;
        x.in[k].from_val = t && t <= ro->n_tok ? ro->val[t - 1] : 0;
    }
    if (x.token != ro->next_out + 1)
        ro->moved++;
    struct sched_node n = {.op = &x.op, .in = x.in, .n_in = x.n_in, .val = 0};
    int st = ro->emit(ro->ctx, &n);
    ro->val[x.token - 1] = n.val;
    while (ro->next_out < ro->n_tok && ro->val[ro->next_out] != UINT64_MAX)
        ro->next_out++;
    rnode_free(&x);
    return st;
}

/* One node drawn among the ready ones (the first held always is). */
static int hand_on_one(struct replay__reorder *ro)
{
    uint32_t cand[256], nc = 0;
    for (uint32_t i = 0; i < ro->n_w && nc < 256; i++)
        if (ready(ro, &ro->w[i]))
            cand[nc++] = i;
    if (!nc) /* cannot be: the first held node's predecessors have all left */
        return replay__fail(SBT_EINVAL, "order perturbation: no ready op among %u held", ro->n_w);
    return hand_on(ro, cand[replay__rand(&ro->rng) % nc]);
}

int replay__reorder_add(struct replay__reorder *ro, struct sched_node *n)
{
    if (ro->n_tok == ro->cap_tok) {
        uint64_t c = ro->cap_tok ? ro->cap_tok * 2 : 4096;
        uint64_t *v = realloc(ro->val, c * sizeof *v);
        if (!v)
            return replay__fail(SBT_ENOMEM, "out of memory");
        ro->val = v;
        ro->cap_tok = c;
    }
    const struct sbt_op *op = n->op;
    struct rnode *x = &ro->w[ro->n_w];
    memset(x, 0, sizeof *x);
    x->op = *op;
    x->acc = op->n_access ? malloc(op->n_access * sizeof *x->acc) : NULL;
    x->payload = op->payload.len ? malloc(op->payload.len) : NULL;
    x->in = n->n_in ? malloc(n->n_in * sizeof *x->in) : NULL;
    if ((op->n_access && !x->acc) || (op->payload.len && !x->payload) || (n->n_in && !x->in)) {
        rnode_free(x);
        return replay__fail(SBT_ENOMEM, "out of memory holding op %" PRIu64, op->seq);
    }
    if (op->n_access)
        memcpy(x->acc, op->access, op->n_access * sizeof *x->acc);
    if (op->payload.len)
        memcpy(x->payload, op->payload.data, op->payload.len);
    if (n->n_in)
        memcpy(x->in, n->in, n->n_in * sizeof *x->in);
    x->op.access = x->acc;
    x->op.payload.data = x->payload;
    x->n_in = n->n_in;
    x->token = ++ro->n_tok;
    ro->val[x->token - 1] = UINT64_MAX;
    n->val = x->token;
    ro->n_w++;
    return ro->n_w == ro->window ? hand_on_one(ro) : 0;
}

int replay__reorder_flush(struct replay__reorder *ro)
{
    int st = 0;
    while (ro->n_w && st == 0)
        st = hand_on_one(ro);
    return st;
}

uint64_t replay__reorder_moved(const struct replay__reorder *ro)
{
    return ro ? ro->moved : 0;
}

void replay__reorder_destroy(struct replay__reorder *ro)
{
    if (!ro)
        return;
    for (uint32_t i = 0; i < ro->n_w; i++)
        rnode_free(&ro->w[i]);
    free(ro->w);
    free(ro->val);
    free(ro);
}
