/* trace_json.c - a plan as Chrome trace-event JSON (opens in Perfetto and
 * chrome://tracing): one complete ("X") slice per schedule step and a
 * counter ("C") of the live arena bytes, through the library's JSON
 * writer (frontends/json/json.h). */
#include "sched.h"
#include "json.h"

#include <stdint.h>
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

/* A counter event `name` at time ts, open at its "args" object (the
 * caller writes the series and closes both objects). */
static void counter_begin(mp__jw *w, const char *name, double ts)
{
    mp__jw_object(w, false);
    mp__jw_key(w, "name");
    mp__jw_string(w, name);
    mp__jw_key(w, "ph");
    mp__jw_string(w, "C");
    mp__jw_key(w, "ts");
    mp__jw_fixed(w, ts, 3);
    mp__jw_key(w, "pid");
    mp__jw_u64(w, 1);
    mp__jw_key(w, "args");
    mp__jw_object(w, false);
}

/* The live-bytes counter at time ts. */
static void counter(mp__jw *w, double ts, uint64_t live)
{
    counter_begin(w, "arena live bytes", ts);
    mp__jw_key(w, "live");
    mp__jw_u64(w, live);
    mp__jw_end(w);
    mp__jw_end(w);
}

#define N_KINDS 7   /* mp_tensor_kind: MP_KIND_ACTIVATION .. MP_KIND_OUTPUT */

/* Live arena bytes of each tensor kind at each step: by[s * N_KINDS + k]
 * (the blocks' sizes, by the kind of their tensor); NULL when out of
 * memory. */
static uint64_t *kind_live(const mp_plan *p)
{
    const mp_graph *g = p->graph;
    uint32_t ns = p->n_steps;
    uint64_t *by = mp__calloc(p->ctx, ((size_t)ns + 1) * N_KINDS, sizeof *by);
    if (!by)
        return NULL;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        uint32_t k = b->tensor < g->n_tensors ? g->tensors[b->tensor].kind
                                              : MP_KIND_ACTIVATION;
        if (b->first >= ns || b->end <= b->first || k >= N_KINDS)
            continue;
        by[(size_t)b->first * N_KINDS + k] += b->size;
        by[(size_t)(b->end < ns ? b->end : ns) * N_KINDS + k] -= b->size;
    }
    for (size_t i = N_KINDS; i < ((size_t)ns + 1) * N_KINDS; i++)
        by[i] += by[i - N_KINDS];
    return by;
}

/* A counter event of several series: "args" holds each kind of `used`
 * with its bytes in v (N_KINDS entries), or 0 for all (at the end). */
static void kind_counter(mp__jw *w, const char *name, double ts,
                         const uint64_t *v, const uint8_t *used)
{
    counter_begin(w, name, ts);
    for (int k = 0; k < N_KINDS; k++)
        if (used[k]) {
            mp__jw_key(w, mp_kind_name((mp_tensor_kind)k));
            mp__jw_u64(w, v ? v[k] : 0);
        }
    mp__jw_end(w);
    mp__jw_end(w);
}

/* The persistent bytes by kind (weights, constants, optimizer state), a
 * counter that never changes, at ts 0. */
static void persistent_counter(mp__jw *w, const mp_plan *p)
{
    const mp_graph *g = p->graph;
    uint64_t v[N_KINDS] = {0};
    uint8_t used[N_KINDS] = {0};
    int any = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *x = &g->tensors[t];
        if (x->kind < N_KINDS && mp__kind_persistent(x->kind) &&
            x->alias_of == MP_NONE && x->bytes) {
            v[x->kind] += x->bytes;
            used[x->kind] = 1;
            any = 1;
        }
    }
    if (any)
        kind_counter(w, "persistent bytes", 0.0, v, used);
}

/* A metadata event ("process_name", "thread_name") naming thread tid
 * prefix + name. */
static void meta(mp__jw *w, const char *what, int tid, const char *prefix,
                 const char *name)
{
    mp__jw_object(w, false);
    mp__jw_key(w, "name");
    mp__jw_string(w, what);
    mp__jw_key(w, "ph");
    mp__jw_string(w, "M");
    mp__jw_key(w, "pid");
    mp__jw_u64(w, 1);
    mp__jw_key(w, "tid");
    mp__jw_i64(w, tid);
    mp__jw_key(w, "args");
    mp__jw_object(w, false);
    mp__jw_key(w, "name");
    mp__jw_string_begin(w);
    mp__jw_string_add(w, prefix);
    mp__jw_string_add(w, name);
    mp__jw_string_end(w);
    mp__jw_end(w);
    mp__jw_end(w);
}

