/* Planning constraints: pools, pinned offsets, no-share tensors,
 * per-tensor alignment and the largest buffer; and mp_verify_constraints,
 * which checks a plan against them independently of planner/pools.c. */
#include "sched.h"
#include "constraints.h"

#include <string.h>

uint64_t mp__gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

uint64_t mp__lcm_u64(uint64_t a, uint64_t b)
{
    if (!a || !b)
        return a ? a : b;
    uint64_t r;
    if (!mp__mul_u64(a / mp__gcd_u64(a, b), b, &r))
        return 0;
    return r;
}

mp_status mp_constraints_create(mp_ctx *ctx, mp_constraints **out)
{
    if (!ctx || !out)
        return MP_ERR_INVALID_ARG;
    *out = NULL;
    mp_constraints *c = mp__calloc(ctx, 1, sizeof *c);
    if (!c)
        return MP_ERR_NOMEM;
    c->ctx = ctx;
    *out = c;
    return MP_OK;
}

void mp_constraints_destroy(mp_constraints *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_pools; i++)
        mp__dealloc(c->ctx, c->pools[i].name);
    mp__dealloc(c->ctx, c->pools);
    mp__dealloc(c->ctx, c->rules);
    mp__dealloc(c->ctx, c);
}

bool mp__constraints_trivial(const mp_constraints *c)
{
    return !c || (!c->n_pools && !c->n_rules && !c->max_buffer);
}

mp_status mp_constraints_add_pool(mp_constraints *c, const mp_pool_desc *d,
                                  uint32_t *id)
{
    if (!c || !d)
        return MP_ERR_INVALID_ARG;
    if (!d->name || !d->name[0])
        return mp__err(c->ctx, MP_ERR_INVALID_ARG, "a pool needs a name");
    if (!(d->bandwidth > 0))
        return mp__err(c->ctx, MP_ERR_INVALID_ARG,
                      "pool '%s': bandwidth must be > 0", d->name);
    if (d->capacity == 0)
        return mp__err(c->ctx, MP_ERR_INVALID_ARG,
                      "pool '%s': capacity must be > 0", d->name);
    for (size_t i = 0; i < c->n_pools; i++)
        if (strcmp(c->pools[i].name, d->name) == 0)
            return mp__err(c->ctx, MP_ERR_INVALID_ARG,
                          "pool '%s' is already defined", d->name);
    if (c->n_pools >= MP__MAX_POOLS)
        return mp__err(c->ctx, MP_ERR_INVALID_ARG, "too many pools");
    char *name = mp__strdup(c->ctx, d->name);
    if (!name)
        return MP_ERR_NOMEM;
    if (mp__grow(c->ctx, (void **)&c->pools, sizeof *c->pools, c->n_pools + 1,
                &c->cap_pools)) {
        mp__dealloc(c->ctx, name);
        return MP_ERR_NOMEM;
    }
    mp__pool_def *p = &c->pools[c->n_pools];
    p->name = name;
    p->capacity = d->capacity;
    p->bandwidth = d->bandwidth;
    p->max_buffer = d->max_buffer;
    if (id)
        *id = (uint32_t)c->n_pools;
    c->n_pools++;
    return MP_OK;
}

/* The rule of a tensor, added when missing. */
static mp_status rule_for(mp_constraints *c, uint32_t tensor,
                          mp__tensor_rule **out)
{
    if (tensor == MP_NONE)
        return mp__err(c->ctx, MP_ERR_INVALID_ARG, "no tensor given");
    for (size_t i = 0; i < c->n_rules; i++)
        if (c->rules[i].tensor == tensor) {
            *out = &c->rules[i];
            return MP_OK;
        }
    if (mp__grow(c->ctx, (void **)&c->rules, sizeof *c->rules, c->n_rules + 1,
                &c->cap_rules))
        return MP_ERR_NOMEM;
    mp__tensor_rule *r = &c->rules[c->n_rules++];
    r->tensor = tensor;
    r->pool = MP_NONE;
    r->offset = UINT64_MAX;
    r->alignment = 1;
    r->no_share = 0;
    *out = r;
    return MP_OK;
}

