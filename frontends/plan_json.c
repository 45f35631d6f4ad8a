/* Plan JSON: writer and reader (schema in docs/plan-format.md), through
 * the library's JSON reader and writer (frontends/json/json.h).
 *
 * The reader streams: a 100k-node plan is ~15 MB of JSON with 300k small
 * objects, and names are resolved as they are read. It loads what it
 * reads: it checks syntax, types, required keys and that every name exists
 * in the graph, but not whether the plan is right (resident inputs,
 * overlaps, figures): that is mp_verify_plan's job, so a tampered plan
 * reaches the verifier intact. */
#include "sched.h"
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PLAN_FORMAT "memplan-plan"
#define PLAN_VERSION 1

/* ======================================================================
 * Writer
 * ====================================================================== */

/* Every index must name something in the graph, or the file would not
 * read back. */
static mp_status plan_check(const mp_plan *p)
{
    const mp_graph *g = p->graph;
    mp_ctx *ctx = p->ctx;
    /* the format has no pools yet: refuse rather than write per-pool
     * offsets as if they shared one arena */
    if (p->n_pools)
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                      "plan JSON cannot hold memory pools yet (%u pools)",
                      (unsigned)p->n_pools);
    for (uint32_t i = 0; i < p->n_steps; i++) {
        const mp_step *s = &p->steps[i];
        bool is_node = s->kind == MP_STEP_COMPUTE ||
                       s->kind == MP_STEP_RECOMPUTE;
        if ((unsigned)s->kind > MP_STEP_PREFETCH)
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                          "plan step %u has an unknown kind %d", i,
                          (int)s->kind);
        if (s->index >= (is_node ? g->n_nodes : g->n_tensors))
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                          "plan step %u (%s) refers to %s %u, the graph has "
                          "%zu",
                          i, mp_step_kind_name(s->kind),
                          is_node ? "node" : "tensor", s->index,
                          is_node ? g->n_nodes : g->n_tensors);
    }
    for (uint32_t i = 0; i < p->n_blocks; i++)
        if (p->blocks[i].tensor >= g->n_tensors)
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                          "plan block %u refers to tensor %u, the graph has "
                          "%zu",
                          i, p->blocks[i].tensor, g->n_tensors);
    return MP_OK;
}

static void key_u64(mp__jw *w, const char *key, uint64_t v)
{
    mp__jw_key(w, key);
    mp__jw_u64(w, v);
}

static void key_str(mp__jw *w, const char *key, const char *s)
{
    mp__jw_key(w, key);
    mp__jw_string(w, s);
}

static void write_figures(mp__jw *w, const mp_figures *f)
{
    mp__jw_key(w, "figures");
    mp__jw_object(w, false);
    key_u64(w, "lower_bound_bytes", f->lower_bound_bytes);
    key_u64(w, "arena_bytes", f->arena_bytes);
    key_u64(w, "persistent_bytes", f->persistent_bytes);
    key_u64(w, "peak_bytes", f->peak_bytes);
    key_u64(w, "no_reuse_bytes", f->no_reuse_bytes);
    key_u64(w, "alignment", f->alignment);
    key_u64(w, "peak_step", f->peak_step);
    key_str(w, "status", mp_solve_status_name(f->status));
    key_str(w, "solver", f->solver);
    mp__jw_key(w, "solve_seconds");
    mp__jw_double(w, f->solve_seconds, MP__JW_SHORTEST, "solve_seconds");
    mp__jw_end(w);
}

