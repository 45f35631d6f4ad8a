/* Planning constraints and memory pools: the internal form of
 * mp_constraints, shared by core/sched/constraints.c (building, checking) and
 * planner/pools.c and solvers/pools.c (planning). Not installed. */
#ifndef MP__CONSTRAINTS_H
#define MP__CONSTRAINTS_H

#include "base.h"

typedef struct mp__pool_def {
    char *name;
    uint64_t capacity;     /* UINT64_MAX: unbounded */
    double bandwidth;      /* bytes/s, > 0 */
    uint64_t max_buffer;   /* 0: no limit */
} mp__pool_def;

/* What one tensor must obey; one rule per tensor. */
typedef struct mp__tensor_rule {
    uint32_t tensor;
    uint32_t pool;         /* MP_NONE: the planner chooses */
    uint64_t offset;       /* UINT64_MAX: not pinned */
    uint64_t alignment;    /* 1: none beyond the plan's */
    uint8_t no_share;
} mp__tensor_rule;

struct mp_constraints {
    mp_ctx *ctx;
    mp__pool_def *pools;
    size_t n_pools, cap_pools;
    mp__tensor_rule *rules;
    size_t n_rules, cap_rules;
    uint64_t max_buffer;   /* 0: no limit */
    double compute_rate;   /* FLOP/s; 0: compute time ignored */
};

/* True when c asks for nothing beyond mp_plan_create (NULL included). */
bool mp__constraints_trivial(const mp_constraints *c);
/* Greatest common divisor and least common multiple (0 on overflow). */
uint64_t mp__gcd_u64(uint64_t a, uint64_t b);
uint64_t mp__lcm_u64(uint64_t a, uint64_t b);

#endif
