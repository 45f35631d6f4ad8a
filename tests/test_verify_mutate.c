/* Mutation property test of the verifier: valid plans of several graphs
 * (the JSON graphs of examples/: tiny with and without in-place reuse and with fused
 * chains, the transformer block fused, ResNet-50, loop_if, a training
 * step, a training step with recompute, an offload plan) are mutated at
 * random with a fixed seed (offsets, sizes, intervals, tensors, block
 * order, schedule steps, figures, alignment, status, solve time, fused and
 * in-place claims; half the time the figures are then recomputed so that
 * the mutation reaches the deeper checks). Each mutated plan must be either
 * rejected with MP_ERR_VERIFY (exit 5) or be valid by an independent
 * brute-force checker below (pairwise overlaps, live bytes summed per step,
 * each block's start and end justified by a step of the schedule, every
 * read resident), which must then agree with the verifier. Every 16th
 * plan also goes through its JSON text and mp_plan_load_json, which must
 * give the same verdict.
 *
 * MP_MUTATIONS sets the number of mutated plans (default 4000);
 * MP_MUTATION_SEED the seed. docs/memory-model.md records a run of
 * 100,000+. */
#include "sched.h"
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plans --------------------------------------------------------- */
typedef struct base {
    const char *label;
    mp_graph *g, *owned_fwd;
    mp_plan *p;
} base;

enum { MAX_BASES = 12 };
static base bases[MAX_BASES];
static int n_bases;
static mp_ctx *ctx;

static mp_graph *load_example(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/%s", MP_SOURCE_DIR, name);
    mp_graph *g = NULL;
    if (mp_graph_load(ctx, path, &g) != MP_OK) {
        printf("\n  %s: %s\n", path, mp_ctx_message(ctx));
        CU_FAIL("cannot load an example graph");
        return NULL;
    }
    if (!g->finalized && mp_graph_finalize(g) != MP_OK) {
        CU_FAIL("cannot finalize an example graph");
        mp_graph_destroy(g);
        return NULL;
    }
    return g;
}

static void add_base(const char *label, mp_graph *g, mp_graph *owned_fwd,
                     mp_plan *p)
{
    CU_ASSERT_FATAL(n_bases < MAX_BASES);
    /* a base must verify, or the test proves nothing */
    CU_ASSERT_EQUAL_FATAL(mp_verify_plan(g, p), MP_OK);
    bases[n_bases++] = (base){label, g, owned_fwd, p};
}

static void plan_example(const char *label, const char *file, int inplace,
                         int fuse)
{
    mp_graph *g = load_example(file);
    if (!g)
        return;
    mp_plan_options o;
    mp_plan_options_init(&o);
    o.inplace = inplace;
    o.fuse = fuse;
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &p), MP_OK);
    add_base(label, g, NULL, p);
}

static void make_bases(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    n_bases = 0;
    plan_example("tiny", "tiny.json", 1, 0);
    plan_example("tiny --no-inplace", "tiny.json", 0, 0);
    plan_example("tiny --fuse", "tiny.json", 1, 1);
    plan_example("transformer_block --fuse", "transformer_block.json", 1, 1);
    plan_example("resnet50", "resnet50.json", 1, 0);
    plan_example("loop_if", "loop_if.json", 1, 0);
    /* a training step (in-place reuse in the backward pass), and the same
     * with recompute (RECOMPUTE steps) */
    mp_graph *fwd = load_example("tiny.json"), *tg = NULL, *tg2 = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(fwd);
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(fwd, NULL, &tg, NULL), MP_OK);
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(tg, NULL, &p), MP_OK);
    add_base("tiny --train", tg, fwd, p);
    fwd = load_example("transformer_block.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fwd);
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(fwd, NULL, &tg2, NULL), MP_OK);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = MP_REMAT_CHEN_GREEDY;
    mp_remat_result rr;
    p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_remat_plan(tg2, &ro, NULL, &p, &rr), MP_OK);
    uint32_t nrec = 0;
    for (uint32_t s = 0; s < p->n_steps; s++)
        nrec += p->steps[s].kind == MP_STEP_RECOMPUTE;
    CU_ASSERT(nrec > 0);
    add_base("transformer_block --train, recompute", tg2, fwd, p);
    /* a training step with --fuse under the min-cut save choice (a
     * decomposed GELU): fused forward instances of tensors whose
     * recomputed instances keep their blocks, beside RECOMPUTE steps */
    mp_graph *tg3 = mp_test_gelu_train(ctx);
    ro.solver = MP_REMAT_MINCUT;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.fuse = 1;
    p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_remat_plan(tg3, &ro, &po, &p, &rr), MP_OK);
    uint32_t nfused = 0, nkept = 0;
    nrec = 0;
    for (uint32_t s = 0; s < p->n_steps; s++)
        nrec += p->steps[s].kind == MP_STEP_RECOMPUTE;
    for (uint32_t i = 0; i < p->n_blocks; i++)
        nkept += p->fused != NULL && p->fused[p->blocks[i].tensor];
    for (uint32_t t = 0; p->fused && t < tg3->n_tensors; t++)
        nfused += p->fused[t];
    CU_ASSERT(nrec > 0);
    CU_ASSERT(nfused > 0);
    CU_ASSERT(nkept > 0); /* some instance of a fused tensor has a block */
    add_base("GELU MLP --train --fuse, min-cut", tg3, NULL, p);
    /* offload: OFFLOAD and PREFETCH steps (docs/offload.md) */
    mp_graph *og = load_example("offload/skip_chain.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(og);
    mp_offload_options oo;
    mp_offload_options_init(&oo);
    oo.budget = 850ull << 20;
    mp_offload_result orr;
    p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(og, &oo, NULL, &p, &orr), MP_OK);
    CU_ASSERT(orr.n_offloaded > 0);
    add_base("skip_chain --offload", og, NULL, p);
}