/* The header: the figures of the plan in "otherData". */
static void header(mp__jw *w, const mp_plan *p)
{
    const mp_graph *g = p->graph;
    mp__jw_key(w, "displayTimeUnit");
    mp__jw_string(w, "ms");
    mp__jw_key(w, "otherData");
    mp__jw_object(w, false);
    mp__jw_key(w, "graph");
    mp__jw_string(w, g->name ? g->name : "");
    mp__jw_key(w, "arena_bytes");
    mp__jw_u64(w, p->fig.arena_bytes);
    mp__jw_key(w, "lower_bound_bytes");
    mp__jw_u64(w, p->fig.lower_bound_bytes);
    mp__jw_key(w, "persistent_bytes");
    mp__jw_u64(w, p->fig.persistent_bytes);
    mp__jw_key(w, "peak_step");
    mp__jw_u64(w, p->fig.peak_step);
    mp__jw_end(w);
}

/* The slice of step s, from ts for dur microseconds. */
static void slice(mp__jw *w, const mp_plan *p, uint32_t s, double ts,
                  double dur)
{
    const mp_graph *g = p->graph;
    const mp_step *st = &p->steps[s];
    int comp = st->kind == MP_STEP_COMPUTE || st->kind == MP_STEP_RECOMPUTE;
    const mp__node *n = comp ? &g->nodes[st->index] : NULL;
    mp__jw_object(w, false);
    mp__jw_key(w, "name");
    mp__jw_string_begin(w);
    if (comp) {
        mp__jw_string_add(w, n->name);
    } else {
        mp__jw_string_add(w, mp_step_kind_name(st->kind));
        mp__jw_string_add(w, " ");
        mp__jw_string_add(w, st->index < g->n_tensors
                                 ? g->tensors[st->index].name : "?");
    }
    mp__jw_string_end(w);
    mp__jw_key(w, "cat");
    mp__jw_string(w, comp ? mp_phase_name((mp_phase)n->phase) : "memory");
    mp__jw_key(w, "ph");
    mp__jw_string(w, "X");
    mp__jw_key(w, "ts");
    mp__jw_fixed(w, ts, 3);
    mp__jw_key(w, "dur");
    mp__jw_fixed(w, dur, 3);
    mp__jw_key(w, "pid");
    mp__jw_u64(w, 1);
    mp__jw_key(w, "tid");
    mp__jw_i64(w, comp ? 1 : 2);
    mp__jw_key(w, "args");
    mp__jw_object(w, false);
    mp__jw_key(w, "step");
    mp__jw_u64(w, s);
    mp__jw_key(w, "kind");
    mp__jw_string(w, mp_step_kind_name(st->kind));
    mp__jw_key(w, "live_bytes");
    mp__jw_u64(w, p->live[s]);
    if (comp) {
        mp__jw_key(w, "op");
        mp__jw_string(w, n->op);
    }
    mp__jw_end(w);
    mp__jw_end(w);
}

mp_status mp_plan_write_trace(const mp_plan *p, const char *path,
                              const double *given)
{
    if (!p || !path)
        return p ? mp__err(p->ctx, MP_ERR_INVALID_ARG,
                          "mp_plan_write_trace: NULL argument")
                 : MP_ERR_INVALID_ARG;
    const mp_graph *g = p->graph;
    uint64_t *by = kind_live(p);
    if (!by)
        return mp__err(p->ctx, MP_ERR_NOMEM, "trace: out of memory");
    mp__jw w;
    mp__jw_init(&w, p->ctx, MP__JW_COMPACT | MP__JW_ASCII,
                512 + (size_t)p->n_steps * 160);
    mp__jw_object(&w, false);
    header(&w, p);
    mp__jw_newline(&w);
    mp__jw_key(&w, "traceEvents");
    mp__jw_array(&w, true);
    meta(&w, "process_name", 1, "memplan: ",
         g->name && *g->name ? g->name : "graph");
    meta(&w, "thread_name", 1, "", "compute");
    meta(&w, "thread_name", 2, "", "memory (free, offload, prefetch)");
    uint8_t used[N_KINDS] = {0};
    for (size_t i = 0; i < (size_t)p->n_steps * N_KINDS; i++)
        used[i % N_KINDS] |= by[i] != 0;
    persistent_counter(&w, p);
    double ts = 0.0; /* microseconds */
    uint64_t prev = UINT64_MAX;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        double dur = step_seconds(p, s, given) * 1e6;
        if (p->live[s] != prev) {
            counter(&w, ts, p->live[s]);
            prev = p->live[s];
        }
        if (s == 0 || memcmp(by + (size_t)s * N_KINDS,
                             by + (size_t)(s - 1) * N_KINDS,
                             N_KINDS * sizeof *by) != 0)
            kind_counter(&w, "arena live bytes by kind", ts,
                         by + (size_t)s * N_KINDS, used);
        slice(&w, p, s, ts, dur);
        ts += dur;
    }
    counter(&w, ts, 0);
    kind_counter(&w, "arena live bytes by kind", ts, NULL, used);
    mp__dealloc(p->ctx, by);
    mp__jw_end(&w);
    mp__jw_end(&w);
    mp__jw_raw(&w, "\n");
    return mp__jw_save(&w, path);
}
