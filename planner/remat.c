/* Recompute / checkpoint under a memory budget (docs/training.md): the
 * driver. It builds the recompute problem from a graph (units = nodes in
 * topological order), asks the search of solvers/remat/ for the best
 * schedule, and places it as a plan, re-planning when the placed arena
 * overshoots the budget (mp_remat_plan); and the largest batch that fits
 * (mp_remat_max_batch). */
#include "remat.h"
#include "planner.h"
#include "search.h"

#include <string.h>

/* ---- the problem --------------------------------------------------------- */
/* The unit producing the storage of input x, MP_NONE when the replay does
 * not track it (no tensor, persistent, empty, or a graph input). */
static uint32_t dep_unit(const mp_graph *g, const mp__remat_prob *p,
                         uint32_t x)
{
    if (x == MP_NONE)
        return MP_NONE;
    const mp__tensor *tr = &g->tensors[g->tensors[x].root];
    if (mp__kind_persistent(tr->kind) || tr->bytes == 0 ||
        tr->producer == MP_NONE)
        return MP_NONE;
    return p->pos[tr->producer];
}

/* Item j of node nd's list `which` into *v: its arena outputs (FREE_LIST,
 * the unit's FREE steps), the graph inputs it reads (READ_LIST, by
 * their index in_idx) or the arena storage roots it reads (ROOT_LIST);
 * 0 when item j is not one. */
enum { FREE_LIST, READ_LIST, ROOT_LIST };
static int list_item(const mp_graph *g, const uint32_t *in_idx,
                     const mp__node *nd, int which, uint32_t j, uint32_t *v)
{
    if (which == FREE_LIST) {
        *v = nd->outputs[j];
        return mp__tensor_in_arena(&g->tensors[*v]);
    }
    uint32_t x = nd->inputs[j];
    if (x == MP_NONE)
        return 0;
    if (which == ROOT_LIST) {
        *v = g->tensors[x].root;
        return mp__tensor_in_arena(&g->tensors[*v]) &&
               g->tensors[*v].bytes > 0;
    }
    *v = in_idx[g->tensors[x].root];
    return *v != MP_NONE;
}

/* A per-unit list (begin[u] .. begin[u + 1] in list). */
static mp_status unit_list(const mp_graph *g, mp__remat_prob *p,
                           const uint32_t *in_idx, int which,
                           uint32_t **begin, uint32_t **list)
{
    mp_ctx *ctx = g->ctx;
    *begin = mp__calloc(ctx, (size_t)p->T + 2, sizeof **begin);
    if (!*begin)
        return MP_ERR_NOMEM;
    for (int fill = 0; fill < 2; fill++) {
        uint32_t n = 0, v;
        for (uint32_t u = 0; u < p->T; u++) {
            const mp__node *nd = &g->nodes[p->node[u]];
            uint32_t m = which == FREE_LIST ? nd->n_out : nd->n_in;
            for (uint32_t j = 0; j < m; j++)
                if (list_item(g, in_idx, nd, which, j, &v)) {
                    if (fill)
                        (*list)[n] = v;
                    n++;
                }
            (*begin)[u + 1] = n;
        }
        if (!fill && !(*list = mp__alloc(ctx, ((size_t)n + 1) * sizeof **list)))
            return MP_ERR_NOMEM;
    }
    return MP_OK;
}

/* The graph inputs that take arena memory: in_idx[t] (MP_NONE: not one),
 * their tensors and aligned bytes. */
