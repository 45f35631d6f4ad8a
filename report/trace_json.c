/* trace_json.c - a plan as Chrome trace-event JSON (opens in Perfetto and
 * chrome://tracing): one complete ("X") slice per schedule step and a
 * counter ("C") of the live arena bytes. */
#include "sched.h"
#include "viz.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static double step_seconds(const mp_plan *p, uint32_t s, const double *given)
{
    if (given)
        return given[s] > 0 ? given[s] : 0.0;
    const mp_step *st = &p->steps[s];
    if (st->kind != MP_STEP_COMPUTE && st->kind != MP_STEP_RECOMPUTE)
        return 0.0;
    const mp__node *n = &p->graph->nodes[st->index];
    return n->seconds >= 0 ? n->seconds : 1e-6;
}

static void counter(FILE *f, double ts, uint64_t live)
{
    fprintf(f, ",\n{\"name\":\"arena live bytes\",\"ph\":\"C\",\"ts\":%.3f,"
               "\"pid\":1,\"args\":{\"live\":%llu}}",
            ts, (unsigned long long)live);
}

mp_status mp_plan_write_trace(const mp_plan *p, const char *path,
                              const double *given)
{
    if (!p || !path)
        return p ? mp__err(p->ctx, MP_ERR_INVALID_ARG,
                          "mp_plan_write_trace: NULL argument")
                 : MP_ERR_INVALID_ARG;
    const mp_graph *g = p->graph;
    FILE *f = fopen(path, "w");
    if (!f)
        return mp__err(p->ctx, MP_ERR_IO, "%s: cannot write: %s", path,
                      strerror(errno));
    fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"graph\":\"", f);
    mp__viz_json_str(f, g->name);
    fprintf(f, "\",\"arena_bytes\":%llu,\"lower_bound_bytes\":%llu,"
               "\"persistent_bytes\":%llu,\"peak_step\":%u},\n"
               "\"traceEvents\":[\n",
            (unsigned long long)p->fig.arena_bytes,
            (unsigned long long)p->fig.lower_bound_bytes,
            (unsigned long long)p->fig.persistent_bytes, p->fig.peak_step);
    fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,"
          "\"args\":{\"name\":\"memplan: ",
          f);
    mp__viz_json_str(f, g->name && *g->name ? g->name : "graph");
    fputs("\"}},\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,"
          "\"args\":{\"name\":\"compute\"}},\n"
          "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":2,"
          "\"args\":{\"name\":\"memory (free, offload, prefetch)\"}}",
          f);
    double ts = 0.0;   /* microseconds */
    uint64_t prev = UINT64_MAX;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mp_step *st = &p->steps[s];
        double dur = step_seconds(p, s, given) * 1e6;
        int comp = st->kind == MP_STEP_COMPUTE ||
                   st->kind == MP_STEP_RECOMPUTE;
        if (p->live[s] != prev) {
            counter(f, ts, p->live[s]);
            prev = p->live[s];
        }
        fputs(",\n{\"name\":\"", f);
        if (comp)
            mp__viz_json_str(f, g->nodes[st->index].name);
        else {
            fputs(mp_step_kind_name(st->kind), f);
            fputc(' ', f);
            mp__viz_json_str(f, st->index < g->n_tensors
                                   ? g->tensors[st->index].name : "?");
        }
        fprintf(f, "\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,"
                   "\"dur\":%.3f,\"pid\":1,\"tid\":%d,\"args\":{\"step\":%u,"
                   "\"kind\":\"%s\",\"live_bytes\":%llu",
                comp ? mp_phase_name((mp_phase)g->nodes[st->index].phase)
                     : "memory",
                ts, dur, comp ? 1 : 2, s, mp_step_kind_name(st->kind),
                (unsigned long long)p->live[s]);
        if (comp) {
            fputs(",\"op\":\"", f);
            mp__viz_json_str(f, g->nodes[st->index].op);
            fputc('"', f);
        }
        fputs("}}", f);
        ts += dur;
    }
    counter(f, ts, 0);
    fputs("\n]}\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return mp__err(p->ctx, MP_ERR_IO, "%s: write failed", path);
    return MP_OK;
}