static void free_bases(void)
{
    for (int i = 0; i < n_bases; i++) {
        mp_plan_destroy(bases[i].p);
        mp_graph_destroy(bases[i].g);
        mp_graph_destroy(bases[i].owned_fwd);
    }
    n_bases = 0;
    mp_ctx_destroy(ctx);
    ctx = NULL;
}

/* ---- a mutable copy of a plan ------------------------------------------- */
typedef struct mplan {
    mp_plan p;           /* arrays below; never mp_plan_destroy'd */
    uint32_t cap_steps, cap_blocks;
} mplan;

static void copy_plan(mplan *m, const mp_plan *src, size_t nt)
{
    m->p = *src;
    m->p.live = NULL;
    m->p.block_pool = NULL;
    m->p.pools = NULL;
    m->p.n_pools = 0;
    m->cap_steps = src->n_steps + 2;
    m->cap_blocks = src->n_blocks + 2;
    m->p.steps = malloc(m->cap_steps * sizeof *m->p.steps);
    m->p.blocks = malloc(m->cap_blocks * sizeof *m->p.blocks);
    m->p.block_over = malloc(m->cap_blocks * sizeof *m->p.block_over);
    m->p.fused = calloc(nt + 1, 1);
    CU_ASSERT_FATAL(m->p.steps && m->p.blocks && m->p.block_over &&
                    m->p.fused);
    memcpy(m->p.steps, src->steps, src->n_steps * sizeof *src->steps);
    memcpy(m->p.blocks, src->blocks, src->n_blocks * sizeof *src->blocks);
    for (uint32_t i = 0; i < src->n_blocks; i++)
        m->p.block_over[i] = src->block_over ? src->block_over[i] : MP_NONE;
    if (src->fused)
        memcpy(m->p.fused, src->fused, nt);
    m->p.fig.solver = m->p.solver_name;
}

static void free_mplan(mplan *m)
{
    free(m->p.steps);
    free(m->p.blocks);
    free(m->p.block_over);
    free(m->p.fused);
}

/* ---- the independent checker ------------------------------------------- */
typedef struct oracle {
    const mp_graph *g;
    const mp_plan *p;
    uint64_t persistent;  /* of the graph: from the unmutated plan */
    char why[200];
} oracle;

static bool bad(oracle *o, const char *why)
{
    snprintf(o->why, sizeof o->why, "%s", why);
    return false;
}

static bool in_arena(const mp__tensor *t)
{
    return t->alias_of == MP_NONE && t->kind != MP_KIND_WEIGHT &&
           t->kind != MP_KIND_CONSTANT && t->kind != MP_KIND_OPTIMIZER_STATE &&
           t->bytes > 0;
}

static bool takes_no_memory(const mp_graph *g, uint32_t r)
{
    const mp__tensor *t = &g->tensors[r];
    return t->kind == MP_KIND_WEIGHT || t->kind == MP_KIND_CONSTANT ||
           t->kind == MP_KIND_OPTIMIZER_STATE || t->bytes == 0;
}

static bool is_node_step(const mp_step *s)
{
    return s->kind == MP_STEP_COMPUTE || s->kind == MP_STEP_RECOMPUTE;
}

static bool fused(const mp_plan *p, uint32_t t)
{
    return p->fused && p->fused[t];
}

static bool pointwise_one_out(const mp__node *n, uint32_t *out)
{
    uint32_t k = 0;
    for (uint32_t o = 0; o < n->n_out; o++)
        if (n->outputs[o] != MP_NONE) {
            *out = n->outputs[o];
            k++;
        }
    return k == 1 && mp__node_pointwise(n);
}

/* tensor t has a block live at step s, or one that ends at s taken over
 * in place by output 0 of node (the node at step s) */
static bool resident(const oracle *o, uint32_t t, uint32_t s, uint32_t node)
{
    const mp_plan *p = o->p;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        if (b->tensor != t)
            continue;
        if (b->first <= s && s < b->end)
            return true;
        if (b->end == s)
            for (uint32_t j = 0; j < p->n_blocks; j++)
                if (p->block_over[j] == t && p->blocks[j].first == s &&
                    p->blocks[j].tensor == o->g->nodes[node].outputs[0])
                    return true;
    }
    return false;
}

/* the node step before step s, or MP_NONE */
static uint32_t node_step_before(const mp_plan *p, uint32_t s)
{
    while (s-- > 0)
        if (is_node_step(&p->steps[s]))
            return s;
    return MP_NONE;
}

/* the tensor of the fused instance node step q writes: an output marked
 * fused with no block starting at q; else MP_NONE */