static mp_status prob_inputs(const mp_graph *g, mp__remat_prob *p,
                             uint32_t *in_idx)
{
    mp_ctx *ctx = g->ctx;
    uint32_t n_in = 0, nt = (uint32_t)g->n_tensors;
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        in_idx[t] = MP_NONE;
        if (tt->producer == MP_NONE && mp__tensor_in_arena(tt) &&
            (tt->n_cons || (tt->flags & MP__TF_OUTPUT)))
            in_idx[t] = n_in++;
    }
    p->n_in = n_in;
    p->in_tensor = mp__alloc(ctx, ((size_t)n_in + 1) * sizeof *p->in_tensor);
    p->in_last = mp__calloc(ctx, (size_t)n_in + 1, sizeof *p->in_last);
    p->in_horizon = mp__calloc(ctx, (size_t)n_in + 1, sizeof *p->in_horizon);
    p->in_mem = mp__calloc(ctx, (size_t)n_in + 1, sizeof *p->in_mem);
    p->in_out = mp__calloc(ctx, (size_t)n_in + 1, 1);
    if (!p->in_tensor || !p->in_last || !p->in_horizon || !p->in_mem ||
        !p->in_out)
        return MP_ERR_NOMEM;
    for (uint32_t t = 0; t < nt; t++)
        if (in_idx[t] != MP_NONE) {
            uint32_t k = in_idx[t];
            p->in_tensor[k] = t;
            if (!mp__align_up(g->tensors[t].bytes, p->alignment,
                              &p->in_mem[k]))
                return mp__err(ctx, MP_ERR_OVERFLOW,
                               "tensor '%s': size overflows",
                               g->tensors[t].name);
        }
    return MP_OK;
}

/* Each arena storage root's aligned bytes (0 for other tensors). */
static mp_status tensor_mem(const mp_graph *g, mp__remat_prob *p)
{
    p->t_mem = mp__calloc(g->ctx, (size_t)p->n_tensors + 1, sizeof *p->t_mem);
    if (!p->t_mem)
        return MP_ERR_NOMEM;
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->root == t && mp__tensor_in_arena(tt) &&
            !mp__align_up(tt->bytes, p->alignment, &p->t_mem[t]))
            return mp__err(g->ctx, MP_ERR_OVERFLOW,
                           "tensor '%s': size overflows", tt->name);
    }
    return MP_OK;
}

/* The node may be recomputed by the min-cut default: cheap by its
 * registry entry, and not a reduction that shrinks its inputs more than
 * fourfold (its output is cheap to keep: AOTAutograd bans those too). */
static uint8_t node_cheap(const mp_graph *g, const mp__node *nd)
{
    if (!mp__op_cheap(nd->def))
        return 0;
    uint64_t in = 0, out = 0;
    for (uint32_t i = 0; i < nd->n_in; i++)
        if (nd->inputs[i] != MP_NONE &&
            !mp__add_u64(in, g->tensors[nd->inputs[i]].bytes, &in))
            return 0;
    for (uint32_t i = 0; i < nd->n_out; i++)
        if (!mp__add_u64(out, g->tensors[nd->outputs[i]].bytes, &out))
            return 0;
    return out >= in / 4;
}

/* Per unit: node, name, cost, FLOPs, phase and aligned output bytes;
 * the last stage reading each graph input; and the unique dependencies
 * counted (dep_begin, and the uses of each producer in use_begin). */
static mp_status prob_units(const mp_graph *g, mp__remat_prob *p,
                            uint32_t *stamp)
{
    size_t n_deps = 0;
    for (uint32_t u = 0; u < p->T; u++) {
        const mp__node *nd = &g->nodes[p->node[u]];
        p->name[u] = nd->name;
        p->cost[u] = mp_node_cost(g, p->node[u]);
        p->flops[u] = nd->flops;
        p->base_cost += p->cost[u];
        p->fwd[u] = nd->phase == MP_PHASE_FORWARD;
        p->cheap[u] = node_cheap(g, nd);
        for (uint32_t j = p->free_begin[u]; j < p->free_begin[u + 1]; j++) {
            const mp__tensor *tt = &g->tensors[p->frees[j]];
            uint64_t a;
            if (!mp__align_up(tt->bytes, p->alignment, &a) ||
                !mp__add_u64(p->mem[u], a, &p->mem[u]))
                return mp__err(g->ctx, MP_ERR_OVERFLOW,
                               "tensor '%s': size overflows", tt->name);
        }
        for (uint32_t q = p->read_begin[u]; q < p->read_begin[u + 1]; q++)
            if (u > p->in_last[p->reads[q]])
                p->in_last[p->reads[q]] = u;
        for (uint32_t i = 0; i < nd->n_in; i++) {
            uint32_t d = dep_unit(g, p, nd->inputs[i]);
            if (d == MP_NONE || stamp[d] == u + 1)
                continue;
            stamp[d] = u + 1;
            n_deps++;
            p->use_begin[d + 1]++;
        }
        p->dep_begin[u + 1] = (uint32_t)n_deps;
    }
    return MP_OK;
}