/* The schedule and the blocks, one per line; the fused tensors. */
static void write_lists(mp__jw *w, const mp_plan *p)
{
    const mp_graph *g = p->graph;
    mp__jw_key(w, "schedule");
    mp__jw_array(w, true);
    for (uint32_t i = 0; i < p->n_steps; i++) {
        const mp_step *s = &p->steps[i];
        bool is_node = s->kind == MP_STEP_COMPUTE ||
                       s->kind == MP_STEP_RECOMPUTE;
        mp__jw_object(w, false);
        key_str(w, "step", mp_step_kind_name(s->kind));
        key_str(w, is_node ? "node" : "tensor",
                is_node ? g->nodes[s->index].name : g->tensors[s->index].name);
        mp__jw_end(w);
    }
    mp__jw_end(w);
    mp__jw_key(w, "blocks");
    mp__jw_array(w, true);
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        mp__jw_object(w, false);
        key_str(w, "tensor", g->tensors[b->tensor].name);
        key_u64(w, "offset", b->offset);
        key_u64(w, "size", b->size);
        key_u64(w, "first", b->first);
        key_u64(w, "end", b->end);
        /* optional: written in place over that tensor */
        if (p->block_over && p->block_over[i] < g->n_tensors)
            key_str(w, "over", g->tensors[p->block_over[i]].name);
        mp__jw_end(w);
    }
    mp__jw_end(w);
    if (p->fused) { /* optional: tensors inside fused chains */
        mp__jw_key(w, "fused");
        mp__jw_array(w, false);
        for (size_t t = 0; t < g->n_tensors; t++)
            if (p->fused[t])
                mp__jw_string(w, g->tensors[t].name);
        mp__jw_end(w);
    }
}

/* The plan as JSON into w (initialized here). */
static mp_status plan_write(const mp_plan *p, mp__jw *w)
{
    const mp_graph *g = p->graph;
    /* ~40 bytes per step and ~90 per block, plus names */
    mp__jw_init(w, p->ctx, 0,
                1024 + (size_t)p->n_steps * 48 + (size_t)p->n_blocks * 96);
    mp_status st = plan_check(p);
    if (st) {
        w->st = st; /* the message is in the context */
        return st;
    }
    mp__jw_object(w, true);
    key_str(w, "format", PLAN_FORMAT);
    key_u64(w, "version", PLAN_VERSION);
    mp__jw_key(w, "graph");
    mp__jw_object(w, false);
    key_str(w, "name", g->name);
    key_u64(w, "tensors", g->n_tensors);
    key_u64(w, "nodes", g->n_nodes);
    mp__jw_end(w);
    write_figures(w, &p->fig);
    write_lists(w, p);
    mp__jw_end(w);
    mp__jw_raw(w, "\n");
    return w->st;
}

mp_status mp_plan_to_json_string(const mp_plan *p, char **out)
{
    if (!out)
        return p ? mp__err(p->ctx, MP_ERR_INVALID_ARG,
                          "mp_plan_to_json_string: out is NULL")
                 : MP_ERR_INVALID_ARG;
    *out = NULL;
    if (!p || !p->graph)
        return MP_ERR_INVALID_ARG;
    mp__jw w;
    plan_write(p, &w);
    return mp__jw_done(&w, out, NULL);
}

mp_status mp_plan_save_json(const mp_plan *p, const char *path)
{
    if (!p || !p->graph)
        return MP_ERR_INVALID_ARG;
    if (!path)
        return mp__err(p->ctx, MP_ERR_INVALID_ARG,
                      "mp_plan_save_json: path is NULL");
    mp__jw w;
    plan_write(p, &w);
    return mp__jw_save(&w, path);
}

/* ======================================================================
 * Reader
 * ====================================================================== */
typedef struct rd {
    mp__jr jr;
    mp_graph *g;
    uint32_t last_node, last_tensor;   /* previous names resolved */
} rd;

/* ---- the plan ----------------------------------------------------------- */
typedef struct plan_acc {
    mp_step *steps;
    size_t n_steps, cap_steps;
    mp_block *blocks;
    size_t n_blocks, cap_blocks;
    mp_figures fig;
    bool solver_null;
    char solver[32];
    uint32_t *over;        /* per block: "over" tensor or MP_NONE */
    size_t cap_over;
    bool any_over;
    uint8_t *fused;        /* per tensor, from "fused"; NULL when absent */
} plan_acc;

/* v as a string (or null when allow_null: *s NULL). */
static mp_status str_of(rd *r, const mp__jval *v, bool allow_null,
                        const char **s)
{
    *s = NULL;
    if (allow_null && v->type == MP__JT_NULL)
        return MP_OK;
    return mp__jr_string(&r->jr, v, false,
                         allow_null ? "a string or null" : "a string", s);
}

static mp_status u64_of(rd *r, const mp__jval *v, uint64_t *out)
{
    return mp__jr_u64(&r->jr, v, UINT64_MAX, "a non-negative integer", out);
}