static uint32_t fused_instance(const oracle *o, uint32_t q)
{
    const mp_plan *p = o->p;
    const mp__node *n = &o->g->nodes[p->steps[q].index];
    for (uint32_t k = 0; k < n->n_out; k++) {
        uint32_t t = n->outputs[k];
        if (t == MP_NONE || !in_arena(&o->g->tensors[t]) || !fused(p, t))
            continue;
        bool block = false;
        for (uint32_t i = 0; i < p->n_blocks; i++)
            block |= p->blocks[i].tensor == t && p->blocks[i].first == q;
        if (!block)
            return t;
    }
    return MP_NONE;
}

/* the fused instance node step q reads: written by the node step before */
static uint32_t fused_input_at(const oracle *o, uint32_t q)
{
    uint32_t b = node_step_before(o->p, q);
    return b == MP_NONE ? MP_NONE : fused_instance(o, b);
}

/* every arena input of node step q (through fused chains) is resident at
 * step s, where node `at` runs */
static bool chain_inputs_resident(const oracle *o, uint32_t q, uint32_t s,
                                  uint32_t at)
{
    const mp_graph *g = o->g;
    const mp__node *nd = &g->nodes[o->p->steps[q].index];
    uint32_t fin = fused_input_at(o, q);
    for (uint32_t i = 0; i < nd->n_in; i++) {
        if (nd->inputs[i] == MP_NONE)
            continue;
        uint32_t r = g->tensors[nd->inputs[i]].root;
        if (takes_no_memory(g, r))
            continue;
        if (r == fin) {
            if (!chain_inputs_resident(o, node_step_before(o->p, q), s, at))
                return false;
        } else if (!resident(o, r, s, at)) {
            return false;
        }
    }
    return true;
}

static bool overwrites(const oracle *o, uint32_t q, uint32_t x)
{
    const mp_graph *g = o->g;
    const mp__node *nd = &g->nodes[o->p->steps[q].index];
    uint32_t fin = fused_input_at(o, q);
    for (uint32_t i = 0; i < nd->n_in; i++) {
        if (nd->inputs[i] == MP_NONE)
            continue;
        uint32_t r = g->tensors[nd->inputs[i]].root;
        if (r == fin) {
            if (overwrites(o, node_step_before(o->p, q), x))
                return true;
        } else if (r == x && mp__op_may_overwrite(nd->def, i)) {
            return true;
        }
    }
    return false;
}

static bool check_numbers(oracle *o)
{
    const mp_graph *g = o->g;
    const mp_plan *p = o->p;
    const mp_figures *f = &p->fig;
    uint64_t a = f->alignment;
    if (a == 0)
        return bad(o, "alignment 0");
    if (!(f->solve_seconds >= 0) || isinf(f->solve_seconds))
        return bad(o, "solve time");
    if (f->status != MP_SOLVE_OPTIMAL && f->status != MP_SOLVE_FEASIBLE)
        return bad(o, "status");
    uint64_t arena = 0, no_reuse = 0;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        if (b->tensor >= g->n_tensors || !in_arena(&g->tensors[b->tensor]))
            return bad(o, "block of a tensor not in the arena");
        uint64_t bytes = g->tensors[b->tensor].bytes;
        uint64_t want = bytes + (a - 1 - (bytes - 1) % a);
        if (want < bytes || b->size != want)
            return bad(o, "block size");
        if (b->offset % a)
            return bad(o, "offset alignment");
        if (b->first >= b->end || b->end > p->n_steps)
            return bad(o, "interval");
        if (b->offset + b->size < b->offset)
            return bad(o, "offset overflow");
        if (b->offset + b->size > arena)
            arena = b->offset + b->size;
        if (no_reuse + b->size < no_reuse)
            return bad(o, "no-reuse overflow");
        no_reuse += b->size;
    }
    if (arena != f->arena_bytes || no_reuse != f->no_reuse_bytes)
        return bad(o, "arena or no-reuse figure");
    uint64_t lb = 0;
    uint32_t peak_step = 0;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        uint64_t live = 0;
        for (uint32_t i = 0; i < p->n_blocks; i++)
            if (p->blocks[i].first <= s && s < p->blocks[i].end)
                live += p->blocks[i].size; /* <= no_reuse: no overflow */
        if (live > lb) {
            lb = live;
            peak_step = s;
        }
    }
    if (lb != f->lower_bound_bytes || peak_step != f->peak_step)
        return bad(o, "lower bound or peak step");
    if (f->persistent_bytes != o->persistent ||
        arena + o->persistent < arena ||
        f->peak_bytes != arena + o->persistent)
        return bad(o, "persistent or peak");
    if (f->status != (arena == lb ? MP_SOLVE_OPTIMAL : MP_SOLVE_FEASIBLE))
        return bad(o, "status against arena and bound");
    /* blocks live at one time are apart in memory (both intervals are
     * half-open) */
    for (uint32_t i = 0; i < p->n_blocks; i++)
        for (uint32_t j = i + 1; j < p->n_blocks; j++) {
            const mp_block *x = &p->blocks[i], *y = &p->blocks[j];
            bool time = x->first < y->end && y->first < x->end;
            bool mem = x->offset < y->offset + y->size &&
                       y->offset < x->offset + x->size;
            if (time && mem)
                return bad(o, "overlap");
            if (time && x->tensor == y->tensor)
                return bad(o, "one tensor in two blocks at once");
        }
    return true;
}

