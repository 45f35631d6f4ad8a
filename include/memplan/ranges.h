/*
 * memplan/ranges.h - shape ranges: one plan for every shape up to a bound.
 * A plan made for the upper bounds of a model's symbolic dims (the model
 * loaded with every symbol bound to its bound, memplan/load.h) holds the
 * model at any smaller values when every arena tensor's bytes there are
 * at most its block's; the offsets stay those of the bound, so a runtime
 * allocates the arena once and reuses it for every shape.
 */
#ifndef MEMPLAN_RANGES_H
#define MEMPLAN_RANGES_H

#include "load.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- shape ranges ------------------------------------------------------- */
/* Checks a graph (the same model loaded with other values) against a plan
 * made at the bounds: same tensors by name, taking memory the same way,
 * each arena tensor no larger than its block.
 * Errors: MP_ERR_VERIFY (the first tensor larger than its block, named
 * with both sizes, or not the same model), MP_ERR_INVALID_ARG (NULL, an
 * unfinalized graph), MP_ERR_NOMEM.
 * Example: mp_plan_fits(plan_at_bounds, g_at_batch_3); */
MP_API mp_status mp_plan_fits(const mp_plan *p, const mp_graph *g);
/* Loads `path` once per value set (n_sets sets of n_dims bindings, set k
 * at sets + k * n_dims, as for mp_graph_load_dims) and checks each with
 * mp_plan_fits; *failed (may be NULL) is the first set that does not fit,
 * or n_sets.
 * Errors: MP_ERR_VERIFY (a set does not fit), MP_ERR_SHAPE, MP_ERR_PARSE,
 * MP_ERR_IO (a set could not be loaded), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_plan_check_range(const mp_plan *p, const char *path,
                                     const mp_dim_binding *sets,
                                     size_t n_dims, size_t n_sets,
                                     size_t *failed);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_RANGES_H */
