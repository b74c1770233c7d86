/*
 * cli/cli_races.c — the static race findings (scheduler sched_races_run) as `replay --mode
 * dry-run` and `analyze` show them: a count line, the first findings, and a JSON object.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

static void keep(void *ctx, const struct sched_race *f)
{
    struct cli_races *c = ctx;
    if (c->n >= CLI_RACES_KEEP || c->oom)
        return;
    char *m = strdup(f->msg);
    if (!m) {
        c->oom = 1;
        return;
    }
    c->v[c->n] = *f;
    c->v[c->n].msg = m;
    c->n++;
}

int cli_races_collect(sbt_reader *r, struct cli_races *out)
{
    memset(out, 0, sizeof *out);
    int st = sched_races_run(r, &SCHED_RACE_OPTS(), keep, out, &out->st);
    if (st >= 0 && out->oom)
        return SBT_ENOMEM;
    return st;
}

void cli_races_free(struct cli_races *c)
{
    for (uint32_t i = 0; i < c->n; i++)
        free((char *)c->v[i].msg);
    c->n = 0;
}

void cli_races_print(FILE *tx, const struct cli_races *c, uint32_t max)
{
    const struct sched_race_stats *s = &c->st;
    if (!s->declared) {
        fprintf(tx, "races       not analysed: no declared order recorded (%s)\n",
                s->why_not ? s->why_not : "?");
        return;
    }
    fprintf(tx,
            "races       %" PRIu64 " possible (%" PRIu64
            " missing an execution dependency, %" PRIu64
            " only a memory dependency) from the program's own synchronisation (%" PRIu64
            " barriers)\n",
            s->n_findings, s->n_exec, s->n_memory, s->n_barriers);
    if (s->n_maywaw || s->n_address || s->n_hostpage)
        fprintf(tx,
                "            not findings: %" PRIu64 " unordered pairs of two kernels' may-writes, "
                "%" PRIu64 " with an access through device addresses (whole buffers), %" PRIu64
                " with a host write recorded as whole pages\n",
                s->n_maywaw, s->n_address, s->n_hostpage);
    if (s->n_blind_submits || s->n_blind_ops)
        fprintf(tx,
                "            %" PRIu64 " submissions and %" PRIu64 " ops whose barriers the trace "
                "lacks (secondary command buffers, recordings not stored) taken as ordered\n",
                s->n_blind_submits, s->n_blind_ops);
    for (uint32_t i = 0; i < c->n && (!max || i < max); i++)
        fprintf(tx, "  %-7s race: %s\n", "warning", c->v[i].msg);
    if (s->n_findings > c->n || (max && c->n > max))
        fprintf(tx, "  ... %" PRIu64 " possible races in all\n", s->n_findings);
}

static const char *mode_name(uint32_t m)
{
    return m == SBT_ACCESS_READ ? "read" : m == SBT_ACCESS_WRITE ? "write" : "read-write";
}

void cli_races_json(FILE *f, const struct cli_races *c)
{
    const struct sched_race_stats *s = &c->st;
    fprintf(f, "{\"declared\":%s", s->declared ? "true" : "false");
    if (!s->declared) {
        fprintf(f, ",\"why_not\":");
        cli_json_str(f, s->why_not ? s->why_not : "?");
        fprintf(f, "}");
        return;
    }
    fprintf(f,
            ",\"count\":%" PRIu64 ",\"execution\":%" PRIu64 ",\"memory\":%" PRIu64
            ",\"barriers\":%" PRIu64 ",\"blind_submits\":%" PRIu64 ",\"blind_ops\":%" PRIu64
            ",\"kernel_may_write_pairs\":%" PRIu64 ",\"device_address_pairs\":%" PRIu64
            ",\"host_page_pairs\":%" PRIu64 ",\"listed\":[",
            s->n_findings, s->n_exec, s->n_memory, s->n_barriers, s->n_blind_submits,
            s->n_blind_ops, s->n_maywaw, s->n_address, s->n_hostpage);
    for (uint32_t i = 0; i < c->n; i++) {
        const struct sched_race *x = &c->v[i];
        fprintf(f,
                "%s{\"first\":%" PRIu64 ",\"second\":%" PRIu64 ",\"first_stream\":%u,"
                "\"second_stream\":%u,\"first_access\":\"%s\",\"second_access\":\"%s\","
                "\"resource\":%" PRIu64 ",\"lo\":%" PRIu64 ",\"hi\":%" PRIu64 ",\"missing\":\"%s\","
                "\"message\":",
                i ? "," : "", x->first, x->second, x->first_stream, x->second_stream,
                mode_name(x->first_mode), mode_name(x->second_mode), x->resource, x->lo, x->hi,
                x->missing == SCHED_RACE_MEMORY ? "memory" : "execution");
        cli_json_str(f, x->msg);
        fprintf(f, "}");
    }
    fprintf(f, "]}");
}
