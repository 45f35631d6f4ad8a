/* Checkmate's fixed-checkpoint baselines (solvers/remat_chen.c, issue 5):
 * the schedules its released code builds from a checkpoint set, for the
 * driver in solvers/remat.c. */
#ifndef MP_REMAT_CHEN_H
#define MP_REMAT_CHEN_H

#include "remat_internal.h"

/* Takes a finished replay (o->steps owned by the callee from then on). */
typedef mp_status (*rm_offer_fn)(void *user, const char *name, rm_out *o);

/* The schedule Checkmate's released code builds for the checkpoint set
 * is_ckpt (gen_s_matrix_fixed_checkpoints, solve_r_opt, schedule_from_rs;
 * remat_chen.c says how): out->steps owned by the caller. */
mp_status rm_checkmate_fixed(const rm_prob *p, const uint8_t *is_ckpt,
                             rm_out *out);

/* Checkmate's linearized Chen sqrt(n) (solve_chen_sqrtn with
 * use_actuation_points False): every floor(sqrt(T))-th unit, forward or
 * backward, is a checkpoint; the schedule goes to offer. */
mp_status rm_chen_linear(const rm_prob *p, rm_offer_fn offer, void *user);

#endif
