/*
 * memplan.h - offline memory planner for computation graphs.
 *
 * memplan reads a graph (memplan JSON, a networkx node-link graph, ONNX),
 * works out every tensor's size and lifetime, and packs all tensors into
 * one arena, before anything runs.
 *
 * This header includes every module header; a program may include only
 * the modules it uses:
 *
 *     memplan/common.h       version, MP_API, status codes, context and
 *                            allocator, data types, kinds, phases, mp_free
 *     memplan/graph.h        building graphs, accessors, attributes
 *     memplan/load.h         loading and saving: JSON graph, node-link, ONNX
 *     memplan/offsets.h      the offsets problem on its own, CSV traces
 *     memplan/plan.h         schedules and plans, operator order, plan JSON,
 *                            verification
 *     memplan/constraints.h  memory pools and planning constraints
 *     memplan/ranges.h       one plan for a range of shapes
 *     memplan/cost.h         device profiles and node costs
 *     memplan/remat.h        recompute under a budget, largest batch
 *     memplan/offload.h      offload under a budget, FlexGen policy search
 *     memplan/train.h        training graphs
 *     memplan/parallel.h     per-rank graphs of multi-GPU training
 *     memplan/lint.h         static lints, caching-allocator simulation
 *     memplan/report.h       DOT, HTML report, Chrome trace
 *
 * Usage:
 *
 *     mp_ctx *ctx = mp_ctx_create(NULL);            // NULL: malloc/free
 *     mp_graph *g = NULL;
 *     mp_plan *plan = NULL;
 *     mp_plan_options opt;
 *     mp_plan_options_init(&opt);                    // 256-byte alignment
 *     if (mp_graph_load(ctx, "model.json", &g) != MP_OK ||
 *         mp_plan_create(g, &opt, &plan) != MP_OK) {
 *         fprintf(stderr, "memplan: %s\n", mp_ctx_message(ctx));
 *     } else {
 *         const mp_figures *f = mp_plan_figures(plan);
 *         printf("arena %llu bytes, lower bound %llu\n",
 *                (unsigned long long)f->arena_bytes,
 *                (unsigned long long)f->lower_bound_bytes);
 *         // offsets: mp_plan_num_blocks() / mp_plan_blocks()
 *     }
 *     mp_plan_destroy(plan);
 *     mp_graph_destroy(g);
 *     mp_ctx_destroy(ctx);
 *
 * Conventions: every function that can fail returns an mp_status; the
 * message explaining the last failure is kept in the context
 * (mp_ctx_message). The library never prints, exits or aborts. Sizes are
 * 64-bit and every size computation is checked for overflow. Handles are
 * opaque and come in create/destroy pairs; destroy functions accept NULL.
 * The reference of each function is its comment in its module header and
 * its page in docs/api/ (docs/api/index.md lists them all).
 */
#ifndef MEMPLAN_H
#define MEMPLAN_H

#include "common.h"
#include "graph.h"
#include "load.h"
#include "offsets.h"
#include "plan.h"
#include "constraints.h"
#include "ranges.h"
#include "cost.h"
#include "remat.h"
#include "offload.h"
#include "serve.h"
#include "train.h"
#include "parallel.h"
#include "lint.h"
#include "report.h"

#endif /* MEMPLAN_H */
