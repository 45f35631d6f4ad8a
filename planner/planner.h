/* planner/planner.h - what the plan drivers share: a plan from a
 * schedule (placed by the offsets solver) and re-placing a plan within a
 * capacity (planner/plan.c). mp_plan_create, with or without reordering,
 * is planner/reorder.c's. Internal, not installed. */
#ifndef MP__PLANNER_H
#define MP__PLANNER_H

#include "sched.h"

/* Builds a plan from a schedule (steps allocated with the context
 * allocator; ownership passes to the plan, also on failure): blocks and
 * lifetimes derived from the steps, offsets by opt->method, figures.
 * t0 (mp__now_seconds) is when solving started, for solve_seconds. */
mp_status mp__plan_from_schedule(mp_graph *g, mp_step *steps, uint32_t n_steps,
                                const mp_plan_options *opt, double t0,
                                mp_plan **out);
/* Re-places p's offsets so that the arena fits `capacity` bytes (the
 * exact tier asked for that capacity, seeded by the heuristics). The new
 * offsets are kept only when the arena shrinks; MP_OK whether or not it
 * fits (compare p->fig.arena_bytes), an error only on failure. Used by
 * planners that promise a budget on the placed arena, not only on the
 * live bytes (recompute, offload). */
mp_status mp__plan_refit(mp_plan *p, const mp_plan_options *opt,
                        uint64_t capacity);
/* Reports plan p's peak as the progress figure of the running plan
 * (core/base.h), and its lower bound (live arena + persistent bytes) when
 * the run has proven none; nothing for NULL. */
void mp__plan_progress(const mp_plan *p);

/* Marks the backward nodes of a finalized training graph that are
 * pointwise (mp__node.bwd_pointwise set by the builder, kept where one
 * output the size of every arena input; planner/train.c). */
void mp__mark_pointwise_backward(mp_graph *g);

/* What node v of a training graph made by mp_train_graph (planner/
 * train.c, whose names say it) differentiates or updates: the forward
 * node it is the backward of (NAME/grad, NAME/grad_w, NAME/grad_passK,
 * loss/grad), or MP_NONE with *tensor the forward tensor whose gradient
 * it accumulates (d/X#sumK) or the weight it steps (opt/W); MP_NONE and
 * *tensor MP_NONE for other nodes. */
uint32_t mp__train_source(const mp_graph *t, uint32_t v, uint32_t *tensor);

#endif /* MP__PLANNER_H */
