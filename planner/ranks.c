/* The mp_parallel object (memplan/parallel.h): the distinct rank graphs
 * of a training step, their ranks, and the breakdown of a rank plan's
 * peak by role. The graphs are built by planner/parallel.c (data
 * parallelism, ZeRO) and planner/pipeline.c (pipeline stages). */
#include "ranks.h"

#include <string.h>

typedef struct par_rank {
    mp_graph *g;
    uint8_t *role;
    uint32_t n_tensors;
    mp_rank_info info;
} par_rank;

struct mp_parallel {
    mp_ctx *ctx;
    uint32_t dp, n_ranks, n;
    uint32_t per_stage;   /* ranks of one stage: tp x dp */
    uint32_t tp_attn, tp_mlp, tp_vocab, sp_nodes;
    par_rank *r;
};

static mp_status check_options(mp_ctx *ctx, const mp_parallel_options *o)
{
    if (!o->dp)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "parallel: dp (--dp) is 0; give 1 or more "
                       "data-parallel ranks");
    if (o->zero < 0 || o->zero > 3)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "parallel: ZeRO stage (--zero) %d; give 0, 1, 2 or 3",
                       o->zero);
    if (o->prefetch < 0 || o->prefetch > 2)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "parallel: prefetch (--prefetch) %d; give 0, 1 or 2",
                       o->prefetch);
    if (!o->bucket_bytes)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "parallel: bucket size (--bucket-size) 0; give a "
                       "size such as 25MiB");
    if (!o->pp)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "parallel: pp (--pp) is 0; give 1 or more stages");
    if ((unsigned)o->schedule > MP_PP_INTERLEAVED)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "parallel: unknown pipeline schedule %d",
                       (int)o->schedule);
    if (o->pp > 1 && o->microbatches < o->pp)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "parallel: %u micro-batches (--microbatches) for %u "
                       "stages; give at least as many as --pp",
                       (unsigned)o->microbatches, (unsigned)o->pp);
    if (o->schedule == MP_PP_INTERLEAVED && o->pp > 1 &&
        (o->virtual_stages < 1 || o->microbatches % o->pp))
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "parallel: interleaved 1F1B needs --virtual-stages of "
                       "1 or more and --microbatches a multiple of --pp "
                       "(%u micro-batches, %u stages)",
                       (unsigned)o->microbatches, (unsigned)o->pp);
    if (!o->tp)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "parallel: tp (--tp) is 0; give 1 or more "
                       "tensor-parallel ranks");
    if (o->sp && o->tp < 2)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "parallel: sequence parallelism (--sp) splits along "
                       "the tensor-parallel ranks; give --tp 2 or more");
    uint64_t ranks;
    if (!mp__mul_u64(o->dp, o->pp, &ranks) ||
        !mp__mul_u64(ranks, o->tp, &ranks) || ranks > UINT32_MAX)
        return mp__err(ctx, MP_ERR_OVERFLOW, "parallel: tp x dp x pp ranks");
    return MP_OK;
}

/* Takes B's graph and roles as the next distinct rank graph of p
 * (pipeline stage `stage`, holding in_flight micro-batches). */
static mp_status take(mp_parallel *p, mp__pb *B, uint32_t stage,
                      uint32_t in_flight)
{
    par_rank *r = &p->r[p->n++];
    memset(r, 0, sizeof *r);
    r->g = B->g;
    r->role = B->role;
    r->n_tensors = (uint32_t)B->g->n_tensors;
    r->info.graph = B->g;
    r->info.n_ranks = p->per_stage;
    r->info.first_rank = stage * p->per_stage;
    r->info.tp_attention = p->tp_attn;
    r->info.tp_mlp = p->tp_mlp;
    r->info.tp_vocab = p->tp_vocab;
    r->info.sp_nodes = p->sp_nodes;
    r->info.stage = stage;
    r->info.in_flight = in_flight;
    r->info.host_bytes = B->host_bytes;
    /* every collective node of the graph: data-parallel, pipeline and
     * tensor-parallel ones */
    for (uint32_t v = 0; v < B->g->n_nodes; v++)
        r->info.n_collectives +=
            (B->g->nodes[v].def->flags & MP__OPF_COLLECTIVE) != 0;
    B->g = NULL;
    B->role = NULL;
    return MP_OK;
}

void mp_parallel_destroy(mp_parallel *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; i < p->n; i++) {
        mp_graph_destroy(p->r[i].g);
        mp__dealloc(p->ctx, p->r[i].role);
    }
    mp__dealloc(p->ctx, p->r);
    mp__dealloc(p->ctx, p);
}