mp_status mp_constraints_pin(mp_constraints *c, uint32_t tensor,
                             uint32_t pool, uint64_t offset)
{
    if (!c)
        return MP_ERR_INVALID_ARG;
    if (offset == UINT64_MAX)
        return mp__err(c->ctx, MP_ERR_INVALID_ARG, "pin offset out of range");
    if (pool != 0 && pool >= c->n_pools)
        return mp__err(c->ctx, MP_ERR_NOT_FOUND, "no pool %u", pool);
    mp__tensor_rule *r;
    mp_status st = rule_for(c, tensor, &r);
    if (st)
        return st;
    r->pool = pool;
    r->offset = offset;
    return MP_OK;
}

mp_status mp_constraints_assign(mp_constraints *c, uint32_t tensor,
                                uint32_t pool)
{
    if (!c)
        return MP_ERR_INVALID_ARG;
    if (pool != 0 && pool >= c->n_pools)
        return mp__err(c->ctx, MP_ERR_NOT_FOUND, "no pool %u", pool);
    mp__tensor_rule *r;
    mp_status st = rule_for(c, tensor, &r);
    if (st)
        return st;
    if (r->offset != UINT64_MAX && r->pool != pool)
        return mp__err(c->ctx, MP_ERR_INVALID_ARG,
                      "tensor %u is pinned in pool %u", tensor, r->pool);
    r->pool = pool;
    return MP_OK;
}

mp_status mp_constraints_no_share(mp_constraints *c, uint32_t tensor)
{
    if (!c)
        return MP_ERR_INVALID_ARG;
    mp__tensor_rule *r;
    mp_status st = rule_for(c, tensor, &r);
    if (!st)
        r->no_share = 1;
    return st;
}

mp_status mp_constraints_align(mp_constraints *c, uint32_t tensor,
                               uint64_t alignment)
{
    if (!c)
        return MP_ERR_INVALID_ARG;
    if (alignment == 0)
        return mp__err(c->ctx, MP_ERR_INVALID_ARG, "alignment must be >= 1");
    mp__tensor_rule *r;
    mp_status st = rule_for(c, tensor, &r);
    if (st)
        return st;
    uint64_t a = mp__lcm_u64(r->alignment, alignment);
    if (!a)
        return mp__err(c->ctx, MP_ERR_OVERFLOW,
                      "tensor %u: alignment overflows", tensor);
    r->alignment = a;
    return MP_OK;
}

mp_status mp_constraints_max_buffer(mp_constraints *c, uint64_t bytes)
{
    if (!c)
        return MP_ERR_INVALID_ARG;
    c->max_buffer = bytes;
    return MP_OK;
}

mp_status mp_constraints_compute_rate(mp_constraints *c, double flops)
{
    if (!c)
        return MP_ERR_INVALID_ARG;
    if (!(flops >= 0))
        return mp__err(c->ctx, MP_ERR_INVALID_ARG,
                      "compute rate must be >= 0");
    c->compute_rate = flops;
    return MP_OK;
}

/* ---- plans with pools: accessors ------------------------------------------ */
uint32_t mp_plan_num_pools(const mp_plan *p)
{
    return !p ? 0 : p->n_pools ? p->n_pools : 1;
}

mp_status mp_plan_pool_info(const mp_plan *p, uint32_t pool, mp_pool_info *out)
{
    if (!p || !out)
        return MP_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!p->n_pools) {
        if (pool != 0)
            return mp__err(p->ctx, MP_ERR_NOT_FOUND, "no pool %u", pool);
        out->name = "default";
        out->capacity = UINT64_MAX;
        out->bandwidth = 0;
        out->arena_bytes = p->fig.arena_bytes;
        out->lower_bound_bytes = p->fig.lower_bound_bytes;
        out->n_blocks = p->n_blocks;
        return MP_OK;
    }
    if (pool >= p->n_pools)
        return mp__err(p->ctx, MP_ERR_NOT_FOUND, "no pool %u", pool);
    const mp__pool_plan *pp = &p->pools[pool];
    out->name = pp->name;
    out->capacity = pp->capacity;
    out->bandwidth = pp->bandwidth;
    out->arena_bytes = pp->arena_bytes;
    out->lower_bound_bytes = pp->lower_bound_bytes;
    out->n_blocks = pp->n_blocks;
    return MP_OK;
}

uint32_t mp_plan_block_pool(const mp_plan *p, uint32_t block)
{
    if (!p || !p->block_pool || block >= p->n_blocks)
        return 0;
    return p->block_pool[block];
}