/* a tensor marked fused: an arena tensor a pointwise node with one
 * output writes, not a graph output (each instance of it without a block
 * is checked in check_steps) */
static bool check_fused(oracle *o)
{
    const mp_graph *g = o->g;
    const mp_plan *p = o->p;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        if (!fused(p, t))
            continue;
        const mp__tensor *tt = &g->tensors[t];
        uint32_t ignore;
        if (!in_arena(tt) || tt->producer == MP_NONE ||
            !pointwise_one_out(&g->nodes[tt->producer], &ignore) ||
            (tt->flags & MP__TF_OUTPUT))
            return bad(o, "fused tensor breaks the rule");
    }
    return true;
}

/* each block's start: the node step computing it, a PREFETCH after an
 * OFFLOAD, or step 0 for a graph input that is read; an in-place claim
 * legal */
static bool check_starts(oracle *o)
{
    const mp_graph *g = o->g;
    const mp_plan *p = o->p;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        const mp__tensor *tt = &g->tensors[b->tensor];
        const mp_step *st = &p->steps[b->first];
        uint32_t x = p->block_over[i];
        bool ok = false;
        if (is_node_step(st)) {
            const mp__node *n = &g->nodes[st->index];
            for (uint32_t k = 0; k < n->n_out; k++)
                ok |= n->outputs[k] == b->tensor;
            if (x != MP_NONE) {
                if (n->outputs[0] != b->tensor || x >= g->n_tensors)
                    return bad(o, "in place: not output 0");
                const mp__tensor *tx = &g->tensors[x];
                if (!in_arena(tx) || tx->producer == MP_NONE ||
                    (tx->flags & MP__TF_OUTPUT) || tx->bytes != tt->bytes ||
                    !overwrites(o, b->first, x))
                    return bad(o, "in place: illegal");
                bool same = false;
                for (uint32_t j = 0; j < p->n_blocks; j++) {
                    const mp_block *a = &p->blocks[j];
                    same |= a->tensor == x && a->end == b->first &&
                            a->offset == b->offset && a->size == b->size;
                }
                if (!same)
                    return bad(o, "in place: not on the tensor's block");
            }
        } else if (x != MP_NONE) {
            return bad(o, "in place claimed outside a node step");
        } else if (st->kind == MP_STEP_PREFETCH && st->index == b->tensor) {
            for (uint32_t s = 0; s < b->first; s++)
                ok |= p->steps[s].kind == MP_STEP_OFFLOAD &&
                      p->steps[s].index == b->tensor;
        }
        if (!ok && b->first == 0 && tt->producer == MP_NONE &&
            x == MP_NONE && (tt->n_cons || (tt->flags & MP__TF_OUTPUT))) {
            ok = true;
            for (uint32_t j = 0; j < p->n_blocks; j++)
                if (j != i && p->blocks[j].tensor == b->tensor &&
                    p->blocks[j].first < b->first)
                    ok = false;
        }
        if (!ok)
            return bad(o, "block start not justified");
    }
    return true;
}

/* each block's end: a FREE (not of a graph output) or OFFLOAD of its
 * tensor there, an in-place take-over there, or the end of the schedule */
static bool check_ends(oracle *o)
{
    const mp_graph *g = o->g;
    const mp_plan *p = o->p;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        if (b->end == p->n_steps)
            continue;
        const mp_step *st = &p->steps[b->end];
        bool ok = (st->kind == MP_STEP_FREE || st->kind == MP_STEP_OFFLOAD) &&
                  st->index == b->tensor &&
                  !(st->kind == MP_STEP_FREE &&
                    (g->tensors[b->tensor].flags & MP__TF_OUTPUT));
        for (uint32_t j = 0; j < p->n_blocks && !ok; j++)
            ok = p->block_over[j] == b->tensor &&
                 p->blocks[j].first == b->end;
        if (!ok)
            return bad(o, "block end not justified");
    }
    return true;
}

/* the schedule: every step's tensor or node; FREE/OFFLOAD end a block and
 * PREFETCH starts one; nodes computed once (RECOMPUTE after), their arena
 * outputs given a block there, their inputs resident; graph inputs that
 * are read and graph outputs resident at the ends */
