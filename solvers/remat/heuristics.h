/* solvers/remat/heuristics.h - the recompute heuristics
 * (solvers/remat/heuristics.c: checkpoint-all, Chen's sqrt(n) and greedy
 * segments, DTR-style eviction, selective recompute;
 * solvers/remat/remat_segments.c: segment checkpointing). Each builds
 * policies on the problem and hands them to the search, which replays
 * them and keeps the best schedule. Internal, not installed. */
#ifndef MP__REMAT_HEURISTICS_H
#define MP__REMAT_HEURISTICS_H

#include "model.h"

/* What a heuristic aims at, and where its policies go: eval replays pol
 * (as mp__remat_simulate, without steps, into o), keeps it when it is
 * the best feasible schedule so far, and hands o back so the heuristic
 * can steer (the search stores the schedule, so pol need not outlive the
 * call). */
typedef struct mp__remat_goal {
    uint64_t cap;            /* live arena bytes allowed; UINT64_MAX: none */
    double max_extra;        /* extra cost allowed; < 0: no cap */
    int keep_ckpt;           /* Checkmate's baseline semantics: checkpoints
                              * stay to the end of the step */
    mp_status (*eval)(void *user, const char *name,
                      const mp__remat_policy *pol, mp__remat_out *o);
    void *user;
    /* Optional: the forward units the min-cut save plan recomputes
     * (mp__remat_mincut_seed, remat_mincut.h). dtr and selective then also start from it:
     * those values dropped after their last forward reader, the heuristic
     * dropping more from there ("mincut+dtr", "mincut+selective"). */
    const uint8_t *seed;
} mp__remat_goal;

/* No recompute ("checkpoint-all"). */
mp_status mp__remat_checkpoint_all(const mp__remat_prob *p,
                                   const mp__remat_goal *g);
/* Chen et al.: every floor(sqrt(n))-th forward articulation point a
 * checkpoint ("chen-sqrt"; greedy = 0), or greedy segments swept over the
 * segment budget ("chen-greedy"; greedy = 1). */
mp_status mp__remat_chen(const mp__remat_prob *p, const mp__remat_goal *g,
                         int greedy);
/* DTR-style eviction at the cap ("dtr"; checkpoint-all without a cap);
 * with g->seed also from the min-cut's drops ("mincut+dtr"). */
mp_status mp__remat_dtr(const mp__remat_prob *p, const mp__remat_goal *g);
/* Selective recompute: droppable units by a score (order 0: cost per
 * byte, 1: cost, 2: largest first), the shortest prefix that fits, then
 * polished; evict: with DTR eviction as a fallback ("selective",
 * "selective+evict"). With g->seed, again from the min-cut's drops: the
 * seeded units dropped first, the others by the score after them
 * ("mincut+selective", "mincut+selective+evict"). */
mp_status mp__remat_selective(const mp__remat_prob *p,
                              const mp__remat_goal *g, int order, int evict);

/* Segment checkpointing (solvers/remat/remat_segments.c): Chen's greedy
 * segments on forward articulation points whose value backward reads,
 * swept over the segment budget, with eviction as a repair, then polished
 * (dropped values kept again while the cap and the cost allow); the best
 * schedule within cap (and max_extra when >= 0) goes to try_fn as
 * "segments" or "segments+evict"; when none fits, the one with the
 * smallest peak does (for the smallest peak found). seed (optional, as
 * mp__remat_goal's): the sweep starts from the min-cut's drops (they are
 * never checkpoints; polishing may keep them again), the names prefixed
 * "mincut+". */
mp_status mp__remat_segments(const mp__remat_prob *p, uint64_t cap,
                             double max_extra, const uint8_t *seed,
                             mp__remat_try_fn try_fn, void *try_user);

#endif /* MP__REMAT_HEURISTICS_H */