/* ---- checking a plan against constraints ----------------------------------- */
static uint32_t pool_of(const mp_plan *p, uint32_t b)
{
    return p->block_pool ? p->block_pool[b] : 0;
}

mp_status mp_verify_constraints(const mp_graph *g, const mp_plan *p,
                                const mp_constraints *c)
{
    if (!g || !p)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = g->ctx;
    if (!c)
        return MP_OK;
    uint32_t np = mp_plan_num_pools(p);
    if (c->n_pools && c->n_pools != p->n_pools)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "the constraints define %zu pools, the plan has %u",
                      c->n_pools, (unsigned)np);
    for (uint32_t k = 0; k < p->n_pools; k++) {
        const mp__pool_plan *pp = &p->pools[k];
        if (pp->arena_bytes > pp->capacity)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "pool '%s': arena %llu bytes above its capacity "
                          "%llu",
                          pp->name, (unsigned long long)pp->arena_bytes,
                          (unsigned long long)pp->capacity);
    }
    for (uint32_t b = 0; b < p->n_blocks; b++) {
        const mp_block *bl = &p->blocks[b];
        uint32_t k = pool_of(p, b);
        if (k >= np)
            return mp__err(ctx, MP_ERR_VERIFY, "block %u: no pool %u",
                          (unsigned)b, (unsigned)k);
        uint64_t lim = c->max_buffer;
        if (k < c->n_pools && c->pools[k].max_buffer &&
            (!lim || c->pools[k].max_buffer < lim))
            lim = c->pools[k].max_buffer;
        if (lim && bl->size > lim)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "tensor '%s': block of %llu bytes above the largest "
                          "buffer %llu",
                          g->tensors[bl->tensor].name,
                          (unsigned long long)bl->size,
                          (unsigned long long)lim);
    }
    for (size_t r = 0; r < c->n_rules; r++) {
        const mp__tensor_rule *ru = &c->rules[r];
        if (ru->tensor >= g->n_tensors)
            return mp__err(ctx, MP_ERR_VERIFY, "constraint on tensor %u: no "
                          "such tensor", (unsigned)ru->tensor);
        uint32_t root = g->tensors[ru->tensor].root;
        const char *name = g->tensors[ru->tensor].name;
        uint32_t seen = 0;
        for (uint32_t b = 0; b < p->n_blocks; b++) {
            const mp_block *bl = &p->blocks[b];
            if (bl->tensor != root)
                continue;
            seen++;
            uint32_t k = pool_of(p, b);
            if (ru->pool != MP_NONE && k != ru->pool)
                return mp__err(ctx, MP_ERR_VERIFY,
                              "tensor '%s' is in pool %u, not %u", name,
                              (unsigned)k, (unsigned)ru->pool);
            if (ru->offset != UINT64_MAX && bl->offset != ru->offset)
                return mp__err(ctx, MP_ERR_VERIFY,
                              "tensor '%s' is at offset %llu, pinned at %llu",
                              name, (unsigned long long)bl->offset,
                              (unsigned long long)ru->offset);
            if (bl->offset % ru->alignment)
                return mp__err(ctx, MP_ERR_VERIFY,
                              "tensor '%s': offset %llu is not a multiple of "
                              "its alignment %llu",
                              name, (unsigned long long)bl->offset,
                              (unsigned long long)ru->alignment);
            if (!ru->no_share)
                continue;
            /* alone in its address range of its pool, at any time */
            for (uint32_t o = 0; o < p->n_blocks; o++) {
                const mp_block *ob = &p->blocks[o];
                if (o == b || pool_of(p, o) != k)
                    continue;
                if (ob->offset < bl->offset + bl->size &&
                    bl->offset < ob->offset + ob->size)
                    return mp__err(ctx, MP_ERR_VERIFY,
                                  "tensor '%s' must share memory with no "
                                  "other, but '%s' uses [%llu, %llu)",
                                  name, g->tensors[ob->tensor].name,
                                  (unsigned long long)ob->offset,
                                  (unsigned long long)(ob->offset + ob->size));
            }
        }
        if (!seen && (ru->offset != UINT64_MAX || ru->pool != MP_NONE ||
                      ru->no_share))
            return mp__err(ctx, MP_ERR_VERIFY,
                          "constrained tensor '%s' has no block in the plan",
                          name);
    }
    return MP_OK;
}