static bool check_steps(oracle *o)
{
    const mp_graph *g = o->g;
    const mp_plan *p = o->p;
    uint8_t *done = calloc(g->n_nodes + 1, 1);
    /* persistent tensors an optimizer step has updated in place: no other
     * node may read them after it */
    uint8_t *updated = calloc(g->n_tensors + 1, 1);
    CU_ASSERT_FATAL(done != NULL && updated != NULL);
    uint32_t prev = MP_NONE;
    bool ok = true;
    for (uint32_t s = 0; s < p->n_steps && ok; s++) {
        const mp_step *st = &p->steps[s];
        if ((unsigned)st->kind > MP_STEP_PREFETCH ||
            st->index >= (is_node_step(st) ? g->n_nodes : g->n_tensors)) {
            ok = bad(o, "step out of range");
            break;
        }
        if (!is_node_step(st)) {
            const mp__tensor *tt = &g->tensors[st->index];
            bool found = false;
            for (uint32_t i = 0; i < p->n_blocks; i++)
                found |= p->blocks[i].tensor == st->index &&
                         (st->kind == MP_STEP_PREFETCH ? p->blocks[i].first
                                                       : p->blocks[i].end) == s;
            if (!in_arena(tt) || !found ||
                (st->kind == MP_STEP_FREE && (tt->flags & MP__TF_OUTPUT)))
                ok = bad(o, "FREE/OFFLOAD/PREFETCH without its block");
            continue;
        }
        const mp__node *n = &g->nodes[st->index];
        if ((st->kind == MP_STEP_COMPUTE) == (done[st->index] != 0)) {
            ok = bad(o, "computed twice or recomputed first");
            break;
        }
        done[st->index] = 1;
        /* the fused instance the node step before wrote: read here by a
         * pointwise node with one output of its size */
        uint32_t fin = prev == MP_NONE ? MP_NONE : fused_instance(o, prev);
        if (fin != MP_NONE) {
            bool reads = false;
            uint32_t z = MP_NONE;
            for (uint32_t i = 0; i < n->n_in; i++)
                reads |= n->inputs[i] != MP_NONE &&
                         g->tensors[n->inputs[i]].root == fin;
            if (!reads || !pointwise_one_out(n, &z) ||
                g->tensors[z].bytes != g->tensors[fin].bytes)
                ok = bad(o, "fused value's reader");
        }
        for (uint32_t i = 0; i < n->n_in && ok; i++) {
            if (n->inputs[i] == MP_NONE)
                continue;
            uint32_t r = g->tensors[n->inputs[i]].root;
            uint8_t rk = g->tensors[r].kind;
            if (rk == MP_KIND_WEIGHT || rk == MP_KIND_CONSTANT ||
                rk == MP_KIND_OPTIMIZER_STATE) {
                if (n->phase == MP_PHASE_OPTIMIZER)
                    updated[r] = 1;
                else if (updated[r])
                    ok = bad(o, "reads a weight its optimizer step updated");
            }
            if (takes_no_memory(g, r))
                continue;
            if (r == fin) {
                if (!chain_inputs_resident(o, s, s, st->index))
                    ok = bad(o, "fused chain's input");
            } else if (!resident(o, r, s, st->index)) {
                ok = bad(o, "input not resident");
            }
        }
        uint32_t fout = fused_instance(o, s);
        for (uint32_t k = 0; k < n->n_out && ok; k++) {
            uint32_t t = n->outputs[k];
            if (t == MP_NONE || !in_arena(&g->tensors[t]))
                continue;
            bool found = false, live = false;
            for (uint32_t i = 0; i < p->n_blocks; i++) {
                const mp_block *bl = &p->blocks[i];
                found |= bl->tensor == t && bl->first == s;
                live |= bl->tensor == t && bl->first < s && s < bl->end;
            }
            if (t == fout && live)
                ok = bad(o, "fused value written while resident");
            else if (t != fout && !found)
                ok = bad(o, "output without a block");
        }
        prev = s;
    }
    if (ok && prev != MP_NONE && fused_instance(o, prev) != MP_NONE)
        ok = bad(o, "fused value never read");
    for (uint32_t v = 0; v < g->n_nodes && ok; v++)
        if (!done[v])
            ok = bad(o, "node never computed");
    free(done);
    free(updated);
    for (uint32_t t = 0; t < g->n_tensors && ok; t++) {
        const mp__tensor *tt = &g->tensors[t];
        uint32_t r = tt->root;
        bool need_start = tt->producer == MP_NONE && in_arena(tt) &&
                          (tt->n_cons || (tt->flags & MP__TF_OUTPUT));
        bool need_end = (tt->flags & MP__TF_OUTPUT) && !takes_no_memory(g, r);
        bool has_start = false, has_end = false;
        for (uint32_t i = 0; i < p->n_blocks; i++) {
            has_start |= p->blocks[i].tensor == t && p->blocks[i].first == 0;
            has_end |= p->blocks[i].tensor == r &&
                       p->blocks[i].end == p->n_steps;
        }
        if ((need_start && !has_start) || (need_end && !has_end))
            ok = bad(o, "graph input or output not resident");
    }
    return ok;
}

static bool oracle_valid(oracle *o)
{
    o->why[0] = 0;
    return check_numbers(o) && check_fused(o) && check_starts(o) &&
           check_ends(o) && check_steps(o);
}

/* ---- mutations ------------------------------------------------------------ */
static uint64_t rng;

static uint64_t rnd(uint64_t n)
{
    return n ? mp_test_rand(&rng) % n : 0;
}

static uint64_t odd_value(uint64_t v, uint64_t align)
{
    static const uint64_t fixed[] = {0, 1, 255, 256, 4096,
                                     UINT64_MAX - 255, UINT64_MAX,
                                     (uint64_t)1 << 63, UINT32_MAX};
    switch (rnd(8)) {
    case 0: return v + align;
    case 1: return v - align;
    case 2: return v + 1;
    case 3: return v - 1;
    case 4: return v * 2;
    case 5: return v / 2;
    case 6: return fixed[rnd(sizeof fixed / sizeof *fixed)];
    default: return rnd(v + 1);
    }
}

/* the figures as a planner would state them for the blocks as they are
 * (independently of the verifier) */
