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

/* The one time of a kernel on d: the roofline max(flops / peak(dt),
 * bytes / memory bandwidth) plus the kernel overhead. Every prediction of
 * a node's time (mp__node_estimate_ex: the planners, the offload solver,
 * the training synthesis, validate) goes through it. */
double mp__kernel_seconds(const mp_device *d, double flops, double bytes,
                          mp_dtype dt);
/* The one time of a copy over the host link is the public
 * mp_device_transfer_seconds (analysis/devices.c): the offload solver's
 * candidates and simulation and validate's prediction call it. */

#endif /* MP__COST_H */
