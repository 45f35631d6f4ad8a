/* analysis/cost.h - the cost model inside the library: FLOPs and bytes
 * of a node from its registry entry, and its time on a device profile
 * (analysis/cost.c). Internal, not installed. */
#ifndef MP__COST_H
#define MP__COST_H

#include "ir.h"

/* FLOPs and bytes (read + written) of a node from its registry entry. */
mp_status mp__node_flops_bytes(const struct mp_graph *g, uint32_t node,
                              double *flops, double *bytes);
/* mp_node_estimate; use_given = 0 ignores FLOPs, bytes and seconds the
 * graph gives and estimates from the registry alone. */
mp_status mp__node_estimate_ex(const struct mp_graph *g, uint32_t node,
                              const mp_device *d, int use_given,
                              mp_op_cost *out);

#endif /* MP__COST_H */