static void refigure(mplan *m, uint64_t persistent)
{
    mp_plan *p = &m->p;
    uint64_t arena = 0, no_reuse = 0, lb = 0;
    uint32_t peak = 0;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        uint64_t e = p->blocks[i].offset + p->blocks[i].size;
        arena = e > arena ? e : arena;
        no_reuse += p->blocks[i].size;
    }
    for (uint32_t s = 0; s < p->n_steps; s++) {
        uint64_t live = 0;
        for (uint32_t i = 0; i < p->n_blocks; i++)
            if (p->blocks[i].first <= s && s < p->blocks[i].end)
                live += p->blocks[i].size;
        if (live > lb) {
            lb = live;
            peak = s;
        }
    }
    p->fig.arena_bytes = arena;
    p->fig.no_reuse_bytes = no_reuse;
    p->fig.lower_bound_bytes = lb;
    p->fig.peak_step = peak;
    p->fig.persistent_bytes = persistent;
    p->fig.peak_bytes = arena + persistent;
    p->fig.status = arena == lb ? MP_SOLVE_OPTIMAL : MP_SOLVE_FEASIBLE;
}

/* the blocks' sizes for another alignment (offsets kept) */
static void realign(mplan *m, const mp_graph *g, uint64_t a)
{
    m->p.fig.alignment = a;
    for (uint32_t i = 0; i < m->p.n_blocks; i++) {
        uint64_t b = g->tensors[m->p.blocks[i].tensor].bytes;
        m->p.blocks[i].size = (b + a - 1) / a * a;
    }
}

/* Blocks derived again from the schedule (which a mutation may have
 * changed), without in-place reuse or fusion, stacked one above the
 * other: a valid plan whenever the schedule is one. */
static const char *restack(mplan *m, const mp_graph *g)
{
    mp_plan *p = &m->p;
    mp_block *nb = NULL;
    uint32_t n = 0;
    uint64_t a = p->fig.alignment ? p->fig.alignment : 1;
    if (mp__schedule_blocks(g, p->steps, p->n_steps, a, NULL, NULL, &nb, &n,
                            NULL) != MP_OK) {
        mp_ctx_clear(ctx);
        return "schedule not re-derived";
    }
    if (n > m->cap_blocks) {
        m->cap_blocks = n;
        p->blocks = realloc(p->blocks, n * sizeof *p->blocks);
        p->block_over = realloc(p->block_over, n * sizeof *p->block_over);
        CU_ASSERT_FATAL(p->blocks && p->block_over);
    }
    uint64_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        p->blocks[i] = nb[i];
        p->blocks[i].offset = off;
        off += nb[i].size;
        p->block_over[i] = MP_NONE;
    }
    p->n_blocks = n;
    memset(p->fused, 0, g->n_tensors);
    mp_free(ctx, nb);
    return "blocks re-derived";
}