/* The dependencies and uses themselves (uses ascending, as units are). */
static mp_status prob_edges(const mp_graph *g, mp__remat_prob *p,
                            uint32_t *stamp)
{
    mp_ctx *ctx = g->ctx;
    uint32_t T = p->T;
    size_t n_deps = p->dep_begin[T];
    p->deps = mp__alloc(ctx, (n_deps + 1) * sizeof *p->deps);
    p->uses = mp__alloc(ctx, (n_deps + 1) * sizeof *p->uses);
    uint32_t *cursor = mp__alloc(ctx, ((size_t)T + 1) * sizeof *cursor);
    if (!p->deps || !p->uses || !cursor) {
        mp__dealloc(ctx, cursor);
        return MP_ERR_NOMEM;
    }
    for (uint32_t u = 0; u < T; u++)
        p->use_begin[u + 1] += p->use_begin[u];
    memset(stamp, 0, ((size_t)T + 1) * sizeof *stamp);
    for (uint32_t u = 0; u < T; u++)
        cursor[u] = p->use_begin[u];
    size_t k = 0;
    for (uint32_t u = 0; u < T; u++) {
        const mp__node *nd = &g->nodes[p->node[u]];
        for (uint32_t i = 0; i < nd->n_in; i++) {
            uint32_t d = dep_unit(g, p, nd->inputs[i]);
            if (d == MP_NONE || stamp[d] == u + 1)
                continue;
            stamp[d] = u + 1;
            p->deps[k++] = d;
            p->uses[cursor[d]++] = u;
        }
    }
    mp__dealloc(ctx, cursor);
    return MP_OK;
}

/* Graph outputs (never freed), each unit's horizon (the last stage at
 * which it may be needed, backwards) and each graph input's, and the
 * tensor -> unit map. */
static void prob_horizons(const mp_graph *g, mp__remat_prob *p,
                          const uint32_t *in_idx)
{
    uint32_t T = p->T;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        const mp__tensor *tr = &g->tensors[tt->root];
        p->unit_of[t] = tr->producer != MP_NONE ? p->pos[tr->producer]
                                                : MP_NONE;
        if (!(tt->flags & MP__TF_OUTPUT))
            continue;
        if (tr->producer != MP_NONE)
            p->out[p->pos[tr->producer]] = 1;
        else if (in_idx[tt->root] != MP_NONE)
            p->in_out[in_idx[tt->root]] = 1;
    }
    for (uint32_t u = T; u-- > 0;) {
        uint32_t h = u;
        for (uint32_t j = p->use_begin[u]; j < p->use_begin[u + 1]; j++) {
            uint32_t c = p->uses[j];
            if (c > h)
                h = c;
            if (p->horizon[c] > h)
                h = p->horizon[c];
        }
        p->horizon[u] = h;
    }
    for (uint32_t u = 0; u < T; u++)
        for (uint32_t q = p->read_begin[u]; q < p->read_begin[u + 1]; q++)
            if (p->horizon[u] > p->in_horizon[p->reads[q]])
                p->in_horizon[p->reads[q]] = p->horizon[u];
    /* each arena output's last reader (units ascend), its producer when
     * none reads it */
    for (uint32_t u = 0; u < T; u++) {
        for (uint32_t j = p->free_begin[u]; j < p->free_begin[u + 1]; j++)
            p->t_last[p->frees[j]] = u;
        for (uint32_t j = p->root_begin[u]; j < p->root_begin[u + 1]; j++)
            p->t_last[p->roots[j]] = u;
    }
}