static mp_status u32_of(rd *r, const mp__jval *v, uint32_t *out)
{
    uint64_t x = 0;
    mp_status st = mp__jr_u64(&r->jr, v, UINT32_MAX,
                              "a non-negative integer", &x);
    *out = (uint32_t)x;
    return st;
}

/* v names a tensor or node of the graph: its index. */
static mp_status ref_of(rd *r, const mp__jval *v, bool is_node,
                        uint32_t *idx)
{
    const char *name;
    mp_status st = mp__jr_string(&r->jr, v, false, NULL, &name);
    if (st)
        return st;
    /* Plans list nodes and blocks mostly in graph order: try the index
     * after the previous one before hashing (a hit costs one strcmp on a
     * name next to the previous one in memory instead of a hash and a
     * probe at a random place). */
    uint32_t *last = is_node ? &r->last_node : &r->last_tensor;
    size_t n = is_node ? r->g->n_nodes : r->g->n_tensors;
    uint32_t guess = *last + 1;
    if (guess < n &&
        strcmp(is_node ? r->g->nodes[guess].name : r->g->tensors[guess].name,
               name) == 0) {
        *idx = *last = guess;
        return MP_OK;
    }
    st = is_node ? mp_graph_find_node(r->g, name, idx)
                 : mp_graph_find_tensor(r->g, name, idx);
    if (st == MP_OK) {
        *last = *idx;
        return MP_OK;
    }
    if (st != MP_ERR_NOT_FOUND)
        return st;
    return mp__jr_err(&r->jr, MP_ERR_NOT_FOUND, v->off,
                      "no %s named \"%s\" in graph \"%s\"",
                      is_node ? "node" : "tensor", name,
                      r->g->name ? r->g->name : "");
}

static mp_status read_graph_section(rd *r)
{
    static const char *const names[] = {"name", "tensors", "nodes"};
    static const mp__jkeys keys = {names, 3, MP__JK_EXT, NULL};
    mp__jobj o;
    mp__jval v, counts[3];
    uint32_t nt = 0, nn = 0;
    const char *s;
    int k;
    mp_status st = mp__jr_object(&r->jr, &o, &keys, NULL);
    while (!st && !(st = mp__jr_next(&r->jr, &o, &k, &v)) &&
           k != MP__JK_END) {
        counts[k] = v;
        st = k == 0 ? str_of(r, &v, true, &s)
                    : u32_of(r, &v, k == 1 ? &nt : &nn);
    }
    if (st || (st = mp__jr_require(&r->jr, &o, 7)))
        return st;
    /* the plan names tensors and nodes of one graph: a different count
     * means it was made for another graph */
    bool tensors = nt != r->g->n_tensors;
    if (!tensors && nn == r->g->n_nodes)
        return MP_OK;
    mp__jr_push_key(&r->jr, tensors ? "tensors" : "nodes");
    return mp__jr_err(&r->jr, MP_ERR_GRAPH, counts[tensors ? 1 : 2].off,
                      "the plan was made for a graph of %u %s, this graph "
                      "has %zu",
                      tensors ? nt : nn, tensors ? "tensors" : "nodes",
                      tensors ? r->g->n_tensors : r->g->n_nodes);
}

/* The index of name among n names (-1: none). */
static int name_index(const char *name, const char *(*name_of)(int), int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, name_of(i)) == 0)
            return i;
    return -1;
}

static const char *status_name(int i)
{
    return mp_solve_status_name((mp_solve_status)i);
}

static const char *step_name(int i)
{
    return mp_step_kind_name((mp_step_kind)i);
}

static mp_status read_figure(rd *r, plan_acc *a, int k, const mp__jval *v)
{
    mp_figures *f = &a->fig;
    uint64_t *u64s[] = {&f->lower_bound_bytes, &f->arena_bytes,
                        &f->persistent_bytes, &f->peak_bytes,
                        &f->no_reuse_bytes, &f->alignment};
    const char *s;
    mp_status st;
    if (k < 6)
        return u64_of(r, v, u64s[k]);
    switch (k) {
    case 6: return u32_of(r, v, &f->peak_step);
    case 7: {
        if ((st = str_of(r, v, false, &s)))
            return st;
        int found = name_index(s, status_name, MP_SOLVE_TIMEOUT + 1);
        if (found < 0)
            return mp__jr_err(&r->jr, MP_ERR_PARSE, v->off,
                              "unknown status \"%s\" (expected none, "
                              "optimal, feasible, infeasible or timeout)",
                              s);
        f->status = (mp_solve_status)found;
        return MP_OK;
    }
    case 8:
        if ((st = str_of(r, v, true, &s)))
            return st;
        a->solver_null = !s;
        if (s && v->n >= sizeof a->solver)
            return mp__jr_err(&r->jr, MP_ERR_PARSE, v->off,
                              "solver name longer than %zu bytes",
                              sizeof a->solver - 1);
        if (s)
            memcpy(a->solver, s, v->n + 1);
        return MP_OK;
    default:
        return mp__jr_num(&r->jr, v, -INFINITY, "a number",
                          &f->solve_seconds);
    }
}

