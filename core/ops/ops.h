/* core/ops/ops.h - the op registry: one entry per op type (core/ir.h
 * gives the entry's format), found by name and domain. Every op-specific
 * behaviour is read from the entry. Internal, not installed. */
#ifndef MP__OPS_H
#define MP__OPS_H

#include "ir.h"

/* The registry entry of an op type; the generic entry when unknown. */
const mp__op_def *mp__op_lookup(const char *op, const char *domain);
const mp__op_def *mp__op_generic(void);
/* 1 when the table is sorted by (domain, name), as lookup needs (tests). */
int mp__op_registry_sorted(void);

#endif /* MP__OPS_H */