/* p->lock (model.h): the optimizer units read the weights and states
 * they update in place; a unit locks at the first such update at or after
 * it of a persistent tensor it reads, or at its dependencies' lock. NULL
 * when the graph has no optimizer step. */
static mp_status prob_locks(const mp_graph *g, mp__remat_prob *p)
{
    mp_ctx *ctx = g->ctx;
    uint32_t T = p->T, nt = p->n_tensors;
    bool any = false;
    for (uint32_t u = 0; u < T && !any; u++)
        any = g->nodes[p->node[u]].phase == MP_PHASE_OPTIMIZER;
    if (!any)
        return MP_OK;
    uint32_t *nxt = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *nxt);
    p->lock = mp__alloc(ctx, ((size_t)T + 1) * sizeof *p->lock);
    if (!nxt || !p->lock) {
        mp__dealloc(ctx, nxt);
        return MP_ERR_NOMEM;
    }
    for (uint32_t t = 0; t < nt; t++)
        nxt[t] = UINT32_MAX;
    for (uint32_t u = T; u-- > 0;) { /* nxt[r]: the next update of r */
        const mp__node *nd = &g->nodes[p->node[u]];
        uint32_t l = UINT32_MAX;
        for (int pass = 0; pass < 2; pass++)
            for (uint32_t i = 0; i < nd->n_in; i++) {
                uint32_t r = mp__persistent_root(g, nd->inputs[i]);
                if (r == MP_NONE)
                    continue;
                if (pass == 0 && nd->phase == MP_PHASE_OPTIMIZER)
                    nxt[r] = u;
                else if (pass == 1 && nxt[r] < l)
                    l = nxt[r];
            }
        p->lock[u] = l;
    }
    for (uint32_t u = 0; u < T; u++)
        for (uint32_t j = p->dep_begin[u]; j < p->dep_begin[u + 1]; j++)
            if (p->lock[p->deps[j]] < p->lock[u])
                p->lock[u] = p->lock[p->deps[j]];
    mp__dealloc(ctx, nxt);
    return MP_OK;
}

mp_status mp__remat_prob_build(const mp_graph *g, uint64_t alignment,
                               mp__remat_prob *p)
{
    mp_ctx *ctx = g->ctx;
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->alignment = alignment ? alignment : 1;
    if (!g->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    uint32_t T = (uint32_t)g->n_nodes, nt = (uint32_t)g->n_tensors;
    size_t T1 = (size_t)T + 1;
    p->T = T;
    p->n_tensors = nt;
    p->node = mp__alloc(ctx, T1 * sizeof *p->node);
    p->pos = mp__alloc(ctx, T1 * sizeof *p->pos);
    p->name = mp__calloc(ctx, T1, sizeof *p->name);
    p->mem = mp__calloc(ctx, T1, sizeof *p->mem);
    p->cost = mp__calloc(ctx, T1, sizeof *p->cost);
    p->flops = mp__calloc(ctx, T1, sizeof *p->flops);
    p->fwd = mp__calloc(ctx, T1, 1);
    p->out = mp__calloc(ctx, T1, 1);
    p->cheap = mp__calloc(ctx, T1, 1);
    p->dep_begin = mp__calloc(ctx, T1 + 1, sizeof *p->dep_begin);
    p->use_begin = mp__calloc(ctx, T1 + 1, sizeof *p->use_begin);
    p->horizon = mp__calloc(ctx, T1, sizeof *p->horizon);
    p->unit_of = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *p->unit_of);
    p->t_last = mp__calloc(ctx, (size_t)nt + 1, sizeof *p->t_last);
    uint32_t *in_idx = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *in_idx);
    uint32_t *stamp = mp__calloc(ctx, T1, sizeof *stamp);
    mp_status st = MP_OK;
    if (!p->node || !p->pos || !p->name || !p->mem || !p->cost ||
        !p->flops || !p->fwd || !p->out || !p->cheap || !p->dep_begin ||
        !p->use_begin ||
        !p->horizon || !p->unit_of || !p->t_last || !in_idx || !stamp) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    for (uint32_t u = 0; u < T; u++) {
        p->node[u] = g->topo[u];
        p->pos[g->topo[u]] = u;
    }
    if ((st = prob_inputs(g, p, in_idx)) ||
        (st = unit_list(g, p, in_idx, FREE_LIST, &p->free_begin,
                        &p->frees)) ||
        (st = unit_list(g, p, in_idx, READ_LIST, &p->read_begin,
                        &p->reads)) ||
        (st = unit_list(g, p, in_idx, ROOT_LIST, &p->root_begin,
                        &p->roots)) || (st = tensor_mem(g, p)) ||
        (st = prob_units(g, p, stamp)) || (st = prob_edges(g, p, stamp)))
        goto done;
    prob_horizons(g, p, in_idx);
    if ((st = prob_locks(g, p)))
        goto done;
    p->persistent = mp__plan_persistent_bytes(g);
    if (p->persistent == UINT64_MAX)
        st = mp__err(ctx, MP_ERR_OVERFLOW, "persistent bytes overflow");