static mp_status read_figures(rd *r, plan_acc *a)
{
    static const char *const names[] = {
        "lower_bound_bytes", "arena_bytes", "persistent_bytes",
        "peak_bytes", "no_reuse_bytes", "alignment", "peak_step",
        "status", "solver", "solve_seconds"};
    static const mp__jkeys keys = {names, 10, MP__JK_EXT, NULL};
    mp__jobj o;
    mp__jval v;
    int k;
    mp_status st = mp__jr_object(&r->jr, &o, &keys, NULL);
    while (!st && !(st = mp__jr_next(&r->jr, &o, &k, &v)) &&
           k != MP__JK_END)
        st = read_figure(r, a, k, &v);
    return st ? st : mp__jr_require(&r->jr, &o, 0x3ff);
}

/* One object of "schedule" into *s. */
static mp_status read_step(rd *r, mp_step *s)
{
    static const char *const names[] = {"step", "node", "tensor"};
    static const mp__jkeys keys = {names, 3, MP__JK_EXT, NULL};
    mp__jobj o;
    mp__jval v;
    size_t kind_off = 0, ref_off = 0;
    int k, kind = -1;
    const char *name;
    mp_status st = mp__jr_object(&r->jr, &o, &keys, NULL);
    while (!st && !(st = mp__jr_next(&r->jr, &o, &k, &v)) &&
           k != MP__JK_END) {
        if (k) {
            ref_off = v.off;
            st = ref_of(r, &v, k == 1, &s->index);
        } else if (!(st = str_of(r, &v, false, &name))) {
            kind_off = v.off;
            if ((kind = name_index(name, step_name, MP_STEP_PREFETCH + 1)) < 0)
                return mp__jr_err(&r->jr, MP_ERR_PARSE, v.off,
                                  "unknown step \"%s\" (expected compute, "
                                  "recompute, free, offload or prefetch)",
                                  name);
        }
    }
    if (st || (st = mp__jr_require(&r->jr, &o, 1)))
        return st;
    bool want_node = kind == MP_STEP_COMPUTE || kind == MP_STEP_RECOMPUTE;
    const char *kn = mp_step_kind_name((mp_step_kind)kind);
    if (o.seen & (want_node ? 4u : 2u))
        return mp__jr_err(&r->jr, MP_ERR_PARSE, ref_off ? ref_off : kind_off,
                          "a %s step takes \"%s\", not \"%s\"", kn,
                          want_node ? "node" : "tensor",
                          want_node ? "tensor" : "node");
    if (!(o.seen & (want_node ? 2u : 4u))) {
        char detail[32];
        snprintf(detail, sizeof detail, " (a %s step)", kn);
        return mp__jr_missing(&r->jr, &o, want_node ? "node" : "tensor",
                              detail);
    }
    s->kind = (mp_step_kind)kind;
    return MP_OK;
}

static mp_status read_schedule(rd *r, plan_acc *a)
{
    mp__jarr arr;
    bool more;
    mp_status st = mp__jr_array(&r->jr, &arr, NULL);
    while (!st && !(st = mp__jr_elem(&r->jr, &arr, &more)) && more) {
        size_t i = a->n_steps, mark = mp__jr_mark(&r->jr);
        if (i >= UINT32_MAX)
            return mp__jr_err(&r->jr, MP_ERR_PARSE, mp__jr_pos(&r->jr),
                              "too many steps");
        void *p = a->steps;
        if ((st = mp__grow(r->jr.ctx, &p, sizeof *a->steps, i + 1,
                          &a->cap_steps)))
            return st;
        a->steps = p;
        if ((st = read_step(r, &a->steps[i])))
            return st;
        a->n_steps = i + 1;
        mp__jr_release(&r->jr, mark);
    }
    return st;
}