static const char *mutate_one(mplan *m, const mp_graph *g)
{
    mp_plan *p = &m->p;
    mp_figures *f = &p->fig;
    uint32_t nb = p->n_blocks, ns = p->n_steps;
    uint32_t nt = (uint32_t)g->n_tensors, nn = (uint32_t)g->n_nodes;
    uint64_t a = f->alignment ? f->alignment : 1;
    mp_block *b = nb ? &p->blocks[rnd(nb)] : NULL;
    switch (rnd(23)) {
    case 0:
        if (!b)
            return "none";
        b->offset = odd_value(b->offset, a);
        return "offset";
    case 1:
        if (!b)
            return "none";
        b->offset = rnd(f->arena_bytes / a + 2) * a; /* an aligned place */
        return "offset aligned";
    case 2:
        if (!b)
            return "none";
        b->size = odd_value(b->size, a);
        return "size";
    case 3:
        if (!b)
            return "none";
        if (rnd(2))
            b->first = (uint32_t)odd_value(b->first, 1);
        else
            b->end = (uint32_t)odd_value(b->end, 1);
        return "interval";
    case 4:
        if (!b)
            return "none";
        b->tensor = (uint32_t)(rnd(2) ? rnd(nt) : p->blocks[rnd(nb)].tensor);
        return "block tensor";
    case 5:
        if (nb < 2)
            return "none";
        {
            uint32_t i = (uint32_t)rnd(nb), j = (uint32_t)rnd(nb);
            mp_block t = p->blocks[i];
            uint32_t ov = p->block_over[i];
            p->blocks[i] = p->blocks[j];
            p->block_over[i] = p->block_over[j];
            p->blocks[j] = t;
            p->block_over[j] = ov;
        }
        return "block order"; /* valid: the order of blocks is free */
    case 6:
        if (!nb)
            return "none";
        {
            uint32_t i = (uint32_t)rnd(nb);
            memmove(&p->blocks[i], &p->blocks[i + 1],
                    (nb - i - 1) * sizeof *p->blocks);
            memmove(&p->block_over[i], &p->block_over[i + 1],
                    (nb - i - 1) * sizeof *p->block_over);
            p->n_blocks--;
        }
        return "block removed";
    case 7:
        if (!nb || nb + 1 > m->cap_blocks)
            return "none";
        {
            uint32_t i = (uint32_t)rnd(nb);
            p->blocks[nb] = p->blocks[i];
            p->block_over[nb] = p->block_over[i];
            if (rnd(2))
                p->blocks[nb].first = (uint32_t)rnd(ns + 1);
            p->n_blocks++;
        }
        return "block added";
    case 8:
        if (ns < 2)
            return "none";
        {
            uint32_t i = (uint32_t)rnd(ns - 1),
                     j = rnd(2) ? i + 1 : (uint32_t)rnd(ns);
            mp_step t = p->steps[i];
            p->steps[i] = p->steps[j];
            p->steps[j] = t;
        }
        return "steps swapped";
    case 9:
        if (!ns)
            return "none";
        {
            uint32_t i = (uint32_t)rnd(ns);
            memmove(&p->steps[i], &p->steps[i + 1],
                    (ns - i - 1) * sizeof *p->steps);
            p->n_steps--;
        }
        return "step removed";
    case 10:
        if (!ns || ns + 1 > m->cap_steps)
            return "none";
        {
            uint32_t i = (uint32_t)rnd(ns);
            memmove(&p->steps[i + 1], &p->steps[i],
                    (ns - i) * sizeof *p->steps);
            p->n_steps++;
        }
        return "step duplicated";
    case 11:
        if (!ns)
            return "none";
        {
            mp_step *s = &p->steps[rnd(ns)];
            s->kind = (mp_step_kind)rnd(MP_STEP_PREFETCH + 1);
            uint32_t lim = is_node_step(s) ? nn : nt;
            if (rnd(2) || s->index >= lim)
                s->index = (uint32_t)rnd(lim);
        }
        return "step kind or index";
    case 12: {
        uint64_t *figs[] = {&f->lower_bound_bytes, &f->arena_bytes,
                            &f->persistent_bytes, &f->peak_bytes,
                            &f->no_reuse_bytes};
        uint64_t *x = figs[rnd(5)];
        *x = odd_value(*x, a);
        return "figure";
    }
    case 13:
        f->peak_step = (uint32_t)(rnd(3) ? rnd(ns + 2) : odd_value(f->peak_step, 1));
        return "peak step";
    case 14: {
        static const uint64_t al[] = {0, 1, 2, 3, 8, 64, 128, 512, 4096,
                                      (uint64_t)1 << 63};
        uint64_t na = al[rnd(sizeof al / sizeof *al)];
        if (na && rnd(2))
            realign(m, g, na); /* sizes follow: often a valid plan */
        else
            f->alignment = na;
        return "alignment";
    }
    case 15:
        f->status = (mp_solve_status)rnd(MP_SOLVE_TIMEOUT + 1);
        return "status";
    case 16: {
        static const double sec[] = {-1.0, -1e-9, 0.0, -0.0, 1e9, 3.5,
                                     -INFINITY, INFINITY};
        f->solve_seconds = rnd(2) ? sec[rnd(8)] : NAN;
        return "solve seconds";
    }
    case 17:
        snprintf(p->solver_name, sizeof p->solver_name, "mutant-%u",
                 (unsigned)rnd(100));
        return "solver name"; /* valid: the name is free text */
    case 18: {
        uint32_t t = (uint32_t)rnd(nt);
        p->fused[t] ^= 1;
        return "fused";
    }
    case 19:
        if (!b)
            return "none";
        p->block_over[b - p->blocks] =
            rnd(3) == 0 ? MP_NONE
            : rnd(2)    ? (uint32_t)rnd(nt)
                        : p->blocks[rnd(nb)].tensor;
        return "in place";
    case 21:
        if (!b)
            return "none";
        /* an instance claimed fused: its block removed and its tensor
         * marked (legal only where the fusion rule holds there) */
        p->fused[b->tensor] = 1;
        memmove(b, b + 1, (nb - 1 - (uint32_t)(b - p->blocks)) * sizeof *b);
        memmove(&p->block_over[b - p->blocks],
                &p->block_over[b - p->blocks + 1],
                (nb - 1 - (uint32_t)(b - p->blocks)) * sizeof *p->block_over);
        p->n_blocks--;
        return "instance fused";
    case 20:
        if (!b)
            return "none";
        /* move a block to the top of the arena: valid when nothing else
         * broke; the figures are restated below */
        b->offset = (f->arena_bytes + a - 1) / a * a;
        return "block to the top";
    default:
        if (nb < 2)
            return "none";
        {
            mp_block *c = &p->blocks[rnd(nb)];
            uint64_t t = b->offset;
            b->offset = c->offset;
            c->offset = t;
        }
        return "offsets swapped";
    }
}

/* ---- the run ----------------------------------------------------------- */
typedef struct tally {
    unsigned long total, rejected, accepted, bad_accept, bad_reject,
        bad_status, json, json_mismatch;
    unsigned long new_schedule; /* accepted with another schedule */
} tally;

static char json_path[512];