done:
    mp__dealloc(ctx, in_idx);
    mp__dealloc(ctx, stamp);
    if (st)
        mp__remat_prob_free(p);
    return st;
}

/* ---- one plan ------------------------------------------------------------ */
/* The plan of the search's best schedule (its steps pass to the plan);
 * res->peak_bytes becomes the plan's. */
static mp_status plan_best(mp_graph *g, const mp_plan_options *po, double t0,
                           const mp__remat_prob *p, mp__remat_solution *sol,
                           mp_plan **out, mp_remat_result *res)
{
    mp__remat_out o = sol->best;
    sol->best.steps = NULL; /* ownership passes to the plan */
    mp_plan *plan = NULL;
    mp_status st = mp__plan_from_schedule(g, o.steps, o.n_steps, po, t0,
                                          &plan);
    if (st)
        return st;
    /* in-place reuse in mp__plan_from_schedule may only lower the peak */
    if (plan->fig.lower_bound_bytes > o.peak) {
        uint64_t lb = plan->fig.lower_bound_bytes;
        mp_plan_destroy(plan);
        return mp__err(g->ctx, MP_ERR_INTERNAL,
                       "recompute replay peak %llu differs from the plan's "
                       "%llu",
                       (unsigned long long)o.peak, (unsigned long long)lb);
    }
    res->peak_bytes = plan->fig.lower_bound_bytes + p->persistent;
    res->seconds = mp__now_seconds() - t0;
    *out = plan;
    return MP_OK;
}

/* One run of the solvers: they bound the live bytes (the arena's lower
 * bound) by the budget less the persistent bytes. */
static mp_status plan_once(mp_graph *g, const mp_remat_options *ro,
                           const mp_plan_options *po, mp_plan **out,
                           mp_remat_result *res)
{
    if (!g || !out || !res)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = g->ctx;
    *out = NULL;
    memset(res, 0, sizeof *res);
    res->lower_bound_cost = -1;
    mp_remat_options rdef;
    mp_plan_options pdef;
    if (!ro) {
        mp_remat_options_init(&rdef);
        ro = &rdef;
    }
    if (!po) {
        mp_plan_options_init(&pdef);
        po = &pdef;
    }
    if (po->alignment == 0)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "alignment must be >= 1");
    if ((unsigned)ro->solver > MP_REMAT_MINCUT)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "unknown recompute solver %d",
                       (int)ro->solver);
    mp_status st;
    if (!g->finalized && (st = mp_graph_finalize(g)))
        return st;
    double t0 = mp__now_seconds();
    mp__remat_prob p;
    if ((st = mp__remat_prob_build(g, po->alignment, &p)))
        return st;
    /* under a deadline (mp_remat_plan): the models at most 60% of what is
     * left (they use up to 3/4 of their limit), the placement half of
     * what is left then, the refit of mp_remat_plan the rest */
    mp_remat_options rs = *ro;
    mp_plan_options ps = *po;
    if (ctx->deadline != 0)
        rs.time_limit = mp__time_slice(ctx, ro->time_limit > 0
                                                ? ro->time_limit
                                                : 60) * 0.6;
    mp__remat_solution sol;
    st = mp__remat_search(&p, &rs, &sol);
    *res = sol.fig;
    res->seconds = mp__now_seconds() - t0;
    if (ctx->deadline != 0)
        ps.time_limit = mp__time_slice(ctx, 0) / 2;
    mp__progress_phase(ctx, "recompute: placement");
    if (!st)
        st = plan_best(g, &ps, t0, &p, &sol, out, res);
    mp__dealloc(ctx, sol.best.steps);
    mp__remat_prob_free(&p);
    return st;
}