/* One object of "blocks" into *b (*over: its "over" tensor or MP_NONE). */
static mp_status read_block(rd *r, plan_acc *a, mp_block *b, uint32_t *over)
{
    static const char *const names[] = {"tensor", "offset", "size", "first",
                                        "end", "over"}; /* over: optional */
    static const mp__jkeys keys = {names, 6, MP__JK_EXT, NULL};
    mp__jobj o;
    mp__jval v;
    int k;
    mp_status st = mp__jr_object(&r->jr, &o, &keys, NULL);
    while (!st && !(st = mp__jr_next(&r->jr, &o, &k, &v)) &&
           k != MP__JK_END) {
        switch (k) {
        case 0: st = ref_of(r, &v, false, &b->tensor); break;
        case 1: st = u64_of(r, &v, &b->offset); break;
        case 2: st = u64_of(r, &v, &b->size); break;
        case 3: st = u32_of(r, &v, &b->first); break;
        case 4: st = u32_of(r, &v, &b->end); break;
        default:
            st = ref_of(r, &v, false, over);
            a->any_over = true;
        }
    }
    return st ? st : mp__jr_require(&r->jr, &o, 0x1f);
}

static mp_status read_blocks(rd *r, plan_acc *a)
{
    mp__jarr arr;
    bool more;
    mp_status st = mp__jr_array(&r->jr, &arr, NULL);
    while (!st && !(st = mp__jr_elem(&r->jr, &arr, &more)) && more) {
        size_t i = a->n_blocks, mark = mp__jr_mark(&r->jr), c2 = a->cap_over;
        if (i >= UINT32_MAX)
            return mp__jr_err(&r->jr, MP_ERR_PARSE, mp__jr_pos(&r->jr),
                              "too many blocks");
        void *p = a->blocks, *q = a->over;
        st = mp__grow(r->jr.ctx, &p, sizeof *a->blocks, i + 1, &a->cap_blocks);
        a->blocks = p;
        if (!st)
            st = mp__grow(r->jr.ctx, &q, sizeof *a->over, i + 1, &c2);
        a->over = q;
        a->cap_over = c2;
        if (st)
            return st;
        memset(&a->blocks[i], 0, sizeof a->blocks[i]);
        a->over[i] = MP_NONE;
        if ((st = read_block(r, a, &a->blocks[i], &a->over[i])))
            return st;
        a->n_blocks = i + 1;
        mp__jr_release(&r->jr, mark);
    }
    return st;
}

/* Optional "fused": names of the tensors inside fused chains. */
static mp_status read_fused(rd *r, plan_acc *a)
{
    mp__jarr arr;
    mp__jval v;
    bool more;
    mp_status st = mp__jr_array(&r->jr, &arr, NULL);
    if (!st && !a->fused &&
        !(a->fused = mp__calloc(r->jr.ctx, r->g->n_tensors + 1, 1)))
        return MP_ERR_NOMEM;
    while (!st && !(st = mp__jr_elem(&r->jr, &arr, &more)) && more) {
        size_t mark = mp__jr_mark(&r->jr);
        uint32_t t;
        if (!(st = mp__jr_value(&r->jr, &v)) &&
            !(st = ref_of(r, &v, false, &t)))
            a->fused[t] = 1;
        mp__jr_release(&r->jr, mark);
    }
    return st;
}

enum { SEC_GRAPH, SEC_FIGURES, SEC_SCHEDULE, SEC_BLOCKS, SEC_FUSED, N_SEC,
       K_FORMAT = N_SEC, K_VERSION };

static mp_status read_section(rd *r, plan_acc *a, int sec)
{
    switch (sec) {
    case SEC_GRAPH: return read_graph_section(r);
    case SEC_FIGURES: return read_figures(r, a);
    case SEC_SCHEDULE: return read_schedule(r, a);
    case SEC_FUSED: return read_fused(r, a);
    default: return read_blocks(r, a);
    }
}