/* the plan through its JSON text and the loader: the same verdict */
static void via_json(const base *bs, mplan *m, mp_status direct, tally *t)
{
    if (!isfinite(m->p.fig.solve_seconds))
        return; /* JSON has no NaN or infinity */
    char *text = NULL;
    mp_status st = mp_plan_to_json_string(&m->p, &text);
    CU_ASSERT_EQUAL(st, MP_OK);
    if (st)
        return;
    FILE *fp = fopen(json_path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs(text, fp);
    fclose(fp);
    mp_free(ctx, text);
    mp_plan *q = NULL;
    st = mp_plan_load_json(bs->g, json_path, &q);
    if (st == MP_OK)
        st = mp_verify_plan(bs->g, q);
    mp_plan_destroy(q);
    t->json++;
    if (st != direct) {
        t->json_mismatch++;
        if (t->json_mismatch <= 3)
            printf("\n  %s: through JSON %s, in memory %s: %s\n", bs->label,
                   mp_status_str(st), mp_status_str(direct),
                   mp_ctx_message(ctx));
    }
}

static void run_base(const base *bs, unsigned long count, tally *t)
{
    const mp_graph *g = bs->g;
    uint64_t persistent = bs->p->fig.persistent_bytes;
    for (unsigned long k = 0; k < count; k++) {
        mplan m;
        copy_plan(&m, bs->p, g->n_tensors);
        char what[200] = "";
        int n_mut = 1 + (int)rnd(3);
        for (int i = 0; i < n_mut; i++) {
            const char *w = mutate_one(&m, g);
            size_t len = strlen(what);
            snprintf(what + len, sizeof what - len, "%s%s", i ? ", " : "", w);
        }
        if (rnd(8) == 0) {
            size_t len = strlen(what);
            snprintf(what + len, sizeof what - len, ", %s", restack(&m, g));
        }
        if (rnd(2))
            refigure(&m, persistent);
        mp_status st = mp_verify_plan(g, &m.p);
        oracle o = {g, &m.p, persistent, {0}};
        bool valid = oracle_valid(&o);
        t->total++;
        if (st == MP_OK) {
            t->accepted++;
            t->new_schedule +=
                m.p.n_steps != bs->p->n_steps ||
                memcmp(m.p.steps, bs->p->steps,
                       m.p.n_steps * sizeof *m.p.steps) != 0;
            if (!valid) {
                t->bad_accept++;
                if (t->bad_accept <= 5)
                    printf("\n  %s: accepted an invalid plan (%s): %s\n",
                           bs->label, what, o.why);
            }
        } else if (st == MP_ERR_VERIFY) {
            t->rejected++;
            if (valid) {
                t->bad_reject++;
                if (t->bad_reject <= 5)
                    printf("\n  %s: rejected a valid plan (%s): %s\n",
                           bs->label, what, mp_ctx_message(ctx));
            }
        } else {
            t->bad_status++;
            if (t->bad_status <= 5)
                printf("\n  %s: status %s (%s): %s\n", bs->label,
                       mp_status_str(st), what, mp_ctx_message(ctx));
        }
        if (k % 16 == 0)
            via_json(bs, &m, st, t);
        free_mplan(&m);
    }
}

static void t_mutations(void)
{
    make_bases();
    const char *env = getenv("MP_MUTATIONS");
    const char *senv = getenv("MP_MUTATION_SEED");
    unsigned long total = env ? strtoul(env, NULL, 10) : 4000;
    rng = senv ? strtoull(senv, NULL, 10) : 0x5eed1234abcdULL;
    if (!rng)
        rng = 1;
    const char *tmp = mp_test_write_temp(".json", "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
    snprintf(json_path, sizeof json_path, "%s", tmp);
    tally all = {0};
    for (int i = 0; i < n_bases; i++) {
        tally t = {0};
        unsigned long count = total / (unsigned long)n_bases +
                              ((unsigned long)i < total % (unsigned long)n_bases);
        run_base(&bases[i], count, &t);
        printf("\n  %-38s %6lu plans: %6lu rejected, %5lu valid and "
               "accepted (%lu with another schedule); wrongly accepted %lu, "
               "wrongly rejected %lu",
               bases[i].label, t.total, t.rejected, t.accepted,
               t.new_schedule, t.bad_accept, t.bad_reject);
        all.total += t.total;
        all.rejected += t.rejected;
        all.accepted += t.accepted;
        all.new_schedule += t.new_schedule;
        all.bad_accept += t.bad_accept;
        all.bad_reject += t.bad_reject;
        all.bad_status += t.bad_status;
        all.json += t.json;
        all.json_mismatch += t.json_mismatch;
    }
    printf("\n  all: %lu mutated plans (seed %s), %lu rejected (MP_ERR_VERIFY), "
           "%lu valid and accepted (%lu with another schedule); invalid "
           "accepted %lu, valid rejected %lu, other status %lu; %lu through "
           "JSON, %lu disagreeing\n",
           all.total, senv ? senv : "default", all.rejected, all.accepted,
           all.new_schedule,
           all.bad_accept, all.bad_reject, all.bad_status, all.json,
           all.json_mismatch);
    CU_ASSERT_EQUAL(all.total, total);
    CU_ASSERT_EQUAL(all.bad_accept, 0);
    CU_ASSERT_EQUAL(all.bad_reject, 0);
    CU_ASSERT_EQUAL(all.bad_status, 0);
    CU_ASSERT_EQUAL(all.json_mismatch, 0);
    /* the mutations reach both outcomes */
    CU_ASSERT(all.accepted > total / 50);
    CU_ASSERT(all.rejected > total / 2);
    CU_ASSERT(all.new_schedule > 0 || total < 1000);
    remove(json_path);
    free_bases();
}

static CU_TestInfo tests[] = {
    {"mutated plans: rejected, or valid by brute force", t_mutations},
    CU_TEST_INFO_NULL,
};

void mp_register_verify_mutate(void)
{
    mp_test_add_suite("verify_mutate", tests);
}