/* ---- within the budget once placed --------------------------------------- */
/* The budget holds for the placed plan (arena + persistent bytes), not
 * only for the live bytes the solvers bound: when the packing of the
 * schedule leaves a gap above its live bytes, the exact offsets tier is
 * asked to fit the budget, and failing that the solvers run again with
 * the budget lowered by the overshoot (at most three times). When none
 * fits once placed, res says both figures over every round: the smallest
 * live peak (min_peak_bytes, maybe within the budget) and the smallest
 * placed peak (min_placed_peak_bytes). */
#define REFIT_ROUNDS 3
static mp_status placed_infeasible(mp_ctx *ctx, mp_remat_result *res,
                                   uint64_t budget, uint64_t live_min,
                                   uint64_t placed_min, uint64_t cap,
                                   uint64_t cap_min)
{
    res->status = MP_SOLVE_INFEASIBLE;
    res->min_peak_bytes = live_min;
    res->min_placed_peak_bytes = placed_min;
    res->peak_bytes = live_min;
    if (!cap)
        return mp__err(ctx, MP_ERR_INFEASIBLE,
                       "no schedule within the budget of %llu bytes once "
                       "placed: the smallest live peak found is %llu bytes "
                       "(live arena + persistent), but the smallest placed "
                       "peak (arena packing + persistent) is %llu bytes",
                       (unsigned long long)budget,
                       (unsigned long long)live_min,
                       (unsigned long long)placed_min);
    return mp__err(ctx, MP_ERR_INFEASIBLE,
                   "no schedule within the budget of %llu bytes once placed: "
                   "the smallest live peak found is %llu bytes (live arena + "
                   "persistent), but the smallest placed peak (arena packing "
                   "+ persistent) is %llu bytes; with the budget for the live "
                   "peak lowered to %llu bytes to leave room for the "
                   "packing, no schedule fits (smallest live peak found "
                   "there %llu bytes)",
                   (unsigned long long)budget, (unsigned long long)live_min,
                   (unsigned long long)placed_min, (unsigned long long)cap,
                   (unsigned long long)cap_min);
}