/* "format" and "version": the next value. */
static mp_status read_format(rd *r, int k)
{
    mp__jval v;
    const char *s;
    uint64_t ver;
    mp_status st = mp__jr_value(&r->jr, &v);
    if (st)
        return st;
    if (k == K_FORMAT) {
        if ((st = str_of(r, &v, false, &s)) || strcmp(s, PLAN_FORMAT) == 0)
            return st;
        return mp__jr_err(&r->jr, MP_ERR_PARSE, v.off,
                          "\"%s\" is not a memplan plan (expected \""
                          PLAN_FORMAT "\")%s",
                          s, strcmp(s, "memplan-graph") == 0
                                 ? "; this file is a graph" : "");
    }
    if ((st = u64_of(r, &v, &ver)))
        return st;
    if (ver > PLAN_VERSION)
        return mp__jr_err(&r->jr, MP_ERR_UNSUPPORTED, v.off,
                          "plan format version %llu is newer than this "
                          "memplan reads (%d); upgrade memplan",
                          (unsigned long long)ver, PLAN_VERSION);
    if (ver < 1)
        return mp__jr_err(&r->jr, MP_ERR_PARSE, v.off,
                          "%llu is not a plan format version",
                          (unsigned long long)ver);
    return MP_OK;
}

/* The sections skipped until format and version were known, read now. */
static mp_status read_skipped(rd *r, plan_acc *a, const mp__jobj *o,
                              const size_t *sec_pos)
{
    static const char *const names[] = {"graph", "figures", "schedule",
                                        "blocks", "fused"};
    size_t stop = mp__jr_pos(&r->jr);
    unsigned depth = r->jr.depth;
    for (int s = 0; s < N_SEC; s++) {
        if (!sec_pos[s])
            continue;
        mp__jr_seek(&r->jr, sec_pos[s], o->depth);
        mp__jr_path_cut(&r->jr, 0);
        mp__jr_push_key(&r->jr, names[s]);
        mp_status st = read_section(r, a, s);
        if (st)
            return st;
    }
    mp__jr_seek(&r->jr, stop, depth);
    return MP_OK;
}

static mp_status read_plan(rd *r, plan_acc *a)
{
    static const char *const names[] = {"graph", "figures", "schedule",
                                        "blocks", "fused", "format",
                                        "version"}; /* fused: optional */
    static const mp__jkeys keys = {
        names, 7, MP__JK_EXT | MP__JK_ANY,
        "format, version, graph, figures, schedule, blocks, fused or "
        "metadata"};
    size_t sec_pos[N_SEC] = {0, 0, 0, 0, 0}, unknown_off = 0;
    char unknown[64] = "";
    bool meta_seen = false;
    mp__jobj o;
    int k;
    mp_status st = mp__jr_doc(&r->jr, &o, &keys);
    while (!st && !(st = mp__jr_member(&r->jr, &o, &k)) && k != MP__JK_END) {
        bool known = (o.seen >> K_FORMAT & 1) && (o.seen >> K_VERSION & 1);
        if (k == MP__JK_OTHER) {
            /* "metadata" is free (once, its keys unique); another key is
             * an error, reported once the version is known to be one this
             * memplan reads */
            bool meta = strcmp(mp__jr_key(&r->jr, &o), "metadata") == 0;
            if (meta && meta_seen)
                return mp__jr_dup_key(&r->jr, &o);
            meta_seen |= meta;
            if (!unknown_off && !meta) {
                unknown_off = o.key_off;
                snprintf(unknown, sizeof unknown, "%s",
                         mp__jr_key(&r->jr, &o));
            }
            st = meta ? mp__jr_skip_value_unique(&r->jr)
                      : mp__jr_skip_value(&r->jr);
        } else if (k >= K_FORMAT) {
            st = read_format(r, k);
        } else if (!known) {
            /* read the sections once format and version are known, so a
             * newer file says so instead of failing on its contents */
            sec_pos[k] = mp__jr_ws(&r->jr);
            st = mp__jr_skip_value(&r->jr);
        } else {
            st = read_section(r, a, k);
        }
    }
    if (st || (st = mp__jr_doc_end(&r->jr)))
        return st;
    if (!(o.seen >> K_FORMAT & 1))
        return mp__jr_err(&r->jr, MP_ERR_PARSE, o.off,
                          "not a memplan plan: missing required key "
                          "\"format\"");
    if (unknown_off)
        return mp__jr_unknown_key(&r->jr, &keys, unknown_off, unknown);
    if ((st = mp__jr_require(&r->jr, &o, 0x6f)))
        return st;
    return read_skipped(r, a, &o, sec_pos);
}