mp_status mp_parallel_create(const mp_graph *train,
                             const mp_parallel_options *opt,
                             mp_parallel **out)
{
    if (!train || !out)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = train->ctx;
    *out = NULL;
    if (!train->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    mp_parallel_options defs;
    if (!opt) {
        mp_parallel_options_init(&defs);
        opt = &defs;
    }
    mp_status st = check_options(ctx, opt);
    if (st)
        return st;
    mp_parallel *p = mp__calloc(ctx, 1, sizeof *p);
    if (!p)
        return MP_ERR_NOMEM;
    p->ctx = ctx;
    p->dp = opt->dp;
    p->per_stage = opt->dp * opt->tp;
    p->n_ranks = p->per_stage * opt->pp;
    p->r = mp__calloc(ctx, opt->pp, sizeof *p->r);
    if (!p->r) {
        mp__dealloc(ctx, p);
        return MP_ERR_NOMEM;
    }
    mp__pb *B = mp__calloc(ctx, opt->pp, sizeof *B);
    uint32_t *in_flight = mp__calloc(ctx, opt->pp, sizeof *in_flight);
    /* tensor parallelism first: its rank graph is a training graph that
     * the stages and data parallelism then split */
    mp__pb T;
    memset(&T, 0, sizeof T);
    if (!B || !in_flight)
        st = MP_ERR_NOMEM;
    else if (opt->tp > 1 &&
             !(st = mp__parallel_tp(train, opt, &T, &p->tp_attn,
                                    &p->tp_mlp, &p->tp_vocab, &p->sp_nodes)))
        train = T.g;
    if (st)
        ;
    else if (opt->pp > 1)
        st = mp__parallel_pipeline(train, opt, B, in_flight);
    else if (!(st = mp__parallel_dp(train, opt, " (rank)", 1, &B[0])))
        in_flight[0] = 1;
    mp__pb_free(&T);
    for (uint32_t s = 0; s < opt->pp && !st; s++)
        st = take(p, &B[s], s, in_flight[s]);
    for (uint32_t s = 0; B && s < opt->pp; s++)
        mp__pb_free(&B[s]);
    mp__dealloc(ctx, B);
    mp__dealloc(ctx, in_flight);
    if (st) {
        mp_parallel_destroy(p);
        return st;
    }
    *out = p;
    return MP_OK;
}

uint32_t mp_parallel_num_ranks(const mp_parallel *p)
{
    return p ? p->n_ranks : 0;
}

uint32_t mp_parallel_num_distinct(const mp_parallel *p)
{
    return p ? p->n : 0;
}

uint32_t mp_parallel_distinct_of(const mp_parallel *p, uint32_t rank)
{
    if (!p || rank >= p->n_ranks)
        return MP_NONE;
    return rank / p->per_stage;
}

mp_status mp_parallel_rank_info(const mp_parallel *p, uint32_t i,
                                mp_rank_info *out)
{
    if (!p || !out)
        return MP_ERR_INVALID_ARG;
    if (i >= p->n)
        return mp__err(p->ctx, MP_ERR_NOT_FOUND,
                       "parallel: no distinct rank %u (%u in all)",
                       (unsigned)i, (unsigned)p->n);
    *out = p->r[i].info;
    return MP_OK;
}

mp_status mp_parallel_breakdown(const mp_parallel *p, uint32_t i,
                                const mp_plan *plan, mp_rank_breakdown *out)
{
    if (!p || !plan || !out)
        return MP_ERR_INVALID_ARG;
    if (i >= p->n)
        return mp__err(p->ctx, MP_ERR_NOT_FOUND,
                       "parallel: no distinct rank %u (%u in all)",
                       (unsigned)i, (unsigned)p->n);
    const par_rank *r = &p->r[i];
    const mp_graph *g = r->g;
    if (plan->graph != g)
        return mp__err(p->ctx, MP_ERR_INVALID_ARG,
                       "parallel: the plan is not one of rank graph %u",
                       (unsigned)i);
    uint64_t by[MP__ROLE_COMM + 1] = {0};
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->alias_of == MP_NONE && mp__kind_persistent(tt->kind))
            by[t < r->n_tensors && r->role[t] == MP__ROLE_OPT ? MP__ROLE_OPT : MP__ROLE_PARAM] +=
                tt->bytes;
    }
    const mp_figures *f = &plan->fig;
    uint32_t s = f->peak_step;
    for (uint32_t b = 0; b < plan->n_blocks && s < plan->n_steps; b++) {
        const mp_block *bl = &plan->blocks[b];
        if (bl->first <= s && s < bl->end)
            by[bl->tensor < r->n_tensors ? r->role[bl->tensor]
                                         : MP__ROLE_ACT] += bl->size;
    }
    memset(out, 0, sizeof *out);
    out->peak_bytes = f->peak_bytes;
    out->peak_step = s;
    out->param_bytes = by[MP__ROLE_PARAM];
    out->grad_bytes = by[MP__ROLE_GRAD];
    out->optimizer_bytes = by[MP__ROLE_OPT];
    out->activation_bytes = by[MP__ROLE_ACT];
    out->comm_bytes = by[MP__ROLE_COMM];
    out->free_bytes = f->arena_bytes > f->lower_bound_bytes
                          ? f->arena_bytes - f->lower_bound_bytes
                          : 0;
    return MP_OK;
}