static mp_status remat_plan(mp_graph *g, const mp_remat_options *ro,
                            const mp_plan_options *po, mp_plan **out,
                            mp_remat_result *res)
{
    mp_status st = plan_once(g, ro, po, out, res);
    if (st || !ro || !ro->budget)
        return st;
    mp_ctx *ctx = g->ctx;
    mp_plan_options pdef;
    if (!po) {
        mp_plan_options_init(&pdef);
        po = &pdef;
    }
    mp_remat_options r = *ro;
    uint64_t live_min = UINT64_MAX, placed_min = UINT64_MAX;
    for (int round = 0;; round++) {
        mp_plan *p = *out;
        /* the schedule's live peak, and the smallest any replay reached */
        if (res->peak_bytes < live_min)
            live_min = res->peak_bytes;
        if (res->min_peak_bytes && res->min_peak_bytes < live_min)
            live_min = res->min_peak_bytes;
        uint64_t pers = p->fig.persistent_bytes;
        uint64_t cap = ro->budget > pers ? ro->budget - pers : 0;
        if ((st = mp__plan_refit(p, po, cap))) {
            mp_plan_destroy(p);
            *out = NULL;
            return st;
        }
        if (p->fig.peak_bytes <= ro->budget)
            return MP_OK;
        uint64_t placed = p->fig.peak_bytes;
        uint64_t over = placed - ro->budget;
        if (placed < placed_min)
            placed_min = placed;
        mp_plan_destroy(p);
        *out = NULL;
        if (round == REFIT_ROUNDS || r.budget <= over + pers)
            return placed_infeasible(ctx, res, ro->budget, live_min,
                                     placed_min, 0, 0);
        r.budget -= over;
        double secs = res->seconds;
        st = plan_once(g, &r, po, out, res);
        res->seconds += secs;
        if (st == MP_ERR_INFEASIBLE) {
            mp_ctx_clear(ctx);
            uint64_t there = res->min_peak_bytes;
            if (there && there < live_min)
                live_min = there;
            return placed_infeasible(ctx, res, ro->budget, live_min,
                                     placed_min, r.budget, there);
        }
        if (st)
            return st;
    }
}

/* po->time_limit bounds the whole run: the solvers, the placement and the
 * refit rounds take what is left of it (mp__time_slice) */
mp_status mp_remat_plan(mp_graph *g, const mp_remat_options *ro,
                        const mp_plan_options *po, mp_plan **out,
                        mp_remat_result *res)
{
    if (!g)
        return MP_ERR_INVALID_ARG;
    double dl = mp__deadline_begin(g->ctx, po ? po->time_limit : 0);
    mp__progress_mark pm;
    mp__progress_begin(g->ctx, &pm, "recompute");
    mp_status st = remat_plan(g, ro, po, out, res);
    if (out && *out)
        mp__plan_progress(*out);
    mp__progress_end(g->ctx, &pm);
    mp__deadline_end(g->ctx, dl);
    return st;
}

/* ---- max batch ----------------------------------------------------------- */
/* g with every arena (non-persistent) tensor's bytes scaled by b / b0,
 * rounded up: activations, gradients and inputs grow with the batch,
 * weights and optimizer state do not. Shapes are dropped (sizes given). */
static mp_status scaled_graph(const mp_graph *g, uint64_t b, uint64_t b0,
                              mp_graph **out)
{
    mp_ctx *ctx = g->ctx;
    mp_graph *s = NULL;
    mp_status st = mp_graph_create(ctx, &s);
    if (st)
        return st;
    for (uint32_t t = 0; t < g->n_tensors && !st; t++) {
        const mp__tensor *tt = &g->tensors[t];
        mp_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = tt->name;
        d.rank = -1;
        d.kind = (mp_tensor_kind)tt->declared_kind;
        uint64_t by = tt->bytes;
        if (!mp__kind_persistent(tt->kind)) {
            uint64_t m;
            if (!mp__mul_u64(by, b, &m) || !mp__add_u64(m, b0 - 1, &m)) {
                st = mp__err(ctx, MP_ERR_OVERFLOW,
                             "tensor '%s' at batch %llu: size overflows",
                             tt->name, (unsigned long long)b);
                break;
            }
            by = m / b0;
        }
        d.bytes = by ? by : 1;
        uint32_t id;
        st = mp_graph_add_tensor(s, &d, &id);
        if (!st) /* an autocast copy stays one (computed every step) */
            s->tensors[id].flags |= tt->flags & MP__TF_NO_FOLD;
        /* a range view's offset, scaled as its bytes are (rounded down:
         * it stays inside its root, whose bytes are rounded up) */
        if (!st && tt->view_off)
            s->tensors[id].view_off =
                mp__kind_persistent(tt->kind)
                    ? tt->view_off
                    : (uint64_t)((unsigned __int128)tt->view_off * b / b0);
    }
    for (uint32_t v = 0; v < g->n_nodes && !st; v++) {
        const mp__node *n = &g->nodes[v];
        mp_node_desc d;
        memset(&d, 0, sizeof d);
        d.name = n->name;
        d.op = n->op;
        d.domain = n->domain;
        d.inputs = n->inputs;
        d.n_inputs = n->n_in;
        d.outputs = n->outputs;
        d.n_outputs = n->n_out;
        d.phase = (mp_phase)n->phase;
        uint32_t id;
        if (!(st = mp_graph_add_node(s, &d, &id)))
            st = mp_graph_set_node_cost(s, id, n->flops, n->bytes_moved,
                                        n->seconds);
        /* the copy carries sizes, not shapes: a view by its readers stays
         * one as decided on the shapes (finalize keeps a view set here) */
        if (!st)
            s->nodes[id].view = n->view;
    }
    for (uint32_t t = 0; t < g->n_tensors && !st; t++)
        if (g->tensors[t].flags & MP__TF_OUTPUT)
            st = mp_graph_mark_output(s, t);
    if (!st)
        st = mp_graph_finalize(s);
    if (st) {
        mp_graph_destroy(s);
        return st;
    }
    *out = s;
    return MP_OK;
}