/* The blocks live at one step add up to more than 2^64 bytes: names a
 * block larger than its tensor (the likely cause) when there is one. */
static mp_status overflow_invalid(mp_ctx *ctx, const char *source,
                                  const mp_graph *g, const plan_acc *a)
{
    uint64_t align = a->fig.alignment ? a->fig.alignment : 1;
    for (size_t i = 0; i < a->n_blocks; i++) {
        const mp_block *b = &a->blocks[i];
        const mp__tensor *tt = &g->tensors[b->tensor];
        uint64_t want;
        if (!mp__align_up(tt->bytes, align, &want) || b->size > want)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "%s: blocks[%zu] (tensor '%s'): size %llu bytes is "
                          "larger than the tensor (%llu bytes), and the "
                          "blocks live at one step add up to more than 2^64 "
                          "bytes: not a valid plan",
                          source, i, tt->name, (unsigned long long)b->size,
                          (unsigned long long)tt->bytes);
    }
    return mp__err(ctx, MP_ERR_VERIFY,
                  "%s: the blocks live at one step add up to more than 2^64 "
                  "bytes: not a valid plan", source);
}

/* Where a plan is read to: against graph g, into *out. */
typedef struct plan_dest {
    mp_graph *g;
    mp_plan **out;
} plan_dest;

/* Parses text (len bytes) against dest's graph into a new plan. */
static mp_status plan_from_text(mp_ctx *ctx, const char *text, size_t len,
                                const char *source, void *dest)
{
    mp_graph *g = ((const plan_dest *)dest)->g;
    mp_plan **out = ((const plan_dest *)dest)->out;
    rd r;
    mp__jr_init(&r.jr, ctx, source, text, len, 0);
    r.g = g;
    r.last_node = r.last_tensor = UINT32_MAX;
    plan_acc a;
    memset(&a, 0, sizeof a);
    mp_status st = read_plan(&r, &a);
    mp__jr_free(&r.jr);
    mp_plan *p = NULL;
    if (st == MP_OK) {
        p = mp__calloc(ctx, 1, sizeof *p);
        if (!p)
            st = MP_ERR_NOMEM;
    }
    if (st == MP_OK) {
        /* the live bytes are derived, never read: the verifier checks the
         * figures against them */
        st = mp__blocks_live(ctx, a.blocks, (uint32_t)a.n_blocks,
                            (uint32_t)a.n_steps, &p->live);
        /* blocks live together beyond 2^64 bytes fit in no arena: the
         * plan is invalid (a verification failure), not too large */
        if (st == MP_ERR_OVERFLOW)
            st = overflow_invalid(ctx, source, g, &a);
    }
    if (st) {
        mp__dealloc(ctx, a.steps);
        mp__dealloc(ctx, a.blocks);
        mp__dealloc(ctx, a.over);
        mp__dealloc(ctx, a.fused);
        mp__dealloc(ctx, p);
        return st;
    }
    p->ctx = ctx;
    p->graph = g;
    p->steps = a.steps;
    p->n_steps = (uint32_t)a.n_steps;
    p->blocks = a.blocks;
    p->n_blocks = (uint32_t)a.n_blocks;
    p->fig = a.fig;
    memcpy(p->solver_name, a.solver, sizeof p->solver_name);
    p->fig.solver = a.solver_null ? NULL : p->solver_name;
    if (a.any_over) {
        p->block_over = a.over;
    } else {
        mp__dealloc(ctx, a.over);
    }
    p->fused = a.fused;
    *out = p;
    return MP_OK;
}

mp_status mp_plan_load_json(mp_graph *g, const char *path, mp_plan **out)
{
    if (out)
        *out = NULL;
    if (!g)
        return MP_ERR_INVALID_ARG;
    if (!path || !out)
        return mp__err(g->ctx, MP_ERR_INVALID_ARG,
                      "mp_plan_load_json: %s is NULL", path ? "out" : "path");
    if (!g->finalized)
        return mp__err(g->ctx, MP_ERR_INVALID_ARG,
                      "mp_plan_load_json: the graph is not finalized");
    plan_dest d = {g, out};
    return mp__json_load_file(g->ctx, path, plan_from_text, &d);
}