mp_status mp_remat_max_batch(const mp_graph *g, uint64_t graph_batch,
                             uint64_t max_batch, const mp_remat_options *ro,
                             const mp_plan_options *po, uint64_t *best,
                             mp_remat_result *res)
{
    if (!g || !ro || !best || !res || !graph_batch || !ro->budget)
        return g ? mp__err(g->ctx, MP_ERR_INVALID_ARG,
                           "max batch needs a graph batch >= 1 and a budget")
                 : MP_ERR_INVALID_ARG;
    mp_ctx *ctx = g->ctx;
    if (!g->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    if (max_batch == 0)
        max_batch = 1u << 20;
    *best = 0;
    memset(res, 0, sizeof *res);
    /* bisection on the largest batch that plans within the budget and the
     * cost cap (which scales with the graph: a fraction of its forward
     * compute when ro->max_extra_cost is given as such by the caller) */
    uint64_t lo = 0, hi = max_batch + 1;
    /* po->time_limit bounds the whole bisection: past it, the largest
     * batch found so far */
    double dl = mp__deadline_begin(ctx, po ? po->time_limit : 0);
    mp__progress_mark pm;
    mp__progress_begin(ctx, &pm, "max batch");
    mp_status st = MP_OK;
    while (lo + 1 < hi && !(lo && mp__deadline_passed(ctx))) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (hi > max_batch)
            mp__progress_phase(ctx, "max batch: batch %llu (%llu fits)",
                               (unsigned long long)mid,
                               (unsigned long long)lo);
        else
            mp__progress_phase(ctx,
                               "max batch: batch %llu (%llu fits, %llu "
                               "does not)",
                               (unsigned long long)mid,
                               (unsigned long long)lo,
                               (unsigned long long)hi);
        mp_graph *s = NULL;
        st = scaled_graph(g, mid, graph_batch, &s);
        bool scaled = st == MP_OK;
        mp_remat_result r;
        mp_plan *p = NULL;
        if (scaled)
            st = mp_remat_plan(s, ro, po, &p, &r);
        mp_plan_destroy(p);
        mp_graph_destroy(s);
        if (!scaled) {
            break;
        } else if (st == MP_OK) {
            lo = mid;
            *res = r;
            mp__progress_set(ctx, r.peak_bytes, 0);
        } else if (st == MP_ERR_INFEASIBLE || st == MP_ERR_OVERFLOW) {
            mp_ctx_clear(ctx);
            hi = mid;
        } else {
            break;
        }
        st = MP_OK;
    }
    mp__progress_end(ctx, &pm);
    mp__deadline_end(ctx, dl);
    if (st)
        return st;
    *best = lo;
    if (!lo)
        return mp__err(ctx, MP_ERR_INFEASIBLE,
                       "not even batch 1 fits the budget of %llu bytes",
                       (unsigned long long)ro->budget);
    return MP_OK;
}
